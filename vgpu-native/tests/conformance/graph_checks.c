/* CUDA graphs, stream capture and stream-ordered frees: the mock's graph API on its own, and libvgpu
 * over it (graph launches paced under a compute limit, graph memory counted where the driver reserves
 * it and given back when the driver gives it back, cuMemFreeAsync given back when its stream has reached
 * it, one launch never held back longer than VGPU_MAX_LAUNCH_WAIT_NS). */
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "checks.h"
#include "common/util.h"
#include "mock/reference_kernels.h"
#include "mock/state.h"

#define ELEMENTS 4096

static CUDA_KERNEL_NODE_PARAMS_v2 spin_node(CUfunction spin, unsigned long long *nanoseconds, void **parameters,
                                            unsigned blocks) {
    parameters[0] = nanoseconds;
    return (CUDA_KERNEL_NODE_PARAMS_v2){.func = spin, .gridDimX = blocks, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 256,
                                        .blockDimY = 1, .blockDimZ = 1, .kernelParams = parameters};
}

static CUDA_MEM_ALLOC_NODE_PARAMS alloc_node(size_t bytes) {
    CUDA_MEM_ALLOC_NODE_PARAMS params = {.bytesize = bytes};
    params.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    params.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    params.poolProps.location.id = 0;
    return params;
}

static uint64_t graph_pool(CUgraphMem_attribute attribute) {
    cuuint64_t value = 0;
    return cuDeviceGetGraphMemAttribute(0, attribute, &value) == CUDA_SUCCESS ? value : UINT64_MAX;
}

static uint64_t device_used(void) {
    nvmlDevice_t device;
    nvmlMemory_t memory;
    if (nvmlInit_v2() != NVML_SUCCESS || nvmlDeviceGetHandleByIndex_v2(0, &device) != NVML_SUCCESS ||
        nvmlDeviceGetMemoryInfo(device, &memory) != NVML_SUCCESS)
        return UINT64_MAX;
    return memory.used;
}

/* A graph built from vectorAdd's data path by stream capture: allocations, copies in, the kernel, the copy
 * out and the frees. Each launch reads the host inputs as they are then. */
static int captured_vector_add(CUfunction add, CUstream stream, float *a, float *b, float *c, CUgraph *graph) {
    size_t bytes = ELEMENTS * sizeof(float);
    CUdeviceptr da = 0, db = 0, dc = 0;
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    CU_OK(cuStreamBeginCapture_v2(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_OK(cuStreamIsCapturing(stream, &status));
    EXPECT(status == CU_STREAM_CAPTURE_STATUS_ACTIVE, "capturing (%d)", (int)status);
    CU_OK(cuMemAllocAsync(&da, bytes, stream));
    CU_OK(cuMemAllocAsync(&db, bytes, stream));
    CU_OK(cuMemAllocAsync(&dc, bytes, stream));
    EXPECT(da != 0 && db != 0 && dc != 0, "captured allocations have their addresses");
    CU_OK(cuMemcpyHtoDAsync_v2(da, a, bytes, stream));
    CU_OK(cuMemcpyHtoDAsync_v2(db, b, bytes, stream));
    CU_OK(cuMemsetD32Async(dc, 0, ELEMENTS, stream));
    int count = ELEMENTS;
    void *parameters[] = {&da, &db, &dc, &count};
    CU_OK(cuLaunchKernel(add, ELEMENTS / 256, 1, 1, 256, 1, 1, 0, stream, parameters, NULL));
    count = 0; /* the node copied the value when it was recorded */
    CU_OK(cuMemcpyDtoHAsync_v2(c, dc, bytes, stream));
    CU_OK(cuMemFreeAsync(da, stream));
    CU_OK(cuMemFreeAsync(db, stream));
    CU_OK(cuMemFreeAsync(dc, stream));
    CU_OK(cuStreamEndCapture(stream, graph));
    EXPECT(*graph != NULL, "the capture made a graph");
    size_t nodes = 0;
    CU_OK(cuGraphGetNodes(*graph, NULL, &nodes));
    EXPECT(nodes == 11, "11 nodes captured, got %zu", nodes);
    return 0;
}

/* The primary context current, the spin kernel, and a stream of its own. */
static int spin_and_stream(CUfunction *spin, CUstream *stream) {
    CUcontext context;
    if (setup_primary_context(&context) || load_reference_kernel(spin, MOCK_SPIN_KERNEL)) return 1;
    CU_OK(cuStreamCreate(stream, CU_STREAM_NON_BLOCKING));
    return 0;
}

static int vector_add_matches(const float *a, const float *b, const float *c) {
    for (int i = 0; i < ELEMENTS; i++)
        if (c[i] != a[i] + b[i]) return i;
    return -1;
}

/* The mock's graph API without libvgpu. */
int check_mock_graphs(int argc, char **argv) {
    (void)argc, (void)argv;
    CUfunction add, spin;
    CUstream stream;
    if (spin_and_stream(&spin, &stream) || load_reference_kernel(&add, MOCK_VECTOR_ADD_KERNEL)) return 1;

    /* Captured data path: runs, computes, and computes again on new inputs. */
    static float a[ELEMENTS], b[ELEMENTS], c[ELEMENTS];
    for (int i = 0; i < ELEMENTS; i++) a[i] = (float)i, b[i] = 0.5f * (float)i;
    CUgraph captured;
    if (captured_vector_add(add, stream, a, b, c, &captured)) return 1;
    CUgraphExec captured_exec;
    CU_OK(cuGraphInstantiateWithFlags(&captured_exec, captured, 0));
    for (int round = 0; round < 2; round++) {
        memset(c, 0, sizeof c);
        CU_OK(cuGraphLaunch(captured_exec, stream));
        CU_OK(cuStreamSynchronize(stream));
        EXPECT(vector_add_matches(a, b, c) == -1, "captured vectorAdd, launch %d: mismatch at %d", round + 1,
               vector_add_matches(a, b, c));
        for (int i = 0; i < ELEMENTS; i++) a[i] += 1.0f;
    }
    EXPECT(graph_pool(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT) == 3 * ELEMENTS * sizeof(float),
           "the captured graph's pool holds its three buffers (%llu)", (unsigned long long)graph_pool(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT));
    CU_OK(cuGraphExecDestroy(captured_exec));
    CU_OK(cuGraphDestroy(captured));
    CU_OK(cuDeviceGraphMemTrim(0));
    EXPECT(graph_pool(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT) == 0, "trimmed");

    /* Kernel nodes run in order on the device clock: three 1 ms spins and an empty node take 3 ms. */
    CUgraph chain;
    CU_OK(cuGraphCreate(&chain, 0));
    unsigned long long millisecond = 1000000ULL;
    void *parameters[3][1];
    CUgraphNode nodes[4];
    for (int i = 0; i < 3; i++) {
        CUDA_KERNEL_NODE_PARAMS_v2 params = spin_node(spin, &millisecond, parameters[i], 1 + 700 * (unsigned)i);
        CU_OK(cuGraphAddKernelNode_v2(&nodes[i], chain, i > 0 ? &nodes[i - 1] : NULL, i > 0, &params));
    }
    CU_OK(cuGraphAddEmptyNode(&nodes[3], chain, &nodes[2], 1));
    CUgraphNodeType type;
    CU_OK(cuGraphNodeGetType(nodes[3], &type));
    EXPECT(type == CU_GRAPH_NODE_TYPE_EMPTY, "node type %d", (int)type);
    CUDA_KERNEL_NODE_PARAMS_v1 read_back;
    CU_OK(cuGraphKernelNodeGetParams(nodes[2], &read_back));
    EXPECT(read_back.func == spin && read_back.gridDimX == 1401 && read_back.blockDimX == 256 &&
               *(unsigned long long *)read_back.kernelParams[0] == millisecond,
           "kernel node parameters read back");
    size_t roots = 4;
    CUgraphNode root_nodes[4];
    CU_OK(cuGraphGetRootNodes(chain, root_nodes, &roots));
    EXPECT(roots == 1 && root_nodes[0] == nodes[0] && root_nodes[1] == NULL, "one root node (%zu)", roots);
    CUgraphExec chain_exec;
    CU_OK(cuGraphInstantiate(&chain_exec, chain, NULL, NULL, 0)); /* the CUDA 10 entry point */
    CUevent start, stop;
    CU_OK(cuEventCreate(&start, 0));
    CU_OK(cuEventCreate(&stop, 0));
    CU_OK(cuEventRecord(start, stream));
    CU_OK(cuGraphLaunch(chain_exec, stream));
    CU_OK(cuEventRecord(stop, stream));
    CU_OK(cuEventSynchronize(stop));
    float elapsed = 0;
    CU_OK(cuEventElapsedTime(&elapsed, start, stop));
    EXPECT(fabsf(elapsed - 3.0f) < 0.01f, "three 1 ms kernel nodes took %.3f ms of the device clock", elapsed);
    CU_OK(cuGraphExecDestroy(chain_exec));
    CU_OK(cuGraphDestroy(chain));

    /* Graph memory: taken from the device at the first launch, kept after the executable graph is
     * destroyed, given back by a trim. */
    uint64_t used_before = device_used();
    CUgraph pooled;
    CU_OK(cuGraphCreate(&pooled, 0));
    CUDA_MEM_ALLOC_NODE_PARAMS allocation = alloc_node(64 * MIB);
    CUgraphNode alloc, release;
    CU_OK(cuGraphAddMemAllocNode(&alloc, pooled, NULL, 0, &allocation));
    CU_OK(cuGraphAddMemFreeNode(&release, pooled, &alloc, 1, allocation.dptr));
    CUdeviceptr freed = 0;
    CU_OK(cuGraphMemFreeNodeGetParams(release, &freed));
    EXPECT(allocation.dptr != 0 && freed == allocation.dptr, "the free node names the allocation");
    CUgraphExec pooled_exec, second;
    CU_OK(cuGraphInstantiateWithFlags(&pooled_exec, pooled, 0));
    EXPECT_CU(cuGraphInstantiateWithFlags(&second, pooled, 0), CUDA_ERROR_INVALID_VALUE); /* one at a time */
    EXPECT(device_used() == used_before && graph_pool(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT) == 0,
           "instantiation takes no device memory");
    CU_OK(cuGraphLaunch(pooled_exec, stream));
    CU_OK(cuStreamSynchronize(stream));
    EXPECT(device_used() == used_before + 64 * MIB && graph_pool(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT) == 64 * MIB &&
               graph_pool(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT) == 64 * MIB,
           "the first launch took 64 MiB (device %llu, reserved %llu)", (unsigned long long)(device_used() - used_before),
           (unsigned long long)graph_pool(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT));
    CU_OK(cuGraphExecDestroy(pooled_exec));
    EXPECT(graph_pool(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT) == 64 * MIB && graph_pool(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT) == 0,
           "destroying the executable graph keeps the pool's memory");
    CU_OK(cuDeviceGraphMemTrim(0));
    EXPECT(device_used() == used_before && graph_pool(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT) == 0 &&
               graph_pool(CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH) == 64 * MIB,
           "a trim gives it back");

    /* An allocation not freed in its graph outlives the launch, blocks a relaunch until freed. */
    CUgraph leaky;
    CU_OK(cuGraphCreate(&leaky, 0));
    CUDA_MEM_ALLOC_NODE_PARAMS kept = alloc_node(MIB);
    CU_OK(cuGraphAddMemAllocNode(&alloc, leaky, NULL, 0, &kept));
    CUgraphExec leaky_exec;
    CU_OK(cuGraphInstantiateWithFlags(&leaky_exec, leaky, 0));
    CU_OK(cuGraphLaunch(leaky_exec, stream));
    CU_OK(cuMemsetD8_v2(kept.dptr, 7, MIB)); /* live: ordinary device memory now */
    EXPECT_CU(cuGraphLaunch(leaky_exec, stream), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemFreeAsync(kept.dptr, stream));
    CU_OK(cuStreamSynchronize(stream));
    CU_OK(cuGraphLaunch(leaky_exec, stream));
    CU_OK(cuMemFree_v2(kept.dptr));
    CU_OK(cuGraphExecDestroy(leaky_exec));
    CU_OK(cuGraphDestroy(leaky));
    CU_OK(cuGraphDestroy(pooled));

    /* What capture cannot record invalidates it. */
    CUgraph invalid = (CUgraph)1;
    CU_OK(cuStreamBeginCapture_v2(stream, CU_STREAM_CAPTURE_MODE_RELAXED));
    EXPECT_CU(cuStreamSynchronize(stream), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    EXPECT_CU(cuStreamEndCapture(stream, &invalid), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    EXPECT(invalid == NULL, "no graph from an invalidated capture");
    EXPECT_CU(cuStreamBeginCapture_v2(NULL, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);

    /* A stream-ordered free returns the block when the stream reaches it. */
    CUdeviceptr block = 0;
    uint64_t used_idle = device_used();
    CU_OK(cuMemAllocAsync(&block, 256 * MIB, stream));
    CU_OK(launch_spin(spin, 200000000ULL, 1, stream));
    CU_OK(cuMemFreeAsync(block, stream));
    size_t free_bytes = 0, total = 0;
    CU_OK(cuMemGetInfo_v2(&free_bytes, &total));
    EXPECT(device_used() == used_idle + 256 * MIB, "the block is in use until the stream reaches its free");
    CU_OK(cuStreamSynchronize(stream));
    CU_OK(cuMemGetInfo_v2(&free_bytes, &total));
    EXPECT(device_used() == used_idle, "and back once it has");

    void *function = NULL;
    CUdriverProcAddressQueryResult found;
    CU_OK(cuGetProcAddress_v2("cuGraphInstantiate", &function, 12000, 0, &found));
    EXPECT(function == (void *)&cuGraphInstantiateWithFlags, "cuGraphInstantiate at 12000 is cuGraphInstantiateWithFlags");
    CU_OK(cuGetProcAddress_v2("cuGraphInstantiate", &function, 11000, 0, &found));
    EXPECT(function == (void *)&cuGraphInstantiate_v2, "cuGraphInstantiate at 11000 is cuGraphInstantiate_v2");
    fprintf(stderr, "  captured vectorAdd computes on every launch; 3 kernel nodes took %.3f ms; graph memory taken at the "
                    "first launch, kept after destruction, given back by a trim; frees in stream order\n", elapsed);
    return 0;
}

/* ---- libvgpu: graph launches paced ------------------------------------------------------------- */

#define PACED_GRAPHS 8
#define IN_FLIGHT 16

/* Launches graphs of 1-4 spin kernels of 10-200 us on 1-2000 blocks, picked at random, forever. */
int role_graph_launcher(int argc, char **argv) {
    (void)argc, (void)argv;
    CUfunction spin;
    CUstream stream;
    if (spin_and_stream(&spin, &stream)) return 1;
    unsigned seed = (unsigned)getpid();
    CUgraphExec execs[PACED_GRAPHS];
    for (int g = 0; g < PACED_GRAPHS; g++) {
        CUgraph graph;
        CU_OK(cuGraphCreate(&graph, 0));
        CUgraphNode previous = NULL;
        for (unsigned k = 0, kernels = 1 + (unsigned)rand_r(&seed) % 4; k < kernels; k++) {
            unsigned long long nanoseconds = 10000ULL + (unsigned)rand_r(&seed) % 190001;
            void *parameters[1];
            CUDA_KERNEL_NODE_PARAMS_v2 params = spin_node(spin, &nanoseconds, parameters, 1 + (unsigned)rand_r(&seed) % 2000);
            CUgraphNode node;
            CU_OK(cuGraphAddKernelNode_v2(&node, graph, previous != NULL ? &previous : NULL, previous != NULL, &params));
            previous = node;
        }
        CU_OK(cuGraphInstantiateWithFlags(&execs[g], graph, 0));
    }
    CUevent ring[IN_FLIGHT];
    for (int i = 0; i < IN_FLIGHT; i++) CU_OK(cuEventCreate(&ring[i], CU_EVENT_DISABLE_TIMING));
    for (unsigned i = 0;; i++) {
        if (i >= IN_FLIGHT) CU_OK(cuEventSynchronize(ring[i % IN_FLIGHT]));
        CU_OK(cuGraphLaunch(execs[(unsigned)rand_r(&seed) % PACED_GRAPHS], stream));
        CU_OK(cuEventRecord(ring[i % IN_FLIGHT], stream));
    }
}

int check_graph_launch_paced(int argc, char **argv) {
    (void)argc, (void)argv;
    int percent = atoi(getenv("CUDA_DEVICE_SM_LIMIT"));
    pid_t launcher = spawn_self("graph-launcher", NULL);
    uint64_t start = vgpu_now_ns(), from = start + 1500000000ULL, to = from + 2000000000ULL;
    vgpu_sleep_until_ns(to + 2 * MOCK_BUCKET_NS);
    double share = device_share_of(launcher, from, to);
    kill(launcher, SIGKILL);
    int status = wait_child(launcher);
    fprintf(stderr, "  graphs of 1-4 kernels under a %d%% limit: %.1f%% of the device\n", percent, share);
    EXPECT(status == 128 + SIGKILL, "the launcher ran until stopped (%d)", status);
    EXPECT(share >= percent - 3.0 && share <= percent + 3.0, "graph launches used %.1f%% of the device under a %d%% limit",
           share, percent);
    return 0;
}

/* ---- libvgpu: graph memory --------------------------------------------------------------------- */

static int used_view(uint64_t *used) {
    size_t free_bytes = 0, total = 0;
    CU_OK(cuMemGetInfo_v2(&free_bytes, &total));
    *used = total - free_bytes;
    return 0;
}

static int graph_with_memory(size_t bytes, bool freed_inside, CUgraph *graph) {
    CU_OK(cuGraphCreate(graph, 0));
    CUDA_MEM_ALLOC_NODE_PARAMS params = alloc_node(bytes);
    CUgraphNode alloc, release;
    CU_OK(cuGraphAddMemAllocNode(&alloc, *graph, NULL, 0, &params));
    if (freed_inside) CU_OK(cuGraphAddMemFreeNode(&release, *graph, &alloc, 1, params.dptr));
    return 0;
}

int check_graph_memory(int argc, char **argv) {
    (void)argc, (void)argv;
    uint64_t limit = env_bytes("CUDA_DEVICE_MEMORY_LIMIT");
    CUcontext context;
    if (setup_primary_context(&context)) return 1;
    CUstream stream;
    CU_OK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    uint64_t base = 0, used = 0;
    if (used_view(&base)) return 1;
    CUgraph first, second, uploaded;
    if (graph_with_memory(600 * MIB, true, &first) || graph_with_memory(600 * MIB, true, &second) ||
        graph_with_memory(300 * MIB, true, &uploaded))
        return 1;
    CUgraphExec first_exec, second_exec, uploaded_exec;
    CU_OK(cuGraphInstantiateWithFlags(&first_exec, first, 0));
    CU_OK(cuGraphInstantiateWithFlags(&second_exec, second, 0));
    if (used_view(&used)) return 1;
    EXPECT(used == base, "instantiating counts nothing: the driver reserves graph memory at upload or launch (%llu)",
           (unsigned long long)(used - base));

    CU_OK(cuGraphLaunch(first_exec, stream));
    CU_OK(cuStreamSynchronize(stream));
    if (used_view(&used)) return 1;
    EXPECT(used == base + 600 * MIB, "the first launch counts the 600 MiB the driver reserved (%llu MiB)",
           (unsigned long long)((used - base) / MIB));
    CUdeviceptr pointer = 0;
    EXPECT_CU(cuMemAlloc_v2(&pointer, limit - base - 600 * MIB + 1), CUDA_ERROR_OUT_OF_MEMORY);
    uint64_t reserved_before = graph_pool(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT);
    EXPECT_CU(cuGraphLaunch(second_exec, stream), CUDA_ERROR_OUT_OF_MEMORY); /* 1200 MiB of graph memory */
    EXPECT(graph_pool(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT) == reserved_before, "the refused launch reached no driver");

    CU_OK(cuGraphExecDestroy(first_exec));
    if (used_view(&used)) return 1;
    EXPECT(used == base + 600 * MIB, "the driver keeps a destroyed graph's memory in its pool: still counted");
    CU_OK(cuGraphLaunch(second_exec, stream)); /* maps the pool's unused 600 MiB: nothing new */
    CU_OK(cuStreamSynchronize(stream));
    if (used_view(&used)) return 1;
    EXPECT(used == base + 600 * MIB, "a second graph reusing the pool adds nothing (%llu MiB)", (unsigned long long)((used - base) / MIB));

    CU_OK(cuDeviceGraphMemTrim(0));
    if (used_view(&used)) return 1;
    EXPECT(used == base, "a trim gives it back (%llu MiB)", (unsigned long long)((used - base) / MIB));
    CU_OK(cuMemAlloc_v2(&pointer, 500 * MIB));
    EXPECT_CU(cuGraphLaunch(second_exec, stream), CUDA_ERROR_OUT_OF_MEMORY); /* trimmed: it would map 600 MiB again */
    CU_OK(cuMemFree_v2(pointer));
    CU_OK(cuGraphLaunch(second_exec, stream));
    CU_OK(cuStreamSynchronize(stream));

    CUDA_GRAPH_INSTANTIATE_PARAMS params = {.flags = CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD, .hUploadStream = stream};
    CU_OK(cuGraphInstantiateWithParams(&uploaded_exec, uploaded, &params));
    if (used_view(&used)) return 1;
    EXPECT(used == base + 900 * MIB, "instantiating with an upload counts its memory then (%llu MiB)",
           (unsigned long long)((used - base) / MIB));

    CU_OK(cuDevicePrimaryCtxReset_v2(0));
    CU_OK(cuDevicePrimaryCtxRetain(&context, 0));
    CU_OK(cuCtxSetCurrent(context));
    if (used_view(&used)) return 1;
    EXPECT(used == base, "a reset context's graphs give everything back (%llu MiB)", (unsigned long long)((used - base) / MIB));
    fprintf(stderr, "  graph memory counted at the first launch (or upload), kept after destruction, given back by trim "
                    "and context reset; over the limit a launch is refused before the driver\n");
    return 0;
}

/* ---- libvgpu: stream-ordered frees ------------------------------------------------------------- */

int check_free_async(int argc, char **argv) {
    (void)argc, (void)argv;
    CUfunction spin;
    CUstream stream;
    if (spin_and_stream(&spin, &stream)) return 1;
    uint64_t base = 0, used = 0;
    if (used_view(&base)) return 1;
    CUdeviceptr block = 0, other = 0;
    CU_OK(cuMemAllocAsync(&block, 600 * MIB, stream));
    CU_OK(launch_spin(spin, 300000000ULL, 1, stream));
    CU_OK(cuMemFreeAsync(block, stream));
    if (used_view(&used)) return 1;
    EXPECT(used == base + 600 * MIB, "an enqueued free gives nothing back before its stream reaches it (%llu MiB)",
           (unsigned long long)((used - base) / MIB));
    EXPECT_CU(cuMemAlloc_v2(&other, 600 * MIB), CUDA_ERROR_OUT_OF_MEMORY);
    CU_OK(cuStreamSynchronize(stream));
    if (used_view(&used)) return 1;
    EXPECT(used == base, "given back once the stream reached it (%llu MiB)", (unsigned long long)((used - base) / MIB));
    CU_OK(cuMemAlloc_v2(&other, 600 * MIB));
    CU_OK(cuMemFree_v2(other));

    /* The per-thread variants, with the per-thread default stream. */
    CU_OK(cuMemAllocAsync_ptsz(&block, 600 * MIB, NULL));
    CU_OK(cuLaunchKernel_ptsz(spin, 1, 1, 1, 32, 1, 1, 0, NULL, (void *[]){&(unsigned long long){200000000ULL}}, NULL));
    CU_OK(cuMemFreeAsync_ptsz(block, NULL));
    EXPECT_CU(cuMemAlloc_v2(&other, 600 * MIB), CUDA_ERROR_OUT_OF_MEMORY);
    CU_OK(cuStreamSynchronize_ptsz(NULL));
    CU_OK(cuMemAlloc_v2(&other, 600 * MIB));
    CU_OK(cuMemFree_v2(other));

    /* Captured allocations are graph memory, counted when the graph runs. */
    CUgraph graph;
    CU_OK(cuStreamBeginCapture_v2(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_OK(cuMemAllocAsync(&block, 600 * MIB, stream));
    CU_OK(cuMemFreeAsync(block, stream));
    CU_OK(cuStreamEndCapture(stream, &graph));
    if (used_view(&used)) return 1;
    EXPECT(used == base, "captured allocations are not counted when recorded (%llu MiB)", (unsigned long long)((used - base) / MIB));
    CUgraphExec exec;
    CU_OK(cuGraphInstantiateWithFlags(&exec, graph, 0));
    CU_OK(cuGraphLaunch(exec, stream));
    CU_OK(cuStreamSynchronize(stream));
    if (used_view(&used)) return 1;
    EXPECT(used == base + 600 * MIB, "but when their graph runs (%llu MiB)", (unsigned long long)((used - base) / MIB));
    fprintf(stderr, "  600 MiB freed on a busy stream stay counted until the stream reaches the free (plain, per-thread); "
                    "captured allocations count when their graph runs\n");
    return 0;
}

/* ---- libvgpu: one launch waits a bounded time -------------------------------------------------- */

struct huge_launch {
    CUcontext context;
    CUfunction spin;
    uint64_t waited_ns;
    CUresult result;
};

/* The largest grid there is, of a 10 us kernel: by the pacer's threads it would cost years. */
static void *launch_huge(void *pointer) {
    struct huge_launch *launch = pointer;
    unsigned long long nanoseconds = 10000ULL;
    void *parameters[] = {&nanoseconds};
    cuCtxSetCurrent(launch->context);
    uint64_t start = vgpu_now_ns();
    launch->result = cuLaunchKernel(launch->spin, 2147483647u, 65535, 1, 1024, 1, 1, 0, NULL, parameters, NULL);
    launch->waited_ns = vgpu_now_ns() - start;
    return NULL;
}

int check_launch_wait_bounded(int argc, char **argv) {
    (void)argc, (void)argv;
    CUcontext context;
    if (setup_primary_context(&context)) return 1;
    CUfunction spin;
    if (load_reference_kernel(&spin, MOCK_SPIN_KERNEL)) return 1;
    /* Calibrate the pacer on ordinary launches first. */
    uint64_t until = vgpu_now_ns() + 700000000ULL;
    for (unsigned i = 0; vgpu_now_ns() < until; i++) {
        CU_OK(launch_spin(spin, 100000ULL, 64, NULL));
        if (i % 8 == 7) CU_OK(cuCtxSynchronize());
    }
    struct huge_launch launches[4];
    pthread_t threads[4];
    for (int i = 0; i < 4; i++) {
        launches[i] = (struct huge_launch){.context = context, .spin = spin};
        EXPECT(pthread_create(&threads[i], NULL, launch_huge, &launches[i]) == 0, "thread started");
    }
    uint64_t longest = 0;
    for (int i = 0; i < 4; i++) {
        pthread_join(threads[i], NULL);
        CU_OK(launches[i].result);
        if (launches[i].waited_ns > longest) longest = launches[i].waited_ns;
    }
    struct huge_launch after = {.context = context, .spin = spin};
    launch_huge(&after);
    CU_OK(after.result);
    fprintf(stderr, "  4 threads launching 2^31 x 65535 blocks of 1024 threads at once under a %s%% limit: the longest "
                    "waited %.2f s, the next launch %.2f s (bound %.0f s)\n", getenv("CUDA_DEVICE_SM_LIMIT"),
            (double)longest / 1e9, (double)after.waited_ns / 1e9, 1.0);
    EXPECT(longest <= 1200000000ULL && after.waited_ns <= 1200000000ULL,
           "a launch waited %.2f s, the next %.2f s (bound 1 s)", (double)longest / 1e9, (double)after.waited_ns / 1e9);
    return 0;
}
