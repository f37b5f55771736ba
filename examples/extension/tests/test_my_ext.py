"""my_ext from Python: the installed kiln package loads the plugin after import, or discovers it
through KILN_PLUGIN_PATH when it is first needed."""

import os
import subprocess
import sys

import kiln  # first: a plugin loaded later must still be usable (no load-order trap)
import kiln.transform  # passes come back as kiln.transform.Pass once this module is imported

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


# Two identity calls in @main, and @unused, which no entry function reaches.
MODULE_TEXT = """
def @main(%x: Tensor[(4), float32]) {
  %0 = my_ext.identity(%x);
  %1 = (%0, %x);
  %2 = my_ext.identity(%1);
  %2
}

def @unused(%y: Tensor[(4), float32]) {
  %y
}
"""

EXPECTED_TEXT = """
def @main(%x: Tensor[(4), float32]) {
  %0 = (%x, %x);
  %0
}
"""


def parse(text):
    # The parser resolves op names: the plugin (and its my_ext.identity) must be loaded first.
    return kiln.ir.ParseModule(text, [])


def function_names(mod):
    return sorted(gvar.name_hint for gvar, _ in mod.functions.items())


def assert_cleaned_up(out):
    # structural_equal compares GlobalVars, and so modules, by identity, and each parse makes new
    # ones: compare the functions, matched by name.
    expected = parse(EXPECTED_TEXT)
    assert function_names(out) == function_names(expected), out
    for name in function_names(expected):
        assert kiln.ir.structural_equal(out[name], expected[name]), out
    assert "my_ext.identity" not in kiln.ir.AsText(out)


def test_pass_runs_in_a_sequential_with_built_in_passes():
    kiln.load_plugin(PLUGIN)
    remove_identity = kiln.get_global_func("my_ext.transform.RemoveIdentity")()
    assert isinstance(remove_identity, kiln.transform.Pass)
    assert remove_identity.info["name"] == "my_ext.transform.RemoveIdentity"
    seq = kiln.transform.Sequential([remove_identity, kiln.transform.DeadCodeElimination()])
    mod = parse(MODULE_TEXT)
    assert_cleaned_up(seq(mod))
    assert "my_ext.identity" in kiln.ir.AsText(mod)  # the input is unchanged


def test_pass_reached_through_the_plugin_namespace():
    kiln.load_plugin(PLUGIN)
    remove_identity = kiln.my_ext.transform.RemoveIdentity()
    assert isinstance(remove_identity, kiln.transform.Pass)
    out = kiln.transform.DeadCodeElimination()(remove_identity(parse(MODULE_TEXT)))
    assert_cleaned_up(out)


def test_pass_runs_from_a_pipeline_string():
    kiln.load_plugin(PLUGIN)
    out = kiln.transform.run_pipeline(
        parse(MODULE_TEXT), "my_ext.transform.RemoveIdentity,DeadCodeElimination"
    )
    assert_cleaned_up(out)


def test_pass_is_skipped_below_its_opt_level():
    kiln.load_plugin(PLUGIN)
    mod = parse(MODULE_TEXT)
    out = kiln.transform.run_pipeline(mod, "my_ext.transform.RemoveIdentity", opt_level=0)
    assert out.same_as(mod)


def test_discovered_through_kiln_plugin_path():
    # A fresh interpreter: discovery runs once, on first need (kiln.plugins() here).
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
