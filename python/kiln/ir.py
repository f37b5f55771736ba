"""The graph IR from Python: the same nodes C++ passes and plugins see.

Nodes are Kiln objects made by libkiln.so (the compiler), which this module loads. Build them
with their classes (``Var("x", TensorType((1, 3), "float32"))``, ``Call("nn.relu", [x])``);
read any field as an attribute (``call.args``, ``fn.params``), resolved through the global
``ir.NodeField`` each time. Every other ``ir.*`` global (from Kiln or a plugin) is reachable as
``kiln.ir.<Name>``.
"""

from . import namespace as _namespace
from ._lib import load_kiln_library as _load_kiln_library
from .dtype import DataType
from .function import get_global_func
from .object import Object, register_object

_reason = _load_kiln_library("kiln")
if _reason is not None:
    raise ImportError(f"kiln.ir needs libkiln.so, Kiln's compiler library: {_reason}")


def _ir(name):
    return get_global_func("ir." + name)


class Node(Object):
    """Base of IR nodes and types: fields are read as attributes, through ir.NodeField."""

    __slots__ = ()

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return _ir("NodeField")(self, name)
        except KeyError as error:
            raise AttributeError(str(error)) from None

    def __repr__(self):
        printer = get_global_func("ir.AsText", allow_missing=True)
        if printer is None:
            return f"<{self.type_key}>"
        return printer(self)


def _node_class(type_key, constructor=None):
    """A Node subclass for ``type_key`` whose ``__new__`` calls ``constructor`` (a function
    returning the node built by the ir.* global)."""

    def decorate(cls):
        if constructor is not None:
            cls.__new__ = staticmethod(lambda _cls, *args, **kwargs: constructor(*args, **kwargs))
        return register_object(type_key)(cls)

    return decorate


def _dims(shape):
    return [dim if isinstance(dim, Node) else _ir("IntDim")(int(dim)) for dim in shape]


def _op(op):
    return _ir("Op")(op) if isinstance(op, str) else op


@_node_class("kiln.ir.IntDim", lambda value: _ir("IntDim")(value))
class IntDim(Node):
    """A static extent of a tensor dimension."""

    __slots__ = ()


@_node_class(
    "kiln.ir.TensorType", lambda shape, dtype: _ir("TensorType")(_dims(shape), DataType(dtype))
)
class TensorType(Node):
    """The type of a tensor: ``TensorType((1, 3, 224, 224), "float32")``."""

    __slots__ = ()


@_node_class("kiln.ir.TupleType", lambda fields: _ir("TupleType")(list(fields)))
class TupleType(Node):
    """The type of a tuple of values."""

    __slots__ = ()


@_node_class("kiln.ir.FuncType", lambda params, ret: _ir("FuncType")(list(params), ret))
class FuncType(Node):
    """The type of a function."""

    __slots__ = ()


@_node_class("kiln.ir.Var", lambda name, type_annotation=None: _ir("Var")(name, type_annotation))
class Var(Node):
    """A variable: a function parameter. Identity, not name, tells variables apart."""

    __slots__ = ()


@_node_class("kiln.ir.Constant", lambda data: _ir("Constant")(data))
class Constant(Node):
    """A constant tensor (anything kiln.tensor accepts, e.g. a numpy array, shared not copied)."""

    __slots__ = ()


@_node_class(
    "kiln.ir.Call",
    lambda op, args, attrs=None: _ir("Call")(_op(op), list(args), dict(attrs or {})),
)
class Call(Node):
    """A call of an op (by name or Op) or a function: ``Call("nn.relu", [x])``."""

    __slots__ = ()


@_node_class("kiln.ir.Tuple", lambda fields: _ir("Tuple")(list(fields)))
class Tuple(Node):
    """A tuple of expressions."""

    __slots__ = ()


@_node_class("kiln.ir.TupleGetItem", lambda tuple_value, index: _ir("TupleGetItem")(tuple_value, index))
class TupleGetItem(Node):
    """Field ``index`` of a tuple."""

    __slots__ = ()


@_node_class(
    "kiln.ir.Function",
    lambda params, body, ret_type=None, attrs=None: _ir("Function")(
        list(params), body, ret_type, dict(attrs or {})
    ),
)
class Function(Node):
    """A function: parameters, a body, attributes such as Compiler or Primitive."""

    __slots__ = ()


@_node_class(
    "kiln.ir.If",
    lambda cond, then_branch, else_branch, sizes=(): _ir("If")(
        cond, then_branch, else_branch, list(sizes)
    ),
)
class If(Node):
    """``then_branch()`` when ``cond`` (a bool tensor of one element) holds, else
    ``else_branch()``: both are functions of no parameters that read outer values directly.
    ``sizes`` (size expressions or their texts) name the extents where the branches' types
    disagree."""

    __slots__ = ()


@_node_class(
    "kiln.ir.Loop",
    lambda trip_count, condition, initial, body, iterations: _ir("Loop")(
        trip_count, condition, list(initial), body, iterations
    ),
)
class Loop(Node):
    """ONNX's Loop: ``body(i, condition, *carried)`` returns ``(condition, *carried,
    *scanned)``; the value is ``(*carried, *scan_outputs)``, each scan output stacked along a
    leading axis of ``iterations`` (an int or a size expression)."""

    __slots__ = ()


@_node_class("kiln.ir.GlobalVar", lambda name: _ir("GlobalVar")(name))
class GlobalVar(Node):
    """The name of a function of a module: ``@main``."""

    __slots__ = ()


@_node_class("kiln.ir.Op", lambda name: _ir("Op")(name))
class Op(Node):
    """A registered operator, one object per name: ``Op("nn.conv2d")``."""

    __slots__ = ()


@_node_class("kiln.ir.IRModule", lambda functions=None, attrs=None: _module(functions, attrs))
class IRModule(Node):
    """Global functions by name, and module attributes. Adding returns a new module."""

    __slots__ = ()

    def add(self, name, function):
        """A new module with ``function`` added as ``@name`` (a str or GlobalVar)."""
        gvar = GlobalVar(name) if isinstance(name, str) else name
        return _ir("IRModuleAdd")(self, gvar, function)

    def __getitem__(self, name):
        return _ir("IRModuleLookup")(self, name)


def _module(functions, attrs):
    module = _ir("IRModule")(dict(attrs or {}))
    for name, function in (functions or {}).items():
        module = module.add(name, function)
    return module


def register_op(
    name, inputs=None, attrs=None, pattern=None, type_relation=None, **free_form_attrs
):
    """Registers the op ``name`` (KeyError if it exists) and returns the Op.

    ``inputs`` names the inputs and ``attrs`` maps each attribute name to its kind ("int",
    "float", "bool", "str", "dtype", "ints", "floats") or to ``(kind, default)``, a default of
    None making it optional. Either gives the op a schema, checked whenever a Call of it is built.
    ``pattern`` is a pattern kind name ("elemwise", "injective", "opaque", ...).
    ``type_relation(op, arg_types, attrs) -> Type`` becomes the op's "FInferType". Other keyword
    arguments are free-form op attributes (``pattern_kind=0``, kernels, ...). Read them back
    with ``ir.OpSchema(op)``, ``ir.OpPattern(op)``, ``op_attrs(op)``; ``ir.InferCallType(op,
    arg_types, attrs)`` runs the type relation.
    """
    op = _ir("RegisterOp")(name)
    for input_name in inputs or ():
        _ir("OpAddInput")(name, input_name)
    for attr, spec in (attrs or {}).items():
        if isinstance(spec, tuple):
            _ir("OpAddAttr")(name, attr, spec[0], spec[1], True)
        else:
            _ir("OpAddAttr")(name, attr, spec, None, False)
    if pattern is not None:
        _ir("OpSetPattern")(name, pattern)
    if type_relation is not None:
        free_form_attrs["FInferType"] = type_relation
    for key, value in free_form_attrs.items():
        _ir("OpSetAttr")(name, key, value, False)
    return op


def op_attrs(op):
    """The attributes of an op (an Op or its name) as a dict."""
    return dict(_ir("OpAttrs")(_op(op)).items())


def list_ops():
    """Names of every registered op, sorted."""
    return list(_ir("ListOps")())


def structural_equal(a, b, map_free_vars=False):
    """True when ``a`` and ``b`` are the same program up to the names of bound variables."""
    return _ir("StructuralEqual")(a, b, map_free_vars)


def structural_hash(node, map_free_vars=False):
    """A hash consistent with structural_equal (within this process)."""
    return _ir("StructuralHash")(node, map_free_vars)


__getattr__ = _namespace.module_getattr(__name__, "ir")


from .ir_functor import ExprMutator, ExprVisitor  # noqa: E402,F401  (they use the classes above)
