#!/usr/bin/env bash
# README command 2: runs every test and check, stage by stage, and ends with `N passed, M failed`.
#
#   bash scripts/test.sh              # all stages
#   bash scripts/test.sh format tidy  # only these stages
#
# Stages:
#   build      configure (once) + build build/ and install it into install/
#   ctest      every test of build/: GoogleTest (label unit), pytest (python.ffi, python.models)
#   asan       build-asan/: clang-14 with address+undefined sanitizers, `ctest -L unit`
#   tsan       build-tsan/: clang-14 with ThreadSanitizer, the concurrency tests (one Executable
#              run from many threads, on Kiln's path and each plugin), the thread pool and the
#              graph executor
#   fuzz       libFuzzer (build-asan/) on every parser and loader of untrusted input (see
#              stage_fuzz), a bounded number of inputs each
#   format     clang-format-14 --dry-run --Werror over the repository's C/C++ files
#   tidy       clang-tidy (.clang-tidy) over src/, with build/compile_commands.json, without the
#              clang static analyzer's checks (they take 80% of its time: 12 minutes on 2 cores)
#   analyze    not run by default: the clang static analyzer's checks of .clang-tidy alone; run it
#              before committing, on the files changed (KILN_TIDY_FILES=regex, default all of src/)
#   extension  docs/extending.md followed word for word (scripts/run_doc_commands.py, in
#              build-tutorial/): examples/extension copied, built against install/ only and
#              tested, a model with its op, pass and codegen plus dnnl compiled, exported and run
#              runtime-only; plugins/ built against install/ only
#   package    install/ relocated (scripts/check_relocatable.sh); the kiln and my_ext wheels in a
#              fresh venv (scripts/check_wheels.sh); examples/extension with Kiln as a subproject
#              (add_subdirectory, build-subproject/); the .deb (cpack), installed and removed
#              again when run as root (scripts/check_deb.sh)
#
# A failing stage does not stop the others; stages that need the build are skipped (and count
# as failed) when it fails. Exit status is non-zero when any stage failed.
# Environment: KILN_BUILD_DIR, KILN_PREFIX, KILN_JOBS (scripts/common.sh), KILN_ASAN_COMPILER
# (clang, the default, or gcc).
set -euo pipefail
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

KILN_ASAN_BUILD_DIR="$KILN_REPO/build-asan"
KILN_TUTORIAL_DIR="$KILN_REPO/build-tutorial"  # where the extension stage follows docs/extending.md
KILN_ASAN_COMPILER="${KILN_ASAN_COMPILER:-clang}"
KILN_TSAN_BUILD_DIR="$KILN_REPO/build-tsan"
ALL_STAGES=(build ctest asan tsan fuzz format tidy extension package)

# ---- stages ---------------------------------------------------------------------------------

stage_build() {
  kiln_build_and_install
}

stage_ctest() {
  ctest --test-dir "$KILN_BUILD_DIR" --output-on-failure -j "$KILN_JOBS"
}

stage_asan() {
  local cc cxx
  case "$KILN_ASAN_COMPILER" in
    clang) cc=clang-14 cxx=clang++-14 ;;
    gcc) cc=gcc cxx=g++ ;;
    *) kiln_log "KILN_ASAN_COMPILER must be clang or gcc, not '$KILN_ASAN_COMPILER'"; return 2 ;;
  esac
  cmake -S "$KILN_REPO" -B "$KILN_ASAN_BUILD_DIR" -G Ninja \
    -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" \
    -DCMAKE_BUILD_TYPE=Debug \
    -DKILN_SANITIZE=address,undefined \
    -DKILN_BUILD_FUZZERS="$([ "$KILN_ASAN_COMPILER" = clang ] && echo ON || echo OFF)" \
    -DKILN_BUILD_PYTHON=OFF -DKILN_BUILD_BENCH=OFF >/dev/null
  cmake --build "$KILN_ASAN_BUILD_DIR" -j "$KILN_JOBS"
  ASAN_OPTIONS="detect_leaks=1:strict_string_checks=1:check_initialization_order=1" \
    UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
    ctest --test-dir "$KILN_ASAN_BUILD_DIR" -L unit --output-on-failure -j "$KILN_JOBS"
}

# Only the tests about threads are built: ThreadSanitizer slows code 5-15x, and the rest of the
# unit tests run single-threaded under ASan already. oneDNN's and OpenBLAS's OpenMP threads are
# not instrumented; tests/tsan.supp says which of their reports to ignore, and why.
KILN_TSAN_TESTS=(kiln_concurrency_tests kiln_runtime_tests kiln_graph_executor_tests)
stage_tsan() {
  cmake -S "$KILN_REPO" -B "$KILN_TSAN_BUILD_DIR" -G Ninja \
    -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKILN_SANITIZE=thread \
    -DKILN_BUILD_FUZZERS=OFF -DKILN_BUILD_PYTHON=OFF -DKILN_BUILD_BENCH=OFF >/dev/null
  cmake --build "$KILN_TSAN_BUILD_DIR" -j "$KILN_JOBS" --target "${KILN_TSAN_TESTS[@]}"
  local test failed=0
  for test in "${KILN_TSAN_TESTS[@]}"; do
    # allocator_may_return_null: tests ask for impossible sizes on purpose and expect an error.
    TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:allocator_may_return_null=1:suppressions=$KILN_REPO/tests/tsan.supp" \
      "$KILN_TSAN_BUILD_DIR/tests/cpp/$test" --gtest_brief=1 || failed=1
  done
  return "$failed"
}

# Fuzzes the artifact reader, the ONNX importer, the kernel program loader, the JSON graph
# runtime loader, the IR text parser and the size-expression parser from the corpora kept in
# the repository (plus
# fresh artifact seeds); a crash leaves its input in build-asan/fuzz-artifacts/. Each run is
# KILN_FUZZ_RUNS inputs (default 300000) from seed KILN_FUZZ_SEED (default 1), so CI is
# repeatable: the same commit fuzzes the same inputs. KILN_FUZZ_SECONDS (default 60) caps each
# run. For exploratory fuzzing: KILN_FUZZ_SEED=0 (random) KILN_FUZZ_RUNS=-1 KILN_FUZZ_SECONDS=600.
KILN_FUZZ_TARGETS=(artifact onnx kernel_program json_runtime ir_text size_expr tir_text)
stage_fuzz() {
  local target
  for target in "${KILN_FUZZ_TARGETS[@]}"; do
    [ -x "$KILN_ASAN_BUILD_DIR/tests/fuzz/kiln_${target}_fuzzer" ] || {
      kiln_log "no kiln_${target}_fuzzer in $KILN_ASAN_BUILD_DIR/tests/fuzz: the asan stage" \
        "builds the fuzzers (with clang)"
      return 1
    }
  done
  mkdir -p "$KILN_ASAN_BUILD_DIR/fuzz-artifacts"
  # Two at a time: each libFuzzer run uses one core.
  fuzz_pair artifact onnx && fuzz_pair kernel_program json_runtime && fuzz_pair ir_text size_expr &&
    fuzz_target tir_text
}

# fuzz_pair A B: fuzz_target A and B side by side, each into a log of its own, printed once
# both are done (interleaved libFuzzer output would be unreadable); fails when either does.
fuzz_pair() {
  local log_a log_b pid_a pid_b rc_a=0 rc_b=0
  log_a="$(mktemp)"
  log_b="$(mktemp)"
  fuzz_target "$1" >"$log_a" 2>&1 &
  pid_a=$!
  fuzz_target "$2" >"$log_b" 2>&1 &
  pid_b=$!
  wait "$pid_a" || rc_a=$?
  wait "$pid_b" || rc_b=$?
  kiln_log "---- fuzz: $1" && cat "$log_a"
  kiln_log "---- fuzz: $2" && cat "$log_b"
  rm -f "$log_a" "$log_b"
  [ "$rc_a" -eq 0 ] && [ "$rc_b" -eq 0 ]
}

# The inputs one CI run of TARGET tries. IR text: each input is parsed, printed, parsed and
# printed again (650 to 1,500 inputs/s on a core), so 20,000 take 15-30 s. Size expressions:
# ~3,500 inputs/s.
fuzz_runs() {
  case "$1" in
    ir_text | tir_text) echo 20000 ;;
    size_expr) echo 100000 ;;
    *) echo 300000 ;;
  esac
}

# fuzz_target TARGET: one bounded run of kiln_<TARGET>_fuzzer over a fresh working corpus
# seeded from tests/fuzz/corpus/<TARGET>, with tests/fuzz/<TARGET>.dict when there is one (a
# text format's keywords get mutations past its lexer).
fuzz_target() {
  local target=$1
  local corpus="$KILN_ASAN_BUILD_DIR/fuzz-corpus-$target"
  rm -rf "$corpus" && mkdir -p "$corpus"
  # Fresh artifacts of this build, so the seeds follow the current format.
  [ "$target" != artifact ] || "$KILN_ASAN_BUILD_DIR/tests/fuzz/kiln_artifact_fuzz_seeds" "$corpus"
  local dict=()
  [ ! -f "$KILN_REPO/tests/fuzz/$target.dict" ] || dict=(-dict="$KILN_REPO/tests/fuzz/$target.dict")
  KILN_FUZZ_RUNS="${KILN_FUZZ_RUNS:-$(fuzz_runs "$target")}" \
    run_fuzzer "$KILN_ASAN_BUILD_DIR/tests/fuzz/kiln_${target}_fuzzer" "${dict[@]}" "$corpus" \
    "$KILN_REPO/tests/fuzz/corpus/$target"
}

# run_fuzzer FUZZER CORPUS... : one bounded libFuzzer run under ASan/UBSan.
run_fuzzer() {
  local fuzzer=$1
  shift
  ASAN_OPTIONS="detect_leaks=1" UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
    "$fuzzer" -seed="${KILN_FUZZ_SEED:-1}" -runs="${KILN_FUZZ_RUNS:-300000}" \
    -max_total_time="${KILN_FUZZ_SECONDS:-60}" -timeout=10 -print_final_stats=1 \
    -artifact_prefix="$KILN_ASAN_BUILD_DIR/fuzz-artifacts/" "$@"
}

# Tracked C/C++ files, plus new files git does not ignore (so a check before `git add` sees them).
list_c_cxx_files() {
  if git -C "$KILN_REPO" rev-parse --git-dir >/dev/null 2>&1; then
    git -C "$KILN_REPO" ls-files --cached --others --exclude-standard -- \
      '*.c' '*.cc' '*.cpp' '*.h' '*.hpp' | sort -u
  else
    (cd "$KILN_REPO" && find include src tests python bench examples tools plugins backends \
      -name '*.[ch]' -o -name '*.cc' -o -name '*.[ch]pp' 2>/dev/null | sort)
  fi
}

stage_format() {
  local files=() file
  while IFS= read -r file; do
    [ -f "$KILN_REPO/$file" ] && files+=("$file")
  done < <(list_c_cxx_files)
  kiln_log "checking ${#files[@]} files with $(clang-format-14 --version)"
  local bad=()
  for file in "${files[@]}"; do
    if ! (cd "$KILN_REPO" && clang-format-14 --dry-run --Werror "$file" >/dev/null 2>&1); then
      bad+=("$file")
    fi
  done
  if [ ${#bad[@]} -ne 0 ]; then
    (cd "$KILN_REPO" && clang-format-14 --dry-run --Werror "${bad[@]}" 2>&1 | head -n 80) || true
    kiln_log "${#bad[@]} file(s) need formatting:"
    printf '  %s\n' "${bad[@]}"
    kiln_log "fix with: clang-format-14 -i ${bad[*]}"
    return 1
  fi
}

stage_tidy() { run_clang_tidy '-clang-analyzer-*'; }
stage_analyze() {
  run_clang_tidy '-bugprone-*,-performance-*,-modernize-*,-misc-*,-readability-*,-google-*'
}

# Usage: run_clang_tidy CHECKS, applied after .clang-tidy's list (they remove families from it).
run_clang_tidy() {
  local checks=$1
  [ -f "$KILN_BUILD_DIR/compile_commands.json" ] || {
    kiln_log "no $KILN_BUILD_DIR/compile_commands.json: run the build stage first"
    return 1
  }
  local log clean rc=0
  log="$(mktemp)"
  clean="$(mktemp)"
  run-clang-tidy-14 -p "$KILN_BUILD_DIR" -j "$KILN_JOBS" -quiet -checks="$checks" \
    "${KILN_TIDY_FILES:-^$KILN_REPO/src/}" >"$log" 2>&1 ||
    rc=$?
  # run-clang-tidy-14 colours its output even into a file; strip the escapes and the chatter.
  local chatter='^clang-tidy-14 .* -quiet |^[0-9]+ warnings? (and [0-9]+ errors? )?generated\.$'
  chatter+='|^Suppressed [0-9]+ warnings|^Use -header-filter|^Running clang-tidy|^$'
  sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -vE "$chatter" >"$clean" || true
  cat "$clean"
  if [ "$rc" -ne 0 ]; then
    kiln_log ""
    kiln_log "clang-tidy findings (file:line: message [check]):"
    grep -E '^/[^ :]+:[0-9]+:[0-9]+: (warning|error): ' "$clean" | sed "s#^$KILN_REPO/##" | sort -u ||
      kiln_log "  (none parsed; see the output above)"
  fi
  rm -f "$log" "$clean"
  return "$rc"
}

# The paths under the repository that an out-of-tree build may mention: its own sources, its
# own build tree and the install prefix. Anything else (include/, src/, build/) means it did not
# build against the installed package alone.
# Usage: check_install_only_references WHAT BUILD_DIR SOURCE_DIR BINARY...
check_install_only_references() {
  local what=$1 build_dir=$2 source_dir=$3
  shift 3
  local -a files=("$build_dir/compile_commands.json" "$build_dir/build.ninja")
  local allowed=("$KILN_PREFIX" "$source_dir" "$build_dir")
  local refs bad=() ref ok a
  refs="$(grep -ohE "$KILN_REPO(/[^[:space:]\"';:\\]*)?" "${files[@]}" | sort -u)"
  # Binaries: where they look for libraries at run time.
  for bin in "$@"; do
    refs+=$'\n'"$(readelf -d "$bin" | sed -n 's/.*R\(UN\)\?PATH.*\[\(.*\)\]/\2/p' | tr ':' '\n')"
  done
  while IFS= read -r ref; do
    [ -n "$ref" ] || continue
    case "$ref" in "$KILN_REPO"*) ;; *) continue ;; esac
    ok=0
    for a in "${allowed[@]}"; do
      if [ "$ref" = "$a" ] || [ "${ref#"$a"/}" != "$ref" ]; then ok=1; fi
    done
    [ "$ok" = 1 ] || bad+=("$ref")
  done <<<"$refs"
  if ! grep -q -- "$KILN_PREFIX/include" "$build_dir/compile_commands.json"; then
    kiln_log "$what: the compile lines do not use $KILN_PREFIX/include"
    return 1
  fi
  if [ ${#bad[@]} -ne 0 ]; then
    kiln_log "$what: the build refers to Kiln's source or build tree, not only $KILN_PREFIX:"
    printf '  %s\n' "${bad[@]}" | sort -u
    return 1
  fi
  kiln_log "$what: compile lines, link lines and run paths refer only to $KILN_PREFIX"
}

stage_extension() {
  [ -f "$KILN_PREFIX/lib/cmake/Kiln/KilnConfig.cmake" ] || {
    kiln_log "no Kiln installed in $KILN_PREFIX: run the build stage (or scripts/setup.sh) first"
    return 1
  }
  # The tutorial, word for word: it copies examples/extension, builds it against the prefix,
  # runs its tests, then compiles, exports and runs a model with its op, pass and codegen.
  rm -rf "$KILN_TUTORIAL_DIR"
  KILN_SOURCE="$KILN_REPO" KILN_PREFIX="$KILN_PREFIX" "$KILN_PYTHON" \
    "$KILN_REPO/scripts/run_doc_commands.py" "$KILN_REPO/docs/extending.md" \
    --workdir "$KILN_TUTORIAL_DIR"
  local ext="$KILN_TUTORIAL_DIR/my_ext"
  check_install_only_references "examples/extension" "$ext/build" "$ext" \
    "$ext/build/libkiln_my_ext.so" "$ext/build/libkiln_runtime_my_ext.so" \
    "$ext/build/my_ext_test" "$ext/build/my_ext_hello"
  # The BYOC plugins, which Kiln's own build adds as folders, built as the out-of-tree projects
  # they claim to be: from the installed package alone.
  kiln_build_plugins_out_of_tree
  local -a plugin_libs
  mapfile -t plugin_libs < <(find "$KILN_PLUGINS_BUILD_DIR" -name 'libkiln_*.so')
  [ ${#plugin_libs[@]} -gt 0 ] || { kiln_log "plugins/: nothing was built"; return 1; }
  kiln_log "plugins/ built out of tree: ${plugin_libs[*]##*/}"
  check_install_only_references "plugins/" "$KILN_PLUGINS_BUILD_DIR" "$KILN_REPO/plugins" \
    "${plugin_libs[@]}"
}

# Distribution: the installed prefix works from anywhere, the wheels work together in a venv,
# and a project that vendors Kiln (a git submodule) builds it with add_subdirectory, using the
# same Kiln:: targets and kiln_add_plugin() as against an install (docs/packaging.md).
stage_package() {
  bash "$KILN_REPO/scripts/check_relocatable.sh" "$KILN_PREFIX"
  bash "$KILN_REPO/scripts/check_wheels.sh" "$KILN_PREFIX"
  kiln_build_extension_with_kiln_subproject
  ctest --test-dir "$KILN_SUBPROJECT_BUILD_DIR" --output-on-failure -j "$KILN_JOBS"
  bash "$KILN_REPO/scripts/check_deb.sh"
}

# ---- driver ---------------------------------------------------------------------------------

needs_build() {
  case "$1" in ctest | tidy | analyze | extension | package) return 0 ;; *) return 1 ;; esac
}

stages=("$@")
[ ${#stages[@]} -ne 0 ] || stages=("${ALL_STAGES[@]}")
for s in "${stages[@]}"; do
  if ! declare -F "stage_$s" >/dev/null; then
    kiln_log "unknown stage '$s'; stages: ${ALL_STAGES[*]}, and analyze (not run by default)"
    exit 2
  fi
done

passed=0
failed=0
results=()
build_failed=0
total_start=$SECONDS
for s in "${stages[@]}"; do
  kiln_log ""
  kiln_log "==== test: $s"
  start=$SECONDS
  if [ "$build_failed" = 1 ] && needs_build "$s"; then
    rc=1
    kiln_log "skipped: the build stage failed"
  else
    # A subshell with errexit of its own: a stage stops at its first failing command, and the
    # driver goes on to the next stage.
    set +e
    (
      set -euo pipefail
      "stage_$s"
    )
    rc=$?
    set -e
  fi
  took="$(kiln_fmt_duration $((SECONDS - start)))"
  if [ "$rc" -eq 0 ]; then
    passed=$((passed + 1))
    results+=("  PASS  $s ($took)")
    kiln_log "==== test: $s passed in $took"
  else
    failed=$((failed + 1))
    results+=("  FAIL  $s ($took)")
    kiln_log "==== test: $s FAILED in $took (exit status $rc)"
    [ "$s" != build ] || build_failed=1
  fi
done

kiln_log ""
kiln_log "==== summary ($(kiln_fmt_duration $((SECONDS - total_start))))"
printf '%s\n' "${results[@]}"
kiln_log "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
