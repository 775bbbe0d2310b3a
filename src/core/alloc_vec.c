/* SPDX-License-Identifier: Apache-2.0 */
/* alloc_vec.c: the per-job point tests, and 4 jobs' hulls, in vector lanes (alloc_vec.h).  One
 * body of 4-lane (256-bit) code compiled twice, for AVX2 and for AVX-512 (with its mask
 * registers and the 32-register file); the level is chosen at run time, so the default build
 * runs on any x86-64 CPU and takes the scalar loops where there is no AVX2.  Only whole 4-point
 * windows are loaded (masked loads cost more than the loop they save on some CPUs): the last
 * window ends at the last point, overlapping the one before, which an "every point passes" test
 * may do. */
#include "core/alloc_vec.h"

#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#define VEC_X86 1
#include <immintrin.h>
#include <math.h>
#endif

int pfi_alloc_vec_level(int want)
{
    int best = PFI_ALLOC_VEC_SCALAR;
#ifdef VEC_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2"))
        best = PFI_ALLOC_VEC_AVX2;
    if (best == PFI_ALLOC_VEC_AVX2 && __builtin_cpu_supports("avx512f") &&
        __builtin_cpu_supports("avx512vl"))
        best = PFI_ALLOC_VEC_AVX512;
#endif
    if (want == PFI_ALLOC_VEC_BEST || want > best)
        return best;
    return want < PFI_ALLOC_VEC_SCALAR ? PFI_ALLOC_VEC_SCALAR : want;
}

#ifdef VEC_X86

/* Inlined into the two bodies below, each compiled for its level. */
#define AI __attribute__((always_inline, target("avx2")))

static inline AI __m256d lanes_finite(__m256d x) /* |x| < inf: false for NaN and the infinities */
{
    return _mm256_cmp_pd(_mm256_andnot_pd(_mm256_set1_pd(-0.0), x), _mm256_set1_pd(INFINITY),
                         _CMP_LT_OQ);
}

/* Windows of points 1..np-1 (each with the one before it), the last ending at np - 1. */
static inline AI int points_ok(const double *cx, const double *cy, int np)
{
    if (np < 5)
        return 0;
    const __m256d z = _mm256_setzero_pd();
    __m256d ok = _mm256_and_pd(_mm256_cmp_pd(_mm256_set1_pd(cx[0]), z, _CMP_GT_OQ),
                               _mm256_cmp_pd(_mm256_set1_pd(cy[0]), z, _CMP_GE_OQ));
    ok = _mm256_and_pd(ok, _mm256_and_pd(lanes_finite(_mm256_set1_pd(cx[0])),
                                         lanes_finite(_mm256_set1_pd(cy[0]))));
    for (int q = 1; q < np; q += 4) {
        int p = q + 4 <= np ? q : np - 4;
        __m256d x = _mm256_loadu_pd(cx + p), y = _mm256_loadu_pd(cy + p),
                xp = _mm256_loadu_pd(cx + p - 1);
        ok = _mm256_and_pd(ok, _mm256_and_pd(lanes_finite(x), _mm256_cmp_pd(x, xp, _CMP_GT_OQ)));
        ok = _mm256_and_pd(ok, _mm256_and_pd(lanes_finite(y), _mm256_cmp_pd(y, z, _CMP_GE_OQ)));
    }
    /* cap > 0 follows for points 1.. from the first cap's and the increase */
    return _mm256_movemask_pd(ok) == 15;
}

/* Throughputs alone: finite and non-negative (windows of 4, the last ending at np - 1). */
static inline AI int tput_ok(const double *cy, int np)
{
    if (np < 4)
        return 0;
    const __m256d z = _mm256_setzero_pd();
    __m256d ok = _mm256_castsi256_pd(_mm256_set1_epi64x(-1));
    for (int q = 0; q < np; q += 4) {
        int p = q + 4 <= np ? q : np - 4;
        __m256d y = _mm256_loadu_pd(cy + p);
        ok = _mm256_and_pd(ok, _mm256_and_pd(lanes_finite(y), _mm256_cmp_pd(y, z, _CMP_GE_OQ)));
    }
    return _mm256_movemask_pd(ok) == 15;
}

/* Bit for bit the same np doubles (compared as 64-bit integers: -0 is not 0, a NaN is itself). */
static inline AI int same_bits(const double *x, const double *y, int np)
{
    if (np < 4)
        return 0;
    __m256i d = _mm256_setzero_si256();
    for (int q = 0; q < np; q += 4) {
        int p = q + 4 <= np ? q : np - 4;
        d = _mm256_or_si256(d, _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(x + p)),
                                                _mm256_loadu_si256((const __m256i *)(y + p))));
    }
    return _mm256_testz_si256(d, d);
}

static inline AI int on_grid(const double *cx, int np, double inv)
{
    if (np < 4)
        return 0;
    const __m256d vi = _mm256_set1_pd(inv), R = _mm256_set1_pd(4503599627370496.0),
                  z = _mm256_setzero_pd();
    __m256d off = z;
    for (int q = 0; q < np; q += 4) {
        int p = q + 4 <= np ? q : np - 4;
        __m256d x = _mm256_mul_pd(_mm256_loadu_pd(cx + p), vi);
        __m256d d = _mm256_sub_pd(_mm256_sub_pd(_mm256_add_pd(x, R), R), x);
        off = _mm256_or_pd(off, _mm256_cmp_pd(d, z, _CMP_NEQ_UQ)); /* NaN: off */
    }
    return _mm256_movemask_pd(off) == 0;
}

/* Upper hulls of 4 jobs at once (pfi_alloc_vec_hulls4): lane l is one job.  Each lane runs
 * hull_push's steps (core/alloc_solve.c) on its values: the top two vertices in registers
 * (k0, v0 below k1, v1; r0, r1 their candidates' rows), the vertex under row c's in below[c]
 * (a row per candidate, so a push stores a whole row and only a pop reads lane by lane), the
 * vertices kept as bits of alive.  A pop round repeats while some lane drops; the others keep
 * their registers, as a scalar loop that has broken out does. */
static inline AI void hulls4(const double *K, const double *V, const double *N, int nc,
                             long long *below, unsigned long long *alive, double *SL)
{
    const __m256i one = _mm256_set1_epi64x(1), lane = _mm256_set_epi64x(3, 2, 1, 0),
                  two = _mm256_set1_epi64x(2);
    const __m256d tol = _mm256_set1_pd(1e-13), sign = _mm256_set1_pd(-0.0);
    __m256i alv = _mm256_set1_epi64x(3), m = two, r0 = _mm256_setzero_si256(), r1 = one;
    __m256d k0 = _mm256_set1_pd(K[0]), v0 = _mm256_loadu_pd(V), k1 = _mm256_set1_pd(K[1]),
            v1 = _mm256_loadu_pd(V + 4);
    const __m256d nd = _mm256_loadu_pd(N);
    _mm256_storeu_si256((__m256i *)(below + 4), r0); /* row 0 under row 1 */
    _mm256_storeu_pd(SL + 4, _mm256_div_pd(_mm256_sub_pd(v1, v0),
                                           _mm256_mul_pd(nd, _mm256_sub_pd(k1, k0))));
    for (int c = 2; c < nc; c++) {
        const __m256d kd = _mm256_set1_pd(K[c]), v = _mm256_loadu_pd(V + 4 * c);
        __m256i act = _mm256_set1_epi64x(-1); /* every lane holds 2 vertices or more */
        for (;;) {
            __m256d l = _mm256_mul_pd(_mm256_sub_pd(v1, v0), _mm256_sub_pd(kd, k0));
            __m256d r = _mm256_mul_pd(_mm256_sub_pd(v, v0), _mm256_sub_pd(k1, k0));
            __m256d s = _mm256_add_pd(_mm256_andnot_pd(sign, l), _mm256_andnot_pd(sign, r));
            __m256d t = _mm256_add_pd(r, _mm256_mul_pd(tol, s));
            __m256i drop = _mm256_and_si256(_mm256_castpd_si256(_mm256_cmp_pd(l, t, _CMP_LE_OQ)),
                                            act);
            if (_mm256_testz_si256(drop, drop))
                break;
            alv = _mm256_andnot_si256(_mm256_and_si256(drop, _mm256_sllv_epi64(one, r1)), alv);
            m = _mm256_add_epi64(m, drop); /* drop is -1 where a lane pops */
            __m256d dd = _mm256_castsi256_pd(drop);
            k1 = _mm256_blendv_pd(k1, k0, dd);
            v1 = _mm256_blendv_pd(v1, v0, dd);
            r1 = _mm256_blendv_epi8(r1, r0, drop);
            act = _mm256_and_si256(drop, _mm256_cmpgt_epi64(m, one));
            if (_mm256_testz_si256(act, act))
                break;
            r0 = _mm256_mask_i64gather_epi64(r0, below,
                                             _mm256_add_epi64(_mm256_slli_epi64(r0, 2), lane),
                                             act, 8);
            __m256d ad = _mm256_castsi256_pd(act);
            k0 = _mm256_mask_i64gather_pd(k0, K, r0, ad, 8);
            v0 = _mm256_mask_i64gather_pd(v0, V, _mm256_add_epi64(_mm256_slli_epi64(r0, 2), lane),
                                          ad, 8);
        }
        _mm256_storeu_si256((__m256i *)(below + 4 * c), r1);
        /* the segment from the vertex under c: n * (kd - k1) is the exact product of two
         * whole numbers below 2^31, rounded once as the scalar's (double)(n * dk) is */
        _mm256_storeu_pd(SL + 4 * c, _mm256_div_pd(_mm256_sub_pd(v, v1),
                                                   _mm256_mul_pd(nd, _mm256_sub_pd(kd, k1))));
        alv = _mm256_or_si256(alv, _mm256_slli_epi64(one, c));
        m = _mm256_add_epi64(m, one);
        k0 = k1;
        v0 = v1;
        r0 = r1;
        k1 = kd;
        v1 = v;
        r1 = _mm256_set1_epi64x(c);
    }
    _mm256_storeu_si256((__m256i *)alive, alv);
}

__attribute__((target("avx2,avx512f,avx512vl"))) static int
points_ok_avx512(const double *cx, const double *cy, int np)
{
    return points_ok(cx, cy, np);
}

__attribute__((target("avx2"))) static int points_ok_avx2(const double *cx, const double *cy,
                                                          int np)
{
    return points_ok(cx, cy, np);
}

__attribute__((target("avx2,avx512f,avx512vl"))) static int on_grid_avx512(const double *cx,
                                                                          int np, double inv)
{
    return on_grid(cx, np, inv);
}

__attribute__((target("avx2"))) static int on_grid_avx2(const double *cx, int np, double inv)
{
    return on_grid(cx, np, inv);
}

__attribute__((target("avx2,avx512f,avx512vl"))) static int tput_ok_avx512(const double *cy, int np)
{
    return tput_ok(cy, np);
}

__attribute__((target("avx2"))) static int tput_ok_avx2(const double *cy, int np)
{
    return tput_ok(cy, np);
}

__attribute__((target("avx2,avx512f,avx512vl"))) static int same_avx512(const double *x,
                                                                       const double *y, int np)
{
    return same_bits(x, y, np);
}

__attribute__((target("avx2"))) static int same_avx2(const double *x, const double *y, int np)
{
    return same_bits(x, y, np);
}

__attribute__((target("avx2,avx512f,avx512vl"))) static void
hulls4_avx512(const double *K, const double *V, const double *N, int nc, long long *below,
              unsigned long long *alive, double *SL)
{
    hulls4(K, V, N, nc, below, alive, SL);
}

__attribute__((target("avx2"))) static void hulls4_avx2(const double *K, const double *V,
                                                       const double *N, int nc, long long *below,
                                                       unsigned long long *alive, double *SL)
{
    hulls4(K, V, N, nc, below, alive, SL);
}

#endif

int pfi_alloc_vec_tput_ok(int level, const double *cy, int np)
{
#ifdef VEC_X86
    if (level == PFI_ALLOC_VEC_AVX512)
        return tput_ok_avx512(cy, np);
    if (level == PFI_ALLOC_VEC_AVX2)
        return tput_ok_avx2(cy, np);
#endif
    (void)level, (void)cy, (void)np;
    return 0;
}

int pfi_alloc_vec_same(int level, const double *x, const double *y, int np)
{
#ifdef VEC_X86
    if (np >= 4 && level == PFI_ALLOC_VEC_AVX512)
        return same_avx512(x, y, np);
    if (np >= 4 && level == PFI_ALLOC_VEC_AVX2)
        return same_avx2(x, y, np);
#endif
    return np > 0 && memcmp(x, y, (size_t)np * sizeof *x) == 0;
}

int pfi_alloc_vec_points_ok(int level, const double *cx, const double *cy, int np)
{
#ifdef VEC_X86
    if (level == PFI_ALLOC_VEC_AVX512)
        return points_ok_avx512(cx, cy, np);
    if (level == PFI_ALLOC_VEC_AVX2)
        return points_ok_avx2(cx, cy, np);
#endif
    (void)level, (void)cx, (void)cy, (void)np;
    return 0;
}

int pfi_alloc_vec_on_grid(int level, const double *cx, int np, double inv)
{
#ifdef VEC_X86
    if (level == PFI_ALLOC_VEC_AVX512)
        return on_grid_avx512(cx, np, inv);
    if (level == PFI_ALLOC_VEC_AVX2)
        return on_grid_avx2(cx, np, inv);
#endif
    (void)level, (void)cx, (void)np, (void)inv;
    return 0;
}

int pfi_alloc_vec_hulls4(int level, const double *K, const double *V, const double *N, int nc,
                         unsigned long long alive[4], double *SL)
{
#ifdef VEC_X86
    long long below[4 * PFI_ALLOC_VEC_HULL_MAX];
    if (nc < 2 || nc > PFI_ALLOC_VEC_HULL_MAX)
        return 0;
    if (level == PFI_ALLOC_VEC_AVX512) {
        hulls4_avx512(K, V, N, nc, below, alive, SL);
        return 1;
    }
    if (level == PFI_ALLOC_VEC_AVX2) {
        hulls4_avx2(K, V, N, nc, below, alive, SL);
        return 1;
    }
#endif
    (void)level, (void)K, (void)V, (void)N, (void)nc, (void)alive, (void)SL;
    return 0;
}
