/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the store: schema creation and migration, refusal of a newer schema, other layers'
 * migrations, the write/read round trip, telemetry downsampling, level atomicity across a
 * crash (a forked child killed before commit), and a locked database. */
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "store/export.h"
#include "store/schema.h"
#include "store/store.h"
#include "support/db_dir.h"

typedef pfi_test_db_dir fixture;

static int setup(void **state)
{
    return pfi_test_db_dir_setup(state, "pfi-store");
}

static int teardown(void **state)
{
    return pfi_test_db_dir_teardown(state);
}

static void raw_exec(const char *db, const char *sql)
{
    sqlite3 *h;
    assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
    assert_int_equal(sqlite3_exec(h, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(h);
}

static int raw_count(const char *db, const char *sql)
{
    sqlite3 *h;
    sqlite3_stmt *s;
    int n = -1;
    assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(h, sql, -1, &s, NULL), SQLITE_OK);
    if (sqlite3_step(s) == SQLITE_ROW)
        n = sqlite3_column_int(s, 0);
    sqlite3_finalize(s);
    sqlite3_close(h);
    return n;
}

static pfi_run header(const char *name)
{
    pfi_run r;
    memset(&r, 0, sizeof r);
    snprintf(r.name, sizeof r.name, "%s", name);
    snprintf(r.source, sizeof r.source, "sweep");
    snprintf(r.gpu_type, sizeof r.gpu_type, "H200-SXM");
    r.n_gpus = 8;
    r.unit = PFI_TOKENS_PER_S;
    r.min_limit_w = 200;
    r.max_limit_w = 700;
    r.default_limit_w = 700;
    snprintf(r.meta.model, sizeof r.meta.model, "llama-8b");
    snprintf(r.meta.family, sizeof r.meta.family, "llama");
    r.meta.moe = 0;
    r.meta.finetune = 0;
    r.meta.params_b = 8.0;
    r.meta.dp = 8;
    r.meta.tp = r.meta.pp = r.meta.ep = 1;
    r.meta.seq_len = 8192;
    r.meta.global_batch = 64;
    return r;
}

static pfi_level level(double cap, double power, double tput)
{
    pfi_level l;
    memset(&l, 0, sizeof l);
    l.cap_w = cap;
    l.enforced_w = cap;
    l.power_w = power;
    l.tput = tput;
    l.tput_lo = tput * 0.99;
    l.tput_hi = tput * 1.01;
    l.sm_clock_mhz = 1500;
    l.powercap_frac = 0.5;
    l.gpu_util = 1;
    l.sm_active = 0.8;
    l.tensor_active = 0.4;
    l.dram_active = NAN; /* missing must come back missing */
    l.nvlink_mibs = 1000;
    l.pcie_mibs = 10;
    l.t_start_s = 5;
    l.t_end_s = 65;
    l.n_samples = 600;
    return l;
}

static pfi_sample sample_at(double t, double power);

static void test_create_and_reopen(void **state)
{
    fixture *f = *state;
    pfi_store *st;
    pfi_err e = {0};
    assert_int_equal(pfi_store_open(f->db, 0, &st, &e), PFI_ENOENT);
    assert_non_null(strstr(e.msg, f->db));
    assert_int_equal(pfi_store_open(f->db, PFI_STORE_CREATE, &st, &e), PFI_OK);
    assert_int_equal(pfi_store_schema_version(st), PFI_STORE_SCHEMA_VERSION);
    pfi_store_close(st);
    assert_int_equal(raw_count(f->db, "PRAGMA user_version"), PFI_STORE_SCHEMA_VERSION);
    assert_int_equal(pfi_store_open(f->db, 0, &st, &e), PFI_OK);
    pfi_store_close(st);
    assert_int_equal(pfi_store_open(f->db, PFI_STORE_READONLY, &st, &e), PFI_OK);
    pfi_store_close(st);
}

/* A new store is its owner's alone: 0600 whatever the umask, its WAL and shared-memory files
 * too (runs name jobs and users). */
static void test_created_private(void **state)
{
    fixture *f = *state;
    pfi_store *st;
    pfi_err e = {0};
    mode_t old = umask(022);
    assert_int_equal(pfi_store_open(f->db, PFI_STORE_CREATE, &st, &e), PFI_OK);
    umask(old);
    const char *sfx[] = {"", "-wal", "-shm"};
    for (size_t i = 0; i < 3; i++) {
        char p[700];
        struct stat sb;
        snprintf(p, sizeof p, "%s%s", f->db, sfx[i]);
        if (stat(p, &sb) == 0 && (sb.st_mode & 0777) != 0600)
            fail_msg("%s is mode %03o", p, (unsigned)(sb.st_mode & 0777));
        if (i == 0)
            assert_int_equal(stat(p, &sb), 0);
    }
    pfi_store_close(st);
}

static void test_migrate_from_empty_file(void **state)
{
    fixture *f = *state;
    /* A file at version 0 (made by sqlite3, no tables) is brought up to date on open. */
    raw_exec(f->db, "CREATE TABLE unrelated(x); DROP TABLE unrelated;");
    assert_int_equal(raw_count(f->db, "PRAGMA user_version"), 0);
    pfi_store *st;
    pfi_err e = {0};
    /* Read-only cannot create the schema: a file without one is no store yet (pfi runs and
     * pfi index open read-only and say so, as for a missing file). */
    assert_int_equal(pfi_store_open(f->db, PFI_STORE_READONLY, &st, &e), PFI_ENOENT);
    assert_non_null(strstr(e.msg, "is empty"));
    assert_int_equal(raw_count(f->db, "PRAGMA user_version"), 0);
    assert_int_equal(pfi_store_open(f->db, 0, &st, &e), PFI_OK);
    pfi_store_close(st);
    assert_int_equal(raw_count(f->db, "PRAGMA user_version"), PFI_STORE_SCHEMA_VERSION);
    assert_int_equal(raw_count(f->db, "SELECT COUNT(*) FROM sqlite_master WHERE name IN "
                                      "('jobs','runs','levels','telemetry','schema_layers')"),
                     5);
}

static void test_newer_schema_refused(void **state)
{
    fixture *f = *state;
    pfi_store *st;
    pfi_err e = {0};
    assert_int_equal(pfi_store_open(f->db, PFI_STORE_CREATE, &st, &e), PFI_OK);
    pfi_store_close(st);
    raw_exec(f->db, "PRAGMA user_version = 99");
    assert_int_equal(pfi_store_open(f->db, 0, &st, &e), PFI_ESTATE);
    assert_null(st);
    assert_non_null(strstr(e.msg, "newer"));
    assert_non_null(strstr(e.msg, "99"));
    /* Nothing was changed by the refused open. */
    assert_int_equal(raw_count(f->db, "PRAGMA user_version"), 99);
}

static void test_not_a_database(void **state)
{
    fixture *f = *state;
    FILE *fp = fopen(f->db, "w");
    assert_non_null(fp);
    fputs("this is a text file, long enough to have a header of a hundred bytes or more, "
          "which SQLite reads first and then refuses.\n",
          fp);
    fclose(fp);
    pfi_store *st;
    pfi_err e = {0};
    assert_int_not_equal(pfi_store_open(f->db, 0, &st, &e), PFI_OK);
    assert_non_null(strstr(e.msg, "not a pfi database"));
}

static void test_layer_migrations(void **state)
{
    fixture *f = *state;
    pfi_store *st;
    pfi_err e = {0};
    assert_int_equal(pfi_store_open(f->db, PFI_STORE_CREATE, &st, &e), PFI_OK);
    const pfi_store_step steps[] = {
        {"CREATE TABLE serve_audit(id INTEGER PRIMARY KEY, what TEXT)"},
        {"ALTER TABLE serve_audit ADD COLUMN at TEXT"},
    };
    int v = -1;
    assert_int_equal(pfi_store_layer_version(st, "serve", &v, &e), PFI_OK);
    assert_int_equal(v, 0);
    assert_int_equal(pfi_store_migrate_layer(st, "serve", steps, 1, &e), PFI_OK);
    assert_int_equal(pfi_store_migrate_layer(st, "serve", steps, 2, &e), PFI_OK);
    assert_int_equal(pfi_store_migrate_layer(st, "serve", steps, 2, &e), PFI_OK); /* no-op */
    assert_int_equal(pfi_store_layer_version(st, "serve", &v, &e), PFI_OK);
    assert_int_equal(v, 2);
    /* An older build of that layer refuses the newer tables. */
    assert_int_equal(pfi_store_migrate_layer(st, "serve", steps, 1, &e), PFI_ESTATE);
    assert_non_null(strstr(e.msg, "newer"));
    /* A failing step rolls back the whole layer migration. */
    const pfi_store_step bad[] = {
        {"CREATE TABLE other_a(x)"},
        {"THIS IS NOT SQL"},
    };
    assert_int_not_equal(pfi_store_migrate_layer(st, "other", bad, 2, &e), PFI_OK);
    assert_non_null(strstr(e.msg, "'other'"));
    assert_int_equal(pfi_store_layer_version(st, "other", &v, &e), PFI_OK);
    assert_int_equal(v, 0);
    pfi_store_close(st);
    assert_int_equal(raw_count(f->db, "SELECT COUNT(*) FROM sqlite_master WHERE name='other_a'"),
                     0);
    /* The store's own version is untouched by layers. */
    assert_int_equal(raw_count(f->db, "PRAGMA user_version"), PFI_STORE_SCHEMA_VERSION);
}

static void test_round_trip(void **state)
{
    fixture *f = *state;
    pfi_store *st;
    pfi_err e = {0};
    assert_int_equal(pfi_store_open(f->db, PFI_STORE_CREATE, &st, &e), PFI_OK);
    const char *tags[] = {"owner=alice", "exp=pfi-1"};
    long long job, run, lid;
    assert_int_equal(pfi_store_create_job(st, "torchrun train.py", "{\"lr\": 0.001}", tags, 2,
                                          &job, &e),
                     PFI_OK);
    pfi_run h = header("sweep/llama-8b");
    assert_int_equal(pfi_store_create_run(st, job, &h, "sim", &run, &e), PFI_OK);
    const double caps[] = {700, 600, 500, 400};
    for (int i = 0; i < 4; i++) {
        pfi_level l = level(caps[i], caps[i] * 0.9, 1000.0 * (1 - 0.1 * i));
        assert_int_equal(pfi_store_level_begin(st, &e), PFI_OK);
        assert_int_equal(pfi_store_add_level(st, run, &l, &lid, &e), PFI_OK);
        assert_int_equal(pfi_store_level_commit(st, &e), PFI_OK);
    }
    assert_int_equal(pfi_store_finish_run(st, run, "done", &e), PFI_OK);

    pfi_run *r = malloc(sizeof *r);
    assert_int_equal(pfi_store_load_run(st, run, r, &e), PFI_OK);
    assert_int_equal(r->id, run);
    assert_string_equal(r->name, "sweep/llama-8b");
    assert_string_equal(r->gpu_type, "H200-SXM");
    assert_int_equal(r->n_gpus, 8);
    assert_int_equal(r->unit, PFI_TOKENS_PER_S);
    assert_true(r->default_limit_w == 700);
    assert_string_equal(r->meta.model, "llama-8b");
    assert_int_equal(r->meta.finetune, 0);
    assert_int_equal(r->meta.seq_len, 8192);
    assert_true(r->meta.params_b == 8.0);
    assert_int_equal(r->n_levels, 4);
    for (int i = 0; i < 4; i++) {
        pfi_level want = level(caps[i], caps[i] * 0.9, 1000.0 * (1 - 0.1 * i));
        const pfi_level *got = &r->levels[i];
        assert_true(got->cap_w == want.cap_w && got->power_w == want.power_w);
        assert_true(got->tput == want.tput && got->tput_lo == want.tput_lo);
        assert_true(got->sm_clock_mhz == 1500 && got->nvlink_mibs == 1000);
        assert_true(isnan(got->dram_active));
        assert_int_equal(got->n_samples, 600);
    }
    free(r);

    pfi_run_summary *list;
    int n;
    assert_int_equal(pfi_store_list_runs(st, &list, &n, &e), PFI_OK);
    assert_int_equal(n, 1);
    assert_string_equal(list[0].status, "done");
    assert_string_equal(list[0].backend, "sim");
    assert_string_equal(list[0].unit_label, "tokens/s");
    assert_int_equal(list[0].n_levels, 4);
    assert_true(list[0].t0 == 1000 && list[0].p0 == 630 && list[0].cap0_w == 700);
    assert_true(list[0].started[0] && list[0].ended[0]);
    free(list);

    /* The CSV export writes the simulated column true/false, as the JSON export does (it was
     * left empty, so simulated rows could not be told from real ones). */
    char *csv = NULL;
    size_t csv_len = 0;
    FILE *out = open_memstream(&csv, &csv_len);
    assert_int_equal(pfi_store_export(st, &run, 1, PFI_EXPORT_CSV, out, &e), PFI_OK);
    fclose(out);
    if (!strstr(csv, ",sim,true\n"))
        fail_msg("CSV export's backend,simulated: %s", csv);
    free(csv);

    long long id;
    assert_int_equal(pfi_store_find_run(st, "sweep/llama-8b", &id, &e), PFI_OK);
    assert_int_equal(id, run);
    assert_int_equal(pfi_store_find_run(st, "nope", &id, &e), PFI_ENOENT);
    assert_non_null(strstr(e.msg, "nope"));
    assert_int_equal(pfi_store_find_run(st, "12345", &id, &e), PFI_ENOENT);

    assert_int_equal(pfi_store_delete_run(st, run, &e), PFI_OK);
    assert_int_equal(pfi_store_load_run(st, run, &(pfi_run){0}, &e), PFI_ENOENT);
    pfi_store_close(st);
    assert_int_equal(raw_count(f->db, "SELECT COUNT(*) FROM levels"), 0);
    assert_int_equal(raw_count(f->db, "SELECT COUNT(*) FROM jobs"), 0);
}

/* A store written before levels had their own start and end (schema version 1) still opens:
 * it is brought to the current version, its old levels take their time from the span of their
 * telemetry, and a level added since takes it from its recorded start and end. */
static void test_level_times_and_v1_store(void **state)
{
    fixture *f = *state;
    char sql[8192];
    snprintf(sql, sizeof sql,
             "%s PRAGMA user_version = 1;"
             "INSERT INTO jobs(id, command) VALUES (1, 'train');"
             "INSERT INTO runs(id, job_id, name, source, backend, gpu_type, n_gpus, unit,"
             " unit_label, status) VALUES (1, 1, 'old', 'sweep', 'nvml', 'H200-SXM', 2,"
             " 'tokens/s', 'tokens/s', 'done');"
             "INSERT INTO levels(id, run_id, seq, cap_w, power_w, tput) VALUES"
             " (1, 1, 0, 700, 650, 1000);"
             "INSERT INTO telemetry(level_id, gpu, n, have, t_s, power_w) VALUES"
             " (1, 0, 10, 1, 10, 650), (1, 0, 10, 1, 11, 650), (1, 0, 10, 1, 12, 650);",
             pfi_store_schema_steps[0].sql);
    raw_exec(f->db, sql);
    assert_int_equal(raw_count(f->db, "PRAGMA user_version"), 1);
    pfi_store *st;
    pfi_err e = {0};
    /* Read-only (pfi runs, index, export) never upgrades, and says so: a mere listing had made
     * it version 2, which an older pfi sharing the file then refused. */
    assert_int_equal(pfi_store_open(f->db, PFI_STORE_READONLY, &st, &e), PFI_ESTATE);
    if (!strstr(e.msg, "schema version 1, older than") || !strstr(e.msg, "never upgrades"))
        fail_msg("read-only open of a version-1 store: '%s'", e.msg);
    assert_int_equal(raw_count(f->db, "PRAGMA user_version"), 1);
    assert_int_equal(pfi_store_open(f->db, 0, &st, &e), PFI_OK);
    assert_int_equal(pfi_store_schema_version(st), PFI_STORE_SCHEMA_VERSION);
    pfi_run *r = malloc(sizeof *r);
    assert_int_equal(pfi_store_load_run(st, 1, r, &e), PFI_OK);
    assert_int_equal(r->n_levels, 1);
    assert_true(r->levels[0].tput == 1000);
    assert_true(isnan(r->levels[0].began_s) && isnan(r->levels[0].ended_s));
    /* 3 bucket means 1 s apart: 3 s of telemetry */
    double dur[3];
    assert_int_equal(pfi_store_level_durations(st, 1, dur, 3, &e), PFI_OK);
    assert_true(fabs(dur[0] - 3.0) < 1e-9);
    assert_true(isnan(dur[1]));
    /* A level with its own times (telemetry too: the recorded times win), and a zeroed one. */
    pfi_level a = level(500, 480, 900), z = level(400, 390, 800);
    a.began_s = 100;
    a.ended_s = 142.5;
    z.began_s = z.ended_s = 0;
    long long lid;
    pfi_sample smp[3];
    for (int i = 0; i < 3; i++)
        smp[i] = sample_at(110 + i, 480);
    assert_int_equal(pfi_store_add_level(st, 1, &a, &lid, &e), PFI_OK);
    assert_int_equal(pfi_store_add_samples(st, lid, 0, smp, 3, 0, &e), PFI_OK);
    assert_int_equal(pfi_store_add_level(st, 1, &z, NULL, &e), PFI_OK);
    assert_int_equal(pfi_store_level_durations(st, 1, dur, 3, &e), PFI_OK);
    assert_true(fabs(dur[0] - 3.0) < 1e-9);
    assert_true(fabs(dur[1] - 42.5) < 1e-9);
    assert_true(isnan(dur[2]));
    assert_int_equal(pfi_store_load_run(st, 1, r, &e), PFI_OK);
    assert_true(r->levels[1].began_s == 100 && r->levels[1].ended_s == 142.5);
    assert_true(isnan(r->levels[2].began_s) && isnan(r->levels[2].ended_s));
    free(r);
    pfi_store_close(st);
    assert_int_equal(raw_count(f->db, "PRAGMA user_version"), PFI_STORE_SCHEMA_VERSION);
}

/* A store written before levels had their lowest enforced limit (schema version 2) is brought
 * to the current version: its old levels read it unknown, a level added since has its own, and
 * a zeroed one (an import, a test) unknown rather than 0 W. */
static void test_enforced_min_and_v2_store(void **state)
{
    fixture *f = *state;
    char sql[8192];
    snprintf(sql, sizeof sql,
             "%s %s PRAGMA user_version = 2;"
             "INSERT INTO jobs(id, command) VALUES (1, 'train');"
             "INSERT INTO runs(id, job_id, name, source, backend, gpu_type, n_gpus, unit,"
             " unit_label, status) VALUES (1, 1, 'old', 'sweep', 'nvml', 'H200-SXM', 8,"
             " 'tokens/s', 'tokens/s', 'done');"
             "INSERT INTO levels(id, run_id, seq, cap_w, enforced_w, power_w, tput) VALUES"
             " (1, 1, 0, 700, 668.75, 650, 1000);",
             pfi_store_schema_steps[0].sql, pfi_store_schema_steps[1].sql);
    raw_exec(f->db, sql);
    pfi_store *st;
    pfi_err e = {0};
    assert_int_equal(pfi_store_open(f->db, 0, &st, &e), PFI_OK);
    assert_int_equal(pfi_store_schema_version(st), PFI_STORE_SCHEMA_VERSION);
    pfi_level a = level(560, 540, 900), z = level(420, 410, 800);
    a.enforced_w = 546.25;
    a.enforced_min_w = 450;
    assert_int_equal(pfi_store_add_level(st, 1, &a, NULL, &e), PFI_OK);
    assert_int_equal(pfi_store_add_level(st, 1, &z, NULL, &e), PFI_OK);
    pfi_run *r = malloc(sizeof *r);
    assert_int_equal(pfi_store_load_run(st, 1, r, &e), PFI_OK);
    assert_int_equal(r->n_levels, 3);
    assert_true(r->levels[0].enforced_w == 668.75 && isnan(r->levels[0].enforced_min_w));
    assert_true(r->levels[1].enforced_w == 546.25 && r->levels[1].enforced_min_w == 450);
    assert_true(isnan(r->levels[2].enforced_min_w));
    free(r);
    pfi_store_close(st);
    assert_int_equal(raw_count(f->db, "PRAGMA user_version"), PFI_STORE_SCHEMA_VERSION);
}

static void test_bad_writes(void **state)
{
    fixture *f = *state;
    pfi_store *st;
    pfi_err e = {0};
    long long job, run;
    assert_int_equal(pfi_store_open(f->db, PFI_STORE_CREATE, &st, &e), PFI_OK);
    const char *bad_tag[] = {"novalue"};
    assert_int_equal(pfi_store_create_job(st, "x", NULL, bad_tag, 1, &job, &e), PFI_EINVAL);
    assert_non_null(strstr(e.msg, "novalue"));
    assert_int_equal(pfi_store_create_job(st, "x", "[1,2]", NULL, 0, &job, &e), PFI_EINVAL);
    assert_int_equal(pfi_store_create_job(st, "x", NULL, NULL, 0, &job, &e), PFI_OK);
    pfi_run h = header("r");
    h.n_gpus = 0;
    assert_int_equal(pfi_store_create_run(st, job, &h, "sim", &run, &e), PFI_EINVAL);
    h = header("r");
    assert_int_equal(pfi_store_create_run(st, job, &h, "sim", &run, &e), PFI_OK);
    pfi_level l = level(NAN, 1, 1);
    assert_int_equal(pfi_store_add_level(st, run, &l, NULL, &e), PFI_EINVAL);
    l = level(500, 400, 100);
    assert_int_equal(pfi_store_add_level(st, run + 100, &l, NULL, &e), PFI_ENOENT);
    assert_int_equal(pfi_store_finish_run(st, run + 100, "done", &e), PFI_ENOENT);
    assert_int_equal(pfi_store_level_commit(st, &e), PFI_ESTATE);

    /* A run name (a sweep's --name) that JSON cannot carry or that holds terminal escapes is
     * refused when the run is written, not dropped from JSON or printed raw later. */
    const char *names[] = {"net\xff", "net\033[2J", "two\nlines", "del\x7f"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        h = header(names[i]);
        assert_int_equal(pfi_store_create_run(st, job, &h, "sim", &run, &e), PFI_EINVAL);
        assert_non_null(strstr(e.msg, "run name"));
    }
    h = header("r2");
    snprintf(h.meta.model, sizeof h.meta.model, "m\033]0;t\007");
    assert_int_equal(pfi_store_create_run(st, job, &h, "sim", &run, &e), PFI_EINVAL);
    assert_non_null(strstr(e.msg, "model"));
    h = header("r\xc3\xa9seau \xf0\x9f\x9a\x80");
    assert_int_equal(pfi_store_create_run(st, job, &h, "sim", &run, &e), PFI_OK);
    pfi_store_close(st);
}

/* A store written before names were checked may hold one that is not UTF-8 or holds terminal
 * escapes: every reader shows the bytes as '?' (its JSON export wrote rows without run_name:
 * jansson refused the text and json_object_set_new dropped the key). */
static void test_old_unprintable_name_shown(void **state)
{
    fixture *f = *state;
    pfi_store *st;
    pfi_err e = {0};
    long long job, run;
    assert_int_equal(pfi_store_open(f->db, PFI_STORE_CREATE, &st, &e), PFI_OK);
    assert_int_equal(pfi_store_create_job(st, "x", NULL, NULL, 0, &job, &e), PFI_OK);
    pfi_run h = header("net");
    assert_int_equal(pfi_store_create_run(st, job, &h, "sim", &run, &e), PFI_OK);
    pfi_level l = level(700, 630, 1000);
    assert_int_equal(pfi_store_add_level(st, run, &l, NULL, &e), PFI_OK);
    assert_int_equal(pfi_store_finish_run(st, run, "done", &e), PFI_OK);
    pfi_store_close(st);
    raw_exec(f->db, "UPDATE runs SET name = CAST(X'6E6574FF' AS TEXT)");

    assert_int_equal(pfi_store_open(f->db, 0, &st, &e), PFI_OK);
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    assert_int_equal(pfi_store_export(st, &run, 1, PFI_EXPORT_JSON, out, &e), PFI_OK);
    fclose(out);
    assert_non_null(strstr(buf, "\"run_name\": \"net?\""));
    free(buf);
    pfi_store_close(st);
    raw_exec(f->db, "UPDATE runs SET name = CAST(X'6E65741B5B324A' AS TEXT)"); /* net ESC[2J */
    assert_int_equal(pfi_store_open(f->db, 0, &st, &e), PFI_OK);
    pfi_run_summary *v = NULL;
    int n = 0;
    assert_int_equal(pfi_store_list_runs(st, &v, &n, &e), PFI_OK);
    assert_int_equal(n, 1);
    assert_string_equal(v[0].name, "net?[2J");
    free(v);
    pfi_run r;
    assert_int_equal(pfi_store_load_run(st, run, &r, &e), PFI_OK);
    assert_string_equal(r.name, "net?[2J");
    pfi_store_close(st);
}

static pfi_sample sample_at(double t, double power)
{
    pfi_sample s;
    pfi_sample_clear(&s);
    s.t_s = t;
    s.have = PFI_F_POWER | PFI_F_SM_CLOCK | PFI_F_REASONS;
    s.power_w = power;
    s.sm_clock_mhz = 1000 + power;
    s.clock_reasons = power > 450 ? PFI_REASON_SW_POWERCAP : 0;
    return s;
}

static void test_telemetry_downsampling(void **state)
{
    fixture *f = *state;
    pfi_store *st;
    pfi_err e = {0};
    long long job, run, lid;
    assert_int_equal(pfi_store_open(f->db, PFI_STORE_CREATE, &st, &e), PFI_OK);
    assert_int_equal(pfi_store_create_job(st, NULL, NULL, NULL, 0, &job, &e), PFI_OK);
    pfi_run h = header("tele");
    assert_int_equal(pfi_store_create_run(st, job, &h, "sim", &run, &e), PFI_OK);
    pfi_level l = level(700, 600, 1000);
    pfi_sample s[100];
    /* 10 s at 10 Hz; power steps 400 / 500 each second. */
    for (int i = 0; i < 100; i++)
        s[i] = sample_at(0.1 * i, (i / 10) % 2 ? 500 : 400);
    assert_int_equal(pfi_store_level_begin(st, &e), PFI_OK);
    assert_int_equal(pfi_store_add_level(st, run, &l, &lid, &e), PFI_OK);
    assert_int_equal(pfi_store_add_samples(st, lid, 0, s, 100, 1.0 - 1e-9, &e), PFI_OK);
    assert_int_equal(pfi_store_add_samples(st, lid, 1, s, 100, 0, &e), PFI_OK);
    assert_int_equal(pfi_store_add_samples(st, lid + 99, 0, s, 1, 0, &e), PFI_ENOENT);
    assert_int_equal(pfi_store_level_commit(st, &e), PFI_OK);

    pfi_telemetry_row *rows;
    int n;
    assert_int_equal(pfi_store_load_telemetry(st, run, 0, &rows, &n, &e), PFI_OK);
    assert_int_equal(n, 10 + 100);
    for (int i = 0; i < 10; i++) {
        const pfi_telemetry_row *r = &rows[i];
        assert_int_equal(r->gpu, 0);
        assert_int_equal(r->level, 0);
        double want = i % 2 ? 500 : 400;
        assert_true(fabs(r->s.power_w - want) < 1e-9);
        assert_true(fabs(r->s.t_s - (i + 0.45)) < 1e-9);
        assert_true(r->s.have & PFI_F_POWER);
        assert_false(r->s.have & PFI_F_TENSOR);
        assert_true(isnan(r->s.tensor_active));
        assert_int_equal(r->s.clock_reasons, i % 2 ? PFI_REASON_SW_POWERCAP : 0);
    }
    assert_int_equal(rows[10].gpu, 1);
    assert_true(rows[10].s.power_w == 400 && rows[10].s.t_s == 0);
    free(rows);
    assert_int_equal(pfi_store_load_telemetry(st, run, 3, &rows, &n, &e), PFI_OK);
    assert_int_equal(n, 0);
    free(rows);
    pfi_store_close(st);
}

/* The child writes two levels, commits the first, and is killed with SIGKILL in the middle of
 * the second (level row and telemetry written, no commit). */
static void crash_child(const char *db, long long run)
{
    pfi_store *st;
    pfi_err e = {0};
    if (pfi_store_open(db, 0, &st, &e) != PFI_OK)
        _exit(10);
    long long lid;
    pfi_level a = level(700, 650, 1000), b = level(500, 480, 800);
    pfi_sample s[50];
    for (int i = 0; i < 50; i++)
        s[i] = sample_at(0.1 * i, 480);
    if (pfi_store_level_begin(st, &e) || pfi_store_add_level(st, run, &a, &lid, &e) ||
        pfi_store_add_samples(st, lid, 0, s, 50, 0, &e) || pfi_store_level_commit(st, &e))
        _exit(11);
    if (pfi_store_level_begin(st, &e) || pfi_store_add_level(st, run, &b, &lid, &e) ||
        pfi_store_add_samples(st, lid, 0, s, 50, 0, &e))
        _exit(12);
    kill(getpid(), SIGKILL);
    _exit(13);
}

static void test_crash_mid_level(void **state)
{
    fixture *f = *state;
    pfi_store *st;
    pfi_err e = {0};
    long long job, run;
    assert_int_equal(pfi_store_open(f->db, PFI_STORE_CREATE, &st, &e), PFI_OK);
    assert_int_equal(pfi_store_create_job(st, "train", NULL, NULL, 0, &job, &e), PFI_OK);
    pfi_run h = header("crash");
    assert_int_equal(pfi_store_create_run(st, job, &h, "sim", &run, &e), PFI_OK);
    pfi_store_close(st);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        crash_child(f->db, run);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

    assert_int_equal(pfi_store_open(f->db, 0, &st, &e), PFI_OK);
    pfi_run *r = malloc(sizeof *r);
    assert_int_equal(pfi_store_load_run(st, run, r, &e), PFI_OK);
    assert_int_equal(r->n_levels, 1);
    assert_true(r->levels[0].cap_w == 700);
    free(r);
    pfi_telemetry_row *rows;
    int n;
    assert_int_equal(pfi_store_load_telemetry(st, run, -1, &rows, &n, &e), PFI_OK);
    assert_int_equal(n, 50);
    free(rows);
    pfi_run_summary sum;
    assert_int_equal(pfi_store_run_summary(st, run, &sum, &e), PFI_OK);
    assert_string_equal(sum.status, "running"); /* died: never finished */
    /* The next level after the crash gets the next free position, not a hole. */
    pfi_level c = level(400, 390, 700);
    assert_int_equal(pfi_store_add_level(st, run, &c, NULL, &e), PFI_OK);
    pfi_store_close(st);
    assert_int_equal(raw_count(f->db, "SELECT MAX(seq) FROM levels"), 1);
}

static void test_locked(void **state)
{
    fixture *f = *state;
    pfi_store *a, *b;
    pfi_err e = {0};
    long long job, run;
    assert_int_equal(pfi_store_open(f->db, PFI_STORE_CREATE, &a, &e), PFI_OK);
    assert_int_equal(pfi_store_open(f->db, 0, &b, &e), PFI_OK);
    pfi_store_set_busy_timeout(b, 20);
    assert_int_equal(pfi_store_create_job(a, NULL, NULL, NULL, 0, &job, &e), PFI_OK);
    pfi_run h = header("lock");
    assert_int_equal(pfi_store_create_run(a, job, &h, "sim", &run, &e), PFI_OK);
    assert_int_equal(pfi_store_level_begin(a, &e), PFI_OK);
    assert_int_equal(pfi_store_level_begin(b, &e), PFI_EBUSY);
    assert_non_null(strstr(e.msg, "locked"));
    assert_non_null(strstr(e.msg, f->db));
    /* WAL: reading while the other connection writes works. */
    pfi_run_summary *list;
    int n;
    assert_int_equal(pfi_store_list_runs(b, &list, &n, &e), PFI_OK);
    assert_int_equal(n, 1);
    free(list);
    pfi_store_level_abort(a);
    assert_int_equal(pfi_store_level_begin(b, &e), PFI_OK);
    assert_int_equal(pfi_store_level_commit(b, &e), PFI_OK);
    pfi_store_close(a);
    pfi_store_close(b);
}

static void test_batch(void **state)
{
    fixture *f = *state;
    pfi_store *st;
    pfi_err e = {0};
    long long job, run;
    assert_int_equal(pfi_store_open(f->db, PFI_STORE_CREATE, &st, &e), PFI_OK);
    assert_int_equal(pfi_store_batch_begin(st, &e), PFI_OK);
    assert_int_equal(pfi_store_create_job(st, NULL, NULL, NULL, 0, &job, &e), PFI_OK);
    pfi_run h = header("batched");
    assert_int_equal(pfi_store_create_run(st, job, &h, "sim", &run, &e), PFI_OK);
    pfi_level a = level(700, 650, 1000), b = level(600, 560, 900);
    assert_int_equal(pfi_store_level_begin(st, &e), PFI_OK);
    assert_int_equal(pfi_store_level_begin(st, &e), PFI_ESTATE);
    assert_int_equal(pfi_store_add_level(st, run, &a, NULL, &e), PFI_OK);
    assert_int_equal(pfi_store_batch_commit(st, &e), PFI_ESTATE); /* level still open */
    assert_int_equal(pfi_store_level_commit(st, &e), PFI_OK);
    assert_int_equal(pfi_store_level_begin(st, &e), PFI_OK);
    assert_int_equal(pfi_store_add_level(st, run, &b, NULL, &e), PFI_OK);
    pfi_store_level_abort(st); /* the batch goes on without it */
    assert_int_equal(pfi_store_batch_commit(st, &e), PFI_OK);
    pfi_run *r = malloc(sizeof *r);
    assert_int_equal(pfi_store_load_run(st, run, r, &e), PFI_OK);
    assert_int_equal(r->n_levels, 1);
    /* An aborted batch leaves nothing. */
    assert_int_equal(pfi_store_batch_begin(st, &e), PFI_OK);
    h = header("dropped");
    assert_int_equal(pfi_store_create_run(st, job, &h, "sim", &run, &e), PFI_OK);
    assert_int_equal(pfi_store_level_begin(st, &e), PFI_OK);
    assert_int_equal(pfi_store_add_level(st, run, &a, NULL, &e), PFI_OK);
    pfi_store_batch_abort(st);
    long long id;
    assert_int_equal(pfi_store_find_run(st, "dropped", &id, &e), PFI_ENOENT);
    /* An import inside a batch is part of it; one that fails inside a batch leaves the batch
     * as it was (a savepoint). */
    assert_int_equal(pfi_store_batch_begin(st, &e), PFI_OK);
    h = header("kept");
    assert_int_equal(pfi_store_create_run(st, job, &h, "sim", &run, &e), PFI_OK);
    char nowhere[700];
    snprintf(nowhere, sizeof nowhere, "%s/no-such-data", f->dir);
    assert_int_equal(pfi_import_all(st, nowhere, NULL, NULL, &e), PFI_ENOENT);
    assert_int_equal(pfi_store_delete_run(st, run + 1000, &e), PFI_ENOENT);
    assert_int_equal(pfi_store_batch_commit(st, &e), PFI_OK);
    assert_int_equal(pfi_store_find_run(st, "kept", &id, &e), PFI_OK);
    /* And the handle is usable after it. */
    assert_int_equal(pfi_store_level_begin(st, &e), PFI_OK);
    assert_int_equal(pfi_store_level_commit(st, &e), PFI_OK);
    free(r);
    pfi_store_close(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_create_and_reopen, setup, teardown),
        cmocka_unit_test_setup_teardown(test_created_private, setup, teardown),
        cmocka_unit_test_setup_teardown(test_migrate_from_empty_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_newer_schema_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_a_database, setup, teardown),
        cmocka_unit_test_setup_teardown(test_layer_migrations, setup, teardown),
        cmocka_unit_test_setup_teardown(test_level_times_and_v1_store, setup, teardown),
        cmocka_unit_test_setup_teardown(test_enforced_min_and_v2_store, setup, teardown),
        cmocka_unit_test_setup_teardown(test_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_writes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_old_unprintable_name_shown, setup, teardown),
        cmocka_unit_test_setup_teardown(test_telemetry_downsampling, setup, teardown),
        cmocka_unit_test_setup_teardown(test_crash_mid_level, setup, teardown),
        cmocka_unit_test_setup_teardown(test_locked, setup, teardown),
        cmocka_unit_test_setup_teardown(test_batch, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
