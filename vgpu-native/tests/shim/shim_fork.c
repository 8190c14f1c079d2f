/* Preloaded after libvgpu.so by the fork-while-locked check. It sees every pthread_mutex_lock libvgpu.so
 * makes, so that one of its threads can hold all of libvgpu's mutexes while the check forks; and it can
 * stop libvgpu's dlopen or open of a named path, to catch libvgpu inside a once-only initialisation at
 * fork. Nothing of libvgpu's internals is named here: any mutex it locks is caught. */
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))
#define MAX_LOCKS 256
#define MAX_BLOCKED_PATHS 4

EXPORT int pthread_mutex_lock(pthread_mutex_t *mutex);
EXPORT int vgpu_forkshim_hold(void);
EXPORT void vgpu_forkshim_release(void);
EXPORT void vgpu_forkshim_block(const char *path);
EXPORT int vgpu_forkshim_blocked(void);
EXPORT void vgpu_forkshim_unblock(void);
EXPORT void *dlopen(const char *file, int mode);
EXPORT int open(const char *path, int flags, ...);

static _Atomic(pthread_mutex_t *) seen[MAX_LOCKS];
static _Atomic int seen_count;

static void *next(const char *name) { return dlsym(RTLD_NEXT, name); }

static bool from_libvgpu(const void *address) {
    Dl_info info;
    if (dladdr(address, &info) == 0 || info.dli_fname == NULL) return false;
    const char *base = strrchr(info.dli_fname, '/');
    base = base != NULL ? base + 1 : info.dli_fname;
    return strncmp(base, "libvgpu", 7) == 0 && strstr(base, "shim") == NULL;
}

static void remember(pthread_mutex_t *mutex) {
    int count = atomic_load(&seen_count);
    for (int i = 0; i < count && i < MAX_LOCKS; i++)
        if (atomic_load(&seen[i]) == mutex) return;
    int slot = atomic_fetch_add(&seen_count, 1);
    if (slot < MAX_LOCKS) atomic_store(&seen[slot], mutex);
}

int pthread_mutex_lock(pthread_mutex_t *mutex) {
    static int (*real_lock)(pthread_mutex_t *);
    if (real_lock == NULL) real_lock = (int (*)(pthread_mutex_t *))next("pthread_mutex_lock");
    if (from_libvgpu(__builtin_return_address(0))) remember(mutex);
    return real_lock(mutex);
}

/* ---- holding every mutex ------------------------------------------------------------------- */

static pthread_t holder;
static int held_count;
static int release_pipe[2], held_pipe[2];

static void *hold_all(void *unused) {
    (void)unused;
    int (*lock)(pthread_mutex_t *) = (int (*)(pthread_mutex_t *))next("pthread_mutex_lock");
    int (*unlock)(pthread_mutex_t *) = (int (*)(pthread_mutex_t *))next("pthread_mutex_unlock");
    pthread_mutex_t *mine[MAX_LOCKS];
    int count = atomic_load(&seen_count);
    held_count = 0;
    for (int i = 0; i < count && i < MAX_LOCKS; i++) {
        pthread_mutex_t *mutex = atomic_load(&seen[i]);
        bool duplicate = mutex == NULL;
        for (int j = 0; j < held_count && !duplicate; j++) duplicate = mine[j] == mutex;
        if (!duplicate && lock(mutex) == 0) mine[held_count++] = mutex;
    }
    char byte = 'h';
    (void)!write(held_pipe[1], &byte, 1);
    (void)!read(release_pipe[0], &byte, 1);
    for (int i = held_count - 1; i >= 0; i--) unlock(mine[i]);
    return NULL;
}

/* Returns once another thread holds every mutex libvgpu has locked so far; how many. */
int vgpu_forkshim_hold(void) {
    if (pipe(release_pipe) != 0 || pipe(held_pipe) != 0 || pthread_create(&holder, NULL, hold_all, NULL) != 0) return -1;
    char byte;
    return read(held_pipe[0], &byte, 1) == 1 ? held_count : -1;
}

void vgpu_forkshim_release(void) {
    char byte = 'r';
    (void)!write(release_pipe[1], &byte, 1);
    pthread_join(holder, NULL);
    close(release_pipe[0]), close(release_pipe[1]), close(held_pipe[0]), close(held_pipe[1]);
}

/* ---- stopping libvgpu inside an initialisation ------------------------------------------------ */

static char blocked_paths[MAX_BLOCKED_PATHS][512];
static int blocked_path_count;
static _Atomic pid_t blocking_pid; /* only the process that asked blocks; its forked child does not */
static _Atomic int waiting;

void vgpu_forkshim_block(const char *path) {
    if (path == NULL || blocked_path_count == MAX_BLOCKED_PATHS) return;
    strncpy(blocked_paths[blocked_path_count], path, sizeof blocked_paths[0] - 1);
    blocked_path_count++;
    atomic_store(&blocking_pid, getpid());
}

int vgpu_forkshim_blocked(void) { return atomic_load(&waiting); }

void vgpu_forkshim_unblock(void) { atomic_store(&blocking_pid, 0); }

static void maybe_block(const char *path, const void *caller) {
    if (path == NULL || atomic_load(&blocking_pid) != getpid() || !from_libvgpu(caller)) return;
    bool listed = false;
    for (int i = 0; i < blocked_path_count && !listed; i++) listed = strcmp(blocked_paths[i], path) == 0;
    if (!listed) return;
    atomic_fetch_add(&waiting, 1);
    while (atomic_load(&blocking_pid) == getpid()) usleep(1000);
}

void *dlopen(const char *file, int mode) {
    maybe_block(file, __builtin_return_address(0));
    return ((void *(*)(const char *, int))next("dlopen"))(file, mode);
}

int open(const char *path, int flags, ...) {
    mode_t mode = 0;
    if (flags & (O_CREAT | O_TMPFILE)) {
        va_list arguments;
        va_start(arguments, flags);
        mode = va_arg(arguments, mode_t);
        va_end(arguments);
    }
    maybe_block(path, __builtin_return_address(0));
    return ((int (*)(const char *, int, ...))next("open"))(path, flags, mode);
}
