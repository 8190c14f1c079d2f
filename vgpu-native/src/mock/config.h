/*
 * The mock machine: which physical GPUs exist (VGPU_MOCK_CONFIG), which of them this process may see
 * (VGPU_MOCK_VISIBLE_DEVICES, the container runtime's /dev/nvidiaN filter), how long kernels take on
 * the virtual clock, and the driver constants. Read once per process; both mock libraries share this code.
 */
#ifndef VGPU_MOCK_CONFIG_H
#define VGPU_MOCK_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "common/util.h"
#include "mock/profiles.h"

#define MOCK_MAX_DEVICES 16
#define MOCK_DEFAULT_PROFILE "A100-SXM4-40GB"
#define MOCK_UUID_PREFIX "GPU-12345678-1234-1234-1234-1234567800"
#define MOCK_KERNEL_TABLE_SIZE 32
#define MOCK_KERNEL_NAME_LENGTH 128

struct mock_device {
    unsigned physical_index;
    const struct mock_profile *profile;
    const struct mock_architecture *architecture;
    char uuid[VGPU_UUID_TEXT_LENGTH + 1];
    unsigned char uuid_bytes[16];
    unsigned pci_domain, pci_bus, pci_device;
    int numa_node;
    bool starts_lost; /* health=lost in the device-list file */
    bool mig_enabled;
    int nvlinks;      /* active NVLink links */
    char serial[32];
};

/* One entry of VGPU_MOCK_KERNELS: the mean device time of the kernels of that name. */
struct mock_kernel_cost {
    char name[MOCK_KERNEL_NAME_LENGTH];
    uint64_t mean_ns;
};

struct mock_config {
    unsigned device_count;                 /* physical devices on the mock machine */
    struct mock_device devices[MOCK_MAX_DEVICES];
    unsigned visible_count;                /* devices this process may open */
    unsigned visible[MOCK_MAX_DEVICES];    /* physical index of each visible device, in order */
    uint64_t kernel_ns;                    /* mean device time of a kernel the table does not list */
    unsigned kernel_jitter_percent;        /* each launch takes mean x [1 - j, 1 + j] */
    uint64_t seed;                         /* of the launch-to-launch variation */
    unsigned kernel_table_count;
    struct mock_kernel_cost kernel_table[MOCK_KERNEL_TABLE_SIZE];
    uint64_t context_bytes;                /* device memory a context occupies */
    int driver_version;                    /* cuDriverGetVersion, e.g. 13000 */
    char source[256];                      /* where the device list came from, for messages */
};

/* Loads the configuration from the environment; returns NULL (after logging one line naming the
 * variable and the problem) if it is invalid. The result is cached for the process. */
const struct mock_config *mock_config_get(void);

/* Mean device time of the kernels named name: its VGPU_MOCK_KERNELS entry, else VGPU_MOCK_KERNEL_NS. */
uint64_t mock_config_kernel_mean_ns(const struct mock_config *config, const char *name);

/* The visible device with this physical index, or NULL. */
const struct mock_device *mock_config_visible_physical(const struct mock_config *config, unsigned physical_index);

#endif
