#!/usr/bin/env python3
"""norm_ratio.py JSON -- each attention normaliser's time relative to softmax.

Reads `gated bench bench/default.yaml --filter '^attention/norm/' --interleave
--json JSON` (the cases attention/norm/NORMALIZER/PASS/T<T>, generated from the
normaliser table) and prints, per normaliser and T, the median over rounds of
(forward + backward time) / (softmax's forward + backward in the same round),
with the quartiles, for real and CPU time.  Pairing by round (repetition index)
cancels the load that drifts across an interleaved run."""
import json
import statistics
import sys


def quartiles(x):
    x = sorted(x)
    q = statistics.quantiles(x, n=4) if len(x) > 1 else [x[0]] * 3
    return q[0], statistics.median(x), q[2]


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: norm_ratio.py JSON")
    with open(sys.argv[1]) as f:
        rows = [b for b in json.load(f)["benchmarks"] if b.get("run_type") == "iteration"]
    t = {}  # (norm, T, round) -> {kind: (real, cpu)}
    for b in rows:
        parts = b["name"].split("/")
        if len(parts) != 5 or parts[:2] != ["attention", "norm"]:
            continue
        norm, pas, T = parts[2], parts[3], parts[4]
        t.setdefault((norm, T, b["repetition_index"]), {})[pas] = (b["real_time"], b["cpu_time"])
    norms = sorted({k[0] for k in t}, key=lambda n: (n != "softmax", n))
    Ts = sorted({k[1] for k in t}, key=lambda s: int(s[1:]))
    print("%-12s %-5s %-28s %-28s %s" % ("normalizer", "T", "real: ratio median (q1, q3)",
                                          "cpu: ratio median (q1, q3)", "softmax fwd+bwd real median"))
    for n in norms:
        for T in Ts:
            rr, rc, base = [], [], []
            for (nn, TT, r), v in t.items():
                s = t.get(("softmax", TT, r))
                if nn != n or TT != T or not s or len(v) < 2 or len(s) < 2:
                    continue
                rr.append(sum(x[0] for x in v.values()) / sum(x[0] for x in s.values()))
                rc.append(sum(x[1] for x in v.values()) / sum(x[1] for x in s.values()))
                base.append(sum(x[0] for x in s.values()))
            if rr:
                a, b = quartiles(rr), quartiles(rc)
                print("%-12s %-5s %.3f (%.3f, %.3f)          %.3f (%.3f, %.3f)          %.2f ms"
                      % (n, T, a[1], a[0], a[2], b[1], b[0], b[2], statistics.median(base)))


if __name__ == "__main__":
    main()
