"""Ownership across the boundary: nothing leaks, nothing is freed twice."""

import gc
import sys
import weakref

import pytest

from helpers import traced_growth

import kiln


def live(testing):
    gc.collect()
    return testing.counted_objects()


def test_counted_objects_die_with_their_last_python_reference(testing):
    base = live(testing)
    objs = [testing.make_counted() for _ in range(100)]
    assert live(testing) == base + 100
    del objs
    assert live(testing) == base


def test_round_trips_keep_exactly_one_object_alive(testing):
    base = live(testing)
    obj = testing.make_counted()
    copies = [testing.echo(obj) for _ in range(50)]
    assert live(testing) == base + 1
    del obj
    assert live(testing) == base + 1  # the copies still hold it
    del copies
    assert live(testing) == base


def test_containers_hold_and_release_their_items(testing, no_counted_leaks):
    base = live(testing)
    array = testing.echo([testing.make_counted(), [testing.make_counted()]])
    mapping = testing.echo({"a": testing.make_counted()})
    assert live(testing) == base + 3
    item = array[1][0]
    value = mapping["a"]
    del array, mapping
    assert live(testing) == base + 2
    del item, value
    assert live(testing) == base


def test_callbacks_receive_and_return_objects_without_leaks(testing, no_counted_leaks):
    kept = []

    def keep(obj):
        kept.append(obj)
        return obj

    for _ in range(20):
        obj = testing.make_counted()
        assert testing.call(keep, obj).same_as(obj)
        assert testing.call(lambda: testing.make_counted()).type_key == "testing.Counted"
    kept.clear()


def test_failing_calls_release_their_arguments(testing, no_counted_leaks):
    def fail(obj):
        raise ValueError("no")

    for _ in range(20):
        with pytest.raises(kiln.ValueError):
            testing.call(fail, testing.make_counted())
        with pytest.raises(TypeError):
            testing.echo([testing.make_counted(), {1}])


def test_python_callable_is_released_after_each_call(testing):
    def callback(x):
        return x

    before = sys.getrefcount(callback)
    for i in range(1000):
        assert testing.call(callback, i) == i
    assert sys.getrefcount(callback) == before


def test_function_wrapping_a_python_callable_owns_it(testing):
    class Callable:
        def __call__(self, x):
            return x + 1

    target = Callable()
    ref = weakref.ref(target)
    func = testing.echo(target)
    del target
    gc.collect()
    assert ref() is not None  # the Kiln Function keeps it alive
    assert func(1) == 2
    del func
    gc.collect()
    assert ref() is None


def test_registered_python_function_is_released_on_removal(testing):
    class Callable:
        def __call__(self):
            return 7

    target = Callable()
    ref = weakref.ref(target)
    kiln.register_func("test_refcount.registered", target)
    del target
    gc.collect()
    assert kiln.get_global_func("test_refcount.registered")() == 7
    kiln.remove_global_func("test_refcount.registered")
    gc.collect()
    assert ref() is None


def test_results_are_not_leaked(testing):
    # Each result type owns one reference; dropping it must free the Kiln object (the Array and
    # Map would keep the counted objects alive otherwise).
    base = live(testing)
    for _ in range(200):
        testing.echo([testing.make_counted()])
        testing.echo({"k": testing.make_counted()})
        testing.make_shape(1, 2)
        testing.echo("a string")
        testing.echo(b"bytes")
    assert live(testing) == base


def test_calls_do_not_leak_python_memory(testing):
    def exercise():
        add = kiln.get_global_func("testing.add")
        add(1, 2)
        testing.echo("a string \u00e9")
        testing.echo(b"bytes")
        testing.echo([1, "x", {"k": 2.5}])
        testing.call(lambda x: [x], "y")
        kiln.list_global_funcs()
        try:
            testing.raise_error("ValueError", "boom")
        except kiln.ValueError:
            pass

    assert traced_growth(exercise) < 20_000
