#!/usr/bin/env bash
# Checks that an installed Kiln prefix is relocatable: copied to another folder, with the
# original moved away (so that a hidden absolute path to it fails loudly), everything works
# from the copy alone.
#
#   bash scripts/check_relocatable.sh [PREFIX]     # default: KILN_PREFIX (<repo>/install)
#
# Before the move: every ELF file's run path is $ORIGIN-relative; no file of the prefix (ELF or
# text, lib/cmake/Kiln/*.cmake included) mentions the prefix's absolute path or the repository.
# From the copy: `kilnc --help`; `kilnc compile` + `kilnc run` of examples/onnx_demo's model;
# `import kiln` (PYTHONPATH=<copy>/lib/python3/dist-packages) loading its libraries, plugins
# and backends from the copy and building, running, exporting and reloading a model
# (scripts/check_kiln_package.py); examples/extension configured with
# CMAKE_PREFIX_PATH=<copy>, built and tested. The original is moved back on exit, whatever
# happens. Environment: scripts/common.sh.
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

prefix="$(realpath "${1:-$KILN_PREFIX}")"
[ -f "$prefix/lib/cmake/Kiln/KilnConfig.cmake" ] || {
  kiln_log "no Kiln installed in $prefix: run the build stage (or scripts/setup.sh) first"
  exit 1
}
work="$(mktemp -d "${TMPDIR:-/tmp}/kiln-relocate-XXXXXX")"
copy="$work/copied prefix" # a space: paths must be quoted everywhere, run paths included
moved="$prefix.moved-away.$$"

restore() {
  if [ -d "$moved" ]; then mv "$moved" "$prefix"; fi
  rm -rf "$work"
}
trap restore EXIT

is_elf() { [ "$(head -c 4 "$1" | od -An -c | tr -d ' ')" = '177ELF' ]; }

# ELF files under a folder (by their magic number, whatever their name).
elf_files() {
  find "$1" -type f -print0 | while IFS= read -r -d '' f; do
    if is_elf "$f"; then printf '%s\n' "$f"; fi
  done
}

check_run_paths() {
  local bad=0 f entry n=0
  while IFS= read -r f; do
    n=$((n + 1))
    while IFS= read -r entry; do
      [ -n "$entry" ] || continue
      # shellcheck disable=SC2016 # the literal text $ORIGIN, which the loader expands
      case "$entry" in
        '$ORIGIN' | '$ORIGIN/'*) ;;
        *) kiln_log "run path of ${f#"$prefix"/} is not \$ORIGIN-relative: $entry"; bad=1 ;;
      esac
    done < <(readelf -d "$f" | sed -n 's/.*R\(UN\)\?PATH.*\[\(.*\)\]/\2/p' | tr ':' '\n')
  done < <(elf_files "$prefix")
  [ "$n" -gt 0 ] || { kiln_log "no ELF file in $prefix"; return 1; }
  [ "$bad" = 0 ] || return 1
  kiln_log "ok: the run paths of $n ELF files are \$ORIGIN-relative"
}

check_no_absolute_paths() {
  local f bad=()
  # __pycache__ holds bytecode Python wrote when the prefix was imported: not installed files.
  while IFS= read -r f; do
    [ -n "$f" ] || continue
    # In ELF files, debug info records where objects were compiled: nothing reads it at run time.
    if is_elf "$f"; then
      strip --strip-debug -o "$work/stripped" "$f"
      grep -qF -e "$prefix" -e "$KILN_REPO" "$work/stripped" || continue
    fi
    bad+=("${f#"$prefix"/}")
  done < <(grep -rlF --exclude-dir=__pycache__ -e "$prefix" -e "$KILN_REPO" "$prefix" || true)
  if [ ${#bad[@]} -ne 0 ]; then
    kiln_log "files of the prefix that mention $prefix or $KILN_REPO (outside debug info):"
    printf '  %s\n' "${bad[@]}"
    return 1
  fi
  kiln_log "ok: no installed file mentions $prefix or $KILN_REPO outside debug info" \
    "(lib/cmake/Kiln included)"
}

check_kilnc() {
  "$copy/bin/kilnc" --help >/dev/null
  "$KILN_PYTHON" "$KILN_REPO/examples/onnx_demo/make_model.py" "$work/demo" >/dev/null
  "$copy/bin/kilnc" compile "$work/demo/demo.onnx" -o "$work/demo/demo.so" >/dev/null 2>&1
  "$copy/bin/kilnc" run "$work/demo/demo.so" --input "input=$work/demo/input.npy" >"$work/run.txt"
  grep -q '^output 0: float32 (1, 10)' "$work/run.txt" || {
    cat "$work/run.txt"
    kiln_log "kilnc run printed no (1, 10) output"
    return 1
  }
  local plugins
  plugins="$("$copy/bin/kilnc" plugins 2>&1)"
  if grep -qF "$prefix/" <<<"$plugins"; then
    kiln_log "kilnc plugins mentions the original prefix:"
    printf '%s\n' "$plugins"
    return 1
  fi
  # Discovery must tell backends from the libraries beside them: a fresh install lists no
  # failed plugin or backend.
  if grep -qw failed <<<"$plugins"; then
    kiln_log "kilnc plugins lists a failure on a fresh install:"
    printf '%s\n' "$plugins"
    return 1
  fi
  kiln_log "ok: kilnc --help, compile, run and plugins (none failed) from the copy"
}

check_python() {
  env -u KILN_PLUGIN_PATH -u KILN_RUNTIME_PATH PYTHONPATH="$copy/lib/python3/dist-packages" \
    PYTHONDONTWRITEBYTECODE=1 \
    "$KILN_PYTHON" "$KILN_REPO/scripts/check_kiln_package.py" "$copy" "$work"
}

check_cmake_consumer() {
  local build="$work/extension-build"
  kiln_quiet cmake -S "$KILN_REPO/examples/extension" -B "$build" -G Ninja \
    -DCMAKE_PREFIX_PATH="$copy" -DPython3_EXECUTABLE="$KILN_PYTHON"
  grep -qF "Kiln_DIR:PATH=$copy/lib/cmake/Kiln" "$build/CMakeCache.txt" || {
    kiln_log "examples/extension did not find Kiln in the copy:" \
      "$(grep Kiln_DIR "$build/CMakeCache.txt")"
    return 1
  }
  kiln_quiet cmake --build "$build" -j "$KILN_JOBS"
  kiln_quiet ctest --test-dir "$build" --output-on-failure -j "$KILN_JOBS"
  kiln_log "ok: examples/extension configured, built and tested against the copy (find_package)"
}

check_run_paths
check_no_absolute_paths
cp -a "$prefix" "$copy"
mv "$prefix" "$moved"
kiln_log "copied $prefix to $copy; the original is moved away until the end"
check_kilnc
check_python
check_cmake_consumer
kiln_log "the prefix is relocatable"
