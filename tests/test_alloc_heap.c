/* SPDX-License-Identifier: Apache-2.0 */
/* Tests of the fill's heap top (core/alloc_heap.h): after the heapify, and after every new key
 * at the top and every pop while the top is known, each element at or above the threshold sits
 * where the whole heap (pfi_heap_down, the code the fill runs) puts it, and each other position
 * holds an element below it; on heaps of 1 to 5,000 elements with many equal keys. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/alloc_heap.h"
#include "core/pfi.h"

static unsigned long long rng_state;
static double urand(void)
{
    return pfi_rand_uniform(&rng_state);
}
static int irand(int lo, int hi) /* inclusive */
{
    return lo + (int)(urand() * (hi - lo + 1));
}

enum { MAXN = 5000, ITEMS = 2 * MAXN };

/* A key from few values (ties everywhere) or from many. */
static double draw_key(int few)
{
    return few ? 1.0 + irand(0, few - 1) * 0.25 : 0.5 + urand();
}

/* Every high element where the whole heap h has it, every other position below thr. */
static void same_top(const pfi_topheap *T, const int *h, const double *key, int nh)
{
    assert_int_equal(T->nh, nh);
    for (int q = 0; q < nh; q++) {
        int s = T->hp[q];
        if (s) {
            assert_int_equal(T->item[s], h[q]);
            assert_true(T->key[s] == key[h[q]]);
            assert_true(key[h[q]] >= T->thr);
        } else
            assert_true(key[h[q]] < T->thr);
    }
}

static int cmp_desc(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a < b) - (a > b);
}

static void test_top_matches_heap(void **state)
{
    (void)state;
    static int items[MAXN], h[MAXN], perm[ITEMS];
    static double key[ITEMS], sorted[MAXN], scratch[MAXN];
    pfi_topheap T = {0};
    rng_state = 7;
    long long known_pops = 0, unknown = 0, rekeys = 0, demoted = 0;
    for (int round = 0; round < 400; round++) {
        int nh = round < 20 ? round + 1 : irand(1, round % 3 ? 300 : MAXN);
        int few = irand(0, 3) == 0 ? 0 : irand(1, 6);
        for (int i = 0; i < ITEMS; i++)
            perm[i] = i;
        for (int q = 0; q < nh; q++) { /* nh distinct items out of ITEMS, in any order */
            int r = irand(q, ITEMS - 1), t = perm[q];
            perm[q] = perm[r];
            perm[r] = t;
            items[q] = perm[q];
            key[items[q]] = draw_key(few);
        }
        int want = irand(1, nh);
        double thr = pfi_topheap_threshold(items, key, nh, want, scratch);
        for (int q = 0; q < nh; q++)
            sorted[q] = key[items[q]];
        qsort(sorted, (size_t)nh, sizeof *sorted, cmp_desc);
        assert_true(thr == sorted[want - 1]);
        assert_int_equal(pfi_topheap_make(&T, items, key, nh, thr, nh), 1);
        memcpy(h, items, (size_t)nh * sizeof *h);
        for (int i = nh / 2 - 1; i >= 0; i--)
            pfi_heap_down(h, key, nh, i);
        same_top(&T, h, key, nh);
        /* the fill's moves while the top is known: a new key at the top (lower, equal, higher,
         * below the threshold) or a pop */
        while (nh > 0 && pfi_topheap_top(&T)) {
            int s = pfi_topheap_top(&T);
            assert_int_equal(T.item[s], h[0]);
            if (urand() < 0.5) {
                double u = urand(), k = key[h[0]];
                k = u < 0.3 ? k : u < 0.5 ? k * 1.5 : u < 0.8 ? k * urand() : thr * urand();
                demoted += k < thr;
                key[h[0]] = k;
                pfi_topheap_rekey_top(&T, k);
                pfi_heap_down(h, key, nh, 0);
                rekeys++;
            } else {
                pfi_topheap_pop(&T);
                h[0] = h[--nh];
                pfi_heap_down(h, key, nh, 0);
                known_pops++;
            }
            same_top(&T, h, key, nh);
        }
        unknown += nh > 0;
    }
    /* the cases the fill meets all happened */
    assert_true(known_pops > 1000 && rekeys > 1000 && demoted > 100 && unknown > 100);
    /* more high elements than allowed: refused */
    for (int q = 0; q < 10; q++) {
        items[q] = q;
        key[q] = 1;
    }
    assert_int_equal(pfi_topheap_make(&T, items, key, 10, 1.0, 9), 0);
    pfi_topheap_free(&T);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_top_matches_heap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
