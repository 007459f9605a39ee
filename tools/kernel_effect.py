#!/usr/bin/env python3
"""kernel_effect.py -- how much the OpenBLAS kernel moves a result (issue 28, item 0).

Usage: tools/kernel_effect.py --db results/gated.db TWINS.db [TWINS.db ...]

A twin database holds runs re-made from the same configs as committed runs (so with the same
run ids, which is why they cannot share results/gated.db) on another OpenBLAS kernel. For each
twin that finished, and whose run id is a finished run of --db, it prints:

1. per run: the two kernels, the final validation loss of each and their difference
   (twin - committed): the kernel effect on that run, everything else equal;
2. per sweep row: the mean kernel effect over its seeds, with the paired t 95% CI and p,
   against the row's seed spread (sample sd of the committed final losses over all its seeds on
   one kernel): an effect well inside the seed spread cannot confound a contrast whose
   minimum detectable effect is of the order of that spread;
3. per pair of rows of one sweep that both have twins: the contrast (row - reference row,
   paired by seed) as committed, with each side's kernel, and the same contrast from the twins
   alone, where both sides ran on one kernel.

Read-only: both databases are opened read-only, and text from them is escaped before printing.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from toolstats import connect_ro, mean_sd, paired, show  # noqa: E402

RUNS = ("select sr.sweep, sr.label, sr.seed, r.run_id, r.openblas_version, s.value"
        " from sweep_runs sr join runs r using(run_id)"
        " join summary s on s.run_id = r.run_id and s.key = 'val_loss' and s.context = ''"
        " where r.status = 'finished'")


def kernel_of(version):
    """the OpenBLAS core in an openblas_get_config() string (the word before MAX_THREADS=, else
    the last word); '?' when that is not a plain name, '' when there is none"""
    words = (version or '').split()
    if not words:
        return ''
    k = next((words[i - 1] for i, w in enumerate(words) if w.startswith('MAX_THREADS=') and i), words[-1])
    if k[0].isdigit():
        return ''
    return k if all(ch.isalnum() or ch == '_' for ch in k) else '?'


def load(path):
    """the finished runs of sweeps: [(sweep, label, seed, run_id)] (a run may be in several
    sweeps) and {run_id: (kernel, final val_loss)}"""
    db = connect_ro(path)
    memb, runs = [], {}
    for sweep, label, seed, rid, ver, val in db.execute(RUNS):
        memb.append((sweep, label, seed, rid))
        runs[rid] = (kernel_of(ver), val)
    db.close()
    return memb, runs


def row_spread(committed, sweep, label):
    """sample sd of the committed final losses of a row, over the seeds of its commonest kernel"""
    memb, runs = committed
    by_k = {}
    for sw, lab, _seed, rid in memb:
        if sw == sweep and lab == label:
            k, val = runs[rid]
            by_k.setdefault(k, []).append(val)
    if not by_k:
        return float('nan'), '', 0
    k, vals = max(by_k.items(), key=lambda kv: len(kv[1]))
    return mean_sd(vals)[1], k, len(vals)


def fmt_test(d):
    t = paired(d)
    if t is None:
        return '%+.4f (1 run)' % d[0]
    m, lo, hi, p, _ = t
    return '%+.4f [%+.4f, %+.4f] p %.3g (%d runs)' % (m, lo, hi, p, len(d))


def per_run(committed, twins):
    """the matched runs, printed; {(sweep, label): {seed: (committed, twin, k_committed, k_twin)}}"""
    rows, cruns = {}, committed[1]
    print('## per run: final validation loss, committed vs twin (twin - committed)')
    for sw, lab, seed, rid in sorted(set(twins[0])):
        k, val = twins[1][rid]
        if rid not in cruns:
            print('%s %s s%d: no finished committed run %s' % (show(sw), show(lab), seed, show(rid)))
            continue
        ck, cval = cruns[rid]
        print('%s %s s%d (%s): %s %.4f, %s %.4f: %+.4f' % (show(sw), show(lab), seed, show(rid), show(ck), cval,
                                                        show(k), val, val - cval))
        rows.setdefault((sw, lab), {})[seed] = (cval, val, ck, k)
    return rows


def per_row(committed, rows):
    print('\n## per row: the kernel effect against the seed spread')
    for (sw, lab), seeds in sorted(rows.items()):
        d = [t - c for c, t, _, _ in seeds.values()]
        sd, k, n = row_spread(committed, sw, lab)
        ratio = abs(sum(d) / len(d)) / sd if sd == sd and sd > 0 else float('nan')
        print('%s %s: kernel effect %s; seed sd %.4f (%d seeds on %s): |effect| / sd %.2f' % (
            show(sw), show(lab), fmt_test(d), sd, n, show(k), ratio))


def per_contrast(rows):
    print('\n## per contrast: as committed (kernels named) and from the twins alone (one kernel)')
    for (sw, lab), seeds in sorted(rows.items()):
        for (sw2, ref), rseeds in sorted(rows.items()):
            if sw2 != sw or ref <= lab:  # each pair once
                continue
            common = sorted(set(seeds) & set(rseeds))
            if len(common) < 1:
                continue
            was = [seeds[s][0] - rseeds[s][0] for s in common]
            now = [seeds[s][1] - rseeds[s][1] for s in common]
            kw = sorted({'%s vs %s' % (seeds[s][2], rseeds[s][2]) for s in common})
            kn = sorted({'%s vs %s' % (seeds[s][3], rseeds[s][3]) for s in common})
            print('%s %s - %s, seeds %s: committed %s (%s); twins %s (%s)' % (
                show(sw), show(lab), show(ref), ','.join(map(str, common)), fmt_test(was),
                show('; '.join(kw)), fmt_test(now), show('; '.join(kn))))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--db', default='results/gated.db', help='the committed results (default: %(default)s)')
    ap.add_argument('twins', nargs='+', help='databases of re-made runs')
    a = ap.parse_args()
    for p in [a.db] + a.twins:
        if not os.path.isfile(p):
            print('kernel_effect: %s: no such database' % show(p), file=sys.stderr)
            return 2
    committed = load(a.db)
    twins = ([], {})
    for p in a.twins:
        memb, runs = load(p)
        twins[0].extend(memb)
        twins[1].update(runs)
    rows = per_run(committed, twins)
    if not rows:
        print('kernel_effect: no twin matches a finished committed run', file=sys.stderr)
        return 1
    per_row(committed, rows)
    per_contrast(rows)
    return 0


if __name__ == '__main__':
    sys.exit(main())
