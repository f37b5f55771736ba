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


def plugin_dir_with_testing_and_broken_plugins(tmp_path, testing_plugin_path, plugin_path):
    os.symlink(testing_plugin_path, tmp_path / "libkiln_testing.so")
    os.symlink(plugin_path("KILN_TESTING_BAD_ABI_PLUGIN"), tmp_path / "libkiln_bad_abi.so")
    os.symlink(plugin_path("KILN_TESTING_THROWING_PLUGIN"), tmp_path / "libkiln_throwing.so")
    return tmp_path


# What in a fresh process makes plugins in KILN_PLUGIN_PATH be discovered; each ends with
# testing.add(2, 3) found.
FIRST_NEEDS = {
    "namespace attribute": "kiln.testing.add(2, 3)",
    "get_global_func miss": "kiln.get_global_func('testing.add')(2, 3)",
    "plugins()": "len(kiln.plugins()) and kiln.get_global_func('testing.add')(2, 3)",
}


@pytest.mark.parametrize("trigger", FIRST_NEEDS.values(), ids=FIRST_NEEDS.keys())
def test_plugins_in_kiln_plugin_path_are_discovered_on_first_need_not_on_import(
        testing_plugin_path, plugin_path, tmp_path, trigger):
    folder = plugin_dir_with_testing_and_broken_plugins(tmp_path, testing_plugin_path, plugin_path)
    out = run_python(
        f"""
        import json, os
        import kiln
        # Read without kiln.plugins(), which would discover.
        before = len(kiln.get_global_func("ffi.ListPlugins")())
        added = "testing.add" in kiln.list_global_funcs()
        result = {trigger}
        statuses = {{os.path.basename(p["path"]): p["status"] for p in kiln.plugins()}}
        print(json.dumps({{"before": before, "added_on_import": added, "result": result,
                          "statuses": statuses}}))
        """,
        {"KILN_PLUGIN_PATH": str(folder)},
    )
    assert out["before"] == 0 and not out["added_on_import"]
    assert out["result"] == 5
    assert out["statuses"]["libkiln_testing.so"] == "loaded"
    assert out["statuses"]["libkiln_bad_abi.so"] != "loaded"
    assert out["statuses"]["libkiln_throwing.so"] != "loaded"


def test_discovery_runs_once_and_discover_plugins_scans_again(testing_plugin_path, plugin_path,
                                                              tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    os.symlink(testing_plugin_path, first / "libkiln_testing.so")
    os.symlink(plugin_path("KILN_TESTING_DUPLICATE_PLUGIN"), second / "libkiln_duplicate.so")
    out = run_python(
        f"""
        import json, os
        import kiln
        first = kiln.testing.add(1, 1)
        os.environ["KILN_PLUGIN_PATH"] += ":" + {str(second)!r}
        kiln.get_global_func("no.such.function", allow_missing=True)  # a miss: no rescan
        names = lambda: sorted(os.path.basename(p["path"]) for p in kiln.plugins())
        after_miss = names()
        kiln.discover_plugins()
        print(json.dumps({{"first": first, "after_miss": after_miss, "after_discover": names()}}))
        """,
        {"KILN_PLUGIN_PATH": str(first)},
    )
    assert out["first"] == 2
    assert out["after_miss"] == ["libkiln_testing.so"]
    # The duplicate plugin (refused: it registers a name the testing plugin owns) is recorded.
    assert out["after_discover"] == ["libkiln_duplicate.so", "libkiln_testing.so"]


def test_runtime_only_process_never_maps_the_compiler_of_a_plugin_in_kiln_plugin_path(tmp_path):
    # libkiln_ext_op.so is a compiler plugin: loading it maps libkiln.so.
    plugin = os.environ.get("KILN_EXT_OP_PLUGIN")
    if not plugin:
        pytest.fail("KILN_EXT_OP_PLUGIN is not set; run through ctest", pytrace=False)
    folder = tmp_path / "plugins"
    folder.mkdir()
    os.symlink(plugin, folder / "libkiln_ext_op.so")
    import numpy as np
    import kiln.frontend
    from onnx import TensorProto, helper

    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "relu",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    artifact = tmp_path / "relu.so"
    kiln.build(kiln.frontend.from_onnx(model)).export_library(artifact)
    out = run_python(
        f"""
        import json
        import numpy as np
        import kiln
        y = kiln.load_module({str(artifact)!r}).run(x=np.array([-1, 0, 2], "float32"))[0]
        compiler_after_run = "/libkiln.so" in open("/proc/self/maps").read()
        statuses = {{p["path"].rsplit("/", 1)[-1]: p["status"] for p in kiln.plugins()}}
        compiler_after_plugins = "/libkiln.so" in open("/proc/self/maps").read()
        print(json.dumps({{"y": y.tolist(), "after_run": compiler_after_run,
                          "after_plugins": compiler_after_plugins, "statuses": statuses}}))
        """,
        {"KILN_PLUGIN_PATH": str(folder)},
    )
    assert out["y"] == [0.0, 0.0, 2.0]
    assert not out["after_run"], "running a model discovered the compiler plugin"
    # Asking for the plugins discovers them, which is when the compiler is mapped.
    assert out["statuses"]["libkiln_ext_op.so"] == "loaded"
    assert out["after_plugins"]


def test_compiler_entry_points_discover_plugins(tmp_path):
    # Op::Get of an op that only an installed plugin registers, and the ONNX import of a model
    # using that plugin's custom-domain converter, each in a fresh process without load_plugin.
    plugin = os.environ.get("KILN_EXT_OP_PLUGIN")
    if not plugin:
        pytest.fail("KILN_EXT_OP_PLUGIN is not set; run through ctest", pytrace=False)
    out = run_python(
        """
        import json
        import kiln
        from kiln import ir
        op = ir.Op("ext_op.swish")
        print(json.dumps({"op": op.name}))
        """,
        {"KILN_PLUGIN_PATH": plugin},
    )
    assert out == {"op": "ext_op.swish"}
    out = run_python(
        """
        import json
        import kiln.frontend
        from onnx import TensorProto, helper
        graph = helper.make_graph(
            [helper.make_node("Swish", ["x"], ["y"], domain="com.kiln.ext_op")], "swish",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13),
                                                        helper.make_opsetid("com.kiln.ext_op", 1)])
        body = kiln.frontend.from_onnx(model)["main"].body
        print(json.dumps({"op": body.op.name}))
        """,
        {"KILN_PLUGIN_PATH": plugin},
    )
    assert out == {"op": "ext_op.swish"}


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
