/* SPDX-License-Identifier: Apache-2.0 */
/* parse_regex.c: --throughput-regex RE --unit U, for any other framework.  The first
 * parenthesised group of the POSIX extended RE is the number (a k, M, G or B, T right after it
 * in the line, inside the group or just past it, scales it); U says what it measures. */
#include <ctype.h>
#include <string.h>

#include "measure/parse_impl.h"

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
    /* A scale letter after the number is part of it ("1.2k tokens/s"); read bare it would be
     * a thousand times too small.  It is looked for in the line, not in the group: the
     * natural regex for nanotron's "tokens_per_sec: 22.8K" captures "22.8" and leaves the K
     * after the group (read as 22.8).  A letter after the scale makes it a word or a unit
     * ("2GB", "5Ksamples"), and lower-case m is left alone: "250ms" is a unit. */
    static const char scale_ch[] = "kKMGBT";
    static const double scale_by[] = {1e3, 1e3, 1e6, 1e9, 1e9, 1e12};
    const char *after = line + m[1].rm_so + (end - num);
    const char *sc = *after ? strchr(scale_ch, *after) : NULL;
    if (sc && !isalpha((unsigned char)after[1]))
        v *= scale_by[sc - scale_ch];
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
