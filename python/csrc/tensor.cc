/*
 * Tensors seen from Python: their fields, and DLPack 0.6 capsules in both directions
 * (python/kiln/tensor.py builds kiln.Tensor, kiln.tensor and Tensor.__dlpack__ on these).
 *
 * Import: a producer's `__dlpack__()` returns a capsule named "dltensor" that owns a
 * DLManagedTensor. Kiln takes the tensor over and renames the capsule "used_dltensor", which
 * tells the capsule's destructor that a consumer owns it now (the DLPack protocol). The
 * producer's deleter is wrapped so that it runs with the GIL held: a Kiln tensor may be freed
 * on any thread, and producers such as numpy 1.24 release Python objects in their deleter
 * without taking the GIL themselves.
 *
 * Export: a capsule named "dltensor" over kiln_tensor_to_dlpack, whose destructor calls the
 * deleter only while the capsule still has that name, i.e. when no consumer took it.
 */
// Python.h (through ffi_internal.h) must come before any standard header.
#include "ffi_internal.h"

#include <new>

namespace kiln_python {
namespace {

constexpr const char* kCapsuleName = "dltensor";
constexpr const char* kUsedCapsuleName = "used_dltensor";

/// What Kiln owns for an imported tensor: its own DLManagedTensor around the producer's.
struct ImportedTensor {
  DLManagedTensor managed;
  DLManagedTensor* producer;
};

void ReleaseImportedTensor(DLManagedTensor* self) {
  auto* imported = static_cast<ImportedTensor*>(self->manager_ctx);
  DLManagedTensor* producer = imported->producer;
  delete imported;
  if (producer->deleter == nullptr) return;
  // After Python is gone the producer's deleter would touch a dead interpreter: leak instead.
  if (PythonIsFinalizing()) return;
  PyGILState_STATE gil = PyGILState_Ensure();
  producer->deleter(producer);
  PyGILState_Release(gil);
}

void ExportedCapsuleDestructor(PyObject* capsule) {
  if (!PyCapsule_IsValid(capsule, kCapsuleName)) return;  // renamed: a consumer owns it
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, kCapsuleName));
  if (managed != nullptr && managed->deleter != nullptr) managed->deleter(managed);
}

int64_t ElementBytes(DLDataType dtype) {
  return (static_cast<int64_t>(dtype.bits) * dtype.lanes + 7) / 8;
}

/* Reads the optional dtype argument (None, or a name); 1 if given, 0 if None, -1 on error. */
int DtypeOverride(PyObject* const* args, Py_ssize_t nargs, Py_ssize_t index, DLDataType* out) {
  if (nargs <= index || args[index] == Py_None) return 0;
  if (!PyUnicode_Check(args[index])) {
    PyErr_Format(PyExc_TypeError, "dtype must be a str or None, got a Python '%s'",
                 Py_TYPE(args[index])->tp_name);
    return -1;
  }
  const char* text = PyUnicode_AsUTF8(args[index]);
  if (text == nullptr) return -1;
  if (!ParseDataType(text, out)) {
    PyErr_Format(PyExc_ValueError, "%R is not a data type name", args[index]);
    return -1;
  }
  return 1;
}

/*
 * tensor_from_dlpack(capsule, dtype=None) -> kiln.Tensor sharing the capsule's memory.
 * `dtype` reinterprets elements of the same size (numpy exports bool arrays as uint8 views).
 */
PyObject* TensorFromDLPack(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs < 1 || nargs > 2) {
    PyErr_SetString(PyExc_TypeError, "tensor_from_dlpack(capsule, dtype=None)");
    return nullptr;
  }
  PyObject* capsule = args[0];
  if (!PyCapsule_IsValid(capsule, kCapsuleName)) {
    if (PyCapsule_IsValid(capsule, kUsedCapsuleName)) {
      PyErr_SetString(PyExc_ValueError,
                      "this DLPack capsule was already consumed (it is named 'used_dltensor'); "
                      "call __dlpack__() again for a new one");
    } else {
      PyErr_Format(PyExc_TypeError, "expected a DLPack capsule named 'dltensor', got %R", capsule);
    }
    return nullptr;
  }
  DLDataType dtype;
  const int has_dtype = DtypeOverride(args, nargs, 1, &dtype);
  if (has_dtype < 0) return nullptr;
  auto* producer = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, kCapsuleName));
  if (producer == nullptr) return nullptr;
  if (has_dtype && ElementBytes(dtype) != ElementBytes(producer->dl_tensor.dtype)) {
    PyErr_SetString(PyExc_ValueError,
                    "tensor_from_dlpack: dtype must have the element size of the producer's");
    return nullptr;
  }
  auto* imported = new (std::nothrow) ImportedTensor{};
  if (imported == nullptr) return PyErr_NoMemory();
  imported->producer = producer;
  imported->managed.dl_tensor = producer->dl_tensor;
  if (has_dtype) imported->managed.dl_tensor.dtype = dtype;
  imported->managed.manager_ctx = imported;
  imported->managed.deleter = ReleaseImportedTensor;
  KilnObjectHandle tensor = nullptr;
  if (kiln_tensor_from_dlpack(&imported->managed, &tensor) != 0) {
    delete imported;  // the capsule still owns the producer's tensor
    return RaiseFromKiln();
  }
  // Cannot fail: the capsule was checked to be valid above.
  PyCapsule_SetName(capsule, kUsedCapsuleName);
  return WrapHandle(tensor);
}

/* tensor_to_dlpack(tensor, dtype=None) -> a capsule named "dltensor" over the tensor's memory. */
PyObject* TensorToDLPack(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs < 1 || nargs > 2) {
    PyErr_SetString(PyExc_TypeError, "tensor_to_dlpack(tensor, dtype=None)");
    return nullptr;
  }
  KilnObjectHandle tensor = CheckedHandle(args[0], kKilnTypeTensor, "Tensor");
  if (tensor == nullptr) return nullptr;
  DLDataType dtype;
  const int has_dtype = DtypeOverride(args, nargs, 1, &dtype);
  if (has_dtype < 0) return nullptr;
  const DLTensor& source = reinterpret_cast<const KilnTensorObject*>(tensor)->dl_tensor;
  if (has_dtype && ElementBytes(dtype) != ElementBytes(source.dtype)) {
    PyErr_SetString(PyExc_ValueError,
                    "tensor_to_dlpack: dtype must have the element size of the tensor's");
    return nullptr;
  }
  DLManagedTensor* managed = nullptr;
  if (kiln_tensor_to_dlpack(tensor, &managed) != 0) return RaiseFromKiln();
  if (has_dtype) managed->dl_tensor.dtype = dtype;  // our copy of the descriptor
  PyObject* capsule = PyCapsule_New(managed, kCapsuleName, ExportedCapsuleDestructor);
  if (capsule == nullptr) managed->deleter(managed);
  return capsule;
}

PyObject* Int64Tuple(const int64_t* values, int32_t size) {
  PyObject* tuple = PyTuple_New(size);
  for (int32_t i = 0; tuple && i < size; ++i) {
    PyObject* item = PyLong_FromLongLong(values[i]);
    if (item == nullptr) {
      Py_CLEAR(tuple);
    } else {
      PyTuple_SET_ITEM(tuple, i, item);
    }
  }
  return tuple;
}

/* tensor_fields(tensor) -> (shape, strides or None, dtype, device, data address, byte_offset) */
PyObject* TensorFields(PyObject*, PyObject* obj) {
  KilnObjectHandle tensor = CheckedHandle(obj, kKilnTypeTensor, "Tensor");
  if (tensor == nullptr) return nullptr;
  const DLTensor& t = reinterpret_cast<const KilnTensorObject*>(tensor)->dl_tensor;
  PyObject* shape = Int64Tuple(t.shape, t.ndim);
  PyObject* strides = t.strides ? Int64Tuple(t.strides, t.ndim) : Py_NewRef(Py_None);
  PyObject* dtype = DataTypeToPy(t.dtype);
  PyObject* device = DeviceToPy(t.device);
  PyObject* data = PyLong_FromVoidPtr(t.data);
  PyObject* offset = PyLong_FromUnsignedLongLong(t.byte_offset);
  PyObject* result = shape && strides && dtype && device && data && offset
                         ? PyTuple_Pack(6, shape, strides, dtype, device, data, offset)
                         : nullptr;
  Py_XDECREF(shape);
  Py_XDECREF(strides);
  Py_XDECREF(dtype);
  Py_XDECREF(device);
  Py_XDECREF(data);
  Py_XDECREF(offset);
  return result;
}

PyMethodDef g_tensor_methods[] = {
    {"tensor_from_dlpack", FastCall(TensorFromDLPack), METH_FASTCALL,
     "tensor_from_dlpack(capsule, dtype=None) -> kiln.Tensor sharing the capsule's memory; "
     "the capsule is renamed 'used_dltensor'."},
    {"tensor_to_dlpack", FastCall(TensorToDLPack), METH_FASTCALL,
     "tensor_to_dlpack(tensor, dtype=None) -> DLPack capsule named 'dltensor'."},
    {"tensor_fields", TensorFields, METH_O,
     "tensor_fields(tensor) -> (shape, strides or None, dtype, device, data, byte_offset)."},
    {nullptr, nullptr, 0, nullptr}};

}  // namespace

int AddTensorFunctions(PyObject* module) { return PyModule_AddFunctions(module, g_tensor_methods); }

}  // namespace kiln_python
