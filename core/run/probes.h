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
 * With the attention-row probes (probes_rows_accumulate given the window's
 *   tokens), also the mass on nothing, 1 - sum_j p_ij, by query type.
 * Sink formed, for Bigram-Backcopy: the same test with a head's attention
 *   on BOS from OTHER queries in place of its F-Attn (trigger queries are
 *   meant to attend elsewhere: the head is active on them), and the layer's
 *   mean of that over heads in place of its F-Attn.
 *
 * Attention-row probes (probes_rows_accumulate), for any normaliser: read
 *   off the attention weight matrix P of each window, layer and query head
 *   (row i: query i's weights p_ij on keys j <= i), never assuming that a
 *   row sums to 1.  P is the reference attention's (attention_forward_ref,
 *   the one definition of the weights beside the fused kernel), recomputed
 *   from the saved rotated q, k and the values attention reads.
 *   Mass on position 0 (per layer and head): mean over queries i >= 1 of
 *     p_i0 (as F-Attn: position 0 can only attend to itself).
 *   Mass on nothing: mean over queries i >= 1 of 1 - sum_j p_ij (0 for
 *     softmax up to rounding; what softmax1, sink_logit, kv_bias leave
 *     unassigned; negative when a sigmoid row sums past 1).
 *   Sink_1^eps (Gu et al. 2024, arXiv 2410.10781): the share of heads whose
 *     mean attention on the first token, alpha = mean over ALL queries
 *     i >= 0 of p_i0 (their definition, query 0 included), exceeds
 *     SINK_EPS; per layer and over the model.
 *   Residual kurtosis (per layer): the plain (Pearson) kurtosis
 *     m4 / m2^2 of the layer's output residual stream (the tensor of
 *     M-Act), over a window's T x C values (central moments, population
 *     normalisation), averaged over windows; a Gaussian gives 3.
 */
#ifndef GATED_PROBES_H
#define GATED_PROBES_H

#include "nn/model.h"

enum { GATE_HIST_BINS = 20 };
#define SINK_HEAD_FATTN 0.5
#define SINK_LAYER_RATIO 5.0
#define SINK_EPS 0.3 /* Gu et al.'s epsilon for Sink_1^eps */

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
    double *none[2], *nnone[2]; /* L x H sums of 1 - sum_j p_ij by query type, and their queries (rows probes) */
} BBProbe;

typedef struct {
    int L, hpos, H, T;
    LayerProbe *lp;
    double *head_mem;
    double *fattn_head; /* L x H sums of p(i, 0); each has n_fattn / H terms */
    int Hk;
    BBProbe *bb;        /* NULL unless probes_bb_init */
    /* attention-row probes (probes_rows_accumulate), L x H sums over queries: */
    double *mass0;      /* p_i0, i >= 1 */
    double *none;       /* 1 - sum_j p_ij, i >= 1 */
    double *p00;        /* p_00 (query 0 on itself: Gu et al.'s alpha counts it) */
    double *nq;         /* queries i >= 1 counted; the rows' count is nq + nwin */
    double *nwin;       /* matrices counted (one query 0 each) */
    double *kurt, *nkurt; /* L: sums of per-window residual kurtosis, windows */
    /* top-k sparse layers (nn/sparse.h), L sums over the rows t >= k (where S_t is a choice):
     * the dense attention's head-mean mass inside S_t, rows with 0 in S_t, rows */
    double *sp_recall, *sp_p0, *sp_rows;
    double sp_gap, sp_gap_n; /* sums of (sparse - dense loss) x windows, and windows */
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

/* Add the attention-row probes (definitions above) of the model's last
 * forward: every window, layer and query head; with the Bigram-Backcopy
 * probes on, their mass on nothing by query type too (tokens: the forward's
 * inputs, B x T; may be NULL without them).  0, or -1 out of memory. */
int probes_rows_accumulate(Probes *p, const Model *m, const int *tokens);
/* Add one query head's weights P (T x T, row i the weights of query i on
 * keys j <= i; entries j > i are not read) to layer l, head h. */
void probes_rows_add(Probes *p, int l, int h, const real *P, int T);
/* Add the kurtosis of one window's output residual stream of layer l
 * (x: its n = T x C values). */
void probes_kurtosis_add(Probes *p, int l, const real *x, size_t n);
/* Finished values; NAN when nothing was counted. */
double probe_mass0(const Probes *p, int l, int h);
/* Top-k sparse attention (rows probes), layer l or every layer (l = -1),
 * over the queries t >= k: the indexer's (or control's) recall of the dense
 * attention mass, mean over query heads of sum_{s in S_t} p_dense(t, s);
 * and P(0 in S_t), how often the first position is selected.  NAN for a
 * dense model. */
double probe_sparse_recall(const Probes *p, int l);
double probe_sparse_p0(const Probes *p, int l);
/* The sparse - dense loss gap: the mean over windows of the sparse model's
 * loss minus the loss of the same weights run dense (every key; indexer
 * and selection unused); NAN for a dense model.  probes_sparse_gap_add
 * adds nb windows' mean losses of both forwards. */
double probe_sparse_gap(const Probes *p);
void probes_sparse_gap_add(Probes *p, double sparse_loss, double dense_loss, int nb);
double probe_mass_none(const Probes *p, int l, int h);
double probe_first_alpha(const Probes *p, int l, int h); /* Gu et al.'s alpha_1 */
/* Sink_1^eps: the share of layer l's heads (l < 0: all heads) whose
 * alpha_1 exceeds SINK_EPS. */
double probe_sink_eps_share(const Probes *p, int l);
double probe_resid_kurtosis(const Probes *p, int l);

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
/* Mass on nothing of query head h by query type (rows probes). */
double probe_bb_none(const Probes *p, int l, int h, int type);
/* Add one query head's weights P (T x T, as probes_rows_add) of window w
 * (T tokens) to the Bigram-Backcopy mass on nothing by query type. */
void probes_bb_rows_add(Probes *p, int l, int h, const real *P, int T, const int *w);

#endif
