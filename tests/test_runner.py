"""Tests of icml26.runner: discovery, the cache, failure reports (on the toy book of conftest.py)."""

import json

import pytest


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

