/* Creating and opening files in directories other users may write to, for the agent's
 * snapshot writer and the tools' output files (fileio.h builds on it). Allocation-free:
 * no malloc, no stdio, no locks, so the agent can use it inside the target. */
#ifndef MS_CORE_SAFE_FILE_H
#define MS_CORE_SAFE_FILE_H

#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

/* Room for a temporary name: "." + base + ".tmp" + 16 hex digits + NUL. */
#define MS_SF_TMP_EXTRA 24

/* The kernel's protected_symlinks rule, applied whatever the sysctl says: an object in a
 * sticky, world-writable directory (/tmp) is trusted only when it belongs to the caller
 * (euid) or to the directory's owner. Anywhere else everything is trusted. */
int ms_sf_trusted(const struct stat *dir, uid_t owner);

/* Creates the file that will become `base` in `dirfd`, mode 0600: an unnamed O_TMPFILE
 * (nothing is left behind if the process dies before ms_sf_place), or, where the file
 * system has none, ".<base>.tmp<16 random hex digits>" with O_EXCL|O_NOFOLLOW, so names
 * planted in advance cannot block it. `tmp` (base length + MS_SF_TMP_EXTRA bytes)
 * receives the temporary name, "" while the file is unnamed. Returns fd or -errno. */
int ms_sf_create(int dirfd, const char *base, char *tmp, size_t tmpcap);

/* Gives the finished file `fd` the name `base` (an unnamed file is first linked under a
 * random temporary name), replacing what is there with rename(): a symlink at `base` is
 * replaced, never followed. Returns 0 or -errno; on error a temporary name stays in `tmp`
 * for ms_sf_discard (the caller may retry with another `base`). */
int ms_sf_place(int dirfd, int fd, const char *base, char *tmp, size_t tmpcap);

/* Removes the temporary name, if the file got one. */
void ms_sf_discard(int dirfd, char *tmp);

/* Did rename() fail because the name is taken by something this process may not
 * replace (another user's file in a sticky directory, a directory)? Another name may work. */
int ms_sf_name_taken(int err);

/* Opens `path` (relative to dirfd) for reading only if it is a regular file owned by
 * `owner` ((uid_t)-1: anyone): never follows a symlink at the last component and never
 * blocks on a FIFO (nor opens a device at all). Fills *st. Returns fd, or -errno: -ELOOP
 * for a symlink, -EINVAL for a FIFO, device, socket or directory (st->st_mode tells which),
 * -EPERM for another owner (st->st_uid tells whose). */
int ms_sf_open_regular(int dirfd, const char *path, uid_t owner, struct stat *st);

/* Opens directory `dir` for *at() calls, walking it one component at a time and following
 * a symlink on the way only when ms_sf_trusted: a link another user planted in a shared
 * directory (/tmp/snaps -> elsewhere) is refused. work and walked are the caller's
 * buffers of cap bytes; walked holds the part walked when it fails. Returns an O_PATH
 * descriptor, or -errno: -EPERM for a link not trusted (*link_uid: its owner), -ENOTDIR,
 * -ELOOP, -ENAMETOOLONG, or the error of the component that ends walked. */
int ms_sf_open_dir(const char *dir, char *work, char *walked, size_t cap, uid_t *link_uid);

/* "FIFO", "directory", "symlink", "character device"... for messages. */
const char *ms_sf_kind(mode_t mode);

#endif
