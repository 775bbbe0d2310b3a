/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: the predictor's model file (src/study/model_io.c), which `pfi predict` and
 * the node daemon load.  Input: the file's JSON text.  A model it accepts must write itself
 * back to a file it accepts again, the same text both times, and predict from the features it
 * was trained around (its recorded means) without crashing: an answer with finite slowdowns
 * in [0, 1], or an error that says why. */
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "study/model_io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *dump(const pfi_model *m)
{
    json_t *doc = pfi_model_to_json(m, "fuzz");
    char *s = doc ? json_dumps(doc, JSON_SORT_KEYS) : NULL;
    json_decref(doc);
    return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *doc = json_loadb((const char *)data, size, 0, NULL);
    if (!doc)
        return 0;
    pfi_model *m = calloc(2, sizeof *m);
    pfi_err e = {0};
    if (m && pfi_model_from_json(doc, &m[0], &e) == PFI_OK) {
        char *a = dump(&m[0]);
        json_t *again = a ? json_loads(a, 0, NULL) : NULL;
        if (!again || pfi_model_from_json(again, &m[1], &e) != PFI_OK)
            abort(); /* what the reader accepted, its own writer must give back */
        char *b = dump(&m[1]);
        if (!b || strcmp(a, b) != 0)
            abort();
        double s[PFI_N_TDEPTHS];
        pfi_fit fit;
        if (pfi_model_predict_x(&m[0], m[0].mean, s, &fit, &e) == PFI_OK) {
            for (int i = 0; i < PFI_N_TDEPTHS; i++)
                if (!(isfinite(s[i]) && s[i] >= 0 && s[i] <= 1))
                    abort(); /* a slowdown no curve can have */
        } else if (!e.msg[0]) {
            abort();
        }
        free(b);
        free(a);
        json_decref(again);
    } else if (m && !e.msg[0]) {
        abort(); /* a refusal says why */
    }
    free(m);
    json_decref(doc);
    return 0;
}
