/* json.h - writing JSON strings safely from arbitrary bytes. */
#ifndef QLM_JSON_H
#define QLM_JSON_H

#include <stddef.h>
#include <stdio.h>

/* Writes s[0..n) as a quoted JSON string: control characters escaped and
 * invalid UTF-8 replaced by U+FFFD, so the output always parses. */
void qlm_json_str(FILE *f, const char *s, size_t n);

#endif
