"""Tests of icml26.book.site: scorecard, status page, staging, output clean-up."""

import nbformat
import pytest

from icml26.book import site


def test_scorecard_and_stage(toy):
    ch = toy.select(["01"])[0]
    toy.execute(ch, "full", 0, progress=False)
    card = site.scorecard_markdown(toy, "full")
    assert "| [Toy](01-toy/toy.ipynb) | one is one | 1 | 1 | **reproduced** | equal: yes | — | — |" in card
    assert "02-bad" in card and "not run" in card
    (toy.root / "_config.yml").write_text("title: t\n")
    (toy.root / "_toc.yml").write_text("format: jb-book\nroot: book/notes\n")
    with pytest.raises(site.BuildError, match="02-bad: not executed at full scale"):
        site.stage(toy, "full")
    status = site.status_markdown(toy)
    assert "| 01-toy |" in status and "CPU cores" in status


def test_clean_executed_drops_progress_and_flags_warnings():
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("x")
    cell.outputs = [
        nbformat.v4.new_output("stream", name="stderr", text="seeds: 100%|##########| 3/3 [00:01<00:00, 2.1it/s]\r"),
        nbformat.v4.new_output("stream", name="stdout", text="hello\n"),
        nbformat.v4.new_output("stream", name="stderr", text="/x.py:1: RuntimeWarning: divide by zero\n"),
    ]
    nb.cells.append(cell)
    problems = site.clean_executed(nb)
    assert len(nb.cells[0].outputs) == 2
    assert len(problems) == 1 and "RuntimeWarning" in problems[0]

