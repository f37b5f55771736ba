"""The Python rows of bench/ffi_call: Kiln's and tvm-ffi's calls timed with timeit in one process,
one repeat of each side in turn (the side that goes first alternates), so both see the same
machine. Run by run.py with the tvm-ffi venv's python and the build's kiln package on PYTHONPATH:

    python python_calls.py KILN_TESTING_PLUGIN TVM_FFI_FUNCTIONS_LIBRARY REPEAT NUMBER

Prints JSON: {"kiln": {case: [ns per call, one per repeat]}, "tvm_ffi": {...}, "info": {...}}.
Kiln's calls go to libkiln_testing.so (testing.*), tvm-ffi's to the library built from
tvm_ffi_peer/peer_functions.cc (bench.*): the same signatures and bodies, each loaded the way its
own framework loads a library of functions.
"""

import ctypes
import json
import sys
import timeit

TEXT = "k" * 32


def kiln_cases(plugin):
    import kiln

    kiln.load_plugin(plugin)
    nop = kiln.get_global_func("testing.nop")
    add = kiln.get_global_func("testing.add")
    string_len = kiln.get_global_func("testing.string_len")
    assert add(1, 2) == 3 and string_len(TEXT) == 32
    empty = lambda: None  # noqa: E731  (the reference row: a Python-to-Python call)
    return {
        "py_nop": ("nop()", {"nop": nop}),
        "py_add": ("add(1, 2)", {"add": add}),
        "py_string32": ("string_len(text)", {"string_len": string_len, "text": TEXT}),
        "py_lambda": ("empty()", {"empty": empty}),
    }


def tvm_ffi_cases(functions_library):
    import tvm_ffi

    # Its static initializers register bench.* in the registry of the libtvm_ffi.so that tvm_ffi
    # has loaded (the same file, found through the library's RUNPATH). Kept for the whole run.
    tvm_ffi_cases.library = ctypes.CDLL(functions_library, mode=ctypes.RTLD_LOCAL)
    nop = tvm_ffi.get_global_func("bench.nop")
    add = tvm_ffi.get_global_func("bench.add")
    string_len = tvm_ffi.get_global_func("bench.string_len")
    assert add(1, 2) == 3 and string_len(TEXT) == 32
    tvm_ffi_cases.release_gil = all(f.release_gil for f in (nop, add, string_len))
    tvm_ffi_cases.version = tvm_ffi.__version__
    return {
        "py_nop": ("nop()", {"nop": nop}),
        "py_add": ("add(1, 2)", {"add": add}),
        "py_string32": ("string_len(text)", {"string_len": string_len, "text": TEXT}),
    }


def main():
    plugin, functions_library, repeat, number = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:5])
    sides = {"kiln": kiln_cases(plugin), "tvm_ffi": tvm_ffi_cases(functions_library)}
    per_call = {side: {case: [] for case in cases} for side, cases in sides.items()}
    order = list(sides)
    for r in range(repeat):
        for side in order if r % 2 == 0 else order[::-1]:
            for case, (stmt, env) in sides[side].items():
                seconds = timeit.timeit(stmt, globals=env, number=number)
                per_call[side][case].append(seconds / number * 1e9)
    per_call["info"] = {"tvm_ffi_version": tvm_ffi_cases.version,
                        "tvm_ffi_release_gil": tvm_ffi_cases.release_gil}
    print(json.dumps(per_call))


if __name__ == "__main__":
    main()
