/* CUDA array sizes, computed the same way by the mock driver (which allocates them) and libvgpu.so
 * (which counts them against the limit). */
#ifndef VGPU_COMMON_ARRAYS_H
#define VGPU_COMMON_ARRAYS_H

#include <stddef.h>

#include "cuda_types.h"

/* Bytes of one channel of an element of the format; 0 for a format not known here. */
size_t vgpu_array_format_bytes(CUarray_format format);
/* Extent of a dimension at mipmap level `level`: halved per level, never below 1; 0 (absent) stays 0. */
size_t vgpu_mipmap_extent(size_t extent, unsigned level);

#endif
