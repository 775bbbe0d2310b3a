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
 * start.log).  That line is the run's warm-up (pfi_obs.warmup), as torchtitan's step 1.
 *
 * Since Megatron Core 0.16 (NVIDIA/Megatron-LM c40b6ea070, PR #2954) the loop also logs the
 * process's first iteration (k, the start's + 1) and then does not reset its interval timer nor
 * its iteration counters (training_log: should_reset = not is_first_iteration), so the next
 * line, at the first multiple N of the log interval after k, averages iterations k..N, the
 * warm-up included.  Older versions (Megatron-DeepSpeed too) log only at multiples of the
 * interval L and reset at every line: after a warm-up line at k, the next is at k + L,
 * k a multiple of L.  So when k is no multiple of N - k, the counters ran on, and the
 * line is corrected exactly: iterations k+1..N took ((N-k+1) tN - tk) / (N-k) ms each
 * ((N tN - t1) / (N-1) from a fresh start).  When the numbers cannot tell (N = k + 1, the
 * interval 1 of either version; k a multiple of N - k, an older version's every run), the
 * line is counted as warm-up too: one line of the run is lost, never a biased one kept. */
#include <limits.h>
#include <string.h>

#include "measure/parse_impl.h"
#include "util/num.h"

/* The line after the warm-up line (iteration it, ms per iteration, o its reading): corrected
 * when the iteration numbers prove Megatron Core >= 0.16's unreset counters, else warm-up. */
static void after_warmup(pfi_parser *p, long long it, double ms, pfi_obs *o)
{
    long long k = p->mg_warm_it;
    p->mg_after_warmup = 0;
    if (k >= 1 && it > k && k % (it - k) != 0) {
        double n = (double)(it - k + 1);
        double steady = (n * ms - p->mg_warm_ms) / (n - 1);
        if (steady > 0) { /* else the lines do not fit the model (some were lost) */
            o->value *= ms / steady;
            return;
        }
    }
    o->warmup = 1;
}

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
        p->mg_after_warmup = 1;
        p->mg_warm_it = o->step;
        p->mg_warm_ms = ms;
    } else if (p->mg_after_warmup) {
        after_warmup(p, o->step, ms, o);
    }
    return 1;
}
