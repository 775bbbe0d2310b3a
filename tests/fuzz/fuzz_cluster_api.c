/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: what `pfi cluster serve` answers an HTTP request (src/cluster/api.c and the
 * grid routes), over a real socket to its libmicrohttpd server in this process.  Input:
 * newline-separated fields
 *   METHOD \n PATH?QUERY \n Authorization \n BODY...
 * sent as one HTTP/1.0 request with the body's true length (a missing field is an absent
 * header).  The site: two nodes of four GPUs whose daemons do not answer (a refused port), a
 * grid store in memory, a token.  Every answer must be a whole HTTP response with a status in
 * 200-599.  After each input the budget is removed and the grid events deleted. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cluster/cl_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static pfi_cl *site;
static int port;
static char dir[64];

static const char TOPO[] =
    "{\"nodes\": [{\"name\": \"n1\", \"gpus\": 4}, {\"name\": \"n2\", \"gpus\": 4}], \"jobs\": "
    "[{\"id\": \"101\", \"parts\": [{\"node\": \"n1\", \"gpus\": [0,1,2,3]}, "
    "{\"node\": \"n2\", \"gpus\": [0,1]}]}]}";

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0)
        abort();
}

static void remove_dir(void)
{
    char p[128];
    snprintf(p, sizeof p, "%s/topo.json", dir);
    unlink(p);
    snprintf(p, sizeof p, "%s/token", dir);
    unlink(p);
    rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    snprintf(dir, sizeof dir, "/tmp/pfi-fuzz-cl-XXXXXX");
    if (!mkdtemp(dir))
        abort();
    atexit(remove_dir);
    char topo[128], tok[128];
    snprintf(topo, sizeof topo, "%s/topo.json", dir);
    snprintf(tok, sizeof tok, "%s/token", dir);
    write_file(topo, TOPO);
    write_file(tok, "fuzz-token-0123456789abcdef\n");
    if (chmod(tok, 0600) != 0) /* a token others can read is refused */
        abort();
    pfi_cl_config cfg;
    pfi_cl_config_defaults(&cfg);
    snprintf(cfg.node_url, sizeof cfg.node_url, "http://127.0.0.1:1/%%n"); /* refused at once */
    snprintf(cfg.topo_file, sizeof cfg.topo_file, "%s", topo);
    cfg.timeout_s = 0.2;
    cfg.heartbeat_s = 0;
    pfi_err e = {0};
    pfi_cl_server *srv;
    if (pfi_cl_open(&cfg, &site, &e) != PFI_OK || pfi_cl_grid_open(site, ":memory:", &e) != PFI_OK ||
        pfi_cl_refresh(site, &e) != PFI_OK ||
        pfi_cl_server_start(site, "127.0.0.1:0", tok, &srv, &port, &e) != PFI_OK) {
        fprintf(stderr, "fuzz_cluster_api: %s\n", e.msg);
        abort();
    }
    return 0;
}

/* The next field up to '\n', or NULL at the end; *p moves past it. */
static const uint8_t *field(const uint8_t **p, const uint8_t *end, size_t *len)
{
    if (*p >= end)
        return NULL;
    const uint8_t *s = *p, *nl = memchr(s, '\n', (size_t)(end - s));
    *len = nl ? (size_t)(nl - s) : (size_t)(end - s);
    *p = s + *len + (nl ? 1 : 0);
    return s;
}

static int ok_token(const uint8_t *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] <= ' ' || s[i] >= 0x7f)
            return 0;
    return n > 0;
}

static void exchange(const char *req, size_t n)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0)
        abort();
    for (size_t at = 0; at < n;) {
        ssize_t w = send(fd, req + at, n - at, MSG_NOSIGNAL);
        if (w <= 0)
            break; /* the server may close early (a body too large): its answer is still read */
        at += (size_t)w;
    }
    char head[16] = {0};
    size_t got = 0;
    char buf[4096];
    for (ssize_t r; (r = recv(fd, buf, sizeof buf, 0)) > 0;) {
        if (got < sizeof head - 1) {
            size_t k = (size_t)r < sizeof head - 1 - got ? (size_t)r : sizeof head - 1 - got;
            memcpy(head + got, buf, k);
        }
        got += (size_t)r;
    }
    close(fd);
    int code = 0;
    if (sscanf(head, "HTTP/1.%*d %d", &code) != 1 || code < 200 || code > 599)
        abort(); /* no answer, or not one a client can read */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *p = data, *end = data + size;
    size_t ml = 0, ul = 0, al = 0;
    const uint8_t *m = field(&p, end, &ml), *u = field(&p, end, &ul), *a = field(&p, end, &al);
    if (!m || !u || !ok_token(m, ml) || !ok_token(u, ul) || u[0] != '/')
        return 0; /* not a request line a client would send */
    size_t bl = (size_t)(end - p), cap = ml + ul + al + bl + 160;
    char *req = malloc(cap);
    if (!req)
        abort();
    int n = snprintf(req, cap, "%.*s %.*s HTTP/1.0\r\nContent-Length: %zu\r\n", (int)ml, m,
                     (int)ul, u, bl);
    if (a && ok_token(a, al))
        n += snprintf(req + n, cap - (size_t)n, "Authorization: Bearer %.*s\r\n", (int)al, a);
    n += snprintf(req + n, cap - (size_t)n, "\r\n");
    memcpy(req + n, p, bl);
    exchange(req, (size_t)n + bl);
    free(req);
    pfi_err e = {0};
    pfi_cl_set_budget_text(site, "none", 0, &e);
    char ids[PFI_CL_GRID_MAX][sizeof site->grid_ev[0].id];
    pthread_mutex_lock(&site->mu);
    int k = site->n_grid;
    for (int i = 0; i < k; i++)
        snprintf(ids[i], sizeof ids[i], "%s", site->grid_ev[i].id);
    pthread_mutex_unlock(&site->mu);
    for (int i = 0; i < k; i++)
        pfi_cl_grid_remove(site, ids[i], &e);
    return 0;
}
