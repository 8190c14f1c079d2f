/* CUDA_VISIBLE_DEVICES as the CUDA driver applies it: a comma list of indices into the devices the
 * process can open, or of (unique prefixes of) their UUIDs; the list ends at the first entry that names
 * no device or repeats one. Shared by the mock driver and by libvgpu.so, which needs the same answer
 * to map NVML devices to CUDA ordinals without initialising CUDA. */
#ifndef VGPU_COMMON_VISIBLE_H
#define VGPU_COMMON_VISIBLE_H

/* Fills order[] with indices into uuids[] (the devices in enumeration order) in CUDA ordinal order
 * and returns how many are visible. value NULL means CUDA_VISIBLE_DEVICES is unset: all, in order. */
int vgpu_cuda_visible_order(const char *value, const char *const *uuids, int count, int *order);

#endif
