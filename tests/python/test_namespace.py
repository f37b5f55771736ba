"""Dotted access to globals resolves at access time; nothing is snapshotted."""

import types

import pytest

import kiln


def test_namespace_calls_the_global(testing):
    assert isinstance(kiln.testing, kiln.Namespace)
    assert kiln.testing.add(1, 2) == 3
    assert kiln.testing.add.same_as(kiln.get_global_func("testing.add"))
    assert "add" in dir(kiln.testing) and "echo" in dir(kiln.testing)
    assert "testing" in dir(kiln)


def test_unknown_member_suggests_close_names(testing):
    with pytest.raises(AttributeError) as info:
        kiln.testing.ad
    message = str(info.value)
    assert "'testing.ad'" in message and "'testing.add'" in message
    assert not hasattr(kiln.testing, "definitely_not_there")


def test_unknown_top_level_name_suggests_close_names(testing):
    with pytest.raises(AttributeError) as info:
        kiln.testng
    assert "module 'kiln'" in str(info.value) and "'testing'" in str(info.value)
    assert not hasattr(kiln, "no_such_namespace_anywhere")


def test_dunder_lookups_do_not_touch_the_registry():
    with pytest.raises(AttributeError):
        kiln.__wrapped__
    with pytest.raises(AttributeError):
        kiln.testing.__wrapped__


def test_real_attributes_win_over_globals(testing):
    kiln.register_func("load_plugin", lambda: "global")
    kiln.register_func("error.shadowed", lambda: "global")
    try:
        assert kiln.load_plugin is kiln.plugin.load_plugin
        assert isinstance(kiln.error, types.ModuleType)
    finally:
        kiln.remove_global_func("load_plugin")
        kiln.remove_global_func("error.shadowed")


def test_names_registered_later_are_reachable_at_once(testing):
    namespace = kiln.testing
    kiln.register_func("testing.py_late", lambda: "late")
    kiln.register_func("late_ns.deeper.fn", lambda x: x * 2)
    try:
        assert namespace.py_late() == "late"  # a namespace obtained before still sees it
        assert kiln.late_ns.deeper.fn(4) == 8
    finally:
        kiln.remove_global_func("testing.py_late")
        kiln.remove_global_func("late_ns.deeper.fn")
    with pytest.raises(AttributeError):
        namespace.py_late
    with pytest.raises(AttributeError):
        kiln.late_ns


def test_namespaces_are_read_only(testing):
    with pytest.raises(AttributeError):
        kiln.testing.add = None


def test_module_getattr_helper_for_submodules(testing):
    module = types.ModuleType("fake_submodule")
    module.__getattr__ = kiln.namespace.module_getattr("fake_submodule", "testing")
    module.own = "own attribute"
    assert module.own == "own attribute"
    assert module.add(2, 2) == 4
    with pytest.raises(AttributeError) as info:
        module.ad
    assert "'testing.add'" in str(info.value)
