#!/usr/bin/env python3
"""rerun_rows.py -- what a row of the verdict table rests on, and how to rerun it.

Usage: tools/rerun_rows.py ROWS [--db results/gated.db] [--gated build/gated] [--root DIR]
       tools/rerun_rows.py ROWS --indices
       tools/rerun_rows.py ROWS --compare MINE.db

ROWS: row numbers of the verdict table (results/README.md), comma-separated (1,18), the names of
the two tables beside it (remedies: the sink remedies of issue 36; sparse: the T 512 designs of
issue 37), or all (every row and both tables).

The runs a row reads are recorded while the row is computed, by tools/verdicts.py's own code on
--db (every (sweeps, label) its contrasts, budget curve, second size, lr-edge cells and half-way
reads ask for, and the metric keys it reads: a key no sweep makes names the gated eval pass that
does), so the list follows the table's code.  Each is mapped to the runs of the sweep
files (`gated sweep experiments/SWEEP.yaml --dry-run --json`), pooled as the table pools them: a
run that two of the sweeps share (one run id) is listed once, under the first.

  (default)   the plan: per row and sweep, the labels, the run indices, how many of those runs
              --db holds finished or diverged, the OpenBLAS kernels they were made with and their
              recorded wall time; then the commands that rerun them into a database of your own
  --indices   one line per sweep, "sweep SWEEP INDICES", for every row asked (run_all.sh --rows)
  --evals TARGET.db
              one line per gated eval pass the rows need whose runs TARGET holds finished without
              its metric: "eval PASS SWEEP RUN_ID..." (PASS: run_all.sh's eval_pass of that name;
              metrics such as infer_ppl that no sweep makes); run_all.sh --rows reads them after
              the sweeps
  --check     only check ROWS
  --compare MINE.db
              each row computed from MINE.db beside --db's: the verdict, Δ [95% CI], seeds,
              kernels and trend words, and whether the words are the same

Exit 0; 1 --compare found a row whose words differ; 2 bad usage, a missing database or sweep
file, or a row the table does not have.  Read-only.
"""
import argparse
import difflib
import json
import os
import re
import signal
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import verdicts as V  # noqa: E402
from toolstats import show, show_text  # noqa: E402
from verdict_data import Db  # noqa: E402
from verdict_remedies import remedies_text  # noqa: E402
from verdict_rows import ROWS  # noqa: E402
from verdict_sparse import sparse_text  # noqa: E402

# the generated tables beside the verdict table, read as rows of their own: (title, text(db))
TABLES = {'remedies': ('the sink remedies against the gate (results/README.md, issue 36)', remedies_text),
          'sparse': ('top-k sparse attention and latent KV at T 512 (results/README.md, issue 37)', sparse_text)}

NAME = re.compile(r'^[A-Za-z0-9_.-]+$')
NUMBER = re.compile(r'[−+-]?[0-9][0-9.,]*(e[−+-]?[0-9]+)?')


class Bad(Exception):
    """bad input: exit 2 with this message"""


def parse_rows(text):
    have = [r['n'] for r in ROWS]
    if text == 'all':
        return have + sorted(TABLES)
    out = []
    for x in text.split(','):
        if x in TABLES:
            out.append(x)
        elif not x.isdigit() or int(x) not in have:
            raise Bad('no row "%s" in the verdict table (rows %d-%d, %s, or all)' % (
                show(x), have[0], have[-1], ', '.join(sorted(TABLES))))
        else:
            out.append(int(x))
    return list(dict.fromkeys(out))


def title(ctx, n):
    if n in TABLES:
        return 'table %s: %s' % (n, TABLES[n][0])
    return 'row %d: %s (%s)' % (n, ctx.rows[n]['claim'], ctx.rows[n]['parts'][0]['name'])


# metrics that no sweep makes, by the gated eval pass of run_all.sh that does (its eval_pass names):
# eval_ppl from `evals` (lengths and RoPE scalings), infer_ppl from `infer` (quantization and
# dropped heads) or, where no dropped-head context of the run is read, `quant` (quantization only)
def pass_of(key, contexts):
    if key == 'eval_ppl':
        return 'evals'
    if key == 'infer_ppl':
        return 'infer' if any('drop=' in c for c in contexts) else 'quant'
    return None


def record(ctx, n):
    """row n computed once, recording what it reads: (the (sweeps, label) pairs, in a stable order;
    the (metric key, context, run id) triples; the text it makes: a row's trend cell, a table)"""
    db = ctx.db
    db.reads, db.metric_reads = set(), set()
    try:
        if n in TABLES:
            text = TABLES[n][1](db)
        else:
            c = ctx.rows[n]
            for p in c['parts']:
                p['measure'](db)
            text = V.trend_cell(ctx, c)
        return sorted(db.reads), db.metric_reads, text
    finally:
        db.reads = db.metric_reads = None


def evals_of(metric_reads, by):
    """{(run_all.sh's eval pass, sweep): {run id}} that a row needs: for each metric no sweep makes
    (metric_reads: record's triples), the runs it is read from, under the sweep each is listed under
    (by: runs_of's {sweep: [(index, label, run_id)]})"""
    home = {rid: sw for sw, rs in by.items() for _, _, rid in rs}
    ctxs = {}
    for key, c, rid in metric_reads:
        ctxs.setdefault((key, rid), set()).add(c)
    out = {}
    for (key, rid), cs in ctxs.items():
        kind = pass_of(key, cs)
        if kind and rid in home:
            out.setdefault((kind, home[rid]), set()).add(rid)
    return out


def evals_missing(passes, target):
    """[(pass, sweep, [run id])] of passes whose runs target holds finished but without the pass's
    metric (its eval pass not yet made there)"""
    made = {'evals': ('eval_ppl', '%'), 'infer': ('infer_ppl', '%drop=%'), 'quant': ('infer_ppl', '%quant=%')}
    out = []
    for (kind, sw), rids in sorted(passes.items()):
        need = [rid for rid in sorted(rids) if getattr(target.run(rid), 'status', None) == 'finished' and not
                target.h.execute('SELECT 1 FROM metrics WHERE run_id = ? AND key = ? AND context LIKE ? LIMIT 1',
                                 (rid,) + made[kind]).fetchone()]
        if need:
            out.append((kind, sw, need))
    return out


class Plans:
    """each sweep file's runs (gated sweep --dry-run --json against --db), read once"""

    def __init__(self, root, gated, db):
        self.root, self.gated, self.db, self.cache = root, gated, db, {}

    def runs(self, sweep):
        if sweep not in self.cache:
            path = os.path.join(self.root, 'experiments', sweep + '.yaml')
            if not NAME.match(sweep) or not os.path.isfile(path):
                raise Bad('the table reads sweep "%s", but there is no sweep file %s' % (
                    show(sweep), show(os.path.join('experiments', sweep + '.yaml'))))
            p = subprocess.run([self.gated, 'sweep', path, '--dry-run', '--json', '--db', self.db],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            if p.returncode != 0:
                raise Bad('%s: gated sweep --dry-run failed: %s' % (show(path), show(p.stderr.strip())))
            self.cache[sweep] = json.loads(p.stdout)['runs']
        return self.cache[sweep]


def runs_of(plans, reads):
    """{sweep: [(index, label, run_id)]} of the reads, a run id listed once (first sweep first)"""
    seen, out = set(), {}
    for sweeps, label in reads:
        for sw in sweeps:
            for r in plans.runs(sw):
                if r['label'] == label and r['run_id'] not in seen:
                    seen.add(r['run_id'])
                    out.setdefault(sw, []).append((r['index'], label, r['run_id']))
    return out


def ranges(idx):
    """'0-5,9,12-13' of sorted distinct indices"""
    idx, out, i = sorted(set(idx)), [], 0
    while i < len(idx):
        j = i
        while j + 1 < len(idx) and idx[j + 1] == idx[j] + 1:
            j += 1
        out.append(str(idx[i]) if i == j else '%d-%d' % (idx[i], idx[j]))
        i = j + 1
    return ','.join(out)


def hours(secs):
    return '%.0f min' % (secs / 60) if secs < 3600 else '%.1f h' % (secs / 3600)


def stored(db, run_ids):
    """(runs held finished or diverged, their kernels, their recorded wall seconds)"""
    n, kernels, wall = 0, set(), 0.0
    for rid in run_ids:
        r = db.run(rid)
        if r and r.status in ('finished', 'diverged'):
            n += 1
            kernels.add(r.kernel)
            wall += db.summary(rid, 'wall_s') or 0.0
    return n, kernels, wall


def plan_text(ctx, plans, rows, dbname):
    lines, every, distinct, passes = [], {}, {}, {}
    for n in rows:
        reads, metric_reads, _ = record(ctx, n)
        by = runs_of(plans, reads)
        lines.append(title(ctx, n))
        lines.append('  %-20s %-16s %5s %6s  %-18s %8s  %s' % ('sweep', 'indices', 'runs', 'in db', 'kernels', 'recorded',
                                                             'labels'))
        tot, held, secs = 0, 0, 0.0
        for sw, rs in sorted(by.items()):
            k, kern, wall = stored(ctx.db, [r[2] for r in rs])
            labels = ', '.join(sorted({show(r[1]) for r in rs}))
            lines.append('  %-20s %-16s %5d %6d  %-18s %8s  %s' % (
                sw, ranges(r[0] for r in rs), len(rs), k, '+'.join(sorted(kern)) or '-', hours(wall), labels))
            every.setdefault(sw, set()).update(r[0] for r in rs)
            distinct.setdefault(sw, set()).update(r[2] for r in rs)
            tot, held, secs = tot + len(rs), held + k, secs + wall
        for (kind, sw), rids in sorted(evals_of(metric_reads, by).items()):
            lines.append('  then run_all.sh\'s gated eval pass `%s` on %d of these runs of %s (its metrics come from '
                         'no sweep)' % (kind, len(rids), sw))
            passes.setdefault((kind, sw), set()).update(rids)
        lines.append('  %d runs, %d of them in %s, %s of training as recorded (wall_s of the runs held)\n' % (
            tot, held, dbname, hours(secs)))
    if len(rows) > 1:
        ids = {rid for sw_ids in distinct.values() for rid in sw_ids}
        k, _, wall = stored(ctx.db, sorted(ids))
        lines.append('rows %s together: %d distinct runs, %d of them in %s, %s of training as recorded\n' % (
            ','.join(map(str, rows)), len(ids), k, dbname, hours(wall)))
    lines.append('To rerun them whole into a database of your own (your machine\'s OpenBLAS kernel: every contrast')
    lines.append('then pairs runs of that one kernel; OPENBLAS_CORETYPE=KERNEL remakes the committed runs\' bits where')
    lines.append('this CPU runs that kernel), then compare the rows:')
    for sw, idx in sorted(every.items()):
        lines.append('  build/gated sweep experiments/%s.yaml --db ~/gated-rerun/mine.db --index %s --jobs 2' % (sw, ranges(idx)))
    if passes:
        lines.append('  (then the gated eval passes above: ./run_all.sh --rows makes them on the runs that lack them)')
    lines.append('  tools/rerun_rows.py %s --compare ~/gated-rerun/mine.db' % ','.join(map(str, rows)))
    lines.append('or all of it: ./run_all.sh --rows %s --db ~/gated-rerun/mine.db (a folder outside the checkout: '
                 'logs and the report go beside the database)' % ','.join(map(str, rows)))
    return '\n'.join(lines), every, passes


def words(ctx, n, text):
    """(verdict cell, Δ cell, seeds, kernels, trend words) of row n, text its trend cell (record's);
    of a table (text: the table), its units (rows, bullets, paragraphs) with every number masked"""
    if n in TABLES:
        us = units(text)
        return '-', us, 0, '', [NUMBER.sub('#', x) for x in us]
    c = ctx.rows[n]
    st, p = c['stats'][0], c['parts'][0]
    level = isinstance(p['expect'], tuple) and p['expect'][0] == 'level'
    return (V.verdict_cell(c), V.ci_cell(st, p['digits'], not level), st.n, V.kernel_cell(st),
            re.findall(r'\*\*([^*]+)\*\*', text))


def metric_rows(db, run_id):
    return {r[:3]: r[3] for r in db.h.execute("SELECT step, key, context, value FROM metrics WHERE run_id = ?",
                                               (run_id,))}


def holds_rows(a, b):
    """every metric row of a is in b, bitwise equal (b may hold more: probes added since a was made)"""
    return all(k in b and b[k] == v for k, v in a.items())


def same_runs(ref, mine, reads):
    """(runs of the row that both databases hold, ended; those of which every metric row in --db is in
    MINE.db, bitwise equal)"""
    both = equal = 0
    runs = {r.run_id: r for sweeps, label in reads for r in ref.db.row(sweeps, label, None).values()}
    for r in runs.values():
        m = mine.db.run(r.run_id)
        if r.status in ('finished', 'diverged') and m and m.status == r.status:
            both += 1
            equal += holds_rows(metric_rows(ref.db, r.run_id), metric_rows(mine.db, r.run_id))
    return both, equal


def units(text):
    """a generated table's text as units: each table row, each bullet, each other paragraph (lines
    joined); the *Commits* paragraph is left out (it names the commits, which a rerun changes)"""
    out = []
    for para in re.split(r'\n\s*\n', text):
        lines = [x.strip() for x in para.strip().split('\n') if x.strip()]
        if not lines or lines[0].startswith('*Commits*'):
            continue
        if lines[0].startswith('|'):
            out.extend(lines)
        elif lines[0].startswith('- '):
            for x in lines:
                if x.startswith('- ') or not out:
                    out.append(x)
                else:
                    out[-1] += ' ' + x
        else:
            out.append(' '.join(lines))
    return out


def table_lines(name, mine, w):
    """the units of one side that the other lacks, numbers masked (at most 6 shown)"""
    sm = difflib.SequenceMatcher(a=w[4], b=mine[4], autojunk=False)
    own = [i for op, i1, i2, _, _ in sm.get_opcodes() if op != 'equal' for i in range(i1, i2)]
    out = ['  %-24s %d units (table rows, bullets, paragraphs), %d not in the other%s' % (
        show(name), len(w[1]), len(own), ':' if own else '')]
    out += ['    %s' % show_text(w[1][i][:160]) for i in own[:6]]
    return out


def compare_text(ref, mine, rows, names):
    lines, differ = [], 0
    for n in rows:
        reads, _, text = record(ref, n)
        a, b = words(ref, n, text), words(mine, n, record(mine, n)[2])
        same = (a[0], a[4]) == (b[0], b[4])
        differ += not same
        lines.append('%s: %s' % (title(ref, n), 'the same words' if same else 'WORDS DIFFER'))
        for name, w in zip(names, (a, b)):
            if n in TABLES:
                lines.extend(table_lines(name, b if w is a else a, w))
            else:
                lines.append(show_text('  %-24s %s | %s | %d seeds | %s | trend: %s' % (
                    show(name), w[0], w[1], w[2], w[3] or '-', ', '.join(w[4]) or '-')))
        both, equal = same_runs(ref, mine, reads)
        lines.append('  runs (same run id) in both: %d; every metric row of the first bitwise equal in the second: %d'
                     % (both, equal))
    return '\n'.join(lines), differ


def main(argv):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('rows')
    ap.add_argument('--db', default=os.path.join(root, 'results', 'gated.db'))
    ap.add_argument('--gated', default=os.path.join(root, 'build', 'gated'))
    ap.add_argument('--root', default=root)
    ap.add_argument('--indices', action='store_true')
    ap.add_argument('--compare', metavar='MINE.db')
    ap.add_argument('--evals', metavar='TARGET.db')
    ap.add_argument('--check', action='store_true', help='only check ROWS (exit 2 naming a row the table lacks)')
    a = ap.parse_args(argv)
    try:
        rows = parse_rows(a.rows)
        if a.check:
            return 0
        for p in [a.db] + [x for x in (a.compare, a.evals) if x]:
            if not os.path.isfile(p):
                raise Bad('%s: no such database (make results-db makes results/gated.db)' % show(p))
        ctx = V.Ctx(Db(a.db), None)
        if a.compare:
            text, differ = compare_text(ctx, V.Ctx(Db(a.compare), None), rows, (a.db, a.compare))
            print(text)
            return 1 if differ else 0
        if not os.access(a.gated, os.X_OK):
            raise Bad('%s: no gated binary (make builds it)' % show(a.gated))
        text, every, passes = plan_text(ctx, Plans(a.root, a.gated, a.db), rows, show(os.path.relpath(a.db)))
        if a.evals:
            for kind, sw, rids in evals_missing(passes, Db(a.evals)):
                print('eval', kind, sw, ' '.join(rids))
        elif a.indices:
            for sw, idx in sorted(every.items()):
                print('sweep', sw, ranges(idx))
        else:
            print(text)
        return 0
    except Bad as e:
        print('rerun_rows: %s' % e, file=sys.stderr)
        return 2


if __name__ == '__main__':
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    sys.exit(main(sys.argv[1:]))
