#include "common/log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static _Atomic int cached_threshold = -1;

static int threshold_from_environment(void) {
    const char *text = getenv("LIBCUDA_LOG_LEVEL");
    if (text == NULL || *text == '\0') return VGPU_LOG_WARN;
    char *end = NULL;
    errno = 0;
    long value = strtol(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || value < 0 || value > 9) {
        /* A bad log level must not silence errors; fall back to the default and say so once. */
        char line[160];
        int n = snprintf(line, sizeof line, "[%s pid %d] WARN: LIBCUDA_LOG_LEVEL=\"%s\" is not a number 0-9; using 2\n",
                         VGPU_LOG_COMPONENT, (int)getpid(), text);
        if (n > 0) (void)!write(STDERR_FILENO, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
        return VGPU_LOG_WARN;
    }
    return value < VGPU_LOG_ERROR ? VGPU_LOG_ERROR : (int)value;
}

int vgpu_log_threshold(void) {
    int value = atomic_load_explicit(&cached_threshold, memory_order_relaxed);
    if (value < 0) {
        value = threshold_from_environment();
        atomic_store_explicit(&cached_threshold, value, memory_order_relaxed);
    }
    return value;
}

void vgpu_log_set_threshold(int level) {
    atomic_store_explicit(&cached_threshold, level < VGPU_LOG_ERROR ? VGPU_LOG_ERROR : level, memory_order_relaxed);
}

void vgpu_log_write(enum vgpu_log_level level, const char *format, ...) {
    static const char *const names[] = {"", "ERROR", "WARN", "INFO", "DEBUG"};
    char line[1024];
    int used = snprintf(line, sizeof line, "[%s pid %d] %s: ", VGPU_LOG_COMPONENT, (int)getpid(),
                        names[level >= VGPU_LOG_ERROR && level <= VGPU_LOG_DEBUG ? level : 0]);
    if (used < 0) return;
    va_list args;
    va_start(args, format);
    int more = vsnprintf(line + used, sizeof line - (size_t)used - 1, format, args);
    va_end(args);
    size_t length = (size_t)used + (more < 0 ? 0 : (size_t)more);
    if (length > sizeof line - 2) length = sizeof line - 2;
    line[length++] = '\n';
    /* One write per line keeps lines from concurrent threads and processes whole. */
    int saved_errno = errno;
    (void)!write(STDERR_FILENO, line, length);
    errno = saved_errno;
}
