/* What a process of the container can write cannot widen a limit: the shared region (every process of
 * the container maps it read-write) and files named as limits files that are not complete.
 *
 * Each region check plays the hostile process itself: it rewrites the region through its own mapping,
 * exactly as any process of the container could, then asks libvgpu for more than the limit. */
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "checks.h"
#include "common/util.h"
#include "mock/reference_kernels.h"
#include "mock/state.h"
#include "vgpu/region.h"

#define CHUNK (64 * MIB)
#define MAX_CHUNKS 64

struct holdings {
    CUdeviceptr pointers[MAX_CHUNKS + 1];
    int count;
    uint64_t bytes;
    CUresult refusal; /* what the first refused allocation returned */
};

static int hold(struct holdings *h, uint64_t bytes) {
    CU_OK(cuMemAlloc_v2(&h->pointers[h->count], bytes));
    h->count++;
    h->bytes += bytes;
    return 0;
}

/* Allocates CHUNK after CHUNK until libvgpu says no. */
static void take_until_refused(struct holdings *h) {
    h->refusal = CUDA_SUCCESS;
    while (h->count < MAX_CHUNKS) {
        CUresult result = cuMemAlloc_v2(&h->pointers[h->count], CHUNK);
        if (result != CUDA_SUCCESS) {
            h->refusal = result;
            return;
        }
        h->count++;
        h->bytes += CHUNK;
    }
}

static int release(struct holdings *h) {
    for (int i = 0; i < h->count; i++) CU_OK(cuMemFree_v2(h->pointers[i]));
    h->count = 0;
    h->bytes = 0;
    return 0;
}

/* A process started after the rewrite, with the same limit: it either refuses to start (its cuInit fails
 * and the driver stays uninitialised) or meets the limit; "join" demands the latter. */
int role_region_newcomer(int argc, char **argv) {
    bool must_join = argc >= 3 && strcmp(argv[2], "join") == 0;
    uint64_t limit = env_bytes("CUDA_DEVICE_MEMORY_LIMIT");
    CUresult init = cuInit(0);
    CUcontext context = NULL;
    if (init != CUDA_SUCCESS) {
        EXPECT(!must_join, "cuInit returned %d in a region whose limits were rewritten", (int)init);
        CUresult retain = cuDevicePrimaryCtxRetain(&context, 0);
        if (retain == CUDA_SUCCESS) CU_OK(cuCtxSetCurrent(context));
        CUdeviceptr pointer = 0;
        CUresult allocation = cuMemAlloc_v2(&pointer, limit + MIB);
        EXPECT(allocation != CUDA_SUCCESS, "after cuInit refused (%d), %llu bytes allocated past the limit of %llu",
               (int)init, (unsigned long long)(limit + MIB), (unsigned long long)limit);
        fprintf(stderr, "  a process started after the rewrite: cuInit %d, then no memory (%d)\n", (int)init, (int)allocation);
        return 0;
    }
    CU_OK(cuDevicePrimaryCtxRetain(&context, 0));
    CU_OK(cuCtxSetCurrent(context));
    size_t free_bytes = 0, total = 0;
    if (memory_info(&free_bytes, &total)) return 1;
    EXPECT(total == limit, "a process started after the rewrite sees %zu bytes, its limit is %llu", total,
           (unsigned long long)limit);
    CUdeviceptr pointer = 0;
    EXPECT_CU(cuMemAlloc_v2(&pointer, free_bytes + 1), CUDA_ERROR_OUT_OF_MEMORY);
    fprintf(stderr, "  a process started after the rewrite meets its own limit of %llu bytes\n", (unsigned long long)limit);
    return 0;
}

static int newcomer(const char *mode) {
    pid_t child = spawn_self("region-newcomer", mode);
    EXPECT(wait_child(child) == 0, "the process started after the rewrite went past its limit");
    return 0;
}

/* The primary context, then eighths/8 of the memory the limit leaves (*room) held, and the region
 * mapped as the hostile process maps it. */
static int hold_eighths(struct holdings *held, unsigned eighths, size_t *room, struct vgpu_region **region) {
    CUcontext context;
    if (setup_primary_context(&context)) return 1;
    size_t total = 0;
    if (memory_info(room, &total)) return 1;
    if (hold(held, *room / 8 * eighths)) return 1;
    *region = map_region_writable();
    EXPECT(*region != NULL, "region maps");
    return 0;
}

/* Zeroes the whole file: magic, version, counters, limits. A corrupt region fails closed. */
int check_region_rewrite_whole(int argc, char **argv) {
    (void)argc, (void)argv;
    size_t room = 0;
    struct holdings held = {0};
    struct vgpu_region *region = NULL;
    if (hold_eighths(&held, 4, &room, &region)) return 1;
    memset(region, 0, sizeof *region);
    struct log_capture log;
    if (log_capture_begin(&log, "whole")) return 1;
    take_until_refused(&held);
    CUdeviceptr extra[3] = {0};
    for (int i = 0; i < 3; i++) cuMemAlloc_v2(&extra[i], MIB); /* more refusals: still one log line */
    if (log_capture_end(&log)) return 1;
    for (int i = 0; i < 3; i++)
        if (extra[i] != 0) cuMemFree_v2(extra[i]);
    EXPECT(held.bytes <= room, "after zeroing the region this process holds %llu bytes, more than the %zu its limit leaves",
           (unsigned long long)held.bytes, room);
    EXPECT(held.count == 1 && held.refusal == CUDA_ERROR_OUT_OF_MEMORY,
           "a zeroed region must refuse every allocation (fail closed): %d more allocated, then %d", held.count - 1,
           (int)held.refusal);
    EXPECT(lines_containing(log.text, "corrupt") == 1, "wanted one log line saying the region is corrupt, got:\n%s", log.text);
    fprintf(stderr, "  zeroed region: allocations refused, one line: %.*s", (int)strcspn(log.text, "\n") + 1, log.text);
    if (newcomer("any")) return 1;
    return release(&held);
}

/* Zeroes the usage words (device and every slot): the process must not go past its limit. */
int check_region_rewrite_used(int argc, char **argv) {
    (void)argc, (void)argv;
    size_t room = 0;
    struct holdings held = {0};
    struct vgpu_region *region = NULL;
    if (hold_eighths(&held, 7, &room, &region)) return 1;
    for (int d = 0; d < VGPU_REGION_DEVICES; d++) {
        atomic_store(&region->devices[d].memory_used, 0);
        for (int s = 0; s < VGPU_REGION_SLOTS; s++) atomic_store(&region->slots[s].devices[d].memory_used, 0);
    }
    take_until_refused(&held);
    fprintf(stderr, "  usage words zeroed: the process holds %llu MiB, its limit leaves %zu MiB\n",
            (unsigned long long)(held.bytes / MIB), (size_t)(room / MIB));
    EXPECT(held.bytes <= room, "after zeroing the usage words this process holds %llu bytes, %llu past its limit",
           (unsigned long long)held.bytes, (unsigned long long)(held.bytes - room));
    EXPECT(held.refusal == CUDA_ERROR_OUT_OF_MEMORY, "refused with %d", (int)held.refusal);
    return release(&held);
}

/* Zeroes the limit words: a process started afterwards keeps its own limit. */
int check_region_rewrite_limits(int argc, char **argv) {
    (void)argc, (void)argv;
    CUcontext context;
    if (setup_primary_context(&context)) return 1; /* holds the region, so the newcomer joins it */
    struct vgpu_region *region = map_region_writable();
    EXPECT(region != NULL, "region maps");
    for (int d = 0; d < VGPU_REGION_DEVICES; d++) {
        region->devices[d].memory_limit = 0;
        region->devices[d].sm_limit = 0;
    }
    return newcomer("join");
}

/* Clears the word where layout 1 kept the compute switch (offset 56): the compute limit stays. */
int check_region_rewrite_switch(int argc, char **argv) {
    (void)argc, (void)argv;
    int percent = atoi(getenv("CUDA_DEVICE_SM_LIMIT"));
    CUcontext context;
    if (setup_primary_context(&context)) return 1;
    CUfunction function;
    if (load_test_kernel(&function, "work")) return 1;
    struct vgpu_region *region = map_region_writable();
    EXPECT(region != NULL, "region maps");
    _Atomic uint32_t *compute_switch = (_Atomic uint32_t *)((char *)region + 56);
    atomic_store(compute_switch, 0);
    unsigned seed = (unsigned)getpid();
    uint64_t start = vgpu_now_ns(), stop = start + 2600000000ULL;
    for (unsigned i = 0; vgpu_now_ns() < stop; i++) {
        atomic_store(compute_switch, 0); /* a hostile process keeps clearing it */
        unsigned waves = 1 + rand_r(&seed) % 20;
        CU_OK(cuLaunchKernel(function, waves * 864, 1, 1, 256, 1, 1, 0, NULL, NULL, NULL));
        if (i % 16 == 15) CU_OK(cuCtxSynchronize());
    }
    CU_OK(cuCtxSynchronize());
    vgpu_sleep_ns(3 * MOCK_BUCKET_NS);
    double share = device_share_of(getpid(), start + 1500000000ULL, start + 2500000000ULL);
    EXPECT(share >= 0, "this process is in the mock state");
    fprintf(stderr, "  compute switch cleared: %.1f%% of the device under a %d%% limit\n", share, percent);
    EXPECT(share <= percent + 8.0, "with the switch cleared the process used %.1f%% of the device, limit %d%%", share, percent);
    return 0;
}

/* The container's pacer is in the region: a hostile thread keeps its budget at the smallest positive
 * number and its bucket empty, so that every launch of every process would pass at once (a budget the
 * container's controller cannot correct: the thread rewrites it every 100 us). This process notices
 * that the container's pacer no longer holds it, paces itself, and says so once. */
static _Atomic int attack_over;

static void *subvert_the_pacer(void *region_pointer) {
    struct vgpu_region *region = region_pointer;
    double tiny = 4.9e-324;
    uint64_t bits;
    memcpy(&bits, &tiny, sizeof bits);
    while (!atomic_load(&attack_over)) {
        atomic_store(&region->devices[0].pace.budget_bits, bits);
        atomic_store(&region->devices[0].pace.next_ns, 0);
        atomic_store(&region->devices[0].pace.hold_until_ns, 0);
        vgpu_sleep_ns(100000);
    }
    return NULL;
}

int check_region_rewrite_pacer(int argc, char **argv) {
    (void)argc, (void)argv;
    int percent = atoi(getenv("CUDA_DEVICE_SM_LIMIT"));
    CUcontext context;
    if (setup_primary_context(&context)) return 1;
    CUfunction spin;
    if (load_reference_kernel(&spin, MOCK_SPIN_KERNEL)) return 1;
    CUevent ring[16];
    for (int i = 0; i < 16; i++) CU_OK(cuEventCreate(&ring[i], CU_EVENT_DISABLE_TIMING));
    struct vgpu_region *region = map_region_writable();
    EXPECT(region != NULL, "region maps");
    struct log_capture capture;
    if (log_capture_begin(&capture, "pacer")) return 1;
    pthread_t attacker;
    EXPECT(pthread_create(&attacker, NULL, subvert_the_pacer, region) == 0, "attacking thread started");
    unsigned seed = (unsigned)getpid();
    uint64_t start = vgpu_now_ns(), stop = start + 3200000000ULL;
    for (unsigned i = 0; vgpu_now_ns() < stop; i++) {
        if (i >= 16) CU_OK(cuEventSynchronize(ring[i % 16]));
        CU_OK(launch_spin(spin, 10000ULL + (unsigned)rand_r(&seed) % 190001, 1 + (unsigned)rand_r(&seed) % 2000, NULL));
        CU_OK(cuEventRecord(ring[i % 16], NULL));
    }
    atomic_store(&attack_over, 1);
    pthread_join(attacker, NULL);
    CU_OK(cuCtxSynchronize());
    if (log_capture_end(&capture)) return 1;
    vgpu_sleep_ns(3 * MOCK_BUCKET_NS);
    double share = device_share_of(getpid(), start + 2000000000ULL, start + 3000000000ULL);
    EXPECT(share >= 0, "this process is in the mock state");
    fprintf(stderr, "  pacer's budget and bucket rewritten every 100 us: %.1f%% of the device under a %d%% limit; %s", share, percent,
            capture.text);
    EXPECT(lines_containing(capture.text, "this process paces itself") == 1, "one line says so: %s", capture.text);
    EXPECT(share >= percent - 3.0 && share <= percent + 3.0, "with the pacer rewritten the process used %.1f%% of the device, "
           "limit %d%%", share, percent);
    return 0;
}

/* ---- limits files that are not complete ----------------------------------------------------- */

struct bad_file {
    const char *name;
    const char *content; /* NULL: a directory */
    bool unreadable;
};

static const struct bad_file BAD_FILES[] = {
    {"directory", NULL, false},
    {"empty", "", false},
    {"comments-only", "# vgpu limits of pod a/b container c\n\n", false},
    {"cut-after-a-line", "# vgpu limits of pod a/b container c\nCUDA_DEVICE_MEMORY_LIMIT_0=1024m\n", false},
    {"cut-mid-line", "# vgpu limits of pod a/b container c\nCUDA_DEVICE_MEMORY_LIMIT_0=10", false},
    {"unreadable", "CUDA_DEVICE_MEMORY_LIMIT_0=1024m\nEND\n", true},
};

static int write_case(const struct bad_file *item, const char *path) {
    if (item->content == NULL) return mkdir(path, 0755);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return -1;
    ssize_t length = (ssize_t)strlen(item->content);
    int ok = write(fd, item->content, (size_t)length) == length;
    close(fd);
    return ok && (!item->unreadable || chmod(path, 0) == 0) ? 0 : -1;
}

/* In a child: cuInit must fail as for a malformed value, and nothing later may reach the driver. */
static int refused_child(const char *path, bool drop_privileges, const char *log_path) {
    int fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || dup2(fd, STDERR_FILENO) < 0) return 10;
    if (path != NULL) setenv("VGPU_LIMITS_FILE", path, 1);
    if (drop_privileges && geteuid() == 0 && setuid(65534) != 0) return 13; /* root reads any file */
    if (cuInit(0) != CUDA_ERROR_INVALID_VALUE) return 11;
    CUdeviceptr pointer = 0;
    if (cuMemAlloc_v2(&pointer, MIB) != CUDA_ERROR_NOT_INITIALIZED) return 12;
    return 0;
}

static int expect_refused(const char *what, const char *path, const char *named, bool drop_privileges) {
    char log_path[700];
    snprintf(log_path, sizeof log_path, "%s/refused.log", getenv("VGPU_TEST_DIR"));
    pid_t child = fork();
    if (child == 0) _exit(refused_child(named, drop_privileges, log_path));
    int code = wait_child(child);
    char log[2048] = {0};
    int fd = open(log_path, O_RDONLY);
    ssize_t got = fd >= 0 ? read(fd, log, sizeof log - 1) : -1;
    if (fd >= 0) close(fd);
    EXPECT(code == 0, "%s limits file: child code %d (11: cuInit did not return CUDA_ERROR_INVALID_VALUE, 12: a later "
                      "call reached the driver); log: %s", what, code, log);
    EXPECT(got > 0 && lines_containing(log, path) == 1 && strchr(log, '\n') == strrchr(log, '\n'),
           "%s limits file: wanted one log line naming %s, got: %s", what, path, log);
    fprintf(stderr, "  %-17s %s", what, log);
    return 0;
}

/* argv[2]: "named" (each case through VGPU_LIMITS_FILE) or the path of the system file, which the runner
 * made a directory (libvgpu-syslimits.so reads it in place of /etc/vgpu/limits). */
int check_limits_file_refused(int argc, char **argv) {
    EXPECT(argc >= 3, "usage: limits-file-refused named|<system file>");
    if (strcmp(argv[2], "named") != 0) return expect_refused("system directory", argv[2], NULL, false);
    for (unsigned i = 0; i < sizeof BAD_FILES / sizeof BAD_FILES[0]; i++) {
        char path[700];
        snprintf(path, sizeof path, "%s/limits-%s", getenv("VGPU_TEST_DIR"), BAD_FILES[i].name);
        EXPECT(write_case(&BAD_FILES[i], path) == 0, "cannot create %s", path);
        if (expect_refused(BAD_FILES[i].name, path, path, BAD_FILES[i].unreadable)) return 1;
    }
    return 0;
}
