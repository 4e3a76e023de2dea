"""Shared fixtures: a throw-away book in a temporary folder, so tests never touch the real one."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # tests/badinput.py, for test modules in subfolders

from icml26.book.runner import Book

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

GOOD = (
    HEADER
    + """
The identity $1 = 1$ holds, and so does

$$
\\sum_{i=1}^{n} i = \\frac{n(n+1)}{2}.
$$

```{code-cell} ipython3
:tags: [parameters]

scale = "ci"
seed = 0
extra = 0
```

```{code-cell} ipython3
from icml26 import bcp  # noqa: F401  (the toy's cache key covers src/icml26/bcp.py)
from icml26.book import chapter
chapter.check_scale(scale)
claims = [chapter.Claim(id="one", claim="one is one", kind="paper", paper="1", ours=str(1 + seed + extra), checks={"equal": chapter.exact(1 + seed + extra == 1, "arithmetic on the seed")})]
chapter.record_claims("01-toy", claims, scale=scale, seed=seed)
```
"""
)

BAD = (
    HEADER
    + """
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
)


TOC = """format: jb-book
root: book/intro
parts:
  - caption: Chapters
    chapters:
      - file: book/01-toy/toy
      - file: book/02-bad/bad
  - caption: About
    chapters:
      - file: book/status
"""


@pytest.fixture()
def toy(tmp_path):
    root = tmp_path / "repo"
    (root / "book" / "01-toy").mkdir(parents=True)
    (root / "book" / "01-toy" / "toy.md").write_text(GOOD)
    (root / "book" / "02-bad").mkdir()
    (root / "book" / "02-bad" / "bad.md").write_text(BAD)
    (root / "book" / "notes.md").write_text("# not a chapter\n")
    (root / "_toc.yml").write_text(TOC)  # a chapter run by hand finds the book's root by it
    # a miniature of the library's layout, for the cache-key tests: two method modules,
    # the notebook runtime and the build tool
    pkg = root / "src" / "icml26"
    (pkg / "book").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "_common.py").write_text("C = 1\n")
    (pkg / "bcp.py").write_text("from ._common import C\nX = 1\n")
    (pkg / "pasv.py").write_text("Y = 1\n")
    (pkg / "book" / "__init__.py").write_text("")
    (pkg / "book" / "chapter.py").write_text("from .._common import C\n")
    (pkg / "book" / "bench.py").write_text("")
    for tool in ("runner", "site", "cli", "sync"):
        (pkg / "book" / f"{tool}.py").write_text("T = 1\n")
    return Book(root)


# --------------------------------------------------------------------------------------
# Balance the xdist workers: longest test files first (greedy longest-processing-time).
# `--dist loadfile` hands files out in collection order, one at a time as a worker frees
# up; a long file collected last leaves the other worker idle to the end. The measured
# seconds per file live in tests/durations.json (written by a run with
# ICML26_RECORD_DURATIONS=tests/durations.json); files not in it count as the median.
# --------------------------------------------------------------------------------------
DURATIONS = Path(__file__).with_name("durations.json")
_SPENT: dict[str, float] = {}


def _file_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def pytest_collection_modifyitems(config, items):
    import json
    import statistics

    try:
        weights = {k: float(v) for k, v in json.loads(DURATIONS.read_text()).items()}
    except (OSError, ValueError, AttributeError):
        return  # no measurements: keep pytest's order
    files = list(dict.fromkeys(_file_of(it.nodeid) for it in items))
    default = statistics.median(weights.values()) if weights else 0.0
    rank = {f: (-weights.get(f, default), i) for i, f in enumerate(files)}
    items.sort(key=lambda it: rank[_file_of(it.nodeid)])  # stable: a file's own order is kept


def pytest_runtest_logreport(report):
    _SPENT[_file_of(report.nodeid)] = _SPENT.get(_file_of(report.nodeid), 0.0) + float(report.duration)


def pytest_sessionfinish(session, exitstatus):
    import json
    import os

    out = os.environ.get("ICML26_RECORD_DURATIONS")
    if out and _SPENT and not hasattr(session.config, "workerinput"):  # the controller, which sees every report
        Path(out).write_text(json.dumps({k: round(v, 2) for k, v in sorted(_SPENT.items())}, indent=1) + "\n")
