"""kiln.runtime: Kiln's runtime (libkiln_runtime.so) from Python: modules and artifacts, runtime
backends, threads and memory.

``kiln.load_module("model.so")`` loads an artifact written by ``Module.export_library``;
``GraphExecutor`` runs a graph_executor module; ``backends()`` lists the runtime backends
(libkiln_runtime_<name>.so) that were discovered.
Every other runtime global function is reachable here by its last name, resolved at access
time: ``kiln.runtime.ReleaseCachedMemory()`` calls the global "runtime.ReleaseCachedMemory".
"""

import os

from . import namespace
from ._lib import _ffi, core_func
from .containers import to_builtin
from .devices import as_device, cpu
from .error import AttributeError as _KilnAttributeError, KeyError as _KilnKeyError
from .function import did_you_mean
from .object import Object, register_object

__all__ = [
    "Module",
    "load_module",
    "backends",
    "num_threads",
    "allocator_stats",
    "release_cached_memory",
    "GraphExecutor",
]


@register_object("kiln.Module")
class Module(Object):
    """A bundle of functions with imports (a tree): compiled host code, a graph executor, an
    external runtime's module. ``module["name"]`` is one of its functions (searched in its
    imports too), a kiln.Function to call."""

    __slots__ = ()

    @property
    def kind(self):
        """What kind of module this is: "host_library", "c_source", "opencl", ..."""
        return core_func("runtime.ModuleKind")(self)

    @property
    def imports(self):
        """The modules this one imports, as a list."""
        return list(core_func("runtime.ModuleImports")(self))

    @property
    def functions(self):
        """Names of this module's own functions, or None when the runtime cannot list them."""
        lister = _ffi.get_global_func("runtime.ModuleListFunctions")
        return None if lister is None else list(lister(self))

    def get_function(self, name, query_imports=True, allow_missing=False):
        """The function ``name`` of this module or, with ``query_imports``, of its imports
        (depth first). A missing name raises kiln.AttributeError listing what there is, or
        returns None with ``allow_missing``."""
        func = core_func("runtime.ModuleGetFunction")(self, name, bool(query_imports))
        if func is None and not allow_missing:
            raise _KilnAttributeError(self._missing(name, query_imports))
        if func is not None:
            func.__name__ = name
        return func

    def __getitem__(self, name):
        """The function ``name`` (imports searched); kiln.KeyError listing what there is."""
        if not isinstance(name, str):
            raise TypeError(f"module functions are looked up by name (str), got {name!r}")
        func = self.get_function(name, allow_missing=True)
        if func is None:
            raise _KilnKeyError(self._missing(name, True))
        return func

    def __contains__(self, name):
        return isinstance(name, str) and self.get_function(name, allow_missing=True) is not None

    def import_module(self, other):
        """Makes ``other``'s functions reachable from this module (and exported with it)."""
        if not isinstance(other, Module):
            raise TypeError(f"import_module expects a kiln.runtime.Module, got {other!r}")
        core_func("runtime.ModuleImport")(self, other)

    def export_library(self, path):
        """Writes this module and its imports as one shared library at ``path`` (host code
        compiled with $CC or cc); ``kiln.load_module(path)`` loads it back."""
        core_func("runtime.ExportLibrary")(self, os.fspath(path))

    def _all_functions(self, query_imports):
        """(names of own functions (or None), of the whole tree when query_imports)."""
        names, seen, pending = [], set(), [self]
        while pending:
            module = pending.pop(0)
            own = module.functions
            if own is None:
                return None
            names += [n for n in own if n not in seen]
            seen.update(own)
            if query_imports:
                pending += module.imports
        return names

    def _missing(self, name, query_imports):
        where = "or its imports " if query_imports and self.imports else ""
        message = f"module of kind {self.kind!r} {where}has no function {name!r}"
        known = self._all_functions(query_imports)
        if known is None:
            return message
        if not known:
            return message + " (it has no functions)"
        hint = did_you_mean(name, known)
        return f"{message} (it has: {', '.join(known)})" + (f".{hint}" if hint else "")

    def __repr__(self):
        if not self._handle:
            return "<kiln.runtime.Module (uninitialized)>"
        functions = self.functions
        listed = "" if functions is None else f", functions={functions!r}"
        return f"kiln.runtime.Module(kind={self.kind!r}{listed})"


def load_module(path):
    """Loads an artifact written by ``Module.export_library``: checks its manifest and rebuilds
    its module tree (loading the runtime backends it needs). A missing file, a file that is not
    an artifact, or a damaged one raises a kiln.KilnError that says which and why.

    A compiled model (its root is a graph executor, as ``kiln.build`` makes) comes back as a
    kiln.Executable (``run(**inputs)``; its Module is ``.module``); anything else as a Module."""
    module = core_func("runtime.LoadModule")(os.fspath(path))
    if module.kind == "graph_executor":
        from .executable import Executable

        return Executable(module)
    return module


def backends():
    """Every runtime backend discovery found, as dicts with name, path, version, status
    ("builtin" for the CPU, "loaded", "failed", "shadowed") and reason. Discovery runs once per
    process: the folder of libkiln_runtime.so, then each entry of KILN_RUNTIME_PATH."""
    return to_builtin(core_func("runtime.DiscoverBackends")())


def num_threads():
    """Threads of the runtime's pool: KILN_NUM_THREADS, else the cores this process may use."""
    return core_func("runtime.NumThreads")()


def allocator_stats(device=None):
    """Counters of ``device``'s caching allocator (default: the CPU) as a dict: bytes_in_use,
    bytes_cached, peak_bytes_in_use, allocations, cache_hits."""
    dev = cpu() if device is None else as_device(device)
    return to_builtin(core_func("runtime.AllocatorStats")(dev))


def release_cached_memory():
    """Returns the blocks every caching allocator keeps for reuse to their devices."""
    core_func("runtime.ReleaseCachedMemory")()


Module.__module__ = "kiln.runtime"

# Last: graph_executor builds on Module, defined above.
from .graph_executor import GraphExecutor  # noqa: E402

__getattr__ = namespace.module_getattr(__name__, "runtime")
__dir__ = namespace.module_dir(globals(), "runtime")
