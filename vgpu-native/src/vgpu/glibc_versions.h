/*
 * Included first in every object of libvgpu.so (the Makefile passes -include). libvgpu.so is preloaded
 * into containers of any distribution, and the dynamic loader silently skips a preload that needs symbol
 * versions its glibc lacks: no enforcement at all. So every glibc function is bound at the oldest version
 * of the architecture (x86_64: 2.2.5, aarch64: 2.17), which every glibc since 2.17 provides, also those
 * that moved from libdl and libpthread into libc in 2.34 and got a new default version there. Functions
 * whose old versions behave differently are not used instead (stat, pthread_once, pow).
 * scripts/check-glibc-versions.sh fails the build when anything newer than 2.17 slips in.
 */
#ifndef VGPU_GLIBC_VERSIONS_H
#define VGPU_GLIBC_VERSIONS_H

#if defined(__x86_64__)
#define VGPU_GLIBC_OLDEST "GLIBC_2.2.5"
#elif defined(__aarch64__)
#define VGPU_GLIBC_OLDEST "GLIBC_2.17"
#endif

#ifdef VGPU_GLIBC_OLDEST
/* A directive for a function the object does not use leaves no trace. */
#define VGPU_BIND_OLDEST(function) __asm__(".symver " #function "," #function "@" VGPU_GLIBC_OLDEST)
VGPU_BIND_OLDEST(dladdr);
VGPU_BIND_OLDEST(dlerror);
VGPU_BIND_OLDEST(dlopen);
VGPU_BIND_OLDEST(dlvsym);
VGPU_BIND_OLDEST(pthread_attr_setstacksize);
VGPU_BIND_OLDEST(pthread_create);
VGPU_BIND_OLDEST(pthread_sigmask);
#undef VGPU_BIND_OLDEST
#endif

#endif
