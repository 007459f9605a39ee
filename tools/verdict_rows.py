#!/usr/bin/env python3
"""verdict_rows.py -- the rows of results/README.md's verdict table: for each, the claim, what
is measured (contrast, sweeps), the paper's direction, the budget and the trend settings.  The
numbers and words are computed by tools/verdicts.py with tools/verdict_rules.py; nothing here is a
result.  A row's sweeps are tuples, pooled by seed (tools/verdict_data.py): a sweep that is not in
the database yet adds nothing, one that lands adds its seeds.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from verdict_data import Stat, binom_interval, fisher_counts, paired_dict, paired_stat, t_interval, welch  # noqa: E402
from toolstats import mann_whitney, mean_sd  # noqa: E402
from verdict_rules import MARGIN, MIN_N  # noqa: E402

SM = ('standard_mech', 'standard')  # the 6-seed mechanism rows, then the standard profile's 3
ST = ('standard',)
# the d128 budget curve (2 seeds each, 3 at 16M) and the second size (d192), by tokens
BUDGETS = (('0.5M', 'budget_0.5M'), ('1M', 'budget_1M'), ('2M', 'budget_2M'), ('8M', 'budget_8M'),
           ('16M', 'budget_16M'))
SIZES = (('d192 9.0M', ('budget_d192_9M',), None), ('d192 18.0M', ('budget_d192_18M',), ('budget_8M',)))


def loss(sweeps, row, ref, value=None):
    """final validation loss, row - ref, paired by seed (read at the minimum where it turned up), or
    value(db)'s; .spec names what it pairs (tools/attest_pairs.py)"""
    def f(db):
        return paired_stat(db, (sweeps, row), (sweeps, ref), value(db) if value else db.val_loss)
    f.spec = (sweeps, row, ref)
    f.reads = (sweeps, (row, ref))
    return f


def twin_loss(db, twin_db, sweeps, row, ref, kernels):
    """loss(sweeps, row, ref) re-read from the kernel twins of the very runs it pairs (twin_db:
    results/twins/, the same run ids re-made on another OpenBLAS kernel), over the seeds whose two
    twins finished on one of kernels"""
    ra, rb = db.row(sweeps, row), db.row(sweeps, ref)
    d, at_min, ka, kb, codes = [], 0, set(), set(), []
    for s in sorted(set(ra) & set(rb)):
        ta, tb = twin_db.run(ra[s].run_id), twin_db.run(rb[s].run_id)
        if not ta or not tb or {ta.status, tb.status} != {'finished'} or not {ta.kernel, tb.kernel} <= kernels:
            continue
        (x, mx), (y, my) = twin_db.val_loss(ta.run_id), twin_db.val_loss(tb.run_id)
        d.append(x - y)
        at_min += mx + my
        ka.add(ta.kernel), kb.add(tb.kernel), codes.extend((ta.code, tb.code))
    iv, p = t_interval(d)
    return Stat(d, 'paired t', ka, kb, codes, at_min, iv, p)


def size_sides(db, twin_db, head_sweeps, row, ref, sweeps, partner):
    """(d128 side, d192 side, the d128 side's name) of a size trend: the d192 contrast of sweeps
    against the same contrast at d128 (the part's own sweeps at 4.1M, or the partner sweep); where
    the d128 runs ran on another kernel than the d192 ones (one kernel) and their kernel twins hold
    at least MIN_N seeds on the d192 kernel, the twins' contrast: both sizes on one kernel"""
    big = loss(sweeps, row, ref)(db)
    home = head_sweeps if partner is None else partner
    small = loss(home, row, ref)(db)
    name = 'd128 4.1M' if partner is None else 'd128 8.2M'
    kbig = big.ka | (big.kb or set())
    if twin_db is not None and len(kbig) == 1 and small.ka | (small.kb or set()) != kbig:
        tw = twin_loss(db, twin_db, home, row, ref, kbig)
        if tw.n >= MIN_N:
            return tw, big, name + ' (its runs\' %s twins)' % next(iter(kbig))
    return small, big, name


def loss_dd(sweeps, a, b, c, d, value=None):
    """per seed (a - b) - (c - d) in validation loss, paired t: a difference of contrasts (e.g. what
    G1 does to the sparse - dense gap); value(db) -> value(run_id) -> (loss, at minimum?), by
    default the final one (db.val_loss)"""
    def f(db):
        val = value(db) if value else db.val_loss
        rows = [db.row(sweeps, x) for x in (a, b, c, d)]
        seeds = sorted(set.intersection(*(set(r) for r in rows)))
        v, at_min = [], 0
        for s in seeds:
            (w, mw), (x, mx), (y, my), (z, mz) = (val(r[s].run_id) for r in rows)
            v.append((w - x) - (y - z))
            at_min += mw + mx + my + mz
        iv, p = t_interval(v)
        return Stat(v, 'paired t', {rows[i][s].kernel for s in seeds for i in (0, 2)},
                    {rows[i][s].kernel for s in seeds for i in (1, 3)},
                    [rows[i][s].code for s in seeds for i in range(4)], at_min, iv, p)
    f.reads = (sweeps, (a, b, c, d))
    return f


def last_pair(sweeps, a, b, key):
    """per seed: metric key's last value, row a - row b, over the seeds where both have it"""
    def f(db):
        ra, rb = db.row(sweeps, a), db.row(sweeps, b)
        return paired_dict({sd: db.last(r.run_id, key) for sd, r in ra.items()},
                           {sd: db.last(r.run_id, key) for sd, r in rb.items()},
                           {r.kernel for r in ra.values()}, {r.kernel for r in rb.values()})
    f.reads = (sweeps, (a, b))
    return f


def at_half(db):
    return db.val_at(0.5)


def late_eval(c):
    """the last evaluation step at or before 3/4 of a curve's last one ({step: loss}), or None"""
    late = [k for k in c if k <= 0.75 * max(c)] if c else []
    return max(late) if late else None


def flat_rule(db, rows):
    """results/budget_plan.md's flatness rule on one row's runs ({seed: run}), on the evaluations
    they have: the validation loss at the last evaluation at or before 3/4 of the run minus the
    last one (as evaluated, not read at a minimum), mean over seeds, against the sd of the last
    ones over seeds: flat strictly within it, falling at +sd or above, rising at -sd or below.
    (drops, mean drop, sd, word); the last three None below MIN_N runs"""
    drops, fins = [], []
    for r in rows.values():
        c = db.val_curve(r.run_id)
        late = late_eval(c)
        if late is not None:
            drops.append(c[late] - c[max(c)])
            fins.append(c[max(c)])
    if len(drops) < MIN_N:
        return drops, None, None, None
    drop, sd = sum(drops) / len(drops), mean_sd(fins)[1]
    return drops, drop, sd, 'falling' if drop >= sd else 'rising' if drop <= -sd else 'flat'


def curve_words(db, sweeps, labels):
    """the flatness words of rows: [(label, word)], word None below MIN_N runs"""
    return [(lab, flat_rule(db, db.row(sweeps, lab))[3]) for lab in dict.fromkeys(labels)]


def curves(measure):
    """the flatness words of the rows a measure reads (its .reads: sweeps, labels)"""
    sweeps, labels = measure.reads
    return lambda db: curve_words(db, sweeps, labels)


def curves_text(words):
    """curves(...)'s words as a phrase, each word bold: '**falling** in all 4 rows', or by word,
    the rows below MIN_N seeds named apart"""
    if not words:
        return 'no rows'
    by = {}
    for lab, w in words:
        by.setdefault(w, []).append(lab)
    if len(by) == 1 and None not in by:
        return '**%s** in all %d rows' % (words[0][1], len(words))
    if list(by) == [None]:
        return 'no word below %d seeds a row' % MIN_N
    return '; '.join('**%s**: %s' % (w, ', '.join(labs)) for w, labs in by.items() if w) + (
        '; no word (below %d seeds): %s' % (MIN_N, ', '.join(by[None])) if None in by else '')


def metric_pair(sweeps, row, ref, value):
    return lambda db: paired_stat(db, (sweeps, row), (sweeps, ref), lambda r: (value(db, r), False))


def gate_mean(sweeps, row):
    def f(db):
        rs = db.row(sweeps, row)
        xs = [x for x in (db.last(r.run_id, 'gate_mean') for r in rs.values()) if x is not None]
        iv, _ = t_interval(xs)
        return Stat(xs, 't', {r.kernel for r in rs.values()}, None, [r.code for r in rs.values()], 0, iv)
    return f


def bb_bos(sweeps, row, ref):
    """the BB head's BOS attention from other queries (bb_stats.py), Welch between the rows"""
    def f(db):
        ra, rb = db.row(sweeps, row), db.row(sweeps, ref)
        x = [db.max_head(r.run_id, 'bb_bos_attn_other') for r in ra.values()]
        y = [db.max_head(r.run_id, 'bb_bos_attn_other') for r in rb.values()]
        w = welch(x, y)  # None below 2 runs a side: the difference of means alone (no interval)
        m, iv, p = w if w else ((sum(x) / len(x) - sum(y) / len(y)) if x and y else None, None, None)
        st = Stat([m] if m is not None else [], 'Welch', {r.kernel for r in ra.values()}, {r.kernel for r in rb.values()},
                  [r.code for r in ra.values()] + [r.code for r in rb.values()], 0, iv, p)
        st.n = len(x) if w else min(len(x), len(y))
        return st
    return f


def sink_rate(sweeps, row):
    """the share of a row's runs with a sink at their last evaluation (metric sink_formed)"""
    def f(db):
        rs = db.row(sweeps, row)
        xs = [1.0 if (db.last(r.run_id, 'sink_formed') or 0) > 0 else 0.0 for r in rs.values()]
        st = Stat(xs, 'Clopper-Pearson', {r.kernel for r in rs.values()}, None, [r.code for r in rs.values()], 0,
                  binom_interval(int(sum(xs)), len(xs)))
        st.count = (int(sum(xs)), len(xs))
        return st
    return f


def lr_interaction(sweep, hi, lo):
    def f(db):
        g = {lr: paired_stat(db, ((sweep,), 'G1-matched-lr' + lr), ((sweep,), 'baseline-lr' + lr), db.val_loss)
             for lr in (hi, lo)}
        d = [a - b for a, b in zip(g[hi].values, g[lo].values)]
        iv, p = t_interval(d)
        return Stat(d, 'paired t', g[hi].ka | g[lo].ka, g[hi].kb | g[lo].kb, g[hi].codes | g[lo].codes, 0, iv, p)
    return f


def divergence(sweeps, row, ref):
    """diverged / ended runs of row against ref (Fisher's exact test); mean = rate(row) - rate(ref)"""
    def f(db):
        ra, rb = db.row(sweeps, row, None), db.row(sweeps, ref, None)
        ka = sum(r.status == 'diverged' for r in ra.values())
        kb = sum(r.status == 'diverged' for r in rb.values())
        na = sum(r.status in ('diverged', 'finished') for r in ra.values())
        nb = sum(r.status in ('diverged', 'finished') for r in rb.values())
        p = fisher_counts(ka, na, kb, nb) if na and nb else None
        st = Stat([ka / na - kb / nb] if na and nb else [], 'Fisher', {r.kernel for r in ra.values()},
                  {r.kernel for r in rb.values()}, [r.code for r in ra.values()] + [r.code for r in rb.values()], 0,
                  None, p)
        st.count, st.n = (ka, na, kb, nb), min(na, nb)
        return st
    return f


def spike_rates(db, sweeps, label):
    """{seed: loss spikes per 100 steps after the warm-up} of a row's finished runs (metric
    `spike` at steps past train.warmup, over the train.steps - train.warmup steps past it). A
    diverged run has none: its window ends at its divergence, a few steps past the warm-up at
    the lr edge, so its rate would rest on a handful of steps (2 spikes in 4 steps: 50); the
    divergences are a contrast of their own"""
    out = {}
    for seed, r in db.row(sweeps, label).items():
        wu, steps = db.all("SELECT json_extract(config_json, '$.\"train.warmup\"'), json_extract(config_json, "
                           "'$.\"train.steps\"') FROM runs WHERE run_id = ?", (r.run_id,))[0]
        if wu is None or steps is None or steps <= wu:
            continue
        k = db.scalar("SELECT count(*) FROM metrics WHERE run_id = ? AND key = 'spike' AND context = '' AND step > ?",
                      (r.run_id, wu))
        out[seed] = 100.0 * k / (steps - wu)
    return out


def spikes(sweeps, row, ref):
    """loss spikes per 100 steps after the warm-up, finished runs of row against ref, by the exact
    Mann-Whitney test: mean = U / (n1 n2) - 1/2 (P(row > ref) + P(tie) / 2 - 1/2: below 0 when
    row's rates tend lower, the direction the test measures), p its; .rates holds both sides"""
    def f(db):
        ra, rb = spike_rates(db, sweeps, row), spike_rates(db, sweeps, ref)
        mw = mann_whitney(list(ra.values()), list(rb.values()))
        runs = list(db.row(sweeps, row).values()) + list(db.row(sweeps, ref).values())
        st = Stat([mw[0] / (len(ra) * len(rb)) - 0.5] if mw else [], 'Mann-Whitney', {r.kernel for r in runs}, None,
                  [r.code for r in runs], 0, None, mw[1] if mw else None)
        st.n, st.rates = min(len(ra), len(rb)), (ra, rb)
        return st
    return f


def quant_dppl(scheme, length=128):
    def v(db, run):
        f = db.last(run, 'infer_ppl', 'split=val,len=%d,quant=float' % length)
        q = db.last(run, 'infer_ppl', 'split=val,len=%d,quant=%s' % (length, scheme))
        return None if f is None or q is None else 100 * (q - f) / f
    return v


def drop_vs_random(sweeps, row, tau, length=128):
    def f(db):
        d, kept = [], []
        for r in db.row(sweeps, row).values():
            fl, g, x = (db.last(r.run_id, 'infer_ppl', 'split=val,len=%d,%s' % (length, c)) for c in
                        ('quant=float', 'drop=gate,tau=%s' % tau, 'drop=random,tau=%s' % tau))
            if None not in (fl, g, x):  # else its gated eval pass was not made
                d.append((g - fl) - (x - fl))
                kept.append(r)
        iv, p = t_interval(d)
        return Stat(d, 'paired t', {r.kernel for r in kept}, None, [r.code for r in kept], 0, iv, p)
    return f


def yarn_ratio(db, run, short=128, long=2048):
    lo = db.last(run, 'eval_ppl', 'split=val,len=%d,scaling=yarn,factor=%g' % (long, long / short))
    hi = db.last(run, 'eval_ppl', 'split=val,len=%d,scaling=none,factor=1' % short)
    return None if lo is None or hi is None else lo / hi


def m_act(db, run):
    return db.last(run, 'm_act')


def part(name, measure, expect, digits=4, budget=None, size=None, half=None):
    """one contrast of a row: its name (the contrast cell), the measure, the paper's direction,
    the digits of its mean; budget / size: (row, ref) whose trend over BUDGETS / SIZES is read;
    half: the same measure half-way through the runs (a row of one budget)"""
    return dict(name=name, measure=measure, expect=expect, digits=digits, budget=budget, size=size, half=half)


def row(n, claim, link, budget, tokens, parts, note='', edge=False, curves=False):
    """curves: a one-budget row whose trend cell gives the flatness words of the rows its last
    part reads (that measure's .reads)"""
    return dict(n=n, claim=claim, link=link, budget=budget, tokens=tokens, parts=parts, note=note, edge=edge,
                curves=curves)


SPARSE = '#top-k-sparse-attention-and-latent-kv-issue-37'
TOPK, MLA = ('t512_topk',), ('t512_mla',)
MECH = '#mechanism-contrasts-at-the-standard-budget'
STD = '#the-standard-profile'
MATRIX = '#the-ablation-matrix'
AT4 = '#at-the-standard-budget-41m-tokens'
# issue 37's contrasts, one definition each: rows 18-21 and tools/verdict_sparse.py's answers read them
def gap_gain(k, value=None):
    """what G1 does to top-k's gap to dense: (top-k G1 - dense G1) - (top-k - dense)"""
    return loss_dd(TOPK, 'topk%d-G1' % k, 'dense-G1', 'topk%d' % k, 'dense', value)


def mla_loss(row, ref, value=None):
    return loss(MLA, row, ref, value)


def mla_gain_dd(value=None):
    """G1's gain on MLA against its gain on this sweep's MHA"""
    return loss_dd(MLA, 'MLA-G1', 'MLA', 'MHA-G1', 'MHA', value)


def p0_gain(k):
    """what G1 does to how often position 0 is selected: P(0 in S_t), top-k G1 - top-k"""
    return last_pair(TOPK, 'topk%d-G1' % k, 'topk%d' % k, 'sparse_p0')


# the lr edge cells: (what, sweeps, baseline row, G1 row).  Row 14 reads each cell's divergences
# (its parts 1, 2, 3, in this order) and the mid-training cell's loss spikes (its last part); its
# trend column and the front page read those parts
EDGE_CELLS = (
    ('lr 0.5, warm-up 10', ('lr_edge', 'lr_edge_power'), 'baseline-lr5.0e-1', 'G1-matched-lr5.0e-1'),
    ('lr 0.7, warm-up 100', ('lr_edge_warm', 'lr_edge_power_warm'), 'baseline-lr7.0e-1', 'G1-matched-lr7.0e-1'),
    ('lr 0.5, warm-up 100, 1,000 steps (mid-training)', ('lr_edge_long',), 'baseline-lr5.0e-1', 'G1-matched-lr5.0e-1'),
)
MID = 2  # the mid-training cell


def edge_parts():
    """row 14's parts after its first: divergences per edge cell, then the mid-training spikes"""
    name = lambda what: what.replace(' (mid-training)', '')  # noqa: E731
    out = [part('diverged at %s, G1 − base' % name(what), divergence(sweeps, g1, base), ('fewer', None))
           for what, sweeps, base, g1 in EDGE_CELLS]
    what, sweeps, base, g1 = EDGE_CELLS[MID]
    return out + [part('loss spikes after warm-up at %s, G1 − base' % name(what), spikes(sweeps, g1, base),
                       ('fewer', None))]


ROWS = [
    row(1, 'Gating at G1 lowers the loss', MECH, '4.1M; 0.5M–16M; d192', 4.1e6,
        [part('G1 − baseline', loss(SM, 'G1-elementwise', 'baseline'), -1,
              budget=('G1-elementwise', 'baseline'), size=('G1-elementwise', 'baseline'))]),
    row(2, '… and not through its starting scale', MECH, '4.1M; 0.5M–16M', 4.1e6,
        [part('G1 − ×0.5 scale', loss(SM, 'G1-elementwise', 'scale-0.5'), -1, budget=('G1-elementwise', 'scale-0.5'))]),
    row(3, 'G1 and G2 help, G3–G5 do not', STD, '4.1M; 0.5M–16M; d192', 4.1e6,
        [part('G5 − G1', loss(ST, 'G5', 'G1-elementwise'), +1, budget=('G5', 'G1-elementwise'),
              size=('G5', 'G1-elementwise')),
         part('G3 − G1', loss(ST, 'G3-elementwise', 'G1-elementwise'), +1)]),
    row(4, 'Elementwise ≥ headwise > head-shared', STD, '4.1M', 4.1e6,
        [part('headwise − elementwise', loss(ST, 'G1-headwise', 'G1-elementwise'), +1)]),
    row(5, 'Sigmoid is the best activation', MECH, '4.1M; 0.5M–16M; d192', 4.1e6,
        [part('tanh − sigmoid', loss(SM, 'G1-tanh', 'G1-elementwise'), +1, budget=('G1-tanh', 'G1-elementwise'),
              size=('G1-tanh', 'G1-elementwise')),
         part('SiLU gate − sigmoid', loss(ST, 'G1-silu', 'G1-elementwise'), +1, budget=('G1-silu', 'G1-elementwise'))]),
    row(6, 'Multiplicative beats additive', MATRIX, '205k', 205e3,
        [part('additive SiLU − G1', loss(('table1_positions',), 'G1-additive-silu', 'G1-elementwise'), +1, 3)]),
    row(7, 'Per-head RMSNorm helps', STD, '4.1M', 4.1e6,
        [part('RMSNorm − baseline', loss(ST, 'G1-rmsnorm-control', 'baseline'), -1)]),
    row(8, 'Non-linearity explains part, not all', MECH, '4.1M; 0.5M–16M', 4.1e6,
        [part('SiLU-only − G1', loss(SM, 'G1-silu-only', 'G1-elementwise'), +1, budget=('G1-silu-only', 'G1-elementwise'))]),
    row(9, 'Input dependence matters', MECH, '4.1M', 4.1e6,
        [part('input-independent − G1', loss(SM, 'G1-input-independent', 'G1-elementwise'), +1)]),
    row(10, 'The gate is sparse (mean ≈ 0.12)', STD, '4.1M', 4.1e6,
        [part('G1 gate mean (a level; paper 0.116)', gate_mean(SM, 'G1-elementwise'), ('level', 0.116), 3)]),
    row(11, 'Sparsity matters (NS-sigmoid weaker)', MECH, '4.1M', 4.1e6,
        [part('NS-sigmoid − G1', loss(SM, 'G1-ns-sigmoid', 'G1-elementwise'), +1)]),
    row(12, 'First-token attention sink removed', '#bigram-backcopy-sinks-issue-15', '2.05M (BB)', 2.05e6,
        [part('BOS attention, G1 − baseline (Welch)', bb_bos(('bb_sink',), 'G1-elementwise', 'baseline'), -1, 3),
         part('runs with a sink at the end, G1 (a rate; paper: removed)', sink_rate(('bb_sink',), 'G1-elementwise'),
              ('level', 0.0), 2)]),
    row(13, 'Massive activations cut', MATRIX, '205k', 205e3,
        [part('M-Act, SiLU-only − G1', metric_pair(('table3_nonlinearity',), 'G1-silu-only', 'G1-elementwise', m_act),
              +1, 2)], note='the parameter-free control cuts it as much'),
    row(14, 'High lr: gated trains, baseline degrades', '#lr-stress-test-issue-14', '2.05M; edge 0.6M', 2.05e6,
        [part('(G1 − base) at 3e-2 − at 3e-3', lr_interaction('lr_stress', '3.0e-2', '3.0e-3'), -1)] + edge_parts(),
        edge=True),
    row(15, '(follow-up) The gate eases int8', AT4, '4.1M', 4.1e6,
        [part('ΔPPL% W8A8, G1 − baseline', metric_pair(ST, 'G1-elementwise', 'baseline', quant_dppl('w8-a8tensor')),
              -1, 2)]),
    row(16, '(follow-up) Gate scores mark skippable heads', AT4, '4.1M', 4.1e6,
        [part('ΔPPL, gate − random drop, headwise τ 0.05', drop_vs_random(ST, 'G1-headwise', '0.05'), -1, 2)],
        note='headwise'),
    row(17, 'Long context: gated extrapolates better after YaRN', '#long-context-issue-6', '410k', 410e3,
        [part('16×/1× PPL, G1 − baseline, YaRN', metric_pair(('long_context',), 'G1-elementwise', 'baseline', yarn_ratio),
              -1, 3)]),
    row(18, '(follow-up, top-k) G1 helps top-k more than dense (sparse − dense gap smaller with it)', SPARSE,
        '4.1M, T 512', 4.1e6,
        [part('(top-64 G1 − dense G1) − (top-64 − dense)', gap_gain(64), -1, half=gap_gain(64, at_half))],
        curves=True),
    row(19, '(follow-up, top-k) G1 frees the sink\'s share of the k budget', SPARSE, '4.1M, T 512', 4.1e6,
        [part('P(0 ∈ S_t), top-64 G1 − top-64', p0_gain(64), -1)], curves=True),
    row(20, '(follow-up, MLA) G1\'s gain survives on latent KV', SPARSE, '4.1M, T 512', 4.1e6,
        [part('MLA G1 − MLA', mla_loss('MLA-G1', 'MLA'), -1, half=mla_loss('MLA-G1', 'MLA', at_half))],
        curves=True),
    row(21, '(DeepSeek-V2) MLA no worse than MHA at a fraction of the cache', SPARSE, '4.1M, T 512', 4.1e6,
        [part('MLA − MHA', mla_loss('MLA', 'MHA'), ('noworse', MARGIN), half=mla_loss('MLA', 'MHA', at_half))],
        curves=True),
]
