/* SPDX-License-Identifier: Apache-2.0 */
/* args.h: the one command-line parser of pfi.  Each subcommand declares a table of options;
 * the parser handles --name value, --name=value, repeated options, "--" and --help, and
 * prints usage from the same table, so help can never drift from what is parsed. */
#ifndef PFI_UTIL_ARGS_H
#define PFI_UTIL_ARGS_H

#include <stdio.h>

#include "core/err.h"

enum pfi_opt_kind {
    PFI_OPT_FLAG,   /* int *: set to 1 */
    PFI_OPT_STR,    /* const char **: last one wins */
    PFI_OPT_INT,    /* int * */
    PFI_OPT_DOUBLE, /* double * */
    PFI_OPT_MULTI,  /* pfi_strlist *: every occurrence appended (e.g. --tag K=V) */
};
/* Or'ed into a kind: a former spelling, kept for one release.  Its help field is the name to
 * use instead (without "--").  It is left out of --help, the manual page and completion, and
 * taking it prints "pfi: --OLD is deprecated; use --NEW" on stderr. */
#define PFI_OPT_OLD 0x100
#define PFI_OPT_ALIAS(old, kind, dest, now) {old, (kind) | PFI_OPT_OLD, dest, NULL, now}
/* Or'ed into PFI_OPT_STR or PFI_OPT_MULTI: the empty string is a value the option takes.
 * Without it an empty value is refused ("--db is empty", PFI_EINVAL): a path, a name, a list
 * or an address typed empty is a mistake (most often a shell variable not set), and taken it
 * was read as not given (the default), as a file named "" or as SQLite's private temporary
 * database.  No option of pfi takes one today: declare it where "" has a meaning of its own. */
#define PFI_OPT_EMPTY 0x200

#define PFI_STRLIST_MAX 64
typedef struct pfi_strlist {
    int n;
    const char *v[PFI_STRLIST_MAX];
} pfi_strlist;

typedef struct pfi_opt {
    const char *name;  /* without the leading "--" */
    int kind;
    void *dest;
    const char *meta;  /* e.g. "FILE", shown in usage; NULL for flags */
    const char *help;
} pfi_opt;

typedef struct pfi_cmd_spec {
    const char *usage;    /* "pfi sweep [options] -- COMMAND..." */
    const char *summary;  /* one paragraph shown under the usage line */
    const pfi_opt *opts;  /* terminated by {0} */
    const char *examples; /* 1-3 real command lines, '\n'-separated, each may end with
                           * "  # what it does"; shown last */
} pfi_cmd_spec;

#define PFI_ARGS_HELP (-1) /* --help was given and usage printed: exit 0 */

/* What --help writes: text for a terminal (the default), or the same tables as roff for a manual
 * page: a whole page's sections, or one subcommand's subsection of its family's page. */
enum pfi_help_format { PFI_HELP_TEXT = 0, PFI_HELP_MAN, PFI_HELP_MAN_SUB };
void pfi_args_set_help_format(int format);
int pfi_args_help_format(void);
/* Writes a spec's examples in the current help format (text: an "examples:" section). */
void pfi_args_examples(FILE *f, const char *examples);
/* Writes s for roff: backslashes, a leading '.' or '\'', and '-' (as \-) escaped. */
void pfi_args_roff(FILE *f, const char *s);

/* Parses argv[1..] (argv[0] is the subcommand name).  Positional arguments are gathered in
 * order into *pos / *npos (pointing into argv); everything after "--" is positional too and
 * *dashdash (may be NULL) receives the index in pos where it began (or -1). */
int pfi_args_parse(const pfi_cmd_spec *spec, int argc, char **argv, char ***pos, int *npos,
                   int *dashdash, pfi_err *err);
void pfi_args_usage(const pfi_cmd_spec *spec, FILE *f);

#endif
