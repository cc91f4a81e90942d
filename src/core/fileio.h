/* Output files and whole-file reads for the tools. `-o FILE` either replaces a regular
 * file (or creates a new name) atomically, 0600, never following a planted symlink, or
 * writes through into what FILE already is when that is not a regular file (a device, a
 * FIFO, /dev/stdout). Readers of files the tools wait for open them only as regular files
 * of the expected owner. Tools only (allocates); the agent uses safe_file.h directly. */
#ifndef MS_CORE_FILEIO_H
#define MS_CORE_FILEIO_H

#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

typedef struct ms_outfile {
    FILE *fp;         /* write here */
    int fd;           /* fileno(fp) */
    int through;      /* writing into an existing device, FIFO or terminal: no rename */
    int dirfd;        /* directory of the final name (atomic mode), else -1 */
    char *final_path; /* as given, for messages */
    char *base;       /* final name in dirfd */
    char *tmp;        /* temporary name in dirfd, "" while unnamed */
    size_t tmpcap;
} ms_outfile;

/* Opens `path` for writing. What it names decides how:
 * - nothing, a regular file, or a symlink to one: a new file (0600) is written beside it
 *   and renamed over the name by ms_outfile_commit (a symlink is replaced, not followed);
 * - a device, a FIFO, or a symlink leading to one or to our own stdout or stderr
 *   (/dev/stdout): written in place, but in a shared (sticky, world-writable) directory
 *   only when it belongs to us or the directory's owner (else refused, or a link replaced);
 * - a directory: refused.
 * Directories on the way are followed only when ms_sf_trusted: a symlink another user
 * planted in /tmp is refused with its owner named. Returns 0, or -1 with a message. */
int ms_outfile_open(ms_outfile *of, const char *path, char *err, size_t errlen);
/* Flushes; for a new file fsyncs and renames it into place. On any error removes the
 * temporary file. Returns 0 or -1 with a message. */
int ms_outfile_commit(ms_outfile *of, char *err, size_t errlen);
/* Abandons the file (removes the temporary; what was written through stays written). */
void ms_outfile_abort(ms_outfile *of);

/* Opens a directory for *at() calls, following symlinks on the way only when
 * ms_sf_trusted. Returns an O_PATH descriptor, or -1 with a message. */
int ms_open_dir_safe(const char *dir, char *err, size_t errlen);

/* Opens a file memsight waits for (a snapshot an agent writes) only if it is a regular
 * file owned by `owner` ((uid_t)-1: anyone): never follows a symlink at the name, never
 * blocks on a FIFO. Returns fd, or -1 with a message that names what the file is. */
int ms_open_awaited(const char *path, uid_t owner, char *err, size_t errlen);

/* Removes what agents killed while writing a snapshot left in dir: temporary files
 * ".memsight-<pid>-*.msnap.tmp*" (only where the file system has no O_TMPFILE), regular
 * files of `owner` whose process is gone. Returns how many were removed. */
int ms_remove_stale_snapshot_tmps(const char *dir, uid_t owner);

/* Reads a whole file into a malloc'ed buffer (NUL-terminated for convenience).
 * Works for /proc files whose size is reported as 0. Returns NULL with a message. */
char *ms_read_file(const char *path, size_t *len, char *err, size_t errlen);
/* The same from an open descriptor (closed by the call); `name` is for messages. */
char *ms_read_fd(int fd, const char *name, size_t *len, char *err, size_t errlen);

#endif
