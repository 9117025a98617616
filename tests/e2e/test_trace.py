"""report --format trace on a real run of configs/overlap.toml on 2 ranks through mpirun: the trace read back by a
strict reader of the Trace Event Format (every event's fields and types as the format and Perfetto want them; on
each thread, slices that nest or follow each other, never partly overlap, read both as exact decimals and as
Perfetto reads them: microseconds x 1000 truncated to nanoseconds), and one slice per sample and rank and per
phase interval, at the file's times, as counted here from the HDF5 file with h5py. Where Perfetto's trace
processor is installed (the perfetto Python package and its trace_processor_shell; neither is needed otherwise),
it loads the trace too and its slice counts are checked; else that test says why it is skipped. Options a trace
does not take, and cases the file does not hold: one line, exit code 2, no file written."""
import collections
import decimal
import glob
import json
import os
import shutil
import unittest

import h5py

from common import InputErrorTest, SharedRunTest, gpuscale, s

SOURCE = os.environ.get("GPUSCALE_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))

METADATA = {"process_name": "name", "process_sort_index": "sort_index", "thread_name": "name",
            "thread_sort_index": "sort_index"}


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def is_number(v):
    return isinstance(v, (int, float, decimal.Decimal)) and not isinstance(v, bool)


def event_problems(i, e):
    """What is wrong with event i as the Trace Event Format defines its phase ("X" complete, "C" counter, "M"
    metadata), and as Perfetto's JSON reader needs it (no array at an event's top level)."""
    where = f"event {i} {e!r:.120}"
    if not isinstance(e, dict):
        return [f"{where}: not an object"]
    out = []
    need = {"X": ("name", "ph", "ts", "dur", "pid", "tid", "args"), "C": ("name", "ph", "ts", "pid", "args"),
            "M": ("name", "ph", "pid", "args")}.get(e.get("ph"))
    if need is None:
        return [f"{where}: unknown ph"]
    out += [f"{where}: no {k}" for k in need if k not in e]
    out += [f"{where}: {k} is an array" for k, v in e.items() if isinstance(v, list)]
    if not isinstance(e.get("name"), str) or not isinstance(e.get("args", {}), dict):
        out.append(f"{where}: name not a string or args not an object")
    out += [f"{where}: {k} not an int >= 1" for k in ("pid", "tid") if k in e and not (is_int(e[k]) and e[k] >= 1)]
    out += [f"{where}: {k} not a number >= 0" for k in ("ts", "dur") if k in e and not (is_number(e[k]) and e[k] >= 0)]
    if e["ph"] == "C" and not (e["args"] and all(is_number(v) for v in e["args"].values())):
        out.append(f"{where}: a counter's args must be numbers")
    if e["ph"] == "M":
        key = METADATA.get(e["name"])
        if key is None or key not in e["args"] or (e["name"].startswith("thread") and "tid" not in e):
            out.append(f"{where}: not a metadata event of the format")
        elif not (isinstance(e["args"][key], str) if key == "name" else is_int(e["args"][key])):
            out.append(f"{where}: {key} of the wrong type")
    return out


def nesting_problems(spans):
    """Slices of one thread, (start, end, what): each must end before the next starts or hold it whole."""
    out, stack = [], []
    for a, b, what in sorted(spans, key=lambda x: (x[0], -x[1])):
        while stack and stack[-1][1] <= a:
            stack.pop()
        if stack and b > stack[-1][1]:
            out.append(f"{what} [{a}, {b}] partly overlaps {stack[-1][2]} [{stack[-1][0]}, {stack[-1][1]}]")
        stack.append((a, b, what))
    return out


def tp_ns(v):
    """A time in µs as Perfetto's trace processor reads it: µs x 1000 in a double, truncated to nanoseconds."""
    return int(float(v) * 1000.0)


def trace_problems(doc):
    """Everything a strict reader finds wrong with a trace (an empty list: nothing)."""
    if not isinstance(doc, dict) or list(doc)[:1] != ["traceEvents"]:
        return ["not an object whose first key is traceEvents (Perfetto reads events only from there)"]
    out = [f"top-level key {k} that Perfetto stops at" for k in doc if k not in
           ("traceEvents", "displayTimeUnit", "otherData", "metadata")]
    if doc.get("displayTimeUnit") not in (None, "ms", "ns"):
        out.append("displayTimeUnit is neither ms nor ns")
    events = doc["traceEvents"]
    for i, e in enumerate(events):
        out += event_problems(i, e)
    if out:
        return out
    names = {(e["pid"], e.get("tid")): e["args"]["name"] for e in events if e["name"].endswith("_name")}
    owner = {}
    exact, perfetto = collections.defaultdict(list), collections.defaultdict(list)
    for e in events:
        if e["ph"] == "M" and e["name"] == "thread_name" and owner.setdefault(e["tid"], e["pid"]) != e["pid"]:
            out.append(f"tid {e['tid']} is a thread of two processes")
        if e["ph"] != "X":
            continue
        if (e["pid"], e["tid"]) not in names or (e["pid"], None) not in names:
            out.append(f"{e['name']}: its thread or process has no name")
        what = f"{e['name']} (pid {e['pid']} tid {e['tid']})"
        exact[e["pid"], e["tid"]].append((e["ts"], e["ts"] + e["dur"], what))
        perfetto[e["pid"], e["tid"]].append((tp_ns(e["ts"]), tp_ns(e["ts"]) + tp_ns(e["dur"]), what))
    for spans in (*exact.values(), *perfetto.values()):
        out += nesting_problems(spans)
    return out


def load(path):
    with open(path) as f:
        return json.load(f, parse_float=decimal.Decimal)


def h5_counts(path, cases=None):
    """From the HDF5 file: per (case number, rank) its samples' (start, end), and per (case, rank, phase name) the
    count of its phase intervals."""
    samples, phases = {}, collections.Counter()
    with h5py.File(path, "r") as f:
        for key, c in f["cases"].items():
            n = int(key) + 1
            if (cases and n not in cases) or s(c.attrs["status"]) == "skipped":
                continue
            start, end = c["wall_start"][()], c["wall_end"][()]
            for r in range(start.shape[0]):
                samples[n, r] = list(zip(start[r], end[r]))
            if "phases" in c:
                ph = c["phases"]
                names = [s(x) for x in ph["names"][()]]
                for r, k in zip(ph["rank"][()], ph["phase"][()]):
                    phases[n, int(r), names[k]] += 1
    return samples, phases


def trace_counts(doc):
    samples, phases = collections.defaultdict(list), collections.Counter()
    for e in doc["traceEvents"]:
        if e["ph"] == "X" and e["cat"] == "sample":
            samples[e["args"]["case"], e["args"]["rank"]].append(e)
        if e["ph"] == "X" and e["cat"] == "phase":
            phases[e["args"]["case"], e["args"]["rank"], e["name"]] += 1
    return samples, phases


def trace_processor_bin():
    """(path of trace_processor_shell, None) or (None, why there is none)."""
    try:
        import perfetto.trace_processor  # noqa: F401
    except ImportError:
        return None, "the perfetto Python package is not installed (pip install perfetto)"
    found = [os.environ.get("GPUSCALE_TRACE_PROCESSOR"), shutil.which("trace_processor_shell"),
             *sorted(glob.glob(os.path.expanduser("~/.local/share/perfetto/prebuilts/trace_processor_shell*")))]
    found = [p for p in found if p and os.path.isfile(p) and os.access(p, os.X_OK)]
    if not found:
        return None, ("no trace_processor_shell binary (the perfetto package downloads it on first use; set "
                      "GPUSCALE_TRACE_PROCESSOR to one)")
    return found[0], None


class TraceOfOverlapRun(SharedRunTest):
    CONFIG_FILE = os.path.join(SOURCE, "configs", "overlap.toml")
    ARGS = ("--set", "reps=3", "--set", "warmup=1")

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.trace = cls.shared.path("run.json")
        cls.export = gpuscale("report", cls.out, "--format", "trace", "-o", cls.trace)

    def setUp(self):
        super().setUp()
        self.assertEqual(self.proc.returncode, 0, self.proc.stdout + self.proc.stderr)
        self.assertEqual(self.export.returncode, 0, self.export.stdout + self.export.stderr)

    def test_the_strict_reader_finds_nothing_wrong(self):
        doc = load(self.trace)
        self.assertEqual(trace_problems(doc), [])
        self.assertEqual(doc["displayTimeUnit"], "ms")
        self.assertEqual(doc["otherData"]["ranks"], 2)
        self.assertEqual(doc["otherData"]["cases"], [1, 2, 3, 4])
        self.assertIn(f"{len(doc['traceEvents'])} events", self.export.stdout)
        self.assertEqual(self.export.stderr, "")

    def test_the_strict_reader_is_not_vacuous(self):
        # Each kind of mistake it is there for, made in a copy of the real trace, is found.
        doc = load(self.trace)
        xs = [e for e in doc["traceEvents"] if e["ph"] == "X" and e["cat"] == "sample"]
        self.assertGreater(len(xs), 0)
        a, b = xs[0], xs[1]                    # rank 0's first two samples: one thread
        self.assertEqual((a["pid"], a["tid"]), (b["pid"], b["tid"]))
        a["dur"] = b["ts"] - a["ts"] + (b["dur"] / 2)   # a reaches into b: a partial overlap
        self.assertTrue(any("partly overlaps" in p for p in trace_problems(doc)))
        for mistake in ({"pid": 0}, {"ts": -1}, {"tid": "3"}, {"ph": "B"}, {"args": [1]}):
            bad = load(self.trace)
            next(e for e in bad["traceEvents"] if e["ph"] == "X").update(mistake)
            self.assertNotEqual(trace_problems(bad), [], mistake)
        bad = load(self.trace)
        bad["traceEvents"] = [e for e in bad["traceEvents"] if e["name"] != "thread_name"]
        self.assertNotEqual(trace_problems(bad), [])

    def test_one_slice_per_sample_and_phase_at_the_files_times(self):
        doc = load(self.trace)
        t0 = float(doc["otherData"]["t0_s"])
        samples, phases = h5_counts(self.out)
        got_samples, got_phases = trace_counts(doc)
        self.assertEqual(len(samples), 4 * 2)          # 4 cases x 2 ranks
        self.assertEqual(sorted(got_samples), sorted(samples))
        for key, spans in samples.items():
            got = sorted(got_samples[key], key=lambda e: e["args"]["sample"])
            self.assertEqual([e["args"]["sample"] for e in got], list(range(len(spans))))
            for e, (a, b) in zip(got, spans):
                self.assertEqual(e["pid"], key[1] + 1)
                self.assertEqual(tp_ns(e["ts"]), round((a - t0) * 1e9))
                self.assertLessEqual(abs(float(e["dur"]) - (b - a) * 1e6), 2e-3)
        self.assertGreater(sum(phases.values()), 0)
        self.assertEqual(got_phases, phases)
        # The earliest event is at 0, and a thread per lane of each rank.
        self.assertEqual(min(tp_ns(e["ts"]) for e in doc["traceEvents"] if "ts" in e), 0)
        threads = collections.Counter((e["pid"], e["args"]["name"]) for e in doc["traceEvents"]
                                      if e["name"] == "thread_name")
        for pid in (1, 2):
            for lane in ("cases", "samples", "phase compute", "phase transfer"):
                self.assertEqual(threads[pid, lane], 1, (pid, lane))

    def test_cases_picks_cases_and_dash_writes_to_stdout(self):
        p = gpuscale("report", self.out, "--format", "trace", "-o", "-", "--cases", "2,4")
        self.assertEqual(p.returncode, 0, p.stderr)
        doc = json.loads(p.stdout, parse_float=decimal.Decimal)
        self.assertEqual(trace_problems(doc), [])
        self.assertEqual(doc["otherData"]["cases"], [2, 4])
        samples, phases = h5_counts(self.out, cases={2, 4})
        got_samples, got_phases = trace_counts(doc)
        self.assertEqual({k: len(v) for k, v in got_samples.items()}, {k: len(v) for k, v in samples.items()})
        self.assertEqual(got_phases, phases)
        cases = {e["args"]["case"] for e in doc["traceEvents"] if e["ph"] == "X"}
        self.assertEqual(cases, {2, 4})

    def test_trace_processor_reads_one_slice_per_sample_and_phase(self):
        binary, why = trace_processor_bin()
        if binary is None:
            print(f"\ntrace processor check skipped: {why}; the strict reader above checked the trace")
            self.skipTest(why)
        from perfetto.trace_processor import TraceProcessor, TraceProcessorConfig
        samples, phases = h5_counts(self.out)
        tp = TraceProcessor(trace=self.trace, config=TraceProcessorConfig(bin_path=binary))
        try:
            def rows(q):
                return [tuple(getattr(r, c) for c in r.__dict__) for r in tp.query(q)]
            total = rows("select count(*) as n from slice where category in ('sample', 'phase')")[0][0]
            self.assertEqual(total, sum(len(v) for v in samples.values()) + sum(phases.values()))
            per_pid = dict(rows("select p.pid as pid, count(*) as n from slice s join thread_track tt on "
                                "s.track_id = tt.id join thread using(utid) join process p using(upid) "
                                "where s.category = 'sample' group by p.pid"))
            want = collections.Counter()
            for (_, r), spans in samples.items():
                want[r + 1] += len(spans)
            self.assertEqual(per_pid, dict(want))
            errors = rows("select name, value from stats where severity in ('error', 'data_loss') and value > 0")
            self.assertEqual(errors, [])
        finally:
            tp.close()


class TraceInputErrors(InputErrorTest):
    """Each mistake a user can make with --format trace: one line that says what to do, exit 2, nothing written."""

    @classmethod
    def setUpClass(cls):
        cls.shared = SharedRunTest()
        cls.shared.setUp()
        cls.h5 = cls.shared.path("small.h5")
        cfg = cls.shared.write("small.toml", '[defaults]\nbackend = "cpu"\nwarmup = 0\nreps = 2\n\n'
                               '[[experiment]]\nname = "g"\nworkload = "gemm"\nsize = 32\nops = 1\n'
                               'modes = ["serial", "parallel"]\n')
        cls.run_proc = gpuscale("run", cfg, "-o", cls.h5)

    @classmethod
    def tearDownClass(cls):
        cls.shared.tearDown()

    def test_each_mistake_is_one_line(self):
        self.assertEqual(self.run_proc.returncode, 0, self.run_proc.stderr)
        out = self.path("t.json")
        cases = [
            (("--format", "trace"), ("--format trace writes a file", "-o run.json")),
            (("--format", "json", "-o", out), ("-o is for --format trace", "redirect")),
            (("--cases", "1"), ("--cases is for --format trace",)),
            (("--format", "trace", "-o", out, "--cases", "1-x"), ("--cases 1-x", "e.g. --cases 1,3-5")),
            (("--format", "trace", "-o", out, "--cases", "2-1"), ("runs backwards",)),
            (("--format", "trace", "-o", out, "--cases", "9"), ("has no case 9", "it holds cases 1-2")),
            (("--format", "trace", "-o", out, "--check"), ("--format trace and --check cannot be combined",)),
            (("--format", "trace", "-o", out, "--baseline", self.h5), ("--format trace and --baseline",)),
            (("--format", "trace", "-o", self.h5), ("is one of this command's input files; choose another -o",)),
            (("--format", "trace", "-o", self.path("no/such/dir/t.json")), ("/no/such/dir' does not exist",)),
        ]
        for args, words in cases:
            with self.subTest(args=args):
                self.assert_input_error(gpuscale("report", self.h5, *args), *words, out=out)
        p = gpuscale("report", self.h5, self.h5, "--format", "trace", "-o", out)
        self.assert_input_error(p, "exports one result file, not 2", out=out)
        self.assertEqual(os.listdir(self.dir), [], "a partial file was left behind")


if __name__ == "__main__":
    unittest.main(verbosity=2)
