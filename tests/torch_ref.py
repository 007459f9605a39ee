#!/usr/bin/env python3
"""torch_ref.py -- independent float64 PyTorch reference of the gated-attention model.

Usage:
    torch_ref.py [--label NAME] [--tol-grad X] DUMP
    torch_ref.py --self-test

DUMP is written by `gated xcheck` (format below).  The model is rebuilt here
from the dumped *config* (written from the model spec, not from the C code),
the dumped float32 parameters are loaded and promoted to float64, forward and
backward are run, and the C logits / loss / parameter gradients are compared
against the reference.  An evaluation dump (`gated xcheck --quant SCHEME
--drop gate:TAU`: cfg xcheck.quant / xcheck.drop, no grad.*, out.dropped) is
checked forward only: the weights and linear-layer inputs fake-quantized and
(token, head) outputs dropped here, independently ("Evaluation forward").

Dump format (little-endian):
    GATED-DUMP 1\\n
    cfg <dotted.key> <value>\\n                       (repeated)
    tensor <name> <f32|i32> <ndim> <d0> ... \\n<raw bytes>\\n   (repeated)
    end\\n

Exit status: 0 all comparisons pass, 1 any mismatch (or self-test failure),
2 malformed dump / usage error, 3 a gate variant this reference has no math
for (a value of model.gate.* missing from the tuples below: a new position
or activation in the C tables must be written here too, independently; or
an xcheck.* key / drop rule it does not know).

Needs only torch (Debian python3-torch 1.13 is enough; no
scaled_dot_product_attention is used) and numpy.
"""

import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

torch.set_num_threads(1)

TOL_LOSS_ABS = 1e-4
TOL_LOGITS_REL = 1e-4
TOL_GRAD_REL = 2e-3
TOL_ZERO_ABS = 1e-7
# The evaluation forward (xcheck.quant / xcheck.drop): the same, against the
# reference or it with a rounding float round-off could flip taken the other
# way (see "Tolerance" at the evaluation forward below).
TOL_EVAL_LOSS_ABS = TOL_LOSS_ABS
TOL_EVAL_LOGITS_REL = TOL_LOGITS_REL

# The gate variants this reference implements (its own lists, not read from
# the C code; `gated xcheck --list` may name any C variant, and one missing
# here fails with exit 3).
POSITIONS = ("none", "sdpa", "value", "key", "query", "dense")
GRANULARITIES = ("elementwise", "headwise")
SHARINGS = ("head_specific", "head_shared")
FORMS = ("multiplicative", "additive")
ACTIVATIONS = ("sigmoid", "silu", "tanh", "none", "ns_sigmoid")
INPUTS = ("hidden", "static")
CONTROLS = ("none", "silu", "rmsnorm", "scale")
# The attention normalisers (model.attention.normalizer), each written from
# its paper's formula in attention_weights() below.
NORMALIZERS = ("softmax", "softmax1", "sink_logit", "kv_bias", "sigmoid", "softpick")
# Top-k sparse attention (model.attention.sparse, issue 37): each query t
# attends to the keys S_t the C model selected (dumped as sparse.l<i>, (B, T,
# k) positions, -1 past a row's min(k, t + 1)); the softmax runs over S_t.
# The reference takes the selection as given (it does not redo the indexer or
# the top-k); it checks that each row is a valid causal set of the right size
# and, for window, that it is the last k keys.
SPARSES = ("none", "indexer", "window", "random", "oracle")
SOFTPICK_EPS = 1e-6
# How keys and values are built (model.attention.kv): heads (MHA/GQA) or
# latent (multi-head latent attention, DeepSeek-V2, written from its formula
# in mla_attention() below).
KVS = ("heads", "latent")


class Malformed(Exception):
    """The dump cannot be parsed or lacks something required (exit 2)."""


class Mismatch(Exception):
    """The C model disagrees structurally with the reference (exit 1)."""


class Unsupported(Exception):
    """The dump names a gate variant this reference has no math for (exit 3)."""


# --------------------------------------------------------------------------
# Dump I/O
# --------------------------------------------------------------------------

def _readline(f, what):
    line = f.readline()
    if not line:
        raise Malformed("unexpected end of file while reading %s" % what)
    if not line.endswith(b"\n"):
        raise Malformed("truncated line while reading %s: %r" % (what, line[:80]))
    try:
        return line[:-1].decode("ascii")
    except UnicodeDecodeError:
        raise Malformed("non-ASCII header line while reading %s: %r" % (what, line[:80]))


def read_dump(path):
    """Return (cfg: dict str->str, tensors: dict name->np.ndarray)."""
    cfg = {}
    tensors = {}
    try:
        f = open(path, "rb")
    except OSError as e:
        raise Malformed("cannot open %s: %s" % (path, e))
    with f:
        magic = _readline(f, "magic")
        if magic.strip() != "GATED-DUMP 1":
            raise Malformed("bad magic line %r (expected 'GATED-DUMP 1')" % magic)
        while True:
            line = _readline(f, "record header")
            if line == "end" or line.strip() == "end":
                break
            if line.strip() == "":
                continue
            parts = line.split()
            kind = parts[0]
            if kind == "cfg":
                if len(parts) < 2:
                    raise Malformed("bad cfg line %r" % line)
                key = parts[1]
                val = line.split(None, 2)[2].strip() if len(parts) >= 3 else ""
                if key in cfg:
                    raise Malformed("duplicate cfg key %s" % key)
                cfg[key] = val
            elif kind == "tensor":
                if len(parts) < 4:
                    raise Malformed("bad tensor header %r" % line)
                name, dtype = parts[1], parts[2]
                try:
                    ndim = int(parts[3])
                    dims = [int(d) for d in parts[4:]]
                except ValueError:
                    raise Malformed("bad tensor header %r" % line)
                if ndim < 0 or len(dims) != ndim or any(d < 0 for d in dims):
                    raise Malformed("tensor %s: ndim %d but dims %s" % (name, ndim, dims))
                if dtype == "f32":
                    npdt = np.dtype("<f4")
                elif dtype == "i32":
                    npdt = np.dtype("<i4")
                else:
                    raise Malformed("tensor %s: unknown dtype %r" % (name, dtype))
                n = int(np.prod(dims, dtype=np.int64)) if dims else 1
                nbytes = n * 4
                raw = f.read(nbytes)
                if len(raw) != nbytes:
                    raise Malformed("tensor %s: expected %d bytes, got %d" % (name, nbytes, len(raw)))
                nl = f.read(1)
                if nl != b"\n":
                    raise Malformed("tensor %s: missing newline after %d data bytes (got %r)"
                                    % (name, nbytes, nl))
                if name in tensors:
                    raise Malformed("duplicate tensor %s" % name)
                tensors[name] = np.frombuffer(raw, dtype=npdt).reshape(dims).copy()
            else:
                raise Malformed("unknown record %r" % line[:80])
        rest = f.read(1)
        if rest:
            raise Malformed("trailing data after 'end'")
    return cfg, tensors


def write_dump(path, cfg, tensors):
    """Write a dump (used by the self-test to exercise the parser and comparator)."""
    with open(path, "wb") as f:
        f.write(b"GATED-DUMP 1\n")
        for k, v in cfg.items():
            f.write(("cfg %s %s\n" % (k, v)).encode("ascii"))
        for name, arr in tensors.items():
            arr = np.asarray(arr)
            if arr.dtype.kind == "f":
                a, dt = arr.astype("<f4"), "f32"
            else:
                a, dt = arr.astype("<i4"), "i32"
            hdr = "tensor %s %s %d%s\n" % (name, dt, a.ndim,
                                          "".join(" %d" % d for d in a.shape))
            f.write(hdr.encode("ascii"))
            f.write(np.ascontiguousarray(a).tobytes())
            f.write(b"\n")
        f.write(b"end\n")


# --------------------------------------------------------------------------
# Config
# --------------------------------------------------------------------------

def _get(cfg, key, conv, default=None):
    if key not in cfg:
        if default is None:
            raise Malformed("missing cfg key %s" % key)
        return default
    s = cfg[key]
    try:
        return conv(s)
    except (ValueError, KeyError):
        raise Malformed("cfg %s: bad value %r" % (key, s))


def _bool(s):
    s = s.strip().lower()
    if s in ("true", "1", "yes", "on"):
        return True
    if s in ("false", "0", "no", "off"):
        return False
    raise ValueError(s)


def _variant(cfg, key, choices, default):
    """A model.gate.* value; one outside choices is a variant the reference lacks."""
    s = cfg.get(key, default)
    if s not in choices:
        raise Unsupported("%s = %r: torch_ref.py has no reference for it (it knows %s); "
                          "write its math here, independently of the C code"
                          % (key, s, ", ".join(choices)))
    return s


def model_config(cfg):
    """Resolved model configuration (a plain dict) from the dumped cfg lines."""
    m = {
        "V": _get(cfg, "model.vocab_size", int),
        "C": _get(cfg, "model.d_model", int),
        "L": _get(cfg, "model.n_layer", int),
        "H": _get(cfg, "model.n_head", int),
        "Hk": _get(cfg, "model.n_kv_head", int),
        "dh": _get(cfg, "model.d_head", int),
        "F": _get(cfg, "model.d_ff", int),
        "rope_base": _get(cfg, "model.rope_base", float),
        "eps": _get(cfg, "model.norm_eps", float),
        "qk_norm": _get(cfg, "model.qk_norm", _bool),
        "position": _variant(cfg, "model.gate.position", POSITIONS, "none"),
        "granularity": _variant(cfg, "model.gate.granularity", GRANULARITIES, "elementwise"),
        "sharing": _variant(cfg, "model.gate.sharing", SHARINGS, "head_specific"),
        "form": _variant(cfg, "model.gate.form", FORMS, "multiplicative"),
        "activation": _variant(cfg, "model.gate.activation", ACTIVATIONS, "sigmoid"),
        "input": _variant(cfg, "model.gate.input", INPUTS, "hidden"),
        "control": _variant(cfg, "model.gate.control", CONTROLS, "none"),
        "control_scale": _get(cfg, "model.gate.control_scale", float, 0.5),
        "bias": _get(cfg, "model.gate.bias", _bool, False),
        "normalizer": _variant(cfg, "model.attention.normalizer", NORMALIZERS, "softmax"),
        "kv": _variant(cfg, "model.attention.kv", KVS, "heads"),
        "d_c": _get(cfg, "model.attention.d_c", int, 0),
        "d_R": _get(cfg, "model.attention.d_R", int, -1),
        "sparse": _variant(cfg, "model.attention.sparse", SPARSES, "none"),
        "topk": _get(cfg, "model.attention.topk", int, 64),
        "idx_heads": _get(cfg, "model.attention.indexer_heads", int, 4),
        "idx_dim": _get(cfg, "model.attention.indexer_dim", int, 32),
        "sel": None,  # per layer (B, T, T) bool masks of the selected keys (sparse_masks)
    }
    for k in ("V", "C", "L", "H", "Hk", "dh", "F"):
        if m[k] <= 0:
            raise Malformed("cfg: %s must be positive (got %d); is the config resolved?" % (k, m[k]))
    if m["H"] % m["Hk"] != 0:
        raise Malformed("cfg: n_head %d not divisible by n_kv_head %d" % (m["H"], m["Hk"]))
    if m["dh"] % 2 != 0:
        raise Malformed("cfg: d_head %d must be even for RoPE" % m["dh"])
    return m


def gate_geometry(m):
    """(Hpos, D) of the tensor the gate is applied to."""
    pos = m["position"]
    if pos in ("sdpa", "query"):
        return m["H"], m["dh"]
    if pos in ("key", "value"):
        return m["Hk"], m["dh"]
    if pos == "dense":
        return 1, m["C"]
    raise ValueError(pos)


def static_gate_shape(m):
    hpos, d = gate_geometry(m)
    elem = m["granularity"] == "elementwise"
    if m["sharing"] == "head_specific":
        return (hpos, d) if elem else (hpos,)
    return (d,) if elem else (1,)


def expected_params(m):
    """Ordered dict name -> shape of every parameter the model should have."""
    C, H, Hk, dh, Fd, V = m["C"], m["H"], m["Hk"], m["dh"], m["F"], m["V"]
    ps = {"wte": (V, C)}
    for i in range(m["L"]):
        p = "l%d." % i
        ps[p + "ln1"] = (C,)
        if m["kv"] == "latent":
            # q^C of every head then q^R; the latent's down-projection; the shared RoPE key
            ps[p + "wq"] = (H * (dh + m["d_R"]), C)
            ps[p + "w_dkv"] = (m["d_c"], C)
            if m["d_R"]:
                ps[p + "w_kr"] = (m["d_R"], C)
        else:
            ps[p + "wq"] = (H * dh, C)
            ps[p + "wk"] = (Hk * dh, C)
            ps[p + "wv"] = (Hk * dh, C)
        if m["position"] != "none":
            hpos, d = gate_geometry(m)
            if m["input"] == "hidden":
                ng = hpos * d if m["granularity"] == "elementwise" else hpos
                ps[p + "wg"] = (ng, C)
                if m["bias"]:
                    ps[p + "gate_b"] = (ng,)
            else:
                ps[p + "gate_p"] = static_gate_shape(m)
        if m["qk_norm"]:
            ps[p + "q_norm"] = (dh,)
            ps[p + "k_norm"] = (dh,)
        if m["control"] == "rmsnorm":
            ps[p + "sdpa_norm"] = (dh,)
        if m["normalizer"] == "sink_logit":
            ps[p + "sink_logit"] = (H,)
        if m["normalizer"] == "kv_bias":
            ps[p + "kv_bias"] = (Hk, dh)
        if m["kv"] == "latent":
            ps[p + "kv_norm"] = (m["d_c"],)
            ps[p + "w_uk"] = (H * dh, m["d_c"])
            ps[p + "w_uv"] = (H * dh, m["d_c"])
        ps[p + "wo"] = (C, H * dh)
        ps[p + "ln2"] = (C,)
        ps[p + "w_gate"] = (Fd, C)
        ps[p + "w_up"] = (Fd, C)
        ps[p + "w_down"] = (C, Fd)
    ps["ln_f"] = (C,)
    if m["sparse"] == "indexer":
        # after the dense tensors: q_I | k_I | w rows, and k_I's RMSNorm weight
        hi, di = m["idx_heads"], m["idx_dim"]
        for i in range(m["L"]):
            ps["l%d.indexer" % i] = ((hi + 1) * di + hi, C)
            ps["l%d.indexer_knorm" % i] = (di,)
    return ps


def sparse_masks(m, tens, B, T):
    """Per layer (B, 1, T, T) bool masks of the keys each query attends to,
    from the dumped selections, or None when the model ran dense (no sparse
    row, or k >= T)."""
    if m["sparse"] == "none" or m["topk"] >= T:
        if any(n.startswith("sparse.") for n in tens):
            raise Malformed("a dense model's dump has sparse.* selections")
        return None
    k = m["topk"]
    masks = []
    for i in range(m["L"]):
        name = "sparse.l%d" % i
        if name not in tens:
            raise Malformed("sparse model (k %d < T %d): dump lacks %s" % (k, T, name))
        sel = tens[name]
        if sel.dtype.kind != "i" or sel.shape != (B, T, k):
            raise Malformed("%s must be i32 (B, T, k) = %s, got %s" % (name, (B, T, k), sel.shape))
        mask = np.zeros((B, 1, T, T), dtype=bool)
        for b in range(B):
            for t in range(T):
                n = min(k, t + 1)
                row = sel[b, t]
                if (np.any(row[n:] != -1) or np.any(row[:n] < 0) or np.any(row[:n] > t)
                        or np.any(np.diff(row[:n]) <= 0)):
                    raise Mismatch("%s[%d, %d] = %s is not %d increasing keys <= %d then -1"
                                   % (name, b, t, row.tolist(), n, t))
                if m["sparse"] == "window" and list(row[:n]) != list(range(t - n + 1, t + 1)):
                    raise Mismatch("%s[%d, %d] = %s is not the last %d keys" % (name, b, t, row.tolist(), n))
                mask[b, 0, t, row[:n]] = True
        masks.append(torch.from_numpy(mask))
    return masks


# --------------------------------------------------------------------------
# Model
# --------------------------------------------------------------------------

def rmsnorm(z, w, eps):
    return z / torch.sqrt((z * z).mean(dim=-1, keepdim=True) + eps) * w


def act(x, name):
    if name == "sigmoid":
        return torch.sigmoid(x)
    if name == "silu":
        return x * torch.sigmoid(x)
    if name == "tanh":
        return torch.tanh(x)
    if name == "none":
        return x
    if name == "ns_sigmoid":
        return 0.5 + 0.5 * torch.sigmoid(x)
    raise ValueError(name)


def rope_tables(T, dh, base, dtype):
    i = torch.arange(dh // 2, dtype=torch.float64)
    inv_freq = base ** (-2.0 * i / dh)
    p = torch.arange(T, dtype=torch.float64)
    ang = p[:, None] * inv_freq[None, :]                      # (T, dh/2)
    cos = torch.cat([torch.cos(ang), torch.cos(ang)], dim=-1)  # (T, dh)
    sin = torch.cat([torch.sin(ang), torch.sin(ang)], dim=-1)
    return cos.to(dtype), sin.to(dtype)


def rope(x, cos, sin):
    """x: (B, T, nh, dh)."""
    half = x.shape[-1] // 2
    rot = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    c = cos[None, :, None, :]
    s = sin[None, :, None, :]
    return x * c + rot * s


def attention_weights(scores, mask, norm, extra=None):
    """(B,H,T,T) masked scores -> weights over the real keys, from each
    normaliser's formula.  extra (B,H,T,1): the logit of the extra key with
    value 0 (sink_logit, kv_bias)."""
    T = scores.shape[-1]
    if norm == "softmax":
        return torch.softmax(scores, dim=-1)
    if norm in ("softmax1", "sink_logit", "kv_bias"):
        # softmax1 (Miller 2023): exp(s) / (1 + sum exp(s)), a key of logit 0;
        # sink_logit as Hugging Face's GptOss eager_attention_forward: the
        # sink logit joins the row, the softmax runs, its column is dropped;
        # kv_bias (Gu et al. 2024): a key k* with value v* = 0.
        if extra is None:
            extra = torch.zeros(scores.shape[:-1] + (1,), dtype=scores.dtype)
        combined = torch.cat([scores, extra], dim=-1)
        combined = combined - combined.max(dim=-1, keepdim=True).values
        return torch.softmax(combined, dim=-1)[..., :T]
    if norm == "sigmoid":
        # Ramapuram et al. 2024: sigmoid(s + b), b = -log(n), n the keys the row sees
        n = torch.arange(1, T + 1, dtype=scores.dtype).reshape(1, 1, T, 1)
        return torch.where(mask, torch.sigmoid(scores - torch.log(n)), torch.zeros_like(scores))
    if norm == "softpick":
        # Zuhri et al. 2025: relu(e^s - 1) / (sum |e^s - 1| + eps), in float64 directly
        e = torch.where(mask, torch.expm1(torch.where(mask, scores, torch.zeros_like(scores))),
                        torch.zeros_like(scores))
        return torch.relu(e) / (e.abs().sum(dim=-1, keepdim=True) + SOFTPICK_EPS)
    raise ValueError(norm)


def causal_attention(q, k, v, norm="softmax", sink=None, kstar=None, sel=None, with_weights=False):
    """q: (B,T,H,dh), k/v: (B,T,Hk,dh) -> (B,T,H,dh); sink (H,) for
    sink_logit, kstar (Hk, dh) for kv_bias; sel (B,1,T,T) bool: the keys
    each query of a sparse layer attends to (None: every causal key)."""
    B, T, H, dh = q.shape
    Hk = k.shape[2]
    rep = H // Hk
    # query head h uses kv head h // rep
    kh = k.repeat_interleave(rep, dim=2)
    vh = v.repeat_interleave(rep, dim=2)
    qt = q.permute(0, 2, 1, 3)                                # (B,H,T,dh)
    kt = kh.permute(0, 2, 1, 3)
    vt = vh.permute(0, 2, 1, 3)
    scores = qt @ kt.transpose(-1, -2) / math.sqrt(dh)        # (B,H,T,T)
    mask = torch.ones(T, T, dtype=torch.bool).tril()
    if sel is not None:
        mask = sel  # (B, 1, T, T): the selected keys (a subset of the causal ones)
    scores = scores.masked_fill(~mask, float("-inf"))
    extra = None
    if norm == "sink_logit":
        extra = sink.reshape(1, H, 1, 1).expand(B, H, T, 1)
    elif norm == "kv_bias":
        ks = kstar.repeat_interleave(rep, dim=0)              # (H, dh)
        extra = (qt * ks.reshape(1, H, 1, dh)).sum(-1, keepdim=True) / math.sqrt(dh)
    att = attention_weights(scores, mask, norm, extra)
    o = att @ vt                                              # (B,H,T,dh)
    if with_weights:
        return o.permute(0, 2, 1, 3), att
    return o.permute(0, 2, 1, 3)


def check_topk(score, S, k, what, tol=1e-5):
    """The dumped selection S (B,T,T bool) holds, in each row t >= k, k keys
    whose scores are at least every left-out key's (ties within tol of the
    k-th score may go either way; C breaks them to the lower position)."""
    B, T, _ = score.shape
    for b in range(B):
        for t in range(k, T):
            row, s = score[b, t, :t + 1], S[b, t, :t + 1]
            if int(s.sum()) != k:
                raise Mismatch("%s[%d, %d]: %d keys selected, k is %d" % (what, b, t, int(s.sum()), k))
            if row[~s].numel() and float(row[~s].max()) > float(row[s].min()) + tol:
                raise Mismatch("%s[%d, %d]: a left-out key scores %.9g above a selected one's %.9g"
                               % (what, b, t, float(row[~s].max()), float(row[s].min())))


def indexer_kl(m, P, p, h, att, sel):
    """DeepSeek-V3.2-Exp's lightning indexer (inference/model.py class Indexer,
    as docs/model.md states it for this project: k_I RMS-normed with a learned
    weight, RoPE on all d_I channels) and its training loss in sparse training:
    the sum over queries t of KL(p_t || softmax(I_t)) over the selected keys
    S_t, p_t the layer's attention weights summed over heads / H (a constant
    target), the indexer reading h detached.  Written from the formulas."""
    B, T, _ = h.shape
    hi, di, H = m["idx_heads"], m["idx_dim"], m["H"]
    z = h.detach() @ P[p + "indexer"].t()                               # (B,T,(hi+1)di+hi)
    q = z[..., :hi * di].reshape(B, T, hi, di)
    k = rmsnorm(z[..., hi * di:hi * di + di].reshape(B, T, 1, di), P[p + "indexer_knorm"], m["eps"])
    w = z[..., hi * di + di:] / math.sqrt(hi * di)                      # (B,T,hi)
    cos, sin = rope_tables(T, di, m["rope_base"], h.dtype)
    q, k = rope(q, cos, sin), rope(k, cos, sin)[:, :, 0]               # (B,T,hi,di), (B,T,di)
    I = (w.unsqueeze(-1) * torch.relu(torch.einsum("btjd,bsd->btjs", q, k))).sum(2)   # (B,T,T)
    S = sel[:, 0]                                                       # (B,T,T) bool
    check_topk(I.detach(), S, m["topk"], p + "indexer")
    logr = torch.log_softmax(I.masked_fill(~S, float("-inf")), dim=-1)
    target = att.detach().sum(1) / H                                    # (B,T,T), 0 off S_t
    terms = torch.where(S & (target > 0), target * (torch.log(torch.where(S & (target > 0), target,
                                                                          torch.ones_like(target))) - logr),
                        torch.zeros_like(target))
    return terms.sum()


def heads_attention(m, P, p, h, gl, cos, sin, i):
    """Multi-head / grouped-query attention from h (B,T,C) -> o (B,T,H,dh):
    q, k, v projected from h, QK-norm, the G4/G3/G2 gates, RoPE; a sparse
    layer (i: the layer's index) attends over the C model's selection, whose
    oracle sets and indexer KL are checked here."""
    B, T = h.shape[0], h.shape[1]
    H, Hk, dh, eps, pos = m["H"], m["Hk"], m["dh"], m["eps"], m["position"]
    q = (h @ P[p + "wq"].t()).reshape(B, T, H, dh)
    k = (h @ P[p + "wk"].t()).reshape(B, T, Hk, dh)
    v = (h @ P[p + "wv"].t()).reshape(B, T, Hk, dh)
    if m["qk_norm"]:
        q = rmsnorm(q, P[p + "q_norm"], eps)
        k = rmsnorm(k, P[p + "k_norm"], eps)
    if pos == "query":
        q = apply_gate(m, q, gl)
    elif pos == "key":
        k = apply_gate(m, k, gl)
    elif pos == "value":
        v = apply_gate(m, v, gl)
    q = rope(q, cos, sin)
    k = rope(k, cos, sin)
    sel = m["sel"][i] if m["sel"] is not None else None
    o, att = causal_attention(q, k, v, m["normalizer"], P.get(p + "sink_logit"), P.get(p + "kv_bias"), sel,
                              with_weights=True)
    if m["sparse"] == "oracle" and sel is not None:
        _, dense = causal_attention(q, k, v, with_weights=True)
        check_topk(dense.detach().sum(1), sel[:, 0], m["topk"], p + "oracle")
    if m["sparse"] == "indexer" and sel is not None:
        m["kl"] = m["kl"] + indexer_kl(m, P, p, h, att, sel) / (B * T * m["L"])
    return o


def mla_attention(m, P, p, h, T):
    """Multi-head latent attention (DeepSeek-V2, arXiv 2405.04434, without
    query compression) from h (B,T,C) -> o (B,T,H,dh):
      c = RMSNorm(W_DKV h); k^C_i = W_UK,i c; v_i = W_UV,i c;
      k^R = RoPE(W_KR h) (d_R, shared by the heads); q_i = [q^C_i; RoPE(q^R_i)];
      scores [q^C_i; q^R_i].[k^C_i; k^R] / sqrt(d_h + d_R)."""
    B = h.shape[0]
    H, dh, dR, eps = m["H"], m["dh"], m["d_R"], m["eps"]
    c = rmsnorm(h @ P[p + "w_dkv"].t(), P[p + "kv_norm"], eps)
    kC = (c @ P[p + "w_uk"].t()).reshape(B, T, H, dh)
    v = (c @ P[p + "w_uv"].t()).reshape(B, T, H, dh)
    q = h @ P[p + "wq"].t()
    qC = q[..., :H * dh].reshape(B, T, H, dh)
    if dR == 0:
        q, k = qC, kC
    else:
        cos, sin = rope_tables(T, dR, m["rope_base"], h.dtype)
        qR = rope(q[..., H * dh:].reshape(B, T, H, dR), cos, sin)
        kR = rope((h @ P[p + "w_kr"].t()).reshape(B, T, 1, dR), cos, sin)
        q = torch.cat([qC, qR], dim=-1)
        k = torch.cat([kC, kR.expand(B, T, H, dR)], dim=-1)
    # causal_attention scales by 1/sqrt of q's width: d_h + d_R here
    return causal_attention(q, k, v, m["normalizer"], P.get(p + "sink_logit"), None)


def gate_scores(m, gl, hpos, d):
    """Return S broadcastable against (B,T,hpos,d)."""
    a = m["activation"]
    elem = m["granularity"] == "elementwise"
    if m["input"] == "hidden":
        B, T = gl.shape[0], gl.shape[1]
        g = gl.reshape(B, T, hpos, d if elem else 1)
        s = act(g, a)
        if m["sharing"] == "head_shared":
            s = s.mean(dim=2, keepdim=True)
        return s
    # static parameter
    s = act(gl, a)
    if m["sharing"] == "head_specific":
        return s.reshape(1, 1, hpos, d if elem else 1)
    return s.reshape(1, 1, 1, d if elem else 1)


def apply_gate(m, y, gl, with_scores=False):
    hpos, d = gate_geometry(m)
    assert y.shape[2] == hpos and y.shape[3] == d, (y.shape, hpos, d)
    s = gate_scores(m, gl, hpos, d)
    out = y * s if m["form"] == "multiplicative" else y + s
    return (out, s) if with_scores else out


def forward(m, P, tokens, targets, ev=None):
    """P: dict name -> tensor.  Returns (logits (B,T,V), loss scalar).

    ev (an EvalForward, or None for the float model): the evaluation forward,
    whose linear_input() replaces the input of each of the four linear layers
    of a block (q|k|v|gate, wo, w_gate|w_up, w_down): activation quantization,
    and at wo the dropped (token, head) slices first."""
    B, T = tokens.shape
    C, H, Hk, dh, eps = m["C"], m["H"], m["Hk"], m["dh"], m["eps"]
    pos = m["position"]
    m["kl"] = 0.0
    wte = P["wte"]
    cos, sin = rope_tables(T, dh, m["rope_base"], wte.dtype)
    x = wte[tokens]
    for i in range(m["L"]):
        p = "l%d." % i
        h = rmsnorm(x, P[p + "ln1"], eps)
        if ev is not None:
            h = ev.linear_input(i, "qkv", h)
        gl = None
        if pos != "none":
            gl = h @ P[p + "wg"].t() if m["input"] == "hidden" else P[p + "gate_p"]
            if m["input"] == "hidden" and m["bias"]:
                gl = gl + P[p + "gate_b"]
        if m["kv"] == "latent":
            o = mla_attention(m, P, p, h, T)
        else:
            o = heads_attention(m, P, p, h, gl, cos, sin, i)
        if m["control"] == "silu":
            o = o * torch.sigmoid(o)
        elif m["control"] == "rmsnorm":
            o = rmsnorm(o, P[p + "sdpa_norm"], eps)
        elif m["control"] == "scale":
            o = o * m["control_scale"]
        s1 = None
        if pos == "sdpa":
            o, s1 = apply_gate(m, o, gl, with_scores=True)
        if ev is not None:
            o = ev.wo_input(i, o, s1)
        a = o.reshape(B, T, H * dh) @ P[p + "wo"].t()
        if pos == "dense":
            a = apply_gate(m, a.reshape(B, T, 1, C), gl).reshape(B, T, C)
        x = x + a
        h2 = rmsnorm(x, P[p + "ln2"], eps)
        if ev is not None:
            h2 = ev.linear_input(i, "ffn_in", h2)
        u = h2 @ P[p + "w_gate"].t()
        hs = (u * torch.sigmoid(u)) * (h2 @ P[p + "w_up"].t())
        if ev is not None:
            hs = ev.linear_input(i, "ffn_down", hs)
        x = x + hs @ P[p + "w_down"].t()
    logits = rmsnorm(x, P["ln_f"], eps) @ wte.t()
    V = logits.shape[-1]
    loss = F.cross_entropy(logits.reshape(B * T, V), targets.reshape(B * T), reduction="mean")
    return logits, loss


def run_reference(m, P32, tokens, targets):
    """P32: dict of numpy float32 params.  Returns (logits, loss, grads) as numpy float64."""
    P = {n: torch.from_numpy(np.asarray(a, dtype=np.float32)).double().requires_grad_(True)
         for n, a in P32.items()}
    tok = torch.from_numpy(np.asarray(tokens, dtype=np.int64))
    tgt = torch.from_numpy(np.asarray(targets, dtype=np.int64))
    logits, loss = forward(m, P, tok, tgt)
    # the sparse indexer's KL joins the objective: its gradient reaches only
    # the indexer's tensors (its input and target are detached)
    (loss + m["kl"]).backward()
    grads = {n: t.grad.detach().numpy().copy() if t.grad is not None
             else np.zeros(t.shape, dtype=np.float64) for n, t in P.items()}
    return logits.detach().numpy(), float(loss.item()), grads


# --------------------------------------------------------------------------
# Evaluation forward: simulated quantization and dropped heads
# --------------------------------------------------------------------------
#
# What `gated xcheck --quant SCHEME / --drop gate:TAU` dumps (the description
# in core/run/infer.h; written here from it, not from the C code):
#
#   weights   of the fused q|k|v|gate projection, wo, w_gate|w_up and w_down
#             of every block: wB one scale per output row, wBgG one per group
#             of G consecutive input columns (the last group of a row may be
#             shorter);
#   inputs    of those four linear layers: aBtensor one scale for the whole
#             (B*T, k) input, aBtoken one per token (row);
#   one block x, b bits: qmax = 2^(b-1) - 1, s = max|x| / qmax,
#             x -> s * clamp(round_half_even(x / s), -qmax, qmax); a block of
#             zeros stays zero, one with a non-finite value is left alone;
#   gate:TAU  the (token, head) slice of wo's input (the G1-gated attention
#             output) is zeroed where the head's mean |gate score| over its
#             d_head elements is below TAU, before wo's input is quantized.
#
# The embedding (also the tied output layer), the norms, the gate bias and
# static gate parameters stay float.
#
# Precision.  The quantization arithmetic is done in float32, as the C build
# does it, not in float64: the quantized weights are then bit-identical to
# the C ones (the dumped float32 weights are exactly what the C side
# quantized; float32 division and multiplication are correctly rounded in
# both, and torch.round rounds half to even like rint), including a value
# whose x / s is an exact half in float32, where float64 arithmetic could
# round the other way.  The activations are the reference's float64 ones
# rounded to float32, put through the same float32 arithmetic, and promoted
# back to float64 for the rest of the forward.
#
# Tolerance.  Those activations differ from the C side's by float32
# round-off: on the w8-a8token / w8-a8tensor G1 cases of tests/xcheck.sh,
# x / s of the C hook's inputs and of this reference's differ by at most
# 7e-5 steps (5.5e-7 of the block's max|x| times qmax = 127).  A value whose
# x / s is that close to a half-step can round to the neighbouring grid
# point on one side only: a one-step flip, whose effect is far above float
# round-off (flipping every quantized value of those cases one at a time,
# 9216 forwards each: up to 4.1e-3 of max|logits| and 1.8e-4 of the loss; a
# gate-drop decision up to 4.6e-2).  A fixed tolerance that covers one such
# flip (1e-2, say) would also pass a wrong rounding anywhere, or a
# quantizer off by a little everywhere, so the flips are not absorbed into
# the tolerance but rerun: the reference records every value within
# NEAR_TIE_REL * qmax steps of a half-step (7x the round-off measured) and
# every (token, head) pair whose mean score is within NEAR_TAU of tau (the
# scores agree to ~1e-7): the decisions round-off could turn.  The C
# outputs must match, within the float tolerances of every other case
# (logits TOL_EVAL_LOGITS_REL of max|logits|, loss TOL_EVAL_LOSS_ABS) and
# with the same drop counts, the reference's own forward, or one rerun
# with one of those decisions taken the other way, or (tried only when
# neither matches) with two of them.  The rerun recomputes everything
# downstream of the flip, later roundings and drops too, so a one-step flip
# of any one value that round-off can cause is matched up to round-off,
# and a flip round-off cannot cause fails.  (Three or more flips in one
# dump are not tried: the expected number of flips, the sum over the values
# of twice the measured |d(x/s)|, is 0.04 - 0.08 a case, so two in one dump
# are already a ~0.3% event.)

QUANT_MIN_BITS, QUANT_MAX_BITS = 2, 16
NEAR_TIE_REL = 4e-6  # |x/s - (k + 1/2)| below it * qmax (steps): may round either way in C
NEAR_TAU = 1e-5  # |mean |score| - tau| below it: the drop decision may go either way in C


def parse_quant(s):
    """'w8-a8token', 'w4g32', 'a8tensor', 'float' -> dict(wbits, wgroup, abits, agran).

    Grammar (run/infer.h): float | [wB[gG]][-aB(tensor|token)] (the dash only
    between the two parts), B in [2, 16], G >= 2."""
    import re
    q = {"wbits": 0, "wgroup": 0, "abits": 0, "agran": None}
    if s == "float":
        return q
    mt = re.fullmatch(r"(?:w(\d+)(?:g(\d+))?)?(?:(-?)a(\d+)(tensor|token))?", s)
    bad = Malformed("xcheck.quant %r is not a quantization scheme" % s)
    if not mt or not s:
        raise bad
    wb, wg, dash, ab, agran = mt.groups()
    if (wb is not None and ab is not None) != (dash == "-"):
        raise bad  # w8-a8token, a8token; not w8a8token, -a8token
    if wb is not None:
        q["wbits"] = int(wb)
        q["wgroup"] = int(wg) if wg is not None else 0
        if not QUANT_MIN_BITS <= q["wbits"] <= QUANT_MAX_BITS or (wg is not None and q["wgroup"] < 2):
            raise bad
    if ab is not None:
        q["abits"], q["agran"] = int(ab), agran
        if not QUANT_MIN_BITS <= q["abits"] <= QUANT_MAX_BITS:
            raise bad
    return q


def parse_drop(s):
    """'gate:TAU' -> TAU (float >= 0)."""
    if not s.startswith("gate:"):
        raise Unsupported("xcheck.drop %r: the reference knows only gate:TAU" % s)
    try:
        tau = float(s[5:])
    except ValueError:
        raise Malformed("xcheck.drop %r: bad TAU" % s)
    if not (math.isfinite(tau) and tau >= 0):
        raise Malformed("xcheck.drop %r: TAU must be finite and >= 0" % s)
    return tau


def fake_quant_blocks(x, bits, ties=None, force=()):
    """Fake-quantize each row of x (float32, (nblocks, size)) as one block.

    ties (a list): gets (row, col, other) of every value within
    NEAR_TIE_REL * qmax steps of a half-step, other the integer on the far
    side of it; force: (row, col, integer) to put there instead of the
    rounding (a rerun with such a decision taken the other way)."""
    assert x.dtype == torch.float32 and x.dim() == 2
    qmax = float(2 ** (bits - 1) - 1)
    amax = x.abs().amax(dim=1, keepdim=True)
    keep = ~torch.isfinite(amax) | (amax == 0)  # left alone (zeros stay zeros)
    s = torch.where(keep, torch.ones_like(amax), amax / torch.full_like(amax, qmax))  # float32 / float32
    r = x / s
    qv = torch.clamp(torch.round(r), -qmax, qmax)
    if ties is not None:
        d = r - qv
        near = ((d.abs() - 0.5).abs() < NEAR_TIE_REL * qmax) & ~keep
        for row, col in torch.nonzero(near).tolist():
            other = float(qv[row, col]) + (1.0 if float(d[row, col]) >= 0 else -1.0)
            if abs(other) <= qmax:
                ties.append((row, col, other))
    for row, col, v in force:
        qv[row, col] = v
    return torch.where(keep, x, s * qv)


def fake_quant_rows(x, bits, group=0):
    """Each row of x (float32, (n, k)) in groups of `group` columns (0: whole rows)."""
    n, k = x.shape
    g = k if group <= 0 or group > k else group
    out = torch.empty_like(x)
    for j in range(0, k, g):
        out[:, j:j + g] = fake_quant_blocks(x[:, j:j + g].contiguous(), bits)
    return out


def fake_quant_tensor(x, bits):
    """One scale for all of x (float32)."""
    return fake_quant_blocks(x.reshape(1, -1), bits).reshape(x.shape)


def quant_weight_names(m):
    """The block weights the schemes quantize (the fused projection's parts
    and w_gate / w_up are quantized row by row, so one at a time is the same)."""
    names = []
    for i in range(m["L"]):
        p = "l%d." % i
        names += [p + "wq", p + "wk", p + "wv"]
        if m["position"] != "none" and m["input"] == "hidden":
            names.append(p + "wg")
        names += [p + "wo", p + "w_gate", p + "w_up", p + "w_down"]
    return names


def quantize_weights(m, P32, q):
    """The float32 params with the block weights quantized (q: parse_quant)."""
    P = {n: np.asarray(a, dtype=np.float32) for n, a in P32.items()}
    if q["wbits"]:
        for n in quant_weight_names(m):
            t = torch.from_numpy(P[n].copy())
            P[n] = fake_quant_rows(t, q["wbits"], q["wgroup"]).numpy()
    return P


class EvalForward:
    """The hooks forward(ev=...) calls.  Records the drop counts and the
    decisions that float round-off could turn (ambiguous: ("act", layer,
    site, row, col, integer) / ("drop", layer, b, t, h, drop?), each with
    the other outcome); forced: such decisions, taken that other way."""

    def __init__(self, m, q, tau, forced=()):
        self.m, self.q, self.tau, self.forced = m, q, tau, tuple(forced)
        self.dropped = [0] * m["L"]
        self.pairs = [0] * m["L"]
        self.margin = float("inf")  # min |mean |score| - tau| over all pairs
        self.quantized = 0          # activation values quantized
        self.ambiguous = []

    def linear_input(self, layer, site, x):
        """x (B, T, k) float64 -> what the layer multiplies."""
        if not self.q["abits"]:
            return x
        B, T, k = x.shape
        x32 = x.reshape(B * T, k).to(torch.float32)
        blocks = x32.reshape(1, -1) if self.q["agran"] == "tensor" else x32
        force = [f[3:] for f in self.forced if f[0] == "act" and f[1:3] == (layer, site)]
        ties = []
        y = fake_quant_blocks(blocks, self.q["abits"], ties, force)
        self.quantized += x32.numel()
        self.ambiguous += [("act", layer, site) + t for t in ties]
        return y.reshape(B * T, k).to(x.dtype).reshape(B, T, k)

    def wo_input(self, layer, o, s1):
        """o (B, T, H, dh): the attention output after the G1 gate, s1 its scores."""
        if self.tau is not None:
            score = torch.broadcast_to(s1, o.shape).abs().mean(dim=-1)  # (B, T, H)
            drop = score < self.tau
            dist = (score - self.tau).abs()
            self.margin = min(self.margin, float(dist.min()))
            self.ambiguous += [("drop", layer) + tuple(i) + (not bool(drop[tuple(i)]),)
                               for i in torch.nonzero(dist < NEAR_TAU).tolist()]
            for f in self.forced:
                if f[0] == "drop" and f[1] == layer:
                    drop[f[2:5]] = f[5]
            self.dropped[layer] += int(drop.sum())
            self.pairs[layer] += int(drop.numel())
            o = torch.where(drop[..., None], torch.zeros_like(o), o)
        B, T, H, dh = o.shape
        return self.linear_input(layer, "wo", o.reshape(B, T, H * dh)).reshape(B, T, H, dh)


def describe_decision(a):
    if a[0] == "act":
        return "l%d %s input (%d, %d) rounded to %d" % (a[1], a[2], a[3], a[4], a[5])
    return "l%d pair (b %d, t %d, head %d) %s" % (a[1], a[2], a[3], a[4], "dropped" if a[5] else "kept")


def eval_spec(cfg):
    """(quant dict or None, tau or None) from the dump's xcheck.* lines."""
    for k in cfg:
        if k.startswith("xcheck.") and k not in ("xcheck.quant", "xcheck.drop"):
            raise Unsupported("%s: torch_ref.py knows only xcheck.quant and xcheck.drop" % k)
    q = parse_quant(cfg["xcheck.quant"]) if "xcheck.quant" in cfg else None
    tau = parse_drop(cfg["xcheck.drop"]) if "xcheck.drop" in cfg else None
    return q, tau


def run_eval_reference(m, P32, tokens, targets, q, tau):
    """Evaluation forward (no backward).  Returns (logits, loss, EvalForward,
    rerun): rerun(forced) is the same forward with the decisions `forced`
    (from EvalForward.ambiguous) taken the other way: (logits, loss, dropped)."""
    if q is None:
        q = parse_quant("float")
    if tau is not None and not (m["position"] == "sdpa" and m["form"] == "multiplicative"):
        raise Malformed("xcheck.drop needs a multiplicative G1 gate (model.gate.position sdpa), "
                        "the dump has %s %s" % (m["position"], m["form"]))
    Pq = quantize_weights(m, P32, q)
    P = {n: torch.from_numpy(a).double() for n, a in Pq.items()}
    tok = torch.from_numpy(np.asarray(tokens, dtype=np.int64))
    tgt = torch.from_numpy(np.asarray(targets, dtype=np.int64))

    def rerun(forced):
        e = EvalForward(m, q, tau, forced)
        with torch.no_grad():
            lg, ls = forward(m, P, tok, tgt, e)
        return lg.numpy(), float(ls.item()), e.dropped

    ev = EvalForward(m, q, tau)
    with torch.no_grad():
        logits, loss = forward(m, P, tok, tgt, ev)
    return logits.numpy(), float(loss.item()), ev, rerun


# --------------------------------------------------------------------------
# Comparison
# --------------------------------------------------------------------------

def _cmp(c, ref):
    c = np.asarray(c, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    if not np.all(np.isfinite(c)):
        bad = np.argwhere(~np.isfinite(c))[0]
        return float("inf"), float("inf"), tuple(int(i) for i in bad)
    diff = np.abs(c - ref)
    idx = int(np.argmax(diff)) if diff.size else 0
    max_abs = float(diff.reshape(-1)[idx]) if diff.size else 0.0
    refmax = float(np.max(np.abs(ref))) if ref.size else 0.0
    rel = max_abs / (refmax + 1e-30)
    worst = tuple(int(i) for i in np.unravel_index(idx, diff.shape)) if diff.size else ()
    return max_abs, rel, worst


def _fmt_idx(t):
    if len(t) == 1:
        return "(%d)" % t[0]
    return "(" + ", ".join(str(i) for i in t) + ")"


def _check_eval(cfg, m, params, tens, q, tau, label, out):
    """The evaluation dump's logits, loss (and drop counts) against
    run_eval_reference: its own forward, or one with one or two of the
    decisions round-off could turn taken the other way (see "Tolerance" at
    the evaluation forward)."""
    what = " ".join("%s=%s" % (k[len("xcheck."):], cfg[k]) for k in ("xcheck.quant", "xcheck.drop") if k in cfg)
    c_drop = None
    if tau is not None:
        if "out.dropped" not in tens:
            raise Malformed("an xcheck.drop dump lacks out.dropped")
        d = tens["out.dropped"]
        if d.dtype.kind != "i" or d.shape != (m["L"],):
            raise Malformed("out.dropped must be i32 (n_layer,), has %s %s" % (d.dtype, d.shape))
        c_drop = [int(v) for v in d]
    logits, loss, ev, rerun = run_eval_reference(m, params, tens["input.tokens"], tens["input.targets"], q, tau)
    c_logits = tens["out.logits"]
    c_loss = float(tens["out.loss"].reshape(-1)[0])
    refmax = float(np.max(np.abs(logits))) + 1e-30

    def errors(lg, ls, dr):
        la, lr, lw = _cmp(c_logits, lg)
        loss_abs = abs(c_loss - ls) if math.isfinite(c_loss) else float("inf")
        ok = lr <= TOL_EVAL_LOGITS_REL and loss_abs <= TOL_EVAL_LOSS_ABS and (c_drop is None or c_drop == dr)
        return ok, la, lr, lw, loss_abs

    print("  evaluation forward (%s): forward only, no gradients" % what, file=out)
    n_act = sum(1 for a in ev.ambiguous if a[0] == "act")
    if q is not None and q["abits"]:
        print("  activations: %d values quantized, %d within %.1e steps of a half-step"
              % (ev.quantized, n_act, NEAR_TIE_REL * (2 ** (q["abits"] - 1) - 1)), file=out)
    if tau is not None:
        print("  dropped pairs per layer  c %s  ref %s  of %s  (min |score - tau| %.2e, %d within %.0e)"
              % (c_drop, ev.dropped, ev.pairs, ev.margin, len(ev.ambiguous) - n_act, NEAR_TAU), file=out)
        if sum(ev.dropped) in (0, sum(ev.pairs)):
            print("  note: tau drops %s pairs: the drop is not exercised" % ("no" if not sum(ev.dropped) else "all"),
                  file=out)
    base = errors(logits, loss, ev.dropped)
    match, matched = ([], base) if base[0] else (None, None)
    singles = []
    for a in ev.ambiguous:
        lg, ls, dr = rerun([a])
        singles.append((a, float(np.max(np.abs(lg - logits))), abs(ls - loss)))
        if match is None:
            e = errors(lg, ls, dr)
            if e[0]:
                match, matched = [a], e
    if singles:
        w = max(singles, key=lambda t: t[1])
        print("  %d decisions round-off could turn, each rerun the other way: the largest changes max|logits| by "
              "%.2e (rel %.2e; %s), loss by %.2e"
              % (len(singles), w[1], w[1] / refmax, describe_decision(w[0]), max(t[2] for t in singles)), file=out)
    if match is None:
        for i in range(len(ev.ambiguous)):
            for j in range(i + 1, len(ev.ambiguous)):
                e = errors(*rerun([ev.ambiguous[i], ev.ambiguous[j]]))
                if e[0] and match is None:
                    match, matched = [ev.ambiguous[i], ev.ambiguous[j]], e
    fail = match is None
    ok, la, lr, lw, loss_abs = matched if matched is not None else base
    print("  loss  c %.9g  ref %.9g  abs %.2e  (tol %.0e)" % (c_loss, loss, base[4], TOL_EVAL_LOSS_ABS), file=out)
    print("  out.logits  max_abs %.2e  rel %.2e  worst %s  (tol rel %.0e)"
          % (base[1], base[2], _fmt_idx(base[3]), TOL_EVAL_LOGITS_REL), file=out)
    if match:
        print("  matches the reference with %s: logits rel %.2e, loss abs %.2e"
              % (" and ".join(describe_decision(a) for a in match), lr, loss_abs), file=out)
    elif fail:
        print("  <-- FAIL: matches neither the reference nor it with one or two of the %d decisions round-off "
              "could turn taken the other way" % len(ev.ambiguous), file=out)
    print("XCHECK %s logits_rel %.3e (eval:%s) logits_abs %.3e loss_abs %.3e flips %d : %s"
          % (label, lr, what.replace(" ", ","), la, loss_abs, len(match) if match is not None else -1,
             "FAIL" if fail else "OK"), file=out)
    out.flush()
    return 1 if fail else 0


def check_dump(path, label=None, tol_grad=TOL_GRAD_REL, out=sys.stdout):
    """Compare one dump.  Returns 0 (OK), 1 (mismatch); raises Malformed, Mismatch, Unsupported."""
    if label is None:
        label = os.path.splitext(os.path.basename(path))[0]
    cfg, tens = read_dump(path)
    m = model_config(cfg)
    expect = expected_params(m)

    for need in ("input.tokens", "input.targets", "out.logits", "out.loss"):
        if need not in tens:
            raise Malformed("dump lacks tensor %s" % need)
    tokens, targets = tens["input.tokens"], tens["input.targets"]
    if tokens.dtype.kind != "i" or targets.dtype.kind != "i":
        raise Malformed("input.tokens / input.targets must be i32")
    if tokens.ndim != 2 or targets.shape != tokens.shape:
        raise Malformed("input.tokens %s / input.targets %s must both be (B,T)"
                        % (tokens.shape, targets.shape))
    B, T = tokens.shape
    for nm, a in (("input.tokens", tokens), ("input.targets", targets)):
        if a.size and (a.min() < 0 or a.max() >= m["V"]):
            raise Malformed("%s has values outside [0, %d)" % (nm, m["V"]))
    if tens["out.logits"].shape != (B, T, m["V"]):
        raise Malformed("out.logits has shape %s, expected %s"
                        % (tens["out.logits"].shape, (B, T, m["V"])))
    if tens["out.loss"].size != 1:
        raise Malformed("out.loss must hold one value")

    params = {n[len("param."):]: a for n, a in tens.items() if n.startswith("param.")}
    grads = {n[len("grad."):]: a for n, a in tens.items() if n.startswith("grad.")}
    for n, a in list(params.items()) + list(grads.items()):
        if a.dtype.kind != "f":
            raise Malformed("tensor %s must be f32" % n)

    fail = False
    if set(params) != set(expect):
        missing = sorted(set(expect) - set(params))
        extra = sorted(set(params) - set(expect))
        raise Mismatch("parameter set differs from the spec: missing %s, unexpected %s"
                       % (missing, extra))
    for n, shp in expect.items():
        if tuple(params[n].shape) != tuple(shp):
            raise Mismatch("param.%s has shape %s, spec says %s" % (n, params[n].shape, shp))
    m["sel"] = sparse_masks(m, tens, B, T)
    q, tau = eval_spec(cfg)
    if q is not None or tau is not None:
        if grads:
            raise Malformed("an evaluation dump (xcheck.quant / xcheck.drop) is forward only: "
                            "it has grad.%s" % sorted(grads)[0])
        return _check_eval(cfg, m, params, tens, q, tau, label, out)
    if set(grads) != set(params):
        raise Malformed("grad.* set differs from param.* set: missing %s, unexpected %s"
                        % (sorted(set(params) - set(grads)), sorted(set(grads) - set(params))))
    for n in grads:
        if grads[n].shape != params[n].shape:
            raise Malformed("grad.%s shape %s != param shape %s" % (n, grads[n].shape, params[n].shape))

    ref_logits, ref_loss, ref_grads = run_reference(m, params, tokens, targets)

    c_loss = float(tens["out.loss"].reshape(-1)[0])
    loss_abs = abs(c_loss - ref_loss) if math.isfinite(c_loss) else float("inf")
    ok = loss_abs <= TOL_LOSS_ABS
    fail |= not ok
    print("  loss  c %.9g  ref %.9g  abs %.2e%s" % (c_loss, ref_loss, loss_abs,
                                                   "" if ok else "  <-- FAIL"), file=out)

    la, lr, lw = _cmp(tens["out.logits"], ref_logits)
    ok = lr <= TOL_LOGITS_REL
    fail |= not ok
    print("  out.logits  max_abs %.2e  rel %.2e  worst %s%s"
          % (la, lr, _fmt_idx(lw), "" if ok else "  <-- FAIL"), file=out)

    worst_rel, worst_name = 0.0, "-"
    for n in expect:
        ref = ref_grads[n]
        c = grads[n]
        ma, rel, w = _cmp(c, ref)
        if np.max(np.abs(ref)) == 0.0:
            ok = ma <= TOL_ZERO_ABS
            note = " (ref all zero)"
            relv = 0.0 if ok else float("inf")
        else:
            ok = rel <= tol_grad
            note = ""
            relv = rel
        if relv > worst_rel or worst_name == "-":
            worst_rel, worst_name = relv, "grad." + n
        fail |= not ok
        print("  grad.%s  max_abs %.2e  rel %.2e  worst %s%s%s"
              % (n, ma, rel, _fmt_idx(w), note, "" if ok else "  <-- FAIL"), file=out)

    print("XCHECK %s worst_grad_rel %.3e (%s) logits_abs %.3e loss_abs %.3e : %s"
          % (label, worst_rel, worst_name, la, loss_abs, "FAIL" if fail else "OK"), file=out)
    out.flush()
    return 1 if fail else 0


# --------------------------------------------------------------------------
# Self-test
# --------------------------------------------------------------------------

def _tiny_cfg(**over):
    cfg = {
        "model.vocab_size": "32", "model.d_model": "16", "model.n_layer": "2",
        "model.n_head": "4", "model.n_kv_head": "2", "model.d_head": "4",
        "model.d_ff": "24", "model.seq_len": "6", "model.rope_base": "10000",
        "model.qk_norm": "true", "model.norm_eps": "1.0000000000000001e-05",
        "model.init_std": "0.02", "model.match_params": "false",
        "model.gate.position": "sdpa", "model.gate.granularity": "elementwise",
        "model.gate.sharing": "head_specific", "model.gate.form": "multiplicative",
        "model.gate.activation": "sigmoid", "model.gate.input": "hidden",
        "model.gate.control": "none", "train.batch": "2", "threads": "1",
    }
    for k, v in over.items():
        cfg["model." + k.replace("__", ".")] = v
    return cfg


def _random_params(m, gen):
    P = {}
    for n, shp in expected_params(m).items():
        base = n.split(".")[-1]
        if base in ("ln1", "ln2", "ln_f", "q_norm", "k_norm", "sdpa_norm"):
            a = 1.0 + 0.3 * torch.randn(shp, generator=gen, dtype=torch.float64)
        elif base in ("gate_p", "gate_b"):
            a = 0.8 * torch.randn(shp, generator=gen, dtype=torch.float64)
        else:
            a = 0.3 * torch.randn(shp, generator=gen, dtype=torch.float64)
        P[n] = a.float().numpy()
    return P


def _fd_check(m, P32, tok, tgt, gen, n_entries=4, h=1e-6):
    """Autograd vs central differences on random entries of every parameter."""
    P = {n: torch.from_numpy(a).double().requires_grad_(True) for n, a in P32.items()}
    tok_t = torch.from_numpy(tok.astype(np.int64))
    tgt_t = torch.from_numpy(tgt.astype(np.int64))
    _, loss = forward(m, P, tok_t, tgt_t)
    loss.backward()
    worst = 0.0
    worst_n = "-"
    with torch.no_grad():
        for n, t in P.items():
            g = t.grad
            flat = t.view(-1)
            idxs = torch.randint(0, flat.numel(), (n_entries,), generator=gen).tolist()
            # always include the entry with the largest gradient
            idxs.append(int(torch.argmax(g.abs()).item()))
            gscale = float(g.abs().max()) + 1e-12
            for j in idxs:
                old = float(flat[j])
                flat[j] = old + h
                lp = float(forward(m, P, tok_t, tgt_t)[1])
                flat[j] = old - h
                lm = float(forward(m, P, tok_t, tgt_t)[1])
                flat[j] = old
                num = (lp - lm) / (2 * h)
                ana = float(g.view(-1)[j])
                err = abs(num - ana) / max(gscale, 1e-8)
                if err > worst:
                    worst, worst_n = err, "%s[%d] ana %.6g num %.6g" % (n, j, ana, num)
    return worst, worst_n


def _gradcheck_param(m, P32, tok, tgt, name):
    """torch.autograd.gradcheck of the loss w.r.t. one (small) parameter."""
    base = {n: torch.from_numpy(a).double() for n, a in P32.items()}
    tok_t = torch.from_numpy(tok.astype(np.int64))
    tgt_t = torch.from_numpy(tgt.astype(np.int64))

    def f(x):
        P = dict(base)
        P[name] = x
        return forward(m, P, tok_t, tgt_t)[1]

    x = base[name].clone().requires_grad_(True)
    return torch.autograd.gradcheck(f, (x,), eps=1e-6, atol=1e-7, rtol=1e-5, raise_exception=False)


SELF_TEST_VARIANTS = [
    ("sdpa_elem_sigmoid", {}),
    ("baseline", {"gate__position": "none"}),
    ("sdpa_head_silu", {"gate__granularity": "headwise", "gate__activation": "silu"}),
    ("sdpa_shared_tanh", {"gate__sharing": "head_shared", "gate__activation": "tanh"}),
    ("sdpa_head_shared", {"gate__granularity": "headwise", "gate__sharing": "head_shared"}),
    ("sdpa_additive_none", {"gate__form": "additive", "gate__activation": "none"}),
    ("sdpa_ns_sigmoid", {"gate__activation": "ns_sigmoid"}),
    ("sdpa_static", {"gate__input": "static"}),
    ("sdpa_static_headwise", {"gate__input": "static", "gate__granularity": "headwise"}),
    ("sdpa_static_shared", {"gate__input": "static", "gate__sharing": "head_shared"}),
    ("value_elem", {"gate__position": "value"}),
    ("value_shared", {"gate__position": "value", "gate__sharing": "head_shared"}),
    ("key_headwise_kv1", {"gate__position": "key", "gate__granularity": "headwise",
                          "n_kv_head": "1"}),
    ("query_elem", {"gate__position": "query"}),
    ("dense", {"gate__position": "dense"}),
    ("dense_static", {"gate__position": "dense", "gate__input": "static"}),
    ("ctrl_silu", {"gate__position": "none", "gate__control": "silu"}),
    ("ctrl_rmsnorm", {"gate__position": "none", "gate__control": "rmsnorm"}),
    ("ctrl_scale", {"gate__position": "none", "gate__control": "scale", "gate__control_scale": "0.3"}),
    ("sdpa_scale", {"gate__control": "scale", "gate__control_scale": "1.7"}),
    ("sdpa_bias", {"gate__bias": "true", "gate__init_bias": "2"}),
    ("value_head_bias", {"gate__position": "value", "gate__granularity": "headwise", "gate__bias": "true"}),
    ("noqk_sdpa_mha", {"qk_norm": "false", "n_kv_head": "4"}),
]
# Every normaliser alone and under the G1 gate: run after the rest, from a
# generator of their own, so the draws of the checks above stay as they were.
NORM_SELF_TEST_VARIANTS = [("norm_" + n, {"gate__position": "none", "attention__normalizer": n})
                           for n in NORMALIZERS[1:]] + [("sdpa_" + n, {"attention__normalizer": n})
                                                         for n in NORMALIZERS[1:]]
# Latent KV (d_head 4): with the decoupled RoPE key, without it, under G1,
# and with sink_logit; a generator of their own, after the normalisers.
_LATENT = {"qk_norm": "false", "n_kv_head": "4", "attention__kv": "latent", "attention__d_c": "6",
           "attention__d_R": "2"}
KV_SELF_TEST_VARIANTS = [
    ("latent", dict(_LATENT, gate__position="none")),
    ("latent_nope", dict(_LATENT, gate__position="none", attention__d_R="0")),
    ("latent_sdpa", dict(_LATENT)),
    ("latent_sdpa_headwise", dict(_LATENT, gate__granularity="headwise")),
    ("latent_sink_logit", dict(_LATENT, gate__position="none", attention__normalizer="sink_logit")),
]


def _naive_check(gen):
    """Cross-check the vectorised attention and RoPE against explicit loops."""
    B, T, H, Hk, dh = 2, 5, 4, 2, 6
    q = torch.randn(B, T, H, dh, generator=gen, dtype=torch.float64)
    k = torch.randn(B, T, Hk, dh, generator=gen, dtype=torch.float64)
    v = torch.randn(B, T, Hk, dh, generator=gen, dtype=torch.float64)
    o = causal_attention(q, k, v)
    o2 = torch.zeros_like(o)
    for b in range(B):
        for h in range(H):
            kv = h // (H // Hk)
            for i in range(T):
                sc = [float(q[b, i, h] @ k[b, j, kv]) / math.sqrt(dh) for j in range(i + 1)]
                mx = max(sc)
                w = [math.exp(s_ - mx) for s_ in sc]
                z = sum(w)
                for j in range(i + 1):
                    o2[b, i, h] += w[j] / z * v[b, j, kv]
    err_att = float((o - o2).abs().max())
    base = 500.0
    cos, sin = rope_tables(T, dh, base, torch.float64)
    r = rope(q, cos, sin)
    r2 = torch.zeros_like(q)
    half = dh // 2
    for t in range(T):
        for i in range(half):
            ang = t * base ** (-2.0 * i / dh)
            c, s_ = math.cos(ang), math.sin(ang)
            x1, x2 = q[:, t, :, i], q[:, t, :, i + half]
            r2[:, t, :, i] = x1 * c - x2 * s_
            r2[:, t, :, i + half] = x2 * c + x1 * s_
    err_rope = float((r - r2).abs().max())
    return err_att, err_rope


def _self_test_eval(gen):
    """The evaluation forward's pieces on hand-made tensors, and its dump
    check on dumps built from the reference's own outputs.  Returns the
    names of the failures."""
    import io
    import tempfile
    failures = []
    # 4 bits: qmax 7; a block with maximum 7 has scale 1, so the result is the
    # round-half-even of each value, clamped (2.5 -> 2, 3.5 -> 4, -0.5 -> 0),
    # and the exact halves are the near ties, each toward its other neighbour
    x = torch.tensor([[7.0, 2.5, 3.5, -0.5, 1.49, -6.51]], dtype=torch.float32)
    ties = []
    y = fake_quant_blocks(x, 4, ties)
    ok = y.tolist() == [[7.0, 2.0, 4.0, 0.0, 1.0, -7.0]] and ties == [(0, 1, 3.0), (0, 2, 3.0), (0, 3, -1.0)]
    # 8 bits, maximum 127 / 16: scale 2^-4 exactly
    y8 = fake_quant_tensor(torch.tensor([127 / 16, 1 / 32, 3 / 32, -5 / 64], dtype=torch.float32), 8)
    ok &= y8.tolist() == [127 / 16, 0.0, 2 / 16, -1 / 16]
    # rows in groups of 2 (the last group of a row shorter), a zero block stays zero
    w = torch.tensor([[7.0, 2.5, 0.0, 0.0, 3.5], [1.75, -0.625, 14.0, 5.0, -3.5]], dtype=torch.float32)
    ok &= fake_quant_rows(w, 4, 2).tolist() == [[7.0, 2.0, 0.0, 0.0, 3.5], [1.75, -0.5, 14.0, 4.0, -3.5]]
    ok &= fake_quant_rows(w, 4, 0).tolist() == [[7.0, 2.0, 0.0, 0.0, 4.0], [2.0, 0.0, 14.0, 4.0, -4.0]]
    pq = [parse_quant(v) for v in ("w8-a8token", "w4g32", "a8tensor", "float")]
    ok &= pq[0] == {"wbits": 8, "wgroup": 0, "abits": 8, "agran": "token"}
    ok &= pq[1] == {"wbits": 4, "wgroup": 32, "abits": 0, "agran": None}
    ok &= pq[2] == {"wbits": 0, "wgroup": 0, "abits": 8, "agran": "tensor"}
    ok &= pq[3] == {"wbits": 0, "wgroup": 0, "abits": 0, "agran": None}
    for bad in ("", "w8a8token", "-a8token", "w1", "w17", "w4g1", "a8", "w8-", "w8-a8row", "int8"):
        try:
            parse_quant(bad)
            ok = False
        except Malformed:
            pass
    # the drop: head 0's mean |score| 0.3 < 0.5 is zeroed, head 1's 0.7 kept
    m = model_config(_tiny_cfg(gate__granularity="headwise"))
    ev = EvalForward(m, parse_quant("float"), 0.5)
    o = torch.arange(1.0, 9.0, dtype=torch.float64).reshape(1, 2, 2, 2)
    s1 = torch.tensor([0.2, 0.4, 0.6, 0.8], dtype=torch.float64).reshape(1, 1, 2, 2)
    ok &= ev.wo_input(0, o, s1).tolist() == [[[[0, 0], [3, 4]], [[0, 0], [7, 8]]]] and ev.dropped[0] == 2
    print("  self-test fake quant / drop by hand (4 bits: 2.5 -> 2, 3.5 -> 4, -0.5 -> 0; groups; schemes; "
          "gate:0.5) : %s" % ("OK" if ok else "FAIL"))
    if not ok:
        failures.append("fake_quant")

    # Evaluation dumps (G1 headwise, w8-a8token, tau a hair above a layer-0
    # pair's score, so that pair is a decision round-off could turn): the
    # reference's own outputs pass, and so do those with that pair's decision
    # taken the other way, or (quantization only) with one or two of the
    # near-tie values rounded the other way; with a value far from a
    # half-step one step off (no round-off does that), or a wrong drop count,
    # they fail; with grad.* the dump is malformed.
    B, T = 2, 6
    cfg = _tiny_cfg(gate__granularity="headwise")
    m = model_config(cfg)
    P32 = _random_params(m, gen)
    tok = torch.randint(0, m["V"], (B, T), generator=gen).numpy().astype(np.int32)
    tgt = torch.randint(0, m["V"], (B, T), generator=gen).numpy().astype(np.int32)
    q = parse_quant("w8-a8token")

    class Rec(EvalForward):
        """Keeps layer 0's q|k|v input and wo scores."""
        def linear_input(self, layer, site, x):
            if (layer, site) == (0, "qkv"):
                self.x0 = x.reshape(-1, x.shape[-1]).to(torch.float32)
            return EvalForward.linear_input(self, layer, site, x)

        def wo_input(self, layer, o, s1):
            if layer == 0:
                self.s0 = s1.abs().mean(dim=-1)
            return EvalForward.wo_input(self, layer, o, s1)

    rec = Rec(m, q, None)
    with torch.no_grad():
        forward(m, {n: torch.from_numpy(a).double() for n, a in quantize_weights(m, P32, q).items()},
                torch.from_numpy(tok.astype(np.int64)), torch.from_numpy(tgt.astype(np.int64)), rec)
    tau = float(rec.s0.median()) + 1e-7  # layer 0's: the later ones move with what layer 0 drops
    ecfg = dict(cfg)
    ecfg["xcheck.quant"] = "w8-a8token"
    ecfg["xcheck.drop"] = "gate:%r" % tau
    logits, loss, ev, rerun = run_eval_reference(m, P32, tok, tgt, q, tau)
    lq, sq, evq, rerun_q = run_eval_reference(m, P32, tok, tgt, q, None)
    near = [a for a in ev.ambiguous if a[0] == "drop"]
    ties = [a for a in evq.ambiguous if a[0] == "act"]
    # the value of layer 0's q|k|v input farthest from a half-step, one step toward 0
    r = rec.x0 / (rec.x0.abs().amax(dim=1, keepdim=True) / 127.0)
    fr = (r - torch.floor(r) - 0.5).abs()
    row, col = [int(i) for i in torch.nonzero(fr == fr.max())[0]]
    rv = float(torch.round(r[row, col]))
    far = ("act", 0, "qkv", row, col, rv - 1 if rv > 0 else rv + 1)
    base = {"param." + n: a for n, a in P32.items()}
    base["input.tokens"], base["input.targets"] = tok, tgt

    def dump(d, lg, ls, dropped, grads=False):
        t = dict(base)
        t["out.logits"] = np.asarray(lg, dtype=np.float32)
        t["out.loss"] = np.array([ls], dtype=np.float32)
        c = dict(ecfg)
        if dropped is None:
            del c["xcheck.drop"]
        else:
            t["out.dropped"] = np.asarray(dropped, dtype=np.int32)
        if grads:
            t["grad.wte"] = np.zeros_like(P32["wte"])
        path = os.path.join(d, "eval%d.bin" % len(os.listdir(d)))
        write_dump(path, c, t)
        try:
            return check_dump(path, "eval", out=io.StringIO())
        except Malformed:
            return 2

    def quant_only(forced):
        lg, ls, _ = rerun_q(forced)
        return lg, ls, None

    with tempfile.TemporaryDirectory() as d:
        rc = {
            "own": dump(d, logits, loss, ev.dropped),
            "own_quant": dump(d, lq, sq, None),
            "pair_turned": dump(d, *rerun(near[:1])) if near else -1,
            "tie_turned": dump(d, *quant_only(ties[:1])) if ties else -1,
            "two_ties_turned": dump(d, *quant_only(ties[:2])) if len(ties) >= 2 else -1,
            "far_flip": dump(d, *quant_only([far])),
            "wrong_count": dump(d, logits, loss, [ev.dropped[0] + 1] + ev.dropped[1:]),
            "grads": dump(d, logits, loss, ev.dropped, grads=True),
        }
    want = {"own": 0, "own_quant": 0, "pair_turned": 0, "tie_turned": 0, "two_ties_turned": 0, "far_flip": 1,
            "wrong_count": 1, "grads": 2}
    ok = rc == want
    print("  self-test evaluation dumps (%d near-tau pairs, %d near ties): %s : %s"
          % (len(near), len(ties), ", ".join("%s rc %d (want %d)" % (k, rc[k], want[k]) for k in want),
             "OK" if ok else "FAIL"))
    if not ok:
        failures.append("eval_dumps")
    return failures


def _self_test_variant(label, over, gen, B, T):
    """Autograd against central differences and gradcheck for one variant;
    [] or [label]."""
    cfg = _tiny_cfg(**over)
    m = model_config(cfg)
    P32 = _random_params(m, gen)
    tok = torch.randint(0, m["V"], (B, T), generator=gen).numpy().astype(np.int32)
    tgt = torch.randint(0, m["V"], (B, T), generator=gen).numpy().astype(np.int32)
    worst, where = _fd_check(m, P32, tok, tgt, gen)
    ok = worst <= 1e-6
    gc_names = [n for n in P32 if n.endswith(("gate_p", "gate_b", "sdpa_norm", "q_norm", "ln_f", "sink_logit",
                                              "kv_bias"))
                or n == "l1.wg"]
    gc_ok = all(_gradcheck_param(m, P32, tok, tgt, n) for n in gc_names)
    status = "OK" if (ok and gc_ok) else "FAIL"
    print("  self-test %-22s fd worst rel %.2e  gradcheck %s (%s)  : %s"
          % (label, worst, "ok" if gc_ok else "FAILED", ",".join(gc_names), status))
    if status != "OK":
        print("    worst entry: %s" % where)
        return [label]
    return []


def self_test():
    import tempfile
    gen = torch.Generator().manual_seed(1234)
    failures = []
    ea, er = _naive_check(gen)
    nok = ea < 1e-12 and er < 1e-12
    print("  self-test naive loops: attention err %.1e  rope err %.1e : %s"
          % (ea, er, "OK" if nok else "FAIL"))
    if not nok:
        failures.append("naive_loops")
    B, T = 2, 6
    for label, over in SELF_TEST_VARIANTS:
        failures += _self_test_variant(label, over, gen, B, T)

    # Dump round trip: a dump carrying the reference's own outputs (rounded to
    # float32) must pass; a corrupted one must fail; a truncated one is malformed.
    m = model_config(_tiny_cfg())
    P32 = _random_params(m, gen)
    tok = torch.randint(0, m["V"], (B, T), generator=gen).numpy().astype(np.int32)
    tgt = torch.randint(0, m["V"], (B, T), generator=gen).numpy().astype(np.int32)
    logits, loss, grads = run_reference(m, P32, tok, tgt)
    tens = {"param." + n: a for n, a in P32.items()}
    tens["input.tokens"] = tok
    tens["input.targets"] = tgt
    tens["out.logits"] = logits.astype(np.float32)
    tens["out.loss"] = np.array([loss], dtype=np.float32)
    for n, g in grads.items():
        tens["grad." + n] = g.astype(np.float32)
    import io
    with tempfile.TemporaryDirectory() as d:
        good = os.path.join(d, "good.bin")
        write_dump(good, _tiny_cfg(), tens)
        buf = io.StringIO()
        rc_good = check_dump(good, "roundtrip_good", out=buf)
        bad = os.path.join(d, "bad.bin")
        t2 = dict(tens)
        g = t2["grad.l0.wv"].copy()
        g.reshape(-1)[3] += 0.05 * float(np.abs(g).max())
        t2["grad.l0.wv"] = g
        write_dump(bad, _tiny_cfg(), t2)
        buf2 = io.StringIO()
        rc_bad = check_dump(bad, "roundtrip_bad", out=buf2)
        trunc = os.path.join(d, "trunc.bin")
        with open(good, "rb") as f:
            data = f.read()
        with open(trunc, "wb") as f:
            f.write(data[: len(data) // 2])
        try:
            check_dump(trunc, "roundtrip_trunc", out=io.StringIO())
            rc_trunc = 0
        except Malformed:
            rc_trunc = 2
        extra = os.path.join(d, "extra.bin")
        t3 = dict(tens)
        t3["param.l0.bogus"] = np.zeros(3, np.float32)
        t3["grad.l0.bogus"] = np.zeros(3, np.float32)
        write_dump(extra, _tiny_cfg(), t3)
        try:
            check_dump(extra, "roundtrip_extra", out=io.StringIO())
            rc_extra = 0
        except Mismatch:
            rc_extra = 1
        unknown = os.path.join(d, "unknown.bin")
        write_dump(unknown, _tiny_cfg(gate__activation="no_such_activation"), tens)
        try:
            check_dump(unknown, "roundtrip_unknown", out=io.StringIO())
            rc_unknown = 0
        except Unsupported:
            rc_unknown = 3
    rt_ok = rc_good == 0 and rc_bad == 1 and rc_trunc == 2 and rc_extra == 1 and rc_unknown == 3
    print("  self-test dump round trip: good rc %d (want 0), corrupted rc %d (want 1), "
          "truncated rc %d (want 2), extra param rc %d (want 1), unknown variant rc %d (want 3) : %s"
          % (rc_good, rc_bad, rc_trunc, rc_extra, rc_unknown, "OK" if rt_ok else "FAIL"))
    if not rt_ok:
        sys.stdout.write(buf.getvalue())
        sys.stdout.write(buf2.getvalue())
        failures.append("dump_roundtrip")

    failures += _self_test_eval(gen)
    ngen = torch.Generator().manual_seed(4321)
    for label, over in NORM_SELF_TEST_VARIANTS:
        failures += _self_test_variant(label, over, ngen, B, T)
    kgen = torch.Generator().manual_seed(8765)
    for label, over in KV_SELF_TEST_VARIANTS:
        failures += _self_test_variant(label, over, kgen, B, T)

    if failures:
        print("XCHECK self-test : FAIL (%s)" % ", ".join(failures))
        return 1
    print("XCHECK self-test : OK (%d variants)" % (len(SELF_TEST_VARIANTS) + len(NORM_SELF_TEST_VARIANTS)
                                                   + len(KV_SELF_TEST_VARIANTS)))
    return 0


# --------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------

USAGE = "usage: torch_ref.py [--label NAME] [--tol-grad X] DUMP | torch_ref.py --self-test"


def main(argv):
    label = None
    tol_grad = TOL_GRAD_REL
    path = None
    selftest = False
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--self-test":
            selftest = True
        elif a in ("--label", "--tol-grad"):
            if i + 1 >= len(argv):
                print(USAGE, file=sys.stderr)
                return 2
            if a == "--label":
                label = argv[i + 1]
            else:
                try:
                    tol_grad = float(argv[i + 1])
                except ValueError:
                    print("torch_ref.py: bad --tol-grad %r" % argv[i + 1], file=sys.stderr)
                    return 2
            i += 1
        elif a.startswith("--label="):
            label = a.split("=", 1)[1]
        elif a.startswith("--tol-grad="):
            try:
                tol_grad = float(a.split("=", 1)[1])
            except ValueError:
                print("torch_ref.py: bad %s" % a, file=sys.stderr)
                return 2
        elif a in ("-h", "--help"):
            print(USAGE)
            return 0
        elif a.startswith("-"):
            print("torch_ref.py: unknown option %s\n%s" % (a, USAGE), file=sys.stderr)
            return 2
        elif path is None:
            path = a
        else:
            print(USAGE, file=sys.stderr)
            return 2
        i += 1
    if selftest:
        return self_test()
    if path is None:
        print(USAGE, file=sys.stderr)
        return 2
    lab = label if label is not None else os.path.splitext(os.path.basename(path))[0]
    try:
        return check_dump(path, label, tol_grad)
    except Malformed as e:
        print("torch_ref.py: %s: malformed dump: %s" % (path, e), file=sys.stderr)
        print("XCHECK %s worst_grad_rel - (-) logits_abs - loss_abs - : FAIL (malformed dump)" % lab)
        return 2
    except Mismatch as e:
        print("torch_ref.py: %s: %s" % (path, e), file=sys.stderr)
        print("XCHECK %s worst_grad_rel - (-) logits_abs - loss_abs - : FAIL (%s)" % (lab, e))
        return 1
    except Unsupported as e:
        print("torch_ref.py: %s: %s" % (path, e), file=sys.stderr)
        print("XCHECK %s worst_grad_rel - (-) logits_abs - loss_abs - : FAIL (no reference: %s)" % (lab, e))
        return 3


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
