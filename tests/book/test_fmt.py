"""Tests of icml26.book.fmt: code cells to the book's line length, nothing that runs changed."""

import ast

import pytest

from icml26.book import fmt


def test_long_trailing_comment_moves_above_its_line():
    src = 'scale = "ci"  # ' + "a comment " * 10 + "\nseed = 0  # short"
    out = fmt.lift_long_comments(src, 40)
    assert out.splitlines() == ["# " + ("a comment " * 10).rstrip(), 'scale = "ci"', "seed = 0  # short"]
    assert fmt.lift_long_comments("def f(:\n", 10) == "def f(:\n"  # does not tokenize: left alone


def test_long_strings_are_cut_into_adjacent_literals_that_join_back():
    src = 'f(basis="' + "word " * 30 + 'end", x=1)\ng(f"value {a + b:.2f} and {c} " "' + "more " * 20 + '")\n'
    out = fmt.split_long_strings(src, 60)
    assert max(len(line) for line in out.splitlines()) <= 60, out
    assert ast.dump(ast.parse(out)) == ast.dump(ast.parse(src))  # the same string once compiled
    assert "{a + b:.2f}" in out  # never cut inside an f-string field
    top = 'X = "' + "word " * 30 + '"'
    assert fmt.split_long_strings(top, 60) == top  # at statement level: left alone (it wraps in the book)
    doc = 'def f():\n    """' + "word " * 30 + '"""'
    assert fmt.split_long_strings(doc, 60) == doc


def test_format_cells_keeps_the_syntax_tree_and_trailing_semicolons():
    cells = [
        'rows = {"a": 1, "b": 2, "c": 3, "d": 4, "e": 5, "f": 6, "g": 7, "h": 8, "i": 9, "j": 10}',
        "plt.plot([1, 2]);",
        "%matplotlib inline\nx = 1",
    ]
    out = fmt.format_cells(cells, line_length=40)
    assert max(len(line) for line in out[0].splitlines()) <= 40 and ast.dump(ast.parse(out[0])) == ast.dump(ast.parse(cells[0]))
    assert out[1] == "plt.plot([1, 2]);" and out[2].startswith("%matplotlib inline")


@pytest.fixture()
def chapter_md(tmp_path):
    import importlib.util
    from pathlib import Path

    # the top-level tests/conftest.py by its path: a bare `import conftest` may find another folder's
    spec = importlib.util.spec_from_file_location("_toy_conftest_fmt", Path(__file__).resolve().parents[1] / "conftest.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    HEADER = mod.HEADER

    p = tmp_path / "c.md"
    p.write_text(HEADER + "\n```{code-cell} ipython3\nx = dict(" + ", ".join(f"k{i}={i}" for i in range(30)) + ")\n```\n")
    return p


def test_format_chapter_is_idempotent_and_round_trips(chapter_md):
    assert fmt.format_chapter(chapter_md, check=True)  # would change
    before = chapter_md.read_text()
    assert fmt.format_chapter(chapter_md)
    assert chapter_md.read_text() != before and not fmt.format_chapter(chapter_md, check=True)
    assert fmt.round_trips(chapter_md)
    assert max(len(line) for line in chapter_md.read_text().split("```{code-cell}")[1].splitlines()) <= fmt.LINE_LENGTH
