/* The mock libnvidia-ml.so.1 on its own: identity from the profiles, live memory and processes from
 * the mock driver, utilization from the virtual clock, topology, NVLink, Xid events and failures. */
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "checks.h"
#include "common/util.h"
#include "mock/reference_kernels.h"

nvmlReturn_t vgpuMockSetDeviceLost(unsigned int physicalIndex, int lost);
nvmlReturn_t vgpuMockRaiseXid(unsigned int physicalIndex, unsigned long long xid);

static int handle_of(unsigned index, nvmlDevice_t *device) {
    NVML_OK(nvmlDeviceGetHandleByIndex_v2(index, device));
    return 0;
}

#define EXPECT_STRING(call, buffer, wanted)                                                     \
    do {                                                                                        \
        NVML_OK(call);                                                                          \
        EXPECT(strcmp(buffer, wanted) == 0, "%s gave \"%s\", wanted \"%s\"", #call, buffer, wanted); \
    } while (0)

/* Runs with the device-list file the runner writes (see run-conformance.sh). */
int check_nvml_identity(int argc, char **argv) {
    (void)argc, (void)argv;
    NVML_OK(nvmlInit_v2());
    unsigned count = 0;
    NVML_OK(nvmlDeviceGetCount_v2(&count));
    EXPECT(count == 4, "device count %u", count);
    nvmlDevice_t h100, t4, a100, lost, found;
    if (handle_of(0, &h100) || handle_of(1, &t4) || handle_of(2, &a100) || handle_of(3, &lost)) return 1;
    char text[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    EXPECT_STRING(nvmlDeviceGetName(h100, text, sizeof text), text, "NVIDIA H100 80GB HBM3");
    EXPECT_STRING(nvmlDeviceGetUUID(h100, text, sizeof text), text, "GPU-aaaaaaaa-bbbb-cccc-dddd-000000000001");
    EXPECT_STRING(nvmlDeviceGetUUID(t4, text, sizeof text), text, "GPU-12345678-1234-1234-1234-123456780001");
    EXPECT_STRING(nvmlDeviceGetName(t4, text, sizeof text), text, "Tesla T4");
    EXPECT_NVML(nvmlDeviceGetName(h100, text, 5), NVML_ERROR_INSUFFICIENT_SIZE);
    nvmlPciInfo_t pci;
    NVML_OK(nvmlDeviceGetPciInfo_v3(h100, &pci));
    EXPECT(strcmp(pci.busId, "00000000:1B:00.0") == 0 && strcmp(pci.busIdLegacy, "0000:1B:00.0") == 0 && pci.bus == 0x1b &&
               pci.pciDeviceId == 0x233010DEu,
           "pci %s / %s bus %x id %x", pci.busId, pci.busIdLegacy, pci.bus, pci.pciDeviceId);
    NVML_OK(nvmlDeviceGetPciInfo_v3(a100, &pci));
    EXPECT(strcmp(pci.busId, "00000000:17:00.0") == 0, "default bus id of device 2: %s", pci.busId);
    NVML_OK(nvmlDeviceGetHandleByUUID("GPU-aaaaaaaa-bbbb-cccc-dddd-000000000001", &found));
    EXPECT(found == h100, "handle by UUID");
    NVML_OK(nvmlDeviceGetHandleByPciBusId_v2("0000:3d:00.0", &found));
    EXPECT(found == t4, "handle by legacy PCI bus id");
    NVML_OK(nvmlDeviceGetHandleByPciBusId_v2("00000000:1B:00.0", &found));
    EXPECT(found == h100, "handle by PCI bus id");
    EXPECT_NVML(nvmlDeviceGetHandleByUUID("GPU-00000000-0000-0000-0000-000000000000", &found), NVML_ERROR_NOT_FOUND);
    unsigned value = 0, pending = 0;
    int major = 0, minor = 0;
    NVML_OK(nvmlDeviceGetNumaNodeId(t4, &value));
    EXPECT(value == 1, "numa of T4 %u", value);
    NVML_OK(nvmlDeviceGetCudaComputeCapability(t4, &major, &minor));
    EXPECT(major == 7 && minor == 5, "T4 compute capability %d.%d", major, minor);
    NVML_OK(nvmlDeviceGetMigMode(h100, &value, &pending));
    EXPECT(value == NVML_DEVICE_MIG_ENABLE && pending == NVML_DEVICE_MIG_ENABLE, "H100 MIG mode %u", value);
    EXPECT_NVML(nvmlDeviceGetMigMode(t4, &value, &pending), NVML_ERROR_NOT_SUPPORTED);
    nvmlDeviceAttributes_t attributes;
    NVML_OK(nvmlDeviceGetAttributes_v2(h100, &attributes));
    EXPECT(attributes.multiprocessorCount == 132 && attributes.memorySizeMB == 81559, "H100 attributes %u SMs %llu MiB",
           attributes.multiprocessorCount, attributes.memorySizeMB);
    nvmlMemory_t memory;
    NVML_OK(nvmlDeviceGetMemoryInfo(h100, &memory));
    EXPECT(memory.total == 81559 * MIB, "H100 total %llu", memory.total);
    NVML_OK(nvmlDeviceGetIndex(a100, &value));
    EXPECT(value == 2, "index %u", value);
    nvmlBrandType_t brand;
    NVML_OK(nvmlDeviceGetBrand(t4, &brand));
    EXPECT(brand == NVML_BRAND_TESLA, "brand %d", (int)brand);
    nvmlGpuTopologyLevel_t level;
    NVML_OK(nvmlDeviceGetTopologyCommonAncestor(h100, t4, &level));
    EXPECT(level == NVML_TOPOLOGY_SYSTEM, "H100-T4 (NUMA 0 and 1): %d", (int)level);
    NVML_OK(nvmlDeviceGetTopologyCommonAncestor(t4, a100, &level));
    EXPECT(level == NVML_TOPOLOGY_NODE, "T4-A100 (both NUMA 1): %d", (int)level);
    NVML_OK(nvmlDeviceGetTopologyCommonAncestor(h100, h100, &level));
    EXPECT(level == NVML_TOPOLOGY_INTERNAL, "a device with itself: %d", (int)level);
    nvmlEnableState_t state;
    NVML_OK(nvmlDeviceGetNvLinkState(h100, 17, &state));
    EXPECT(state == NVML_FEATURE_ENABLED, "H100 link 17");
    NVML_OK(nvmlDeviceGetNvLinkVersion(h100, 0, &value));
    EXPECT(value == 4, "H100 NVLink version %u", value);
    NVML_OK(nvmlDeviceGetNvLinkState(a100, 3, &state));
    EXPECT_NVML(nvmlDeviceGetNvLinkState(a100, 4, &state), NVML_ERROR_INVALID_ARGUMENT); /* nvlinks=4 */
    EXPECT_NVML(nvmlDeviceGetNvLinkState(t4, 0, &state), NVML_ERROR_NOT_SUPPORTED);
    /* health=lost: identity answers, state queries do not. */
    EXPECT_STRING(nvmlDeviceGetName(lost, text, sizeof text), text, "NVIDIA L4");
    EXPECT_NVML(nvmlDeviceGetMemoryInfo(lost, &memory), NVML_ERROR_GPU_IS_LOST);

    /* The CUDA view of the same machine agrees. */
    CU_OK(cuInit(0));
    int cuda_count = 0, attribute = 0;
    CU_OK(cuDeviceGetCount(&cuda_count));
    EXPECT(cuda_count == 4, "CUDA count %d", cuda_count);
    CU_OK(cuDeviceGetName(text, sizeof text, 0));
    EXPECT(strcmp(text, "NVIDIA H100 80GB HBM3") == 0, "CUDA name %s", text);
    CU_OK(cuDeviceGetPCIBusId(text, sizeof text, 1));
    EXPECT(strcmp(text, "0000:3d:00.0") == 0, "CUDA bus id %s", text);
    CU_OK(cuDeviceGetAttribute(&attribute, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0));
    EXPECT(attribute == 132, "SMs %d", attribute);
    CU_OK(cuDeviceGetAttribute(&attribute, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, 1));
    EXPECT(attribute == 1024, "T4 threads per SM %d", attribute);
    CU_OK(cuDeviceGetAttribute(&attribute, CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID, 1));
    EXPECT(attribute == 1, "T4 host NUMA id %d", attribute);
    CUuuid uuid;
    CU_OK(cuDeviceGetUuid_v2(&uuid, 0));
    char formatted[VGPU_UUID_TEXT_LENGTH + 1];
    vgpu_uuid_format((const unsigned char *)uuid.bytes, formatted);
    EXPECT(strcmp(formatted, "GPU-aaaaaaaa-bbbb-cccc-dddd-000000000001") == 0, "CUDA uuid %s", formatted);
    CUcontext context;
    EXPECT_CU(cuDevicePrimaryCtxRetain(&context, 3), CUDA_ERROR_DEVICE_UNAVAILABLE);
    return 0;
}

/* One child per profile of profiles.csv (argv[2]): NVML and CUDA report what the CSV says. */
static int profile_matches(const char *key, const char *name, unsigned long long mib, int major, int minor, int sms,
                           int threads, unsigned pci_id) {
    setenv("VGPU_MOCK_CONFIG", key, 1);
    NVML_OK(nvmlInit_v2());
    nvmlDevice_t device;
    if (handle_of(0, &device)) return 1;
    char text[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
    NVML_OK(nvmlDeviceGetName(device, text, sizeof text));
    nvmlMemory_t memory;
    NVML_OK(nvmlDeviceGetMemoryInfo(device, &memory));
    int cc_major = 0, cc_minor = 0, cuda_sms = 0, cuda_threads = 0;
    NVML_OK(nvmlDeviceGetCudaComputeCapability(device, &cc_major, &cc_minor));
    nvmlPciInfo_t pci;
    NVML_OK(nvmlDeviceGetPciInfo_v3(device, &pci));
    CU_OK(cuInit(0));
    CU_OK(cuDeviceGetAttribute(&cuda_sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0));
    CU_OK(cuDeviceGetAttribute(&cuda_threads, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, 0));
    size_t total = 0;
    CU_OK(cuDeviceTotalMem_v2(&total, 0));
    EXPECT(strcmp(text, name) == 0 && memory.total == mib * MIB && total == mib * MIB && cc_major == major &&
               cc_minor == minor && cuda_sms == sms && cuda_threads == threads && pci.pciDeviceId == pci_id,
           "%s: name \"%s\" memory %llu/%zu cc %d.%d SMs %d threads %d pci %x", key, text, memory.total, total, cc_major,
           cc_minor, cuda_sms, cuda_threads, pci.pciDeviceId);
    return 0;
}

int check_profiles_match_csv(int argc, char **argv) {
    EXPECT(argc >= 3, "path of profiles.csv");
    FILE *csv = fopen(argv[2], "r");
    EXPECT(csv != NULL, "cannot read %s", argv[2]);
    char line[512];
    int profiles = 0;
    bool header = false;
    while (fgets(line, sizeof line, csv) != NULL) {
        if (line[0] == '#' || line[0] == '\n') continue;
        if (!header) {
            header = true;
            continue;
        }
        char key[64], name[128], architecture[32];
        unsigned long long mib = 0;
        int major = 0, minor = 0, sms = 0, threads = 0;
        unsigned pci_id = 0;
        EXPECT(sscanf(line, "%63[^,],%127[^,],%llu,%d.%d,%d,%d,%31[^,],%x", key, name, &mib, &major, &minor, &sms, &threads,
                      architecture, &pci_id) == 9,
               "unreadable row %s", line);
        pid_t child = fork();
        if (child == 0) _exit(profile_matches(key, name, mib, major, minor, sms, threads, pci_id));
        EXPECT(wait_child(child) == 0, "profile %s differs from the CSV", key);
        profiles++;
    }
    fclose(csv);
    EXPECT(profiles >= 7, "only %d profiles checked", profiles);
    fprintf(stderr, "  %d profiles agree with profiles.csv\n", profiles);
    return 0;
}

/* ---- live memory and processes ------------------------------------------------------------- */

int role_process_holder(int argc, char **argv) {
    (void)argc, (void)argv;
    CUcontext context;
    if (setup_primary_context(&context)) return 1;
    CUdeviceptr pointer = 0;
    CU_OK(cuMemAlloc_v2(&pointer, 256 * MIB));
    char marker[600];
    snprintf(marker, sizeof marker, "%s/holder.ready", getenv("VGPU_TEST_DIR"));
    close(open(marker, O_WRONLY | O_CREAT, 0644));
    for (;;) pause();
}

int check_nvml_memory_and_processes(int argc, char **argv) {
    (void)argc, (void)argv;
    uint64_t context_bytes = env_bytes("VGPU_MOCK_CONTEXT_MIB") * MIB;
    NVML_OK(nvmlInit_v2());
    nvmlDevice_t device;
    if (handle_of(0, &device)) return 1;
    nvmlMemory_t memory;
    NVML_OK(nvmlDeviceGetMemoryInfo(device, &memory));
    EXPECT(memory.used == 0, "idle device uses %llu", memory.used);
    unsigned count = 0;
    NVML_OK(nvmlDeviceGetComputeRunningProcesses_v3(device, &count, NULL));
    EXPECT(count == 0, "idle device runs %u processes", count);

    char marker[600];
    snprintf(marker, sizeof marker, "%s/holder.ready", getenv("VGPU_TEST_DIR"));
    unlink(marker);
    pid_t holder = spawn_self("process-holder", NULL);
    uint64_t deadline = vgpu_now_ns() + 10000000000ULL;
    while (access(marker, F_OK) != 0 && vgpu_now_ns() < deadline) vgpu_sleep_ns(10000000);
    uint64_t held = context_bytes + 256 * MIB;
    NVML_OK(nvmlDeviceGetMemoryInfo(device, &memory));
    EXPECT(memory.used == held, "used %llu while the holder runs, wanted %llu", memory.used, (unsigned long long)held);
    nvmlMemory_t second = {0};
    nvmlMemory_v2_t v2 = {.version = nvmlMemory_v2};
    NVML_OK(nvmlDeviceGetMemoryInfo_v2(device, &v2));
    EXPECT(v2.used == held && v2.total == v2.free + v2.used + v2.reserved, "v2 used %llu", v2.used);
    v2.version = 1;
    EXPECT_NVML(nvmlDeviceGetMemoryInfo_v2(device, &v2), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);

    /* Three layouts: v1 entries are 16 bytes, v2/v3 24; the count protocol reports the need first. */
    count = 0;
    EXPECT_NVML(nvmlDeviceGetComputeRunningProcesses_v3(device, &count, NULL), NVML_ERROR_INSUFFICIENT_SIZE);
    EXPECT(count == 1, "process count %u", count);
    nvmlProcessInfo_v1_t v1_entries[3];
    memset(v1_entries, 0xaa, sizeof v1_entries);
    count = 3;
    NVML_OK(nvmlDeviceGetComputeRunningProcesses(device, &count, v1_entries));
    EXPECT(count == 1 && v1_entries[0].pid == (unsigned)holder && v1_entries[0].usedGpuMemory == held,
           "v1: %u entries, pid %u (holder %d), used %llu", count, v1_entries[0].pid, (int)holder, v1_entries[0].usedGpuMemory);
    EXPECT(v1_entries[1].pid == 0xaaaaaaaau, "v1 wrote past its first 16-byte entry");
    nvmlProcessInfo_v2_t v2_entries[2];
    count = 2;
    NVML_OK(nvmlDeviceGetComputeRunningProcesses_v2(device, &count, v2_entries));
    EXPECT(count == 1 && v2_entries[0].pid == (unsigned)holder && v2_entries[0].usedGpuMemory == held &&
               v2_entries[0].gpuInstanceId == 0xffffffffu && v2_entries[0].computeInstanceId == 0xffffffffu,
           "v2 entry pid %u used %llu gi %u", v2_entries[0].pid, v2_entries[0].usedGpuMemory, v2_entries[0].gpuInstanceId);
    nvmlProcessInfo_t v3_entries[2];
    count = 2;
    NVML_OK(nvmlDeviceGetComputeRunningProcesses_v3(device, &count, v3_entries));
    EXPECT(count == 1 && v3_entries[0].pid == (unsigned)holder && v3_entries[0].usedGpuMemory == held, "v3 entry");

    kill(holder, SIGKILL);
    wait_child(holder);
    NVML_OK(nvmlDeviceGetMemoryInfo(device, &second));
    EXPECT(second.used == 0, "a killed process's memory is freed: used %llu", second.used);
    count = 2;
    NVML_OK(nvmlDeviceGetComputeRunningProcesses_v3(device, &count, v3_entries));
    EXPECT(count == 0, "the killed process is gone from the list (%u left)", count);
    return 0;
}

/* ---- utilization from the virtual clock ---------------------------------------------------- */

/* Books 500 ms of device time at once (kernels queue back to back) and records when. */
int role_busy_half_second(int argc, char **argv) {
    (void)argc, (void)argv;
    CUcontext context;
    if (setup_primary_context(&context)) return 1;
    CUfunction spin;
    if (load_reference_kernel(&spin, MOCK_SPIN_KERNEL)) return 1;
    uint64_t start = vgpu_now_ns();
    for (int i = 0; i < 5000; i++) CU_OK(launch_spin(spin, 100000ULL, 1, NULL)); /* 100 us each */
    char path[600], text[64];
    snprintf(path, sizeof path, "%s/busy.start", getenv("VGPU_TEST_DIR"));
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int length = snprintf(text, sizeof text, "%llu\n", (unsigned long long)start);
    EXPECT(fd >= 0 && write(fd, text, (size_t)length) == length, "start recorded");
    close(fd);
    CU_OK(cuCtxSynchronize());
    for (;;) pause();
}

int check_nvml_utilization(int argc, char **argv) {
    (void)argc, (void)argv;
    NVML_OK(nvmlInit_v2());
    nvmlDevice_t device;
    if (handle_of(0, &device)) return 1;
    char path[600];
    snprintf(path, sizeof path, "%s/busy.start", getenv("VGPU_TEST_DIR"));
    unlink(path);
    pid_t busy = spawn_self("busy-half-second", NULL);
    unsigned long long start = 0;
    uint64_t deadline = vgpu_now_ns() + 10000000000ULL;
    while (vgpu_now_ns() < deadline) {
        FILE *file = fopen(path, "r");
        bool read_it = file != NULL && fscanf(file, "%llu", &start) == 1;
        if (file != NULL) fclose(file);
        if (read_it) break;
        vgpu_sleep_ns(5000000);
    }
    EXPECT(start != 0, "the busy process started");
    uint64_t wall_at_start_us = (vgpu_wall_ns() - (vgpu_now_ns() - start)) / 1000;
    vgpu_sleep_until_ns(start + 1000000000ULL); /* the last second holds exactly the 500 ms */
    nvmlUtilization_t utilization;
    NVML_OK(nvmlDeviceGetUtilizationRates(device, &utilization));
    nvmlProcessUtilizationSample_t samples[4];
    unsigned count = 4;
    NVML_OK(nvmlDeviceGetProcessUtilization(device, samples, &count, wall_at_start_us));
    kill(busy, SIGKILL);
    wait_child(busy);
    EXPECT(utilization.gpu >= 48 && utilization.gpu <= 52, "device utilization %u%%, wanted 50", utilization.gpu);
    EXPECT(count == 1 && samples[0].pid == (unsigned)busy && samples[0].smUtil >= 48 && samples[0].smUtil <= 52,
           "%u samples; pid %u smUtil %u%%, wanted pid %d at 50", count, samples[0].pid, samples[0].smUtil, (int)busy);
    count = 4;
    EXPECT_NVML(nvmlDeviceGetProcessUtilization(device, samples, &count, vgpu_wall_ns() / 1000 + 5000000),
                NVML_ERROR_NOT_FOUND);
    return 0;
}

/* ---- Xid events and a device that falls off the bus ---------------------------------------- */

static int next_xid(nvmlEventSet_t set, nvmlDevice_t device, unsigned long long xid) {
    nvmlEventData_t event;
    memset(&event, 0, sizeof event);
    NVML_OK(nvmlEventSetWait_v2(set, &event, 2000));
    EXPECT(event.device == device && event.eventType == nvmlEventTypeXidCriticalError && event.eventData == xid &&
               event.gpuInstanceId == 0xffffffffu,
           "event type %llu data %llu on %p, wanted Xid %llu on %p", event.eventType, event.eventData, (void *)event.device,
           xid, (void *)device);
    return 0;
}

int check_nvml_failures(int argc, char **argv) {
    (void)argc, (void)argv;
    NVML_OK(nvmlInit_v2());
    nvmlDevice_t first, second;
    if (handle_of(0, &first) || handle_of(1, &second)) return 1;
    unsigned long long supported = 0;
    NVML_OK(nvmlDeviceGetSupportedEventTypes(first, &supported));
    EXPECT(supported & nvmlEventTypeXidCriticalError, "Xid events supported");
    nvmlEventSet_t set;
    NVML_OK(nvmlEventSetCreate(&set));
    NVML_OK(nvmlDeviceRegisterEvents(first, nvmlEventTypeXidCriticalError, set));
    NVML_OK(nvmlDeviceRegisterEvents(second, nvmlEventTypeXidCriticalError, set));
    if (next_xid(set, first, 31)) return 1; /* VGPU_MOCK_INJECT=xid:0:31 */
    NVML_OK(vgpuMockRaiseXid(0, 48));
    if (next_xid(set, first, 48)) return 1;
    char command[1200];
    snprintf(command, sizeof command, "%s xid 1 43", getenv("VGPU_TEST_CTL"));
    EXPECT(system(command) == 0, "%s", command);
    if (next_xid(set, second, 43)) return 1;
    nvmlEventData_t event;
    EXPECT_NVML(nvmlEventSetWait_v2(set, &event, 50), NVML_ERROR_TIMEOUT);

    CU_OK(cuInit(0));
    CUcontext context;
    CU_OK(cuDevicePrimaryCtxRetain(&context, 1));
    CU_OK(cuCtxSetCurrent(context));
    NVML_OK(vgpuMockSetDeviceLost(1, 1));
    if (next_xid(set, second, 79)) return 1; /* fallen off the bus */
    nvmlMemory_t memory;
    EXPECT_NVML(nvmlDeviceGetMemoryInfo(second, &memory), NVML_ERROR_GPU_IS_LOST);
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
    NVML_OK(nvmlDeviceGetName(second, name, sizeof name));
    CUdeviceptr pointer = 0;
    EXPECT_CU(cuMemAlloc_v2(&pointer, MIB), CUDA_ERROR_DEVICE_UNAVAILABLE);
    EXPECT_CU(cuCtxSynchronize(), CUDA_ERROR_DEVICE_UNAVAILABLE);
    NVML_OK(nvmlDeviceGetMemoryInfo(first, &memory)); /* the other device is fine */
    NVML_OK(vgpuMockSetDeviceLost(1, 0));
    NVML_OK(nvmlDeviceGetMemoryInfo(second, &memory));
    CU_OK(cuMemAlloc_v2(&pointer, MIB));
    CU_OK(cuMemFree_v2(pointer));
    NVML_OK(nvmlEventSetFree(set));
    return 0;
}
