/* SPDX-License-Identifier: Apache-2.0 */
/* json_items.c: one array of a JSON file, an element at a time (json_items.h). */
#include "util/json_items.h"

#include "util/json.h"
#include "util/json_fast.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define CHUNK 262144   /* bytes read at a time */
#define MAX_DEPTH 2000 /* below jansson's own limit (2048): deeper, jansson reads it whole */

enum { NONE = -1 };

/* More bytes after buf[len), keeping buf[*keep..len): the kept bytes move to the front, and
 * pos and *i (may be NULL) move with them.  0 at the end of the file (or on a read error: the
 * whole read then says what is wrong), else the count read. */
static size_t more(pfi_json_items *it, size_t *keep, size_t *i)
{
    if (it->eof)
        return 0;
    size_t k = *keep;
    if (k > 0) {
        memmove(it->buf, it->buf + k, it->len - k);
        it->len -= k;
        it->pos -= k; /* pos is never before what is kept */
        if (i)
            *i -= k;
        if (keep != &it->pos)
            *keep = 0;
    }
    if (it->cap - it->len < CHUNK) {
        size_t cap = it->cap ? 2 * it->cap : 2 * CHUNK;
        while (cap - it->len < CHUNK)
            cap *= 2;
        char *b = realloc(it->buf, cap);
        if (!b) {
            it->eof = 1;
            return 0;
        }
        it->buf = b;
        it->cap = cap;
    }
    size_t got = fread(it->buf + it->len, 1, CHUNK, it->f);
    if (got == 0)
        it->eof = 1;
    it->len += got;
    it->read += (long long)got;
    return got;
}

/* The next byte that is not white space (JSON's four), left at buf[pos]; NONE at the end. */
static int skip_ws(pfi_json_items *it)
{
    for (;;) {
        if (it->pos == it->len && !more(it, &it->pos, NULL))
            return NONE;
        unsigned char c = (unsigned char)it->buf[it->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
            return c;
        it->pos++;
    }
}

/* The next byte that is not white space, consumed; NONE at the end. */
static int take(pfi_json_items *it)
{
    int c = skip_ws(it);
    if (c != NONE)
        it->pos++;
    return c;
}

/* The byte at buf[*i], reading more as needed (keeping buf[*start..)); NONE at the end. */
static int at(pfi_json_items *it, size_t *start, size_t *i)
{
    if (*i == it->len && !more(it, start, i))
        return NONE;
    return (unsigned char)it->buf[*i];
}

/* Past the string whose opening quote is at buf[*i - 1]: *i just after its closing quote. */
static int skip_string(pfi_json_items *it, size_t *start, size_t *i)
{
    for (;;) {
        int c = at(it, start, i);
        if (c == NONE)
            return -1;
        (*i)++;
        if (c == '"')
            return 0;
        if (c == '\\') {
            if (at(it, start, i) == NONE)
                return -1;
            (*i)++;
        }
    }
}

/* The bytes of the value starting at buf[pos] (depth: the containers around it), as
 * buf[*a..*b); 0, or -1 when it does not end (the file ends first) or nests too deep.  What is
 * inside is jansson's to judge. */
static int span(pfi_json_items *it, int depth, size_t *a, size_t *b)
{
    size_t start = it->pos, i = it->pos;
    int c = at(it, &start, &i);
    if (c == '"') {
        i++;
        if (skip_string(it, &start, &i))
            return -1;
    } else if (c == '{' || c == '[') {
        int d = 0;
        do {
            c = at(it, &start, &i);
            if (c == NONE)
                return -1;
            i++;
            if (c == '"') {
                if (skip_string(it, &start, &i))
                    return -1;
            } else if (c == '{' || c == '[') {
                if (++d + depth > MAX_DEPTH)
                    return -1;
            } else if (c == '}' || c == ']') {
                d--;
            }
        } while (d > 0);
    } else { /* a number, true, false, null or junk: up to what ends it */
        while ((c = at(it, &start, &i)) != NONE && c != ',' && c != ']' && c != '}' &&
               c != ' ' && c != '\t' && c != '\n' && c != '\r')
            i++;
        if (i == start)
            return -1;
    }
    *a = start;
    *b = i;
    it->pos = i;
    return 0;
}

json_t *pfi_json_items_decode(const char *s, size_t n)
{
    json_t *v = pfi_json_fast_loadb(s, n);
    json_error_t je;
    return v ? v : pfi_json_loadb(s, n, JSON_DECODE_ANY, &je);
}

/* The value at buf[pos], decoded (NULL when it is not valid JSON). */
static json_t *value(pfi_json_items *it, int depth)
{
    size_t a, b;
    if (span(it, depth, &a, &b))
        return NULL;
    return pfi_json_items_decode(it->buf + a, b - a);
}

/* Members of the top object from buf[pos] (after '{' or ','): each value decoded and dropped,
 * up to `key` (then ONE, positioned inside its array) or the object's end (END).  A second
 * `key` or a `key` that is not an array: OTHER. */
static int members(pfi_json_items *it, int first)
{
    for (;;) {
        int c = skip_ws(it);
        if (c != '"') {
            if (!(first && c == '}'))
                return PFI_JSON_ITEMS_OTHER;
            it->pos++;
            return PFI_JSON_ITEMS_END;
        }
        json_t *k = value(it, 1);
        int is_key = json_is_string(k) && it->key && strcmp(json_string_value(k), it->key) == 0;
        int ok = is_key || !it->others;
        for (int o = 0; !ok && it->others[o] && o < 32 && json_is_string(k); o++)
            if (strcmp(json_string_value(k), it->others[o]) == 0) { /* once, as any key */
                ok = !(it->others_seen & 1u << o);
                it->others_seen |= 1u << o;
                break;
            }
        json_decref(k);
        if (!k || !ok || skip_ws(it) != ':')
            return PFI_JSON_ITEMS_OTHER;
        it->pos++;
        c = skip_ws(it);
        if (is_key) {
            if (c != '[' || it->in_object)
                return PFI_JSON_ITEMS_OTHER;
            it->pos++;
            it->in_object = 1;
            return PFI_JSON_ITEMS_ONE;
        }
        json_t *v = c == NONE ? NULL : value(it, 1);
        json_decref(v);
        if (!v)
            return PFI_JSON_ITEMS_OTHER;
        c = take(it);
        if (c == '}')
            return PFI_JSON_ITEMS_END;
        if (c != ',')
            return PFI_JSON_ITEMS_OTHER;
        first = 0;
    }
}

/* After the top value: only white space to the end of the file. */
static int end(pfi_json_items *it)
{
    return skip_ws(it) == NONE ? PFI_JSON_ITEMS_END : PFI_JSON_ITEMS_OTHER;
}

int pfi_json_items_open(pfi_json_items *it, const char *path, const char *key,
                        const char *const *others)
{
    memset(it, 0, sizeof *it);
    it->key = key;
    it->others = others;
    if (!(it->f = fopen(path, "rb")))
        return PFI_JSON_ITEMS_OTHER;
    int c = take(it);
    if (c == '[')
        return PFI_JSON_ITEMS_ONE;
    if (c != '{' || !key)
        return PFI_JSON_ITEMS_OTHER;
    return members(it, 1) == PFI_JSON_ITEMS_ONE ? PFI_JSON_ITEMS_ONE : PFI_JSON_ITEMS_OTHER;
}

/* The next element's bytes at *a..*b of buf (ONE), or the end (END, OTHER). */
static int next_span(pfi_json_items *it, size_t *a, size_t *b)
{
    if (it->done)
        return PFI_JSON_ITEMS_OTHER;
    int c = it->started ? take(it) : skip_ws(it);
    if (it->started) {
        if (c == ']') {
            it->done = 1;
            if (it->in_object) { /* the rest of the top object */
                c = take(it);
                if (c == ',' ? members(it, 0) != PFI_JSON_ITEMS_END : c != '}')
                    return PFI_JSON_ITEMS_OTHER;
            }
            return end(it);
        }
        if (c != ',')
            return PFI_JSON_ITEMS_OTHER;
        c = skip_ws(it);
    } else if (c == ']') { /* an empty array: the whole read says so */
        return PFI_JSON_ITEMS_OTHER;
    }
    it->started = 1;
    if (c == NONE || span(it, it->in_object ? 2 : 1, a, b))
        return PFI_JSON_ITEMS_OTHER;
    return PFI_JSON_ITEMS_ONE;
}

int pfi_json_items_next(pfi_json_items *it, json_t **v)
{
    size_t a, b;
    *v = NULL;
    int got = next_span(it, &a, &b);
    if (got != PFI_JSON_ITEMS_ONE)
        return got;
    return (*v = pfi_json_items_decode(it->buf + a, b - a)) ? got : PFI_JSON_ITEMS_OTHER;
}

int pfi_json_items_next_text(pfi_json_items *it, const char **s, size_t *n)
{
    size_t a, b;
    int got = next_span(it, &a, &b);
    *s = got == PFI_JSON_ITEMS_ONE ? it->buf + a : NULL;
    *n = got == PFI_JSON_ITEMS_ONE ? b - a : 0;
    return got;
}

void pfi_json_items_close(pfi_json_items *it)
{
    if (it->f)
        fclose(it->f);
    free(it->buf);
    memset(it, 0, sizeof *it);
}

int pfi_json_items_progress(const pfi_json_items *it, long long *done, long long *size)
{
    struct stat st;
    if (!it->f || fstat(fileno(it->f), &st) != 0 || !S_ISREG(st.st_mode))
        return -1;
    *done = it->read - (long long)(it->len - it->pos);
    *size = (long long)st.st_size;
    return 0;
}
