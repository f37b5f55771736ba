"""kiln.DataType: the element type of a tensor, a str such as "float32" that Kiln reads as a
DLPack DLDataType.

A DataType is a ``str`` (``kiln.DataType("float32") == "float32"``), but only a DataType is
passed to Kiln as a data type: a plain str stays a string. DataType values that Kiln returns
(``Tensor.dtype``) are DataTypes.
"""

from ._lib import _ffi

__all__ = ["DataType", "as_dtype"]


def _numpy():
    try:
        import numpy
    except ImportError:
        return None
    return numpy


def _name_of(value):
    """The Kiln name of a str, numpy dtype or scalar type, or torch dtype; None if none."""
    if isinstance(value, str):
        try:
            _ffi.parse_dtype(value)
            return value
        except ValueError:
            pass  # maybe a numpy spelling: "f4", "<i8", "double"
    elif type(value).__module__ == "torch":  # torch.float32 -> "float32", without importing torch
        return str(value).rpartition(".")[2]
    numpy = _numpy()
    if numpy is None or value is None:  # numpy.dtype(None) would be float64
        return None
    try:
        return numpy.dtype(value).name
    except (TypeError, ValueError):
        return None


class DataType(str):
    """A Kiln data type: "float32", "int64", "uint8", "bool", "float16", "bfloat16",
    "float32x4" (4 lanes), ...

    ``DataType(x)`` accepts such a name, a numpy dtype or scalar type (``numpy.float32``), a
    numpy spelling ("f4", "double") or a torch dtype, and raises ValueError for anything else.
    """

    __slots__ = ()

    def __new__(cls, value):
        if type(value) is cls:
            return value
        name = _name_of(value)
        try:
            fields = _ffi.parse_dtype(name) if name is not None else None
        except ValueError:
            fields = None
        if fields is None:
            raise ValueError(
                f"{value!r} is not a data type Kiln knows; use a name such as 'float32', "
                "'int64', 'uint8', 'bool', 'float16', or a numpy dtype"
            )
        return str.__new__(cls, _ffi.format_dtype(*fields))

    @property
    def code(self):
        """DLPack type code: 0 int, 1 uint (bool is uint of 1 bit), 2 float, 4 bfloat, ..."""
        return _ffi.parse_dtype(self)[0]

    @property
    def bits(self):
        """Bits of one lane (1 for bool)."""
        return _ffi.parse_dtype(self)[1]

    @property
    def lanes(self):
        """Lanes of a vector type (1 for scalars)."""
        return _ffi.parse_dtype(self)[2]

    @property
    def itemsize(self):
        """Bytes one element takes in memory (a bool takes a byte)."""
        _, bits, lanes = _ffi.parse_dtype(self)
        return (bits * lanes + 7) // 8

    def __reduce__(self):
        return (DataType, (str(self),))


def as_dtype(value):
    """``value`` as a DataType (see DataType for what is accepted)."""
    return DataType(value)


DataType.__module__ = "kiln"
_ffi.set_dtype_class(DataType)
