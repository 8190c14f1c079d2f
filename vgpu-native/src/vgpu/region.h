/*
 * The per-container shared region: one memory-mapped file (CUDA_DEVICE_MEMORY_SHARED_CACHE) through
 * which the processes of a container share their memory usage per device, and from which the node
 * monitor reads per-container usage. Layout version 1, little-endian, fixed offsets (README.md,
 * "Shared region"); readers must check magic and version and treat unknown versions as unreadable.
 *
 *   offset 0       header        4096 bytes
 *   offset 4096    devices[16]   256 bytes each, indexed by CUDA ordinal (with VGPU_DEVICES: by place in it)
 *   offset 8192    slots[1024]   576 bytes each, one per process
 *
 * Every process of the container can write this file, so nothing in it is trusted with a limit: limits
 * come from the limits file or the environment, each process also books its own allocations privately,
 * and a region whose header or usage cannot be true is corrupt and refuses allocations.
 *
 * Every process holds a read lock (fcntl OFD) on the file while attached. A process that obtains
 * the write lock is therefore alone: it (re)initialises the region, so stale counters or limits
 * from dead processes never survive, and a file in another layout is replaced.
 */
#ifndef VGPU_REGION_H
#define VGPU_REGION_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define VGPU_REGION_MAGIC 0x3147455255504756ULL /* "VGPUREG1" */
#define VGPU_REGION_VERSION 1U
#define VGPU_REGION_DEVICES 16
#define VGPU_REGION_SLOTS 1024

enum vgpu_slot_state { VGPU_SLOT_FREE = 0, VGPU_SLOT_CLAIMING = 1, VGPU_SLOT_ACTIVE = 2, VGPU_SLOT_RECLAIMING = 3 };

struct vgpu_region_header {
    uint64_t magic;                    /*   0 */
    uint32_t version;                  /*   8 */
    uint32_t header_size;              /*  12: 4096 */
    uint32_t device_count;             /*  16: entries in the device table (16) */
    uint32_t device_size;              /*  20: 256 */
    uint32_t slot_count;               /*  24: 1024 */
    uint32_t slot_size;                /*  28: 576 */
    uint64_t devices_offset;           /*  32: 4096 */
    uint64_t slots_offset;             /*  40: 8192 */
    uint64_t created_unix_ns;          /*  48: CLOCK_REALTIME when initialised */
    uint32_t reserved0;                /*  56: was the compute switch; never read (a container could write it) */
    int32_t priority;                  /*  60: CUDA_TASK_PRIORITY */
    uint32_t policy;                   /*  64: GPU_CORE_UTILIZATION_POLICY: 0 default, 1 force, 2 disable */
    uint32_t flags;                    /*  68: bit 0 CUDA_OVERSUBSCRIBE */
    _Atomic uint32_t probe_owner;      /*  72: pid measuring a new context's memory, 0 = none */
    uint32_t visible_devices;          /*  76: CUDA devices the container's processes see */
    char limits_source[256];           /*  80: where the limits came from */
    uint8_t reserved[4096 - 336];      /* 336 */
};

/* A compute pacer (controller.c): a token bucket in wall time, charged per thread launched. The
 * container's processes share the one in their device entry, so a container is paced as one; a process
 * whose own share that one does not hold (the region was rewritten) switches to a private copy. */
struct vgpu_pace {
    _Atomic uint64_t next_ns;          /*  0: the budget is spent up to here (CLOCK_MONOTONIC) */
    _Atomic uint64_t budget_bits;      /*  8: double, wall ns per thread launched; 0 = not calibrated */
    _Atomic uint64_t units;            /* 16: threads launched, cumulative */
    _Atomic uint64_t waits;            /* 24: launches held back, cumulative */
    _Atomic uint64_t units_seen;       /* 32: units at the last controller step */
    _Atomic uint64_t waits_seen;       /* 40: waits at the last controller step */
    _Atomic uint64_t step_us;          /* 48: CLOCK_REALTIME us of the last controller step (its lease) */
    _Atomic uint64_t origin_ns;        /* 56: first launch before calibration (CLOCK_MONOTONIC), 0 = none */
    _Atomic uint64_t hold_until_ns;    /* 64: start-up debt paid back until here; the budget is held till then */
    _Atomic uint64_t launched;         /* 72: 1 once a launch was paced since the last controller step */
};

struct vgpu_region_device {
    char uuid[96];                     /*   0: UUID of this CUDA ordinal, "" until a CUDA process learns it (the
                                        *      granted card's with VGPU_DEVICES, from the start) */
    uint64_t memory_limit;             /*  96: bytes, 0 = no limit; for the monitor, never enforced from here */
    uint32_t sm_limit;                 /* 104: percent, 0 = no limit; for the monitor */
    uint32_t reserved0;                /* 108 */
    _Atomic uint64_t memory_used;      /* 112: bytes charged by all processes: allocations + context memory */
    _Atomic uint64_t memory_peak;      /* 120: high-water mark of memory_used */
    _Atomic uint64_t last_kernel_ns;   /* 128: CLOCK_REALTIME of the last launch seen (1 s resolution) */
    _Atomic uint32_t sm_util_permille; /* 136: the container's compute utilization, last controller tick */
    _Atomic uint32_t sm_limit_permille;/* 140: the utilization the controller is steering to */
    _Atomic uint64_t throttled_ns;     /* 144: total time launches were held back */
    _Atomic uint64_t context_bytes;    /* 152: memory the last context created on this device took */
    struct vgpu_pace pace;             /* 160: the container's compute pacer */
    uint8_t reserved[256 - 240];       /* 240 */
};

struct vgpu_region_slot_device {
    _Atomic uint64_t memory_used;      /*  0: bytes this process has charged, context memory included */
    _Atomic uint64_t context_bytes;    /*  8: part of memory_used that is context memory */
    _Atomic uint32_t sm_util_permille; /* 16: this process's utilization, last controller tick */
    uint32_t reserved;                 /* 20 */
    _Atomic uint64_t last_kernel_ns;   /* 24 */
};

struct vgpu_region_slot {
    _Atomic uint32_t state;            /*  0: enum vgpu_slot_state */
    int32_t pid;                       /*  4: pid in the container's namespace */
    uint64_t start_ticks;              /*  8: start time, to tell a reused pid apart */
    _Atomic int32_t host_pid;          /* 16: pid as NVML reports it, 0 = unknown */
    uint32_t reserved0;                /* 20 */
    uint64_t reserved1[5];             /* 24 */
    struct vgpu_region_slot_device devices[VGPU_REGION_DEVICES]; /* 64 */
};

struct vgpu_region {
    struct vgpu_region_header header;
    struct vgpu_region_device devices[VGPU_REGION_DEVICES];
    struct vgpu_region_slot slots[VGPU_REGION_SLOTS];
};

_Static_assert(sizeof(struct vgpu_region_header) == 4096, "region header is 4096 bytes");
_Static_assert(sizeof(struct vgpu_region_device) == 256, "region device entry is 256 bytes");
_Static_assert(sizeof(struct vgpu_region_slot_device) == 32, "region slot device entry is 32 bytes");
_Static_assert(sizeof(struct vgpu_region_slot) == 576, "region slot is 576 bytes");
_Static_assert(offsetof(struct vgpu_region_header, limits_source) == 80, "region header layout");
_Static_assert(offsetof(struct vgpu_region_device, memory_used) == 112, "region device layout");
_Static_assert(offsetof(struct vgpu_region_device, throttled_ns) == 144, "region device layout");
_Static_assert(offsetof(struct vgpu_region_device, context_bytes) == 152, "region device layout");
_Static_assert(offsetof(struct vgpu_region_device, pace) == 160 && sizeof(struct vgpu_pace) == 80, "region device layout");
_Static_assert(offsetof(struct vgpu_region_slot, devices) == 64, "region slot layout");
_Static_assert(offsetof(struct vgpu_region, devices) == 4096, "region device table offset");
_Static_assert(offsetof(struct vgpu_region, slots) == 8192, "region slot table offset");

struct vgpu_config;

/* Maps the region (creating or re-initialising it when this process is alone), or NULL after logging
 * (also when a live region's header is not this layout's). */
struct vgpu_region *vgpu_region_attach(const struct vgpu_config *config);
/* This process's slot, claimed on first call; NULL if all slots belong to live processes. */
struct vgpu_region_slot *vgpu_region_claim_slot(struct vgpu_region *region);
/* Returns the charges of processes that died without cleaning up; the number of slots reclaimed. */
unsigned vgpu_region_reap(struct vgpu_region *region);
/* Gives this process's charges back at a normal exit. */
void vgpu_region_leave(struct vgpu_region *region, struct vgpu_region_slot *slot);

/* True when the header still describes this layout (magic, version, sizes, offsets). */
bool vgpu_region_intact(const struct vgpu_region *region);

enum vgpu_charge { VGPU_CHARGED, VGPU_OVER_LIMIT, VGPU_CORRUPT };

/* Atomic check-and-add against the device's limit (no limit: always succeeds). VGPU_CORRUPT when the
 * device's usage already exceeds the limit, which no process under that limit can have caused. */
enum vgpu_charge vgpu_region_charge(struct vgpu_region *region, struct vgpu_region_slot *slot, int ordinal,
                                    uint64_t bytes, uint64_t limit);
void vgpu_region_uncharge(struct vgpu_region *region, struct vgpu_region_slot *slot, int ordinal, uint64_t bytes);

#endif
