"""Host noise through the real binary: every case that ran keeps a `host` table (one row per rank, the readings
docs/results-format.md lists), and `report` judges it as docs/metrics.md says: recomputed here from the file, the
others' share and the longest wait for a CPU, and the flags they give, in table, JSON and CSV alike. With a busy loop
pinned to each core while the run runs, every case is flagged (a verdict, not a timing: the loops take half of
each core whatever the machine's speed)."""
import csv
import io
import json
import re
import os
import subprocess
import unittest

import h5py

from common import SharedRunTest, gpuscale, mpirun, preamble, s

HOST_COLUMNS = {"rank": "", "wall": "s", "cpu": "s", "run_wait": "s", "involuntary_switches": "", "node_busy": "s",
                "node_steal": "s", "node_cpus": "", "cpus_allowed": "", "cpu_quota": "", "procs_running": "",
                "load": ""}

# Cases of about 0.3 s or more (the others' share is judged from 0.1 s on), one skipped (inter-node on one node).
CONFIG = preamble(warmup=1, reps=8, threads=1) + """
[[experiment]]
name = "mm"
workload = "gemm"
size = 256
ops = 64
modes = ["serial", "parallel"]

[[experiment]]
name = "ar"
workload = "collective"
op = "allreduce"
bytes = 1048576
iters = 400
scope = ["world", "inter-node"]
modes = ["parallel"]
"""

BUSY_SHARE, WAIT_SHARE, MIN_WALL = 0.25, 0.2, 0.1  # report/host_noise.hpp
STAT_TICK = 0.01  # report/host_noise.cpp: /proc/stat's resolution


def own_threads_filled(r):
    """Whether a rank's own threads kept the CPUs it may use busy (its waits were for each other)."""
    cpus = float(r["cpus_allowed"])
    if r["cpu_quota"] == r["cpu_quota"] and r["cpu_quota"] > 0:  # not NaN
        cpus = min(cpus, r["cpu_quota"])
    return r["cpus_allowed"] > 0 and r["wall"] > 0 and r["cpu"] >= (1 - WAIT_SHARE) * cpus * r["wall"]


def judged(rows, node_of):
    """(others_share or None, wait_share or None) from a case's host rows, as report/host_noise.cpp computes them:
    of a rank's wait, no more than others' CPU time on its node (and a tick per CPU) where that is judged, and no
    rank whose own threads filled its CPUs."""
    nodes = {}
    for r in rows:
        n = nodes.setdefault(node_of[r["rank"]], {"wall": 0, "busy": None, "own": 0.0, "cpus": 0})
        n["own"] += r["cpu"]
        if r["wall"] >= n["wall"]:
            n.update(wall=r["wall"], busy=r["node_busy"], cpus=r["node_cpus"])
    others = {k: max(0.0, n["busy"] - n["own"]) for k, n in nodes.items() if n["wall"] >= MIN_WALL}
    shares = [others[k] / (nodes[k]["wall"] * nodes[k]["cpus"]) for k in others]
    waits = []
    for r in rows:
        if r["run_wait"] + r["cpu"] <= 0 or own_threads_filled(r):
            continue
        wait = r["run_wait"]
        if node_of[r["rank"]] in others:
            wait = min(wait, others[node_of[r["rank"]]] + STAT_TICK * r["node_cpus"])
        waits.append(wait / (r["run_wait"] + r["cpu"]))
    return (max(shares) if shares else None), (max(waits) if waits else None)


class Readings(SharedRunTest):
    CONFIG = CONFIG

    def test_every_case_that_ran_has_one_row_of_readings_per_rank(self):
        self.assertEqual(self.proc.returncode, 0, self.proc.stdout + self.proc.stderr)
        with h5py.File(self.out, "r") as f:
            self.assertEqual(s(f.attrs["schemaVersion"]), "1.10")
            for k, c in f["cases"].items():
                if s(c.attrs["status"]) == "skipped":
                    self.assertNotIn("host", c, k)
                    continue
                t = c["host"]
                self.assertEqual(set(t.keys()), set(HOST_COLUMNS), k)
                for name, unit in HOST_COLUMNS.items():
                    self.assertEqual(s(t[name].attrs.get("unit", "")), unit, f"{k}/host/{name}")
                self.assertEqual(sorted(t["rank"][()]), [0, 1])
                self.assertTrue(all(t["wall"][()] > 0))
                self.assertTrue(all(t["cpu"][()] >= 0))
                self.assertTrue(all(t["cpu"][()] <= t["wall"][()] * t["cpus_allowed"][()] * 1.05 + 0.02))
                self.assertTrue(all(t["node_cpus"][()] >= 1))
                self.assertTrue(all(t["cpus_allowed"][()] >= 1))
                self.assertTrue(all(t["node_busy"][()] >= 0))

    def test_report_judges_the_readings_as_documented_in_every_view(self):
        with h5py.File(self.out, "r") as f:
            node_of = dict(enumerate(int(x) for x in f["ranks"]["node_index"][()]))
            expected = {}
            for k, c in f["cases"].items():
                if "host" not in c:
                    continue
                t = c["host"]
                rows = [{n: t[n][()][i] for n in HOST_COLUMNS} for i in range(len(t["rank"]))]
                expected[int(k)] = judged(rows, node_of)
        j = json.loads(gpuscale("report", self.out, "--format", "json").stdout)
        table = gpuscale("report", self.out).stdout
        by_case = {int(r["case"]) - 1: r for r in csv.DictReader(io.StringIO(gpuscale("report", self.out, "--format",
                                                                                       "csv").stdout))}
        self.assertEqual(len(expected), len([r for r in j if r["status"] != "skipped"]))
        for r in j:
            i = int(r["case"]) - 1
            if r["status"] == "skipped":
                self.assertNotIn("host", r)
                self.assertEqual(by_case[i]["host_busy"], "")
                continue
            others, wait = expected[i]
            h = r["host"]
            if others is None:
                self.assertNotIn("others_share", h)
            else:
                self.assertAlmostEqual(h["others_share"], others, places=9)
                self.assertAlmostEqual(float(by_case[i]["host_others_share"]), others, places=6)
            if wait is None:
                self.assertNotIn("wait_share", h)
            else:
                self.assertAlmostEqual(h["wait_share"], wait, places=9)
            busy = others is not None and others > BUSY_SHARE
            descheduled = wait is not None and wait > WAIT_SHARE
            self.assertEqual(h["busy"], busy, r)
            self.assertEqual(h["descheduled"], descheduled, r)
            self.assertEqual(by_case[i]["host_busy"], str(int(busy)))
            self.assertEqual(by_case[i]["descheduled"], str(int(descheduled)))
            flags = r.get("flags", [])
            self.assertEqual(any(x.startswith("host busy: others used ") for x in flags), busy, flags)
            self.assertEqual(any(x.startswith("descheduled: rank ") for x in flags), descheduled, flags)
            if busy:  # a note of its own, or grouped with other cases' (report_notes.hpp)
                self.assertTrue(f"note: case {i + 1}: host busy: others used" in table or
                                re.search(r"note: host busy in \d+ of \d+ cases", table), table)


class BusyLoops(unittest.TestCase):
    """A busy loop pinned to each core for the whole run: every case's ranks share their cores with them."""

    def test_every_case_is_flagged_when_a_busy_loop_holds_each_core(self):
        test = SharedRunTest()
        test.setUp()
        self.addCleanup(test.tearDown)
        loops = [subprocess.Popen(["taskset", "-c", str(cpu), "sh", "-c", "while :; do :; done"])
                 for cpu in sorted(os.sched_getaffinity(0))]
        try:
            out = test.path("busy.h5")
            p = mpirun(2, "run", test.write("busy.toml", CONFIG), "-o", out, timeout=600)
        finally:
            for loop in loops:
                loop.kill()
                loop.wait()
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        j = json.loads(gpuscale("report", out, "--format", "json").stdout)
        ran = [r for r in j if r["status"] != "skipped"]
        self.assertEqual(len(ran), 3)
        for r in ran:
            self.assertTrue(r["host"]["busy"] or r["host"]["descheduled"], r)
            self.assertTrue(any(x.startswith(("host busy: ", "descheduled: ")) for x in r["flags"]), r)
        # ... and in the progress line of each case that ran.
        progress = [line for line in p.stdout.splitlines() if line.startswith("[") and " ... " in line]
        self.assertEqual(sum(("host busy: " in line or "descheduled: " in line) for line in progress), 3, p.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
