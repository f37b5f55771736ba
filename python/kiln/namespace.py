"""Dotted access to global functions: ``kiln.testing.add`` is the global "testing.add".

Resolution happens at every attribute access, never from a snapshot, so names a plugin registers
after ``import kiln`` are reachable at once. For a module ``m`` with prefix ``p``:

1. real attributes of ``m`` win (Python only calls the fallback when they are missing);
2. then a real submodule ``m.name`` (imported on demand);
3. then the global function "p.name";
4. then, when some global name starts with "p.name.", a Namespace for that prefix;
5. otherwise AttributeError listing close names.

A later submodule falls back the same way with one line:
``__getattr__ = kiln.namespace.module_getattr(__name__, "ir")``.

Cost: a function name resolves with one registry lookup (~0.2 us); ``kiln.testing.nop`` takes a
few lookups (~1.7 us in all). Code calling a function in a hot loop should keep the Function: ``add = kiln.testing.add`` once, then ``add(1, 2)`` (~30 ns).
"""

import importlib
import importlib.util

from ._lib import _ffi
from .error import AttributeError as _KilnAttributeError
from .function import did_you_mean, ensure_plugins_discovered


def _child_names(prefix):
    """Sorted next components of global names below ``prefix`` ("" for the top level)."""
    start = f"{prefix}." if prefix else ""
    children = set()
    for name in _ffi.list_global_funcs():
        if name.startswith(start):
            children.add(name[len(start):].split(".", 1)[0])
    return sorted(children)


def _all_paths():
    """Every global name and every namespace prefix above one."""
    paths = set()
    for name in _ffi.list_global_funcs():
        parts = name.split(".")
        for i in range(1, len(parts) + 1):
            paths.add(".".join(parts[:i]))
    return paths


def _has_prefix():
    """The registry's prefix query (ffi.HasGlobalPrefix), one lookup instead of a listing."""
    return _ffi.get_global_func("ffi.HasGlobalPrefix")


def resolve(path, where):
    """The Function named ``path``, or a Namespace when names exist below it.

    ``where`` names the object being accessed for the error message ("module 'kiln'").
    """
    for attempt in range(2):
        func = _ffi.get_global_func(path)
        if func is not None:
            return func
        if _has_prefix()(f"{path}."):
            return Namespace(path)
        if attempt == 0:
            ensure_plugins_discovered()  # kiln.my_ext of an installed plugin not loaded yet
    attr = path.rsplit(".", 1)[-1]
    raise _KilnAttributeError(
        f"{where} has no attribute {attr!r}: no global function {path!r} and no global name "
        f"below it." + did_you_mean(path, _all_paths())
    )


class Namespace:
    """The global names below a dotted prefix, looked up when accessed."""

    __slots__ = ("_prefix",)

    def __init__(self, prefix):
        object.__setattr__(self, "_prefix", prefix)

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return resolve(f"{self._prefix}.{name}", f"kiln namespace {self._prefix!r}")

    def __setattr__(self, name, value):
        raise AttributeError(
            f"kiln namespace {self._prefix!r} is read-only; use kiln.register_func to add names"
        )

    def __dir__(self):
        return _child_names(self._prefix)

    def __eq__(self, other):
        return isinstance(other, Namespace) and other._prefix == self._prefix

    def __hash__(self):
        return hash(self._prefix)

    def __repr__(self):
        return f"<kiln namespace {self._prefix!r}>"


def module_getattr(module_name, prefix=""):
    """A PEP 562 ``__getattr__`` for ``module_name`` falling back to globals under ``prefix``."""
    has_submodule = {}

    def __getattr__(name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
        qualified = f"{module_name}.{name}"
        # Submodules are files: they cannot appear at run time, so remembering is safe.
        if name not in has_submodule:
            try:
                has_submodule[name] = importlib.util.find_spec(qualified) is not None
            except (ImportError, ValueError):
                has_submodule[name] = False
        if has_submodule[name]:
            return importlib.import_module(qualified)
        return resolve(f"{prefix}.{name}" if prefix else name, f"module {module_name!r}")

    return __getattr__


def module_dir(module_globals, prefix=""):
    """A PEP 562 ``__dir__``: the module's own names plus the global names below ``prefix``."""

    def __dir__():
        return sorted(set(module_globals) | set(_child_names(prefix)))

    return __dir__
