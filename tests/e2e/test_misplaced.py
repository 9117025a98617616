"""A block of a result file that is whole but not where it was written reads as damaged: a real run's file (2
ranks, samples large enough to be stored in checksummed chunks) with case 1's and case 3's wall_start and wall_end
chunks swapped checksums whole, yet `gpuscale report` exits 2 with one line naming the case's dataset, where
before schema 1.7 it showed each case the other's samples. Every dataset's `digest` is the one
docs/results-format.md defines, computed independently with numpy (tests/e2e/common.py)."""
import unittest

import h5py
import numpy as np

from common import SharedRunTest, digest, gpuscale, preamble, s

# 1200 reps of 2 ranks: 19 KiB per sample dataset, past the 16 KiB kept in the object header: one chunk each.
CONFIG = preamble(warmup=1, reps=1200, threads=1) + """
[[experiment]]
name = "mm"
workload = "gemm"
size = [16, 24]
dtype = "fp64"
ops = 1
modes = ["serial", "parallel"]
"""
def chunk(f, path):
    """(byte offset, size) of the one chunk of dataset `path`."""
    d = f[path]
    info = d.id.get_chunk_info_by_coord((0,) * d.ndim)
    return info.byte_offset, info.size


class Misplaced(SharedRunTest):
    CONFIG = CONFIG

    def setUp(self):
        super().setUp()
        self.assertEqual(self.proc.returncode, 0, self.proc.stdout + self.proc.stderr)

    def test_chunks_swapped_between_two_cases_are_damage(self):
        path = self.path("swapped.h5")
        with open(self.out, "rb") as f:
            data = bytearray(f.read())
        with h5py.File(self.out, "r") as f:
            want = f["cases/0002/wall_start"][()]
            for name in ("wall_start", "wall_end"):  # both: each case's samples start and end as the other's
                a, b = chunk(f, "cases/0000/" + name), chunk(f, "cases/0002/" + name)
                self.assertIsNotNone(f["cases/0000/" + name].chunks)  # chunked: its values outside its header
                self.assertEqual(a[1], b[1])  # equal-sized: the swap leaves every checksum whole
                first, third = bytes(data[a[0]:a[0] + a[1]]), bytes(data[b[0]:b[0] + b[1]])
                self.assertNotEqual(first, third)
                data[a[0]:a[0] + a[1]], data[b[0]:b[0] + b[1]] = third, first
        with open(path, "wb") as f:
            f.write(data)
        with h5py.File(path, "r") as f:  # as any HDF5 reader sees it: whole, case 1 holding case 3's times
            self.assertTrue(np.array_equal(f["cases/0000/wall_start"][()], want))
        whole = gpuscale("report", self.out)
        self.assertEqual(whole.returncode, 0, whole.stderr)
        p = gpuscale("report", path)
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertEqual(p.stderr.strip(), f"gpuscale: error: {path}: damaged result file: /cases/0000/wall_start "
                         "does not hold what was written for it (data moved, swapped or copied there from "
                         "elsewhere in the file)")
        self.assertEqual(p.stdout, "")

    def test_every_dataset_carries_the_digest_the_format_defines(self):
        seen = []
        with h5py.File(self.out, "r") as f:
            self.assertEqual(s(f.attrs["schemaVersion"]), "1.10")

            def check(name, obj):
                if isinstance(obj, h5py.Dataset):
                    seen.append(name)
                    self.assertEqual(int(obj.attrs["digest"]), digest("/" + name, obj[()]), name)
            f.visititems(check)
        for name in ("cases/0003/device_time", "cases/0000/turn", "ranks/hostname", "plan/label"):
            self.assertIn(name, seen)


if __name__ == "__main__":
    unittest.main()
