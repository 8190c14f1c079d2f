/*
 * vgpu-lab-probe: the container program of the lab's `vgpu-lab/probe` image (../shared/design/LAB.md).
 * A driver-API program linked -lcuda -lnvidia-ml; its ops come as arguments and run in order, each
 * printing exactly one JSON line on stdout. See vgpu-native/README.md, "vgpu-lab-probe".
 */
#ifndef VGPU_PROBE_H
#define VGPU_PROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum probe_op_kind {
    PROBE_INFO,
    PROBE_NVML,
    PROBE_ALLOC,
    PROBE_FILL,
    PROBE_COMPUTE,
    PROBE_VECTORADD,
    PROBE_KILLED_CHILD,
    PROBE_SPAWN,
    PROBE_ESCAPE,
    PROBE_OVERBOOK,
    PROBE_HOLD,
    PROBE_EXIT,
    PROBE_RESERVE,
};

struct probe_op {
    enum probe_op_kind kind;
    const char *text;  /* the argument as given */
    uint64_t size_mib; /* alloc, killed-child, escape, overbook */
    int ordinal;       /* @N: alloc, fill, compute, escape, overbook */
    double seconds;    /* compute, hold */
    int number;        /* spawn: processes; exit: code */
};

/* Parses every argument before anything runs. On a malformed op returns false with one line in error
 * naming the op, its position and what is wrong. */
bool probe_parse_ops(int count, char *const *texts, struct probe_op *ops, char *error, size_t error_size);

/* The index of this process among those spawn:N started, -1 when not spawned. */
extern int probe_process_index;

/* Writes one JSON object on stdout in a single write: "{" + the formatted members + ",\"process\":i"
 * in a spawned process + "}\n". Lines of concurrent processes never interleave. */
void probe_emit(const char *format, ...) __attribute__((format(printf, 1, 2)));
/* JSON string contents of text (printable ASCII; quotes and backslashes escaped) into out. */
void probe_json_text(const char *text, char *out, size_t size);
/* One diagnostic line on stderr, "vgpu-lab-probe: ...". */
void probe_note(const char *format, ...) __attribute__((format(printf, 1, 2)));

/* The driver API (driver_ops.c). Each prints its line. */
void probe_info(void);
void probe_alloc(const struct probe_op *op);
void probe_fill(const struct probe_op *op);
void probe_compute(const struct probe_op *op);
void probe_vectoradd(void);
/* NVML (nvml_op.c). */
void probe_nvml(void);
/* A private copy of the driver, loaded around the interposer (escape_op.c). */
void probe_escape(const struct probe_op *op);
/* A usage written into the container's shared region, as any of its processes can (region_op.c). */
void probe_overbook(const struct probe_op *op);
/* KAI's resource-reservation container: finds its one card through NVML and reports its UUID on its own
 * pod through the API (reserve_op.c); exits 1 with KAI's message when it cannot. */
void probe_reserve(void);
/* Other processes (process_ops.c). */
void probe_killed_child(const struct probe_op *op);
/* Runs texts (the ops after spawn:N) in N processes at once, reports the ops complete once each has
 * finished them, and returns the exit code the probe ends with once all of them have ended. */
int probe_spawn(int processes, int count, char *const *texts);
/* Called once all ops are done: the marker line on stderr, or the signal a spawning parent waits for. */
void probe_ops_complete(void);
/* Reads (and removes from the environment) what a spawning parent passed down. */
void probe_process_setup(void);

#endif
