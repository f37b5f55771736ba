"""kiln.Tensor: DLPack in both directions without copies, dtypes, strides, ownership."""

import gc
import sys

import numpy as np
import pytest

from helpers import traced_growth

import kiln

DTYPES = ["float32", "float64", "int32", "int64", "uint8", "bool", "int8", "int16", "float16",
          "complex64"]


def sample(dtype, shape=(2, 3)):
    values = np.arange(int(np.prod(shape))).reshape(shape)
    return (values % 2 == 1) if dtype == "bool" else values.astype(dtype)


def in_use():
    gc.collect()  # tensors kept by garbage cycles (tracebacks of earlier tests) go first
    return kiln.runtime.allocator_stats()["bytes_in_use"]


class Producer:
    """A DLPack producer that is not numpy: hands out the capsule it was given."""

    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, stream=None):
        return self.capsule

    def __dlpack_device__(self):
        return (1, 0)


# ---- zero copy, both ways ----

def test_numpy_to_kiln_shares_memory_both_ways():
    array = np.zeros((3, 4), dtype=np.float32)
    t = kiln.tensor(array)
    assert t.shape == (3, 4) and t.dtype == "float32" and t.device == kiln.cpu(0)
    assert t.ndim == 2 and t.size == 12
    assert t.data_ptr == array.ctypes.data
    view = t.numpy()
    assert np.shares_memory(view, array)
    array[1, 2] = 7.0  # write through numpy, read through kiln
    assert view[1, 2] == 7.0
    view[0, 0] = -1.0  # write through kiln's view, read through numpy
    assert array[0, 0] == -1.0


def test_kiln_to_numpy_shares_memory_and_keeps_the_tensor_alive():
    t = kiln.empty((4,), "int64")
    view = t.numpy()
    assert view.flags.writeable and view.dtype == np.int64
    view[:] = [1, 2, 3, 4]
    again = t.numpy()
    assert np.shares_memory(view, again) and list(again) == [1, 2, 3, 4]
    address = t.data_ptr
    del t, again
    gc.collect()
    assert view.ctypes.data == address and list(view) == [1, 2, 3, 4]  # still valid memory


def test_numpy_from_dlpack_reads_a_kiln_tensor():
    t = kiln.tensor(np.arange(5, dtype=np.float64))
    array = np.from_dlpack(t)  # numpy's own consumer (a read-only view in numpy 1.24)
    assert np.shares_memory(array, t.numpy())
    t.numpy()[0] = 42.0
    assert array[0] == 42.0
    assert t.__dlpack_device__() == (1, 0)


def test_a_kiln_tensor_imports_another_producer():
    t = kiln.tensor(np.arange(3, dtype=np.int32))
    other = kiln.tensor(Producer(t.__dlpack__()))
    assert not other.same_as(t)
    assert np.shares_memory(other.numpy(), t.numpy())
    assert kiln.tensor(t) is t  # already a tensor on that device


@pytest.mark.parametrize("dtype", DTYPES)
def test_dtypes_round_trip_without_copies(dtype):
    array = sample(dtype)
    t = kiln.tensor(array)
    assert t.dtype == dtype and isinstance(t.dtype, kiln.DataType)
    back = t.numpy()
    assert back.dtype == array.dtype
    np.testing.assert_array_equal(back, array)
    assert np.shares_memory(back, array)


@pytest.mark.parametrize("dtype", DTYPES)
def test_empty_has_the_numpy_dtype(dtype):
    t = kiln.empty((2, 2), dtype)
    assert t.dtype == dtype
    assert t.numpy().dtype == np.dtype(dtype)


def test_dtype_without_a_numpy_equivalent_is_a_clear_error():
    t = kiln.empty((2,), "bfloat16")
    assert t.dtype == "bfloat16"
    with pytest.raises(TypeError) as info:
        t.numpy()
    assert "bfloat16" in str(info.value)


def test_tensor_view_reinterprets_elements_of_the_same_size():
    x = np.array([1.0, -2.0], np.float32)
    view = kiln.tensor(x).view("int32")
    assert view.dtype == "int32"
    np.testing.assert_array_equal(view.numpy(), x.view(np.int32))
    with pytest.raises(ValueError, match="element size"):
        kiln.tensor(x).view("float16")
    bits = kiln.tensor(np.array([0x3F80], np.uint16)).view("bfloat16")  # 1.0
    assert bits.dtype == "bfloat16"
    np.testing.assert_array_equal(bits.view("uint16").numpy(), [0x3F80])


@pytest.mark.parametrize("make", [
    lambda: np.arange(20, dtype=np.float32)[::3],
    lambda: np.arange(12, dtype=np.int64).reshape(3, 4).T,
    lambda: np.arange(24, dtype=np.float64).reshape(2, 3, 4)[:, ::2, 1:],
    lambda: np.arange(6, dtype=np.int32)[::-1],
])
def test_strided_arrays_are_shared_with_their_strides(make):
    array = make()
    t = kiln.tensor(array)
    assert not t.is_contiguous
    assert t.strides == tuple(s // array.itemsize for s in array.strides)
    view = t.numpy()
    np.testing.assert_array_equal(view, array)
    assert np.shares_memory(view, array)
    copy = t.copyto(kiln.cpu())  # compact copy
    assert copy.is_contiguous and not np.shares_memory(copy.numpy(), array)
    np.testing.assert_array_equal(copy.numpy(), array)


def test_kiln_copies_follow_the_strides_of_cpu_tensors():
    source = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    for view in (source[:, ::2], source.transpose(2, 0, 1), source[::-1, :, 1:4],
                 np.asfortranarray(source)):
        target = kiln.empty(view.shape, "float32")
        kiln.runtime.CopyTensor(view, target)
        np.testing.assert_array_equal(target.numpy(), view)
    spaced = np.zeros((3, 8), np.float32)
    kiln.runtime.CopyTensor(np.arange(12, dtype=np.float32).reshape(3, 4), spaced[:, ::2])
    np.testing.assert_array_equal(spaced[:, ::2], np.arange(12).reshape(3, 4))
    assert not spaced[:, 1::2].any()


def test_read_only_arrays_are_rejected_clearly():
    array = np.arange(4.0)
    array.flags.writeable = False
    with pytest.raises(BufferError) as info:
        kiln.tensor(array)
    assert "kiln.tensor" in str(info.value) and "writeable" in str(info.value)
    with pytest.raises(BufferError):
        kiln.tensor(np.broadcast_to(np.arange(3.0), (2, 3)))  # stride 0: numpy makes it read-only


def test_unsupported_numpy_dtypes_are_rejected_clearly():
    with pytest.raises(BufferError) as info:
        kiln.tensor(np.array(["a", "b"]))
    assert "DLPack" in str(info.value)


def test_lists_and_scalars_go_through_numpy():
    t = kiln.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert t.shape == (2, 2) and t.dtype == "float64"
    scalar = kiln.tensor(7)
    assert scalar.shape == () and scalar.dtype == "int64" and scalar.numpy() == 7
    assert kiln.tensor(True).dtype == "bool"
    empty = kiln.tensor(np.zeros((0, 3), np.float32))
    assert empty.shape == (0, 3) and empty.numpy().shape == (0, 3)


def test_numpy_arrays_passed_to_kiln_functions_become_tensors():
    array = np.arange(6, dtype=np.float32).reshape(2, 3)
    converted = kiln.convert(array)
    assert isinstance(converted, kiln.Tensor)
    assert np.shares_memory(converted.numpy(), array)
    target = kiln.empty((2, 3), "float32")
    kiln.runtime.CopyTensor(array, target)
    np.testing.assert_array_equal(target.numpy(), array)
    assert np.asarray(target).tolist() == array.tolist()  # __array__


def test_copyto_a_tensor_or_a_device():
    source = kiln.tensor(np.arange(4, dtype=np.int32))
    target = kiln.empty(4, "int32")
    assert source.copyto(target) is target
    assert target.numpy().tolist() == [0, 1, 2, 3]
    copy = source.copyto("cpu")
    assert not np.shares_memory(copy.numpy(), source.numpy())
    with pytest.raises(kiln.ValueError):
        source.copyto(kiln.empty(5, "int32"))


def test_empty_checks_its_arguments():
    assert kiln.empty(3).shape == (3,) and kiln.empty(3).dtype == "float32"
    assert kiln.empty([]).shape == ()
    with pytest.raises(kiln.ValueError):
        kiln.empty((2, -1))
    with pytest.raises(ValueError):
        kiln.empty((2,), "floaty")


def test_empty_on_a_missing_device_names_it():
    missing = kiln.cuda(0) if not kiln.cuda(0).exist else kiln.cpu(1)
    with pytest.raises(kiln.KilnError) as info:
        kiln.empty((2,), device=missing)
    assert missing.type in str(info.value)


def test_repr():
    t = kiln.empty((2, 3), "int8")
    assert repr(t) == ("kiln.Tensor(shape=(2, 3), dtype='int8', "
                       "device=device(type='cpu', index=0))")
    assert repr(kiln.Tensor()) == "<kiln.Tensor (uninitialized)>"


def test_tensors_on_opencl_when_it_exists():
    if not kiln.opencl(0).exist:
        pytest.skip("no OpenCL device")
    array = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = kiln.tensor(array, device="opencl:0")
    assert t.device == kiln.opencl(0) and t.shape == (2, 3)
    assert t.__dlpack_device__() == (4, 0)
    back = t.numpy()  # a copy through the CPU
    np.testing.assert_array_equal(back, array)
    assert not np.shares_memory(back, array)
    assert kiln.tensor(t, device="opencl:0") is t
    with pytest.raises((BufferError, RuntimeError)):
        np.from_dlpack(t)  # numpy reads CPU memory only


# ---- the DLPack capsule protocol ----

def test_a_consumed_capsule_is_renamed_and_cannot_be_used_twice():
    capsule = np.arange(3.0).__dlpack__()
    producer = Producer(capsule)
    kiln.tensor(producer)
    assert "used_dltensor" in repr(capsule)
    with pytest.raises(ValueError) as info:
        kiln.tensor(producer)
    assert "already consumed" in str(info.value)


def test_a_producer_returning_no_capsule_is_a_type_error():
    class Bad:
        def __dlpack__(self, stream=None):
            return 5

    with pytest.raises(TypeError) as info:
        kiln.tensor(Bad())
    assert "dltensor" in str(info.value)


def test_exported_capsule_is_named_dltensor_and_frees_when_unconsumed():
    kiln.runtime.release_cached_memory()
    base = in_use()
    t = kiln.empty((1024,), "float32")
    capsule = t.__dlpack__()
    assert "dltensor" in repr(capsule) and "used" not in repr(capsule)
    del t
    assert in_use() == base + 4096  # the capsule keeps the tensor alive
    del capsule
    assert in_use() == base


def test_numpy_consumer_releases_the_tensor_when_done():
    base = in_use()
    t = kiln.empty((256,), "float64")
    array = np.from_dlpack(t)
    del t
    assert in_use() == base + 2048
    del array
    gc.collect()
    assert in_use() == base


# ---- ownership: nothing leaks, nothing is freed early ----

def test_import_holds_one_reference_to_the_numpy_array():
    array = np.zeros(16)
    base = sys.getrefcount(array)
    t = kiln.tensor(array)
    assert sys.getrefcount(array) == base + 1
    del t
    assert sys.getrefcount(array) == base
    for _ in range(1000):
        kiln.tensor(array).numpy()
        kiln.convert(array)
        kiln.tensor(Producer(array.__dlpack__()))
    gc.collect()
    assert sys.getrefcount(array) == base


def test_repeated_conversions_do_not_leak():
    array = np.arange(64, dtype=np.float32)
    flags = np.zeros(8, dtype=bool)

    def exercise():
        t = kiln.tensor(array)
        t.numpy()
        np.from_dlpack(t)
        t.__dlpack__()
        kiln.tensor(flags).numpy()
        kiln.tensor(array[::2]).copyto("cpu")
        kiln.empty((4, 4), "int64").numpy()
        _ = (t.shape, t.dtype, t.device, t.strides)
        kiln.convert(kiln.cuda(1)), kiln.convert(kiln.DataType("int8")), kiln.cpu().exist
        kiln.convert(np.dtype("float16"))

    exercise()  # kiln's allocator caches its blocks on first use
    gc.collect()
    kiln_base = in_use()
    ref_base = sys.getrefcount(array)
    assert traced_growth(exercise) < 20_000
    assert in_use() == kiln_base
    assert sys.getrefcount(array) == ref_base


def test_torch_tensors_are_shared_when_torch_is_installed():
    torch = pytest.importorskip("torch")
    source = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    t = kiln.tensor(source)
    assert t.shape == (2, 3) and t.dtype == "float32"
    source[0, 0] = 9.0
    assert t.numpy()[0, 0] == 9.0
    back = torch.from_dlpack(t)
    assert back.data_ptr() == source.data_ptr()


def test_dlpack_keywords_of_newer_consumers():
    t = kiln.tensor(np.arange(4, dtype=np.int32))
    shared = kiln.tensor(Producer(t.__dlpack__(max_version=(1, 0), dl_device=(1, 0))))
    assert np.shares_memory(shared.numpy(), t.numpy())
    copied = kiln.tensor(Producer(t.__dlpack__(copy=True)))
    assert not np.shares_memory(copied.numpy(), t.numpy())
    assert copied.numpy().tolist() == [0, 1, 2, 3]
    with pytest.raises(BufferError):
        t.__dlpack__(dl_device=(2, 0))


# ---- on a CUDA device (skipped without one) ----

def _cuda_or_skip():
    if not kiln.cuda(0).exist:
        pytest.skip("no usable CUDA device (kiln.cuda(0).exist is False)")


def test_cuda_tensors_round_trip_through_the_device():
    _cuda_or_skip()
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = kiln.tensor(a, device="cuda:0")
    assert t.device == kiln.cuda(0) and t.shape == (3, 4)
    u = t.copyto("cuda:0")
    assert np.array_equal(u.numpy(), a)
    kiln.cuda(0).synchronize()


def test_torch_cuda_tensors_are_shared_both_ways():
    _cuda_or_skip()
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device")
    source = torch.arange(6, dtype=torch.float32, device="cuda").reshape(2, 3)
    t = kiln.tensor(source)
    assert t.device == kiln.cuda(0) and t.data_ptr == source.data_ptr()
    back = torch.from_dlpack(t)
    assert back.device.type == "cuda" and back.data_ptr() == source.data_ptr()
    assert np.array_equal(t.numpy(), source.cpu().numpy())


def test_torch_reading_on_its_own_stream_sees_kilns_finished_copy():
    # Kiln copies asynchronously on the device's default stream; a consumer reading on a stream
    # of its own must get the finished result, which __dlpack__(stream=...) has to ensure.
    _cuda_or_skip()
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device")
    n = 1 << 26
    target = kiln.empty(n, "float32", "cuda:0")
    torch.from_dlpack(target).fill_(-1.0)
    source = kiln.tensor(torch.ones(n, device="cuda"))
    side = torch.cuda.Stream()
    busy = torch.randn(4096, 4096, device="cuda")
    # A warm-up of what runs below: a first allocation (cudaMalloc) would wait for the whole
    # device, and so hide the missing synchronization this test is after.
    for _ in range(2):
        busy = torch.tanh(busy @ busy)
    with torch.cuda.stream(side):
        torch.from_dlpack(target).sum()
    torch.cuda.synchronize()
    for _ in range(30):  # keeps the default stream busy, so Kiln's copy waits behind this
        busy = torch.tanh(busy @ busy)
    source.copyto(target)
    with torch.cuda.stream(side):
        total = torch.from_dlpack(target).sum()
    assert total.item() == n
