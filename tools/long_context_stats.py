#!/usr/bin/env python3
"""long_context_stats.py -- the long-context tables and tests of results/README.md "Long context (issue 6)".

Usage: tools/long_context_stats.py DB [--split val|test]     (default val; read-only)

Sweeps long_context (trained at 128: 1x = 128, 16x = 2048 with RoPE scaling none, ntk, yarn) and
long_context_continued (continued at 512: 1x = 512, 4x = 2048 with none, yarn); rows are
sweep_runs.label (the baseline first), finished runs only. Perplexity is `gated eval`'s metric
eval_ppl at context "split=S,len=L,scaling=K,factor=F", each context's value at its latest step
(a re-evaluation replaces it), as the report does (core/lab/report/report_load.c); where a run has several
factors at one (L, K), the automatic one, max(1, L / model.seq_len).
Prints per row: mean +- sample std over seeds at 1x and at the long length per scaling, with the
ratio of the means (long / 1x); then, paired by seed against the baseline, the difference of the
per-seed ratio ppl(long) / ppl(1x), and of the perplexities themselves (gated - baseline): mean +-
sd, 95% t CI and the two-sided paired t-test p (df = n - 1).
"""
import argparse, math, os, sqlite3, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from toolstats import connect_ro, mean_sd, paired, show

# sweep, what it is, 1x length, long length, scalings at the long length
SWEEPS = (('long_context', 'trained at 128', 128, 2048, ('none', 'ntk', 'yarn')),
          ('long_context_continued', 'continued at 512, base 1M', 512, 2048, ('none', 'yarn')))


def parse_ctx(ctx):
    """'split=S,len=L,scaling=K,factor=F' -> (S, L, K, F), or None"""
    try:
        kv = dict(p.split('=', 1) for p in ctx.split(','))
        if sorted(kv) != ['factor', 'len', 'scaling', 'split']:
            return None
        return kv['split'], int(kv['len']), kv['scaling'], float(kv['factor'])
    except ValueError:
        return None


def run_ppl(db, run_id, split, seq_len):
    """{(L, scaling): ppl} of one run on split"""
    got = {}
    for ctx, v in db.execute(
            "SELECT m.context, m.value FROM metrics m WHERE m.run_id = ? AND m.key = ? AND m.step = "
            "(SELECT max(x.step) FROM metrics x WHERE x.run_id = m.run_id AND x.key = m.key AND x.context = m.context)",
            (run_id, 'eval_ppl')):
        p = parse_ctx(ctx)
        if p and p[0] == split and v is not None and not math.isnan(v):
            got.setdefault((p[1], p[2]), {})[p[3]] = v
    out = {}
    for (L, k), byf in got.items():
        if len(byf) == 1:
            out[(L, k)] = next(iter(byf.values()))
        elif seq_len:
            want = max(1.0, L / seq_len)
            out.update({(L, k): v for f, v in byf.items() if abs(f - want) <= 1e-5 * want})
    return out


def cell(xs, ref=None):
    if not xs:
        return '–'
    m, s = mean_sd(xs)
    t = '%.2f ± %.2f' % (m, s) if len(xs) > 1 else '%.2f' % m
    return t + (' (×%.2f)' % (m / mean_sd(ref)[0]) if ref else '')


def one_sweep(db, split, sweep, what, L1, LK, scalings):
    runs = db.execute(
        "SELECT sr.label, sr.seed, sr.is_baseline, r.run_id, r.status, CASE WHEN json_valid(r.config_json) "
        "THEN json_extract(r.config_json, ?) END FROM sweep_runs sr JOIN runs r USING (run_id) "
        "WHERE sr.sweep = ? ORDER BY sr.is_baseline DESC, sr.idx, sr.seed", ('$."model.seq_len"', sweep)).fetchall()
    print('== sweep %s (%s), split %s' % (sweep, what, split))
    if not runs:
        print('no runs of sweep %s in this database\n' % sweep)
        return
    rows, base, data, nfin = [], None, {}, 0
    for label, seed, is_base, rid, status, seq_len in runs:
        if label not in rows:
            rows.append(label)
        if base is None and is_base:
            base = label
        if status != 'finished':
            continue
        nfin += 1
        if (label, seed) in data:
            print('note: %s seed %d has more than one finished run; using the first' % (show(label), seed))
            continue
        data[(label, seed)] = run_ppl(db, rid, split, seq_len if isinstance(seq_len, (int, float)) else None)
    print('%d runs, %d finished; %d with eval_ppl on split %s' % (
        len(runs), nfin, sum(bool(d) for d in data.values()), split))
    if not any(data.values()):
        print('no `gated eval` results (eval_ppl) on split %s for this sweep\n' % split)
        return
    f = LK // L1
    cols = [((L1, 'none'), '1x (%d)' % L1)] + [
        ((LK, k), ('%dx (%d), %s' % (f, LK, k)) if i == 0 else '%dx, %s' % (f, k)) for i, k in enumerate(scalings)]

    def vals(label, key):
        return {s: d[key] for (l, s), d in data.items() if l == label and key in d}

    print('perplexity, mean ± std over seeds (n-1), ratio = long mean / 1x mean')
    print('%-26s %3s' % (what, 'n') + ''.join('  %-22s' % c for _, c in cols))
    for label in rows:
        one = list(vals(label, cols[0][0]).values())
        print('%-26s %3d' % (show(label), len(one)) + ''.join(
            '  %-22s' % cell(list(vals(label, key).values()), one if i else None) for i, (key, _) in enumerate(cols)))

    if base is None:
        print('no baseline row (sweep_runs.is_baseline): no paired tests\n')
        return
    print('\npaired by seed vs %s (gated - baseline): mean ± sd, 95%% t CI, two-sided paired t p (df n-1)' % show(base))
    print('%-22s %-30s %3s  %-18s %-20s %s' % ('row', 'quantity', 'n', 'Δ mean ± sd', '95% CI', 'p'))

    def ratio(label, k):
        a, b = vals(label, (LK, k)), vals(label, (L1, 'none'))
        return {s: a[s] / b[s] for s in a if s in b}

    for label in rows:
        if label == base:
            continue
        tests = [('ratio %dx/1x, %s' % (f, k), ratio(label, k), ratio(base, k), '%.3f') for k in scalings]
        tests += [('ppl %s' % c, vals(label, key), vals(base, key), '%.2f') for key, c in cols]
        for name, g, b, fmt in tests:
            d = [g[s] - b[s] for s in sorted(g) if s in b]
            r = paired(d)
            if not r:
                print('%-22s %-30s %3d  –' % (show(label), name, len(d)))
                continue
            ms = ('%+' + fmt[1:] + ' ± ' + fmt) % (r[0], mean_sd(d)[1])
            ci = ('[%+' + fmt[1:] + ', %+' + fmt[1:] + ']') % (r[1], r[2])
            print('%-22s %-30s %3d  %-18s %-20s %.3g' % (show(label), name, len(d), ms, ci, r[3]))
    print()


def main():
    ap = argparse.ArgumentParser(description='long-context tables and paired tests (results/README.md, issue 6)')
    ap.add_argument('db')
    ap.add_argument('--split', choices=('val', 'test'), default='val')
    a = ap.parse_args()
    if not os.path.isfile(a.db):
        sys.stderr.write('long_context_stats.py: %s: no such database file\n' % show(a.db))
        sys.exit(2)
    try:
        db = connect_ro(a.db)
        for sweep in SWEEPS:
            one_sweep(db, a.split, *sweep)
    except sqlite3.Error as e:
        sys.stderr.write('long_context_stats.py: %s: %s\n' % (show(a.db), show(e)))
        sys.exit(2)


if __name__ == '__main__':
    main()
