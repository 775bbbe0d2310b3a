/* SPDX-License-Identifier: Apache-2.0 */
/* export.c: see export.h. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "store/csv.h"
#include "store/export.h"
#include "util/json.h"
#include "util/json_write.h"
#include "util/num.h"

const char *const pfi_export_columns[] = {
    "run_id",        "run_name",      "source",         "gpu_type",      "n_gpus",
    "model",         "family",        "dp",             "tp",            "pp",
    "global_batch",  "status",        "level",          "cap_w",         "enforced_w",
    "enforced_min_w",
    "power_w",       "job_power_w",   "tokens_per_s",   "samples_per_s", "throughput",
    "throughput_unit", "throughput_lo", "throughput_hi", "rel_throughput", "rel_power",
    "sm_clock_mhz",  "powercap_frac", "gpu_util",       "sm_active",     "tensor_active",
    "dram_active",   "nvlink_mibs",   "pcie_mibs",      "t_start_s",     "t_end_s",
    "n_samples",     "backend",       "simulated",      NULL,
};

int pfi_backend_is_simulated(const char *backend)
{
    return strncmp(backend, "sim", 3) == 0 || strncmp(backend, "nvml-sim", 8) == 0 ||
           strstr(backend, "simulated") != NULL;
}

void pfi_export_level_telemetry(json_t *o, const pfi_level *l)
{
    json_object_set_new(o, "sm_clock_mhz", pfi_json_num(l->sm_clock_mhz));
    json_object_set_new(o, "powercap_frac", pfi_json_num(l->powercap_frac));
    json_object_set_new(o, "gpu_util", pfi_json_num(l->gpu_util));
    json_object_set_new(o, "sm_active", pfi_json_num(l->sm_active));
    json_object_set_new(o, "tensor_active", pfi_json_num(l->tensor_active));
    json_object_set_new(o, "dram_active", pfi_json_num(l->dram_active));
    json_object_set_new(o, "nvlink_mibs", pfi_json_num(l->nvlink_mibs));
    json_object_set_new(o, "pcie_mibs", pfi_json_num(l->pcie_mibs));
    json_object_set_new(o, "t_start_s", pfi_json_num(l->t_start_s));
    json_object_set_new(o, "t_end_s", pfi_json_num(l->t_end_s));
    json_object_set_new(o, "n_samples", json_integer(l->n_samples));
}

static json_t *int_or_null(int v) { return v > 0 ? json_integer(v) : json_null(); }

/* bad: a json_object_set_new failed, which drops the key (jansson refused a string that is not
 * UTF-8): a row that looks whole but is not must not be written. */
static json_t *whole_or_null(json_t *o, int bad)
{
    if (!bad)
        return o;
    json_decref(o);
    return NULL;
}

json_t *pfi_export_level_fields(const pfi_run *run, const pfi_run_summary *sum, int level)
{
    const pfi_level *l = &run->levels[level];
    json_t *o = json_object();
    int bad = !o;
    bad |= json_object_set_new(o, "cap_w", pfi_json_num(l->cap_w));
    bad |= json_object_set_new(o, "enforced_w", pfi_json_num(l->enforced_w));
    bad |= json_object_set_new(o, "enforced_min_w",
                               pfi_json_num(l->enforced_min_w > 0 ? l->enforced_min_w : NAN));
    bad |= json_object_set_new(o, "power_w", pfi_json_num(l->power_w));
    bad |= json_object_set_new(o, "job_power_w", pfi_json_num(l->power_w * run->n_gpus));
    /* Only an absolute rate goes in the unit-named columns; a relative one (epochs/s of an
     * unknown dataset size) is in throughput, with its unit beside it. */
    int tokens = strcmp(sum->unit_label, "tokens/s") == 0;
    int samples = strcmp(sum->unit_label, "samples/s") == 0;
    bad |= json_object_set_new(o, "tokens_per_s", tokens ? pfi_json_num(l->tput) : json_null());
    bad |= json_object_set_new(o, "samples_per_s", samples ? pfi_json_num(l->tput) : json_null());
    bad |= json_object_set_new(o, "throughput", pfi_json_num(l->tput));
    bad |= json_object_set_new(o, "throughput_unit", json_string(sum->unit_label));
    bad |= json_object_set_new(o, "throughput_lo", pfi_json_num(l->tput_lo));
    bad |= json_object_set_new(o, "throughput_hi", pfi_json_num(l->tput_hi));
    bad |= json_object_set_new(o, "rel_throughput", pfi_json_num(l->tput / sum->t0));
    bad |= json_object_set_new(o, "rel_power", pfi_json_num(l->power_w / sum->p0));
    pfi_export_level_telemetry(o, l);
    return whole_or_null(o, bad);
}

json_t *pfi_export_level_json(const pfi_run *run, const pfi_run_summary *sum, int level)
{
    const pfi_job_meta *m = &run->meta;
    json_t *o = json_object();
    int bad = !o;
    bad |= json_object_set_new(o, "run_id", json_integer(run->id));
    bad |= json_object_set_new(o, "run_name", json_string(run->name));
    bad |= json_object_set_new(o, "source", json_string(run->source));
    bad |= json_object_set_new(o, "gpu_type", json_string(run->gpu_type));
    bad |= json_object_set_new(o, "n_gpus", json_integer(run->n_gpus));
    bad |= json_object_set_new(o, "model", pfi_json_str(m->model));
    bad |= json_object_set_new(o, "family", pfi_json_str(m->family));
    bad |= json_object_set_new(o, "dp", int_or_null(m->dp));
    bad |= json_object_set_new(o, "tp", int_or_null(m->tp));
    bad |= json_object_set_new(o, "pp", int_or_null(m->pp));
    bad |= json_object_set_new(o, "global_batch", int_or_null(m->global_batch));
    bad |= json_object_set_new(o, "status", json_string(sum->status));
    bad |= json_object_set_new(o, "level", json_integer(level));
    json_t *fields = pfi_export_level_fields(run, sum, level);
    bad |= !fields || json_object_update(o, fields) != 0;
    json_decref(fields);
    /* Which GPUs measured it: "nvml", "sim", "nvml-sim" (the fake NVML over the simulator),
     * possibly with what was simulated; NULL for imported data. */
    bad |= json_object_set_new(o, "backend",
                               sum->backend[0] ? json_string(sum->backend) : json_null());
    bad |= json_object_set_new(o, "simulated", sum->backend[0] ? json_boolean(pfi_backend_is_simulated(
                                                                     sum->backend))
                                                               : json_null());
    return whole_or_null(o, bad);
}

static void write_csv_value(FILE *out, json_t *v)
{
    char buf[64];
    if (json_is_string(v))
        pfi_csv_write_field(out, json_string_value(v));
    else if (json_is_integer(v))
        fprintf(out, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    else if (json_is_real(v)) {
        /* the stored double exactly: 15 digits changed 3,369 of 3,566 power_w and
         * throughput values of the public data (248.88729140209105 as 248.887291402091) */
        pfi_num_shortest(buf, sizeof buf, json_real_value(v));
        fputs(buf, out);
    } else if (json_is_boolean(v))
        fputs(json_is_true(v) ? "true" : "false", out); /* as JSON spells it; pandas reads it */
}

/* v into w, as json_dumpf writes it (members in their order), reals with PFI_JW_SHORTEST. */
static void write_json_value(pfi_jw *w, json_t *v)
{
    const char *key;
    json_t *m;
    size_t i;
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        pfi_jw_object(w);
        json_object_foreach(v, key, m) {
            pfi_jw_key(w, key);
            write_json_value(w, m);
        }
        pfi_jw_end(w);
        break;
    case JSON_ARRAY:
        pfi_jw_array(w);
        json_array_foreach(v, i, m)
            write_json_value(w, m);
        pfi_jw_end(w);
        break;
    case JSON_STRING:
        pfi_jw_string(w, json_string_value(v));
        break;
    case JSON_INTEGER:
        pfi_jw_integer(w, json_integer_value(v));
        break;
    case JSON_REAL:
        pfi_jw_real(w, json_real_value(v));
        break;
    case JSON_TRUE:
    case JSON_FALSE:
        pfi_jw_bool(w, json_is_true(v));
        break;
    default:
        pfi_jw_null(w);
    }
}

static int export_one(pfi_store *st, long long id, int format, FILE *out, pfi_jw *arr,
                      pfi_run *run, pfi_err *err)
{
    pfi_run_summary sum;
    int rc;
    if ((rc = pfi_store_run_summary(st, id, &sum, err)) != PFI_OK ||
        (rc = pfi_store_load_run(st, id, run, err)) != PFI_OK)
        return rc;
    for (int i = 0; i < run->n_levels; i++) {
        json_t *o = pfi_export_level_json(run, &sum, i);
        if (!o)
            return pfi_err_set(err, PFI_EINVAL, "run %lld: a name or field is not UTF-8 text "
                               "(a store written before names were checked), or memory ran out",
                               id);
        if (format == PFI_EXPORT_JSON) {
            write_json_value(arr, o);
            json_decref(o);
            continue;
        }
        for (int c = 0; pfi_export_columns[c]; c++) {
            if (c)
                fputc(',', out);
            write_csv_value(out, json_object_get(o, pfi_export_columns[c]));
        }
        fputc('\n', out);
        json_decref(o);
    }
    return PFI_OK;
}

int pfi_store_export(pfi_store *st, const long long *ids, int n, int format, FILE *out,
                     pfi_err *err)
{
    if (format != PFI_EXPORT_CSV && format != PFI_EXPORT_JSON)
        return pfi_err_set(err, PFI_EINVAL, "unknown export format %d", format);
    long long *all = NULL;
    if (n == 0) {
        pfi_run_summary *list;
        int rc = pfi_store_list_runs(st, &list, &n, err);
        if (rc != PFI_OK)
            return rc;
        all = malloc((size_t)(n ? n : 1) * sizeof *all);
        if (!all) {
            free(list);
            return pfi_err_set(err, PFI_ENOMEM, "out of memory");
        }
        for (int i = 0; i < n; i++)
            all[i] = list[i].id;
        free(list);
        ids = all;
    }
    /* A pfi_run is large (64 levels): one on the heap, reused. */
    pfi_run *run = malloc(sizeof *run);
    /* Written as json_dumpf with JSON_INDENT(1) wrote it, but every real exact (its 15 digits
     * were not the stored double) and with no json_t of the whole export. */
    pfi_jw jw, *arr = format == PFI_EXPORT_JSON ? &jw : NULL;
    pfi_jw_init(&jw, 1, PFI_JW_SHORTEST);
    if (arr)
        pfi_jw_array(arr);
    int rc = run ? PFI_OK : pfi_err_set(err, PFI_ENOMEM, "out of memory");
    if (rc == PFI_OK && format == PFI_EXPORT_CSV) {
        for (int c = 0; pfi_export_columns[c]; c++)
            fprintf(out, "%s%s", c ? "," : "", pfi_export_columns[c]);
        fputc('\n', out);
    }
    for (int i = 0; i < n && rc == PFI_OK; i++)
        rc = export_one(st, ids[i], format, out, arr, run, err);
    if (rc == PFI_OK && arr) {
        pfi_jw_end(arr);
        if (arr->failed)
            rc = pfi_err_set(err, PFI_ENOMEM, "out of memory writing the export");
        else
            fwrite(arr->buf, 1, arr->len, out);
        fputc('\n', out);
    }
    /* Why, said: "writing the export failed" alone hid a full disk. */
    int flushed = fflush(out) == 0, why = errno;
    if (rc == PFI_OK && (!flushed || ferror(out)))
        rc = pfi_err_set(err, PFI_EIO, "writing the export failed: %s",
                         flushed ? "a write failed" : strerror(why));
    pfi_jw_free(&jw);
    free(run);
    free(all);
    return rc;
}
