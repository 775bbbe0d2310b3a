/* SPDX-License-Identifier: Apache-2.0 */
/* parse.c: the parser front end: format names, banner learning, unit conversion, line
 * splitting.  The line formats themselves live in parse_<framework>.c. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "measure/parse_impl.h"

static const char *const format_names[PFI_LOG_NFORMATS] = {
    "auto", "pfi", "megatron", "torchtitan", "hf", "deepspeed", "nanogpt", "llmc", "lightning",
    "composer", "automodel", "regex",
};

const char *pfi_log_format_name(pfi_log_format f)
{
    return (f >= 0 && f < PFI_LOG_NFORMATS) ? format_names[f] : "?";
}

int pfi_log_format_parse(const char *name, pfi_log_format *out, pfi_err *err)
{
    for (int i = 0; i < PFI_LOG_NFORMATS; i++)
        if (name && strcmp(name, format_names[i]) == 0) {
            *out = (pfi_log_format)i;
            return PFI_OK;
        }
    return pfi_err_set(err, PFI_EINVAL,
                       "unknown log format '%s' (known: auto, pfi, megatron, torchtitan, hf, "
                       "deepspeed, nanogpt, llmc, lightning, composer, automodel, regex)",
                       name ? name : "");
}

static const char *const regex_unit_names[] = {"tokens/s", "samples/s", "it/s",   "s/it",
                                               "ms/it",    "tokens",    "samples"};

int pfi_regex_unit_parse(const char *name, pfi_regex_unit *out, pfi_err *err)
{
    for (int i = 0; i < (int)(sizeof regex_unit_names / sizeof *regex_unit_names); i++)
        if (name && strcmp(name, regex_unit_names[i]) == 0) {
            *out = (pfi_regex_unit)i;
            return PFI_OK;
        }
    return pfi_err_set(err, PFI_EINVAL,
                       "unknown throughput unit '%s' (known: tokens/s, samples/s, it/s, s/it, "
                       "ms/it, tokens, samples)",
                       name ? name : "");
}

/* tqdm: "123/1000 [00:10<01:20, 12.3it/s" or "45it [00:10, 4.5it/s" or "2.31s/it". */
static const char tqdm_pattern[] =
    "([0-9]+)(/([0-9]+|\\?))?(it)? \\[[0-9:]+(<[0-9:?]+)?, +([0-9.]+|\\?) ?(it/s|s/it)";

int pfi_parser_new(const pfi_parse_cfg *cfg, pfi_parser **out, pfi_err *err)
{
    *out = NULL;
    pfi_parser *p = calloc(1, sizeof *p);
    if (!p)
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    p->cfg = *cfg;
    p->cfg.regex = NULL; /* not kept: the caller's string may not outlive us */
    if (cfg->format == PFI_LOG_REGEX && !cfg->regex) {
        free(p);
        return pfi_err_set(err, PFI_EINVAL, "log format 'regex' needs --throughput-regex");
    }
    if (regcomp(&p->tqdm_re, tqdm_pattern, REG_EXTENDED) != 0) {
        free(p);
        return pfi_err_set(err, PFI_EINTERNAL, "cannot compile the progress-bar pattern");
    }
    if (cfg->regex) {
        int rc = regcomp(&p->user_re, cfg->regex, REG_EXTENDED);
        if (rc != 0) {
            char why[128];
            regerror(rc, &p->user_re, why, sizeof why);
            regfree(&p->tqdm_re);
            free(p);
            return pfi_err_set(err, PFI_EINVAL, "bad --throughput-regex '%s': %s", cfg->regex,
                               why);
        }
        if (p->user_re.re_nsub < 1) {
            regfree(&p->user_re);
            regfree(&p->tqdm_re);
            free(p);
            return pfi_err_set(err, PFI_EINVAL,
                               "--throughput-regex '%s' has no (group) around the number",
                               cfg->regex);
        }
        p->user_re_ok = 1;
        p->cfg.format = PFI_LOG_REGEX;
    }
    p->detected = p->cfg.format;
    p->rich_n = -1;
    *out = p;
    return PFI_OK;
}

void pfi_parser_free(pfi_parser *p)
{
    if (!p)
        return;
    regfree(&p->tqdm_re);
    if (p->user_re_ok)
        regfree(&p->user_re);
    free(p);
}

int pfi_num_at(const char *s, double *v, const char **end)
{
    /* Copy digits, dropping thousands separators ("10,050"), then strtod.  A number longer
     * than tmp is refused rather than cut (a cut number has the wrong magnitude). */
    char tmp[64];
    size_t n = 0;
    const char *q = s;
    if (*q == '-' || *q == '+')
        tmp[n++] = *q++;
    if (!isdigit((unsigned char)*q) && !(*q == '.' && isdigit((unsigned char)q[1])))
        return 0;
    for (;;) {
        /* Room for two more characters and the NUL, or the number is too long to be one. */
        if (n + 3 > sizeof tmp)
            return 0;
        if (isdigit((unsigned char)*q) || *q == '.') {
            tmp[n++] = *q++;
        } else if (*q == ',' && isdigit((unsigned char)q[1]) && isdigit((unsigned char)q[2]) &&
                   isdigit((unsigned char)q[3]) && !isdigit((unsigned char)q[4])) {
            q++;
        } else if ((*q == 'e' || *q == 'E') &&
                   (isdigit((unsigned char)q[1]) ||
                    ((q[1] == '-' || q[1] == '+') && isdigit((unsigned char)q[2])))) {
            tmp[n++] = *q++;
            tmp[n++] = *q++;
        } else {
            break;
        }
    }
    tmp[n] = '\0';
    char *e;
    double x = strtod(tmp, &e);
    if (e == tmp || !isfinite(x))
        return 0;
    *v = x;
    if (end)
        *end = q;
    return 1;
}

int pfi_num_after(const char *s, const char *key, double *v)
{
    const char *k = strstr(s, key);
    if (!k)
        return 0;
    k += strlen(key);
    while (*k == ' ' || *k == '\t')
        k++;
    return pfi_num_at(k, v, NULL);
}

/* The length of a launcher's prefix at the start of a line: srun -l's "0: ", torchrun's
 * "[default0]:" (--tee) or "[rank0]:", with the blanks after it; 0 when there is none.  It is
 * no description of a progress bar. */
static size_t launcher_prefix(const char *line)
{
    const char *c = line;
    if (isdigit((unsigned char)*c)) {
        while (isdigit((unsigned char)*c))
            c++;
        if (*c != ':')
            return 0;
    } else if (*c == '[') {
        c++;
        if (!strncmp(c, "default", 7))
            c += 7;
        else if (!strncmp(c, "rank", 4))
            c += 4;
        else
            return 0;
        if (!isdigit((unsigned char)*c))
            return 0;
        while (isdigit((unsigned char)*c))
            c++;
        if (c[0] != ']' || c[1] != ':')
            return 0;
        c++;
    } else {
        return 0;
    }
    c++;
    while (*c == ' ' || *c == '\t')
        c++;
    return (size_t)(c - line);
}

int pfi_tqdm_steps(pfi_parser *p, const char *line, pfi_obs *o, int *desc_less)
{
    regmatch_t m[8];
    if (regexec(&p->tqdm_re, line, 8, m, 0) != 0)
        return 0;
    if (desc_less) {
        *desc_less = 1;
        size_t skip = 0, k;
        while ((k = launcher_prefix(line + skip)) > 0) /* srun -l over torchrun --tee: both */
            skip += k;
        for (const char *c = line + skip; c < line + m[1].rm_so; c++)
            if (isalpha((unsigned char)*c) || *c == ':')
                *desc_less = 0;
    }
    p->tqdm_at = (long)m[1].rm_so;
    p->tqdm_total = -1;
    if (m[3].rm_so >= 0 && line[m[3].rm_so] != '?')
        p->tqdm_total = strtod(line + m[3].rm_so, NULL);
    errno = 0;
    long long n = strtoll(line + m[1].rm_so, NULL, 10);
    long long step = errno ? -1 : n; /* a counter too large to hold is unknown */
    double r = NAN;
    if (line[m[6].rm_so] == '?' || !pfi_num_at(line + m[6].rm_so, &r, NULL))
        r = NAN;
    return pfi_bar_obs(p, (double)n, step, r, line[m[7].rm_so] == 's', o);
}

int pfi_bar_obs(const pfi_parser *p, double count, long long step, double rate, int s_per_it,
                pfi_obs *o)
{
    o->step = step;
    o->unit = PFI_OU_STEPS;
    if (p->cfg.offline) {
        o->kind = PFI_OBS_RATE;
        if (!(rate > 0)) {
            o->value = NAN; /* a bar, but no rate yet: counted untimed */
            return 1;
        }
        o->value = s_per_it ? 1.0 / rate : rate;
        return 1;
    }
    o->kind = PFI_OBS_COUNT;
    o->value = count;
    return 1;
}

int pfi_dict_num(const char *s, const char *key, double *v)
{
    char k[96];
    snprintf(k, sizeof k, "'%s':", key);
    const char *q = strstr(s, k);
    if (!q)
        return 0;
    q += strlen(k);
    while (*q == ' ')
        q++;
    if (*q == '\'')
        q++;
    return pfi_num_at(q, v, NULL);
}

/* The Hugging Face Trainer's metrics dicts: every logging step ({'loss': ..., 'learning_rate':
 * ..., 'epoch': ...}) and at the end ({'train_runtime': ..., 'train_samples_per_second': ...,
 * 'train_steps_per_second': ...}).  They say the Trainer is training (its banner is an INFO
 * log line, hidden at the default verbosity), and the closing one gives the batch size. */
static void learn_hf_dict(pfi_parser *p, const char *line)
{
    line = strstr(line, "{'");
    if (!line)
        return;
    double v, sps, stps;
    if ((strstr(line, "'loss':") && strstr(line, "'epoch':")) || strstr(line, "'learning_rate':") ||
        strstr(line, "'train_runtime':") || strstr(line, "'train_step_runtime':"))
        p->hf_training = 1;
    if (strstr(line, "'train_runtime':"))
        p->hf_over = 1;
    if (pfi_dict_num(line, "train_samples_per_second", &sps) && sps > 0) {
        p->hf_summary_sps = sps;
        /* Samples per step, rounded to the whole batch both rates were printed from. */
        if (p->samples_per_step <= 0 && pfi_dict_num(line, "train_steps_per_second", &stps) &&
            stps > 0 && (v = floor(sps / stps + 0.5)) >= 1 && fabs(v - sps / stps) <= 0.05 * v)
            p->samples_per_step = v;
    }
}

/* An argument dump's value: the number after key's dot leader.  1 and *v set when found. */
static int dump_value(const char *line, const char *key, double *v)
{
    const char *k = strstr(line, key);
    if (!k)
        return 0;
    k += strlen(key);
    while (*k == '.')
        k++;
    while (*k == ' ')
        k++;
    if (!isdigit((unsigned char)*k))
        return 0;
    char *end;
    double x = strtod(k, &end);
    /* The value ends at a blank, the line's end or NeoX's padding dots ("2048....updated"). */
    if (!isfinite(x) || (*end != '\0' && *end != ' ' && *end != '.'))
        return 0;
    *v = x;
    return 1;
}

/* Facts printed once at start-up, in whatever framework's words. */
static void learn_banner(pfi_parser *p, const char *line)
{
    double v;
    /* Megatron's argument dump: "  seq_length ........ 2048", "  global_batch_size .... 512";
     * GPT-NeoX pads after the value too: "  seq_length ...... 2048..........updated". */
    if (dump_value(line, "seq_length ..", &v) && v > 0)
        p->seq_len = v;
    if (dump_value(line, "global_batch_size ..", &v) && v > 0)
        p->samples_per_step = v;
    /* Megatron-DeepSpeed states the sequence length on every iteration line ("| actual
     * seqlen:  4096 |"): curriculum learning shortens it, so the line's own value replaces
     * the argument dump's maximum. */
    if (pfi_num_after(line, "| actual seqlen:", &v) && v > 0)
        p->seq_len = v;
    /* Megatron (and Megatron-DeepSpeed), just before its training loop, a resumed one too. */
    if (strstr(line, "[before the start of training step]"))
        p->mg_start = 1;
    /* nanoGPT: "tokens per iteration will be: 491,520". */
    if (pfi_num_after(line, "tokens per iteration will be:", &v) && v > 0)
        p->tokens_per_step = v;
    /* Hugging Face Trainer. */
    if (strstr(line, "***** Running training *****")) {
        p->hf_training = 1;
        /* A new training: its bar may have another total than the last one's. */
        p->hf_over = 0;
        p->hf_total = 0;
    }
    learn_hf_dict(p, line);
    if (pfi_num_after(line, "Total train batch size (w. parallel, distributed & accumulation) =",
                      &v) &&
        v > 0)
        p->samples_per_step = v;
    /* llm.c's parameter table: "| total batch size      | 524288 |" (tokens),
     * "| sequence length T     | 1024 |", wherever the row starts (a launcher's rank or time
     * prefix before it: "0: | total batch size ..."). */
    const char *row;
    if ((row = strstr(line, "| total batch size")) && pfi_num_after(row + 2, "|", &v) && v > 0)
        p->tokens_per_step = v;
    if ((row = strstr(line, "| sequence length T")) && pfi_num_after(row + 2, "|", &v) && v > 0)
        p->seq_len = v;
}

double pfi_parser_seq_len(const pfi_parser *p)
{
    return p->cfg.seq_len > 0 ? p->cfg.seq_len : p->seq_len;
}

double pfi_parser_tokens_per_step(const pfi_parser *p)
{
    if (p->cfg.tokens_per_step > 0)
        return p->cfg.tokens_per_step;
    if (p->tokens_per_step > 0)
        return p->tokens_per_step;
    double sps = p->cfg.samples_per_step > 0 ? p->cfg.samples_per_step : p->samples_per_step;
    double sl = pfi_parser_seq_len(p);
    return (sps > 0 && sl > 0) ? sps * sl : 0;
}

static void to_tokens(const pfi_parser *p, pfi_obs *o)
{
    if (o->unit == PFI_OU_STEPS) {
        double tps = pfi_parser_tokens_per_step(p);
        double sps = p->cfg.samples_per_step > 0 ? p->cfg.samples_per_step : p->samples_per_step;
        if (tps > 0) {
            o->value *= tps;
            o->unit = PFI_OU_TOKENS;
        } else if (sps > 0) {
            o->value *= sps;
            o->unit = PFI_OU_SAMPLES;
        }
    }
    if (o->unit == PFI_OU_SAMPLES) {
        double sl = pfi_parser_seq_len(p);
        if (sl > 0) {
            o->value *= sl;
            o->unit = PFI_OU_TOKENS;
        }
    }
}

typedef int (*format_fn)(pfi_parser *, const char *, pfi_obs *);
static const format_fn format_fns[PFI_LOG_NFORMATS] = {
    [PFI_LOG_PFI] = pfi_parse_pfi,           [PFI_LOG_MEGATRON] = pfi_parse_megatron,
    [PFI_LOG_TORCHTITAN] = pfi_parse_torchtitan, [PFI_LOG_HF] = pfi_parse_hf,
    [PFI_LOG_DEEPSPEED] = pfi_parse_deepspeed, [PFI_LOG_NANOGPT] = pfi_parse_nanogpt,
    [PFI_LOG_LLMC] = pfi_parse_llmc,         [PFI_LOG_LIGHTNING] = pfi_parse_lightning,
    [PFI_LOG_COMPOSER] = pfi_parse_composer, [PFI_LOG_AUTOMODEL] = pfi_parse_automodel,
    [PFI_LOG_REGEX] = pfi_parse_regex,
};
/* Detection order: most specific first; the bare tqdm bar of the HF Trainer last. */
static const pfi_log_format detect_order[] = {
    PFI_LOG_PFI,     PFI_LOG_MEGATRON, PFI_LOG_TORCHTITAN, PFI_LOG_DEEPSPEED,
    PFI_LOG_NANOGPT, PFI_LOG_LLMC,     PFI_LOG_LIGHTNING,  PFI_LOG_COMPOSER,
    PFI_LOG_AUTOMODEL, PFI_LOG_HF,
};

/* Drops ANSI escape sequences (torchtitan colours its metrics) and trailing blanks. */
static void clean_line(const char *in, char *out, size_t cap)
{
    size_t n = 0;
    for (const char *s = in; *s && n + 1 < cap; s++) {
        if (*s == '\033') {
            if (s[1] == '[') {
                s += 2;
                while (*s && !isalpha((unsigned char)*s))
                    s++;
                if (!*s)
                    break;
            }
            continue;
        }
        out[n++] = *s;
    }
    while (n > 0 && isspace((unsigned char)out[n - 1]))
        n--;
    out[n] = '\0';
}

/* Auto detection: every format is tried on the line, hf last; the first that hits is kept,
 * provisionally in two cases.  A bare bar (hf by that alone) may be the job's own
 * preprocessing loop, printed before a Megatron or nanoGPT job's first line, which would
 * otherwise never be read.  DeepSpeed's timer line: Megatron-DeepSpeed and GPT-NeoX print it
 * beside Megatron's iteration line, and its CurrSamplesPerSec times only the engine's
 * forward..step (data loading, logging and all between steps left out: 11-14% above the
 * job's wall-clock rate per line in the Megatron-DeepSpeed fixture), so Megatron's line, when
 * one comes, takes over (docs/log-formats.md). */
static int detect(pfi_parser *p, const char *line, pfi_obs *o)
{
    /* A bar still counting (its total not reached, and drawn again since the last timer line)
     * beside DeepSpeed's timer is the Trainer's with DeepSpeed under it: its wall-clock steps
     * are kept.  The timer took over, and the same job was read 2.7-12.7% faster when the
     * Trainer's INFO banner was hidden (its default verbosity) than when it was shown.  A
     * finished bar (a preprocessing loop), or one that stopped, gives way. */
    int keep_bar = p->weak && p->detected == PFI_LOG_HF && p->hf_total > 0 && !p->hf_done &&
                   p->bar_moved;
    for (size_t i = 0; i < sizeof detect_order / sizeof *detect_order; i++) {
        pfi_obs_init(o);
        if (format_fns[detect_order[i]](p, line, o)) {
            if (keep_bar && detect_order[i] == PFI_LOG_DEEPSPEED) {
                p->bar_moved = 0; /* the next timer line takes over unless the bar moves */
                return 0;
            }
            p->bar_moved = detect_order[i] == PFI_LOG_HF;
            if (p->detected != PFI_LOG_AUTO && p->detected != detect_order[i])
                p->restart_pending = 1;
            p->detected = detect_order[i];
            p->weak = p->detected == PFI_LOG_HF && !p->hf_training;
            p->ds_provisional = p->detected == PFI_LOG_DEEPSPEED;
            return 1;
        }
    }
    return 0;
}

/* A Megatron iteration line in a log auto detection read as DeepSpeed so far (detect). */
static int megatron_takes_over(pfi_parser *p, const char *line, pfi_obs *o)
{
    pfi_obs_init(o);
    if (!format_fns[PFI_LOG_MEGATRON](p, line, o))
        return 0;
    p->detected = PFI_LOG_MEGATRON;
    p->ds_provisional = 0;
    p->restart_pending = 1;
    return 1;
}

int pfi_parser_feed(pfi_parser *p, const char *raw, pfi_obs *o)
{
    char line[PFI_LINE_MAX];
    clean_line(raw, line, sizeof line);
    p->lines++;
    learn_banner(p, line);
    pfi_obs_init(o);
    int hit;
    if (p->detected == PFI_LOG_AUTO || p->weak) {
        hit = detect(p, line, o);
    } else if (p->ds_provisional && megatron_takes_over(p, line, o)) {
        hit = 1;
    } else {
        hit = format_fns[p->detected](p, line, o);
    }
    if (hit && o->warmup) {
        p->warmup++;
        return 0;
    }
    if (hit && isnan(o->value)) {
        p->untimed++;
        return 0;
    }
    if (!hit || !isfinite(o->value) || o->value < 0)
        return 0;
    if (o->kind == PFI_OBS_RATE && !(o->value > 0))
        return 0; /* a zero rate is a warm-up artefact ("mfu -100%"), not a measurement */
    to_tokens(p, o);
    p->matched++;
    o->restart = p->restart_pending;
    p->restart_pending = 0;
    return 1;
}

pfi_log_format pfi_parser_format(const pfi_parser *p)
{
    return p->detected;
}

int pfi_parser_per_gpu(const pfi_parser *p)
{
    return p->detected == PFI_LOG_TORCHTITAN;
}

void pfi_parser_stats(const pfi_parser *p, long *lines, long *matched)
{
    *lines = p->lines;
    *matched = p->matched;
}

long pfi_parser_untimed(const pfi_parser *p)
{
    return p->untimed;
}

long pfi_parser_warmup(const pfi_parser *p)
{
    return p->warmup;
}

const char *pfi_parser_why_none(const pfi_parser *p)
{
    if (p->detected == PFI_LOG_COMPOSER && p->cfg.offline)
        return "Composer's time/token counts carry no clock (time/train is in SpeedMonitor's "
               "time_unit, which the log does not name) and no \"Train "
               "throughput/tokens_per_sec\" line came (SpeedMonitor prints one once its window "
               "of batches has filled)";
    return NULL;
}

double pfi_parser_summary(const pfi_parser *p, pfi_obs_unit *unit)
{
    pfi_obs o;
    pfi_obs_init(&o);
    o.unit = PFI_OU_SAMPLES;
    o.value = p->hf_summary_sps;
    to_tokens(p, &o);
    *unit = o.unit;
    return o.value;
}

void pfi_parser_learn_from(pfi_parser *dst, const pfi_parser *src)
{
    if (src->seq_len > 0)
        dst->seq_len = src->seq_len;
    if (src->tokens_per_step > 0)
        dst->tokens_per_step = src->tokens_per_step;
    if (src->samples_per_step > 0)
        dst->samples_per_step = src->samples_per_step;
    dst->hf_training |= src->hf_training;
}

/* ---- line splitting ---- */

void pfi_linebuf_push(pfi_linebuf *lb, const char *data, size_t n,
                      void (*fn)(void *ctx, const char *line), void *ctx)
{
    for (size_t i = 0; i < n; i++) {
        char c = data[i];
        if (c == '\n' || c == '\r') {
            if (lb->len > 0 || lb->overflow) { /* a cut line is a line, even if empty now */
                lb->buf[lb->len] = '\0';
                fn(ctx, lb->buf);
            }
            lb->len = 0;
            lb->overflow = 0;
            lb->nl += c == '\n';
        } else if (c == '\0') {
            continue;
        } else if (!lb->overflow && lb->len + 1 < sizeof lb->buf) {
            lb->buf[lb->len++] = c;
        } else {
            /* The cut: a word that runs past it (a number included) is dropped whole, so
             * "tps: 1234567" cut after "123" is not read as 123.  A word that ends at the
             * cut, before a blank, is whole and kept. */
            if (!lb->overflow && !isspace((unsigned char)c))
                while (lb->len > 0 && !isspace((unsigned char)lb->buf[lb->len - 1]))
                    lb->len--;
            lb->overflow = 1;
        }
    }
}

void pfi_linebuf_flush(pfi_linebuf *lb, void (*fn)(void *ctx, const char *line), void *ctx)
{
    if (lb->len > 0 || lb->overflow) {
        lb->buf[lb->len] = '\0';
        fn(ctx, lb->buf);
    }
    pfi_linebuf_reset(lb);
}

void pfi_linebuf_reset(pfi_linebuf *lb)
{
    lb->len = 0;
    lb->overflow = 0;
}
