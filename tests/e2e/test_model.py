"""The cost model end to end: `gpuscale model` fits real result files (gemm on
1 rank, collectives on 2), `gpuscale predict` predicts another job's cases and,
--against a measured run, prints the error it computes from the two (checked
here from its own JSON: computed right, not how accurate it is: the machine is
loaded); `check --model` takes its sample times from the model; every mistake
a user can make says so on one line."""
import json
import os
import unittest

from common import InputErrorTest, ScratchTest, gpuscale, mpirun, preamble

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
        cls.fit = gpuscale("model", cls.one, cls.two, "-o", cls.model)

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
            self.assertAlmostEqual(c["error"], abs(measured - predicted) / measured, places=9)
            self.assertLessEqual(c["predicted_op_time_lo_s"], predicted)
            self.assertGreater(c["predicted_busbw_gbps"], 0)
            self.assertEqual(c["params"]["inplace"], False)
            self.assertAlmostEqual(c["measured_breakdown"]["total_s"], c["measured_median_s"], places=12)
            self.assertAlmostEqual(c["breakdown"]["wire_s"], predicted, places=12)  # one operation a sample
        parallel = [c for c in out["cases"] if c["workload"] == "gemm" and c["mode"] == "parallel"]
        for c in parallel:
            self.assertIn("predicted_speedup", c)
            self.assertIn("measured_speedup", c)
            self.assertAlmostEqual(c["error"], abs(c["measured_median_s"] - c["predicted_median_s"]) /
                                   c["measured_median_s"], places=9)
            b = c["breakdown"]
            self.assertAlmostEqual(b["sum_s"], c["predicted_median_s"], places=12)
        whats = [s["what"] for s in out["summary"]]
        self.assertEqual(whats, ["gemm", "collective allreduce", "collective allgather"])

    def test_predict_breakdown_shows_the_predicted_parts_and_the_measured_ones(self):
        p = gpuscale("predict", self.model, "--against", self.two, "--breakdown")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("\nwhere the time goes:\n", p.stdout)
        self.assertIn("[parallel] predicted\n", p.stdout)
        self.assertIn("[parallel] measured\n", p.stdout)

    def test_predict_a_bigger_job_from_result_files_flags_what_it_extrapolates(self):
        p = gpuscale("predict", self.one, self.two, "--ranks", "4", "--nodes", "2")
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
            (["format_version"], '"1"', 'format_version: must be an integer (this gpuscale reads 1), got "1"'),
        ]
        for i, (keys, value, message) in enumerate(edits):
            with self.subTest(keys=keys, value=value):
                path = self.edited("edit%d.json" % i, keys, value)
                self.assert_input_error(gpuscale("predict", path, "--ranks", "2"), path + ": " + message)
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
        p = gpuscale("predict", edited, "--ranks", "4")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("x\\x1b[2j\\x1b]0;owned\\x07", p.stdout.lower())
        self.assertNotIn("\x1b", p.stdout + p.stderr)
        self.assertNotIn("\x07", p.stdout + p.stderr)


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
                                self.model + ": not a model file: it lacks \"format\": \"gpuscale-model\"")
        cfg = self.write("c.toml", '[[experiment]]\nworkload = "gemm"\n')
        self.assert_input_error(gpuscale("check", cfg, "--model", self.model), self.model + ": not a model file")

    def test_model_of_files_that_are_not_results(self):
        self.assert_input_error(gpuscale("model", self.not_h5, "-o", self.path("m.json")), self.not_h5 + ": ")
        self.assertFalse(os.path.exists(self.path("m.json")))

    def test_model_over_one_of_its_inputs(self):
        for force in ([], ["--force"]):
            self.assert_input_error(gpuscale("model", self.not_h5, "-o", self.not_h5, *force),
                                    self.not_h5 + ": is one of this command's input files; choose another -o")

    def test_json_that_is_no_model_among_result_files(self):
        self.assert_input_error(gpuscale("predict", self.not_h5, self.model, "--ranks", "2"),
                                self.model + ": not a model file: it lacks \"format\": \"gpuscale-model\"")

    def test_more_nodes_than_ranks(self):
        self.assert_input_error(gpuscale("predict", self.model, "--ranks", "2", "--nodes", "3"),
                                "--nodes 3 is more than the job's 2 rank(s): every node runs at least one rank")

    def test_model_without_output(self):
        self.assert_input_error(gpuscale("model", self.not_h5), "--output is required")

    def test_predict_in_an_unknown_format(self):
        self.assert_input_error(gpuscale("predict", self.model, "--ranks", "2", "--format", "csv"), "--format")


if __name__ == "__main__":
    unittest.main()
