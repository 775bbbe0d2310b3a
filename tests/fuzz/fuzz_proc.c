/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: what the node daemon reads of a GPU process to find its job
 * (src/serve/procjob.c): /proc/PID/{cmdline,cgroup,environ,stat}, all of them a user's to
 * shape.  Input: the four files' bytes, split at the first three "\x01\x02" pairs, written into
 * a private proc tree.  The job found must be one a URL and a JSON string can carry: slurm-N,
 * k8s-<36-character uid> or pg-N, and a sequence length that is 0 or a whole number in
 * [1, 2^24]. */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "serve/serve.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char root[64];

static void put(const char *name, const uint8_t *p, size_t n)
{
    char path[128];
    snprintf(path, sizeof path, "%s/4242/%s", root, name);
    FILE *f = fopen(path, "wb");
    if (!f)
        abort();
    if (n && fwrite(p, 1, n, f) != n)
        abort();
    fclose(f);
}

/* The private proc tree goes when libFuzzer exits (it leaves through exit()). */
static void remove_root(void)
{
    static const char *const names[] = {"cmdline", "cgroup", "environ", "stat"};
    char path[128];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(path, sizeof path, "%s/4242/%s", root, names[i]);
        unlink(path);
    }
    snprintf(path, sizeof path, "%s/4242", root);
    rmdir(path);
    rmdir(root);
}

static int digits(const char *s)
{
    if (!*s)
        return 0;
    for (; *s; s++)
        if (!isdigit((unsigned char)*s))
            return 0;
    return 1;
}

static int job_id_ok(const char *id)
{
    if (!strncmp(id, "slurm-", 6))
        return digits(id + 6);
    if (!strncmp(id, "pg-", 3))
        return digits(id + 3);
    if (strncmp(id, "k8s-", 4) != 0 || strlen(id + 4) != 36)
        return 0;
    for (const char *s = id + 4; *s; s++)
        if (!isxdigit((unsigned char)*s) && *s != '-')
            return 0;
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!root[0]) {
        snprintf(root, sizeof root, "/tmp/pfi-fuzz-proc-XXXXXX");
        char dir[128];
        if (!mkdtemp(root) || (snprintf(dir, sizeof dir, "%s/4242", root), mkdir(dir, 0700)) != 0)
            abort();
        atexit(remove_root);
    }
    static const char *const names[] = {"cmdline", "cgroup", "environ", "stat"};
    size_t at = 0;
    for (int i = 0; i < 4; i++) {
        size_t end = at;
        while (i < 3 && end + 1 < size && !(data[end] == 1 && data[end + 1] == 2))
            end++;
        if (i == 3 || end + 1 >= size)
            end = size;
        put(names[i], data + at, end - at);
        at = end + 2 > size ? size : end + 2;
    }
    pfi_proc_job pj;
    pfi_err e = {0};
    if (pfi_proc_job_of(root, 4242, &pj, &e) != PFI_OK)
        abort(); /* the process is there */
    if (!job_id_ok(pj.id))
        abort();
    if (!(pj.seq_len == 0 || (pj.seq_len >= 1 && pj.seq_len <= (1 << 24) &&
                              pj.seq_len == (double)(long long)pj.seq_len)))
        abort();
    if (strlen(pj.cmdline) >= sizeof pj.cmdline)
        abort();
    return 0;
}
