#!/usr/bin/env python3
"""The Slurm recipe of docs/slurm.md on two nodes (make test-slurm-2).

Brings up a private two-node cluster on this machine (tests/slurm/up2.sh:
slurmctld on "head", one slurmd on each of "node1" and "node2", each host
in network, UTS and PID namespaces of its own; the work directory and the
checkout are the same directory tree for all three, as a cluster file
system would be), then, with tests/slurm/sweep.yaml (six runs):

  one machine  gated sweep --jobs 2 into one database: the reference
  two nodes    tools/slurm_sweep.sbatch --submit (per-task databases, one
               CPU a task, so one task at a time on each node); once node1
               has finished a task and its next task's run is past step
               100, node1 is powered off: SIGKILL to its PID namespace, so
               its slurmd, the task's slurmstepd and `gated train` die at
               once.  Slurm marks node1 down (SlurmdTimeout 10 s) and
               requeues the task; it starts on node2 no sooner than 61 s
               later (cred_expire 60 s), when the run's heartbeat is stale,
               and resumes the run from its checkpoint in the shared
               directory; the merge job then runs on node2.

The log names where every task ran, by Slurm (BatchHost, and the node in
the name of each output file, --output=...-%N.out) and by gated itself (the
host recorded with the run in its shard: the node's hostname).  The merged
database must equal the reference as in tests/slurm/test_slurm.py: every
metric and histogram row bitwise, `gated report` but for times.  Then
down.sh stops the daemons and deletes the namespaces, whatever happened.

When namespaces or the daemons cannot run here (up2.sh exits 77) it prints
SKIPPED and why, and exits 0 (1 with GATED_SLURM_REQUIRED=1).

Run from the repository root, as root: GATED_BIN=build/gated python3 tests/slurm/test_slurm2.py
"""
import os
import re
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_slurm as ts  # noqa: E402
from test_slurm import Failure, check, say  # noqa: E402


class Cluster2(ts.Cluster):
    UP, OUT = "up2.sh", "%x-%A_%a-%N.out"

    def up(self):
        r = super().up()
        if r.returncode == 0:
            head = ts.slurp(os.path.join(self.dir, "netns")).split()[0]
            self.via = ["nsenter", "--net=/run/netns/" + head]
        return r

    def jobs(self, job):
        """array task (None: a job not an array) -> (state, restarts, batch host)."""
        out = {}
        for line in self.slurm("scontrol", "-o", "show", "job", job, ok=False).stdout.splitlines():
            f = dict(kv.split("=", 1) for kv in line.split() if "=" in kv)
            i = int(f["ArrayTaskId"]) if f.get("ArrayTaskId", "").isdigit() else None
            out[i] = (f.get("JobState"), int(f.get("Restarts", "0")), f.get("BatchHost"))
        return out

    def started(self, job):
        """When job (the last start of a requeued one) started, unix seconds."""
        t = re.search(r"\bStartTime=(\S+)", self.slurm("scontrol", "-o", "show", "job", job).stdout).group(1)
        return time.mktime(time.strptime(t, "%Y-%m-%dT%H:%M:%S"))

    def power_off(self, node):
        """SIGKILL to the node's unshare --kill-child: its PID namespace,
        every process of the node, dies with it.  Returns once no process
        is left in the node's network namespace."""
        for line in ts.slurp(os.path.join(self.dir, "pids")).splitlines():
            name, pid, start = line.split()
            if name == node:
                with open("/proc/%s/stat" % pid) as f:
                    check(f.read().rsplit(")", 1)[1].split()[19] == start, "%s: pid %s is not ours" % (node, pid))
                os.kill(int(pid), signal.SIGKILL)
        ns = [n for n in ts.slurp(os.path.join(self.dir, "netns")).split() if n.endswith("-" + node)][0]
        for _ in range(100):
            if not ts.run("ip", "netns", "pids", ns).stdout.split():
                return
            time.sleep(0.1)
        raise Failure("%s: processes left after SIGKILL" % node)


class Crash(ts.Faults):
    """Powers node1 off once it has completed a task and its next task's
    run is past step 100 (checkpoints every 20 steps) and not finished."""

    def __init__(self, cl, array, out, runs):
        super().__init__(cl, array, out, runs)
        self.state, self.task, self.at = "wait", None, None

    def __call__(self):
        if self.state != "wait":
            return
        jobs = self.cl.jobs(self.array)
        if not any(s == "COMPLETED" and h == "node1" for s, _, h in jobs.values()):
            return
        for i, (s, _, h) in jobs.items():
            if s == "RUNNING" and h == "node1" and self.midrun(i):
                self.cl.power_off("node1")
                self.task, self.state, self.at = i, "crashed", time.time()
                return

    def done(self):
        return self.state == "crashed"


def hosts_of(db):
    """Where gated ran the run of a shard: the runs row's host (the last
    start) and every host of its environments."""
    host = ts.q(db, "SELECT host FROM runs")[0][0]
    return host, sorted(h for (h,) in ts.q(db, "SELECT DISTINCT host FROM environments"))


def two_nodes(cl, work, runs, ref):
    t = time.time()
    out, array, last, act = ts.faulted(cl, work, "two-nodes", runs, Crash)
    secs = time.time() - t
    i, (rid, name) = act.task, runs[act.task]
    jobs = cl.jobs(array)
    check(all(s == "COMPLETED" for s, _, _ in jobs.values()) and len(jobs) == 6, "tasks: %s" % jobs)
    check(jobs[i][1:] == (1, "node2"), "task %d (state, restarts, host): %s" % (i, jobs[i]))
    node1 = cl.slurm("sinfo", "-h", "-N", "-n", "node1", "-o", "%T %E").stdout.strip()
    check(node1.startswith("down"), "node1 after the power-off: %s" % node1)
    # where each task ran: Slurm's BatchHost and gated's own record agree
    for k in range(6):
        host, envs = hosts_of(os.path.join(out, "shard-%d.db" % k))
        files = [os.path.basename(p) for p in cl.outputs(array, k)]
        check(host == jobs[k][2], "task %d: Slurm ran it on %s, gated recorded %s" % (k, jobs[k][2], host))
        want = ["node1", "node2"] if k == i else [host]
        check(envs == want and sorted(re.sub(r".*-(node\d)\.out$", r"\1", f) for f in files) == want,
              "task %d: gated's hosts %s, output files %s, not %s" % (k, envs, files, want))
        say("task %d (%s): ran on %s; gated recorded host %s; Slurm's output: %s"
            % (k, name if k == i else runs[k][1], " then ".join(want), " then ".join(envs), ", ".join(files)))
    check({jobs[k][2] for k in range(6) if k != i} == {"node1", "node2"}, "both nodes ran tasks: %s" % jobs)
    o1 = ts.slurp(os.path.join(cl.logs, "gated-sweep-%s_%d-node1.out" % (array, i)))
    o2 = ts.slurp(os.path.join(cl.logs, "gated-sweep-%s_%d-node2.out" % (array, i)))
    check("start %s (index %d, run %s): new" % (name, i, rid) in o1, "task %d on node1:\n%s" % (i, o1))
    check("start %s (index %d, run %s): killed, resuming from its checkpoint" % (name, i, rid) in o2
          and "sweep slurm: 1 runs: 1 finished" in o2, "task %d on node2:\n%s" % (i, o2))
    # powered off past the evaluation at step 100: the checkpoint of step 80
    # (every 20) or later was there; the run was not finished
    step = ts.resumed_after(out, runs, i)
    check(step >= 80, "task %d resumed after step %d, but its run was past step 100" % (i, step))
    hold = cl.started("%s_%d" % (array, i)) - act.at
    merged, merge = os.path.join(out, "merged.db"), cl.jobs(last)[None]
    check(merge[0] == "COMPLETED", "merge job: %s\n%s" % (merge, cl.last_output(last)))
    rows = ts.same_results(ref, merged)
    ts.same_report(ref, merged, work, "two-nodes")
    say("node1 powered off past step 100 of task %d's run (slurmd, slurmstepd and gated killed at once): node1 "
        "'%s'; the task requeued (Restarts=1), started on node2 %.0f s after the power-off and resumed the run "
        "after step %d from its checkpoint in the shared folder; merge job completed on %s; merged: 6 runs, %d "
        "metric rows bitwise equal to the one-machine sweep's, report identical but for times; %.1f s from "
        "submission to merged" % (i, node1, hold, step, merge[2], rows, secs))


if __name__ == "__main__":
    ts.TAG = "test-slurm-2"
    try:
        sys.exit(ts.main(Cluster2, (two_nodes,)))
    except Failure as e:
        print("%s: FAILED: %s" % (ts.TAG, e), flush=True)
        sys.exit(1)
