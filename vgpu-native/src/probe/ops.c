/* The probe's op syntax: NAME, NAME:VALUE, NAME@N or NAME:VALUE@N, checked strictly before anything
 * runs, so a typo is one line on stderr and exit code 2, never a half-run container. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe/probe.h"

#define MAX_SIZE_MIB (16ULL << 20) /* 16 TiB */
#define MAX_SECONDS 86400.0
#define MAX_ORDINAL 15
#define MAX_PROCESSES 32

struct op_syntax {
    const char *name;
    enum probe_op_kind kind;
    char value;       /* 0 none, 'S' size, 's' seconds, 'n' process count, 'c' exit code */
    bool ordinal;     /* takes @N */
};

static const struct op_syntax SYNTAX[] = {
    {"info", PROBE_INFO, 0, false},           {"nvml", PROBE_NVML, 0, false},
    {"alloc", PROBE_ALLOC, 'S', true},        {"fill", PROBE_FILL, 0, true},
    {"compute", PROBE_COMPUTE, 's', true},    {"vectoradd", PROBE_VECTORADD, 0, false},
    {"killed-child", PROBE_KILLED_CHILD, 'S', false}, {"spawn", PROBE_SPAWN, 'n', false},
    {"escape", PROBE_ESCAPE, 'S', true},      {"overbook", PROBE_OVERBOOK, 'S', true},
    {"hold", PROBE_HOLD, 's', false},
    {"exit", PROBE_EXIT, 'c', false},       {"reserve", PROBE_RESERVE, 0, false},
};

static bool digits_only(const char *text, size_t length) {
    if (length == 0) return false;
    for (size_t i = 0; i < length; i++)
        if (text[i] < '0' || text[i] > '9') return false;
    return true;
}

/* "3000", "3000Mi" or "3Gi": MiB, at least 1. */
static bool parse_size(const char *text, uint64_t *mib) {
    size_t length = strlen(text), number_length = length;
    uint64_t scale = 1;
    if (length > 2 && strcmp(text + length - 2, "Mi") == 0) number_length = length - 2;
    else if (length > 2 && strcmp(text + length - 2, "Gi") == 0) number_length = length - 2, scale = 1024;
    if (!digits_only(text, number_length) || number_length > 9) return false;
    uint64_t value = strtoull(text, NULL, 10) * scale;
    if (value == 0 || value > MAX_SIZE_MIB) return false;
    *mib = value;
    return true;
}

/* "5", "2.5": decimal seconds. */
static bool parse_seconds(const char *text, double *seconds) {
    const char *dot = strchr(text, '.');
    size_t whole = dot != NULL ? (size_t)(dot - text) : strlen(text);
    if (!digits_only(text, whole) || whole > 6) return false;
    if (dot != NULL && (!digits_only(dot + 1, strlen(dot + 1)) || strlen(dot + 1) > 9)) return false;
    *seconds = strtod(text, NULL);
    return *seconds <= MAX_SECONDS;
}

static bool parse_bounded(const char *text, int max, int *value) {
    size_t length = strlen(text);
    if (!digits_only(text, length) || length > 3 || atoi(text) > max) return false;
    *value = atoi(text);
    return true;
}

static bool fail(char *error, size_t size, int position, const char *text, const char *problem) {
    snprintf(error, size, "op %d \"%s\": %s", position, text, problem);
    return false;
}

static bool parse_one(const char *text, int position, struct probe_op *op, char *error, size_t size) {
    char name[32], value[64] = "", ordinal[16] = "";
    const char *at = strchr(text, '@'), *colon = strchr(text, ':');
    if (at != NULL && colon != NULL && at < colon) return fail(error, size, position, text, "@N must come last");
    size_t name_length = colon != NULL ? (size_t)(colon - text) : at != NULL ? (size_t)(at - text) : strlen(text);
    if (name_length >= sizeof name) return fail(error, size, position, text, "unknown op");
    memcpy(name, text, name_length);
    name[name_length] = '\0';
    if (colon != NULL) {
        size_t value_length = at != NULL ? (size_t)(at - colon - 1) : strlen(colon + 1);
        if (value_length >= sizeof value) return fail(error, size, position, text, "value too long");
        memcpy(value, colon + 1, value_length);
        value[value_length] = '\0';
    }
    if (at != NULL) {
        if (strlen(at + 1) >= sizeof ordinal) return fail(error, size, position, text, "N of @N must be 0-15");
        strcpy(ordinal, at + 1);
    }
    const struct op_syntax *syntax = NULL;
    for (unsigned i = 0; i < sizeof SYNTAX / sizeof SYNTAX[0] && syntax == NULL; i++)
        if (strcmp(SYNTAX[i].name, name) == 0) syntax = &SYNTAX[i];
    if (syntax == NULL)
        return fail(error, size, position, text,
                    "unknown op (known: info nvml alloc:SIZE[@N] fill[@N] compute:SECONDS[@N] vectoradd reserve killed-child:SIZE "
                    "spawn:N escape:SIZE[@N] overbook:SIZE[@N] hold:SECONDS exit:CODE)");
    *op = (struct probe_op){.kind = syntax->kind, .text = text};
    if (syntax->value == 0 && colon != NULL) return fail(error, size, position, text, "this op takes no :VALUE");
    if (syntax->value != 0 && colon == NULL) return fail(error, size, position, text, "this op needs a :VALUE");
    if (at != NULL && !syntax->ordinal) return fail(error, size, position, text, "this op takes no @N");
    if (at != NULL && !parse_bounded(ordinal, MAX_ORDINAL, &op->ordinal))
        return fail(error, size, position, text, "N of @N must be a CUDA ordinal 0-15");
    switch (syntax->value) {
        case 'S':
            if (!parse_size(value, &op->size_mib))
                return fail(error, size, position, text,
                            "SIZE must be a whole number of MiB from 1, with an optional Mi or Gi suffix (3000, 3000Mi, 3Gi)");
            break;
        case 's':
            if (!parse_seconds(value, &op->seconds) || (op->kind == PROBE_COMPUTE && op->seconds <= 0))
                return fail(error, size, position, text,
                            op->kind == PROBE_COMPUTE ? "SECONDS must be a decimal number above 0, at most 86400"
                                                      : "SECONDS must be a decimal number from 0 to 86400");
            break;
        case 'n':
            if (!parse_bounded(value, MAX_PROCESSES, &op->number) || op->number == 0)
                return fail(error, size, position, text, "N must be a number of processes from 1 to 32");
            break;
        case 'c':
            if (!parse_bounded(value, 255, &op->number))
                return fail(error, size, position, text, "CODE must be an exit code from 0 to 255");
            break;
        default: break;
    }
    return true;
}

bool probe_parse_ops(int count, char *const *texts, struct probe_op *ops, char *error, size_t error_size) {
    bool spawned = false;
    for (int i = 0; i < count; i++) {
        if (!parse_one(texts[i], i + 1, &ops[i], error, error_size)) return false;
        if (ops[i].kind == PROBE_SPAWN && spawned)
            return fail(error, error_size, i + 1, texts[i], "spawn may appear only once");
        spawned = spawned || ops[i].kind == PROBE_SPAWN;
        if (ops[i].kind == PROBE_EXIT && i != count - 1)
            return fail(error, error_size, i + 1, texts[i], "exit:CODE ends the process, so it must be the last op");
    }
    return true;
}
