#!/usr/bin/env python3
# Usage: tools/budget_contrasts.py DB  -- paired per-seed contrasts of the budget_* sweeps (final val loss), their spread and the paired t p (df 1), as quoted in results/README.md "Effect against the budget" (whether a curve has flattened: the report's "Curve flattening" table). Read-only.
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from toolstats import connect_ro, mean_sd, paired
db = connect_ro(sys.argv[1])
buds = ['budget_0.5M', 'budget_1M', 'budget_2M', 'budget_4M', 'budget_8M']
rows = ['G1-elementwise', 'G1-silu-only', 'scale-0.5', 'G1-open', 'G5', 'G1-tanh', 'G1-silu']
# contrasts against another row than the baseline: name -> (row, reference row)
vs = {'G1-vs-scale': ('G1-elementwise', 'scale-0.5'), 'G1-vs-open': ('G1-elementwise', 'G1-open'),
      'G5-vs-G1': ('G5', 'G1-elementwise'), 'tanh-vs-G1': ('G1-tanh', 'G1-elementwise'),
      'silu-gate-vs-G1': ('G1-silu', 'G1-elementwise')}
finals = {}
def final(sw, lab):
    if (sw, lab) not in finals:
        finals[sw, lab] = dict(db.execute("select sr.seed, s.value from sweep_runs sr join runs r using(run_id) join summary s on s.run_id=sr.run_id and s.key='val_loss' and s.context='' where sr.sweep=? and sr.label=? and r.status='finished'", (sw, lab)).fetchall())
    return finals[sw, lab]
def diffs(b, a, r):
    """per-seed differences row a - row r at budget b, by seed"""
    x, y = final(b, a), final(b, r)
    return [x[s] - y[s] for s in sorted(set(x) & set(y))]
for lab in rows + list(vs):
    out = []
    for b in buds:
        d = diffs(b, *vs.get(lab, (lab, 'baseline')))
        if not d: out.append('–'); continue
        m, sd = mean_sd(d)
        out.append('%+.4f (sd %.4f; %s)' % (m, sd, ' '.join('%+.3f' % v for v in d)))
    print(lab, ' | '.join(out))
print()
for a,bl in [(r,'baseline') for r in rows]+[('G1-elementwise','scale-0.5'),('G1-elementwise','G1-open'),('G1-elementwise','G1-silu-only')]+[vs[k] for k in ('G5-vs-G1','tanh-vs-G1','silu-gate-vs-G1')]:
    ps=[]
    for b in buds:
        d = diffs(b, a, bl)
        ps.append('%.3f' % paired(d)[3] if len(d)==2 else '–')
    print(a,'-',bl,'p(df1):',' '.join(ps))
