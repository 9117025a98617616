"""A rank frozen (SIGSTOP) at any moment of a run ends the job by itself, with a line saying where: at its start
(MPI's start, the run's start), in a case (tests/e2e/test_partial.py), and after its end (MPI's finalize, or a rank
that never exits once it is done, the only rank of its node too). Each edge is bounded by the config's timeout, at
least 30 s (docs/metrics.md, "Hang safety"); the job's launcher then ends the frozen rank."""
import os
import re
import signal
import subprocess
import time
import unittest

from common import ENV, GPUSCALE, MPIEXEC, SMALL_CONFIG, ScratchTest, exits_past_a_stopped_peer, rank_pids


def process_state(pid):
    """The state letter of /proc/PID/stat ('T': stopped), '' once it is gone or a zombie."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rsplit(b")", 1)[1].split()[0].decode()
    except (OSError, IndexError):
        return ""
    return "" if state in ("Z", "X") else state

CONFIG = SMALL_CONFIG.replace("threads = 1", "threads = 1\ntimeout = 5")
# The edge bound with `timeout = 5` is its floor, 30 s; ranks other than 0 fire 5 s later; the launcher takes a few
# seconds more to end the rest. The acceptance bound: within 60 s.
WITHIN_S = 60


class Frozen(ScratchTest):
    def launch(self, ranks=2):
        self.out = self.path("r.h5")
        cfg = self.write("c.toml", CONFIG)
        self.started = time.time()
        return subprocess.Popen([MPIEXEC, "-n", str(ranks), GPUSCALE, "run", cfg, "-o", self.out], env=ENV,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    def end(self, proc, frozen):
        """Waits for the job to end by itself; returns (exit code, output, seconds taken). A job still there after
        WITHIN_S fails the test, and is ended (the frozen rank continued first, so that it can die)."""
        try:
            output, _ = proc.communicate(timeout=WITHIN_S + 30)
        except subprocess.TimeoutExpired:
            proc.kill()
            for pid in rank_pids(self.out, watchers=True):
                os.kill(pid, signal.SIGCONT)
                os.kill(pid, signal.SIGKILL)
            output, _ = proc.communicate()
            self.fail(f"the job with rank pid {frozen} frozen did not end by itself: {output[-3000:]}")
        took = time.time() - self.started
        deadline = time.time() + 10
        while rank_pids(self.out, watchers=True) and time.time() < deadline:  # the launcher ends what is left
            time.sleep(0.05)
        self.assertEqual(rank_pids(self.out, watchers=True), [], "a gpuscale process was left behind")
        self.assertLess(took, WITHIN_S, output)
        return proc.returncode, output

    def test_a_rank_frozen_at_the_start_of_the_run_ends_the_job_with_exit_3(self):
        """Frozen as it starts: the others wait in MPI's start or the run's, each bounded."""
        proc = self.launch()
        victim = []
        while not victim and proc.poll() is None and time.time() - self.started < 20:
            victim = rank_pids(self.out, 1)
        self.assertEqual(len(victim), 1)
        # As soon as it exists (within about 0.3 s of the launch): later, a quick launcher (Hydra) has the run in
        # its first case already, whose own timeout then ends it (tests/e2e/test_partial.py).
        os.kill(victim[0], signal.SIGSTOP)
        rc, output = self.end(proc, victim[0])
        self.assertIn(rc, exits_past_a_stopped_peer(3, before_mpi="(MPI_Init) ran past" in output), output)
        # Where it stood when rank 1 froze: in MPI's start or the run's (both bounded alike).
        self.assertRegex(output, r"gpuscale: error: rank 0 on \S+: (MPI's start \(MPI_Init\)|the start of the run "
                                 r"\([^)]*\)) ran past its timeout of 30 s \(the config's timeout, at least 30 s for "
                                 r"each edge of the run\); aborting the job")

    def freeze_after_done(self, rank, ranks=2):
        """Stops `rank` the moment rank 0 prints its last line, and waits for the job to end. A quick launcher
        (Hydra) can have that rank gone first, in which case nothing was tested and the job is run again (at most 5
        times)."""
        for _ in range(5):
            proc = self.launch(ranks)
            raw = proc.stdout.buffer.raw
            seen = raw.readline()  # the run has started: its ranks are there
            victim = []
            while len(victim) != 1 and time.time() - self.started < 20:
                victim = rank_pids(self.out, rank)
            self.assertEqual(len(victim), 1, seen.decode(errors="replace"))
            while b"\ndone: " not in seen and time.time() - self.started < 60:
                line = raw.readline()
                if not line:
                    break
                seen += line
            self.assertIn(b"\ndone: ", seen, seen.decode(errors="replace"))
            try:
                os.kill(victim[0], signal.SIGSTOP)
            except ProcessLookupError:
                pass
            landed = time.time() + 2  # the stop takes effect once the rank is next scheduled
            while process_state(victim[0]) not in ("T", "") and time.time() < landed:
                time.sleep(0.01)
            if process_state(victim[0]) == "T":
                rc, rest = self.end(proc, victim[0])
                return rc, seen.decode(errors="replace") + rest, victim[0]
            proc.communicate(timeout=60)  # the rank had exited first: the job ends as it should
            os.remove(self.out)
        self.fail("in 5 runs the rank exited before it could be stopped")

    def watcher_line(self, rank, victim, output):
        """The line of the frozen rank's watcher, which killed it (src/app/end_watch.hpp)."""
        return re.search(rf"gpuscale: error: rank {rank} on \S+ \(pid {victim}\): stopped \(SIGSTOP\?\) for 30 s at "
                         r"the end of the run, where its own watchdog cannot act: its watcher sent it SIGKILL; ending "
                         r"the job", output)

    def test_a_rank_frozen_right_after_done_ends_the_job(self):
        for rank, other in ((1, 0), (0, 1)):
            rc, output, victim = self.freeze_after_done(rank)
            # The stopped rank's 128 + SIGKILL (its watcher killed it); 3 where the other rank, waiting for it in
            # MPI's finalize, reached its own bound on the end first (they are both 30 s).
            self.assertIn(rc, exits_past_a_stopped_peer(3) + (137,), output)
            finalize = re.search(rf"gpuscale: error: rank {other} on \S+: the end of the run \((MPI_Finalize|common "
                                 r"clock)\) ran past its timeout of 30 s", output)
            self.assertTrue(self.watcher_line(rank, victim, output) or finalize, output)
            # The results were whole before the freeze, and stay so.
            r = subprocess.run([GPUSCALE, "report", self.out], env=ENV, capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr)
            os.remove(self.out)

    def test_the_only_rank_of_its_node_frozen_right_after_done_ends_the_job(self):
        """No other rank sees it: its own watcher does."""
        rc, output, victim = self.freeze_after_done(0, ranks=1)
        self.assertIn(rc, (137, 9), output)
        self.assertTrue(self.watcher_line(0, victim, output), output)


if __name__ == "__main__":
    unittest.main(verbosity=2)
