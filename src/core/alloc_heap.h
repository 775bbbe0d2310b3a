/* SPDX-License-Identifier: Apache-2.0 */
/* alloc_heap.h: the binary max-heap the allocator's greedy fill pops from (core/alloc_solve.c),
 * and the same heap's top followed without the rest of it.
 *
 * Why.  After a job leaves a list of 100,000, a fill can hold ~60,000 jobs and pop a few dozen:
 * building the whole heap (Floyd's bottom-up heapify) costs ~1 ms, the pops ~20 us.  The
 * answer depends on the heap's order among equal keys, so the heap cannot be swapped for
 * another structure; but the elements with keys at or above a threshold (the "high" ones)
 * end in the same places whatever the others' keys are.  During a heapify or a sift-down, a
 * node whose key is below the threshold has only such nodes under it (its subtrees are heaps),
 * so a high element never moves because of how two low ones compare, and a high one always
 * wins against a low one.  A heap whose low elements are all one key below every high one
 * (-INFINITY here) therefore puts every high element where the real heap puts it, after the
 * heapify and after every pop or new key at the top, as long as the top is high.  Only the
 * nodes above high ones need a sift-down (level by level from the bottom: nodes of one level
 * have disjoint subtrees, so their order within it does not matter).
 *
 * Pure: no I/O, no globals. */
#ifndef PFI_CORE_ALLOC_HEAP_H
#define PFI_CORE_ALLOC_HEAP_H

/* Sift-down of position i in the max-heap h[0..nh) of items keyed by key[item]: the fill's heap
 * (ties: the parent stays, the left child before the right). */
void pfi_heap_down(int *h, const double *key, int nh, int i);

/* The top of a heap built by pfi_heap_down's heapify from items[0..nh) (keys key[item], all
 * > -INFINITY): the high elements (key >= thr) in their places, each other one a slot 0. */
typedef struct pfi_topheap {
    int nh;         /* the whole heap's size */
    int nt;         /* high elements: slots 1..nt */
    double thr;     /* the threshold */
    int *hp;        /* per position: a slot, 0 for a low element */
    int *item;      /* per slot: the caller's item */
    double *key;    /* per slot: its key (key[0] = -INFINITY) */
    int *up, *up2;  /* scratch: the nodes above high ones */
    unsigned char *mark;
    int cap;        /* the arrays above hold cap positions */
} pfi_topheap;

/* The want-th largest of key[items[q]], q < nh (1 <= want <= nh); scratch holds want doubles. */
double pfi_topheap_threshold(const int *items, const double *key, int nh, int want,
                             double *scratch);
/* Places the high elements of items[0..nh) as the heapify would (see above).  0: there are more
 * than max_high of them, or no memory (T unchanged but for its buffers). */
int pfi_topheap_make(pfi_topheap *T, const int *items, const double *key, int nh, double thr,
                     int max_high);
/* The slot at the top (0: a low element, unknown here). */
static inline int pfi_topheap_top(const pfi_topheap *T)
{
    return T->nh > 0 ? T->hp[0] : 0;
}
/* The top (a high element) gets key k and sinks: pfi_heap_down after key[item] = k.  A key
 * below the threshold makes it a low element. */
void pfi_topheap_rekey_top(pfi_topheap *T, double k);
/* The top leaves: the last element moves up to it and sinks (h[0] = h[--nh]; pfi_heap_down). */
void pfi_topheap_pop(pfi_topheap *T);
void pfi_topheap_free(pfi_topheap *T);

#endif
