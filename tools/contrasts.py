#!/usr/bin/env python3
# Usage: tools/contrasts.py DB SWEEP REF [ROW ...] [--margin NATS]
# Paired per-seed contrasts of the final val loss of each ROW (default: every other row of
# SWEEP) against the row REF of the same sweep -- the report's statistics with another
# reference row: Δ (mean of the per-seed differences), its 95% t interval, the two-sided paired
# t p, Holm over the rows given, TOST against +-margin (default 0.02) and the minimum
# detectable effect at 80% power (sigma_d pooled over the rows).  With REF = the sweep's
# baseline it reproduces the report's table (a check of this script).  Read-only.
import math, sqlite3, sys

from toolstats import connect_ro, holm, paired, show, t_q

USAGE = 'usage: tools/contrasts.py DB SWEEP REF [ROW ...] [--margin NATS]'


def main():
    args = sys.argv[1:]
    margin = 0.02
    if '--margin' in args:
        i = args.index('--margin')
        if i + 1 >= len(args):
            sys.exit(USAGE)
        margin = float(args[i + 1])
        del args[i:i + 2]
    if len(args) < 3:
        sys.exit(USAGE)
    db = connect_ro(args[0])
    sweep, ref = args[1], args[2]

    def final(lab):
        return dict(db.execute(
            "select sr.seed, s.value from sweep_runs sr join runs r using(run_id) join summary s "
            "on s.run_id = sr.run_id and s.key = 'val_loss' and s.context = '' "
            "where sr.sweep = ? and sr.label = ? and r.status = 'finished'", (sweep, lab)).fetchall())

    labels = [l for (l,) in db.execute(
        "select label from sweep_runs where sweep = ? group by label order by min(rowid)", (sweep,))]
    if ref not in labels:
        sys.exit('%s: no row %s in sweep %s' % (show(args[0]), show(ref), show(sweep)))
    rows = args[3:] or [l for l in labels if l != ref]
    base = final(ref)
    res, ss, dfs = [], 0.0, 0
    for lab in rows:
        x = final(lab)
        d = [x[s] - base[s] for s in sorted(set(x) & set(base))]
        r = paired(d, margin)
        res.append((lab, len(d), r))
        if r:
            m = r[0]
            ss += sum((v - m) ** 2 for v in d)
            dfs += len(d) - 1
    adj = holm([r[3] if r else None for _, _, r in res])
    nfam = sum(p is not None for p in adj)
    print('sweep %s, every row against %s (paired by seed), Holm family of %d, margin +-%g' % (
        show(sweep), show(ref), nfam, margin))
    print('%-24s %2s %9s %22s %8s %8s %8s' % ('row', 'n', 'Δ', '95% CI', 'p', 'Holm', 'TOST'))
    for (lab, n, r), h in zip(res, adj):
        if not r:
            print('%-24s %2d %9s' % (show(lab), n, '–'))
            continue
        print('%-24s %2d %+9.4f [%+9.4f, %+9.4f] %8.3g %8.3g %8.3g' % (show(lab), n, r[0], r[1], r[2], r[3], h, r[4]))
    if dfs:
        sd = math.sqrt(ss / dfs)
        n = max(n for _, n, _ in res)
        df = n - 1
        for a, name in ((0.05, 'alpha 0.05'), (0.05 / max(1, nfam), 'Holm worst alpha/m')):
            mde = (t_q(1 - a / 2, df) + t_q(0.8, df)) * sd / math.sqrt(n)
            print('MDE (80%% power, %s, n %d): %.4f nats (sigma_d %.4f pooled)' % (name, n, mde, sd))


main()
