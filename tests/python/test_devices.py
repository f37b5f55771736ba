"""kiln.Device and kiln.DataType: construction, conversion both ways, device queries."""

import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

import kiln


def backend_status(name):
    """Status of the runtime backend `name` in kiln.runtime.backends(), or None if not found."""
    for entry in kiln.runtime.backends():
        if entry["name"] == name:
            return entry["status"]
    return None


# ---- Device values ----

def test_device_spellings_are_equal():
    expected = kiln.Device(2, 0)
    for dev in (kiln.device("cuda", 0), kiln.device("cuda"), kiln.device("cuda:0"), kiln.cuda(),
                kiln.Device("cuda", 0), kiln.device(2, 0)):
        assert dev == expected and hash(dev) == hash(expected)
        assert type(dev) is kiln.Device
    assert kiln.cuda(1) != kiln.cuda(0) and kiln.opencl(0) != kiln.cuda(0)
    assert kiln.cpu() != (1, 0)  # a Device is not a tuple
    assert len({kiln.cpu(), kiln.cpu(0), kiln.cuda(0)}) == 2


def test_device_fields_repr_and_str():
    dev = kiln.device("cuda", 1)
    assert (dev.device_type, dev.device_id) == (2, 1)
    assert (dev.type, dev.index) == ("cuda", 1)
    assert repr(dev) == "device(type='cuda', index=1)"
    assert str(dev) == "cuda:1"
    assert repr(kiln.opencl(0)) == "device(type='opencl', index=0)"
    assert repr(kiln.cpu()) == "device(type='cpu', index=0)"
    with pytest.raises(AttributeError):
        dev.device_id = 3  # immutable


def test_bad_devices_are_clear_errors():
    with pytest.raises(kiln.ValueError) as info:
        kiln.device("tpu", 0)
    assert "'tpu'" in str(info.value) and "cuda" in str(info.value)
    with pytest.raises(ValueError):
        kiln.device("cuda:x")
    with pytest.raises(ValueError):
        kiln.device("cuda:1", 2)
    with pytest.raises(ValueError):
        kiln.Device(2, -1)


def test_devices_pickle():
    dev = kiln.opencl(3)
    back = pickle.loads(pickle.dumps(dev))
    assert back == dev and type(back) is kiln.Device


def test_devices_round_trip_through_cpp(testing):
    for dev in (kiln.cpu(), kiln.cuda(3), kiln.opencl(1)):
        back = testing.echo(dev)
        assert type(back) is kiln.Device and back == dev
    assert kiln.convert(kiln.cuda(2)) == kiln.cuda(2)


# ---- device queries ----

def test_cpu_exists_and_describes_itself():
    cpu = kiln.cpu()
    assert cpu.exist is True
    assert isinstance(cpu.name, str) and cpu.name
    assert cpu.total_memory > 0
    assert cpu.device_count == 1
    assert kiln.cpu(1).exist is False


def test_cuda_exists_only_with_a_loaded_backend():
    dev = kiln.device("cuda", 0)
    exist = dev.exist
    assert isinstance(exist, bool)
    if exist:
        assert backend_status("cuda") == "loaded"
        assert dev.device_count >= 1 and isinstance(dev.name, str)
    elif backend_status("cuda") != "loaded":
        assert dev.name is None and dev.device_count == 0
    assert kiln.cuda(10_000).exist is False


def test_opencl_existence_matches_the_backends():
    dev = kiln.opencl(0)
    if dev.exist:
        assert backend_status("opencl") == "loaded"
        assert isinstance(dev.name, str) and dev.device_count >= 1
        assert isinstance(dev.compute_version, str)
    elif backend_status("opencl") != "loaded":
        assert dev.name is None and dev.device_count == 0
    assert kiln.opencl(10_000).exist is False


def test_synchronize_waits_for_the_device():
    assert kiln.cpu().synchronize() is None  # the CPU's copies are synchronous
    if kiln.cuda(0).exist:
        kiln.cuda(0).synchronize()
    with pytest.raises(kiln.KilnError):
        kiln.Device(99, 0).synchronize()  # no backend serves it


def test_unknown_device_types_do_not_exist():
    dev = kiln.Device(99, 0)
    assert dev.exist is False
    assert dev.type == "unknown"


def test_cuda_exist_is_false_in_a_fresh_process_without_a_gpu():
    has_gpu = os.path.exists("/dev/nvidiactl")
    result = subprocess.run(
        [sys.executable, "-c", "import kiln; print(kiln.device('cuda', 0).exist)"],
        capture_output=True, text=True, timeout=120, env=dict(os.environ))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() in ("True", "False")
    if not has_gpu:
        assert result.stdout.strip() == "False"
    assert "Traceback" not in result.stderr


# ---- DataType ----

@pytest.mark.parametrize("spelling,name", [
    ("float32", "float32"), ("int64", "int64"), ("bool", "bool"), ("float16", "float16"),
    ("uint8", "uint8"), ("bfloat16", "bfloat16"), ("float32x4", "float32x4"),
    ("handle", "handle64"), ("f4", "float32"), ("double", "float64"), ("i8", "int64"),
    ("float", "float64"),  # numpy's spellings follow numpy
    (np.float32, "float32"), (np.dtype("int16"), "int16"), (np.bool_, "bool"), (bool, "bool"),
    (float, "float64"), (np.complex64, "complex64"),
])
def test_data_type_spellings(spelling, name):
    dtype = kiln.DataType(spelling)
    assert type(dtype) is kiln.DataType and dtype == name and isinstance(dtype, str)
    assert kiln.DataType(dtype) is dtype


def test_data_type_fields():
    dtype = kiln.DataType("float16x4")
    assert (dtype.code, dtype.bits, dtype.lanes, dtype.itemsize) == (2, 16, 4, 8)
    boolean = kiln.DataType("bool")
    assert (boolean.code, boolean.bits, boolean.lanes, boolean.itemsize) == (1, 1, 1, 1)
    assert pickle.loads(pickle.dumps(dtype)) == dtype


@pytest.mark.parametrize("bad", ["floaty", "float0", "int256", "float32x", "", None, 3,
                                 np.dtype("O"), "datetime64"])
def test_bad_data_types_are_value_errors(bad):
    with pytest.raises(ValueError) as info:
        kiln.DataType(bad)
    assert "data type" in str(info.value)


def test_data_types_round_trip_through_cpp(testing):
    for name in ("float32", "int8", "bool", "bfloat16", "float16x4", "uint64"):
        back = testing.echo(kiln.DataType(name))
        assert type(back) is kiln.DataType and back == name
    assert type(testing.echo("float32")) is str  # a plain str stays a string
    converted = kiln.convert(np.dtype("float64"))
    assert type(converted) is kiln.DataType and converted == "float64"
