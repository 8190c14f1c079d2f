/*
 * ABI test, part 1: every enumerator, type size, alignment and struct field offset declared in
 * src/include/cuda_types.h equals NVIDIA's cuda.h. Compiling this file is the test; a mismatch is a
 * compile error naming the item. The generated headers come from scripts/gen-abi-checks.awk.
 */
#include <cuda.h>
#include <stddef.h>

#define VGPU_ABI_CHECK 1
#include "abi_rename.h"
#include "cuda_types.h"
#include "abi_unrename.h"

#define VGPU_ABI_ENUM(name) \
    _Static_assert((long long)vgpu_abi_##name == (long long)(name), "enumerator " #name " differs from cuda.h");
#define VGPU_ABI_SIZE(type)                                                                   \
    _Static_assert(sizeof(vgpu_abi_##type) == sizeof(type), "sizeof " #type " differs from cuda.h"); \
    _Static_assert(_Alignof(vgpu_abi_##type) == _Alignof(type), "alignment of " #type " differs from cuda.h");
#define VGPU_ABI_SCALAR(type) \
    _Static_assert(__builtin_types_compatible_p(vgpu_abi_##type, type), "type " #type " differs from cuda.h");
#define VGPU_ABI_FIELD(type, field)                                                         \
    _Static_assert(offsetof(vgpu_abi_##type, field) == offsetof(type, field),               \
                   "offset of " #type "." #field " differs from cuda.h");                  \
    _Static_assert(sizeof(((vgpu_abi_##type *)0)->field) == sizeof(((type *)0)->field),     \
                   "size of " #type "." #field " differs from cuda.h");

#include "abi_checks.h"

int abi_types_checked(void);
int abi_types_checked(void) { return 1; }
