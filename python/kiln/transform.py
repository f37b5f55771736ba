"""Passes from Python: compose and run Kiln's passes, built in or from plugins.

A pass is the same object C++ runs; calling it runs it through Kiln's pass manager (skipping,
instruments and error context included), with keyword settings for its PassContext::

    import kiln
    from kiln import transform

    seq = transform.Sequential([transform.DeadCodeElimination()], name="cleanup")
    out = seq(mod, opt_level=3, disabled_passes=["transform.Foo"])
    out = transform.run_pipeline(mod, "DeadCodeElimination,my_ext.transform.RemoveIdentity")

Settings are those of ``transform.RunPipeline``: ``opt_level``, ``required_passes``,
``disabled_passes``, ``dump_on_error_dir``, ``instruments``; any other key is a config entry.

Bring your own codegen: ``AnnotateTarget(["dnnl", "blas"])``, ``MergeCompilerRegions()`` and
``PartitionGraph()``; ``register_target_predicate`` claims an op for a compiler from Python and
``ask_compilers`` shows what each compiler answers for a call (docs/byoc.md).

Passes written in Python: ``@transform.function_pass("my.FoldDoubles")`` over a function
rewritten with ``kiln.ir.ExprMutator``, or ``@transform.module_pass``; either is then a name in
pipelines next to the C++ passes.

Every other ``transform.*`` global (from Kiln or a plugin, even one loaded after ``import kiln``)
is reachable as ``kiln.transform.<Name>``. A plugin's passes in its own namespace are reached by
their full name: ``kiln.get_global_func("my_ext.transform.RemoveIdentity")()``.

Like kiln.ir, this module is imported on first access (it loads libkiln.so); a pass obtained
before that comes back as a plain kiln.Object, which Sequential still accepts but which is not
callable. Import ``kiln.transform`` first where that matters.
"""

# kiln.ir loads libkiln.so, where the transform.* globals live, and registers the IR classes
# (IRModule) that passes return.
from . import ir as _ir  # noqa: F401
from . import namespace as _namespace
from .function import get_global_func, register_func
from .object import Object, register_object


def _transform(name):
    return get_global_func("transform." + name)


@register_object("kiln.transform.Pass")
class Pass(Object):
    """A transformation of an IRModule: ``new_mod = p(mod, **settings)``; ``mod`` is unchanged."""

    __slots__ = ()

    def __call__(self, mod, **settings):
        return _transform("RunPass")(self, mod, settings)

    @property
    def info(self):
        """``{"name": str, "opt_level": int, "required": bool}``."""
        return dict(_transform("PassInfo")(self).items())

    def __repr__(self):
        return f"<{type(self).__name__} {self.info['name']!r}>"


@register_object("kiln.transform.Sequential")
class Sequential(Pass):
    """Runs ``passes`` in order under one context: ``Sequential([p1, p2], name="cleanup")``."""

    __slots__ = ()

    def __new__(cls, passes, name="Sequential"):
        return _transform("Sequential")(list(passes), name)


def _register_pass(name, pass_object):
    """Registers a factory of ``pass_object`` under the name pipeline strings look it up by
    (``transform.<name>`` for a name without a dot, else ``name``), and returns the pass."""
    register_func(name if "." in name else f"transform.{name}", lambda: pass_object,
                  override=True)
    return pass_object


def module_pass(name, opt_level=0):
    """Registers the decorated ``fn(mod, ctx) -> mod`` as the pass ``name``, run by Kiln's pass
    manager like a C++ pass (instruments, opt levels, error context) and named in pipeline
    strings, ``kiln.build(pipeline=...)`` and C++ alike. Returns the Pass."""

    def decorate(function):
        return _register_pass(name, _transform("CreateModulePass")(function, name, opt_level))

    return decorate


def function_pass(name, opt_level=0):
    """Like ``module_pass`` for ``fn(function, mod, ctx) -> function``, called on each function
    of the module but those an external compiler took; usually a ``kiln.ir.ExprMutator`` over
    ``function``."""

    def decorate(function):
        return _register_pass(name, _transform("CreateFunctionPass")(function, name, opt_level))

    return decorate


def register_target_predicate(op, compiler, predicate=None, override=False):
    """Sets the op attribute ``target.<compiler>`` of ``op`` (a name or an Op), which
    AnnotateTarget asks: ``predicate(call) -> bool | str``, True taking the call, False or a
    reason (str) declining it. Without ``predicate``, a decorator::

        @transform.register_target_predicate("nn.relu", "my_compiler")
        def _relu(call):
            return True

    A second predicate for the same op and compiler is a kiln.KeyError unless ``override``."""

    def register(function):
        name = op if isinstance(op, str) else op.name
        get_global_func("ir.OpSetAttr")(name, "target." + compiler, function, override)
        return function

    return register if predicate is None else register(predicate)


def ask_compilers(call, compilers):
    """Each compiler's answer for ``call`` as AnnotateTarget asks them: a list of dicts
    ``{"compiler", "answer": "taken" | "declined" | "no_predicate" | "graph_level", "reason"}``."""
    return [dict(answer.items()) for answer in _transform("AskCompilers")(call, list(compilers))]


def run_pipeline(mod, pipeline, **settings):
    """Runs the comma-separated pass names of ``pipeline`` on ``mod``. A bare name is looked up
    as ``transform.<name>`` first; an unknown name is a kiln.KeyError suggesting close names."""
    return _transform("RunPipeline")(mod, pipeline, settings)


__getattr__ = _namespace.module_getattr(__name__, "transform")
__dir__ = _namespace.module_dir(globals(), "transform")
