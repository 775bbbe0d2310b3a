/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: what the site controller reads from others.  Byte 0 picks the reader; the
 * rest is its input:
 *   0  Slurm's `sinfo --json` and `squeue --json` (two texts split at the first NUL byte):
 *      every job part must name a listed node and GPUs within it
 *   1  pfi's topology file (--topology): the same
 *   2  a node daemon's GET /v1/gpus answer (a node may be broken or hostile): at most
 *      PFI_MAX_GPUS GPUs
 *   3  a job's curve from a node's GET /v1/jobs: one taken has >= 2 points, finite caps rising,
 *      finite throughputs >= 0 (what the allocator is given)
 * Nothing may crash, leak or read out of bounds. */
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/cl_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_topo(const pfi_cl_topo *t)
{
    for (int j = 0; j < t->n_jobs; j++)
        for (int p = 0; p < t->jobs[j].n_parts; p++) {
            const pfi_cl_topo_part *pt = &t->jobs[j].parts[p];
            if (pt->node < 0 || pt->node >= t->n_nodes || pt->n_gpus < 0 ||
                pt->n_gpus > PFI_MAX_GPUS)
                abort();
            for (int g = 0; g < pt->n_gpus; g++)
                if (pt->gpus[g] < 0 || pt->gpus[g] >= PFI_MAX_GPUS)
                    abort();
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int mode = data[0] % 4;
    char *text = malloc(size);
    if (!text)
        return 0;
    memcpy(text, data + 1, size - 1);
    text[size - 1] = '\0'; /* the readers take NUL-terminated text */
    pfi_err e = {0};
    pfi_cl_topo t;
    memset(&t, 0, sizeof t);
    if (mode == 0) {
        size_t n1 = strlen(text);
        const char *squeue = n1 + 1 < size - 1 ? text + n1 + 1 : "";
        if (pfi_cl_topo_parse_slurm(text, squeue, &t, &e) == PFI_OK) {
            check_topo(&t);
            pfi_cl_topo_free(&t);
        }
    } else if (mode == 1) {
        if (pfi_cl_topo_parse_json(text, &t, &e) == PFI_OK) {
            check_topo(&t);
            pfi_cl_topo_free(&t);
        }
    } else {
        json_t *doc = json_loads(text, 0, NULL);
        if (doc && mode == 2) {
            pfi_cl_node *n = calloc(1, sizeof *n);
            if (n) {
                n->n_gpus = 8;
                if (pfi_cl_decode_gpus(doc, n, &e) == PFI_OK &&
                    (n->n_gpus < 0 || n->n_gpus > PFI_MAX_GPUS))
                    abort();
                free(n);
            }
        } else if (doc) {
            pfi_cl_job *j = calloc(1, sizeof *j);
            if (j && pfi_cl_decode_curve(doc, j)) {
                if (j->n_points < 2 || j->n_points > PFI_CL_CURVE_MAX)
                    abort();
                for (int k = 0; k < j->n_points; k++)
                    if (!isfinite(j->cap_w[k]) || !isfinite(j->tput[k]) || j->tput[k] < 0 ||
                        (k > 0 && !(j->cap_w[k] > j->cap_w[k - 1])))
                        abort();
            }
            free(j);
        }
        json_decref(doc);
    }
    free(text);
    return 0;
}
