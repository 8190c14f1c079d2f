#!/usr/bin/env bash
# Instructions libvgpu.so adds per cuMemAlloc_v2 + cuMemFree_v2 pair, per cuLaunchKernel without a
# compute limit and per cuLaunchKernel under a 50% compute limit, counted with valgrind's callgrind over
# the overhead benchmark's own processes (tests/conformance/bench.c), with and without libvgpu: only the
# measured batches are counted (--toggle-collect='best_of_batches*'), so the difference divided by the
# calls is libvgpu's own work, the driver's excluded. Unlike wall-clock time it does not depend on what
# else the machine runs. Clock reads are counted as valgrind runs them (no vDSO): a few instructions
# each. Run after `make test-programs`; needs valgrind. Takes about two minutes.
#
#   scripts/count-instructions.sh [native dir] [build dir]
set -euo pipefail

NATIVE=$(realpath "${1:-$(dirname "$0")/../target/native}")
BUILD=$(realpath "${2:-$(dirname "$0")/../target/build}")
BIN=$BUILD/tests/vgpu-conformance
command -v valgrind >/dev/null || { echo "count-instructions.sh: valgrind is not installed" >&2; exit 1; }
[ -x "$BIN" ] || { echo "count-instructions.sh: $BIN missing: run make test-programs first" >&2; exit 1; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/vgpu-instructions.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

# instructions ROLE NAME [VAR=value ...]: the instructions the measured batches of ROLE executed.
instructions() {
    local role=$1 name=$2
    shift 2
    env -i "PATH=$PATH" "LD_LIBRARY_PATH=$NATIVE" "VGPU_MOCK_STATE=$WORK/$name.state" \
        "CUDA_DEVICE_MEMORY_SHARED_CACHE=$WORK/$name.region" "$@" \
        valgrind --tool=callgrind --toggle-collect='best_of_batches*' --callgrind-out-file="$WORK/$name.out" \
        "$BIN" "$role" >"$WORK/$name.txt" 2>"$WORK/$name.err" || { cat "$WORK/$name.err" >&2; exit 1; }
    awk '/^summary:/ { print $2 }' "$WORK/$name.out"
}

# report WHAT CALLS ROLE [VAR=value ...]: with libvgpu (and the variables) minus without.
report() {
    local what=$1 calls=$2 role=$3
    shift 3
    local plain hooked
    plain=$(instructions "$role" plain "$@")
    hooked=$(instructions "$role" hooked "LD_PRELOAD=$NATIVE/libvgpu.so" "$@")
    awk -v what="$what" -v plain="$plain" -v hooked="$hooked" -v calls="$calls" \
        'BEGIN { printf "%-44s %8.1f instructions added (%d calls measured)\n", what, (hooked - plain) / calls, calls }'
}

report "cuMemAlloc_v2 + cuMemFree_v2 pair (1g limit)" 35000 bench-alloc CUDA_DEVICE_MEMORY_LIMIT=1g
report "cuLaunchKernel, no compute limit" 2100000 bench-launch VGPU_MOCK_KERNEL_NS=0
# 200 ns kernels: enough device time for NVML to see a few percent under valgrind, so the pacer calibrates.
report "cuLaunchKernel under a 50% compute limit" 2100000 bench-launch-limited VGPU_MOCK_KERNEL_NS=200 \
    VGPU_MOCK_KERNEL_JITTER=0 CUDA_DEVICE_SM_LIMIT=50 GPU_CORE_UTILIZATION_POLICY=force
