#!/usr/bin/env python3
"""verdicts.py -- write, or check, the parts of results/README.md and README.md that state
results: the one-screen verdict table with its rules, the run count and commit list, and the
front page's "What it found", all generated from the results database.

Usage: tools/verdicts.py [--db DB] [--twins TWINS.db] [--write] [--self-test] [--root DIR]

  --db      the results (default results/gated.db: `make results-db`)
  --twins   the kernel twins (results/twins/ unpacked; `make check-results` makes
            build/twins.db): the kernel notes quote the largest per-seed contrast change
            they measured
  --write   rewrite the generated regions in place
  (default) regenerate and compare: exit 1 naming each region that differs, with a diff
  --self-test  also plant, in copies of the pages, a changed number of the table, a changed
            verdict word, a changed run count and a changed front-page number; each must be
            caught (exit 1 otherwise)

A generated region lies between the lines `<!-- generated: NAME (tools/verdicts.py) -->` and
`<!-- end generated: NAME -->`; everything between is written by this tool, nothing outside.
The rows are tools/verdict_rows.py, the rules tools/verdict_rules.py (one edit re-words every
row).  Exit 0 all regions match, 1 a region differs (or the self-test missed a plant), 2 bad usage
or a missing database / page / marker.  Read-only without --write.
"""
import argparse
import difflib
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import verdict_rules as R  # noqa: E402
from toolstats import show  # noqa: E402
from verdict_data import Db, welch  # noqa: E402
from verdict_rows import (BUDGETS, EDGE_CELLS, MID, ROWS, SIZES, curves, curves_text, loss, size_sides,  # noqa: E402
                          spikes)
from verdict_text import front_page, runs_text  # noqa: E402
from verdict_remedies import remedies_text  # noqa: E402
from verdict_sparse import sparse_text  # noqa: E402

BEGIN = '<!-- generated: %s (tools/verdicts.py) -->'
END = '<!-- end generated: %s -->'


def ci_cell(st, digits, signed=True):
    """'−0.0215 [−0.029, −0.014]', or 'n = 2: no CI (a, b)' below R.MIN_N values"""
    if st.lo is None or st.n < R.MIN_N:
        vals = ', '.join(R.fmt(v, digits, signed) for v in st.values)
        return 'n = %d: no CI (%s)' % (st.n, vals) if st.n else 'no runs'
    d = max(1, digits - 1)
    return '%s [%s, %s]' % (R.fmt(st.mean, digits, signed), R.fmt(st.lo, d, signed), R.fmt(st.hi, d, signed))


def kernel_cell(st):
    a = '+'.join(sorted(st.ka))
    if st.kb is None or st.ka == st.kb:
        return a
    return '%s vs %s' % (a, '+'.join(sorted(st.kb)))


def kernels_of(st):
    return st.ka | (st.kb or set())


class Ctx:
    """the database, the twins' measured kernel effect, and each row's computed parts"""

    def __init__(self, db, twins, twin_db=None):
        self.db, self.twins, self.twin_db = db, twins, twin_db
        self.rows = {}
        for r in ROWS:
            stats = [p['measure'](db) for p in r['parts']]
            words = [R.verdict(s, p['expect'], r['tokens']) for s, p in zip(stats, r['parts'])]
            self.rows[r['n']] = dict(r, stats=stats, words=words, word=R.combine(words),
                                     curve_words=curves(r['parts'][-1]['measure'])(db) if r['curves'] else None)

    def kernel_note(self, a, b, where_a, where_b):
        ka, kb = kernels_of(a), kernels_of(b)
        if ka == kb:
            return ''
        eff = ('twins: a per-seed contrast moved ≤ %s' % R.fmt(self.twins, 4, False)
               if self.twins is not None else 'twins not read')
        return '; kernels %s (%s) vs %s (%s): %s, in no interval' % (
            '+'.join(sorted(ka)), where_a, '+'.join(sorted(kb)), where_b, eff)


def at_min(st):
    return '; %d run%s read at the minimum' % (st.at_min, 's' if st.at_min > 1 else '') if st.at_min else ''


def budget_cell(ctx, head, p):
    """the d128 budget series of a part and its trend word, 4.1M against the longest budget"""
    db, pts = ctx.db, []
    row, ref = p['budget']
    for name, sweep in BUDGETS:
        st = loss((sweep,), row, ref)(db)
        if st.n:
            pts.append((name, st))
    if not pts:
        return 'budget: no runs'
    last_name, last = pts[-1]
    word, w = R.trend(head, last, welch)
    mid = [(name, st) for name, st in pts[:-1] if st.n < R.MIN_N]
    early = ' → '.join('%s (%s)' % (' / '.join(R.fmt(v, 3) for v in st.values), name) for name, st in mid)
    crossed = [name for name, st in mid if st.kb is not None and st.ka != st.kb]
    cross = ('; %s: %s pairs cross kernels (%s vs %s)' % (
        ', '.join(crossed), 'their' if len(crossed) > 1 else 'its',
        '+'.join(sorted(set().union(*(st.ka for n, st in mid if n in crossed)))),
        '+'.join(sorted(set().union(*(st.kb for n, st in mid if n in crossed)))))) if crossed else ''
    wtxt = ', Welch Δ of Δ %s' % ci_cell_w(w) if w else ''
    wtxt += gone_note(word, last)
    return ('budget **%s** (4.1M → %s%s): %s (2 seeds each, both shown, no CI%s) → %s (4.1M, %d seeds) → %s (%s, %d '
            'seeds%s)%s' % (word, last_name, wtxt, early, cross, R.fmt(head.mean, 4), head.n, ci_cell(last, 4),
                            last_name, last.n, at_min(last), ctx.kernel_note(head, last, '4.1M', last_name)))


def gone_note(word, st):
    return '; |Δ| %s < %g' % (R.fmt(abs(st.mean), 5, False), R.GONE) if word == 'gone' else ''


def ci_cell_w(w):
    m, (lo, hi), _p = w
    return '%s [%s, %s]' % (R.fmt(m, 3), R.fmt(lo, 3), R.fmt(hi, 3))


def size_cell(ctx, head, p):
    """d192 against d128 at the same tokens per parameter: 9.0M against the 4.1M headline, 18.0M
    against budget_8M"""
    row, ref = p['size'][0], p['size'][1]
    out = []
    for name, sweeps, partner in SIZES:
        small, big, sname = size_sides(ctx.db, ctx.twin_db, p['measure'].spec[0], row, ref, sweeps, partner)
        if not big.n:
            continue
        word, w = R.trend(small, big, welch)
        wtxt = (', Welch Δ of Δ %s' % ci_cell_w(w) if w else '') + gone_note(word, big)
        out.append('**%s** (%s → %s%s): %s (%d seeds) against %s%s' % (
            word, sname, name, wtxt, ci_cell(big, 4), big.n, R.fmt(small.mean, 4) if partner is None and
            small.values == head.values else '%s (%d seeds)' % (ci_cell(small, 4), small.n),
            ctx.kernel_note(small, big, sname, name)))
    return 'size ' + '; '.join(out) if out else 'd128 only'


def edge_cell(ctx):
    """row 14's lr-edge cells: each one's divergences (row 14's parts 1, 2, 3) and loss spikes"""
    db, out = ctx.db, []
    for i, (what, sweeps, base, g1) in enumerate(EDGE_CELLS):
        if not any(db.has_sweep(s) for s in sweeps):
            out.append('%s: not yet in the database' % what)
            continue
        st = ctx.rows[14]['stats'][1 + i]
        kg, ng, kb, nb = st.count
        sp = spike_text(ctx.rows[14]['stats'][-1] if i == MID else spikes(sweeps, g1, base)(db))
        out.append('%s: diverged baseline %d/%d, G1 %d/%d (Fisher p %s)%s' % (
            what, kb, nb, kg, ng, pfmt(st.p), sp))
    return 'edge: ' + '; '.join(out)


def pfmt(p):
    return '–' if p is None else '%.2f' % p if p >= 0.01 else '%.1g' % p


def spike_text(st):
    """loss spikes per 100 steps after the warm-up in the finished runs (st: spikes(...)'s): each
    row's median and mean, and the exact Mann-Whitney p"""
    ra, rb = st.rates
    if not ra or not rb:
        return ''
    med = lambda xs: statistics.median(xs.values())  # noqa: E731
    return ('; spikes per 100 steps after warm-up, finished runs: median %.2f (mean %.2f, %d runs) vs %.2f (%.2f, %d) '
            '(Mann-Whitney p %s)' % (med(rb), sum(rb.values()) / len(rb), len(rb), med(ra), sum(ra.values()) / len(ra),
                                     len(ra), pfmt(st.p)))


def trend_cell(ctx, r):
    cells = []
    for p, st in zip(r['parts'], r['stats']):
        bits = []
        if p['budget']:
            bits.append(budget_cell(ctx, st, p))
        if p['size']:
            bits.append(size_cell(ctx, st, p))
        if p['half']:
            bits.append('one budget; half-way through the runs (same schedule): %s' % ci_cell(p['half'](ctx.db), 4))
        if r['curves'] and p is r['parts'][-1]:
            bits.append(('' if bits else 'one budget; ') + 'curves (flatness rule): %s' % curves_text(r['curve_words']))
        if bits:
            prefix = p['name'] + ': ' if sum(1 for q in r['parts'] if q['budget'] or q['size']) > 1 else ''
            cells.append(prefix + '; '.join(bits))
    if r['edge']:
        cells.append(edge_cell(ctx))
    return ' / '.join(cells) if cells else 'one budget'


def verdict_cell(r):
    w = '**%s**' % r['word']
    if len(set(r['words'])) > 1:
        w += ': ' + ', '.join('%s %s' % (p['name'].split(' (')[0], x) for p, x in zip(r['parts'], r['words']))
    return w + ('; %s' % r['note'] if r['note'] else '')


def table(ctx):
    lines = ['| # | claim (paper) | verdict here | budget | trend: budget 0.5M → 16M (d128); size (d192) | contrast | '
             'Δ [95% CI] | seeds | kernels |', '|--:|---|---|---|---|---|--:|--:|---|']
    for r in ROWS:
        c = ctx.rows[r['n']]
        st, p = c['stats'][0], c['parts'][0]
        level = isinstance(p['expect'], tuple) and p['expect'][0] == 'level'
        kern = '; '.join((q['name'].split(' (')[0] + ': ' if i else '') + kernel_cell(s)
                         for i, (q, s) in enumerate(zip(c['parts'], c['stats']))
                         if i == 0 or kernel_cell(s) not in ('', kernel_cell(st)))
        lines.append('| %d | [%s](%s) | %s | %s | %s | %s | %s | %d | %s |' % (
            r['n'], r['claim'], r['link'], verdict_cell(c), r['budget'], trend_cell(ctx, c), p['name'],
            ci_cell(st, p['digits'], not level), st.n, kern))
    return '\n'.join(lines) + '\n\n' + R.RULES_TEXT


def regions(ctx):
    """{(file, region): text}"""
    found, committed = front_page(ctx)
    return {('results/README.md', 'verdicts'): table(ctx),
            ('results/README.md', 'runs'): runs_text(ctx.db),
            ('results/README.md', 'remedies'): remedies_text(ctx.db),
            ('results/README.md', 'sparse'): sparse_text(ctx.db),
            ('README.md', 'found'): found,
            ('README.md', 'committed'): committed}


def splice(text, name, body):
    """text with region name's body replaced; None when its markers are missing"""
    b, e = BEGIN % name, END % name
    i, j = text.find(b), text.find(e)
    if i < 0 or j < i:
        return None
    return text[:i + len(b)] + '\n' + body.rstrip('\n') + '\n' + text[j:]


def compare(pages, want):
    """[problem] for pages {file: text} against the generated regions"""
    bad = []
    for (f, name), body in sorted(want.items()):
        new = splice(pages[f], name, body)
        if new is None:
            bad.append('%s: no region "%s" (markers %s ... %s)' % (f, name, BEGIN % name, END % name))
        elif new != pages[f]:
            diff = difflib.unified_diff(pages[f].split('\n'), new.split('\n'), f, f + ' (regenerated)', n=0, lineterm='')
            bad.append('%s: region "%s" differs from the database:\n%s' % (f, name, '\n'.join(list(diff)[:40])))
    return bad


def plant(pages, f, pattern, repl, what):
    """a copy of pages with the first match of pattern in f's generated regions changed"""
    text = pages[f]
    i = text.find('<!-- generated:')
    m = re.compile(pattern).search(text, i)
    if not m:
        raise SystemExit('verdicts --self-test: nothing to plant for %s' % what)
    out = dict(pages)
    out[f] = text[:m.start()] + repl(m) + text[m.end():]
    return out


def self_test(pages, want):
    bump = lambda m: m.group(1) + str((int(m.group(2)) + 1) % 10)  # noqa: E731
    bump2 = lambda m: m.group(1) + str(int(m.group(2)) + 1)  # noqa: E731
    plants = [
        ('a number of the table (row 1, Δ)', 'results/README.md', r'(\| G1 − baseline \| [−+]0\.0)(\d)', bump),
        ('a verdict word (row 1)', 'results/README.md', r'\*\*reproduced\*\*', lambda m: '**contradicted**'),
        ('a trend word', 'results/README.md', r'budget \*\*(\w+)', lambda m: 'budget **grows' if m.group(1) != 'grows'
         else 'budget **fades'),
        ('the run count', 'results/README.md', r'holds \*\*(\d)', lambda m: 'holds **' + str((int(m.group(1)) + 1) % 10)),
        ('a front-page number', 'README.md', r'(by 0\.0)(\d)', bump),
        ('the front page\'s run count', 'README.md', r'results \((\d)', lambda m: 'results (' + str((int(m.group(1)) + 1) % 10)),
        ('a sink-remedy count (BB sinks)', 'results/README.md', r'(\| softmax1 \|[^\n]*? \| )(\d+)/15',
         lambda m: m.group(1) + str((int(m.group(2)) + 1) % 16) + '/15'),
        ('a sink-remedy sentence word', 'results/README.md', r'against G1: better on', lambda m: 'against G1: worse on'),
        ('a T 512 row\'s seed count', 'results/README.md', r'(\| t512_topk \| dense \| )(\d+)', bump2),
        ('a T 512 answer word', 'results/README.md', r'(\*Does G1 lower P\(0 ∈ S_t\)\?\* top-64: \*\*)([^*]+)',
         lambda m: m.group(1) + ('yes' if m.group(2) != 'yes' else 'no')),
    ]
    ok = True
    for what, f, pat, repl in plants:
        caught = compare(plant(pages, f, pat, repl, what), want)
        print('verdicts --self-test: %s: %s' % (what, 'caught' if caught else 'NOT CAUGHT'))
        ok = ok and bool(caught)
    return ok


def main(argv):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--db', default=os.path.join(root, 'results', 'gated.db'))
    ap.add_argument('--twins')
    ap.add_argument('--root', default=root)
    ap.add_argument('--write', action='store_true')
    ap.add_argument('--self-test', action='store_true')
    a = ap.parse_args(argv)
    for p in [a.db] + ([a.twins] if a.twins else []):
        if not os.path.isfile(p):
            print('verdicts: %s: no such database (make results-db makes results/gated.db)' % show(p), file=sys.stderr)
            return 2
    twins = twin_effect(a.db, a.twins) if a.twins else None
    want = regions(Ctx(Db(a.db), twins, Db(a.twins) if a.twins else None))
    pages = {}
    for f in sorted({f for f, _ in want}):
        with open(os.path.join(a.root, f), encoding='utf-8') as h:
            pages[f] = h.read()
    if a.write:
        for (f, name), body in sorted(want.items()):
            new = splice(pages[f], name, body)
            if new is None:
                print('verdicts: %s: no region "%s"' % (f, name), file=sys.stderr)
                return 2
            pages[f] = new
        for f, text in pages.items():
            with open(os.path.join(a.root, f), 'w', encoding='utf-8') as h:
                h.write(text)
        print('verdicts: wrote %d regions' % len(want))
        return 0
    bad = compare(pages, want)
    for b in bad:
        print(b)
    if bad:
        return 1
    print('verdicts: %d generated regions match the database (%d rows)' % (len(want), len(ROWS)))
    if a.self_test and not self_test(pages, want):
        return 1
    return 0


def twin_effect(db_path, twins_path):
    """the largest |change| of a per-seed contrast (row - reference of one sweep, both with
    twins) between the committed runs and their twins on one kernel"""
    from kernel_effect import load
    committed, twins = load(db_path), load(twins_path)
    rows = {}
    for sw, lab, seed, rid in twins[0]:
        if rid in committed[1]:
            rows.setdefault((sw, lab), {})[seed] = (committed[1][rid][1], twins[1][rid][1])
    best = 0.0
    for (sw, lab), s1 in rows.items():
        for (sw2, ref), s2 in rows.items():
            if sw2 == sw and ref != lab:
                for s in set(s1) & set(s2):
                    best = max(best, abs((s1[s][1] - s2[s][1]) - (s1[s][0] - s2[s][0])))
    return best


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
