"""The elementwise workload (r += a*b) end to end on the CPU backend: 2 ranks
through mpirun, serial and parallel, read back with h5py; bad keys are refused."""
import json
import unittest

import h5py
import numpy as np

from common import InputErrorTest, SharedRunTest, gpuscale, preamble, s

CONFIG = preamble(warmup=1, reps=3) + """
[[experiment]]
name = "triad"
workload = "elementwise"
elements = 2100007  # above 2 x 2^20: threads = 2 splits each pass
dtype = ["fp32", "fp64"]
ops = 4
threads = [1, 2]
modes = ["serial", "parallel"]
"""

BAD = preamble() + """
[[experiment]]
name = "bad"
workload = "elementwise"
elements = 1000
dtype = "fp32"
"""



class Elementwise(SharedRunTest):
    CONFIG = CONFIG

    def test_the_run_succeeds(self):
        self.assertEqual(self.proc.returncode, 0, self.proc.stdout + self.proc.stderr)

    def test_every_case_verifies_exactly_and_counts_four_accesses_per_element(self):
        with h5py.File(self.out, "r") as f:
            cases = [f["cases"][k] for k in sorted(f["cases"])]
            self.assertEqual(len(cases), 2 * 2 * 2)
            self.assertEqual(sorted({s(c.attrs["mode"]) for c in cases}), ["parallel", "serial"])
            for c in cases:
                p = c["parameters"].attrs
                size = {"fp32": 4, "fp64": 8}[s(p["dtype"])]
                self.assertEqual(s(c.attrs["status"]), "ok", dict(p))
                self.assertEqual(c.attrs["ranks"], 2)
                self.assertTrue(np.all(c["verify_error"][()] == 0), dict(p))
                self.assertEqual(c.attrs["verify_tolerance"], 0)
                self.assertEqual(c.attrs["flops_per_sample"], 0)
                self.assertEqual(c.attrs["bytes_per_sample"], 4 * 2100007 * 4 * size)

    def test_the_report_gives_bandwidth(self):
        rows = json.loads(gpuscale("report", self.out, "--format", "json").stdout)
        self.assertEqual(len(rows), 8)
        self.assertTrue(all(r["gbps"] > 0 and "gflops" not in r for r in rows), rows)
        self.assertTrue(all(r["speedup"] > 0 for r in rows if r["mode"] == "parallel"), rows)


class BadKeys(InputErrorTest):
    def test_a_dtype_it_does_not_have(self):
        cfg, out, p = self.run_config(BAD.replace('dtype = "fp32"', 'dtype = "fp16"'))
        self.assert_input_error(p, "key 'dtype' must be one of fp32, fp64; got \"fp16\"", out=out)

    def test_zero_elements(self):
        cfg, out, p = self.run_config(BAD.replace("elements = 1000", "elements = 0"))
        self.assert_input_error(p, cfg + ":8:12:", "key 'elements' must be at least 1, got 0", out=out)

    def test_more_elements_than_any_memory(self):
        cfg, out, p = self.run_config(BAD.replace("elements = 1000", "elements = 2000000000000"))
        self.assert_input_error(p, cfg + ":8:12: experiment 'bad': key 'elements' must be at most 1099511627776, got "
                                "2000000000000", out=out)


if __name__ == "__main__":
    unittest.main(verbosity=2)
