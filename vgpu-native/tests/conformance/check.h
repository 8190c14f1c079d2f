/* Helpers of the conformance checks. Each check is a function returning 0 (pass) or 1 (fail) and
 * explaining a failure in one line on stderr; run-conformance.sh prints PASS/FAIL per check. */
#ifndef VGPU_TEST_CHECK_H
#define VGPU_TEST_CHECK_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "cuda_api.h"
#include "nvml_types.h"

#define MIB (1ULL << 20)
#define GIB (1ULL << 30)

#define EXPECT(condition, ...)                                                               \
    do {                                                                                     \
        if (!(condition)) {                                                                  \
            fprintf(stderr, "  %s:%d: expected %s: ", __FILE__, __LINE__, #condition);      \
            fprintf(stderr, __VA_ARGS__);                                                    \
            fputc('\n', stderr);                                                             \
            return 1;                                                                        \
        }                                                                                    \
    } while (0)

/* A driver call that must return the given code. */
#define EXPECT_CU(call, code)                                                                               \
    do {                                                                                                    \
        CUresult result_ = (call);                                                                          \
        EXPECT(result_ == (code), "%s returned %d, wanted %d", #call, (int)result_, (int)(code));            \
    } while (0)
#define CU_OK(call) EXPECT_CU(call, CUDA_SUCCESS)

#define EXPECT_NVML(call, code)                                                                             \
    do {                                                                                                    \
        nvmlReturn_t result_ = (call);                                                                      \
        EXPECT(result_ == (code), "%s returned %d, wanted %d", #call, (int)result_, (int)(code));            \
    } while (0)
#define NVML_OK(call) EXPECT_NVML(call, NVML_SUCCESS)

struct check {
    const char *name;
    int (*run)(int argc, char **argv);
};

/* True when the checks run against a real driver (scripts/gpu-check.sh sets VGPU_TEST_REAL_GPU=1):
 * expectations that depend on the mock (its context size, its own accounting) are then skipped. */
bool real_gpu(void);
/* The memory a context is charged: VGPU_MOCK_CONTEXT_MIB on the mock, measured on a real GPU. */
uint64_t expected_context_bytes(uint64_t measured);

/* cuInit + the primary context of ordinal 0 made current. */
int setup_primary_context(CUcontext *context);
/* A kernel of a binary image, which the mock accepts under any name (the current context's module). */
int load_test_kernel(CUfunction *function, const char *name);
/* A reference kernel of the mock (reference_kernels.h) from its PTX text, in the current context. */
int load_reference_kernel(CUfunction *function, const char *name);
/* Launches vgpu_spin(nanoseconds) on stream. */
CUresult launch_spin(CUfunction spin, unsigned long long nanoseconds, unsigned blocks, CUstream stream);
/* Limit-view free and total of the current context. */
int memory_info(size_t *free_bytes, size_t *total_bytes);
/* Value of an environment variable as a byte count (e.g. the limit the runner set), or 0. */
uint64_t env_bytes(const char *name);
/* Runs this program again as a child with argv {self, role, extra...}; returns its pid. */
pid_t spawn_self(const char *role, const char *extra);
/* Applies environment changes to this process: "NAME=value" sets, "NAME" removes (in a forked child). */
void apply_environment_changes(const char *const *environment);
/* Like spawn_self, with environment changes in the child ("NAME=value" to set, "NAME" to remove),
 * and the child's stdout into *output_fd when output_fd is not NULL. */
pid_t spawn_self_with(const char *role, const char *extra, const char *const *environment, int *output_fd);
/* Waits for a child; returns its exit code, or 128+signal. */
int wait_child(pid_t pid);
/* Path of the running test binary. */
const char *self_path(void);
/* libvgpu's log lines of a stretch of a check: stderr goes to a file between begin and end. */
struct log_capture {
    int saved_fd;
    char path[600];
    char text[16384];
};
int log_capture_begin(struct log_capture *capture, const char *name);
/* Restores stderr and reads what was written meanwhile into capture->text. */
int log_capture_end(struct log_capture *capture);
/* Lines of text that contain needle. */
int lines_containing(const char *text, const char *needle);
/* The container's shared region (CUDA_DEVICE_MEMORY_SHARED_CACHE), mapped writable as any process of
 * the container can map it; NULL if it cannot be. */
struct vgpu_region;
struct vgpu_region *map_region_writable(void);
/* Reads the mock GPUs' shared state (for checks that measure what the mock saw). */
struct mock_state;
struct mock_state *mock_state_for_tests(void);
/* Index of the process's slot in the mock state, or -1. */
int mock_slot_of(struct mock_state *state, pid_t pid);
/* The share (percent) of device 0's clock that a process used in [from_ns, to_ns) (CLOCK_MONOTONIC), or -1
 * when the mock state has no such process. */
double device_share_of(pid_t pid, uint64_t from_ns, uint64_t to_ns);

#endif
