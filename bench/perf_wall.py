#!/usr/bin/python3
"""perf_wall.py -- the perf gate's wall-clock half (bench/perf_check.sh): the
base and the head binary timed on one suite, one process at a time,
alternating, so that a machine load which drifts during the run weighs on
both alike.

  perf_wall.py --base BIN --head BIN --suite SUITE [--base-suite SUITE]
               [--rounds N] [--reps R] --out DIR

Round k runs `BIN bench SUITE --repetitions R --json DIR/SIDE-rK.json` once
for each side, base first in odd rounds and head first in even ones (ABBA,
peer_torch.schedule).  A process's value for a case is its median over its
R repetitions, so the samples the comparison sees are processes, not
repetitions that share one process's memory layout and warm caches.  The
rounds are folded into DIR/base.json and DIR/head.json: Google-Benchmark
JSON with one iteration row per round and case, real_time in seconds and
items_per_second (tokens/s for step cases, calls of the case's kernel per
second for the others), which `gated compare --metric items_per_second`
reads (medians, Mann-Whitney U over the rounds, noise).  --base-suite: the
base runs its own suite (its binary cannot read the head's).

Prints one line per round on stderr; exit 0, or 1 when a run fails.
"""
import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peer_torch import schedule  # noqa: E402  (the ABBA order bench-peer uses)

UNIT_S = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def run_once(side, binary, suite, reps, path, log):
    """One process: every case of suite, reps repetitions; {case: (seconds, items/s)} from its medians."""
    cmd = [binary, "bench", suite, "--repetitions", str(reps), "--json", path]
    with open(log, "w") as f:
        rc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT).returncode
    if rc != 0:
        with open(log) as f:
            sys.stderr.write(f.read()[-4000:])
        raise SystemExit("perf_wall: %s: %s exited %d (log %s)" % (side, " ".join(cmd), rc, log))
    with open(path) as f:
        rows = json.load(f)["benchmarks"]
    out = {}
    for r in rows:
        if r.get("aggregate_name") != "median":
            continue
        sec = r["real_time"] * UNIT_S[r["time_unit"]]
        out[r["run_name"]] = (sec, r.get("items_per_second", 1.0 / sec if sec > 0 else float("nan")))
    return out


def write_rounds(path, side, samples):
    """samples: [{case: (seconds, items/s)}] per round -> one iteration row per round and case."""
    rows = []
    for k, got in enumerate(samples):
        for name, (sec, ips) in got.items():
            rows.append({"name": name, "run_name": name, "run_type": "iteration", "repetitions": len(samples),
                         "repetition_index": k, "threads": 1, "iterations": 1, "real_time": sec, "cpu_time": sec,
                         "time_unit": "s", "items_per_second": ips})
    with open(path, "w") as f:
        json.dump({"context": {"executable": "bench/perf_wall.py", "side": side, "rounds": len(samples)},
                   "benchmarks": rows}, f, indent=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", required=True)
    ap.add_argument("--head", required=True)
    ap.add_argument("--suite", required=True)
    ap.add_argument("--base-suite")
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    if a.rounds < 1 or a.reps < 1:
        raise SystemExit("perf_wall: --rounds and --reps must be >= 1")
    sides = {"base": (a.base, a.base_suite or a.suite), "head": (a.head, a.suite)}
    samples = {"base": [], "head": []}
    t0 = time.time()
    for k, order in enumerate(schedule(a.rounds, ["base", "head"])):
        took = []
        for side in order:
            binary, suite = sides[side]
            s0 = time.time()
            samples[side].append(run_once(side, binary, suite, a.reps, os.path.join(a.out, "%s-r%d.json" % (side, k)),
                                          os.path.join(a.out, "%s-r%d.log" % (side, k))))
            took.append("%s %.1f s" % (side, time.time() - s0))
        print("perf-check: wall-clock round %d/%d: %s" % (k + 1, a.rounds, ", ".join(took)), file=sys.stderr)
    for side in samples:
        write_rounds(os.path.join(a.out, side + ".json"), side, samples[side])
    print("perf-check: wall-clock: %d rounds x 2 processes x %d repetitions in %.0f s, load average %s"
          % (a.rounds, a.reps, time.time() - t0, " ".join("%.2f" % x for x in os.getloadavg())), file=sys.stderr)


if __name__ == "__main__":
    main()
