/* Test helper: a new temporary file in TMPDIR (or /tmp, when TMPDIR is unset or empty),
 * made by mkstemp from a name prefix ("ms-input" gives .../ms-input-XXXXXX, the X's
 * replaced); its name goes to path. Returns the descriptor, open for reading and
 * writing, or -1. Test-only. */
#ifndef MS_TEST_TMP_FILE_H
#define MS_TEST_TMP_FILE_H

#include <stdio.h>
#include <stdlib.h>

static inline int ms_test_tmp_file(const char *prefix, char *path, size_t cap)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(path, cap, "%s/%s-XXXXXX", tmp && *tmp ? tmp : "/tmp", prefix);
    return mkstemp(path);
}

#endif
