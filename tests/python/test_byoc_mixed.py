"""Mixed placement (issue 6, "done when"): one model whose ops go to dnnl, blas, ccompiler and
Kiln's CPU path, built with the plugins in a priority order that makes this happen, the placement
report checked for each target, exported, reloaded in a process that has only the runtime and the
runtime-side plugins, and its outputs compared with the CPU path's and numpy's."""

import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import kiln
from kiln import transform

RNG = np.random.default_rng(5)
PLUGINS = {"dnnl": "KILN_DNNL_PLUGIN", "blas": "KILN_BLAS_PLUGIN",
           "ccompiler": "KILN_CCOMPILER_PLUGIN"}
# blas first: dnnl would take the dense too. ccompiler before dnnl: dnnl has eltwise ops too.
PRIORITY = ["blas", "ccompiler", "dnnl"]


@pytest.fixture(scope="module")
def plugins():
    """Loads the three compiler plugins; skips, saying which, when one was not built."""
    for name, variable in PLUGINS.items():
        path = os.environ.get(variable)
        if not path or not os.path.exists(path):
            pytest.skip(f"libkiln_{name}.so was not built ({variable} is "
                        f"{'unset' if not path else 'a missing file: ' + path}); the mixed "
                        f"placement needs plugins/{name}")
        kiln.load_plugin(path)


# The scaling and tanh go to ccompiler, the convolution and the reshape (a view) to dnnl, the
# cosine to nobody (host), the dense to blas. No add or activation follows the convolution or the dense, so no dnnl
# pattern absorbs an op meant for another compiler.
MODEL = """
def @main(%x: Tensor[(1, 3, 6, 6), float32]) {
  %0 = multiply(%x, meta[Constant][0]);
  %1 = tanh(%0);
  %2 = nn.conv2d(%1, meta[Constant][1], padding=[1, 1, 1, 1]);
  %3 = reshape(%2, newshape=[1, 144]);
  %4 = cos(%3);
  nn.dense(%4, meta[Constant][2])
}
"""
SCALE = RNG.standard_normal((3, 1, 1)).astype("float32")
WEIGHT = RNG.standard_normal((4, 3, 3, 3)).astype("float32")
DENSE = RNG.standard_normal((5, 144)).astype("float32")


def typed():
    constants = [kiln.tensor(c) for c in (SCALE, WEIGHT, DENSE)]
    return transform.InferType()(kiln.ir.ParseModule(MODEL, constants))


def numpy_reference(x):
    hidden = np.tanh(x * SCALE)
    padded = np.pad(hidden, ((0, 0), (0, 0), (1, 1), (1, 1)))
    windows = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(2, 3))
    conv = np.einsum("nchwij,ocij->nohw", windows, WEIGHT)
    return np.cos(conv.reshape(1, 144)) @ DENSE.T


def placement_counts(report):
    """{target: op calls} from the report's summary lines."""
    return {m.group(1): int(m.group(2))
            for m in re.finditer(r"^  (\S+)\s+(\d+) op calls", report, re.MULTILINE)}


RELOAD = textwrap.dedent(
    """
    import sys
    import numpy as np
    import kiln

    model = kiln.load_module(sys.argv[1])
    (out,) = model.run(x=np.load(sys.argv[2]))
    np.save(sys.argv[3], out)
    maps = open("/proc/self/maps").read()
    assert "/libkiln.so" not in maps, "the compiler was loaded"
    for plugin in ("libkiln_dnnl.so", "libkiln_blas.so", "libkiln_ccompiler.so"):
        assert plugin not in maps, plugin + " (a compiler plugin) was loaded"
    for runtime in ("libkiln_runtime_dnnl.so", "libkiln_runtime_blas.so"):
        assert runtime in maps, runtime + " was not loaded"
    """
)


def test_dnnl_blas_ccompiler_and_host_in_one_model(plugins, tmp_path):
    model = kiln.build(typed(), plugins=PRIORITY, report=True)
    report = model.placement_report
    assert placement_counts(report) == {"blas": 1, "ccompiler": 2, "dnnl": 2, "host": 1}, report
    for line in ("blas      nn.dense x1", "ccompiler multiply x1", "ccompiler tanh x1",
                 "dnnl      nn.conv2d x1", "dnnl      reshape x1", "host      cos x1"):
        assert line in report, report

    x = RNG.standard_normal((1, 3, 6, 6)).astype("float32")
    (cpu,) = kiln.build(typed()).run(x=x)
    (got,) = model.run(x=x)
    np.testing.assert_allclose(cpu, numpy_reference(x), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got, cpu, rtol=1e-4, atol=1e-4)

    artifact = tmp_path / "mixed.so"
    model.export_library(artifact)
    np.save(tmp_path / "x.npy", x)
    (tmp_path / "reload.py").write_text(RELOAD)
    env = {k: v for k, v in os.environ.items() if k != "KILN_PLUGIN_PATH"}
    run = subprocess.run(
        [sys.executable, str(tmp_path / "reload.py"), str(artifact), str(tmp_path / "x.npy"),
         str(tmp_path / "out.npy")], capture_output=True, text=True, timeout=120, env=env)
    assert run.returncode == 0, run.stderr
    np.testing.assert_allclose(np.load(tmp_path / "out.npy"), cpu, rtol=1e-4, atol=1e-4)
