/* Second interposer: the definition RTLD_NEXT from shim A must find. */
__attribute__((visibility("default"))) const char *vgpu_shim_probe(void);

const char *vgpu_shim_probe(void) { return "b"; }
