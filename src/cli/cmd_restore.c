/* SPDX-License-Identifier: Apache-2.0 */
/* pfi restore: put back the power limits a sweep journaled, after a crash or SIGKILL. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "measure/journal.h"
#include "store/store.h"

/* The run a killed sweep was writing is left "running"; its journal names it.  Marked
 * interrupted only when the writer is gone (the journal's lock was free) and the run is still
 * running (a sweep that ended by itself wrote its own status). */
static int mark_interrupted(const pfi_journal *j)
{
    if (j->run_id <= 0)
        return PFI_EXIT_OK;
    if (!j->held) {
        printf("pfi restore: run %lld in %s left as it is: its sweep (pid %ld) still runs\n",
               j->run_id, j->run_db, j->pid);
        return PFI_EXIT_OK;
    }
    pfi_err err = {0};
    pfi_store *st = NULL;
    pfi_run_summary s;
    int rc = pfi_store_open(j->run_db, 0, &st, &err);
    if (rc == PFI_OK)
        rc = pfi_store_run_summary(st, j->run_id, &s, &err);
    if (rc == PFI_OK && strcmp(s.status, "running") == 0) {
        rc = pfi_store_finish_run(st, j->run_id, "interrupted", &err);
        if (rc == PFI_OK)
            printf("pfi restore: run %lld in %s marked interrupted\n", j->run_id, j->run_db);
    }
    pfi_store_close(st);
    if (rc != PFI_OK) {
        fprintf(stderr, "pfi restore: the limits are restored, but run %lld of the sweep was "
                        "not marked interrupted: %s\n",
                j->run_id, err.msg);
        return PFI_EXIT_FAIL;
    }
    return PFI_EXIT_OK;
}

/* Whether two paths name one file (a relative and an absolute path to one node are one). */
static int same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    if (stat(a, &sa) == 0 && stat(b, &sb) == 0)
        return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    return strcmp(a, b) == 0;
}

/* PFI_SIM_STATE as it was before a journal named its node, put back for the next journal. */
typedef struct sim_env {
    char v[PFI_JOURNAL_PATH_MAX];
    int set;
} sim_env;

static void sim_env_save(sim_env *e)
{
    const char *v = getenv("PFI_SIM_STATE");
    e->set = v != NULL;
    snprintf(e->v, sizeof e->v, "%s", v ? v : "");
}

static void sim_env_put_back(const sim_env *e)
{
    if (e->set)
        setenv("PFI_SIM_STATE", e->v, 1);
    else
        unsetenv("PFI_SIM_STATE");
}

/* The journal at path restored, or said why not: the exit status.  *found 0 when there is no
 * journal at path (nothing said). */
static int restore_path(const char *path, const pfi_cli_hw *hw0, int force, int *found)
{
    pfi_cli_hw hw = *hw0;
    pfi_err err = {0};
    pfi_journal j;
    int rc = pfi_journal_load(&j, path, force, &err);
    *found = rc != PFI_ENOENT;
    if (rc == PFI_ENOENT)
        return PFI_EXIT_OK;
    if (rc != PFI_OK && rc != PFI_EBUSY && rc != PFI_EIO) {
        /* Damaged: no restore can read it, now or later; the way out is by hand.  Exit 1: the
         * command line was right (2 is bad input to pfi). */
        pfi_cli_fail("restore", &err);
        /* One not trusted (another's, or writable by others) is not damaged: its own message
         * says how to make it usable, and removing it would contradict that. */
        if (rc != PFI_EPERM)
            fprintf(stderr, "pfi restore: check the GPUs' limits (nvidia-smi -q -d POWER), set "
                            "them back by hand if needed, then remove %s\n", path);
        return PFI_EXIT_FAIL;
    }
    if (rc != PFI_OK)
        return pfi_cli_fail("restore", &err);
    /* The journal knows which backend (and which simulated node) it was written against. */
    if (!hw.backend && j.backend[0])
        hw.backend = j.backend;
    /* Another simulated node in the environment got the journaled limits (its UUIDs are the
     * same as every node's of its preset) and the node capped stayed capped. */
    const char *env_ss = getenv("PFI_SIM_STATE");
    if (j.sim_state[0] && env_ss && *env_ss && !same_file(env_ss, j.sim_state)) {
        fprintf(stderr, "pfi restore: the journal %s was written against the simulated node "
                        "%s, and PFI_SIM_STATE names %s: unset it, or name that node\n",
                path, j.sim_state, env_ss);
        pfi_journal_close(&j);
        return PFI_EXIT_USAGE;
    }
    sim_env saved;
    sim_env_save(&saved);
    if (j.sim_state[0])
        setenv("PFI_SIM_STATE", j.sim_state, 1);
    pfi_backend *b;
    rc = pfi_cli_open_hw(&hw, &b, &err);
    int done = 0;
    if (rc == PFI_OK) {
        rc = pfi_journal_restore(&j, b, &done, &err);
        pfi_hw_close(b);
    } else {
        done = -1;
    }
    sim_env_put_back(&saved);
    pfi_journal_close(&j);
    /* Every GPU restored is said on stdout, as a full restore says it; each one not, with its
     * reason, on stderr (they may want different fixes: a lost GPU, a permission). */
    for (int i = 0; done >= 0 && i < j.n; i++) {
        /* The index as nvidia-smi -i takes it now: GPUs renumber across a reboot. */
        int now = j.e[i].gpu_now >= 0 ? j.e[i].gpu_now : j.e[i].gpu;
        char was[48] = "";
        if (j.e[i].gpu_now >= 0 && j.e[i].gpu_now != j.e[i].gpu)
            snprintf(was, sizeof was, ", GPU %d when journaled", j.e[i].gpu);
        const char *uuid = j.e[i].uuid[0] ? j.e[i].uuid : "?";
        /* as journaled, to the milliwatt NVML keeps: 650.7 W read "651 W" */
        if (j.e[i].restore_rc == PFI_OK)
            printf("GPU %d (%s%s): limit restored to %.7g W\n", now, uuid, was, j.e[i].limit_w);
        else
            fprintf(stderr, "pfi restore: GPU %d (%s%s): NOT restored to %.7g W: %s\n", now,
                    uuid, was, j.e[i].limit_w, j.e[i].why);
    }
    if (rc != PFI_OK) {
        int all = done == j.n; /* every GPU back: what failed is the journal's removal */
        if (done >= 0 && !all)
            fprintf(stderr, "pfi restore: restored %d of %d GPUs; the journal %s is kept\n",
                    done, j.n, path);
        /* A limit the driver refused (NVML's INVALID_ARGUMENT is PFI_ERANGE) is no mistake in
         * the command line: exit 1, not the 2 of bad input.  Each GPU's reason is said above
         * when the GPUs were reached; else why they were not, or why the journal stays. */
        if (done < 0 || all)
            pfi_cli_fail("restore", &err);
        return PFI_EXIT_FAIL;
    }
    printf("pfi restore: %d GPU%s restored from %s (written by pid %ld)\n", done,
           done == 1 ? "" : "s", path, j.pid);
    if (j.writer_runs)
        printf("pfi restore: the journal %s is kept: its writer (pid %ld) still runs, owns it "
               "and may change the limits again\n", path, j.pid);
    return mark_interrupted(&j);
}

/* Without --journal: every default location, each journal found restored or named with why
 * it could not be.  Looking at one (the per-user one, or /var/lib/pfi/journal as root) said
 * "nothing to restore" after a `sudo pfi sweep`, or a sweep over the fake NVML (its journal
 * beside the simulated node), with the GPUs still capped. */
static int restore_defaults(const pfi_cli_hw *hw, int force)
{
    char paths[PFI_JOURNAL_DEFAULTS][PFI_JOURNAL_PATH_MAX];
    int n = pfi_journal_default_paths(paths, PFI_JOURNAL_DEFAULTS);
    int status = PFI_EXIT_OK, any = 0;
    for (int i = 0; i < n; i++) {
        int found = 0;
        int st = restore_path(paths[i], hw, force, &found);
        any |= found;
        if (st > status)
            status = st;
    }
    if (!any) {
        printf("pfi restore: no journal at ");
        for (int i = 0; i < n; i++)
            printf("%s%s", i == 0 ? "" : i == n - 1 ? " or " : ", ", paths[i]);
        printf(": nothing to restore\n");
    }
    return status;
}

int pfi_cmd_restore(int argc, char **argv)
{
    pfi_cli_hw hw = {0};
    const char *path = NULL;
    int force = 0;
    const pfi_opt opts[] = {
        PFI_CLI_HW_WHICH_OPTS(hw),
        {"journal", PFI_OPT_STR, &path, "FILE", "the journal (default: $PFI_JOURNAL, else every "
                                                "default location: the simulated node's "
                                                "($PFI_SIM_STATE.journal), the per-user one, "
                                                "/var/lib/pfi/journal)"},
        {"force", PFI_OPT_FLAG, &force, NULL, "restore even while its writer still runs (its journal is kept: the writer owns it)"},
        {0},
    };
    const pfi_cmd_spec spec = {
        "pfi restore [--journal FILE] [--backend auto|nvml|sim] [--force]",
        "Set every GPU in the journal back to the power limit it had before the sweep (or "
        "daemon) that wrote it changed anything, then delete the journal.  GPUs are matched by "
        "UUID.  The run a killed sweep was storing, named in the journal, is marked "
        "interrupted.  Without --journal (and $PFI_JOURNAL) every default location is looked "
        "at, and each journal found is restored or named with why it cannot be.  Nothing to "
        "restore is not an error.",
        opts,
        "pfi restore                                        # after a killed sweep or daemon\n"
        "pfi restore --journal /var/lib/pfi/journal --backend nvml"};
    for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
        if (!strcmp(argv[i], "--read-only")) {
            fprintf(stderr, "pfi restore: --read-only is not an option of restore, whose one "
                            "purpose is to change the GPUs' power limits back\n");
            return PFI_EXIT_USAGE;
        }
    int rc = pfi_cli_args_none(&spec, argc, argv, "restore");
    if (rc >= 0)
        return rc;
    if (!path)
        return restore_defaults(&hw, force);
    int found = 0;
    rc = restore_path(path, &hw, force, &found);
    if (!found)
        printf("pfi restore: no journal at %s: nothing to restore\n", path);
    return rc;
}
