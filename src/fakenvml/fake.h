/* SPDX-License-Identifier: Apache-2.0 */
/* fake.h: the inside of pfi's own libnvidia-ml.so.1 (src/fakenvml/).  Read docs/nvml.md first.
 *
 * The library answers the NVML calls pfi uses (hw/nvml/nvml_api.h) from the simulator, opened as
 * a pfi "sim" backend: with env PFI_SIM_STATE=FILE every process that loads the fake shares one
 * simulated node (one sets a limit, another sees its effect); without it the node is private to
 * the process and its clock follows real time.  Env PFI_FAKENVML_SIM picks the preset or config
 * file (default: the simulator's default preset).
 *
 * Faults (faults.c) are read at the first nvmlInit_v2 of a process from env
 * PFI_FAKENVML_FAULTS and the file named by PFI_FAKENVML_FAULTS_FILE.
 *
 * Every exported call takes the one library mutex (fake_begin ... fake_end), as real NVML is
 * thread-safe. */
#ifndef PFI_FAKENVML_FAKE_H
#define PFI_FAKENVML_FAKE_H

#include <pthread.h>

#include "hw/hw.h"
#include "hw/nvml/nvml_api.h"

/* Only the NVML entry points are exported; everything below is the library's own (and the
 * Makefile links libpfi.a into it with --exclude-libs), so a host program's symbols and the
 * fake's never bind to each other. */
#pragma GCC visibility push(hidden)

#define FAKE_MAX_RULES 64
#define FAKE_FN_MAX 64

/* The rates the fake integrates over time, in the order of the GPM metrics it serves:
 * SM util, SM occupancy, tensor, DRAM (fractions), PCIe tx/rx, NVLink tx/rx (MiB/s). */
enum { FAKE_SM, FAKE_OCC, FAKE_TENSOR, FAKE_DRAM, FAKE_PCIE_TX, FAKE_PCIE_RX, FAKE_NVL_TX,
       FAKE_NVL_RX, FAKE_NRATES };

struct nvmlDevice_st {
    int index;
};

struct nvmlGpmSample_st {
    unsigned magic;
    int gpu;                  /* -1 until nvmlGpmSampleGet fills it */
    double t;                 /* simulated time of the sample */
    double acc[FAKE_NRATES];  /* the GPU's integrals at t */
    unsigned have;            /* bit k: acc[k] is valid */
};

typedef struct fake_rule {
    char fn[FAKE_FN_MAX];     /* function name, "*" or a prefix ending in '*' */
    int gpu;                  /* -1: any GPU (and calls on no GPU) */
    nvmlReturn_t code;
    long after;               /* the first `after` matching calls succeed */
    double at_s;              /* fault only from this many seconds after nvmlInit_v2 */
    long count;               /* fail this many times, then recover (-1: for ever) */
    double delay_s;           /* the matching call takes this long before it answers (a slow
                               * or hung driver; with SUCCESS, a slow call that succeeds) */
    long seen, failed;        /* counters since nvmlInit_v2 */
} fake_rule;

typedef struct fake_gpu {
    struct nvmlDevice_st dev;
    pfi_sample cur;           /* the latest simulator sample ... */
    double cur_real;          /* ... and when (monotonic) it was taken */
    int have_cur;
    double int_t;             /* simulated time up to which acc[] integrates */
    double acc[FAKE_NRATES];
    unsigned acc_have;
    double oob_cap_w;         /* out-of-band cap (a BMC's); NAN when none */
    /* Without a shared state: the limit asked in band and the one the simulator was given
     * for it (fake_inband.c); NAN when none. */
    double inband_w, run_at_w;
} fake_gpu;

typedef struct fake_lib {
    int refs;                 /* nvmlInit_v2 minus nvmlShutdown */
    pfi_backend *sim;
    int n;
    int gpm;                  /* GPM supported: by GPU model (Hopper+), or env PFI_FAKENVML_GPM */
    double mem_total_b;       /* device memory, bytes */
    double t0_real;           /* monotonic time of the first nvmlInit_v2 */
    fake_gpu gpu[PFI_MAX_GPUS];
    int n_rules;
    fake_rule rules[FAKE_MAX_RULES];
    int n_caps;
    struct { int gpu; double watts; } caps[PFI_MAX_GPUS]; /* oob-cap rules, gpu -1 = all */
} fake_lib;

extern fake_lib pfi_fake;

/* Locks the library, checks it is initialized and applies faults for a call on no device
 * (gpu_hint: the GPU a fault may target, or -1).  Always pair with fake_end, which unlocks. */
nvmlReturn_t fake_begin(const char *fn, int gpu_hint);
/* The same for a call on a device: dev must be a handle this library gave (else
 * INVALID_ARGUMENT); on success *g is its GPU. */
nvmlReturn_t fake_begin_dev(const char *fn, nvmlDevice_t dev, fake_gpu **g);
nvmlReturn_t fake_end(nvmlReturn_t r);
/* The GPU's current simulator sample (cached for a few ms); NULL on failure with *r set. */
const pfi_sample *fake_now(fake_gpu *g, nvmlReturn_t *r);
/* The simulator's device record for g. */
nvmlReturn_t fake_device(fake_gpu *g, pfi_device *d);
/* pfi_code -> the NVML code a driver would give. */
nvmlReturn_t fake_code(int pfi_code);

/* fake_inband.c: the in-band limit asked of g, shared by every process on the node (beside
 * PFI_SIM_STATE, else in g), when the simulator still runs it at the limit recorded with it
 * (sim_limit_w); NAN when none applies (the in-band limit is then the simulator's). */
double fake_inband_get(fake_gpu *g, double sim_limit_w);
/* Records that g was asked inband_w in band and the simulator given run_at_w. */
void fake_inband_put(fake_gpu *g, double inband_w, double run_at_w);

/* faults.c: parses PFI_FAKENVML_FAULTS / _FILE into pfi_fake.rules and pfi_fake.caps; 0 or -1 with a
 * message on stderr. */
int fake_faults_load(void);
/* The injected code for this call, or NVML_SUCCESS. */
nvmlReturn_t fake_fault(const char *fn, int gpu);
/* "GPU_IS_LOST", "NVML_ERROR_GPU_IS_LOST" or "15" -> code; -1 if unknown. */
int fake_parse_code(const char *s);

#pragma GCC visibility pop

#endif
