"""Kiln Functions and the global function registry.

Nothing here caches the registry: every lookup asks Kiln, so a function registered later (by a
plugin loaded after ``import kiln``, say) is found at once.
"""

import difflib

from ._lib import _ffi
from .error import UnknownFunctionError

Function = _ffi.Function


def close_names(name, candidates, limit=3):
    """Up to ``limit`` of ``candidates`` that look like ``name``, best first."""
    return difflib.get_close_matches(name, list(candidates), n=limit, cutoff=0.6)


def did_you_mean(name, candidates):
    """" Did you mean: 'a', 'b'?" or an empty string."""
    matches = close_names(name, candidates)
    return f" Did you mean: {', '.join(repr(m) for m in matches)}?" if matches else ""


def list_global_funcs():
    """Every registered global function name, sorted."""
    return _ffi.list_global_funcs()


def ensure_plugins_discovered():
    """Discovers the installed compiler plugins unless that was done already in this process
    (``import kiln`` does not: a compiler plugin maps libkiln.so, the compiler)."""
    _ffi.get_global_func("ffi.EnsurePluginsDiscovered")()


def get_global_func(name, allow_missing=False):
    """The global Function registered as ``name``.

    A name that is not registered is looked for again after plugin discovery (once per
    process), then raises kiln.UnknownFunctionError (a KeyError) naming close matches, or
    returns None with ``allow_missing=True``.
    """
    func = _ffi.get_global_func(name)
    if func is None:
        ensure_plugins_discovered()
        func = _ffi.get_global_func(name)
    if func is None and not allow_missing:
        suggestion = did_you_mean(name, list_global_funcs())
        raise UnknownFunctionError(f"no global function is registered as {name!r}.{suggestion}")
    return func


def get_global_func_owner(name):
    """Who registered ``name`` (a DSO path, "python:<module>"), or None if it is not registered."""
    return _ffi.get_global_func_owner(name)


def register_func(name, f=None, override=False):
    """Register the Python callable ``f`` as the global function ``name``.

    Usable as ``register_func("my.func", f)``, ``@register_func("my.func")`` or, naming the
    function after itself, ``@register_func``. The owner recorded is "python:<f's module>".
    A name that exists raises kiln.KeyError naming both owners unless ``override`` is true.
    Returns ``f``.
    """
    if callable(name) and f is None:
        f, name = name, name.__name__

    def register(func):
        owner = f"python:{getattr(func, '__module__', None) or '<unknown>'}"
        _ffi.register_global_func(name, func, bool(override), owner)
        return func

    return register(f) if f is not None else register


def remove_global_func(name):
    """Unregister ``name``; raises kiln.KeyError if it is not registered."""
    _ffi.remove_global_func(name)
