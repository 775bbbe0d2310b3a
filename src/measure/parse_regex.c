/* SPDX-License-Identifier: Apache-2.0 */
/* parse_regex.c: --throughput-regex RE --unit U, for any other framework.  The first
 * parenthesised group of the POSIX extended RE is the number (a k, M, G or B, T right after it
 * in the line, inside the group or just past it, scales it); U says what it measures. */
#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "measure/parse_impl.h"

/* 1 when s starts a word of what a throughput counts ("tok/s", "samples/s", "it/s"). */
static int unit_word(const char *s)
{
    static const char *const words[] = {"tok", "sample", "seq", "img", "image", "it/", "ex/",
                                        "example", "word", "char", "byte"};
    for (size_t i = 0; i < sizeof words / sizeof *words; i++)
        if (strncasecmp(s, words[i], strlen(words[i])) == 0)
            return 1;
    return 0;
}

/* The scale of a number followed by after: a scale letter right after it is part of it
 * ("1.2k tokens/s"); read bare it would be a thousand times too small.  It is looked for in the
 * line, not in the group: the natural regex for nanotron's "tokens_per_sec: 22.8K" captures
 * "22.8" and leaves the K after the group.  A letter after the scale makes it a word or another
 * unit ("2GB", "5Kelvin"), unless the letters name what is counted ("52.4ktok/s",
 * "12.5Msamples/s", "12.5 k tokens/s": read as 52.4 they were 1000 times too small); lower-case
 * m is left alone: "250ms" is a unit. */
static double scale_after(const char *after)
{
    static const char scale_ch[] = "kKMGBT";
    static const double scale_by[] = {1e3, 1e3, 1e6, 1e9, 1e9, 1e12};
    /* "12.5 k tokens/s", "52.4 ktok/s": after a blank, only before a unit word ("2 T" or
     * "5 Kelvin" is no scale). */
    if (after[0] == ' ' && after[1] && strchr(scale_ch, after[1])) {
        const char *w = after[2] == ' ' ? after + 3 : after + 2;
        return unit_word(w) ? scale_by[strchr(scale_ch, after[1]) - scale_ch] : 1.0;
    }
    const char *sc = *after ? strchr(scale_ch, *after) : NULL;
    if (!sc)
        return 1.0;
    if (!isalpha((unsigned char)after[1]) || unit_word(after + 1))
        return scale_by[sc - scale_ch];
    return 1.0;
}

int pfi_parse_regex(pfi_parser *p, const char *line, pfi_obs *o)
{
    if (!p->user_re_ok)
        return 0;
    regmatch_t m[2];
    if (regexec(&p->user_re, line, 2, m, 0) != 0 || m[1].rm_so < 0)
        return 0;
    char num[64];
    size_t len = (size_t)(m[1].rm_eo - m[1].rm_so);
    if (len == 0 || len >= sizeof num)
        return 0;
    memcpy(num, line + m[1].rm_so, len);
    num[len] = '\0';
    double v;
    const char *end;
    if (!pfi_num_at(num, &v, &end))
        return 0;
    v *= scale_after(line + m[1].rm_so + (end - num));
    o->kind = PFI_OBS_RATE;
    switch (p->cfg.regex_unit) {
    case PFI_RU_TOKENS_PER_S:
        o->unit = PFI_OU_TOKENS;
        o->value = v;
        break;
    case PFI_RU_SAMPLES_PER_S:
        o->unit = PFI_OU_SAMPLES;
        o->value = v;
        break;
    case PFI_RU_STEPS_PER_S:
        o->unit = PFI_OU_STEPS;
        o->value = v;
        break;
    case PFI_RU_S_PER_STEP:
    case PFI_RU_MS_PER_STEP: {
        double sec = p->cfg.regex_unit == PFI_RU_MS_PER_STEP ? v / 1000.0 : v;
        if (!(sec > 0))
            return 0;
        o->unit = PFI_OU_STEPS;
        o->value = 1.0 / sec;
        o->period_s = sec;
        o->period_may_span = 1;
        break;
    }
    case PFI_RU_TOKENS:
        o->kind = PFI_OBS_COUNT;
        o->unit = PFI_OU_TOKENS;
        o->value = v;
        break;
    case PFI_RU_SAMPLES:
        o->kind = PFI_OBS_COUNT;
        o->unit = PFI_OU_SAMPLES;
        o->value = v;
        break;
    }
    return 1;
}
