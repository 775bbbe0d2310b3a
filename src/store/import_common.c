/* SPDX-License-Identifier: Apache-2.0 */
/* import_common.c: see import_common.h. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/import_common.h"
#include "store/store.h"
#include "store/store_internal.h"
#include "util/units.h"

const char *pfi_import_dir(const char *dir, const char *sub, char *buf, size_t n)
{
    if (dir && *dir)
        snprintf(buf, n, "%s", dir);
    else
        snprintf(buf, n, "%s/%s", pfi_data_dir(), sub);
    return buf;
}

/* Device power-limit constraints of the GPUs in the public data.  A100 PCIe and A40 are from
 * reference/hardware.md (the A100 PCIe minimum is assumed there).  For V100, P100 and RTX 6000
 * nothing better than the traces is at hand: the highest limit swept is taken as max and
 * default (the traces start there) and the lowest as the minimum.  spec: the maximum is the
 * board's own, so a higher cap is a damaged row; an inferred one is not (an SXM2 V100 takes
 * 300 W, above what the trace swept). */
typedef struct gpu_limits {
    const char *type;
    double min_w, max_w, default_w;
    int spec;
} gpu_limits;
static const gpu_limits gpus[] = {
    {"A100-PCIE-80GB", 150, 300, 300, 1},
    {"A40", 100, 300, 300, 1},
    {"V100", 100, 250, 250, 0},
    {"P100", 125, 250, 250, 0},
    {"RTX6000", 100, 260, 260, 0},
};

static const gpu_limits *gpu_lookup(const char *type)
{
    for (size_t i = 0; i < sizeof gpus / sizeof gpus[0]; i++)
        if (strcmp(gpus[i].type, type) == 0)
            return &gpus[i];
    return NULL;
}

/* What is known of each model: family and size (billions of parameters; NAN when the name
 * does not pin it down, e.g. the artifact's custom "bert-huge" and wide-resnet101_8). */
typedef struct model_info {
    const char *model, *family;
    double params_b;
} model_info;
static const model_info models[] = {
    {"gpt3-xl", "gpt", 1.3},
    {"gpt3-2.7b", "gpt", 2.7},
    {"gpt3-6.7b", "gpt", 6.7},
    {"bloom-3b", "bloom", 3.0},
    {"t5-3b", "t5", 3.0},
    {"bert-huge-uncased", "bert", NAN},
    {"wide-resnet101_8", "resnet", NAN},
    {"bert_base_uncased", "bert", 0.110},
    {"bert-base-uncased", "bert", 0.110},
    {"resnet18", "resnet", 0.0117},
    {"resnet50", "resnet", 0.0256},
    {"shufflenetv2", "shufflenet", NAN},
    {"deepspeech2", "deepspeech", NAN},
    {"ncf", "ncf", NAN},
};

void pfi_import_run_init(pfi_run *r, const char *source, const char *gpu_type, const char *model)
{
    memset(r, 0, sizeof *r);
    snprintf(r->source, sizeof r->source, "%s", source);
    snprintf(r->gpu_type, sizeof r->gpu_type, "%s", gpu_type);
    r->n_gpus = 1;
    r->unit = PFI_SAMPLES_PER_S;
    r->min_limit_w = r->max_limit_w = r->default_limit_w = NAN;
    const gpu_limits *g = gpu_lookup(gpu_type);
    if (g) {
        r->min_limit_w = g->min_w;
        r->max_limit_w = g->max_w;
        r->default_limit_w = g->default_w;
    }
    pfi_job_meta *m = &r->meta;
    snprintf(m->model, sizeof m->model, "%s", model);
    m->moe = 0;
    m->finetune = -1;
    m->lora = 0;
    m->params_b = NAN;
    m->ep = 1;
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++)
        if (strcmp(models[i].model, model) == 0) {
            snprintf(m->family, sizeof m->family, "%s", models[i].family);
            m->params_b = models[i].params_b;
        }
}

void pfi_import_level_init(pfi_level *lv, double cap_w, double power_w, double tput)
{
    lv->cap_w = cap_w;
    lv->power_w = power_w;
    lv->tput = tput;
    lv->enforced_w = lv->enforced_min_w = lv->tput_lo = lv->tput_hi = NAN;
    lv->sm_clock_mhz = lv->powercap_frac = NAN;
    lv->gpu_util = lv->sm_active = lv->tensor_active = lv->dram_active = NAN;
    lv->nvlink_mibs = lv->pcie_mibs = NAN;
    lv->t_start_s = lv->t_end_s = NAN;
    lv->began_s = lv->ended_s = NAN;
    lv->n_samples = 0;
}

/* What a level of a public file may say: far beyond any GPU or job, the bounds of the jobs file
 * (docs/jobs-format.md).  A damaged row whose numbers are finite and positive but absurd (an
 * elapsed time of 1e-300 s, an energy of 1e300 J, a window named _1e9) is refused with its line
 * rather than stored as a level drawing 1e303 W, which pfi index and pfi allocate --db read. */
#define LEVEL_MAX_WATTS 1e5 /* a cap or the mean draw, per GPU */
#define LEVEL_MAX_TPUT 1e15
#define LEVEL_MAX_DRAW_RATIO 1.5  /* of a level's mean draw to its cap */
#define LEVEL_MIN_DRAW_RATIO 0.02

#define LEVEL_MAX_GPUS 1e6 /* a job's GPUs: the jobs file's bound too (codec.c) */

int pfi_import_set_gpus(pfi_run *r, int dp, int tp, int pp, const char *where, pfi_err *err)
{
    double n = (double)dp * tp * pp; /* exact to 2^53, and far past any bound before that */
    if (!(dp > 0 && tp > 0 && pp > 0 && n <= LEVEL_MAX_GPUS))
        return pfi_err_set(err, PFI_EINVAL, "%s: dp %d x tp %d x pp %d = %.0f GPUs, out of range "
                           "(1 to %.0f GPUs, the jobs file's bound)", where, dp, tp, pp, n,
                           LEVEL_MAX_GPUS);
    r->n_gpus = (int)n;
    r->meta.dp = dp;
    r->meta.tp = tp;
    r->meta.pp = pp;
    return PFI_OK;
}

int pfi_import_add_level(pfi_run *r, const pfi_level *lv, const char *where, pfi_err *err)
{
    /* A name that JSON cannot carry, or that writes escapes to a terminal, is a malformed field
     * like any other: refused with its line rather than stored. */
    if (r->n_levels == 0 && pfi_store_check_run_text(r, err) != PFI_OK)
        return pfi_err_prefix(err, "%s: ", where);
    if (!(lv->cap_w > 0 && lv->cap_w <= LEVEL_MAX_WATTS))
        return pfi_err_set(err, PFI_EINVAL, "%s: a power limit of %g W is out of range (above 0 "
                           "and at most %g W)", where, lv->cap_w, LEVEL_MAX_WATTS);
    /* A cap the board cannot take became the run's baseline (an A40 window at 400 W). */
    const gpu_limits *g = gpu_lookup(r->gpu_type);
    if (g && g->spec && lv->cap_w > g->max_w + 0.5)
        return pfi_err_set(err, PFI_EINVAL, "%s: a power limit of %g W is above the %s's "
                           "maximum of %g W", where, lv->cap_w, g->type, g->max_w);
    /* ...and one below it: a file in kW (0.3 for 300 W) stored a level at a 0.3 W cap that drew
     * 233 W, which became the run's fastest and moved its PFI30 from 0.764 to 0.919. */
    if (g && g->spec && lv->cap_w < g->min_w - 0.5)
        return pfi_err_set(err, PFI_EINVAL, "%s: a power limit of %g W is below the %s's "
                           "minimum of %g W (a limit in kW?)", where, lv->cap_w, g->type,
                           g->min_w);
    if (!(lv->power_w > 0 && lv->power_w <= LEVEL_MAX_WATTS))
        return pfi_err_set(err, PFI_EINVAL, "%s: the row says %g W per GPU at %g W, out of range "
                           "(above 0 and at most %g W)", where, lv->power_w, lv->cap_w,
                           LEVEL_MAX_WATTS);
    /* A mean draw is near its limit or below it: the public sweeps draw 0.13 to 1.21 times
     * theirs.  Far outside that, the row's power is in other units (kW: 0.107 for 107 W, read
     * as a GPU drawing a thousandth of its limit; the budgets of pfi allocate --db 1000x off). */
    if (lv->power_w > LEVEL_MAX_DRAW_RATIO * lv->cap_w ||
        lv->power_w < LEVEL_MIN_DRAW_RATIO * lv->cap_w)
        return pfi_err_set(err, PFI_EINVAL, "%s: the row says %g W per GPU at a %g W limit, "
                           "%s (a power in other units?)", where, lv->power_w, lv->cap_w,
                           lv->power_w > lv->cap_w ? "more than 1.5 times the limit"
                                                   : "under 2% of the limit");
    if (!(lv->tput > 0 && lv->tput <= LEVEL_MAX_TPUT))
        return pfi_err_set(err, PFI_EINVAL, "%s: the row gives a throughput of %g at %g W, out of "
                           "range (above 0 and at most %g)", where, lv->tput, lv->cap_w,
                           LEVEL_MAX_TPUT);
    for (int i = 0; i < r->n_levels; i++)
        if (fabs(r->levels[i].cap_w - lv->cap_w) < 0.5)
            return pfi_err_set(err, PFI_EINVAL, "%s: a second row at %.0f W for run '%s'", where,
                               lv->cap_w, r->name);
    if (r->n_levels >= PFI_MAX_LEVELS)
        return pfi_err_set(err, PFI_ERANGE, "%s: run '%s' has more than %d power limits", where,
                           r->name, PFI_MAX_LEVELS);
    r->levels[r->n_levels++] = *lv;
    return PFI_OK;
}

/* FNV-1a, 64 bits. */
static uint64_t hash_bytes(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 1099511628211ULL;
    }
    return h;
}

typedef uint64_t (*entry_hash_fn)(const void *ctx, int i);

/* Makes room in an open-addressed table of *nslot slots (entry index + 1, 0 free) for one more
 * entry beside count: doubled and rehashed (hash(ctx, i) of each entry) when it would be over
 * half full.  -1 when out of memory, the table as it was. */
static int table_room(int **slot, int *nslot, int count, entry_hash_fn hash, const void *ctx)
{
    if (2 * (count + 1) <= *nslot)
        return 0;
    int n = *nslot ? 2 * *nslot : 64;
    int *ns = calloc((size_t)n, sizeof *ns);
    if (!ns)
        return -1;
    for (int j = 0; j < *nslot; j++) {
        if (!(*slot)[j])
            continue;
        size_t s = hash(ctx, (*slot)[j] - 1) & (size_t)(n - 1);
        while (ns[s])
            s = (s + 1) & (size_t)(n - 1);
        ns[s] = (*slot)[j];
    }
    free(*slot);
    *slot = ns;
    *nslot = n;
    return 0;
}

/* Puts entry i, of hash h, in a table with room for it. */
static void table_put(int *slot, int nslot, uint64_t h, int i)
{
    size_t s = h & (size_t)(nslot - 1);
    while (slot[s])
        s = (s + 1) & (size_t)(nslot - 1);
    slot[s] = i + 1;
}

static uint64_t key_hash(const void *ctx, int i)
{
    const pfi_import_keys *k = ctx;
    return hash_bytes(k->keys + (size_t)i * k->size, k->size);
}

int pfi_import_key_run(pfi_import_set *set, int first, pfi_import_keys *k, const void *key,
                       size_t size, const char *path, int *added, pfi_err *err)
{
    *added = 0;
    k->size = size;
    uint64_t h = hash_bytes(key, size);
    for (size_t s = h & (size_t)(k->nslot - 1); k->nslot && k->slot[s];
         s = (s + 1) & (size_t)(k->nslot - 1))
        if (memcmp(k->keys + (size_t)(k->slot[s] - 1) * size, key, size) == 0)
            return first + k->slot[s] - 1;
    if (k->n == k->cap) {
        int nc = k->cap ? 2 * k->cap : 16;
        char *nk = realloc(k->keys, (size_t)nc * size);
        if (nk) {
            k->keys = nk;
            k->cap = nc;
        }
    }
    if (k->n == k->cap || table_room(&k->slot, &k->nslot, k->n, key_hash, k) != 0 ||
        !pfi_import_set_add(set)) {
        pfi_err_set(err, PFI_ENOMEM, "out of memory importing %s", path);
        return -1;
    }
    memcpy(k->keys + (size_t)k->n * size, key, size);
    table_put(k->slot, k->nslot, h, k->n);
    *added = 1;
    return first + k->n++;
}

void pfi_import_keys_free(pfi_import_keys *k)
{
    free(k->keys);
    free(k->slot);
    memset(k, 0, sizeof *k);
}

int pfi_import_set_config(pfi_import_run *ir, json_t *cfg, const char *where, pfi_err *err)
{
    ir->config_json = cfg ? json_dumps(cfg, JSON_COMPACT) : NULL;
    json_decref(cfg);
    if (!ir->config_json)
        return pfi_err_set(err, PFI_EINVAL, "%s: text is not valid UTF-8", where);
    return PFI_OK;
}

pfi_import_run *pfi_import_set_add(pfi_import_set *set)
{
    if (set->n == set->cap) {
        int nc = set->cap ? 2 * set->cap : 16;
        pfi_import_run *nv = realloc(set->v, (size_t)nc * sizeof *nv);
        if (!nv)
            return NULL;
        set->v = nv;
        set->cap = nc;
    }
    pfi_import_run *r = &set->v[set->n++];
    memset(r, 0, sizeof *r);
    return r;
}

int pfi_import_check_end(const char *path, int line, pfi_err *err)
{
    /* Every public file ends with a line terminator: a last line without one is the sign of a
     * copy cut short (disk full, an interrupted transfer), whose last number may be cut
     * ("81.689" read as "81.") and whose later rows are missing.  It was imported with a
     * warning: the run holding the cut row replaced a whole stored run (8 levels became 1) and
     * the runs after it kept an older import's levels.  Refused, as any malformed line. */
    if (line <= 0)
        return PFI_OK;
    return pfi_err_set(err, PFI_EINVAL, "%s line %d: the file ends inside a line (a copy cut "
                       "short?): nothing imported; if the file is whole, end its last line "
                       "with a line break", path, line);
}

void pfi_import_set_free(pfi_import_set *set)
{
    for (int i = 0; i < set->n; i++)
        free(set->v[i].config_json);
    free(set->v);
    free(set->slot);
    memset(set, 0, sizeof *set);
}

int pfi_import_name_fits(const pfi_run *r, int len, const char *where, pfi_err *err)
{
    if (len >= 0 && (size_t)len < sizeof r->name)
        return PFI_OK;
    return pfi_err_set(err, PFI_EINVAL, "%s: the run name '%.40s...' would be %d bytes, longer "
                       "than the %zu a run name holds (it would be cut)", where, r->name, len,
                       sizeof r->name - 1);
}

static uint64_t name_hash(const void *ctx, int i)
{
    const char *name = ((const pfi_import_set *)ctx)->v[i].run.name;
    return hash_bytes(name, strlen(name));
}

int pfi_import_name_taken(pfi_import_set *set, int before, const char *name)
{
    if (before > set->n)
        before = set->n;
    for (; set->named < before; set->named++) {
        if (table_room(&set->slot, &set->nslot, set->named, name_hash, set) != 0)
            return -1;
        table_put(set->slot, set->nslot, name_hash(set, set->named), set->named);
    }
    uint64_t h = hash_bytes(name, strlen(name));
    for (size_t s = h & (size_t)(set->nslot - 1); set->nslot && set->slot[s];
         s = (s + 1) & (size_t)(set->nslot - 1)) {
        int j = set->slot[s] - 1;
        if (j < before && strcmp(set->v[j].run.name, name) == 0)
            return 1;
    }
    return 0;
}

/* By source, then name, then place in the set. */
static int cmp_run_name(const void *a, const void *b)
{
    const pfi_import_run *x = *(const pfi_import_run *const *)a;
    const pfi_import_run *y = *(const pfi_import_run *const *)b;
    int c = strcmp(x->run.source, y->run.source);
    if (c == 0)
        c = strcmp(x->run.name, y->run.name);
    return c ? c : (x > y) - (x < y);
}

static int same_name(const pfi_import_run *x, const pfi_import_run *y)
{
    return strcmp(x->run.source, y->run.source) == 0 && strcmp(x->run.name, y->run.name) == 0;
}

int pfi_import_set_check_names(const pfi_import_set *set, pfi_err *err)
{
    /* Sorted: comparing every pair was quadratic in the runs (and ran twice, once under the
     * store's write lock). */
    if (set->n < 2)
        return PFI_OK;
    const pfi_import_run **p = malloc((size_t)set->n * sizeof *p);
    if (!p)
        return pfi_err_set(err, PFI_ENOMEM, "out of memory checking the run names");
    for (int i = 0; i < set->n; i++)
        p[i] = &set->v[i];
    qsort(p, (size_t)set->n, sizeof *p, cmp_run_name);
    /* The message names the run the old pairwise check stopped at: the first in the set that
     * repeats an earlier name (the second of its group), with the first of that name. */
    const pfi_import_run *first = NULL, *second = NULL;
    for (int i = 1; i < set->n; i++)
        if (same_name(p[i - 1], p[i]) && (i < 2 || !same_name(p[i - 2], p[i - 1])) &&
            (!second || p[i] < second)) {
            first = p[i - 1];
            second = p[i];
        }
    free(p);
    if (second)
        return pfi_err_set(err, PFI_EINVAL,
                           "%s and %s both give run '%s' (one would replace the other)",
                           first->origin, second->origin, second->run.name);
    return PFI_OK;
}

int pfi_import_set_write(pfi_store *st, const pfi_import_set *set, int *nruns, int *nlevels,
                         pfi_err *err)
{
    int mode, levels = 0;
    int rc = pfi_store_unit_begin(st, "pfi_import", &mode, err);
    if (rc != PFI_OK)
        return rc;
    for (int i = 0; i < set->n && rc == PFI_OK; i++) {
        const pfi_import_run *r = &set->v[i];
        rc = pfi_store_write_imported(st, &r->run, r->unit_label, r->config_json, err);
        levels += r->run.n_levels;
    }
    int end = pfi_store_unit_end(st, "pfi_import", mode, rc == PFI_OK, err);
    if (rc == PFI_OK)
        rc = end;
    if (rc != PFI_OK)
        return rc;
    if (nruns)
        *nruns = set->n;
    if (nlevels)
        *nlevels = levels;
    return PFI_OK;
}

int pfi_import_files(const char *dir, const char *sub, const pfi_import_file *files, size_t n,
                     pfi_import_file_fn read_file, const char *what, pfi_import_set *set,
                     pfi_err *err)
{
    char base[1024], path[1200];
    pfi_import_dir(dir, sub, base, sizeof base);
    int rc = PFI_OK;
    for (size_t i = 0; i < n && rc == PFI_OK; i++) {
        snprintf(path, sizeof path, "%s/%s", base, files[i].rel);
        rc = read_file(path, files[i].gpu, files[i].rel, set, err);
    }
    return rc == PFI_OK ? rc : pfi_err_prefix(err, "%s: ", what);
}

int pfi_import_read_write(pfi_store *st, const char *dir, pfi_import_read_fn read,
                          int *nruns, int *nlevels, pfi_err *err)
{
    pfi_import_set set = {0};
    int rc = read(dir, &set, err);
    if (rc == PFI_OK)
        rc = pfi_import_set_check_names(&set, err);
    if (rc == PFI_OK)
        rc = pfi_import_set_write(st, &set, nruns, nlevels, err);
    pfi_import_set_free(&set);
    return rc;
}
