/*
 * Every mutex and once-only initialisation of libvgpu.so is declared with the macros below, which also
 * register it in a linker section. A child forked while another thread held a mutex, or was inside an
 * initialisation, would wait forever for a thread it does not have; vgpu_locks_after_fork resets them
 * all in the child. pthread_once is not used: it cannot be reset, and its symbol version (GLIBC_2.34 as
 * glibc now builds it) would keep libvgpu.so from loading on older glibc.
 */
#ifndef VGPU_LOCKS_H
#define VGPU_LOCKS_H

#include <pthread.h>
#include <stdatomic.h>

struct vgpu_once {
    _Atomic int done;
    _Atomic unsigned long runner; /* pthread_self() of the thread running the initialisation, 0 = none */
    pthread_mutex_t lock;
};

#define VGPU_REGISTER_IN(section_name, type, name) \
    static type *const name##_registration __attribute__((section(section_name), used)) = &name

/* static pthread_mutex_t name, reset in forked children. */
#define VGPU_MUTEX(name)                                       \
    static pthread_mutex_t name = PTHREAD_MUTEX_INITIALIZER;   \
    VGPU_REGISTER_IN("vgpu_mutexes", pthread_mutex_t, name)

/* static struct vgpu_once name, for vgpu_once(). */
#define VGPU_ONCE(name)                                                  \
    static struct vgpu_once name = {0, 0, PTHREAD_MUTEX_INITIALIZER};    \
    VGPU_REGISTER_IN("vgpu_onces", struct vgpu_once, name)

/* Runs initialise once per process; concurrent callers wait for it to finish. A call made from inside
 * initialise itself (the driver's loader looking a symbol up through our dlsym, for instance) returns at
 * once instead of waiting for itself. The first call installs the fork handler. */
void vgpu_once(struct vgpu_once *once, void (*initialise)(void));

/* In a forked child: every registered mutex is unlocked, and every initialisation that had not
 * finished in the parent runs again when next needed. */
void vgpu_locks_after_fork(void);

#endif
