import pytest

from icml26.book.bench import timeit


def test_timeit_reports_order_statistics():
    out = timeit(lambda: sum(range(1000)), repeat=5, min_time=0.001)
    assert out["min"] <= out["q25"] <= out["median"] <= out["q75"]
    assert out["min"] > 0
    with pytest.raises(ValueError, match="repeat"):
        timeit(lambda: None, repeat=0)
