/* SPDX-License-Identifier: Apache-2.0 */
/* parse_impl.h: what the per-framework parsers (parse_<framework>.c) share with parse.c.
 * Not part of the layer's API. */
#ifndef PFI_MEASURE_PARSE_IMPL_H
#define PFI_MEASURE_PARSE_IMPL_H

#include <regex.h>

#include "measure/parse.h"

struct pfi_parser {
    pfi_parse_cfg cfg;
    pfi_log_format detected;
    /* Learned from the log's banner (the cfg values win when non-zero). */
    double seq_len, tokens_per_step, samples_per_step;
    int hf_training; /* saw the Trainer's banner or one of its metrics dicts */
    /* Auto detection settled on hf from a bar without a description alone (no banner, no
     * metrics dict): provisional, every other format is still tried on each line... */
    int weak;
    int bar_moved; /* a weak bar's line was read since the last DeepSpeed timer line (parse.c) */
    /* Auto detection settled on deepspeed: Megatron's iteration line, printed beside
     * DeepSpeed's in Megatron-DeepSpeed and GPT-NeoX, still takes over (parse.c, detect). */
    int ds_provisional;
    int restart_pending; /* ...and one took over: the next observation says so */
    double hf_total;  /* the total of the last bar taken for training (0: none)... */
    int hf_done;      /* ...and whether its counter had reached it */
    /* The Trainer's closing dict ('train_runtime') was seen: training is over, and the bars
     * that follow are trainer.evaluate()'s or predict()'s (forward only, several times the
     * step rate), until a new banner or a second train()'s bar at 0. */
    int hf_over;
    double tqdm_total; /* the last bar's total; -1 when it shows none ("45it", "?") */
    long tqdm_at;      /* where the last bar's counter starts in its line */
    double hf_summary_sps; /* train_samples_per_second of the closing summary (0: none) */
    /* Megatron's "[before the start of training step]" seen: its interval timer starts there,
     * so the next iteration line's average holds the first iterations' warm-up. */
    int mg_start;
    /* The warm-up line was read: its iteration (-1 unknown) and time per iteration, for the
     * line after it, whose average may hold the same warm-up (parse_megatron.c). */
    int mg_after_warmup;
    long long mg_warm_it;
    double mg_warm_ms;
    /* nanoGPT's last line said "mfu -100.00%": a process's first iterations (its MFU estimate
     * starts at the fifth); the first such line is iteration 0 of that process, compile and all. */
    int nano_cold;
    /* DeepSpeed's older running average: the previous (step, average) to difference. */
    double ds_prev_step, ds_prev_avg;
    int ds_have_prev;
    /* Lightning's Rich bar: the (epoch, counter) of the last row read, so that a redraw of an
     * unchanged row (the training row is drawn again with every validation step) is no new
     * reading. */
    double rich_epoch;
    long long rich_n;
    regex_t tqdm_re;
    regex_t user_re;
    int user_re_ok;
    long lines, matched, untimed, warmup;
};

/* Finds key in s and parses the number after it (spaces skipped; "10,050" thousands
 * separators allowed).  Returns 1 and sets *v when found. */
int pfi_num_after(const char *s, const char *key, double *v);
/* Parses a number at s (thousands separators allowed); *end past it.  1 on success. */
int pfi_num_at(const char *s, double *v, const char **end);
/* A metrics dict's value for 'key' ("'key': 1.5" or "'key': '1.5'", as Transformers v5
 * prints it).  1 and *v set when found. */
int pfi_dict_num(const char *s, const char *key, double *v);
/* A tqdm progress bar as a cumulative count of steps (its counter).  The bar's own rate is
 * not used: it is tqdm's smoothed estimate, while the meter times the counts itself.  1 and *o
 * filled if the line holds a bar.  Offline (a finished file, no arrival times) the bar's own
 * rate is the observation instead, in steps/s; a bar showing "?it/s" is counted untimed.
 * *desc_less (may be NULL) is set to 1 when nothing but the percentage and the bar precede
 * the counter (the Trainer's bar; tokenizer and loader bars carry a description).
 * p->tqdm_total gets the bar's total, p->tqdm_at where its counter starts in line. */
int pfi_tqdm_steps(pfi_parser *p, const char *line, pfi_obs *o, int *desc_less);
/* A progress bar's reading as pfi_tqdm_steps gives it: its counter as a cumulative count of
 * steps, or offline the rate the bar states (steps/s, or seconds per step when s_per_it),
 * untimed (NAN) when it states none (rate not > 0).  step: the counter, -1 unknown.  1. */
int pfi_bar_obs(const pfi_parser *p, double count, long long step, double rate, int s_per_it,
                pfi_obs *o);

static inline void pfi_obs_init(pfi_obs *o)
{
    o->kind = PFI_OBS_RATE;
    o->unit = PFI_OU_TOKENS;
    o->value = 0;
    o->period_s = __builtin_nan("");
    o->period_may_span = 0;
    o->job_t_s = __builtin_nan("");
    o->step = -1;
    o->restart = 0;
    o->warmup = 0;
}

/* One step of `step` that took ms milliseconds, as a rate in steps/s over that period.
 * Returns 1 (a throughput line was read). */
static inline int pfi_obs_step_ms(pfi_obs *o, long long step, double ms)
{
    o->step = step;
    o->kind = PFI_OBS_RATE;
    o->unit = PFI_OU_STEPS;
    o->value = 1000.0 / ms;
    o->period_s = ms / 1000.0;
    return 1;
}

/* Each returns 1 and fills *o (in the log's own unit) for a throughput line of its format. */
int pfi_parse_pfi(pfi_parser *p, const char *line, pfi_obs *o);
int pfi_parse_megatron(pfi_parser *p, const char *line, pfi_obs *o);
int pfi_parse_torchtitan(pfi_parser *p, const char *line, pfi_obs *o);
int pfi_parse_hf(pfi_parser *p, const char *line, pfi_obs *o);
int pfi_parse_deepspeed(pfi_parser *p, const char *line, pfi_obs *o);
int pfi_parse_nanogpt(pfi_parser *p, const char *line, pfi_obs *o);
int pfi_parse_llmc(pfi_parser *p, const char *line, pfi_obs *o);
int pfi_parse_lightning(pfi_parser *p, const char *line, pfi_obs *o);
int pfi_parse_composer(pfi_parser *p, const char *line, pfi_obs *o);
int pfi_parse_automodel(pfi_parser *p, const char *line, pfi_obs *o);
int pfi_parse_regex(pfi_parser *p, const char *line, pfi_obs *o);

#endif
