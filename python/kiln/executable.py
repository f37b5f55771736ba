"""kiln.Executable: a compiled model, from ``kiln.build`` or ``kiln.load_module("model.so")``.

    ex = kiln.build(kiln.frontend.from_onnx("model.onnx"))
    outputs = ex.run(input=image)          # list of numpy arrays, one per model output
    ex.export_library("model.so")          # one shared library; kiln.load_module reads it back

It is the graph executor of kiln.runtime with a model's conveniences: ``run`` takes the inputs
by name and returns copies of every output, so results stay valid across runs.
"""

import os

from ._lib import core_func
from .graph_executor import GraphExecutor

__all__ = ["Executable"]


class Executable(GraphExecutor):
    """A compiled model: ``set_input``/``run``/``get_output`` as GraphExecutor, plus ``run``
    with inputs by name returning numpy arrays, ``export_library`` and the model's metadata."""

    def run(self, **inputs):
        """Sets ``inputs`` by name (numpy arrays, Tensors, anything kiln.tensor accepts), runs
        the model once and returns its outputs as a list of numpy arrays (copies)."""
        super().run(**inputs)
        return [self.get_output(i).numpy().copy() for i in range(self.num_outputs)]

    def export_library(self, path):
        """Writes the model as one shared library at ``path``; nothing is left there on failure."""
        core_func("runtime.ExportLibrary")(self.module, os.fspath(path))

    @property
    def input_names(self):
        """The model's input names, in order."""
        return list(self.input_info["names"])

    def __repr__(self):
        info = self.input_info
        inputs = ", ".join(
            f"{name}: {tuple(shape)} {dtype}"
            for name, shape, dtype in zip(info["names"], info["shapes"], info["dtypes"])
        )
        return f"kiln.Executable({inputs}; {self.num_outputs} outputs)"


Executable.__module__ = "kiln"
