/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the jobs file of `pfi allocate` (src/store/jobs_file.c, codec.c) and of the cap grid's
 * bounds (core/alloc.c): every value out of range is refused with a message naming the job and
 * the field, and nothing is allocated on a step far above the caps. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "core/alloc.h"
#include "core/alloc_set.h"
#include "core/policy.h"
#include "store/codec.h"
#include "store/jobs.h"
#include "util/json_fast.h"
#include "util/json_items.h"

#define CURVE "\"curve\":{\"cap_w\":[300,500,700],\"tput\":[60,90,100]}"

static char path[600];

static void write_jobs(const char *text)
{
    const char *base = getenv("PFI_TEST_TMP");
    snprintf(path, sizeof path, "%s/jobs-%ld.json", base && *base ? base : "/tmp", (long)getpid());
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static int parse(const char *text, pfi_err *e)
{
    write_jobs(text);
    pfi_alloc_set s;
    int rc = pfi_jobs_file_load(path, 0, &s, e);
    pfi_alloc_set_free(&s);
    unlink(path);
    return rc;
}

/* text loaded through a FIFO (fifo 1) or stdin given as "-" (0), as a shell pipes it: a child
 * writes it.  *n: jobs read. */
static int parse_piped(const char *text, int fifo, pfi_err *e, int *n)
{
    const char *base = getenv("PFI_TEST_TMP");
    char fp[600];
    snprintf(fp, sizeof fp, "%s/jobs-%ld.fifo", base && *base ? base : "/tmp", (long)getpid());
    int fds[2] = {-1, -1}, saved = -1;
    if (fifo) {
        unlink(fp);
        assert_int_equal(mkfifo(fp, 0600), 0);
    } else {
        assert_int_equal(pipe(fds), 0);
        saved = dup(0);
        assert_int_equal(dup2(fds[0], 0), 0);
        close(fds[0]);
    }
    fflush(NULL);
    pid_t w = fork();
    assert_true(w >= 0);
    if (w == 0) {
        int fd = fifo ? open(fp, O_WRONLY) : fds[1];
        size_t len = strlen(text);
        _exit(fd >= 0 && write(fd, text, len) == (ssize_t)len ? 0 : 1);
    }
    if (!fifo)
        close(fds[1]);
    pfi_alloc_set s;
    int rc = pfi_jobs_file_load(fifo ? fp : "-", 0, &s, e);
    *n = rc == PFI_OK ? s.n : 0;
    pfi_alloc_set_free(&s);
    int st;
    waitpid(w, &st, 0);
    if (fifo) {
        unlink(fp);
    } else {
        clearerr(stdin);
        dup2(saved, 0);
        close(saved);
    }
    return rc;
}

/* A file piped in (a FIFO, `--jobs -`) gets what the same file gets: the stream drained the
 * pipe, and the whole-file read that tells a bad file's error then read nothing ("'[' or '{'
 * expected" at line 1, whatever and wherever the error), and refused a valid file the stream
 * hands to it. */
static void test_piped_same_as_file(void **state)
{
    (void)state;
    char deep[4200] = "{\"note\":";
    for (int i = 0; i < 1000; i++)
        strcat(deep, "[");
    for (int i = 0; i < 1000; i++)
        strcat(deep, "]");
    strcat(deep, ",\"jobs\":[{\"id\":\"a\",\"gpus\":1," CURVE "}]}");
    const char *texts[] = {
        "{\"jobs\":[{\"id\":\"a\",\"gpus\":1," CURVE "},\n{\"id\":\"b\",\"gpus\":2," CURVE "}]}",
        "{\"jobs\":[{\"id\":\"a\",\"gpus\":1," CURVE "},\n{\"id\":\"b\",\"gpus\":2,",
        "{\"jobs\":[]}",
        "{\"jobs\":[{\"id\":\"a\",\"gpus\":1,\n\"gpus\":2," CURVE "}]}",
        "{\"jobs\":[{\"id\":\"a\",\"gpus\":0," CURVE "}]}",
        deep,
    };
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
        pfi_err ef = {0};
        write_jobs(texts[i]);
        pfi_alloc_set s;
        int rf = pfi_jobs_file_load(path, 0, &s, &ef), nf = rf == PFI_OK ? s.n : 0;
        pfi_alloc_set_free(&s);
        unlink(path);
        /* the message past the file's name */
        const char *tail = strstr(ef.msg, path) ? strstr(ef.msg, path) + strlen(path) : ef.msg;
        for (int fifo = 0; fifo < 2; fifo++) {
            pfi_err ep = {0};
            int n, rp = parse_piped(texts[i], fifo, &ep, &n);
            if (rp != rf || n != nf || (rf != PFI_OK && !strstr(ep.msg, tail)))
                fail_msg("text %zu, %s: %d (%d jobs) '%s'; from a file %d (%d jobs) '%s'", i,
                         fifo ? "a FIFO" : "stdin", rp, n, ep.msg, rf, nf, ef.msg);
            if (!fifo && rf != PFI_OK && strstr(ef.msg, path) && !strstr(ep.msg, "<stdin>"))
                fail_msg("stdin's error does not say <stdin>: %s", ep.msg);
        }
    }
}

static void test_good_file(void **state)
{
    const char *t = "{\"jobs\":[{\"id\":\"a\",\"gpus\":8,\"weight\":2," CURVE "},"
                    "{\"id\":\"b\",\"gpus\":4,\"sla_max_slowdown\":0.1," CURVE "}]}";
    pfi_alloc_set s;
    pfi_err e = {0};
    write_jobs(t);
    assert_int_equal(pfi_jobs_file_load(path, 0, &s, &e), PFI_OK);
    unlink(path);
    assert_int_equal(s.n, 2);
    assert_string_equal(s.truth[0].id, "a");
    assert_int_equal(s.truth[0].n_gpus, 8);
    assert_true(s.truth[0].weight == 2);
    assert_int_equal(s.truth[1].n_points, 3);
    assert_true(s.truth[1].max_cap_w == 700);
    pfi_alloc_set_free(&s);
}

static void test_bad_values(void **state)
{
    const char *bad[][2] = {
        {"{\"id\":\"w0\",\"gpus\":1,\"weight\":0," CURVE "}", "weight"},
        {"{\"id\":\"wneg\",\"gpus\":1,\"weight\":-1," CURVE "}", "weight"},
        {"{\"id\":\"wbig\",\"gpus\":1,\"weight\":1e308," CURVE "}", "weight"},
        {"{\"id\":\"g\",\"gpus\":1e308," CURVE "}", "gpus"},
        {"{\"id\":\"g2\",\"gpus\":2.5," CURVE "}", "gpus"},
        {"{\"id\":\"p\",\"gpus\":1,\"p0_w\":1e308," CURVE "}", "p0_w"},
        {"{\"id\":\"mn\",\"gpus\":1,\"min_cap_w\":-5," CURVE "}", "min_cap_w"},
        {"{\"id\":\"t\",\"gpus\":1,\"t0\":1e308," CURVE "}", "t0"},
        {"{\"id\":\"s\",\"gpus\":1,\"sla_max_slowdown\":1e308," CURVE "}", "sla_max_slowdown"},
        /* 1 is out: the range says so (it said "at most 1", then the allocator refused 1) */
        {"{\"id\":\"s1\",\"gpus\":1,\"sla_max_slowdown\":1," CURVE "}", "from 0 and below 1"},
        /* an empty curve has no points: not "no curve" */
        {"{\"id\":\"e\",\"gpus\":1,\"curve\":{\"cap_w\":[],\"tput\":[]}}", "\"curve\" has no points"},
        {"{\"id\":\"ep\",\"gpus\":1," CURVE ",\"predicted_curve\":{\"cap_w\":[],\"tput\":[]}}",
         "\"predicted_curve\" has no points"},
        {"{\"id\":\"c\",\"gpus\":1,\"curve\":{\"cap_w\":[300,1e308],\"tput\":[1,2]}}", "point 2"},
        {"{\"id\":\"c2\",\"gpus\":1,\"curve\":{\"cap_w\":[300,500],\"tput\":[1,1e308]}}", "point 2"},
        /* An unknown field is refused, not ignored: a typo of sla_max_slowdown allocated the job
         * with no SLA at all, and a typo of weight at weight 1. */
        {"{\"id\":\"u\",\"gpus\":1,\"sla_max_slowdwn\":0.1," CURVE "}", "sla_max_slowdwn"},
        {"{\"id\":\"u2\",\"gpus\":1," CURVE ",\"wieght\":5}", "wieght"},
        /* Both curves are checked whatever the policy reads (oracle and equal took a
         * predicted_curve that pfi refused), and a curve's unknown member is named. */
        {"{\"id\":\"pc\",\"gpus\":1," CURVE ",\"predicted_curve\":{\"cap_w\":[300,200],"
         "\"tput\":[1,2]}}", "caps must increase"},
        {"{\"id\":\"pn\",\"gpus\":1," CURVE ",\"predicted_curve\":{\"cap_w\":[100,200],"
         "\"tput\":[1,-2]}}", "negative throughput"},
        {"{\"id\":\"cx\",\"gpus\":1,\"curve\":{\"cap_w\":[300,500],\"tput\":[1,2],"
         "\"draw_w\":[290,480]}}", "unknown member \"draw_w\""},
        /* An id that would drive the terminal in the table. */
        {"{\"id\":\"a\\u001b[31mRED\",\"gpus\":1," CURVE "}", "control character 0x1b"},
        /* One that would turn the row after it around (U+202E). */
        {"{\"id\":\"4000000\\u202e\",\"gpus\":1," CURVE "}", "bidi control U+202E"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[512];
        snprintf(text, sizeof text, "[%s]", bad[i][0]);
        pfi_err e = {0};
        if (parse(text, &e) != PFI_EINVAL)
            fail_msg("accepted: %s", text);
        if (!strstr(e.msg, bad[i][1]) || !strstr(e.msg, "job "))
            fail_msg("message for %s does not name the job and '%s': %s", text, bad[i][1],
                     e.msg);
    }
    pfi_err e = {0};
    assert_int_equal(parse("not json", &e), PFI_EINVAL);
    assert_non_null(strstr(e.msg, ".json:1"));
    /* A byte-order mark is named (jansson showed it, invisibly: "near ''"); a count past the
     * bound is told in full, not as 1e+06 against 1e+06. */
    assert_int_equal(parse("\xef\xbb\xbf{\"jobs\":[{\"id\":\"a\",\"gpus\":1," CURVE "}]}", &e),
                     PFI_EINVAL);
    assert_non_null(strstr(e.msg, "byte-order mark"));
    assert_int_equal(parse("[{\"id\":\"a\",\"gpus\":1000001," CURVE "}]", &e), PFI_EINVAL);
    assert_non_null(strstr(e.msg, "is 1000001: expected a number from 1 and at most 1000000"));
    assert_int_equal(parse("{\"jobs\":[]}", &e), PFI_EINVAL);
    /* an empty list is told as empty, not as missing (it said 'no "jobs" array') */
    assert_non_null(strstr(e.msg, "holds no job"));
    assert_int_equal(parse("[]", &e), PFI_EINVAL);
    assert_non_null(strstr(e.msg, "holds no job"));
    assert_int_equal(parse("{\"job\":[{}]}", &e), PFI_EINVAL);
    assert_non_null(strstr(e.msg, "no \"jobs\" array"));
    /* A member of the top object other than "jobs" and "note" is refused by name, before or
     * after the array: {"jobs": [...], "sla_max_slowdown": 0.1} was read as no SLA at all. */
    const char *top[][2] = {
        {"{\"jobs\":[{\"id\":\"a\",\"gpus\":1," CURVE "}],\"sla_max_slowdown\":0.1}",
         "\"sla_max_slowdown\""},
        {"{\"budget\":\"70%\",\"jobs\":[{\"id\":\"a\",\"gpus\":1," CURVE "}]}", "\"budget\""},
        {"{\"note\":\"x\",\"jobs\":[{\"id\":\"a\",\"gpus\":1," CURVE "}],\"x\":{}}", "\"x\""},
    };
    for (size_t i = 0; i < sizeof top / sizeof top[0]; i++) {
        if (parse(top[i][0], &e) != PFI_EINVAL)
            fail_msg("accepted: %s", top[i][0]);
        if (!strstr(e.msg, "unknown member") || !strstr(e.msg, top[i][1]))
            fail_msg("%s: %s", top[i][0], e.msg);
    }
    /* a note (pfi bench pergpu --jobs-out writes one) is taken anywhere, once */
    assert_int_equal(parse("{\"note\":\"n\",\"jobs\":[{\"id\":\"a\",\"gpus\":1," CURVE "}]}", &e),
                     PFI_OK);
    assert_int_equal(parse("{\"jobs\":[{\"id\":\"a\",\"gpus\":1," CURVE "}],\"note\":[1]}", &e),
                     PFI_OK);
    assert_int_equal(parse("{\"note\":1,\"jobs\":[{\"id\":\"a\",\"gpus\":1," CURVE "}],\"note\":2}",
                           &e),
                     PFI_EINVAL);
    assert_non_null(strstr(e.msg, "duplicate"));
}

/* A key given twice is refused, wherever it is (jansson keeps the last one): a second
 * "sla_max_slowdown" added at the end of a job silently replaced the first, as did a second
 * "jobs" array the whole list.  The daemons' APIs refuse repeated keys too.  Each case once
 * through the text decoder's shape (plain ASCII), once with an escape in the id (read through
 * a json_t), and once with a per_gpu table (never the text decoder). */
static void test_repeated_key(void **state)
{
    (void)state;
    const char *docs[][2] = {
        {"[{\"id\":\"a\",\"gpus\":1,\"sla_max_slowdown\":0.1," CURVE ",\"sla_max_slowdown\":0}]",
         "sla_max_slowdown"},
        {"[{\"id\":\"a\\u0062\",\"gpus\":1,\"weight\":5," CURVE ",\"weight\":1}]", "weight"},
        {"[{\"id\":\"a\",\"gpus\":2,\"gpus\":1," CURVE "}]", "gpus"},
        {"[{\"id\":\"a\",\"id\":\"b\",\"gpus\":1," CURVE "}]", "id"},
        {"[{\"id\":\"a\",\"gpus\":1,\"curve\":{\"cap_w\":[300,500],\"tput\":[1,2],"
         "\"tput\":[2,1]}}]", "tput"},
        {"{\"jobs\":[{\"id\":\"a\",\"gpus\":1," CURVE "}],\"jobs\":[{\"id\":\"b\",\"gpus\":2,"
         CURVE "}]}", "jobs"},
    };
    for (size_t i = 0; i < sizeof docs / sizeof docs[0]; i++) {
        pfi_err e = {0};
        if (parse(docs[i][0], &e) != PFI_EINVAL)
            fail_msg("accepted: %s", docs[i][0]);
        char want[64];
        snprintf(want, sizeof want, "'\"%s\"'", docs[i][1]);
        if (!strstr(e.msg, "duplicate") || !strstr(e.msg, want) || !strstr(e.msg, ".json:1"))
            fail_msg("message for %s does not name the line and the repeated key: %s",
                     docs[i][0], e.msg);
    }
    /* --per-gpu: the table's repeated key */
    write_jobs("[{\"id\":\"a\",\"gpus\":1,\"per_gpu\":{\"cap_w\":[300,500],\"tput\":[1,2],"
               "\"clock_mhz\":[[1000,1500]],\"clock_mhz\":[[1500,1000]]}}]");
    pfi_alloc_set s;
    pfi_err e = {0};
    assert_int_equal(pfi_jobs_file_load(path, 1, &s, &e), PFI_EINVAL);
    pfi_alloc_set_free(&s);
    unlink(path);
    assert_non_null(strstr(e.msg, "duplicate"));
    /* --per-gpu: a member the table does not have is refused by name (it was taken) */
    write_jobs("[{\"id\":\"a\",\"gpus\":1,\"per_gpu\":{\"cap_w\":[300,500],\"tput\":[1,2],"
               "\"clock_mhz\":[[1000,1500]],\"clocks_typo\":[1]}}]");
    assert_int_equal(pfi_jobs_file_load(path, 1, &s, &e), PFI_EINVAL);
    pfi_alloc_set_free(&s);
    unlink(path);
    if (!strstr(e.msg, "unknown member \"clocks_typo\"") || !strstr(e.msg, "clock_mhz"))
        fail_msg("per_gpu typo: %s", e.msg);
}

/* What a jobs file read whole gives (the reader before it streamed): the reference every
 * streamed read must equal, job for job and message for message. */
static int load_whole(const char *file, pfi_alloc_set *s, pfi_err *err)
{
    memset(s, 0, sizeof *s);
    json_error_t je;
    json_t *doc = json_load_file(file, JSON_REJECT_DUPLICATES, &je);
    if (!doc && je.line < 1)
        return pfi_err_set(err, PFI_EIO, "%s", je.text);
    FILE *f = fopen(file, "rb");
    unsigned char b3[3];
    int bom = f && fread(b3, 1, 3, f) == 3 && !memcmp(b3, "\xef\xbb\xbf", 3);
    if (f)
        fclose(f);
    if (!doc && bom)
        return pfi_err_set(err, PFI_EINVAL, "%s starts with a UTF-8 byte-order mark (some "
                           "Windows editors write one), which JSON does not take: save it "
                           "without one", file);
    if (!doc)
        return pfi_err_set(err, PFI_EINVAL, "%s:%d: %s", file, je.line, je.text);
    json_t *arr = json_is_array(doc) ? doc : json_object_get(doc, "jobs");
    int rc = PFI_OK;
    const char *other = NULL; /* a top member other than "jobs" and "note" */
    for (void *i = json_is_object(doc) ? json_object_iter(doc) : NULL; i && !other;
         i = json_object_iter_next(doc, i))
        if (strcmp(json_object_iter_key(i), "jobs") && strcmp(json_object_iter_key(i), "note"))
            other = json_object_iter_key(i);
    if (!json_is_array(arr)) {
        rc = pfi_err_set(err, PFI_EINVAL, "%s: no \"jobs\" array (docs/jobs-format.md)", file);
    } else if (other) {
        rc = pfi_err_set(err, PFI_EINVAL,
                         "%s: unknown member \"%s\" at the top: a jobs file holds \"jobs\" and an "
                         "optional \"note\"; per-job fields go in each job (docs/jobs-format.md)",
                         file, other);
    } else if (json_array_size(arr) == 0) {
        rc = pfi_err_set(err, PFI_EINVAL, "%s: the jobs array holds no job", file);
    } else {
        int n = (int)json_array_size(arr);
        assert_int_equal(pfi_alloc_set_init(s, n, 0), PFI_OK);
        for (int j = 0; rc == PFI_OK && j < n; j++)
            rc = pfi_job_json_decode(json_array_get(arr, (size_t)j), file, j, s, j, err);
    }
    json_decref(doc);
    return rc;
}

static void same_job(const pfi_alloc_job *a, const pfi_alloc_job *b)
{
    assert_string_equal(a->id, b->id);
    assert_true(a->n_gpus == b->n_gpus && a->n_points == b->n_points);
    assert_memory_equal(&a->min_cap_w, &b->min_cap_w, sizeof a->min_cap_w);
    assert_memory_equal(&a->max_cap_w, &b->max_cap_w, sizeof a->max_cap_w);
    assert_memory_equal(&a->p0_w, &b->p0_w, sizeof a->p0_w);
    assert_memory_equal(&a->t0, &b->t0, sizeof a->t0);
    assert_memory_equal(&a->sla, &b->sla, sizeof a->sla);
    assert_memory_equal(&a->weight, &b->weight, sizeof a->weight);
    for (int i = 0; i < a->n_points; i++)
        assert_true(a->cap_w[i] == b->cap_w[i] && a->tput[i] == b->tput[i]);
}

/* The elements of the file's "jobs" array streamed (util/json_items.h): when the stream reaches
 * its end, the file must be JSON that jansson reads whole, with those very elements.  1 when
 * it did, 0 when it handed the file back. */
static int streams(const char *file)
{
    pfi_json_items it;
    json_t *got = json_array(), *v;
    int rc = pfi_json_items_open(&it, file, "jobs", NULL);
    while (rc == PFI_JSON_ITEMS_ONE && (rc = pfi_json_items_next(&it, &v)) == PFI_JSON_ITEMS_ONE)
        json_array_append_new(got, v);
    pfi_json_items_close(&it);
    if (rc == PFI_JSON_ITEMS_END) {
        json_error_t je;
        json_t *doc = json_load_file(file, JSON_REJECT_DUPLICATES, &je);
        if (!doc)
            fail_msg("streamed to the end a file jansson refuses: %s", je.text);
        json_t *arr = json_is_array(doc) ? doc : json_object_get(doc, "jobs");
        if (!json_equal(arr, got))
            fail_msg("streamed elements differ from the whole document's");
        json_decref(doc);
    } else {
        assert_int_equal(rc, PFI_JSON_ITEMS_OTHER);
    }
    json_decref(got);
    return rc == PFI_JSON_ITEMS_END;
}

/* The file holding text (len bytes) read streamed and whole: the same code, message and jobs.
 * 1 when the streamed read went to the end without reading the file whole. */
static int same_as_whole(const char *text, size_t len)
{
    const char *base = getenv("PFI_TEST_TMP");
    snprintf(path, sizeof path, "%s/jobs-%ld.json", base && *base ? base : "/tmp", (long)getpid());
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, len, f), len);
    fclose(f);
    pfi_alloc_set a, b;
    pfi_err ea = {0}, eb = {0};
    int ra = pfi_jobs_file_load(path, 0, &a, &ea), rb = load_whole(path, &b, &eb);
    if (ra != rb || strcmp(ea.msg, eb.msg) != 0)
        fail_msg("streamed %d '%s', whole %d '%s' for (%zu bytes):\n%.*s", ra, ea.msg, rb, eb.msg,
                 len, (int)(len < 2000 ? len : 2000), text);
    if (ra == PFI_OK) {
        assert_int_equal(a.n, b.n);
        for (int j = 0; j < a.n; j++) {
            same_job(&a.truth[j], &b.truth[j]);
            same_job(&a.pred[j], &b.pred[j]);
            assert_memory_equal(&a.pfi30[j], &b.pfi30[j], sizeof a.pfi30[j]);
        }
    }
    pfi_alloc_set_free(&a);
    pfi_alloc_set_free(&b);
    int streamed = streams(path);
    unlink(path);
    return streamed;
}

/* A document with what a streamed read must follow: other members before and after the
 * array, a key spelled with an escape, strings holding quotes, brackets and escapes, nested
 * junk, numbers of every spelling. */
static const char DOC[] =
    "{\"not\\u0065\": {\"note\": \"a ] } [ { \\\" \\\\\", \"list\": [1, [2, [3]], {\"x\": null}]},\n"
    " \"jo\\u0062s\" :\n [ {\"id\": \"a\\\"]},{\", \"gpus\": 8, \"weight\": 2.5e0,\n"
    "   \"junk\": {\"deep\": [[[[{\"k\": [true, false, null, -0.0, 1E-3]}]]]], \"s\": \"}}]]\"},\n"
    "   \"curve\": {\"cap_w\": [300, 500.0, 7e2], \"tput\": [60, 90.5, 100]}},\r\n"
    "  {\"id\": \"b\\u00e9\", \"gpus\": 2, \"p0_w\": 380, \"pfi30\": -0.25,\n"
    "   \"predicted_curve\": {\"cap_w\": [200, 400], \"tput\": [1, 2]}}\t],\n"
    " \"after\": [\"x\", {\"y\": [\"]\"]}], \"n\": 12}\n";
/* (streams() reads DOC as util/json_items.h does for any caller, every other member followed
 * and dropped; a jobs file names the one other member it takes, "note" (here before the array,
 * spelled with an escape), so pfi_jobs_file_load hands DOC to the whole read at "after", which
 * refuses it by name, as the reference does.) */

/* Streamed reads equal whole reads: the document above, every prefix of it (a truncated file),
 * and thousands of copies with a byte changed (bad JSON anywhere, a bad job in the middle). */
static void test_stream_same_as_whole(void **state)
{
    size_t len = strlen(DOC);
    assert_true(same_as_whole(DOC, len));
    for (size_t k = 0; k < len; k++)
        if (same_as_whole(DOC, k) && DOC[k] != '\n')
            fail_msg("the first %zu bytes streamed to the end", k);
    const char bytes[] = "{}[]\",:\\ \n0a-e.1tnfu\x01\xff";
    char buf[sizeof DOC];
    unsigned long long x = 88172645463325252ULL;
    int n_streamed = 0;
    for (int i = 0; i < 1500; i++) {
        memcpy(buf, DOC, len);
        for (int m = 0; m < 1 + i % 3; m++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            buf[x % len] = bytes[(x >> 32) % (sizeof bytes - 1)];
        }
        n_streamed += same_as_whole(buf, len);
    }
    assert_true(n_streamed > 50); /* changes inside strings and junk values still stream */
}

/* Files of the other shapes and sizes: a bare array, jobs far beyond the read buffer and a
 * job bigger than it, huge numbers, a duplicate "jobs" (refused, as when read whole),
 * nesting at and past jansson's depth limit, trailing bytes, an empty file, a missing one. */
static void test_stream_shapes(void **state)
{
    const char *small[] = {
        "[{\"id\":\"a\",\"gpus\":1," CURVE "}]",
        "  [ {\"id\":\"a\",\"gpus\":1," CURVE "} ] \n",
        "{\"jobs\":[{\"id\":\"a\",\"gpus\":1," CURVE "}],\"jobs\":[{\"id\":\"b\",\"gpus\":2," CURVE "}]}",
        "{\"jobs\":{\"id\":\"a\"}}",
        "{\"jobs\":[]}",
        "{\"jobs\":[],\"x\":1}",
        "{}",
        "[]",
        "",
        "\xef\xbb\xbf[]",
        "[{\"id\":\"a\",\"gpus\":1," CURVE "}] x",
        "[{\"id\":\"a\",\"gpus\":1," CURVE "},]",
        "[{\"id\":\"a\",\"gpus\":1e400," CURVE "}]",
        "[{\"id\":\"a\",\"gpus\":123456789012345678901234567890," CURVE "}]",
        "[{\"id\":\"a\",\"gpus\":1," CURVE ",\"x\":-1e-400}]",
        "[{\"id\":\"a\",\"gpus\":2.5," CURVE "}, {\"id\":\"b\" \"gpus\":1}]",
        "[{\"id\":\"a\",\"gpus\":2.5," CURVE "}, {\"id\":\"b\",\"gpus\":0," CURVE "}]",
        "[1, \"x\", null]",
        "{\"jobs\":[{\"id\":\"a\",\"gpus\":1," CURVE "}], 5}",
        "{\"jobs\" [{\"id\":\"a\",\"gpus\":1," CURVE "}]}",
        "{\"jobs\":[{\"id\":\"a\",\"gpus\":1," CURVE "}]",
        "\"jobs\"",
        "[{\"id\":\"a\\u0000\",\"gpus\":1," CURVE "}]",
    };
    for (size_t i = 0; i < sizeof small / sizeof small[0]; i++) {
        /* valid JSON of the shapes followed: the first two, and those with a bad job */
        int follows = i < 2 || i == 14 || i == 16 || i == 17;
        if (same_as_whole(small[i], strlen(small[i])) != follows)
            fail_msg("file %zu: streamed should be %d", i, follows);
    }
    /* nesting around jansson's limit (2048 containers deep, the file's own two included) */
    enum { MAX_STREAM_DEPTH = 1997 }; /* json_items.c: 2000 with the file's two and the job */
    const int depths[] = {1990, 1997, 1998, 2045, 2046, 2100};
    for (size_t i = 0; i < sizeof depths / sizeof depths[0]; i++) {
        int d = depths[i];
        char *t = malloc((size_t)(2 * d + 200));
        assert_non_null(t);
        int k = sprintf(t, "{\"jobs\":[{\"id\":\"a\",\"gpus\":1," CURVE ",\"j\":");
        for (int l = 0; l < d; l++)
            t[k++] = '[';
        for (int l = 0; l < d; l++)
            t[k++] = ']';
        k += sprintf(t + k, "}]}");
        assert_int_equal(same_as_whole(t, (size_t)k), d <= MAX_STREAM_DEPTH);
        free(t);
    }
    /* 6,000 jobs (several read buffers), one with a 600 kB string, a bad one near the end */
    size_t cap = 4u << 20, k = 0;
    char *t = malloc(cap);
    assert_non_null(t);
    k += (size_t)sprintf(t + k, "{\"jobs\": [");
    for (int j = 0; j < 6000; j++) {
        k += (size_t)sprintf(t + k, "%s{\"id\": \"job-%d\", \"gpus\": %d, \"weight\": %.17g, %s",
                             j ? ",\n" : "", j, 1 + j % 7, 1 + j / 1e4, CURVE);
        if (j == 777) {
            k += (size_t)sprintf(t + k, ", \"note\": \"");
            memset(t + k, 'x', 600000);
            k += 600000;
            t[k++] = '"';
        }
        t[k++] = '}';
    }
    k += (size_t)sprintf(t + k, "]}\n");
    assert_true(same_as_whole(t, k));
    char *bad = strstr(t, "\"job-5990\", \"gpus\": ");
    bad[strlen("\"job-5990\", \"gpus\": ")] = '0';
    same_as_whole(t, k);
    same_as_whole(t, k - 5000);
    free(t);
    pfi_alloc_set s;
    pfi_err e = {0};
    assert_int_equal(pfi_jobs_file_load("/nonexistent/jobs.json", 0, &s, &e), PFI_ENOENT);
    assert_non_null(strstr(e.msg, "/nonexistent/jobs.json"));
    pfi_alloc_set_free(&s);
}

/* Values decoded without jansson's lexer are jansson's own, bit for bit; what it does not take
 * (escapes, non-ASCII, numbers out of range or malformed) is left to jansson. */
static void same_value(const char *text)
{
    json_error_t je;
    json_t *a = pfi_json_fast_loadb(text, strlen(text));
    json_t *b = json_loadb(text, strlen(text), JSON_DECODE_ANY, &je);
    if (!a)
        return;
    if (!b || !json_equal(a, b))
        fail_msg("'%s': decoded where jansson %s", text, b ? "differs" : "refuses");
    if (json_is_real(a)) {
        double x = json_real_value(a), y = json_real_value(b);
        assert_memory_equal(&x, &y, sizeof x);
    }
    json_decref(a);
    json_decref(b);
}

static void test_fast_values(void **state)
{
    const char *take[] = {"0", "-0", "0.0", "-0.0", "1", "-1", "9223372036854775807",
                          "-9223372036854775807", "1.5", "1E+2", "1e-2", "0e5", "123.456e-3",
                          "0.1", "0.30000000000000004", "9007199254740993.0", "1e22", "1e23",
                          "4.9e-324", "2.2250738585072014e-308", "1.7976931348623157e308",
                          " [1, 2.5, {\"a\": [true, false, null]}, \"x y\"] ",
                          "{}", "[]", "\"\""};
    for (size_t i = 0; i < sizeof take / sizeof take[0]; i++) {
        json_t *v = pfi_json_fast_loadb(take[i], strlen(take[i]));
        if (!v)
            fail_msg("'%s' left to jansson", take[i]);
        json_decref(v);
        same_value(take[i]);
    }
    const char *leave[] = {"9223372036854775808", "-9223372036854775809", "1e400", "-1e400",
                           "01", "1.", ".5", "+1", "-", "1e", "1e+", "\"a\\n\"", "\"\xc3\xa9\"",
                           "[1,]", "{\"a\" 1}", "{\"a\": 1, \"a\": 2}", "tru", "nulll", "1 2", "[1] x", "\"\x7f\"", ""};
    for (size_t i = 0; i < sizeof leave / sizeof leave[0]; i++) {
        json_t *v = pfi_json_fast_loadb(leave[i], strlen(leave[i]));
        if (v)
            fail_msg("'%s' decoded: jansson's to judge", leave[i]);
    }
    /* random numbers of every spelling, against jansson */
    unsigned long long x = 0x9E3779B97F4A7C15ULL;
    char buf[96];
    for (int i = 0; i < 200000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        int k = 0, nd = 1 + (int)(x % 21), nf = (int)((x >> 8) % 20);
        if (x >> 63)
            buf[k++] = '-';
        for (int d = 0; d < nd; d++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            buf[k++] = (char)('0' + (d == 0 && nd > 1 ? 1 + x % 9 : x % 10));
        }
        if ((x >> 20) & 1) {
            buf[k++] = '.';
            for (int d = 0; d <= nf; d++) {
                x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                buf[k++] = (char)('0' + x % 10);
            }
        }
        if ((x >> 21) & 1)
            k += sprintf(buf + k, "e%d", (int)((x >> 24) % 700) - 350);
        buf[k] = '\0';
        same_value(buf);
    }
}

/* Per-GPU tables of more jobs than the first room (the set grows): each table still points at
 * its own job's caps and throughputs. */
static void test_grow_pergpu(void **state)
{
    size_t cap = 1u << 20, k = 0;
    char *t = malloc(cap);
    assert_non_null(t);
    k += (size_t)sprintf(t, "[");
    for (int j = 0; j < 3000; j++)
        k += (size_t)sprintf(t + k,
                             "%s{\"id\": \"j%d\", \"gpus\": 1, \"per_gpu\": {\"cap_w\": [300, "
                             "500, %d], \"tput\": [60, 90, 100], \"clock_mhz\": [[1000, 1500, "
                             "1900]]}}",
                             j ? "," : "", j, 600 + j % 100);
    k += (size_t)sprintf(t + k, "]");
    write_jobs(t);
    free(t);
    pfi_alloc_set s;
    pfi_err e = {0};
    assert_int_equal(pfi_jobs_file_load(path, 1, &s, &e), PFI_OK);
    unlink(path);
    assert_int_equal(s.n, 3000);
    for (int j = 0; j < s.n; j++) {
        assert_ptr_equal(s.pg[j].table.cap_w, s.pg[j].cap_w);
        assert_ptr_equal(s.pg[j].table.tput, s.pg[j].tput);
        assert_true(s.pg[j].table.cap_w[2] == 600 + j % 100);
        assert_int_equal(s.truth[j].n_points, 3);
        assert_true(s.truth[j].cap_w[2] == 600 + j % 100);
    }
    pfi_alloc_set_free(&s);
}

/* ---- a job read straight from its text (pfi_job_text_decode) ---- */

static uint64_t text_rng = 0x9E3779B97F4A7C15ULL;

static unsigned rnd(unsigned n)
{
    text_rng ^= text_rng << 13;
    text_rng ^= text_rng >> 7;
    text_rng ^= text_rng << 17;
    return (unsigned)(text_rng % n);
}

/* A number as people and programs spell them, in range or not, integral or not. */
static int put_number(char *b, double typical)
{
    switch (rnd(40)) {
    case 0:
        return sprintf(b, "%d", (int)typical);
    case 1:
        return sprintf(b, "%.3f", typical * (0.5 + rnd(1000) / 1000.0));
    case 2:
        return sprintf(b, "%.17g", typical * (0.5 + rnd(1000) / 1000.0));
    case 3:
        return sprintf(b, "%de%d", (int)typical, (int)rnd(5) - 2);
    case 4:
        return sprintf(b, "%.2E", typical);
    case 5: {
        static const char *odd[] = {"0",   "-0",    "-1",   "1e308", "1e400", "-1e-400",
                                    "1.0", "2.5",   "1e6",  "1000001", "100000", "100001",
                                    "0.0", "1E+2",  "01",   "1.",    "-",     ".5",
                                    "1e",  "true",  "null", "\"5\"", "[1]",   "12345678901234567890123"};
        return sprintf(b, "%s", odd[rnd(sizeof odd / sizeof odd[0])]);
    }
    default:
        return sprintf(b, "%g", typical);
    }
}

static int put_curve(char *b)
{
    int n = rnd(10) ? 1 + (int)rnd(11) : (int)rnd(14), m = rnd(10) == 0 ? (int)rnd(14) : n, k = 0;
    const char *sp = rnd(3) ? "" : " \n\t";
    k += sprintf(b + k, "{%s\"cap_w\":%s[", sp, sp);
    for (int i = 0; i < n; i++) {
        if (i)
            k += sprintf(b + k, ",%s", sp);
        k += put_number(b + k, 200 + 50 * i);
    }
    k += sprintf(b + k, "]%s,\"tput\":[", sp);
    for (int i = 0; i < m; i++) {
        if (i)
            k += sprintf(b + k, ",");
        k += put_number(b + k, 1000 + 100 * i);
    }
    k += sprintf(b + k, "]");
    if (rnd(20) == 0)
        k += sprintf(b + k, ",\"points\":[]");
    if (rnd(20) == 0)
        k += sprintf(b + k, ",\"tput\":[1]");
    return k + sprintf(b + k, "}");
}

/* A job of the jobs file's fields, each present or not, in any order, sometimes twice, with
 * another key, an id that needs escapes, or a value of the wrong kind. */
static void put_job(char *b)
{
    static const char *keys[] = {"gpus", "min_cap_w", "max_cap_w", "p0_w", "t0", "weight",
                                 "sla_max_slowdown", "pfi30", "curve", "predicted_curve", "id",
                                 "note"};
    static const double typical[] = {8, 250, 650, 600, 1e4, 2, 0.1, 0.3};
    int order[13], n = 0, k = 0; /* a key may come twice */
    for (int i = 0; i < 12; i++)
        if (i == 10 || i == 0 || (i == 11 ? rnd(20) == 0 : rnd(3) != 0))
            order[n++] = i;
    for (int i = n - 1; i > 0; i--) {
        int r = (int)rnd((unsigned)i + 1), t = order[i];
        order[i] = order[r];
        order[r] = t;
    }
    if (rnd(15) == 0) { /* a key twice */
        int again = order[rnd((unsigned)n)];
        order[n++] = again;
    }
    k += sprintf(b + k, rnd(4) ? "{" : " {\n  ");
    for (int i = 0; i < n; i++) {
        int f = order[i];
        k += sprintf(b + k, "%s\"%s\":%s", i ? (rnd(4) ? ", " : ",\n  ") : "", keys[f],
                     rnd(3) ? " " : "");
        if (f < 8) {
            k += f == 0 && rnd(4) ? sprintf(b + k, "%u", 1 + rnd(16))
                                  : put_number(b + k, f == 0 ? 1 + rnd(16) : typical[f]);
        } else if (f < 10) {
            k += rnd(25) ? put_curve(b + k) : sprintf(b + k, "null");
        } else if (f == 10) {
            static const char *ids[] = {"job-%05u", "j%u", "", "a\\\"b%u", "caf\xc3\xa9%u",
                                        "x\\u0041%u", "%u"};
            int w = (int)rnd(20);
            if (w == 19) {
                k += sprintf(b + k, "%u", rnd(100));
            } else {
                k += sprintf(b + k, "\"");
                k += sprintf(b + k, ids[w < 13 ? 0 : w - 12], rnd(99999));
                k += sprintf(b + k, "\"");
            }
        } else {
            k += sprintf(b + k, "\"a note\"");
        }
    }
    sprintf(b + k, rnd(4) ? "}" : "\n}");
}

static void same_kept(const pfi_alloc_set *a, const pfi_alloc_set *b)
{
    same_job(&a->truth[0], &b->truth[0]);
    same_job(&a->pred[0], &b->pred[0]);
    assert_memory_equal(&a->pfi30[0], &b->pfi30[0], sizeof a->pfi30[0]);
}

/* Whatever the text path keeps is what the json_t path keeps of the same text, bit for bit;
 * what it does not take (anything not plain, any bad value, bad JSON) it leaves untouched and
 * to the json_t path.  Random jobs, then each with 1-3 bytes changed. */
static void test_text_same_as_json(void **state)
{
    (void)state;
    char job[8192];
    int taken = 0, left = 0, mutants_taken = 0;
    for (int t = 0; t < 40000; t++) {
        put_job(job);
        if (t % 2) {
            size_t len = strlen(job);
            for (int m = 1 + (int)rnd(3); m > 0; m--)
                job[rnd((unsigned)len)] = "{}[],:\" 0123456789.eE-+tnul\\x"[rnd(29)];
        }
        pfi_alloc_set a, b;
        assert_int_equal(pfi_alloc_set_init(&a, 1, 0), PFI_OK);
        assert_int_equal(pfi_alloc_set_init(&b, 1, 0), PFI_OK);
        pfi_err ea = {0}, eb = {0};
        int ka = pfi_job_text_decode(job, strlen(job), &a, 0, &ea);
        json_t *o = pfi_json_items_decode(job, strlen(job));
        if (ka == PFI_OK) {
            if (!o)
                fail_msg("the text path took what is not JSON: %s", job);
            int kb = pfi_job_json_decode(o, "f.json", 0, &b, 0, &eb);
            if (kb != PFI_OK)
                fail_msg("the text path took a job the json_t path refuses (%s): %s", eb.msg,
                         job);
            same_kept(&a, &b);
            taken++;
            mutants_taken += t % 2;
        } else {
            assert_int_equal(ka, PFI_JOB_TEXT_OTHER);
            assert_null(a.ids[0]);
            assert_int_equal(a.truth[0].n_points, 0);
            assert_int_equal(ea.msg[0], '\0');
            left++;
        }
        json_decref(o);
        pfi_alloc_set_free(&a);
        pfi_alloc_set_free(&b);
    }
    /* both kinds many times over */
    if (taken < 3000 || left < 3000 || mutants_taken < 100)
        fail_msg("taken %d, left %d, mutants taken %d", taken, left, mutants_taken);
}

/* The set is grown to what the rest of the file holds at the size per job read so far, not
 * doubled: 20,000 jobs leave room for about 20,000 (doubling: 32,768), each job intact. */
static void test_room_from_size(void **state)
{
    (void)state;
    size_t cap = 8u << 20, k = 0;
    char *t = malloc(cap);
    assert_non_null(t);
    k += (size_t)sprintf(t, "{\"jobs\": [");
    for (int j = 0; j < 20000; j++)
        k += (size_t)sprintf(t + k, "%s\n{\"id\": \"j%05d\", \"gpus\": %d, " CURVE "}", j ? "," : "",
                             j, 1 + j % 7);
    k += (size_t)sprintf(t + k, "]}\n");
    write_jobs(t);
    free(t);
    pfi_alloc_set s;
    pfi_err e = {0};
    assert_int_equal(pfi_jobs_file_load(path, 0, &s, &e), PFI_OK);
    unlink(path);
    assert_int_equal(s.n, 20000);
    assert_in_range(s.cap, 20000, 20000 * 105 / 100);
    for (int j = 0; j < s.n; j++) {
        assert_int_equal(s.truth[j].n_gpus, 1 + j % 7);
        assert_int_equal(s.truth[j].n_points, 3);
        assert_true(s.truth[j].tput[2] == 100);
    }
    pfi_alloc_set_free(&s);
}

/* A grid step far above every cap has no multiple in the caps' range: refused, never caps of
 * 0 W. */
static void test_step_bounds(void **state)
{
    double caps[] = {300, 500, 700}, tput[] = {60, 90, 100};
    pfi_alloc_job j = {"a", 4, 300, 700, caps, tput, 3, 700, NAN, NAN, 1};
    pfi_alloc_opts o;
    pfi_alloc_opts_default(&o);
    pfi_alloc_result r;
    pfi_err e = {0};
    const double steps[] = {1e308, 1e6, 701};
    for (size_t k = 0; k < sizeof steps / sizeof steps[0]; k++) {
        o.step_w = steps[k];
        int rc = pfi_alloc_solve(&j, 1, 2000, &o, &r, &e);
        if (rc == PFI_OK) {
            double cap = r.cap_w[0];
            pfi_alloc_result_free(&r);
            fail_msg("step %g W gave a cap of %g W", steps[k], cap);
        }
        assert_int_equal(rc, PFI_EINVAL);
        assert_non_null(strstr(e.msg, "grid"));
    }
    /* a step far below a watt: more than 1e9 grid points up to the cap, refused with the step
     * named (it said "cap 700 W is out of range", of a cap every other step takes) */
    const double fine[] = {1e-9, 1e-300, 5e-7};
    for (size_t k = 0; k < sizeof fine / sizeof fine[0]; k++) {
        o.step_w = fine[k];
        int rc = pfi_alloc_solve(&j, 1, 2000, &o, &r, &e);
        if (rc == PFI_OK)
            pfi_alloc_result_free(&r);
        char want[64];
        snprintf(want, sizeof want, "%g W grid", fine[k]);
        if (rc != PFI_ERANGE || !strstr(e.msg, want) || !strstr(e.msg, "coarser"))
            fail_msg("step %g W: rc %d, '%s'", fine[k], rc, e.msg);
    }
    o.step_w = 100;
    assert_int_equal(pfi_alloc_solve(&j, 1, 2000, &o, &r, &e), PFI_OK);
    assert_true(r.cap_w[0] >= 300 && r.cap_w[0] <= 500);
    pfi_alloc_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_file),
        cmocka_unit_test(test_piped_same_as_file),
        cmocka_unit_test(test_bad_values),
        cmocka_unit_test(test_repeated_key),
        cmocka_unit_test(test_stream_same_as_whole),
        cmocka_unit_test(test_stream_shapes),
        cmocka_unit_test(test_grow_pergpu),
        cmocka_unit_test(test_room_from_size),
        cmocka_unit_test(test_text_same_as_json),
        cmocka_unit_test(test_fast_values),
        cmocka_unit_test(test_step_bounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
