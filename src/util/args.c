/* SPDX-License-Identifier: Apache-2.0 */
#include "util/args.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "util/text.h"
#include "util/units.h"

static const pfi_opt *find_opt(const pfi_opt *opts, const char *name, size_t len)
{
    for (const pfi_opt *o = opts; o && o->name; o++)
        if (strlen(o->name) == len && strncmp(o->name, name, len) == 0)
            return o;
    return NULL;
}

static int store(const pfi_opt *o, const char *val, pfi_err *err)
{
    char *end;
    int kind = o->kind & ~(PFI_OPT_OLD | PFI_OPT_EMPTY);
    /* Refused here, once for every command, rather than by each command that noticed: an
     * empty --db was the default store to one command and "no store at :" to another. */
    if (!val[0] && !(o->kind & PFI_OPT_EMPTY) && (kind == PFI_OPT_STR || kind == PFI_OPT_MULTI))
        return pfi_err_set(err, PFI_EINVAL, "--%s is empty", o->name);
    switch (kind) {
    case PFI_OPT_STR:
        *(const char **)o->dest = val;
        return PFI_OK;
    case PFI_OPT_INT: {
        errno = 0;
        long v = strtol(val, &end, 10);
        if (errno || end == val || *end || v < INT_MIN || v > INT_MAX)
            return pfi_err_set(err, PFI_EINVAL, "--%s expects an integer, got '%s'", o->name, val);
        *(int *)o->dest = (int)v;
        return PFI_OK;
    }
    case PFI_OPT_DOUBLE: {
        double v;
        /* Not NaN: commands take NaN for "not given" (pfi ctl job add --weight nan registered
         * the job with weight 1); not an infinity: no option means one, and JSON has none;
         * decimal, as every other number a person types (util/units.h). */
        if (pfi_parse_decimal(val, &v, NULL) != 0)
            return pfi_err_set(err, PFI_EINVAL, "--%s expects a number, got '%s'", o->name, val);
        *(double *)o->dest = v;
        return PFI_OK;
    }
    case PFI_OPT_MULTI: {
        pfi_strlist *l = o->dest;
        if (l->n >= PFI_STRLIST_MAX)
            return pfi_err_set(err, PFI_EINVAL, "too many --%s options (max %d)", o->name,
                               PFI_STRLIST_MAX);
        l->v[l->n++] = val;
        return PFI_OK;
    }
    }
    return pfi_err_set(err, PFI_EINTERNAL, "option --%s has an unknown kind", o->name);
}

int pfi_args_parse(const pfi_cmd_spec *spec, int argc, char **argv, char ***pos, int *npos,
                   int *dashdash, pfi_err *err)
{
    static char *empty[1];
    *pos = empty;
    *npos = 0;
    if (dashdash)
        *dashdash = -1;
    /* Positionals are compacted to the front of argv+1, keeping their order. */
    char **out = argv + 1;
    int n = 0;
    for (int i = 1; i < argc; i++) {
        char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            if (dashdash)
                *dashdash = n;
            for (int j = i + 1; j < argc; j++)
                out[n++] = argv[j];
            break;
        }
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            pfi_args_usage(spec, stdout);
            return PFI_ARGS_HELP;
        }
        /* "-c" would otherwise pass as a positional and be called an unexpected argument;
         * "-", "-5" and "-10%" stay positionals. */
        if (a[0] == '-' && isalpha((unsigned char)a[1]))
            return pfi_err_set(err, PFI_EINVAL,
                               "unknown option '%s' (pfi's options are long: --NAME; see --help)",
                               a);
        if (strncmp(a, "--", 2) != 0 || a[2] == '\0') {
            out[n++] = a;
            continue;
        }
        const char *name = a + 2;
        const char *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        const pfi_opt *o = find_opt(spec->opts, name, len);
        if (!o)
            return pfi_err_set(err, PFI_EINVAL, "unknown option '--%.*s' (see --help)", (int)len,
                               name);
        if (o->kind & PFI_OPT_OLD)
            fprintf(stderr, "pfi: --%s is deprecated; use --%s\n", o->name, o->help);
        if ((o->kind & ~(PFI_OPT_OLD | PFI_OPT_EMPTY)) == PFI_OPT_FLAG) {
            if (eq)
                return pfi_err_set(err, PFI_EINVAL, "--%s takes no value", o->name);
            *(int *)o->dest = 1;
            continue;
        }
        const char *val = eq ? eq + 1 : NULL;
        if (!val) {
            if (i + 1 >= argc)
                return pfi_err_set(err, PFI_EINVAL, "--%s needs a value (%s)", o->name,
                                   o->meta ? o->meta : "VALUE");
            val = argv[++i];
        }
        int rc = store(o, val, err);
        if (rc != PFI_OK)
            return rc;
    }
    *pos = out;
    *npos = n;
    return PFI_OK;
}

/* Process-wide, set once by `pfi help --man` before it asks a command for its help. */
static int help_format = PFI_HELP_TEXT;

void pfi_args_set_help_format(int format)
{
    help_format = format;
}

int pfi_args_help_format(void)
{
    return help_format;
}

void pfi_args_roff(FILE *f, const char *s)
{
    int bol = 1;
    for (; *s; s++) {
        if (bol && (*s == '.' || *s == '\''))
            fputs("\\&", f);
        if (*s == '\\')
            fputs("\\e", f);
        else if (*s == '-')
            fputs("\\-", f);
        else
            fputc(*s, f);
        bol = *s == '\n';
    }
}

void pfi_args_examples(FILE *f, const char *ex)
{
    if (!ex || !*ex)
        return;
    if (help_format != PFI_HELP_TEXT) {
        /* No .PP straight under a heading: it is redundant there (mandoc -T lint). */
        fprintf(f, help_format == PFI_HELP_MAN_SUB ? ".PP\nExamples:\n.PP\n" : ".SH EXAMPLES\n");
        fprintf(f, ".nf\n.RS 4\n");
        pfi_args_roff(f, ex);
        fprintf(f, "%s.RE\n.fi\n", ex[strlen(ex) - 1] == '\n' ? "" : "\n");
        return;
    }
    fprintf(f, "\nexamples:\n  ");
    for (; *ex; ex++) {
        fputc(*ex, f);
        if (*ex == '\n' && ex[1])
            fputs("  ", f);
    }
    if (ex[-1] != '\n')
        fputc('\n', f);
}

/* The roff of one spec: SYNOPSIS, DESCRIPTION, OPTIONS, EXAMPLES as sections of a page, or as
 * one subsection (titled by the usage line) of its family's page. */
static void usage_man(const pfi_cmd_spec *spec, FILE *f, int sub)
{
    const char *h = sub ? ".SS" : ".SH";
    if (sub) {
        fprintf(f, ".SS \"");
        pfi_args_roff(f, spec->usage);
        fprintf(f, "\"\n");
    } else {
        fprintf(f, ".SH SYNOPSIS\n.nf\n");
        pfi_args_roff(f, spec->usage);
        fprintf(f, "\n.fi\n");
    }
    /* A subsection's summary starts right under its .SS: a .PP there is redundant. */
    if (spec->summary) {
        if (!sub)
            fprintf(f, ".SH DESCRIPTION\n");
        pfi_args_roff(f, spec->summary);
        fputc('\n', f);
    }
    if (spec->opts && spec->opts->name) {
        if (sub)
            fprintf(f, "%sOptions:\n", spec->summary ? ".PP\n" : "");
        else
            fprintf(f, "%s OPTIONS\n", h);
        for (const pfi_opt *o = spec->opts; o->name; o++) {
            if (o->kind & PFI_OPT_OLD)
                continue;
            fprintf(f, ".TP\n.B \\-\\-");
            pfi_args_roff(f, o->name);
            if (o->meta) {
                fprintf(f, " \\fI");
                pfi_args_roff(f, o->meta);
                fprintf(f, "\\fR");
            }
            fputc('\n', f);
            pfi_args_roff(f, o->help ? o->help : "");
            fputc('\n', f);
        }
        fprintf(f, ".TP\n.B \\-h, \\-\\-help\nshow this help\n");
    }
    pfi_args_examples(f, spec->examples);
}

static void options_text(const pfi_opt *opts, FILE *f, int width);

/* Columns of the command words that begin a usage line ("pfi sim job "): its wrapped lines
 * start under the first option. */
static int command_cols(const char *usage)
{
    int n = 0;
    for (;;) {
        size_t w = strspn(usage + n, "abcdefghijklmnopqrstuvwxyz-");
        if (!w || usage[n] == '-' || usage[n + w] != ' ')
            return n;
        n += (int)w + 1;
    }
}

void pfi_args_usage(const pfi_cmd_spec *spec, FILE *f)
{
    if (help_format != PFI_HELP_TEXT) {
        usage_man(spec, f, help_format == PFI_HELP_MAN_SUB);
        return;
    }
    int width = pfi_text_width(f);
    fputs("usage: ", f);
    pfi_text_wrap(f, spec->usage, 7, 7 + command_cols(spec->usage), width, PFI_WRAP_GROUPS);
    fputc('\n', f);
    if (spec->summary) {
        fputc('\n', f);
        pfi_text_wrap(f, spec->summary, 0, 0, width, 0);
        fputc('\n', f);
    }
    if (spec->opts && spec->opts->name)
        options_text(spec->opts, f, width);
    pfi_args_examples(f, spec->examples);
}

static void options_text(const pfi_opt *opts, FILE *f, int width)
{
    fprintf(f, "\noptions:\n");
    for (const pfi_opt *o = opts; o->name; o++) {
        if (o->kind & PFI_OPT_OLD)
            continue;
        char left[64];
        snprintf(left, sizeof left, "--%s%s%s", o->name, o->meta ? " " : "", o->meta ? o->meta : "");
        /* a name longer than its column puts its text on the next line, as GNU tools do */
        int col = fprintf(f, "  %-24s ", left);
        if (width > 0 && col > 27) {
            fprintf(f, "\n%27s", "");
            col = 27;
        }
        pfi_text_wrap(f, o->help ? o->help : "", col, 27, width, 0);
        fputc('\n', f);
    }
    fprintf(f, "  %-24s %s\n", "-h, --help", "show this help");
}
