/* SPDX-License-Identifier: Apache-2.0 */
#include "util/json.h"

#include <math.h>
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

double pfi_json_num_or_nan(const json_t *v)
{
    return json_is_number(v) ? json_number_value(v) : NAN;
}
