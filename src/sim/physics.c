/* SPDX-License-Identifier: Apache-2.0 */
/* physics.c: the DVFS physics of a GPU model (core/gpu.h's catalogue): voltage-frequency curve,
 * busy power, and the clock the firmware picks. */
#include <math.h>
#include <stddef.h>

#include "sim/physics.h"

/* A point of the V-f curve: what the voltage at phi = f/fmax was computed from, kept so that
 * its slope (needed by a Newton step, not by the power) is computed only when asked for. */
typedef struct volt_pt {
    double phi, x, xg; /* x, xg: only above the knee */
    int above;
} volt_pt;

/* V(f)/V(fmax) at phi on the V-f curve (v_floor, f_knee, v_gamma), in three parts (the batch
 * of roots below runs the pow of several points one after the other): where phi lies, x^gamma,
 * the voltage. */
static inline void volt_pre(double f_knee, double phi, volt_pt *q)
{
    q->phi = phi;
    q->above = !(phi <= f_knee);
    if (q->above)
        q->x = (phi - f_knee) / (1.0 - f_knee);
}

static inline void volt_pow(double v_gamma, volt_pt *q)
{
    if (!q->above)
        return;
    double gamma = v_gamma > 0 ? v_gamma : 1.0;
    /* x^1.5 (every model's exponent) as x*sqrt(x): the same to an ulp or two, and the root
     * finder below calls this in its inner loop.  At f_max (x = 1, a third of all calls: every
     * phase the limit does not bind) x^gamma is exactly 1, as pow returns it. */
    q->xg = q->x == 1 ? 1 : gamma == 1.5 ? q->x * sqrt(q->x) : pow(q->x, gamma);
}

static inline double volt_post(double v_floor, const volt_pt *q)
{
    return q->above ? v_floor + (1.0 - v_floor) * q->xg : v_floor;
}

static inline double volt_at(double v_floor, double f_knee, double v_gamma, double phi,
                             volt_pt *q)
{
    volt_pre(f_knee, phi, q);
    volt_pow(v_gamma, q);
    return volt_post(v_floor, q);
}

/* dV/dphi at the point q. */
static inline double volt_slope(double v_floor, double f_knee, double v_gamma, const volt_pt *q)
{
    if (!q->above)
        return 0;
    double gamma = v_gamma > 0 ? v_gamma : 1.0;
    return (1.0 - v_floor) * gamma * q->xg / q->x / (1.0 - f_knee);
}

/* V(f)/V(fmax) at phi = f/fmax and its slope dV/dphi when dv is not NULL. */
static inline double volt_phi(double v_floor, double f_knee, double v_gamma, double phi,
                              double *dv)
{
    volt_pt q;
    double v = volt_at(v_floor, f_knee, v_gamma, phi, &q);
    if (dv)
        *dv = volt_slope(v_floor, f_knee, v_gamma, &q);
    return v;
}

double pfi_sim_volt(const pfi_gpu_model *g, double f_mhz)
{
    return volt_phi(g->v_floor, g->f_knee, g->v_gamma, f_mhz / g->sm_clock_max_mhz, NULL);
}

double pfi_sim_volt_phi(const pfi_gpu_model *g, double phi)
{
    return volt_phi(g->v_floor, g->f_knee, g->v_gamma, phi, NULL);
}

/* pfi_sim_phase_time's body, inlined into each GPU's step (a call to an exported function
 * is not: the shared library may interpose it). */
static inline double phase_time(const pfi_gpu_model *g, const pfi_sim_work *w,
                                const pfi_sim_op *op, int phase)
{
    double fmax = g->sm_clock_max_mhz, f = op->f[phase];
    if (phase == PFI_PH_COMPUTE)
        return w->t_comp * fmax / f;
    double sat = g->sat_frac * fmax / f;
    return (phase == PFI_PH_MEMORY ? w->t_mem : w->t_comm) * (sat > 1 ? sat : 1);
}

double pfi_sim_phase_time(const pfi_gpu_model *g, const pfi_sim_work *w, const pfi_sim_op *op,
                          int phase)
{
    return phase_time(g, w, op, phase);
}

double pfi_sim_work_busy(const pfi_gpu_model *g, const pfi_sim_work *w, const pfi_sim_op *op)
{
    pfi_sim_gpu_step st;
    pfi_sim_gpu_step_at(g, w, op, &st);
    return st.busy;
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
    /* Far apart, the larger one exactly, without erfc and exp: for x > 8.5, erfc(-x/sqrt 2)
     * is 2 (the nearest double to 2 - 1e-17: fdlibm's erfc, glibc's and musl's, returns
     * 2 - tiny below -6), so the first two terms are a + b * 0 = a, and theta * pdf
     * < a/8.5 * 8.2e-17 is under half an ulp of a: the formula's own result, bit for bit.
     * A quarter of a fit's GPU steps have their kernels this far above the overlap. */
    if (x > 8.5 && b >= 0)
        return a;
    double cdf = 0.5 * erfc(-x / sqrt(2.0));
    double pdf = exp(-0.5 * x * x) / sqrt(2.0 * M_PI);
    return a * cdf + b * (1 - cdf) + theta * pdf;
}

double pfi_sim_pipe_time(const pfi_gpu_model *g, const pfi_sim_work *w, const pfi_sim_op *op)
{
    pfi_sim_gpu_step st;
    pfi_sim_gpu_step_at(g, w, op, &st);
    return st.pipe;
}

void pfi_sim_gpu_step_at(const pfi_gpu_model *g, const pfi_sim_work *w, const pfi_sim_op *op,
                         pfi_sim_gpu_step *out)
{
    double busy = 0, sum = 0, energy = 0;
    for (int p = 0; p < PFI_PH_KERNELS; p++) {
        double t = phase_time(g, w, op, p);
        out->t[p] = t;
        busy += t;
        sum += t * op->f[p];
        energy += t * op->p[p];
    }
    out->busy = busy;
    out->fbusy = busy > 0 ? sum / busy : op->f[PFI_PH_COMPUTE];
    out->pbusy = busy > 0 ? energy / busy : g->idle_w;
    out->pipe = w->t_overlap > 0 ? expected_max(busy, PFI_SIM_KERNEL_JITTER * busy, w->t_overlap,
                                                w->sd_overlap)
                                 : busy;
}

double pfi_sim_pipe_spread(const pfi_sim_work *w, double busy)
{
    double sa = PFI_SIM_KERNEL_JITTER * busy;
    if (!(w->t_overlap > 0))
        return sa;
    double theta = sqrt(sa * sa + w->sd_overlap * w->sd_overlap);
    if (theta <= 0)
        return busy >= w->t_overlap ? sa : 0;
    return sa * 0.5 * erfc(-(busy - w->t_overlap) / theta / sqrt(2.0));
}

double pfi_sim_pipeline_step_spread(const double *pipe, const double *sd, int pp, double m,
                                    double t_host)
{
    /* Clark (1961): the maximum of two independent normals has mean
     * a Phi + b (1 - Phi) + theta phi and second moment (a^2 + sa^2) Phi + (b^2 + sb^2)
     * (1 - Phi) + (a + b) theta phi, x = (a - b)/theta; the maximum so far is taken as normal
     * with that mean and variance against the next stage. */
    double mu = pipe[0], var = sd[0] * sd[0], sum = pipe[0];
    for (int s = 1; s < pp; s++) {
        double b = pipe[s], vb = sd[s] * sd[s];
        sum += b;
        double theta = sqrt(var + vb);
        if (theta <= 0) {
            mu = mu > b ? mu : b;
            continue;
        }
        double x = (mu - b) / theta;
        double cdf = 0.5 * erfc(-x / sqrt(2.0));
        double pdf = exp(-0.5 * x * x) / sqrt(2.0 * M_PI);
        double m1 = mu * cdf + b * (1 - cdf) + theta * pdf;
        double m2 = (mu * mu + var) * cdf + (b * b + vb) * (1 - cdf) + (mu + b) * theta * pdf;
        mu = m1;
        var = m2 - m1 * m1 > 0 ? m2 - m1 * m1 : 0;
    }
    if (m < 1)
        m = 1;
    return (m - 1) / m * mu + sum / m + t_host;
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

void pfi_sim_power_law_of(const pfi_gpu_model *g, const pfi_sim_work *w, int phase, double eff,
                          pfi_sim_power_law *law)
{
    double act = phase == PFI_PH_COMPUTE ? w->act_comp
                 : phase == PFI_PH_MEMORY ? w->act_mem
                 : phase == PFI_PH_COMM   ? w->act_comm : w->act_spin;
    double dram = phase == PFI_PH_COMPUTE ? w->dram_comp
                  : phase == PFI_PH_MEMORY ? w->dram_mem
                  : phase == PFI_PH_COMM   ? w->dram_comm : w->dram_spin;
    /* Manufacturing variation (eff) scales leakage and switching power alike.  The sums and
     * products are grouped as the power's formula evaluates them left to right, so that the
     * power is bit for bit what the formula written out in full gives. */
    *law = (pfi_sim_power_law){
        .f_min = g->sm_clock_min_mhz,
        .f_max = g->sm_clock_max_mhz,
        .v_floor = g->v_floor,
        .f_knee = g->f_knee,
        .v_gamma = g->v_gamma,
        .base = g->idle_w + g->busy_static_w * eff + g->hbm_w * dram,
        .dyn = g->dyn_w * eff * act,
    };
}

/* Power of a phase at f: base + dyn * V(phi)^2 * phi, phi = f / f_max; *q and *v keep what
 * its slope needs. */
static inline double power_at(const pfi_sim_power_law *l, double f_mhz, volt_pt *q, double *v)
{
    *v = volt_at(l->v_floor, l->f_knee, l->v_gamma, f_mhz / l->f_max, q);
    return l->base + l->dyn * *v * *v * q->phi;
}

/* dP/df at the point power_at computed. */
static inline double power_slope_at(const pfi_sim_power_law *l, const volt_pt *q, double v)
{
    double dv = volt_slope(l->v_floor, l->f_knee, l->v_gamma, q);
    return l->dyn * (v * v + 2 * v * dv * q->phi) / l->f_max;
}

/* Power of a phase at f and its slope dP/df (when dp is not NULL). */
static inline double power_slope(const pfi_sim_power_law *l, double f_mhz, double *dp)
{
    volt_pt q;
    double v, p = power_at(l, f_mhz, &q, &v);
    if (dp)
        *dp = power_slope_at(l, &q, v);
    return p;
}

double pfi_sim_law_power(const pfi_sim_power_law *law, double f_mhz)
{
    return power_slope(law, f_mhz, NULL);
}

void pfi_sim_laws_power(const pfi_sim_power_law *law, int n, double f_mhz, double *p)
{
    /* power_at's operations, the voltage (which depends on the shared curve alone) once */
    volt_pt q;
    double v = volt_at(law->v_floor, law->f_knee, law->v_gamma, f_mhz / law->f_max, &q);
    for (int i = 0; i < n; i++)
        p[i] = law[i].base + law[i].dyn * v * v * q.phi;
}

double pfi_sim_phase_power(const pfi_gpu_model *g, const pfi_sim_work *w, int phase,
                           double f_mhz, double eff)
{
    pfi_sim_power_law law;
    pfi_sim_power_law_of(g, w, phase, eff, &law);
    return power_slope(&law, f_mhz, NULL);
}

/* How far past the root Newton's steps aim, in PFI_SIM_CLOCK_TOL: any value in (0, 1) ends on a
 * clock within the tolerance of the root.  A build with another value (scripts/
 * sim-fit-stability.sh) shows how much a result depends on the clocks' last bits. */
#ifndef PFI_SIM_ROOT_AIM
#define PFI_SIM_ROOT_AIM 0.25
#endif

/* One root's search: its bracket, the next clock to try and the steps taken.  The single
 * solver and the batch below run the very same start and steps on it. */
typedef struct root_state {
    double lo, hi, plo, phi, x;
    int i;
} root_state;

static inline void root_start(double limit_w, const pfi_sim_bracket *b, root_state *s)
{
    *s = (root_state){b->lo, b->hi, b->plo, b->phi, 0, 0};
    s->x = s->lo + (s->hi - s->lo) * (limit_w - s->plo) / (s->phi - s->plo);
}

static inline int root_done(const root_state *s)
{
    return !(s->i < 96 && s->hi - s->lo > PFI_SIM_CLOCK_TOL);
}

/* One step of a root's search in two parts around the pow of its point (root_step is both):
 * the point x and where it lies on the V-f curve, then the power there and the next point. */
static inline double step_begin(const pfi_sim_power_law *law, const root_state *s, volt_pt *q)
{
    double x = s->x;
    if (!(x > s->lo && x < s->hi))
        x = 0.5 * (s->lo + s->hi);
    volt_pre(law->f_knee, x / law->f_max, q);
    return x;
}

/* Phase power grows monotonically with f (V and f both do) and its slope is known, so Newton's
 * method kept inside the bracket finds the root in a few steps.  Each step aims a quarter of
 * the tolerance past the root, toward the end that has not moved, so that once the steps are
 * small the next point lands on the other side and closes the bracket to the width bisection
 * stopped at.  A step outside the bracket falls back to the secant, then to bisection. */
static inline void step_end(const pfi_sim_power_law *law, double limit_w, root_state *s,
                            double x, const volt_pt *q)
{
    const double tol = PFI_SIM_CLOCK_TOL;
    /* power_at's power, from the point's parts */
    double v = volt_post(law->v_floor, q);
    double px = law->base + law->dyn * v * v * q->phi, r = px - limit_w;
    if (r > 0) {
        s->hi = x;
        s->phi = px;
    } else {
        s->lo = x;
        s->plo = px;
    }
    s->i++;
    /* The bracket closed: the next point (a slope and three to four divisions) is never
     * used. */
    if (root_done(s))
        return;
    double dp = power_slope_at(law, q, v);
    double xn = dp > 0 ? x - r / dp : NAN;
    xn += r > 0 ? -PFI_SIM_ROOT_AIM * tol : PFI_SIM_ROOT_AIM * tol;
    if (!(xn > s->lo && xn < s->hi))
        xn = s->lo + (s->hi - s->lo) * (limit_w - s->plo) / (s->phi - s->plo);
    s->x = xn;
}

static inline void root_step(const pfi_sim_power_law *law, double limit_w, root_state *s)
{
    volt_pt q;
    double x = step_begin(law, s, &q);
    volt_pow(law->v_gamma, &q);
    step_end(law, limit_w, s, x, &q);
}

void pfi_sim_phase_root(const pfi_sim_power_law *law, double limit_w, pfi_sim_bracket *b)
{
    root_state s;
    root_start(limit_w, b, &s);
    while (!root_done(&s))
        root_step(law, limit_w, &s);
    *b = (pfi_sim_bracket){s.lo, s.hi, s.plo, s.phi};
}

/* Independent roots a few at a time.  One root's steps are a chain, each waiting for the last
 * (five divisions and a pow per step), so the core mostly waits; stepping ROOT_LANES roots in
 * turn lets it overlap their chains, the more so when the lanes' pows follow one another and
 * their divisions too.  A lane that finishes takes the next root.  Per root, on the first 400k
 * roots of a split-0 fit (Zen 4 core, shared): one at a time 190-215 ns; four lanes stepped
 * one after the other 130-140 ns; four lanes part by part 96-106 ns (3 lanes 112-121, 5
 * 99-104, 6 104-114, 8 121-127: more steps in flight than the core's window holds gain
 * nothing). */
#define ROOT_LANES 4

void pfi_sim_phase_roots(pfi_sim_root *r, int n)
{
    root_state s[ROOT_LANES];
    int job[ROOT_LANES], lanes = 0, next = 0;
    for (;;) {
        for (int l = 0; l < lanes;) {
            if (!root_done(&s[l])) {
                l++;
                continue;
            }
            r[job[l]].b = (pfi_sim_bracket){s[l].lo, s[l].hi, s[l].plo, s[l].phi};
            lanes--;
            s[l] = s[lanes];
            job[l] = job[lanes];
        }
        while (lanes < ROOT_LANES && next < n) {
            root_start(r[next].limit_w, &r[next].b, &s[lanes]);
            job[lanes] = next++;
            if (root_done(&s[lanes]))
                r[job[lanes]].b = (pfi_sim_bracket){s[lanes].lo, s[lanes].hi, s[lanes].plo,
                                                    s[lanes].phi};
            else
                lanes++;
        }
        if (lanes == 0)
            return;
        /* root_step on every lane, each part on all lanes before the next: the pows of the
         * lanes follow one another, as do the divisions after them */
        volt_pt q[ROOT_LANES];
        double x[ROOT_LANES];
        for (int l = 0; l < lanes; l++)
            x[l] = step_begin(r[job[l]].law, &s[l], &q[l]);
        for (int l = 0; l < lanes; l++)
            volt_pow(r[job[l]].law->v_gamma, &q[l]);
        for (int l = 0; l < lanes; l++)
            step_end(r[job[l]].law, r[job[l]].limit_w, &s[l], x[l], &q[l]);
    }
}

/* The highest clock of one phase whose power fits under limit_w (f_min when none does), to
 * PFI_SIM_CLOCK_TOL below the exact root, and its power there. */
static double phase_solve(const pfi_gpu_model *g, const pfi_sim_work *w, int phase,
                          double limit_w, double eff, double *power)
{
    pfi_sim_power_law law;
    pfi_sim_power_law_of(g, w, phase, eff, &law);
    pfi_sim_bracket b = {law.f_min, law.f_max, 0, 0};
    b.phi = power_slope(&law, b.hi, NULL);
    if (b.phi <= limit_w) {
        *power = b.phi;
        return b.hi;
    }
    b.plo = power_slope(&law, b.lo, NULL);
    if (b.plo < limit_w)
        pfi_sim_phase_root(&law, limit_w, &b);
    *power = b.plo;
    return b.lo;
}


double pfi_sim_phase_duration(const pfi_sim_work *w, int phase)
{
    return phase == PFI_PH_COMPUTE ? w->t_comp
           : phase == PFI_PH_MEMORY ? w->t_mem
           : phase == PFI_PH_COMM   ? w->t_comm : 0;
}

void pfi_sim_operating_point(const pfi_gpu_model *g, const pfi_sim_work *w, double limit_w,
                             double eff, pfi_sim_op *op)
{
    op->binds = 0;
    for (int p = 0; p < PFI_PH_N; p++) {
        op->f[p] = phase_solve(g, w, p, limit_w, eff, &op->p[p]);
        if (op->f[p] < g->sm_clock_max_mhz && pfi_sim_phase_duration(w, p) > 0)
            op->binds = 1;
    }
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
