/* fork() while the agent walks the loaded modules: two threads ask for snapshots without
 * pause (each snapshot lists the modules with dl_iterate_phdr) while four threads fork
 * children that leave at once with exit(0) (whose exit snapshot walks the modules too).
 * glibc does not reset the loader's lock in a fork child: a child forked in the middle
 * of a walk would block forever in its own. Exit status 0 only if every child exited 0;
 * a deadlock shows as a timeout. The agent's memsight_dump is looked up with dlsym, so
 * the program also runs without it. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define NFORKERS 4
static int nforks = 50;
static volatile int done;
static int (*dump)(char *, unsigned long);

static void *dumper(void *arg)
{
    long *n = arg;
    char path[4096];
    while (!__atomic_load_n(&done, __ATOMIC_RELAXED)) {
        if (dump(path, sizeof path) == 0) {
            unlink(path); /* keep the directory small: only the walks matter here */
            (*n)++;
        }
    }
    return NULL;
}

static void *forker(void *arg)
{
    long bad = 0;
    (void)arg;
    for (int i = 0; i < nforks; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            free(malloc(64));
            exit(0);
        }
        int st = 0;
        if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
            bad++;
    }
    return (void *)bad;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        nforks = atoi(argv[1]);
    *(void **)&dump = dlsym(RTLD_DEFAULT, "memsight_dump");
    pthread_t d[2], f[NFORKERS];
    long dumps[2] = {0, 0};
    for (int i = 0; dump && i < 2; i++)
        pthread_create(&d[i], NULL, dumper, &dumps[i]);
    for (int i = 0; i < NFORKERS; i++)
        pthread_create(&f[i], NULL, forker, NULL);
    long bad = 0;
    for (int i = 0; i < NFORKERS; i++) {
        void *r;
        pthread_join(f[i], &r);
        bad += (long)r;
    }
    __atomic_store_n(&done, 1, __ATOMIC_RELAXED);
    for (int i = 0; dump && i < 2; i++)
        pthread_join(d[i], NULL);
    printf("forks %d bad %ld snapshots %ld\n", NFORKERS * nforks, bad, dumps[0] + dumps[1]);
    return bad ? 1 : 0;
}
