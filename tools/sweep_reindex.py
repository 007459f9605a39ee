#!/usr/bin/env python3
"""sweep_reindex.py -- set sweep_runs.idx of a sweep's stored runs to their index in the sweep
file's current plan.

Usage: tools/sweep_reindex.py --db DB [--gated build/gated] [--dry-run] SWEEP.yaml ...

Why: `gated sweep` records each run's index in the plan (rows x seeds, seeds innermost), and a
sweep that gains seeds later renumbers its runs (budget_16M: seeds 1-2 were indices 0..13, with
seed 3 the same runs are 0, 1, 3, 4, ...).  Runs made in a lane database with the new file and
folded in with `gated merge` keep their new index beside the old runs' old ones, so two runs of
one sweep can share an index (budget_16M had four such pairs).  This step asks `gated sweep
SWEEP.yaml --dry-run --json` for the plan and rewrites idx by run id; a stored run of the sweep
that the plan does not list, or whose label or seed differs from the plan's, is an error
(exit 1, nothing written).  Afterwards `tools/results_db.py pack` writes the changed part.
Exit 0 done (or nothing to change), 1 a mismatch, 2 bad usage.  Names from the database are
printed escaped; gated gets an argument list.
"""
import argparse
import json
import os
import sqlite3
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from toolstats import db_uri, show  # noqa: E402


def plan(gated, yaml, db):
    out = subprocess.run([gated, 'sweep', yaml, '--db', db, '--dry-run', '--json'], capture_output=True, text=True)
    if out.returncode not in (0, 1):
        raise SystemExit('sweep_reindex: %s: gated sweep --dry-run failed: %s' % (show(yaml), show(out.stderr.strip())))
    p = json.loads(out.stdout)
    return p['sweep'], {r['run_id']: (r['index'], r['label'], r['seed']) for r in p['runs']}


def reindex(h, sweep, want, dry):
    """[(run_id, old, new)] changed; raises ValueError on a run the plan does not match"""
    changes = []
    for rid, idx, label, seed in h.execute("SELECT run_id, idx, label, seed FROM sweep_runs WHERE sweep = ? "
                                           "ORDER BY idx, run_id", (sweep,)).fetchall():
        if rid not in want:
            raise ValueError('run %s (%s s%d) is not in the plan' % (show(rid), show(label), seed))
        new, plabel, pseed = want[rid]
        if (plabel, pseed) != (label, seed):
            raise ValueError('run %s: stored %s s%d, planned %s s%d' % (show(rid), show(label), seed, show(plabel), pseed))
        if new != idx:
            changes.append((rid, idx, new))
    if not dry:
        with h:
            for rid, _, new in changes:
                h.execute("UPDATE sweep_runs SET idx = ? WHERE sweep = ? AND run_id = ?", (new, sweep, rid))
    return changes


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--db', required=True)
    ap.add_argument('--gated', default='build/gated')
    ap.add_argument('--dry-run', action='store_true')
    ap.add_argument('sweeps', nargs='+')
    a = ap.parse_args(argv)
    if not os.path.isfile(a.db):
        print('sweep_reindex: %s: no such database' % show(a.db), file=sys.stderr)
        return 2
    h = sqlite3.connect(db_uri(a.db, 'ro' if a.dry_run else 'rw'), uri=True)
    for y in a.sweeps:
        sweep, want = plan(a.gated, y, a.db)
        try:
            changes = reindex(h, sweep, want, a.dry_run)
        except ValueError as e:
            print('sweep_reindex: %s: %s' % (show(y), e), file=sys.stderr)
            return 1
        dup = h.execute("SELECT count(*) - count(DISTINCT idx) FROM sweep_runs WHERE sweep = ?", (sweep,)).fetchone()[0]
        print('%s: %d of %d indices %s%s' % (show(sweep), len(changes), len(want),
                                            'to change' if a.dry_run else 'changed',
                                            '' if a.dry_run else '; duplicate indices left: %d' % dup))
        for rid, old, new in changes:
            print('  %s: %d -> %d' % (show(rid), old, new))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
