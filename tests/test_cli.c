/*
 * test_cli.c — the command line itself, through GATED_BIN (skipped without
 * it): every command answers -h / --help / gated help CMD with its usage on
 * stdout and exit 0, and --version; a missing value or an unknown option
 * is named, with the command's short usage, exit 2; a sweep file given to
 * train says to use gated sweep; sweep --count; the default database is an
 * ignored path ($GATED_DB when set), so a training run without --db leaves
 * a checkout's `git status` clean.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lab/sweep/sweep.h"
#include "testutil.h"
#include "util/util.h"

/* Every command of `gated`, as `gated --help` lists them. */
static const char *const COMMANDS[] = {"info", "xcheck", "train", "sweep", "merge",   "eval", "report",
                                       "export", "ls",   "show",  "bench", "compare", "help"};
enum { NCOMMANDS = sizeof COMMANDS / sizeof COMMANDS[0] };

typedef struct {
    int status; /* exit status; -1 when it did not exit */
    char *out, *err;
} Result;

static void result_free(Result *r) {
    free(r->out);
    free(r->err);
}

/* `$GATED_BIN ARGV...` run directly (no shell) in dir (NULL: here), with
 * GATED_DB set to gated_db (NULL: unset): exit status, stdout, stderr. */
static Result gated_in(const char *dir, const char *gated_db, const char *const *args) {
    const char *bin = gated_bin();
    char *argv[32];
    int n = 0;
    argv[n++] = (char *)bin;
    for (; args[n - 1]; n++) {
        cr_assert_lt(n, 31);
        argv[n] = (char *)args[n - 1];
    }
    argv[n] = NULL;
    FILE *o = tmpfile(), *e = tmpfile();
    cr_assert(o && e);
    fflush(NULL);
    pid_t pid = fork();
    cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        if (dir && chdir(dir) != 0) _exit(126);
        if (gated_db)
            setenv("GATED_DB", gated_db, 1);
        else
            unsetenv("GATED_DB");
        dup2(fileno(o), 1);
        dup2(fileno(e), 2);
        execv(bin, argv);
        _exit(127);
    }
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    Result r = {WIFEXITED(st) ? WEXITSTATUS(st) : -1, test_read_stream(o, NULL), test_read_stream(e, NULL)};
    fclose(o);
    fclose(e);
    return r;
}

static Result gated(const char *const *args) { return gated_in(NULL, NULL, args); }

static int starts_with(const char *s, const char *prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

static int count_lines(const char *s) {
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

Test(cli, every_command_answers_help_and_version) {
    Result top = gated((const char *[]){"--help", NULL});
    cr_assert_eq(top.status, 0, "%s", top.err);
    cr_assert_str_eq(top.err, "");
    cr_assert_not_null(strstr(top.out, "\nExit status and output streams:\n"), "%s", top.out);
    for (int i = 0; i < NCOMMANDS; i++) {
        char line[64];
        snprintf(line, sizeof line, "\n  %-8s ", COMMANDS[i]);
        cr_expect_not_null(strstr(top.out, line), "gated --help does not list %s", COMMANDS[i]);
    }
    const char *forms[][2] = {{"-h", NULL}, {"help", NULL}};
    for (int f = 0; f < 2; f++) {
        Result r = gated((const char *[]){forms[f][0], NULL});
        cr_expect_eq(r.status, 0);
        cr_expect_str_eq(r.out, top.out, "gated %s differs from gated --help", forms[f][0]);
        result_free(&r);
    }
    for (int i = 0; i < NCOMMANDS; i++) {
        const char *c = COMMANDS[i];
        char usage[64];
        snprintf(usage, sizeof usage, "usage: gated %s", c);
        Result help = gated((const char *[]){c, "--help", NULL});
        cr_expect_eq(help.status, 0, "%s --help: exit %d: %s", c, help.status, help.err);
        cr_expect_str_eq(help.err, "", "%s --help wrote to stderr", c);
        cr_expect(starts_with(help.out, usage), "%s --help: %s", c, help.out);
        cr_expect_not_null(strstr(help.out, "\n  -h, --help "), "%s --help: %s", c, help.out);
        Result h = gated((const char *[]){c, "-h", NULL});
        Result via = gated((const char *[]){"help", c, NULL});
        cr_expect(h.status == 0 && via.status == 0, "%s: -h exit %d, help exit %d", c, h.status, via.status);
        cr_expect_str_eq(h.out, help.out, "%s -h differs from --help", c);
        cr_expect_str_eq(via.out, help.out, "gated help %s differs from --help", c);
        Result v = gated((const char *[]){c, "--version", NULL});
        cr_expect_eq(v.status, 0, "%s --version: exit %d: %s", c, v.status, v.err);
        cr_expect(starts_with(v.out, "gated ") && count_lines(v.out) == 1, "%s --version: %s", c, v.out);
        result_free(&help), result_free(&h), result_free(&via), result_free(&v);
    }
    Result v = gated((const char *[]){"--version", NULL});
    cr_expect(v.status == 0 && starts_with(v.out, "gated ") && count_lines(v.out) == 1, "--version: %s", v.out);
    result_free(&v);
    result_free(&top);
}

/* A missing value or a bad option: one line naming it, then the command's
 * own short usage (not the overview), exit 2, nothing on stdout. */
static void expect_usage_error(const char *const *args, const char *cmd, const char *msg) {
    Result r = gated(args);
    char want[256], usage[64];
    snprintf(want, sizeof want, "gated %s: %s\n", cmd, msg);
    snprintf(usage, sizeof usage, "\nusage: gated %s ", cmd);
    cr_expect_eq(r.status, 2, "%s: exit %d", msg, r.status);
    cr_expect_str_eq(r.out, "", "%s: stdout: %s", msg, r.out);
    cr_expect(starts_with(r.err, want), "want %sgot %s", want, r.err);
    cr_expect_not_null(strstr(r.err, usage), "no short usage: %s", r.err);
    cr_expect_null(strstr(r.err, "commands:"), "the overview was printed: %s", r.err);
    cr_expect_leq(count_lines(r.err), 6, "%s", r.err);
    result_free(&r);
}

Test(cli, a_missing_value_is_named_with_the_short_usage) {
    expect_usage_error((const char *[]){"train", "experiments/tiny.yaml", "--db", NULL}, "train", "--db: missing value");
    expect_usage_error((const char *[]){"sweep", "experiments/smoke.yaml", "--jobs", NULL}, "sweep",
                       "--jobs: missing value");
    expect_usage_error((const char *[]){"eval", "x", "--lengths", NULL}, "eval", "--lengths: missing value");
    expect_usage_error((const char *[]){"report", "--out", NULL}, "report", "--out: missing value");
    expect_usage_error((const char *[]){"bench", "--filter", NULL}, "bench", "--filter: missing value");
    expect_usage_error((const char *[]){"compare", "a", "b", "--threshold", NULL}, "compare",
                       "--threshold: missing value");
    expect_usage_error((const char *[]){"info", "experiments/tiny.yaml", "--set", NULL}, "info", "--set: missing value");
    expect_usage_error((const char *[]){"train", "experiments/tiny.yaml", "--db=", NULL}, "train", "--db: empty value");
}

Test(cli, unknown_options_are_named) {
    expect_usage_error((const char *[]){"ls", "--bogus", NULL}, "ls", "unknown option '--bogus'");
    expect_usage_error((const char *[]){"show", "r", "--bogus=1", NULL}, "show", "unknown option '--bogus'");
    expect_usage_error((const char *[]){"merge", "-x", "a.db", "b.db", NULL}, "merge", "unknown option '-x'");
    expect_usage_error((const char *[]){"train", "experiments/tiny.yaml", "--force=yes", NULL}, "train",
                       "--force takes no value");
    expect_usage_error((const char *[]){"sweep", "experiments/smoke.yaml", "--d", NULL}, "sweep",
                       "ambiguous option '--d' (--dry-run, --db, --data)");
    expect_usage_error((const char *[]){"train", NULL}, "train", "no CONFIG.yaml given");
    Result r = gated((const char *[]){"trian", NULL});
    cr_expect_eq(r.status, 2);
    cr_expect(starts_with(r.err, "gated: unknown command 'trian' (did you mean train?)\n"), "%s", r.err);
    result_free(&r);
}

/* gated eval --quant / --drop: every malformed list or item is exit 2 with
 * the option named, before any database is opened */
Test(cli, eval_quant_and_drop_lists_are_checked) {
    expect_usage_error((const char *[]){"eval", "x", "--quant", "w8,", NULL}, "eval", "--quant: an empty item in \"w8,\"");
    expect_usage_error((const char *[]){"eval", "x", "--quant", ",w8", NULL}, "eval",
                       "--quant: an empty item in \",w8\"");
    expect_usage_error((const char *[]){"eval", "x", "--quant", "w8-", NULL}, "eval",
                       "--quant: \"w8-\" is not a quantization scheme: expected float or [wB[gG]][-aB(tensor|token)], B bits in [2, 16] (e.g. w8-a8tensor, w8-a8token, w4g32)");
    expect_usage_error((const char *[]){"eval", "x", "--drop", "gate:0x1p-1", NULL}, "eval",
                       "--drop: \"gate:0x1p-1\" is not a drop rule: expected gate:TAU (TAU in [0, 1000]) or frac:F (F in [0, 1])");
    expect_usage_error((const char *[]){"eval", "x", "--drop", "frac:1.5", NULL}, "eval", "--drop: \"frac:1.5\" is not a drop rule: expected gate:TAU (TAU in [0, 1000]) or frac:F (F in [0, 1])");
    expect_usage_error((const char *[]){"eval", "x", "--quant", "w8", "--rope-scaling", "yarn", NULL}, "eval",
                       "--rope-scaling / --factor do not apply with --quant / --drop (evaluated as trained)");
    expect_usage_error((const char *[]){"eval", "x", NULL}, "eval", "--lengths is required (or --quant / --drop)");
}

Test(cli, a_sweep_file_given_to_train_says_to_use_sweep) {
    const char *want = "experiments/smoke.yaml: error: a sweep file, not a run config: run it with gated sweep "
                       "experiments/smoke.yaml\n";
    for (int i = 0; i < 2; i++) {
        Result r = gated((const char *[]){i ? "info" : "train", "experiments/smoke.yaml", NULL});
        cr_expect_eq(r.status, 2);
        cr_expect_str_eq(r.err, want);
        result_free(&r);
    }
}

/* The number of runs of experiments/smoke.yaml, read by the library. */
static int smoke_nruns(void) {
    Sweep s;
    ConfigError e;
    cr_assert_eq(sweep_load(&s, "experiments/smoke.yaml", &e), 0, "%s", e.msg);
    int nruns = s.nruns;
    sweep_free(&s);
    return nruns;
}

/* --count: the number alone; shards and indices count from 0. */
Test(cli, sweep_count_and_shards_from_0) {
    int nruns = smoke_nruns();
    cr_assert_geq(nruns, 4);
    char want[32];
    Result r = gated((const char *[]){"sweep", "experiments/smoke.yaml", "--count", NULL});
    snprintf(want, sizeof want, "%d\n", nruns);
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect_str_eq(r.out, want);
    cr_expect_str_eq(r.err, "");
    result_free(&r);
    for (int k = 0; k < 3; k++) {
        char shard[16];
        int n = 0;
        for (int i = 0; i < nruns; i++) n += i % 3 == k;
        snprintf(shard, sizeof shard, "%d/3", k);
        snprintf(want, sizeof want, "%d\n", n);
        r = gated((const char *[]){"sweep", "--count", "--shard", shard, "experiments/smoke.yaml", NULL});
        cr_expect_eq(r.status, 0, "%s", r.err);
        cr_expect_str_eq(r.out, want, "--shard %s", shard);
        result_free(&r);
        /* the plan lists the runs of index k, k + 3, ... */
        r = gated((const char *[]){"sweep", "experiments/smoke.yaml", "--dry-run", "--shard", shard, "--db",
                                   "/nonexistent/gated-test.db", NULL});
        cr_expect_eq(r.status, 0, "%s", r.err);
        char row[32];
        snprintf(row, sizeof row, "\n%5d  ", k);
        cr_expect_not_null(strstr(r.out, row), "--shard %s: %s", shard, r.out);
        for (int i = 0; i < nruns; i++) {
            snprintf(row, sizeof row, "\n%5d  ", i);
            if (i % 3 != k) cr_expect_null(strstr(r.out, row), "--shard %s lists index %d: %s", shard, i, r.out);
        }
        result_free(&r);
    }
    r = gated((const char *[]){"sweep", "experiments/smoke.yaml", "--count", "--index", "1", NULL});
    cr_expect_str_eq(r.out, "1\n");
    result_free(&r);
    expect_usage_error((const char *[]){"sweep", "experiments/smoke.yaml", "--count", "--shard", "3/3", NULL}, "sweep",
                       "--shard: expected i/N with 0 <= i < N (shards count from 0, as --index), got \"3/3\"");
}

/* --index takes a list of indices and ranges (0,2-3): --count counts it,
 * --dry-run lists exactly those runs; a malformed list is a usage error, an
 * index past the last run bad input, both exit 2. */
Test(cli, sweep_index_lists) {
    int nruns = smoke_nruns();
    cr_assert_geq(nruns, 5);
    Result r = gated((const char *[]){"sweep", "experiments/smoke.yaml", "--count", "--index", "0,2-3", NULL});
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect_str_eq(r.out, "3\n");
    result_free(&r);
    r = gated((const char *[]){"sweep", "experiments/smoke.yaml", "--dry-run", "--index", "3,0-0,2", "--db",
                               "/nonexistent/gated-test.db", NULL});
    cr_expect_eq(r.status, 0, "%s", r.err);
    for (int i = 0; i < nruns; i++) {
        char row[32];
        snprintf(row, sizeof row, "\n%5d  ", i);
        if (i == 0 || i == 2 || i == 3)
            cr_expect_not_null(strstr(r.out, row), "index %d not listed: %s", i, r.out);
        else
            cr_expect_null(strstr(r.out, row), "index %d listed: %s", i, r.out);
    }
    result_free(&r);
    static const char *const bad[] = {"3-2", "0,", ",1", "1--2", "1-", "-1", "a", "0,,1", "1 2", " 1", "+1", "1-+2"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char msg[160];
        snprintf(msg, sizeof msg, "--index: expected a run index (0, 1, ...) or a list of them and of ranges "
                                  "(0,3,6-11), got \"%s\"", bad[i]);
        expect_usage_error((const char *[]){"sweep", "experiments/smoke.yaml", "--count", "--index", bad[i], NULL},
                           "sweep", msg);
    }
    char past[32], want[160];
    snprintf(past, sizeof past, "1,%d-%d", nruns - 1, nruns);
    r = gated((const char *[]){"sweep", "experiments/smoke.yaml", "--count", "--index", past, NULL});
    snprintf(want, sizeof want, "gated sweep: --index %d: experiments/smoke.yaml has %d runs (0-%d)\n", nruns, nruns,
             nruns - 1);
    cr_expect_eq(r.status, 2, "%s", r.err);
    cr_expect_str_eq(r.err, want);
    cr_expect_str_eq(r.out, "");
    result_free(&r);
}

/* A checkout whose results/gated.db is committed, as this repository's:
 * a training run without --db writes only ignored files (.gated/, the
 * checkpoints), so `git status` stays clean; ls without --db reads the
 * same default; $GATED_DB replaces it. */
Test(cli, the_default_database_leaves_a_checkout_clean, .timeout = 120) {
    gated_bin();
    if (system("git --version >/dev/null 2>&1") != 0) cr_skip_test("git not found");
    char dir[64], cmd[PATH_MAX + 256], tiny[PATH_MAX], here[PATH_MAX];
    test_tmpdir(dir, sizeof dir);
    cr_assert_not_null(realpath("experiments/tiny.yaml", tiny));
    cr_assert_not_null(getcwd(here, sizeof here));
    snprintf(cmd, sizeof cmd, "cd '%s' && git init -q . && mkdir results && cp '%s/.gitignore' .", dir, here);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    const char *run[] = {"train", tiny, "--set", "model.vocab_size=257", "--set", "data.corpus=synthetic",
                         "--set", "train.steps=3", "--set", "threads=1", "--db", "results/gated.db", NULL};
    Result r = gated_in(dir, NULL, run);
    cr_assert_eq(r.status, 0, "%s", r.err);
    result_free(&r);
    snprintf(cmd, sizeof cmd,
             "cd '%s' && git add -f .gitignore results/gated.db && "
             "git -c user.name=t -c user.email=t@t -c commit.gpgsign=false commit -qm results",
             dir);
    cr_assert_eq(system(cmd), 0, "%s", cmd);

    run[7] = "train.steps=4", run[10] = NULL; /* another run, without --db */
    r = gated_in(dir, NULL, run);
    cr_assert_eq(r.status, 0, "%s", r.err);
    char id[64];
    snprintf(id, sizeof id, "%.16s", r.out);
    result_free(&r);
    snprintf(cmd, sizeof cmd, "cd '%s' && git status --porcelain --untracked-files=all", dir);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    char status[4096];
    status[fread(status, 1, sizeof status - 1, p)] = '\0';
    cr_assert_eq(pclose(p), 0);
    cr_expect_str_eq(status, "", "a run without --db changed the checkout:\n%s", status);
    snprintf(cmd, sizeof cmd, "%s/.gated/gated.db", dir);
    cr_expect_eq(access(cmd, F_OK), 0, "no %s", cmd);

    r = gated_in(dir, NULL, (const char *[]){"ls", NULL});
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect_not_null(strstr(r.out, id), "ls without --db does not list run %s:\n%s", id, r.out);
    result_free(&r);
    r = gated_in(dir, "elsewhere/e.db", (const char *[]){"ls", NULL});
    cr_expect_eq(r.status, 2);
    cr_expect_not_null(strstr(r.err, "elsewhere/e.db: no such database"), "%s", r.err);
    result_free(&r);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

/* A database that does not exist: every reading command says what makes
 * one.  results/gated.db beside the committed parts (results/db/): `make
 * results-db`; a --db or $GATED_DB path elsewhere: what creates it, and
 * no "pass --db" (it was passed); the default path: pass --db. */
Test(cli, a_missing_database_says_what_makes_one) {
    gated_bin();
    char dir[64], path[256];
    test_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/results/db", dir);
    cr_assert_eq(util_mkdir_p(path), 0);
    snprintf(path, sizeof path, "%s/results/db/MANIFEST.tsv", dir);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    cr_assert_eq(fclose(f), 0);
    static const char *const cmds[][4] = {{"ls", NULL}, {"show", "x", NULL}, {"export", NULL}, {"report", NULL},
                                          {"eval", "--lengths", "64", "x"}};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        const char *args[8];
        int n = 0;
        for (int j = 0; j < 4 && cmds[i][j]; j++) args[n++] = cmds[i][j];
        args[n] = "--db", args[n + 1] = "results/gated.db", args[n + 2] = NULL;
        Result r = gated_in(dir, NULL, args);
        cr_expect_eq(r.status, 2, "%s: %d", cmds[i][0], r.status);
        cr_expect_not_null(strstr(r.err, "results/gated.db: no such database (the committed results: build it "
                                         "with `make results-db`)"),
                           "%s: %s", cmds[i][0], r.err);
        result_free(&r);
        args[n + 1] = "other/x.db"; /* no parts beside it */
        r = gated_in(dir, NULL, args);
        cr_expect_eq(r.status, 2);
        cr_expect_not_null(strstr(r.err, "other/x.db: no such database (gated train or gated sweep with this --db "
                                         "creates it"),
                           "%s: %s", cmds[i][0], r.err);
        cr_expect_null(strstr(r.err, "pass --db"), "%s: %s", cmds[i][0], r.err);
        result_free(&r);
    }
    Result r = gated_in(dir, "elsewhere.db", (const char *[]){"ls", NULL});
    cr_expect_null(strstr(r.err, "pass --db"), "%s", r.err);
    result_free(&r);
    r = gated_in(dir, NULL, (const char *[]){"ls", NULL});
    cr_expect_not_null(strstr(r.err, ".gated/gated.db: no such database (train a run or run a sweep first, or pass "
                                     "--db PATH"),
                       "%s", r.err);
    result_free(&r);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}
