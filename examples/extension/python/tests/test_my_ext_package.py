"""The my_ext Python package over libkiln_my_ext.so: either import order, a plugin Kiln already
discovered, the wheel layout (the plugin next to __init__.py). Each case runs in a fresh
interpreter, since a plugin loads once per process.

Environment: MY_EXT_PLUGIN (the built plugin), PYTHONPATH with kiln and examples/extension/python.
"""

import os
import shutil
import subprocess
import sys

import pytest

PLUGIN = os.path.abspath(os.environ["MY_EXT_PLUGIN"])
PACKAGE_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "my_ext")


def run_python(code, env_changes=None, drop=()):
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(env_changes or {})
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    return result.stdout.strip().splitlines()


CALLS = (
    "import kiln.transform\n"
    "print(my_ext.add_one(41))\n"
    "print(my_ext.greet('x'))\n"
    "print(isinstance(my_ext.transform.RemoveIdentity(), kiln.transform.Pass))\n"
    "print(kiln.my_ext.add_one(1))\n"
    "print(sum(p.get('name') == 'my_ext' for p in kiln.plugins()))\n"
)
EXPECTED = ["42", "Hello, x!", "True", "2", "1"]


@pytest.mark.parametrize(
    "imports", ["import my_ext\nimport kiln\n", "import kiln\nimport my_ext\n"]
)
def test_functions_callable_in_either_import_order(imports):
    assert run_python(imports + CALLS) == EXPECTED


def test_plugin_already_discovered_is_not_loaded_again():
    # KILN_PLUGIN_PATH makes `import kiln` load the plugin; my_ext then keeps that one, and an
    # explicit load of the same file afterwards is a no-op too.
    code = (
        "import kiln\n"
        "import my_ext\n"
        "print(kiln.load_plugin(my_ext.plugin_info['path'])['status'])\n" + CALLS
    )
    lines = run_python(code, {"KILN_PLUGIN_PATH": os.path.dirname(PLUGIN)}, drop=["MY_EXT_PLUGIN"])
    assert lines == ["loaded"] + EXPECTED


def test_wheel_layout_loads_the_plugin_next_to_the_package(tmp_path):
    # As the wheel installs it: site-packages/my_ext/{__init__.py, libkiln_my_ext.so,
    # libkiln_runtime_my_ext.so}. The runtime library only needs to exist for its folder to be
    # put on KILN_RUNTIME_PATH (nothing here loads it).
    package = tmp_path / "my_ext"
    shutil.copytree(PACKAGE_DIR, package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(PLUGIN, package / "libkiln_my_ext.so")
    (package / "libkiln_runtime_my_ext.so").write_bytes(b"")
    code = (
        "import os, my_ext\n"
        "print(my_ext.plugin_info['path'])\n"
        "print(os.environ['KILN_RUNTIME_PATH'].split(os.pathsep)[0])\n"
        "print(my_ext.add_one(1))\n"
    )
    pythonpath = os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])
    lines = run_python(
        code, {"PYTHONPATH": pythonpath, "KILN_RUNTIME_PATH": "/elsewhere"}, drop=["MY_EXT_PLUGIN"]
    )
    assert lines == [str(package / "libkiln_my_ext.so"), str(package), "2"]


def test_unknown_attribute_names_the_global_it_looked_for():
    code = (
        "import my_ext\n"
        "try:\n"
        "    my_ext.no_such_function\n"
        "except AttributeError as exc:\n"
        "    print(exc)\n"
        "print('add_one' in dir(my_ext))\n"
    )
    lines = run_python(code)
    assert "my_ext.no_such_function" in lines[0]
    assert lines[1] == "True"

