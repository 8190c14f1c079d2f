#include "common/visible.h"

#include <string.h>
#include <strings.h>

#include "common/parse.h"
#include "common/util.h"

static int find_device(const char *item, const char *const *uuids, int count) {
    uint64_t index = 0;
    if (vgpu_parse_uint(item, 1024, &index)) return index < (uint64_t)count ? (int)index : -1;
    size_t length = strlen(item);
    if (length <= 4 || strncasecmp(item, "GPU-", 4) != 0) return -1; /* MIG- and others: not supported here */
    int found = -1;
    for (int i = 0; i < count; i++) {
        if (strncasecmp(uuids[i], item, length) != 0) continue;
        if (found >= 0) return -1; /* an ambiguous prefix names no device */
        found = i;
    }
    return found;
}

int vgpu_cuda_visible_order(const char *value, const char *const *uuids, int count, int *order) {
    if (value == NULL) {
        for (int i = 0; i < count; i++) order[i] = i;
        return count;
    }
    char list[512];
    vgpu_copy_string(list, value, sizeof list);
    int visible = 0;
    char *save = NULL;
    for (char *item = strtok_r(list, ",", &save); item != NULL && visible < count; item = strtok_r(NULL, ",", &save)) {
        int device = find_device(vgpu_trim(item), uuids, count);
        if (device < 0) break;
        for (int i = 0; i < visible; i++)
            if (order[i] == device) return visible;
        order[visible++] = device;
    }
    return visible;
}
