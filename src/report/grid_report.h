/* SPDX-License-Identifier: Apache-2.0 */
/* grid_report.h: a grid event's compliance report as people read it: DIR/report.md,
 * DIR/report.json (the document as received) and DIR/power.{png,svg} (site power per 1-minute
 * interval against the target and the budget in force, drawn by gnuplot; its .gp and .dat stay
 * beside it).  The document is the one GET /v1/grid/events/{id}/report answers (docs/api.md);
 * this file formats it and computes nothing about the event. */
#ifndef PFI_REPORT_GRID_REPORT_H
#define PFI_REPORT_GRID_REPORT_H

#include <stddef.h>

#include <jansson.h>

#include "core/err.h"

/* Writes the report under dir (created if missing); *written gets the document's
 * state_message, then a line per file written (and why the figure was not drawn, when gnuplot
 * failed: the rest is still written).  A document whose state has no draw to show
 * ("not_started", "no_samples") gets no figure, nor a verdict on excess and ramps, and the
 * figure files an earlier report left in dir are removed. */
int pfi_grid_report_write(json_t *doc, const char *dir, char *written, size_t size,
                          pfi_err *err);

#endif
