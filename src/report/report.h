/* SPDX-License-Identifier: Apache-2.0 */
/* report.h: what the study shows people: tables (written as Markdown and HTML from one
 * definition) and figures (drawn by gnuplot into PNG and SVG from one definition).
 * The report layer decides how things look; it computes nothing about jobs. */
#ifndef PFI_REPORT_REPORT_H
#define PFI_REPORT_REPORT_H

#include <stdio.h>

#include "core/err.h"

/* ---- tables ---- */
typedef struct pfi_table pfi_table;

pfi_table *pfi_table_new(int ncols, const char *const *headers);
/* Appends a row of ncols cells, formatted by the caller. */
int pfi_table_row(pfi_table *t, const char *const *cells);
/* Convenience: one printf-style cell at a time; a row ends after ncols cells. */
int pfi_table_cell(pfi_table *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void pfi_table_markdown(const pfi_table *t, FILE *f);
void pfi_table_html(const pfi_table *t, FILE *f);
void pfi_table_text(const pfi_table *t, FILE *f); /* aligned columns for a terminal */
void pfi_table_free(pfi_table *t);

/* v in fixed notation, never scientific (a table is read digit by digit): at least sig
 * significant digits, no decimals from 10^(sig-1) up, at most 9 decimals; "-" when not finite.
 * Returns buf. */
const char *pfi_fmt_fixed(char *buf, size_t n, double v, int sig);
/* v with `decimals` decimals and a comma between thousands ("20,649,419.4"), a sign when
 * plus is set ("+4,827.0"); "-" when not finite.  Returns buf. */
const char *pfi_fmt_sep(char *buf, size_t n, double v, int decimals, int plus);

/* ---- figures ---- */
typedef enum pfi_plot_style {
    PFI_PLOT_LINES,
    PFI_PLOT_POINTS,
    PFI_PLOT_LINESPOINTS,
    PFI_PLOT_BOXES,      /* histogram bars: x = bin centre, y = count */
    PFI_PLOT_ERRORBARS,  /* points with y error bars: needs ylo/yhi */
    PFI_PLOT_MARKS,      /* larger filled squares: points set apart from PFI_PLOT_POINTS */
} pfi_plot_style;

typedef struct pfi_plot pfi_plot;

pfi_plot *pfi_plot_new(const char *title, const char *xlabel, const char *ylabel);
/* Small multiples: the series added after this call go to a new panel with its own title and
 * axis labels (the first call names the panel pfi_plot_new made when it is still empty); the
 * plot's title then heads the whole figure.  Range, tic and label setters act on the latest
 * panel.  An axis left unset is drawn over its data's range plus 3% each side. */
int pfi_plot_panel(pfi_plot *p, const char *title, const char *xlabel, const char *ylabel);
/* Panels in rows x cols (filled row by row); 0, 0: about square (the default). */
void pfi_plot_layout(pfi_plot *p, int rows, int cols);
typedef enum pfi_plot_key {
    PFI_KEY_DEFAULT = 0, /* outside right for one panel, inside top left for several */
    PFI_KEY_OUTSIDE,
    PFI_KEY_TOP_LEFT,
    PFI_KEY_TOP_RIGHT,
    PFI_KEY_BOTTOM_LEFT,
    PFI_KEY_BOTTOM_RIGHT,
} pfi_plot_key;
/* Where the legend goes (in every panel). */
void pfi_plot_key_at(pfi_plot *p, pfi_plot_key key);
void pfi_plot_xrange(pfi_plot *p, double lo, double hi);
void pfi_plot_yrange(pfi_plot *p, double lo, double hi);
/* Distance between y tick marks (e.g. 1 for counts); default: gnuplot's choice. */
void pfi_plot_ytics(pfi_plot *p, double step);
/* Width of PFI_PLOT_BOXES bars in x units (default: gnuplot's, touching bars). */
void pfi_plot_boxwidth(pfi_plot *p, double width);
/* Adds a series.  color: a gnuplot colour name or "#rrggbb", NULL for the default cycle.
 * label NULL or "" keeps it out of the legend.  ylo/yhi only for PFI_PLOT_ERRORBARS.  y2=1:
 * on a second y axis (right), drawn over its own data's range. */
int pfi_plot_series(pfi_plot *p, const char *label, pfi_plot_style style, const char *color,
                    const double *x, const double *y, const double *ylo, const double *yhi, int n,
                    int y2);
/* Draws DIR/NAME.png and DIR/NAME.svg with gnuplot (keeping DIR/NAME.gp and NAME.dat beside
 * them so a reader can redraw or restyle them).  A figure without a single point (every series
 * empty or unknown) is not drawn: PFI_EINVAL, nothing written, gnuplot not run.  A series or a
 * panel without a point is drawn empty, without gnuplot's warnings. */
int pfi_plot_render(const pfi_plot *p, const char *dir, const char *name, pfi_err *err);
void pfi_plot_free(pfi_plot *p);

/* Colour for category i of a fixed, colour-blind-safe palette. */
const char *pfi_palette(int i);

#endif
