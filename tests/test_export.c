/*
 * test_export.c — getting results out: CSV and JSON cells (util/csv.h,
 * util/json.h's writers, util_fmt_double), the store's views
 * (run/store_views.c), `gated export` read back by Python's csv and json
 * modules against the database itself (one line per metric row, values
 * bitwise, layer / head, names with quotes, commas and newlines, formula
 * cells), its filters and errors, the --json documents of ls, show, info
 * and sweep --dry-run, and the table of metric keys (docs/store.md)
 * against the keys the code writes.
 *
 * The fixture: two tiny runs on the synthetic corpus (one with a G1 gate,
 * for per-head rows and histograms), a `gated eval` of one, two sweeps
 * recorded over them, and hostile text: run names with quotes, commas and
 * a leading '=', a label starting with '-', a config string holding a
 * newline, a quote and a comma (written into config_json as a merged
 * database could hold it).
 */
#include <criterion/criterion.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lab/export.h"
#include "run/eval.h"
#include "run/store.h"
#include "run/train.h"
#include "testutil.h"
#include "util/csv.h"
#include "util/json.h"
#include "util/util.h"

/* ------------------------------------------------------------------ */
/* helpers                                                             */
/* ------------------------------------------------------------------ */

static const char NAME_A[] = "plain \"quoted\", run";
static const char NAME_B[] = "=HYPERLINK(\"x\")";
static const char LABEL_A[] = "lab \"x\", y";
static const char LABEL_B[] = "-neg";
/* train.init_from of run A, as a merged database may hold it */
static const char HOSTILE_SQL[] = "UPDATE runs SET config_json = json_set(config_json, '$.\"train.init_from\"',"
                                  " 'line1' || char(10) || 'a \"b\", c') WHERE name = ?1";

typedef struct {
    char dir[64], db[128];
} Fx;

static void db_exec(const char *db, const char *sql, const char *arg) {
    sqlite3 *h;
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_open_v2(db, &h, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_prepare_v2(h, sql, -1, &st, NULL), SQLITE_OK, "%s: %s", sql, sqlite3_errmsg(h));
    if (arg) sqlite3_bind_text(st, 1, arg, -1, SQLITE_STATIC);
    cr_assert_eq(sqlite3_step(st), SQLITE_DONE, "%s: %s", sql, sqlite3_errmsg(h));
    sqlite3_finalize(st);
    sqlite3_close(h);
}

static long long q_int(const char *db, const char *sql) {
    sqlite3 *h;
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_prepare_v2(h, sql, -1, &st, NULL), SQLITE_OK, "%s: %s", sql, sqlite3_errmsg(h));
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW, "%s", sql);
    long long v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(h);
    return v;
}

/* stderr to /dev/null (progress lines) while f runs: the saved fd. */
static int mute_stderr(void) {
    fflush(stderr);
    int saved = dup(2), null = open("/dev/null", O_WRONLY);
    if (null >= 0) dup2(null, 2), close(null);
    return saved;
}
static void unmute_stderr(int saved) {
    fflush(stderr);
    if (saved >= 0) dup2(saved, 2), close(saved);
}

static void train_one(const Fx *fx, Config c, const char *name) {
    resolve_or_die(&c);
    TrainOpts o = {fx->db, name, "data", "test", 0, 0, fx->dir, 0, 0};
    int saved = quiet_begin(), err = mute_stderr();
    int rc = train_run(&c, &o);
    unmute_stderr(err);
    quiet_end(saved);
    cr_assert_eq(rc, 0, "training %s failed", name);
}

static void fixture(Fx *fx) {
    set_threads(1);
    strcpy(fx->dir, "/tmp/gated-export-XXXXXX");
    cr_assert_not_null(mkdtemp(fx->dir));
    snprintf(fx->db, sizeof fx->db, "%s/x.db", fx->dir);
    Config a = synth_config(6);
    a.eval_every = 3;
    a.seed = 1;
    train_one(fx, a, NAME_A);
    Config b = a;
    b.seed = 2;
    b.gate.position = GP_SDPA;
    train_one(fx, b, NAME_B);
    int lengths[] = {32};
    EvalOpts eo = {fx->db, "data", fx->dir, lengths, 1, ROPE_NONE, 0, 4, 1, 0, 0, NULL, 0, NULL, 0};
    int saved = quiet_begin();
    int rc = eval_run(NAME_A, &eo);
    quiet_end(saved);
    cr_assert_eq(rc, 0);
    Store *s;
    char err[512], ida[17], idb[17];
    cr_assert_eq(store_open(&s, fx->db, err, sizeof err), 0, "%s", err);
    cr_assert_eq(store_find_run(s, NAME_A, ida, NULL), 0);
    cr_assert_eq(store_find_run(s, NAME_B, idb, NULL), 0);
    StoreSweepRun sw[2] = {{ida, LABEL_A, 1, 0, 1}, {idb, LABEL_B, 2, 1, 0}};
    cr_assert_eq(store_sweep_record(s, "sw,1", 2, sw, 2), 0, "%s", store_errmsg(s));
    StoreSweepRun other = {idb, "other-label", 2, 0, 0};
    cr_assert_eq(store_sweep_record(s, "another", 1, &other, 1), 0, "%s", store_errmsg(s));
    store_close(s);
    db_exec(fx->db, HOSTILE_SQL, NAME_A);
}

static void fx_rm(const Fx *fx) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", fx->dir);
    cr_assert_eq(system(cmd), 0);
}

typedef struct {
    int status;
    char *out, *err;
} Result;

/* `$GATED_BIN ARGS...` (no shell): exit status, stdout, stderr. */
static Result run_gated(const char *const *args) {
    const char *bin = gated_bin();
    char *argv[32];
    int n = 0;
    argv[n++] = (char *)bin;
    for (; args[n - 1]; n++) argv[n] = (char *)args[n - 1];
    argv[n] = NULL;
    FILE *o = tmpfile(), *e = tmpfile();
    cr_assert(o && e);
    fflush(NULL);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        dup2(fileno(o), 1);
        dup2(fileno(e), 2);
        execv(bin, argv);
        _exit(127);
    }
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    Result r = {WIFEXITED(st) ? WEXITSTATUS(st) : -1, test_read_stream(o, NULL), test_read_stream(e, NULL)};
    fclose(o), fclose(e);
    return r;
}
#define GATED(...) run_gated((const char *const[]){__VA_ARGS__, NULL})

static void result_free(Result *r) { free(r->out), free(r->err); }

static const char *python(void) { return access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3"; }

/* python3 on a script (written to DIR/check.py) with arguments; its output
 * into out; the exit status. */
static int run_python(const Fx *fx, const char *script, const char *args, char *out, size_t cap) {
    char path[160], cmd[1024];
    snprintf(path, sizeof path, "%s/check.py", fx->dir);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    cr_assert(fputs(script, f) >= 0);
    cr_assert_eq(fclose(f), 0);
    snprintf(cmd, sizeof cmd, "'%s' '%s' %s 2>&1", python(), path, args);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* ------------------------------------------------------------------ */
/* cells                                                               */
/* ------------------------------------------------------------------ */

static char *csv_cell(const char *s) {
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    cr_assert_not_null(f);
    cr_assert_eq(csv_fput_text(s, f), 0);
    fclose(f);
    return buf;
}

Test(export, csv_cells_quote_neutralise_formulas_and_repair_utf8) {
    static const char *const cases[][2] = {
        {"plain", "plain"},
        {"G1-elementwise", "G1-elementwise"},       /* a '-' inside is no formula */
        {"a,b", "\"a,b\""},
        {"say \"hi\"", "\"say \"\"hi\"\"\""},
        {"two\nlines", "\"two\nlines\""},
        {"cr\rx", "\"cr\\x0dx\""},                /* quoted, and the CR written visibly */
        {"=1+2", "\"'=1+2\""},
        {"+1", "\"'+1\""},
        {"-1", "\"'-1\""},
        {"@SUM(A1)", "\"'@SUM(A1)\""},
        {"\tx", "\"'\tx\""},
        {"=\"q\",", "\"'=\"\"q\"\",\""},
        {"caf\xc3\xa9", "caf\xc3\xa9"},             /* valid UTF-8 as is */
        {"bad\xff", "bad\xef\xbf\xbd"},             /* a stray byte becomes U+FFFD */
        /* controls that would drive a terminal, visibly (issue 29): ESC, BEL, DEL, C1 CSI */
        {"k\x1b[5m", "k\\x1b[5m"},
        {"a\x07" "b\x7f", "a\\x07b\\x7f"},
        {"c1\xc2\x9b" "2J", "c1\\xc2\\x9b2J"},
        {"", ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *got = csv_cell(cases[i][0]);
        cr_expect_str_eq(got, cases[i][1], "case %zu", i);
        free(got);
    }
}

Test(export, json_text_numbers_and_values) {
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    cr_assert_not_null(f);
    json_fput_text("a\"b\n\xff" "c\xc3\xa9", f);
    fputc(' ', f);
    json_fput_num(0.1, f);
    fputc(' ', f);
    json_fput_num(NAN, f);
    fputc(' ', f);
    json_fput_num(-INFINITY, f);
    fclose(f);
    cr_assert_str_eq(buf, "\"a\\\"b\\n\\ufffdc\xc3\xa9\" 0.1 null null");
    free(buf);
    /* a DOM written back reads back the same; NaN becomes null */
    const char *text = "{\"a\":[1,2.5e-3,\"x\\u0001\"],\"b\":{\"c\":true,\"d\":null},\"e\":NaN}";
    Json *j = json_parse(text, NULL, 0);
    cr_assert_not_null(j);
    f = open_memstream(&buf, &n);
    cr_assert_eq(json_fput_value(j, f), 0);
    fclose(f);
    cr_assert_str_eq(buf, "{\"a\":[1,2.5e-3,\"x\\u0001\"],\"b\":{\"c\":true,\"d\":null},\"e\":null}");
    json_free(j);
    free(buf);
    /* the shortest text that reads back bitwise */
    char b[32];
    cr_assert_str_eq(util_fmt_double(0.1, b, sizeof b), "0.1");
    cr_assert_str_eq(util_fmt_double(-2.5, b, sizeof b), "-2.5");
    cr_assert_str_eq(util_fmt_double(INFINITY, b, sizeof b), "inf");
    double x = 1.0 / 3.0;
    for (int i = 0; i < 1000; i++, x = x * 1.7 + 1e-3 / (i + 1)) {
        double v = i % 2 ? -x : 1 / x;
        cr_assert_eq(strtod(util_fmt_double(v, b, sizeof b), NULL), v, "%.17g as %s", v, b);
    }
}

/* ------------------------------------------------------------------ */
/* views                                                               */
/* ------------------------------------------------------------------ */

Test(export, views_join_split_and_follow_the_metrics_table, .timeout = 120) {
    Fx fx;
    fixture(&fx);
    const char *db = fx.db;
    long long nm = q_int(db, "SELECT count(*) FROM metrics");
    cr_assert_gt(nm, 0);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM run_metrics"), nm);
    /* layer and head, from every kind of context */
    cr_assert_eq(q_int(db, "SELECT count(*) FROM run_metrics WHERE context = 'layer=1,head=3'"
                           " AND (layer IS NOT 1 OR head IS NOT 3)"), 0);
    cr_assert_gt(q_int(db, "SELECT count(*) FROM run_metrics WHERE layer = 1 AND head = 3"), 0);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM run_metrics WHERE context = '' AND (layer IS NOT NULL OR head IS "
                           "NOT NULL)"), 0);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM run_metrics WHERE context LIKE 'split=%' AND "
                           "(layer IS NOT NULL OR head IS NOT NULL)"), 0);
    cr_assert_gt(q_int(db, "SELECT count(*) FROM run_metrics WHERE context LIKE 'split=%'"), 0);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM run_metrics WHERE context = 'layer=0' AND (layer IS NOT 0 OR head "
                           "IS NOT NULL)"), 0);
    /* names, and each run's first sweep by name ("another" < "sw,1") */
    cr_assert_eq(q_int(db, "SELECT count(*) FROM run_metrics m JOIN runs r USING (run_id) WHERE m.name IS NOT r.name"
                           " OR m.seed IS NOT r.seed OR m.status IS NOT r.status"), 0);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM run_metrics WHERE seed = 2 AND (sweep IS NOT 'another' OR label IS "
                           "NOT 'other-label')"), 0);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM run_metrics WHERE seed = 1 AND sweep IS NOT 'sw,1'"), 0);
    /* sweep_metrics: one row per membership */
    cr_assert_eq(q_int(db, "SELECT count(*) FROM sweep_metrics"),
                 q_int(db, "SELECT count(*) FROM metrics m JOIN sweep_runs w USING (run_id)"));
    cr_assert_eq(q_int(db, "SELECT count(*) FROM sweep_metrics WHERE sweep = 'sw,1' AND seed = 2 AND label IS NOT "
                           "'-neg'"), 0);
    /* final_metrics: the last step of each series */
    cr_assert_eq(q_int(db, "SELECT count(*) FROM final_metrics"),
                 q_int(db, "SELECT count(*) FROM (SELECT DISTINCT run_id, key, context FROM metrics)"));
    cr_assert_eq(q_int(db, "SELECT count(*) FROM final_metrics f WHERE step <> (SELECT max(step) FROM metrics m"
                           " WHERE m.run_id = f.run_id AND m.key = f.key AND m.context = f.context)"), 0);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM final_metrics WHERE key = 'val_loss' AND step <> 6"), 0);

    /* a view that differs (here: someone else's) is replaced by a writer;
     * a metrics table that gains t gets it in the views and the export */
    db_exec(db, "DROP VIEW final_metrics", NULL);
    db_exec(db, "CREATE VIEW final_metrics AS SELECT 1 AS one", NULL);
    if (q_int(db, "SELECT count(*) FROM pragma_table_info('metrics') WHERE name = 't'") == 0)
        db_exec(db, "ALTER TABLE metrics ADD COLUMN t REAL", NULL);
    db_exec(db, "UPDATE metrics SET t = 1700000000.5 + step", NULL);
    struct stat before, after;
    cr_assert_eq(stat(db, &before), 0);
    Result r = GATED("export", "--db", db, "--key", "val_loss", "--config", "none");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_eq(stat(db, &after), 0);
    /* read-only: TEMP views, the file untouched */
    cr_assert(before.st_mtim.tv_sec == after.st_mtim.tv_sec && before.st_mtim.tv_nsec == after.st_mtim.tv_nsec &&
              before.st_size == after.st_size);
    cr_assert(strncmp(r.out, "run_id,name,status,seed,sweep,label,key,context,layer,head,step,value,t\n", 72) == 0,
              "%s", r.out);
    cr_assert_not_null(strstr(r.out, ",val_loss,,,,6,"), "%s", r.out);
    cr_assert_not_null(strstr(r.out, ",1700000006.5\n"), "%s", r.out);
    result_free(&r);
    Store *s;
    char err[512];
    cr_assert_eq(store_open(&s, db, err, sizeof err), 0, "%s", err);
    store_close(s);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM final_metrics WHERE t = 1700000000.5 + step"),
                 q_int(db, "SELECT count(*) FROM (SELECT DISTINCT run_id, key, context FROM metrics)"));
    cr_assert_eq(q_int(db, "SELECT count(*) FROM sweep_metrics WHERE t IS NULL"), 0);
    fx_rm(&fx);
}

/* ------------------------------------------------------------------ */
/* gated export                                                        */
/* ------------------------------------------------------------------ */

/* Checks an export against the database, from Python: argv db csv jsonl. */
static const char CHECK_PY[] =
    "import csv, json, sqlite3, sys\n"
    "db, csv_path, jsonl_path = sys.argv[1:4]\n"
    "con = sqlite3.connect('file:' + db + '?mode=ro', uri=True)\n"
    "want = {(r, k, c, s): v for r, k, c, s, v in\n"
    "        con.execute('SELECT run_id, key, context, step, value FROM main.metrics')}\n"
    "runs = {r: (n, json.loads(c)) for r, n, c in con.execute('SELECT run_id, name, config_json FROM runs')}\n"
    "first = {r: (s, l) for r, s, l in con.execute('SELECT run_id, sweep, label FROM sweep_runs w WHERE sweep ='\n"
    "         ' (SELECT min(sweep) FROM sweep_runs x WHERE x.run_id = w.run_id)')}\n"
    "def split(ctx):\n"
    "    out = {'layer': None, 'head': None}\n"
    "    for part in ctx.split(','):\n"
    "        k, _, v = part.partition('=')\n"
    "        if k in out: out[k] = int(v)\n"
    "    return out['layer'], out['head']\n"
    "def text(x, fmt):  # a CSV text cell back to the text (csv_fput_text's leading ')\n"
    "    if fmt == 'csv' and x[:1] == \"'\" and x[1:2] in ('=', '+', '-', '@', '\\t', '\\r'): return x[1:]\n"
    "    return x\n"
    "def num(x, fmt, conv):\n"
    "    return (None if x == '' else conv(x)) if fmt == 'csv' else x\n"
    "def check(recs, fmt):\n"
    "    seen, train = set(), set()\n"
    "    for r in recs:\n"
    "        k = (r['run_id'], r['key'], r['context'], num(r['step'], fmt, int))\n"
    "        assert k in want and k not in seen, (fmt, 'unknown or repeated row', k)\n"
    "        seen.add(k)\n"
    "        v = num(r['value'], fmt, float)\n"
    "        assert v == want[k], (fmt, k, v, want[k])  # exact: the value reads back bitwise\n"
    "        lh = (num(r['layer'], fmt, int), num(r['head'], fmt, int))\n"
    "        assert lh == split(r['context']), (fmt, k, lh)\n"
    "        if not r['context'].startswith('split='):\n"
    "            t = (k[0], k[3], k[1]) + lh\n"
    "            assert t not in train, (fmt, 'two rows for', t)\n"
    "            train.add(t)\n"
    "        name, cfg = runs[k[0]]\n"
    "        assert text(r['name'], fmt) == name, (fmt, r['name'], name)\n"
    "        assert (text(r['sweep'], fmt), text(r['label'], fmt)) == first.get(k[0], ('', '') if fmt == 'csv'\n"
    "            else (None, None)), (fmt, r['sweep'], r['label'])\n"
    "        init = cfg.get('train.init_from', '' if fmt == 'csv' else None)  # missing: at its default\n"
    "        assert text(r['train.init_from'], fmt) == init, (fmt, r['train.init_from'])\n"
    "        assert str(r['model.gate.position']) == cfg['model.gate.position']\n"
    "        # a key without effect on the run (the gate's, ungated) is empty, never the default it holds\n"
    "        act = cfg['model.gate.activation'] if cfg['model.gate.position'] != 'none' else ('' if fmt == 'csv'\n"
    "            else None)\n"
    "        assert r['model.gate.activation'] == act, (fmt, r['model.gate.activation'], act)\n"
    "        assert num(r['model.d_model'], fmt, int) == cfg['model.d_model']\n"
    "    assert seen == set(want), (fmt, len(seen), len(want))\n"
    "    return len(seen)\n"
    "with open(csv_path, newline='', encoding='utf-8') as f:\n"
    "    n = check(list(csv.DictReader(f)), 'csv')\n"
    "def strict(c): raise ValueError('not JSON: ' + c)\n"
    "with open(jsonl_path, encoding='utf-8') as f:\n"
    "    lines = f.read().split('\\n')\n"
    "assert lines[-1] == '' and all(lines[:-1]), 'one object a line'\n"
    "recs = [json.loads(l, parse_constant=strict) for l in lines[:-1]]\n"
    "assert all(list(r) == list(recs[0]) for r in recs), 'the same members on every line'\n"
    "m = check(recs, 'jsonl')\n"
    "import pandas as pd  # the README's example (make deps installs python3-pandas)\n"
    "df = pd.read_csv(csv_path)\n"
    "assert len(df) == n, (len(df), n)\n"
    "assert len(df[df.key == 'val_loss'].groupby(['label', 'step']).value.mean()) > 0\n"
    "print('rows', n, m)\n";

Test(export, csv_and_jsonl_load_in_python_one_line_per_metric_row, .timeout = 120) {
    Fx fx;
    fixture(&fx);
    char csv_path[160], jsonl_path[160], args[600], out[8192];
    snprintf(csv_path, sizeof csv_path, "%s/m.csv", fx.dir);
    snprintf(jsonl_path, sizeof jsonl_path, "%s/m.jsonl", fx.dir);
    Result r = GATED("export", "--db", fx.db, "--config", "all", "--out", csv_path);
    cr_assert_eq(r.status, 0, "%s", r.err);
    long long nm = q_int(fx.db, "SELECT count(*) FROM metrics");
    char said[256];
    snprintf(said, sizeof said, "%s: %lld rows\n", csv_path, nm);
    cr_assert_str_eq(r.out, said);
    result_free(&r);
    r = GATED("export", "--db", fx.db, "--config", "all", "--format", "jsonl");
    cr_assert_eq(r.status, 0, "%s", r.err);
    FILE *f = fopen(jsonl_path, "w");
    cr_assert(f && fputs(r.out, f) >= 0 && fclose(f) == 0);
    result_free(&r);
    /* the hostile cells as written */
    char *c = test_read_file(csv_path, NULL);
    cr_assert_not_null(strstr(c, ",\"'=HYPERLINK(\"\"x\"\")\","), "run B's name, neutralised and quoted");
    cr_assert_not_null(strstr(c, ",\"plain \"\"quoted\"\", run\","));
    cr_assert_not_null(strstr(c, ",\"line1\na \"\"b\"\", c\""));
    free(c);
    snprintf(args, sizeof args, "'%s' '%s' '%s'", fx.db, csv_path, jsonl_path);
    int rc = run_python(&fx, CHECK_PY, args, out, sizeof out);
    char want[64];
    snprintf(want, sizeof want, "rows %lld %lld\n", nm, nm);
    cr_assert(rc == 0 && strcmp(out, want) == 0, "python: exit %d:\n%s", rc, out);
    fx_rm(&fx);
}

/* The number of lines of s. */
static long long lines(const char *s) {
    long long n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

Test(export, filters_config_columns_and_errors, .timeout = 120) {
    Fx fx;
    fixture(&fx);
    const char *db = fx.db;
    /* --key, --run (by name), --sweep: the rows SQL counts, plus the header */
    Result r = GATED("export", "--db", db, "--key", "val_loss", "--key", "gate_mean", "--key", "val_loss", "--config",
                     "none");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_eq(lines(r.out) - 1, q_int(db, "SELECT count(*) FROM metrics WHERE key IN ('val_loss', 'gate_mean')"));
    /* --key order: val_loss rows before gate_mean rows within a run */
    char *v = strstr(r.out, ",val_loss,"), *g = strstr(r.out, ",gate_mean,");
    cr_assert(v && g && v < g);
    result_free(&r);
    r = GATED("export", "--db", db, "--run", NAME_B, "--format", "jsonl", "--config", "none");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_eq(lines(r.out), q_int(db, "SELECT count(*) FROM metrics WHERE run_id = (SELECT run_id FROM runs"
                                         " WHERE seed = 2)"));
    cr_assert(strncmp(r.out, "{\"run_id\":", 10) == 0 && strstr(r.out, "\"model.") == NULL, "%.300s", r.out);
    result_free(&r);
    r = GATED("export", "--db", db, "--sweep", "sw,1", "--key", "val_loss", "--config", "none");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_not_null(strstr(r.out, ",\"sw,1\",\"'-neg\",val_loss,"), "%s", r.out); /* this sweep's label */
    cr_assert_not_null(strstr(r.out, "\"sw,1\",\"lab \"\"x\"\", y\",val_loss,"), "%s", r.out);
    cr_assert_null(strstr(r.out, "another"));
    result_free(&r);
    /* varying: the keys that differ between the runs exported; one run: none */
    r = GATED("export", "--db", db, "--key", "val_loss");
    cr_assert_eq(r.status, 0, "%s", r.err);
    const char *head = "run_id,name,status,seed,sweep,label,key,context,layer,head,step,value,";
    cr_assert(strncmp(r.out, head, strlen(head)) == 0, "%s", r.out);
    char *nl = strchr(r.out, '\n');
    cr_assert_not_null(nl);
    *nl = '\0';
    cr_assert(strstr(r.out, ",model.gate.position") && strstr(r.out, ",train.seed") &&
              strstr(r.out, ",train.init_from"), "%s", r.out);
    cr_assert(!strstr(r.out, ",model.d_model") && !strstr(r.out, ",train.lr,"), "%s", r.out);
    /* the runs agree on sigmoid, but it is the gated run's alone: the ungated one's cell is empty */
    cr_assert(strstr(r.out, ",model.gate.activation"), "%s", r.out);
    result_free(&r);
    r = GATED("export", "--db", db, "--key", "val_loss", "--run", NAME_A);
    cr_assert_eq(r.status, 0, "%s", r.err);
    {
        const char *h1 = "run_id,name,status,seed,sweep,label,key,context,layer,head,step,value,t\n";
        cr_assert(strncmp(r.out, h1, strlen(h1)) == 0, "%s", r.out);
    }
    result_free(&r);
    /* a key with no rows: the header alone */
    r = GATED("export", "--db", db, "--key", "no_such_key");
    cr_assert(r.status == 0 && lines(r.out) == 1, "%d %s", r.status, r.out);
    result_free(&r);
    /* bad input: exit 2, nothing written, no file left */
    char out_path[160];
    snprintf(out_path, sizeof out_path, "%s/bad.csv", fx.dir);
    const char *const bad[][8] = {
        {"export", "--db", db, "--run", "no-such-run", "--out", out_path, NULL},
        {"export", "--db", db, "--sweep", "no-such-sweep", "--out", out_path, NULL},
        {"export", "--db", db, "--format", "xml", NULL},
        {"export", "--db", db, "--config", "some", NULL},
        {"export", "--db", db, "stray", NULL},
        {"export", "--db", "/nonexistent/x.db", NULL},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        r = run_gated(bad[i]);
        cr_expect_eq(r.status, 2, "case %zu: exit %d: %s", i, r.status, r.err);
        cr_expect_str_eq(r.out, "", "case %zu", i);
        cr_expect_neq(access(out_path, F_OK), 0, "case %zu left %s", i, out_path);
        result_free(&r);
    }
    fx_rm(&fx);
}

/* ------------------------------------------------------------------ */
/* --json                                                              */
/* ------------------------------------------------------------------ */

/* stdout of a successful command, parsed (and checked strict by Python). */
static Json *json_of(const Fx *fx, const char *const *args) {
    Result r = run_gated(args);
    cr_assert_eq(r.status, 0, "%s: %s", args[0], r.err);
    char path[160], cmd[400], out[2048];
    snprintf(path, sizeof path, "%s/doc.json", fx->dir);
    FILE *f = fopen(path, "w");
    cr_assert(f && fputs(r.out, f) >= 0 && fclose(f) == 0);
    snprintf(cmd, sizeof cmd,
             "import json, sys\n"
             "def strict(c): raise ValueError(c)\n"
             "json.load(open(sys.argv[1], encoding='utf-8'), parse_constant=strict)\n");
    char args_py[200];
    snprintf(args_py, sizeof args_py, "'%s'", path);
    int rc = run_python(fx, cmd, args_py, out, sizeof out);
    cr_assert_eq(rc, 0, "%s --json is not strict JSON: %s\n%s", args[0], out, r.out);
    char err[256];
    Json *j = json_parse(r.out, err, sizeof err);
    cr_assert_not_null(j, "%s: %s", args[0], err);
    result_free(&r);
    return j;
}

static const char *text_of(const Json *o, const char *key) {
    const char *t = json_text(json_get(o, key));
    cr_assert_not_null(t, "no %s", key);
    return t;
}

Test(export, json_documents_of_ls_show_info_and_the_dry_run, .timeout = 120) {
    Fx fx;
    fixture(&fx);
    Json *ls = json_of(&fx, (const char *const[]){"ls", "--db", fx.db, "--json", NULL});
    const Json *runs = json_get(ls, "runs");
    cr_assert(runs && runs->type == JSON_ARR && runs->n == 2);
    cr_assert_str_eq(text_of(runs->v[0], "name"), NAME_A);
    cr_assert_str_eq(text_of(runs->v[1], "name"), NAME_B);
    cr_assert_str_eq(text_of(runs->v[0], "status"), "finished");
    cr_assert_str_eq(text_of(runs->v[0], "steps"), "6");
    cr_assert_eq(json_get(runs->v[0], "val_loss")->type, JSON_NUM);
    json_free(ls);

    Json *show = json_of(&fx, (const char *const[]){"show", NAME_B, "--db", fx.db, "--json", NULL});
    cr_assert_str_eq(text_of(show, "name"), NAME_B);
    cr_assert_str_eq(text_of(show, "effective_status"), "finished");
    cr_assert_str_eq(text_of(json_get(show, "config"), "model.gate.position"), "sdpa");
    cr_assert_str_eq(text_of(show, "seed"), "2");
    const char *arrays[] = {"summary", "series", "probes", "histograms"};
    for (int i = 0; i < 4; i++) {
        const Json *a = json_get(show, arrays[i]);
        cr_assert(a && a->type == JSON_ARR && a->n > 0, "%s", arrays[i]);
    }
    const Json *h = json_get(show, "histograms")->v[0];
    cr_assert_eq(json_get(h, "counts")->type, JSON_ARR);
    cr_assert_eq(json_get(h, "counts")->n, 20);
    const Json *pr = json_get(show, "probes");
    cr_assert_eq(pr->n, 2);
    cr_assert_str_eq(text_of(pr->v[1], "layer"), "1");
    json_free(show);
    Result r = GATED("show", "no-such-run", "--db", fx.db, "--json");
    cr_assert_eq(r.status, 2);
    cr_assert_str_eq(r.out, "");
    result_free(&r);

    Json *info = json_of(&fx, (const char *const[]){"info", "experiments/tiny.yaml", "--set",
                                                    "model.gate.position=sdpa", "--json", NULL});
    cr_assert_str_eq(text_of(json_get(info, "config"), "model.gate.position"), "sdpa");
    cr_assert_not_null(json_get(json_get(info, "config"), "model.gate.control_scale"), "every key");
    cr_assert_str_eq(text_of(json_get(info, "gate"), "paper_position"), "G1");
    cr_assert_str_eq(text_of(json_get(info, "gate"), "added_params_per_layer"),
                     text_of(json_get(info, "gate"), "paper_params_per_layer"));
    const Json *params = json_get(info, "parameters");
    cr_assert(params && params->type == JSON_ARR && params->n > 0);
    long long total = 0;
    for (int i = 0; i < params->n; i++) total += atoll(text_of(params->v[i], "count"));
    cr_assert_eq(total, atoll(text_of(info, "total_params")));
    cr_assert_gt(atof(text_of(json_get(info, "flops_per_token"), "forward")), 0);
    json_free(info);

    char smoke[4096];
    cr_assert_not_null(realpath("experiments/smoke.yaml", smoke));
    Json *dry = json_of(&fx, (const char *const[]){"sweep", smoke, "--db", fx.db, "--dry-run", "--json", "--shard",
                                                   "1/2", NULL});
    cr_assert_str_eq(text_of(dry, "sweep"), "smoke");
    cr_assert_str_eq(text_of(dry, "total_runs"), "6");
    const Json *dr = json_get(dry, "runs");
    cr_assert(dr && dr->n == 3);
    cr_assert_str_eq(text_of(dr->v[0], "index"), "1");
    cr_assert_str_eq(text_of(dr->v[2], "index"), "5");
    cr_assert_str_eq(text_of(dr->v[0], "action"), "run");
    cr_assert_eq(json_get(dr->v[0], "stored_status")->type, JSON_NULL);
    cr_assert_eq(json_get(dr->v[0], "overrides")->type, JSON_ARR);
    json_free(dry);
    r = GATED("sweep", smoke, "--json");
    cr_assert_eq(r.status, 2);
    cr_assert_not_null(strstr(r.err, "--json goes with --dry-run"));
    result_free(&r);
    fx_rm(&fx);
}

/* ------------------------------------------------------------------ */
/* the table of metric keys (docs/store.md)                            */
/* ------------------------------------------------------------------ */

typedef struct {
    char **k;
    int n, cap;
} Keys;

static void keys_add(Keys *ks, const char *s, size_t len) {
    for (int i = 0; i < ks->n; i++)
        if (strlen(ks->k[i]) == len && strncmp(ks->k[i], s, len) == 0) return;
    if (ks->n == ks->cap) {
        ks->cap = ks->cap ? 2 * ks->cap : 64;
        ks->k = realloc(ks->k, sizeof *ks->k * (size_t)ks->cap);
        cr_assert_not_null(ks->k);
    }
    ks->k[ks->n] = strndup(s, len);
    cr_assert_not_null(ks->k[ks->n]);
    ks->n++;
}

static int keys_has(const Keys *ks, const char *s) {
    for (int i = 0; i < ks->n; i++)
        if (strcmp(ks->k[i], s) == 0) return 1;
    return 0;
}

static void keys_free(Keys *ks) {
    for (int i = 0; i < ks->n; i++) free(ks->k[i]);
    free(ks->k);
}

/* The keys of the "### Metric keys" table (docs/store.md): every `...` in
 * the first cell of its rows. */
static void readme_keys(Keys *ks) {
    char *doc = test_read_file("docs/store.md", NULL);
    char *p = strstr(doc, "\n### Metric keys\n");
    cr_assert_not_null(p, "docs/store.md has no \"### Metric keys\" section");
    char *end = strstr(p + 1, "\n#");
    if (end) *end = '\0';
    for (char *line = strstr(p, "\n| `"); line; line = strstr(line + 1, "\n| `")) {
        char *cell_end = strstr(line + 3, " |");
        cr_assert_not_null(cell_end);
        for (char *q = line + 3; q < cell_end;) {
            char *a = strchr(q, '`');
            if (!a || a >= cell_end) break;
            char *b = strchr(a + 1, '`');
            cr_assert(b && b < cell_end);
            keys_add(ks, a + 1, (size_t)(b - a - 1));
            q = b + 1;
        }
    }
    free(doc);
}

/* The key literal of every store_metric / store_summary / store_histogram
 * call in core/ (the first string literal in the call; the store's own
 * files define them and are skipped), and the file of each. */
typedef struct {
    char key[96], path[96];
} CodeKey;
enum { MAX_CODE_KEYS = 512 };

static int code_keys(CodeKey *out) {
    static const char *const dirs[] = {"core/util",  "core/nn",        "core/run",          "core/lab",
                                       "core/lab/bench", "core/lab/merge", "core/lab/report", "core/lab/report/kit",
                                       "core/lab/sweep"};
    static const char *const calls[] = {"store_metric(", "store_summary(", "store_histogram("};
    int n = 0;
    for (int d = 0; d < (int)(sizeof dirs / sizeof dirs[0]); d++) {
        DIR *dir = opendir(dirs[d]);
        cr_assert_not_null(dir, "%s: %s (run the tests from the repository root)", dirs[d], strerror(errno));
        struct dirent *e;
        while ((e = readdir(dir))) {
            size_t len = strlen(e->d_name);
            if (len < 3 || strcmp(e->d_name + len - 2, ".c") != 0 || strncmp(e->d_name, "store", 5) == 0) continue;
            char path[96];
            snprintf(path, sizeof path, "%s/%.60s", dirs[d], e->d_name);
            char *src = test_read_file(path, NULL);
            for (int c = 0; c < 3; c++)
                for (char *p = strstr(src, calls[c]); p; p = strstr(p + 1, calls[c])) {
                    char *semi = strchr(p, ';'), *q = strchr(p, '"');
                    if (!q || (semi && q > semi)) continue; /* the key is a variable */
                    char *r = strchr(q + 1, '"');
                    cr_assert(r && n < MAX_CODE_KEYS);
                    snprintf(out[n].key, sizeof out[n].key, "%.*s", (int)(r - q - 1), q + 1);
                    snprintf(out[n].path, sizeof out[n].path, "%s", path);
                    n++;
                }
            free(src);
        }
        closedir(dir);
    }
    return n;
}

Test(export, every_metric_key_the_code_writes_is_in_the_readme_table, .timeout = 120) {
    Keys doc = {0}, run = {0};
    readme_keys(&doc);
    cr_assert_gt(doc.n, 10);
    static CodeKey code[MAX_CODE_KEYS];
    int ncode = code_keys(code);
    cr_assert_gt(ncode, 20, "found too few store_metric calls: the scan is broken");
    for (int i = 0; i < ncode; i++)
        cr_expect(keys_has(&doc, code[i].key),
                  "metric key '%s' (written in %s) is not in docs/store.md's \"Metric keys\" table", code[i].key,
                  code[i].path);
    /* and every key a run, a gated run and an evaluation really wrote */
    Fx fx;
    fixture(&fx);
    sqlite3 *h;
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_open_v2(fx.db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_prepare_v2(h, "SELECT key FROM metrics UNION SELECT key FROM summary UNION SELECT key FROM "
                                       "histograms", -1, &st, NULL), SQLITE_OK);
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *k = (const char *)sqlite3_column_text(st, 0);
        keys_add(&run, k, strlen(k));
    }
    sqlite3_finalize(st);
    sqlite3_close(h);
    cr_assert(keys_has(&run, "train_loss") && keys_has(&run, "gate_mean") && keys_has(&run, "eval_loss") &&
              keys_has(&run, "gate") && keys_has(&run, "test_loss"), "the fixture wrote too little");
    for (int i = 0; i < run.n; i++)
        cr_expect(keys_has(&doc, run.k[i]), "key '%s', written by a run, is not in docs/store.md's \"Metric keys\" table",
                  run.k[i]);
    keys_free(&doc), keys_free(&run);
    fx_rm(&fx);
}

/* ------------------------------------------------------------------ */
/* what --out may touch, and control bytes (issue 29)                  */
/* ------------------------------------------------------------------ */

/* DIR/s.db: one finished run with n train_loss rows (about 100 bytes of
 * CSV each), made with the store's API. */
static void small_db(const char *dir, char *db, size_t cap, int n) {
    snprintf(db, cap, "%s/s.db", dir);
    Store *s;
    char err[512];
    cr_assert_eq(store_open(&s, db, err, sizeof err), 0, "%s", err);
    static const char id[] = "0123456789abcdef";
    cr_assert_eq(store_run_begin(s, id, "small", "{\"train.seed\":1}", 1, 1, NULL, NULL), 0, "%s", store_errmsg(s));
    for (int k = 1; k <= n; k++) cr_assert_eq(store_metric(s, id, "train_loss", NULL, k, 1.0 / k), 0);
    cr_assert_eq(store_run_end(s, id, "finished", NULL, -1), 0);
    store_close(s);
}

/* `gated export --db DB --out OUT` with a file size limit (RLIMIT_FSIZE,
 * SIGXFSZ ignored: the write fails) of fsize bytes, 0 none, and a time
 * limit; the exit status, or 128 + a signal (SIGALRM: it hung). */
static int export_out(const char *db, const char *out, long fsize) {
    const char *bin = gated_bin();
    fflush(NULL);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        int null = open("/dev/null", O_RDWR);
        dup2(null, 0), dup2(null, 1), dup2(null, 2);
        if (fsize > 0) {
            signal(SIGXFSZ, SIG_IGN);
            struct rlimit rl = {(rlim_t)fsize, (rlim_t)fsize};
            if (setrlimit(RLIMIT_FSIZE, &rl) != 0) _exit(126);
        }
        alarm(20);
        execl(bin, bin, "export", "--db", db, "--out", out, "--config", "none", (char *)NULL);
        _exit(127);
    }
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Files in dir other than s.db (and its -wal / -shm) and those named. */
static int others_in(const char *dir, const char *a, const char *b) {
    DIR *d = opendir(dir);
    cr_assert_not_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += e->d_name[0] != '.' && strncmp(e->d_name, "s.db", 4) != 0 && strcmp(e->d_name, a) != 0 &&
             strcmp(e->d_name, b) != 0;
    closedir(d);
    return n;
}

/* --out never removes what the command did not create: a device node or a
 * FIFO is refused (exit 2) and stays; a regular file whose rewrite fails
 * (here: over RLIMIT_FSIZE) keeps its old content; no temporary file is
 * left; a link at --out is replaced by the new file, the file it points
 * to untouched. */
Test(export, out_never_removes_what_it_did_not_create, .timeout = 120) {
    char dir[64], db[128], p[160], q[160];
    test_tmpdir(dir, sizeof dir);
    small_db(dir, db, sizeof db, 3000);
    struct stat sb;

    snprintf(p, sizeof p, "%s/full", dir);
    if (mknod(p, S_IFCHR | 0666, makedev(1, 7)) == 0) { /* as /dev/full (root only) */
        cr_expect_eq(export_out(db, p, 0), 2, "a device as --out");
        cr_expect(stat(p, &sb) == 0 && S_ISCHR(sb.st_mode), "the device node is gone");
        unlink(p);
    } else {
        cr_log_warn("mknod: %s: the device case is not run", strerror(errno));
    }
    snprintf(p, sizeof p, "%s/fifo", dir);
    cr_assert_eq(mkfifo(p, 0600), 0);
    cr_expect_eq(export_out(db, p, 0), 2, "a FIFO as --out (128 + 14: it waited for a reader)");
    cr_expect(stat(p, &sb) == 0 && S_ISFIFO(sb.st_mode), "the FIFO is gone");
    unlink(p);
    snprintf(p, sizeof p, "%s", dir);
    cr_expect_eq(export_out(db, p, 0), 2, "a directory as --out");

    /* a failed rewrite leaves the file as it was, and nothing beside it */
    snprintf(p, sizeof p, "%s/keep.csv", dir);
    FILE *f = fopen(p, "w");
    cr_assert_not_null(f);
    fputs("precious\n", f);
    fclose(f);
    cr_expect_eq(export_out(db, p, 65536), 1, "a write over the file size limit");
    char *kept = test_read_file(p, NULL);
    cr_expect_str_eq(kept, "precious\n", "the old file was lost");
    free(kept);
    cr_expect_eq(others_in(dir, "keep.csv", ""), 0, "a temporary file was left");

    /* success replaces it; through a link, the link stays */
    cr_expect_eq(export_out(db, p, 0), 0);
    char *csv = test_read_file(p, NULL);
    cr_expect(strncmp(csv, "run_id,name,status", 18) == 0, "%.40s", csv);
    free(csv);
    /* a link at --out is replaced by the file; what it points to is never
     * written (issue 39: a link planted in an output folder) */
    f = fopen(p, "w");
    cr_assert_not_null(f);
    fputs("precious\n", f);
    fclose(f);
    snprintf(q, sizeof q, "%s/link.csv", dir);
    cr_assert_eq(symlink("keep.csv", q), 0);
    cr_expect_eq(export_out(db, q, 0), 0);
    cr_expect(lstat(q, &sb) == 0 && S_ISREG(sb.st_mode), "the link was followed, not replaced");
    kept = test_read_file(p, NULL);
    cr_expect_str_eq(kept, "precious\n", "the file the link points to was written");
    free(kept);
    cr_expect_eq(others_in(dir, "keep.csv", "link.csv"), 0, "a temporary file was left");
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

/* Keys and contexts with terminal controls (in a database from before
 * merge refused them) reach neither CSV nor JSON lines raw. */
Test(export, control_bytes_never_reach_the_output_raw, .timeout = 60) {
    char dir[64], db[128];
    test_tmpdir(dir, sizeof dir);
    small_db(dir, db, sizeof db, 3);
    db_exec(db, "UPDATE metrics SET key = 'k' || char(27) || '[5m', context = 'c' || char(155) || char(7)"
                " WHERE step = 2", NULL);
    static const char *const fmt[2] = {"csv", "jsonl"};
    static const char *const want[2][2] = {{"k\\x1b[5m", "c\\xc2\\x9b\\x07"}, {"k\\u001b[5m", "c\\u009b\\u0007"}};
    for (int i = 0; i < 2; i++) {
        Result r = GATED("export", "--db", db, "--format", fmt[i], "--config", "none");
        cr_expect_eq(r.status, 0, "%s: %s", fmt[i], r.err);
        for (const unsigned char *c = (const unsigned char *)r.out; *c; c++) {
            cr_expect(*c >= 0x20 || *c == '\n', "%s: raw byte 0x%02x", fmt[i], *c);
            cr_expect(!(c[0] == 0xc2 && c[1] >= 0x80 && c[1] <= 0x9f), "%s: a raw C1 control", fmt[i]);
        }
        for (int k = 0; k < 2; k++) cr_expect(strstr(r.out, want[i][k]), "%s: no %s in\n%s", fmt[i], want[i][k], r.out);
        result_free(&r);
    }
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}
