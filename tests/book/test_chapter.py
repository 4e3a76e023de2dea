"""Tests of icml26.book.chapter: parameters, verdicts, claim records."""

import json

import numpy as np
import pytest

from icml26.book import chapter


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
    assert chapter.verdict({"a": True}, kind="derived") == "verified"
    assert chapter.verdict({"a": True, "b": False}, kind="derived") == "fails"
    assert chapter.verdict({"a": True, "b": False}, kind="stand-in") == "does not illustrate"
    assert chapter.verdict({"a": True}, kind="own") == "holds"
    with pytest.raises(ValueError, match="at least one check"):
        chapter.verdict({})
    with pytest.raises(ValueError, match="kind='theory' is not a claim kind"):
        chapter.verdict({"a": True}, kind="theory")
    c = chapter.Claim(
        id="x", claim="c", kind="paper", paper="1", ours="2", checks={"k": chapter.exact(np.bool_(False), "a count")}
    )
    assert c.verdict == "not reproduced" and c.checks == {"k": False} and c.outcomes == {"k": "contradicts"}


def test_claim_without_kind_fails():
    with pytest.raises(TypeError, match="kind"):
        chapter.Claim(id="x", claim="c", paper="1", ours="2", checks={"k": True})  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="kind=''"):
        chapter.Claim(id="x", claim="c", kind="", paper="1", ours="2", checks={"k": True})


def test_by_construction_check_cannot_lift_a_verdict():
    # a check that holds by construction is refused among the deciding checks ...
    with pytest.raises(ValueError, match="holds by construction"):
        chapter.Claim(
            id="x",
            claim="c",
            kind="paper",
            paper="1",
            ours="2",
            checks={"real": False, "design": chapter.ByConstruction(True, "cheaper by design")},
        )
    # ... and shown beside the claim as sanity, it leaves the verdict to the real checks
    c = chapter.Claim(
        id="x",
        claim="c",
        kind="paper",
        paper="1",
        ours="2",
        checks={"real": chapter.exact(False, "an identity")},
        sanity={"design": chapter.ByConstruction(True)},
    )
    assert c.verdict == "not reproduced" and c.sanity == {"design": True}


def test_checks_must_be_bools_or_decisions():
    with pytest.raises(TypeError, match="must be a bool or a Decision"):
        chapter.Claim(id="x", claim="c", kind="paper", paper="1", ours="2", checks={"k": 0.7})


def test_paired_better_matches_scipy_one_sided_t_test():
    from scipy import stats

    rng = np.random.default_rng(0)
    a, b = rng.normal(1.0, 1.0, 8), rng.normal(0.0, 1.0, 8)
    d = chapter.paired_better(a, b)
    p = stats.ttest_rel(a, b, alternative="greater").pvalue
    assert d.stats["p"] == pytest.approx(p) and d.holds == (p < 0.05)
    lower = chapter.paired_better(b, a, higher_is_better=False)
    assert lower.stats["p"] == pytest.approx(p)
    with_margin = chapter.paired_better(a, b, margin=0.5)
    assert with_margin.stats["p"] == pytest.approx(stats.ttest_1samp(a - b - 0.5, 0.0, alternative="greater").pvalue)


def test_paired_better_does_not_call_noise_a_result():
    # the LOCK row: margin +0.016 with sd 0.024 over 5 replicates, 3 of 5 wins
    d = np.array([0.040, 0.030, 0.020, -0.010, -0.0])
    d = d - d.mean() + 0.016
    d = d / d.std(ddof=1) * 0.024 + (0.016 - (d / d.std(ddof=1) * 0.024).mean())
    dec = chapter.paired_better(d, np.zeros(5))
    assert not dec.holds and "p =" in dec.detail
    # identical differences: degenerate test, decided by the common value against the margin
    assert chapter.paired_better([2.0, 2.0], [1.0, 1.0]).holds
    assert not chapter.paired_better([1.0, 1.0], [1.0, 1.0]).holds
    with pytest.raises(ValueError, match="equal lengths"):
        chapter.paired_better([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="at least 2 pairs"):
        chapter.paired_better([1.0], [0.0])


def test_paired_noninferior_lower_bound():
    from scipy import stats

    a = np.array([0.90, 0.91, 0.89, 0.92])
    b = np.array([0.91, 0.91, 0.90, 0.91])
    dec = chapter.paired_noninferior(a, b, margin=0.01)
    diff = a - b
    lower = diff.mean() - stats.t.ppf(0.95, 3) * diff.std(ddof=1) / 2
    assert dec.stats["lower"] == pytest.approx(lower) and dec.holds == (lower > -0.01)
    with pytest.raises(ValueError, match="margin"):
        chapter.paired_noninferior(a, b, margin=-1)


def test_exceeds_and_value():
    assert chapter.exceeds(0.3, 0.2, rule="fixed").holds
    assert not chapter.exceeds(0.3, 0.2, rule="fixed", higher=False).holds
    with pytest.raises(ValueError, match="finite"):
        chapter.exceeds(float("nan"), 0.2, rule="x")
    v = chapter.Value.of([1.0, 2.0, 3.0], unit="%")
    assert (v.mean, v.sd, v.n, v.unit) == (2.0, 1.0, 3, "%") and v.values == (1.0, 2.0, 3.0)
    with pytest.raises(ValueError, match="finite"):
        chapter.Value.of([1.0, float("nan")])
    c = chapter.Claim(
        id="x",
        claim="c",
        kind="paper",
        paper="4.2%",
        ours="3%",
        checks={"k": chapter.exact(True, "a count")},
        paper_value=4.2,
        ours_value=[3.0, 3.0],
    )
    assert c.paper_value.mean == 4.2 and c.ours_value.n == 2


def test_mean_sd_format():
    assert chapter.mean_sd([0.1, 0.3], pct=True) == "20% ± 14% (n=2)"
    assert chapter.mean_sd([2.0]) == "2"
    with pytest.raises(ValueError):
        chapter.mean_sd([])


def test_record_claims_writes_json(tmp_path, monkeypatch):
    monkeypatch.setenv("ICML26_RESULTS_DIR", str(tmp_path))
    monkeypatch.setenv("ICML26_RUN_KEY", "k123")
    dec = chapter.paired_effect([2.0, 3.0, 4.0], [1.0, 1.5, 2.0], names=("new", "old"), smallest_effect=0.5, basis="stated")
    claims = [
        chapter.Claim(
            id="a", claim="c", kind="paper", paper="p", ours="o", checks={"x": chapter.exact(True, "a count")}, note="n"
        ),
        chapter.Claim(
            id="b",
            claim="d",
            kind="paper",
            paper="",
            ours="o",
            checks={"better": dec},
            stand_in="digits",
            revised="tolerance 3 s.e. -> 0.01",
        ),
    ]
    table = chapter.record_claims("99-toy", claims, scale="ci", seed=0, extra={"v": np.float64(1.5)})
    payload = json.loads((tmp_path / "ci" / "99-toy" / "main.json").read_text())
    assert payload["claims"][0]["verdict"] == "reproduced" and payload["claims"][0]["kind"] == "paper"
    assert payload["run_key"] == "k123"
    assert payload["claims"][1]["decisions"]["better"]["rule"].startswith("effect of new over old")
    assert payload["extra"]["v"] == 1.5
    assert list(table.columns) == ["kind", "claim", "paper", "this run", "verdict", "decided by", "stand-in", "note"]
    assert table.loc["b", "paper"] == "—" and "Revised after a result" in table.loc["b", "note"]
    assert not table.isna().any().any()
    with pytest.raises(ValueError, match="unique"):
        chapter.record_claims("99-toy", claims * 2, scale="ci", seed=0)
    with pytest.raises(TypeError, match="takes Claim rows"):
        chapter.record_claims("99-toy", [{"id": "a"}], scale="ci", seed=0)


def test_setup_bounds_the_seed():
    with pytest.raises(ValueError, match="from 0 to 4294967295"):
        chapter.setup("ci", 2**70)


def test_by_scale_overrides_are_checked():
    cfg = dict(n_seeds=3, lr=0.1, name="a", sizes=[1, 2])
    assert chapter.by_scale("ci", ci=cfg, full={}, overrides={"n_seeds": 5.0, "lr": 1}) == {**cfg, "n_seeds": 5, "lr": 1}
    assert chapter.by_scale("ci", ci=cfg, full={}, overrides={}) is cfg
    with pytest.raises(
        ValueError, match=r"'n_sed' is not a setting of this chapter; its settings at scale 'ci' are lr, n_seeds, name, sizes"
    ):
        chapter.by_scale("ci", ci=cfg, full={}, overrides={"n_sed": 5})
    with pytest.raises(ValueError, match=r"n_seeds=2.5 is a float; the setting's default is 3 \(int\)"):
        chapter.by_scale("ci", ci=cfg, full={}, overrides={"n_seeds": 2.5})
    with pytest.raises(ValueError, match="is a str"):
        chapter.by_scale("ci", ci=cfg, full={}, overrides={"sizes": "12"})
    with pytest.raises(TypeError, match="must be a dict of settings"):
        chapter.by_scale("ci", ci=cfg, full={}, overrides=["n_seeds"])
