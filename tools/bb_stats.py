#!/usr/bin/env python3
# Usage: tools/bb_stats.py DB SWEEP  -- as quoted in results/README.md "Bigram-Backcopy sinks". Read-only.
"""Per-row Bigram-Backcopy statistics from a gated database (read-only):
per seed, at the last evaluation, the largest head's BOS attention from other
queries, whether a sink formed at any evaluation (metric sink_formed), value
drain of that head, gate scores; Fisher's exact test of formation against the
baseline row, and Welch's t-test of the BOS attention."""
import sqlite3, sys, math
from collections import defaultdict

def betacf(a, b, x):
    qab, qap, qam = a + b, a + 1, a - 1
    c, d = 1.0, 1 - qab * x / qap
    d = 1 / (d if abs(d) > 1e-300 else 1e-300); h = d
    for m in range(1, 300):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1 + aa * d; d = 1 / (d if abs(d) > 1e-300 else 1e-300)
        c = 1 + aa / c if abs(c) > 1e-300 else 1e300
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1 + aa * d; d = 1 / (d if abs(d) > 1e-300 else 1e-300)
        c = 1 + aa / c if abs(c) > 1e-300 else 1e300
        de = d * c; h *= de
        if abs(de - 1) < 1e-15: break
    return h

def betai(a, b, x):
    if x <= 0: return 0.0
    if x >= 1: return 1.0
    bt = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log(1 - x))
    return bt * betacf(a, b, x) / a if x < (a + 1) / (a + b + 2) else 1 - bt * betacf(b, a, 1 - x) / b

def t_p(t, df):  # two-sided
    return betai(df / 2, 0.5, df / (df + t * t))

def welch(x, y):
    nx, ny = len(x), len(y); mx, my = sum(x) / nx, sum(y) / ny
    vx = sum((v - mx) ** 2 for v in x) / (nx - 1); vy = sum((v - my) ** 2 for v in y) / (ny - 1)
    se = math.sqrt(vx / nx + vy / ny)
    if se == 0: return mx - my, float('nan')
    t = (mx - my) / se
    df = (vx / nx + vy / ny) ** 2 / ((vx / nx) ** 2 / (nx - 1) + (vy / ny) ** 2 / (ny - 1))
    return mx - my, t_p(t, df)

def fisher(a, n1, b, n2):  # two-sided, a of n1 vs b of n2 successes
    N, K = n1 + n2, a + b
    def pr(k): return math.comb(n1, k) * math.comb(n2, K - k) / math.comb(N, K)
    p0 = pr(a)
    return min(1.0, sum(pr(k) for k in range(max(0, K - n2), min(K, n1) + 1) if pr(k) <= p0 * (1 + 1e-9)))

db = sqlite3.connect('file:%s?mode=ro' % sys.argv[1], uri=True)
sweep = sys.argv[2]
rows = defaultdict(dict)
order = []
for label, seed, rid in db.execute("select label, sr.seed, sr.run_id from sweep_runs sr join runs r using(run_id) where sweep=? and r.status='finished' order by idx", (sweep,)):
    if label not in order: order.append(label)
    last = db.execute("select max(step) from metrics where run_id=? and key='bb_loss_other'", (rid,)).fetchone()[0]
    def v(key, ctx=''):
        r = db.execute("select value from metrics where run_id=? and key=? and context=? and step=?", (rid, key, ctx, last)).fetchone()
        return r[0] if r else float('nan')
    heads = db.execute("select context, value from metrics where run_id=? and key='bb_bos_attn_other' and context like '%head%' and step=? order by value desc limit 1", (rid, last)).fetchone()
    formed = db.execute("select count(*) from metrics where run_id=? and key='sink_formed' and value>0", (rid,)).fetchone()[0] > 0
    formed_end = v('sink_formed') > 0
    rows[label][seed] = dict(bos=heads[1], head=heads[0], formed=formed, formed_end=formed_end,
        drain=v('bb_value_drain', heads[0]), peak=v('bb_residual_peak'), lt=v('bb_loss_trigger'), lo=v('bb_loss_other'),
        gt=v('bb_gate_trigger'), go=v('bb_gate_other'), bos_mean=v('bb_bos_attn_other'))
def ms(xs):
    xs = [x for x in xs if not math.isnan(x)]
    if not xs: return '–'
    m = sum(xs) / len(xs); s = math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1)) if len(xs) > 1 else 0
    return '%.3f ± %.3f' % (m, s)
base = rows[order[0]] if 'baseline' not in rows else rows['baseline']
print('| row | n | sink formed (ever / at the end) | Fisher p (end, vs baseline) | BOS attn, other queries (max head) | Welch p | per seed | value drain | residual peak | gate trigger | gate other | loss trigger | loss other |')
print('|---|--:|--:|--:|--:|--:|---|--:|--:|--:|--:|--:|--:|')
for lab in order:
    r = rows[lab]; n = len(r)
    fe = sum(x['formed_end'] for x in r.values()); fa = sum(x['formed'] for x in r.values())
    bn = len(base); bfe = sum(x['formed_end'] for x in base.values())
    fp = '–' if r is base else '%.3f' % fisher(fe, n, bfe, bn)
    d, wp = welch([x['bos'] for x in r.values()], [x['bos'] for x in base.values()]) if r is not base else (0, float('nan'))
    wps = '–' if r is base else '%.2g (Δ %+.3f)' % (wp, d)
    seeds = ' '.join('%.2f' % r[s]['bos'] for s in sorted(r))
    print('| %s | %d | %d / %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |' % (lab, n, fa, fe, fp, ms([x['bos'] for x in r.values()]), wps, seeds,
        ms([x['drain'] for x in r.values()]), ms([x['peak'] for x in r.values()]), ms([x['gt'] for x in r.values()]), ms([x['go'] for x in r.values()]),
        ms([x['lt'] for x in r.values()]), ms([x['lo'] for x in r.values()])))
print()
print('| row | value drain Δ vs baseline (Welch p) | residual peak Δ (Welch p) | loss other Δ (Welch p) | loss trigger Δ (Welch p) |')
print('|---|--:|--:|--:|--:|')
for lab in order:
    r = rows[lab]
    if r is base: continue
    cells = []
    for k in ['drain', 'peak', 'lo', 'lt']:
        d, p = welch([x[k] for x in r.values()], [x[k] for x in base.values()])
        cells.append('%+.3f (%.2g)' % (d, p))
    print('| %s | %s |' % (lab, ' | '.join(cells)))
