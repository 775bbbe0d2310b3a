/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: the training-log parsers (src/measure/parse*.c) and the line splitter.
 * Input: byte 0 picks the format and byte 1 the options; the rest is the job's output, pushed
 * through pfi_linebuf in two chunks (split where byte 2 says) and fed line by line, then read
 * a second time by a parser that learnt from the first (as `pfi log` reads a finished file). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "measure/parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct feed {
    pfi_parser *p;
} feed;

static void on_line(void *ctx, const char *line)
{
    feed *f = ctx;
    pfi_obs o;
    if (pfi_parser_feed(f->p, line, &o) == 1) {
        /* An observation is a count or a rate with a known step or -1. */
        if (o.step < -1 || (o.kind != PFI_OBS_COUNT && o.kind != PFI_OBS_RATE))
            abort();
    }
}

static void run(const pfi_parse_cfg *cfg, const pfi_parser *learn, const uint8_t *d, size_t n,
                size_t cut, pfi_parser **keep)
{
    pfi_parser *p = NULL;
    if (pfi_parser_new(cfg, &p, NULL) != PFI_OK)
        return;
    if (learn)
        pfi_parser_learn_from(p, learn);
    feed f = {p};
    pfi_linebuf *lb = calloc(1, sizeof *lb);
    if (!lb) {
        pfi_parser_free(p);
        return;
    }
    pfi_linebuf_push(lb, (const char *)d, cut, on_line, &f);
    pfi_linebuf_push(lb, (const char *)d + cut, n - cut, on_line, &f);
    pfi_linebuf_flush(lb, on_line, &f);
    free(lb);
    long lines, matched;
    pfi_parser_stats(p, &lines, &matched);
    if (matched > lines)
        abort();
    pfi_obs_unit u;
    (void)pfi_parser_summary(p, &u);
    (void)pfi_parser_untimed(p);
    (void)pfi_parser_seq_len(p);
    (void)pfi_parser_tokens_per_step(p);
    if (keep)
        *keep = p;
    else
        pfi_parser_free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3)
        return 0;
    pfi_parse_cfg cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.format = (pfi_log_format)(data[0] % PFI_LOG_NFORMATS);
    if (cfg.format == PFI_LOG_REGEX) {
        cfg.regex = "tps: ([0-9.eE+-]+)";
        cfg.regex_unit = (pfi_regex_unit)(data[1] % 7);
    }
    cfg.offline = data[1] & 1;
    if (data[1] & 2)
        cfg.seq_len = 2048;
    if (data[1] & 4)
        cfg.tokens_per_step = 4194304;
    if (data[1] & 8)
        cfg.samples_per_step = 512;
    const uint8_t *d = data + 3;
    size_t n = size - 3, cut = n ? data[2] % (n + 1) : 0;
    pfi_parser *first = NULL;
    run(&cfg, NULL, d, n, cut, &first);
    if (first) {
        run(&cfg, first, d, n, n, NULL);
        pfi_parser_free(first);
    }
    return 0;
}
