/*
 * store_attest.c — results verified under other code (store.h, "Code
 * attestations"; the code_attest table is documented with the schema at
 * the top of store.c).
 *
 * `gated sweep` keeps a finished result only when it was recorded by the
 * same result-computing code and compiler flags (run/codever.h).  An
 * attestation lets a result survive a change that does not alter its
 * numbers, on evidence rather than on a diff: the build re-executes the
 * run's first updates into a scratch database, store_attest_compare finds
 * every row of those steps bit for bit equal to the stored copy, and
 * store_attest_record writes (run, build) -> (that copy, how much was
 * checked).  The copy is named by the run's code_version and ended_at,
 * which every rerun, resume and merged-in copy changes, so an attestation
 * can never vouch for rows it did not see (also when an older build, which
 * ignores the table, reruns the run).
 */
#include "run/store_impl.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/codever.h"

/* The code_attest table, exactly as documented at the top of store.c. */
static const char ATTEST_SCHEMA_SQL[] = "CREATE TABLE IF NOT EXISTS code_attest (\n"
                                        "    run_id           TEXT NOT NULL,\n"
                                        "    code_version     TEXT NOT NULL,\n"
                                        "    cflags           TEXT NOT NULL,\n"
                                        "    git_dirty        INTEGER NOT NULL,\n"
                                        "    run_code_version TEXT NOT NULL,\n"
                                        "    run_ended_at     REAL NOT NULL,\n"
                                        "    verified_at      REAL NOT NULL,\n"
                                        "    steps_checked    INTEGER NOT NULL,\n"
                                        "    rows_checked     INTEGER NOT NULL,\n"
                                        "    PRIMARY KEY (run_id, code_version, cflags)\n"
                                        ");\n";

const char *const store_eval_keys[4] = {"eval_loss", "eval_ppl", "eval_f_attn", "eval_windows"};

/* Create code_attest where it is missing (only then: opening an up-to-date
 * database writes nothing); read-only, an empty TEMP table of that name
 * (the file is not touched). */
int sto_ensure_attest_schema(Store *s) {
    int h = sto_has_table(s, "code_attest");
    if (h < 0) return -1;
    if (h) return 0;
    if (!s->readonly) return sto_exec(s, ATTEST_SCHEMA_SQL);
    static const char temp_sql[] = "CREATE TEMP TABLE code_attest (run_id TEXT NOT NULL, code_version TEXT NOT NULL,"
                                   " cflags TEXT NOT NULL, git_dirty INTEGER NOT NULL, run_code_version TEXT NOT NULL,"
                                   " run_ended_at REAL NOT NULL, verified_at REAL NOT NULL,"
                                   " steps_checked INTEGER NOT NULL, rows_checked INTEGER NOT NULL,"
                                   " PRIMARY KEY (run_id, code_version, cflags))";
    return sto_exec(s, temp_sql);
}

int store_attest_get(Store *s, const char *run_id, const char *code, const char *cflags, StoreAttest *out) {
    if (!run_id || !cflags || !codever_is_commit(code)) return 0;
    sqlite3_stmt *st;
    if (sto_prep_bind(s, &st,
                      "SELECT a.steps_checked, a.rows_checked, a.verified_at FROM code_attest a"
                      " JOIN runs r ON r.run_id = a.run_id AND r.code_version = a.run_code_version"
                      " AND r.ended_at = a.run_ended_at"
                      " WHERE a.run_id = ?1 AND a.code_version = ?2 AND a.cflags = ?3 AND r.status IN (?4, ?5)",
                      "ttttt", run_id, code, cflags, "finished", "diverged"))
        return -1;
    int r = sqlite3_step(st), found = r == SQLITE_ROW;
    if (found && out)
        *out = (StoreAttest){sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1), sqlite3_column_double(st, 2)};
    if (r != SQLITE_ROW && r != SQLITE_DONE) {
        sto_dbfail(s, "read code_attest");
        (void)sqlite3_finalize(st);
        return -1;
    }
    return sto_fin(s, st) ? -1 : found;
}

/* ------------------------------------------------------------------ */
/* comparing a stored run with its re-execution                        */
/* ------------------------------------------------------------------ */

/* The rows compared, per table: (key, context, step) first, in this order
 * on both sides, then the values (?1 run id, ?2 the last step; metrics:
 * ?3..?6 the keys of `gated eval`, and its infer_* keys (run/infer.h),
 * which are not training's). */
static const char *const CMP_SQL[2] = {
    "SELECT key, context, step, value FROM metrics WHERE run_id = ?1 AND step <= ?2"
    " AND key NOT IN (?3, ?4, ?5, ?6) AND key NOT LIKE 'infer\\_%' ESCAPE '\\' ORDER BY key, context, step",
    "SELECT key, context, step, lo, hi, counts FROM histograms WHERE run_id = ?1 AND step <= ?2"
    " ORDER BY key, context, step"};
static const char *const CMP_WHAT[2] = {"metric", "histogram"};

/* One side's statement over one table. */
static int cmp_open(Store *s, sqlite3_stmt **st, int table, const char *run_id, long long max_step) {
    const char *const *k = store_eval_keys;
    return table == 0 ? sto_prep_bind(s, st, CMP_SQL[0], "titttt", run_id, max_step, k[0], k[1], k[2], k[3])
                      : sto_prep_bind(s, st, CMP_SQL[1], "ti", run_id, max_step);
}

/* Step a cursor: 1 a row, 0 done, -1 error (in s). */
static int cmp_step(Store *s, sqlite3_stmt *st) {
    int r = sqlite3_step(st);
    if (r == SQLITE_ROW) return 1;
    if (r == SQLITE_DONE) return 0;
    return sto_dbfail(s, "compare rows");
}

static const char *col_text(sqlite3_stmt *st, int i) { return sto_text_or(st, i, ""); }

/* The order of two rows by (key, context, step), as ORDER BY sorts text
 * (BINARY: bytes, as strcmp). */
static int row_order(sqlite3_stmt *a, sqlite3_stmt *b) {
    int c = strcmp(col_text(a, 0), col_text(b, 0));
    if (!c) c = strcmp(col_text(a, 1), col_text(b, 1));
    if (!c) {
        long long x = sqlite3_column_int64(a, 2), y = sqlite3_column_int64(b, 2);
        c = (x > y) - (x < y);
    }
    return c;
}

/* Column i equal in both: the same storage class, and for numbers the
 * same 8 bytes of the double SQLite returns (no tolerance: 1 ulp differs). */
static int same_value(sqlite3_stmt *a, sqlite3_stmt *b, int i) {
    int ta = sqlite3_column_type(a, i), tb = sqlite3_column_type(b, i);
    if (ta != tb) return 0;
    if (ta == SQLITE_NULL) return 1;
    if (ta == SQLITE_TEXT) return strcmp(col_text(a, i), col_text(b, i)) == 0;
    double x = sqlite3_column_double(a, i), y = sqlite3_column_double(b, i);
    return memcmp(&x, &y, sizeof x) == 0;
}

/* Column i for a message: the double to 17 digits and its bits. */
static void show_value(sqlite3_stmt *st, int i, char *out, size_t cap) {
    int t = sqlite3_column_type(st, i);
    if (t == SQLITE_NULL) {
        snprintf(out, cap, "NULL");
    } else if (t == SQLITE_TEXT) {
        char q[64];
        snprintf(out, cap, "\"%s\"", store_escape(col_text(st, i), q, sizeof q));
    } else {
        double x = sqlite3_column_double(st, i);
        uint64_t bits;
        memcpy(&bits, &x, sizeof bits);
        snprintf(out, cap, "%.17g (0x%016llx)", x, (unsigned long long)bits);
    }
}

/* "metric KEY [CONTEXT] step S" of row st. */
static void name_row(sqlite3_stmt *st, int table, char *out, size_t cap) {
    char k[96], c[96];
    store_escape(col_text(st, 0), k, sizeof k);
    store_escape(col_text(st, 1), c, sizeof c);
    snprintf(out, cap, "%s %s%s%s%s step %lld", CMP_WHAT[table], k, *c ? " [" : "", c, *c ? "]" : "",
             sqlite3_column_int64(st, 2));
}

/* One difference: counted; the first one described. */
static void cmp_differs(StoreAttestCmp *out, sqlite3_stmt *a, sqlite3_stmt *b, int table) {
    if (out->ndiff++) return;
    char row[240];
    name_row(a ? a : b, table, row, sizeof row);
    if (!a || !b) {
        snprintf(out->first, sizeof out->first, "%s: %s only", row, a ? "stored" : "re-executed");
        return;
    }
    int ncol = table == 0 ? 4 : 6;
    for (int i = 3; i < ncol; i++)
        if (!same_value(a, b, i)) {
            char x[96], y[96];
            show_value(a, i, x, sizeof x);
            show_value(b, i, y, sizeof y);
            snprintf(out->first, sizeof out->first, "%s%s%s: stored %s, re-executed %s", row,
                     table ? " " : "", table ? sqlite3_column_name(a, i) : "", x, y);
            return;
        }
}

/* 1 when the stored run has a row of key (any context, any step) in table,
 * 0 not, -1 error (in s). */
static int stored_has_key(Store *s, int table, const char *run_id, const char *key) {
    static const char *const sql[2] = {"SELECT EXISTS (SELECT 1 FROM metrics WHERE run_id = ?1 AND key = ?2)",
                                       "SELECT EXISTS (SELECT 1 FROM histograms WHERE run_id = ?1 AND key = ?2)"};
    sqlite3_stmt *st;
    if (sto_prep_bind(s, &st, sql[table], "tt", run_id, key)) return -1;
    int r = sqlite3_step(st), has = r == SQLITE_ROW && sqlite3_column_int(st, 0);
    if (r != SQLITE_ROW) {
        sto_dbfail(s, "compare rows");
        (void)sqlite3_finalize(st);
        return -1;
    }
    return sto_fin(s, st) ? -1 : has;
}

/* A row of the re-execution only (cursor b): a row of a key the stored run
 * never recorded is a probe this build added (counted in out->added, not a
 * difference); any other is a difference.  known caches the last key
 * looked up and whether the stored run has it.  0, or -1 error (in s). */
static int cmp_new_row(Store *s, int table, const char *run_id, sqlite3_stmt *b, StoreAttestCmp *out,
                       char known[96], int *has) {
    const char *key = col_text(b, 0);
    if (strlen(key) >= 96 || strcmp(known, key) != 0) {
        if ((*has = stored_has_key(s, table, run_id, key)) < 0) return -1;
        snprintf(known, 96, "%s", strlen(key) < 96 ? key : "");
    }
    if (*has) {
        cmp_differs(out, NULL, b, table);
    } else {
        out->added++;
    }
    return 0;
}

/* Merge-join one table of the two sides (both sorted by key, context,
 * step).  0, or -1 on a read error (in s). */
static int cmp_table(Store *s, Store *v, int table, const char *run_id, const char *vid, long long max_step,
                     StoreAttestCmp *out) {
    sqlite3_stmt *a = NULL, *b = NULL;
    int rc = -1;
    if (cmp_open(s, &a, table, run_id, max_step)) return -1;
    if (cmp_open(v, &b, table, vid, max_step)) {
        sto_fail(s, "%s", store_errmsg(v));
        goto done;
    }
    int ha = cmp_step(s, a), hb = cmp_step(v, b), has = 1;
    char known[96] = "";
    while (ha > 0 || hb > 0) {
        if (ha < 0 || hb < 0) break;
        int c = ha > 0 && hb > 0 ? row_order(a, b) : ha > 0 ? -1 : 1;
        if (c == 0) {
            int ncol = table == 0 ? 4 : 6, same = 1;
            for (int i = 3; i < ncol && same; i++)
                same = same_value(a, b, i);
            if (same) {
                out->rows++;
                long long step = sqlite3_column_int64(a, 2);
                if (step > out->steps) out->steps = step;
            } else {
                cmp_differs(out, a, b, table);
            }
            ha = cmp_step(s, a);
            hb = cmp_step(v, b);
        } else if (c < 0) {
            cmp_differs(out, a, NULL, table);
            ha = cmp_step(s, a);
        } else {
            if (cmp_new_row(s, table, run_id, b, out, known, &has)) {
                hb = 0, ha = -1;
                break;
            }
            hb = cmp_step(v, b);
        }
    }
    if (hb < 0) sto_fail(s, "%s", store_errmsg(v));
    rc = ha < 0 || hb < 0 ? -1 : 0;
done:
    if (a) (void)sqlite3_finalize(a);
    if (b) (void)sqlite3_finalize(b);
    return rc;
}

/* The stored run: finished or diverged, its code_version and ended_at into
 * out.  0, or -1 (in s). */
static int cmp_stored_run(Store *s, const char *run_id, StoreAttestCmp *out) {
    sqlite3_stmt *st;
    if (sto_run_row(s, "SELECT status, code_version, ended_at FROM runs WHERE run_id = ?1", run_id, "attest: read run",
                    &st))
        return -1;
    char status[16], q[64], qs[64];
    snprintf(status, sizeof status, "%s", sto_text_or(st, 0, "?"));
    snprintf(out->run_code, sizeof out->run_code, "%s", sto_text_or(st, 1, ""));
    int ended = sqlite3_column_type(st, 2) != SQLITE_NULL;
    out->run_ended_at = ended ? sqlite3_column_double(st, 2) : NAN;
    if (sto_fin(s, st)) return -1;
    if ((strcmp(status, "finished") != 0 && strcmp(status, "diverged") != 0) || !ended)
        return sto_fail(s, "%s: run %s is %s, not a finished or diverged result", s->path,
                        store_escape(run_id, q, sizeof q), store_escape(status, qs, sizeof qs));
    return 0;
}

/* 1 when the re-execution's database holds verify_run_id, 0 not, -1 error (in v). */
static int cmp_has_run(Store *v, const char *vid) {
    sqlite3_stmt *st;
    if (sto_prep_bind(v, &st, "SELECT count(*) FROM runs WHERE run_id = ?1", "t", vid)) return -1;
    if (sqlite3_step(st) != SQLITE_ROW) {
        sto_dbfail(v, "read runs");
        (void)sqlite3_finalize(st);
        return -1;
    }
    int n = sqlite3_column_int64(st, 0) > 0;
    return sto_fin(v, st) ? -1 : n;
}

int store_attest_compare(Store *s, const char *run_id, const char *verify_db, const char *verify_run_id,
                         long long max_step, StoreAttestCmp *out) {
    memset(out, 0, sizeof *out);
    out->run_ended_at = NAN;
    if (!run_id || !verify_run_id) return sto_fail(s, "%s: attest: no run id", s->path);
    Store *v;
    char err[sizeof s->err];
    if (store_open_ro(&v, verify_db, err, sizeof err)) return sto_fail(s, "%s", err);
    if (store_flush(s) || sto_exec(s, "BEGIN")) { /* one snapshot of the stored run and its rows */
        store_close(v);
        return -1;
    }
    int rc = cmp_stored_run(s, run_id, out), has = 0;
    if (rc == 0 && (has = cmp_has_run(v, verify_run_id)) < 0) rc = sto_fail(s, "%s", store_errmsg(v));
    if (rc == 0 && !has) {
        char q[64];
        snprintf(out->first, sizeof out->first, "%s: the re-execution recorded no run %s", verify_db,
                 store_escape(verify_run_id, q, sizeof q));
        out->ndiff = 1;
    }
    for (int t = 0; rc == 0 && has && t < 2; t++)
        rc = cmp_table(s, v, t, run_id, verify_run_id, max_step, out);
    store_close(v);
    if (rc) {
        sto_rollback(s);
        return -1;
    }
    if (sto_commit(s)) return -1;
    out->equal = out->ndiff == 0 && out->rows > 0;
    if (!out->equal && out->ndiff == 0)
        snprintf(out->first, sizeof out->first, "no rows at steps <= %lld to compare", max_step);
    return 0;
}

int store_attest_record(Store *s, const char *run_id, const char *code, int git_dirty, const char *cflags,
                        const StoreAttestCmp *cmp) {
    char q[64];
    if (!run_id || !cflags || !cmp || !cmp->equal || cmp->rows <= 0 || isnan(cmp->run_ended_at))
        return sto_fail(s, "%s: attest: nothing verified equal to record", s->path);
    if (!codever_is_commit(code))
        return sto_fail(s, "%s: attest: code version \"%s\" is not a commit", s->path,
                        store_escape(code ? code : "", q, sizeof q));
    if (store_flush(s) || sto_begin(s)) return -1;
    int ch = 0;
    if (sto_run(s, &ch,
                "INSERT INTO code_attest(run_id, code_version, cflags, git_dirty, run_code_version, run_ended_at,"
                " verified_at, steps_checked, rows_checked)"
                " SELECT run_id, ?2, ?3, ?4, code_version, ended_at, ?5, ?6, ?7 FROM runs"
                " WHERE run_id = ?1 AND code_version = ?8 AND ended_at = ?9 AND status IN (?10, ?11)"
                " ON CONFLICT(run_id, code_version, cflags) DO UPDATE SET git_dirty = excluded.git_dirty,"
                " run_code_version = excluded.run_code_version, run_ended_at = excluded.run_ended_at,"
                " verified_at = excluded.verified_at, steps_checked = excluded.steps_checked,"
                " rows_checked = excluded.rows_checked",
                "tttidiitdtt", run_id, code, cflags, (long long)(git_dirty != 0), sto_now(), cmp->steps, cmp->rows,
                cmp->run_code, cmp->run_ended_at, "finished", "diverged") ||
        sto_commit(s)) {
        sto_rollback(s);
        return -1;
    }
    return ch > 0;
}
