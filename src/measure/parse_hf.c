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
 *
 * A dict with 'train_step_samples_per_second' (printed by some Trainer forks for every step)
 * is a rate in samples/s over 'train_step_runtime'. */
#include <string.h>

#include "measure/parse_impl.h"

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
    if (p->tqdm_total > 0) {
        p->hf_total = p->tqdm_total;
        p->hf_done = bar.step >= 0 && (double)bar.step >= p->tqdm_total;
    }
    *o = bar;
    return 1;
}
