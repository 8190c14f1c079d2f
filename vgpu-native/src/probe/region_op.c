/* The probe's overbook op: writes a usage into its container's shared region, as any process of the
 * container can (the region is a file in a directory the container writes). libvgpu never trusts the
 * region for a limit; the node monitor shows the region's figure as the container's own account, and the
 * node watchdog, which acts on NVML's accounting only, must leave such a container alone. */
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "probe/probe.h"

#define MIB (1ULL << 20)
#define REGION_MAGIC 0x3147455255504756ULL /* "VGPUREG1", layout version 1 */
#define HEADER_DEVICE_COUNT 16
#define HEADER_DEVICE_SIZE 20
#define HEADER_DEVICES_OFFSET 32
#define DEVICE_MEMORY_USED 112

/* 0, or what went wrong: 1 no region named, 2 cannot open or map it, 3 not a layout-1 region, 4 no such device. */
static int overbook(int ordinal, uint64_t bytes) {
    const char *path = getenv("CUDA_DEVICE_MEMORY_SHARED_CACHE");
    if (path == NULL || path[0] != '/') return 1;
    int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_size < 4096) {
        if (fd >= 0) close(fd);
        return 2;
    }
    unsigned char *region = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (region == MAP_FAILED) return 2;
    int result = 0;
    uint64_t magic, offset;
    uint32_t count, size;
    memcpy(&magic, region, sizeof magic);
    memcpy(&count, region + HEADER_DEVICE_COUNT, sizeof count);
    memcpy(&size, region + HEADER_DEVICE_SIZE, sizeof size);
    memcpy(&offset, region + HEADER_DEVICES_OFFSET, sizeof offset);
    if (magic != REGION_MAGIC || size < DEVICE_MEMORY_USED + 8 || offset + (uint64_t)count * size > (uint64_t)st.st_size) {
        result = 3;
    } else if ((uint32_t)ordinal >= count) {
        result = 4;
    } else {
        _Atomic uint64_t *used = (_Atomic uint64_t *)(void *)(region + offset + (uint64_t)ordinal * size + DEVICE_MEMORY_USED);
        atomic_store(used, bytes);
    }
    munmap(region, (size_t)st.st_size);
    return result;
}

void probe_overbook(const struct probe_op *op) {
    int result = overbook(op->ordinal, op->size_mib * MIB);
    if (result != 0) probe_note("overbook: the shared region cannot be written (%d); run a driver op first so libvgpu creates it", result);
    probe_emit("\"op\":\"overbook\",\"sizeMiB\":%llu,\"ordinal\":%d,\"result\":%d", (unsigned long long)op->size_mib, op->ordinal, result);
}
