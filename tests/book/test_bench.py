import pytest

from icml26.book.bench import timeit


def test_timeit_reports_order_statistics():
    out = timeit(lambda: sum(range(1000)), repeat=5, min_time=0.001)
    assert out["min"] <= out["q25"] <= out["median"] <= out["q75"]
    assert out["min"] > 0
    with pytest.raises(ValueError, match="repeat"):
        timeit(lambda: None, repeat=0)


def test_compare_records_rows_per_size_and_keeps_runs_apart(tmp_path, monkeypatch):
    import json

    import pytest

    from icml26.book import bench

    monkeypatch.setenv("ICML26_RESULTS_DIR", str(tmp_path))
    monkeypatch.setenv("ICML26_RUN_KEY", "k1")
    for n in (10, 100):
        row = bench.compare(
            "99-x", "sum", lambda: None, lambda: sum(range(1000)), reference_name="python", size=n, scale="ci", seed=0, repeat=2
        )
        assert row["ratio"] == pytest.approx(row["reference_s"] / row["ours_s"])
    data = bench.load(tmp_path, "ci")
    assert len(data) == 1 and [r["size"] for r in data[0]["rows"]] == [10.0, 100.0] and data[0]["reference"] == "python"
    # a new run (another cache key) starts the record afresh
    monkeypatch.setenv("ICML26_RUN_KEY", "k2")
    bench.record("99-x", "sum", {"size": 5, "ours_s": 1.0, "reference_s": 2.0}, reference_name="python", scale="ci", seed=0)
    rows = json.loads((tmp_path / "ci" / "99-x" / "bench" / "sum.json").read_text())["rows"]
    assert rows == [{"size": 5.0, "ours_s": 1.0, "reference_s": 2.0, "ratio": 2.0}]
    with pytest.raises(ValueError, match="ours_s=0"):
        bench.record("99-x", "sum", {"size": 5, "ours_s": 0, "reference_s": 2.0}, reference_name="p", scale="ci", seed=0)
    with pytest.raises(ValueError, match="needs 'reference_s'"):
        bench.record("99-x", "sum", {"size": 5, "ours_s": 1.0}, reference_name="p", scale="ci", seed=0)


def test_timeit_pair_alternates_the_sides_and_counts_cpu_time():
    import time

    from icml26.book import bench

    calls = []
    a_stats, b_stats = bench.timeit_pair(lambda: calls.append("a"), lambda: calls.append("b"), repeat=3, warmup=1)
    assert calls == ["a", "b"] * 4  # one warm-up round, then a, b, a, b, ...: a load burst falls on both sides
    assert a_stats["repeat"] == b_stats["repeat"] == 3

    def spin():  # CPU work
        t0 = time.process_time()
        while time.process_time() - t0 < 0.01:
            pass

    sleeping, spinning = bench.timeit_pair(lambda: time.sleep(0.01), spin, repeat=3, warmup=0)
    # waiting is not work: a sleeping call costs (almost) no CPU time, a spinning one its 10 ms
    assert sleeping["median"] < 0.003 < 0.009 < spinning["median"]
    wall = bench.timeit(lambda: time.sleep(0.01), repeat=2, warmup=0)  # the default clock of timeit is wall time
    assert wall["median"] >= 0.009
    import pytest

    with pytest.raises(ValueError, match="repeat=0"):
        bench.timeit_pair(spin, spin, repeat=0)


def test_a_sample_pays_for_its_own_cycles():
    import gc
    import weakref

    from icml26.book import bench

    refs = []

    def make_cycle():
        a = type("Node", (), {})()
        a.self = a  # freed only by the cyclic collector
        refs.append(weakref.ref(a))

    assert gc.isenabled()
    bench._sample(make_cycle, 0.0, bench.time.process_time)
    assert refs and all(r() is None for r in refs)  # collected inside the sample
    assert gc.isenabled()  # and the collector is back on
