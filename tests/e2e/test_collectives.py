"""The collective workload end to end on the CPU backend through mpirun: every
op in scopes world, intra-node and inter-node (skipped on one node), read back
with h5py; algbw and busbw recomputed here from the raw samples with
nccl-tests' formulas; bad input; and a rank that hangs or dies in the middle
of a collective sweep."""
import json
import os
import re
import signal
import subprocess
import time
import unittest

import h5py
import numpy as np

from common import (ENV, GPUSCALE, MPIEXEC, InputErrorTest, ScratchTest, exits_past_a_stopped_peer,
                    gpuscale, mpirun, preamble, rank_pids, read_until)

OPS = ["allreduce", "allgather", "reduce_scatter", "broadcast", "reduce", "alltoall", "sendrecv", "pairs"]
SIZE = {"fp32": 4, "fp64": 8, "fp16": 2, "bf16": 2}

CONFIG = preamble(warmup=1, reps=3) + """
[[experiment]]
name = "sweep"
workload = "collective"
op = ["allreduce", "allgather", "reduce_scatter", "broadcast", "reduce", "alltoall", "sendrecv", "pairs"]
dtype = ["fp32", "fp64"]
bytes = [1000, 65536]
iters = 2
scope = ["world", "intra-node", "inter-node"]
"""


def s(x):
    return x.decode() if isinstance(x, bytes) else x


def expected_op_bytes(op, nbytes, dtype, n):
    """nccl-tests' size after rounding the element count to whole parts."""
    count = nbytes // SIZE[dtype]
    if op in ("allgather", "reduce_scatter", "alltoall"):
        count = count // n * n
    return count * SIZE[dtype]


def expected_bus_factor(op, n):
    if op == "allreduce":
        return 2 * (n - 1) / n
    if op in ("allgather", "reduce_scatter", "alltoall"):
        return (n - 1) / n
    return 1.0


class Sweep:
    """Runs CONFIG once on `ranks` ranks for all tests of the subclass."""
    ranks = 2

    @classmethod
    def setUpClass(cls):
        cls.shared = ScratchTest()
        cls.shared.setUp()
        cls.out = cls.shared.path("c.h5")
        cls.proc = mpirun(cls.ranks, "run", cls.shared.write("c.toml", CONFIG), "-o", cls.out)
        cls.rows = json.loads(gpuscale("report", cls.out, "--format", "json").stdout or "[]")

    @classmethod
    def tearDownClass(cls):
        cls.shared.tearDown()

    def cases(self, f):
        return [f["cases"][k] for k in sorted(f["cases"])]

    def test_the_run_succeeds_and_says_which_transport(self):
        self.assertEqual(self.proc.returncode, 0, self.proc.stdout + self.proc.stderr)
        self.assertIn("comm mpi: comm auto: MPI on the cpu backend", self.proc.stdout)
        with h5py.File(self.out, "r") as f:
            self.assertEqual(s(f.attrs["comm"]), "mpi")
            self.assertEqual(s(f.attrs["commReason"]), "comm auto: MPI on the cpu backend")
            self.assertEqual(f.attrs["complete"], 1)

    def test_the_data_plane_is_set_up_before_the_first_case_and_its_time_is_in_the_file(self):
        self.assertEqual(self.proc.returncode, 0, self.proc.stdout + self.proc.stderr)
        # Rank 0's communicators: the world, its node's (intra-node) and that of the first ranks of each node.
        m = re.search(r"^MPI: (\d+) communicator\(s\) in ([0-9.]+) s$", self.proc.stdout, re.M)
        self.assertIsNotNone(m, self.proc.stdout)
        self.assertEqual(int(m.group(1)), 3)
        self.assertLess(m.start(), self.proc.stdout.index("[1/"))
        with h5py.File(self.out, "r") as f:
            self.assertEqual(f.attrs["dataPlaneCommunicators"], 3)
            seconds = float(f.attrs["dataPlaneSetupSeconds"])
        self.assertTrue(0 <= seconds < 120, seconds)
        if seconds < 9.95:  # as the line prints it below 10 s
            self.assertEqual(f"{seconds:.1f}", m.group(2))

    def test_world_runs_once_and_other_scopes_in_both_modes(self):
        self.assertIn("serial and parallel are the same", self.proc.stdout)
        with h5py.File(self.out, "r") as f:
            modes = {}
            for c in self.cases(f):
                p = c["parameters"].attrs
                modes.setdefault((s(p["op"]), s(p["scope"])), set()).add(s(c.attrs["mode"]))
        for (op, scope), m in modes.items():
            if scope == "world" and op != "pairs":
                self.assertEqual(m, {"parallel"}, (op, scope))
            else:
                self.assertEqual(m, {"serial", "parallel"}, (op, scope))

    def test_every_case_verifies_and_inter_node_is_skipped_with_a_reason(self):
        n = self.ranks
        with h5py.File(self.out, "r") as f:
            cases = self.cases(f)
            self.assertEqual(len(cases), 2 * 2 * (7 * 5 + 6))
            for c in cases:
                a, p = c.attrs, c["parameters"].attrs
                label = f"{s(p['op'])} {s(p['dtype'])} {p['bytes']} {s(p['scope'])} {s(a['mode'])}"
                self.assertEqual(s(a["scope"]), s(p["scope"]), label)
                self.assertEqual(s(a["comm"]), "mpi", label)
                if s(p["scope"]) == "inter-node":
                    self.assertEqual(s(a["status"]), "skipped", label)
                    self.assertEqual(s(a["status_reason"]),
                                     "scope inter-node needs ranks on at least 2 nodes; this job runs on 1 node")
                    self.assertNotIn("device_time", c)
                    self.assertEqual(list(c["group"][()]), list(range(n)), label)  # one group per local rank
                    self.assertEqual(list(c["group_size"][()]), [1] * n, label)
                    continue
                self.assertEqual(s(a["status"]), "ok", label)
                self.assertEqual(s(a["status_reason"]), "", label)
                self.assertEqual(a["groups"], 1, label)
                self.assertEqual(list(c["group"][()]), [0] * n, label)
                self.assertEqual(list(c["group_rank"][()]), list(range(n)), label)
                self.assertEqual(list(c["group_size"][()]), [n] * n, label)
                self.assertEqual(list(c["wrong_elements"][()]), [0] * n, label)
                self.assertEqual(c["device_time"].shape, (n, 3), label)

    def test_sizes_and_bus_factors_are_nccl_tests_ones(self):
        n = self.ranks
        with h5py.File(self.out, "r") as f:
            for c in self.cases(f):
                p = c["parameters"].attrs
                if s(c.attrs["status"]) != "ok":
                    continue
                op, dtype = s(p["op"]), s(p["dtype"])
                want = expected_op_bytes(op, int(p["bytes"]), dtype, n)
                self.assertTrue(np.all(c["op_bytes"][()] == want), (op, dtype, p["bytes"]))
                self.assertTrue(np.allclose(c["bus_factor"][()], expected_bus_factor(op, n)), op)
                self.assertEqual(c.attrs["bytes_per_sample"], want * int(p["iters"]))
                self.assertEqual(s(c["op_bytes"].attrs["unit"]), "B")

    def test_algbw_and_busbw_in_the_report_follow_from_the_raw_samples(self):
        self.assertTrue(self.rows)
        by_case = {r["case"]: r for r in self.rows}
        checked = 0
        with h5py.File(self.out, "r") as f:
            for c in self.cases(f):
                r = by_case[int(c.attrs["index"]) + 1]  # the report numbers cases from 1
                if s(c.attrs["status"]) == "skipped":
                    self.assertEqual(r["status"], "skipped")
                    self.assertNotIn("algbw_gbps", r)
                    self.assertNotIn("median_s", r)
                    continue
                iters = int(c["parameters"].attrs["iters"])
                # nccl-tests: per-rank time averaged over the iterations, averaged over ranks; median over samples.
                op_time = np.median(c["device_time"][()].mean(axis=0) / iters)
                algbw = c["op_bytes"][()].mean() / op_time / 1e9
                busbw = algbw * c["bus_factor"][()].mean()
                self.assertAlmostEqual(r["op_time_s"] / op_time, 1.0, places=9)
                self.assertAlmostEqual(r["algbw_gbps"] / algbw, 1.0, places=9)
                if busbw > 0:
                    self.assertAlmostEqual(r["busbw_gbps"] / busbw, 1.0, places=9)
                self.assertEqual(r["wrong_elements"], 0)
                self.assertGreater(r["algbw_gbps"], 0)
                checked += 1
        self.assertGreater(checked, 40)

    def test_the_table_shows_skipped_rows_and_why(self):
        r = gpuscale("report", self.out, "--wide")
        self.assertEqual(r.returncode, 0, r.stderr)
        header = next(line for line in r.stdout.splitlines() if line.lstrip().startswith("#  name"))
        self.assertIn("busbw", header)
        self.assertRegex(r.stdout, r"scope=inter-node\s+-\s+-.*skipped")
        self.assertIn("note: skipped: case", r.stdout)
        self.assertIn(f"scope=intra-node (1x{self.ranks})", r.stdout)
        csv = gpuscale("report", self.out, "--format", "csv").stdout.splitlines()
        self.assertIn(",scope,groups,group_size,op_time_s,algbw_gbps,busbw_gbps,wrong_elements,"
                      "status_reason,flags,host_others_share,host_wait_share,host_busy,descheduled,"
                      "exposed_transfer_s,overlap_fraction,", csv[0])
        # The default table: nccl-tests' columns and closing line per op, a skipped size as such, in 80 columns.
        t = gpuscale("report", self.out).stdout
        self.assertRegex(t, r"#\s+size\s+count\s+type\s+redop\s+root\s+time\s+algbw\s+busbw\s+#wrong\s+max\n")
        self.assertRegex(t, r"\s1000\s+250\s+fp32\s+sum\s+-1\s+skipped\s+-\s+-\s+-\s+-\n")
        self.assertIn("# Avg bus bandwidth    : ", t)
        self.assertTrue(all(len(line) <= 80 for line in t.splitlines()), t)


class SweepTwoRanks(Sweep, unittest.TestCase):
    ranks = 2


class SweepFourRanks(Sweep, unittest.TestCase):
    ranks = 4


class BadTransferInput(InputErrorTest):
    def test_nccl_without_a_gpu(self):
        cfg, out, p = self.run_config(CONFIG.replace('backend = "cpu"', 'backend = "cpu"\ncomm = "nccl"'))
        self.assert_input_error(p, 'comm "nccl" needs the CUDA backend, and this run uses the cpu backend (use comm '
                                '"mpi" or "auto")', out=out)

    def test_an_unknown_comm(self):
        cfg, out, p = self.run_config(CONFIG.replace('backend = "cpu"', 'backend = "cpu"\ncomm = "nccll"'))
        self.assert_input_error(p, cfg + ":4:8:", "[defaults] key 'comm' must be one of auto, mpi, nccl; got "
                                "\"nccll\" (did you mean 'nccl'?)", out=out)

    def test_in_place_for_an_op_without_it(self):
        cfg, out, p = self.run_config(CONFIG + "inplace = true\n")
        self.assert_input_error(p, "op 'alltoall' has no in-place form (inplace applies to allreduce, allgather, "
                                "reduce_scatter, broadcast, reduce); this run uses the CPU backend and moves data "
                                "with MPI", out=out)

    def test_a_16_bit_sum_over_mpi(self):
        cfg, out, p = self.run_config(CONFIG.replace('dtype = ["fp32", "fp64"]', 'dtype = "bf16"'))
        self.assert_input_error(p, "op 'allreduce' with dtype bf16 is not available over MPI", out=out)

    def test_an_unknown_scope_and_op(self):
        cfg, out, p = self.run_config(CONFIG.replace('scope = ["world", "intra-node", "inter-node"]',
                                                     'scope = "internode"'))
        self.assert_input_error(p, cfg + ":14:9:", "key 'scope' must be one of world, intra-node, inter-node, node-pairs; got "
                                "\"internode\" (did you mean 'inter-node'?)", out=out)
        cfg, out, p = self.run_config(CONFIG.replace('"pairs"]', '"pair"]'))
        self.assert_input_error(p, "key 'op' must be one of allreduce,", "got \"pair\" (did you mean 'pairs'?)",
                                out=out)

    def test_check_lists_the_plan_and_the_transport(self):
        p = gpuscale("check", self.write("c.toml", CONFIG))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("comm mpi (comm auto: MPI on the cpu backend)", p.stdout)
        self.assertIn("note: experiment 'sweep': one group takes every turn", p.stdout)
        self.assertNotIn("share_devices", p.stdout)

    def test_check_says_what_happens_to_ranks_that_share_a_gpu(self):
        cfg = self.write("c.toml", CONFIG.replace('backend = "cpu"', 'backend = "cuda"\nshare_devices = true'))
        p = gpuscale("check", cfg)
        self.assertEqual(p.returncode, 0, p.stderr)
        if "this gpuscale was built without NCCL" in p.stdout:
            self.skipTest("this gpuscale was built without NCCL, which the note is about")
        self.assertIn("note: share_devices = true: NCCL refuses two ranks on one GPU (\"Duplicate GPU detected\"), so "
                      "a job whose ranks share a GPU moves data with MPI (comm auto), and says so", p.stdout)
        p = gpuscale("check", cfg, "--set", "defaults.comm=nccl")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("a job whose ranks share a GPU stops before any case runs, naming them", p.stdout)

    def test_check_says_the_memory_it_counts_leaves_out_nccls_own(self):
        cfg = self.write("c.toml", CONFIG.replace('backend = "cpu"', 'backend = "cuda"\ncomm = "nccl"'))
        p = gpuscale("check", cfg)
        if "this gpuscale was built without NCCL" in p.stdout + p.stderr:
            self.skipTest("this gpuscale was built without NCCL, which the note is about")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("note: NCCL's own device memory is not counted above: its buffers for each peer and channel "
                      "(NCCL_BUFFSIZE, 4 MiB by default) and its communicators' state", " ".join(p.stdout.split()))
        p = gpuscale("check", self.write("m.toml", CONFIG))  # MPI on the CPU backend: nothing of NCCL's
        self.assertNotIn("NCCL_BUFFSIZE", p.stdout)


HANG_CONFIG = preamble(warmup=0, reps=5, timeout=4) + """
[[experiment]]
name = "hang"
workload = "collective"
op = "allreduce"
bytes = 4194304
iters = { from = 1, to = 60, step = 1 }
"""


class Hang(ScratchTest):
    """A rank that stops calling (SIGSTOP: a hung peer) or dies (SIGKILL) in the middle of a collective sweep."""

    def start_and_hit_rank_1(self, sig, config=HANG_CONFIG, after="[4/60]", delay=0.0):
        """Runs `config` on 2 ranks and sends `sig` to rank 1 `delay` s after the output shows `after`."""
        cfg = self.write("hang.toml", config)
        out = self.path("hang.h5")
        proc = subprocess.Popen([MPIEXEC, "-n", "2", GPUSCALE, "run", cfg, "-o", out], env=ENV,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        seen = ""
        victims = []
        try:
            seen = read_until(self, proc, after)
            time.sleep(delay)
            victims = rank_pids(out, 1)
            if len(victims) != 1:  # say why: the job may have ended already
                proc.kill()
                rest, err = proc.communicate()
                self.fail(f"rank 1 processes: {victims}; mpirun exit code {proc.returncode}\n{seen}{rest}{err}")
            hit = time.time()
            os.kill(victims[0], sig)
            rest, err = proc.communicate(timeout=90)
            took = time.time() - hit
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            for pid in victims:  # never leave a stopped process behind
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        return proc.returncode, seen + rest, err, took, out

    def assert_partial_file(self, out):
        with h5py.File(out, "r") as f:
            self.assertEqual(f.attrs["complete"], 0)
            cases = sorted(f["cases"].keys())
            self.assertGreaterEqual(len(cases), 3)
            self.assertLess(len(cases), 60)
            for k in cases:
                self.assertEqual(s(f["cases"][k].attrs["status"]), "ok")
                self.assertEqual(f["cases"][k]["device_time"].shape, (2, 5))
        r = gpuscale("report", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("WARNING: the run did not complete", r.stdout)

    def test_a_hung_peer_ends_the_job_within_the_timeout_naming_case_rank_and_host(self):
        rc, stdout, stderr, took, out = self.start_and_hit_rank_1(signal.SIGSTOP)
        self.assertIn(rc, exits_past_a_stopped_peer(3), stdout + stderr)
        self.assertLess(took, 4 + 10, stderr)
        self.assertRegex(stderr, r"gpuscale: error: rank 0 on \S+: case \d+ of 60 \(hang op=allreduce dtype=fp32 "
                                 r"bytes=4194304 inplace=false iters=\d+ scope=world \[parallel\]\) ran past its "
                                 r"timeout of 4 s; aborting the job")
        self.assert_partial_file(out)

    def test_without_a_timeout_a_hung_peer_ends_the_job_by_one_derived_from_warm_up(self):
        # Quick samples (~0.4 ms), ~0.8 s of them per case: a peer stopped during them is noticed within 30 s, the
        # floor of the derived timeout.
        config = (HANG_CONFIG.replace("timeout = 4\n", "").replace("warmup = 0", "warmup = 2")
                  .replace("reps = 5", "reps = 2000").replace("bytes = 4194304", "bytes = 65536")
                  .replace("iters = { from = 1, to = 60, step = 1 }", "iters = { from = 20, to = 40, step = 1 }"))
        # 21 cases of ~0.8 s: still running when the test gets to rank 1, even if it reads the output late.
        rc, stdout, stderr, took, out = self.start_and_hit_rank_1(signal.SIGSTOP, config, after="[1/21]", delay=0.5)
        self.assertIn(rc, exits_past_a_stopped_peer(3), stdout + stderr)
        # 30 s after the last sample (10 x the slowest sample yet is far less on any machine); 60 s in the rare
        # case that rank 1 stopped during a case's setup or warm-up.
        m = re.search(r"gpuscale: error: rank 0 on \S+: case \d+ of 21 \(hang op=allreduce .* iters=\d+ "
                      r".*\[parallel\]\) "
                      r"ran past its timeout of (\S+) s \(timeout = auto: (from the last sample, 10 x the slowest "
                      r"sample yet, at least 30 s|setup and warm-up get 60 s \+ 2 x warmup_s)\); aborting the job",
                      stderr)
        self.assertIsNotNone(m, stderr)
        bound = float(m.group(1))
        self.assertEqual(bound, 30 if m.group(2).startswith("from the last sample") else 60, stderr)
        self.assertLess(took, bound + 10, stderr)
        with h5py.File(out, "r") as f:
            self.assertEqual(f.attrs["complete"], 0)
            self.assertRegex(s(f.attrs["status"]),
                             rf"^timed out: case \d+ of 21 \(hang .*\) ran past its timeout of {m.group(1)} s$")

    def test_a_killed_peer_ends_the_job(self):
        rc, stdout, stderr, took, out = self.start_and_hit_rank_1(signal.SIGKILL)
        self.assertNotEqual(rc, 0, stdout + stderr)
        self.assertLess(took, 4 + 10, stderr)
        self.assert_partial_file(out)


if __name__ == "__main__":
    unittest.main(verbosity=2)
