/*
 * bench_json.c — benchmark results as JSON and back (see bench.h): the
 * perf environment (`gated bench --env`), Google-Benchmark JSON out (every
 * string through util/json.h's json_fput), and `gated compare`, which reads
 * two such files with util/json.h's reader.
 */
#include "lab/bench/bench.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#ifdef __GLIBC__
#include <gnu/libc-version.h>
#endif

#include "lab/stats.h"
#include "nn/real.h"
#include "run/store.h"
#include "util/json.h"
#include "util/sysinfo.h"

/* ==================================================================== */
/* the perf environment                                                  */
/* ==================================================================== */

void bench_env_fill(BenchEnv *e) {
    static const char *const keys[BENCH_ENV_N] = {"arch", "cpu", "cpu_id", "openblas_core", "openblas_config",
                                                  "openblas_coretype", "compiler", "libc"};
    memset(e, 0, sizeof *e);
    for (int i = 0; i < BENCH_ENV_N; i++) e->key[i] = keys[i];
    struct utsname u;
    snprintf(e->val[0], sizeof e->val[0], "%s", uname(&u) == 0 ? u.machine : "unknown");
    sysinfo_cpu_model(e->val[1], sizeof e->val[1]);
    /* x86: vendor, family, model, stepping (a virtual machine's name is often generic);
     * arm: implementer, part, revision */
    char v[64], fam[32], mod[32], step[32];
    sysinfo_cpuinfo("vendor_id", v, sizeof v);
    sysinfo_cpuinfo("cpu family", fam, sizeof fam);
    sysinfo_cpuinfo("model", mod, sizeof mod);
    sysinfo_cpuinfo("stepping", step, sizeof step);
    if (fam[0])
        snprintf(e->val[2], sizeof e->val[2], "%s family %s model %s stepping %s", v, fam, mod, step);
    else {
        sysinfo_cpuinfo("CPU implementer", v, sizeof v);
        sysinfo_cpuinfo("CPU part", mod, sizeof mod);
        sysinfo_cpuinfo("CPU revision", step, sizeof step);
        if (v[0] || mod[0]) snprintf(e->val[2], sizeof e->val[2], "implementer %s part %s revision %s", v, mod, step);
    }
    if (!e->val[2][0]) snprintf(e->val[2], sizeof e->val[2], "unknown");
    const char *cn = openblas_get_corename(), *cf = openblas_get_config();
    snprintf(e->val[3], sizeof e->val[3], "%s", cn ? cn : "unknown");
    snprintf(e->val[4], sizeof e->val[4], "%s", cf ? cf : "unknown");
    sysinfo_trim(e->val[3]);
    sysinfo_trim(e->val[4]);
    const char *ct = getenv("OPENBLAS_CORETYPE");
    snprintf(e->val[5], sizeof e->val[5], "%s", ct ? ct : "(unset)");
    snprintf(e->val[6], sizeof e->val[6], "%s", sysinfo_compiler());
#ifdef __GLIBC__
    snprintf(e->val[7], sizeof e->val[7], "glibc %s", gnu_get_libc_version());
#else
    snprintf(e->val[7], sizeof e->val[7], "unknown");
#endif
}

void bench_env_write_json(FILE *f, const BenchEnv *e) {
    fputs("{\n", f);
    for (int i = 0; i < BENCH_ENV_N; i++) {
        fputs("  ", f);
        json_fput(e->key[i], f);
        fputs(": ", f);
        json_fput(e->val[i], f);
        fputs(i + 1 < BENCH_ENV_N ? ",\n" : "\n", f);
    }
    fputs("}\n", f);
}

/* ==================================================================== */
/* Google-Benchmark JSON out                                             */
/* ==================================================================== */

static void jnum(FILE *f, double x) {
    if (isnan(x))
        fputs("NaN", f);
    else if (isinf(x))
        fputs(x < 0 ? "-Infinity" : "Infinity", f);
    else
        fprintf(f, "%.17g", x);
}

/* A time unit for a case: the largest of s, ms, us, ns under its median. */
static const char *unit_for(double sec, double *scale) {
    if (sec >= 1) return *scale = 1, "s";
    if (sec >= 1e-3) return *scale = 1e3, "ms";
    if (sec >= 1e-6) return *scale = 1e6, "us";
    return *scale = 1e9, "ns";
}

/* The first line of a file (trimmed), or "". */
static void read_line(const char *path, char *out, size_t cap) {
    out[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f) return;
    if (!fgets(out, (int)cap, f)) out[0] = '\0';
    fclose(f);
    sysinfo_trim(out);
}

/* What one row reports: times in the case's unit, rates and counters
 * (NAN: the row leaves the field out). */
typedef struct {
    double rt, ct, ips, gf, pct;
    long long iters;
    const char *aunit; /* aggregate_unit */
} RowVals;

/* An iteration row: repetition rep of case i. */
static void iteration_vals(const BenchSuite *s, const BenchResult *res, int i, int rep, double scale, RowVals *v) {
    const BenchResult *r = &res[i];
    int j = s->c[i].ceiling;
    *v = (RowVals){r->real[rep] * scale, r->cpu[rep] * scale, NAN, r->flops / r->real[rep] * 1e-9, NAN,
                   r->iters[rep], "time"};
    if (r->tokens > 0) v->ips = r->tokens / r->real[rep];
    if (j >= 0 && res[j].ran && res[j].rs.median > 0)
        v->pct = 100.0 * (r->flops / r->real[rep]) / (res[j].flops / res[j].rs.median);
}

/* An aggregate row (agg: median, mean, stddev or cv) of case i. */
static void aggregate_vals(const BenchSuite *s, const BenchResult *res, int i, const char *agg, double scale,
                           RowVals *v) {
    const BenchResult *r = &res[i];
    /* counters aggregate like GB: the statistic of the per-repetition rates */
    double *rates = malloc(sizeof(double) * (size_t)r->n * 2);
    BenchStats tok = {NAN, NAN, NAN, NAN}, fl = {NAN, NAN, NAN, NAN};
    if (rates) {
        for (int k = 0; k < r->n; k++) {
            rates[k] = r->tokens / r->real[k];
            rates[r->n + k] = r->flops / r->real[k] * 1e-9;
        }
        bench_stats(rates, r->n, &tok);
        bench_stats(rates + r->n, r->n, &fl);
        free(rates);
    }
    *v = (RowVals){NAN, NAN, NAN, NAN, NAN, r->n, "time"};
    if (strcmp(agg, "median") == 0) {
        v->rt = r->rs.median * scale, v->ct = r->cs.median * scale, v->ips = tok.median, v->gf = fl.median;
        v->pct = bench_pct_ceiling(s, res, i);
    } else if (strcmp(agg, "mean") == 0) {
        v->rt = r->rs.mean * scale, v->ct = r->cs.mean * scale, v->ips = tok.mean, v->gf = fl.mean;
    } else if (strcmp(agg, "stddev") == 0) {
        v->rt = r->rs.stddev * scale, v->ct = r->cs.stddev * scale, v->ips = tok.stddev, v->gf = fl.stddev;
    } else {
        v->rt = r->rs.cv, v->ct = r->cs.cv, v->ips = tok.cv, v->gf = fl.cv;
        v->aunit = "percentage";
    }
    if (r->tokens <= 0) v->ips = NAN;
}

/* ",\n      \"name\": x", unless x is NAN. */
static void opt_num(FILE *f, const char *name, double x) {
    if (isnan(x)) return;
    fprintf(f, ",\n      \"%s\": ", name);
    jnum(f, x);
}

/* One benchmark row.  agg NULL: an iteration row for repetition rep. */
static void row(FILE *f, const BenchSuite *s, const BenchResult *res, int i, int family, const char *agg, int rep,
                int *first) {
    const BenchCase *c = &s->c[i];
    const BenchResult *r = &res[i];
    double scale;
    const char *unit = unit_for(r->rs.median, &scale);
    RowVals v;
    if (agg)
        aggregate_vals(s, res, i, agg, scale, &v);
    else
        iteration_vals(s, res, i, rep, scale, &v);
    fprintf(f, "%s    {\n      \"name\": ", *first ? "" : ",\n");
    *first = 0;
    if (agg) {
        char nm[256];
        snprintf(nm, sizeof nm, "%s_%s", c->name, agg);
        json_fput(nm, f);
    } else {
        json_fput(c->name, f);
    }
    fprintf(f, ",\n      \"family_index\": %d,\n      \"per_family_instance_index\": 0,\n      \"run_name\": ", family);
    json_fput(c->name, f);
    fprintf(f, ",\n      \"run_type\": \"%s\",\n      \"repetitions\": %d,\n", agg ? "aggregate" : "iteration", r->n);
    if (!agg) fprintf(f, "      \"repetition_index\": %d,\n", rep);
    fprintf(f, "      \"threads\": 1,\n");
    if (agg) fprintf(f, "      \"aggregate_name\": \"%s\",\n      \"aggregate_unit\": \"%s\",\n", agg, v.aunit);
    fprintf(f, "      \"iterations\": %lld,\n      \"real_time\": ", v.iters);
    jnum(f, v.rt);
    fprintf(f, ",\n      \"cpu_time\": ");
    jnum(f, v.ct);
    fprintf(f, ",\n      \"time_unit\": \"%s\"", unit);
    opt_num(f, "items_per_second", v.ips);
    opt_num(f, "gflops", v.gf);
    opt_num(f, "pct_of_ceiling", v.pct);
    opt_num(f, "kv_bytes_per_token", c->kind == BK_DECODE ? r->kv_bytes : NAN);
    fprintf(f, ",\n      \"label\": ");
    json_fput(bench_kind_names[c->kind], f);
    fprintf(f, "\n    }");
}

int bench_write_json(FILE *f, const BenchSuite *s, const BenchResult *res, const BenchContext *ctx) {
    char date[64], host[256], mhz[64], gov[64];
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S%z", &tm);
    if (gethostname(host, sizeof host) != 0) snprintf(host, sizeof host, "unknown");
    host[sizeof host - 1] = '\0';
    sysinfo_cpuinfo("cpu MHz", mhz, sizeof mhz);
    read_line("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", gov, sizeof gov);
    double la[3] = {0, 0, 0};
    FILE *lf = fopen("/proc/loadavg", "r");
    if (lf) {
        if (fscanf(lf, "%lf %lf %lf", &la[0], &la[1], &la[2]) != 3) la[0] = la[1] = la[2] = 0;
        fclose(lf);
    }
    fprintf(f, "{\n  \"context\": {\n    \"date\": ");
    json_fput(date, f);
    fprintf(f, ",\n    \"host_name\": ");
    json_fput(host, f);
    fprintf(f, ",\n    \"executable\": ");
    json_fput(ctx && ctx->executable ? ctx->executable : "gated", f);
    fprintf(f, ",\n    \"num_cpus\": %ld,\n    \"mhz_per_cpu\": %.0f,\n", sysconf(_SC_NPROCESSORS_ONLN),
            *mhz ? atof(mhz) : 0.0);
    fprintf(f, "    \"cpu_scaling_enabled\": %s,\n", *gov && strcmp(gov, "performance") != 0 ? "true" : "false");
    fprintf(f, "    \"caches\": [],\n    \"load_avg\": [%g, %g, %g],\n", la[0], la[1], la[2]);
    fprintf(f, "    \"library_build_type\": \"release\",\n    \"gated_suite\": ");
    json_fput(s->name, f);
    fprintf(f, ",\n    \"gated_suite_path\": ");
    json_fput(ctx && ctx->suite_path ? ctx->suite_path : s->path, f);
    fprintf(f, ",\n    \"gated_code_version\": ");
    json_fput(ctx && ctx->code_version ? ctx->code_version : "unknown", f);
    fprintf(f, ",\n    \"gated_git_dirty\": %d,\n    \"gated_cflags\": ", ctx ? ctx->git_dirty : -1);
    json_fput(ctx && ctx->cflags ? ctx->cflags : "unknown", f);
    fprintf(f, ",\n    \"gated_openblas\": ");
    json_fput(ctx && ctx->openblas ? ctx->openblas : "unknown", f);
    fprintf(f, ",\n    \"gated_threads\": %d,\n    \"gated_interleaved\": %s,\n    \"gated_real\": \"%s\"\n  },\n"
               "  \"benchmarks\": [\n",
            ctx ? ctx->threads : 0, ctx && ctx->interleaved ? "true" : "false", GATED_REAL_NAME);
    int first = 1, family = 0;
    static const char *const aggs[] = {"median", "mean", "stddev", "cv"};
    for (int i = 0; i < s->n; i++) {
        if (!res[i].ran) continue;
        for (int k = 0; k < res[i].n; k++) row(f, s, res, i, family, NULL, k, &first);
        for (int a = 0; a < 4; a++) row(f, s, res, i, family, aggs[a], 0, &first);
        family++;
    }
    fprintf(f, "\n  ]\n}\n");
    return ferror(f) ? -1 : 0;
}

/* ==================================================================== */
/* compare                                                               */
/* ==================================================================== */

typedef struct {
    const char *name;
    double median; /* the "median" aggregate, NAN if none */
    double *it;    /* iteration values */
    int nit, cap;
    int kind;      /* CMP_COUNTER, CMP_TIME or CMP_RATE */
    int first;     /* the index in "benchmarks" of its first row */
    double family; /* its rows' family_index (NAN: none given) */
    unsigned char *reps; /* repetition_index values seen (a bit each), for duplicates */
    int nreps;           /* bytes in reps */
} CmpCase;

/* What a metric is: a counter is exact (the threshold alone decides); a
 * time (lower is better) and a rate (items_per_second or any
 * *_per_second: higher is better) are measurements, U-tested. */
enum { CMP_COUNTER, CMP_TIME, CMP_RATE };
static int metric_kind(const char *metric) {
    size_t n = strlen(metric), k = strlen("_per_second");
    if (strcmp(metric, "real_time") == 0 || strcmp(metric, "cpu_time") == 0) return CMP_TIME;
    if (n > k && strcmp(metric + n - k, "_per_second") == 0) return CMP_RATE;
    return CMP_COUNTER;
}

/* The cases of one file, in the order they first appear, and a hash of
 * their names (open addressing, slot = case index or -1): every lookup is
 * O(1), so 40,000 cases are read and matched in linear time. */
typedef struct {
    CmpCase *c;
    int n, cap;
    int *slot;
    unsigned nslot; /* a power of 2, at least 2n */
    Json *root;
} CmpSet;

static void cmpset_free(CmpSet *s) {
    for (int i = 0; i < s->n; i++) free(s->c[i].it), free(s->c[i].reps);
    free(s->c);
    free(s->slot);
    json_free(s->root);
}

static unsigned name_hash(const char *k) {
    uint64_t h = 1469598103934665603ull;
    for (; *k; k++) h = (h ^ (unsigned char)*k) * 1099511628211ull;
    return (unsigned)(h ^ (h >> 32));
}

/* The slot of name in s: where it is, or the empty slot where it goes. */
static int *cmp_slot(const CmpSet *s, const char *name) {
    unsigned m = s->nslot - 1, i = name_hash(name) & m;
    while (s->slot[i] >= 0 && strcmp(s->c[s->slot[i]].name, name) != 0) i = (i + 1) & m;
    return &s->slot[i];
}

/* The case named name in s, or NULL. */
static const CmpCase *cmp_find(const CmpSet *s, const char *name) {
    if (!s->nslot) return NULL;
    int k = *cmp_slot(s, name);
    return k >= 0 ? &s->c[k] : NULL;
}

/* Room for one more name in the hash (rebuilt at twice the size when half
 * full).  0 or -1 (out of memory). */
static int cmp_grow(CmpSet *s) {
    if (2 * (unsigned)(s->n + 1) <= s->nslot) return 0;
    unsigned ns = s->nslot ? 2 * s->nslot : 64;
    int *sl = malloc(sizeof *sl * ns);
    if (!sl) return -1;
    for (unsigned i = 0; i < ns; i++) sl[i] = -1;
    free(s->slot);
    s->slot = sl;
    s->nslot = ns;
    for (int k = 0; k < s->n; k++) *cmp_slot(s, s->c[k].name) = k;
    return 0;
}

static double unit_seconds(const char *u) {
    if (!u || strcmp(u, "ns") == 0) return 1e-9;
    if (strcmp(u, "us") == 0) return 1e-6;
    if (strcmp(u, "ms") == 0) return 1e-3;
    if (strcmp(u, "s") == 0) return 1;
    return NAN;
}

static const char *jtext(const Json *o, const char *key) {
    const Json *v = json_get(o, key);
    return v && v->type == JSON_STR ? v->str : NULL;
}

/* The case named name (made when new, its first row i).  NULL: out of memory. */
static CmpCase *cmp_case(CmpSet *s, const char *name, int i) {
    if (s->nslot) {
        int k = *cmp_slot(s, name);
        if (k >= 0) return &s->c[k];
    }
    if (cmp_grow(s)) return NULL;
    if (s->n == s->cap) {
        int nc = s->cap ? 2 * s->cap : 32;
        CmpCase *nv = realloc(s->c, sizeof *nv * (size_t)nc);
        if (!nv) return NULL;
        s->c = nv;
        s->cap = nc;
    }
    *cmp_slot(s, name) = s->n;
    CmpCase *c = &s->c[s->n++];
    memset(c, 0, sizeof *c);
    c->name = name;
    c->median = NAN;
    c->family = NAN;
    c->first = i;
    return c;
}

/* A row of case c that makes its name a duplicate — two benchmarks under
 * one name, which must not be pooled as if they were repetitions of one:
 * a second median aggregate, a repetition_index seen before, or another
 * family_index.  1 (a message in why), 0, or -1 out of memory. */
static int cmp_duplicate(CmpCase *c, const Json *e, int aggregate, char *why, size_t cap) {
    if (aggregate) {
        if (!isnan(c->median)) snprintf(why, cap, "a second \"median\" aggregate");
        return !isnan(c->median);
    }
    const Json *fam = json_get(e, "family_index"), *rep = json_get(e, "repetition_index");
    if (fam && fam->type == JSON_NUM) {
        if (!isnan(c->family) && fam->num != c->family) {
            snprintf(why, cap, "family_index %g and %g", c->family, fam->num);
            return 1;
        }
        c->family = fam->num;
    }
    if (!rep || rep->type != JSON_NUM || !(rep->num >= 0) || rep->num >= 1e7 || rep->num != floor(rep->num))
        return 0;
    int r = (int)rep->num;
    if (r / 8 >= c->nreps) {
        int nb = 2 * (r / 8 + 1);
        unsigned char *nv = realloc(c->reps, (size_t)nb);
        if (!nv) return -1;
        memset(nv + c->nreps, 0, (size_t)(nb - c->nreps));
        c->reps = nv;
        c->nreps = nb;
    }
    if (c->reps[r / 8] & (1u << (r % 8))) {
        snprintf(why, cap, "repetition_index %d twice", r);
        return 1;
    }
    c->reps[r / 8] |= (unsigned char)(1u << (r % 8));
    return 0;
}

/* The value of the metric in row e of case name, checked: 1 (*x), 0 (the
 * row has none), -1 (not a number, negative or not finite where it is a
 * time or a rate: printed). */
static int cmp_metric(const Json *e, const char *metric, int kind, const char *path, int i, const char *name,
                      double *x, FILE *errf) {
    const Json *v = json_get(e, metric);
    char qn[768];
    if (!v) return 0;
    if (v->type != JSON_NUM) {
        fprintf(errf, "gated compare: %s: benchmarks[%d] (%s): %s is %s, not a number\n", path, i,
                store_escape(name, qn, sizeof qn), metric,
                v->type == JSON_STR ? "a string" : v->type == JSON_NULL ? "null" : "not a number");
        return -1;
    }
    *x = v->num;
    if (!isfinite(*x) || (kind != CMP_COUNTER && *x < 0)) {
        fprintf(errf, "gated compare: %s: benchmarks[%d] (%s): %s is %g: a %s must be finite and >= 0\n", path, i,
                store_escape(name, qn, sizeof qn), metric, *x, kind == CMP_TIME ? "time" : "rate");
        return -1;
    }
    return 1;
}

static int load_cmp(const char *path, const char *metric, CmpSet *s, FILE *errf) {
    char err[600];
    memset(s, 0, sizeof *s);
    s->root = json_parse_file(path, err, sizeof err);
    if (!s->root) {
        fprintf(errf, "gated compare: %s\n", err);
        return -1;
    }
    const Json *b = json_get(s->root, "benchmarks");
    if (!b || b->type != JSON_ARR) {
        fprintf(errf, "gated compare: %s: not Google-Benchmark JSON (no \"benchmarks\" array)\n", path);
        return -1;
    }
    int kind = metric_kind(metric);
    for (int i = 0; i < b->n; i++) {
        const Json *e = b->v[i];
        const char *name = jtext(e, "run_name");
        if (!name) name = jtext(e, "name");
        if (!name) {
            fprintf(errf, "gated compare: %s: benchmarks[%d] has no name\n", path, i);
            return -1;
        }
        const Json *err_occ = json_get(e, "error_occurred");
        if (err_occ && err_occ->type == JSON_BOOL && err_occ->num) continue;
        const char *rt = jtext(e, "run_type");
        const char *agg = jtext(e, "aggregate_name");
        int aggregate = (rt && strcmp(rt, "aggregate") == 0) || agg;
        if (aggregate && (!agg || strcmp(agg, "median") != 0)) continue;
        double x;
        int got = cmp_metric(e, metric, kind, path, i, name, &x, errf);
        if (got < 0) return -1;
        if (got == 0) continue;
        if (kind == CMP_TIME) {
            double u = unit_seconds(jtext(e, "time_unit"));
            if (isnan(u)) {
                fprintf(errf, "gated compare: %s: %s: unknown time_unit \"%s\"\n", path, name, jtext(e, "time_unit"));
                return -1;
            }
            x *= u;
        }
        CmpCase *c = cmp_case(s, name, i);
        char why[96], qn[768];
        int dup = c ? cmp_duplicate(c, e, aggregate, why, sizeof why) : -1;
        if (dup < 0) {
            fprintf(errf, "gated compare: out of memory\n");
            return -1;
        }
        if (dup) {
            fprintf(errf,
                    "gated compare: %s: benchmarks[%d]: case %s is named twice (%s; its first row is "
                    "benchmarks[%d]): two benchmarks under one name are not pooled; rename one\n",
                    path, i, store_escape(name, qn, sizeof qn), why, c->first);
            return -1;
        }
        c->kind = kind;
        if (aggregate) {
            c->median = x;
        } else {
            if (c->nit == c->cap) {
                int nc = c->cap ? 2 * c->cap : 8;
                double *nv = realloc(c->it, sizeof *nv * (size_t)nc);
                if (!nv) {
                    fprintf(errf, "gated compare: out of memory\n");
                    return -1;
                }
                c->it = nv;
                c->cap = nc;
            }
            c->it[c->nit++] = x;
        }
    }
    return 0;
}

/* The "median" aggregate, else the median of the iteration rows (NAN if none). */
static double cmp_value(const CmpCase *c) {
    if (!isnan(c->median)) return c->median;
    BenchStats st;
    bench_stats(c->it, c->nit, &st);
    return st.median;
}

static void fmt_val(char *buf, size_t cap, double x, int kind) {
    if (isnan(x)) {
        snprintf(buf, cap, "-");
        return;
    }
    if (kind == CMP_RATE) {
        snprintf(buf, cap, "%.5g/s", x);
        return;
    }
    if (kind == CMP_COUNTER) {
        if (x == floor(x) && fabs(x) < 1e15)
            snprintf(buf, cap, "%.0f", x); /* counts, exactly */
        else
            snprintf(buf, cap, "%.6g", x);
        return;
    }
    double sc;
    const char *u = unit_for(x, &sc);
    snprintf(buf, cap, "%.4g %s", x * sc, u);
}

/* Append ", TEXT" (or TEXT when empty) to the list in buf (cut at cap). */
static void list_add(char *buf, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void list_add(char *buf, size_t cap, const char *fmt, ...) {
    size_t m = strlen(buf);
    if (m + 3 >= cap) return;
    if (m) m += (size_t)snprintf(buf + m, cap - m, ", ");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + m, cap - m, fmt, ap);
    va_end(ap);
}

/* The fewest repetitions per side (k against k) whose Mann-Whitney test
 * can reach p < alpha (999 if none up to that). */
static int reps_needed(double alpha) {
    for (int k = 1; k < 999; k++)
        if (stats_mann_whitney_min_p(k, k) < alpha) return k;
    return 999;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The noise of a measured case: half its inter-quartile range over its
 * median, in percent (quartiles by linear interpolation between order
 * statistics); NAN for fewer than 2 values, a zero median or no memory. */
static double half_iqr_pct(const double *x, int n) {
    double *s = n >= 2 ? malloc(sizeof *s * (size_t)n) : NULL;
    if (!s) return NAN;
    memcpy(s, x, sizeof *s * (size_t)n);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    double q[3];
    for (int k = 0; k < 3; k++) {
        double h = (n - 1) * (k + 1) / 4.0;
        int lo = (int)h;
        q[k] = lo + 1 < n ? s[lo] + (h - lo) * (s[lo + 1] - s[lo]) : s[lo];
    }
    free(s);
    return q[1] != 0 ? 50.0 * (q[2] - q[0]) / fabs(q[1]) : NAN;
}

/* The verdicts of a comparison, listed for its closing lines. */
typedef struct {
    int nreg, nmiss, nfew, nnoise;
    char regs[4096], miss[4096], few[4096], noise[4096];
} CmpTally;

/* One case of BASE (b: HEAD's, NULL when missing there): its line, its
 * verdict counted in t.  0, or -1 out of memory. */
static int compare_case(const CmpCase *a, const CmpCase *b, double thr, double alpha, int w, FILE *out,
                        CmpTally *t) {
    double va = cmp_value(a), vb = b ? cmp_value(b) : NAN;
    char sa[32], sb[32], qn[768];
    fmt_val(sa, sizeof sa, va, a->kind);
    fmt_val(sb, sizeof sb, vb, a->kind);
    store_escape(a->name, qn, sizeof qn);
    if (!b || isnan(vb)) {
        t->nmiss++;
        list_add(t->miss, sizeof t->miss, "%s", qn);
        fprintf(out, "%-*s %14s %14s %9s %8s %7s  %s\n", w, qn, sa, "-", "", "", "", "MISSING in head");
        return 0;
    }
    double ch = va > 0 ? 100.0 * (vb - va) / va : (vb > va ? INFINITY : 0);
    double worse = a->kind == CMP_RATE ? -ch : ch; /* > 0: head is slower */
    /* times and rates are measurements: over the threshold is not enough,
     * the repetitions must differ significantly (Mann-Whitney U, as Google
     * Benchmark's compare.py); counters (callgrind's instructions) are
     * exact, the threshold alone decides */
    char ps[16] = "-", ns[16] = "-", verdict[64] = "ok";
    int sig = 1;
    if (a->kind != CMP_COUNTER) {
        double nz = fmax(half_iqr_pct(a->it, a->nit), half_iqr_pct(b->it, b->nit)); /* fmax: NAN only if both */
        if (!isnan(nz)) snprintf(ns, sizeof ns, "%.1f%%", nz);
        if (stats_mann_whitney_min_p(a->nit, b->nit) >= alpha) {
            snprintf(verdict, sizeof verdict, "not tested (%d vs %d repetitions)", a->nit, b->nit);
            t->nfew++;
            list_add(t->few, sizeof t->few, "%s (%+.1f%%, %d vs %d)", qn, ch, a->nit, b->nit);
            fprintf(out, "%-*s %14s %14s %+8.1f%% %8s %7s  %s\n", w, qn, sa, sb, ch, ps, ns, verdict);
            return 0;
        }
        MWUTest u;
        if (stats_mann_whitney(a->it, a->nit, b->it, b->nit, &u)) return -1;
        snprintf(ps, sizeof ps, "%.4f", u.p);
        sig = u.p < alpha;
    }
    if (worse > thr && sig) {
        snprintf(verdict, sizeof verdict, "REGRESSION");
        t->nreg++;
        if (a->kind != CMP_COUNTER)
            list_add(t->regs, sizeof t->regs, "%s (%+.1f%%, p %s)", qn, ch, ps);
        else
            list_add(t->regs, sizeof t->regs, "%s (%+.1f%%)", qn, ch);
    } else if (worse < -thr && sig) {
        snprintf(verdict, sizeof verdict, "faster");
    } else if (fabs(ch) > thr) {
        snprintf(verdict, sizeof verdict, "%s, not significant", worse > 0 ? "slower" : "faster");
        t->nnoise++;
        list_add(t->noise, sizeof t->noise, "%s (%+.1f%%, p %s)", qn, ch, ps);
    }
    fprintf(out, "%-*s %14s %14s %+8.1f%% %8s %7s  %s\n", w, qn, sa, sb, ch, ps, ns, verdict);
    return 0;
}

/* The closing lines: the regressions, the changes that are not significant,
 * the cases not tested, the missing ones (or that nothing regressed). */
static void compare_summary(const CmpTally *t, const char *head, const char *metric, double thr, double alpha,
                            int kind, int ncases, FILE *out) {
    char test[96] = "";
    if (kind != CMP_COUNTER) snprintf(test, sizeof test, ", Mann-Whitney U p < %.3g", alpha);
    if (t->nreg) fprintf(out, "regressions over %.3g%% (%s%s): %s\n", thr, metric, test, t->regs);
    if (t->nnoise)
        fprintf(out, "over %.3g%% but not significant (p >= %.3g; not regressions): %s\n", thr, alpha, t->noise);
    if (t->nfew)
        fprintf(out,
                "not tested (not regressions): too few repetitions for p < %.3g: with n against m repetitions "
                "the smallest p is 2 / C(n + m, n) (0.1 for 3 against 3); %d against %d is the fewest that can "
                "reach it (9 or more recommended): %s\n",
                alpha, reps_needed(alpha), reps_needed(alpha), t->few);
    if (t->nmiss) fprintf(out, "missing in %s: %s\n", head, t->miss);
    if (!t->nreg && !t->nmiss)
        fprintf(out, "no regression over %.3g%% (%s%s) in %d cases%s\n", thr, metric, test, ncases,
                t->nfew ? " (some not tested: see above)" : "");
}

int bench_compare_files(const char *base, const char *head, const BenchCompareOpts *o, FILE *out, FILE *errf) {
    const char *metric = o && o->metric ? o->metric : "real_time";
    double thr = o ? o->threshold : 5;
    double alpha = o && o->alpha > 0 ? o->alpha : 0.05;
    CmpSet A, B;
    int la = load_cmp(base, metric, &A, errf), lb = la ? -1 : load_cmp(head, metric, &B, errf);
    if (la || lb) {
        cmpset_free(&A);
        if (!la) cmpset_free(&B);
        return 2;
    }
    if (A.n == 0) {
        fprintf(errf, "gated compare: %s: no benchmark has a value for %s\n", base, metric);
        cmpset_free(&A);
        cmpset_free(&B);
        return 2;
    }
    int w = 40;
    for (int i = 0; i < A.n + B.n; i++) {
        int m = (int)strlen(i < A.n ? A.c[i].name : B.c[i - A.n].name);
        if (m > w) w = m;
    }
    fprintf(out, "%-*s %14s %14s %9s %8s %7s  %s\n", w, "case", "base", "head", "change", "p", "noise", "verdict");
    CmpTally *t = calloc(1, sizeof *t);
    int rc = t ? 0 : 2;
    for (int i = 0; i < A.n && rc == 0; i++)
        if (compare_case(&A.c[i], cmp_find(&B, A.c[i].name), thr, alpha, w, out, t)) rc = 2;
    for (int k = 0; rc == 0 && k < B.n; k++) {
        if (!cmp_find(&A, B.c[k].name)) {
            char sb[32], qn[768];
            fmt_val(sb, sizeof sb, cmp_value(&B.c[k]), B.c[k].kind);
            fprintf(out, "%-*s %14s %14s %9s %8s %7s  %s\n", w, store_escape(B.c[k].name, qn, sizeof qn), "-", sb,
                    "", "", "", "new in head");
        }
    }
    if (rc == 0) {
        compare_summary(t, head, metric, thr, alpha, A.c[0].kind, A.n, out);
        rc = t->nreg || (t->nmiss && o && o->fail_missing) ? 3 : 0;
    } else {
        fprintf(errf, "gated compare: out of memory\n");
    }
    free(t);
    cmpset_free(&A);
    cmpset_free(&B);
    return rc;
}
