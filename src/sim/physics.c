/* physics.c: the DVFS physics of a GPU model (core/gpu.h's catalogue): voltage-frequency curve,
 * busy power, and the clock the firmware picks. */
#include <math.h>

#include "sim/physics.h"

double pfi_sim_volt(const pfi_gpu_model *g, double f_mhz)
{
    double phi = f_mhz / g->sm_clock_max_mhz;
    if (phi <= g->f_knee)
        return g->v_floor;
    double x = (phi - g->f_knee) / (1.0 - g->f_knee);
    double gamma = g->v_gamma > 0 ? g->v_gamma : 1.0;
    return g->v_floor + (1.0 - g->v_floor) * pow(x, gamma);
}

double pfi_sim_phase_time(const pfi_gpu_model *g, const pfi_sim_work *w, const pfi_sim_op *op,
                          int phase)
{
    double fmax = g->sm_clock_max_mhz, f = op->f[phase];
    if (phase == PFI_PH_COMPUTE)
        return w->t_comp * fmax / f;
    double sat = g->sat_frac * fmax / f;
    return (phase == PFI_PH_MEMORY ? w->t_mem : w->t_comm) * (sat > 1 ? sat : 1);
}

double pfi_sim_work_busy(const pfi_gpu_model *g, const pfi_sim_work *w, const pfi_sim_op *op)
{
    return pfi_sim_phase_time(g, w, op, PFI_PH_COMPUTE) +
           pfi_sim_phase_time(g, w, op, PFI_PH_MEMORY) + pfi_sim_phase_time(g, w, op, PFI_PH_COMM);
}

/* Microbatches do not all take the same time: the kernels vary by PFI_SIM_KERNEL_JITTER, the
 * concurrent work by its own spread (an inter-host link far more than a peer copy), and the
 * pipeline waits for E[max(busy, overlap)] (Clark's formula for two independent normals): the
 * larger one when they are far apart, a little more than both when they are close, and the
 * wider the spread the softer the turn from one bound to the other. */
static double expected_max(double a, double sa, double b, double sb)
{
    double theta = sqrt(sa * sa + sb * sb);
    if (theta <= 0)
        return a > b ? a : b;
    double x = (a - b) / theta;
    double cdf = 0.5 * erfc(-x / sqrt(2.0));
    double pdf = exp(-0.5 * x * x) / sqrt(2.0 * M_PI);
    return a * cdf + b * (1 - cdf) + theta * pdf;
}

double pfi_sim_pipe_time(const pfi_gpu_model *g, const pfi_sim_work *w, const pfi_sim_op *op)
{
    double busy = pfi_sim_work_busy(g, w, op);
    return w->t_overlap > 0
               ? expected_max(busy, PFI_SIM_KERNEL_JITTER * busy, w->t_overlap, w->sd_overlap)
               : busy;
}

/* 1F1B: the slowest stage runs back to back (m - 1 microbatches), and filling and draining
 * the pipeline costs one microbatch of every stage. */
double pfi_sim_pipeline_step(const double *pipe, int pp, double m, double t_host)
{
    double mx = 0, sum = 0;
    for (int s = 0; s < pp; s++) {
        mx = pipe[s] > mx ? pipe[s] : mx;
        sum += pipe[s];
    }
    if (m < 1)
        m = 1;
    return (m - 1) / m * mx + sum / m + t_host;
}

double pfi_sim_phase_power(const pfi_gpu_model *g, const pfi_sim_work *w, int phase,
                           double f_mhz, double eff)
{
    double act = phase == PFI_PH_COMPUTE ? w->act_comp
                 : phase == PFI_PH_MEMORY ? w->act_mem
                 : phase == PFI_PH_COMM   ? w->act_comm : w->act_spin;
    double dram = phase == PFI_PH_COMPUTE ? w->dram_comp
                  : phase == PFI_PH_MEMORY ? w->dram_mem
                  : phase == PFI_PH_COMM   ? w->dram_comm : w->dram_spin;
    double v = pfi_sim_volt(g, f_mhz);
    /* Manufacturing variation (eff) scales leakage and switching power alike. */
    return g->idle_w + g->busy_static_w * eff + g->hbm_w * dram +
           g->dyn_w * eff * act * v * v * (f_mhz / g->sm_clock_max_mhz);
}

void pfi_sim_operating_point(const pfi_gpu_model *g, const pfi_sim_work *w, double limit_w,
                             double eff, pfi_sim_op *op)
{
    op->binds = 0;
    for (int p = 0; p < PFI_PH_N; p++) {
        double hi = g->sm_clock_max_mhz, lo = g->sm_clock_min_mhz;
        if (pfi_sim_phase_power(g, w, p, hi, eff) <= limit_w) {
            op->f[p] = hi;
            continue;
        }
        double dur = p == PFI_PH_COMPUTE ? w->t_comp
                     : p == PFI_PH_MEMORY ? w->t_mem
                     : p == PFI_PH_COMM   ? w->t_comm : 0;
        if (dur > 0)
            op->binds = 1;
        if (pfi_sim_phase_power(g, w, p, lo, eff) >= limit_w) {
            op->f[p] = lo;
            continue;
        }
        /* Phase power grows monotonically with f (V and f both do), so bisection finds it. */
        for (int i = 0; i < 48 && hi - lo > 1e-6; i++) {
            double mid = 0.5 * (lo + hi);
            if (pfi_sim_phase_power(g, w, p, mid, eff) > limit_w)
                hi = mid;
            else
                lo = mid;
        }
        op->f[p] = lo;
    }
}

double pfi_sim_busy_power(const pfi_gpu_model *g, const pfi_sim_work *w, const pfi_sim_op *op,
                          double eff)
{
    double busy = 0, energy = 0;
    for (int p = 0; p < PFI_PH_KERNELS; p++) {
        double t = pfi_sim_phase_time(g, w, op, p);
        busy += t;
        energy += t * pfi_sim_phase_power(g, w, p, op->f[p], eff);
    }
    return busy > 0 ? energy / busy : g->idle_w;
}

double pfi_sim_busy_clock(const pfi_gpu_model *g, const pfi_sim_work *w, const pfi_sim_op *op)
{
    double busy = 0, sum = 0;
    for (int p = 0; p < PFI_PH_KERNELS; p++) {
        double t = pfi_sim_phase_time(g, w, op, p);
        busy += t;
        sum += t * op->f[p];
    }
    return busy > 0 ? sum / busy : op->f[PFI_PH_COMPUTE];
}

/* splitmix64: a well-mixed hash, so any (seed, stream, index) gives an independent draw and
 * every process computes the same noise for the same instant. */
static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

double pfi_sim_uniform(uint64_t seed, uint64_t stream, uint64_t index)
{
    uint64_t h = mix(seed ^ mix(stream * 0x632be59bd9b4e019ull ^ mix(index)));
    return (double)(h >> 11) * (1.0 / 9007199254740992.0);
}

double pfi_sim_gauss(uint64_t seed, uint64_t stream, uint64_t index)
{
    double u1 = pfi_sim_uniform(seed, stream, 2 * index);
    double u2 = pfi_sim_uniform(seed, stream, 2 * index + 1);
    if (u1 < 1e-300)
        u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}
