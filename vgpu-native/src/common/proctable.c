#include "common/proctable.h"

#include <string.h>

#define VGPU_PROC(base, version, per_thread, symbol) {base, version, per_thread, #symbol},
#define VGPU_PROC_LEGACY(base, version, per_thread) {base, version, per_thread, NULL},
const struct vgpu_proc_variant VGPU_PROC_VARIANTS[] = {
#include "cuda_proc_table.h"
};
#undef VGPU_PROC
#undef VGPU_PROC_LEGACY

const unsigned VGPU_PROC_VARIANT_COUNT = sizeof VGPU_PROC_VARIANTS / sizeof VGPU_PROC_VARIANTS[0];

int vgpu_proc_select(const char *base, int version, bool per_thread, CUdriverProcAddressQueryResult *status) {
    int legacy = -1, threaded = -1;
    bool known = false;
    for (unsigned i = 0; i < VGPU_PROC_VARIANT_COUNT; i++) {
        const struct vgpu_proc_variant *variant = &VGPU_PROC_VARIANTS[i];
        if (strcmp(variant->base, base) != 0) continue;
        known = true;
        if (variant->version > version) continue;
        int *best = variant->per_thread ? &threaded : &legacy;
        if (*best < 0 || variant->version > VGPU_PROC_VARIANTS[*best].version) *best = (int)i;
    }
    int chosen = (per_thread && threaded >= 0) ? threaded : legacy;
    if (chosen >= 0 && VGPU_PROC_VARIANTS[chosen].symbol == NULL) chosen = -1;
    *status = chosen >= 0 ? CU_GET_PROC_ADDRESS_SUCCESS
              : known     ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                          : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return chosen;
}
