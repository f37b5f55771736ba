"""Runs ONNX's backend node test cases through Kiln and reports how many import and how many
compute the expected outputs.

    PYTHONPATH=build/python /usr/bin/python3 scripts/onnx_node_tests.py [--filter REGEX] [-v]

Each case is a folder <case>/{model.onnx, test_data_set_0/{input,output}_N.pb}
(Debian's libonnx-testdata). A case *imports* when kiln.frontend.from_onnx accepts the model;
inputs that the model uses as shapes, axes or other attributes (the importer's "must be a
constant" error names them, or the inputs they are computed from) are bound to the case's own
input values with ``values=``, as a user would. A case *passes* when the imported module
computes every output with the expected shape and dtype, within ONNX's tolerances (rtol=1e-3,
atol=1e-7), evaluated with kiln.build when Kiln has it, else by binding every input and folding
the module to constants with InferType and FoldConstant (the same CPU kernels).
"""

import argparse
import collections
import glob
import os
import re
import sys

import numpy as np
import onnx
from onnx import numpy_helper

import kiln
import kiln.frontend
import kiln.transform
from kiln._lib import load_kiln_library

DATA = "/usr/share/libonnx-testdata/data/node"
RTOL, ATOL = 1e-3, 1e-7
CONSTANT_INPUT = re.compile(r"input \d+ \('([^']*)'\) must be a constant")


def load_case(case_dir):
    model = onnx.load(os.path.join(case_dir, "model.onnx"))
    data_dir = os.path.join(case_dir, "test_data_set_0")

    def tensors(prefix):
        paths = sorted(glob.glob(os.path.join(data_dir, prefix + "_*.pb")),
                       key=lambda p: int(re.search(r"_(\d+)\.pb$", p).group(1)))
        return [numpy_helper.to_array(onnx.load_tensor(p)) for p in paths]

    initializers = {init.name for init in model.graph.initializer}
    names = [i.name for i in model.graph.input if i.name not in initializers]
    return model, dict(zip(names, tensors("input"))), tensors("output")


def graph_inputs_behind(model, name, inputs):
    """The graph inputs (of ``inputs``) that value ``name`` is computed from."""
    producers = {out: node for node in model.graph.node for out in node.output}
    found, stack, seen = [], [name], set()
    while stack:
        value = stack.pop()
        if value in seen:
            continue
        seen.add(value)
        if value in inputs:
            found.append(value)
        elif value in producers:
            stack.extend(v for v in producers[value].input if v)
    return found


def import_case(model, inputs, bind_all):
    """(module, bound values). Binds the inputs the importer needs as constants (those that
    the value it names is computed from), until it needs no more."""
    values = dict(inputs) if bind_all else {}
    while True:
        try:
            return kiln.frontend.from_onnx(model, values=values), values
        except kiln.ValueError as error:
            match = CONSTANT_INPUT.search(str(error))
            needed = [] if bind_all or match is None else [
                name for name in graph_inputs_behind(model, match.group(1), inputs)
                if name not in values]
            if not needed:
                raise
            values.update({name: inputs[name] for name in needed})


def evaluate_by_folding(mod):
    mod = kiln.transform.FoldConstant()(kiln.transform.InferType()(mod))
    body = mod["main"].body
    fields = body.fields if isinstance(body, kiln.ir.Tuple) else [body]
    results = []
    for field in fields:
        if not isinstance(field, kiln.ir.Constant):
            raise RuntimeError("the module did not fold to constants: " + type(field).__name__)
        results.append(field.data.numpy().copy())
    return results


def run_case(case_dir, use_build):
    model, inputs, expected = load_case(case_dir)
    mod, bound = import_case(model, inputs, bind_all=not use_build)
    if use_build:
        params = {name: value for name, value in inputs.items() if name not in bound}
        got = kiln.build(mod).run(**params)
    else:
        got = evaluate_by_folding(mod)
    if len(got) != len(expected):
        raise AssertionError(f"{len(got)} outputs, expected {len(expected)}")
    for i, (out, ref) in enumerate(zip(got, expected)):
        out = np.asarray(out)
        if out.dtype != ref.dtype or out.shape != ref.shape:
            raise AssertionError(f"output {i}: {out.dtype}{list(out.shape)}, expected "
                                 f"{ref.dtype}{list(ref.shape)}")
        np.testing.assert_allclose(out, ref, rtol=RTOL, atol=ATOL, err_msg=f"output {i}")


def classify(error):
    text = str(error)
    if "unsupported ONNX op" in text:
        return "unsupported op"
    if "must be a constant" in text:
        return "input must be a constant"
    return type(error).__name__ + ": " + text.splitlines()[0][:100]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--filter", default="", help="regex on case names")
    parser.add_argument("--data", default=DATA)
    parser.add_argument("--import-only", action="store_true")
    parser.add_argument("--fold", action="store_true",
                        help="evaluate by folding to constants even where kiln.build exists")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every failure")
    args = parser.parse_args()
    load_kiln_library("kiln_kernels_cpu")
    use_build = hasattr(kiln, "build") and not args.fold
    cases = sorted(c for c in os.listdir(args.data) if re.search(args.filter, c))
    imported, passed = 0, 0
    import_errors = collections.Counter()
    run_errors = collections.Counter()
    for case in cases:
        case_dir = os.path.join(args.data, case)
        try:
            model, inputs, _ = load_case(case_dir)
            import_case(model, inputs, bind_all=False)
        except Exception as error:  # noqa: BLE001 (a census: every failure is counted)
            import_errors[classify(error)] += 1
            if args.verbose:
                print(f"IMPORT {case}: {str(error).splitlines()[0][:300]}")
            continue
        imported += 1
        if args.import_only:
            continue
        try:
            run_case(case_dir, use_build)
            passed += 1
        except Exception as error:  # noqa: BLE001
            run_errors[classify(error)] += 1
            if args.verbose:
                print(f"RUN    {case}: {str(error).splitlines()[0][:300]}")
    print(f"{len(cases)} cases: {imported} import", end="")
    if not args.import_only:
        how = "kiln.build" if use_build else "FoldConstant"
        print(f", {passed} pass end to end ({how})", end="")
    print()
    for title, counter in (("import failures", import_errors), ("run failures", run_errors)):
        if counter:
            print(title + ":")
            for reason, count in counter.most_common(25):
                print(f"  {count:4d}  {reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
