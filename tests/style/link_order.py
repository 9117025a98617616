#!/usr/bin/env python3
"""The include order at link time: no object file of a folder of src/ uses a function (or any symbol) that only a
later folder defines (docs/architecture.md), as a declaration in report/ defined in workloads/ would; the include
test cannot see that, as the header is the report's own.

Reads the object files the build made under BUILD/src/CMakeFiles/*.dir/ (`nm`: each one's defined and undefined
symbols), puts each in the folder of its source (kernels/: device), and prints each symbol one uses that is defined
only in folders after its own, as "report/report.cpp.o uses gpuscale::analysis_of(...), defined only in workloads".
Exits 1 when it finds any, 77 (skipped) when there are no object files or no nm, else 0.

Usage: link_order.py BUILD
"""
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from include_order import LEVEL, folder_of  # noqa: E402


def objects(build):
    """(object file, its folder of the order) for every object file of src/'s targets."""
    top = os.path.join(build, "src", "CMakeFiles")
    for target in sorted(os.listdir(top)) if os.path.isdir(top) else []:
        base = os.path.join(top, target)
        for dirpath, _, filenames in sorted(os.walk(base)):
            for f in sorted(filenames):
                if f.endswith(".o"):
                    parts = os.path.relpath(os.path.join(dirpath, f), base).split(os.sep)
                    folder = folder_of(parts[1] if parts[0] == "__" else parts[0])
                    if folder:
                        yield os.path.join(dirpath, f), folder


def symbols(path, *flags):
    out = subprocess.run(["nm", "-C", *flags, path], capture_output=True, text=True, check=True).stdout
    return {line[19:] for line in out.splitlines() if line.strip()}  # after the address (blank where undefined) and type


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[-1])
        return 2
    build = os.path.abspath(argv[1])
    objs = list(objects(build))
    if not objs or not shutil.which("nm"):
        print(f"no object files under {build}/src/CMakeFiles, or no nm: nothing to check")
        return 77
    defined = {}
    for path, folder in objs:
        for s in symbols(path, "--defined-only", "-g"):
            defined.setdefault(s, set()).add(folder)
    problems = []
    for path, folder in objs:
        for s in sorted(symbols(path, "-u")):
            where = defined.get(s)
            if where and all(LEVEL[f] > LEVEL[folder] for f in where):
                problems.append(f"{os.path.relpath(path, build)} uses {s}, defined only in {', '.join(sorted(where))}")
    for p in problems:
        print(p)
    print(f"{len(problems)} use(s) of a later folder's symbols in {len(objs)} object files")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
