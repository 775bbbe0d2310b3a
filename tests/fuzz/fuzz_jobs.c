/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: the jobs file of `pfi allocate` (src/store/jobs_file.c, codec.c) and the
 * allocator behind it.  Input: byte 0 picks the per-GPU mode and the policy; the rest is the
 * file (written to a private temporary folder: the reader takes a path).  Jobs it accepts are
 * allocated at a 30% cut; an allocation that succeeds must stay within the budget.  The same
 * bytes taken as one job's text: what the text path keeps (pfi_job_text_decode) must be what the
 * json_t path keeps of them, bit for bit, and it must take nothing that is not JSON. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/alloc_set.h"
#include "core/policy.h"
#include "store/codec.h"
#include "store/jobs.h"
#include "util/json_items.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static char path[600];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    char dir[512];
    const char *t = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/pfi-fuzz-jobs-XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(dir))
        abort();
    snprintf(path, sizeof path, "%s/jobs.json", dir);
    return 0;
}

static int same_job(const pfi_alloc_job *a, const pfi_alloc_job *b)
{
    if (strcmp(a->id, b->id) != 0 || a->n_gpus != b->n_gpus || a->n_points != b->n_points ||
        memcmp(&a->min_cap_w, &b->min_cap_w, sizeof a->min_cap_w) != 0 ||
        memcmp(&a->max_cap_w, &b->max_cap_w, sizeof a->max_cap_w) != 0 ||
        memcmp(&a->p0_w, &b->p0_w, sizeof a->p0_w) != 0 ||
        memcmp(&a->t0, &b->t0, sizeof a->t0) != 0 || memcmp(&a->sla, &b->sla, sizeof a->sla) != 0 ||
        memcmp(&a->weight, &b->weight, sizeof a->weight) != 0)
        return 0;
    for (int i = 0; i < a->n_points; i++)
        if (memcmp(&a->cap_w[i], &b->cap_w[i], sizeof a->cap_w[i]) != 0 ||
            memcmp(&a->tput[i], &b->tput[i], sizeof a->tput[i]) != 0)
            return 0;
    return 1;
}

/* data[0..size) as one job's text: the text path against the json_t path. */
static void one_job(const char *data, size_t size)
{
    pfi_alloc_set a, b;
    if (pfi_alloc_set_init(&a, 1, 0) || pfi_alloc_set_init(&b, 1, 0))
        abort();
    pfi_err ea = {0}, eb = {0};
    int ka = pfi_job_text_decode(data, size, &a, 0, &ea);
    if (ka == PFI_OK) {
        json_t *o = pfi_json_items_decode(data, size);
        if (!o || pfi_job_json_decode(o, "f.json", 0, &b, 0, &eb) != PFI_OK)
            abort(); /* taken: not JSON, or a job the json_t path refuses */
        if (!same_job(&a.truth[0], &b.truth[0]) || !same_job(&a.pred[0], &b.pred[0]) ||
            memcmp(&a.pfi30[0], &b.pfi30[0], sizeof a.pfi30[0]) != 0)
            abort(); /* kept otherwise */
        json_decref(o);
    } else if (ka != PFI_JOB_TEXT_OTHER || a.ids[0] || ea.msg[0]) {
        abort(); /* left to the json_t path, but touched */
    }
    pfi_alloc_set_free(&a);
    pfi_alloc_set_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    one_job((const char *)data + 1, size - 1);
    int per_gpu = data[0] & 1;
    int policy = (data[0] >> 1) % PFI_POLICY_COUNT;
    FILE *f = fopen(path, "wb");
    if (!f || (size > 1 && fwrite(data + 1, 1, size - 1, f) != size - 1))
        abort();
    fclose(f);
    pfi_alloc_set s;
    pfi_err e = {0};
    int rc = pfi_jobs_file_load(path, per_gpu, &s, &e);
    if (rc != PFI_OK && !e.msg[0])
        abort(); /* every refusal says why */
    if (rc == PFI_OK && s.n <= 64) {
        pfi_alloc_job *view = malloc((size_t)s.n * sizeof *view);
        pfi_err e2 = {0};
        if (view && pfi_alloc_set_view(&s, policy, view, &e2) == PFI_OK) {
            pfi_alloc_opts o;
            pfi_alloc_opts_default(&o);
            double budget = pfi_alloc_budget_from_cut(view, s.n, 0.3);
            pfi_alloc_result r = {0};
            if (pfi_alloc_policy(policy, view, s.n, s.pfi30, budget, &o, &r, &e2) == PFI_OK) {
                if (!(r.power_w <= budget * (1 + 1e-9) + 1e-6))
                    abort(); /* over the budget */
                pfi_alloc_result_free(&r);
            } else if (!e2.msg[0]) {
                abort();
            }
        }
        free(view);
    }
    pfi_alloc_set_free(&s);
    return 0;
}
