#!/usr/bin/env bash
# Builds the Java side that gpu-check.sh needs for its `vgpu inventory` step on a GPU machine without a JDK:
#   vgpu-native/target/gpu-check/java/jre   a jlink-ed Java runtime with only the modules the vgpu command
#                                           line uses (about 35 MB)
#   vgpu-native/target/gpu-check/java/lib   the command line's jars: vgpu's modules and their whole runtime
#                                           class path (about 24 MB)
# Run it where the repository is built (a JDK 17 or newer with jlink and jdeps; `./mvnw -B -DskipTests
# package` first), then bring vgpu-native/target/gpu-check/java along with the checkout to the GPU machine.
set -euo pipefail

HERE=$(cd "$(dirname "$0")/.." && pwd)
ROOT=$(cd "$HERE/.." && pwd)
DEST=$HERE/target/gpu-check/java

die() { echo "make-jre: $*" >&2; exit 1; }

for tool in jlink jdeps; do
    command -v "$tool" >/dev/null || die "$tool not found: a JDK 17 or newer is needed"
done
version=$(jlink --version)
[ "${version%%.*}" -ge 17 ] 2>/dev/null || die "jlink $version is older than 17"

# vgpu-k8s's jar (the command line) and its runtime class path, which holds vgpu's other modules.
jar=$(find "$ROOT/vgpu-k8s/target" -maxdepth 1 -name 'vgpu-k8s-*.jar' ! -name '*-sources.jar' ! -name '*-tests.jar' 2>/dev/null | head -1)
classpath=$ROOT/vgpu-k8s/target/classpath.txt
[ -n "$jar" ] && [ -s "$classpath" ] || die "vgpu-k8s is not packaged: run ./mvnw -B -DskipTests package in $ROOT first"
jars=("$jar")
IFS=: read -r -a dependencies <"$classpath" || true # the file has no final newline
for dependency in "${dependencies[@]}"; do
    [ -f "$dependency" ] || die "$dependency (from $classpath) is not a jar file: run ./mvnw -B -DskipTests package in $ROOT"
    jars+=("$dependency")
done
for module in vgpu-api vgpu-core vgpu-mock vgpu-nvidia; do
    printf '%s\n' "${jars[@]}" | grep -q "/$module-[^/]*\.jar$" || die "$module is missing from $classpath"
done

# The jars go on jdeps' class path, the command line's jar first, read recursively: given as arguments, a
# jar with a module-info (okhttp-jvm's) is read as a named module, whose requirements (okio, an automatic
# module) jdeps then fails to find.
modules=$(jdeps -R --print-module-deps --ignore-missing-deps --multi-release 17 --class-path "$(IFS=:; echo "${jars[*]:1}")" "$jar" 2>/dev/null) ||
    die "jdeps could not list the modules the jars need"
# JNA's optional AWT support makes jdeps name java.desktop (about 10 MB), which the command line never uses;
# Jackson needs java.xml, which java.desktop would have brought. java.logging backs System.Logger.
# jdk.crypto.ec holds JDK 17's EC keys (vgpu certificates makes P-256 keys, and TLS serves them): a
# security provider, found at run time, which jdeps cannot see (JDK 22 and later keep it in java.base).
modules=$(printf '%s,java.xml,java.logging,jdk.crypto.ec' "$modules" | tr ',' '\n' | grep -vx java.desktop | sort -u | paste -sd, -)

rm -rf "$DEST"
mkdir -p "$DEST/lib"
jlink --add-modules "$modules" --strip-debug --no-man-pages --no-header-files --compress=2 --output "$DEST/jre"
# Symbol tables are not needed to run; stripping them from libjvm.so saves about 4 MB.
if command -v strip >/dev/null; then
    find "$DEST/jre/lib" -name '*.so' -exec strip --strip-unneeded {} +
fi
cp "${jars[@]}" "$DEST/lib/"

# The bundle must run the command line on its own.
"$DEST/jre/bin/java" -cp "$DEST/lib/*" io.vgpu.k8s.cli.Vgpu inventory --source mock >/dev/null ||
    die "the runtime in $DEST/jre cannot run vgpu inventory"
# ...and serve TLS with a certificate of vgpu's own (the scheduler's warm-up, on the loopback, with a throwaway one).
"$DEST/jre/bin/java" -cp "$DEST/lib/*" io.vgpu.k8s.cli.Vgpu scheduler --warm-up-only --warm-up-rounds=50 >/dev/null 2>&1 ||
    die "the runtime in $DEST/jre cannot make an EC key or serve TLS (vgpu scheduler --warm-up-only)"
echo "make-jre: $DEST, $(du -sh "$DEST" | cut -f1): runtime $(du -sh "$DEST/jre" | cut -f1) ($modules), $(find "$DEST/lib" -name '*.jar' | wc -l) jars"
