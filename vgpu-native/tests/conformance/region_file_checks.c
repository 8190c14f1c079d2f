/* The shared region's path lies in a directory every uid of the container can write (the node agent's
 * 0777 directory, or /tmp). Another uid may have put anything there before a root CUDA process of the
 * container starts: a symbolic or hard link to one of the container's files, a directory, a FIFO, a file
 * of its own. Each check plants one as uid 65534 in a 0777 directory (not sticky, so the kernel's
 * protected_symlinks and protected_regular do not step in), then starts a root CUDA process with that
 * region path: its cuInit must fail closed with one log line naming the path and why, and the planted
 * file and the file it leads to must stay exactly as they were.
 *
 * The checks need root, to become the second uid; without it they exit with SKIPPED and one line
 * saying so, which run-conformance.sh prints as SKIP. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "checks.h"
#include "vgpu/region.h"

#define OTHER_UID 65534 /* nobody: the container's other uid */
#define SKIPPED 77      /* run-conformance.sh prints SKIP for this exit code */
#define VICTIM_TEXT "a file of the container: root's, mode 0600, never the region's\n"
#define REGION_BYTES ((off_t)sizeof(struct vgpu_region))

struct scene {
    char dir[600];       /* the 0777 directory of the region */
    char region[700];    /* the region path the CUDA process is given */
    char victim[700];    /* root's file beside the directory */
    char absent[700];    /* a path where nothing exists, for a dangling link */
    int dir_fd;          /* O_PATH descriptors: the other uid plants through them, as it cannot */
    int victim_dir_fd;   /* reach the check's directory by path (the runner's work directory is 0700) */
};

/* What a file looked like: compared before and after the CUDA process ran. */
struct snapshot {
    bool exists;
    mode_t mode;
    uid_t uid;
    nlink_t links;
    ino_t inode;
    off_t size;
    unsigned long long content_hash;
};

static int write_file(const char *path, mode_t mode, const char *text) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (fd < 0) return -1;
    ssize_t length = (ssize_t)strlen(text);
    bool written = write(fd, text, (size_t)length) == length && fchmod(fd, mode) == 0;
    close(fd);
    return written ? 0 : -1;
}

/* $VGPU_TEST_DIR/<name>/: the victim, and the 0777 directory "shared" where the region is to be. */
static int set_scene(struct scene *scene, const char *name) {
    char base[512];
    snprintf(base, sizeof base, "%s/%s", getenv("VGPU_TEST_DIR"), name);
    EXPECT(mkdir(base, 0755) == 0, "%s created: %s", base, strerror(errno));
    snprintf(scene->dir, sizeof scene->dir, "%s/shared", base);
    snprintf(scene->region, sizeof scene->region, "%s/region", scene->dir);
    snprintf(scene->victim, sizeof scene->victim, "%s/victim", base);
    snprintf(scene->absent, sizeof scene->absent, "%s/created-through-a-link", base);
    EXPECT(mkdir(scene->dir, 0777) == 0 && chmod(scene->dir, 0777) == 0, "%s created with mode 0777: %s", scene->dir,
           strerror(errno));
    EXPECT(write_file(scene->victim, 0600, VICTIM_TEXT) == 0, "%s written: %s", scene->victim, strerror(errno));
    scene->dir_fd = open(scene->dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    scene->victim_dir_fd = open(base, O_PATH | O_DIRECTORY | O_CLOEXEC);
    EXPECT(scene->dir_fd >= 0 && scene->victim_dir_fd >= 0, "directories of %s open: %s", base, strerror(errno));
    return 0;
}

static void close_scene(struct scene *scene) {
    close(scene->dir_fd);
    close(scene->victim_dir_fd);
}

static struct snapshot snapshot_of(const char *path) {
    struct snapshot shot = {0};
    struct stat status;
    if (lstat(path, &status) != 0) return shot;
    shot.exists = true;
    shot.mode = status.st_mode;
    shot.uid = status.st_uid;
    shot.links = status.st_nlink;
    shot.inode = status.st_ino;
    shot.size = status.st_size;
    shot.content_hash = 1469598103934665603ULL; /* FNV-1a of the content of a regular file */
    int fd = S_ISREG(status.st_mode) ? open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC) : -1;
    if (fd >= 0) {
        unsigned char buffer[65536];
        ssize_t got;
        while ((got = read(fd, buffer, sizeof buffer)) > 0)
            for (ssize_t i = 0; i < got; i++) shot.content_hash = (shot.content_hash ^ buffer[i]) * 1099511628211ULL;
        close(fd);
    }
    return shot;
}

static int expect_unchanged(const char *what, const char *path, const struct snapshot *before) {
    struct snapshot after = snapshot_of(path);
    EXPECT(after.exists == before->exists && after.inode == before->inode, "%s: %s %s", what, path,
           after.exists ? "was replaced" : "was removed");
    EXPECT(after.mode == before->mode, "%s: %s changed mode from %o to %o", what, path, (unsigned)before->mode,
           (unsigned)after.mode);
    EXPECT(after.uid == before->uid && after.links == before->links, "%s: %s changed owner or links", what, path);
    EXPECT(after.size == before->size, "%s: %s changed size from %lld to %lld bytes", what, path,
           (long long)before->size, (long long)after.size);
    EXPECT(after.content_hash == before->content_hash, "%s: %s was overwritten", what, path);
    return 0;
}

/* Becomes the container's other uid, with no supplementary group of root's left. */
static bool become_other_uid(void) { return setgroups(0, NULL) == 0 && setgid(OTHER_UID) == 0 && setuid(OTHER_UID) == 0; }

/* SKIPPED, with the reason on stdout, where this process cannot act as a second uid: not root, or a root
 * without the capability (a user namespace that does not map uid 65534). */
static int skip_without_second_uid(void) {
    if (geteuid() != 0) {
        printf("needs root to become uid %d and plant files as a second user of the container (uid %d here)\n",
               OTHER_UID, (int)geteuid());
        return SKIPPED;
    }
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) _exit(become_other_uid() ? 0 : 1);
    if (wait_child(child) != 0) {
        printf("root here cannot become uid %d (no CAP_SETUID, or a user namespace without it)\n", OTHER_UID);
        return SKIPPED;
    }
    return 0;
}

typedef int (*plant_fn)(const struct scene *scene);

/* plant() as uid 65534 in a child: 0, the errno it failed with, or 200 if the child could not change uid. */
static int plant_as_other_uid(plant_fn plant, const struct scene *scene) {
    pid_t child = fork();
    if (child == 0) {
        if (!become_other_uid()) _exit(200);
        _exit(plant(scene) == 0 ? 0 : errno > 0 && errno < 200 ? errno : 199);
    }
    return wait_child(child);
}

static int plant_symlink_to_victim(const struct scene *scene) { return symlinkat(scene->victim, scene->dir_fd, "region"); }
static int plant_dangling_symlink(const struct scene *scene) { return symlinkat(scene->absent, scene->dir_fd, "region"); }
static int plant_hard_link(const struct scene *scene) {
    return linkat(scene->victim_dir_fd, "victim", scene->dir_fd, "region", 0);
}
static int plant_directory(const struct scene *scene) { return mkdirat(scene->dir_fd, "region", 0700); }
static int plant_fifo(const struct scene *scene) { return mkfifoat(scene->dir_fd, "region", 0600); }
/* A file of exactly a region's size, zero-filled, readable and writable by everyone, as a region is. */
static int plant_own_region_sized_file(const struct scene *scene) {
    int fd = openat(scene->dir_fd, "region", O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0) return -1;
    int result = fchmod(fd, 0666) == 0 && ftruncate(fd, REGION_BYTES) == 0 ? 0 : -1;
    close(fd);
    return result;
}

/* The root CUDA process, in a child with its stderr in log_path: cuInit must refuse with
 * CUDA_ERROR_OPERATING_SYSTEM, no allocation may succeed afterwards, and NVML's memory view is refused. */
static int refused_cuda_process(const char *region, const char *log_path) {
    int report = dup(STDERR_FILENO);
    int fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (report < 0 || fd < 0 || dup2(fd, STDERR_FILENO) < 0) return 10;
    setenv("CUDA_DEVICE_MEMORY_SHARED_CACHE", region, 1);
    CUresult init = cuInit(0);
    if (init != CUDA_ERROR_OPERATING_SYSTEM) {
        dprintf(report, "  cuInit returned %d, wanted CUDA_ERROR_OPERATING_SYSTEM (304)\n", (int)init);
        return 11;
    }
    CUcontext context = NULL;
    if (cuDevicePrimaryCtxRetain(&context, 0) == CUDA_SUCCESS) cuCtxSetCurrent(context);
    CUdeviceptr pointer = 0;
    CUresult allocation = cuMemAlloc_v2(&pointer, MIB);
    if (allocation == CUDA_SUCCESS) {
        dprintf(report, "  after cuInit refused, an allocation succeeded\n");
        return 12;
    }
    /* Asked again, and through NVML: refused each time, without another attempt or log line. */
    init = cuInit(0);
    if (init != CUDA_ERROR_OPERATING_SYSTEM) {
        dprintf(report, "  the second cuInit returned %d, wanted CUDA_ERROR_OPERATING_SYSTEM (304)\n", (int)init);
        return 13;
    }
    nvmlDevice_t device = NULL;
    nvmlMemory_t memory;
    if (nvmlInit_v2() != NVML_SUCCESS || nvmlDeviceGetHandleByIndex_v2(0, &device) != NVML_SUCCESS) return 14;
    for (int query = 0; query < 2; query++) {
        nvmlReturn_t result = nvmlDeviceGetMemoryInfo(device, &memory);
        if (result != NVML_ERROR_UNKNOWN) {
            dprintf(report, "  nvmlDeviceGetMemoryInfo returned %d, wanted NVML_ERROR_UNKNOWN (999)\n", (int)result);
            return 15;
        }
    }
    return 0;
}

/* Runs the root CUDA process on the region path and reads its log: one line naming the path and why. */
static int expect_refused(const char *what, const struct scene *scene, const char *why) {
    char log_path[700];
    snprintf(log_path, sizeof log_path, "%s/%s.log", getenv("VGPU_TEST_DIR"), what);
    fflush(stderr);
    pid_t child = fork();
    if (child == 0) _exit(refused_cuda_process(scene->region, log_path));
    int code = wait_child(child);
    char log[4096] = {0};
    int fd = open(log_path, O_RDONLY | O_CLOEXEC);
    ssize_t got = fd >= 0 ? read(fd, log, sizeof log - 1) : -1;
    if (fd >= 0) close(fd);
    EXPECT(code == 0, "%s: the root CUDA process was not refused (child code %d); its log: %s", what, code, log);
    EXPECT(got > 0 && strchr(log, '\n') == strrchr(log, '\n') && lines_containing(log, scene->region) == 1 &&
               lines_containing(log, why) == 1,
           "%s: wanted one log line naming %s and saying '%s', got: %s", what, scene->region, why, log);
    fprintf(stderr, "  %-14s %s", what, log);
    return 0;
}

/* Who plants the file at the region path. */
enum planter {
    OTHER_USER,           /* uid 65534 */
    OTHER_USER_OR_ROOT,   /* uid 65534; root where the kernel's protected_hardlinks stops it */
    ROOT,                 /* a file of the container's own root, from before this process */
};

/* Plants, runs the root CUDA process, and checks that the planted path and the victim are as they were
 * and that nothing was created through a link. */
static int attack(const char *name, plant_fn plant, enum planter planter, const char *why) {
    struct scene scene;
    if (set_scene(&scene, name)) return 1;
    int planted = planter == ROOT ? (plant(&scene) == 0 ? 0 : errno) : plant_as_other_uid(plant, &scene);
    if (planter == OTHER_USER_OR_ROOT && planted == EPERM) {
        fprintf(stderr, "  %-16s fs.protected_hardlinks stops uid %d here; planted by root, as where it is 0\n", name,
                OTHER_UID);
        planted = plant(&scene) == 0 ? 0 : errno;
    }
    EXPECT(planted == 0, "%s: could not plant %s (%s)", name, scene.region, planted == 200 ? "no setuid" : strerror(planted));
    struct snapshot region = snapshot_of(scene.region), victim = snapshot_of(scene.victim);
    /* Every finding is printed: what the process did to the files says more than that it started. */
    int failed = expect_refused(name, &scene, why);
    failed |= expect_unchanged(name, scene.region, &region);
    failed |= expect_unchanged(name, scene.victim, &victim);
    if (!failed && snapshot_of(scene.absent).exists) {
        fprintf(stderr, "  %s: %s was created through the link\n", name, scene.absent);
        failed = 1;
    }
    close_scene(&scene);
    return failed;
}

/* A symbolic link to root's own file, and one to where nothing is yet: root must neither rewrite the
 * first (before: made 0666 and overwritten with a region) nor create the second. */
int check_region_symlink_refused(int argc, char **argv) {
    (void)argc, (void)argv;
    int skip = skip_without_second_uid();
    if (skip) return skip;
    return attack("symlink", plant_symlink_to_victim, OTHER_USER, "symbolic link") ||
           attack("dangling-symlink", plant_dangling_symlink, OTHER_USER, "symbolic link");
}

/* A second name for root's own file: it is the same file, so it must be refused by its link count. */
int check_region_hard_link_refused(int argc, char **argv) {
    (void)argc, (void)argv;
    int skip = skip_without_second_uid();
    if (skip) return skip;
    return attack("hard-link", plant_hard_link, OTHER_USER_OR_ROOT, "hard links");
}

/* A directory and a FIFO at the region path: not regular files, refused before anything changes them. */
int check_region_not_regular_refused(int argc, char **argv) {
    (void)argc, (void)argv;
    int skip = skip_without_second_uid();
    if (skip) return skip;
    return attack("directory", plant_directory, OTHER_USER, "not a regular file") ||
           attack("fifo", plant_fifo, OTHER_USER, "not a regular file");
}

/* A file of the other uid, the size of a region: root does not write into another user's file. */
int check_region_foreign_owner_refused(int argc, char **argv) {
    (void)argc, (void)argv;
    int skip = skip_without_second_uid();
    if (skip) return skip;
    return attack("foreign-owner", plant_own_region_sized_file, OTHER_USER, "owned by uid 65534;");
}

static int plant_short_file(const struct scene *scene) {
    return write_file(scene->region, 0644, "a file of root's that is not a region\n");
}
/* Larger than a region (HAMi-core's layout is): a region is never grown into, nor truncated out of, a file. */
static int plant_long_file(const struct scene *scene) {
    if (write_file(scene->region, 0666, "another layout\n") != 0) return -1;
    return truncate(scene->region, REGION_BYTES * 2);
}

/* A root-owned regular file that is not a region's size: libvgpu resizes only a file it created. */
int check_region_wrong_size_refused(int argc, char **argv) {
    (void)argc, (void)argv;
    int skip = skip_without_second_uid();
    if (skip) return skip;
    return attack("short-file", plant_short_file, ROOT, "bytes, not the") ||
           attack("long-file", plant_long_file, ROOT, "bytes, not the");
}

/* ---- the normal case: a region created fresh, shared, and started afresh once its processes are gone -- */

struct sharer_report {
    int code; /* 0, or what went wrong: 1 no uid change, 2 cuInit, 3 context, 4 cuMemGetInfo, 5 allocation */
    int result;
    size_t free_bytes, total_bytes;
};

struct sharer {
    pid_t pid;
    int release_fd; /* closing it lets the process go */
    struct sharer_report report;
};

/* A CUDA process of the container: cuInit, its primary context, what cuMemGetInfo says, then `hold`
 * bytes held until released. */
static int sharer_process(bool other_uid, uint64_t hold, int report_fd, int release_fd) {
    struct sharer_report report = {0};
    CUcontext context = NULL;
    CUdeviceptr pointer = 0;
    if (other_uid && !become_other_uid()) report.code = 1;
    else if ((report.result = cuInit(0)) != CUDA_SUCCESS) report.code = 2;
    else if ((report.result = cuDevicePrimaryCtxRetain(&context, 0)) != CUDA_SUCCESS ||
             (report.result = cuCtxSetCurrent(context)) != CUDA_SUCCESS) report.code = 3;
    else if ((report.result = cuMemGetInfo_v2(&report.free_bytes, &report.total_bytes)) != CUDA_SUCCESS) report.code = 4;
    else if (hold > 0 && (report.result = cuMemAlloc_v2(&pointer, hold)) != CUDA_SUCCESS) report.code = 5;
    if (write(report_fd, &report, sizeof report) != (ssize_t)sizeof report) return 9;
    char byte;
    while (read(release_fd, &byte, 1) > 0) {
    }
    return report.code;
}

static int start_sharer(struct sharer *sharer, const char *name, bool other_uid, uint64_t hold) {
    int report_pipe[2], release_pipe[2];
    EXPECT(pipe(report_pipe) == 0 && pipe(release_pipe) == 0, "pipes for %s", name);
    fflush(stderr);
    sharer->pid = fork();
    if (sharer->pid == 0) {
        close(report_pipe[0]);
        close(release_pipe[1]);
        _exit(sharer_process(other_uid, hold, report_pipe[1], release_pipe[0]));
    }
    close(report_pipe[1]);
    close(release_pipe[0]);
    sharer->release_fd = release_pipe[1];
    ssize_t got = read(report_pipe[0], &sharer->report, sizeof sharer->report);
    close(report_pipe[0]);
    EXPECT(got == (ssize_t)sizeof sharer->report, "%s reported nothing", name);
    EXPECT(sharer->report.code == 0, "%s failed at step %d (result %d; 1 setuid, 2 cuInit, 3 context, 4 cuMemGetInfo, "
           "5 allocation)", name, sharer->report.code, sharer->report.result);
    return 0;
}

static int finish_sharer(struct sharer *sharer, const char *name) {
    close(sharer->release_fd);
    int code = wait_child(sharer->pid);
    EXPECT(code == 0, "%s exited with %d", name, code);
    return 0;
}

static int expect_region_file(const char *path, const struct snapshot *first) {
    struct snapshot now = snapshot_of(path);
    EXPECT(now.exists && S_ISREG(now.mode) && (now.mode & 07777) == 0666 && now.uid == 0 && now.links == 1 &&
               now.size == REGION_BYTES,
           "%s: a root-owned regular file of mode 0666, one link and %lld bytes; it is mode %o, uid %d, %lu links, %lld "
           "bytes", path, (long long)REGION_BYTES, (unsigned)now.mode, (int)now.uid, (unsigned long)now.links,
           (long long)now.size);
    EXPECT(first == NULL || now.inode == first->inode, "%s was replaced by another file", path);
    return 0;
}

static int share(const char *region, uint64_t limit) {
    const uint64_t held = 256 * MIB;
    struct sharer holder, joiner, successor;
    if (start_sharer(&holder, "the region's creator (root)", false, held)) return 1;
    EXPECT(holder.report.total_bytes == limit, "the creator sees %zu bytes, its limit is %llu", holder.report.total_bytes,
           (unsigned long long)limit);
    if (expect_region_file(region, NULL)) return 1;
    struct snapshot created = snapshot_of(region);
    /* Processes of another uid join a region root created: the owner is root. */
    if (start_sharer(&joiner, "a process of uid 65534", true, 0)) return 1;
    EXPECT(joiner.report.total_bytes == limit && joiner.report.free_bytes + held <= limit,
           "the joiner sees %zu of %zu bytes free while the creator holds %llu: the region is not shared",
           joiner.report.free_bytes, joiner.report.total_bytes, (unsigned long long)held);
    if (finish_sharer(&joiner, "the joiner") || finish_sharer(&holder, "the creator")) return 1;
    fprintf(stderr, "  created 0666 by root, joined by uid %d, which saw %zu MiB free of %zu while root held %llu\n",
            OTHER_UID, (size_t)(joiner.report.free_bytes / MIB), (size_t)(joiner.report.total_bytes / MIB), (unsigned long long)(held / MIB));

    /* All gone, a count left behind (a process killed between its two steps): the next process alone
     * starts the same file afresh, in place. */
    struct vgpu_region *stale = map_region_writable();
    EXPECT(stale != NULL, "%s maps", region);
    atomic_store(&stale->devices[0].memory_used, limit - MIB);
    munmap(stale, sizeof *stale);
    if (start_sharer(&successor, "the next process (root)", false, limit / 2)) return 1;
    EXPECT(successor.report.free_bytes + 128 * MIB >= limit,
           "the next process alone sees %zu bytes free of %llu: the stale count survived", successor.report.free_bytes,
           (unsigned long long)limit);
    if (finish_sharer(&successor, "the next process")) return 1;
    if (expect_region_file(region, &created)) return 1;
    fprintf(stderr, "  the next process alone started the same file afresh (%zu MiB free)\n",
            (size_t)(successor.report.free_bytes / MIB));
    return 0;
}

/* The region's directory here is under /tmp, which every uid can reach (the runner's work directory is
 * 0700), with the mock machine's state beside it. */
int check_region_created_and_shared(int argc, char **argv) {
    (void)argc, (void)argv;
    int skip = skip_without_second_uid();
    if (skip) return skip;
    uint64_t limit = env_bytes("CUDA_DEVICE_MEMORY_LIMIT");
    EXPECT(limit > 512 * MIB, "CUDA_DEVICE_MEMORY_LIMIT above 512 MiB");
    char dir[] = "/tmp/vgpu-region-shared.XXXXXX", region[64], state[64];
    EXPECT(mkdtemp(dir) != NULL && chmod(dir, 0777) == 0, "a 0777 directory under /tmp: %s", strerror(errno));
    snprintf(region, sizeof region, "%s/region", dir);
    snprintf(state, sizeof state, "%s/mock.state", dir);
    setenv("CUDA_DEVICE_MEMORY_SHARED_CACHE", region, 1);
    setenv("VGPU_MOCK_STATE", state, 1);
    int failed = share(region, limit);
    unlink(region);
    unlink(state);
    rmdir(dir);
    return failed;
}
