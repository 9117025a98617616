"""The cost model end to end: `gpuscale model` fits real result files (gemm on
1 rank, collectives on 2), `gpuscale predict` predicts another job's cases and,
--against a measured run, prints measured / predicted and how many measured
values fell inside their interval, computed from the two (checked here from its
own JSON: computed right, not how accurate it is: the machine is loaded);
cases whose host makes them doubtful are left out of a fit and named (files
edited so that the verdict is known: no host readings, or a node of fewer
cores than the ranks); `check --model` takes its sample times from the model;
every mistake a user can make says so on one line."""
import json
import os
import shutil
import unittest

from common import InputErrorTest, ScratchTest, gpuscale, mpirun, preamble, rewrite_digest

CONFIG = preamble(warmup=1, reps=5, threads=1) + """
[[experiment]]
name = "gemm"
workload = "gemm"
size = [64, 128]
ops = 4

[[experiment]]
name = "coll"
workload = "collective"
op = ["allreduce", "allgather"]
bytes = [65536, 1048576]
modes = ["parallel"]
"""


class Fitted(InputErrorTest):
    """One run on 1 rank and one on 2 ranks of CONFIG, and a model fitted to both, shared by the tests."""

    @classmethod
    def setUpClass(cls):
        cls.shared = ScratchTest()
        cls.shared.setUp()
        cls.cfg = cls.shared.write("m.toml", CONFIG)
        cls.one, cls.two = cls.shared.path("one.h5"), cls.shared.path("two.h5")
        cls.runs = [mpirun(n, "run", cls.cfg, "-o", out) for n, out in ((1, cls.one), (2, cls.two))]
        cls.model = cls.shared.path("model.json")
        # Which cases a loaded machine makes noisy is not known beforehand: all are fitted here; the cases left out
        # are checked on files whose verdict is known (Noisy, below).
        cls.fit = gpuscale("model", cls.one, cls.two, "-o", cls.model, "--include-noisy")

    @classmethod
    def tearDownClass(cls):
        cls.shared.tearDown()

    def test_model_writes_a_readable_file_of_its_terms_and_sources(self):
        for p in self.runs:
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(self.fit.returncode, 0, self.fit.stdout + self.fit.stderr)
        self.assertIn(self.model + ": fitted from 2 file(s)", self.fit.stdout)
        self.assertIn("gemm fp64 (vendor, cpu): 2 size(s)", self.fit.stdout)
        # Whether a latency per step can be told from the bandwidth at two sizes depends on the samples: the
        # bandwidth is always fitted (docs/model.md).
        self.assertRegex(self.fit.stdout, r"allreduce over mpi \(cpu\): (latency .* per step inside a node, )?busbw ")
        # Each fit's training error under it: gemm's 4 cases of each size (serial and parallel on 1 and 2 ranks)
        # against their size's rate.
        self.assertRegex(self.fit.stdout, r"gemm fp64 \(vendor, cpu\): .*\n    fit error \d+\.\d% rms over 8 case\(s\)")
        with open(self.model) as f:
            m = json.load(f)
        self.assertEqual(m["format"], "gpuscale-model")
        self.assertEqual([s["path"] for s in m["files"]], [self.one, self.two])
        self.assertEqual(sorted(t["op"] for t in m["transfers"]), ["allgather", "allreduce"])
        for t in m["transfers"]:
            self.assertGreater(t["busbw_intra_gbps"], 0)
            self.assertIsNone(t["busbw_inter_gbps"])  # nothing ran between nodes
            self.assertEqual(len(t["points"]), 2)
        # The 1-rank file's collectives move nothing: left out, and said.
        self.assertIn("transfers in groups of one rank move nothing between ranks: not fitted", m["notes"])
        self.assertEqual(len(m["cases"]), 8)
        self.assertEqual(m["format_version"], 2)
        # What the run's MPI ran: Open MPI 4.1's tuned by its fixed rules (the segmented ring at 64 KiB on 2 ranks,
        # Rabenseifner at 1 MiB, the two-process allgather); another MPI names none, and the ring is taken.
        algorithms = {(t["op"], p["bytes"]): p["algorithm"] for t in m["transfers"] for p in t["points"]}
        if m["files"][1]["mpi_library"].startswith("Open MPI v4.1."):
            self.assertEqual(m["files"][1]["mpi_settings"]["coll_tuned_use_dynamic_rules"], "0")
            self.assertEqual(algorithms, {("allreduce", 65536): "segmented_ring", ("allreduce", 1048576): "rabenseifner",
                                          ("allgather", 65536): "two_proc", ("allgather", 1048576): "two_proc"})
            self.assertIn("as the MPI ran it: segmented_ring (2 ranks), rabenseifner (2 ranks)", self.fit.stdout)
        else:
            self.assertEqual(set(algorithms.values()), {""})
            self.assertNotIn("as the MPI ran it", self.fit.stdout)
        self.assertEqual(m["gemm"][0]["fit_error"]["cases"], 8)
        self.assertEqual(m["gemm"][0]["fit_error"]["terms"], 2)
        for t in m["transfers"]:  # a case per point; the bandwidth always fitted, the latency where the samples tell it
            self.assertEqual(t["fit_error"]["cases"], len(t["points"]))
            self.assertIn(t["fit_error"]["terms"], (1, 2))

    def test_predict_against_a_measured_run_computes_each_error_from_the_two(self):
        p = gpuscale("predict", self.model, "--against", self.two, "--format", "json")
        self.assertEqual(p.returncode, 0, p.stderr)
        out = json.loads(p.stdout)
        self.assertEqual(out["job"]["ranks"], 2)  # the job of --against
        self.assertEqual(out["job"]["nodes"], 1)
        transfers = [c for c in out["cases"] if c["workload"] == "collective"]
        self.assertEqual(len(transfers), 4)
        for c in transfers:
            self.assertEqual(c["status"], "predicted", c)
            measured, predicted = c["measured_op_time_s"], c["predicted_op_time_s"]
            self.assertAlmostEqual(c["measured_over_predicted"], measured / predicted, places=9)
            self.assertAlmostEqual(c["signed_error"], measured / predicted - 1, places=9)
            # Two sizes for two terms (nothing left to judge the fit by), or for the bandwidth alone where the
            # samples could not tell a latency (one run, which shows no spread between runs): no interval, and why.
            self.assertNotIn("predicted_op_time_lo_s", c)
            self.assertNotIn("inside_interval", c)
            self.assertRegex(c["no_interval"], r"leave no degree of freedom|fitted from one run")
            self.assertGreater(c["predicted_busbw_gbps"], 0)
            self.assertEqual(c["params"]["inplace"], False)
            self.assertAlmostEqual(c["measured_breakdown"]["total_s"], c["measured_median_s"], places=12)
            self.assertAlmostEqual(c["breakdown"]["wire_s"], predicted, places=12)  # one operation a sample
        gemm = [c for c in out["cases"] if c["workload"] == "gemm"]
        for c in gemm:
            self.assertAlmostEqual(c["measured_over_predicted"], c["measured_median_s"] / c["predicted_median_s"],
                                   places=9)
            self.assertEqual(c["inside_interval"], c["lo"] <= c["measured_median_s"] <= c["hi"])
            self.assertLessEqual(c["lo"], c["predicted_median_s"])
            self.assertGreaterEqual(c["hi"], c["predicted_median_s"])
            b = c["breakdown"]
            self.assertAlmostEqual(b["sum_s"], c["predicted_median_s"], places=12)
        for c in (c for c in gemm if c["mode"] == "parallel"):
            self.assertIn("predicted_speedup", c)
            self.assertIn("measured_speedup", c)
        whats = [s["what"] for s in out["summary"]]
        self.assertEqual(whats, ["gemm", "collective allreduce", "collective allgather"])
        inside = sum(1 for c in gemm if c["inside_interval"])
        self.assertEqual((out["summary"][0]["inside_interval"], out["summary"][0]["with_interval"]), (inside, 4))
        self.assertEqual((out["total"]["inside_interval"], out["total"]["with_interval"], out["total"]["cases"]),
                         (inside, 4, 8))
        ratios = [c["measured_over_predicted"] for c in gemm]
        self.assertAlmostEqual(out["summary"][0]["max_ratio"], max(ratios), places=9)
        # The table: measured speedup beside the predicted one, the factor and the signed error, and the count.
        t = gpuscale("predict", self.model, "--against", self.two)
        self.assertEqual(t.returncode, 0, t.stderr)
        self.assertRegex(t.stdout, r"speedup +measured +measured speedup +m/p +error +in 95%")
        self.assertIn("%d of 4 measured values inside the 95%% interval; 4 measured value(s) had no interval" % inside,
                      t.stdout.replace("\n  ", " "))

    def test_predict_breakdown_shows_the_predicted_parts_and_the_measured_ones(self):
        p = gpuscale("predict", self.model, "--against", self.two, "--breakdown")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("\nwhere the time goes:\n", p.stdout)
        self.assertIn("[parallel] predicted\n", p.stdout)
        self.assertIn("[parallel] measured\n", p.stdout)

    def test_predict_a_bigger_job_from_result_files_flags_what_it_extrapolates(self):
        p = gpuscale("predict", self.one, self.two, "--ranks", "4", "--nodes", "2", "--include-noisy")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("predicted for 4 ranks on 2 nodes, backend cpu, comm mpi, from " + self.one + " " + self.two +
                      " (fitted now)", p.stdout.replace("\n  ", " "))
        text = p.stdout.replace("\n  ", " ")
        # The files measured nothing between nodes: the world group of 4 ranks on 2 nodes cannot be predicted.
        self.assertIn("not predicted: allreduce: the files measured no bandwidth between nodes (no group across "
                      "nodes)", text)
        q = gpuscale("predict", self.model, "--ranks", "4", "--format", "json")
        out = json.loads(q.stdout)
        ar = [c for c in out["cases"] if c["params"].get("op") == "allreduce"]
        for c in ar:
            self.assertIn("allreduce on 4 ranks, beyond the 2 measured", c["extrapolated"])

    def test_predict_a_config_lists_what_the_model_cannot_predict_with_the_reason(self):
        cfg = self.write("other.toml", '[defaults]\nbackend = "cpu"\n[[experiment]]\nname = "x"\n'
                         'workload = "collective"\nop = "sendrecv"\nmodes = ["parallel"]\n'
                         '[[experiment]]\nname = "y"\nworkload = "gemm"\ndtype = "fp32"\nmodes = ["parallel"]\n')
        p = gpuscale("predict", self.model, "--ranks", "2", "--config", cfg, "--format", "json")
        self.assertEqual(p.returncode, 0, p.stderr)
        cases = json.loads(p.stdout)["cases"]
        self.assertEqual([c["status"] for c in cases], ["not predicted", "not predicted"])
        self.assertEqual(cases[0]["reason"], "no fit for sendrecv over mpi on the cpu backend in the model's files")
        self.assertEqual(cases[1]["reason"], "no GEMM rate for fp32 (vendor) on the cpu backend in the model's files")

    def edited(self, name, keys, value):
        """The fitted model with the value at `keys` (a path of keys and indexes) set to `value`, JSON text."""
        with open(self.model) as f:
            o = json.load(f)
        at = o
        for k in keys[:-1]:
            at = at[k]
        at[keys[-1]] = "@VALUE@"
        return self.write(name, json.dumps(o).replace('"@VALUE@"', value))

    def test_predict_refuses_a_hand_edited_model_on_one_line_naming_the_key(self):
        edits = [
            (["gemm", 0, "points", 0, "gflops_per_core"], "-2",
             "gemm[0].points[0].gflops_per_core: must be a number above 0, got -2"),
            (["transfers", 0, "busbw_intra_gbps"], "1e999",
             "transfers[0].busbw_intra_gbps: must be a number a double holds (at most about 1.8e308), got 1e999"),
            (["sample_overhead_s"], '"fast"', 'sample_overhead_s: must be a number from 0 to 2592000, got "fast"'),
            (["cases", 0, "mode"], '"sideways"', 'cases[0].mode: must be one of serial, parallel; got "sideways"'),
            (["cases", 0, "params", "size"], "64.5", "cases[0].params.size: must be an integer, got 64.5"),
            (["format_version"], '"2"', 'format_version: must be an integer (this gpuscale reads 2), got "2"'),
            (["format_version"], "3", "model format version 3 (written by gpuscale "),
            (["gemm", 0, "fit_error", "terms"], "99", "gemm[0].fit_error.terms: must be at most the fit's cases, 8, "
                                                      "got 99"),
            (["transfers", 0, "points", 0, "algorithm"], '"fastest"',
             'transfers[0].points[0].algorithm: must be one of ring, segmented_ring, recursive_doubling, '
             'rabenseifner, bruck, two_proc, neighbor; got "fastest"'),
            (["files", 0, "mpi_settings"], '{"coll": 3}', "files[0].mpi_settings.coll: must be a string, got 3"),
        ]
        for i, (keys, value, message) in enumerate(edits):
            with self.subTest(keys=keys, value=value):
                path = self.edited("edit%d.json" % i, keys, value)
                self.assert_input_error(gpuscale("predict", path, "--ranks", "2"), path + ": " + message)
        self.assert_input_error(gpuscale("predict", self.edited("newer.json", ["format_version"], "3"), "--ranks", "2"),
                                " is newer than this gpuscale reads (2); predict with that gpuscale or a newer one, or "
                                "fit it again with this one ('gpuscale model')")
        self.assert_input_error(gpuscale("predict", self.one, self.model, "--ranks", "2"),
                                self.model + ": a model file among result files; give either one model file or "
                                "result files to fit")
        empty = self.write("empty.json", "")
        self.assert_input_error(gpuscale("predict", empty, "--ranks", "2"), empty + ": the file is empty, not a model")
        self.assert_input_error(gpuscale("predict", self.one, empty, "--ranks", "2"), empty + ": the file is empty")

    def test_check_with_a_model_takes_its_sample_times_from_it(self):
        p = gpuscale("check", self.cfg, "--ranks", "2", "--model", self.model)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("rates: model " + self.model + " (fitted from 2 file(s)) for the sample times of 8 of 8 "
                      "case(s)", p.stdout.replace("\n  ", " "))

    def test_names_from_a_file_are_printed_with_their_control_characters_escaped(self):
        import shutil
        import h5py
        import numpy as np
        edited = self.path("edited.h5")
        shutil.copy(self.two, edited)
        with h5py.File(edited, "r+") as f:
            for c in f["cases"].values():  # clear the screen, retitle the terminal
                c.attrs.create("name", np.bytes_(b"x\x1b[2J\x1b]0;owned\x07"))
        p = gpuscale("predict", edited, "--ranks", "4", "--include-noisy")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("x\\x1b[2j\\x1b]0;owned\\x07", p.stdout.lower())
        self.assertNotIn("\x1b", p.stdout + p.stderr)
        self.assertNotIn("\x07", p.stdout + p.stderr)


    def test_a_poor_fit_in_the_model_file_is_repeated_by_predict(self):
        with open(self.model) as f:
            o = json.load(f)
        o["gemm"][0]["fit_error"]["rel_rms"] = 0.582
        o["gemm"][0]["fit_error"]["poor"] = "one case far off: one.h5 case 2 measured 3.1x the fit"
        path = self.write("poor.json", json.dumps(o))
        p = gpuscale("predict", path, "--ranks", "2")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("poor fit, prediction doubtful: gemm fp64 (vendor, cpu): fit error 58.2% rms over 8 case(s)",
                      p.stdout.replace("\n  ", " "))
        self.assertIn("one case far off: one.h5 case 2 measured 3.1x the fit", p.stdout.replace("\n  ", " "))

    def test_against_a_file_of_other_cases_says_what_it_holds(self):
        cfg = self.write("copy.toml", preamble(warmup=1, reps=3, threads=1) +
                         '\n[[experiment]]\nname = "c"\nworkload = "copy"\nbytes = 65536\nmodes = ["parallel"]\n')
        other = self.path("other.h5")
        r = mpirun(2, "run", cfg, "-o", other)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assert_input_error(gpuscale("predict", self.model, "--against", other),
                                other + " holds 1 case of copy.toml, none of the model's 4 gemm and 4 collective "
                                "cases; --against takes a run of the same cases on the job predicted")

    def test_json_where_a_result_file_belongs_says_what_it_looks_like(self):
        report = self.path("report.json")
        with open(report, "w") as f:
            f.write(gpuscale("report", self.two, "--format", "json").stdout)
        self.assert_input_error(gpuscale("predict", self.model, "--against", report),
                                report + ": not a gpuscale result file (it looks like report --format json output); "
                                "--against takes a result file (HDF5) that 'gpuscale run' wrote")
        self.assert_input_error(gpuscale("predict", report, "--ranks", "2"),
                                report + ": not a gpuscale model file (it looks like report --format json output)")
        self.assert_input_error(gpuscale("model", report, "-o", self.path("m.json")),
                                report + ": not a gpuscale result file (it looks like report --format json output); "
                                "a model is fitted to the result files (HDF5) that 'gpuscale run' writes")
        self.assert_input_error(gpuscale("model", self.two, self.model, "-o", self.path("m.json")),
                                self.model + ": not a gpuscale result file (it looks like a gpuscale model file)")
        self.assertFalse(os.path.exists(self.path("m.json")))

    def test_include_noisy_with_a_model_file_has_nothing_to_fit(self):
        self.assert_input_error(gpuscale("predict", self.model, "--ranks", "2", "--include-noisy"),
                                "--include-noisy applies where predict fits result files, and " + self.model +
                                " is a model file, fitted already: fit it again with 'gpuscale model "
                                "--include-noisy RESULT_FILES...")


def known_noise(src, dst, node_cores=None):
    """A copy of result file `src` whose noise verdict is known: no host readings (a file written before they were),
    so that only the job's own crowding counts; with `node_cores`, nodes of that many cores."""
    import h5py
    shutil.copy(src, dst)
    with h5py.File(dst, "r+") as f:
        for c in f["cases"].values():
            if "host" in c:
                del c["host"]
        if node_cores is not None:
            f["ranks/node_cores"][...] = node_cores
            rewrite_digest(f["ranks/node_cores"])
    return dst


class Noisy(InputErrorTest):
    """Cases whose host makes their numbers doubtful are left out of the fit and named, unless --include-noisy."""

    @classmethod
    def setUpClass(cls):
        cls.shared = ScratchTest()
        cls.shared.setUp()
        cfg = cls.shared.write("m.toml", CONFIG)
        one, two = cls.shared.path("one.h5"), cls.shared.path("two.h5")
        cls.runs = [mpirun(n, "run", cfg, "-o", out) for n, out in ((1, one), (2, two))]
        cls.quiet = known_noise(one, cls.shared.path("quiet.h5"))
        cls.crowded = known_noise(two, cls.shared.path("crowded.h5"), node_cores=1)  # 2 ranks on 1 core

    @classmethod
    def tearDownClass(cls):
        cls.shared.tearDown()

    def test_a_crowded_file_is_left_out_and_named(self):
        for p in self.runs:
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        model = self.path("m.json")
        p = gpuscale("model", self.quiet, self.crowded, "-o", model)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        text = p.stdout.replace("\n  ", " ")
        self.assertIn("note: " + self.crowded + ": 8 case(s) left out as noisy (--include-noisy fits them anyway): "
                      "cases 1-8 (oversubscribed: 2 ranks on 1 core of node 0)", text)
        with open(model) as f:
            m = json.load(f)
        self.assertEqual(m["gemm"][0]["fit_error"]["cases"], 4)  # the quiet file's 4 gemm cases alone
        self.assertEqual(m["transfers"], [])
        p = gpuscale("predict", self.quiet, self.crowded, "--ranks", "2", "--format", "json")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(json.loads(p.stdout)["left_out_noisy"],
                         [self.crowded + " cases 1-8 (oversubscribed: 2 ranks on 1 core of node 0)"])

    def test_predict_against_a_crowded_target_names_it_before_the_errors(self):
        model = self.path("m.json")
        p = gpuscale("model", self.quiet, "-o", model)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        line = ("target " + self.crowded + ": every case measured noisy (oversubscribed: 2 ranks on 1 core of node 0, "
                "and the like): the errors below are not the model's alone")
        t = gpuscale("predict", model, "--against", self.crowded)
        self.assertEqual(t.returncode, 0, t.stdout + t.stderr)
        text = " ".join(t.stdout.split())
        self.assertIn(line, text)
        self.assertLess(text.index(line), text.index("gemm"))  # before the rows
        j = json.loads(gpuscale("predict", model, "--against", self.crowded, "--format", "json").stdout)
        self.assertEqual(j["target_noise"], line)
        # A quiet target (no host readings, 1 rank on its node's cores) gets no such line.
        q = gpuscale("predict", model, "--against", self.quiet)
        self.assertEqual(q.returncode, 0, q.stdout + q.stderr)
        self.assertNotIn("measured noisy", q.stdout)
        self.assertNotIn("target_noise", json.loads(gpuscale("predict", model, "--against", self.quiet, "--format",
                                                             "json").stdout))

    def test_a_case_far_off_makes_a_poor_fit_that_names_it(self):
        import h5py
        slow = known_noise(self.quiet, self.path("slow.h5"))
        with h5py.File(slow, "r+") as f:  # its first case (gemm 64, serial) took 8 times as long
            f["cases/0000/device_time"][...] = f["cases/0000/device_time"][()] * 8
            rewrite_digest(f["cases/0000/device_time"])
        p = gpuscale("model", self.quiet, slow, "-o", self.path("m.json"))
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        text = p.stdout.replace("\n      ", " ")
        self.assertRegex(text, r"fit error \d+\.\d% rms over 8 case\(s\), worst: " + slow + r" case 1 \(measured ")
        self.assertIn("\n    poor fit: ", text)
        with open(self.path("m.json")) as f:
            error = json.load(f)["gemm"][0]["fit_error"]
        self.assertGreater(error["rel_rms"], 0.25)
        self.assertEqual(error["worst"][0]["from"], slow + " case 1")
        self.assertTrue(error["poor"])

    def test_nothing_left_to_fit_fails_saying_why(self):
        model = self.path("m.json")
        for args in (["model", self.crowded, "-o", model], ["predict", self.crowded, "--ranks", "2"]):
            with self.subTest(args=args[0]):
                p = gpuscale(*args)
                self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
                self.assertEqual(p.stderr.strip().splitlines(),
                                 ["gpuscale: error: nothing left to fit: the cases that could be fitted were all left "
                                  "out as noisy, their numbers not to be trusted: " + self.crowded + " cases 1-8 "
                                  "(oversubscribed: 2 ranks on 1 core of node 0); run them again on a quiet machine, "
                                  "or give --include-noisy to fit them anyway"])
                self.assertFalse(os.path.exists(model))
        p = gpuscale("model", self.crowded, "-o", model, "--include-noisy")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn(self.crowded + ": 8 noisy case(s) fitted anyway (--include-noisy): cases 1-8 (oversubscribed: "
                      "2 ranks on 1 core of node 0)", p.stdout.replace("\n  ", " "))


class Mistakes(InputErrorTest):
    def setUp(self):
        super().setUp()
        self.model = self.write("model.json", "{}")
        self.not_h5 = self.write("notes.txt", "hello")

    def test_predict_without_a_job(self):
        self.assert_input_error(gpuscale("predict", self.model),
                                "--ranks is missing: the job to predict for (or --against FILE, whose job it takes)")

    def test_a_model_that_is_not_one(self):
        self.assert_input_error(gpuscale("predict", self.model, "--ranks", "2"),
                                self.model + ": not a gpuscale model file: it lacks \"format\": \"gpuscale-model\"")
        cfg = self.write("c.toml", '[[experiment]]\nworkload = "gemm"\n')
        self.assert_input_error(gpuscale("check", cfg, "--model", self.model),
                                self.model + ": not a gpuscale model file")

    def test_model_of_files_that_are_not_results(self):
        self.assert_input_error(gpuscale("model", self.not_h5, "-o", self.path("m.json")), self.not_h5 + ": ")
        self.assertFalse(os.path.exists(self.path("m.json")))

    def test_model_over_one_of_its_inputs(self):
        for force in ([], ["--force"]):
            self.assert_input_error(gpuscale("model", self.not_h5, "-o", self.not_h5, *force),
                                    self.not_h5 + ": is one of this command's input files; choose another -o")

    def test_json_that_is_no_model_among_result_files(self):
        self.assert_input_error(gpuscale("predict", self.not_h5, self.model, "--ranks", "2"),
                                self.model + ": not a gpuscale model file: it lacks \"format\": \"gpuscale-model\"")

    def test_more_nodes_than_ranks(self):
        self.assert_input_error(gpuscale("predict", self.model, "--ranks", "2", "--nodes", "3"),
                                "--nodes 3 is more than the job's 2 rank(s): every node runs at least one rank")

    def test_model_without_output(self):
        self.assert_input_error(gpuscale("model", self.not_h5), "--output is required")

    def test_predict_in_an_unknown_format(self):
        self.assert_input_error(gpuscale("predict", self.model, "--ranks", "2", "--format", "csv"), "--format")


if __name__ == "__main__":
    unittest.main()
