/* SPDX-License-Identifier: Apache-2.0 */
/* schema.c: the store's own tables, as an ordered list of migration steps.  Never edit a step
 * that has shipped: append a new one (ALTER TABLE, new table, data fix) and bump
 * PFI_STORE_SCHEMA_VERSION in store.h to the new count. */
#include "store/schema.h"
#include "store/store.h"
#include "store/store_internal.h"

const pfi_store_step pfi_store_schema_steps[] = {
    /* 1: jobs, runs, levels, telemetry, and the version table other layers use. */
    /* AUTOINCREMENT: a deleted run's id is never given to a later run. */
    {"CREATE TABLE jobs ("
     "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
     "  command TEXT,"                                 /* NULL for imported data */
     "  config_json TEXT NOT NULL DEFAULT '{}',"
     "  tags_json TEXT NOT NULL DEFAULT '{}',"
     "  created TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ','now'))"
     ");"
     "CREATE TABLE runs ("
     "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
     "  job_id INTEGER NOT NULL REFERENCES jobs(id),"
     "  name TEXT NOT NULL,"
     "  source TEXT NOT NULL,"
     "  backend TEXT,"                                 /* NULL for imported data */
     "  gpu_type TEXT NOT NULL,"
     "  n_gpus INTEGER NOT NULL CHECK (n_gpus >= 1),"
     "  unit TEXT NOT NULL CHECK (unit IN ('tokens/s', 'samples/s')),"
     "  unit_label TEXT NOT NULL,"
     "  min_limit_w REAL, max_limit_w REAL, default_limit_w REAL,"
     "  model TEXT NOT NULL DEFAULT '', family TEXT NOT NULL DEFAULT '',"
     "  moe INTEGER NOT NULL DEFAULT -1, finetune INTEGER NOT NULL DEFAULT -1,"
     "  lora INTEGER NOT NULL DEFAULT 0, params_b REAL,"
     "  dp INTEGER NOT NULL DEFAULT 0, tp INTEGER NOT NULL DEFAULT 0,"
     "  pp INTEGER NOT NULL DEFAULT 0, ep INTEGER NOT NULL DEFAULT 0,"
     "  seq_len INTEGER NOT NULL DEFAULT 0, global_batch INTEGER NOT NULL DEFAULT 0,"
     "  started TEXT, ended TEXT,"
     "  status TEXT NOT NULL"
     ");"
     "CREATE INDEX runs_job ON runs(job_id);"
     /* What makes re-importing idempotent: one imported run per source and name. */
     "CREATE UNIQUE INDEX runs_imported ON runs(source, name) WHERE status = 'imported';"
     "CREATE TABLE levels ("
     "  id INTEGER PRIMARY KEY,"
     "  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
     "  seq INTEGER NOT NULL,"
     "  cap_w REAL NOT NULL, enforced_w REAL, power_w REAL,"
     "  tput REAL, tput_lo REAL, tput_hi REAL,"
     "  sm_clock_mhz REAL, powercap_frac REAL,"
     "  gpu_util REAL, sm_active REAL, tensor_active REAL, dram_active REAL,"
     "  nvlink_mibs REAL, pcie_mibs REAL,"
     "  t_start_s REAL, t_end_s REAL,"
     "  n_samples INTEGER NOT NULL DEFAULT 0,"
     "  UNIQUE (run_id, seq)"
     ");"
     "CREATE TABLE telemetry ("
     "  level_id INTEGER NOT NULL REFERENCES levels(id) ON DELETE CASCADE,"
     "  gpu INTEGER NOT NULL,"
     "  n INTEGER NOT NULL,"                           /* raw samples averaged into this row */
     "  have INTEGER NOT NULL,"
     "  t_s REAL NOT NULL,"
     "  power_w REAL, power_inst_w REAL, mem_power_w REAL, energy_j REAL,"
     "  sm_clock_mhz REAL, mem_clock_mhz REAL, clock_reasons INTEGER,"
     "  gpu_util REAL, sm_active REAL, sm_occupancy REAL, tensor_active REAL, dram_active REAL,"
     "  nvlink_tx_mibs REAL, nvlink_rx_mibs REAL, pcie_tx_mibs REAL, pcie_rx_mibs REAL,"
     "  temp_c REAL, mem_used_mib REAL, limit_w REAL, enforced_w REAL"
     ");"
     "CREATE INDEX telemetry_level ON telemetry(level_id, gpu, t_s);"
     "CREATE TABLE schema_layers ("
     "  layer TEXT PRIMARY KEY,"
     "  version INTEGER NOT NULL"
     ");"},
    /* 2: each level's own start and end (cap change to end), so a stored run's cost is the
     * time it really took, not the span of its telemetry; NULL for levels stored before. */
    {"ALTER TABLE levels ADD COLUMN began_s REAL;"
     "ALTER TABLE levels ADD COLUMN ended_s REAL;"},
    /* 3: the lowest enforced limit among a level's GPUs beside their mean, so that one GPU held
     * below the cap (an out-of-band cap) shows; NULL for levels stored before. */
    {"ALTER TABLE levels ADD COLUMN enforced_min_w REAL;"},
};

const int pfi_store_schema_nsteps =
    (int)(sizeof pfi_store_schema_steps / sizeof pfi_store_schema_steps[0]);

_Static_assert(sizeof pfi_store_schema_steps / sizeof pfi_store_schema_steps[0] ==
                   PFI_STORE_SCHEMA_VERSION,
               "PFI_STORE_SCHEMA_VERSION must equal the number of schema steps");
