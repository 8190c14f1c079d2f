/* Small helpers shared by the three libraries: clocks, process liveness, GPU UUID text. */
#ifndef VGPU_COMMON_UTIL_H
#define VGPU_COMMON_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#define VGPU_UUID_TEXT_LENGTH 40 /* "GPU-" + 36 characters */

/* CLOCK_MONOTONIC in ns; served by the vDSO, so it makes no system call. */
uint64_t vgpu_now_ns(void);
/* CLOCK_MONOTONIC_COARSE in ns: never ahead of vgpu_now_ns, behind it by at most one scheduler tick,
 * and several times cheaper to read (also from the vDSO). */
static inline uint64_t vgpu_coarse_now_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
    return (uint64_t)now.tv_sec * 1000000000ULL + (uint64_t)now.tv_nsec;
}
/* CLOCK_REALTIME in ns. */
uint64_t vgpu_wall_ns(void);
/* Sleeps for ns, restarting after signals. */
void vgpu_sleep_ns(uint64_t ns);
/* Sleeps until the CLOCK_MONOTONIC deadline. */
void vgpu_sleep_until_ns(uint64_t deadline_ns);

/* The kernel's start time of a process (field 22 of /proc/<pid>/stat), used to tell a process from a
 * later one that reuses its pid. Returns false if the process does not exist. */
bool vgpu_process_start_ticks(pid_t pid, uint64_t *start_ticks);
/* True if pid names a running (not zombie) process that started at start_ticks. */
bool vgpu_process_alive(pid_t pid, uint64_t start_ticks);

/* Copies like strlcpy: always terminates, returns strlen(source). */
size_t vgpu_copy_string(char *destination, const char *source, size_t size);

/* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" <-> 16 bytes. */
void vgpu_uuid_format(const unsigned char bytes[16], char text[VGPU_UUID_TEXT_LENGTH + 1]);
bool vgpu_uuid_parse(const char *text, unsigned char bytes[16]);

#endif
