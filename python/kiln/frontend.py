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


def from_onnx(model, shapes=None):
    """Imports an ONNX model: a path (str or os.PathLike), its serialized bytes, or an
    onnx.ModelProto. ``shapes`` maps input names to shapes, overriding what the model declares
    (needed for symbolic dimensions such as a batch size)."""
    shapes = None if shapes is None else {name: [int(d) for d in shape]
                                          for name, shape in shapes.items()}
    data = _model_bytes(model)
    if data is not None:
        return get_global_func("frontend.from_onnx_bytes")(data, shapes)
    if isinstance(model, (str, os.PathLike)):
        return get_global_func("frontend.from_onnx_file")(os.fspath(model), shapes)
    raise TypeError("from_onnx takes a path, bytes or an onnx.ModelProto, not "
                    f"{type(model).__name__}")


__getattr__ = _namespace.module_getattr(__name__, "frontend")
__dir__ = _namespace.module_dir(globals(), "frontend")
