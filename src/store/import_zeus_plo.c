/* SPDX-License-Identifier: Apache-2.0 */
/* import_zeus_plo.c: Zeus GlobalPowerLimitOptimizer profiling logs (see
 * $PFI_DATA_DIR/zeus-plo-testdata/SOURCE.md).  One file = one run: <GPU>+<model>+gpu<i,j..>.csv,
 * one window per power limit.  Power per GPU = sum(gpu<i>_energy) / elapsed_time / GPUs.  Each
 * window covers the same (unrecorded) number of iterations, so throughput is 1 / elapsed_time
 * in windows/s, labelled "windows/s (relative)". */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "store/csv.h"
#include "store/import_common.h"
#include "util/units.h"

#define WINDOW_PREFIX "__GlobalPowerLimitOptimizer_"
#define MAX_GPUS_IN_NAME 64

/* "A40+resnet18+gpu0,1,2,3.csv" -> gpu "A40", model "resnet18", indices {0,1,2,3}.  Returns 0,
 * -1 for a name of another form, -2 for an index given twice (then idx[*nidx]), whose
 * gpu<i>_energy column was read once per mention: two GPUs, twice the job's power, or -3 for a
 * GPU or model name longer than gn - 1 or mn - 1 bytes (cut, two files' runs got one name). */
static int parse_name(const char *file, char *gpu, size_t gn, char *model, size_t mn, int *idx,
                      int *nidx)
{
    const char *p1 = strchr(file, '+');
    const char *p2 = p1 ? strchr(p1 + 1, '+') : NULL;
    size_t len = strlen(file);
    if (!p1 || !p2 || p1 == file || p2 == p1 + 1 || strncmp(p2 + 1, "gpu", 3) != 0 || len < 4 ||
        strcmp(file + len - 4, ".csv") != 0)
        return -1;
    if ((size_t)(p1 - file) >= gn || (size_t)(p2 - p1 - 1) >= mn)
        return -3;
    snprintf(gpu, gn, "%.*s", (int)(p1 - file), file);
    snprintf(model, mn, "%.*s", (int)(p2 - p1 - 1), p1 + 1);
    const char *s = p2 + 4, *end = file + len - 4;
    *nidx = 0;
    while (s < end) {
        char *e;
        errno = 0;
        long v = strtol(s, &e, 10);
        if (e == s || errno || v < 0 || v > 1023 || *nidx >= MAX_GPUS_IN_NAME ||
            (e != end && *e != ','))
            return -1;
        for (int i = 0; i < *nidx; i++)
            if (idx[i] == v) {
                idx[*nidx] = (int)v;
                return -2;
            }
        idx[(*nidx)++] = (int)v;
        s = e == end ? e : e + 1;
    }
    return *nidx > 0 ? 0 : -1;
}

int pfi_import_zeus_plo_file(const char *dir, const char *file, pfi_import_set *set,
                             pfi_err *err)
{
    char gpu[32], model[PFI_NAME_MAX], path[1400];
    int idx[MAX_GPUS_IN_NAME], nidx;
    int pn = parse_name(file, gpu, sizeof gpu, model, sizeof model, idx, &nidx);
    if (pn == -2)
        return pfi_err_set(err, PFI_EINVAL, "%s/%s: the name gives GPU %d twice", dir, file,
                           idx[nidx]);
    if (pn == -3)
        return pfi_err_set(err, PFI_EINVAL, "%s/%s: the GPU or model in the name is longer "
                           "than the %zu or %zu bytes it may hold", dir, file, sizeof gpu - 1,
                           sizeof model - 1);
    if (pn != 0)
        return pfi_err_set(err, PFI_EINVAL,
                           "%s/%s: name is not <GPU>+<model>+gpu<i,j,...>.csv", dir, file);
    snprintf(path, sizeof path, "%s/%s", dir, file);
    pfi_csv *c;
    int rc = pfi_csv_open(path, &c, err);
    if (rc != PFI_OK)
        return rc;
    pfi_csv_drop_unterminated(c); /* a row cut short is left out, and said */
    int cs, cw, ce, cen[MAX_GPUS_IN_NAME];
    if ((rc = pfi_csv_require(c, "start_time", &cs, err)) ||
        (rc = pfi_csv_require(c, "window_name", &cw, err)) ||
        (rc = pfi_csv_require(c, "elapsed_time", &ce, err)))
        goto out;
    for (int g = 0; g < nidx; g++) {
        char name[32];
        snprintf(name, sizeof name, "gpu%d_energy", idx[g]);
        if ((rc = pfi_csv_require(c, name, &cen[g], err)) != PFI_OK)
            goto out;
    }
    pfi_import_run *ir = pfi_import_set_add(set);
    if (!ir) {
        rc = pfi_err_set(err, PFI_ENOMEM, "out of memory importing %s", path);
        goto out;
    }
    pfi_run *r = &ir->run;
    pfi_import_run_init(r, "zeus-plo", gpu, model);
    r->n_gpus = nidx;
    /* Several GPUs in one file are a data-parallel run (SOURCE.md). */
    r->meta.dp = nidx;
    r->meta.tp = r->meta.pp = 1;
    int len = snprintf(r->name, sizeof r->name, "zeus-plo/%s/%s x%d", gpu, model, nidx);
    /* GPUs 0..n-1 (every public file) keep that name.  Others name their indices: a log of
     * GPU 1 beside one of GPU 0 was also "x1", and the second replaced the first. */
    int from0 = 1;
    for (int g = 0; g < nidx; g++)
        from0 &= idx[g] < nidx;
    for (int g = 0; !from0 && g < nidx && (size_t)len < sizeof r->name; g++)
        len += snprintf(r->name + len, sizeof r->name - (size_t)len, "%s%d", g ? "," : " gpu",
                        idx[g]);
    if ((rc = pfi_import_name_fits(r, len, path, err)) != PFI_OK)
        goto out;
    snprintf(ir->origin, sizeof ir->origin, "%s", path);
    snprintf(ir->unit_label, sizeof ir->unit_label, "windows/s (relative)");
    json_t *cfg = json_pack("{s:s, s:s}", "dataset", "zeus-plo-testdata", "file", file);
    ir->config_json = cfg ? json_dumps(cfg, JSON_COMPACT) : NULL;
    json_decref(cfg);
    if (!ir->config_json) {
        rc = pfi_err_set(err, PFI_EINVAL, "%s: name is not valid UTF-8", path);
        goto out;
    }
    while ((rc = pfi_csv_next(c, err)) == PFI_OK) {
        char where[1500];
        snprintf(where, sizeof where, "%s line %d", path, pfi_csv_line(c));
        const char *w = pfi_csv_field(c, cw);
        /* decimal watts only, as every number is read (util/units.h: no "0x12c") */
        double cap = 0;
        if (strncmp(w, WINDOW_PREFIX, strlen(WINDOW_PREFIX)) != 0 ||
            pfi_parse_decimal(w + strlen(WINDOW_PREFIX), &cap, NULL) != 0)
            cap = 0;
        if (cap <= 0) {
            rc = pfi_err_set(err, PFI_EINVAL,
                             "%s: window_name '%s' is not " WINDOW_PREFIX "<watts>", where, w);
            goto out;
        }
        double t0, el, sum = 0;
        if ((rc = pfi_csv_double(c, cs, &t0, err)) || (rc = pfi_csv_double(c, ce, &el, err)))
            goto out;
        for (int g = 0; g < nidx; g++) {
            double j;
            if ((rc = pfi_csv_double(c, cen[g], &j, err)) != PFI_OK)
                goto out;
            if (j <= 0) {
                rc = pfi_err_set(err, PFI_EINVAL, "%s: GPU %d energy %g J is not positive",
                                 where, idx[g], j);
                goto out;
            }
            sum += j;
        }
        if (el <= 0) {
            rc = pfi_err_set(err, PFI_EINVAL, "%s: elapsed_time %g s is not positive", where, el);
            goto out;
        }
        pfi_level lv;
        pfi_import_level_init(&lv, cap, sum / el / nidx, 1.0 / el);
        lv.t_start_s = t0;
        lv.t_end_s = t0 + el;
        if ((rc = pfi_import_add_level(r, &lv, where, err)) != PFI_OK)
            goto out;
    }
    if (rc == PFI_CSV_END)
        rc = r->n_levels > 0 ? pfi_import_check_end(path, pfi_csv_unterminated(c), err)
                             : pfi_err_set(err, PFI_EINVAL, "%s: no data rows", path);
out:
    pfi_csv_close(c);
    return rc;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int pfi_import_zeus_plo_read(const char *dir, pfi_import_set *set, pfi_err *err)
{
    char base[1024];
    pfi_import_dir(dir, "zeus-plo-testdata", base, sizeof base);
    DIR *d = opendir(base);
    if (!d)
        return pfi_err_set(err, errno == ENOENT ? PFI_ENOENT : PFI_EIO,
                           "import zeus-plo: cannot read folder %s: %s", base, strerror(errno));
    char **names = NULL;
    int n = 0, cap = 0, rc = PFI_OK;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (l < 5 || strcmp(de->d_name + l - 4, ".csv") != 0 || de->d_name[0] == '.')
            continue;
        if (n == cap) {
            int nc = cap ? 2 * cap : 16;
            char **nn = realloc(names, (size_t)nc * sizeof *nn);
            if (!nn) {
                rc = pfi_err_set(err, PFI_ENOMEM, "out of memory");
                break;
            }
            names = nn;
            cap = nc;
        }
        if (!(names[n] = strdup(de->d_name))) {
            rc = pfi_err_set(err, PFI_ENOMEM, "out of memory");
            break;
        }
        n++;
    }
    closedir(d);
    /* Sorted, so run ids do not depend on the directory's order. */
    if (n > 1)
        qsort(names, (size_t)n, sizeof *names, cmp_str);
    if (rc == PFI_OK && n == 0)
        rc = pfi_err_set(err, PFI_ENOENT, "no <GPU>+<model>+gpu<i>.csv files in %s", base);
    for (int i = 0; i < n && rc == PFI_OK; i++)
        rc = pfi_import_zeus_plo_file(base, names[i], set, err);
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return rc == PFI_OK ? rc : pfi_err_prefix(err, "import zeus-plo: ");
}

int pfi_import_zeus_plo(pfi_store *st, const char *dir, int *nruns, int *nlevels, pfi_err *err)
{
    return pfi_import_read_write(st, dir, pfi_import_zeus_plo_read, nruns, nlevels, err);
}
