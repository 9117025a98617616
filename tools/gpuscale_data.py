"""Reads a gpuscale result file (docs/results-format.md) into pandas DataFrames
and derives from them the numbers `gpuscale report` prints (docs/metrics.md).

    import gpuscale_data
    r = gpuscale_data.load("results/mine.h5")
    r.cases       # one row per case (index: case), its attributes and parameters
    r.ranks       # one row per rank (index: rank), the /ranks table
    r.case_ranks  # one row per (case, rank): turn, group, op_bytes, verify_error, ...
    r.samples     # one row per (case, rank, sample): wall_start_s, wall_end_s, duration_s, device_time_s, enqueue_s,
                  # core_wait_s (NaN: not known, or a file before schema 1.9)
    r.phases      # one row per phase interval: case, rank, sample, phase, start_s, end_s (empty when none)
    r.metrics()   # one row per case that ran: median_s, speedup, efficiency, algbw_gbps, busbw_gbps, gflops, ...

`case` is the case's number as `gpuscale run` and `report` show it, from 1: case N is the group /cases/ of index
N - 1 (`hdf5_path` holds its name). Times are seconds on the run's common clock. Only h5py, numpy and pandas are
needed.

load() checks what `gpuscale report` checks before it trusts a number of the file (tools/README.md): a file that
report refuses raises ResultError, with one line that starts with the path, and nothing else.
"""
import contextlib
import fcntl
import itertools
import math
import os
import re
import stat
import time

import h5py
import numpy as np
import pandas as pd

# Parameters that do not tell cases apart (the report leaves them out when it pairs cases).
NOT_IDENTITY = ("warmup", "warmup_s", "reps")

# /cases/N datasets of shape [ranks][reps] and their column in `samples`.
SAMPLE_DATASETS = {"wall_start": "wall_start_s", "wall_end": "wall_end_s",
                   "device_time": "device_time_s", "enqueue_time": "enqueue_s", "core_wait": "core_wait_s"}

# Columns of Result.metrics().
METRICS = ("median_s", "min_s", "p95_s", "slowest_rank", "slowest_ratio", "op_time_s", "algbw_gbps", "busbw_gbps",
           "op_time_min_s", "op_time_max_s", "gflops", "gbps", "speedup", "efficiency", "baseline", "scale")

# /cases/N datasets of shape [ranks] that go into `case_ranks`.
RANK_DATASETS = ("turn", "group", "group_rank", "group_size", "op_bytes", "bus_factor",
                 "verify_error", "wrong_elements", "warmup_samples")


class ResultError(ValueError):
    """A file that is missing, not a gpuscale result file or damaged (what `gpuscale report` refuses), or a case
    that is not in it. Its message is one line that starts with the file's path and says why, e.g.
    `results/x.h5: damaged result file: /cases/0001/wall_end[3] is before its wall_start`."""


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
        gflops or gbps (other cases: flops_per_sample, else bytes_per_sample, over the median device_time of every
        sample of the ranks that took part: the report's GF/s/rank or GB/s/rank), speedup, efficiency, baseline
        (the case it is set against: the serial twin, or for strong scaling the case with group_size 1) and scale (what efficiency divides the speedup by: the serial twin's turns, i.e. its
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
        self._rates(m)
        m["speedup"] = m["efficiency"] = m["baseline"] = m["scale"] = np.nan
        self._relate(m)
        return m

    def _rates(self, m):
        """gflops and gbps of the cases that are not timed as one operation (op_time_s NaN), as the report rates
        them (src/report/report.cpp, rates): work per sample over the median device time of all samples of the
        ranks that took part; flops first, bytes where a case has no flops; NaN otherwise."""
        part = self.samples.merge(self.taking_part()[["case", "rank"]], on=["case", "rank"])
        device = part.groupby("case")["device_time_s"].median().reindex(m.index)
        c = self.cases.loc[m.index]
        others = m["op_time_s"].isna()
        flops, nbytes = c["flops_per_sample"].astype(float), c["bytes_per_sample"].astype(float)
        m["gflops"] = (flops / device / 1e9).where(others & (flops > 0))
        m["gbps"] = (nbytes / device / 1e9).where(others & (flops <= 0) & (nbytes > 0))

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


# ---- Reading: what `gpuscale report` checks (src/io/result_reader.cpp) before anything in the file is trusted ----

SCHEMA_VERSION = "1.10"  # the writer's (src/io/result_model.hpp, kSchemaVersion); files of its major version are read
OLDEST_READ = (1, 7)  # and from this minor version on (kOldestSchemaRead); older files: one line naming what reads them
LAST_READER_OF_OLDER = "ef8f806"  # the last commit that reads them (kLastReaderOfOlder)
MAX_RANKS = 1 << 24  # counts beyond these can only come from a damaged file
MAX_INDEX = 1 << 40
INT_MIN, INT_MAX, INT64_MAX = -(1 << 31), (1 << 31) - 1, (1 << 63) - 1
# A live file can be read while its writer flushes a case, half old and half new: one that reads as damaged is
# read again, after a pause that doubles, for about 3 s in all before the damage is believed (as report does).
LIVE_PASSES = 6
LIVE_PAUSE_S = 0.1

ROOT_TEXT = ("softwareVersion", "date", "softwareDependencies", "mpiLibrary", "backend", "backendReason", "comm",
             "commReason", "slurmJobId", "warnings", "lastUpdate", "status")
ROOT_LENIENT = ("commandLine", "configFile", "config", "configOverrides")  # need not be UTF-8: read with U+FFFD
SCOPES = ("world", "intra-node", "inter-node", "node-pairs")
BACKENDS = ("cpu", "cuda")
COMMS = ("", "mpi", "nccl")  # "": a case whose group had no data plane (gpuscale writes it so)
RANGES = ("finite", "rank", "sample", "node", "positive", "level")
KIND_NOUN = {"f": "numbers", "i": "integers", "s": "strings"}
KIND_DTYPE = {"f": np.float64, "i": np.int64, "s": object}

PHASE_COLUMNS = {"rank": "i", "sample": "i", "phase": "i", "start": "f", "end": "f"}


def _rank_columns(n):
    """/ranks' columns for n ranks, (name, kind, (lo, hi) or None) in sets: every file's (1.7 on), then the GPUs a
    rank was handed and the one it uses (1.9 on), the rank's kernel (later in 1.9); a later set is read where its
    first column is there."""
    ints = (INT_MIN, INT_MAX)
    return [
        [("node_index", "i", (0, n - 1)), ("local_size", "i", (1, n)), ("local_rank", "i", (0, n - 1)),
         ("pid", "i", ints)] + [(k, "s", None) for k in ("device_kind", "device_name", "device_uuid",
                                                         "device_pci_bus_id")]
        + [(k, "f", None) for k in ("clock_offset_start", "clock_uncertainty_start", "clock_offset_end",
                                    "clock_uncertainty_end")]
        + [("clock_offset_applied", "f", None), ("clock_uncertainty_applied", "f", None)]
        + [("cpu_affinity", "s", None), ("clock_shared", "i", None), ("cores_available", "i", (0, INT_MAX)),
         ("node_cores", "i", (0, INT_MAX)), ("cuda_visible_devices", "s", None)]
        + [("telemetry", "s", None), ("max_sm_clock", "f", None), ("max_mem_clock", "f", None),
         ("power_limit", "f", None)] + [(k, "i", ints) for k in ("pcie_gen", "pcie_width", "pcie_max_gen",
                                                                 "pcie_max_width", "nvlinks_active", "numa_node")]
        + [("local_cpulist", "s", None)],
        [("gpu_index", "i", ints), ("gpus_visible", "i", ints), ("gpu_peers", "s", None)],
        [("boot_id", "s", None)],
    ]


class _Damage(Exception):
    """What is wrong with the file, in the words that follow "damaged result file: "."""


def load(path):
    """Reads the result file at `path` after checking what `gpuscale report` checks (tools/README.md, "What load
    checks"). ResultError, one line that starts with the path, when it is missing, not a regular file, not HDF5,
    not from gpuscale, of another major schema version or before 1.7, or damaged. A file that a run is writing is
    read as its last flush left it, and read again for about 3 s where it reads as damaged."""
    _check_inode(path)
    for attempt in range(LIVE_PASSES):
        live = _being_written(path)
        try:
            return _read_file(path)
        except ResultError as e:
            if not live or ": damaged result file: " not in str(e):
                raise
            if attempt == LIVE_PASSES - 1:
                raise ResultError(f"{e} (read while a run was writing it)") from None
        time.sleep(LIVE_PAUSE_S * 2 ** attempt)


def _being_written(path):
    """Whether a process holds an exclusive lock on the file: a gpuscale run writing it (flock, as HDF5 takes
    it); a shared lock cannot be had then."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)  # and with it the probe's own lock


def _one_line(text):
    """`text` with its control characters (a newline in a damaged string) escaped."""
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)


def _check_inode(path):
    """What stat says before the file is opened: opening a FIFO would wait for a writer."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise ResultError(f"{path}: no such file") from None
    except OSError as e:
        raise ResultError(_one_line(f"{path}: cannot read it ({e.strerror})")) from None
    if stat.S_ISREG(st.st_mode):
        return
    kinds = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
             (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))
    kind = next((kind for test, kind in kinds if test(st.st_mode)), "not a regular file")
    raise ResultError(_one_line(f"{path}: is {kind}, not a result file"))


def _read_file(path):
    """The file's Result, every check passed; ResultError otherwise."""
    damaged = f"{path}: damaged result file: "
    try:
        with _open(path) as f:
            return _Reader(f, path).result()
    except ResultError:
        raise
    except _Damage as e:
        raise ResultError(_one_line(damaged + str(e))) from None
    except MemoryError:
        raise ResultError(_one_line(damaged + "it asks for more memory than there is")) from None
    except Exception as e:  # noqa: BLE001 (whatever h5py, numpy or pandas raise on it: the file's damage)
        raise ResultError(_one_line(damaged + _why(e))) from None


def _open(path):
    """The file opened read-only without HDF5's file locking (a live run's writer holds the lock; reading never
    needs it), after HDF5's signature is checked, and that it is not in HDF5's earliest format (no checksums, its
    strings in heaps on which the library can loop): such a file is refused before the library reads it."""
    try:
        is_hdf5 = h5py.h5f.is_hdf5(os.fsencode(path))
    except Exception:  # noqa: BLE001 (unreadable: not one either)
        is_hdf5 = False
    if not is_hdf5:
        raise ResultError(f"{path}: not an HDF5 file")
    v = _superblock_version(path)
    if v in (0, 1):
        raise ResultError(f"{path}: not a result file this gpuscale reads: superblock version {v}, HDF5's earliest file "
                          "format (another program's file, a gpuscale file before schema 1.4, which gpuscale up to "
                          f"commit {LAST_READER_OF_OLDER} reads, or a damaged one)")
    try:
        return h5py.File(path, "r", locking=False)
    except OSError as e:
        m = re.search(r"truncated file: .*stored_eof = ([0-9]+)", str(e))
        if m:
            raise _Damage(f"truncated (file is {os.stat(path).st_size} bytes, expected {m.group(1)})") from None
        raise _Damage(f"the superblock or the root group: {_why(e)}") from None


def _superblock_version(path):
    """The version of the file's superblock, where HDF5 looks for its signature (byte 0, 512, 1024, ...); None:
    none found."""
    with open(path, "rb") as f:
        size, at = os.fstat(f.fileno()).st_size, 0
        while at + 9 <= size:
            f.seek(at)
            b = f.read(9)
            if b[:8] == b"\x89HDF\r\n\x1a\n":
                return b[8]
            at = 512 if at == 0 else 2 * at
    return None


def _why(e):
    """An h5py, numpy or pandas failure in a few words: HDF5's reason (its last parenthesis), on one line."""
    said = e.args[0] if isinstance(e, KeyError) and e.args else e  # str(KeyError) quotes its message
    text = " ".join(str(said).split()) or type(e).__name__
    m = re.search(r"\(([^()]+)\)$", text)
    reason = m.group(1) if m else text
    return "checksum mismatch" if "checksum" in reason else reason


@contextlib.contextmanager
def _reading(what):
    """Failures of h5py and numpy while reading `what` as _Damage naming it."""
    try:
        yield
    except (_Damage, ResultError):
        raise
    except MemoryError:
        raise _Damage(f"{what} asks for more memory than there is") from None
    except Exception as e:  # noqa: BLE001
        why = _why(e)
        raise _Damage(f"checksum mismatch reading {what}" if why == "checksum mismatch" else f"{what}: {why}") from None


# ---- schema 1.7 on: each dataset's `digest` binds its values to its path (docs/results-format.md, "Digests") ----

M64 = (1 << 64) - 1


def _mix64(x):
    """SplitMix64's finalizer over a uint64 array (wrapping modulo 2^64)."""
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def _fnv1a(b):
    h = 0xCBF29CE484222325
    for c in b:
        h = ((h ^ c) * 0x100000001B3) & M64
    return h


def _digest(what, raw, values, kind):
    """The digest of the values read from the dataset at path `what`: floats and integers by their 64 bits,
    strings by the FNV-1a of their bytes up to the first NUL."""
    if kind == "s":
        words = np.array([_fnv1a(bytes(x).split(b"\0", 1)[0] if not isinstance(x, str) else x.encode())
                          for x in np.ravel(raw)], dtype=np.uint64)
    else:
        words = np.ascontiguousarray(values, dtype="<f8" if kind == "f" else "<i8").view("<u8")
    seed = np.uint64(_fnv1a(what.encode()))
    keys = seed + np.arange(1, len(words) + 1, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    total = _mix64(words ^ keys).sum(dtype=np.uint64)
    return int(_mix64(np.array([seed ^ total], dtype=np.uint64))[0])


def _check_digest(d, what, raw, values, kind, notes):
    """Notes in `notes` a dataset without a digest, or whose values do not come to it (report names the first of
    a case's once the whole case is read: a value out of range is named as such first)."""
    if not _has_attr(d, "digest", what):
        notes.append(f"{what} has no digest (from schema 1.7 on every dataset has one)")
        return
    v, attr = _attr(d, "digest", what)
    if not isinstance(v, np.integer):
        raise _Damage(f"{attr} is not an integer")
    if int(v) & M64 != _digest(what, raw, values, kind):
        notes.append(f"{what} does not hold what was written for it (data moved, swapped or copied there from "
                     "elsewhere in the file)")


# ---- attributes and datasets, each checked before it is used ----

def _text(v, what, lenient=False):
    """A string attribute or element as str: fixed-length ones up to their first NUL, strictly UTF-8 unless
    `lenient` (then U+FFFD for a bad byte)."""
    if not isinstance(v, (bytes, np.bytes_)):
        raise _Damage(f"{what} is not a string")
    b = bytes(v).split(b"\0", 1)[0]
    try:
        return b.decode()
    except UnicodeDecodeError as e:
        if lenient:
            return b.decode(errors="replace")
        raise _Damage(f"{what} is not valid UTF-8 (byte {e.start})") from None


def _has_attr(obj, name, where):
    with _reading(f"the attributes of {where or '/'}"):
        return name in obj.attrs


def _attr(obj, name, where):
    """Attribute `name` of `obj` (at `where`), a single value."""
    what = f"attribute '{name}' of {where or '/'}"
    if not _has_attr(obj, name, where):
        raise _Damage(f"{what} missing")
    with _reading(what):
        vlen = _variable_length(obj.attrs.get_id(name).dtype)
    if vlen:
        raise _Damage(f"{what} is a variable-length string, which gpuscale does not write")
    with _reading(what):
        v = obj.attrs[name]
    if isinstance(v, np.ndarray):
        if v.shape != ():
            raise _Damage(f"{what} holds {v.size} values, not one")
        v = v[()]
    if isinstance(v, h5py.Empty):
        raise _Damage(f"{what} is empty")
    return v, what


def _check_word(attrs, name, allowed, where):
    """`attrs[name]` is one of `allowed` (as gpuscale's reader holds it), else the file is damaged."""
    if attrs[name] not in allowed:
        words = {"backend": "neither cpu nor cuda", "comm": "neither mpi nor nccl"}[name]
        raise _Damage(f"{where}: attribute '{name}' is '{attrs[name]}', {words}")


def _text_attr(obj, name, where, lenient=False):
    v, what = _attr(obj, name, where)
    return _text(v, what, lenient)


def _int_attr(obj, name, where, lo, hi):
    v, what = _attr(obj, name, where)
    if not isinstance(v, (int, np.integer)) or isinstance(v, (bool, np.bool_)):
        raise _Damage(f"{what} is not an integer")
    if not lo <= int(v) <= hi:
        raise _Damage(f"{where or '/'}: attribute '{name}' is {int(v)}, outside {lo}..{hi}")
    return int(v)


def _number_attr(obj, name, where):
    v, what = _attr(obj, name, where)
    if not isinstance(v, (int, float, np.integer, np.floating)) or isinstance(v, (bool, np.bool_)):
        raise _Damage(f"{what} is not a number")
    return float(v)


def _value_attr(obj, name, where):
    """A parameter: a string, an integer or a number."""
    v, what = _attr(obj, name, where)
    if isinstance(v, (str, bytes, np.bytes_)):
        return _text(v, what)
    if isinstance(v, np.integer) and not isinstance(v, np.bool_):
        return int(v)
    if isinstance(v, np.floating):
        return float(v)
    raise _Damage(f"{what} has an unsupported type")


def _attr_names(obj, where):
    with _reading(f"the attributes of {where or '/'}"):
        return list(obj.attrs.keys())


def _exists(group, name, where):
    """Whether `group` has a member `name` (an external link to another file is damage: never followed)."""
    with _reading(f"{where}/{name}"):
        link = group.get(name, getlink=True)
        if isinstance(link, h5py.ExternalLink):
            raise _Damage(f"cannot read {where}/{name} (HDF5: '{name}' is an external link to {link.filename}, which "
                          "gpuscale does not follow)")
        return link is not None and name in group


def _member(parent, name, where, kind, noun):
    """The member `name` of `parent`, which must be there and a `kind` (h5py.Group or h5py.Dataset); and its path."""
    what = f"{where}/{name}"
    if not _exists(parent, name, where):
        raise _Damage(f"{what} missing")
    with _reading(what):
        m = parent[name]
    if not isinstance(m, kind):
        raise _Damage(f"{what} is not a {noun}")
    return m, what


def _group(parent, name, where):
    return _member(parent, name, where, h5py.Group, "group")[0]


def _is_group(group, name, where):
    if not _exists(group, name, where):
        raise _Damage(f"{where}/{name} missing")
    # Opened and asked its type, as report does: H5Oget_info would also size the object's link and attribute
    # storage, indexes that nothing reads (in a group of many members: dense storage's B-trees), so that damage
    # there would read as damage here alone.
    with _reading(f"{where}/{name}"):
        return isinstance(h5py.h5o.open(group.id, name.encode()), h5py.h5g.GroupID)


def _members(group, where, by_creation=False):
    """The names of a group's members (HDF5's iteration, as report lists them): by name, or in the order they
    were created where the group indexes it and `by_creation`."""
    out = []
    with _reading(f"the members of {where}"):
        by = h5py.h5.INDEX_NAME
        if by_creation and group.id.get_create_plist().get_link_creation_order() & h5py.h5p.CRT_ORDER_INDEXED:
            by = h5py.h5.INDEX_CRT_ORDER
        group.id.links.iterate(out.append, idx_type=by)
    try:
        return [n.decode() for n in out]
    except UnicodeDecodeError:
        raise _Damage(f"{where} has a member whose name is not valid UTF-8") from None


def _dataset(group, name, where):
    return _member(group, name, where, h5py.Dataset, "dataset")


def _values(group, name, where, kind, count=None, digests=None):
    """Dataset `name` of `group` as a flat array (kind "f": float64, "i": int64, "s": str), after its type, its
    number of values (`count` when given, and never more than the file can hold) and its chunks are checked:
    nothing is allocated for values the file does not hold. `digests`: a list to note in what is wrong with the
    dataset's digest (schema 1.7 on; None: not checked)."""
    d, what = _dataset(group, name, where)
    with _reading(what):
        _check_type(d, kind, what)
        n = _size(d, count, what)
        _check_chunks(d, what)
        raw = d[()] if n else np.empty(0)
    if kind == "s":
        values = np.array([_text(x, f"{what}[{i}]") for i, x in enumerate(np.ravel(raw))], dtype=object)
    else:
        values = np.asarray(raw, dtype=KIND_DTYPE[kind]).reshape(-1)
    if digests is not None:
        _check_digest(d, what, raw, values, kind, digests)
    return values


def _check_type(d, kind, what):
    text = d.dtype.kind == "S" or h5py.check_string_dtype(d.dtype) is not None
    ok = text if kind == "s" else not text and d.dtype.kind in ("iu" if kind == "i" else "iuf")
    if not ok:
        raise _Damage(f"{what} is not {KIND_NOUN[kind]}")
    if _variable_length(d.dtype):
        raise _Damage(f"{what} holds variable-length strings, which gpuscale does not write")


def _variable_length(dtype):
    """Whether `dtype` is h5py's variable-length string: its values sit in a global heap, which has no checksum and
    on which the HDF5 library can loop for ever. gpuscale writes none (schema 1.4 on): refused unread."""
    info = h5py.check_string_dtype(dtype)
    return info is not None and info.length is None


def _size(d, count, what):
    """The dataset's number of values, from its dataspace (nothing read yet)."""
    shape = d.shape
    if shape is not None and len(shape) > 2:
        raise _Damage(f"{what} has {len(shape)} dimensions, at most 2 expected")
    n = 0 if shape is None else math.prod(shape)  # None: a null dataspace, no values
    if count is not None and n != count:
        raise _Damage(f"{what} holds {n} values, {count} expected")
    if n > d.file.id.get_filesize() // max(1, d.dtype.itemsize):
        raise _Damage(f"{what} claims {n} values, more than the file can hold")
    return n


def _check_chunks(d, what):
    """A chunked dataset: every chunk there and checksummed (HDF5 hands back fill values for a missing one)."""
    chunks, shape = d.chunks, d.shape
    if chunks is None:
        return
    if len(chunks) != len(shape) or not 1 <= len(shape) <= 2:
        raise _Damage(f"{what} has chunks of another rank than its shape")
    if 0 in chunks:
        raise _Damage(f"{what} has chunks of size 0")
    for at in itertools.product(*(range(0, s, c) for s, c in zip(shape, chunks))):
        info = d.id.get_chunk_info_by_coord(at)
        place = ",".join(map(str, at))
        if info.byte_offset is None:
            raise _Damage(f"{what}: the chunk at [{place}] is missing")
        if info.filter_mask:
            raise _Damage(f"{what}: the chunk at [{place}] skipped its filters (no checksum)")


def _ints_in(v, lo, hi, what):
    bad = np.flatnonzero((v < lo) | (v > hi))
    if len(bad):
        raise _Damage(f"{what}[{bad[0]}] is {v[bad[0]]}, outside {lo}..{hi}")


def _finite(v, non_negative, what, unknown=False):
    """unknown: NaN passes (a value not known)."""
    bad = np.flatnonzero((~np.isfinite(v) | ((v < 0) if non_negative else False)) & ~(np.isnan(v) & unknown))
    if len(bad):
        raise _Damage(f"{what}[{bad[0]}] is {'negative' if np.isfinite(v[bad[0]]) else 'not finite'}")


def _per_rank(group, name, where, kind, ranks, digests=None):
    """A column of one value per rank, or of none."""
    v = _values(group, name, where, kind, digests=digests)
    if len(v) not in (0, ranks):
        raise _Damage(f"{where}/{name} holds {len(v)} values, {ranks} (one per rank) expected")
    return v


def _limits_ok(text):
    """/plan/limits: NAME=NUMBER separated by single spaces (report parses them with strtod)."""
    number = re.compile(r"(\s*[+-]?(inf(inity)?|([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?))?", re.I)
    pos = 0
    while pos < len(text):
        sp = text.find(" ", pos)
        sp = len(text) if sp < 0 else sp
        _, eq, num = text[pos:sp].partition("=")
        if not eq or not number.fullmatch(num):
            return False
        pos = sp + 1
    return True


# ---- the file, part by part ----

class _Reader:
    """Reads an open result file as `gpuscale report` does: each part checked before it is used."""

    def __init__(self, f, path):
        self.f, self.path = f, path
        self.core_wait = False  # schema 1.9 on: each sample's wait for a core (core_wait)
        self.digests = None  # what is wrong with the digests of the case being read (None: not checked)
        self.n = 0  # the run's ranks

    def result(self):
        attrs = self.run_attrs()
        self.environment()
        ranks = self.ranks(attrs)
        self.plan(attrs.get("casesPlanned", 0))
        self.links()
        cases = [self.case(name) for name in self.case_names(attrs)]
        return _result(self.path, attrs, ranks, cases)

    def run_attrs(self):
        f = self.f
        if (not _has_attr(f, "software", "") or _variable_length(f.attrs.get_id("software").dtype)
                or _text_attr(f, "software", "") != "gpuscale"):
            raise ResultError(_one_line(f"{self.path}: not a gpuscale result file (no software = \"gpuscale\" "
                                        "attribute)"))
        attrs = {"software": "gpuscale", "schemaVersion": self.schema_version()}
        attrs.update({k: _text_attr(f, k, "") for k in ROOT_TEXT})
        attrs.update({k: _text_attr(f, k, "", lenient=True) for k in ROOT_LENIENT})
        _check_word(attrs, "backend", BACKENDS, "/")
        _check_word(attrs, "comm", COMMS, "/")
        attrs["nodes"] = _int_attr(f, "nodes", "", 1, MAX_RANKS)
        attrs["complete"] = _int_attr(f, "complete", "", 0, 1)
        attrs["casesPlanned"] = _int_attr(f, "casesPlanned", "", 0, MAX_INDEX)
        return attrs

    def schema_version(self):
        v = _text_attr(self.f, "schemaVersion", "")
        m = re.fullmatch(r"([0-9]{1,5})\.([0-9]{1,5})", v)
        if not m:
            raise _Damage(f"/: attribute 'schemaVersion' is '{v}', not a version (MAJOR.MINOR)")
        if m.group(1) != SCHEMA_VERSION.split(".")[0]:
            raise ResultError(_one_line(f"{self.path}: schemaVersion {v} is not readable by this gpuscale (reads "
                                        f"{SCHEMA_VERSION})"))
        if (int(m.group(1)), int(m.group(2))) < OLDEST_READ:
            raise ResultError(_one_line(f"{self.path}: schemaVersion {v} is older than this gpuscale reads "
                                        f"({OLDEST_READ[0]}.{OLDEST_READ[1]} on); gpuscale up to commit "
                                        f"{LAST_READER_OF_OLDER} reads it"))
        self.core_wait = (int(m.group(1)), int(m.group(2))) >= (1, 9)
        return v

    def environment(self):
        g = _group(self.f, "environment", "")
        return {k: _text_attr(g, k, "/environment", lenient=True) for k in _attr_names(g, "/environment")}

    def ranks(self, attrs):
        """/ranks, one row per rank: as many as /ranks/hostname holds, which the root's `ranks` must say."""
        g = _group(self.f, "ranks", "")
        cols = {"hostname": _values(g, "hostname", "/ranks", "s")}
        n = len(cols["hostname"])
        if n == 0:
            raise _Damage("/ranks/hostname is empty: no ranks")
        if n > MAX_RANKS:
            raise _Damage(f"/ranks/hostname holds {n} ranks")
        _int_attr(self.f, "ranks", "", n, n)
        if attrs["nodes"] > n:
            raise _Damage(f"/: attribute 'nodes' is {attrs['nodes']}, more than its {n} ranks")
        attrs["ranks"] = self.n = n
        for i, columns in enumerate(_rank_columns(n)):
            if i > 0 and not _exists(g, columns[0][0], "/ranks"):
                continue
            for name, kind, bounds in columns:
                cols[name] = _values(g, name, "/ranks", kind, n)
                if bounds:
                    _ints_in(cols[name], *bounds, f"/ranks/{name}")
        return pd.DataFrame(dict(sorted(cols.items())), index=pd.RangeIndex(n, name="rank"))

    def plan(self, planned):
        """/plan: a label and limits per planned case."""
        g = _group(self.f, "plan", "")
        _values(g, "label", "/plan", "s", planned)
        for i, text in enumerate(_values(g, "limits", "/plan", "s", planned)):
            if not _limits_ok(text):
                raise _Damage(f"/plan/limits[{i}] is not a list of NAME=NUMBER")

    def links(self):
        g = _group(self.f, "links", "")
        rank = _values(g, "rank", "/links", "i")
        _ints_in(rank, 0, self.n - 1, "/links/rank")
        _values(g, "peer_pci_bus_id", "/links", "s", len(rank))
        _ints_in(_values(g, "nvlinks", "/links", "i", len(rank)), INT_MIN, INT_MAX, "/links/nvlinks")
        _values(g, "common_ancestor", "/links", "s", len(rank))

    def case_names(self, attrs):
        """The case groups, each a planned case (NNNN below casesPlanned) and, in a run marked complete, every
        planned case there; files that do not say how many were planned are taken as they are."""
        self.cases = _group(self.f, "cases", "")
        names = _members(self.cases, "/cases")
        planned = attrs.get("casesPlanned", 0)
        if not planned:
            return names
        seen = set()
        for name in names:
            if not re.fullmatch(r"[0-9]{1,11}", name) or int(name) >= planned or f"{int(name):04d}" != name:
                raise _Damage(f"/cases/{name} is not one of the {planned} planned cases (casesPlanned)")
            seen.add(int(name))
        if attrs["complete"] and len(seen) < planned:
            i = next(i for i in itertools.count() if i not in seen)
            raise _Damage(f"the run is marked complete, but case {i + 1} of {planned} (/cases/{i:04d}) is missing")
        return names

    def case(self, name):
        """/cases/NAME, its datasets' digests checked last (a value out of range is named as such first)."""
        where = f"/cases/{name}"
        g = _group(self.cases, name, "/cases")
        attrs = self.case_attrs(g, name, where)
        self.digests = []
        c = self.case_data(g, where, attrs)
        if self.digests:
            raise _Damage(self.digests[0])
        return c

    def case_data(self, g, where, attrs):
        """{"where", "attrs", "params", "cols" (per rank), "samples" (None: skipped), "phases"}."""
        c = {"where": where, "attrs": attrs, "samples": None, "phases": None}
        c["params"] = self.parameters(g, where)
        c["cols"] = self.scope(g, where, c["attrs"])
        a = c["attrs"]
        if a["status"] == "skipped":  # nothing ran: no samples
            return c
        if a["reps"] < 1:
            raise _Damage(f"{where}: attribute 'reps' is 0 in a case that ran")
        c["samples"] = self.samples(g, where, a, c["cols"])
        self.turns_and_warmup(g, where, a["ranks"], c["cols"])
        c["phases"] = self.tables(g, where, a)
        if "scope" in a:
            self.transfers(g, where, a["ranks"], c["cols"])
        return c

    def case_attrs(self, g, name, where):
        a = {"index": _int_attr(g, "index", where, 0, MAX_INDEX)}
        if f"{a['index']:04d}" != name:
            raise _Damage(f"{where}: attribute 'index' is {a['index']}")
        for k, allowed, words in (("name", None, ""), ("workload", None, ""),
                                  ("mode", ("serial", "parallel"), "neither serial nor parallel"),
                                  ("backend", BACKENDS, "neither cpu nor cuda"),
                                  ("status", ("ok", "verify-failed", "skipped"), "not ok, verify-failed or skipped")):
            a[k] = _text_attr(g, k, where)
            if allowed and a[k] not in allowed:
                raise _Damage(f"{where}: attribute '{k}' is '{a[k]}', {words}")
        a["status_reason"] = _text_attr(g, "status_reason", where)
        a["note"] = _text_attr(g, "note", where)
        a["ranks"] = _int_attr(g, "ranks", where, 1, self.n)
        a["nodes"] = _int_attr(g, "nodes", where, 1, a["ranks"])
        a["reps"] = _int_attr(g, "reps", where, 0, INT_MAX)
        a["warmup"] = _int_attr(g, "warmup", where, 0, INT_MAX)
        for k in ("flops_per_sample", "bytes_per_sample"):
            a[k] = _number_attr(g, k, where)
            if not (math.isfinite(a[k]) and a[k] >= 0):
                raise _Damage(f"{where}: attribute '{k}' is not a number >= 0")
        a["verify_tolerance"] = _number_attr(g, "verify_tolerance", where)
        for k in _attr_names(g, where):
            if k.startswith("expect."):  # the experiment's limits (1.4 on)
                a[k] = _number_attr(g, k, where)
                if math.isnan(a[k]):
                    raise _Damage(f"{where}: attribute '{k}' is not a number")
        return a

    def parameters(self, g, where):
        p = _group(g, "parameters", where)
        pw = f"{where}/parameters"
        params = {k: _value_attr(p, k, pw) for k in _attr_names(p, pw)}
        for k in ("iters", "group_size"):  # what the report reads as counts
            v = params.get(k, 1)
            if not isinstance(v, int) or not 1 <= v <= INT_MAX:
                raise _Damage(f"{pw}: attribute '{k}' is not a count")
        return params

    def scope(self, g, where, a):
        """Transfers: the scope's attributes and each rank's group in it (the per-rank columns so far)."""
        if not _has_attr(g, "scope", where):
            return {}
        a["scope"] = _text_attr(g, "scope", where)
        if a["scope"] not in SCOPES:
            raise _Damage(f"{where}: attribute 'scope' is '{a['scope']}'")
        a["comm"] = _text_attr(g, "comm", where)
        _check_word(a, "comm", COMMS, where)
        a["groups"] = _int_attr(g, "groups", where, 0, a["ranks"])
        cols = {}
        for k, lo, hi in (("group", -1, a["groups"] - 1), ("group_size", 0, a["ranks"]),
                          ("group_rank", -1, a["ranks"] - 1)):
            cols[k] = _per_rank(g, k, where, "i", a["ranks"], self.digests)
            _ints_in(cols[k], lo, hi, f"{where}/{k}")
        return cols

    def samples(self, g, where, a, cols):
        """The timed samples, exactly ranks x reps values each, and the verification per rank."""
        s = {}
        n = a["ranks"] * a["reps"]
        for k, non_negative in (("device_time", True), ("enqueue_time", True), ("core_wait", True),
                                ("wall_start", False), ("wall_end", False)):
            if k == "core_wait" and not self.core_wait:
                s[k] = np.full(n, np.nan)  # before schema 1.9: not known
                continue
            s[k] = _values(g, k, where, "f", n, self.digests)
            _finite(s[k], non_negative, f"{where}/{k}", unknown=k == "core_wait")  # core_wait NaN: not known
        early = np.flatnonzero(s["wall_end"] < s["wall_start"])
        if len(early):
            raise _Damage(f"{where}/wall_end[{early[0]}] is before its wall_start")
        cols["verify_error"] = _per_rank(g, "verify_error", where, "f", a["ranks"], self.digests)
        return s

    def turns_and_warmup(self, g, where, ranks, cols):
        for k, hi in (("turn", ranks - 1), ("warmup_samples", INT64_MAX)):
            cols[k] = _per_rank(g, k, where, "i", ranks, self.digests)
            _ints_in(cols[k], 0, hi, f"{where}/{k}")
        if _exists(g, "warmup_device_time", where):
            d, what = _dataset(g, "warmup_device_time", where)
            with _reading(what):
                shape = d.shape
            if shape is None or len(shape) != 2 or shape[0] != ranks or shape[1] > INT_MAX:
                raise _Damage(f"{what} is not of shape [ranks][samples]")
            _values(g, "warmup_device_time", where, "f", ranks * shape[1], self.digests)

    def transfers(self, g, where, ranks, cols):
        cols["wrong_elements"] = _per_rank(g, "wrong_elements", where, "i", ranks, self.digests)
        _ints_in(cols["wrong_elements"], 0, INT64_MAX, f"{where}/wrong_elements")
        for k in ("op_bytes", "bus_factor"):
            cols[k] = _per_rank(g, k, where, "f", ranks, self.digests)
            _finite(cols[k], True, f"{where}/{k}")

    # ---- a case's tables: every group of it other than its parameters ----

    def tables(self, g, where, a):
        """Reads and checks every table; returns the phases table's columns (None: none)."""
        phases = None
        for name in _members(g, where):
            if name != "parameters" and _is_group(g, name, where):
                t = self.table(g, name, f"{where}/{name}", a)
                phases = t if name == "phases" else phases
        return phases

    def table(self, g, name, tw, a):
        """{column: {"name", "kind", "range", "levels", "values", "level_values"}}, one length, each in range."""
        t = _group(g, name, tw.rsplit("/", 1)[0])
        self.table_attrs(t, name, tw)
        cols = [self.column(t, name, m, tw) for m in _members(t, tw, by_creation=True)]
        levels = {c["levels"] for c in cols if c["levels"]}
        cols = [c for c in cols if c["name"] not in levels]
        for c in cols:
            c["values"] = _values(t, c["name"], tw, c["kind"], digests=self.digests)
            if len(c["values"]) != len(cols[0]["values"]):
                raise _Damage(f"{tw}/{c['name']} holds {len(c['values'])} values, {len(cols[0]['values'])} expected")
            if c["levels"]:
                c["level_values"] = _values(t, c["levels"], tw, "s", digests=self.digests)
        rows = len(cols[0]["values"]) if cols else 0
        for c in cols:
            _check_range(c, tw, rows, a["ranks"], a["reps"], self.n)
        return {c["name"]: c for c in cols}

    def table_attrs(self, t, name, tw):
        for k in _attr_names(t, tw):
            if k == "description":
                _text_attr(t, k, tw)
            elif not math.isfinite(_number_attr(t, k, tw)):
                raise _Damage(f"{tw}: attribute '{k}' is not a finite number")

    def column(self, t, table, name, tw):
        """Column `name` as its attributes describe it, no values yet."""
        d, what = _dataset(t, name, tw)
        c = {"name": name, "kind": None, "range": None, "levels": None}
        for k in ("unit", "description"):
            if _has_attr(d, k, what):
                _text_attr(d, k, what)
        if _has_attr(d, "unitSI", what):
            _number_attr(d, "unitSI", what)
        if _has_attr(d, "range", what):
            r = _text_attr(d, "range", what)
            c["range"] = r if r in RANGES else None
        if _has_attr(d, "clock", what):
            _text_attr(d, "clock", what)
        if c["range"] == "level":
            c["levels"] = _text_attr(d, "levels", what)
        c["kind"] = _kind_of(d, what)
        return c


def _kind_of(d, what):
    with _reading(what):
        dt = d.dtype
    if dt.kind == "S" or h5py.check_string_dtype(dt) is not None:
        return "s"
    if dt.kind in "iu":
        return "i"
    if dt.kind == "f":
        return "f"
    raise _Damage(f"{what} holds neither integers, numbers nor strings")


def _check_range(c, tw, rows, ranks, reps, run_ranks):
    """Every value of the column within its range."""
    what, r = f"{tw}/{c['name']}", c["range"]
    if r is None:
        return
    if r == "finite":
        if c["kind"] == "s":
            raise _Damage(f"{what}: range 'finite' on strings")
        _finite(c["values"], False, what)
        return
    if c["kind"] != "i":
        raise _Damage(f"{what}: range '{r}' on values that are not integers")
    if r == "level":
        n = c["levels"]
        levels = c["level_values"]
        if len(set(levels)) != len(levels) or len(levels) > max(rows, 1):
            raise _Damage(f"{tw}/{n}: {len(levels)} {n} for {rows} rows, or {n} repeated")
        _ints_in(c["values"], 0, len(levels) - 1, what)
        return
    lo, hi = {"rank": (0, ranks - 1), "sample": (0, reps - 1), "node": (0, run_ranks - 1),
              "positive": (1, INT_MAX)}[r]
    _ints_in(c["values"], lo, hi, what)


# ---- the checked parts as DataFrames ----

def _result(path, attrs, ranks, cases):
    rows = [_case_row(c) for c in cases]
    cases_df = pd.DataFrame(rows).set_index("case") if rows else pd.DataFrame(
        columns=["case", "name", "mode", "status", "reps"]).set_index("case")
    case_ranks = _concat([_case_ranks(c) for c in cases], ["case", "rank"] + list(RANK_DATASETS))
    samples = _concat([_samples(c) for c in cases], ["case", "rank", "sample", "duration_s"]
                      + list(SAMPLE_DATASETS.values()))
    phases = _concat([_phases(c) for c in cases], ["case", "rank", "sample", "phase", "start_s", "end_s"])
    if len(cases_df):
        cases_df["op_bytes"] = case_ranks.groupby("case")["op_bytes"].mean().reindex(cases_df.index)
    return Result(path, attrs, cases_df, ranks, case_ranks, samples, phases)


def _concat(frames, columns):
    frames = [x for x in frames if x is not None]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)


def _number(c):
    return c["attrs"]["index"] + 1


def _case_row(c):
    """A case's attributes, `turns`, `params` (its identity: every parameter but warm-up and reps, as a dict) and
    each parameter as a column of its own where no attribute has that name (warmup, reps and scope are both)."""
    a = dict(c["attrs"])
    del a["index"]
    row = {"case": _number(c), **a, "hdf5_path": c["where"]}
    for k, v in {"scope": "", "comm": "", "groups": 0}.items():  # a case that moves no data has none
        row.setdefault(k, v)
    turn = c["cols"].get("turn")
    row["turns"] = int(turn.max()) + 1 if turn is not None and len(turn) else row["ranks"]  # skipped: each alone
    row["params"] = {k: v for k, v in c["params"].items() if k not in NOT_IDENTITY}
    for k, v in c["params"].items():
        row.setdefault(k, v)
    return row


def _case_ranks(c):
    n = c["attrs"]["ranks"]  # checked: at most the run's ranks
    cols = {"case": _number(c), "rank": np.arange(n)}
    defaults = {"turn": np.arange(n), "group": np.zeros(n, dtype=int), "op_bytes": np.zeros(n),
                "bus_factor": np.zeros(n)}
    for k in RANK_DATASETS:
        v = c["cols"].get(k)
        cols[k] = v if v is not None and len(v) else defaults.get(k, np.full(n, np.nan))
    return pd.DataFrame(cols)


def _samples(c):
    if c["samples"] is None:  # skipped: no sample ran
        return None
    ranks, reps = c["attrs"]["ranks"], c["attrs"]["reps"]
    cols = {"case": _number(c), "rank": np.repeat(np.arange(ranks), reps), "sample": np.tile(np.arange(reps), ranks)}
    for ds, col in SAMPLE_DATASETS.items():
        cols[col] = c["samples"][ds]
    df = pd.DataFrame(cols)
    df["duration_s"] = df["wall_end_s"] - df["wall_start_s"]
    return df


def _phases(c):
    """The phases table as rows (a 1.6 file's table is checked by its own attributes: that it has the columns
    and levels this needs is checked here)."""
    t = c["phases"]
    if t is None:
        return None
    tw = f"{c['where']}/phases"
    for k, kind in PHASE_COLUMNS.items():
        if k not in t or t[k]["kind"] != kind:
            raise _Damage(f"{tw}/{k} missing, or not {KIND_NOUN[kind]}")
    if not t["phase"]["levels"]:
        raise _Damage(f"{tw}/phase is not an index into the phase names (range level)")
    names = np.asarray(t["phase"]["level_values"], dtype=object)
    return pd.DataFrame({"case": _number(c), "rank": t["rank"]["values"], "sample": t["sample"]["values"],
                         "phase": names[t["phase"]["values"]], "start_s": t["start"]["values"],
                         "end_s": t["end"]["values"]})
