/* The cuGetProcAddress resolution table generated from src/api/cuda_api.def, and the selection rule
 * the driver applies: the newest variant introduced at or before the requested CUDA version, the
 * per-thread default-stream variant when the caller asks for it (else the legacy one). Shared by the
 * mock driver (which returns its own functions) and libvgpu.so (which swaps in its hooks). */
#ifndef VGPU_COMMON_PROCTABLE_H
#define VGPU_COMMON_PROCTABLE_H

#include <stdbool.h>

#include "cuda_types.h"

struct vgpu_proc_variant {
    const char *base;
    int version;
    bool per_thread;
    const char *symbol; /* NULL: exists in NVIDIA's driver with a 32-bit legacy ABI, not provided */
};

extern const struct vgpu_proc_variant VGPU_PROC_VARIANTS[];
extern const unsigned VGPU_PROC_VARIANT_COUNT;

/* Index of the variant a driver returns for (base, version, per_thread), or -1. *status tells
 * SUCCESS, SYMBOL_NOT_FOUND (unknown base) or VERSION_NOT_SUFFICIENT (no variant that old, or only
 * the legacy one); on SUCCESS the variant's symbol is non-NULL. */
int vgpu_proc_select(const char *base, int version, bool per_thread, CUdriverProcAddressQueryResult *status);

#endif
