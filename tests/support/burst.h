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
/* Of fds[0..n), how many got an answer whose status line begins with head within max_s
 * seconds (all watched at once). */
int pfi_test_answers(const int *fds, int n, const char *head, double max_s);
/* 1 when the server closed fd (EOF or reset) within max_s seconds, sending nothing; 0 when it
 * stayed open or sent something. */
int pfi_test_closed(int fd, double max_s);
/* Of fds[0..n), how many the server has closed (as pfi_test_closed); waits up to max_s
 * seconds for at least want of them. */
int pfi_test_closed_count(const int *fds, int n, int want, double max_s);
/* Monotonic seconds. */
double pfi_test_now(void);
/* Raises this process's open-file limit to n (past the hard limit only as root); the limit
 * now. */
long pfi_test_nofile(long n);

#endif
