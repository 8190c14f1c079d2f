/* The probe's ops that involve other processes. Each child is this program again, started fresh
 * (fork + exec, never a fork that goes on using the parent's CUDA state) with its ops as arguments,
 * and dies with its parent (PR_SET_PDEATHSIG), so deleting a container's main process ends them all.
 * A child learns what a parent wants from two environment variables, removed again as it starts:
 *   VGPU_LAB_PROBE_PROCESS=i   its lines carry "process": i
 *   VGPU_LAB_PROBE_DONE_FD=n   instead of the marker line, it writes one byte to fd n when its ops are
 *                              done (-1: neither) */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/util.h"
#include "probe/probe.h"

#define PROCESS_VARIABLE "VGPU_LAB_PROBE_PROCESS"
#define DONE_FD_VARIABLE "VGPU_LAB_PROBE_DONE_FD"
#define CHILD_REPORT_TIMEOUT_MS 30000
#define MAX_CHILDREN 32

extern char **environ;

static int done_fd = -2; /* -2: print the marker line */

void probe_process_setup(void) {
    const char *process = getenv(PROCESS_VARIABLE), *done = getenv(DONE_FD_VARIABLE);
    if (process != NULL) probe_process_index = atoi(process);
    if (done != NULL) {
        done_fd = atoi(done);
        if (done_fd >= 0) fcntl(done_fd, F_SETFD, FD_CLOEXEC); /* not inherited by this process's own children */
    }
    unsetenv(PROCESS_VARIABLE);
    unsetenv(DONE_FD_VARIABLE);
}

void probe_ops_complete(void) {
    if (done_fd == -2) {
        static const char marker[] = "vgpu-lab-probe: ops complete\n";
        ssize_t ignored = write(STDERR_FILENO, marker, sizeof marker - 1);
        (void)ignored;
    } else if (done_fd >= 0) {
        char done = 1;
        ssize_t ignored = write(done_fd, &done, 1);
        (void)ignored;
        close(done_fd);
    }
}

static const char *self_path(void) {
    static char path[4096];
    ssize_t length = readlink("/proc/self/exe", path, sizeof path - 1);
    if (length <= 0) return NULL;
    path[length] = '\0';
    return path;
}

/* Starts this program with argv {self, ops...}: the given environment additions, stdout onto
 * stdout_fd (unless -1), and keep_fd left open across exec. Returns the pid, or -1. */
static pid_t start_child(char *const *ops, int op_count, const char *const *additions, int stdout_fd, int keep_fd) {
    const char *self = self_path();
    if (self == NULL) {
        probe_note("cannot read /proc/self/exe to start a child: %s", strerror(errno));
        return -1;
    }
    size_t environment_count = 0;
    while (environ[environment_count] != NULL) environment_count++;
    char **environment = calloc(environment_count + 4, sizeof *environment);
    char **arguments = calloc((size_t)op_count + 2, sizeof *arguments);
    if (environment == NULL || arguments == NULL) {
        free(environment);
        free(arguments);
        return -1;
    }
    size_t used = 0;
    for (size_t i = 0; i < environment_count; i++)
        if (strncmp(environ[i], "VGPU_LAB_PROBE_", 15) != 0) environment[used++] = environ[i];
    for (const char *const *addition = additions; *addition != NULL; addition++) environment[used++] = (char *)*addition;
    arguments[0] = (char *)self;
    for (int i = 0; i < op_count; i++) arguments[i + 1] = ops[i];
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        /* Only async-signal-safe calls from here to exec. */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) _exit(126);
        if (stdout_fd >= 0 && dup2(stdout_fd, STDOUT_FILENO) < 0) _exit(126);
        if (keep_fd >= 0 && fcntl(keep_fd, F_SETFD, 0) != 0) _exit(126);
        execve(self, arguments, environment);
        _exit(127);
    }
    if (pid < 0) probe_note("fork: %s", strerror(errno));
    free(environment);
    free(arguments);
    return pid;
}

static int exit_code_of(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status); }

/* Reads the first line the child prints, waiting at most CHILD_REPORT_TIMEOUT_MS. */
static bool read_line(int fd, char *line, size_t size) {
    size_t used = 0;
    uint64_t deadline = vgpu_now_ns() + CHILD_REPORT_TIMEOUT_MS * 1000000ULL;
    while (used + 1 < size) {
        uint64_t now = vgpu_now_ns();
        struct pollfd ready = {.fd = fd, .events = POLLIN};
        if (now >= deadline || poll(&ready, 1, (int)((deadline - now) / 1000000ULL) + 1) <= 0) return false;
        ssize_t got = read(fd, line + used, 1);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return false;
        if (line[used] == '\n') break;
        used++;
    }
    line[used] = '\0';
    return true;
}

/* A child allocates SIZE MiB and reports its CUresult; then it is SIGKILLed, holding the memory. */
void probe_killed_child(const struct probe_op *op) {
    int child_result = -1, output[2];
    char alloc_op[48], line[512];
    snprintf(alloc_op, sizeof alloc_op, "alloc:%lluMi", (unsigned long long)op->size_mib);
    char *ops[] = {alloc_op};
    const char *additions[] = {DONE_FD_VARIABLE "=-1", NULL};
    pid_t child = pipe2(output, O_CLOEXEC) == 0 ? start_child(ops, 1, additions, output[1], -1) : -1;
    if (child > 0) {
        close(output[1]);
        const char *result = read_line(output[0], line, sizeof line) ? strstr(line, "\"result\":") : NULL;
        if (result != NULL) child_result = atoi(result + 9);
        else probe_note("killed-child: the child reported no allocation result");
        close(output[0]);
        kill(child, SIGKILL);
        int status = 0;
        while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
        }
    }
    probe_emit("\"op\":\"killed-child\",\"childResult\":%d", child_result);
}

int probe_spawn(int processes, int count, char *const *texts) {
    pid_t children[MAX_CHILDREN];
    struct pollfd done[MAX_CHILDREN];
    int started = 0;
    for (int i = 0; i < processes; i++) {
        int channel[2];
        if (pipe2(channel, O_CLOEXEC) != 0) {
            probe_note("spawn: pipe: %s", strerror(errno));
            break;
        }
        char process[48], done_fd_text[48];
        snprintf(process, sizeof process, PROCESS_VARIABLE "=%d", i);
        snprintf(done_fd_text, sizeof done_fd_text, DONE_FD_VARIABLE "=%d", channel[1]);
        const char *additions[] = {process, done_fd_text, NULL};
        pid_t child = start_child(texts, count, additions, -1, channel[1]);
        close(channel[1]);
        if (child < 0) {
            close(channel[0]);
            break;
        }
        children[started] = child;
        done[started++] = (struct pollfd){.fd = channel[0], .events = POLLIN};
    }
    /* A child is done when it writes its byte, or when its end of the pipe closes (it exited or died). */
    for (int waiting = started; waiting > 0;) {
        if (poll(done, (nfds_t)started, -1) < 0) {
            if (errno == EINTR) continue;
            break;
        }
        for (int i = 0; i < started; i++) {
            if (done[i].fd < 0 || done[i].revents == 0) continue;
            close(done[i].fd);
            done[i].fd = -1;
            waiting--;
        }
    }
    probe_ops_complete();
    int code = started == processes ? 0 : 1;
    for (int i = 0; i < started; i++) {
        int status = 0;
        while (waitpid(children[i], &status, 0) < 0 && errno == EINTR) {
        }
        if (code == 0) code = exit_code_of(status);
    }
    return code;
}
