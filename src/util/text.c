/* SPDX-License-Identifier: Apache-2.0 */
#include "util/text.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

char *pfi_trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = '\0';
    return s;
}

char *pfi_read_all(FILE *f, size_t max, size_t *len)
{
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (n + 1 == cap) {
            char *nb = max == 0 || cap < max ? realloc(buf, cap * 2) : NULL;
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
    }
    if (!buf)
        return NULL;
    buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
}

int pfi_utf8_len(const char *str)
{
    const unsigned char *s = (const unsigned char *)str;
    unsigned c = s[0];
    int n = c < 0x80 ? 1 : c < 0xC2 ? 0 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : c < 0xF5 ? 4 : 0;
    if (n <= 1)
        return n;
    unsigned v = c & (0xFFu >> (n + 1));
    for (int i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        v = (v << 6) | (s[i] & 0x3F);
    }
    if ((n == 3 && v < 0x800) || (n == 4 && v < 0x10000) || v > 0x10FFFF ||
        (v >= 0xD800 && v <= 0xDFFF))
        return 0;
    return n;
}

int pfi_text_printable(const char *s, char *why, size_t n)
{
    for (const char *p = s; *p;) {
        unsigned char c = (unsigned char)*p;
        int len = pfi_utf8_len(p);
        /* C1 controls (UTF-8 C2 80..C2 9F): some terminals take U+009B as CSI, as ESC [. */
        int control = c < 0x20 || c == 0x7f || (c == 0xC2 && len == 2 &&
                                                  (unsigned char)p[1] < 0xA0);
        if (len == 0 || control) {
            if (why)
                snprintf(why, n, "%s 0x%02x at byte %d", control ? "control character" :
                         "invalid UTF-8 byte", control && c == 0xC2 ? (unsigned char)p[1] : c,
                         (int)(p - s));
            return 0;
        }
        p += len;
    }
    return 1;
}

int pfi_text_make_printable(char *s)
{
    int changed = 0;
    for (char *p = s; *p;) {
        int len = pfi_utf8_len(p);
        if (len == 0)
            len = 1;
        char keep = p[len];
        p[len] = '\0'; /* one sequence at a time */
        int ok = pfi_text_printable(p, NULL, 0);
        p[len] = keep;
        if (!ok) {
            memset(p, '?', (size_t)len);
            changed = 1;
        }
        p += len;
    }
    return changed;
}

int pfi_text_cols(const char *s)
{
    int cols = 0;
    for (; *s; s++)
        cols += ((unsigned char)*s & 0xC0) != 0x80;
    return cols;
}

/* The byte offset of the first k characters of s (at most its length). */
static size_t chars_bytes(const char *s, int k)
{
    size_t i = 0;
    for (int c = 0; s[i]; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80 && c++ == k)
            return i;
    return i;
}

const char *pfi_text_fit(const char *s, int w, char *buf, size_t n)
{
    int cols = pfi_text_cols(s);
    if (cols <= w || w < 5 || n < 4 * (size_t)w + 1)
        return s;
    int head = (w - 3) / 2, tail = w - 3 - head;
    size_t hb = chars_bytes(s, head), tb = chars_bytes(s, cols - tail);
    snprintf(buf, n, "%.*s...%s", (int)hb, s, s + tb);
    return buf;
}

int pfi_text_pad(const char *s, int w)
{
    return w + (int)strlen(s) - pfi_text_cols(s);
}

int pfi_text_width(FILE *f)
{
    struct winsize ws;
    int w = 0;
    if (isatty(fileno(f)) && ioctl(fileno(f), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
        w = ws.ws_col;
    else if (getenv("COLUMNS"))
        w = atoi(getenv("COLUMNS"));
    if (w <= 0)
        return 0;
    return w < 40 ? 40 : w > 100 ? 100 : w;
}

/* The bytes of the word at w: up to a space or newline, or with groups, a space outside [...]. */
static size_t word_len(const char *w, int groups)
{
    size_t len = 0;
    int depth = 0;
    for (; w[len] && w[len] != '\n' && (w[len] != ' ' || depth > 0); len++) {
        if (groups && w[len] == '[')
            depth++;
        else if (groups && w[len] == ']' && depth > 0)
            depth--;
    }
    return len;
}

void pfi_text_wrap(FILE *f, const char *s, int col, int indent, int width, int flags)
{
    int start = col; /* a word here begins the line: it goes on it whatever its length */
    while (*s) {
        if (*s == '\n') {
            fputc('\n', f);
            s++;
            if (*s && *s != '\n')
                fprintf(f, "%*s", indent, "");
            col = start = indent;
            continue;
        }
        int gap = 0;
        while (s[gap] == ' ')
            gap++;
        const char *w = s + gap;
        size_t len = word_len(w, flags & PFI_WRAP_GROUPS);
        if (!len) { /* spaces before a newline or the end: dropped */
            s = w;
            continue;
        }
        char word[512];
        int cols = len < sizeof word ? (memcpy(word, w, len), word[len] = '\0', pfi_text_cols(word))
                                     : (int)len;
        if (width > 0 && col > start && col + gap + cols > width - 1) {
            fprintf(f, "\n%*s", indent, "");
            col = start = indent;
            gap = 0;
        }
        fprintf(f, "%*s%.*s", gap, "", (int)len, w);
        col += gap + cols;
        s = w + len;
    }
}
