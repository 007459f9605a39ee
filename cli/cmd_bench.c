/*
 * cmd_bench.c — `gated bench` (run a benchmark suite) and `gated compare`
 * (two Google-Benchmark JSON files; the perf gate's verdict).
 *
 *   gated bench [SUITE.yaml] [--filter RE] [--repetitions N] [--min-time S]
 *               [--json PATH] [--db PATH] [--threads N] [--interleave] [--paced]
 *               [--list] [--callgrind]
 *   gated bench --env
 *   gated compare BASE.json HEAD.json [--threshold PCT] [--metric NAME] [--fail-missing]
 *
 * bench: SUITE defaults to bench/default.yaml (format in core/lab/bench.h).
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
 * or a counter such as instructions); a case slower in HEAD by more than
 * --threshold percent (default 5) is a regression.
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

#include "lab/bench.h"
#include "nn/ops.h"
#include "commands.h"
#include "run/store.h"

static void bench_usage(FILE *f) {
    fprintf(f, "usage: gated bench [SUITE.yaml] [--filter RE] [--repetitions N] [--min-time S] [--json PATH]\n"
               "                   [--db PATH] [--threads N] [--interleave] [--paced] [--list] [--callgrind]\n"
               "       gated bench --env\n");
}

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

static int parse_pos_int(const char *opt, const char *v, long lo, long hi, long *out) {
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (!*v || *end || errno || x < lo || x > hi) {
        fprintf(stderr, "gated bench: %s: expected an integer in [%ld, %ld], got \"%s\"\n", opt, lo, hi, v);
        return -1;
    }
    *out = x;
    return 0;
}

int cmd_bench(int argc, char **argv) {
    const char *suite_path = NULL, *filter = NULL, *json = NULL, *db = NULL;
    long reps = 0, threads = 0;
    double min_time = -1;
    int list = 0, callgrind = 0, interleave = 0, paced = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        const char *val = NULL;
        const char *withval[] = {"--filter", "--repetitions", "--min-time", "--json", "--db", "--threads"};
        int which = -1;
        for (int k = 0; k < 6 && which < 0; k++) {
            size_t n = strlen(withval[k]);
            if (strcmp(a, withval[k]) == 0 && i + 1 < argc)
                which = k, val = argv[++i];
            else if (strncmp(a, withval[k], n) == 0 && a[n] == '=')
                which = k, val = a + n + 1;
        }
        if (which == 0) {
            filter = val;
        } else if (which == 1) {
            if (parse_pos_int("--repetitions", val, 1, 100000, &reps)) return 2;
        } else if (which == 2) {
            char *end;
            min_time = strtod(val, &end);
            if (!*val || *end || !(min_time >= 0 && min_time <= 3600)) {
                fprintf(stderr, "gated bench: --min-time: expected seconds in [0, 3600], got \"%s\"\n", val);
                return 2;
            }
        } else if (which == 3) {
            json = val;
        } else if (which == 4) {
            db = val;
        } else if (which == 5) {
            if (parse_pos_int("--threads", val, 1, 256, &threads)) return 2;
        } else if (strcmp(a, "--list") == 0) {
            list = 1;
        } else if (strcmp(a, "--callgrind") == 0) {
            callgrind = 1;
        } else if (strcmp(a, "--interleave") == 0) {
            interleave = 1;
        } else if (strcmp(a, "--paced") == 0) {
            interleave = paced = 1;
        } else if (strcmp(a, "--env") == 0) {
            BenchEnv e;
            bench_env_fill(&e);
            bench_env_write_json(stdout, &e);
            return fflush(stdout) == 0 ? 0 : 1;
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            bench_usage(stdout);
            return 0;
        } else if (a[0] != '-' && !suite_path) {
            suite_path = a;
        } else {
            fprintf(stderr, "gated bench: unknown or incomplete option '%s'\n", a);
            bench_usage(stderr);
            return 2;
        }
    }
    if (!suite_path) suite_path = "bench/default.yaml";
    ops_set_threads((int)threads); /* the one place a bench sets thread counts, before any work */

    char err[2048];
    BenchSuite s;
    if (bench_load_file(&s, suite_path, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 2;
    }
    int *sel = calloc((size_t)s.n, sizeof *sel);
    BenchResult *res = calloc((size_t)s.n, sizeof *res);
    if (!sel || !res) {
        fprintf(stderr, "gated bench: out of memory\n");
        free(sel), free(res);
        bench_suite_free(&s);
        return 1;
    }
    int nsel = 0, rc = 0;
    regex_t re;
    if (filter) {
        int e = regcomp(&re, filter, REG_EXTENDED | REG_NOSUB);
        if (e) {
            char m[256];
            regerror(e, &re, m, sizeof m);
            fprintf(stderr, "gated bench: --filter: bad regular expression \"%s\": %s\n", filter, m);
            rc = 2;
            goto out;
        }
    }
    for (int i = 0; i < s.n; i++) {
        sel[i] = !filter || regexec(&re, s.c[i].name, 0, NULL, 0) == 0;
        nsel += sel[i];
    }
    if (filter) regfree(&re);
    if (nsel == 0) {
        fprintf(stderr, "gated bench: %s: no case matches --filter \"%s\" (see --list)\n", suite_path, filter);
        rc = 2;
        goto out;
    }
    if (list) {
        for (int i = 0; i < s.n; i++)
            if (sel[i]) printf("%s\n", s.c[i].name);
        goto out;
    }

    BenchRunOpts ro = {(int)reps, min_time, callgrind, interleave};
    int done = 0;
    if (!interleave) {
        for (int i = 0; i < s.n; i++) {
            if (!sel[i]) continue;
            fprintf(stderr, "[%d/%d] %s ...", ++done, nsel, s.c[i].name);
            fflush(stderr);
            if (bench_run_case(&s.c[i], &ro, &res[i], err, sizeof err)) {
                fprintf(stderr, "\ngated bench: %s\n", err);
                rc = 1;
                goto out;
            }
            char t[32];
            fmt_time(t, sizeof t, res[i].rs.median);
            fprintf(stderr, " %s (cv %.1f%%)\n", t, 100 * res[i].rs.cv);
        }
    } else {
        /* every case set up and warmed up first, then one repetition of each in turn */
        BenchRun **runs = calloc((size_t)s.n, sizeof *runs);
        if (!runs) {
            fprintf(stderr, "gated bench: out of memory\n");
            rc = 1;
            goto out;
        }
        int more = 1, round = 0;
        for (int i = 0; i < s.n && !rc; i++) {
            if (!sel[i]) continue;
            fprintf(stderr, "set up %s\n", s.c[i].name);
            if (bench_case_begin(&s.c[i], &ro, &runs[i], &res[i], err, sizeof err)) {
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
            more = 0;
            round++;
            for (int i = 0; i < s.n && !rc; i++) {
                if (!runs[i]) continue;
                int r = bench_case_rep(runs[i], &res[i], err, sizeof err);
                if (r < 0) {
                    fprintf(stderr, "gated bench: %s\n", err);
                    rc = 1;
                }
                if (r != 0) continue;
                more++;
                if (paced) {
                    const BenchResult *q = &res[i];
                    int k = q->n - 1;
                    printf("rep\t%s\t%d\t%.9g\t%.9g\t%ld\t%.9g\t%.9g\n", s.c[i].name, k, q->real[k], q->cpu[k],
                           q->iters[k], q->tokens > 0 ? q->tokens / q->real[k] : NAN, q->flops);
                }
            }
            if (paced) {
                printf("round\t%d\t%d\n", round, more);
                fflush(stdout);
                if (!more) break;
            } else if (more) {
                fprintf(stderr, "round %d done\n", round);
            }
        }
        for (int i = 0; i < s.n; i++)
            if (runs[i]) bench_case_end(runs[i], &res[i], !rc);
        free(runs);
        if (rc) goto out;
    }

    /* the table */
    int w = 24;
    for (int i = 0; i < s.n; i++)
        if (sel[i] && (int)strlen(s.c[i].name) > w) w = (int)strlen(s.c[i].name);
    printf("%-*s %4s %6s %11s %11s %10s %6s %9s %7s %10s\n", w, "case", "reps", "iters", "median", "mean", "stddev",
           "cv", "GFLOP/s", "%ceil", "tokens/s");
    for (int i = 0; i < s.n; i++) {
        if (!sel[i] || !res[i].ran) continue; /* --paced: input may end before a case ran */
        const BenchResult *r = &res[i];
        long long it = 0;
        for (int k = 0; k < r->n; k++) it += r->iters[k];
        char md[32], mn[32], sd[32], cv[16], gf[16], pc[16], tk[16];
        fmt_time(md, sizeof md, r->rs.median);
        fmt_time(mn, sizeof mn, r->rs.mean);
        fmt_time(sd, sizeof sd, r->rs.stddev);
        fmt_num(cv, sizeof cv, 100 * r->rs.cv, "%.1f%%");
        fmt_num(gf, sizeof gf, bench_gflops(&s, res, i), "%.2f");
        fmt_num(pc, sizeof pc, bench_pct_ceiling(&s, res, i), "%.1f%%");
        fmt_num(tk, sizeof tk, r->tokens > 0 ? r->tokens / r->rs.median : NAN, "%.0f");
        printf("%-*s %4d %6lld %11s %11s %10s %6s %9s %7s %10s\n", w, s.c[i].name, r->n, it / (r->n ? r->n : 1), md,
               mn, sd, cv, gf, pc, tk);
    }
    fflush(stdout);

    Provenance pv;
    store_provenance_fill(&pv);
    if (json) {
        FILE *f = strcmp(json, "-") == 0 ? stdout : fopen(json, "w");
        if (!f) {
            fprintf(stderr, "gated bench: %s: %s\n", json, strerror(errno));
            rc = 1;
            goto out;
        }
        BenchContext ctx = {"gated bench", suite_path, pv.code_version, pv.cflags, pv.openblas_version, (int)threads,
                            pv.git_dirty};
        int wr = bench_write_json(f, &s, res, &ctx);
        if (f != stdout && fclose(f) != 0) wr = -1;
        if (wr) {
            fprintf(stderr, "gated bench: %s: write failed\n", json);
            rc = 1;
            goto out;
        }
    }
    if (db) {
        Store *st;
        if (store_open(&st, db, err, sizeof err)) {
            fprintf(stderr, "gated bench: %s\n", err);
            rc = 2;
            goto out;
        }
        StoreBenchRow *rows = calloc((size_t)nsel, sizeof *rows);
        if (!rows) {
            fprintf(stderr, "gated bench: out of memory\n");
            store_close(st);
            rc = 1;
            goto out;
        }
        int k = 0;
        for (int i = 0; i < s.n; i++) {
            if (!sel[i] || !res[i].ran) continue;
            const BenchResult *r = &res[i];
            long long it = 0;
            for (int q = 0; q < r->n; q++) it += r->iters[q];
            rows[k++] = (StoreBenchRow){s.c[i].name,
                                        bench_kind_names[s.c[i].kind],
                                        r->n,
                                        it,
                                        r->rs.median,
                                        r->rs.mean,
                                        r->rs.stddev,
                                        r->rs.cv,
                                        r->cs.median,
                                        r->flops,
                                        bench_gflops(&s, res, i),
                                        bench_pct_ceiling(&s, res, i),
                                        r->tokens > 0 ? r->tokens / r->rs.median : NAN,
                                        r->real,
                                        r->n};
        }
        char id[64], when[32];
        time_t now = time(NULL);
        struct tm tm;
        gmtime_r(&now, &tm);
        strftime(when, sizeof when, "%Y%m%dT%H%M%SZ", &tm);
        snprintf(id, sizeof id, "%s-%ld", when, (long)getpid());
        char joined[4096] = "gated bench";
        for (int i = 0; i < argc; i++) {
            size_t m = strlen(joined);
            snprintf(joined + m, sizeof joined - m, " %s", argv[i]);
        }
        if (store_bench_record(st, id, s.name, (int)threads, &pv, joined, rows, k)) {
            fprintf(stderr, "gated bench: %s\n", store_errmsg(st));
            rc = 1;
        } else {
            fprintf(stderr, "recorded %d cases as bench %s in %s\n", k, id, db);
        }
        free(rows);
        store_close(st);
    }
out:
    for (int i = 0; i < s.n; i++) bench_result_free(&res[i]);
    free(res);
    free(sel);
    bench_suite_free(&s);
    return rc;
}

static void compare_usage(FILE *f) {
    fprintf(f, "usage: gated compare BASE.json HEAD.json [--threshold PCT] [--metric real_time|cpu_time|COUNTER]\n"
               "                     [--fail-missing]\n");
}

int cmd_compare(int argc, char **argv) {
    const char *files[2] = {NULL, NULL};
    int nf = 0;
    BenchCompareOpts o = {5.0, "real_time", 0};
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if ((strcmp(a, "--threshold") == 0 && i + 1 < argc) || strncmp(a, "--threshold=", 12) == 0) {
            const char *v = a[11] == '=' ? a + 12 : argv[++i];
            char *end;
            o.threshold = strtod(v, &end);
            if (!*v || *end || !(o.threshold >= 0 && o.threshold <= 1e6)) {
                fprintf(stderr, "gated compare: --threshold: expected a percentage >= 0, got \"%s\"\n", v);
                return 2;
            }
        } else if ((strcmp(a, "--metric") == 0 && i + 1 < argc) || strncmp(a, "--metric=", 9) == 0) {
            o.metric = a[8] == '=' ? a + 9 : argv[++i];
            if (!*o.metric) {
                fprintf(stderr, "gated compare: --metric: empty name\n");
                return 2;
            }
        } else if (strcmp(a, "--fail-missing") == 0) {
            o.fail_missing = 1;
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            compare_usage(stdout);
            return 0;
        } else if (a[0] != '-' && nf < 2) {
            files[nf++] = a;
        } else {
            fprintf(stderr, "gated compare: unknown or incomplete option '%s'\n", a);
            compare_usage(stderr);
            return 2;
        }
    }
    if (nf != 2) {
        compare_usage(stderr);
        return 2;
    }
    return bench_compare_files(files[0], files[1], &o, stdout, stderr);
}
