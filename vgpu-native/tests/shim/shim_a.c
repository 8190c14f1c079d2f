/* First of two interposers preloaded after libvgpu.so: it asks dlsym(RTLD_NEXT) for the symbol that
 * it and shim B both define, and must be answered with shim B's. */
#include <dlfcn.h>
#include <stdio.h>

__attribute__((visibility("default"))) const char *vgpu_shim_probe(void);

const char *vgpu_shim_probe(void) {
    static __thread int depth;
    static char answer[64];
    if (depth > 0) return "a(again: RTLD_NEXT resolved relative to the wrong object)";
    depth++;
    const char *(*next)(void) = (const char *(*)(void))dlsym(RTLD_NEXT, "vgpu_shim_probe");
    snprintf(answer, sizeof answer, "a->%s", next != NULL ? next() : "nothing");
    depth--;
    return answer;
}
