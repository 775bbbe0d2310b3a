/* SPDX-License-Identifier: Apache-2.0 */
/* burst.h: clients for the tests of pfi's HTTP servers under load and hostile input
 * (tests/test_cluster_http.c, tests/test_serve_http.c): connections from a chosen loopback
 * address, the server threads of this process seen waiting on a lock, answers counted.  Built
 * with the tests, never into libpfi.a. */
#ifndef PFI_TESTS_SUPPORT_BURST_H
#define PFI_TESTS_SUPPORT_BURST_H

#include <stddef.h>

/* A connected TCP socket to 127.0.0.1:port from address src (NULL: any), TCP_NODELAY; -1 when
 * the connection failed. */
int pfi_test_dial(const char *src, int port);
/* Sends all of text; 0, or -1 when the connection broke. */
int pfi_test_send(int fd, const char *text, size_t len);
/* libmicrohttpd's threads in this process (named MHD-*) now waiting on a lock (in futex). */
int pfi_test_mhd_blocked(void);
/* Waits until at least n of them wait, for up to max_s seconds; returns the last count. */
int pfi_test_wait_blocked(int n, double max_s);
/* Reads one answer's status line on fd, for up to max_s seconds (the rest of the answer is
 * read and dropped as far as it came).  The status code; 0 when the server closed without an
 * answer; -1 when nothing came in time. */
int pfi_test_status(int fd, double max_s);
/* One request on a connection of its own: dials 127.0.0.1:port from src (NULL: any), sends
 * text whole, reads the answer's status as pfi_test_status (0: closed unanswered; -1: nothing
 * within max_s seconds) and closes.  -2 when the connection broke while sending, -3 when it
 * could not be made: never a status, so a test that wants one fails either way. */
int pfi_test_request(const char *src, int port, const char *text, double max_s);
/* Of fds[0..n), how many got an answer whose status line begins with head within max_s
 * seconds (all watched at once). */
int pfi_test_answers(const int *fds, int n, const char *head, double max_s);
/* 1 when the server closed fd (EOF or reset) within max_s seconds, sending nothing; 0 when it
 * stayed open or sent something. */
int pfi_test_closed(int fd, double max_s);
/* Of fds[0..n), how many the server has closed (as pfi_test_closed); waits up to max_s
 * seconds for at least want of them. */
int pfi_test_closed_count(const int *fds, int n, int want, double max_s);
/* A request with a JSON body from address src (NULL: any), bearer token given; the answer's
 * status, or -2 when the connection broke first. */
int pfi_test_send_body(int port, const char *src, const char *token, const char *method,
                       const char *path, const char *json);
/* The three ways of sending a server more body than it takes, each as a PUT to path with a
 * budget document json (a valid one, so that only its size is wrong): a length said to be
 * 1e9 with the start of json after it, json padded with spaces to 100 KiB with its length
 * said, and the same 100 KiB in one chunk with no length said.  status[0..3): each answer's
 * status (as pfi_test_status; -2 when a connection broke while sending). */
void pfi_test_big_bodies(int port, const char *token, const char *path, const char *json,
                         int status[3]);
/* A PUT of json (a valid body) to path with the bearer token, its length said in one of six
 * ways: 0, two Content-Length fields, the right one first; 1, the same, the right one second (a
 * server that takes the first waits for bytes that never come); 2, a Content-Length beside a
 * chunked body; 3, the body gzip'd-then-chunked ("Transfer-Encoding: gzip, chunked"; the body
 * is sent as it is, which no server that reads that coding takes); 4, "Transfer-Encoding:
 * gzip" alone, no length; 5, the right count twice, which RFC 9110 8.6 lets a server take.  The
 * answer's status (as pfi_test_status, 5 s; -2 when the connection broke while sending). */
int pfi_test_two_lengths(int port, const char *token, const char *path, const char *json,
                         int way);
/* The five ways 0 to 4 of pfi_test_two_lengths, each wanted refused: 400 (ways 0 to 2) or 501
 * (3 and 4).  The first way answered otherwise (its status said on stderr), or -1 when every
 * one was refused as wanted. */
int pfi_test_two_lengths_refused(int port, const char *token, const char *path, const char *json);
/* Opens n connections from address src, each sending a request line and an unfinished header
 * and then nothing (a slow client); fd[0..n) keep them (-1 where the connection failed).  How
 * many connected. */
int pfi_test_slow_clients(int port, const char *src, int n, int *fd);
/* After pfi_test_slow_clients: waits up to max_s seconds for the server to close all but keep
 * of fd[0..n), then closes them all.  How many the server had left open (said on stderr when
 * more than keep). */
int pfi_test_close_held(int *fd, int n, int keep, double max_s);
/* Two connections, one that sends nothing and one that stops in the middle of its header (as a
 * slow client): 0 when the server closes both, each within max_s seconds; -1 when one could
 * not be made or its send broke; else 1 when the idle one stayed open, 2 the half-sent one, 3
 * both. */
int pfi_test_idle_and_slow(int port, double max_s);
/* Monotonic seconds. */
double pfi_test_now(void);
/* Raises this process's open-file limit to n (past the hard limit only as root); the limit
 * now. */
long pfi_test_nofile(long n);

#endif
