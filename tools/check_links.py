#!/usr/bin/env python3
# check_links.py -- every relative link of the project's Markdown pages resolves.
#
# Usage: tools/check_links.py [--self-test] [--root DIR] [FILE.md ...]
#   default files: README.md, docs/*.md, results/README.md (under --root, default: the
#   repository this script lives in).
#
# Why: the README is a front page over reference pages in docs/ and the verdicts in
# results/README.md; a moved section or a renamed heading must not leave a link that leads
# nowhere.  A link [text](target) or <target> outside code is checked when it is relative
# (no scheme, not mailto:): its path must exist, relative to the page, and an #anchor in it
# (or a bare #anchor, for the page itself) must name a heading of the target page, with
# GitHub's rule for heading ids (markup dropped, lower case; every character that is not a
# letter, digit, space, '-' or '_' dropped; each space a '-'; a repeated id gets -1, -2, ...), or an
# explicit <a id="..."> / <a name="...">.  Exit 0 when all resolve, 1 listing every broken
# link as FILE:LINE: target: why, 2 on bad usage.
#
# --self-test plants pages with good and broken links in a temporary directory and fails
# unless exactly the broken ones are reported (so the checker itself cannot rot silently).
import os
import re
import sys
import tempfile
import unicodedata

FENCE = re.compile(r'^\s*(```|~~~)')
HEADING = re.compile(r'^(#{1,6})\s+(.*?)\s*#*\s*$')
HTML_ID = re.compile(r'<a\s+(?:[^>]*\s)?(?:id|name)\s*=\s*"([^"]+)"', re.I)
CODE_SPAN = re.compile(r'(`+)(.+?)\1')
# [text](target "title") -- text may hold one level of brackets (images inside links)
LINK = re.compile(r'!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^()\s<>]*(?:\([^()\s]*\)[^()\s<>]*)*)>?(?:\s+"[^"]*")?\s*\)')
AUTOLINK = re.compile(r'<((?:\.\.?/|#)[^>\s]*)>')
SCHEME = re.compile(r'^[A-Za-z][A-Za-z0-9+.-]*:')


def slug(text):
    """GitHub's id for a heading whose Markdown source is `text`."""
    t = re.sub(r'!?\[([^\]]*)\]\([^)]*\)', r'\1', text)  # links and images: their text
    t = re.sub(r'<[^>]+>', '', t)                          # inline HTML
    t = t.replace('`', '').replace('*', '')                 # code and emphasis markers (not '_':
                                                            # snake_case names are kept)
    t = t.strip().lower()
    out = []
    for ch in t:
        cat = unicodedata.category(ch)
        if ch in ' -' or cat[0] in 'LMN' or cat == 'Pc':  # Ruby's \p{Word}, a space, '-'
            out.append('-' if ch == ' ' else ch)
    return ''.join(out)


def outside_code(text):
    """(line number, line) of every line outside fenced code blocks."""
    fence = None
    for n, line in enumerate(text.split('\n'), 1):
        m = FENCE.match(line)
        if fence:
            if m and m.group(1) == fence:
                fence = None
        elif m:
            fence = m.group(1)
        else:
            yield n, line


def blank_code_spans(line):
    return CODE_SPAN.sub(lambda s: ' ' * len(s.group(0)), line)


ANCHORS = {}


def anchors(path):
    """The ids a link can name in page `path`: its headings' and its <a id/name>s."""
    if path not in ANCHORS:
        ids, seen = set(), {}
        with open(path, encoding='utf-8') as f:
            text = f.read()
        for _, line in outside_code(text):
            ids.update(HTML_ID.findall(blank_code_spans(line)))
            h = HEADING.match(line)
            if h:
                s = slug(h.group(2))
                k = seen.get(s, 0)
                seen[s] = k + 1
                ids.add(s if k == 0 else '%s-%d' % (s, k))
        ANCHORS[path] = ids
    return ANCHORS[path]


def check_file(page):
    """[(line, target, why)] for the broken relative links of one page."""
    bad = []
    with open(page, encoding='utf-8') as f:
        text = f.read()
    base = os.path.dirname(page)
    for n, raw in outside_code(text):
        line = blank_code_spans(raw)
        targets = [m.group(1) for m in LINK.finditer(line)] + AUTOLINK.findall(line)
        for t in targets:
            if not t or SCHEME.match(t) or t.startswith('//'):
                continue
            path, _, frag = t.partition('#')
            dest = os.path.normpath(os.path.join(base, path)) if path else page
            if not os.path.exists(dest):
                bad.append((n, t, 'no such file %s' % os.path.relpath(dest)))
                continue
            if frag and dest.endswith('.md'):
                if frag not in anchors(dest):
                    bad.append((n, t, 'no heading or anchor #%s in %s' % (frag, os.path.relpath(dest))))
            elif frag and not os.path.isfile(dest):
                bad.append((n, t, 'an #anchor into a directory'))
    return bad


def default_files(root):
    docs = os.path.join(root, 'docs')
    files = [os.path.join(root, 'README.md')]
    if os.path.isdir(docs):
        files += sorted(os.path.join(docs, f) for f in os.listdir(docs) if f.endswith('.md'))
    res = os.path.join(root, 'results', 'README.md')
    if os.path.exists(res):
        files.append(res)
    return files


def run(files):
    broken = 0
    for page in files:
        if not os.path.isfile(page):
            print('check_links: %s: no such file' % page, file=sys.stderr)
            return 2
        for n, t, why in check_file(page):
            print('%s:%d: %s: %s' % (os.path.relpath(page), n, t, why))
            broken += 1
    return 1 if broken else 0


def self_test():
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(os.path.join(d, 'docs'))
        os.makedirs(os.path.join(d, 'results'))
        pages = {
            'README.md': '# Top\n\n## Where each topic lives\n\n## A `code` heading: x / y (z)\n\n## Top\n\n'
                         '[ok](docs/a.md) [ok](docs/a.md#store-sqlite) [ok](#where-each-topic-lives)\n'
                         '[ok](#a-code-heading-x--y-z) [ok](#top-1) [ok](results/README.md#row-3)\n'
                         '[BAD1](docs/missing.md) [BAD2](docs/a.md#no-such-heading)\n'
                         '`[not a link](nowhere.md)` [web](https://example.org/x#y)\n'
                         '```\n[in a fence](nowhere.md)\n```\n',
            'docs/a.md': '# A\n\n## Store (SQLite)\n\n[ok](../README.md#top) [BAD3](../README.md#topp)\n'
                         '[ok](../tools) <./a.md#a> [BAD4](#store_sqlite)\n',
            'results/README.md': '# R\n\n<a id="row-3"></a>\n\n| [ok](../docs/a.md#a) |\n',
        }
        for name, text in pages.items():
            with open(os.path.join(d, name), 'w', encoding='utf-8') as f:
                f.write(text)
        os.makedirs(os.path.join(d, 'tools'))
        found = []
        for page in default_files(d):
            found += [t for _, t, _ in check_file(page)]
        want = ['docs/missing.md', 'docs/a.md#no-such-heading', '../README.md#topp', '#store_sqlite']
        cases = [('Gated attention: `gated eval --quant / --drop` (issue 17)',
                  'gated-attention-gated-eval---quant----drop-issue-17'),
                 ('The committed database, `results/db/`', 'the-committed-database-resultsdb'),
                 ('Targets (issue 5) and where they stand', 'targets-issue-5-and-where-they-stand'),
                 ('**Bold** and `train.init_from`', 'bold-and-traininit_from'),
                 ('Δ against ×0.5', 'δ-against-05')]
        bad_slugs = [(h, slug(h), s) for h, s in cases if slug(h) != s]
        if sorted(found) != sorted(want) or bad_slugs:
            print('check_links --self-test: FAILED: reported %s, expected %s; slugs wrong: %s' % (
                found, want, bad_slugs), file=sys.stderr)
            return 1
    print('check_links --self-test: ok (%d planted broken links found, none else; %d heading ids)' % (
        len(want), len(cases)))
    return 0


def main(argv):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    files = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == '--self-test':
            return self_test()
        if a == '--root':
            if i + 1 >= len(argv):
                print('usage: tools/check_links.py [--self-test] [--root DIR] [FILE.md ...]', file=sys.stderr)
                return 2
            root = argv[i + 1]
            i += 2
            continue
        if a.startswith('-'):
            print('check_links: unknown option %s' % a, file=sys.stderr)
            return 2
        files.append(a)
        i += 1
    files = files or default_files(root)
    rc = run(files)
    if rc == 0:
        print('check_links: %d pages, every relative link and #anchor resolves' % len(files))
    return rc


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
