"""Bad input: one clear line on stderr, exit code 2, and no result file
written or changed."""
import hashlib
import os
import subprocess
import time
import unittest

from common import MPIEXEC, SMALL_CONFIG, InputErrorTest, gpuscale, mpirun, preamble


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


class BadInput(InputErrorTest):
    def test_unknown_key(self):
        cfg, out, p = self.run_config(SMALL_CONFIG.replace("ops = 20", "opz = 20"))
        self.assert_input_error(p, cfg + ":13:1:", "unknown key 'opz'", "did you mean 'ops'?", "valid keys:", out=out)

    def test_wrong_type(self):
        cfg, out, p = self.run_config(SMALL_CONFIG.replace("size = 64", 'size = "64"'))
        self.assert_input_error(p, cfg + ":11:8:", "key 'size' must be an integer, got string \"64\"", out=out)

    def test_zero_size(self):
        cfg, out, p = self.run_config(SMALL_CONFIG.replace("size = 64", "size = 0"))
        self.assert_input_error(p, cfg + ":11:8:", "key 'size' must be at least 1, got 0", out=out)

    def test_negative_size(self):
        cfg, out, p = self.run_config(SMALL_CONFIG.replace("size = 64", "size = -64"))
        self.assert_input_error(p, "key 'size' must be at least 1, got -64", out=out)

    def test_unknown_dtype(self):
        cfg, out, p = self.run_config(SMALL_CONFIG.replace('"fp32"]', '"fp8"]'))
        self.assert_input_error(p, cfg + ":12:18:", "key 'dtype' must be one of fp64, fp32, tf32, fp16, bf16; "
                                "got \"fp8\"", out=out)

    def test_a_graph_on_the_cpu_backend(self):
        cfg, out, p = self.run_config(SMALL_CONFIG.replace("ops = 20", "ops = 20\ngraph = true"))
        self.assert_input_error(p, "case 1 of 4 (small size=64 dtype=fp64 impl=vendor ops=20 graph=true [serial]): "
                                "graph = "
                                "true needs the CUDA backend (CUDA graphs); this run uses the CPU backend", out=out)
        c = gpuscale("check", cfg)
        self.assert_input_error(c, "graph = true needs the CUDA backend (CUDA graphs)")

    def test_a_graph_of_work_the_host_waits_for(self):
        cfg = self.write("g.toml", '[defaults]\nbackend = "cuda"\n[[experiment]]\nworkload = "async"\nsync = "each"\n'
                                   'graph = true\n')
        self.assert_input_error(gpuscale("check", cfg), "graph = true cannot record sync = \"each\" or "
                                "log_norm = \"host\": the host waits for the device inside the sample")

    def test_negative_warmup_seconds(self):
        cfg, out, p = self.run_config(SMALL_CONFIG.replace("warmup = 1", "warmup = 1\nwarmup_s = -0.5"))
        self.assert_input_error(p, cfg + ":5:12:", "[defaults] key 'warmup_s' must be at least 0, got -0.5", out=out)

    def test_a_dtype_the_cpu_backend_lacks(self):
        cfg, out, p = self.run_config(SMALL_CONFIG.replace('"fp32"]', '"fp16"]'))
        self.assert_input_error(p, "case 3 of 4 (small size=64 dtype=fp16 impl=vendor ops=20 [serial]): gemm impl "
                                "'vendor' "
                                "with dtype fp16 needs the CUDA backend (the CPU backend has dtype fp64, fp32); this "
                                "run uses the CPU backend", out=out)

    def test_a_kernel_the_cpu_backend_lacks(self):
        cfg, out, p = self.run_config(SMALL_CONFIG + 'impl = "tiled"\n')
        self.assert_input_error(p, "gemm impl 'tiled' with dtype fp64 needs the CUDA backend", out=out)

    def test_missing_config_file(self):
        out = self.path("out.h5")
        p = gpuscale("run", self.path("nope.toml"), "-o", out)
        self.assert_input_error(p, "nope.toml: cannot read the file (does it exist?)", out=out)

    def test_output_exists_without_force(self):
        cfg = self.write("ok.toml", SMALL_CONFIG)
        out = self.write("taken.h5", "precious results\n")
        before = digest(out)
        p = gpuscale("run", cfg, "-o", out)
        self.assert_input_error(p, out + ": the file exists; use --force")
        self.assertEqual(digest(out), before)

    def test_output_is_a_directory(self):
        cfg = self.write("ok.toml", SMALL_CONFIG)
        self.assert_input_error(gpuscale("run", cfg, "-o", self.dir), ": is a directory; give a file name with -o")

    def test_a_matrix_too_large(self):
        cfg, out, p = self.run_config(SMALL_CONFIG.replace("size = 64", "size = 2000000"))
        self.assert_input_error(p, cfg + ":11:8: experiment 'small': key 'size' must be at most 1048576, got 2000000",
                                out=out)

    def test_a_mistake_every_rank_finds_is_printed_once(self):
        cfg = self.write("bad.toml", SMALL_CONFIG.replace("size = 64", "size = 0"))
        out = self.path("bad.h5")
        p = mpirun(2, "run", cfg, "-o", out)
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        errors = [line for line in p.stderr.splitlines() if line.startswith("gpuscale: error: ")]
        self.assertEqual(len(errors), 1, p.stderr)
        self.assertIn("key 'size' must be at least 1, got 0", errors[0])
        self.assertFalse(os.path.exists(out))

    def test_output_directory_missing(self):
        cfg = self.write("ok.toml", SMALL_CONFIG)
        p = gpuscale("run", cfg, "-o", self.path("no/such/dir/out.h5"))
        self.assert_input_error(p, "does not exist")

    def test_bad_override(self):
        cfg, out, p = self.run_config(SMALL_CONFIG, "--set", "szie=3")
        self.assert_input_error(p, "--set szie=3: unknown key 'szie' (did you mean 'size'?)", out=out)

    def test_backend_cuda_without_a_device(self):
        cfg, out, p = self.run_config(SMALL_CONFIG, "--set", "backend=cuda")
        self.assert_input_error(p, 'backend "cuda" cannot run: ', out=out)
        self.assertRegex(p.stderr, r"no usable CUDA device: (no NVIDIA driver found \(libcuda\.so\.1 not loadable\)|"
                                   r".*error \d+|this gpuscale was built without CUDA)")

    def test_under_mpirun_every_rank_stops_and_nothing_is_written(self):
        cfg = self.write("bad.toml", SMALL_CONFIG.replace("size = 64", "size = 0"))
        out = self.path("out.h5")
        p = mpirun(2, "run", cfg, "-o", out)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("key 'size' must be at least 1, got 0", p.stderr)
        self.assertFalse(os.path.exists(out))

    def test_command_line_mistakes(self):
        self.assert_input_error(gpuscale(), "A subcommand is required; see 'gpuscale --help'")
        self.assert_input_error(gpuscale("run"), "config is required; see 'gpuscale run --help'")
        self.assert_input_error(gpuscale("rn", "x.toml"), "unknown command 'rn' (did you mean 'run'?); commands: run, "
                                "check, report, model, predict, baseline, info")
        self.assert_input_error(gpuscale("--bogus", "run"), "unknown option '--bogus'; gpuscale takes a command first; "
                                "commands: run, check, report, model, predict, baseline, info; see 'gpuscale --help'")

    def test_an_option_error_names_the_option_the_value_and_what_it_takes_and_the_command_s_help(self):
        cfg = self.write("ok.toml", SMALL_CONFIG)
        out = self.path("out.h5")
        cases = [
            (("report", "x.h5", "--straggler-threshold", "10%"),
             "--straggler-threshold: must be a number above 0 (how much slower than the others' median a rank or "
             "node may be, e.g. 0.2 for 20%), got 10%; see 'gpuscale report --help'"),
            (("report", "x.h5", "--pair-threshold", "abc"),
             "--pair-threshold: must be a number above 0 and at most 1 (a share of the best node pair's bandwidth, "
             "e.g. 0.93), got abc; see 'gpuscale report --help'"),
            (("report", "x.h5", "--format", "jsn"),
             "--format: must be one of table, csv, json, json-full, trace, slurm, hosts, got jsn (did you mean "
             "'json'?); see 'gpuscale report --help'"),
            (("report", "x.h5", "--format"),
             "--format needs a value: table | csv | json | json-full (every column, numbers as numbers; json-full: "
             "each file's run too) | trace (a timeline for ui.perfetto.dev, written to -o) | slurm, hosts (--verdict: "
             "the nodes to take out); see 'gpuscale report --help'"),
            (("report", "x.h5", "--straggler-treshold", "0.1"),
             "--straggler-treshold is not an option of 'gpuscale report' (did you mean '--straggler-threshold'?); "
             "see 'gpuscale report --help'"),
            (("check", cfg, "--ranks", "0"),
             "--ranks: must be a whole number of ranks from 1 to 2147483647, got 0; see 'gpuscale check --help'"),
            (("check", cfg, "--nodes", "1.5"),
             "--nodes: must be a whole number of nodes from 1 to 2147483647, got 1.5; see 'gpuscale check --help'"),
            (("check", cfg, "--max-cases", "-5"),
             "--max-cases: must be a whole number of cases from 1 to 2147483647, got -5; see 'gpuscale check --help'"),
            (("run", cfg, "-o", out, "--max-cases", "many"),
             "--max-cases: must be a whole number of cases from 1 to 2147483647, got many; see 'gpuscale run --help'"),
            (("run", cfg, "-o", out, "--time-budget", "1h"),
             "--time-budget: must be a number of seconds from 0 to 2592000 (30 days), got 1h; see 'gpuscale run "
             "--help'"),
            (("run", cfg, "-o"),
             "--output needs a value: Result file (default: results/<config>-<timestamp>.h5); see 'gpuscale run "
             "--help'"),
            (("run", cfg, "-o", out, "--bogus"),
             "--bogus is not an option of 'gpuscale run'; see 'gpuscale run --help'"),
            (("info", "--ranks", "2"), "--ranks is not an option of 'gpuscale info'; see 'gpuscale info --help'"),
        ]
        for args, message in cases:
            with self.subTest(args=args):
                p = gpuscale(*args)
                self.assert_input_error(p, out=out)
                self.assertEqual(p.stderr, "gpuscale: error: " + message + "\n")
        # Under mpirun, once for the job.
        p = mpirun(2, "run", cfg, "-o", out, "--max-cases", "0")
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertEqual(p.stderr.count("--max-cases: must be a whole number of cases from 1 to 2147483647, got 0; "
                                        "see 'gpuscale run --help'"), 1, p.stderr)
        self.assertFalse(os.path.exists(out))

    def test_report_errors(self):
        self.assert_input_error(gpuscale("report", self.path("none.h5")), "none.h5: no such file")
        text = self.write("notes.h5", "not hdf5")
        self.assert_input_error(gpuscale("report", text), "notes.h5: not an HDF5 file")
        self.assert_input_error(gpuscale("report", text, "--format", "xml"),
                                "--format: must be one of table, csv, json, json-full, trace, slurm, hosts, got xml; see 'gpuscale "
                                "report --help'")
        import h5py
        import numpy as np
        other = self.path("other.h5")
        with h5py.File(other, "w", libver="latest") as f:  # not HDF5's earliest format, refused first
            f.attrs["software"] = "something-else"
        self.assert_input_error(gpuscale("report", other), "other.h5: not a gpuscale result file")
        future = self.path("future.h5")
        with h5py.File(future, "w", libver="latest") as f:
            f.attrs["software"] = np.bytes_("gpuscale")  # fixed-length, as gpuscale writes
            for k in ("softwareVersion", "date"):
                f.attrs[k] = np.bytes_("x")
            f.attrs["schemaVersion"] = np.bytes_("9.0")
        self.assert_input_error(gpuscale("report", future),
                                "future.h5: schemaVersion 9.0 is not readable by this gpuscale (reads 1.10)")

    def test_a_plan_explosion_is_refused_at_once(self):
        # 7 keys of 10 values, both modes: 2 x 10^7 cases; found from the lists' lengths, never expanded.
        lists = "".join(f"{k} = [{', '.join(str(v) for v in range(1, 11))}]\n"
                        for k in ("m", "n", "k", "ops", "warmup", "reps", "threads"))
        text = "[[experiment]]\nname = \"typo\"\nworkload = \"gemm\"\n" + lists
        for command in ("check", "run"):
            cfg, out = self.write("big.toml", text), self.path("big.h5")
            started = time.monotonic()
            p = gpuscale(command, cfg, *(["-o", out] if command == "run" else []))
            self.assertLess(time.monotonic() - started, 1.0)
            self.assert_input_error(p, cfg + ": the plan has 20000000 cases, more than --max-cases 10000; experiment "
                                    "'typo': warmup (10) x reps (10) x threads (10) x m (10) x n (10) x k (10) x ops "
                                    "(10) x modes (2) = 20000000", out=out)
        # Raised on purpose: the limit moves.
        p = gpuscale("check", cfg, "--max-cases", "100", "--set", "m=1", "--set", "n=1", "--set", "k=1",
                     "--set", "ops=1", "--set", "typo.warmup=1", "--set", "typo.reps=[1,2,3,4,5]",
                     "--set", "typo.threads=[1,2,3,4,5]")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("50 case(s)", p.stdout)

    def test_check_reports_the_same_errors(self):
        cfg = self.write("bad.toml", SMALL_CONFIG.replace("workload = \"gemm\"", "workload = \"gemmm\""))
        self.assert_input_error(gpuscale("check", cfg), "unknown workload \"gemmm\" (did you mean 'gemm'?)")


class EdgesOfTheNumberLine(InputErrorTest):
    """Numbers past what the code holds are refused where they are read, by check and by run alike."""

    def assert_refused(self, text, *fragments, extra=()):
        cfg, out = self.write("edge.toml", text), self.path("edge.h5")
        self.assert_input_error(gpuscale("check", cfg, *extra), cfg + ":", *fragments)
        self.assert_input_error(gpuscale("run", cfg, "-o", out, *extra), cfg + ":", *fragments, out=out)

    def test_durations_past_30_days(self):
        for key in ("timeout", "warmup_s", "budget_s"):
            self.assert_refused(SMALL_CONFIG.replace("reps = 4", f"reps = 4\n{key} = 1e10"),
                                f":6:{len(key) + 4}: [defaults] key '{key}' must be at most 2592000 (30 days), "
                                "got 1e+10")

    def test_counts_past_an_int(self):
        self.assert_refused(SMALL_CONFIG.replace("warmup = 1", "warmup = 2147483648"),
                            ":4:10: [defaults] key 'warmup' must be at most 2147483647, got 2147483648")
        self.assert_refused(SMALL_CONFIG.replace("reps = 4", "reps = 4294967297"),
                            ":5:8: [defaults] key 'reps' must be at most 2147483647, got 4294967297")

    def test_a_range_past_the_largest_bytes(self):
        text = ('[defaults]\nbackend = "cpu"\n[[experiment]]\nworkload = "copy"\n'
                'bytes = {from = 2, to = 9223372036854775807, factor = 4611686018427387904}\n')
        self.assert_refused(text, ":5:25: experiment #1: key 'bytes' must be at most 1099511627776, got "
                            "9223372036854775807")

    def test_a_time_budget_past_30_days(self):
        cfg, out = self.write("ok.toml", SMALL_CONFIG), self.path("ok.h5")
        for command in (("check", cfg), ("run", cfg, "-o", out)):
            self.assert_input_error(gpuscale(*command, "--time-budget", "1e10"), "--time-budget: must be a number of "
                                    "seconds from 0 to 2592000 (30 days), got 1e10", out=out)

    def test_an_estimate_past_1000_hours_says_so(self):
        text = SMALL_CONFIG.replace("reps = 4", "reps = 2147483647").replace("ops = 20", "ops = 2147483647")
        cfg, out = self.write("long.toml", text), self.path("long.h5")
        for command in (("check", cfg), ("run", cfg, "-o", out)):
            self.assert_input_error(gpuscale(*command, "--time-budget", "2592000"),
                                    "the plan is estimated at more than 1000 h on ", "over the time budget of 720 h "
                                    "00 min (--time-budget); the largest parts: experiment 'small' more than 1000 h",
                                    out=out)


class ConfigInputsThatCrashedOrHung(InputErrorTest):
    """A config is a regular file of at most 1 MiB whose keys and values nest only so deep; anything else is refused
    before it is read (a device, a FIFO) or parsed."""

    def assert_refused(self, cfg, *fragments, extra=()):
        out = self.path("out.h5")
        for command in (("check", cfg), ("run", cfg, "-o", out)):
            self.assert_input_error(gpuscale(*command, *extra, timeout=30), *fragments, out=out)

    def test_what_is_not_a_regular_file(self):
        self.assert_refused("/dev/zero", "/dev/zero: is a character device, not a config file (a TOML file)")
        self.assert_refused(self.dir, self.dir + ": is a directory, not a config file (a TOML file)")
        fifo = self.path("fifo.toml")
        os.mkfifo(fifo)  # no writer: opening it would wait for one
        self.assert_refused(fifo, fifo + ": is a FIFO, not a config file (a TOML file)")

    def test_a_file_over_1_mib(self):
        cfg = self.write("big.toml", SMALL_CONFIG + "#" * (2 << 20) + "\n")
        self.assert_refused(cfg, cfg + ": the file is %d bytes; a config may hold at most 1048576 bytes (1 MiB)"
                            % os.path.getsize(cfg))

    def test_a_key_of_50000_parts(self):
        cfg = self.write("deep.toml", SMALL_CONFIG + "x" + ".x" * 50000 + " = 1\n")
        message = cfg + ":15:1: a key of more than 32 dotted parts (a config's keys have one or two, e.g. " \
                        "[experiment.expect])"
        self.assert_refused(cfg, message)
        out = self.path("deep.h5")
        p = mpirun(2, "run", cfg, "-o", out)  # every rank reads the config
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        errors = [line for line in p.stderr.splitlines() if line.startswith("gpuscale: error: ")]
        self.assertEqual(errors, ["gpuscale: error: " + message])
        self.assertFalse(os.path.exists(out))

    def test_values_nested_too_deep(self):
        cfg = self.write("nested.toml", SMALL_CONFIG.replace("size = 64", "size = " + "[" * 40 + "64" + "]" * 40))
        self.assert_refused(cfg, cfg + ":11:40: values nested more than 32 deep (arrays and inline tables inside one "
                            "another; a config needs two or three)")
        ok = self.write("ok.toml", SMALL_CONFIG)
        self.assert_refused(ok, "--set size=" + "[" * 40 + "64" + "]" * 13 + "... (87 characters): values nested more "
                            "than 32 deep", extra=("--set", "size=" + "[" * 40 + "64" + "]" * 40))


class NamesAreText(InputErrorTest):
    def test_names_with_control_characters_are_refused(self):
        # The pair: equal up to a NUL, report merged them into one 'a'.
        twins = SMALL_CONFIG.replace('name = "small"', 'name = "a\\u0000x"') + \
            '[[experiment]]\nname = "a\\u0000y"\nworkload = "gemm"\n'
        for text, shown, what in ((twins, "a\\x00x", "U+0000) at byte 2"),
                                  (SMALL_CONFIG.replace('"small"', '"\\u001b[31mred\\r"'), "\\x1b[31mred\\x0d",
                                   "U+001B) at byte 1")):
            cfg, out = self.write("names.toml", text), self.path("names.h5")
            for command in (("check", cfg), ("run", cfg, "-o", out)):
                p = gpuscale(*command)
                if text == twins:  # each twin is a mistake of its own, a line each
                    first, second = p.stderr.splitlines()
                    self.assertIn(cfg + ':16:8: experiment #2: key \'name\' must be text without control characters, '
                                  'got "a\\x00y": a control character (U+0000) at byte 2', second)
                    p.stderr = first
                self.assert_input_error(p, cfg + ":9:8: experiment #1: key 'name' must be text without control "
                                        f'characters, got "{shown}": a control character ({what}', out=out)
                self.assertNotIn("\x1b", p.stderr)

    def test_a_name_that_is_not_utf8_is_a_syntax_error_with_its_line(self):
        cfg = self.path("latin1.toml")
        with open(cfg, "wb") as f:
            f.write(SMALL_CONFIG.replace('"small"', '"caf\\xe9"').encode().replace(b"\\xe9", b"\xe9"))
        self.assert_input_error(gpuscale("check", cfg), cfg + ":9:11: TOML syntax error: Encountered invalid utf-8 "
                                "sequence")


class Help(unittest.TestCase):
    def test_help_explains_with_examples(self):
        for args in ((), ("run",), ("report",), ("check",), ("info",)):
            p = gpuscale(*args, "--help")
            self.assertEqual(p.returncode, 0, args)
            self.assertIn("Example", p.stdout, args)
        self.assertIn("gemm", gpuscale("run", "--help").stdout)

    def test_version(self):
        p = gpuscale("--version")
        self.assertEqual(p.returncode, 0)
        self.assertRegex(p.stdout, r"^gpuscale \d+\.\d+\.\d+\S*\nMPI: built with (Open MPI \d+\.\d+\.\d+|MPICH \S+), "
                                   r"runs with (Open MPI v\d+\.\d+\.\d+|MPICH Version:\s+\S+)\nmpiexec: /\S+\n$")
        # The launcher named is the one the tests start ranks with (CMake's MPIEXEC_EXECUTABLE), by its real path.
        self.assertEqual(p.stdout.splitlines()[-1], "mpiexec: " + os.path.realpath(MPIEXEC))

    def test_version_names_the_commit_built(self):
        # Found again at every build (cmake/version.cmake), not only when CMake configured the build: the result
        # files' softwareVersion.
        source = os.environ.get("GPUSCALE_SOURCE_DIR", "")
        try:
            git = subprocess.run(["git", "-C", source, "describe", "--always", "--dirty", "--abbrev=12"],
                                 capture_output=True, text=True)
        except OSError:
            self.skipTest("no git")
        if not source or git.returncode != 0:
            self.skipTest("the source is not a git work tree")
        version = gpuscale("--version").stdout.splitlines()[0]
        self.assertRegex(version, r"^gpuscale \d+\.\d+\.\d+\+g")
        self.assertEqual(version.split("+g", 1)[1], git.stdout.strip(),
                         "gpuscale was built from another commit or work tree state than the source's: build again")


class InputsThatAreNotFiles(InputErrorTest):
    """Every file option of every command refuses at once what is not a regular file (opening a FIFO waits for a
    writer) and never follows an HDF5 external link (which could lead to one, or anywhere)."""

    @classmethod
    def setUpClass(cls):
        cls.shared = InputErrorTest()
        cls.shared.setUp()
        cls.good = cls.shared.path("good.h5")
        cfg = cls.shared.write("c.toml", SMALL_CONFIG)
        assert mpirun(2, "run", cfg, "-o", cls.good).returncode == 0
        cls.model = cls.shared.path("m.json")
        assert gpuscale("model", cls.good, "-o", cls.model, "--include-noisy").returncode == 0
        cls.cfg = cfg

    @classmethod
    def tearDownClass(cls):
        cls.shared.tearDown()

    def refused_at_once(self, args, message):
        started = time.time()
        p = gpuscale(*args, timeout=30)
        self.assert_input_error(p)
        self.assertEqual(p.stderr, f"gpuscale: error: {message}\n", args)
        self.assertLess(time.time() - started, 5, args)  # not the read guard's 60 s, nor for ever

    def test_a_fifo_a_device_or_a_directory_as_any_input(self):
        fifo = self.path("p.fifo")
        os.mkfifo(fifo)  # no writer: opening it would wait for one
        for bad, kind in ((fifo, "a FIFO"), ("/dev/zero", "a character device"), (self.dir, "a directory")):
            result = f"{bad}: is {kind}, not a result file"
            self.refused_at_once(["report", bad], result)
            self.refused_at_once(["report", self.good, "--baseline", bad], result)
            self.refused_at_once(["report", bad, "--format", "trace", "-o", self.path("t.json")], result)
            self.refused_at_once(["model", bad, "-o", self.path("x.json")], result)
            self.refused_at_once(["predict", self.model, "--against", bad], result)
            self.refused_at_once(["predict", bad, "--ranks", "2"], f"{bad}: is {kind}, not a model file or result file")
            self.refused_at_once(["check", self.cfg, "--model", bad], f"{bad}: is {kind}, not a model file")
        self.assertEqual(sorted(os.listdir(self.dir)), ["p.fifo"])  # no output was made

    def test_an_external_link_is_not_followed(self):
        import h5py
        fifo = self.path("p.fifo")
        os.mkfifo(fifo)
        linked = self.path("linked.h5")
        with open(self.good, "rb") as src, open(linked, "wb") as dst:
            dst.write(src.read())
        with h5py.File(linked, "r+") as f:
            del f["cases/0001"]
            f["cases/0001"] = h5py.ExternalLink(fifo, "/")
        for args in (["report", linked], ["model", linked, "-o", self.path("x.json")]):
            started = time.time()
            p = gpuscale(*args, timeout=30)
            self.assert_input_error(p, f"{linked}: damaged result file: ", f"'0001' is an external link to {fifo}, "
                                    "which gpuscale does not follow")
            self.assertLess(time.time() - started, 5, args)


class EveryMistakeAtOnce(InputErrorTest):
    """A config's mistakes are all reported, a line each in the file's order, before anything runs."""

    TWO = preamble(warmup=1, reps=2) + """
[[experiment]]
name = "a"
workload = "copy"
bytez = 4096

[[experiment]]
name = "b"
workload = "collective"
op = "allreduce"
bytes = "16X"
"""

    def assert_lines(self, proc, *lines, out=None, launched=False):
        """Exit code 2 and the `lines` on stderr, each an error line, nothing else (`launched`: the launcher may add
        its own lines about the exit code)."""
        self.assertEqual(proc.returncode, 2, proc.stdout + proc.stderr)
        printed = proc.stderr.splitlines()
        if launched:
            printed = [line for line in printed if line.startswith("gpuscale: ")]
        self.assertEqual(printed, ["gpuscale: error: " + line for line in lines])
        if out:
            self.assertFalse(os.path.exists(out), "a result file was written")

    def test_an_unknown_key_in_one_experiment_and_a_bad_value_in_another_are_both_named(self):
        cfg, out = self.write("two.toml", self.TWO), self.path("two.h5")
        lines = (cfg + ":10:1: experiment 'a': unknown key 'bytez' (did you mean 'bytes'?); valid keys: name, "
                 "workload, modes, expect, warmup, warmup_s, reps, threads, bytes, direction, host, ops",
                 cfg + ":16:9: experiment 'b': key 'bytes' must be a size in bytes: an integer, or a string such as "
                 '"64K", "16M", "1G" (K, M, G, T: powers of 1024); got string "16X"')
        self.assert_lines(gpuscale("check", cfg), *lines)
        self.assert_lines(gpuscale("run", cfg, "-o", out), *lines, out=out)
        self.assert_lines(mpirun(2, "run", cfg, "-o", out), *lines, out=out, launched=True)  # once, by rank 0

    def test_a_bad_override_comes_first_then_the_file_s_mistakes(self):
        cfg = self.write("two.toml", self.TWO)
        p = gpuscale("check", cfg, "--set", "repz=3")
        self.assertEqual(p.returncode, 2, p.stderr)
        lines = p.stderr.splitlines()
        self.assertEqual(len(lines), 3, p.stderr)
        self.assertTrue(lines[0].startswith("gpuscale: error: --set repz=3: unknown key 'repz' (did you mean "
                                            "'reps'?)"), lines[0])
        self.assertTrue(lines[1].startswith(f"gpuscale: error: {cfg}:10:1: "), lines[1])
        self.assertTrue(lines[2].startswith(f"gpuscale: error: {cfg}:16:9: "), lines[2])

    def test_a_syntax_error_stops_at_once(self):
        cfg = self.write("broken.toml", self.TWO + "[[experiment]\n")
        self.assert_input_error(gpuscale("check", cfg), cfg + ":17:14: TOML syntax error")


if __name__ == "__main__":
    unittest.main(verbosity=2)
