#!/usr/bin/env bash
# Fails when a shared library needs a glibc newer than MAX (default 2.17): it reads the library's
# version references with objdump, names each symbol bound to a newer version, and exits 1.
# libvgpu.so is preloaded into containers built on any distribution; the dynamic loader silently
# skips a preload whose symbol versions the container's glibc lacks (no enforcement at all).
#
# It also checks that the library names libdl.so.2 and libpthread.so.0 when it binds their functions:
# glibc before 2.34 has dlopen and pthread_create there, not in libc.so.6.
#
#   scripts/check-glibc-versions.sh <library> [MAX]
set -u

LIBRARY=$1
MAX=${2:-2.17}

if ! command -v objdump >/dev/null; then
    echo "check-glibc-versions: objdump (binutils) is needed to read $LIBRARY" >&2
    exit 1
fi

# "2.2.5" -> 002002005: versions compare as fixed-width numbers.
key() { awk -F. '{ printf "%03d%03d%03d\n", $1, $2, $3 }' <<<"$1"; }

max_key=$(key "$MAX")
references=$(objdump -p "$LIBRARY" | awk '/^Version References:/ { on = 1; next } on && NF == 0 { exit } on && $NF ~ /^GLIBC/ { print $NF }')
symbols=$(objdump -T "$LIBRARY")
failed=0
for version in $(sort -u <<<"$references"); do
    number=${version#GLIBC_}
    if [[ ! "$number" =~ ^[0-9]+(\.[0-9]+){1,2}$ ]] || [ "$(key "$number")" -gt "$max_key" ]; then
        users=$(awk -v v="($version)" -v w="$version" '$0 ~ /\*UND\*/ && ($(NF-1) == v || $(NF-1) == w) { print $NF }' <<<"$symbols" | sort -u | tr '\n' ' ')
        echo "$LIBRARY needs $version (newer than glibc $MAX): ${users:-no symbol named (a loader feature)}" >&2
        failed=1
    fi
done

needed=$(objdump -p "$LIBRARY" | awk '$1 == "NEEDED" { print $2 }')
for pair in "dl:libdl.so.2" "pthread_:libpthread.so.0"; do
    prefix=${pair%%:*}
    library=${pair#*:}
    used=$(awk -v p="^$prefix" '$0 ~ /\*UND\*/ && $NF ~ p { print $NF }' <<<"$symbols" | head -3 | tr '\n' ' ')
    if [ -n "$used" ] && ! grep -qx "$library" <<<"$needed"; then
        echo "$LIBRARY binds ${used}but does not name $library, where glibc before 2.34 keeps them" >&2
        failed=1
    fi
done

if [ "$failed" -eq 0 ]; then
    newest=$(sed 's/^GLIBC_//' <<<"$references" | sort -t. -k1,1n -k2,2n -k3,3n | tail -1)
    echo "  $(basename "$LIBRARY") needs glibc ${newest:-(none)} at most (limit $MAX)" >&2
fi
exit $failed
