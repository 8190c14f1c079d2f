#!/usr/bin/env bash
# Writes the scheduler's ahead-of-time cache into an image's /opt/vgpu (or PREFIX), with the image's own
# runtime and jars: `vgpu scheduler --warm-up-only` under -XX:AOTCacheOutput (JDK 25). The cache holds
# the classes the warm-up loaded and linked and the profiles of the methods it ran, so that a scheduler
# started with -XX:AOTCache spends its first pods placing them rather than compiling (vgpu-bench/README.md,
# runs Y and Z: about half the CPU per pod in a cold burst).
#
# It also writes PREFIX/classpath, the entrypoint's class path as an argument file: a cache is valid for
# one class path, in one order, and a wildcard's order is whatever the file system lists.
#
# usage: train-aot.sh [PREFIX]
set -euo pipefail

prefix=${1:-/opt/vgpu}
java=$prefix/jre/bin/java
# The entrypoint's options (images/vgpu/Dockerfile): a cache is made for one collector.
options=(-XX:+UseSerialGC -XX:MaxRAMPercentage=75 -XX:-UsePerfData)

die() { echo "train-aot: $*" >&2; exit 1; }

[ -x "$java" ] || die "$java is not a Java runtime"
jars=$(cd "$prefix/lib" && find . -maxdepth 1 -name '*.jar' | sed "s|^\./|$prefix/lib/|" | LC_ALL=C sort | paste -sd: -)
[ -n "$jars" ] || die "no jars in $prefix/lib"
printf -- '-cp %s\n' "$jars" >"$prefix/classpath"

# The heap is capped for training only: a build host's RAM would otherwise give a heap too large for
# compressed pointers, which a scheduler pod's heap uses, and the cache would not map there. The grant
# key's Secret is not read: the warm-up signs with a key of its own, as the chart's scheduler signs.
"$java" "${options[@]}" -Xmx1g -XX:AOTCacheOutput="$prefix/scheduler.aot" @"$prefix/classpath" \
    io.vgpu.k8s.cli.Vgpu scheduler --warm-up-only --grant-key-secret=kube-system/vgpu-grant-key ||
    die "the warm-up alone failed: no cache"
# AOTMode=on: a JVM that cannot map the cache refuses to start, so a cache the entrypoint would ignore fails the
# build (with a pod's heap, under 32 GB).
"$java" "${options[@]}" -Xmx1g -XX:AOTMode=on -XX:AOTCache="$prefix/scheduler.aot" @"$prefix/classpath" io.vgpu.k8s.cli.Vgpu --version >/dev/null ||
    die "the entrypoint's options cannot use $prefix/scheduler.aot"
echo "train-aot: $prefix/scheduler.aot, $(du -h "$prefix/scheduler.aot" | cut -f1)"
