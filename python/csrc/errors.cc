/*
 * Errors across the boundary: a failing Kiln call raises the Python class that kiln/error.py
 * registers for the error's kind; a Python exception leaving a callback becomes a Kiln Error.
 * The class mapping and traceback formatting live in Python (kiln/error.py), behind two hooks.
 */
// Python.h (through ffi_internal.h) must come before any standard header.
#include "ffi_internal.h"

#include <string.h>

#include <string>

namespace kiln_python {

PyObject* g_error_factory = nullptr;
PyObject* g_exception_converter = nullptr;

PyObject* DecodeUtf8(const KilnByteArray& bytes) {
  return PyUnicode_DecodeUTF8(bytes.data ? bytes.data : "", static_cast<Py_ssize_t>(bytes.size),
                              "surrogateescape");
}

void DiscardKilnError() {
  KilnObjectHandle error = nullptr;
  kiln_error_move_from_raised(&error);
  if (error) kiln_object_dec_ref(error);
}

namespace {

/* Raises the Python exception for a Kiln Error object (borrowed). */
void SetPythonErrorFromKiln(KilnObjectHandle error) {
  if (error == nullptr || !IsInstance(error, kKilnTypeError)) {
    PyErr_SetString(PyExc_RuntimeError, "kiln: a failing call raised something not an Error");
    return;
  }
  const auto* e = reinterpret_cast<const KilnErrorObject*>(error);
  PyObject* kind = DecodeUtf8(e->kind);
  PyObject* message = DecodeUtf8(e->message);
  PyObject* context = DecodeUtf8(e->context);
  if (kind && message && context) {
    if (g_error_factory) {
      PyObject* exc =
          PyObject_CallFunctionObjArgs(g_error_factory, kind, message, context, nullptr);
      if (exc) {
        PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exc)), exc);
        Py_DECREF(exc);
      }
    } else {
      PyErr_Format(PyExc_RuntimeError, "%U: %U\n%U", kind, message, context);
    }
  }
  Py_XDECREF(kind);
  Py_XDECREF(message);
  Py_XDECREF(context);
}

std::string Utf8OrEmpty(PyObject* str) {
  if (str == nullptr || !PyUnicode_Check(str)) return std::string();
  Py_ssize_t size = 0;
  const char* data = PyUnicode_AsUTF8AndSize(str, &size);
  if (data == nullptr) {
    PyErr_Clear();
    return std::string();
  }
  return std::string(data, static_cast<size_t>(size));
}

}  // namespace

/* Moves this thread's raised Kiln error into a Python exception; returns nullptr. */
PyObject* RaiseFromKiln() {
  KilnObjectHandle error = nullptr;
  kiln_error_move_from_raised(&error);
  SetPythonErrorFromKiln(error);
  if (error) kiln_object_dec_ref(error);
  return nullptr;
}

/*
 * Turns the current Python exception into this thread's raised Kiln error. The mapping of
 * exception classes to kinds and the traceback formatting live in kiln/error.py
 * (exception_to_error); without it, the kind is RuntimeError and the message str(exc).
 */
void SetKilnErrorFromPython() {
  PyObject *type = nullptr, *value = nullptr, *tb = nullptr;
  PyErr_Fetch(&type, &value, &tb);
  PyErr_NormalizeException(&type, &value, &tb);
  if (value && tb) PyException_SetTraceback(value, tb);
  std::string kind = "RuntimeError";
  std::string message = "unknown Python error";
  std::string context;
  if (value) {
    PyObject* parts =
        g_exception_converter ? PyObject_CallOneArg(g_exception_converter, value) : nullptr;
    if (parts && PyTuple_Check(parts) && PyTuple_GET_SIZE(parts) == 3) {
      kind = Utf8OrEmpty(PyTuple_GET_ITEM(parts, 0));
      message = Utf8OrEmpty(PyTuple_GET_ITEM(parts, 1));
      context = Utf8OrEmpty(PyTuple_GET_ITEM(parts, 2));
    } else {
      PyErr_Clear();
      PyObject* str = PyObject_Str(value);
      if (str) message = Utf8OrEmpty(str);
      PyErr_Clear();
      Py_XDECREF(str);
    }
    Py_XDECREF(parts);
  }
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(tb);
  if (kind.empty()) kind = "RuntimeError";
  KilnObjectHandle error = nullptr;
  // On failure kiln_error_create has already raised its own error; nothing better to do.
  if (kiln_error_create(kind.c_str(), message.c_str(), context.empty() ? nullptr : context.c_str(),
                        &error) == 0) {
    kiln_error_set_raised(error);
    kiln_object_dec_ref(error);
  }
}

/*
 * Puts `prefix` before the message of the current Python exception. The builtin TypeError,
 * ValueError and OverflowError that conversions raise are re-raised with the longer message;
 * any other exception (whose constructor may want other arguments) is kept and gets a note.
 */
void PrefixPythonError(PyObject* prefix) {
  if (prefix == nullptr) return;
  PyObject *type = nullptr, *value = nullptr, *tb = nullptr;
  PyErr_Fetch(&type, &value, &tb);
  PyErr_NormalizeException(&type, &value, &tb);
  if (value == nullptr) {
    PyErr_Restore(type, value, tb);
    return;
  }
  const bool rewrite =
      type == PyExc_TypeError || type == PyExc_ValueError || type == PyExc_OverflowError;
  PyObject* message = nullptr;
  if (rewrite) {
    PyObject* str = PyObject_Str(value);
    message = str ? PyUnicode_FromFormat("%U%U", prefix, str) : nullptr;
    Py_XDECREF(str);
  } else {
    // "f(): argument 0: " -> "while converting f(): argument 0"
    PyObject* where = PyUnicode_Substring(prefix, 0, PyUnicode_GetLength(prefix) - 2);
    message = where ? PyUnicode_FromFormat("while converting %U", where) : nullptr;
    Py_XDECREF(where);
  }
  if (message == nullptr) {
    PyErr_Clear();
    PyErr_Restore(type, value, tb);
    return;
  }
  if (rewrite) {
    Py_DECREF(value);
    Py_XDECREF(tb);
    PyErr_SetObject(type, message);
    Py_DECREF(type);
  } else {
    PyObject* rc = PyObject_CallMethod(value, "add_note", "O", message);
    if (rc == nullptr) PyErr_Clear();
    Py_XDECREF(rc);
    PyErr_Restore(type, value, tb);
  }
  Py_DECREF(message);
}

}  // namespace kiln_python
