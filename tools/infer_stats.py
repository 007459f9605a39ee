#!/usr/bin/env python3
# Usage: tools/infer_stats.py DB SWEEP  -- read-only: per row of SWEEP, the
# ΔPPL% of each quantization scheme (paired per run against quant=float),
# the runs' M-Act and the outlier factor of each linear input
# (infer_in_outlier), and the correlation over runs of ΔPPL% with M-Act and
# with the outlier factor of the input each scheme quantizes; as quoted in
# results/README.md "At inference (issue 17)".
import math, sqlite3, sys
from collections import defaultdict

db = sqlite3.connect('file:%s?mode=ro' % sys.argv[1], uri=True)
sweep = sys.argv[2]
runs = db.execute("select sr.label, sr.seed, r.run_id from sweep_runs sr join runs r using(run_id) "
                  "where sr.sweep=? and r.status='finished' order by sr.label, sr.seed", (sweep,)).fetchall()

def last(run, key, ctx):
    r = db.execute("select value from metrics where run_id=? and key=? and context=? order by step desc limit 1",
                   (run, key, ctx)).fetchone()
    return r[0] if r else None

def pearson(x, y):
    n = len(x); mx = sum(x) / n; my = sum(y) / n
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y))
    sxx = sum((a - mx) ** 2 for a in x); syy = sum((b - my) ** 2 for b in y)
    r = sxy / math.sqrt(sxx * syy)
    t = r * math.sqrt((n - 2) / max(1e-300, 1 - r * r))
    # two-sided p of t with n-2 df (regularized incomplete beta via continued fraction)
    return r, tp(t, n - 2)

def betacf(a, b, x):
    qab, qap, qam = a + b, a + 1, a - 1
    c, d = 1.0, 1 - qab * x / qap
    d = 1 / d; h = d
    for m in range(1, 300):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1 / (1 + aa * d); c = 1 + aa / c; h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1 / (1 + aa * d); c = 1 + aa / c; de = d * c; h *= de
        if abs(de - 1) < 1e-12: break
    return h

def tp(t, df):
    x = df / (df + t * t); a, b = df / 2, 0.5
    lbeta = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
    bt = math.exp(lbeta + a * math.log(x) + b * math.log(1 - x))
    ib = bt * betacf(a, b, x) / a if x < (a + 1) / (a + b + 2) else 1 - bt * betacf(b, a, 1 - x) / b
    return ib

ctxs = [c for (c,) in db.execute("select distinct m.context from metrics m join sweep_runs sr using(run_id) "
                                  "where sr.sweep=? and m.key='infer_ppl' and m.context like 'split=val,%quant=%'",
                                  (sweep,))]
L = sorted({c.split(',')[1] for c in ctxs})[0]  # len=...
schemes = sorted({c.split('quant=')[1] for c in ctxs if c.startswith('split=val,' + L)} - {'float'})
sites = ['qkv', 'wo', 'ffn_in', 'ffn_down']
rows = defaultdict(list)
pts = []
for lab, seed, rid in runs:
    f = last(rid, 'infer_ppl', 'split=val,%s,quant=float' % L)
    if f is None: continue
    d = {s: 100 * (last(rid, 'infer_ppl', 'split=val,%s,quant=%s' % (L, s)) - f) / f for s in schemes}
    out = {s: last(rid, 'infer_in_outlier', 'split=val,%s,site=%s' % (L, s)) for s in sites}
    mx = {s: last(rid, 'infer_in_max', 'split=val,%s,site=%s' % (L, s)) for s in sites}
    ma = last(rid, 'm_act', '')
    rows[lab].append((d, out, mx, ma))
    pts.append((d, out, mx, ma))
def ms(v):
    v = [x for x in v if x is not None]
    m = sum(v) / len(v); sd = math.sqrt(sum((x - m) ** 2 for x in v) / (len(v) - 1)) if len(v) > 1 else float('nan')
    return '%.3g ± %.2g' % (m, sd)
print('row | n | ' + ' | '.join('ΔPPL%% %s' % s for s in schemes) + ' | M-Act | ' + ' | '.join('outlier %s' % s for s in sites) + ' | ' + ' | '.join('max|in| %s' % s for s in sites))
for lab, v in rows.items():
    print(lab, '|', len(v), '|', ' | '.join(ms([p[0][s] for p in v]) for s in schemes), '|', ms([p[3] for p in v]), '|',
          ' | '.join(ms([p[1][s] for p in v]) for s in sites), '|', ' | '.join(ms([p[2][s] for p in v]) for s in sites))
print()
for s in schemes:
    y = [p[0][s] for p in pts]
    r, p = pearson([p_[3] for p_ in pts], y)
    line = '%s: vs M-Act r %+.3f (p %.3g)' % (s, r, p)
    for site in sites:
        r, p = pearson([p_[1][site] for p_ in pts], y)
        line += '; vs outlier %s r %+.3f (p %.3g)' % (site, r, p)
    print(line, ' n', len(y))
for site in sites:
    r, p = pearson([p_[3] for p_ in pts], [p_[1][site] for p_ in pts])
    print('M-Act vs outlier %s: r %+.3f (p %.3g)' % (site, r, p))
