"""Kiln: a deep-learning compiler and runtime; this package is its Python layer over the C ABI.

Calling Kiln functions
    ``kiln.get_global_func("testing.add")(1, 2)`` or, resolved the same way at access time,
    ``kiln.testing.add(1, 2)``. ``kiln.register_func("my.f", f)`` makes a Python callable a
    global function that C++ and plugins can call.

Values passed to Kiln
    None, bool, int (int64; OverflowError beyond), float, str, bytes/bytearray, kiln.Object,
    list/tuple (-> Array), dict (-> Map), objects with __index__ (-> int), other callables
    (-> Function calling back into Python), kiln.Device (-> Device), kiln.DataType (-> DataType;
    a plain str stays a string); objects with ``__dlpack__`` (numpy arrays, torch tensors) become
    a kiln.Tensor sharing their memory, numpy and torch dtypes a DataType. Anything else raises
    TypeError naming the type.

Values coming back
    None, int, bool, float, str, bytes; kiln.Array, kiln.Map, kiln.Shape (views of the Kiln
    objects), kiln.Function, kiln.Error (an error as a value), kiln.Tensor, kiln.runtime.Module,
    the class registered with ``@kiln.register_object("type.key")`` for other objects (nearest
    registered ancestor, else kiln.Object). DataType values come back as kiln.DataType (a str:
    "float32"), Device values as kiln.Device, opaque pointers as int.

Tensors and devices
    ``kiln.tensor(numpy_array)`` (zero copy), ``kiln.empty((2, 3), "float32", kiln.cpu())``,
    ``t.numpy()``, ``t.copyto(kiln.cuda(0))``; ``kiln.device("cuda", 0).exist``.

Runtime
    ``kiln.load_module("model.so")``, ``kiln.runtime.backends()``; see kiln.runtime. A compiled
    model loads as a kiln.Executable: ``kiln.load_module("model.so").run(input=x)``.

Building
    ``kiln.build(mod)`` compiles an IRModule (``kiln.frontend.from_onnx("model.onnx")``) into a
    kiln.Executable; ``ex.export_library("model.so")`` writes it as one shared library.

Errors
    A failing Kiln call raises kiln.<Kind> (kiln.ValueError is both a kiln.KilnError and a
    ValueError); see kiln.error for the mapping in both directions.

Compiler
    ``kiln.ir`` (the graph IR), ``kiln.transform`` (passes, Sequential, pipeline strings) and
    ``kiln.pattern`` (dataflow patterns, pattern tables for MergeComposite) load libkiln.so,
    Kiln's compiler library, on first access.

Plugins
    ``kiln.load_plugin(path_or_name)``, ``kiln.plugins()``; plugins in KILN_PLUGIN_PATH and
    <libdir>/kiln/plugins are discovered once, on first need rather than on import (a compiler
    plugin maps libkiln.so): by kiln.plugins(), a global function or ``kiln.<name>`` not found,
    kiln.build, the ONNX import; failures recorded rather than raised.
"""

import warnings as _warnings

from ._lib import _ffi, load_kiln_library as _load_kiln_library
from . import namespace
from .error import (
    KilnError,
    TypeError,
    ValueError,
    IndexError,
    KeyError,
    AttributeError,
    RuntimeError,
    NotImplementedError,
    OverflowError,
    MemoryError,
    FileNotFoundError,
    InternalError,
    UnknownFunctionError,
    Error,
    register_error,
)
from .object import Object, register_object
from .containers import Array, Map, Shape
from .function import (
    Function,
    get_global_func,
    get_global_func_owner,
    list_global_funcs,
    register_func,
    remove_global_func,
)
from .namespace import Namespace
from .plugin import discover_plugins, load_plugin, plugin_search_dirs, plugins
from .dtype import DataType
from .devices import Device, device, cpu, cuda, opencl
from .tensors import Tensor, tensor, empty
from . import runtime
from .runtime import load_module
from .executable import Executable
from .profile import NodeTime, Profile
from .driver import build

__all__ = [
    "KilnError",
    "InternalError",
    "UnknownFunctionError",
    "Error",
    "register_error",
    "Object",
    "register_object",
    "Array",
    "Map",
    "Shape",
    "Function",
    "get_global_func",
    "get_global_func_owner",
    "list_global_funcs",
    "register_func",
    "remove_global_func",
    "Namespace",
    "load_plugin",
    "plugins",
    "discover_plugins",
    "plugin_search_dirs",
    "abi_version",
    "convert",
    "DataType",
    "Device",
    "device",
    "cpu",
    "cuda",
    "opencl",
    "Tensor",
    "tensor",
    "empty",
    "runtime",
    "load_module",
    "Executable",
    "NodeTime",
    "Profile",
    "build",
]  # kiln.TypeError & co. stay out of `import *` so they never shadow the builtins


def abi_version():
    """(major, minor) of the C ABI that the loaded libkiln_ffi.so implements."""
    return _ffi.abi_version()


def convert(value):
    """The value ``value`` becomes when passed to Kiln, as Kiln would return it."""
    return _ffi.convert(value)


__getattr__ = namespace.module_getattr(__name__)
__dir__ = namespace.module_dir(globals())

# The runtime's global functions (runtime.*) register when libkiln_runtime.so loads; a missing
# runtime must not break `import kiln` (kiln.runtime calls then say why it is missing).
_runtime_error = _load_kiln_library("kiln_runtime")
if _runtime_error:
    _warnings.warn(f"kiln: {_runtime_error}", RuntimeWarning, stacklevel=2)
del _runtime_error
