"""Tests of icml26.book.runner: discovery, the cache, failure reports (on the toy book of conftest.py)."""

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
    # a change in a module the chapter imports invalidates the cache
    key_before = toy.cache_key(ch, "ci", 1)
    (toy.src_dir / "icml26" / "bcp.py").write_text("from ._common import C\nX = 2\n")
    assert toy.cache_key(ch, "ci", 1) != key_before
    assert toy.execute(ch, "ci", 1, progress=False).status == "ok"


def _keys(toy):
    return {ch.id: toy.cache_key(ch, "ci", 0) for ch in toy.chapters()}


def test_editing_the_build_tool_reexecutes_nothing(toy):
    before = _keys(toy)
    for tool in ("runner", "site", "cli", "sync"):
        (toy.src_dir / "icml26" / "book" / f"{tool}.py").write_text("T = 2\n")
    assert _keys(toy) == before


def test_editing_a_method_module_reexecutes_only_its_importers(toy):
    before = _keys(toy)
    (toy.src_dir / "icml26" / "pasv.py").write_text("Y = 2\n")  # imported by no toy chapter
    assert _keys(toy) == before
    (toy.src_dir / "icml26" / "bcp.py").write_text("from ._common import C\nX = 3\n")  # imported by 01-toy only
    after = _keys(toy)
    assert after["01-toy"] != before["01-toy"] and after["02-bad"] == before["02-bad"]


def test_editing_the_runtime_or_a_transitive_import_reexecutes_every_importer(toy):
    before = _keys(toy)
    (toy.src_dir / "icml26" / "_common.py").write_text("C = 2\n")  # imported by bcp and by the runtime
    after = _keys(toy)
    assert all(after[c] != before[c] for c in before)
    inputs = [str(p.relative_to(toy.root)) for p in toy.key_inputs(toy.select(["01"])[0])]
    assert "src/icml26/bcp.py" in inputs and "src/icml26/_common.py" in inputs and "src/icml26/book/chapter.py" in inputs
    assert not any(name in " ".join(inputs) for name in ("runner.py", "site.py", "cli.py", "pasv.py"))


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

