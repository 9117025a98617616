"""Each timed sample's wait for a core (`core_wait`, schema 1.9 on) through the real binary: on the CPU backend every
sample of every rank has one, in seconds, known (finite, not negative), beside its device time; the Python loader
reads it as `core_wait_s`; a file before 1.9 has none (NaN in the loader, the report reads it as before); a negative
wait or a 1.9 file without the dataset is damage, said alike by `gpuscale report` and the loader."""
import os
import shutil
import sys
import unittest

import h5py
import numpy as np

from common import SharedRunTest, gpuscale, preamble, rewrite_digest, s

TOOLS = os.path.join(os.environ["GPUSCALE_SOURCE_DIR"], "tools")
sys.path.insert(0, TOOLS)
import gpuscale_data  # noqa: E402

# A device-local case in both modes, a transfer, one with lanes (pipeline: the events on the compute lane), and one
# skipped (inter-node on one node: no samples).
CONFIG = preamble(warmup=1, reps=4, threads=1) + """
[[experiment]]
name = "mm"
workload = "gemm"
size = 96
ops = 8
modes = ["serial", "parallel"]

[[experiment]]
name = "ar"
workload = "collective"
op = "allreduce"
bytes = 65536
iters = 20
scope = ["world", "inter-node"]
modes = ["parallel"]

[[experiment]]
name = "pipe"
workload = "pipeline"
size = 96
ops = 4
overlap = true
modes = ["parallel"]
"""


class CoreWait(SharedRunTest):
    CONFIG = CONFIG

    def copy(self, name):
        path = self.shared.path(name)
        shutil.copy(self.out, path)
        return path

    def test_every_timed_sample_has_its_wait_in_seconds_known_on_the_cpu_backend(self):
        self.assertEqual(self.proc.returncode, 0, self.proc.stdout + self.proc.stderr)
        ran = 0
        with h5py.File(self.out, "r") as f:
            self.assertEqual(s(f.attrs["schemaVersion"]), "1.10")
            for k, c in f["cases"].items():
                if s(c.attrs["status"]) == "skipped":
                    self.assertNotIn("core_wait", c, k)
                    continue
                ran += 1
                wait = c["core_wait"]
                self.assertEqual(wait.shape, c["device_time"].shape, k)
                self.assertEqual(wait.shape, (2, 4), k)
                self.assertEqual(s(wait.attrs["unit"]), "s", k)
                self.assertIn("waited for a core", s(wait.attrs["description"]), k)
                self.assertTrue(np.all(np.isfinite(wait[()])), k)
                self.assertTrue(np.all(wait[()] >= 0), k)
        self.assertEqual(ran, 4)

    def test_the_loader_reads_it_beside_the_device_time(self):
        r = gpuscale_data.load(self.out)
        self.assertIn("core_wait_s", r.samples.columns)
        with h5py.File(self.out, "r") as f:
            for number, rows in r.samples.groupby("case"):
                c = f["cases"][r.cases.loc[number, "hdf5_path"].split("/")[-1]]
                np.testing.assert_array_equal(rows["core_wait_s"].to_numpy(), c["core_wait"][()].reshape(-1))
                np.testing.assert_array_equal(rows["device_time_s"].to_numpy(), c["device_time"][()].reshape(-1))

    def test_a_file_before_1_9_has_none_and_reads_as_before(self):
        old = self.copy("old.h5")
        with h5py.File(old, "r+") as f:
            f.attrs["schemaVersion"] = np.bytes_("1.8")
            for c in f["cases"].values():
                if "core_wait" in c:
                    del c["core_wait"]
        proc = gpuscale("report", old)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        samples = gpuscale_data.load(old).samples
        self.assertEqual(len(samples), 4 * 2 * 4)
        self.assertTrue(samples["core_wait_s"].isna().all())

    def assert_damaged(self, path, why):
        proc = gpuscale("report", path)
        self.assertEqual(proc.returncode, 2, proc.stdout + proc.stderr)
        self.assertEqual(proc.stderr, f"gpuscale: error: {path}: damaged result file: {why}\n")
        with self.assertRaises(gpuscale_data.ResultError) as e:
            gpuscale_data.load(path)
        self.assertEqual(str(e.exception), f"{path}: damaged result file: {why}")

    def test_a_negative_wait_is_damage(self):
        bad = self.copy("negative.h5")
        with h5py.File(bad, "r+") as f:
            wait = f["cases/0000/core_wait"]
            values = wait[()]
            values[0, 1] = -1e-3
            wait[...] = values
            rewrite_digest(wait)
        self.assert_damaged(bad, "/cases/0000/core_wait[1] is negative")

    def test_a_1_9_file_without_it_is_damage(self):
        bad = self.copy("missing.h5")
        with h5py.File(bad, "r+") as f:
            del f["cases/0000/core_wait"]
        self.assert_damaged(bad, "/cases/0000/core_wait missing")


if __name__ == "__main__":
    unittest.main()
