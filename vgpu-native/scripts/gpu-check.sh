#!/usr/bin/env bash
# Runs libvgpu.so against a REAL NVIDIA driver and GPU and prints a results table:
#   - the conformance programs that do not depend on the mock (limits, meminfo, allocation paths,
#     multi-process race, SIGKILL reclaim, dlopen+dlsym, limits file, malformed limits, incomplete limits
#     files, rewrites of the shared region);
#   - compute-limit accuracy: a compute-bound PTX kernel's throughput at CUDA_DEVICE_SM_LIMIT=25/50
#     against an unlimited run (target: share +-5 points);
#   - PyTorch: torch.cuda.mem_get_info shows the limit, allocating past it raises OutOfMemoryError,
#     a matmul loop at SM limit 25/50 reaches that share of the unlimited throughput +-5 points;
#   - `vgpu inventory --source nvml`: every GPU's UUID, name, memory, PCI bus id and NUMA node as the
#     Java NVML binding reads them must equal nvidia-smi's (and sysfs's), and the register value must
#     offer each GPU's memory under HAMi's type.
# Takes a few minutes. Needs: an NVIDIA GPU and driver, cc, make, python3 with torch (SKIP_TORCH=1 to
# leave PyTorch out), and the vgpu command line from scripts/make-jre.sh (its jars, and its Java runtime
# unless java 17+ is on PATH). Uses GPU 0 only (CUDA_VISIBLE_DEVICES=0) for the CUDA checks and touches
# nothing outside a temp dir and target/gpu-check.
set -euo pipefail

HERE=$(cd "$(dirname "$0")/.." && pwd)
OUT=$HERE/target/gpu-check/native
BUILD=$HERE/target/gpu-check/build
WORK=$(mktemp -d "${TMPDIR:-/tmp}/vgpu-gpu-check.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
LIMIT_BYTES=$((4 << 30))
SM_TOLERANCE=5

die() { echo "gpu-check: $*" >&2; exit 1; }

# ---- prerequisites: fail loudly -----------------------------------------------------------------
command -v nvidia-smi >/dev/null || die "nvidia-smi not found: this script needs a machine with an NVIDIA GPU"
GPU=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader -i 0 2>/dev/null) ||
    die "nvidia-smi sees no GPU"
[ -n "$GPU" ] || die "nvidia-smi sees no GPU"
ldconfig -p | grep -q 'libcuda.so.1 ' || die "the driver's libcuda.so.1 is not in the loader cache"
ldconfig -p | grep -q 'libnvidia-ml.so.1 ' || die "the driver's libnvidia-ml.so.1 is not in the loader cache"
command -v "${CC:-cc}" >/dev/null || die "no C compiler (cc)"
command -v make >/dev/null || die "make not found"
if [ "${SKIP_TORCH:-0}" != 1 ]; then
    python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null ||
        die "python3 with a CUDA-enabled torch is needed (or SKIP_TORCH=1)"
fi
[ ! -e /etc/vgpu/limits ] || die "/etc/vgpu/limits exists here and would override the limits this script sets"
JAVA_BUNDLE=$HERE/target/gpu-check/java
[ -d "$JAVA_BUNDLE/lib" ] ||
    die "no vgpu command line in $JAVA_BUNDLE/lib: run vgpu-native/scripts/make-jre.sh where the repository is built and bring $JAVA_BUNDLE along"
if command -v java >/dev/null && java -version 2>&1 | awk -F'"' '/version/ { split($2, v, "."); exit !(v[1] >= 17) }'; then
    JAVA=java
elif [ -x "$JAVA_BUNDLE/jre/bin/java" ]; then
    JAVA=$JAVA_BUNDLE/jre/bin/java
else
    die "no Java 17 or newer: neither java on PATH nor $JAVA_BUNDLE/jre (scripts/make-jre.sh builds it)"
fi

echo "gpu-check: $GPU"
echo "gpu-check: building libvgpu.so and the conformance programs"
make -C "$HERE" -j"$(nproc)" all test-programs OUT="$OUT" BUILD="$BUILD" >"$WORK/build.log" 2>&1 ||
    { tail -20 "$WORK/build.log"; die "build failed"; }
BIN=$BUILD/tests/vgpu-conformance
LIBVGPU=$OUT/libvgpu.so
# The mocks built next to libvgpu.so must never be loaded here: no LD_LIBRARY_PATH points at $OUT, so
# the conformance program's libcuda.so.1 and libnvidia-ml.so.1 are the driver's.

rows=()
failures=0
row() { # name result detail
    rows+=("$(printf '%-34s %-6s %s' "$1" "$2" "$3")")
    [ "$2" = PASS ] || failures=$((failures + 1))
}

# run_env NAME VAR=value... -- command: clean environment, GPU 0, own shared region
run_env() {
    local name=$1
    shift
    local assignments=("PATH=$PATH" "HOME=${HOME:-/tmp}" "CUDA_VISIBLE_DEVICES=0" "VGPU_TEST_REAL_GPU=1"
        "VGPU_TEST_DIR=$WORK/$name" "VGPU_TEST_RESULTS=$WORK/$name/results"
        "CUDA_DEVICE_MEMORY_SHARED_CACHE=$WORK/$name/region")
    while [ "$1" != "--" ]; do assignments+=("$1"); shift; done
    shift
    mkdir -p "$WORK/$name"
    env -i "${assignments[@]}" timeout 300 "$@"
}

# ---- conformance programs against the real driver -----------------------------------------------
P="LD_PRELOAD=$LIBVGPU"
for check in over-limit-oom exact-boundary meminfo-reports-limit null-outputs allocation-apis-counted free-paths \
    usage-above-limit-no-underflow race-4x8 sigkill-reclaim dlopen-dlsym-enforced malformed-limit-fails-cuinit \
    region-rewrite-whole-file region-rewrite-used-words region-rewrite-limit-words; do
    limit=$LIMIT_BYTES
    [ "$check" = race-4x8 ] && limit=$((2 << 30)) # 32 threads must run into it
    if run_env "$check" "$P" "CUDA_DEVICE_MEMORY_LIMIT=$limit" -- "$BIN" "$check" >"$WORK/$check.log" 2>&1; then
        row "$check" PASS "$(grep -E '^  ' "$WORK/$check.log" | head -1 | sed 's/^ *//')"
    else
        row "$check" FAIL "$(grep -E 'expected|returned' "$WORK/$check.log" | head -1 | sed 's/^ *//')"
    fi
done
if run_env limits-file-refused "$P" CUDA_DEVICE_MEMORY_LIMIT=8g -- "$BIN" limits-file-refused named \
    >"$WORK/limits-file-refused.log" 2>&1; then
    row limits-file-refused PASS "a directory, empty, cut short or unreadable limits file fails cuInit"
else
    row limits-file-refused FAIL "$(grep expected "$WORK/limits-file-refused.log" | head -1 | sed 's/^ *//')"
fi
mkdir -p "$WORK/limits-file"
printf 'CUDA_DEVICE_MEMORY_LIMIT=1g\nCUDA_DEVICE_MEMORY_SHARED_CACHE=%s/limits-file/file-region\nEND\n' "$WORK" >"$WORK/limits-file/limits"
if run_env limits-file "$P" "VGPU_LIMITS_FILE=$WORK/limits-file/limits" CUDA_DEVICE_MEMORY_LIMIT=8g CUDA_DISABLE_CONTROL=true \
    -- "$BIN" limits-file $((1 << 30)) >"$WORK/limits-file.log" 2>&1; then
    row limits-file-beats-env PASS "1 GiB from the file, 8 GiB in the environment"
else
    row limits-file-beats-env FAIL "$(grep expected "$WORK/limits-file.log" | head -1 | sed 's/^ *//')"
fi

# ---- compute limit: throughput of a compute-bound kernel ----------------------------------------
throughput() { # name [VAR=value...]
    local name=$1
    shift
    run_env "$name" "$@" -- "$BIN" gpu-throughput 4 2>>"$WORK/$name.log"
}
unlimited=$(throughput sm-unlimited)
for percent in 25 50; do
    limited=$(throughput "sm-$percent" "$P" "CUDA_DEVICE_SM_LIMIT=$percent" GPU_CORE_UTILIZATION_POLICY=force)
    share=$(awk -v l="$limited" -v u="$unlimited" 'BEGIN { printf "%.1f", 100 * l / u }')
    verdict=$(awk -v s="$share" -v p="$percent" -v t="$SM_TOLERANCE" 'BEGIN { print (s >= p - t && s <= p + t) ? "PASS" : "FAIL" }')
    row "sm-limit-$percent-kernel" "$verdict" "$share% of unlimited ($limited vs $unlimited kernels/s)"
done

# ---- PyTorch ------------------------------------------------------------------------------------
if [ "${SKIP_TORCH:-0}" != 1 ]; then
    cat >"$WORK/torch_check.py" <<'EOF'
import sys, time, torch
mode = sys.argv[1]
limit = int(sys.argv[2])
if mode == "meminfo":
    free, total = torch.cuda.mem_get_info()
    print(f"{total} {free}")
    sys.exit(0 if total == limit else 1)
if mode == "oom":
    try:
        x = torch.empty(int(limit * 1.1), dtype=torch.uint8, device="cuda")
    except torch.cuda.OutOfMemoryError:
        print("OutOfMemoryError")
        sys.exit(0)
    print("allocated past the limit")
    sys.exit(1)
if mode == "matmul":
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
    b = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
    for _ in range(20):
        a @ b
    torch.cuda.synchronize()
    count, start = 0, time.time()
    while time.time() - start < 4.0:
        for _ in range(10):
            a @ b
        torch.cuda.synchronize()
        count += 10
    print(f"{count / (time.time() - start):.2f}")
EOF
    if out=$(run_env torch-meminfo "$P" "CUDA_DEVICE_MEMORY_LIMIT=$LIMIT_BYTES" -- python3 "$WORK/torch_check.py" meminfo "$LIMIT_BYTES" 2>&1); then
        row torch-mem-get-info PASS "total,free = $out"
    else
        row torch-mem-get-info FAIL "$(echo "$out" | tail -1)"
    fi
    if out=$(run_env torch-oom "$P" "CUDA_DEVICE_MEMORY_LIMIT=$LIMIT_BYTES" -- python3 "$WORK/torch_check.py" oom "$LIMIT_BYTES" 2>&1); then
        row torch-oom-past-limit PASS "$out"
    else
        row torch-oom-past-limit FAIL "$(echo "$out" | tail -1)"
    fi
    base=$(run_env torch-unlimited -- python3 "$WORK/torch_check.py" matmul 0 2>/dev/null | tail -1)
    for percent in 25 50; do
        limited=$(run_env "torch-$percent" "$P" "CUDA_DEVICE_SM_LIMIT=$percent" GPU_CORE_UTILIZATION_POLICY=force \
            -- python3 "$WORK/torch_check.py" matmul 0 2>/dev/null | tail -1)
        share=$(awk -v l="$limited" -v u="$base" 'BEGIN { printf "%.1f", 100 * l / u }')
        verdict=$(awk -v s="$share" -v p="$percent" -v t="$SM_TOLERANCE" 'BEGIN { print (s >= p - t && s <= p + t) ? "PASS" : "FAIL" }')
        row "torch-matmul-sm-$percent" "$verdict" "$share% of unlimited ($limited vs $base matmul/s)"
    done
fi

# ---- vgpu inventory: the Java NVML binding against nvidia-smi -------------------------------------
INVENTORY=$HERE/target/gpu-check/inventory.json
# Only the driver's libnvidia-ml.so.1 (the loader cache), never the mocks next to libvgpu.so.
if env -i "PATH=$PATH" "HOME=${HOME:-/tmp}" "$JAVA" -cp "$JAVA_BUNDLE/lib/*" io.vgpu.k8s.cli.Vgpu inventory --source nvml \
    --output json >"$INVENTORY" 2>"$WORK/inventory.err"; then
    row inventory-runs PASS "$JAVA, $(grep -c '"uuid"' "$INVENTORY") GPU(s), saved in target/gpu-check/inventory.json"
    # One line per GPU from each side: index|uuid|name|memory MiB|PCI bus id|NUMA node|health. The JSON is
    # vgpu's own pretty print: one field per line, pciBusId last in each device.
    awk '/"(uuid|index|model|memoryMiB|numa|health|pciBusId)":/ {
            line = $0; sub(/^[ \t]*"/, "", line); key = line; sub(/".*/, "", key)
            value = line; sub(/^[^:]*: /, "", value); sub(/,$/, "", value); gsub(/^"|"$/, "", value); field[key] = value
            if (key == "pciBusId") print field["index"] "|" field["uuid"] "|" field["model"] "|" field["memoryMiB"] "|" value "|" field["numa"] "|" field["health"]
        }' "$INVENTORY" | sort -t'|' -k1,1n >"$WORK/inventory.txt"
    nvidia-smi --query-gpu=index,uuid,name,memory.total,pci.bus_id --format=csv,noheader,nounits |
        while IFS=, read -r index uuid name memory bus; do
            bus=$(echo "$bus" | tr -d ' ')
            sysfs=$(echo "${bus#0000}" | tr 'A-Z' 'a-z') # sysfs names the domain with 4 digits
            numa=$(cat "/sys/bus/pci/devices/$sysfs/numa_node" 2>/dev/null || echo 0)
            [ "$numa" -ge 0 ] 2>/dev/null || numa=0
            echo "$(echo "$index" | tr -d ' ')|$(echo "$uuid" | tr -d ' ')|${name# }|$(echo "$memory" | tr -d ' ')|$bus|$numa|true"
        done | sort -t'|' -k1,1n >"$WORK/smi.txt"
    gpus=$(wc -l <"$WORK/smi.txt")
    inventory_field() { # row-name what column
        local mismatch
        mismatch=$(awk -F'|' -v c="$3" 'NR == FNR { got[$1] = $c; next }
            !($1 in got) { print "GPU " $1 " is missing from the inventory"; exit }
            got[$1] != $c { print "GPU " $1 ": vgpu says \"" got[$1] "\", nvidia-smi/sysfs say \"" $c "\""; exit }' \
            "$WORK/inventory.txt" "$WORK/smi.txt")
        if [ "$gpus" -eq 0 ]; then
            row "$1" FAIL "nvidia-smi listed no GPU"
        elif [ -n "$mismatch" ]; then
            row "$1" FAIL "$mismatch"
        else
            row "$1" PASS "$2 of $gpus GPU(s) as nvidia-smi/sysfs report it"
        fi
    }
    if [ "$(wc -l <"$WORK/inventory.txt")" -eq "$gpus" ]; then
        row inventory-gpu-count PASS "$gpus GPU(s)"
    else
        row inventory-gpu-count FAIL "vgpu lists $(wc -l <"$WORK/inventory.txt"), nvidia-smi $gpus"
    fi
    inventory_field inventory-uuid UUID 2
    inventory_field inventory-name "product name" 3
    inventory_field inventory-memory "memory (MiB)" 4
    inventory_field inventory-pci-bus-id "PCI bus id" 5
    inventory_field inventory-numa "NUMA node" 6
    inventory_field inventory-health "health (a working machine: all healthy)" 7
    # HAMi's register value: devmem = memory (no scaling by default), type = the name, NVIDIA- prefixed if needed.
    register=$(sed -n 's/^  "register": "\(.*\)"$/\1/p' "$INVENTORY" | sed 's/\\"/"/g')
    missing=""
    while IFS='|' read -r index uuid name memory bus numa health; do
        type=$name
        [ "${name#NVIDIA}" != "$name" ] || type="NVIDIA-$name"
        printf '%s\n' "$register" | sed 's/},{/}\n{/g' | grep -F "\"id\":\"$uuid\"" |
            grep -qF "\"devmem\":$memory,\"devcore\":100,\"type\":\"$type\"" || missing="GPU $index ($uuid, $memory MiB, $type)"
    done <"$WORK/smi.txt"
    if [ -z "$missing" ] && [ "$gpus" -gt 0 ]; then
        row inventory-register PASS "hami.io/node-nvidia-register offers every GPU's memory under HAMi's type"
    else
        row inventory-register FAIL "${missing:-no GPU} not in the register value"
    fi
else
    row inventory-runs FAIL "$(head -1 "$WORK/inventory.err")"
fi

echo
echo "vgpu gpu-check on $GPU ($(date -u +%Y-%m-%d))"
printf '%-34s %-6s %s\n' check result detail
for line in "${rows[@]}"; do echo "$line"; done
echo "$(( ${#rows[@]} - failures )) passed, $failures failed"
if [ -s "${INVENTORY:-}" ]; then
    echo
    echo "vgpu inventory --source nvml --output json:"
    cat "$INVENTORY"
fi
[ "$failures" -eq 0 ]
