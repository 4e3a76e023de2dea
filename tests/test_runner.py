"""Tests of the chapter runner, the cache, failure reports, the CLI and the site builder.

They run on a throw-away book in a temporary folder, so they do not touch the real one.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from icml26 import site
from icml26.runner import Book

HEADER = """---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
    format_version: 0.13
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---

# Toy
"""

GOOD = HEADER + """
```{code-cell} ipython3
:tags: [parameters]

scale = "ci"
seed = 0
```

```{code-cell} ipython3
from icml26 import chapter
chapter.check_scale(scale)
claims = [chapter.Claim(id="one", claim="one is one", paper="1", ours=str(1 + seed), checks={"equal": 1 + seed == 1})]
chapter.record_claims("01-toy", claims, scale=scale, seed=seed)
```
"""

BAD = HEADER + """
```{code-cell} ipython3
:tags: [parameters]

scale = "ci"
seed = 0
```

```{code-cell} ipython3
x = 1
```

```{code-cell} ipython3
raise ValueError("boom in the third cell")
```
"""


@pytest.fixture()
def toy(tmp_path):
    root = tmp_path / "repo"
    (root / "book" / "01-toy").mkdir(parents=True)
    (root / "book" / "01-toy" / "toy.md").write_text(GOOD)
    (root / "book" / "02-bad").mkdir()
    (root / "book" / "02-bad" / "bad.md").write_text(BAD)
    (root / "book" / "notes.md").write_text("# not a chapter\n")
    (root / "src" / "lib").mkdir(parents=True)
    (root / "src" / "lib" / "m.py").write_text("X = 1\n")
    return Book(root)


def test_discovery_and_selection(toy):
    assert [c.id for c in toy.chapters()] == ["01-toy", "02-bad"]
    assert [c.id for c in toy.select(["1", "bad"])] == ["01-toy", "02-bad"]
    with pytest.raises(ValueError, match=r"unknown chapter 'nope'; valid chapters: 01-toy, 02-bad"):
        toy.select(["nope"])


def test_cache_hit_and_invalidation_by_src(toy):
    ch = toy.select(["01"])[0]
    first = toy.execute(ch, "ci", 0, progress=False)
    assert first.status == "ok"
    claims = json.loads((toy.results_dir() / "ci" / "01-toy" / "main.json").read_text())
    assert claims["claims"][0]["verdict"] == "reproduced"
    again = toy.execute(ch, "ci", 0, progress=False)
    assert again.status == "cached" and again.key == first.key
    # another seed is another execution
    other = toy.execute(ch, "ci", 1, progress=False)
    assert other.status == "ok" and other.key != first.key
    assert json.loads((toy.results_dir() / "ci" / "01-toy" / "main.json").read_text())["claims"][0]["verdict"] == "not reproduced"
    # a change in src/ invalidates the cache
    key_before = toy.cache_key(ch, "ci", 1)
    (toy.src_dir / "lib" / "m.py").write_text("X = 2\n")
    assert toy.cache_key(ch, "ci", 1) != key_before
    assert toy.execute(ch, "ci", 1, progress=False).status == "ok"


def test_failure_names_chapter_and_cell_and_others_still_run(toy):
    records = toy.run(toy.chapters(), "ci", 0, jobs=2, progress=False)
    by = {r.chapter: r for r in records}
    assert by["01-toy"].status in ("ok", "cached")
    bad = by["02-bad"]
    assert bad.status == "failed"
    msg = bad.describe_error()
    assert "02-bad" in msg and "bad.md" in msg and "cell 4 (code cell 3: 'raise ValueError" in msg and "boom in the third cell" in msg
    # a failed run is never a cache hit
    assert toy.execute(toy.select(["02"])[0], "ci", 0, progress=False).status == "failed"


def test_jobs_must_be_positive(toy):
    with pytest.raises(ValueError, match="jobs=0"):
        toy.run(toy.chapters(), "ci", 0, jobs=0)


def _cli(*args, root=None):
    cmd = [sys.executable, "-m", "icml26"] + (["--root", str(root)] if root else []) + list(args)
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)


@pytest.mark.parametrize(
    "args, needle",
    [
        (["run", "nope"], "valid chapters: 01-toy, 02-bad"),
        (["run", "--scale", "huge"], "valid scales: ci, full"),
        (["run", "--jobs", "0"], "0 must be >= 1"),
        (["run", "--seed", "-3"], "must be >= 0"),
    ],
)
def test_cli_bad_arguments_are_one_line_errors(toy, args, needle):
    proc = _cli(*args, root=toy.root)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], proc.stderr


def test_cli_run_reports_failed_chapter_and_exits_nonzero(toy):
    proc = _cli("run", "--no-progress", "--jobs", "2", root=toy.root)
    assert proc.returncode == 1
    assert "1 chapter(s) failed" in proc.stderr and "02-bad: bad.md, cell 4 (code cell 3" in proc.stderr
    assert "01-toy" in proc.stdout
    listing = _cli("list", root=toy.root)
    assert listing.returncode == 0 and "ci: failed" in listing.stdout


def test_scorecard_and_stage(toy):
    ch = toy.select(["01"])[0]
    toy.execute(ch, "full", 0, progress=False)
    card = site.scorecard_markdown(toy, "full")
    assert "| [Toy](01-toy/toy.ipynb) | one is one | 1 | 1 | **reproduced** |" in card
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


def test_sync_writes_twins_and_refuses_to_clobber_edited_twin(toy):
    assert _cli("sync", root=toy.root).returncode == 0
    twin = toy.build_dir / "ipynb" / "book" / "01-toy" / "toy.ipynb"
    nb = nbformat.read(str(twin), as_version=4)
    assert any("parameters" in c.metadata.get("tags", []) for c in nb.cells)
    nb.cells[-1].source += "\n# edited in the twin"
    nbformat.write(nb, str(twin))
    os.utime(twin, (twin.stat().st_atime + 5, twin.stat().st_mtime + 5))
    proc = _cli("sync", root=toy.root)
    assert proc.returncode == 1 and "toy.ipynb was edited after" in proc.stderr
    assert "edited in the twin" in twin.read_text()  # not overwritten
