/* infer.c — see infer.h. */
#include "run/infer.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/quant.h"
#include "nn/rng.h"
#include "nn/sparse.h"
#include "run/store.h"
#include "util/util.h"

const char *const drop_sel_names[SEL__COUNT] = {"gate", "random", "entropy"};
const char *const lin_site_names[LIN__COUNT] = {"qkv", "wo", "ffn_in", "ffn_down"};

/* The random keys' stream tag (rng_stream), fixed: the same pairs drop in
 * every run and every invocation. */
#define INFER_RANDOM_STREAM 0xD409ull

/* --------------------------------------------------------------- specs */

/* An integer of bits in [QUANT_MIN_BITS, QUANT_MAX_BITS] at *s; advances *s. */
static int parse_bits(const char **s, int *bits) {
    char *end;
    if (!isdigit((unsigned char)**s)) return -1; /* no sign, no space */
    long b = strtol(*s, &end, 10);
    if (end == *s || b < QUANT_MIN_BITS || b > QUANT_MAX_BITS) return -1;
    *bits = (int)b;
    *s = end;
    return 0;
}

int quant_spec_parse(const char *s, QuantSpec *q, char *err, size_t cap) {
    memset(q, 0, sizeof *q);
    const char *p = s;
    if (strcmp(s, "float") == 0) return 0;
    if (*p == 'w') {
        p++;
        if (parse_bits(&p, &q->wbits)) goto bad;
        if (*p == 'g') {
            char *end;
            if (!isdigit((unsigned char)p[1])) goto bad;
            long g = strtol(++p, &end, 10);
            if (end == p || g < 2 || g > 1 << 20) goto bad;
            q->wgroup = (int)g;
            p = end;
        }
        if (*p == '-') {
            if (*++p != 'a') goto bad;
        } else if (*p)
            goto bad;
    }
    if (*p == 'a') {
        p++;
        if (parse_bits(&p, &q->abits)) goto bad;
        if (strcmp(p, "tensor") == 0) q->agran = QA_TENSOR;
        else if (strcmp(p, "token") == 0) q->agran = QA_TOKEN;
        else goto bad;
        p += strlen(p);
    }
    if (*p || (!q->wbits && !q->abits)) goto bad;
    return 0;
bad:
    snprintf(err, cap,
             "\"%.40s\" is not a quantization scheme: expected float or [wB[gG]][-aB(tensor|token)], B bits in [%d, %d] "
             "(e.g. w8-a8tensor, w8-a8token, w4g32)",
             s, QUANT_MIN_BITS, QUANT_MAX_BITS);
    return -1;
}

void quant_spec_name(const QuantSpec *q, char *buf, size_t cap) {
    int n = 0;
    buf[0] = 0;
    if (!q->wbits && !q->abits) {
        snprintf(buf, cap, "float");
        return;
    }
    if (q->wbits) n = snprintf(buf, cap, q->wgroup ? "w%dg%d" : "w%d", q->wbits, q->wgroup);
    if (q->abits && n >= 0 && (size_t)n < cap)
        snprintf(buf + n, cap - (size_t)n, "%sa%d%s", q->wbits ? "-" : "", q->abits,
                 q->agran == QA_TENSOR ? "tensor" : "token");
}

int drop_spec_parse(const char *s, DropSpec *d, char *err, size_t cap) {
    char *end;
    int gate = strncmp(s, "gate:", 5) == 0, frac = strncmp(s, "frac:", 5) == 0;
    if (gate || frac) {
        d->kind = gate ? DROP_GATE : DROP_FRAC;
        const char *v = s + 5;
        d->v = strtod(v, &end);
        /* a plain decimal: no sign, space, hex or nan */
        int plain = (isdigit((unsigned char)*v) || (*v == '.' && isdigit((unsigned char)v[1]))) &&
                    strspn(v, "0123456789.eE+-") == strlen(v);
        if (plain && !*end && isfinite(d->v) && d->v >= 0 && (gate ? d->v <= 1e3 : d->v <= 1)) return 0;
    }
    snprintf(err, cap, "\"%.40s\" is not a drop rule: expected gate:TAU (TAU in [0, 1000]) or frac:F (F in [0, 1])", s);
    return -1;
}

int infer_has_g1_gate(const Model *m) {
    return m->cfg.gate.position == GP_SDPA && m->cfg.gate.form == GF_MULTIPLICATIVE;
}

/* ---------------------------------------------------------------- hook */

int infer_hook_init(InferHook *h, int L) {
    memset(h, 0, sizeof *h);
    h->sel = SEL_NONE;
    h->dropped = calloc((size_t)L, sizeof *h->dropped);
    h->pairs = calloc((size_t)L, sizeof *h->pairs);
    if (!h->dropped || !h->pairs) {
        infer_hook_free(h);
        return -1;
    }
    return 0;
}

void infer_hook_free(InferHook *h) {
    free(h->dropped);
    free(h->pairs);
    free(h->buf);
    free(h->key);
    memset(h, 0, sizeof *h);
}

double infer_attn_entropy(const Model *m, int l, int b, int h, int i) {
    const LayerActs *a = &m->la[l];
    AttnQKV sc; /* the scored q and k (width d_head, or d_head + d_R with latent KV) */
    model_attn_qkv(m, l, &sc);
    int T = m->T, dh = sc.d, grp = m->H / sc.hk;
    double scale = 1 / sqrt((double)dh), lse = a->lse[((size_t)b * m->H + h) * T + i], ps = 0;
    const real *q = sc.q + (size_t)(b * T + i) * sc.sq + (size_t)h * dh;
    for (int j = 0; j <= i; j++) {
        if (!sparse_attends(m, l, b, i, j)) continue; /* a top-k sparse row: its softmax runs over S_t */
        const real *k = sc.k + (size_t)(b * T + j) * sc.sk + (size_t)(h / grp) * dh;
        double s = 0;
        for (int d = 0; d < dh; d++) s += (double)q[d] * k[d];
        s *= scale;
        ps += exp(s - lse) * s;
    }
    double H = lse - ps;
    return H > 0 ? H : 0; /* round-off below 0 for a one-hot row */
}

double infer_attn_entropy_rel(const Model *m, int l, int b, int h, int i) {
    int n = sparse_selection(m, l) ? sparse_nsel(m->cfg.attn.topk, i) : i + 1; /* the keys the row attended to */
    return n <= 1 ? 0 : infer_attn_entropy(m, l, b, h, i) / log((double)n);
}

/* Mean |gate score| of head h at token t of layer l (G1: scores n x nq). */
static double gate_head_score(const Model *m, int l, int t, int h) {
    const real *S = m->la[l].S + (size_t)t * m->nq + (size_t)h * m->dh;
    double s = 0;
    for (int d = 0; d < m->dh; d++) s += fabs((double)S[d]);
    return s / m->dh;
}

/* Ascending key, then index: a total order (keys are never NaN), so the
 * selection is fixed. */
static int by_key(const void *x, const void *y) {
    const InferKey *a = x, *b = y;
    return a->key < b->key ? -1 : a->key > b->key ? 1 : (a->idx > b->idx) - (a->idx < b->idx);
}

/* Zero the dropped (token, head) slices of x (n x nq, contiguous), count
 * them and the FLOPs they save.  0 or -1 (out of memory). */
static int drop_pairs(InferHook *h, const Model *m, int l, real *x, int n) {
    int H = m->H, dh = m->dh, T = m->T, np = n * H;
    if ((size_t)np > h->kcap) {
        InferKey *k = realloc(h->key, sizeof *k * (size_t)np);
        if (!k) return -1;
        h->key = k;
        h->kcap = (size_t)np;
    }
    int ndrop = 0;
    if (h->sel == SEL_GATE) {
        for (int p = 0; p < np; p++)
            if (gate_head_score(m, l, p / H, p % H) < h->tau) h->key[ndrop++].idx = p;
    } else {
        Rng r = rng_stream(h->window * 4096u + (uint64_t)l, INFER_RANDOM_STREAM);
        for (int p = 0; p < np; p++) {
            /* entropy: the most diffuse pairs first (key -H / log(i+1)) */
            double k = h->sel == SEL_RANDOM ? rng_uniform(&r) : -infer_attn_entropy_rel(m, l, p / H / T, p % H, p / H % T);
            h->key[p] = (InferKey){isnan(k) ? INFINITY : k, p};
        }
        qsort(h->key, (size_t)np, sizeof *h->key, by_key);
        ndrop = h->match ? h->match[h->window * (uint64_t)m->L + (uint64_t)l] : (int)llround(h->frac[l] * np);
        if (ndrop > np) ndrop = np;
    }
    /* the gate rule's count per (window, layer), for its matched controls */
    if (h->sel == SEL_GATE && h->record) h->record[h->window * (uint64_t)m->L + (uint64_t)l] = ndrop;
    for (int q = 0; q < ndrop; q++) {
        int p = h->key[q].idx, t = p / H, i = t % T;
        memset(x + (size_t)t * m->nq + (size_t)(p % H) * dh, 0, sizeof(real) * (size_t)dh);
        h->flops_wo += 2.0 * dh * m->C;
        int keys = sparse_selection(m, l) ? sparse_nsel(m->cfg.attn.topk, i) : i + 1; /* a top-k sparse row: S_i */
        h->flops_attn += 2.0 * dh * m->C + 2.0 * 2.0 * dh * keys;
    }
    h->dropped[l] += ndrop;
    h->pairs[l] += np;
    return 0;
}

const real *infer_hook(void *ctx, const Model *m, int l, LinearSite site, const real *x, int n, int k, int *ld) {
    InferHook *h = ctx;
    if (h->measure)
        for (int t = 0; t < n; t++) {
            double mx = 0;
            for (int j = 0; j < k; j++) mx = fmax(mx, fabs((double)x[(size_t)t * *ld + j]));
            h->in_max[site] = fmax(h->in_max[site], mx);
            h->tok_sum[site] += mx;
            h->tok_n[site]++;
        }
    int drop = site == LIN_WO && h->sel != SEL_NONE;
    if (!drop && !h->abits) return x;
    size_t need = (size_t)n * k;
    if (need > h->cap) {
        real *b = realloc(h->buf, sizeof *b * need);
        if (!b) return NULL;
        h->buf = b;
        h->cap = need;
    }
    for (int t = 0; t < n; t++) memcpy(h->buf + (size_t)t * k, x + (size_t)t * *ld, sizeof(real) * (size_t)k);
    *ld = k;
    if (drop && drop_pairs(h, m, l, h->buf, n)) return NULL;
    if (h->abits == 0) return h->buf;
    h->nonfinite += h->agran == QA_TENSOR ? quant_tensor(h->buf, n, k, k, h->abits)
                                          : quant_rows(h->buf, n, k, k, h->abits, 0);
    return h->buf;
}

long infer_quant_weights(Model *m, const QuantSpec *q) {
    if (!q->wbits) return 0;
    long bad = 0;
    Arena *A = &m->p;
    for (int l = 0; l < m->L; l++) {
        const LayerParams *p = &m->lp[l];
        /* the fused projection's rows: wq | wk | wv | wg, each row one output */
        bad += quant_rows(AW(A, p->wq), m->Np, m->C, m->C, q->wbits, q->wgroup);
        bad += quant_rows(AW(A, p->wo), m->C, m->nq, m->nq, q->wbits, q->wgroup);
        bad += quant_rows(AW(A, p->w_gate), 2 * m->F, m->C, m->C, q->wbits, q->wgroup); /* w_gate | w_up */
        bad += quant_rows(AW(A, p->w_down), m->C, m->F, m->F, q->wbits, q->wgroup);
    }
    return bad;
}

int infer_windows_loss(Model *m, InferHook *h, const int *win, int count, int T, double *loss) {
    model_set_linear_hook(m, h ? infer_hook : NULL, h);
    double sum = 0;
    int rc = 0;
    for (int w = 0; w < count; w++) {
        if (h) h->window = (uint64_t)w;
        const int *x = win + (size_t)w * (T + 1);
        double v = model_forward(m, x, x + 1, 1, T);
        if (isnan(v)) {
            rc = -1;
            break;
        }
        /* the loss clamps probabilities, so a non-finite logit would read
         * as a finite (huge) loss: refuse it */
        for (size_t j = 0; j < (size_t)T * m->V && rc == 0; j++)
            if (!isfinite(m->logits[j])) rc = -2;
        if (rc) break;
        sum += v;
    }
    model_set_linear_hook(m, NULL, NULL);
    *loss = sum / count;
    return rc;
}
