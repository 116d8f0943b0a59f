#include "err.h"

#include <stdarg.h>
#include <stdio.h>

int qlm_fail(qlm_err *e, int code, const char *fmt, ...)
{
    if (e) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->msg, sizeof e->msg, fmt, ap);
        va_end(ap);
        /* Every error is printed as one line (DESIGN.md); a message that
         * quotes input could otherwise carry the input's line breaks. */
        for (char *c = e->msg; *c; c++)
            if (*c == '\n' || *c == '\r')
                *c = ' ';
        e->code = code;
    }
    return code;
}
