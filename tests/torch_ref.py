#!/usr/bin/env python3
"""torch_ref.py -- independent float64 PyTorch reference of the gated-attention model.

Usage:
    torch_ref.py [--label NAME] [--tol-grad X] DUMP
    torch_ref.py --self-test

DUMP is written by `gated xcheck` (format below).  The model is rebuilt here
from the dumped *config* (written from the model spec, not from the C code),
the dumped float32 parameters are loaded and promoted to float64, forward and
backward are run, and the C logits / loss / parameter gradients are compared
against the reference.

Dump format (little-endian):
    GATED-DUMP 1\\n
    cfg <dotted.key> <value>\\n                       (repeated)
    tensor <name> <f32|i32> <ndim> <d0> ... \\n<raw bytes>\\n   (repeated)
    end\\n

Exit status: 0 all comparisons pass, 1 any mismatch (or self-test failure),
2 malformed dump / usage error, 3 a gate variant this reference has no math
for (a value of model.gate.* missing from the tuples below: a new position
or activation in the C tables must be written here too, independently).

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
        ps[p + "wo"] = (C, H * dh)
        ps[p + "ln2"] = (C,)
        ps[p + "w_gate"] = (Fd, C)
        ps[p + "w_up"] = (Fd, C)
        ps[p + "w_down"] = (C, Fd)
    ps["ln_f"] = (C,)
    return ps


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


def causal_attention(q, k, v):
    """q: (B,T,H,dh), k/v: (B,T,Hk,dh) -> (B,T,H,dh)."""
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
    scores = scores.masked_fill(~mask, float("-inf"))
    att = torch.softmax(scores, dim=-1)
    o = att @ vt                                              # (B,H,T,dh)
    return o.permute(0, 2, 1, 3)


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


def apply_gate(m, y, gl):
    hpos, d = gate_geometry(m)
    assert y.shape[2] == hpos and y.shape[3] == d, (y.shape, hpos, d)
    s = gate_scores(m, gl, hpos, d)
    if m["form"] == "multiplicative":
        return y * s
    return y + s


def forward(m, P, tokens, targets):
    """P: dict name -> tensor.  Returns (logits (B,T,V), loss scalar)."""
    B, T = tokens.shape
    C, H, Hk, dh, eps = m["C"], m["H"], m["Hk"], m["dh"], m["eps"]
    pos = m["position"]
    wte = P["wte"]
    cos, sin = rope_tables(T, dh, m["rope_base"], wte.dtype)
    x = wte[tokens]
    for i in range(m["L"]):
        p = "l%d." % i
        h = rmsnorm(x, P[p + "ln1"], eps)
        q = (h @ P[p + "wq"].t()).reshape(B, T, H, dh)
        k = (h @ P[p + "wk"].t()).reshape(B, T, Hk, dh)
        v = (h @ P[p + "wv"].t()).reshape(B, T, Hk, dh)
        gl = None
        if pos != "none":
            gl = h @ P[p + "wg"].t() if m["input"] == "hidden" else P[p + "gate_p"]
            if m["input"] == "hidden" and m["bias"]:
                gl = gl + P[p + "gate_b"]
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
        o = causal_attention(q, k, v)
        if m["control"] == "silu":
            o = o * torch.sigmoid(o)
        elif m["control"] == "rmsnorm":
            o = rmsnorm(o, P[p + "sdpa_norm"], eps)
        elif m["control"] == "scale":
            o = o * m["control_scale"]
        if pos == "sdpa":
            o = apply_gate(m, o, gl)
        a = o.reshape(B, T, H * dh) @ P[p + "wo"].t()
        if pos == "dense":
            a = apply_gate(m, a.reshape(B, T, 1, C), gl).reshape(B, T, C)
        x = x + a
        h2 = rmsnorm(x, P[p + "ln2"], eps)
        u = h2 @ P[p + "w_gate"].t()
        x = x + ((u * torch.sigmoid(u)) * (h2 @ P[p + "w_up"].t())) @ P[p + "w_down"].t()
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
    loss.backward()
    grads = {n: t.grad.detach().numpy().copy() if t.grad is not None
             else np.zeros(t.shape, dtype=np.float64) for n, t in P.items()}
    return logits.detach().numpy(), float(loss.item()), grads


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
        cfg = _tiny_cfg(**over)
        m = model_config(cfg)
        P32 = _random_params(m, gen)
        tok = torch.randint(0, m["V"], (B, T), generator=gen).numpy().astype(np.int32)
        tgt = torch.randint(0, m["V"], (B, T), generator=gen).numpy().astype(np.int32)
        worst, where = _fd_check(m, P32, tok, tgt, gen)
        ok = worst <= 1e-6
        gc_names = [n for n in P32 if n.endswith(("gate_p", "gate_b", "sdpa_norm", "q_norm", "ln_f"))
                    or n == "l1.wg"]
        gc_ok = all(_gradcheck_param(m, P32, tok, tgt, n) for n in gc_names)
        status = "OK" if (ok and gc_ok) else "FAIL"
        print("  self-test %-22s fd worst rel %.2e  gradcheck %s (%s)  : %s"
              % (label, worst, "ok" if gc_ok else "FAILED", ",".join(gc_names), status))
        if status != "OK":
            print("    worst entry: %s" % where)
            failures.append(label)

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

    if failures:
        print("XCHECK self-test : FAIL (%s)" % ", ".join(failures))
        return 1
    print("XCHECK self-test : OK (%d variants)" % len(SELF_TEST_VARIANTS))
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
