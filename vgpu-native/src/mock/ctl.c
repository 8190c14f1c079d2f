/* vgpu-mock-ctl: inspects the mock GPUs' shared state and injects failures from a shell.
 *   vgpu-mock-ctl show                    devices, memory, busy time, processes
 *   vgpu-mock-ctl lost <physical index>   the device falls off the bus (raises Xid 79)
 *   vgpu-mock-ctl restore <physical index>
 *   vgpu-mock-ctl xid <physical index> <code>
 * It reads the same VGPU_MOCK_CONFIG and VGPU_MOCK_STATE as the mock libraries. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/parse.h"
#include "mock/config.h"
#include "mock/state.h"

static int usage(void) {
    fprintf(stderr, "usage: vgpu-mock-ctl show | lost <index> | restore <index> | xid <index> <code>\n");
    return 2;
}

static void show(const struct mock_config *config, struct mock_state *state) {
    printf("state %s, devices from %s\n", mock_state_path(), config->source);
    mock_state_reap(state);
    for (unsigned i = 0; i < config->device_count; i++) {
        const struct mock_state_device *device = &state->devices[i];
        printf("gpu %u %s %s used=%llu peak=%llu busy_ns=%llu lost=%u xids=%u\n", i, config->devices[i].uuid,
               config->devices[i].profile->key, (unsigned long long)atomic_load(&device->used_bytes),
               (unsigned long long)atomic_load(&device->peak_bytes), (unsigned long long)atomic_load(&device->busy_total_ns),
               (unsigned)atomic_load(&device->lost), (unsigned)atomic_load(&device->xid_count));
    }
    for (unsigned p = 0; p < MOCK_MAX_PROCESSES; p++) {
        struct mock_state_process *slot = &state->processes[p];
        if (atomic_load(&slot->state) != MOCK_SLOT_ACTIVE) continue;
        for (unsigned d = 0; d < config->device_count; d++) {
            uint64_t used = atomic_load(&slot->devices[d].used_bytes);
            unsigned contexts = atomic_load(&slot->devices[d].contexts);
            if (used || contexts)
                printf("process %d gpu %u used=%llu contexts=%u busy_ns=%llu\n", (int)slot->pid, d,
                       (unsigned long long)used, contexts, (unsigned long long)atomic_load(&slot->devices[d].busy_total_ns));
        }
    }
}

int main(int argc, char **argv) {
    if (argc < 2) return usage();
    const struct mock_config *config = mock_config_get();
    if (config == NULL) return 1;
    struct mock_state *state = mock_state_attach(config);
    if (state == NULL) return 1;
    if (strcmp(argv[1], "show") == 0 && argc == 2) {
        show(config, state);
        return 0;
    }
    uint64_t index = 0;
    if (argc < 3 || !vgpu_parse_uint(argv[2], config->device_count - 1, &index)) return usage();
    if (strcmp(argv[1], "lost") == 0 && argc == 3) {
        mock_state_set_lost(state, (unsigned)index, true);
    } else if (strcmp(argv[1], "restore") == 0 && argc == 3) {
        mock_state_set_lost(state, (unsigned)index, false);
    } else if (strcmp(argv[1], "xid") == 0 && argc == 4) {
        uint64_t code = 0;
        if (!vgpu_parse_uint(argv[3], 0xffffffffULL, &code) || code == 0) return usage();
        mock_state_raise_xid(state, (unsigned)index, code);
    } else {
        return usage();
    }
    return 0;
}
