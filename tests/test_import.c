/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the public-dataset importers and the export, on the real files under
 * $PFI_DATA_DIR (skipped with a message when absent): run and level counts checked against the
 * files themselves, derived numbers checked against rows of the files, idempotent re-import,
 * atomic failure on a malformed file, and the export's columns. */
#include <dirent.h>
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "store/csv.h"
#include "store/export.h"
#include "store/import_common.h"
#include "store/store.h"
#include "store/store_internal.h" /* the connection, to count SQLite's steps */
#include "util/units.h"
#include "support/files.h"
#include "support/skip.h"

typedef struct fixture {
    char dir[512];
    char db[600];
    pfi_store *st;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    const char *tmp = getenv("PFI_TEST_TMP");
    snprintf(f->dir, sizeof f->dir, "%s/pfi-import-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(f->dir))
        return -1;
    snprintf(f->db, sizeof f->db, "%s/t.db", f->dir);
    pfi_err e = {0};
    if (pfi_store_open(f->db, PFI_STORE_CREATE, &f->st, &e) != PFI_OK)
        return -1;
    *state = f;
    return 0;
}

/* Removes the test's temporary tree (files and one level of folders, symlinks unfollowed). */
static void rm_tree(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        char p[1200];
        snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
        struct stat sb;
        if (lstat(p, &sb) == 0 && S_ISDIR(sb.st_mode))
            rm_tree(p);
        else
            unlink(p);
    }
    closedir(d);
    rmdir(dir);
}

static int teardown(void **state)
{
    fixture *f = *state;
    pfi_store_close(f->st);
    rm_tree(f->dir);
    free(f);
    return 0;
}

static int have_data(const char *sub)
{
    char p[1200];
    snprintf(p, sizeof p, "%s/%s", pfi_data_dir(), sub);
    struct stat sb;
    if (stat(p, &sb) == 0)
        return 1;
    print_message("public data not found at %s (set PFI_DATA_DIR)\n", p);
    return 0;
}

/* Data rows of a CSV file whose fields hold no line breaks: non-empty lines minus the header. */
static int data_rows(const char *sub)
{
    char p[1200], line[4096];
    snprintf(p, sizeof p, "%s/%s", pfi_data_dir(), sub);
    FILE *fp = fopen(p, "r");
    assert_non_null(fp);
    int n = 0;
    while (fgets(line, sizeof line, fp))
        if (line[strspn(line, "\r\n")])
            n++;
    fclose(fp);
    return n - 1;
}

/* Distinct values of the first `k` fields (which hold no quotes) over the data rows. */
static int distinct_keys(const char *sub, int k)
{
    char p[1200], line[4096];
    snprintf(p, sizeof p, "%s/%s", pfi_data_dir(), sub);
    FILE *fp = fopen(p, "r");
    assert_non_null(fp);
    char (*keys)[256] = calloc(1024, 256);
    int n = 0, first = 1;
    while (fgets(line, sizeof line, fp)) {
        if (first || !line[strspn(line, "\r\n")]) {
            first = 0;
            continue;
        }
        char *c = line;
        for (int i = 0; i < k && c; i++)
            c = strchr(c + 1, ',');
        assert_non_null(c);
        *c = 0;
        int seen = 0;
        for (int i = 0; i < n && !seen; i++)
            seen = strcmp(keys[i], line) == 0;
        if (!seen) {
            assert_true(n < 1024);
            snprintf(keys[n++], 256, "%s", line);
        }
    }
    fclose(fp);
    free(keys);
    return n;
}

static int count_source(pfi_store *st, const char *source, int *levels)
{
    pfi_run_summary *v;
    int n, c = 0;
    pfi_err e = {0};
    assert_int_equal(pfi_store_list_runs(st, &v, &n, &e), PFI_OK);
    *levels = 0;
    for (int i = 0; i < n; i++)
        if (strcmp(v[i].source, source) == 0) {
            c++;
            *levels += v[i].n_levels;
        }
    free(v);
    return c;
}

static pfi_run *load_named(pfi_store *st, const char *name)
{
    long long id;
    pfi_err e = {0};
    pfi_run *r = malloc(sizeof *r);
    if (pfi_store_find_run(st, name, &id, &e) != PFI_OK)
        fail_msg("%s", e.msg);
    assert_int_equal(pfi_store_load_run(st, id, r, &e), PFI_OK);
    return r;
}

static const pfi_level *at_cap(const pfi_run *r, double cap)
{
    for (int i = 0; i < r->n_levels; i++)
        if (fabs(r->levels[i].cap_w - cap) < 0.5)
            return &r->levels[i];
    fail_msg("run %s has no level at %g W", r->name, cap);
    return NULL;
}

#define A100 "perseus-sosp24/zeus_baseline/A100/zeus_global.csv"
#define A40 "perseus-sosp24/zeus_baseline/A40/zeus_global.csv"

static void test_perseus(void **state)
{
    fixture *f = *state;
    if (!have_data("perseus-sosp24"))
        PFI_TEST_SKIP("public data absent\n");
    pfi_err e = {0};
    int nr, nl, lv;
    assert_int_equal(pfi_import_perseus(f->st, NULL, &nr, &nl, &e), PFI_OK);
    /* One run per model in each file (each has one configuration per model). */
    int want_runs = distinct_keys(A100, 1) + distinct_keys(A40, 1);
    int want_levels = data_rows(A100) + data_rows(A40);
    assert_int_equal(nr, want_runs);
    assert_int_equal(nl, want_levels);
    assert_int_equal(count_source(f->st, "perseus", &lv), want_runs);
    assert_int_equal(lv, want_levels);

    /* A100 first data row: bert-huge-uncased, batch 256, pp4, 300 W,
     * time 6.354814670704029 s, energy 6819.0174444439235 J. */
    pfi_run *r = load_named(f->st, "perseus/A100-PCIE-80GB/bert-huge-uncased dp1tp1pp4");
    assert_string_equal(r->gpu_type, "A100-PCIE-80GB");
    assert_int_equal(r->n_gpus, 4);
    assert_int_equal(r->unit, PFI_SAMPLES_PER_S);
    assert_int_equal(r->meta.pp, 4);
    assert_int_equal(r->meta.global_batch, 256);
    assert_int_equal(r->meta.moe, 0);
    assert_int_equal(r->meta.finetune, -1);
    const pfi_level *l = at_cap(r, 300);
    assert_true(fabs(l->power_w - 6819.0174444439235 / 6.354814670704029 / 4) < 1e-9);
    assert_true(fabs(l->tput - 256 / 6.354814670704029) < 1e-9);
    assert_true(isnan(l->sm_clock_mhz) && isnan(l->enforced_w));
    free(r);

    /* The 16-GPU run: dp2 tp2 pp4, and its unused power_limit_4..7 columns are 0. */
    r = load_named(f->st, "perseus/A40/gpt3-6.7b dp2tp2pp4");
    assert_int_equal(r->n_gpus, 16);
    assert_int_equal(r->n_levels, 8);
    assert_string_equal(r->meta.family, "gpt");
    assert_true(r->meta.params_b == 6.7);
    free(r);

    /* Re-importing replaces, never duplicates, and keeps the run ids. */
    long long id1, id2;
    assert_int_equal(pfi_store_find_run(f->st, "perseus/A40/gpt3-6.7b dp2tp2pp4", &id1, &e),
                     PFI_OK);
    assert_int_equal(pfi_import_perseus(f->st, NULL, &nr, &nl, &e), PFI_OK);
    assert_int_equal(count_source(f->st, "perseus", &lv), want_runs);
    assert_int_equal(lv, want_levels);
    assert_int_equal(pfi_store_find_run(f->st, "perseus/A40/gpt3-6.7b dp2tp2pp4", &id2, &e),
                     PFI_OK);
    assert_int_equal(id1, id2);
}

static void test_zeus_nsdi(void **state)
{
    fixture *f = *state;
    if (!have_data("zeus-nsdi23-trace"))
        PFI_TEST_SKIP("public data absent\n");
    static const char *files[] = {"summary_power_a40.csv", "summary_power_v100.csv",
                                  "summary_power_p100.csv", "summary_power_rtx6000.csv"};
    int want_runs = 0, want_levels = 0;
    for (int i = 0; i < 4; i++) {
        char sub[200];
        snprintf(sub, sizeof sub, "zeus-nsdi23-trace/%s", files[i]);
        want_runs += distinct_keys(sub, 4); /* dataset, network, batch_size, optimizer */
        want_levels += data_rows(sub);
    }
    pfi_err e = {0};
    int nr, nl, lv;
    assert_int_equal(pfi_import_zeus_nsdi(f->st, NULL, &nr, &nl, &e), PFI_OK);
    assert_int_equal(nr, want_runs);
    assert_int_equal(nl, want_levels);
    assert_int_equal(pfi_import_zeus_nsdi(f->st, NULL, &nr, &nl, &e), PFI_OK);
    assert_int_equal(count_source(f->st, "zeus-nsdi", &lv), want_runs);
    assert_int_equal(lv, want_levels);

    /* summary_power_a40.csv, first row: cifar100,shufflenetv2,1024,adadelta,100,
     * 27.130000000000003,106.88881213499654 */
    pfi_run *r = load_named(f->st, "zeus-nsdi/A40/shufflenetv2 cifar100 bs1024 adadelta");
    assert_int_equal(r->n_gpus, 1);
    assert_int_equal(r->n_levels, 9);
    assert_int_equal(r->meta.finetune, -1);
    const pfi_level *l = at_cap(r, 100);
    assert_true(fabs(l->tput - 1 / 27.130000000000003) < 1e-12);
    assert_true(fabs(l->power_w - 106.88881213499654) < 1e-9);
    free(r);
    r = load_named(f->st, "zeus-nsdi/A40/bert_base_uncased squad bs32 adamw");
    assert_int_equal(r->meta.finetune, 1); /* SOURCE.md: squad is a QA fine-tune */
    assert_string_equal(r->meta.family, "bert");
    long long id;
    assert_int_equal(pfi_store_find_run(f->st, r->name, &id, &e), PFI_OK);
    pfi_run_summary s;
    assert_int_equal(pfi_store_run_summary(f->st, id, &s, &e), PFI_OK);
    assert_string_equal(s.unit_label, "epochs/s (relative)");
    assert_true(s.cap0_w == 300); /* baseline at the A40 default limit */
    free(r);
}

static void test_zeus_plo(void **state)
{
    fixture *f = *state;
    if (!have_data("zeus-plo-testdata"))
        PFI_TEST_SKIP("public data absent\n");
    char dir[1200];
    snprintf(dir, sizeof dir, "%s/zeus-plo-testdata", pfi_data_dir());
    DIR *d = opendir(dir);
    assert_non_null(d);
    int want_runs = 0, want_levels = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t n = strlen(de->d_name);
        if (n > 4 && !strcmp(de->d_name + n - 4, ".csv") && strchr(de->d_name, '+')) {
            char sub[1200];
            snprintf(sub, sizeof sub, "zeus-plo-testdata/%s", de->d_name);
            want_runs++;
            want_levels += data_rows(sub);
        }
    }
    closedir(d);
    pfi_err e = {0};
    int nr, nl, lv;
    assert_int_equal(pfi_import_zeus_plo(f->st, NULL, &nr, &nl, &e), PFI_OK);
    assert_int_equal(nr, want_runs);
    assert_int_equal(nl, want_levels);
    assert_int_equal(count_source(f->st, "zeus-plo", &lv), want_runs);
    assert_int_equal(lv, want_levels);
    /* A40+resnet18+gpu0,1,2,3.csv, first row: 300 W window, elapsed 33.27751154080033 s,
     * energies 3991.396999999881, 4170.069999992847, 4255.888000011444, 4102.665999993682 J. */
    pfi_run *r = load_named(f->st, "zeus-plo/A40/resnet18 x4");
    assert_int_equal(r->n_gpus, 4);
    assert_int_equal(r->meta.dp, 4);
    assert_string_equal(r->gpu_type, "A40");
    const pfi_level *l = at_cap(r, 300);
    double sum = 3991.396999999881 + 4170.069999992847 + 4255.888000011444 + 4102.665999993682;
    assert_true(fabs(l->power_w - sum / 33.27751154080033 / 4) < 1e-9);
    assert_true(fabs(l->tput - 1 / 33.27751154080033) < 1e-12);
    assert_true(fabs(l->t_end_s - l->t_start_s - 33.27751154080033) < 1e-6);
    free(r);
}

static void test_bad_input_leaves_store_unchanged(void **state)
{
    fixture *f = *state;
    if (!have_data("perseus-sosp24") || !have_data("zeus-nsdi23-trace"))
        PFI_TEST_SKIP("public data absent\n");
    pfi_err e = {0};
    int nr, nl, lv;
    assert_int_equal(pfi_import_perseus(f->st, NULL, &nr, &nl, &e), PFI_OK);
    int before = count_source(f->st, "perseus", &lv);

    /* A data tree whose zeus-plo folder holds a malformed file: the real perseus and nsdi
     * folders by symlink, so nothing is copied. */
    char root[700], p[1400];
    snprintf(root, sizeof root, "%s/data", f->dir);
    assert_int_equal(mkdir(root, 0700), 0);
    const char *subs[] = {"perseus-sosp24", "zeus-nsdi23-trace"};
    /* The links live in another folder: a relative data dir (the default) would dangle. */
    char data[PATH_MAX];
    assert_non_null(realpath(pfi_data_dir(), data));
    for (int i = 0; i < 2; i++) {
        char target[1200];
        snprintf(target, sizeof target, "%s/%s", data, subs[i]);
        snprintf(p, sizeof p, "%s/%s", root, subs[i]);
        assert_int_equal(symlink(target, p), 0);
    }
    snprintf(p, sizeof p, "%s/zeus-plo-testdata", root);
    assert_int_equal(mkdir(p, 0700), 0);
    snprintf(p, sizeof p, "%s/zeus-plo-testdata/A40+resnet18+gpu0.csv", root);
    pfi_test_put_text(p, "start_time,window_name,elapsed_time,gpu0_energy\n"
                         "1.0,__GlobalPowerLimitOptimizer_300,33.2,4000\n"
                         "2.0,__GlobalPowerLimitOptimizer_275,not-a-time,3900\n");
    assert_int_not_equal(pfi_import_all(f->st, root, NULL, NULL, &e), PFI_OK);
    assert_non_null(strstr(e.msg, "line 3"));
    assert_non_null(strstr(e.msg, "elapsed_time"));
    /* Neither the nsdi runs read before the bad file nor a second copy of perseus landed. */
    assert_int_equal(count_source(f->st, "zeus-nsdi", &lv), 0);
    assert_int_equal(count_source(f->st, "zeus-plo", &lv), 0);
    assert_int_equal(count_source(f->st, "perseus", &lv), before);

    /* Missing folder, and a Perseus file whose stages disagree. */
    snprintf(p, sizeof p, "%s/nowhere", f->dir);
    assert_int_equal(pfi_import_zeus_nsdi(f->st, p, NULL, NULL, &e), PFI_ENOENT);
    assert_non_null(strstr(e.msg, "nowhere"));
    snprintf(p, sizeof p, "%s/px/zeus_baseline/A100", f->dir);
    char mk[1400];
    snprintf(mk, sizeof mk, "%s/px", f->dir);
    mkdir(mk, 0700);
    snprintf(mk, sizeof mk, "%s/px/zeus_baseline", f->dir);
    mkdir(mk, 0700);
    mkdir(p, 0700);
    snprintf(mk, sizeof mk, "%s/zeus_global.csv", p);
    pfi_test_put_text(mk, "model_name,partition_method,batch_size,dp,tp,pp,microbatch_size,"
                          "num_microbatches,power_limit_0,power_limit_1,time,energy\n"
                          "m,\"custom:0,1\",8,1,1,2,1,8,300,300,1.0,500\n"
                          "m,\"custom:0,1\",8,1,1,2,1,8,275,250,1.1,480\n");
    snprintf(p, sizeof p, "%s/px", f->dir);
    assert_int_equal(pfi_import_perseus(f->st, p, NULL, NULL, &e), PFI_EINVAL);
    assert_non_null(strstr(e.msg, "line 3"));
    assert_non_null(strstr(e.msg, "differ"));
}

/* A damaged row whose numbers are finite and positive but beyond any GPU (an elapsed time of
 * 1e-300 s, an energy of 1e300 J, a window or limit of 1e9 W) is refused with its line, as the
 * jobs file refuses the same values: it was stored as a level drawing 1e303 W at a throughput
 * of 1e300, which pfi allocate --db then allocated. */
static void test_absurd_levels(void **state)
{
    fixture *f = *state;
    const char *plo[][2] = {
        {"1.0,__GlobalPowerLimitOptimizer_275,1e-300,2051", "2.051e+303 W per GPU"},
        {"1.0,__GlobalPowerLimitOptimizer_275,9,1e300", "per GPU"},
        {"1.0,__GlobalPowerLimitOptimizer_1e9,9,2051", "1e+09 W"},
    };
    for (size_t i = 0; i < sizeof plo / sizeof plo[0]; i++) {
        char p[1200], text[512];
        snprintf(p, sizeof p, "%s/A40+resnet18+gpu0.csv", f->dir);
        snprintf(text, sizeof text, "start_time,window_name,elapsed_time,gpu0_energy\n"
                                    "0.0,__GlobalPowerLimitOptimizer_300,9.2,2053\n%s\n", plo[i][0]);
        pfi_test_put_text(p, text);
        pfi_import_set set = {0};
        pfi_err e = {0};
        int rc = pfi_import_zeus_plo_file(f->dir, "A40+resnet18+gpu0.csv", &set, &e);
        pfi_import_set_free(&set);
        if (rc != PFI_EINVAL || !strstr(e.msg, "line 3") || !strstr(e.msg, plo[i][1]))
            fail_msg("zeus-plo row '%s': rc %d, '%s'", plo[i][0], rc, e.msg);
    }
    const char *nsdi[][2] = {
        {"cifar100,shufflenetv2,1024,adadelta,125,16.85,1e300", "per GPU"},
        {"cifar100,shufflenetv2,1024,adadelta,125,1e-300,118", "throughput"},
        {"cifar100,shufflenetv2,1024,adadelta,1e9,16.85,118", "1e+09 W"},
        /* in kW: a limit under the board's minimum, a draw a thousandth of the limit, and a
         * draw in W beside a limit in kW */
        {"cifar100,shufflenetv2,1024,adadelta,0.125,16.85,118", "below the A40's minimum of 100 W"},
        {"cifar100,shufflenetv2,1024,adadelta,125,16.85,0.118", "under 2% of the limit"},
        {"cifar100,shufflenetv2,1024,adadelta,125,16.85,250", "more than 1.5 times the limit"},
    };
    for (size_t i = 0; i < sizeof nsdi / sizeof nsdi[0]; i++) {
        char p[1200], text[512];
        snprintf(p, sizeof p, "%s/summary_power_a40.csv", f->dir);
        snprintf(text, sizeof text, "dataset,network,batch_size,optimizer,power_limit,"
                                    "time_per_epoch,average_power\n"
                                    "cifar100,shufflenetv2,1024,adadelta,100,27.1,106.9\n%s\n",
                 nsdi[i][0]);
        pfi_test_put_text(p, text);
        pfi_import_set set = {0};
        pfi_err e = {0};
        int rc = pfi_import_zeus_nsdi_file(p, "A40", "summary_power_a40.csv", &set, &e);
        pfi_import_set_free(&set);
        if (rc != PFI_EINVAL || !strstr(e.msg, "line 3") || !strstr(e.msg, nsdi[i][1]))
            fail_msg("zeus-nsdi row '%s': rc %d, '%s'", nsdi[i][0], rc, e.msg);
    }
    /* the largest a GPU may be said to take, and a throughput of 1e15, are kept (on a GPU
     * whose own maximum is not known: an A40's is 300 W) */
    char p[1200];
    snprintf(p, sizeof p, "%s/summary_power_x.csv", f->dir);
    pfi_test_put_text(p, "dataset,network,batch_size,optimizer,power_limit,time_per_epoch,average_power\n"
                         "cifar100,shufflenetv2,1024,adadelta,100000,1e-15,100000\n");
    pfi_import_set set = {0};
    pfi_err e = {0};
    assert_int_equal(pfi_import_zeus_nsdi_file(p, "X9000", "summary_power_x.csv", &set, &e),
                     PFI_OK);
    pfi_import_set_free(&set);
}

/* A name with a byte that is not UTF-8 was imported and then dropped from every JSON output
 * (jansson refuses it); one with terminal escapes or a line break was printed raw by the tables.
 * Both are refused with the file's line, the key field's bytes never echoed. */
static void test_unprintable_names(void **state)
{
    fixture *f = *state;
    const char *nsdi[][2] = {
        {"ci,net\xff,8,adam,300,10,270", "invalid UTF-8 byte 0xff"},
        {"ci,\"net\033]0;owned\007\033[2J\nX\",8,adam,300,10,270", "control character 0x1b"},
        {"ci,net\xc2\x9b" "2J,8,adam,300,10,270", "control character 0x9b"},
        {"ci,net\x7f,8,adam,300,10,270", "control character 0x7f"},
    };
    char p[1200], text[512];
    snprintf(p, sizeof p, "%s/summary_power_a40.csv", f->dir);
    for (size_t i = 0; i < sizeof nsdi / sizeof nsdi[0]; i++) {
        snprintf(text, sizeof text, "dataset,network,batch_size,optimizer,power_limit,"
                                    "time_per_epoch,average_power\n%s\n", nsdi[i][0]);
        pfi_test_put_text(p, text);
        pfi_import_set set = {0};
        pfi_err e = {0};
        int rc = pfi_import_zeus_nsdi_file(p, "A40", "summary_power_a40.csv", &set, &e);
        pfi_import_set_free(&set);
        if (rc != PFI_EINVAL || !strstr(e.msg, "line 2") || !strstr(e.msg, nsdi[i][1]) ||
            strchr(e.msg, '\033'))
            fail_msg("zeus-nsdi row %zu: rc %d, '%s'", i, rc, e.msg);
    }
    /* UTF-8 text is a name like any other. */
    pfi_test_put_text(p, "dataset,network,batch_size,optimizer,power_limit,time_per_epoch,"
                         "average_power\nci,r\xc3\xa9seau \xf0\x9f\x9a\x80,8,adam,300,10,270\n");
    pfi_import_set set = {0};
    pfi_err e = {0};
    assert_int_equal(pfi_import_zeus_nsdi_file(p, "A40", "summary_power_a40.csv", &set, &e),
                     PFI_OK);
    pfi_import_set_free(&set);

    snprintf(p, sizeof p, "%s/zeus_global.csv", f->dir);
    pfi_test_put_text(p, "model_name,partition_method,batch_size,dp,tp,pp,microbatch_size,"
                         "num_microbatches,power_limit_0,time,energy\n"
                         "gpt\033[2J,uniform,8,1,1,1,1,8,300,1.0,500\n");
    int rc = pfi_import_perseus_file(p, "A40", "zeus_global.csv", &set, &e);
    pfi_import_set_free(&set);
    if (rc != PFI_EINVAL || !strstr(e.msg, "line 2") || !strstr(e.msg, "control character"))
        fail_msg("perseus model with an escape: rc %d, '%s'", rc, e.msg);
}

/* A file name or a window that contradicts the data: "gpu0,0" read gpu0_energy twice and made a
 * 2-GPU run of twice the power; a 400 W window on an A40 (300 W at most) became the baseline. */
static void test_plo_contradictions(void **state)
{
    fixture *f = *state;
    char p[1200];
    pfi_import_set set = {0};
    pfi_err e = {0};
    snprintf(p, sizeof p, "%s/V100+resnet50+gpu0,0.csv", f->dir);
    pfi_test_put_text(p, "start_time,window_name,elapsed_time,gpu0_energy\n"
                         "1,__GlobalPowerLimitOptimizer_250,30,6000\n");
    int rc = pfi_import_zeus_plo_file(f->dir, "V100+resnet50+gpu0,0.csv", &set, &e);
    pfi_import_set_free(&set);
    if (rc != PFI_EINVAL || !strstr(e.msg, "gpu0,0.csv: the name gives GPU 0 twice"))
        fail_msg("gpu0,0: rc %d, '%s'", rc, e.msg);

    const char *cases[][3] = {
        /* file, window, what is expected ("" : accepted) */
        {"A40+resnet18+gpu0.csv", "400", "line 3: a power limit of 400 W is above the A40's "
                                         "maximum of 300 W"},
        {"A40+resnet18+gpu0.csv", "300.4", ""},
        /* The V100's maximum is only the trace's highest limit; an SXM2 board takes 300 W. */
        {"V100+resnet18+gpu0.csv", "300", ""},
        {"H100+resnet18+gpu0.csv", "700", ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[512];
        snprintf(p, sizeof p, "%s/%s", f->dir, cases[i][0]);
        snprintf(text, sizeof text, "start_time,window_name,elapsed_time,gpu0_energy\n"
                                    "0,__GlobalPowerLimitOptimizer_250,30,6000\n"
                                    "31,__GlobalPowerLimitOptimizer_%s,29,7000\n", cases[i][1]);
        pfi_test_put_text(p, text);
        rc = pfi_import_zeus_plo_file(f->dir, cases[i][0], &set, &e);
        pfi_import_set_free(&set);
        if (cases[i][2][0] ? rc != PFI_EINVAL || !strstr(e.msg, cases[i][2]) : rc != PFI_OK)
            fail_msg("%s at %s W: rc %d, '%s'", cases[i][0], cases[i][1], rc,
                     rc ? e.msg : "accepted");
        unlink(p);
    }
}

/* A Zeus log of GPU 0 and GPU 1 in one folder: both were named "zeus-plo/A40/resnet18 x1", the
 * second replaced the first inside the import, and the count said 2 runs while 1 was stored. */
static void test_plo_names_unique(void **state)
{
    fixture *f = *state;
    char dir[700], p[1200];
    snprintf(dir, sizeof dir, "%s/plo", f->dir);
    assert_int_equal(mkdir(dir, 0700), 0);
    snprintf(p, sizeof p, "%s/A40+resnet18+gpu0.csv", dir);
    pfi_test_put_text(p, "start_time,window_name,elapsed_time,gpu0_energy\n"
                         "1,__GlobalPowerLimitOptimizer_300,30,9000\n");
    snprintf(p, sizeof p, "%s/A40+resnet18+gpu1.csv", dir);
    pfi_test_put_text(p, "start_time,window_name,elapsed_time,gpu1_energy\n"
                         "1,__GlobalPowerLimitOptimizer_300,30,6000\n"
                         "2,__GlobalPowerLimitOptimizer_250,33,5000\n");
    pfi_err e = {0};
    int nr = 0, nl = 0, lv;
    if (pfi_import_zeus_plo(f->st, dir, &nr, &nl, &e) != PFI_OK)
        fail_msg("%s", e.msg);
    assert_int_equal(nr, 2);
    assert_int_equal(nl, 3);
    assert_int_equal(count_source(f->st, "zeus-plo", &lv), 2);
    assert_int_equal(lv, 3);
    pfi_run *r = load_named(f->st, "zeus-plo/A40/resnet18 x1");
    assert_true(fabs(r->levels[0].power_w - 300) < 1e-9);
    free(r);
    r = load_named(f->st, "zeus-plo/A40/resnet18 x1 gpu1");
    assert_int_equal(r->n_levels, 2);
    free(r);

    /* The same GPUs in another order give the same name: refused with both files, nothing
     * written (the store keeps the two runs above). */
    snprintf(p, sizeof p, "%s/A40+resnet50+gpu0,1.csv", dir);
    pfi_test_put_text(p, "start_time,window_name,elapsed_time,gpu0_energy,gpu1_energy\n"
                         "1,__GlobalPowerLimitOptimizer_300,30,9000,9000\n");
    snprintf(p, sizeof p, "%s/A40+resnet50+gpu1,0.csv", dir);
    pfi_test_put_text(p, "start_time,window_name,elapsed_time,gpu0_energy,gpu1_energy\n"
                         "1,__GlobalPowerLimitOptimizer_300,31,9000,9000\n");
    assert_int_equal(pfi_import_zeus_plo(f->st, dir, &nr, &nl, &e), PFI_EINVAL);
    if (!strstr(e.msg, "A40+resnet50+gpu0,1.csv and ") || !strstr(e.msg, "gpu1,0.csv both give "
                                                                           "run 'zeus-plo/A40/resnet50 x2'"))
        fail_msg("%s", e.msg);
    assert_int_equal(count_source(f->st, "zeus-plo", &lv), 2);
}

/* Three Perseus schedules of one model and parallelism, the last two with the same batch and
 * microbatch sizes: the third took the second's name (the suffix loop compared only the bare
 * name) and replaced it. */
static void test_perseus_names_unique(void **state)
{
    fixture *f = *state;
    char p[1200];
    snprintf(p, sizeof p, "%s/zeus_global.csv", f->dir);
    pfi_test_put_text(p, "model_name,partition_method,batch_size,dp,tp,pp,microbatch_size,"
                         "num_microbatches,power_limit_0,power_limit_1,time,energy\n"
                         "gpt3-xl,\"custom:0,14\",512,1,1,2,4,128,300,300,1.0,500\n"
                         "gpt3-xl,\"custom:0,14\",1024,1,1,2,8,128,300,300,2.0,1000\n"
                         "gpt3-xl,uniform_transformer,1024,1,1,2,8,128,300,300,2.1,1050\n"
                         "gpt3-xl,uniform_transformer,1024,1,1,2,8,128,250,250,2.3,950\n");
    pfi_import_set set = {0};
    pfi_err e = {0};
    if (pfi_import_perseus_file(p, "A40", "zeus_global.csv", &set, &e) != PFI_OK)
        fail_msg("%s", e.msg);
    assert_int_equal(set.n, 3);
    assert_string_equal(set.v[0].run.name, "perseus/A40/gpt3-xl dp1tp1pp2");
    assert_string_equal(set.v[1].run.name, "perseus/A40/gpt3-xl dp1tp1pp2 bs1024 mbs8");
    assert_string_equal(set.v[2].run.name,
                        "perseus/A40/gpt3-xl dp1tp1pp2 bs1024 mbs8 uniform_transformer");
    int nr = 0, nl = 0, lv;
    assert_int_equal(pfi_import_set_write(f->st, &set, &nr, &nl, &e), PFI_OK);
    pfi_import_set_free(&set);
    assert_int_equal(nr, 3);
    assert_int_equal(nl, 4);
    assert_int_equal(count_source(f->st, "perseus", &lv), 3);
    assert_int_equal(lv, 4);
}

/* Key fields were cut silently at the size of their buffers (an nsdi optimizer at 31 bytes, a
 * perseus model at 127): two workloads that differ only after that became one run, their
 * levels stored together.  Each is refused naming file, line, column and limit, as is a run
 * name that would be cut (a perseus run lost its ' dp1tp1pp8'); nothing is written. */
static void test_long_fields(void **state)
{
    fixture *f = *state;
    char dir[700], p[1200], text[2048], x40[41], m120[121], m200[201], p300[301], n63[64], n64[65];
    memset(x40, 'x', 40), x40[40] = 0;
    memset(m120, 'm', 120), m120[120] = 0;
    memset(m200, 'm', 200), m200[200] = 0;
    memset(p300, 'p', 300), p300[300] = 0;
    memset(n63, 'n', 63), n63[63] = 0;
    memset(n64, 'n', 64), n64[64] = 0;
    snprintf(dir, sizeof dir, "%s/nsdi", f->dir);
    assert_int_equal(mkdir(dir, 0700), 0);
    static const char *const gpus[] = {"a40", "v100", "p100", "rtx6000"};
    const char *hdr = "dataset,network,batch_size,optimizer,power_limit,time_per_epoch,"
                      "average_power\n";
    for (int g = 0; g < 4; g++) {
        snprintf(p, sizeof p, "%s/summary_power_%s.csv", dir, gpus[g]);
        snprintf(text, sizeof text, "%scifar100,shufflenetv2,8,adam,200,10,150\n", hdr);
        pfi_test_put_text(p, text);
    }
    pfi_err e = {0};
    int nr, nl, lv;
    assert_int_equal(pfi_import_zeus_nsdi(f->st, dir, &nr, &nl, &e), PFI_OK);
    assert_int_equal(count_source(f->st, "zeus-nsdi", &lv), 4);
    struct {
        const char *row, *want;
    } nsdi[] = {
        {"cifar100,shufflenetv2,1024,adam%s1,200,20.0,180.0\n"
         "cifar100,shufflenetv2,1024,adam%s2,150,30.0,140.0\n",
         "summary_power_a40.csv line 3, column 'optimizer': 45 bytes, longer than the 31"},
        {"cifar100,%s,8,adam,200,10,150\n", "line 3, column 'network': 64 bytes, longer than "
                                            "the 63"},
        {"%s,shufflenetv2,8,adam,200,10,150\n", "line 3, column 'dataset': 64 bytes"},
    };
    snprintf(p, sizeof p, "%s/summary_power_a40.csv", dir);
    for (size_t i = 0; i < sizeof nsdi / sizeof nsdi[0]; i++) {
        char row[512];
        const char *arg = i == 0 ? x40 : n64;
        snprintf(row, sizeof row, nsdi[i].row, arg, arg);
        snprintf(text, sizeof text, "%scifar100,shufflenetv2,8,adam,200,10,150\n%s", hdr, row);
        pfi_test_put_text(p, text);
        int rc = pfi_import_zeus_nsdi(f->st, dir, &nr, &nl, &e);
        if (rc != PFI_EINVAL || !strstr(e.msg, nsdi[i].want))
            fail_msg("nsdi case %zu: rc %d, '%s'", i, rc, e.msg);
        assert_int_equal(count_source(f->st, "zeus-nsdi", &lv), 4);
        assert_int_equal(lv, 4);
    }
    /* Fields within their limits whose run name would not fit: refused as well. */
    snprintf(text, sizeof text, "%s%s,%s,8,adam,200,10,150\n", hdr, n63, n63);
    pfi_test_put_text(p, text);
    int rc = pfi_import_zeus_nsdi(f->st, dir, &nr, &nl, &e);
    if (rc != PFI_EINVAL || !strstr(e.msg, "line 2: the run name 'zeus-nsdi/A40/nnn") ||
        !strstr(e.msg, "longer than the 127 a run name holds"))
        fail_msg("nsdi name: rc %d, '%s'", rc, e.msg);
    /* The longest that fit are kept whole. */
    snprintf(text, sizeof text, "%scifar100,net,8,%.31s,200,10,150\n", hdr, x40);
    pfi_test_put_text(p, text);
    pfi_import_set set = {0};
    if (pfi_import_zeus_nsdi_file(p, "A40", "summary_power_a40.csv", &set, &e) != PFI_OK)
        fail_msg("%s", e.msg);
    assert_int_equal((int)strlen(strrchr(set.v[0].run.name, ' ') + 1), 31);
    pfi_import_set_free(&set);

    const char *phdr = "model_name,partition_method,batch_size,dp,tp,pp,microbatch_size,"
                       "num_microbatches,power_limit_0,time,energy\n";
    struct {
        const char *model, *partition, *want;
    } per[] = {
        {m200, "uniform", "line 2, column 'model_name': 202 bytes, longer than the 127"},
        {"gpt3-xl", p300, "line 2, column 'partition_method': 300 bytes, longer than the 255"},
        {m120, "uniform", "line 2: the run name 'perseus/A40/mmm"},
    };
    snprintf(p, sizeof p, "%s/zeus_global.csv", f->dir);
    for (size_t i = 0; i < sizeof per / sizeof per[0]; i++) {
        snprintf(text, sizeof text, "%s%s%s,%s,8,1,1,1,1,8,300,1.0,250\n"
                 "%s%s,%s,8,1,1,1,1,8,250,1.1,230\n", phdr, per[i].model, i ? "" : "-A",
                 per[i].partition, per[i].model, i ? "" : "-B", per[i].partition);
        pfi_test_put_text(p, text);
        rc = pfi_import_perseus_file(p, "A40", "zeus_global.csv", &set, &e);
        pfi_import_set_free(&set);
        if (rc != PFI_EINVAL || !strstr(e.msg, per[i].want))
            fail_msg("perseus case %zu: rc %d, '%s'", i, rc, e.msg);
    }
    snprintf(p, sizeof p, "%s/A40+%s+gpu0.csv", f->dir, m200);
    pfi_test_put_text(p, "start_time,window_name,elapsed_time,gpu0_energy\n"
                         "1,__GlobalPowerLimitOptimizer_300,30,6000\n");
    rc = pfi_import_zeus_plo_file(f->dir, strrchr(p, '/') + 1, &set, &e);
    pfi_import_set_free(&set);
    if (rc != PFI_EINVAL || !strstr(e.msg, "longer than the 31 or 127 bytes"))
        fail_msg("zeus-plo long model: rc %d, '%s'", rc, e.msg);
}

/* Writes a zeus-nsdi file of nruns runs of 2 levels each, every run's 200 W row before any
 * 150 W row (so each second row finds its run among all of them), into set. */
static void many_runs(const char *dir, int nruns, pfi_import_set *set)
{
    char p[1200];
    snprintf(p, sizeof p, "%s/summary_power_many.csv", dir);
    FILE *fp = fopen(p, "w");
    assert_non_null(fp);
    fputs("dataset,network,batch_size,optimizer,power_limit,time_per_epoch,average_power\n", fp);
    for (int cap = 200; cap >= 150; cap -= 50)
        for (int k = 1; k <= nruns; k++)
            fprintf(fp, "cifar100,shufflenetv2,%d,adam,%d,%d,%d\n", k, cap, 10 + k % 7,
                    cap - 20);
    assert_int_equal(fclose(fp), 0);
    pfi_err e = {0};
    if (pfi_import_zeus_nsdi_file(p, "A40", "summary_power_many.csv", set, &e) != PFI_OK)
        fail_msg("%s", e.msg);
    unlink(p);
}

static int count_steps(void *arg)
{
    ++*(long long *)arg;
    return 0;
}

/* SQLite's virtual-machine steps (in hundreds) of re-importing set into db, which holds it. */
static long long reimport_steps(const char *db, const pfi_import_set *set)
{
    pfi_store *st;
    pfi_err e = {0};
    assert_int_equal(pfi_store_open(db, PFI_STORE_CREATE, &st, &e), PFI_OK);
    assert_int_equal(pfi_import_set_write(st, set, NULL, NULL, &e), PFI_OK);
    long long steps = 0;
    sqlite3_progress_handler(st->db, 100, count_steps, &steps);
    assert_int_equal(pfi_import_set_write(st, set, NULL, NULL, &e), PFI_OK);
    sqlite3_progress_handler(st->db, 0, NULL, NULL);
    pfi_store_close(st);
    return steps;
}

/* An import grows with its runs, not their square (counted, not timed): the rows of a file
 * found their run by a linear search, and a re-import looked each run up by scanning the whole
 * runs table (the partial index on source and name was not usable): both quadratic. */
static void test_import_scales(void **state)
{
    fixture *f = *state;
    pfi_import_set a = {0}, b = {0};
    many_runs(f->dir, 600, &a);
    many_runs(f->dir, 1200, &b);
    assert_int_equal(b.n, 1200);
    for (int k = 0; k < b.n; k++) {
        const pfi_run *r = &b.v[k].run;
        char want[PFI_NAME_MAX];
        snprintf(want, sizeof want, "zeus-nsdi/A40/shufflenetv2 cifar100 bs%d adam", k + 1);
        assert_string_equal(r->name, want);
        assert_int_equal(r->n_levels, 2);
        assert_true(r->levels[0].cap_w == 200 && r->levels[1].cap_w == 150);
        assert_true(fabs(r->levels[1].tput - 1.0 / (10 + (k + 1) % 7)) < 1e-12);
    }
    char db[700];
    snprintf(db, sizeof db, "%s/a.db", f->dir);
    long long sa = reimport_steps(db, &a);
    snprintf(db, sizeof db, "%s/b.db", f->dir);
    long long sb = reimport_steps(db, &b);
    /* twice the runs: about twice the steps (a scan per run made it 3.9 times) */
    if (sb > 5 * sa / 2)
        fail_msg("re-importing 1,200 runs took %lld00 SQLite steps, 600 runs %lld00: %.2f times",
                 sb, sa, (double)sb / sa);
    pfi_import_set_free(&a);
    pfi_import_set_free(&b);
}

/* The names check (sorted now) names the pair the pairwise one did: the first run that repeats
 * an earlier name, and the first run of that name. */
static void test_check_names_pair(void **state)
{
    (void)state;
    static const char *const names[] = {"a", "b", "c", "b", "a", "c", "b"};
    pfi_import_set set = {0};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        pfi_import_run *ir = pfi_import_set_add(&set);
        assert_non_null(ir);
        snprintf(ir->run.source, sizeof ir->run.source, "zeus-plo");
        snprintf(ir->run.name, sizeof ir->run.name, "%s", names[i]);
        snprintf(ir->origin, sizeof ir->origin, "origin%zu", i);
    }
    pfi_err e = {0};
    assert_int_equal(pfi_import_set_check_names(&set, &e), PFI_EINVAL);
    assert_string_equal(e.msg, "origin1 and origin3 both give run 'b' (one would replace the "
                               "other)");
    assert_int_equal(pfi_import_name_taken(&set, 3, "b"), 1);
    assert_int_equal(pfi_import_name_taken(&set, 1, "b"), 0);
    assert_int_equal(pfi_import_name_taken(&set, 7, "d"), 0);
    /* the same names from another source are other runs */
    snprintf(set.v[3].run.source, sizeof set.v[3].run.source, "perseus");
    assert_int_equal(pfi_import_set_check_names(&set, &e), PFI_EINVAL);
    assert_string_equal(e.msg, "origin0 and origin4 both give run 'a' (one would replace the "
                               "other)");
    pfi_import_set_free(&set);
}

/* dp x tp x pp was an int product: dp = tp = 65537 (4,295,098,369 GPUs) was stored as 131073
 * GPUs with its energy read per GPU of those, and 65536 x 65536 as 0 GPUs ("inf W per GPU").
 * A count past the jobs file's 10^6 is refused with the line and the three; 10^6 is kept. */
static void test_perseus_gpu_count(void **state)
{
    fixture *f = *state;
    struct {
        const char *dtp, *energy, *want;
    } cases[] = {
        {"65537,65537,1", "262146000", "line 2: dp 65537 x tp 65537 x pp 1 = 4295098369 GPUs, "
                                       "out of range (1 to 1000000 GPUs"},
        {"65536,65536,1", "262146000", "line 2: dp 65536 x tp 65536 x pp 1 = 4294967296 GPUs"},
        {"2000,1000,1", "400000000", "line 2: dp 2000 x tp 1000 x pp 1 = 2000000 GPUs"},
        {"1000,1000,1", "200000000", ""},
    };
    char p[1200], text[1024];
    snprintf(p, sizeof p, "%s/zeus_global.csv", f->dir);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(text, sizeof text, "model_name,partition_method,batch_size,dp,tp,pp,"
                 "microbatch_size,num_microbatches,power_limit_0,time,energy\n"
                 "bert-huge-uncased,uniform,8,%s,1,8,300,1.0,%s\n", cases[i].dtp, cases[i].energy);
        pfi_test_put_text(p, text);
        pfi_import_set set = {0};
        pfi_err e = {0};
        int rc = pfi_import_perseus_file(p, "A40", "zeus_global.csv", &set, &e);
        if (cases[i].want[0] ? rc != PFI_EINVAL || !strstr(e.msg, cases[i].want) : rc != PFI_OK)
            fail_msg("dp,tp,pp %s: rc %d, '%s'", cases[i].dtp, rc, rc ? e.msg : "accepted");
        if (!cases[i].want[0]) {
            assert_int_equal(set.v[0].run.n_gpus, 1000000);
            assert_true(fabs(set.v[0].run.levels[0].power_w - 200) < 1e-9);
        }
        pfi_import_set_free(&set);
    }
}

/* An export reads back as the stored doubles, in both formats (15 significant digits changed
 * 3,369 of the public data's 5,349 caps, powers and throughputs: 248.88729140209105 written
 * 248.887291402091), with the fewest digits that do so (300, not 300.00000000000000). */
static void test_export_exact(void **state)
{
    fixture *f = *state;
    pfi_import_set set = {0};
    many_runs(f->dir, 40, &set);
    set.v[0].run.levels[0].power_w = 248.88729140209105;
    set.v[1].run.levels[1].power_w = 0.1 * 1001;
    pfi_err e = {0};
    assert_int_equal(pfi_import_set_write(f->st, &set, NULL, NULL, &e), PFI_OK);
    pfi_import_set_free(&set);
    for (int fmt = PFI_EXPORT_CSV; fmt <= PFI_EXPORT_JSON; fmt++) {
        char *buf = NULL;
        size_t len = 0;
        FILE *out = open_memstream(&buf, &len);
        assert_int_equal(pfi_store_export(f->st, NULL, 0, fmt, out, &e), PFI_OK);
        fclose(out);
        assert_non_null(strstr(buf, fmt == PFI_EXPORT_CSV ? ",248.88729140209105,"
                                                          : "\"power_w\": 248.88729140209105,"));
        assert_non_null(strstr(buf, fmt == PFI_EXPORT_CSV ? ",200," : "\"cap_w\": 200.0,"));
        json_t *doc = NULL;
        if (fmt == PFI_EXPORT_JSON) {
            json_error_t je;
            assert_non_null(doc = json_loads(buf, 0, &je));
        }
        pfi_csv *c = NULL;
        FILE *in = fmemopen(buf, len, "r");
        if (fmt == PFI_EXPORT_CSV)
            assert_int_equal(pfi_csv_open_stream(in, "export", &c, &e), PFI_OK);
        pfi_run *run = malloc(sizeof *run);
        int rows = 0;
        for (;; rows++) {
            json_t *o = doc ? json_array_get(doc, (size_t)rows) : NULL;
            if (doc ? !o : pfi_csv_next(c, &e) != PFI_OK)
                break;
            double v[4];
            static const char *const cols[] = {"run_id", "level", "power_w", "throughput"};
            for (int k = 0; k < 4; k++) {
                if (doc)
                    v[k] = json_number_value(json_object_get(o, cols[k]));
                else
                    assert_int_equal(pfi_csv_double(c, pfi_csv_col(c, cols[k]), &v[k], &e),
                                     PFI_OK);
            }
            assert_int_equal(pfi_store_load_run(f->st, (long long)v[0], run, &e), PFI_OK);
            const pfi_level *l = &run->levels[(int)v[1]];
            if (v[2] != l->power_w || v[3] != l->tput)
                fail_msg("format %d, run %g level %g: %.17g %.17g read back, %.17g %.17g stored",
                         fmt, v[0], v[1], v[2], v[3], l->power_w, l->tput);
        }
        assert_int_equal(rows, 80);
        free(run);
        pfi_csv_close(c);
        fclose(in);
        json_decref(doc);
        free(buf);
    }
}

static void test_export(void **state)
{
    fixture *f = *state;
    if (!have_data("perseus-sosp24"))
        PFI_TEST_SKIP("public data absent\n");
    pfi_err e = {0};
    assert_int_equal(pfi_import_perseus(f->st, NULL, NULL, NULL, &e), PFI_OK);
    long long id;
    assert_int_equal(pfi_store_find_run(f->st, "perseus/A40/gpt3-2.7b dp1tp1pp8", &id, &e),
                     PFI_OK);
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    assert_int_equal(pfi_store_export(f->st, &id, 1, PFI_EXPORT_CSV, out, &e), PFI_OK);
    fclose(out);
    /* Header: exactly the documented columns, units in the names. */
    char *nl = strchr(buf, '\n');
    assert_non_null(nl);
    *nl = 0;
    char want[2048] = "";
    for (int i = 0; pfi_export_columns[i]; i++)
        snprintf(want + strlen(want), sizeof want - strlen(want), "%s%s", i ? "," : "",
                 pfi_export_columns[i]);
    assert_string_equal(buf, want);
    assert_non_null(strstr(buf, "cap_w") && strstr(buf, "samples_per_s"));
    int rows = 0;
    for (char *c = nl + 1; *c; c++)
        rows += *c == '\n';
    assert_int_equal(rows, 8);
    free(buf);

    buf = NULL;
    out = open_memstream(&buf, &len);
    assert_int_equal(pfi_store_export(f->st, &id, 1, PFI_EXPORT_JSON, out, &e), PFI_OK);
    fclose(out);
    json_error_t je;
    json_t *doc = json_loads(buf, 0, &je);
    free(buf);
    assert_non_null(doc);
    assert_int_equal(json_array_size(doc), 8);
    json_t *row0 = json_array_get(doc, 0);
    for (int i = 0; pfi_export_columns[i]; i++)
        assert_non_null(json_object_get(row0, pfi_export_columns[i]));
    /* and the reverse: the two formats have the same fields (the CSV lacked enforced_min_w) */
    const char *key;
    json_t *v;
    json_object_foreach(row0, key, v) {
        int found = 0;
        for (int i = 0; pfi_export_columns[i] && !found; i++)
            found = strcmp(pfi_export_columns[i], key) == 0;
        if (!found)
            fail_msg("the JSON export has '%s', the CSV has no such column", key);
    }
    assert_true(json_is_null(json_object_get(row0, "enforced_min_w")));
    assert_true(json_is_null(json_object_get(row0, "tokens_per_s")));
    assert_true(json_is_real(json_object_get(row0, "samples_per_s")));
    assert_string_equal(json_string_value(json_object_get(row0, "gpu_type")), "A40");
    assert_int_equal(json_integer_value(json_object_get(row0, "n_gpus")), 8);
    /* The first level is the 300 W baseline. */
    assert_true(fabs(json_real_value(json_object_get(row0, "rel_throughput")) - 1) < 1e-12);
    /* job_power_w is power_w x n_gpus. */
    assert_true(fabs(json_real_value(json_object_get(row0, "job_power_w")) /
                         (8 * json_real_value(json_object_get(row0, "power_w"))) -
                     1) < 1e-12);
    json_decref(doc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_perseus, setup, teardown),
        cmocka_unit_test_setup_teardown(test_zeus_nsdi, setup, teardown),
        cmocka_unit_test_setup_teardown(test_zeus_plo, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_input_leaves_store_unchanged, setup, teardown),
        cmocka_unit_test_setup_teardown(test_absurd_levels, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unprintable_names, setup, teardown),
        cmocka_unit_test_setup_teardown(test_plo_contradictions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_plo_names_unique, setup, teardown),
        cmocka_unit_test_setup_teardown(test_perseus_names_unique, setup, teardown),
        cmocka_unit_test_setup_teardown(test_long_fields, setup, teardown),
        cmocka_unit_test_setup_teardown(test_import_scales, setup, teardown),
        cmocka_unit_test(test_check_names_pair),
        cmocka_unit_test_setup_teardown(test_perseus_gpu_count, setup, teardown),
        cmocka_unit_test_setup_teardown(test_export_exact, setup, teardown),
        cmocka_unit_test_setup_teardown(test_export, setup, teardown),
    };
    return pfi_test_exit(cmocka_run_group_tests(tests, NULL, NULL));
}
