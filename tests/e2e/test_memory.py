"""Memory known before the run, as the launcher and the machine decide it:
ranks that share a node share its RAM by the launcher's own count (Open MPI,
Slurm), and a CUDA plan checked where no GPU is visible is held against a
ceiling no GPU reaches. Impossible sizes of every workload: test_estimate.py."""
import os
import re
import subprocess
import time
import unittest

from common import ENV, GPUSCALE, MPIEXEC, InputErrorTest, gpuscale

LAUNCHER_VARIABLES = ("OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE",
                      "SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE")


def available_bytes():
    with open("/proc/meminfo") as f:
        return int(re.search(r"MemAvailable:\s+(\d+) kB", f.read()).group(1)) * 1024


def run_with(variables, *args):
    """gpuscale run without mpirun, as if a launcher had set `variables` (and no others)."""
    env = {k: v for k, v in ENV.items() if k not in LAUNCHER_VARIABLES}
    env.update(variables)
    t0 = time.monotonic()
    p = subprocess.run([GPUSCALE, "run", *args], capture_output=True, text=True, timeout=60, env=env)
    return p, time.monotonic() - t0


class RanksShareTheNode(InputErrorTest):
    def test_the_launchers_count_of_ranks_on_the_node_divides_its_memory(self):
        # Three fp64 buffers of 60% of the available memory: one rank may use 80% of it, two or more may not.
        elements = int(available_bytes() * 0.6) // 3 // 8
        cfg = self.write("half.toml", '[[experiment]]\nname = "half"\nworkload = "elementwise"\ndtype = "fp64"\n'
                         'elements = %d\nmodes = ["parallel"]\n' % elements)
        out = self.path("out.h5")
        for variables, ranks in (({"OMPI_COMM_WORLD_LOCAL_SIZE": "2"}, 2),
                                 ({"SLURM_NTASKS_PER_NODE": "3"}, 3),
                                 ({"SLURM_STEP_TASKS_PER_NODE": "4(x2)", "SLURM_TASKS_PER_NODE": "1(x2)"}, 4),
                                 ({"SLURM_TASKS_PER_NODE": "2(x3),1"}, 2)):
            with self.subTest(variables=variables):
                # The budget stops the run should the memory check let it through.
                p, took = run_with(variables, cfg, "-o", out, "--time-budget", "0.001")
                self.assert_input_error(p, "case 1 of 1 (half elements=%d" % elements, "of memory per rank",
                                        "RAM available, over %d ranks on this node" % ranks, out=out)
                self.assertLess(took, 5)

    def test_without_the_launchers_count_the_ranks_sharing_memory_divide_it(self):
        # The launcher's variables hidden from gpuscale: the check before MPI counts 1 rank on the node, the one
        # after it 2 (MPI_Comm_split_type), which stops the run before any case.
        elements = int(available_bytes() * 0.6) // 3 // 8
        cfg = self.write("half.toml", '[[experiment]]\nname = "half"\nworkload = "elementwise"\ndtype = "fp64"\n'
                         'elements = %d\nmodes = ["parallel"]\n' % elements)
        out = self.path("out.h5")
        hide = [a for v in LAUNCHER_VARIABLES for a in ("-u", v)]
        p = subprocess.run([MPIEXEC, "-n", "2", "env", *hide, GPUSCALE, "run", cfg, "-o", out], capture_output=True,
                           text=True, timeout=120, env=ENV)
        # Exit 2 with one error line (the launcher may add its own lines about the exit code).
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        said = [line for line in p.stderr.splitlines() if line.startswith("gpuscale: ")]
        self.assertEqual(len(said), 1, p.stderr)
        for fragment in ("gpuscale: error: ", "case 1 of 1 (half elements=%d" % elements, "of memory per rank",
                         "RAM available, over 2 ranks on this node"):
            self.assertIn(fragment, said[0])
        self.assertFalse(os.path.exists(out), "a result file was written")


class CudaPlanAwayFromItsServers(InputErrorTest):
    CONFIG = '[defaults]\nbackend = "cuda"\n[[experiment]]\nname = "copy"\nworkload = "copy"\nbytes = %d\n'

    def test_sizes_no_gpu_holds_are_refused_and_the_rest_is_checked_elsewhere(self):
        # The largest bytes (1 TiB), copied device to device: a source and a destination of 1 TiB each.
        huge = self.write("huge.toml", self.CONFIG % (1 << 40) + 'direction = "d2d"\n')
        p = gpuscale("check", huge)
        self.assert_input_error(p, "case 1 of 2 (copy bytes=1099511627776 direction=d2d ",
                                "needs 2 TiB of device memory per rank")
        if "no GPU is visible here" not in p.stderr:
            self.skipTest("a GPU is visible here: " + p.stderr.strip())
        self.assertIn("more than the 1 TiB it may use: more than any GPU has today; no GPU is visible here", p.stderr)
        # Half a TiB fits some GPU of tomorrow, and this machine's RAM is not the one that counts.
        p = gpuscale("check", self.write("big.toml", self.CONFIG % (512 << 30)))
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
