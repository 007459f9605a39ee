#!/usr/bin/env python3
"""Tests of tools/rerun_rows.py on made-up databases: a row's reads are recorded while it is
computed (every contrast's two rows, the budget curve, the lr-edge cells even when the database
holds none of their runs), pooled runs are listed once, indices print as ranges, a sweep name is
checked before it becomes a path, and --compare tells rows whose words differ.  Run by
`make tools-test`."""
import os
import sqlite3
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'tools'))
sys.path.insert(0, HERE)
import rerun_rows as RR  # noqa: E402
import verdicts as V  # noqa: E402
from test_verdicts import FAILS, check, make_db  # noqa: E402  (one failure list: test_verdicts.FAILS)
from verdict_data import Db  # noqa: E402
from verdict_rows import BUDGETS, EDGE_CELLS, ROWS  # noqa: E402


def test_reads(path):
    """every row's reads hold its contrasts' two rows (with the sweeps pooled as the table pools
    them), row 1 its budget curve, row 14 every lr-edge cell: none of them in the database"""
    ctx = V.Ctx(Db(path), None)
    for r in ROWS:
        reads = RR.record(ctx, r['n'])[0]
        for p in r['parts']:
            spec = getattr(p['measure'], 'spec', None)
            if spec:
                sweeps, row, ref = spec
                check((tuple(sweeps), row) in reads and (tuple(sweeps), ref) in reads,
                      'row %d reads %s: %s and %s' % (r['n'], sweeps, row, ref))
    reads1 = RR.record(ctx, 1)[0]
    for _, sweep in BUDGETS:
        check(((sweep,), 'baseline') in reads1, 'row 1 reads its budget point %s' % sweep)
    reads14 = RR.record(ctx, 14)[0]
    for _, sweeps, base, g1 in EDGE_CELLS:
        check((tuple(sweeps), base) in reads14 and (tuple(sweeps), g1) in reads14,
              'row 14 reads the lr-edge cell %s without its runs' % (sweeps,))
    check(ctx.db.reads is None, 'recording stops after a row')
    rem = RR.record(ctx, 'remedies')[0]
    check(any(label == 'softmax1' for _, label in rem) and any(label == 'G1-elementwise' for _, label in rem),
          'the remedies table reads its remedy rows and G1: %s' % rem[:4])
    sp = RR.record(ctx, 'sparse')[0]
    check(any(sw == ('t512_topk',) and label == 'oracle64' for sw, label in sp), 'the T 512 table reads its controls')


def refused(fn, values, what):
    """fn(v) raises RR.Bad for every v"""
    for v in values:
        try:
            fn(v)
            check(False, '%s %r refused' % (what, v))
        except RR.Bad:
            pass


def plant_run(h, sweep, rid, label, seed, idx, loss):
    """one finished Haswell run of a sweep row with its final validation loss"""
    h.execute("INSERT INTO runs VALUES (?, 'finished', ?, 1, ?, ' Haswell ', '{}', 0, 0, NULL)", (rid, seed, 'c' * 40))
    h.execute("INSERT INTO sweep_runs VALUES (?, ?, ?, ?, ?, 0)", (sweep, rid, label, seed, idx))
    h.execute("INSERT INTO summary VALUES (?, 'val_loss', '', ?, NULL)", (rid, loss))


def test_pooling_and_ranges():
    plans = RR.Plans('/nonexistent', 'gated', 'x.db')
    plans.cache = {'s1': [{'index': 0, 'label': 'x', 'run_id': 'r1'}, {'index': 1, 'label': 'y', 'run_id': 'r9'}],
                   's2': [{'index': 3, 'label': 'x', 'run_id': 'r1'}, {'index': 4, 'label': 'x', 'run_id': 'r2'}]}
    got = RR.runs_of(plans, [(('s1', 's2'), 'x')])
    check(got == {'s1': [(0, 'x', 'r1')], 's2': [(4, 'x', 'r2')]}, 'a run two sweeps share is listed once: %s' % got)
    check(RR.ranges([8, 0, 1, 2, 5, 7, 2]) == '0-2,5,7-8', 'ranges: %s' % RR.ranges([8, 0, 1, 2, 5, 7, 2]))
    check(RR.ranges([]) == '', 'no indices: empty')
    refused(plans.runs, ('../x', 'a b', 'nosuch'), 'sweep name')
    for text, ok in (('1,18', [1, 18]), ('all', [r['n'] for r in ROWS] + ['remedies', 'sparse']),
                     ('sparse,2', ['sparse', 2])):
        check(RR.parse_rows(text) == ok, 'rows %s' % text)
    refused(RR.parse_rows, ('0', '1,', '99', 'x', '-1', 'Sparse', 'remedies;1'), 'rows')


def plant_row9(path):
    """3 seeds of row 9 (input-independent − G1) in standard_mech, input-independent worse by 0.01"""
    h = sqlite3.connect(path)
    for i, (label, v) in enumerate((('G1-elementwise', 1.00), ('G1-input-independent', 1.01))):
        for seed in (1, 2, 3):
            rid = 'p%d%d' % (i, seed)
            loss = v + 0.001 * seed
            plant_run(h, 'standard_mech', rid, label, seed, i * 3 + seed, loss)
            h.execute("INSERT INTO metrics VALUES (?, 100, 'val_loss', '', ?)", (rid, loss))
    h.commit()
    h.close()


def test_compare(empty, planted):
    a, b = V.Ctx(Db(empty), None), V.Ctx(Db(planted), None)
    text, differ = RR.compare_text(a, a, [9, 14, 'remedies', 'sparse'], ('x', 'x'))
    check(differ == 0 and 'WORDS DIFFER' not in text, 'a database against itself: the same words')
    text, differ = RR.compare_text(a, b, [1, 9], ('empty', 'planted'))
    check(differ == 1, 'one row of two differs: %d' % differ)
    check('row 9: ' in text and 'WORDS DIFFER' in text.split('row 9: ')[1], 'row 9 is the one: ' + text)
    check('**reproduced**' in text.split('row 9: ')[1], 'the planted row reads reproduced: ' + text)


def test_same_runs(planted, d):
    """the runs a row reads that both databases hold, and those whose every metric row is equal: a
    copy with one value changed (and one extra row, as a probe added since) has one run fewer equal"""
    import shutil
    other = os.path.join(d, 'o.db')
    shutil.copy(planted, other)
    h = sqlite3.connect(other)
    h.execute("UPDATE metrics SET value = value + 1e-12 WHERE run_id = 'p12'")
    h.execute("INSERT INTO metrics VALUES ('p11', 100, 'new_probe', '', 0.5)")
    h.commit()
    h.close()
    a, b = V.Ctx(Db(planted), None), V.Ctx(Db(other), None)
    reads = RR.record(a, 9)[0]
    check(RR.same_runs(a, a, reads) == (6, 6), 'a database against itself: 6 of 6 equal')
    check(RR.same_runs(a, b, reads) == (6, 5), 'one changed value: 5 of 6 equal: %s' % (RR.same_runs(a, b, reads),))


def plant_standard(path):
    """row 15's runs (standard: baseline and G1, seeds 1-3), W8A8 evaluated for seeds 1-2 only"""
    h = sqlite3.connect(path)
    for i, label in enumerate(('baseline', 'G1-elementwise')):
        for seed in (1, 2, 3):
            rid = 's%d%d' % (i, seed)
            plant_run(h, 'standard', rid, label, seed, i * 3 + seed, 1.0)
            for ctx, v in (('quant=float', 10.0), ('quant=w8-a8tensor', 10.1 + 0.01 * i + 0.001 * seed)):
                if seed < 3:
                    h.execute("INSERT INTO metrics VALUES (?, 0, 'infer_ppl', ?, ?)",
                              (rid, 'split=val,len=128,' + ctx, v))
    h.commit()
    h.close()


def test_evals_and_units(path):
    """a row whose metric comes from a gated eval pass names that pass; a run without it is left out,
    not a crash; a table's units ignore the commits paragraph and show a moved row as one change"""
    plant_standard(path)
    ctx = V.Ctx(Db(path), None)
    check(ctx.rows[15]['stats'][0].n == 2, 'row 15 reads the 2 evaluated seeds: %d' % ctx.rows[15]['stats'][0].n)
    by = {'standard': [(i * 3 + s, lab, 's%d%d' % (i, s)) for i, lab in enumerate(('baseline', 'G1-elementwise'))
                       for s in (1, 2, 3)]}
    ev = RR.evals_of(RR.record(ctx, 15)[1], by)
    check(ev == {('quant', 'standard'): {'s01', 's02', 's03', 's11', 's12', 's13'}},
          'row 15 needs the quantization pass on the runs it reads (no dropped heads): %s' % ev)
    check(RR.evals_of(RR.record(ctx, 9)[1], by) == {}, 'row 9 needs no eval pass')
    check(RR.pass_of('infer_ppl', {'split=val,len=128,drop=gate,tau=0.05'}) == 'infer', 'dropped heads: infer')
    check(RR.pass_of('eval_ppl', {'x'}) == 'evals' and RR.pass_of('val_loss', {''}) is None, 'evals; no pass')
    # against a database that holds the runs: only those without the metric are named
    miss = RR.evals_missing({('quant', 'standard'): {'s01', 's03', 'nosuch'}}, Db(path))
    check(miss == [('quant', 'standard', ['s03'])], 'the pass is made only where it is missing: %s' % miss)
    miss = RR.evals_missing({('infer', 'standard'): {'s01'}}, Db(path))
    check(miss == [('infer', 'standard', ['s01'])], 'quantized but no dropped heads: the infer pass is missing')
    dup = [(('standard',), 'baseline'), (('standard', 'standard_mech'), 'baseline')]
    check(RR.same_runs(ctx, ctx, dup) == (3, 3), 'a run two reads share counts once: %s' % (RR.same_runs(ctx, ctx, dup),))
    a = '| x | 1 |\n| y | 2 |\n\n*Commits*: made at abc1234.\n\n- **r** better on\n  BB sinks\n'
    b = '| new | 4 |\n| x | worse |\n| y | 3 |\n\n*Commits*: made at def5678.\n\n- **r** better on BB sinks\n'
    ua, ub = RR.units(a), RR.units(b)
    check(ua == ['| x | 1 |', '| y | 2 |', '- **r** better on BB sinks'], 'units: %s' % ua)
    wa = ('-', ua, 0, '', [RR.NUMBER.sub('#', x) for x in ua])
    wb = ('-', ub, 0, '', [RR.NUMBER.sub('#', x) for x in ub])
    out, other = RR.table_lines('a', wb, wa), RR.table_lines('b', wa, wb)
    check('1 not in the other' in out[0] and out[1].strip() == '| x | 1 |' and len(out) == 2,
          'a row added above shifts nothing; the changed row is the one change: %s' % out)
    check('2 not in the other' in other[0], 'the other side: the new row and the changed one: %s' % other)


def main():
    with tempfile.TemporaryDirectory() as d:
        empty, planted = os.path.join(d, 'e.db'), os.path.join(d, 'p.db')
        make_db(empty)
        make_db(planted)
        plant_row9(planted)
        test_reads(empty)
        test_pooling_and_ranges()
        test_compare(empty, planted)
        test_same_runs(planted, d)
        test_evals_and_units(planted)
    print('test_rerun_rows: %s' % ('%d failures' % len(FAILS) if FAILS else 'ok'))
    return 1 if FAILS else 0


if __name__ == '__main__':
    sys.exit(main())
