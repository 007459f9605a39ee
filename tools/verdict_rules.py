#!/usr/bin/env python3
"""verdict_rules.py -- the rules that turn numbers into the words of the verdict table, each
written once: tools/verdicts.py applies them to every row, and results/README.md states them by
printing RULES_TEXT (generated, so the page and the code cannot say different things).  A rule
change is an edit here; `make check-results` then re-words every row it changes.
"""
import math

MIN_N = 3          # no interval from fewer values (seed pairs, runs): "n = 2: no CI" and the values
GONE = 0.003       # |Δ| below this (nats) at a setting: the effect is "gone" there
ALPHA = 0.05       # the intervals are 95%; a count test "resolves" at p < ALPHA
MARGIN = 0.01      # nats: "no worse than" (a non-inferiority claim) means the interval's top is below it
QUICK_TOKENS = 0.5e6  # a verdict resting on a budget below this (the quick tier) is at most "direction only"


def sign(x):
    return (x > 0) - (x < 0)


def excludes0(st):
    return st.lo is not None and st.n >= MIN_N and (st.lo > 0 or st.hi < 0)


def verdict(st, expect, tokens):
    """the word for one contrast against the paper's claim.  expect: -1 / +1 (the sign the paper
    predicts for row - reference), ('level', v) (the paper's value of a level) or ('fewer', None)
    (the row has fewer events than the reference: a count test), ('noworse', m) (row - reference
    below the margin m: non-inferiority)"""
    if isinstance(expect, tuple) and expect[0] == 'fewer':
        if st.p is None:
            return 'unresolved (no runs)'
        direction = -sign(st.mean)  # st.mean: rate(row) - rate(reference)
        if st.p < ALPHA:
            word = 'reproduced' if direction > 0 else 'contradicted'
        else:
            word = 'inconclusive' if direction > 0 else 'not reproduced'
    elif st.lo is None or st.n < MIN_N:
        return 'unresolved (n = %d)' % st.n
    elif isinstance(expect, tuple) and expect[0] == 'noworse':
        m = expect[1]
        word = ('reproduced' if st.hi < m else 'contradicted' if st.lo > m else
                'inconclusive' if st.mean < m else 'not reproduced')
    elif isinstance(expect, tuple):
        word = 'reproduced' if st.lo <= expect[1] <= st.hi else 'contradicted'
    elif excludes0(st):
        word = 'reproduced' if sign(st.mean) == expect else 'contradicted'
    else:
        word = 'inconclusive' if sign(st.mean) == expect else 'not reproduced'
    if word == 'reproduced' and tokens < QUICK_TOKENS:
        word = 'direction only'
    return word


def combine(words):
    """one word for a row of several contrasts"""
    if len(set(words)) == 1:
        return words[0]
    if any(w in ('reproduced', 'direction only') for w in words):
        return 'partly'
    if 'contradicted' in words:
        return 'contradicted in part'
    return 'inconclusive'


def verb(word):
    """a trend word as the predicate of "the gain ..." """
    return {'within noise': 'changes within noise', 'gone': 'is gone'}.get(
        word, 'is ' + word if word.startswith('unresolved') else word)


def trend(a, b, welch):
    """(word, Welch Δ of Δ or None) for a contrast moving from setting a (the headline) to b:
    every seed of each setting, Welch's interval on mean(b) - mean(a)"""
    if a.n < MIN_N or b.n < MIN_N:
        return 'unresolved (n = %d)' % min(a.n, b.n), None
    w = welch(b.values, a.values)
    if abs(b.mean) < GONE:
        return 'gone', w
    lo, hi = w[1]
    if lo > 0 or hi < 0:
        if sign(b.mean) != sign(a.mean):
            return 'flips', w
        return ('grows' if abs(b.mean) > abs(a.mean) else 'fades'), w
    if excludes0(b) and sign(b.mean) == sign(a.mean):
        return 'holds', w
    return 'within noise', w


RULES_TEXT = """\
**How the words are made** (`tools/verdict_rules.py`, applied by `tools/verdicts.py`, which
writes this table from `gated.db`; `make check-results` fails when the committed table differs).
*Intervals*: 95% t intervals; a contrast of one sweep pairs runs by seed (paired t over the seeds
both rows hold), a contrast of two groups of runs (row 12) uses Welch's; no interval from fewer
than {min_n} values: the cell says "n = 2: no CI" and gives both. Every seed a setting holds is
used (the sweeps of a setting are pooled by seed, so seeds that land later are read without a
code change). *Verdict*, per contrast against the paper's direction: the interval excludes 0 on
the paper's side: **reproduced** (at most **direction only** when the budget is below {quick}
tokens, the quick tier); on the other side: **contradicted**; it spans 0 with the mean on the
paper's side: **inconclusive**, on the other: **not reproduced**; a claim of *no worse than*
(row 21) is **reproduced** when the interval's top is below {margin} nats, **contradicted** when
its bottom is above it, else **inconclusive** (mean below) / **not reproduced**; a level is **reproduced** when
its interval holds the paper's value, else **contradicted** (row 10: the gate's mean score, a t
interval; row 12: the share of runs with a sink at the end, whose Clopper–Pearson interval is read
against the paper's 0); a count (divergences, G1 against the baseline) by Fisher's exact test at p
< {alpha}, and loss spikes (steps whose loss exceeds the median of the previous 100 by more than
`train.spike_threshold`) per 100 steps past the warm-up, in the finished runs (a diverged run's
window ends a few steps past it), by the exact Mann–Whitney test, its direction that of the ranks
(U), each **reproduced** / **contradicted** when p < {alpha} (fewer / more with G1), else
**inconclusive** / **not reproduced**, and with no runs yet: **unresolved**; a row of several contrasts is **partly** when one
is reproduced and another not, **contradicted in part** when none is reproduced and one is
contradicted, else **inconclusive**. *Trend* (the headline setting against the longest budget, or
the larger size), the first rule that applies: fewer than {min_n} seeds on a side: **unresolved**;
|Δ| < {gone} at the later setting: **gone**; Welch's interval on the difference of the two Δs
(every seed of each) excludes 0: **flips** when the later Δ's sign is the other (whatever its
own interval), else **grows** / **fades** (|Δ| larger / smaller); the interval spans 0:
**holds** when the later Δ's own interval excludes 0 on the same side, else **within noise**.
The budget points between (2 seeds each) are shown, both values, and given no word. *One budget
at T 512* (rows 18–21): no trend word; the cell gives the same contrast half-way through the runs
where the row has one (rows 18, 20, 21: the same cosine schedule, a point on the way) and each
row's word by the flatness rule of the T 512 table (the drop over the last 30% of the run against
the seed sd: flat, falling or rising, none below 3 seeds); *falling* means the Δ is that of
models still learning. *Read at the
minimum*: a run whose validation loss ended above its lowest evaluation (the curve turned up, by
any amount) is read at that lowest evaluation, and the cell counts such runs. *Kernels*: where
two settings of a trend, or the two rows of a budget point, ran on different OpenBLAS kernels, the
cell says so, with the largest change of a per-seed contrast that the kernel twins measured
(`results/twins/`, `tools/kernel_effect.py`), which no interval includes. A size trend whose d128
runs ran on another kernel than its d192 runs reads its d128 side from those runs' kernel twins
(the same run ids re-made on the d192 kernel) wherever at least {min_n} seeds have both twins, and
names them: both sizes then on one kernel.
""".format(min_n=MIN_N, gone=GONE, alpha=ALPHA, margin=MARGIN, quick='%gM' % (QUICK_TOKENS / 1e6))


def fmt(x, digits, signed=True):
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return '–'
    s = ('%+.*f' if signed else '%.*f') % (digits, x)
    return s.replace('-', '−')
