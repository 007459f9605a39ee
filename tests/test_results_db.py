#!/usr/bin/env python3
"""Tests of tools/results_db.py (the committed form of results/gated.db):
a pack / unpack round trip through `gated merge`, unchanged parts left as
they are, only a changed sweep's part rewritten, and hostile input (a part
name that is a path, a part whose bytes differ from the manifest, a sweep
name that is a path) refused with exit 2 before anything is written.

Run from the repository root: GATED_BIN=build/gated python3 tests/test_results_db.py
"""
import hashlib
import lzma
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOOL = os.path.join(ROOT, "tools", "results_db.py")
GATED = os.path.abspath(os.environ.get("GATED_BIN", os.path.join(ROOT, "build", "gated")))
TINY = os.path.join(ROOT, "experiments", "tiny.yaml")

SWEEP = """name: %s
base: %s
set:
  data.corpus: synthetic
  model.vocab_size: 257
  model.seq_len: 32
  train.steps: %d
  train.warmup: 1
  train.eval_every: 2
  train.eval_windows: 2
variants:
  - label: baseline
  - label: G1
    set: {model.gate.position: sdpa}
seeds: [1]
baseline: baseline
"""


def slurp(path):
    with open(path, "rb") as f:
        return f.read()


def sql(path, statement, params=()):
    """Run one statement on the database at path and commit; its rows."""
    c = sqlite3.connect(path)
    try:
        rows = c.execute(statement, params).fetchall()
        c.commit()
        return rows
    finally:
        c.close()


def run(*args, cwd=None):
    return subprocess.run(list(args), cwd=cwd, capture_output=True, text=True)


class ResultsDb(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="test_results_db.")
        self.db = os.path.join(self.tmp, "src.db")
        self.dir = os.path.join(self.tmp, "parts")
        # two sweeps sharing the steps=4 runs (same run ids), a third apart
        self.sweep("alpha", 4)
        self.sweep("beta", 4)
        self.sweep("gamma", 6)

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def sweep(self, name, steps, db=None):
        path = os.path.join(self.tmp, name + ".yaml")
        with open(path, "w") as f:
            f.write(SWEEP % (name, TINY, steps))
        r = run(GATED, "sweep", path, "--db", db or self.db, "--jobs", "1")
        self.assertEqual(r.returncode, 0, r.stderr)

    def tool(self, *args):
        return run(sys.executable, TOOL, *args)

    def pack(self, db=None, *extra):
        r = self.tool("pack", "--db", db or self.db, "--dir", self.dir, "--preset", "1", *extra)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout

    def rows(self, db, sql):
        c = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
        try:
            return sorted(c.execute(sql).fetchall())
        finally:
            c.close()

    def test_round_trip(self):
        out = self.pack()
        self.assertIn("pack: 3 parts (3 written, 0 unchanged, 0 removed), 4 runs", out)
        with open(os.path.join(self.dir, "MANIFEST.tsv")) as f:
            lines = f.read().splitlines()
        self.assertEqual([l.split("\t")[0] for l in lines], ["part", "alpha", "beta", "gamma"])
        # the shared runs are kept once, in the first sweep's part
        self.assertEqual([l.split("\t")[1] for l in lines[1:]], ["2", "0", "2"])
        back = os.path.join(self.tmp, "back.db")
        r = self.tool("unpack", "--dir", self.dir, "--db", back, "--gated", GATED)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("unpack: 3 parts into", r.stdout)
        self.assertIn("; verified", r.stdout)
        # progress, a line per part, on stderr
        self.assertIn("results_db: unpack: part 1/3 'alpha' (2 runs)\nresults_db: unpack: part 2/3 'beta' (0 runs)\n"
                      "results_db: unpack: part 3/3 'gamma' (2 runs)\n", r.stderr)
        for sql in ("SELECT run_id, name, status, config_json, code_version, started_at, ended_at FROM runs",
                    "SELECT run_id, key, context, step, value, t FROM metrics",
                    "SELECT run_id, key, context, value, text FROM summary",
                    "SELECT * FROM histograms", "SELECT * FROM sweep_runs",
                    "SELECT env_hash, host, cpu_model, cflags FROM environments"):
            self.assertEqual(self.rows(self.db, sql), self.rows(back, sql), sql)
        self.assertGreater(len(self.rows(back, "SELECT * FROM metrics")), 0)
        r = run(GATED, "ls", "--db", back)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, run(GATED, "ls", "--db", self.db).stdout)
        # unpacking again into the same database changes nothing
        r = self.tool("unpack", "--dir", self.dir, "--db", back, "--gated", GATED)
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_only_changed_parts_are_rewritten(self):
        self.pack()
        before = {f: slurp(os.path.join(self.dir, f)) for f in os.listdir(self.dir)}
        self.assertIn("(0 written, 3 unchanged, 0 removed)", self.pack())
        after = {f: slurp(os.path.join(self.dir, f)) for f in os.listdir(self.dir)}
        self.assertEqual(before, after)
        self.sweep("gamma2", 8)  # a new sweep: one new part
        self.assertIn("pack: 4 parts (1 written, 3 unchanged, 0 removed)", self.pack())
        # one row changed: only its part is rewritten
        before = {f: slurp(os.path.join(self.dir, f)) for f in os.listdir(self.dir)}
        sql(self.db, "UPDATE summary SET value = value + 1 WHERE key = 'val_loss' AND run_id IN"
            " (SELECT run_id FROM sweep_runs WHERE sweep = 'gamma')")
        self.assertIn("pack: 4 parts (1 written, 3 unchanged, 0 removed)", self.pack())
        after = {f: slurp(os.path.join(self.dir, f)) for f in os.listdir(self.dir)}
        self.assertEqual([f for f in sorted(after) if after[f] != before.get(f)], ["MANIFEST.tsv", "gamma.db.xz"])
        # a sweep dropped from the database: refused, unless --prune
        sql(self.db, "DELETE FROM sweep_runs WHERE sweep = 'beta'")
        r = self.tool("pack", "--db", self.db, "--dir", self.dir)
        self.assertEqual(r.returncode, 2)
        self.assertIn("'beta': in MANIFEST.tsv, not in", r.stderr)
        self.assertIn("pass --prune", r.stderr)
        self.assertEqual(after, {f: slurp(os.path.join(self.dir, f)) for f in os.listdir(self.dir)})
        self.assertIn("pack: 3 parts (0 written, 3 unchanged, 1 removed)", self.pack(None, "--prune"))
        self.assertFalse(os.path.exists(os.path.join(self.dir, "beta.db.xz")))

    def test_verify_names_a_differing_part(self):
        self.pack()
        other = os.path.join(self.tmp, "other.db")
        shutil.copy(self.db, other)
        sql(other, "UPDATE metrics SET value = value + 1 WHERE rowid = (SELECT min(rowid) FROM metrics"
            " WHERE run_id IN (SELECT run_id FROM sweep_runs WHERE sweep = 'gamma'))")
        r = self.tool("verify", "--db", other, "--dir", self.dir)
        self.assertEqual(r.returncode, 1)
        self.assertIn("'gamma': content differs", r.stderr)
        self.assertNotIn("'alpha'", r.stderr)

    def test_hostile_manifest_and_parts(self):
        self.pack()
        man = os.path.join(self.dir, "MANIFEST.tsv")
        good = slurp(man).decode()
        back = os.path.join(self.tmp, "back.db")
        # a part name that is a path
        with open(man, "w") as f:
            f.write(good.replace("\ngamma\t", "\n../gamma\t"))
        r = self.tool("unpack", "--dir", self.dir, "--db", back, "--gated", GATED)
        self.assertEqual(r.returncode, 2)
        self.assertIn("MANIFEST.tsv:4: part: '../gamma' is not a part name", r.stderr)
        self.assertFalse(os.path.exists(back))
        # a part whose bytes are not the manifest's: refused before any merge
        with open(man, "w") as f:
            f.write(good)
        part = os.path.join(self.dir, "gamma.db.xz")
        data = bytearray(slurp(part))
        data[len(data) // 2] ^= 1
        with open(part, "wb") as f:
            f.write(bytes(data))
        r = self.tool("unpack", "--dir", self.dir, "--db", back, "--gated", GATED)
        self.assertEqual(r.returncode, 2)
        self.assertIn("gamma.db.xz: SHA-256 differs", r.stderr)
        self.assertFalse(os.path.exists(back))
        # a malformed line names file and line
        with open(man, "w") as f:
            f.write(good + "x\t1\n")
        r = self.tool("verify", "--db", self.db, "--dir", self.dir)
        self.assertEqual(r.returncode, 2)
        self.assertIn("MANIFEST.tsv:5: expected 7 tab-separated fields, got 2", r.stderr)

    def test_sweep_name_that_is_a_path_is_refused(self):
        sql(self.db, "UPDATE sweep_runs SET sweep = '../evil\x1b[31m' WHERE sweep = 'gamma'")
        r = self.tool("pack", "--db", self.db, "--dir", self.dir)
        self.assertEqual(r.returncode, 2)
        self.assertIn("sweep name '../evil\\x1b[31m' cannot name a part file", r.stderr)
        self.assertFalse(os.path.exists(self.dir))
        self.assertEqual([f for f in os.listdir(self.tmp) if "evil" in f], [])
        # $ would match before a final newline: the whole name must match
        sql(self.db, "UPDATE sweep_runs SET sweep = 'beta' || char(10) WHERE sweep = '../evil\x1b[31m'")
        r = self.tool("pack", "--db", self.db, "--dir", self.dir)
        self.assertEqual(r.returncode, 2)
        self.assertIn("sweep name 'beta\\n' cannot name a part file", r.stderr)
        self.assertFalse(os.path.exists(self.dir))

    def test_what_merge_would_drop_is_not_packed(self):
        # a stale attestation (not for the stored run) and a run deleted from
        # runs while its sweep still lists it and its rows stay behind
        run = sql(self.db, "SELECT run_id FROM sweep_runs WHERE sweep = 'gamma' ORDER BY run_id")[0][0]
        sql(self.db, "INSERT INTO code_attest VALUES (?, ?, '-O2', 0, ?, 1.5, 2.5, 3, 4)", (run, "a" * 40, "0" * 40))
        gone = sql(self.db, "SELECT run_id FROM sweep_runs WHERE sweep = 'alpha' ORDER BY run_id")[0][0]
        sql(self.db, "DELETE FROM runs WHERE run_id = ?", (gone,))
        r = self.tool("pack", "--db", self.db, "--dir", self.dir, "--preset", "1")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("rows of", r.stderr)
        self.assertIn("are not packed", r.stderr)
        back = os.path.join(self.tmp, "back.db")
        r = self.tool("unpack", "--dir", self.dir, "--db", back, "--gated", GATED)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("; verified", r.stdout)
        self.assertEqual(self.rows(back, "SELECT * FROM code_attest"), [])
        self.assertEqual(self.rows(back, "SELECT count(*) FROM metrics WHERE run_id = '%s'" % gone), [(0,)])
        # the original database verifies equal too: what is left out is left out of both digests
        r = self.tool("verify", "--db", self.db, "--dir", self.dir)
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_failed_unpack_leaves_the_database_as_it_was(self):
        self.pack()
        back = os.path.join(self.tmp, "back.db")
        r = self.tool("unpack", "--dir", self.dir, "--db", back, "--gated", GATED)
        self.assertEqual(r.returncode, 0, r.stderr)
        before = slurp(back)
        # parts of a database whose labels merge refuses (terminal escapes)
        bad = os.path.join(self.tmp, "bad.db")
        shutil.copy(self.db, bad)
        sql(bad, "UPDATE sweep_runs SET label = 'x\x1b[31m' WHERE sweep = 'gamma'")
        bad_dir = os.path.join(self.tmp, "bad_parts")
        r = self.tool("pack", "--db", bad, "--dir", bad_dir, "--preset", "1")
        self.assertEqual(r.returncode, 0, r.stderr)
        r = self.tool("unpack", "--dir", bad_dir, "--db", back, "--gated", GATED)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("part 'gamma': gated merge failed (exit 2)", r.stderr)
        self.assertIn("bad_parts/gamma.db.xz", r.stderr)  # merge's message names the part, not a temporary file
        self.assertEqual(slurp(back), before)
        fresh = os.path.join(self.tmp, "fresh.db")
        r = self.tool("unpack", "--dir", bad_dir, "--db", fresh, "--gated", GATED)
        self.assertEqual(r.returncode, 2)
        self.assertEqual(sorted(f for f in os.listdir(self.tmp) if f.startswith((".fresh", "fresh"))), [])
        # a part that is a link is not read
        os.remove(os.path.join(self.dir, "gamma.db.xz"))
        os.symlink(os.path.join(bad_dir, "gamma.db.xz"), os.path.join(self.dir, "gamma.db.xz"))
        r = self.tool("unpack", "--dir", self.dir, "--db", fresh, "--gated", GATED)
        self.assertEqual(r.returncode, 2)
        self.assertIn("gamma.db.xz: missing or not a regular file", r.stderr)

    def test_paths_with_uri_characters(self):
        odd = os.path.join(self.tmp, "p%41 ?#")
        os.mkdir(odd)
        shutil.copy(self.db, os.path.join(odd, "src.db"))
        os.mkdir(os.path.join(self.tmp, "pA ?#"))  # what %41 would decode to: must not be read
        r = self.tool("pack", "--db", os.path.join(odd, "src.db"), "--dir", os.path.join(odd, "parts"), "--preset", "1")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("pack: 3 parts (3 written", r.stdout)
        r = self.tool("unpack", "--dir", os.path.join(odd, "parts"), "--db", os.path.join(odd, "back.db"),
                      "--gated", GATED)
        self.assertEqual(r.returncode, 0, r.stderr)

    def tamper(self, part, statement, keep_content=True):
        """Change part's rows with statement, recompress it and update its
        file digest and sizes in the manifest (its content digest left)."""
        f = os.path.join(self.dir, part + ".db.xz")
        raw = os.path.join(self.tmp, "tamper.db")
        with open(raw, "wb") as out:
            out.write(lzma.decompress(slurp(f)))
        sql(raw, statement)
        c = sqlite3.connect(raw)
        c.execute("VACUUM")
        c.close()
        data = slurp(raw)
        os.remove(raw)
        xz = lzma.compress(data, preset=1)
        with open(f, "wb") as out:
            out.write(xz)
        man = os.path.join(self.dir, "MANIFEST.tsv")
        lines = slurp(man).decode().split("\n")
        for i, line in enumerate(lines):
            fields = line.split("\t")
            if fields[0] == part:
                fields[4:7] = [hashlib.sha256(xz).hexdigest(), str(len(xz)), str(len(data))]
                lines[i] = "\t".join(fields)
        with open(man, "w") as out:
            out.write("\n".join(lines))

    def edit_manifest(self, fn):
        man = os.path.join(self.dir, "MANIFEST.tsv")
        lines = slurp(man).decode().split("\n")
        with open(man, "w") as out:
            out.write("\n".join(fn(lines)))

    def unpack(self, db, *extra):
        return self.tool("unpack", "--dir", self.dir, "--db", db, "--gated", GATED, *extra)

    def test_tampered_part_is_refused_before_any_merge(self):
        self.pack()
        back = os.path.join(self.tmp, "back.db")
        self.assertEqual(self.unpack(back).returncode, 0)
        before = slurp(back)
        self.tamper("gamma", "UPDATE summary SET value = value - 0.5 WHERE key = 'val_loss'")
        # into an existing database: refused, nothing merged
        r = self.unpack(back)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("part 'gamma':", r.stderr)
        self.assertIn("its content is not the manifest's", r.stderr)
        self.assertIn("nothing was merged", r.stderr)
        self.assertNotIn("unpack: part 1/3", r.stderr)
        self.assertEqual(slurp(back), before)
        # into a new one: refused, not made
        fresh = os.path.join(self.tmp, "fresh.db")
        r = self.unpack(fresh)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("its content is not the manifest's", r.stderr)
        self.assertFalse(os.path.exists(fresh))
        # verify checks the parts too, not only the database against them
        r = self.tool("verify", "--db", back, "--dir", self.dir)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("part 'gamma':", r.stderr)

    def test_runs_and_rows_columns_are_checked(self):
        self.pack()
        fresh = os.path.join(self.tmp, "fresh.db")
        for col, name in ((1, "runs"), (2, "rows")):
            good = slurp(os.path.join(self.dir, "MANIFEST.tsv"))

            def plus_one(lines):
                out = []
                for line in lines:
                    f = line.split("\t")
                    if f[0] == "alpha":
                        f[col] = str(int(f[col]) + 1)
                    out.append("\t".join(f))
                return out
            self.edit_manifest(plus_one)
            r = self.unpack(fresh)
            self.assertEqual(r.returncode, 2, name + ": " + r.stderr)
            self.assertIn("part 'alpha':", r.stderr)
            self.assertIn("MANIFEST.tsv says", r.stderr)
            self.assertFalse(os.path.exists(fresh))
            with open(os.path.join(self.dir, "MANIFEST.tsv"), "wb") as f:
                f.write(good)

    def test_an_unlisted_part_is_refused(self):
        self.pack()
        fresh = os.path.join(self.tmp, "fresh.db")
        # a line deleted: its file is still there
        self.edit_manifest(lambda lines: [l for l in lines if not l.startswith("beta\t")])
        r = self.unpack(fresh)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("beta.db.xz: a part file that MANIFEST.tsv does not list", r.stderr)
        self.assertFalse(os.path.exists(fresh))
        r = self.tool("verify", "--db", self.db, "--dir", self.dir)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("beta.db.xz: a part file that MANIFEST.tsv does not list", r.stderr)
        # and a listed part that is gone
        os.remove(os.path.join(self.dir, "alpha.db.xz"))
        r = self.unpack(fresh)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("alpha.db.xz: missing or not a regular file", r.stderr)

    def test_a_part_holding_another_parts_rows_is_refused(self):
        self.pack()
        # gamma's part given alpha's sweep_runs rows too: a second part inside
        self.tamper("gamma", "INSERT INTO sweep_runs SELECT 'alpha', run_id, label, seed, idx, is_baseline"
                    " FROM sweep_runs WHERE sweep = 'gamma'")
        fresh = os.path.join(self.tmp, "fresh.db")
        r = self.unpack(fresh)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("holds the parts 'alpha', 'gamma', not 'gamma' alone", r.stderr)

    def test_make_skips_a_database_that_verifies(self):
        self.pack()
        back = os.path.join(self.tmp, "back.db")
        self.assertEqual(self.unpack(back).returncode, 0)
        st = os.stat(back)
        before = slurp(back)
        r = self.unpack(back, "--skip-verified")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("verified, nothing unpacked", r.stdout)
        self.assertEqual(slurp(back), before)
        self.assertEqual(os.stat(back).st_mtime_ns, st.st_mtime_ns)
        # a database that differs is unpacked into as before
        sql(back, "DELETE FROM runs WHERE run_id IN (SELECT run_id FROM sweep_runs WHERE sweep = 'gamma')")
        r = self.unpack(back, "--skip-verified")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("unpack: 3 parts into", r.stdout)
        self.assertEqual(self.tool("verify", "--db", back, "--dir", self.dir).returncode, 0)

    def test_canon_line_is_canon(self):
        sys.path.insert(0, os.path.dirname(TOOL))
        import results_db
        rows = [[1, -0.0, 0.1, 1e300, float("nan"), float("inf"), -float("inf"), None, 2 ** 70, -5],
                ["a\"b\\c\n\x1b\u00e9\u202e\U0001f600", "\udcff", b"\x00\xff", "", b""]]
        for row in rows:
            self.assertEqual(results_db.canon_line(row).encode("ascii"), results_db.canon(row))

    def test_missing_database(self):
        r = self.tool("pack", "--db", os.path.join(self.tmp, "none.db"), "--dir", self.dir)
        self.assertEqual(r.returncode, 2)
        self.assertIn("none.db: no such database", r.stderr)


FUZZ_DB = [os.path.join(ROOT, "tests", "fuzz", d, "db") for d in ("corpus", "regress")]


class VerifyCorpus(unittest.TestCase):
    """results_db.py's verify path (verify, and unpack's checks before any
    merge) driven by the db fuzz target's database inputs (the seed corpus
    and the regression inputs, tests/fuzz/{corpus,regress}/db/*.sqlite:
    damaged and hostile gated databases), each put in place of a part with
    its file digest and sizes made right, and by seeded byte mutations of a
    real part and of the manifest: every one is refused (exit 1 or 2, a
    message, no traceback, no database made) unless what it holds is the
    manifest's content.  (The change-line inputs need the C harness: the
    libFuzzer target and tests/test_fuzz_replay.c run them.)"""

    def setUp(self):
        sys.path.insert(0, os.path.dirname(TOOL))
        import results_db
        self.rdb = results_db
        self.tmp = tempfile.mkdtemp(prefix="test_results_db_fuzz.")
        self.dir = os.path.join(self.tmp, "parts")
        src = os.path.join(self.tmp, "src.db")
        shutil.copy(os.path.join(FUZZ_DB[0], "tiny_run.sqlite"), src)
        r = run(sys.executable, TOOL, "pack", "--db", src, "--dir", self.dir, "--preset", "1")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.man = slurp(os.path.join(self.dir, "MANIFEST.tsv")).decode()
        self.part = [l.split("\t")[0] for l in self.man.splitlines()[1:]][0]
        self.raw = lzma.decompress(slurp(os.path.join(self.dir, self.part + ".db.xz")))
        self.db = src

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def call(self, *args):
        """results_db.main in this process: (exit status, stderr)."""
        import contextlib
        import io
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            rc = self.rdb.main(list(args))
        return rc, err.getvalue()

    def put_part(self, raw):
        """raw as the part's decompressed bytes, its file digest and sizes
        in the manifest made right (its content digest left)."""
        xz = lzma.compress(raw, preset=0)
        with open(os.path.join(self.dir, self.part + ".db.xz"), "wb") as f:
            f.write(xz)
        lines = self.man.split("\n")
        f = lines[1].split("\t")
        f[4:7] = [hashlib.sha256(xz).hexdigest(), str(len(xz)), str(len(raw))]
        lines[1] = "\t".join(f)
        with open(os.path.join(self.dir, "MANIFEST.tsv"), "w") as out:
            out.write("\n".join(lines))

    def holds_the_manifests_content(self, raw):
        path = os.path.join(self.tmp, "check.db")
        with open(path, "wb") as f:
            f.write(raw)
        try:
            db, names = self.rdb.open_ro(path)
            dig = self.rdb.digests(db, names)[0]
            db.close()
        except Exception:
            return False
        finally:
            os.remove(path)
        f = self.man.splitlines()[1].split("\t")
        return dig.get(self.part) == (f[3], int(f[1]), int(f[2])) and len(dig) == 1

    def expect_refused(self, what, raw):
        rc, err = self.call("verify", "--dir", self.dir, "--db", self.db)
        if rc == 0:
            self.assertTrue(self.holds_the_manifests_content(raw), "%s: verified: %s" % (what, err))
            return
        self.assertIn(rc, (1, 2), "%s: %s" % (what, err))
        self.assertTrue(err.startswith("results_db: "), "%s: %s" % (what, err))
        fresh = os.path.join(self.tmp, "fresh.db")
        rc, err = self.call("unpack", "--dir", self.dir, "--db", fresh, "--gated", GATED)
        self.assertEqual(rc, 2, "%s: unpack: %s" % (what, err))
        self.assertIn("nothing was merged", err, what)
        self.assertFalse(os.path.exists(fresh), what)

    def test_the_fuzz_inputs_as_parts(self):
        rc, err = self.call("verify", "--dir", self.dir, "--db", self.db)
        self.assertEqual(rc, 0, err)
        n = 0
        for d in FUZZ_DB:
            for name in sorted(os.listdir(d)):
                raw = slurp(os.path.join(d, name))
                if not raw.startswith(b"SQLite format 3\0") or raw == self.raw:
                    continue
                self.put_part(raw)
                self.expect_refused(name, raw)
                n += 1
        self.assertGreaterEqual(n, 5)

    def test_mutated_parts_and_manifests(self):
        import random
        rnd = random.Random(39)
        for i in range(12):
            raw = bytearray(self.raw)
            for _ in range(rnd.randint(1, 8)):
                k = rnd.randrange(len(raw))
                raw[k] = rnd.randrange(256)
            self.put_part(bytes(raw))
            self.expect_refused("mutation %d" % i, bytes(raw))
        self.put_part(self.raw)
        for i in range(12):
            text = bytearray(slurp(os.path.join(self.dir, "MANIFEST.tsv")))
            k = rnd.randrange(len(text))
            text[k] = rnd.choice(b"\t\n0f9a_x.-/ ")
            path = os.path.join(self.dir, "MANIFEST.tsv")
            good = slurp(path)
            with open(path, "wb") as f:
                f.write(bytes(text))
            rc, err = self.call("verify", "--dir", self.dir, "--db", self.db)
            self.assertIn(rc, (0, 1, 2), err)
            if rc:
                self.assertTrue(err.startswith("results_db: "), err)
            with open(path, "wb") as f:
                f.write(good)


if __name__ == "__main__":
    unittest.main()
