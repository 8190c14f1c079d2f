/* Kernel launches. Without a compute limit a launch costs two loads and a predictable branch on top
 * of the driver's own work: no lock, no system call, no driver call. */
#include "common/log.h"
#include "vgpu/vgpu.h"

static inline void note_launch(void) {
    /* Read before writing so that the cache line stays shared while the flag is already set. */
    if (!atomic_load_explicit(&runtime.launched, memory_order_relaxed))
        atomic_store_explicit(&runtime.launched, 1, memory_order_relaxed);
}

static inline bool compute_limited(void) {
    return __builtin_expect(atomic_load_explicit(&runtime.any_sm_limit, memory_order_relaxed) != 0, 0);
}

static inline uint64_t threads_of(unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz) {
    return (uint64_t)gx * gy * gz * ((uint64_t)bx * by * bz);
}

#define LAUNCH_PARAMETERS                                                                                       \
    CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ, unsigned int blockDimX, \
        unsigned int blockDimY, unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream

/* The per-thread variants' NULL stream is the per-thread default stream, which the gate names as such. */
static inline CUstream per_thread_stream(CUstream stream) { return stream != NULL ? stream : CU_STREAM_PER_THREAD; }

#define LAUNCH_GATE(stream)                                                                                         \
    do {                                                                                                            \
        if (compute_limited())                                                                                      \
            vgpu_sm_gate(stream, threads_of(gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ));        \
        note_launch();                                                                                              \
    } while (0)

CUresult cuLaunchKernel(LAUNCH_PARAMETERS, void **kernelParams, void **extra) {
    __typeof__(real.cuLaunchKernel) launch = real.cuLaunchKernel;
    if (__builtin_expect(launch == NULL, 0)) return VGPU_CONFIG_REFUSED;
    LAUNCH_GATE(hStream);
    return launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream, kernelParams,
                  extra);
}

CUresult cuLaunchKernel_ptsz(LAUNCH_PARAMETERS, void **kernelParams, void **extra) {
    __typeof__(real.cuLaunchKernel_ptsz) launch = real.cuLaunchKernel_ptsz;
    if (__builtin_expect(launch == NULL, 0)) return VGPU_CONFIG_REFUSED;
    LAUNCH_GATE(per_thread_stream(hStream));
    return launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream, kernelParams,
                  extra);
}

CUresult cuLaunchCooperativeKernel(LAUNCH_PARAMETERS, void **kernelParams) {
    __typeof__(real.cuLaunchCooperativeKernel) launch = real.cuLaunchCooperativeKernel;
    if (__builtin_expect(launch == NULL, 0)) return VGPU_CONFIG_REFUSED;
    LAUNCH_GATE(hStream);
    return launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream, kernelParams);
}

CUresult cuLaunchCooperativeKernel_ptsz(LAUNCH_PARAMETERS, void **kernelParams) {
    __typeof__(real.cuLaunchCooperativeKernel_ptsz) launch = real.cuLaunchCooperativeKernel_ptsz;
    if (__builtin_expect(launch == NULL, 0)) return VGPU_CONFIG_REFUSED;
    LAUNCH_GATE(per_thread_stream(hStream));
    return launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream, kernelParams);
}

static inline void gate_config(const CUlaunchConfig *config, bool per_thread) {
    if (compute_limited() && config != NULL)
        vgpu_sm_gate(per_thread ? per_thread_stream(config->hStream) : config->hStream,
                     threads_of(config->gridDimX, config->gridDimY, config->gridDimZ, config->blockDimX, config->blockDimY,
                                config->blockDimZ));
    note_launch();
}

CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra) {
    __typeof__(real.cuLaunchKernelEx) launch = real.cuLaunchKernelEx;
    if (__builtin_expect(launch == NULL, 0)) return VGPU_CONFIG_REFUSED;
    gate_config(config, false);
    return launch(config, f, kernelParams, extra);
}

CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra) {
    __typeof__(real.cuLaunchKernelEx_ptsz) launch = real.cuLaunchKernelEx_ptsz;
    if (__builtin_expect(launch == NULL, 0)) return VGPU_CONFIG_REFUSED;
    gate_config(config, true);
    return launch(config, f, kernelParams, extra);
}

