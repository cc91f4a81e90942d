/* Ground truth for `memsight leaks PID`: a long-running program that leaks 10 request
 * buffers of 100 bytes from lk_serve_leak(), keeps one 1000-byte block in a global, says
 * READY on stdout and waits (up to 60 s, or until killed) to be scanned from outside. */
#include "lk_common.h"

void *g_config;

__attribute__((noinline)) void lk_serve_leak(int n)
{
    for (int i = 0; i < n; i++) {
        char *p = lk_alloc(100, 0);
        snprintf(p, 100, "request %d: GET /index.html", i);
    }
}

int main(void)
{
    g_config = lk_alloc(1000, 'c');
    lk_serve_leak(10);
    lk_clear_stack();
    lk_say("READY\n");
    for (int i = 0; i < 600; i++)
        usleep(100000);
    return 0;
}
