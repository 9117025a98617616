"""Where a run writes: a path that cannot take a result file is one line and exit code 2 before any rank starts
work; --force never empties a file another process has open: it writes beside it and replaces it when the run
ends, and refuses a file another run is writing."""
import os
import signal
import unittest

import h5py

from common import SMALL_CONFIG, InputErrorTest, gpuscale, mpirun, run_and_hit, s, slow_config

SLOW_CONFIG = slow_config([1, 2, 200, 201, 202])



class OutputPaths(InputErrorTest):
    def refused(self, out, *fragments, force=False):
        """`gpuscale run` to `out` is one line of error, exit 2, and nothing ran (no plan, no rate measured)."""
        cfg = self.write("c.toml", SMALL_CONFIG)
        p = gpuscale("run", cfg, "-o", out, *(["--force"] if force else []))
        self.assert_input_error(p, *fragments)
        self.assertEqual(p.stdout, "")  # before the plan was printed or the rates measured
        return p

    def test_a_path_that_cannot_take_a_result_file_is_one_line_before_anything_runs(self):
        os.mkdir(self.path("dir.h5"))
        self.refused(self.path("dir.h5"), ": is a directory; give a file name with -o")
        os.mkfifo(self.path("fifo.h5"))
        self.refused(self.path("fifo.h5"), ": a FIFO, not a file; give a file name with -o", force=True)
        self.refused("/dev/full", "/dev/full: a character device, not a file; give a file name with -o", force=True)
        os.symlink(self.path("gone/x.h5"), self.path("dangling.h5"))
        self.refused(self.path("dangling.h5"), f": a symbolic link to '{self.path('gone/x.h5')}', which does not "
                                               "exist; give a file name with -o")
        self.refused(self.path("missing/x.h5"), f": directory '{self.path('missing')}' does not exist")
        self.refused(self.path("n" * 300 + ".h5"), ": the name is too long for its file system (at most 255 bytes)")
        self.assertEqual(sorted(os.listdir(self.dir)), ["c.toml", "dangling.h5", "dir.h5", "fifo.h5"])

    def test_an_unwritable_directory_is_one_line(self):
        if os.geteuid() == 0:
            self.skipTest("root writes anywhere; test_disk.py uses a read-only mount")
        os.mkdir(self.path("ro"))
        os.chmod(self.path("ro"), 0o555)
        self.refused(self.path("ro/x.h5"), f"cannot create a file in '{self.path('ro')}' (Permission denied)")


class Force(InputErrorTest):
    def test_force_replaces_a_file_only_when_the_run_ends_and_a_reader_keeps_the_old_one(self):
        out = self.path("r.h5")
        cfg = self.write("c.toml", SMALL_CONFIG)
        self.assertEqual(mpirun(2, "run", cfg, "-o", out, "--set", "size=32").returncode, 0)
        with h5py.File(out, "r") as reader:  # held open for reading while the new run replaces the file
            p = mpirun(2, "run", cfg, "-o", out, "--force")
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            self.assertIn(f"writing {out}.partial-", p.stdout)
            self.assertIn(f"(replaces {out} when the run ends: --force)", p.stdout)
            self.assertIn(f"done: {out} (gpuscale report {out})", p.stdout)
            self.assertEqual(s(reader["cases/0000/parameters"].attrs["size"]), 32)  # the old file, whole
        with h5py.File(out, "r") as f:
            self.assertEqual(f["cases/0000/parameters"].attrs["size"], 64)
            self.assertEqual(f.attrs["complete"], 1)
        self.assertEqual(sorted(os.listdir(self.dir)), ["c.toml", "r.h5"])

    def test_force_on_the_file_of_a_run_still_writing_is_refused_and_the_run_finishes_whole(self):
        out = self.path("busy.h5")
        cfg = self.write("slow.toml", SLOW_CONFIG)

        def force_while_it_writes(first, seen):
            p = gpuscale("run", cfg, "-o", out, "--force")
            self.assert_input_error(p, f"{out}: another process is writing it (a gpuscale run still going?); wait "
                                       "for it to end, or choose another -o")
            first.send_signal(signal.SIGTERM)

        run_and_hit(self, cfg, out, "[2/5]", force_while_it_writes)
        with h5py.File(out, "r") as f:  # the first run's file, as it ended
            self.assertRegex(s(f.attrs["status"]), r"^aborted: SIGTERM (during|after) case [2-5] of 5 \(")
            self.assertGreaterEqual(len(f["cases"]), 1)
        self.assertEqual(gpuscale("report", out).returncode, 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
