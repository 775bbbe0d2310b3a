/* SPDX-License-Identifier: Apache-2.0 */
/* telemetry.c: per-GPU samples behind each level, downsampled before they are stored so that a
 * sweep sampling at 10 Hz for hours stays a small file. */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "store/store.h"
#include "store/store_internal.h"

/* The double fields of pfi_sample, their have-bit, and their column (in this order in SQL). */
typedef struct field {
    uint32_t bit;
    size_t off;
} field;
#define F(bit, name) {bit, offsetof(pfi_sample, name)}
static const field fields[] = {
    F(PFI_F_POWER, power_w),          F(PFI_F_POWER_INST, power_inst_w),
    F(PFI_F_MEM_POWER, mem_power_w),  F(PFI_F_ENERGY, energy_j),
    F(PFI_F_SM_CLOCK, sm_clock_mhz),  F(PFI_F_MEM_CLOCK, mem_clock_mhz),
    F(PFI_F_GPU_UTIL, gpu_util),      F(PFI_F_SM_ACTIVE, sm_active),
    F(PFI_F_SM_OCCUPANCY, sm_occupancy), F(PFI_F_TENSOR, tensor_active),
    F(PFI_F_DRAM, dram_active),       F(PFI_F_NVLINK, nvlink_tx_mibs),
    F(PFI_F_NVLINK, nvlink_rx_mibs),  F(PFI_F_PCIE, pcie_tx_mibs),
    F(PFI_F_PCIE, pcie_rx_mibs),      F(PFI_F_TEMP, temp_c),
    F(PFI_F_MEM_USED, mem_used_mib),  F(PFI_F_LIMIT, limit_w),
    F(PFI_F_LIMIT, enforced_w),
};
#undef F
#define NFIELDS (sizeof fields / sizeof fields[0])
#define COLS                                                                                      \
    "power_w, power_inst_w, mem_power_w, energy_j, sm_clock_mhz, mem_clock_mhz, gpu_util,"       \
    " sm_active, sm_occupancy, tensor_active, dram_active, nvlink_tx_mibs, nvlink_rx_mibs,"      \
    " pcie_tx_mibs, pcie_rx_mibs, temp_c, mem_used_mib, limit_w, enforced_w"

static double *fld(pfi_sample *s, const field *f) { return (double *)((char *)s + f->off); }
static double fval(const pfi_sample *s, const field *f)
{
    return *(const double *)((const char *)s + f->off);
}

typedef struct bucket {
    int n;
    double t_sum;
    double sum[NFIELDS];
    int cnt[NFIELDS];
    uint32_t have;
    uint64_t reasons;
} bucket;

static void bucket_add(bucket *b, const pfi_sample *s)
{
    b->n++;
    b->t_sum += s->t_s;
    for (size_t k = 0; k < NFIELDS; k++) {
        double v = fval(s, &fields[k]);
        if ((s->have & fields[k].bit) && isfinite(v)) {
            b->sum[k] += v;
            b->cnt[k]++;
        }
    }
    b->have |= s->have;
    if (s->have & PFI_F_REASONS)
        b->reasons |= s->clock_reasons;
}

static void bucket_out(const bucket *b, pfi_sample *out)
{
    pfi_sample_clear(out);
    out->t_s = b->t_sum / b->n;
    out->have = b->have;
    for (size_t k = 0; k < NFIELDS; k++)
        if (b->cnt[k] > 0)
            *fld(out, &fields[k]) = b->sum[k] / b->cnt[k];
    /* A bit whose every value was NaN stays clear: missing, never a fake number. */
    for (size_t k = 0; k < NFIELDS; k++)
        if (b->cnt[k] == 0)
            out->have &= ~fields[k].bit;
    out->clock_reasons = b->reasons;
}

static int write_row(pfi_store *st, sqlite3_stmt *ins, long long level_id, int gpu, int n,
                     const pfi_sample *s, pfi_err *err)
{
    sqlite3_reset(ins);
    int i = 1;
    sqlite3_bind_int64(ins, i++, level_id);
    sqlite3_bind_int(ins, i++, gpu);
    sqlite3_bind_int(ins, i++, n);
    sqlite3_bind_int64(ins, i++, s->have);
    sqlite3_bind_double(ins, i++, s->t_s);
    for (size_t k = 0; k < NFIELDS; k++) {
        if (s->have & fields[k].bit)
            pfi_store_bind_real(ins, i, fval(s, &fields[k]));
        else
            sqlite3_bind_null(ins, i);
        i++;
    }
    if (s->have & PFI_F_REASONS)
        sqlite3_bind_int64(ins, i, (sqlite3_int64)s->clock_reasons);
    else
        sqlite3_bind_null(ins, i);
    int rc = sqlite3_step(ins);
    return rc == SQLITE_DONE ? PFI_OK : pfi_store_sqlerr(st, rc, err, "storing telemetry");
}

int pfi_store_add_samples(pfi_store *st, long long level_id, int gpu, const pfi_sample *samples,
                          int n, double period_s, pfi_err *err)
{
    if (n < 0 || (n > 0 && !samples) || gpu < 0)
        return pfi_err_set(err, PFI_EINVAL, "add_samples: bad arguments");
    for (int i = 0; i < n; i++)
        if (!isfinite(samples[i].t_s))
            return pfi_err_set(err, PFI_EINVAL, "GPU %d: telemetry sample %d has no time", gpu,
                               i);
    sqlite3_stmt *s;
    int rc = pfi_store_prepare(st, "SELECT 1 FROM levels WHERE id = ?", &s, err);
    if (rc != PFI_OK)
        return rc;
    sqlite3_bind_int64(s, 1, level_id);
    int src = sqlite3_step(s);
    sqlite3_finalize(s);
    if (src == SQLITE_DONE)
        return pfi_err_set(err, PFI_ENOENT, "no level %lld in '%s'", level_id, st->path);
    if (src != SQLITE_ROW)
        return pfi_store_sqlerr(st, src, err, "storing telemetry");
    if ((rc = pfi_store_prepare(st,
                                "INSERT INTO telemetry(level_id, gpu, n, have, t_s, " COLS
                                ", clock_reasons) VALUES (?,?,?,?,?,"
                                "?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                                &s, err)) != PFI_OK)
        return rc;
    bucket b;
    memset(&b, 0, sizeof b);
    double t0 = 0;
    for (int i = 0; i < n && rc == PFI_OK; i++) {
        if (b.n > 0 && (period_s <= 0 || samples[i].t_s - t0 >= period_s)) {
            pfi_sample out;
            bucket_out(&b, &out);
            rc = write_row(st, s, level_id, gpu, b.n, &out, err);
            memset(&b, 0, sizeof b);
        }
        if (b.n == 0)
            t0 = samples[i].t_s;
        bucket_add(&b, &samples[i]);
    }
    if (rc == PFI_OK && b.n > 0) {
        pfi_sample out;
        bucket_out(&b, &out);
        rc = write_row(st, s, level_id, gpu, b.n, &out, err);
    }
    sqlite3_finalize(s);
    return rc;
}

int pfi_store_load_telemetry(pfi_store *st, long long run_id, int level, pfi_telemetry_row **rows,
                             int *n, pfi_err *err)
{
    *rows = NULL;
    *n = 0;
    sqlite3_stmt *s;
    int rc = pfi_store_prepare(st,
                               "SELECT (SELECT seq FROM levels WHERE id = t.level_id) AS lseq,"
                               " gpu, have, t_s, " COLS ", clock_reasons FROM telemetry t"
                               " WHERE level_id IN (SELECT id FROM levels WHERE run_id = ?1"
                               "  AND (?2 < 0 OR seq = ?2))"
                               " ORDER BY lseq, gpu, t_s",
                               &s, err);
    if (rc != PFI_OK)
        return rc;
    sqlite3_bind_int64(s, 1, run_id);
    sqlite3_bind_int(s, 2, level);
    int cap = 0, src;
    pfi_telemetry_row *v = NULL;
    while ((src = sqlite3_step(s)) == SQLITE_ROW) {
        if (*n == cap) {
            int nc = cap ? 2 * cap : 256;
            pfi_telemetry_row *nv = realloc(v, (size_t)nc * sizeof *nv);
            if (!nv) {
                sqlite3_finalize(s);
                free(v);
                return pfi_err_set(err, PFI_ENOMEM, "out of memory loading telemetry");
            }
            v = nv;
            cap = nc;
        }
        pfi_telemetry_row *r = &v[(*n)++];
        r->level = sqlite3_column_int(s, 0);
        r->gpu = sqlite3_column_int(s, 1);
        pfi_sample_clear(&r->s);
        r->s.have = (uint32_t)sqlite3_column_int64(s, 2);
        r->s.t_s = sqlite3_column_double(s, 3);
        for (size_t k = 0; k < NFIELDS; k++)
            *fld(&r->s, &fields[k]) = pfi_store_col_real(s, 4 + (int)k);
        r->s.clock_reasons = (uint64_t)sqlite3_column_int64(s, 4 + (int)NFIELDS);
    }
    sqlite3_finalize(s);
    if (src != SQLITE_DONE) {
        free(v);
        *n = 0;
        return pfi_store_sqlerr(st, src, err, "loading telemetry");
    }
    *rows = v;
    return PFI_OK;
}

int pfi_store_level_durations(pfi_store *st, long long run_id, double *dur_s, int n, pfi_err *err)
{
    for (int i = 0; i < n; i++)
        dur_s[i] = NAN;
    sqlite3_stmt *s;
    int rc = pfi_store_prepare(st,
                               "SELECT l.seq, t.gpu, min(t.t_s), max(t.t_s), count(*)"
                               " FROM telemetry t JOIN levels l ON l.id = t.level_id"
                               " WHERE l.run_id = ?1 GROUP BY l.seq, t.gpu ORDER BY l.seq, t.gpu",
                               &s, err);
    if (rc != PFI_OK)
        return rc;
    sqlite3_bind_int64(s, 1, run_id);
    int src, last_seq = -1;
    while ((src = sqlite3_step(s)) == SQLITE_ROW) {
        int seq = sqlite3_column_int(s, 0);
        long k = (long)sqlite3_column_int64(s, 4);
        if (seq == last_seq || seq < 0 || seq >= n)
            continue; /* the level's first GPU speaks for it */
        last_seq = seq;
        /* Rows are the means of equal buckets: k rows span (k - 1) bucket widths between their
         * centres, k widths in all. */
        if (k >= 2)
            dur_s[seq] = (sqlite3_column_double(s, 3) - sqlite3_column_double(s, 2)) * (double)k /
                         (double)(k - 1);
    }
    sqlite3_finalize(s);
    if (src != SQLITE_DONE)
        return pfi_store_sqlerr(st, src, err, "loading level durations");
    /* A level's recorded start and end, where it has them, are its time exactly. */
    rc = pfi_store_prepare(st,
                           "SELECT seq, ended_s - began_s FROM levels"
                           " WHERE run_id = ?1 AND ended_s > began_s",
                           &s, err);
    if (rc != PFI_OK)
        return rc;
    sqlite3_bind_int64(s, 1, run_id);
    while ((src = sqlite3_step(s)) == SQLITE_ROW) {
        int seq = sqlite3_column_int(s, 0);
        if (seq >= 0 && seq < n)
            dur_s[seq] = sqlite3_column_double(s, 1);
    }
    sqlite3_finalize(s);
    if (src != SQLITE_DONE)
        return pfi_store_sqlerr(st, src, err, "loading level times");
    return PFI_OK;
}
