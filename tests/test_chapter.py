"""Tests of icml26.chapter: parameters, verdicts, claim records."""

import json

import numpy as np
import pytest

from icml26 import chapter


def test_check_scale_names_valid_values():
    assert chapter.check_scale("ci") == "ci"
    with pytest.raises(ValueError, match=r"scale='huge' is not a valid scale; use one of 'ci', 'full'"):
        chapter.check_scale("huge")


@pytest.mark.parametrize("bad", [-1, 1.5, "0", True, None])
def test_check_seed_rejects(bad):
    with pytest.raises(ValueError, match="seed="):
        chapter.check_seed(bad)


def test_by_scale_and_setup_are_deterministic():
    assert chapter.by_scale("ci", ci=1, full=2) == 1
    assert chapter.by_scale("full", ci=1, full=2) == 2
    a = chapter.setup("ci", 3).random(5)
    b = chapter.setup("ci", 3).random(5)
    np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError):
        chapter.setup("medium", 0)


def test_verdict_rules():
    assert chapter.verdict({"a": True, "b": True}) == "reproduced"
    assert chapter.verdict({"a": True, "b": False}) == "partly reproduced"
    assert chapter.verdict({"a": False}) == "not reproduced"
    with pytest.raises(ValueError, match="at least one check"):
        chapter.verdict({})
    c = chapter.Claim(id="x", claim="c", paper="1", ours="2", checks={"k": np.bool_(False)})
    assert c.verdict == "not reproduced" and c.checks == {"k": False}


def test_mean_sd_format():
    assert chapter.mean_sd([0.1, 0.3], pct=True) == "20% ± 14% (n=2)"
    assert chapter.mean_sd([2.0]) == "2"
    with pytest.raises(ValueError):
        chapter.mean_sd([])


def test_record_claims_writes_json(tmp_path, monkeypatch):
    monkeypatch.setenv("ICML26_RESULTS_DIR", str(tmp_path))
    claims = [chapter.Claim(id="a", claim="c", paper="p", ours="o", checks={"x": True}, note="n")]
    table = chapter.record_claims("99-toy", claims, scale="ci", seed=0, extra={"v": np.float64(1.5)})
    payload = json.loads((tmp_path / "ci" / "99-toy" / "main.json").read_text())
    assert payload["claims"][0]["verdict"] == "reproduced"
    assert payload["extra"]["v"] == 1.5
    assert list(table.columns) == ["claim", "paper", "this run", "verdict", "note"]
    with pytest.raises(ValueError, match="unique"):
        chapter.record_claims("99-toy", claims * 2, scale="ci", seed=0)
