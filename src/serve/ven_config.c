/* SPDX-License-Identifier: Apache-2.0 */
/* ven_config.c: the OpenADR client's settings (ven_config.h): defaults, one key at a time as
 * the daemons' configuration files and flags give them, a file of its own, and the check
 * that they are complete before the client starts. */
#include <stdio.h>
#include <string.h>

#include "serve/ven_config.h"
#include "util/num.h"
#include "util/text.h"
#include "util/units.h"

void pfi_ven_config_defaults(pfi_ven_config *c, const char *resource)
{
    memset(c, 0, sizeof *c);
    c->poll_s = 10;
    c->timeout_s = 5;
    c->ramp_s = 300;
    c->max_skew_s = 30;
    c->simple_cut[1] = 0.10;
    c->simple_cut[2] = 0.20;
    c->simple_cut[3] = 0.30;
    snprintf(c->resource, sizeof c->resource, "%s", resource);
}

int pfi_ven_config_set(pfi_ven_config *c, const char *k, const char *v, pfi_err *err)
{
    struct {
        const char *key;
        char *dst;
        size_t n;
    } strs[] = {{"vtn_url", c->vtn_url, sizeof c->vtn_url},
                {"token_url", c->token_url, sizeof c->token_url},
                {"client_id", c->client_id, sizeof c->client_id},
                {"secret_file", c->secret_file, sizeof c->secret_file},
                {"program", c->program, sizeof c->program},
                {"resource", c->resource, sizeof c->resource},
                {"ven_name", c->ven_name, sizeof c->ven_name},
                {"callback_url", c->callback_url, sizeof c->callback_url}};
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++)
        if (!strcmp(k, strs[i].key)) {
            if (strlen(v) >= strs[i].n)
                return pfi_err_set(err, PFI_EINVAL, "%s: too long", k);
            snprintf(strs[i].dst, strs[i].n, "%s", v);
            return PFI_OK;
        }
    if (!strcmp(k, "non_gpu_power")) {
        int pct = 0;
        double w;
        if (pfi_parse_power(v, &w, &pct, err) != PFI_OK || pct || !(w >= 0 && w <= 1e9))
            return pfi_err_set(err, PFI_EINVAL, "non_gpu_power: expected a power of 0 W to "
                               "1 GW like 2kW, not '%s'", v);
        c->non_gpu_w = w;
        return PFI_OK;
    }
    double *num = !strcmp(k, "poll") ? &c->poll_s : !strcmp(k, "timeout") ? &c->timeout_s
                  : !strcmp(k, "ramp") ? &c->ramp_s : !strcmp(k, "max_skew") ? &c->max_skew_s
                                                                              : NULL;
    if (num) { /* checked before it is kept: a bad value changes nothing */
        double d;
        int rc = pfi_parse_duration(v, &d, err);
        if (rc != PFI_OK)
            return rc;
        if (num == &c->poll_s && !(d >= 0.1 && d <= 86400))
            return pfi_err_set(err, PFI_ERANGE, "poll: must be 0.1 s to 1 day, not %s", v);
        if (num == &c->timeout_s && !(d >= 0.1 && d <= 600))
            return pfi_err_set(err, PFI_ERANGE, "timeout: must be 0.1 s to 10 min, not %s", v);
        if (num == &c->ramp_s && !(d >= 0 && d <= 86400))
            return pfi_err_set(err, PFI_ERANGE, "ramp: must be 0 to 1 day, not %s", v);
        if (num == &c->max_skew_s && !(d >= 1 && d <= 86400))
            return pfi_err_set(err, PFI_ERANGE, "max_skew: must be 1 s to 1 day, not %s", v);
        *num = d;
        return PFI_OK;
    }
    if (!strcmp(k, "sla")) {
        if (strcmp(v, "keep") && strcmp(v, "yield"))
            return pfi_err_set(err, PFI_EINVAL, "sla: expected keep or yield, not '%s'", v);
        c->sla_yield = !strcmp(v, "yield");
        return PFI_OK;
    }
    if (!strcmp(k, "randomize_seed")) {
        long long s;
        int rc = pfi_num_ll(v, 0, (long long)(~0ull >> 1), "randomize_seed", &s, err);
        if (rc == PFI_OK)
            c->randomize_seed = s;
        return rc;
    }
    if (!strncmp(k, "simple_cut_", 11) && k[11] >= '1' && k[11] <= '3' && !k[12]) {
        int pct = 0;
        double x;
        if (pfi_parse_power(v, &x, &pct, err) != PFI_OK || !pct || !(x > 0 && x < 1))
            return pfi_err_set(err, PFI_EINVAL, "%s: expected a percentage above 0%% and below "
                               "100%% like 20%%, not '%s'", k, v);
        c->simple_cut[k[11] - '0'] = x;
        return PFI_OK;
    }
    return pfi_err_set(err, PFI_EINVAL, "unknown key '%s' (vtn_url, token_url, client_id, "
                       "secret_file, program, resource, ven_name, callback_url, poll, timeout, ramp, max_skew, "
                       "simple_cut_1..3, randomize_seed, sla, non_gpu_power)",
                       k);
}

static int ven_set(void *ctx, const char *key, const char *value, pfi_err *err)
{
    return pfi_ven_config_set(ctx, key, value, err);
}

int pfi_ven_config_load(pfi_ven_config *c, const char *path, pfi_err *err)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return pfi_err_set(err, PFI_ENOENT, "openadr config %s: cannot open it", path);
    int rc = pfi_conf_read(f, path, ven_set, c, err);
    fclose(f);
    return rc;
}

int pfi_ven_config_check(const pfi_ven_config *cfg, pfi_err *err)
{
    if (!cfg->vtn_url[0] || !cfg->client_id[0] || !cfg->program[0] || !cfg->secret_file[0])
        return pfi_err_set(err, PFI_EINVAL, "openadr: the VTN URL, client id, secret file and "
                                            "program are all needed");
    if (!(cfg->poll_s >= 0.1) || !(cfg->ramp_s >= 0 && cfg->ramp_s <= 86400))
        return pfi_err_set(err, PFI_EINVAL, "openadr: poll interval >= 0.1 s, ramp 0-86400 s");
    for (int l = 1; l <= 3; l++)
        if (!(cfg->simple_cut[l] > 0 && cfg->simple_cut[l] < 1))
            return pfi_err_set(err, PFI_EINVAL, "openadr: SIMPLE level %d's cut %g is outside "
                                                "(0, 1)", l, cfg->simple_cut[l]);
    return PFI_OK;
}
