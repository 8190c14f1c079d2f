/* Mock driver: copies and memsets. Device memory is host memory, so a copy is a memcpy. Synchronous
 * calls first wait for the work queued on their default stream, as the real ones do; asynchronous
 * calls copy at once. Reference kernels also do their work when launched, so every operation on
 * device memory happens in the order the program enqueued it: each stream's own order, and any order
 * the program enforces between streams. */
#include <string.h>

#include "mock/cuda_internal.h"

static CUresult check_device_range(CUdeviceptr address, size_t bytes) {
    return mock_device_range_valid(address, bytes) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* Synchronous copies on the default stream: wait for its queued work first. */
static CUresult wait_default_stream(bool per_thread) {
    struct mock_stream *stream = NULL;
    CUresult result = mock_resolve_stream(NULL, per_thread, &stream);
    if (result != CUDA_SUCCESS) return result;
    mock_wait_until(per_thread ? atomic_load(&stream->last_end_ns) : atomic_load(&stream->context->last_end_ns));
    return CUDA_SUCCESS;
}

enum copy_mode { COPY_SYNC, COPY_SYNC_PER_THREAD, COPY_ASYNC, COPY_ASYNC_PER_THREAD };

/* Waits for what a synchronous call waits for, or resolves an asynchronous call's stream: *capturing is
 * that stream when it is being captured into a graph (the call is then recorded, not done). */
static CUresult prologue(enum copy_mode mode, CUstream hStream, struct mock_stream **capturing) {
    *capturing = NULL;
    MOCK_REQUIRE_INIT();
    if (mode == COPY_SYNC || mode == COPY_SYNC_PER_THREAD) return wait_default_stream(mode == COPY_SYNC_PER_THREAD);
    struct mock_stream *stream = NULL;
    CUresult result = mock_resolve_stream(hStream, mode == COPY_ASYNC_PER_THREAD, &stream);
    if (result == CUDA_SUCCESS && stream->capture != NULL) *capturing = stream;
    return result;
}

CUresult mock_copy_now(void *destination, const void *source, size_t bytes, bool destination_is_device,
                       bool source_is_device) {
    CUresult result = CUDA_SUCCESS;
    if (bytes > 0 && (destination == NULL || source == NULL)) return CUDA_ERROR_INVALID_VALUE;
    if (destination_is_device && (result = check_device_range((CUdeviceptr)(uintptr_t)destination, bytes)) != CUDA_SUCCESS)
        return result;
    if (source_is_device && (result = check_device_range((CUdeviceptr)(uintptr_t)source, bytes)) != CUDA_SUCCESS)
        return result;
    if (bytes > 0) memmove(destination, source, bytes);
    return CUDA_SUCCESS;
}

static CUresult copy_linear(void *destination, const void *source, size_t bytes, bool destination_is_device,
                            bool source_is_device, enum copy_mode mode, CUstream hStream) {
    struct mock_stream *capturing = NULL;
    CUresult result = prologue(mode, hStream, &capturing);
    if (result != CUDA_SUCCESS) return result;
    if (capturing != NULL)
        return mock_capture_copy(capturing, destination, source, bytes, destination_is_device, source_is_device);
    return mock_copy_now(destination, source, bytes, destination_is_device, source_is_device);
}

#define DEVICE_POINTER(address) ((void *)(uintptr_t)(address))

CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount) {
    return copy_linear(DEVICE_POINTER(dst), DEVICE_POINTER(src), ByteCount, false, false, COPY_SYNC, NULL);
}
CUresult cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount) {
    return copy_linear(DEVICE_POINTER(dst), DEVICE_POINTER(src), ByteCount, false, false, COPY_SYNC_PER_THREAD, NULL);
}
CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream) {
    return copy_linear(DEVICE_POINTER(dst), DEVICE_POINTER(src), ByteCount, false, false, COPY_ASYNC, hStream);
}
CUresult cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream) {
    return copy_linear(DEVICE_POINTER(dst), DEVICE_POINTER(src), ByteCount, false, false, COPY_ASYNC_PER_THREAD, hStream);
}

static bool peer_contexts_valid(CUcontext a, CUcontext b) {
    const struct mock_context *first = (const struct mock_context *)a, *second = (const struct mock_context *)b;
    return first != NULL && second != NULL && first->magic == MOCK_CONTEXT_MAGIC && second->magic == MOCK_CONTEXT_MAGIC;
}

CUresult cuMemcpyPeer(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice, CUcontext srcContext,
                      size_t ByteCount) {
    if (!peer_contexts_valid(dstContext, srcContext)) return CUDA_ERROR_INVALID_CONTEXT;
    return copy_linear(DEVICE_POINTER(dstDevice), DEVICE_POINTER(srcDevice), ByteCount, true, true, COPY_SYNC, NULL);
}
CUresult cuMemcpyPeer_ptds(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice, CUcontext srcContext,
                           size_t ByteCount) {
    if (!peer_contexts_valid(dstContext, srcContext)) return CUDA_ERROR_INVALID_CONTEXT;
    return copy_linear(DEVICE_POINTER(dstDevice), DEVICE_POINTER(srcDevice), ByteCount, true, true, COPY_SYNC_PER_THREAD, NULL);
}
CUresult cuMemcpyPeerAsync(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice, CUcontext srcContext,
                           size_t ByteCount, CUstream hStream) {
    if (!peer_contexts_valid(dstContext, srcContext)) return CUDA_ERROR_INVALID_CONTEXT;
    return copy_linear(DEVICE_POINTER(dstDevice), DEVICE_POINTER(srcDevice), ByteCount, true, true, COPY_ASYNC, hStream);
}
CUresult cuMemcpyPeerAsync_ptsz(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice, CUcontext srcContext,
                                size_t ByteCount, CUstream hStream) {
    if (!peer_contexts_valid(dstContext, srcContext)) return CUDA_ERROR_INVALID_CONTEXT;
    return copy_linear(DEVICE_POINTER(dstDevice), DEVICE_POINTER(srcDevice), ByteCount, true, true,
                       COPY_ASYNC_PER_THREAD, hStream);
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount) {
    return copy_linear(DEVICE_POINTER(dstDevice), srcHost, ByteCount, true, false, COPY_SYNC, NULL);
}
CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount) {
    return copy_linear(DEVICE_POINTER(dstDevice), srcHost, ByteCount, true, false, COPY_SYNC_PER_THREAD, NULL);
}
CUresult cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount) {
    return copy_linear(dstHost, DEVICE_POINTER(srcDevice), ByteCount, false, true, COPY_SYNC, NULL);
}
CUresult cuMemcpyDtoH_v2_ptds(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount) {
    return copy_linear(dstHost, DEVICE_POINTER(srcDevice), ByteCount, false, true, COPY_SYNC_PER_THREAD, NULL);
}
CUresult cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount) {
    return copy_linear(DEVICE_POINTER(dstDevice), DEVICE_POINTER(srcDevice), ByteCount, true, true, COPY_SYNC, NULL);
}
CUresult cuMemcpyDtoD_v2_ptds(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount) {
    return copy_linear(DEVICE_POINTER(dstDevice), DEVICE_POINTER(srcDevice), ByteCount, true, true, COPY_SYNC_PER_THREAD, NULL);
}
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream) {
    return copy_linear(DEVICE_POINTER(dstDevice), srcHost, ByteCount, true, false, COPY_ASYNC, hStream);
}
CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream) {
    return copy_linear(DEVICE_POINTER(dstDevice), srcHost, ByteCount, true, false, COPY_ASYNC_PER_THREAD, hStream);
}
CUresult cuMemcpyDtoHAsync_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream) {
    return copy_linear(dstHost, DEVICE_POINTER(srcDevice), ByteCount, false, true, COPY_ASYNC, hStream);
}
CUresult cuMemcpyDtoHAsync_v2_ptsz(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream) {
    return copy_linear(dstHost, DEVICE_POINTER(srcDevice), ByteCount, false, true, COPY_ASYNC_PER_THREAD, hStream);
}
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream) {
    return copy_linear(DEVICE_POINTER(dstDevice), DEVICE_POINTER(srcDevice), ByteCount, true, true, COPY_ASYNC, hStream);
}
CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream) {
    return copy_linear(DEVICE_POINTER(dstDevice), DEVICE_POINTER(srcDevice), ByteCount, true, true, COPY_ASYNC_PER_THREAD,
                       hStream);
}

/* ---- 2D and 3D copies ---------------------------------------------------------------------- */

/* Where one side of a strided copy starts and how far apart its rows and slices are. */
struct copy_side {
    char *start;
    size_t row_pitch;
    size_t slice_pitch;
};

struct copy_shape {
    size_t width, height, depth;
};

static CUresult locate_side(CUmemorytype type, const void *host, CUdeviceptr device, CUarray array, size_t pitch,
                            size_t slice_height, size_t x, size_t y, size_t z, struct copy_shape shape,
                            struct copy_side *side) {
    char *base = NULL;
    switch (type) {
        case CU_MEMORYTYPE_HOST: base = (char *)(uintptr_t)host; break;
        case CU_MEMORYTYPE_DEVICE:
        case CU_MEMORYTYPE_UNIFIED: base = (char *)(uintptr_t)device; break;
        case CU_MEMORYTYPE_ARRAY: {
            struct mock_array *target = mock_array_from_handle(array);
            if (target == NULL) return CUDA_ERROR_INVALID_VALUE;
            const CUDA_ARRAY3D_DESCRIPTOR *descriptor = &target->descriptor;
            pitch = descriptor->Width * target->element_bytes;
            slice_height = descriptor->Height ? descriptor->Height : 1;
            if (x + shape.width > pitch || y + shape.height > slice_height ||
                z + shape.depth > (descriptor->Depth ? descriptor->Depth : 1))
                return CUDA_ERROR_INVALID_VALUE;
            base = target->data;
            break;
        }
        default: return CUDA_ERROR_INVALID_VALUE;
    }
    if (base == NULL) return CUDA_ERROR_INVALID_VALUE;
    if (pitch == 0) pitch = x + shape.width; /* tightly packed rows */
    if (x + shape.width > pitch) return CUDA_ERROR_INVALID_VALUE;
    if (slice_height == 0) slice_height = y + shape.height;
    side->row_pitch = pitch;
    side->slice_pitch = pitch * slice_height;
    side->start = base + z * side->slice_pitch + y * pitch + x;
    if (type == CU_MEMORYTYPE_DEVICE && shape.height > 0 && shape.depth > 0) {
        size_t extent = (shape.depth - 1) * side->slice_pitch + (shape.height - 1) * pitch + shape.width;
        if (check_device_range((CUdeviceptr)(uintptr_t)side->start, extent) != CUDA_SUCCESS) return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

static void copy_strided(const struct copy_side *destination, const struct copy_side *source, struct copy_shape shape) {
    for (size_t z = 0; z < shape.depth; z++)
        for (size_t y = 0; y < shape.height; y++)
            memmove(destination->start + z * destination->slice_pitch + y * destination->row_pitch,
                    source->start + z * source->slice_pitch + y * source->row_pitch, shape.width);
}

static CUresult copy_2d(const CUDA_MEMCPY2D *copy, enum copy_mode mode, CUstream hStream) {
    if (copy == NULL) return CUDA_ERROR_INVALID_VALUE;
    struct mock_stream *capturing = NULL;
    CUresult result = prologue(mode, hStream, &capturing);
    if (result != CUDA_SUCCESS) return result;
    if (capturing != NULL) return mock_capture_unsupported(capturing);
    struct copy_shape shape = {copy->WidthInBytes, copy->Height, 1};
    struct copy_side source, destination;
    if ((result = locate_side(copy->srcMemoryType, copy->srcHost, copy->srcDevice, copy->srcArray, copy->srcPitch, 0,
                              copy->srcXInBytes, copy->srcY, 0, shape, &source)) != CUDA_SUCCESS ||
        (result = locate_side(copy->dstMemoryType, copy->dstHost, copy->dstDevice, copy->dstArray, copy->dstPitch, 0,
                              copy->dstXInBytes, copy->dstY, 0, shape, &destination)) != CUDA_SUCCESS)
        return result;
    copy_strided(&destination, &source, shape);
    return CUDA_SUCCESS;
}

CUresult cuMemcpy2D_v2(const CUDA_MEMCPY2D *pCopy) { return copy_2d(pCopy, COPY_SYNC, NULL); }
CUresult cuMemcpy2D_v2_ptds(const CUDA_MEMCPY2D *pCopy) { return copy_2d(pCopy, COPY_SYNC_PER_THREAD, NULL); }
CUresult cuMemcpy2DUnaligned_v2(const CUDA_MEMCPY2D *pCopy) { return copy_2d(pCopy, COPY_SYNC, NULL); }
CUresult cuMemcpy2DUnaligned_v2_ptds(const CUDA_MEMCPY2D *pCopy) { return copy_2d(pCopy, COPY_SYNC_PER_THREAD, NULL); }
CUresult cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *pCopy, CUstream hStream) { return copy_2d(pCopy, COPY_ASYNC, hStream); }
CUresult cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D *pCopy, CUstream hStream) {
    return copy_2d(pCopy, COPY_ASYNC_PER_THREAD, hStream);
}

static CUresult copy_3d(const CUDA_MEMCPY3D *copy, enum copy_mode mode, CUstream hStream) {
    if (copy == NULL || copy->srcLOD != 0 || copy->dstLOD != 0) return CUDA_ERROR_INVALID_VALUE;
    struct mock_stream *capturing = NULL;
    CUresult result = prologue(mode, hStream, &capturing);
    if (result != CUDA_SUCCESS) return result;
    if (capturing != NULL) return mock_capture_unsupported(capturing);
    struct copy_shape shape = {copy->WidthInBytes, copy->Height, copy->Depth};
    struct copy_side source, destination;
    if ((result = locate_side(copy->srcMemoryType, copy->srcHost, copy->srcDevice, copy->srcArray, copy->srcPitch,
                              copy->srcHeight, copy->srcXInBytes, copy->srcY, copy->srcZ, shape, &source)) != CUDA_SUCCESS ||
        (result = locate_side(copy->dstMemoryType, copy->dstHost, copy->dstDevice, copy->dstArray, copy->dstPitch,
                              copy->dstHeight, copy->dstXInBytes, copy->dstY, copy->dstZ, shape, &destination)) != CUDA_SUCCESS)
        return result;
    copy_strided(&destination, &source, shape);
    return CUDA_SUCCESS;
}

CUresult cuMemcpy3D_v2(const CUDA_MEMCPY3D *pCopy) { return copy_3d(pCopy, COPY_SYNC, NULL); }
CUresult cuMemcpy3D_v2_ptds(const CUDA_MEMCPY3D *pCopy) { return copy_3d(pCopy, COPY_SYNC_PER_THREAD, NULL); }
CUresult cuMemcpy3DAsync_v2(const CUDA_MEMCPY3D *pCopy, CUstream hStream) { return copy_3d(pCopy, COPY_ASYNC, hStream); }
CUresult cuMemcpy3DAsync_v2_ptsz(const CUDA_MEMCPY3D *pCopy, CUstream hStream) {
    return copy_3d(pCopy, COPY_ASYNC_PER_THREAD, hStream);
}

/* ---- memset -------------------------------------------------------------------------------- */

/* Fills height rows of width elements of element_bytes each, rows pitch bytes apart. */
CUresult mock_fill_now(CUdeviceptr destination, size_t pitch, unsigned value, size_t element_bytes, size_t width,
                       size_t height) {
    if (width == 0 || height == 0) return CUDA_SUCCESS;
    size_t row_bytes = width * element_bytes;
    if (pitch < row_bytes || destination % element_bytes != 0) return CUDA_ERROR_INVALID_VALUE;
    CUresult result = check_device_range(destination, (height - 1) * pitch + row_bytes);
    if (result != CUDA_SUCCESS) return result;
    for (size_t row = 0; row < height; row++) {
        char *start = (char *)(uintptr_t)destination + row * pitch;
        if (element_bytes == 1) {
            memset(start, (int)(value & 0xff), width);
        } else if (element_bytes == 2) {
            uint16_t pattern = (uint16_t)value;
            for (size_t i = 0; i < width; i++) memcpy(start + i * 2, &pattern, 2);
        } else {
            uint32_t pattern = value;
            for (size_t i = 0; i < width; i++) memcpy(start + i * 4, &pattern, 4);
        }
    }
    return CUDA_SUCCESS;
}

static CUresult fill(CUdeviceptr destination, size_t pitch, unsigned value, size_t element_bytes, size_t width,
                     size_t height, enum copy_mode mode, CUstream hStream) {
    struct mock_stream *capturing = NULL;
    CUresult result = prologue(mode, hStream, &capturing);
    if (result != CUDA_SUCCESS) return result;
    if (capturing != NULL) return mock_capture_fill(capturing, destination, pitch, value, element_bytes, width, height);
    return mock_fill_now(destination, pitch, value, element_bytes, width, height);
}

#define MEMSET_1D(name, type, size, mode)                                   \
    CUresult name(CUdeviceptr dstDevice, type value, size_t N) {          \
        return fill(dstDevice, (N) * (size), value, size, N, 1, mode, NULL); \
    }
#define MEMSET_1D_ASYNC(name, type, size, mode)                                       \
    CUresult name(CUdeviceptr dstDevice, type value, size_t N, CUstream hStream) {   \
        return fill(dstDevice, (N) * (size), value, size, N, 1, mode, hStream);     \
    }
#define MEMSET_2D(name, type, size, mode)                                                                 \
    CUresult name(CUdeviceptr dstDevice, size_t dstPitch, type value, size_t Width, size_t Height) {     \
        return fill(dstDevice, dstPitch, value, size, Width, Height, mode, NULL);                        \
    }
#define MEMSET_2D_ASYNC(name, type, size, mode)                                                                       \
    CUresult name(CUdeviceptr dstDevice, size_t dstPitch, type value, size_t Width, size_t Height, CUstream hStream) { \
        return fill(dstDevice, dstPitch, value, size, Width, Height, mode, hStream);                                 \
    }

MEMSET_1D(cuMemsetD8_v2, unsigned char, 1, COPY_SYNC)
MEMSET_1D(cuMemsetD8_v2_ptds, unsigned char, 1, COPY_SYNC_PER_THREAD)
MEMSET_1D(cuMemsetD16_v2, unsigned short, 2, COPY_SYNC)
MEMSET_1D(cuMemsetD16_v2_ptds, unsigned short, 2, COPY_SYNC_PER_THREAD)
MEMSET_1D(cuMemsetD32_v2, unsigned int, 4, COPY_SYNC)
MEMSET_1D(cuMemsetD32_v2_ptds, unsigned int, 4, COPY_SYNC_PER_THREAD)
MEMSET_1D_ASYNC(cuMemsetD8Async, unsigned char, 1, COPY_ASYNC)
MEMSET_1D_ASYNC(cuMemsetD8Async_ptsz, unsigned char, 1, COPY_ASYNC_PER_THREAD)
MEMSET_1D_ASYNC(cuMemsetD16Async, unsigned short, 2, COPY_ASYNC)
MEMSET_1D_ASYNC(cuMemsetD16Async_ptsz, unsigned short, 2, COPY_ASYNC_PER_THREAD)
MEMSET_1D_ASYNC(cuMemsetD32Async, unsigned int, 4, COPY_ASYNC)
MEMSET_1D_ASYNC(cuMemsetD32Async_ptsz, unsigned int, 4, COPY_ASYNC_PER_THREAD)
MEMSET_2D(cuMemsetD2D8_v2, unsigned char, 1, COPY_SYNC)
MEMSET_2D(cuMemsetD2D8_v2_ptds, unsigned char, 1, COPY_SYNC_PER_THREAD)
MEMSET_2D(cuMemsetD2D16_v2, unsigned short, 2, COPY_SYNC)
MEMSET_2D(cuMemsetD2D16_v2_ptds, unsigned short, 2, COPY_SYNC_PER_THREAD)
MEMSET_2D(cuMemsetD2D32_v2, unsigned int, 4, COPY_SYNC)
MEMSET_2D(cuMemsetD2D32_v2_ptds, unsigned int, 4, COPY_SYNC_PER_THREAD)
MEMSET_2D_ASYNC(cuMemsetD2D8Async, unsigned char, 1, COPY_ASYNC)
MEMSET_2D_ASYNC(cuMemsetD2D8Async_ptsz, unsigned char, 1, COPY_ASYNC_PER_THREAD)
MEMSET_2D_ASYNC(cuMemsetD2D16Async, unsigned short, 2, COPY_ASYNC)
MEMSET_2D_ASYNC(cuMemsetD2D16Async_ptsz, unsigned short, 2, COPY_ASYNC_PER_THREAD)
MEMSET_2D_ASYNC(cuMemsetD2D32Async, unsigned int, 4, COPY_ASYNC)
MEMSET_2D_ASYNC(cuMemsetD2D32Async_ptsz, unsigned int, 4, COPY_ASYNC_PER_THREAD)
