/*
 * export.h — `gated export`: the metric rows of a results database as CSV
 * or JSON lines, in long format, for pandas, R, spreadsheets and jq.
 *
 * One output row per metric row (run, key, context, step) of the selected
 * runs, read through the store's views (run/store_views.c): the columns
 *
 *   run_id, name, status, seed, sweep, label, key, context, layer, head,
 *   step, value[, t], then the config columns
 *
 * sweep and label: with a sweep filter that sweep's, else the run's first
 * sweep by name (empty outside sweeps).  layer and head: integers split out
 * of context ("layer=1,head=3"), empty where absent; context stays, whole,
 * since some keys carry more there (eval's split, length, scaling).  t:
 * when the metric was recorded (unix seconds), where the database has it.
 * Config columns: the runs' resolved configs flattened (keys as in the
 * stored config JSON, "model.gate.position"; a key that is also a fixed
 * column's name gets "config." in front), in first-seen order: those whose
 * value differs between the exported runs (or is missing in some), every
 * key, or none (ExportConfig).  A key that has no effect on a run
 * (config_key_applies: the gate's keys of an ungated run, the bias's start
 * without a bias, RoPE scaling factors without scaling, data.bb.* off the
 * Bigram-Backcopy task) is empty (null) for it, as if missing.
 *
 * Runs come oldest first (started_at, then run id); within a run, by key
 * (in --key order when keys are given), layer, head, context, step.
 *
 * CSV: RFC 4180 with a header line, CRLF-free ("\n" line ends), text cells
 * by csv_fput_text (quoted as needed; a cell starting with = + - @ gets a
 * leading ', util/csv.h), numbers as util_fmt_double writes them (they
 * read back bitwise; inf / -inf as such), integers as integers, SQL NULL
 * as an empty cell.  JSON lines: one object per row with the same member
 * names in the same order, strings by json_fput_text, NULL, NaN and
 * infinities as null; every member is present on every line.
 */
#ifndef GATED_EXPORT_H
#define GATED_EXPORT_H

#include <stdio.h>

#include "run/store.h"

typedef enum { EXPORT_CSV, EXPORT_JSONL } ExportFormat;
typedef enum { EXPORT_CONFIG_VARYING, EXPORT_CONFIG_ALL, EXPORT_CONFIG_NONE } ExportConfig;
/* Names in enum order, NULL-terminated: "csv", "jsonl"; "varying", "all", "none". */
extern const char *const export_format_names[];
extern const char *const export_config_names[];

typedef struct {
    ExportFormat format;
    ExportConfig config;
    const char *sweep;  /* NULL: every run */
    char *const *runs;  /* run ids, names or unique id prefixes (store_resolve_run); none: every run */
    int nruns;
    char *const *keys;  /* metric keys; none: every key */
    int nkeys;
} ExportOpts;

/* Write the selected rows to f; *rows (may be NULL) gets how many.
 * Returns 0; -2 for bad input (an unknown or ambiguous run, a sweep the
 * database does not have), with nothing written; -1 on a failure (the
 * database, out of memory, a write error on f).  The message is in err
 * (always NUL-terminated). */
int export_metrics(Store *s, const ExportOpts *o, FILE *f, long long *rows, char *err, size_t cap);

#endif
