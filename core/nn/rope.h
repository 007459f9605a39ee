/*
 * rope.h — rotary position embedding frequencies and their context-length
 * scalings, as pure functions.
 *
 * RoPE rotates channel pairs (k, k + d/2) of each head of q and k by the
 * angle t·θ_k at position t, with θ_k = base^(−2k/d), k < d/2.  To run a
 * model trained at length L_train on contexts s times longer, the frequencies
 * are changed (no training):
 *
 *   none    θ'_k = θ_k
 *   linear  θ'_k = θ_k / s                    (position interpolation: t → t/s)
 *   ntk     θ'_k = (base · s^(d/(d−2)))^(−2k/d)   ("NTK-aware": a larger base;
 *           the highest frequency is kept, the lowest is divided by s)
 *   yarn    θ'_k = (1 − γ(r_k)) θ_k / s + γ(r_k) θ_k,   r_k = L_train / λ_k,
 *           λ_k = 2π / θ_k (the wavelength), and the ramp
 *           γ(r) = 0 for r < α, 1 for r > β, (r − α)/(β − α) between:
 *           pairs that rotate fewer than α times over the training length are
 *           interpolated, more than β times kept, a linear mix in between
 *           (α = 1, β = 32 as YaRN for LLaMA).  YaRN also sharpens attention:
 *           √(1/t) = 0.1·ln(s) + 1, applied (as YaRN's reference code does)
 *           by multiplying cos and sin by m = 0.1·ln(s) + 1, so q·k — and every
 *           attention logit — is multiplied by m² = 1/t.
 *
 * References: Chen et al. 2023 (position interpolation), bloc97 2023 (NTK-aware),
 * Peng et al. 2023, "YaRN", eqs. 17–23.  Factor s <= 1 means no scaling for
 * linear, ntk and yarn.
 */
#ifndef GATED_ROPE_H
#define GATED_ROPE_H

#include "nn/modelcfg.h"
#include "nn/real.h"

/* Names users write (model.rope_scaling, gated eval --rope-scaling), in enum order, NULL-terminated. */
extern const char *const rope_scaling_names[];

/* YaRN's ramp γ(r) (above). */
double rope_yarn_ramp(double r, double alpha, double beta);
/* θ'_k for k < d/2 into inv[] (d even). */
void rope_inv_freq(const RopeScaling *r, int d, double *inv);
/* The factor m multiplying cos and sin: 0.1·ln(s) + 1 for yarn with s > 1, else 1. */
double rope_mscale(const RopeScaling *r);
/* cos/sin tables for positions t < T: cos_t[t·d/2 + k] = m·cos(t·θ'_k) (angles
 * in double: positions up to 1M would lose digits in float).  Returns 0, or -1
 * when d/2 exceeds the 4096 pairs it can hold. */
int rope_tables(real *cos_t, real *sin_t, int T, int d, const RopeScaling *r);
/* No scaling at this base. */
RopeScaling rope_plain(double base);

#endif
