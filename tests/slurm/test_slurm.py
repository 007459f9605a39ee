#!/usr/bin/env python3
"""The Slurm recipe of docs/slurm.md under a real Slurm (make test-slurm).

Brings up a private single-node cluster (tests/slurm/up.sh), then, with
tests/slurm/sweep.yaml (six smoke-sized runs, 1,000 steps each):

  one machine  gated sweep --jobs 2 into one database: the reference
  per-task     tools/slurm_sweep.sbatch --submit (THROTTLE=2, one CPU a task):
               six array tasks, at most two at once, each training its run
               into its own database, then the merge job
  shared       the same with --shared: every task claims its run in one
               database, then the check job
  faults       per-task again, and while it runs: task 1 scancel'd mid-run
               and requeued (scontrol requeue: it resumes from its
               checkpoint); task 3's `gated train` SIGKILLed (the run is
               marked killed); task 4's batch process, slurmstepd's child
               (`gated sweep`), SIGKILLed, its train with it (a node failing:
               nobody marks the run); then the whole array submitted again:
               finished runs are skipped, the two killed ones resume

Each of the three results must equal the reference: the same run ids,
statuses and sweep membership, every metric and histogram row bitwise (SQL
EXCEPT both ways and equal counts: nothing lost or duplicated), the final
results but for times; `gated report` of each identical to the reference's
but for its times and loads (tok/s, runs beside other jobs), database path
and date.  Then down.sh stops the daemons by their pids, whatever happened.

When the daemons cannot run here (up.sh exits 77: not root, Slurm not
installed, a daemon that dies) the test prints SKIPPED and why, and exits 0
(1 with GATED_SLURM_REQUIRED=1).  On failure the work directory (logs of
the daemons, jobs and runs) is kept and named.

Run from the repository root: GATED_BIN=build/gated python3 tests/slurm/test_slurm.py
"""
import glob
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GATED = os.path.abspath(os.environ.get("GATED_BIN", os.path.join(ROOT, "build", "gated")))
SWEEP = "tests/slurm/sweep.yaml"  # relative: jobs start in the submit directory, ROOT
SCRIPT = os.path.join(ROOT, "tools", "slurm_sweep.sbatch")
HERE = os.path.join(ROOT, "tests", "slurm")
FINAL = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE"}
TIMEOUT_S = 600  # per phase; the machine is shared
TAG = "test-slurm"  # what say() prints first


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)


def run(*args, env=None, cwd=ROOT, ok=True):
    r = subprocess.run(list(args), cwd=cwd, env=env, capture_output=True, text=True)
    if ok and r.returncode != 0:
        raise Failure("%s: exit %d\n%s%s" % (" ".join(args), r.returncode, r.stdout, r.stderr))
    return r


def slurp(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def say(msg):
    print("%s: %s" % (TAG, msg), flush=True)


# ---- the sweep and the databases -----------------------------------------

def plan(work):
    """index -> (run id, name), from gated's own dry run."""
    r = run(GATED, "sweep", SWEEP, "--dry-run", "--json", "--db", os.path.join(work, "none.db"))
    return {j["index"]: (j["run_id"], j["name"]) for j in json.loads(r.stdout)["runs"]}


def q(db, sql, params=()):
    con = sqlite3.connect("file:%s?mode=ro" % db.replace("?", "%3f").replace("#", "%23"), uri=True)
    try:
        return con.execute(sql, params).fetchall()
    finally:
        con.close()


# Compared between the reference and a result: every column that does not
# measure time (the summary's throughput, memory and wall time do).
TABLES = [
    ("runs", "run_id, name, status, seed, config_json", ""),
    ("sweep_runs", "sweep, run_id, label, seed, idx, is_baseline", ""),
    ("metrics", "run_id, key, context, step, value", ""),
    ("histograms", "run_id, key, context, step, lo, hi, counts", ""),
    ("summary", "run_id, key, context, value", " WHERE key NOT IN ('tokens_per_s', 'peak_rss_mib', 'wall_s', 'load_start', 'load_end', 'cpus_online')"),
]


def same_results(ref, got):
    """Rows of every table equal both ways (REALs compared exactly by SQL's
    EXCEPT) and in equal numbers: nothing lost, nothing twice (a step's
    metric row is unique by the schema).  Returns the metric row count."""
    con = sqlite3.connect(ref)
    try:
        con.execute("ATTACH ? AS o", (got,))
        for table, cols, where in TABLES:
            for a, b in (("main", "o"), ("o", "main")):
                n = con.execute("SELECT count(*) FROM (SELECT %s FROM %s.%s%s EXCEPT SELECT %s FROM %s.%s%s)"
                                % (cols, a, table, where, cols, b, table, where)).fetchone()[0]
                check(n == 0, "%s: %d rows of %s are not in %s" % (table, n, ref if a == "main" else got,
                                                                    got if a == "main" else ref))
            na, nb = (con.execute("SELECT count(*) FROM %s.%s" % (s, table)).fetchone()[0] for s in ("main", "o"))
            check(na == nb, "%s: %d rows in %s, %d in %s" % (table, na, ref, nb, got))
        return con.execute("SELECT count(*) FROM metrics").fetchone()[0]
    finally:
        con.close()


BUSY = re.compile(r"\d+ of the \d+ finished runs with a recorded load ran beside other jobs \([^)]*\)[^.]*\.")


def report(db, out):
    """gated report of db, with what depends on the time, the load, the date
    or the database's path masked: the lines it names them on, each table's
    tok/s column (rate and its busy mark) and the count of runs that ran
    beside other jobs (the load the array's own tasks put on each other
    differs from the one-machine sweep's).  The plots and their data must
    match as they are."""
    run(GATED, "report", "--db", db, "--out", out)
    text, col = [], None
    for line in slurp(os.path.join(out, "report.md")).splitlines():
        if line.startswith("- database:") or line.startswith("- generated:"):
            line = line.split(":")[0] + ": (masked)"
        elif line.startswith("|"):
            cells = line.split("|")
            if "tok/s" in [c.strip() for c in cells]:
                col = [c.strip() for c in cells].index("tok/s")
            elif col is not None and col < len(cells) and not set(cells[col].strip()) <= set("-:"):
                cells[col] = " T "
            line = "|".join(cells)
        else:
            line = BUSY.sub("(masked) ran beside other jobs (masked)", line)
            col = None
        text.append(line)
    files = {}
    for d, _, names in os.walk(out):
        for n in names:
            p = os.path.join(d, n)
            if n != "report.md" and n != "gnuplot.log":
                with open(p, "rb") as f:
                    files[os.path.relpath(p, out)] = f.read()
    return "\n".join(text), files


def same_report(ref, got, work, tag):
    a = report(ref, os.path.join(work, "report-ref"))
    b = report(got, os.path.join(work, "report-" + tag))
    if a[0] != b[0]:
        la, lb = a[0].splitlines(), b[0].splitlines()
        first = next((i for i in range(min(len(la), len(lb))) if la[i] != lb[i]), min(len(la), len(lb)))
        raise Failure("report of %s differs from the reference's at line %d:\n  %s\n  %s" % (
            got, first + 1, la[first] if first < len(la) else "(end)", lb[first] if first < len(lb) else "(end)"))
    check(sorted(a[1]) == sorted(b[1]), "report files differ: %s vs %s" % (sorted(a[1]), sorted(b[1])))
    for n in a[1]:
        check(a[1][n] == b[1][n], "report file %s differs" % n)


# ---- Slurm -----------------------------------------------------------------

class Cluster:
    """The cluster tests/slurm/up.sh starts; clients run behind the prefix
    via (up2.sh: in the head's network namespace); Slurm's output of a
    task goes to slurm-out/NAME-ARRAY_TASK.out."""
    UP, OUT = "up.sh", "%x-%A_%a.out"

    def __init__(self, work):
        self.dir = os.path.join(work, "cluster")
        self.logs = os.path.join(work, "slurm-out")
        os.makedirs(self.logs)
        self.env = dict(os.environ, SLURM_CONF=os.path.join(self.dir, "slurm.conf"), GATED=GATED)
        self.via = []

    def up(self):
        return subprocess.run([os.path.join(HERE, self.UP), self.dir], capture_output=True, text=True)

    def down(self):
        r = subprocess.run([os.path.join(HERE, "down.sh"), self.dir], capture_output=True, text=True)
        if r.returncode != 0:
            say("down.sh: exit %d: %s" % (r.returncode, r.stderr.strip()))

    def slurm(self, *args, ok=True):
        return run(*self.via, *args, env=self.env, ok=ok)

    def submit(self, outdir, *flags, extra=()):
        """tools/slurm_sweep.sbatch --submit: (array job id, last job id)."""
        env = dict(self.env, THROTTLE="2")
        r = run(*self.via, SCRIPT, "--submit", *flags, SWEEP, outdir, "--cpus-per-task=1",
                "--output=%s/%s" % (self.logs, self.OUT), *extra, env=env)
        m = re.search(r"array job (\d+) \(tasks 0-5\), (?:merge|check) job (\d+)", r.stdout)
        check(m, "submit: %s" % r.stdout)
        return m.group(1), m.group(2)

    def tasks(self, job):
        """array task -> (state, restarts) of every task record of job."""
        r = self.slurm("scontrol", "-o", "show", "job", job, ok=False)
        out = {}
        for line in r.stdout.splitlines():
            f = dict(kv.split("=", 1) for kv in line.split() if "=" in kv)
            if f.get("ArrayTaskId", "").isdigit():
                out[int(f["ArrayTaskId"])] = (f.get("JobState"), int(f.get("Restarts", "0")))
            elif "ArrayTaskId" not in f and "JobState" in f:
                out[None] = (f["JobState"], int(f.get("Restarts", "0")))
        return out

    def width(self):
        """How many tasks run at once: THROTTLE=2, one CPU each."""
        return min(2, int(self.slurm("sinfo", "-h", "-o", "%c").stdout.split()[0].rstrip("+")))

    def running(self, job):
        r = self.slurm("squeue", "-h", "-r", "-t", "RUNNING", "-j", job, "-o", "%i", ok=False)
        return len(r.stdout.split())

    def wait(self, array, last, act=None):
        """Poll until every task of array (6) and the last job are final,
        calling act() on the way; the most tasks seen running at once."""
        t0, most, idle = time.time(), 0, 0
        while True:
            if act:
                act()
            most = max(most, self.running(array))
            ts, lj = self.tasks(array), self.tasks(last).get(None, ("?", 0))[0]
            done = [i for i in range(6) if i in ts and ts[i][0] in FINAL]
            if len(done) == 6 and lj in FINAL:
                if not act or act.done():
                    return most
                idle += 1  # every job ended, a fault not made: gone past it?
                check(idle < 30, "every job ended before the faults were made: %s (tasks %s)" % (act.state, ts))
            if time.time() - t0 > TIMEOUT_S:
                q_ = self.slurm("squeue", "-a", "-r", ok=False).stdout
                raise Failure("jobs %s/%s not done after %d s: tasks %s, last job %s\n%s" % (
                    array, last, TIMEOUT_S, ts, lj, q_))
            time.sleep(0.1)

    def outputs(self, array, i):
        """Slurm's output files of task i (several with %N: one a node)."""
        return sorted(glob.glob(os.path.join(self.logs, "gated-sweep-%s_%d[.-]*out" % (array, i))))

    def output(self, array, i):
        return "".join(slurp(p) for p in self.outputs(array, i))

    def last_output(self, job):
        for n in os.listdir(self.logs):
            if n.startswith("gated-sweep-%s_" % job):
                return slurp(os.path.join(self.logs, n))
        return ""


def pids_of(match):
    """Pids of this host's processes whose argv match(argv, parent's comm)."""
    out = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % p, "rb") as f:
                argv = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
            with open("/proc/%s/stat" % p) as f:
                ppid = f.read().rsplit(")", 1)[1].split()[1]
            with open("/proc/%s/comm" % ppid) as f:
                parent = f.read().strip()
        except OSError:
            continue
        if argv and match(argv, parent):
            out.append(int(p))
    return out


# ---- the phases ------------------------------------------------------------

def reference(work):
    db = os.path.join(work, "one-machine", "sweep.db")
    t = time.time()
    r = run(GATED, "sweep", SWEEP, "--db", db, "--jobs", "2")
    check("sweep slurm: 6 runs: 6 finished, 0 diverged, 0 failed, 0 skipped" in r.stdout, r.stdout)
    return db, time.time() - t


def clean_array(cl, out, *flags):
    """Submit the sweep, wait, and check that every task and the last job
    completed, THROTTLE tasks at once.  (array job, last job, seconds)."""
    t = time.time()
    array, last = cl.submit(out, *flags)
    most = cl.wait(array, last)
    secs = time.time() - t
    ts = cl.tasks(array)
    check(all(ts[i][0] == "COMPLETED" for i in range(6)), "tasks: %s" % ts)
    check(cl.tasks(last)[None][0] == "COMPLETED", "last job: %s\n%s" % (cl.tasks(last), cl.last_output(last)))
    check(most == cl.width(), "%d tasks ran at once, not %d (THROTTLE=2, one CPU a task)" % (most, cl.width()))
    return array, last, secs


def per_task(cl, work, runs, ref):
    out = os.path.join(work, "per-task")
    array, last, secs = clean_array(cl, out)
    for i, (rid, name) in runs.items():
        o = cl.output(array, i)
        check(o.count("start ") == 1 and "start %s (index %d, run %s): new" % (name, i, rid) in o
              and "sweep slurm: 1 runs: 1 finished" in o, "task %d:\n%s" % (i, o))
        shard = os.path.join(out, "shard-%d.db" % i)
        got = q(shard, "SELECT run_id, status FROM runs")
        check(got == [(rid, "finished")], "%s: %s" % (shard, got))
    check("all 6 runs of %s are finished in %s/merged.db" % (SWEEP, out) in cl.last_output(last), cl.last_output(last))
    merged = os.path.join(out, "merged.db")
    rows = same_results(ref, merged)
    same_report(ref, merged, work, "per-task")
    say("per-task databases + merge: 6 array tasks (at most %d at once), each run trained once into its own "
        "database, merged: 6 runs, %d metric rows bitwise equal to the one-machine sweep's, report identical but "
        "for times; %.1f s from submission to merged" % (cl.width(), rows, secs))


def shared(cl, work, runs, ref):
    out = os.path.join(work, "shared")
    array, last, secs = clean_array(cl, out, "--shared")
    starts = "".join(cl.output(array, i) for i in range(6))
    for i, (rid, name) in runs.items():
        n = starts.count("start %s " % name)
        check(n == 1, "run %s started %d times" % (name, n))
    check(not any(n.startswith("shard-") for n in os.listdir(out)), "--shared wrote shards: %s" % os.listdir(out))
    check("all 6 runs of %s are finished in %s/sweep.db" % (SWEEP, out) in cl.last_output(last), cl.last_output(last))
    db = os.path.join(out, "sweep.db")
    rows = same_results(ref, db)
    same_report(ref, db, work, "shared")
    say("shared database (claims): 6 array tasks (at most %d at once), each run trained once, %d metric rows "
        "bitwise equal to the one-machine sweep's, report identical but for times; %.1f s" % (cl.width(), rows, secs))


class Faults:
    """The faults, each fired as soon as its task's run is past step 100
    (its first evaluation; checkpoints every 20 steps) and not finished:
    task 1 scancel'd then requeued, task 3's train SIGKILLed, task 4's
    batch process (slurmstepd's child) SIGKILLed."""

    def __init__(self, cl, array, out, runs):
        self.cl, self.array, self.out, self.runs = cl, array, out, runs
        self.state = {1: "wait", 3: "wait", 4: "wait"}
        self.ts = {}

    def midrun(self, i):
        log = os.path.join(self.out, "logs", self.runs[i][1] + ".log")
        t = slurp(log) if os.path.exists(log) else ""
        return "step 100/" in t and "finished:" not in t

    def kill(self, i, what, match):
        pids = pids_of(match)
        check(len(pids) == 1, "task %d: %s: pids %s" % (i, what, pids))
        os.kill(pids[0], signal.SIGKILL)
        self.state[i] = "killed"

    def __call__(self):
        self.ts = self.cl.tasks(self.array)
        if self.state[1] == "wait" and self.midrun(1):
            self.cl.slurm("scancel", "%s_1" % self.array)
            self.state[1] = "cancelled"
        elif self.state[1] == "cancelled" and self.ts.get(1, ("",))[0] == "CANCELLED":
            self.cl.slurm("scontrol", "requeue", "%s_1" % self.array)
            self.state[1] = "requeued"
        if self.state[3] == "wait" and self.midrun(3):
            name, db = self.runs[3][1], os.path.join(self.out, "shard-3.db")
            self.kill(3, "gated train", lambda a, p: "train" in a and name in a and db in a)
        if self.state[4] == "wait" and self.midrun(4):
            db = os.path.join(self.out, "shard-4.db")
            self.kill(4, "gated sweep", lambda a, p: p == "slurmstepd" and "sweep" in a and db in a)

    def done(self):
        return self.state == {1: "requeued", 3: "killed", 4: "killed"}


def faulted(cl, work, tag, runs, fault):
    """The per-task array into work/TAG (Slurm's output appended across
    requeues), waited for while fault(cl, array, out, runs), a Faults,
    acts: (out, array job, last job, the fault)."""
    out = os.path.join(work, tag)
    array, last = cl.submit(out, extra=("--open-mode=append",))
    act = fault(cl, array, out, runs)
    cl.wait(array, last, act)
    return out, array, last, act


def faults(cl, work, runs, ref):
    t = time.time()
    out, array, last, _ = faulted(cl, work, "faults", runs, Faults)
    ts = cl.tasks(array)
    want = {0: "COMPLETED", 1: "COMPLETED", 2: "COMPLETED", 3: "FAILED", 4: "FAILED", 5: "COMPLETED"}
    check(all(ts[i][0] == want[i] for i in range(6)) and ts[1][1] == 1, "tasks (state, restarts): %s" % ts)
    check(cl.tasks(last)[None][0] == "CANCELLED", "merge job after failed tasks: %s" % cl.tasks(last))
    o1 = cl.output(array, 1)
    rid1, name1 = runs[1]
    check("start %s (index 1, run %s): new" % (name1, rid1) in o1
          and "start %s (index 1, run %s): killed, resuming from its checkpoint" % (name1, rid1) in o1
          and "sweep slurm: 1 runs: 1 finished" in o1, "requeued task 1:\n%s" % o1)
    step1 = resumed_after(out, runs, 1)
    st = {i: q(os.path.join(out, "shard-%d.db" % i), "SELECT status, coalesce(error_text, '') FROM runs")[0]
          for i in (3, 4)}
    check(st[3][0] == "killed" and "signal 9" in st[3][1], "task 3's run: %s" % (st[3],))
    check(st[4][0] == "running", "task 4's run (its sweep SIGKILLed, nobody marked it): %s" % (st[4],))
    # the whole array again: finished runs are skipped, the killed ones resume
    array2, last2 = cl.submit(out)
    cl.wait(array2, last2)
    ts = cl.tasks(array2)
    check(all(ts[i][0] == "COMPLETED" for i in range(6)), "resubmitted tasks: %s" % ts)
    check(cl.tasks(last2)[None][0] == "COMPLETED", "merge: %s\n%s" % (cl.tasks(last2), cl.last_output(last2)))
    for i, (rid, name) in runs.items():
        o = cl.output(array2, i)
        if i in (3, 4):
            ok = "start %s (index %d, run %s): killed, resuming from its checkpoint" % (name, i, rid) in o
        else:
            ok = "skip %s (index %d): already finished" % (name, i) in o and "start " not in o
        check(ok, "resubmitted task %d:\n%s" % (i, o))
    steps = [step1, resumed_after(out, runs, 3), resumed_after(out, runs, 4)]
    secs = time.time() - t
    merged = os.path.join(out, "merged.db")
    rows = same_results(ref, merged)
    same_report(ref, merged, work, "faults")
    say("faults: task 1 scancel'd at step > 100 and requeued (Restarts=1): resumed after step %d; task 3's train "
        "SIGKILLed: run killed, task FAILED; task 4's gated sweep (slurmstepd's child) SIGKILLed: run left "
        "'running', task FAILED; merge job cancelled (dependency never satisfied); the array resubmitted: 4 "
        "finished runs skipped, runs 3 and 4 resumed after steps %d and %d; merged: 6 runs, %d metric rows "
        "bitwise equal to the one-machine sweep's, report identical but for times; %.1f s"
        % (steps[0], steps[1], steps[2], rows, secs))


def resumed_after(out, runs, i):
    """The step run i resumed after (its log: train's "resuming ID after step S")."""
    rid, name = runs[i]
    log = slurp(os.path.join(out, "logs", name + ".log"))
    m = re.search(r"resuming %s after step (\d+)" % rid, log)
    check(m and 0 < int(m.group(1)) < 1000, "run %d's log does not resume mid-run:\n%s" % (i, log))
    return int(m.group(1))


def main(cluster=Cluster, phases=(per_task, shared, faults)):
    """Brings the cluster up, makes the reference, runs each phase
    (cluster, work, runs, reference database), and stops the daemons."""
    check(os.access(GATED, os.X_OK), "%s is not built (make)" % GATED)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    t0 = time.time()
    work = tempfile.mkdtemp(prefix="gated-slurm-")
    os.chmod(work, 0o755)  # munged: its socket's directories searchable by all
    cl = cluster(work)
    up = cl.up()
    if up.returncode == 77:
        required = os.environ.get("GATED_SLURM_REQUIRED") == "1"
        print("%s: make %s: %s" % ("FAILED (GATED_SLURM_REQUIRED=1)" if required else "SKIPPED", TAG,
                                   up.stderr.strip()), flush=True)
        shutil.rmtree(work)
        return 1 if required else 0
    ok = False
    try:
        check(up.returncode == 0, "tests/slurm/%s: exit %d\n%s%s" % (cl.UP, up.returncode, up.stdout, up.stderr))
        say(re.sub(r"^tests/slurm/up2?\.sh: ", "cluster up in %.1f s: " % (time.time() - t0), up.stdout.strip()))
        runs = plan(work)
        check(sorted(runs) == list(range(6)), "the sweep has %d runs, not 6" % len(runs))
        ref, secs = reference(work)
        say("one machine: gated sweep --jobs 2: 6 runs in %.1f s" % secs)
        for phase in phases:
            phase(cl, work, runs, ref)
        ok = True
    except Failure as e:
        print("%s: FAILED: %s" % (TAG, e), flush=True)
    finally:
        cl.down()
    if ok:
        shutil.rmtree(work)
        say("passed in %.0f s" % (time.time() - t0))
        return 0
    say("the work directory is kept: %s (the daemons' logs in cluster/log, the jobs' in slurm-out)" % work)
    return 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Failure as e:
        print("%s: FAILED: %s" % (TAG, e), flush=True)
        sys.exit(1)
