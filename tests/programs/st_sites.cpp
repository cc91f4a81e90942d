// Ground truth for allocation sites: every allocation goes through the C or C++ runtime
// (strdup in libc, operator new in libstdc++, std::vector's growth inlined from the C++
// headers), from call sites of the program's own. Each site is reached from two callers,
// so it is two recorded stacks but one site. Keeps everything live and prints, as JSON,
// each site's line and what it holds. Usage: st_sites N
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define NOINL __attribute__((noinline))

static std::vector<void *> kept; // reachable: everything stays live

NOINL void st_names(int n)
{
    for (int i = 0; i < n; i++)
        kept.push_back(strdup("a name of 24 bytes long")); // ST_NAMES
}

NOINL void st_objects(int n)
{
    for (int i = 0; i < n; i++)
        kept.push_back(new char[1000]); // ST_OBJECTS
}

NOINL std::vector<int> *st_vector(int n)
{
    auto *v = new std::vector<int>(); // ST_VECTOR_HEAD
    v->reserve(n);                    // ST_VECTOR
    return v;
}

NOINL void caller_one(int n)
{
    st_names(n);
    st_objects(n);
    kept.push_back(st_vector(4096));
}

NOINL void caller_two(int n)
{
    st_names(n);
    st_objects(n);
    kept.push_back(st_vector(4096));
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 100;
    if (n < 1 || n > 100000)
        return 2;
    kept.reserve(8 * (size_t)n + 16);
    caller_one(n);
    caller_two(n);
    printf("{\"names\": %d, \"name_size\": 24, \"objects\": %d, \"object_size\": 1000, "
           "\"vectors\": 2, \"vector_size\": %zu}\n",
           2 * n, 2 * n, 4096 * sizeof(int));
    return 0;
}
