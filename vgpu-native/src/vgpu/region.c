#include "vgpu/region.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "vgpu/vgpu.h"

#define ATTACH_WAIT_NS 10000000000ULL /* give up on a region locked exclusively for 10 s */
#define SIZE_WAIT_NS 2000000000ULL     /* a file another process has just created is sized within 2 s */
#define REGION_BYTES ((off_t)sizeof(struct vgpu_region))

static void initialise(struct vgpu_region *region, const struct vgpu_config *config) {
    struct vgpu_region_header *header = &region->header;
    header->version = VGPU_REGION_VERSION;
    header->header_size = sizeof(struct vgpu_region_header);
    header->device_count = VGPU_REGION_DEVICES;
    header->device_size = sizeof(struct vgpu_region_device);
    header->slot_count = VGPU_REGION_SLOTS;
    header->slot_size = sizeof(struct vgpu_region_slot);
    header->devices_offset = offsetof(struct vgpu_region, devices);
    header->slots_offset = offsetof(struct vgpu_region, slots);
    header->created_unix_ns = vgpu_wall_ns();
    header->reserved0 = 0;
    header->priority = config->priority;
    header->policy = (uint32_t)config->policy;
    header->flags = config->oversubscribe ? 1U : 0U;
    vgpu_copy_string(header->limits_source, config->source, sizeof header->limits_source);
    /* By CUDA ordinal, or with VGPU_DEVICES by place in that list, whose UUIDs are known before any driver. */
    for (int i = 0; i < VGPU_REGION_DEVICES; i++) {
        region->devices[i].memory_limit = config->memory_limit[i];
        region->devices[i].sm_limit = config->sm_limit[i];
        atomic_store(&region->devices[i].sm_limit_permille, config->sm_limit[i] * 10);
        if (i < config->granted_count) vgpu_uuid_format(config->granted[i], region->devices[i].uuid);
    }
    atomic_thread_fence(memory_order_release);
    header->magic = VGPU_REGION_MAGIC; /* last: readers see a complete region or none */
}

/* The first 48 bytes of every header of this layout, as six words to compare. */
struct header_prefix {
    uint64_t magic;
    uint32_t version, header_size, device_count, device_size, slot_count, slot_size;
    uint64_t devices_offset, slots_offset;
};
_Static_assert(sizeof(struct header_prefix) == offsetof(struct vgpu_region_header, created_unix_ns), "header prefix");

static const union {
    struct header_prefix fields;
    uint64_t words[6];
} EXPECTED_PREFIX = {.fields = {VGPU_REGION_MAGIC, VGPU_REGION_VERSION, sizeof(struct vgpu_region_header),
                                VGPU_REGION_DEVICES, sizeof(struct vgpu_region_device), VGPU_REGION_SLOTS,
                                sizeof(struct vgpu_region_slot), offsetof(struct vgpu_region, devices),
                                offsetof(struct vgpu_region, slots)}};

bool vgpu_region_intact(const struct vgpu_region *region) {
    /* On every allocation: six loads from one read-only cache line, no branch until the end. */
    const uint64_t *words = (const uint64_t *)(const void *)&region->header;
    const uint64_t *expected = EXPECTED_PREFIX.words;
    return ((words[0] ^ expected[0]) | (words[1] ^ expected[1]) | (words[2] ^ expected[2]) | (words[3] ^ expected[3]) |
            (words[4] ^ expected[4]) | (words[5] ^ expected[5])) == 0;
}

/* Whole-file open-file-description locks: a read lock per attached process, a write lock to
 * initialise. Unlike flock, converting write to read is atomic, so no newcomer can slip in and reset
 * the region between its initialisation and the initialiser's read lock. */
static bool lock_file(int fd, short type) {
    struct flock lock = {.l_type = type, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
    return fcntl(fd, F_OFD_SETLK, &lock) == 0;
}

/* Waits for the read lock while an initialiser holds the write lock, but never forever. */
static bool lock_shared(int fd, const char *path) {
    uint64_t deadline = vgpu_now_ns() + ATTACH_WAIT_NS;
    while (!lock_file(fd, F_RDLCK)) {
        if (errno != EAGAIN && errno != EACCES && errno != EINTR) {
            LOG_ERROR("cannot lock shared region %s: %s", path, strerror(errno));
            return false;
        }
        if (vgpu_now_ns() > deadline) {
            LOG_ERROR("shared region %s stayed locked by its initialiser for 10 s", path);
            return false;
        }
        vgpu_sleep_ns(1000000);
    }
    return true;
}

/* The region's limits are what the first process wrote, for the monitor; this process enforces its own. */
static void warn_on_different_limits(const struct vgpu_region *region, const struct vgpu_config *config, const char *path) {
    for (int i = 0; i < VGPU_REGION_DEVICES; i++) {
        if (region->devices[i].memory_limit != config->memory_limit[i] || region->devices[i].sm_limit != config->sm_limit[i]) {
            LOG_WARN("limits for device %d differ from those %s holds; enforcing this process's own, from %s", i, path,
                     config->source);
            return;
        }
    }
}

/* The region's directory is writable by every uid of the container (the node agent's 0777 directory,
 * or /tmp), so whatever is at the path may have been put there by another user: a symbolic or hard link
 * to a file of the container, a directory, a FIFO, a file of its own. A root process must never write
 * through it. So the path is created only when nothing is there (O_EXCL), a symbolic link at it is never
 * followed (O_NOFOLLOW), and O_NONBLOCK keeps the open of a FIFO or device from blocking until fstat
 * refuses it (it changes nothing for a regular file). *created tells which of the two opens succeeded. */
static int open_region_file(const char *path, bool *created) {
    const int flags = O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;
    for (int attempt = 0; attempt < 3; attempt++) {
        int fd = open(path, flags | O_CREAT | O_EXCL, 0666);
        *created = fd >= 0;
        if (fd >= 0 || errno != EEXIST) return fd;
        fd = open(path, flags);
        if (fd >= 0 || errno != ENOENT) return fd;
        /* removed between the two opens: try to create it again */
    }
    return -1;
}

/* fstat without glibc's fstat, which exists only from glibc 2.33 on (glibc_versions.h): on x86_64 and
 * aarch64 the kernel's struct stat is glibc's. */
static int stat_of(int fd, struct stat *status) {
#if defined(__x86_64__) || defined(__aarch64__)
    return (int)syscall(SYS_fstat, fd, status);
#else
    return fstat(fd, status);
#endif
}

static const char *file_type(mode_t mode) {
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISSOCK(mode)) return "a socket";
    if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
    return "not a file";
}

/* Writes into why (and returns false) what makes the opened file unfit to be this process's region:
 * anything but a regular file, a file with another name (a hard link may be a file of the container),
 * or one owned by a user other than this process's or root (never write into another user's file). */
static bool fit_to_share(const struct stat *status, char *why, size_t size) {
    uid_t self = geteuid();
    if (!S_ISREG(status->st_mode))
        snprintf(why, size, "it is not a regular file (%s)", file_type(status->st_mode));
    else if (status->st_nlink != 1)
        snprintf(why, size, "it has %lu hard links, a region has exactly one (another name may be a file of the container)",
                 (unsigned long)status->st_nlink);
    else if (status->st_uid != self && status->st_uid != 0)
        snprintf(why, size, "it is owned by uid %u; libvgpu writes only into a file of this process's uid (%u) or root's",
                 (unsigned)status->st_uid, (unsigned)self);
    else
        return true;
    return false;
}

/* A file this process did not create is used at its own size, never resized: a process that has just
 * created it sizes it at once, so a shorter one is waited for a moment, then refused. */
static bool region_sized(int fd, struct stat *status, char *why, size_t size) {
    uint64_t deadline = vgpu_now_ns() + SIZE_WAIT_NS;
    while (status->st_size < REGION_BYTES && vgpu_now_ns() < deadline) {
        vgpu_sleep_ns(1000000);
        if (stat_of(fd, status) != 0) break;
    }
    if (status->st_size == REGION_BYTES) return true;
    snprintf(why, size, "it is %lld bytes, not the %lld of a vgpu region v%u (another layout, or cut short); libvgpu "
             "resizes only a file it created", (long long)status->st_size, (long long)REGION_BYTES, VGPU_REGION_VERSION);
    return false;
}

/* The region file, open and checked, sized when this process created it; -1 after one log line. */
static int open_checked(const char *path) {
    bool created = false;
    int fd = open_region_file(path, &created);
    if (fd < 0) {
        if (errno == ELOOP)
            LOG_ERROR("refusing shared region %s (CUDA_DEVICE_MEMORY_SHARED_CACHE): it is a symbolic link, which libvgpu "
                      "never follows (another user of the container may have put it there)", path);
        else if (errno == EISDIR)
            LOG_ERROR("refusing shared region %s (CUDA_DEVICE_MEMORY_SHARED_CACHE): it is not a regular file (a directory)",
                      path);
        else
            LOG_ERROR("cannot open shared region %s (CUDA_DEVICE_MEMORY_SHARED_CACHE): %s", path, strerror(errno));
        return -1;
    }
    struct stat status;
    char why[256];
    if (stat_of(fd, &status) != 0) {
        LOG_ERROR("cannot inspect shared region %s (CUDA_DEVICE_MEMORY_SHARED_CACHE): %s", path, strerror(errno));
    } else if (!fit_to_share(&status, why, sizeof why) || (!created && !region_sized(fd, &status, why, sizeof why))) {
        LOG_ERROR("refusing shared region %s (CUDA_DEVICE_MEMORY_SHARED_CACHE): %s", path, why);
    } else if (created && (fchmod(fd, 0666) != 0 || ftruncate(fd, REGION_BYTES) != 0)) {
        /* 0666 past the umask, before the size that tells others the file is ready: processes of any
         * user of the container share the region. */
        LOG_ERROR("cannot prepare shared region %s: %s", path, strerror(errno));
    } else {
        return fd;
    }
    close(fd);
    return -1;
}

struct vgpu_region *vgpu_region_attach(const struct vgpu_config *config) {
    const char *path = config->region_path;
    int fd = open_checked(path);
    if (fd < 0) return NULL;
    bool alone = lock_file(fd, F_WRLCK);
    if (!alone && !lock_shared(fd, path)) {
        close(fd);
        return NULL;
    }
    void *mapping = mmap(NULL, sizeof(struct vgpu_region), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (mapping == MAP_FAILED) {
        LOG_ERROR("cannot map shared region %s: %s", path, strerror(errno));
        close(fd);
        return NULL;
    }
    struct vgpu_region *region = mapping;
    if (alone) {
        /* Alone with the file: start it afresh, in place (it is never truncated). Counters left by dead
         * processes are meaningless, and the limits come from this process's configuration, never from
         * a stale file. The magic, zeroed first and written last, tells readers it is not ready yet. */
        memset(region, 0, sizeof *region);
        initialise(region, config);
        lock_file(fd, F_RDLCK); /* atomic downgrade: others may attach now */
    } else if (!vgpu_region_intact(region)) {
        LOG_ERROR("shared region %s is in use but its header is not vgpu region v%u (another layout, or corrupt); refusing "
                  "to share it", path, VGPU_REGION_VERSION);
        munmap(mapping, sizeof(struct vgpu_region));
        close(fd);
        return NULL;
    } else {
        warn_on_different_limits(region, config, path);
    }
    /* fd stays open: it carries this process's shared lock until exit. */
    LOG_DEBUG("attached shared region %s (%s)", path, alone ? "initialised" : "joined");
    return region;
}

static void reclaim(struct vgpu_region *region, struct vgpu_region_slot *slot) {
    for (int d = 0; d < VGPU_REGION_DEVICES; d++) {
        /* The slot's counter goes first: dying between the two steps can only leak, never overcount. */
        uint64_t bytes = atomic_exchange(&slot->devices[d].memory_used, 0);
        atomic_store(&slot->devices[d].context_bytes, 0);
        atomic_store(&slot->devices[d].sm_util_permille, 0);
        if (bytes != 0) atomic_fetch_sub(&region->devices[d].memory_used, bytes);
    }
    atomic_store(&slot->host_pid, 0);
    slot->pid = 0;
    atomic_store(&slot->state, VGPU_SLOT_FREE);
}

unsigned vgpu_region_reap(struct vgpu_region *region) {
    unsigned reclaimed = 0;
    pid_t self = getpid();
    for (int i = 0; i < VGPU_REGION_SLOTS; i++) {
        struct vgpu_region_slot *slot = &region->slots[i];
        if (atomic_load_explicit(&slot->state, memory_order_acquire) != VGPU_SLOT_ACTIVE || slot->pid == self) continue;
        if (vgpu_process_alive(slot->pid, slot->start_ticks)) continue;
        uint32_t expected = VGPU_SLOT_ACTIVE;
        if (!atomic_compare_exchange_strong(&slot->state, &expected, VGPU_SLOT_RECLAIMING)) continue;
        LOG_INFO("returning the GPU memory of exited process %d", (int)slot->pid);
        reclaim(region, slot);
        reclaimed++;
    }
    return reclaimed;
}

struct vgpu_region_slot *vgpu_region_claim_slot(struct vgpu_region *region) {
    uint64_t start_ticks = 0;
    pid_t self = getpid();
    if (!vgpu_process_start_ticks(self, &start_ticks)) {
        LOG_ERROR("cannot read /proc/%d/stat to register in the shared region", (int)self);
        return NULL;
    }
    for (int attempt = 0; attempt < 2; attempt++) {
        for (int i = 0; i < VGPU_REGION_SLOTS; i++) {
            struct vgpu_region_slot *slot = &region->slots[i];
            uint32_t expected = VGPU_SLOT_FREE;
            if (!atomic_compare_exchange_strong(&slot->state, &expected, VGPU_SLOT_CLAIMING)) continue;
            slot->pid = self;
            slot->start_ticks = start_ticks;
            atomic_store(&slot->host_pid, 0);
            atomic_store_explicit(&slot->state, VGPU_SLOT_ACTIVE, memory_order_release);
            return slot;
        }
        vgpu_region_reap(region);
    }
    LOG_ERROR("all %d process slots of the shared region are held by live processes", VGPU_REGION_SLOTS);
    return NULL;
}

void vgpu_region_leave(struct vgpu_region *region, struct vgpu_region_slot *slot) {
    uint32_t expected = VGPU_SLOT_ACTIVE;
    if (atomic_compare_exchange_strong(&slot->state, &expected, VGPU_SLOT_RECLAIMING)) reclaim(region, slot);
}

enum vgpu_charge vgpu_region_charge(struct vgpu_region *region, struct vgpu_region_slot *slot, int ordinal,
                                    uint64_t bytes, uint64_t limit) {
    struct vgpu_region_device *device = &region->devices[ordinal];
    uint64_t used = atomic_load_explicit(&device->memory_used, memory_order_relaxed), next;
    do {
        /* Check and add in one compare-and-swap: racing processes can never overcommit the limit. */
        if (limit != 0 && used > limit) return VGPU_CORRUPT;
        if (limit != 0 && (bytes > limit || used > limit - bytes)) return VGPU_OVER_LIMIT;
        next = used + bytes;
    } while (!atomic_compare_exchange_weak_explicit(&device->memory_used, &used, next, memory_order_acq_rel,
                                                    memory_order_relaxed));
    atomic_fetch_add_explicit(&slot->devices[ordinal].memory_used, bytes, memory_order_relaxed);
    uint64_t peak = atomic_load_explicit(&device->memory_peak, memory_order_relaxed);
    while (peak < next && !atomic_compare_exchange_weak_explicit(&device->memory_peak, &peak, next, memory_order_relaxed,
                                                                 memory_order_relaxed)) {
    }
    return VGPU_CHARGED;
}

void vgpu_region_uncharge(struct vgpu_region *region, struct vgpu_region_slot *slot, int ordinal, uint64_t bytes) {
    atomic_fetch_sub_explicit(&slot->devices[ordinal].memory_used, bytes, memory_order_relaxed);
    atomic_fetch_sub_explicit(&region->devices[ordinal].memory_used, bytes, memory_order_release);
}
