/* SPDX-License-Identifier: Apache-2.0 */
/* pfi-burn: a known load for one GPU, to characterize it and to compare the simulator with
 * real hardware.  Built only where nvcc exists (`make burn`).
 *
 *   pfi-burn [--duration S] [--mix gemm=W,stream=W,idle=W] [--period S] [--size N]
 *            [--stream-mib MIB] [--device I] [--report S]
 *
 * Each period (default 1 s) is split among three phases in the proportions of --mix:
 *   gemm    back-to-back bf16 tensor-core GEMMs (cuBLAS, N x N x N, fp32 accumulate);
 *   stream  an HBM copy over two buffers far larger than L2 (read + write);
 *   idle    nothing on the GPU.
 * Progress goes to stdout in pfi's one-line throughput protocol, every --report seconds:
 *   pfi: tokens=<cumulative work units> t=<seconds since start>
 * A work unit ("token") is one row of a GEMM (N per GEMM, as a linear layer processing N
 * tokens) or one N-element bf16 row copied by the stream phase; so tokens/s is comparable
 * between runs of one mix (e.g. under different power limits), not between mixes.
 * At the end a summary line on stderr gives the TFLOP/s and GB/s achieved. */
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CUDA_OK(x) check_cuda((x), #x, __LINE__)
#define CUBLAS_OK(x) check_cublas((x), #x, __LINE__)

static void check_cuda(cudaError_t e, const char *what, int line)
{
    if (e != cudaSuccess) {
        fprintf(stderr, "pfi-burn: %s failed (line %d): %s\n", what, line, cudaGetErrorString(e));
        exit(1);
    }
}

static void check_cublas(cublasStatus_t s, const char *what, int line)
{
    if (s != CUBLAS_STATUS_SUCCESS) {
        fprintf(stderr, "pfi-burn: %s failed (line %d): cuBLAS status %d\n", what, line, (int)s);
        exit(1);
    }
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: pfi-burn [--duration S] [--mix gemm=W,stream=W,idle=W] [--period S]\n"
            "                [--size N] [--stream-mib MIB] [--device I] [--report S]\n"
            "A known GPU load: bf16 tensor-core GEMM, HBM streaming and idle, in the proportions\n"
            "of --mix within each --period (default 1 s), for --duration seconds (default 30).\n"
            "Prints 'pfi: tokens=<work units> t=<s>' every --report seconds (default 1).\n");
}

typedef struct opts {
    double duration, period, report;
    double w_gemm, w_stream, w_idle;
    int size, device;
    double stream_mib;
} opts;

static int parse_mix(const char *s, opts *o)
{
    o->w_gemm = o->w_stream = o->w_idle = 0;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s);
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq)
            return -1;
        *eq = '\0';
        char *end;
        double w = strtod(eq + 1, &end);
        if (end == eq + 1 || *end || !(w >= 0))
            return -1;
        if (strcmp(tok, "gemm") == 0)
            o->w_gemm = w;
        else if (strcmp(tok, "stream") == 0)
            o->w_stream = w;
        else if (strcmp(tok, "idle") == 0)
            o->w_idle = w;
        else
            return -1;
    }
    return o->w_gemm + o->w_stream + o->w_idle > 0 ? 0 : -1;
}

static int parse_args(int argc, char **argv, opts *o)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            exit(0);
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "pfi-burn: %s needs a value\n", a);
            return -1;
        }
        const char *v = argv[++i];
        char *end = NULL;
        if (strcmp(a, "--duration") == 0)
            o->duration = strtod(v, &end);
        else if (strcmp(a, "--period") == 0)
            o->period = strtod(v, &end);
        else if (strcmp(a, "--report") == 0)
            o->report = strtod(v, &end);
        else if (strcmp(a, "--stream-mib") == 0)
            o->stream_mib = strtod(v, &end);
        else if (strcmp(a, "--size") == 0)
            o->size = (int)strtol(v, &end, 10);
        else if (strcmp(a, "--device") == 0)
            o->device = (int)strtol(v, &end, 10);
        else if (strcmp(a, "--mix") == 0) {
            if (parse_mix(v, o) != 0) {
                fprintf(stderr, "pfi-burn: bad --mix '%s' (e.g. gemm=0.7,stream=0.2,idle=0.1)\n",
                        v);
                return -1;
            }
            continue;
        } else {
            fprintf(stderr, "pfi-burn: unknown option %s\n", a);
            usage(stderr);
            return -1;
        }
        if (!end || end == v || *end) {
            fprintf(stderr, "pfi-burn: %s: '%s' is not a number\n", a, v);
            return -1;
        }
    }
    if (!(o->duration > 0) || !(o->period > 0) || !(o->report > 0) || o->size < 256 ||
        o->size % 8 || !(o->stream_mib >= 64)) {
        fprintf(stderr, "pfi-burn: need duration, period, report > 0, size >= 256 and a "
                        "multiple of 8, stream-mib >= 64\n");
        return -1;
    }
    return 0;
}

/* The HBM phase: a copy of 16-byte vectors; every byte is read once and written once. */
__global__ void stream_copy(const uint4 *__restrict__ src, uint4 *__restrict__ dst, size_t n)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        dst[i] = src[i];
}

__global__ void fill_bf16(__nv_bfloat16 *p, size_t n, unsigned seed)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        unsigned h = (unsigned)i * 2654435761u ^ seed;
        h ^= h >> 13;
        h *= 0x5bd1e995u;
        h ^= h >> 15;
        /* Random values in [-1, 1): zeros would draw less power than real data. */
        p[i] = __float2bfloat16((float)(h & 0xffff) / 32768.0f - 1.0f);
    }
}

typedef struct burn {
    cublasHandle_t blas;
    cudaStream_t st;
    __nv_bfloat16 *a, *b, *c;
    uint4 *s0, *s1;
    size_t s_vecs;
    int n;
    double tokens, flops, bytes;
} burn;

/* Runs one phase until `until` (host clock), in batches so the clock is checked often. */
static void run_gemm(burn *w, double until)
{
    const float alpha = 1.0f, beta = 0.0f;
    const int n = w->n;
    while (now_s() < until) {
        for (int k = 0; k < 4; k++) {
            CUBLAS_OK(cublasGemmEx(w->blas, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, w->a,
                                   CUDA_R_16BF, n, w->b, CUDA_R_16BF, n, &beta, w->c,
                                   CUDA_R_16BF, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
            w->tokens += n;
            w->flops += 2.0 * n * (double)n * n;
        }
        CUDA_OK(cudaStreamSynchronize(w->st));
    }
}

static void run_stream(burn *w, double until)
{
    int threads = 512, blocks = 132 * 8;
    while (now_s() < until) {
        for (int k = 0; k < 4; k++) {
            const uint4 *src = k % 2 ? w->s1 : w->s0;
            uint4 *dst = k % 2 ? w->s0 : w->s1;
            stream_copy<<<blocks, threads, 0, w->st>>>(src, dst, w->s_vecs);
            double bytes = (double)w->s_vecs * sizeof(uint4);
            w->bytes += 2.0 * bytes;
            w->tokens += bytes / (2.0 * w->n); /* rows of n bf16 copied */
        }
        CUDA_OK(cudaGetLastError());
        CUDA_OK(cudaStreamSynchronize(w->st));
    }
}

static void run_idle(double until)
{
    double left;
    while ((left = until - now_s()) > 0)
        usleep((useconds_t)(left > 0.05 ? 50000 : left * 1e6));
}

int main(int argc, char **argv)
{
    opts o = {30.0, 1.0, 1.0, 1.0, 0.0, 0.0, 8192, 0, 4096.0};
    if (parse_args(argc, argv, &o) != 0)
        return 2;
    CUDA_OK(cudaSetDevice(o.device));
    cudaDeviceProp prop;
    CUDA_OK(cudaGetDeviceProperties(&prop, o.device));
    burn w;
    memset(&w, 0, sizeof w);
    w.n = o.size;
    CUDA_OK(cudaStreamCreate(&w.st));
    CUBLAS_OK(cublasCreate(&w.blas));
    CUBLAS_OK(cublasSetStream(w.blas, w.st));
    size_t mat = (size_t)w.n * w.n;
    if (o.w_gemm > 0) {
        CUDA_OK(cudaMalloc(&w.a, mat * sizeof(__nv_bfloat16)));
        CUDA_OK(cudaMalloc(&w.b, mat * sizeof(__nv_bfloat16)));
        CUDA_OK(cudaMalloc(&w.c, mat * sizeof(__nv_bfloat16)));
        fill_bf16<<<1024, 256, 0, w.st>>>(w.a, mat, 1u);
        fill_bf16<<<1024, 256, 0, w.st>>>(w.b, mat, 2u);
        CUDA_OK(cudaGetLastError());
    }
    if (o.w_stream > 0) {
        size_t bytes = (size_t)(o.stream_mib * 1048576.0) / 2;
        w.s_vecs = bytes / sizeof(uint4);
        CUDA_OK(cudaMalloc(&w.s0, w.s_vecs * sizeof(uint4)));
        CUDA_OK(cudaMalloc(&w.s1, w.s_vecs * sizeof(uint4)));
        CUDA_OK(cudaMemsetAsync(w.s0, 1, w.s_vecs * sizeof(uint4), w.st));
    }
    CUDA_OK(cudaStreamSynchronize(w.st));
    double wsum = o.w_gemm + o.w_stream + o.w_idle;
    fprintf(stderr,
            "pfi-burn: %s, %.0f s, mix gemm=%.2f stream=%.2f idle=%.2f per %.2f s, GEMM %d^3 "
            "bf16, stream %.0f MiB\n",
            prop.name, o.duration, o.w_gemm / wsum, o.w_stream / wsum, o.w_idle / wsum,
            o.period, w.n, o.stream_mib);
    double t0 = now_s(), end = t0 + o.duration, next_report = t0 + o.report;
    double t_gemm = 0, t_stream = 0;
    printf("pfi: tokens=0 t=0.000\n");
    fflush(stdout);
    while (now_s() < end) {
        double phases[3] = {o.period * o.w_gemm / wsum, o.period * o.w_stream / wsum,
                            o.period * o.w_idle / wsum};
        for (int ph = 0; ph < 3; ph++) {
            if (phases[ph] <= 0)
                continue;
            double start = now_s();
            double until = start + phases[ph];
            if (until > end)
                until = end;
            /* Report inside long phases too, so the protocol's rate stays fresh. */
            while (now_s() < until) {
                double stop = until < next_report ? until : next_report;
                if (ph == 0)
                    run_gemm(&w, stop);
                else if (ph == 1)
                    run_stream(&w, stop);
                else
                    run_idle(stop);
                double t = now_s();
                if (t >= next_report) {
                    printf("pfi: tokens=%.0f t=%.3f\n", w.tokens, t - t0);
                    fflush(stdout);
                    next_report += o.report;
                }
            }
            if (ph == 0)
                t_gemm += now_s() - start;
            else if (ph == 1)
                t_stream += now_s() - start;
        }
    }
    double total = now_s() - t0;
    printf("pfi: tokens=%.0f t=%.3f\n", w.tokens, total);
    fflush(stdout);
    fprintf(stderr,
            "pfi-burn: done in %.1f s: gemm %.1f s at %.1f TFLOP/s, stream %.1f s at %.0f GB/s, "
            "%.0f tokens (%.0f tokens/s)\n",
            total, t_gemm, t_gemm > 0 ? w.flops / t_gemm / 1e12 : 0.0, t_stream,
            t_stream > 0 ? w.bytes / t_stream / 1e9 : 0.0, w.tokens, w.tokens / total);
    cublasDestroy(w.blas);
    cudaFree(w.a);
    cudaFree(w.b);
    cudaFree(w.c);
    cudaFree(w.s0);
    cudaFree(w.s1);
    cudaStreamDestroy(w.st);
    return 0;
}
