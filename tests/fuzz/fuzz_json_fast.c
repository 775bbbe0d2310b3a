/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: util/json_fast against jansson, the library it stands in for.  Whatever the
 * fast decoder accepts, jansson's json_loadb (JSON_DECODE_ANY) must accept too and decode to
 * the same value: the same types, integers, strings and object keys, and reals equal bit for
 * bit (json_equal would let -0.0 pass for 0.0).  Refusing is always allowed: the caller then
 * asks jansson. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "util/json_fast.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int same(const json_t *a, const json_t *b)
{
    if (json_typeof(a) != json_typeof(b))
        return 0;
    switch (json_typeof(a)) {
    case JSON_INTEGER:
        return json_integer_value(a) == json_integer_value(b);
    case JSON_REAL: {
        double x = json_real_value(a), y = json_real_value(b);
        return memcmp(&x, &y, sizeof x) == 0;
    }
    case JSON_STRING:
        return json_string_length(a) == json_string_length(b) &&
               memcmp(json_string_value(a), json_string_value(b), json_string_length(a)) == 0;
    case JSON_ARRAY:
        if (json_array_size(a) != json_array_size(b))
            return 0;
        for (size_t i = 0; i < json_array_size(a); i++)
            if (!same(json_array_get(a, i), json_array_get(b, i)))
                return 0;
        return 1;
    case JSON_OBJECT: {
        if (json_object_size(a) != json_object_size(b))
            return 0;
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)a, k, v) {
            const json_t *w = json_object_get(b, k);
            if (!w || !same(v, w))
                return 0;
        }
        return 1;
    }
    default: /* true, false, null: the type says it all */
        return 1;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *fast = pfi_json_fast_loadb((const char *)data, size);
    if (!fast)
        return 0;
    json_error_t je;
    json_t *ref = json_loadb((const char *)data, size, JSON_DECODE_ANY, &je);
    if (!ref || !same(fast, ref))
        abort();
    json_decref(ref);
    json_decref(fast);
    return 0;
}
