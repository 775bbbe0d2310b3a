/* parse_hf.c: the Hugging Face Transformers Trainer.  While training it prints no throughput
 * line, only its tqdm progress bar ("  2%|▏   | 4/203 [00:37<30:55,  9.33s/it]"), redrawn
 * with '\r'.  The bar's counter is the global optimizer step, so it is used as a cumulative
 * count of steps; the batch size comes from the banner "Total train batch size (w. parallel,
 * distributed & accumulation) = N" and tokens need the sequence length (--seq-len).
 * In auto mode a bar counts only after "***** Running training *****", so the bars of
 * tokenization or downloads (datasets' "examples/s") are never taken for training. */
#include "measure/parse_impl.h"

int pfi_parse_hf(pfi_parser *p, const char *line, pfi_obs *o)
{
    if (!p->hf_training && p->cfg.format != PFI_LOG_HF)
        return 0;
    return pfi_tqdm_steps(p, line, o);
}
