/* SPDX-License-Identifier: Apache-2.0 */
/* jobs_file.c: the jobs file of `pfi allocate` (jobs.h).  The file is streamed: one job is
 * decoded at a time (util/json_items.h) into the set, so memory is the jobs themselves, not
 * the document.  What the stream does not follow (bad JSON, an odd shape, an empty or missing
 * "jobs" array, a file that cannot be read) is read whole by jansson, whose messages (with the
 * line) are the ones a bad file gets.  A key given twice anywhere is refused (jansson would keep
 * the last one: a second "sla_max_slowdown" at the end of a job replaced the first unseen).
 * Input that cannot be read twice (a pipe, `-` for stdin) is first copied into memory:
 * the whole-file read found the pipe drained by the stream and told every such error as
 * "'[' or '{' expected" at line 1. */
#include "store/jobs.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "store/codec.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/json_fast.h"
#include "util/json_items.h"

/* The members a jobs file's top object may have: its jobs and a note (any value, not read;
 * pfi bench pergpu --jobs-out writes one).  Any other is refused: {"jobs": [...],
 * "sla_max_slowdown": 0.1} read as no SLA at all, as a typo inside a job would. */
static const char *const top_members[] = {"jobs", "note", NULL};

static int check_top(json_t *doc, const char *path, pfi_err *err)
{
    for (void *i = json_object_iter(doc); i; i = json_object_iter_next(doc, i)) {
        const char *k = json_object_iter_key(i);
        int ok = 0;
        for (const char *const *m = top_members; *m && !ok; m++)
            ok = strcmp(k, *m) == 0;
        if (!ok)
            return pfi_err_set(err, PFI_EINVAL,
                               "%s: unknown member \"%s\" at the top: a jobs file holds \"jobs\" "
                               "and an optional \"note\"; per-job fields go in each job "
                               "(docs/jobs-format.md)",
                               path, k);
    }
    return PFI_OK;
}

/* jansson's "'[' or '{' expected near ''" shows the mark itself, invisibly. */
static int starts_with_bom(const char *path)
{
    unsigned char b[3];
    FILE *f = fopen(path, "rb");
    int bom = f && fread(b, 1, 3, f) == 3 && b[0] == 0xEF && b[1] == 0xBB && b[2] == 0xBF;
    if (f)
        fclose(f);
    return bom;
}

/* The whole document at once: every file the stream hands back. */
static int load_whole(const char *open_path, const char *path, int per_gpu, pfi_alloc_set *s,
                      pfi_err *err)
{
    memset(s, 0, sizeof *s);
    json_error_t je;
    json_t *doc = json_load_file(open_path, JSON_REJECT_DUPLICATES, &je);
    if (!doc && je.line < 1) /* not opened or read: jansson has no line to point at */
        return pfi_err_set(err, errno == ENOENT ? PFI_ENOENT : PFI_EIO, "%s", je.text);
    if (!doc && starts_with_bom(open_path))
        return pfi_err_set(err, PFI_EINVAL, "%s starts with a UTF-8 byte-order mark (some "
                           "Windows editors write one), which JSON does not take: save it "
                           "without one", path);
    if (!doc)
        return pfi_err_set(err, PFI_EINVAL, "%s:%d: %s", path, je.line, je.text);
    json_t *arr = json_is_array(doc) ? doc : json_object_get(doc, "jobs");
    int rc = json_is_array(arr) && json_is_object(doc) ? check_top(doc, path, err) : PFI_OK;
    if (!json_is_array(arr)) {
        rc = pfi_err_set(err, PFI_EINVAL, "%s: no \"jobs\" array (docs/jobs-format.md)", path);
    } else if (rc != PFI_OK) {
        /* check_top said which member */
    } else if (json_array_size(arr) == 0) { /* there, but empty: not "no array" */
        rc = pfi_err_set(err, PFI_EINVAL, "%s: the jobs array holds no job", path);
    } else {
        int n = (int)json_array_size(arr);
        if (pfi_alloc_set_init(s, n, per_gpu) != PFI_OK)
            rc = pfi_err_set(err, PFI_ENOMEM, "out of memory for %d jobs", n);
        for (int j = 0; rc == PFI_OK && j < n; j++)
            rc = pfi_job_json_decode(json_array_get(arr, (size_t)j), path, j, s, j, err);
    }
    json_decref(doc);
    return rc;
}

/* A job the text decoder does not take, as a json_t: NULL when it is not valid JSON or repeats
 * a key (the file is then read whole, whose message says which). */
static json_t *decode_job(const char *text, size_t len)
{
    json_t *v = pfi_json_fast_loadb(text, len); /* leaves a repeated key to jansson */
    json_error_t je;
    return v ? v : pfi_json_loadb(text, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &je);
}

/* Room for the jobs after the first j (the set is full): 1,024 to begin with, then as many as
 * the rest of the file holds at the size per job so far, 2% more (a set grown by doubling
 * copies and first-touches its arrays several times over, most of the cost of growing): at
 * least an eighth more than j, at most 128 times j (a file whose first jobs are small and the
 * rest large costs no more than that). */
static int room_for(const pfi_json_items *it, int j)
{
    long long done, size;
    if (j < 1024)
        return 1024;
    double want = 2.0 * j;
    if (pfi_json_items_progress(it, &done, &size) == 0 && done > 0 && size > done)
        want = (double)j * (double)size / (double)done * 1.02 + 16;
    double lo = j + j / 8.0, hi = 128.0 * j;
    want = want < lo ? lo : want > hi ? hi : want;
    return want > 2147483647.0 ? 2147483647 : (int)want;
}

/* The jobs one at a time.  A bad job's error waits until the rest of the file is known to be
 * JSON (as when it is read whole, bad JSON anywhere is what is told); the jobs after it are
 * then only parsed.  PFI_JSON_ITEMS_OTHER: read the file whole instead. */
static int load_stream(const char *open_path, const char *path, int per_gpu, pfi_alloc_set *s,
                       pfi_err *err)
{
    pfi_json_items it;
    int got = pfi_json_items_open(&it, open_path, "jobs", top_members), rc = PFI_OK;
    if (got == PFI_JSON_ITEMS_ONE && pfi_alloc_set_init(s, 0, per_gpu) != PFI_OK)
        rc = pfi_err_set(err, PFI_ENOMEM, "out of memory");
    const char *text;
    size_t len;
    while (got == PFI_JSON_ITEMS_ONE && rc != PFI_ENOMEM &&
           (got = pfi_json_items_next_text(&it, &text, &len)) == PFI_JSON_ITEMS_ONE) {
        int j = s->n;
        int room = j == s->cap ? room_for(&it, j) : j;
        if (rc == PFI_OK && j == s->cap && pfi_alloc_set_grow(s, room))
            rc = pfi_err_set(err, PFI_ENOMEM, "out of memory for %d jobs", room);
        /* a plain job straight from its text, any other through a json_t */
        int k = rc == PFI_OK ? pfi_job_text_decode(text, len, s, j, err) : PFI_JOB_TEXT_OTHER;
        if (k == PFI_OK) {
            s->n++;
            continue;
        }
        if (k != PFI_JOB_TEXT_OTHER) {
            rc = k;
            continue;
        }
        json_t *o = decode_job(text, len);
        if (!o) {
            got = PFI_JSON_ITEMS_OTHER;
            break;
        }
        if (rc == PFI_OK && (rc = pfi_job_json_decode(o, path, j, s, j, err)) == PFI_OK)
            s->n++;
        json_decref(o);
    }
    pfi_json_items_close(&it);
    return got == PFI_JSON_ITEMS_OTHER ? PFI_JSON_ITEMS_OTHER : rc;
}

/* in (stdin, or path opened) copied into an anonymous file in memory (memfd_create: no /tmp,
 * which may be read-only or small; tmpfile() writes there whatever TMPDIR says, the fallback
 * where memfd is not to be had), rewound; *spool NULL on error.  name: the input as messages
 * call it. */
static int spool_input(const char *path, const char *name, FILE **spool, pfi_err *err)
{
    *spool = NULL;
    int from_stdin = strcmp(path, "-") == 0;
    FILE *in = from_stdin ? stdin : fopen(path, "rb");
    if (!in)
        return pfi_err_set(err, errno == ENOENT ? PFI_ENOENT : PFI_EIO, "%s: %s", name,
                           strerror(errno));
    int fd = memfd_create("pfi-jobs", MFD_CLOEXEC);
    FILE *t = fd >= 0 ? fdopen(fd, "w+b") : NULL;
    if (!t && fd >= 0)
        close(fd);
    if (!t && fd < 0) /* no memfd (a kernel before 3.17, a seccomp filter): an unlinked file */
        t = tmpfile();
    int rc = t ? PFI_OK : pfi_err_set(err, PFI_EIO, "a copy of %s in memory: %s", name,
                                      strerror(errno));
    char buf[65536];
    size_t n;
    while (rc == PFI_OK && (n = fread(buf, 1, sizeof buf, in)) > 0)
        if (fwrite(buf, 1, n, t) != n)
            rc = pfi_err_set(err, PFI_EIO, "a copy of %s in memory: %s", name, strerror(errno));
    if (rc == PFI_OK && ferror(in))
        rc = pfi_err_set(err, PFI_EIO, "%s: %s", name, strerror(errno));
    if (rc == PFI_OK && fflush(t) != 0)
        rc = pfi_err_set(err, PFI_EIO, "a copy of %s in memory: %s", name, strerror(errno));
    if (!from_stdin)
        fclose(in);
    if (rc != PFI_OK) {
        if (t)
            fclose(t);
        return rc;
    }
    rewind(t);
    *spool = t;
    return PFI_OK;
}

int pfi_jobs_file_load(const char *path, int per_gpu, pfi_alloc_set *s, pfi_err *err)
{
    memset(s, 0, sizeof *s);
    int from_stdin = strcmp(path, "-") == 0;
    int rc = from_stdin ? PFI_OK : pfi_input_not_dir(path, err);
    if (rc != PFI_OK)
        return rc;
    /* Read twice (the stream, then whole where it gives up): a pipe is kept first. */
    struct stat st;
    FILE *spool = NULL;
    char via[64];
    const char *open_path = path, *name = from_stdin ? "<stdin>" : path;
    if (from_stdin || (stat(path, &st) == 0 && !S_ISREG(st.st_mode))) {
        if ((rc = spool_input(path, name, &spool, err)) != PFI_OK)
            return rc;
        snprintf(via, sizeof via, "/dev/fd/%d", fileno(spool));
        open_path = via;
    }
    rc = load_stream(open_path, name, per_gpu, s, err);
    if (rc == PFI_JSON_ITEMS_OTHER) {
        pfi_alloc_set_free(s);
        rc = load_whole(open_path, name, per_gpu, s, err);
    }
    if (spool)
        fclose(spool);
    return rc;
}
