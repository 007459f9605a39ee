#!/usr/bin/env python3
"""verdict_sparse.py -- results/README.md's table of the attention designs the gate is weighed
against (issue 37): top-k sparse attention with DeepSeek's lightning indexer and its controls
(t512_topk), and multi-head latent attention against the KV layouts it replaces (t512_mla), each
with and without G1, at T 512 on Brown; then the four questions of the issue, answered by rule.
Every number is read from gated.db; a row that is not in the database yet shows n = 0.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import verdict_rules as R  # noqa: E402
from toolstats import rewrap  # noqa: E402
from verdict_data import holm_family, paired_stat  # noqa: E402
from verdict_remedies import ci as remedy_ci  # noqa: E402
from verdict_rows import (MLA, TOPK, at_half, flat_rule, gap_gain, late_eval, mla_gain_dd,  # noqa: E402
                          mla_loss, p0_gain)

SWEEPS = ((TOPK, 'dense', ('dense', 'dense-G1', 'topk64', 'topk64-G1', 'topk32', 'topk32-G1', 'topk64-G1-headwise',
                           'window64', 'random64', 'oracle64')),
          (MLA, 'MHA', ('MHA', 'MHA-G1', 'MLA', 'MLA-G1', 'MQA', 'MLA-noR', 'MLA-G1-headwise')))

RULE_TEXT = (
    '*How this is made* (`tools/verdict_sparse.py`, from `gated.db`; `make check-results` fails when it '
    'differs). Δ loss: final validation loss (read at the minimum where the curve turned up) minus the '
    'sweep\'s reference row (dense, or MHA), paired by seed, 95% t interval, none from fewer than 3 seeds; '
    'Holm p within each sweep, over the rows with 3 seeds or more. *Is it still moving?* One budget was run, so two checks inside the runs: Δ at ½ '
    'run is the same contrast at the evaluation half-way through (step 1,000 of 2,000), on the same cosine '
    'schedule (a point on the way, not a run of half the budget), and the answers give it as *half-way*; '
    'late drop is results/budget_plan.md\'s flatness rule on the evaluations these runs have: the validation '
    'loss at the last evaluation at or before ¾ of the run (step 1,400: ¾ of 2,000 falls between two; so the '
    'drop spans the last 30%) minus the last one, as evaluated, mean over seeds, against the sd of the last '
    'ones over seeds (none below 3 seeds): **flat** when the drop lies strictly between −sd and +sd, '
    '**falling** at +sd or above (the deltas are then those of models still learning), **rising** at −sd or '
    'below. At the last evaluation, means over seeds: sparse − dense, same weights: the '
    'validation loss minus that of the same weights run dense (negative where the weights, trained sparse, run '
    'worse dense; the gap the answers and row 18 ask about is between models, top-k − dense, each trained so), '
    'the indexer\'s recall of the dense attention mass and P(0 ∈ S_t), the share '
    'of selections holding position 0 (`sparse_dense_gap`, `sparse_recall`, `sparse_p0`). Cache: numbers '
    'kept per token and layer at decode (the indexer row adds its key). *Answers*: a difference of '
    'differences paired by seed (e.g. (top-k G1 − dense G1) − (top-k − dense)) with its 95% t interval: '
    '**yes** / **no** when it excludes 0 on the asked side / the other, **within noise** when it spans 0, '
    '**unresolved (n = k)** below 3 seeds. "No worse" (MLA against MHA, non-inferiority) is **yes** when '
    'the interval\'s top is below 0.01 nats per byte, **no** when its bottom is above it, else **within noise** '
    '(the verdict table\'s row 21, by the same rule). *Smaller on MLA?* is **yes** when (MLA G1 − MLA) − '
    '(MHA G1 − MHA) excludes 0 above it: G1\'s gain, a negative Δ, is smaller in size on MLA.')


def cfg_cache(cfg):
    """numbers cached per token and layer, from a run's config (defaults as config_schema.c)"""
    H = cfg.get('model.n_head', 4)
    hk = cfg.get('model.n_kv_head', 0) or H
    dh = cfg.get('model.d_head', 0) or cfg.get('model.d_model', 128) // H
    if cfg.get('model.attention.kv', 'heads') == 'latent':
        dc, dr = cfg.get('model.attention.d_c', 0), cfg.get('model.attention.d_R', -1)
        n = (dc if dc > 0 else 4 * dh) + (dr if dr >= 0 else dh // 2 - (dh // 2) % 2)  # 0 / -1: the schema's defaults
    else:
        n = 2 * hk * dh
    if cfg.get('model.attention.sparse', 'none') == 'indexer':
        n += cfg.get('model.attention.indexer_dim', 32)
    return n


def last_mean(db, rows, key):
    xs = [db.last(r.run_id, key) for r in rows.values()]
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else None


def answer(st, want_sign):
    if st.n < R.MIN_N or st.lo is None:
        return '**unresolved (n = %d)**' % st.n
    if st.hi < 0 or st.lo > 0:
        return '**yes**' if (st.hi < 0) == (want_sign < 0) else '**no**'
    return '**within noise**'


def ci(st, d=4):
    return remedy_ci(st, d, 'n = 0')


def fmt(x, d=3):
    return '–' if x is None else R.fmt(x, d, False)


def flatness(db, rows):
    """a row's late-drop cell: verdict_rows.flat_rule's drop, sd and word, or the drops below 3 runs"""
    drops, drop, sd, word = flat_rule(db, rows)
    if word is None:
        return '–' if not drops else 'n = %d: no sd (%s)' % (len(drops), ', '.join(R.fmt(x, 4) for x in drops))
    return '%s, sd %s: %s' % (R.fmt(drop, 4), R.fmt(sd, 4, False), word)


def late_steps(db):
    """(the last evaluation at or before 3/4 of the run, the last one) of the first T 512 run held"""
    for sw, _ref, labels in SWEEPS:
        for lab in labels:
            for r in db.row(sw, lab).values():
                c = db.val_curve(r.run_id)
                late = late_eval(c)
                if late is not None:
                    return late, max(c)
    return None


def sparse_text(db):
    ls = late_steps(db)
    lines = ['| sweep | row | seeds | Δ loss vs ref. [CI] (Holm p) | Δ at ½ run | late drop%s | '
             'sparse − dense, same weights | recall | P(0 ∈ S) | cache / token / layer | params |' % (' (%d → %d)' % ls if ls else ''),
             '|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|']
    half = db.val_at(0.5)
    for sw, ref, labels in SWEEPS:
        stats = {lab: paired_stat(db, (sw, lab), (sw, ref), db.val_loss) for lab in labels if lab != ref}
        adj = holm_family((lab, st.n, st.p) for lab, st in stats.items())
        for lab in labels:
            rows = db.row(sw, lab)
            cfg = first_cfg(db, rows)
            cache = cfg_cache(cfg) if cfg is not None else None
            params = last_params(db, rows)
            d = 'ref.' if lab == ref else ci(stats[lab]) + (' (%.2g)' % adj[lab] if lab in adj else '')
            dh = 'ref.' if lab == ref else ci(paired_stat(db, (sw, lab), (sw, ref), half))
            lines.append('| %s | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s |' % (
                sw[0], lab, len(rows), d, dh, flatness(db, rows), fmt(last_mean(db, rows, 'sparse_dense_gap'), 4),
                fmt(last_mean(db, rows, 'sparse_recall')), fmt(last_mean(db, rows, 'sparse_p0')),
                '–' if cache is None else cache, '–' if params is None else '%d' % params))
    gap64, gap32, p064, p032 = gap_gain(64)(db), gap_gain(32)(db), p0_gain(64)(db), p0_gain(32)(db)
    gap64h, gap32h = gap_gain(64, at_half)(db), gap_gain(32, at_half)(db)
    mla, g_mla, g_mha, g_dd = (mla_loss('MLA', 'MHA')(db), mla_loss('MLA-G1', 'MLA')(db),
                               mla_loss('MHA-G1', 'MHA')(db), mla_gain_dd()(db))
    mlah, g_mlah = mla_loss('MLA', 'MHA', at_half)(db), mla_loss('MLA-G1', 'MLA', at_half)(db)
    g_ddh = mla_gain_dd(at_half)(db)
    match = '**%s**' % {'reproduced': 'yes', 'contradicted': 'no', 'inconclusive': 'within noise',
                        'not reproduced': 'within noise'}.get(R.verdict(mla, ('noworse', R.MARGIN), 4.1e6),
                                                              'unresolved (n = %d)' % mla.n)
    qs = [
        '- *Does G1 shrink the sparse − dense gap?* top-64: %s, (top-64 G1 − dense G1) − (top-64 − dense) = %s '
        '(half-way: %s); top-32: %s, %s (half-way: %s).' % (answer(gap64, -1), ci(gap64), ci(gap64h),
                                                             answer(gap32, -1), ci(gap32), ci(gap32h)),
        '- *Does G1 lower P(0 ∈ S_t)?* top-64: %s, top-64 G1 − top-64 = %s; top-32: %s, top-32 G1 − top-32 = %s.' % (
            answer(p064, -1), ci(p064), answer(p032, -1), ci(p032)),
        '- *Is MLA no worse than MHA (by %g nats) at a fraction of the cache?* %s: MLA − MHA = %s (half-way: %s).' % (
            R.MARGIN,
            match, ci(mla), ci(mlah)),
        '- *Does G1\'s gain survive on MLA?* %s: MLA G1 − MLA = %s (half-way: %s); on this sweep\'s MHA, '
        'MHA G1 − MHA = %s; is it smaller on MLA? %s: (MLA G1 − MLA) − (MHA G1 − MHA) = %s (half-way: %s).' % (
            answer(g_mla, -1), ci(g_mla), ci(g_mlah), ci(g_mha), answer(g_dd, 1), ci(g_dd), ci(g_ddh)),
    ]
    p0 = p0_layers(db)
    return '\n'.join(lines) + '\n\n' + (p0 + '\n' if p0 else '') + '\n'.join(qs) + '\n\n' + rewrap(RULE_TEXT)


def first_cfg(db, rows):
    """the stored config of a row's first run ({seed: run}; a row's runs differ only in the seed), or None"""
    if not rows:
        return None
    return json.loads(db.scalar('SELECT config_json FROM runs WHERE run_id = ?',
                               (next(iter(rows.values())).run_id,)) or '{}')


def chance_p0(k, T):
    """P(0 in S_t) of k keys drawn at random, over the queries t >= k of a window of T"""
    return sum(k / (t + 1) for t in range(k, T)) / (T - k) if T > k else None


def p0_layers(db):
    """P(0 in S_t) layer by layer (the probe's per-layer rows, mean over seeds) for every t512_topk
    row that has it, beside the chance level of its k; a paragraph, or '' before any such run"""
    cells, chance = [], {}
    for lab in SWEEPS[0][2]:
        rows = db.row(TOPK, lab)
        cfg = first_cfg(db, rows)
        if cfg is None:
            continue
        per = []
        for layer in range(cfg.get('model.n_layer', 4)):
            xs = [x for x in (db.last(r.run_id, 'sparse_p0', 'layer=%d' % layer) for r in rows.values())
                  if x is not None]
            per.append(sum(xs) / len(xs) if xs else None)
        if all(x is None for x in per):
            continue
        k, T = cfg.get('model.attention.topk', 64), cfg.get('model.seq_len', 128)
        if chance_p0(k, T) is not None:
            chance[(k, T)] = chance_p0(k, T)
        cells.append('%s %s' % (lab, ' / '.join('–' if x is None else '%.2f' % x for x in per)))
    if not cells:
        return ''
    return rewrap('*P(0 ∈ S_t) layer by layer* (from the first layer up, mean over seeds; k keys drawn at random '
                  'would hold position 0 with probability %s, the mean over t ≥ k of k/(t + 1)): %s.' % (
                      ', '.join('%.3f at k %d' % (c, k) + ('' if len({t for _, t in chance}) == 1 else ', T %d' % T)
                                for (k, T), c in sorted(chance.items(), reverse=True)),
                      '; '.join(cells)))


def last_params(db, rows):
    xs = [db.summary(r.run_id, 'params') for r in rows.values()]
    xs = [x for x in xs if x is not None]
    return xs[0] if xs else None
