/*
 * bench_cover.c — the whole-model step variants of a bench suite's
 * `variants: covering` (bench.h), generated from the variant tables, as
 * `gates: covering` generates the gate kernel's from gate_covering(): the
 * baseline, then every value but the default of every axis below, each
 * alone, so a new value in a list (modelcfg.h) has a step case in the perf
 * gate without editing a suite.
 *
 * Adding an axis (a new X-macro list whose value a whole step must run,
 * such as an attention normaliser) is one row of STEP_AXES: the config key
 * that selects it, a short tag for the label, its NULL-terminated name
 * list with the default first (the lists put the default first), and the
 * keys its values need beside them ("k=v;k=v": top-k needs k below the
 * sequence length to run sparse, latent KV needs QK-norm off, a KV head per
 * query head and a latent narrower than the heads' keys and values).  Those are sized for the perf
 * gate's micro model (bench/perf.yaml: d_model 16, 2 heads, T 32)
 * and any model with T above 4 and d_head at least 8.
 */
#include "lab/bench/bench.h"

#include <stdio.h>

#include "nn/variant.h"

static const struct {
    const char *key;          /* the config key (config.h) */
    const char *tag;          /* the label's word: "position=key" */
    const char *const *names; /* the list's names, NULL-terminated; [0] is the default */
    const char *with;         /* overrides its values need, "k=v;k=v" (or "") */
} STEP_AXES[] = {
    {"model.gate.position", "position", gate_position_names, ""},
    {"model.gate.control", "control", gate_control_names, ""},
    {"model.attention.normalizer", "normalizer", attn_norm_names, ""},
    {"model.attention.sparse", "sparse", attn_sparse_names, "model.attention.topk=4"},
    {"model.attention.kv", "kv", attn_kv_names,
     "model.qk_norm=false;model.n_kv_head=0;model.attention.d_c=12;model.attention.d_R=4"},
};

int bench_step_covering(BenchStepVariant *out, int cap) {
    int n = 0;
    if (n < cap) {
        snprintf(out[n].label, sizeof out[n].label, "baseline");
        out[n].set[0] = '\0';
    }
    n++;
    for (size_t a = 0; a < sizeof STEP_AXES / sizeof STEP_AXES[0]; a++)
        for (int v = 1; STEP_AXES[a].names[v]; v++, n++)
            if (n < cap) {
                snprintf(out[n].label, sizeof out[n].label, "%s=%s", STEP_AXES[a].tag, STEP_AXES[a].names[v]);
                snprintf(out[n].set, sizeof out[n].set, "%s=%s%s%s", STEP_AXES[a].key, STEP_AXES[a].names[v],
                         *STEP_AXES[a].with ? ";" : "", STEP_AXES[a].with);
            }
    return n;
}
