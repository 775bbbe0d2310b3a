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

int pfi_conf_line(char *line, char **key, char **val)
{
    /* A '#' inside double quotes is the value's ("DR #2", a URL's fragment, a secret's path). */
    for (int inq = 0, i = 0; line[i]; i++) {
        if (line[i] == '"')
            inq = !inq;
        else if (line[i] == '#' && !inq) {
            line[i] = '\0';
            break;
        }
    }
    char *s = pfi_trim(line);
    if (!*s)
        return 0;
    char *eq = strchr(s, '=');
    if (!eq)
        return -1;
    *eq = '\0';
    *key = pfi_trim(s);
    char *v = pfi_trim(eq + 1);
    size_t vl = strlen(v);
    if (vl >= 2 && v[0] == '"' && v[vl - 1] == '"') {
        v[vl - 1] = '\0';
        v++;
    }
    *val = v;
    return 1;
}

int pfi_conf_read(FILE *f, const char *path, pfi_conf_set_fn set, void *ctx, pfi_err *err)
{
    char line[1024];
    int no = 0, rc = PFI_OK;
    while (rc == PFI_OK && fgets(line, sizeof line, f)) {
        no++;
        if (!strchr(line, '\n') && !feof(f))
            return pfi_err_set(err, PFI_EINVAL, "%s:%d: line too long", path, no);
        char *key, *val;
        int kv = pfi_conf_line(line, &key, &val);
        if (kv == 0)
            continue;
        if (kv < 0)
            return pfi_err_set(err, PFI_EINVAL, "%s:%d: expected 'key = value'", path, no);
        rc = set(ctx, key, val, err);
        if (rc != PFI_OK)
            pfi_err_prefix(err, "%s:%d: ", path, no);
    }
    if (rc == PFI_OK && ferror(f))
        rc = pfi_err_set(err, PFI_EIO, "reading %s failed", path);
    return rc;
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

/* U+202A-U+202E (embeddings, overrides) and U+2066-U+2069 (isolates): an id ending in U+202E
 * turns a table's row after it around ("(pinned)" shown "(dennip)"). */
static int bidi_control(const unsigned char *p, int len)
{
    return len == 3 && p[0] == 0xE2 &&
           ((p[1] == 0x80 && p[2] >= 0xAA && p[2] <= 0xAE) ||
            (p[1] == 0x81 && p[2] >= 0xA6 && p[2] <= 0xA9));
}

int pfi_text_printable(const char *s, char *why, size_t n)
{
    for (const char *p = s; *p;) {
        unsigned char c = (unsigned char)*p;
        int len = pfi_utf8_len(p);
        if (bidi_control((const unsigned char *)p, len)) {
            if (why)
                snprintf(why, n, "bidi control U+%04X at byte %d",
                         0x2000u | (((unsigned char)p[1] & 0x3Fu) << 6) | ((unsigned char)p[2] & 0x3Fu),
                         (int)(p - s));
            return 0;
        }
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

/* The character at s: its bytes (*len, 1 for a byte that starts no valid sequence) and the
 * columns a terminal gives it: 2 for the East Asian wide and fullwidth ranges and the emoji
 * blocks, 0 for combining marks, joiners and variation selectors, else 1.  A table padded by
 * characters put a column of Chinese ids one column in for each of its characters. */
static int char_cols(const char *s, int *len)
{
    int n = pfi_utf8_len(s);
    if (n <= 1) {
        *len = 1;
        return 1;
    }
    *len = n;
    const unsigned char *u = (const unsigned char *)s;
    unsigned v = u[0] & (0xFFu >> (n + 1));
    for (int i = 1; i < n; i++)
        v = (v << 6) | (u[i] & 0x3F);
    static const unsigned zero[][2] = {{0x300, 0x36F},   {0x1AB0, 0x1AFF}, {0x1DC0, 0x1DFF},
                                       {0x200B, 0x200F}, {0x20D0, 0x20FF}, {0xFE00, 0xFE0F},
                                       {0xFE20, 0xFE2F}, {0xE0100, 0xE01EF}};
    /* East Asian Wide and Fullwidth (Unicode 15), and the emoji shown wide by default */
    static const unsigned wide[][2] = {
        {0x1100, 0x115F},   {0x231A, 0x231B},   {0x23E9, 0x23EC},   {0x23F0, 0x23F0},
        {0x23F3, 0x23F3},   {0x25FD, 0x25FE},   {0x2614, 0x2615},   {0x2648, 0x2653},
        {0x267F, 0x267F},   {0x2693, 0x2693},   {0x26A1, 0x26A1},   {0x26AA, 0x26AB},
        {0x26BD, 0x26BE},   {0x26C4, 0x26C5},   {0x26CE, 0x26CE},   {0x26D4, 0x26D4},
        {0x26EA, 0x26EA},   {0x26F2, 0x26F3},   {0x26F5, 0x26F5},   {0x26FA, 0x26FA},
        {0x26FD, 0x26FD},   {0x2705, 0x2705},   {0x270A, 0x270B},   {0x2728, 0x2728},
        {0x274C, 0x274C},   {0x274E, 0x274E},   {0x2753, 0x2755},   {0x2757, 0x2757},
        {0x2795, 0x2797},   {0x27B0, 0x27B0},   {0x27BF, 0x27BF},   {0x2B1B, 0x2B1C},
        {0x2B50, 0x2B50},   {0x2B55, 0x2B55},   {0x2E80, 0x303E},   {0x3041, 0x33FF},
        {0x3400, 0x4DBF},   {0x4E00, 0x9FFF},   {0xA000, 0xA4CF},   {0xA960, 0xA97F},
        {0xAC00, 0xD7A3},   {0xF900, 0xFAFF},   {0xFE10, 0xFE19},   {0xFE30, 0xFE6F},
        {0xFF00, 0xFF60},   {0xFFE0, 0xFFE6},   {0x16FE0, 0x18CFF}, {0x1B000, 0x1B2FF},
        {0x1F004, 0x1F004}, {0x1F0CF, 0x1F0CF}, {0x1F18E, 0x1F18E}, {0x1F191, 0x1F19A},
        {0x1F200, 0x1F2FF}, {0x1F300, 0x1F64F}, {0x1F680, 0x1F6FF}, {0x1F7E0, 0x1F7EB},
        {0x1F7F0, 0x1F7F0}, {0x1F90C, 0x1F9FF}, {0x1FA70, 0x1FAFF}, {0x20000, 0x2FFFD},
        {0x30000, 0x3FFFD}};
    for (size_t i = 0; i < sizeof zero / sizeof *zero; i++)
        if (v >= zero[i][0] && v <= zero[i][1])
            return 0;
    for (size_t i = 0; i < sizeof wide / sizeof *wide; i++)
        if (v >= wide[i][0] && v <= wide[i][1])
            return 2;
    return 1;
}

int pfi_text_cols(const char *s)
{
    int cols = 0, len;
    for (; *s; s += len)
        cols += char_cols(s, &len);
    return cols;
}

const char *pfi_text_fit(const char *s, int w, char *buf, size_t n)
{
    int cols = pfi_text_cols(s);
    if (cols <= w || w < 5 || n < 4 * (size_t)w + 1)
        return s;
    /* the head: the most characters within its columns; the tail: the fewest from where what
     * is left fits its columns (a wide character that would cross either is left out) */
    int head = (w - 3) / 2, tail = w - 3 - head, c = 0, len;
    size_t hb = 0, tb = 0, i = 0;
    for (; s[i]; i += (size_t)len) {
        int cw = char_cols(s + i, &len);
        if (c + cw <= head)
            hb = i + (size_t)len;
        if (cols - c <= tail && !tb)
            tb = i;
        c += cw;
    }
    if (!tb)
        tb = i;
    while (s[tb] && char_cols(s + tb, &len) == 0) /* an accent does not begin the tail */
        tb += (size_t)len;
    if (hb + 3 + strlen(s + tb) + 1 > n) /* zero-width marks: more bytes than columns */
        return s;
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
