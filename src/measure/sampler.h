/* SPDX-License-Identifier: Apache-2.0 */
/* sampler.h: telemetry of the swept GPUs at a fixed period of backend time (>= 10 Hz).
 *
 * Threaded (real time): a background thread samples every period while the sweep waits on the
 * job's output, so a slow log never thins the telemetry.  Inline (virtual time): the sweep
 * calls pfi_sampler_tick after each step of its clock; a thread would race the virtual clock.
 * Samples accumulate until pfi_sampler_reset (each level starts afresh). */
#ifndef PFI_MEASURE_SAMPLER_H
#define PFI_MEASURE_SAMPLER_H

#include "core/err.h"
#include "hw/hw.h"

typedef struct pfi_sampler pfi_sampler;

int pfi_sampler_new(pfi_backend *b, const int *gpus, int n, double period_s, int threaded,
                    pfi_sampler **out, pfi_err *err);
/* Stops the thread (if any) and frees. */
void pfi_sampler_free(pfi_sampler *s);
/* Inline mode: samples every GPU now.  A no-op in threaded mode. */
void pfi_sampler_tick(pfi_sampler *s);
void pfi_sampler_reset(pfi_sampler *s);
/* A copy of the samples so far: (*out)[tick * n + i] for the i-th swept GPU, *nticks rows.
 * free() it. */
int pfi_sampler_snapshot(pfi_sampler *s, pfi_sample **out, int *nticks, pfi_err *err);
/* Mean power per GPU of the latest tick (NAN before the first, or when not read). */
double pfi_sampler_last_power(pfi_sampler *s);
/* Failed reads so far, and the last message. */
long pfi_sampler_errors(pfi_sampler *s, char *msg, int n);

#endif
