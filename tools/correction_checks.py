#!/usr/bin/env python3
# Usage (from the repository root): tools/correction_checks.py -- the paired tests behind the 2026-12-01 corrections in results/README.md (sink-sweep F-Attn, long-context 16x ratios, lr x gate interaction), read-only on results/gated.db.
import sqlite3, math
db=sqlite3.connect('file:results/gated.db?mode=ro', uri=True)
def last(sweep,label,key,ctx=''):
    q='''select sr.seed, m.value from sweep_runs sr join metrics m on m.run_id=sr.run_id
         where sr.sweep=? and sr.label=? and m.key=? and m.context=? and m.step=(select max(step) from metrics where run_id=sr.run_id and key=? and context=?) order by sr.seed'''
    return dict(db.execute(q,(sweep,label,key,ctx,key,ctx)).fetchall())
def p2(d):  # paired two-sided t, df=n-1 (closed form for df=2)
    n=len(d); m=sum(d)/n; sd=math.sqrt(sum((x-m)**2 for x in d)/(n-1)); t=m/(sd/math.sqrt(n))
    assert n==3
    return m, t, 1-abs(t)/math.sqrt(t*t+2)
b=last('sink','baseline','f_attn')
for lab in ['G1-elementwise','G1-headwise','G1-head-shared']:
    g=last('sink',lab,'f_attn'); d=[g[s]-b[s] for s in sorted(b)]
    print('sink f_attn',lab,[round(x,3) for x in d], ['%.3f'%x for x in p2(d)])
b=last('lr_stability','baseline-lr3.0e-3','val_loss')
def ev(label, ctx):
    q='''select sr.seed, m.value from sweep_runs sr join metrics m on m.run_id=sr.run_id where sr.sweep='long_context' and sr.label=? and m.key='eval_ppl' and m.context=? order by sr.seed'''
    return dict(db.execute(q,(label,ctx)).fetchall())
import sys
for rs in ['none','ntk','yarn']:
    c1=[c for (c,) in db.execute("select distinct context from metrics where key='eval_ppl' and context like ? ", ('%128%',))]
    pass
for lab in ['G1-elementwise','G1-headwise']:
    for sc,f in [('none',1),('ntk',16),('yarn',16)]:
        b1=ev('baseline','split=val,len=128,scaling=none,factor=1'); b16=ev('baseline','split=val,len=2048,scaling=%s,factor=%d'%(sc,f))
        g1=ev(lab,'split=val,len=128,scaling=none,factor=1'); g16=ev(lab,'split=val,len=2048,scaling=%s,factor=%d'%(sc,f))
        d=[g16[s]/g1[s]-b16[s]/b1[s] for s in sorted(b1)]
        print('longctx ratio 16x/1x',lab,sc,[round(x,3) for x in d],['%.3f'%x for x in p2(d)])
# lr interaction: gap per lr, paired per seed
gaps={}
for lr in ['3.0e-3','1.0e-2','3.0e-2']:
    b=last('lr_stability','baseline-lr'+lr,'val_loss'); g=last('lr_stability','G1-matched-lr'+lr,'val_loss')
    gaps[lr]=[g[s]-b[s] for s in sorted(b)]
    print('lr',lr,[round(x,3) for x in gaps[lr]], ['%.3f'%x for x in p2(gaps[lr])])
# interaction: does the gap grow from 3e-3 to 3e-2? paired per seed difference of gaps
d=[gaps['3.0e-2'][i]-gaps['3.0e-3'][i] for i in range(3)]; print('gap(3e-2)-gap(3e-3)',[round(x,3) for x in d],['%.3f'%x for x in p2(d)])
d=[gaps['1.0e-2'][i]-gaps['3.0e-3'][i] for i in range(3)]; print('gap(1e-2)-gap(3e-3)',[round(x,3) for x in d],['%.3f'%x for x in p2(d)])
