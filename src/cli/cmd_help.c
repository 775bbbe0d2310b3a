/* SPDX-License-Identifier: Apache-2.0 */
/* pfi help: short texts on the ideas behind the commands (the definition of the index first),
 * for the person at the terminal; docs/pfi.md has the long form. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

typedef struct topic {
    const char *name, *summary, *text;
} topic;

static const topic topics[] = {
    {"index", "the Power Flexibility Index: definition, headline, SLA primitive",
     "The Power Flexibility Index (PFI)\n"
     "\n"
     "This is pfi's definition, chosen to match the abstract of \"Characterizing Job Power\n"
     "Elasticity for Power-Flexible AI Training\" (arXiv 2609.11542); the paper's full text and\n"
     "exact formulas were not available to us.\n"
     "\n"
     "  baseline   the job at its default power limit: throughput T0, mean per-GPU board\n"
     "             power drawn P0\n"
     "  r(c)       = 1 - P(c)/P0   power shed at cap c, as DRAWN (not the cap setting): a job\n"
     "             drawing less than the cap sheds nothing, and loses nothing, until it binds\n"
     "  s(c)       = 1 - T(c)/T0   slowdown\n"
     "  PFI(r)     = s(r) / r      fraction of throughput lost per fraction of power shed\n"
     "             0: power given back for free; 1: throughput falls in proportion; >1: worse\n"
     "  PFI30      = PFI(0.30), the headline; also PFI10/20/40\n"
     "  SLA        for a slowdown budget s_max, the largest r with s(r) <= s_max: the power\n"
     "             a job can give without breaking its SLA (pfi index: budgets 2, 5, 10%)\n"
     "\n"
     "Curves are convex (slow loss first, faster later), so PFI grows with depth and one\n"
     "number does not describe a job; the allocator uses whole curves.\n"
     "\n"
     "How pfi reads it: the measured levels give points (r, s); a monotone fit (isotonic\n"
     "regression, baseline pinned at s = 0) and a power law s = a r^b (b in [1, 4], the family\n"
     "that fits the real public curves best: pfi index --public --compare-families).  PFI is\n"
     "the monotone interpolation of the measured points where the sweep reached the depth;\n"
     "beyond the deepest shed it is read on the power law and marked as an extrapolation\n"
     "(more than 0.01 beyond: left out unless --extrapolate).  The 95% interval of PFI30 comes\n"
     "from a seeded wild bootstrap of the fit's residuals plus each level's own throughput\n"
     "interval, each replicate read on both curves: it covers the choice between them.\n"
     "\n"
     "Commands: pfi index, pfi predict, pfi model eval, pfi model probe-eval.\n"},
    {"predict", "runtime prediction of a job's curve from its baseline telemetry",
     "Runtime prediction (no sweep)\n"
     "\n"
     "From the telemetry a real GPU gives while the job runs at its default limit: power drawn\n"
     "relative to the limits (headroom), SM clock relative to the GPU's max, time under the SW\n"
     "power cap, GPU utilization, SM, tensor and DRAM activity, NVLink and PCIe traffic, plus\n"
     "job metadata when known (dense/MoE, pretraining/fine-tuning, GPU count, parallelism).\n"
     "Two models predict the slowdown at r = 0.1 ... 0.5, and a power law through those points\n"
     "is the predicted curve:\n"
     "  ridge    regularized linear regression on standardized features (GSL)\n"
     "  physics  a DVFS estimator: compute share from SM activity slows as 1/f, the power\n"
     "           that scales with the clock goes as f V(f)^2 down to a voltage floor\n"
     "pfi model train keeps the one with the lower cross-validated error of PFI30.\n"
     "\n"
     "Commands: pfi model train, pfi predict RUN | --live, pfi model eval.\n"},
    {"probe", "estimating a curve from the baseline and one or two short probes",
     "One-probe estimation\n"
     "\n"
     "Run the job briefly at one reduced cap, at (1 - depth) of its baseline draw (depth 0.40\n"
     "by default: the depth that predicted the public curves best), and read\n"
     "its slowdown there.  The curve is the power law through the origin and that point, with\n"
     "its exponent b from a prior (the median over reference curves).  With two probes both\n"
     "parameters come from the probes.  pfi model probe-eval measures the error of the\n"
     "relative throughput predicted at 80, 70 and 60% of baseline power on the real public\n"
     "curves, the probe taken at a measured level and never scored on itself.\n"},
};
#define NTOPICS ((int)(sizeof topics / sizeof topics[0]))

int pfi_cmd_help(int argc, char **argv)
{
    const pfi_opt opts[] = {{0}};
    const pfi_cmd_spec spec = {"pfi help [TOPIC]",
                               "Explain an idea behind pfi's commands; without a topic, list the "
                               "topics.  `pfi COMMAND --help` gives a command's options.",
                               opts};
    char **pos;
    int npos, rc = pfi_cli_args(&spec, argc, argv, &pos, &npos, NULL);
    if (rc >= 0)
        return rc;
    if (npos == 0) {
        printf("pfi help TOPIC, where TOPIC is one of:\n");
        for (int i = 0; i < NTOPICS; i++)
            printf("  %-10s %s\n", topics[i].name, topics[i].summary);
        printf("`pfi --help` lists the commands; `pfi COMMAND --help` gives their options.\n");
        return PFI_EXIT_OK;
    }
    if (npos > 1) {
        fprintf(stderr, "pfi help: one topic at a time\n");
        return PFI_EXIT_USAGE;
    }
    for (int i = 0; i < NTOPICS; i++)
        if (strcmp(pos[0], topics[i].name) == 0) {
            fputs(topics[i].text, stdout);
            return PFI_EXIT_OK;
        }
    fprintf(stderr, "pfi help: no topic '%s' (", pos[0]);
    for (int i = 0; i < NTOPICS; i++)
        fprintf(stderr, "%s%s", i ? ", " : "", topics[i].name);
    fprintf(stderr, ")\n");
    return PFI_EXIT_USAGE;
}
