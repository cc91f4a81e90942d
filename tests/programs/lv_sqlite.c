/* sqlite3 on an in-memory database, left open at exit (its handle in a global): SQLite's
 * allocator puts each block's size in its first 8 bytes and hands out the address after
 * it, so every pointer to its blocks is interior. valgrind's length64 heuristic (on by
 * default) takes them for start pointers: still reachable; without heuristics, possibly
 * lost. */
#include <sqlite3.h>
#include <unistd.h>

#include "lv_common.h"

static sqlite3 *volatile g_db;

int main(void)
{
    sqlite3 *db = NULL;
    if (sqlite3_open(":memory:", &db) != SQLITE_OK)
        return 1;
    g_db = db;
    if (sqlite3_exec(db,
                     "create table t(a, b); insert into t values(1, 'x'); "
                     "insert into t values(2, 'y'); create index i on t(b);",
                     NULL, NULL, NULL) != SQLITE_OK)
        return 2;
    (void)!write(1, "ok\n", 3);
    return 0;
}
