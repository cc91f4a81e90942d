/* Creates thread-specific keys until the C library refuses one: a program must get all
 * PTHREAD_KEYS_MAX of them with the agent loaded as without it. Prints the count; exit
 * 0 when it is PTHREAD_KEYS_MAX. A thread then sets and reads every key. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static pthread_key_t keys[PTHREAD_KEYS_MAX + 1];
static int nkeys;

static void *use_keys(void *arg)
{
    (void)arg;
    for (int i = 0; i < nkeys; i++)
        if (pthread_setspecific(keys[i], &keys[i]) != 0)
            return (void *)1;
    for (int i = 0; i < nkeys; i++)
        if (pthread_getspecific(keys[i]) != &keys[i])
            return (void *)1;
    return NULL;
}

int main(void)
{
    int rc = 0;
    while (nkeys <= PTHREAD_KEYS_MAX && (rc = pthread_key_create(&keys[nkeys], NULL)) == 0)
        nkeys++;
    printf("keys %d of %d (%s)\n", nkeys, PTHREAD_KEYS_MAX, rc ? strerror(rc) : "no refusal");
    pthread_t t;
    void *r = (void *)1;
    if (pthread_create(&t, NULL, use_keys, NULL) != 0 || pthread_join(t, &r) != 0 || r) {
        printf("a thread could not use the keys\n");
        return 1;
    }
    return nkeys == PTHREAD_KEYS_MAX ? 0 : 1;
}
