/*
 * probes.h — the paper's analysis metrics, read off the last forward pass.
 *
 * F-Attn (layer l): attention on position 0, averaged over batch, heads and
 *   query positions i >= 1 (position 0 can only attend to itself, so it is
 *   excluded).  Computed exactly from the saved rotated q/k and each row's
 *   log-sum-exp: p(i, 0) = exp(scale · q_i·k_0 − lse_i); no T×T map is held.
 *   Also kept per (layer, query head): averages over heads hide sinks,
 *   which are per head.
 * Uniform level: F-Attn of uniform causal attention at length T, the mean
 *   over i = 1..T-1 of 1/(i+1) (0.0349 at T = 128).
 * Sink formed (the suite's definition, README "Attention sink"): some head
 *   of some layer puts more than SINK_HEAD_FATTN of its attention on
 *   position 0 (its F-Attn over the held-out windows), and that layer's
 *   mean F-Attn is at least SINK_LAYER_RATIO times the uniform level.
 * M-Act (layer l): max |h| over the layer's output residual stream, with the
 *   (position, channel) where it occurs.
 * Gate scores: mean per layer and head, a fixed-bin histogram, the share of
 *   scores under 0.1 and 0.01, mean |Y| before and after the gate, and the
 *   paper's sparsity: the share of values of the gated tensor with |Y| under
 *   1e-2 and 1e-3, before and after the gate.
 */
#ifndef GATED_PROBES_H
#define GATED_PROBES_H

#include "nn/model.h"

enum { GATE_HIST_BINS = 20 };
#define SINK_HEAD_FATTN 0.5
#define SINK_LAYER_RATIO 5.0

typedef struct {
    double n_fattn;                  /* (query, head) terms behind the layer's F-Attn; sums in Probes.fattn_head */
    double mact;                     /* running max |h| */
    long mact_pos, mact_chan;
    double gate_sum, gate_n, gate_lt01, gate_lt001;
    double y_abs_before, y_abs_after;
    double y_small_before[2], y_small_after[2]; /* count of |Y| < 1e-2, 1e-3 (the paper's sparsity) */
    double *head_sum;                /* per gated head */
    long long hist[GATE_HIST_BINS];
    double hist_lo, hist_hi;
} LayerProbe;

typedef struct {
    int L, hpos, H, T;
    LayerProbe *lp;
    double *head_mem;
    double *fattn_head; /* L x H sums of p(i, 0); each has n_fattn / H terms */
} Probes;

int probes_init(Probes *p, const Model *m);
void probes_free(Probes *p);
/* Add the statistics of the model's last forward pass. */
void probes_accumulate(Probes *p, const Model *m);

/* Finished values. */
double probe_fattn(const Probes *p, int l);
double probe_gate_mean(const Probes *p, int l);
/* F-Attn of query head h of layer l. */
double probe_fattn_head(const Probes *p, int l, int h);
/* F-Attn of uniform causal attention at length T (T >= 2). */
double probe_uniform_fattn(int T);
/* Heads (of all L x H) whose F-Attn exceeds SINK_HEAD_FATTN. */
int probe_sink_heads(const Probes *p);
/* 1 when a sink formed (definition above); *layer, *head (may be NULL)
 * get the strongest qualifying head, else -1. */
int probe_sink_formed(const Probes *p, int *layer, int *head);

#endif
