/*
 * store_views.c — SQL views for the common joins (README, "Store"), made
 * by store_open so that `sqlite3 results.db` and pandas get them too:
 *
 *   run_metrics    one row per metric row: the run's name, status and
 *                  seed; sweep and label of the run's first sweep by name
 *                  (NULL outside sweeps); key, context and, split out of
 *                  it, layer and head (integers; NULL where absent); step,
 *                  value, and t where the metrics table has it
 *   sweep_metrics  one row per (sweep the run belongs to, metric row):
 *                  sweep, label, idx, is_baseline, then run_metrics'
 *                  columns without its sweep and label
 *   final_metrics  run_metrics' rows at each (run, key, context)'s last
 *                  step
 *
 * A writer creates each view in the file where it is missing and replaces
 * one whose SQL differs (an older definition, or metrics gained t since),
 * in one transaction, and only then: opening an up-to-date database writes
 * nothing.  A reader (store_open_ro) never writes: it makes TEMP views of
 * the same names, which shadow the file's and read the TEMP tables and
 * views a read-only open may put in front of the file's (an empty
 * sweep_runs for a database from before it).  The names are the store's:
 * a view of one's own by that name is replaced.
 *
 * Layer and head come from the context text ("layer=1,head=3"): the
 * integer after "layer=" / "head=" at its start or after a comma.  The
 * view SQL is constant text (a view cannot hold bound parameters).
 */
#include "run/store_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The metric rows with the positions of "layer=" and "head=" in context
 * (lp, hp: 1-based in ',' || context; 0 when absent). */
#define METRICS_SPLIT                                                                                                  \
    "(SELECT *, instr(',' || context, ',layer=') AS lp, instr(',' || context, ',head=') AS hp FROM metrics)"
#define LAYER_COL                                                                                                      \
    "CASE WHEN m.lp > 0 AND substr(m.context, m.lp + 6) GLOB '[0-9]*'"                                                \
    " THEN CAST(substr(m.context, m.lp + 6) AS INTEGER) END AS layer"
#define HEAD_COL                                                                                                       \
    "CASE WHEN m.hp > 0 AND substr(m.context, m.hp + 5) GLOB '[0-9]*'"                                                \
    " THEN CAST(substr(m.context, m.hp + 5) AS INTEGER) END AS head"

/* run_metrics, up to its value column; RUN_METRICS_T or nothing follows,
 * then RUN_METRICS_FROM. */
static const char RUN_METRICS_SELECT[] =
    " AS SELECT m.run_id AS run_id, r.name AS name, r.status AS status, r.seed AS seed,"
    " f.sweep AS sweep, w.label AS label, m.key AS key, m.context AS context, " LAYER_COL ", " HEAD_COL ","
    " m.step AS step, m.value AS value";
static const char RUN_METRICS_T[] = ", m.t AS t";
static const char RUN_METRICS_FROM[] =
    " FROM " METRICS_SPLIT " m JOIN runs r ON r.run_id = m.run_id"
    " LEFT JOIN (SELECT run_id, min(sweep) AS sweep FROM sweep_runs GROUP BY run_id) f ON f.run_id = m.run_id"
    " LEFT JOIN sweep_runs w ON w.sweep = f.sweep AND w.run_id = m.run_id";

static const char SWEEP_METRICS[] =
    " AS SELECT w.sweep AS sweep, w.label AS label, w.idx AS idx, w.is_baseline AS is_baseline,"
    " m.run_id AS run_id, m.name AS name, m.status AS status, m.seed AS seed, m.key AS key,"
    " m.context AS context, m.layer AS layer, m.head AS head, m.step AS step, m.value AS value";
static const char SWEEP_METRICS_T[] = ", m.t AS t";
static const char SWEEP_METRICS_FROM[] = " FROM sweep_runs w JOIN run_metrics m ON m.run_id = w.run_id";

static const char FINAL_METRICS[] =
    " AS SELECT m.* FROM run_metrics m JOIN (SELECT run_id, key, context, max(step) AS step FROM metrics"
    " GROUP BY run_id, key, context) l ON l.run_id = m.run_id AND l.key = m.key AND l.context = m.context"
    " AND l.step = m.step";

enum { NVIEWS = 3 };
static const char *const VIEW_NAMES[NVIEWS] = {"run_metrics", "sweep_metrics", "final_metrics"};

/* 1 when the metrics table (or the view a read-only open puts in front of
 * it) has a column t, 0 when not, -1 on error. */
static int metrics_has_t(Store *s) {
    sqlite3_stmt *st;
    if (sto_prep_bind(s, &st, "SELECT count(*) FROM pragma_table_info(?1) WHERE name = ?2", "tt", "metrics", "t"))
        return -1;
    if (sqlite3_step(st) != SQLITE_ROW) {
        sto_dbfail(s, "read the metrics table's columns");
        (void)sqlite3_finalize(st);
        return -1;
    }
    int has = sqlite3_column_int(st, 0) > 0;
    return sto_fin(s, st) ? -1 : has;
}

/* The CREATE statement of view i ("CREATE VIEW NAME AS ...", as SQLite
 * keeps it in sqlite_master; "CREATE TEMP VIEW" when temp), malloc'd. */
static char *view_sql(int i, int temp, int has_t) {
    const char *parts[3] = {NULL, NULL, NULL};
    if (i == 0) parts[0] = RUN_METRICS_SELECT, parts[1] = has_t ? RUN_METRICS_T : "", parts[2] = RUN_METRICS_FROM;
    if (i == 1) parts[0] = SWEEP_METRICS, parts[1] = has_t ? SWEEP_METRICS_T : "", parts[2] = SWEEP_METRICS_FROM;
    if (i == 2) parts[0] = FINAL_METRICS, parts[1] = "", parts[2] = "";
    const char *head = temp ? "CREATE TEMP VIEW " : "CREATE VIEW ";
    size_t n = strlen(head) + strlen(VIEW_NAMES[i]) + strlen(parts[0]) + strlen(parts[1]) + strlen(parts[2]) + 1;
    char *sql = malloc(n);
    if (sql) snprintf(sql, n, "%s%s%s%s%s", head, VIEW_NAMES[i], parts[0], parts[1], parts[2]);
    return sql;
}

/* The SQL the file keeps for view name (malloc'd; "" when there is none),
 * or NULL on error. */
static char *stored_sql(Store *s, const char *name) {
    sqlite3_stmt *st;
    if (sto_prep_bind(s, &st, "SELECT sql FROM main.sqlite_master WHERE type = ?1 AND name = ?2", "tt", "view", name))
        return NULL;
    int r = sqlite3_step(st);
    if (r != SQLITE_ROW && r != SQLITE_DONE) {
        sto_dbfail(s, "read the views");
        (void)sqlite3_finalize(st);
        return NULL;
    }
    char *sql = strdup(r == SQLITE_ROW ? sto_text_or(st, 0, "") : "");
    if (sto_fin(s, st)) {
        free(sql);
        return NULL;
    }
    if (!sql) sto_fail(s, "%s: out of memory", s->path);
    return sql;
}

/* Writers: each view that is missing or differs, made again in one
 * transaction (re-read inside it: another process may have just done it). */
static int ensure_file_views(Store *s, char *want[NVIEWS]) {
    int stale = 0;
    for (int i = 0; i < NVIEWS && !stale; i++) {
        char *have = stored_sql(s, VIEW_NAMES[i]);
        if (!have) return -1;
        stale = strcmp(have, want[i]) != 0;
        free(have);
    }
    if (!stale) return 0;
    if (sto_begin(s)) return -1;
    int rc = 0;
    for (int i = 0; i < NVIEWS && rc == 0; i++) {
        char *have = stored_sql(s, VIEW_NAMES[i]);
        if (!have) {
            rc = -1;
            break;
        }
        if (strcmp(have, want[i]) != 0) {
            if (*have) {
                char drop[64]; /* a constant name of ours, never a value */
                snprintf(drop, sizeof drop, "DROP VIEW main.%s", VIEW_NAMES[i]);
                rc = sto_exec(s, drop);
            }
            if (rc == 0) rc = sto_exec(s, want[i]);
        }
        free(have);
    }
    if (rc == 0) rc = sto_commit(s);
    if (rc) sto_rollback(s);
    return rc;
}

int sto_ensure_views(Store *s) {
    int has_t = metrics_has_t(s);
    if (has_t < 0) return -1;
    char *want[NVIEWS] = {NULL, NULL, NULL};
    int rc = 0;
    for (int i = 0; i < NVIEWS; i++)
        if (!(want[i] = view_sql(i, s->readonly, has_t))) rc = sto_fail(s, "%s: out of memory", s->path);
    if (rc == 0 && s->readonly)
        for (int i = 0; i < NVIEWS && rc == 0; i++) rc = sto_exec(s, want[i]);
    else if (rc == 0)
        rc = ensure_file_views(s, want);
    for (int i = 0; i < NVIEWS; i++) free(want[i]);
    return rc;
}
