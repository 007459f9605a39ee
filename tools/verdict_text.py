#!/usr/bin/env python3
"""verdict_text.py -- the prose that tools/verdicts.py generates besides the table: the
front page's "What it found" (README.md), its run count, and results/README.md's account of the
runs (count, status, commits, threads).  Every number and rule word is computed; the sentences
around them are fixed here."""
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import verdict_rules as R  # noqa: E402
from toolstats import rewrap  # noqa: E402
from verdict_data import welch  # noqa: E402
from verdict_remedies import fewer_sinks  # noqa: E402
from verdict_rows import EDGE_CELLS, MID, SM, curves_text, loss, sink_rate, size_sides  # noqa: E402

RESULTS = 'results/README.md'


def runs_text(db):
    n = db.scalar("SELECT count(*) FROM runs")
    status = db.all("SELECT status, count(*) FROM runs GROUP BY status ORDER BY count(*) DESC")
    commits = db.all("SELECT substr(code_version, 1, 7), count(*), sum(git_dirty) FROM runs GROUP BY 1 "
                     "ORDER BY min(started_at)")
    threads = db.all("SELECT threads, count(*) FROM runs GROUP BY threads ORDER BY threads")
    multi = db.all("SELECT sr.sweep, count(DISTINCT r.run_id) FROM runs r JOIN sweep_runs sr USING (run_id) "
                   "WHERE r.threads > 1 GROUP BY sr.sweep ORDER BY sr.sweep")
    div = db.all("SELECT sr.sweep, count(DISTINCT r.run_id) FROM runs r JOIN sweep_runs sr USING (run_id) "
                 "WHERE r.status = 'diverged' GROUP BY sr.sweep ORDER BY sr.sweep")
    per = db.all("SELECT sr.sweep, count(*), sum(r.status = 'finished') FROM sweep_runs sr JOIN runs r "
                 "USING (run_id) GROUP BY sr.sweep ORDER BY sr.sweep")
    dup = db.all("SELECT sweep, count(*) - count(DISTINCT idx) FROM sweep_runs GROUP BY sweep "
                 "HAVING count(*) > count(DISTINCT idx) ORDER BY sweep")
    dirty = sum(d or 0 for _, _, d in commits)
    return rewrap('The database holds **%d runs**: %s%s. By the commit that made them (`runs.code_version`, oldest '
            'first; %s): %s. Threads (`runs.threads`): %s; the runs on more than one thread, by sweep: %s. '
            'Sweep indices (`sweep_runs.idx`): %s. Runs a sweep lists (finished), a run listed by every '
            'sweep that shares it: %s.' % (
                n, ', '.join('%d %s' % (c, s) for s, c in status),
                ' (%s)' % ', '.join('%s %d' % (s, c) for s, c in div) if div else '',
                'none from a dirty tree' if not dirty else '%d from a dirty tree' % dirty,
                ', '.join('`%s` %d' % (c, k) for c, k, _ in commits),
                ', '.join('%d run%s on %d' % (k, 's' if k > 1 else '', t) for t, k in threads),
                ', '.join('%s %d' % (s, c) for s, c in multi) or 'none',
                'one run an index in every sweep' if not dup else 'shared by two runs in ' + ', '.join(
                    '%s (%d)' % (s, c) for s, c in dup) + ' (tools/sweep_reindex.py renumbers them)',
                ', '.join('%s %d%s' % (s, c, '' if f == c else ' (%d)' % f) for s, c, f in per)))


def divergence_steps(db):
    """[(warmup, first step, last step, runs)] of the diverged runs, and their smallest lr"""
    rows = db.all("SELECT CAST(json_extract(config_json, '$.\"train.warmup\"') AS INTEGER), min(diverged_step),"
                  " max(diverged_step), count(*) FROM runs WHERE status = 'diverged' GROUP BY 1 ORDER BY 1")
    lr = db.scalar("SELECT min(json_extract(config_json, '$.\"train.lr\"')) FROM runs WHERE status = 'diverged'")
    return rows, lr


def mid_training(r14):
    """the front page's sentence on the mid-training cell (EDGE_CELLS[MID]): its divergences and loss
    spikes past the warm-up, G1 against the baseline, as row 14 computed and worded them"""
    (dv, sp), words = (r14['stats'][1 + MID], r14['stats'][-1]), (r14['words'][1 + MID], r14['words'][-1])
    kg, ng, kb, nb = dv.count
    ra, rb = sp.rates
    what = EDGE_CELLS[MID][0].replace(' (mid-training)', '')
    if not ng or not nb or not ra or not rb:
        return 'The mid-training cell (%s): not yet in the database.' % what
    return ('In the mid-training cell (%s) %d/%d G1 runs against %d/%d baseline runs diverged (%s), and G1\'s loss '
            'spikes past the warm-up were a median %.2f per 100 steps against %.2f (exact Mann–Whitney p %s, %s).'
            % (what, kg, ng, kb, nb, words[0], statistics.median(ra.values()), statistics.median(rb.values()),
               _p(sp.p), words[1]))


def front_page(ctx):
    db, rows = ctx.db, ctx.rows
    r1, r2, r3, r5 = rows[1], rows[2], rows[3], rows[5]
    g1 = r1['stats'][0]
    g1_16 = loss(('budget_16M',), 'G1-elementwise', 'baseline')(db)
    scale05 = loss(('budget_0.5M',), 'G1-elementwise', 'scale-0.5')(db)
    b1 = R.trend(g1, g1_16, welch)[0]
    tanh, silu = r5['stats']
    tanh16 = loss(('budget_16M',), 'G1-tanh', 'G1-elementwise')(db)
    silu16 = loss(('budget_16M',), 'G1-silu', 'G1-elementwise')(db)
    sg, sb = sink_rate(('bb_sink',), 'G1-elementwise')(db).count, sink_rate(('bb_sink',), 'baseline')(db).count
    nrem, fewer = fewer_sinks(db)
    steps, min_lr = divergence_steps(db)
    ndiv = sum(k for *_, k in steps)
    what = EDGE_CELLS[0][0]
    edge = rows[14]['stats'][1]  # the first lr-edge cell's divergences
    kg, ng, kb, nb = edge.count
    mid = mid_training(rows[14])
    twins = ('the kernel twins, re-made on one kernel, moved a per-seed contrast by up to %s' % R.fmt(ctx.twins, 4, False)
             if ctx.twins is not None else 'the kernel twins were not read')
    w = lambda x: '**%s**' % x  # noqa: E731
    seen = {}
    for n in (18, 19, 20, 21):
        seen.update(rows[n]['curve_words'])
    t512_curves = curves_text(sorted(seen.items()))
    size = R.trend(*size_sides(db, ctx.twin_db, SM, 'G1-elementwise', 'baseline', ('budget_d192_9M',), None)[:2],
                   welch)[0]
    size18 = R.trend(loss(('budget_8M',), 'G1-elementwise', 'baseline')(db),
                     loss(('budget_d192_18M',), 'G1-elementwise', 'baseline')(db), welch)[0]
    tanh128, tanh192, tname = size_sides(db, ctx.twin_db, SM, 'G1-tanh', 'G1-elementwise', ('budget_d192_9M',), None)
    k128, k192 = tanh128.ka | (tanh128.kb or set()), tanh192.ka | (tanh192.kb or set())
    tkern = ('%s runs at both sizes: one kernel' % '+'.join(sorted(k192)) if k128 == k192 else
             '%s runs against %s: across kernels' % ('+'.join(sorted(k192)), '+'.join(sorted(k128))))
    found = (
        'The verdicts, claim by claim, are one screen at the top of\n'
        '[results/README.md](results/README.md#verdicts-at-a-glance), worded by stated rules from the database\n'
        '(`make check-results` regenerates these lines and that table and fails on any difference); in six lines:\n\n'
        '1. **The G1 sigmoid gate lowers the loss** (%s): by %s nats per byte at 4.1M training tokens with\n'
        '   %d seeds; at 0.5M tokens G1 and a fixed ×0.5 scale (the gate\'s starting value) differ by\n'
        '   %s in their 2 seeds (no CI); from 4.1M to 16M tokens the gain %s (%s at 16M, %d seeds),\n'
        '   and from d128 to d192 it %s at 9.0M tokens (%s at 18.0M) ([budget and size](results/README.md#issue-28-longer-budgets-a-second-size-and-the-learning-rate-edge)).\n'
        '2. **Position** (%s): G3 − G1 %s (%s; the paper has G3 behind G1), G5 − G1 %s (%s; the paper\n'
        '   has G5 no better than the baseline) at 4.1M ([standard profile](results/README.md#the-standard-profile)).\n'
        '3. **"Sigmoid is the best activation"** is %s at 4.1M: tanh − sigmoid %s (%d seeds), SiLU gate −\n'
        '   sigmoid %s (%d seeds); from 4.1M to 16M the tanh lead %s (%s) and the SiLU gate\'s %s (%s);\n'
        '   from d128 to d192 the tanh lead %s (%s at 9.0M, %s).\n'
        '   The 4.1M tanh and sigmoid runs ran on different OpenBLAS kernels (%s); %s.\n'
        '4. **The attention sink** (%s): on Bigram-Backcopy %d of %d G1 seeds hold a sink at the end, %d of %d\n'
        '   baseline seeds; the gate removes the value drain instead. Brown forms no deep-layer sink at this\n'
        '   scale ([sinks](results/README.md#bigram-backcopy-sinks-issue-15)). Of %d other published sink\n'
        '   remedies, fewer sinks than the gate (Fisher, Holm-adjusted over the remedy rows, p < 0.05): %s ([sink remedies](results/README.md#sink-remedies-issue-36)).\n'
        '5. **At the learning-rate edge** %d runs diverged, none below lr %g, each in or just after its\n'
        '   warm-up (%s); G1 against the baseline at %s: %d/%d against %d/%d diverged (Fisher p %s, %s).\n'
        '   %s\n'
        '   int8 quantization made easier by the gate: %s; headwise gate scores mark skippable heads: %s;\n'
        '   gated models extrapolate better to long contexts: %s\n'
        '   ([at inference](results/README.md#at-inference-issue-17), [LR stress](results/README.md#lr-stress-test-issue-14)).\n'
        '6. **Beside DeepSeek\'s designs** (T 512, 4.1M tokens; their curves by the flatness rule:\n'
        '   %s): G1 helps top-k sparse attention more than\n'
        '   dense attention: %s; frees the sink\'s share of the k budget (P(0 ∈ S_t)): %s;\n'
        '   G1\'s gain survives on latent KV (MLA): %s; MLA no worse than MHA at a fraction of its cache: %s\n'
        '   ([designs](results/README.md#top-k-sparse-attention-and-latent-kv-issue-37)).\n'
    ) % (w(r1['word']), R.fmt(abs(g1.mean), 3, False), g1.n, ' and '.join(R.fmt(v, 3) for v in scale05.values),
         R.verb(b1), _ci(g1_16), g1_16.n, R.verb(size), size18,
         w(r3['word']), R.fmt(r3['stats'][1].mean, 4), r3['words'][1], R.fmt(r3['stats'][0].mean, 4), r3['words'][0],
         w(r5['words'][0]), R.fmt(tanh.mean, 4), tanh.n, R.fmt(silu.mean, 4), silu.n,
         R.verb(R.trend(tanh, tanh16, welch)[0]), _ci(tanh16), R.verb(R.trend(silu, silu16, welch)[0]),
         _ci(silu16), R.verb(R.trend(tanh128, tanh192, welch)[0]), _ci(tanh192), tkern, _kern(tanh), twins, w(rows[12]['word']), sg[0], sg[1], sb[0], sb[1], nrem, fewer, ndiv, min_lr,
         ', '.join('steps %d–%d with warm-up %d' % (a, b, wu) for wu, a, b, _ in steps), what, kg, ng, kb, nb,
         _p(edge.p), rows[14]['words'][1], mid, w(rows[15]['word']), w(rows[16]['word']), w(rows[17]['word']),
         t512_curves,
         *[_word_ci(rows[n]) for n in (18, 19, 20, 21)])
    found = rewrap(found)
    committed = ('The committed results (%d runs) are in `results/db/` as compressed parts:'
                 % db.scalar("SELECT count(*) FROM runs"))
    return found, committed


def _ci(st):
    if st.lo is None or st.n < R.MIN_N:
        return 'n = %d: no CI' % st.n
    return '%s [%s, %s]' % (R.fmt(st.mean, 4), R.fmt(st.lo, 3), R.fmt(st.hi, 3))


def _word_ci(row):
    """a one-contrast row's word, with its value where it has one"""
    w = '**%s**' % row['word']
    return w if row['word'].startswith('unresolved') else '%s (%s)' % (w, _ci(row['stats'][0]))


def _kern(st):
    return '%s vs %s' % ('+'.join(sorted(st.ka)), '+'.join(sorted(st.kb or st.ka)))


def _p(p):
    return '–' if p is None else '%.2f' % p if p >= 0.01 else '%.1g' % p
