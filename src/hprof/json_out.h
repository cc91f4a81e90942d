/* JSON string output shared by the hprof commands (summary, histogram, dominators,
 * paths, diff, leaks). */
#ifndef MS_HPROF_JSON_OUT_H
#define MS_HPROF_JSON_OUT_H

#include <stdio.h>

/* Writes s as a JSON string: quotes, escapes, invalid UTF-8 replaced by U+FFFD. */
void ms_hprof_json_str(FILE *fp, const char *s);

#endif
