#include "common/arrays.h"

size_t vgpu_array_format_bytes(CUarray_format format) {
    switch (format) {
        case CU_AD_FORMAT_UNSIGNED_INT8:
        case CU_AD_FORMAT_SIGNED_INT8:
        case CU_AD_FORMAT_UNORM_INT8X1:
        case CU_AD_FORMAT_SNORM_INT8X1: return 1;
        case CU_AD_FORMAT_UNSIGNED_INT16:
        case CU_AD_FORMAT_SIGNED_INT16:
        case CU_AD_FORMAT_HALF:
        case CU_AD_FORMAT_UNORM_INT8X2:
        case CU_AD_FORMAT_SNORM_INT8X2:
        case CU_AD_FORMAT_UNORM_INT16X1:
        case CU_AD_FORMAT_SNORM_INT16X1: return 2;
        case CU_AD_FORMAT_UNSIGNED_INT32:
        case CU_AD_FORMAT_SIGNED_INT32:
        case CU_AD_FORMAT_FLOAT:
        case CU_AD_FORMAT_UNORM_INT8X4:
        case CU_AD_FORMAT_SNORM_INT8X4:
        case CU_AD_FORMAT_UNORM_INT16X2:
        case CU_AD_FORMAT_SNORM_INT16X2: return 4;
        case CU_AD_FORMAT_UNORM_INT16X4:
        case CU_AD_FORMAT_SNORM_INT16X4: return 8;
        default: return 0;
    }
}

size_t vgpu_mipmap_extent(size_t extent, unsigned level) {
    if (extent == 0) return 0;
    size_t scaled = level < sizeof(size_t) * 8 ? extent >> level : 0;
    return scaled == 0 ? 1 : scaled;
}
