/*
 * ABI test, part 3: the names cuda.h maps each base name to (cuMemAlloc -> cuMemAlloc_v2,
 * cuCtxCreate -> cuCtxCreate_v4, and with CUDA_API_PER_THREAD_DEFAULT_STREAM cuLaunchKernel ->
 * cuLaunchKernel_ptsz ...) are exported variants of that base in src/api/cuda_api.def. Compiled twice,
 * without and with CUDA_API_PER_THREAD_DEFAULT_STREAM.
 */
#include <cuda.h>
#include <stdio.h>
#include <stdbool.h>
#include <string.h>

#ifdef CUDA_API_PER_THREAD_DEFAULT_STREAM
#define ABI_NAMES_CHECK abi_names_per_thread
#else
#define ABI_NAMES_CHECK abi_names_default
#endif

int ABI_NAMES_CHECK(void);

#define STRINGIFY(x) #x
#define EXPANDED(x) STRINGIFY(x)

struct mapped {
    const char *base;
    const char *name;
};

static const struct mapped MAPPED[] = {
#define VGPU_ABI_NAME(base) {#base, EXPANDED(base)},
#include "abi_names.h"
#undef VGPU_ABI_NAME
};

struct variant {
    const char *base;
    const char *symbol;
};

static const struct variant VARIANTS[] = {
#define VGPU_PROC(base, version, per_thread, symbol) {base, #symbol},
#define VGPU_PROC_LEGACY(base, version, per_thread)
#include "cuda_proc_table.h"
#undef VGPU_PROC
#undef VGPU_PROC_LEGACY
};

int ABI_NAMES_CHECK(void) {
    int failures = 0;
    for (unsigned i = 0; i < sizeof MAPPED / sizeof MAPPED[0]; i++) {
        /* cuda.h turns cuGetProcAddress_v2 into a static inline wrapper in per-thread mode. */
        if (strcmp(MAPPED[i].name, "cuGetProcAddress_v2_ptsz") == 0) continue;
        bool found = false;
        for (unsigned j = 0; j < sizeof VARIANTS / sizeof VARIANTS[0] && !found; j++)
            found = strcmp(VARIANTS[j].base, MAPPED[i].base) == 0 && strcmp(VARIANTS[j].symbol, MAPPED[i].name) == 0;
        if (!found) {
            fprintf(stderr, "  cuda.h calls %s through %s, which the mock does not export under that base\n", MAPPED[i].base,
                    MAPPED[i].name);
            failures++;
        }
    }
    return failures;
}
