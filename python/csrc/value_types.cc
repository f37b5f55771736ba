/*
 * The two inline value types that are not Python builtins: Device and DataType.
 *
 * Device is a small C type holding a DLDevice (kiln._ffi.Device); python/kiln/device.py
 * subclasses it with names and attributes, and registers the subclass as the class of Device
 * results. DataType is a str subclass defined in python/kiln/dtype.py: "float32" compares
 * equal to a DataType, but only a DataType is passed as kKilnTypeDataType (a plain str stays a
 * string). The text form is parsed and printed here, the one place that knows it.
 */
// Python.h (through ffi_internal.h) must come before any standard header.
#include "ffi_internal.h"

#include <structmember.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

namespace kiln_python {

PyTypeObject* g_device_type = nullptr;
PyObject* g_device_class = nullptr;
PyObject* g_dtype_class = nullptr;
PyObject* g_value_converter = nullptr;

namespace {

struct TypeCodeName {
  uint8_t code;
  const char* name;
};

// Longest names first where one is a prefix of another ("bfloat" before "float").
const TypeCodeName kTypeCodeNames[] = {
    {kDLBfloat, "bfloat"},       {kDLComplex, "complex"}, {kDLFloat, "float"},
    {kDLOpaqueHandle, "handle"}, {kDLUInt, "uint"},       {kDLInt, "int"},
};

/* Parses the decimal number at *text (advancing it) into [1, max]; false if there is none. */
bool ParseNumber(const char** text, long max, long* out) {
  if (**text < '0' || **text > '9') return false;
  char* end = nullptr;
  long value = strtol(*text, &end, 10);
  if (value < 1 || value > max) return false;
  *text = end;
  *out = value;
  return true;
}

}  // namespace

bool ParseDataType(const char* text, DLDataType* out) {
  if (strcmp(text, "bool") == 0) {
    *out = DLDataType{kDLUInt, 1, 1};  // DLPack 0.6 has no bool code: Kiln's bool is uint1
    return true;
  }
  const TypeCodeName* match = nullptr;
  for (const TypeCodeName& entry : kTypeCodeNames) {
    if (strncmp(text, entry.name, strlen(entry.name)) == 0) {
      match = &entry;
      break;
    }
  }
  if (match == nullptr) return false;
  const char* rest = text + strlen(match->name);
  long bits = 0, lanes = 1;
  if (match->code == kDLOpaqueHandle && *rest == '\0') {
    bits = 64;
  } else if (!ParseNumber(&rest, UINT8_MAX, &bits)) {
    return false;
  }
  if (*rest == 'x') {
    ++rest;
    if (!ParseNumber(&rest, UINT16_MAX, &lanes)) return false;
  }
  if (*rest != '\0') return false;
  *out = DLDataType{match->code, static_cast<uint8_t>(bits), static_cast<uint16_t>(lanes)};
  return true;
}

namespace {

/* New plain str of the canonical name: what ParseDataType reads back. */
PyObject* FormatDataType(DLDataType dtype) {
  if (dtype.code == kDLUInt && dtype.bits == 1 && dtype.lanes == 1) {
    return PyUnicode_FromString("bool");
  }
  const char* name = nullptr;
  for (const TypeCodeName& entry : kTypeCodeNames) {
    if (entry.code == dtype.code) name = entry.name;
  }
  if (name == nullptr) {
    return PyErr_Format(PyExc_ValueError, "kiln: data type code %d has no name",
                        static_cast<int>(dtype.code));
  }
  if (dtype.lanes == 1) return PyUnicode_FromFormat("%s%d", name, static_cast<int>(dtype.bits));
  return PyUnicode_FromFormat("%s%dx%d", name, static_cast<int>(dtype.bits),
                              static_cast<int>(dtype.lanes));
}

}  // namespace

PyObject* DataTypeToPy(DLDataType dtype) {
  PyObject* text = FormatDataType(dtype);
  if (text == nullptr || g_dtype_class == nullptr) return text;
  // str.__new__(DataType, text): the name is already canonical, so DataType.__new__'s
  // normalization is skipped.
  PyObject* args = PyTuple_Pack(1, text);
  Py_DECREF(text);
  if (args == nullptr) return nullptr;
  PyObject* result =
      PyUnicode_Type.tp_new(reinterpret_cast<PyTypeObject*>(g_dtype_class), args, nullptr);
  Py_DECREF(args);
  return result;
}

PyObject* DeviceToPy(DLDevice device) {
  PyTypeObject* cls =
      g_device_class ? reinterpret_cast<PyTypeObject*>(g_device_class) : g_device_type;
  PyObject* self = cls->tp_alloc(cls, 0);
  if (self != nullptr) reinterpret_cast<PyKilnDevice*>(self)->device = device;
  return self;
}

namespace {

/* ---- kiln._ffi.Device ---- */

DLDevice& DeviceOf(PyObject* self) { return reinterpret_cast<PyKilnDevice*>(self)->device; }

PyObject* DeviceNew(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  static const char* kKeywords[] = {"device_type", "device_id", nullptr};
  int device_type = 0, device_id = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "i|i:Device", const_cast<char**>(kKeywords),
                                   &device_type, &device_id)) {
    return nullptr;
  }
  if (device_type <= 0 || device_id < 0) {
    return PyErr_Format(PyExc_ValueError,
                        "a device needs a positive device_type and a device_id >= 0, got (%d, %d)",
                        device_type, device_id);
  }
  PyObject* self = type->tp_alloc(type, 0);
  if (self != nullptr) {
    DeviceOf(self) = DLDevice{static_cast<DLDeviceType>(device_type), device_id};
  }
  return self;
}

void DeviceDealloc(PyObject* self) {
  PyTypeObject* type = Py_TYPE(self);
  type->tp_free(self);
  Py_DECREF(type);  // instances of heap types own a reference to their type
}

Py_hash_t DeviceHash(PyObject* self) {
  const DLDevice& d = DeviceOf(self);
  Py_hash_t hash = static_cast<Py_hash_t>(d.device_type) * 1000003 + d.device_id;
  return hash == -1 ? -2 : hash;
}

PyObject* DeviceRichCompare(PyObject* self, PyObject* other, int op) {
  if ((op != Py_EQ && op != Py_NE) || !PyObject_TypeCheck(other, g_device_type)) {
    Py_RETURN_NOTIMPLEMENTED;
  }
  const DLDevice& a = DeviceOf(self);
  const DLDevice& b = DeviceOf(other);
  const bool same = a.device_type == b.device_type && a.device_id == b.device_id;
  return PyBool_FromLong(op == Py_EQ ? same : !same);
}

PyObject* DeviceReduce(PyObject* self, PyObject*) {
  const DLDevice& d = DeviceOf(self);
  return Py_BuildValue("(O(ii))", reinterpret_cast<PyObject*>(Py_TYPE(self)),
                       static_cast<int>(d.device_type), static_cast<int>(d.device_id));
}

PyMemberDef g_device_members[] = {
    {"device_type", T_INT, offsetof(PyKilnDevice, device) + offsetof(DLDevice, device_type),
     READONLY, "DLPack device type: 1 cpu, 2 cuda, 4 opencl, ..."},
    {"device_id", T_INT, offsetof(PyKilnDevice, device) + offsetof(DLDevice, device_id), READONLY,
     "Index of the device among those of its type."},
    {nullptr, 0, 0, 0, nullptr}};

PyMethodDef g_device_methods[] = {
    {"__reduce__", DeviceReduce, METH_NOARGS, "Pickles as (device_type, device_id)."},
    {nullptr, nullptr, 0, nullptr}};

PyType_Slot g_device_slots[] = {
    {Py_tp_doc, const_cast<char*>("Device(device_type, device_id=0): a DLPack device.")},
    {Py_tp_new, reinterpret_cast<void*>(DeviceNew)},
    {Py_tp_dealloc, reinterpret_cast<void*>(DeviceDealloc)},
    {Py_tp_hash, reinterpret_cast<void*>(DeviceHash)},
    {Py_tp_richcompare, reinterpret_cast<void*>(DeviceRichCompare)},
    {Py_tp_members, g_device_members},
    {Py_tp_methods, g_device_methods},
    {0, nullptr}};

PyType_Spec g_device_spec = {"kiln._ffi.Device", sizeof(PyKilnDevice), 0,
                             Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE, g_device_slots};

/* ---- module functions ---- */

/* parse_dtype(name) -> (code, bits, lanes); ValueError for a name Kiln does not know. */
PyObject* ParseDtype(PyObject*, PyObject* name) {
  if (!PyUnicode_Check(name)) {
    return PyErr_Format(PyExc_TypeError, "a data type name must be a str, got a Python '%s'",
                        Py_TYPE(name)->tp_name);
  }
  const char* text = PyUnicode_AsUTF8(name);
  if (text == nullptr) return nullptr;
  DLDataType dtype;
  if (!ParseDataType(text, &dtype)) {
    return PyErr_Format(PyExc_ValueError,
                        "%R is not a data type name; expected bool, int<bits>, uint<bits>, "
                        "float<bits>, bfloat<bits>, complex<bits> or handle, optionally "
                        "followed by x<lanes> (float32, int8, float16x4)",
                        name);
  }
  return Py_BuildValue("(iii)", static_cast<int>(dtype.code), static_cast<int>(dtype.bits),
                       static_cast<int>(dtype.lanes));
}

/* format_dtype(code, bits, lanes) -> canonical name (a plain str). */
PyObject* FormatDtype(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 3) {
    PyErr_SetString(PyExc_TypeError, "format_dtype(code, bits, lanes)");
    return nullptr;
  }
  long values[3];
  const long limits[3] = {UINT8_MAX, UINT8_MAX, UINT16_MAX};
  for (int i = 0; i < 3; ++i) {
    values[i] = PyLong_AsLong(args[i]);
    if (values[i] == -1 && PyErr_Occurred()) return nullptr;
    if (values[i] < (i == 0 ? 0 : 1) || values[i] > limits[i]) {
      return PyErr_Format(PyExc_ValueError, "format_dtype: argument %d out of range: %ld", i,
                          values[i]);
    }
  }
  return FormatDataType(DLDataType{static_cast<uint8_t>(values[0]), static_cast<uint8_t>(values[1]),
                                   static_cast<uint16_t>(values[2])});
}

PyObject* SetClassHook(PyObject** slot, PyObject* cls, PyTypeObject* base) {
  if (!PyType_Check(cls) || !PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(cls), base)) {
    return PyErr_Format(PyExc_TypeError, "%R is not a subclass of %s", cls, base->tp_name);
  }
  Py_INCREF(cls);
  Py_XSETREF(*slot, cls);
  Py_RETURN_NONE;
}

PyObject* SetDeviceClass(PyObject*, PyObject* cls) {
  return SetClassHook(&g_device_class, cls, g_device_type);
}

PyObject* SetDtypeClass(PyObject*, PyObject* cls) {
  return SetClassHook(&g_dtype_class, cls, &PyUnicode_Type);
}

PyObject* SetValueConverter(PyObject*, PyObject* fn) {
  if (fn != Py_None && !PyCallable_Check(fn)) {
    PyErr_SetString(PyExc_TypeError, "expected a callable or None");
    return nullptr;
  }
  Py_XINCREF(fn == Py_None ? nullptr : fn);
  Py_XSETREF(g_value_converter, fn == Py_None ? nullptr : fn);
  Py_RETURN_NONE;
}

PyMethodDef g_value_type_methods[] = {
    {"parse_dtype", ParseDtype, METH_O,
     "parse_dtype(name) -> (code, bits, lanes) of a data type name such as 'float32'."},
    {"format_dtype", FastCall(FormatDtype), METH_FASTCALL,
     "format_dtype(code, bits, lanes) -> the canonical name, e.g. 'float32'."},
    {"set_device_class", SetDeviceClass, METH_O,
     "Class (a subclass of kiln._ffi.Device) that Device results are made of."},
    {"set_dtype_class", SetDtypeClass, METH_O,
     "Class (a str subclass) of DataType results; only its instances pass as DataType."},
    {"set_value_converter", SetValueConverter, METH_O,
     "Hook obj -> kiln.Object, Device, DataType or None, tried for values no other rule "
     "converts (numpy arrays, numpy dtypes)."},
    {nullptr, nullptr, 0, nullptr}};

}  // namespace

int AddValueTypes(PyObject* module) {
  g_device_type = reinterpret_cast<PyTypeObject*>(PyType_FromSpec(&g_device_spec));
  if (g_device_type == nullptr) return -1;
  if (PyModule_AddObjectRef(module, "Device", reinterpret_cast<PyObject*>(g_device_type)) != 0) {
    return -1;
  }
  return PyModule_AddFunctions(module, g_value_type_methods);
}

}  // namespace kiln_python
