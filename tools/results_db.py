#!/usr/bin/env python3
"""results_db.py -- the committed form of results/gated.db.

results/gated.db is made, not committed: the repository holds it as
results/db/, one xz-compressed gated database per sweep ("part") and a
MANIFEST.tsv, so that a session that adds or reruns the runs of a few sweeps
changes only those parts (a 200 MB database changed in place cannot land: a
submission's diffs are capped).

  tools/results_db.py unpack [--dir results/db] [--db results/gated.db] [--gated build/gated]
                             [--skip-verified]
      Check every part before anything is merged: the files against the
      manifest (a regular file, its size and SHA-256; no part file the
      manifest does not list), then each part decompressed into a temporary
      directory (two at a time): its content digest, runs and rows must be
      the manifest's and it must hold that part only.  Then fold them, one
      `gated merge` each (which treats them as untrusted: names checked,
      every value bound, all or nothing per part), into a copy of DB (or a
      new database) beside it; only when every part merged does the copy
      replace DB, so a failure leaves DB as it was.  Merge keeps, of a run
      present in both, the better one, so unpacking into a database of your
      own adds the committed runs to it.  Into a new database every row of
      the parts must be there (exit 1 otherwise, and DB is not made); into
      an existing one its differences from the manifest are listed as
      notes.  --skip-verified: an existing DB that already holds exactly the
      manifest's content is left as it is.
  tools/results_db.py pack [--db results/gated.db] [--dir results/db] [--preset 9] [--prune]
      Split a snapshot of DB into parts and write those whose content
      changed (a part whose content digest is the manifest's is left as it
      is, byte for byte), then MANIFEST.tsv.  A part of the manifest that DB
      lacks, or in which DB holds fewer runs, is refused (exit 2: unpack
      first, so that DB holds the committed runs) unless --prune says that
      dropping them is meant.
  tools/results_db.py verify [--dir results/db] [--db results/gated.db]
      Exit 0 when every part matches the manifest (checked as unpack checks
      it) and DB holds exactly the manifest's content, part by part; else
      name each part that differs (exit 1).

A run belongs to the part of the first sweep (by name, in byte order) whose
sweep_runs list it, or to "_unswept"; a part holds its runs (with their
metrics, summary, histograms, code attestations and environments) and every
sweep_runs row of its sweep, which may name a run kept in another part.
Every part holds the meta table.  What is packed is what `gated merge` would
keep: rows of runs that the runs table holds, and attestations that hold for
the stored run (same code_version and ended_at); stale attestations and rows
of deleted runs are left out and counted.  The `bench` table (benchmarks, not
results of a run) is not packed.  The content digest is a SHA-256 over the
part's rows in a fixed order, with environments named by their content hash
(env_hash) instead of their row id, so it does not depend on the order in
which a database was filled; meta is not in it (created_at is the database's
own).

Exit status: 0 success, 1 a failure (a part differs, merge failed, a write
failed), 2 bad input (a missing database or manifest, a malformed manifest
line, a part whose file does not match the manifest, a sweep name that
cannot be a file name, a part that pack would drop).  Names read from a
database or a manifest are shown escaped (ascii()) and reach no shell:
subprocesses get argument lists.
"""
import argparse
import concurrent.futures
import hashlib
import json
import lzma
import os
import re
import sqlite3
import stat
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import toolstats  # noqa: E402  (show, db_uri)

MANIFEST = "MANIFEST.tsv"
HEADER = ["part", "runs", "rows", "content_sha256", "file_sha256", "file_bytes", "db_bytes"]
PART_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,99}")
HEX_RE = re.compile(r"[0-9a-f]{64}")
COUNT_RE = re.compile(r"[0-9]{1,15}")
UNSWEPT = "_unswept"
TABLES = ["meta", "environments", "runs", "metrics", "summary", "histograms", "sweep_runs", "code_attest"]
SCHEMA_RE = re.compile(r"CREATE TABLE (\w+) \((.*)\)", re.S)

# Tables a part holds by run, with the order their rows are digested in.
# runs.env_id is replaced by the environment's env_hash in the digest;
# environments are digested without their env_id.
RUN_TABLES = [
    ("runs", "run_id"),
    ("metrics", "run_id, key, context, step"),
    ("summary", "run_id, key, context"),
    ("histograms", "run_id, key, context, step"),
    ("code_attest", "run_id, code_version, cflags"),
]
# what `gated merge` keeps of each table (core/lab/merge/merge.c): rows of stored
# runs; attestations that hold for the stored run
KEEP = {
    "code_attest": "EXISTS (SELECT 1 FROM runs r WHERE r.run_id = t.run_id"
    " AND r.code_version = t.run_code_version AND r.ended_at = t.run_ended_at)",
}
KEEP_DEFAULT = "t.run_id IN (SELECT run_id FROM runs)"


class BadInput(Exception):
    pass


def show(s):
    """A name from a database or a manifest, quoted and safe for a terminal."""
    return "'%s'" % toolstats.show(s)


esc = toolstats.show  # a path, safe for a terminal (escaped, not quoted)


def say(msg):
    print("results_db: " + msg, file=sys.stderr)


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def connect(path):
    db = toolstats.connect_ro(path)
    # text that is not UTF-8 digests as escapes instead of failing
    db.text_factory = lambda b: b.decode("utf-8", "surrogateescape")
    return db


def open_ro(path):
    if not os.path.isfile(path):
        raise BadInput("%s: no such database" % esc(path))
    db = connect(path)
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


def part_ok(p):
    return isinstance(p, str) and PART_RE.fullmatch(p) is not None


def partition(db):
    """{run_id: part} of the stored runs, and the sorted part names."""
    part_of = dict(db.execute(
        "SELECT s.run_id, min(s.sweep) FROM sweep_runs s JOIN runs r USING (run_id) GROUP BY s.run_id"))
    for (run_id,) in db.execute("SELECT run_id FROM runs"):
        part_of.setdefault(run_id, UNSWEPT)
    sweeps = {s for (s,) in db.execute("SELECT DISTINCT sweep FROM sweep_runs")}
    folded = {}
    for s in sweeps:
        if not part_ok(s) or s == UNSWEPT:
            raise BadInput("sweep name %s cannot name a part file" % show(s))
        if s.lower() in folded:
            raise BadInput("sweep names %s and %s differ only in case (one file on some file systems)"
                           % (show(folded[s.lower()]), show(s)))
        folded[s.lower()] = s
    return part_of, sorted(sweeps | set(part_of.values()))


def canon(row):
    row = [["blob", v.hex()] if isinstance(v, bytes) else v for v in row]
    return json.dumps(row, separators=(",", ":"), ensure_ascii=True, allow_nan=True).encode() + b"\n"


def _jfloat(v):
    if v != v:
        return "NaN"
    if v in (INF, -INF):
        return "Infinity" if v > 0 else "-Infinity"
    return float.__repr__(v)


# canon() of a row of SQLite values (int, float, str, None, bytes) as text,
# value by value: the same bytes, 2-3 times faster (tests check both agree)
_JSON = {int: int.__repr__, float: _jfloat, str: json.encoder.encode_basestring_ascii,
         type(None): lambda v: "null", bytes: lambda v: '["blob","%s"]' % v.hex()}
INF = float("inf")


def canon_line(row):
    return "[" + ",".join([_JSON[type(v)](v) for v in row]) + "]\n"


def kept(table):
    return KEEP.get(table, KEEP_DEFAULT)


def digests(db, names):
    """{part: (content_sha256, runs, rows)} of a gated database, how many rows
    merge would not keep (rows of deleted runs, stale attestations), and its
    partition (partition())."""
    try:
        db.text_factory = str  # fast; text that is not UTF-8 raises, then it digests as escapes
        return _digests(db, names)
    except sqlite3.OperationalError as e:
        if "decode" not in str(e):
            raise
        db.text_factory = lambda b: b.decode("utf-8", "surrogateescape")
        return _digests(db, names)


class _Hash:
    """A part's SHA-256, fed lines of text in batches."""
    def __init__(self):
        self.h = hashlib.sha256(b"part\n")
        self.buf = []

    def add(self, line):
        self.buf.append(line)
        if len(self.buf) >= 4096:
            self.flush()

    def flush(self):
        self.h.update("".join(self.buf).encode("ascii"))
        self.buf = []

    def hexdigest(self):
        self.flush()
        return self.h.hexdigest()


def _digests(db, names):
    part_of, parts = partition(db)
    hs = {p: _Hash() for p in parts}
    nrows = dict.fromkeys(parts, 0)
    nruns = dict.fromkeys(parts, 0)
    env_hash = dict(db.execute("SELECT env_id, env_hash FROM environments"))
    env_cols = [c for c in columns(db, "environments") if c != "env_id"]
    envs_of = {p: set() for p in parts}
    left_out = 0
    for table, order in RUN_TABLES:
        if table not in names:
            continue
        cols = columns(db, table)
        for p in parts:
            hs[p].add(canon_line(["table", table] + cols))
        env_i = cols.index("env_id") if table == "runs" else -1
        for row in db.execute("SELECT * FROM %s t WHERE %s ORDER BY %s" % (table, kept(table), order)):
            p = part_of[row[0]]
            if env_i >= 0:
                row = list(row)
                envs_of[p].add(row[env_i])
                row[env_i] = env_hash.get(row[env_i])
                nruns[p] += 1
            hs[p].add(canon_line(row))
            nrows[p] += 1
        left_out += db.execute("SELECT count(*) FROM %s t WHERE NOT (%s)" % (table, kept(table))).fetchone()[0]
    for p in parts:
        hs[p].add(canon_line(["table", "environments"] + env_cols))
    for row in db.execute("SELECT env_id, %s FROM environments ORDER BY env_hash" % ", ".join(env_cols)):
        for p in parts:
            if row[0] in envs_of[p]:
                hs[p].add(canon_line(row[1:]))
                nrows[p] += 1
    cols = columns(db, "sweep_runs")
    for p in parts:
        hs[p].add(canon_line(["table", "sweep_runs"] + cols))
    for row in db.execute("SELECT * FROM sweep_runs ORDER BY sweep, run_id"):
        hs[row[0]].add(canon_line(row))
        nrows[row[0]] += 1
    return {p: (hs[p].hexdigest(), nruns[p], nrows[p]) for p in parts}, left_out, (part_of, parts)


def read_manifest(d, missing_ok=False):
    path = os.path.join(d, MANIFEST)
    if not os.path.isfile(path):
        if missing_ok and not os.path.lexists(path):
            return {}
        raise BadInput("%s: no manifest" % esc(path))
    with open(path, encoding="ascii", errors="replace") as f:
        lines = f.read().split("\n")
    if lines[0].split("\t") != HEADER:
        raise BadInput("%s:1: expected the header %s" % (esc(path), "\\t".join(HEADER)))
    out = {}
    for i, line in enumerate(lines[1:], start=2):
        if not line:
            continue
        f = line.split("\t")
        where = "%s:%d" % (esc(path), i)
        if len(f) != len(HEADER):
            raise BadInput("%s: expected %d tab-separated fields, got %d" % (where, len(HEADER), len(f)))
        part, runs, rows, content, filesha, size, dbsize = f
        if not part_ok(part):
            raise BadInput("%s: part: %s is not a part name" % (where, show(part)))
        for key, v in (("runs", runs), ("rows", rows), ("file_bytes", size), ("db_bytes", dbsize)):
            if not COUNT_RE.fullmatch(v):
                raise BadInput("%s: %s: %s is not a count" % (where, key, show(v)))
        for key, v in (("content_sha256", content), ("file_sha256", filesha)):
            if not HEX_RE.fullmatch(v):
                raise BadInput("%s: %s: %s is not a SHA-256" % (where, key, show(v)))
        if part in out:
            raise BadInput("%s: part %s listed twice" % (where, show(part)))
        out[part] = {"runs": int(runs), "rows": int(rows), "content": content, "file": filesha,
                     "bytes": int(size), "db_bytes": int(dbsize)}
    return out


def temp_in(d, name):
    """A new temporary file in d (never an existing path or a link): its path."""
    fd, path = tempfile.mkstemp(dir=d, prefix="." + name + ".", suffix=".tmp")
    os.close(fd)
    return path


def write_manifest(d, man):
    tmp = temp_in(d, MANIFEST)
    with open(tmp, "w", encoding="ascii") as f:
        f.write("\t".join(HEADER) + "\n")
        for p in sorted(man):
            m = man[p]
            f.write("%s\t%d\t%d\t%s\t%s\t%d\t%d\n" % (p, m["runs"], m["rows"], m["content"], m["file"],
                                                   m["bytes"], m["db_bytes"]))
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, os.path.join(d, MANIFEST))


def part_file(d, part):
    return os.path.join(d, part + ".db.xz")


def regular_file(path):
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except FileNotFoundError:
        return False


def build_part(db, names, part, run_ids, out):
    """Write the part's rows of the (snapshot) database db into a new
    database at out, with db's own schema of the packed tables."""
    db.execute("ATTACH DATABASE ? AS part", (toolstats.db_uri(out, "rwc"),))
    try:
        for (name, sql) in db.execute(
                "SELECT name, sql FROM main.sqlite_master WHERE type = 'table' AND name IN (%s) ORDER BY name"
                % ",".join("?" * len(TABLES)), TABLES).fetchall():
            m = SCHEMA_RE.fullmatch(sql or "")
            if not m or m.group(1) != name or ";" in sql:
                raise BadInput("table %s: an unexpected schema %s" % (show(name), show((sql or "")[:80])))
            db.execute("CREATE TABLE part.%s (%s)" % (name, m.group(2)))
        db.execute("CREATE TEMP TABLE part_runs (run_id TEXT PRIMARY KEY)")
        db.executemany("INSERT INTO part_runs VALUES (?)", [(r,) for r in run_ids])
        db.execute("INSERT INTO part.meta SELECT * FROM main.meta")
        db.execute("INSERT INTO part.environments SELECT * FROM main.environments WHERE env_id IN"
                   " (SELECT env_id FROM main.runs WHERE run_id IN (SELECT run_id FROM part_runs))")
        for table, order in RUN_TABLES:
            if table in names:
                db.execute("INSERT INTO part.%s SELECT * FROM main.%s t WHERE t.run_id IN"
                           " (SELECT run_id FROM part_runs) AND %s ORDER BY %s" % (table, table, kept(table), order))
        db.execute("INSERT INTO part.sweep_runs SELECT * FROM main.sweep_runs WHERE sweep = ? ORDER BY run_id",
                   (part,))
        db.commit()
    finally:
        db.rollback()
        db.execute("DROP TABLE IF EXISTS temp.part_runs")
        db.execute("DETACH DATABASE part")
    v = sqlite3.connect(toolstats.db_uri(out, "rw"), uri=True)
    v.execute("VACUUM")
    v.close()


def cmd_pack(a):
    src, _ = open_ro(a.db)
    old = read_manifest(a.dir, missing_ok=True)
    with tempfile.TemporaryDirectory(prefix="results_db.") as tmp:
        # one consistent snapshot, whatever writes to DB meanwhile
        snap = os.path.join(tmp, "snapshot.db")
        dst = sqlite3.connect(snap)
        src.backup(dst)
        dst.close()
        src.close()
        db, names = open_ro(snap)
        if db.execute("PRAGMA integrity_check(1)").fetchone()[0] != "ok":
            raise BadInput("%s: fails PRAGMA integrity_check" % esc(a.db))
        dig, left_out, (part_of, parts) = digests(db, names)
        dropped = [p for p in old if p not in dig]
        fewer = [p for p in old if p in dig and dig[p][1] < old[p]["runs"]]
        if (dropped or fewer) and not a.prune:
            for p in dropped:
                say("%s: in %s, not in %s" % (show(p), MANIFEST, esc(a.db)))
            for p in fewer:
                say("%s: %d runs in %s, %d in %s" % (show(p), old[p]["runs"], MANIFEST, dig[p][1], esc(a.db)))
            raise BadInput("%s lacks committed runs: make it with `tools/results_db.py unpack` first, or "
                           "pass --prune to drop them" % esc(a.db))
        if left_out:
            say("%d rows of %s are not packed: rows of runs the database no longer holds, or attestations "
                "that no longer hold for the stored run (gated merge would drop them too)" % (left_out, esc(a.db)))
        os.makedirs(a.dir, exist_ok=True)
        new, staged = {}, []
        try:
            for p in parts:
                content, nruns, nrows = dig[p]
                f = part_file(a.dir, p)
                o = old.get(p)
                if o and o["content"] == content and regular_file(f) and sha256_file(f) == o["file"]:
                    new[p] = o
                    continue
                raw = os.path.join(tmp, p + ".db")
                build_part(db, names, p, [r for r, q in part_of.items() if q == p], raw)
                with open(raw, "rb") as fin:
                    data = fin.read()
                os.remove(raw)
                xz = lzma.compress(data, format=lzma.FORMAT_XZ, preset=a.preset)
                t = temp_in(a.dir, p + ".db.xz")
                staged.append((t, f))
                with open(t, "wb") as fout:
                    fout.write(xz)
                    fout.flush()
                    os.fsync(fout.fileno())
                new[p] = {"runs": nruns, "rows": nrows, "content": content, "bytes": len(xz),
                          "file": hashlib.sha256(xz).hexdigest(), "db_bytes": len(data)}
                say("%s: %d runs, %d rows, %d bytes" % (show(p), nruns, nrows, len(xz)))
        except BaseException:
            for t, _ in staged:
                os.remove(t)
            raise
    # every new part is on disk: put them in place, then the manifest (a
    # stop in between leaves parts the old manifest does not describe: pack
    # again; unpack refuses them)
    for t, f in staged:
        os.replace(t, f)
    write_manifest(a.dir, new)
    removed = 0
    for p in old:
        if p not in new and regular_file(part_file(a.dir, p)):
            os.remove(part_file(a.dir, p))
            removed += 1
    print("pack: %d parts (%d written, %d unchanged, %d removed), %d runs, %d bytes" % (
        len(new), len(staged), len(new) - len(staged), removed, sum(m["runs"] for m in new.values()),
        sum(m["bytes"] for m in new.values())))
    return 0


def check_files(d, man):
    """Messages for the part files that do not match the manifest, and for
    part files it does not list (a line deleted: the database would be
    short by that part)."""
    bad = []
    for p, m in sorted(man.items()):
        f = part_file(d, p)
        if not regular_file(f):
            bad.append("%s: missing or not a regular file (listed in %s)" % (esc(f), MANIFEST))
        elif os.path.getsize(f) != m["bytes"]:
            bad.append("%s: %d bytes, %s says %d" % (esc(f), os.path.getsize(f), MANIFEST, m["bytes"]))
        elif sha256_file(f) != m["file"]:
            bad.append("%s: SHA-256 differs from %s's (changed by hand, or a pack that stopped "
                       "midway: run pack again)" % (esc(f), MANIFEST))
    for name in sorted(os.listdir(d)):
        if name.endswith(".db.xz") and not name.startswith(".") and name[:-6] not in man:
            bad.append("%s: a part file that %s does not list (a line deleted from it? pack again, or "
                       "remove the file)" % (esc(os.path.join(d, name)), MANIFEST))
    return bad


COUNTED = ["runs", "metrics", "summary", "histograms", "code_attest", "sweep_runs"]


def table_counts(db, names):
    """Rows per table (COUNTED, those the database has) and the env_hash set."""
    n = {t: db.execute("SELECT count(*) FROM %s" % t).fetchone()[0] for t in COUNTED if t in names}
    return n, {h for (h,) in db.execute("SELECT env_hash FROM environments")}


def verify_part(d, p, m, raw):
    """Decompress part p (its file already checked against the manifest line
    m) into raw and check what it holds: its content digest, runs and rows
    must be the manifest's, and it must hold that part only (digests()).
    (None, table_counts()) or (a message, None)."""
    f = part_file(d, p)
    try:
        decompress(f, raw, m["db_bytes"])
        db, names = open_ro(raw)
        try:
            dig, left_out, _ = digests(db, names)
            counts = table_counts(db, names)
        finally:
            db.close()
    except BadInput as e:
        return str(e), None
    except (sqlite3.Error, OSError, ValueError, KeyError) as e:
        return "%s: cannot be read as a part: %s" % (esc(f), esc(str(e))), None
    if set(dig) != {p}:
        return "%s: holds the parts %s, not %s alone" % (esc(f), ", ".join(show(q) for q in sorted(dig)), show(p)), None
    content, runs, rows = dig[p]
    if content != m["content"]:
        return ("%s: its content is not the manifest's (content_sha256 %s, the manifest says %s: a changed "
                "part)" % (esc(f), content, m["content"])), None
    if (runs, rows) != (m["runs"], m["rows"]):
        return "%s: %d runs, %d rows; %s says %d, %d" % (esc(f), runs, rows, MANIFEST, m["runs"], m["rows"]), None
    if left_out:
        return "%s: %d rows that gated merge would not keep (a part never holds them)" % (esc(f), left_out), None
    return None, counts


def verify_all(d, man, tmp):
    """Every part decompressed into tmp (PART.db) and verified (verify_part),
    two at a time, before anything is merged; the first failure stops the
    rest.  {part: table_counts()}, or BadInput naming the part."""
    order = sorted(man, key=lambda p: -man[p]["db_bytes"])  # the largest first: both workers busy to the end
    out = {}
    workers = min(2, os.cpu_count() or 1)
    with concurrent.futures.ProcessPoolExecutor(workers) as ex:
        futs = {ex.submit(verify_part, d, p, man[p], os.path.join(tmp, p + ".db")): p for p in order}
        for fut in concurrent.futures.as_completed(futs):
            msg, counts = fut.result()
            if msg:
                for other in futs:
                    other.cancel()
                raise BadInput("part %s: %s; nothing was merged" % (show(futs[fut]), msg))
            out[futs[fut]] = counts
    return out


def counts_differ(db_path, counts):
    """Messages when the database made from the parts alone does not hold
    their rows: every table the sum of the parts' (a run is in one part
    only), environments their union."""
    db, names = open_ro(db_path)
    try:
        have, envs = table_counts(db, names)
    finally:
        db.close()
    bad = []
    for t in COUNTED:
        want = sum(c[0].get(t, 0) for c in counts.values())
        if have.get(t, 0) != want:
            bad.append("%s: %d rows in %s, %d in the parts" % (t, have.get(t, 0), esc(db_path), want))
    want_envs = set().union(*(c[1] for c in counts.values()))
    if envs != want_envs:
        bad.append("environments: %d in %s, %d in the parts" % (len(envs), esc(db_path), len(want_envs)))
    return bad


def differences(db_path, man):
    db, names = open_ro(db_path)
    dig = digests(db, names)[0]
    db.close()
    bad = []
    for p in sorted(set(man) | set(dig)):
        if p not in dig:
            bad.append("%s: in the manifest, not in %s" % (show(p), esc(db_path)))
        elif p not in man:
            bad.append("%s: in %s, not in the manifest" % (show(p), esc(db_path)))
        elif dig[p][0] != man[p]["content"]:
            bad.append("%s: content differs (%d runs, %d rows in %s; manifest %d, %d)" % (
                show(p), dig[p][1], dig[p][2], esc(db_path), man[p]["runs"], man[p]["rows"]))
    return bad


def cmd_verify(a):
    man = read_manifest(a.dir)
    bad = check_files(a.dir, man)
    if not bad:  # the parts' content too, not only the database against the manifest
        with tempfile.TemporaryDirectory(prefix="results_db.") as tmp:
            try:
                verify_all(a.dir, man, tmp)
            except BadInput as e:
                bad.append(str(e).replace("; nothing was merged", ""))
    bad += differences(a.db, man)
    for b in bad:
        say(b)
    if bad:
        return 1
    print("verify: %s holds the %d parts of %s (%d runs)" % (
        esc(a.db), len(man), esc(os.path.join(a.dir, MANIFEST)), sum(m["runs"] for m in man.values())))
    return 0


def decompress(src, out, limit):
    dec = lzma.LZMADecompressor(format=lzma.FORMAT_XZ)
    n = 0
    try:
        with open(src, "rb") as fin, open(out, "wb") as fout:
            for block in iter(lambda: fin.read(1 << 20), b""):
                if dec.eof:
                    raise lzma.LZMAError("data after the end of the stream")
                chunk = dec.decompress(block, max_length=limit + 1 - n)
                n += len(chunk)
                if n > limit:
                    raise lzma.LZMAError("larger than the manifest's db_bytes (%d)" % limit)
                fout.write(chunk)
            if not dec.eof or dec.unused_data:
                raise lzma.LZMAError("truncated" if not dec.eof else "data after the end of the stream")
    except (lzma.LZMAError, EOFError) as e:
        raise BadInput("%s: not the manifest's xz file: %s" % (esc(src), e))
    if n != limit:
        raise BadInput("%s: %d bytes decompressed, the manifest says %d" % (esc(src), n, limit))


def cmd_unpack(a):
    man = read_manifest(a.dir)
    if not man:
        raise BadInput("%s: lists no part" % esc(os.path.join(a.dir, MANIFEST)))
    if not os.access(a.gated, os.X_OK):
        raise BadInput("%s: not an executable (make builds build/gated)" % esc(a.gated))
    bad = check_files(a.dir, man)  # every part file is checked before anything is read
    if bad:
        raise BadInput(bad[0])
    existed = os.path.exists(a.db)
    if existed and a.skip_verified and not differences(a.db, man):
        print("unpack: %s already holds the %d parts of %s (%d runs): verified, nothing unpacked" % (
            esc(a.db), len(man), esc(os.path.join(a.dir, MANIFEST)), sum(m["runs"] for m in man.values())))
        return 0
    d = os.path.dirname(os.path.abspath(a.db))
    os.makedirs(d, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="results_db.") as tmp:
        counts = verify_all(a.dir, man, tmp)  # every part's content, before anything is merged
        say("verified the %d parts' content (%d runs)" % (len(man), sum(m["runs"] for m in man.values())))
        out = temp_in(d, os.path.basename(a.db))  # the copy that replaces DB when all went well
        try:
            os.remove(out)
            if existed:
                src, _ = open_ro(a.db)
                dst = sqlite3.connect(out)
                src.backup(dst)
                dst.close()
                src.close()
            for i, p in enumerate(sorted(man)):
                say("unpack: part %d/%d %s (%d runs)" % (i + 1, len(man), show(p), man[p]["runs"]))
                raw = os.path.join(tmp, p + ".db")
                r = subprocess.run([a.gated, "merge", out, raw], stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE, text=True, errors="replace")
                os.remove(raw)
                if r.returncode != 0:
                    for line in r.stderr.splitlines():
                        say("  " + esc(line.replace(raw, part_file(a.dir, p))))
                    say("part %s: gated merge failed (exit %d); %s is unchanged" % (show(p), r.returncode, esc(a.db)))
                    return 2 if r.returncode == 2 else 1
            # into a new database: the parts' rows, every one (each part is
            # verified); into an existing one: what else it holds, as notes
            bad = differences(out, man) if existed else counts_differ(out, counts)
            if bad and not existed:
                for b in bad:
                    say(b)
                say("the merged parts do not verify: %s not made" % esc(a.db))
                return 1
            # rollback-journal mode: the built file needs no -wal/-shm beside it (a read-only folder reads it)
            sqlite3.connect(out).execute("PRAGMA journal_mode=DELETE").connection.close()
            os.replace(out, a.db)
        finally:
            for f in (out, out + "-journal", out + "-wal", out + "-shm"):
                if os.path.lexists(f):
                    os.remove(f)
    for b in bad:
        say("note: " + b)
    print("unpack: %d parts into %s (%d runs in the parts)%s" % (
        len(man), esc(a.db), sum(m["runs"] for m in man.values()),
        "; it also holds other runs or versions (notes above)" if bad else "; verified"))
    return 0


def main(argv):
    ap = argparse.ArgumentParser(prog="results_db.py", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("pack", "unpack", "verify"):
        s = sub.add_parser(name)
        s.add_argument("--db", default="results/gated.db")
        s.add_argument("--dir", default="results/db")
        if name == "pack":
            s.add_argument("--preset", type=int, default=9, choices=range(0, 10))
            s.add_argument("--prune", action="store_true")
        if name == "unpack":
            s.add_argument("--gated", default="build/gated")
            s.add_argument("--skip-verified", action="store_true")
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
