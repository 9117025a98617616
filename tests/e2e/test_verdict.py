"""`report --verdict`: one verdict per node, GPU (rank) and link from a real run's file, with known timings and
results written into copies of it (so that no verdict depends on how fast or busy this machine was): a rank that
straggles in every case fails and its node is listed to take out (Slurm's hostlist, a drain command, a hosts list);
wrong results fail their rank; a limit no case meets fails the run; an incomplete file and one where nothing ran
give no verdict (exit 2); options that do not combine are refused in one line. The emulated-host test of a slow
link is in test_node_pairs.py."""
import json
import os
import shutil
import socket
import subprocess
import sys
import unittest

import h5py
import numpy as np

from common import (GEMM_AND_ALLREDUCE, InputErrorTest, SharedRunTest, gpuscale, mpirun, preamble, rewrite_digest,
                    set_durations)

CONFIG = GEMM_AND_ALLREDUCE


def set_hostnames(path, names):
    """Gives rank r of the result file `path` the host name names[r] (with its digest)."""
    with h5py.File(path, "r+") as f:
        attrs = dict(f["ranks/hostname"].attrs)
        del f["ranks/hostname"]
        d = f["ranks"].create_dataset("hostname", data=np.array([n.encode() for n in names]))
        for k, v in attrs.items():
            d.attrs[k] = v
        rewrite_digest(d)


class Verdict(SharedRunTest):
    CONFIG = CONFIG

    def copy(self, name):
        self.assertEqual(self.proc.returncode, 0, self.proc.stdout + self.proc.stderr)
        out = self.path(name)
        shutil.copy(self.out, out)
        return out

    def verdict(self, path, *extra, code):
        p = gpuscale("report", path, "--verdict", *extra)
        self.assertEqual(p.returncode, code, p.stdout + p.stderr)
        return p

    def test_a_even_ranks_pass(self):
        out = self.copy("even.h5")
        set_durations(out, [1e-3, 1e-3], same_start=True)
        p = self.verdict(out, code=0)
        text = " ".join(p.stdout.split())
        self.assertTrue(text.startswith(f"verdict: PASS ({out}: 3 case(s) ran on 1 node(s), 2 rank(s))"), p.stdout)
        self.assertIn(f"PASS node: {socket.gethostname()} PASS ranks: all 2", text)
        j = json.loads(self.verdict(out, "--format", "json", code=0).stdout)
        self.assertEqual(j["overall"], {"severity": "PASS", "reasons": []})
        self.assertEqual([n["severity"] for n in j["nodes"]], ["PASS"])
        self.assertEqual([(g["rank"], g["severity"]) for g in j["gpus"]], [(0, "PASS"), (1, "PASS")])
        self.assertEqual(j["drain"], [])
        for view in ("slurm", "hosts"):  # one comment line: nothing to take out, and why
            self.assertEqual(self.verdict(out, "--format", view, code=0).stdout, "# nothing to drain: overall PASS\n")

    def test_b_a_rank_straggling_in_every_case_fails_and_its_node_is_listed(self):
        out = self.copy("straggler.h5")
        set_durations(out, [1e-3, 2e-3], same_start=True)
        host = socket.gethostname()
        p = self.verdict(out, code=1)
        self.assertTrue(p.stdout.startswith("verdict: FAIL"), p.stdout)
        self.assertIn(f"FAIL rank 1 ({host}): straggling: up to 2.00x the others' median in 3 of 3 cases of several "
                      "ranks (cases 1-3)", " ".join(p.stdout.split()))
        self.assertIn("PASS ranks: 1 of 2", p.stdout)
        self.assertIn(f"to take out: {host}", p.stdout)
        j = json.loads(self.verdict(out, "--format", "json", code=1).stdout)
        self.assertEqual(j["overall"]["severity"], "FAIL")
        self.assertEqual([g["severity"] for g in j["gpus"]], ["PASS", "FAIL"])
        self.assertEqual(j["nodes"][0]["severity"], "PASS")  # the node's own judgments hold; its rank does not
        self.assertEqual(j["drain"], [host])
        slurm = self.verdict(out, "--format", "slurm", code=1).stdout.splitlines()
        self.assertEqual(slurm[0], host)
        self.assertEqual(slurm[1], f"scontrol update nodename={host} state=drain reason='gpuscale: rank 1 ({host}): "
                         "straggling: up to 2.00x the others'\\'' median in 3 of 3 cases of several ranks (cases 1-3)'")
        self.assertEqual(self.verdict(out, "--format", "hosts", code=1).stdout, host + "\n")

    def test_b2_every_printed_line_pasted_into_a_shell_runs_nothing_but_its_command(self):
        out = self.copy("paste.h5")
        set_durations(out, [1e-3, 2e-3], same_start=True)
        host = socket.gethostname()
        lines = self.verdict(out, "--format", "slurm", code=1).stdout.splitlines()
        scratch = self.path("scratch")
        os.makedirs(scratch)
        for line in lines:
            self.assertEqual(subprocess.run(["sh", "-n", "-c", line]).returncode, 0, line)
            # scontrol stubbed: what it would get, one argument a line
            subprocess.run(["sh", "-c", 'scontrol() { printf "%s\\n" "$@" > args; }; ' + line], cwd=scratch,
                           capture_output=True, timeout=30)
        self.assertEqual(os.listdir(scratch), ["args"])  # nothing else ran
        with open(os.path.join(scratch, "args")) as f:
            self.assertEqual(f.read().splitlines(), [
                "update", f"nodename={host}", "state=drain", f"reason=gpuscale: rank 1 ({host}): straggling: up to "
                "2.00x the others' median in 3 of 3 cases of several ranks (cases 1-3)"])

    def test_b3_a_node_whose_name_is_not_a_host_name_gets_no_command_and_is_shown_escaped(self):
        for evil in ("n;touch X", "n$(touch X)", "n`touch X`", "n'x", 'n"x', "n\ntouch X", "n\rtouch X"):
            out = self.copy("evil.h5")
            set_durations(out, [1e-3, 2e-3], same_start=True)
            set_hostnames(out, [socket.gethostname(), evil])
            shown = evil.replace("\n", "\\x0a").replace("\r", "\\x0d")
            for view in ("slurm", "hosts"):
                p = self.verdict(out, "--format", view, code=2)
                self.assertEqual(p.stdout, "", evil)
                self.assertEqual(len(p.stderr.splitlines()), 1, p.stderr)
                quoted = "'" + shown.replace("'", "'\\''") + "'"
                self.assertTrue(p.stderr.startswith(f"gpuscale: error: {out}: rank 1 ran on a node whose name, "
                                                    f"{quoted}, is not a host name (RFC 1123: letters, digits, '-' "
                                                    f"and '.'): --format {view} prints no command or list with it"),
                                p.stderr)
            table = self.verdict(out, code=1).stdout
            self.assertNotIn("\r", table)
            self.assertIn(f"FAIL rank 1 ({shown})", " ".join(table.split()))

    def test_c_wrong_results_fail_their_rank(self):
        out = self.copy("wrong.h5")
        set_durations(out, [1e-3, 1e-3], same_start=True)
        with h5py.File(out, "r+") as f:
            c = f["cases/0001"]
            c.attrs["status"] = np.bytes_("verify-failed")  # fixed-length, as gpuscale writes
            c["wrong_elements"][...] = [0, 7]
            rewrite_digest(c["wrong_elements"])
        j = json.loads(self.verdict(out, "--format", "json", code=1).stdout)
        self.assertEqual(j["gpus"][1]["reasons"], ["wrong results: 7 element(s) (case 2)"])
        self.assertEqual(j["gpus"][0]["severity"], "PASS")

    def test_d_a_limit_no_case_meets_fails_the_run(self):
        cfg = self.write("limit.toml", CONFIG.replace('modes = ["parallel"]\n', 'modes = ["parallel"]\n'
                                                      "expect = { min_gflops_per_rank = 1e9 }\n", 1))
        out = self.path("limit.h5")
        r = mpirun(2, "run", cfg, "-o", out)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        set_durations(out, [1e-3, 1e-3], same_start=True)
        j = json.loads(self.verdict(out, "--format", "json", code=1).stdout)
        self.assertEqual(j["overall"]["severity"], "FAIL")
        self.assertEqual(len(j["overall"]["reasons"]), 1, j)
        self.assertRegex(j["overall"]["reasons"][0],
                         r"^limit min_gflops_per_rank 1000000000 not met: measured [0-9.e+-]+ \(case 1\)$")
        self.assertEqual([g["severity"] for g in j["gpus"]], ["PASS", "PASS"])  # 2 ranks: no one GPU to blame
        self.assertEqual(j["drain"], [])
        for view in ("slurm", "hosts"):
            self.assertEqual(self.verdict(out, "--format", view, code=1).stdout,
                             "# nothing to drain: overall FAIL, with no node to blame (see report --verdict)\n")

    def test_e_an_incomplete_file_has_no_verdict(self):
        out = self.copy("incomplete.h5")
        with h5py.File(out, "r+") as f:
            f.attrs.modify("complete", 0)
            f.attrs.modify("status", "killed")
        p = self.verdict(out, code=2)
        self.assertIn("no verdict: " + out + ": the run did not complete (status: killed)", p.stderr)
        j = json.loads(self.verdict(out, "--format", "json", code=2).stdout)
        self.assertEqual(j["overall"]["severity"], "NONE")
        self.assertIn("the run did not complete", j["overall"]["reasons"][0])
        self.assertEqual(self.verdict(out, "--format", "slurm", code=2).stdout,
                         "# nothing to drain: no verdict (" + j["overall"]["reasons"][0] + ")\n")


class NothingRan(InputErrorTest):
    def test_a_file_where_no_case_ran_has_no_verdict(self):
        cfg = self.write("inter.toml", preamble(warmup=1, reps=2, threads=1) + """
[[experiment]]
name = "across"
workload = "collective"
op = "allreduce"
bytes = 1024
scope = "inter-node"
modes = ["parallel"]
""")
        out = self.path("none.h5")
        r = mpirun(2, "run", cfg, "-o", out)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        p = gpuscale("report", out, "--verdict")
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertIn("no verdict: " + out + ": no case ran (1 skipped), so nothing was measured to judge", p.stderr)

    def test_b_options_that_do_not_combine(self):
        f = self.path("any.h5")
        self.assert_input_error(gpuscale("report", f, "--format", "slurm"),
                                "--format slurm lists the nodes a verdict fails: add --verdict")
        self.assert_input_error(gpuscale("report", f, "--format", "hosts"), "--format hosts lists the nodes")
        self.assert_input_error(gpuscale("report", f, f, "--verdict"),
                                "--verdict judges one result file, not 2: run it once per file")
        self.assert_input_error(gpuscale("report", f, "--verdict", "--format", "csv"),
                                "--verdict prints as table, json, slurm or hosts, not csv")
        for extra in (["--check"], ["--baseline", f], ["--breakdown"], ["--wide"]):
            self.assert_input_error(gpuscale("report", f, "--verdict", *extra),
                                    f"--verdict and {extra[0]} cannot be combined")


if __name__ == "__main__":
    unittest.main(verbosity=2, argv=[sys.argv[0]] + sys.argv[1:])
