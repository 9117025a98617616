"""The Python analysis tools (tools/) on files made by the real binary: the
loader's DataFrames and numbers against `gpuscale report --format json` and
h5py, and every figure of tools/gpuscale-plot: the PNG is written and the
series it plots (its --data JSON) hold the report's numbers (speedup,
efficiency, algbw, busbw, the breakdown) and the raw samples (timeline,
per-rank medians). Bad input: one line on stderr, exit code 2."""
import json
import math
import os
import shutil
import subprocess
import sys
import unittest

try:
    import h5py
    import matplotlib  # noqa: F401 (the plot tool needs it)
    import numpy as np
    import pandas  # noqa: F401
except ImportError as e:
    sys.exit(f"e2e.plot: the Python module {e.name} is missing: run scripts/install-deps.sh "
             "(python3-h5py, python3-numpy, python3-pandas, python3-matplotlib)")

from common import ENV, ScratchTest, gpuscale, mpirun, preamble, run, s, set_durations

TOOLS = os.path.join(os.environ["GPUSCALE_SOURCE_DIR"], "tools")
PLOT = os.path.join(TOOLS, "gpuscale-plot")
sys.path.insert(0, TOOLS)
import gpuscale_data  # noqa: E402

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

GEMM = preamble(warmup=1, reps=7) + """
[[experiment]]
name = "gemm"
workload = "gemm"
size = 96
dtype = ["fp64", "fp32"]
ops = 40
modes = ["serial", "parallel"]
"""

# Collectives for the bandwidth figure, a pipeline for phases, a copy (rated in GB/s), and a case this job cannot run
# (skipped).
MIXED = preamble(warmup=1, reps=7) + """
[[experiment]]
name = "coll"
workload = "collective"
op = ["allreduce", "allgather", "sendrecv"]
dtype = "fp32"
bytes = [1024, 65536, 1048576]
iters = 3
scope = "world"
modes = ["parallel"]

[[experiment]]
name = "pipe"
workload = "pipeline"
size = 96
dtype = "fp64"
ops = 4
overlap = [false, true]
modes = ["parallel"]

[[experiment]]
name = "cp"
workload = "copy"
bytes = "64K"
ops = 4
modes = ["parallel"]

[[experiment]]
name = "alone"
workload = "collective"
op = "allreduce"
bytes = 1024
scope = "inter-node"
modes = ["parallel"]
"""

# Long enough samples (about 10 ms) that a rank sharing its core gets its share of it in every one.
STRAGGLER = preamble(warmup=1, reps=7) + """
[[experiment]]
name = "gemm"
workload = "gemm"
size = 256
dtype = "fp64"
ops = 16
modes = ["parallel"]
"""


def close(a, b, rel=1e-9):
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-300)


class Plot(ScratchTest):
    """Result files of GEMM on 1, 2 and 4 ranks and of MIXED on 2 ranks, each with its report, for all tests."""

    @classmethod
    def setUpClass(cls):
        cls.shared = ScratchTest()
        cls.shared.setUp()
        cls.files, cls.reports = {}, {}
        for name, config, ranks in (("np1", GEMM, 1), ("np2", GEMM, 2), ("np4", GEMM, 4), ("mixed", MIXED, 2)):
            out = cls.shared.path(f"{name}.h5")
            proc = mpirun(ranks, "run", cls.shared.write(f"{name}.toml", config), "-o", out)
            assert proc.returncode == 0, proc.stdout + proc.stderr
            cls.files[name] = out
            cls.reports[name] = cls.report(out)

    @classmethod
    def tearDownClass(cls):
        cls.shared.tearDown()

    @staticmethod
    def report(path):
        """{case: row} of `gpuscale report --format json`."""
        proc = gpuscale("report", path, "--format", "json")
        assert proc.returncode == 0, proc.stderr
        return {row["case"]: row for row in json.loads(proc.stdout)}

    def plot(self, *args, ok=True):
        """Runs the tool; with ok, checks that it succeeded and that every PNG it printed is one, and returns the
        figures of its --data JSON."""
        data = self.path("data.json")
        proc = run([sys.executable, PLOT, *args, "-o", self.path("png"), "--data", data])
        if not ok:
            return proc
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        printed = proc.stdout.split()
        with open(data) as f:
            figures = json.load(f)["figures"]
        self.assertEqual(printed, [fig["png"] for fig in figures])
        for png in printed:
            with open(png, "rb") as f:
                self.assertEqual(f.read(8), PNG_SIGNATURE, png)
            self.assertGreater(os.path.getsize(png), 10000, png)
        return figures

    def row(self, point):
        name = next(k for k, v in self.files.items() if v == point["file"])
        return self.reports[name][point["case"]]

    @staticmethod
    def panel(figure, name):
        return next(p for p in figure["panels"] if p["name"] == name)

    def assert_error(self, proc, *fragments):
        self.assertEqual(proc.returncode, 2, proc.stdout + proc.stderr)
        lines = proc.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, proc.stderr)
        self.assertTrue(lines[0].startswith("gpuscale-plot: error: "), lines[0])
        for frag in fragments:
            self.assertIn(frag, lines[0])

    # ---- the loader --------------------------------------------------------------------------------------------

    def test_the_loader_computes_what_the_report_prints(self):
        keys = ("median_s", "min_s", "p95_s", "slowest_ratio", "speedup", "efficiency", "op_time_s", "algbw_gbps",
                "busbw_gbps", "op_time_min_s", "op_time_max_s", "gflops", "gbps")
        rated = {k for rows in self.reports.values() for row in rows.values() for k in ("gflops", "gbps") if k in row}
        self.assertEqual(rated, {"gflops", "gbps"})  # both rates are compared below
        for name, path in self.files.items():
            m = gpuscale_data.load(path).metrics()
            for case, row in self.reports[name].items():
                if row["status"] == "skipped":
                    self.assertNotIn(case, m.index)
                    continue
                self.assertEqual(m.at[case, "slowest_rank"], row["slowest_rank"], (name, case))
                for k in keys:
                    if k in row:
                        self.assertTrue(close(m.at[case, k], row[k]), (name, case, k, m.at[case, k], row[k]))
                    else:
                        self.assertTrue(math.isnan(m.at[case, k]), (name, case, k))

    def test_the_loader_tables_hold_the_files_datasets(self):
        r = gpuscale_data.load(self.files["mixed"])
        with h5py.File(self.files["mixed"], "r") as f:
            self.assertEqual(list(r.ranks.index), list(range(2)))
            self.assertEqual(list(r.ranks["hostname"]), [s(h) for h in f["ranks/hostname"][()]])
            self.assertEqual(sorted(r.cases.index), [int(k) + 1 for k in f["cases"]])  # numbered from 1
            for k, g in f["cases"].items():
                case = int(k) + 1
                c = r.cases.loc[case]
                self.assertEqual(c["mode"], s(g.attrs["mode"]))
                self.assertEqual(c["params"], {p: s(v.item() if hasattr(v, "item") else v)
                                               for p, v in g["parameters"].attrs.items()
                                               if p not in ("warmup", "warmup_s", "reps")})
                samples = r.samples[r.samples["case"] == case].sort_values(["rank", "sample"])
                if "wall_start" not in g:
                    self.assertEqual(c["status"], "skipped")
                    self.assertEqual(len(samples), 0)
                    continue
                np.testing.assert_array_equal(samples["wall_start_s"], g["wall_start"][()].reshape(-1))
                np.testing.assert_array_equal(samples["device_time_s"], g["device_time"][()].reshape(-1))
                np.testing.assert_array_equal(samples["duration_s"],
                                              (g["wall_end"][()] - g["wall_start"][()]).reshape(-1))
                ph = r.phases[r.phases["case"] == case]
                if "phases" in g:
                    names = [s(n) for n in g["phases/names"][()]]
                    self.assertEqual(list(ph["phase"]), [names[i] for i in g["phases/phase"][()]])
                    np.testing.assert_array_equal(ph["end_s"], g["phases/end"][()])
                else:
                    self.assertEqual(len(ph), 0)
            self.assertEqual(set(r.phases["phase"]), {"compute", "transfer"})

    # ---- the figures -------------------------------------------------------------------------------------------

    def noise(self, point):
        """What the report says the host did in the case of `point`, as the figures name it ("" for nothing)."""
        host = self.row(point)["host"]
        return ", ".join(word for key, word in (("busy", "host busy"), ("descheduled", "descheduled"),
                                                ("oversubscribed", "oversubscribed")) if host.get(key))

    def test_the_figures_mark_the_cases_the_report_flags_noisy(self):
        (fig,) = self.plot("scaling", self.files["np1"], self.files["np2"], self.files["np4"])
        seen = set()
        for p in fig["panels"]:
            for line in p["series"]:
                for point in line["points"]:
                    self.assertEqual(point["noise"], self.noise(point), point)
                    seen.add(point["noise"])
        # 4 ranks on fewer cores (this machine has 2): the report flags those cases, and so does the figure.
        cores = len(os.sched_getaffinity(0))
        if cores < 4:
            self.assertTrue(any("oversubscribed" in n for n in seen), seen)
            for row in self.reports["np4"].values():
                self.assertEqual(row["host"]["oversubscribed"], f"4 ranks on {cores} cores of node 0")
        # One case's figures say it in their title.
        for kind in ("timeline", "ranks"):
            (one,) = self.plot(kind, self.files["np4"], "--case", "1")
            self.assertEqual(one["noise"], self.noise({"file": self.files["np4"], "case": 1}))
            self.assertIn(f" -- {one['noise']}: numbers doubtful", one["title"])

    def test_without_a_gpuscale_binary_the_figures_say_they_cannot_mark_noisy_cases(self):
        alone = self.path("alone")
        os.makedirs(alone)
        for name in ("gpuscale-plot", "gpuscale_data.py"):
            shutil.copy(os.path.join(TOOLS, name), alone)
        env = {k: v for k, v in ENV.items() if k != "GPUSCALE_BIN"}
        env["PATH"] = "/usr/bin:/bin"
        proc = subprocess.run([sys.executable, os.path.join(alone, "gpuscale-plot"), "scaling", self.files["np1"],
                               self.files["np2"], "-o", self.path("png"), "--data", self.path("d.json")],
                              capture_output=True, text=True, env=env, timeout=120)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(proc.stderr, "gpuscale-plot: note: no gpuscale binary found (GPUSCALE_BIN, beside this "
                                      "tool, PATH): the figures cannot mark cases measured on a busy host\n")
        with open(self.path("d.json")) as f:
            (fig,) = json.load(f)["figures"]
        self.assertEqual({q["noise"] for p in fig["panels"] for s in p["series"] for q in s["points"]}, {None})

    def test_scaling_over_files_of_1_2_and_4_ranks_plots_the_reports_speedup_and_efficiency(self):
        (fig,) = self.plot("scaling", self.files["np1"], self.files["np2"], self.files["np4"])
        self.assertEqual(fig["kind"], "scaling")
        self.assertIn("np1.h5, np2.h5, np4.h5", fig["title"])
        expected = {(self.files[n], case) for n in ("np1", "np2", "np4") for case, row in self.reports[n].items()
                    if "speedup" in row}
        self.assertEqual(len(expected), 6)  # fp64 and fp32 on each file
        speedup, efficiency = self.panel(fig, "speedup"), self.panel(fig, "efficiency")
        self.assertEqual(len(speedup["series"]), 2)  # one line per dtype, its points from the three files
        for sp, eff_line in zip(speedup["series"], efficiency["series"]):
            self.assertEqual(sp["x"], [1, 2, 4])
            self.assertRegex(sp["label"], r"^gemm dtype=fp(64|32), parallel, 1 node$")
            for x, y, eff, point in zip(sp["x"], sp["y"], eff_line["y"], sp["points"]):
                expected.remove((point["file"], point["case"]))
                row = self.row(point)
                self.assertEqual(row["ranks"], x)
                self.assertTrue(close(y, row["speedup"]), (point, y, row["speedup"]))
                self.assertTrue(close(eff, 100 * row["efficiency"]), (point, eff, row["efficiency"]))
        self.assertEqual(expected, set())
        time = self.panel(fig, "time")
        modes = [line["label"].split(", ")[1] for line in time["series"]]
        self.assertEqual(sorted(modes), ["parallel", "parallel", "serial", "serial"])
        for line, mode in zip(time["series"], modes):
            for y, point in zip(line["y"], line["points"]):
                row = self.row(point)
                self.assertEqual(row["mode"], mode)
                self.assertTrue(close(y, 1e3 * row["median_s"]))
        for p in fig["panels"]:
            self.assertTrue(p["xlabel"] and p["ylabel"] and p["title"], p["name"])
        self.assertIn("[ms]", time["ylabel"])

    def test_bandwidth_plots_algbw_and_busbw_by_size_per_op(self):
        (fig,) = self.plot("bandwidth", self.files["mixed"])
        rows = self.reports["mixed"]
        algbw, busbw = self.panel(fig, "algbw"), self.panel(fig, "busbw")
        self.assertEqual([line["label"] for line in algbw["series"]],
                         ["coll op=allreduce", "coll op=allgather", "coll op=sendrecv"])
        seen = set()
        with h5py.File(self.files["mixed"], "r") as f:
            for a, b in zip(algbw["series"], busbw["series"]):
                self.assertEqual(a["x"], sorted(a["x"]))
                self.assertEqual(len(a["x"]), 3)
                for x, ya, yb, point in zip(a["x"], a["y"], b["y"], a["points"]):
                    row = rows[point["case"]]
                    self.assertEqual(row["params"]["op"], a["label"].split("=")[1])
                    self.assertEqual(x, np.mean(f[f"cases/{point['case'] - 1:04d}/op_bytes"][()]))
                    self.assertTrue(close(ya, row["algbw_gbps"]))
                    self.assertTrue(close(yb, row["busbw_gbps"]))
                    seen.add(point["case"])
        self.assertEqual(seen, {c for c, row in rows.items() if "algbw_gbps" in row})
        self.assertIn("GB/s", algbw["ylabel"])

    def test_the_timeline_shows_serial_ranks_one_after_another_and_parallel_ones_at_once(self):
        path = self.files["np2"]
        for case, row in self.reports["np2"].items():
            (fig,) = self.plot("timeline", path, "--case", str(case))
            self.assertIn(f"np2.h5: case {case} gemm [{row['mode']}]", fig["title"])
            spans = self.panel(fig, "samples")["series"]
            self.assertEqual([lane["rank"] for lane in spans], [0, 1])
            with h5py.File(path, "r") as f:
                g = f[f"cases/{case - 1:04d}"]
                for lane in spans:
                    start = np.array(lane["x"]) / 1e3 + fig["t0_s"]
                    end = np.array(lane["x_end"]) / 1e3 + fig["t0_s"]
                    np.testing.assert_allclose(start, g["wall_start"][lane["rank"]], rtol=0, atol=1e-9)
                    np.testing.assert_allclose(end, g["wall_end"][lane["rank"]], rtol=0, atol=1e-9)
            first, second = spans
            if row["mode"] == "serial":  # rank 1's turn after rank 0's
                self.assertGreater(min(second["x"]), max(first["x_end"]))
            else:  # sample i on both ranks at once: both start once both have ended sample i - 1 (a barrier)
                for i in range(1, len(first["x"])):
                    self.assertGreaterEqual(min(first["x"][i], second["x"][i]),
                                            max(first["x_end"][i - 1], second["x_end"][i - 1]), i)

    def test_the_timeline_colours_phases(self):
        r = gpuscale_data.load(self.files["mixed"])
        case = int(r.cases.index[r.cases["name"] == "pipe"][0])
        (fig,) = self.plot("timeline", self.files["mixed"], "--case", str(case))
        phases = [line for line in self.panel(fig, "samples")["series"] if line.get("phase")]
        self.assertEqual([line["label"] for line in phases], ["compute", "transfer"])
        with h5py.File(self.files["mixed"], "r") as f:
            p = f[f"cases/{case - 1:04d}/phases"]
            for k, line in enumerate(phases):
                sel = p["phase"][()] == k
                self.assertEqual(line["rank"], list(p["rank"][sel]))
                np.testing.assert_allclose(np.array(line["x"]) / 1e3 + fig["t0_s"], p["start"][sel], rtol=0,
                                           atol=1e-9)
                self.assertEqual(len(line["x"]), 2 * 7 * 4)  # ranks x reps x ops

    def test_ranks_plots_each_ranks_throughput_from_its_median(self):
        path = self.files["np4"]
        with h5py.File(path, "r") as f:
            for case, row in self.reports["np4"].items():
                (fig,) = self.plot("ranks", path, "--case", str(case))
                g = f[f"cases/{case - 1:04d}"]
                medians = np.median(g["wall_end"][()] - g["wall_start"][()], axis=1)
                (bars,) = self.panel(fig, "ranks")["series"]
                self.assertEqual(bars["x"], [0, 1, 2, 3])
                np.testing.assert_allclose(bars["median_s"], medians, rtol=1e-12)
                np.testing.assert_allclose(bars["y"], g.attrs["flops_per_sample"] / medians / 1e9, rtol=1e-12)
                self.assertEqual(int(np.argmax(medians)), row["slowest_rank"])
                report_stragglers = [x["rank"] for x in row.get("stragglers", {}).get("ranks", [])]
                self.assertEqual(fig["stragglers"], report_stragglers, case)
                self.assertEqual([r for r, slow in zip(bars["x"], bars["straggler"]) if slow], report_stragglers)
                self.assertIn("GF/s", self.panel(fig, "ranks")["ylabel"])
                reference = self.panel(fig, "ranks")["reference"]  # the report's GF/s/rank, not the bars' median
                self.assertTrue(close(reference["y"], row["gflops"]), (case, reference, row["gflops"]))
                self.assertIn("report's GF/s/rank", reference["label"])

    def test_the_ranks_line_is_the_report_s_algbw_of_a_transfer_and_gb_s_of_a_copy(self):
        rows = self.reports["mixed"]
        (copy,) = [c for c, row in rows.items() if row["name"] == "cp"]
        (fig,) = self.plot("ranks", self.files["mixed"], "--case", str(copy))
        reference = self.panel(fig, "ranks")["reference"]
        self.assertTrue(close(reference["y"], rows[copy]["gbps"]), (reference, rows[copy]["gbps"]))
        self.assertIn("report's GB/s/rank", reference["label"])
        transfers = [c for c, row in rows.items() if "algbw_gbps" in row]
        self.assertIn("sendrecv", {rows[c]["params"]["op"] for c in transfers})
        for case in transfers:
            (fig,) = self.plot("ranks", self.files["mixed"], "--case", str(case))
            p = self.panel(fig, "ranks")
            self.assertTrue(close(p["reference"]["y"], rows[case]["algbw_gbps"]), (case, p["reference"]))
            self.assertIn(f"report's algbw {rows[case]['algbw_gbps']:.3g} GB/s", p["reference"]["label"])
            self.assertIn("algbw per rank [GB/s]", p["ylabel"])

    def test_a_rank_whose_samples_take_3x_as_long_is_the_straggler_in_red(self):
        out = self.path("straggler.h5")
        proc = mpirun(2, "run", self.write("straggler.toml", STRAGGLER), "-o", out)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        set_durations(out, [0.010, 0.030])  # known timings: rank 1 takes 3x as long
        self.assertEqual([x["rank"] for x in self.report(out)[1]["stragglers"]["ranks"]], [1])
        (fig,) = self.plot("ranks", out, "--case", "1")
        self.assertEqual(fig["stragglers"], [1])
        self.assertIn("straggler(s): rank 1", fig["title"])
        (bars,) = self.panel(fig, "ranks")["series"]
        self.assertEqual(bars["straggler"], [False, True])
        self.assertAlmostEqual(bars["y"][1], bars["y"][0] / 3, places=9)

    def test_all_writes_every_figure_that_applies(self):
        figures = self.plot("all", self.files["mixed"])
        ran = [c for c, row in self.reports["mixed"].items() if row["status"] != "skipped"]
        expected = ["mixed-bandwidth.png"] + [f"mixed-case{c:04d}-{k}.png" for c in ran for k in ("timeline", "ranks")]
        self.assertEqual([os.path.basename(f["png"]) for f in figures], expected)  # no scaling: all parallel
        figures = self.plot("all", self.files["np2"], "--case", "1")  # one rank count: no scaling
        self.assertEqual([os.path.basename(f["png"]) for f in figures],
                         ["np2-case0001-timeline.png", "np2-case0001-ranks.png"])
        figures = self.plot("all", self.files["np1"], self.files["np2"], "--case", "1")
        self.assertEqual([os.path.basename(f["png"]) for f in figures],
                         ["scaling.png", "np1-case0001-timeline.png", "np1-case0001-ranks.png",
                          "np2-case0001-timeline.png", "np2-case0001-ranks.png"])

    def rows_file(self, name, fmt="json"):
        """`gpuscale report --format FMT` of the file `name` written to a JSON file, and its rows."""
        proc = gpuscale("report", self.files[name], "--format", fmt)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        path = self.write(f"{name}-{fmt}.json", proc.stdout)
        rows = json.loads(proc.stdout)
        return path, rows["cases"] if isinstance(rows, dict) else rows

    def assert_bars_hold(self, fig, rows):
        """The breakdown figure's bars are `rows` (those with a breakdown), in order, each part in ms."""
        (p,) = fig["panels"]
        self.assertEqual(p["style"], "stacked")
        self.assertEqual([(pt["file"], pt["case"]) for pt in p["points"]], [(f, r["case"]) for f, r in rows])
        self.assertEqual(len(p["x"]), len(rows))
        for line in p["series"]:
            want = [1e3 * r["breakdown"][line["part"]] for _, r in rows]
            np.testing.assert_allclose(line["y"], want, rtol=1e-12, err_msg=line["label"])
        np.testing.assert_allclose(p["adds_up"], [100 * r["breakdown"]["sum_s"] / r["breakdown"]["total_s"]
                                                  for _, r in rows], rtol=1e-12)
        self.assertIn("[ms]", p["ylabel"])

    def test_breakdown_stacks_the_reports_parts_a_bar_per_case_that_ran(self):
        path, rows = self.rows_file("mixed")
        (fig,) = self.plot("breakdown", path)
        self.assertEqual(fig["kind"], "breakdown")
        self.assertEqual(os.path.basename(fig["png"]), "mixed-json-breakdown.png")
        ran = [(path, r) for r in rows if r["status"] != "skipped"]
        self.assertLess(len(ran), len(rows))  # the skipped case has no breakdown, so no bar
        self.assert_bars_hold(fig, ran)
        (p,) = fig["panels"]
        self.assertEqual([line["part"] for line in p["series"]],
                         ["compute_s", "exposed_transfer_s", "overhead_s", "wait_s", "wire_s", "total_s"])
        pipe = [i for i, (_, r) in enumerate(ran) if r["name"] == "pipe"]
        self.assertEqual([p["x"][i] for i in pipe], [f"#{ran[i][1]['case']} pipe overlap={v}"
                                                      for i, v in zip(pipe, (False, True))])
        self.assertFalse(any(pt["predicted"] for pt in p["points"]))

    def test_breakdown_of_several_files_sets_each_case_side_by_side_by_rank_count(self):
        files = {n: self.rows_file(n) for n in ("np4", "np1", "np2")}
        (fig,) = self.plot("breakdown", *(files[n][0] for n in ("np4", "np1", "np2")))
        self.assertEqual(os.path.basename(fig["png"]), "breakdown.png")
        want = []
        for case in range(1, 5):  # each case of the config (dtype x mode), on 1, 2 and 4 ranks
            for n in ("np1", "np2", "np4"):
                path, rows = files[n]
                want.append((path, next(r for r in rows if r["case"] == case)))
        self.assert_bars_hold(fig, want)
        self.assertEqual([r["ranks"] for _, r in want], [1, 2, 4] * 4)
        self.assertRegex(fig["panels"][0]["x"][0], r"^#1 gemm dtype=fp64 mode=serial ranks=1 np1-json\.json$")
        # Each bar says what the host did in its case, as the report's row does (4 ranks on 2 cores: oversubscribed).
        for (path, row), point in zip(want, fig["panels"][0]["points"]):
            name = next(n for n, (p, _) in files.items() if p == path)
            self.assertEqual(point["noise"], self.noise({"file": self.files[name], "case": row["case"]}))

    def test_breakdown_takes_json_full_and_predicted_rows_hatched(self):
        full, rows = self.rows_file("np2", "json-full")
        first = next(r for r in rows if r["case"] == 2)
        predicted = {"model": "a prediction", "cases": [dict(first, ranks=8, predicted=True, breakdown={
            "total_s": 0.004, "compute_s": 0.002, "exposed_transfer_s": 0.001, "overhead_s": 0.0005, "wait_s": 0.0003,
            "wire_s": 0.0015, "sum_s": 0.0038})]}
        guess = self.write("predicted.json", json.dumps(predicted))
        (fig,) = self.plot("breakdown", full, guess)
        want = [(full, r) for r in rows]
        want.insert(2, (guess, predicted["cases"][0]))  # after case 2 of 2 ranks: the same case on 8
        self.assert_bars_hold(fig, want)
        self.assertEqual([pt["predicted"] for pt in fig["panels"][0]["points"]], [False, False, True, False, False])
        self.assertIsNone(fig["panels"][0]["points"][2]["noise"])  # a prediction: no host

    def test_help_explains_every_figure(self):
        self.assertTrue(os.access(PLOT, os.X_OK))
        proc = run([PLOT, "--help"])
        self.assertEqual(proc.returncode, 0, proc.stderr)
        for word in ("scaling FILE", "timeline FILE --case N", "bandwidth FILE", "ranks FILE --case N", "all FILE",
                     "breakdown ROWS.json", "--output-dir", "--data"):
            self.assertIn(word, proc.stdout)

    # ---- bad input ---------------------------------------------------------------------------------------------

    def test_bad_input_is_one_line_and_exit_code_2(self):
        missing = self.path("missing.h5")
        self.assert_error(self.plot("scaling", missing, ok=False), f"{missing}: no such file")
        text = self.write("text.h5", "not hdf5\n")
        self.assert_error(self.plot("ranks", text, "--case", "0", ok=False), "not an HDF5 file")
        np2 = self.files["np2"]
        self.assert_error(self.plot("timeline", np2, "--case", "9", ok=False), "no case 9 (cases: 1 to 4)")
        self.assert_error(self.plot("bandwidth", np2, ok=False), "no transfer case in")
        mixed = self.files["mixed"]
        self.assert_error(self.plot("scaling", mixed, ok=False), "has a speedup")
        self.assert_error(self.plot("scaling", np2, ok=False), f"every speedup in {np2} is at 2 ranks", "scaling needs "
                          "two rank counts or more")
        self.assert_error(self.plot("scaling", np2, np2, ok=False), "is at 2 ranks")  # one shape, twice
        skipped = next(c for c, row in self.reports["mixed"].items() if row["status"] == "skipped")
        self.assert_error(self.plot("ranks", mixed, "--case", str(skipped), ok=False),
                          f"case {skipped} was skipped", "no samples")
        self.assert_error(self.plot("breakdown", np2, ok=False), f"{np2}: not JSON", "gpuscale report --format json")
        no_rows = self.write("object.json", '{"runs": []}')
        self.assert_error(self.plot("breakdown", no_rows, ok=False), "neither a list of rows nor an object")
        skipped_only = self.write("skipped.json", json.dumps([{"case": 1, "status": "skipped"}]))
        self.assert_error(self.plot("breakdown", skipped_only, ok=False), "no row in", "has a breakdown")
        self.assert_error(self.plot("breakdown", missing, ok=False), f"{missing}: no such file")
        proc = self.plot("timeline", np2, ok=False)
        self.assertEqual(proc.returncode, 2)
        self.assertIn("timeline needs --case N", proc.stderr)
        self.assertFalse(os.path.exists(self.path("png")))  # nothing written on bad input


if __name__ == "__main__":
    unittest.main(verbosity=2)
