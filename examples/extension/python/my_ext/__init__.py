"""my_ext: the Python face of the libkiln_my_ext.so plugin.

``import my_ext`` imports kiln, loads the plugin once, and makes every global function the plugin
registers under "my_ext." an attribute, looked up when accessed (never from a snapshot), so
whatever the C++ side adds shows up without a change here::

    my_ext.add_one(41)                      # the global "my_ext.add_one"
    my_ext.transform.RemoveIdentity()       # a pass, usable in kiln.transform.Sequential

Where the plugin comes from, first match wins:

1. a plugin named my_ext that Kiln already loaded (KILN_PLUGIN_PATH discovery, kiln.load_plugin):
   kept, never loaded a second time;
2. the file named by MY_EXT_PLUGIN;
3. libkiln_my_ext.so next to this file (the my_ext wheel);
4. libkiln_my_ext.so in kiln.plugin_search_dirs() (KILN_PLUGIN_PATH, then
   <kiln prefix>/lib/kiln/plugins).

The runtime side, libkiln_runtime_my_ext.so, is what a runtime-only process needs to run an
exported model that contains my_ext's modules. When it sits next to this file (the wheel), its
folder is prepended to KILN_RUNTIME_PATH, which Kiln reads when a model asks for that library: in
this process and in the processes it starts.
"""

import os

import kiln
from kiln import namespace as _namespace

PLUGIN_NAME = "my_ext"
PLUGIN_FILE = "libkiln_my_ext.so"
RUNTIME_FILE = "libkiln_runtime_my_ext.so"

_HERE = os.path.dirname(os.path.abspath(__file__))


def _loaded_plugin():
    """Kiln's description of the loaded my_ext plugin, or None."""
    for info in kiln.plugins():
        if info.get("name") == PLUGIN_NAME and info["status"] == "loaded":
            return info
    return None


def _plugin_to_load():
    """The path (or the bare name kiln.load_plugin searches for) of the plugin to load."""
    explicit = os.environ.get("MY_EXT_PLUGIN")
    if explicit:
        return explicit
    bundled = os.path.join(_HERE, PLUGIN_FILE)
    if os.path.exists(bundled):
        return bundled
    return PLUGIN_NAME


def _add_runtime_path():
    if not os.path.exists(os.path.join(_HERE, RUNTIME_FILE)):
        return
    entries = [e for e in os.environ.get("KILN_RUNTIME_PATH", "").split(os.pathsep) if e]
    if _HERE not in entries:
        os.environ["KILN_RUNTIME_PATH"] = os.pathsep.join([_HERE] + entries)


def _load():
    _add_runtime_path()
    return _loaded_plugin() or kiln.load_plugin(_plugin_to_load())


plugin_info = _load()
"""Kiln's description of the plugin this package uses: path, version, functions, ..."""

# "my_ext.<name>" for any attribute this module does not define, resolved at access time.
__getattr__ = _namespace.module_getattr(__name__, PLUGIN_NAME)
__dir__ = _namespace.module_dir(globals(), PLUGIN_NAME)
