#include "common/util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

uint64_t vgpu_now_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000ULL + (uint64_t)now.tv_nsec;
}

uint64_t vgpu_wall_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return (uint64_t)now.tv_sec * 1000000000ULL + (uint64_t)now.tv_nsec;
}

void vgpu_sleep_until_ns(uint64_t deadline_ns) {
    struct timespec deadline = {.tv_sec = (time_t)(deadline_ns / 1000000000ULL),
                                .tv_nsec = (long)(deadline_ns % 1000000000ULL)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &deadline, NULL) == EINTR) {
    }
}

void vgpu_sleep_ns(uint64_t ns) { vgpu_sleep_until_ns(vgpu_now_ns() + ns); }

/* Reads /proc/<pid>/stat; fills state and start time. The command name may contain spaces and
 * parentheses, so fields are counted from the last ')'. */
static bool read_process_stat(pid_t pid, char *state, uint64_t *start_ticks) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    char buffer[1024];
    ssize_t length = read(fd, buffer, sizeof buffer - 1);
    close(fd);
    if (length <= 0) return false;
    buffer[length] = '\0';
    char *after_name = strrchr(buffer, ')');
    if (after_name == NULL) return false;
    /* after ") " come fields 3 (state), 4, ... 22 (starttime) */
    char *cursor = after_name + 2;
    *state = *cursor;
    for (int field = 3; field < 22; field++) {
        cursor = strchr(cursor, ' ');
        if (cursor == NULL) return false;
        cursor++;
    }
    *start_ticks = strtoull(cursor, NULL, 10);
    return true;
}

bool vgpu_process_start_ticks(pid_t pid, uint64_t *start_ticks) {
    char state = 0;
    return read_process_stat(pid, &state, start_ticks);
}

bool vgpu_process_alive(pid_t pid, uint64_t start_ticks) {
    if (pid <= 0) return false;
    char state = 0;
    uint64_t actual = 0;
    if (!read_process_stat(pid, &state, &actual)) return false;
    if (state == 'Z' || state == 'X' || state == 'x') return false;
    return actual == start_ticks;
}

size_t vgpu_copy_string(char *destination, const char *source, size_t size) {
    size_t length = strlen(source);
    if (size > 0) {
        size_t copied = length < size - 1 ? length : size - 1;
        memcpy(destination, source, copied);
        destination[copied] = '\0';
    }
    return length;
}

void vgpu_uuid_format(const unsigned char bytes[16], char text[VGPU_UUID_TEXT_LENGTH + 1]) {
    snprintf(text, VGPU_UUID_TEXT_LENGTH + 1,
             "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", bytes[0], bytes[1],
             bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8], bytes[9], bytes[10], bytes[11],
             bytes[12], bytes[13], bytes[14], bytes[15]);
}

static int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    c = (char)tolower((unsigned char)c);
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

bool vgpu_uuid_parse(const char *text, unsigned char bytes[16]) {
    if (strncmp(text, "GPU-", 4) != 0 || strlen(text) != VGPU_UUID_TEXT_LENGTH) return false;
    const char *p = text + 4;
    for (int i = 0; i < 16; i++) {
        if (*p == '-') {
            if (i != 4 && i != 6 && i != 8 && i != 10) return false;
            p++;
        }
        int high = hex_value(p[0]);
        int low = high < 0 ? -1 : hex_value(p[1]);
        if (low < 0) return false;
        bytes[i] = (unsigned char)(high * 16 + low);
        p += 2;
    }
    return *p == '\0';
}
