#include "common/parse.h"

#include <ctype.h>
#include <limits.h>
#include <string.h>
#include <strings.h>

char *vgpu_trim(char *text) {
    while (*text == ' ' || *text == '\t' || *text == '\r' || *text == '\n') text++;
    size_t length = strlen(text);
    while (length > 0 && (text[length - 1] == ' ' || text[length - 1] == '\t' || text[length - 1] == '\r' ||
                          text[length - 1] == '\n'))
        text[--length] = '\0';
    return text;
}

/* Reads the leading decimal digits; returns a pointer after them, or NULL on no digits or overflow. */
static const char *read_digits(const char *text, uint64_t *value) {
    uint64_t result = 0;
    const char *p = text;
    while (*p >= '0' && *p <= '9') {
        uint64_t digit = (uint64_t)(*p - '0');
        if (result > (UINT64_MAX - digit) / 10) return NULL;
        result = result * 10 + digit;
        p++;
    }
    if (p == text) return NULL;
    *value = result;
    return p;
}

bool vgpu_parse_size(const char *text, uint64_t *bytes) {
    if (text == NULL) return false;
    uint64_t number = 0;
    const char *rest = read_digits(text, &number);
    if (rest == NULL) return false;
    unsigned shift = 0;
    switch (tolower((unsigned char)*rest)) {
        case '\0': shift = 0; break;
        case 'k': shift = 10; rest++; break;
        case 'm': shift = 20; rest++; break;
        case 'g': shift = 30; rest++; break;
        case 't': shift = 40; rest++; break;
        default: return false;
    }
    if (*rest != '\0') return false;
    if (shift > 0 && number > (UINT64_MAX >> shift)) return false;
    *bytes = number << shift;
    return true;
}

bool vgpu_parse_uint(const char *text, uint64_t max, uint64_t *value) {
    if (text == NULL) return false;
    uint64_t number = 0;
    const char *rest = read_digits(text, &number);
    if (rest == NULL || *rest != '\0' || number > max) return false;
    *value = number;
    return true;
}

bool vgpu_parse_int(const char *text, long min, long max, long *value) {
    if (text == NULL) return false;
    bool negative = (*text == '-');
    uint64_t magnitude = 0;
    const char *rest = read_digits(negative ? text + 1 : text, &magnitude);
    if (rest == NULL || *rest != '\0' || magnitude > (uint64_t)LONG_MAX) return false;
    long number = negative ? -(long)magnitude : (long)magnitude;
    if (number < min || number > max) return false;
    *value = number;
    return true;
}

bool vgpu_parse_bool(const char *text, bool *value) {
    if (text == NULL) return false;
    static const char *const truthy[] = {"true", "1", "yes", "on"};
    static const char *const falsy[] = {"false", "0", "no", "off"};
    for (unsigned i = 0; i < sizeof truthy / sizeof truthy[0]; i++) {
        if (strcasecmp(text, truthy[i]) == 0) { *value = true; return true; }
        if (strcasecmp(text, falsy[i]) == 0) { *value = false; return true; }
    }
    return false;
}
