"""Where gpuscale writes, by one rule for every file (run's result, model's JSON, the trace): a path that cannot
take the file is one line and exit code 2 before any work starts; an existing file needs --force and is never one of
the command's inputs nor a file another process writes; --force never empties a file another process has open: it
writes beside it and replaces it once whole, and two writers of one file cannot both succeed; a file half written
is removed however the command ends; a failed write to standard output exits 1."""
import hashlib
import os
import shutil
import signal
import subprocess
import time
import unittest

import h5py

from common import (ENV, GPUSCALE, MPIEXEC as MPIEXEC_, SMALL_CONFIG, InputErrorTest, SharedRunTest, as_another_run,
                    gpuscale, mpirun, read_until, run_and_hit, s, slow_config)

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
        self.refused(self.path("c.toml"), ": is one of this command's input files; choose another -o", force=True)
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


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def listing(directory):
    return sorted(os.listdir(directory))


class OneRuleForEveryOutput(SharedRunTest):
    """model -o and report --format trace -o under the rule run's -o follows."""
    CONFIG = SMALL_CONFIG

    def setUp(self):
        super().setUp()
        self.a = self.path("a.h5")
        with open(self.out, "rb") as src, open(self.a, "wb") as dst:
            dst.write(src.read())
        self.before = digest(self.a)

    def refused(self, proc, message):
        self.assertEqual(proc.returncode, 2, proc.stdout + proc.stderr)
        self.assertEqual(proc.stdout, "")
        self.assertEqual(proc.stderr, f"gpuscale: error: {message}\n")
        self.assertEqual(digest(self.a), self.before, "an input was changed")

    def test_an_input_or_an_existing_result_is_never_overwritten(self):
        os.chdir(self.dir)  # ./a.h5 and a.h5: one file, two spellings
        try:
            for force in ([], ["--force"]):
                self.refused(gpuscale("model", "./a.h5", "-o", "a.h5", *force),
                             "a.h5: is the input file ./a.h5; choose another -o")
                self.refused(gpuscale("report", "./a.h5", "--format", "trace", "-o", "a.h5", *force),
                             "a.h5: is the input file ./a.h5; choose another -o")
            b = self.path("b.h5")
            self.assertEqual(mpirun(2, "run", self.write("c.toml", SMALL_CONFIG), "-o", b).returncode, 0)
            b_digest = digest(b)
            self.refused(gpuscale("model", self.out, "-o", b),
                         f"{b}: the file exists; use --force to overwrite it, or choose another -o")
            self.refused(gpuscale("report", self.a, "--format", "trace", "-o", b),
                         f"{b}: the file exists; use --force to overwrite it, or choose another -o")
            self.assertEqual(digest(b), b_digest)
            p = gpuscale("model", self.a, "-o", b, "--force", "--include-noisy")  # asked for: replaced, whole
            self.assertEqual(p.returncode, 0, p.stderr)
            with open(b) as f:
                self.assertIn('"format": "gpuscale-model"', f.read())
        finally:
            os.chdir("/")

    def test_a_device_a_fifo_a_directory_or_a_link_is_refused_and_nothing_is_created(self):
        os.mkfifo(self.path("p.json"))
        os.mkdir(self.path("d.json"))
        os.symlink(self.a, self.path("link.json"))
        for cmd in (["model", self.a], ["report", self.a, "--format", "trace"]):
            for force in ([], ["--force"]):
                self.refused(gpuscale(*cmd, "-o", "/dev/null", *force),
                             "/dev/null: a character device, not a file; give a file name with -o")
                self.refused(gpuscale(*cmd, "-o", self.path("p.json"), *force),
                             f"{self.path('p.json')}: a FIFO, not a file; give a file name with -o")
                self.refused(gpuscale(*cmd, "-o", self.path("d.json"), *force),
                             f"{self.path('d.json')}: is a directory; give a file name with -o")
            self.refused(gpuscale(*cmd, "-o", self.path("link.json")),
                         f"{self.path('link.json')}: a symbolic link to '{os.path.realpath(self.a)}'; use --force to "
                         "write that file, or give a file name with -o")
        self.assertTrue(os.path.islink(self.path("link.json")))
        self.assertEqual(listing(self.dir), ["a.h5", "d.json", "link.json", "p.json"])
        # With --force the link is followed, and what is printed names the file it leads to.
        os.symlink(self.path("target.json"), self.path("new-link.json"))
        with open(self.path("target.json"), "w") as f:
            f.write("old")
        p = gpuscale("report", self.a, "--format", "trace", "-o", self.path("new-link.json"), "--force")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(" ".join(p.stdout.split()).startswith(
            f"{self.path('new-link.json')} (a link to {os.path.realpath(self.path('target.json'))}): "), p.stdout)
        self.assertTrue(os.path.islink(self.path("new-link.json")))
        with open(self.path("target.json")) as f:
            self.assertIn('"traceEvents"', f.read())

    def test_standard_output_that_cannot_be_written_exits_1(self):
        cfg = self.write("c.toml", SMALL_CONFIG)
        model = self.path("m.json")
        self.assertEqual(gpuscale("model", self.a, "-o", model, "--include-noisy").returncode, 0)
        for args in (["report", self.a], ["report", self.a, "--format", "json"],
                     ["report", self.a, "--format", "trace", "-o", "-"], ["check", cfg],
                     ["predict", model, "--ranks", "4"]):
            with open("/dev/full", "w") as full:
                p = subprocess.run([GPUSCALE, *args], stdout=full, stderr=subprocess.PIPE, text=True, env=ENV,
                                   timeout=60)
            self.assertEqual(p.returncode, 1, args)
            self.assertEqual(p.stderr, "gpuscale: error: writing to standard output failed: No space left on device\n",
                             args)


class Unfinished(InputErrorTest):
    def test_a_writer_ended_by_a_signal_leaves_no_partial_file(self):
        cfg = self.write("big.toml", SMALL_CONFIG.replace("reps = 4", "reps = 150000").replace("ops = 20", "ops = 1")
                         .replace("size = 64", "size = 4").replace('dtype = ["fp64", "fp32"]', 'dtype = "fp64"')
                         .replace('modes = ["serial", "parallel"]', 'modes = "parallel"'))
        big = self.path("big.h5")
        self.assertEqual(gpuscale("run", cfg, "-o", big, timeout=240).returncode, 0)
        runs = [big]
        for k in (1, 2):  # copies read as runs of their own, for `baseline`
            runs.append(self.path(f"big{k}.h5"))
            shutil.copy(big, runs[-1])
            as_another_run(runs[-1], k)
        before = listing(self.dir)
        # OpenBLAS's own threads (OPENBLAS_NUM_THREADS unset) start before main and do not block the signals.
        pool = {k: v for k, v in ENV.items() if k != "OPENBLAS_NUM_THREADS"}
        writers = {"trace": (["report", big, "--format", "trace", "-o"], "t.json"),
                   "baseline": (["baseline", *runs, "-o"], "e.toml")}
        for env_name, env in (("one BLAS thread", ENV), ("OpenBLAS's pool", pool)):
            for writer, (args, name) in writers.items():
                for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
                    what = f"{writer}, {env_name}, {signal.Signals(sig).name}"
                    out = self.path(name)
                    p = subprocess.Popen([GPUSCALE, *args, out], env=env, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE)
                    partial = f"{out}.partial-{p.pid}"
                    deadline = time.time() + 30
                    while p.poll() is None and time.time() < deadline and not os.path.exists(partial):
                        time.sleep(0.001)
                    if p.poll() is not None:
                        self.fail(f"{what}: ended before it could be signalled (exit {p.returncode}): make the file "
                                  "bigger")
                    p.send_signal(sig)
                    p.communicate(timeout=30)
                    self.assertEqual(p.returncode, 128 + sig, what)
                    self.assertEqual(listing(self.dir), before, what)

    def test_two_force_runs_on_one_file_one_is_refused(self):
        out = self.path("r.h5")
        cfg = self.write("c.toml", SMALL_CONFIG)
        self.assertEqual(mpirun(2, "run", cfg, "-o", out).returncode, 0)
        slow = self.write("slow.toml", SLOW_CONFIG)
        first = subprocess.Popen([MPIEXEC_, "-n", "2", GPUSCALE, "run", slow, "-o", out, "--force"], env=ENV,
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            read_until(self, first, "[1/5]")
            second = mpirun(2, "run", cfg, "-o", out, "--force")
            self.assertEqual(second.returncode, 2, second.stdout + second.stderr)
            self.assertIn(f"gpuscale: error: {out}: another process is writing it (a gpuscale run still going?); "
                          "wait for it to end, or choose another -o", second.stderr)
            model = gpuscale("model", self.path("c.toml"), "-o", out, "--force")
            self.assertEqual(model.returncode, 2)
            rest, _ = first.communicate(timeout=120)
            self.assertEqual(first.returncode, 0, rest)
            self.assertIn(f"done: {out}", rest)
        finally:
            if first.poll() is None:
                first.kill()
        with h5py.File(out, "r") as f:
            self.assertEqual(f.attrs["casesPlanned"], 5)  # the first run's, whole
            self.assertEqual(f.attrs["complete"], 1)


if __name__ == "__main__":
    unittest.main(verbosity=2)
