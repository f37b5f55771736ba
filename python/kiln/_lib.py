"""Loads kiln._ffi, the C extension over libkiln_ffi.so's C ABI, and Kiln's runtime library.

Every other library, plugin and backend is found from the folder of libkiln_ffi.so, which _ffi's
run path locates in both layouts: an installed prefix (<prefix>/lib/python3/dist-packages/kiln,
libraries in <prefix>/lib) and the kiln wheel (site-packages/kiln, libraries in kiln/lib)."""

import os

try:
    from . import _ffi
except ImportError as exc:  # pragma: no cover - depends on how Kiln was built
    raise ImportError(
        "cannot import kiln._ffi, the C extension of the kiln package: "
        f"{exc}. Build Kiln with CMake and put <build>/python on PYTHONPATH, or install it "
        "(the extension lives next to this file and needs libkiln_ffi.so)."
    ) from exc

__all__ = ["_ffi", "core_func", "load_kiln_library", "library_errors"]

_CORE_FUNCS = {}
_LIBRARY_ERRORS = {}


def load_kiln_library(name):
    """dlopen ``lib<name>.so`` from the folder of libkiln_ffi.so (the build tree's src/, an
    installed <prefix>/lib) so that its global functions register. Returns None, or the reason
    it could not be loaded (also kept for library_errors())."""
    library = _ffi.library_path()
    if not library:
        reason = "the path of libkiln_ffi.so is unknown"
    else:
        path = os.path.join(os.path.dirname(os.path.realpath(library)), f"lib{name}.so")
        try:
            _ffi.load_library(path)
            _LIBRARY_ERRORS.pop(name, None)
            return None
        except OSError as exc:
            reason = str(exc)
    _LIBRARY_ERRORS[name] = reason
    return reason


def library_errors():
    """{library name: why it did not load} for Kiln libraries that failed to load."""
    return dict(_LIBRARY_ERRORS)


def core_func(name):
    """The global function ``name`` of one of Kiln's own libraries (libkiln_ffi,
    libkiln_runtime), which never change once loaded, so the lookup is cached."""
    func = _CORE_FUNCS.get(name)
    if func is None:
        func = _ffi.get_global_func(name)
        if func is None:
            why = "".join(f"; lib{lib}.so did not load: {reason}"
                          for lib, reason in _LIBRARY_ERRORS.items())
            raise RuntimeError(f"kiln: the global function {name!r} is not registered{why}")
        _CORE_FUNCS[name] = func
    return func
