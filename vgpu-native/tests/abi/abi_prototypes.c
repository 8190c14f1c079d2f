/*
 * ABI test, part 2: every exported driver function's parameter list (src/api/cuda_api.def) has the
 * type of NVIDIA's PFN_<base>_v<version>[_ptds|_ptsz] typedef in cudaTypedefs.h, which also proves
 * the version column: a wrong version names a typedef that does not exist or does not match.
 * __CUDA_API_VERSION_INTERNAL exposes the legacy typedefs (e.g. PFN_cuCtxDestroy_v2000).
 */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <cudaTypedefs.h>

#define VGPU_ABI_PROTO(symbol, pfn, params) \
    _Static_assert(__builtin_types_compatible_p(pfn, CUresult(CUDAAPI *) params), \
                   #symbol ": parameters differ from " #pfn " in cudaTypedefs.h");

#include "abi_prototypes.h"

int abi_prototypes_checked(void);
int abi_prototypes_checked(void) { return 1; }
