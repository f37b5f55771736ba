"""Model importers: ONNX models as Kiln IRModules.

    import kiln.frontend
    mod = kiln.frontend.from_onnx("model.onnx", shapes={"input": [1, 3, 224, 224]})

The module's @main takes one annotated parameter per graph input (initializers are constants)
and returns the graph's output (a Tuple for several). Errors are Kiln errors: kiln.ValueError for
an invalid model or a dynamic input dimension without ``shapes=``, kiln.NotImplementedError
listing every unsupported (op, opset). Loads libkiln_onnx.so on first import.
"""

import os

from . import ir as _ir  # noqa: F401  (registers the IR classes the importer returns)
from . import namespace as _namespace
from ._lib import load_kiln_library as _load_kiln_library
from .function import get_global_func
from .tensors import tensor

_reason = _load_kiln_library("kiln_onnx")
if _reason is not None:
    raise ImportError(f"kiln.frontend needs libkiln_onnx.so, Kiln's ONNX frontend: {_reason}")


def _model_bytes(model):
    """``model`` as bytes when it is a ModelProto (anything with SerializeToString) or bytes;
    None for a path."""
    if isinstance(model, (bytes, bytearray, memoryview)):
        return bytes(model)
    if hasattr(model, "SerializeToString"):
        return model.SerializeToString()
    return None


def _values(values):
    """``values`` as name -> compact kiln.Tensor; numpy arrays and scalars are converted."""
    if values is None:
        return None
    import numpy as np  # only here: kiln itself does not need numpy

    def as_tensor(value):
        # np.asarray keeps 0-d arrays 0-d (np.ascontiguousarray would make them 1-d); read-only
        # arrays (onnx.numpy_helper's) cannot be shared through DLPack, and the importer copies
        # the elements anyway.
        array = np.asarray(value, order="C")
        return tensor(array if array.flags.writeable else array.copy())

    return {name: as_tensor(value) for name, value in values.items()}


def from_onnx(model, shapes=None, values=None):
    """Imports an ONNX model: a path (str or os.PathLike), its serialized bytes, or an
    onnx.ModelProto. ``shapes`` maps input names to shapes, overriding what the model declares
    (needed for symbolic dimensions such as a batch size). ``values`` maps input names to
    arrays (numpy, or anything ``np.asarray`` takes): each such input becomes a constant
    holding that array instead of a parameter of @main, which is how inputs the model uses as
    shapes, axes or scales are given. A name that is not an input is a kiln.ValueError listing
    the inputs."""
    shapes = None if shapes is None else {name: [int(d) for d in shape]
                                          for name, shape in shapes.items()}
    values = _values(values)
    data = _model_bytes(model)
    if data is not None:
        return get_global_func("frontend.from_onnx_bytes")(data, shapes, values)
    if isinstance(model, (str, os.PathLike)):
        return get_global_func("frontend.from_onnx_file")(os.fspath(model), shapes, values)
    raise TypeError("from_onnx takes a path, bytes or an onnx.ModelProto, not "
                    f"{type(model).__name__}")


__getattr__ = _namespace.module_getattr(__name__, "frontend")
__dir__ = _namespace.module_dir(globals(), "frontend")
