#include "mock/profiles.h"

#include <string.h>

#include "mock_profiles.h" /* generated */
#include "nvml_types.h"

static const struct mock_architecture ARCHITECTURES[] = {
    /* name     nvml arch                 blk/SM smem/SM  optin   L2        bus   clock  memclk cores links ver mig */
    {"volta", NVML_DEVICE_ARCH_VOLTA, 32, 98304, 98304, 6291456, 4096, 1530000, 877000, 64, 6, 2, 0},
    {"turing", NVML_DEVICE_ARCH_TURING, 16, 65536, 65536, 4194304, 256, 1590000, 5001000, 64, 0, 0, 0},
    {"ampere", NVML_DEVICE_ARCH_AMPERE, 32, 167936, 166912, 41943040, 5120, 1410000, 1215000, 64, 12, 3, 1},
    {"ada", NVML_DEVICE_ARCH_ADA, 24, 102400, 101376, 50331648, 192, 2040000, 6251000, 128, 0, 0, 0},
    {"hopper", NVML_DEVICE_ARCH_HOPPER, 32, 233472, 232448, 52428800, 5120, 1980000, 2619000, 128, 18, 4, 1},
    {"blackwell", NVML_DEVICE_ARCH_BLACKWELL, 32, 233472, 232448, 134217728, 8192, 1965000, 3996000, 128, 18, 5, 1},
};

/* Used for an architecture the CSV names but this table does not know yet. */
static const struct mock_architecture GENERIC_ARCHITECTURE = {
    "unknown", NVML_DEVICE_ARCH_UNKNOWN, 32, 102400, 101376, 4194304, 256, 1500000, 5000000, 64, 0, 0, 0};

const struct mock_profile *mock_profile_find(const char *key) {
    for (unsigned i = 0; i < MOCK_PROFILE_COUNT; i++)
        if (strcmp(MOCK_PROFILES[i].key, key) == 0) return &MOCK_PROFILES[i];
    return NULL;
}

const struct mock_architecture *mock_architecture_of(const struct mock_profile *profile) {
    for (unsigned i = 0; i < sizeof ARCHITECTURES / sizeof ARCHITECTURES[0]; i++)
        if (strcmp(ARCHITECTURES[i].name, profile->architecture) == 0) return &ARCHITECTURES[i];
    return &GENERIC_ARCHITECTURE;
}

void mock_profile_keys(char *buffer, unsigned size) {
    unsigned used = 0;
    buffer[0] = '\0';
    for (unsigned i = 0; i < MOCK_PROFILE_COUNT; i++) {
        const char *key = MOCK_PROFILES[i].key;
        unsigned length = (unsigned)strlen(key);
        if (used + length + 2 > size) break;
        if (i > 0) buffer[used++] = ',';
        memcpy(buffer + used, key, length);
        used += length;
        buffer[used] = '\0';
    }
}
