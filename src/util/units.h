/* SPDX-License-Identifier: Apache-2.0 */
/* units.h: parsing the quantities people type: durations, watts or percentages, GPU lists,
 * cap ranges.  Every parser rejects trailing garbage and says what it expected. */
#ifndef PFI_UTIL_UNITS_H
#define PFI_UTIL_UNITS_H

#include "core/err.h"

/* 1 when s (after white space and a sign, which strtod skips) begins "0x" or "0X": a number in
 * hexadecimal, which strtod reads ("0x10W" was 16 W, "0x1p-3" a slowdown of 12.5%).  Every
 * quantity below and the budget grammar (budget.h) refuse it: people write decimal. */
int pfi_units_hex(const char *s);

/* A finite decimal number, as every number a person types is read (the option reader, `pfi ctl
 * job throughput`, the quantities below): strtod, refusing hexadecimal, NaN, the infinities and
 * what is out of a double's range (ERANGE: "1e400", "1e-400").  With rest NULL the number must
 * be all of s; otherwise *rest is set to what follows it (a unit).  0, or -1 with *v untouched. */
int pfi_parse_decimal(const char *s, double *v, const char **rest);

/* "100ms", "2s", "1.5", "5m", "1h" -> seconds.  A bare number is seconds. */
int pfi_parse_duration(const char *s, double *seconds, pfi_err *err);

/* Watts per unit of a power unit: "" or W (w), kW (k or K, w or W), MW; NAN for any other.  The
 * M of mega is upper case only: "mW" is the milliwatt, and a budget of "0.5mW" read as 500 kW
 * caps nothing. */
double pfi_power_unit(const char *u);

/* "5600W", "5.6kW", "70%" -> either watts (is_pct=0) or a fraction 0..1 (is_pct=1). */
int pfi_parse_power(const char *s, double *value, int *is_pct, pfi_err *err);

/* A maximum slowdown, as every command takes one: "0.1" or "10%" -> 0.1; in [0, 1). */
int pfi_parse_slowdown(const char *s, double *slowdown, pfi_err *err);

/* "0-3,6,7" -> sorted unique indices.  "all" -> 0..max_n-1. */
int pfi_parse_index_list(const char *s, int max_n, int *out, int *n, pfi_err *err);

/* "100,90,80%" or "1,0.9,0.8" -> fractions; "700:300:50" (from:to:step, watts) -> watts.
 * Lists of doubles separated by commas: "0.1,0.2". */
int pfi_parse_double_list(const char *s, double *out, int max_n, int *n, pfi_err *err);
int pfi_parse_cap_range(const char *s, double *out, int max_n, int *n, pfi_err *err);

/* The directory holding the public datasets: $PFI_DATA_DIR, else "../shared/data". */
const char *pfi_data_dir(void);
/* 1 when $PFI_DATA_DIR names the data folder, 0 when pfi_data_dir() is the relative default. */
int pfi_data_dir_from_env(void);

#endif
