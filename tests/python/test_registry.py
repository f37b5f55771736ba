"""The global function registry from Python: lookup, listing, registration, callbacks."""


import pytest

from helpers import run_threads

import kiln


@pytest.fixture
def registered():
    """Names registered by a test, removed afterwards."""
    names = []
    yield names
    for name in names:
        if kiln.get_global_func(name, allow_missing=True) is not None:
            kiln.remove_global_func(name)


def test_list_global_funcs_is_sorted_and_complete(testing):
    names = kiln.list_global_funcs()
    assert names == sorted(names)
    assert all(type(n) is str for n in names)
    for name in ("testing.add", "testing.nop", "ffi.Map", "ffi.ListPlugins"):
        assert name in names


def test_get_global_func_calls_cpp(testing):
    add = kiln.get_global_func("testing.add")
    assert isinstance(add, kiln.Function)
    assert add(40, 2) == 42
    assert add.__name__ == "testing.add"
    assert repr(add) == "<kiln.Function testing.add>"
    assert kiln.get_global_func("testing.nop")() is None


def test_unknown_name_suggests_close_names(testing):
    with pytest.raises(kiln.UnknownFunctionError) as info:
        kiln.get_global_func("testing.ad")
    exc = info.value
    assert isinstance(exc, KeyError) and isinstance(exc, kiln.KilnError)
    assert "'testing.ad'" in str(exc)
    assert "Did you mean" in str(exc) and "'testing.add'" in str(exc)
    assert kiln.get_global_func("testing.ad", allow_missing=True) is None


def test_unknown_name_without_close_names_says_so_plainly(testing):
    with pytest.raises(kiln.UnknownFunctionError) as info:
        kiln.get_global_func("zzzzqqqq.xxxxyyyy")
    assert "Did you mean" not in str(info.value)


def test_register_func_is_callable_from_cpp(testing, registered):
    registered.append("test_registry.triple")

    @kiln.register_func("test_registry.triple")
    def triple(x):
        return 3 * x

    assert triple(2) == 6  # the decorator returns the Python function itself
    func = kiln.get_global_func("test_registry.triple")
    assert func(5) == 15
    assert testing.call(func, 7) == 21
    assert kiln.get_global_func_owner("test_registry.triple") == f"python:{__name__}"
    assert "test_registry.triple" in kiln.list_global_funcs()


def test_register_func_plain_call_and_bare_decorator(registered):
    registered.extend(["test_registry.plain", "test_registry_bare"])
    kiln.register_func("test_registry.plain", lambda: "plain")
    assert kiln.get_global_func("test_registry.plain")() == "plain"

    @kiln.register_func
    def test_registry_bare():
        return "bare"

    assert kiln.get_global_func("test_registry_bare")() == "bare"


def test_duplicate_registration_names_both_owners(testing, registered):
    registered.append("test_registry.dup")
    kiln.register_func("test_registry.dup", lambda: 1)
    with pytest.raises(kiln.KeyError) as info:
        kiln.register_func("test_registry.dup", _other_module_function())
    message = info.value.message
    assert f"python:{__name__}" in message
    assert "python:elsewhere" in message
    assert kiln.get_global_func("test_registry.dup")() == 1  # the first one stays


def test_duplicate_of_a_plugin_name_names_the_plugin(testing, testing_plugin_path):
    with pytest.raises(kiln.KeyError) as info:
        kiln.register_func("testing.add", lambda a, b: 0)
    assert testing_plugin_path in info.value.message
    assert f"python:{__name__}" in info.value.message
    assert testing.add(1, 2) == 3  # the process keeps working with the original


def test_override_replaces(registered):
    registered.append("test_registry.over")
    kiln.register_func("test_registry.over", lambda: "old")
    kiln.register_func("test_registry.over", lambda: "new", override=True)
    assert kiln.get_global_func("test_registry.over")() == "new"


def test_remove_global_func(registered):
    kiln.register_func("test_registry.removed", lambda: 0)
    kiln.remove_global_func("test_registry.removed")
    assert kiln.get_global_func("test_registry.removed", allow_missing=True) is None
    with pytest.raises(kiln.KeyError):
        kiln.remove_global_func("test_registry.removed")


def test_registering_a_non_callable_is_a_type_error():
    with pytest.raises(TypeError) as info:
        kiln.register_func("test_registry.bad", 42)
    assert "'int'" in str(info.value)


def test_kiln_function_can_be_registered_under_another_name(testing, registered):
    registered.append("test_registry.alias")
    kiln.register_func("test_registry.alias", kiln.get_global_func("testing.add"))
    assert kiln.get_global_func("test_registry.alias")(2, 2) == 4


def test_callbacks_from_several_python_threads(testing):
    errors = []
    totals = {}

    def worker(n):
        try:
            total = 0
            for i in range(300):
                total += testing.call(lambda a, b: a * b + n, i, 2)
                assert testing.call(testing.add, n, i) == n + i
            totals[n] = total
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(repr(exc))

    run_threads(worker, 8)
    assert errors == []
    assert totals == {n: sum(2 * i + n for i in range(300)) for n in range(8)}


def test_nested_callbacks(testing):
    # Python -> C++ -> Python -> C++ -> Python
    result = testing.call(lambda: testing.call(lambda x: x + 1, 41))
    assert result == 42


def _other_module_function():
    def f():
        return 2

    f.__module__ = "elsewhere"
    return f
