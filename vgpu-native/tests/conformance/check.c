#include "check.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/parse.h"
#include "mock/config.h"
#include "mock/reference_kernels.h"
#include "mock/state.h"
#include "vgpu/region.h"

bool real_gpu(void) {
    const char *value = getenv("VGPU_TEST_REAL_GPU");
    return value != NULL && strcmp(value, "1") == 0;
}

uint64_t expected_context_bytes(uint64_t measured) {
    return real_gpu() ? measured : env_bytes("VGPU_MOCK_CONTEXT_MIB") * MIB;
}

int setup_primary_context(CUcontext *context) {
    CU_OK(cuInit(0));
    CU_OK(cuDevicePrimaryCtxRetain(context, 0));
    CU_OK(cuCtxSetCurrent(*context));
    return 0;
}

int load_test_kernel(CUfunction *function, const char *name) {
    CUmodule module;
    CU_OK(cuModuleLoadData(&module, "\177ELF test image"));
    CU_OK(cuModuleGetFunction(function, module, name));
    return 0;
}

int load_reference_kernel(CUfunction *function, const char *name) {
    CUmodule module;
    CU_OK(cuModuleLoadData(&module, MOCK_REFERENCE_PTX));
    CU_OK(cuModuleGetFunction(function, module, name));
    return 0;
}

CUresult launch_spin(CUfunction spin, unsigned long long nanoseconds, unsigned blocks, CUstream stream) {
    void *parameters[] = {&nanoseconds};
    return cuLaunchKernel(spin, blocks, 1, 1, 256, 1, 1, 0, stream, parameters, NULL);
}

int memory_info(size_t *free_bytes, size_t *total_bytes) {
    CU_OK(cuMemGetInfo_v2(free_bytes, total_bytes));
    return 0;
}

uint64_t env_bytes(const char *name) {
    uint64_t bytes = 0;
    const char *value = getenv(name);
    return value != NULL && vgpu_parse_size(value, &bytes) ? bytes : 0;
}

const char *self_path(void) {
    static char path[4096];
    if (path[0] == '\0') {
        ssize_t length = readlink("/proc/self/exe", path, sizeof path - 1);
        if (length > 0) path[length] = '\0';
    }
    return path;
}

pid_t spawn_self(const char *role, const char *extra) {
    pid_t pid = fork();
    if (pid == 0) {
        execl(self_path(), self_path(), role, extra, (char *)NULL);
        _exit(127);
    }
    return pid;
}

void apply_environment_changes(const char *const *environment) {
    for (const char *const *change = environment; change != NULL && *change != NULL; change++) {
        const char *equals = strchr(*change, '=');
        if (equals == NULL) {
            unsetenv(*change);
        } else {
            char name[128];
            snprintf(name, sizeof name, "%.*s", (int)(equals - *change), *change);
            setenv(name, equals + 1, 1);
        }
    }
}

pid_t spawn_self_with(const char *role, const char *extra, const char *const *environment, int *output_fd) {
    int pipe_fds[2] = {-1, -1};
    if (output_fd != NULL && pipe(pipe_fds) != 0) return -1;
    pid_t pid = fork();
    if (pid == 0) {
        apply_environment_changes(environment);
        if (output_fd != NULL) {
            dup2(pipe_fds[1], STDOUT_FILENO);
            close(pipe_fds[0]);
            close(pipe_fds[1]);
        }
        execl(self_path(), self_path(), role, extra, (char *)NULL);
        _exit(127);
    }
    if (output_fd != NULL) {
        close(pipe_fds[1]);
        *output_fd = pipe_fds[0];
    }
    return pid;
}

int wait_child(pid_t pid) {
    int status = 0;
    if (waitpid(pid, &status, 0) != pid) return 255;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

struct mock_state *mock_state_for_tests(void) {
    const struct mock_config *config = mock_config_get();
    return config != NULL ? mock_state_attach(config) : NULL;
}

int mock_slot_of(struct mock_state *state, pid_t pid) {
    for (int i = 0; i < MOCK_MAX_PROCESSES; i++)
        if (atomic_load(&state->processes[i].state) == MOCK_SLOT_ACTIVE && state->processes[i].pid == pid) return i;
    return -1;
}

double device_share_of(pid_t pid, uint64_t from_ns, uint64_t to_ns) {
    struct mock_state *state = mock_state_for_tests();
    int slot = state != NULL ? mock_slot_of(state, pid) : -1;
    if (slot < 0 || to_ns <= from_ns) return -1;
    return 100.0 * (double)mock_timeline_busy_ns(&state->processes[slot].devices[0].timeline, from_ns, to_ns) /
           (double)(to_ns - from_ns);
}

int log_capture_begin(struct log_capture *capture, const char *name) {
    snprintf(capture->path, sizeof capture->path, "%s/%s.log", getenv("VGPU_TEST_DIR"), name);
    capture->text[0] = '\0';
    fflush(stderr);
    capture->saved_fd = dup(STDERR_FILENO);
    int fd = open(capture->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    EXPECT(capture->saved_fd >= 0 && fd >= 0 && dup2(fd, STDERR_FILENO) == STDERR_FILENO, "stderr redirected to %s",
           capture->path);
    close(fd);
    return 0;
}

int log_capture_end(struct log_capture *capture) {
    fflush(stderr);
    dup2(capture->saved_fd, STDERR_FILENO);
    close(capture->saved_fd);
    int fd = open(capture->path, O_RDONLY | O_CLOEXEC);
    EXPECT(fd >= 0, "%s readable", capture->path);
    ssize_t got = read(fd, capture->text, sizeof capture->text - 1);
    close(fd);
    capture->text[got > 0 ? got : 0] = '\0';
    return 0;
}

int lines_containing(const char *text, const char *needle) {
    int count = 0;
    for (const char *line = text; *line != '\0';) {
        const char *end = strchr(line, '\n');
        size_t length = end != NULL ? (size_t)(end - line) : strlen(line);
        const char *hit = strstr(line, needle);
        if (hit != NULL && hit < line + length) count++;
        line += length + (end != NULL);
    }
    return count;
}

struct vgpu_region *map_region_writable(void) {
    const char *path = getenv("CUDA_DEVICE_MEMORY_SHARED_CACHE");
    int fd = path != NULL ? open(path, O_RDWR | O_CLOEXEC) : -1;
    if (fd < 0) return NULL;
    void *mapping = mmap(NULL, sizeof(struct vgpu_region), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    return mapping == MAP_FAILED ? NULL : mapping;
}
