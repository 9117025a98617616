"""A file still being written reads as a running file, not as damaged: while
a 2-rank run goes on, `gpuscale report` on its file lists the cases finished
so far and says the run is running (its writer holds HDF5's file lock for the
whole run; report reads without it), h5py reads it with locking=False (and
not with its default locking); once the writer is killed outright, the same
file says the run did not complete and that no process holds its lock."""
import json
import os
import signal
import subprocess
import unittest

import h5py

from common import (ENV, GPUSCALE, MPIEXEC, ScratchTest, gpuscale, locked, rank_pids, read_until, s, slow_config,
                    wait_for_ranks)

# Three quick cases, then ones of many seconds: the run is in its fourth case while the test reads the file.
CONFIG = slow_config([1, 2, 3, 1000, 1001, 1002, 1003, 1004], timeout=600)


class Live(ScratchTest):
    def test_a_file_being_written_reads_as_running_and_then_as_left_by_a_dead_writer(self):
        out = self.path("live.h5")
        with subprocess.Popen([MPIEXEC, "-n", "2", GPUSCALE, "run", self.write("live.toml", CONFIG), "-o", out],
                              env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as proc:
            self.read_while_running(proc, out)

    def read_while_running(self, proc, out):
        try:
            seen = read_until(self, proc, "[3/8]")  # its line ends once case 3 is in the file: case 4 runs
            self.assertTrue(locked(out), seen)  # rank 0 holds HDF5's lock on the file it writes
            self.check_live(out)
            # The writer killed outright: the file keeps status "running", and nothing holds its lock.
            for pid in rank_pids(out, 0):
                os.kill(pid, signal.SIGKILL)
            proc.communicate(timeout=60)
            wait_for_ranks(self, out)
            self.check_dead(out)
        finally:
            if proc.poll() is None:
                for pid in rank_pids(out):
                    os.kill(pid, signal.SIGKILL)
                proc.kill()
                proc.wait()
                wait_for_ranks(self, out)

    def check_live(self, out):
        with self.assertRaises(OSError):  # h5py's default: HDF5's file locking, which the writer's lock keeps out
            h5py.File(out, "r")
        with h5py.File(out, "r", locking=False) as f:
            self.assertEqual(f.attrs["complete"], 0)
            self.assertEqual(s(f.attrs["status"]), "running")
            self.assertEqual(sorted(f["cases"].keys()), ["0000", "0001", "0002"])
            self.assertEqual(f["cases/0002/device_time"].shape, (2, 3))
            self.last_update = s(f.attrs["lastUpdate"])
        r = gpuscale("report", out, "--wide")
        self.assertEqual((r.returncode, r.stderr), (0, ""), r.stdout)
        self.assertIn(f"\nrunning: 3 of 8 case(s) finished so far, last update {self.last_update}\n", r.stdout)
        self.assertNotIn("WARNING: the run did not complete", r.stdout)
        j = gpuscale("report", out, "--format", "json")
        self.assertEqual(j.returncode, 0, j.stderr)
        self.assertEqual([row["case"] for row in json.loads(j.stdout)], [1, 2, 3])  # numbered from 1

    def check_dead(self, out):
        r = gpuscale("report", out, "--wide")
        self.assertEqual((r.returncode, r.stderr), (0, ""), r.stdout)
        self.assertIn("\nWARNING: the run did not complete (status: running, but no process holds its write lock: the "
                      "writer died, or runs on another machine); incomplete: 3 of 8 case(s) below, last update "
                      f"{self.last_update}\n", r.stdout)
        self.assertNotIn("\nrunning:", r.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
