/* SPDX-License-Identifier: Apache-2.0 */
/* bench_store: what the store costs a sweep and a reader.  Writes a sweep of 10 levels on 8
 * GPUs with 10 Hz telemetry for 60 s per level (downsampled to 1 s, then stored raw), imports
 * the public datasets (when $PFI_DATA_DIR has them), and reads every run back.  Prints figures;
 * asserts nothing about time. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/store.h"
#include "util/clock.h"

static long long file_size(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0 ? (long long)sb.st_size : -1;
}

static void rm_db(const char *db)
{
    const char *sfx[] = {"", "-wal", "-shm"};
    for (int i = 0; i < 3; i++) {
        char p[700];
        snprintf(p, sizeof p, "%s%s", db, sfx[i]);
        unlink(p);
    }
}

static int sweep(const char *db, double period, const char *label)
{
    enum { LEVELS = 10, GPUS = 8, N = 600 };
    pfi_store *st;
    pfi_err e = {0};
    rm_db(db);
    if (pfi_store_open(db, PFI_STORE_CREATE, &st, &e) != PFI_OK) {
        fprintf(stderr, "bench_store: %s\n", e.msg);
        return 1;
    }
    pfi_sample *s = malloc(N * sizeof *s);
    long long job, run, lid;
    pfi_run h;
    memset(&h, 0, sizeof h);
    snprintf(h.name, sizeof h.name, "bench");
    snprintf(h.source, sizeof h.source, "sweep");
    snprintf(h.gpu_type, sizeof h.gpu_type, "H200-SXM");
    h.n_gpus = GPUS;
    int rc = pfi_store_create_job(st, "bench", NULL, NULL, 0, &job, &e);
    if (rc == PFI_OK)
        rc = pfi_store_create_run(st, job, &h, "sim", &run, &e);
    double worst = 0, t0 = pfi_clock_mono();
    for (int l = 0; l < LEVELS && rc == PFI_OK; l++) {
        pfi_level lv;
        memset(&lv, 0, sizeof lv);
        lv.cap_w = 700 - 40 * l;
        lv.power_w = lv.cap_w * 0.95;
        lv.tput = 10000 - 500 * l;
        double a = pfi_clock_mono();
        rc = pfi_store_level_begin(st, &e);
        if (rc == PFI_OK)
            rc = pfi_store_add_level(st, run, &lv, &lid, &e);
        for (int g = 0; g < GPUS && rc == PFI_OK; g++) {
            for (int i = 0; i < N; i++) {
                pfi_sample_clear(&s[i]);
                s[i].t_s = 60.0 * l + 0.1 * i;
                s[i].have = PFI_F_POWER | PFI_F_SM_CLOCK | PFI_F_GPU_UTIL | PFI_F_SM_ACTIVE |
                            PFI_F_TENSOR | PFI_F_DRAM | PFI_F_REASONS | PFI_F_LIMIT;
                s[i].power_w = lv.power_w + (i % 7);
                s[i].sm_clock_mhz = 1500 - l * 50;
                s[i].gpu_util = 1;
                s[i].sm_active = 0.8;
                s[i].tensor_active = 0.4;
                s[i].dram_active = 0.3;
                s[i].limit_w = s[i].enforced_w = lv.cap_w;
                s[i].clock_reasons = PFI_REASON_SW_POWERCAP;
            }
            rc = pfi_store_add_samples(st, lid, g, s, N, period, &e);
        }
        if (rc == PFI_OK)
            rc = pfi_store_level_commit(st, &e);
        double dt = pfi_clock_mono() - a;
        if (dt > worst)
            worst = dt;
    }
    double total = pfi_clock_mono() - t0;
    if (rc != PFI_OK)
        fprintf(stderr, "bench_store: %s\n", e.msg);
    pfi_store_close(st);
    free(s);
    printf("%-34s %d levels x %d GPUs x %d samples: %.1f ms per level (worst %.1f ms), "
           "file %.0f KiB\n",
           label, LEVELS, GPUS, N, 1e3 * total / LEVELS, 1e3 * worst,
           file_size(db) / 1024.0);
    return rc != PFI_OK;
}

static int imports(const char *db)
{
    pfi_store *st;
    pfi_err e = {0};
    rm_db(db);
    if (pfi_store_open(db, PFI_STORE_CREATE, &st, &e) != PFI_OK)
        return 1;
    int nr[PFI_IMPORT_NSOURCES], nl[PFI_IMPORT_NSOURCES];
    double a = pfi_clock_mono();
    int rc = pfi_import_all(st, NULL, nr, nl, &e);
    double t_import = pfi_clock_mono() - a;
    if (rc != PFI_OK) {
        printf("import all: skipped (%s)\n", e.msg);
        pfi_store_close(st);
        return 0;
    }
    a = pfi_clock_mono();
    pfi_run_summary *v;
    int n;
    pfi_run *r = malloc(sizeof *r);
    rc = pfi_store_list_runs(st, &v, &n, &e);
    for (int i = 0; i < n && rc == PFI_OK; i++)
        rc = pfi_store_load_run(st, v[i].id, r, &e);
    double t_read = pfi_clock_mono() - a;
    free(v);
    free(r);
    pfi_store_close(st);
    printf("import all (%d + %d + %d runs): %.1f ms; list + load every run: %.1f ms; "
           "file %.0f KiB\n",
           nr[0], nr[1], nr[2], 1e3 * t_import, 1e3 * t_read, file_size(db) / 1024.0);
    return rc != PFI_OK;
}

int main(void)
{
    const char *tmp = getenv("TMPDIR");
    char dir[512], db[600];
    snprintf(dir, sizeof dir, "%s/pfi-bench-store-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        perror("bench_store: mkdtemp");
        return 1;
    }
    snprintf(db, sizeof db, "%s/b.db", dir);
    int rc = sweep(db, 1.0, "sweep, telemetry downsampled to 1 s") ||
             sweep(db, 0, "sweep, raw telemetry") || imports(db);
    rm_db(db);
    rmdir(dir);
    return rc;
}
