/* Modules the C library loads itself, and _exit. Loads the agent (dlopen, or already
 * preloaded: dlopen then returns that copy), starts it, then makes glibc load a gconv
 * module (iconv_open to UTF-16: UTF-16.so's init allocates its state with its own
 * malloc slot, its end frees it with its own free slot) and NSS modules (getpwnam of a
 * user the files database does not know), and opens and closes the converter again
 * GH_CYCLES times (one allocation by UTF-16.so each time, one stays open). Leaves with
 * _exit, which must still write the exit snapshot. Prints "cycles N" and "out DIR".
 * usage: gh_modules OUT_DIR [AGENT_SO]   (AGENT_SO defaults to $MS_AGENT) */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <iconv.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GH_CYCLES 5

typedef int (*gh_start_fn)(const char *);

/* One conversion, so that the module really runs (its byte-order mark and a pair). */
static int gh_convert(iconv_t cd)
{
    char in[] = "memsight \xe2\x82\xac";
    char out[64];
    char *ip = in, *op = out;
    size_t il = strlen(in), ol = sizeof out;
    return iconv(cd, &ip, &il, &op, &ol) == (size_t)-1 ? -1 : 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: gh_modules OUT_DIR [AGENT_SO]\n");
        return 2;
    }
    const char *agent = argc > 2 ? argv[2] : getenv("MS_AGENT");
    void *h = agent ? dlopen(agent, RTLD_NOW | RTLD_LOCAL) : NULL;
    gh_start_fn start = NULL;
    if (h)
        *(void **)&start = dlsym(h, "memsight_start");
    if (!start) {
        fprintf(stderr, "gh_modules: no agent: %s\n", h ? "memsight_start missing" : dlerror());
        return 2;
    }
    static char opts[1024];
    snprintf(opts, sizeof opts, "out=%s", argv[1]);
    int rc = start(opts);
    if (rc != 0) {
        fprintf(stderr, "gh_modules: memsight_start: %d\n", rc);
        return 3;
    }
    /* loads UTF-16.so; its init allocates before anything else of the agent runs */
    iconv_t cd = iconv_open("UTF-16", "UTF-8");
    if (cd == (iconv_t)-1 || gh_convert(cd) != 0) {
        perror("gh_modules: iconv");
        return 4;
    }
    /* the module's end frees the state its init allocated (before it was hooked) */
    iconv_close(cd);
    /* NSS: the files database does not know this user, the next module is loaded */
    struct passwd *pw = getpwnam("memsight-no-such-user");
    pw = getpwnam("memsight-no-such-user-2");
    (void)pw;
    for (int i = 0; i < GH_CYCLES; i++) {
        cd = iconv_open("UTF-16", "UTF-8");
        if (cd == (iconv_t)-1 || gh_convert(cd) != 0) {
            perror("gh_modules: iconv");
            return 4;
        }
        if (i != GH_CYCLES - 1)
            iconv_close(cd); /* the last one stays open: one live block */
    }
    printf("cycles %d\nout %s\n", GH_CYCLES, argv[1]);
    fflush(stdout);
    _exit(0);
}
