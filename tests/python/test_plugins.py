"""Plugins: explicit loading, loading by name, discovery, and plugins that fail to load."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

import kiln


def same_file(a, b):
    return os.path.realpath(a) == os.path.realpath(b)


def entry_for(path):
    entries = [p for p in kiln.plugins() if same_file(p["path"], path)]
    assert len(entries) == 1, kiln.plugins()
    return entries[0]


def test_load_plugin_describes_the_plugin(testing, testing_plugin_path):
    info = kiln.load_plugin(testing_plugin_path)
    assert same_file(info["path"], testing_plugin_path)
    assert info["name"] == "testing"
    assert info["status"] == "loaded"
    assert (info["abi_major"], info["abi_minor"]) == kiln.abi_version()
    assert isinstance(info["version"], str) and info["version"]
    assert "testing.add" in info["functions"]


def test_loading_twice_is_a_no_op(testing, testing_plugin_path):
    first = kiln.load_plugin(testing_plugin_path)
    second = kiln.load_plugin(testing_plugin_path)
    assert first == second
    assert entry_for(testing_plugin_path)["status"] == "loaded"
    assert testing.add(1, 2) == 3


def test_load_by_name_searches_kiln_plugin_path(testing, testing_plugin_path, monkeypatch):
    directory = os.path.dirname(testing_plugin_path)
    monkeypatch.setenv("KILN_PLUGIN_PATH", os.pathsep.join(["/nonexistent", directory]))
    assert same_file(kiln.load_plugin("testing")["path"], testing_plugin_path)
    assert same_file(kiln.load_plugin("libkiln_testing.so")["path"], testing_plugin_path)


def test_load_by_unknown_name_lists_where_it_looked(monkeypatch, tmp_path):
    monkeypatch.setenv("KILN_PLUGIN_PATH", str(tmp_path))
    with pytest.raises(FileNotFoundError) as info:
        kiln.load_plugin("no_such_plugin_zz")
    message = str(info.value)
    assert "libkiln_no_such_plugin_zz.so" in message
    assert str(tmp_path) in message
    assert os.path.join("kiln", "plugins") in message
    assert kiln.plugin_search_dirs()[0] == str(tmp_path)


def test_load_of_a_missing_path_names_it(testing, tmp_path):
    missing = str(tmp_path / "libkiln_missing.so")
    with pytest.raises(kiln.KilnError) as info:
        kiln.load_plugin(missing)
    assert missing in str(info.value)
    assert testing.add(1, 1) == 2


def test_abi_mismatch_is_refused_with_both_versions(testing, plugin_path):
    path = plugin_path("KILN_TESTING_BAD_ABI_PLUGIN")
    major, minor = kiln.abi_version()
    with pytest.raises(kiln.KilnError) as info:
        kiln.load_plugin(path)
    message = info.value.message
    assert path in message
    assert f"{major + 1}.0" in message  # the plugin's ABI
    assert f"{major}.{minor}" in message  # ours
    assert kiln.get_global_func("bad_abi.never_registered", allow_missing=True) is None
    entry = entry_for(path)
    assert entry["status"] != "loaded" and f"{major + 1}.0" in entry["reason"]
    assert testing.add(2, 2) == 4


def test_plugin_whose_init_throws_is_reported_and_rolled_back(testing, plugin_path):
    path = plugin_path("KILN_TESTING_THROWING_PLUGIN")
    with pytest.raises(kiln.KilnError) as info:
        kiln.load_plugin(path)
    assert "failed to initialize on purpose" in info.value.message
    assert path in str(info.value)
    assert kiln.get_global_func("throwing.registered_before_failure", allow_missing=True) is None
    entry = entry_for(path)
    assert entry["status"] != "loaded" and "on purpose" in entry["reason"]
    assert testing.add(2, 3) == 5


def test_plugin_with_a_duplicate_name_is_refused_naming_both(testing, testing_plugin_path,
                                                             plugin_path):
    path = plugin_path("KILN_TESTING_DUPLICATE_PLUGIN")
    with pytest.raises(kiln.KeyError) as info:
        kiln.load_plugin(path)
    message = info.value.message
    assert "testing.add" in message and testing_plugin_path in message and path in message
    assert kiln.get_global_func("duplicate.registered_first", allow_missing=True) is None
    assert testing.add(2, 3) == 5  # still the testing plugin's add, not the duplicate's


def test_discover_plugins_never_raises(testing, monkeypatch, tmp_path, plugin_path):
    os.symlink(plugin_path("KILN_TESTING_THROWING_PLUGIN"), tmp_path / "libkiln_throwing.so")
    monkeypatch.setenv("KILN_PLUGIN_PATH", str(tmp_path))
    kiln.discover_plugins()
    assert testing.add(1, 2) == 3


def run_python(code, env):
    full_env = {k: v for k, v in os.environ.items() if k != "KILN_PLUGIN_PATH"}
    full_env.update(env)
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=full_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_plugins_in_kiln_plugin_path_are_discovered_on_import(testing_plugin_path, plugin_path,
                                                              tmp_path):
    os.symlink(testing_plugin_path, tmp_path / "libkiln_testing.so")
    os.symlink(plugin_path("KILN_TESTING_BAD_ABI_PLUGIN"), tmp_path / "libkiln_bad_abi.so")
    os.symlink(plugin_path("KILN_TESTING_THROWING_PLUGIN"), tmp_path / "libkiln_throwing.so")
    out = run_python(
        """
        import json, os
        import kiln
        statuses = {os.path.basename(p["path"]): p["status"] for p in kiln.plugins()}
        print(json.dumps({"add": kiln.testing.add(2, 3),
                          "func": kiln.get_global_func("testing.add")(1, 1),
                          "statuses": statuses}))
        """,
        {"KILN_PLUGIN_PATH": str(tmp_path)},
    )
    assert out["add"] == 5 and out["func"] == 2
    assert out["statuses"]["libkiln_testing.so"] == "loaded"
    assert out["statuses"]["libkiln_bad_abi.so"] != "loaded"
    assert out["statuses"]["libkiln_throwing.so"] != "loaded"


def test_plugin_loaded_through_the_c_abi_before_import(testing_plugin_path):
    library = os.environ.get("KILN_FFI_LIBRARY")
    if not library:
        pytest.fail("KILN_FFI_LIBRARY is not set; run through ctest", pytrace=False)
    out = run_python(
        """
        import ctypes, json, os
        ffi = ctypes.CDLL(os.environ["KILN_FFI_LIBRARY"])
        ffi.kiln_plugin_load.argtypes = [ctypes.c_char_p, ctypes.c_void_p]
        rc = ffi.kiln_plugin_load(os.environ["KILN_TESTING_PLUGIN"].encode(), None)
        import kiln  # after the plugin registered its functions
        again = kiln.load_plugin(os.environ["KILN_TESTING_PLUGIN"])
        path = os.path.realpath(os.environ["KILN_TESTING_PLUGIN"])
        entries = [p for p in kiln.plugins() if os.path.realpath(p["path"]) == path]
        print(json.dumps({"rc": rc, "add": kiln.testing.add(20, 22), "status": again["status"],
                          "entries": len(entries)}))
        """,
        {"KILN_FFI_LIBRARY": library, "KILN_TESTING_PLUGIN": testing_plugin_path},
    )
    assert out == {"rc": 0, "add": 42, "status": "loaded", "entries": 1}
