"""Keep the chapters' code cells to the book's line length, and their text form stable under jupytext.

The rendered book's code column holds about 84 characters of code at 1280 px (13 px
monospace, see ``book/_static/icml26.css``); the library's own line length
(``pyproject.toml``) is wider. :func:`format_chapter` applies ``ruff format`` (the
repository's ruff configuration, with :data:`LINE_LENGTH`) to every code cell of a
MyST notebook through jupytext, and writes the text back the way jupytext writes it,
so that opening a chapter in JupyterLab and saving it without an edit changes nothing.
``ruff format`` only changes layout (it checks that the formatted code parses to the
same syntax tree); a one-line string literal that still runs long is then cut into
adjacent literals (:func:`split_long_strings`, the same string once compiled). What is
left long (a string at statement level, a long name) wraps inside its box (the book's
style sheet).

``python -m icml26 fmt`` formats every chapter; ``--check`` only reports (the tests run it).
"""

from __future__ import annotations

import json
import re
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
        moves[row - 1] = (col, tok.string.rstrip())
    for idx in sorted(moves, reverse=True):
        col, comment = moves[idx]
        line = lines[idx]
        indent = line[: len(line) - len(line.lstrip())]
        lines[idx] = line[:col].rstrip()
        lines.insert(idx, indent + comment)
    return "\n".join(lines)


_PREFIX = re.compile(r"^([rRfFbBuU]{0,2})(['\"])")


def _split_points(body: str, is_f: bool) -> list[int]:
    """Where a string literal's body may be cut: after a space outside ``{...}`` and not after a backslash."""
    out, depth, i = [], 0, 0
    while i < len(body):
        ch = body[i]
        if is_f and body.startswith(("{{", "}}"), i):
            i += 2
            continue
        if is_f and ch == "{":
            depth += 1
        elif is_f and ch == "}":
            depth = max(depth - 1, 0)
        elif ch == "\\":
            i += 2
            continue
        elif ch == " " and depth == 0 and i + 1 < len(body) and body[i + 1] != " ":
            out.append(i + 1)
        i += 1
    return out


def split_long_strings(source: str, line_length: int = LINE_LENGTH) -> str:
    """Cut a one-line string literal that runs past ``line_length`` into adjacent literals, one per line.

    Only literals inside brackets (a call's arguments, a list) are cut, at spaces outside
    f-string fields, so the pieces join back to the same string at compile time
    (``"a " "b" == "a b"``); triple-quoted strings and literals at statement level are left alone.
    """
    import io
    import tokenize

    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return source
    lines = source.split("\n")
    depth, edits = 0, []
    for tok in tokens:
        if tok.type == tokenize.OP and tok.string in "([{":
            depth += 1
        elif tok.type == tokenize.OP and tok.string in ")]}":
            depth -= 1
        elif tok.type == tokenize.STRING and depth > 0 and tok.start[0] == tok.end[0]:
            row, col = tok.start
            if len(lines[row - 1]) <= line_length:
                continue
            m = _PREFIX.match(tok.string)
            if not m or tok.string[len(m.group(0)) :].startswith(m.group(2) * 2):
                continue  # triple-quoted or empty
            prefix, quote = m.groups()
            body = tok.string[len(m.group(0)) : -1]
            width = line_length - col - len(prefix) - 3  # quotes and a trailing comma
            if width < 24:
                continue
            pieces, start = [], 0
            points = _split_points(body, "f" in prefix.lower())
            while len(body) - start > width:
                fit = [p for p in points if start < p <= start + width]
                if not fit:
                    break
                pieces.append(body[start : fit[-1]])
                start = fit[-1]
            pieces.append(body[start:])
            if len(pieces) > 1:
                edits.append((row - 1, col, tok.end[1], [f"{prefix}{quote}{p}{quote}" for p in pieces]))
    for idx, col, end, lits in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        line = lines[idx]
        lines[idx] = line[:col] + ("\n" + " " * col).join(lits) + line[end:]
    return "\n".join(lines)


def format_cells(sources: list[str], *, line_length: int = LINE_LENGTH, cwd: Path | None = None) -> list[str]:
    """``ruff format`` applied to code-cell sources (as cells of one notebook: trailing ``;`` and magics kept).

    Long trailing comments are lifted onto their own line first (:func:`lift_long_comments`).
    """
    if not sources:
        return []
    before = sources
    sources = [lift_long_comments(s, line_length) for s in sources]
    sources = _ruff_format(sources, line_length, cwd)  # first the layout, then the strings that still run long
    for _ in range(4):  # to a fixed point: a cut can move a string, whose line may then need another cut
        again = _ruff_format([split_long_strings(s, line_length) for s in sources], line_length, cwd)
        if again == sources:
            break
        sources = again
    for old, new in zip(before, sources):
        if _tree(old) != _tree(new):
            raise ValueError(f"formatting would change what this cell runs (a bug in icml26.book.fmt): {old[:120]!r}")
    return sources


def _tree(source: str) -> str | None:
    """The cell's syntax tree (adjacent string literals already joined), or ``None`` if it does not parse."""
    import ast

    try:
        return ast.dump(ast.parse(source))
    except SyntaxError:
        return None


def _ruff_format(sources: list[str], line_length: int, cwd: Path | None) -> list[str]:
    nb = {
        "cells": [{"cell_type": "code", "metadata": {}, "source": s, "outputs": [], "execution_count": None} for s in sources],
        "metadata": {"language_info": {"name": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    proc = subprocess.run(
        [_ruff(), "format", "--line-length", str(line_length), "--stdin-filename", "chapter.ipynb", "-"],
        input=json.dumps(nb),
        capture_output=True,
        text=True,
        cwd=cwd,
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
