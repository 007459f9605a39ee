/* probes.c — see probes.h. */
#include "run/probes.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn/gate.h"

int probes_init(Probes *p, const Model *m) {
    memset(p, 0, sizeof *p);
    p->L = m->L;
    p->hpos = m->gs.hpos > 0 ? m->gs.hpos : 1;
    p->lp = calloc((size_t)m->L, sizeof *p->lp);
    p->H = m->H;
    p->T = m->cfg.seq_len;
    p->head_mem = calloc((size_t)m->L * p->hpos, sizeof(double));
    p->fattn_head = calloc((size_t)m->L * m->H, sizeof(double));
    if (!p->lp || !p->head_mem || !p->fattn_head) {
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

void probes_free(Probes *p) {
    free(p->lp);
    free(p->head_mem);
    free(p->fattn_head);
    memset(p, 0, sizeof *p);
}

static double dot(const real *a, const real *b, int d) {
    double s = 0;
    for (int i = 0; i < d; i++) s += (double)a[i] * b[i];
    return s;
}

void probes_accumulate(Probes *p, const Model *m) {
    int B = m->B, T = m->T, H = m->H, dh = m->dh, grp = m->H / m->Hk, C = m->C;
    double scale = 1 / sqrt((double)dh);
    size_t n = (size_t)B * T;
    p->T = T;
    for (int l = 0; l < m->L; l++) {
        const LayerActs *a = &m->la[l];
        LayerProbe *lp = &p->lp[l];
        for (int b = 0; b < B; b++)
            for (int h = 0; h < H; h++) {
                const real *k0 = a->kr + (size_t)(b * T) * m->nkv + (size_t)(h / grp) * dh;
                double hs = 0;
                for (int i = 1; i < T; i++) {
                    const real *qi = a->qr + (size_t)(b * T + i) * m->nq + (size_t)h * dh;
                    double lse = a->lse[((size_t)b * H + h) * T + i];
                    hs += exp(scale * dot(qi, k0, dh) - lse);
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

int probe_sink_heads(const Probes *p) {
    int k = 0;
    for (int l = 0; l < p->L; l++)
        for (int h = 0; h < p->H; h++) k += probe_fattn_head(p, l, h) > SINK_HEAD_FATTN;
    return k;
}

int probe_sink_formed(const Probes *p, int *layer, int *head) {
    double u = probe_uniform_fattn(p->T), best = -1;
    int bl = -1, bh = -1;
    for (int l = 0; l < p->L; l++) {
        if (probe_fattn(p, l) < SINK_LAYER_RATIO * u) continue;
        for (int h = 0; h < p->H; h++) {
            double f = probe_fattn_head(p, l, h);
            if (f > SINK_HEAD_FATTN && f > best) best = f, bl = l, bh = h;
        }
    }
    if (layer) *layer = bl;
    if (head) *head = bh;
    return bl >= 0;
}
