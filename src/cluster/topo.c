/* SPDX-License-Identifier: Apache-2.0 */
/* topo.c: which nodes exist and which job holds which GPUs, from Slurm itself.
 *
 * Why `sinfo --json` and `squeue --json` rather than libslurm or slurmrestd: the JSON output is
 * there wherever a Slurm client is configured (21.08 and later), needs no daemon and no JWT set
 * up beyond what `squeue` already needs, and does not tie pfi's binary to one libslurm ABI
 * (libslurm's soname changes with every major release).  squeue's gres_detail gives the GPU
 * indices of a job on each of its nodes, in the order of job_resources.allocated_nodes. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cluster/cluster.h"
#include "util/cmd.h"
#include "util/text.h"

void pfi_cl_topo_free(pfi_cl_topo *t)
{
    if (!t)
        return;
    for (int j = 0; j < t->n_jobs; j++)
        free(t->jobs[j].parts);
    free(t->jobs);
    free(t->nodes);
    memset(t, 0, sizeof *t);
}

/* The digits at s[*i] as a number, held at 10^6 past it: an index of twenty digits overflowed
 * (undefined behaviour, found by tests/fuzz/fuzz_cluster.c); anything that large is refused. */
static long idx_number(const char *s, size_t len, size_t *i)
{
    long v = 0;
    while (*i < len && isdigit((unsigned char)s[*i])) {
        if (v < 1000000)
            v = v * 10 + (s[*i] - '0');
        (*i)++;
    }
    return v;
}

/* Indices "0-1", "0,2-4" -> out; -1 when malformed. */
static int parse_idx_list(const char *s, size_t len, int *out, int max)
{
    int n = 0;
    size_t i = 0;
    while (i < len) {
        if (!isdigit((unsigned char)s[i]))
            return -1;
        long a = idx_number(s, len, &i), b = a;
        if (i < len && s[i] == '-') {
            i++;
            if (i >= len || !isdigit((unsigned char)s[i]))
                return -1;
            b = idx_number(s, len, &i);
        }
        if (b < a || b >= PFI_MAX_GPUS)
            return -1;
        for (long g = a; g <= b; g++) {
            if (n >= max)
                return -1;
            out[n++] = (int)g;
        }
        if (i < len && s[i] == ',')
            i++;
        else if (i < len)
            return -1;
    }
    return n;
}

int pfi_cl_parse_gres_idx(const char *s, int *out, int max)
{
    /* Several GRES may be listed ("gpu:2(IDX:0-1),nic:1(IDX:0)"): take the gpu entry. */
    const char *p = s;
    while (p && *p) {
        while (*p == ',' || *p == ' ')
            p++;
        if (!strncmp(p, "gpu", 3) && (p[3] == ':' || p[3] == '(')) {
            const char *idx = strstr(p, "(IDX:");
            if (!idx)
                return -1;
            idx += 5;
            const char *end = strchr(idx, ')');
            if (!end)
                return -1;
            if (end - idx == 3 && !strncmp(idx, "N/A", 3))
                return 0;
            return parse_idx_list(idx, (size_t)(end - idx), out, max);
        }
        /* skip to the next top-level comma */
        int depth = 0;
        for (; *p; p++) {
            if (*p == '(')
                depth++;
            else if (*p == ')')
                depth--;
            else if (*p == ',' && depth == 0)
                break;
        }
    }
    return 0;
}

/* "gpu:4", "gpu:h100:8(S:0-1)", "gpu:4,nic:1" -> 4; 0 when no gpu entry. */
static int gres_gpu_count(const char *s)
{
    const char *p = s;
    while (p && *p) {
        while (*p == ',' || *p == ' ')
            p++;
        const char *start = p;
        int depth = 0;
        const char *last_colon = NULL, *paren = NULL;
        for (; *p; p++) {
            if (*p == '(') {
                if (!paren)
                    paren = p;
                depth++;
            } else if (*p == ')') {
                depth--;
            } else if (*p == ':' && depth == 0) {
                last_colon = p;
            } else if (*p == ',' && depth == 0) {
                break;
            }
        }
        if (!strncmp(start, "gpu", 3) && start[3] == ':' && last_colon) {
            char *end;
            errno = 0;
            long n = strtol(last_colon + 1, &end, 10);
            return !errno && end != last_colon + 1 && n > 0 && n <= PFI_MAX_GPUS ? (int)n : 0;
        }
    }
    return 0;
}

static int node_index(const pfi_cl_topo *t, const char *name)
{
    for (int i = 0; i < t->n_nodes; i++)
        if (!strcmp(t->nodes[i].name, name))
            return i;
    return -1;
}

static const char *jstr(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

/* Slurm's job_state: a string in 21.08/22.05, an array of strings in 23.02+. */
static int job_running(json_t *job)
{
    json_t *st = json_object_get(job, "job_state");
    if (json_is_string(st))
        return !strcmp(json_string_value(st), "RUNNING");
    if (json_is_array(st)) {
        size_t i;
        json_t *v;
        json_array_foreach(st, i, v) if (json_is_string(v) &&
                                         !strcmp(json_string_value(v), "RUNNING")) return 1;
    }
    return 0;
}

static int parse_nodes(json_t *sinfo, pfi_cl_topo *t, pfi_err *err)
{
    json_t *arr = json_object_get(sinfo, "nodes");
    if (!json_is_array(arr))
        return pfi_err_set(err, PFI_EINVAL, "sinfo --json: no \"nodes\" array");
    size_t n = json_array_size(arr);
    t->nodes = calloc(n ? n : 1, sizeof *t->nodes);
    if (!t->nodes)
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    size_t i;
    json_t *o;
    json_array_foreach(arr, i, o)
    {
        const char *name = jstr(o, "name");
        if (!name || !*name || strlen(name) >= PFI_CL_NAME_MAX)
            return pfi_err_set(err, PFI_EINVAL, "sinfo --json: node %zu has no usable name", i);
        if (node_index(t, name) >= 0)
            continue; /* sinfo lists a node once per partition */
        pfi_cl_topo_node *nd = &t->nodes[t->n_nodes++];
        snprintf(nd->name, sizeof nd->name, "%s", name);
        const char *a = jstr(o, "address");
        snprintf(nd->addr, sizeof nd->addr, "%s", a ? a : "");
        const char *g = jstr(o, "gres");
        nd->n_gpus = g ? gres_gpu_count(g) : 0;
        json_t *st = json_object_get(o, "state");
        if (json_is_string(st))
            snprintf(nd->state, sizeof nd->state, "%s", json_string_value(st));
        else if (json_is_array(st) && json_is_string(json_array_get(st, 0)))
            snprintf(nd->state, sizeof nd->state, "%s",
                     json_string_value(json_array_get(st, 0)));
    }
    return PFI_OK;
}

static int parse_jobs(json_t *squeue, pfi_cl_topo *t, pfi_err *err)
{
    json_t *arr = json_object_get(squeue, "jobs");
    if (!json_is_array(arr))
        return pfi_err_set(err, PFI_EINVAL, "squeue --json: no \"jobs\" array");
    size_t n = json_array_size(arr);
    t->jobs = calloc(n ? n : 1, sizeof *t->jobs);
    if (!t->jobs)
        return pfi_err_set(err, PFI_ENOMEM, "out of memory");
    size_t i;
    json_t *o;
    json_array_foreach(arr, i, o)
    {
        if (!job_running(o))
            continue;
        json_t *idv = json_object_get(o, "job_id");
        if (!json_is_integer(idv))
            return pfi_err_set(err, PFI_EINVAL, "squeue --json: job %zu has no job_id", i);
        json_t *gd = json_object_get(o, "gres_detail");
        json_t *an = json_object_get(json_object_get(o, "job_resources"), "allocated_nodes");
        if (!json_is_array(gd) || json_array_size(gd) == 0)
            continue; /* holds no GRES: not ours */
        if (!json_is_array(an) || json_array_size(an) != json_array_size(gd))
            return pfi_err_set(err, PFI_EINVAL,
                               "squeue --json: job %lld: gres_detail and allocated_nodes differ",
                               (long long)json_integer_value(idv));
        pfi_cl_topo_job *j = &t->jobs[t->n_jobs];
        snprintf(j->id, sizeof j->id, "%lld", (long long)json_integer_value(idv));
        j->parts = calloc(json_array_size(gd), sizeof *j->parts);
        if (!j->parts)
            return pfi_err_set(err, PFI_ENOMEM, "out of memory");
        t->n_jobs++;
        size_t k;
        json_t *g;
        json_array_foreach(gd, k, g)
        {
            const char *nn = jstr(json_array_get(an, k), "nodename");
            if (!nn || !json_is_string(g))
                return pfi_err_set(err, PFI_EINVAL, "squeue --json: job %s: malformed node %zu",
                                   j->id, k);
            int ni = node_index(t, nn);
            if (ni < 0)
                return pfi_err_set(err, PFI_ENOENT,
                                   "squeue --json: job %s runs on node %s, which sinfo does not "
                                   "list",
                                   j->id, nn);
            pfi_cl_topo_part *p = &j->parts[j->n_parts];
            int ng = pfi_cl_parse_gres_idx(json_string_value(g), p->gpus, PFI_MAX_GPUS);
            if (ng < 0)
                return pfi_err_set(err, PFI_EINVAL, "squeue --json: job %s: bad gres '%s'", j->id,
                                   json_string_value(g));
            if (ng == 0)
                continue;
            p->node = ni;
            p->n_gpus = ng;
            j->n_parts++;
        }
        if (j->n_parts == 0) {
            free(j->parts);
            j->parts = NULL;
            t->n_jobs--;
        }
    }
    return PFI_OK;
}

static json_t *load_json(const char *text, const char *what, pfi_err *err)
{
    json_error_t je;
    json_t *d = json_loads(text ? text : "", 0, &je);
    if (!d || !json_is_object(d)) {
        json_decref(d);
        pfi_err_set(err, PFI_EINVAL, "%s: not a JSON object (line %d: %s)", what, je.line,
                    je.text);
        return NULL;
    }
    return d;
}

int pfi_cl_topo_parse_slurm(const char *sinfo_json, const char *squeue_json, pfi_cl_topo *out,
                            pfi_err *err)
{
    memset(out, 0, sizeof *out);
    json_t *si = load_json(sinfo_json, "sinfo --json", err);
    if (!si)
        return PFI_EINVAL;
    json_t *sq = load_json(squeue_json, "squeue --json", err);
    if (!sq) {
        json_decref(si);
        return PFI_EINVAL;
    }
    int rc = parse_nodes(si, out, err);
    if (rc == PFI_OK)
        rc = parse_jobs(sq, out, err);
    json_decref(si);
    json_decref(sq);
    if (rc != PFI_OK)
        pfi_cl_topo_free(out);
    return rc;
}

/* At most this much of one command's answer: squeue --json writes ~5-10 KB a running job, so a
 * site of tens of thousands of jobs fits; a longer answer is cut and refused as JSON. */
#define SLURM_ANSWER_MAX (256u << 20)

/* One Slurm command through util/cmd (bounded in time: a hung slurmctld must not hold the
 * controller); its own error has no stderr, so the hint says where to look. */
static char *slurm_capture(char *const argv[], double timeout_s, pfi_err *err)
{
    char *out = NULL;
    if (pfi_cmd_capture(argv, timeout_s, SLURM_ANSWER_MAX, &out, err) != PFI_OK) {
        if (err) {
            char why[sizeof err->msg];
            snprintf(why, sizeof why, "%s", err->msg);
            pfi_err_set(err, err->code, "%s --json: %s: is Slurm reachable (try it by hand)?",
                        argv[0], why);
        }
        return NULL;
    }
    return out;
}

int pfi_cl_topo_from_slurm(double timeout_s, pfi_cl_topo *out, pfi_err *err)
{
    memset(out, 0, sizeof *out);
    if (!(timeout_s > 0))
        return pfi_err_set(err, PFI_EINVAL, "Slurm timeout %g s: expected more than 0", timeout_s);
    char *si_argv[] = {"sinfo", "--json", NULL};
    char *si = slurm_capture(si_argv, timeout_s, err);
    if (!si)
        return err ? err->code : PFI_ECHILD;
    char *sq_argv[] = {"squeue", "--json", "--states=RUNNING", NULL};
    char *sq = slurm_capture(sq_argv, timeout_s, err);
    if (!sq) {
        free(si);
        return err ? err->code : PFI_ECHILD;
    }
    int rc = pfi_cl_topo_parse_slurm(si, sq, out, err);
    free(si);
    free(sq);
    return rc;
}

int pfi_cl_topo_parse_json(const char *text, pfi_cl_topo *out, pfi_err *err)
{
    memset(out, 0, sizeof *out);
    json_t *d = load_json(text, "topology", err);
    if (!d)
        return PFI_EINVAL;
    int rc = PFI_OK;
    unsigned long long *held = NULL; /* the GPUs some job already holds, a bit each, per node */
    json_t *nodes = json_object_get(d, "nodes"), *jobs = json_object_get(d, "jobs");
    if (!json_is_array(nodes)) {
        rc = pfi_err_set(err, PFI_EINVAL, "topology: no \"nodes\" array");
        goto out;
    }
    size_t n_nodes = json_array_size(nodes), nj = json_is_array(jobs) ? json_array_size(jobs) : 0;
    out->nodes = calloc(n_nodes ? n_nodes : 1, sizeof *out->nodes);
    out->jobs = calloc(nj ? nj : 1, sizeof *out->jobs);
    if (!out->nodes || !out->jobs) {
        rc = pfi_err_set(err, PFI_ENOMEM, "out of memory");
        goto out;
    }
    _Static_assert(PFI_MAX_GPUS <= 64, "one bit per GPU");
    held = calloc(n_nodes ? n_nodes : 1, sizeof *held);
    if (!held) {
        rc = pfi_err_set(err, PFI_ENOMEM, "out of memory");
        goto out;
    }
    size_t i;
    json_t *o;
    json_array_foreach(nodes, i, o)
    {
        const char *name = jstr(o, "name");
        json_t *g = json_object_get(o, "gpus");
        if (!name || !*name || strlen(name) >= PFI_CL_NAME_MAX || !json_is_integer(g) ||
            json_integer_value(g) < 0 || json_integer_value(g) > PFI_MAX_GPUS) {
            rc = pfi_err_set(err, PFI_EINVAL, "topology: node %zu needs a name and 0..%d gpus", i,
                             PFI_MAX_GPUS);
            goto out;
        }
        if (node_index(out, name) >= 0) {
            rc = pfi_err_set(err, PFI_EINVAL, "topology: node %s listed twice", name);
            goto out;
        }
        pfi_cl_topo_node *n = &out->nodes[out->n_nodes++];
        snprintf(n->name, sizeof n->name, "%s", name);
        const char *a = jstr(o, "addr");
        snprintf(n->addr, sizeof n->addr, "%s", a ? a : "");
        n->n_gpus = (int)json_integer_value(g);
        snprintf(n->state, sizeof n->state, "up");
    }
    json_array_foreach(jobs, i, o)
    {
        const char *id = jstr(o, "id");
        json_t *parts = json_object_get(o, "parts");
        if (!id || !*id || strlen(id) >= PFI_CL_NAME_MAX || !json_is_array(parts)) {
            rc = pfi_err_set(err, PFI_EINVAL, "topology: job %zu needs an id and parts", i);
            goto out;
        }
        /* A job, a GPU or a job's node given twice is refused, not planned: a GPU in two
         * jobs (or twice in one) got two caps, the last one set winning, and was counted twice
         * in the site's sum. */
        for (int q = 0; q < out->n_jobs; q++)
            if (!strcmp(out->jobs[q].id, id)) {
                rc = pfi_err_set(err, PFI_EINVAL, "topology: job %s listed twice", id);
                goto out;
            }
        pfi_cl_topo_job *j = &out->jobs[out->n_jobs++];
        snprintf(j->id, sizeof j->id, "%s", id);
        j->parts = calloc(json_array_size(parts) + 1, sizeof *j->parts);
        if (!j->parts) {
            rc = pfi_err_set(err, PFI_ENOMEM, "out of memory");
            goto out;
        }
        size_t k;
        json_t *p;
        json_array_foreach(parts, k, p)
        {
            const char *nn = jstr(p, "node");
            int ni = nn ? node_index(out, nn) : -1;
            json_t *gs = json_object_get(p, "gpus");
            if (ni < 0 || !json_is_array(gs)) {
                rc = pfi_err_set(err, PFI_ENOENT, "topology: job %s: unknown node '%s'", id,
                                 nn ? nn : "");
                goto out;
            }
            for (int q = 0; q < j->n_parts; q++)
                if (j->parts[q].node == ni) {
                    rc = pfi_err_set(err, PFI_EINVAL, "topology: job %s: node %s listed twice",
                                     id, nn);
                    goto out;
                }
            pfi_cl_topo_part *pt = &j->parts[j->n_parts++];
            pt->node = ni;
            size_t q;
            json_t *gv;
            json_array_foreach(gs, q, gv)
            {
                long long g = json_integer_value(gv);
                if (!json_is_integer(gv) || g < 0 || g >= out->nodes[ni].n_gpus ||
                    pt->n_gpus >= PFI_MAX_GPUS) {
                    rc = pfi_err_set(err, PFI_EINVAL, "topology: job %s: node %s has no GPU %lld",
                                     id, nn, g);
                    goto out;
                }
                if (held[ni] >> g & 1) {
                    rc = pfi_err_set(err, PFI_EINVAL,
                                     "topology: job %s: GPU %lld of node %s is already given "
                                     "(to this job or another)", id, g, nn);
                    goto out;
                }
                held[ni] |= 1ull << g;
                pt->gpus[pt->n_gpus++] = (int)g;
            }
        }
    }
out:
    free(held);
    json_decref(d);
    if (rc != PFI_OK)
        pfi_cl_topo_free(out);
    return rc;
}

char *pfi_cl_topo_to_json(const pfi_cl_topo *t)
{
    json_t *nodes = json_array(), *jobs = json_array();
    for (int i = 0; i < t->n_nodes; i++)
        json_array_append_new(nodes, json_pack("{s:s, s:i}", "name", t->nodes[i].name, "gpus",
                                               t->nodes[i].n_gpus));
    for (int j = 0; j < t->n_jobs; j++) {
        json_t *parts = json_array();
        for (int k = 0; k < t->jobs[j].n_parts; k++) {
            const pfi_cl_topo_part *p = &t->jobs[j].parts[k];
            json_t *g = json_array();
            for (int q = 0; q < p->n_gpus; q++)
                json_array_append_new(g, json_integer(p->gpus[q]));
            json_array_append_new(parts, json_pack("{s:s, s:o}", "node",
                                                   t->nodes[p->node].name, "gpus", g));
        }
        json_array_append_new(jobs, json_pack("{s:s, s:o}", "id", t->jobs[j].id, "parts", parts));
    }
    json_t *d = json_pack("{s:o, s:o}", "nodes", nodes, "jobs", jobs);
    char *s = json_dumps(d, JSON_COMPACT);
    json_decref(d);
    return s;
}
