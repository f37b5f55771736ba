"""Shared by the pytest files: where the plugin's two libraries are (ctest sets the variables,
see CMakeLists.txt), and the placement report read back as data."""

import os
import re

import pytest

import kiln

# The compiler side (loaded by path) and the runtime side, found by Kiln itself on
# KILN_RUNTIME_PATH, as an installed one is found next to libkiln_runtime.so.
PLUGIN = os.environ["MY_EXT_PLUGIN"]
RUNTIME = os.environ["MY_EXT_RUNTIME"]


@pytest.fixture
def my_ext():
    """kiln.my_ext, after loading the compiler side (a second load is a no-op)."""
    assert os.path.dirname(RUNTIME) in os.environ.get("KILN_RUNTIME_PATH", "").split(":"), (
        "KILN_RUNTIME_PATH must name the folder of libkiln_runtime_my_ext.so")
    kiln.load_plugin(PLUGIN)
    return kiln.my_ext


def placement(report):
    """{(target, op, pattern or None): count} from the report's "per op:" lines."""
    per_op = report.split("per op:\n", 1)[1].split("left on the host", 1)[0]
    return {(m.group(1), m.group(2), m.group(4)): int(m.group(3))
            for m in re.finditer(r"^  (\S+)\s+(\S+) x(\d+)(?:  in pattern (\S+))?$", per_op,
                                 re.MULTILINE)}
