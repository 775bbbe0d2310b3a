/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: an answer from a node daemon, broken or hostile, read by the HTTP client
 * (src/util/http_answer.c's reader, which the kept connections' loop reads every answer with;
 * in one piece through tests/support/answer_once.h), without a socket.  Input: 4 bytes of settings, then the bytes received:
 *   byte 0: bit 0 the server closed after them, bit 1 the request was a HEAD
 *   byte 1: the longest body taken (0: 4 MiB, else 8 times it)
 *   bytes 2-3: where the bytes are cut in two (modulo their length + 1)
 * Checked beyond no crash: each piece lies in a buffer of its exact length (a read past the
 * bytes received is a sanitizer report); the bytes in two pieces (the first read without the
 * close) give the same result as in one; a complete answer's body is no longer than max nor
 * than the bytes received, NUL-terminated, its status a final one, the bytes it took no more
 * than those received; an error says why.  And the reader that takes up where it stopped
 * (pfi_http_answer_more), fed the first piece and then the rest a few bytes at a time with the
 * bytes not received yet poisoned (a read of them is a report), gives at every step what a
 * read of everything so far in one piece gives. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "support/answer_once.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PFI_FUZZ_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(PFI_FUZZ_ASAN)
#include <sanitizer/asan_interface.h>
#define HIDE(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define SHOW(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define HIDE(p, n) ((void)(p), (void)(n))
#define SHOW(p, n) ((void)(p), (void)(n))
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int parse_exact(const uint8_t *d, size_t n, int eof, int head, size_t max,
                       pfi_http_answer *a)
{
    char *buf = malloc(n ? n : 1);
    if (!buf)
        abort();
    memcpy(buf, d, n);
    int rc = answer_once(buf, n, eof, head, max, a);
    free(buf);
    return rc;
}

static void check(int rc, const pfi_http_answer *a, size_t n, size_t max)
{
    if (rc < -2 || rc > 1)
        abort();
    if (rc < 0 && !a->why)
        abort();
    if (rc != 1)
        return;
    if (!a->body || a->body_len > max || a->body_len > n || a->body[a->body_len] != '\0' ||
        a->used > n ||
        a->status < 200 || a->status > 999)
        abort();
}

static int same(int r1, const pfi_http_answer *a, int r2, const pfi_http_answer *b)
{
    if (r1 != r2)
        return 0;
    if (r1 != 1)
        return 1;
    return a->status == b->status && a->keep == b->keep && a->body_len == b->body_len &&
           a->used == b->used && !memcmp(a->body, b->body, a->body_len) && a->date_s == b->date_s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 4)
        return 0;
    int eof = data[0] & 1, head = (data[0] >> 1) & 1;
    size_t max = data[1] ? (size_t)data[1] * 8 : (size_t)4 << 20;
    const uint8_t *in = data + 4;
    size_t n = size - 4;
    size_t cut = ((size_t)data[2] << 8 | data[3]) % (n + 1);

    pfi_http_answer one, first, second;
    int r_one = parse_exact(in, n, eof, head, max, &one);
    check(r_one, &one, n, max);
    /* The loop reads the first piece, then (when it needed more) both together. */
    int r_first = parse_exact(in, cut, 0, head, max, &first);
    check(r_first, &first, cut, max);
    if (r_first != 0) {
        if (!same(r_first, &first, r_one, &one))
            abort();
    } else {
        int r_second = parse_exact(in, n, eof, head, max, &second);
        if (!same(r_second, &second, r_one, &one))
            abort();
        free(second.body);
    }
    free(first.body);

    /* The reader: the first piece, then steps of 1 to 8 bytes (byte 3's low bits; longer
     * inputs in at most ~256 steps), each step's result that of a one-piece read of the same
     * bytes (only the last step sees the close). */
    size_t step = (size_t)(data[3] & 7) + 1;
    if (n / 256 > step)
        step = n / 256;
    char *buf = malloc(n ? n : 1);
    if (!buf)
        abort();
    HIDE(buf, n ? n : 1);
    pfi_http_answer_reader rd;
    pfi_http_answer_begin(&rd, head, max);
    size_t k = 0, at = cut;
    for (;;) {
        SHOW(buf + k, at - k);
        memcpy(buf + k, in + k, at - k);
        k = at;
        int last = k == n;
        pfi_http_answer got, whole;
        int rc = pfi_http_answer_more(&rd, buf, k, last ? eof : 0, &got);
        check(rc, &got, k, max);
        int r_whole = parse_exact(in, k, last ? eof : 0, head, max, &whole);
        if (!same(rc, &got, r_whole, &whole))
            abort();
        free(got.body);
        free(whole.body);
        if (rc != 0 || last)
            break;
        at = k + step < n ? k + step : n;
    }
    pfi_http_answer_end(&rd);
    SHOW(buf, n ? n : 1);
    free(buf);
    free(one.body);
    return 0;
}
