#include "common/ptrmap.h"

#include <stdlib.h>

/* Key 0 marks an empty slot and key 1 a removed one; real keys are remapped away from both. */
#define EMPTY_KEY 0ULL
#define TOMBSTONE_KEY 1ULL

static uint64_t encode(uint64_t key) { return key < 2 ? key + 0x8000000000000000ULL : key; }

static size_t slot_of(uint64_t key, size_t capacity) {
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdULL;
    key ^= key >> 33;
    return (size_t)key & (capacity - 1);
}

static bool grow(struct vgpu_ptrmap *map) {
    size_t capacity = map->capacity == 0 ? 64 : map->capacity * 2;
    if (map->count * 4 < map->capacity) capacity = map->capacity; /* mostly tombstones: rehash in place size */
    uint64_t *keys = calloc(capacity, sizeof *keys);
    void **values = calloc(capacity, sizeof *values);
    if (keys == NULL || values == NULL) {
        free(keys);
        free(values);
        return false;
    }
    for (size_t i = 0; i < map->capacity; i++) {
        uint64_t key = map->keys[i];
        if (key == EMPTY_KEY || key == TOMBSTONE_KEY) continue;
        size_t slot = slot_of(key, capacity);
        while (keys[slot] != EMPTY_KEY) slot = (slot + 1) & (capacity - 1);
        keys[slot] = key;
        values[slot] = map->values[i];
    }
    free(map->keys);
    free(map->values);
    map->keys = keys;
    map->values = values;
    map->capacity = capacity;
    map->tombstones = 0;
    return true;
}

bool vgpu_ptrmap_put(struct vgpu_ptrmap *map, uint64_t key, void *value) {
    key = encode(key);
    if ((map->count + map->tombstones + 1) * 4 > map->capacity * 3 && !grow(map)) return false;
    size_t slot = slot_of(key, map->capacity), reusable = (size_t)-1;
    while (map->keys[slot] != EMPTY_KEY) {
        if (map->keys[slot] == key) {
            map->values[slot] = value;
            return true;
        }
        if (map->keys[slot] == TOMBSTONE_KEY && reusable == (size_t)-1) reusable = slot;
        slot = (slot + 1) & (map->capacity - 1);
    }
    if (reusable != (size_t)-1) {
        slot = reusable;
        map->tombstones--;
    }
    map->keys[slot] = key;
    map->values[slot] = value;
    map->count++;
    return true;
}

static size_t find(const struct vgpu_ptrmap *map, uint64_t key) {
    if (map->capacity == 0) return (size_t)-1;
    key = encode(key);
    size_t slot = slot_of(key, map->capacity);
    while (map->keys[slot] != EMPTY_KEY) {
        if (map->keys[slot] == key) return slot;
        slot = (slot + 1) & (map->capacity - 1);
    }
    return (size_t)-1;
}

void *vgpu_ptrmap_get(const struct vgpu_ptrmap *map, uint64_t key) {
    size_t slot = find(map, key);
    return slot == (size_t)-1 ? NULL : map->values[slot];
}

void *vgpu_ptrmap_remove(struct vgpu_ptrmap *map, uint64_t key) {
    size_t slot = find(map, key);
    if (slot == (size_t)-1) return NULL;
    void *value = map->values[slot];
    map->keys[slot] = TOMBSTONE_KEY;
    map->values[slot] = NULL;
    map->count--;
    map->tombstones++;
    return value;
}

void vgpu_ptrmap_each(const struct vgpu_ptrmap *map, void (*visit)(uint64_t key, void *value, void *context), void *context) {
    for (size_t i = 0; i < map->capacity; i++) {
        uint64_t key = map->keys[i];
        if (key == EMPTY_KEY || key == TOMBSTONE_KEY) continue;
        visit(key >= 0x8000000000000000ULL && key - 0x8000000000000000ULL < 2 ? key - 0x8000000000000000ULL : key,
              map->values[i], context);
    }
}

void vgpu_ptrmap_clear(struct vgpu_ptrmap *map, void (*release)(void *value)) {
    for (size_t i = 0; i < map->capacity; i++)
        if (map->keys[i] != EMPTY_KEY && map->keys[i] != TOMBSTONE_KEY) release(map->values[i]);
    free(map->keys);
    free(map->values);
    *map = (struct vgpu_ptrmap){0};
}
