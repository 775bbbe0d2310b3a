/* SPDX-License-Identifier: Apache-2.0 */
/* parse_hf.c: the Hugging Face Transformers Trainer.  While training it prints no throughput
 * line, only its tqdm progress bar ("  2%|▏   | 4/203 [00:37<30:55,  9.33s/it]"), redrawn
 * with '\r'.  The bar's counter is the global optimizer step, so it is used as a cumulative
 * count of steps; the batch size comes from the banner "Total train batch size (w. parallel,
 * distributed & accumulation) = N" (or the closing summary's samples/s over steps/s) and
 * tokens need the sequence length (--seq-len).
 *
 * In auto mode a bar counts once the Trainer is known to be training: its banner
 * "***** Running training *****" (an INFO line, hidden at the default verbosity), one of its
 * metrics dicts ({'loss': ..., 'epoch': ...}, with numbers or, as Transformers v5 prints
 * them, quoted strings), or a bar without a description: the Trainer's bar has none, while
 * the bars of tokenization, downloads and checkpoint loading ("Map: ... examples/s",
 * "Loading checkpoint shards: ...") carry one.
 *
 * The Trainer's evaluation bar has no description either: it is told apart by its total (the
 * eval batches), other than that of the training bar (max_steps), still unfinished, before it.
 * After the closing dict ('train_runtime') training is over: the bars that follow
 * (trainer.evaluate(), predict()) are not the training's, whatever came before them.
 *
 * A dict with 'train_step_samples_per_second' (printed by some Trainer forks for every step)
 * is a rate in samples/s over 'train_step_runtime'. */
#include <string.h>

#include "measure/parse_impl.h"

/* Whether a bar drawn after the Trainer's closing dict ('train_runtime') is still the
 * training's.  trainer.train(); trainer.evaluate() is common: the evaluation bar that follows
 * is forward only (31 it/s against 8 in a short fine-tune), and it came after a finished
 * training bar, which gives way to any other, so its redraws were read as training and,
 * coming last, outlived the steady window's cut of the start.  What is still the training's:
 * the bar the dict was written over on the same line (a console that renders '\r' shows the
 * dict after it), the training bar's own closing redraw (finished, at the training bar's
 * total; the Trainer writes the dict before closing the bar), and a bar at 0 of that total,
 * a second train(), which ends the state. */
static int after_training_bar(pfi_parser *p, const char *line, long long step)
{
    if (strstr(line + p->tqdm_at, "'train_runtime':"))
        return 1;
    if (p->tqdm_total <= 0 || step < 0)
        return 0;
    int same_total = p->hf_total <= 0 || p->tqdm_total == p->hf_total;
    if (step == 0 && p->hf_total > 0 && same_total) {
        p->hf_over = 0;
        return 1;
    }
    return same_total && (double)step >= p->tqdm_total;
}

int pfi_parse_hf(pfi_parser *p, const char *line, pfi_obs *o)
{
    double sps, rt;
    if (strstr(line, "{'") && pfi_dict_num(line, "train_step_samples_per_second", &sps)) {
        o->kind = PFI_OBS_RATE;
        o->unit = PFI_OU_SAMPLES;
        o->value = sps;
        if (pfi_dict_num(line, "train_step_runtime", &rt) && rt > 0)
            o->period_s = rt;
        return 1;
    }
    int desc_less = 0;
    pfi_obs bar = *o;
    if (!pfi_tqdm_steps(p, line, &bar, &desc_less))
        return 0;
    if (!p->hf_training && p->cfg.format != PFI_LOG_HF && !desc_less)
        return 0;
    /* The evaluation bar has no description either: drawn while the training bar is
     * unfinished, with another total (the eval batches, not max_steps), it is not the
     * training bar (its counter would be read as steps at the eval speed).  A larger total
     * too: a short fine-tune evaluated on more batches than it has steps read its 20 it/s of
     * evaluation as training at 1.5.  A finished bar (a preprocessing loop's) gives way to the
     * next whatever its total. */
    if (p->tqdm_total > 0 && p->hf_total > 0 && !p->hf_done && p->tqdm_total != p->hf_total)
        return 0;
    if (p->hf_over && !after_training_bar(p, line, bar.step))
        return 0;
    if (p->tqdm_total > 0) {
        p->hf_total = p->tqdm_total;
        p->hf_done = bar.step >= 0 && (double)bar.step >= p->tqdm_total;
    }
    *o = bar;
    return 1;
}
