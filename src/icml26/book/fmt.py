"""Keep the chapters' code cells to the book's line length, and their text form stable under jupytext.

The rendered book's code column holds about 84 characters of code at 1280 px (13 px
monospace, see ``book/_static/icml26.css``); the library's own line length
(``pyproject.toml``) is wider. :func:`format_chapter` applies ``ruff format`` (the
repository's ruff configuration, with :data:`LINE_LENGTH`) to every code cell of a
MyST notebook through jupytext, and writes the text back the way jupytext writes it,
so that opening a chapter in JupyterLab and saving it without an edit changes nothing.
``ruff format`` only changes layout (it checks that the formatted code parses to the
same syntax tree); string literals it cannot break stay long, and the book's style
sheet wraps them inside their box.

``python -m icml26 fmt`` formats every chapter; ``--check`` only reports (the tests run it).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

LINE_LENGTH = 80
FORMAT = "md:myst"


def _ruff() -> str:
    exe = Path(sys.executable).parent / "ruff"
    return str(exe) if exe.exists() else (shutil.which("ruff") or "ruff")


def lift_long_comments(source: str, line_length: int = LINE_LENGTH) -> str:
    """Move the trailing comment of a line longer than ``line_length`` onto its own line above it.

    ``ruff format`` keeps a trailing comment where it is and wraps the code around it,
    which splits a short statement over three lines; a comment on its own line reads
    better and changes nothing that runs. Sources that do not tokenize are returned as they are.
    """
    import io
    import tokenize

    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return source
    lines = source.split("\n")
    moves: dict[int, tuple[int, str]] = {}  # line index -> (column of the comment, comment)
    for i, tok in enumerate(tokens):
        if tok.type != tokenize.COMMENT:
            continue
        row, col = tok.start
        line = lines[row - 1]
        if len(line) <= line_length or not line[:col].strip():
            continue
        prev = tokens[i - 1]
        if prev.type == tokenize.STRING and prev.end[0] != prev.start[0]:
            continue  # after a multi-line string: leave it
        moves[row - 1] = (col, tok.string)
    for idx in sorted(moves, reverse=True):
        col, comment = moves[idx]
        line = lines[idx]
        indent = line[: len(line) - len(line.lstrip())]
        lines[idx] = line[:col].rstrip()
        lines.insert(idx, indent + comment)
    return "\n".join(lines)


def format_cells(sources: list[str], *, line_length: int = LINE_LENGTH, cwd: Path | None = None) -> list[str]:
    """``ruff format`` applied to code-cell sources (as cells of one notebook: trailing ``;`` and magics kept).

    Long trailing comments are lifted onto their own line first (:func:`lift_long_comments`).
    """
    if not sources:
        return []
    sources = [lift_long_comments(s, line_length) for s in sources]
    nb = {
        "cells": [{"cell_type": "code", "metadata": {}, "source": s, "outputs": [], "execution_count": None} for s in sources],
        "metadata": {"language_info": {"name": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    proc = subprocess.run(
        [_ruff(), "format", "--line-length", str(line_length), "--stdin-filename", "chapter.ipynb", "-"],
        input=json.dumps(nb), capture_output=True, text=True, cwd=cwd,
    )
    if proc.returncode != 0:
        raise ValueError(f"ruff format failed: {proc.stderr.strip()}")
    out = json.loads(proc.stdout)
    return ["".join(c["source"]) if isinstance(c["source"], list) else c["source"] for c in out["cells"]]


def formatted_text(path: str | Path, *, line_length: int = LINE_LENGTH) -> str:
    """The chapter's text as :func:`format_chapter` would write it."""
    import jupytext

    path = Path(path)
    nb = jupytext.read(path)
    code = [c for c in nb.cells if c.cell_type == "code"]
    for cell, src in zip(code, format_cells([c.source for c in code], line_length=line_length, cwd=path.parent)):
        cell.source = src.rstrip("\n")
    return jupytext.writes(nb, FORMAT)


def format_chapter(path: str | Path, *, check: bool = False, line_length: int = LINE_LENGTH) -> bool:
    """Format a chapter's code cells in place (or, with ``check``, only say whether it would change)."""
    path = Path(path)
    new = formatted_text(path, line_length=line_length)
    changed = new != path.read_text(encoding="utf-8")
    if changed and not check:
        path.write_text(new, encoding="utf-8")
    return changed


def round_trips(path: str | Path) -> bool:
    """Whether jupytext reads and writes the chapter back byte for byte (what a save in JupyterLab does)."""
    import jupytext

    path = Path(path)
    return jupytext.writes(jupytext.read(path), FORMAT) == path.read_text(encoding="utf-8")
