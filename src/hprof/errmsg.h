/* The error message the HPROF analyses hand back to their caller (err, errlen), written in
 * one place. Sets the caller's buffer only: never prints, never allocates. */
#ifndef MS_HPROF_ERRMSG_H
#define MS_HPROF_ERRMSG_H

#include <stddef.h>

/* Formats into err[errlen]; does nothing when err is NULL or errlen is 0. */
void ms_hprof_set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
