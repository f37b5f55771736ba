"""Model importers: ONNX models as Kiln IRModules.

    import kiln.frontend
    mod = kiln.frontend.from_onnx("model.onnx", shapes={"input": [1, 3, 224, 224]})

The module's @main takes one annotated parameter per graph input (initializers are constants)
and returns the graph's output (a Tuple for several). A symbolic input dimension becomes a size
variable named after its ``dim_param`` (inputs sharing one share the variable), an unknown one a
variable ``<input>_<axis>``; ``shapes=`` specializes inputs to static extents. Errors are Kiln
errors: kiln.ValueError for an invalid model or for a node that needs a static extent where
a dimension is symbolic (naming the input to give with ``shapes=``), kiln.NotImplementedError
listing every unsupported (op, opset). Loads libkiln_onnx.so on first import.
"""

import os

from . import ir as _ir  # noqa: F401  (registers the IR classes the importer returns)
from . import namespace as _namespace
from ._lib import load_kiln_library as _load_kiln_library
from .containers import to_builtin
from .function import get_global_func, register_func
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
    onnx.ModelProto. Symbolic input dimensions become size variables (a ``dim_param`` such as
    ``batch`` names its variable, an unknown dimension of input ``x`` at axis 0 is ``x_0``), so
    @main's types are symbolic there. ``shapes`` maps input names to static shapes that
    specialize the symbolic and unknown dimensions the model declares (a static one it gives
    differently is a kiln.ValueError); it is needed where a converter still wants static
    extents, and that error names the node and the input to give. ``values`` maps input names to
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


def register_onnx_converter(domain, op_type, override=False):
    """Decorator making ``f(inputs, attrs, opset)`` the converter of ONNX op ``op_type`` of the
    custom domain ``domain`` (kiln/frontend/onnx_converter.h states the contract).

    ``inputs`` is a list of the node's converted inputs (kiln.ir expressions, None for an
    omitted optional one), ``attrs`` a dict of its attributes (int, float, str, lists of those,
    kiln.Tensor), ``opset`` the version of ``domain`` the model imports (0 when none). ``f``
    returns an expression, or a list of expressions for a node with several outputs. The
    converter is the global function ``frontend.onnx.convert.<domain>.<op_type>``; a name
    registered already raises kiln.KeyError unless ``override``. Returns ``f``.

        @kiln.frontend.register_onnx_converter("com.example", "Swish")
        def swish(inputs, attrs, opset):
            x = inputs[0]
            return kiln.ir.Call("multiply", [x, kiln.ir.Call("sigmoid", [x])])
    """
    name = get_global_func("frontend.OnnxConverterName")(domain, op_type)

    def register(func):
        def convert(inputs, attrs, opset):
            return func(list(inputs), to_builtin(attrs), opset)

        # The owner Kiln records is the module of what was registered: the user's.
        convert.__module__ = getattr(func, "__module__", None)
        convert.__name__ = getattr(func, "__name__", "convert")
        register_func(name, convert, override=override)
        return func

    return register


__getattr__ = _namespace.module_getattr(__name__, "frontend")
__dir__ = _namespace.module_dir(globals(), "frontend")
