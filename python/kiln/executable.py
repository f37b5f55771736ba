"""kiln.Executable: a compiled model, from ``kiln.build`` or ``kiln.load_module("model.so")``.

    ex = kiln.build(kiln.frontend.from_onnx("model.onnx"))
    outputs = ex.run(input=image)          # list of numpy arrays, one per model output
    ex.export_library("model.so")          # one shared library; kiln.load_module reads it back

It is the graph executor of kiln.runtime with a model's conveniences: ``run`` takes the inputs
by name and returns every output as a numpy array of its own, so results stay valid across runs.
``run`` may be called from many threads at once on one Executable (a service loads a model
once): weights and code are shared, each run gets activation buffers of its own, and the GIL is
released while the model runs.
"""

import os

from . import error as kiln_error
from ._lib import core_func
from .graph_executor import GraphExecutor, _as_tensor
from .profile import Profile
from .tensors import Tensor

__all__ = ["Executable"]


class Executable(GraphExecutor):
    """A compiled model: ``set_input``/``run``/``get_output`` as GraphExecutor, plus ``run``
    with inputs by name returning numpy arrays, ``export_library`` and the model's metadata."""

    _signature = None

    def run(self, feed=None, /, *, out=None, cast=False, **inputs):
        """Runs the model once and returns its outputs as a list of numpy arrays of their own.

        Inputs are given by name, as keywords or in the dict ``feed`` (for names such as
        ``out``): numpy arrays, Tensors, anything kiln.tensor accepts. Every input must be given
        (a ValueError names each one missing), with the model's shape and dtype; ``cast=True``
        converts other dtypes. Compact arrays are read in place, others (slices, transposes,
        Fortran order) are copied. ``out``, a list with an array (or None) per output, gives
        arrays to write the outputs into; they are returned in place of new ones. numpy has no
        bfloat16: bfloat16 inputs and outputs are uint16 arrays of their bit patterns, as ONNX's
        test data stores them.
        Thread-safe: concurrent calls run at the same time, each with buffers of its own.
        """
        outputs = self.invoke(self._input_values(feed, inputs, cast, "run"), out=out)
        if out is not None:
            outputs = [result if given_out is None else given_out
                       for result, given_out in zip(outputs, out)]
        return [_as_numpy(item) if isinstance(item, Tensor) else item for item in outputs]

    def profile(self, feed=None, /, *, repeat=10, cast=False, **inputs):
        """Where the time of a run goes: runs the model ``repeat`` times on the inputs (given as
        to ``run``) after one untimed run, timing every graph node (a fused group, a BYOC
        region, a loop), and returns a kiln.Profile: each node's median milliseconds and
        shapes, printed as the slowest nodes and the time per kind of function."""
        values = [_as_tensor(value) for value in self._input_values(feed, inputs, cast, "profile")]
        return Profile(self.module.get_function("profile")(values, repeat))

    def _input_values(self, feed, inputs, cast, caller):
        """The inputs given by name (``feed`` and keywords), in the model's order and dtypes."""
        given = dict(feed or {}, **inputs)
        names, dtypes, numpy_dtypes = self._input_signature()
        unknown = [name for name in given if name not in names]
        if unknown:
            raise kiln_error.KeyError(
                f"{caller}: the model has no input{'s' if len(unknown) > 1 else ''} "
                f"{', '.join(map(repr, unknown))} (inputs: {', '.join(names)})")
        missing = [name for name in names if name not in given]
        if missing:
            raise kiln_error.ValueError(
                f"{caller}: input{'s' if len(missing) > 1 else ''} {', '.join(map(repr, missing))} "
                f"not given (the model's inputs: {', '.join(names)})")
        return [_with_dtype(name, given[name], dtype, numpy_dtype, cast, caller)
                for name, dtype, numpy_dtype in zip(names, dtypes, numpy_dtypes)]

    def _input_signature(self):
        """(names, dtypes, numpy dtypes) of the inputs, read once: a model's inputs do not
        change."""
        if self._signature is None:
            info = self.input_info
            self._signature = (list(info["names"]), list(info["dtypes"]),
                               [_numpy_dtype(dtype) for dtype in info["dtypes"]])
        return self._signature

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
            f"{name}: {shape} {dtype}"
            for name, shape, dtype in zip(info["names"], info["symbolic_shapes"], info["dtypes"])
        )
        return f"kiln.Executable({inputs}; {self.num_outputs} outputs)"


_BFLOAT16 = "bfloat16"


def _numpy_dtype(dtype):
    """numpy's dtype for ``dtype``: uint16 for bfloat16, which run passes as bit patterns;
    None for one numpy lacks (vector lanes)."""
    import numpy

    if str(dtype) == _BFLOAT16:
        return numpy.dtype(numpy.uint16)
    try:
        return numpy.dtype(str(dtype))
    except TypeError:
        return None


def _as_numpy(tensor):
    """``tensor`` as a numpy array; a bfloat16 one as its uint16 bit patterns."""
    return (tensor.view("uint16") if tensor.dtype == _BFLOAT16 else tensor).numpy()


def _with_dtype(name, value, dtype, numpy_dtype, cast, caller):
    """``value`` with the dtype of input ``name`` (``dtype``, numpy's ``numpy_dtype``):
    converted when ``cast``, else an error that says how to convert. Lists and scalars take the
    input's dtype. A bfloat16 input takes uint16 bit patterns, which no cast makes."""
    import numpy

    if numpy_dtype is None:
        return value  # a dtype numpy lacks: invoke checks it
    if not hasattr(value, "dtype"):
        value = numpy.asarray(value, dtype=numpy_dtype)
    elif _numpy_dtype(value.dtype) != numpy_dtype:
        have = _numpy_dtype(value.dtype) or value.dtype
        if dtype == _BFLOAT16:
            raise kiln_error.ValueError(
                f"{caller}: input {name!r} is bfloat16 and expects its uint16 bit patterns, got {have}")
        if not cast:
            raise kiln_error.ValueError(
                f"{caller}: input {name!r} expects {numpy_dtype}, got {have} "
                "(pass cast=True to convert it)")
        if isinstance(value, Tensor):
            value = value.numpy()
        value = numpy.asarray(value).astype(numpy_dtype)
    return _as_tensor(value).view(dtype) if dtype == _BFLOAT16 else value


Executable.__module__ = "kiln"
