/* gpu.c: the GPU models (facts from reference/hardware.md, power constants modelled) and the
 * DVFS physics: voltage-frequency curve, busy power, and the clock the firmware picks. */
#include <ctype.h>
#include <math.h>
#include <string.h>
#include <strings.h>

#include "sim/physics.h"

/* Power constants (idle/busy_static/hbm/dyn, V-f floor and knee) are modelled: NVIDIA does not
 * publish them.  They are set so that the facts hold: H200 under a full GEMM load at 700 W
 * holds ~1500 MHz (hardware.md), idle ~75 W of which HBM ~42 W, and even a full load fits
 * under the 200 W minimum limit at the lowest clock (so every settable limit can be enforced);
 * an A100 SXM stage at 1410 MHz draws ~470 W (Perseus stage profile: a 500 W-class part, so a
 * 400 W limit binds); A100-PCIE draws ~93% of 300 W
 * on pipeline jobs; an A40 at 1740 MHz on compute draws ~295 W (Perseus stage profile).
 * `pfi sim validate` refits the A100-PCIE-80GB and A40 constants from measured sweeps.
 * The A40's NVLink is the 2-way bridge (112.5 GB/s both directions) that pairs cards. */
static const pfi_gpu_model models[] = {
    {.name = "H200-SXM", .nvml_name = "NVIDIA H200",
     .min_limit_w = 200, .max_limit_w = 700, .default_limit_w = 700,
     .idle_w = 75, .hbm_idle_w = 42, .hbm_w = 70, .busy_static_w = 20, .dyn_w = 1460,
     .sm_clock_idle_mhz = 345, .sm_clock_min_mhz = 345, .sm_clock_max_mhz = 1980,
     .mem_clock_mhz = 3201, .v_floor = 0.58, .f_knee = 0.45, .v_gamma = 1.5, .hbm_tbs = 4.8, .mem_gib = 141,
     .sms = 132, .bf16_tflops = 989.0 * 1980 / 1830, .gemm_eff = 0.80, .mem_eff = 0.6, .sat_frac = 0.3, .nvlink_gbs = 450,
     .pcie_gbs = 55, .tau_s = 0.25, .temp_c_per_w = 0.060},
    {.name = "H100-SXM", .nvml_name = "NVIDIA H100 80GB HBM3",
     .min_limit_w = 200, .max_limit_w = 700, .default_limit_w = 700,
     .idle_w = 72, .hbm_idle_w = 35, .hbm_w = 60, .busy_static_w = 20, .dyn_w = 1460,
     .sm_clock_idle_mhz = 345, .sm_clock_min_mhz = 345, .sm_clock_max_mhz = 1980,
     .mem_clock_mhz = 2619, .v_floor = 0.58, .f_knee = 0.45, .v_gamma = 1.5, .hbm_tbs = 3.35, .mem_gib = 80,
     .sms = 132, .bf16_tflops = 989.0 * 1980 / 1830, .gemm_eff = 0.78, .mem_eff = 0.6, .sat_frac = 0.3, .nvlink_gbs = 450,
     .pcie_gbs = 55, .tau_s = 0.25, .temp_c_per_w = 0.062},
    {.name = "A100-SXM", .nvml_name = "NVIDIA A100-SXM4-80GB",
     .min_limit_w = 100, .max_limit_w = 400, .default_limit_w = 400,
     .idle_w = 50, .hbm_idle_w = 22, .hbm_w = 40, .busy_static_w = 10, .dyn_w = 400,
     .sm_clock_idle_mhz = 210, .sm_clock_min_mhz = 210, .sm_clock_max_mhz = 1410,
     .mem_clock_mhz = 1593, .v_floor = 0.65, .f_knee = 0.50, .v_gamma = 1.5, .hbm_tbs = 2.04, .mem_gib = 80,
     .sms = 108, .bf16_tflops = 312, .gemm_eff = 0.75, .mem_eff = 0.6, .sat_frac = 0.3, .nvlink_gbs = 300, .pcie_gbs = 25,
     .tau_s = 0.25, .temp_c_per_w = 0.09},
    {.name = "A100-PCIE-80GB", .nvml_name = "NVIDIA A100 80GB PCIe",
     .min_limit_w = 150, .max_limit_w = 300, .default_limit_w = 300,
     .idle_w = 50, .hbm_idle_w = 22, .hbm_w = 45, .busy_static_w = 40, .dyn_w = 300,
     .sm_clock_idle_mhz = 210, .sm_clock_min_mhz = 210, .sm_clock_max_mhz = 1410,
     .mem_clock_mhz = 1512, .v_floor = 0.70, .f_knee = 0.50, .v_gamma = 1.5, .hbm_tbs = 1.94, .mem_gib = 80,
     .sms = 108, .bf16_tflops = 312, .gemm_eff = 0.75, .mem_eff = 0.6, .sat_frac = 0.3, .nvlink_gbs = 0, .pcie_gbs = 25,
     .tau_s = 0.25, .temp_c_per_w = 0.12},
    {.name = "A40", .nvml_name = "NVIDIA A40",
     .min_limit_w = 100, .max_limit_w = 300, .default_limit_w = 300,
     .idle_w = 30, .hbm_idle_w = 12, .hbm_w = 35, .busy_static_w = 40, .dyn_w = 230,
     .sm_clock_idle_mhz = 210, .sm_clock_min_mhz = 210, .sm_clock_max_mhz = 1740,
     .mem_clock_mhz = 7251, .v_floor = 0.70, .f_knee = 0.50, .v_gamma = 1.5, .hbm_tbs = 0.696, .mem_gib = 48,
     .sms = 84, .bf16_tflops = 149.7, .gemm_eff = 0.70, .mem_eff = 0.6, .sat_frac = 0.3, .nvlink_gbs = 56, .pcie_gbs = 25,
     .tau_s = 0.25, .temp_c_per_w = 0.15},
};
#define NMODELS ((int)(sizeof models / sizeof models[0]))

int pfi_gpu_model_count(void) { return NMODELS; }

const pfi_gpu_model *pfi_gpu_model_at(int i)
{
    return i >= 0 && i < NMODELS ? &models[i] : NULL;
}

/* "NVIDIA H200 SXM 141GB" -> "h200sxm141gb": people and tools spell the same part many ways. */
static void squash(const char *in, char *out, size_t cap)
{
    size_t n = 0;
    if (strncasecmp(in, "nvidia", 6) == 0)
        in += 6;
    for (; *in && n + 1 < cap; in++)
        if (isalnum((unsigned char)*in))
            out[n++] = (char)tolower((unsigned char)*in);
    out[n] = '\0';
}

const pfi_gpu_model *pfi_gpu_model_find(const char *name)
{
    if (!name)
        return NULL;
    char s[96];
    squash(name, s, sizeof s);
    static const struct { const char *alias; int model; } aliases[] = {
        {"h200", 0}, {"h200sxm", 0}, {"h200sxm141gb", 0}, {"h200141gb", 0}, {"gh200", 0},
        {"h100", 1}, {"h100sxm", 1}, {"h100sxm5", 1}, {"h10080gbhbm3", 1}, {"h100sxm580gb", 1},
        {"a100sxm", 2}, {"a100sxm4", 2}, {"a100sxm480gb", 2}, {"a100sxm440gb", 2}, {"a100", 2},
        {"a100pcie", 3}, {"a100pcie80gb", 3}, {"a10080gbpcie", 3}, {"a100pcie80g", 3},
        {"a40", 4},
    };
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (strcmp(s, aliases[i].alias) == 0)
            return &models[aliases[i].model];
    for (int i = 0; i < NMODELS; i++) {
        char c[96];
        squash(models[i].name, c, sizeof c);
        if (strcmp(s, c) == 0)
            return &models[i];
        squash(models[i].nvml_name, c, sizeof c);
        if (strcmp(s, c) == 0)
            return &models[i];
    }
    return NULL;
}

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
