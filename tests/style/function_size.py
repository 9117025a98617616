#!/usr/bin/env python3
"""No function in src/ over 100 lines or over cyclomatic complexity 30 (lizard): a newcomer reads each in one sitting.

Prints lizard's line for each offender and exits 1; exits 77 (skipped) where lizard is not installed.
"""
import os
import subprocess
import sys

try:
    import lizard  # noqa: F401
except ImportError:
    print("lizard is not installed (pip install lizard): skipped")
    sys.exit(77)

src = os.path.join(os.environ.get("GPUSCALE_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", "..")), "src")
out = subprocess.run([sys.executable, "-m", "lizard", "-l", "cpp", src, "-L", "100", "-C", "30", "-w"],
                     capture_output=True, text=True)
lines = [l for l in out.stdout.splitlines() if "warning:" in l]
for l in lines:
    print(l)
if out.returncode not in (0, 1) or (out.returncode == 1 and not lines):
    print("lizard failed:", out.stderr.strip())
    sys.exit(1)
print(f"{len(lines)} function(s) over 100 lines or cyclomatic complexity 30")
sys.exit(1 if lines else 0)
