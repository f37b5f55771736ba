#!/usr/bin/env bash
# README command 1: installs what Kiln needs (Debian packages, only those missing), builds it
# (build/, RelWithDebInfo, ccache when present), installs it into install/, then runs the demos:
# an ONNX model compiled with `kilnc compile` and run with `kilnc run` and from Python
# (examples/onnx_demo), and examples/extension built against install/ as an out-of-tree
# project, its plugin loaded and called from C++ and from Python.
#
#   bash scripts/setup.sh
#
# Environment: KILN_BUILD_DIR, KILN_PREFIX, KILN_JOBS (see scripts/common.sh).
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

step() {
  local name=$1
  shift
  kiln_log ""
  kiln_log "==== setup: $name"
  local start=$SECONDS
  "$@"
  kiln_log "==== setup: $name done in $(kiln_fmt_duration $((SECONDS - start)))"
}

onnx_demo() {
  local dir="$KILN_BUILD_DIR/onnx_demo"
  "$KILN_PYTHON" "$KILN_REPO/examples/onnx_demo/make_model.py" "$dir"
  "$KILN_PREFIX/bin/kilnc" compile "$dir/demo.onnx" -o "$dir/demo.so" 2>/dev/null
  "$KILN_PREFIX/bin/kilnc" run "$dir/demo.so" --input "input=$dir/input.npy" --repeat 50
  PYTHONPATH="$KILN_PREFIX/lib/python3/dist-packages" "$KILN_PYTHON" - "$dir" <<'PY'
import sys

import numpy as np

import kiln

model = kiln.load_module(f"{sys.argv[1]}/demo.so")
(probabilities,) = model.run(input=np.load(f"{sys.argv[1]}/input.npy"))
print(f"Python: {model} -> class {int(probabilities.argmax())}, p = {probabilities.max():.4f}")
PY
}

demo() {
  kiln_quiet kiln_build_extension
  local plugin="$KILN_EXTENSION_BUILD_DIR/libkiln_my_ext.so"
  "$KILN_EXTENSION_BUILD_DIR/my_ext_hello" "$plugin"
  PYTHONPATH="$KILN_PREFIX/lib/python3/dist-packages" "$KILN_PYTHON" - "$plugin" <<'PY'
import sys

import kiln

info = kiln.load_plugin(sys.argv[1])
print(f"Python: loaded {info['path']} ({info['name']} {info['version']})")
print(f"Python: my_ext.add_one(41) = {kiln.get_global_func('my_ext.add_one')(41)}")
print(f"Python: kiln.my_ext.greet('Kiln') = {kiln.my_ext.greet('Kiln')!r}")
PY
}

total_start=$SECONDS
step "Debian packages" kiln_install_packages
step "build and install" kiln_build_and_install
step "demo: compile and run an ONNX model (examples/onnx_demo)" onnx_demo
step "demo: examples/extension against $KILN_PREFIX" demo
kiln_log ""
kiln_log "setup done in $(kiln_fmt_duration $((SECONDS - total_start)))." \
  "Kiln is installed in $KILN_PREFIX; run the tests with: bash scripts/test.sh"
