/* SPDX-License-Identifier: Apache-2.0 */
/* parse_lightning.c: PyTorch Lightning's TQDMProgressBar, and NeMo's progress output (built
 * on Lightning: its bar, and NeMo 2's per-step printer, below):
 *   Epoch 0:  97% 1651/1702 [13:00<00:24,  2.11it/s, loss=0.158, v_num=0]
 * The counter restarts at every epoch: a count that falls is a restart, which the rate logic
 * skips.  Tokens per step come from --tokens-per-step (or --seq-len with --batch-size).
 *
 * The bar read must be the epoch's: between "Epoch N:" and its counter only the percentage
 * and the bar.  Another bar drawn onto the same line is not it: NeMo's training bar has no
 * rate and is followed by the validation bar, "Epoch 0: :   0%|   | 2000/603000 [1:03:17<...,
 * v_num=, ...]dation DataLoader 0: : 51it [00:20,  2.53it/s]", whose 51 batches at 2.53 it/s
 * are not training steps.
 *
 * NeMo's bar states the last step's time instead of a rate ("train_step_timing in s=1.900"):
 * one step in that time, as for nanoGPT (the DGX recipes' tokens/s: seq x batch / timing). */
#include <ctype.h>
#include <limits.h>
#include <string.h>

#include "measure/parse_impl.h"
#include "util/num.h"

/* The bar's counter: the number that starts the word before " [" ("2000/603000 [", "1it ["). */
static long long bar_counter(const char *from)
{
    const char *br = strstr(from, " [");
    if (!br)
        return -1;
    const char *q = br;
    while (q > from && q[-1] != ' ' && q[-1] != '|')
        q--;
    double n;
    return pfi_num_at(q, &n, NULL) ? pfi_num_to_ll(n, LLONG_MAX) : -1;
}

/* NeMo 2's progress printer, a line per step and no bar: "Training epoch 0, iteration 120/149
 * | lr: 3e-05 | consumed_samples: 121 | global_batch_size: 1 | global_step: 120 | ... |
 * train_step_timing in s: 0.03146 | ...": one step in that time, of global_batch_size
 * samples. */
static int nemo_printer(const char *line, pfi_obs *o)
{
    const char *t = strstr(line, "Training epoch ");
    double st, gbs, step;
    if (!t || !strstr(t, ", iteration ") ||
        !pfi_num_after(t, "| train_step_timing in s:", &st) || !(st > 0))
        return 0;
    long long k = pfi_num_after(t, "| global_step:", &step) ? pfi_num_to_ll(step, LLONG_MAX) : -1;
    pfi_obs_step_ms(o, k, st * 1000.0);
    if (pfi_num_after(t, "| global_batch_size:", &gbs) && gbs > 0) {
        o->unit = PFI_OU_SAMPLES;
        o->value = gbs / st;
    }
    return 1;
}

int pfi_parse_lightning(pfi_parser *p, const char *line, pfi_obs *o)
{
    if (nemo_printer(line, o))
        return 1;
    const char *e = strstr(line, "Epoch ");
    double epoch;
    if (!e || !pfi_num_at(e + 6, &epoch, &e) || *e != ':')
        return 0;
    const char *ts = strstr(e, "train_step_timing in s=");
    double st;
    if (ts && pfi_num_at(ts + strlen("train_step_timing in s="), &st, NULL) && st > 0)
        return pfi_obs_step_ms(o, bar_counter(e), st * 1000.0);
    pfi_obs bar = *o;
    if (!pfi_tqdm_steps(p, line, &bar, NULL) || line + p->tqdm_at < e)
        return 0;
    for (const char *c = e; c < line + p->tqdm_at; c++)
        if (isalpha((unsigned char)*c) || *c == '[' || *c == ']' || *c == '=')
            return 0;
    *o = bar;
    return 1;
}
