"""distributed_gemm end to end on the CPU backend: one config with
group_size = [1, 2, 4] on 2 ranks gives one file with the strong-scaling
numbers; a group larger than the job is kept as skipped; bad keys refused."""
import json
import os
import unittest

import h5py

from common import InputErrorTest, SharedRunTest, gpuscale, preamble, s

SOURCE = os.environ["GPUSCALE_SOURCE_DIR"]

CONFIG = preamble(warmup=1, reps=3) + """
[[experiment]]
name = "ring"
workload = "distributed_gemm"
size = 96
dtype = "fp64"
group_size = [1, 2, 4]
overlap = [false, true]
"""


class Scaling(SharedRunTest):
    CONFIG = CONFIG

    def test_one_file_holds_every_group_size_and_the_too_large_one_is_skipped(self):
        self.assertEqual(self.proc.returncode, 0, self.proc.stdout + self.proc.stderr)
        self.assertIn("so serial and parallel are the same; each such case runs once, as parallel", self.proc.stdout)
        with h5py.File(self.out, "r") as f:
            by = {(c["parameters"].attrs["group_size"], bool(c["parameters"].attrs["overlap"])): c
                  for c in f["cases"].values()}
            self.assertEqual(sorted(by), [(1, False), (1, True), (2, False), (2, True), (4, False), (4, True)])
            for g in (1, 2):
                for overlap in (False, True):
                    c = by[(g, overlap)]
                    self.assertEqual(s(c.attrs["status"]), "ok")
                    self.assertEqual(list(c["group"][()]), [0, 0] if g == 2 else [0, -1])
                    self.assertEqual(len(c["phases/rank"]), g * 3 * (2 * g - 1))
            c = by[(4, True)]
            self.assertEqual(s(c.attrs["status"]), "skipped")
            self.assertEqual(s(c.attrs["status_reason"]), "group_size = 4 needs at least 4 ranks; this job has 2")

    def test_report_sets_each_group_size_against_one_rank(self):
        rows = json.loads(gpuscale("report", self.out, "--format", "json").stdout)
        by = {(r["params"]["group_size"], bool(r["params"]["overlap"])): r for r in rows}
        for overlap in (False, True):
            one, two = by[(1, overlap)], by[(2, overlap)]
            self.assertNotIn("speedup", one)
            self.assertAlmostEqual(two["speedup"], one["median_s"] / two["median_s"], places=9)
            self.assertAlmostEqual(two["efficiency"], two["speedup"] / 2, places=9)
            self.assertIn("overlap_fraction", two)
            self.assertNotIn("busbw_gbps", two)
        table = gpuscale("report", self.out).stdout
        self.assertIn("speedup and eff against case 1 (group_size = 1)", table)


class BadDistributedGemmInput(InputErrorTest):
    def test_group_size_zero(self):
        cfg = self.write("bad.toml", CONFIG.replace("group_size = [1, 2, 4]", "group_size = 0"))
        p = gpuscale("run", cfg, "-o", self.path("bad.h5"))
        self.assert_input_error(p, cfg + ":12:14:", "experiment 'ring': key 'group_size' must be at least 1, got 0",
                                out=self.path("bad.h5"))

    def test_the_shipped_config_is_valid(self):
        p = gpuscale("check", os.path.join(SOURCE, "configs", "distributed-gemm.toml"))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("6 case(s)", p.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
