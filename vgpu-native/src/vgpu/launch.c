/* Kernel launches. Without a compute limit a launch costs two loads and a predictable branch on top
 * of the driver's own work: no lock, no system call, no driver call, and the hook ends in a tail call.
 * Under a compute limit the launch goes through an out-of-line function that paces it (pacer.h) and
 * then calls the driver, so that the unlimited path keeps no registers around a call. */
#include "common/log.h"
#include "vgpu/pacer.h"
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

/* The per-thread variants' NULL stream is the per-thread default stream, which the pacer names as such. */
static inline CUstream per_thread_stream(CUstream stream) { return stream != NULL ? stream : CU_STREAM_PER_THREAD; }

#define LAUNCH_PARAMETERS                                                                                       \
    CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ, unsigned int blockDimX, \
        unsigned int blockDimY, unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream
#define LAUNCH_ARGUMENTS f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream
#define LAUNCH_THREADS threads_of(gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ)

/* Each hook and its paced path take the same parameters, so that either path reaches the driver, or the
 * paced path, by a tail call that passes the program's arguments on untouched. */
#define LAUNCH_HOOK(name, paced_stream)                                                                          \
    __attribute__((noinline)) static CUresult paced_##name(LAUNCH_PARAMETERS, void **kernelParams, void **extra) { \
        vgpu_pace_launch(paced_stream, LAUNCH_THREADS);                                                          \
        note_launch();                                                                                           \
        return real.name(LAUNCH_ARGUMENTS, kernelParams, extra);                                                 \
    }                                                                                                            \
    CUresult name(LAUNCH_PARAMETERS, void **kernelParams, void **extra) {                                        \
        if (__builtin_expect(real.name == NULL, 0)) return VGPU_CONFIG_REFUSED;                                  \
        if (compute_limited()) return paced_##name(LAUNCH_ARGUMENTS, kernelParams, extra);                       \
        note_launch();                                                                                           \
        return real.name(LAUNCH_ARGUMENTS, kernelParams, extra);                                                 \
    }

#define COOPERATIVE_HOOK(name, paced_stream)                                                                     \
    __attribute__((noinline)) static CUresult paced_##name(LAUNCH_PARAMETERS, void **kernelParams) {             \
        vgpu_pace_launch(paced_stream, LAUNCH_THREADS);                                                          \
        note_launch();                                                                                           \
        return real.name(LAUNCH_ARGUMENTS, kernelParams);                                                        \
    }                                                                                                            \
    CUresult name(LAUNCH_PARAMETERS, void **kernelParams) {                                                      \
        if (__builtin_expect(real.name == NULL, 0)) return VGPU_CONFIG_REFUSED;                                  \
        if (compute_limited()) return paced_##name(LAUNCH_ARGUMENTS, kernelParams);                              \
        note_launch();                                                                                           \
        return real.name(LAUNCH_ARGUMENTS, kernelParams);                                                        \
    }

#define LAUNCH_EX_HOOK(name, per_thread)                                                                         \
    __attribute__((noinline)) static CUresult paced_##name(const CUlaunchConfig *config, CUfunction f,          \
                                                           void **kernelParams, void **extra) {                 \
        if (config != NULL)                                                                                      \
            vgpu_pace_launch(per_thread ? per_thread_stream(config->hStream) : config->hStream,                 \
                             threads_of(config->gridDimX, config->gridDimY, config->gridDimZ, config->blockDimX, \
                                        config->blockDimY, config->blockDimZ));                                  \
        note_launch();                                                                                           \
        return real.name(config, f, kernelParams, extra);                                                        \
    }                                                                                                            \
    CUresult name(const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra) {               \
        if (__builtin_expect(real.name == NULL, 0)) return VGPU_CONFIG_REFUSED;                                  \
        if (compute_limited()) return paced_##name(config, f, kernelParams, extra);                              \
        note_launch();                                                                                           \
        return real.name(config, f, kernelParams, extra);                                                        \
    }

LAUNCH_HOOK(cuLaunchKernel, hStream)
LAUNCH_HOOK(cuLaunchKernel_ptsz, per_thread_stream(hStream))
COOPERATIVE_HOOK(cuLaunchCooperativeKernel, hStream)
COOPERATIVE_HOOK(cuLaunchCooperativeKernel_ptsz, per_thread_stream(hStream))
LAUNCH_EX_HOOK(cuLaunchKernelEx, false)
LAUNCH_EX_HOOK(cuLaunchKernelEx_ptsz, true)
