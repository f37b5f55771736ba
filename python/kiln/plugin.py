"""Compiler plugins: explicit loading, discovery and the list of what was loaded."""

import os

from ._lib import _ffi
from .containers import to_builtin
from .function import ensure_plugins_discovered, get_global_func


def plugin_search_dirs():
    """Where a plugin given by name is looked for, in order: each entry of KILN_PLUGIN_PATH,
    then <directory of libkiln_ffi.so>/kiln/plugins."""
    return list(get_global_func("ffi.PluginSearchDirs")())


def _find_plugin(path_or_name):
    path_or_name = os.fspath(path_or_name)
    if "/" in path_or_name or os.sep in path_or_name:
        return os.path.abspath(path_or_name)
    if path_or_name.endswith(".so") and os.path.exists(path_or_name):
        return os.path.abspath(path_or_name)
    # A bare name N is libkiln_N.so, searched as kiln.build searches for a compiler's plugin.
    return get_global_func("ffi.FindPluginFile")(path_or_name)


def load_plugin(path_or_name):
    """Load a compiler plugin and return its description as a dict.

    ``path_or_name`` is a path (it contains '/' or ends with '.so'), or a bare name N looked up
    as libkiln_N.so in plugin_search_dirs() (FileNotFoundError listing them if absent). Loading
    a file that is already loaded is a no-op. The dict has the keys Kiln reports: path, name,
    version, abi_major, abi_minor, status, reason, functions, ... A plugin that cannot load
    (ABI mismatch, failing init) raises kiln.KilnError and registers nothing.
    """
    return to_builtin(_ffi.plugin_load(_find_plugin(path_or_name)))


def plugins():
    """Every plugin Kiln has tried to load (explicitly or by discovery), with status and reason.
    Runs discovery first unless it has run in this process."""
    ensure_plugins_discovered()
    return to_builtin(get_global_func("ffi.ListPlugins")())


def discover_plugins():
    """Load the plugins in KILN_PLUGIN_PATH and <libdir>/kiln/plugins, scanning again on every
    call. Failures are recorded in plugins(), never raised. ``import kiln`` does not discover:
    discovery runs once on first need (kiln.plugins(), a global function or a ``kiln.<name>``
    attribute that is not found, kiln.build, the ONNX import, ...), as a compiler plugin maps
    libkiln.so, which a process that only runs compiled models should not load."""
    return to_builtin(get_global_func("ffi.DiscoverPlugins")())
