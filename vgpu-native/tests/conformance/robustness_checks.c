/* libvgpu never crashes its host process and never stops enforcing without saying so: over an NVML
 * that lacks functions, and in a child forked while other threads held libvgpu's locks or were inside
 * its once-only initialisations. */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "checks.h"
#include "common/util.h"

#define CHILD_SECONDS 10

/* The memory view and the limit: total, the exact boundary, a small allocation, NVML's total. */
static int limit_holds(uint64_t limit) {
    CUdeviceptr pointer = 0;
    size_t free_bytes = 0, total = 0;
    if (memory_info(&free_bytes, &total)) return 1;
    EXPECT(total == limit, "cuMemGetInfo total %zu, limit %llu", total, (unsigned long long)limit);
    EXPECT_CU(cuMemAlloc_v2(&pointer, free_bytes + 1), CUDA_ERROR_OUT_OF_MEMORY);
    CU_OK(cuMemAlloc_v2(&pointer, 16 * MIB));
    CU_OK(cuMemFree_v2(pointer));
    NVML_OK(nvmlInit_v2());
    nvmlDevice_t device = NULL;
    NVML_OK(nvmlDeviceGetHandleByIndex_v2(0, &device));
    nvmlMemory_t memory;
    NVML_OK(nvmlDeviceGetMemoryInfo(device, &memory));
    EXPECT(memory.total == limit, "NVML total %llu, limit %llu", memory.total, (unsigned long long)limit);
    return 0;
}

/* Over a libnvidia-ml.so.1 without nvmlDeviceGetHandleByUUID (a build of the mock with that symbol
 * hidden): contexts, allocations, NVML queries and the compute controller's ticks run without a crash,
 * the limits hold, and the missing function is named once. */
int check_partial_nvml(int argc, char **argv) {
    (void)argc, (void)argv;
    uint64_t limit = env_bytes("CUDA_DEVICE_MEMORY_LIMIT");
    EXPECT(dlsym(RTLD_DEFAULT, "nvmlDeviceGetHandleByUUID") == NULL, "the partial NVML still exports nvmlDeviceGetHandleByUUID");
    struct log_capture log;
    if (log_capture_begin(&log, "partial-nvml")) return 1;
    CUcontext context;
    int failed = setup_primary_context(&context);
    CUfunction function;
    failed = failed || load_test_kernel(&function, "work");
    uint64_t stop = vgpu_now_ns() + 600000000ULL; /* several controller ticks */
    while (!failed && vgpu_now_ns() < stop) {
        failed = cuLaunchKernel(function, 864, 1, 1, 256, 1, 1, 0, NULL, NULL, NULL) != CUDA_SUCCESS ||
                 cuCtxSynchronize() != CUDA_SUCCESS;
    }
    failed = failed || limit_holds(limit);
    if (log_capture_end(&log)) return 1;
    EXPECT(!failed, "calls failed over the partial NVML; log:\n%s", log.text);
    EXPECT(lines_containing(log.text, "nvmlDeviceGetHandleByUUID") == 1,
           "wanted one log line naming nvmlDeviceGetHandleByUUID, got:\n%s", log.text);
    fprintf(stderr, "  no crash, limits hold; %.*s", (int)strcspn(log.text, "\n") + 1, log.text);
    return 0;
}

/* ---- fork ------------------------------------------------------------------------------------ */

struct fork_shim {
    int (*hold)(void);                  /* a thread of the shim locks every mutex libvgpu has locked */
    void (*release)(void);
    void (*block)(const char *path);    /* libvgpu's dlopen/open of path blocks in this process */
    int (*blocked)(void);               /* threads blocked so far */
    void (*unblock)(void);
};

static int find_shim(struct fork_shim *shim) {
    shim->hold = (int (*)(void))dlsym(RTLD_DEFAULT, "vgpu_forkshim_hold");
    shim->release = (void (*)(void))dlsym(RTLD_DEFAULT, "vgpu_forkshim_release");
    shim->block = (void (*)(const char *))dlsym(RTLD_DEFAULT, "vgpu_forkshim_block");
    shim->blocked = (int (*)(void))dlsym(RTLD_DEFAULT, "vgpu_forkshim_blocked");
    shim->unblock = (void (*)(void))dlsym(RTLD_DEFAULT, "vgpu_forkshim_unblock");
    EXPECT(shim->hold && shim->release && shim->block && shim->blocked && shim->unblock, "libvgpu-shim-fork.so is preloaded");
    return 0;
}

/* Forks; the child gets CHILD_SECONDS to show the limits from a fresh context; returns its exit code
 * (128 + SIGALRM when it hung). The child leaves through exit(), which gives its slot of the region back
 * at once, so that the parent's view of free memory is exact afterwards. */
static int fork_and_query(uint64_t limit) {
    pid_t child = fork();
    if (child == 0) {
        alarm(CHILD_SECONDS);
        CUcontext context;
        exit(setup_primary_context(&context) || limit_holds(limit) ? 1 : 0);
    }
    return wait_child(child);
}

/* Every lock libvgpu has taken so far is held by another thread at fork: a created and a destroyed
 * context, allocations on the default and on a created stream, NVML queries. */
int check_fork_while_locked(int argc, char **argv) {
    EXPECT(argc >= 3, "usage: fork-while-locked <limit bytes>");
    uint64_t limit = strtoull(argv[2], NULL, 10);
    struct fork_shim shim;
    if (find_shim(&shim)) return 1;
    CUcontext primary, created;
    if (setup_primary_context(&primary)) return 1;
    CUstream stream;
    CU_OK(cuStreamCreate(&stream, 0));
    CUdeviceptr pointer = 0;
    CU_OK(cuMemAllocAsync(&pointer, MIB, stream));
    CU_OK(cuMemFreeAsync(pointer, stream));
    CU_OK(cuStreamSynchronize(stream));
    CU_OK(cuCtxCreate_v2(&created, 0, 0));
    CU_OK(cuCtxDestroy_v2(created));
    CU_OK(cuCtxSetCurrent(primary));
    if (limit_holds(limit)) return 1;
    int held = shim.hold();
    int code = fork_and_query(limit);
    shim.release();
    EXPECT(code == 0, "the child forked while %d libvgpu locks were held %s (exit %d)", held,
           code == 128 + SIGALRM ? "hung" : "failed", code);
    fprintf(stderr, "  child forked while another thread held all %d mutexes libvgpu had locked: limits hold\n", held);
    EXPECT(held >= 8, "only %d libvgpu mutexes were seen; the check must exercise every lock", held);
    pid_t once = spawn_self("fork-in-once", argv[2]);
    EXPECT(wait_child(once) == 0, "forking while threads were inside libvgpu's initialisations failed");
    return limit_holds(limit);
}

static void *nvml_query(void *unused) {
    (void)unused;
    nvmlDevice_t device = NULL;
    nvmlMemory_t memory;
    if (nvmlDeviceGetHandleByIndex_v2(0, &device) == NVML_SUCCESS) nvmlDeviceGetMemoryInfo(device, &memory);
    return NULL;
}

static void *cuda_init(void *unused) {
    (void)unused;
    cuInit(0);
    return NULL;
}

static void *procaddr_query(void *unused) {
    (void)unused;
    void *function = NULL;
    CUdriverProcAddressQueryResult status;
    cuGetProcAddress_v2("cuMemAlloc", &function, 12000, 0, &status);
    return NULL;
}

/* A fresh process: three threads stop inside libvgpu's once-only initialisations (loading NVML,
 * reading the limits file, loading the driver: each blocked in its dlopen or open), then it forks. */
int role_fork_in_once(int argc, char **argv) {
    EXPECT(argc >= 3, "usage: fork-in-once <limit bytes>");
    uint64_t limit = strtoull(argv[2], NULL, 10);
    struct fork_shim shim;
    if (find_shim(&shim)) return 1;
    shim.block("libnvidia-ml.so.1");
    shim.block("libcuda.so.1");
    shim.block(getenv("VGPU_LIMITS_FILE"));
    NVML_OK(nvmlInit_v2());
    pthread_t threads[3];
    void *(*bodies[3])(void *) = {nvml_query, cuda_init, procaddr_query};
    for (int i = 0; i < 3; i++) EXPECT(pthread_create(&threads[i], NULL, bodies[i], NULL) == 0, "thread started");
    uint64_t deadline = vgpu_now_ns() + 5000000000ULL;
    while (shim.blocked() < 3 && vgpu_now_ns() < deadline) vgpu_sleep_ns(1000000);
    int blocked = shim.blocked();
    int code = fork_and_query(limit);
    shim.unblock();
    for (int i = 0; i < 3; i++) pthread_join(threads[i], NULL);
    EXPECT(blocked == 3, "only %d of 3 threads stopped inside libvgpu's initialisation", blocked);
    EXPECT(code == 0, "the child forked while 3 threads were inside libvgpu's initialisations %s (exit %d)",
           code == 128 + SIGALRM ? "hung" : "failed", code);
    fprintf(stderr, "  child forked while threads were loading NVML, the driver and the limits file: limits hold\n");
    CUcontext context;
    if (setup_primary_context(&context)) return 1;
    return limit_holds(limit);
}
