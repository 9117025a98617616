"""scripts/gpu-check.sh, the whole GPU check in one call (kernels/gpu_check.sh, the kernel ladder's own, is
test_gpu_check.py), without a GPU: the plan with each step's box, at most 420 s in all, and exit 77 (nothing
checked) within seconds; bad usage refused in one line; and its machinery (time boxes, outcomes, the summary and
what OUT_DIR gets) run through on this machine with a stand-in nvidia-smi, where the steps that need a GPU fail or
skip as they must and the others pass. A GPU's results come from running it on a GPU machine."""
import json
import os
import re
import shutil
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ENV, GPUSCALE, ScratchTest  # noqa: E402

SOURCE = os.environ.get("GPUSCALE_SOURCE_DIR") or os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__))))
CHECK = os.path.join(SOURCE, "scripts", "gpu-check.sh")
BUILD = os.path.dirname(os.path.dirname(os.path.realpath(GPUSCALE)))


class GpuCheck(ScratchTest):
    def stand_in(self, script):
        """A folder holding an nvidia-smi that runs `script` (sh), to put first on PATH."""
        d = self.path("bin")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "nvidia-smi"), "w") as f:
            f.write("#!/bin/sh\n" + script + "\n")
        os.chmod(os.path.join(d, "nvidia-smi"), 0o755)
        return d

    def check(self, *args, path_first=None, timeout=60):
        env = dict(ENV)
        if path_first:
            env["PATH"] = path_first + os.pathsep + env["PATH"]
        return subprocess.run([CHECK, *args], capture_output=True, text=True, timeout=timeout, env=env)

    def test_no_gpu_prints_the_plan_and_exits_77(self):
        failing = self.stand_in("echo 'NVIDIA-SMI has failed because it could not communicate with the driver'; "
                                "exit 9")
        paths = [failing] + ([None] if shutil.which("nvidia-smi") is None else [])  # this machine as it is, too
        for first in paths:
            t0 = time.monotonic()
            p = self.check(self.path("out"), "--build", BUILD, path_first=first)
            self.assertLess(time.monotonic() - t0, 10)
            self.assertEqual(p.returncode, 77, p.stdout + p.stderr)
            self.assertIn("no usable GPU here", p.stdout)
            self.assertTrue(p.stdout.rstrip().endswith("nothing checked"), p.stdout)
            # What this build holds of the programs (one without NCCL has no gpu_nccl_comm).
            held = [n for n in ("gpuscale", "gpu_cuda_probe", "gpu_cuda_backend", "gpu_nccl_comm")
                    if any(os.access(os.path.join(BUILD, d, n), os.X_OK) for d in ("src", "tests", "bench"))]
            self.assertIn(f"gpu-check.sh: build {BUILD} holds {len(held)} of 4 programs the steps run", p.stdout)
            self.assertFalse(os.path.exists(self.path("out")))  # nothing written

    def test_every_steps_estimate_on_an_h100_is_within_two_thirds_of_its_box(self):
        """The plan's estimates: the gpuscale runs' from `gpuscale check --rates configs/rates/h100.toml` with the
        run's own options, the others' as the script assumes them; boxes at most 420 s in all."""
        p = self.check(self.path("out"), "--build", BUILD, path_first=self.stand_in("exit 9"))
        self.assertEqual(p.returncode, 77, p.stdout + p.stderr)
        self.assertIn("plan (budget 420 s; estimates on h100.toml, 2/3 of a box at most):", p.stdout)
        steps = re.findall(r"^  ([a-z0-9-]+) +(\d+) s  estimate +(\d+|\?) s \((.*)\)$", p.stdout, re.M)
        names = [s[0] for s in steps]
        self.assertEqual(names[0], "preflight", p.stdout)
        self.assertGreaterEqual(len(steps), 15, p.stdout)
        for name, box, estimate, how in steps:
            self.assertNotEqual(estimate, "?", (name, how))
            self.assertLessEqual(int(estimate), 2 * int(box) / 3, (name, box, estimate, how))
        runs = [s for s in steps if s[3] == "gpuscale check --rates"]
        self.assertGreaterEqual(len(runs), 10, p.stdout)
        boxes = [int(s[1]) for s in steps]
        self.assertLessEqual(sum(boxes), 420, p.stdout)
        total = re.search(r"^  total +(\d+) s of the steps' boxes$", p.stdout, re.M)
        self.assertIsNotNone(total, p.stdout)
        self.assertEqual(int(total.group(1)), sum(boxes))
        # The estimate is check's: the ladder's step, as the script runs it, estimated here by hand.
        ladder = subprocess.run([GPUSCALE, "check", os.path.join(SOURCE, "configs", "kernel-ladder.toml"),
                                 "--set", "reps=3", "--set", "warmup=1", "--set", "warmup_s=0.1", "--set",
                                 "fp32-ladder.size=1024", "--set", "tensor-ladder.size=1024", "--rates",
                                 os.path.join(SOURCE, "configs", "rates", "h100.toml"), "--ranks", "1"],
                                capture_output=True, text=True, env=ENV, timeout=60)
        self.assertEqual(ladder.returncode, 0, ladder.stderr)
        m = re.search(r"estimated time on [^:]*: about (\d+) s", " ".join(ladder.stdout.split()))
        self.assertIsNotNone(m, ladder.stdout)
        self.assertEqual(dict((s[0], s[2]) for s in steps)["ladder"], m.group(1))

    def test_an_out_dir_that_cannot_be_made_is_refused_in_one_line(self):
        fake = self.stand_in("echo 'Stand-in GPU, 0.0, 1 MiB, 1 MHz'")
        p = self.check("/proc/gpuscale-check", "--build", BUILD, "--steps", "info", path_first=fake)
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertEqual(p.stderr.strip(), "gpu-check.sh: error: cannot make OUT_DIR /proc/gpuscale-check")

    def test_a_build_that_lacks_programs_says_so_before_any_gpu(self):
        partial = self.path("partial")
        os.makedirs(os.path.join(partial, "src"))
        os.symlink(GPUSCALE, os.path.join(partial, "src", "gpuscale"))
        p = self.check(self.path("out"), "--build", partial, path_first=self.stand_in("exit 9"))
        self.assertEqual(p.returncode, 77, p.stdout + p.stderr)
        self.assertIn(f"build {partial} holds 1 of 4 programs the steps run (lacks gpu_cuda_probe gpu_cuda_backend "
                      "gpu_nccl_comm): build with the tests (scripts/build.sh) before scripts/bundle.sh", p.stdout)

    def test_the_preflight_says_what_is_missing_and_those_steps_are_skipped_not_failed(self):
        fake = self.stand_in("echo 'Stand-in GPU, 0.0, 1 MiB, 1 MHz'")
        with open(os.path.join(fake, "python3"), "w") as f:  # this python3 has no torch, whatever the machine's has
            f.write('#!/bin/sh\ncase "$*" in *"import torch"*) exit 1 ;; esac\nexec /usr/bin/python3 "$@"\n')
        os.chmod(os.path.join(fake, "python3"), 0o755)
        partial = self.path("partial")
        os.makedirs(os.path.join(partial, "src"))
        os.symlink(GPUSCALE, os.path.join(partial, "src", "gpuscale"))
        env = dict(ENV)
        env["PATH"] = fake + os.pathsep + "/usr/bin:/bin"  # no compute-sanitizer (the CUDA toolkit's bin)
        out = self.path("out")
        p = subprocess.run([CHECK, out, "--build", partial, "--steps", "preflight,probe,anchor-torch,memcheck"],
                           capture_output=True, text=True, timeout=60, env=env)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)  # a program of the step list is missing
        with open(os.path.join(out, "summary.json")) as f:
            steps = {s["name"]: s for s in json.load(f)["steps"]}
        self.assertEqual(steps["preflight"]["outcome"], "failed")
        for missing in ("no gpu_cuda_probe in this build", "PyTorch does not import", "no compute-sanitizer on PATH"):
            self.assertIn(missing, steps["preflight"]["note"])
        self.assertLessEqual(steps["preflight"]["seconds"], 5)
        self.assertEqual((steps["probe"]["outcome"], steps["probe"]["note"]),
                         ("skipped", f"skipped: no gpu_cuda_probe in this build {partial}"))
        self.assertEqual((steps["anchor-torch"]["outcome"], steps["anchor-torch"]["note"]),
                         ("skipped", "skipped: PyTorch does not import"))
        self.assertEqual((steps["memcheck"]["outcome"], steps["memcheck"]["note"]),
                         ("skipped", "skipped: no compute-sanitizer on PATH"))

    def test_bad_usage_one_line_exit_2(self):
        cases = [
            ([self.path("o"), "--steps", "probe,warp"], "unknown step 'warp'; steps: preflight probe backend"),
            ([self.path("o"), "--budget", "59"], "--budget 59: at least 60 s"),
            ([self.path("o"), "--budget", "7m"], "--budget 7m: a whole number of seconds"),
            ([], "no OUT_DIR given"),
            ([self.path("o"), self.path("p")], "one OUT_DIR only"),
            ([self.path("o"), "--fast"], "unknown option '--fast'"),
            ([self.path("o"), "--rates", self.path("none.toml")], "--rates " + self.path("none.toml") + ": no such file"),
            ([self.path("file")], "OUT_DIR " + self.path("file") + " is not a folder"),
        ]
        with open(self.path("file"), "w") as f:
            f.write("a file\n")
        for args, message in cases:
            p = self.check(*args)
            self.assertEqual(p.returncode, 2, (args, p.stdout, p.stderr))
            self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
            self.assertIn("gpu-check.sh: error: " + message, p.stderr)

    def test_steps_boxes_and_summary_with_a_stand_in_gpu(self):
        fake = self.stand_in("echo 'Stand-in GPU, 0.0, 1 MiB, 1 MHz'")
        out = self.path("out")
        p = self.check(out, "--build", BUILD, "--steps", "probe,info,gemv,ladder,ladder-check", "--budget", "60",
                       path_first=fake, timeout=240)
        # The ladder needs the CUDA backend: it fails here, and the check says so in its exit status.
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        files = os.listdir(out)
        self.assertLessEqual(len(files), 8, files)
        for name in ("summary.txt", "summary.json", "gpu-check.tgz"):
            self.assertIn(name, files)
        with open(os.path.join(out, "summary.json")) as f:
            doc = json.load(f)
        steps = {s["name"]: s for s in doc["steps"]}
        self.assertEqual(list(steps), ["probe", "info", "gemv", "ladder", "ladder-check"])
        self.assertEqual(steps["probe"]["outcome"], "skipped")  # 77 without a device, or not built
        self.assertEqual(steps["info"]["outcome"], "ok")
        self.assertEqual(steps["gemv"]["outcome"], "ok", p.stdout)
        self.assertEqual(steps["gemv"]["figures"]["cases"], steps["gemv"]["figures"]["ok"])
        self.assertGreater(steps["gemv"]["figures"]["cases"], 0)
        self.assertEqual(steps["ladder"]["outcome"], "failed")
        self.assertEqual(steps["ladder-check"]["outcome"], "not run")
        self.assertEqual(doc["failed"], ["ladder"])
        for s in doc["steps"]:
            self.assertLessEqual(s["seconds"], s["box_s"] + 5, s)
        self.assertIn("failed or timed out: ladder; not run: ladder-check", p.stdout.splitlines()[-1])
        with open(os.path.join(out, "summary.txt")) as f:
            self.assertEqual(f.read().strip(), p.stdout.strip().split("\n== summary")[1].split("\n", 1)[1].strip())

    def test_a_step_past_its_box_is_killed_and_past_the_budget_not_started(self):
        # A stand-in nvidia-smi that also stands in for mpirun: every run sleeps past any box.
        fake = self.stand_in("echo 'Stand-in GPU, 0.0, 1 MiB, 1 MHz'")
        with open(os.path.join(fake, "mpirun"), "w") as f:
            f.write("#!/bin/sh\nexec sleep 600\n")
        os.chmod(os.path.join(fake, "mpirun"), 0o755)
        out = self.path("out")
        p = self.check(out, "--build", BUILD, "--steps", "info,gemm-sweep,graphs,cpu-vs-gpu,copies", "--budget",
                       "60", path_first=fake, timeout=120)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        with open(os.path.join(out, "summary.json")) as f:
            steps = {s["name"]: s for s in json.load(f)["steps"]}
        self.assertEqual(steps["info"]["outcome"], "timed out")  # 8 s box
        self.assertEqual(steps["gemm-sweep"]["outcome"], "timed out")  # 33 s box: 41 s spent
        self.assertEqual(steps["graphs"]["outcome"], "timed out")  # 14 s box: 55 s spent
        self.assertEqual(steps["cpu-vs-gpu"]["outcome"], "not run")  # 55 + 17 > 60
        self.assertIn("the budget (60 s) would be passed", steps["cpu-vs-gpu"]["note"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
