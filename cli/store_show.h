/*
 * store_show.h — `gated ls` and `gated show`: the store's runs as text or
 * JSON (cli/store_show.c), read through run/store.h's query functions.
 */
#ifndef GATED_STORE_SHOW_H
#define GATED_STORE_SHOW_H

#include <stddef.h>
#include <stdio.h>

#include "run/store.h"

/* Table of runs, oldest first: run id, name, status (killed if stale),
 * steps done (highest metric step), final val loss, start time.  0, or -1
 * with the reason in err (cap > 0; always NUL-terminated). */
int show_ls(Store *s, FILE *f, char *err, size_t cap);

/* Everything about one run, found by exact run id, exact name or unique run
 * id prefix: config, provenance, final val/test results, summary values,
 * metric series, per-layer probes (f_attn, m_act at context 'layer=N', last
 * step) and the latest 'gate' histogram(s) as text bars.  Fails (printing
 * nothing) if no run matches or the argument is ambiguous.  0 or -1 (err). */
int show_run(Store *s, const char *run_id_or_name_or_prefix, FILE *f, char *err, size_t cap);

/* The same as one JSON document each (docs/cli.md, "Machine-readable output"):
 * ls {"db", "runs": [{run_id, name, status, steps, val_loss, started_at}]};
 * show {the run's row, "config" (the stored config parsed; null when
 * unreadable), "summary", "series", "other_series", "probes",
 * "histograms"}.  Text from the file through json_fput_text, NaN and
 * missing values as null.  0, or -1 (err). */
int show_ls_json(Store *s, FILE *f, char *err, size_t cap);
int show_run_json(Store *s, const char *run_id_or_name_or_prefix, FILE *f, char *err, size_t cap);

#endif
