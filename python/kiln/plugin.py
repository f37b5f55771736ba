"""Compiler plugins: explicit loading, discovery and the list of what was loaded."""

import os

from ._lib import _ffi
from .containers import to_builtin
from .function import get_global_func


def plugin_search_dirs():
    """Where a plugin given by name is looked for, in order: each entry of KILN_PLUGIN_PATH,
    then <directory of libkiln_ffi.so>/kiln/plugins."""
    dirs = [d for d in os.environ.get("KILN_PLUGIN_PATH", "").split(os.pathsep) if d]
    library = _ffi.library_path()
    if library:
        dirs.append(os.path.join(os.path.dirname(os.path.realpath(library)), "kiln", "plugins"))
    return dirs


def _find_plugin(path_or_name):
    path_or_name = os.fspath(path_or_name)
    if os.sep in path_or_name or "/" in path_or_name:
        return os.path.abspath(path_or_name)
    if path_or_name.endswith(".so"):
        if os.path.exists(path_or_name):
            return os.path.abspath(path_or_name)
        file_name = path_or_name
    else:
        file_name = f"libkiln_{path_or_name}.so"
    dirs = plugin_search_dirs()
    for directory in dirs:
        candidate = os.path.join(directory, file_name)
        if os.path.isfile(candidate):
            return os.path.abspath(candidate)
    looked = "\n".join(f"  {d}" for d in dirs) or "  (no directory: KILN_PLUGIN_PATH is empty)"
    raise FileNotFoundError(f"kiln plugin {path_or_name!r}: no {file_name} in\n{looked}")


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
    """Every plugin Kiln has tried to load (explicitly or by discovery), with status and reason."""
    return to_builtin(get_global_func("ffi.ListPlugins")())


def discover_plugins():
    """Load the plugins in KILN_PLUGIN_PATH and <libdir>/kiln/plugins. Failures are recorded in
    plugins(), never raised. ``import kiln`` calls this once."""
    return to_builtin(get_global_func("ffi.DiscoverPlugins")())
