"""The tensor-level IR from Python (docs/design.md §21, §23): loops, buffers and scalar arithmetic,
the same nodes C++ passes and plugins see.

Every node is a kind (``for``, ``load``, a plugin's ``my_ext.fp8_cast``) with named fields, so
one builder serves them all::

    from kiln import tir
    a = tir.node("buffer", name="a", dtype="float32", shape=["n", 64])
    out = tir.node("buffer", name="out", dtype="float32", shape=["n", 64])
    body = tir.node("store", buffer=out, indices=["i", "j"],
                    value=tir.node("load", buffer=a, indices=["i", "j"]))
    loop = tir.node("for", var="i", extent="n", kind="parallel",
                    body=tir.node("for", var="j", extent=64, kind="vectorized", body=body))
    func = tir.node("prim_func", name="copy", params=[a, out], body=loop)
    print(func)                                    # the text tir.parse reads back

Indices are integers or the text of size expressions (``"i * 64 + j"``); fields are read as
attributes (``loop.body``, ``func.params``). A pass is a Python function from a ``prim_func``
to a ``prim_func``: ``@tir.prim_func_pass`` checks that and registers it by name, and
``tir.mutate`` rewrites nodes bottom up. ``tir.build_c(func)`` compiles a prim_func with the host
C compiler into a function over tensors.
"""

from . import namespace as _namespace
from ._lib import load_kiln_library as _load_kiln_library
from .function import get_global_func, register_func
from .object import Object, register_object

_reason = _load_kiln_library("kiln")
if _reason is not None:
    raise ImportError(f"kiln.tir needs libkiln.so, Kiln's compiler library: {_reason}")


def _tir(name):
    return get_global_func("tir." + name)


@register_object("kiln.tir.Node")
class Node(Object):
    """A node: its fields as attributes (``dtype`` too, for values). Its kind is
    ``tir.kind_of(node)``, not an attribute, since kinds have fields of any name (a loop's
    ``kind`` is serial, parallel, ...)."""

    __slots__ = ()

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        if name == "dtype" and _tir("NodeKind")(kind_of(self))["role"] == "value":
            return _tir("NodeDType")(self)
        try:
            return _tir("NodeField")(self, name)
        except KeyError as error:
            raise AttributeError(str(error)) from None

    def __repr__(self):
        return _tir("AsText")(self)

    # A buffer indexed is a load, and values take Python's arithmetic and comparisons (not ==,
    # which stays object identity): the builder's notation (kiln.tir.Builder).
    def __getitem__(self, indices):
        if kind_of(self) != "buffer":
            raise TypeError(f"only a buffer is indexed, not a {kind_of(self)}")
        return node("load", buffer=self, indices=list(indices if isinstance(indices, tuple)
                                                      else (indices,)))

    def _binary(self, op, other, reflected=False):
        other = _builder.value(other, self.dtype)
        return node(op, a=other, b=self) if reflected else node(op, a=self, b=other)

    def __add__(self, other):
        return self._binary("add", other)

    def __radd__(self, other):
        return self._binary("add", other, reflected=True)

    def __sub__(self, other):
        return self._binary("sub", other)

    def __rsub__(self, other):
        return self._binary("sub", other, reflected=True)

    def __mul__(self, other):
        return self._binary("mul", other)

    def __rmul__(self, other):
        return self._binary("mul", other, reflected=True)

    def __truediv__(self, other):
        return self._binary("div", other)

    def __rtruediv__(self, other):
        return self._binary("div", other, reflected=True)

    def __neg__(self):
        return self._binary("sub", 0, reflected=True) if not str(self.dtype).startswith(
            "float") else self._binary("mul", -1.0)

    def __lt__(self, other):
        return self._binary("lt", other)

    def __le__(self, other):
        return self._binary("le", other)

    def __gt__(self, other):
        return self._binary("gt", other)

    def __ge__(self, other):
        return self._binary("ge", other)



def kind_of(node):
    """The name of ``node``'s kind: "for", "load", a plugin's "my_ext.fp8_cast"."""
    return _tir("NodeKindOf")(node)


def kinds():
    """The names of every registered node kind (built-in and from loaded plugins)."""
    return list(_tir("ListNodeKinds")())


def node(node_kind, /, **fields):
    """The node of kind ``node_kind`` with ``fields`` by name (positional-only, so a field may be
    called ``kind``); an optional field left out is None. A TypeError names a field the kind does
    not have or a required one missing; the kind's own checks raise kiln.ValueError or
    kiln.TypeError naming the field."""
    described = _tir("NodeKind")(node_kind)
    names = [field[0] for field in described["fields"]]
    unknown = sorted(set(fields) - set(names))
    if unknown:
        raise TypeError(f"tir.{node_kind} has no field {unknown[0]!r} "
                        f"(its fields: {', '.join(names)})")
    values = []
    for name, _field_kind, optional in described["fields"]:
        if name not in fields and not optional:
            raise TypeError(f"tir.{node_kind} needs field {name!r}")
        values.append(fields.get(name))
    return _tir("MakeNode")(node_kind, values)


def parse(text):
    """The node ``text`` writes; kiln.ValueError with the line and column otherwise."""
    return _tir("ParseText")(text)


def structural_equal(a, b):
    """Whether ``a`` and ``b`` are of the same kinds with equal fields, recursively."""
    return bool(_tir("StructuralEqual")(a, b))


def structural_hash(node):
    """A hash consistent with structural_equal, within this process."""
    return int(_tir("StructuralHash")(node))


def mutate(node, rewrite):
    """``node`` rebuilt bottom up: each node's children first, then ``rewrite(node)``, which
    returns a replacement or None to keep it."""
    return _tir("Mutate")(node, rewrite)


def generate_c(func):
    """The C source of ``func`` (a prim_func): one function in Kiln's calling convention."""
    return _tir("GenerateC")(func)


def build_c(func):
    """``func`` (a prim_func) compiled by the host C compiler: a function taking one kiln tensor
    per buffer parameter, its sizes read from their shapes (a wrong extent is a kiln.ValueError
    naming the argument and the axis)."""
    return _tir("BuildC")(func)[func.name]


def generate_cuda(func):
    """The CUDA C++ source of ``func``, a prim_func whose loops are bound to GPU indices (run the
    pass ``bind_gpu`` for the default binding): one ``__global__`` kernel taking a pointer per
    buffer, then an int64 per size variable in name order (``cuda_size_params(func)``)."""
    return _tir("GenerateCuda")(func)


def cuda_size_params(func):
    """The size variables the CUDA kernel of ``func`` takes after its buffers, in order."""
    return list(_tir("CudaSizeParams")(func))


def build_cuda(func, arch="compute_75"):
    """``func``'s CUDA source compiled by NVRTC (libkiln_runtime_cuda.so's
    ``runtime.cuda.CompileToPtx``) into a module of the "cuda" kind, whose function
    ``func.name`` launches it: ``(tensors..., sizes..., grid_x, grid_y, grid_z, block_x,
    block_y, block_z)``. PTX for ``arch`` runs on that architecture and newer ones."""
    ptx = get_global_func("runtime.cuda.CompileToPtx")(generate_cuda(func),
                                                        [f"--gpu-architecture={arch}"])
    return get_global_func("runtime.cuda.ModuleCreate")(ptx, [func.name])


def prim_func_pass(name):
    """Registers the decorated function, ``prim_func -> prim_func``, as the pass ``name``: the
    global function ``tir.pass.<name>``, callable from C++ and other languages by that name. The
    returned callable checks that it is given and returns a ``prim_func``."""

    def decorate(function):
        def run(func):
            _expect_prim_func(func, f"tir pass {name!r} takes")
            result = function(func)
            _expect_prim_func(result, f"tir pass {name!r} must return")
            return result

        run.__name__ = function.__name__
        run.__doc__ = function.__doc__
        register_func(f"tir.pass.{name}", run, override=True)
        return run

    return decorate


def run_passes(func, passes, **settings):
    """``func`` after the loop-level passes ``passes`` ("loop_partition,simplify"), in order,
    under a pass context of ``settings`` (those ``kiln.transform.run_pipeline`` takes:
    ``instruments``, ``disabled_passes`` with names such as "tir.pass.unroll", ...). Built-in
    passes: simplify, loop_partition, unroll, flatten_buffers, storage_rewrite,
    remove_dead_code, bind_gpu; plugins and ``@prim_func_pass`` add more."""
    return _tir("RunPassesUnder")(func, passes, settings)


def compute_rule(op):
    """Registers the decorated function as ``op``'s compute rule, the global function
    ``tir.compute.<op>`` (replacing one there): ``rule(inputs, output, indices, attrs)`` gets a
    buffer per tensor argument, the result's buffer, the output element's indices (size
    expressions) and the call's attributes, and returns that element's value, a tir value node.
    Groups built with ``kiln.build(..., generated_kernels=True)`` then inline it."""

    def decorate(function):
        register_func(f"tir.compute.{op}", function, override=True)
        return function

    return decorate


def tensor_intrin(name, desc):
    """Registers the decorated function as the implementation of tensor intrinsic ``name``,
    described by ``desc``: a prim_func whose body is the loop nest the intrinsic computes, over
    buffers whose sizes are variables. ``tir.schedule.Tensorize(func, loop, name)`` replaces a
    loop nest that computes the same by ``impl(buffers, sizes)``, a statement: ``buffers`` maps
    each of the description's buffer names to ``{"buffer", "offset", "strides"}`` (the function's
    buffer, the region's first element, its row-major strides over the description's axes) and
    ``sizes`` each of its sizes to the nest's extent. The usual statement is
    ``evaluate(call_packed(<a global function>, [address(buffer, offset), ...]))``."""
    _expect_prim_func(desc, f"tensor intrinsic {name!r} needs a description that is")

    def decorate(function):
        _tir("RegisterTensorIntrin")(name, desc, function)
        return function

    return decorate


def index_text(index):
    """An index (a loop variable, a size expression such as a compute rule's indices) as text,
    which index fields take back: ``f"{tir.index_text(i)} + 1"``."""
    return _tir("IndexText")(index)


def lower_fused_group(func, args, name):
    """The prim_func a fused function (FuseOps' output) called with ``args`` lowers to, or the
    reason it stays with the kernels (a str)."""
    return _tir("LowerFusedGroup")(func, list(args), name)


def _expect_prim_func(value, what):
    if not isinstance(value, Node) or kind_of(value) != "prim_func":
        got = kind_of(value) if isinstance(value, Node) else type(value).__name__
        raise TypeError(f"{what} a prim_func, got {got}")


from . import tir_builder as _builder  # noqa: E402  (uses node() above)
from .tir_builder import Builder, Index, call  # noqa: E402,F401

__getattr__ = _namespace.module_getattr(__name__, "tir")
