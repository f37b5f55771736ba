/*
 * kiln.Object and kiln.Function, heap types. An Object holds one reference to its Kiln object
 * and releases it when collected; equality and hashing go by that object's identity. Python
 * subclasses (registered with kiln.register_object) add behaviour, not state in C.
 */
// Python.h (through ffi_internal.h) must come before any standard header.
#include "ffi_internal.h"

#include <structmember.h>

#include <stddef.h>
#include <stdint.h>

namespace kiln_python {

PyTypeObject* g_object_type = nullptr;
PyTypeObject* g_function_type = nullptr;

KilnObjectHandle CheckedHandle(PyObject* obj, int32_t type_index, const char* what) {
  if (!PyObject_TypeCheck(obj, g_object_type)) {
    PyErr_Format(PyExc_TypeError, "expected a kiln %s, got a Python '%s'", what,
                 Py_TYPE(obj)->tp_name);
    return nullptr;
  }
  KilnObjectHandle handle = HandleOf(obj);
  if (handle == nullptr) {
    PyErr_Format(PyExc_ValueError, "%s object is not initialized", Py_TYPE(obj)->tp_name);
    return nullptr;
  }
  if (type_index != kKilnTypeObject && !IsInstance(handle, type_index)) {
    PyErr_Format(PyExc_TypeError, "expected a kiln %s, got a %s object", what,
                 Py_TYPE(obj)->tp_name);
    return nullptr;
  }
  return handle;
}

namespace {

PyObject* ObjectNew(PyTypeObject* type, PyObject*, PyObject*) {
  PyObject* self = type->tp_alloc(type, 0);
  if (self && PyType_IsSubtype(type, g_function_type)) {
    reinterpret_cast<PyKilnFunction*>(self)->vectorcall = FunctionVectorcall;
  }
  return self;
}

void ObjectDealloc(PyObject* self) {
  PyTypeObject* type = Py_TYPE(self);
  KilnObjectHandle handle = HandleOf(self);
  reinterpret_cast<PyKilnObject*>(self)->handle = nullptr;
  if (handle) kiln_object_dec_ref(handle);
  type->tp_free(self);
  Py_DECREF(type);  // instances of heap types own a reference to their type
}

void FunctionDealloc(PyObject* self) {
  Py_CLEAR(reinterpret_cast<PyKilnFunction*>(self)->name);
  ObjectDealloc(self);
}

PyObject* TypeKeyOf(KilnObjectHandle handle) {
  const KilnTypeInfo* info = nullptr;
  if (kiln_type_get_info(handle->type_index, &info) != 0) return RaiseFromKiln();
  return DecodeUtf8(info->type_key);
}

PyObject* ObjectGetTypeKey(PyObject* self, void*) {
  KilnObjectHandle handle = CheckedHandle(self, kKilnTypeObject, "Object");
  return handle ? TypeKeyOf(handle) : nullptr;
}

PyObject* ObjectGetTypeIndex(PyObject* self, void*) {
  KilnObjectHandle handle = CheckedHandle(self, kKilnTypeObject, "Object");
  return handle ? PyLong_FromLong(handle->type_index) : nullptr;
}

PyObject* ObjectGetHandle(PyObject* self, void*) { return PyLong_FromVoidPtr(HandleOf(self)); }

PyObject* ObjectSameAs(PyObject* self, PyObject* other) {
  if (!PyObject_TypeCheck(other, g_object_type)) Py_RETURN_FALSE;
  return PyBool_FromLong(HandleOf(self) != nullptr && HandleOf(self) == HandleOf(other));
}

/* Moves the handle of `other` (a kiln.Object) into `self`; for __init__ of Python subclasses. */
PyObject* ObjectMoveHandleFrom(PyObject* self, PyObject* other) {
  if (!PyObject_TypeCheck(other, g_object_type)) {
    return PyErr_Format(PyExc_TypeError, "expected a kiln.Object, got a Python '%s'",
                        Py_TYPE(other)->tp_name);
  }
  KilnObjectHandle old = HandleOf(self);
  reinterpret_cast<PyKilnObject*>(self)->handle = HandleOf(other);
  reinterpret_cast<PyKilnObject*>(other)->handle = nullptr;
  if (old) kiln_object_dec_ref(old);
  Py_RETURN_NONE;
}

/* self.__init_handle_by_constructor__(func, *args): self takes over the object func returns. */
PyObject* ObjectInitByConstructor(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs < 1) {
    PyErr_SetString(PyExc_TypeError, "__init_handle_by_constructor__ needs a constructor");
    return nullptr;
  }
  PyObject* result =
      PyObject_Vectorcall(args[0], args + 1, static_cast<size_t>(nargs - 1), nullptr);
  if (result == nullptr) return nullptr;
  if (!PyObject_TypeCheck(result, g_object_type)) {
    PyErr_Format(PyExc_TypeError, "constructor returned a Python '%s', not a kiln.Object",
                 Py_TYPE(result)->tp_name);
    Py_DECREF(result);
    return nullptr;
  }
  PyObject* rc = ObjectMoveHandleFrom(self, result);
  Py_DECREF(result);
  return rc;
}

Py_hash_t ObjectHash(PyObject* self) {
  KilnObjectHandle handle = HandleOf(self);
  Py_hash_t hash = handle ? static_cast<Py_hash_t>(reinterpret_cast<uintptr_t>(handle) >> 4)
                          : static_cast<Py_hash_t>(reinterpret_cast<uintptr_t>(self) >> 4);
  return hash == -1 ? -2 : hash;
}

PyObject* ObjectRichCompare(PyObject* self, PyObject* other, int op) {
  if ((op != Py_EQ && op != Py_NE) || !PyObject_TypeCheck(other, g_object_type)) {
    Py_RETURN_NOTIMPLEMENTED;
  }
  bool same = HandleOf(self) == HandleOf(other) && (HandleOf(self) != nullptr || self == other);
  return PyBool_FromLong(op == Py_EQ ? same : !same);
}

PyObject* ObjectRepr(PyObject* self) {
  KilnObjectHandle handle = HandleOf(self);
  if (handle == nullptr)
    return PyUnicode_FromFormat("<%s (uninitialized)>", Py_TYPE(self)->tp_name);
  PyObject* key = TypeKeyOf(handle);
  if (key == nullptr) return nullptr;
  PyObject* repr = PyUnicode_FromFormat("<%s %U at %p>", Py_TYPE(self)->tp_name, key, handle);
  Py_DECREF(key);
  return repr;
}

PyGetSetDef g_object_getset[] = {
    {"type_key", ObjectGetTypeKey, nullptr, "Type key of the Kiln object, e.g. 'kiln.Array'.",
     nullptr},
    {"type_index", ObjectGetTypeIndex, nullptr, "Run-time type index of the Kiln object.", nullptr},
    {"_handle", ObjectGetHandle, nullptr, "Address of the Kiln object (0 when uninitialized).",
     nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

PyMethodDef g_object_methods[] = {
    {"same_as", ObjectSameAs, METH_O, "True when both wrap the very same Kiln object."},
    {"_move_handle_from", ObjectMoveHandleFrom, METH_O,
     "Take over the Kiln object of another kiln.Object (which becomes uninitialized)."},
    {"__init_handle_by_constructor__", FastCall(ObjectInitByConstructor), METH_FASTCALL,
     "Call constructor(*args) and take over the Kiln object it returns."},
    {nullptr, nullptr, 0, nullptr}};

PyType_Slot g_object_slots[] = {
    {Py_tp_doc, const_cast<char*>("Base of every Kiln object: holds one reference to it.")},
    {Py_tp_new, reinterpret_cast<void*>(ObjectNew)},
    {Py_tp_dealloc, reinterpret_cast<void*>(ObjectDealloc)},
    {Py_tp_hash, reinterpret_cast<void*>(ObjectHash)},
    {Py_tp_richcompare, reinterpret_cast<void*>(ObjectRichCompare)},
    {Py_tp_repr, reinterpret_cast<void*>(ObjectRepr)},
    {Py_tp_getset, g_object_getset},
    {Py_tp_methods, g_object_methods},
    {0, nullptr}};

PyType_Spec g_object_spec = {"kiln.Object", sizeof(PyKilnObject), 0,
                             Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE, g_object_slots};

PyObject* FunctionGetName(PyObject* self, void*) {
  PyObject* name = reinterpret_cast<PyKilnFunction*>(self)->name;
  if (name == nullptr) Py_RETURN_NONE;
  Py_INCREF(name);
  return name;
}

int FunctionSetName(PyObject* self, PyObject* value, void*) {
  if (value != nullptr && value != Py_None && !PyUnicode_Check(value)) {
    PyErr_SetString(PyExc_TypeError, "__name__ must be a str or None");
    return -1;
  }
  PyObject* old = reinterpret_cast<PyKilnFunction*>(self)->name;
  PyObject* name = value == Py_None ? nullptr : value;
  Py_XINCREF(name);
  reinterpret_cast<PyKilnFunction*>(self)->name = name;
  Py_XDECREF(old);
  return 0;
}

PyObject* FunctionRepr(PyObject* self) {
  PyObject* name = reinterpret_cast<PyKilnFunction*>(self)->name;
  if (name) return PyUnicode_FromFormat("<kiln.Function %U>", name);
  return PyUnicode_FromFormat("<kiln.Function at %p>", HandleOf(self));
}

PyMemberDef g_function_members[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(PyKilnFunction, vectorcall), READONLY, nullptr},
    {nullptr, 0, 0, 0, nullptr}};

PyGetSetDef g_function_getset[] = {
    {"__name__", FunctionGetName, FunctionSetName,
     "Registry name the function was looked up by, or None.", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

PyType_Slot g_function_slots[] = {
    {Py_tp_doc, const_cast<char*>("A Kiln Function object; calling it calls into Kiln.")},
    {Py_tp_dealloc, reinterpret_cast<void*>(FunctionDealloc)},
    {Py_tp_call, reinterpret_cast<void*>(PyVectorcall_Call)},
    {Py_tp_repr, reinterpret_cast<void*>(FunctionRepr)},
    {Py_tp_members, g_function_members},
    {Py_tp_getset, g_function_getset},
    {0, nullptr}};

PyType_Spec g_function_spec = {
    "kiln.Function", sizeof(PyKilnFunction), 0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_VECTORCALL, g_function_slots};

}  // namespace

int InitObjectTypes() {
  g_object_type = reinterpret_cast<PyTypeObject*>(PyType_FromSpec(&g_object_spec));
  if (g_object_type == nullptr) return -1;
  g_function_type = reinterpret_cast<PyTypeObject*>(
      PyType_FromSpecWithBases(&g_function_spec, reinterpret_cast<PyObject*>(g_object_type)));
  return g_function_type ? 0 : -1;
}

}  // namespace kiln_python
