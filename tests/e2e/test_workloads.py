"""The copy and async workloads end to end on the CPU backend through mpirun,
read back from the file with h5py."""
import json
import unittest

import h5py
import numpy as np

from common import SharedRunTest, gpuscale, preamble, s

CONFIG = preamble(warmup=1, reps=5) + """
[[experiment]]
name = "copies"
workload = "copy"
direction = ["h2d", "d2h", "d2d"]
bytes = { from = 1024, to = 1048576, factor = 32 }
ops = 2
modes = ["parallel"]

[[experiment]]
name = "probe"
workload = "async"
size = 128
ops = 200
sync = ["end", "each"]
log_norm = ["none", "host", "device"]
modes = ["parallel"]
"""



class Workloads(SharedRunTest):
    CONFIG = CONFIG

    def cases(self, f, workload):
        return [f["cases"][k] for k in sorted(f["cases"]) if s(f["cases"][k].attrs["workload"]) == workload]

    def test_the_run_succeeds(self):
        self.assertEqual(self.proc.returncode, 0, self.proc.stdout + self.proc.stderr)

    def test_copies_verify_and_say_they_measure_memcpy(self):
        with h5py.File(self.out, "r") as f:
            cases = self.cases(f, "copy")
            self.assertEqual(len(cases), 3 * 3)
            sizes = sorted({int(c["parameters"].attrs["bytes"]) for c in cases})
            self.assertEqual(sizes, [1024, 32768, 1048576])
            for c in cases:
                self.assertEqual(s(c.attrs["status"]), "ok")
                self.assertTrue(np.all(c["verify_error"][()] == 0))
                self.assertEqual(c.attrs["flops_per_sample"], 0)
                self.assertEqual(c.attrs["bytes_per_sample"], 2 * c["parameters"].attrs["bytes"])
                self.assertIn("memcpy", s(c.attrs["note"]))
        rows = json.loads(gpuscale("report", self.out, "--format", "json").stdout)
        copies = [r for r in rows if r["workload"] == "copy"]
        self.assertTrue(all(r["gbps"] > 0 and "gflops" not in r for r in copies))

    def test_enqueue_returns_well_before_the_work_completes_when_syncing_once(self):
        with h5py.File(self.out, "r") as f:
            for c in self.cases(f, "async"):
                p = c["parameters"].attrs
                self.assertEqual(s(c.attrs["status"]), "ok", dict(p))
                enqueue = np.median(c["enqueue_time"][()])
                completed = np.median(c["wall_end"][()] - c["wall_start"][()])
                label = f"sync={s(p['sync'])} log_norm={s(p['log_norm'])}: enqueue {enqueue}, completed {completed}"
                if s(p["sync"]) == "end" and s(p["log_norm"]) in ("none", "device"):
                    # 200 matmuls of 128^3 queue up on the worker thread.
                    self.assertLess(enqueue, 0.25 * completed, label)
                else:
                    # The host waited for every op: enqueuing took as long as the work.
                    self.assertGreater(enqueue, 0.9 * completed, label)


if __name__ == "__main__":
    unittest.main(verbosity=2)
