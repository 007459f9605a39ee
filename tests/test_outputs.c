/*
 * test_outputs.c — the files `gated report` writes, against what an
 * attacker or an accident can do to its output folder (issue 39):
 *
 *   planted links: every file of a report (report.md, SWEEP.csv and .tex
 *   with their sections' files, the plots' NAME.dat, .gp, .svg, .png,
 *   plots/gnuplot.log) replaced by a symbolic link to a victim file: a rerun
 *   replaces the links and never writes a victim; a dangling link is
 *   replaced too; plots/ as a link to another folder is refused;
 *   a full disk (an 8 MiB tmpfs, root only): the rerun fails naming the
 *   file and the cause, and every file of the previous report is as it
 *   was;
 *   gnuplot exiting 0 with an incomplete image (as on a full disk): the
 *   report names the image and keeps the previous one.
 */
#include <criterion/criterion.h>

#include <dirent.h>
#include <sqlite3.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "report_fx.h"
#include "testutil.h"

/* The regular files under dir and dir/plots (names relative to dir) into
 * names (at most cap); their count. */
static int list_files(const char *dir, char names[][128], int cap) {
    int n = 0;
    static const char *const sub[2] = {"", "plots/"};
    for (int k = 0; k < 2; k++) {
        char d[256];
        snprintf(d, sizeof d, "%s/%s", dir, sub[k]);
        DIR *dd = opendir(d);
        if (!dd) continue;
        struct dirent *e;
        while ((e = readdir(dd)) && n < cap) {
            char p[512];
            struct stat sb;
            snprintf(p, sizeof p, "%s%s", d, e->d_name);
            if (e->d_name[0] != '.' && lstat(p, &sb) == 0 && S_ISREG(sb.st_mode))
                cr_assert_lt(snprintf(names[n++], 128, "%s%s", sub[k], e->d_name), 128);
        }
        closedir(dd);
    }
    return n;
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s: %s", path, strerror(errno));
    fputs(text, f);
    cr_assert_eq(fclose(f), 0);
}

/* Report once in fmt, replace every file it wrote by a link to a victim
 * file of its own, report again: the victims are untouched and each name
 * is a regular file again. */
static void links_replaced(ReportFormat fmt) {
    Fx fx;
    fixture(&fx);
    char err[1024], names[200][128], victims[256];
    cr_assert_eq(run_report(&fx, fmt, NULL, NULL, NULL, err, sizeof err), 0, "%s", err);
    int n = list_files(fx.out, names, 200);
    cr_assert_gt(n, fmt == REPORT_MD ? 3 : 2, "only %d files written", n);
    snprintf(victims, sizeof victims, "%s/victims", fx.dir);
    cr_assert_eq(mkdir(victims, 0777), 0);
    for (int i = 0; i < n; i++) {
        char p[512], v[512];
        snprintf(p, sizeof p, "%s/%s", fx.out, names[i]);
        snprintf(v, sizeof v, "%s/v%d", victims, i);
        write_text(v, "precious\n");
        cr_assert_eq(unlink(p), 0);
        cr_assert_eq(symlink(v, p), 0);
    }
    char dangling[512];
    snprintf(dangling, sizeof dangling, "%s/gone", victims);
    char p0[512];
    snprintf(p0, sizeof p0, "%s/%s", fx.out, names[0]);
    cr_assert_eq(unlink(p0), 0);
    cr_assert_eq(symlink(dangling, p0), 0); /* a link to nothing: not made through it */
    cr_assert_eq(run_report(&fx, fmt, NULL, NULL, NULL, err, sizeof err), 0, "%s", err);
    for (int i = 0; i < n; i++) {
        char p[512], v[512];
        snprintf(p, sizeof p, "%s/%s", fx.out, names[i]);
        snprintf(v, sizeof v, "%s/v%d", victims, i);
        char *t = test_read_file(v, NULL);
        cr_expect_str_eq(t, "precious\n", "%s: written through the link to %s", names[i], v);
        free(t);
        struct stat sb;
        cr_expect(lstat(p, &sb) == 0 && S_ISREG(sb.st_mode), "%s is not a regular file", names[i]);
    }
    cr_expect_neq(access(dangling, F_OK), 0, "a file was made through a dangling link");
    fx_rm(&fx);
}

Test(outputs, report_md_replaces_planted_links, .timeout = 120) { links_replaced(REPORT_MD); }
Test(outputs, report_csv_replaces_planted_links, .timeout = 120) { links_replaced(REPORT_CSV); }
Test(outputs, report_tex_replaces_planted_links, .timeout = 120) { links_replaced(REPORT_TEX); }

/* plots/ as a link to another folder: refused, nothing written there. */
Test(outputs, report_refuses_a_linked_plots_folder, .timeout = 60) {
    Fx fx;
    fixture(&fx);
    char err[1024], other[256], p[256];
    snprintf(other, sizeof other, "%s/elsewhere", fx.dir);
    cr_assert_eq(mkdir(other, 0777), 0);
    cr_assert_eq(mkdir(fx.out, 0777), 0);
    snprintf(p, sizeof p, "%s/plots", fx.out);
    cr_assert_eq(symlink(other, p), 0);
    cr_assert_neq(run_report(&fx, REPORT_MD, NULL, NULL, NULL, err, sizeof err), 0);
    assert_has(err, "symbolic link");
    char names[8][128];
    cr_expect_eq(list_files(other, names, 8), 0, "a file was written into the linked folder");
    fx_rm(&fx);
}

/* The bytes of every file of names under dir, concatenated with their
 * names (heap). */
static char *snapshot(const char *dir, char names[][128], int n) {
    size_t cap = 1, len = 0;
    char *all = calloc(1, 1);
    cr_assert_not_null(all);
    for (int i = 0; i < n; i++) {
        char p[512];
        size_t k;
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        char *t = test_read_file(p, &k);
        all = realloc(all, cap += k + 160);
        cr_assert_not_null(all);
        len += (size_t)snprintf(all + len, cap - len, "== %s %zu\n", names[i], k);
        memcpy(all + len, t, k);
        len += k;
        all[len] = '\0';
        free(t);
    }
    return all;
}

/* A full disk: the rerun fails with the file and the cause named, and the
 * previous report is intact, byte for byte (issue 39, item 7). */
/* The tmpfs of the test below, unmounted by its fini should an assertion
 * end the test. */
static char small_fs[160];
static void umount_small_fs(void) {
    if (small_fs[0]) (void)umount(small_fs);
    small_fs[0] = '\0';
}

Test(outputs, report_on_a_full_disk_keeps_the_previous_one, .timeout = 120, .fini = umount_small_fs) {
    Fx fx;
    fixture(&fx);
    char mnt[160], err[1024], names[200][128];
    snprintf(mnt, sizeof mnt, "%s/small", fx.dir);
    cr_assert_eq(mkdir(mnt, 0777), 0);
    if (mount("tmpfs", mnt, "tmpfs", 0, "size=8m") != 0) {
        fx_rm(&fx);
        cr_skip_test("mount tmpfs: %s (needs root): the full-disk case is not run", strerror(errno));
    }
    snprintf(small_fs, sizeof small_fs, "%s", mnt);
    cr_assert_lt(snprintf(fx.out, sizeof fx.out, "%s/out", mnt), (int)sizeof fx.out);
    cr_assert_eq(run_report(&fx, REPORT_MD, NULL, NULL, NULL, err, sizeof err), 0, "%s", err);
    int n = list_files(fx.out, names, 200);
    char *before = snapshot(fx.out, names, n);
    char fill[256];
    snprintf(fill, sizeof fill, "%s/fill", mnt);
    FILE *f = fopen(fill, "w");
    cr_assert_not_null(f);
    static char block[4096];
    while (fwrite(block, 1, sizeof block, f) == sizeof block && fflush(f) == 0) {}
    fclose(f);
    char *log = NULL;
    int rc = run_report(&fx, REPORT_MD, NULL, NULL, &log, err, sizeof err);
    cr_expect_neq(rc, REPORT_OK, "a report on a full disk succeeded");
    cr_expect(strstr(err, "No space left on device") && strstr(err, fx.out), "unclear: %s\nlog: %s", err, log);
    char *after = snapshot(fx.out, names, n);
    cr_expect_str_eq(after, before, "the previous report was changed");
    char left[200][128];
    cr_expect_eq(list_files(fx.out, left, 200), n, "files were added or removed");
    free(before), free(after), free(log);
    cr_assert_eq(umount(mnt), 0);
    small_fs[0] = '\0';
    fx_rm(&fx);
}

/* gnuplot that exits 0 having written half an SVG (what a full disk does
 * to it): the plot is reported failed with the image named, and the
 * previous image stays. */
Test(outputs, gnuplot_incomplete_image_is_named, .timeout = 120) {
    if (!have_gnuplot()) cr_skip_test("no gnuplot");
    Fx fx;
    fixture(&fx);
    char err[1024], fake[256], svg[512], names[200][128];
    cr_assert_eq(run_report(&fx, REPORT_MD, NULL, NULL, NULL, err, sizeof err), 0, "%s", err);
    int n = list_files(fx.out, names, 200), k = -1;
    for (int i = 0; i < n; i++)
        if (strstr(names[i], ".svg")) k = i;
    cr_assert_geq(k, 0, "no SVG was made");
    snprintf(svg, sizeof svg, "%s/%s", fx.out, names[k]);
    char *old = test_read_file(svg, NULL);
    snprintf(fake, sizeof fake, "%s/gnuplot", fx.dir);
    /* the terminal probes (-e) succeed; a script run writes a cut SVG */
    write_text(fake, "#!/bin/sh\n[ \"$1\" = -e ] && exit 0\n"
                     "out=$(sed -n \"s/^set output '\\(.*\\.svg\\)'/\\1/p\" \"$1\")\n"
                     "printf '<svg><g>' > \"$out\"\nexit 0\n");
    cr_assert_eq(chmod(fake, 0755), 0);
    char *log = NULL;
    cr_expect_neq(run_report(&fx, REPORT_MD, NULL, fake, &log, err, sizeof err), REPORT_OK);
    assert_has(log, "incomplete or empty");
    assert_has(log, "is the disk full");
    char *now = test_read_file(svg, NULL);
    cr_expect_str_eq(now, old, "the previous image was replaced by a cut one");
    char *gl = out_file(&fx, "plots/gnuplot.log");
    assert_has(gl, "incomplete or empty");
    free(gl), free(now), free(old), free(log);
    fx_rm(&fx);
}

/* A sweep's logs/NAME.log planted as a link to a victim: the sweep
 * replaces the link and never writes or truncates the victim; logs/ as a
 * link to another folder is refused. */
Test(outputs, sweep_log_replaces_a_planted_link, .timeout = 120) {
    char dir[64], p[256], victim[256], *out = NULL;
    test_tmpdir(dir, sizeof dir);
    snprintf(p, sizeof p, "%s/base.yaml", dir);
    write_text(p, "model: {vocab_size: 257, d_model: 32, n_layer: 1, n_head: 4, d_ff: 48, seq_len: 16}\n"
                  "train: {batch: 2, steps: 2, warmup: 1, eval_every: 2, eval_windows: 2, seed: 7}\n"
                  "data: {corpus: synthetic}\n");
    snprintf(p, sizeof p, "%s/k.yaml", dir);
    write_text(p, "name: k\nbase: base.yaml\nvariants: [{label: a}]\n");
    snprintf(victim, sizeof victim, "%s/victim", dir);
    write_text(victim, "precious\n");
    snprintf(p, sizeof p, "%s/logs", dir);
    cr_assert_eq(mkdir(p, 0777), 0);
    snprintf(p, sizeof p, "%s/logs/k-a-s7.log", dir);
    cr_assert_eq(symlink(victim, p), 0);
    const char *args[] = {"sweep", "k.yaml", "--db", "s.db", NULL};
    int rc = test_gated(dir, args, NULL, 100, &out);
    cr_expect_eq(rc, 0, "%s", out);
    free(out);
    char *t = test_read_file(victim, NULL);
    cr_expect_str_eq(t, "precious\n", "the sweep wrote through logs/k-a-s7.log");
    free(t);
    struct stat sb;
    cr_expect(lstat(p, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 0, "the log is not a new file");

    /* logs/ as a link: refused before any run */
    char other[256], cmd[300];
    snprintf(other, sizeof other, "%s/elsewhere", dir);
    cr_assert_eq(mkdir(other, 0777), 0);
    snprintf(p, sizeof p, "%s/logs", dir);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", p);
    cr_assert_eq(system(cmd), 0);
    cr_assert_eq(symlink(other, p), 0);
    const char *again[] = {"sweep", "k.yaml", "--db", "s2.db", NULL};
    rc = test_gated(dir, again, NULL, 100, &out);
    cr_expect_neq(rc, 0, "a linked logs/ was used: %s", out);
    cr_expect(strstr(out, "symbolic link"), "%s", out);
    free(out);
    char names[8][128];
    cr_expect_eq(list_files(other, names, 8), 0, "a log was written into the linked folder");
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

/* A sweep whose name is longer than a file name can be (merged from
 * elsewhere, from before the limit): its files get a cut name and the
 * report succeeds for every sweep (issue 39, item 11: "File name too
 * long" sank them all). */
Test(outputs, a_sweep_name_too_long_for_a_file_name_sinks_nothing, .timeout = 120) {
    Fx fx;
    fixture(&fx);
    char sql[600], err[1024];
    snprintf(sql, sizeof sql, "UPDATE sweep_runs SET sweep = '%0300d' WHERE sweep = 'lrv'", 0);
    fx_sql(&fx, sql);
    cr_assert_eq(run_report(&fx, REPORT_MD, NULL, NULL, NULL, err, sizeof err), 0, "%s", err);
    cr_assert_eq(run_report(&fx, REPORT_CSV, NULL, NULL, NULL, err, sizeof err), 0, "%s", err);
    char *csv = out_file(&fx, "main.csv");
    free(csv);
    fx_rm(&fx);
}

/* One sweep's file cannot be written (lr.csv is a directory): the other
 * sweeps' files are written, and the report fails naming the sweep. */
Test(outputs, one_sweep_failing_does_not_sink_the_others, .timeout = 120) {
    Fx fx;
    fixture(&fx);
    char p[256], err[1024], *log = NULL;
    cr_assert_eq(mkdir(fx.out, 0777), 0);
    snprintf(p, sizeof p, "%s/lr.csv", fx.out);
    cr_assert_eq(mkdir(p, 0777), 0);
    cr_expect_eq(run_report(&fx, REPORT_CSV, NULL, NULL, &log, err, sizeof err), REPORT_RUNTIME, "%s", err);
    assert_has(err, "1 sweep");
    assert_has(log, "sweep lr:");
    snprintf(p, sizeof p, "%s/main.csv", fx.out);
    cr_expect(exists(p), "main.csv was not written");
    snprintf(p, sizeof p, "%s/lrv.csv", fx.out);
    cr_expect(exists(p), "lrv.csv was not written");
    free(log);
    fx_rm(&fx);
}

/* Whether text holds a bidirectional control or U+2028/U+2029 raw. */
static int raw_bidi(const char *text) {
    for (const unsigned char *c = (const unsigned char *)text; *c; c++)
        if (c[0] == 0xe2 && c[1] == 0x80 && ((c[2] >= 0xaa && c[2] <= 0xae) || c[2] == 0xa8 || c[2] == 0xa9))
            return 1;
        else if (c[0] == 0xe2 && c[1] == 0x81 && c[2] >= 0xa6 && c[2] <= 0xa9)
            return 1;
    return 0;
}

/* Names and labels holding U+202E (right-to-left override), U+2066 and
 * U+2028 (written by raw SQL: the store refuses them) reach neither a
 * terminal (ls, show, --json, export) nor a report raw (issue 39, item
 * 12). */
Test(outputs, bidi_overrides_and_line_separators_are_escaped, .timeout = 120) {
    Fx fx;
    fixture(&fx);
    fx_sql(&fx, "UPDATE runs SET name = name || char(0x202e) || 'gpj.exe' || char(0x2028) || char(0x2066);"
                "UPDATE sweep_runs SET label = label || char(0x202e) || 'x' WHERE sweep = 'main'");
    char err[1024], *out = NULL;
    cr_assert_eq(run_report(&fx, REPORT_MD, NULL, NULL, NULL, err, sizeof err), 0, "%s", err);
    char *md = out_file(&fx, "report.md");
    cr_expect(!raw_bidi(md), "report.md holds a raw bidi control");
    assert_has(md, "\\xe2\\x80\\xae");
    free(md);
    cr_assert_eq(run_report(&fx, REPORT_CSV, NULL, NULL, NULL, err, sizeof err), 0, "%s", err);
    char *csv = out_file(&fx, "main.csv");
    cr_expect(!raw_bidi(csv), "main.csv holds a raw bidi control");
    free(csv);
    const char *ls[] = {"ls", "--db", fx.db, NULL};
    const char *lsj[] = {"ls", "--db", fx.db, "--json", NULL};
    const char *exp[] = {"export", "--db", fx.db, "--config", "none", NULL};
    const char *expj[] = {"export", "--db", fx.db, "--format", "jsonl", NULL};
    const char *const *cmds[] = {ls, lsj, exp, expj};
    for (int i = 0; i < 4; i++) {
        cr_expect_eq(test_gated(NULL, cmds[i], NULL, 60, &out), 0, "%s", out);
        cr_expect(!raw_bidi(out), "gated %s%s printed a raw bidi control", cmds[i][0], i % 2 ? " (json)" : "");
        cr_expect(strstr(out, i % 2 ? "\\u202e" : "\\xe2\\x80\\xae"), "not escaped visibly: %.300s", out);
        free(out);
    }
    fx_rm(&fx);
}

/* Whether text holds SQL (what an error about a database must not). */
static int has_sql(const char *text) {
    static const char *const words[] = {"SELECT ", "INSERT ", "UPDATE ", "prepare \"", "BEGIN IMMEDIATE", "\"COMMIT\""};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (strstr(text, words[i])) return 1;
    return 0;
}

/* One exit-code table (docs/cli.md), errors in words (issue 39, item 10):
 * a damaged database (the metrics table's pages overwritten; the metrics
 * table dropped) is exit 2 for ls, export and report alike, and no message
 * quotes SQL. */
Test(outputs, damaged_databases_exit_2_in_words_for_every_reader, .timeout = 120) {
    Fx fx;
    fixture(&fx);
    char copy[256], cmd[600];
    snprintf(copy, sizeof copy, "%s/dropped.db", fx.dir);
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", fx.db, copy);
    cr_assert_eq(system(cmd), 0);
    /* the pages of metrics and its indexes overwritten */
    sqlite3 *db;
    cr_assert_eq(sqlite3_open(fx.db, &db), SQLITE_OK);
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(db, "SELECT rootpage FROM sqlite_master WHERE tbl_name = 'metrics' AND rootpage > 0",
                                    -1, &st, NULL), SQLITE_OK);
    long pages[8];
    int np = 0;
    while (np < 8 && sqlite3_step(st) == SQLITE_ROW) pages[np++] = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    int psz = 4096;
    cr_assert_eq(sqlite3_prepare_v2(db, "PRAGMA page_size", -1, &st, NULL), SQLITE_OK);
    if (sqlite3_step(st) == SQLITE_ROW) psz = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    cr_assert_geq(np, 2);
    FILE *f = fopen(fx.db, "r+b");
    cr_assert_not_null(f);
    for (int i = 0; i < np; i++) {
        static const char junk[16] = "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff";
        cr_assert_eq(fseek(f, (pages[i] - 1) * psz, SEEK_SET), 0);
        cr_assert_eq(fwrite(junk, 1, sizeof junk, f), sizeof junk);
    }
    cr_assert_eq(fclose(f), 0);
    /* another copy: the metrics table gone (its views first) */
    cr_assert_eq(sqlite3_open(copy, &db), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(db, "DROP VIEW final_metrics; DROP VIEW sweep_metrics; DROP VIEW run_metrics;"
                                  " DROP TABLE metrics", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    char out_dir[256];
    snprintf(out_dir, sizeof out_dir, "%s/rep", fx.dir);
    const char *dbs[2] = {fx.db, copy}, *want[2] = {"damaged", "it has no table metrics"};
    for (int d = 0; d < 2; d++) {
        const char *ls[] = {"ls", "--db", dbs[d], NULL};
        const char *exp[] = {"export", "--db", dbs[d], NULL};
        const char *rep[] = {"report", "--db", dbs[d], "--out", out_dir, "--no-plots", NULL};
        const char *const *cmds[] = {ls, exp, rep};
        for (int c = 0; c < 3; c++) {
            char *out = NULL;
            int rc = test_gated(NULL, cmds[c], NULL, 60, &out);
            cr_expect_eq(rc, 2, "gated %s on %s: exit %d: %s", cmds[c][0], dbs[d], rc, out);
            cr_expect(strstr(out, want[d]), "gated %s: %s", cmds[c][0], out);
            cr_expect(!has_sql(out), "gated %s quotes SQL: %s", cmds[c][0], out);
            free(out);
        }
    }
    fx_rm(&fx);
}
