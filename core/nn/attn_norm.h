/*
 * attn_norm.h — each normaliser family's steps inside the tiled kernel
 * (included by attn.c only, after its vector helpers: vreal, vmask, VL,
 * att_vexp, vsel, vmax, vbc, vld, vst).
 *
 * A normaliser is a row of ATTN_NORMALIZERS (modelcfg.h) plus, here, its
 * family's four steps; a row of an existing family needs nothing here (the
 * virtual-key rows are softmax with a first key of logit z and value 0).
 *
 *   an_row_init    running statistics (m, l) before the first key tile
 *   an_tile_fwd    one vector of queries over a key tile: scores -> weights
 *                  (written over the scores), m and l updated, and the
 *                  factor alpha the output accumulator is rescaled by
 *   an_row_denom   the row's final denominator from (m, l)
 *   an_tile_bwd    one query row of a tile: scores -> weights p (for dV)
 *                  and dp -> ds, the gradient of the scaled score
 *
 * All three families are one pass over the keys:
 *   softmax   online softmax (running max m, sum l; alpha = exp(m_old - m)).
 *   sigmoid   p_ij = sigmoid(s_ij + b_i) needs no row statistics at all
 *             (m holds b_i = -log(i + 1), l = 1, alpha = 1).
 *   softpick  relu(e^s - 1) / (sum |e^s - 1| + eps): with M = max(0, row
 *             max), e^{s-M} - e^{-M} = e^{-M} (e^s - 1) for every key, so
 *             numerator and denominator rescale by exp(M_old - M) exactly as
 *             softmax's do.  M >= 0 keeps both terms <= 1 (the reference
 *             code subtracts the row max from both terms; flooring it at 0
 *             changes nothing in exact arithmetic and avoids exp(-M)
 *             overflow when every score is very negative).  eps is added to
 *             the unscaled sum (eps e^{-M} here): the paper's equation.
 *
 * Backward reads the statistic lse (attn.h) and D_i = dout_i . o_i:
 *   softmax   p = exp(s - lse);  ds = p (dp - D)   (the virtual key's own
 *             gradient is attn_virtual_backward's, outside the kernel)
 *   sigmoid   p = sigmoid(s + b); ds = p (1 - p) dp
 *   softpick  with N = sum|e^s - 1| + eps and g = e^s / N = exp(s - lse):
 *             p = [s > 0] (g - 1/N);  ds = g ([s > 0] dp - sign(s) D)
 * (each ds then times scale, the score's own factor).
 */
#ifndef GATED_ATTN_NORM_H
#define GATED_ATTN_NORM_H

static inline void an_row_init(int fam, int vkey, real *m, real *l, real z, int i) {
    switch (fam) {
    case AF_SIGMOID: *m = -log((real)(i + 1)), *l = 1; break;
    case AF_SOFTPICK: *m = 0, *l = 0; break;
    default: *m = vkey ? z : -INFINITY, *l = vkey ? 1 : 0; break;
    }
}

/* sigmoid(x) from exp of a non-positive argument only: 0 for -inf. */
static inline vreal att_vsigmoid(vreal x) {
    vreal e = att_vexp(vsel(x < 0, x, -x)), r = 1 / (1 + e);
    return vsel(x >= 0, r, e * r);
}

/* Queries u*VL.. (lanes) against keys 0..jn of St (row j = key j, scaled
 * and masked to -inf above the diagonal when diag; iv = the lanes' query
 * index within the tile). */
static inline void an_tile_fwd(int fam, real *St, int u, int jn, int diag, vmask iv, real scale, real *mrow,
                               real *lrow, real *arow) {
    if (fam == AF_SIGMOID) {
        vreal b = vld(mrow + u * VL);
        for (int j = 0; j < jn; j++) {
            real *sj = St + j * BT + u * VL;
            vreal x = vld(sj) * scale + b;
            if (diag) x = vsel(iv >= j, x, vbc(-INFINITY));
            vst(sj, att_vsigmoid(x));
        }
        vst(arow + u * VL, vbc(1));
        return;
    }
    vreal mo = vld(mrow + u * VL), m = mo, sum = {0};
    for (int j = 0; j < jn; j++) {
        real *sj = St + j * BT + u * VL;
        vreal x = vld(sj) * scale;
        if (diag) x = vsel(iv >= j, x, vbc(-INFINITY));
        vst(sj, x);
        m = vmax(m, x);
    }
    if (fam == AF_SOFTPICK) {
        vreal c = att_vexp(-m); /* e^{-M}, M >= 0 */
        for (int j = 0; j < jn; j++) {
            real *sj = St + j * BT + u * VL;
            vreal t = att_vexp(vld(sj) - m) - c;
            if (diag) t = vsel(iv >= j, t, (vreal){0});
            vst(sj, vsel(t > 0, t, (vreal){0}));
            sum += vsel(t < 0, -t, t);
        }
    } else {
        for (int j = 0; j < jn; j++) {
            real *sj = St + j * BT + u * VL;
            vreal p = att_vexp(vld(sj) - m);
            vst(sj, p);
            sum += p;
        }
    }
    vreal alpha = att_vexp(mo - m); /* 0 on the first tile of plain softmax (mo = -inf) */
    vst(lrow + u * VL, vld(lrow + u * VL) * alpha + sum);
    vst(mrow + u * VL, m);
    vst(arow + u * VL, alpha);
}

static inline real an_row_denom(int fam, real m, real l) {
    return fam == AF_SOFTPICK ? l + (real)ATTN_SOFTPICK_EPS * exp(-m) : l;
}

/* One query row: p holds its scores q.k_j (unscaled) for the nv vectors of
 * keys, ds its dp = dout.v_j; keys j >= lim are masked. */
static inline void an_tile_bwd(int fam, real *p, real *ds, int nv, vmask iota, int lim, real l, real Di, real scale) {
    if (fam == AF_SIGMOID) {
        for (int u = 0; u < nv; u++) {
            vreal pj = att_vsigmoid(vld(p + u * VL) * scale + l);
            pj = vsel(iota + u * VL < lim, pj, (vreal){0});
            vst(p + u * VL, pj);
            vst(ds + u * VL, pj * (1 - pj) * vld(ds + u * VL) * scale);
        }
    } else if (fam == AF_SOFTPICK) {
        real invn = exp(-l);
        for (int u = 0; u < nv; u++) {
            vreal x = vld(p + u * VL) * scale;
            vmask pos = (iota + u * VL < lim) & (x > 0);
            vreal g = vsel(iota + u * VL < lim, att_vexp(x - l), (vreal){0});
            vreal sd = vsel(x > 0, vbc(Di), vsel(x < 0, vbc(-Di), (vreal){0}));
            vst(p + u * VL, vsel(pos, g - invn, (vreal){0}));
            vst(ds + u * VL, g * (vsel(x > 0, vld(ds + u * VL), (vreal){0}) - sd) * scale);
        }
    } else {
        for (int u = 0; u < nv; u++) {
            vreal pj = att_vexp(vld(p + u * VL) * scale - l);
            pj = vsel(iota + u * VL < lim, pj, (vreal){0});
            vst(p + u * VL, pj);
            vst(ds + u * VL, pj * (vld(ds + u * VL) - Di) * scale);
        }
    }
}

#endif
