/*
 * entry.h — the fuzz entry points, shared by the libFuzzer harnesses
 * (tests/fuzz/fuzz_main.c, built by `make fuzz`) and the Criterion replay
 * of saved inputs (tests/test_fuzz_replay.c, run by `make test`).
 *
 * Each entry feeds one input, as bytes, to a reader of the core the way
 * the CLI does (through a file, since the readers take paths) and checks a
 * few invariants the headers promise; a broken invariant aborts with a
 * message on stderr, so it is a crash to libFuzzer and a failure to the
 * replay.  Errors the readers report (bad YAML, unknown keys, corrupt
 * checkpoints) are expected and ignored.  Every entry returns 0.
 *
 * Files go to one directory per process, made on first use under $TMPDIR
 * (else /tmp) and removed by fuzz_cleanup() (also registered with atexit;
 * a process killed by a crash leaves it: `make fuzz` points TMPDIR into
 * its build directory for that reason).
 */
#ifndef GATED_FUZZ_ENTRY_H
#define GATED_FUZZ_ENTRY_H

#include <stddef.h>
#include <stdint.h>

/* A run config: the bytes as a run YAML (config_load_file), then each
 * line holding '=' as a --set (config_set, at most 64), config_resolve,
 * config_print, and the JSON round trip config_to_json -> config_from_json
 * -> config_resolve -> config_to_json, which must give the same text. */
int fuzz_config_one(const uint8_t *data, size_t size);

/* A sweep file (sweep_load), next to the base configs tiny.yaml and
 * quick.yaml (copies of experiments/).  On success: run count, indices and
 * rows consistent, and for the first runs, the base file plus the run's
 * overrides give the run's id (what `gated train BASE --set ...` does). */
int fuzz_sweep_one(const uint8_t *data, size_t size);

/* A checkpoint (checkpoint_read without and with an arena of the size the
 * file declares, then checkpoint_load); each twice: as given, and with
 * the last 8 bytes replaced by the checksum of the rest, so that mutated
 * files also reach the checks behind the checksum. */
int fuzz_checkpoint_one(const uint8_t *data, size_t size);

/* A bench suite (bench_load_file) in DIR/bench/, so ../experiments/quick.yaml
 * resolves; on success: case names unique, ceilings in range, FLOPs and
 * tokens finite and >= 0, bench_step_gemms for step cases. */
int fuzz_bench_one(const uint8_t *data, size_t size);

/* A database for `gated merge` (lab/merge.h): the bytes of a SQLite file,
 * or lines of changes to a database made with the store's API (entry.c
 * says how).  merged into a new database, which must then keep the input
 * whole or not at all (a refused input leaves the output empty; a
 * failure while copying what was checked is a bug); on success ls, show,
 * export and report (no plots) must read the output without an error,
 * writing no control byte and valid JSON, and merging the output again
 * must succeed and change nothing the second time. */
int fuzz_db_one(const uint8_t *data, size_t size);

typedef int (*FuzzEntry)(const uint8_t *data, size_t size);
/* The entry named "config", "sweep", "checkpoint", "bench" or "db", or NULL. */
FuzzEntry fuzz_entry(const char *target);

/* Make the directory now (the entries do it on first use).  A fork child
 * uses its parent's directory and leaves it to the parent to remove. */
void fuzz_init(void);
/* Remove the directory, if this process made it (safe to call twice). */
void fuzz_cleanup(void);

#endif
