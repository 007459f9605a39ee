/*
 * paper.h — the paper's headline numbers (Qiu et al., arXiv 2505.06708,
 * Tables 1, 3 and 4; copied from /work/shared/paper.md), keyed by the
 * variant labels the experiment sweeps use, so `gated report` can show the
 * paper's figure beside each row; and its long-context result (Table 5),
 * shown beside the report's perplexity-against-context-length tables.
 *
 * The paper's models are a 15B MoE trained on 400B tokens: only the
 * direction of a difference is comparable with this suite's CPU-scale runs.
 */
#ifndef GATED_PAPER_H
#define GATED_PAPER_H

/* The paper's baseline average perplexity (Table 1, row 1). */
#define PAPER_BASELINE_PPL 6.026

/* One row of the paper's headline table.  NAN where the paper gives no
 * figure (only some rows report gate mean, M-Act and F-Attn). */
typedef struct {
    const char *label;    /* the sweep label, e.g. "G1-elementwise" */
    const char *what;     /* the paper's description of the row */
    const char *added;    /* added parameters as the paper prints them ("201M"), "" if not given */
    double ppl;           /* average PPL */
    double gate_mean;     /* mean gate score */
    double m_act;         /* maximum activation (mean over layers) */
    double f_attn;        /* share of attention on the first token */
} PaperRow;

/* Every row, in the paper's order, and how many there are. */
extern const PaperRow paper_rows[];
extern const int paper_nrows;

/* The row for a sweep label (exact, case-sensitive match); NULL if the
 * paper has no such row. */
const PaperRow *paper_lookup(const char *label);

/* The paper's long-context result (Table 5): RULER accuracy (%) of the
 * baseline and the gated model at one stage and length. */
typedef struct {
    const char *what;     /* stage and length, e.g. "64k, YaRN" */
    long context;         /* the (largest) context length, tokens */
    double baseline, gated;
} PaperLongCtx;

/* How those models were trained and extended, as one phrase. */
extern const char paper_longctx_setup[];
/* The rows, shortest context first (within 32k, then YaRN at 32k, 64k,
 * 128k), and how many there are. */
extern const PaperLongCtx paper_longctx[];
extern const int paper_nlongctx;

#endif
