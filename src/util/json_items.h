/* SPDX-License-Identifier: Apache-2.0 */
/* json_items.h: the elements of one array in a JSON file, read one at a time through a small
 * buffer, never the whole document in memory: the file is an object whose member `key` is the
 * array (or, key NULL or not, a bare array).  Each element's bytes are found by a scanner that
 * follows strings, escapes and nesting, then decoded alone (util/json_fast.h, else jansson:
 * the same values either way); every other member's value is decoded the same way and
 * dropped, so a document that reaches the end is one jansson would read whole.  What this reader does not follow (a file it cannot open, bad JSON between
 * the elements, a duplicate `key`, a `key` that is not a non-empty array, nesting near
 * jansson's depth limit) ends it with PFI_JSON_ITEMS_OTHER: the caller then reads the file
 * whole, as before, and jansson says what is wrong, with its line. */
#ifndef PFI_UTIL_JSON_ITEMS_H
#define PFI_UTIL_JSON_ITEMS_H

#include <stdio.h>

#include <jansson.h>

enum {
    PFI_JSON_ITEMS_END = 0,   /* no more elements, and the document is whole and valid */
    PFI_JSON_ITEMS_ONE = 1,   /* *v is the next element (a new reference) */
    PFI_JSON_ITEMS_OTHER = -1 /* not a document this reader follows: read it whole instead */
};

typedef struct pfi_json_items {
    FILE *f;
    char *buf;
    size_t cap, len, pos; /* buf[pos..len) not scanned yet */
    int eof;
    long long read; /* bytes read from the file so far */
    const char *key;
    const char *const *others; /* the other members the top object may have (NULL-ended,
                                * at most 32); NULL: any */
    unsigned others_seen;      /* bit i: others[i] was met (a second one is OTHER) */
    int in_object; /* the array is a member of the top object */
    int started;   /* an element was read */
    int done;      /* the array ended */
} pfi_json_items;

/* Opens path and reads up to the first element.  PFI_JSON_ITEMS_ONE when positioned there,
 * else PFI_JSON_ITEMS_OTHER (close it either way).  others (NULL: any): the only names the top
 * object's other members may have; a member named otherwise, or one of them twice, is
 * PFI_JSON_ITEMS_OTHER where it is met (the caller's whole read then says which). */
int pfi_json_items_open(pfi_json_items *it, const char *path, const char *key,
                        const char *const *others);
/* The next element, or the end after checking the rest of the document. */
int pfi_json_items_next(pfi_json_items *it, json_t **v);
/* The same, the element's bytes only (*s, *n long, valid until the next call), for a caller
 * that decodes some elements itself and hands the others to pfi_json_items_decode: one that
 * decodes to NULL is not valid JSON, and the document is then to be read whole. */
int pfi_json_items_next_text(pfi_json_items *it, const char **s, size_t *n);
/* The value in s[0..n) (util/json_fast.h, else jansson), a new reference; NULL when it is not
 * valid JSON. */
json_t *pfi_json_items_decode(const char *s, size_t n);
void pfi_json_items_close(pfi_json_items *it);
/* How far the reading is: *done bytes of the file's *size have been taken up to now (an
 * element just returned included); 0, or -1 when the file's size is not known. */
int pfi_json_items_progress(const pfi_json_items *it, long long *done, long long *size);

#endif
