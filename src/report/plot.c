/* SPDX-License-Identifier: Apache-2.0 */
/* plot.c: figures through gnuplot.  We write the data and a gnuplot script next to the images
 * (so a reader can restyle them) and let gnuplot draw both PNG (pngcairo) and SVG. */
#include <errno.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "report/report.h"

extern char **environ;

typedef struct series {
    char *label;
    char *color;
    pfi_plot_style style;
    double *x, *y, *ylo, *yhi;
    int n, y2;
    int panel;
} series;

/* One set of axes.  A plot has one; pfi_plot_panel adds more (small multiples). */
typedef struct panel {
    char *title, *xlabel, *ylabel;
    double xlo, xhi, ylo, yhi, boxwidth, ytics;
    int has_x, has_y;
} panel;

struct pfi_plot {
    char *title;   /* of the whole figure when it has several panels */
    panel *pn;
    int npn;
    series *s;
    int ns;
    int rows, cols;         /* of the panels; 0: about square */
    pfi_plot_key key;
};

const char *pfi_palette(int i)
{
    /* Okabe-Ito: distinguishable with the common colour-vision deficiencies. */
    static const char *const pal[] = {"#0072B2", "#E69F00", "#009E73", "#D55E00",
                                      "#CC79A7", "#56B4E9", "#F0E442", "#000000"};
    return pal[(i % 8 + 8) % 8];
}

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

static int add_panel(pfi_plot *p, const char *title, const char *xlabel, const char *ylabel)
{
    panel *pn = realloc(p->pn, (size_t)(p->npn + 1) * sizeof *pn);
    if (!pn)
        return PFI_ENOMEM;
    p->pn = pn;
    panel *q = &p->pn[p->npn++];
    memset(q, 0, sizeof *q);
    q->title = dup_or_null(title);
    q->xlabel = dup_or_null(xlabel);
    q->ylabel = dup_or_null(ylabel);
    return PFI_OK;
}

pfi_plot *pfi_plot_new(const char *title, const char *xlabel, const char *ylabel)
{
    pfi_plot *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->title = dup_or_null(title);
    if (add_panel(p, title, xlabel, ylabel) != PFI_OK) {
        free(p->title);
        free(p);
        return NULL;
    }
    return p;
}

int pfi_plot_panel(pfi_plot *p, const char *title, const char *xlabel, const char *ylabel)
{
    /* The first call names the panel pfi_plot_new made, if nothing was drawn in it yet. */
    if (p->ns == 0 && p->npn == 1 && !p->pn[0].has_x && !p->pn[0].has_y) {
        panel *q = &p->pn[0];
        free(q->title), free(q->xlabel), free(q->ylabel);
        q->title = dup_or_null(title);
        q->xlabel = dup_or_null(xlabel);
        q->ylabel = dup_or_null(ylabel);
        return PFI_OK;
    }
    return add_panel(p, title, xlabel, ylabel);
}

void pfi_plot_layout(pfi_plot *p, int rows, int cols)
{
    p->rows = rows > 0 ? rows : 0;
    p->cols = cols > 0 ? cols : 0;
}

void pfi_plot_key_at(pfi_plot *p, pfi_plot_key key)
{
    p->key = key;
}

static panel *cur(pfi_plot *p)
{
    return &p->pn[p->npn - 1];
}

void pfi_plot_xrange(pfi_plot *p, double lo, double hi)
{
    panel *q = cur(p);
    q->xlo = lo, q->xhi = hi, q->has_x = 1;
}

void pfi_plot_yrange(pfi_plot *p, double lo, double hi)
{
    panel *q = cur(p);
    q->ylo = lo, q->yhi = hi, q->has_y = 1;
}

void pfi_plot_ytics(pfi_plot *p, double step)
{
    cur(p)->ytics = step;
}

void pfi_plot_boxwidth(pfi_plot *p, double width)
{
    cur(p)->boxwidth = width;
}

static double *copy(const double *v, int n)
{
    if (!v)
        return NULL;
    double *c = malloc((size_t)(n > 0 ? n : 1) * sizeof *c);
    if (c && n > 0)
        memcpy(c, v, (size_t)n * sizeof *c);
    return c;
}

int pfi_plot_series(pfi_plot *p, const char *label, pfi_plot_style style, const char *color,
                    const double *x, const double *y, const double *ylo, const double *yhi, int n,
                    int y2)
{
    if (style == PFI_PLOT_ERRORBARS && (!ylo || !yhi))
        return PFI_EINVAL;
    series *s = realloc(p->s, (size_t)(p->ns + 1) * sizeof *s);
    if (!s)
        return PFI_ENOMEM;
    p->s = s;
    series *t = &p->s[p->ns++];
    memset(t, 0, sizeof *t);
    t->label = dup_or_null(label);
    t->color = dup_or_null(color);
    t->style = style;
    t->n = n;
    t->y2 = y2;
    t->panel = p->npn - 1;
    t->x = copy(x, n);
    t->y = copy(y, n);
    t->ylo = copy(ylo, n);
    t->yhi = copy(yhi, n);
    return PFI_OK;
}

/* gnuplot strings are double-quoted; keep labels from breaking out of them. */
static void gp_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; s && *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        if (*s == '_' || *s == '^' || *s == '{' || *s == '}' || *s == '@' || *s == '&')
            fputc('\\', f), fputc('\\', f); /* enhanced-text markup, shown literally */
        fputc(*s, f);
    }
    fputc('"', f);
}

/* How many points of a series are drawn (both coordinates finite). */
static int n_drawn(const series *s)
{
    int m = 0;
    for (int k = 0; k < s->n; k++)
        m += isfinite(s->x[k]) && isfinite(s->y[k]);
    return m;
}

static int write_data(const pfi_plot *p, const char *path, pfi_err *err)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return pfi_err_set(err, PFI_EIO, "cannot write %s: %s", path, strerror(errno));
    for (int i = 0; i < p->ns; i++) {
        const series *s = &p->s[i];
        fprintf(f, "# series %d\n", i);
        for (int k = 0; k < s->n; k++) {
            if (!isfinite(s->x[k]) || !isfinite(s->y[k]))
                continue;
            fprintf(f, "%.9g %.9g", s->x[k], s->y[k]);
            if (s->style == PFI_PLOT_ERRORBARS)
                fprintf(f, " %.9g %.9g", s->ylo[k], s->yhi[k]);
            fputc('\n', f);
        }
        /* gnuplot needs at least one record per index, or it warns "Skipping data file with
         * no valid points" on the terminal: a series with nothing to draw (none given, or every
         * point unknown, as a grid event's draw before it starts) gets an invisible one. */
        if (n_drawn(s) == 0)
            fputs("NaN NaN\n", f);
        fputs("\n\n", f);
    }
    if (fclose(f) != 0)
        return pfi_err_set(err, PFI_EIO, "cannot write %s: %s", path, strerror(errno));
    return PFI_OK;
}

/* Data range of a panel's series on one axis (0 x, 1 y, 2 y2): [*lo, *hi], 0 when empty. */
static int data_range(const pfi_plot *p, int pn, int axis, double *lo, double *hi)
{
    int any = 0;
    *lo = INFINITY, *hi = -INFINITY;
    for (int i = 0; i < p->ns; i++) {
        const series *s = &p->s[i];
        if (s->panel != pn || (axis == 1 && s->y2) || (axis == 2 && !s->y2))
            continue;
        for (int k = 0; k < s->n; k++) {
            if (!isfinite(s->x[k]) || !isfinite(s->y[k]))
                continue;
            double v[3] = {axis == 0 ? s->x[k] : s->y[k], NAN, NAN};
            if (axis && s->style == PFI_PLOT_ERRORBARS)
                v[1] = s->ylo[k], v[2] = s->yhi[k];
            if (axis && s->style == PFI_PLOT_BOXES)
                v[1] = 0; /* bars stand on zero */
            for (int j = 0; j < 3; j++)
                if (isfinite(v[j])) {
                    *lo = fmin(*lo, v[j]), *hi = fmax(*hi, v[j]);
                    any = 1;
                }
        }
    }
    return any;
}

/* An axis the caller left open is set to the data's range plus 3% each side (gnuplot's own
 * autoscale would extend it to the next tic mark, which can leave a fifth of a panel empty). */
/* Writes the range; *used (may be NULL) gets it. */
static void tight_range(FILE *f, const char *axis, double lo, double hi, int from_zero,
                        double *used)
{
    double pad = hi > lo ? 0.03 * (hi - lo) : fabs(hi) > 0 ? 0.05 * fabs(hi) : 0.5;
    double a = lo - pad;
    if (from_zero && lo >= 0 && a < 0)
        a = 0;
    fprintf(f, "set %srange [%.9g:%.9g]\n", axis, a, hi + pad);
    if (used)
        used[0] = a, used[1] = hi + pad;
}

/* gnuplot writes 8000 where the report writes 8,000, and its own separators need a locale the
 * machine may lack: an axis that reaches 1,000 gets its tick labels written out, with
 * separators, at `step` or else at gnuplot's kind of step (1, 2 or 5 x a power of ten, about
 * six ticks).  Returns 0 (nothing written) for a smaller axis. */
static int sep_tics(FILE *f, const char *axis, double lo, double hi, double step)
{
    if (!(hi > lo) || fmax(fabs(lo), fabs(hi)) < 1000)
        return 0;
    if (!(step > 0)) {
        double raw = (hi - lo) / 6, m = pow(10, floor(log10(raw))), r = raw / m;
        step = (r < 1.5 ? 1 : r < 3.5 ? 2 : r < 7.5 ? 5 : 10) * m;
    }
    fprintf(f, "set %stics (", axis);
    long k0 = (long)ceil(lo / step - 1e-9), k1 = (long)floor(hi / step + 1e-9);
    for (long k = k0; k <= k1 && k - k0 < 100; k++) {
        char b[64];
        double v = (double)k * step;
        fprintf(f, "%s\"%s\" %.9g", k == k0 ? "" : ", ", pfi_fmt_sep(b, sizeof b, v, 0, 0), v);
    }
    fputs(")\n", f);
    return 1;
}

static int has_boxes(const pfi_plot *p, int pn)
{
    for (int i = 0; i < p->ns; i++)
        if (p->s[i].panel == pn && p->s[i].style == PFI_PLOT_BOXES)
            return 1;
    return 0;
}

static void write_label(FILE *f, const char *what, const char *text)
{
    fprintf(f, "set %s ", what);
    gp_string(f, text ? text : "");
    fputc('\n', f);
}

static void write_panel(const pfi_plot *p, int pn, FILE *f, const char *datname)
{
    const panel *q = &p->pn[pn];
    write_label(f, "title", q->title);
    write_label(f, "xlabel", q->xlabel);
    write_label(f, "ylabel", q->ylabel);
    int y2 = 0;
    for (int i = 0; i < p->ns; i++)
        y2 |= p->s[i].panel == pn && p->s[i].y2;
    if (y2)
        fputs("set y2tics\nset ytics nomirror\n", f);
    else
        fputs("unset y2tics\n", f);
    double lo, hi;
    int boxes = has_boxes(p, pn);
    if (q->has_x)
        fprintf(f, "set xrange [%.9g:%.9g]\n", q->xlo, q->xhi);
    else if (data_range(p, pn, 0, &lo, &hi))
        tight_range(f, "x", lo - (boxes ? q->boxwidth / 2 : 0), hi + (boxes ? q->boxwidth / 2 : 0),
                    0, NULL);
    else /* gnuplot cannot autoscale an axis without a point ("x range is invalid") */
        fputs("set xrange [0:1]\n", f);
    double yr[2] = {0, 1};
    if (q->has_y) {
        fprintf(f, "set yrange [%.9g:%.9g]\n", q->ylo, q->yhi);
        yr[0] = q->ylo, yr[1] = q->yhi;
    } else if (data_range(p, pn, 1, &lo, &hi)) {
        tight_range(f, "y", lo, hi, boxes, yr);
    } else {
        fputs("set yrange [0:1]\n", f);
    }
    if (y2 && data_range(p, pn, 2, &lo, &hi))
        tight_range(f, "y2", lo, hi, 0, NULL);
    if (sep_tics(f, "y", yr[0], yr[1], q->ytics))
        ; /* labels written out */
    else if (q->ytics > 0)
        fprintf(f, "set ytics %.9g\n", q->ytics);
    else
        fputs("set ytics autofreq\n", f);
    if (q->boxwidth > 0)
        fprintf(f, "set boxwidth %.9g absolute\n", q->boxwidth);
    fputs("plot ", f);
    int auto_color = 0, first = 1;
    for (int i = 0; i < p->ns; i++) {
        const series *s = &p->s[i];
        if (s->panel != pn)
            continue;
        const char *with = "lines lw 2";
        switch (s->style) {
        case PFI_PLOT_LINES: with = "lines lw 2"; break;
        case PFI_PLOT_POINTS: with = "points pt 7 ps 0.8"; break;
        case PFI_PLOT_LINESPOINTS: with = "linespoints lw 2 pt 7 ps 0.7"; break;
        case PFI_PLOT_BOXES: with = "boxes"; break;
        case PFI_PLOT_ERRORBARS: with = "yerrorbars pt 7 ps 0.6"; break;
        case PFI_PLOT_MARKS: with = "points pt 5 ps 1.0"; break;
        }
        const char *using = s->style == PFI_PLOT_ERRORBARS ? "1:2:3:4" : "1:2";
        fprintf(f, "%s'%s' index %d using %s%s with %s lc rgb '%s' ", first ? "" : ", \\\n     ",
                datname, i, using, s->y2 ? " axes x1y2" : "", with,
                s->color ? s->color : pfi_palette(auto_color++));
        first = 0;
        if (s->label && *s->label) {
            fputs("title ", f);
            gp_string(f, s->label);
        } else {
            fputs("notitle", f);
        }
    }
    if (first) /* a panel without series still gets its axes */
        fputs("NaN notitle", f);
    fputc('\n', f);
}

static void grid_of(const pfi_plot *p, int *rows, int *cols)
{
    *cols = p->cols ? p->cols : (int)ceil(sqrt((double)p->npn));
    *rows = p->rows ? p->rows : (p->npn + *cols - 1) / *cols;
    if (*rows * *cols < p->npn) /* a layout too small for the panels: add rows */
        *rows = (p->npn + *cols - 1) / *cols;
}

static void write_body(const pfi_plot *p, FILE *f, const char *datname)
{
    fputs("set grid lc rgb '#dddddd'\nset style fill solid 0.6 border -1\nset border 3\n"
          "set tics nomirror\n",
          f);
    static const char *const keys[] = {
        [PFI_KEY_DEFAULT] = "", [PFI_KEY_OUTSIDE] = "outside right top box opaque",
        [PFI_KEY_TOP_LEFT] = "inside left top", [PFI_KEY_TOP_RIGHT] = "inside right top",
        [PFI_KEY_BOTTOM_LEFT] = "inside left bottom", [PFI_KEY_BOTTOM_RIGHT] = "inside right bottom"};
    pfi_plot_key key = p->key ? p->key : p->npn == 1 ? PFI_KEY_OUTSIDE : PFI_KEY_TOP_LEFT;
    if (p->npn == 1) {
        fprintf(f, "set key %s Left reverse width 2\n", keys[key]);
        write_panel(p, 0, f, datname);
        return;
    }
    int rows, cols;
    grid_of(p, &rows, &cols);
    fprintf(f, "set key %s Left reverse samplen 2 font ',9'\n", keys[key]);
    fprintf(f, "set multiplot layout %d,%d rowsfirst title ", rows, cols);
    gp_string(f, p->title ? p->title : "");
    fputc('\n', f);
    for (int k = 0; k < p->npn; k++)
        write_panel(p, k, f, datname);
    fputs("unset multiplot\n", f);
}

/* Canvas size: one panel 960x600; small multiples 420x300 each (at least 960 wide). */
static void canvas(const pfi_plot *p, int *w, int *h)
{
    if (p->npn == 1) {
        *w = 960, *h = 600;
        return;
    }
    int rows, cols;
    grid_of(p, &rows, &cols);
    *w = cols * 420 < 960 ? 960 : cols * 420;
    *h = rows * 300 + 40;
}

static int run_gnuplot(const char *dir, const char *script, pfi_err *err)
{
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    /* gnuplot resolves the data file relative to its cwd: run it inside DIR.  A missing gnuplot
     * is exit 127 without the shell's own message: the caller says it once. */
    char *argv[] = {"sh", "-c",
                    "command -v gnuplot >/dev/null 2>&1 || exit 127; cd \"$1\" && exec gnuplot "
                    "\"$2\"",
                    "sh", (char *)dir, (char *)script, NULL};
    pid_t pid;
    int rc = posix_spawnp(&pid, "sh", &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0)
        return pfi_err_set(err, PFI_EIO, "cannot start gnuplot: %s", strerror(rc));
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        if (WIFEXITED(st) && WEXITSTATUS(st) == 127)
            return pfi_err_set(err, PFI_ENOENT,
                               "gnuplot not found: install it (apt-get install gnuplot-nox)");
        return pfi_err_set(err, PFI_EIO, "gnuplot failed on %s/%s", dir, script);
    }
    return PFI_OK;
}

int pfi_plot_render(const pfi_plot *p, const char *dir, const char *name, pfi_err *err)
{
    /* A figure without a single point is an empty frame (and gnuplot's warnings on the
     * terminal): it is not drawn, and the caller says why in words. */
    int drawn = 0;
    for (int i = 0; i < p->ns && !drawn; i++)
        drawn = n_drawn(&p->s[i]) > 0;
    if (!drawn)
        return pfi_err_set(err, PFI_EINVAL, "no data to draw (%s)",
                           p->ns ? "no series has a known point" : "no series");
    char dat[4096], gp[4096], datname[512], gpname[512];
    snprintf(datname, sizeof datname, "%s.dat", name);
    snprintf(gpname, sizeof gpname, "%s.gp", name);
    snprintf(dat, sizeof dat, "%s/%s", dir, datname);
    snprintf(gp, sizeof gp, "%s/%s", dir, gpname);
    int rc = write_data(p, dat, err);
    if (rc != PFI_OK)
        return rc;
    FILE *f = fopen(gp, "w");
    if (!f)
        return pfi_err_set(err, PFI_EIO, "cannot write %s: %s", gp, strerror(errno));
    int w, h;
    canvas(p, &w, &h);
    fprintf(f, "# Drawn by pfi; edit and run `gnuplot %s` to redraw.\n", gpname);
    fprintf(f, "set terminal pngcairo size %d,%d enhanced font 'Sans,11'\nset output '%s.png'\n",
            w, h, name);
    write_body(p, f, datname);
    fprintf(f, "set output\nset terminal svg size %d,%d enhanced font 'Sans,11' background rgb "
               "'white'\nset output '%s.svg'\n",
            w, h, name);
    write_body(p, f, datname);
    fputs("set output\n", f);
    if (fclose(f) != 0)
        return pfi_err_set(err, PFI_EIO, "cannot write %s: %s", gp, strerror(errno));
    return run_gnuplot(dir, gpname, err);
}

void pfi_plot_free(pfi_plot *p)
{
    if (!p)
        return;
    for (int i = 0; i < p->ns; i++) {
        series *s = &p->s[i];
        free(s->label), free(s->color), free(s->x), free(s->y), free(s->ylo), free(s->yhi);
    }
    for (int k = 0; k < p->npn; k++) {
        panel *q = &p->pn[k];
        free(q->title), free(q->xlabel), free(q->ylabel);
    }
    free(p->s);
    free(p->pn);
    free(p->title);
    free(p);
}
