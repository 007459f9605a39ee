#!/usr/bin/env python3
"""attest_pairs.py -- which contrasts of the verdict table pair runs made by different result
code, and which of those pairs an attestation covers (issue 38, item 5).

Usage: tools/attest_pairs.py [--db results/gated.db] [--repo DIR]

A run records the commit that made it (runs.code_version); two commits have the same *result
code* when git finds core/util, core/nn and core/run unchanged between them (as `gated sweep`
decides, run/codever.h).  `gated sweep --verify-code` re-executes a run's first steps with the
build's code and, when every stored row is bitwise equal, records an attestation
(code_attest: run, the verifying commit, steps and rows checked).  A run is thereby shown equal
to the result code of its own commit and of every commit that attested it.

For every paired contrast of the verdict table (tools/verdict_rows.py: each row's contrasts,
their budget curve and their second size) it prints the pairs (one seed, row and reference) whose
runs were made by different result code, and whether they are *attested*: some commit that one
run is shown equal to has the same result code as some commit the other is shown equal to.
Then, for the trends (a setting against the headline), the commits on each side.  Needs the
commits in the clone (git cat-file); a commit it lacks is named, and its pairs count as not
attested.  Read-only; git gets argument lists, never a shell.
"""
import argparse
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from toolstats import connect_ro, show  # noqa: E402
from verdict_rows import BUDGETS, ROWS, SIZES  # noqa: E402

RESULT_PATHS = ('core/util', 'core/nn', 'core/run')


class Git:
    def __init__(self, repo):
        self.repo, self.cache, self.missing = repo, {}, set()

    def has(self, c):
        ok = subprocess.run(['git', '-C', self.repo, 'cat-file', '-e', c + '^{commit}'],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0
        if not ok:
            self.missing.add(c)
        return ok

    def same(self, a, b):
        """the same result code at commits a and b (None: a commit is not in the clone)"""
        if a == b:
            return True
        key = tuple(sorted((a, b)))
        if key not in self.cache:
            if not (self.has(a) and self.has(b)):
                self.cache[key] = None
            else:
                rc = subprocess.run(['git', '-C', self.repo, 'diff', '--quiet', a, b, '--'] + list(RESULT_PATHS),
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
                self.cache[key] = rc == 0
        return self.cache[key]


def shown(db, run_id):
    """{commit}: the run's own and those that attested it"""
    code = db.execute("SELECT code_version FROM runs WHERE run_id = ?", (run_id,)).fetchone()[0]
    att = db.execute("SELECT code_version FROM code_attest WHERE run_id = ? AND run_code_version = ?",
                     (run_id, code)).fetchall()
    return code, {code} | {c for (c,) in att}


def row_runs(db, sweeps, label):
    out = {}
    for sw in sweeps:
        for seed, rid in db.execute("SELECT sr.seed, r.run_id FROM sweep_runs sr JOIN runs r USING (run_id) "
                                    "WHERE sr.sweep = ? AND sr.label = ? AND r.status = 'finished'", (sw, label)):
            out.setdefault(seed, rid)
    return out


def contrasts():
    """[(row number, name, sweeps, row, ref)] of every paired loss contrast the table reads"""
    out = []
    for r in ROWS:
        for p in r['parts']:
            spec = getattr(p['measure'], 'spec', None)
            if spec:
                out.append((r['n'], p['name'] + ' (headline)', *spec))
            if p['budget']:
                out += [(r['n'], '%s at %s' % (p['name'], name), (sw,), *p['budget']) for name, sw in BUDGETS]
            if p['size']:
                out += [(r['n'], '%s at %s' % (p['name'], name), sws, *p['size']) for name, sws, _ in SIZES]
    return out


def main(argv):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--db', default=os.path.join(root, 'results', 'gated.db'))
    ap.add_argument('--repo', default=root)
    a = ap.parse_args(argv)
    if not os.path.isfile(a.db):
        print('attest_pairs: %s: no such database' % show(a.db), file=sys.stderr)
        return 2
    db, git = connect_ro(a.db), Git(a.repo)
    todo, cpairs = set(), {}
    print('| row | contrast | pairs | across a result-code change | attested | commits (row / reference) |')
    print('|--:|---|--:|--:|--:|---|')
    for n, name, sweeps, row, ref in contrasts():
        ra, rb = row_runs(db, sweeps, row), row_runs(db, sweeps, ref)
        seeds = sorted(set(ra) & set(rb))
        if not seeds:
            continue
        cross, ok, commits = 0, 0, set()
        for s in seeds:
            (ca, sa), (cb, sb) = shown(db, ra[s]), shown(db, rb[s])
            commits.add('%s / %s' % (ca[:7], cb[:7]))
            if git.same(ca, cb):
                continue
            cross += 1
            cpairs.setdefault(tuple(sorted((ca, cb))), set()).add((ra[s], rb[s]))
            if any(git.same(x, y) for x in sa for y in sb):
                ok += 1
            else:
                todo.add((show(row), s, ra[s], ca[:7], show(ref), rb[s], cb[:7]))
        print('| %d | %s | %d | %d | %d | %s |' % (n, name, len(seeds), cross, ok, ', '.join(sorted(commits))))
    print('\nBy commit pair (result code differs): the table\'s pairs across it, and the runs of either commit '
          'shown equal to the other\'s result code by an attestation:')
    for (c1, c2), prs in sorted(cpairs.items()):
        runs = {r for pr in prs for r in pr}
        att = sorted(r for r in runs if any(git.same(x, c2 if shown(db, r)[0] == c1 else c1)
                                            for x in shown(db, r)[1] - {shown(db, r)[0]}))
        print('- %s / %s: %d pairs; attested by %s' % (c1[:7], c2[:7], len(prs), ', '.join(att) or 'no run'))
    print('\nPairs across a change of the result code with no attestation (row s seed: run at commit; reference):')
    for r, s, ia, ca, f, ib, cb in sorted(todo):
        print('- %s s%d: %s at %s; %s %s at %s' % (r, s, ia, ca, f, ib, cb))
    if git.missing:
        print('\nCommits not in this clone (their pairs count as not attested): %s' %
              ', '.join(sorted(c[:7] for c in git.missing)))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
