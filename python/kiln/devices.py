"""kiln.Device: a device kind and index, e.g. ``kiln.device("cuda", 0)``.

Devices are plain values (a DLPack DLDevice); asking whether one exists, or for its name or
memory, goes to the runtime (``runtime.DeviceExists``, ``runtime.DeviceAttr``), which loads
the backend that serves the kind on first need. A device whose backend or driver is missing
does not exist: ``kiln.cuda(0).exist`` is False on a machine without CUDA, never an error.
"""

from ._lib import _ffi, core_func

__all__ = ["Device", "device", "cpu", "cuda", "opencl", "as_device"]

# KilnDeviceAttr (include/kiln/runtime/c_device_api.h)
_ATTR_NAME = 1
_ATTR_TOTAL_MEMORY = 2
_ATTR_COMPUTE_VERSION = 3
_ATTR_MAX_THREADS_PER_BLOCK = 4
_ATTR_MULTI_PROCESSOR_COUNT = 5
_ATTR_DRIVER_VERSION = 6
_ATTR_DEVICE_COUNT = 7

_TYPE_NAMES = {}  # device type -> name; names are fixed by DLPack, so caching them is safe


def _type_name(device_type):
    name = _TYPE_NAMES.get(device_type)
    if name is None:
        name = core_func("runtime.DeviceTypeName")(device_type)
        _TYPE_NAMES[device_type] = name
    return name


def _attr(dev, attr):
    return core_func("runtime.DeviceAttr")(dev, attr)


class Device(_ffi.Device):
    """A device: ``Device("cuda", 0)``, ``Device("cuda:1")`` or ``Device(2, 0)`` (DLPack type).

    ``device_type``/``device_id`` are DLPack's numbers, ``type``/``index`` the same as a name and
    an index. The other properties ask the device's backend and are None when it does not know;
    ``exist`` is False (never an error) when no backend or driver serves the device.
    """

    __slots__ = ()

    def __new__(cls, device_type, index=None):
        if isinstance(device_type, str):
            name, colon, suffix = device_type.partition(":")
            if colon:
                if index is not None:
                    raise ValueError(f"device {device_type!r} already names an index; "
                                     f"do not pass index={index!r} too")
                try:
                    index = int(suffix)
                except ValueError:
                    raise ValueError(f"bad device {device_type!r}: expected 'kind:index', "
                                     "such as 'cuda:0'") from None
            device_type = core_func("runtime.DeviceTypeFromName")(name)
        return super().__new__(cls, device_type, 0 if index is None else index)

    @property
    def type(self):
        """The device kind's name: "cpu", "cuda", "opencl", ..."""
        return _type_name(self.device_type)

    @property
    def index(self):
        """The device's index among those of its kind (same as device_id)."""
        return self.device_id

    @property
    def exist(self):
        """True when the device can be used; False when its backend, driver or device is missing."""
        return core_func("runtime.DeviceExists")(self)

    @property
    def name(self):
        """The device's name ("NVIDIA H100 80GB HBM3", the CPU model), or None."""
        return _attr(self, _ATTR_NAME)

    @property
    def total_memory(self):
        """Bytes of memory, or None."""
        return _attr(self, _ATTR_TOTAL_MEMORY)

    @property
    def compute_version(self):
        """"9.0" for CUDA, "OpenCL 3.0 ..." for OpenCL, or None."""
        return _attr(self, _ATTR_COMPUTE_VERSION)

    @property
    def max_threads_per_block(self):
        """Most threads (work items) in one block (work group), or None."""
        return _attr(self, _ATTR_MAX_THREADS_PER_BLOCK)

    @property
    def multi_processor_count(self):
        """Streaming multiprocessors, compute units or cores, or None."""
        return _attr(self, _ATTR_MULTI_PROCESSOR_COUNT)

    @property
    def driver_version(self):
        """The driver's version, or None."""
        return _attr(self, _ATTR_DRIVER_VERSION)

    @property
    def device_count(self):
        """How many devices of this kind there are (0 without a backend)."""
        count = _attr(self, _ATTR_DEVICE_COUNT)
        return 0 if count is None else count

    def synchronize(self):
        """Waits until the copies and kernels Kiln queued on this device are done (asynchronous
        on CUDA), and raises an error of that work, e.g. a kernel's bad memory access."""
        core_func("runtime.DeviceSync")(self)

    def __repr__(self):
        return f"device(type={self.type!r}, index={self.device_id})"

    def __str__(self):
        return f"{self.type}:{self.device_id}"


def device(device_type, index=None):
    """``kiln.device("cuda", 0)``, ``kiln.device("cuda:0")``, ``kiln.device(2, 0)``."""
    return Device(device_type, index)


def cpu(index=0):
    """The CPU device (Kiln treats the host as one device, index 0)."""
    return Device(1, index)


def cuda(index=0):
    """CUDA device ``index``."""
    return Device(2, index)


def opencl(index=0):
    """OpenCL device ``index``."""
    return Device(4, index)


def as_device(value):
    """``value`` (a Device, "cuda:0", "cpu" or a (device_type, index) pair) as a Device."""
    if isinstance(value, Device):
        return value
    if isinstance(value, _ffi.Device):
        return Device(value.device_type, value.device_id)
    if isinstance(value, str):
        return Device(value)
    if isinstance(value, tuple) and len(value) == 2:
        return Device(*value)
    raise TypeError(f"expected a kiln.Device or a name such as 'cuda:0', got {value!r}")


Device.__module__ = "kiln"
_ffi.set_device_class(Device)
