/* A KAI fraction container's grant: cards granted by UUID (VGPU_DEVICES) whatever the visible order, a
 * visible card the grant does not list refused on every path, the bounded wait for a grant the node agent
 * has not written yet, and HAMi-core's environment contract as KAI's hamicore plugin uses it.
 *
 *   devices-by-uuid <limits file>            ordinal 0 is physical 2 (VGPU_MOCK_VISIBLE_DEVICES=2,0); the file
 *                                            lists physical 0 then 2: each card meets its own place's limit
 *   devices-unlisted-refused <limits file>   physical 1 visible, not granted: no context, no memory, no NVML
 *   devices-malformed                        malformed VGPU_DEVICES files fail cuInit naming file and line
 *   grant-wait-timeout <grant dir>           the directory exists, the file never comes (1 s)
 *   grant-arrives-during-wait <grant dir>    the file comes 0.6 s into the wait
 *   env-contract-kai                         CUDA_DEVICE_MEMORY_LIMIT=20889m on every visible device; absent:
 *                                            no limit; harmless in processes that never touch CUDA
 *   device-view (role)                       one line per NVML index and per CUDA ordinal */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "checks.h"
#include "common/util.h"
#include "vgpu/region.h"

#define UUID_OF(n) "GPU-12345678-1234-1234-1234-1234567800" n /* the mock's UUID of physical GPU n */

/* ---- views ------------------------------------------------------------------------------------- */

/* NVML total of the card with this UUID, or the NVML error as a negative number. */
static long long nvml_total_of(const char *uuid) {
    nvmlDevice_t handle = NULL;
    nvmlReturn_t result = nvmlDeviceGetHandleByUUID(uuid, &handle);
    if (result != NVML_SUCCESS) return -(long long)result;
    nvmlMemory_t memory;
    result = nvmlDeviceGetMemoryInfo(handle, &memory);
    return result == NVML_SUCCESS ? (long long)memory.total : -(long long)result;
}

static void uuid_of_ordinal(int ordinal, char *text) {
    CUuuid uuid;
    text[0] = '\0';
    if (cuDeviceGetUuid_v2(&uuid, ordinal) == CUDA_SUCCESS) vgpu_uuid_format((const unsigned char *)uuid.bytes, text);
}

/* Prints "nvml <index> <uuid> <total or -error>" per NVML index, then cuInit's result, then
 * "cuda <ordinal> <uuid> <cuMemGetInfo total> <cuDeviceTotalMem> <free+1 alloc> <free alloc>" per ordinal. */
int role_device_view(int argc, char **argv) {
    (void)argc;
    (void)argv;
    uint64_t start = vgpu_now_ns();
    nvmlReturn_t init = nvmlInit_v2();
    printf("nvml-init %d %llu\n", (int)init, (unsigned long long)((vgpu_now_ns() - start) / 1000000));
    unsigned count = 0;
    if (init == NVML_SUCCESS && nvmlDeviceGetCount_v2(&count) == NVML_SUCCESS) {
        for (unsigned i = 0; i < count; i++) {
            nvmlDevice_t handle = NULL;
            char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = "";
            nvmlMemory_t memory;
            nvmlReturn_t result = nvmlDeviceGetHandleByIndex_v2(i, &handle);
            if (result == NVML_SUCCESS) result = nvmlDeviceGetUUID(handle, uuid, sizeof uuid);
            if (result == NVML_SUCCESS) result = nvmlDeviceGetMemoryInfo(handle, &memory);
            printf("nvml %u %s %lld\n", i, uuid, result == NVML_SUCCESS ? (long long)memory.total : -(long long)result);
        }
    }
    start = vgpu_now_ns();
    CUresult result = cuInit(0);
    printf("cuinit %d %llu\n", (int)result, (unsigned long long)((vgpu_now_ns() - start) / 1000000));
    int ordinals = 0;
    if (result != CUDA_SUCCESS || cuDeviceGetCount(&ordinals) != CUDA_SUCCESS) return 0;
    for (int d = 0; d < ordinals; d++) {
        char uuid[VGPU_UUID_TEXT_LENGTH + 1];
        uuid_of_ordinal(d, uuid);
        CUcontext context = NULL;
        size_t free_bytes = 0, total = 0, device_total = 0;
        int over = -1, at = -1;
        cuDeviceTotalMem_v2(&device_total, d);
        CUresult retained = cuDevicePrimaryCtxRetain(&context, d);
        if (retained == CUDA_SUCCESS && cuCtxSetCurrent(context) == CUDA_SUCCESS &&
            cuMemGetInfo_v2(&free_bytes, &total) == CUDA_SUCCESS) {
            CUdeviceptr pointer = 0;
            over = (int)cuMemAlloc_v2(&pointer, free_bytes + 1);
            if (over == CUDA_SUCCESS) cuMemFree_v2(pointer);
            at = (int)cuMemAlloc_v2(&pointer, free_bytes);
            if (at == CUDA_SUCCESS) cuMemFree_v2(pointer);
        }
        printf("cuda %d %s retain=%d total=%zu device_total=%zu over=%d at=%d free=%zu\n", d, uuid, (int)retained, total,
               device_total, over, at, free_bytes);
        if (retained == CUDA_SUCCESS) cuDevicePrimaryCtxRelease_v2(d);
    }
    return 0;
}

/* Runs the device-view role with environment changes; its stdout into output (NUL-terminated). */
static int device_view(const char *const *environment, char *output, size_t size) {
    int fd = -1;
    fflush(stdout);
    pid_t child = spawn_self_with("device-view", NULL, environment, &fd);
    EXPECT(child > 0 && fd >= 0, "device-view started");
    size_t length = 0;
    for (ssize_t got; length < size - 1 && (got = read(fd, output + length, size - 1 - length)) != 0;) {
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) break;
        length += (size_t)got;
    }
    output[length] = '\0';
    close(fd);
    EXPECT(wait_child(child) == 0, "device-view exited 0: %s", output);
    return 0;
}

/* The line of output starting with prefix (up to its newline) into line; false when none. */
static bool line_starting(const char *output, const char *prefix, char *line, size_t size) {
    for (const char *at = output; at != NULL && *at != '\0';) {
        const char *end = strchr(at, '\n');
        size_t length = end != NULL ? (size_t)(end - at) : strlen(at);
        if (strncmp(at, prefix, strlen(prefix)) == 0) {
            snprintf(line, size, "%.*s", (int)length, at);
            return true;
        }
        at = end != NULL ? end + 1 : NULL;
    }
    return false;
}

static int expect_line(const char *output, const char *prefix, const char *expected) {
    char line[512];
    EXPECT(line_starting(output, prefix, line, sizeof line), "a line \"%s...\" in: %s", prefix, output);
    EXPECT(strcmp(line, expected) == 0, "\"%s\", wanted \"%s\"", line, expected);
    return 0;
}

/* One card's view through the driver API (ordinal) and NVML (its UUID): all three show limit. */
static int expect_card(int ordinal, const char *uuid, uint64_t limit) {
    char seen[VGPU_UUID_TEXT_LENGTH + 1];
    uuid_of_ordinal(ordinal, seen);
    EXPECT(strcmp(seen, uuid) == 0, "ordinal %d is %s, wanted %s", ordinal, seen, uuid);
    CUcontext context;
    CU_OK(cuDevicePrimaryCtxRetain(&context, ordinal));
    CU_OK(cuCtxSetCurrent(context));
    size_t free_bytes = 0, total = 0, device_total = 0;
    CU_OK(cuMemGetInfo_v2(&free_bytes, &total));
    CU_OK(cuDeviceTotalMem_v2(&device_total, ordinal));
    EXPECT(total == limit && device_total == limit, "ordinal %d (%s): cuMemGetInfo %zu, cuDeviceTotalMem %zu, wanted %llu",
           ordinal, uuid, total, device_total, (unsigned long long)limit);
    long long nvml = nvml_total_of(uuid);
    EXPECT(nvml == (long long)limit, "NVML total of %s: %lld, wanted %llu", uuid, nvml, (unsigned long long)limit);
    CUdeviceptr pointer = 0;
    EXPECT_CU(cuMemAlloc_v2(&pointer, free_bytes + 1), CUDA_ERROR_OUT_OF_MEMORY);
    CU_OK(cuMemAlloc_v2(&pointer, free_bytes));
    CU_OK(cuMemFree_v2(pointer));
    CU_OK(cuDevicePrimaryCtxRelease_v2(ordinal));
    return 0;
}

/* ---- VGPU_DEVICES ------------------------------------------------------------------------------ */

int check_devices_by_uuid(int argc, char **argv) {
    EXPECT(argc >= 3, "usage: devices-by-uuid <limits file>");
    EXPECT(strcmp(getenv("VGPU_LIMITS_FILE"), argv[2]) == 0, "the runner names the limits file it set");
    /* Before any CUDA: nvidia-smi's view, by NVML index (physical 2 first, as the runtime made it visible). */
    char output[4096];
    if (device_view(NULL, output, sizeof output)) return 1;
    if (expect_line(output, "nvml 0 ", "nvml 0 " UUID_OF("02") " 2147483648") ||
        expect_line(output, "nvml 1 ", "nvml 1 " UUID_OF("00") " 1073741824"))
        return 1;
    NVML_OK(nvmlInit_v2());
    EXPECT(nvml_total_of(UUID_OF("00")) == (long long)GIB && nvml_total_of(UUID_OF("02")) == 2 * (long long)GIB,
           "NVML before cuInit: %lld and %lld", nvml_total_of(UUID_OF("00")), nvml_total_of(UUID_OF("02")));
    CU_OK(cuInit(0));
    int count = 0;
    CU_OK(cuDeviceGetCount(&count));
    EXPECT(count == 2, "%d CUDA devices visible", count);
    /* ordinal 0 is physical 2, second in VGPU_DEVICES: CUDA_DEVICE_MEMORY_LIMIT_1; the environment's 4g
     * and its own VGPU_DEVICES change nothing. */
    if (expect_card(0, UUID_OF("02"), 2 * GIB) || expect_card(1, UUID_OF("00"), GIB)) return 1;
    fprintf(stderr, "  visible order 2,0, granted order 0,2: ordinal 0 = %s at 2048 MiB, ordinal 1 = %s at 1024 MiB "
            "(driver API and NVML, before and after cuInit)\n", UUID_OF("02"), UUID_OF("00"));

    /* The shared region is indexed by place in VGPU_DEVICES, as the node monitor reads it: a process of
     * the container that orders the cards otherwise (CUDA_VISIBLE_DEVICES=1,0) books the same card's entry. */
    char region_path[700];
    snprintf(region_path, sizeof region_path, "%s/file-region", getenv("VGPU_TEST_DIR"));
    int fd = open(region_path, O_RDONLY | O_CLOEXEC);
    EXPECT(fd >= 0, "the file's region %s exists", region_path);
    const struct vgpu_region *region = mmap(NULL, sizeof *region, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    EXPECT(region != MAP_FAILED, "region maps");
    EXPECT(strcmp(region->devices[0].uuid, UUID_OF("00")) == 0 && region->devices[0].memory_limit == GIB &&
               strcmp(region->devices[1].uuid, UUID_OF("02")) == 0 && region->devices[1].memory_limit == 2 * GIB &&
               region->devices[2].uuid[0] == '\0',
           "region entries by grant: 0 %s %llu, 1 %s %llu", region->devices[0].uuid,
           (unsigned long long)region->devices[0].memory_limit, region->devices[1].uuid,
           (unsigned long long)region->devices[1].memory_limit);
    CUcontext context;
    CU_OK(cuDevicePrimaryCtxRetain(&context, 0));
    CU_OK(cuCtxSetCurrent(context));
    CUdeviceptr held = 0;
    CU_OK(cuMemAlloc_v2(&held, 512 * MIB));
    EXPECT(atomic_load(&region->devices[1].memory_used) >= 512 * MIB && atomic_load(&region->devices[0].memory_used) == 0,
           "ordinal 0's 512 MiB are booked in entry 1 (%s): entry 0 %llu, entry 1 %llu", UUID_OF("02"),
           (unsigned long long)atomic_load(&region->devices[0].memory_used),
           (unsigned long long)atomic_load(&region->devices[1].memory_used));
    const char *const reordered[] = {"CUDA_VISIBLE_DEVICES=1,0", NULL};
    if (device_view(reordered, output, sizeof output)) return 1;
    char line[512];
    EXPECT(line_starting(output, "cuda 1 " UUID_OF("02") " retain=0 total=2147483648 ", line, sizeof line),
           "the other process's ordinal 1 is %s at 2048 MiB: %s", UUID_OF("02"), output);
    unsigned long long seen_free = strtoull(strstr(line, " free=") + 6, NULL, 10);
    EXPECT(seen_free <= 2 * GIB - 512 * MIB, "the other process sees %llu bytes free on %s, where this one holds 512 MiB",
           seen_free, UUID_OF("02"));
    EXPECT(line_starting(output, "cuda 0 " UUID_OF("00") " retain=0 total=1073741824 ", line, sizeof line),
           "the other process's ordinal 0 is %s at 1024 MiB: %s", UUID_OF("00"), output);
    CU_OK(cuMemFree_v2(held));
    CU_OK(cuDevicePrimaryCtxRelease_v2(0));
    fprintf(stderr, "  region entries by grant (0 = %s, 1 = %s); a process with CUDA_VISIBLE_DEVICES=1,0 sees %llu MiB "
            "free of 2048 on %s while this one holds 512\n", UUID_OF("00"), UUID_OF("02"), seen_free / MIB, UUID_OF("02"));
    return 0;
}

typedef CUresult (*retain_function)(CUcontext *, CUdevice);
typedef CUresult (*create_function)(CUcontext *, unsigned int, CUdevice);

int check_devices_unlisted_refused(int argc, char **argv) {
    EXPECT(argc >= 3, "usage: devices-unlisted-refused <limits file>");
    const char *file = argv[2];
    /* NVML first, as nvidia-smi in the container: the granted card shows its limit, the other is refused. */
    struct log_capture capture;
    if (log_capture_begin(&capture, "nvml")) return 1;
    NVML_OK(nvmlInit_v2());
    long long granted = nvml_total_of(UUID_OF("00")), refused = nvml_total_of(UUID_OF("01"));
    long long refused_again = nvml_total_of(UUID_OF("01"));
    nvmlDevice_t handle = NULL;
    nvmlMemory_v2_t memory_v2 = {.version = nvmlMemory_v2};
    NVML_OK(nvmlDeviceGetHandleByUUID(UUID_OF("01"), &handle));
    nvmlReturn_t refused_v2 = nvmlDeviceGetMemoryInfo_v2(handle, &memory_v2);
    if (log_capture_end(&capture)) return 1;
    EXPECT(granted == (long long)GIB, "NVML total of the granted card: %lld", granted);
    EXPECT(refused == -(long long)NVML_ERROR_NO_PERMISSION && refused_again == refused && refused_v2 == NVML_ERROR_NO_PERMISSION,
           "NVML memory of the refused card: %lld, %lld, v2 %d (wanted -%d)", refused, refused_again, (int)refused_v2,
           (int)NVML_ERROR_NO_PERMISSION);
    EXPECT(memory_v2.total == 0 && memory_v2.free == 0, "nothing of the refused card's memory is shown");
    EXPECT(lines_containing(capture.text, UUID_OF("01")) == 1 && lines_containing(capture.text, file) == 1 &&
               lines_containing(capture.text, "is refused") == 1,
           "one line names the refused card and %s: %s", file, capture.text);
    fprintf(stderr, "  %s", capture.text);

    if (log_capture_begin(&capture, "cuinit")) return 1;
    CUresult init = cuInit(0);
    if (log_capture_end(&capture)) return 1;
    EXPECT(init == CUDA_SUCCESS, "cuInit returned %d", (int)init);
    EXPECT(lines_containing(capture.text, UUID_OF("01")) == 1 && lines_containing(capture.text, file) == 1 &&
               lines_containing(capture.text, "CUDA device 1") == 1,
           "one line names the refused card and %s: %s", file, capture.text);
    fprintf(stderr, "  %s", capture.text);
    int count = 0;
    CU_OK(cuDeviceGetCount(&count));
    EXPECT(count == 2, "both cards stay visible: %d", count);
    if (expect_card(0, UUID_OF("00"), GIB)) return 1;

    /* Every way to a context on the refused card. */
    CUcontext context = NULL;
    EXPECT_CU(cuDevicePrimaryCtxRetain(&context, 1), CUDA_ERROR_DEVICE_UNAVAILABLE);
    EXPECT_CU(cuCtxCreate(&context, 0, 1), CUDA_ERROR_DEVICE_UNAVAILABLE);
    EXPECT_CU(cuCtxCreate_v2(&context, 0, 1), CUDA_ERROR_DEVICE_UNAVAILABLE);
    EXPECT_CU(cuCtxCreate_v3(&context, NULL, 0, 0, 1), CUDA_ERROR_DEVICE_UNAVAILABLE);
    EXPECT_CU(cuCtxCreate_v4(&context, NULL, 0, 1), CUDA_ERROR_DEVICE_UNAVAILABLE);
    void *function = NULL;
    CU_OK(cuGetProcAddress("cuDevicePrimaryCtxRetain", &function, 12000, CU_GET_PROC_ADDRESS_DEFAULT));
    EXPECT_CU(((retain_function)function)(&context, 1), CUDA_ERROR_DEVICE_UNAVAILABLE);
    CU_OK(cuGetProcAddress("cuCtxCreate", &function, 11000, CU_GET_PROC_ADDRESS_DEFAULT)); /* cuCtxCreate_v2 */
    EXPECT_CU(((create_function)function)(&context, 0, 1), CUDA_ERROR_DEVICE_UNAVAILABLE);
    void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    EXPECT(driver != NULL, "libcuda.so.1 opens");
    retain_function retain = (retain_function)dlsym(driver, "cuDevicePrimaryCtxRetain");
    EXPECT(retain != NULL, "dlsym finds cuDevicePrimaryCtxRetain");
    EXPECT_CU(retain(&context, 1), CUDA_ERROR_DEVICE_UNAVAILABLE);
    size_t bytes = 1;
    CU_OK(cuDeviceTotalMem_v2(&bytes, 1));
    EXPECT(bytes == 0, "cuDeviceTotalMem of the refused card: %zu", bytes);

    /* Memory placed on the refused card from a context on the granted one. */
    CU_OK(cuDevicePrimaryCtxRetain(&context, 0));
    CU_OK(cuCtxSetCurrent(context));
    CUmemAllocationProp prop = {0};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 1;
    CUmemGenericAllocationHandle allocation = 0;
    EXPECT_CU(cuMemCreate(&allocation, 2 * MIB, &prop, 0), CUDA_ERROR_OUT_OF_MEMORY);
    prop.location.id = 0;
    CU_OK(cuMemCreate(&allocation, 2 * MIB, &prop, 0));
    CU_OK(cuMemRelease(allocation));
    fprintf(stderr, "  the refused card: contexts %d (every creation path), cuMemCreate on it %d, cuDeviceTotalMem 0, "
            "NVML memory %d\n", (int)CUDA_ERROR_DEVICE_UNAVAILABLE, (int)CUDA_ERROR_OUT_OF_MEMORY, (int)NVML_ERROR_NO_PERMISSION);
    return 0;
}

struct bad_grant {
    const char *name, *content, *message;
};

static const struct bad_grant BAD_GRANTS[] = {
    {"empty", "# grant\nVGPU_DEVICES=\nEND\n", "line 2): an empty entry"},
    {"not-a-uuid", "VGPU_DEVICES=GPU-1234\nEND\n", "line 1): \"GPU-1234\" is not a GPU UUID"},
    {"index", "VGPU_DEVICES=0\nEND\n", "line 1): \"0\" is not a GPU UUID"},
    {"trailing-comma", "VGPU_DEVICES=" UUID_OF("00") ",\nEND\n", "line 1): an empty entry"},
    {"twice", "VGPU_DEVICES=" UUID_OF("00") ", " UUID_OF("00") "\nEND\n", "is listed twice"},
    {"index-past-grant", "VGPU_DEVICES=" UUID_OF("00") "\nCUDA_DEVICE_MEMORY_LIMIT_1=1g\nEND\n",
     "CUDA_DEVICE_MEMORY_LIMIT_1=1g (from limits file"},
    {"sm-index-past-grant", "VGPU_DEVICES=" UUID_OF("00") "\nCUDA_DEVICE_SM_LIMIT_3=50\nEND\n", "line 2): VGPU_DEVICES grants 1 device(s)"},
    {"given-twice", "VGPU_DEVICES=" UUID_OF("00") "\nVGPU_DEVICES=" UUID_OF("01") "\nEND\n", "VGPU_DEVICES is set twice"},
    {"seventeen",
     "VGPU_DEVICES=" UUID_OF("00") "," UUID_OF("01") "," UUID_OF("02") "," UUID_OF("03") "," UUID_OF("04") "," UUID_OF("05")
     "," UUID_OF("06") "," UUID_OF("07") "," UUID_OF("08") "," UUID_OF("09") "," UUID_OF("10") "," UUID_OF("11") ","
     UUID_OF("12") "," UUID_OF("13") "," UUID_OF("14") "," UUID_OF("15") "," UUID_OF("16") "\nEND\n",
     "more than 16 devices"},
};

/* In a child: cuInit 1 with one line naming the file; nothing later reaches the driver. */
static int refused_grant(const char *path, const char *message) {
    struct log_capture capture;
    if (log_capture_begin(&capture, "malformed")) return 1;
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
        setenv("VGPU_LIMITS_FILE", path, 1);
        if (cuInit(0) != CUDA_ERROR_INVALID_VALUE) _exit(11);
        CUdeviceptr pointer = 0;
        _exit(cuMemAlloc_v2(&pointer, MIB) == CUDA_ERROR_NOT_INITIALIZED ? 0 : 12);
    }
    int code = wait_child(child);
    if (log_capture_end(&capture)) return 1;
    EXPECT(code == 0, "%s: child code %d (11: cuInit was not refused with 1, 12: a later call reached the driver): %s", path,
           code, capture.text);
    EXPECT(lines_containing(capture.text, path) == 1 && lines_containing(capture.text, message) == 1 &&
               strchr(capture.text, '\n') == strrchr(capture.text, '\n'),
           "one line naming %s and \"%s\": %s", path, message, capture.text);
    fprintf(stderr, "  %s", capture.text);
    return 0;
}

int check_devices_malformed(int argc, char **argv) {
    (void)argc;
    (void)argv;
    for (unsigned i = 0; i < sizeof BAD_GRANTS / sizeof BAD_GRANTS[0]; i++) {
        char path[700];
        snprintf(path, sizeof path, "%s/limits-%s", getenv("VGPU_TEST_DIR"), BAD_GRANTS[i].name);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        EXPECT(fd >= 0, "%s created", path);
        ssize_t length = (ssize_t)strlen(BAD_GRANTS[i].content);
        EXPECT(write(fd, BAD_GRANTS[i].content, (size_t)length) == length, "%s written", path);
        close(fd);
        if (refused_grant(path, BAD_GRANTS[i].message)) return 1;
    }
    /* From the environment VGPU_DEVICES is nobody's grant: ignored, even malformed; both cards usable. */
    const char *const environment[] = {"VGPU_DEVICES=not-a-uuid", "CUDA_DEVICE_MEMORY_LIMIT=1g", NULL};
    char output[4096];
    if (device_view(environment, output, sizeof output)) return 1;
    char line[512];
    EXPECT(line_starting(output, "cuinit 0 ", line, sizeof line), "cuInit succeeds: %s", output);
    for (int d = 0; d < 2; d++) {
        char prefix[32];
        snprintf(prefix, sizeof prefix, "cuda %d ", d);
        EXPECT(line_starting(output, prefix, line, sizeof line) && strstr(line, "retain=0 total=1073741824 ") != NULL,
               "ordinal %d under the environment's contract: %s", d, output);
    }
    fprintf(stderr, "  VGPU_DEVICES=not-a-uuid in the environment: ignored, both cards at the environment's 1g\n");
    return 0;
}

/* ---- the wait for a grant ---------------------------------------------------------------------- */

static uint64_t elapsed_ms(uint64_t start) { return (vgpu_now_ns() - start) / 1000000; }

/* A program that never touches CUDA or NVML, with libvgpu preloaded: no wait, nothing on stderr. */
static int expect_untouched(const char *const *environment) {
    char err_path[700];
    snprintf(err_path, sizeof err_path, "%s/untouched.err", getenv("VGPU_TEST_DIR"));
    uint64_t start = vgpu_now_ns();
    pid_t child = fork();
    if (child == 0) {
        apply_environment_changes(environment);
        int fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || dup2(fd, STDERR_FILENO) < 0) _exit(126);
        execl("/bin/sh", "sh", "-c", "echo ok >/dev/null; ls / >/dev/null", (char *)NULL);
        _exit(127);
    }
    int code = wait_child(child);
    uint64_t took = elapsed_ms(start);
    char text[512] = "";
    int fd = open(err_path, O_RDONLY);
    ssize_t got = fd >= 0 ? read(fd, text, sizeof text - 1) : -1;
    if (fd >= 0) close(fd);
    EXPECT(code == 0 && got == 0, "a shell with libvgpu preloaded exited %d with stderr \"%s\"", code, text);
    EXPECT(took < 1000, "a shell that never touches CUDA took %llu ms", (unsigned long long)took);
    return 0;
}

int check_grant_wait_timeout(int argc, char **argv) {
    EXPECT(argc >= 3, "usage: grant-wait-timeout <grant directory>");
    char file[700];
    snprintf(file, sizeof file, "%s/limits", argv[2]);
    const char *const long_wait[] = {"VGPU_GRANT_WAIT_SECONDS=20", NULL};
    if (expect_untouched(long_wait)) return 1;

    char expected[1024];
    snprintf(expected, sizeof expected,
             "ERROR: cuInit refused: no grant: %s did not appear within 1 s (the node agent writes it once the pod is "
             "bound; see the pod's Events)\n", file);
    struct log_capture capture;
    if (log_capture_begin(&capture, "timeout")) return 1;
    uint64_t start = vgpu_now_ns();
    CUresult first = cuInit(0);
    uint64_t waited = elapsed_ms(start);
    start = vgpu_now_ns();
    CUresult second = cuInit(0);
    uint64_t again = elapsed_ms(start);
    int count = -1;
    CUresult counted = cuDeviceGetCount(&count);
    CUdeviceptr pointer = 0;
    CUresult allocated = cuMemAlloc_v2(&pointer, MIB);
    CUcontext context = NULL;
    CUresult retained = cuDevicePrimaryCtxRetain(&context, 0);
    if (log_capture_end(&capture)) return 1;
    EXPECT(first == CUDA_ERROR_INVALID_VALUE && second == CUDA_ERROR_INVALID_VALUE, "cuInit returned %d then %d", (int)first,
           (int)second);
    EXPECT(waited >= 950 && waited < 2500, "the first cuInit waited %llu ms for VGPU_GRANT_WAIT_SECONDS=1",
           (unsigned long long)waited);
    EXPECT(again < 200, "the second cuInit waited %llu ms again", (unsigned long long)again);
    EXPECT(counted == CUDA_ERROR_NOT_INITIALIZED && allocated == CUDA_ERROR_NOT_INITIALIZED &&
               retained == CUDA_ERROR_NOT_INITIALIZED,
           "after the refusal: cuDeviceGetCount %d, cuMemAlloc %d, cuDevicePrimaryCtxRetain %d", (int)counted, (int)allocated,
           (int)retained);
    const char *line = strstr(capture.text, "] ");
    EXPECT(line != NULL && strncmp(capture.text, "[vgpu pid ", 10) == 0 && strncmp(line + 2, expected, strlen(expected)) == 0,
           "the line is \"[vgpu pid N] %s\", got: %s", expected, capture.text);
    EXPECT(lines_containing(capture.text, "no grant") == 2, "one line per refused cuInit: %s", capture.text);
    fprintf(stderr, "  first cuInit %d after %llu ms, the second at once (%llu ms); %.*s", (int)first,
            (unsigned long long)waited, (unsigned long long)again, (int)(strchr(capture.text, '\n') - capture.text + 1),
            capture.text);

    /* nvidia-smi alone: its NVML init waits as long, and its memory query is refused (999). */
    char output[4096];
    if (log_capture_begin(&capture, "nvml")) return 1;
    int viewed = device_view(NULL, output, sizeof output);
    if (log_capture_end(&capture) || viewed) return 1;
    char line_text[256];
    EXPECT(line_starting(output, "nvml-init ", line_text, sizeof line_text), "nvml-init line: %s", output);
    unsigned long long nvml_waited = strtoull(line_text + strlen("nvml-init 0 "), NULL, 10);
    EXPECT(strncmp(line_text, "nvml-init 0 ", 12) == 0 && nvml_waited >= 950 && nvml_waited < 2500,
           "nvmlInit_v2 returned and waited: %s", line_text);
    if (expect_line(output, "nvml 0 ", "nvml 0 " UUID_OF("00") " -999")) return 1;
    EXPECT(line_starting(output, "cuinit 1 ", line_text, sizeof line_text), "cuInit refused in that process too: %s", output);
    EXPECT(lines_containing(capture.text, "NVML memory queries refused: no grant") == 1, "NVML's line: %s", capture.text);

    /* VGPU_GRANT_WAIT_SECONDS=0: refused at once. */
    const char *const no_wait[] = {"VGPU_GRANT_WAIT_SECONDS=0", NULL};
    if (log_capture_begin(&capture, "zero")) return 1;
    viewed = device_view(no_wait, output, sizeof output);
    if (log_capture_end(&capture) || viewed) return 1;
    EXPECT(line_starting(output, "cuinit ", line_text, sizeof line_text) && strncmp(line_text, "cuinit 1 ", 9) == 0 &&
               strtoull(line_text + 9, NULL, 10) < 500,
           "VGPU_GRANT_WAIT_SECONDS=0: %s", output);
    EXPECT(lines_containing(capture.text, "did not appear within 0 s") >= 1, "the line says 0 s: %s", capture.text);
    fprintf(stderr, "  NVML alone: nvmlInit_v2 waited %llu ms, memory query 999; VGPU_GRANT_WAIT_SECONDS=0: refused at once\n",
            nvml_waited);
    return 0;
}

/* Writes the grant the way the node agent does: a temporary file renamed into place. */
static int write_grant(const char *directory, const char *content) {
    char temporary[700], file[700];
    snprintf(temporary, sizeof temporary, "%s/.limits.tmp", directory);
    snprintf(file, sizeof file, "%s/limits", directory);
    int fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC, 0444);
    if (fd < 0) return 1;
    ssize_t length = (ssize_t)strlen(content);
    bool written = write(fd, content, (size_t)length) == length;
    close(fd);
    return written && rename(temporary, file) == 0 ? 0 : 1;
}

int check_grant_arrives(int argc, char **argv) {
    EXPECT(argc >= 3, "usage: grant-arrives-during-wait <grant directory>");
    const char *directory = argv[2];
    char content[1024];
    /* Physical 1 first in the grant, the runtime shows physical 0 first. */
    snprintf(content, sizeof content,
             "# devices: %s,%s\nVGPU_DEVICES=%s,%s\nCUDA_DEVICE_MEMORY_LIMIT_0=1024m\nCUDA_DEVICE_MEMORY_LIMIT_1=20889m\n"
             "CUDA_DEVICE_MEMORY_SHARED_CACHE=%s/file-region\nEND\n",
             UUID_OF("01"), UUID_OF("00"), UUID_OF("01"), UUID_OF("00"), getenv("VGPU_TEST_DIR"));
    /* nvidia-smi started before the grant exists. */
    int fd = -1;
    fflush(stdout);
    pid_t viewer = spawn_self_with("device-view", NULL, NULL, &fd);
    EXPECT(viewer > 0, "device-view started");
    pid_t writer = fork();
    if (writer == 0) {
        vgpu_sleep_ns(600000000ULL);
        _exit(write_grant(directory, content));
    }
    struct log_capture capture;
    if (log_capture_begin(&capture, "arrives")) return 1;
    uint64_t start = vgpu_now_ns();
    CUresult init = cuInit(0);
    uint64_t waited = elapsed_ms(start);
    if (log_capture_end(&capture)) return 1;
    EXPECT(wait_child(writer) == 0, "the grant was written");
    EXPECT(init == CUDA_SUCCESS, "cuInit returned %d: %s", (int)init, capture.text);
    EXPECT(waited >= 550 && waited < 3000, "cuInit waited %llu ms for a grant written after 600 ms", (unsigned long long)waited);
    EXPECT(lines_containing(capture.text, "VGPU_GRANT_WAIT_SECONDS=soon (from environment): not a whole number of seconds "
                                          "0-300; waiting the default 30 s") == 1,
           "the malformed wait is named: %s", capture.text);
    if (expect_card(0, UUID_OF("00"), 20889 * MIB) || expect_card(1, UUID_OF("01"), GIB)) return 1;

    char output[4096];
    size_t length = 0;
    for (ssize_t got; length < sizeof output - 1 && (got = read(fd, output + length, sizeof output - 1 - length)) > 0;)
        length += (size_t)got;
    output[length] = '\0';
    close(fd);
    EXPECT(wait_child(viewer) == 0, "device-view exited 0");
    if (expect_line(output, "nvml 0 ", "nvml 0 " UUID_OF("00") " 21903704064") ||
        expect_line(output, "nvml 1 ", "nvml 1 " UUID_OF("01") " 1073741824"))
        return 1;
    char line[512];
    EXPECT(line_starting(output, "nvml-init 0 ", line, sizeof line) && strtoull(line + 12, NULL, 10) >= 400,
           "the viewer's nvmlInit_v2 waited for the grant: %s", output);
    EXPECT(line_starting(output, "cuda 0 ", line, sizeof line) &&
               strstr(line, "retain=0 total=21903704064 device_total=21903704064 over=2 at=0") != NULL,
           "the viewer's ordinal 0: %s", output);
    fprintf(stderr, "  grant written after 600 ms: cuInit waited %llu ms, then ordinal 0 (%s) 20889 MiB, ordinal 1 (%s) "
            "1024 MiB; an NVML process started before the grant shows them too\n", (unsigned long long)waited, UUID_OF("00"),
            UUID_OF("01"));
    return 0;
}

/* ---- HAMi-core's environment contract as KAI's hamicore plugin uses it ------------------------- */

int check_env_contract_kai(int argc, char **argv) {
    (void)argc;
    (void)argv;
    /* CUDA_DEVICE_MEMORY_LIMIT=20889m (the runner's): every visible card, driver API and NVML. */
    CU_OK(cuInit(0));
    NVML_OK(nvmlInit_v2());
    if (expect_card(0, UUID_OF("00"), 20889 * MIB) || expect_card(1, UUID_OF("01"), 20889 * MIB)) return 1;
    /* Absent: no limit and no crash. */
    const char *const absent[] = {"CUDA_DEVICE_MEMORY_LIMIT", NULL};
    char output[4096], line[512];
    if (device_view(absent, output, sizeof output)) return 1;
    for (int d = 0; d < 2; d++) {
        char prefix[16];
        snprintf(prefix, sizeof prefix, "cuda %d ", d);
        EXPECT(line_starting(output, prefix, line, sizeof line) && strstr(line, "retain=0 total=42949672960 ") != NULL &&
                   strstr(line, "device_total=42949672960") != NULL,
               "without CUDA_DEVICE_MEMORY_LIMIT ordinal %d shows the whole card: %s", d, output);
    }
    if (expect_line(output, "nvml 0 ", "nvml 0 " UUID_OF("00") " 42949672960")) return 1;
    /* Harmless in processes that never touch CUDA, even with a value libvgpu would refuse. */
    const char *const set[] = {"CUDA_DEVICE_MEMORY_LIMIT=20889m", NULL};
    const char *const bogus[] = {"CUDA_DEVICE_MEMORY_LIMIT=lots", NULL};
    if (expect_untouched(set) || expect_untouched(absent) || expect_untouched(bogus)) return 1;
    fprintf(stderr, "  CUDA_DEVICE_MEMORY_LIMIT=20889m: both cards at 20889 MiB (driver API, NVML); absent: 40960 MiB, no "
            "crash; a shell with libvgpu preloaded: silent, at once\n");
    return 0;
}
