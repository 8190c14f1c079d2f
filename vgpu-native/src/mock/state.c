#include "mock/state.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"

#define SLOT_BUSY_BITS 20U
#define SLOT_BUSY_MASK ((1ULL << SLOT_BUSY_BITS) - 1)

static char state_path[512];
static struct mock_state *attached_state;
static pthread_mutex_t attach_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mock_state_process *own_slot;

const char *mock_state_path(void) {
    if (state_path[0] == '\0') {
        const char *configured = getenv("VGPU_MOCK_STATE");
        if (configured != NULL && *configured != '\0') {
            vgpu_copy_string(state_path, configured, sizeof state_path);
        } else {
            struct stat info;
            const char *directory = (stat("/dev/shm", &info) == 0 && S_ISDIR(info.st_mode)) ? "/dev/shm" : "/tmp";
            snprintf(state_path, sizeof state_path, "%s/vgpu-mock-%u.state", directory, (unsigned)getuid());
        }
    }
    return state_path;
}

/* Brings the file to the current layout. Called with an exclusive flock held. A file of another
 * layout version is emptied and regrown, which keeps it sparse (no page is written). */
static bool prepare_file(int fd, const char *path) {
    struct mock_state_header header;
    ssize_t got = pread(fd, &header, sizeof header, 0);
    bool valid = got == (ssize_t)sizeof header && header.magic == MOCK_STATE_MAGIC &&
                 header.version == MOCK_STATE_VERSION && header.size == sizeof(struct mock_state);
    if (valid) return true;
    if (got > 0) LOG_INFO("mock state %s has another layout; starting it afresh", path);
    if (ftruncate(fd, 0) != 0 || ftruncate(fd, (off_t)sizeof(struct mock_state)) != 0) {
        LOG_ERROR("cannot size mock state file %s: %s", path, strerror(errno));
        return false;
    }
    struct mock_state_header fresh = {MOCK_STATE_MAGIC, MOCK_STATE_VERSION, 0, sizeof(struct mock_state)};
    if (pwrite(fd, &fresh, sizeof fresh, 0) != (ssize_t)sizeof fresh) {
        LOG_ERROR("cannot initialise mock state file %s: %s", path, strerror(errno));
        return false;
    }
    return true;
}

/* Applies the device-list health and VGPU_MOCK_INJECT "lost:<i>" entries (both idempotent) and
 * records the device UUIDs, warning when another process configured the same state differently. */
static void apply_configuration(struct mock_state *state, const struct mock_config *config) {
    for (unsigned i = 0; i < config->device_count; i++) {
        struct mock_state_device *device = &state->devices[i];
        if (device->uuid[0] == '\0') vgpu_copy_string(device->uuid, config->devices[i].uuid, sizeof device->uuid);
        else if (strcmp(device->uuid, config->devices[i].uuid) != 0)
            LOG_WARN("mock state %s holds device %u as %s but this process configures %s; accounting is shared by index",
                     mock_state_path(), i, device->uuid, config->devices[i].uuid);
        if (config->devices[i].starts_lost) atomic_store(&device->lost, 1);
    }
    if (state->header.device_count < config->device_count) state->header.device_count = config->device_count;
    const char *inject = getenv("VGPU_MOCK_INJECT");
    if (inject == NULL) return;
    char list[256];
    vgpu_copy_string(list, inject, sizeof list);
    char *save = NULL;
    for (char *item = strtok_r(list, ",; ", &save); item != NULL; item = strtok_r(NULL, ",; ", &save)) {
        unsigned index = 0;
        if (sscanf(item, "lost:%u", &index) == 1 && index < config->device_count) atomic_store(&state->devices[index].lost, 1);
    }
}

struct mock_state *mock_state_attach(const struct mock_config *config) {
    pthread_mutex_lock(&attach_lock);
    if (attached_state != NULL) {
        pthread_mutex_unlock(&attach_lock);
        return attached_state;
    }
    const char *path = mock_state_path();
    struct mock_state *state = NULL;
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0) {
        LOG_ERROR("cannot open mock state %s (set VGPU_MOCK_STATE to a writable path): %s", path, strerror(errno));
        goto done;
    }
    (void)fchmod(fd, 0666); /* processes of other users on the same mock machine share it */
    if (flock(fd, LOCK_EX) != 0) {
        LOG_ERROR("cannot lock mock state %s: %s", path, strerror(errno));
        goto done;
    }
    bool prepared = prepare_file(fd, path);
    void *mapping = prepared ? mmap(NULL, sizeof(struct mock_state), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
    if (mapping == MAP_FAILED) {
        if (prepared) LOG_ERROR("cannot map mock state %s: %s", path, strerror(errno));
    } else {
        state = mapping;
        apply_configuration(state, config);
    }
    flock(fd, LOCK_UN);
done:
    if (fd >= 0) close(fd);
    attached_state = state;
    pthread_mutex_unlock(&attach_lock);
    return state;
}

static void clear_slot_history(struct mock_state_process *slot) {
    for (unsigned d = 0; d < MOCK_MAX_DEVICES; d++) {
        struct mock_state_process_device *device = &slot->devices[d];
        if (atomic_load(&device->busy_total_ns) != 0) {
            for (unsigned b = 0; b < MOCK_BUCKETS; b++) atomic_store_explicit(&device->timeline.slots[b], 0, memory_order_relaxed);
            atomic_store(&device->busy_total_ns, 0);
        }
        atomic_store(&device->contexts, 0);
    }
}

unsigned mock_state_reap(struct mock_state *state) {
    unsigned reclaimed = 0;
    pid_t self = getpid();
    for (unsigned i = 0; i < MOCK_MAX_PROCESSES; i++) {
        struct mock_state_process *slot = &state->processes[i];
        if (atomic_load(&slot->state) != MOCK_SLOT_ACTIVE || slot->pid == self) continue;
        if (vgpu_process_alive(slot->pid, slot->start_ticks)) continue;
        uint32_t expected = MOCK_SLOT_ACTIVE;
        if (!atomic_compare_exchange_strong(&slot->state, &expected, MOCK_SLOT_RECLAIMING)) continue;
        for (unsigned d = 0; d < MOCK_MAX_DEVICES; d++) {
            uint64_t bytes = atomic_exchange(&slot->devices[d].used_bytes, 0);
            if (bytes != 0) atomic_fetch_sub(&state->devices[d].used_bytes, bytes);
        }
        clear_slot_history(slot);
        LOG_DEBUG("reclaimed mock GPU resources of exited process %d", (int)slot->pid);
        slot->pid = 0;
        atomic_store(&slot->state, MOCK_SLOT_FREE);
        reclaimed++;
    }
    return reclaimed;
}

struct mock_state_process *mock_state_register_process(struct mock_state *state) {
    pid_t self = getpid();
    if (own_slot != NULL && own_slot->pid == self) return own_slot;
    uint64_t start_ticks = 0;
    if (!vgpu_process_start_ticks(self, &start_ticks)) {
        LOG_ERROR("cannot read /proc/%d/stat to register with the mock driver", (int)self);
        return NULL;
    }
    /* A second copy of the mock libcuda in this process (dlmopen into another namespace) books into
     * the slot of the first, so the process is one entry, with all its memory, as on a real driver. */
    for (unsigned i = 0; i < MOCK_MAX_PROCESSES; i++) {
        struct mock_state_process *slot = &state->processes[i];
        if (atomic_load(&slot->state) == MOCK_SLOT_ACTIVE && slot->pid == self && slot->start_ticks == start_ticks) {
            own_slot = slot;
            return slot;
        }
    }
    mock_state_reap(state);
    for (int attempt = 0; attempt < 2; attempt++) {
        for (unsigned i = 0; i < MOCK_MAX_PROCESSES; i++) {
            struct mock_state_process *slot = &state->processes[i];
            uint32_t expected = MOCK_SLOT_FREE;
            if (!atomic_compare_exchange_strong(&slot->state, &expected, MOCK_SLOT_CLAIMING)) continue;
            clear_slot_history(slot);
            slot->pid = self;
            slot->start_ticks = start_ticks;
            atomic_store(&slot->state, MOCK_SLOT_ACTIVE);
            own_slot = slot;
            return slot;
        }
        mock_state_reap(state);
    }
    LOG_ERROR("all %d mock process slots in %s are used by live processes", MOCK_MAX_PROCESSES, mock_state_path());
    return NULL;
}

bool mock_state_charge(struct mock_state *state, struct mock_state_process *process, unsigned device, uint64_t bytes,
                       uint64_t capacity) {
    struct mock_state_device *entry = &state->devices[device];
    uint64_t used = atomic_load(&entry->used_bytes);
    do {
        if (bytes > capacity || used > capacity - bytes) return false;
    } while (!atomic_compare_exchange_weak(&entry->used_bytes, &used, used + bytes));
    uint64_t now_used = used + bytes;
    uint64_t peak = atomic_load(&entry->peak_bytes);
    while (peak < now_used && !atomic_compare_exchange_weak(&entry->peak_bytes, &peak, now_used)) {
    }
    atomic_fetch_add(&process->devices[device].used_bytes, bytes);
    return true;
}

void mock_state_uncharge(struct mock_state *state, struct mock_state_process *process, unsigned device, uint64_t bytes) {
    atomic_fetch_sub(&process->devices[device].used_bytes, bytes);
    atomic_fetch_sub(&state->devices[device].used_bytes, bytes);
}

static void timeline_add(struct mock_timeline *timeline, uint64_t start_ns, uint64_t end_ns) {
    for (uint64_t bucket = start_ns / MOCK_BUCKET_NS; bucket * MOCK_BUCKET_NS < end_ns; bucket++) {
        uint64_t bucket_start = bucket * MOCK_BUCKET_NS, bucket_end = bucket_start + MOCK_BUCKET_NS;
        uint64_t overlap = (end_ns < bucket_end ? end_ns : bucket_end) - (start_ns > bucket_start ? start_ns : bucket_start);
        _Atomic uint64_t *slot = &timeline->slots[bucket % MOCK_BUCKETS];
        uint64_t current = atomic_load_explicit(slot, memory_order_relaxed), next;
        do {
            next = (current >> SLOT_BUSY_BITS) == bucket ? current + overlap : (bucket << SLOT_BUSY_BITS) | overlap;
        } while (!atomic_compare_exchange_weak_explicit(slot, &current, next, memory_order_relaxed, memory_order_relaxed));
    }
}

uint64_t mock_timeline_busy_ns(const struct mock_timeline *timeline, uint64_t from_ns, uint64_t to_ns) {
    if (to_ns <= from_ns) return 0;
    uint64_t last_bucket = (to_ns - 1) / MOCK_BUCKET_NS;
    uint64_t first_bucket = from_ns / MOCK_BUCKET_NS;
    if (last_bucket - first_bucket >= MOCK_BUCKETS) first_bucket = last_bucket - MOCK_BUCKETS + 1;
    uint64_t busy = 0;
    for (uint64_t bucket = first_bucket; bucket <= last_bucket; bucket++) {
        uint64_t value = atomic_load_explicit(&timeline->slots[bucket % MOCK_BUCKETS], memory_order_relaxed);
        if ((value >> SLOT_BUSY_BITS) != bucket) continue;
        uint64_t bucket_busy = value & SLOT_BUSY_MASK;
        uint64_t bucket_start = bucket * MOCK_BUCKET_NS, bucket_end = bucket_start + MOCK_BUCKET_NS;
        uint64_t covered = (to_ns < bucket_end ? to_ns : bucket_end) - (from_ns > bucket_start ? from_ns : bucket_start);
        /* Within one bucket the busy time is taken as spread evenly. */
        busy += covered == MOCK_BUCKET_NS ? bucket_busy : bucket_busy * covered / MOCK_BUCKET_NS;
    }
    return busy;
}

uint64_t mock_state_book_kernel(struct mock_state *state, struct mock_state_process *process, unsigned device,
                                uint64_t duration_ns) {
    struct mock_state_device *entry = &state->devices[device];
    uint64_t start = 0;
    for (;;) {
        uint64_t now = vgpu_now_ns();
        uint64_t booked = atomic_load(&entry->busy_until_ns);
        start = booked > now ? booked : now;
        if (start - now > MOCK_MAX_AHEAD_NS) {
            vgpu_sleep_until_ns(start - MOCK_MAX_AHEAD_NS);
            continue;
        }
        if (atomic_compare_exchange_weak(&entry->busy_until_ns, &booked, start + duration_ns)) break;
    }
    uint64_t end = start + duration_ns;
    timeline_add(&entry->timeline, start, end);
    atomic_fetch_add(&entry->busy_total_ns, duration_ns);
    timeline_add(&process->devices[device].timeline, start, end);
    atomic_fetch_add(&process->devices[device].busy_total_ns, duration_ns);
    return end;
}

void mock_state_set_lost(struct mock_state *state, unsigned device, bool lost) {
    uint32_t previous = atomic_exchange(&state->devices[device].lost, lost ? 1U : 0U);
    if (lost && !previous) mock_state_raise_xid(state, device, 79); /* Xid 79: GPU has fallen off the bus */
}

void mock_state_raise_xid(struct mock_state *state, unsigned device, uint64_t xid) {
    struct mock_state_device *entry = &state->devices[device];
    uint32_t sequence = atomic_fetch_add(&entry->xid_count, 1);
    /* The sequence number travels with the code so a reader can tell a fresh slot from a recycled one. */
    atomic_store(&entry->xid_codes[sequence % MOCK_XID_RING], ((uint64_t)sequence << 32) | (xid & 0xffffffffULL));
}
