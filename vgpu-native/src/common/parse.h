/* Strict parsers for configuration values: every function rejects empty text, signs, stray
 * characters and overflow instead of guessing, so a typo can never turn into "no limit". */
#ifndef VGPU_COMMON_PARSE_H
#define VGPU_COMMON_PARSE_H

#include <stdbool.h>
#include <stdint.h>

/* Decimal bytes with an optional binary suffix k/m/g/t (any case): "4096m", "1g", "512k", "1073741824". */
bool vgpu_parse_size(const char *text, uint64_t *bytes);
/* Decimal unsigned integer in [0, max]. */
bool vgpu_parse_uint(const char *text, uint64_t max, uint64_t *value);
/* Decimal signed integer in [min, max]. */
bool vgpu_parse_int(const char *text, long min, long max, long *value);
/* true/false, 1/0, yes/no, on/off (any case). */
bool vgpu_parse_bool(const char *text, bool *value);
/* Trims leading and trailing blanks in place and returns the start. */
char *vgpu_trim(char *text);

#endif
