/* probes.c — see probes.h. */
#include "run/probes.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn/gate.h"
#include "nn/ops.h"
#include "nn/sparse.h"
#include "run/data.h"

int probes_init(Probes *p, const Model *m) {
    memset(p, 0, sizeof *p);
    p->L = m->L;
    p->hpos = m->gs.hpos > 0 ? m->gs.hpos : 1;
    p->lp = calloc((size_t)m->L, sizeof *p->lp);
    p->H = m->H;
    p->Hk = m->Hk;
    p->T = m->cfg.seq_len;
    p->head_mem = calloc((size_t)m->L * p->hpos, sizeof(double));
    size_t lh = (size_t)m->L * m->H;
    p->fattn_head = calloc(lh, sizeof(double));
    int ok = p->lp && p->head_mem && p->fattn_head;
    double **rows[] = {&p->mass0, &p->none, &p->p00, &p->nq, &p->nwin};
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) ok &= (*rows[i] = calloc(lh, sizeof(double))) != NULL;
    ok &= (p->kurt = calloc((size_t)m->L, sizeof(double))) != NULL;
    ok &= (p->nkurt = calloc((size_t)m->L, sizeof(double))) != NULL;
    ok &= (p->sp_recall = calloc((size_t)m->L, sizeof(double))) != NULL;
    ok &= (p->sp_p0 = calloc((size_t)m->L, sizeof(double))) != NULL;
    ok &= (p->sp_rows = calloc((size_t)m->L, sizeof(double))) != NULL;
    if (!ok) {
        probes_free(p);
        return -1;
    }
    /* the histogram's range is an attribute of the activation (gate_acts[]);
     * out-of-range scores go into the end bins */
    const GateAct *act = &gate_acts[m->cfg.gate.activation];
    for (int l = 0; l < m->L; l++) {
        p->lp[l].head_sum = p->head_mem + (size_t)l * p->hpos;
        p->lp[l].hist_lo = act->hist_lo;
        p->lp[l].hist_hi = act->hist_hi;
        p->lp[l].mact = -1;
    }
    return 0;
}

static void bb_free_probe(BBProbe *b) {
    if (!b) return;
    free(b->is_trig);
    for (int q = 0; q < 2; q++) {
        free(b->bos[q]), free(b->gate[q]), free(b->hist[q]);
        free(b->none[q]), free(b->nnone[q]);
    }
    free(b->prev), free(b->v0), free(b->vrest), free(b->r0), free(b->rrest);
    free(b);
}

void probes_free(Probes *p) {
    bb_free_probe(p->bb);
    free(p->lp);
    free(p->head_mem);
    free(p->fattn_head);
    free(p->mass0), free(p->none), free(p->p00), free(p->nq), free(p->nwin), free(p->kurt), free(p->nkurt);
    free(p->sp_recall), free(p->sp_p0), free(p->sp_rows);
    memset(p, 0, sizeof *p);
}

static double dot(const real *a, const real *b, int d) {
    double s = 0;
    for (int i = 0; i < d; i++) s += (double)a[i] * b[i];
    return s;
}

void probes_accumulate(Probes *p, const Model *m) {
    int B = m->B, T = m->T, H = m->H, C = m->C;
    size_t n = (size_t)B * T;
    p->T = T;
    for (int l = 0; l < m->L; l++) {
        const LayerActs *a = &m->la[l];
        LayerProbe *lp = &p->lp[l];
        AttnQKV sc; /* the scored q and k (width sc.d: d_head, or d_head + d_R with latent KV) */
        model_attn_qkv(m, l, &sc);
        int grp = H / sc.hk;
        double scale = 1 / sqrt((double)sc.d);
        for (int b = 0; b < B; b++)
            for (int h = 0; h < H; h++) {
                const real *k0 = sc.k + (size_t)(b * T) * sc.sk + (size_t)(h / grp) * sc.d;
                double hs = 0;
                for (int i = 1; i < T; i++) {
                    const real *qi = sc.q + (size_t)(b * T + i) * sc.sq + (size_t)h * sc.d;
                    double lse = a->lse[((size_t)b * H + h) * T + i];
                    if (sparse_attends(m, l, b, i, 0)) /* a sparse row may not see key 0 */
                        hs += attn_weight(m->cfg.attn.normalizer, scale * dot(qi, k0, sc.d), lse);
                }
                lp->n_fattn += T - 1;
                p->fattn_head[(size_t)l * H + h] += hs;
            }
        const real *x = l + 1 < m->L ? m->la[l + 1].x_in : m->x_out;
        for (size_t i = 0; i < n * C; i++) {
            double v = fabs((double)x[i]);
            if (v > lp->mact) lp->mact = v, lp->mact_pos = (long)((i / C) % T), lp->mact_chan = (long)(i % C);
        }
        const real *y, *out;
        int sy, so;
        if (!model_gate_io(m, l, &y, &sy, &out, &so)) continue;
        int hp = m->gs.hpos, D = m->gs.dh, W = hp * D;
        for (size_t t = 0; t < n; t++) {
            const real *S = a->S + t * W;
            for (int h = 0; h < hp; h++) {
                double hs = 0;
                for (int d = 0; d < D; d++) {
                    double s = S[h * D + d];
                    hs += s;
                    lp->gate_lt01 += s < 0.1;
                    lp->gate_lt001 += s < 0.01;
                    int bin = (int)floor((s - lp->hist_lo) / (lp->hist_hi - lp->hist_lo) * GATE_HIST_BINS);
                    bin = bin < 0 ? 0 : bin >= GATE_HIST_BINS ? GATE_HIST_BINS - 1 : bin;
                    lp->hist[bin]++;
                    double yb = fabs((double)y[t * sy + h * D + d]), ya = fabs((double)out[t * so + h * D + d]);
                    lp->y_abs_before += yb;
                    lp->y_abs_after += ya;
                    lp->y_small_before[0] += yb < 1e-2, lp->y_small_before[1] += yb < 1e-3;
                    lp->y_small_after[0] += ya < 1e-2, lp->y_small_after[1] += ya < 1e-3;
                }
                lp->head_sum[h] += hs / D;
                lp->gate_sum += hs;
            }
            lp->gate_n += W;
        }
    }
}

/* the layer's F-Attn is derived from its heads' sums */
double probe_fattn(const Probes *p, int l) {
    double s = 0;
    for (int h = 0; h < p->H; h++) s += p->fattn_head[(size_t)l * p->H + h];
    return p->lp[l].n_fattn ? s / p->lp[l].n_fattn : 0;
}

double probe_gate_mean(const Probes *p, int l) { return p->lp[l].gate_n ? p->lp[l].gate_sum / p->lp[l].gate_n : 0; }

double probe_fattn_head(const Probes *p, int l, int h) {
    double n = p->lp[l].n_fattn / p->H;
    return n > 0 ? p->fattn_head[(size_t)l * p->H + h] / n : 0;
}

double probe_uniform_fattn(int T) {
    double s = 0;
    for (int i = 1; i < T; i++) s += 1.0 / (i + 1);
    return T > 1 ? s / (T - 1) : 1;
}

/* What the sink test reads of a head: its F-Attn, or for Bigram-Backcopy
 * its attention on BOS from other queries (0 when there were none). */
static double sink_attn(const Probes *p, int l, int h) {
    if (!p->bb) return probe_fattn_head(p, l, h);
    double f = probe_bb_bos(p, l, h, BB_OTHER);
    return isnan(f) ? 0 : f;
}

/* ... and of a layer: the mean over its heads (F-Attn itself, as every
 * head has the same number of terms). */
static double sink_layer_attn(const Probes *p, int l) {
    if (!p->bb) return probe_fattn(p, l);
    double s = 0;
    for (int h = 0; h < p->H; h++) s += sink_attn(p, l, h);
    return s / p->H;
}

int probe_sink_heads(const Probes *p) {
    int k = 0;
    for (int l = 0; l < p->L; l++)
        for (int h = 0; h < p->H; h++) k += sink_attn(p, l, h) > SINK_HEAD_FATTN;
    return k;
}

int probe_sink_formed(const Probes *p, int *layer, int *head) {
    double u = probe_uniform_fattn(p->T), best = -1;
    int bl = -1, bh = -1;
    for (int l = 0; l < p->L; l++) {
        if (sink_layer_attn(p, l) < SINK_LAYER_RATIO * u) continue;
        for (int h = 0; h < p->H; h++) {
            double f = sink_attn(p, l, h);
            if (f > SINK_HEAD_FATTN && f > best) best = f, bl = l, bh = h;
        }
    }
    if (layer) *layer = bl;
    if (head) *head = bh;
    return bl >= 0;
}

/* ------------------------------------------------- attention-row probes */

void probes_rows_add(Probes *p, int l, int h, const real *P, int T) {
    if (T < 1) return;
    size_t c = (size_t)l * p->H + h;
    double m0 = 0, none = 0;
    for (int i = 1; i < T; i++) {
        const real *row = P + (size_t)i * T;
        double sum = 0;
        for (int j = 0; j <= i; j++) sum += row[j];
        m0 += row[0];
        none += 1 - sum;
    }
    p->mass0[c] += m0;
    p->none[c] += none;
    p->p00[c] += P[0];
    p->nq[c] += T - 1;
    p->nwin[c]++;
}

void probes_kurtosis_add(Probes *p, int l, const real *x, size_t n) {
    double mean = 0, m2 = 0, m4 = 0;
    if (n == 0) return;
    for (size_t i = 0; i < n; i++) mean += x[i];
    mean /= (double)n;
    for (size_t i = 0; i < n; i++) {
        double d = x[i] - mean, d2 = d * d;
        m2 += d2;
        m4 += d2 * d2;
    }
    m2 /= (double)n, m4 /= (double)n;
    if (!(m2 > 0)) return; /* a constant window has no kurtosis */
    p->kurt[l] += m4 / (m2 * m2);
    p->nkurt[l]++;
}

/* The weights of window b, layer l, query head h into P (T x T), from the
 * reference attention (its weights alone, no output).  The one place that
 * knows how attention weights are formed. */
static int head_weights(const Model *m, int l, int b, int h, real *P) {
    const LayerActs *a = &m->la[l];
    AttnQKV sc;
    model_attn_qkv(m, l, &sc);
    int T = m->T, d = sc.d, g = h / (m->H / sc.hk);
    /* z (B, H, T): the virtual key's logits of this window and head, where the normaliser has one */
    AttnNorm nm = {m->cfg.attn.normalizer, a->z ? a->z + ((size_t)b * m->H + h) * T : NULL};
    return attention_forward_ref_norm(NULL, P, sc.q + (size_t)b * T * sc.sq + (size_t)h * d, sc.sq,
                                      sc.k + (size_t)b * T * sc.sk + (size_t)g * d, sc.sk,
                                      sc.v + (size_t)b * T * sc.sv + (size_t)g * d, sc.sv, 1, T, 1, 1, d,
                                      1 / sqrt((real)d), &nm);
}

int probes_rows_accumulate(Probes *p, const Model *m, const int *tokens) {
    int T = m->T;
    real *P = malloc(sizeof(real) * (size_t)T * T);
    int rc = P ? 0 : -1;
    for (int b = 0; rc == 0 && b < m->B; b++)
        for (int l = 0; rc == 0 && l < m->L; l++) {
            for (int h = 0; rc == 0 && h < m->H; h++)
                if ((rc = head_weights(m, l, b, h, P)) == 0) {
                    double rec = 0; /* a sparse layer: the dense weights' mass inside S_t, then the weights over S_t */
                    sparse_restrict_weights(m, l, b, P, T, &rec);
                    p->sp_recall[l] += rec / m->H;
                    probes_rows_add(p, l, h, P, T);
                    if (p->bb && tokens) probes_bb_rows_add(p, l, h, P, T, tokens + (size_t)b * T);
                }
            for (int t = m->cfg.attn.topk; sparse_selection(m, l) && t < T; t++)
                p->sp_rows[l]++, p->sp_p0[l] += sparse_attends(m, l, b, t, 0);
            const real *x = l + 1 < m->L ? m->la[l + 1].x_in : m->x_out;
            probes_kurtosis_add(p, l, x + (size_t)b * T * m->C, (size_t)T * m->C);
        }
    free(P);
    return rc;
}

static double ratio(double s, double n) { return n > 0 ? s / n : NAN; }

/* A layer's (l >= 0) or every layer's (l = -1) ratio of two L-sums. */
static double layer_ratio(const Probes *p, const double *s, const double *n, int l) {
    if (l >= 0) return ratio(s[l], n[l]);
    double a = 0, b = 0;
    for (int i = 0; i < p->L; i++) a += s[i], b += n[i];
    return ratio(a, b);
}

double probe_sparse_recall(const Probes *p, int l) { return layer_ratio(p, p->sp_recall, p->sp_rows, l); }
double probe_sparse_p0(const Probes *p, int l) { return layer_ratio(p, p->sp_p0, p->sp_rows, l); }
double probe_sparse_gap(const Probes *p) { return ratio(p->sp_gap, p->sp_gap_n); }

void probes_sparse_gap_add(Probes *p, double sparse_loss, double dense_loss, int nb) {
    p->sp_gap += (sparse_loss - dense_loss) * nb;
    p->sp_gap_n += nb;
}

double probe_mass0(const Probes *p, int l, int h) {
    size_t c = (size_t)l * p->H + h;
    return ratio(p->mass0[c], p->nq[c]);
}

double probe_mass_none(const Probes *p, int l, int h) {
    size_t c = (size_t)l * p->H + h;
    return ratio(p->none[c], p->nq[c]);
}

double probe_first_alpha(const Probes *p, int l, int h) {
    size_t c = (size_t)l * p->H + h;
    return ratio(p->mass0[c] + p->p00[c], p->nq[c] + p->nwin[c]);
}

double probe_sink_eps_share(const Probes *p, int l) {
    int l0 = l < 0 ? 0 : l, l1 = l < 0 ? p->L : l + 1;
    double k = 0, n = 0;
    for (int i = l0; i < l1; i++)
        for (int h = 0; h < p->H; h++) {
            double a = probe_first_alpha(p, i, h);
            if (isnan(a)) continue;
            k += a > SINK_EPS;
            n++;
        }
    return ratio(k, n);
}

double probe_resid_kurtosis(const Probes *p, int l) { return ratio(p->kurt[l], p->nkurt[l]); }

/* ------------------------------------------------------ Bigram-Backcopy */

int probes_bb_init(Probes *p, const Model *m, const unsigned char *is_trig, int ntok) {
    BBProbe *b = calloc(1, sizeof *b);
    if (!b || ntok < 1) {
        free(b);
        return -1;
    }
    size_t lh = (size_t)m->L * m->H, lk = (size_t)m->L * m->Hk, lg = (size_t)m->L * p->hpos;
    int ok = (b->is_trig = malloc((size_t)ntok)) != NULL;
    for (int q = 0; q < 2; q++) {
        ok &= (b->bos[q] = calloc(lh, sizeof(double))) != NULL;
        ok &= (b->gate[q] = calloc(lg, sizeof(double))) != NULL;
        ok &= (b->hist[q] = calloc((size_t)m->L * GATE_HIST_BINS, sizeof(long long))) != NULL;
        ok &= (b->none[q] = calloc(lh, sizeof(double))) != NULL;
        ok &= (b->nnone[q] = calloc(lh, sizeof(double))) != NULL;
    }
    ok &= (b->prev = calloc(lh, sizeof(double))) != NULL;
    ok &= (b->v0 = calloc(lk, sizeof(double))) != NULL;
    ok &= (b->vrest = calloc(lk, sizeof(double))) != NULL;
    ok &= (b->r0 = calloc((size_t)m->L, sizeof(double))) != NULL;
    ok &= (b->rrest = calloc((size_t)m->L, sizeof(double))) != NULL;
    if (!ok) {
        bb_free_probe(b);
        return -1;
    }
    memcpy(b->is_trig, is_trig, (size_t)ntok);
    b->ntok = ntok;
    b->gated = m->cfg.gate.position != GP_NONE;
    bb_free_probe(p->bb);
    p->bb = b;
    return 0;
}

static double norm(const real *x, int d) { return sqrt(dot(x, x, d)); }

/* The query type of position i of window w (BB_TRIGGER or BB_OTHER);
 * tokens outside the task count as others. */
static int query_type(const BBProbe *b, const int *w, int i) {
    if (w[i] < 0 || w[i] >= b->ntok) return BB_OTHER;
    return bb_backcopy_at(b->is_trig, w, i) ? BB_TRIGGER : BB_OTHER;
}

void probes_bb_accumulate(Probes *p, const Model *m, const int *tokens) {
    BBProbe *b = p->bb;
    if (!b) return;
    int B = m->B, T = m->T, H = m->H, Hk = m->Hk, dh = m->dh, C = m->C, V = m->V;
    p->T = T;
    for (int bi = 0; bi < B; bi++) {
        const int *w = tokens + (size_t)bi * T;
        /* the loss at position t predicts token t+1: a trigger position when the rule decides it */
        for (int t = 0; t < T; t++) {
            size_t r = (size_t)bi * T + t;
            double pt = m->probs[r * V + m->targets[r]];
            b->loss[query_type(b, w, t)] -= log(pt > 1e-30 ? pt : 1e-30);
            b->nloss[query_type(b, w, t)]++;
        }
        for (int i = 1; i < T; i++) b->nq[query_type(b, w, i)]++;
        b->nwin++;
        b->nrest += T - 1;
        for (int l = 0; l < m->L; l++) {
            const LayerActs *a = &m->la[l];
            AttnQKV sc; /* the scored q and k (width sc.d: d_head, or d_head + d_R with latent KV) */
            model_attn_qkv(m, l, &sc);
            int grp = H / sc.hk;
            double scale = 1 / sqrt((double)sc.d);
            for (int h = 0; h < H; h++) {
                const real *kb = sc.k + (size_t)(bi * T) * sc.sk + (size_t)(h / grp) * sc.d;
                double *bos = b->bos[0] + (size_t)l * H + h, *bos1 = b->bos[1] + (size_t)l * H + h;
                for (int i = 1; i < T; i++) {
                    const real *qi = sc.q + (size_t)(bi * T + i) * sc.sq + (size_t)h * sc.d;
                    double lse = a->lse[((size_t)bi * H + h) * T + i];
                    double p0 = sparse_attends(m, l, bi, i, 0)
                                    ? attn_weight(m->cfg.attn.normalizer, scale * dot(qi, kb, sc.d), lse)
                                    : 0;
                    if (query_type(b, w, i) == BB_TRIGGER) {
                        *bos += p0;
                        if (sparse_attends(m, l, bi, i, i - 1))
                            b->prev[(size_t)l * H + h] += attn_weight(
                                m->cfg.attn.normalizer, scale * dot(qi, kb + (size_t)(i - 1) * sc.sk, sc.d), lse);
                    } else {
                        *bos1 += p0;
                    }
                }
            }
            int sv;
            const real *v = model_attn_values(m, l, &sv);
            for (int g = 0; g < Hk; g++) {
                const real *vb = v + (size_t)(bi * T) * sv + (size_t)g * dh;
                b->v0[(size_t)l * Hk + g] += norm(vb, dh);
                for (int i = 1; i < T; i++) b->vrest[(size_t)l * Hk + g] += norm(vb + (size_t)i * sv, dh);
            }
            const real *x = (l + 1 < m->L ? m->la[l + 1].x_in : m->x_out) + (size_t)(bi * T) * C;
            b->r0[l] += norm(x, C);
            for (int i = 1; i < T; i++) b->rrest[l] += norm(x + (size_t)i * C, C);
            const real *y, *out;
            int sy, so;
            if (!model_gate_io(m, l, &y, &sy, &out, &so)) continue;
            int hp = m->gs.hpos, D = m->gs.dh, W = hp * D;
            const LayerProbe *lp = &p->lp[l];
            for (int i = 1; i < T; i++) {
                const real *S = a->S + (size_t)(bi * T + i) * W;
                int ty = query_type(b, w, i);
                long long *hist = b->hist[ty] + (size_t)l * GATE_HIST_BINS;
                for (int h = 0; h < hp; h++) {
                    double hs = 0;
                    for (int d = 0; d < D; d++) {
                        double sc = S[h * D + d];
                        hs += sc;
                        int bin = (int)floor((sc - lp->hist_lo) / (lp->hist_hi - lp->hist_lo) * GATE_HIST_BINS);
                        hist[bin < 0 ? 0 : bin >= GATE_HIST_BINS ? GATE_HIST_BINS - 1 : bin]++;
                    }
                    b->gate[ty][(size_t)l * hp + h] += hs / D;
                }
            }
        }
    }
}

void probes_bb_rows_add(Probes *p, int l, int h, const real *P, int T, const int *w) {
    BBProbe *b = p->bb;
    if (!b) return;
    size_t c = (size_t)l * p->H + h;
    for (int i = 1; i < T; i++) {
        double sum = 0;
        for (int j = 0; j <= i; j++) sum += P[(size_t)i * T + j];
        int ty = query_type(b, w, i);
        b->none[ty][c] += 1 - sum;
        b->nnone[ty][c]++;
    }
}

double probe_bb_none(const Probes *p, int l, int h, int type) {
    size_t c = (size_t)l * p->H + h;
    return p->bb ? ratio(p->bb->none[type][c], p->bb->nnone[type][c]) : NAN;
}

double probe_bb_loss(const Probes *p, int type) { return p->bb ? ratio(p->bb->loss[type], p->bb->nloss[type]) : NAN; }

double probe_bb_trigger_share(const Probes *p) {
    return p->bb ? ratio(p->bb->nq[BB_TRIGGER], p->bb->nq[BB_TRIGGER] + p->bb->nq[BB_OTHER]) : NAN;
}

double probe_bb_bos(const Probes *p, int l, int h, int type) {
    return p->bb ? ratio(p->bb->bos[type][(size_t)l * p->H + h], p->bb->nq[type]) : NAN;
}

double probe_bb_prev(const Probes *p, int l, int h) {
    return p->bb ? ratio(p->bb->prev[(size_t)l * p->H + h], p->bb->nq[BB_TRIGGER]) : NAN;
}

/* mean at position 0 over mean at positions >= 1 */
static double bos_over_rest(const BBProbe *b, double s0, double srest) {
    return ratio(ratio(s0, b->nwin), ratio(srest, b->nrest));
}

double probe_bb_value_drain(const Probes *p, int l, int h) {
    if (!p->bb) return NAN;
    size_t g = (size_t)l * p->Hk + (size_t)(h / (p->H / p->Hk));
    return bos_over_rest(p->bb, p->bb->v0[g], p->bb->vrest[g]);
}

double probe_bb_residual_peak(const Probes *p, int l) {
    return p->bb ? bos_over_rest(p->bb, p->bb->r0[l], p->bb->rrest[l]) : NAN;
}

double probe_bb_gate(const Probes *p, int l, int h, int type) {
    if (!p->bb || !p->bb->gated) return NAN;
    return ratio(p->bb->gate[type][(size_t)l * p->hpos + h], p->bb->nq[type]);
}
