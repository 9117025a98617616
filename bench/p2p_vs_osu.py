#!/usr/bin/env python3
"""gpuscale's p2p workload beside OSU's osu_latency, osu_bw and osu_bibw, in interleaved rounds.

Each round runs the three OSU tests (`-m 8:1048576`), then `gpuscale run` of a
p2p config with OSU's counts (10 samples of 1000 round trips; 10 windows of
64 messages), all through the same launcher, and prints per test and size
OSU's figure, gpuscale's (`report --format json`: latency_us, bandwidth_mbps)
and gpuscale / OSU, with what gpuscale said of the host where it found it
busy or the ranks descheduled. Latency: above 1 is gpuscale slower;
bandwidth: below 1.
The end gives per row the median of the rounds' ratios, and the ratio of the
two tools' best figures over the rounds (least latency, most bandwidth), each
against the 10% asked: a gpuscale faster than OSU by more than that measures
something else, and is named as such.

This machine has two regimes a message's latency flips between from one run
to the next (osu_latency's 8 B 0.11-0.18 us in one, 0.35-0.64 us in the
other; bench/README.md): each round prints OSU's 8 B latency, a round whose
two tools read different regimes shows as a ratio far from 1 either way, and
the best figures come from each tool's faster regime.

OSU is not in the tree: build it from its source with the MPI library
gpuscale was built with, e.g. for MPICH

    ./configure CC=mpicc.mpich CXX=mpicxx.mpich && make -C c/mpi/pt2pt/standard osu_latency osu_bw osu_bibw
    python3 bench/p2p_vs_osu.py --gpuscale build-mpich/src/gpuscale --osu OSU_BUILD \\
        --mpiexec "mpiexec.mpich -n 2 -bind-to core"

--osu-thread-level N runs OSU a second time at MPI thread level N (Open MPI's
OMPI_MPI_THREAD_LEVEL; 2: SERIALIZED, the level gpuscale asks) and adds its
ratio: Open MPI 4.1 locks around every call above MPI_THREAD_SINGLE.

A benchmark, not a test: it exits 0 whatever the ratios (non-zero only when a
command fails).
"""
import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile

SIZES = (8, 1024, 1048576)
TESTS = ("latency", "bw", "bibw")
TARGET = 0.10
CONFIG = """\
[defaults]
backend = "cpu"
comm = "mpi"
warmup = 1
reps = 10

[[experiment]]
name = "latency"
workload = "p2p"
pattern = "latency"
bytes = [8, 1024, 1048576]
iters = 1000
modes = ["parallel"]

[[experiment]]
name = "bandwidth"
workload = "p2p"
pattern = ["bw", "bibw"]
bytes = [8, 1024, 1048576]
iters = 10
window = 64
modes = ["parallel"]
"""


def osu_binary(osu_dir, test):
    for sub in ("c/mpi/pt2pt/standard", "mpi/pt2pt/standard", "mpi/pt2pt", ""):
        path = os.path.join(osu_dir, sub, "osu_" + test)
        if os.access(path, os.X_OK):
            return path
    sys.exit("p2p_vs_osu: no osu_%s under %s (build it: make -C c/mpi/pt2pt/standard osu_%s)" % (test, osu_dir, test))


def osu_table(out):
    """{size: figure} of an OSU test's output, for SIZES (latency in us, bandwidth in MB/s)."""
    rows = (line.split() for line in out.splitlines())
    table = {int(p[0]): float(p[1]) for p in rows if len(p) == 2 and p[0].isdigit()}
    missing = [size for size in SIZES if size not in table]
    if missing:
        raise ValueError("OSU printed no row for %s B:\n%s" % (", ".join(map(str, missing)), out))
    return {size: table[size] for size in SIZES}


def output(cmd, env=None):
    """The command's standard output; its exit status and last lines end the benchmark where it fails."""
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit("p2p_vs_osu: %s exited %d:\n%s" % (" ".join(cmd), p.returncode, (p.stdout + p.stderr)[-2000:]))
    return p.stdout


def osu(launch, binary, env):
    return osu_table(output(launch + [binary, "-m", "8:%d" % SIZES[-1]], env))


def gpuscale(launch, binary, config, result):
    """{test: {size: figure}} from one run of the config, and {(test, size): what gpuscale said of the host}."""
    output(launch + [binary, "run", config, "-o", result, "--force"])
    out, host = {t: {} for t in TESTS}, {}
    for row in json.loads(output([binary, "report", result, "--format", "json"])):
        pattern, size = row["params"]["pattern"], row["params"]["bytes"]
        out[pattern][size] = row["latency_us"] if pattern == "latency" else row["bandwidth_mbps"]
        said = [k for k in ("busy", "descheduled") if row.get("host", {}).get(k)]
        if said:
            host[(pattern, size)] = "gpuscale: host " + " and ".join(said)
    return out, host


def slower(test, ratio):
    """gpuscale's time over OSU's, whatever the figure's unit (bandwidth is the inverse of a time)."""
    return ratio if test == "latency" else 1 / ratio


def verdict(test, ratio):
    s = slower(test, ratio)
    if s > 1 + TARGET:
        return "gpuscale slower by more than %d%%" % (TARGET * 100)
    if s < 1 / (1 + TARGET):
        return "gpuscale FASTER by more than %d%%: one of them measures something else" % (TARGET * 100)
    return "within %d%%" % (TARGET * 100)


def one_round(args, launch, osu_dir, config, result):
    env = dict(os.environ)
    figures = {"osu": {t: osu(launch, osu_binary(osu_dir, t), env) for t in TESTS}}
    if args.osu_thread_level is not None:
        env["OMPI_MPI_THREAD_LEVEL"] = str(args.osu_thread_level)
        figures["osu_level"] = {t: osu(launch, osu_binary(osu_dir, t), env) for t in TESTS}
    figures["gpuscale"], figures["host"] = gpuscale(launch, args.gpuscale, config, result)
    return figures


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpuscale", default="build/src/gpuscale")
    ap.add_argument("--osu", required=True, help="an OSU 7.x build directory (or where its osu_* binaries are)")
    ap.add_argument("--mpiexec", default="mpiexec -n 2", help="the launcher of both, as one string")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--osu-thread-level", type=int, help="also OSU at this OMPI_MPI_THREAD_LEVEL (Open MPI)")
    args = ap.parse_args()
    launch = shlex.split(args.mpiexec)
    ratios = {(t, s): [] for t in TESTS for s in SIZES}
    level_ratios = {(t, s): [] for t in TESTS for s in SIZES}
    best = {}  # (tool, test, size): its best figure over the rounds
    with tempfile.TemporaryDirectory() as tmp:
        config = os.path.join(tmp, "p2p-osu.toml")
        with open(config, "w") as f:
            f.write(CONFIG)
        for r in range(args.rounds):
            with open("/proc/loadavg") as f:
                load = f.read().split()[0]
            fig = one_round(args, launch, args.osu, config, os.path.join(tmp, "p2p.h5"))
            print("round %d (load %s; osu_latency 8 B %.2f us)" % (r + 1, load, fig["osu"]["latency"][8]))
            for t in TESTS:
                for s in SIZES:
                    g, o = fig["gpuscale"][t][s], fig["osu"][t][s]
                    ratios[(t, s)].append(g / o)
                    for tool, v in (("gpuscale", g), ("osu", o)):
                        key = (tool, t, s)
                        best[key] = v if key not in best else (min if t == "latency" else max)(best[key], v)
                    line = "  %-7s %8d B  OSU %10.2f  gpuscale %10.2f  gpuscale/OSU %5.2f" % (t, s, o, g, g / o)
                    if "osu_level" in fig:
                        level_ratios[(t, s)].append(g / fig["osu_level"][t][s])
                        line += "  /OSU at level %d %5.2f" % (args.osu_thread_level, g / fig["osu_level"][t][s])
                    if (t, s) in fig["host"]:
                        line += "  (%s)" % fig["host"][(t, s)]
                    print(line, flush=True)
    print("gpuscale / OSU over %d rounds (latency: above 1 is gpuscale slower; bandwidth: below 1), target 1 +- %d%%:"
          " the median of the rounds' ratios (their range), and the best figure of each over the best of the other"
          " (least latency, most bandwidth: both tools' best regime)" % (args.rounds, TARGET * 100))
    for (t, s), rs in ratios.items():
        m = statistics.median(rs)
        b = best[("gpuscale", t, s)] / best[("osu", t, s)]
        line = "  %-7s %8d B  median %5.2f (%.2f-%.2f) %s; best %5.2f %s" % (t, s, m, min(rs), max(rs), verdict(t, m),
                                                                           b, verdict(t, b))
        if level_ratios[(t, s)]:
            line += "; at level %d: %.2f" % (args.osu_thread_level, statistics.median(level_ratios[(t, s)]))
        print(line)


if __name__ == "__main__":
    main()
