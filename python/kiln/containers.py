"""kiln.Array, kiln.Map and kiln.Shape: Python views of Kiln's container objects."""

import collections.abc
import operator

from ._lib import _ffi, core_func as _core_func
from .object import Object, register_object


@register_object(_ffi.TYPE_ARRAY)
class Array(Object, collections.abc.Sequence):
    """An immutable sequence of Kiln values, read item by item from the Kiln Array.

    ``kiln.Array([1, "a"])`` builds one; ``==`` compares identity (use ``list(a) == [...]``).
    """

    __slots__ = ()

    def __init__(self, items=()):
        self._move_handle_from(_ffi.convert(list(items)))

    def __len__(self):
        return _ffi.array_size(self)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return _ffi.array_to_list(self)[index]
        size = _ffi.array_size(self)
        i = operator.index(index)
        if i < 0:
            i += size
        if not 0 <= i < size:
            raise IndexError(f"kiln.Array index {index} out of range for size {size}")
        return _ffi.array_getitem(self, i)

    def __iter__(self):
        return iter(_ffi.array_to_list(self))

    def __repr__(self):
        return f"kiln.Array({_ffi.array_to_list(self)!r})"


@register_object(_ffi.TYPE_MAP)
class Map(Object, collections.abc.Mapping):
    """An immutable mapping of Kiln values, read through ffi.MapSize/MapGetItem/MapItems.

    ``kiln.Map({"a": 1})`` builds one; ``==`` compares identity (use ``dict(m) == {...}``).
    """

    __slots__ = ()

    def __init__(self, items=None):
        self._move_handle_from(_ffi.convert(dict(items or {})))

    def __len__(self):
        return _core_func("ffi.MapSize")(self)

    def __getitem__(self, key):
        return _core_func("ffi.MapGetItem")(self, key)

    def __contains__(self, key):
        try:
            self[key]
        except KeyError:
            return False
        return True

    def _flat_items(self):
        return _ffi.array_to_list(_core_func("ffi.MapItems")(self))

    def __iter__(self):
        return iter(self._flat_items()[0::2])

    def items(self):
        flat = self._flat_items()
        return list(zip(flat[0::2], flat[1::2]))

    def values(self):
        return self._flat_items()[1::2]

    def __repr__(self):
        return f"kiln.Map({dict(self.items())!r})"


@register_object(_ffi.TYPE_SHAPE)
class Shape(Object, collections.abc.Sequence):
    """An immutable tuple of int64 extents; equal to a tuple or list with the same items."""

    __slots__ = ()

    def __init__(self, dims=()):
        self._move_handle_from(_ffi.make_shape(dims))

    def __len__(self):
        return len(_ffi.shape_to_tuple(self))

    def __getitem__(self, index):
        return _ffi.shape_to_tuple(self)[index]

    def __iter__(self):
        return iter(_ffi.shape_to_tuple(self))

    def __eq__(self, other):
        if isinstance(other, (Shape, tuple, list)):
            return _ffi.shape_to_tuple(self) == tuple(other)
        return NotImplemented

    def __ne__(self, other):
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def __hash__(self):
        return hash(_ffi.shape_to_tuple(self))

    def __repr__(self):
        return f"kiln.Shape({_ffi.shape_to_tuple(self)!r})"


def to_builtin(value):
    """``value`` with every kiln.Map, kiln.Array and kiln.Shape in it made a dict, list, tuple."""
    if isinstance(value, Map):
        return {to_builtin(k): to_builtin(v) for k, v in value.items()}
    if isinstance(value, Array):
        return [to_builtin(v) for v in value]
    if isinstance(value, Shape):
        return tuple(value)
    return value
