"""kiln.build: compiles an IRModule (an imported ONNX model, say) into a kiln.Executable.

    mod = kiln.frontend.from_onnx("model.onnx")
    ex = kiln.build(mod)                                  # default pipeline, CPU
    ex = kiln.build(mod, pass_context={"opt_level": 3, "disabled_passes": ["FuseOps"]})
    ex = kiln.build(mod, pipeline="InferType,FoldConstant")  # a pipeline of your own

The steps are C++'s kiln::Build (include/kiln/driver/build.h): bind ``params``, run the pass
pipeline, lower to a graph executor over the CPU kernels with its memory planned.
"""

from .executable import Executable
from .function import get_global_func

__all__ = ["build", "default_pipeline"]


def build(
    mod,
    target="cpu",
    params=None,
    pass_context=None,
    pipeline="",
    plugins=(),
    fallback=True,
    codegen_options=None,
    report=False,
    upper_bounds=None,
    generated_kernels=False,
    tir_passes="",
    placement="greedy",
):
    """Compiles @main of ``mod`` for ``target`` ("cpu").

    ``params`` maps parameter names of @main to arrays that become constants. ``pass_context``
    is a dict of the settings ``kiln.transform.run_pipeline`` takes (``opt_level``,
    ``disabled_passes``, ``required_passes``, ``instruments``, config keys). ``pipeline``, when
    not empty, replaces the default pass list with comma-separated pass names.

    ``plugins`` names external compilers (BYOC, e.g. ``["dnnl", "blas"]``) in priority order:
    each op goes to the first that takes it, the rest to Kiln's CPU path; a plugin that is not
    loaded yet is loaded by name. ``fallback=False`` makes an op no plugin takes an error.
    ``placement="measured"`` keeps a plugin's region only where it runs faster there than on
    Kiln's CPU path (the plugin's ``kiln.ext.<name>.estimate_seconds`` or a measurement at build
    time, cached in ``$KILN_CACHE_DIR``, default ``~/.cache/kiln``); the report shows the costs.
    ``codegen_options`` is passed to each plugin's codegen. ``report=True`` prints where each
    op went and why each op left on the CPU path was declined (also kept as the executable's
    ``placement_report``), before codegen, so it is printed even when ``fallback=False`` fails.
    ``upper_bounds`` ({"batch": 8}) bounds the model's symbolic sizes: its memory is then planned
    once for every shape up to the bounds (``Executable.set_upper_bounds``).
    ``generated_kernels=True`` runs each fused group whose ops all have compute rules as one
    generated C function (``kiln.tir``) instead of a kernel per op; ``tir_passes``
    ("my_ext.unroll_short_loops,simplify") names loop-level passes run on each of them.
    """
    from . import ir as _ir  # noqa: F401  (loads libkiln.so, where driver.Build lives)

    if isinstance(plugins, str):
        plugins = [plugins]
    options = {
        "target": target,
        "params": params or {},
        "pass_context": pass_context,
        "pipeline": pipeline,
        "compilers": list(plugins),
        "fallback": fallback,
        "codegen_options": codegen_options or {},
        "generated_kernels": generated_kernels,
        "tir_passes": tir_passes,
        "placement": placement,
    }
    if not report:
        executable = Executable(get_global_func("driver.Build")(mod, options))
    else:
        optimized = get_global_func("driver.Optimize")(mod, options)
        text = get_global_func("driver.PlacementReport")(optimized, list(plugins))
        print(text, end="")
        executable = Executable(get_global_func("driver.BuildOptimized")(optimized, options))
        executable.placement_report = text
    if upper_bounds:
        executable.set_upper_bounds(upper_bounds)
    return executable


def default_pipeline(plugins=()):
    """The Sequential of passes ``build`` runs unless given ``pipeline``."""
    from . import transform as _transform  # noqa: F401  (registers the Pass classes)

    return get_global_func("driver.DefaultPipeline")(list(plugins))
