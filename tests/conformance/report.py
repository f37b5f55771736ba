"""Summaries of conformance results: the console table and docs/conformance.md.

Results are the dicts of case_eval.evaluate_case plus suite, name and seconds. The report groups
failures by reason (numbers and quoted names blanked out) so that the most common causes, the
ones worth fixing first, come first.
"""

import collections
import re
import subprocess

STATUSES = ("pass", "fail", "unsupported", "error")


def counts_by_suite(results, suites):
    """{suite: {status: count}} for each suite in ``suites`` plus "total"."""
    table = {suite: collections.Counter() for suite in list(suites) + ["total"]}
    for result in results.values():
        table.setdefault(result["suite"], collections.Counter())[result["status"]] += 1
        table["total"][result["status"]] += 1
    return table


def _nothing_bound(result):
    """Whether a case ran as ONNX's own backend runner runs it: every input fed at run time,
    none compiled in as a constant nor its shape taken from the data."""
    return not result.get("bound_inputs") and not result.get("bound_shapes")


def _rows(results, suites):
    """[[suite, cases, pass, fail, unsupported, error, pass %, pass with nothing bound,
    its %]] including the total."""
    unbound = collections.Counter()
    for result in results.values():
        if result["status"] == "pass" and _nothing_bound(result):
            unbound[result["suite"]] += 1
            unbound["total"] += 1
    rows = []
    for suite, counts in counts_by_suite(results, suites).items():
        cases = sum(counts.values())
        percent = lambda n: f"{100.0 * n / cases:.1f}" if cases else "-"  # noqa: E731
        rows.append([suite, str(cases)] + [str(counts[s]) for s in STATUSES] +
                    [percent(counts["pass"]), str(unbound[suite]), percent(unbound[suite])])
    return rows


def _needs_training_or_strings(result):
    """Whether a case is out of reach of an inference compiler without string tensors: ONNX's
    training ops, Dropout in training mode, or string inputs and outputs."""
    detail = str(result.get("detail", ""))
    return result["status"] == "unsupported" and (
        detail.startswith("training op(s)") or "training_mode" in detail or "string tensor" in detail)


def inference_pass_rate(results, suite="node"):
    """(passing with nothing bound, cases) among ``suite``'s cases that need no training ops or
    strings: the bar the symbolic-shape work is held to (every input fed at run time)."""
    cases = [r for r in results.values()
             if r["suite"] == suite and not _needs_training_or_strings(r)]
    passed = sum(1 for r in cases if r["status"] == "pass" and _nothing_bound(r))
    return passed, len(cases)


def _inference_paragraph(results):
    passed, cases = inference_pass_rate(results)
    percent = f"{100.0 * passed / cases:.1f}" if cases else "-"
    return (f"Of the {cases} node cases that need neither training ops nor string tensors, "
            f"**{passed} ({percent}%) pass with every input fed at run time**, as ONNX's own "
            "backend runner feeds them.")


HEADER = ["suite", "cases"] + list(STATUSES) + ["pass %", "pass, nothing bound", "%"]


def summary_table(results, suites):
    """The per-suite counts as aligned plain text."""
    rows = [HEADER] + _rows(results, suites)
    widths = [max(len(row[i]) for row in rows) for i in range(len(HEADER))]
    lines = ["  ".join(cell.ljust(w) if i == 0 else cell.rjust(w)
                       for i, (cell, w) in enumerate(zip(row, widths))) for row in rows]
    lines.insert(1, "-" * len(lines[0]))
    return "\n".join(lines)


def markdown_table(header, rows):
    """A markdown table, or "None." without rows."""
    if not rows:
        return "None."
    escape = lambda cell: str(cell).replace("|", "\\|")  # noqa: E731
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(escape(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def reason_of(detail):
    """``detail`` with what differs between cases blanked out, to count causes: data set
    numbers, quoted names, numbers; a value mismatch is just 'wrong values'."""
    text = re.sub(r"^test_data_set_\d+: ", "", detail or "")
    if "elements differ" in text:
        return re.sub(r"^output \d+: .*", "wrong values (beyond rtol/atol)", text)
    text = re.sub(r"must be a constant \(.*", "must be a constant", text)  # the why is long
    text = re.sub(r"(?<!\w)'[^']*'(?!\w)", "'…'", text)  # a quoted name, not the "'s" after one
    text = re.sub(r"\[[-\d, ]*\]", "[…]", text)
    text = re.sub(r"\b\d+(\.\d+)?(e[-+]?\d+)?\b", "N", text)
    return text[:160]


def top_reasons(results, status, limit=None):
    """[(reason, case count)] of the results with ``status``, most common first."""
    counter = collections.Counter(reason_of(r["detail"]) for r in results.values()
                                  if r["status"] == status)
    return counter.most_common(limit)


def top_unsupported_ops(results, limit=None):
    """[(op, case count, opsets)] from the importer's 'Op (opset N)' entries, most cases
    first; a case counts once per op."""
    cases, opsets = collections.Counter(), collections.defaultdict(set)
    for result in results.values():
        seen = set()
        for entry in result.get("unsupported_ops") or []:
            match = re.match(r"(.+) \(opset (\d+)\)$", entry)
            op, opset = (match.group(1), match.group(2)) if match else (entry, "?")
            opsets[op].add(opset)
            seen.add(op)
        cases.update(seen)
    return [(op, n, ", ".join(sorted(opsets[op], key=lambda s: (len(s), s))))
            for op, n in cases.most_common(limit)]


def _git_commit():
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def _case_list(results, status):
    rows = [(f"{r['suite']}/{r['name']}", r["detail"])
            for _, r in sorted(results.items()) if r["status"] == status]
    return markdown_table(["case", "detail"], rows)


def _bound_paragraph(results, bound):
    """How many passes needed graph inputs bound as constants, each with its inputs in a
    collapsed list (long: every Reshape/Slice/Resize case of the node suite)."""
    text = (f"{len(bound)} passing case(s) were compiled with graph inputs bound as constants "
            "(`from_onnx(values=...)`, for inputs that decide a shape).")
    if not bound:
        return text
    items = "\n".join(f"- `{key}`: " + ", ".join(f"`{name}`" for name in
                                                 results[key]["bound_inputs"]) for key in bound)
    summary = "<details><summary>cases and bound inputs</summary>"
    return f"{text}\n\n{summary}\n\n{items}\n\n</details>"


def markdown(results, suites, command):
    """docs/conformance.md: the summary, the command, the top causes, the failing cases."""
    commit = _git_commit()
    bound = sorted(k for k, r in results.items() if r["status"] == "pass" and r.get("bound_inputs"))
    parts = [
        "# ONNX conformance",
        "ONNX's backend test cases (Debian's libonnx-testdata) through `kiln.frontend.from_onnx`, "
        "`kiln.build` and `Executable.run`, compared with the stored outputs at ONNX's "
        "tolerances (rtol 1e-3, atol 1e-7, NaNs equal; dtype and shape exact). Generated by "
        "[tests/conformance/run_conformance.py](../tests/conformance/run_conformance.py)"
        + (f" at commit `{commit}`" if commit else "") + ":",
        f"```sh\n{command}\n```",
        "A case is **pass**, **fail** (wrong values, dtype or shape; an error in `kiln.build` or "
        "`run`; a crash; a timeout), **unsupported** (Kiln says it lacks the op or feature: "
        "`kiln.NotImplementedError`, non-tensor or string data, training ops) or **error** "
        "(any other import error). The cases that pass are listed in "
        "[tests/conformance/expected_passes.txt](../tests/conformance/expected_passes.txt); "
        "`ctest -L conformance` fails when one of them stops passing.",
        "## Summary",
        markdown_table(HEADER, _rows(results, suites)),
        _inference_paragraph(results),
        _bound_paragraph(results, bound),
        "## Top unsupported ops",
        markdown_table(["op", "cases", "opsets"], top_unsupported_ops(results, 40)),
        "## Most common causes",
        "### fail",
        markdown_table(["reason", "cases"], top_reasons(results, "fail", 25)),
        "### error",
        markdown_table(["reason", "cases"], top_reasons(results, "error", 25)),
        "### unsupported (other than ops)",
        markdown_table(["reason", "cases"],
                       [(r, n) for r, n in top_reasons(results, "unsupported")
                        if "(opset N)" not in r]),
        "## Failing cases",
        _case_list(results, "fail"),
        "## Import errors",
        _case_list(results, "error"),
    ]
    return "\n\n".join(parts) + "\n"


def write_markdown(path, results, suites, command):
    with open(path, "w") as f:
        f.write(markdown(results, suites, command))
