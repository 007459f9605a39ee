#!/usr/bin/env python3
# Usage: tools/contrasts.py DB SWEEP REF [ROW ...] [--margin NATS]
# Paired per-seed contrasts of the final val loss of each ROW (default: every other row of
# SWEEP) against the row REF of the same sweep -- the report's statistics with another
# reference row: Δ (mean of the per-seed differences), its 95% t interval, the two-sided paired
# t p, Holm over the rows given, TOST against +-margin (default 0.02) and the minimum
# detectable effect at 80% power (sigma_d pooled over the rows).  With REF = the sweep's
# baseline it reproduces the report's table (a check of this script).  Read-only; no scipy.
import math, sqlite3, sys


def betacf(a, b, x):
    # continued fraction of the incomplete beta function (modified Lentz)
    tiny, c, d = 1e-300, 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        for num in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                    -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1 + num * d
            d = 1 / (d if abs(d) > tiny else tiny)
            c = 1 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1) < 1e-15:
            break
    return h


def ibeta(a, b, x):
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    lbt = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log(1 - x)
    if x < (a + 1) / (a + b + 2):
        return math.exp(lbt) * betacf(a, b, x) / a
    return 1 - math.exp(lbt) * betacf(b, a, 1 - x) / b


def t_sf(t, df):
    """P(T > t)"""
    x = df / (df + t * t)
    p = 0.5 * ibeta(df / 2, 0.5, x)
    return p if t >= 0 else 1 - p


def t_q(p, df):
    """quantile: t with P(T <= t) = p, by bisection"""
    lo, hi = -1e3, 1e3
    for _ in range(200):
        mid = (lo + hi) / 2
        if 1 - t_sf(mid, df) < p:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def main():
    args = [a for a in sys.argv[1:]]
    margin = 0.02
    if '--margin' in args:
        i = args.index('--margin')
        margin = float(args[i + 1])
        del args[i:i + 2]
    if len(args) < 3:
        sys.exit(__doc__ or 'usage: tools/contrasts.py DB SWEEP REF [ROW ...] [--margin NATS]')
    db = sqlite3.connect('file:%s?mode=ro' % args[0], uri=True)
    sweep, ref = args[1], args[2]

    def final(lab):
        return dict(db.execute(
            "select sr.seed, s.value from sweep_runs sr join runs r using(run_id) join summary s "
            "on s.run_id = sr.run_id and s.key = 'val_loss' and s.context = '' "
            "where sr.sweep = ? and sr.label = ? and r.status = 'finished'", (sweep, lab)).fetchall())

    labels = [l for (l,) in db.execute(
        "select label from sweep_runs where sweep = ? group by label order by min(rowid)", (sweep,))]
    if ref not in labels:
        sys.exit('%s: no row %s in sweep %s' % (args[0], ref, sweep))
    rows = args[3:] or [l for l in labels if l != ref]
    base = final(ref)
    res, ss, dfs = [], 0.0, 0
    for lab in rows:
        x = final(lab)
        d = [x[s] - base[s] for s in sorted(set(x) & set(base))]
        n = len(d)
        if n < 2:
            res.append((lab, n, None))
            continue
        m = sum(d) / n
        var = sum((v - m) ** 2 for v in d) / (n - 1)
        se = math.sqrt(var / n)
        df = n - 1
        tq = t_q(0.975, df)
        p = 2 * t_sf(abs(m) / se, df) if se > 0 else 0.0
        tost = max(t_sf((m + margin) / se, df), 1 - t_sf((m - margin) / se, df)) if se > 0 else 0.0
        res.append((lab, n, (m, m - tq * se, m + tq * se, p, tost)))
        ss += var * df
        dfs += df
    # Holm over the rows with a p
    ps = sorted((r[2][3], i) for i, r in enumerate(res) if r[2])
    holm, run = {}, 0.0
    for k, (p, i) in enumerate(ps):
        run = max(run, min(1.0, (len(ps) - k) * p))
        holm[i] = run
    print('sweep %s, every row against %s (paired by seed), Holm family of %d, margin +-%g' % (
        sweep, ref, len(ps), margin))
    print('%-24s %2s %9s %22s %8s %8s %8s' % ('row', 'n', 'Δ', '95% CI', 'p', 'Holm', 'TOST'))
    for i, (lab, n, r) in enumerate(res):
        if not r:
            print('%-24s %2d %9s' % (lab, n, '–'))
            continue
        print('%-24s %2d %+9.4f [%+9.4f, %+9.4f] %8.3g %8.3g %8.3g' % (lab, n, r[0], r[1], r[2], r[3], holm[i], r[4]))
    if dfs:
        sd = math.sqrt(ss / dfs)
        n = max(r[1] for r in res)
        df = n - 1
        for a, name in ((0.05, 'alpha 0.05'), (0.05 / max(1, len(ps)), 'Holm worst alpha/m')):
            mde = (t_q(1 - a / 2, df) + t_q(0.8, df)) * sd / math.sqrt(n)
            print('MDE (80%% power, %s, n %d): %.4f nats (sigma_d %.4f pooled)' % (name, n, mde, sd))


main()
