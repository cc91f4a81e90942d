/* Safe file creation for everything memsight writes (snapshots, reports, exports):
 * files hold the program's data, so they are created 0600 under a temporary name with
 * O_EXCL|O_NOFOLLOW and renamed into place, never following a planted symlink.
 * Tools only (allocates); the agent has its own allocation-free writer. */
#ifndef MS_CORE_FILEIO_H
#define MS_CORE_FILEIO_H

#include <stddef.h>
#include <stdio.h>

typedef struct ms_outfile {
    FILE *fp;        /* write here */
    char *final_path;
    char *tmp_path;
} ms_outfile;

/* Opens a temporary file beside `path`. Returns 0, or -1 with a message in err. */
int ms_outfile_open(ms_outfile *of, const char *path, char *err, size_t errlen);
/* Flushes, fsyncs and renames into place; on any error removes the temporary file.
 * Returns 0 or -1 with a message. */
int ms_outfile_commit(ms_outfile *of, char *err, size_t errlen);
/* Abandons the file (removes the temporary). */
void ms_outfile_abort(ms_outfile *of);

/* Reads a whole file into a malloc'ed buffer (NUL-terminated for convenience).
 * Works for /proc files whose size is reported as 0. Returns NULL with a message. */
char *ms_read_file(const char *path, size_t *len, char *err, size_t errlen);

#endif
