"""The cost model where the network, not the cores, is the bottleneck: 4
emulated hosts (network namespaces) whose links are limited with tc tbf
(RATE each way, 400 Mbit/s unless GPUSCALE_TESTBED_RATE says otherwise;
jumbo frames, see hosts.py),
configs/model-transfers.toml (allreduce, allgather, sendrecv, 64 KiB to
16 MiB) run on them, and `gpuscale model` / `predict` checked against runs
of a shape the model did not see:

- fitted on 2 and 3 hosts (1 rank each), the prediction for 4 hosts;
- fitted on 1 host with 2 ranks and 2 hosts with 1 rank, the prediction for
  2 hosts with 2 ranks each;
- both with Open MPI tuned to move nccl-tests' bus bytes (TUNED, below),
  and the first again at MPI's defaults (DEFAULTS), where the model takes
  each case's algorithm from the run's settings.

What is checked: every case is predicted before the run, the run changes no
prediction, and what `predict --against` says of each case follows from its
numbers (measured / predicted, inside or outside the interval, the count of
those inside). How near the predictions come is printed (ctest -V shows it),
never judged: an estimate's accuracy depends on how busy the machine is (the
emulated hosts share its cores), and belongs to bench/model_accuracy.py and
bench/README.md ("Model accuracy on rate-limited hosts").

Exits 77 (ctest: skipped) where the hosts cannot be made: not root, no `ip`,
`unshare` or `tc`, or a kernel without the tbf qdisc."""
import json
import os
import re
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hosts  # noqa: E402
from common import GPUSCALE, gpuscale  # noqa: E402

HOSTS = None  # the hosts.Hosts of this run, set by use()
NODES = 4
RATE = os.environ.get("GPUSCALE_TESTBED_RATE", "400mbit")
SHIPPED = os.path.join(os.environ.get("GPUSCALE_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", "..")),
                       "configs", "model-transfers.toml")
CONFIG = None  # the shipped config on the CPU backend over MPI whatever this build has (a CUDA build would pick NCCL)
OPS = ("allreduce", "allgather", "sendrecv")
MIN_BYTES = 1 << 20

# Open MPI 4.1 over TCP puts each op's bus bytes on the wire on 2, 3 and 4 ranks only with these
# (measured: bench/README.md, "Model accuracy on rate-limited hosts"):
# - btl_tcp_flags send: by default the TCP btl sends a large message as one "put" fragment, and what
#   the peer sends back on the pair's one connection (its own put, control messages) waits behind it:
#   two ranks that exchange both ways take turns, each direction gets half the link (sendrecv on 2 ranks,
#   the two-process allgather, recursive doubling, Rabenseifner).
# - every message eager (btl_tcp_eager_limit and max_send_size 32 MiB, above the largest): a message over the
#   eager limit (64 KiB) waits for the receiver's answer to its first fragment, and on 3 hosts or more that answer
#   queues in tbf behind the receiver's own data to its other neighbour (up to 50 ms): a ring step took up to 1.35x
#   its wire time, by an amount in wire bytes (4x the time at a quarter of the rate), not CPU time.
# - allreduce and allgather pinned to the ring: tuned's defaults are Rabenseifner for allreduce (on 3 ranks
#   one rank's link is busy 3 times the buffer's transfer time, the ring's 4/3) and recursive doubling (bruck
#   on 3 ranks) for allgather.
TUNED = ["--mca", "btl_tcp_flags", "send",
       "--mca", "btl_tcp_eager_limit", "33554432", "--mca", "btl_tcp_max_send_size", "33554432",
       "--mca", "coll_tuned_use_dynamic_rules", "1",
       "--mca", "coll_tuned_allreduce_algorithm", "4",
       "--mca", "coll_tuned_allgather_algorithm", "4",
       # Up to 4 ranks share this machine's cores: a rank that waits yields the core.
       "--mca", "mpi_yield_when_idle", "1"]
# MPI as a user's job has it: tuned's fixed rules pick the algorithms (Rabenseifner for allreduce, the
# two-process exchange, Bruck and recursive doubling for allgather on 2, 3 and 4 ranks), which the model reads
# from the run's settings (docs/model.md, "The algorithm MPI picks").
DEFAULTS = ["--mca", "mpi_yield_when_idle", "1"]
MCA = {"tuned": TUNED, "defaults": DEFAULTS}

SCRATCH = None  # a temporary folder for every run of this module
RUNS = {}  # (nodes, ranks per node) -> result file, each job run once


def payload_rate(rate):
    """tc's rate ("200mbit") in bytes per second."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([kmg]?)bit", rate)
    if not m:
        raise ValueError(f"GPUSCALE_TESTBED_RATE: a rate such as 200mbit, got {rate}")
    return float(m.group(1)) * {"": 1, "k": 1e3, "m": 1e6, "g": 1e9}[m.group(2)] / 8


def run_job(test, nodes, per_node, mpi="tuned"):
    """The result file of the config on `nodes` hosts with `per_node` ranks each, with MCA[mpi] (run once, then
    shared)."""
    key = (nodes, per_node, mpi)
    if key not in RUNS:
        out = os.path.join(SCRATCH, f"n{nodes}x{per_node}-{mpi}.h5")
        p = HOSTS.mpirun(nodes * per_node, [GPUSCALE, "run", CONFIG, "-o", out], extra=MCA[mpi], timeout=300,
                         cwd=SCRATCH, nodes=nodes, slots=per_node)
        test.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        RUNS[key] = out
    return RUNS[key]


def report_rows(test, path):
    p = gpuscale("report", path, "--format", "json")
    test.assertEqual(p.returncode, 0, p.stdout + p.stderr)
    return json.loads(p.stdout)


def fit(test, name, *files):
    model = os.path.join(SCRATCH, name)
    # The hosts share this machine's cores: each sees the others' ranks as load, and most cases read host busy.
    p = gpuscale("model", *files, "-o", model, "--include-noisy")
    test.assertEqual(p.returncode, 0, p.stdout + p.stderr)
    print(p.stdout, end="", file=sys.stderr)
    return model


def predict(test, model, ranks, nodes, *extra):
    p = gpuscale("predict", model, "--ranks", str(ranks), "--nodes", str(nodes), "--config", CONFIG, *extra,
                 "--format", "json")
    test.assertEqual(p.returncode, 0, p.stdout + p.stderr)
    return json.loads(p.stdout)


def table(test, model, ranks, nodes, against):
    """predict's own table of predicted beside measured, for the log."""
    p = gpuscale("predict", model, "--ranks", str(ranks), "--nodes", str(nodes), "--config", CONFIG, "--against",
                 against)
    test.assertEqual(p.returncode, 0, p.stdout + p.stderr)
    return p.stdout


def checked(rows):
    """The rows printed: the ops of OPS at MIN_BYTES and more."""
    return [r for r in rows if r["params"]["op"] in OPS and int(r["params"]["bytes"]) >= MIN_BYTES]


def line(r, measured=None):
    """One case: predicted and measured op time (the mean over ranks, or `measured`), and measured / predicted."""
    measured = r["measured_op_time_s"] if measured is None else measured
    predicted = r["predicted_op_time_s"]
    return (f"{r['params']['op']:10s} {int(r['params']['bytes']):>9d} B  predicted {predicted * 1e3:8.2f} ms  "
            f"measured {measured * 1e3:8.2f} ms  measured/predicted {measured / predicted:5.2f}x")


def check_against(test, after):
    """What predict --against says of each case follows from the numbers it prints, and its count of the measured
    values inside their interval from its rows."""
    inside = with_interval = 0
    for r in after["cases"]:
        if "measured_op_time_s" not in r or "predicted_op_time_s" not in r:
            continue
        m, p = r["measured_op_time_s"], r["predicted_op_time_s"]
        test.assertAlmostEqual(r["measured_over_predicted"], m / p, places=9)
        test.assertAlmostEqual(r["signed_error"], m / p - 1, places=9)
        if "predicted_op_time_lo_s" in r:
            with_interval += 1
            inside += r["inside_interval"]
            test.assertEqual(r["inside_interval"], r["predicted_op_time_lo_s"] <= m <= r["predicted_op_time_hi_s"])
        else:
            test.assertNotIn("inside_interval", r)
    print(f"{inside} of {with_interval} measured op times inside their 95% interval", file=sys.stderr)
    return inside, with_interval


class LinksAreTheBottleneck(unittest.TestCase):
    def test_a_the_largest_size_runs_near_the_link_rate_on_2_3_and_4_hosts(self):
        # tbf holds every link to its rate: no op gets more (a test bed that does not limit is broken). How near
        # the rate they come is printed (the premise of bench/model_accuracy.py's figures).
        link = payload_rate(RATE)
        for nodes in (2, 3, 4):
            for r in report_rows(self, run_job(self, nodes, 1)):
                if int(r["params"]["bytes"]) != 16 << 20:
                    continue
                busbw = r["busbw_gbps"] * 1e9
                print(f"{nodes} hosts: {r['params']['op']:10s} 16 MiB busbw {busbw / 1e6:6.1f} MB/s, "
                      f"{busbw / link:.0%} of the link's {link / 1e6:.1f} MB/s", file=sys.stderr)
                with self.subTest(nodes=nodes, op=r["params"]["op"]):
                    self.assertLess(busbw, 1.05 * link)


class MoreNodes(unittest.TestCase):
    """Fitted on 2 and 3 hosts, 1 rank each: 4 hosts."""

    def test_b_predicted_before_the_run_then_set_against_it(self):
        model = fit(self, "nodes.json", run_job(self, 2, 1), run_job(self, 3, 1))
        before = predict(self, model, 4, 4)
        self.assertEqual((before["job"]["ranks"], before["job"]["nodes"]), (4, 4))
        for r in before["cases"]:
            with self.subTest(case=r["case"]):
                self.assertEqual(r["status"], "predicted", r.get("reason"))
                self.assertGreater(r["predicted_op_time_s"], 0)
        measured = run_job(self, 4, 1)
        after = predict(self, model, 4, 4, "--against", measured)
        print(table(self, model, 4, 4, measured), file=sys.stderr)
        rows = checked(after["cases"])
        self.assertEqual(len(rows), 3 * 3)
        for r, b in zip(after["cases"], before["cases"]):  # the run changed nothing in the prediction
            self.assertEqual(r["predicted_op_time_s"], b["predicted_op_time_s"])
        for r in rows:
            print(line(r), file=sys.stderr)
        check_against(self, after)


class RanksPerNode(unittest.TestCase):
    """Fitted on 1 host with 2 ranks and 2 hosts with 1 rank: 2 hosts with 2 ranks each (ranks 0, 1 on host 1)."""

    def test_c_inside_and_between_nodes_set_against_the_run(self):
        model = fit(self, "ranks.json", run_job(self, 1, 2), run_job(self, 2, 1))
        measured = run_job(self, 2, 2)
        after = predict(self, model, 4, 2, "--against", measured)
        self.assertEqual((after["job"]["ranks"], after["job"]["nodes"]), (4, 2))
        print(table(self, model, 4, 2, measured), file=sys.stderr)
        slowest = {(r["params"]["op"], int(r["params"]["bytes"])): r["op_time_max_s"]
                   for r in report_rows(self, measured)}
        rows = checked(after["cases"])
        self.assertEqual(len(rows), 3 * 3)
        check_against(self, after)
        for r in rows:
            if r["params"]["op"] != "sendrecv":
                print(line(r), file=sys.stderr)
                continue
            # sendrecv around 0 -> 1 -> 2 -> 3 -> 0: ranks 1 and 3 send to the other host and receive from their
            # own; their send ends once TCP holds the data (megabytes, in the socket and the tbf queue), long
            # before it arrives. The op time, the mean over ranks, is then below what the wire takes, most at
            # small sizes; the ranks that receive from the other host wait for the wire, and for when the
            # sender's rank got a core. Neither is what the model describes (docs/model.md, "Known limits").
            worst = slowest[(r["params"]["op"], int(r["params"]["bytes"]))]
            print(f"{line(r)} (mean over ranks); slowest rank {worst * 1e3:.2f} ms, "
                  f"{worst / r['predicted_op_time_s']:.2f}x", file=sys.stderr)


class MoreNodesAtMpiDefaults(unittest.TestCase):
    """Fitted on 2 and 3 hosts at MPI's defaults, 4 hosts: each case priced by the algorithm tuned picks, and a
    prediction in an algorithm the files never ran has no interval."""

    def test_d_the_algorithms_tuned_picks_are_known_to_the_model(self):
        model = fit(self, "defaults.json", run_job(self, 2, 1, "defaults"), run_job(self, 3, 1, "defaults"))
        with open(model) as f:
            m = json.load(f)
        if not m["files"][0]["mpi_library"].startswith("Open MPI v4.1."):
            self.skipTest("tuned's fixed rules are known for Open MPI 4.1 only, this is " + m["files"][0]["mpi_library"])
        ran = {(t["op"], p["ranks"]): (p["algorithm"], p["protocol"]) for t in m["transfers"] for p in t["points"]}
        rdv = "rendezvous"  # 1-16 MiB, over Open MPI's TCP eager limit of 64 KiB
        self.assertEqual(ran, {("allreduce", 2): ("rabenseifner", rdv), ("allreduce", 3): ("rabenseifner", rdv),
                               ("allgather", 2): ("two_proc", rdv), ("allgather", 3): ("bruck", rdv),
                               ("sendrecv", 2): ("", rdv), ("sendrecv", 3): ("", rdv)})
        measured = run_job(self, 4, 1, "defaults")
        after = predict(self, model, 4, 4, "--against", measured)
        print(table(self, model, 4, 4, measured), file=sys.stderr)
        rows = checked(after["cases"])
        self.assertEqual(len(rows), 3 * 3)
        regime = "regime was not measured"
        for r in rows:
            with self.subTest(case=r["case"]):
                self.assertEqual(r["status"], "predicted", r.get("reason"))
                if r["params"]["op"] == "allgather":  # recursive doubling on 4 ranks: neither of the files' two
                    self.assertIn(f"allgather of {int(r['params']['bytes']) >> 20} MiB on 4 ranks runs "
                                  "recursive_doubling, rendezvous (Open MPI 4.1's tuned (fixed rules); "
                                  "btl_tcp_eager_limit=65536); the files measured two_proc, rendezvous (2 ranks), "
                                  "bruck, rendezvous (3 ranks): that " + regime, r["no_interval"])
                else:
                    self.assertNotIn(regime, r.get("no_interval", ""))
            print(line(r), file=sys.stderr)
        check_against(self, after)
        # Fitted on the tuned runs (the ring, every message eager), no case of the default run is in a measured regime.
        tuned = fit(self, "tuned.json", run_job(self, 2, 1), run_job(self, 3, 1))
        for r in checked(predict(self, tuned, 4, 4, "--against", measured)["cases"]):
            with self.subTest(case=r["case"], fitted="tuned"):
                self.assertIn(regime, r.get("no_interval", ""))
                self.assertNotIn("predicted_op_time_lo_s", r)
        check_against(self, after)


def use(h):
    global HOSTS
    HOSTS = h


if __name__ == "__main__":
    payload_rate(RATE)  # a mistyped rate fails here, not as a skip
    with tempfile.TemporaryDirectory(prefix="gpuscale-e2e-model-hosts-") as d:
        SCRATCH = d
        CONFIG = os.path.join(d, "model-transfers.toml")
        with open(SHIPPED) as f:
            text = f.read()
        # The sizes the acceptance names: on rate-limited emulated links a transfer of 64 or 256 KiB passes partly
        # in the token bucket's burst, faster than the link (hosts.py), which no network does; fitted with them,
        # the latency per step between nodes comes out negative and is dropped (1 ms per step at 3 and 4 ranks on
        # these 2 cores; measured: bench/README.md).
        sizes = "bytes = [65536, 262144, 1048576, 4194304, 16777216]"
        if sizes not in text:
            sys.exit(f"{SHIPPED}: no line {sizes} to replace")
        text = text.replace(sizes, "bytes = [1048576, 4194304, 16777216]")
        for key, auto, value in (("backend", '"auto"', '"cpu"'), ("comm", '"auto"', '"mpi"')):
            if f"\n{key} = {auto}\n" not in text:
                sys.exit(f"{SHIPPED}: no line {key} = {auto} to replace with {value}")
            text = text.replace(f"\n{key} = {auto}\n", f"\n{key} = {value}\n")
        with open(CONFIG, "w") as f:
            f.write(text)
        sys.exit(hosts.run_tests(NODES, 2, use, rate=RATE))
