"""Kiln errors as Python exceptions, in both directions.

Kiln -> Python: a failing Kiln call raises the class registered for the error's kind:
``kiln.ValueError`` for "ValueError" (a subclass of both ``kiln.KilnError`` and the builtin
``ValueError``), ``kiln.InternalError`` for "InternalError", plain ``kiln.KilnError`` (kind kept
in ``.kind``) for a kind nobody registered.

Python -> Kiln: when a Python callback called from Kiln raises, the error that crosses back has
  kind    = the exception's ``.kind`` for a KilnError, else the first builtin class in its MRO
            among TypeError, ValueError, IndexError, KeyError, AttributeError, RuntimeError,
            NotImplementedError, OverflowError, MemoryError, FileNotFoundError; anything else is "RuntimeError";
  message = str(exc), prefixed with the class name when that differs from the kind
            ("ZeroDivisionError: division by zero");
  context = the KilnError's own context, then the formatted Python traceback.
"""

import builtins
import traceback

from ._lib import _ffi
from .object import Object, register_object

_CLASS_BY_KIND = {}

_BUILTIN_KINDS = (
    "TypeError",
    "ValueError",
    "IndexError",
    "KeyError",
    "AttributeError",
    "RuntimeError",
    "NotImplementedError",
    "OverflowError",
    "MemoryError",
    "FileNotFoundError",
)


def register_error(kind, cls=None):
    """Raise ``cls`` for Kiln errors of ``kind``; usable as ``@register_error("ShapeError")``."""

    def register(cls):
        if not (isinstance(cls, type) and issubclass(cls, KilnError)):
            raise builtins.TypeError(f"{cls!r} is not a subclass of kiln.KilnError")
        _CLASS_BY_KIND[kind] = cls
        return cls

    return register(cls) if cls is not None else register


class KilnError(Exception):
    """An error raised by Kiln, or raised in Python and carried through Kiln.

    ``kind`` names the error ("ValueError", "InternalError", ...), ``message`` says what is wrong,
    ``context`` lists the frames it passed through, innermost first, one per line (may be "").
    ``str(exc)`` is the message followed by the context lines.
    """

    kind = "RuntimeError"

    def __init__(self, message="", kind=None, context=""):
        super().__init__(message)
        self.message = str(message)
        if kind is not None:
            self.kind = kind
        self.context = context or ""

    def __str__(self):
        return f"{self.message}\n{self.context}" if self.context else self.message

    def __reduce__(self):
        return (type(self), (self.message, self.kind, self.context))


@register_error("TypeError")
class TypeError(KilnError, builtins.TypeError):
    """A value of the wrong type was passed to Kiln."""

    kind = "TypeError"


@register_error("ValueError")
class ValueError(KilnError, builtins.ValueError):
    """A value of the right type but a wrong value was passed to Kiln."""

    kind = "ValueError"


@register_error("IndexError")
class IndexError(KilnError, builtins.IndexError):
    """An index out of range."""

    kind = "IndexError"


@register_error("KeyError")
class KeyError(KilnError, builtins.KeyError):
    """A missing key or name, or a name registered twice."""

    kind = "KeyError"


@register_error("AttributeError")
class AttributeError(KilnError, builtins.AttributeError):
    """A missing attribute."""

    kind = "AttributeError"


@register_error("RuntimeError")
class RuntimeError(KilnError, builtins.RuntimeError):
    """An error that fits no more precise kind."""

    kind = "RuntimeError"


@register_error("NotImplementedError")
class NotImplementedError(KilnError, builtins.NotImplementedError):
    """A feature Kiln does not implement (yet)."""

    kind = "NotImplementedError"


@register_error("OverflowError")
class OverflowError(KilnError, builtins.OverflowError):
    """A number that does not fit."""

    kind = "OverflowError"


@register_error("MemoryError")
class MemoryError(KilnError, builtins.MemoryError):
    """An allocation failed."""

    kind = "MemoryError"


@register_error("FileNotFoundError")
class FileNotFoundError(KilnError, builtins.FileNotFoundError):
    """A file Kiln looked for (a plugin, a model) is not where it looked."""

    kind = "FileNotFoundError"


@register_error("InternalError")
class InternalError(KilnError):
    """A broken invariant inside Kiln: a bug to report, not a usage error."""

    kind = "InternalError"


class UnknownFunctionError(KeyError):
    """get_global_func() of a name that is not registered; the message suggests close names."""


@register_object(_ffi.TYPE_ERROR)
class Error(Object):
    """A Kiln Error object held as a value (returned, passed, stored) rather than raised."""

    __slots__ = ()

    def __init__(self, kind, message, context=""):
        self._move_handle_from(_ffi.make_error(kind, message, context))

    kind = property(lambda self: _ffi.error_fields(self)[0], doc="The error kind.")
    message = property(lambda self: _ffi.error_fields(self)[1], doc="The error message.")
    context = property(lambda self: _ffi.error_fields(self)[2], doc="Context lines.")

    def to_exception(self):
        """The exception ``raise`` would use for this error."""
        return make_exception(*_ffi.error_fields(self))

    def __repr__(self):
        kind, message, _ = _ffi.error_fields(self)
        return f"kiln.Error({kind!r}, {message!r})"


def make_exception(kind, message, context=""):
    """The exception instance for a Kiln error of ``kind``."""
    return _CLASS_BY_KIND.get(kind, KilnError)(message, kind, context)


def _kind_of(cls):
    for base in cls.__mro__:
        if base.__module__ == "builtins" and base.__name__ in _BUILTIN_KINDS:
            return base.__name__
    return "RuntimeError"


def exception_to_error(exc):
    """(kind, message, context) of a Python exception leaving a callback called from Kiln."""
    if isinstance(exc, KilnError):
        kind, message, context = exc.kind, exc.message, exc.context
    else:
        kind, context = _kind_of(type(exc)), ""
        if isinstance(exc, builtins.KeyError) and len(exc.args) == 1:
            text = str(exc.args[0])  # str(KeyError) would quote it
        else:
            text = str(exc)
        name = type(exc).__name__
        message = text if name == kind else (f"{name}: {text}" if text else name)
    frames = "".join(traceback.format_tb(exc.__traceback__)).rstrip("\n")
    python_context = f"Python traceback (most recent call last):\n{frames}" if frames else ""
    context = "\n".join(part for part in (context, python_context) if part)
    return kind, message, context


for _cls in list(_CLASS_BY_KIND.values()) + [KilnError, UnknownFunctionError, Error]:
    _cls.__module__ = "kiln"

_ffi.set_error_factory(make_exception)
_ffi.set_exception_converter(exception_to_error)
