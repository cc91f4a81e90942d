// C++: libstdc++'s emergency exception pool, allocated by its constructor before the
// agent's, is still reachable; a std::string lost through its owner is one definitely
// lost block (the string object) and one indirectly lost (its characters).
#include <string>
#include <unistd.h>

static std::string *volatile g;

int main()
{
    g = new std::string(100, 'x');
    (void)!write(1, g->data(), 1);
    g = nullptr;
    return 0;
}
