/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the Perseus row reader (store/perseus.h) that the importer and the simulator's
 * validation share: stage limits by their column's number whatever the header order (as in
 * the A40's zeus_local.csv), the one-limit rule of a ZeusGlobal file, errors naming the line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "store/csv.h"
#include "store/perseus.h"
#include "support/files.h"

/* Writes text to a fresh file under $PFI_TEST_TMP (or /tmp); path receives its name. */
static void write_file(const char *text, char *path, size_t n)
{
    const char *tmp = getenv("PFI_TEST_TMP");
    snprintf(path, n, "%s/pfi-perseus-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    FILE *f = pfi_test_mkstemp(path);
    assert_true(fputs(text, f) >= 0);
    assert_int_equal(fclose(f), 0);
}

#define HEAD "model_name,partition_method,batch_size,dp,tp,pp,microbatch_size,num_microbatches,"

static void test_local_rows(void **state)
{
    char path[512];
    write_file(HEAD "power_limit_0,power_limit_1,time,energy,power_limit_2,power_limit_3\n"
                    "gpt3-2.7b,\"custom:0,8,16,24,32\",512,1,1,4,4,128,175,200,12.5,15000,150.0,300\n",
               path, sizeof path);
    pfi_perseus *p;
    pfi_err e = {0};
    assert_int_equal(pfi_perseus_open(path, 0, &p, &e), PFI_OK);
    pfi_perseus_row r;
    assert_int_equal(pfi_perseus_next(p, &r, &e), PFI_OK);
    assert_string_equal(r.model, "gpt3-2.7b");
    assert_string_equal(r.partition, "custom:0,8,16,24,32");
    assert_int_equal(r.batch, 512);
    assert_int_equal(r.pp, 4);
    assert_int_equal(r.nmb, 128);
    assert_int_equal(r.line, 2);
    assert_true(r.time_s == 12.5 && r.energy_j == 15000);
    assert_true(r.limit_w[0] == 175 && r.limit_w[1] == 200 && r.limit_w[2] == 150 &&
                r.limit_w[3] == 300 && r.limit_w[4] == 0);
    assert_true(r.cap_w == 0); /* not read as a ZeusGlobal file */
    assert_int_equal(pfi_perseus_next(p, &r, &e), PFI_CSV_END);
    pfi_perseus_close(p);
    /* The same row is refused as a ZeusGlobal row: its stages differ. */
    assert_int_equal(pfi_perseus_open(path, PFI_PERSEUS_GLOBAL, &p, &e), PFI_OK);
    assert_int_equal(pfi_perseus_next(p, &r, &e), PFI_EINVAL);
    assert_non_null(strstr(e.msg, "line 2: power limits differ across stages (175 and 200 W)"));
    pfi_perseus_close(p);
    unlink(path);
}

static void test_global_rows(void **state)
{
    char path[512];
    write_file(HEAD "power_limit_0,power_limit_1,time,energy\n"
                    "bert,uniform_transformer,256,1,1,2,8,32,250,250,6.5,6500\n"
                    "bert,uniform_transformer,256,1,1,1,8,32,225,0,7,6000\n"
                    "bert,uniform_transformer,256,1,1,2,8,32,0,0,7,6000\n",
               path, sizeof path);
    pfi_perseus *p;
    pfi_err e = {0};
    assert_int_equal(pfi_perseus_open(path, PFI_PERSEUS_GLOBAL, &p, &e), PFI_OK);
    pfi_perseus_row r;
    assert_int_equal(pfi_perseus_next(p, &r, &e), PFI_OK);
    assert_true(r.cap_w == 250);
    assert_int_equal(pfi_perseus_next(p, &r, &e), PFI_OK);
    assert_true(r.cap_w == 225); /* an unused stage is 0 */
    assert_int_equal(pfi_perseus_next(p, &r, &e), PFI_EINVAL);
    assert_non_null(strstr(e.msg, "line 4: no power limit"));
    pfi_perseus_close(p);
    unlink(path);
}

static void test_bad_header(void **state)
{
    char path[512];
    pfi_perseus *p;
    pfi_err e = {0};
    write_file("model_name,time,energy,power_limit_0\nx,1,1,100\n", path, sizeof path);
    assert_int_equal(pfi_perseus_open(path, 0, &p, &e), PFI_EINVAL);
    assert_non_null(strstr(e.msg, "no column 'partition_method'"));
    assert_null(p);
    unlink(path);
    write_file(HEAD "time,energy\n", path, sizeof path);
    assert_int_equal(pfi_perseus_open(path, 0, &p, &e), PFI_EINVAL);
    assert_non_null(strstr(e.msg, "no power_limit_<i> columns"));
    unlink(path);
    assert_int_equal(pfi_perseus_open("/nonexistent/zeus_global.csv", 0, &p, &e), PFI_ENOENT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_local_rows),
        cmocka_unit_test(test_global_rows),
        cmocka_unit_test(test_bad_header),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
