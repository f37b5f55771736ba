#!/usr/bin/env bash
# Builds the kiln wheel (from an installed prefix) offline with Debian's pip, setuptools and
# wheel and installs it into a fresh venv; then builds examples/extension against the venv's
# kiln (find_package), makes the my_ext wheel of it and installs it too ("install the core, then
# the extension"); checks both together from a folder outside the repository, PYTHONPATH unset.
#
#   bash scripts/check_wheels.sh [PREFIX] [OUT_DIR]  # default: KILN_PREFIX; wheels in OUT_DIR
#                                                    # (default: a temporary folder, removed)
#
# Checks in the venv: `import kiln` loads its libraries, plugins and backends from the venv and
# builds, runs, exports and reloads an ONNX model (plain and with dnnl); `import my_ext` (either
# order with kiln) loads libkiln_my_ext.so from the venv, its functions and pass work; the venv's
# `kilnc` compiles and runs a model. Environment: scripts/common.sh.
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

prefix="$(realpath "${1:-$KILN_PREFIX}")"
[ -f "$prefix/lib/python3/dist-packages/kiln/__init__.py" ] || {
  kiln_log "no Kiln with its Python package installed in $prefix: run the build stage first"
  exit 1
}
work="$(mktemp -d "${TMPDIR:-/tmp}/kiln-wheels-XXXXXX")"
trap 'rm -rf "$work"' EXIT
dist="$(realpath -m "${2:-$work/dist}")"
mkdir -p "$dist"
venv="$work/venv"

# pip_wheel SOURCE_DIR: the wheel of a setup.py project, built from a copy of it (setuptools
# writes build/ and *.egg-info next to setup.py), offline, with the interpreter's setuptools.
pip_wheel() {
  local copy
  copy="$work/src/$(basename "$1")"
  mkdir -p "$work/src" && cp -r "$1" "$copy"
  kiln_quiet "$KILN_PYTHON" -m pip wheel --no-index --no-build-isolation --no-deps --no-cache-dir \
    -w "$dist" "$copy"
}

# The core first: the kiln wheel, installed into a fresh venv (--system-site-packages: numpy and
# onnx from Debian).
install_kiln_wheel() {
  rm -f "$dist"/kiln-*.whl "$dist"/my_ext-*.whl
  KILN_PREFIX="$prefix" pip_wheel "$KILN_REPO/python/packaging"
  "$KILN_PYTHON" -m venv --system-site-packages "$venv"
  kiln_quiet "$venv/bin/pip" install --no-index --no-cache-dir "$dist"/kiln-*.whl
  kiln_log "built $(cd "$dist" && echo kiln-*.whl) and installed it into a fresh venv"
}

# Then the extension, built against the Kiln of the venv (the wheel's kiln/ folder is a prefix
# with lib/cmake/Kiln), never the prefix the wheel was made from; its wheel installed next to
# kiln's.
install_my_ext_wheel() {
  local kiln_dir ext_build="$work/extension-build" ext_stage="$work/extension-stage"
  kiln_dir="$(in_venv "$venv/bin/python" -c 'import kiln, os; print(os.path.dirname(kiln.__file__))')"
  kiln_quiet cmake -S "$KILN_REPO/examples/extension" -B "$ext_build" -G Ninja \
    -DCMAKE_PREFIX_PATH="$kiln_dir" -DPython3_EXECUTABLE="$KILN_PYTHON" -DBUILD_TESTING=OFF
  if grep -qF "$prefix" "$ext_build/build.ninja"; then
    kiln_log "examples/extension built against $prefix, not the venv's kiln ($kiln_dir)"
    return 1
  fi
  kiln_quiet cmake --build "$ext_build" -j "$KILN_JOBS"
  kiln_quiet cmake --install "$ext_build" --prefix "$ext_stage"
  MY_EXT_PREFIX="$ext_stage" pip_wheel "$KILN_REPO/examples/extension/python"
  kiln_quiet "$venv/bin/pip" install --no-index --no-cache-dir "$dist"/my_ext-*.whl
  kiln_log "built $(cd "$dist" && echo my_ext-*.whl) against the venv's kiln and installed it"
}

# In a folder outside the repository, with nothing pointing back at it or at the prefix.
in_venv() {
  (cd "$work/run" && env -u PYTHONPATH -u KILN_PLUGIN_PATH -u KILN_RUNTIME_PATH -u MY_EXT_PLUGIN \
    PYTHONDONTWRITEBYTECODE=1 "$@")
}

check_venv() {
  cp "$KILN_REPO/scripts/check_kiln_package.py" "$work/run/"
  in_venv "$venv/bin/python" check_kiln_package.py "$venv" "$work/run" --my-ext
  local order calls="print(my_ext.add_one(41), kiln.my_ext.greet('x'))"
  for order in "import my_ext, kiln" "import kiln, my_ext"; do
    [ "$(in_venv "$venv/bin/python" -c "$order; $calls")" = "42 Hello, x!" ] ||
      { kiln_log "'$order' then a my_ext call failed"; return 1; }
  done
  kiln_log "ok: my_ext works imported before and after kiln"
  in_venv "$venv/bin/kilnc" compile mlp.onnx -o mlp_kilnc.so >/dev/null 2>&1
  in_venv "$venv/bin/kilnc" run mlp_kilnc.so >"$work/run.txt"
  grep -q '^output 0: float32 (2, 4)' "$work/run.txt" || {
    cat "$work/run.txt"
    kiln_log "the venv's kilnc run printed no (2, 4) output"
    return 1
  }
  kiln_log "ok: the venv's kilnc compiles and runs a model"
}

mkdir -p "$work/run"
install_kiln_wheel
install_my_ext_wheel
check_venv
kiln_log "the kiln and my_ext wheels work together in a fresh venv"
