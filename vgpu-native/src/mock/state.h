/*
 * The mocks' machine-wide state, shared by every process that loads a mock library: device memory in
 * use, the processes using the mock driver, the virtual device clock and its busy accounting, and
 * injected failures. It lives in ONE memory-mapped file:
 *
 *   $VGPU_MOCK_STATE, default /dev/shm/vgpu-mock-<uid>.state (/tmp when /dev/shm is absent).
 *
 * Tests isolate themselves by pointing VGPU_MOCK_STATE at a temporary path. The file is created on
 * first use, sparse (pages are touched only as processes and devices are used), and reset when its
 * layout version differs. All fields are updated with atomic operations; no process ever holds a lock
 * across a call, so a process killed at any point cannot wedge the others.
 */
#ifndef VGPU_MOCK_STATE_H
#define VGPU_MOCK_STATE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "mock/config.h"

#define MOCK_STATE_MAGIC 0x4554415453434f4dULL /* "MOCSTATE" */
#define MOCK_STATE_VERSION 1U
#define MOCK_MAX_PROCESSES 64
#define MOCK_BUCKET_NS 1000000ULL   /* busy accounting resolution: 1 ms */
#define MOCK_BUCKETS 4096           /* ring of 4.096 s: 3 s of history + the 1 s the device may be booked ahead */
#define MOCK_MAX_AHEAD_NS 1000000000ULL
#define MOCK_XID_RING 16

/* Busy nanoseconds per 1 ms bucket; each slot packs (bucket number << 20) | busy ns, so a stale slot is
 * recognised and restarted with one compare-and-swap. */
struct mock_timeline {
    _Atomic uint64_t slots[MOCK_BUCKETS];
};

struct mock_state_device {
    char uuid[48];
    _Atomic uint64_t used_bytes;       /* device memory in use, all processes */
    _Atomic uint64_t peak_bytes;       /* high-water mark of used_bytes since the state was created */
    _Atomic uint64_t busy_until_ns;    /* CLOCK_MONOTONIC time at which the last booked kernel ends */
    _Atomic uint64_t busy_total_ns;    /* sum of all kernel durations ever booked */
    _Atomic uint32_t lost;             /* 1: fallen off the bus */
    _Atomic uint32_t xid_count;        /* Xid events raised so far */
    _Atomic uint64_t xid_codes[MOCK_XID_RING]; /* code of event n at [n % MOCK_XID_RING] */
    struct mock_timeline timeline;
};

struct mock_state_process_device {
    _Atomic uint64_t used_bytes;
    _Atomic uint32_t contexts;
    uint32_t reserved;
    _Atomic uint64_t busy_total_ns;
    struct mock_timeline timeline;
};

enum mock_slot_state { MOCK_SLOT_FREE = 0, MOCK_SLOT_CLAIMING = 1, MOCK_SLOT_ACTIVE = 2, MOCK_SLOT_RECLAIMING = 3 };

struct mock_state_process {
    _Atomic uint32_t state;
    int32_t pid;
    uint64_t start_ticks;
    struct mock_state_process_device devices[MOCK_MAX_DEVICES];
};

struct mock_state_header {
    uint64_t magic;
    uint32_t version;
    uint32_t device_count; /* highest device count any process configured */
    uint64_t size;         /* sizeof(struct mock_state) */
};

struct mock_state {
    struct mock_state_header header;
    struct mock_state_device devices[MOCK_MAX_DEVICES];
    struct mock_state_process processes[MOCK_MAX_PROCESSES];
};

/* Maps the state file (creating it if needed); NULL after logging if it cannot. */
struct mock_state *mock_state_attach(const struct mock_config *config);
/* The path of the state file this process uses. */
const char *mock_state_path(void);

/* This process's slot, registered on first call; NULL if all slots are taken by live processes. */
struct mock_state_process *mock_state_register_process(struct mock_state *state);
/* Returns the memory of processes that have exited or were killed; returns the slots reclaimed. */
unsigned mock_state_reap(struct mock_state *state);

/* Atomically books bytes on a device if the device has room; false means out of memory. */
bool mock_state_charge(struct mock_state *state, struct mock_state_process *process, unsigned device,
                       uint64_t bytes, uint64_t capacity);
void mock_state_uncharge(struct mock_state *state, struct mock_state_process *process, unsigned device, uint64_t bytes);

/* Books a kernel of duration_ns on the device's virtual clock after everything already booked
 * (FIFO across all processes) and returns its end time. Blocks while the device is booked more than
 * MOCK_MAX_AHEAD_NS ahead, like a full launch queue. */
uint64_t mock_state_book_kernel(struct mock_state *state, struct mock_state_process *process, unsigned device,
                                uint64_t duration_ns);
/* Busy time within [from_ns, to_ns) (CLOCK_MONOTONIC) on a device, or of one process on it. */
uint64_t mock_timeline_busy_ns(const struct mock_timeline *timeline, uint64_t from_ns, uint64_t to_ns);

/* Failure injection. */
void mock_state_set_lost(struct mock_state *state, unsigned device, bool lost);
void mock_state_raise_xid(struct mock_state *state, unsigned device, uint64_t xid);

#endif
