/* Several processes sharing one limit: racing allocations, and a killed process's memory. */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "checks.h"
#include "common/util.h"
#include "mock/state.h"
#include "vgpu/region.h"

#define RACE_PROCESSES 4
#define RACE_THREADS 8
#define RACE_SECONDS 1.5
#define RACE_HELD 8

static const struct vgpu_region *map_region(void) {
    const char *path = getenv("CUDA_DEVICE_MEMORY_SHARED_CACHE");
    int fd = path != NULL ? open(path, O_RDONLY | O_CLOEXEC) : -1;
    if (fd < 0) return NULL;
    void *mapping = mmap(NULL, sizeof(struct vgpu_region), PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    return mapping == MAP_FAILED ? NULL : mapping;
}

struct race_thread {
    CUcontext context;
    uint64_t start_ns;
    unsigned seed;
    unsigned long allocations, refusals, errors;
};

static void *race_thread(void *argument) {
    struct race_thread *self = argument;
    CUdeviceptr held[RACE_HELD] = {0};
    if (cuCtxSetCurrent(self->context) != CUDA_SUCCESS) {
        self->errors++;
        return NULL;
    }
    vgpu_sleep_until_ns(self->start_ns); /* all 32 threads of 4 processes start together */
    uint64_t stop = self->start_ns + (uint64_t)(RACE_SECONDS * 1e9);
    while (vgpu_now_ns() < stop) {
        int slot = rand_r(&self->seed) % RACE_HELD;
        if (held[slot] != 0) {
            if (cuMemFree_v2(held[slot]) != CUDA_SUCCESS) self->errors++;
            held[slot] = 0;
            continue;
        }
        size_t bytes = (1 + (size_t)(rand_r(&self->seed) % 64)) * MIB - (size_t)(rand_r(&self->seed) % 4096);
        CUresult result = cuMemAlloc_v2(&held[slot], bytes);
        if (result == CUDA_SUCCESS) self->allocations++;
        else if (result == CUDA_ERROR_OUT_OF_MEMORY) self->refusals++, held[slot] = 0;
        else self->errors++, held[slot] = 0;
    }
    for (int i = 0; i < RACE_HELD; i++)
        if (held[i] != 0 && cuMemFree_v2(held[i]) != CUDA_SUCCESS) self->errors++;
    return NULL;
}

/* The race starts once every worker holds its context: a context costs memory under the limit, so a
 * worker still creating its own after the others began could be refused (and was, on a loaded CI
 * machine, with a fixed start time). Each worker says it is ready with a file; the check then writes
 * the start time for all. */
static char *race_file(char *buffer, size_t size, const char *name) {
    snprintf(buffer, size, "%s/%s", getenv("VGPU_TEST_DIR"), name);
    return buffer;
}

static uint64_t await_race_start(void) {
    char ready[700], go[700];
    snprintf(ready, sizeof ready, "%s/race-ready-%d", getenv("VGPU_TEST_DIR"), (int)getpid());
    int fd = open(ready, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) return 0;
    close(fd);
    race_file(go, sizeof go, "race-go");
    for (uint64_t deadline = vgpu_now_ns() + 60000000000ULL; vgpu_now_ns() < deadline;) {
        FILE *file = fopen(go, "r");
        unsigned long long start = 0;
        if (file != NULL) {
            int read = fscanf(file, "%llu", &start);
            fclose(file);
            if (read == 1 && start != 0) return start;
        }
        vgpu_sleep_until_ns(vgpu_now_ns() + 5000000ULL);
    }
    return 0;
}

int role_race_worker(int argc, char **argv) {
    (void)argc, (void)argv;
    CUcontext context;
    if (setup_primary_context(&context)) return 1;
    uint64_t start_ns = await_race_start();
    EXPECT(start_ns != 0, "the check gave the start within 60 s");
    struct race_thread threads[RACE_THREADS];
    pthread_t ids[RACE_THREADS];
    for (int i = 0; i < RACE_THREADS; i++) {
        threads[i] = (struct race_thread){.context = context, .start_ns = start_ns,
                                          .seed = (unsigned)(getpid() * 31 + i)};
        pthread_create(&ids[i], NULL, race_thread, &threads[i]);
    }
    unsigned long allocations = 0, refusals = 0, errors = 0;
    for (int i = 0; i < RACE_THREADS; i++) {
        pthread_join(ids[i], NULL);
        allocations += threads[i].allocations, refusals += threads[i].refusals, errors += threads[i].errors;
    }
    CU_OK(cuDevicePrimaryCtxRelease_v2(0));
    const char *results = getenv("VGPU_TEST_RESULTS");
    int fd = results != NULL ? open(results, O_WRONLY | O_APPEND | O_CREAT, 0644) : -1;
    EXPECT(fd >= 0, "VGPU_TEST_RESULTS names a writable file");
    char line[128];
    int length = snprintf(line, sizeof line, "%lu %lu %lu\n", allocations, refusals, errors);
    EXPECT(write(fd, line, (size_t)length) == length, "results written");
    close(fd);
    return errors == 0 ? 0 : 1;
}

int check_race(int argc, char **argv) {
    (void)argc, (void)argv;
    uint64_t limit = env_bytes("CUDA_DEVICE_MEMORY_LIMIT");
    pid_t workers[RACE_PROCESSES];
    for (int i = 0; i < RACE_PROCESSES; i++) workers[i] = spawn_self("race-worker", NULL);
    /* Every worker ready (its context made), then one start time for all, a little ahead. */
    char path[700], go[700];
    int ready = 0;
    for (uint64_t deadline = vgpu_now_ns() + 60000000000ULL; ready < RACE_PROCESSES && vgpu_now_ns() < deadline;) {
        ready = 0;
        for (int i = 0; i < RACE_PROCESSES; i++) {
            snprintf(path, sizeof path, "%s/race-ready-%d", getenv("VGPU_TEST_DIR"), (int)workers[i]);
            ready += access(path, F_OK) == 0;
        }
        if (ready < RACE_PROCESSES) vgpu_sleep_until_ns(vgpu_now_ns() + 5000000ULL);
    }
    EXPECT(ready == RACE_PROCESSES, "only %d of %d workers made their context within 60 s", ready, RACE_PROCESSES);
    char temporary[720];
    snprintf(temporary, sizeof temporary, "%s.new", race_file(go, sizeof go, "race-go"));
    FILE *start = fopen(temporary, "w");
    EXPECT(start != NULL, "start file writable");
    fprintf(start, "%llu\n", (unsigned long long)(vgpu_now_ns() + 200000000ULL));
    fclose(start);
    EXPECT(rename(temporary, go) == 0, "start file published");
    int failed_workers = 0;
    for (int i = 0; i < RACE_PROCESSES; i++) failed_workers += wait_child(workers[i]) != 0;
    EXPECT(failed_workers == 0, "%d worker(s) failed", failed_workers);
    unsigned long allocations = 0, refusals = 0, errors = 0, a, r, e;
    FILE *results = fopen(getenv("VGPU_TEST_RESULTS"), "r");
    EXPECT(results != NULL, "workers reported");
    while (fscanf(results, "%lu %lu %lu", &a, &r, &e) == 3) allocations += a, refusals += r, errors += e;
    fclose(results);
    struct mock_state *state = mock_state_for_tests();
    const struct vgpu_region *region = map_region();
    EXPECT(state != NULL && region != NULL, "mock state and shared region readable");
    uint64_t device_peak = atomic_load(&state->devices[0].peak_bytes);
    uint64_t region_peak = atomic_load(&region->devices[0].memory_peak);
    fprintf(stderr, "  %lu allocations, %lu refused; device memory peaked at %llu, charges at %llu, limit %llu\n",
            allocations, refusals, (unsigned long long)device_peak, (unsigned long long)region_peak, (unsigned long long)limit);
    EXPECT(allocations > 1000 && refusals > 100, "the race reached the limit (%lu allocations, %lu refusals)",
           allocations, refusals);
    EXPECT(real_gpu() || device_peak <= limit, "device memory peaked %llu bytes over the limit",
           (unsigned long long)(device_peak - limit));
    EXPECT(region_peak <= limit, "charges peaked %llu bytes over the limit", (unsigned long long)(region_peak - limit));
    EXPECT(atomic_load(&region->devices[0].memory_used) == 0, "%llu bytes still charged after all workers exited",
           (unsigned long long)atomic_load(&region->devices[0].memory_used));
    return 0;
}

int role_kill_holder(int argc, char **argv) {
    (void)argc, (void)argv;
    CUcontext context;
    if (setup_primary_context(&context)) return 1;
    CUdeviceptr pointer = 0;
    CU_OK(cuMemAlloc_v2(&pointer, 768 * MIB));
    char marker[600];
    snprintf(marker, sizeof marker, "%s/holder.ready", getenv("VGPU_TEST_DIR"));
    int fd = open(marker, O_WRONLY | O_CREAT, 0644);
    EXPECT(fd >= 0, "marker %s created", marker);
    close(fd);
    for (;;) pause(); /* until SIGKILL */
}

int check_kill_reclaim(int argc, char **argv) {
    (void)argc, (void)argv;
    CUcontext context;
    if (setup_primary_context(&context)) return 1;
    size_t room = 0, total = 0, free_bytes = 0;
    if (memory_info(&room, &total)) return 1;
    char marker[600];
    snprintf(marker, sizeof marker, "%s/holder.ready", getenv("VGPU_TEST_DIR"));
    unlink(marker);
    pid_t holder = spawn_self("kill-holder", NULL);
    uint64_t deadline = vgpu_now_ns() + 10000000000ULL;
    while (access(marker, F_OK) != 0 && vgpu_now_ns() < deadline) vgpu_sleep_ns(10000000);
    EXPECT(access(marker, F_OK) == 0, "the holder allocated its memory");
    if (memory_info(&free_bytes, &total)) return 1;
    EXPECT(room - free_bytes >= 768 * MIB, "the holder's 768 MiB (and context) are charged: free went from %zu to %zu", room,
           free_bytes);
    CUdeviceptr pointer = 0;
    EXPECT_CU(cuMemAlloc_v2(&pointer, free_bytes + 1), CUDA_ERROR_OUT_OF_MEMORY);
    kill(holder, SIGKILL);
    uint64_t killed = vgpu_now_ns();
    wait_child(holder);
    while (free_bytes != room && vgpu_now_ns() - killed < 5000000000ULL) {
        vgpu_sleep_ns(20000000);
        if (memory_info(&free_bytes, &total)) return 1;
    }
    double seconds = (double)(vgpu_now_ns() - killed) / 1e9;
    fprintf(stderr, "  memory of the killed process back after %.2f s\n", seconds);
    EXPECT(free_bytes == room, "free %zu five seconds after the kill, wanted %zu", free_bytes, room);
    CU_OK(cuMemAlloc_v2(&pointer, room));
    CU_OK(cuMemFree_v2(pointer));
    return 0;
}
