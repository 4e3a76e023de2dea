"""Tests of icml26.book.sweep: seeds x chapters on Dask (loopback only), caching, failures, aggregation."""

import json
import subprocess
import sys
import time

import pytest

from icml26.book import sweep as sw

pytest.importorskip("dask.distributed")


def test_parse_seeds_and_params():
    assert sw.parse_seeds("0-2,7") == [0, 1, 2, 7]
    assert sw.parse_seeds("3") == [3]
    for bad in ("a", "3-1", "-1", "0-99999"):
        with pytest.raises(ValueError, match="seeds"):
            sw.parse_seeds(bad)
    assert sw.parse_params(["n=3", "name=abc", "xs=[1, 2]"]) == {"n": 3, "name": "abc", "xs": [1, 2]}
    with pytest.raises(ValueError, match="key=value"):
        sw.parse_params(["novalue"])
    with pytest.raises(ValueError, match="--seeds"):
        sw.parse_params(["seed=3"])


def test_sweep_on_a_local_cluster_caches_and_names_failures(toy):
    chapters = toy.chapters()  # 01-toy (claim holds at seed 0 only) and 02-bad (fails in cell 4)
    records = sw.sweep(toy, chapters, [0, 1], "ci", n_workers=2, progress=False)
    by = {(r.chapter, r.seed): r for r in records}
    assert by[("01-toy", 0)].status == "ok" and by[("01-toy", 1)].status == "ok"
    bad = by[("02-bad", 0)]
    assert bad.status == "failed" and "02-bad (seed 0): bad.md, cell 4 (code cell 3" in bad.describe_error()
    # the outputs came back as data and were written by the client
    out = sw.task_dir(toy, "ci", 1, "01-toy")
    assert (out / "toy.ipynb").exists() and json.loads((out / "results" / "main.json").read_text())["seed"] == 1
    claims = sw.load_sweep_claims(toy, "ci")["01-toy"]["one"]
    agg = sw.aggregate(claims)
    assert agg["counts"] == {"reproduced": 1, "not reproduced": 1} and agg["overall"] == "partly reproduced"
    # a second sweep is all cache hits for the chapter that succeeded
    again = sw.sweep(toy, chapters[:1], [0, 1], "ci", n_workers=1, progress=False)
    assert [r.status for r in again] == ["cached", "cached"]
    assert sw.stale_sweep_tasks(toy, "ci") == []
    # once the chapter changes, its stored rows are stale: named, and no longer aggregated
    nb = toy.root / "book" / "01-toy" / "toy.md"
    nb.write_text(nb.read_text() + "\n")
    assert sorted((r.chapter, r.seed) for r in sw.stale_sweep_tasks(toy, "ci")) == [("01-toy", 0), ("01-toy", 1)]
    assert "01-toy" not in sw.load_sweep_claims(toy, "ci")
    from icml26.book import site

    assert "2 stored sweep task(s) at `ci` ran an earlier version of their chapter (chapters 01)" in site.scorecard_markdown(toy, "ci")


def test_sweep_connects_to_a_scheduler_by_address(toy, tmp_path):
    sched_file = tmp_path / "scheduler.json"
    dask = [sys.executable, "-m", "distributed.cli.dask_scheduler"]
    procs = []
    try:
        procs.append(subprocess.Popen(dask + ["--host", "127.0.0.1", "--port", "0", "--no-dashboard", "--scheduler-file", str(sched_file)],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        deadline = time.time() + 60
        while not sched_file.exists() and time.time() < deadline:
            time.sleep(0.2)
        address = json.loads(sched_file.read_text())["address"]
        assert address.startswith("tcp://127.0.0.1:")
        procs.append(subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", address, "--host", "127.0.0.1",
                                       "--nthreads", "1", "--no-dashboard", "--local-directory", str(tmp_path / "w")],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        records = sw.sweep(toy, toy.select(["01"]), [2], "ci", scheduler=address, progress=False)
        assert [(r.chapter, r.seed, r.status) for r in records] == [("01-toy", 2, "ok")]
        assert records[0].worker  # ran on the worker we started
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()


def test_real_chapter_two_seeds_aggregated_on_the_scorecard(tmp_path):
    """Chapter 02 at ci scale, seeds 0 and 1, on a LocalCluster: the scorecard's spread equals the records'."""
    import shutil
    from pathlib import Path

    import numpy as np

    from icml26.book import site
    from icml26.book.runner import Book

    repo = Path(__file__).resolve().parents[2]
    root = tmp_path / "repo"
    (root / "book").mkdir(parents=True)
    shutil.copytree(repo / "book" / "02-st-bcp", root / "book" / "02-st-bcp")
    shutil.copytree(repo / "src", root / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for name in ("_toc.yml", "_config.yml", "requirements.txt", "requirements.lock"):
        shutil.copy2(repo / name, root / name)
    book = Book(root)
    records = sw.sweep(book, book.chapters(), [0, 1], "ci", n_workers=2, progress=False)
    assert [(r.seed, r.status) for r in records] == [(0, "ok"), (1, "ok")], [r.describe_error() for r in records]
    rows = {}
    for seed in (0, 1):
        payload = json.loads((sw.task_dir(book, "ci", seed, "02-st-bcp") / "results" / "main.json").read_text())
        assert payload["seed"] == seed
        rows[seed] = {c["id"]: c for c in payload["claims"]}
    means = np.array([rows[s]["gap-headline"]["ours_value"]["mean"] for s in (0, 1)])
    agg = sw.aggregate([(s, rows[s]["gap-headline"]) for s in (0, 1)])
    assert agg["mean"] == pytest.approx(means.mean()) and agg["sd"] == pytest.approx(means.std(ddof=1))
    assert sum(agg["counts"].values()) == 2
    assert book.execute(book.chapters()[0], "ci", 0, progress=False).status == "ok"  # the rendered, seed-0 run
    card = site.scorecard_markdown(book, "ci")
    assert f"`ci`: {sw.describe(agg)}" in card and "| single seed |" not in card
