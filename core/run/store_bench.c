/*
 * store_bench.c — benchmark results (store_bench_record; the bench table
 * below), written by `gated bench --db`.
 */
#include "run/store_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* The bench table (added with `gated bench`, still schema_version 1: purely
 * additive, created IF NOT EXISTS by the first store_bench_record, ignored
 * by merge and by older builds):
 *
 *   -- One row per (invocation, case): seconds per iteration over the
 *   -- repetitions, FLOP rates and provenance.  No foreign keys.
 *   CREATE TABLE IF NOT EXISTS bench (
 *       bench_id         TEXT NOT NULL,          -- one `gated bench` invocation
 *       name             TEXT NOT NULL,          -- case name (step/ref/baseline, ...)
 *       kind             TEXT NOT NULL,          -- gate, attention_forward, step, sgemm, ...
 *       suite            TEXT,
 *       started_at       REAL NOT NULL,          -- unix seconds (when recorded)
 *       threads          INTEGER NOT NULL,       -- 0 = library default (all cores)
 *       code_version     TEXT NOT NULL,
 *       git_dirty        INTEGER,
 *       host             TEXT NOT NULL,
 *       cpu_model        TEXT NOT NULL,
 *       compiler         TEXT NOT NULL,
 *       cflags           TEXT NOT NULL,
 *       openblas_version TEXT NOT NULL,
 *       argv             TEXT,
 *       repetitions      INTEGER NOT NULL,
 *       iterations       INTEGER NOT NULL,
 *       median_s         REAL,
 *       mean_s           REAL,
 *       stddev_s         REAL,
 *       cv               REAL,
 *       cpu_median_s     REAL,
 *       flops            REAL,                   -- per iteration
 *       gflops           REAL,                   -- at the median
 *       pct_ceiling      REAL,                   -- % of the ceiling case's GFLOP/s
 *       tokens_per_s     REAL,                   -- steps only
 *       samples          TEXT NOT NULL,          -- JSON array: seconds per iteration, per repetition
 *       PRIMARY KEY (bench_id, name)
 *   );
 */
static const char BENCH_SCHEMA_SQL[] =
    "CREATE TABLE IF NOT EXISTS bench (\n"
    "    bench_id         TEXT NOT NULL,\n"
    "    name             TEXT NOT NULL,\n"
    "    kind             TEXT NOT NULL,\n"
    "    suite            TEXT,\n"
    "    started_at       REAL NOT NULL,\n"
    "    threads          INTEGER NOT NULL,\n"
    "    code_version     TEXT NOT NULL,\n"
    "    git_dirty        INTEGER,\n"
    "    host             TEXT NOT NULL,\n"
    "    cpu_model        TEXT NOT NULL,\n"
    "    compiler         TEXT NOT NULL,\n"
    "    cflags           TEXT NOT NULL,\n"
    "    openblas_version TEXT NOT NULL,\n"
    "    argv             TEXT,\n"
    "    repetitions      INTEGER NOT NULL,\n"
    "    iterations       INTEGER NOT NULL,\n"
    "    median_s         REAL,\n"
    "    mean_s           REAL,\n"
    "    stddev_s         REAL,\n"
    "    cv               REAL,\n"
    "    cpu_median_s     REAL,\n"
    "    flops            REAL,\n"
    "    gflops           REAL,\n"
    "    pct_ceiling      REAL,\n"
    "    tokens_per_s     REAL,\n"
    "    samples          TEXT NOT NULL,\n"
    "    PRIMARY KEY (bench_id, name)\n"
    ");\n";

int store_bench_record(Store *s, const char *bench_id, const char *suite, int threads, const Provenance *p,
                       const char *argv_joined, const StoreBenchRow *rows, int n) {
    if (!bench_id || !*bench_id) return sto_fail(s, "%s: bench: empty bench id", s->path);
    Provenance local;
    if (!p) {
        store_provenance_fill(&local);
        p = &local;
    }
    int h = sto_has_table(s, "bench");
    if (h < 0) return -1;
    if (!h && sto_exec(s, BENCH_SCHEMA_SQL)) return -1;
    double now = sto_now();
    if (sto_begin(s)) return -1;
    for (int i = 0; i < n; i++) {
        const StoreBenchRow *r = &rows[i];
        /* samples as a JSON array of %.9g numbers (null for NaN/inf) */
        size_t cap = 16 + 26 * (size_t)(r->nsamples > 0 ? r->nsamples : 0);
        char *js = malloc(cap);
        if (!js) {
            sto_fail(s, "%s: bench: out of memory", s->path);
            goto bad;
        }
        size_t k = (size_t)snprintf(js, cap, "[");
        for (int j = 0; j < r->nsamples; j++) {
            double v = r->samples[j];
            k += (size_t)snprintf(js + k, cap - k, isfinite(v) ? "%s%.9g" : "%snull", j ? "," : "", v);
        }
        snprintf(js + k, cap - k, "]");
        int rc = sto_run(s, NULL,
                          "INSERT OR REPLACE INTO bench(bench_id, name, kind, suite, started_at, threads,"
                          " code_version, git_dirty, host, cpu_model, compiler, cflags, openblas_version, argv,"
                          " repetitions, iterations, median_s, mean_s, stddev_s, cv, cpu_median_s, flops, gflops,"
                          " pct_ceiling, tokens_per_s, samples)"
                          " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17,"
                          " ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26)",
                          "ttttditIttttttiidddddddddt", bench_id, r->name ? r->name : "", r->kind ? r->kind : "",
                          suite, now, (long long)threads, sto_or_unknown(p->code_version),
                          (long long)(p->git_dirty < 0 ? -1 : p->git_dirty != 0), sto_or_unknown(p->host),
                          sto_or_unknown(p->cpu_model), sto_or_unknown(p->compiler), sto_or_unknown(p->cflags),
                          sto_or_unknown(p->openblas_version), argv_joined, (long long)r->repetitions,
                          (long long)r->iterations, r->median_s, r->mean_s, r->stddev_s, r->cv, r->cpu_median_s,
                          r->flops, r->gflops, r->pct_ceiling, r->tokens_per_s, js);
        free(js);
        if (rc) goto bad;
    }
    if (sto_commit(s)) goto bad;
    return 0;
bad:
    sto_rollback(s);
    return -1;
}
