#!/usr/bin/env python3
"""Each folder of src/ includes only folders before it (docs/architecture.md): core, telemetry <- device <- comm <-
io <- report <- workloads <- model <- runner <- app; core and telemetry are both first, and neither includes the
other. kernels/ (beside src/) is part of device. And the folders of MPI_FREE never reach <mpi.h>, directly or through
the project's headers: the result file's model, its readers and the report build without MPI.

Reads every .cpp, .hpp, .cu and .cuh under src/ and kernels/, and prints each `#include "folder/..."` that runs back
up the order, as "src/report/breakdown.cpp:12: includes "workloads/phases.hpp": report may include core, telemetry,
device, comm, io only", and each file of MPI_FREE that reaches <mpi.h> with the chain of includes that does. A folder
of src/ that is not in the order fails too, so that a new one is placed on purpose.
Exits 1 when it finds any, else 0.

Usage: include_order.py [ROOT]  (ROOT holds src/ and kernels/; default GPUSCALE_SOURCE_DIR, else this checkout)
"""
import os
import re
import sys

# Folders of the same level may not include each other; each may include every folder of the levels before it.
ORDER = [("core", "telemetry"), ("device",), ("comm",), ("io",), ("report",), ("workloads",), ("model",),
         ("runner",), ("app",)]
# Folders outside src/ that count as one of the order's.
PART_OF = {"kernels": "device"}
SOURCES = (".cpp", ".hpp", ".cu", ".cuh")
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"/]+)/[^"]*"')
MPI_FREE = ("core", "telemetry", "device", "io", "report")
MPI_H = re.compile(r'^\s*#\s*include\s*<mpi\.h>')
PROJECT_HEADER = re.compile(r'^\s*#\s*include\s*"([^"]+)"')

LEVEL = {folder: i for i, level in enumerate(ORDER) for folder in level}


def folder_of(name):
    """The order's folder that `name` (src/NAME, kernels, or an include's first part) belongs to, else None."""
    name = PART_OF.get(name, name)
    return name if name in LEVEL else None


def may_include(folder):
    return [f for level in ORDER[:LEVEL[folder]] for f in level]


def allowed(folder, target):
    return target == folder or LEVEL[target] < LEVEL[folder]


def sources(top):
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames.sort()
        for f in sorted(filenames):
            if f.endswith(SOURCES):
                yield os.path.join(dirpath, f)


def check_file(root, path, folder):
    """The lines of `path` (in `folder`) that include a folder after it."""
    problems = []
    rel = os.path.relpath(path, root)
    with open(path, encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, 1):
            m = INCLUDE.match(line)
            target = folder_of(m.group(1)) if m else None
            if target is None or allowed(folder, target):
                continue  # no folder of the order (a header beside it, a library): nothing to check
            before = may_include(folder)
            may = ", ".join(before) + " only" if before else "no other folder"
            header = line.strip().split('"')[1]
            problems.append(f'{rel}:{number}: includes "{header}": {folder} may include {may}')
    return problems


def mpi_chain(root, path, memo):
    """The includes from `path` (itself first) to the file that includes <mpi.h>, or None; `memo` holds each file's
    answer (and None for one under way: an include cycle leads nowhere new)."""
    if path in memo:
        return memo[path]
    memo[path] = None
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = f.readlines()
    for line in lines:
        if MPI_H.match(line):
            memo[path] = [path]
            break
        m = PROJECT_HEADER.match(line)
        found = [p for p in (os.path.join(root, "src", m.group(1)), os.path.join(os.path.dirname(path), m.group(1)))
                 if os.path.isfile(p)] if m else []
        chain = mpi_chain(root, found[0], memo) if found else None
        if chain:
            memo[path] = [path] + chain
            break
    return memo[path]


def check_mpi_free(root):
    problems, memo = [], {}
    for folder in MPI_FREE:
        for path in sources(os.path.join(root, "src", folder)):
            chain = mpi_chain(root, os.path.abspath(path), memo)
            if chain:
                problems.append(f"{os.path.relpath(path, root)}: reaches <mpi.h> ("
                                + " -> ".join(os.path.relpath(p, root) for p in chain[1:]) + f"): {folder} is MPI-free")
    return problems


def check_tree(root):
    problems = []
    src = os.path.join(root, "src")
    if not os.path.isdir(src):
        return [f"{src}: no such folder (the root argument holds src/)"]
    tops = [(os.path.join(src, d), d) for d in sorted(os.listdir(src)) if os.path.isdir(os.path.join(src, d))]
    if os.path.isdir(os.path.join(root, "kernels")):
        tops.append((os.path.join(root, "kernels"), "kernels"))
    for top, name in tops:
        folder = folder_of(name)
        if folder is None:
            problems.append(f"{os.path.relpath(top, root)}/: a folder that is not in the include order: add it to "
                            f"ORDER in tests/style/include_order.py and to docs/architecture.md")
            continue
        for path in sources(top):
            problems += check_file(root, path, folder)
    for f in sorted(os.listdir(src)):
        if f.endswith(SOURCES):
            problems.append(f"src/{f}: a source file outside the folders of the include order: move it into one")
    return problems + check_mpi_free(root)


def main(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    default = os.environ.get("GPUSCALE_SOURCE_DIR", os.path.join(here, "..", ".."))
    if len(argv) > 2:
        print(__doc__.strip().splitlines()[-1])
        return 2
    root = os.path.abspath(argv[1] if len(argv) == 2 else default)
    problems = check_tree(root)
    for p in problems:
        print(p)
    print(f"{len(problems)} include(s) or folder(s) against the include order of docs/architecture.md")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
