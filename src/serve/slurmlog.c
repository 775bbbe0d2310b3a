/* SPDX-License-Identifier: Apache-2.0 */
/* slurmlog.c: a Slurm job's output file as Slurm states it, a log source for the daemon when
 * the job was registered without one and its stdout is not a regular file it can see.
 *
 *   scontrol show job [-o] ID   StdOut=PATH, the patterns already expanded (Slurm 22.05);
 *   squeue --json -j ID         "standard_output" as submitted: "" for the default
 *                               (WorkDir/slurm-%j.out, slurm-%A_%a.out for an array task), else
 *                               a pattern (%j %x %u %A %a %%) to expand, relative to
 *                               "current_working_directory" when not absolute.
 * scontrol is asked first; squeue --json where scontrol answers nothing usable.  Both through
 * util/cmd.h, bounded in time: the caller is the control loop. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "serve/serve_int.h"
#include "util/cmd.h"

#define SLURM_TIMEOUT_S 2.0
#define SLURM_MAX_OUT (1 << 20)

/* A key of scontrol's output: letters, digits and _/: then '=' (Power=, CPUs/Task=, ...). */
static int key_at(const char *p)
{
    const char *q = p;
    while ((*q >= 'A' && *q <= 'Z') || (*q >= 'a' && *q <= 'z') || (*q >= '0' && *q <= '9') ||
           *q == '_' || *q == '/' || *q == ':')
        q++;
    return q > p && *q == '=';
}

int pfi_slurm_stdout_scontrol(const char *text, char *out, size_t cap)
{
    for (const char *p = text; (p = strstr(p, "StdOut=")) != NULL; p += 7) {
        if (p != text && p[-1] != ' ' && p[-1] != '\n' && p[-1] != '\t')
            continue;
        const char *v = p + 7, *e = v;
        /* The value runs to the line's end or to the next " Key=" (-o puts all on one line;
         * a path may hold spaces). */
        while (*e && *e != '\n' && !(*e == ' ' && key_at(e + 1)))
            e++;
        while (e > v && (e[-1] == ' ' || e[-1] == '\r'))
            e--;
        size_t n = (size_t)(e - v);
        if (n == 0 || v[0] != '/' || n >= cap)
            return 0;
        memcpy(out, v, n);
        out[n] = '\0';
        return 1;
    }
    return 0;
}

static int put(char *out, size_t cap, size_t *o, const char *s)
{
    size_t l = strlen(s);
    if (*o + l >= cap)
        return -1;
    memcpy(out + *o, s, l);
    *o += l;
    out[*o] = '\0';
    return 0;
}

/* An integer field: a plain number (Slurm 22.05), or {"set", "number"} (later releases);
 * -1 when absent or not set. */
static long long num_of(json_t *v)
{
    if (json_is_integer(v))
        return json_integer_value(v);
    if (json_is_object(v) && json_is_true(json_object_get(v, "set")))
        return json_integer_value(json_object_get(v, "number"));
    return -1;
}

/* Slurm's filename pattern for one job; PFI_ENOTSUP for a pattern that needs what squeue does
 * not give for the job as a whole (%N node, %n %t %s task and step), and for %A or %a outside
 * a job array. */
static int expand(const char *pat, json_t *job, char *out, size_t cap, pfi_err *err)
{
    long long id = num_of(json_object_get(job, "job_id"));
    long long arr = num_of(json_object_get(job, "array_job_id"));
    long long task = num_of(json_object_get(job, "array_task_id"));
    int is_array = arr > 0 && task >= 0;
    const char *name = json_string_value(json_object_get(job, "name"));
    const char *user = json_string_value(json_object_get(job, "user_name"));
    const char *cwd = json_string_value(json_object_get(job, "current_working_directory"));
    if (!*pat)
        pat = is_array ? "slurm-%A_%a.out" : "slurm-%j.out"; /* Slurm's default */
    size_t o = 0;
    out[0] = '\0';
    if (pat[0] != '/' && (!cwd || cwd[0] != '/' || put(out, cap, &o, cwd) || put(out, cap, &o, "/")))
        return pfi_err_set(err, PFI_EINVAL, "job %lld: relative output path without a working "
                                            "directory", id);
    for (const char *p = pat; *p; p++) {
        char piece[256] = {*p, 0};
        if (*p == '%' && p[1]) {
            int width = 0;
            while (p[1] >= '0' && p[1] <= '9' && width < 10)
                width = width * 10 + (*++p - '0'); /* %4j: zero-padded to 4 digits */
            p++;
            long long v = -1;
            switch (*p) {
            case '%': snprintf(piece, sizeof piece, "%%"); break;
            case 'j': v = id; break;
            case 'x': snprintf(piece, sizeof piece, "%s", name ? name : ""); break;
            case 'u': snprintf(piece, sizeof piece, "%s", user ? user : ""); break;
            case 'A': v = is_array ? arr : -2; break;
            case 'a': v = is_array ? task : -2; break;
            default: v = -3;
            }
            if (v < -1 || !*p)
                return pfi_err_set(err, PFI_ENOTSUP, "job %lld: output pattern %%%c is not "
                                   "read (%%j %%x %%u, and %%A %%a for a job array)", id,
                                   *p ? *p : ' ');
            if (v >= 0)
                snprintf(piece, sizeof piece, "%0*lld", width, v);
        }
        if (put(out, cap, &o, piece))
            return pfi_err_set(err, PFI_ERANGE, "job %lld: output path too long", id);
    }
    return PFI_OK;
}

int pfi_slurm_stdout_squeue(const char *json, const char *job_id, char *out, size_t cap,
                            pfi_err *err)
{
    json_error_t je;
    json_t *doc = json_loads(json, 0, &je);
    json_t *jobs = json_object_get(doc, "jobs");
    if (!json_is_array(jobs)) {
        json_decref(doc);
        return pfi_err_set(err, PFI_EINVAL, "squeue --json: no \"jobs\" array");
    }
    size_t i;
    json_t *job;
    int rc = pfi_err_set(err, PFI_ENOENT, "squeue --json: no job %s", job_id);
    json_array_foreach(jobs, i, job)
    {
        char id[32];
        snprintf(id, sizeof id, "%lld", num_of(json_object_get(job, "job_id")));
        if (strcmp(id, job_id) != 0)
            continue;
        const char *pat = json_string_value(json_object_get(job, "standard_output"));
        *err = (pfi_err){0};
        rc = expand(pat ? pat : "", job, out, cap, err);
        break;
    }
    json_decref(doc);
    return rc;
}

int pfi_srv_slurm_log(const char *job_id, char *out, size_t cap, pfi_err *err)
{
    char *text = NULL;
    char *sc[] = {"scontrol", "show", "job", (char *)job_id, NULL};
    pfi_err se = {0};
    if (pfi_cmd_capture(sc, SLURM_TIMEOUT_S, SLURM_MAX_OUT, &text, &se) == PFI_OK) {
        if (pfi_slurm_stdout_scontrol(text, out, cap)) {
            free(text);
            return PFI_OK;
        }
        pfi_err_set(&se, PFI_EINVAL, "scontrol show job %s: no StdOut=", job_id);
    }
    free(text);
    text = NULL;
    char *sq[] = {"squeue", "--json", "-j", (char *)job_id, NULL};
    int rc = pfi_cmd_capture(sq, SLURM_TIMEOUT_S, SLURM_MAX_OUT, &text, err);
    if (rc == PFI_OK)
        rc = pfi_slurm_stdout_squeue(text, job_id, out, cap, err);
    free(text);
    if (rc != PFI_OK) /* both said: scontrol's failure was lost behind squeue's */
        pfi_err_prefix(err, "%s; ", se.msg);
    return rc;
}
