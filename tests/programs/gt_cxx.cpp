// Ground truth: C++ new, new[], delete and delete[] reach malloc/free through
// libstdc++; known live counts and bytes per calling function. Leaks on purpose.
#include <cstdio>
#include <cstdlib>

extern "C" {
#include "gt_common.h"
void *volatile gt_keep[GT_KEEP_MAX];
}

struct Obj {
    long a[5]; // 40 bytes
};

static int nkeep;

extern "C" GT_NOINLINE void gt_new_objects()
{
    for (int i = 0; i < 9; i++)
        gt_keep[nkeep++] = new Obj(); // 9 x 40
    Obj *tmp = new Obj();
    delete tmp;
}

extern "C" GT_NOINLINE void gt_new_arrays()
{
    for (int i = 0; i < 3; i++)
        gt_keep[nkeep++] = new char[1000]; // 3 x 1000
    int *t = new int[100];
    delete[] t;
}

int main()
{
    gt_new_objects();
    gt_new_arrays();
    gt_expect("gt_new_objects", "heap", 9, 9 * 40);
    gt_expect("gt_new_arrays", "heap", 3, 3000);
    std::fflush(stdout);
    return 0;
}
