"""Every Python <-> Kiln conversion, each way, through the testing plugin's functions."""

import math
import pickle

import pytest

import kiln


class IntLike:
    def __init__(self, value):
        self.value = value

    def __index__(self):
        return self.value


@pytest.mark.parametrize(
    "value",
    [None, 0, 1, -1, 2**63 - 1, -(2**63), 0.0, -2.5, 1e300, "", "ascii", "h\u00e9llo \u2713"],
)
def test_echo_returns_equal_value_of_same_type(testing, value):
    result = testing.echo(value)
    assert result == value
    assert type(result) is type(value)


@pytest.mark.parametrize("value", [True, False])
def test_bool_stays_bool_not_int(testing, value):
    assert testing.echo(value) is value


def test_float_specials(testing):
    assert testing.echo(math.inf) == math.inf
    assert math.isnan(testing.echo(math.nan))


@pytest.mark.parametrize("value", [2**63, -(2**63) - 1, 10**30])
def test_int_overflow_names_the_value(testing, value):
    with pytest.raises(OverflowError) as info:
        testing.echo(value)
    assert str(value) in str(info.value)
    assert "testing.echo" in str(info.value)


def test_int_like_objects_become_int(testing):
    assert testing.add(IntLike(40), 2) == 42


def test_exceptions_of_other_classes_keep_their_class_and_get_a_note(testing):
    class Unusual(Exception):
        def __init__(self, a, b):
            super().__init__(a, b)

    class BadIndex:
        def __index__(self):
            raise Unusual(1, 2)

    with pytest.raises(Unusual) as info:
        testing.add(1, BadIndex())
    assert info.value.__notes__ == ["while converting testing.add(): argument 1"]


def test_str_passes_utf8_bytes(testing):
    assert testing.concat("ab", "c\u00e9") == "abc\u00e9"
    assert testing.string_len("h\u00e9llo") == 6  # UTF-8 bytes, not code points


def test_str_with_embedded_nul_keeps_every_byte(testing):
    assert testing.string_len("a\0b") == 3
    assert testing.echo("a\0b") == "a\0b"


def test_str_with_lone_surrogate_round_trips_its_bytes(testing):
    # bytes that are not UTF-8 come back with surrogateescape and go back unchanged
    assert testing.echo("\udcff") == "\udcff"
    assert testing.string_len("\udcff") == 1


@pytest.mark.parametrize("value", [b"", b"abc", b"\x00\xff\x00"])
def test_bytes_round_trip(testing, value):
    result = testing.echo(value)
    assert result == value
    assert type(result) is bytes


def test_bytearray_becomes_bytes(testing):
    assert testing.echo(bytearray(b"xy\0z")) == b"xy\0z"


def test_list_and_tuple_become_array(testing):
    for value in ([1, "a", None, 2.5, True], (1, "a", None, 2.5, True)):
        result = testing.echo(value)
        assert isinstance(result, kiln.Array)
        assert list(result) == [1, "a", None, 2.5, True]
        assert type(result[4]) is bool


def test_nested_containers(testing):
    result = testing.echo([[1, [2]], {"k": [3, {"deep": b"x"}]}, ()])
    assert isinstance(result[0], kiln.Array)
    assert isinstance(result[1], kiln.Map)
    assert kiln.containers.to_builtin(result) == [[1, [2]], {"k": [3, {"deep": b"x"}]}, []]


def test_typed_array_argument(testing):
    assert testing.array_sum([1, 2, 3, 4]) == 10
    assert testing.array_sum(()) == 0
    assert testing.array_sum(kiln.Array([5, 6])) == 11
    with pytest.raises(kiln.TypeError):
        testing.array_sum([1, "two"])


def test_array_from_kiln_is_a_sequence(testing):
    array = testing.make_array(5)
    assert isinstance(array, kiln.Array)
    assert len(array) == 5
    assert list(array) == [0, 1, 2, 3, 4]
    assert array[0] == 0 and array[-1] == 4
    assert array[1:4] == [1, 2, 3]
    assert 3 in array and 7 not in array
    assert array.index(2) == 2
    assert list(reversed(array)) == [4, 3, 2, 1, 0]
    with pytest.raises(IndexError):
        array[5]
    with pytest.raises(IndexError):
        array[-6]
    assert repr(array) == "kiln.Array([0, 1, 2, 3, 4])"
    assert len(testing.make_array(0)) == 0


def test_dict_becomes_map(testing):
    result = testing.echo({"a": 1, "b": [1, 2], "c": None})
    assert isinstance(result, kiln.Map)
    assert len(result) == 3
    assert result["a"] == 1
    assert list(result["b"]) == [1, 2]
    assert result["c"] is None
    assert sorted(result) == ["a", "b", "c"]
    assert testing.map_get({"x": 5, "y": "why"}, "y") == "why"


def test_map_from_kiln_is_a_mapping(testing):
    result = testing.make_map()
    assert isinstance(result, kiln.Map)
    assert dict(result) == {"a": 1, "b": "two"}
    assert "a" in result and "zzz" not in result
    assert result.get("zzz", 7) == 7
    assert sorted(result.items()) == [("a", 1), ("b", "two")]
    with pytest.raises(KeyError) as info:
        result["zzz"]
    assert "zzz" in str(info.value)
    assert testing.map_get(result, "b") == "two"


def test_missing_map_key_in_kiln_is_a_key_error(testing):
    with pytest.raises(kiln.KeyError) as info:
        testing.map_get({"a": 1}, "b")
    assert isinstance(info.value, KeyError)
    assert "'b'" in info.value.message


def test_shape_is_tuple_like(testing):
    shape = testing.make_shape(2, 3, 4)
    assert isinstance(shape, kiln.Shape)
    assert shape == (2, 3, 4) and shape == [2, 3, 4] and shape != (2, 3)
    assert len(shape) == 3 and shape[-1] == 4 and tuple(shape) == (2, 3, 4)
    assert hash(shape) == hash((2, 3, 4))
    assert testing.echo(shape).same_as(shape)
    assert kiln.Shape([5, 6]) == (5, 6)
    assert testing.make_shape() == ()


def test_object_round_trip_keeps_identity(testing):
    obj = testing.make_counted()
    assert type(obj) is kiln.Object
    assert obj.type_key == "testing.Counted"
    assert obj.type_index >= 128
    back = testing.echo(obj)
    assert back is not obj
    assert back.same_as(obj) and back == obj and hash(back) == hash(obj)
    other = testing.make_counted()
    assert not other.same_as(obj) and other != obj


def test_function_round_trip(testing):
    add = kiln.get_global_func("testing.add")
    back = testing.echo(add)
    assert isinstance(back, kiln.Function)
    assert back.same_as(add)
    assert back(20, 22) == 42


def test_python_callable_becomes_function(testing):
    double = testing.echo(lambda x: x * 2)
    assert isinstance(double, kiln.Function)
    assert double(21) == 42
    assert testing.call(double, "ab") == "abab"


def test_callback_receives_converted_arguments(testing):
    seen = []

    def record(*args):
        seen.append(args)
        return len(args)

    counted = testing.make_counted()
    assert testing.call(record, None, True, 3, 1.5, "s", b"b", [1], {"k": 2}, counted) == 9
    (args,) = seen
    assert args[:6] == (None, True, 3, 1.5, "s", b"b")
    assert type(args[1]) is bool
    assert list(args[6]) == [1] and dict(args[7]) == {"k": 2}
    assert args[8].same_as(counted)


@pytest.mark.parametrize(
    "value", [None, False, -7, 0.25, "t\u00e9xt", b"\x00b", [1, "x"], {"m": 1}, (2, 3)]
)
def test_callback_return_values_convert(testing, value):
    result = testing.call(lambda: value)
    expected = list(value) if isinstance(value, tuple) else value
    assert kiln.containers.to_builtin(result) == expected


def test_error_object_as_value(testing):
    error = kiln.Error("ValueError", "bad thing", "ctx line")
    back = testing.echo(error)
    assert isinstance(back, kiln.Error) and back.same_as(error)
    assert (back.kind, back.message, back.context) == ("ValueError", "bad thing", "ctx line")
    exc = back.to_exception()
    assert isinstance(exc, kiln.ValueError) and isinstance(exc, ValueError)


def test_unconvertible_argument_names_function_index_and_type(testing):
    with pytest.raises(TypeError) as info:
        testing.echo({1, 2})
    message = str(info.value)
    assert "testing.echo" in message and "argument 0" in message and "'set'" in message

    with pytest.raises(TypeError) as info:
        testing.add(1, object())
    assert "argument 1" in str(info.value) and "'object'" in str(info.value)


def test_unconvertible_element_names_its_position(testing):
    with pytest.raises(TypeError) as info:
        testing.echo([1, [2, {3}]])
    message = str(info.value)
    assert "testing.echo" in message and "argument 0: element 1: element 1:" in message
    with pytest.raises(TypeError) as info:
        testing.echo({"key": {4}})
    assert "'key'" in str(info.value)


def test_unconvertible_callback_result_is_reported(testing):
    with pytest.raises(kiln.TypeError) as info:
        testing.call(lambda: {1})
    assert "return value" in info.value.message and "'set'" in info.value.message


def test_keyword_arguments_are_rejected(testing):
    with pytest.raises(TypeError) as info:
        testing.add(1, b=2)
    assert "keyword" in str(info.value)


def test_self_referencing_list_does_not_crash(testing):
    loop = []
    loop.append(loop)
    with pytest.raises(RecursionError):
        testing.echo(loop)


def test_convert_shows_what_kiln_receives():
    assert isinstance(kiln.convert([1, 2]), kiln.Array)
    assert isinstance(kiln.convert({"a": 1}), kiln.Map)
    assert kiln.convert("s") == "s" and kiln.convert(b"b") == b"b"
    assert isinstance(kiln.convert(len), kiln.Function)
    assert kiln.containers.to_builtin(kiln.Map({"k": [1]})) == {"k": [1]}
    assert list(kiln.Array(["x", 2])) == ["x", 2]


def test_uninitialized_object_is_rejected(testing):
    with pytest.raises(ValueError) as info:
        testing.echo(kiln.Object())
    assert "not initialized" in str(info.value)
    with pytest.raises(ValueError) as info:
        kiln.Function()()
    assert "not initialized" in str(info.value)


def test_objects_refuse_pickling(testing):
    with pytest.raises(TypeError) as info:
        pickle.dumps(testing.make_counted())
    assert "pickle" in str(info.value)
    with pytest.raises(TypeError):
        pickle.dumps(testing.make_array(2))


def test_registered_class_is_used_for_results(testing):
    obj_before = testing.make_counted()

    @kiln.register_object("testing.Counted")
    class Counted(kiln.Object):
        def describe(self):
            return f"counted {self.type_key}"

    try:
        obj = testing.make_counted()
        assert type(obj) is Counted
        assert obj.describe() == "counted testing.Counted"
        assert type(testing.echo(obj_before)) is Counted
        assert type(obj_before) is kiln.Object  # wrappers that exist keep their class
    finally:
        kiln.register_object("testing.Counted")(kiln.Object)
    assert type(testing.make_counted()) is kiln.Object


def test_class_for_a_type_not_registered_yet_is_accepted():
    @kiln.register_object("testing.NotRegisteredYet")
    class Later(kiln.Object):
        pass

    assert Later._kiln_type_key == "testing.NotRegisteredYet"
    with pytest.raises(TypeError):
        kiln.register_object("testing.X")(int)


def test_subclass_initialized_by_constructor(testing):
    class Wrapper(kiln.Object):
        def __init__(self):
            self.__init_handle_by_constructor__(testing.make_counted)

    w = Wrapper()
    assert w.type_key == "testing.Counted"
    assert testing.echo(w).same_as(w)
