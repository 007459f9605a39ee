#!/usr/bin/env python3
# Usage: tools/lr_stress_stats.py DB [SWEEP]  -- per run and per (row, lr) of an lr sweep
# (default lr_stress): status, diverged step, spikes (count, first step, largest excess over
# the running median), last validation loss, the largest M-Act over layers at the last
# evaluation and over all evaluations (with its layer, position and channel), and per lr the
# divergence count of G1 against the baseline with Fisher's exact two-sided p and the paired
# per-seed difference of the final val loss.  As quoted in results/README.md "LR stress test".
# Read-only.
import math, sqlite3, sys
from math import comb

db = sqlite3.connect('file:%s?mode=ro' % sys.argv[1], uri=True)
sweep = sys.argv[2] if len(sys.argv) > 2 else 'lr_stress'


def one(q, a):
    r = db.execute(q, a).fetchone()
    return r[0] if r else None


def fisher(a, b, c, d):
    """two-sided Fisher exact p of [[a, b], [c, d]] (sum of tables no more likely)"""
    r1, c1, n = a + b, a + c, a + b + c + d
    def pr(x):
        return comb(c1, x) * comb(n - c1, r1 - x) / comb(n, r1)
    p0 = pr(a)
    lo, hi = max(0, r1 - (n - c1)), min(r1, c1)
    return min(1.0, sum(pr(x) for x in range(lo, hi + 1) if pr(x) <= p0 * (1 + 1e-9)))


def tpaired(d):
    """two-sided paired t-test p (exact for df 1 and 2, else normal approx. is not used)"""
    n = len(d)
    if n < 2:
        return float('nan')
    m = sum(d) / n
    sd = math.sqrt(sum((v - m) ** 2 for v in d) / (n - 1))
    if sd == 0:
        return 0.0
    t = abs(m / (sd / math.sqrt(n)))
    if n == 2:
        return 1 - (2 / math.pi) * math.atan(t)
    if n == 3:
        return 1 - t / math.sqrt(2 + t * t)
    return float('nan')


runs = db.execute(
    "select sr.label, sr.seed, r.run_id, r.name, r.status, r.diverged_step "
    "from sweep_runs sr join runs r using(run_id) where sr.sweep=? order by sr.label, sr.seed",
    (sweep,)).fetchall()
if not runs:
    sys.exit('no runs of sweep %s' % sweep)

info = {}
print('%-36s %-9s %6s %6s %6s %8s %8s %9s %9s  %s' % (
    'run', 'status', 'div@', 'spikes', '1st', 'max+', 'val', 'M-Act end', 'M-Act max', 'at (step, layer, pos, chan)'))
for label, seed, rid, name, status, dstep in runs:
    nsp = one("select count(*) from metrics where run_id=? and key='spike'", (rid,))
    first = one("select min(step) from metrics where run_id=? and key='spike'", (rid,))
    big = one("select max(value) from metrics where run_id=? and key='spike'", (rid,))
    last = one("select max(step) from metrics where run_id=? and key='val_loss' and context=''", (rid,))
    val = one("select value from metrics where run_id=? and key='val_loss' and context='' and step=?", (rid, last))
    mend = one("select max(value) from metrics where run_id=? and key='m_act' and context like 'layer=%' and step=?",
               (rid, last))
    r = db.execute("select step, context, value from metrics where run_id=? and key='m_act' and context like 'layer=%' "
                   "order by value desc limit 1", (rid,)).fetchone()
    where = '–'
    mmax = None
    if r:
        mmax = r[2]
        pos = one("select value from metrics where run_id=? and key='m_act_pos' and context=? and step=?", (rid, r[1], r[0]))
        ch = one("select value from metrics where run_id=? and key='m_act_chan' and context=? and step=?", (rid, r[1], r[0]))
        where = '%d, %s, %s, %s' % (r[0], r[1][6:], '–' if pos is None else '%d' % pos, '–' if ch is None else '%d' % ch)
    info[(label, seed)] = dict(status=status, dstep=dstep, spikes=nsp, val=val, last=last, mend=mend, mmax=mmax,
                               first=first)
    print('%-36s %-9s %6s %6d %6s %8s %8s %9s %9s  %s' % (
        name, status, dstep if dstep is not None else '–', nsp, first if first is not None else '–',
        '%.2f' % big if big is not None else '–', '%.4f' % val if val is not None else '–',
        '%.1f' % mend if mend is not None else '–', '%.1f' % mmax if mmax is not None else '–', where))

print()
labels = sorted({l for l, _ in info})
lrs = sorted({l.rsplit('-lr', 1)[1] for l in labels if '-lr' in l}, key=float)
print('%-8s %-28s %-28s %-10s %s' % ('lr', 'baseline: div, spikes, val', 'G1: div, spikes, val', 'Fisher p', 'paired dval (G1 - base)'))
for lr in lrs:
    cols = []
    cnt = {}
    vals = {}
    for row in ('baseline', 'G1-matched'):
        rs = {s: v for (l, s), v in info.items() if l == '%s-lr%s' % (row, lr)}
        nd = sum(1 for v in rs.values() if v['status'] == 'diverged')
        nt = sum(1 for v in rs.values() if v['status'] in ('finished', 'diverged'))
        cnt[row] = (nd, nt)
        fin = [v['val'] for v in rs.values() if v['status'] == 'finished' and v['val'] is not None]
        vals[row] = {s: v['val'] for s, v in rs.items() if v['status'] == 'finished' and v['val'] is not None}
        sp = [v['spikes'] for v in rs.values()]
        m = sum(fin) / len(fin) if fin else float('nan')
        cols.append('%d/%d, %.1f, %.4f' % (nd, nt, sum(sp) / len(sp) if sp else float('nan'), m))
    (a, n1), (c, n2) = cnt['baseline'], cnt['G1-matched']
    p = fisher(a, n1 - a, c, n2 - c)
    common = sorted(set(vals['baseline']) & set(vals['G1-matched']))
    d = [vals['G1-matched'][s] - vals['baseline'][s] for s in common]
    ds = ('%+.4f (%s) p %.3f' % (sum(d) / len(d), ' '.join('%+.3f' % x for x in d), tpaired(d))) if d else '–'
    print('%-8s %-28s %-28s %-10.3f %s' % (lr, cols[0], cols[1], p, ds))
# all lrs pooled: diverged of the baseline vs of G1
tot = {row: [0, 0] for row in ('baseline', 'G1-matched')}
for (l, s), v in info.items():
    row = l.rsplit('-lr', 1)[0]
    if row in tot and v['status'] in ('finished', 'diverged'):
        tot[row][1] += 1
        tot[row][0] += v['status'] == 'diverged'
(a, n1), (c, n2) = tot['baseline'], tot['G1-matched']
print('pooled over lrs: baseline %d/%d diverged, G1 %d/%d, Fisher p %.3f' % (a, n1, c, n2, fisher(a, n1 - a, c, n2 - c)))
