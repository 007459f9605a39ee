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
from toolstats import rewrap  # noqa: E402
from verdict_data import fisher_counts, holm_family, paired_dict, paired_stat, welch  # noqa: E402
from verdict_rows import quant_dppl  # noqa: E402

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
# a Bigram-Backcopy run did not learn the task when its loss on trigger positions (where the
# backcopy rule fixes the next token) is at least this at the end: the right token below ~90%
UNLEARNED = 0.1

RULE_TEXT = (
    '*How this table is made* (`tools/verdict_remedies.py`, from `gated.db`; `make check-results` fails when '
    'it differs). Δ loss: final validation loss (read at the minimum where the curve turned up), the row '
    'minus the baseline or G1, paired by seed, 95% t interval (not adjusted), no interval from fewer than 3 '
    'seeds; Holm p over the family of every such contrast of the new rows with 3 seeds or more. Bigram-Backcopy (15 '
    'seeds a row): runs whose last evaluation finds a sink (`sink_formed`); the validation loss (BB loss); '
    'runs that did not learn the task (their loss on trigger positions, where the backcopy rule fixes the '
    'next token, still ≥ 0.1 nats at the end: the right token below ~90%); '
    'and the means over runs of the BOS attention from the non-trigger (dormant) queries, its share of the '
    'mass they attend with (BOS ÷ (1 − mass on nothing), the same as the BOS attention where rows sum to 1), '
    'the mass on nothing (1 − row sum) and the value drain. Brown: F-Attn (the attention mass on position '
    '0, for every normaliser), M-Act and residual kurtosis (mean over layers) at the last evaluation, the '
    'W8A8 (per-tensor) perplexity change in % (64 validation windows), means over the seeds that have them '
    '(their count in brackets where it differs from the row\'s Brown seeds). lr edge: diverged / ended runs '
    'of 12 seeds a cell. Step time: the `gated bench` case of the row on the quick model '
    '(`step/quick-v/...`), its time ÷ the baseline\'s in the same round of an interleaved run: the median '
    'over rounds with its 95% interval (order statistics; "≈ 1" where it holds 1). *The sentences*: a '
    'remedy is better (or worse) than the gate on a measure when its test against G1 gives an adjusted p < '
    '0.05 (lower is better on every measure): the Brown loss by its Holm p above; every other measure by '
    'its test (M-Act, W8A8, BB loss and BB trigger loss: paired t over the seeds both rows hold; BB BOS attention and its '
    'share: Welch\'s t; sink and divergence counts: Fisher\'s exact test), Holm-adjusted over the remedies '
    'tested on that measure; a measure with fewer than 3 values or no test is listed as not resolved with '
    'its n (and its adjusted p when it has one). Where a remedy is better on a BB sink reading (sinks, BOS '
    'attention or its share) but worse on BB loss or trigger loss, or some of its BB runs did not learn the '
    'task, the sentence says so: its sink readings then compare models that learned the task less well.')


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


def median_ci(xs):
    """the median of xs and its 95% interval from order statistics (the sign test's: the k-th
    smallest and largest, k the largest with P(Binomial(n, 1/2) < k) <= 0.025); None below 6"""
    xs = sorted(xs)
    n = len(xs)
    if n < 6:
        return statistics.median(xs) if xs else None, None
    k, cdf, pk = 0, 0.0, 0.5 ** n
    while cdf + pk <= 0.025:
        cdf += pk
        k += 1
        pk = pk * (n - k + 1) / k
    return statistics.median(xs), (xs[k - 1], xs[n - k]) if k >= 1 else None


def bench_ratios(path):
    """{case label: (median over rounds of time / baseline's time in the same round, its 95% CI)},
    and the JSON's commit; rounds pair only in an interleaved run (context.gated_interleaved)"""
    if not os.path.exists(path):
        return {}, None
    with open(path) as f:
        doc = json.load(f)
    if not doc['context'].get('gated_interleaved'):
        return {}, None
    rounds = {}
    for b in doc['benchmarks']:
        if b.get('run_type') != 'iteration':
            continue
        label = b['name'].split('/')[-1]
        rounds.setdefault(label, {})[b.get('repetition_index', 0)] = b['real_time']  # paired by round
    base = rounds.get('baseline', {})
    out = {k: median_ci([v[i] / base[i] for i in sorted(set(v) & set(base))])
           for k, v in rounds.items() if set(v) & set(base)}
    return out, doc['context'].get('gated_code_version', '')[:7]


def ratio_cell(r):
    if r is None:
        return '–'
    med, iv = r
    if iv is None:
        return fmt(med, 3)
    return '%s%s [%s, %s]' % ('≈ 1: ' if iv[0] <= 1 <= iv[1] else '', fmt(med, 3), fmt(iv[0], 2), fmt(iv[1], 2))


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
    m['share'] = [None if b is None else b / (1 - (n or 0)) for b, n in zip(m['bos'], m['none'])]
    m['bbloss'] = {r.seed: db.val_loss(r.run_id)[0] for r in bb.values()}
    m['trig'] = {r.seed: db.last(r.run_id, 'bb_loss_trigger') for r in bb.values()}
    m['unlearned'] = sum(1 for x in m['trig'].values() if x is not None and x >= UNLEARNED)
    m['nbrown'] = len(db.row(BROWN, label))
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


def gate_tests(row, g1, edge_row, edge_g1):
    """[(measure, difference, n, p)] of the row against G1, every measure but the Brown loss
    (whose Holm p is the table's); p None: no test"""
    out = []
    ma = paired_dict(row['mact'], g1['mact'])
    out.append(('M-Act', ma.mean, ma.n, ma.p))
    (kr, nr), (kg, ng) = row['sink'], g1['sink']
    out.append(('BB sinks', kr / nr - kg / ng if nr and ng else 0, min(nr, ng),
                fisher_counts(kr, nr, kg, ng) if nr and ng else None))
    for key, name in (('bos', 'BB BOS attention'), ('share', 'BB BOS share')):
        xb, yb = [x for x in row[key] if x is not None], [x for x in g1[key] if x is not None]
        w = welch(xb, yb)
        out.append((name, w[0] if w else 0, min(len(xb), len(yb)), w[2] if w else None))
    for key, name in (('bbloss', 'BB loss'), ('trig', 'BB trigger loss')):
        bl = paired_dict(row[key], g1[key])
        out.append((name, bl.mean, bl.n, bl.p))
    w8 = paired_dict(row['w8'], g1['w8'])
    out.append(('W8A8', w8.mean, w8.n, w8.p))
    for (cell, _, _), (ka, na), (kb, nb) in zip(EDGE, edge_row or ((0, 0),) * len(EDGE),
                                                edge_g1 or ((0, 0),) * len(EDGE)):
        if edge_row is not None:
            out.append(('divergence at %s' % cell, ka / na - kb / nb if na and nb else 0, min(na, nb),
                        fisher_counts(ka, na, kb, nb) if na and nb else None))
    return out


def skill_note(m, beats, loses):
    """the caveat of a remedy better than the gate on a BB sink reading whose BB runs learned the
    task less well (worse BB loss or trigger loss, or runs that did not learn it)"""
    if not {'BB sinks', 'BB BOS attention', 'BB BOS share'} & set(beats):
        return ''
    why = [x for x in ('BB loss', 'BB trigger loss') if x in loses]
    n = len(m['trig'])
    if m['unlearned']:
        why.append('%d of its %d runs did not learn the task (trigger loss ≥ %g nats)' % (m['unlearned'], n, UNLEARNED))
    if not why:
        return ''
    return ('; but on Bigram-Backcopy %s: its sink readings compare models that learned the task less well'
            % ' and '.join(('worse on ' + x) if x.startswith('BB') else x for x in why))


def holm_by_measure(tests):
    """{(row, measure): Holm-adjusted p} over the rows tested on each measure"""
    by = {}
    for lab, ts in tests.items():
        for name, _, n, p in ts:
            by.setdefault(name, []).append(((lab, name), n, p))
    return {k: a for fam in by.values() for k, a in holm_family(fam).items()}


def versus_gate(lab, dg1, loss_p, tests, adj):
    """(beats, loses, unresolved): the measures on which row lab is better / worse than G1;
    loss_p: the Brown loss contrast's Holm-adjusted p (None without one)"""
    beats, loses, open_ = [], [], []

    def judge(name, diff, n, p):
        """p: the measure's adjusted p (None: no test, below 3 values or no data)"""
        if n < R.MIN_N or p is None:
            open_.append('%s (n = %d)' % (name, n))
        elif p < 0.05 and diff < 0:
            beats.append(name)
        elif p < 0.05 and diff > 0:
            loses.append(name)
        else:
            open_.append('%s (n = %d, p %s)' % (name, n, pfmt(p)))
    judge('Brown loss', dg1.mean, dg1.n, loss_p)
    for name, diff, n, _ in tests:
        judge(name, diff, n, adj.get((lab, name)))
    return beats, loses, open_


def sink_tests(got):
    """{row: (k, n, Fisher p against G1, Holm-adjusted p over the remedies tested)} on BB sinks:
    gate_tests' and holm_by_measure's, the sentences' own test"""
    g1 = got['G1-elementwise']
    tests = {lab: [t for t in gate_tests(got[lab], g1, None, None) if t[0] == 'BB sinks'] for lab in NEW if lab in got}
    adj = holm_by_measure(tests)
    return {lab: got[lab]['sink'] + (ts[0][3], adj[(lab, 'BB sinks')])
            for lab, ts in tests.items() if (lab, 'BB sinks') in adj}


def fewer_sinks(db):
    """(how many remedy rows are read, 'label (k/n against k/n, p, adjusted p), ...' of those with
    fewer BB sinks than G1 by Holm-adjusted Fisher p < 0.05, or 'none' / 'not yet in the
    database') for the front page"""
    got = {lab: measures(db, lab) for lab in ['G1-elementwise'] + NEW}
    st = sink_tests(got)
    published = [lab for lab in st if lab in NEW[:-1]]  # the normalisers, not G1 x sink_logit
    if not published:
        return len(NEW) - 1, 'not yet in the database'
    kg, ng = got['G1-elementwise']['sink']
    fewer = ['%s (%d/%d against %d/%d)' % (lab, st[lab][0], st[lab][1], kg, ng) for lab in published
             if st[lab][0] / st[lab][1] < kg / ng and st[lab][3] < 0.05]
    return len(published), ', '.join(fewer) or 'none'


def sinks_line(got):
    """the paper's claim that the gate is what removes sinks, against the remedies (BB)"""
    (kg, ng), (kb, nb) = got['G1-elementwise']['sink'], got['baseline']['sink']
    st = sink_tests(got)
    if not ng or not nb or not st:
        return 'Bigram-Backcopy: not yet in the database.\n'
    fewer = ['%s (%d/%d)' % (lab, k, n) for lab, (k, n, _, a) in st.items() if a < 0.05 and k / n < kg / ng]
    more = ['%s (%d/%d)' % (lab, k, n) for lab, (k, n, _, a) in st.items() if a < 0.05 and k / n > kg / ng]
    lab, (k, n, p, a) = min(st.items(), key=lambda it: (it[1][0] / it[1][1], it[1][2]))
    return ('On Bigram-Backcopy the gate leaves a sink in %d of %d runs, the baseline in %d of %d (Fisher p %s). '
            'Remedies with fewer sinks than the gate (Fisher, Holm-adjusted over the %d remedies, p < 0.05): %s; '
            'with more: %s. The fewest: %s, %d of %d (p %s, adjusted %s).\n' % (
                kg, ng, kb, nb, pfmt(fisher_counts(kg, ng, kb, nb)), len(st), ', '.join(fewer) or 'none',
                ', '.join(more) or 'none', lab, k, n, pfmt(p), pfmt(a)))


def commits_line(db):
    """which commits made the remedy rows and their partners, and how many partner runs made by
    other code are attested bitwise under the remedies' (code_attest, `--verify-code`)"""
    groups = [('Brown', BROWN, ('baseline', 'G1-elementwise'), NEW),
              ('Bigram-Backcopy', BB, ('baseline', 'G1-elementwise'), NEW)]
    groups += [('lr edge, %s' % cell, sweeps, ('baseline' + suf, 'G1-matched' + suf),
                ['sink_logit' + suf, 'softpick' + suf]) for cell, sweeps, suf in EDGE]
    out = []
    for name, sweeps, partners, remedies in groups:
        codes = sorted({r.code for lab in remedies for r in db.row(sweeps, lab, None).values()})
        runs = [r for lab in partners for r in db.row(sweeps, lab, None).values()]
        other = [r for r in runs if r.code not in codes]
        if not codes or not runs:
            continue
        att = sum(1 for r in other if any(db.h.execute(
            "SELECT 1 FROM code_attest WHERE run_id = ? AND substr(code_version, 1, 7) = ?", (r.run_id, c)).fetchone()
            for c in codes))
        out.append('%s: remedy rows made at %s; %d of %d partner runs made at other commits (%s), %d of them '
                   'attested bitwise under %s' % (name, ', '.join(codes), len(other), len(runs),
                                                  ', '.join(sorted({r.code for r in other})) or '–', att,
                                                  ' / '.join(codes)))
    return ('*Commits*: ' + '; '.join(out) + '. An attested run re-executed its first steps (or all of them) '
            'bitwise under the newer code; a pair of runs of different commits is otherwise the same computation '
            'only where the result code did not change between them.\n') if out else ''


def pfmt(p):
    return '%.2f' % p if p >= 0.01 else '%.1g' % p


def remedies_text(db):
    ratios, bench_commit = bench_ratios(BENCH)
    got = {lab: measures(db, lab) for lab, _, _ in ROWS}
    edges = {lab: edge_counts(db, e) if e else None for lab, e, _ in ROWS}
    adj = holm_family(((lab, k), got[lab][k].n, got[lab][k].p) for lab in NEW for k in ('dbase', 'dg1'))
    base_params = mean(got['baseline']['params'])[0]
    head = ('| row | Δ loss vs baseline [CI] (Holm p) | Δ loss vs G1 [CI] (Holm p) | BB sinks | BB loss | '
            'BB not learned | '
            'BB BOS attn | BB BOS share | BB mass on nothing | BB value drain | F-Attn | M-Act | kurtosis | '
            'W8A8 ΔPPL%% | diverged: %s | added params (Brown) | step ÷ softmax [95%% CI] |'
            % ' / '.join(c for c, _, _ in EDGE))
    lines = [head, '|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|']
    for lab, _, case in ROWS:
        m = got[lab]

        def hp(k):
            a = adj.get((lab, k))
            return '' if a is None else ' (%s)' % ('%.2g' % a if a >= 0.001 else '<0.001')
        dcols = ['ref.' if lab == 'baseline' else ci(m['dbase']) + hp('dbase'),
                 'ref.' if lab == 'G1-elementwise' else ci(m['dg1']) + hp('dg1')]
        kk, nn = m['sink']
        w8, nw8 = mean(m['w8'].values())
        nb = m['nbrown']

        def lvl(vals, d):
            v, n = mean(vals)
            return '–' if v is None else fmt(v, d) + ('' if n == nb else ' (%d)' % n)
        edge = ' / '.join('%d/%d' % c if c[1] else '–' for c in edges[lab]) if edges[lab] else '–'
        params = mean(m['params'])[0]
        lines.append('| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |' % (
            lab, dcols[0], dcols[1], '%d/%d' % (kk, nn) if nn else '–', fmt(mean(m['bbloss'].values())[0], 4),
            '%d/%d' % (m['unlearned'], len(m['trig'])) if m['trig'] else '–',
            fmt(mean(m['bos'])[0]), fmt(mean(m['share'])[0]), fmt(mean(m['none'])[0]), fmt(mean(m['drain'])[0]),
            lvl(m['fattn'], 3), lvl(m['mact'].values(), 1), lvl(m['kurt'], 1),
            '–' if not nw8 else fmt(w8, 2, True) + ('' if nw8 == nb else ' (%d)' % nw8), edge,
            '–' if params is None or base_params is None else '%+d' % round(params - base_params),
            'ref.' if lab == 'baseline' else ratio_cell(ratios.get(case)) if case else '–'))
    out = ['\n'.join(lines), '', rewrap(sinks_line(got)), rewrap(commits_line(db))]
    tests = {lab: gate_tests(got[lab], got['G1-elementwise'], edges[lab], edges['G1-elementwise']) for lab in NEW}
    madj = holm_by_measure(tests)
    for lab in NEW:
        beats, loses, open_ = versus_gate(lab, got[lab]['dg1'], adj.get((lab, 'dg1')), tests[lab], madj)
        skill = skill_note(got[lab], beats, loses)
        out.append('- **%s** against G1: better on %s; worse on %s; not resolved: %s%s.' % (
            lab, ', '.join(beats) or 'none', ', '.join(loses) or 'none', ', '.join(open_) or 'none', skill))
    out.append('')
    out.append(rewrap(RULE_TEXT + (' Step times from `%s` (gated %s).' % (BENCH, bench_commit)
                                   if bench_commit else '')))
    return '\n'.join(out)
