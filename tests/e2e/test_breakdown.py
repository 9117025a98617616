"""Where the time goes, on a real dp_step run on 2 ranks through mpirun: `report --breakdown` (a line per case
that ran, 80 columns, the legend), the "breakdown" of `report --format json` and json-full and the breakdown.*
columns of csv; each part recomputed here from the raw samples and phases with h5py, as docs/metrics.md defines
it; parts that add up to each sample exactly, and their medians to the median only about (the machine is shared:
no tight bound). Options that do not combine with --breakdown: one line naming both, exit code 2."""
import csv
import io
import json
import re
import unittest

import h5py
import numpy as np

from common import InputErrorTest, SharedRunTest, gpuscale, preamble, s

# Samples of about a millisecond; scope inter-node cannot run on one node (skipped, so no breakdown); scope world
# is one group, so it has no serial case.
CONFIG = preamble(warmup=2, reps=15) + """
[[experiment]]
name = "dp"
workload = "dp_step"
hidden = 256
batch = 64
layers = 4
dtype = "fp32"
bucket_bytes = 262144
overlap = [false, true]
scope = ["world", "intra-node", "inter-node"]
modes = ["serial", "parallel"]
"""

PARTS = ("compute_s", "exposed_transfer_s", "overhead_s", "wait_s", "wire_s")
KEYS = {"total_s", "sum_s", *PARTS}


def union(spans):
    """Sorted, merged intervals."""
    out = []
    for a, b in sorted(spans):
        if b <= a:
            continue
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def covered(spans):
    return sum(b - a for a, b in spans)


def overlap(xs, ys):
    return sum(max(0.0, min(b, d) - max(a, c)) for a, b in xs for c, d in ys)


def sample_parts(g):
    """[sample][part] (compute, exposed, overhead, wait, wire) of a case, as docs/metrics.md defines them: per
    turn (parallel: all ranks) the median rank that took part (the faster of the middle two), its compute and
    transfer intervals as the time they cover, its overhead the rest of its span, its wait the turn's makespan
    minus its span; summed over turns. Also [sample] of the sample times (the report's)."""
    start, end = g["wall_start"][()], g["wall_end"][()]
    ranks, reps = start.shape
    group = g["group"][()] if "group" in g else np.zeros(ranks)
    turn = g["turn"][()] if "turn" in g else np.arange(ranks)
    serial = s(g.attrs["mode"]) == "serial"
    units = [np.flatnonzero(turn == t) for t in range(turn.max() + 1)] if serial else [np.arange(ranks)]
    p = g["phases"]
    names = [s(n) for n in p["names"][()]]
    intervals = {}
    for rank, sample, phase, a, b in zip(p["rank"][()], p["sample"][()], p["phase"][()], p["start"][()],
                                         p["end"][()]):
        intervals.setdefault((rank, sample, names[phase]), []).append((a, b))
    parts, times = np.zeros((reps, 5)), np.zeros(reps)
    for i in range(reps):
        for u in units:
            lo, hi = start[u, i].min(), end[u, i].max()
            spans = sorted((end[r, i] - start[r, i], r) for r in u if group[r] >= 0)
            span, m = spans[(len(spans) - 1) // 2]
            compute = union(intervals.get((m, i, "compute"), []))
            transfer = union(intervals.get((m, i, "transfer"), []))
            c, wire = covered(compute), covered(transfer)
            exposed = wire - overlap(transfer, compute)
            parts[i] += [c, exposed, max(0.0, span - c - exposed), max(0.0, hi - lo - span), wire]
            times[i] += hi - lo
    return parts, times


class Breakdown(SharedRunTest):
    CONFIG = CONFIG

    def setUp(self):
        super().setUp()
        self.assertEqual(self.proc.returncode, 0, self.proc.stdout + self.proc.stderr)

    def report(self, *args):
        proc = gpuscale("report", self.out, *args)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        return proc.stdout

    def rows(self):
        return json.loads(self.report("--format", "json"))

    def test_json_rows_that_ran_carry_the_breakdown_as_recomputed_from_the_samples_and_phases(self):
        rows = self.rows()
        self.assertEqual(len(rows), 10)
        ran = [r for r in rows if r["status"] != "skipped"]
        self.assertEqual(len(ran), 6)
        with h5py.File(self.out, "r") as f:
            for row in rows:
                if row["status"] == "skipped":
                    self.assertNotIn("breakdown", row)
                    continue
                b = row["breakdown"]
                self.assertEqual(set(b), KEYS, row["case"])
                self.assertEqual(b["total_s"], row["median_s"])
                self.assertAlmostEqual(b["sum_s"], sum(b[k] for k in PARTS if k != "wire_s"), delta=1e-12)
                for k in KEYS:
                    self.assertGreaterEqual(b[k], 0, (row["case"], k))
                parts, times = sample_parts(f[f"cases/{row['case'] - 1:04d}"])
                # Per sample the parts add up to the sample time, by construction.
                np.testing.assert_allclose(parts[:, :4].sum(axis=1), times, rtol=1e-9)
                self.assertAlmostEqual(np.median(times), row["median_s"], delta=1e-12)
                for k, want in zip(PARTS, np.median(parts, axis=0)):
                    self.assertAlmostEqual(b[k], want, delta=1e-9 * row["median_s"], msg=(row["case"], k))
                self.assertLessEqual(b["exposed_transfer_s"], b["wire_s"] + 1e-12)

    def test_the_breakdown_view_has_a_line_per_case_that_ran_in_80_columns(self):
        text = self.report("--breakdown")
        lines = text.splitlines()
        self.assertEqual([x for x in lines if len(x) > 80], [], text)
        self.assertTrue(text.startswith(f"{self.out}: where the time goes, 2 rank(s) on 1 node(s),"), text)
        self.assertIn("backend cpu\n", text)
        self.assertIn("dp: dp_step threads=1 hidden=256 batch=64 layers=4 dtype=fp32 bucket_bytes=262144",
                      re.sub(r"\n\s+", " ", text))  # what the cases share, wrapped to 80 columns
        self.assertRegex(text, r"\n\s+median\s+compute\s+exposed\s+overhead\s+wait\s+wire\s+adds up\n")
        rows = {r["case"]: r for r in self.rows()}
        numbers = r"\s+".join([r"\S+ [mu]?s"] * 6) + r"\s+(\d+)%"
        for case, row in rows.items():
            if "breakdown" not in row:
                continue
            label = f"#{case} overlap={str(row['params']['overlap']).lower()} scope={row['params']['scope']} " \
                    f"[{row['mode']}]"
            m = re.search(re.escape(label) + r"\s+" + numbers, text)
            self.assertIsNotNone(m, (label, text))
            b = row["breakdown"]
            self.assertEqual(int(m.group(1)), round(100 * b["sum_s"] / b["total_s"]))
        self.assertIn("not run (skipped): case(s) 4, 5, 9, 10", text)
        for word in ("compute:", "exposed:", "overhead:", "wait:", "wire:", "adds up"):
            self.assertIn(word, text)

    def test_with_format_json_csv_and_several_files_the_breakdown_is_in_every_row(self):
        self.assertEqual(self.report("--breakdown", "--format", "json"), self.report("--format", "json"))
        rows = self.rows()
        table = list(csv.DictReader(io.StringIO(self.report("--format", "csv", "--breakdown"))))
        for row, line in zip(rows, table):
            for k in KEYS:
                cell = line["breakdown." + k]
                if "breakdown" in row:
                    self.assertAlmostEqual(float(cell), row["breakdown"][k], delta=1e-8 * row["median_s"])
                else:
                    self.assertEqual(cell, "")
        full = json.loads(self.report("--format", "json-full"))
        self.assertEqual([c.get("breakdown") for c in full["cases"]], [r.get("breakdown") for r in rows])
        two = self.report(self.out, "--breakdown")  # the same file twice: a block each
        self.assertEqual(two.count("where the time goes"), 2)


class Errors(InputErrorTest):
    """--breakdown with an option of another view: one line that names both, before any file is read."""

    def test_options_that_do_not_combine_with_breakdown(self):
        missing = self.path("missing.h5")
        for opts, words in ((["--check"], "--breakdown and --check cannot be combined: --check judges limits"),
                            (["--baseline", missing], "--breakdown and --baseline cannot be combined: the "
                                                      "breakdown splits each file's own median"),
                            (["--wide"], "--breakdown and --wide cannot be combined: the breakdown has one table")):
            self.assert_input_error(gpuscale("report", missing, "--breakdown", *opts), words)


if __name__ == "__main__":
    unittest.main(verbosity=2)
