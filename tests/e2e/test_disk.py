"""A full disk, on small tmpfs mounts of the test's own: a plan whose records cannot fit is refused before it runs
(exit 2); a disk that fills during the run ends it cleanly (exit 1, one line naming the case and what was free),
with a file that keeps every finished case and says how the run ended; a read-only file system is one line.
Needs root and mount (tmpfs): exits 77 (skipped) without them."""
import os
import re
import subprocess
import sys
import tempfile
import unittest

import h5py

from common import SMALL_CONFIG, InputErrorTest, gpuscale, mpirun, preamble, run_and_hit, s, slow_config

SLOW_CONFIG = slow_config([1, 2, 150, 151, 152, 153, 154, 155])

# 30 small cases: about 210 KB of records on 2 ranks.
MANY_CONFIG = preamble(warmup=1, reps=20) + """
[[experiment]]
name = "many"
workload = "gemm"
size = [8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22]
dtype = "fp64"
ops = 1
"""



def can_mount():
    if os.geteuid() != 0:
        return False
    with tempfile.TemporaryDirectory() as d:
        if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", d], capture_output=True).returncode:
            return False
        subprocess.run(["umount", d], check=True)
    return True


def fill(path):
    """Writes `path` until the disk it is on is full."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT)
    try:
        while os.write(fd, bytes(4096)) > 0:
            pass
    except OSError:
        pass
    finally:
        os.close(fd)


class Disk(InputErrorTest):
    def tearDown(self):
        self.doCleanups()  # the mounts go before their directory
        super().tearDown()

    def mount(self, size, *options):
        """A tmpfs of `size` at a fresh directory, unmounted when the test ends."""
        d = self.path(f"mnt{len(os.listdir(self.dir))}")
        os.mkdir(d)
        opts = ",".join((f"size={size}",) + options)
        subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", d], check=True)
        self.addCleanup(subprocess.run, ["umount", "-l", d])
        return d

    def test_a_disk_too_small_for_the_file_is_one_line_before_anything_runs(self):
        out = os.path.join(self.mount("12k"), "x.h5")
        p = gpuscale("run", self.write("c.toml", SMALL_CONFIG), "-o", out)
        self.assert_input_error(p, f"{out}: no space left on device (", " bytes free)", out=out)
        self.assertEqual(p.stdout, "")

    def test_a_plan_whose_records_cannot_fit_is_refused_before_it_runs(self):
        d = self.mount("200k")
        out = os.path.join(d, "x.h5")
        cfg = self.write("many.toml", MANY_CONFIG)
        p = mpirun(2, "run", cfg, "-o", out)
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertRegex(p.stderr, rf"^gpuscale: error: {d}: not enough space for the results: the plan's records "
                                   r"need about \d+ KiB, \d+ KiB free\n")
        self.assertNotIn("[1/30]", p.stdout)
        self.assertFalse(os.path.exists(out))

    def test_a_disk_that_fills_during_the_run_ends_it_cleanly_with_every_finished_case(self):
        d = self.mount("1m")
        out = os.path.join(d, "x.h5")
        rc, seen = run_and_hit(self, self.write("slow.toml", SLOW_CONFIG), out, "[3/8]",
                               lambda proc, seen: fill(os.path.join(d, "ballast")), timeout=120)  # the disk fills
        self.assertEqual(rc, 1, seen)
        # Its one line (stderr, and the progress line on stdout, may come through mpirun in either order).
        errors = re.findall(r"gpuscale: error: .*", seen)
        self.assertEqual(len(errors), 1, seen)
        with h5py.File(out, "r") as f:
            kept = len(f["cases"])
            status = s(f.attrs["status"])
            self.assertEqual(f.attrs["complete"], 0)
        self.assertGreaterEqual(kept, 2)
        self.assertRegex(errors[0], rf"^gpuscale: error: {re.escape(out)}: no space left on device \(\d+ bytes "
                                    rf"free\) (while writing|for) case {kept + 1} of 8 \(slow .*\).* the file keeps "
                                    rf"the {kept} case\(s\) before it$")
        self.assertRegex(status, rf"^failed: no space left on device \(\d+ bytes free\) (writing|before) case "
                                 rf"{kept + 1} of 8 \(slow ")
        r = gpuscale("report", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(f"incomplete: {kept} of 8 case(s) below", r.stdout.replace("\n  ", " "))

    def test_a_read_only_file_system_is_one_line(self):
        d = self.mount("1m", "ro")
        p = gpuscale("run", self.write("c.toml", SMALL_CONFIG), "-o", os.path.join(d, "x.h5"))
        self.assert_input_error(p, f"cannot create a file in '{d}' (Read-only file system)")


if __name__ == "__main__":
    if not can_mount():
        print("e2e.disk: skipped: needs root and a tmpfs mount", file=sys.stderr)
        sys.exit(77)
    unittest.main(verbosity=2)
