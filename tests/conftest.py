"""Shared fixtures: a throw-away book in a temporary folder, so tests never touch the real one."""

import pytest

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

