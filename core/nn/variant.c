/*
 * variant.c — gate variant tables and shape/validity rules (see variant.h).
 */
#include "nn/variant.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAME_(id, name, ...) name,
const char *const gate_position_names[] = {GATE_POSITIONS(NAME_) NULL};
const char *const gate_granularity_names[] = {GATE_GRANULARITIES(NAME_) NULL};
const char *const gate_sharing_names[] = {GATE_SHARINGS(NAME_) NULL};
const char *const gate_form_names[] = {GATE_FORMS(NAME_) NULL};
const char *const gate_activation_names[] = {GATE_ACTIVATIONS(NAME_) NULL};
const char *const gate_input_names[] = {GATE_INPUTS(NAME_) NULL};
const char *const gate_control_names[] = {GATE_CONTROLS(NAME_) NULL};
#undef NAME_
#define FORM_LABEL_(id, name, label) label,
const char *const gate_form_labels[] = {GATE_FORMS(FORM_LABEL_) NULL};
#undef FORM_LABEL_

/* One row per position.  G3/G4 gate q/k after QK-norm and before RoPE, so a
 * headwise gate there is not erased by the per-head norm. */
#define POSITION_(id, name, paper, what, heads, hw_ok, sh_ok, f_elem, f_head) \
    [GP_##id] = {name, paper, what, heads, hw_ok, sh_ok, f_elem, f_head},
const GatePositionDef gate_positions[GP__COUNT] = {GATE_POSITIONS(POSITION_)};
#undef POSITION_

int name_index(const char *const *names, const char *name) {
    for (int i = 0; names[i]; i++)
        if (strcmp(names[i], name) == 0) return i;
    return -1;
}

GateCfg gate_default(void) {
    GateCfg g = {GP_NONE, GG_ELEMENTWISE, GS_HEAD_SPECIFIC, GF_MULTIPLICATIVE, GA_SIGMOID, GI_HIDDEN, GC_NONE, 0, 0.5, 0};
    return g;
}

GateShape gate_shape(const GateCfg *g, int d_model, int n_head, int n_kv_head, int d_head) {
    GateShape s = {0, 0, 0, 0, 0};
    if (g->position <= GP_NONE || g->position >= GP__COUNT) return s;
    switch (gate_positions[g->position].heads) {
    case HEADS_Q: s.hpos = n_head; s.dh = d_head; break;
    case HEADS_KV: s.hpos = n_kv_head; s.dh = d_head; break;
    case HEADS_ONE: s.hpos = 1; s.dh = d_model; break;
    default: return s;
    }
    int per_head = g->granularity == GG_HEADWISE ? 1 : s.dh;
    if (g->input == GI_HIDDEN) {
        /* head-shared keeps head-specific logits and averages the scores,
         * so it adds as many weights as head-specific (paper Table 1). */
        s.nlogit = s.hpos * per_head;
        s.wg_params = (long)s.nlogit * d_model + (g->bias ? s.nlogit : 0);
    } else {
        s.nstatic = (g->sharing == GS_HEAD_SHARED ? 1 : s.hpos) * per_head;
        s.wg_params = s.nstatic;
    }
    return s;
}

const char *gate_validate(const GateCfg *g, const char **key) {
    static const char *msg;
    *key = NULL;
    if (g->position == GP_NONE) {
        GateCfg d = gate_default();
        if (g->granularity != d.granularity) { *key = "model.gate.granularity"; goto ungated; }
        if (g->sharing != d.sharing) { *key = "model.gate.sharing"; goto ungated; }
        if (g->form != d.form) { *key = "model.gate.form"; goto ungated; }
        if (g->activation != d.activation) { *key = "model.gate.activation"; goto ungated; }
        if (g->input != d.input) { *key = "model.gate.input"; goto ungated; }
        if (g->bias != d.bias) { *key = "model.gate.bias"; goto ungated; }
        if (g->init_bias != d.init_bias) { *key = "model.gate.init_bias"; goto ungated; }
        if (g->control != GC_SCALE && g->control_scale != d.control_scale) goto scale_unused;
        return NULL;
    ungated:
        msg = "has no effect when model.gate.position is none (set a position, or remove the key)";
        return msg;
    }
    if (g->control != GC_SCALE && g->control_scale != gate_default().control_scale) goto scale_unused;
    if (g->bias && g->input == GI_STATIC) {
        *key = "model.gate.bias";
        msg = "a static gate's parameters are its logits: leave the bias out and start them with model.gate.init_bias";
        return msg;
    }
    if (g->init_bias != 0 && g->input == GI_HIDDEN && !g->bias) {
        *key = "model.gate.init_bias";
        msg = "needs model.gate.bias: true (the hidden-input gate has no logit bias otherwise)";
        return msg;
    }
    const GatePositionDef *p = &gate_positions[g->position];
    if (g->granularity == GG_HEADWISE && !p->headwise_ok) {
        *key = "model.gate.granularity";
        msg = g->position == GP_DENSE
                  ? "headwise is not valid with model.gate.position dense (G5 gates d_model channels; it has no heads)"
                  : "headwise is not valid at this model.gate.position";
        return msg;
    }
    if (g->sharing == GS_HEAD_SHARED && !p->shared_ok) {
        *key = "model.gate.sharing";
        msg = g->position == GP_DENSE
                  ? "head_shared is not valid with model.gate.position dense (G5 has no heads to share over)"
                  : "head_shared is not valid at this model.gate.position";
        return msg;
    }
    return NULL;
scale_unused:
    *key = "model.gate.control_scale";
    msg = "has no effect unless model.gate.control is scale";
    return msg;
}

int gate_enumerate(GateCfg *out, int cap) {
    int n = 0;
    for (int p = GP_NONE + 1; p < GP__COUNT; p++)
        for (int gr = 0; gr < GG__COUNT; gr++)
            for (int sh = 0; sh < GS__COUNT; sh++)
                for (int in = 0; in < GI__COUNT; in++)
                    for (int fo = 0; fo < GF__COUNT; fo++)
                        for (int ac = 0; ac < GA__COUNT; ac++) {
                            GateCfg g = gate_default();
                            g.position = p, g.granularity = gr, g.sharing = sh, g.form = fo;
                            g.activation = ac, g.input = in;
                            const char *k;
                            if (gate_validate(&g, &k)) continue;
                            if (n < cap) out[n] = g;
                            n++;
                        }
    return n;
}

int gate_covering(GateCfg *out, int cap) {
    GateCfg all[GP__COUNT * GG__COUNT * GS__COUNT * GI__COUNT * GF__COUNT * GA__COUNT];
    int nall = gate_enumerate(all, (int)(sizeof all / sizeof all[0])), n = 0;
    GateCfg d = gate_default();
    for (int i = 0; i < nall; i++) {
        const GateCfg *g = &all[i];
        int structural = g->form == d.form && g->activation == d.activation;
        int g1 = g->position == GP_SDPA && g->input == GI_HIDDEN;
        int g1_plain = g1 && g->granularity == GG_ELEMENTWISE && g->sharing == GS_HEAD_SPECIFIC;
        int g1_avg = g1 && g->granularity == GG_HEADWISE && g->sharing == GS_HEAD_SHARED && g->form == d.form;
        if (!structural && !g1_plain && !g1_avg) continue;
        if (n < cap) out[n] = *g;
        n++;
    }
    return n;
}

/* A formula "n_head x d_head" over the model's dimensions, evaluated with
 * val = {d_model, n_head, n_kv_head, d_head, d_c, d_R}: products of those
 * and integer literals joined by " x ", summed over " + "; -1 for a factor
 * that is neither. */
static long dims_product(const char *f, const long *val) {
    static const char *const dims[] = {"d_model", "n_head", "n_kv_head", "d_head", "d_c", "d_R", NULL};
    long r = 1, sum = 0;
    for (const char *s = f;;) {
        const char *e = strstr(s, " x "), *plus = strstr(s, " + ");
        int is_sum = plus && (!e || plus < e);
        if (is_sum) e = plus;
        size_t len = e ? (size_t)(e - s) : strlen(s);
        if (len > 0 && strspn(s, "0123456789") >= len) {
            r *= strtol(s, NULL, 10);
        } else {
            int k = 0;
            while (dims[k] && (strlen(dims[k]) != len || strncmp(dims[k], s, len) != 0)) k++;
            if (!dims[k]) return -1;
            r *= val[k];
        }
        if (!e || is_sum) sum += r, r = 1;
        if (!e) return sum;
        s = e + 3;
    }
}

long gate_paper_params(const GateCfg *g, long d_model, long n_head, long n_kv_head, long d_head,
                       const char **formula) {
    if (g->position <= GP_NONE || g->position >= GP__COUNT) {
        *formula = "no gate";
        return 0;
    }
    if (g->input == GI_STATIC) {
        *formula = "static: one learned score per gated (head, channel)";
        return -1;
    }
    const GatePositionDef *p = &gate_positions[g->position];
    const char *f = g->granularity == GG_HEADWISE ? p->paper_head : p->paper_elem;
    *formula = f ? f : "no paper formula";
    if (!f) return -1;
    long val[] = {d_model, n_head, n_kv_head, d_head, 0, 0};
    return dims_product(f, val);
}

/* "+silu", "+scale0.5" or "" for the control; "+bias4" or "" for the logit
 * bias (a static gate's init_bias as "+init4"). */
static void label_extras(const GateCfg *g, char *ctl, size_t cc, char *bias, size_t bc) {
    if (g->control == GC_SCALE)
        snprintf(ctl, cc, "+scale%g", g->control_scale);
    else
        snprintf(ctl, cc, "%s%s", g->control ? "+" : "", g->control ? gate_control_names[g->control] : "");
    if (g->bias)
        snprintf(bias, bc, "+bias%g", g->init_bias);
    else if (g->init_bias != 0)
        snprintf(bias, bc, "+init%g", g->init_bias);
    else
        bias[0] = '\0';
}

const char *gate_label(const GateCfg *g, char *buf, size_t cap) {
    char ctl[48], bias[48];
    label_extras(g, ctl, sizeof ctl, bias, sizeof bias);
    if (g->position == GP_NONE) {
        snprintf(buf, cap, "none%s", ctl);
        return buf;
    }
    snprintf(buf, cap, "%s.%s.%s.%s.%s.%s%s%s", gate_position_names[g->position],
             gate_granularity_names[g->granularity], gate_sharing_names[g->sharing],
             gate_form_labels[g->form], gate_activation_names[g->activation],
             gate_input_names[g->input], bias, ctl);
    return buf;
}

/* ------------------------------------------------ attention normalisers */

#define ANAME_(id, name, ...) name,
const char *const attn_norm_names[] = {ATTN_NORMALIZERS(ANAME_) NULL};
#undef ANAME_
#define AROW_(id, name, fam, vkey, one, params, formula) [AN_##id] = {name, fam, vkey, one, params, formula},
const AttnNormDef attn_norms[AN__COUNT] = {ATTN_NORMALIZERS(AROW_)};
#undef AROW_

#define SNAME_(id, name, ...) name,
const char *const attn_sparse_names[] = {ATTN_SPARSES(SNAME_) NULL};
#undef SNAME_
#define SROW_(id, name, idx, how) [AS_##id] = {name, idx, how},
const AttnSparseDef attn_sparses[AS__COUNT] = {ATTN_SPARSES(SROW_)};
#undef SROW_

AttnCfg attn_default(void) {
    AttnCfg a = {AN_SOFTMAX, 0, KV_HEADS, 0, -1, AS_NONE, 64, 4, 32, 0};
    return a;
}

long attn_indexer_params(const AttnCfg *a, long d_model) {
    if (a->sparse < 0 || a->sparse >= AS__COUNT || !attn_sparses[a->sparse].indexer) return 0;
    long hi = a->idx_heads, di = a->idx_dim;
    return ((hi + 1) * di + hi) * d_model + di;
}

int attn_sparse_active(const AttnCfg *a, int T) { return a->sparse != AS_NONE && a->topk < T; }

/* The sparse keys' rules (attn_validate). */
static const char *sparse_validate(const AttnCfg *a, const char **key) {
    AttnCfg d = attn_default();
    if (a->sparse < 0 || a->sparse >= AS__COUNT) {
        *key = "model.attention.sparse";
        return "is not a known sparse selection";
    }
    if (a->sparse == AS_NONE && a->topk != d.topk) {
        *key = "model.attention.topk";
        return "has no effect unless model.attention.sparse is set (a row other than none)";
    }
    if (!attn_sparses[a->sparse].indexer) {
        if (a->idx_heads != d.idx_heads) *key = "model.attention.indexer_heads";
        else if (a->idx_dim != d.idx_dim) *key = "model.attention.indexer_dim";
        else if (a->idx_warmup != d.idx_warmup) *key = "model.attention.indexer_warmup";
        if (*key) return "has no effect unless model.attention.sparse is indexer";
    }
    if (a->sparse == AS_NONE) return NULL;
    if (a->topk <= 0) {
        *key = "model.attention.topk";
        return "must be at least 1 (the keys each query attends to)";
    }
    if (a->normalizer != AN_SOFTMAX) {
        *key = "model.attention.sparse";
        return "is defined only with model.attention.normalizer softmax (the softmax runs over the selected keys)";
    }
    if (a->kv != KV_HEADS) {
        *key = "model.attention.sparse";
        return "is not defined with model.attention.kv latent yet (the sparse kernel gathers keys and values of "
               "one width; latent KV attends over d_head + d_R)";
    }
    if (a->idx_heads <= 0) {
        *key = "model.attention.indexer_heads";
        return "must be at least 1";
    }
    if (a->idx_dim <= 0 || a->idx_dim % 2) {
        *key = "model.attention.indexer_dim";
        return "must be a positive even number (RoPE rotates channel pairs)";
    }
    return NULL;
}

long attn_norm_params(const AttnCfg *a, long n_head, long n_kv_head, long d_head) {
    if (a->normalizer < 0 || a->normalizer >= AN__COUNT || !attn_norms[a->normalizer].params) return 0;
    long val[] = {0, n_head, n_kv_head, d_head, 0, 0};
    return dims_product(attn_norms[a->normalizer].params, val);
}

const char *attn_validate(const AttnCfg *a, const GateCfg *g, const char **key) {
    (void)g; /* every gate row is defined with every normaliser: the gates act outside the normaliser */
    *key = NULL;
    if (a->normalizer < 0 || a->normalizer >= AN__COUNT) {
        *key = "model.attention.normalizer";
        return "is not a known normaliser";
    }
    const char *smsg = sparse_validate(a, key);
    if (smsg) return smsg;
    if (a->normalizer != AN_SINK_LOGIT && a->sink_init != attn_default().sink_init) {
        *key = "model.attention.sink_init";
        return "has no effect unless model.attention.normalizer is sink_logit (the only normaliser with a learned "
               "sink logit)";
    }
    return NULL;
}

/* ------------------------------------------------ key/value construction */

#define KVNAME_(id, name, ...) name,
const char *const attn_kv_names[] = {ATTN_KVS(KVNAME_) NULL};
#undef KVNAME_
#define KVROW_(id, name, cache, what) [KV_##id] = {name, cache, what},
const AttnKvDef attn_kvs[KV__COUNT] = {ATTN_KVS(KVROW_)};
#undef KVROW_

void attn_kv_resolve(AttnCfg *a, int d_head) {
    if (a->kv != KV_LATENT) return;
    if (a->d_c == 0) a->d_c = 4 * d_head;
    if (a->d_R == -1) a->d_R = d_head / 2 - (d_head / 2) % 2;
}

long attn_kv_cache(const AttnCfg *a, long n_kv_head, long d_head) {
    if (a->kv < 0 || a->kv >= KV__COUNT) return -1;
    long val[] = {0, 0, n_kv_head, d_head, a->d_c, a->d_R};
    return dims_product(attn_kvs[a->kv].cache, val);
}

/* The latent KV's rules (see docs/model.md, "Keys and values").  Gates:
 * G1 (the SDPA output) and G5 (after W_o) act where the heads' outputs
 * are, unchanged.  G2 and G3 gate the value/key projection of each KV
 * head from token j's hidden state: with latent KV the keys and values
 * are not projected from h but up-projected from the cached latent, and
 * at inference W_UK and W_UV are absorbed into the query and the output,
 * so a gate on them would have to be cached beside c (a score per head
 * and token) and would stop the absorption; they are refused.  G4 gates
 * the query after QK-norm, which latent KV does not have (below), and its
 * shape (n_head x d_head) leaves the d_R RoPE part undefined: refused.
 * QK-norm: a per-head norm of k^C = W_UK,i c is not linear in c, so W_UK
 * could not be absorbed into the query; MLA normalises c instead.
 * kv_bias's k* is a key per KV head of width d_head, and latent keys are
 * d_head + d_R wide per query head: not defined. */
const char *attn_kv_validate(const AttnCfg *a, const GateCfg *g, int n_head, int n_kv_head, int d_head, int qk_norm,
                             const char **key) {
    static char msg[256];
    *key = NULL;
    if (a->kv < 0 || a->kv >= KV__COUNT) {
        *key = "model.attention.kv";
        return "is not a known key/value construction";
    }
    if (a->kv != KV_LATENT) {
        if (a->d_c != 0) *key = "model.attention.d_c";
        else if (a->d_R != -1) *key = "model.attention.d_R";
        return *key ? "has no effect unless model.attention.kv is latent" : NULL;
    }
    if (a->d_c < 1) {
        *key = "model.attention.d_c";
        return "must be at least 1 (the latent's width)";
    }
    if ((long)a->d_c >= 2L * n_head * d_head) {
        *key = "model.attention.d_c";
        snprintf(msg, sizeof msg,
                 "must be below 2 x model.n_head x model.d_head = %ld (the keys and values it is up-projected to; "
                 "a wider latent caches more than multi-head attention), got %d",
                 2L * n_head * d_head, a->d_c);
        return msg;
    }
    if (a->d_R < 0 || a->d_R % 2 || a->d_R > d_head) {
        *key = "model.attention.d_R";
        snprintf(msg, sizeof msg,
                 "must be even (RoPE rotates pairs), from 0 (no decoupled RoPE key) to model.d_head (%d), got %d",
                 d_head, a->d_R);
        return msg;
    }
    if (n_kv_head != n_head) {
        *key = "model.n_kv_head";
        return "must equal model.n_head with model.attention.kv latent (every head up-projects its own key and "
               "value from the shared latent; grouping has no meaning there)";
    }
    if (qk_norm) {
        *key = "model.qk_norm";
        return "latent KV needs model.qk_norm: false (a per-head norm of the key W_UK c is not linear in the latent "
               "c, so W_UK could not be absorbed into the query; MLA normalises c instead)";
    }
    if (g->position == GP_VALUE || g->position == GP_KEY || g->position == GP_QUERY) {
        *key = "model.gate.position";
        return g->position == GP_QUERY
                   ? "query (G4) is not defined with model.attention.kv latent (it gates the query after QK-norm, "
                     "which latent KV has not, and its shape leaves the d_R RoPE part out)"
                   : "value (G2) and key (G3) are not defined with model.attention.kv latent: the values and keys "
                     "are up-projected from the cached latent and absorbed into the query and output at inference; "
                     "a gate from token j's hidden state would have to be cached beside it";
    }
    if (a->normalizer == AN_KV_BIAS) {
        *key = "model.attention.normalizer";
        return "kv_bias is not defined with model.attention.kv latent (its k* is a d_head-wide key per KV head; "
               "latent keys are d_head + d_R wide per head)";
    }
    return NULL;
}
