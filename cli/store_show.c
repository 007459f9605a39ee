/*
 * store_show.c — `gated ls` and `gated show` (see store_show.h).
 *
 * Everything is read through run/store.h; this file only formats.  Every
 * text from the file is escaped (store_escape, store_fput_escaped): a
 * merged database is untrusted, and its names must not reach a terminal
 * as escape codes or line breaks.
 */
#include "store_show.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/json.h"

static const char *or(const char *s, const char *dflt) { return s ? s : dflt; }

/* The store's last error into err; -1. */
static int store_failed(Store *s, char *err, size_t cap) {
    snprintf(err, cap, "%s", store_errmsg(s));
    return -1;
}

static int check_stream(Store *s, FILE *f, char *err, size_t cap) {
    if (!ferror(f)) return 0;
    snprintf(err, cap, "%s: write error on output", store_path(s));
    return -1;
}

static void fmt_time(double t, const char *fmt, char *buf, size_t cap) {
    time_t tt = (time_t)t;
    struct tm tm;
    if (!localtime_r(&tt, &tm) || strftime(buf, cap, fmt, &tm) == 0) snprintf(buf, cap, "%.0f", t);
}

/* ------------------------------------------------------------------ */
/* ls                                                                  */
/* ------------------------------------------------------------------ */

static int ls_line(FILE *f, int namew, const StoreRunRow *r) {
    char steps[24] = "-", vl[32] = "-", when[32];
    if (r->has_steps) snprintf(steps, sizeof steps, "%lld", r->steps);
    if (!isnan(r->val_loss)) snprintf(vl, sizeof vl, "%.4f", r->val_loss);
    fmt_time(r->started_at, "%Y-%m-%d %H:%M", when, sizeof when);
    char *id = store_escape_dup(or(r->run_id, "?")), *name = store_escape_dup(or(r->name, "")),
         *status = store_escape_dup(r->status);
    int ok = id && name && status;
    if (ok) fprintf(f, "%-16s  %-*s  %-8s  %8s  %8s  %s\n", id, namew, name, status, steps, vl, when);
    free(id), free(name), free(status);
    return ok ? 0 : -1;
}

int show_ls(Store *s, FILE *f, char *err, size_t cap) {
    StoreRunList l;
    if (store_list_runs(s, &l)) return store_failed(s, err, cap);
    int namew = 4;
    if (l.name_width > namew) namew = l.name_width > 48 ? 48 : l.name_width;
    fprintf(f, "%-16s  %-*s  %-8s  %8s  %8s  %s\n", "run id", namew, "name", "status", "steps", "val loss",
            "started");
    int rc = 0;
    for (int i = 0; i < l.n && rc == 0; i++)
        if (ls_line(f, namew, &l.rows[i])) rc = -1, snprintf(err, cap, "%s: ls: out of memory", store_path(s));
    if (rc == 0 && l.n == 0) fprintf(f, "(no runs in %s)\n", store_path(s));
    store_run_list_free(&l);
    return rc ? rc : check_stream(s, f, err, cap);
}

/* ------------------------------------------------------------------ */
/* show                                                                */
/* ------------------------------------------------------------------ */

/* "LABEL value\n" with the value escaped. */
static void put_field(FILE *f, const char *label, const char *v) {
    fputs(label, f);
    store_fput_escaped(f, v);
    fputc('\n', f);
}

/* run, status, times: the first lines of show */
static void print_status(FILE *f, const StoreRunInfo *r) {
    char t0[32], t1[32], th[32];
    fmt_time(r->started_at, "%Y-%m-%d %H:%M:%S", t0, sizeof t0);
    fmt_time(r->heartbeat_at, "%Y-%m-%d %H:%M:%S", th, sizeof th);
    put_field(f, "run         ", or(r->run_id, "?"));
    put_field(f, "name        ", or(r->name, ""));
    fprintf(f, "status      ");
    store_fput_escaped(f, r->effective_status);
    if (strcmp(r->effective_status, or(r->status, "")) != 0) {
        fprintf(f, " (recorded '");
        store_fput_escaped(f, or(r->status, "?"));
        fprintf(f, "'; no heartbeat for %.0f s)", r->read_at - r->heartbeat_at);
    }
    fprintf(f, "\n");
    fprintf(f, "started     %s\n", t0);
    if (!isnan(r->ended_at)) {
        fmt_time(r->ended_at, "%Y-%m-%d %H:%M:%S", t1, sizeof t1);
        fprintf(f, "ended       %s (%.1f s)\n", t1, r->ended_at - r->started_at);
    } else {
        fprintf(f, "heartbeat   %s\n", th);
    }
    if (r->error_text) put_field(f, "error       ", r->error_text);
    if (r->has_diverged) fprintf(f, "diverged    at step %lld\n", r->diverged_step);
}

/* the run's row: status, then provenance and config */
static void print_run(FILE *f, const StoreRunInfo *r) {
    print_status(f, r);
    fprintf(f, "seed        %lld\n", r->seed);
    fprintf(f, "threads     %d\n", r->threads);
    put_field(f, "argv        ", or(r->argv, "-"));
    fprintf(f, "code        ");
    store_fput_escaped(f, or(r->code_version, "unknown"));
    fprintf(f, "%s\n", r->git_dirty < 0 ? "" : r->git_dirty ? " (dirty)" : " (clean)");
    put_field(f, "host        ", or(r->host, ""));
    put_field(f, "cpu         ", or(r->cpu_model, ""));
    put_field(f, "compiler    ", or(r->compiler, ""));
    put_field(f, "cflags      ", or(r->cflags, ""));
    put_field(f, "openblas    ", or(r->openblas_version, ""));
    put_field(f, "sqlite      ", or(r->sqlite_version, ""));
    put_field(f, "libyaml     ", or(r->libyaml_version, ""));
    fprintf(f, "environment %lld\n", r->env_id);
    put_field(f, "config      ", or(r->config_json, ""));
}

static const char *const RESULTS[] = {"val_loss", "val_ppl", "val_bpb", "test_loss"};
enum { NRESULTS = sizeof RESULTS / sizeof RESULTS[0] };

static int is_key(const char *s, const char *key) { return s && strcmp(s, key) == 0; }

/* A final result (context '', printed under "results"). */
static int is_result(const StoreSummaryRow *u) {
    for (int k = 0; k < NRESULTS; k++)
        if (is_key(u->context, "") && is_key(u->key, RESULTS[k])) return 1;
    return 0;
}

/* A per-layer probe (f_attn, m_act or resid_kurtosis at exactly
 * 'layer=DIGITS', printed under "per-layer probes"). */
static int is_probe(const StoreSummaryRow *u) {
    if (!(is_key(u->key, "f_attn") || is_key(u->key, "m_act") || is_key(u->key, "resid_kurtosis"))) return 0;
    const char *c = u->context;
    if (!c || strncmp(c, "layer=", 6) != 0 || !c[6]) return 0;
    return strspn(c + 6, "0123456789") == strlen(c + 6);
}

static void print_summary(FILE *f, const StoreSummaryRow *rows, int n) {
    int header = 0;
    for (int k = 0; k < NRESULTS; k++)
        for (int i = 0; i < n; i++) {
            if (!is_key(rows[i].context, "") || !is_key(rows[i].key, RESULTS[k])) continue;
            if (!header) fprintf(f, "\nresults\n"), header = 1;
            if (isnan(rows[i].value))
                fprintf(f, "  %-10s  nan\n", RESULTS[k]);
            else
                fprintf(f, "  %-10s  %.4f\n", RESULTS[k], rows[i].value);
            break; /* (run, key, context) is the table's key */
        }
    header = 0;
    for (int i = 0; i < n; i++) {
        const StoreSummaryRow *u = &rows[i];
        if (is_result(u) || is_probe(u)) continue;
        if (!header) fprintf(f, "\nsummary\n"), header = 1;
        char key[96], ctx[96];
        store_escape(or(u->key, ""), key, sizeof key);
        store_escape(or(u->context, ""), ctx, sizeof ctx);
        char name[200];
        snprintf(name, sizeof name, "%s%s%s%s", key, *ctx ? "[" : "", ctx, *ctx ? "]" : "");
        char val[32] = "-";
        if (!isnan(u->value)) snprintf(val, sizeof val, "%.6g", u->value);
        fprintf(f, "  %-24s  %12s%s", name, val, u->text ? "  " : "");
        store_fput_escaped(f, or(u->text, ""));
        fputc('\n', f);
    }
}

static void print_series(FILE *f, const StoreSeries *rows, int n, long long n_other) {
    for (int i = 0; i < n; i++) {
        if (i == 0) fprintf(f, "\nmetrics (last value)\n");
        char val[32] = "nan";
        if (!isnan(rows[i].last_value)) snprintf(val, sizeof val, "%.6g", rows[i].last_value);
        char key[96];
        fprintf(f, "  %-24s  %12s  at step %lld (%lld points)\n", store_escape(or(rows[i].key, ""), key, sizeof key),
                val, rows[i].last_step, rows[i].points);
    }
    if (n_other > 0) fprintf(f, "  (+ %lld per-layer / per-head series)\n", n_other);
}

static void print_probes(FILE *f, const StoreProbe *rows, int n) {
    if (n == 0) return;
    fprintf(f, "\nper-layer probes (last step)\n  %-6s  %10s  %10s  %10s\n", "layer", "f_attn", "m_act", "kurtosis");
    for (int i = 0; i < n; i++) {
        char a[32] = "-", b[32] = "-", k[32] = "-"; /* "-": not recorded (runs before a probe existed) */
        if (rows[i].has_f) snprintf(a, sizeof a, "%.4g", rows[i].f_attn);
        if (rows[i].has_m) snprintf(b, sizeof b, "%.4g", rows[i].m_act);
        if (rows[i].has_k) snprintf(k, sizeof k, "%.4g", rows[i].kurt);
        fprintf(f, "  %-6lld  %10s  %10s  %10s\n", rows[i].layer, a, b, k);
    }
}

/* One histogram as text bars (the largest bin 40 '#' wide). */
static void print_hist(FILE *f, const StoreHist *h) {
    char ctx[96];
    store_escape(or(h->context, ""), ctx, sizeof ctx);
    if (h->nbins < 0) {
        fprintf(f, "\ngate histogram%s%s (step %lld): unreadable counts\n", *ctx ? " " : "", ctx, h->step);
        return;
    }
    int nb = h->nbins;
    const long long *c = h->counts;
    long long total = 0, mx = 0;
    for (int i = 0; i < nb; i++) {
        total += c[i];
        if (c[i] > mx) mx = c[i];
    }
    fprintf(f, "\ngate histogram%s%s (step %lld, %d bins over [%g, %g], %lld values)\n", *ctx ? " " : "", ctx,
            h->step, nb, h->lo, h->hi, total);
    double wdt = nb ? (h->hi - h->lo) / nb : 0;
    for (int i = 0; i < nb; i++) {
        int bar = mx > 0 ? (int)((40.0 * (double)c[i]) / (double)mx + 0.5) : 0;
        if (bar < 0) bar = 0; /* a merged file may hold anything: the bar never leaves bars[] */
        if (bar > 40) bar = 40;
        char bars[41];
        memset(bars, '#', (size_t)bar);
        bars[bar] = '\0';
        fprintf(f, "  [%7.3f, %7.3f) %10lld%s%s\n", h->lo + i * wdt, h->lo + (i + 1) * wdt, c[i], bar ? " " : "",
                bars);
    }
}

/* The sections after the run's row, each read just before it is printed. */
static int print_sections(Store *s, const char *id, FILE *f) {
    StoreSummaryRow *sum;
    StoreSeries *ser;
    StoreProbe *pr;
    StoreHist *h;
    int n;
    long long n_other;
    if (store_read_summary(s, id, &sum, &n)) return -1;
    print_summary(f, sum, n);
    store_summary_free(sum, n);
    if (store_read_series(s, id, &ser, &n, &n_other)) return -1;
    print_series(f, ser, n, n_other);
    store_series_free(ser, n);
    if (store_read_probes(s, id, &pr, &n)) return -1;
    print_probes(f, pr, n);
    free(pr);
    if (store_read_histograms(s, id, "gate", &h, &n)) return -1;
    for (int i = 0; i < n; i++) print_hist(f, &h[i]);
    store_histograms_free(h, n);
    return 0;
}

int show_run(Store *s, const char *arg, FILE *f, char *err, size_t cap) {
    char *id = store_resolve_run(s, arg);
    if (!id) return store_failed(s, err, cap);
    StoreRunInfo r;
    int rc = store_run_info(s, id, &r);
    if (rc == 0) {
        print_run(f, &r);
        store_run_info_free(&r);
        rc = print_sections(s, id, f);
    }
    free(id);
    if (rc) return store_failed(s, err, cap);
    return check_stream(s, f, err, cap);
}

/* ------------------------------------------------------------------ */
/* --json                                                              */
/* ------------------------------------------------------------------ */

/* ,"NAME":value — one member (the first of an object without the comma). */
static void jkey(FILE *f, const char *name, int first) {
    if (!first) fputc(',', f);
    json_fput(name, f);
    fputc(':', f);
}
static void jtext(FILE *f, const char *name, const char *v) {
    jkey(f, name, 0);
    if (v)
        json_fput_text(v, f);
    else
        fputs("null", f);
}
static void jnum(FILE *f, const char *name, double v) {
    jkey(f, name, 0);
    json_fput_num(v, f);
}
static void jint(FILE *f, const char *name, long long v) {
    jkey(f, name, 0);
    fprintf(f, "%lld", v);
}

int show_ls_json(Store *s, FILE *f, char *err, size_t cap) {
    StoreRunList l;
    if (store_list_runs(s, &l)) return store_failed(s, err, cap);
    fputs("{\"db\":", f);
    json_fput_text(store_path(s), f);
    fputs(",\"runs\":[", f);
    for (int i = 0; i < l.n; i++) {
        const StoreRunRow *r = &l.rows[i];
        fputs(i ? ",{" : "{", f);
        jkey(f, "run_id", 1);
        json_fput_text(or(r->run_id, ""), f);
        jtext(f, "name", r->name);
        jtext(f, "status", r->status);
        jkey(f, "steps", 0);
        if (r->has_steps)
            fprintf(f, "%lld", r->steps);
        else
            fputs("null", f);
        jnum(f, "val_loss", r->val_loss);
        jnum(f, "started_at", r->started_at);
        fputc('}', f);
    }
    fputs("]}\n", f);
    store_run_list_free(&l);
    return check_stream(s, f, err, cap);
}

/* The run's row, as print_run shows it. */
static void json_run(FILE *f, const StoreRunInfo *r) {
    jkey(f, "run_id", 1);
    json_fput_text(or(r->run_id, ""), f);
    jtext(f, "name", r->name);
    jtext(f, "status", r->status);
    jtext(f, "effective_status", r->effective_status);
    jnum(f, "started_at", r->started_at);
    jnum(f, "ended_at", r->ended_at);
    jnum(f, "heartbeat_at", r->heartbeat_at);
    jtext(f, "error_text", r->error_text);
    jkey(f, "diverged_step", 0);
    if (r->has_diverged)
        fprintf(f, "%lld", r->diverged_step);
    else
        fputs("null", f);
    jint(f, "seed", r->seed);
    jint(f, "threads", r->threads);
    jtext(f, "argv", r->argv);
    jtext(f, "code_version", r->code_version);
    jkey(f, "git_dirty", 0);
    fputs(r->git_dirty < 0 ? "null" : r->git_dirty ? "true" : "false", f);
    jtext(f, "host", r->host);
    jtext(f, "cpu_model", r->cpu_model);
    jtext(f, "compiler", r->compiler);
    jtext(f, "cflags", r->cflags);
    jtext(f, "openblas_version", r->openblas_version);
    jtext(f, "sqlite_version", r->sqlite_version);
    jtext(f, "libyaml_version", r->libyaml_version);
    jint(f, "env_id", r->env_id);
    /* the stored config, parsed (a merged file's may be anything) */
    Json *cfg = r->config_json ? json_parse(r->config_json, NULL, 0) : NULL;
    jkey(f, "config", 0);
    json_fput_value(cfg, f);
    json_free(cfg);
}

static int json_sections(Store *s, const char *id, FILE *f) {
    StoreSummaryRow *sum;
    StoreSeries *ser;
    StoreProbe *pr;
    StoreHist *h;
    int n;
    long long n_other;
    if (store_read_summary(s, id, &sum, &n)) return -1;
    jkey(f, "summary", 0);
    for (int i = 0; i < n; i++) {
        fputs(i ? ",{" : "[{", f);
        jkey(f, "key", 1);
        json_fput_text(or(sum[i].key, ""), f);
        jtext(f, "context", or(sum[i].context, ""));
        jnum(f, "value", sum[i].value);
        jtext(f, "text", sum[i].text);
        fputc('}', f);
    }
    fputs(n ? "]" : "[]", f);
    store_summary_free(sum, n);
    if (store_read_series(s, id, &ser, &n, &n_other)) return -1;
    jkey(f, "series", 0);
    for (int i = 0; i < n; i++) {
        fputs(i ? ",{" : "[{", f);
        jkey(f, "key", 1);
        json_fput_text(or(ser[i].key, ""), f);
        jint(f, "points", ser[i].points);
        jint(f, "last_step", ser[i].last_step);
        jnum(f, "last_value", ser[i].last_value);
        fputc('}', f);
    }
    fputs(n ? "]" : "[]", f);
    jint(f, "other_series", n_other);
    store_series_free(ser, n);
    if (store_read_probes(s, id, &pr, &n)) return -1;
    jkey(f, "probes", 0);
    for (int i = 0; i < n; i++) {
        fputs(i ? ",{" : "[{", f);
        jkey(f, "layer", 1);
        fprintf(f, "%lld", pr[i].layer);
        jnum(f, "f_attn", pr[i].has_f ? pr[i].f_attn : NAN);
        jnum(f, "m_act", pr[i].has_m ? pr[i].m_act : NAN);
        jnum(f, "resid_kurtosis", pr[i].has_k ? pr[i].kurt : NAN);
        fputc('}', f);
    }
    fputs(n ? "]" : "[]", f);
    free(pr);
    if (store_read_histograms(s, id, "gate", &h, &n)) return -1;
    jkey(f, "histograms", 0);
    for (int i = 0; i < n; i++) {
        fputs(i ? ",{" : "[{", f);
        jkey(f, "key", 1);
        json_fput("gate", f);
        jtext(f, "context", or(h[i].context, ""));
        jint(f, "step", h[i].step);
        jnum(f, "lo", h[i].lo);
        jnum(f, "hi", h[i].hi);
        jkey(f, "counts", 0);
        if (h[i].nbins < 0) fputs("null", f);
        for (int b = 0; b < h[i].nbins; b++) fprintf(f, "%s%lld", b ? "," : "[", h[i].counts[b]);
        if (h[i].nbins >= 0) fputs(h[i].nbins ? "]" : "[]", f);
        fputc('}', f);
    }
    fputs(n ? "]" : "[]", f);
    store_histograms_free(h, n);
    return 0;
}

int show_run_json(Store *s, const char *arg, FILE *f, char *err, size_t cap) {
    char *id = store_resolve_run(s, arg);
    if (!id) return store_failed(s, err, cap);
    StoreRunInfo r;
    int rc = store_run_info(s, id, &r);
    if (rc == 0) {
        /* read everything before printing: a failure prints nothing */
        char *buf = NULL;
        size_t len = 0;
        FILE *m = open_memstream(&buf, &len);
        if (!m) {
            store_run_info_free(&r);
            free(id);
            snprintf(err, cap, "%s: show: out of memory", store_path(s));
            return -1;
        }
        fputc('{', m);
        json_run(m, &r);
        store_run_info_free(&r);
        rc = json_sections(s, id, m);
        fputs("}\n", m);
        int bad = ferror(m);
        if (fclose(m) != 0 || bad) rc = rc ? rc : (snprintf(err, cap, "%s: show: out of memory", store_path(s)), -2);
        if (rc == 0) fwrite(buf, 1, len, f);
        free(buf);
    }
    free(id);
    if (rc == -1) return store_failed(s, err, cap);
    if (rc) return -1;
    return check_stream(s, f, err, cap);
}
