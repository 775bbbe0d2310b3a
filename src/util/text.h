/* SPDX-License-Identifier: Apache-2.0 */
/* text.h: the two things every reader of a small text file does: take a whole file (or a
 * command's output) into memory, and strip the white space around a line or a field; and text
 * laid out for a terminal (UTF-8 columns, table cells, help wrapped to the width). */
#ifndef PFI_UTIL_TEXT_H
#define PFI_UTIL_TEXT_H

#include <stddef.h>
#include <stdio.h>

#include "core/err.h"

/* Strips the white space (isspace) at both ends of s in place: the end by writing NULs, the
 * start by returning a pointer past it, into s. */
char *pfi_trim(char *s);
/* One line of a `key = value` file (serve.conf, the OpenADR settings): '#' outside double
 * quotes to the end of the line is a comment, the blanks around key and value go, and a value
 * in double quotes loses them (and keeps a '#' it holds).  1 with *key and *val pointing into line; 0 for a line with nothing but blanks or a
 * comment; -1 for one with no '='.  One reader for both files: the OpenADR one skipped only
 * whole-line comments, so a value's trailing comment became part of it. */
int pfi_conf_line(char *line, char **key, char **val);
/* Every `key = value` line of f (read as pfi_conf_line reads one) handed to set(ctx, key,
 * value, err) in order, stopping at the first error, which is prefixed with "PATH:LINE: ";
 * a line too long (over 1023 bytes) or without '=' is one. */
typedef int (*pfi_conf_set_fn)(void *ctx, const char *key, const char *value, pfi_err *err);
int pfi_conf_read(FILE *f, const char *path, pfi_conf_set_fn set, void *ctx, pfi_err *err);

/* Reads f to its end into a new NUL-terminated buffer that the caller frees; *len (may be NULL)
 * gets the length.  NULL when memory runs out or the buffer would grow past max bytes (0: no
 * limit), so one malformed input cannot take the process's memory.  A read error is not
 * reported here: check ferror(f), as a pipe's reader may not care. */
char *pfi_read_all(FILE *f, size_t max, size_t *len);

/* The length of the UTF-8 sequence at s (as jansson checks it: no overlong form, no surrogate,
 * nothing above U+10FFFF), or 0 when it is not one (a NUL byte is a sequence of 1). */
int pfi_utf8_len(const char *s);

/* 1 when s is valid UTF-8 with no control character (a byte below 0x20, 0x7f, or U+0080-U+009F)
 * and no bidi control (U+202A-U+202E, U+2066-U+2069): text a JSON writer takes and a terminal
 * shows as it is, in its order.  Else 0 and, when why is not NULL, what and where the first
 * offending byte is ("control character 0x1b at byte 4", "bidi control U+202E at byte 3") in
 * why[0..n). */
int pfi_text_printable(const char *s, char *why, size_t n);

/* Replaces, in place, every byte of s that pfi_text_printable refuses (a control character, a
 * byte of invalid UTF-8, a sequence cut short) by '?': text written before it was checked (an
 * old store) is shown without driving the terminal.  1 when something was replaced. */
int pfi_text_make_printable(char *s);

/* Columns s takes on a terminal: each character (UTF-8 sequence; a byte that starts none counts
 * as one) one, an East Asian wide or fullwidth one or an emoji two, a combining mark none: ids
 * and names may be UTF-8, and tables padded by bytes lost one column per accented letter. */
int pfi_text_cols(const char *s);
/* s as it fits in w columns (w >= 5): s itself when it does, else its head, "..." and its tail
 * in buf[0..n), cut between characters (cut by bytes, a multi-byte character was split and the
 * table was no longer UTF-8), a column short when a wide character would cross the cut.  buf
 * must hold 4 * w + 1 bytes (UTF-8 takes up to 4 a character); a smaller one (or text with more
 * bytes than that, of zero-width marks) gets s itself. */
const char *pfi_text_fit(const char *s, int w, char *buf, size_t n);
/* The printf field width ("%-*s") that pads s to w columns. */
int pfi_text_pad(const char *s, int w);

/* The width help text is wrapped to: the terminal's when f is one, else $COLUMNS when set, held
 * to 40-100 columns (longer lines are hard to read); 0 (no wrapping) when f is no terminal and
 * $COLUMNS is unset or 0: what reads help through a pipe (grep, the bash completion) gets one
 * line per option, as before. */
int pfi_text_width(FILE *f);
/* Writes s to f wrapped at width columns (a line's last column left free, as terminals wrap
 * there), each line after the first indented by indent spaces; col is the column the first
 * line starts at (text already written on it); width 0: s as written.  Words are never cut (one longer than a line
 * stands alone on it); spaces between words on a line are kept as written, those at a break
 * dropped; a newline in s starts a new, indented line. */
void pfi_text_wrap(FILE *f, const char *s, int col, int indent, int width, int flags);
/* flags: a [...] group is one word (a usage line breaks between its options, not in one). */
#define PFI_WRAP_GROUPS 1

#endif
