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
} series;

struct pfi_plot {
    char *title, *xlabel, *ylabel, *y2label;
    double xlo, xhi, ylo, yhi, boxwidth, ytics;
    int has_x, has_y;
    series *s;
    int ns;
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

pfi_plot *pfi_plot_new(const char *title, const char *xlabel, const char *ylabel)
{
    pfi_plot *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->title = dup_or_null(title);
    p->xlabel = dup_or_null(xlabel);
    p->ylabel = dup_or_null(ylabel);
    return p;
}

void pfi_plot_xrange(pfi_plot *p, double lo, double hi)
{
    p->xlo = lo, p->xhi = hi, p->has_x = 1;
}

void pfi_plot_yrange(pfi_plot *p, double lo, double hi)
{
    p->ylo = lo, p->yhi = hi, p->has_y = 1;
}

void pfi_plot_ytics(pfi_plot *p, double step)
{
    p->ytics = step;
}

void pfi_plot_boxwidth(pfi_plot *p, double width)
{
    p->boxwidth = width;
}

void pfi_plot_y2label(pfi_plot *p, const char *label)
{
    free(p->y2label);
    p->y2label = dup_or_null(label);
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
        /* gnuplot needs at least one record per index; an empty series gets an invisible one */
        if (s->n == 0)
            fputs("NaN NaN\n", f);
        fputs("\n\n", f);
    }
    if (fclose(f) != 0)
        return pfi_err_set(err, PFI_EIO, "cannot write %s: %s", path, strerror(errno));
    return PFI_OK;
}

static void write_body(const pfi_plot *p, FILE *f, const char *datname)
{
    if (p->title) {
        fputs("set title ", f);
        gp_string(f, p->title);
        fputc('\n', f);
    }
    if (p->xlabel) {
        fputs("set xlabel ", f);
        gp_string(f, p->xlabel);
        fputc('\n', f);
    }
    if (p->ylabel) {
        fputs("set ylabel ", f);
        gp_string(f, p->ylabel);
        fputc('\n', f);
    }
    if (p->y2label) {
        fputs("set y2label ", f);
        gp_string(f, p->y2label);
        fputs("\nset y2tics\nset ytics nomirror\n", f);
    }
    if (p->has_x)
        fprintf(f, "set xrange [%.9g:%.9g]\n", p->xlo, p->xhi);
    if (p->has_y)
        fprintf(f, "set yrange [%.9g:%.9g]\n", p->ylo, p->yhi);
    if (p->ytics > 0)
        fprintf(f, "set ytics %.9g\n", p->ytics);
    if (p->boxwidth > 0)
        fprintf(f, "set boxwidth %.9g absolute\n", p->boxwidth);
    fputs("set grid lc rgb '#dddddd'\nset key outside right top box opaque Left reverse width 2\n"
          "set style fill solid 0.6 border -1\nset border 3\nset tics nomirror\n",
          f);
    fputs("plot ", f);
    int auto_color = 0;
    for (int i = 0; i < p->ns; i++) {
        const series *s = &p->s[i];
        const char *with = "lines lw 2";
        switch (s->style) {
        case PFI_PLOT_LINES: with = "lines lw 2"; break;
        case PFI_PLOT_POINTS: with = "points pt 7 ps 0.8"; break;
        case PFI_PLOT_LINESPOINTS: with = "linespoints lw 2 pt 7 ps 0.7"; break;
        case PFI_PLOT_BOXES: with = "boxes"; break;
        case PFI_PLOT_ERRORBARS: with = "yerrorbars pt 7 ps 0.6"; break;
        }
        const char *using = s->style == PFI_PLOT_ERRORBARS ? "1:2:3:4" : "1:2";
        fprintf(f, "%s'%s' index %d using %s%s with %s lc rgb '%s' ", i ? ", \\\n     " : "",
                datname, i, using, s->y2 ? " axes x1y2" : "", with,
                s->color ? s->color : pfi_palette(auto_color++));
        if (s->label && *s->label) {
            fputs("title ", f);
            gp_string(f, s->label);
        } else {
            fputs("notitle", f);
        }
    }
    fputc('\n', f);
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
    fprintf(f, "# Drawn by pfi; edit and run `gnuplot %s` to redraw.\n", gpname);
    fprintf(f, "set terminal pngcairo size 960,600 enhanced font 'Sans,11'\nset output '%s.png'\n",
            name);
    write_body(p, f, datname);
    fprintf(f, "set terminal svg size 960,600 enhanced font 'Sans,11' background rgb 'white'\n"
               "set output '%s.svg'\nreplot\nset output\n",
            name);
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
    free(p->s);
    free(p->title), free(p->xlabel), free(p->ylabel), free(p->y2label);
    free(p);
}
