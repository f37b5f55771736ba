"""Writing a prim_func as Python code (``kiln.tir.Builder``): loops are ``with`` blocks, buffers
are indexed like arrays, and values take Python's arithmetic::

    from kiln import tir
    b = tir.Builder("add_relu")
    a = b.param("a", "float32", ["n", 64])
    bias = b.param("bias", "float32", [64])
    out = b.param("out", "float32", ["n", 64])
    with b.loop("i", "n", kind="parallel") as i:
        with b.loop("j", 64) as j:
            b.store(out, [i, j], tir.call("max", a[i, j] + bias[j], 0.0))
    func = b.finish()

It builds the same nodes as ``tir.node``: what C++ passes, plugins and the C code generator
see. Loop variables are ``Index`` values, the text of size expressions with ``+``, ``-``, ``*``,
``//`` (floor division) and ``%`` (floor modulo), so ``a[i * 2 + 1]`` reads as it looks.
"""

from contextlib import contextmanager

from . import tir as _tir_module

__all__ = ["Builder", "Index", "call"]


class Index(str):
    """An index: the text of a size expression (a loop variable, ``"i * 64 + j"``), with the
    arithmetic of size expressions. ``tir.node`` takes it wherever an index goes."""

    def _binary(self, op, other, reflected=False):
        left, right = (other, self) if reflected else (self, other)
        return Index(f"({left}) {op} ({right})")

    def __add__(self, other):
        return self._binary("+", other)

    def __radd__(self, other):
        return self._binary("+", other, reflected=True)

    def __sub__(self, other):
        return self._binary("-", other)

    def __rsub__(self, other):
        return self._binary("-", other, reflected=True)

    def __mul__(self, other):
        return self._binary("*", other)

    def __rmul__(self, other):
        return self._binary("*", other, reflected=True)

    def __floordiv__(self, other):
        return Index(f"floordiv({self}, {other})")

    def __mod__(self, other):
        return Index(f"floormod({self}, {other})")


def value(x, dtype):
    """``x`` as a value node: a node as it is, a Python number as an immediate of ``dtype``."""
    if isinstance(x, _tir_module.Node):
        return x
    if isinstance(x, bool) or (isinstance(x, int) and not str(dtype).startswith("float")):
        return _tir_module.node("int", value=int(x), dtype=dtype)
    if isinstance(x, (int, float)):
        return _tir_module.node("float", value=float(x), dtype=dtype)
    raise TypeError(f"a tir value must be a tir node or a number, got {type(x).__name__}")


def _dtype_of(*values):
    for v in values:
        if isinstance(v, _tir_module.Node):
            return str(v.dtype)
    raise TypeError("give at least one tir value (not only Python numbers) to infer the dtype")


def call(name, *args, dtype=None):
    """An intrinsic or external call (``exp``, ``erf``, ``max``...) of ``args``; the dtype is the
    first value argument's unless given. ``max`` and ``min`` become the max and min nodes."""
    dtype = dtype or _dtype_of(*args)
    values = [value(a, dtype) for a in args]
    if name in ("max", "min") and len(values) == 2:
        return _tir_module.node(name, a=values[0], b=values[1])
    return _tir_module.node("call", name=name, args=values, dtype=dtype)


class Builder:
    """Collects statements into a prim_func named ``name``; see the module's docstring."""

    def __init__(self, name):
        self._name = name
        self._params = []
        self._blocks = [[]]  # the statements of each open block, innermost last

    def param(self, name, dtype, shape):
        """A buffer parameter (the function takes one tensor per parameter, in order)."""
        buffer = self.buffer(name, dtype, shape)
        self._params.append(buffer)
        return buffer

    @staticmethod
    def buffer(name, dtype, shape):
        """A buffer, for ``param`` or ``allocate``; index it to load (``a[i, j]``)."""
        return _tir_module.node("buffer", name=name, dtype=dtype, shape=list(shape))

    def store(self, buffer, indices, stored):
        """``buffer[indices] = stored`` (a number is an immediate of the buffer's dtype)."""
        self._emit(_tir_module.node("store", buffer=buffer, indices=list(indices),
                                    value=value(stored, buffer.dtype)))

    def evaluate(self, evaluated):
        self._emit(_tir_module.node("evaluate", value=evaluated))

    @contextmanager
    def loop(self, var, extent, kind="serial"):
        """A loop of ``var`` over [0, ``extent``); ``kind``: serial, parallel, vectorized,
        unrolled, or a GPU binding (block_x, thread_x, ...). Yields the loop variable."""
        with self._block() as body:
            yield Index(var)
        self._emit(_tir_module.node("for", var=var, extent=extent, kind=kind, body=body()))

    @contextmanager
    def allocate(self, name, dtype, shape, scope="local"):
        """A buffer that exists inside the block (scope local, shared or global)."""
        buffer = self.buffer(name, dtype, shape)
        with self._block() as body:
            yield buffer
        self._emit(_tir_module.node("allocate", buffer=buffer, scope=scope, body=body()))

    @contextmanager
    def if_then(self, cond):
        """A block run when ``cond`` (a bool value) holds."""
        with self._block() as body:
            yield
        self._emit(_tir_module.node("if", cond=cond, then=body()))

    def finish(self):
        """The prim_func; the builder must have no block open."""
        if len(self._blocks) != 1:
            raise RuntimeError("tir.Builder.finish: a loop or block is still open")
        return _tir_module.node("prim_func", name=self._name, params=self._params,
                                body=self._sequence(self._blocks[0]))

    def _emit(self, stmt):
        self._blocks[-1].append(stmt)

    @contextmanager
    def _block(self):
        self._blocks.append([])
        statements = self._blocks[-1]
        try:
            yield lambda: self._sequence(statements)
        finally:
            self._blocks.pop()

    @staticmethod
    def _sequence(statements):
        if len(statements) == 1:
            return statements[0]
        return _tir_module.node("seq", stmts=statements)
