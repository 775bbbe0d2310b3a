/* SPDX-License-Identifier: Apache-2.0 */
/* parse_lightning.c: PyTorch Lightning's TQDMProgressBar:
 *   Epoch 0:  97% 1651/1702 [13:00<00:24,  2.11it/s, loss=0.158, v_num=0]
 * The counter restarts at every epoch: a count that falls is a restart, which the rate logic
 * skips.  Tokens per step come from --tokens-per-step (or --seq-len with --batch-size). */
#include <string.h>

#include "measure/parse_impl.h"

int pfi_parse_lightning(pfi_parser *p, const char *line, pfi_obs *o)
{
    const char *e = strstr(line, "Epoch ");
    double epoch;
    if (!e || !pfi_num_at(e + 6, &epoch, &e) || *e != ':')
        return 0;
    return pfi_tqdm_steps(p, line, o, NULL);
}
