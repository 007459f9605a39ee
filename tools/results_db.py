#!/usr/bin/env python3
"""results_db.py -- the committed form of results/gated.db.

results/gated.db is made, not committed: the repository holds it as
results/db/, one xz-compressed gated database per sweep ("part") and a
MANIFEST.tsv, so that a session that adds or reruns the runs of a few sweeps
changes only those parts (a 200 MB database changed in place cannot land: a
submission's diffs are capped).

  tools/results_db.py unpack [--dir results/db] [--db results/gated.db] [--gated build/gated]
      Check every part against the manifest (file SHA-256), decompress the
      parts into a temporary directory and fold them into DB with
      `gated merge` (which treats them as untrusted: names checked, every
      value bound, all or nothing per part).  DB may already exist: merge is
      idempotent and keeps, of a run present in both, the better one.
      Then the same check as verify.
  tools/results_db.py pack [--db results/gated.db] [--dir results/db] [--preset 9]
      Split DB into parts and write those whose content changed (a part
      whose content digest is the manifest's is left as it is, byte for
      byte); remove the parts of sweeps DB no longer has; rewrite MANIFEST.tsv.
  tools/results_db.py verify [--dir results/db] [--db results/gated.db]
      Exit 0 when DB holds exactly the manifest's content, part by part;
      else name each part that differs (exit 1).

A run belongs to the part of the first sweep (by name, in byte order) whose
sweep_runs list it, or to "_unswept"; a part holds its runs (with their
metrics, summary, histograms, code attestations and environments) and every
sweep_runs row of its sweep, which may name a run kept in another part.
Every part holds the meta table.  The content digest is a SHA-256 over the
part's rows in a fixed order, with environments named by their content hash
(env_hash) instead of their row id, so it does not depend on the order in
which a database was filled; meta is not in it (created_at is the database's
own).

Exit status: 0 success, 1 a failure (a part differs, merge failed, a write
failed), 2 bad input (a missing database or manifest, a malformed manifest
line, a part whose file does not match the manifest, a sweep name that
cannot be a file name).  Names read from a database or a manifest are shown
escaped (ascii()) and reach no shell: subprocesses get argument lists.
"""
import argparse
import hashlib
import json
import lzma
import os
import re
import sqlite3
import subprocess
import sys
import tempfile

MANIFEST = "MANIFEST.tsv"
HEADER = ["part", "runs", "rows", "content_sha256", "file_sha256", "file_bytes"]
PART_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,99}$")
HEX_RE = re.compile(r"^[0-9a-f]{64}$")
UNSWEPT = "_unswept"

# Tables a part holds, each with the column that assigns its rows to a part
# and the order its rows are digested in.  runs.env_id is replaced by the
# environment's env_hash in the digest; environments are digested without
# their env_id.
RUN_TABLES = [
    ("runs", "run_id"),
    ("metrics", "run_id, key, context, step"),
    ("summary", "run_id, key, context"),
    ("histograms", "run_id, key, context, step"),
    ("code_attest", "run_id, code_version, cflags"),
]


class BadInput(Exception):
    pass


def show(s):
    """A name from a database or a manifest, quoted and safe for a terminal."""
    return ascii(s)


def esc(path):
    """A path, safe for a terminal (escaped, not quoted)."""
    return ascii(path)[1:-1]


def say(msg):
    print("results_db: " + msg, file=sys.stderr)


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def open_ro(path):
    if not os.path.isfile(path):
        raise BadInput("%s: no such database" % esc(path))
    db = sqlite3.connect("file:%s?mode=ro" % path.replace("?", "%3f").replace("#", "%23"), uri=True)
    try:
        names = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.DatabaseError as e:
        raise BadInput("%s: not a database: %s" % (esc(path), e))
    need = {"runs", "metrics", "summary", "histograms", "environments", "sweep_runs", "meta"}
    if not need <= names:
        raise BadInput("%s: not a gated database (no %s)" % (esc(path), ", ".join(sorted(need - names))))
    return db, names


def columns(db, table):
    return [r[1] for r in db.execute("SELECT * FROM pragma_table_info(?)", (table,))]


def partition(db):
    """{run_id: part}, {part: [sweep names]} for a gated database."""
    part_of = {}
    for run_id, sweep in db.execute("SELECT run_id, min(sweep) FROM sweep_runs GROUP BY run_id"):
        part_of[run_id] = sweep
    for (run_id,) in db.execute("SELECT run_id FROM runs"):
        part_of.setdefault(run_id, UNSWEPT)
    sweeps = {s for (s,) in db.execute("SELECT DISTINCT sweep FROM sweep_runs")}
    for s in sweeps:
        if not isinstance(s, str) or not PART_RE.match(s) or s == UNSWEPT:
            raise BadInput("sweep name %s cannot name a part file" % show(s))
    return part_of, sorted(sweeps | set(part_of.values()))


def canon(row):
    row = [["blob", v.hex()] if isinstance(v, bytes) else v for v in row]
    return json.dumps(row, separators=(",", ":"), ensure_ascii=True, allow_nan=True).encode() + b"\n"


def digests(db, names):
    """{part: (content_sha256, runs, rows)} of a gated database."""
    part_of, parts = partition(db)
    hs = {p: hashlib.sha256() for p in parts}
    nrows = dict.fromkeys(parts, 0)
    nruns = dict.fromkeys(parts, 0)
    for p in parts:
        hs[p].update(b"part\n")
    env_hash = dict(db.execute("SELECT env_id, env_hash FROM environments"))
    env_cols = [c for c in columns(db, "environments") if c != "env_id"]
    envs_of = {p: set() for p in parts}
    for table, order in RUN_TABLES:
        if table not in names:
            continue
        cols = columns(db, table)
        for p in parts:
            hs[p].update(canon(["table", table] + cols))
        env_i = cols.index("env_id") if table == "runs" else -1
        for row in db.execute("SELECT * FROM %s ORDER BY %s" % (table, order)):
            p = part_of.get(row[0])
            if p is None:  # a row of no run (dangling): digested nowhere, as merge copies none
                continue
            row = list(row)
            if env_i >= 0:
                envs_of[p].add(row[env_i])
                row[env_i] = env_hash.get(row[env_i])
                nruns[p] += 1
            hs[p].update(canon(row))
            nrows[p] += 1
    for p in parts:
        hs[p].update(canon(["table", "environments"] + env_cols))
    for row in db.execute("SELECT env_id, %s FROM environments ORDER BY env_hash" % ", ".join(env_cols)):
        for p in parts:
            if row[0] in envs_of[p]:
                hs[p].update(canon(list(row[1:])))
                nrows[p] += 1
    cols = columns(db, "sweep_runs")
    for p in parts:
        hs[p].update(canon(["table", "sweep_runs"] + cols))
    for row in db.execute("SELECT * FROM sweep_runs ORDER BY sweep, run_id"):
        hs[row[0]].update(canon(list(row)))
        nrows[row[0]] += 1
    return {p: (hs[p].hexdigest(), nruns[p], nrows[p]) for p in parts}


def read_manifest(d):
    path = os.path.join(d, MANIFEST)
    if not os.path.isfile(path):
        raise BadInput("%s: no manifest" % esc(path))
    out = {}
    with open(path, encoding="ascii", errors="replace") as f:
        lines = f.read().split("\n")
    if not lines or lines[0].split("\t") != HEADER:
        raise BadInput("%s:1: expected the header %s" % (esc(path), "\\t".join(HEADER)))
    for i, line in enumerate(lines[1:], start=2):
        if not line:
            continue
        f = line.split("\t")
        where = "%s:%d" % (esc(path), i)
        if len(f) != len(HEADER):
            raise BadInput("%s: expected %d tab-separated fields, got %d" % (where, len(HEADER), len(f)))
        part, runs, rows, content, filesha, size = f
        if not PART_RE.match(part):
            raise BadInput("%s: part: %s is not a part name" % (where, show(part)))
        for key, v in (("runs", runs), ("rows", rows), ("file_bytes", size)):
            if not re.match(r"^[0-9]{1,15}$", v):
                raise BadInput("%s: %s: %s is not a count" % (where, key, show(v)))
        for key, v in (("content_sha256", content), ("file_sha256", filesha)):
            if not HEX_RE.match(v):
                raise BadInput("%s: %s: %s is not a SHA-256" % (where, key, show(v)))
        if part in out:
            raise BadInput("%s: part %s listed twice" % (where, show(part)))
        out[part] = {"runs": int(runs), "rows": int(rows), "content": content, "file": filesha, "bytes": int(size)}
    return out


def write_manifest(d, man):
    path = os.path.join(d, MANIFEST)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="ascii") as f:
        f.write("\t".join(HEADER) + "\n")
        for p in sorted(man):
            m = man[p]
            f.write("%s\t%d\t%d\t%s\t%s\t%d\n" % (p, m["runs"], m["rows"], m["content"], m["file"], m["bytes"]))
    os.replace(tmp, path)


def part_file(d, part):
    return os.path.join(d, part + ".db.xz")


def build_part(src_path, db, names, part, run_ids, tmpdir):
    """An uncompressed gated database holding one part; its path."""
    out = os.path.join(tmpdir, part + ".db")
    if os.path.exists(out):
        os.remove(out)
    p = sqlite3.connect(out)
    tables = ["meta", "environments", "runs", "metrics", "summary", "histograms", "sweep_runs", "code_attest"]
    for (sql,) in db.execute(
        "SELECT sql FROM sqlite_master WHERE type = 'table' AND name IN (%s) ORDER BY name" % ",".join("?" * len(tables)),
        tables,
    ):
        p.execute(sql)
    p.execute("ATTACH DATABASE ? AS src", ("file:%s?mode=ro" % src_path.replace("?", "%3f").replace("#", "%23"),))
    p.execute("CREATE TEMP TABLE part_runs (run_id TEXT PRIMARY KEY)")
    p.executemany("INSERT INTO part_runs VALUES (?)", [(r,) for r in run_ids])
    p.execute("INSERT INTO main.meta SELECT * FROM src.meta")
    p.execute(
        "INSERT INTO main.environments SELECT * FROM src.environments WHERE env_id IN"
        " (SELECT env_id FROM src.runs WHERE run_id IN (SELECT run_id FROM part_runs))"
    )
    for table, order in RUN_TABLES:
        if table in names:
            p.execute(
                "INSERT INTO main.%s SELECT * FROM src.%s WHERE run_id IN (SELECT run_id FROM part_runs) ORDER BY %s"
                % (table, table, order)
            )
    p.execute("INSERT INTO main.sweep_runs SELECT * FROM src.sweep_runs WHERE sweep = ? ORDER BY run_id", (part,))
    p.commit()
    p.execute("DETACH DATABASE src")
    p.execute("VACUUM")
    p.close()
    return out


def cmd_pack(a):
    db, names = open_ro(a.db)
    if db.execute("PRAGMA quick_check").fetchone()[0] != "ok":
        raise BadInput("%s: fails PRAGMA quick_check" % esc(a.db))
    dig = digests(db, names)
    part_of, parts = partition(db)
    os.makedirs(a.dir, exist_ok=True)
    try:
        old = read_manifest(a.dir)
    except BadInput:
        old = {}
    new = {}
    written = kept = 0
    with tempfile.TemporaryDirectory(prefix="results_db.") as tmp:
        for p in parts:
            content, nruns, nrows = dig[p]
            f = part_file(a.dir, p)
            o = old.get(p)
            if o and o["content"] == content and os.path.isfile(f) and sha256_file(f) == o["file"]:
                new[p] = o
                kept += 1
                continue
            runs = [r for r, q in part_of.items() if q == p]
            raw = build_part(a.db, db, names, p, runs, tmp)
            with open(raw, "rb") as fin:
                data = lzma.compress(fin.read(), preset=a.preset)
            os.remove(raw)
            with open(f + ".tmp", "wb") as fout:
                fout.write(data)
            os.replace(f + ".tmp", f)
            new[p] = {"runs": nruns, "rows": nrows, "content": content,
                      "file": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
            written += 1
            say("%s: %d runs, %d rows, %d bytes" % (show(p), nruns, nrows, len(data)))
    removed = 0
    for p in old:
        if p not in new and os.path.isfile(part_file(a.dir, p)):
            os.remove(part_file(a.dir, p))
            removed += 1
    write_manifest(a.dir, new)
    total = sum(m["bytes"] for m in new.values())
    print("pack: %d parts (%d written, %d unchanged, %d removed), %d runs, %d bytes" % (
        len(new), written, kept, removed, sum(m["runs"] for m in new.values()), total))
    return 0


def verify(db_path, d):
    man = read_manifest(d)
    db, names = open_ro(db_path)
    dig = digests(db, names)
    bad = []
    for p in sorted(set(man) | set(dig)):
        if p not in dig:
            bad.append("%s: in the manifest, not in %s" % (show(p), esc(db_path)))
        elif p not in man:
            bad.append("%s: in %s, not in the manifest" % (show(p), esc(db_path)))
        elif dig[p][0] != man[p]["content"]:
            bad.append("%s: content differs (%d runs, %d rows here; manifest %d, %d)" % (
                show(p), dig[p][1], dig[p][2], man[p]["runs"], man[p]["rows"]))
    for b in bad:
        say(b)
    if bad:
        return 1
    print("verify: %s holds the %d parts of %s (%d runs)" % (
        esc(db_path), len(man), esc(os.path.join(d, MANIFEST)), sum(m["runs"] for m in man.values())))
    return 0


def cmd_verify(a):
    return verify(a.db, a.dir)


def cmd_unpack(a):
    man = read_manifest(a.dir)
    if not man:
        raise BadInput("%s: lists no part" % esc(os.path.join(a.dir, MANIFEST)))
    if not os.access(a.gated, os.X_OK):
        raise BadInput("%s: not an executable (make builds build/gated)" % esc(a.gated))
    # every part is checked before anything is merged
    for p, m in sorted(man.items()):
        f = part_file(a.dir, p)
        if not os.path.isfile(f):
            raise BadInput("%s: missing (listed in %s)" % (esc(f), MANIFEST))
        if sha256_file(f) != m["file"]:
            raise BadInput("%s: SHA-256 differs from %s's" % (esc(f), MANIFEST))
    with tempfile.TemporaryDirectory(prefix="results_db.") as tmp:
        paths = []
        for p in sorted(man):
            out = os.path.join(tmp, p + ".db")
            try:
                with open(part_file(a.dir, p), "rb") as fin, open(out, "wb") as fout:
                    dec = lzma.LZMADecompressor(format=lzma.FORMAT_XZ)
                    for block in iter(lambda: fin.read(1 << 20), b""):
                        fout.write(dec.decompress(block))
                    if not dec.eof:
                        raise lzma.LZMAError("truncated")
            except lzma.LZMAError as e:
                raise BadInput("%s: not an xz file: %s" % (esc(part_file(a.dir, p)), e))
            paths.append(out)
        d = os.path.dirname(a.db)
        if d:
            os.makedirs(d, exist_ok=True)
        r = subprocess.run([a.gated, "merge", a.db] + paths, stdout=subprocess.DEVNULL)
        if r.returncode != 0:
            say("gated merge into %s failed (exit %d)" % (esc(a.db), r.returncode))
            return 1
    rc = verify(a.db, a.dir)
    if rc:
        say("%s also holds runs other than the parts' (or other versions of them)" % esc(a.db))
    return rc


def main(argv):
    ap = argparse.ArgumentParser(prog="results_db.py", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("pack", "unpack", "verify"):
        s = sub.add_parser(name)
        s.add_argument("--db", default="results/gated.db")
        s.add_argument("--dir", default="results/db")
        if name == "pack":
            s.add_argument("--preset", type=int, default=9, choices=range(0, 10))
        if name == "unpack":
            s.add_argument("--gated", default="build/gated")
    a = ap.parse_args(argv)
    try:
        return {"pack": cmd_pack, "unpack": cmd_unpack, "verify": cmd_verify}[a.cmd](a)
    except BadInput as e:
        say(str(e))
        return 2
    except (OSError, sqlite3.Error) as e:
        say("%s" % e)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
