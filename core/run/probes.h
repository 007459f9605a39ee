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
 *
 * Bigram-Backcopy probes (probes_bb_init; data.corpus bb, data.h).  A query
 *   position i >= 1 is a trigger query when the backcopy rule decides the
 *   next token (bb_backcopy_at: i >= 2 and token i is a trigger), else an
 *   other query.  Per layer and query head: attention on position 0 (BOS)
 *   by query type; attention on the previous position (i-1) of trigger
 *   queries; the value drain, mean |v_0| / mean |v_i| over i >= 1 of the
 *   values attention averages (query head h reads kv head h / (H / Hk)).
 *   Per layer: the residual peak, mean |h_0| / mean |h_i| (i >= 1) of the
 *   layer's output residual stream.  Loss (the training loss, per position)
 *   on trigger positions and on all others (position 0 included), so their
 *   weighted mean is the validation loss.  Gated runs: mean gate score per
 *   layer and gated head, and a histogram per layer, by the type of the
 *   gated position (positions >= 1).  Euclidean norms throughout.
 * Sink formed, for Bigram-Backcopy: the same test with a head's attention
 *   on BOS from OTHER queries in place of its F-Attn (trigger queries are
 *   meant to attend elsewhere: the head is active on them), and the layer's
 *   mean of that over heads in place of its F-Attn.
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

enum { BB_TRIGGER = 0, BB_OTHER = 1 }; /* query types */

typedef struct {
    unsigned char *is_trig;   /* ntok flags: the task's triggers */
    int ntok;
    int gated;                /* the model has a gate */
    double nq[2];             /* query positions i >= 1 of each type (all windows) */
    double loss[2], nloss[2]; /* per-position loss sums and counts by target position type */
    double nwin, nrest;       /* windows seen, and their positions i >= 1 */
    double *bos[2];           /* L x H sums of p(i, 0) by query type */
    double *prev;             /* L x H sums of p(i, i-1) over trigger queries */
    double *v0, *vrest;       /* L x Hk sums of |v_0| and of |v_i|, i >= 1 */
    double *r0, *rrest;       /* L sums of |h_0| and |h_i|, i >= 1, of the layer's output */
    double *gate[2];          /* L x hpos sums of each gated head's mean score, by position type */
    long long *hist[2];       /* L x GATE_HIST_BINS, by position type */
} BBProbe;

typedef struct {
    int L, hpos, H, T;
    LayerProbe *lp;
    double *head_mem;
    double *fattn_head; /* L x H sums of p(i, 0); each has n_fattn / H terms */
    int Hk;
    BBProbe *bb;        /* NULL unless probes_bb_init */
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
/* Heads (of all L x H) whose F-Attn (Bigram-Backcopy: attention on BOS
 * from other queries) exceeds SINK_HEAD_FATTN. */
int probe_sink_heads(const Probes *p);
/* 1 when a sink formed (definition above); *layer, *head (may be NULL)
 * get the strongest qualifying head, else -1. */
int probe_sink_formed(const Probes *p, int *layer, int *head);

/* Turn on the Bigram-Backcopy probes (after probes_init): is_trig holds
 * ntok flags (BBTask.is_trig, ntok = V + 1).  0 or -1 (out of memory). */
int probes_bb_init(Probes *p, const Model *m, const unsigned char *is_trig, int ntok);
/* Add the Bigram-Backcopy statistics of the model's last forward, whose
 * inputs were tokens (B x T, each window starting with BOS); a no-op
 * unless probes_bb_init was called. */
void probes_bb_accumulate(Probes *p, const Model *m, const int *tokens);
/* Finished Bigram-Backcopy values (type BB_TRIGGER or BB_OTHER); NAN when
 * nothing was counted (no query of that type, or no gate). */
double probe_bb_loss(const Probes *p, int type);
double probe_bb_trigger_share(const Probes *p); /* trigger queries / queries i >= 1 */
double probe_bb_bos(const Probes *p, int l, int h, int type);
double probe_bb_prev(const Probes *p, int l, int h);
double probe_bb_value_drain(const Probes *p, int l, int h);
double probe_bb_residual_peak(const Probes *p, int l);
double probe_bb_gate(const Probes *p, int l, int h, int type); /* h < hpos, the gated heads */

#endif
