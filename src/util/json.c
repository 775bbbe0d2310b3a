/* SPDX-License-Identifier: Apache-2.0 */
#include "util/json.h"

#include <math.h>

json_t *pfi_json_num(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

json_t *pfi_json_str(const char *s)
{
    return s[0] ? json_string(s) : json_null();
}

double pfi_json_num_or_nan(const json_t *v)
{
    return json_is_number(v) ? json_number_value(v) : NAN;
}
