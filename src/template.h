/* template.h - chat templates: a Jinja-subset interpreter whose output is
 * byte-identical to Python's jinja2 as Hugging Face transformers sets it up
 * for apply_chat_template.
 *
 * That environment is what users of a model see, so it is the one copied:
 * trim_blocks=True and lstrip_blocks=True (a newline right after a block or
 * comment tag is dropped, and spaces before one on its own line too), the
 * sandbox's read-only containers, loop controls (break/continue), its
 * tojson (json.dumps with ensure_ascii=False: no HTML escaping, indent=),
 * raise_exception(msg) and strftime_now(fmt).  Undefined names behave like
 * jinja2's default Undefined: they print as nothing and are false, and
 * using one for anything more (an attribute, arithmetic) is an error.
 *
 * A template is parsed once (qlm_tmpl_parse) and rendered any number of
 * times, from any number of threads, against a set of variables
 * (qlm_tmpl_vars) that the caller builds with the value builders below or
 * from JSON.  qlm_tmpl_render_chat does the usual chat case in one call.
 *
 * Errors are one line in qlm_err:
 *   QLM_ELOAD     the template itself is malformed or uses something this
 *                 interpreter does not have: "template:LINE:COL: what"
 *   QLM_EUSAGE    rendering failed for these variables: raise_exception's
 *                 message exactly, or jinja2's wording of the error (an
 *                 undefined value used, a type error, a resource limit)
 *   QLM_ERUNTIME  out of memory
 * Nothing here prints, exits or crashes on any input: parsing and
 * rendering are bounded in nesting depth, steps, memory and output size.
 *
 * Not there (refused with a message naming the construct): include,
 * extends, block, import, recursive for loops, f(*args) and f(**kwargs),
 * macros taking varargs, cycler/joiner/lipsum, and the filters groupby,
 * slice, pprint, random, striptags, urlize, urlencode, wordwrap, xmlattr,
 * filesizeformat.  Where Python differs from what fits in C: integers are
 * 64-bit (past that is an error, not a big number), a negative number to
 * a fractional power is an error (Python makes a complex), str.format
 * takes {} {0} {name} without format specs, reverse and dict.items()
 * give lists (which print as lists, not as Python's iterator objects),
 * and case mapping outside ASCII is glibc's C.UTF-8 simple mapping plus
 * Python's ß, İ and Latin digraph special cases. */
#ifndef QLM_TEMPLATE_H
#define QLM_TEMPLATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

typedef struct qlm_tmpl qlm_tmpl;
typedef struct qlm_tmpl_vars qlm_tmpl_vars;
typedef struct qlm_tval qlm_tval;

/* Parses src[0..len) (UTF-8).  On success *out is the template, to free
 * with qlm_tmpl_free. */
int qlm_tmpl_parse(const char *src, size_t len, qlm_tmpl **out, qlm_err *err);
void qlm_tmpl_free(qlm_tmpl *t);

/* ---- variables and values ----
 * A qlm_tmpl_vars owns every value built in it; they live until
 * qlm_tmpl_vars_free.  Builders return NULL when memory runs out, and the
 * functions that take a value refuse a NULL one (QLM_ERUNTIME), so calls
 * can be nested without checking each. */
qlm_tmpl_vars *qlm_tmpl_vars_new(void);
void qlm_tmpl_vars_free(qlm_tmpl_vars *v);

qlm_tval *qlm_tv_none(qlm_tmpl_vars *v);
qlm_tval *qlm_tv_bool(qlm_tmpl_vars *v, bool b);
qlm_tval *qlm_tv_int(qlm_tmpl_vars *v, int64_t i);
qlm_tval *qlm_tv_float(qlm_tmpl_vars *v, double d);
qlm_tval *qlm_tv_str(qlm_tmpl_vars *v, const char *s);   /* NULL gives none */
qlm_tval *qlm_tv_strn(qlm_tmpl_vars *v, const char *s, size_t n);
qlm_tval *qlm_tv_list(qlm_tmpl_vars *v);
qlm_tval *qlm_tv_dict(qlm_tmpl_vars *v);   /* keeps insertion order */
/* Appends item to a list; QLM_EUSAGE if list is not one. */
int qlm_tv_push(qlm_tmpl_vars *v, qlm_tval *list, qlm_tval *item);
/* Sets dict[key] = val, replacing an existing key in place. */
int qlm_tv_put(qlm_tmpl_vars *v, qlm_tval *dict, const char *key, qlm_tval *val);
/* Parses JSON text into a value (objects become dicts in key order, whole
 * numbers that fit int64 become ints).  Malformed JSON is QLM_EUSAGE with
 * "json:LINE:COL: what". */
int qlm_tv_json(qlm_tmpl_vars *v, const char *json, size_t n, qlm_tval **out, qlm_err *err);

/* Defines (or redefines) a variable the template sees. */
int qlm_tmpl_vars_set(qlm_tmpl_vars *v, const char *name, qlm_tval *val);
/* Every key of a JSON object becomes a variable (how the tests load a
 * conversation file). */
int qlm_tmpl_vars_set_json(qlm_tmpl_vars *v, const char *json, size_t n, qlm_err *err);

/* The moment strftime_now formats (seconds since the epoch, local time);
 * unset, it is the time of the render. */
void qlm_tmpl_vars_set_now(qlm_tmpl_vars *v, int64_t unix_seconds);

/* Bounds on one render; 0 in a field keeps its default. */
typedef struct qlm_tmpl_limits {
    size_t max_output;    /* bytes of rendered text (default 64 MiB) */
    size_t max_memory;    /* bytes of values made while rendering
                             (default 256 MiB + 32x the variables' size) */
    uint64_t max_steps;   /* expression evaluations, loop turns and calls
                             (default 50 million) */
} qlm_tmpl_limits;
void qlm_tmpl_vars_set_limits(qlm_tmpl_vars *v, const qlm_tmpl_limits *lim);

/* Renders t with the variables in v (which may be NULL: none) into a
 * malloc'd NUL-terminated string; *out_len (if not NULL) gets its length. */
int qlm_tmpl_render(const qlm_tmpl *t, const qlm_tmpl_vars *v, char **out,
                    size_t *out_len, qlm_err *err);

/* ---- the chat case ---- */
typedef struct qlm_chat_msg {
    const char *role;
    const char *content;       /* NULL: none (a turn that only calls tools) */
    const char *tool_calls;    /* NULL, or a JSON array in OpenAI's form:
                                  [{"type":"function","function":{"name":..,
                                  "arguments":{..}}, "id":..}] */
    const char *tool_call_id;  /* NULL, or the call a tool result answers */
    const char *name;          /* NULL, or the tool's name on a tool result */
} qlm_chat_msg;

typedef struct qlm_chat_opts {
    bool add_generation_prompt;
    const char *bos_token;     /* NULL: left undefined, as transformers does
                                  for a model without one */
    const char *eos_token;
    const char *tools;         /* NULL: tools is none; else a JSON array */
    const qlm_tmpl_vars *extra; /* more variables, looked up after the ones
                                  above, and the now/limits settings; or NULL */
} qlm_chat_opts;

/* Renders messages[0..n) the way apply_chat_template(tokenize=False)
 * does: variables messages, tools (none unless given), documents (none),
 * add_generation_prompt and the special tokens, plus opts->extra's. */
int qlm_tmpl_render_chat(const qlm_tmpl *t, const qlm_chat_msg *messages, size_t n,
                         const qlm_chat_opts *opts, char **out, size_t *out_len,
                         qlm_err *err);

#endif
