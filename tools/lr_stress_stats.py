#!/usr/bin/env python3
# Usage: tools/lr_stress_stats.py DB [SWEEP]  -- an lr sweep of rows `baseline-lrX` and
# `G1-matched-lrX` (default lr_stress), as quoted in results/README.md "LR stress test":
#   per run: status, diverged step, spikes (count, first step, largest excess over the running
#     median), last validation loss, the largest M-Act over layers at the last evaluation and
#     over all evaluations (with its step, layer, position and channel);
#   per lr: divergence counts with Fisher's exact p, the paired per-seed Δ of the final val
#     loss (G1 - baseline), the lr x gate interaction (each seed's Δ at the lr minus its Δ at
#     the smallest lr; paired t, Holm over the lrs), the G1/baseline ratio of the last-eval
#     M-Act (paired t on its log), and the mean Δ at every evaluation step (does it shrink?).
# Read-only.
import math, sqlite3, sys

from toolstats import connect_ro, fisher, holm, paired, show

db = connect_ro(sys.argv[1])
sweep = sys.argv[2] if len(sys.argv) > 2 else 'lr_stress'
ROWS = ('baseline', 'G1-matched')


def one(q, a):
    r = db.execute(q, a).fetchone()
    return r[0] if r else None


runs = db.execute(
    "select sr.label, sr.seed, r.run_id, r.name, r.status, r.diverged_step "
    "from sweep_runs sr join runs r using(run_id) where sr.sweep=? order by sr.label, sr.seed",
    (sweep,)).fetchall()
if not runs:
    sys.exit('no runs of sweep %s' % show(sweep))

info = {}
print('%-36s %-9s %6s %6s %6s %8s %8s %9s %9s  %s' % (
    'run', 'status', 'div@', 'spikes', '1st', 'max+', 'val', 'M-Act end', 'M-Act max', 'at (step, layer, pos, chan)'))
for label, seed, rid, name, status, dstep in runs:
    nsp, first, big = db.execute(
        "select count(*), min(step), max(value) from metrics where run_id=? and key='spike'", (rid,)).fetchone()
    curve = dict(db.execute(
        "select step, value from metrics where run_id=? and key='val_loss' and context=''", (rid,)).fetchall())
    last = max(curve) if curve else None
    mend = one("select max(value) from metrics where run_id=? and key='m_act' and context like 'layer=%' and step=?",
               (rid, last))
    r = db.execute("select step, context, value from metrics where run_id=? and key='m_act' and context like 'layer=%' "
                   "order by value desc limit 1", (rid,)).fetchone()
    where, mmax = '–', None
    if r:
        mmax = r[2]
        pos = one("select value from metrics where run_id=? and key='m_act_pos' and context=? and step=?", (rid, r[1], r[0]))
        ch = one("select value from metrics where run_id=? and key='m_act_chan' and context=? and step=?", (rid, r[1], r[0]))
        where = '%d, %s, %s, %s' % (r[0], show(r[1][6:]), '–' if pos is None else '%d' % pos, '–' if ch is None else '%d' % ch)
    info[(label, seed)] = dict(status=status, val=curve.get(last), curve=curve, mend=mend, spikes=nsp)
    print('%-36s %-9s %6s %6d %6s %8s %8s %9s %9s  %s' % (
        show(name), show(status), dstep if dstep is not None else '–', nsp, first if first is not None else '–',
        '%.2f' % big if big is not None else '–', '%.4f' % curve[last] if last is not None else '–',
        '%.1f' % mend if mend is not None else '–', '%.1f' % mmax if mmax is not None else '–', where))


def row(name, lr):
    return {s: v for (l, s), v in info.items() if l == '%s-lr%s' % (name, lr)}


def fin(rs, key):
    return {s: v[key] for s, v in rs.items() if v['status'] == 'finished' and v[key] is not None}


def fmt(r):
    return '%+.4f [%+.4f, %+.4f] p %.3g' % r[:4] if r else '–'


print()
lrs = sorted({l.rsplit('-lr', 1)[1] for l, _ in info if '-lr' in l}, key=float)
gap, inter = {}, []
print('%-8s %-24s %-24s %-9s %s' % ('lr', 'baseline: div, spikes, val', 'G1: div, spikes, val', 'Fisher p', 'paired Δ val (G1 - base), per seed'))
for lr in lrs:
    cols, cnt = [], {}
    for name in ROWS:
        rs = row(name, lr)
        nd = sum(v['status'] == 'diverged' for v in rs.values())
        nt = sum(v['status'] in ('finished', 'diverged') for v in rs.values())
        cnt[name] = (nd, nt)
        vals = list(fin(rs, 'val').values())
        sp = [v['spikes'] for v in rs.values()]
        cols.append('%d/%d, %.1f, %.4f' % (nd, nt, sum(sp) / len(sp) if sp else math.nan,
                                           sum(vals) / len(vals) if vals else math.nan))
    (a, n1), (c, n2) = cnt['baseline'], cnt['G1-matched']
    b, g = fin(row('baseline', lr), 'val'), fin(row('G1-matched', lr), 'val')
    gap[lr] = {s: g[s] - b[s] for s in set(b) & set(g)}
    print('%-8s %-24s %-24s %-9.3f %s (%s)' % (lr, cols[0], cols[1], fisher(a, n1 - a, c, n2 - c),
          fmt(paired(list(gap[lr].values()))), ' '.join('%+.3f' % gap[lr][s] for s in sorted(gap[lr]))))
tot = {name: [0, 0] for name in ROWS}
for (l, s), v in info.items():
    name = l.rsplit('-lr', 1)[0]
    if name in tot and v['status'] in ('finished', 'diverged'):
        tot[name][1] += 1
        tot[name][0] += v['status'] == 'diverged'
(a, n1), (c, n2) = tot['baseline'], tot['G1-matched']
print('pooled over lrs: baseline %d/%d diverged, G1 %d/%d, Fisher p %.3f' % (a, n1, c, n2, fisher(a, n1 - a, c, n2 - c)))

print('\nlr x gate interaction: Δ(lr) - Δ(%s), per seed' % lrs[0])
res = []
for lr in lrs[1:]:
    common = sorted(set(gap[lr]) & set(gap[lrs[0]]))
    res.append((lr, [gap[lr][s] - gap[lrs[0]][s] for s in common]))
adj = holm([(paired(d) or (None,) * 4)[3] for _, d in res])
for (lr, d), h in zip(res, adj):
    print('  %-8s %s  Holm %s  (%s)' % (lr, fmt(paired(d)), '–' if h is None else '%.3g' % h,
                                       ' '.join('%+.3f' % x for x in d)))

print('\nM-Act at the last evaluation (max over layers): G1 / baseline, paired t on the log')
for lr in lrs:
    b, g = fin(row('baseline', lr), 'mend'), fin(row('G1-matched', lr), 'mend')
    common = sorted(set(b) & set(g))
    r = paired([math.log(g[s] / b[s]) for s in common if b[s] > 0 and g[s] > 0])
    print('  %-8s baseline %s  G1 %s  ratio %s' % (lr, ' '.join('%.0f' % b[s] for s in common),
          ' '.join('%.0f' % g[s] for s in common), 'x%.2f p %.3g' % (math.exp(r[0]), r[3]) if r else '–'))

print('\nmean Δ val loss (G1 - baseline) at each evaluation step')
for lr in lrs:
    b, g = row('baseline', lr), row('G1-matched', lr)
    steps = sorted({st for v in list(b.values()) + list(g.values()) for st in v['curve']})
    out = []
    for st in steps:
        d = [g[s]['curve'][st] - b[s]['curve'][st] for s in set(b) & set(g)
             if st in g[s]['curve'] and st in b[s]['curve']]
        if d:
            out.append('%d:%+.3f' % (st, sum(d) / len(d)))
    print('  %-8s %s' % (lr, ' '.join(out)))
