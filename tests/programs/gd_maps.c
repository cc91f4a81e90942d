/* Guard pages' mappings: a slot's protection must change in place. The program allocates
 * and frees ROUNDS x BLOCKS guarded blocks (guard=1: each one is; malloc_usable_size of a
 * guarded block is the size asked, 33, where the C library says 40) and counts the lines
 * of /proc/self/maps after each allocation and each free, read with system calls only
 * (no allocation of its own in between). Prints "maps A0 F0 A1 F1 ...": a free that
 * merged the slot's page back into the guard pages around it (and an allocation that
 * split them again) changes the count. Each calloc block must be zero, though its slot
 * held a block written all over in an earlier round. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BLOCKS 8
#define ROUNDS 4
#define SIZE 33

static char buf[1 << 20];

static int maps_lines(void)
{
    int fd = open("/proc/self/maps", O_RDONLY);
    if (fd < 0)
        exit(4);
    int lines = 0;
    ssize_t r;
    while ((r = read(fd, buf, sizeof buf)) > 0)
        for (ssize_t i = 0; i < r; i++)
            lines += buf[i] == '\n';
    close(fd);
    return lines;
}

int main(void)
{
    static int counts[2 * ROUNDS];
    char *b[BLOCKS];
    for (int r = 0; r < ROUNDS; r++) {
        for (int i = 0; i < BLOCKS; i++) {
            b[i] = calloc(1, SIZE);
            if (!b[i] || malloc_usable_size(b[i]) != SIZE)
                return 2; /* not guarded */
            for (int k = 0; k < SIZE; k++)
                if (b[i][k])
                    return 3; /* calloc's block is not zero */
            memset(b[i], 0xa5, SIZE);
        }
        counts[2 * r] = maps_lines();
        for (int i = 0; i < BLOCKS; i++)
            free(b[i]);
        counts[2 * r + 1] = maps_lines();
    }
    printf("maps");
    for (int i = 0; i < 2 * ROUNDS; i++)
        printf(" %d", counts[i]);
    printf("\n");
    return 0;
}
