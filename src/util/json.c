/* SPDX-License-Identifier: Apache-2.0 */
#include "util/json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

json_t *pfi_json_num(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

json_t *pfi_json_str(const char *s)
{
    return s[0] ? json_string(s) : json_null();
}

json_t *pfi_json_text(const char *s)
{
    json_t *j = json_string(s);
    if (j || !s)
        return j;
    char *t = strdup(s);
    if (!t)
        return NULL;
    for (char *p = t; *p; p++)
        if ((unsigned char)*p > 0x7f)
            *p = '?';
    j = json_string(t);
    free(t);
    return j;
}

json_t *pfi_json_error(json_t *into, const char *code, const char *msg)
{
    json_t *doc = into ? into : json_object(), *err = pfi_json_text(msg);
    if (code && err)
        err = json_pack("{s:s, s:o}", "code", code, "message", err);
    if (!doc) {
        json_decref(err);
        return NULL;
    }
    if (json_object_set_new(doc, "error", err) != 0) { /* err is taken either way */
        json_decref(doc);
        return NULL;
    }
    return doc;
}

double pfi_json_num_or_nan(const json_t *v)
{
    return json_is_number(v) ? json_number_value(v) : NAN;
}

json_t *pfi_json_loadb(const char *s, size_t n, size_t flags, json_error_t *je)
{
    const char *z = s ? memchr(s, 0, n) : NULL;
    if (!z)
        return json_loadb(s, n, flags, je);
    int line = 1, col = 1;
    for (const char *p = s; p < z; p++, col++)
        if (*p == '\n')
            line++, col = 0;
    if (je) {
        memset(je, 0, sizeof *je);
        je->line = line;
        je->column = col;
        je->position = (int)(z - s);
        snprintf(je->text, sizeof je->text, "a NUL byte (not allowed in JSON)");
        snprintf(je->source, sizeof je->source, "<buffer>");
    }
    return NULL;
}
