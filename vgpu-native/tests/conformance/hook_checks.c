/* How programs reach the driver (cuGetProcAddress, dlopen+dlsym, RTLD_NEXT), where limits come from
 * (limits file, malformed values), device identity (visible index vs physical index), and the
 * promise that calls which do not allocate make no system call. */
#include <dlfcn.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "check.h"
#include "checks.h"

/* ---- visible index vs physical index ------------------------------------------------------- */

static int nvml_total_of(unsigned index, uint64_t *total, unsigned *physical, char *uuid) {
    nvmlDevice_t device = NULL;
    NVML_OK(nvmlDeviceGetHandleByIndex_v2(index, &device));
    nvmlMemory_t memory;
    NVML_OK(nvmlDeviceGetMemoryInfo(device, &memory));
    NVML_OK(nvmlDeviceGetIndex(device, physical));
    NVML_OK(nvmlDeviceGetUUID(device, uuid, NVML_DEVICE_UUID_V2_BUFFER_SIZE));
    *total = memory.total;
    return 0;
}

static int cuda_device_is(const char *uuid_suffix, uint64_t limit) {
    int count = 0;
    CU_OK(cuDeviceGetCount(&count));
    EXPECT(count == 1, "CUDA sees %d devices, wanted 1", count);
    CUuuid uuid;
    CU_OK(cuDeviceGetUuid_v2(&uuid, 0));
    EXPECT((unsigned char)uuid.bytes[15] == (unsigned char)strtoul(uuid_suffix, NULL, 16), "CUDA device 0 has UUID byte %02x",
           (unsigned char)uuid.bytes[15]);
    size_t total = 0;
    CU_OK(cuDeviceTotalMem_v2(&total, 0));
    EXPECT(total == limit, "cuDeviceTotalMem %zu, limit %llu", total, (unsigned long long)limit);
    CUcontext context;
    CU_OK(cuDevicePrimaryCtxRetain(&context, 0));
    CU_OK(cuCtxSetCurrent(context));
    size_t free_bytes = 0;
    CU_OK(cuMemGetInfo_v2(&free_bytes, &total));
    EXPECT(total == limit, "cuMemGetInfo total %zu, limit %llu", total, (unsigned long long)limit);
    return 0;
}

/* The container sees only physical GPU 1: NVML numbers it 0 but nvmlDeviceGetIndex says 1. The limit
 * of CUDA device 0 must apply to it, in NVML too (HAMi-core showed 40 GiB here). */
int check_visible_physical(int argc, char **argv) {
    (void)argc, (void)argv;
    uint64_t limit = env_bytes("CUDA_DEVICE_MEMORY_LIMIT_0"), total = 0;
    unsigned count = 0, physical = 0;
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    NVML_OK(nvmlInit_v2());
    NVML_OK(nvmlDeviceGetCount_v2(&count));
    EXPECT(count == 1, "NVML sees %u devices, wanted 1", count);
    for (int pass = 0; pass < 2; pass++) { /* like nvidia-smi before CUDA starts, then inside a CUDA program */
        if (nvml_total_of(0, &total, &physical, uuid)) return 1;
        EXPECT(physical == 1, "nvmlDeviceGetIndex %u, wanted the physical index 1", physical);
        EXPECT(strcmp(uuid, "GPU-12345678-1234-1234-1234-123456780001") == 0, "uuid %s", uuid);
        EXPECT(total == limit, "NVML total %llu (%s CUDA), limit %llu", (unsigned long long)total, pass ? "after" : "before",
               (unsigned long long)limit);
        if (pass == 0) {
            CU_OK(cuInit(0));
            if (cuda_device_is("01", limit)) return 1;
        }
    }
    return 0;
}

/* Both GPUs visible to the container, CUDA_VISIBLE_DEVICES picks physical 1 by UUID: CUDA device 0 is
 * physical 1 and only that NVML device carries the limit. */
int check_visible_uuid(int argc, char **argv) {
    (void)argc, (void)argv;
    uint64_t limit = env_bytes("CUDA_DEVICE_MEMORY_LIMIT_0"), total = 0;
    unsigned physical = 0;
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    NVML_OK(nvmlInit_v2());
    for (int pass = 0; pass < 2; pass++) {
        if (nvml_total_of(1, &total, &physical, uuid)) return 1;
        EXPECT(total == limit, "NVML device 1 total %llu, limit %llu", (unsigned long long)total, (unsigned long long)limit);
        if (nvml_total_of(0, &total, &physical, uuid)) return 1;
        EXPECT(total == 40960 * MIB, "NVML device 0 (not visible to CUDA) total %llu, wanted the full 40 GiB",
               (unsigned long long)total);
        if (pass == 0) {
            CU_OK(cuInit(0));
            if (cuda_device_is("01", limit)) return 1;
        }
    }
    return 0;
}

/* ---- cuGetProcAddress ---------------------------------------------------------------------- */

static int resolves_to(const char *symbol, int version, cuuint64_t flags, void *wanted, const char *wanted_name) {
    void *function = NULL;
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    CU_OK(cuGetProcAddress_v2(symbol, &function, version, flags, &status));
    EXPECT(status == CU_GET_PROC_ADDRESS_SUCCESS && function == wanted, "%s@%d flags %llu resolved to %p (status %d), wanted %s",
           symbol, version, (unsigned long long)flags, function, (int)status, wanted_name);
    return 0;
}

#define RESOLVES(symbol, version, flags, wanted) \
    if (resolves_to(symbol, version, flags, (void *)&wanted, #wanted)) return 1

int check_procaddr(int argc, char **argv) {
    (void)argc, (void)argv;
    uint64_t limit = env_bytes("CUDA_DEVICE_MEMORY_LIMIT");
    CU_OK(cuInit(0));
    /* &cuMemAlloc_v2 and friends are libvgpu's hooks here: it is preloaded, so it defines them first. */
    RESOLVES("cuMemAlloc", 3020, 0, cuMemAlloc_v2);
    RESOLVES("cuMemAlloc", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, cuMemAlloc_v2);
    RESOLVES("cuMemGetInfo", 3020, 0, cuMemGetInfo_v2);
    RESOLVES("cuLaunchKernel", 4000, 0, cuLaunchKernel);
    RESOLVES("cuLaunchKernel", 7000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, cuLaunchKernel_ptsz);
    RESOLVES("cuMemAllocAsync", 11020, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, cuMemAllocAsync_ptsz);
    RESOLVES("cuCtxCreate", 3020, 0, cuCtxCreate_v2);
    RESOLVES("cuCtxCreate", 11040, 0, cuCtxCreate_v3);
    RESOLVES("cuCtxCreate", 12050, 0, cuCtxCreate_v4);
    RESOLVES("cuDevicePrimaryCtxRelease", 7000, 0, cuDevicePrimaryCtxRelease);
    RESOLVES("cuDevicePrimaryCtxRelease", 11000, 0, cuDevicePrimaryCtxRelease_v2);
    RESOLVES("cuGetProcAddress", 11030, 0, cuGetProcAddress);
    RESOLVES("cuGetProcAddress", 12000, 0, cuGetProcAddress_v2);
    RESOLVES("cuDriverGetVersion", 2020, 0, cuDriverGetVersion); /* not hooked: the driver's own */

    void *function = (void *)1;
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
    CU_OK(cuGetProcAddress_v2("cuMemAlloc", &function, 2000, 0, &status));
    EXPECT(function == NULL && status == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT, "cuMemAlloc@2000: %p status %d",
           function, (int)status);
    CU_OK(cuGetProcAddress_v2("cuNoSuchFunction", &function, 13000, 0, &status));
    EXPECT(function == NULL && status == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND, "unknown symbol: status %d", (int)status);
    CU_OK(cuGetProcAddress_v2("", &function, 0, 0, &status)); /* the CUDA runtime's first probe */
    EXPECT(status == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND, "empty name: status %d", (int)status);
    EXPECT_CU(cuGetProcAddress_v2("cuMemAlloc", &function, 99000, 0, &status), CUDA_ERROR_INVALID_VALUE);

    /* The same limits through the resolved functions, including via the 4-argument entry point. */
    __typeof__(&cuGetProcAddress) legacy_lookup = NULL;
    CU_OK(cuGetProcAddress_v2("cuGetProcAddress", (void **)&legacy_lookup, 11030, 0, &status));
    __typeof__(&cuMemAlloc_v2) allocate = NULL;
    CU_OK(legacy_lookup("cuMemAlloc", (void **)&allocate, 11030, 0));
    __typeof__(&cuMemGetInfo_v2) info = NULL;
    CU_OK(cuGetProcAddress_v2("cuMemGetInfo", (void **)&info, 13000, 0, &status));
    __typeof__(&cuCtxCreate_v4) create = NULL;
    CU_OK(cuGetProcAddress_v2("cuCtxCreate", (void **)&create, 13000, 0, &status));
    CUcontext context = NULL;
    CU_OK(create(&context, NULL, 0, 0));
    size_t free_bytes = 0, total = 0;
    CU_OK(info(&free_bytes, &total));
    EXPECT(total == limit, "total through cuGetProcAddress %zu, limit %llu", total, (unsigned long long)limit);
    CUdeviceptr pointer = 0;
    EXPECT_CU(allocate(&pointer, free_bytes + 1), CUDA_ERROR_OUT_OF_MEMORY);
    CU_OK(allocate(&pointer, free_bytes));
    CU_OK(cuMemFree_v2(pointer));
    CU_OK(cuCtxDestroy_v2(context));
    return 0;
}

/* ---- dlopen + dlsym, as the CUDA runtime does ---------------------------------------------- */

int check_dlsym(int argc, char **argv) {
    (void)argc, (void)argv;
    uint64_t limit = env_bytes("CUDA_DEVICE_MEMORY_LIMIT");
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    EXPECT(cuda != NULL, "dlopen libcuda.so.1: %s", dlerror());
    __typeof__(&cuInit) init = (__typeof__(&cuInit))dlsym(cuda, "cuInit");
    __typeof__(&cuMemAlloc_v2) allocate = (__typeof__(&cuMemAlloc_v2))dlsym(cuda, "cuMemAlloc_v2");
    __typeof__(&cuGetProcAddress_v2) lookup = (__typeof__(&cuGetProcAddress_v2))dlsym(cuda, "cuGetProcAddress_v2");
    EXPECT(init == &cuInit && allocate == &cuMemAlloc_v2 && lookup == &cuGetProcAddress_v2,
           "dlsym on the driver's handle must hand out libvgpu's hooks");
    void *version = dlsym(cuda, "cuDriverGetVersion");
    Dl_info where;
    EXPECT(version != NULL && dladdr(version, &where) != 0 && strstr(where.dli_fname, "libcuda.so") != NULL,
           "unhooked names resolve in the driver itself");
    EXPECT(dlsym(RTLD_DEFAULT, "cuMemAlloc_v2") == (void *)&cuMemAlloc_v2, "RTLD_DEFAULT finds the hook");
    CU_OK(init(0));
    __typeof__(&cuMemGetInfo_v2) info = NULL;
    CUdriverProcAddressQueryResult status;
    CU_OK(lookup("cuMemGetInfo", (void **)&info, 12000, 0, &status));
    CUcontext context;
    CU_OK(cuDevicePrimaryCtxRetain(&context, 0));
    CU_OK(cuCtxSetCurrent(context));
    size_t free_bytes = 0, total = 0;
    CU_OK(info(&free_bytes, &total));
    EXPECT(total == limit, "total %zu, limit %llu", total, (unsigned long long)limit);
    CUdeviceptr pointer = 0;
    EXPECT_CU(allocate(&pointer, free_bytes + 1), CUDA_ERROR_OUT_OF_MEMORY);
    void *nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    EXPECT(nvml != NULL, "dlopen libnvidia-ml.so.1");
    __typeof__(&nvmlDeviceGetMemoryInfo) memory_info_of = (__typeof__(&nvmlDeviceGetMemoryInfo))dlsym(nvml, "nvmlDeviceGetMemoryInfo");
    EXPECT(memory_info_of == &nvmlDeviceGetMemoryInfo, "NVML memory queries reach the hook through dlsym too");
    NVML_OK(nvmlInit_v2());
    nvmlDevice_t device = NULL;
    NVML_OK(nvmlDeviceGetHandleByIndex_v2(0, &device));
    nvmlMemory_t memory;
    NVML_OK(memory_info_of(device, &memory));
    EXPECT(memory.total == limit, "NVML total %llu", memory.total);
    return 0;
}

/* LD_PRELOAD="libvgpu.so libvgpu-shim-a.so libvgpu-shim-b.so": shim A asks dlsym(RTLD_NEXT) for a
 * symbol both shims define and must get shim B's, even though libvgpu's dlsym stands in between. */
int check_rtld_next(int argc, char **argv) {
    (void)argc, (void)argv;
    const char *(*probe)(void) = (const char *(*)(void))dlsym(RTLD_DEFAULT, "vgpu_shim_probe");
    EXPECT(probe != NULL, "shims preloaded");
    const char *answer = probe();
    EXPECT(strcmp(answer, "a->b") == 0, "RTLD_NEXT from shim A resolved to %s", answer);
    return 0;
}

/* ---- where limits come from ---------------------------------------------------------------- */

/* argv[2]: the limit the file sets, which must win over the environment's (and its
 * CUDA_DISABLE_CONTROL=true, which must not switch enforcement off). */
int check_limits_file(int argc, char **argv) {
    EXPECT(argc >= 3, "expected limit argument");
    uint64_t expected = 0;
    EXPECT(sscanf(argv[2], "%llu", (unsigned long long *)&expected) == 1, "limit argument");
    CUcontext context;
    if (setup_primary_context(&context)) return 1;
    size_t free_bytes = 0, total = 0;
    if (memory_info(&free_bytes, &total)) return 1;
    EXPECT(total == expected, "total %zu, the limits file says %llu (environment says %s)", total,
           (unsigned long long)expected, getenv("CUDA_DEVICE_MEMORY_LIMIT"));
    CUdeviceptr pointer = 0;
    EXPECT_CU(cuMemAlloc_v2(&pointer, free_bytes + 1), CUDA_ERROR_OUT_OF_MEMORY);
    return 0;
}

struct malformed_case {
    const char *variable;
    const char *value;
};

static const struct malformed_case MALFORMED[] = {
    {"CUDA_DEVICE_MEMORY_LIMIT", "4096x"},
    {"CUDA_DEVICE_MEMORY_LIMIT", "-1"},
    {"CUDA_DEVICE_MEMORY_LIMIT", "1.5g"},
    {"CUDA_DEVICE_MEMORY_LIMIT", ""},
    {"CUDA_DEVICE_MEMORY_LIMIT", "lots"},
    {"CUDA_DEVICE_MEMORY_LIMIT", "99999999999999999999999"},
    {"CUDA_DEVICE_MEMORY_LIMIT", "20000000000g"},
    {"CUDA_DEVICE_MEMORY_LIMIT_0", "0x1000"},
    {"CUDA_DEVICE_MEMORY_LIMIT_X", "1g"},
    {"CUDA_DEVICE_MEMORY_LIMIT_16", "1g"},
    {"CUDA_DEVICE_SM_LIMIT", "150"},
    {"CUDA_DEVICE_SM_LIMIT_0", "half"},
    {"GPU_CORE_UTILIZATION_POLICY", "sometimes"},
    {"CUDA_OVERSUBSCRIBE", "maybe"},
    {"CUDA_DISABLE_CONTROL", "2"},
    {"CUDA_TASK_PRIORITY", "high"},
    {"CUDA_DEVICE_MEMORY_SHARED_CACHE", "relative/path"},
};

/* In a child: sets one variable, calls cuInit and reports through its exit code. */
static int malformed_child(const struct malformed_case *item, const char *log_path) {
    int fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || dup2(fd, STDERR_FILENO) < 0) return 10;
    setenv(item->variable, item->value, 1);
    if (cuInit(0) != CUDA_ERROR_INVALID_VALUE) return 11;
    CUdeviceptr pointer = 0;
    if (cuMemAlloc_v2(&pointer, MIB) != CUDA_ERROR_NOT_INITIALIZED) return 12;
    return 0;
}

int check_malformed_limits(int argc, char **argv) {
    (void)argc, (void)argv;
    char log_path[600];
    snprintf(log_path, sizeof log_path, "%s/malformed.log", getenv("VGPU_TEST_DIR"));
    for (unsigned i = 0; i < sizeof MALFORMED / sizeof MALFORMED[0]; i++) {
        const struct malformed_case *item = &MALFORMED[i];
        pid_t child = fork();
        if (child == 0) _exit(malformed_child(item, log_path));
        int code = wait_child(child);
        EXPECT(code == 0, "%s=\"%s\": child code %d (11: cuInit did not return CUDA_ERROR_INVALID_VALUE, 12: later calls "
                          "did not return CUDA_ERROR_NOT_INITIALIZED)", item->variable, item->value, code);
        char log[2048] = {0};
        int fd = open(log_path, O_RDONLY);
        ssize_t got = fd >= 0 ? read(fd, log, sizeof log - 1) : -1;
        if (fd >= 0) close(fd);
        char expected[256];
        snprintf(expected, sizeof expected, "%s=%s", item->variable, item->value);
        EXPECT(got > 0 && strstr(log, expected) != NULL && strchr(log, '\n') == strrchr(log, '\n'),
               "%s: wanted one log line naming it, got: %s", expected, log);
    }
    /* "0" is no limit, not an error. */
    setenv("CUDA_DEVICE_MEMORY_LIMIT", "0", 1);
    setenv("CUDA_DEVICE_SM_LIMIT", "0", 1);
    CUcontext context;
    if (setup_primary_context(&context)) return 1;
    size_t free_bytes = 0, total = 0, device_total = 0;
    if (memory_info(&free_bytes, &total)) return 1;
    CU_OK(cuDeviceTotalMem_v2(&device_total, 0));
    EXPECT(total == device_total && device_total > GIB, "limit 0 means the whole device: total %zu of %zu", total,
           device_total);
    return 0;
}

/* The shared region cannot be created: cuInit fails with a CUresult and the program goes on. */
int check_region_unavailable(int argc, char **argv) {
    (void)argc, (void)argv;
    EXPECT_CU(cuInit(0), CUDA_ERROR_OPERATING_SYSTEM);
    fprintf(stderr, "  still running after cuInit refused: no exit()\n");
    return 0;
}

/* ---- calls that do not allocate make no system call ---------------------------------------- */

struct hot_calls {
    CUcontext context;
    CUfunction function;
    int failures;
};

/* A forbidden call traps here: report which one, then end the process with a distinctive status. */
static void on_forbidden_call(int signal_number, siginfo_t *info, void *context) {
    (void)signal_number, (void)context;
    char line[96];
    int length = snprintf(line, sizeof line, "  system call %d made on a path that must make none\n", info->si_syscall);
    syscall(SYS_write, STDERR_FILENO, line, (size_t)length);
    syscall(SYS_exit_group, 99);
}

/* Allows only write and exit; any other system call traps into on_forbidden_call. */
static int forbid_system_calls(void) {
    struct sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_write, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_exit, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_exit_group, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_rt_sigreturn, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
    };
    struct sock_fprog program = {.len = sizeof filter / sizeof filter[0], .filter = filter};
    struct sigaction action = {.sa_sigaction = on_forbidden_call, .sa_flags = SA_SIGINFO};
    if (sigaction(SIGSYS, &action, NULL) != 0) return -1;
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -1;
    return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) == 0 ? 0 : -1;
}

static void *hot_path_thread(void *argument) {
    struct hot_calls *calls = argument;
    size_t free_bytes = 0, total = 0;
    CUdevice device = 0;
    if (cuCtxSetCurrent(calls->context) != CUDA_SUCCESS) calls->failures++;
    /* Warm every path once (first calls may allocate thread-local state). */
    cuMemGetInfo_v2(&free_bytes, &total);
    cuLaunchKernel(calls->function, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL);
    cuLaunchKernel_ptsz(calls->function, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL); /* creates the per-thread stream */
    if (forbid_system_calls() != 0) {
        calls->failures = -1;
        return NULL;
    }
    for (int i = 0; i < 1000; i++) {
        calls->failures += cuMemGetInfo_v2(&free_bytes, &total) != CUDA_SUCCESS;
        calls->failures += cuDeviceTotalMem_v2(&total, 0) != CUDA_SUCCESS;
        calls->failures += cuCtxGetDevice(&device) != CUDA_SUCCESS;
        calls->failures += cuLaunchKernel(calls->function, 2, 1, 1, 64, 1, 1, 0, NULL, NULL, NULL) != CUDA_SUCCESS;
        calls->failures += cuLaunchKernel_ptsz(calls->function, 2, 1, 1, 64, 1, 1, 0, NULL, NULL, NULL) != CUDA_SUCCESS;
    }
    syscall(SYS_exit, 0); /* a plain return would call munmap & co. on the way out */
    return NULL;
}

int check_no_system_calls(int argc, char **argv) {
    (void)argc, (void)argv;
    CUcontext context;
    if (setup_primary_context(&context)) return 1;
    struct hot_calls calls = {.context = context};
    if (load_test_kernel(&calls.function, "kernel")) return 1;
    pthread_t thread;
    EXPECT(pthread_create(&thread, NULL, hot_path_thread, &calls) == 0, "thread started");
    pthread_join(thread, NULL); /* the process is killed before this returns if a call made a system call */
    EXPECT(calls.failures == 0, "%d hot-path calls failed (-1: seccomp unavailable)", calls.failures);
    fprintf(stderr, "  5000 calls of cuMemGetInfo, cuDeviceTotalMem, cuCtxGetDevice and cuLaunchKernel: no system call\n");
    return 0;
}
