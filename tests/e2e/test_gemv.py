"""The gemv workload (y = A x) end to end on the CPU backend: 2 ranks through mpirun, serial and parallel next
to elementwise passes, read back with h5py; the report gives GB/s, the model fits gemv apart from the passes,
and bad keys are refused."""
import json
import unittest

import h5py
import numpy as np

from common import InputErrorTest, SharedRunTest, gpuscale, preamble, s

CONFIG = preamble(warmup=1, reps=3) + """
[[experiment]]
name = "decode"
workload = "gemv"
m = [300, 1200]
n = 517  # not a multiple of any vector width
dtype = ["fp32", "fp64"]
ops = 3
modes = ["serial", "parallel"]

[[experiment]]
name = "passes"
workload = "elementwise"
elements = [100000, 400000]
ops = 3
modes = ["parallel"]
"""

BAD = preamble() + """
[[experiment]]
name = "bad"
workload = "gemv"
m = 100
n = 100
dtype = "fp32"
"""


class Gemv(SharedRunTest):
    CONFIG = CONFIG

    def test_the_run_succeeds(self):
        self.assertEqual(self.proc.returncode, 0, self.proc.stdout + self.proc.stderr)

    def test_every_case_verifies_and_counts_a_x_and_y_once_a_product(self):
        with h5py.File(self.out, "r") as f:
            cases = [f["cases"][k] for k in sorted(f["cases"]) if s(f["cases"][k].attrs["workload"]) == "gemv"]
            self.assertEqual(len(cases), 2 * 2 * 2)
            for c in cases:
                p = c["parameters"].attrs
                size = {"fp32": 4, "fp64": 8}[s(p["dtype"])]
                m, n = int(p["m"]), int(p["n"])
                self.assertEqual(s(c.attrs["status"]), "ok", dict(p))
                self.assertTrue(np.all(c["verify_error"][()] <= c.attrs["verify_tolerance"]), dict(p))
                self.assertGreater(c.attrs["verify_tolerance"], 0)
                self.assertEqual(c.attrs["flops_per_sample"], 0)
                self.assertEqual(c.attrs["bytes_per_sample"], 3 * (m * n + n + m) * size)

    def test_the_report_gives_bandwidth(self):
        rows = json.loads(gpuscale("report", self.out, "--format", "json").stdout)
        gemv = [r for r in rows if r["workload"] == "gemv"]
        self.assertEqual(len(gemv), 8)
        self.assertTrue(all(r["gbps"] > 0 and "gflops" not in r for r in gemv), gemv)

    def test_the_model_fits_gemv_apart_from_the_passes(self):
        model = self.shared.path("model.json")
        p = gpuscale("model", self.out, "-o", model, "--include-noisy")  # noisy or not: a loaded machine
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("copies gemv (cpu)", p.stdout)
        self.assertIn("copies pass (cpu)", p.stdout)
        with open(model) as f:
            fits = {c["kind"]: c for c in json.load(f)["copies"]}
        self.assertEqual(sorted(fits), ["gemv", "pass"])
        self.assertEqual(fits["gemv"]["fit_error"]["cases"], 8)
        self.assertEqual(fits["pass"]["fit_error"]["cases"], 2)


class BadKeys(InputErrorTest):
    def test_bf16_on_the_cpu_backend(self):
        cfg, out, p = self.run_config(BAD.replace('dtype = "fp32"', 'dtype = "bf16"'))
        self.assert_input_error(p, "case 1", "gemv in bf16 needs the CUDA backend (cuBLAS); the CPU backend has fp32 "
                                "and fp64; this run uses the CPU backend", out=out)

    def test_a_dtype_it_does_not_have(self):
        cfg, out, p = self.run_config(BAD.replace('dtype = "fp32"', 'dtype = "fp16"'))
        self.assert_input_error(p, "key 'dtype' must be one of fp32, fp64, bf16; got \"fp16\"", out=out)

    def test_a_dimension_past_an_int(self):
        cfg, out, p = self.run_config(BAD.replace("m = 100", "m = 2000000"))
        self.assert_input_error(p, "key 'm' must be at most 1048576, got 2000000", out=out)


if __name__ == "__main__":
    unittest.main(verbosity=2)
