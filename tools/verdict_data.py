#!/usr/bin/env python3
"""verdict_data.py -- what tools/verdicts.py reads from a results database, and the statistics
it applies (no scipy; toolstats.py's t and Fisher).

A *row* of a sweep is read from one or more sweeps at once (Db.row(("budget_d192_9M",), label)):
the runs of every sweep named are pooled by seed, so a sweep that reuses another's runs (same run
ids, e.g. lr_edge_power's seeds 1-4 are lr_edge's) or adds seeds later (budget_d192_9M's seeds
3-6) is read whole, with every seed it holds, and the code does not change when runs land.

Read at the minimum: a run whose validation loss at its last evaluation is above its lowest
evaluation (the curve turned up) is read at that lowest evaluation (results/budget_plan.md,
the flatness rule's last paragraph); Stat.at_min counts such runs.
"""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from toolstats import connect_ro, fisher, holm, ibeta, mean_sd, paired, t_q, t_sf  # noqa: E402
from verdict_rules import MIN_N  # noqa: E402

KERNELS = ('SkylakeX', 'Haswell', 'Prescott', 'Cooperlake', 'Zen', 'Sandybridge')


def kernel_of(version):
    for k in KERNELS:
        if (' %s ' % k) in (version or ''):
            return k
    return 'unknown'


class Run:
    __slots__ = ('run_id', 'seed', 'kernel', 'code', 'status', 'threads', 'diverged_step')

    def __init__(self, run_id, seed, kernel, code, status, threads, diverged_step):
        self.run_id, self.seed, self.kernel, self.code = run_id, seed, kernel, code
        self.status, self.threads, self.diverged_step = status, threads, diverged_step


class Db:
    def __init__(self, path):
        self.h = connect_ro(path)
        self._rows = {}
        self.reads = None  # a set: every (sweeps, label) that row() is asked for is added (tools/rerun_rows.py)
        self.metric_reads = None  # a set: every (metric key, context, run id) last() is asked for

    def row(self, sweeps, label, status='finished'):
        """{seed: Run} of a row, pooled over the sweeps named (the first sweep's run for a seed
        that two of them hold); status None: every run whatever its status"""
        if isinstance(sweeps, str):
            sweeps = (sweeps,)
        key = (tuple(sweeps), label, status)
        if self.reads is not None:
            self.reads.add(key[:2])
        if key not in self._rows:
            out = {}
            for sw in sweeps:
                for seed, rid, ver, code, st, thr, dstep in self.h.execute(
                        "SELECT sr.seed, r.run_id, r.openblas_version, r.code_version, r.status, r.threads,"
                        " r.diverged_step FROM sweep_runs sr JOIN runs r USING (run_id)"
                        " WHERE sr.sweep = ? AND sr.label = ?", (sw, label)):
                    if (status is None or st == status) and seed not in out:
                        out[seed] = Run(rid, seed, kernel_of(ver), code[:7], st, thr, dstep)
            self._rows[key] = out
        return self._rows[key]

    def run(self, run_id):
        """one run by id (a Run, seed and all), or None"""
        r = self.h.execute("SELECT seed, openblas_version, code_version, status, threads, diverged_step FROM runs "
                           "WHERE run_id = ?", (run_id,)).fetchone()
        return Run(run_id, r[0], kernel_of(r[1]), (r[2] or '')[:7], r[3], r[4], r[5]) if r else None

    def has_sweep(self, sweep):
        return self.h.execute("SELECT 1 FROM sweep_runs WHERE sweep = ? LIMIT 1", (sweep,)).fetchone() is not None

    def summary(self, run, key):
        r = self.h.execute("SELECT value FROM summary WHERE run_id = ? AND key = ? AND context = ''",
                           (run, key)).fetchone()
        return r[0] if r else None

    def last(self, run, key, ctx=''):
        if self.metric_reads is not None:
            self.metric_reads.add((key, ctx, run))
        r = self.h.execute("SELECT value FROM metrics WHERE run_id = ? AND key = ? AND context = ? "
                           "ORDER BY step DESC LIMIT 1", (run, key, ctx)).fetchone()
        return r[0] if r else None

    def val_loss(self, run):
        """(value, read at the minimum?): the final validation loss, or the lowest evaluation
        when the curve turned up after it"""
        fin = self.summary(run, 'val_loss')
        r = self.h.execute("SELECT min(value) FROM metrics WHERE run_id = ? AND key = 'val_loss' AND context = ''",
                           (run,)).fetchone()
        if r and r[0] is not None and fin is not None and r[0] < fin:
            return r[0], True
        return fin, False

    def val_curve(self, run):
        """{step: validation loss} of a run's evaluations"""
        return dict(self.h.execute("SELECT step, value FROM metrics WHERE run_id = ? AND key = 'val_loss' "
                                   "AND context = ''", (run,)).fetchall())

    def val_at(self, frac):
        """a value(run_id) for paired_stat: the validation loss at the evaluation nearest frac of the
        run's last evaluation step (the earlier of two as near), as evaluated (never at a minimum)"""
        def value(run):
            c = self.val_curve(run)
            if not c:
                return float('nan'), False
            last = max(c)
            return c[min(c, key=lambda k: (abs(k - frac * last), k))], False
        return value

    def max_head(self, run, key):
        r = self.h.execute(
            "SELECT max(value) FROM metrics WHERE run_id = ? AND key = ? AND context LIKE 'layer=%,head=%' AND "
            "step = (SELECT max(step) FROM metrics WHERE run_id = ? AND key = ?)", (run, key, run, key)).fetchone()
        return r[0] if r else None

    def scalar(self, sql, args=()):
        return self.h.execute(sql, args).fetchone()[0]

    def all(self, sql, args=()):
        return self.h.execute(sql, args).fetchall()


class Stat:
    """a measured quantity: its values (per-seed differences, or per-run levels), mean and 95%
    interval (None below min_n values), p, the test named, kernels and code of each side, and
    how many runs were read at their minimum"""

    def __init__(self, values, test, ka, kb=None, codes=(), at_min=0, interval=None, p=None):
        self.values, self.test, self.ka, self.kb = list(values), test, ka, kb
        self.codes, self.at_min = set(codes), at_min
        self.n = len(self.values)
        self.mean = sum(self.values) / self.n if self.n else float('nan')
        self.lo, self.hi = interval if interval and interval[0] is not None else (None, None)
        self.p = p


def t_interval(values):
    """the one-sample (paired) t: (lo, hi), p; None below 2 values"""
    r = paired(values)
    return ((r[1], r[2]), r[3]) if r else (None, None)


def welch(x, y):
    """mean(x) - mean(y), Welch's 95% interval and p; None where a side has < 2 values"""
    if len(x) < 2 or len(y) < 2:
        return None
    (mx, sx), (my, sy) = mean_sd(x), mean_sd(y)
    vx, vy = sx * sx / len(x), sy * sy / len(y)
    se = math.sqrt(vx + vy)
    if se == 0:
        return mx - my, (mx - my, mx - my), 1.0 if mx == my else 0.0
    df = (vx + vy) ** 2 / (vx * vx / (len(x) - 1) + vy * vy / (len(y) - 1))
    q = t_q(0.975, df)
    return mx - my, (mx - my - q * se, mx - my + q * se), 2 * t_sf(abs(mx - my) / se, df)


def binom_interval(k, n):
    """Clopper-Pearson 95% interval of a rate k / n"""
    def inv(target, a, b):
        lo, hi = 0.0, 1.0
        for _ in range(100):
            mid = (lo + hi) / 2
            if ibeta(a, b, mid) < target:
                lo = mid
            else:
                hi = mid
        return (lo + hi) / 2
    lo = 0.0 if k == 0 else inv(0.025, k, n - k + 1)
    hi = 1.0 if k == n else inv(0.975, k + 1, n - k)
    return lo, hi


def paired_stat(db, a, b, value):
    """per-seed value(row a) - value(row b) over the seeds both hold; a, b = (sweeps, label);
    value(run_id) -> (float, read at minimum?)"""
    ra, rb = db.row(*a), db.row(*b)
    seeds = sorted(set(ra) & set(rb))
    d, at_min = [], 0
    used = []
    for s in seeds:
        (x, mx), (y, my) = value(ra[s].run_id), value(rb[s].run_id)
        if x is None or y is None:  # a run without the metric (e.g. its gated eval pass not made)
            continue
        d.append(x - y)
        at_min += mx + my
        used.append(s)
    seeds = used
    iv, p = t_interval(d)
    return Stat(d, 'paired t', {ra[s].kernel for s in seeds}, {rb[s].kernel for s in seeds},
                [ra[s].code for s in seeds] + [rb[s].code for s in seeds], at_min, iv, p)


def paired_dict(a, b, ka=(), kb=None):
    """per-seed differences a - b ({seed: value}), where both have a value; ka, kb: the kernels"""
    d = [a[s] - b[s] for s in sorted(set(a) & set(b)) if a[s] is not None and b[s] is not None]
    iv, p = t_interval(d)
    return Stat(d, 'paired t', set(ka), kb, (), 0, iv, p)


def fisher_counts(k1, n1, k2, n2):
    return fisher(k1, n1 - k1, k2, n2 - k2)


def holm_family(tests):
    """{key: Holm-adjusted p} over tests [(key, n, p)]: the family is the tests with a p from MIN_N
    runs or more (a contrast of fewer shows its values and no interval, so no adjusted p, and its p
    does not move the others')"""
    fam = [(k, p) for k, n, p in tests if p is not None and n >= MIN_N]
    return dict(zip([k for k, _ in fam], holm([p for _, p in fam])))
