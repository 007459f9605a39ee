/*
 * store.h — the SQLite results store: runs, their provenance, metrics,
 * summaries and histograms, in one database file (results.db).
 *
 * The schema is documented (in SQL) at the top of store.c; store_impl.h
 * lists the files the store is split into.  The database is opened in WAL
 * mode with a 5 s busy timeout and foreign keys on, so several training
 * processes may share one file and a process killed at any moment leaves
 * a readable database holding every committed row.  `gated ls` / `show`
 * print what the read functions below give (cli/store_show.c); `gated
 * merge` is lab/merge.h.
 *
 * Functions returning int give 0 on success and -1 on failure; the reason
 * is then in store_errmsg().  Strings passed in are copied (never kept).
 * Every value reaches SQLite through bound parameters.  NaN values are
 * stored as SQL NULL (SQLite has no NaN); ±Inf are stored as such.
 */
#ifndef GATED_STORE_H
#define GATED_STORE_H

#include <stddef.h>
#include <stdio.h>

#include "run/config.h"
#include "util/sysinfo.h"

/* Schema version written to meta.schema_version; files of version 1 are
 * migrated by a writer's store_open and read as version 2 read-only
 * (store.c). */
#define STORE_SCHEMA_VERSION 2
/* A 'running' run whose heartbeat is older than this is reported 'killed'. */
#define STORE_STALE_SECONDS 60
/* Buffered metric rows are written automatically once this many are held. */
#define STORE_FLUSH_ROWS 512

typedef struct Store Store;

/* Where a run ran, and with which build.  store_provenance_fill() sets
 * every field; code_version is the build's commit and git_dirty 1
 * (uncommitted changes at build time), 0 (clean) or -1 (unknown: not built
 * from a git checkout).
 * NULL strings are stored as "unknown". */
typedef struct {
    const char *host, *cpu_model, *compiler, *cflags, *openblas_version, *sqlite_version,
        *libyaml_version, *code_version;
    int git_dirty;
} Provenance;

/* Open (creating if absent) the results database at path.  Refuses, without
 * writing to it, a file that is not a SQLite database, a SQLite database
 * that is not a gated one, or one with a newer schema version; the message
 * (in err, always NUL-terminated) names the path, e.g.
 * "results.db: not a gated database (file is not a database)".  Refused
 * too (store_guard.c): ":memory:", a "file:" URI, a path that is not a
 * regular file, and a file holding a trigger, view, table or index the
 * store does not define.  0; -2 when the refusal is about the path or
 * the file (bad input: exit 2); -1 otherwise (locked, disk full, I/O,
 * out of memory: exit 1). */
int store_open(Store **s, const char *path, char *err, size_t errcap);
/* Open an existing results database for reading only (ls, show, report,
 * eval's look-ups, sweep --dry-run): SQLITE_OPEN_READONLY, nothing created
 * (a missing file is an error, "PATH: no such database"), no schema, no
 * journal-mode switch, no migration: the file's bytes stay as they are, and
 * a read-only file or directory is fine.  The same checks as store_open
 * (not SQLite, not gated, newer schema); an empty SQLite file is "not a
 * gated database (empty)".  Every writing function then fails with SQLite's
 * "attempt to write a readonly database".  In a folder this process cannot
 * write, a file without a -wal of its own is opened immutable (a WAL
 * database needs its -shm file otherwise).  Returns as store_open. */
int store_open_ro(Store **s, const char *path, char *err, size_t errcap);
/* Flush buffered metrics (a failure is printed to stderr) and close. NULL ok. */
void store_close(Store *s);

/* Insert a run as 'running' or, for an existing run id, reset it to
 * 'running' (a resume: old metrics are kept, started_at is kept, ended_at /
 * error_text / diverged_step are cleared, provenance and argv are updated).
 * p NULL means store_provenance_fill().  argv_joined may be NULL. */
int store_run_begin(Store *s, const char *run_id, const char *name, const char *config_json,
                    long long seed, int threads, const Provenance *p, const char *argv_joined);
/* The run's status into buf (cap >= 9 holds them all); NULL if absent (or
 * on error: store_errmsg() then says which).  A 'running' run whose
 * heartbeat is older than STORE_STALE_SECONDS, or whose claim is held by a
 * process of this host that has exited (store.h, "Claims"), is reported
 * 'killed'. */
const char *store_run_status(Store *s, const char *run_id, char *buf, size_t cap);
/* Flush buffered metrics, then set the run's heartbeat_at to now. */
int store_heartbeat(Store *s, const char *run_id);
/* Flush buffered metrics, then end the run: status is finished, failed,
 * diverged or killed; error_text may be NULL; diverged_step < 0 is NULL.
 * Any claim on the run (store_run_claim) ends with it. */
int store_run_end(Store *s, const char *run_id, const char *status, const char *error_text,
                  long long diverged_step);

/* Buffer one metric row (context NULL means ''), timestamped now (column
 * t); written by store_flush.  A rewritten (run, key, context, step)
 * replaces the old value. */
int store_metric(Store *s, const char *run_id, const char *key, const char *context,
                 long long step, double value);
/* Write buffered metrics in one transaction; also done automatically every
 * STORE_FLUSH_ROWS rows and at close.  On failure the batch is rolled back
 * and dropped (the message says how many rows). */
int store_flush(Store *s);
/* Set (replace) a summary value for (run, key, context); text may be NULL. */
int store_summary(Store *s, const char *run_id, const char *key, const char *context,
                  double value, const char *text);
/* Set (replace) a histogram: nbins equal-width bins over [lo, hi], counts
 * stored as a JSON array of integers. */
int store_histogram(Store *s, const char *run_id, const char *key, const char *context,
                    long long step, double lo, double hi, const long long *counts, int nbins);

/* Fill p for this process: host, CPU model and compiler (util/sysinfo.h),
 * OpenBLAS / SQLite / libyaml versions, and the build's cflags, commit and
 * dirty flag (run/codever.h: fixed when the binary was built, "unknown" /
 * -1 when its source tree was not a git checkout; the working directory
 * plays no part).  The strings are static storage, overwritten by the next
 * call. */
void store_provenance_fill(Provenance *p);


/* The metric keys recorded once per optimizer update (run/train.c), which
 * schema 1 numbered from 0: train_loss, lr, grad_norm, spike.  Steps count
 * updates from 1 (README, "Steps"). */
extern const char *const store_update_keys[4];

/* Run id of a resolved config (JSON incl. seed): 64-bit FNV-1a as 16
 * lowercase hex digits plus NUL. */
void store_run_id(const char *config_json, char out[17]);

/* The canonical JSON of a run's resolved config (malloc'd; NULL when out of
 * memory) and its run id.  Runtime settings that cannot change results
 * (`threads`: losses are bitwise identical at any thread count) are written
 * as their defaults, so they do not change the id.  The one function train
 * and sweep both use, so their ids always agree. */
char *store_config_json(const Config *c, char id[17]);

/* Whether the database holds the rows a run has after `step` updates, which
 * gated train commits before a checkpoint names the step done: train_loss,
 * lr and grad_norm at every step 1..step, and val_loss at every multiple of
 * eval_every up to step.  A resume goes on only on top of them.  1 yes, 0
 * no (why, always NUL-terminated, says which rows are missing), -1 on an
 * error (store_errmsg()). */
/* The last step of run_id's train_loss rows (0 when none): where the run
 * as this database holds it ends.  -1 on an error (store_errmsg()). */
long long store_run_last_step(Store *s, const char *run_id);

int store_run_rows_through(Store *s, const char *run_id, long long step, long long eval_every, char *why,
                           size_t cap);

/* Delete a run's metrics, summary and histograms (one transaction): a run
 * that starts again from step 0 must not keep rows of an earlier attempt. */
int store_run_reset(Store *s, const char *run_id);

/* The finished runs of a sweep, in sweep order: *ids (malloc'd, *n of
 * them; NULL when none).  0, or -1 (store_errmsg()). */
int store_sweep_finished(Store *s, const char *sweep, char (**ids)[17], int *n);

/* Find a run by exact run id, exact name or unique run id prefix: its id
 * into id and, when config_json is non-NULL, its resolved config JSON
 * (malloc'd).  0, or -1 (no match, ambiguous: store_errmsg() says which). */
int store_find_run(Store *s, const char *arg, char id[17], char **config_json);
/* The same look-up, giving the whole run id (malloc'd: a run id in a
 * merged file may be longer than 16 bytes), or NULL (store_errmsg()). */
char *store_resolve_run(Store *s, const char *arg);

/* ------------------------------------------------------------------ */
/* Reading runs back (gated ls and show: cli/store_show.c)            */
/* ------------------------------------------------------------------ */

/* Strings are the file's text as is (malloc'd; NULL where SQL NULL): a
 * merged database is untrusted, so escape them (store_escape) for a
 * terminal.  A value that is SQL NULL reads as NaN.  Each function gives 0,
 * or -1 (store_errmsg()) with nothing to free. */

/* One run as ls lists it. */
typedef struct {
    char *run_id, *name;
    char *status;      /* effective: a stale 'running' reads "killed"; never NULL */
    int has_steps;     /* whether it has metrics */
    long long steps;   /* its highest metric step */
    double val_loss;   /* summary val_loss (context ''), else its last val_loss metric */
    double started_at; /* unix seconds */
} StoreRunRow;

/* Every run, oldest first (started_at, then run id), and the longest name
 * in characters (as SQLite's length() counts them; 0 without runs). */
typedef struct {
    StoreRunRow *rows;
    int n, name_width;
} StoreRunList;
int store_list_runs(Store *s, StoreRunList *out);
void store_run_list_free(StoreRunList *l);

/* A run's row of the runs table (store.c's schema), every column. */
typedef struct {
    char *run_id, *name, *status, *config_json, *code_version, *host, *cpu_model, *compiler, *cflags,
        *openblas_version, *sqlite_version, *libyaml_version, *argv;
    char *error_text;             /* NULL: none (SQL NULL) */
    const char *effective_status; /* status as read at read_at ("killed" when stale, "?" when NULL) */
    long long seed, diverged_step, env_id;
    int has_diverged;             /* diverged_step is set */
    int threads, git_dirty;       /* git_dirty: 1, 0, or -1 (unknown) */
    double started_at, ended_at, heartbeat_at; /* unix seconds; ended_at NaN while not ended */
    double read_at;               /* when it was read */
} StoreRunInfo;
/* The run with this exact run id (store_find_run resolves names and
 * prefixes); free with store_run_info_free. */
int store_run_info(Store *s, const char *run_id, StoreRunInfo *out);
void store_run_info_free(StoreRunInfo *r);

/* A run's summary rows (value NaN when NULL; text NULL when none), by key,
 * then context, shorter contexts first. */
typedef struct {
    char *key, *context, *text;
    double value;
} StoreSummaryRow;
int store_read_summary(Store *s, const char *run_id, StoreSummaryRow **rows, int *n);
void store_summary_free(StoreSummaryRow *rows, int n);

/* A run's metric series at context '', by key: number of points, last step
 * and the value there; *n_other: how many (key, context) series it has at
 * other contexts (per layer / per head). */
typedef struct {
    char *key;
    long long points, last_step;
    double last_value;
} StoreSeries;
int store_read_series(Store *s, const char *run_id, StoreSeries **rows, int *n, long long *n_other);
void store_series_free(StoreSeries *rows, int n);

/* A run's per-layer probes f_attn, m_act and resid_kurtosis (context
 * exactly 'layer=N'), by layer: the summary's value, else the metric's at
 * its last step.  free(). */
typedef struct {
    long long layer;
    double f_attn, m_act, kurt;
    int has_f, has_m, has_k;
} StoreProbe;
int store_read_probes(Store *s, const char *run_id, StoreProbe **rows, int *n);

/* A run's latest histogram of key for each context, shorter contexts
 * first: its step, [lo, hi] and counts (nbins of them; nbins -1 and counts
 * NULL when the stored counts are not a JSON array of integers). */
typedef struct {
    char *context;
    long long step;
    double lo, hi;
    long long *counts;
    int nbins;
} StoreHist;
int store_read_histograms(Store *s, const char *run_id, const char *key, StoreHist **rows, int *n);
/* A histogram's stored counts: a JSON array of integers >= 0, each as
 * written (a double would round counts past 2^53), into *out (malloc'd,
 * *nout of them).  0, or -1 (not such an array, or out of memory) with
 * *out NULL. */
int store_parse_counts(const char *js, long long **out, int *nout);
void store_histograms_free(StoreHist *rows, int n);

/* ------------------------------------------------------------------ */
/* Untrusted text: names, labels, anything read back from a database    */
/* ------------------------------------------------------------------ */

/* Names and labels (run names, sweep names, variant labels) reach file
 * names, gnuplot scripts, Markdown / TeX / CSV and terminals, so they must
 * be printable text.  0 if s is; else -1 and why (always NUL-terminated),
 * e.g. "contains a control character (\x0a at byte 2); names and labels
 * must be printable text".  Refused: bytes 0x01-0x1f (tab included: it has
 * no place in a name and breaks aligned output), 0x7f, C1 controls
 * (U+0080-U+009F, written C2 80 - C2 9F in UTF-8) and bytes that are not
 * valid UTF-8. */
int store_name_check(const char *s, char *why, size_t cap);

/* 1 when s is a run id as store_run_id makes them (16 lowercase hex
 * digits): checked before an id read from a database becomes a file name. */
int store_run_id_valid(const char *s);

/* s for a terminal or a text file: every character store_name_check
 * refuses written visibly as \xNN (each byte); the rest as is.  Into out
 * (cap > 0; cut at a character boundary, always NUL-terminated); returns
 * out. */
char *store_escape(const char *s, char *out, size_t cap);
/* The same on the heap (NULL when out of memory; NULL s gives ""). */
char *store_escape_dup(const char *s);
/* The same to a stream. */
void store_fput_escaped(FILE *f, const char *s);

/* The last error's message ("" if none). */
const char *store_errmsg(Store *s);
/* Whether the last error was the machine's (locked, disk full, I/O, out
 * of memory: exit 1) rather than the input's or the file's (exit 2). */
int store_err_runtime(Store *s);

/* ------------------------------------------------------------------ */
/* Claims: who is about to run, or is running, a run (run_claims)       */
/* ------------------------------------------------------------------ */

/* Several processes (sweeps, trainers) may share one database, so a run is
 * claimed, atomically, just before it starts: store_run_claim re-reads the
 * run inside one BEGIN IMMEDIATE transaction and either records the claim
 * (owner, claimed_at) or leaves the run alone.  A run is live, and never
 * claimed by anyone else, while its claim is fresh (claimed_at within
 * STORE_STALE_SECONDS; the claimant refreshes it with store_claim_refresh)
 * or while it is 'running' with a fresh heartbeat.  A claim ends with the
 * run (store_run_end deletes it) or with store_run_release. */

/* An attestation (store_attest_get): this build's code re-executed the
 * run's first updates and found its stored rows bitwise equal. */
typedef struct {
    long long steps, rows; /* the updates re-executed; the metric and histogram rows compared */
    double verified_at;    /* unix seconds */
} StoreAttest;

/* What a claim sees of a run, inside its transaction. */
typedef struct {
    const char *status;       /* effective status (a stale 'running' reads "killed"); NULL: no such run */
    const char *code_version; /* NULL: no such run */
    double ended_at;          /* unix seconds; NaN when not ended or no such run */
    const char *cflags;       /* the build's flags it was recorded with; NULL: no such run */
    const StoreAttest *attest; /* an attestation for this build (codever.h) of the stored copy; NULL: none */
} StoreRunState;

/* Whether to claim a run in this state: 1 yes, 0 no.  Called inside the
 * claim's transaction, so it must not use the Store. */
typedef int (*StoreClaimDecide)(void *ctx, const StoreRunState *state);

enum { STORE_CLAIM_DECLINED = 0, STORE_CLAIMED = 1, STORE_CLAIM_LIVE = 2 };

/* This process's owner token, "HOST:PID:START" (START: when the process
 * started, in clock ticks since boot, so a pid used again by a later
 * process is not taken for the owner); cut to cap, NUL-terminated. */
void store_owner_token(char *out, size_t cap);
/* An owner token's parts: 0 with host, *pid and *start (-1 in a token of
 * the older form "HOST:PID"), or -1 when owner is neither form. */
int store_owner_parse(const char *owner, char *host, size_t hcap, long *pid, long long *start);

/* Claim run_id for owner, in one BEGIN IMMEDIATE transaction:
 *   a fresh claim by owner itself (a claim made for it)  STORE_CLAIMED, decide not asked
 *   live otherwise: a fresh claim by another owner, or
 *   'running' with a fresh heartbeat                     STORE_CLAIM_LIVE
 *   else decide(ctx, state) (NULL: claim unless finished
 *   or diverged) says 0                                  STORE_CLAIM_DECLINED
 *   else the claim is recorded (owner, now)              STORE_CLAIMED
 * The run's row is not touched (the claimant's store_run_begin writes it).
 * status (cap >= 9; may be NULL) gets what was seen: the effective status,
 * "running" when live, "-" when absent.  -1 on error (store_errmsg()). */
int store_run_claim(Store *s, const char *run_id, const char *owner, StoreClaimDecide decide, void *ctx,
                    char *status, size_t cap);
/* Set claimed_at to now on every claim held by owner.  0 or -1. */
int store_claim_refresh(Store *s, const char *owner);
/* End owner's claim on run_id (one transaction): if owner holds it and the
 * run is still 'running' (its process died without ending it), the run is
 * ended as status (failed or killed) with error_text; the claim is
 * deleted.  A claim held by another owner is left alone.  1 if the run was
 * ended here, 0 if not, -1 on error. */
int store_run_release(Store *s, const char *run_id, const char *owner, const char *status,
                      const char *error_text);

/* Tests only: set a run's heartbeat_at to t (unix seconds). */
int store_debug_set_heartbeat(Store *s, const char *run_id, double t);

/* ------------------------------------------------------------------ */
/* Sweeps (the sweep_runs table: see store.c's schema)                 */
/* ------------------------------------------------------------------ */

/* One run of a sweep, as recorded in sweep_runs. */
typedef struct {
    const char *run_id, *label;
    long long seed;
    int idx, is_baseline;
} StoreSweepRun;

/* Record, in one transaction, that runs[0..n) belong to sweep `sweep`,
 * which has nruns runs in all: each (sweep, run_id) row is inserted or
 * updated; a row of this sweep at one of these idx values but with another
 * run id, and every row with idx >= nruns, is removed (the sweep file
 * changed since they were written). */
int store_sweep_record(Store *s, const char *sweep, int nruns, const StoreSweepRun *runs, int n);

/* The code_version / cflags recorded for a run into buf; NULL if the run
 * is absent (or on error: store_errmsg() then says which). */
const char *store_run_code_version(Store *s, const char *run_id, char *buf, size_t cap);
const char *store_run_cflags(Store *s, const char *run_id, char *buf, size_t cap);

/* Rows in one of the store's tables (meta, environments, runs, metrics,
 * summary, histograms, sweep_runs, code_attest); -1 on error or another
 * name. */
long long store_count_rows(Store *s, const char *table);

/* The database file's path, as given to store_open / store_open_ro. */
const char *store_path(Store *s);

/* The database's id (meta db_id: 16 random hex digits, made by the first
 * writer that opens it), which checkpoints carry so that a resume never
 * goes on from a checkpoint of another database (run/checkpoint.h).  A
 * copy of the file has the same id; `gated merge` does not copy it.  ""
 * for a read-only open of a file that has none yet. */
const char *store_db_id(Store *s);

/* Whether a checkpoint naming the database db_id may hold a run of this
 * one: 2 it is this database's id, 1 the id of a database `gated merge`
 * folded into this one (meta key STORE_MERGED_KEY + id, copied on with
 * every later merge), 0 neither (or not 16 hex digits), -1 an error
 * (store_errmsg()). */
#define STORE_MERGED_KEY "merged_db_id:"
int store_db_knows(Store *s, const char *db_id);

/* The underlying SQLite connection, for queries by the lab (lab/report/report_run.c
 * reads, lab/merge/merge.c attaches and copies).  Flushes nothing; callers must
 * bind every value. */
struct sqlite3;
struct sqlite3 *store_db(Store *s);

/* The last SQLite error on db in words, never its SQL (store_sql.c): "it
 * is locked by another process (waited 5 s; try again when that one is
 * done)", "the disk is full ...", "it has no table metrics: damaged, or
 * not written by gated", "it is damaged (SQLite: ...)", "SQLite: ..." for
 * the rest.  Into out (always NUL-terminated); 1 when the fault is the
 * file's (damaged, a table or column missing: bad input, exit 2), 0 when
 * the machine's (locked, full, I/O, memory: exit 1). */
int store_sql_words(struct sqlite3 *db, char *out, size_t cap);


/* ------------------------------------------------------------------ */
/* Code attestations (the code_attest table: see store_attest.c)        */
/* ------------------------------------------------------------------ */

/* A result recorded by other code (or other compiler flags) counts as this
 * build's once this build has re-executed the run's first updates and
 * found every metric and histogram row of those steps bitwise equal to the
 * stored ones (`gated sweep --verify-code`).  An attestation names the
 * build (commit, cflags) and the stored copy it checked (the run's
 * code_version and ended_at): it holds only while the run's row is that
 * copy, so a rerun, a resume or a merged-in copy voids it. */

/* The metric keys `gated eval` adds to a trained run (run/eval.c), at the
 * run's last step: measured after training, they are not compared (nor
 * are the infer_* keys of `gated eval --quant / --drop`, run/infer.h). */
extern const char *const store_eval_keys[4];

/* The attestation that code (a commit) built with cflags computes the
 * stored copy of run_id: 1 (into *out, may be NULL), 0 none (or code is not
 * a commit), -1 on error. */
int store_attest_get(Store *s, const char *run_id, const char *code, const char *cflags, StoreAttest *out);

/* store_attest_compare's verdict. */
typedef struct {
    int equal;           /* 1: rows > 0, none differs, none missing on either side (but added) */
    long long rows;      /* rows found equal (metrics and histograms) */
    long long steps;     /* the highest step among them */
    long long ndiff;     /* rows that differ or are on one side only */
    long long added;     /* re-executed rows of keys the stored run has no row of (any step):
                          * probes this build added; not compared, not differences */
    char first[640];     /* the first difference, e.g. "metric val_loss step 2: stored
                          * 2.5029 (0x...), re-executed 2.5030 (0x...)"; escaped */
    char run_code[128];  /* the stored copy compared: its code_version ... */
    double run_ended_at; /* ... and ended_at (what store_attest_record binds to) */
} StoreAttestCmp;

/* Compare the stored rows of run_id (finished or diverged) at steps
 * <= max_step with those of verify_run_id in the database at verify_db (a
 * re-execution of the same config): every metric (key, context, step,
 * value) but store_eval_keys and every histogram (key, context, step, lo,
 * hi, counts), values bit for bit as SQLite returns them, NULL equal only
 * to NULL.  Every stored row must be matched; a re-executed row of a key
 * the stored run never recorded (in that table, at any step) is a probe
 * added since, counted in added.  Read in one transaction of s; verify_db
 * is opened read-only.  0 with *out filled, or -1 (store_errmsg(): the run
 * is absent or not ended, a read failed). */
int store_attest_compare(Store *s, const char *run_id, const char *verify_db, const char *verify_run_id,
                         long long max_step, StoreAttestCmp *out);

/* Record that code (a commit; git_dirty: its build had uncommitted changes)
 * built with cflags computes the copy of run_id that cmp compared, when cmp
 * found it equal and the run's row is still that copy (finished or
 * diverged, the same code_version and ended_at), replacing an earlier
 * attestation of that build.  1 recorded, 0 not (the run changed since),
 * -1 on error (cmp not equal, code not a commit). */
int store_attest_record(Store *s, const char *run_id, const char *code, int git_dirty, const char *cflags,
                        const StoreAttestCmp *cmp);

/* ------------------------------------------------------------------ */
/* Benchmarks (the bench table: see store_bench.c)                      */
/* ------------------------------------------------------------------ */

/* One benchmarked case of one `gated bench` invocation.  Times are
 * seconds per iteration; NaN values are stored as NULL. */
typedef struct {
    const char *name, *kind;
    int repetitions;
    long long iterations; /* per repetition, summed over repetitions */
    double median_s, mean_s, stddev_s, cv, cpu_median_s;
    double flops, gflops, pct_ceiling, tokens_per_s;
    const double *samples; /* nsamples seconds per iteration, one per repetition */
    int nsamples;
} StoreBenchRow;

/* Record rows[0..n) of one invocation in one transaction, creating the
 * bench table if it is missing.  bench_id names the invocation (e.g. a
 * timestamp); suite, argv may be NULL; p NULL means
 * store_provenance_fill().  A rewritten (bench_id, name) replaces the row. */
int store_bench_record(Store *s, const char *bench_id, const char *suite, int threads, const Provenance *p,
                       const char *argv_joined, const StoreBenchRow *rows, int n);

#endif
