#!/usr/bin/env python3
# toolstats.py -- the small statistics the tools/ scripts share (no scipy): Student t tail and
# quantile, the paired t-test, Holm's adjustment, Fisher's exact test, the exact Mann-Whitney test,
# and `show` for printing
# text that came from a database (labels, run names) with control characters escaped, `mean_sd`,
# `db_uri` / `connect_ro` for opening a database whatever characters its path holds, and `rewrap`
# (the generated prose's paragraphs filled to 100 columns).
# The report's own statistics are core/lab/stats.c; these follow the same definitions, and
# tools/contrasts.py with REF = a sweep's baseline reproduces the report's numbers.
import math
import os
import re
import sqlite3
import textwrap
import unicodedata
import urllib.parse
from math import comb


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


def mann_whitney(x, y):
    """two-sided Mann-Whitney (Wilcoxon rank-sum) test, exact: the permutation distribution of
    x's rank sum (mid-ranks for ties, so conditional on them) over every choice of len(x) of the
    pooled values; (U of x, p). None where a side is empty."""
    n1, n = len(x), len(x) + len(y)
    if not x or not y:
        return None
    pooled = sorted(list(x) + list(y))
    rank2 = {}  # twice the mid-rank of each value: integers
    i = 0
    while i < n:
        j = i
        while j < n and pooled[j] == pooled[i]:
            j += 1
        rank2[pooled[i]] = i + j + 1  # 2 * ((i + 1) + j) / 2
        i = j
    r2 = [rank2[v] for v in pooled]
    ways = [dict() for _ in range(n1 + 1)]  # ways[k][s]: subsets of k items with doubled rank sum s
    ways[0][0] = 1
    for r in r2:
        for k in range(n1 - 1, -1, -1):
            for s_, c in ways[k].items():
                ways[k + 1][s_ + r] = ways[k + 1].get(s_ + r, 0) + c
    obs = sum(rank2[v] for v in x)
    mid = n1 * (n + 1)  # twice the mean rank sum
    dev = abs(obs - mid)
    total = sum(ways[n1].values())
    p = sum(c for s_, c in ways[n1].items() if abs(s_ - mid) >= dev) / total
    return obs / 2 - n1 * (n1 + 1) / 2, min(1.0, p)


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


def paired(d, margin=None):
    """mean, 95% t CI, two-sided p of the paired t-test of differences d (n >= 2), and the
    TOST p against +-margin when given; None when n < 2"""
    n = len(d)
    if n < 2:
        return None
    m = sum(d) / n
    se = math.sqrt(sum((v - m) ** 2 for v in d) / (n - 1) / n)
    df = n - 1
    tq = t_q(0.975, df)
    p = 2 * t_sf(abs(m) / se, df) if se > 0 else (1.0 if m == 0 else 0.0)  # no spread: p 0 unless no difference
    tost = None
    if margin is not None:
        tost = max(t_sf((m + margin) / se, df), 1 - t_sf((m - margin) / se, df)) if se > 0 else 0.0
    return m, m - tq * se, m + tq * se, p, tost


def holm(ps):
    """Holm-adjusted p values of the list ps (None entries stay None), in the same order"""
    idx = sorted((p, i) for i, p in enumerate(ps) if p is not None)
    out, run = [None] * len(ps), 0.0
    for k, (p, i) in enumerate(idx):
        run = max(run, min(1.0, (len(idx) - k) * p))
        out[i] = run
    return out


def fisher(a, b, c, d):
    """two-sided Fisher exact p of [[a, b], [c, d]] (the tables no more likely than this one)"""
    r1, c1, n = a + b, a + c, a + b + c + d
    def pr(x):
        return comb(c1, x) * comb(n - c1, r1 - x) / comb(n, r1)
    p0 = pr(a)
    lo, hi = max(0, r1 - (n - c1)), min(r1, c1)
    return min(1.0, sum(pr(x) for x in range(lo, hi + 1) if pr(x) <= p0 * (1 + 1e-9)))


def show(s):
    """text from a database, safe for a terminal: control and non-ASCII characters escaped"""
    s = str(s)
    if all(' ' <= ch <= '~' for ch in s):
        return s
    return ascii(s)[1:-1]


def show_text(s):
    """text for a terminal that keeps printable Unicode (−, Δ, ∈) but escapes control, format
    (bidi overrides among them), separator and unassigned characters, as show() does"""
    return ''.join(ascii(ch)[1:-1] if ch != ' ' and unicodedata.category(ch)[0] in 'CZ' else ch for ch in str(s))


def mean_sd(xs):
    """mean and sample standard deviation (n - 1) of xs; NaN where undefined"""
    n = len(xs)
    m = sum(xs) / n if n else float('nan')
    return m, math.sqrt(sum((x - m) ** 2 for x in xs) / (n - 1)) if n > 1 else float('nan')


def db_uri(path, mode='ro'):
    """a SQLite file: URI for path (every character of the path quoted, so %, ? and # stay
    part of the name)"""
    return 'file:%s?mode=%s' % (urllib.parse.quote(os.path.abspath(path)), mode)


def connect_ro(path):
    """path opened read-only (never created)"""
    return sqlite3.connect(db_uri(path), uri=True)


def rewrap(text, width=100):
    """each paragraph and list item of text filled to width (list items indented by 3)"""
    out = []
    for block in text.rstrip('\n').split('\n\n'):
        items, cur = [], []
        for line in block.split('\n'):
            if re.match(r'\d+\. ', line) and cur:
                items.append(' '.join(cur))
                cur = []
            cur.append(line.strip())
        items.append(' '.join(cur))
        out.append('\n'.join(textwrap.fill(i, width, subsequent_indent='   ' if re.match(r'\d+\. ', i) else '',
                                          break_long_words=False, break_on_hyphens=False) for i in items))
    return '\n\n'.join(out) + '\n'
