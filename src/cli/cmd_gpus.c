/* SPDX-License-Identifier: Apache-2.0 */
/* pfi gpus: the devices, their limits and current draw, like the top half of nvidia-smi. */
#include <math.h>
#include <stdio.h>

#include "cli/cli.h"
#include "util/json.h"

/* Watts as a table cell: "N/A" for a value the GPU did not give (an older driver has no
 * enforced limit: it printed "nanW"). */
static const char *watts(char *buf, size_t size, double w)
{
    if (isfinite(w))
        snprintf(buf, size, "%.0fW", w);
    else
        snprintf(buf, size, "N/A");
    return buf;
}

int pfi_cmd_gpus(int argc, char **argv)
{
    pfi_cli_hw hw = {0};
    int as_json = 0;
    const pfi_opt opts[] = {
        PFI_CLI_HW_OPTS(hw),
        {"json", PFI_OPT_FLAG, &as_json, NULL, "one JSON document on stdout"},
        {0},
    };
    const pfi_cmd_spec spec = {"pfi gpus [--backend auto|nvml|sim] [--sim FILE|PRESET] [--json]",
                               "List the node's GPUs with their power limits and current draw.  The default backend "
                               "(auto) is NVML; without an NVIDIA driver it fails and says how "
                               "to ask for the simulator (--backend sim), whose GPUs are marked "
                               "simulated.",
                               opts,
        "pfi gpus                                           # the node's GPUs through NVML\n"
        "pfi gpus --backend sim --sim h200x8-mixed --json"};
    int rc = pfi_cli_args_none(&spec, argc, argv, "gpus");
    if (rc >= 0)
        return rc;
    pfi_err err = {0};
    pfi_backend *b;
    if (pfi_cli_open_hw(&hw, &b, &err) != PFI_OK)
        return pfi_cli_fail("gpus", &err);
    int n = 0;
    if (pfi_hw_count(b, &n, &err) != PFI_OK) {
        pfi_hw_close(b);
        return pfi_cli_fail("gpus", &err);
    }
    json_t *arr = json_array();
    int sim = pfi_hw_simulated(b);
    if (!as_json)
        printf("%-3s %-24s %-40s %8s %8s %8s %8s %8s %8s  %s\n", "GPU", "Name", "UUID", "Power",
               "Limit", "Enforced", "Min", "Max", "Default", "Simulated");
    int status = PFI_EXIT_OK;
    for (int i = 0; i < n; i++) {
        pfi_device d;
        pfi_sample s;
        if (pfi_hw_info(b, i, &d, &err) != PFI_OK) {
            /* One lost GPU must not hide the others. */
            fprintf(stderr, "pfi gpus: GPU %d: %s\n", i, err.msg);
            status = PFI_EXIT_FAIL;
            continue;
        }
        pfi_sample_clear(&s);
        if (pfi_hw_sample(b, i, &s, &err) != PFI_OK) {
            /* The power read is shown when a reading this table does not show failed (a
             * temperature's timeout blanked the power and failed the command). */
            if (s.have & PFI_F_POWER) {
                fprintf(stderr, "pfi gpus: GPU %d: warning: %s (a reading not shown here; its "
                                "power was read)\n", i, err.msg);
            } else {
                fprintf(stderr, "pfi gpus: GPU %d: %s\n", i, err.msg);
                pfi_sample_clear(&s);
                status = PFI_EXIT_FAIL;
            }
        }
        if (as_json) {
            /* null for a value the GPU did not give: json_pack's "f" refuses NaN, and the
             * whole GPU was left out. */
            json_t *o = json_pack("{s:i, s:s, s:s, s:o, s:o, s:o, s:o, s:o}", "index", d.index,
                                  "name", d.name, "uuid", d.uuid, "min_limit_w",
                                  pfi_json_num(d.min_limit_w), "max_limit_w",
                                  pfi_json_num(d.max_limit_w), "default_limit_w",
                                  pfi_json_num(d.default_limit_w), "limit_w",
                                  pfi_json_num(d.limit_w), "enforced_limit_w",
                                  pfi_json_num(d.enforced_w));
            if (!o) { /* never silently one GPU fewer (json_pack refuses what is not UTF-8) */
                fprintf(stderr, "pfi gpus: GPU %d: its name or UUID is not UTF-8 text\n", i);
                status = PFI_EXIT_FAIL;
                continue;
            }
            json_object_set_new(o, "power_w",
                                (s.have & PFI_F_POWER) ? json_real(s.power_w) : json_null());
            json_object_set_new(o, "simulated", json_boolean(sim));
            json_array_append_new(arr, o);
        } else {
            char c[6][24];
            printf("%-3d %-24.24s %-40s %8s %8s %8s %8s %8s %8s  %s\n", d.index, d.name, d.uuid,
                   watts(c[0], sizeof c[0], (s.have & PFI_F_POWER) ? s.power_w : NAN),
                   watts(c[1], sizeof c[1], d.limit_w), watts(c[2], sizeof c[2], d.enforced_w),
                   watts(c[3], sizeof c[3], d.min_limit_w), watts(c[4], sizeof c[4], d.max_limit_w),
                   watts(c[5], sizeof c[5], d.default_limit_w), sim ? "yes" : "no");
        }
    }
    const char *bname = pfi_hw_label(b);
    pfi_hw_close(b);
    if (!as_json && sim)
        printf("(simulated GPUs: backend %s; not this machine's hardware)\n", bname);
    if (as_json) {
        json_t *doc = json_pack("{s:s, s:b, s:o}", "backend", bname, "simulated", sim, "gpus",
                                arr);
        int prc = pfi_cli_print_json(doc);
        return status ? status : prc;
    }
    json_decref(arr);
    return status;
}
