/* SPDX-License-Identifier: Apache-2.0 */
/* alloc_vec.h: the allocator's per-job tests that every point of a curve passes, done in vector
 * lanes at a level of the CPU's vector instructions (PFI_ALLOC_VEC_* below, asked for by
 * pfi_alloc_opts.vec in alloc.h) chosen at run time.  Each says only "every point passes"; when it cannot say so (a point fails, or the
 * level is scalar, or the curve is short) the caller runs its scalar loop, which finds the
 * failing point and says what it says now: the answers are the same at every level.  The lanes
 * compare and compute exactly as the scalar loops do (a compare is exact; a product by a power
 * of two, a sum and a difference are correctly rounded alike; no fused multiply-add, which ISO
 * C mode leaves off).  Also the upper hulls of 4 jobs at once, one job a lane, for a fresh
 * build's jobs that share their candidate points (pfi_alloc_vec_hulls4): the same drop tests,
 * products and quotients lane by lane, so the same vertices and slopes.  Pure: reads the CPU's
 * features only. */
#ifndef PFI_CORE_ALLOC_VEC_H
#define PFI_CORE_ALLOC_VEC_H

/* Vector levels (opts.vec): the best the CPU runs, none, or at most the named one. */
enum {
    PFI_ALLOC_VEC_BEST = 0,
    PFI_ALLOC_VEC_SCALAR,
    PFI_ALLOC_VEC_AVX2,
    PFI_ALLOC_VEC_AVX512
};

/* The level `want` resolves to on this CPU: the best it runs for PFI_ALLOC_VEC_BEST, else want
 * or, when the CPU lacks it, the best below it. */
int pfi_alloc_vec_level(int want);

/* 1: every point of the curve (cx, cy; np points) is finite, each cap positive and above the
 * one before, each throughput non-negative (check_job's point tests, core/alloc.c).  0: not
 * known (the scalar loop decides). */
int pfi_alloc_vec_points_ok(int level, const double *cx, const double *cy, int np);

/* 1: every cap times inv (the exact inverse of a power-of-two step) is a whole number, each
 * (x + 2^52) - 2^52 - x being 0 (hull_on_grid's test, core/alloc_solve.c).  0: not known. */
int pfi_alloc_vec_on_grid(int level, const double *cx, int np, double inv);

/* 1: every throughput of cy (np points) is finite and non-negative (check_job's point tests
 * when the caps are known to pass).  0: not known. */
int pfi_alloc_vec_tput_ok(int level, const double *cy, int np);

/* 1: x and y hold the same np doubles bit for bit (np >= 1), 0: not (the same answer at every
 * level). */
int pfi_alloc_vec_same(int level, const double *x, const double *y, int np);

/* The most candidates pfi_alloc_vec_hulls4 takes (one bit of a 64-bit word each). */
#define PFI_ALLOC_VEC_HULL_MAX 64

/* Upper concave hulls of 4 jobs that share their candidate points: K[c] (c < nc, ascending
 * whole numbers below 2^31 as doubles) the candidates' grid indices, V[4 * c + l] lane l's
 * value there.  Bit c of alive[l] is set when candidate c is a vertex of lane l's hull: the
 * vertices that pushing the candidates in order through hull_push (core/alloc_solve.c) keeps,
 * by the same arithmetic (the same drop test, lane by lane).  SL[4 * c + l] (c >= 1) is the
 * slope from the vertex under c to c when c was pushed, (V[c] - V[u]) / (N[l] * (K[c] - K[u]))
 * with N[l] lane l's GPUs (a whole number below 2^31): for a vertex kept, its segment's slope
 * as the scalar loop computes it.  1: done; 0: the level is scalar or nc is not in [2,
 * PFI_ALLOC_VEC_HULL_MAX] (the caller builds the hulls one by one). */
int pfi_alloc_vec_hulls4(int level, const double *K, const double *V, const double *N, int nc,
                         unsigned long long alive[4], double *SL);

#endif
