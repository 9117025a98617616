"""gpuscale run through mpirun, checked by reading the HDF5 file with h5py."""
import csv
import io
import json
import os
import re
import shutil
import subprocess
import unittest

import h5py
import numpy as np

from common import (ENV, GPUSCALE, LAUNCHER_VARIABLES, SMALL_CONFIG, ScratchTest, gpuscale, mpirun, no_gpu_reason,
                    preamble, run, set_durations)


def s(x):
    return x.decode() if isinstance(x, bytes) else x


class RunTwoRanks(ScratchTest):
    def setUp(self):
        super().setUp()
        self.cfg = self.write("small.toml", SMALL_CONFIG)
        self.out = self.path("out.h5")
        self.proc = mpirun(2, "run", self.cfg, "-o", self.out)
        self.assertEqual(self.proc.returncode, 0, self.proc.stdout + self.proc.stderr)

    def test_file_describes_the_run(self):
        with h5py.File(self.out, "r") as f:
            a = f.attrs
            self.assertEqual(s(a["software"]), "gpuscale")
            self.assertEqual(s(a["schemaVersion"]), "1.10")
            self.assertEqual(a["complete"], 1)
            self.assertEqual(s(a["status"]), "complete")
            self.assertEqual(a["ranks"], 2)
            self.assertEqual(a["nodes"], 1)
            self.assertEqual(s(a["backend"]), "cpu")
            # The MPI as a dependency, named after the library's own words.
            lib = s(a["mpiLibrary"])
            self.assertRegex(s(a["softwareDependencies"]),
                             r"^openmpi@4\.\d" if lib.startswith("Open MPI") else r"^mpich@\d+\.\d")
            self.assertIn("hdf5@1.", s(a["softwareDependencies"]))
            self.assertRegex(s(a["mpiLibrary"]), r"^(Open MPI v\d|MPICH Version:)")  # the library's own words
            self.assertNotIn("\n", s(a["mpiLibrary"]))
            self.assertEqual(s(a["config"]), SMALL_CONFIG)
            self.assertIn("run", s(a["commandLine"]))
            self.assertRegex(s(a["date"]), r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d{4}$")
            env = f["environment"].attrs  # the job's size, as Open MPI's mpirun or MPICH's Hydra said it
            self.assertEqual(s(env["OMPI_COMM_WORLD_SIZE"] if "OMPI_COMM_WORLD_SIZE" in env else env["PMI_SIZE"]), "2")
            ranks = f["ranks"]
            self.assertEqual(len(ranks["hostname"]), 2)
            self.assertEqual(list(ranks["node_index"][()]), [0, 0])
            self.assertEqual(list(ranks["local_rank"][()]), [0, 1])
            self.assertEqual([s(k) for k in ranks["device_kind"][()]], ["cpu", "cpu"])
            self.assertEqual(s(ranks["clock_offset_start"].attrs["unit"]), "s")
            # One host, one clock: rank 0's clock itself, offsets 0 by construction.
            self.assertEqual(list(ranks["clock_shared"][()]), [1, 1])
            self.assertEqual(list(ranks["clock_offset_start"][()]), [0.0, 0.0])
            off, unc = ranks["clock_offset_start"][()], ranks["clock_uncertainty_start"][()]
            self.assertTrue(np.all(np.abs(off) <= unc + 1e-9), (off, unc))
            self.assertTrue(np.all(np.isfinite(ranks["clock_offset_end"][()])))

    def test_where_each_rank_may_run_is_recorded(self):
        cores = os.cpu_count()
        with h5py.File(self.out, "r") as f:
            ranks = f["ranks"]
            self.assertEqual(list(ranks["node_cores"][()]), [cores, cores])
            for r in range(2):
                self.assertGreaterEqual(ranks["cores_available"][r], 1)
                self.assertRegex(s(ranks["cpu_affinity"][r]), r"^\d+(-\d+)?(,\d+(-\d+)?)*$")
            if cores >= 2:  # 2 ranks fit
                self.assertEqual(s(f.attrs["warnings"]), "")
            else:
                self.assertIn("2 ranks on 1 cores", s(f.attrs["warnings"]))

    def test_warmup_is_kept_and_the_cpu_backend_says_why_it_has_no_telemetry(self):
        with h5py.File(self.out, "r") as f:
            ranks = f["ranks"]
            self.assertEqual([s(t) for t in ranks["telemetry"][()]],
                             ["not available: the CPU backend has no GPU telemetry"] * 2)
            self.assertTrue(np.all(np.isnan(ranks["max_sm_clock"][()])))
            self.assertEqual(s(ranks["max_sm_clock"].attrs["unit"]), "MHz")
            self.assertEqual(ranks["max_sm_clock"].attrs["unitSI"], 1e6)
            self.assertEqual(list(ranks["pcie_gen"][()]), [-1, -1])
            self.assertEqual(len(f["links/rank"]), 0)
            for k, c in f["cases"].items():
                self.assertNotIn("telemetry", c, k)
                # SMALL_CONFIG: warmup = 1 and the CPU backend's warmup_s = 0: exactly one warm-up sample each.
                self.assertEqual(c["parameters"].attrs["warmup_s"], 0.0)
                self.assertEqual(list(c["warmup_samples"][()]), [1, 1])
                w = c["warmup_device_time"][()]
                self.assertEqual(w.shape, (2, 1))
                self.assertTrue(np.all(w > 0), k)

    def test_every_raw_sample_is_kept_with_units(self):
        with h5py.File(self.out, "r") as f:
            cases = f["cases"]
            self.assertEqual(sorted(cases.keys()), ["0000", "0001", "0002", "0003"])
            modes = [s(cases[k].attrs["mode"]) for k in sorted(cases)]
            self.assertEqual(modes, ["serial", "parallel", "serial", "parallel"])
            for k in cases:
                c = cases[k]
                self.assertEqual(s(c.attrs["status"]), "ok")
                p = c["parameters"].attrs
                self.assertEqual(p["size"], 64)
                self.assertIn(s(p["dtype"]), ("fp64", "fp32"))
                self.assertEqual(p["ops"], 20)
                for name in ("device_time", "wall_start", "wall_end"):
                    d = c[name]
                    self.assertEqual(d.shape, (2, 4), name)
                    self.assertEqual(s(d.attrs["unit"]), "s")
                    self.assertEqual(d.attrs["unitSI"], 1.0)
                self.assertTrue(np.all(c["device_time"][()] > 0))
                self.assertTrue(np.all(c["wall_end"][()] >= c["wall_start"][()]))
                self.assertTrue(np.all(c["verify_error"][()] <= c.attrs["verify_tolerance"]))
                self.assertEqual(c.attrs["flops_per_sample"], 20 * 2 * 64 ** 3)
            serial = cases["0000"]
            # Rank 1 waited for rank 0: its first sample starts after rank 0's last ended.
            self.assertGreaterEqual(serial["wall_start"][1, 0], serial["wall_end"][0, -1] - 1e-4)

    def test_report_json_pairs_serial_and_parallel(self):
        p = gpuscale("report", self.out, "--format", "json")
        self.assertEqual(p.returncode, 0, p.stderr)
        rows = json.loads(p.stdout)
        self.assertEqual(len(rows), 4)
        for r in rows:
            self.assertEqual(r["file"], self.out)
            for k in ("name", "workload", "mode", "ranks", "nodes", "median_s", "min_s", "p95_s", "gflops"):
                self.assertIn(k, r)
            self.assertIsInstance(r["median_s"], float)
            self.assertEqual(r["ranks"], 2)
            self.assertLessEqual(r["min_s"], r["median_s"])
            self.assertLessEqual(r["median_s"], r["p95_s"])
        for serial, parallel in ((rows[0], rows[1]), (rows[2], rows[3])):
            self.assertNotIn("speedup", serial)
            self.assertAlmostEqual(parallel["speedup"], serial["median_s"] / parallel["median_s"], places=9)
            self.assertAlmostEqual(parallel["efficiency"], parallel["speedup"] / 2, places=9)

    def test_report_table_and_csv(self):
        t = gpuscale("report", self.out)
        self.assertEqual(t.returncode, 0, t.stderr)
        self.assertIn("speedup", t.stdout)
        self.assertRegex(t.stdout, r"parallel .* \d+\.\d\dx ")
        c = gpuscale("report", self.out, "--format", "csv")
        rows = list(csv.DictReader(io.StringIO(c.stdout)))
        self.assertEqual(len(rows), 4)
        self.assertEqual(rows[1]["mode"], "parallel")
        float(rows[1]["speedup"])

    def test_h5dump_reads_the_file(self):
        if not shutil.which("h5dump"):
            self.skipTest("h5dump not installed")
        p = run(["h5dump", "-H", self.out])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("device_time", p.stdout)

    def test_progress_and_backend_reason_are_printed(self):
        self.assertIn("[1/4] small size=64 dtype=fp64 impl=vendor ops=20 [serial]", self.proc.stdout)
        # What the run did, in one line before the file's name.
        self.assertIn("\nran 4 of 4 cases (0 skipped; 0 failed verification)\ndone: " + self.out + " (gpuscale report ",
                      self.proc.stdout)
        # Each case's line ends with the time so far and, until the last, the time left at that pace.
        self.assertRegex(self.proc.stdout, r"\n\[1/4\] .*, verified \(\d+\.\d s elapsed, about \d+\.\d s left\)\n")
        self.assertRegex(self.proc.stdout, r"\n\[4/4\] .*, verified \(\d+\.\d s elapsed\)\n")
        self.assertRegex(self.proc.stdout, r"backend cpu: .*")
        self.assertIn("verified", self.proc.stdout)


class NothingRan(ScratchTest):
    def test_a_run_whose_job_skips_every_case_fails_saying_why_and_keeps_the_file(self):
        # configs/p2p.toml on 3 ranks of one node: no group has pairs, and scope inter-node needs 2 nodes.
        out = self.path("p2p.h5")
        p = mpirun(3, "run", os.path.join(os.environ["GPUSCALE_SOURCE_DIR"], "configs", "p2p.toml"), "-o", out)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("\nran 0 of 24 cases (24 skipped: 12 because p2p needs groups of an even size, 12 because scope "
                      "inter-node needs ranks on at least 2 nodes; 0 failed verification)\ndone: " + out, p.stdout)
        self.assertIn("gpuscale: error: no case ran: all 24 were skipped on this job (3 rank(s) on 1 node(s)); " + out +
                      " is complete and keeps them, each with its reason\n", p.stderr)
        with h5py.File(out, "r") as f:
            self.assertEqual(f.attrs["complete"], 1)
            self.assertEqual(s(f.attrs["status"]), "complete")
            self.assertEqual(len(f["cases"]), 24)
            for c in f["cases"].values():
                self.assertEqual(s(c.attrs["status"]), "skipped")
                self.assertTrue(s(c.attrs["status_reason"]))

    def test_past_two_causes_the_rest_of_the_skipped_cases_are_counted_together(self):
        cfg = self.write("three.toml", preamble(warmup=1, reps=2) + """
[[experiment]]
name = "p"
workload = "p2p"
bytes = 8
iters = 1
scope = ["world", "inter-node"]
modes = "parallel"

[[experiment]]
name = "d"
workload = "distributed_gemm"
size = 32
group_size = 4
modes = "parallel"
""")
        out = self.path("three.h5")
        p = mpirun(3, "run", cfg, "-o", out)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("\nran 0 of 3 cases (3 skipped: 1 because p2p needs groups of an even size, 1 because scope "
                      "inter-node needs ranks on at least 2 nodes, 1 for other reasons; 0 failed verification)\n",
                      p.stdout)
        self.assertIn("gpuscale: error: no case ran: all 3 were skipped", p.stderr)
        # One case that runs is a run that did something: exit 0.
        p = mpirun(2, "run", cfg, "-o", self.path("two.h5"))
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("\nran 1 of 3 cases (2 skipped: 1 because scope inter-node needs ranks on at least 2 nodes, "
                      "1 because group_size = 4 needs at least 4 ranks; 0 failed verification)\n", p.stdout)
        self.assertNotIn("no case ran", p.stderr)


class RunMore(ScratchTest):
    def test_four_oversubscribed_ranks(self):
        cfg = self.write("c.toml", SMALL_CONFIG.replace('dtype = ["fp64", "fp32"]', 'dtype = "fp32"'))
        out = self.path("four.h5")
        p = mpirun(4, "run", cfg, "-o", out)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        with h5py.File(out, "r") as f:
            self.assertEqual(f.attrs["ranks"], 4)
            self.assertEqual(f["cases/0001/wall_start"].shape, (4, 4))

    def test_default_output_goes_to_results_with_a_timestamp(self):
        cfg = self.write("mine.toml", SMALL_CONFIG)
        p = mpirun(1, "run", cfg, "--set", "dtype=fp32", "--set", "reps=2", cwd=self.dir)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        files = os.listdir(self.path("results"))
        self.assertEqual(len(files), 1)
        self.assertRegex(files[0], r"^mine-\d{8}-\d{6}\.h5$")
        with h5py.File(self.path("results/" + files[0]), "r") as f:
            self.assertEqual(f["cases/0000"].attrs["reps"], 2)
            self.assertEqual(s(f.attrs["configOverrides"]), "dtype=fp32\nreps=2")

    def test_force_overwrites(self):
        cfg = self.write("c.toml", SMALL_CONFIG)
        out = self.path("o.h5")
        self.assertEqual(mpirun(1, "run", cfg, "-o", out, "--set", "reps=2").returncode, 0)
        p = mpirun(1, "run", cfg, "-o", out, "--set", "reps=3", "--force")
        self.assertEqual(p.returncode, 0, p.stderr)
        with h5py.File(out, "r") as f:
            self.assertEqual(f["cases/0000"].attrs["reps"], 3)

    def test_without_mpirun_it_is_a_one_rank_job_and_says_how_to_get_more(self):
        cfg = self.write("c.toml", SMALL_CONFIG)
        out = self.path("single.h5")
        # Typed alone, outside any launcher (even where the tests themselves run in a Slurm step).
        alone = {k: v for k, v in ENV.items() if k not in LAUNCHER_VARIABLES}
        p = subprocess.run([GPUSCALE, "run", cfg, "-o", out, "--set", "reps=2"], capture_output=True, text=True,
                           timeout=120, env=alone)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        with h5py.File(out, "r") as f:
            self.assertEqual(f.attrs["ranks"], 1)
        notes = [l for l in p.stdout.splitlines() if l.startswith("note: 1 rank")]
        self.assertEqual(notes, [f"note: 1 rank (no mpirun or srun): serial and parallel are the same; for speedups "
                                 f"run mpirun -np N {GPUSCALE} run {cfg} -o {out} --set reps=2"], p.stdout)
        # One rank asked for: no note.
        p = mpirun(1, "run", cfg, "-o", self.path("one.h5"), "--set", "reps=2")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("on 1 rank(s), 1 node(s)", p.stdout)
        self.assertNotIn("note: 1 rank", p.stdout)

    def test_a_rank_whose_samples_take_3x_as_long_is_named_a_straggler_with_host_and_device(self):
        cfg = self.write("c.toml", SMALL_CONFIG.replace('dtype = ["fp64", "fp32"]', 'dtype = "fp64"')
                         .replace('modes = ["serial", "parallel"]', 'modes = ["parallel"]')
                         .replace("reps = 4", "reps = 8"))
        out = self.path("slow.h5")
        p = mpirun(2, "run", cfg, "-o", out)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        set_durations(out, [0.010, 0.030])  # known timings: rank 1 takes 3x as long
        with h5py.File(out, "r") as f:
            host = s(f["ranks/hostname"][1])
            device = s(f["ranks/device_name"][1])
        r = gpuscale("report", out, "--wide")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, rf"note: case 1: straggler: rank 1 on {re.escape(host)} \(node 0, local rank 1, "
                                   rf"{re.escape(device)}\): median 3\.00x the other ranks'")
        self.assertNotIn("straggler: rank 0", r.stdout)
        j = json.loads(gpuscale("report", out, "--format", "json").stdout)
        self.assertEqual([x["rank"] for x in j[0]["stragglers"]["ranks"]], [1])
        self.assertAlmostEqual(j[0]["stragglers"]["ranks"][0]["ratio"], 3.0, places=9)
        # A threshold above what was measured names nobody; a threshold that means nothing is refused.
        ratio = j[0]["stragglers"]["ranks"][0]["ratio"]
        r = gpuscale("report", out, "--straggler-threshold", str(ratio))
        self.assertNotIn("straggler:", r.stdout)
        r = gpuscale("report", out, "--straggler-threshold", "0")
        self.assertEqual(r.returncode, 2)
        self.assertIn("--straggler-threshold: must be a number above 0", r.stderr)

    def test_info_lists_every_rank_and_why_it_uses_the_cpu(self):
        p = mpirun(2, "info")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, r"2 rank\(s\) on 1 node\(s\)")
        # The MPI and the thread level gpuscale asked of it (MULTIPLE of Open MPI before 4.1.7 where UCX may carry
        # the run: OMPI_MCA_pml names it, or leaves it to a host with an RDMA device; mpi_library.hpp).
        m = re.search(r"\n  MPI: (Open MPI v(\d+)\.(\d+)\.(\d+)|MPICH Version:\s+\S+); (MPI_THREAD_\w+) asked, "
                      r"MPI_THREAD_(SERIALIZED|MULTIPLE) provided\n", p.stdout)
        self.assertIsNotNone(m, p.stdout)
        old_ompi = m.group(2) is not None and tuple(int(x) for x in m.group(2, 3, 4)) < (4, 1, 7)
        pml = os.environ.get("OMPI_MCA_pml")
        rdma = os.path.isdir("/sys/class/infiniband") and bool(os.listdir("/sys/class/infiniband"))
        names_ucx = pml is not None and "ucx" in [x.strip() for x in pml.lstrip("^").split(",")]
        ucx = rdma if pml is None else (not names_ucx and rdma) if pml.startswith("^") else names_ucx
        self.assertEqual(m.group(5), "MPI_THREAD_MULTIPLE" if old_ompi and ucx else "MPI_THREAD_SERIALIZED", p.stdout)
        lines = [l for l in p.stdout.splitlines() if l.strip().startswith(("0 ", "1 "))]
        self.assertEqual(len(lines), 2, p.stdout)
        if " cuda " in lines[0]:
            self.skipTest("a GPU is usable here: " + p.stdout)
        self.assertTrue(all(" cpu " in l for l in lines))
        # The reason, once for both ranks, in words true of this build and machine.
        self.assertEqual(p.stdout.count("no usable CUDA device"), 1, p.stdout)
        self.assertIn(f"\n  backend: no usable CUDA device: {no_gpu_reason(p.stdout)}; running on the CPU backend\n",
                      p.stdout)
        self.assertIn("transfers between ranks: mpi (comm auto: MPI on the cpu backend)", p.stdout)

    def test_check_prints_the_plan_without_running(self):
        cfg = self.write("c.toml", SMALL_CONFIG)
        p = gpuscale("check", cfg, "--set", "size=[32,48]", "--cases")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("8 case(s)", p.stdout)
        self.assertIn("[8/8] small size=48 dtype=fp32 impl=vendor ops=20 [parallel]", p.stdout)
        self.assertIn("; timeout from each case's samples (docs/metrics.md), seed 42\n", p.stdout)
        self.assertFalse(os.path.exists(self.path("results")))
        p = gpuscale("check", cfg, "--set", "timeout=30")
        self.assertIn("; timeout 30 s per case, seed 42\n", p.stdout)


class ShippedConfigs(ScratchTest):
    def test_every_shipped_config_is_valid(self):
        configs = os.path.join(os.environ["GPUSCALE_SOURCE_DIR"], "configs")
        names = sorted(n for n in os.listdir(configs) if n.endswith(".toml"))
        self.assertIn("default.toml", names)
        for n in names:
            p = gpuscale("check", os.path.join(configs, n))
            self.assertEqual(p.returncode, 0, n + ": " + p.stderr)
            self.assertRegex(p.stdout, r"\d+ case\(s\)")

    def test_the_kernel_ladder_runs_every_kernel_of_each_dtype_next_to_the_vendor_at_a_shape_no_tile_divides(self):
        p = gpuscale("check", os.path.join(os.environ["GPUSCALE_SOURCE_DIR"], "configs", "kernel-ladder.toml"),
                     "--cases")
        self.assertEqual(p.returncode, 0, p.stderr)
        ladders = {"fp32": ("vendor", "naive", "tiled", "blocked"), "fp64": ("vendor", "naive", "tiled", "blocked"),
                   "fp16": ("vendor", "naive", "tiled", "tensor", "mma", "mma_async"),
                   "bf16": ("vendor", "naive", "tiled", "tensor", "mma", "mma_async")}
        for dtype, impls in ladders.items():
            for impl in impls:
                self.assertRegex(p.stdout, rf"size=4096 dtype={dtype} impl={impl} ")
                if dtype != "fp64":
                    self.assertRegex(p.stdout, rf"m=1000 n=1100 k=900 dtype={dtype} impl={impl} ")
        # The ladder's targets (kernels/README.md), as limits that report --check holds the kernels to.
        self.assertIn("limits of 'target-blocked' (report --check): min_of_vendor=0.6\n", p.stdout)
        self.assertIn("limits of 'target-mma-async' (report --check): min_of_vendor=0.5\n", p.stdout)
        # Each beside its own cuBLAS case, so that a run of the ladder at another size still holds its reference.
        for impl in ("blocked", "vendor"):
            self.assertRegex(p.stdout, rf"target-blocked size=4096 dtype=fp32 impl={impl} ")
        for dtype in ("fp16", "bf16"):
            for impl in ("mma_async", "vendor"):
                self.assertRegex(p.stdout, rf"target-mma-async size=4096 dtype={dtype} impl={impl} ")


class TextOfOtherWriters(ScratchTest):
    """A file of an older version or another writer may hold control characters in its strings: report's table
    escapes them, so nothing raw reaches the terminal; its CSV quotes them as RFC 4180 needs and escapes the rest."""

    def test_control_characters_in_a_file_are_escaped(self):
        out = self.path("out.h5")
        p = gpuscale("run", self.write("small.toml", SMALL_CONFIG), "-o", out)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        name = b'a\x1b[31m,"b"\r\nc'
        with h5py.File(out, "r+") as f:
            for case in f["cases"].values():
                case.attrs["name"] = np.bytes_(name)
            f["cases/0000"].attrs["note"] = np.bytes_(b"note\x07\xc2\x9b")
            f.attrs["warnings"] = np.bytes_(b"warn\x1b[2J")

        def report(*args):
            r = subprocess.run([GPUSCALE, "report", out, *args], capture_output=True, env=ENV, timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr)
            return r.stdout

        for table in (report(), report("--wide")):
            self.assertEqual([b for b in table if (b < 0x20 and b != 0x0A) or b == 0x7F], [], table)
            self.assertNotIn(b"\xc2\x9b", table)  # C1 CSI
            self.assertIn(b'a\\x1b[31m,"b"\\x0d\\x0ac', table)
            self.assertIn(b"note\\x07\\u009b", table)
            self.assertIn(b"WARNING: warn\\x1b[2J", table)
        rows = list(csv.DictReader(io.StringIO(report("--format", "csv").decode(), newline="")))
        self.assertEqual(len(rows), 4)
        self.assertEqual({r["name"] for r in rows}, {'a\\x1b[31m,"b"\r\nc'})
        self.assertEqual(json.loads(report("--format", "json"))[0]["name"], name.decode())


class MoreRanksThanCores(ScratchTest):
    def test_a_warning_in_the_output_and_the_file(self):
        cores = os.cpu_count()
        if cores > 8:
            self.skipTest(f"{cores} cores: {cores + 1} ranks are too many for a test")
        ranks = cores + 1
        out = self.path("over.h5")
        cfg = self.write("small.toml", SMALL_CONFIG.replace('dtype = ["fp64", "fp32"]', 'dtype = "fp64"'))
        p = mpirun(ranks, "run", cfg, "-o", out, timeout=300)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        want = (f"{ranks} ranks on {cores} cores: ranks that run at once compete for cores, so parallel times and "
                "speedups understate what the hardware can do")
        self.assertIn("WARNING: node ", p.stdout)
        self.assertIn(want, p.stdout)
        with h5py.File(out, "r") as f:
            self.assertIn(want, s(f.attrs["warnings"]))
        self.assertIn(want, gpuscale("report", out, "--wide").stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
