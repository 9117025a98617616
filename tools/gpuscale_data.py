"""Reads a gpuscale result file (docs/results-format.md) into pandas DataFrames
and derives from them the numbers `gpuscale report` prints (docs/metrics.md).

    import gpuscale_data
    r = gpuscale_data.load("results/mine.h5")
    r.cases       # one row per case (index: case), its attributes and parameters
    r.ranks       # one row per rank (index: rank), the /ranks table
    r.case_ranks  # one row per (case, rank): turn, group, op_bytes, verify_error, ...
    r.samples     # one row per (case, rank, sample): wall_start_s, wall_end_s, duration_s, device_time_s, enqueue_s
    r.phases      # one row per phase interval: case, rank, sample, phase, start_s, end_s (empty when none)
    r.metrics()   # one row per case that ran: median_s, speedup, efficiency, algbw_gbps, busbw_gbps, ...

`case` is the case's number as `gpuscale run` and `report` show it, from 1: case N is the group /cases/ of index
N - 1 (`hdf5_path` holds its name). Times are seconds on the run's common clock. Only h5py, numpy and pandas are
needed.
"""
import os

import h5py
import numpy as np
import pandas as pd

# Parameters that do not tell cases apart (the report leaves them out when it pairs cases).
NOT_IDENTITY = ("warmup", "warmup_s", "reps")

# /cases/N datasets of shape [ranks][reps] and their column in `samples`.
SAMPLE_DATASETS = {"wall_start": "wall_start_s", "wall_end": "wall_end_s",
                   "device_time": "device_time_s", "enqueue_time": "enqueue_s"}

# Columns of Result.metrics().
METRICS = ("median_s", "min_s", "p95_s", "slowest_rank", "slowest_ratio", "op_time_s", "algbw_gbps", "busbw_gbps",
           "op_time_min_s", "op_time_max_s", "speedup", "efficiency", "baseline", "scale")

# /cases/N datasets of shape [ranks] that go into `case_ranks`.
RANK_DATASETS = ("turn", "group", "group_rank", "group_size", "op_bytes", "bus_factor",
                 "verify_error", "wrong_elements", "warmup_samples")


class ResultError(Exception):
    """A file that is missing or not a gpuscale result file, or a case that is not in it."""


def _plain(x):
    """An HDF5 attribute or element as a plain Python value (str, int, float, list)."""
    if isinstance(x, bytes):
        return x.decode()
    if isinstance(x, np.ndarray):
        return [_plain(v) for v in x.tolist()]
    if isinstance(x, np.generic):
        return x.item()
    return x


def _column(ds):
    """A 1-D dataset as a numpy array, strings decoded."""
    return ds.asstr()[()] if h5py.check_string_dtype(ds.dtype) else ds[()]


def _attrs(obj):
    return {k: _plain(v) for k, v in obj.attrs.items()}


def _table(group, **extra):
    """A group of equally long 1-D datasets as a DataFrame."""
    return pd.DataFrame({**extra, **{k: _column(group[k]) for k in group}})


def median(x):
    """The report's median: linear interpolation between the middle values (numpy's default)."""
    return float(np.quantile(np.asarray(x, dtype=float), 0.5))


class Result:
    """One result file's tables; see the module's docstring."""

    def __init__(self, path, attrs, cases, ranks, case_ranks, samples, phases):
        self.path = path
        self.name = os.path.basename(path)
        self.attrs = attrs
        self.cases = cases
        self.ranks = ranks
        self.case_ranks = case_ranks
        self.samples = samples
        self.phases = phases

    def case(self, index):
        """The cases row of case `index`; ResultError if there is none."""
        if index not in self.cases.index:
            have = sorted(self.cases.index)
            if not have:
                have = "none"
            elif have == list(range(have[0], have[-1] + 1)):
                have = f"{have[0]} to {have[-1]}"
            else:
                have = ", ".join(map(str, have))
            raise ResultError(f"{self.path}: no case {index} (cases: {have})")
        return self.cases.loc[index]

    def ran(self):
        """Indices of the cases that have samples (not skipped)."""
        return [i for i in self.cases.index if self.cases.at[i, "reps"] > 0 and self.cases.at[i, "status"] != "skipped"]

    def taking_part(self):
        """case_ranks of the ranks that took part in their case (group >= 0; a distributed_gemm with group_size
        below the job's ranks, or a node-pair sweep, leaves the others out)."""
        return self.case_ranks[self.case_ranks["group"] >= 0]

    def sample_times(self):
        """One row per (case, sample): time_s, the sample's time as the report takes it: in parallel mode the
        makespan (max wall_end - min wall_start over ranks), in serial mode the sum over turns of each turn's
        makespan (every rank is its own turn for device-local work)."""
        s = self.samples.merge(self.case_ranks[["case", "rank", "turn"]], on=["case", "rank"])
        s["unit"] = np.where(s["case"].map(self.cases["mode"]) == "serial", s["turn"], 0)
        spans = s.groupby(["case", "unit", "sample"]).agg(lo=("wall_start_s", "min"), hi=("wall_end_s", "max"))
        spans["time_s"] = spans["hi"] - spans["lo"]
        return spans.groupby(["case", "sample"])[["time_s"]].sum().reset_index()

    def rank_medians(self):
        """One row per (case, rank) that took part: median_s, the median of the rank's sample durations
        (wall_end - wall_start), and ratio, that median over the median of the other ranks' medians (the report's
        straggler ratio; NaN for a case with one rank)."""
        part = self.samples.merge(self.taking_part()[["case", "rank"]], on=["case", "rank"])
        med = part.groupby(["case", "rank"])["duration_s"].median().rename("median_s").reset_index()

        def over_the_others(m):
            x = m.to_numpy()
            return pd.Series([x[i] / median(np.delete(x, i)) if len(x) > 1 else np.nan for i in range(len(x))],
                             index=m.index)

        med["ratio"] = med.groupby("case")["median_s"].transform(over_the_others)
        return med

    def metrics(self):
        """One row per case that ran (index: case), as `gpuscale report --format json` computes them: median_s,
        min_s, p95_s (of sample_times), slowest_rank, slowest_ratio, op_time_s, algbw_gbps, busbw_gbps (transfers
        as nccl-tests counts them; NaN otherwise), op_time_min_s, op_time_max_s (the fastest and the slowest
        rank's: per sample the least and the most over ranks of device_time / iters, median over samples),
        speedup, efficiency, baseline (the case it is set against: the serial twin, or for strong scaling the case
        with group_size 1) and scale (what efficiency divides the speedup by: the serial twin's turns, i.e. its
        ranks, or groups for transfers; or group_size); NaN where none."""
        if self.samples.empty:  # no case ran
            return pd.DataFrame(columns=METRICS, index=pd.Index([], name="case"), dtype=float)
        times = self.sample_times().groupby("case")["time_s"]
        m = pd.DataFrame({"median_s": times.median(), "min_s": times.min(), "p95_s": times.quantile(0.95)})
        meds = self.rank_medians()
        slowest = meds.loc[meds.groupby("case")["median_s"].idxmax()].set_index("case")
        m["slowest_rank"] = slowest["rank"]
        m["slowest_ratio"] = slowest["ratio"].fillna(1.0)  # one rank: 1, as the report says
        m["op_time_s"] = self._op_times()
        transfer = self.case_ranks.groupby("case")[["op_bytes", "bus_factor"]].mean()
        m["algbw_gbps"] = transfer["op_bytes"] / m["op_time_s"] / 1e9
        m["busbw_gbps"] = m["algbw_gbps"] * transfer["bus_factor"]
        per_sample = self._op_samples().groupby(["case", "sample"])["op_time_s"]
        m["op_time_min_s"] = per_sample.min().groupby("case").median()
        m["op_time_max_s"] = per_sample.max().groupby("case").median()
        m["speedup"] = m["efficiency"] = m["baseline"] = m["scale"] = np.nan
        self._relate(m)
        return m

    def _op_samples(self):
        """Samples of transfers (cases with op_bytes, except the node-pair sweep) with op_time_s = device_time /
        iters, the time of one operation on that rank in that sample."""
        c = self.cases
        ops = c.index[(c["scope"] != "") & (c["scope"] != "node-pairs") & (c["op_bytes"] > 0)]
        s = self.samples[self.samples["case"].isin(ops)].copy()
        iters = c["params"].map(lambda p: p.get("iters", 1))
        s["op_time_s"] = s["device_time_s"] / iters.loc[s["case"]].to_numpy()
        return s

    def _op_times(self):
        """Transfers: the median over samples of the mean over ranks of device_time / iters (nccl-tests' time of
        one operation), for cases with op_bytes, except the node-pair sweep."""
        return self._op_samples().groupby(["case", "sample"])["op_time_s"].mean().groupby("case").median()

    def rank_op_times(self):
        """Transfers: one row per (case, rank): op_time_s, the median over the rank's samples of device_time /
        iters (each rank's own op time, as the ranks figure shows it)."""
        return self._op_samples().groupby(["case", "rank"])["op_time_s"].median().reset_index()

    def _relate(self, m):
        """Speedup and efficiency as the report pairs cases (src/report/report.cpp, relate_rows)."""
        c = self.cases.loc[m.index]
        key = c["name"] + "\0" + c["ranks"].astype(str) + "\0" + c["nodes"].astype(str)
        ident = c["params"]
        for p in m.index:  # strong scaling: against the same case with group_size 1
            g = ident[p].get("group_size", 1)
            if g < 2:
                continue
            one = {**ident[p], "group_size": 1}
            for b in m.index:
                if key[b] == key[p] and c.at[b, "mode"] == c.at[p, "mode"] and ident[b] == one:
                    self._set_speedup(m, p, b, g)
                    break
        for p in m.index[(c["mode"] == "parallel").to_numpy()]:  # parallel against its serial twin
            for b in m.index[(c["mode"] == "serial").to_numpy()]:
                if key[b] == key[p] and ident[b] == ident[p]:
                    self._set_speedup(m, p, b, c.at[b, "turns"])
                    break

    @staticmethod
    def _set_speedup(m, case, baseline, scale):
        m.at[case, "speedup"] = m.at[baseline, "median_s"] / m.at[case, "median_s"]
        m.at[case, "efficiency"] = m.at[case, "speedup"] / scale
        m.at[case, "baseline"] = baseline
        m.at[case, "scale"] = scale


def load(path):
    """Reads the result file at `path`; ResultError if it is missing or not a gpuscale result file."""
    if not os.path.exists(path):
        raise ResultError(f"{path}: no such file")
    try:
        f = h5py.File(path, "r")
    except OSError as e:
        raise ResultError(f"{path}: not an HDF5 file ({e})") from None
    with f:
        attrs = _attrs(f)
        if attrs.get("software") != "gpuscale" or "cases" not in f or "ranks" not in f:
            raise ResultError(f"{path}: not a gpuscale result file (no software = gpuscale, /cases and /ranks)")
        ranks = _table(f["ranks"], rank=np.arange(attrs.get("ranks", 0))).set_index("rank")
        groups = [f["cases"][k] for k in sorted(f["cases"])]
        cases = pd.DataFrame([_case_row(g) for g in groups]).set_index("case") if groups else pd.DataFrame(
            columns=["case", "name", "mode", "status", "reps"]).set_index("case")
        case_ranks = _concat([_case_ranks(g) for g in groups], ["case", "rank"] + list(RANK_DATASETS))
        samples = _concat([_samples(g) for g in groups], ["case", "rank", "sample", "duration_s"]
                          + list(SAMPLE_DATASETS.values()))
        phases = _concat([_phases(g) for g in groups if "phases" in g],
                         ["case", "rank", "sample", "phase", "start_s", "end_s"])
    if len(cases):
        cases["op_bytes"] = case_ranks.groupby("case")["op_bytes"].mean().reindex(cases.index)
    return Result(path, attrs, cases, ranks, case_ranks, samples, phases)


def _concat(frames, columns):
    frames = [x for x in frames if x is not None]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)


def _case_row(g):
    """A case's attributes, `turns`, `params` (its identity: every parameter but warm-up and reps, as a dict) and
    each parameter as a column of its own where no attribute has that name (warmup, reps and scope are both)."""
    row = {"case": int(g.attrs["index"]) + 1, **_attrs(g), "hdf5_path": g.name}
    del row["index"]
    for k, v in {"scope": "", "comm": "", "groups": 0}.items():  # transfers only
        row.setdefault(k, v)
    params = _attrs(g["parameters"])
    row["turns"] = int(g["turn"][()].max()) + 1 if "turn" in g else row["ranks"]  # schema 1.0: each rank alone
    row["params"] = {k: v for k, v in params.items() if k not in NOT_IDENTITY}
    for k, v in params.items():
        row.setdefault(k, v)
    return row


def _case_ranks(g):
    n = int(g.attrs["ranks"])
    cols = {"case": int(g.attrs["index"]) + 1, "rank": np.arange(n)}
    defaults = {"turn": np.arange(n), "group": np.zeros(n, dtype=int), "op_bytes": np.zeros(n),
                "bus_factor": np.zeros(n)}
    for k in RANK_DATASETS:
        cols[k] = g[k][()] if k in g else defaults.get(k, np.full(n, np.nan))
    return pd.DataFrame(cols)


def _samples(g):
    if "wall_start" not in g:  # skipped: no sample ran
        return None
    ranks, reps = g["wall_start"].shape
    cols = {"case": int(g.attrs["index"]) + 1, "rank": np.repeat(np.arange(ranks), reps),
            "sample": np.tile(np.arange(reps), ranks)}
    for ds, col in SAMPLE_DATASETS.items():
        cols[col] = g[ds][()].reshape(-1)
    df = pd.DataFrame(cols)
    df["duration_s"] = df["wall_end_s"] - df["wall_start_s"]
    return df


def _phases(g):
    p = g["phases"]
    names = np.asarray(_column(p["names"]), dtype=object)
    return pd.DataFrame({"case": int(g.attrs["index"]) + 1, "rank": p["rank"][()], "sample": p["sample"][()],
                         "phase": names[p["phase"][()]], "start_s": p["start"][()], "end_s": p["end"][()]})
