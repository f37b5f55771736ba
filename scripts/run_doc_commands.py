#!/usr/bin/python3
"""Runs the shell commands of a Markdown tutorial, so the doc and the test cannot drift apart.

Every fenced block opened with ```sh is run, in the order of the document, as one bash script
(`set -euo pipefail`) in an empty work folder; other blocks (```console, ```text, ```python,
```cmake, ...) are for reading only. The script echoes each block's first line as it goes, and a
failure names the block (its line in the document) whose command failed.

    scripts/run_doc_commands.py docs/extending.md [--workdir DIR] [--keep] [--list]

The doc's commands may use $KILN_PREFIX (an installed Kiln) and $KILN_SOURCE (a Kiln checkout);
this script sets KILN_SOURCE to the repository holding it when it is unset and refuses to run
without KILN_PREFIX.
"""
import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FENCE = re.compile(r"^```(\w*)\s*$")


def shell_blocks(markdown_path):
    """(first line number, text) of each ```sh block, in order."""
    blocks = []
    language, start, lines = None, 0, []
    with open(markdown_path, encoding="utf-8") as doc:
        for number, line in enumerate(doc, start=1):
            fence = FENCE.match(line.rstrip("\n"))
            if fence and language is None:
                language, start, lines = fence.group(1), number + 1, []
            elif line.rstrip("\n") == "```" and language is not None:
                if language == "sh":
                    blocks.append((start, "".join(lines)))
                language = None
            elif language is not None:
                lines.append(line)
    if language is not None:
        sys.exit(f"{markdown_path}: the block opened at line {start - 1} is never closed")
    return blocks


def script_for(markdown_path, blocks):
    """One bash script running every block, reporting which block failed."""
    name = os.path.relpath(markdown_path, REPO)
    parts = ["set -euo pipefail", "kiln_doc_block=none",
             f"trap 'echo \"{name}: the block at line $kiln_doc_block failed\" >&2' ERR"]
    for start, text in blocks:
        first = text.strip().splitlines()[0] if text.strip() else ""
        parts.append(f"kiln_doc_block={start}")
        parts.append(f"echo {shlex.quote(f'==> {name}:{start}: {first}')}")
        parts.append(text)
    return "\n".join(parts) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("markdown", help="the tutorial, e.g. docs/extending.md")
    parser.add_argument("--workdir", help="where to run (default: a new temporary folder)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary work folder")
    parser.add_argument("--list", action="store_true", help="print the script, run nothing")
    args = parser.parse_args()

    blocks = shell_blocks(args.markdown)
    if not blocks:
        sys.exit(f"{args.markdown}: no ```sh blocks to run")
    script = script_for(os.path.abspath(args.markdown), blocks)
    if args.list:
        print(script, end="")
        return 0
    if not os.environ.get("KILN_PREFIX"):
        sys.exit("set KILN_PREFIX to an installed Kiln (scripts/setup.sh installs one into "
                 f"{os.path.join(REPO, 'install')})")
    env = dict(os.environ)
    env.setdefault("KILN_SOURCE", REPO)
    workdir = args.workdir or tempfile.mkdtemp(prefix="kiln-doc-")
    os.makedirs(workdir, exist_ok=True)
    print(f"running {len(blocks)} block(s) of {args.markdown} in {workdir}", flush=True)
    try:
        return subprocess.run(["bash", "-c", script], cwd=workdir, env=env,
                              check=False).returncode
    finally:
        if not args.workdir and not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
