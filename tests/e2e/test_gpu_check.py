"""kernels/gpu_check.sh, the kernel ladder's GPU checks in one command, run
here with stand-ins for the GPU programs (gpuscale, gpu_cuda_backend, mpirun,
nvidia-smi, compute-sanitizer, ncu) first on PATH: what it runs, in which
order, what it writes and what it answers. On a GPU it runs the real ones."""
import os
import stat
import subprocess
import unittest

from common import ScratchTest

SOURCE = os.environ.get("GPUSCALE_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = os.path.join(SOURCE, "kernels", "gpu_check.sh")

# Each stand-in logs its arguments to $STUB_LOG; gpuscale writes the file after -o, and its
# `report --check` exits $CHECK_EXIT. The tools run the program they are given.
GPUSCALE = """#!/bin/bash
echo "gpuscale $*" >> "$STUB_LOG"
if [ "$1" = run ]; then while [ $# -gt 0 ]; do [ "$1" = -o ] && echo h5 > "$2"; shift; done; exit 0; fi
for a; do [ "$a" = --check ] && { echo "check output"; exit "${CHECK_EXIT:-0}"; }; done
echo "report table"
"""
BACKEND = '#!/bin/bash\necho "gpu_cuda_backend" >> "$STUB_LOG"\nexit "${BACKEND_EXIT:-0}"\n'
TILES = '#!/bin/bash\necho "gemm_tiles $*" >> "$STUB_LOG"\necho "tile table"\n'
NVIDIA_SMI = '#!/bin/bash\necho "name, driver_version"\necho "Stand-in GPU, 0"\n'
MPIRUN = '#!/bin/bash\necho "mpirun $1 $2" >> "$STUB_LOG"\nshift 2\nexec "$@"\n'
# compute-sanitizer --tool T --error-exitcode N PROGRAM...; ncu -k K --section S --section S PROGRAM...
SANITIZER = '#!/bin/bash\necho "compute-sanitizer $2 $4" >> "$STUB_LOG"\nshift 4\nexec "$@"\n'
NCU = '#!/bin/bash\necho "ncu $*" >> "$STUB_LOG"\nshift 6\nexec "$@"\n'


class GpuCheck(ScratchTest):
    def setUp(self):
        super().setUp()
        self.bin = self.path("bin")
        self.tools = self.path("tools")
        for d, files in ((self.bin, {"gpuscale": GPUSCALE, "gpu_cuda_backend": BACKEND, "gemm_tiles": TILES}),
                         (self.tools, {"nvidia-smi": NVIDIA_SMI, "mpirun": MPIRUN,
                                       "compute-sanitizer": SANITIZER, "ncu": NCU})):
            os.mkdir(d)
            for name, text in files.items():
                p = os.path.join(d, name)
                with open(p, "w") as f:
                    f.write(text)
                os.chmod(p, os.stat(p).st_mode | stat.S_IXUSR)
        self.log = self.path("stub.log")
        self.out = self.path("out")

    def check(self, *args, **env):
        e = dict(os.environ, PATH=self.tools + ":" + os.environ["PATH"], STUB_LOG=self.log, **env)
        return subprocess.run([SCRIPT, *args], capture_output=True, text=True, timeout=60, env=e)

    def calls(self):
        with open(self.log) as f:
            return f.read().splitlines()

    def test_every_step_in_order_with_its_files_and_a_summary_last(self):
        p = self.check(self.bin, self.out)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        ladder = os.path.join(os.path.realpath(SOURCE), "configs", "kernel-ladder.toml")
        small = "--set ops=1 --set warmup=0 --set reps=1"
        run, out = f"gpuscale run {ladder}", self.out
        self.assertEqual(self.calls(), [
            "gpu_cuda_backend",
            "mpirun -np 1",
            f"{run} -o {out}/ladder.h5 --force",
            f"gpuscale report {out}/ladder.h5",
            f"gpuscale report {out}/ladder.h5 --check",
            "gemm_tiles --size 4096",
            "compute-sanitizer memcheck 3",
            f"{run} -o {out}/s.h5 --force --set m=200 --set n=136 --set k=72 {small}",
            "compute-sanitizer memcheck 3",
            f"{run} -o {out}/s.h5 --force --set m=77 --set n=131 --set k=45 {small}",
            "compute-sanitizer racecheck 3",
            f"{run} -o {out}/s.h5 --force --set m=200 --set n=136 --set k=72 {small}",
            "compute-sanitizer synccheck 3",
            f"{run} -o {out}/s.h5 --force --set m=200 --set n=136 --set k=72 {small}",
            "ncu -k regex:^gemm_ --section MemoryWorkloadAnalysis_Tables --section ComputeWorkloadAnalysis "
            f"{self.bin}/gpuscale run {ladder} -o {out}/n.h5 --force --set size=4096 {small}",
            f"{run} -o {out}/n.h5 --force --set size=4096 {small}",
        ])
        # Eight files at most come back from a GPU machine's output folder.
        self.assertEqual(sorted(os.listdir(out)), ["backend.log", "gpu.txt", "ladder.h5", "ladder.log", "ncu.txt",
                                                   "report.txt", "sanitizer.log", "tiles.txt"])
        with open(os.path.join(out, "gpu.txt")) as f:
            self.assertEqual(f.read(), "name, driver_version\nStand-in GPU, 0\n")
        self.assertIn("report table\n", p.stdout)
        summary = p.stdout.split("tile table\n")[-1]
        self.assertRegex(summary, r"every kernel against cuBLAS, element by element\s+ok \(\d+ s, backend\.log\)")
        self.assertRegex(summary, r"targets: report --check\s+ok \(\d+ s, report\.txt\)")
        self.assertRegex(summary, r"memcheck at m=77 n=131 k=45\s+ok \(\d+ s, sanitizer\.log\)")
        self.assertRegex(summary, r"ncu: shared memory and pipes of our kernels\s+ok \(\d+ s, ncu\.txt\)")
        self.assertRegex(summary, r"tiles of blocked and mma_async against cuBLAS\s+ok \(\d+ s, tiles\.txt\)")
        self.assertIn("Stand-in GPU, 0", p.stdout)

    def test_the_steps_asked_for_and_no_others(self):
        p = self.check(self.bin, self.out, "tiles", "backend")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(self.calls(), ["gpu_cuda_backend", "gemm_tiles --size 4096"])  # in the script's order
        self.assertEqual(sorted(os.listdir(self.out)), ["backend.log", "gpu.txt", "tiles.txt"])
        self.assertNotIn("ladder", p.stdout.split("tile table\n")[-1])
        p = self.check(self.bin, self.out, "ladder", "memcheck")
        self.assertEqual(p.returncode, 2)
        self.assertIn("unknown step 'memcheck'; steps: backend ladder tiles sanitizer ncu", p.stderr)

    def test_a_missed_target_or_a_failed_step_fails_the_whole_and_the_summary_says_which(self):
        p = self.check(self.bin, self.out, CHECK_EXIT="1", BACKEND_EXIT="1")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertRegex(p.stdout, r"targets: report --check\s+FAILED, exit 1 \(\d+ s, report\.txt\)")
        self.assertRegex(p.stdout, r"every kernel against cuBLAS, element by element\s+FAILED, exit 1")
        self.assertRegex(p.stdout, r"kernel ladder next to cuBLAS\s+ok")
        with open(os.path.join(self.out, "report.txt")) as f:
            self.assertIn("check output", f.read())

    def test_no_gpu_no_program_no_arguments(self):
        os.remove(os.path.join(self.tools, "nvidia-smi"))
        with open(os.path.join(self.tools, "nvidia-smi"), "w") as f:
            f.write("#!/bin/bash\necho 'NVIDIA-SMI has failed'\nexit 9\n")
        os.chmod(os.path.join(self.tools, "nvidia-smi"), 0o755)
        p = self.check(self.bin, self.out)
        self.assertEqual(p.returncode, 77, p.stdout + p.stderr)
        self.assertIn("no usable GPU here (nvidia-smi failed): nothing checked", p.stdout)
        self.assertFalse(os.path.exists(self.log))  # nothing ran
        p = self.check(self.path("nowhere"), self.out)
        self.assertEqual(p.returncode, 2)
        self.assertIn("no gpuscale under " + self.path("nowhere"), p.stderr)
        p = self.check()
        self.assertEqual(p.returncode, 2)
        self.assertIn("kernels/gpu_check.sh BIN OUT_DIR", p.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
