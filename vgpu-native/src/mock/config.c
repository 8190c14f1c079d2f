#include "mock/config.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "common/log.h"
#include "common/parse.h"
#include "mock/reference_kernels.h"

#define DEFAULT_KERNEL_NS 10000ULL
#define DEFAULT_KERNEL_JITTER_PERCENT 50ULL
#define DEFAULT_SEED 1ULL
#define DEFAULT_CONTEXT_MIB 64ULL
#define DEFAULT_DRIVER_VERSION 13000L

typedef struct {
    char text[320];
} error_text;

static bool failf(error_text *error, const char *format, ...) __attribute__((format(printf, 2, 3)));
static bool failf(error_text *error, const char *format, ...) {
    va_list arguments;
    va_start(arguments, format);
    vsnprintf(error->text, sizeof error->text, format, arguments);
    va_end(arguments);
    return false;
}

static bool form_factor_is_sxm(const struct mock_profile *profile) {
    return strstr(profile->key, "SXM") != NULL || strcmp(profile->key, "H200") == 0;
}

/* Defaults of the profile shorthand; a device-list file may override each of them. */
static void fill_device_defaults(struct mock_device *device, unsigned index, unsigned count,
                                 const struct mock_profile *profile) {
    memset(device, 0, sizeof *device);
    device->physical_index = index;
    device->profile = profile;
    device->architecture = mock_architecture_of(profile);
    snprintf(device->uuid, sizeof device->uuid, MOCK_UUID_PREFIX "%02u", index);
    vgpu_uuid_parse(device->uuid, device->uuid_bytes);
    device->pci_domain = 0;
    device->pci_bus = 0x07 + 8 * index;
    device->pci_device = 0;
    device->numa_node = (count >= 2 && index >= count / 2) ? 1 : 0;
    device->nvlinks = form_factor_is_sxm(profile) ? device->architecture->nvlinks_on_sxm : 0;
    snprintf(device->serial, sizeof device->serial, "1650520%05u", index);
}

static bool unknown_profile(const char *key, error_text *error) {
    char keys[512];
    mock_profile_keys(keys, sizeof keys);
    return failf(error, "unknown GPU profile \"%s\"; known profiles: %s", key, keys);
}

/* "H100-SXM5-80GB" or "H100-SXM5-80GB:8". */
static bool parse_shorthand(const char *value, struct mock_config *config, error_text *error) {
    char key[128];
    vgpu_copy_string(key, value, sizeof key);
    unsigned count = 1;
    char *colon = strchr(key, ':');
    if (colon != NULL) {
        *colon = '\0';
        uint64_t parsed = 0;
        if (!vgpu_parse_uint(colon + 1, MOCK_MAX_DEVICES, &parsed) || parsed == 0)
            return failf(error, "device count \"%s\" after \"%s:\" must be 1-16", colon + 1, key);
        count = (unsigned)parsed;
    }
    const struct mock_profile *profile = mock_profile_find(key);
    if (profile == NULL) return unknown_profile(key, error);
    config->device_count = count;
    for (unsigned i = 0; i < count; i++) fill_device_defaults(&config->devices[i], i, count, profile);
    return true;
}

static bool parse_pci_bus_id(const char *text, struct mock_device *device) {
    unsigned domain = 0, bus = 0, slot = 0, function = 0;
    int consumed = 0;
    if (sscanf(text, "%x:%x:%x.%x%n", &domain, &bus, &slot, &function, &consumed) != 4 ||
        text[consumed] != '\0' || bus > 0xff || slot > 0x1f || function != 0)
        return false;
    device->pci_domain = domain;
    device->pci_bus = bus;
    device->pci_device = slot;
    return true;
}

/* One "key=value" token of a device line. */
static bool apply_device_field(struct mock_device *device, const char *key, const char *value, error_text *error) {
    if (strcmp(key, "uuid") == 0) {
        if (!vgpu_uuid_parse(value, device->uuid_bytes))
            return failf(error, "uuid=%s is not of the form GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", value);
        vgpu_uuid_format(device->uuid_bytes, device->uuid);
    } else if (strcmp(key, "pci") == 0) {
        if (!parse_pci_bus_id(value, device)) return failf(error, "pci=%s is not a bus id like 0000:07:00.0", value);
    } else if (strcmp(key, "numa") == 0) {
        long node = 0;
        if (!vgpu_parse_int(value, -1, 1023, &node)) return failf(error, "numa=%s must be -1..1023", value);
        device->numa_node = (int)node;
    } else if (strcmp(key, "health") == 0) {
        if (strcmp(value, "ok") == 0) device->starts_lost = false;
        else if (strcmp(value, "lost") == 0) device->starts_lost = true;
        else return failf(error, "health=%s must be ok or lost", value);
    } else if (strcmp(key, "mig") == 0) {
        if (strcmp(value, "enabled") == 0) device->mig_enabled = true;
        else if (strcmp(value, "disabled") == 0) device->mig_enabled = false;
        else return failf(error, "mig=%s must be enabled or disabled", value);
        if (device->mig_enabled && !device->architecture->supports_mig)
            return failf(error, "mig=enabled but profile %s does not support MIG", device->profile->key);
    } else if (strcmp(key, "nvlinks") == 0) {
        long links = 0;
        if (!vgpu_parse_int(value, 0, 18, &links)) return failf(error, "nvlinks=%s must be 0..18", value);
        device->nvlinks = (int)links;
    } else if (strcmp(key, "serial") == 0) {
        if (strlen(value) >= sizeof device->serial) return failf(error, "serial=%s is longer than 31 characters", value);
        vgpu_copy_string(device->serial, value, sizeof device->serial);
    } else if (strcmp(key, "profile") != 0) {
        return failf(error, "unknown key \"%s\" (known: profile uuid pci numa health mig nvlinks serial)", key);
    }
    return true;
}

/* Splits a device line into "key=value" tokens; the profile must come first so that the other
 * fields can default from it. */
static bool parse_device_line(char *line, unsigned index, struct mock_device *device, error_text *error) {
    char *save = NULL;
    bool have_profile = false;
    for (char *token = strtok_r(line, " \t", &save); token != NULL; token = strtok_r(NULL, " \t", &save)) {
        char *equals = strchr(token, '=');
        if (equals == NULL || equals == token || equals[1] == '\0')
            return failf(error, "\"%s\" is not key=value", token);
        *equals = '\0';
        const char *key = token, *value = equals + 1;
        if (!have_profile) {
            if (strcmp(key, "profile") != 0) return failf(error, "the first field must be profile=<key>, not %s=%s", key, value);
            const struct mock_profile *profile = mock_profile_find(value);
            if (profile == NULL) return unknown_profile(value, error);
            /* numa default needs the device count, which is only known at the end: fixed up by the caller */
            fill_device_defaults(device, index, 1, profile);
            have_profile = true;
            continue;
        }
        if (!apply_device_field(device, key, value, error)) return false;
    }
    if (!have_profile) return failf(error, "empty device line");
    return true;
}

static bool parse_device_file(const char *path, struct mock_config *config, error_text *error) {
    FILE *file = fopen(path, "re");
    if (file == NULL) return failf(error, "cannot open device-list file %s: %s", path, strerror(errno));
    char line[1024];
    unsigned line_number = 0, count = 0;
    bool numa_given[MOCK_MAX_DEVICES] = {false};
    bool ok = true;
    while (ok && fgets(line, sizeof line, file) != NULL) {
        line_number++;
        char *text = vgpu_trim(line);
        if (*text == '\0' || *text == '#') continue;
        if (count == MOCK_MAX_DEVICES) {
            ok = failf(error, "%s: more than 16 devices", path);
            break;
        }
        numa_given[count] = strstr(text, "numa=") != NULL;
        error_text detail = {{0}};
        if (!parse_device_line(text, count, &config->devices[count], &detail)) {
            ok = failf(error, "%s line %u: %s", path, line_number, detail.text);
            break;
        }
        count++;
    }
    fclose(file);
    if (!ok) return false;
    if (count == 0) return failf(error, "device-list file %s lists no devices", path);
    config->device_count = count;
    for (unsigned i = 0; i < count; i++) {
        if (!numa_given[i]) config->devices[i].numa_node = (count >= 2 && i >= count / 2) ? 1 : 0;
        for (unsigned j = 0; j < i; j++) {
            if (strcmp(config->devices[i].uuid, config->devices[j].uuid) == 0)
                return failf(error, "%s: uuid %s appears twice", path, config->devices[i].uuid);
            if (config->devices[i].pci_bus == config->devices[j].pci_bus &&
                config->devices[i].pci_domain == config->devices[j].pci_domain &&
                config->devices[i].pci_device == config->devices[j].pci_device)
                return failf(error, "%s: two devices share the pci bus id of %s", path, config->devices[i].uuid);
        }
    }
    return true;
}

static bool load_devices(struct mock_config *config, error_text *error) {
    const char *value = getenv("VGPU_MOCK_CONFIG");
    if (value == NULL || *value == '\0') {
        vgpu_copy_string(config->source, "default (" MOCK_DEFAULT_PROFILE ")", sizeof config->source);
        return parse_shorthand(MOCK_DEFAULT_PROFILE, config, error);
    }
    snprintf(config->source, sizeof config->source, "VGPU_MOCK_CONFIG=%s", value);
    struct stat info;
    bool is_path = strchr(value, '/') != NULL || (stat(value, &info) == 0 && S_ISREG(info.st_mode));
    return is_path ? parse_device_file(value, config, error) : parse_shorthand(value, config, error);
}

/* VGPU_MOCK_VISIBLE_DEVICES: unset or "all" = every device; "none" = no device; otherwise a comma list
 * of physical indices or UUIDs, like the /dev/nvidiaN nodes a container runtime exposes. */
static bool load_visibility(struct mock_config *config, error_text *error) {
    const char *value = getenv("VGPU_MOCK_VISIBLE_DEVICES");
    config->visible_count = 0;
    if (value == NULL || strcasecmp(value, "all") == 0) {
        for (unsigned i = 0; i < config->device_count; i++) config->visible[config->visible_count++] = i;
        return true;
    }
    if (*value == '\0' || strcasecmp(value, "none") == 0) return true;
    char list[512];
    vgpu_copy_string(list, value, sizeof list);
    char *save = NULL;
    for (char *item = strtok_r(list, ",", &save); item != NULL; item = strtok_r(NULL, ",", &save)) {
        item = vgpu_trim(item);
        uint64_t index = 0;
        bool found = false;
        if (vgpu_parse_uint(item, MOCK_MAX_DEVICES - 1, &index) && index < config->device_count) {
            found = true;
        } else {
            for (unsigned i = 0; i < config->device_count; i++)
                if (strcasecmp(config->devices[i].uuid, item) == 0) { index = i; found = true; break; }
        }
        if (!found) return failf(error, "VGPU_MOCK_VISIBLE_DEVICES entry \"%s\" is neither a device index nor a UUID of %s",
                                 item, config->source);
        for (unsigned i = 0; i < config->visible_count; i++)
            if (config->visible[i] == index) return failf(error, "VGPU_MOCK_VISIBLE_DEVICES lists \"%s\" twice", item);
        config->visible[config->visible_count++] = (unsigned)index;
    }
    return true;
}

static bool load_number(const char *name, uint64_t max, uint64_t fallback, uint64_t *value, error_text *error) {
    const char *text = getenv(name);
    if (text == NULL) {
        *value = fallback;
        return true;
    }
    if (!vgpu_parse_uint(text, max, value))
        return failf(error, "%s=%s is not a number in 0..%llu", name, text, (unsigned long long)max);
    return true;
}

/* VGPU_MOCK_KERNEL_NS, or VGPU_MOCK_WAVE_NS, its name from when a launch cost waves x that (0 still
 * makes launches free, as benchmarks want). */
static bool load_kernel_ns(struct mock_config *config, error_text *error) {
    const char *current = getenv("VGPU_MOCK_KERNEL_NS"), *earlier = getenv("VGPU_MOCK_WAVE_NS");
    if (current != NULL && earlier != NULL)
        return failf(error, "VGPU_MOCK_KERNEL_NS=%s and VGPU_MOCK_WAVE_NS=%s are both set; VGPU_MOCK_WAVE_NS is the "
                     "earlier name of VGPU_MOCK_KERNEL_NS: set only one", current, earlier);
    return load_number(earlier != NULL ? "VGPU_MOCK_WAVE_NS" : "VGPU_MOCK_KERNEL_NS", MOCK_SPIN_MAX_NS, DEFAULT_KERNEL_NS,
                       &config->kernel_ns, error);
}

static bool valid_kernel_name(const char *name) {
    size_t length = strlen(name);
    if (length == 0 || length >= MOCK_KERNEL_NAME_LENGTH) return false;
    for (size_t i = 0; i < length; i++)
        if (!isalnum((unsigned char)name[i]) && name[i] != '_' && name[i] != '$' && name[i] != '.') return false;
    return true;
}

/* VGPU_MOCK_KERNELS: "name=ns[,name=ns...]", the mean device time of the kernels of each name. */
static bool load_kernel_table(struct mock_config *config, error_text *error) {
    const char *value = getenv("VGPU_MOCK_KERNELS");
    config->kernel_table_count = 0;
    if (value == NULL || *value == '\0') return true;
    char list[MOCK_KERNEL_TABLE_SIZE * (MOCK_KERNEL_NAME_LENGTH + 12)];
    if (strlen(value) >= sizeof list)
        return failf(error, "VGPU_MOCK_KERNELS is longer than %zu characters", sizeof list - 1);
    vgpu_copy_string(list, value, sizeof list);
    char *save = NULL;
    for (char *item = strtok_r(list, ",", &save); item != NULL; item = strtok_r(NULL, ",", &save)) {
        item = vgpu_trim(item);
        char *equals = strchr(item, '=');
        if (equals == NULL) return failf(error, "VGPU_MOCK_KERNELS entry \"%s\" is not name=nanoseconds", item);
        *equals = '\0';
        char *name = vgpu_trim(item), *duration = vgpu_trim(equals + 1);
        uint64_t mean_ns = 0;
        if (!valid_kernel_name(name))
            return failf(error, "VGPU_MOCK_KERNELS entry \"%s=%s\": \"%s\" is not a kernel name (letters, digits, _ $ ., "
                         "at most %d characters)", name, duration, name, MOCK_KERNEL_NAME_LENGTH - 1);
        if (strcmp(name, MOCK_SPIN_KERNEL) == 0)
            return failf(error, "VGPU_MOCK_KERNELS entry \"%s=%s\": " MOCK_SPIN_KERNEL " takes its duration from its argument",
                         name, duration);
        if (!vgpu_parse_uint(duration, MOCK_SPIN_MAX_NS, &mean_ns))
            return failf(error, "VGPU_MOCK_KERNELS entry \"%s=%s\": \"%s\" is not a number of nanoseconds in 0..%llu", name,
                         duration, duration, (unsigned long long)MOCK_SPIN_MAX_NS);
        for (unsigned i = 0; i < config->kernel_table_count; i++)
            if (strcmp(config->kernel_table[i].name, name) == 0)
                return failf(error, "VGPU_MOCK_KERNELS names kernel \"%s\" twice", name);
        if (config->kernel_table_count == MOCK_KERNEL_TABLE_SIZE)
            return failf(error, "VGPU_MOCK_KERNELS lists more than %d kernels", MOCK_KERNEL_TABLE_SIZE);
        struct mock_kernel_cost *entry = &config->kernel_table[config->kernel_table_count++];
        vgpu_copy_string(entry->name, name, sizeof entry->name);
        entry->mean_ns = mean_ns;
    }
    return true;
}

static bool load_kernel_costs(struct mock_config *config, error_text *error) {
    uint64_t jitter = 0;
    bool ok = load_kernel_ns(config, error) && load_kernel_table(config, error) &&
              load_number("VGPU_MOCK_KERNEL_JITTER", 100, DEFAULT_KERNEL_JITTER_PERCENT, &jitter, error) &&
              load_number("VGPU_MOCK_SEED", UINT64_MAX, DEFAULT_SEED, &config->seed, error);
    config->kernel_jitter_percent = (unsigned)jitter;
    return ok;
}

uint64_t mock_config_kernel_mean_ns(const struct mock_config *config, const char *name) {
    for (unsigned i = 0; i < config->kernel_table_count; i++)
        if (strcmp(config->kernel_table[i].name, name) == 0) return config->kernel_table[i].mean_ns;
    return config->kernel_ns;
}

static struct mock_config loaded_config;
static const struct mock_config *loaded_result;
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

static void load_config(void) {
    error_text error = {{0}};
    struct mock_config *config = &loaded_config;
    uint64_t driver_version = 0, context_mib = 0;
    bool ok = load_devices(config, &error) && load_visibility(config, &error) &&
              load_kernel_costs(config, &error) &&
              load_number("VGPU_MOCK_CONTEXT_MIB", 65536, DEFAULT_CONTEXT_MIB, &context_mib, &error) &&
              load_number("VGPU_MOCK_DRIVER_VERSION", 99999, DEFAULT_DRIVER_VERSION, &driver_version, &error);
    if (!ok) {
        LOG_ERROR("mock configuration rejected: %s", error.text);
        return;
    }
    config->context_bytes = context_mib << 20;
    config->driver_version = (int)driver_version;
    LOG_DEBUG("mock machine from %s: %u device(s), %u visible", config->source, config->device_count,
              config->visible_count);
    loaded_result = config;
}

const struct mock_config *mock_config_get(void) {
    pthread_once(&load_once, load_config);
    return loaded_result;
}

const struct mock_device *mock_config_visible_physical(const struct mock_config *config, unsigned physical_index) {
    for (unsigned i = 0; i < config->visible_count; i++)
        if (config->visible[i] == physical_index) return &config->devices[physical_index];
    return NULL;
}
