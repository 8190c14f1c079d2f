/* Overhead of libvgpu.so over the mock driver alone: ns added per cuMemAlloc/cuMemFree pair (limit set,
 * so the atomic reservation runs), per cuLaunchKernel without a compute limit, and per cuLaunchKernel
 * under a 50% compute limit once the controller has calibrated the pacer (kernels of 5 ns, a few percent
 * of the device: every launch goes through the pacer's compare-and-swap, none is held back). Each figure is the best of several
 * batches in a fresh process; processes with and without libvgpu alternate, and the median of the paired
 * differences is compared with the check's bound. A noisy machine gets up to three attempts: the check
 * fails only if every attempt misses. The bounds are loose sanity bounds (a lock or a system call on
 * the path would miss them); the targets are reported in the README. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "checks.h"
#include "common/util.h"
#include "vgpu/region.h"

#define ROUNDS 5
#define ATTEMPTS 3

__attribute__((noinline)) static double best_of_batches(int batches, int per_batch, int (*body)(int iterations, void *state), void *state) {
    double best = 1e30;
    for (int batch = 0; batch < batches; batch++) {
        uint64_t start = vgpu_now_ns();
        if (body(per_batch, state)) return -1;
        double per_call = (double)(vgpu_now_ns() - start) / per_batch;
        if (per_call < best) best = per_call;
    }
    return best;
}

static int alloc_free_pairs(int iterations, void *unused) {
    (void)unused;
    for (int i = 0; i < iterations; i++) {
        CUdeviceptr pointer = 0;
        if (cuMemAlloc_v2(&pointer, MIB) != CUDA_SUCCESS || cuMemFree_v2(pointer) != CUDA_SUCCESS) return 1;
    }
    return 0;
}

static int launches(int iterations, void *function) {
    for (int i = 0; i < iterations; i++)
        if (cuLaunchKernel((CUfunction)function, 64, 1, 1, 128, 1, 1, 0, NULL, NULL, NULL) != CUDA_SUCCESS) return 1;
    return 0;
}

int role_bench_alloc(int argc, char **argv) {
    (void)argc, (void)argv;
    CUcontext context;
    if (setup_primary_context(&context)) return 1;
    alloc_free_pairs(2000, NULL);
    double best = best_of_batches(7, 5000, alloc_free_pairs, NULL);
    EXPECT(best > 0, "allocations failed");
    printf("%.1f\n", best);
    return 0;
}

int role_bench_launch(int argc, char **argv) {
    (void)argc, (void)argv;
    CUcontext context;
    if (setup_primary_context(&context)) return 1;
    CUfunction function;
    if (load_test_kernel(&function, "empty")) return 1;
    launches(100000, function);
    double best = best_of_batches(7, 300000, launches, function);
    EXPECT(best > 0, "launches failed");
    printf("%.2f\n", best);
    return 0;
}

/* Launches under a compute limit: first until the controller has calibrated the container's pacer (the
 * region says so), so that what is measured is the pacing path itself. */
int role_bench_launch_limited(int argc, char **argv) {
    (void)argc, (void)argv;
    CUcontext context;
    if (setup_primary_context(&context)) return 1;
    CUfunction function;
    if (load_test_kernel(&function, "empty")) return 1;
    struct vgpu_region *region = map_region_writable(); /* NULL: no libvgpu made one */
    uint64_t start = vgpu_now_ns();
    while (vgpu_now_ns() < start + (region != NULL ? 30000000000ULL : 400000000ULL) &&
           (region == NULL || atomic_load(&region->devices[0].pace.budget_bits) == 0))
        launches(20000, function);
    EXPECT(region == NULL || atomic_load(&region->devices[0].pace.budget_bits) != 0, "the pacer calibrated");
    double best = best_of_batches(7, 300000, launches, function);
    EXPECT(best > 0, "launches failed");
    printf("%.2f\n", best);
    return 0;
}

static double run_bench(const char *role, const char *const *environment) {
    int output = -1;
    pid_t child = spawn_self_with(role, NULL, environment, &output);
    char text[64] = {0};
    ssize_t got = read(output, text, sizeof text - 1);
    close(output);
    int status = wait_child(child);
    return (status == 0 && got > 0) ? atof(text) : -1;
}

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int overhead(const char *role, const char *what, double target_ns, const char *const *with, const char *const *without) {
    for (int attempt = 1; attempt <= ATTEMPTS; attempt++) {
        double added[ROUNDS], plain[ROUNDS], hooked[ROUNDS];
        for (int round = 0; round < ROUNDS; round++) {
            plain[round] = run_bench(role, without);
            hooked[round] = run_bench(role, with);
            EXPECT(plain[round] > 0 && hooked[round] > 0, "benchmark process failed");
            added[round] = hooked[round] - plain[round];
        }
        qsort(added, ROUNDS, sizeof added[0], compare_doubles);
        qsort(plain, ROUNDS, sizeof plain[0], compare_doubles);
        qsort(hooked, ROUNDS, sizeof hooked[0], compare_doubles);
        double median = added[ROUNDS / 2];
        printf("overhead %s: mock alone %.1f ns, with libvgpu %.1f ns, added %.1f ns (target %.0f, attempt %d)\n", what,
               plain[ROUNDS / 2], hooked[ROUNDS / 2], median, target_ns, attempt);
        fflush(stdout);
        fprintf(stderr, "  %s: mock alone %.1f ns, with libvgpu %.1f ns, added %.1f ns (target <= %.0f)\n", what,
                plain[ROUNDS / 2], hooked[ROUNDS / 2], median, target_ns);
        if (median <= target_ns) return 0;
    }
    EXPECT(false, "%s overhead above %.0f ns in all %d attempts", what, target_ns, ATTEMPTS);
    return 1;
}

int check_overhead_alloc(int argc, char **argv) {
    (void)argc, (void)argv;
    char preload[700], region[700];
    snprintf(preload, sizeof preload, "LD_PRELOAD=%s", getenv("VGPU_TEST_LIBVGPU"));
    snprintf(region, sizeof region, "CUDA_DEVICE_MEMORY_SHARED_CACHE=%s/bench.region", getenv("VGPU_TEST_DIR"));
    const char *with[] = {preload, region, "CUDA_DEVICE_MEMORY_LIMIT=8g", NULL};
    const char *without[] = {"LD_PRELOAD", NULL};
    return overhead("bench-alloc", "cuMemAlloc+cuMemFree pair", 500, with, without);
}

int check_overhead_launch(int argc, char **argv) {
    (void)argc, (void)argv;
    char preload[700], region[700];
    snprintf(preload, sizeof preload, "LD_PRELOAD=%s", getenv("VGPU_TEST_LIBVGPU"));
    snprintf(region, sizeof region, "CUDA_DEVICE_MEMORY_SHARED_CACHE=%s/bench.region", getenv("VGPU_TEST_DIR"));
    const char *with[] = {preload, region, "VGPU_MOCK_KERNEL_NS=0", "CUDA_DEVICE_MEMORY_LIMIT=8g", "CUDA_DEVICE_SM_LIMIT", NULL};
    const char *without[] = {"LD_PRELOAD", "VGPU_MOCK_KERNEL_NS=0", NULL};
    return overhead("bench-launch", "cuLaunchKernel", 10, with, without);
}

int check_overhead_launch_limited(int argc, char **argv) {
    (void)argc, (void)argv;
    char preload[700], region[700];
    snprintf(preload, sizeof preload, "LD_PRELOAD=%s", getenv("VGPU_TEST_LIBVGPU"));
    snprintf(region, sizeof region, "CUDA_DEVICE_MEMORY_SHARED_CACHE=%s/bench-limited.region", getenv("VGPU_TEST_DIR"));
    const char *with[] = {preload, region, "VGPU_MOCK_KERNEL_NS=5", "VGPU_MOCK_KERNEL_JITTER=0", "CUDA_DEVICE_SM_LIMIT=50",
                          "GPU_CORE_UTILIZATION_POLICY=force", NULL};
    const char *without[] = {"LD_PRELOAD", "VGPU_MOCK_KERNEL_NS=5", "VGPU_MOCK_KERNEL_JITTER=0", NULL};
    return overhead("bench-launch-limited", "cuLaunchKernel under a 50% limit", 100, with, without);
}
