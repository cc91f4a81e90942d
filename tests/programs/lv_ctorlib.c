/* A library whose constructor allocates before the agent's own constructor has run:
 * that allocation starts the agent, and must be recorded like any later one. */
#include <stdlib.h>

struct lv_registry {
    void *entries;
};
struct lv_registry *lv_registry;

__attribute__((constructor)) static void lv_registry_init(void)
{
    lv_registry = malloc(sizeof *lv_registry);
    if (lv_registry)
        lv_registry->entries = malloc(40);
}
