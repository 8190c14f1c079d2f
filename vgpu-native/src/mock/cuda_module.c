/* Mock driver: modules, libraries, functions and kernel launches.
 *
 * Any image loads. When the image is PTX text, its ".entry" names are the module's kernels and other
 * names are not found; for binary images (cubin, fatbin) every name resolves. A function named like a
 * reference kernel (reference_kernels.h) is that kernel. A launch books its device on the shared
 * virtual clock for the device time kernels.c gives it, after all work already booked on that device
 * by any process (FIFO), so busy time is measurable. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mock/cuda_internal.h"

/* ---- images -------------------------------------------------------------------------------- */

static bool looks_like_ptx(const char *image) {
    const char *p = image;
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
    if (*p != '/' && *p != '.') return false;
    return strstr(image, ".version") != NULL || strstr(image, ".entry") != NULL;
}

/* Collects the kernel names of PTX text: ".entry <name>(" with optional ".visible"/".weak" before. */
static bool parse_ptx_entries(const char *text, struct mock_module *module) {
    unsigned capacity = 0;
    for (const char *p = strstr(text, ".entry"); p != NULL; p = strstr(p + 6, ".entry")) {
        const char *name = p + 6;
        if (!isspace((unsigned char)*name)) continue;
        while (isspace((unsigned char)*name)) name++;
        size_t length = 0;
        while (name[length] != '\0' && (isalnum((unsigned char)name[length]) || name[length] == '_' || name[length] == '$'))
            length++;
        if (length == 0) continue;
        if (module->entry_count == capacity) {
            capacity = capacity ? capacity * 2 : 8;
            char **grown = realloc(module->entries, capacity * sizeof *grown);
            if (grown == NULL) return false;
            module->entries = grown;
        }
        char *copy = strndup(name, length);
        if (copy == NULL) return false;
        module->entries[module->entry_count++] = copy;
    }
    return true;
}

static void module_init(struct mock_module *module, struct mock_context *context) {
    memset(module, 0, sizeof *module);
    module->magic = MOCK_MODULE_MAGIC;
    module->context = context;
    pthread_mutex_init(&module->lock, NULL);
}

static CUresult module_load_image(struct mock_module *module, const void *image) {
    if (looks_like_ptx(image)) {
        if (!parse_ptx_entries(image, module)) return CUDA_ERROR_OUT_OF_MEMORY;
        if (module->entries == NULL) module->entries = calloc(1, sizeof(char *)); /* PTX without kernels */
        if (module->entries == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
    }
    return CUDA_SUCCESS;
}

static void module_release(struct mock_module *module) {
    struct mock_function *function = module->functions;
    while (function != NULL) {
        struct mock_function *next = function->next;
        function->magic = MOCK_DEAD_MAGIC;
        free(function);
        function = next;
    }
    for (unsigned i = 0; i < module->entry_count; i++) free(module->entries[i]);
    free(module->entries);
    module->magic = MOCK_DEAD_MAGIC;
    pthread_mutex_destroy(&module->lock);
}

void mock_module_destroy(struct mock_module *module) {
    module_release(module);
    free(module);
}

static CUresult load_module(CUmodule *module_out, const void *image) {
    if (module_out == NULL || image == NULL) return CUDA_ERROR_INVALID_VALUE;
    struct mock_context *context = NULL;
    CUresult result = mock_require_context(&context);
    if (result != CUDA_SUCCESS) return result;
    struct mock_module *module = malloc(sizeof *module);
    if (module == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
    module_init(module, context);
    result = module_load_image(module, image);
    if (result != CUDA_SUCCESS) {
        mock_module_destroy(module);
        return result;
    }
    pthread_mutex_lock(&context->lock);
    module->next = context->modules;
    context->modules = module;
    pthread_mutex_unlock(&context->lock);
    *module_out = (CUmodule)module;
    return CUDA_SUCCESS;
}

CUresult cuModuleLoadData(CUmodule *module, const void *image) { return load_module(module, image); }
CUresult cuModuleLoadFatBinary(CUmodule *module, const void *fatCubin) { return load_module(module, fatCubin); }

CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions, CUjit_option *options,
                            void **optionValues) {
    if (numOptions > 0 && (options == NULL || optionValues == NULL)) return CUDA_ERROR_INVALID_VALUE;
    return load_module(module, image);
}

/* Reads a whole file; NULL with *result set on failure. */
static char *read_image_file(const char *path, CUresult *result) {
    FILE *file = fopen(path, "rbe");
    if (file == NULL) {
        *result = CUDA_ERROR_FILE_NOT_FOUND;
        return NULL;
    }
    size_t capacity = 1 << 16, length = 0;
    char *data = malloc(capacity + 1);
    while (data != NULL) {
        size_t got = fread(data + length, 1, capacity - length, file);
        length += got;
        if (length < capacity) break;
        capacity *= 2;
        char *grown = realloc(data, capacity + 1);
        if (grown == NULL) free(data);
        data = grown;
    }
    fclose(file);
    if (data == NULL) {
        *result = CUDA_ERROR_OUT_OF_MEMORY;
        return NULL;
    }
    data[length] = '\0';
    if (length == 0) {
        free(data);
        *result = CUDA_ERROR_INVALID_IMAGE;
        return NULL;
    }
    *result = CUDA_SUCCESS;
    return data;
}

CUresult cuModuleLoad(CUmodule *module, const char *fname) {
    if (module == NULL || fname == NULL) return CUDA_ERROR_INVALID_VALUE;
    MOCK_REQUIRE_INIT();
    CUresult result = CUDA_SUCCESS;
    char *image = read_image_file(fname, &result);
    if (image == NULL) return result;
    result = load_module(module, image);
    free(image);
    return result;
}

CUresult cuModuleUnload(CUmodule hmod) {
    MOCK_REQUIRE_INIT();
    struct mock_module *module = (struct mock_module *)hmod;
    if (module == NULL || module->magic != MOCK_MODULE_MAGIC || module->context == NULL) return CUDA_ERROR_INVALID_HANDLE;
    struct mock_context *context = module->context;
    pthread_mutex_lock(&context->lock);
    struct mock_module **link = &context->modules;
    while (*link != NULL && *link != module) link = &(*link)->next;
    bool found = *link != NULL;
    if (found) *link = module->next;
    pthread_mutex_unlock(&context->lock);
    if (!found) return CUDA_ERROR_INVALID_HANDLE;
    mock_module_destroy(module);
    return CUDA_SUCCESS;
}

static CUresult find_function(struct mock_module *module, const char *name, struct mock_function **out) {
    if (module->entries != NULL) {
        bool listed = false;
        for (unsigned i = 0; i < module->entry_count && !listed; i++) listed = strcmp(module->entries[i], name) == 0;
        if (!listed) return CUDA_ERROR_NOT_FOUND;
    }
    if (strlen(name) >= sizeof((struct mock_function *)0)->name) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&module->lock);
    struct mock_function *function = module->functions;
    while (function != NULL && strcmp(function->name, name) != 0) function = function->next;
    if (function == NULL && (function = calloc(1, sizeof *function)) != NULL) {
        function->magic = MOCK_FUNCTION_MAGIC;
        function->module = module;
        strcpy(function->name, name);
        function->reference = mock_reference_kernel_named(name);
        function->mean_ns = mock_config_kernel_mean_ns(mock_driver.config, name);
        function->max_dynamic_shared = 49152;
        function->carveout = -1;
        function->next = module->functions;
        module->functions = function;
    }
    pthread_mutex_unlock(&module->lock);
    if (function == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
    *out = function;
    return CUDA_SUCCESS;
}

CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name) {
    if (hfunc == NULL || name == NULL) return CUDA_ERROR_INVALID_VALUE;
    MOCK_REQUIRE_INIT();
    struct mock_module *module = (struct mock_module *)hmod;
    if (module == NULL || module->magic != MOCK_MODULE_MAGIC) return CUDA_ERROR_INVALID_HANDLE;
    return find_function(module, name, (struct mock_function **)hfunc);
}

CUresult cuModuleGetLoadingMode(CUmoduleLoadingMode *mode) {
    if (mode == NULL) return CUDA_ERROR_INVALID_VALUE;
    MOCK_REQUIRE_INIT();
    *mode = CU_MODULE_EAGER_LOADING;
    return CUDA_SUCCESS;
}

/* ---- libraries: context-independent modules; a CUkernel is the library's function object --- */

static struct mock_library *library_of(CUlibrary handle) {
    struct mock_library *library = (struct mock_library *)handle;
    return (library != NULL && library->magic == MOCK_LIBRARY_MAGIC) ? library : NULL;
}

static CUresult load_library(CUlibrary *library_out, const void *code, unsigned numJitOptions, CUjit_option *jitOptions,
                             void **jitOptionsValues, unsigned numLibraryOptions, CUlibraryOption *libraryOptions,
                             void **libraryOptionValues) {
    if (library_out == NULL || code == NULL) return CUDA_ERROR_INVALID_VALUE;
    if ((numJitOptions > 0 && (jitOptions == NULL || jitOptionsValues == NULL)) ||
        (numLibraryOptions > 0 && (libraryOptions == NULL || libraryOptionValues == NULL)))
        return CUDA_ERROR_INVALID_VALUE;
    MOCK_REQUIRE_INIT();
    struct mock_library *library = calloc(1, sizeof *library);
    if (library == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
    library->magic = MOCK_LIBRARY_MAGIC;
    module_init(&library->module, NULL);
    CUresult result = module_load_image(&library->module, code);
    if (result != CUDA_SUCCESS) {
        module_release(&library->module);
        free(library);
        return result;
    }
    *library_out = (CUlibrary)library;
    return CUDA_SUCCESS;
}

CUresult cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *jitOptions, void **jitOptionsValues,
                           unsigned int numJitOptions, CUlibraryOption *libraryOptions, void **libraryOptionValues,
                           unsigned int numLibraryOptions) {
    return load_library(library, code, numJitOptions, jitOptions, jitOptionsValues, numLibraryOptions, libraryOptions,
                        libraryOptionValues);
}

CUresult cuLibraryLoadFromFile(CUlibrary *library, const char *fileName, CUjit_option *jitOptions, void **jitOptionsValues,
                               unsigned int numJitOptions, CUlibraryOption *libraryOptions, void **libraryOptionValues,
                               unsigned int numLibraryOptions) {
    if (library == NULL || fileName == NULL) return CUDA_ERROR_INVALID_VALUE;
    MOCK_REQUIRE_INIT();
    CUresult result = CUDA_SUCCESS;
    char *image = read_image_file(fileName, &result);
    if (image == NULL) return result;
    result = load_library(library, image, numJitOptions, jitOptions, jitOptionsValues, numLibraryOptions, libraryOptions,
                          libraryOptionValues);
    free(image);
    return result;
}

CUresult cuLibraryUnload(CUlibrary handle) {
    MOCK_REQUIRE_INIT();
    struct mock_library *library = library_of(handle);
    if (library == NULL) return CUDA_ERROR_INVALID_HANDLE;
    module_release(&library->module);
    library->magic = MOCK_DEAD_MAGIC;
    free(library);
    return CUDA_SUCCESS;
}

CUresult cuLibraryGetKernel(CUkernel *pKernel, CUlibrary handle, const char *name) {
    if (pKernel == NULL || name == NULL) return CUDA_ERROR_INVALID_VALUE;
    MOCK_REQUIRE_INIT();
    struct mock_library *library = library_of(handle);
    if (library == NULL) return CUDA_ERROR_INVALID_HANDLE;
    return find_function(&library->module, name, (struct mock_function **)pKernel);
}

CUresult cuLibraryGetModule(CUmodule *pMod, CUlibrary handle) {
    if (pMod == NULL) return CUDA_ERROR_INVALID_VALUE;
    MOCK_REQUIRE_INIT();
    struct mock_library *library = library_of(handle);
    if (library == NULL) return CUDA_ERROR_INVALID_HANDLE;
    *pMod = (CUmodule)&library->module;
    return CUDA_SUCCESS;
}

struct mock_function *mock_function_of(const void *handle) {
    struct mock_function *function = (struct mock_function *)handle;
    return (function != NULL && function->magic == MOCK_FUNCTION_MAGIC) ? function : NULL;
}

CUresult cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel) {
    if (pFunc == NULL) return CUDA_ERROR_INVALID_VALUE;
    struct mock_context *context = NULL;
    CUresult result = mock_require_context(&context); /* the driver loads the kernel into the current context */
    if (result != CUDA_SUCCESS) return result;
    if (mock_function_of(kernel) == NULL) return CUDA_ERROR_INVALID_HANDLE;
    *pFunc = (CUfunction)kernel;
    return CUDA_SUCCESS;
}

CUresult cuKernelGetName(const char **name, CUkernel hfunc) {
    if (name == NULL) return CUDA_ERROR_INVALID_VALUE;
    MOCK_REQUIRE_INIT();
    struct mock_function *function = mock_function_of(hfunc);
    if (function == NULL) return CUDA_ERROR_INVALID_HANDLE;
    *name = function->name;
    return CUDA_SUCCESS;
}

/* ---- functions ----------------------------------------------------------------------------- */

CUresult cuFuncGetName(const char **name, CUfunction hfunc) { return cuKernelGetName(name, (CUkernel)hfunc); }

CUresult cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction hfunc) {
    if (pi == NULL) return CUDA_ERROR_INVALID_VALUE;
    MOCK_REQUIRE_INIT();
    struct mock_function *function = mock_function_of(hfunc);
    if (function == NULL) return CUDA_ERROR_INVALID_HANDLE;
    switch (attrib) {
        case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *pi = 1024; break;
        case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: *pi = 0; break;
        case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES: *pi = 0; break;
        case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES: *pi = 0; break;
        case CU_FUNC_ATTRIBUTE_NUM_REGS: *pi = 32; break;
        case CU_FUNC_ATTRIBUTE_PTX_VERSION: *pi = 80; break;
        case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *pi = 80; break;
        case CU_FUNC_ATTRIBUTE_CACHE_MODE_CA: *pi = 0; break;
        case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *pi = function->max_dynamic_shared; break;
        case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT: *pi = function->carveout; break;
        case CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET:
        case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
        case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
        case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
        case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
        case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE: *pi = 0; break;
        default: return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

CUresult cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value) {
    MOCK_REQUIRE_INIT();
    struct mock_function *function = mock_function_of(hfunc);
    if (function == NULL) return CUDA_ERROR_INVALID_HANDLE;
    switch (attrib) {
        case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
            if (value < 0 || value > 232448) return CUDA_ERROR_INVALID_VALUE; /* largest opt-in of any profile */
            function->max_dynamic_shared = value;
            return CUDA_SUCCESS;
        case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
            if (value < -1 || value > 100) return CUDA_ERROR_INVALID_VALUE;
            function->carveout = value;
            return CUDA_SUCCESS;
        case CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET:
        case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
        case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
        case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
        case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
        case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE: return CUDA_SUCCESS;
        default: return CUDA_ERROR_INVALID_VALUE;
    }
}

CUresult cuFuncSetCacheConfig(CUfunction hfunc, CUfunc_cache config) {
    MOCK_REQUIRE_INIT();
    struct mock_function *function = mock_function_of(hfunc);
    if (function == NULL) return CUDA_ERROR_INVALID_HANDLE;
    if ((int)config < CU_FUNC_CACHE_PREFER_NONE || config > CU_FUNC_CACHE_PREFER_EQUAL) return CUDA_ERROR_INVALID_VALUE;
    function->cache_config = config;
    return CUDA_SUCCESS;
}

/* ---- occupancy and launches ---------------------------------------------------------------- */

static unsigned resident_blocks_per_multiprocessor(const struct mock_device *device, unsigned threads_per_block,
                                                   size_t dynamic_shared) {
    unsigned by_threads = (unsigned)device->profile->max_threads_per_multiprocessor / (threads_per_block ? threads_per_block : 1);
    unsigned blocks = by_threads > 0 ? by_threads : 1;
    unsigned max_blocks = (unsigned)device->architecture->max_blocks_per_multiprocessor;
    if (blocks > max_blocks) blocks = max_blocks;
    if (dynamic_shared > 0) {
        size_t by_shared = (size_t)device->architecture->shared_memory_per_multiprocessor / dynamic_shared;
        if (by_shared < blocks) blocks = by_shared > 0 ? (unsigned)by_shared : 1;
    }
    return blocks;
}

static CUresult occupancy(int *numBlocks, CUfunction func, int blockSize, size_t dynamicSMemSize) {
    if (numBlocks == NULL || blockSize <= 0 || blockSize > 1024) return CUDA_ERROR_INVALID_VALUE;
    struct mock_context *context = NULL;
    CUresult result = mock_require_context(&context);
    if (result != CUDA_SUCCESS) return result;
    if (mock_function_of(func) == NULL) return CUDA_ERROR_INVALID_HANDLE;
    const struct mock_device *device = mock_driver.devices[context->ordinal];
    /* Blocks are scheduled in whole warps. */
    unsigned warp_rounded = ((unsigned)blockSize + 31) / 32 * 32;
    *numBlocks = (int)resident_blocks_per_multiprocessor(device, warp_rounded, dynamicSMemSize);
    return CUDA_SUCCESS;
}

CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, CUfunction func, int blockSize, size_t dynamicSMemSize) {
    return occupancy(numBlocks, func, blockSize, dynamicSMemSize);
}

CUresult cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *numBlocks, CUfunction func, int blockSize,
                                                              size_t dynamicSMemSize, unsigned int flags) {
    if (flags > 1) return CUDA_ERROR_INVALID_VALUE;
    return occupancy(numBlocks, func, blockSize, dynamicSMemSize);
}

struct launch {
    unsigned grid[3], block[3];
    unsigned shared_bytes;
    CUstream stream;
    bool cooperative;
    bool per_thread;
};

CUresult mock_launch_check(const struct mock_function *function, const struct mock_kernel_geometry *geometry,
                           unsigned shared_bytes, bool cooperative, int ordinal) {
    uint64_t threads_per_block = (uint64_t)geometry->block[0] * geometry->block[1] * geometry->block[2];
    uint64_t blocks = (uint64_t)geometry->grid[0] * geometry->grid[1] * geometry->grid[2];
    if (blocks == 0 || threads_per_block == 0 || threads_per_block > 1024 || geometry->block[2] > 64 ||
        geometry->grid[1] > 65535 || geometry->grid[2] > 65535 || geometry->grid[0] > 2147483647u)
        return CUDA_ERROR_INVALID_VALUE;
    if (shared_bytes > (unsigned)function->max_dynamic_shared) return CUDA_ERROR_INVALID_VALUE;
    const struct mock_device *device = mock_driver.devices[ordinal];
    uint64_t per_wave = (uint64_t)device->profile->multiprocessors *
                        resident_blocks_per_multiprocessor(device, (unsigned)threads_per_block, shared_bytes);
    if (cooperative && blocks > per_wave) return CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
    return CUDA_SUCCESS;
}

CUresult mock_launch_run(const struct mock_function *function, const struct mock_kernel_geometry *geometry,
                         void **kernelParams, void **extra, struct mock_stream *stream) {
    uint64_t duration = 0;
    CUresult result = mock_kernel_run(function, geometry, kernelParams, extra, &duration);
    if (result != CUDA_SUCCESS || duration == 0) return result; /* VGPU_MOCK_KERNEL_NS=0: free launches */
    uint64_t end = mock_state_book_kernel(mock_driver.state, mock_driver.process, stream->context->physical, duration);
    mock_stream_mark(stream, end);
    return CUDA_SUCCESS;
}

static CUresult launch_kernel(CUfunction f, const struct launch *launch, void **kernelParams, void **extra) {
    MOCK_REQUIRE_INIT();
    struct mock_function *function = mock_function_of(f);
    if (function == NULL) return CUDA_ERROR_INVALID_HANDLE;
    if (kernelParams != NULL && extra != NULL) return CUDA_ERROR_INVALID_VALUE;
    struct mock_stream *stream = NULL;
    CUresult result = mock_resolve_stream(launch->stream, launch->per_thread, &stream);
    if (result != CUDA_SUCCESS) return result;
    int ordinal = stream->context->ordinal;
    if (mock_device_lost(ordinal)) return CUDA_ERROR_DEVICE_UNAVAILABLE;
    const struct mock_kernel_geometry geometry = {{launch->grid[0], launch->grid[1], launch->grid[2]},
                                                  {launch->block[0], launch->block[1], launch->block[2]}};
    result = mock_launch_check(function, &geometry, launch->shared_bytes, launch->cooperative, ordinal);
    if (result != CUDA_SUCCESS) return result;
    if (stream->capture != NULL)
        return mock_capture_kernel(stream, function, &geometry, launch->shared_bytes, kernelParams, extra);
    return mock_launch_run(function, &geometry, kernelParams, extra, stream);
}

#define LAUNCH_ARGUMENTS                                                                                        \
    CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ, unsigned int blockDimX, \
        unsigned int blockDimY, unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream

#define LAUNCH_OF(cooperative_launch, per_thread_stream)                                                  \
    ((struct launch){{gridDimX, gridDimY, gridDimZ}, {blockDimX, blockDimY, blockDimZ}, sharedMemBytes, hStream, \
                     cooperative_launch, per_thread_stream})

CUresult cuLaunchKernel(LAUNCH_ARGUMENTS, void **kernelParams, void **extra) {
    struct launch launch = LAUNCH_OF(false, false);
    return launch_kernel(f, &launch, kernelParams, extra);
}

CUresult cuLaunchKernel_ptsz(LAUNCH_ARGUMENTS, void **kernelParams, void **extra) {
    struct launch launch = LAUNCH_OF(false, true);
    return launch_kernel(f, &launch, kernelParams, extra);
}

CUresult cuLaunchCooperativeKernel(LAUNCH_ARGUMENTS, void **kernelParams) {
    struct launch launch = LAUNCH_OF(true, false);
    return launch_kernel(f, &launch, kernelParams, NULL);
}

CUresult cuLaunchCooperativeKernel_ptsz(LAUNCH_ARGUMENTS, void **kernelParams) {
    struct launch launch = LAUNCH_OF(true, true);
    return launch_kernel(f, &launch, kernelParams, NULL);
}

static CUresult launch_ex(const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra, bool per_thread) {
    if (config == NULL || (config->numAttrs > 0 && config->attrs == NULL)) return CUDA_ERROR_INVALID_VALUE;
    struct launch launch = {{config->gridDimX, config->gridDimY, config->gridDimZ},
                            {config->blockDimX, config->blockDimY, config->blockDimZ},
                            config->sharedMemBytes,
                            config->hStream,
                            false,
                            per_thread};
    for (unsigned i = 0; i < config->numAttrs; i++) {
        if (config->attrs[i].id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE) {
            int cooperative = 0;
            memcpy(&cooperative, config->attrs[i].value.pad, sizeof cooperative);
            launch.cooperative = cooperative != 0;
        }
    }
    return launch_kernel(f, &launch, kernelParams, extra);
}

CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra) {
    return launch_ex(config, f, kernelParams, extra, false);
}

CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra) {
    return launch_ex(config, f, kernelParams, extra, true);
}
