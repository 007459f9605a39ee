/*
 * paper.c — the paper's headline table and long-context result (see
 * paper.h).  Source: /work/shared/paper.md, "Headline numbers (15B MoE,
 * 400B tokens; Table 1, 3, 4)" and "Long context (Table 5, RULER)".  Keep
 * the labels identical to the ones the experiment sweeps use.
 */
#include "lab/paper.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

#define NA NAN

const PaperRow paper_rows[] = {
    /* label                  what                                   added   PPL    gate   M-Act  F-Attn */
    {"baseline",             "baseline",                             "0",    6.026, NA,    1053,  0.467},
    {"more-kv-heads",        "more KV heads (k=8)",                  "50M",  5.979, NA,    NA,    NA},
    {"more-q-heads",         "more Q heads (q=48)",                  "201M", 5.953, NA,    NA,    NA},
    {"G1-elementwise",       "G1 elementwise, sigmoid",              "201M", 5.761, 0.116, 94,    0.048},
    {"G2-elementwise",       "G2 elementwise, sigmoid",              "25M",  5.820, 0.221, 125,   0.297},
    {"G3-elementwise",       "G3 elementwise, sigmoid",              "25M",  6.016, NA,    NA,    NA},
    {"G4-elementwise",       "G4 elementwise, sigmoid",              "201M", 5.981, NA,    NA,    NA},
    {"G5",                   "G5, sigmoid",                          "100M", 6.017, NA,    NA,    NA},
    {"G1-headwise",          "G1 headwise, sigmoid",                 "1.6M", 5.792, 0.172, 98,    0.073},
    {"G2-headwise",          "G2 headwise, sigmoid",                 "0.2M", 5.808, NA,    NA,    NA},
    {"G1-head-shared",       "G1 head-shared, sigmoid",              "201M", 5.801, 0.271, 286,   0.301},
    {"G2-head-shared",       "G2 head-shared, sigmoid",              "25M",  5.867, NA,    NA,    NA},
    {"G1-additive-silu",     "G1 additive, SiLU",                    "201M", 5.821, NA,    NA,    NA},
    {"G1-silu",              "G1 elementwise, SiLU",                 "201M", 5.822, NA,    NA,    NA},
    {"G1-rmsnorm-control",   "G1 per-head RMSNorm (no gate)",        "",     5.847, NA,    NA,    NA},
    {"G1-silu-only",         "G1 SiLU only, no gate",                "0",    5.975, NA,    NA,    NA},
    {"G1-additive-identity", "G1 additive, identity",                "",     5.882, NA,    NA,    NA},
    {"G1-input-independent", "G1 input-independent, sigmoid",        "",     5.917, 0.335, 471,   0.364},
    {"G1-ns-sigmoid",        "G1 NS-sigmoid",                        "",     5.900, 0.653, 892,   0.451},
};
const int paper_nrows = (int)(sizeof paper_rows / sizeof paper_rows[0]);

const PaperRow *paper_lookup(const char *label) {
    for (int i = 0; label && i < paper_nrows; i++)
        if (strcmp(paper_rows[i].label, label) == 0) return &paper_rows[i];
    return NULL;
}

const char paper_longctx_setup[] =
    "trained at 4k with RoPE base 10k, continued at 32k with base 1M, then extended to 128k with YaRN (no training)";

const PaperLongCtx paper_longctx[] = {
    /* what                          context  baseline gated */
    {"within 32k (before YaRN)",     32768,   79.50,   79.77},
    {"32k, YaRN",                    32768,   37.94,   72.88},
    {"64k, YaRN",                    65536,   37.51,   66.60},
    {"128k, YaRN",                   131072,  31.65,   58.82},
};
const int paper_nlongctx = (int)(sizeof paper_longctx / sizeof paper_longctx[0]);
