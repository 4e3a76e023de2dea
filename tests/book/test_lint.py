"""Tests of icml26.book.lint: the prose-number and claim-kind checks catch what they should."""

from icml26.book import lint

PAGE = """---
kernelspec:
  name: python3
---

# 99 · Toy

## The claim
The paper reports 73 % (Table 2).

## The experiment
We mirror Table 1 and Fig. 3 on 8×8 images, with $k = 5$ and `n=200`.

1. first step, CIFAR-10 and top-1 accuracy
{glue:text}`gap:.1f` is glued.

ST-BCP cuts the gap by 74 %.

```{code-cell} ipython3
x = 12345
claims = [chapter.Claim(id="a", claim="c", paper="1", ours="2", checks={"k": True})]
ok = chapter.Claim(id="b", claim="c", kind="paper", paper="1", ours="2", checks={"k": True})
```

## What differs from the paper
Trained on 1,000 images instead of 50,000.
"""


def test_prose_numbers_flags_only_typed_results(tmp_path):
    f = tmp_path / "toy.md"
    f.write_text(PAGE)
    found = lint.prose_numbers(f)
    assert len(found) == 1 and "74" in found[0] and found[0].startswith("The experiment")


def test_claims_without_kind(tmp_path):
    f = tmp_path / "toy.md"
    f.write_text(PAGE)
    assert lint.claims_without_kind(f) == ['Claim(id="a", claim="c", paper="1", ours="2", checks={"k": True})']


def test_noisy_exact_checks(tmp_path):
    f = tmp_path / "c.md"
    f.write_text(
        'a = chapter.exact(ours.mean() > base.mean(), why="x")\nb = chapter.exact(n_fail == 0, "a count")\n'
        'c = chapter.exact(bool(np.mean(x) > 1), why="y")\n'
    )
    found = lint.noisy_exact_checks(f)
    assert len(found) == 2 and found[0].startswith("exact(ours.mean()") and "np.mean" in found[1]
