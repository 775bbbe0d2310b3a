/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: the journal reader (src/measure/journal.c), the file `pfi restore` trusts
 * to put GPUs back.  Input: the journal's text.  What it accepts must be usable: GPU indices
 * >= 0, limits finite and positive, a run id > 0 when named. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "measure/journal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    FILE *f = fmemopen((void *)data, size, "r");
    if (!f)
        return 0;
    pfi_journal *j = calloc(1, sizeof *j);
    pfi_err e = {0};
    int rc = j ? pfi_journal_parse(j, f, "fuzz", &e) : PFI_ENOMEM;
    fclose(f);
    if (rc == PFI_OK) {
        if (j->n < 0 || j->n > PFI_MAX_GPUS || j->run_id < 0 || j->pid < 0)
            abort();
        for (int i = 0; i < j->n; i++)
            if (j->e[i].gpu < 0 || !isfinite(j->e[i].limit_w) || !(j->e[i].limit_w > 0))
                abort();
    } else if (rc != PFI_ENOMEM && !e.msg[0]) {
        abort();
    }
    free(j);
    return 0;
}
