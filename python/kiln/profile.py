"""kiln.Profile: where a model's run spends its time, from ``Executable.profile``.

    profile = ex.profile(input=image, repeat=20)
    print(profile)                       # the slowest nodes, then the time per function kind
    profile.nodes[0]                     # NodeTime(name=..., func=..., shapes=..., ms=...)
    profile.run_ms                       # the median run, inputs and outputs included

Each node is one call of the graph executor: a fused group of ops, a BYOC region or a control
flow construct. Its time is the median over the runs.
"""

import collections

from ._lib import core_func

__all__ = ["NodeTime", "Profile"]

NodeTime = collections.namedtuple("NodeTime", ["name", "func", "shapes", "ms"])


class Profile:
    """Per graph node, its median milliseconds over the profiled runs, in the graph's order."""

    def __init__(self, raw):
        self._raw = raw
        self.nodes = [NodeTime(str(name), str(func), str(shapes), float(seconds) * 1e3)
                      for name, func, shapes, seconds in zip(
                          raw["names"], raw["funcs"], raw["shapes"], raw["seconds"])]
        self.run_ms = float(raw["run_seconds"]) * 1e3
        self.repeat = int(raw["repeat"])

    def table(self, top=15):
        """The text ``print`` shows: the median run, the ``top`` slowest nodes with their
        shapes, and the time of each kind of function (fused_nn_conv2d_add_nn_relu_<n>
        together), slowest first."""
        return str(core_func("runtime.FormatProfile")(self._raw, top))

    def __str__(self):
        return self.table()

    def __repr__(self):
        return f"<kiln.Profile of {len(self.nodes)} nodes, median run {self.run_ms:.3f} ms>"


Profile.__module__ = "kiln"
NodeTime.__module__ = "kiln"
