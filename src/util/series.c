/* SPDX-License-Identifier: Apache-2.0 */
#include "util/series.h"

#include <math.h>
#include <string.h>

#include "util/json.h"

void pfi_series_init(pfi_series *s, double min_dt)
{
    memset(s, 0, sizeof *s);
    s->min_dt = min_dt;
}

int pfi_series_add(pfi_series *s, double t, const double *v)
{
    if (!isfinite(t))
        return 0;
    if (s->n > 0) {
        double last = s->t[(s->head + s->n - 1) % PFI_SERIES_MAX];
        if (!(t > last) || t - last < s->min_dt)
            return 0;
    }
    int i;
    if (s->n < PFI_SERIES_MAX) {
        i = (s->head + s->n) % PFI_SERIES_MAX;
        s->n++;
    } else {
        i = s->head;
        s->head = (s->head + 1) % PFI_SERIES_MAX;
    }
    s->t[i] = t;
    memcpy(s->v[i], v, sizeof s->v[i]);
    return 1;
}

json_t *pfi_series_json(const pfi_series *s, double since, double until,
                        const char *const *names)
{
    json_t *t = json_array(), *col[PFI_SERIES_COLS];
    for (int c = 0; c < PFI_SERIES_COLS; c++)
        col[c] = json_array();
    for (int k = 0; k < s->n; k++) {
        int i = (s->head + k) % PFI_SERIES_MAX;
        if (!(s->t[i] > since) || s->t[i] > until)
            continue;
        json_array_append_new(t, json_real(s->t[i]));
        for (int c = 0; c < PFI_SERIES_COLS; c++)
            json_array_append_new(col[c], pfi_json_num(s->v[i][c]));
    }
    json_t *o = json_object();
    json_object_set_new(o, "t", t);
    for (int c = 0; c < PFI_SERIES_COLS; c++)
        json_object_set_new(o, names[c], col[c]);
    return o;
}
