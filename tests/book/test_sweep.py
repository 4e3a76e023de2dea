"""Tests of icml26.book.sweep: seeds x chapters on Dask (loopback only), caching, failures, aggregation."""

import contextlib
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
    # an exact check that holds in one seed and fails in the other is undecided over seeds: no vote
    assert agg["counts"] == {"reproduced": 1, "not reproduced": 1} and agg["overall"] == "undecided"
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

    assert "2 stored sweep task(s) at `ci` ran an earlier version of their chapter (chapters 01)" in site.scorecard_markdown(
        toy, "ci"
    )


@contextlib.contextmanager
def _scheduler_and_worker(tmp_path, worker_env=None):
    """A Dask scheduler and one single-threaded worker on 127.0.0.1 (the worker with ``worker_env``); yields the address."""
    sched_file = tmp_path / "scheduler.json"
    procs = []
    try:
        procs.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "distributed.cli.dask_scheduler",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    "0",
                    "--no-dashboard",
                    "--scheduler-file",
                    str(sched_file),
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
        deadline = time.time() + 60
        while not sched_file.exists() and time.time() < deadline:
            time.sleep(0.2)
        address = json.loads(sched_file.read_text())["address"]
        procs.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "distributed.cli.dask_worker",
                    address,
                    "--host",
                    "127.0.0.1",
                    "--nthreads",
                    "1",
                    "--no-dashboard",
                    "--local-directory",
                    str(tmp_path / "w"),
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env=worker_env,
            )
        )
        yield address
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()


def test_sweep_connects_to_a_scheduler_by_address(toy, tmp_path):
    with _scheduler_and_worker(tmp_path) as address:
        assert address.startswith("tcp://127.0.0.1:")
        records = sw.sweep(toy, toy.select(["01"]), [2], "ci", scheduler=address, progress=False)
    assert [(r.chapter, r.seed, r.status) for r in records] == [("01-toy", 2, "ok")]
    assert records[0].worker  # ran on the worker we started


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
    # the rendered, seed-0 run: the sweep's seed-0 task of the same key is taken, not executed again
    assert book.execute(book.chapters()[0], "ci", 0, progress=False).status == "cached"
    card = site.claims_detail_markdown(book, "ci")
    assert "`ci`, pooled: " in card and sw.describe(agg) in card and "| single seed |" not in card
    front = site.scorecard_markdown(book, "ci")  # the front page: the pooled verdict beside the seed-0 one
    cpu = records[0].cpu
    assert cpu and f"pooled over 2 seeds at `ci` for every chapter with a paper claim, run on {cpu}: " in front
    assert "; over 2 seeds: " in front and "planned looks" not in front
    # a sequential sweep's plan (K looks) is stated with the level every pooled decision then uses
    looks_file = book.build_dir / "sweep" / "ci" / sw.LOOKS_FILE
    looks_file.write_text(json.dumps({"max_looks": 2}))
    assert "run on " + cpu + ", in 2 planned looks (every pooled decision at α/2, " in site.scorecard_markdown(book, "ci")
    looks_file.unlink()
    from icml26.book.scorecard import claims_data

    pooled_rows = [r for r in claims_data(book, "ci") if r["pooled_verdict"]]
    assert pooled_rows and all(r["pooled_cpus"] == {cpu: [0, 1]} for r in pooled_rows)  # claims.json says where
    # the pooled evidence of each noisy core check holds every replicate of both seeds once
    for name, dec in rows[0]["gap-headline"]["decisions"].items():
        if dec["stats"].get("diffs") is not None:
            n = sum(len(rows[s]["gap-headline"]["decisions"][name]["stats"]["diffs"]) for s in (0, 1))
            assert agg["pooled"]["checks"][name]["stats"]["n"] == n


def _row(a, b, replicates, *, control=None):
    from dataclasses import asdict

    from icml26.book import chapter

    dec = chapter.paired_effect(a, b, smallest_effect=0.5, basis="stated", replicates=replicates)
    c = chapter.Claim(id="c", claim="c", kind="paper", paper="", ours="", checks={"better": dec}, control=control or {})
    return json.loads(json.dumps(asdict(c)))


def test_pooled_claim_equals_the_decision_on_all_replicates():
    import numpy as np

    from icml26.book import chapter

    rng = np.random.default_rng(0)
    a0, b0, a1, b1 = rng.normal(0.6, 1, 3), rng.normal(0, 1, 3), rng.normal(0.6, 1, 3), rng.normal(0, 1, 3)
    rows = [(0, _row(a0, b0, [0, 1, 2])), (1, _row(a1, b1, [1000, 1001, 1002]))]
    pooled = sw.pool_claim(rows)
    direct = chapter.paired_effect(np.r_[a0, a1], np.r_[b0, b1], smallest_effect=0.5, basis="stated")
    st = pooled["checks"]["better"]["stats"]
    assert (st["effect"], st["ci_low"], st["ci_high"], st["n"]) == (
        direct.stats["effect"],
        direct.stats["ci_low"],
        direct.stats["ci_high"],
        6,
    )
    assert pooled["verdict"] == chapter.verdict({"better": direct})
    # with K planned looks the pooled decision is taken at alpha / K: a wider interval
    wide = sw.pool_claim(rows, looks=4)["checks"]["better"]["stats"]
    assert wide["alpha"] == 0.05 / 4 and wide["ci_high"] - wide["ci_low"] > st["ci_high"] - st["ci_low"]
    # a control that fails in one seed and holds in the other is undecided over seeds: so is the claim
    ctl = [
        (0, _row(a0, b0, [0, 1, 2], control={"learns": chapter.exact(True, "x")})),
        (1, _row(a1, b1, [1000, 1001, 1002], control={"learns": chapter.exact(False, "x")})),
    ]
    assert sw.pool_claim(ctl)["verdict"] == "undecided"
    # a control that fails in every seed makes the pooled claim untestable here, never undecided
    both = [
        (0, _row(a0, b0, [0, 1, 2], control={"learns": chapter.exact(False, "x")})),
        (1, _row(a1, b1, [1000, 1001, 1002], control={"learns": chapter.exact(False, "x")})),
    ]
    assert sw.pool_claim(both)["verdict"] == "untestable here"
    # a claim untestable by construction stays so when pooled, with its reason
    built = [(s, {**r, "untestable": "same argmax in both arms", "to_test": "another model"}) for s, r in rows]
    out = sw.pool_claim(built)
    assert out["verdict"] == "untestable here" and "same argmax in both arms" in out["why"] and "another model" in out["why"]


def test_parse_duration():
    assert sw.parse_duration("90s") == 90 and sw.parse_duration("2h") == 7200 and sw.parse_duration("1h30m") == 5400
    for bad in ("", "soon", "-5m", "0", "3x"):
        with pytest.raises(ValueError, match="budget"):
            sw.parse_duration(bad)


def test_until_decided_stops_once_the_claims_are_decided(toy):
    out = sw.sweep_until_decided(toy, toy.select(["01"]), "ci", max_seeds=3, n_workers=1, progress=False, say=lambda m: None)
    # seed 0 decides the toy's exact claim (it supports), so no further round runs
    assert out["looks"] == 3 and [r["seeds"] for r in out["rounds"]] == [[0]] and out["undecided"] == {}
    assert json.loads((toy.build_dir / "sweep" / "ci" / "looks.json").read_text())["max_looks"] == 3
    assert sw.planned_looks(toy, "ci") == 3


def test_until_decided_plans_its_looks_from_the_seeds_per_round(toy):
    """K = ceil(max_seeds / per_round): rounds of 2 seeds out of 3 are 2 looks, each at alpha / 2."""
    out = sw.sweep_until_decided(
        toy, toy.select(["01"]), "ci", max_seeds=3, per_round=2, n_workers=1, progress=False, say=lambda m: None
    )
    assert out["looks"] == 2 and out["rounds"][0]["seeds"] == [0, 1]
    assert all(r["seeds"] in ([0, 1], [2]) for r in out["rounds"])
    assert sw.planned_looks(toy, "ci") == 2


def test_a_worker_with_another_library_is_refused(toy, tmp_path):
    """A worker whose icml26 differs from the client's never has its result stored."""
    import os
    import shutil

    from icml26.book.runner import installed_src

    copy = tmp_path / "worker-src"
    shutil.copytree(installed_src() / "icml26", copy / "icml26", ignore=shutil.ignore_patterns("__pycache__"))
    init = copy / "icml26" / "bcp" / "__init__.py"
    init.write_text(init.read_text() + "\n# edited on the worker\n")
    with _scheduler_and_worker(tmp_path, worker_env={**os.environ, "PYTHONPATH": str(copy)}) as address:
        records = sw.sweep(toy, toy.select(["01"]), [3], "ci", scheduler=address, progress=False)
    (rec,) = records
    assert rec.status == "failed" and rec.error["ename"] == "LibraryMismatch"
    assert "icml26/bcp/__init__.py (changed)" in rec.error["evalue"] and "differs from the client's" in rec.error["evalue"]
    assert "01-toy" not in sw.load_sweep_claims(toy, "ci")  # nothing counted


def test_sweep_params_are_checked_and_kept_apart(toy):
    chapters = toy.select(["01"])
    with pytest.raises(
        ValueError, match=r"chapter 01-toy has no parameter 'n_seeds'; its parameters cell defines extra, scale, seed"
    ):
        sw.check_params(toy, chapters, {"n_seeds": 5})
    sw.check_params(toy, chapters, {"extra": 1})
    default, other = sw.task_dir(toy, "ci", 0, "01-toy"), sw.task_dir(toy, "ci", 0, "01-toy", {"extra": 1})
    assert (
        default.name == "01-toy"
        and other.name.startswith("01-toy+")
        and other != sw.task_dir(toy, "ci", 0, "01-toy", {"extra": 2})
    )
    # a damaged record is ignored with a warning, never a crash
    other.mkdir(parents=True)
    (other / "run.json").write_text("{not json")
    with pytest.warns(UserWarning, match="unreadable sweep record"):
        assert sw.load_sweep_claims(toy, "ci") == {}


def test_the_scorecard_names_tasks_with_other_parameters(toy):
    from dataclasses import asdict

    from icml26.book import site

    d = sw.task_dir(toy, "ci", 0, "01-toy", {"extra": 1})
    d.mkdir(parents=True)
    rec = sw.SweepRecord(
        chapter="01-toy",
        scale="ci",
        seed=0,
        params={"extra": 1},
        key="k",
        status="ok",
        wall_s=1.0,
        error=None,
        finished="2026-12-01 00:00:00",
        worker="w",
    )
    (d / "run.json").write_text(json.dumps(asdict(rec)))
    ch = toy.select(["01"])[0]
    toy.execute(ch, "ci", 0, progress=False)
    assert "kept apart and not pooled here: 01-toy (extra=1)" in site.scorecard_markdown(toy, "ci")


def test_pooling_with_a_smallest_effect_that_varies_by_seed():
    import numpy as np

    from icml26.book import chapter

    rng = np.random.default_rng(1)
    rows = []
    for s, delta in ((0, 0.074), (1, 0.076)):  # a rule relative to each seed's measured baseline
        a, b = rng.normal(0.5, 0.1, 3), np.zeros(3)
        dec = chapter.paired_effect(
            a, b, smallest_effect=delta, basis="7.5 % of our baseline", replicates=[s * 1000 + k for k in range(3)]
        )
        from dataclasses import asdict

        c = chapter.Claim(id="c", claim="c", kind="paper", paper="", ours="", checks={"better": dec})
        rows.append((s, json.loads(json.dumps(asdict(c)))))
    pooled = sw.pool_claim(rows)
    st = pooled["checks"]["better"]["stats"]
    assert st["smallest_effect"] == pytest.approx(0.075) and st["n"] == 6
    assert "varies by seed (0.074 to 0.076): their mean is used" in pooled["checks"]["better"]["detail"]


def test_pooling_refuses_nothing_but_names_mixed_cpus():
    import numpy as np

    rng = np.random.default_rng(3)
    a0, b0, a1, b1 = (rng.normal(m, 0.1, 3) for m in (1.0, 0.0, 1.0, 0.0))
    same = [(0, {**_row(a0, b0, [0, 1, 2]), "task_cpu": "X"}), (1, {**_row(a1, b1, [1000, 1001, 1002]), "task_cpu": "X"})]
    mixed = [(0, same[0][1]), (1, {**same[1][1], "task_cpu": "Y (AVX2)"})]
    agg_same, agg_mixed = sw.aggregate(same), sw.aggregate(mixed)
    # the same evidence pools to the same decision whatever CPUs made it
    assert agg_same["overall"] == agg_mixed["overall"] and agg_same["pooled"]["checks"] == agg_mixed["pooled"]["checks"]
    assert agg_mixed["cpus"] == {"X": [0], "Y (AVX2)": [1]}
    assert "different CPUs" not in sw.describe(agg_same)
    assert "pooled over runs on different CPUs (their kernels round differently): X (seed 0); Y (AVX2) (seed 1)" in sw.describe(
        agg_mixed
    )
    # a record made before 0.5.0 reads in today's words
    old = [(s, {**r, "verdict": "inconclusive"}) for s, r in same]
    assert set(sw.aggregate(old)["counts"]) == {"undecided"}


def test_a_second_kernel_family_is_checked_and_its_tasks_live_apart(toy):
    import json
    from dataclasses import asdict

    with pytest.raises(ValueError, match=r"kernels='avx512' is not a kernel family; use one of 'avx2'"):
        sw.check_kernels("avx512")
    default, other = sw.task_dir(toy, "ci", 0, "01-toy"), sw.task_dir(toy, "ci", 0, "01-toy", kernels="avx2")
    assert other != default and "kernels-avx2" in other.parts and "kernels-avx2" not in default.parts
    ch = toy.select(["01"])[0]
    key = toy.cache_key(ch, "ci", 0)
    for d, kernels, verdict in ((default, "", "reproduced"), (other, "avx2", "undecided")):
        (d / "results").mkdir(parents=True)
        rec = sw.SweepRecord(chapter="01-toy", scale="ci", seed=0, params={}, key=key, status="ok", kernels=kernels)
        (d / "run.json").write_text(json.dumps(asdict(rec)))
        row = {"id": "one", "kind": "paper", "verdict": verdict, "outcomes": {}, "checks": {}}
        (d / "results" / "main.json").write_text(json.dumps({"run_key": key, "claims": [row]}))
    # the kernel rerun is never pooled with the default runs, and is read on its own
    assert [r["verdict"] for _, r in sw.load_sweep_claims(toy, "ci")["01-toy"]["one"]] == ["reproduced"]
    assert [r["verdict"] for _, r in sw.load_sweep_claims(toy, "ci", kernels="avx2")["01-toy"]["one"]] == ["undecided"]
    assert sw.load_task(toy, "ci", 0, "01-toy", kernels="avx2").kernels == "avx2"
    # a payload carries the family's environment for the kernel
    payload = sw.make_payload(toy, ch, "ci", 0, {}, key, "avx2")
    assert payload["env"]["ATEN_CPU_CAPABILITY"] == "avx2" and payload["kernels"] == "avx2"
    assert sw.make_payload(toy, ch, "ci", 0, {}, key)["env"] == {}


def test_a_second_kernel_family_trains_its_models_again_in_a_cache_of_its_own(toy, tmp_path, monkeypatch):
    """A model the lab trained under the default kernels would carry their rounding into the rerun."""
    monkeypatch.setenv("ICML26_MODEL_CACHE", str(tmp_path / "models"))
    ch = toy.select(["01"])[0]
    key = toy.cache_key(ch, "ci", 0)
    results = tmp_path / "results"
    default = sw.task_env(sw.make_payload(toy, ch, "ci", 0, {}, key), results)
    assert "ICML26_MODEL_CACHE" not in default  # the notebooks share the usual cache
    assert default["ICML26_RESULTS_DIR"] == str(results) and default["ICML26_RUN_KEY"] == key
    other = sw.task_env(sw.make_payload(toy, ch, "ci", 0, {}, key, "avx2"), results)
    assert other["ICML26_MODEL_CACHE"] == str(tmp_path / "models" / "kernels-avx2")
    assert other["ATEN_CPU_CAPABILITY"] == "avx2" and other["ICML26_RUN_KEY"] == key
    with pytest.raises(ValueError, match=r"kernels='avx9' is not a kernel family"):
        sw.task_env({"key": key, "kernels": "avx9"}, results)


def test_a_run_and_the_sweeps_task_of_the_same_key_stand_in_for_each_other(toy):
    import json
    import shutil

    ch = toy.select(["01"])[0]
    toy.execute(ch, "ci", 0, progress=False)
    p = sw.plan(toy, [ch], [0, 1], "ci")
    assert [(r.seed, r.source, r.status) for r in p.cached] == [(0, "run", "cached")] and [t["seed"] for t in p.todo] == [1]
    task = sw.task_dir(toy, "ci", 0, ch)
    key = toy.cache_key(ch, "ci", 0)
    assert json.loads((task / "results" / "main.json").read_text())["run_key"] == key and (task / "toy.ipynb").exists()
    # and back: with the run gone, `run` takes the sweep's task instead of executing the chapter
    shutil.rmtree(toy.executed_dir("ci", ch))
    shutil.rmtree(toy.results_dir() / "ci" / ch.id)
    rec = toy.execute(ch, "ci", 0, progress=False)
    assert rec.status == "cached" and toy.is_cached(ch, "ci", 0)
    assert json.loads((toy.executed_dir("ci", ch) / "run.json").read_text())["adopted_from"].endswith("seed-0/01-toy")
    assert json.loads((toy.results_dir() / "ci" / ch.id / "main.json").read_text())["run_key"] == key
    # another key (the chapter changed) adopts nothing either way
    nb = toy.root / "book" / "01-toy" / "toy.md"
    nb.write_text(nb.read_text() + "\n")
    p = sw.plan(toy, [ch], [0], "ci")
    assert p.cached == [] and [t["seed"] for t in p.todo] == [0]
    assert toy.adopt_sweep_task(ch, "ci", 0, toy.cache_key(ch, "ci", 0)) is None
    # a task under a second kernel family is never adopted as the run
    assert sw.plan(toy, [ch], [0], "ci", kernels="avx2").cached == []


def test_the_front_page_names_the_cpus_the_pooled_tasks_ran_on():
    """One CPU is named as such; several CPUs are each named with the chapters whose tasks ran there."""
    from icml26.book.scorecard import cpus_text

    assert cpus_text({"AMD EPYC (AVX-512)": {"02-st-bcp", "05-omnishow"}}) == "run on AMD EPYC (AVX-512)"
    mixed = cpus_text({"Intel Xeon (AVX-512, AMX)": {"05-omnishow"}, "AMD EPYC (AVX-512)": {"02-st-bcp", "05-omnishow"}})
    assert mixed == "run on 2 CPUs (AMD EPYC (AVX-512): 02, 05; Intel Xeon (AVX-512, AMX): 05)"
    assert cpus_text({}) == "CPU not recorded"


def _composite_row(parts_by_name, seed):
    """A claim whose one core check combines per-part paired effects, as chapter 04's ``all_beat`` does."""
    from dataclasses import asdict

    from icml26.book import chapter

    reps = chapter.replicate_seeds(seed, 4)
    decs = {
        name: chapter.paired_effect(a, b, smallest_effect=0.5, basis="stated", replicates=reps)
        for name, (a, b) in parts_by_name.items()
    }
    outs = [d.outcome for d in decs.values()]
    outcome = "contradicts" if "contradicts" in outs else ("supports" if all(o == "supports" for o in outs) else "inconclusive")
    comp = chapter.Decision(
        outcome == "supports", "all parts", "", {"n": 4, "per_baseline": {k: d.stats for k, d in decs.items()}}, outcome=outcome
    )
    c = chapter.Claim(id="c", claim="c", kind="paper", paper="", ours="", checks={"beats every baseline": comp})
    return json.loads(json.dumps(asdict(c)))


def test_a_composite_check_is_pooled_part_by_part():
    """The seeds disagree (a vote would say inconclusive); pooled part by part each part decides, and the all-of rule recombines them."""
    import numpy as np

    from icml26.book import evidence

    rng = np.random.default_rng(5)
    rows, diffs = [], {"x": [], "y": []}
    for seed in range(3):
        parts = {}
        for name, mu in (("x", 0.3), ("y", 0.4)):
            d = mu + rng.normal(0, 0.6, 4)
            diffs[name] += list(d)
            parts[name] = (d, np.zeros(4))
        rows.append((seed, _composite_row(parts, seed)))
    pooled = sw.pool_claim(rows)["checks"]["beats every baseline"]
    per_seed = [r["decisions"]["beats every baseline"]["outcome"] for _, r in rows]
    assert len(set(per_seed)) > 1  # a vote over seeds would leave it inconclusive
    for name in ("x", "y"):  # each part equals the decision on all its replicates at once
        direct = evidence.decide(np.array(diffs[name]), smallest_effect=0.5)
        got = pooled["stats"]["parts"][name]
        assert got["n"] == 12 and got["ci_low"] == pytest.approx(direct["ci_low"]) and got["outcome"] == direct["outcome"]
    # x (true effect 0.3) falls reliably short of the smallest effect 0.5; y (0.4) is reliably above 0
    assert {k: v["outcome"] for k, v in pooled["stats"]["parts"].items()} == {"x": "contradicts", "y": "supports"}
    assert pooled["outcome"] == "contradicts" and "pooled per part" in pooled["detail"]
    # one part clearly against the claim: the composite contradicts, whatever the other part says
    against = np.array([-0.02, 0.01, -0.01, 0.02])  # centred on 0: its interval lies below the smallest effect
    bad = [
        (s, _composite_row({"x": (against, np.zeros(4)), "y": (np.ones(4) + 0.01 * np.arange(4), np.zeros(4))}, s))
        for s in range(3)
    ]
    res = sw.pool_claim(bad)
    assert res["checks"]["beats every baseline"]["outcome"] == "contradicts" and res["verdict"] == "not reproduced"
    good = [
        (
            s,
            _composite_row(
                {"x": (np.ones(4) + 0.01 * np.arange(4), np.zeros(4)), "y": (np.ones(4), np.zeros(4) - 0.1 * np.arange(4))}, s
            ),
        )
        for s in range(3)
    ]
    res = sw.pool_claim(good)
    assert res["checks"]["beats every baseline"]["outcome"] == "supports" and res["verdict"] == "reproduced"
