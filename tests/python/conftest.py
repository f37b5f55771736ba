"""Shared fixtures: the testing plugin is loaded after `import kiln`, as a user would."""

import gc
import os

import pytest

import kiln


def _plugin_path(variable):
    path = os.environ.get(variable)
    if not path:
        pytest.fail(f"{variable} is not set; run through ctest, which sets it "
                    "(see tests/python/CMakeLists.txt)", pytrace=False)
    return path


def load_built_plugin(name):
    """Loads the compiler side of plugins/<name> from KILN_<NAME>_PLUGIN, which ctest sets when
    the plugin was built (tests/python/CMakeLists.txt leaves the plugin's tests out otherwise)."""
    kiln.load_plugin(_plugin_path(f"KILN_{name.upper()}_PLUGIN"))


@pytest.fixture(scope="session")
def testing_plugin_path():
    return _plugin_path("KILN_TESTING_PLUGIN")


@pytest.fixture(scope="session")
def testing(testing_plugin_path):
    """The `testing` namespace of kiln, after loading libkiln_testing.so."""
    kiln.load_plugin(testing_plugin_path)
    return kiln.testing


@pytest.fixture
def no_counted_leaks(testing):
    """Fails the test if it leaves more testing.Counted objects alive than it found."""
    gc.collect()
    before = testing.counted_objects()
    yield
    gc.collect()
    assert testing.counted_objects() == before


@pytest.fixture
def plugin_path():
    """plugin_path("KILN_TESTING_BAD_ABI_PLUGIN") -> the path the environment names."""
    return _plugin_path
