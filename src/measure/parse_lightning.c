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
 * one step in that time, as for nanoGPT (the DGX recipes' tokens/s: seq x batch / timing).
 *
 * Lightning's RichProgressBar draws the epoch's row in its own columns:
 *   Epoch 1/9  ━━━━━━━━━━━━━━━━ 910/910 0:05:58 • 0:00:00 2.55it/s v_num: mcyz train/loss: 2.903
 * description ("Epoch E", "/M" when max_epochs is set, padded), bar, "done/total" ("--" for
 * an iterable of no length), elapsed • remaining (H:MM:SS, "-:--:--" unknown, "1 day, ..."
 * past a day), the speed with two decimals, "0.00it/s" before Rich has one, then the metrics
 * (wrapped onto further lines by a narrow console; those lines are not read).  Read as the
 * tqdm bar is: its counter, offline its rate.  To a terminal Rich redraws in place
 * ("\r\033[2K", a cursor-up per extra row) with colours: the line splitter and the ANSI
 * filter leave the row itself.  The training row is drawn again unchanged with every step of a
 * validation run: an unchanged (epoch, counter) is not read again. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
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

/* "H:MM:SS", "-:--:--" or "N day(s), H:MM:SS" (Python's timedelta) at s; past it, or NULL. */
static const char *rich_duration(const char *s)
{
    const char *q = s;
    while (isdigit((unsigned char)*q))
        q++;
    if (q > s && (!strncmp(q, " day, ", 6) || !strncmp(q, " days, ", 7)))
        s = q + (q[4] == ',' ? 6 : 7);
    q = s;
    int colons = 0;
    while (isdigit((unsigned char)*q) || *q == ':' || *q == '-')
        colons += *q++ == ':';
    return colons == 2 ? q : NULL;
}

/* The Rich bar's epoch row after "Epoch E" (at q). */
static int rich_bar(pfi_parser *p, double epoch, const char *q, pfi_obs *o)
{
    double v;
    if (*q == '/' && !pfi_num_at(q + 1, &v, &q)) /* "/9", "/-2" (max_epochs -1) */
        return 0;
    /* Padding and the bar: blanks, Rich's glyphs (non-ASCII bytes) or an ASCII console's '-'. */
    int bar = 0;
    while (*q == ' ' || *q == '-' || (unsigned char)*q >= 0x80)
        bar += *q++ != ' ';
    if (!bar || q[-1] != ' ' || !isdigit((unsigned char)*q))
        return 0;
    errno = 0;
    char *end;
    long long n = strtoll(q, &end, 10);
    if (errno || *end != '/')
        return 0;
    q = end + 1;
    if (!strncmp(q, "--", 2))
        q += 2;
    else if (pfi_num_at(q, &v, &q) && v >= 0)
        ;
    else
        return 0;
    static const char bullet[] = " \xe2\x80\xa2 "; /* " • " in UTF-8 */
    if (*q++ != ' ' || !(q = rich_duration(q)) || strncmp(q, bullet, sizeof bullet - 1) ||
        !(q = rich_duration(q + sizeof bullet - 1)) || *q++ != ' ')
        return 0;
    double rate;
    if (!pfi_num_at(q, &rate, &q) || (strncmp(q, "it/s", 4) && strncmp(q, "s/it", 4)))
        return 0;
    if (epoch == p->rich_epoch && n == p->rich_n)
        return 0;
    p->rich_epoch = epoch;
    p->rich_n = n;
    return pfi_bar_obs(p, (double)n, n, rate, *q == 's', o);
}

int pfi_parse_lightning(pfi_parser *p, const char *line, pfi_obs *o)
{
    if (nemo_printer(line, o))
        return 1;
    const char *e = strstr(line, "Epoch ");
    double epoch;
    if (!e || !pfi_num_at(e + 6, &epoch, &e))
        return 0;
    if (*e == '/' || *e == ' ')
        return rich_bar(p, epoch, e, o);
    if (*e != ':')
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
