/* SPDX-License-Identifier: Apache-2.0 */
/* alloc_heap.c: the fill's max-heap and its top without the rest (see alloc_heap.h for why the
 * top alone lands where the whole heap puts it). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc_heap.h"

void pfi_heap_down(int *h, const double *key, int nh, int i)
{
    for (;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        if (l < nh && key[h[l]] > key[h[m]])
            m = l;
        if (r < nh && key[h[r]] > key[h[m]])
            m = r;
        if (m == i)
            return;
        int t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

/* A min-heap of the want largest keys seen: its top is the threshold. */
static void min_down(double *m, int n, int i)
{
    for (;;) {
        int l = 2 * i + 1, r = l + 1, s = i;
        if (l < n && m[l] < m[s])
            s = l;
        if (r < n && m[r] < m[s])
            s = r;
        if (s == i)
            return;
        double t = m[i];
        m[i] = m[s];
        m[s] = t;
        i = s;
    }
}

double pfi_topheap_threshold(const int *items, const double *key, int nh, int want,
                             double *scratch)
{
    for (int q = 0; q < want; q++)
        scratch[q] = key[items[q]];
    for (int i = want / 2 - 1; i >= 0; i--)
        min_down(scratch, want, i);
    for (int q = want; q < nh; q++) {
        double k = key[items[q]];
        if (k > scratch[0]) {
            scratch[0] = k;
            min_down(scratch, want, 0);
        }
    }
    return scratch[0];
}

static int room(pfi_topheap *T, int nh)
{
    if (nh <= T->cap && T->hp)
        return 1;
    pfi_topheap_free(T);
    size_t c = (size_t)nh + (size_t)nh / 4 + 1;
    T->hp = malloc(c * sizeof *T->hp);
    T->item = malloc((c + 1) * sizeof *T->item);
    T->key = malloc((c + 1) * sizeof *T->key);
    T->up = malloc(c * sizeof *T->up);
    T->up2 = malloc(c * sizeof *T->up2);
    T->mark = malloc(c);
    if (!T->hp || !T->item || !T->key || !T->up || !T->up2 || !T->mark) {
        pfi_topheap_free(T);
        return 0;
    }
    T->cap = (int)c;
    return 1;
}

int pfi_topheap_make(pfi_topheap *T, const int *items, const double *key, int nh, double thr,
                     int max_high)
{
    if (nh < 1 || !room(T, nh))
        return 0;
    int nt = 0;
    int *pos = T->up2; /* the high elements' positions, in order */
    T->key[0] = -INFINITY;
    for (int q = 0; q < nh; q++) {
        double k = key[items[q]];
        if (k >= thr) {
            if (nt == max_high)
                return 0;
            nt++;
            T->item[nt] = items[q];
            T->key[nt] = k;
            T->hp[q] = nt;
            pos[nt - 1] = q;
        } else
            T->hp[q] = 0;
    }
    T->nh = nh;
    T->nt = nt;
    T->thr = thr;
    /* the nodes above high ones, each once, then grouped by level (deepest first) */
    memset(T->mark, 0, (size_t)nh);
    int nu = 0, cnt[32] = {0};
    for (int t = 0; t < nt; t++)
        for (int a = pos[t]; a > 0;) {
            a = (a - 1) / 2;
            if (T->mark[a])
                break;
            T->mark[a] = 1;
            T->up[nu++] = a;
            cnt[31 - __builtin_clz((unsigned)a + 1u)]++;
        }
    int start[32], at = 0; /* where level d begins, the deepest first */
    for (int d = 31; d >= 0; d--) {
        start[d] = at;
        at += cnt[d];
    }
    for (int u = 0; u < nu; u++) {
        int a = T->up[u];
        T->up2[start[31 - __builtin_clz((unsigned)a + 1u)]++] = a;
    }
    for (int u = 0; u < nu; u++)
        pfi_heap_down(T->hp, T->key, nh, T->up2[u]);
    return 1;
}

void pfi_topheap_rekey_top(pfi_topheap *T, double k)
{
    if (k >= T->thr)
        T->key[T->hp[0]] = k;
    else
        T->hp[0] = 0;
    pfi_heap_down(T->hp, T->key, T->nh, 0);
}

void pfi_topheap_pop(pfi_topheap *T)
{
    T->hp[0] = T->hp[--T->nh];
    pfi_heap_down(T->hp, T->key, T->nh, 0);
}

void pfi_topheap_free(pfi_topheap *T)
{
    free(T->hp);
    free(T->item);
    free(T->key);
    free(T->up);
    free(T->up2);
    free(T->mark);
    memset(T, 0, sizeof *T);
}
