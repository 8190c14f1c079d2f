/* Open-addressing hash map from 64-bit keys (pointers, handles) to pointers. Not thread-safe: callers
 * hold their own lock. Used for allocation bookkeeping in the mock driver and in libvgpu. */
#ifndef VGPU_COMMON_PTRMAP_H
#define VGPU_COMMON_PTRMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct vgpu_ptrmap {
    uint64_t *keys;
    void **values;
    size_t capacity; /* power of two, 0 before first insert */
    size_t count;
    size_t tombstones;
};

bool vgpu_ptrmap_put(struct vgpu_ptrmap *map, uint64_t key, void *value); /* false: out of host memory */
void *vgpu_ptrmap_get(const struct vgpu_ptrmap *map, uint64_t key);
void *vgpu_ptrmap_remove(struct vgpu_ptrmap *map, uint64_t key);       /* returns the removed value or NULL */
/* Empties the map, passing each value to release, and frees its storage. */
void vgpu_ptrmap_clear(struct vgpu_ptrmap *map, void (*release)(void *value));
/* Calls visit for each entry; visit may not modify the map. */
void vgpu_ptrmap_each(const struct vgpu_ptrmap *map, void (*visit)(uint64_t key, void *value, void *context), void *context);

#endif
