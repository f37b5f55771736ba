# shellcheck shell=bash
# Shared by scripts/setup.sh and scripts/test.sh (sourced, not run).
#
# Knobs (environment): KILN_BUILD_DIR (default <repo>/build), KILN_PREFIX (default
# <repo>/install), KILN_JOBS (default: number of cores).

KILN_REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
KILN_BUILD_DIR="$(realpath -m "${KILN_BUILD_DIR:-$KILN_REPO/build}")"
KILN_PREFIX="$(realpath -m "${KILN_PREFIX:-$KILN_REPO/install}")"
KILN_JOBS="${KILN_JOBS:-$(nproc)}"
KILN_EXTENSION_BUILD_DIR="$KILN_REPO/build-extension"
KILN_PLUGINS_BUILD_DIR="$KILN_REPO/build-plugins"
KILN_SUBPROJECT_BUILD_DIR="$KILN_REPO/build-subproject"
# Debian's interpreter, whatever else is first on PATH (pyenv, venvs): Kiln builds against it.
KILN_PYTHON=/usr/bin/python3

# Debian packages the build, the tests and the checks need.
KILN_DEBIAN_PACKAGES=(
  cmake ninja-build g++ ccache git
  libdlpack-dev libgtest-dev libbenchmark-dev nlohmann-json3-dev
  ocl-icd-opencl-dev opencl-headers pocl-opencl-icd clinfo
  python3-dev python3-pytest python3-numpy
  python3-pip python3-wheel python3-venv python3-setuptools
  clang-14 clang-format clang-tidy libclang-rt-14-dev
  libonnx-dev libprotobuf-dev protobuf-compiler python3-onnx libonnx-testdata
  python3-torch python3-torchvision
  libdnnl-dev libopenblas-dev graphviz
  dpkg-dev file
)

kiln_log() { printf '%s\n' "$*"; }

kiln_fmt_duration() {
  local s=$1
  printf '%dm%02ds' $((s / 60)) $((s % 60))
}

# Installs the packages of KILN_DEBIAN_PACKAGES that are missing (apt-get update first).
kiln_install_packages() {
  local missing=() pkg
  for pkg in "${KILN_DEBIAN_PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
      missing+=("$pkg")
    fi
  done
  if [ ${#missing[@]} -eq 0 ]; then
    kiln_log "all ${#KILN_DEBIAN_PACKAGES[@]} Debian packages are installed"
    return 0
  fi
  kiln_log "installing missing Debian packages: ${missing[*]}"
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    if ! command -v sudo >/dev/null; then
      kiln_log "error: not root and no sudo; install as root: ${missing[*]}"
      return 1
    fi
    sudo=(sudo)
  fi
  "${sudo[@]}" apt-get update -q
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -q --no-install-recommends \
    "${missing[@]}"
}

# Configures, builds and installs the main tree.
kiln_build_and_install() {
  local first=()
  # The build type is chosen when the tree is created; later runs keep the tree's settings.
  [ -f "$KILN_BUILD_DIR/CMakeCache.txt" ] || first=(-DCMAKE_BUILD_TYPE=RelWithDebInfo)
  cmake -S "$KILN_REPO" -B "$KILN_BUILD_DIR" -G Ninja "${first[@]}" \
    -DPython3_EXECUTABLE="$KILN_PYTHON"
  cmake --build "$KILN_BUILD_DIR" -j "$KILN_JOBS"
  cmake --install "$KILN_BUILD_DIR" --prefix "$KILN_PREFIX" >/dev/null
  kiln_log "installed into $KILN_PREFIX"
}

# Builds examples/extension against the installed prefix, in its own tree.
kiln_build_extension() {
  rm -rf "$KILN_EXTENSION_BUILD_DIR"
  cmake -S "$KILN_REPO/examples/extension" -B "$KILN_EXTENSION_BUILD_DIR" -G Ninja \
    -DCMAKE_PREFIX_PATH="$KILN_PREFIX" \
    -DPython3_EXECUTABLE="$KILN_PYTHON"
  cmake --build "$KILN_EXTENSION_BUILD_DIR" -j "$KILN_JOBS"
}

# examples/extension with Kiln's source tree as a subproject (add_subdirectory), as a project
# that vendors Kiln as a git submodule builds it; kept between runs, so a rebuild is incremental.
kiln_build_extension_with_kiln_subproject() {
  cmake -S "$KILN_REPO/examples/extension" -B "$KILN_SUBPROJECT_BUILD_DIR" -G Ninja \
    -DMY_EXT_KILN_SOURCE_DIR="$KILN_REPO" -DPython3_EXECUTABLE="$KILN_PYTHON" >/dev/null
  cmake --build "$KILN_SUBPROJECT_BUILD_DIR" -j "$KILN_JOBS"
}

# plugins/ (the BYOC plugins) as an out-of-tree project against the installed Kiln.
kiln_build_plugins_out_of_tree() {
  rm -rf "$KILN_PLUGINS_BUILD_DIR"
  cmake -S "$KILN_REPO/plugins" -B "$KILN_PLUGINS_BUILD_DIR" -G Ninja \
    -DCMAKE_PREFIX_PATH="$KILN_PREFIX" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON
  cmake --build "$KILN_PLUGINS_BUILD_DIR" -j "$KILN_JOBS"
}

# Runs a command with its output in a log file; shows the log's end only if the command fails.
kiln_quiet() {
  local log
  log="$(mktemp)"
  if "$@" >"$log" 2>&1; then
    rm -f "$log"
  else
    local rc=$?
    tail -n 60 "$log"
    kiln_log "(failed with exit status $rc: $*; full output in $log)"
    return "$rc"
  fi
}
