#!/usr/bin/python3
"""peer_torch.py -- the reference model of `gated bench` (bench/default.yaml,
model `ref`) in PyTorch, timing one training step (forward, backward, AdamW),
and the interleaved ours-vs-peer comparison behind `make bench-peer`.

The model is the C core's, written independently with torch ops available in
torch 1.13 (Debian's python3-torch; no scaled_dot_product_attention there, so
attention is written out): tied token embedding, pre-norm RMSNorm (eps 1e-6),
one fused q|k|v|gate projection per layer, QK-norm (per-head RMSNorm, one
weight of width d_head), RoPE (rotate-half, base 10000), causal softmax
attention, an optional G1 gate on the SDPA output (sigmoid; elementwise: one
logit per head and channel, headwise: one per head), SwiGLU FFN with a fused
gate|up matrix, final RMSNorm, mean cross-entropy.  AdamW as the C trainer:
lr 3e-3, betas (0.9, 0.95), eps 1e-8, weight decay 0.1 on matrices only,
global grad-norm clipping at 1.0.  Data: uniform random tokens.  A step is
what ours times: zero the gradients, forward, backward, clip, AdamW (and
.item() on the loss).

Written as a PyTorch user would write it fast (issue 26): fused matrices
are cut with split / chunk, whose backward is one cat (a slice's is a
zero-filled copy of the whole matrix, and the slices' gradients are then
added: aten::fill_ and aten::add took 24% of the sliced version's step at
one thread in torch.profiler), and scores are mask + scale Q K^T in one
baddbmm.  Every pool of a worker runs at its thread count (peer_env): torch's
OpenMP team and OpenBLAS's own pthreads, and --threads tries each
configuration given, T (both at T) or T:B (torch at T, OpenBLAS at B); the
default 1,2,1:2 includes 1:2, what a script that sets nothing gets on a
2-core machine where torch defaults to one thread, and the fastest of the
three on this one (issue 26).

  peer_torch.py [--variant V] [--threads 1,2] [--reps N]
      time the peer alone: for each thread count (torch.set_num_threads), one
      warm-up step then N timed steps; prints JSON with every thread count's
      median and the best.
  peer_torch.py --gated build/gated [--rounds R] [--variants V,...] [--threads 1,2,1:2]
               [--ours-threads N] [--json PATH]
      the comparison (make bench-peer), in one invocation with alternating
      repetitions: ours (`gated bench bench/default.yaml --filter
      '^step/ref/(V|...)$' --paced`) and the peer (one worker process per
      thread count) are started and set up once, each keeping its model and
      warm state, then R rounds each run one training step per variant of
      every player in turn, ours then the peers in odd rounds and the reverse
      in even ones (ours, peer | peer, ours | ours, peer ...), so a machine
      load that drifts during the run weighs on both alike.  Only one player
      computes at a time; the others wait on their stdin.  Prints the
      medians of tokens/s over the rounds of ours (at --ours-threads,
      default the largest of --threads), the peer (its best thread count)
      and the sgemm ceiling, their ratios, and how busy the machine was
      (load average, CPU time of niced processes); --json PATH keeps all
      of it and every sample.

The paced protocol (gated bench --paced, and --worker --paced here): the
player prints "ready" once set up; for each line it reads it runs one
repetition of everything it holds and prints "rep\tNAME\t..." lines and a
"round\tR\tN" line; end of input ends it.
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

REF = dict(vocab=257, d_model=256, n_layer=4, n_head=4, n_kv_head=4, d_ff=688, seq_len=256, batch=16)
VARIANTS = ("baseline", "G1-headwise", "G1-elementwise")


def build(variant, cfg, torch):
    nn = torch.nn
    F = torch.nn.functional
    C, H, Hk, L, V, FF = cfg["d_model"], cfg["n_head"], cfg["n_kv_head"], cfg["n_layer"], cfg["vocab"], cfg["d_ff"]
    dh = C // H
    ng = {"baseline": 0, "G1-headwise": H, "G1-elementwise": H * dh}[variant]
    nq, nkv = H * dh, Hk * dh
    eps = 1e-6

    def rmsnorm(x, w):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1 = nn.Parameter(torch.ones(C))
            self.wqkvg = nn.Parameter(torch.randn(nq + 2 * nkv + ng, C) * 0.02)
            self.q_norm = nn.Parameter(torch.ones(dh))
            self.k_norm = nn.Parameter(torch.ones(dh))
            self.wo = nn.Parameter(torch.randn(C, nq) * 0.02)
            self.ln2 = nn.Parameter(torch.ones(C))
            self.w_gu = nn.Parameter(torch.randn(2 * FF, C) * 0.02)
            self.w_down = nn.Parameter(torch.randn(C, FF) * 0.02)

        def forward(self, x, cos, sin, mask):
            B, T, _ = x.shape
            h = rmsnorm(x, self.ln1)
            # split, not slices: a slice's backward is a zero-filled copy
            # of the whole of P, split's one cat of the pieces
            q, k, v, *g = F.linear(h, self.wqkvg).split([nq, nkv, nkv] + ([ng] if ng else []), -1)
            q, k, v = q.view(B, T, H, dh), k.view(B, T, Hk, dh), v.view(B, T, Hk, dh)
            q, k = rmsnorm(q, self.q_norm), rmsnorm(k, self.k_norm)

            def rope(t):
                t1, t2 = t.split(dh // 2, -1)
                return torch.cat((t1 * cos - t2 * sin, t2 * cos + t1 * sin), -1)

            q, k = rope(q).transpose(1, 2), rope(k).transpose(1, 2)  # (B, H, T, dh)
            v = v.transpose(1, 2)
            if Hk != H:
                k = k.repeat_interleave(H // Hk, 1)
                v = v.repeat_interleave(H // Hk, 1)
            # scores = mask + scale Q K^T in one batched gemm (mask: 0 or -inf)
            s = torch.baddbmm(mask, q.reshape(B * H, T, dh), k.reshape(B * H, T, dh).transpose(1, 2),
                              alpha=1.0 / math.sqrt(dh))
            o = torch.bmm(torch.softmax(s, -1), v.reshape(B * H, T, dh)).view(B, H, T, dh).transpose(1, 2)
            if ng:
                gt = torch.sigmoid(g[0])
                o = o * (gt.view(B, T, H, 1) if ng == H else gt.view(B, T, H, dh))
            x = x + F.linear(o.reshape(B, T, nq), self.wo)
            a, b = F.linear(rmsnorm(x, self.ln2), self.w_gu).chunk(2, -1)
            return x + F.linear(F.silu(a) * b, self.w_down)

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Parameter(torch.randn(V, C) * 0.02)
            self.layers = nn.ModuleList(Layer() for _ in range(L))
            self.ln_f = nn.Parameter(torch.ones(C))

        def forward(self, tok, tgt):
            T = tok.shape[1]
            pos = torch.arange(T, dtype=torch.float64)
            inv = 10000.0 ** (-2.0 * torch.arange(dh // 2, dtype=torch.float64) / dh)
            ang = pos[:, None] * inv[None, :]
            cos = torch.cos(ang).float()[None, :, None, :]
            sin = torch.sin(ang).float()[None, :, None, :]
            mask = torch.full((T, T), float("-inf")).triu(1)
            x = self.wte[tok]
            for layer in self.layers:
                x = layer(x, cos, sin, mask)
            logits = F.linear(rmsnorm(x, self.ln_f), self.wte)
            return F.cross_entropy(logits.view(-1, V), tgt.view(-1))

    return Model()


def time_peer(variant, threads, reps, seed=1234):
    """Median-able list of tokens/s over reps steps, after one warm-up step."""
    step = make_stepper(variant, threads, seed)
    return [step() for _ in range(reps)]


def worker(args):
    res = {"variant": args.variant, "threads": args.threads, "tokens_per_s": time_peer(args.variant, args.threads, args.reps)}
    print(json.dumps(res))


def make_stepper(variant, threads, seed=1234):
    """One training step of the peer as a function returning tokens/s (model, data and optimizer kept)."""
    import torch

    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    cfg = REF
    m = build(variant, cfg, torch)
    decay = [p for n, p in m.named_parameters() if p.dim() == 2]
    other = [p for n, p in m.named_parameters() if p.dim() != 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": other, "weight_decay": 0.0}],
                            lr=3e-3, betas=(0.9, 0.95), eps=1e-8)
    g = torch.Generator().manual_seed(seed)
    B, T = cfg["batch"], cfg["seq_len"]
    tok = torch.randint(0, cfg["vocab"], (B, T), generator=g)
    tgt = torch.randint(0, cfg["vocab"], (B, T), generator=g)

    def step():
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = m(tok, tgt)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
        opt.step()
        loss = loss.item()
        dt = time.perf_counter() - t0
        if not math.isfinite(loss):
            raise SystemExit("peer_torch: non-finite loss")
        return B * T / dt

    step()  # warm-up
    return step


def paced_worker(args):
    """The peer as a paced player: every variant set up and warmed up, then one step of each per input line."""
    variants = [v for v in args.variants.split(",") if v]
    threads = int(args.threads)
    if args.stub_peer:  # the protocol without torch (tests): a fixed rate that tells the worker's thread settings
        rate = 1000.0 + 10 * int(os.environ.get("OPENBLAS_NUM_THREADS", 0)) + int(os.environ.get("OMP_NUM_THREADS", 0))
        steppers = {v: (lambda: rate) for v in variants}
    else:
        steppers = {v: make_stepper(v, threads) for v in variants}
    print("ready", flush=True)
    r = 0
    for _ in sys.stdin:
        r += 1
        for v in variants:
            print("rep\t%s\t%d\t%.9g" % (v, r - 1, steppers[v]()))
        print("round\t%d\t%d" % (r, len(variants)), flush=True)


class Player:
    """A paced process: ours (gated bench --paced) or a peer worker."""

    def __init__(self, name, cmd, env=None):
        self.name = name
        self.cmd = cmd
        self.err = tempfile.TemporaryFile(mode="w+")
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.err, text=True,
                                  bufsize=1, env=env)

    def fail(self, why):
        self.err.seek(0)
        sys.stderr.write(self.err.read())
        raise SystemExit("peer_torch: %s (%s): %s" % (self.name, " ".join(self.cmd), why))

    def readline(self):
        line = self.p.stdout.readline()
        if not line:
            self.fail("ended early (exit status %s)" % self.p.wait())
        return line.rstrip("\n")

    def wait_ready(self):
        while self.readline() != "ready":
            pass

    def round(self):
        """One repetition of everything the player holds: [(name, tokens/s)]."""
        try:
            self.p.stdin.write("go\n")
            self.p.stdin.flush()
        except BrokenPipeError:
            self.fail("ended early (exit status %s)" % self.p.wait())
        out = []
        while True:
            f = self.readline().split("\t")
            if f[0] == "round":
                if int(f[2]) == 0:
                    self.fail("ran out of repetitions")
                return out
            if f[0] == "rep":  # ours: ..., seconds, cpu, iterations, tokens/s, flops; the peer: tokens/s
                out.append((f[1], float(f[6]), float(f[3]), float(f[7])) if len(f) >= 8 else (f[1], float(f[-1])))

    def close(self):
        self.p.stdin.close()
        self.p.stdout.read()
        rc = self.p.wait()
        if rc != 0:
            self.fail("exit status %d" % rc)


def schedule(rounds, players):
    """The order of each round: every player once, reversed every other round (ABBA)."""
    return [list(players) if r % 2 == 0 else list(players)[::-1] for r in range(rounds)]


def parse_threads(text):
    """--threads: "T" (torch and OpenBLAS at T threads) or "T:B" (torch at T, OpenBLAS at B), comma-separated
    -> [(label, T, B)]."""
    out = []
    for item in text.split(","):
        parts = item.split(":")
        if len(parts) > 2 or not all(p.isdigit() and 0 < int(p) <= 256 for p in parts):
            raise SystemExit("peer_torch: --threads: expected T or T:B (1..256), comma-separated, got \"%s\"" % item)
        t, b = int(parts[0]), int(parts[-1])
        out.append((str(t) if t == b else "%d:%d" % (t, b), t, b))
    return out


def peer_env(threads, blas):
    """A peer worker's environment: torch's OpenMP team at `threads`, OpenBLAS's pthreads at `blas`.
    torch.set_num_threads sets torch's team only; Debian's torch calls OpenBLAS (libblas.so.3 ->
    openblas-pthread), whose own pthreads follow OPENBLAS_NUM_THREADS, read when the library loads, else
    every core: left to the caller's environment a "1-thread" peer ran its gemms on 2 threads, and with
    OPENBLAS_NUM_THREADS=1 exported (as make test sets it for its tests) a "2-thread" peer ran them on one."""
    env = dict(os.environ)
    env["OMP_NUM_THREADS"], env["OPENBLAS_NUM_THREADS"] = str(threads), str(blas)
    return env


def run_peer(variant, threads, blas, reps):
    """The peer alone, in a fresh process."""
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--variant", variant, "--threads", str(threads),
           "--reps", str(reps)]
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True, env=peer_env(threads, blas)).stdout
    return json.loads(out.strip().splitlines()[-1])["tokens_per_s"]


def med(x):
    return statistics.median(x) if x else float("nan")


def compare(args):
    variants = [v for v in args.variants.split(",") if v]
    for v in variants:
        if v not in VARIANTS:
            raise SystemExit("peer_torch: unknown variant %s (one of %s)" % (v, ", ".join(VARIANTS)))
    configs = parse_threads(args.threads)
    threads = [c[0] for c in configs]  # the peer's configurations, by label
    if args.rounds < 1:
        raise SystemExit("peer_torch: --rounds must be >= 1")
    # ours: each step and its sgemm ceiling (the same gemm calls back to back)
    filt = "^(step|sgemm)/ref/(%s)$" % "|".join(v.replace(".", "\\.").replace("+", "\\+") for v in variants)
    ours_threads = args.ours_threads or max(c[1] for c in configs)
    players = [Player("ours", [args.gated, "bench", args.suite, "--filter", filt, "--paced", "--repetitions",
                               str(args.rounds), "--min-time", "0", "--threads", str(ours_threads)])]
    label = {}
    for lab, t, b in configs:
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--paced", "--variants", ",".join(variants),
               "--threads", str(t)] + (["--stub-peer"] if args.stub_peer else [])
        players.append(Player("peer/%dt" % t + ("" if t == b else ":%db" % b), cmd, peer_env(t, b)))
        label[players[-1].name] = lab
    for p in players:  # every set-up and warm-up done before the first timed step
        p.wait_ready()
    t_start, cpu0 = time.time(), cpu_times()
    ours = {v: [] for v in variants}
    ceil = {v: [] for v in variants}  # tokens/s of a step whose every FLOP ran at bare sgemm's rate
    peer = {(v, t): [] for v in variants for t in threads}
    order = schedule(args.rounds, players)
    for r, turn in enumerate(order):
        parts = []
        for p in turn:
            got = p.round()
            if p.name == "ours":
                step = {g[0].split("/")[-1]: g for g in got if g[0].startswith("step/")}
                for name, _, sec, flops in got:
                    v = name.split("/")[-1]
                    if name.startswith("step/"):
                        ours[v].append(step[v][1])
                    elif v in step:  # step FLOPs at the rate the sgemm calls ran this round
                        tokens, step_flops = step[v][1] * step[v][2], step[v][3]
                        ceil[v].append(tokens / (step_flops / (flops / sec)))
                got = [(n, g[1]) for n, g in step.items()]
            else:
                for name, tps in got:
                    peer[(name, label[p.name])].append(tps)
            parts.append("%s %s" % (p.name, " ".join("%.0f" % tps for _, tps in got)))
        print("round %d/%d [%s]: %s tok/s" % (r + 1, args.rounds, " ".join(p.name for p in turn), "; ".join(parts)),
              file=sys.stderr)
    for p in players:
        p.close()
    summary = {"rounds": args.rounds, "wall_s": round(time.time() - t_start, 1), "load_avg": os.getloadavg(),
               "cpu_share": cpu_share(cpu0, cpu_times()), "ours_threads": ours_threads, "peer_threads": threads,
               "order": [[p.name for p in turn] for turn in order], "variants": {}}
    for v in variants:
        pm = {t: med(peer[(v, t)]) for t in threads}
        best = max(threads, key=lambda t: pm[t])
        cm = med(ceil[v]) if ceil[v] else None  # none: a suite without the sgemm ceiling cases
        summary["variants"][v] = {"ours_tokens_per_s": ours[v], "ours_median": med(ours[v]),
                                  "ceiling_tokens_per_s": ceil[v], "ceiling_median": cm,
                                  "peer_tokens_per_s": {str(t): peer[(v, t)] for t in threads},
                                  "peer_median": {str(t): pm[t] for t in threads}, "peer_best_threads": best,
                                  "ratio_ours_over_peer": med(ours[v]) / pm[best],
                                  "ratio_ceiling_over_peer": cm and cm / pm[best],
                                  "ratio_ours_over_ceiling": cm and med(ours[v]) / cm}
    print_summary(summary, args.suite)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=1)


def cpu_times():
    """The machine's CPU time so far (/proc/stat's first line: user, nice, system, idle, ...), or None."""
    try:
        with open("/proc/stat") as f:
            return [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None


def cpu_share(a, b):
    """How the CPUs spent the run: niced processes (a background job at nice > 0), the rest of user and system
    time (ours, the peer, anything else at normal priority), idle; fractions of all CPU time."""
    if not a or not b or len(a) < 4:
        return None
    d = [y - x for x, y in zip(a, b)]
    tot = sum(d) or 1
    return {"nice": d[1] / tot, "user_system": (d[0] + d[2]) / tot, "idle": d[3] / tot}


def print_summary(summary, suite):
    """The comparison's table: per variant, ours / the peer's best thread count / the sgemm ceiling."""
    print("\ntraining step tokens/s, ours: model ref of %s at %d threads; peer: the reference model (d_model 256, "
          "4 layers, T 256, batch 16) at %s threads (T:B = torch T, OpenBLAS B); medians over %d rounds, one step "
          "of each player per round, "
          "alternating:" % (suite, summary["ours_threads"], " or ".join(map(str, summary["peer_threads"])),
                            summary["rounds"]))
    print("%-16s %8s %10s %8s %10s %9s %11s %12s" % ("variant", "ours", "peer best", "threads", "ours/peer",
                                                    "ceiling", "ceil/peer", "ours/ceil"))
    for v, s in summary["variants"].items():
        pb, cm = s["peer_median"][str(s["peer_best_threads"])], s["ceiling_median"]
        print("%-16s %8.0f %10.0f %8s %10.3f " % (v, s["ours_median"], pb, s["peer_best_threads"],
                                                  s["ratio_ours_over_peer"])
              + ("%9.0f %11.3f %11.1f%%" % (cm, cm / pb, 100 * s["ours_median"] / cm) if cm else "%9s %11s %12s"
                 % ("-", "-", "-")))
    print("ceiling: the tokens/s of a step whose every FLOP ran at the rate this round's bare cblas_sgemm calls at "
          "the step's own shapes did (sgemm/ref/V); ceil/peer bounds what any step built on this BLAS could reach.")
    c = summary["cpu_share"]
    print("machine: load average %s at the end; CPU time during the run: %s" % (
        " ".join("%.2f" % x for x in summary["load_avg"]),
        "%.0f%% niced processes (background jobs), %.0f%% user + system at normal priority (both players and "
        "anything else), %.0f%% idle" % (100 * c["nice"], 100 * c["user_system"], 100 * c["idle"]) if c else "-"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gated", help="our binary: run the interleaved comparison")
    ap.add_argument("--suite", default="bench/default.yaml")
    ap.add_argument("--rounds", type=int, default=10, help="comparison: alternating rounds (one step each)")
    ap.add_argument("--reps", type=int, default=3, help="peer alone: timed steps per thread count")
    ap.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated: " + ", ".join(VARIANTS))
    ap.add_argument("--variant", default="baseline", choices=VARIANTS)
    ap.add_argument("--threads", default="1,2,1:2", help="the peer's configurations to try: T (torch and OpenBLAS "
                    "at T threads) or T:B (torch at T, OpenBLAS at B)")
    ap.add_argument("--ours-threads", type=int, default=0, help="ours: gated bench --threads (default: the largest "
                    "torch count of --threads)")
    ap.add_argument("--json", help="write every sample to this file (comparison)")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--paced", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--stub-peer", action="store_true",
                    help="tests: a peer that does no work (the alternation without torch)")
    args = ap.parse_args()
    if args.worker and args.paced:
        return paced_worker(args)
    if args.worker:
        args.threads = int(args.threads)
        return worker(args)
    if args.gated:
        return compare(args)
    res = {lab: run_peer(args.variant, t, b, args.reps) for lab, t, b in parse_threads(args.threads)}
    meds = {t: med(v) for t, v in res.items()}
    best = max(meds, key=meds.get)
    print(json.dumps({"variant": args.variant, "tokens_per_s": res, "median": meds, "best_threads": best,
                      "best_median": meds[best]}))


if __name__ == "__main__":
    main()
