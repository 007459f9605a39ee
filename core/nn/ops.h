/*
 * ops.h — the model's operations, one forward/backward pair each.
 *
 * Conventions (as in llm.c): arguments are outputs, saved tensors, inputs,
 * weights, sizes, in that order; every backward ADDS into its gradient
 * outputs, so a tensor used twice simply receives two contributions and the
 * model zeroes gradients once per step.  Shapes are in comments: n is the
 * number of tokens (B*T), and a "token stride" lets an op read a slice of a
 * wider row (q, k, v and gate logits live side by side in the fused
 * projection output).
 *
 * Every dense weight matmul goes through gemm() below: fixed output tiles,
 * each one single-threaded OpenBLAS call, spread over OpenMP (see ops.c);
 * the attention core is a tiled flash-attention kernel of its
 * own (OpenBLAS's generic kernel, which this machine's CPU detection picks,
 * is ~7x slower on its small tiles).  OpenMP is used only in loops whose iterations write disjoint memory,
 * and every reduction has a fixed order, so results are bitwise identical for
 * any thread count.
 */
#ifndef GATED_OPS_H
#define GATED_OPS_H

#include <stddef.h>
#include "nn/attn.h"
#include "nn/real.h"

/* Output tile of gemm: part of the numerics (see ops.c), not a tuning knob
 * that may follow the machine or the thread count. */
#define GEMM_TM 128
#define GEMM_TN 128

/* C (M, N) = alpha op(A) op(B) + beta C, row-major; op transposes when ta /
 * tb is non-zero.  Bitwise the same for any OpenMP thread count. */
void gemm(int ta, int tb, int M, int N, int K, real alpha, const real *A, int lda, const real *B, int ldb,
          real beta, real *C, int ldc);

/* OpenBLAS to one thread if it is not, outside any parallel region (inside
 * one, setting it would race; dp_step calls this before its region). */
void ops_blas_single(void);

/* The one way to set the thread count: n OpenMP threads (0 = OpenMP's
 * default: OMP_NUM_THREADS when set, else all cores),
 * OpenBLAS always single-threaded inside gemm's tiles. */
void ops_set_threads(int n);

/* Linear layer, PyTorch convention: y (n, N) = x (n, K) · W^T, W (N, K).
 * ldy/ldx are row strides.  beta=0 overwrites y, 1 accumulates. */
void linear_forward(real *y, int ldy, const real *x, int ldx, const real *W, int n, int N, int K, real beta);
/* dx (n, K) += dy · W;  dW (N, K) += dy^T · x.  Either output may be NULL. */
void linear_backward(real *dx, int ldx, real *dW, const real *dy, int ldy, const real *x, const real *W, int n,
                     int N, int K);

/* RMSNorm over groups: n tokens, each holding g groups of width d at token
 * stride s (g*d <= s).  out (same layout, stride so) = x / rms(x) * w (d).
 * rstd (n*g) is saved for backward. */
void rmsnorm_forward(real *out, int so, real *rstd, const real *x, int s, const real *w, int n, int g, int d,
                     real eps);
/* dx += ..., dw (d) += ...; dw may be NULL. */
void rmsnorm_backward(real *dx, int sdx, real *dw, const real *dout, int sdo, const real *x, int s,
                      const real *w, const real *rstd, int n, int g, int d);

/* Rotary embedding, rotate-half convention.  Token index i has position
 * i % T.  x: n tokens of h heads of width d at token stride s; out is
 * contiguous (n, h, d).  cos/sin tables are (T, d/2), from rope_tables (rope.h). */
void rope_forward(real *out, const real *x, int s, const real *cos_t, const real *sin_t, int n, int T, int h,
                  int d);
/* dx (stride sdx) += R^T dout. */
void rope_backward(real *dx, int sdx, const real *dout, const real *cos_t, const real *sin_t, int n, int T,
                   int h, int d);

/* SwiGLU: out (n, F) = silu(u[:, :F]) * u[:, F:2F], u (n, 2F). */
void swiglu_forward(real *out, const real *u, int n, int F);
void swiglu_backward(real *du, const real *dout, const real *u, int n, int F);

/* SiLU elementwise over n tokens × w values (stride s in and out). */
void silu_forward(real *out, const real *x, int n, int w, int s);
void silu_backward(real *dx, const real *dout, const real *x, int n, int w, int s);

/* Cross-entropy, mean over n rows of V logits.  Writes probs (n, V)
 * (softmax, reused by backward) and returns the mean loss (accumulated in
 * double, fixed order). */
double crossentropy_forward(real *probs, const real *logits, const int *targets, int n, int V);
/* dlogits (n, V) = (probs - onehot) / n * dloss  (overwrites). */
void crossentropy_backward(real *dlogits, const real *probs, const int *targets, int n, int V, real dloss);

#endif
