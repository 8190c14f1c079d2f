/*
 * The compute limit (CUDA_DEVICE_SM_LIMIT) and the housekeeping thread.
 *
 * Actuator: a pacer per device. Each launch costs (threads in the launch) * budget wall-clock
 * nanoseconds; launches are admitted at that rate (a generic cell-rate algorithm: one atomic
 * compare-and-swap, a sleep only when ahead of the budget, a small burst allowance after idling).
 *
 * Controller: every TICK the achieved utilization u of the container on the device is measured with
 * NVML (per-process utilization of the container's processes; the whole device's if their pids are not
 * visible), and the budget is corrected multiplicatively, budget *= (u / target)^ALPHA, which is an
 * integral controller in log space: it converges to u = target whatever the kernels' cost per thread.
 * The first measurement calibrates the budget directly (cost per thread / target). When u is below the
 * target while no launch waited, the program simply asks for less: the budget is held (anti-windup).
 *
 * This process's own samples always count, by the host pid it learnt itself: another process that
 * rewrites the pids in the shared region can hide its own use from the others, not this one's from it.
 */
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "vgpu/vgpu.h"

#define TICK_NS 100000000ULL          /* controller period and measurement window */
#define HOUSEKEEPING_NS 1000000000ULL /* reaping dead processes, last-kernel time */
#define BURST_NS 2000000ULL           /* budget an idle process may spend at once */
#define BLIND_TICKS_BEFORE_FALLBACK 3

struct pacer {
    _Atomic uint64_t next_ns;        /* the budget is spent up to here (CLOCK_MONOTONIC) */
    _Atomic uint64_t budget_bits;    /* double: wall ns per thread launched; 0 = not calibrated yet */
    _Atomic uint64_t units;          /* threads launched, cumulative */
    _Atomic uint64_t waits;          /* launches held back, cumulative */
};

struct controller_state {
    uint64_t units_seen;
    uint64_t waits_seen;
    uint64_t last_wall_us;
    unsigned blind_ticks;
    bool device_fallback;
    nvmlDevice_t handle;
};

static struct pacer pacers[VGPU_MAX_DEVICES];
static struct controller_state controllers[VGPU_MAX_DEVICES];

static double load_budget(const struct pacer *pacer) {
    uint64_t bits = atomic_load_explicit(&pacer->budget_bits, memory_order_relaxed);
    double value;
    memcpy(&value, &bits, sizeof value);
    return value;
}

static void store_budget(struct pacer *pacer, double value) {
    uint64_t bits;
    memcpy(&bits, &value, sizeof bits);
    atomic_store_explicit(&pacer->budget_bits, bits, memory_order_relaxed);
}

/* "default" enforces like "force": no switch outside the configuration can lift a compute limit. */
static bool limiting_enabled(void) { return runtime.config->policy != VGPU_POLICY_DISABLE; }

void vgpu_set_host_pid(pid_t host_pid) {
    atomic_store(&runtime.host_pid, (int32_t)host_pid);
    struct vgpu_region_slot *slot = vgpu_own_slot();
    if (slot != NULL) atomic_store(&slot->host_pid, (int32_t)host_pid); /* for the other processes and the monitor */
    LOG_INFO("NVML knows this process as pid %d", (int)host_pid);
}

void vgpu_sm_gate(CUstream stream, uint64_t units) {
    if (__builtin_expect(atomic_load_explicit(&runtime.slot, memory_order_relaxed) == NULL, 0))
        vgpu_own_slot(); /* a forked child: its own slot, and a housekeeping thread to steer the budget */
    int ordinal = 0;
    if (vgpu_stream_ordinal(stream, &ordinal) != CUDA_SUCCESS || !vgpu_ordinal_limited(ordinal) ||
        runtime.devices[ordinal].sm_limit == 0 || !limiting_enabled())
        return;
    struct pacer *pacer = &pacers[ordinal];
    atomic_fetch_add_explicit(&pacer->units, units, memory_order_relaxed);
    double budget = load_budget(pacer);
    if (budget <= 0) return; /* first tick not measured yet */
    double wanted = (double)units * budget;
    uint64_t cost = wanted > 1e12 ? 1000000000000ULL : (uint64_t)wanted;
    uint64_t now = vgpu_now_ns(), floor = now > BURST_NS ? now - BURST_NS : 0;
    uint64_t next = atomic_load_explicit(&pacer->next_ns, memory_order_relaxed), start;
    do {
        start = next > floor ? next : floor;
    } while (!atomic_compare_exchange_weak_explicit(&pacer->next_ns, &next, start + cost, memory_order_relaxed,
                                                    memory_order_relaxed));
    if (start > now) {
        atomic_fetch_add_explicit(&pacer->waits, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&runtime.region->devices[ordinal].throttled_ns, start - now, memory_order_relaxed);
        vgpu_sleep_until_ns(start);
    }
}

/* ---- measurement --------------------------------------------------------------------------- */

/* Utilization (0..1) of the container's processes on the device since last_wall_us, or -1 when NVML
 * has nothing to say about them. */
static bool pid_of_container(const struct vgpu_region *region, unsigned pid) {
    for (int s = 0; s < VGPU_REGION_SLOTS; s++) {
        const struct vgpu_region_slot *slot = &region->slots[s];
        if (atomic_load_explicit(&slot->state, memory_order_acquire) != VGPU_SLOT_ACTIVE) continue;
        int32_t host = atomic_load(&slot->host_pid);
        if ((host > 0 ? (unsigned)host : (unsigned)slot->pid) == pid) return true;
    }
    return false;
}

static double container_utilization(struct controller_state *state, struct vgpu_region *region, uint64_t *own_permille) {
    if (real.nvmlDeviceGetProcessUtilization == NULL) return -1;
    nvmlProcessUtilizationSample_t samples[128];
    unsigned count = 128;
    nvmlReturn_t result = real.nvmlDeviceGetProcessUtilization(state->handle, samples, &count, state->last_wall_us);
    if (result == NVML_ERROR_NOT_FOUND) return 0; /* no process used the device in the window */
    if (result != NVML_SUCCESS) return -1;
    unsigned total = 0, matched = 0;
    int32_t known = atomic_load(&runtime.host_pid);
    unsigned self = known > 0 ? (unsigned)known : (unsigned)getpid();
    for (unsigned i = 0; i < count && i < 128; i++) {
        bool own = samples[i].pid == self;
        if (!own && !pid_of_container(region, samples[i].pid)) continue;
        total += samples[i].smUtil;
        matched++;
        if (own) *own_permille = samples[i].smUtil * 10ULL;
    }
    return matched > 0 ? total / 100.0 : -1;
}

static double device_utilization(struct controller_state *state) {
    nvmlUtilization_t utilization;
    return real.nvmlDeviceGetUtilizationRates != NULL &&
                   real.nvmlDeviceGetUtilizationRates(state->handle, &utilization) == NVML_SUCCESS
               ? utilization.gpu / 100.0
               : -1;
}

/* One line when a device's compute limit cannot be measured, so it is not enforced: never silently. */
static void report_unmeasurable(int ordinal, const char *why) {
    static _Atomic uint32_t reported; /* one bit per device */
    if (atomic_fetch_or(&reported, 1U << ordinal) & (1U << ordinal)) return;
    LOG_ERROR("compute limit of device %d is not enforced: %s", ordinal, why);
}

static void control(int ordinal, uint64_t wall_us) {
    struct controller_state *state = &controllers[ordinal];
    struct pacer *pacer = &pacers[ordinal];
    struct vgpu_region *region = runtime.region;
    if (state->handle == NULL) state->handle = vgpu_nvml_handle_of(ordinal);
    uint64_t units = atomic_load(&pacer->units), waits = atomic_load(&pacer->waits);
    uint64_t launched = units - state->units_seen, waited = waits - state->waits_seen;
    double window_ns = (double)(wall_us - state->last_wall_us) * 1000.0;
    state->units_seen = units;
    state->waits_seen = waits;
    if (state->handle == NULL && launched > 0) report_unmeasurable(ordinal, "NVML cannot find the device");
    if (real.nvmlDeviceGetProcessUtilization == NULL && real.nvmlDeviceGetUtilizationRates == NULL && launched > 0)
        report_unmeasurable(ordinal, "NVML has neither nvmlDeviceGetProcessUtilization nor nvmlDeviceGetUtilizationRates");
    if (state->handle == NULL || state->last_wall_us == 0 || !limiting_enabled()) {
        state->last_wall_us = wall_us;
        return;
    }
    uint64_t own_permille = 0;
    double utilization = state->device_fallback ? device_utilization(state)
                                                : container_utilization(state, region, &own_permille);
    state->last_wall_us = wall_us;
    if (utilization < 0 && launched > 0 && !state->device_fallback && ++state->blind_ticks >= BLIND_TICKS_BEFORE_FALLBACK) {
        state->device_fallback = true;
        LOG_WARN("device %d: NVML reports no utilization for this container's pids; limiting on whole-device utilization",
                 ordinal);
    }
    if (utilization < 0) return;
    state->blind_ticks = 0;
    atomic_store(&region->devices[ordinal].sm_util_permille, (uint32_t)(utilization * 1000.0 + 0.5));
    struct vgpu_region_slot *slot = vgpu_own_slot();
    if (slot != NULL) atomic_store(&slot->devices[ordinal].sm_util_permille, (uint32_t)own_permille);
    double target = runtime.devices[ordinal].sm_limit / 100.0;
    double budget = load_budget(pacer);
    LOG_DEBUG("device %d: utilization %.3f (target %.2f), %llu threads launched, %llu waits, budget %.4g ns/thread",
              ordinal, utilization, target, (unsigned long long)launched, (unsigned long long)waited, budget);
    if (budget <= 0) {
        /* Calibrate: GPU time per thread launched, spread so that it fills `target` of wall time. */
        if (launched > 0 && utilization > 0) store_budget(pacer, utilization * window_ns / (double)launched / target);
        return;
    }
    double ratio = utilization / target;
    if (ratio > 1.0 || waited > 0) {
        double factor = sqrt(ratio > 0 ? ratio : 0.01); /* (u / target)^0.5 */
        factor = factor < 0.5 ? 0.5 : factor > 2.0 ? 2.0 : factor;
        store_budget(pacer, budget * factor);
    }
}

/* ---- housekeeping thread ------------------------------------------------------------------- */

static void record_kernel_activity(uint64_t wall_ns) {
    if (!atomic_exchange_explicit(&runtime.launched, 0, memory_order_relaxed)) return;
    struct vgpu_region_slot *slot = atomic_load(&runtime.slot);
    for (int ordinal = 0; slot != NULL && ordinal < runtime.device_count; ordinal++) {
        if (atomic_load(&slot->devices[ordinal].context_bytes) == 0 && atomic_load(&slot->devices[ordinal].memory_used) == 0)
            continue;
        atomic_store(&slot->devices[ordinal].last_kernel_ns, wall_ns);
        atomic_store(&runtime.region->devices[ordinal].last_kernel_ns, wall_ns);
    }
}

/* Runs for the life of the process (a forked child has no copy of this thread). */
static void *housekeeping(void *unused) {
    (void)unused;
    uint64_t next_reap = 0;
    while (true) {
        uint64_t now = vgpu_now_ns();
        if (now >= next_reap) {
            vgpu_region_reap(runtime.region);
            record_kernel_activity(vgpu_wall_ns());
            next_reap = now + HOUSEKEEPING_NS;
        }
        bool limited = atomic_load(&runtime.any_sm_limit) != 0;
        if (limited && vgpu_load_nvml()) {
            uint64_t wall_us = vgpu_wall_ns() / 1000;
            for (int ordinal = 0; ordinal < runtime.device_count; ordinal++)
                if (runtime.devices[ordinal].sm_limit > 0) control(ordinal, wall_us);
            vgpu_sleep_until_ns(now + TICK_NS);
        } else {
            for (int ordinal = 0; limited && ordinal < runtime.device_count; ordinal++)
                if (runtime.devices[ordinal].sm_limit > 0) report_unmeasurable(ordinal, "libnvidia-ml.so.1 is not usable");
            vgpu_sleep_until_ns(next_reap);
        }
    }
    return NULL;
}

/* The housekeeping thread was not forked; the pacers' budgets carry on until the child's own thread,
 * started with its slot, measures again. */
void vgpu_controller_after_fork(void) { memset(controllers, 0, sizeof controllers); }

void vgpu_controller_start(void) {
    if (runtime.config->policy == VGPU_POLICY_DISABLE) atomic_store(&runtime.any_sm_limit, 0);
    pthread_t thread;
    pthread_attr_t attributes;
    pthread_attr_init(&attributes);
    pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attributes, 256 * 1024);
    /* Housekeeping must not see the program's signals. */
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &previous);
    int error = pthread_create(&thread, &attributes, housekeeping, NULL);
    pthread_sigmask(SIG_SETMASK, &previous, NULL);
    pthread_attr_destroy(&attributes);
    if (error != 0) LOG_WARN("cannot start the housekeeping thread (error %d): no compute limit, no reclaim by time", error);
}
