"""The dp_step workload (a data-parallel training step: backward matmuls on
the compute lane, bucketed gradient allreduces on the comm lane) end to end on
the CPU backend: 2 ranks through mpirun, the file read back with h5py, the
report's exposed transfer and overlap; bad keys refused."""
import json
import os
import unittest

import h5py
import numpy as np

from common import InputErrorTest, ScratchTest, SharedRunTest, gpuscale, mpirun, preamble, s

SOURCE = os.environ["GPUSCALE_SOURCE_DIR"]

# 4 layers of 64 x 64 fp32: 16 KiB of gradient each, so buckets of 32 KiB
# hold 2 layers: 2 allreduces per step.
CONFIG = preamble(warmup=1, reps=3) + """
[[experiment]]
name = "dp"
workload = "dp_step"
hidden = 64
batch = 16
layers = 4
dtype = "fp32"
bucket_bytes = 32768
overlap = [false, true]
scope = ["world", "intra-node"]
modes = ["serial", "parallel"]
"""


class DpStep(SharedRunTest):
    CONFIG = CONFIG

    def test_the_run_succeeds_and_every_case_verifies(self):
        self.assertEqual(self.proc.returncode, 0, self.proc.stdout + self.proc.stderr)
        # Scope world is one group: its serial twins are dropped, and the run says so.
        self.assertIn("note: experiment 'dp': one group takes every turn", self.proc.stdout)
        with h5py.File(self.out, "r") as f:
            cases = list(f["cases"].values())
            self.assertEqual([(s(c.attrs["mode"]), s(c["parameters"].attrs["scope"])) for c in cases],
                             [("parallel", "world"), ("serial", "intra-node"), ("parallel", "intra-node")] * 2)
            for c in cases:
                self.assertEqual(s(c.attrs["status"]), "ok")
                self.assertEqual(list(c["wrong_elements"][()]), [0, 0])
                self.assertEqual(c.attrs["flops_per_sample"], 3 * 4 * 2 * 16 * 64 * 64)
                self.assertEqual(c.attrs["bytes_per_sample"], 4 * 64 * 64 * 4)

    def test_phases_lie_inside_their_samples_and_do_not_overlap_without_overlap(self):
        with h5py.File(self.out, "r") as f:
            for k, c in f["cases"].items():
                p = c["phases"]
                self.assertEqual([s(n) for n in p["names"][()]], ["compute", "transfer"])
                rank, sample, phase = p["rank"][()], p["sample"][()], p["phase"][()]
                start, end = p["start"][()], p["end"][()]
                # ranks x reps x (a forward and a backward interval per layer + 2 buckets)
                self.assertEqual(len(rank), 2 * 3 * (2 * 4 + 2), k)
                ws, we = c["wall_start"][()], c["wall_end"][()]
                self.assertTrue(np.all(end >= start), k)
                self.assertTrue(np.all(start >= ws[rank, sample]), k)
                self.assertTrue(np.all(end <= we[rank, sample]), k)
                if not c["parameters"].attrs["overlap"]:
                    # Every allreduce after the whole backward.
                    for r in range(2):
                        for i in range(3):
                            mine = (rank == r) & (sample == i)
                            compute_end = end[mine & (phase == 0)].max()
                            transfer_start = start[mine & (phase == 1)].min()
                            self.assertGreaterEqual(transfer_start, compute_end, (k, r, i))

    def test_report_gives_exposed_transfer_and_overlap(self):
        rows = json.loads(gpuscale("report", self.out, "--format", "json").stdout)
        self.assertEqual(len(rows), 6)
        for row in rows:
            self.assertEqual(sorted(row["phase_s"]), ["compute", "transfer"])
            self.assertGreater(row["phase_s"]["compute"], 0)
            self.assertGreater(row["phase_s"]["transfer"], 0)
            self.assertGreaterEqual(row["exposed_transfer_s"], 0)
            self.assertTrue(0 <= row["overlap_fraction"] <= 1)
            self.assertEqual(row["wrong_elements"], 0)
        table = gpuscale("report", self.out, "--wide").stdout
        self.assertRegex(table, r"note: case 1: phases compute \S+ \S+ transfer \S+ \S+; exposed transfer \S+ \S+, "
                                r"overlap \d+%")


class DpStepTable(ScratchTest):
    def test_the_default_table_shows_the_steps_median_and_rate_beside_skipped_scopes(self):
        # Skipped inter-node cases (one node here) have a scope, as transfers do; the step is no one operation, so
        # its block shows the median and GF/s, not empty op time and bandwidth columns.
        cfg = self.write("dp.toml", CONFIG.replace('scope = ["world", "intra-node"]', 'scope = ["intra-node", '
                                                                                         '"inter-node"]'))
        out = self.path("dp.h5")
        p = mpirun(2, "run", cfg, "-o", out)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        table = gpuscale("report", out).stdout
        head = next(line for line in table.splitlines() if line.lstrip().startswith("#"))
        self.assertRegex(head, r"\bmedian +GF/s/rank\b")
        self.assertNotIn("op time", table)
        self.assertNotIn("busbw", table)
        self.assertIn("skipped", table)
        self.assertRegex(table, r"\n *1 +false +intra-node +serial +[0-9.]+ [mu]?s +[0-9.]+ ")


class BadDpStepInput(InputErrorTest):
    def test_overlap_must_be_a_boolean(self):
        cfg, out, p = self.run_config(CONFIG.replace("overlap = [false, true]", 'overlap = "yes"'))
        self.assert_input_error(p, cfg + ":15:11:", "experiment 'dp': key 'overlap' must be true or false, "
                                "got string \"yes\"", out=out)

    def test_a_bucket_holds_at_least_one_byte(self):
        cfg, out, p = self.run_config(CONFIG.replace("bucket_bytes = 32768", "bucket_bytes = 0"))
        self.assert_input_error(p, cfg + ":14:16:", "key 'bucket_bytes' must be at least 1, got 0", out=out)

    def test_fp16_is_not_a_dtype_of_the_step(self):
        # Over MPI (no 16-bit float sum) and on the CPU alike: fp32 and fp64 only.
        cfg, out, p = self.run_config(CONFIG.replace('dtype = "fp32"', 'dtype = "fp16"'))
        self.assert_input_error(p, cfg + ":13:9:", "key 'dtype' must be one of fp32, fp64", out=out)

    def test_the_shipped_config_is_valid(self):
        p = gpuscale("check", os.path.join(SOURCE, "configs", "training-step.toml"))
        self.assertEqual(p.returncode, 0, p.stderr)
        # 2 bucket sizes x overlap on/off x (world once; intra-node and inter-node serial and parallel)
        self.assertIn("20 case(s)", p.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
