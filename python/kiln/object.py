"""kiln.Object and the registry of Python classes for Kiln object types."""

from ._lib import _ffi

Object = _ffi.Object


def register_object(type_key):
    """Class decorator: Kiln objects of type ``type_key`` come back as this class.

    ``type_key`` is a Kiln type key ("kiln.ir.Var"); the type need not exist yet (a plugin may
    register it later). An object whose exact type has no class gets the class of its nearest
    registered ancestor, and kiln.Object at the root. The class must derive from kiln.Object;
    Python never calls its ``__init__`` for objects coming from Kiln.
    """
    if not isinstance(type_key, (str, int)):
        raise TypeError("use @kiln.register_object('type.key') with the Kiln type key")

    def register(cls):
        _ffi.register_object_class(type_key, cls)
        cls._kiln_type_key = type_key
        return cls

    return register
