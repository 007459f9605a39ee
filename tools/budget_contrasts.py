#!/usr/bin/env python3
# Usage: tools/budget_contrasts.py DB  -- paired per-seed contrasts of the budget_* sweeps (final val loss), their spread and the paired t p (df 1), as quoted in results/README.md "Effect against the budget" (whether a curve has flattened: the report's "Curve flattening" table). Read-only.
import sqlite3, sys, math
db = sqlite3.connect('file:%s?mode=ro' % sys.argv[1], uri=True)
buds = ['budget_0.5M', 'budget_1M', 'budget_2M', 'budget_4M', 'budget_8M']
rows = ['G1-elementwise', 'G1-silu-only', 'scale-0.5', 'G1-open', 'G5', 'G1-tanh', 'G1-silu']
# contrasts against another row than the baseline: name -> (row, reference row)
vs = {'G1-vs-scale': ('G1-elementwise', 'scale-0.5'), 'G1-vs-open': ('G1-elementwise', 'G1-open'),
      'G5-vs-G1': ('G5', 'G1-elementwise'), 'tanh-vs-G1': ('G1-tanh', 'G1-elementwise'),
      'silu-gate-vs-G1': ('G1-silu', 'G1-elementwise')}
def final(sw, lab):
    return dict(db.execute("select sr.seed, s.value from sweep_runs sr join runs r using(run_id) join summary s on s.run_id=sr.run_id and s.key='val_loss' and s.context='' where sr.sweep=? and sr.label=? and r.status='finished'", (sw, lab)).fetchall())
for lab in rows + list(vs):
    out = []
    for b in buds:
        a, r = vs.get(lab, (lab, 'baseline'))
        x, y = final(b, a), final(b, r)
        d = [x[s] - y[s] for s in sorted(set(x) & set(y))]
        if not d: out.append('–'); continue
        m = sum(d) / len(d)
        sd = math.sqrt(sum((v - m) ** 2 for v in d) / (len(d) - 1)) if len(d) > 1 else float('nan')
        out.append('%+.4f (sd %.4f; %s)' % (m, sd, ' '.join('%+.3f' % v for v in d)))
    print(lab, ' | '.join(out))
print()
def pt(d):
    n=len(d); m=sum(d)/n; sd=math.sqrt(sum((v-m)**2 for v in d)/(n-1)); t=m/(sd/math.sqrt(n)); df=n-1
    return 1-(2/math.pi)*math.atan(abs(t)) if df==1 else float('nan')
for a,bl in [(r,'baseline') for r in rows]+[('G1-elementwise','scale-0.5'),('G1-elementwise','G1-open'),('G1-elementwise','G1-silu-only')]+[vs[k] for k in ('G5-vs-G1','tanh-vs-G1','silu-gate-vs-G1')]:
    ps=[]
    for b in buds:
        x,y=final(b,a),final(b,bl); d=[x[s]-y[s] for s in sorted(set(x)&set(y))]
        ps.append('%.3f'%pt(d) if len(d)==2 else '–')
    print(a,'-',bl,'p(df1):',' '.join(ps))
