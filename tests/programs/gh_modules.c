/* Modules the C library loads itself, and _exit. Loads the agent (dlopen, or already
 * preloaded: dlopen then returns that copy), starts it, then makes glibc load a gconv
 * module (iconv_open to UTF-16: UTF-16.so's init allocates its state with its own
 * malloc slot, its end frees it with its own free slot) and NSS modules (getpwnam of a
 * user the files database does not know), and opens and closes the converter again
 * GH_CYCLES times (one allocation by UTF-16.so each time, one stays open). Leaves with
 * _exit, which must still write the exit snapshot. Prints "cycles N" and "out DIR".
 * Before the start it also makes its own RELRO pages writable (as a program that patches
 * its own GOT does; it is linked with -z now, so its slots are there): the agent patches
 * slots in them (dlopen, _exit) and must leave them writable (it checks, and writes).
 * usage: gh_modules OUT_DIR [AGENT_SO]   (AGENT_SO defaults to $MS_AGENT) */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <iconv.h>
#include <link.h>
#include <pwd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define GH_CYCLES 5

typedef int (*gh_start_fn)(const char *);

/* The program's own RELRO pages (the part the loader protects: whole pages). */
static uintptr_t gh_relro_lo, gh_relro_hi;
#define GH_RELRO_WORDS 2048
static uintptr_t gh_relro_copy[GH_RELRO_WORDS];

static int gh_find_relro(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    (void)arg;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_GNU_RELRO) {
            uintptr_t lo = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
            gh_relro_lo = lo & ~(uintptr_t)4095;
            gh_relro_hi = (lo + info->dlpi_phdr[i].p_memsz) & ~(uintptr_t)4095;
        }
    return 1; /* the program is the first module */
}

/* 1 if /proc/self/maps says the page at addr is writable. */
static int gh_writable(uintptr_t addr)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[4096];
    int w = 0;
    while (f && fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        char perms[8];
        if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3 && addr >= lo && addr < hi)
            w = perms[1] == 'w';
    }
    if (f)
        fclose(f);
    return w;
}

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
    dl_iterate_phdr(gh_find_relro, NULL);
    size_t words = (gh_relro_hi - gh_relro_lo) / sizeof(uintptr_t);
    if (!words || words > GH_RELRO_WORDS ||
        mprotect((void *)gh_relro_lo, gh_relro_hi - gh_relro_lo, PROT_READ | PROT_WRITE) != 0) {
        fprintf(stderr, "gh_modules: no RELRO page to open (link with -z now)\n");
        return 2;
    }
    memcpy(gh_relro_copy, (void *)gh_relro_lo, words * sizeof(uintptr_t));
    int rc = start(opts);
    if (rc != 0) {
        fprintf(stderr, "gh_modules: memsight_start: %d\n", rc);
        return 3;
    }
    size_t changed = 0;
    for (size_t i = 0; i < words; i++)
        changed += ((volatile uintptr_t *)gh_relro_lo)[i] != gh_relro_copy[i];
    int still = gh_writable(gh_relro_lo);
    printf("relro slots changed %zu, writable after the start %d\n", changed, still);
    if (!still) {
        fprintf(stderr, "gh_modules: the agent made the program's writable RELRO read-only\n");
        return 5;
    }
    ((volatile uintptr_t *)gh_relro_lo)[0] = gh_relro_copy[0]; /* faults if read-only */
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
