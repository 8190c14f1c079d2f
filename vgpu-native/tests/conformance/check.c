#include "check.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/parse.h"
#include "mock/config.h"
#include "mock/reference_kernels.h"
#include "mock/state.h"

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
