/* SPDX-License-Identifier: Apache-2.0 */
/* json_write.h: JSON written straight from C values into a growing buffer, byte for byte as
 * jansson's json_dumps writes the same values with JSON_INDENT(indent) and
 * JSON_REAL_PRECISION(precision): members in the order written, each element on its own line
 * indented by depth x indent spaces, an empty array or object as [] or {}, integers in decimal,
 * reals as "%.<precision>g" with ".0" added to what would read back as an integer and the
 * exponent without '+' or leading zeros, strings with jansson's escapes (\" \\ \b \f \n \r \t,
 * other control characters as \u00XX).  For output too large to build as a json_t first (one
 * allocation per value): 100,000 jobs of `pfi allocate --json`.
 *
 * A value jansson would not write (a real that is not finite, a string that is not UTF-8) or
 * running out of memory marks the writer failed (pfi_jw.failed): its bytes are then not to be
 * used, as json_dumps would have given NULL. */
#ifndef PFI_UTIL_JSON_WRITE_H
#define PFI_UTIL_JSON_WRITE_H

#include <stddef.h>

#define PFI_JW_MAX_DEPTH 64

typedef struct pfi_jw {
    char *buf; /* buf[0..len): what was written (not NUL-terminated) */
    size_t len, cap;
    int indent, precision;
    int depth;                          /* containers open, plus the depth written from */
    int base;                           /* the depth written from (pfi_jw_reset) */
    int after_key;                      /* a member's key was written, its value is next */
    unsigned char kind[PFI_JW_MAX_DEPTH];  /* '{' or '[' of each open container */
    unsigned char items[PFI_JW_MAX_DEPTH]; /* whether it holds an element yet */
    int failed;
} pfi_jw;

/* An empty writer: indent 1-31 spaces per level, precision 1-31 significant digits of reals
 * (jansson's JSON_INDENT and JSON_REAL_PRECISION; 0 digits means 17, as there), or
 * PFI_JW_SHORTEST: each real with the fewest digits, 15 to 17, that read back as it. */
#define PFI_JW_SHORTEST (-1)
void pfi_jw_init(pfi_jw *w, int indent, int precision);
/* Empty again (the buffer is kept), writing a value that sits at `depth` levels of an
 * enclosing document: its inner lines indented as json_dumps indents them there. */
void pfi_jw_reset(pfi_jw *w, int depth);
void pfi_jw_free(pfi_jw *w);

void pfi_jw_object(pfi_jw *w); /* opens {  */
void pfi_jw_array(pfi_jw *w);  /* opens [  */
void pfi_jw_end(pfi_jw *w);    /* closes the innermost one */
/* A member's key (inside an object); its value is what is written next. */
void pfi_jw_key(pfi_jw *w, const char *key);
void pfi_jw_string(pfi_jw *w, const char *s);
void pfi_jw_integer(pfi_jw *w, long long v);
void pfi_jw_real(pfi_jw *w, double v); /* failed when v is not finite, as json_real is NULL */
void pfi_jw_num(pfi_jw *w, double v);  /* a real, or null when not finite (util/json.h) */
void pfi_jw_bool(pfi_jw *w, int v);
void pfi_jw_null(pfi_jw *w);

#endif
