"""A run that ends early leaves a readable file with every finished case,
marked incomplete and saying how it ended: a rank killed mid-run, the job
ended by SIGTERM (as mpirun and scancel do), a case past its timeout (set, or
derived from the case)."""
import re
import os
import signal
import subprocess
import unittest

import h5py

from common import ENV, GPUSCALE, MPIEXEC, ScratchTest, gpuscale, rank_pids, read_until, wait_for_ranks

SLOW_CONFIG = """
[defaults]
backend = "cpu"
warmup = 0
reps = 3
timeout = 120

[[experiment]]
name = "slow"
workload = "gemm"
size = 512
# Two quick cases, then slow ones (seconds each), so rank 1 is killed mid-run.
ops = [1, 2, 200, 201, 202, 203, 204, 205]
modes = ["parallel"]
"""


def s(x):
    return x.decode() if isinstance(x, bytes) else x


class Partial(ScratchTest):
    def run_and_hit(self, out, marker, hit):
        """Runs SLOW_CONFIG on 2 ranks, calls hit(proc, output so far) once the output shows `marker`, waits for the end;
        returns (exit code, output). The run is killed if the test fails first."""
        cfg = self.write("slow.toml", SLOW_CONFIG)
        proc = subprocess.Popen([MPIEXEC, "-n", "2", GPUSCALE, "run", cfg, "-o", out], env=ENV,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            seen = read_until(self, proc, marker)
            hit(proc, seen)
            rest, _ = proc.communicate(timeout=60)
            wait_for_ranks(self, out)
            return proc.returncode, seen + rest
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()

    def test_a_rank_killed_mid_run_leaves_a_readable_partial_file(self):
        out = self.path("partial.h5")

        def kill_rank_1(proc, seen):
            victims = rank_pids(out, 1)
            self.assertEqual(len(victims), 1, seen)
            os.kill(victims[0], signal.SIGKILL)

        rc, seen = self.run_and_hit(out, "[3/8]", kill_rank_1)
        self.assertNotEqual(rc, 0, seen)
        with h5py.File(out, "r") as f:
            self.assertEqual(f.attrs["complete"], 0)
            status = s(f.attrs["status"])
            # mpirun ends rank 0 with SIGTERM, unless MPI reported the dead peer to it first.
            self.assertRegex(status, r"^(aborted: SIGTERM during case [2-7] \(slow size=512 .*\[parallel\]\)|failed: .+)$")
            self.assertEqual(f.attrs["casesPlanned"], 8)
            last_update = s(f.attrs["lastUpdate"])  # the time of the last case written
            self.assertRegex(last_update, r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d{4}$")
            self.assertGreaterEqual(last_update[:19], s(f.attrs["date"])[:19])
            cases = sorted(f["cases"].keys())
            self.assertGreaterEqual(len(cases), 2)
            self.assertLess(len(cases), 8)
            for k in cases:
                self.assertEqual(f["cases"][k]["device_time"].shape, (2, 3))
        r = gpuscale("report", out, "--wide")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(f"WARNING: the run did not complete (status: {status}); incomplete: {len(cases)} of 8 case(s) "
                      f"below, last update {last_update}", r.stdout)

    def test_sigterm_marks_the_file_aborted_in_the_case_it_hit(self):
        out = self.path("term.h5")
        # What a user's Ctrl-C or a launcher's stop does to mpirun.
        rc, seen = self.run_and_hit(out, "[4/8]", lambda proc, seen: proc.send_signal(signal.SIGTERM))
        self.assertNotEqual(rc, 0, seen)
        with h5py.File(out, "r") as f:
            self.assertEqual(f.attrs["complete"], 0)
            status = s(f.attrs["status"])
            self.assertRegex(status, r"^aborted: SIGTERM during case [3-7] \(slow size=512 dtype=fp64 impl=vendor "
                                     r"ops=\d+ \[parallel\]\)$")
            index = int(re.search(r"case (\d+)", status).group(1))
            self.assertEqual(sorted(int(k) for k in f["cases"].keys()), list(range(index)))
        r = gpuscale("report", out, "--wide")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(f"WARNING: the run did not complete (status: {status})", r.stdout)

    def test_a_case_past_its_timeout_aborts_the_job_with_a_message(self):
        cfg = self.write("t.toml", SLOW_CONFIG.replace("timeout = 120", "timeout = 0.5")
                         .replace("size = 512", "size = 1024")
                         .replace("ops = [1, 2, 200, 201, 202, 203, 204, 205]", "ops = 100"))
        out = self.path("t.h5")
        p = subprocess.run([MPIEXEC, "-n", "2", GPUSCALE, "run", cfg, "-o", out], env=ENV, capture_output=True,
                           text=True, timeout=120)
        self.assertEqual(p.returncode, 3, p.stdout + p.stderr)
        # Rank 0 fires first (the others 5 s later), so the file says why the run ended.
        self.assertRegex(p.stderr, r"gpuscale: error: rank 0 on \S+: case slow size=1024 dtype=fp64 impl=vendor ops=100 "
                                   r"\[parallel\] ran past its timeout of 0.5 s; aborting the job")
        with h5py.File(out, "r") as f:
            self.assertEqual(f.attrs["complete"], 0)
            self.assertEqual(s(f.attrs["status"]), "timed out: case slow size=1024 dtype=fp64 impl=vendor ops=100 "
                                                   "[parallel] ran past its timeout of 0.5 s")
            self.assertEqual(len(f["cases"]), 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
