"""my_ext from Python: the installed kiln package loads the plugin after import, or discovers it
through KILN_PLUGIN_PATH when kiln is imported."""

import os
import subprocess
import sys

import kiln  # first: a plugin loaded later must still be usable (no load-order trap)

PLUGIN = os.environ["MY_EXT_PLUGIN"]


def test_load_after_import():
    info = kiln.load_plugin(PLUGIN)
    assert info["status"] == "loaded"
    assert kiln.get_global_func("my_ext.add_one")(41) == 42
    assert kiln.get_global_func("my_ext.greet")("Kiln") == "Hello, Kiln!"


def test_namespace_attribute_resolves_at_access_time():
    kiln.load_plugin(PLUGIN)
    assert kiln.my_ext.add_one(1) == 2


def test_wrong_argument_type_raises_type_error():
    kiln.load_plugin(PLUGIN)
    add_one = kiln.get_global_func("my_ext.add_one")
    try:
        add_one("not a number")
    except TypeError as exc:
        assert "my_ext.add_one" in str(exc)
    else:
        raise AssertionError("expected a TypeError")


def test_discovered_on_import_through_kiln_plugin_path():
    # A fresh interpreter: discovery happens once, during `import kiln`.
    code = (
        "import kiln\n"
        "loaded = [p for p in kiln.plugins() if p['name'] == 'my_ext']\n"
        "assert loaded and loaded[0]['status'] == 'loaded', kiln.plugins()\n"
        "print(kiln.get_global_func('my_ext.add_one')(41))\n"
    )
    env = dict(os.environ, KILN_PLUGIN_PATH=os.path.dirname(os.path.abspath(PLUGIN)))
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "42"
