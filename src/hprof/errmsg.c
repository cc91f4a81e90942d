/* The error message the HPROF analyses hand back to their caller (see errmsg.h).
 * Sets the caller's buffer only: never prints, never allocates. */
#include "hprof/errmsg.h"

#include <stdarg.h>
#include <stdio.h>

void ms_hprof_set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || !errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}
