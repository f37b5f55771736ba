"""Dataflow patterns over the graph IR, pattern tables, and what MergeComposite does with them.

The same pattern objects C++ builds (``kiln/transform/pattern.h``)::

    from kiln.pattern import is_op, wildcard, is_constant

    conv = is_op("nn.conv2d")(wildcard(), is_constant()).has_attr({"groups": 1})
    bias = is_op("add")(conv, is_constant())
    pattern = bias.optional(lambda p: is_op("nn.relu")(p))   # relu(bias) | bias

    match(pattern, expr)      # bool; expr must be typed for dtype/shape predicates
    bind(pattern, expr)       # {sub-pattern: matched expression} or None

A compiler provides its table as the global ``kiln.ext.<compiler>.pattern_table``;
``register_pattern_table`` registers one from Python, checks included::

    register_pattern_table("mylib", [
        ("mylib.conv2d_bias_relu", pattern),
        ("mylib.dense", is_op("nn.dense")(wildcard(), wildcard()),
         lambda call: call.checked_type.shape[0].value == 1),
    ])
    mod = kiln.transform.MergeComposite(["mylib"])(mod)

Semantics: one pattern object used twice must match the same expression both times;
``a | b`` tries ``a`` first and backtracks to ``b`` when the rest of the match fails;
``p.optional(f)`` is ``f(p) | p``. See docs/byoc.md, "Patterns".
"""

from . import ir as _ir  # noqa: F401  (loads libkiln.so, where the pattern globals live)
from .function import get_global_func, register_func
from .object import Object, register_object


def _api(name):
    return get_global_func("transform.pattern." + name)


@register_object("kiln.transform.Pattern")
class Pattern(Object):
    """A dataflow pattern; every pattern kind comes back as this class."""

    __slots__ = ()

    def __call__(self, *args):
        """A call of what this pattern matches (usually ``is_op``) with exactly ``args``."""
        return _api("Call")(self, list(args))

    def __or__(self, other):
        """Either pattern, this one tried first."""
        return _api("Alt")(self, other)

    def has_attr(self, attrs):
        """This pattern, on a call whose attributes include ``attrs`` (equal values)."""
        return _api("HasAttr")(self, dict(attrs))

    def has_dtype(self, dtype):
        """This pattern, on a tensor of element type ``dtype`` ("float32")."""
        return _api("HasDType")(self, str(dtype))

    def has_shape(self, shape):
        """This pattern, on a tensor of shape ``shape``; -1 matches any extent."""
        return _api("HasShape")(self, [int(extent) for extent in shape])

    def has_rank(self, rank):
        """This pattern, on a tensor of ``rank`` dimensions."""
        return _api("HasRank")(self, int(rank))

    def optional(self, wrap):
        """``wrap(self) | self``: an optional wrapper, preferred when present."""
        return wrap(self) | self

    def __repr__(self):
        return f"<Pattern {_api('ToString')(self)}>"


def wildcard():
    """Matches any expression."""
    return _api("Wildcard")()


def is_constant():
    """Matches a constant."""
    return _api("IsConstant")()


def is_var():
    """Matches a variable."""
    return _api("IsVar")()


def is_op(name):
    """The op ``name``; call the result with argument patterns: ``is_op("nn.relu")(wildcard())``.
    A name that is no op is a kiln.KeyError."""
    return _api("IsOp")(name)


def is_tuple(fields):
    """Matches a tuple with exactly these fields."""
    return _api("IsTuple")(list(fields))


def is_tuple_get_item(tuple_pattern, index=None):
    """Matches field ``index`` (any field when None) of what ``tuple_pattern`` matches."""
    return _api("IsTupleGetItem")(tuple_pattern, -1 if index is None else int(index))


def bind(pattern, expr):
    """``{sub-pattern: expression}`` for every pattern node the match went through, or None when
    ``expr`` does not match."""
    binding = _api("Match")(pattern, expr)
    return None if binding is None else dict(binding.items())


def match(pattern, expr):
    """True when ``expr`` is the root of a match of ``pattern``."""
    return _api("Match")(pattern, expr) is not None


@register_object("kiln.transform.PatternEntry")
class PatternEntry(Object):
    """A row of a pattern table: ``PatternEntry("mylib.conv2d", pattern, check=None)``; matches
    become composite functions named ``name`` unless ``check(root_expr)`` returns False."""

    __slots__ = ()

    def __new__(cls, name, pattern, check=None):
        return _api("PatternEntry")(name, pattern, check)

    @property
    def name(self):
        return _api("PatternEntryFields")(self)["name"]

    @property
    def pattern(self):
        return _api("PatternEntryFields")(self)["pattern"]

    @property
    def check(self):
        return _api("PatternEntryFields")(self)["check"]

    def __repr__(self):
        return f"<PatternEntry {self.name!r}: {self.pattern!r}>"


def _entry(item):
    return item if isinstance(item, PatternEntry) else PatternEntry(*item)


def register_pattern_table(compiler, entries, override=False):
    """Registers ``entries`` as ``compiler``'s pattern table (the global
    ``kiln.ext.<compiler>.pattern_table``). Each entry is a PatternEntry or a tuple
    ``(name, pattern[, check])``; names must start with ``"<compiler>."``. Entries apply in
    order: put bigger patterns first. Returns the entries as PatternEntry objects."""
    table = [_entry(item) for item in entries]
    register_func(f"kiln.ext.{compiler}.pattern_table", lambda: table, override=override)
    return table


def pattern_table(compiler):
    """``compiler``'s pattern table as MergeComposite reads it (empty when it has none)."""
    return list(_api("GetPatternTable")(compiler))


__all__ = [
    "Pattern",
    "PatternEntry",
    "wildcard",
    "is_constant",
    "is_var",
    "is_op",
    "is_tuple",
    "is_tuple_get_item",
    "bind",
    "match",
    "register_pattern_table",
    "pattern_table",
]
