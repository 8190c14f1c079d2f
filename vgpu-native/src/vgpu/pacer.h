/*
 * The compute pacer's launch path (controller.c has the rest): inlined into the launch hooks, so that a
 * launch under a compute limit on a container's only device costs a few loads, one read of the coarse
 * clock and one compare-and-swap on the container's pacer, and calls out only to wait.
 */
#ifndef VGPU_PACER_H
#define VGPU_PACER_H

#include <string.h>

#include "common/util.h"
#include "vgpu/vgpu.h"

#define VGPU_MAX_BUDGET_NS 1e9     /* per thread: no controller writes more */
#define VGPU_BURST_NS 2000000ULL   /* budget an idle container may spend at once */

/* Processes whose container's pacer does not hold them pace themselves on a private one. */
extern struct vgpu_pace vgpu_private_paces[VGPU_MAX_DEVICES];
extern _Atomic uint32_t vgpu_private_devices; /* one bit per ordinal */

static inline struct vgpu_pace *vgpu_pace_of(int ordinal) {
    return (atomic_load_explicit(&vgpu_private_devices, memory_order_relaxed) >> ordinal) & 1U
               ? &vgpu_private_paces[ordinal]
               : &runtime.region->devices[vgpu_region_entry(ordinal)].pace;
}

static inline double vgpu_pace_budget(const struct vgpu_pace *pace) {
    uint64_t bits = atomic_load_explicit(&pace->budget_bits, memory_order_relaxed);
    double value;
    memcpy(&value, &bits, sizeof value);
    return value;
}

/* Takes a launch of `units` threads out of the budget: the time it may start. The coarse clock lags by
 * at most a tick, so the budget it admits at once is spent in real time too (the burst allowance after
 * idling grows by at most that tick); *now is that clock. One launch never waits longer than
 * VGPU_MAX_LAUNCH_WAIT_NS: the debt beyond it is forgiven. */
static inline uint64_t vgpu_pace_reserve(struct vgpu_pace *pace, double budget, uint64_t units, uint64_t *now) {
    double wanted = (double)units * budget;
    uint64_t cost = wanted < (double)VGPU_MAX_LAUNCH_WAIT_NS ? (uint64_t)wanted : VGPU_MAX_LAUNCH_WAIT_NS;
    uint64_t coarse = vgpu_coarse_now_ns(), floor = coarse > VGPU_BURST_NS ? coarse - VGPU_BURST_NS : 0;
    uint64_t latest = coarse + VGPU_MAX_LAUNCH_WAIT_NS;
    /* Read before writing: the line stays shared while the flag is set, as it is between two steps. */
    if (!atomic_load_explicit(&pace->launched, memory_order_relaxed))
        atomic_store_explicit(&pace->launched, 1, memory_order_relaxed);
    uint64_t next = atomic_load_explicit(&pace->next_ns, memory_order_relaxed), start;
    do {
        start = next > floor ? next : floor;
        if (start > latest) start = latest;
    } while (!atomic_compare_exchange_weak_explicit(&pace->next_ns, &next, start + cost, memory_order_relaxed,
                                                    memory_order_relaxed));
    *now = coarse;
    return start;
}

/* Holds the launch until start (CLOCK_MONOTONIC) if the precise clock is not there yet. */
void vgpu_pace_hold(struct vgpu_pace *pace, int ordinal, uint64_t start);

/* Every launch under a compute limit: the common case here, the rest in vgpu_sm_gate. */
__attribute__((always_inline)) static inline void vgpu_pace_launch(CUstream stream, uint64_t units) {
    if (__builtin_expect(runtime.device_count != 1 || atomic_load_explicit(&runtime.slot, memory_order_relaxed) == NULL ||
                             atomic_load_explicit(&vgpu_capturing_streams, memory_order_relaxed) != 0,
                         0)) {
        vgpu_sm_gate(stream, units);
        return;
    }
    if (runtime.devices[0].sm_limit == 0 || runtime.config->policy == VGPU_POLICY_DISABLE) return;
    struct vgpu_pace *pace = vgpu_pace_of(0);
    double budget = vgpu_pace_budget(pace);
    if (__builtin_expect(!(budget > 0 && budget <= VGPU_MAX_BUDGET_NS), 0)) {
        vgpu_sm_gate(stream, units); /* not calibrated yet, or not a budget a controller wrote */
        return;
    }
    uint64_t now, start = vgpu_pace_reserve(pace, budget, units, &now);
    if (start > now) vgpu_pace_hold(pace, 0, start);
}

#endif
