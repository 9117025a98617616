"""Sizes as people write them ("16M", "64K", "1G": powers of 1024, as nccl-tests' -b 16M) in the keys that count
bytes, end to end: a run through mpirun whose file, read back with h5py, holds the bytes they stand for; the same
from --set; and a size that cannot be taken refused in one line that names the file, line, column and key."""
import json
import unittest

import h5py

from common import InputErrorTest, SharedRunTest, gpuscale, preamble, s

CONFIG = preamble(warmup=1, reps=2) + """
[[experiment]]
name = "copy16m"
workload = "copy"
bytes = "16M"
modes = ["parallel"]

[[experiment]]
name = "coll"
workload = "collective"
op = "allreduce"
bytes = ["1K", "64k"]
modes = ["parallel"]

[[experiment]]
name = "sweep"
workload = "collective"
op = "allgather"
bytes = { from = "1KiB", to = "16K", factor = 4 }
modes = ["parallel"]
"""


def bytes_by_experiment(path):
    """{experiment name: [bytes of each of its cases, in the file's order]}, from the file's parameters."""
    out = {}
    with h5py.File(path, "r") as f:
        for _, g in sorted(f["cases"].items()):
            out.setdefault(s(g.attrs["name"]), []).append(int(g["parameters"].attrs["bytes"]))
    return out


class SizesInAConfig(SharedRunTest):
    CONFIG = CONFIG

    def test_the_run_succeeds(self):
        self.assertEqual(self.proc.returncode, 0, self.proc.stdout + self.proc.stderr)

    def test_the_file_holds_the_bytes_each_size_stands_for(self):
        self.assertEqual(bytes_by_experiment(self.out),
                         {"copy16m": [16777216], "coll": [1024, 65536], "sweep": [1024, 4096, 16384]})

    def test_the_report_shows_them_as_bytes(self):
        p = gpuscale("report", self.out, "--format", "json")
        self.assertEqual(p.returncode, 0, p.stderr)
        rows = {(r["name"], r["params"]["bytes"]) for r in json.loads(p.stdout)}
        self.assertIn(("copy16m", 16777216), rows)
        self.assertIn(("sweep", 16384), rows)


class SizesInSet(SharedRunTest):
    """The same config with its sizes replaced from the command line: a size, a list and a range of them."""
    CONFIG = CONFIG
    ARGS = ("--set", "copy16m.bytes=1.5M", "--set", 'coll.bytes=["2K", "8K"]',
            "--set", 'sweep.bytes={from="4K",to="1M",factor=16}')

    def test_each_override_runs_as_its_bytes(self):
        self.assertEqual(self.proc.returncode, 0, self.proc.stdout + self.proc.stderr)
        self.assertEqual(bytes_by_experiment(self.out),
                         {"copy16m": [1572864], "coll": [2048, 8192], "sweep": [4096, 65536, 1048576]})


class SizesThatCannotBeTaken(InputErrorTest):
    HEAD = preamble(warmup=1, reps=2) + '\n[[experiment]]\nname = "c"\nworkload = "copy"\n'

    def test_each_is_one_line_naming_file_line_key_and_value(self):
        cases = (('"16X"', 'key \'bytes\' must be a size in bytes: an integer, or a string such as "64K", "16M", '
                           '"1G" (K, M, G, T: powers of 1024); got string "16X"'),
                 ('"1.3K"', 'key \'bytes\': "1.3K" is not a whole number of bytes (1331.2)'),
                 ('"-16M"', 'key \'bytes\': "-16M" is negative; a size counts bytes'),
                 ('"2T"', "key 'bytes' must be at most 1099511627776, got 2199023255552 (\"2T\")"),
                 ('"99999999999T"', 'key \'bytes\' must be at most 1099511627776, got "99999999999T"'),
                 ('"16MB"', 'key \'bytes\': "16MB" could mean powers of 1000 or of 1024; write "16M" or "16MiB"'))
        for value, message in cases:
            cfg, out = self.write("bad.toml", self.HEAD + f"bytes = {value}\n"), self.path("bad.h5")
            for command in (("check", cfg), ("run", cfg, "-o", out)):
                self.assert_input_error(gpuscale(*command), f"{cfg}:10:9: experiment 'c': {message}", out=out)

    def test_a_bad_size_from_set_names_the_override(self):
        cfg = self.write("ok.toml", self.HEAD + "bytes = 4096\n")
        self.assert_input_error(gpuscale("check", cfg, "--set", "bytes=16X"),
                                "--set bytes=16X: experiment 'c': key 'bytes' must be a size in bytes")
        self.assert_input_error(gpuscale("check", cfg, "--set", "bytes=[1K,4K]"),
                                'got string "[1K,4K]" (in a list or range, quote each size: ["1K", "4K"])')

    def test_a_key_that_does_not_count_bytes_takes_no_size(self):
        cfg = self.write("gemm.toml", preamble(warmup=1, reps=2) + '\n[[experiment]]\nworkload = "gemm"\n'
                                                                   'size = "1K"\n')
        self.assert_input_error(gpuscale("check", cfg), f"{cfg}:9:8: experiment #1: key 'size' must be an integer, "
                                "got string \"1K\"")


if __name__ == "__main__":
    unittest.main(verbosity=2)
