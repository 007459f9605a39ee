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
 */
#ifndef GATED_DUMP_H
#define GATED_DUMP_H

#include "nn/model.h"
#include "run/config.h"

/* Write the dump after model_forward + model_backward.  0 or -1 (errno). */
int dump_write(const char *path, const Config *c, const Model *m, const int *tokens, const int *targets);

#endif
