/* Safe output files and whole-file reads for the tools (see fileio.h). */
#include "core/fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int ms_outfile_open(ms_outfile *of, const char *path, char *err, size_t errlen)
{
    memset(of, 0, sizeof *of);
    size_t n = strlen(path) + 32;
    of->final_path = strdup(path);
    of->tmp_path = malloc(n);
    if (!of->final_path || !of->tmp_path) {
        snprintf(err, errlen, "%s: out of memory", path);
        ms_outfile_abort(of);
        return -1;
    }
    for (int attempt = 0; attempt < 100; attempt++) {
        snprintf(of->tmp_path, n, "%s.tmp.%ld.%d", path, (long)getpid(), attempt);
        int fd = open(of->tmp_path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0 && errno == EEXIST)
            continue;
        if (fd < 0) {
            snprintf(err, errlen, "%s: cannot create: %s", of->tmp_path, strerror(errno));
            ms_outfile_abort(of);
            return -1;
        }
        of->fp = fdopen(fd, "w");
        if (!of->fp) {
            snprintf(err, errlen, "%s: %s", of->tmp_path, strerror(errno));
            close(fd);
            unlink(of->tmp_path);
            ms_outfile_abort(of);
            return -1;
        }
        return 0;
    }
    snprintf(err, errlen, "%s: cannot find a free temporary name", path);
    ms_outfile_abort(of);
    return -1;
}

int ms_outfile_commit(ms_outfile *of, char *err, size_t errlen)
{
    int rc = 0;
    if (fflush(of->fp) != 0 || ferror(of->fp) || fsync(fileno(of->fp)) != 0) {
        snprintf(err, errlen, "%s: write failed: %s", of->final_path, strerror(errno));
        rc = -1;
    }
    if (fclose(of->fp) != 0 && rc == 0) {
        snprintf(err, errlen, "%s: close failed: %s", of->final_path, strerror(errno));
        rc = -1;
    }
    of->fp = NULL;
    /* rename() replaces a symlink at the final path rather than following it. */
    if (rc == 0 && rename(of->tmp_path, of->final_path) != 0) {
        snprintf(err, errlen, "%s: cannot rename into place: %s", of->final_path, strerror(errno));
        rc = -1;
    }
    if (rc != 0)
        unlink(of->tmp_path);
    free(of->final_path);
    free(of->tmp_path);
    of->final_path = of->tmp_path = NULL;
    return rc;
}

void ms_outfile_abort(ms_outfile *of)
{
    if (of->fp) {
        fclose(of->fp);
        of->fp = NULL;
    }
    if (of->tmp_path)
        unlink(of->tmp_path);
    free(of->final_path);
    free(of->tmp_path);
    of->final_path = of->tmp_path = NULL;
}

char *ms_read_file(const char *path, size_t *len, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 65536, n = 0;
    struct stat st;
    if (fstat(fd, &st) == 0 && st.st_size > 0 && (uint64_t)st.st_size < SIZE_MAX - 1)
        cap = (size_t)st.st_size + 1;
    char *buf = malloc(cap + 1);
    if (!buf) {
        snprintf(err, errlen, "%s: out of memory", path);
        close(fd);
        return NULL;
    }
    for (;;) {
        if (n == cap) {
            size_t ncap = cap * 2;
            char *nb = ncap > cap ? realloc(buf, ncap + 1) : NULL;
            if (!nb) {
                snprintf(err, errlen, "%s: out of memory", path);
                free(buf);
                close(fd);
                return NULL;
            }
            buf = nb;
            cap = ncap;
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            snprintf(err, errlen, "%s: read failed: %s", path, strerror(errno));
            free(buf);
            close(fd);
            return NULL;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
}
