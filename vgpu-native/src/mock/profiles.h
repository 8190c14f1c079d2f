/* GPU profiles of the mock devices. The rows come from vgpu-mock's profiles.csv at build time
 * (scripts/gen-profiles.awk); the per-architecture constants below fill in what the CSV does not
 * carry, with values typical of that architecture's data-center parts. */
#ifndef VGPU_MOCK_PROFILES_H
#define VGPU_MOCK_PROFILES_H

#include <stdint.h>

struct mock_profile {
    const char *key;                 /* e.g. "A100-SXM4-40GB" */
    const char *name;                /* nvmlDeviceGetName / cuDeviceGetName */
    uint64_t memory_mib;
    int cc_major;
    int cc_minor;
    int multiprocessors;
    int max_threads_per_multiprocessor;
    const char *architecture;        /* lower case: ampere, hopper, ... */
    uint32_t pci_device_id;          /* (device id << 16) | 0x10DE */
};

struct mock_architecture {
    const char *name;
    unsigned nvml_architecture;      /* NVML_DEVICE_ARCH_* */
    int max_blocks_per_multiprocessor;
    int shared_memory_per_multiprocessor;
    int shared_memory_per_block_optin;
    int l2_cache_bytes;
    int memory_bus_width_bits;
    int clock_rate_khz;
    int memory_clock_rate_khz;
    int cores_per_multiprocessor;
    int nvlinks_on_sxm;              /* NVLink links of the SXM form factor */
    int nvlink_version;
    int supports_mig;
};

const struct mock_profile *mock_profile_find(const char *key);
const struct mock_architecture *mock_architecture_of(const struct mock_profile *profile);
/* Writes the comma-separated list of known profile keys, for error messages. */
void mock_profile_keys(char *buffer, unsigned size);

#endif
