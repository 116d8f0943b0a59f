/* jsonl.h - reading JSON: one value per call, as JSON Lines files hold
 * them (batch input, chat transcripts).
 *
 * The parser is strict RFC 8259 (no comments, no trailing commas, no NaN),
 * bounded in nesting depth, and never trusts its input: any malformed text
 * is QLM_EUSAGE with "col N: what" in the message. */
#ifndef QLM_JSONL_H
#define QLM_JSONL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "err.h"

typedef enum qlm_jtype { QLM_JNULL, QLM_JBOOL, QLM_JNUM, QLM_JSTR, QLM_JARR, QLM_JOBJ } qlm_jtype;

typedef struct qlm_jval {
    qlm_jtype type;
    bool b;              /* BOOL */
    double num;          /* NUM */
    char *str;           /* STR: decoded UTF-8, NUL-terminated (may hold NULs: see len);
                            NUM: the number's source text */
    size_t len;          /* STR: bytes in str */
    struct qlm_jval *items; /* ARR, OBJ: the elements / member values */
    char **keys;         /* OBJ: member names, in input order */
    size_t n;            /* ARR, OBJ: how many */
} qlm_jval;

/* Parses the one JSON value in s[0..n) (surrounding whitespace allowed).
 * *out is malloc'd; free with qlm_jval_free. */
int qlm_json_parse(const char *s, size_t n, qlm_jval **out, qlm_err *err);
void qlm_jval_free(qlm_jval *v);

/* The member named key of an object (the last, if repeated), or NULL. */
const qlm_jval *qlm_json_get(const qlm_jval *obj, const char *key);

/* Writes v as compact JSON (numbers as they were written). */
void qlm_json_write(FILE *f, const qlm_jval *v);

#endif
