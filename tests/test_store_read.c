/*
 * test_store_read.c — reading the store back: the query functions `gated
 * ls` / `gated show` use and those reports themselves (cli/store_show.c,
 * run through $GATED_BIN) with the text of an untrusted file escaped,
 * system info (util/sysinfo.h) and provenance, lab/merge.h's merge_from
 * input checks, printable names, and read-only opens and reading commands
 * that change and create nothing.  Helpers: store_fx.c.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lab/merge/merge.h"
#include "run/store.h"
#include "util/sysinfo.h"
#include "testutil.h"
#include "store_fx.h"

/* ------------------------------------------------------------------ */
/* reports                                                             */
/* ------------------------------------------------------------------ */

static const char RUN_A[] = "aaaa111122223333", RUN_B[] = "aaaa999988887777";

/* Two runs: A (finished, with every kind of row ls / show read) and B
 * (running, one metric), both flushed; the store is left open. */
static Store *two_runs(const char *db) {
    Store *s = open_or_die(db);
    Provenance p = test_prov("hostA");
    const char *A = RUN_A, *B = RUN_B;
    OK(store_run_begin(s, A, "sdpa-elementwise", "{\"model\":{\"gate\":\"sdpa\"}}", 42, 2, &p,
                       "gated train sdpa.yaml"));
    OK(store_run_begin(s, B, "baseline", "{\"model\":{\"gate\":\"none\"}}", 43, 2, &p, NULL));
    for (int step = 1; step <= 30; step++) OK(store_metric(s, A, "train_loss", NULL, step, 6.0 - step * 0.1));
    OK(store_metric(s, A, "val_loss", NULL, 30, 3.25));
    OK(store_metric(s, A, "f_attn", "layer=1", 10, 0.9));
    OK(store_metric(s, A, "f_attn", "layer=1", 30, 0.625)); /* the last step is shown */
    OK(store_metric(s, A, "m_act", "layer=1", 30, 77.5));
    OK(store_metric(s, A, "resid_kurtosis", "layer=1", 30, 4.5)); /* layer 0 has none: shown as - */
    OK(store_summary(s, A, "f_attn", "layer=0", 0.375, NULL));
    OK(store_summary(s, A, "m_act", "layer=0", 12.5, NULL));
    OK(store_summary(s, A, "val_loss", NULL, 3.1234, NULL));
    OK(store_summary(s, A, "val_ppl", NULL, 22.75, NULL));
    OK(store_summary(s, A, "val_bpb", NULL, 1.0625, NULL));
    OK(store_summary(s, A, "test_loss", NULL, 3.2109, NULL));
    OK(store_summary(s, A, "tokens_per_s", NULL, 1234.5, "fast"));
    long long old[4] = {9, 9, 9, 9}, cnt[4] = {10, 40, 20, 0};
    OK(store_histogram(s, A, "gate", "", 10, 0, 1, old, 4));
    OK(store_histogram(s, A, "gate", "", 30, 0, 1, cnt, 4));
    OK(store_run_end(s, A, "finished", NULL, -1));
    OK(store_metric(s, B, "train_loss", NULL, 7, 5.0));
    OK(store_flush(s));
    return s;
}

/* The query functions behind ls and show, in process. */
Test(store, runs_read_back) {
    TmpDb t;
    tmp_db(&t);
    Store *s = open_or_die(t.db);
    StoreRunList l;
    OK(store_list_runs(s, &l));
    cr_assert_eq(l.n, 0);
    cr_assert_eq(l.name_width, 0);
    store_run_list_free(&l);
    store_close(s);
    s = two_runs(t.db);
    const char *A = RUN_A, *B = RUN_B;

    /* the list: oldest first, effective status, highest step, final val loss */
    OK(store_list_runs(s, &l));
    cr_assert_eq(l.n, 2);
    cr_assert_str_eq(l.rows[0].run_id, A);
    cr_assert_str_eq(l.rows[1].run_id, B);
    cr_assert_eq(l.name_width, (int)strlen("sdpa-elementwise"));
    cr_assert_str_eq(l.rows[0].status, "finished");
    cr_assert(l.rows[0].has_steps && l.rows[0].steps == 30);
    cr_assert_float_eq(l.rows[0].val_loss, 3.1234, 1e-12); /* the summary's, not the metric's 3.25 */
    cr_assert_str_eq(l.rows[1].status, "running");
    cr_assert(l.rows[1].has_steps && l.rows[1].steps == 7);
    cr_assert(isnan(l.rows[1].val_loss));
    store_run_list_free(&l);

    /* by name, by exact id and by unique prefix */
    static const char *const args[] = {"sdpa-elementwise", RUN_A, "aaaa1"};
    for (int i = 0; i < 3; i++) {
        char *id = store_resolve_run(s, args[i]);
        cr_assert_str_eq(id, A, "%s: %s", args[i], store_errmsg(s));
        free(id);
    }
    StoreRunInfo r;
    OK(store_run_info(s, A, &r));
    cr_assert_str_eq(r.name, "sdpa-elementwise");
    cr_assert_str_eq(r.effective_status, "finished");
    cr_assert_str_eq(r.argv, "gated train sdpa.yaml");
    cr_assert_str_eq(r.cpu_model, "Test CPU @ 1.00GHz");
    cr_assert(r.seed == 42 && r.threads == 2 && r.git_dirty == 1 && !r.has_diverged && !r.error_text);
    cr_assert(!isnan(r.ended_at) && r.ended_at >= r.started_at);
    store_run_info_free(&r);

    StoreSummaryRow *u;
    int n;
    OK(store_read_summary(s, A, &u, &n));
    cr_assert_eq(n, 7);
    cr_assert_str_eq(u[0].key, "f_attn"); /* by key */
    cr_assert_str_eq(u[2].key, "test_loss");
    cr_assert_str_eq(u[3].key, "tokens_per_s");
    cr_assert_str_eq(u[3].text, "fast");
    cr_assert_null(u[2].text);
    store_summary_free(u, n);

    StoreSeries *m;
    long long other;
    OK(store_read_series(s, A, &m, &n, &other));
    cr_assert_eq(n, 2);
    cr_assert_str_eq(m[0].key, "train_loss");
    cr_assert(m[0].points == 30 && m[0].last_step == 30);
    cr_assert_float_eq(m[0].last_value, 3.0, 1e-9);
    cr_assert_eq(other, 3); /* f_attn, m_act and resid_kurtosis at layer=1 */
    store_series_free(m, n);

    /* probes: layer 0 from summary, layer 1 from the last metric step */
    StoreProbe *pr;
    OK(store_read_probes(s, A, &pr, &n));
    cr_assert_eq(n, 2);
    cr_assert(pr[0].layer == 0 && pr[0].has_f && pr[0].has_m && pr[0].f_attn == 0.375 && pr[0].m_act == 12.5);
    cr_assert(pr[1].layer == 1 && pr[1].f_attn == 0.625 && pr[1].m_act == 77.5);
    cr_assert(!pr[0].has_k && pr[1].has_k && pr[1].kurt == 4.5);
    free(pr);

    StoreHist *h;
    OK(store_read_histograms(s, A, "gate", &h, &n));
    cr_assert_eq(n, 1);
    cr_assert(h[0].step == 30 && h[0].nbins == 4 && h[0].counts[1] == 40 && h[0].hi == 1);
    store_histograms_free(h, n);

    store_close(s);
    tmp_db_remove(&t);
}

/* Reading runs back: what an unknown, ambiguous, empty or hostile name
 * gets, and a stale running run, which reads as killed. */
Test(store, runs_read_back_errors_and_stale_runs) {
    TmpDb t;
    tmp_db(&t);
    Store *s = two_runs(t.db);
    const char *A = RUN_A, *B = RUN_B;
    StoreRunList l;
    StoreRunInfo r;
    /* errors: unknown, ambiguous prefix, empty */
    cr_assert_null(store_resolve_run(s, "nosuch"));
    cr_assert(strstr(store_errmsg(s), "no run matches 'nosuch'"), "%s", store_errmsg(s));
    cr_assert_null(store_resolve_run(s, "aaaa"));
    cr_assert(strstr(store_errmsg(s), "'aaaa' is ambiguous") && strstr(store_errmsg(s), A) &&
                  strstr(store_errmsg(s), B),
              "%s", store_errmsg(s));
    cr_assert_null(store_resolve_run(s, ""));
    cr_assert_null(store_resolve_run(s, "no\x1b[2Jsuch"));
    cr_assert(strstr(store_errmsg(s), "no run matches 'no\\x1b[2Jsuch'"), "%s", store_errmsg(s));
    cr_assert_eq(store_run_info(s, "nosuch", &r), -1);

    /* a stale running run reads as killed */
    OK(store_debug_set_heartbeat(s, B, 1000.0));
    OK(store_list_runs(s, &l));
    cr_assert_str_eq(list_find(&l, B)->status, "killed");
    store_run_list_free(&l);
    OK(store_run_info(s, B, &r));
    cr_assert_str_eq(r.effective_status, "killed");
    cr_assert_str_eq(r.status, "running");
    cr_assert(isnan(r.ended_at));
    store_run_info_free(&r);
    store_close(s);
    tmp_db_remove(&t);
}

/* `gated ls` and `gated show` on the same runs. */
Test(store, ls_and_show_report_runs) {
    TmpDb t;
    tmp_db(&t);
    Store *s = open_or_die(t.db);
    store_close(s);
    char *empty = capture_ls(t.db);
    cr_assert(strstr(empty, "(no runs"), "%s", empty);
    free(empty);
    s = two_runs(t.db);
    const char *A = RUN_A, *B = RUN_B;
    Provenance p = test_prov("hostA");

    char *ls = capture_ls(t.db);
    cr_assert(strstr(ls, "run id") && strstr(ls, "status") && strstr(ls, "val loss"), "%s", ls);
    const char *la = strstr(ls, A), *lb = strstr(ls, B);
    cr_assert(la && lb && la < lb, "%s", ls);
    char line[256];
    snprintf(line, sizeof line, "%.*s", (int)strcspn(la, "\n"), la);
    cr_assert(strstr(line, "sdpa-elementwise") && strstr(line, "finished") && strstr(line, " 30 ") &&
                  strstr(line, "3.1234"),
              "%s", line);
    snprintf(line, sizeof line, "%.*s", (int)strcspn(lb, "\n"), lb);
    cr_assert(strstr(line, "baseline") && strstr(line, "running") && strstr(line, " 7 ") &&
                  strstr(line, " - "),
              "%s", line);
    free(ls);

    /* by name, by exact id and by unique prefix: the same report */
    char err[1024];
    char *show = capture_show(t.db, "sdpa-elementwise", err, sizeof err);
    cr_assert_not_null(show, "%s", err);
    char *by_id = capture_show(t.db, A, err, sizeof err), *by_prefix = capture_show(t.db, "aaaa1", err, sizeof err);
    cr_assert_not_null(by_id);
    cr_assert_not_null(by_prefix);
    cr_assert_str_eq(show, by_id);
    cr_assert_str_eq(show, by_prefix);
    free(by_id);
    free(by_prefix);
    const char *const want[] = {
        A, "sdpa-elementwise", "finished", "seed        42", "threads     2",
        "gated train sdpa.yaml", "{\"model\":{\"gate\":\"sdpa\"}}", p.code_version, "(dirty)",
        "hostA", "Test CPU @ 1.00GHz", "gcc 12.2.0", "-O2 -march=native", "OpenBLAS 0.3.21",
        "val_loss    3.1234", "val_ppl     22.7500", "val_bpb     1.0625", "test_loss   3.2109",
        "tokens_per_s", "1234.5", "fast", "train_loss", "at step 30 (30 points)",
        "per-layer probes", "gate histogram (step 30, 4 bins over [0, 1], 70 values)",
        "########################################", /* the largest bin, full width */
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        cr_assert(strstr(show, want[i]), "show lacks '%s':\n%s", want[i], show);
    /* probes: layer 0 from summary, layer 1 from the last metric step */
    cr_assert(strstr(show, "  0            0.375        12.5           -\n"), "%s", show); /* no kurtosis: older run */
    cr_assert(strstr(show, "  1            0.625        77.5         4.5\n"), "%s", show);
    cr_assert(!strstr(show, "0.9 "), "an old probe step leaked:\n%s", show);
    cr_assert(!strstr(show, "step 10,"), "an old histogram leaked:\n%s", show);
    /* the val results appear once, in results, not again in summary */
    const char *first = strstr(show, "val_ppl");
    cr_assert(first && !strstr(first + 1, "val_ppl"), "%s", show);
    free(show);

    /* errors: unknown, ambiguous prefix, empty; nothing printed (capture_show asserts it) */
    cr_assert_null(capture_show(t.db, "nosuch", err, sizeof err));
    cr_assert(strstr(err, "no run matches 'nosuch'"), "%s", err);
    cr_assert_null(capture_show(t.db, "aaaa", err, sizeof err));
    cr_assert(strstr(err, "'aaaa' is ambiguous") && strstr(err, A) && strstr(err, B), "%s", err);
    cr_assert_null(capture_show(t.db, "", err, sizeof err));

    /* a name shared by two runs is ambiguous too */
    OK(store_run_begin(s, "cccc000000000000", "baseline", "{\"seed\":44}", 44, 1, &p, NULL));
    cr_assert_null(capture_show(t.db, "baseline", err, sizeof err));
    cr_assert(strstr(err, "name matches 2 runs"), "%s", err);
    char *b = capture_show(t.db, "aaaa9", err, sizeof err);
    cr_assert_not_null(b, "%s", err);
    cr_assert(strstr(b, "status      running"), "%s", b);
    free(b);

    /* a stale running run reads as killed in both reports */
    OK(store_debug_set_heartbeat(s, B, 1000.0));
    b = capture_show(t.db, B, err, sizeof err);
    cr_assert(b && strstr(b, "status      killed (recorded 'running'"), "%s", b ? b : err);
    free(b);
    ls = capture_ls(t.db);
    lb = strstr(ls, B);
    cr_assert(lb && strstr(lb, "killed"), "%s", ls);
    free(ls);
    store_close(s);
    tmp_db_remove(&t);
}

Test(store, provenance_fill_sets_every_field) {
    Provenance p;
    memset(&p, 0, sizeof p);
    p.git_dirty = 42;
    store_provenance_fill(&p);
    const char *f[] = {p.host,           p.cpu_model,      p.compiler,        p.cflags,
                       p.openblas_version, p.sqlite_version, p.libyaml_version, p.code_version};
    for (int i = 0; i < 8; i++) cr_assert(f[i] && f[i][0], "field %d empty", i);
    cr_assert_str_eq(p.sqlite_version, sqlite3_libversion());
    cr_assert(p.git_dirty >= -1 && p.git_dirty <= 1);
    cr_assert(strcmp(p.code_version, "unknown") == 0 || strlen(p.code_version) == 40, "%s",
              p.code_version);
    cr_assert_eq(strcmp(p.code_version, "unknown") == 0, p.git_dirty == -1);

    /* p == NULL in run_begin means this provenance */
    TmpDb t;
    tmp_db(&t);
    Store *s = open_or_die(t.db);
    OK(store_run_begin(s, RID, "auto", "{}", 1, 1, NULL, NULL));
    store_close(s);
    sqlite3 *db = raw_open(t.db);
    char *v = q_text(db, "SELECT sqlite_version FROM runs WHERE run_id = ?1", ARGS(RID));
    cr_assert_str_eq(v, sqlite3_libversion());
    free(v);
    raw_close(db);
    tmp_db_remove(&t);
}

/* ------------------------------------------------------------------ */
/* untrusted text: names, labels, anything read back from a file       */
/* ------------------------------------------------------------------ */

/* util/sysinfo.h. */
Test(store, sysinfo_reads_the_machine) {
    char t[] = "value \t\r\n", out[256];
    sysinfo_trim(t);
    cr_assert_str_eq(t, "value");
    cr_assert(sysinfo_compiler()[0]);
#if defined(__GNUC__) && !defined(__clang__)
    cr_assert_eq(strncmp(sysinfo_compiler(), "gcc ", 4), 0, "%s", sysinfo_compiler());
#endif
    sysinfo_cpu_model(out, sizeof out);
    cr_assert(out[0]);
    sysinfo_cpuinfo("no such key", out, sizeof out);
    cr_assert_str_eq(out, "");
    sysinfo_host(out, sizeof out);
    cr_assert(out[0]);
    int any = -1;
    cr_assert_eq(sysinfo_command("printf 'one  \\ntwo\\n'", out, sizeof out, &any), 0);
    cr_assert_str_eq(out, "one");
    cr_assert_eq(any, 1);
    cr_assert_eq(sysinfo_command("true", out, sizeof out, &any), 0);
    cr_assert(out[0] == '\0' && any == 0);
    cr_assert_eq(sysinfo_command("exit 3", out, sizeof out, NULL), -1);
}

/* lab/merge.h: an input with a name that is not printable text is refused
 * whole; dst itself is refused; a clean input merges once. */
Test(store, merge_from_checks_its_input) {
    TmpDb a, b;
    tmp_db(&a);
    tmp_db(&b);
    Store *s = open_or_die(a.db);
    Provenance p = test_prov("hostA");
    OK(store_run_begin(s, RID, "ok-name", "{\"seed\":1}", 1, 1, &p, NULL));
    OK(store_metric(s, RID, "train_loss", NULL, 1, 2.5));
    OK(store_summary(s, RID, "val_loss", NULL, 2.6, NULL));
    OK(store_summary(s, RID, "test_loss", NULL, 2.7, NULL));
    OK(store_run_end(s, RID, "finished", NULL, -1));
    store_close(s);
    sqlite3 *db = raw_open(a.db);
    raw_exec(db, "UPDATE runs SET name = 'bad' || char(27) || 'name'");
    raw_close(db);

    Store *d = open_or_die(b.db);
    char err[1024];
    cr_assert_eq(merge_from(d, a.db, err, sizeof err), -2);
    cr_assert(strstr(err, "refused, nothing merged: runs row 1 (run 0123456789abcdef): name \"bad\\x1bname\""), "%s",
              err);
    cr_assert_eq(store_count_rows(d, "runs"), 0);
    cr_assert_eq(store_count_rows(d, "metrics"), 0);
    cr_assert_eq(merge_from(d, b.db, err, sizeof err), -2);
    cr_assert(strstr(err, "is the output database"), "%s", err);

    db = raw_open(a.db);
    raw_exec(db, "UPDATE runs SET name = 'fixed'");
    raw_close(db);
    cr_assert_eq(merge_from(d, a.db, err, sizeof err), 0, "%s", err);
    cr_assert_str_eq(err, "");
    cr_assert_eq(merge_from(d, a.db, err, sizeof err), 0, "%s", err); /* idempotent */
    cr_assert_eq(store_count_rows(d, "runs"), 1);
    cr_assert_eq(store_count_rows(d, "metrics"), 1);
    store_close(d);
    tmp_db_remove(&a);
    tmp_db_remove(&b);
}

Test(store, names_must_be_printable_text) {
    static const struct {
        const char *s;
        const char *why; /* NULL: accepted */
        const char *shown;
    } cases[] = {
        {"G1-elementwise", NULL, "G1-elementwise"},
        {"lr=0.001,position=none s1", NULL, "lr=0.001,position=none s1"},
        {"caf\xc3\xa9-\xce\xb2-\xe2\x82\xac-\xf0\x9f\x98\x80", NULL, "caf\xc3\xa9-\xce\xb2-\xe2\x82\xac-\xf0\x9f\x98\x80"},
        {"x\n!touch PWNED\n", "contains a control character (\\x0a at byte 2)", "x\\x0a!touch PWNED\\x0a"},
        {"a\tb", "contains a control character (\\x09 at byte 2)", "a\\x09b"},
        {"\x1b[2Jred", "contains a control character (\\x1b at byte 1)", "\\x1b[2Jred"},
        {"cr\r", "contains a control character (\\x0d at byte 3)", "cr\\x0d"},
        {"del\x7f", "contains a control character (\\x7f at byte 4)", "del\\x7f"},
        {"c1\xc2\x9b" "2J", "contains a control character (\\xc2\\x9b at byte 3)", "c1\\xc2\\x9b2J"},
        {"bad\xff", "is not valid UTF-8 (\\xff at byte 4)", "bad\\xff"},
        {"\xc0\xaf-overlong", "is not valid UTF-8 (\\xc0 at byte 1)", "\\xc0\\xaf-overlong"},
        {"cut\xe2\x82", "is not valid UTF-8 (\\xe2 at byte 4)", "cut\\xe2\\x82"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char why[256], shown[256];
        int rc = store_name_check(cases[i].s, why, sizeof why);
        if (!cases[i].why) {
            cr_assert_eq(rc, 0, "case %zu refused: %s", i, why);
            cr_assert_str_eq(why, "");
        } else {
            cr_assert_eq(rc, -1, "case %zu accepted", i);
            char want[256];
            snprintf(want, sizeof want, "%s; names and labels must be printable text", cases[i].why);
            cr_assert_str_eq(why, want, "case %zu", i);
        }
        cr_assert_str_eq(store_escape(cases[i].s, shown, sizeof shown), cases[i].shown, "case %zu", i);
        char *d = store_escape_dup(cases[i].s);
        cr_assert_not_null(d);
        cr_assert_str_eq(d, cases[i].shown, "case %zu", i);
        free(d);
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        cr_assert_not_null(f);
        store_fput_escaped(f, cases[i].s);
        cr_assert_eq(fclose(f), 0);
        cr_assert_str_eq(buf, cases[i].shown, "case %zu", i);
        free(buf);
    }
    /* cut at a character boundary, always terminated */
    char small[6];
    cr_assert_str_eq(store_escape("abc\ndef", small, sizeof small), "abc");
    cr_assert_str_eq(store_escape("ab\xc3\xa9\xc3\xa9", small, sizeof small), "ab\xc3\xa9");
    cr_assert_str_eq(store_escape("x", small, 1), "");
    char *d = store_escape_dup(NULL);
    cr_assert_str_eq(d, "");
    free(d);

    /* the store refuses such names and labels: nothing is written */
    TmpDb t;
    tmp_db(&t);
    Store *s = open_or_die(t.db);
    Provenance p = test_prov("hostA");
    cr_assert_eq(store_run_begin(s, RID, "x\n!touch PWNED\n", "{}", 1, 1, &p, NULL), -1);
    cr_assert(strstr(store_errmsg(s), "run name \"x\\x0a!touch PWNED\\x0a\" contains a control character"), "%s",
              store_errmsg(s));
    cr_assert_eq(store_run_begin(s, "ab\x1b" "cd", "n", "{}", 1, 1, &p, NULL), -1);
    cr_assert(strstr(store_errmsg(s), "run id \"ab\\x1bcd\""), "%s", store_errmsg(s));
    StoreSweepRun r[2] = {{"aaaa", "ok", 1, 0, 1}, {"bbbb", "bad\nlabel", 1, 1, 0}};
    cr_assert_eq(store_sweep_record(s, "sw", 2, r, 2), -1);
    cr_assert(strstr(store_errmsg(s), "run 1: label \"bad\\x0alabel\" contains a control character"), "%s",
              store_errmsg(s));
    r[1].label = "fine";
    cr_assert_eq(store_sweep_record(s, "sw\x1b[2J", 2, r, 2), -1);
    cr_assert(strstr(store_errmsg(s), "sweep name \"sw\\x1b[2J\""), "%s", store_errmsg(s));
    cr_assert_eq(store_count_rows(s, "runs"), 0);
    cr_assert_eq(store_count_rows(s, "sweep_runs"), 0);
    OK(store_sweep_record(s, "sw", 2, r, 2));
    store_close(s);
    tmp_db_remove(&t);
}

/* A database written by another tool (or merged from one) may hold any
 * text: ls and show print it escaped, never raw escape codes or line breaks. */
Test(store, ls_and_show_escape_text_from_the_file) {
    TmpDb t;
    tmp_db(&t);
    Store *s = open_or_die(t.db);
    Provenance p = test_prov("hostA");
    OK(store_run_begin(s, RID, "plain", "{\"seed\":1}", 1, 1, &p, "gated train x.yaml"));
    OK(store_summary(s, RID, "note", NULL, 1, "ok"));
    OK(store_metric(s, RID, "train_loss", NULL, 1, 2.5));
    OK(store_run_end(s, RID, "failed", "boom", -1));
    store_close(s);
    sqlite3 *db = raw_open(t.db);
    raw_exec(db, "UPDATE runs SET name = 'evil' || char(27) || '[2J' || char(10) || 'line2',"
                 " host = 'h' || char(27) || ']0;title' || char(7), argv = 'a' || char(13) || 'b',"
                 " error_text = 'e' || char(10) || 'f', cpu_model = 'c' || char(155) || 'd'");
    raw_exec(db, "UPDATE summary SET text = 't' || char(10) || 'u', context = 'c' || char(27)");
    raw_exec(db, "UPDATE metrics SET key = 'k' || char(27) || '[31m'");
    raw_close(db);

    char *ls = capture_ls(t.db);
    cr_assert(!has_raw_control(ls), "raw control byte in ls:\n%s", ls);
    cr_assert_eq(count_lines(ls), 2, "a name broke the table's lines:\n%s", ls);
    cr_assert(strstr(ls, "evil\\x1b[2J\\x0aline2"), "%s", ls);
    free(ls);
    char err[1024];
    char *show = capture_show(t.db, RID, err, sizeof err);
    cr_assert_not_null(show, "%s", err);
    cr_assert(!has_raw_control(show), "raw control byte in show:\n%s", show);
    static const char *const want[] = {
        "name        evil\\x1b[2J\\x0aline2\n", "host        h\\x1b]0;title\\x07\n", "argv        a\\x0db\n",
        "error       e\\x0af\n", "cpu         c\\xc2\\x9bd\n", "note[c\\x1b]", "t\\x0au\n", "k\\x1b[31m",
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        cr_assert(strstr(show, want[i]), "show lacks '%s':\n%s", want[i], show);
    free(show);
    /* an argument echoed in a message is escaped too */
    cr_assert_null(capture_show(t.db, "no\x1b[2Jsuch", err, sizeof err));
    cr_assert(strstr(err, "no run matches 'no\\x1b[2Jsuch'"), "%s", err);
    cr_assert(!has_raw_control(err), "raw control byte in the message: %s", err);
    tmp_db_remove(&t);
}

Test(store, read_only_open_writes_nothing) {
    TmpDb t;
    tmp_db(&t);
    rollback_db(t.db, 1);
    size_t n0;
    unsigned char *before = read_all(t.db, &n0);

    Store *s = NULL;
    char err[512];
    cr_assert_eq(store_open_ro(&s, t.db, err, sizeof err), 0, "%s", err);
    ro_read_all(s);
    cr_assert_eq(store_count_rows(s, "sweep_runs"), 1);
    /* writing through it fails cleanly */
    Provenance p = test_prov("hostA");
    cr_assert_eq(store_run_begin(s, "ffff000000000000", "w", "{}", 1, 1, &p, NULL), -1);
    cr_assert(strstr(store_errmsg(s), "cannot be written (a read-only"), "%s", store_errmsg(s));
    OK(store_metric(s, RID, "x", NULL, 1, 1.0));
    cr_assert_eq(store_flush(s), -1);
    store_close(s);
    cr_assert(same_bytes(before, n0, t.db), "a read-only open changed the file");
    assert_no_side_files(t.db);
    sqlite3 *db = raw_open(t.db);
    char *mode = q_text(db, "PRAGMA journal_mode", NULL);
    cr_assert_str_eq(mode, "delete", "the journal mode was switched");
    free(mode);
    raw_close(db);
    free(before);
    tmp_db_remove(&t);

    /* a database from before sweep_runs: readable (an empty table), not migrated */
    tmp_db(&t);
    rollback_db(t.db, 0);
    before = read_all(t.db, &n0);
    cr_assert_eq(store_open_ro(&s, t.db, err, sizeof err), 0, "%s", err);
    cr_assert_eq(store_count_rows(s, "sweep_runs"), 0);
    char (*ids)[17] = NULL;
    int n = -1;
    OK(store_sweep_finished(s, "ro", &ids, &n));
    cr_assert_eq(n, 0);
    free(ids);
    store_close(s);
    cr_assert(same_bytes(before, n0, t.db), "a read-only open migrated the file");
    assert_no_side_files(t.db);
    db = raw_open(t.db);
    cr_assert_eq(q_int(db, "SELECT count(*) FROM sqlite_master WHERE name = ?1", ARGS("sweep_runs")), 0);
    raw_close(db);
    free(before);

    /* where the process cannot write (not testable as root, who may write anyway) */
    if (geteuid() != 0) {
        cr_assert_eq(chmod(t.db, 0444), 0);
        cr_assert_eq(chmod(t.dir, 0555), 0);
        cr_assert_eq(store_open_ro(&s, t.db, err, sizeof err), 0, "%s", err);
        ro_read_all(s);
        store_close(s);
        cr_assert_eq(chmod(t.dir, 0755), 0);
        cr_assert_eq(chmod(t.db, 0644), 0);
    }
    tmp_db_remove(&t);

    /* missing: an error, nothing created; an empty file: not a gated database, left empty */
    tmp_db(&t);
    s = (Store *)0x1;
    cr_assert_eq(store_open_ro(&s, t.db, err, sizeof err), -2);
    cr_assert_null(s);
    char want[256];
    snprintf(want, sizeof want, "%s: no such database", t.db);
    cr_assert_str_eq(err, want);
    cr_assert(!path_exists(t.db), "a read-only open created the database");
    FILE *f = fopen(t.db, "w");
    cr_assert_not_null(f);
    cr_assert_eq(fclose(f), 0);
    cr_assert_eq(store_open_ro(&s, t.db, err, sizeof err), -2);
    snprintf(want, sizeof want, "%s: not a gated database (empty)", t.db);
    cr_assert_str_eq(err, want);
    struct stat sb;
    cr_assert_eq(stat(t.db, &sb), 0);
    cr_assert_eq(sb.st_size, 0, "the empty file was written");
    assert_no_side_files(t.db);
    tmp_db_remove(&t);
}

/* The reading commands open the database read-only: a rollback-journal
 * database keeps its bytes (no switch to WAL), and a missing one is an
 * error (exit 2) that creates nothing, for eval too. */
Test(store, reading_commands_change_and_create_nothing) {
    const char *bin = getenv("GATED_BIN");
    if (!bin || access(bin, X_OK) != 0) cr_skip_test("GATED_BIN is not set");
    TmpDb t;
    tmp_db(&t);
    rollback_db(t.db, 1);
    size_t n0;
    unsigned char *before = read_all(t.db, &n0);
    char out[8192], rep[128];
    snprintf(rep, sizeof rep, "%s/rep", t.dir);
    int rc = run_gated("ls --db '%s'%s", t.db, "", out, sizeof out);
    cr_assert_eq(rc, 0, "ls: %d: %s", rc, out);
    cr_assert(strstr(out, "ro-run"), "%s", out);
    rc = run_gated("show ro-run --db '%s'%s", t.db, "", out, sizeof out);
    cr_assert_eq(rc, 0, "show: %d: %s", rc, out);
    rc = run_gated("report --db '%s' --out '%s' --no-plots", t.db, rep, out, sizeof out);
    cr_assert_eq(rc, 0, "report: %d: %s", rc, out);
    rc = run_gated("report --db '%s' --out '%s' --format csv --no-plots", t.db, rep, out, sizeof out);
    cr_assert_eq(rc, 0, "report: %d: %s", rc, out);
    /* eval's look-up by name reads the database (and then finds no checkpoint) */
    rc = run_gated("eval ro-run --lengths 16 --db '%s' --ckpt '%s'", t.db, t.dir, out, sizeof out);
    cr_assert_eq(rc, 2, "eval: %d: %s", rc, out);
    cr_assert(strstr(out, "no checkpoint"), "%s", out);
    cr_assert(same_bytes(before, n0, t.db), "a reading command changed the database");
    assert_no_side_files(t.db);
    free(before);

    /* a missing database: exit 2, nothing created */
    char missing[160];
    snprintf(missing, sizeof missing, "%s/missing.db", t.dir);
    static const char *const cmds[] = {
        "ls --db '%s'%s", "show x --db '%s'%s", "report --db '%s' --out '%s'",
        "eval abc --lengths 128 --db '%s'%s", "eval --sweep s --lengths 128 --db '%s'%s",
        "sweep experiments/smoke.yaml --dry-run --db '%s'%s",
    };
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        rc = run_gated(cmds[i], missing, strstr(cmds[i], "--out") ? rep : "", out, sizeof out);
        if (i == 5) /* a dry run of a new sweep is fine without a database */
            cr_assert_eq(rc, 0, "%s: %d: %s", cmds[i], rc, out);
        else {
            cr_assert_eq(rc, 2, "%s: %d: %s", cmds[i], rc, out);
            cr_assert(strstr(out, "no such database"), "%s: %s", cmds[i], out);
        }
        cr_assert(!path_exists(missing), "%s created the database", cmds[i]);
        assert_no_side_files(missing);
    }
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", t.dir);
    cr_assert_eq(system(cmd), 0);
}
