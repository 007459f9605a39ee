/*
 * dump.h — the cross-check file format shared with tests/torch_ref.py.
 *
 *   GATED-DUMP 1\n
 *   cfg <dotted.key> <value>\n              every config key, resolved
 *   tensor <name> <f32|i32> <ndim> <d0> ...\n<raw little-endian bytes>\n
 *   ...
 *   end\n
 *
 * Tensors: param.<name> for every parameter, input.tokens / input.targets
 * (i32, B x T), out.logits (B x T x V), out.loss ([1]), grad.<name>.
 *
 * An evaluation dump (`gated xcheck --quant / --drop`, dump_write_eval)
 * checks the forward of run/infer.h instead: after the config's lines it
 * has "cfg xcheck.quant SCHEME" (quant_spec_name's canonical name) and/or
 * "cfg xcheck.drop gate:TAU" (TAU in the fewest digits that read back as
 * the same double), which is what tells torch_ref.py to apply them;
 * param.<name> are the float weights (before infer_quant_weights),
 * out.logits / out.loss the hooked forward's, no grad.* (no backward: it
 * is undefined after a hooked forward), and with a drop rule out.dropped
 * (i32, [n_layer]): the (token, head) pairs the C hook dropped per layer.
 */
#ifndef GATED_DUMP_H
#define GATED_DUMP_H

#include "nn/model.h"
#include "run/config.h"

/* Write the dump after model_forward + model_backward.  0 or -1 (errno). */
int dump_write(const char *path, const Config *c, const Model *m, const int *tokens, const int *targets);

/* What an evaluation dump adds (NULL members: absent). */
typedef struct {
    const char *quant;        /* the scheme's canonical name */
    const char *drop;         /* the drop rule, "gate:TAU" */
    const long long *dropped; /* with drop: the pairs dropped per layer (m->L) */
} DumpEval;

/* Write an evaluation dump after a hooked model_forward, with m's weights
 * restored to the float ones.  0 or -1 (errno). */
int dump_write_eval(const char *path, const Config *c, const Model *m, const int *tokens, const int *targets,
                    const DumpEval *ev);

#endif
