/* SPDX-License-Identifier: Apache-2.0 */
/* parse_megatron.c: Megatron-LM's training_log line (megatron/training/training.py):
 *   [2024-04-06 03:02:12] iteration 71/ 100 | consumed samples: 9088 | elapsed time per
 *   iteration (ms): 5361.6 | throughput per GPU (TFLOP/s/GPU): 243.6 | ... | global batch
 *   size: 128 | lm loss: ...
 * The time per iteration is averaged over the log interval; tokens = global batch x sequence
 * length (from --seq-len, the line's own "actual seqlen:" (Megatron-DeepSpeed), or the
 * "seq_length ....." line of the argument dump).  GPT-NeoX's line has no batch size but a
 * "samples/sec:" over the same time.
 * The interval timer starts at "[before the start of training step]", so the first iteration
 * line after it averages the first iterations' warm-up in (compile, NCCL and allocator set-up:
 * 4,220.8 ms against 1,346.3 and 1,250.2 after it, tests/fixtures/logs/megatron-deepspeed-
 * start.log).  That line is the run's warm-up (pfi_obs.warmup), as torchtitan's step 1. */
#include <limits.h>
#include <string.h>

#include "measure/parse_impl.h"
#include "util/num.h"

int pfi_parse_megatron(pfi_parser *p, const char *line, pfi_obs *o)
{
    double ms, gbs, it, sps;
    if (!strstr(line, "iteration") ||
        !pfi_num_after(line, "elapsed time per iteration (ms):", &ms) || !(ms > 0))
        return 0;
    if (pfi_num_after(line, "iteration", &it))
        o->step = pfi_num_to_ll(it, LLONG_MAX);
    o->kind = PFI_OBS_RATE;
    if (pfi_num_after(line, "global batch size:", &gbs) && gbs > 0) {
        o->unit = PFI_OU_SAMPLES;
        o->value = gbs * 1000.0 / ms;
    } else if (pfi_num_after(line, "samples/sec:", &sps) && sps > 0) {
        /* GPT-NeoX: " samples/sec: 7.799 | iteration 34/ 10000 | elapsed time per iteration
         * (ms): 4103.1 | ..." has no batch size; its samples/sec is the global batch over the
         * same time per iteration. */
        o->unit = PFI_OU_SAMPLES;
        o->value = sps;
    } else {
        o->unit = PFI_OU_STEPS;
        o->value = 1000.0 / ms;
    }
    if (p->mg_start) {
        p->mg_start = 0;
        o->warmup = 1;
    }
    return 1;
}
