/* Compute limit accuracy: a process limited to X% of the device launches kernels as fast as it is
 * allowed, while an unlimited process (another container, without libvgpu) competes for the same
 * device. Their kernels take 10-200 us, drawn independently of their grids (1-2000 blocks of 256
 * threads), so the pacer's cost per thread launched cannot predict a single launch: only the controller's
 * measurements can hold the share. The share is measured from the mock's own busy accounting of the
 * limited process over 4 s, after 1.5 s of settling. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "checks.h"
#include "common/util.h"
#include "mock/reference_kernels.h"
#include "mock/state.h"

#define SETTLE_NS 1500000000ULL
#define MEASURE_WINDOWS 8
#define WINDOW_NS 500000000ULL
#define TOLERANCE_POINTS 3.0

static int launch_forever(unsigned synchronize_every, unsigned seed) {
    CUcontext context;
    if (setup_primary_context(&context)) return 1;
    CUfunction spin;
    if (load_reference_kernel(&spin, MOCK_SPIN_KERNEL)) return 1;
    for (unsigned i = 0;; i++) {
        unsigned long long nanoseconds = 10000ULL + (unsigned)rand_r(&seed) % 190001; /* 10 to 200 us */
        unsigned blocks = 1 + (unsigned)rand_r(&seed) % 2000;
        CU_OK(launch_spin(spin, nanoseconds, blocks, NULL));
        if (i % synchronize_every == synchronize_every - 1) CU_OK(cuCtxSynchronize());
    }
}

int role_sm_limited(int argc, char **argv) {
    (void)argc, (void)argv;
    return launch_forever(16, (unsigned)getpid());
}

int role_sm_competitor(int argc, char **argv) {
    (void)argc, (void)argv;
    return launch_forever(2, (unsigned)getpid() * 7919u);
}

static uint64_t busy_of(struct mock_state *state, pid_t pid, uint64_t from, uint64_t to) {
    int slot = mock_slot_of(state, pid);
    return slot < 0 ? 0 : mock_timeline_busy_ns(&state->processes[slot].devices[0].timeline, from, to);
}

int check_sm_limit(int argc, char **argv) {
    EXPECT(argc >= 3, "percentage argument");
    int percent = atoi(argv[2]);
    char limit[64], region[700];
    snprintf(limit, sizeof limit, "CUDA_DEVICE_SM_LIMIT=%d", percent);
    snprintf(region, sizeof region, "CUDA_DEVICE_MEMORY_SHARED_CACHE=%s/sm-%d.region", getenv("VGPU_TEST_DIR"), percent);
    char preload[700];
    snprintf(preload, sizeof preload, "LD_PRELOAD=%s", getenv("VGPU_TEST_LIBVGPU"));
    const char *competitor_env[] = {"LD_PRELOAD", NULL};
    const char *limited_env[] = {preload, limit, region, "GPU_CORE_UTILIZATION_POLICY=force", NULL};
    pid_t competitor = spawn_self_with("sm-competitor", NULL, competitor_env, NULL);
    pid_t limited = spawn_self_with("sm-limited", NULL, limited_env, NULL);
    struct mock_state *state = mock_state_for_tests();
    EXPECT(state != NULL, "mock state readable");
    uint64_t start = vgpu_now_ns();
    vgpu_sleep_until_ns(start + SETTLE_NS);
    uint64_t from = vgpu_now_ns(), limited_busy = 0, competitor_busy = 0, device_busy = 0;
    for (int window = 0; window < MEASURE_WINDOWS; window++) {
        uint64_t window_start = from + (uint64_t)window * WINDOW_NS;
        vgpu_sleep_until_ns(window_start + WINDOW_NS + 2 * MOCK_BUCKET_NS); /* let the window's last bucket settle */
        limited_busy += busy_of(state, limited, window_start, window_start + WINDOW_NS);
        competitor_busy += busy_of(state, competitor, window_start, window_start + WINDOW_NS);
        device_busy += mock_timeline_busy_ns(&state->devices[0].timeline, window_start, window_start + WINDOW_NS);
    }
    kill(limited, SIGKILL);
    kill(competitor, SIGKILL);
    int limited_status = wait_child(limited), competitor_status = wait_child(competitor);
    double span = (double)(MEASURE_WINDOWS * WINDOW_NS);
    double achieved = 100.0 * (double)limited_busy / span;
    printf("sm-accuracy target=%d achieved=%.1f competitor=%.1f device=%.1f\n", percent, achieved,
           100.0 * (double)competitor_busy / span, 100.0 * (double)device_busy / span);
    fflush(stdout);
    fprintf(stderr, "  limit %d%%: achieved %.1f%% while the unlimited process got %.1f%% (device busy %.1f%%)\n", percent,
            achieved, 100.0 * (double)competitor_busy / span, 100.0 * (double)device_busy / span);
    EXPECT(limited_status == 128 + SIGKILL && competitor_status == 128 + SIGKILL, "workers ran until stopped (%d, %d)",
           limited_status, competitor_status);
    EXPECT(achieved >= percent - TOLERANCE_POINTS && achieved <= percent + TOLERANCE_POINTS,
           "achieved %.1f%% for a %d%% limit (tolerance %.0f points)", achieved, percent, TOLERANCE_POINTS);
    EXPECT(competitor_busy > 0, "the unlimited process competed");
    return 0;
}

/* For scripts/gpu-check.sh on a real GPU: a compute-bound PTX kernel (the driver compiles it), run
 * for argv[2] seconds after one second of warm-up; prints kernels completed per second. */
static const char SPIN_PTX[] =
    ".version 7.0\n.target sm_70\n.address_size 64\n"
    ".visible .entry spin(.param .u64 out, .param .u32 iterations)\n{\n"
    "  .reg .pred %p;\n  .reg .b32 %r<3>;\n  .reg .f32 %f<2>;\n  .reg .b64 %rd<2>;\n"
    "  ld.param.u64 %rd1, [out];\n  cvta.to.global.u64 %rd1, %rd1;\n  ld.param.u32 %r1, [iterations];\n"
    "  mov.u32 %r2, 0;\n  mov.f32 %f1, 0f3F800000;\n"
    "LOOP:\n  fma.rn.f32 %f1, %f1, 0f3F7FFFFE, 0f3A83126F;\n  add.u32 %r2, %r2, 1;\n"
    "  setp.lt.u32 %p, %r2, %r1;\n  @%p bra LOOP;\n"
    "  st.global.f32 [%rd1], %f1;\n  ret;\n}\n";

int role_gpu_throughput(int argc, char **argv) {
    double seconds = argc >= 3 ? atof(argv[2]) : 5.0;
    CUcontext context;
    if (setup_primary_context(&context)) return 1;
    CUmodule module;
    CUfunction function;
    CU_OK(cuModuleLoadData(&module, SPIN_PTX));
    CU_OK(cuModuleGetFunction(&function, module, "spin"));
    int multiprocessors = 0;
    CU_OK(cuDeviceGetAttribute(&multiprocessors, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0));
    CUdeviceptr out = 0;
    CU_OK(cuMemAlloc_v2(&out, sizeof(float)));
    unsigned iterations = 200000; /* about a millisecond per kernel on a data-center GPU */
    void *arguments[] = {&out, &iterations};
    uint64_t warm_until = vgpu_now_ns() + 1000000000ULL, start = 0, stop = 0, kernels = 0;
    for (unsigned i = 0;; i++) {
        CU_OK(cuLaunchKernel(function, (unsigned)multiprocessors * 4, 1, 1, 256, 1, 1, 0, NULL, arguments, NULL));
        if (i % 8 != 7) continue;
        CU_OK(cuCtxSynchronize());
        uint64_t now = vgpu_now_ns();
        if (start == 0 && now >= warm_until) start = now, kernels = 0;
        else if (start != 0) kernels += 8;
        if (start != 0 && now - start >= (uint64_t)(seconds * 1e9)) {
            stop = now;
            break;
        }
    }
    printf("%.2f\n", (double)kernels / ((double)(stop - start) / 1e9));
    return 0;
}
