#!/usr/bin/env bash
# The conformance suite of vgpu-native: libvgpu.so over the mock libcuda.so.1 / libnvidia-ml.so.1,
# on a machine without a GPU. Each check runs in a clean environment with its own mock state and
# shared region, prints PASS or FAIL with its name, and the last line is "N passed, M failed".
#
#   tests/run-conformance.sh <native dir> <build dir> <profiles.csv> <cuda include dir> [check-name-filter]
set -u

NATIVE=$1
BUILD=$2
PROFILES_CSV=$3
CUDA_INCLUDE=$4
FILTER=${5:-}
TESTS=$BUILD/tests
BIN=$TESTS/vgpu-conformance
LIBVGPU=$NATIVE/libvgpu.so
CC=${CC:-cc}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/vgpu-conformance.XXXXXX")
trap '[ -n "${KEEP_WORK:-}" ] || rm -rf "$WORK"; rm -rf "$TESTS/etc-vgpu"' EXIT

passed=0
failed=0

seconds_since() { awk -v start="$1" -v end="$(date +%s.%N)" 'BEGIN { printf "%.1f", end - start }'; }

# A check that cannot run here (e.g. it needs root) exits with this and prints why.
SKIPPED=77

report() { # name status seconds log
    local name=$1 status=$2 seconds=$3 log=$4
    if [ "$status" -eq "$SKIPPED" ]; then
        printf 'SKIP %-40s %s\n' "$name" "$(tail -n 1 "$log" 2>/dev/null)"
    elif [ "$status" -eq 0 ]; then
        passed=$((passed + 1))
        printf 'PASS %-40s %6.1f s\n' "$name" "$seconds"
        grep -E '^  ' "$log" 2>/dev/null | head -5
    else
        failed=$((failed + 1))
        printf 'FAIL %-40s %6.1f s (exit %d)\n' "$name" "$seconds" "$status"
        tail -n 15 "$log" 2>/dev/null | sed 's/^/    | /'
    fi
}

# check NAME [VAR=value ...] -- COMMAND [ARGS...]
# Runs COMMAND with nothing of the caller's environment but PATH, plus the defaults below and the
# given assignments (later ones win).
check() {
    local name=$1
    shift
    if [ -n "$FILTER" ] && [[ "$name" != *$FILTER* ]]; then
        while [ "$1" != "--" ]; do shift; done
        return 0
    fi
    local dir="$WORK/$name"
    mkdir -p "$dir"
    local assignments=(
        "PATH=$PATH"
        "LD_LIBRARY_PATH=$NATIVE"
        "VGPU_MOCK_STATE=$dir/mock.state"
        "VGPU_MOCK_CONTEXT_MIB=64"
        "CUDA_DEVICE_MEMORY_SHARED_CACHE=$dir/region"
        "VGPU_TEST_DIR=$dir"
        "VGPU_TEST_RESULTS=$dir/results"
        "VGPU_TEST_LIBVGPU=$LIBVGPU"
        "VGPU_TEST_CTL=$NATIVE/vgpu-mock-ctl"
        "VGPU_TEST_PROBE=$NATIVE/vgpu-lab-probe"
    )
    while [ "$1" != "--" ]; do
        assignments+=("$1")
        shift
    done
    shift
    local start status
    start=$(date +%s.%N)
    env -i "${assignments[@]}" timeout 120 "$@" >"$dir/out" 2>"$dir/err"
    status=$?
    cat "$dir/out" >>"$dir/err"
    grep -E '^(sm-accuracy|overhead) ' "$dir/out" >>"$WORK/measurements" 2>/dev/null
    report "$name" "$status" "$(seconds_since "$start")" "$dir/err"
}

skip() {
    printf 'SKIP %-40s %s\n' "$1" "$2"
}

if [ -e /etc/vgpu/limits ]; then
    echo "FAIL environment: /etc/vgpu/limits exists on this machine and would override every check's limits"
    echo "0 passed, 1 failed"
    exit 1
fi

# ---- build artefacts ----------------------------------------------------------------------------

exports_check() {
    local missing=0 symbol
    for library in libcuda.so.1 libnvidia-ml.so.1 libvgpu.so; do
        local soname
        soname=$(readelf -d "$NATIVE/$library" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
        [ "$soname" = "$library" ] || { echo "  $library has SONAME '$soname'" >&2; missing=1; }
    done
    local exported
    exported=$(nm -D --defined-only "$NATIVE/libcuda.so.1" | awk '{print $3}' | sort)
    for symbol in $(grep -v '^#' "$(dirname "$0")/../src/api/cuda_api.def" | awk -F'|' '{gsub(/ /,"",$1); if ($1 != "-" && $1 != "") print $1}'); do
        grep -qx "$symbol" <<<"$exported" || { echo "  libcuda.so.1 does not export $symbol" >&2; missing=1; }
    done
    exported=$(nm -D --defined-only "$NATIVE/libnvidia-ml.so.1" | awk '{print $3}' | sort)
    for symbol in $(grep -o 'nvml[A-Za-z0-9_]*(' "$(dirname "$0")/../src/include/nvml_types.h" | tr -d '(' | sort -u); do
        grep -qx "$symbol" <<<"$exported" || { echo "  libnvidia-ml.so.1 does not export $symbol" >&2; missing=1; }
    done
    local leaked
    leaked=$(nm -D --defined-only "$LIBVGPU" | awk '{print $3}' | grep -Ev '^(cu|nvml)[A-Za-z0-9_]+$|^dlsym$')
    [ -z "$leaked" ] || { echo "  libvgpu.so exports internals: $leaked" >&2; missing=1; }
    echo "  $(grep -v '^#' "$(dirname "$0")/../src/api/cuda_api.def" | awk -F'|' '{gsub(/ /,"",$1); if ($1 != "-" && $1 != "") print $1}' | sort -u | wc -l) driver functions, $(nm -D --defined-only "$NATIVE/libnvidia-ml.so.1" | grep -c ' T nvml') NVML functions exported" >&2
    return $missing
}

start=$(date +%s.%N)
exports_check 2>"$WORK/exports.err"
report "exports-and-sonames" $? "$(seconds_since "$start")" "$WORK/exports.err"

abi_check() {
    local gen=$BUILD/gen out=$WORK/abi
    mkdir -p "$out"
    local flags=(-std=c11 -Wall -Wextra -Werror -I"$CUDA_INCLUDE" -I"$gen" -I"$(dirname "$0")/../src/include")
    "$CC" "${flags[@]}" -c "$(dirname "$0")/abi/abi_types.c" -o "$out/types.o" &&
        "$CC" "${flags[@]}" -c "$(dirname "$0")/abi/abi_prototypes.c" -o "$out/prototypes.o" &&
        "$CC" "${flags[@]}" -c "$(dirname "$0")/abi/abi_names.c" -o "$out/names.o" &&
        "$CC" "${flags[@]}" -DCUDA_API_PER_THREAD_DEFAULT_STREAM -c "$(dirname "$0")/abi/abi_names.c" -o "$out/names_pt.o" &&
        "$CC" "${flags[@]}" "$(dirname "$0")/abi/abi_main.c" "$out/types.o" "$out/prototypes.o" "$out/names.o" \
            "$out/names_pt.o" -o "$out/abi-check" &&
        "$out/abi-check"
}

if [ -f "$CUDA_INCLUDE/cuda.h" ] && [ -f "$CUDA_INCLUDE/cudaTypedefs.h" ]; then
    start=$(date +%s.%N)
    abi_check >"$WORK/abi.err" 2>&1
    report "abi-matches-cuda-h" $? "$(seconds_since "$start")" "$WORK/abi.err"
else
    skip "abi-matches-cuda-h" "no $CUDA_INCLUDE/cuda.h: types and prototypes not compared with NVIDIA's"
fi

# ---- the mocks on their own ---------------------------------------------------------------------

cat >"$WORK/devices.list" <<'EOF'
# four physical GPUs of a mock machine, in index order
profile=H100-SXM5-80GB uuid=GPU-aaaaaaaa-bbbb-cccc-dddd-000000000001 pci=0000:1b:00.0 numa=0 mig=enabled
profile=T4 pci=0000:3d:00.0 numa=1
profile=A100-SXM4-40GB nvlinks=4 numa=1
profile=L4 health=lost
EOF

check mock-driver-surface -- "$BIN" mock-driver-surface
check mock-virtual-clock VGPU_MOCK_KERNELS=table_kernel=50000 VGPU_MOCK_KERNEL_JITTER=0 -- "$BIN" mock-virtual-clock
check mock-reference-kernels -- "$BIN" mock-reference-kernels
check mock-kernel-variation VGPU_MOCK_KERNELS=wide=40000 -- "$BIN" mock-kernel-variation
check mock-kernel-config -- "$BIN" mock-kernel-config
check mock-lazy-memory VGPU_MOCK_CONFIG=H200 -- "$BIN" mock-lazy-memory
check profiles-match-csv -- "$BIN" profiles-match-csv "$PROFILES_CSV"
check nvml-identity "VGPU_MOCK_CONFIG=$WORK/devices.list" -- "$BIN" nvml-identity
check nvml-memory-processes -- "$BIN" nvml-memory-processes
check nvml-utilization -- "$BIN" nvml-utilization
check nvml-xid-lost VGPU_MOCK_CONFIG=A100-SXM4-40GB:2 VGPU_MOCK_INJECT=xid:0:31 -- "$BIN" nvml-xid-lost
check mock-graphs -- "$BIN" mock-graphs

# ---- libvgpu.so over the mocks --------------------------------------------------------------------

P="LD_PRELOAD=$LIBVGPU"
check over-limit-oom "$P" CUDA_DEVICE_MEMORY_LIMIT=1g -- "$BIN" over-limit-oom
check exact-boundary "$P" CUDA_DEVICE_MEMORY_LIMIT=1g -- "$BIN" exact-boundary
check meminfo-reports-limit "$P" CUDA_DEVICE_MEMORY_LIMIT=1g -- "$BIN" meminfo-reports-limit
check null-outputs "$P" CUDA_DEVICE_MEMORY_LIMIT=1g -- "$BIN" null-outputs
check allocation-apis-counted "$P" CUDA_DEVICE_MEMORY_LIMIT=1g -- "$BIN" allocation-apis-counted
check free-paths "$P" CUDA_DEVICE_MEMORY_LIMIT=1g -- "$BIN" free-paths
check usage-above-limit-no-underflow "$P" CUDA_DEVICE_MEMORY_LIMIT=1g -- "$BIN" usage-above-limit-no-underflow
check race-4x8 "$P" CUDA_DEVICE_MEMORY_LIMIT=2g -- "$BIN" race-4x8
check sigkill-reclaim "$P" CUDA_DEVICE_MEMORY_LIMIT=1g -- "$BIN" sigkill-reclaim
check visible-index-physical "$P" VGPU_MOCK_CONFIG=A100-SXM4-40GB:2 VGPU_MOCK_VISIBLE_DEVICES=1 \
    CUDA_DEVICE_MEMORY_LIMIT_0=4096m -- "$BIN" visible-index-physical
check visible-devices-uuid "$P" VGPU_MOCK_CONFIG=A100-SXM4-40GB:2 CUDA_VISIBLE_DEVICES=GPU-12345678-1234-1234-1234-123456780001 \
    CUDA_DEVICE_MEMORY_LIMIT_0=4096m -- "$BIN" visible-devices-uuid
check procaddr-same-limits "$P" CUDA_DEVICE_MEMORY_LIMIT=1g -- "$BIN" procaddr-same-limits
check dlopen-dlsym-enforced "$P" CUDA_DEVICE_MEMORY_LIMIT=1g -- "$BIN" dlopen-dlsym-enforced
check rtld-next-preserved "LD_PRELOAD=$LIBVGPU $TESTS/libvgpu-shim-a.so $TESTS/libvgpu-shim-b.so" -- "$BIN" rtld-next-preserved

mkdir -p "$WORK/limits-file-beats-env"
printf '# limits of this container\nCUDA_DEVICE_MEMORY_LIMIT = 512m\n\nCUDA_DEVICE_MEMORY_SHARED_CACHE=%s\nEND\n' \
    "$WORK/limits-file-beats-env/file-region" >"$WORK/limits-file-beats-env/limits"
check limits-file-beats-env "$P" "VGPU_LIMITS_FILE=$WORK/limits-file-beats-env/limits" CUDA_DEVICE_MEMORY_LIMIT=4g \
    CUDA_DISABLE_CONTROL=true -- "$BIN" limits-file 536870912
# libvgpu-syslimits.so is libvgpu.so built with its fixed directory (/etc/vgpu) moved to $TESTS/etc-vgpu:
# when $TESTS/etc-vgpu/limits exists, VGPU_LIMITS_FILE and the environment cannot override it. (While
# $TESTS/etc-vgpu exists without the file, its CUDA and NVML processes wait for their grant.)
SYSDIR=$TESTS/etc-vgpu
rm -rf "$SYSDIR"
mkdir -p "$SYSDIR"
printf 'CUDA_DEVICE_MEMORY_LIMIT=256m\nEND\n' >"$SYSDIR/limits"
check system-limits-file-wins "LD_PRELOAD=$TESTS/libvgpu-syslimits.so" \
    "VGPU_LIMITS_FILE=$WORK/limits-file-beats-env/limits" CUDA_DEVICE_MEMORY_LIMIT=4g -- "$BIN" limits-file 268435456
rm -rf "$SYSDIR"
# A shell that lost the container's environment: no limit variable at all, only the limits file, which
# gives two devices different memory and compute limits and sets the policy and priority.
mkdir -p "$WORK/limits-file-without-env"
printf '%s\n' CUDA_DEVICE_MEMORY_LIMIT_0=1024m CUDA_DEVICE_MEMORY_LIMIT_1=2048m CUDA_DEVICE_SM_LIMIT=30 \
    CUDA_DEVICE_SM_LIMIT_1=60 "CUDA_DEVICE_MEMORY_SHARED_CACHE=$WORK/limits-file-without-env/file-region" \
    CUDA_TASK_PRIORITY=3 GPU_CORE_UTILIZATION_POLICY=force END >"$WORK/limits-file-without-env/limits"
check limits-file-without-env "$P" VGPU_MOCK_CONFIG=A100-SXM4-40GB:2 \
    "VGPU_LIMITS_FILE=$WORK/limits-file-without-env/limits" -- "$BIN" limits-file-without-env \
    "$WORK/limits-file-without-env/file-region" 1073741824,2147483648 30,60 3 force

# Limits files that are not complete (a directory, empty, cut short, unreadable) fail cuInit; the
# environment's 4g must never stand in for them.
check limits-file-refused "$P" CUDA_DEVICE_MEMORY_LIMIT=4g -- "$BIN" limits-file-refused named
mkdir -p "$SYSDIR/limits"
check system-limits-file-refused "LD_PRELOAD=$TESTS/libvgpu-syslimits.so" CUDA_DEVICE_MEMORY_LIMIT=4g -- \
    "$BIN" limits-file-refused "$SYSDIR/limits"
rm -rf "$SYSDIR"

# ---- a KAI fraction container: cards granted by UUID, the wait for the grant, HAMi-core's env contract --

U=GPU-12345678-1234-1234-1234-1234567800 # the mock's UUIDs: $U00 is physical GPU 0
mkdir -p "$WORK/devices-by-uuid" "$WORK/devices-unlisted-refused"
printf '%s\n' "# devices: ${U}00,${U}02" "VGPU_DEVICES=${U}00, ${U}02" CUDA_DEVICE_MEMORY_LIMIT_0=1024m \
    CUDA_DEVICE_MEMORY_LIMIT_1=2048m "CUDA_DEVICE_MEMORY_SHARED_CACHE=$WORK/devices-by-uuid/file-region" END \
    >"$WORK/devices-by-uuid/limits"
check devices-by-uuid "$P" VGPU_MOCK_CONFIG=A100-SXM4-40GB:3 VGPU_MOCK_VISIBLE_DEVICES=2,0 \
    "VGPU_LIMITS_FILE=$WORK/devices-by-uuid/limits" CUDA_DEVICE_MEMORY_LIMIT=4g "VGPU_DEVICES=${U}02,${U}00" -- \
    "$BIN" devices-by-uuid "$WORK/devices-by-uuid/limits"
printf '%s\n' "VGPU_DEVICES=${U}00" CUDA_DEVICE_MEMORY_LIMIT=1024m \
    "CUDA_DEVICE_MEMORY_SHARED_CACHE=$WORK/devices-unlisted-refused/file-region" END >"$WORK/devices-unlisted-refused/limits"
check devices-unlisted-refused "$P" VGPU_MOCK_CONFIG=A100-SXM4-40GB:2 "VGPU_LIMITS_FILE=$WORK/devices-unlisted-refused/limits" \
    "VGPU_DEVICES=${U}00,${U}01" -- "$BIN" devices-unlisted-refused "$WORK/devices-unlisted-refused/limits"
check devices-malformed "$P" VGPU_MOCK_CONFIG=A100-SXM4-40GB:2 -- "$BIN" devices-malformed
# The grant directory mounted, its file not written (yet): libvgpu-syslimits.so's $SYSDIR.
rm -rf "$SYSDIR" && mkdir -p "$SYSDIR"
check grant-wait-timeout "LD_PRELOAD=$TESTS/libvgpu-syslimits.so" VGPU_GRANT_WAIT_SECONDS=1 CUDA_DEVICE_MEMORY_LIMIT=4g \
    "VGPU_LIMITS_FILE=$WORK/devices-by-uuid/limits" -- "$BIN" grant-wait-timeout "$SYSDIR"
rm -rf "$SYSDIR" && mkdir -p "$SYSDIR"
check grant-arrives-during-wait "LD_PRELOAD=$TESTS/libvgpu-syslimits.so" VGPU_MOCK_CONFIG=A100-SXM4-40GB:2 \
    VGPU_GRANT_WAIT_SECONDS=soon CUDA_DEVICE_MEMORY_LIMIT=4g -- "$BIN" grant-arrives-during-wait "$SYSDIR"
rm -rf "$SYSDIR"
check env-contract-kai "$P" VGPU_MOCK_CONFIG=A100-SXM4-40GB:2 CUDA_DEVICE_MEMORY_LIMIT=20889m -- "$BIN" env-contract-kai

# ---- what a process of the container can write ----------------------------------------------------

check region-rewrite-whole-file "$P" CUDA_DEVICE_MEMORY_LIMIT=1g -- "$BIN" region-rewrite-whole-file
check region-rewrite-used-words "$P" CUDA_DEVICE_MEMORY_LIMIT=1g -- "$BIN" region-rewrite-used-words
check region-rewrite-limit-words "$P" CUDA_DEVICE_MEMORY_LIMIT=1g -- "$BIN" region-rewrite-limit-words
check region-rewrite-compute-switch "$P" CUDA_DEVICE_MEMORY_LIMIT=1g CUDA_DEVICE_SM_LIMIT=20 -- \
    "$BIN" region-rewrite-compute-switch
check region-rewrite-compute-pacer "$P" CUDA_DEVICE_SM_LIMIT=20 GPU_CORE_UTILIZATION_POLICY=force -- \
    "$BIN" region-rewrite-compute-pacer

# What another uid of the container can put at the region's path before a root process starts (the checks
# plant it as uid 65534, so they need root; without it they print SKIP and why).
check region-symlink-refused "$P" CUDA_DEVICE_MEMORY_LIMIT=1g -- "$BIN" region-symlink-refused
check region-hard-link-refused "$P" CUDA_DEVICE_MEMORY_LIMIT=1g -- "$BIN" region-hard-link-refused
check region-not-regular-refused "$P" CUDA_DEVICE_MEMORY_LIMIT=1g -- "$BIN" region-not-regular-refused
check region-foreign-owner-refused "$P" CUDA_DEVICE_MEMORY_LIMIT=1g -- "$BIN" region-foreign-owner-refused
check region-wrong-size-refused "$P" CUDA_DEVICE_MEMORY_LIMIT=1g -- "$BIN" region-wrong-size-refused
check region-created-and-shared "$P" CUDA_DEVICE_MEMORY_LIMIT=1g -- "$BIN" region-created-and-shared

# ---- never a crash, never silently off ------------------------------------------------------------

check partial-nvml "$P" "LD_LIBRARY_PATH=$TESTS/partial-nvml:$NATIVE" CUDA_DEVICE_MEMORY_LIMIT=1g CUDA_DEVICE_SM_LIMIT=50 \
    GPU_CORE_UTILIZATION_POLICY=force -- "$BIN" partial-nvml
mkdir -p "$WORK/fork-while-locked"
printf '%s\n' CUDA_DEVICE_MEMORY_LIMIT=1g "CUDA_DEVICE_MEMORY_SHARED_CACHE=$WORK/fork-while-locked/file-region" END \
    >"$WORK/fork-while-locked/limits"
check fork-while-locked "LD_PRELOAD=$LIBVGPU $TESTS/libvgpu-shim-fork.so" \
    "VGPU_LIMITS_FILE=$WORK/fork-while-locked/limits" -- "$BIN" fork-while-locked 1073741824
check glibc-2.17-symbols -- "$(dirname "$0")/../scripts/check-glibc-versions.sh" "$LIBVGPU" 2.17

check malformed-limit-fails-cuinit "$P" CUDA_DEVICE_MEMORY_LIMIT=1g -- "$BIN" malformed-limit-fails-cuinit
check region-unavailable-no-exit "$P" CUDA_DEVICE_MEMORY_LIMIT=1g \
    CUDA_DEVICE_MEMORY_SHARED_CACHE=/nonexistent/vgpu/region -- "$BIN" region-unavailable-no-exit
check no-system-calls "$P" CUDA_DEVICE_MEMORY_LIMIT=1g -- "$BIN" no-system-calls

# ---- graphs, stream-ordered frees, bounded waits ---------------------------------------------------

check graph-launch-paced "$P" CUDA_DEVICE_SM_LIMIT=25 GPU_CORE_UTILIZATION_POLICY=force -- "$BIN" graph-launch-paced
check graph-memory-counted "$P" CUDA_DEVICE_MEMORY_LIMIT=1g -- "$BIN" graph-memory-counted
check free-async-when-done "$P" CUDA_DEVICE_MEMORY_LIMIT=1g -- "$BIN" free-async-when-done
check launch-wait-bounded "$P" CUDA_DEVICE_SM_LIMIT=10 GPU_CORE_UTILIZATION_POLICY=force -- "$BIN" launch-wait-bounded

if [ -f "$CUDA_INCLUDE/cuda.h" ]; then
    for mode in default per-thread; do
        flags=()
        [ "$mode" = per-thread ] && flags=(-DCUDA_API_PER_THREAD_DEFAULT_STREAM)
        sample="$WORK/driver-api-sample-$mode"
        if "$CC" -std=c11 -Wall -Wextra -Werror "${flags[@]}" -I"$CUDA_INCLUDE" "$(dirname "$0")/sample/driver_api_sample.c" \
            -L"$NATIVE" -lcuda -o "$sample" 2>"$WORK/sample-$mode.err"; then
            check "outside-program-cuda-h-$mode" "$P" CUDA_DEVICE_MEMORY_LIMIT=2147483648 -- "$sample"
        else
            report "outside-program-cuda-h-$mode" 1 0 "$WORK/sample-$mode.err"
        fi
    done
else
    skip "outside-program-cuda-h" "no $CUDA_INCLUDE/cuda.h to compile an outside program against"
fi

# ---- vgpu-lab-probe, the lab's container program (it adds libvgpu.so itself where a check needs it) --

check probe-ops -- "$BIN" probe-ops
check probe-malformed-ops -- "$BIN" probe-malformed-ops
check probe-limits -- "$BIN" probe-limits
check probe-physical-index VGPU_MOCK_CONFIG=A100-SXM4-40GB:2 VGPU_MOCK_VISIBLE_DEVICES=1 CUDA_DEVICE_MEMORY_LIMIT_0=4096m \
    -- "$BIN" probe-physical-index
check probe-killed-child -- "$BIN" probe-killed-child
check probe-spawn -- "$BIN" probe-spawn
check probe-escape -- "$BIN" probe-escape
check probe-compute -- "$BIN" probe-compute

# Compute accuracy: one process, three processes of one container, and two containers on one card.
for configuration in 10 25 50 75 10x3 25x3 50x3 75x3 10+75x3 25x3+50 50+50; do
    check "sm-limit-$configuration" -- "$BIN" sm-limit "$configuration"
done
# Wall-clock overhead is a benchmark, not a check: on a shared 2-core machine the mock alone swings from
# 1 to 6 us per allocation pair, so any bound tight enough to mean something fails at random. The suite
# holds the deterministic half (no-system-calls: nothing on the hot paths enters the kernel); `make bench`
# (VGPU_OVERHEAD=1) runs these, and scripts/count-instructions.sh counts what no load can disturb.
if [ "${VGPU_OVERHEAD:-0}" = 1 ]; then
    check overhead-alloc-free -- "$BIN" overhead-alloc-free
    check overhead-launch -- "$BIN" overhead-launch
    check overhead-launch-limited -- "$BIN" overhead-launch-limited
elif [ -z "$FILTER" ]; then
    skip overhead-alloc-free,launch,launch-limited "wall-clock benchmarks: make bench"
fi

if [ -s "$WORK/measurements" ]; then
    echo
    if grep -q '^sm-accuracy' "$WORK/measurements"; then
        echo "compute limit accuracy (share of the device clock, mock A100, kernels of 10-200 us independent of their grids):"
        printf '  %-8s %-6s %-10s %-9s %-22s %-8s\n' config limit processes achieved beside device
        awk '/^sm-accuracy/ { for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2]; k[i] = kv[1] }
             beside = ("competitor" in v) ? "unlimited " v["competitor"] "%" : "other container " v["other"] "%";
             printf "  %-8s %-6s %-10s %-9s %-22s %-8s\n", v["config"], v["target"] "%", v["processes"], v["achieved"] "%", beside, v["device"] "%";
             delete v }' "$WORK/measurements"
    fi
    grep '^overhead' "$WORK/measurements" | sed 's/^/  /'
    echo
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
