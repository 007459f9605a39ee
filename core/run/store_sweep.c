/*
 * store_sweep.c — sweep membership (the sweep_runs table, documented with
 * the schema at the top of store.c) and row counts.
 */
#include "run/store_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The sweep_runs table, exactly as documented at the top of store.c. */
static const char SWEEP_SCHEMA_SQL[] =
    "CREATE TABLE IF NOT EXISTS sweep_runs (\n"
    "    sweep       TEXT NOT NULL,\n"
    "    run_id      TEXT NOT NULL,\n"
    "    label       TEXT NOT NULL,\n"
    "    seed        INTEGER NOT NULL,\n"
    "    idx         INTEGER NOT NULL,\n"
    "    is_baseline INTEGER NOT NULL,\n"
    "    PRIMARY KEY (sweep, run_id)\n"
    ");\n";


/* Create sweep_runs where it is missing (only then, so that opening an
 * up-to-date database writes nothing); read-only, an empty TEMP table of
 * that name instead (the file is not touched). */
int sto_ensure_sweep_schema(Store *s) {
    int h = sto_has_table(s, "sweep_runs");
    if (h < 0) return -1;
    if (h) return 0;
    if (!s->readonly) return sto_exec(s, SWEEP_SCHEMA_SQL);
    static const char temp_sql[] = "CREATE TEMP TABLE sweep_runs (sweep TEXT NOT NULL, run_id TEXT NOT NULL,"
                                   " label TEXT NOT NULL, seed INTEGER NOT NULL, idx INTEGER NOT NULL,"
                                   " is_baseline INTEGER NOT NULL, PRIMARY KEY (sweep, run_id))";
    return sto_exec(s, temp_sql);
}

int store_sweep_record(Store *s, const char *sweep, int nruns, const StoreSweepRun *runs, int n) {
    if (!sweep || !*sweep) return sto_fail(s, "%s: sweep_record: empty sweep name", s->path);
    if (n < 0 || (n > 0 && !runs)) return sto_fail(s, "%s: sweep_record: bad run list", s->path);
    char why[160], q[200];
    if (store_name_check(sweep, why, sizeof why))
        return sto_fail(s, "%s: sweep_record: sweep name \"%s\" %s", s->path, store_escape(sweep, q, sizeof q), why);
    for (int i = 0; i < n; i++) {
        const char *bad = store_name_check(runs[i].label, why, sizeof why) ? runs[i].label
                          : store_name_check(runs[i].run_id, why, sizeof why) ? runs[i].run_id
                                                                               : NULL;
        if (bad)
            return sto_fail(s, "%s: sweep_record: run %d: %s \"%s\" %s", s->path, i,
                        bad == runs[i].label ? "label" : "run id", store_escape(bad, q, sizeof q), why);
    }
    if (store_flush(s) || sto_begin(s)) return -1;
    sqlite3_stmt *del = NULL, *ins = NULL;
    int rc = sto_run(s, NULL, "DELETE FROM sweep_runs WHERE sweep = ?1 AND idx >= ?2", "ti", sweep,
                      (long long)nruns);
    if (rc == 0) rc = sto_prep(s, &del, "DELETE FROM sweep_runs WHERE sweep = ?1 AND idx = ?2 AND run_id <> ?3");
    if (rc == 0)
        rc = sto_prep(s, &ins,
                  "INSERT INTO sweep_runs(sweep, run_id, label, seed, idx, is_baseline)"
                  " VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT(sweep, run_id) DO UPDATE SET"
                  " label = excluded.label, seed = excluded.seed, idx = excluded.idx,"
                  " is_baseline = excluded.is_baseline");
    for (int i = 0; rc == 0 && i < n; i++) {
        const StoreSweepRun *r = &runs[i];
        if (!r->run_id || !r->label) {
            rc = sto_fail(s, "%s: sweep_record: run %d has no run id or label", s->path, i);
            break;
        }
        rc = sto_bind(s, del, "tit", sweep, (long long)r->idx, r->run_id);
        if (rc == 0) rc = sto_step_done(s, del, "sweep_record: delete");
        if (rc == 0)
            rc = sto_bind(s, ins, "tttiii", sweep, r->run_id, r->label, r->seed, (long long)r->idx,
                      (long long)(r->is_baseline != 0));
        if (rc == 0) rc = sto_step_done(s, ins, "sweep_record: insert");
    }
    if (del && sqlite3_finalize(del) != SQLITE_OK && rc == 0) rc = sto_dbfail(s, "sweep_record: finalize");
    if (ins && sqlite3_finalize(ins) != SQLITE_OK && rc == 0) rc = sto_dbfail(s, "sweep_record: finalize");
    if (rc == 0) rc = sto_commit(s);
    if (rc) sto_rollback(s);
    return rc;
}

long long store_count_rows(Store *s, const char *table) {
    static const char *const names[] = {"meta",    "environments", "runs",       "metrics",
                                        "summary", "histograms",   "sweep_runs", "code_attest"};
    static const char *const sqls[] = {
        "SELECT count(*) FROM meta",       "SELECT count(*) FROM environments", "SELECT count(*) FROM runs",
        "SELECT count(*) FROM metrics",    "SELECT count(*) FROM summary",      "SELECT count(*) FROM histograms",
        "SELECT count(*) FROM sweep_runs", "SELECT count(*) FROM code_attest"};
    for (size_t i = 0; table && i < sizeof names / sizeof names[0]; i++) {
        if (strcmp(table, names[i]) != 0) continue;
        if (store_flush(s)) return -1;
        sqlite3_stmt *st;
        if (sto_prep(s, &st, sqls[i])) return -1;
        if (sqlite3_step(st) != SQLITE_ROW) {
            sto_dbfail(s, "count rows");
            (void)sqlite3_finalize(st);
            return -1;
        }
        long long n = sqlite3_column_int64(st, 0);
        if (sto_fin(s, st)) return -1;
        return n;
    }
    sto_fail(s, "%s: count rows: no table '%s'", s->path, table ? table : "(null)");
    return -1;
}

int store_sweep_finished(Store *s, const char *sweep, char (**ids)[17], int *n) {
    sqlite3_stmt *st;
    *ids = NULL;
    *n = 0;
    if (sto_prep(s, &st, "SELECT w.run_id FROM sweep_runs w JOIN runs r ON r.run_id = w.run_id "
                         "WHERE w.sweep = ?1 AND r.status = ?2 ORDER BY w.idx"))
        return -1;
    if (sto_bind(s, st, "tt", sweep, "finished")) {
        (void)sqlite3_finalize(st);
        return -1;
    }
    int r, cap = 0;
    while ((r = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n == cap) {
            cap = cap ? 2 * cap : 16;
            char(*g)[17] = realloc(*ids, sizeof **ids * (size_t)cap);
            if (!g) {
                (void)sqlite3_finalize(st);
                return sto_fail(s, "%s: out of memory", s->path);
            }
            *ids = g;
        }
        snprintf((*ids)[(*n)++], 17, "%s", sto_text_or(st, 0, ""));
    }
    (void)sqlite3_finalize(st);
    if (r != SQLITE_DONE) return sto_dbfail(s, "reading sweep_runs");
    return 0;
}
