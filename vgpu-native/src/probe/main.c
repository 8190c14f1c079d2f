/* vgpu-lab-probe OP...: runs the ops in order, one JSON line each; then holds everything it allocated
 * until killed, unless exit:CODE ended it. A malformed op: one line on stderr, exit code 2, nothing run. */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"
#include "probe/probe.h"

int probe_process_index = -1; /* "process": i in the lines of a spawned process */

static void write_all(int fd, const char *data, size_t length) {
    while (length > 0) {
        ssize_t written = write(fd, data, length);
        if (written < 0 && errno == EINTR) continue;
        if (written <= 0) return; /* nobody reads stdout any more: the ops go on regardless */
        data += written;
        length -= (size_t)written;
    }
}

void probe_emit(const char *format, ...) {
    char line[8192];
    size_t length = 1;
    line[0] = '{';
    va_list arguments;
    va_start(arguments, format);
    int body = vsnprintf(line + length, sizeof line - length - 32, format, arguments);
    va_end(arguments);
    length += body < 0 ? 0 : (size_t)body < sizeof line - length - 32 ? (size_t)body : sizeof line - length - 33;
    if (probe_process_index >= 0) length += (size_t)snprintf(line + length, 32, ",\"process\":%d", probe_process_index);
    line[length++] = '}';
    line[length++] = '\n';
    write_all(STDOUT_FILENO, line, length);
}

void probe_json_text(const char *text, char *out, size_t size) {
    size_t used = 0;
    for (const char *p = text; *p != '\0' && used + 3 < size; p++) {
        unsigned char c = (unsigned char)*p;
        if (c < 0x20 || c > 0x7e) continue;
        if (c == '"' || c == '\\') out[used++] = '\\';
        out[used++] = (char)c;
    }
    out[used] = '\0';
}

void probe_note(const char *format, ...) {
    char line[1024];
    int prefix = snprintf(line, sizeof line, "vgpu-lab-probe: ");
    va_list arguments;
    va_start(arguments, format);
    vsnprintf(line + prefix, sizeof line - (size_t)prefix - 1, format, arguments);
    va_end(arguments);
    size_t length = strlen(line);
    line[length++] = '\n';
    write_all(STDERR_FILENO, line, length);
}

static void hold(double seconds) {
    vgpu_sleep_ns((uint64_t)(seconds * 1e9));
    probe_emit("\"op\":\"hold\"");
}

int main(int argc, char **argv) {
    int count = argc - 1;
    struct probe_op *ops = calloc((size_t)(count > 0 ? count : 1), sizeof *ops);
    char error[512];
    if (ops == NULL) return 1;
    if (!probe_parse_ops(count, argv + 1, ops, error, sizeof error)) {
        probe_note("%s", error);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    probe_process_setup();
    for (int i = 0; i < count; i++) {
        const struct probe_op *op = &ops[i];
        switch (op->kind) {
            case PROBE_INFO: probe_info(); break;
            case PROBE_NVML: probe_nvml(); break;
            case PROBE_ALLOC: probe_alloc(op); break;
            case PROBE_FILL: probe_fill(op); break;
            case PROBE_COMPUTE: probe_compute(op); break;
            case PROBE_VECTORADD: probe_vectoradd(); break;
            case PROBE_KILLED_CHILD: probe_killed_child(op); break;
            case PROBE_ESCAPE: probe_escape(op); break;
            case PROBE_OVERBOOK: probe_overbook(op); break;
            case PROBE_HOLD: hold(op->seconds); break;
            case PROBE_RESERVE: probe_reserve(); break;
            case PROBE_SPAWN: return probe_spawn(op->number, count - i - 1, argv + i + 2);
            case PROBE_EXIT:
                probe_ops_complete();
                exit(op->number); /* exit, not _exit: the interposer gives its slot back at once */
        }
    }
    probe_ops_complete();
    for (;;) pause(); /* holds everything until the container is killed */
}
