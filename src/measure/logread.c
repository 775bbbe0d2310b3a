/* SPDX-License-Identifier: Apache-2.0 */
/* logread.c: a finished log file -> its throughput series and steady summary (logread.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "measure/logread.h"
#include "measure/meter.h"
#include "util/fs.h"

typedef struct reader {
    pfi_parser *p;
    pfi_logread *r;
    int collect;          /* 0: the first pass (learning only) */
    int unit_set;
    pfi_obs_unit unit;
    int have_count;       /* the pfi protocol's cumulative count, differenced on its t= */
    double count, count_t;
    int oom;
    const pfi_linebuf *lb; /* the pass's: the file line of the piece being read */
} reader;

static void add_point(reader *rd, long long step, double rate)
{
    pfi_logread *r = rd->r;
    if ((r->n & (r->n - 1)) == 0 && r->n >= 16) { /* grow at 16, 32, 64, ... */
        pfi_log_point *q = realloc(r->pts, (size_t)r->n * 2 * sizeof *q);
        if (!q) {
            rd->oom = 1;
            return;
        }
        r->pts = q;
    }
    r->pts[r->n++] = (pfi_log_point){rd->lb->nl + 1, step, rate};
}

static void on_count(reader *rd, const pfi_obs *o)
{
    if (!isfinite(o->job_t_s)) {
        rd->r->untimed++; /* a count with no clock of its own: nothing to time it by */
        return;
    }
    /* A rate past a double (counts a few 1e-310 s apart) is no rate: it printed "inf", and the
     * JSON output, which has no infinity, lost its series and summary. */
    double rate = rd->have_count && o->value > rd->count && o->job_t_s > rd->count_t
                      ? (o->value - rd->count) / (o->job_t_s - rd->count_t)
                      : NAN;
    if (isfinite(rate))
        add_point(rd, o->step, rate);
    else
        rd->r->untimed++; /* the first count, a restart or a repeat: no interval */
    rd->have_count = 1;
    rd->count = o->value;
    rd->count_t = o->job_t_s;
}

static void on_line(void *ctx, const char *line)
{
    reader *rd = ctx;
    pfi_obs o;
    if (!pfi_parser_feed(rd->p, line, &o) || !rd->collect || rd->oom)
        return;
    if (o.restart) {
        /* A provisional format (a bare progress bar, DeepSpeed's timer line) gave way to
         * the job's own lines (parse.h): the points before were not the job's throughput. */
        rd->r->n = 0;
        rd->unit_set = 0;
        rd->have_count = 0;
    }
    if (!rd->unit_set) {
        rd->unit = o.unit;
        rd->unit_set = 1;
    } else if (o.unit != rd->unit) {
        rd->r->other_unit++;
        return;
    }
    if (o.kind == PFI_OBS_COUNT)
        on_count(rd, &o);
    else
        add_point(rd, o.step, o.value);
}

/* The log opened once for both passes: a regular file as it is; anything else (a pipe,
 * /dev/stdin, <(zcat ...), a FIFO) copied first into a temporary file, since what a stream
 * gave the first pass is gone for the second (it read as "no throughput ... 0 lines read",
 * and a FIFO waited for a second writer). */
static int open_log(const char *path, FILE **out, pfi_err *err)
{
    *out = NULL;
    int rc = pfi_input_not_dir(path, err);
    if (rc != PFI_OK)
        return rc;
    FILE *f = fopen(path, "rb");
    if (!f)
        return pfi_err_set(err, errno == ENOENT ? PFI_ENOENT : PFI_EIO, "cannot open %s: %s",
                           path, strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode)) {
        *out = f;
        return PFI_OK;
    }
    FILE *t = tmpfile();
    if (!t) {
        int e = errno;
        fclose(f);
        return pfi_err_set(err, PFI_EIO, "%s is not a regular file and no temporary file to "
                                         "read it twice from: %s",
                           path, strerror(e));
    }
    char buf[65536];
    size_t k;
    int bad = 0;
    while (!bad && (k = fread(buf, 1, sizeof buf, f)) > 0)
        bad = fwrite(buf, 1, k, t) != k;
    bad |= ferror(f) || fflush(t) != 0;
    fclose(f);
    if (bad) {
        fclose(t);
        return pfi_err_set(err, PFI_EIO, "error reading %s (or copying it to a temporary file)",
                           path);
    }
    *out = t;
    return PFI_OK;
}

static int read_pass(FILE *f, const char *path, reader *rd, pfi_err *err)
{
    rewind(f);
    pfi_linebuf *lb = calloc(1, sizeof *lb);
    if (!lb)
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    char buf[65536];
    size_t k;
    rd->lb = lb;
    while ((k = fread(buf, 1, sizeof buf, f)) > 0)
        pfi_linebuf_push(lb, buf, k, on_line, rd);
    /* A last line without its end is what a job still writing (block-buffered stdout) left
     * so far: " ... tps: 7,3" would read 7 for 7,3xx; it is left out, and said. */
    int cut = lb->len > 0 || lb->overflow;
    if (cut)
        rd->r->cut_last = 1;
    /* the file's lines read ('\r' redraws of a bar within them), as wc -l counts them */
    rd->r->lines = lb->nl;
    int bad = ferror(f);
    free(lb);
    if (bad)
        return pfi_err_set(err, PFI_EIO, "error reading %s", path);
    if (rd->oom)
        return pfi_err_set(err, PFI_ENOMEM, "out of memory for the throughput series");
    return PFI_OK;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The steady window (MSER truncation of the start, as a sweep's level), its median, mean and
 * 95% CI, on an axis where every line is one unit long. */
static int summarize(pfi_logread *r, pfi_err *err)
{
    pfi_meter m;
    pfi_meter_init(&m);
    m.s = malloc((size_t)r->n * sizeof *m.s);
    double *v = malloc((size_t)r->n * sizeof *v);
    if (!m.s || !v) {
        free(m.s);
        free(v);
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    }
    m.cap = r->n;
    for (int i = 0; i < r->n; i++)
        m.s[m.n++] = (pfi_rate_sample){i, i + 1, r->pts[i].rate};
    pfi_steady_cfg sc;
    pfi_steady_defaults(&sc);
    double win = 0;
    pfi_window_stats st;
    r->steady = pfi_steady_check(&m, &sc, r->n, &win, &st);
    r->win_first = (int)win;
    r->mean = st.mean;
    r->lo = st.lo;
    r->hi = st.hi;
    int k = 0;
    for (int i = r->win_first; i < r->n; i++)
        v[k++] = r->pts[i].rate;
    qsort(v, (size_t)k, sizeof *v, cmp_double);
    r->median = k % 2 ? v[k / 2] : 0.5 * (v[k / 2 - 1] + v[k / 2]);
    free(v);
    pfi_meter_free(&m);
    return PFI_OK;
}

/* gzip's magic bytes at the start: a compressed log reads as a few lines of binary noise,
 * which said only "no throughput ... 14 lines read". */
static int looks_gzip(FILE *f)
{
    unsigned char b[2];
    rewind(f);
    return fread(b, 1, 2, f) == 2 && b[0] == 0x1f && b[1] == 0x8b;
}

/* The error for a log that gave no point: what was read, and the ways on (a named format, a
 * regex for a format pfi does not know: nanotron, MaxText, torchtune, OLMo and JSON-lines
 * loggers all end here; a compressed file to decompress first). */
static int no_throughput(const char *path, const pfi_logread *out, const char *why, int gz,
                         pfi_err *err)
{
    char hint[512] = "";
    struct stat st;
    if (gz && stat(path, &st) == 0 && S_ISREG(st.st_mode))
        snprintf(hint, sizeof hint,
                 "; %s looks gzip-compressed (it starts with gzip's magic bytes): decompress it "
                 "first, e.g. zcat %s | pfi log /dev/stdin",
                 path, path);
    else if (gz)
        snprintf(hint, sizeof hint,
                 "; %s looks gzip-compressed (it starts with gzip's magic bytes): pipe it "
                 "through zcat first",
                 path);
    const char *ways = out->format == PFI_LOG_REGEX
                           ? "no line matched --throughput-regex with a number"
                           : "--log-format names one, --throughput-regex RE --unit U reads a "
                             "format pfi does not know";
    return pfi_err_set(err, PFI_EINVAL,
                       "no throughput in %s: %ld lines read, %ld progress lines without a "
                       "usable time, %ld warm-up (format %s; %s)%s%s%s",
                       path, out->lines, out->untimed, out->warmup,
                       pfi_log_format_name(out->format), ways, why ? ": " : "", why ? why : "",
                       hint);
}

static const char *unit_name(pfi_obs_unit u)
{
    return u == PFI_OU_TOKENS ? "tokens/s" : u == PFI_OU_SAMPLES ? "samples/s" : "steps/s";
}

int pfi_logread_file(const char *path, const pfi_logread_cfg *c, pfi_logread *out, pfi_err *err)
{
    memset(out, 0, sizeof *out);
    pfi_parse_cfg pc = c->parse;
    pc.offline = 1;
    reader first = {0}, second = {0};
    int rc = pfi_parser_new(&pc, &first.p, err);
    if (rc != PFI_OK)
        return rc;
    pfi_logread scratch = {0};
    first.r = &scratch;
    FILE *f;
    rc = open_log(path, &f, err);
    if (rc != PFI_OK) {
        pfi_parser_free(first.p);
        return rc;
    }
    int gz = looks_gzip(f);
    rc = read_pass(f, path, &first, err);
    if (rc == PFI_OK)
        rc = pfi_parser_new(&pc, &second.p, err);
    if (rc != PFI_OK) {
        pfi_parser_free(first.p);
        fclose(f);
        return rc;
    }
    pfi_parser_learn_from(second.p, first.p);
    pfi_parser_free(first.p);
    out->pts = malloc(16 * sizeof *out->pts);
    if (!out->pts) {
        pfi_parser_free(second.p);
        fclose(f);
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    }
    second.r = out;
    second.collect = 1;
    rc = read_pass(f, path, &second, err);
    fclose(f);
    out->format = pfi_parser_format(second.p);
    out->untimed += pfi_parser_untimed(second.p);
    out->warmup = pfi_parser_warmup(second.p);
    pfi_obs_unit su;
    out->summary_rate = pfi_parser_summary(second.p, &su);
    snprintf(out->summary_unit, sizeof out->summary_unit, "%s", unit_name(su));
    int per_gpu = pfi_parser_per_gpu(second.p);
    const char *why = pfi_parser_why_none(second.p);
    if (rc == PFI_OK && out->n == 0)
        rc = no_throughput(path, out, why, gz, err);
    pfi_parser_free(second.p);
    if (rc != PFI_OK) {
        pfi_logread_free(out);
        return rc;
    }
    snprintf(out->unit, sizeof out->unit, "%s", unit_name(second.unit));
    out->in_tokens = second.unit == PFI_OU_TOKENS;
    if (per_gpu && c->gpus > 0) {
        for (int i = 0; i < out->n; i++)
            out->pts[i].rate *= c->gpus;
    } else if (per_gpu) {
        snprintf(out->unit, sizeof out->unit, "tokens/s per GPU");
    }
    out->gpus_unused = !per_gpu && c->gpus > 0;
    rc = summarize(out, err);
    if (rc != PFI_OK)
        pfi_logread_free(out);
    return rc;
}

void pfi_logread_free(pfi_logread *r)
{
    free(r->pts);
    r->pts = NULL;
    r->n = 0;
}
