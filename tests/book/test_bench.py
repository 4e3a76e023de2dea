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
        row = bench.compare("99-x", "sum", lambda: None, lambda: sum(range(1000)), reference_name="python", size=n, scale="ci", seed=0, repeat=2)
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
