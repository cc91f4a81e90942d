/* Child processes that shut themselves in a sandbox, as a browser's content processes
 * do: each forks, allocates, installs a seccomp filter under which opening any file
 * fails with EACCES, and exits through exit(). Their exit snapshots cannot be written;
 * the program's own can. Prints one line; exits 0 when every child did.
 * usage: rb_sandbox [CHILDREN] */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static int sandbox(void)
{
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat, 3, 0),
#ifdef SYS_open
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_open, 2, 0),
#else
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat, 2, 0),
#endif
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat2, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EACCES),
    };
    struct sock_fprog prog = {sizeof f / sizeof f[0], f};
    return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 4, ok = 0;
    for (int i = 0; i < n; i++) {
        pid_t p = fork();
        if (p < 0)
            return 2;
        if (p == 0) {
            char *keep = malloc(1000 + (size_t)i);
            if (!keep || sandbox() != 0)
                _exit(3);
            memset(keep, i, 1000);
            exit(fopen("/dev/null", "r") == NULL && errno == EACCES ? 0 : 4);
        }
        int st;
        if (waitpid(p, &st, 0) == p && WIFEXITED(st) && WEXITSTATUS(st) == 0)
            ok++;
    }
    printf("%d of %d children sandboxed\n", ok, n);
    return ok == n ? 0 : 1;
}
