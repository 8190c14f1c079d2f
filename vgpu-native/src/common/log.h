/* One-line diagnostics on stderr, filtered by LIBCUDA_LOG_LEVEL (HAMi-core's scale):
 * 0-1 errors only, 2 (default) adds warnings, 3 adds info, 4 adds debug. */
#ifndef VGPU_COMMON_LOG_H
#define VGPU_COMMON_LOG_H

enum vgpu_log_level {
    VGPU_LOG_ERROR = 1,
    VGPU_LOG_WARN = 2,
    VGPU_LOG_INFO = 3,
    VGPU_LOG_DEBUG = 4,
};

/* Each library sets its own tag at compile time (-DVGPU_LOG_COMPONENT="\"vgpu\""). */
#ifndef VGPU_LOG_COMPONENT
#define VGPU_LOG_COMPONENT "vgpu"
#endif

int vgpu_log_threshold(void);
/* Sets the level when LIBCUDA_LOG_LEVEL comes from somewhere other than the environment. */
void vgpu_log_set_threshold(int level);
void vgpu_log_write(enum vgpu_log_level level, const char *format, ...) __attribute__((format(printf, 2, 3)));

#define VGPU_LOG(level, ...)                                                \
    do {                                                                    \
        if ((int)(level) <= vgpu_log_threshold()) vgpu_log_write((level), __VA_ARGS__); \
    } while (0)
#define LOG_ERROR(...) VGPU_LOG(VGPU_LOG_ERROR, __VA_ARGS__)
#define LOG_WARN(...) VGPU_LOG(VGPU_LOG_WARN, __VA_ARGS__)
#define LOG_INFO(...) VGPU_LOG(VGPU_LOG_INFO, __VA_ARGS__)
#define LOG_DEBUG(...) VGPU_LOG(VGPU_LOG_DEBUG, __VA_ARGS__)

#endif
