/* SPDX-License-Identifier: Apache-2.0 */
/* faults.c: fault injection for the fake libnvidia-ml, configured in plain text.
 *
 * Rules are separated by ',' or newlines ('#' starts a comment):
 *   FUNC[@GPU]=ERROR[;after=N][;at=SECONDS][;count=N][;delay=SECONDS]
 *       FUNC   an NVML function name, "*" (every call), or a prefix ending in '*'
 *       GPU    an index or '*' (default '*'; '*' also matches calls on no GPU)
 *       ERROR  GPU_IS_LOST, NVML_ERROR_GPU_IS_LOST or 15 (any nvmlReturn_t)
 *       after  the first N matching calls succeed
 *       at     only from SECONDS after the process's first nvmlInit_v2
 *       count  fail N times, then succeed again (a transient fault)
 *       delay  the call takes SECONDS before it answers (ERROR SUCCESS: a slow driver)
 *   not-root             every nvmlDeviceSetPowerManagementLimit gets NO_PERMISSION
 *   oob-cap[@GPU]=WATTS  an out-of-band (BMC) cap: the enforced limit never exceeds WATTS
 * Example: PFI_FAKENVML_FAULTS="nvmlDeviceGetPowerUsage@2=GPU_IS_LOST;after=3, not-root" */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fakenvml/fake.h"
#include "hw/nvml/nvml_errors.h"
#include "util/clock.h"
#include "util/text.h"

static const nvmlReturn_t all_codes[] = {
    NVML_SUCCESS, NVML_ERROR_UNINITIALIZED, NVML_ERROR_INVALID_ARGUMENT,
    NVML_ERROR_NOT_SUPPORTED, NVML_ERROR_NO_PERMISSION, NVML_ERROR_ALREADY_INITIALIZED,
    NVML_ERROR_NOT_FOUND, NVML_ERROR_INSUFFICIENT_SIZE, NVML_ERROR_INSUFFICIENT_POWER,
    NVML_ERROR_DRIVER_NOT_LOADED, NVML_ERROR_TIMEOUT, NVML_ERROR_IRQ_ISSUE,
    NVML_ERROR_LIBRARY_NOT_FOUND, NVML_ERROR_FUNCTION_NOT_FOUND, NVML_ERROR_CORRUPTED_INFOROM,
    NVML_ERROR_GPU_IS_LOST, NVML_ERROR_RESET_REQUIRED, NVML_ERROR_OPERATING_SYSTEM,
    NVML_ERROR_LIB_RM_VERSION_MISMATCH, NVML_ERROR_IN_USE, NVML_ERROR_MEMORY,
    NVML_ERROR_NO_DATA, NVML_ERROR_VGPU_ECC_NOT_SUPPORTED, NVML_ERROR_INSUFFICIENT_RESOURCES,
    NVML_ERROR_FREQ_NOT_SUPPORTED, NVML_ERROR_ARGUMENT_VERSION_MISMATCH, NVML_ERROR_DEPRECATED,
    NVML_ERROR_NOT_READY, NVML_ERROR_GPU_NOT_FOUND, NVML_ERROR_INVALID_STATE,
    NVML_ERROR_UNKNOWN,
};

int fake_parse_code(const char *s)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end != s && *end == '\0' && errno == 0) {
        for (size_t i = 0; i < sizeof all_codes / sizeof all_codes[0]; i++)
            if ((long)all_codes[i] == v)
                return (int)v;
        return -1;
    }
    for (size_t i = 0; i < sizeof all_codes / sizeof all_codes[0]; i++) {
        const char *name = pfi_nvml_return_name(all_codes[i]); /* "NVML_ERROR_X" */
        const char *shortname = strncmp(name, "NVML_ERROR_", 11) == 0 ? name + 11 : name + 5;
        if (strcasecmp(s, name) == 0 || strcasecmp(s, shortname) == 0)
            return (int)all_codes[i];
    }
    return -1;
}

static int bad(const char *rule, const char *why)
{
    fprintf(stderr, "fake libnvidia-ml: bad fault rule '%s': %s (see docs/nvml.md)\n", rule,
            why);
    return -1;
}

/* "2" or "*" -> index or -1. */
static int parse_gpu(const char *s, int *gpu)
{
    if (strcmp(s, "*") == 0) {
        *gpu = -1;
        return 0;
    }
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || *end || v < 0 || v >= PFI_MAX_GPUS)
        return -1;
    *gpu = (int)v;
    return 0;
}

static int parse_rule(char *rule)
{
    char orig[256];
    snprintf(orig, sizeof orig, "%s", rule);
    if (strcmp(rule, "not-root") == 0) {
        if (pfi_fake.n_rules >= FAKE_MAX_RULES)
            return bad(orig, "too many rules");
        fake_rule *r = &pfi_fake.rules[pfi_fake.n_rules++];
        memset(r, 0, sizeof *r);
        snprintf(r->fn, sizeof r->fn, "nvmlDeviceSetPowerManagementLimit");
        r->gpu = -1;
        r->code = NVML_ERROR_NO_PERMISSION;
        r->count = -1;
        return 0;
    }
    char *eq = strchr(rule, '=');
    if (!eq)
        return bad(orig, "expected FUNC[@GPU]=ERROR");
    *eq = '\0';
    char *lhs = pfi_trim(rule), *rhs = eq + 1;
    char *opts = strchr(rhs, ';');
    if (opts)
        *opts++ = '\0';
    rhs = pfi_trim(rhs);
    int gpu = -1;
    char *at = strchr(lhs, '@');
    if (at) {
        *at = '\0';
        if (parse_gpu(pfi_trim(at + 1), &gpu) != 0)
            return bad(orig, "GPU must be an index or '*'");
    }
    lhs = pfi_trim(lhs);
    if (strcmp(lhs, "oob-cap") == 0) {
        char *end;
        double w = strtod(rhs, &end);
        if (end == rhs || (*end && strcasecmp(end, "W") != 0) || !(w > 0))
            return bad(orig, "oob-cap needs watts, e.g. oob-cap@0=450");
        if (opts)
            return bad(orig, "oob-cap takes no options");
        if (pfi_fake.n_caps >= PFI_MAX_GPUS)
            return bad(orig, "too many oob-cap rules");
        pfi_fake.caps[pfi_fake.n_caps].gpu = gpu;
        pfi_fake.caps[pfi_fake.n_caps].watts = w;
        pfi_fake.n_caps++;
        return 0;
    }
    if (!*lhs || strlen(lhs) >= FAKE_FN_MAX)
        return bad(orig, "missing or too long function name");
    if (strcmp(lhs, "*") != 0 && strncmp(lhs, "nvml", 4) != 0)
        return bad(orig, "function names start with 'nvml' (or use '*')");
    int code = fake_parse_code(rhs);
    if (code < 0)
        return bad(orig, "unknown NVML error name or number");
    if (pfi_fake.n_rules >= FAKE_MAX_RULES)
        return bad(orig, "too many rules");
    fake_rule r = {.gpu = gpu, .code = (nvmlReturn_t)code, .count = -1};
    snprintf(r.fn, sizeof r.fn, "%s", lhs);
    while (opts && *opts) {
        char *next = strchr(opts, ';');
        if (next)
            *next++ = '\0';
        char *kv = pfi_trim(opts), *val = strchr(kv, '=');
        if (!val)
            return bad(orig, "options are after=N, at=SECONDS, count=N, delay=SECONDS");
        *val++ = '\0';
        char *end;
        if (strcmp(pfi_trim(kv), "after") == 0) {
            r.after = strtol(val, &end, 10);
            if (end == val || *pfi_trim(end) || r.after < 0)
                return bad(orig, "after= needs a count >= 0");
        } else if (strcmp(pfi_trim(kv), "count") == 0) {
            r.count = strtol(val, &end, 10);
            if (end == val || *pfi_trim(end) || r.count < 1)
                return bad(orig, "count= needs a count >= 1");
        } else if (strcmp(pfi_trim(kv), "at") == 0) {
            r.at_s = strtod(val, &end);
            if (end == val || (*end && strcmp(pfi_trim(end), "s") != 0) || !(r.at_s >= 0))
                return bad(orig, "at= needs seconds >= 0");
        } else if (strcmp(pfi_trim(kv), "delay") == 0) {
            r.delay_s = strtod(val, &end);
            if (end == val || (*end && strcmp(pfi_trim(end), "s") != 0) ||
                !(r.delay_s >= 0 && r.delay_s <= 3600))
                return bad(orig, "delay= needs seconds from 0 to 3600");
        } else {
            return bad(orig, "options are after=N, at=SECONDS, count=N, delay=SECONDS");
        }
        opts = next;
    }
    if (r.code == NVML_SUCCESS && !(r.delay_s > 0))
        return bad(orig, "SUCCESS is no fault: it takes a delay= (a slow call)");
    pfi_fake.rules[pfi_fake.n_rules++] = r;
    return 0;
}

static int parse_text(char *text)
{
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        char *save2 = NULL;
        for (char *rule = strtok_r(line, ",", &save2); rule; rule = strtok_r(NULL, ",", &save2)) {
            rule = pfi_trim(rule);
            if (*rule && parse_rule(rule) != 0)
                return -1;
        }
    }
    return 0;
}

int fake_faults_load(void)
{
    pfi_fake.n_rules = 0;
    pfi_fake.n_caps = 0;
    const char *env = getenv("PFI_FAKENVML_FAULTS");
    if (env && *env) {
        char *text = strdup(env);
        if (!text)
            return -1;
        int rc = parse_text(text);
        free(text);
        if (rc != 0)
            return -1;
    }
    const char *path = getenv("PFI_FAKENVML_FAULTS_FILE");
    if (path && *path) {
        FILE *f = fopen(path, "r");
        if (!f) {
            fprintf(stderr, "fake libnvidia-ml: cannot read PFI_FAKENVML_FAULTS_FILE %s: %s\n",
                    path, strerror(errno));
            return -1;
        }
        char *text = NULL;
        size_t cap = 0;
        ssize_t len = getdelim(&text, &cap, '\0', f);
        fclose(f);
        int rc = len < 0 ? 0 : parse_text(text);
        free(text);
        if (rc != 0)
            return -1;
    }
    return 0;
}

static int fn_matches(const char *pattern, const char *fn)
{
    size_t n = strlen(pattern);
    if (n > 0 && pattern[n - 1] == '*')
        return strncmp(pattern, fn, n - 1) == 0;
    return strcmp(pattern, fn) == 0;
}

nvmlReturn_t fake_fault(const char *fn, int gpu)
{
    double since = pfi_clock_mono() - pfi_fake.t0_real;
    for (int i = 0; i < pfi_fake.n_rules; i++) {
        fake_rule *r = &pfi_fake.rules[i];
        if (!fn_matches(r->fn, fn) || (r->gpu >= 0 && r->gpu != gpu))
            continue;
        r->seen++;
        if (r->seen <= r->after || since < r->at_s)
            continue;
        if (r->count >= 0 && r->failed >= r->count)
            continue;
        r->failed++;
        if (r->delay_s > 0)
            pfi_clock_sleep(r->delay_s);
        return r->code;
    }
    return NVML_SUCCESS;
}
