/* SPDX-License-Identifier: Apache-2.0 */
/* alloc_ids.h: the job ids of an allocator workspace, by position, for the duplicate check of a
 * job that arrives (an open-addressing hash of the ids; positions follow insertions and
 * removals in the middle of the jobs array). */
#ifndef PFI_CORE_ALLOC_IDS_H
#define PFI_CORE_ALLOC_IDS_H

#include "core/alloc.h"

typedef struct pfi_alloc_ids pfi_alloc_ids;

/* The ids of jobs[0..n) into *out: 1; 0: two are the same or one is missing (*out NULL); -1:
 * out of memory (*out NULL). */
int pfi_alloc_ids_make(pfi_alloc_ids **out, const pfi_alloc_job *jobs, int n);
/* jobs[j] arrived: jobs holds the n - 1 jobs the table knew, in their order, with the new one
 * at j.  1: added (positions from j on moved up one); 0: its id is taken (nothing changes);
 * -1: out of memory (nothing changes). */
int pfi_alloc_ids_insert(pfi_alloc_ids *t, const pfi_alloc_job *jobs, int n, int j);
/* The position of id in jobs (the array the table was made or last changed with), -1: none. */
int pfi_alloc_ids_find(const pfi_alloc_ids *t, const pfi_alloc_job *jobs, const char *id);
/* The job at position j left (the ones after it move down one). */
void pfi_alloc_ids_remove(pfi_alloc_ids *t, int j);
void pfi_alloc_ids_free(pfi_alloc_ids *t);

#endif
