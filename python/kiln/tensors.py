"""kiln.Tensor and the ways to make one: ``kiln.tensor(x)``, ``kiln.empty(shape)``.

A kiln.Tensor is a Kiln Tensor object (a DLPack DLTensor). It shares memory with numpy, PyTorch
and any other DLPack producer or consumer:

- ``kiln.tensor(numpy_array)`` takes the array's memory over ``__dlpack__`` (no copy); writing
  through the array is seen through the tensor and the reverse. Strided (non-contiguous) arrays
  are shared as they are, with their strides.
- ``tensor.numpy()`` is a writeable numpy view of a CPU tensor (no copy); ``numpy.from_dlpack``
  works too (numpy makes that view read-only). Tensors on other devices are copied to the CPU.

numpy is needed only for what involves numpy (lists, ``.numpy()``); it is imported lazily.
"""

import operator
import sys

from ._lib import _ffi, core_func
from .containers import Shape
from .devices import as_device, cpu
from .dtype import DataType
from .object import Object, register_object

__all__ = ["Tensor", "tensor", "empty"]

# DLPack device types whose memory the CPU reads directly (cpu, cuda_host, rocm_host).
_HOST_DEVICE_TYPES = (1, 3, 11)

# DLPack type code -> numpy kind letter, for dtypes numpy has.
_NUMPY_KINDS = {0: "i", 1: "u", 2: "f", 5: "c"}


def _numpy():
    try:
        import numpy
    except ImportError as exc:
        raise ImportError(f"this kiln.Tensor operation needs numpy: {exc}") from exc
    return numpy


def _numpy_typestr(dtype):
    """The numpy array-interface type string of a DataType ("<f4"); TypeError if none."""
    if dtype == "bool":
        return "|b1"
    code, bits, lanes = _ffi.parse_dtype(dtype)
    if lanes != 1 or code not in _NUMPY_KINDS or bits not in (8, 16, 32, 64, 128):
        raise TypeError(f"numpy has no data type for the Kiln data type {str(dtype)!r}")
    order = "|" if bits == 8 else ("<" if sys.byteorder == "little" else ">")
    return f"{order}{_NUMPY_KINDS[code]}{bits // 8}"


class _ArrayView:
    """What numpy.asarray reads to view a tensor's memory; the array keeps it (and so the
    tensor) alive as its ``base``."""

    __slots__ = ("__array_interface__", "tensor")

    def __init__(self, tensor, interface):
        self.tensor = tensor
        self.__array_interface__ = interface


@register_object("kiln.Tensor")
class Tensor(Object):
    """An n-dimensional array on a device. Make one with kiln.tensor() or kiln.empty()."""

    __slots__ = ()

    @property
    def shape(self):
        """Extents, as a tuple of ints."""
        return _ffi.tensor_fields(self)[0]

    @property
    def strides(self):
        """Strides in elements, or None for a compact row-major tensor."""
        return _ffi.tensor_fields(self)[1]

    @property
    def dtype(self):
        """Element type, a kiln.DataType (a str: "float32")."""
        return _ffi.tensor_fields(self)[2]

    @property
    def device(self):
        """The kiln.Device the memory is on."""
        return _ffi.tensor_fields(self)[3]

    @property
    def ndim(self):
        """Number of dimensions."""
        return len(self.shape)

    @property
    def size(self):
        """Number of elements."""
        count = 1
        for extent in self.shape:
            count *= extent
        return count

    @property
    def data_ptr(self):
        """Address of the first element (data + byte_offset)."""
        fields = _ffi.tensor_fields(self)
        return fields[4] + fields[5]

    @property
    def is_contiguous(self):
        """True when the elements are row-major without gaps."""
        shape, strides = _ffi.tensor_fields(self)[:2]
        if strides is None:
            return True
        expected = 1
        for extent, stride in zip(reversed(shape), reversed(strides)):
            if extent != 1 and stride != expected:
                return False
            expected *= extent
        return True

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        """A DLPack 0.6 capsule ("dltensor") sharing this tensor's memory; it keeps the tensor
        alive until the consumer releases it.

        ``stream`` is the consumer's. Unless it is -1 (the consumer orders the work itself), a
        tensor on an accelerator is synchronized first: Kiln's copies and kernels there are
        asynchronous, and the consumer may read on a stream that does not wait for Kiln's (on
        the host, Kiln's copies are complete when they return). The newer protocol's keywords
        are understood too: ``max_version`` is ignored (the capsule is the unversioned kind,
        which consumers must accept), ``dl_device`` must be this tensor's device, ``copy=True``
        exports a copy.
        """
        if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
            raise BufferError(f"kiln.Tensor on {self.device} cannot be exported to device "
                              f"{tuple(dl_device)} without a copy; use copyto() first")
        source = self.copyto(self.device) if copy else self
        if stream != -1 and self.device.device_type not in _HOST_DEVICE_TYPES:
            self.device.synchronize()
        return _ffi.tensor_to_dlpack(source)

    def __dlpack_device__(self):
        """(DLPack device type, device index)."""
        dev = self.device
        return (dev.device_type, dev.device_id)

    def numpy(self):
        """A numpy array of the elements: a writeable view sharing memory for a CPU tensor, a
        copy for a tensor on another device."""
        numpy = _numpy()
        shape, strides, dtype, dev, data, offset = _ffi.tensor_fields(self)
        if dev.device_type not in _HOST_DEVICE_TYPES:
            return self.copyto(cpu()).numpy()
        typestr = _numpy_typestr(dtype)
        if any(extent == 0 for extent in shape):
            return numpy.empty(shape, dtype=typestr)
        itemsize = DataType(dtype).itemsize
        interface = {
            "version": 3,
            "shape": shape,
            "typestr": typestr,
            "data": (data + offset, False),
            "strides": None if strides is None else tuple(s * itemsize for s in strides),
        }
        return numpy.asarray(_ArrayView(self, interface))

    def view(self, dtype):
        """This tensor's memory read as ``dtype``, whose elements have the same size (as
        numpy's ``ndarray.view``): a bfloat16 tensor as its uint16 bit patterns, say, which
        numpy can hold. ValueError for a dtype of another element size."""
        return _ffi.tensor_from_dlpack(_ffi.tensor_to_dlpack(self), DataType(dtype))

    def __array__(self, dtype=None, copy=None):
        array = self.numpy()
        if dtype is not None:
            array = array.astype(dtype, copy=False)
        return array.copy() if copy else array

    def copyto(self, target):
        """A copy of this tensor on ``target`` (a Device or a name such as "cuda:0"); or, when
        ``target`` is a Tensor of the same shape and dtype, copies the elements into it and
        returns it. A strided tensor is made compact first (on the host only)."""
        source = self._compact()
        if isinstance(target, Tensor):
            core_func("runtime.CopyTensor")(source, target)
            return target
        result = empty(self.shape, self.dtype, as_device(target))
        core_func("runtime.CopyTensor")(source, result)
        return result

    def _compact(self):
        if self.is_contiguous:
            return self
        if self.device.device_type not in _HOST_DEVICE_TYPES:
            raise ValueError(
                f"cannot copy a strided tensor on {self.device}: Kiln copies compact tensors "
                "only; make it compact on its device first"
            )
        return tensor(_numpy().ascontiguousarray(self.numpy()))

    def __repr__(self):
        if not self._handle:
            return "<kiln.Tensor (uninitialized)>"
        return f"kiln.Tensor(shape={self.shape}, dtype={str(self.dtype)!r}, device={self.device!r})"


Tensor.__module__ = "kiln"


def _from_dlpack_producer(data):
    numpy = sys.modules.get("numpy")
    dtype = None
    if numpy is not None and isinstance(data, numpy.ndarray) and data.dtype == numpy.bool_:
        # DLPack 0.6 has no bool and numpy refuses to export it: share it as uint8, read as bool.
        data, dtype = data.view(numpy.uint8), "bool"
    try:
        capsule = data.__dlpack__()
    except BufferError as exc:
        raise BufferError(
            f"kiln.tensor: a {type(data).__module__}.{type(data).__name__} cannot share its "
            f"memory through DLPack: {exc}"
            + (" (pass a writeable copy)" if "readonly" in str(exc) else "")
        ) from exc
    return _ffi.tensor_from_dlpack(capsule, dtype)


def tensor(data, device=None):
    """A kiln.Tensor holding ``data``, on ``device`` (default: where ``data`` is).

    ``data`` is a kiln.Tensor (returned as is when already on ``device``), an object with
    ``__dlpack__`` (numpy arrays, torch tensors: shared, not copied), or anything
    ``numpy.asarray`` takes (lists, scalars: copied once into a new array). When ``device``
    differs from where the data is, the result is a copy on ``device``.
    """
    target = None if device is None else as_device(device)
    if isinstance(data, Tensor):
        result = data
    elif hasattr(type(data), "__dlpack__"):
        result = _from_dlpack_producer(data)
    else:
        result = _from_dlpack_producer(_numpy().asarray(data))
    if target is not None and result.device != target:
        result = result.copyto(target)
    return result


def empty(shape, dtype="float32", device=None):
    """An uninitialized compact tensor of ``shape`` (an int or a sequence of ints) and ``dtype``
    on ``device`` (default: the CPU), from the device's caching allocator."""
    try:
        dims = (operator.index(shape),)
    except TypeError:
        dims = tuple(shape)
    dev = cpu() if device is None else as_device(device)
    return core_func("runtime.Empty")(Shape(dims), DataType(dtype), dev)


def _to_kiln_value(value):
    """Hook of kiln._ffi for arguments no built-in rule converts: DLPack producers (numpy
    arrays, torch tensors) become Tensors sharing their memory, numpy and torch dtypes become
    DataTypes. None means "not convertible"."""
    cls = type(value)
    if hasattr(cls, "__dlpack__"):
        return tensor(value)
    module = cls.__module__
    if module == "torch" and cls.__name__ == "dtype":
        return DataType(value)
    numpy = sys.modules.get("numpy")
    if numpy is not None and isinstance(value, numpy.dtype):
        return DataType(value)
    return None


_ffi.set_value_converter(_to_kiln_value)
