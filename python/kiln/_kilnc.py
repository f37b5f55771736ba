"""The `kilnc` console script of the kiln wheel: runs the kilnc program shipped inside the
package (kiln/bin/kilnc), which finds its libraries in kiln/lib by its own run path."""

import os
import sys


def main():
    program = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "kilnc")
    if not os.access(program, os.X_OK):
        sys.exit(f"kilnc: {program} is missing; this kiln package was not installed from a wheel "
                 "(an installed prefix has it in <prefix>/bin)")
    os.execv(program, [program] + sys.argv[1:])
