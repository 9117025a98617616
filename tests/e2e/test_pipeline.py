"""The pipeline workload (matmuls and copies on two streams) end to end on the
CPU backend: 2 ranks through mpirun, the phases read back with h5py and
turned into exposed transfer time and overlap by the report; bad keys refused."""
import json
import os
import unittest

import h5py
import numpy as np

from common import InputErrorTest, SharedRunTest, gpuscale, preamble, s

SOURCE = os.environ["GPUSCALE_SOURCE_DIR"]

CONFIG = preamble(warmup=1, reps=3) + """
[[experiment]]
name = "pipeline"
workload = "pipeline"
size = 96
dtype = "fp64"
ops = 4
overlap = [false, true]
modes = ["serial", "parallel"]
"""


class Pipeline(SharedRunTest):
    CONFIG = CONFIG

    def test_the_run_succeeds_and_every_case_verifies(self):
        self.assertEqual(self.proc.returncode, 0, self.proc.stdout + self.proc.stderr)
        with h5py.File(self.out, "r") as f:
            self.assertEqual(len(f["cases"]), 4)
            for k, c in f["cases"].items():
                self.assertEqual(s(c.attrs["status"]), "ok", k)
                self.assertEqual(c.attrs["bytes_per_sample"], 4 * 96 * 96 * 8)
                self.assertEqual(c.attrs["flops_per_sample"], 4 * 2 * 96 ** 3)

    def test_phases_lie_inside_their_samples(self):
        with h5py.File(self.out, "r") as f:
            for k, c in f["cases"].items():
                p = c["phases"]
                self.assertEqual([s(n) for n in p["names"][()]], ["compute", "transfer"])
                rank, sample = p["rank"][()], p["sample"][()]
                start, end = p["start"][()], p["end"][()]
                self.assertEqual(len(rank), 2 * 3 * 8, k)  # ranks x reps x (4 matmuls + 4 copies)
                self.assertEqual(s(p["start"].attrs["unit"]), "s")
                ws, we = c["wall_start"][()], c["wall_end"][()]
                self.assertTrue(np.all(end >= start), k)
                self.assertTrue(np.all(start >= ws[rank, sample]), k)
                self.assertTrue(np.all(end <= we[rank, sample]), k)
                if not c["parameters"].attrs["overlap"]:
                    # All copies after all matmuls: no transfer interval overlaps a compute interval.
                    for r in range(2):
                        for i in range(3):
                            mine = (rank == r) & (sample == i)
                            compute_end = end[mine & (p["phase"][()] == 0)].max()
                            transfer_start = start[mine & (p["phase"][()] == 1)].min()
                            self.assertGreaterEqual(transfer_start, compute_end, (k, r, i))

    def test_report_gives_phase_times_exposed_transfer_and_overlap(self):
        rows = json.loads(gpuscale("report", self.out, "--format", "json").stdout)
        for row in rows:
            self.assertEqual(sorted(row["phase_s"]), ["compute", "transfer"])
            self.assertGreater(row["phase_s"]["compute"], 0)
            self.assertGreaterEqual(row["exposed_transfer_s"], 0)
            self.assertTrue(0 <= row["overlap_fraction"] <= 1)
        table = gpuscale("report", self.out, "--wide").stdout
        self.assertRegex(table, r"note: case 1: phases compute \S+ \S+ transfer \S+ \S+; exposed transfer \S+ \S+, "
                                r"overlap \d+%")


class BadPipelineInput(InputErrorTest):
    def run_config(self, text):
        cfg = self.write("bad.toml", text)
        out = self.path("bad.h5")
        return cfg, out, gpuscale("run", cfg, "-o", out)

    def test_overlap_must_be_a_boolean(self):
        cfg, out, p = self.run_config(CONFIG.replace("overlap = [false, true]", 'overlap = "yes"'))
        self.assert_input_error(p, cfg + ":13:11:", "experiment 'pipeline': key 'overlap' must be true or false, "
                                "got string \"yes\"", out=out)

    def test_a_dtype_the_cpu_backend_lacks(self):
        cfg, out, p = self.run_config(CONFIG.replace('dtype = "fp64"', 'dtype = "bf16"'))
        self.assert_input_error(p, "gemm impl 'vendor' with dtype bf16 needs the CUDA backend", out=out)

    def test_the_shipped_config_is_valid(self):
        p = gpuscale("check", os.path.join(SOURCE, "configs", "overlap.toml"))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("4 case(s)", p.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
