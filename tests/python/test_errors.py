"""Errors in both directions: Kiln kinds become Python classes and back, with their context."""

import pickle

import pytest

from helpers import run_threads

import kiln

BUILTIN_KINDS = [
    ("TypeError", TypeError),
    ("ValueError", ValueError),
    ("IndexError", IndexError),
    ("KeyError", KeyError),
    ("AttributeError", AttributeError),
    ("RuntimeError", RuntimeError),
    ("NotImplementedError", NotImplementedError),
    ("OverflowError", OverflowError),
    ("MemoryError", MemoryError),
]


@pytest.mark.parametrize("kind,builtin", BUILTIN_KINDS)
def test_kiln_error_kind_raises_matching_class(testing, kind, builtin):
    with pytest.raises(kiln.KilnError) as info:
        testing.raise_error(kind, f"a {kind} from C++")
    exc = info.value
    assert isinstance(exc, builtin)
    assert type(exc) is getattr(kiln, kind)
    assert exc.kind == kind
    assert exc.message == f"a {kind} from C++"
    assert str(exc).startswith(f"a {kind} from C++")


def test_internal_error_is_not_a_usage_error(testing):
    with pytest.raises(kiln.InternalError) as info:
        testing.raise_error("InternalError", "invariant broken")
    assert not isinstance(info.value, (ValueError, TypeError, RuntimeError))
    assert info.value.kind == "InternalError"


def test_unknown_kind_keeps_its_name(testing):
    with pytest.raises(kiln.KilnError) as info:
        testing.raise_error("ShapeError", "rank 3 expected")
    assert type(info.value) is kiln.KilnError
    assert info.value.kind == "ShapeError"
    assert str(info.value) == "rank 3 expected"


def test_registered_error_class_is_raised(testing):
    @kiln.register_error("TestingCustomError")
    class CustomError(kiln.KilnError):
        pass

    with pytest.raises(CustomError) as info:
        testing.raise_error("TestingCustomError", "custom")
    assert info.value.kind == "TestingCustomError"


def test_str_is_message_then_context_lines(testing):
    with pytest.raises(kiln.KeyError) as info:
        testing.map_get({"a": 1}, "missing")
    exc = info.value
    lines = str(exc).split("\n")
    assert lines[0] == exc.message  # not quoted as str(KeyError) would
    assert exc.context and lines[1:] == exc.context.split("\n")
    assert "raised at" in exc.context


def test_wrong_argument_type_message_names_function_index_and_types(testing):
    with pytest.raises(kiln.TypeError) as info:
        testing.add("x", 1)
    message = info.value.message
    assert "testing.add" in message
    assert "#0" in message or "argument 0" in message
    assert "int" in message and "str" in message
    with pytest.raises(kiln.TypeError) as info:
        testing.concat("a", 2)
    assert "testing.concat" in info.value.message and "#1" in info.value.message


def test_wrong_argument_count_is_a_type_error(testing):
    with pytest.raises(kiln.TypeError) as info:
        testing.add(1)
    assert "testing.add" in info.value.message


@pytest.mark.parametrize("kind,builtin", [k for k in BUILTIN_KINDS if k[0] != "MemoryError"])
def test_python_exception_round_trips_through_cpp(testing, kind, builtin):
    def callback():
        raise builtin("from python")

    with pytest.raises(builtin) as info:
        testing.call_with_context(callback)
    exc = info.value
    assert isinstance(exc, kiln.KilnError) and exc.kind == kind
    assert exc.message == "from python"
    assert "while calling the callback from C++" in exc.context
    assert "Python traceback" in exc.context and "in callback" in exc.context
    assert "test_errors.py" in exc.context
    assert "while calling the callback from C++" in str(exc)


def test_context_is_innermost_first(testing):
    def callback():
        testing.map_get({}, "nope")  # raises in C++ inside the Python callback

    with pytest.raises(kiln.KeyError) as info:
        testing.call_with_context(callback)
    context = info.value.context
    raised = context.index("raised at")
    traceback = context.index("Python traceback")
    outer = context.index("while calling the callback from C++")
    assert raised < traceback < outer


def test_other_python_exceptions_become_runtime_errors_named_by_class(testing):
    with pytest.raises(kiln.RuntimeError) as info:
        testing.call(lambda: 1 // 0)
    assert info.value.message == "ZeroDivisionError: integer division or modulo by zero"


def test_subclass_of_builtin_keeps_the_builtin_kind(testing):
    class BadShape(ValueError):
        pass

    def callback():
        raise BadShape("rank")

    with pytest.raises(kiln.ValueError) as info:
        testing.call(callback)
    assert info.value.message == "BadShape: rank"


def test_kiln_error_raised_in_python_keeps_kind_and_context(testing):
    def callback():
        raise kiln.KilnError("custom kind", kind="ShapeError", context="from a pass")

    with pytest.raises(kiln.KilnError) as info:
        testing.call_with_context(callback)
    exc = info.value
    assert exc.kind == "ShapeError" and exc.message == "custom kind"
    assert exc.context.startswith("from a pass\n")


def test_key_error_message_is_not_quoted(testing):
    def callback():
        raise KeyError("missing key")

    with pytest.raises(kiln.KeyError) as info:
        testing.call(callback)
    assert info.value.message == "missing key"


def test_errors_on_several_threads_stay_on_their_thread(testing):
    failures = []

    def worker(n):
        def callback():
            raise ValueError(f"thread {n}")

        try:
            for _ in range(200):
                try:
                    testing.call(callback)
                except kiln.ValueError as exc:
                    if exc.message != f"thread {n}":
                        failures.append(exc.message)
                else:
                    failures.append("no error")
        except BaseException as exc:  # pragma: no cover - reported below
            failures.append(repr(exc))

    run_threads(worker, 6)
    assert failures == []


def test_process_keeps_working_after_errors(testing):
    for kind, _ in BUILTIN_KINDS:
        with pytest.raises(kiln.KilnError):
            testing.raise_error(kind, "x")
    assert testing.add(2, 3) == 5


def test_errors_pickle_with_kind_and_context():
    exc = kiln.ValueError("bad", "ValueError", "line 1\nline 2")
    back = pickle.loads(pickle.dumps(exc))
    assert type(back) is kiln.ValueError
    assert (back.kind, back.message, back.context) == ("ValueError", "bad", "line 1\nline 2")


def test_error_classes_inherit_builtins():
    for kind, builtin in BUILTIN_KINDS:
        cls = getattr(kiln, kind)
        assert issubclass(cls, kiln.KilnError) and issubclass(cls, builtin)
        assert cls.__module__ == "kiln"
    assert issubclass(kiln.UnknownFunctionError, KeyError)
