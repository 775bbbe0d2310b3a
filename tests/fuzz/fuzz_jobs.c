/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: the jobs file of `pfi allocate` (src/store/jobs_file.c, codec.c) and the
 * allocator behind it.  Input: byte 0 picks the per-GPU mode and the policy; the rest is the
 * file (written to a private temporary folder: the reader takes a path).  Jobs it accepts are
 * allocated at a 30% cut; an allocation that succeeds must stay within the budget. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/alloc_set.h"
#include "core/policy.h"
#include "store/jobs.h"

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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
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
