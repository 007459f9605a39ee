#!/usr/bin/env python3
# check_results_readme.py -- recompute, from the database, the numbers that the one-screen
# verdict table at the top of results/README.md quotes, and fail on any mismatch.
#
# Usage: tools/check_results_readme.py [DB] [--readme FILE] [--self-test]
#   DB defaults to results/gated.db (make results-db makes it from results/db/), FILE to
#   results/README.md.  Read-only.  Exit 0 when every checked cell matches, 1 listing each
#   mismatch (row, column, printed, recomputed), 2 on bad usage or a missing database.
#   --self-test also checks a copy of the page with one number changed and fails unless that
#   change is caught.
#
# Why: that table is what a reader quotes; the long evidence sections below it were checked
# by hand, and slips (a sign flipped, a rounding, two numbers swapped) got through.  Each row
# of the table has a number (column 1) and is checked against SPECS[number]: its contrast cell
# must name the spec's contrast, its "Δ [95% CI]" cell must print the recomputed value (mean to
# the digits the spec gives, the t interval to one digit fewer), its seeds cell the number of
# seed pairs, and the first clause of its kernels cell (up to ';') the OpenBLAS kernels of the
# runs the headline contrast compares (runs.openblas_version): one name when both sides ran on
# one kernel, else "ROW vs REFERENCE".  The statistics are toolstats.py's (the report's).
# The database is not in the repository (results/db/ holds its parts), so this runs as
# `make check-results`, not in `make test`.
import math
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from toolstats import connect_ro, mean_sd, paired, show, t_q  # noqa: E402

KERNELS = ('SkylakeX', 'Haswell', 'Prescott', 'Cooperlake', 'Zen', 'Sandybridge')


def kernel_of(version):
    for k in KERNELS:
        if (' %s ' % k) in (version or ''):
            return k
    return 'unknown'


class Db:
    def __init__(self, path):
        self.h = connect_ro(path)

    def runs(self, sweep, label):
        """{seed: (run_id, kernel)} of a row's finished runs"""
        return {s: (r, kernel_of(v)) for s, r, v in self.h.execute(
            "SELECT sr.seed, r.run_id, r.openblas_version FROM sweep_runs sr JOIN runs r USING (run_id) "
            "WHERE sr.sweep = ? AND sr.label = ? AND r.status = 'finished'", (sweep, label))}

    def summary(self, run, key):
        r = self.h.execute("SELECT value FROM summary WHERE run_id = ? AND key = ? AND context = ''",
                           (run, key)).fetchone()
        return r[0] if r else None

    def last(self, run, key, ctx):
        """a metric's value at its last step in context ctx"""
        r = self.h.execute("SELECT value FROM metrics WHERE run_id = ? AND key = ? AND context = ? "
                           "ORDER BY step DESC LIMIT 1", (run, key, ctx)).fetchone()
        return r[0] if r else None

    def max_head(self, run, key):
        """the largest per-head value of a metric at the run's last step of it"""
        r = self.h.execute(
            "SELECT max(value) FROM metrics WHERE run_id = ? AND key = ? AND context LIKE 'layer=%,head=%' AND "
            "step = (SELECT max(step) FROM metrics WHERE run_id = ? AND key = ?)", (run, key, run, key)).fetchone()
        return r[0] if r else None


def welch(x, y):
    """mean difference x - y with Welch's 95% t interval"""
    (mx, sx), (my, sy) = mean_sd(x), mean_sd(y)
    vx, vy = sx * sx / len(x), sy * sy / len(y)
    se = math.sqrt(vx + vy)
    df = (vx + vy) ** 2 / (vx * vx / (len(x) - 1) + vy * vy / (len(y) - 1))
    q = t_q(0.975, df)
    return mx - my, mx - my - q * se, mx - my + q * se


def mean_ci(xs):
    m, s = mean_sd(xs)
    q = t_q(0.975, len(xs) - 1) * s / math.sqrt(len(xs))
    return m, m - q, m + q


def pair(db, a, b, value):
    """per-seed value(row a) - value(row b); a, b = (sweep, label); value(run_id) -> float"""
    ra, rb = db.runs(*a), db.runs(*b)
    seeds = sorted(set(ra) & set(rb))
    d = [value(ra[s][0]) - value(rb[s][0]) for s in seeds]
    return d, {ra[s][1] for s in seeds}, {rb[s][1] for s in seeds}


def val_loss(db):
    return lambda run: db.summary(run, 'val_loss')


def loss_contrast(sweep, row, ref):
    def f(db):
        d, ka, kb = pair(db, (sweep, row), (sweep, ref), val_loss(db))
        return paired(d)[:3], len(d), ka, kb
    return f


def gate_mean(sweep, row):
    def f(db):
        rs = db.runs(sweep, row)
        xs = [db.last(r, 'gate_mean', '') for r, _ in rs.values()]
        return mean_ci(xs), len(xs), {k for _, k in rs.values()}, None
    return f


def bb_bos(sweep, row, ref):
    # the BB head: the query head with the largest BOS attention from other queries (bb_stats.py)
    def f(db):
        ra, rb = db.runs(sweep, row), db.runs(sweep, ref)
        x = [db.max_head(r, 'bb_bos_attn_other') for r, _ in ra.values()]
        y = [db.max_head(r, 'bb_bos_attn_other') for r, _ in rb.values()]
        return welch(x, y), len(x), {k for _, k in ra.values()}, {k for _, k in rb.values()}
    return f


def m_act(sweep_a, row, sweep_b, ref):
    def f(db):
        d, ka, kb = pair(db, (sweep_a, row), (sweep_b, ref), lambda r: db.last(r, 'm_act', ''))
        return paired(d)[:3], len(d), ka, kb
    return f


def lr_interaction(sweep, hi, lo):
    def f(db):
        g = {lr: pair(db, (sweep, 'G1-matched-lr' + lr), (sweep, 'baseline-lr' + lr), val_loss(db)) for lr in (hi, lo)}
        d = [a - b for a, b in zip(g[hi][0], g[lo][0])]
        return paired(d)[:3], len(d), g[hi][1] | g[lo][1], g[hi][2] | g[lo][2]
    return f


def quant(sweep, row, ref, scheme, length=128):
    def dppl(db):
        def v(run):
            f = db.last(run, 'infer_ppl', 'split=val,len=%d,quant=float' % length)
            return 100 * (db.last(run, 'infer_ppl', 'split=val,len=%d,quant=%s' % (length, scheme)) - f) / f
        return v

    def f(db):
        d, ka, kb = pair(db, (sweep, row), (sweep, ref), dppl(db))
        return paired(d)[:3], len(d), ka, kb
    return f


def drop_vs_random(sweep, row, tau, length=128):
    def f(db):
        rs = db.runs(sweep, row)
        d = []
        for r, _ in rs.values():
            fl = db.last(r, 'infer_ppl', 'split=val,len=%d,quant=float' % length)
            g = db.last(r, 'infer_ppl', 'split=val,len=%d,drop=gate,tau=%s' % (length, tau)) - fl
            x = db.last(r, 'infer_ppl', 'split=val,len=%d,drop=random,tau=%s' % (length, tau)) - fl
            d.append(g - x)
        return paired(d)[:3], len(d), {k for _, k in rs.values()}, None
    return f


def yarn_ratio(sweep, row, ref, short=128, long=2048):
    def f(db):
        def ratio(run):
            f_long = long / short
            lo = db.last(run, 'eval_ppl', 'split=val,len=%d,scaling=yarn,factor=%g' % (long, f_long))
            hi = db.last(run, 'eval_ppl', 'split=val,len=%d,scaling=none,factor=1' % short)
            return lo / hi
        d, ka, kb = pair(db, (sweep, row), (sweep, ref), ratio)
        return paired(d)[:3], len(d), ka, kb
    return f


# number: (contrast cell must contain, digits of the mean, what to compute)
SPECS = {
    1: ('G1 − baseline', 4, loss_contrast('standard_mech', 'G1-elementwise', 'baseline')),
    2: ('G1 − ×0.5 scale', 4, loss_contrast('standard_mech', 'G1-elementwise', 'scale-0.5')),
    3: ('G5 − G1', 4, loss_contrast('standard', 'G5', 'G1-elementwise')),
    4: ('headwise − elementwise', 4, loss_contrast('standard', 'G1-headwise', 'G1-elementwise')),
    5: ('tanh − sigmoid', 4, loss_contrast('standard_mech', 'G1-tanh', 'G1-elementwise')),
    6: ('additive SiLU − G1', 3, loss_contrast('table1_positions', 'G1-additive-silu', 'G1-elementwise')),
    7: ('RMSNorm − baseline', 4, loss_contrast('standard', 'G1-rmsnorm-control', 'baseline')),
    8: ('SiLU-only − G1', 4, loss_contrast('standard_mech', 'G1-silu-only', 'G1-elementwise')),
    9: ('input-independent − G1', 4, loss_contrast('standard_mech', 'G1-input-independent', 'G1-elementwise')),
    10: ('G1 gate mean', 3, gate_mean('standard', 'G1-elementwise')),
    11: ('NS-sigmoid − G1', 4, loss_contrast('standard_mech', 'G1-ns-sigmoid', 'G1-elementwise')),
    12: ('BOS attention', 3, bb_bos('bb_sink', 'G1-elementwise', 'baseline')),
    13: ('M-Act, SiLU-only − G1', 2, m_act('table3_nonlinearity', 'G1-silu-only', 'table3_nonlinearity', 'G1-elementwise')),
    14: ('(G1 − base) at 3e-2 − at 3e-3', 4, lr_interaction('lr_stress', '3.0e-2', '3.0e-3')),
    15: ('ΔPPL% W8A8, G1 − baseline', 2, quant('standard', 'G1-elementwise', 'baseline', 'w8-a8tensor')),
    16: ('ΔPPL, gate − random', 2, drop_vs_random('standard', 'G1-headwise', '0.05')),
    17: ('16×/1× PPL, G1 − baseline', 3, yarn_ratio('long_context', 'G1-elementwise', 'baseline')),
}
LEVELS = {SPECS[10][2]}  # printed as a level (no '+'), not a difference


def num(x, digits, signed=True):
    s = ('%+.*f' if signed else '%.*f') % (digits, x)
    return s.replace('-', '−')


def ci_cell(v, digits, signed=True):
    """'−0.0215 [−0.029, −0.014]': the mean to `digits` places, the interval to one fewer; a
    level (signed False) without a '+'"""
    m, lo, hi = v
    d = max(1, digits - 1)
    return '%s [%s, %s]' % (num(m, digits, signed), num(lo, d, signed), num(hi, d, signed))


def kernel_cell(ka, kb):
    a = '+'.join(sorted(ka))
    if kb is None or ka == kb:
        return a
    return '%s vs %s' % (a, '+'.join(sorted(kb)))


def table_rows(text):
    """{number: cells} of the first table after the heading 'Verdicts at a glance'"""
    i = text.find('\n## Verdicts at a glance')
    if i < 0:
        return None, None
    rows, head = {}, None
    for line in text[i + 1:].split('\n')[1:]:  # the lines after the heading
        if line.startswith('#'):
            break
        if not line.startswith('|'):
            if rows:
                break
            continue
        cells = [c.strip() for c in line.strip().strip('|').split('|')]
        if head is None:
            head = [re.sub(r'\W+', ' ', c).strip().lower() for c in cells]
            continue
        if set(line) <= set('|-: '):
            continue
        m = re.match(r'\[?(\d+)', cells[0])
        if m:
            rows[int(m.group(1))] = cells
    return head, rows


def check(db, text):
    """[problem] for the page text; [] when every checked cell matches"""
    head, rows = table_rows(text)
    if head is None:
        return ['no "## Verdicts at a glance" section']
    try:
        col = {k: next(i for i, h in enumerate(head) if h.startswith(k)) for k in ('contrast', 'δ', 'seeds', 'kernels')}
    except StopIteration:
        return ['the table needs columns contrast, Δ, seeds, kernels (has: %s)' % ', '.join(head)]
    bad = []
    for n in sorted(set(SPECS) | set(rows)):
        if n not in rows:
            bad.append('row %d: missing from the table' % n)
            continue
        if n not in SPECS:
            bad.append('row %d: no spec in tools/check_results_readme.py' % n)
            continue
        name, digits, compute = SPECS[n]
        cells = rows[n]
        stat, seeds, ka, kb = compute(db)
        want = {'contrast': None, 'δ': ci_cell(stat, digits, compute not in LEVELS), 'seeds': str(seeds),
                'kernels': kernel_cell(ka, kb)}
        if name not in cells[col['contrast']]:
            bad.append('row %d, contrast: "%s" does not name "%s"' % (n, cells[col['contrast']], name))
        got = {'δ': cells[col['δ']].replace('*', ''), 'seeds': cells[col['seeds']],
               'kernels': cells[col['kernels']].split(';')[0].strip()}
        for k in ('δ', 'seeds', 'kernels'):
            if got[k] != want[k]:
                bad.append('row %d (%s), %s: printed "%s", recomputed "%s"' % (n, name, k, got[k], want[k]))
    return bad


def main(argv):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    dbp, readme, selftest = os.path.join(root, 'results', 'gated.db'), os.path.join(root, 'results', 'README.md'), False
    args = list(argv)
    while args:
        a = args.pop(0)
        if a == '--self-test':
            selftest = True
        elif a == '--readme' and args:
            readme = args.pop(0)
        elif a.startswith('-'):
            print('usage: tools/check_results_readme.py [DB] [--readme FILE] [--self-test]', file=sys.stderr)
            return 2
        else:
            dbp = a
    if not os.path.isfile(dbp):
        print('check_results_readme: %s: no such database (make results-db makes results/gated.db)' % show(dbp),
              file=sys.stderr)
        return 2
    db = Db(dbp)
    with open(readme, encoding='utf-8') as f:
        text = f.read()
    bad = check(db, text)
    for b in bad:
        print('%s: %s' % (os.path.relpath(readme), b))
    if bad:
        return 1
    _, rows = table_rows(text)
    print('check_results_readme: %d rows of the verdict table match the database' % len(rows))
    if selftest:
        # change the first digit after the decimal point of row 1's Δ: it must be caught
        lines = text.split('\n')
        k = next(i for i, l in enumerate(lines) if re.match(r'\|\s*\[?1\b', l))
        lines[k] = re.sub(r'([−+]0\.)(\d)', lambda m: m.group(1) + str((int(m.group(2)) + 1) % 10), lines[k], count=1)
        with tempfile.NamedTemporaryFile('w', suffix='.md', delete=False, encoding='utf-8') as f:
            f.write('\n'.join(lines))
        try:
            with open(f.name, encoding='utf-8') as g:
                caught = check(db, g.read())
        finally:
            os.unlink(f.name)
        if not any(c.startswith('row 1 ') for c in caught):
            print('check_results_readme --self-test: FAILED: a changed number in row 1 was not caught', file=sys.stderr)
            return 1
        print('check_results_readme --self-test: ok (a changed number in row 1 is caught)')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
