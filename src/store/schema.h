/* SPDX-License-Identifier: Apache-2.0 */
/* schema.h: the store's own tables as an ordered list of migration steps (migrate.c applies
 * them): step i brings PRAGMA user_version from i to i+1. */
#ifndef PFI_STORE_SCHEMA_H
#define PFI_STORE_SCHEMA_H

#include "store/store.h"

extern const pfi_store_step pfi_store_schema_steps[];
extern const int pfi_store_schema_nsteps;

#endif
