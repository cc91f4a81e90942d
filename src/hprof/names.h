/* Class-name normalisation for HPROF: HotSpot writes internal names ("java/util/List",
 * "[B", "[[Ljava/lang/Object;"), Android and the old agent write source form
 * ("java.lang.String", "byte[]"); both become source form. Pure string work, no I/O. */
#ifndef MS_HPROF_NAMES_H
#define MS_HPROF_NAMES_H

#include <stddef.h>

/* Writes the source form of the class name in[0..len) into out (always NUL-terminated,
 * truncated to outlen-1). Returns the length written. Unknown shapes are copied with
 * '/' turned into '.', control bytes replaced by '?'. */
size_t ms_hprof_class_name_normalize(const char *in, size_t len, char *out, size_t outlen);

/* Replaces, in place, every byte of s[0..len) that is not part of a valid UTF-8
 * sequence (and every control byte) with '?', so names are safe in JSON and on a
 * terminal. Java's modified UTF-8 (overlong NUL, surrogate pairs) becomes '?'s too. */
void ms_hprof_utf8_sanitize(char *s, size_t len);

/* Source-form name of a primitive array type ("byte[]") for an HPROF basic type, or
 * NULL if the type is not a primitive. */
const char *ms_hprof_prim_array_name(int type);

/* Element type of a primitive array class name in source form ("int[]" -> MS_HT_INT),
 * 0 if it is not one (including "int[][]", an object array). */
int ms_hprof_prim_array_type(const char *name);

#endif
