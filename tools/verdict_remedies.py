#!/usr/bin/env python3
"""verdict_remedies.py -- results/README.md's sink-remedy table (issue 36): each attention
normaliser of the remedy sweeps beside the baseline and the G1 gate, on Brown (standard_remedies,
4.1M tokens), Bigram-Backcopy (bb_remedies) and the lr edge (lr_edge_remedies*), with one
sentence per remedy saying where it beats the gate and where the gate beats it.  Every number is
read from gated.db (the step times from the `gated bench` JSON kept in results/bench/, which
names its commit); every word comes from the rule in RULE_TEXT.  A sweep or seed that is not in
the database yet shows as a missing value or a smaller n; nothing here is a result.
"""
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import verdict_rules as R  # noqa: E402
from toolstats import holm  # noqa: E402
from verdict_data import Stat, fisher_counts, paired_stat, t_interval, welch  # noqa: E402
from verdict_rows import quant_dppl  # noqa: E402
from verdict_text import rewrap  # noqa: E402

BROWN = ('standard_remedies',)
BB = ('bb_remedies',)
# (cell, sweeps pooled by seed, label suffix)
EDGE = (('lr 0.5, w-up 10', ('lr_edge_remedies', 'lr_edge_power', 'lr_edge'), '-lr5.0e-1'),
        ('lr 0.7, w-up 100', ('lr_edge_remedies_warm', 'lr_edge_power_warm', 'lr_edge_warm'), '-lr7.0e-1'))
# (row label, its label at the lr edge or None, its step case in the bench JSON or None)
ROWS = (('baseline', 'baseline', 'baseline'), ('G1-elementwise', 'G1-matched', 'position=sdpa'),
        ('softmax1', None, 'normalizer=softmax1'), ('sink_logit', 'sink_logit', 'normalizer=sink_logit'),
        ('kv_bias', None, 'normalizer=kv_bias'), ('sigmoid', None, 'normalizer=sigmoid'),
        ('softpick', 'softpick', 'normalizer=softpick'), ('G1-sink_logit', None, None))
NEW = [r[0] for r in ROWS[2:]]
BENCH = 'results/bench/steps_quick_v.json'

RULE_TEXT = (
    '*How this table is made* (`tools/verdict_remedies.py`, from `gated.db`; `make check-results` fails when '
    'it differs). Δ loss: final validation loss (read at the minimum where the curve turned up), the row '
    'minus the baseline or G1, paired by seed, 95% t interval, no interval from fewer than 3 seeds; Holm p '
    'over the family of every such contrast of the new rows that has a p. Bigram-Backcopy (15 seeds a row): '
    'runs whose last evaluation finds a sink (`sink_formed`), and the means over runs of the BOS attention '
    'from the non-trigger (dormant) queries, the mass they put on nothing (1 − row sum) and the value '
    'drain. Brown: F-Attn (the attention mass on position 0, for every normaliser), M-Act and residual '
    'kurtosis (mean over layers) at the last evaluation, the W8A8 '
    '(per-tensor) perplexity change in % (64 validation windows), means over the seeds that have them. lr '
    'edge: diverged / ended runs of 12 seeds a cell. Step time: the `gated bench` case of the row on the '
    'quick model (`step/quick-v/...`), median over rounds of its time ÷ the baseline\'s in the same round. '
    '*The sentences*: a remedy is better (or worse) than the gate on a measure when its test against '
    'G1 gives p < 0.05 (lower is better on every measure): the Brown loss by its Holm p above; M-Act and '
    'W8A8 by a paired t over the seeds both rows hold, BB BOS attention by Welch\'s t, sink and divergence '
    'counts by Fisher\'s exact test, each of these one test, not adjusted; a measure with fewer than 3 '
    'values or no test is listed as not resolved with its n (and its p when it has one).')


def fmt(x, d=3, signed=False):
    return '–' if x is None else R.fmt(x, d, signed)


def mean(xs):
    xs = [x for x in xs if x is not None]
    return (sum(xs) / len(xs), len(xs)) if xs else (None, 0)


def ci(st, d=4, empty='–'):
    """a contrast's cell: mean [95% CI], or the values below 3 of them, or empty"""
    if st.n == 0:
        return empty
    if st.lo is None or st.n < R.MIN_N:
        return 'n = %d: no CI (%s)' % (st.n, ', '.join(R.fmt(v, d) for v in st.values))
    return '%s [%s, %s]' % (R.fmt(st.mean, d), R.fmt(st.lo, d - 1), R.fmt(st.hi, d - 1))


def per_run(db, sweeps, label, value):
    return [value(r.run_id) for r in db.row(sweeps, label).values()]


def bench_ratios(path):
    """{case label: median over rounds of time / baseline's time in the same round (repetition_index)},
    and the JSON's commit"""
    if not os.path.exists(path):
        return {}, None
    with open(path) as f:
        doc = json.load(f)
    rounds = {}
    for b in doc['benchmarks']:
        if b.get('run_type') != 'iteration':
            continue
        label = b['name'].split('/')[-1]
        rounds.setdefault(label, {})[b.get('repetition_index', 0)] = b['real_time']  # paired by round
    base = rounds.get('baseline', {})
    out = {k: statistics.median(v[i] / base[i] for i in sorted(set(v) & set(base)))
           for k, v in rounds.items() if set(v) & set(base)}
    return out, doc['context'].get('gated_code_version', '')[:7]


def edge_counts(db, label):
    """[(k diverged, n ended)] per lr-edge cell"""
    out = []
    for _, sweeps, suf in EDGE:
        rs = db.row(sweeps, label + suf, None).values()
        out.append((sum(r.status == 'diverged' for r in rs), sum(r.status in ('diverged', 'finished') for r in rs)))
    return out


def measures(db, label):
    """what the table and the sentences read for one row"""
    m = {}
    m['dbase'] = paired_stat(db, (BROWN, label), (BROWN, 'baseline'), db.val_loss)
    m['dg1'] = paired_stat(db, (BROWN, label), (BROWN, 'G1-elementwise'), db.val_loss)
    bb = db.row(BB, label)
    m['sink'] = (sum(1 for r in bb.values() if (db.last(r.run_id, 'sink_formed') or 0) > 0), len(bb))
    for key, name in (('bb_bos_attn_other', 'bos'), ('bb_none_attn_other', 'none'), ('bb_value_drain', 'drain')):
        m[name] = [db.last(r.run_id, key) for r in bb.values()]
    m['mact'] = {r.seed: db.last(r.run_id, 'm_act') for r in db.row(BROWN, label).values()}
    m['kurt'] = per_run(db, BROWN, label, lambda rid: db.last(rid, 'resid_kurtosis'))
    m['fattn'] = per_run(db, BROWN, label, lambda rid: db.last(rid, 'f_attn'))
    q = quant_dppl('w8-a8tensor')

    def w8(rid):
        try:
            return q(db, rid)
        except TypeError:  # no PTQ evaluation for this run
            return None
    m['w8'] = {r.seed: w8(r.run_id) for r in db.row(BROWN, label).values()}
    m['params'] = [db.summary(r.run_id, 'params') for r in db.row(BROWN, label).values()]
    return m


def paired_dict(a, b):
    """per-seed differences a - b ({seed: value}), where both have a value"""
    d = [a[s] - b[s] for s in sorted(set(a) & set(b)) if a[s] is not None and b[s] is not None]
    iv, p = t_interval(d)
    return Stat(d, 'paired t', set(), None, (), 0, iv, p)


def versus_gate(row, g1, edge_row, edge_g1, loss_p):
    """(beats, loses, unresolved): the measures on which the row is better / worse than G1;
    loss_p: the Brown loss contrast's Holm-adjusted p (None without one)"""
    beats, loses, open_ = [], [], []

    def judge(name, diff, n, p):
        """p: the measure's p (None: no test, below 3 values or no data)"""
        if n < R.MIN_N or p is None:
            open_.append('%s (n = %d)' % (name, n))
        elif p < 0.05 and diff < 0:
            beats.append(name)
        elif p < 0.05 and diff > 0:
            loses.append(name)
        else:
            open_.append('%s (n = %d, p %s)' % (name, n, pfmt(p)))
    st = row['dg1']
    judge('Brown loss', st.mean, st.n, loss_p)
    ma = paired_dict(row['mact'], g1['mact'])
    judge('M-Act', ma.mean, ma.n, ma.p)
    (kr, nr), (kg, ng) = row['sink'], g1['sink']
    judge('BB sinks', kr / nr - kg / ng if nr and ng else 0, min(nr, ng),
          fisher_counts(kr, nr, kg, ng) if nr and ng else None)
    xb, yb = [x for x in row['bos'] if x is not None], [x for x in g1['bos'] if x is not None]
    w = welch(xb, yb)
    judge('BB BOS attention', w[0] if w else 0, min(len(xb), len(yb)), w[2] if w else None)
    w8 = paired_dict(row['w8'], g1['w8'])
    judge('W8A8', w8.mean, w8.n, w8.p)
    for (cell, _, _), (ka, na), (kb, nb) in zip(EDGE, edge_row or ((0, 0),) * len(EDGE), edge_g1 or ((0, 0),) * len(EDGE)):
        if edge_row is not None:
            judge('divergence at %s' % cell, ka / na - kb / nb if na and nb else 0, min(na, nb),
                  fisher_counts(ka, na, kb, nb) if na and nb else None)
    return beats, loses, open_


def fewer_sinks(db):
    """(how many remedy rows are read, 'label (k/n), ...' of those with fewer BB sinks than G1 by
    Fisher p < 0.05, or 'none' / 'not yet in the database') for the front page"""
    got = {lab: measures(db, lab) for lab in ['G1-elementwise'] + NEW[:-1]}
    kg, ng = got['G1-elementwise']['sink']
    rows = [(lab, got[lab]['sink']) for lab in NEW[:-1] if got[lab]['sink'][1]]
    if not ng or not rows:
        return len(NEW) - 1, 'not yet in the database'
    fewer = ['%s (%d/%d against %d/%d)' % (lab, k, n, kg, ng) for lab, (k, n) in rows
             if k / n < kg / ng and fisher_counts(k, n, kg, ng) < 0.05]
    return len(rows), ', '.join(fewer) or 'none'


def sinks_line(got):
    """the paper's claim that the gate is what removes sinks, against the remedies (BB)"""
    (kg, ng), (kb, nb) = got['G1-elementwise']['sink'], got['baseline']['sink']
    if not ng or not nb:
        return 'Bigram-Backcopy: not yet in the database.\n'
    fewer, more = [], []
    for lab in NEW:
        k, n = got[lab]['sink']
        if n and fisher_counts(k, n, kg, ng) < 0.05:
            (fewer if k / n < kg / ng else more).append('%s (%d/%d)' % (lab, k, n))
    return ('On Bigram-Backcopy the gate leaves a sink in %d of %d runs, the baseline in %d of %d (Fisher p %s). '
            'Remedies with fewer sinks than the gate (Fisher p < 0.05): %s; with more: %s.\n' % (
                kg, ng, kb, nb, pfmt(fisher_counts(kg, ng, kb, nb)), ', '.join(fewer) or 'none',
                ', '.join(more) or 'none'))


def pfmt(p):
    return '%.2f' % p if p >= 0.01 else '%.1g' % p


def remedies_text(db):
    ratios, bench_commit = bench_ratios(BENCH)
    got = {lab: measures(db, lab) for lab, _, _ in ROWS}
    edges = {lab: edge_counts(db, e) if e else None for lab, e, _ in ROWS}
    ps = [(lab, k, got[lab][k].p) for lab in NEW for k in ('dbase', 'dg1') if got[lab][k].p is not None]
    adj = dict(((lab, k), a) for (lab, k, _), a in zip(ps, holm([p for *_, p in ps]))) if ps else {}
    base_params = mean(got['baseline']['params'])[0]
    head = ('| row | Δ loss vs baseline [CI] (Holm p) | Δ loss vs G1 [CI] (Holm p) | BB sinks | BB BOS attn | '
            'BB mass on nothing | BB value drain | F-Attn | M-Act | kurtosis | W8A8 ΔPPL%% | diverged: %s | added params | '
            'step ÷ softmax |' % ' / '.join(c for c, _, _ in EDGE))
    lines = [head, '|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|']
    for lab, _, case in ROWS:
        m = got[lab]

        def hp(k):
            a = adj.get((lab, k))
            return '' if a is None else ' (%s)' % ('%.2g' % a if a >= 0.001 else '<0.001')
        dcols = ['ref.' if lab == 'baseline' else ci(m['dbase']) + hp('dbase'),
                 'ref.' if lab == 'G1-elementwise' else ci(m['dg1']) + hp('dg1')]
        kk, nn = m['sink']
        w8, nw8 = mean(m['w8'].values())
        edge = ' / '.join('%d/%d' % c if c[1] else '–' for c in edges[lab]) if edges[lab] else '–'
        params = mean(m['params'])[0]
        lines.append('| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |' % (
            lab, dcols[0], dcols[1], '%d/%d' % (kk, nn) if nn else '–', fmt(mean(m['bos'])[0]),
            fmt(mean(m['none'])[0]), fmt(mean(m['drain'])[0]), fmt(mean(m['fattn'])[0]),
            fmt(mean(m['mact'].values())[0], 1),
            fmt(mean(m['kurt'])[0], 1), '%s (%d)' % (fmt(w8, 2, True), nw8) if nw8 else '–', edge,
            '–' if params is None or base_params is None else '%+d' % round(params - base_params),
            fmt(ratios.get(case), 3) if case else '–'))
    out = ['\n'.join(lines), '', rewrap(sinks_line(got))]
    for lab in NEW:
        beats, loses, open_ = versus_gate(got[lab], got['G1-elementwise'], edges[lab], edges['G1-elementwise'],
                                          adj.get((lab, 'dg1')))
        out.append('- **%s** against G1: better on %s; worse on %s; not resolved: %s.' % (
            lab, ', '.join(beats) or 'none', ', '.join(loses) or 'none', ', '.join(open_) or 'none'))
    out.append('')
    out.append(rewrap(RULE_TEXT + (' Step times from `%s` (gated %s).' % (BENCH, bench_commit)
                                   if bench_commit else '')))
    return '\n'.join(out)
