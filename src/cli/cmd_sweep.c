/* SPDX-License-Identifier: Apache-2.0 */
/* pfi sweep: characterize a training job under a sweep of GPU power limits (docs/sweep.md). */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "core/cost.h"
#include "hw/backend_sim.h"
#include "measure/measure.h"
#include "store/export.h"
#include "store/sink.h"
#include "store/store.h"
#include "util/json.h"
#include "util/num.h"
#include "util/units.h"

/* The signal that stops the sweep (pfi_cli_catch_stop_signals: SIGINT, SIGTERM, SIGUSR1, ...);
 * the sweep polls it, stops the job and restores the limits. */
static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
    stop_flag = sig;
}

typedef struct progress_ctx {
    int tty, quiet;
    int fixed_dwell; /* --dwell D: a level lasts D by design, never "not steady" */
    int n_gpus;
    double t0;          /* the first level's rate: the baseline (levels[0] is the default limit) */
    double gpu_s, lost; /* so far */
    double unit_scale;
    const char *unit;
    const pfi_tput_source *src; /* names the log format in the samples/s warning */
    int warned;
} progress_ctx;

static void fmt_time(double s, char *buf, size_t n)
{
    if (!isfinite(s) || s < 0)
        snprintf(buf, n, "?");
    else if (s < 60)
        snprintf(buf, n, "%.0fs", s);
    else if (s < 3600)
        snprintf(buf, n, "%dm%02ds", (int)(s / 60), (int)s % 60);
    else
        snprintf(buf, n, "%dh%02dm", (int)(s / 3600), (int)(s / 60) % 60);
}

static void on_progress(void *arg, const pfi_sweep_progress *p)
{
    progress_ctx *pc = arg;
    if (p->unit)
        pc->unit = p->unit;
    /* A log giving samples/s without the sequence length (Megatron prints it in its argument
     * block at start-up, long past when --attach joins) is measured in samples/s: say so once,
     * --quiet or not, since the run is recorded in that unit. */
    if (p->unit && strcmp(p->unit, "samples/s") == 0 && !pc->warned) {
        pc->warned = 1;
        const pfi_parser *ps = pc->src ? pc->src->parser : NULL;
        fprintf(stderr,
                "%spfi sweep: warning: the %s log gives samples/s and no sequence length: "
                "throughput is recorded in samples/s; for tokens/s pass --seq-len N (or "
                "--throughput-regex RE --unit tokens/s)\n",
                pc->tty && !pc->quiet ? "\r\033[K" : "",
                ps ? pfi_log_format_name(pfi_parser_format(ps)) : "job's");
    }
    if (pc->quiet)
        return;
    char ci[32] = "";
    if (isfinite(p->rel_ci))
        snprintf(ci, sizeof ci, " +-%.1f%%", 100 * p->rel_ci);
    if (p->done) {
        if (p->level == 0)
            pc->t0 = p->tput;
        pc->gpu_s += p->level_elapsed_s * pc->n_gpus;
        pc->lost += (pc->t0 - p->tput) * p->level_elapsed_s;
        fprintf(stderr,
                "%spfi sweep: level %d/%d %.0f W: %.1f %s%s, %.1f W per GPU%s; %.0f s, so far "
                "%.0f GPU-s and %.0f %.*s lost\n",
                pc->tty ? "\r\033[K" : "", p->level + 1, p->n_levels, p->cap_w, p->tput,
                pc->unit, ci, p->power_w,
                pc->fixed_dwell ? " (fixed dwell)" : p->steady ? "" : " (max dwell, not steady)",
                p->level_elapsed_s, pc->gpu_s, pc->lost, (int)strcspn(pc->unit, "/"), pc->unit);
        return;
    }
    if (!pc->tty)
        return;
    char el[16], rem[16];
    fmt_time(p->level_elapsed_s, el, sizeof el);
    fmt_time(p->remaining_s, rem, sizeof rem);
    fprintf(stderr, "\r\033[Kpfi sweep: level %d/%d %.0f W  %s in level, ~%s left", p->level + 1,
            p->n_levels, p->cap_w, el, rem);
    if (p->settling)
        fprintf(stderr, "  settling");
    else if (isfinite(p->tput))
        fprintf(stderr, "  %.0f %s%s", p->tput, pc->unit, ci);
    else
        fprintf(stderr, "  waiting for throughput");
    if (isfinite(p->power_w))
        fprintf(stderr, "  %.0f W/GPU", p->power_w);
    fflush(stderr);
}

/* A GPU enforcing another limit than its level asked (an out-of-band cap), said once per level:
 * the level ran at the lower limit, and a synchronous job at that GPU's pace. */
static void on_mismatch(void *arg, int level, int gpu, const char *msg)
{
    const progress_ctx *pc = arg;
    fprintf(stderr, "%spfi sweep: warning: level %d: GPU %d: %s\n",
            pc->tty && !pc->quiet ? "\r\033[K" : "", level + 1, gpu, msg);
}

/* Job metadata for the run (what prediction and the study group by): from --tag K=V with the
 * run model's names, else, when the job is the simulator's own, from the job on the swept
 * GPUs (a real program is never labelled with the simulated preset's model). */
static int job_meta(pfi_backend *b, int sim_job, const pfi_sweep_cfg *c,
                    const pfi_strlist *tags, pfi_job_meta *m, pfi_err *err)
{
    pfi_sim_node *node = sim_job ? pfi_backend_sim_node(b) : NULL;
    if (node) {
        const pfi_node_config *nc = pfi_sim_node_config(node);
        for (int j = 0; j < nc->n_jobs; j++)
            if (c->gpus[0] >= nc->jobs[j].first_gpu &&
                c->gpus[0] < nc->jobs[j].first_gpu + nc->jobs[j].n_gpus)
                pfi_sim_job_meta(&nc->jobs[j], m);
    }
    const struct {
        const char *key;
        int *dst;
    } ints[] = {{"moe", &m->moe}, {"finetune", &m->finetune}, {"lora", &m->lora},
                {"dp", &m->dp},   {"tp", &m->tp},             {"pp", &m->pp},
                {"ep", &m->ep},   {"seq_len", &m->seq_len},   {"global_batch", &m->global_batch}};
    for (int i = 0; i < tags->n; i++) {
        const char *t = tags->v[i], *eq = strchr(t, '=');
        if (!eq)
            continue;
        size_t k = (size_t)(eq - t);
        const char *v = eq + 1;
#define KEY(name) (k == strlen(name) && strncmp(t, name, k) == 0)
        if (KEY("model"))
            snprintf(m->model, sizeof m->model, "%s", v);
        else if (KEY("family"))
            snprintf(m->family, sizeof m->family, "%s", v);
        else if (KEY("params_b")) {
            char *end;
            m->params_b = strtod(v, &end);
            if (end == v || *end || !(m->params_b >= 0 && m->params_b <= 1e6))
                return pfi_err_set(err, PFI_EINVAL, "--tag %s: expected billions of parameters "
                                                    "from 0 to 1e6",
                                   t);
        }
        for (size_t q = 0; q < sizeof ints / sizeof ints[0]; q++)
            if (KEY(ints[q].key) && pfi_num_int(v, 0, INT_MAX, ints[q].key, ints[q].dst, err))
                return pfi_err_prefix(err, "--tag: ");
#undef KEY
    }
    return PFI_OK;
}

static char *join_argv(char **argv, int n)
{
    size_t len = 1;
    for (int i = 0; i < n; i++)
        len += strlen(argv[i]) + 3;
    char *s = malloc(len);
    if (!s)
        return NULL;
    s[0] = '\0';
    for (int i = 0; i < n; i++) {
        if (i)
            strcat(s, " ");
        strcat(s, argv[i]);
    }
    return s;
}

static json_t *level_json(const pfi_level *L, int steady)
{
    json_t *o = json_object();
    json_object_set_new(o, "cap_w", pfi_json_num(L->cap_w));
    json_object_set_new(o, "enforced_w", pfi_json_num(L->enforced_w));
    json_object_set_new(o, "enforced_min_w", pfi_json_num(L->enforced_min_w));
    json_object_set_new(o, "power_w", pfi_json_num(L->power_w));
    json_object_set_new(o, "tput", pfi_json_num(L->tput));
    json_object_set_new(o, "tput_lo", pfi_json_num(L->tput_lo));
    json_object_set_new(o, "tput_hi", pfi_json_num(L->tput_hi));
    json_object_set_new(o, "steady", json_boolean(steady));
    pfi_export_level_telemetry(o, L);
    return o;
}

typedef struct sweep_opts {
    pfi_cli_hw hw;
    const char *gpus, *levels, *caps, *dwell, *max_dwell, *settle, *timeout, *order, *db;
    const char *log, *format, *regex, *unit, *journal, *name, *min_window, *order_seed;
    const char *baseline;
    pfi_strlist tags;
    int restart, attach, as_json, quiet, no_log;
    double seq_len, tokens_per_step, batch_size, rel_ci, speed;
} sweep_opts;

static int parse_duration_opt(const char *s, double *out, pfi_err *err)
{
    return s ? pfi_parse_duration(s, out, err) : PFI_OK;
}

/* How the job's log is read: format, regex and its unit, tokens per sample or step. */
static int build_parse_cfg(const sweep_opts *o, pfi_parse_cfg *pc, pfi_err *err)
{
    int rc;
    memset(pc, 0, sizeof *pc);
    if (o->format && (rc = pfi_log_format_parse(o->format, &pc->format, err)) != PFI_OK)
        return rc;
    pc->regex = o->regex;
    if (o->regex) {
        if (!o->unit)
            return pfi_err_set(err, PFI_EINVAL,
                               "--throughput-regex needs --unit (tokens/s, samples/s, it/s, s/it, "
                               "ms/it, tokens or samples)");
        if ((rc = pfi_regex_unit_parse(o->unit, &pc->regex_unit, err)) != PFI_OK)
            return rc;
    } else if (o->unit) {
        return pfi_err_set(err, PFI_EINVAL, "--unit goes with --throughput-regex");
    }
    pc->seq_len = isnan(o->seq_len) ? 0 : o->seq_len;
    pc->tokens_per_step = isnan(o->tokens_per_step) ? 0 : o->tokens_per_step;
    pc->samples_per_step = isnan(o->batch_size) ? 0 : o->batch_size;
    return PFI_OK;
}

/* --order and its seed. */
static int build_order(const sweep_opts *o, pfi_sweep_cfg *c, pfi_err *err)
{
    if (!o->order || strcmp(o->order, "descending") == 0)
        c->order = PFI_ORDER_DESCENDING;
    else if (strcmp(o->order, "ascending") == 0)
        c->order = PFI_ORDER_ASCENDING;
    else if (strcmp(o->order, "random") == 0)
        c->order = PFI_ORDER_RANDOM;
    else
        return pfi_err_set(err, PFI_EINVAL,
                           "unknown --order '%s' (descending, ascending or random)", o->order);
    /* --seed elsewhere seeds the simulator's draws (a fleet, a node's chips); here the one draw
     * is the order of the levels, so the option says so and is refused where it would do
     * nothing (a sweep on a simulated node taking it for the node's seed). */
    if (o->order_seed) {
        if (c->order != PFI_ORDER_RANDOM)
            return pfi_err_set(err, PFI_EINVAL,
                               "--order-seed goes with --order random: it seeds the shuffle of "
                               "the levels, nothing else (a simulated node's own seed is \"seed\" "
                               "in its --sim config)");
        char *end;
        errno = 0;
        unsigned long long v = strtoull(o->order_seed, &end, 10);
        if (!isdigit((unsigned char)o->order_seed[0]) || *end || errno || v > UINT_MAX)
            return pfi_err_set(err, PFI_EINVAL,
                               "--order-seed expects a whole number from 0 to %u, got '%s'",
                               UINT_MAX, o->order_seed);
        c->seed = (unsigned)v;
    }
    return PFI_OK;
}

/* The longest a level, or a wait for the job's next line, may last.  A level's telemetry stays
 * in memory until the level ends (sampler.c: a pfi_sample of 176 bytes per GPU every 100 ms,
 * 1.2 GB a day on 8 GPUs and up to twice that while its buffer doubles); a job silent for a day
 * is not running, and its GPUs would stay capped all that time. */
#define SPAN_MAX_S (24 * 3600.0)

/* A duration for a message: as given, else the default's value. */
static const char *span_text(const char *given, double v, char *buf, size_t n)
{
    if (given)
        return given;
    snprintf(buf, n, "%gs (the default)", v);
    return buf;
}

/* --dwell, --max-dwell, --settle, --min-window and --timeout into *c: each in its range, and
 * together giving a level that can be measured. */
static int build_spans(const sweep_opts *o, pfi_sweep_cfg *c, pfi_err *err)
{
    int rc;
    int fixed = o->dwell && strcmp(o->dwell, "auto") != 0;
    if ((fixed && (rc = pfi_parse_duration(o->dwell, &c->dwell_s, err)) != PFI_OK) ||
        (rc = parse_duration_opt(o->max_dwell, &c->max_dwell_s, err)) != PFI_OK ||
        (rc = parse_duration_opt(o->settle, &c->steady.settle_s, err)) != PFI_OK ||
        (rc = parse_duration_opt(o->min_window, &c->steady.min_window_s, err)) != PFI_OK ||
        (rc = parse_duration_opt(o->timeout, &c->timeout_s, err)) != PFI_OK)
        return rc;
    /* 0 s would end every level, or the sweep, before a line of the job could be read; no
     * settling (--settle 0) keeps everything after a change. */
    const struct {
        const char *name, *given;
        double v;
        int zero_ok;
    } spans[] = {{"dwell", fixed ? o->dwell : NULL, c->dwell_s, 0},
                 {"max-dwell", o->max_dwell, c->max_dwell_s, 0},
                 {"settle", o->settle, c->steady.settle_s, 1},
                 {"min-window", o->min_window, c->steady.min_window_s, 0},
                 {"timeout", o->timeout, c->timeout_s, 0}};
    for (size_t i = 0; i < sizeof spans / sizeof spans[0]; i++) {
        if (!spans[i].given)
            continue;
        if (!(spans[i].v > 0) && !(spans[i].zero_ok && spans[i].v == 0))
            return pfi_err_set(err, PFI_ERANGE, "--%s %s must be longer than 0 s", spans[i].name,
                               spans[i].given);
        if (spans[i].v > SPAN_MAX_S)
            return pfi_err_set(err, PFI_ERANGE,
                               "--%s %s is longer than 24 h, the most a level, or a wait for "
                               "the job's output, may last",
                               spans[i].name, spans[i].given);
    }
    char sb[48], wb[48], mb[48];
    const char *settle = span_text(o->settle, c->steady.settle_s, sb, sizeof sb);
    if (fixed && c->steady.settle_s + c->dwell_s > SPAN_MAX_S)
        return pfi_err_set(err, PFI_ERANGE,
                           "--settle %s plus --dwell %s is longer than 24 h, the most a level "
                           "may last",
                           settle, o->dwell);
    /* --dwell auto calls a level steady over --min-window that begins --settle after the
     * change at the earliest: a --max-dwell shorter than both cuts every level before it could
     * be steady (and one shorter than --settle before it measured anything). */
    if (!fixed && c->steady.settle_s + c->steady.min_window_s > c->max_dwell_s)
        return pfi_err_set(
            err, PFI_ERANGE,
            "--max-dwell %s is shorter than --settle %s plus --min-window %s: no level could "
            "be steady before it",
            span_text(o->max_dwell, c->max_dwell_s, mb, sizeof mb), settle,
            span_text(o->min_window, c->steady.min_window_s, wb, sizeof wb));
    return PFI_OK;
}

/* What the options can get wrong against the devices (what they can alone, check_given and
 * build_spans have refused), checked before any GPU is touched. */
static int build_cfg(const sweep_opts *o, pfi_backend *b, pfi_sweep_cfg *c, pfi_parse_cfg *pc,
                     pfi_sweep_plan_note *note, pfi_err *err)
{
    int rc;
    int ngpu = 0;
    if (pfi_backend_read_only(b))
        return pfi_err_set(err, PFI_EPERM,
                           "a sweep changes power limits: it cannot run read-only (--read-only "
                           "or PFI_READ_ONLY)");
    if ((rc = pfi_hw_count(b, &ngpu, err)) != PFI_OK)
        return rc;
    if ((rc = pfi_parse_index_list(o->gpus ? o->gpus : "all", ngpu, c->gpus, &c->n_gpus, err)) !=
        PFI_OK)
        return rc;
    if (c->n_gpus == 0)
        return pfi_err_set(err, PFI_EINVAL, "no GPUs selected");
    for (int i = 0; i < c->n_gpus; i++)
        if (c->gpus[i] < 0 || c->gpus[i] >= ngpu)
            return pfi_err_set(err, PFI_ERANGE, "no GPU %d (this node has %d)", c->gpus[i], ngpu);
    if (o->caps) {
        if ((rc = pfi_parse_cap_range(o->caps, c->levels, PFI_MAX_LEVELS - 1, &c->n_levels,
                                      err)) != PFI_OK)
            return rc;
        c->levels_frac = 0;
    } else {
        const char *lv = o->levels ? o->levels : "100,90,80,70,60,50%";
        if ((rc = pfi_parse_double_list(lv, c->levels, PFI_MAX_LEVELS - 1, &c->n_levels, err)) !=
            PFI_OK)
            return rc;
        for (int i = 0; i < c->n_levels; i++)
            if (!(c->levels[i] > 0 && c->levels[i] <= 1))
                return pfi_err_set(err, PFI_ERANGE,
                                   "level %g is not a fraction of the maximum limit in (0, 1] "
                                   "(write 100,80,60%% or 1,0.8,0.6)",
                                   c->levels[i]);
        c->levels_frac = 1;
    }
    if (!isnan(o->rel_ci))
        c->steady.rel_ci = o->rel_ci;
    if ((rc = build_order(o, c, err)) != PFI_OK)
        return rc;
    c->restart = o->restart;
    c->baseline_current = o->baseline && strcmp(o->baseline, "current") == 0;
    if ((rc = build_parse_cfg(o, pc, err)) != PFI_OK)
        return rc;
    /* The sweep's plan validates the caps against the devices now, before any change. */
    double (*plan)[PFI_MAX_GPUS] = malloc(sizeof(double[PFI_MAX_LEVELS][PFI_MAX_GPUS]));
    if (!plan)
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    int nl;
    rc = pfi_sweep_plan(b, c, plan, &nl, note, err);
    free(plan);
    return rc;
}

/* "GPU 3" or "GPUs 0-3,5" (gpus ascending). */
static void gpu_list(const int *gpus, int n, char *buf, size_t size)
{
    size_t at = (size_t)snprintf(buf, size, "GPU%s ", n > 1 ? "s" : "");
    for (int i = 0; i < n && at < size; i++) {
        int j = i;
        while (j + 1 < n && gpus[j + 1] == gpus[j] + 1)
            j++;
        at += (size_t)snprintf(buf + at, size - at, "%s%d", i ? "," : "", gpus[i]);
        if (j > i && at < size)
            at += (size_t)snprintf(buf + at, size - at, "-%d", gpus[j]);
        i = j;
    }
}

/* Said before the job starts: GPUs the baseline raises above the limits in force (an operator's
 * or a site's cap, exceeded for the whole level without a word before), and with --baseline
 * current the levels left out for being above them. */
static void say_plan(const pfi_sweep_plan_note *n, int frac)
{
    if (n->n_raised > 0) {
        /* One clause per (from, to) pair: "GPUs 0-2,4-7 from 500 W to 700 W, GPU 3 from ..." */
        char what[768] = "", more[64] = "";
        size_t at = 0;
        int done[PFI_MAX_GPUS] = {0};
        for (int i = 0; i < n->n_raised && at < sizeof what; i++) {
            if (done[i])
                continue;
            int g[PFI_MAX_GPUS], ng = 0;
            for (int j = i; j < n->n_raised; j++)
                if (n->raised_from_w[j] == n->raised_from_w[i] &&
                    n->raised_to_w[j] == n->raised_to_w[i]) {
                    g[ng++] = n->raised_gpu[j];
                    done[j] = 1;
                }
            char who[320];
            gpu_list(g, ng, who, sizeof who);
            at += (size_t)snprintf(what + at, sizeof what - at, "%s%s from %.7g W to %.7g W",
                                   at ? ", " : "", who, n->raised_from_w[i], n->raised_to_w[i]);
        }
        if (n->n_above > 0)
            snprintf(more, sizeof more, ", and %d later level%s above them too", n->n_above,
                     n->n_above == 1 ? " is" : "s are");
        fprintf(stderr,
                "pfi sweep: warning: the baseline level (the default limit) raises %s, above the "
                "limits in force%s; they are put back at the end, and --baseline current keeps "
                "the sweep at or below them\n",
                what, more);
    }
    if (n->n_dropped > 0) {
        char lv[256];
        size_t at = 0;
        for (int i = 0; i < n->n_dropped && at < sizeof lv; i++)
            at += (size_t)snprintf(lv + at, sizeof lv - at, frac ? "%s%g%%" : "%s%g W",
                                   i ? ", " : "", frac ? 100 * n->dropped[i] : n->dropped[i]);
        fprintf(stderr,
                "pfi sweep: --baseline current: %d level%s above the limits in force left out: "
                "%s\n",
                n->n_dropped, n->n_dropped == 1 ? "" : "s", lv);
    }
}

/* A simulated job launched by the sweep must share the node: give both one state file (its
 * path in state_path, removed at the end).  1 when the backend is the simulator. */
static int sim_env(const sweep_opts *o, char *state_path, size_t n)
{
    int is_sim = strcmp(pfi_cli_backend_name(&o->hw), "sim") == 0;
    if (is_sim && !o->attach && !getenv("PFI_SIM_STATE")) {
        const char *tmp = getenv("TMPDIR");
        snprintf(state_path, n, "%s/pfi-sim-%ld-%ld.state", tmp && *tmp ? tmp : "/tmp",
                 (long)getpid(), (long)time(NULL));
        setenv("PFI_SIM_STATE", state_path, 1);
    }
    if (is_sim && o->speed > 0) { /* NAN (not given) is not > 0 */
        char sp[32];
        snprintf(sp, sizeof sp, "%g", o->speed);
        setenv("PFI_SIM_SPEED", sp, 1);
    }
    return is_sim;
}

/* The store, and the job row in it: its command (or followed log), the sweep's settings and
 * the tags. */
static int open_sink(const sweep_opts *o, const char *db, const char *cmdline,
                     const char *backend, pfi_store_sink **sink, pfi_err *err)
{
    json_t *conf = json_pack("{s:s, s:s, s:s, s:s}", "levels", o->levels ? o->levels : "",
                             "caps", o->caps ? o->caps : "", "dwell", o->dwell ? o->dwell : "auto",
                             "baseline", o->baseline ? o->baseline : "default");
    char *conf_text = json_dumps(conf, JSON_COMPACT);
    json_decref(conf);
    if (!conf_text)
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    int rc = pfi_store_sink_open(db, cmdline ? cmdline : o->log, conf_text,
                                 o->tags.v, o->tags.n, backend, sink, err);
    free(conf_text);
    return rc;
}

/* Whether program (argv[0], found on PATH when it has no '/') is this pfi binary, whatever it
 * is called (a symlink pfi-dev, a hard link): the same file as /proc/self/exe. */
static int is_this_pfi(const char *program)
{
    struct stat self, st;
    if (stat("/proc/self/exe", &self) != 0)
        return 0;
    if (strchr(program, '/'))
        return stat(program, &st) == 0 && st.st_dev == self.st_dev && st.st_ino == self.st_ino;
    const char *path = getenv("PATH");
    for (const char *p = path; p && *p;) {
        size_t len = strcspn(p, ":");
        char cand[PATH_MAX];
        if ((size_t)snprintf(cand, sizeof cand, "%.*s/%s", (int)len, len ? p : ".", program) <
                sizeof cand &&
            stat(cand, &st) == 0 && access(cand, X_OK) == 0)
            return st.st_dev == self.st_dev && st.st_ino == self.st_ino; /* the first found */
        p += len + (p[len] == ':');
    }
    return 0;
}

/* 1 when the command is one of the simulator's jobs (`pfi sim job ...`, or its former name
 * `pfi simjob ...`), run by a program named pfi or by this very binary under another name. */
static int is_simjob(char **argv, int n)
{
    if (n < 2)
        return 0;
    const char *base = strrchr(argv[0], '/');
    base = base ? base + 1 : argv[0];
    int sub = strcmp(argv[1], "simjob") == 0 ||
              (n >= 3 && strcmp(argv[1], "sim") == 0 && strcmp(argv[2], "job") == 0);
    return sub && (strcmp(base, "pfi") == 0 || is_this_pfi(argv[0]));
}

/* What the run records as its backend.  Simulated GPUs under a real program measure real
 * tokens/s against simulated power: the run says so and a warning is printed.  A followed log
 * may be a simulated job's or not: its run is marked by the backend alone. */
static void backend_label(pfi_backend *b, const sweep_opts *o, int sim_job, char *out,
                          size_t n)
{
    if (!pfi_hw_simulated(b) || sim_job || o->attach) {
        snprintf(out, n, "%s", pfi_hw_label(b));
        return;
    }
    snprintf(out, n, "%s (simulated GPUs, real program)", pfi_hw_label(b));
    fprintf(stderr,
            "pfi sweep: warning: the GPUs are simulated (backend %s) but the command is not a "
            "simulated job (pfi sim job): its tokens/s are real while power, caps and telemetry "
            "are not; the run is stored with backend '%s'\n",
            pfi_hw_label(b), out);
}


/* The cost of the levels measured: per level (duration_s, gpu_s, lost) and as a whole ("cost";
 * null when no level has a baseline rate to be charged against). */
static void add_cost_json(json_t *doc, const pfi_sweep_result *res)
{
    pfi_cost c;
    int ok = res->run.n_levels > 0 && pfi_cost_run(&res->run, res->level_s, &c, NULL) == PFI_OK;
    json_t *lv = json_object_get(doc, "levels");
    for (int i = 0; i < res->run.n_levels; i++) {
        json_t *o = json_array_get(lv, (size_t)i);
        json_object_set_new(o, "duration_s", pfi_json_num(res->level_s[i]));
        json_object_set_new(o, "gpu_s", pfi_json_num(ok ? c.gpu_s[i] : NAN));
        json_object_set_new(o, "lost", pfi_json_num(ok ? c.lost[i] : NAN));
    }
    json_object_set_new(doc, "cost",
                        ok ? pfi_cli_cost_json(&c, pfi_cli_work_unit(res->run.unit))
                           : json_null());
}

/* The levels measured, as a table or one JSON document (with the error when the sweep failed:
 * err non-NULL).  The exit status of the printing. */
static int print_result(const sweep_opts *o, const pfi_sweep_result *res, const char *backend,
                        int simulated, long long run_id, const char *db, const pfi_err *err)
{
    const char *unit = res->run.unit == PFI_SAMPLES_PER_S ? "samples/s" : "tokens/s";
    /* A GPU whose readings failed is left out of its levels' means: said, in both outputs
     * (the sweep said "done" and nothing else). */
    if (res->telemetry_errors > 0)
        fprintf(stderr, "pfi sweep: warning: %ld telemetry readings failed (the last: %s); the "
                        "levels' power, clocks and utilization are means over the GPUs that "
                        "answered\n",
                res->telemetry_errors, res->telemetry_error[0] ? res->telemetry_error : "?");
    if (o->as_json) {
        json_t *lv = json_array();
        for (int i = 0; i < res->run.n_levels; i++)
            json_array_append_new(lv, level_json(&res->run.levels[i], res->steady[i]));
        json_t *doc = json_pack("{s:s, s:s, s:s, s:I, s:s, s:i, s:s, s:b, s:s, s:I, s:I, s:o}",
                                "status", res->status, "name", res->run.name, "backend", backend,
                                "run_id", (json_int_t)run_id, "gpu_type", res->run.gpu_type,
                                "n_gpus", res->run.n_gpus, "unit", unit, "restored",
                                res->restored, "log_format", res->format, "lines",
                                (json_int_t)res->lines, "observations",
                                (json_int_t)res->observations, "levels", lv);
        json_object_set_new(doc, "simulated", json_boolean(simulated));
        json_object_set_new(doc, "telemetry_errors", json_integer(res->telemetry_errors));
        json_object_set_new(doc, "telemetry_error", res->telemetry_error[0]
                                                        ? pfi_json_text(res->telemetry_error)
                                                        : json_null());
        add_cost_json(doc, res);
        if (err)
            json_object_set_new(doc, "error", json_string(err->msg));
        return pfi_cli_print_json(doc);
    }
    /* A sweep that failed before its first level has no table to print: the error on stderr
     * is all there is (an empty header and "simulated GPUs" were printed under it). */
    if (res->run.n_levels == 0)
        return PFI_EXIT_OK;
    printf("%-5s %8s %8s %8s %12s %12s %12s %6s %7s\n", "level", "cap_W", "enforced", "power_W",
           unit, "ci_lo", "ci_hi", "steady", "clk_MHz");
    for (int i = 0; i < res->run.n_levels; i++) {
        const pfi_level *L = &res->run.levels[i];
        printf("%-5d %8.0f %8.0f %8.1f %12.1f %12.1f %12.1f %6s %7.0f\n", i, L->cap_w,
               L->enforced_w, L->power_w, L->tput, L->tput_lo, L->tput_hi,
               res->steady[i] ? "yes" : "no", L->sm_clock_mhz);
    }
    pfi_cost cost;
    if (res->run.n_levels > 0 && pfi_cost_run(&res->run, res->level_s, &cost, NULL) == PFI_OK)
        pfi_cli_cost_line(stdout, &cost, pfi_cli_work_unit(res->run.unit));
    if (run_id > 0)
        printf("run %lld in %s (%s)\n", run_id, db, res->status);
    if (simulated)
        printf("simulated GPUs (backend %s)\n", backend);
    return PFI_EXIT_OK;
}

/* The job's output: launched with its log copied to a file (named in logname when it is the
 * default one), or followed in its log (--attach). */
static int start_source(sweep_opts *o, char **pos, const pfi_parse_cfg *pc, char *logname,
                        size_t n, pfi_tput_source **src, pfi_err *err)
{
    if (!o->attach && !o->log && !o->no_log) {
        time_t now = time(NULL);
        struct tm tm;
        localtime_r(&now, &tm);
        strftime(logname, n, "pfi-sweep-%Y%m%d-%H%M%S.log", &tm);
        o->log = logname;
        if (!o->quiet)
            fprintf(stderr, "pfi sweep: the job's output is also in %s\n", o->log);
    }
    if (o->no_log && !o->attach)
        o->log = NULL;
    if (o->attach)
        return pfi_source_follow(o->log, pc, src, err);
    return pfi_source_launch(pos, o->log, o->as_json ? STDERR_FILENO : STDOUT_FILENO, pc, src,
                             err);
}

/* Options that act only under another, or that another overrides, given together: refused,
 * both named (as git and curl do), rather than one of them ignored in silence.  -1 to go on,
 * else the exit status. */
static int check_pairs(const sweep_opts *o)
{
    int fixed = o->dwell && strcmp(o->dwell, "auto") != 0;
    /* What the regex reads (parse_regex.c): tokens need nothing more, samples only --seq-len;
     * steps (it/s, s/it, ms/it) any of the three. */
    const char *u = o->regex ? o->unit : NULL;
    int tokens = u && (strcmp(u, "tokens/s") == 0 || strcmp(u, "tokens") == 0);
    int samples = u && (strcmp(u, "samples/s") == 0 || strcmp(u, "samples") == 0);
    int named = o->format && strcmp(o->format, "auto") != 0 && strcmp(o->format, "regex") != 0;
    const char *dw = "only --dwell auto waits for a steady level; a fixed --dwell measures "
                     "exactly that long";
    const char *tk = "the regex reads tokens already";
    const char *sm = "the regex reads samples, not steps (--seq-len turns samples into tokens)";
    const struct {
        int both;
        const char *a, *b, *bv, *why;
    } pairs[] = {
        {fixed && o->max_dwell, "--max-dwell", "--dwell", o->dwell, dw},
        {fixed && o->min_window, "--min-window", "--dwell", o->dwell, dw},
        {fixed && !isnan(o->rel_ci), "--rel-ci", "--dwell", o->dwell, dw},
        {o->levels && o->caps, "--levels", "--caps", NULL,
         "both are the levels (fractions of the maximum limit, or watts)"},
        {o->restart && o->attach, "--restart", "--attach", NULL,
         "the sweep cannot relaunch a job it did not start"},
        {o->no_log && o->log, "--no-log", "--log", o->log,
         "--no-log drops the copy of the job's output that --log names"},
        {o->regex && named, "--throughput-regex", "--log-format", o->format,
         "the regex reads every line, whatever the format"},
        {tokens && !isnan(o->seq_len), "--seq-len", "--unit", u, tk},
        {tokens && !isnan(o->tokens_per_step), "--tokens-per-step", "--unit", u, tk},
        {tokens && !isnan(o->batch_size), "--batch-size", "--unit", u, tk},
        {samples && !isnan(o->tokens_per_step), "--tokens-per-step", "--unit", u, sm},
        {samples && !isnan(o->batch_size), "--batch-size", "--unit", u, sm},
        {!isnan(o->tokens_per_step) && !isnan(o->batch_size), "--batch-size",
         "--tokens-per-step", NULL,
         "a step's tokens are given; the batch size (times --seq-len) is only a way to them"},
    };
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++)
        if (pairs[i].both) {
            fprintf(stderr, "pfi sweep: %s and %s%s%s cannot be used together: %s\n", pairs[i].a,
                    pairs[i].b, pairs[i].bv ? " " : "", pairs[i].bv ? pairs[i].bv : "",
                    pairs[i].why);
            return PFI_EXIT_USAGE;
        }
    return -1;
}

/* The numbers among the options, each in its range (NAN: not given).  -1 to go on, else the
 * exit status. */
static int check_numbers(const sweep_opts *o)
{
    const struct {
        const char *name;
        double v, lo, hi;
        int lo_open;
        const char *what;
    } nums[] = {
        /* A level is steady when the CI's half-width is at most rel-ci of the mean (steady.c).
         * Only a zero-width interval (a noise-free simulator) meets 0.  Past 0.5 the interval
         * may run from half the mean to 1.5 times it, wider than all a sweep measures (700 W
         * to 350 W is 26% on the simulated H200 of docs/sweep.md): every level would be
         * "steady" as soon as its shortest window is filled, on figures that cannot tell it
         * from the next; from 1 up the interval reaches below 0. */
        {"rel-ci", o->rel_ci, 0, 0.5, 1, "a CI half-width over the mean in"},
        /* A sample holds a token at least, a step a sample.  seq-len and batch-size up to what
         * --tag seq_len= and global_batch= take (ints in the run's metadata); a step's tokens
         * up to 2^53, past which a double no longer counts every token. */
        {"seq-len", o->seq_len, 1, INT_MAX, 0, "tokens per sample in"},
        {"tokens-per-step", o->tokens_per_step, 1, 9007199254740992.0, 0, "tokens per step in"},
        {"batch-size", o->batch_size, 1, INT_MAX, 0, "samples per step in"},
    };
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) {
        double v = nums[i].v;
        int whole = i != 1 && i != 3; /* seq-len and batch-size count tokens, samples */
        if (isnan(v) || ((nums[i].lo_open ? v > nums[i].lo : v >= nums[i].lo) &&
                         v <= nums[i].hi && (whole || v == floor(v))))
            continue;
        if (!(v == floor(v)) && v >= nums[i].lo && v <= nums[i].hi) {
            fprintf(stderr, "pfi sweep: --%s %g is not a whole number (%s [%.16g, %.16g])\n",
                    nums[i].name, v, nums[i].what, nums[i].lo, nums[i].hi);
            return PFI_EXIT_USAGE;
        }
        fprintf(stderr, "pfi sweep: --%s %g is out of range: %s %c%.16g, %.16g]\n", nums[i].name,
                v, nums[i].what, nums[i].lo_open ? '(' : '[', nums[i].lo, nums[i].hi);
        return PFI_EXIT_USAGE;
    }
    return -1;
}

/* What can be refused from the options alone: -1 to go on, else the exit status. */
static int check_given(const sweep_opts *o)
{
    /* Said here, by its name, rather than taken silently (another backend has no simulated
     * time) or refused later as the environment variable it is handed on as. */
    if (!isnan(o->speed) && strcmp(pfi_cli_backend_name(&o->hw), "sim") != 0) {
        fprintf(stderr, "pfi sweep: --speed goes with --backend sim (it speeds up simulated "
                        "time; the backend is %s)\n", pfi_cli_backend_name(&o->hw));
        return PFI_EXIT_USAGE;
    }
    if (!isnan(o->speed) && !(o->speed > 0 && o->speed <= PFI_SIM_SPEED_MAX)) {
        fprintf(stderr, "pfi sweep: --speed %g is not a speed-up in (0, %g]\n", o->speed,
                PFI_SIM_SPEED_MAX);
        return PFI_EXIT_USAGE;
    }
    if (o->baseline && strcmp(o->baseline, "default") != 0 && strcmp(o->baseline, "current") != 0) {
        fprintf(stderr, "pfi sweep: unknown --baseline '%s' (default or current)\n", o->baseline);
        return PFI_EXIT_USAGE;
    }
    int rc = check_pairs(o);
    return rc >= 0 ? rc : check_numbers(o);
}

/* What the COMMAND (or --attach) and the options given allow: -1 to go on, else the exit
 * status (said why). */
static int check_command(const sweep_opts *o, char **pos, int npos)
{
    int rc;
    if (o->attach && npos > 0) {
        fprintf(stderr, "pfi sweep: --attach follows --log; it takes no COMMAND\n");
        return PFI_EXIT_USAGE;
    }
    if (!o->attach && npos == 0) {
        fprintf(stderr, "pfi sweep: no COMMAND (write it after --), or --attach --log FILE\n");
        return PFI_EXIT_USAGE;
    }
    if (o->attach && !o->log) {
        fprintf(stderr, "pfi sweep: --attach needs --log FILE (the running job's log)\n");
        return PFI_EXIT_USAGE;
    }
    if ((rc = check_given(o)) >= 0)
        return rc;
    /* A real program's lines are timed on the simulator's clock: at --speed 20 its tokens/s
     * read 20 times too small (the warning that they "are real" came with them). */
    if (!o->attach && o->speed != 1 && o->speed > 0 && !is_simjob(pos, npos)) {
        fprintf(stderr, "pfi sweep: --speed %g with a real program: its lines are timed on the "
                        "simulator's clock, %g times faster than its own, and its tokens/s would "
                        "read %g times too small; sweep a real program at --speed 1 (the "
                        "default), or a simulated job (pfi sim job)\n",
                o->speed, o->speed, o->speed);
        return PFI_EXIT_USAGE;
    }
    return -1;
}

/* The options into *o and the COMMAND after them into pos[0..npos) (pos[npos] NULL): -1 to go
 * on, else the exit status. */
static int parse_args(int argc, char **argv, sweep_opts *o, char ***pos, int *npos)
{
    /* NAN: not given (the default applies); any number given must be positive. */
    o->rel_ci = o->seq_len = o->tokens_per_step = o->batch_size = o->speed = NAN;
    const pfi_opt opts[] = {
        PFI_CLI_HW_OPTS(o->hw),
        {"gpus", PFI_OPT_STR, &o->gpus, "LIST", "GPUs of the job, e.g. 0-7 (default: all)"},
        {"levels", PFI_OPT_STR, &o->levels, "LIST", "fractions of the max limit (100,90,...,50%)"},
        {"caps", PFI_OPT_STR, &o->caps, "FROM:TO:STEP", "caps in watts instead, e.g. 700:300:50"},
        {"dwell", PFI_OPT_STR, &o->dwell, "auto|DUR",
         "per level: until steady (auto) or fixed; --settle + --dwell at most 24h"},
        {"max-dwell", PFI_OPT_STR, &o->max_dwell, "DUR",
         "with --dwell auto: longest wait per level (120s), from --settle + --min-window to 24h"},
        {"settle", PFI_OPT_STR, &o->settle, "DUR",
         "transient discarded after a change (3s), 0 to 24h"},
        {"min-window", PFI_OPT_STR, &o->min_window, "DUR",
         "with --dwell auto: shortest steady window (5s)"},
        {"rel-ci", PFI_OPT_DOUBLE, &o->rel_ci, "X",
         "with --dwell auto: steady when CI half-width/mean <= X, in (0, 0.5] (0.01)"},
        {"timeout", PFI_OPT_STR, &o->timeout, "DUR",
         "fail after this long without throughput (300s), up to 24h"},
        {"order", PFI_OPT_STR, &o->order, "ORDER", "descending (default), ascending or random"},
        {"baseline", PFI_OPT_STR, &o->baseline, "WHICH",
         "the first level: default, each GPU's default limit (a GPU held below it is raised to "
         "it, with a warning), or current, the limits in force and no level above them"},
        {"order-seed", PFI_OPT_STR, &o->order_seed, "N",
         "with --order random: the seed of its shuffle of the levels (default: the same order "
         "every time); not the simulator's seed"},
        PFI_OPT_ALIAS("seed", PFI_OPT_STR, &o->order_seed, "order-seed"),
        {"db", PFI_OPT_STR, &o->db, "FILE", "SQLite store (default $PFI_DB, else pfi.db)"},
        {"tag", PFI_OPT_MULTI, &o->tags, "K=V", "a tag for the job (repeatable); model=, family=, "
                                               "params_b=, dp=, tp=, pp=, seq_len=... also fill "
                                               "the run's metadata"},
        {"name", PFI_OPT_STR, &o->name, "NAME", "run name (default: the command)"},
        {"restart", PFI_OPT_FLAG, &o->restart, NULL, "relaunch the job for every level"},
        {"attach", PFI_OPT_FLAG, &o->attach, NULL, "characterize a running job: follow --log"},
        {"log", PFI_OPT_STR, &o->log, "FILE", "job log: appended to (default "
                                             "pfi-sweep-DATE.log) or followed (--attach)"},
        {"no-log", PFI_OPT_FLAG, &o->no_log, NULL,
         "do not copy the job's output to a file (not with --log)"},
        {"log-format", PFI_OPT_STR, &o->format, "NAME", "log format (auto, pfi, megatron, torchtitan, "
                                                   "hf, deepspeed, nanogpt, llmc, lightning, composer, automodel)"},
        PFI_OPT_ALIAS("format", PFI_OPT_STR, &o->format, "log-format"),
        {"throughput-regex", PFI_OPT_STR, &o->regex, "RE",
         "ERE whose first group is the number (instead of --log-format; a k, M, G, B or T "
         "right after it, in the group or past it, scales it: 22.8K is 22800)"},
        {"unit", PFI_OPT_STR, &o->unit, "UNIT", "of the regex: tokens/s, samples/s, it/s, s/it, "
                                               "ms/it, tokens, samples"},
        {"seq-len", PFI_OPT_DOUBLE, &o->seq_len, "N",
         "tokens per sample, 1 to 2^31-1 (not with --unit tokens/s or tokens)"},
        {"tokens-per-step", PFI_OPT_DOUBLE, &o->tokens_per_step, "N",
         "tokens per iteration, 1 to 2^53 (not with a --unit of tokens or samples)"},
        {"batch-size", PFI_OPT_DOUBLE, &o->batch_size, "N",
         "global batch size (samples/step), 1 to 2^31-1 (not with --tokens-per-step, nor a "
         "--unit of tokens or samples)"},
        {"journal", PFI_OPT_STR, &o->journal, "FILE",
         "where original limits are journaled (default as pfi restore)"},
        {"speed", PFI_OPT_DOUBLE, &o->speed, "X",
         "with --backend sim: speed-up of simulated time, up to 1e6 (fast mode)"},
        {"json", PFI_OPT_FLAG, &o->as_json, NULL, "a JSON summary on stdout at the end"},
        {"quiet", PFI_OPT_FLAG, &o->quiet, NULL, "no progress lines"},
        {0},
    };
    const pfi_cmd_spec spec = {
        "pfi sweep [--backend auto|nvml|sim] [--gpus 0-7] [--levels 100,90,80,70,60,50% | --caps "
        "700:300:50] [--dwell auto|DURATION] [--order descending|ascending|random [--order-seed N]] "
        "[--baseline default|current] [--db FILE] "
        "[--tag K=V ...] [--restart] [--attach --log FILE] [--throughput-regex RE --unit U] "
        "[--seq-len N] -- COMMAND...",
        "Run COMMAND (or follow the log of a running job with --attach) and step the power limit "
        "of its GPUs, the baseline first (the default limit, or the limits in force with "
        "--baseline current); at each level measure tokens/s from the job's own output until "
        "steady, with telemetry at 10 Hz; store every level; restore the limits on every exit.  "
        "docs/sweep.md explains the protocol.",
        opts,
        "pfi sweep --gpus 0-7 -- torchrun --nproc-per-node 8 train.py\n"
        "pfi sweep --attach --log train.log --gpus 0-3 --caps 700:300:100\n"
        "pfi sweep --backend sim --levels 100,80,60% -- pfi sim job --duration 600s"};
    int dd;
    int rc = pfi_cli_args(&spec, argc, argv, pos, npos, &dd);
    if (rc >= 0)
        return rc;
    /* The parser compacts positionals into argv without a terminator; exec needs one (the
     * slot after them is inside argv, whose argv[argc] is NULL). */
    (*pos)[*npos] = NULL;
    return check_command(o, *pos, *npos);
}

/* After the sweep: the result printed, a restore that failed said, and the exit status: 0, 1
 * for a failure (said), or 128 + the signal (130 SIGINT, 143 SIGTERM, 129 SIGHUP, 138 SIGUSR1, ...) when one
 * interrupted the sweep and the limits were put back, as shells and Slurm tell an interruption
 * from a failure. */
static int sweep_status(const sweep_opts *o, const pfi_sweep_cfg *c, const pfi_sweep_result *res,
                        const char *blabel, int simulated, pfi_store_sink *sink, const char *db,
                        int rc, pfi_err *err)
{
    int printed = print_result(o, res, blabel, simulated, pfi_store_sink_run_id(sink), db,
                               rc == PFI_OK ? NULL : err);
    const pfi_err *serr = pfi_store_sink_error(sink);
    if (serr->code != PFI_OK && rc == PFI_OK) {
        *err = *serr;
        rc = err->code;
    } else if (serr->code != PFI_OK) {
        /* Said as well as the sweep's own failure: the store now misstates the run. */
        fprintf(stderr, "pfi sweep: %s\n", serr->msg);
    }
    if (!res->restored)
        fprintf(stderr,
                "pfi sweep: the original limits were NOT all restored; run `pfi restore "
                "--journal %s`\n",
                c->journal_path);
    if (rc == PFI_OK)
        return printed;
    pfi_cli_fail("sweep", err);
    if (stop_flag && res->restored)
        return 128 + stop_flag;
    return PFI_EXIT_FAIL; /* bad input was refused before the sweep ran */
}

/* What would otherwise fail only once the job runs, refused before it is launched: the job
 * (a torchrun that makes run folders, takes GPUs) was started, then killed.  A journal held,
 * never restored or that cannot be written, a GPU another process is changing, a GPU whose
 * limit cannot be set. */
static int check_before_launch(pfi_backend *b, const pfi_sweep_cfg *c, pfi_err *err)
{
    int rc;
    if (c->journal_path &&
        ((rc = pfi_journal_check_free(c->journal_path, err)) != PFI_OK ||
         (rc = pfi_journal_check_writable(c->journal_path, err)) != PFI_OK ||
         (rc = pfi_journal_check_gpus_free(b, c->gpus, c->n_gpus, err)) != PFI_OK))
        return rc;
    return pfi_sweep_check_settable(b, c, err);
}

int pfi_cmd_sweep(int argc, char **argv)
{
    sweep_opts o = {0};
    char **pos;
    int npos;
    int rc = parse_args(argc, argv, &o, &pos, &npos);
    if (rc >= 0)
        return rc;
    pfi_err err = {0};
    char state_path[512] = "";
    int is_sim = sim_env(&o, state_path, sizeof state_path);
    pfi_backend *b = NULL;
    int status = PFI_EXIT_FAIL;
    pfi_store_sink *sink = NULL;
    pfi_tput_source *src = NULL;
    char *cmdline = NULL;
    pfi_sweep_result *res = NULL;
    pfi_sweep_cfg c;
    pfi_sweep_defaults(&c);
    if ((rc = build_spans(&o, &c, &err)) != PFI_OK || /* before any device is opened */
        (rc = pfi_cli_open_hw(&o.hw, &b, &err)) != PFI_OK)
        goto fail;
    pfi_parse_cfg pc;
    pfi_sweep_plan_note note;
    if ((rc = build_cfg(&o, b, &c, &pc, &note, &err)) != PFI_OK)
        goto fail;
    say_plan(&note, c.levels_frac);
    c.threaded_sampler = !(is_sim && pfi_backend_sim_virtual(b));
    int sim_job = pfi_hw_simulated(b) && !o.attach && is_simjob(pos, npos);
    char blabel[64];
    backend_label(b, &o, sim_job, blabel, sizeof blabel);
    if ((rc = job_meta(b, sim_job || (o.attach && pfi_hw_simulated(b)), &c, &o.tags, &c.meta,
                       &err)) != PFI_OK)
        goto fail;
    char jpath[PFI_JOURNAL_PATH_MAX];
    c.journal_path =
        o.journal ? o.journal : pfi_journal_default_path(jpath, sizeof jpath, pfi_hw_simulated(b));
    cmdline = o.attach ? NULL : join_argv(pos, npos);
    char name[PFI_NAME_MAX];
    snprintf(name, sizeof name, "%s", o.name ? o.name : o.attach ? o.log : cmdline);
    c.name = name;
    /* The store first: a locked or newer database fails before the job is launched. */
    const char *db = o.db ? o.db : pfi_store_default_path();
    if ((rc = open_sink(&o, db, cmdline, blabel, &sink, &err)) != PFI_OK)
        goto fail;
    c.sink = (pfi_sweep_sink){sink, pfi_store_sink_begin, pfi_store_sink_level,
                              pfi_store_sink_end, pfi_store_sink_run_ref};
    progress_ctx prog = {.tty = isatty(STDERR_FILENO), .quiet = o.quiet, .unit = "tokens/s",
                         .n_gpus = c.n_gpus, .fixed_dwell = c.dwell_s > 0};
    c.progress = on_progress;
    c.progress_ctx = &prog;
    c.mismatch = on_mismatch;
    stop_flag = 0;
    c.stop = &stop_flag;
    pfi_cli_catch_stop_signals(on_signal);
    char logname[64];
    if ((rc = check_before_launch(b, &c, &err)) != PFI_OK ||
        (rc = start_source(&o, pos, &pc, logname, sizeof logname, &src, &err)) != PFI_OK)
        goto fail;
    prog.src = src;
    res = malloc(sizeof *res);
    if (!res) {
        rc = pfi_err_set(&err, PFI_ENOMEM, "out of memory");
        goto fail;
    }
    rc = pfi_sweep_run(b, src, &c, res, &err);
    if (prog.tty && !o.quiet)
        fputs("\r\033[K", stderr);
    status = sweep_status(&o, &c, res, blabel, pfi_hw_simulated(b), sink, db, rc, &err);
    goto out;
fail:
    status = pfi_cli_fail("sweep", &err);
out:
    free(res);
    pfi_source_free(src);
    pfi_store_sink_close(sink);
    free(cmdline);
    pfi_hw_close(b);
    if (state_path[0])
        unlink(state_path);
    return status;
}
