/* The limits of this container: HAMi-core's environment contract, or the read-only limits file that
 * overrides it. A value that cannot be read is an error, never "no limit"; so is a limits file that is
 * not complete: the node agent writes END as its last line, and a file without it (empty, cut short, a
 * directory, unreadable) names its path in the error.
 *
 * A limits file may grant cards by UUID (VGPU_DEVICES): its indexed keys then name positions in that
 * list, not CUDA ordinals, because the tenant controls which cards are visible and in what order. A
 * container whose grant directory is mounted but whose file the node agent has not written yet waits
 * for it, bounded, and is refused when it never comes. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "common/log.h"
#include "common/parse.h"
#include "vgpu/locks.h"
#include "vgpu/vgpu.h"

/* The test build moves the directory (the Makefile's libvgpu-syslimits.so). */
#ifndef VGPU_SYSTEM_LIMITS_DIR
#define VGPU_SYSTEM_LIMITS_DIR "/etc/vgpu"
#endif
#define VGPU_SYSTEM_LIMITS_FILE VGPU_SYSTEM_LIMITS_DIR "/limits"

#define GRANT_WAIT_VARIABLE "VGPU_GRANT_WAIT_SECONDS"
#define GRANT_WAIT_DEFAULT_SECONDS 30
#define GRANT_WAIT_MAX_SECONDS 300
#define GRANT_POLL_NS 100000000ULL /* 100 ms */
#define DEVICES_KEY "VGPU_DEVICES"

extern char **environ;

static const char *const PLAIN_KEYS[] = {
    "CUDA_DEVICE_MEMORY_LIMIT",  "CUDA_DEVICE_SM_LIMIT", "CUDA_DEVICE_MEMORY_SHARED_CACHE", "GPU_CORE_UTILIZATION_POLICY",
    "CUDA_DISABLE_CONTROL",      "CUDA_TASK_PRIORITY",   "CUDA_OVERSUBSCRIBE",              "LIBCUDA_LOG_LEVEL",
};
static const char *const INDEXED_KEYS[] = {"CUDA_DEVICE_MEMORY_LIMIT_", "CUDA_DEVICE_SM_LIMIT_"};

#define MAX_SETTINGS 64
#define MAX_LIMITS_FILE 65536
#define END_LINE "END"

struct setting {
    char key[64];
    char value[900]; /* VGPU_DEVICES: up to 16 UUIDs of 40 characters and their commas */
    int line;        /* in a limits file; 0 for the environment */
};

struct settings {
    struct setting items[MAX_SETTINGS];
    int count;
    char origin[560]; /* for messages: "environment" or "limits file /etc/vgpu/limits" */
};

static char error_line[900];

static bool fail(const char *format, ...) __attribute__((format(printf, 1, 2)));
static bool fail(const char *format, ...) {
    va_list arguments;
    va_start(arguments, format);
    vsnprintf(error_line, sizeof error_line, format, arguments);
    va_end(arguments);
    return false;
}

static bool is_plain_key(const char *key) {
    for (unsigned i = 0; i < sizeof PLAIN_KEYS / sizeof PLAIN_KEYS[0]; i++)
        if (strcmp(key, PLAIN_KEYS[i]) == 0) return true;
    return false;
}

/* True for every name this contract owns, including malformed indexed ones such as
 * CUDA_DEVICE_MEMORY_LIMIT_X (which must be reported, not ignored). */
static bool is_contract_key(const char *key) {
    if (is_plain_key(key)) return true;
    for (unsigned i = 0; i < sizeof INDEXED_KEYS / sizeof INDEXED_KEYS[0]; i++)
        if (strncmp(key, INDEXED_KEYS[i], strlen(INDEXED_KEYS[i])) == 0) return true;
    return false;
}

static bool add_setting(struct settings *settings, const char *key, size_t key_length, const char *value, int line) {
    if (key_length >= sizeof settings->items[0].key || strlen(value) >= sizeof settings->items[0].value)
        return fail("%.*s is too long (from %s)", (int)key_length, key, settings->origin);
    for (int i = 0; i < settings->count; i++)
        if (strncmp(settings->items[i].key, key, key_length) == 0 && settings->items[i].key[key_length] == '\0')
            return fail("%.*s is set twice in %s", (int)key_length, key, settings->origin);
    if (settings->count == MAX_SETTINGS) return fail("more than %d settings in %s", MAX_SETTINGS, settings->origin);
    struct setting *item = &settings->items[settings->count++];
    memcpy(item->key, key, key_length);
    item->key[key_length] = '\0';
    vgpu_copy_string(item->value, value, sizeof item->value);
    item->line = line;
    return true;
}

/* The name of an environment entry that sets a limit (LIBCUDA_LOG_LEVEL is read by the log module);
 * false for every other entry. */
static bool limit_key_of(const char *entry, char *key, size_t size, const char **value) {
    const char *equals = strchr(entry, '=');
    size_t length = equals != NULL ? (size_t)(equals - entry) : 0;
    if (equals == NULL || length >= size) return false;
    memcpy(key, entry, length);
    key[length] = '\0';
    *value = equals + 1;
    return is_contract_key(key) && strcmp(key, "LIBCUDA_LOG_LEVEL") != 0;
}

static bool read_environment(struct settings *settings) {
    vgpu_copy_string(settings->origin, "environment", sizeof settings->origin);
    for (char **entry = environ; entry != NULL && *entry != NULL; entry++) {
        char key[96];
        const char *value = NULL;
        if (limit_key_of(*entry, key, sizeof key, &value) && !add_setting(settings, key, strlen(key), value, 0)) return false;
    }
    /* Granting cards is the node agent's alone: from the environment (the pod spec, the tenant's) it
     * would only ever be the tenant's own claim. */
    if (getenv(DEVICES_KEY) != NULL) LOG_DEBUG("ignoring " DEVICES_KEY " from the environment: only a limits file grants devices");
    return true;
}

/* The whole file into text (NUL-terminated); false with the error set. Reading, not stat-ing, is what
 * tells a directory (EISDIR) or a FIFO (empty) from a file. */
static bool read_whole(const char *path, int fd, char *text, size_t size) {
    size_t length = 0;
    for (;;) {
        ssize_t got = read(fd, text + length, size - 1 - length);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) return fail("cannot read limits file %s: %s", path, strerror(errno));
        if (got == 0) break;
        length += (size_t)got;
        if (length == size - 1) return fail("limits file %s is larger than %zu bytes", path, size - 2);
    }
    text[length] = '\0';
    if (length == 0) return fail("limits file %s is empty", path);
    if (strlen(text) != length) return fail("limits file %s is not text (it holds a NUL byte)", path);
    return true;
}

/* Complete: the last line is exactly END, with its newline. Returns where END starts. */
static char *end_line(const char *path, char *text) {
    size_t length = strlen(text), end = sizeof END_LINE; /* "END\n" */
    if (text[length - 1] != '\n') {
        fail("limits file %s is incomplete: its last line has no newline (cut short?)", path);
        return NULL;
    }
    if (length < end || strcmp(text + length - end, END_LINE "\n") != 0 || (length > end && text[length - end - 1] != '\n')) {
        fail("limits file %s is incomplete: its last line is not " END_LINE " (the node agent writes it last)", path);
        return NULL;
    }
    return text + length - end;
}

/* KEY=VALUE per line; '#' comments and blank lines ignored; every key must belong to the contract; the
 * last line END. */
static bool read_limits_file(const char *path, int fd, struct settings *settings) {
    static char text[MAX_LIMITS_FILE + 2]; /* loaded once, under the configuration's once */
    snprintf(settings->origin, sizeof settings->origin, "limits file %s", path);
    if (!read_whole(path, fd, text, sizeof text)) return false;
    char *end = end_line(path, text);
    if (end == NULL) return false;
    *end = '\0';
    int number = 0;
    char *save = NULL;
    for (char *line = text; line != NULL && *line != '\0'; line = save) {
        save = strchr(line, '\n');
        if (save != NULL) *save++ = '\0';
        number++;
        char *trimmed = vgpu_trim(line);
        if (*trimmed == '\0' || *trimmed == '#') continue;
        if (strcmp(trimmed, END_LINE) == 0) return fail("limits file %s line %d: " END_LINE " before the last line", path, number);
        char *equals = strchr(trimmed, '=');
        if (equals == NULL) return fail("limits file %s line %d is not KEY=VALUE: \"%.80s\"", path, number, trimmed);
        *equals = '\0';
        char *key = vgpu_trim(trimmed), *value = vgpu_trim(equals + 1);
        if (!is_contract_key(key) && strcmp(key, DEVICES_KEY) != 0)
            return fail("limits file %s line %d: unknown key %.64s", path, number, key);
        if (!add_setting(settings, key, strlen(key), value, number)) return false;
    }
    return true;
}

/* Opens a limits file; -1 with errno set. Non-blocking, so that a FIFO reads as empty instead of
 * waiting for a writer. */
static int open_limits_file(const char *path) { return open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK); }

static bool parse_index(const char *key, const char *prefix, int *index) {
    uint64_t value = 0;
    if (!vgpu_parse_uint(key + strlen(prefix), VGPU_MAX_DEVICES - 1, &value)) return false;
    *index = (int)value;
    return true;
}

static bool apply_sm_limit(const char *value, unsigned *limit) {
    uint64_t percent = 0;
    if (!vgpu_parse_uint(value, 100, &percent)) return false;
    *limit = percent >= 100 ? 0 : (unsigned)percent; /* 0 and 100 both mean: no compute limit */
    return true;
}

/* VGPU_DEVICES=<uuid>[,<uuid>...]: the cards granted, in the order the indexed keys refer to. Every
 * entry must be a GPU UUID, none twice, at most 16; an empty list grants nothing and is an error. */
static bool apply_devices(const char *value, struct vgpu_config *config, const char *origin) {
    char list[sizeof ((struct setting *)0)->value];
    vgpu_copy_string(list, value, sizeof list);
    int count = 0;
    for (char *item = list;;) {
        char *comma = strchr(item, ',');
        if (comma != NULL) *comma = '\0';
        char *uuid = vgpu_trim(item);
        if (*uuid == '\0')
            return fail(DEVICES_KEY "=%.200s (from %s): an empty entry (the value is a comma list of GPU UUIDs)", value, origin);
        if (count == VGPU_MAX_DEVICES)
            return fail(DEVICES_KEY "=%.200s (from %s): more than %d devices", value, origin, VGPU_MAX_DEVICES);
        if (!vgpu_uuid_parse(uuid, config->granted[count]))
            return fail(DEVICES_KEY "=%.200s (from %s): \"%.60s\" is not a GPU UUID such as "
                        "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", value, origin, uuid);
        for (int i = 0; i < count; i++)
            if (memcmp(config->granted[i], config->granted[count], sizeof config->granted[i]) == 0)
                return fail(DEVICES_KEY "=%.200s (from %s): %s is listed twice", value, origin, uuid);
        count++;
        if (comma == NULL) break;
        item = comma + 1;
    }
    config->granted_count = count;
    return true;
}

/* With VGPU_DEVICES an index names a position in that list: one past its end grants no card. */
static bool granted_index(const struct vgpu_config *config, const char *key, const char *value, int index, const char *origin) {
    if (config->granted_count == 0 || index < config->granted_count) return true;
    return fail("%s=%s (from %s): " DEVICES_KEY " grants %d device(s), so the suffix must be 0-%d", key, value, origin,
                config->granted_count, config->granted_count - 1);
}

/* Applies one setting; explicit per-device values override the all-device ones afterwards. */
static bool apply(const struct setting *item, struct vgpu_config *config, bool *memory_set, bool *sm_set,
                  const char *origin) {
    const char *key = item->key, *value = item->value;
    int index = 0;
    uint64_t bytes = 0;
    bool flag = false;
    long number = 0;
    if (strcmp(key, "CUDA_DEVICE_MEMORY_LIMIT") == 0) {
        if (!vgpu_parse_size(value, &bytes)) goto bad_size;
        for (int i = 0; i < VGPU_MAX_DEVICES; i++)
            if (!memory_set[i]) config->memory_limit[i] = bytes;
    } else if (strncmp(key, "CUDA_DEVICE_MEMORY_LIMIT_", 25) == 0) {
        if (!parse_index(key, "CUDA_DEVICE_MEMORY_LIMIT_", &index))
            return fail("%s=%s (from %s): the suffix must be a device index 0-%d", key, value, origin, VGPU_MAX_DEVICES - 1);
        if (!granted_index(config, key, value, index, origin)) return false;
        if (!vgpu_parse_size(value, &bytes)) goto bad_size;
        config->memory_limit[index] = bytes;
        memory_set[index] = true;
    } else if (strcmp(key, "CUDA_DEVICE_SM_LIMIT") == 0) {
        unsigned limit = 0;
        if (!apply_sm_limit(value, &limit)) goto bad_percent;
        for (int i = 0; i < VGPU_MAX_DEVICES; i++)
            if (!sm_set[i]) config->sm_limit[i] = limit;
    } else if (strncmp(key, "CUDA_DEVICE_SM_LIMIT_", 21) == 0) {
        if (!parse_index(key, "CUDA_DEVICE_SM_LIMIT_", &index))
            return fail("%s=%s (from %s): the suffix must be a device index 0-%d", key, value, origin, VGPU_MAX_DEVICES - 1);
        if (!granted_index(config, key, value, index, origin)) return false;
        if (!apply_sm_limit(value, &config->sm_limit[index])) goto bad_percent;
        sm_set[index] = true;
    } else if (strcmp(key, DEVICES_KEY) == 0) {
        return apply_devices(value, config, origin);
    } else if (strcmp(key, "CUDA_DEVICE_MEMORY_SHARED_CACHE") == 0) {
        if (value[0] != '/') return fail("%s=%s (from %s): must be an absolute path", key, value, origin);
        vgpu_copy_string(config->region_path, value, sizeof config->region_path);
    } else if (strcmp(key, "GPU_CORE_UTILIZATION_POLICY") == 0) {
        if (strcasecmp(value, "default") == 0) config->policy = VGPU_POLICY_DEFAULT;
        else if (strcasecmp(value, "force") == 0) config->policy = VGPU_POLICY_FORCE;
        else if (strcasecmp(value, "disable") == 0) config->policy = VGPU_POLICY_DISABLE;
        else return fail("%s=%s (from %s): must be default, force or disable", key, value, origin);
    } else if (strcmp(key, "CUDA_DISABLE_CONTROL") == 0 || strcmp(key, "CUDA_OVERSUBSCRIBE") == 0) {
        if (!vgpu_parse_bool(value, &flag)) return fail("%s=%s (from %s): must be true or false", key, value, origin);
        if (strcmp(key, "CUDA_DISABLE_CONTROL") == 0) config->disable_control = flag;
        else config->oversubscribe = flag;
    } else if (strcmp(key, "CUDA_TASK_PRIORITY") == 0) {
        if (!vgpu_parse_int(value, -1000000, 1000000, &number)) return fail("%s=%s (from %s): must be an integer", key, value, origin);
        config->priority = (int)number;
    } else if (strcmp(key, "LIBCUDA_LOG_LEVEL") == 0) {
        if (!vgpu_parse_int(value, 0, 9, &number)) return fail("%s=%s (from %s): must be 0-9", key, value, origin);
        if (getenv("LIBCUDA_LOG_LEVEL") == NULL) vgpu_log_set_threshold((int)number);
    }
    return true;
bad_size:
    return fail("%s=%s (from %s): not a size such as 4096m, 1g, 512k or a byte count", key, value, origin);
bad_percent:
    return fail("%s=%s (from %s): not a percentage 0-100", key, value, origin);
}

/* Where a setting came from, for messages: "environment" or "limits file <path> line <n>". */
static const char *origin_of(const struct settings *settings, const struct setting *item, char *buffer, size_t size) {
    if (item->line == 0) return settings->origin;
    snprintf(buffer, size, "%s line %d", settings->origin, item->line);
    return buffer;
}

/* Indexed keys last, so that CUDA_DEVICE_MEMORY_LIMIT_<i> wins over CUDA_DEVICE_MEMORY_LIMIT (and is
 * checked against VGPU_DEVICES, read in the first pass). */
static bool build(const struct settings *settings, struct vgpu_config *config) {
    bool memory_set[VGPU_MAX_DEVICES] = {false}, sm_set[VGPU_MAX_DEVICES] = {false};
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < settings->count; i++) {
            bool indexed = strncmp(settings->items[i].key, "CUDA_DEVICE_MEMORY_LIMIT_", 25) == 0 ||
                           strncmp(settings->items[i].key, "CUDA_DEVICE_SM_LIMIT_", 21) == 0;
            if (indexed != (pass == 1)) continue;
            char origin[sizeof settings->origin + 24];
            if (!apply(&settings->items[i], config, memory_set, sm_set, origin_of(settings, &settings->items[i], origin, sizeof origin)))
                return false;
        }
    }
    return true;
}

static void note_ignored_environment(const char *file) {
    if (vgpu_log_threshold() < VGPU_LOG_DEBUG) return;
    for (char **entry = environ; entry != NULL && *entry != NULL; entry++) {
        char key[96];
        const char *value = NULL;
        if (limit_key_of(*entry, key, sizeof key, &value))
            LOG_DEBUG("ignoring %s from the environment: limits file %s is authoritative", key, file);
    }
}

/* True when the system limits file's directory exists: the webhook mounted the container's grant
 * directory there. Opened, not stat-ed (stat needs a newer glibc than libvgpu may, glibc_versions.h). */
static bool grant_directory_mounted(void) {
    int fd = open(VGPU_SYSTEM_LIMITS_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return false;
    close(fd);
    return true;
}

/* VGPU_GRANT_WAIT_SECONDS from the environment: 0-300, larger values clamped, anything unreadable the
 * default. The tenant may set it: it can only shorten or lengthen its own wait, never lift a limit. */
static unsigned grant_wait_seconds(void) {
    const char *text = getenv(GRANT_WAIT_VARIABLE);
    uint64_t seconds = 0;
    if (text == NULL) return GRANT_WAIT_DEFAULT_SECONDS;
    if (!vgpu_parse_uint(text, UINT32_MAX, &seconds)) {
        LOG_WARN(GRANT_WAIT_VARIABLE "=%.64s (from environment): not a whole number of seconds 0-%d; waiting the "
                 "default %d s", text, GRANT_WAIT_MAX_SECONDS, GRANT_WAIT_DEFAULT_SECONDS);
        return GRANT_WAIT_DEFAULT_SECONDS;
    }
    if (seconds > GRANT_WAIT_MAX_SECONDS) {
        LOG_WARN(GRANT_WAIT_VARIABLE "=%.64s (from environment): above %d; waiting %d s", text, GRANT_WAIT_MAX_SECONDS,
                 GRANT_WAIT_MAX_SECONDS);
        return GRANT_WAIT_MAX_SECONDS;
    }
    return (unsigned)seconds;
}

/* Polls for the system limits file until it exists or the wait is over. true with *fd open (or -1 and
 * errno other than ENOENT: the caller reports it as any unreadable file); false with the error set when
 * it never appeared. */
static bool wait_for_grant(int *fd) {
    unsigned seconds = grant_wait_seconds();
    uint64_t deadline = vgpu_now_ns() + (uint64_t)seconds * 1000000000ULL;
    LOG_INFO("waiting up to %u s for %s (the node agent writes it once the pod is bound)", seconds, VGPU_SYSTEM_LIMITS_FILE);
    for (;;) {
        uint64_t now = vgpu_now_ns();
        if (now >= deadline) break;
        vgpu_sleep_ns(deadline - now < GRANT_POLL_NS ? deadline - now : GRANT_POLL_NS);
        *fd = open_limits_file(VGPU_SYSTEM_LIMITS_FILE);
        if (*fd >= 0 || errno != ENOENT) return true;
    }
    return fail("no grant: %s did not appear within %u s (the node agent writes it once the pod is bound; see the pod's "
                "Events)", VGPU_SYSTEM_LIMITS_FILE, seconds);
}

static struct vgpu_config loaded;
static const struct vgpu_config *result;
VGPU_ONCE(load_once);

/* The limits file to read, open in *fd: the system file if it exists at all, else VGPU_LIMITS_FILE if
 * set; NULL for neither (the environment then). false with the error set when the file chosen cannot be
 * opened: an unreadable file is an error, never a reason to fall back. */
static bool choose_file(const char **file, int *fd) {
    *file = NULL;
    *fd = open_limits_file(VGPU_SYSTEM_LIMITS_FILE);
    if (*fd < 0 && errno == ENOENT && grant_directory_mounted()) {
        /* A vgpu container whose grant has not been written yet: neither VGPU_LIMITS_FILE nor the
         * environment may stand in for it, so it is this file or nothing. */
        *file = VGPU_SYSTEM_LIMITS_FILE;
        if (!wait_for_grant(fd)) return false;
    }
    if (*fd >= 0 || errno != ENOENT) {
        /* The system file wins: inside a vgpu container neither the environment nor VGPU_LIMITS_FILE can
         * redirect or lift limits. */
        *file = VGPU_SYSTEM_LIMITS_FILE;
    } else {
        const char *named = getenv("VGPU_LIMITS_FILE");
        if (named == NULL || *named == '\0') return true;
        *file = named;
        *fd = open_limits_file(named);
    }
    return *fd >= 0 || fail("cannot read limits file %s: %s", *file, strerror(errno));
}

static void load(void) {
    static struct settings settings; /* large; loaded once */
    memset(&settings, 0, sizeof settings);
    struct vgpu_config *config = &loaded;
    memset(config, 0, sizeof *config);
    snprintf(config->region_path, sizeof config->region_path, "/tmp/vgpu-region-%u.shr", (unsigned)getuid());
    const char *file = NULL;
    int fd = -1;
    bool ok = choose_file(&file, &fd);
    if (ok) ok = file != NULL ? read_limits_file(file, fd, &settings) : read_environment(&settings);
    if (fd >= 0) close(fd);
    if (ok) {
        snprintf(config->source, sizeof config->source, "%s", settings.origin);
        ok = build(&settings, config);
    }
    if (!ok) return; /* reported once by whoever has to refuse (cuInit, an NVML query) */
    if (file != NULL) note_ignored_environment(file);
    LOG_DEBUG("limits from %s; shared region %s", config->source, config->region_path);
    result = config;
}

const struct vgpu_config *vgpu_config_get(void) {
    vgpu_once(&load_once, load);
    return result;
}

const char *vgpu_config_error(void) { return error_line; }

void vgpu_config_await_grant(void) {
    if (grant_directory_mounted()) (void)vgpu_config_get();
}

int vgpu_config_grant_of(const struct vgpu_config *config, const unsigned char uuid[16]) {
    for (int i = 0; i < config->granted_count; i++)
        if (memcmp(config->granted[i], uuid, sizeof config->granted[i]) == 0) return i;
    return -1;
}
