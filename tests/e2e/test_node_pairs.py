"""The node-pair sweep across 4 emulated hosts (network namespaces, 1 rank
each, TCP between them): every pair of hosts measured in 3 rounds of 2 pairs
at once, the file read back with h5py, and `gpuscale report` naming the host
whose link `tc tbf` slowed down, and no host when no link is limited.

The tests that need no hosts (bad --pair-threshold, a sweep refused with
another op, skipped on one host) always run; the exit code is 77 (ctest:
skipped) when the hosts cannot be made here (not root, no `ip`, `unshare` or
`tc`) and those tests passed."""
import itertools
import json
import os
import shutil
import sys

import h5py

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hosts  # noqa: E402
from common import GPUSCALE, InputErrorTest, ScratchTest, gpuscale, mpirun, s  # noqa: E402

HOSTS = None  # the hosts.Hosts of this run, set by use() when they could be made
NODES = 4
SLOW = 4  # the host (1-based) whose link is limited in the last test
RATE = "100mbit"

# The emulated hosts share this machine's cores (2 here), so pairs of
# unlimited links differ by chance: measured from 46% to 100% of the best
# pair, where a link limited to 100 Mbit/s reaches about 1%. The default 93%
# (ClusterKit's, for a cluster's dedicated links) would call noise slow here;
# the tests that say "this host and no other" use this threshold.
THRESHOLD = "0.25"

# Each host offers 1 slot, but all of them run on the same few cores: ranks
# that wait yield the core, as Open MPI does by itself when it knows a node is
# oversubscribed.
YIELD = ["--mca", "mpi_yield_when_idle", "1"]

SWEEP = """
[defaults]
backend = "cpu"
comm = "mpi"
warmup = 1
reps = {reps}
threads = 1

[[experiment]]
name = "np"
workload = "collective"
op = "pairs"
scope = "node-pairs"
dtype = "fp32"
bytes = {nbytes}
iters = 2
"""


def ints(a):
    return [int(x) for x in a]


def strs(a):
    return [s(x) for x in a]


class WithoutHosts(InputErrorTest):
    def test_a_pair_threshold_outside_0_to_1_is_refused(self):
        for bad in ("1.5", "0", "-0.2"):
            with self.subTest(threshold=bad):
                p = gpuscale("report", self.path("any.h5"), "--pair-threshold", bad)
                self.assert_input_error(p, "--pair-threshold: must be a number above 0 and at most 1 (a share of the "
                                           f"best node pair's bandwidth, e.g. 0.93), got {bad}; see 'gpuscale report "
                                           "--help'")

    def test_b_another_op_in_scope_node_pairs_is_refused_naming_the_case(self):
        cfg, out, p = self.run_config(SWEEP.format(reps=2, nbytes=4096).replace('op = "pairs"', 'op = "allreduce"'))
        self.assert_input_error(p, ": case 1 of ", " (np op=allreduce ",
                                "scope node-pairs runs op pairs only (every node "
                                "exchanges with every other node, a pair at a time); got op 'allreduce'", out=out)
        c = gpuscale("check", cfg)
        self.assert_input_error(c, "got op 'allreduce'")

    def test_c_the_shipped_config_checks(self):
        p = gpuscale("check", os.path.join(os.environ["GPUSCALE_SOURCE_DIR"], "configs", "node-pairs.toml"), "--cases")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("scope=node-pairs [parallel]", p.stdout)

    def test_d_on_one_host_the_sweep_is_skipped_with_a_reason(self):
        cfg = self.write("one.toml", SWEEP.format(reps=2, nbytes=4096))
        out = self.path("one.h5")
        p = mpirun(2, "run", cfg, "-o", out, timeout=90, cwd=self.dir)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)  # nothing ran: not a success, the file complete
        self.assertIn("ran 0 of 1 case (1 skipped: 1 because scope node-pairs needs ranks on at least 2 nodes",
                      p.stdout)
        with h5py.File(out, "r") as f:
            self.assertEqual(int(f.attrs["complete"]), 1)
            c = f["cases/0000"]
            self.assertEqual(s(c.attrs["status"]), "skipped")
            self.assertEqual(s(c.attrs["status_reason"]),
                             "scope node-pairs needs ranks on at least 2 nodes; this job runs on 1 node")
            self.assertEqual(ints(c["group"][()]), [0, -1])  # local rank 0 only
            self.assertNotIn("pairs", c)
        r = gpuscale("report", out, "--wide")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("skipped: case 1: scope node-pairs needs ranks on at least 2 nodes", r.stdout)
        self.assertNotIn("node pairs, case", r.stdout)


class AcrossHosts(ScratchTest):
    def setUp(self):
        if HOSTS is None:
            self.skipTest("emulated hosts unavailable")
        super().setUp()

    def sweep(self, name, reps, nbytes, timeout):
        cfg = self.write(name + ".toml", SWEEP.format(reps=reps, nbytes=nbytes))
        out = self.path(name + ".h5")
        p = HOSTS.mpirun(NODES, [GPUSCALE, "run", cfg, "-o", out], extra=YIELD, timeout=timeout, cwd=self.dir)
        self.assertEqual(HOSTS.leftovers(), [], "processes left in the namespaces after mpirun returned")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.check_file(out, reps)
        return out

    def check_file(self, out, reps):
        with h5py.File(out, "r") as f:
            self.assertEqual(int(f.attrs["complete"]), 1)
            self.assertEqual(int(f.attrs["nodes"]), NODES)
            host_of = strs(f["ranks/hostname"][()])
            self.assertEqual(host_of, HOSTS.hostnames)
            c = f["cases/0000"]
            self.assertEqual(s(c.attrs["status"]), "ok", s(c.attrs["status_reason"]))
            self.assertEqual(s(c.attrs["scope"]), "node-pairs")
            self.assertEqual(int(c.attrs["groups"]), 1)
            self.assertEqual(ints(c["group"][()]), [0] * NODES)
            self.assertEqual(ints(c["group_rank"][()]), list(range(NODES)))
            self.assertEqual(ints(c["wrong_elements"][()]), [0] * NODES)
            self.assertEqual(c["device_time"].shape, (NODES, reps))
            # The schedule: 3 rounds of 2 disjoint pairs, every pair of hosts once.
            p = c["pairs"]
            rounds = ints(p["round"][()])
            a, b = ints(p["node_a"][()]), ints(p["node_b"][()])
            self.assertEqual(rounds, [1, 1, 2, 2, 3, 3])
            self.assertEqual(sorted(zip(a, b)), list(itertools.combinations(range(NODES), 2)))
            for r in (1, 2, 3):
                busy = [n for i, n in enumerate(a + b) if (rounds + rounds)[i] == r]
                self.assertEqual(sorted(busy), list(range(NODES)), f"round {r} is not disjoint")
            self.assertEqual(ints(p["rank_a"][()]), a)  # one rank per host: rank = node
            self.assertEqual(strs(p["host_a"][()]), [host_of[n] for n in a])
            self.assertEqual(strs(p["host_b"][()]), [host_of[n] for n in b])
            # Each round timed on both ends of its pairs, every sample.
            names = strs(c["phases/names"][()])
            self.assertEqual(sorted(names), ["round 1", "round 2", "round 3"])
            self.assertEqual(len(c["phases/rank"][()]), NODES * 3 * reps)

    def report(self, out, *extra):
        t = gpuscale("report", out, *extra)
        self.assertEqual(t.returncode, 0, t.stdout + t.stderr)
        j = gpuscale("report", out, "--format", "json", *extra)
        self.assertEqual(j.returncode, 0, j.stdout + j.stderr)
        print(t.stdout[t.stdout.find("node pairs, case"):], end="")  # the measured pairs, in the test's log
        return t.stdout, json.loads(j.stdout)[0]["node_pairs"]

    def test_a_no_limited_link_no_node_named(self):
        out = self.sweep("even", reps=5, nbytes=4 << 20, timeout=150)
        table, np = self.report(out, "--pair-threshold", THRESHOLD)
        self.assertEqual(np["slow_nodes"], [])
        self.assertNotIn("link is slow", table)
        self.assertNotIn("slow links", table)
        self.assertEqual(len(np["pairs"]), 6)
        for p in np["pairs"]:
            self.assertGreater(p["gbps"], 0)
        # The verdict fails no node and no link (one case: a straggling rank or a busy host only warns).
        v = gpuscale("report", out, "--verdict", "--format", "json", "--pair-threshold", THRESHOLD)
        self.assertEqual(v.returncode, 0, v.stdout + v.stderr)
        v = json.loads(v.stdout)
        self.assertEqual(sorted(n["name"] for n in v["nodes"]), sorted(HOSTS.hostnames))
        self.assertNotIn("FAIL", [n["severity"] for n in v["nodes"] + v["links"]], v)
        self.assertEqual(v["drain"], [])

    def test_b_the_limited_host_is_named(self):
        HOSTS.limit_bandwidth(SLOW, RATE)  # last test: the limit stays until the hosts go
        slow = HOSTS.hostnames[SLOW - 1]
        out = self.sweep("limited", reps=3, nbytes=1 << 20, timeout=200)
        table, np = self.report(out, "--pair-threshold", THRESHOLD)
        self.assertEqual(np["slow_nodes"], [slow])
        self.assertIn(f"node {slow}'s link is slow: pairs with it reach ", table)
        self.assertIn("of the best pair (threshold 25%)", table)
        with_slow = [p for p in np["pairs"] if slow in (p["host_a"], p["host_b"])]
        others = [p for p in np["pairs"] if p not in with_slow]
        self.assertEqual(len(with_slow), 3)
        self.assertTrue(all(p["slow"] for p in with_slow))
        self.assertLess(max(p["gbps"] for p in with_slow), min(p["gbps"] for p in others) / 4)
        # Run again alone, each pair with that host was slow again (the second look); the others were not run
        # again or were fast alone.
        self.assertIn("run again alone, 3 of 3 slow pair(s) were slow again", table)
        for p in with_slow:
            self.assertTrue(p["confirmed"], p)
            self.assertGreaterEqual(p["alone_samples"], 3, p)
            self.assertLess(p["alone_share_of_best"], 0.25, p)
        with h5py.File(out, "r") as f:
            self.assertEqual(sorted(set(ints(f["cases/0000/rechecks/round"][()]))), [1, 2, 3])
        j = json.loads(gpuscale("report", out, "--format", "json").stdout)[0]
        if j["host"]["busy"] or j["host"]["descheduled"]:
            self.verdict_on_a_busy_host(out, slow)
        else:
            self.verdict_on_a_quiet_host(out, slow, with_slow)
        # With the default threshold (93%) the limited host is named too, perhaps beside noise.
        table, np = self.report(out)
        self.assertIn(slow, np["slow_nodes"])
        self.assertIn("(threshold 93%)", table)


    def verdict_on_a_quiet_host(self, out, slow, with_slow):
        # That host fails, naming its link, the others pass; the list to take out is that host.
        v = gpuscale("report", out, "--verdict", "--pair-threshold", THRESHOLD)
        self.assertEqual(v.returncode, 1, v.stdout + v.stderr)
        text = " ".join(v.stdout.split())
        self.assertIn(f"FAIL node {slow}: its link is slow: every pair with it reaches only ", text)
        self.assertIn(", and again when each was run alone", text)
        self.assertIn("again alone: ", text)
        j = json.loads(gpuscale("report", out, "--verdict", "--format", "json", "--pair-threshold", THRESHOLD).stdout)
        # The others pass; on this machine's shared cores one may warn of a straggling rank, never of its link.
        self.assertEqual([n["name"] for n in j["nodes"] if n["severity"] == "FAIL"], [slow], j["nodes"])
        for n in j["nodes"]:
            if n["name"] != slow:
                self.assertIn(n["severity"], ("PASS", "WARN"), n)
                self.assertFalse(any("link" in r for r in n["reasons"]), n)
        self.assertEqual(sorted(l["name"] for l in j["links"] if l["severity"] == "FAIL"),
                         sorted(f"{p['host_a']}-{p['host_b']}" for p in with_slow))
        slurm = gpuscale("report", out, "--verdict", "--format", "slurm", "--pair-threshold", THRESHOLD)
        self.assertEqual(slurm.returncode, 1, slurm.stdout + slurm.stderr)
        self.assertEqual(slurm.stdout.splitlines()[0], slow)
        self.assertTrue(slurm.stdout.splitlines()[1].startswith(f"scontrol update nodename={slow} state=drain "
                                                                "reason='gpuscale: its link is slow: "), slurm.stdout)

    def verdict_on_a_busy_host(self, out, slow):
        # Measured while others took the CPUs: the host warns that it cannot judge, and nothing is drained.
        print("the case was flagged host busy or descheduled: its verdict cannot fail a node", flush=True)
        v = gpuscale("report", out, "--verdict", "--pair-threshold", THRESHOLD)
        text = " ".join(v.stdout.split())
        self.assertIn(f"WARN node {slow}: cannot judge (", text)
        self.assertNotIn("FAIL node", text)
        slurm = gpuscale("report", out, "--verdict", "--format", "slurm", "--pair-threshold", THRESHOLD)
        self.assertTrue(slurm.stdout.startswith("# nothing to drain: "), slurm.stdout)


def use(h):
    global HOSTS
    HOSTS = h


if __name__ == "__main__":
    sys.exit(hosts.run_tests(NODES, 1, use, missing=None if shutil.which("tc") else "`tc` not found (Debian package "
                             "iproute2)", without_hosts=True))
