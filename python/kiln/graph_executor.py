"""kiln.runtime.GraphExecutor: runs a "graph_executor" module (a static graph of calls into a
lib module over buffers planned ahead of time; see include/kiln/runtime/graph_executor.h for
the graph JSON).

    lib = kiln.load_module("kernels.so")
    executor = kiln.runtime.GraphExecutor.create(graph_json, lib, kiln.cpu())
    executor.set_input("x", numpy_array)   # or executor.run(x=numpy_array, y=...)
    executor.run()
    result = executor.get_output(0).numpy()
"""

from ._lib import core_func
from .containers import to_builtin
from .devices import as_device, cpu
from .runtime import Module
from .tensors import Tensor, tensor

__all__ = ["GraphExecutor"]

KIND = "graph_executor"


class GraphExecutor:
    """Sets inputs by name or index, runs, and reads outputs by index.

    ``GraphExecutor.create(graph_json, lib, device)`` builds one; ``GraphExecutor(module)``
    wraps a graph_executor module, e.g. one that ``kiln.load_module`` loaded from an artifact.
    ``invoke`` may be called from many threads at once (each run gets buffers of its own);
    ``set_input``/``run``/``get_output`` share one set of buffers and serve one caller at a time.
    """

    def __init__(self, module):
        if isinstance(module, GraphExecutor):  # kiln.load_module gives a compiled model so
            module = module.module
        if not isinstance(module, Module) or module.kind != KIND:
            raise TypeError(f"GraphExecutor wraps a module of kind {KIND!r}, got {module!r}")
        self.module = module
        # Looked up once: a module's functions do not change.
        self._invoke = module.get_function("invoke")
        self._set_input = module.get_function("set_input")
        self._set_input_zero_copy = module.get_function("set_input_zero_copy")
        self._run = module.get_function("run")
        self._get_output = module.get_function("get_output")

    @classmethod
    def create(cls, graph_json, lib, device=None):
        """An executor of ``graph_json`` whose nodes call functions of ``lib`` (a Module, which
        the executor imports), with its buffers on ``device`` (default: the CPU)."""
        dev = cpu() if device is None else as_device(device)
        return cls(core_func("runtime.GraphExecutorCreate")(graph_json, lib, dev))

    def invoke(self, inputs, out=None):
        """Runs the graph once on ``inputs`` (one value per graph input, in order: Tensors, numpy
        arrays, ...) and returns its outputs as a list of Tensors that no later run touches.
        ``out``, a list with a Tensor or None per output, gives tensors to write outputs into.
        Thread-safe: concurrent calls run at the same time, each with buffers of its own."""
        args = [_as_tensor(value) for value in inputs]
        # Not _as_tensor: a read-only array must be refused, not silently written as a copy.
        given = None if out is None else [None if item is None else tensor(item) for item in out]
        return list(self._invoke(args, given))

    def set_limits(self, max_concurrent_runs=0, memory_limit=0):
        """At most ``max_concurrent_runs`` runs of ``invoke`` at once (more wait) and at most
        ``memory_limit`` bytes of activation memory over all of them; 0 means no limit. A run
        whose activation memory alone exceeds ``memory_limit`` raises MemoryError, allocating
        nothing."""
        self.module["set_limits"](max_concurrent_runs, memory_limit)

    def set_upper_bounds(self, bounds=None, /, **sizes):
        """Upper bounds of the model's size variables, as a dict or keywords
        (``set_upper_bounds(batch=8)``). A run over a bound raises ValueError. With every size
        bounded, the model is planned once at the bounds and every smaller shape reuses that
        memory, so a context allocates once."""
        self.module["set_upper_bounds"](dict(bounds or {}, **sizes))

    @property
    def limits(self):
        """{"contexts", "idle", "max_concurrent_runs", "memory_limit", "bytes_per_context"}:
        the execution contexts made so far (one per concurrent run) and the limits."""
        return to_builtin(self.module["get_limits"]())

    def set_input(self, key=None, value=None, **inputs):
        """Copies ``value`` (a Tensor, numpy array, list, ... on any device) into the input
        ``key`` (a name or an index); keyword arguments set inputs by name."""
        if key is not None:
            self._set_input(key, _as_tensor(value))
        for name, item in inputs.items():
            self._set_input(name, _as_tensor(item))

    def set_input_zero_copy(self, key, value):
        """Makes the input ``key`` read ``value`` itself (same shape, dtype and device, compact)
        instead of a copy; the executor keeps it until the input is set again."""
        self._set_input_zero_copy(key, _as_tensor(value))

    def run(self, **inputs):
        """Sets the inputs given by name (as set_input does), then runs every node once."""
        if inputs:
            self.set_input(**inputs)
        self._run()

    def get_output(self, index, out=None):
        """Output ``index`` as a Tensor viewing the executor's buffer (valid until the next
        run: copy it to keep it), or copied into ``out`` (a Tensor), which is returned."""
        result = self._get_output(index)
        return result if out is None else result.copyto(out)

    def get_input_index(self, name):
        """Index of the input ``name``, or -1 when the graph has no such input."""
        return self.module["get_input_index"](name)

    @property
    def num_inputs(self):
        """Number of graph inputs."""
        return self.module["get_num_inputs"]()

    @property
    def num_outputs(self):
        """Number of graph outputs."""
        return self.module["get_num_outputs"]()

    @property
    def input_info(self):
        """{"names": [str], "shapes": [tuple], "symbolic_shapes": [str], "dtypes": [DataType]}
        of the inputs. A symbolic extent is -1 in "shapes"; "symbolic_shapes" writes each shape
        out, "(batch, 3, 224, 224)"."""
        return to_builtin(self.module["get_input_info"]())

    @property
    def output_info(self):
        """{"shapes": [tuple], "symbolic_shapes": [str], "dtypes": [DataType]} of the outputs,
        as input_info gives them."""
        return to_builtin(self.module["get_output_info"]())

    @property
    def memory_plan(self):
        """{"total_bytes", "storage_bytes", "bytes_without_sharing", "planned_at_run_time",
        "size_variables", "plans_made", "planning_seconds"}: the planned memory. A model with
        symbolic shapes is planned at run time, once per input-shape signature (``plans_made``
        counts them, ``planning_seconds`` is the time they took), and
        ``total_bytes`` is the largest plan a run has used so far."""
        return to_builtin(self.module["memory_plan"]())

    def __repr__(self):
        return f"kiln.runtime.GraphExecutor({self.num_inputs} inputs, {self.num_outputs} outputs)"


def _as_tensor(value):
    if isinstance(value, Tensor):
        return value
    # DLPack cannot share a read-only array (numpy refuses); set_input copies anyway, so a
    # private copy costs nothing in meaning (onnx.numpy_helper returns read-only arrays).
    if getattr(value, "flags", None) is not None and not value.flags.writeable:
        value = value.copy()
    return tensor(value)


GraphExecutor.__module__ = "kiln.runtime"
