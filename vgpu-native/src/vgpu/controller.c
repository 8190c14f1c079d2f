/*
 * The compute limit (CUDA_DEVICE_SM_LIMIT) and the housekeeping thread.
 *
 * Actuator: a pacer per device (struct vgpu_pace). Each launch costs (threads in the launch) x budget
 * wall-clock nanoseconds; launches are admitted at that rate (a generic cell-rate algorithm: one
 * compare-and-swap against the coarse monotonic clock, the precise clock and a sleep only when ahead of
 * the budget, a small burst allowance after idling). Threads launched are counted only until the
 * first measurement has calibrated the budget.
 * The pacer lives in the container's shared region, so all processes of a container draw from the same
 * budget: the container is paced as one whatever its number of processes, and a process that starts in
 * a container already calibrated is paced from its first launch.
 *
 * Controller: every TICK one process of the container (whichever takes the step's lease first) measures
 * the container's achieved utilization u of the device over the window since the last step with NVML
 * (per-process utilization of the container's processes; the whole device's if their pids are not
 * visible), and corrects the budget multiplicatively, budget *= (u / target)^0.5: integral action in log
 * space, which converges to u = target whatever the kernels' cost per thread. The first measurement
 * calibrates the budget (the container's GPU time per thread launched, spread over `target` of wall
 * time) and makes the container pay back what it used while unpaced: the pacer is held until the
 * container's average since its first launch is back at the target. When u is below the target while no
 * launch waited, the program simply asks for less: the budget is held (anti-windup).
 *
 * One launch never waits longer than MAX_WAIT_NS; debt beyond that is forgiven.
 *
 * The region is a file every process of the container can write. Each process therefore also measures
 * its own utilization, by the host pid it learnt itself (another process that rewrites the pids in the
 * region cannot hide this one's use from it). When the container's pacer does not hold this process to
 * the limit (its budget is not one a controller wrote, it was reset, or this process alone exceeded the
 * limit by GUARD_POINTS for GUARD_TICKS ticks in a row), the process paces itself on a private pacer
 * steered on its own utilization for the rest of its life, and says so once.
 */
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "vgpu/pacer.h"
#include "vgpu/vgpu.h"

#define TICK_NS 100000000ULL                /* controller period and measurement window */
#define TICK_US (TICK_NS / 1000)
#define STEP_MIN_US (TICK_US * 4 / 5)       /* a container's steps are at least this far apart */
#define STEP_MAX_US 1000000ULL              /* a longer window (no process was stepping) is not measured */
#define HOUSEKEEPING_NS 1000000000ULL       /* reaping dead processes, last-kernel time */
#define BLIND_TICKS_BEFORE_FALLBACK 3
#define GUARD_POINTS 3.0
#define GUARD_TICKS 10
#define MIN_FACTOR 0.5                      /* per step: at most twice as fast... */
#define MAX_FACTOR 4.0                      /* ...and at most four times slower (over the limit is worse) */
#define MIN_BUDGET_NS 1e-12                 /* per thread: a budget never reaches 0, which means "not calibrated" */

struct controller_state {
    nvmlDevice_t handle;
    unsigned blind_ticks;
    bool device_fallback;
    uint64_t own_since_us;  /* start of this process's own measurement window */
    uint64_t activity_seen; /* the pacer's units and bucket at the last tick, for "launched but not measurable" */
    unsigned over_ticks;    /* own windows in a row above the limit while the container's pacer had a budget */
    double last_budget;     /* the container's budget at the last tick, when it was one a controller wrote */
};

static struct controller_state controllers[VGPU_MAX_DEVICES];
struct vgpu_pace vgpu_private_paces[VGPU_MAX_DEVICES];
_Atomic uint32_t vgpu_private_devices;

_Atomic int vgpu_capturing_streams;

static double load_budget(const struct vgpu_pace *pace) { return vgpu_pace_budget(pace); }

static void store_budget(struct vgpu_pace *pace, double value) {
    uint64_t bits;
    memcpy(&bits, &value, sizeof bits);
    atomic_store_explicit(&pace->budget_bits, bits, memory_order_relaxed);
}

static bool budget_sane(double budget) { return budget >= 0 && budget <= VGPU_MAX_BUDGET_NS; }

/* What a controller writes stays within what the pacer and the guard accept as a budget. */
static double clamp_budget(double budget) {
    return budget > VGPU_MAX_BUDGET_NS ? VGPU_MAX_BUDGET_NS : budget < MIN_BUDGET_NS ? MIN_BUDGET_NS : budget;
}

static void raise_to(_Atomic uint64_t *word, uint64_t value) {
    uint64_t current = atomic_load_explicit(word, memory_order_relaxed);
    while (current < value && !atomic_compare_exchange_weak_explicit(word, &current, value, memory_order_relaxed,
                                                                     memory_order_relaxed)) {
    }
}

/* "default" enforces like "force": no switch outside the configuration can lift a compute limit. */
static bool limiting_enabled(void) { return runtime.config->policy != VGPU_POLICY_DISABLE; }

void vgpu_set_host_pid(pid_t host_pid) {
    atomic_store(&runtime.host_pid, (int32_t)host_pid);
    struct vgpu_region_slot *slot = vgpu_own_slot();
    if (slot != NULL) atomic_store(&slot->host_pid, (int32_t)host_pid); /* for the other processes and the monitor */
    LOG_INFO("NVML knows this process as pid %d", (int)host_pid);
}

/* ---- the pacer ------------------------------------------------------------------------------ */

static void distrust_container_pacer(int ordinal, const char *why);

void vgpu_pace_hold(struct vgpu_pace *pace, int ordinal, uint64_t start) {
    uint64_t now = vgpu_now_ns();
    if (start <= now) return;
    atomic_fetch_add_explicit(&pace->waits, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&runtime.region->devices[vgpu_region_entry(ordinal)].throttled_ns, start - now, memory_order_relaxed);
    vgpu_sleep_until_ns(start);
}

static void admit(struct vgpu_pace *pace, int ordinal, uint64_t units) {
    double budget = load_budget(pace);
    if (__builtin_expect(!(budget > 0 && budget <= VGPU_MAX_BUDGET_NS), 0)) {
        if (budget != 0) { /* NaN, negative, absurd: written by something other than a controller */
            distrust_container_pacer(ordinal, "its budget is not one a controller wrote");
            return;
        }
        /* Not calibrated yet: launches pass, counted for the calibration; the first measurement makes the
         * container pay them back from the time of the first one. */
        atomic_fetch_add_explicit(&pace->units, units, memory_order_relaxed);
        if (!atomic_load_explicit(&pace->launched, memory_order_relaxed))
            atomic_store_explicit(&pace->launched, 1, memory_order_relaxed);
        if (atomic_load_explicit(&pace->origin_ns, memory_order_relaxed) == 0) {
            uint64_t none = 0;
            atomic_compare_exchange_strong(&pace->origin_ns, &none, vgpu_now_ns());
        }
        return;
    }
    uint64_t now, start = vgpu_pace_reserve(pace, budget, units, &now);
    if (start > now) vgpu_pace_hold(pace, ordinal, start);
}

void vgpu_sm_gate(CUstream stream, uint64_t units) {
    if (__builtin_expect(atomic_load_explicit(&runtime.slot, memory_order_relaxed) == NULL, 0))
        vgpu_own_slot(); /* a forked child: its own slot, and a housekeeping thread to steer the budget */
    int ordinal = 0;
    /* With one device every stream is on it: no driver call to find out. */
    if (runtime.device_count != 1 && vgpu_stream_ordinal(stream, &ordinal) != CUDA_SUCCESS) return;
    if (!vgpu_ordinal_limited(ordinal) || runtime.devices[ordinal].sm_limit == 0 || !limiting_enabled()) return;
    /* Work recorded into a graph runs when the graph is launched, which is paced then. */
    if (__builtin_expect(atomic_load_explicit(&vgpu_capturing_streams, memory_order_relaxed) > 0, 0) &&
        vgpu_stream_capturing(stream))
        return;
    admit(vgpu_pace_of(ordinal), ordinal, units);
}

/* ---- measurement --------------------------------------------------------------------------- */

static bool pid_of_container(const struct vgpu_region *region, unsigned pid) {
    for (int s = 0; s < VGPU_REGION_SLOTS; s++) {
        const struct vgpu_region_slot *slot = &region->slots[s];
        if (atomic_load_explicit(&slot->state, memory_order_acquire) != VGPU_SLOT_ACTIVE) continue;
        int32_t host = atomic_load(&slot->host_pid);
        if ((host > 0 ? (unsigned)host : (unsigned)slot->pid) == pid) return true;
    }
    return false;
}

static unsigned own_pid(void) {
    int32_t known = atomic_load(&runtime.host_pid);
    return known > 0 ? (unsigned)known : (unsigned)getpid();
}

/* Utilization (0..1) since since_us: of the container's processes (its return value; -1 when NVML has
 * nothing to say about them) and of this process alone (*own; -1 when NVML has no sample of its pid
 * although some process used the device). */
static double utilization_since(nvmlDevice_t handle, uint64_t since_us, double *own) {
    *own = -1;
    if (real.nvmlDeviceGetProcessUtilization == NULL) return -1;
    nvmlProcessUtilizationSample_t samples[128];
    unsigned count = 128;
    nvmlReturn_t result = real.nvmlDeviceGetProcessUtilization(handle, samples, &count, since_us);
    if (result == NVML_ERROR_NOT_FOUND) { /* no process used the device in the window */
        *own = 0;
        return 0;
    }
    if (result != NVML_SUCCESS) return -1;
    unsigned total = 0, matched = 0, self = own_pid();
    for (unsigned i = 0; i < count && i < 128; i++) {
        bool mine = samples[i].pid == self;
        if (!mine && !pid_of_container(runtime.region, samples[i].pid)) continue;
        total += samples[i].smUtil;
        matched++;
        if (mine) *own = samples[i].smUtil / 100.0;
    }
    return matched > 0 ? total / 100.0 : -1;
}

static double device_utilization(nvmlDevice_t handle) {
    nvmlUtilization_t utilization;
    return real.nvmlDeviceGetUtilizationRates != NULL &&
                   real.nvmlDeviceGetUtilizationRates(handle, &utilization) == NVML_SUCCESS
               ? utilization.gpu / 100.0
               : -1;
}

/* One line when a device's compute limit cannot be measured, so it is not enforced: never silently. */
static void report_unmeasurable(int ordinal, const char *why) {
    static _Atomic uint32_t reported; /* one bit per device */
    if (atomic_fetch_or(&reported, 1U << ordinal) & (1U << ordinal)) return;
    LOG_ERROR("compute limit of device %d is not enforced: %s", ordinal, why);
}

/* ---- the controller ------------------------------------------------------------------------ */

/* One controller step of a pacer: `utilization` of the device was achieved over the window_ns that end
 * at now_ns, while `launched` threads were launched and `waited` launches were held back. */
static void steer(struct vgpu_pace *pace, int ordinal, double utilization, uint64_t window_ns, uint64_t now_ns,
                  uint64_t launched, uint64_t waited) {
    double target = runtime.devices[ordinal].sm_limit / 100.0;
    double budget = load_budget(pace);
    LOG_DEBUG("device %d: utilization %.3f (target %.2f), %llu threads launched, %llu waits, budget %.4g ns/thread",
              ordinal, utilization, target, (unsigned long long)launched, (unsigned long long)waited, budget);
    if (!budget_sane(budget)) return; /* the guard deals with it */
    uint64_t window_start = now_ns - window_ns;
    if (budget == 0) {
        if (launched == 0 || utilization <= 0) return;
        /* Calibrate: GPU time per thread launched, spread so that it fills `target` of wall time. */
        double used_ns = utilization * (double)window_ns;
        store_budget(pace, clamp_budget(used_ns / (double)launched / target));
        /* What the container used before it was paced is paid back: nothing more runs until its
         * average since the first launch is back at the target (at most one launch's longest wait). */
        uint64_t origin = atomic_load(&pace->origin_ns);
        uint64_t base = origin > window_start && origin <= now_ns ? origin : window_start;
        uint64_t repaid = base + (uint64_t)(used_ns / target);
        if (repaid > now_ns + VGPU_MAX_LAUNCH_WAIT_NS) repaid = now_ns + VGPU_MAX_LAUNCH_WAIT_NS;
        raise_to(&pace->next_ns, repaid);
        atomic_store(&pace->hold_until_ns, repaid);
        return;
    }
    /* While the start-up debt is paid back, launches wait by design: that says nothing about the budget. */
    if (window_start < atomic_load(&pace->hold_until_ns)) return;
    double ratio = utilization / target;
    if (ratio > 1.0 || waited > 0) {
        double factor = sqrt(ratio > 0 ? ratio : 0.01); /* (u / target)^0.5 */
        factor = factor < MIN_FACTOR ? MIN_FACTOR : factor > MAX_FACTOR ? MAX_FACTOR : factor;
        store_budget(pace, clamp_budget(budget * factor));
    }
}

/* The container's step, if this process takes its lease: at most one step per container and window. */
static void step_container(int ordinal, struct controller_state *state, uint64_t now_us, uint64_t now_ns) {
    struct vgpu_pace *pace = &runtime.region->devices[vgpu_region_entry(ordinal)].pace;
    uint64_t last = atomic_load(&pace->step_us);
    if (last != 0 && last <= now_us && now_us - last < STEP_MIN_US) return; /* another process stepped lately */
    if (!atomic_compare_exchange_strong(&pace->step_us, &last, now_us)) return;
    uint64_t units = atomic_load(&pace->units), waits = atomic_load(&pace->waits);
    uint64_t launched = units - atomic_exchange(&pace->units_seen, units);
    uint64_t waited = waits - atomic_exchange(&pace->waits_seen, waits);
    bool active = atomic_exchange(&pace->launched, 0) != 0; /* some process launched in the window */
    if (last == 0 || last > now_us || now_us - last > STEP_MAX_US) return; /* the first window starts now */
    double own = -1;
    double utilization = state->device_fallback ? device_utilization(state->handle)
                                                : utilization_since(state->handle, last, &own);
    if (utilization < 0 && active && !state->device_fallback && ++state->blind_ticks >= BLIND_TICKS_BEFORE_FALLBACK) {
        state->device_fallback = true;
        LOG_WARN("device %d: NVML reports no utilization for this container's pids; limiting on whole-device utilization",
                 ordinal);
    }
    if (utilization < 0) return;
    state->blind_ticks = 0;
    atomic_store(&runtime.region->devices[vgpu_region_entry(ordinal)].sm_util_permille, (uint32_t)(utilization * 1000.0 + 0.5));
    steer(pace, ordinal, utilization, (now_us - last) * 1000, now_ns, launched, waited);
}

static void distrust_container_pacer(int ordinal, const char *why) {
    uint32_t bit = 1U << ordinal;
    if (atomic_load(&vgpu_private_devices) & bit) return;
    /* Calibrated afresh on this process's own use: nothing the region said is carried over. */
    memset(&vgpu_private_paces[ordinal], 0, sizeof vgpu_private_paces[ordinal]);
    if (atomic_fetch_or(&vgpu_private_devices, bit) & bit) return;
    LOG_WARN("device %d: the container's compute pacer in %s does not hold this process to its %u%% limit (%s); this "
             "process paces itself from now on", ordinal, runtime.config->region_path, runtime.devices[ordinal].sm_limit, why);
}

/* This process's own share: reported in its slot, checked against the limit whatever the region says,
 * and steered on when the process paces itself. */
static void watch_own_share(int ordinal, struct controller_state *state, uint64_t now_us, uint64_t now_ns) {
    uint64_t since = state->own_since_us;
    state->own_since_us = now_us;
    if (since == 0 || since >= now_us || now_us - since > STEP_MAX_US) return;
    double own = -1;
    double container = utilization_since(state->handle, since, &own);
    (void)container;
    if (own < 0 && state->device_fallback) own = device_utilization(state->handle); /* conservative */
    if (own < 0) return;
    struct vgpu_region_slot *slot = vgpu_own_slot();
    if (slot != NULL) atomic_store(&slot->devices[vgpu_region_entry(ordinal)].sm_util_permille, (uint32_t)(own * 1000.0 + 0.5));
    if (atomic_load(&vgpu_private_devices) & (1U << ordinal)) {
        struct vgpu_pace *pace = &vgpu_private_paces[ordinal];
        uint64_t units = atomic_load(&pace->units), waits = atomic_load(&pace->waits);
        uint64_t launched = units - atomic_exchange(&pace->units_seen, units);
        uint64_t waited = waits - atomic_exchange(&pace->waits_seen, waits);
        steer(pace, ordinal, own, (now_us - since) * 1000, now_ns, launched, waited);
        return;
    }
    const char *why = NULL;
    double budget = load_budget(&runtime.region->devices[vgpu_region_entry(ordinal)].pace);
    if (!vgpu_region_intact(runtime.region)) why = "its header was overwritten";
    else if (!budget_sane(budget)) why = "its budget is not one a controller wrote";
    else if (budget == 0 && state->last_budget > 0) why = "its budget was reset";
    else if (budget > 0 && own * 100.0 > runtime.devices[ordinal].sm_limit + GUARD_POINTS) {
        if (++state->over_ticks >= GUARD_TICKS) why = "this process alone used more";
    } else {
        state->over_ticks = 0;
    }
    if (budget_sane(budget) && budget > 0) state->last_budget = budget;
    if (why != NULL) distrust_container_pacer(ordinal, why);
}

static void control(int ordinal, uint64_t now_us, uint64_t now_ns) {
    struct controller_state *state = &controllers[ordinal];
    if (state->handle == NULL) state->handle = vgpu_nvml_handle_of(ordinal);
    const struct vgpu_pace *pace = vgpu_pace_of(ordinal);
    uint64_t activity = atomic_load(&pace->units) + atomic_load(&pace->next_ns); /* either moves with every launch */
    bool launched = activity != state->activity_seen;
    state->activity_seen = activity;
    if (state->handle == NULL && launched) report_unmeasurable(ordinal, "NVML cannot find the device");
    if (real.nvmlDeviceGetProcessUtilization == NULL && real.nvmlDeviceGetUtilizationRates == NULL && launched)
        report_unmeasurable(ordinal, "NVML has neither nvmlDeviceGetProcessUtilization nor nvmlDeviceGetUtilizationRates");
    if (state->handle == NULL || !limiting_enabled()) return;
    watch_own_share(ordinal, state, now_us, now_ns);
    if (!(atomic_load(&vgpu_private_devices) & (1U << ordinal))) step_container(ordinal, state, now_us, now_ns);
}

/* ---- housekeeping thread ------------------------------------------------------------------- */

static void record_kernel_activity(uint64_t wall_ns) {
    if (!atomic_exchange_explicit(&runtime.launched, 0, memory_order_relaxed)) return;
    struct vgpu_region_slot *slot = atomic_load(&runtime.slot);
    for (int ordinal = 0; slot != NULL && ordinal < runtime.device_count; ordinal++) {
        if (vgpu_ordinal_refused(ordinal)) continue;
        int entry = vgpu_region_entry(ordinal);
        if (atomic_load(&slot->devices[entry].context_bytes) == 0 && atomic_load(&slot->devices[entry].memory_used) == 0)
            continue;
        atomic_store(&slot->devices[entry].last_kernel_ns, wall_ns);
        atomic_store(&runtime.region->devices[entry].last_kernel_ns, wall_ns);
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
            vgpu_memory_housekeeping();
            record_kernel_activity(vgpu_wall_ns());
            next_reap = now + HOUSEKEEPING_NS;
        }
        bool limited = atomic_load(&runtime.any_sm_limit) != 0;
        if (limited && vgpu_load_nvml()) {
            uint64_t now_us = vgpu_wall_ns() / 1000, now_ns = vgpu_now_ns();
            for (int ordinal = 0; ordinal < runtime.device_count; ordinal++)
                if (runtime.devices[ordinal].sm_limit > 0) control(ordinal, now_us, now_ns);
            vgpu_sleep_until_ns(now + TICK_NS);
        } else {
            for (int ordinal = 0; limited && ordinal < runtime.device_count; ordinal++)
                if (runtime.devices[ordinal].sm_limit > 0) report_unmeasurable(ordinal, "libnvidia-ml.so.1 is not usable");
            vgpu_sleep_until_ns(next_reap);
        }
    }
    return NULL;
}

/* The housekeeping thread was not forked; the container's pacer carries on, and the child measures its
 * own share afresh with its own thread, started with its slot. */
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
