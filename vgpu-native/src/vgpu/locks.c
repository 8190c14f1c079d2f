#include "vgpu/locks.h"

#include "vgpu/vgpu.h"

extern pthread_mutex_t *const __start_vgpu_mutexes[];
extern pthread_mutex_t *const __stop_vgpu_mutexes[];
extern struct vgpu_once *const __start_vgpu_onces[];
extern struct vgpu_once *const __stop_vgpu_onces[];

static _Atomic int fork_handler_installed;

void vgpu_once(struct vgpu_once *once, void (*initialise)(void)) {
    if (atomic_load_explicit(&once->done, memory_order_acquire)) return;
    unsigned long self = (unsigned long)pthread_self();
    if (atomic_load_explicit(&once->runner, memory_order_relaxed) == self) return; /* re-entered from initialise */
    if (!atomic_exchange(&fork_handler_installed, 1)) pthread_atfork(NULL, NULL, vgpu_after_fork_in_child);
    pthread_mutex_lock(&once->lock);
    if (!atomic_load_explicit(&once->done, memory_order_relaxed)) {
        atomic_store_explicit(&once->runner, self, memory_order_relaxed);
        initialise();
        atomic_store_explicit(&once->runner, 0, memory_order_relaxed);
        atomic_store_explicit(&once->done, 1, memory_order_release);
    }
    pthread_mutex_unlock(&once->lock);
}

void vgpu_locks_after_fork(void) {
    for (pthread_mutex_t *const *mutex = __start_vgpu_mutexes; mutex < __stop_vgpu_mutexes; mutex++)
        pthread_mutex_init(*mutex, NULL);
    for (struct vgpu_once *const *once = __start_vgpu_onces; once < __stop_vgpu_onces; once++) {
        pthread_mutex_init(&(*once)->lock, NULL);
        atomic_store(&(*once)->runner, 0); /* an initialisation cut off by fork is simply run again */
    }
}
