/* SPDX-License-Identifier: Apache-2.0 */
/* alloc_ids.c: the job ids of an allocator workspace (alloc_ids.h).  Slots hold position + 1
 * (0: empty), probed linearly; each position's hash is kept, so ids are compared only when the
 * hashes are equal, and a removal closes its gap by moving later entries back. */
#include "core/alloc_ids.h"

#include <stdlib.h>
#include <string.h>

struct pfi_alloc_ids {
    unsigned *slot;  /* position + 1, 0: empty */
    unsigned *hash;  /* hash of each position's id */
    size_t cap;      /* slots, a power of two, at least twice the ids */
    int n, hash_cap;
};

static void put(pfi_alloc_ids *t, int pos)
{
    size_t m = t->cap - 1, i = t->hash[pos] & m;
    while (t->slot[i])
        i = (i + 1) & m;
    t->slot[i] = (unsigned)pos + 1;
}

/* Slots for n ids (the hashes are there): a new table, every position put again. */
static int rehash(pfi_alloc_ids *t, int n)
{
    size_t cap = 16;
    while (cap < 2 * (size_t)n + 2)
        cap <<= 1;
    unsigned *s = calloc(cap, sizeof *s);
    if (!s)
        return 0;
    free(t->slot);
    t->slot = s;
    t->cap = cap;
    for (int p = 0; p < t->n; p++)
        put(t, p);
    return 1;
}

static int hash_room(pfi_alloc_ids *t, int n)
{
    if (n <= t->hash_cap)
        return 1;
    int c = n + n / 4 + 16;
    unsigned *h = realloc(t->hash, (size_t)c * sizeof *h);
    if (!h)
        return 0;
    t->hash = h;
    t->hash_cap = c;
    return 1;
}

int pfi_alloc_ids_make(pfi_alloc_ids **out, const pfi_alloc_job *jobs, int n)
{
    *out = NULL;
    pfi_alloc_ids *t = calloc(1, sizeof *t);
    if (!t || !hash_room(t, n > 0 ? n : 1) || !rehash(t, n)) {
        pfi_alloc_ids_free(t);
        return -1;
    }
    size_t m = t->cap - 1;
    for (int j = 0; j < n; j++) {
        if (!jobs[j].id) {
            pfi_alloc_ids_free(t);
            return 0;
        }
        unsigned h = t->hash[j] = pfi_alloc_id_hash(jobs[j].id);
        size_t i = h & m;
        for (; t->slot[i]; i = (i + 1) & m) {
            int p = (int)t->slot[i] - 1;
            if (t->hash[p] == h && strcmp(jobs[p].id, jobs[j].id) == 0) {
                pfi_alloc_ids_free(t);
                return 0;
            }
        }
        t->slot[i] = (unsigned)j + 1;
        t->n = j + 1;
    }
    *out = t;
    return 1;
}

int pfi_alloc_ids_insert(pfi_alloc_ids *t, const pfi_alloc_job *jobs, int n, int j)
{
    const char *id = jobs[j].id;
    unsigned h = pfi_alloc_id_hash(id);
    size_t m = t->cap - 1;
    for (size_t i = h & m; t->slot[i]; i = (i + 1) & m) {
        int p = (int)t->slot[i] - 1;
        if (t->hash[p] == h && strcmp(jobs[p < j ? p : p + 1].id, id) == 0)
            return 0;
    }
    if (!hash_room(t, n))
        return -1;
    if (2 * (size_t)n + 2 > t->cap) { /* the positions moved up first, then all put again */
        memmove(t->hash + j + 1, t->hash + j, (size_t)(t->n - j) * sizeof *t->hash);
        t->hash[j] = h;
        t->n++;
        if (!rehash(t, n)) { /* back as it was */
            t->n--;
            memmove(t->hash + j, t->hash + j + 1, (size_t)(t->n - j) * sizeof *t->hash);
            return -1;
        }
        return 1;
    }
    if (j < t->n) { /* position p >= j: stored p + 1 > j; four at a time (cap: 16 << k) */
        unsigned *sl = t->slot, p = (unsigned)j;
        for (size_t i = 0; i < t->cap; i += 4) {
            sl[i] += sl[i] > p;
            sl[i + 1] += sl[i + 1] > p;
            sl[i + 2] += sl[i + 2] > p;
            sl[i + 3] += sl[i + 3] > p;
        }
    }
    memmove(t->hash + j + 1, t->hash + j, (size_t)(t->n - j) * sizeof *t->hash);
    t->hash[j] = h;
    t->n++;
    put(t, j);
    return 1;
}

int pfi_alloc_ids_find(const pfi_alloc_ids *t, const pfi_alloc_job *jobs, const char *id)
{
    unsigned h = pfi_alloc_id_hash(id);
    size_t m = t->cap - 1;
    for (size_t i = h & m; t->slot[i]; i = (i + 1) & m) {
        int p = (int)t->slot[i] - 1;
        if (t->hash[p] == h && strcmp(jobs[p].id, id) == 0)
            return p;
    }
    return -1;
}

void pfi_alloc_ids_remove(pfi_alloc_ids *t, int j)
{
    size_t m = t->cap - 1, i = t->hash[j] & m;
    while (t->slot[i] != (unsigned)j + 1)
        i = (i + 1) & m;
    /* close the gap: a later entry of the run moves back into it unless its home slot lies
     * cyclically in (gap, entry] */
    for (size_t k = (i + 1) & m; t->slot[k]; k = (k + 1) & m) {
        size_t home = t->hash[t->slot[k] - 1] & m;
        int stays = i <= k ? (home > i && home <= k) : (home > i || home <= k);
        if (!stays) {
            t->slot[i] = t->slot[k];
            i = k;
        }
    }
    t->slot[i] = 0;
    if (j + 1 < t->n) { /* cap is a power of two >= 16: four at a time, as vector code */
        unsigned *sl = t->slot, p = (unsigned)j + 1;
        for (size_t k = 0; k < t->cap; k += 4) {
            sl[k] -= sl[k] > p;
            sl[k + 1] -= sl[k + 1] > p;
            sl[k + 2] -= sl[k + 2] > p;
            sl[k + 3] -= sl[k + 3] > p;
        }
    }
    memmove(t->hash + j, t->hash + j + 1, (size_t)(t->n - j - 1) * sizeof *t->hash);
    t->n--;
}

void pfi_alloc_ids_free(pfi_alloc_ids *t)
{
    if (!t)
        return;
    free(t->slot);
    free(t->hash);
    free(t);
}
