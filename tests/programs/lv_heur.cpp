// Interior pointers of the four shapes valgrind takes for start pointers by default
// (--leak-check-heuristics=all: stdstring, length64, newarray, multipleinheritance),
// each block held only through such a pointer from a global, a near miss of each shape,
// and a string after a 3-byte header (redis's sds) that only LeakSanitizer's rule (any
// interior pointer) keeps. Classes for valgrind at its default: the four shapes and what
// they hold still reachable, the rest possibly lost; with the heuristics off, all
// possibly lost. Nothing is freed and no destructor runs at exit (every object is held
// through a pointer), so that both tools look at the same heap.
#define _GLIBCXX_USE_CXX11_ABI 0 /* the copy-on-write std::string: its pointer is interior */
#include <stdint.h>
#include <string>
#include <unistd.h>

#include "lv_common.h"

struct Elem { // a destructor: new Elem[n] keeps the count before the elements
    char x[16];
    ~Elem() { x[0] = 0; }
};
struct A {
    char a;
    virtual ~A() {}
};
struct B {
    char b;
    virtual ~B() {}
};
struct C : public A, public B {
    char c;
};

static std::string *volatile g_str;   // the object: a start pointer; its rep: interior
static char *volatile g_len64;        // 8 bytes in, after the size of the rest
static void **volatile g_len64_child; // held by the length64 block only
static Elem *volatile g_arr;          // new Elem[3]: 8 bytes in, after the count
static B *volatile g_mi;              // the B inside a C: 16 bytes in
static char *volatile g_plain;        // 40 bytes into 100: no shape
static char *volatile g_len_bad;      // 8 bytes in, the first word not the rest's size
static char *volatile g_sds[2];       // 3 bytes in, after a header of len, alloc, flags

__attribute__((noinline)) static void build()
{
    g_str = new std::string("valgrind and memsight agree on this string");
    g_str->append(" and on its rep");
    char *p = (char *)lv_alloc(8 + 40);
    *(uint64_t *)p = 40;
    g_len64 = p + 8;
    void **child = (void **)lv_alloc(24);
    g_len64_child = child;
    memcpy(p + 16, &child, sizeof child);
    g_len64_child = nullptr;
    g_arr = new Elem[3];
    g_mi = new C;
    g_plain = (char *)lv_alloc(100) + 40;
    char *q = (char *)lv_alloc(8 + 40);
    *(uint64_t *)q = 7; // 40 % 7 != 0: neither length64 nor newarray
    g_len_bad = q + 8;
    for (int i = 0; i < 2; i++) {
        char *s = (char *)lv_alloc(3 + 20 + 1);
        s[0] = 20;
        s[1] = 20;
        s[2] = 1;
        g_sds[i] = s + 3;
    }
}

// With an argument: READY, then waits to be scanned (memsight leaks) until killed.
int main(int argc, char **argv)
{
    (void)argv;
    build();
    (void)!write(1, g_str->data(), 1);
    if (argc > 1) {
        (void)!write(1, "\nREADY\n", 7);
        for (;;)
            pause();
    }
    return 0;
}
