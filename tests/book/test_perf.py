"""Tests of icml26.book.perf: the performance page from benchmark and timing records."""

from icml26.book import bench, perf


def test_performance_page_from_records(toy, monkeypatch, tmp_path):
    monkeypatch.setenv("ICML26_RESULTS_DIR", str(toy.results_dir()))
    monkeypatch.setenv("ICML26_RUN_KEY", "k")  # as under the runner: rows go to the folder the page reads
    for n, (ours, ref) in {10: (1e-4, 4e-4), 100: (1e-3, 8e-3)}.items():
        bench.record(
            "01-toy", "step", {"size": n, "ours_s": ours, "reference_s": ref}, reference_name="POT", scale="full", seed=0
        )
    bench.record(
        "01-toy",
        "method vs baseline",
        {"size": 5, "ours_s": 2e-3, "reference_s": 1e-3},
        reference_name="the baseline",
        scale="full",
        seed=0,
        kind="cost",
    )
    perf.write_timing(toy, "run-full", wall_s=300.0, jobs=2, executed=8, cached=0, chapters_s=560.0)
    work = dict(scale="ci", tasks=4, work="abc", chapters=["01-toy", "02-toy"], seeds=[0, 1])
    perf.write_timing(toy, "sweep-ci-abc-w1", workers=1, wall_s=100.0, tasks_s=98.0, **work)
    perf.write_timing(toy, "sweep-ci-abc-w2", workers=2, wall_s=60.0, tasks_s=115.0, **work)
    # a later sweep of other work, on more workers, must not pair with the first one
    other = dict(scale="ci", tasks=4, work="def", chapters=["03-toy"], seeds=[0, 1, 2, 3])
    perf.write_timing(toy, "sweep-ci-def-w4", workers=4, wall_s=10.0, tasks_s=30.0, **other)
    fig = perf.benchmark_figure(bench.load(toy.results_dir(), "full"), tmp_path / "perf.png")
    assert fig is not None and fig.stat().st_size > 1000
    md = perf.performance_markdown(toy, "full", figure="perf.png")
    assert "| 01-toy | step | POT | n = 10 | 100.0 µs | 400.0 µs | 4.00× |" in md
    assert "|  |  |  | n = 100 | 1.00 ms | 8.00 ms | 8.00× |" in md
    assert "at least as fast as the reference at every size of every benchmark" in md
    # a cost comparison is shown apart, and its ratio below 1 does not count as a slow implementation
    costs = md[md.index("## Cost comparisons") :]
    assert "| 01-toy | method vs baseline | the baseline | n = 5 | 2.00 ms | 1.00 ms | 0.50× |" in costs
    assert "method vs baseline" not in md[: md.index("## Cost comparisons")]
    assert "every chapter at `full`, `--jobs 2` | 5.0 min" in md
    assert "speed-up of 1.67×" in md and md.count("speed-up") == 1
    assert "(chapters 01, 02; seeds 0, 1)" in md
    assert "nan" not in md.lower()


def test_a_slower_benchmark_is_named_and_bad_kinds_are_refused(toy, monkeypatch):
    import pytest

    monkeypatch.setenv("ICML26_RESULTS_DIR", str(toy.results_dir()))
    monkeypatch.setenv("ICML26_RUN_KEY", "k")
    bench.record("01-toy", "slow step", {"size": 3, "ours_s": 2.0, "reference_s": 1.0}, reference_name="ref", scale="ci", seed=0)
    assert "Slower than the reference at some size (1 of 1 benchmarks): 01-toy (slow step)" in perf.performance_markdown(
        toy, "ci"
    )
    with pytest.raises(ValueError, match="kind='speed'"):
        bench.record(
            "01-toy", "x", {"size": 1, "ours_s": 1.0, "reference_s": 1.0}, reference_name="r", scale="ci", seed=0, kind="speed"
        )


def test_performance_page_without_records(toy):
    md = perf.performance_markdown(toy, "full")
    assert "No chapter has recorded a benchmark" in md and "No whole-book timing" in md


def test_sweep_work_id_names_the_work_not_its_order():
    from icml26.book.sweep import sweep_work_id

    a = sweep_work_id("ci", [("01-a", 0), ("02-b", 1)])
    assert a == sweep_work_id("ci", [("02-b", 1), ("01-a", 0)])
    assert a != sweep_work_id("full", [("01-a", 0), ("02-b", 1)])
    assert a != sweep_work_id("ci", [("01-a", 0), ("02-b", 0)])


def test_makespan_is_longest_first_list_scheduling():
    import pytest

    assert perf.makespan([3.0, 3.0, 2.0, 2.0, 2.0], 2) == 7.0  # LPT: {3, 2, 2} and {3, 2}
    assert perf.makespan([5.0, 1.0], 8) == 5.0  # never below the longest task
    assert perf.makespan([1.0, 2.0, 3.0], 1) == 6.0
    assert perf.makespan([], 4) == 0.0
    with pytest.raises(ValueError, match="workers=0"):
        perf.makespan([1.0], 0)
    with pytest.raises(ValueError, match="task times"):
        perf.makespan([float("nan")], 2)


def test_the_cost_of_a_seed_comes_from_the_runs(toy):
    md = "\n".join(perf.seed_cost_markdown(toy))
    assert "No chapter has run yet" in md
    ch = toy.select(["01"])[0]
    assert toy.execute(ch, "ci", 0, progress=False).status == "ok"
    rec = toy.record("ci", ch)
    secs = rec.cpu_s  # the kernel's CPU time where recorded; the wall time of an older record
    assert 0 < secs == perf.chapter_seconds(rec)
    rec.cpu_s = 0.0
    assert perf.chapter_seconds(rec) == rec.wall_s
    md = "\n".join(perf.seed_cost_markdown(toy))
    assert f"| {ch.id} | {perf._fmt_s(secs)} | — |" in md
    assert f"| 2 | {perf._fmt_s(secs)} | — | {2 * 3600 / secs:.1f} | — |" in md


def test_saved_times_appear_beside_the_current_ones_on_the_status_page(toy, tmp_path):
    import json
    import shutil

    import pytest

    from icml26.book import site
    from icml26.book.runner import Book

    with pytest.raises(ValueError, match="no chapter has a good run at full scale"):
        perf.save_times(toy, "full", "0.1")
    with pytest.raises(ValueError, match="label 'a b'"):
        perf.save_times(toy, "full", "a b")
    ch = toy.select(["01"])[0]
    rec = toy.execute(ch, "full", 0, progress=False)
    assert rec.status == "ok" and rec.cpu_s > 0
    # an earlier version lives in another folder: its runs are saved into this book's data/timings/
    old = Book(shutil.copytree(toy.root, tmp_path / "old"))
    f = old.executed_dir("full", ch) / "run.json"
    payload = json.loads(f.read_text())
    payload["cpu_s"] = 4 * rec.cpu_s
    f.write_text(json.dumps(payload))
    out = perf.save_times(toy, "full", "0.1", source=old)
    assert out == toy.data_dir / "timings" / "full-0.1.json"
    saved = json.loads(out.read_text())
    assert saved["label"] == "0.1" and set(saved["chapters"]) == {"01-toy"}
    assert saved["cpu"] == site.cpu_description()  # the machine the times belong to
    status = site.status_markdown(toy)
    assert "`full` CPU in 0.1" in status and "`full` CPU now ÷ then" in status
    assert f"on {site.cpu_description()}." in status
    saved.pop("cpu")  # a file saved before the CPU was recorded: the ratio is said to maybe compare machines
    out.write_text(json.dumps(saved))
    assert "on a CPU that was not recorded" in site.status_markdown(toy)
    row = next(line for line in status.splitlines() if line.startswith("| 01-toy |"))
    assert f"| {4 * rec.cpu_s:.1f} s | 0.25 |" in row
    # the cost of a seed is the CPU time where it was recorded
    assert perf.seed_cost(toy, "full") == {"01-toy": rec.cpu_s}
