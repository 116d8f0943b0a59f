/* err.h - how every layer from src/ up reports failure.
 *
 * Functions below the CLI never print or exit: they fill a qlm_err and
 * return its code.  The code doubles as the process exit status, so the
 * CLI can hand it straight to exit() after printing the one-line message. */
#ifndef QLM_ERR_H
#define QLM_ERR_H

enum {
    QLM_OK = 0,
    QLM_EUSAGE = 1,    /* bad command line */
    QLM_ELOAD = 2,     /* model or input missing, truncated or malformed */
    QLM_ERUNTIME = 3,  /* failure while running (out of memory, I/O) */
    QLM_EINTR = 130,   /* interrupted by the user */
};

typedef struct qlm_err {
    int code;
    char msg[512];
} qlm_err;

/* Records code and a printf-style message in e (which may be NULL) and
 * returns code, so callers can write `return qlm_fail(e, QLM_ELOAD, ...)`. */
int qlm_fail(qlm_err *e, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
