/*
 * cmd_bench.c — `gated bench` (run a benchmark suite) and `gated compare`
 * (two Google-Benchmark JSON files; the perf gate's verdict).
 *
 * bench: SUITE defaults to bench/default.yaml (format in core/lab/bench/bench.h).
 * --filter keeps the cases whose name matches the POSIX extended regular
 * expression RE; --repetitions / --min-time override every case; --threads
 * sets OpenBLAS and OpenMP threads once, before anything runs (default: the
 * libraries' own, i.e. all cores); --interleave sets every selected case
 * up first, then runs one repetition of each in turn (so a drifting machine
 * load hits all alike; all cases' memory is held at once); --paced is
 * --interleave driven by another program (bench/peer_torch.py, which
 * alternates us with the PyTorch peer): after the set-up it prints "ready",
 * then before each round it reads one line from stdin (end of input ends
 * the run early) and after it prints one line per case that ran,
 * "rep<TAB>NAME<TAB>K<TAB>SECONDS<TAB>CPU_SECONDS<TAB>ITERS<TAB>TOKENS_PER_S<TAB>FLOPS"
 * (per iteration; tokens/s "nan" for non-step cases), then
 * "round<TAB>R<TAB>N" (N cases ran; 0: all repetitions were done), flushed.
 * --callgrind runs each case's fixed `iterations` once between callgrind
 * client requests (bench/perf_check.sh).  --env prints the environment the
 * instruction counts depend on (bench_env_fill) as JSON and exits.
 * Prints a table on stdout, progress on stderr; --json writes Google-
 * Benchmark JSON, --db appends rows to the store's bench table.
 *
 * compare: a case's value is its median real_time (or --metric: cpu_time,
 * or a counter such as instructions); a time slower in HEAD by more than
 * --threshold percent (default 5) is a regression when a Mann-Whitney U
 * test over the repetitions gives p < --alpha (default 0.05); with too few
 * repetitions for that it is "not tested", never a regression.  A rate
 * (items_per_second) is tested alike, a fall being the regression.
 * Counters are compared by the threshold alone (bench_compare_files in
 * bench.h).
 *
 * Exit: 0 ok, 1 runtime failure, 2 bad input, 3 (compare) a regression.
 */
#include <cblas.h>
#include <errno.h>
#include <math.h>
#include <omp.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lab/bench/bench.h"
#include "util/outfile.h"
#include "util/util.h"
#include "nn/ops.h"
#include "commands.h"
#include "run/store.h"

static void fmt_time(char *buf, size_t cap, double s) {
    if (isnan(s))
        snprintf(buf, cap, "-");
    else if (s >= 1)
        snprintf(buf, cap, "%.3f s", s);
    else if (s >= 1e-3)
        snprintf(buf, cap, "%.3f ms", s * 1e3);
    else if (s >= 1e-6)
        snprintf(buf, cap, "%.3f us", s * 1e6);
    else
        snprintf(buf, cap, "%.1f ns", s * 1e9);
}

static void fmt_num(char *buf, size_t cap, double x, const char *fmt) {
    if (isnan(x))
        snprintf(buf, cap, "-");
    else
        snprintf(buf, cap, fmt, x);
}

enum { O_FILTER, O_REPETITIONS, O_MIN_TIME, O_JSON, O_DB, O_THREADS, O_INTERLEAVE, O_PACED, O_LIST, O_CALLGRIND,
       O_ENV, O__COUNT };
static const CliOpt bench_opts[O__COUNT + 1] = {
    [O_FILTER] = {"filter", "RE", "the cases whose name matches this extended regular expression", 0},
    [O_REPETITIONS] = {"repetitions", "N", "repetitions of every case (default: the suite's)", 0},
    [O_MIN_TIME] = {"min-time", "S", "minimum seconds per repetition (default: the suite's)", 0},
    [O_JSON] = {"json", "PATH", "write Google-Benchmark JSON (\"-\": stdout)", 0},
    [O_DB] = {"db", "PATH", "append the results to this database's bench table (default: none)", 0},
    [O_THREADS] = {"threads", "N", "OpenBLAS and OpenMP threads (default: the libraries' own)", 0},
    [O_INTERLEAVE] = {"interleave", NULL, "set every case up first, then one repetition of each in turn", 0},
    [O_PACED] = {"paced", NULL, "--interleave driven by stdin (bench/peer_torch.py)", 0},
    [O_LIST] = {"list", NULL, "print the selected cases' names and stop", 0},
    [O_CALLGRIND] = {"callgrind", NULL, "run each case's fixed iterations once between callgrind requests", 0},
    [O_ENV] = {"env", NULL, "print what instruction counts depend on, as JSON, and stop", 0},
};

static int parse_pos_int(const char *opt, const char *v, long lo, long hi, long *out) {
    if (util_parse_long(v, lo, hi, out) == 0) return 0;
    cli_usage_error(&cmd_bench, "%s: expected an integer in [%ld, %ld], got \"%s\"", opt, lo, hi, v);
    return -1;
}

/* The command line of `gated bench`. */
typedef struct {
    const char *suite_path, *filter, *json, *db;
    long reps, threads;
    double min_time;
    int list, callgrind, interleave, paced;
} BenchArgs;

/* Parse argv into a.  -1: go on; else the exit status (--env, --help:
 * done; 2 for a bad option). */
static int bench_args(int argc, char **argv, BenchArgs *a) {
    *a = (BenchArgs){.min_time = -1};
    CliArgs p;
    const char *v;
    int o, env = 0;
    char *end;
    cli_begin(&p, &cmd_bench, argc, argv);
    while ((o = cli_next(&p, &v)) >= 0) {
        switch (o) {
        case O_FILTER: a->filter = v; break;
        case O_JSON: a->json = v; break;
        case O_DB: a->db = v; break;
        case O_LIST: a->list = 1; break;
        case O_CALLGRIND: a->callgrind = 1; break;
        case O_INTERLEAVE: a->interleave = 1; break;
        case O_PACED: a->interleave = a->paced = 1; break;
        case O_ENV: env = 1; break;
        case O_REPETITIONS:
            if (parse_pos_int("--repetitions", v, 1, 100000, &a->reps)) return EXIT_BADINPUT;
            break;
        case O_THREADS:
            if (parse_pos_int("--threads", v, 1, 256, &a->threads)) return EXIT_BADINPUT;
            break;
        case O_MIN_TIME:
            a->min_time = strtod(v, &end);
            if (*end || !(a->min_time >= 0 && a->min_time <= 3600))
                return cli_usage_error(&cmd_bench, "--min-time: expected seconds in [0, 3600], got \"%s\"", v);
            break;
        }
    }
    if (o == CLI_EXIT) return p.status;
    char **rest;
    int n = cli_rest(&p, &rest);
    if (n > 1) return cli_usage_error(&cmd_bench, "one SUITE.yaml at most, not %d", n);
    if (env) {
        BenchEnv e;
        bench_env_fill(&e);
        bench_env_write_json(stdout, &e);
        return fflush(stdout) == 0 ? EXIT_OK : EXIT_RUNTIME;
    }
    a->suite_path = n ? rest[0] : "bench/default.yaml";
    return -1;
}

/* sel[i] = 1 for the cases --filter keeps (all without one); their count
 * in *nsel.  0, or 2 (a bad expression, or nothing matches). */
static int bench_select(const BenchSuite *s, const BenchArgs *a, int *sel, int *nsel) {
    regex_t re;
    *nsel = 0;
    if (a->filter) {
        int e = regcomp(&re, a->filter, REG_EXTENDED | REG_NOSUB);
        if (e) {
            char m[256];
            regerror(e, &re, m, sizeof m);
            fprintf(stderr, "gated bench: --filter: bad regular expression \"%s\": %s\n", a->filter, m);
            return 2;
        }
    }
    for (int i = 0; i < s->n; i++) {
        sel[i] = !a->filter || regexec(&re, s->c[i].name, 0, NULL, 0) == 0;
        *nsel += sel[i];
    }
    if (a->filter) regfree(&re);
    if (*nsel == 0) {
        fprintf(stderr, "gated bench: %s: no case matches --filter \"%s\" (see --list)\n", a->suite_path, a->filter);
        return 2;
    }
    return 0;
}

/* Each selected case in turn, all its repetitions at once.  0, or 1. */
static int bench_run_in_order(const BenchSuite *s, const int *sel, int nsel, const BenchRunOpts *ro,
                              BenchResult *res) {
    char err[2048];
    int done = 0;
    for (int i = 0; i < s->n; i++) {
        if (!sel[i]) continue;
        fprintf(stderr, "[%d/%d] %s ...", ++done, nsel, s->c[i].name);
        fflush(stderr);
        if (bench_run_case(&s->c[i], ro, &res[i], err, sizeof err)) {
            fprintf(stderr, "\ngated bench: %s\n", err);
            return 1;
        }
        char t[32];
        fmt_time(t, sizeof t, res[i].rs.median);
        fprintf(stderr, " %s (cv %.1f%%)\n", t, 100 * res[i].rs.cv);
    }
    return 0;
}

/* One round of --interleave: a repetition of every case not yet done.
 * The number of cases that ran in *more; 0, or 1 on an error. */
static int bench_round(const BenchSuite *s, BenchRun **runs, BenchResult *res, int paced, int *more) {
    char err[2048];
    *more = 0;
    for (int i = 0; i < s->n; i++) {
        if (!runs[i]) continue;
        int r = bench_case_rep(runs[i], &res[i], err, sizeof err);
        if (r < 0) {
            fprintf(stderr, "gated bench: %s\n", err);
            return 1;
        }
        if (r != 0) continue;
        ++*more;
        if (paced) {
            const BenchResult *q = &res[i];
            int k = q->n - 1;
            printf("rep\t%s\t%d\t%.9g\t%.9g\t%ld\t%.9g\t%.9g\n", s->c[i].name, k, q->real[k], q->cpu[k], q->iters[k],
                   q->tokens > 0 ? q->tokens / q->real[k] : NAN, q->flops);
        }
    }
    return 0;
}

/* --interleave (and --paced): every selected case set up and warmed up
 * first, then one repetition of each in turn.  0, or 1. */
static int bench_run_interleaved(const BenchSuite *s, const int *sel, const BenchRunOpts *ro, int paced,
                                 BenchResult *res) {
    char err[2048];
    BenchRun **runs = calloc((size_t)s->n, sizeof *runs);
    if (!runs) {
        fprintf(stderr, "gated bench: out of memory\n");
        return 1;
    }
    int rc = 0, more = 1, round = 0;
    for (int i = 0; i < s->n && !rc; i++) {
        if (!sel[i]) continue;
        fprintf(stderr, "set up %s\n", s->c[i].name);
        if (bench_case_begin(&s->c[i], ro, &runs[i], &res[i], err, sizeof err)) {
            fprintf(stderr, "gated bench: %s\n", err);
            rc = 1;
        }
    }
    if (paced && !rc) {
        printf("ready\n");
        fflush(stdout);
    }
    char line[256];
    while (!rc && more) {
        if (paced && !fgets(line, sizeof line, stdin)) break; /* the driver is done */
        round++;
        rc = bench_round(s, runs, res, paced, &more); /* on an error, the round is still reported */
        if (paced) {
            printf("round\t%d\t%d\n", round, more);
            fflush(stdout);
        } else if (more) {
            fprintf(stderr, "round %d done\n", round);
        }
    }
    for (int i = 0; i < s->n; i++)
        if (runs[i]) bench_case_end(runs[i], &res[i], !rc);
    free(runs);
    return rc;
}

/* The results as a table on stdout. */
static void bench_table(const BenchSuite *s, const int *sel, const BenchResult *res) {
    int w = 24;
    for (int i = 0; i < s->n; i++)
        if (sel[i] && (int)strlen(s->c[i].name) > w) w = (int)strlen(s->c[i].name);
    printf("%-*s %4s %6s %11s %11s %10s %6s %9s %7s %10s\n", w, "case", "reps", "iters", "median", "mean", "stddev",
           "cv", "GFLOP/s", "%ceil", "tokens/s");
    for (int i = 0; i < s->n; i++) {
        if (!sel[i] || !res[i].ran) continue; /* --paced: input may end before a case ran */
        const BenchResult *r = &res[i];
        long long it = 0;
        for (int k = 0; k < r->n; k++) it += r->iters[k];
        char md[32], mn[32], sd[32], cv[16], gf[16], pc[16], tk[16];
        fmt_time(md, sizeof md, r->rs.median);
        fmt_time(mn, sizeof mn, r->rs.mean);
        fmt_time(sd, sizeof sd, r->rs.stddev);
        fmt_num(cv, sizeof cv, 100 * r->rs.cv, "%.1f%%");
        fmt_num(gf, sizeof gf, bench_gflops(s, res, i), "%.2f");
        fmt_num(pc, sizeof pc, bench_pct_ceiling(s, res, i), "%.1f%%");
        fmt_num(tk, sizeof tk, r->tokens > 0 ? r->tokens / r->rs.median : NAN, "%.0f");
        printf("%-*s %4d %6lld %11s %11s %10s %6s %9s %7s %10s\n", w, s->c[i].name, r->n, it / (r->n ? r->n : 1), md,
               mn, sd, cv, gf, pc, tk);
    }
    fflush(stdout);
}

/* --json PATH ("-": stdout).  0, or 1. */
static int bench_write(const BenchArgs *a, const BenchSuite *s, const BenchResult *res, const Provenance *pv) {
    int out = strcmp(a->json, "-") == 0;
    OutFile o = {0}; /* util/outfile.h: the old file stays until the new one is complete */
    char err[1024];
    snprintf(err, sizeof err, "%s: write failed", a->json);
    if (!out && outfile_open(&o, a->json, err, sizeof err)) {
        fprintf(stderr, "gated bench: %s\n", err);
        return 1;
    }
    BenchContext ctx = {"gated bench", a->suite_path, pv->code_version, pv->cflags, pv->openblas_version,
                        (int)a->threads, pv->git_dirty, a->interleave};
    int wr = bench_write_json(out ? stdout : o.f, s, res, &ctx);
    if (!out && (wr ? (outfile_abort(&o), -1) : outfile_commit(&o, err, sizeof err))) wr = -1;
    if (wr) {
        fprintf(stderr, "gated bench: %s\n", err);
        return 1;
    }
    return 0;
}

/* The store's row of case i. */
static StoreBenchRow bench_row(const BenchSuite *s, const BenchResult *res, int i) {
    const BenchResult *r = &res[i];
    long long it = 0;
    for (int q = 0; q < r->n; q++) it += r->iters[q];
    return (StoreBenchRow){s->c[i].name,
                           bench_kind_names[s->c[i].kind],
                           r->n,
                           it,
                           r->rs.median,
                           r->rs.mean,
                           r->rs.stddev,
                           r->rs.cv,
                           r->cs.median,
                           r->flops,
                           bench_gflops(s, res, i),
                           bench_pct_ceiling(s, res, i),
                           r->tokens > 0 ? r->tokens / r->rs.median : NAN,
                           r->real,
                           r->n};
}

/* --db PATH: one bench record, a row per case that ran.  0, 1 or 2 (the
 * store cannot be opened). */
static int bench_record(const BenchArgs *a, const char *joined, const BenchSuite *s, const int *sel, int nsel,
                        const BenchResult *res, const Provenance *pv) {
    char err[2048];
    Store *st;
    int orc = store_open(&st, a->db, err, sizeof err);
    if (orc) {
        fprintf(stderr, "gated bench: %s\n", err);
        return cli_store_exit(orc);
    }
    StoreBenchRow *rows = calloc((size_t)nsel, sizeof *rows);
    if (!rows) {
        fprintf(stderr, "gated bench: out of memory\n");
        store_close(st);
        return 1;
    }
    int k = 0, rc = 0;
    for (int i = 0; i < s->n; i++)
        if (sel[i] && res[i].ran) rows[k++] = bench_row(s, res, i);
    char id[64], when[32];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(when, sizeof when, "%Y%m%dT%H%M%SZ", &tm);
    snprintf(id, sizeof id, "%s-%ld", when, (long)getpid());
    if (store_bench_record(st, id, s->name, (int)a->threads, pv, joined, rows, k)) {
        fprintf(stderr, "gated bench: %s\n", store_errmsg(st));
        rc = 1;
    } else {
        fprintf(stderr, "recorded %d cases as bench %s in %s\n", k, id, a->db);
    }
    free(rows);
    store_close(st);
    return rc;
}

/* The phases: options, threads, the suite, the selection (--list stops
 * there), the runs, the table, then --json and --db. */
static int run_bench(int argc, char **argv) {
    char joined[4096] = "gated"; /* the command line as given, before getopt permutes argv */
    for (int i = 0; i < argc; i++) {
        size_t m = strlen(joined);
        snprintf(joined + m, sizeof joined - m, " %s", argv[i]);
    }
    BenchArgs a;
    int rc = bench_args(argc, argv, &a);
    if (rc >= 0) return rc;
    ops_set_threads((int)a.threads); /* the one place a bench sets thread counts, before any work */

    char err[2048];
    BenchSuite s;
    if (bench_load_file(&s, a.suite_path, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 2;
    }
    int *sel = calloc((size_t)s.n, sizeof *sel), nsel = 0;
    BenchResult *res = calloc((size_t)s.n, sizeof *res);
    if (!sel || !res) {
        fprintf(stderr, "gated bench: out of memory\n");
        rc = 1;
    } else {
        rc = bench_select(&s, &a, sel, &nsel);
    }
    if (!rc && a.list) {
        for (int i = 0; i < s.n; i++)
            if (sel[i]) printf("%s\n", s.c[i].name);
    } else if (!rc) {
        BenchRunOpts ro = {(int)a.reps, a.min_time, a.callgrind, a.interleave};
        rc = a.interleave ? bench_run_interleaved(&s, sel, &ro, a.paced, res)
                          : bench_run_in_order(&s, sel, nsel, &ro, res);
        Provenance pv;
        if (!rc) {
            bench_table(&s, sel, res);
            store_provenance_fill(&pv);
        }
        if (!rc && a.json) rc = bench_write(&a, &s, res, &pv);
        if (!rc && a.db) rc = bench_record(&a, joined, &s, sel, nsel, res, &pv);
    }
    for (int i = 0; res && i < s.n; i++) bench_result_free(&res[i]);
    free(res);
    free(sel);
    bench_suite_free(&s);
    return rc;
}

enum { C_THRESHOLD, C_ALPHA, C_METRIC, C_FAIL_MISSING, C__COUNT };
static const CliOpt compare_opts[C__COUNT + 1] = {
    [C_THRESHOLD] = {"threshold", "PCT", "slower by more than PCT percent is a regression (default: 5)", 0},
    [C_ALPHA] = {"alpha", "P", "significance level of the Mann-Whitney U test a regression must pass (default: 0.05)", 0},
    [C_METRIC] = {"metric", "real_time|cpu_time|items_per_second|COUNTER",
                  "what to compare (default: real_time; a *_per_second rate: lower is slower)", 0},
    [C_FAIL_MISSING] = {"fail-missing", NULL, "a case of BASE missing from HEAD counts as a regression", 0},
};

static int run_compare(int argc, char **argv) {
    BenchCompareOpts o = {5.0, "real_time", 0, 0.05};
    CliArgs p;
    const char *v;
    int k;
    char *end;
    cli_begin(&p, &cmd_compare, argc, argv);
    while ((k = cli_next(&p, &v)) >= 0) {
        if (k == C_METRIC) o.metric = v;
        if (k == C_FAIL_MISSING) o.fail_missing = 1;
        if (k == C_ALPHA) {
            o.alpha = strtod(v, &end);
            if (*end || !*v || !(o.alpha > 0 && o.alpha < 1))
                return cli_usage_error(&cmd_compare, "--alpha: expected a significance level in (0, 1), got \"%s\"", v);
        }
        if (k == C_THRESHOLD) {
            o.threshold = strtod(v, &end);
            if (*end || !(o.threshold >= 0 && o.threshold <= 1e6))
                return cli_usage_error(&cmd_compare, "--threshold: expected a percentage >= 0, got \"%s\"", v);
        }
    }
    if (k == CLI_EXIT) return p.status;
    char **files;
    int n = cli_rest(&p, &files);
    if (n != 2) return cli_usage_error(&cmd_compare, "expected BASE.json and HEAD.json, got %d file%s", n, n == 1 ? "" : "s");
    return bench_compare_files(files[0], files[1], &o, stdout, stderr);
}

const Command cmd_bench = {
    "bench", "[SUITE.yaml]", "Benchmarks: kernels, attention, training steps (bench/default.yaml).",
    bench_opts,
    "stdout: the results table (and --list, --env, --json -, --paced's protocol);\n"
    "stderr: progress and errors.\n"
    "The suite format is in core/lab/bench/bench.h.\n",
    run_bench};
const Command cmd_compare = {
    "compare", "BASE.json HEAD.json", "Compare two Google-Benchmark JSON files, median per case.", compare_opts,
    "stdout: one line per case (base, head, change, verdict).  Exit 3 when a case regressed.\n", run_compare};
