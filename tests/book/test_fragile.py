"""Tests of icml26.book.fragile: a verdict that rounding alone can move reads fragile."""

import pytest

from icml26.book import fragile as fr


def _dec(lo, hi, *, m=0.0, d=0.01, outcome=None):
    from icml26.book.evidence import classify

    outcome = outcome or classify(lo, hi, margin=m, smallest_effect=d)
    return {
        "outcome": outcome,
        "stats": {"ci_low": lo, "ci_high": hi, "margin": m, "smallest_effect": d, "effect": (lo + hi) / 2},
    }


def _row(checks, *, control=None, guards=None, cid="c"):
    from icml26.book.chapter import Decision, verdict

    as_dec = {k: Decision(v["outcome"] == "supports", "", "", outcome=v["outcome"]) for k, v in checks.items()}
    ctl = {k: Decision(v["outcome"] == "supports", "", "", outcome=v["outcome"]) for k, v in (control or {}).items()}
    grd = {k: Decision(v["outcome"] == "supports", "", "", outcome=v["outcome"]) for k, v in (guards or {}).items()}
    return {
        "id": cid,
        "kind": "paper",
        "outcomes": {k: v["outcome"] for k, v in checks.items()},
        "decisions": checks,
        "control": control or {},
        "guards": guards or {},
        "verdict": verdict(as_dec, "paper", control=ctl, guards=grd),
    }


def test_an_interval_end_within_the_rounding_spread_of_its_line_is_fragile():
    # 08 learnable-groupsum's shape: the upper end 0.00002 below the smallest effect 0.01
    a = _row({"x": _dec(-0.0532, 0.00998)})
    b = _row({"x": _dec(-0.0517, 0.0146)})  # the same seed under the second kernel family
    assert a["verdict"] == "not reproduced" and b["verdict"] == "undecided"
    comp = fr.compare_runs([a], [b])
    assert comp["flips"] == {"c": ("not reproduced", "undecided")}
    assert comp["max_shift"] == pytest.approx(0.00462) and comp["decisions"] == 1 and comp["identical"] == 0
    why = fr.fragile_reason(a, comp["shifts"]["c"], flip=comp["flips"]["c"])
    assert "seed 0 reads not reproduced with the default kernels and undecided" in why
    # without the flip, the distance rule alone still marks it
    why = fr.fragile_reason(a, comp["shifts"]["c"])
    assert "upper end +0.00998 lies 2e-05 below its line 0.01, within the rounding spread 0.0046" in why


def test_a_decision_far_from_its_line_or_a_run_that_did_not_move_is_not_fragile():
    a = _row({"x": _dec(0.03, 0.06)})  # supports, 0.03 above the margin
    assert fr.fragile_reason(a, {("checks", "x"): 0.001}) == ""
    # bit-identical reruns: spread 0, nothing is fragile, even on the line's doorstep
    b = _row({"x": _dec(1e-12, 0.06)})
    assert fr.fragile_reason(b, {("checks", "x"): 0.0}) == ""
    # not measured: None, never a silent "not fragile"
    assert fr.fragile_reason(a, None) is None


def test_near_line_decisions_that_cannot_move_the_verdict_do_not_make_it_fragile():
    # the control contradicts far from its line, so the claim is untestable whatever the near-line check does
    a = _row({"x": _dec(0.0001, 0.05)}, control={"ctl": _dec(-0.5, -0.4)})
    assert a["verdict"] == "untestable here"
    assert fr.fragile_reason(a, {("checks", "x"): 0.001, ("control", "ctl"): 0.001}) == ""
    # but a control near its own line does
    b = _row({"x": _dec(0.03, 0.05)}, control={"ctl": _dec(0.0002, 0.3)})
    assert b["verdict"] == "reproduced"
    assert "'ctl'" in fr.fragile_reason(b, {("checks", "x"): 0.001, ("control", "ctl"): 0.001})
    # and a guard near its line can lower reproduced to partly: fragile
    g = _row({"x": _dec(0.03, 0.05)}, guards={"g": _dec(-0.2, 0.0099)})
    assert g["verdict"] == "partly reproduced"
    assert "'g'" in fr.fragile_reason(g, {("checks", "x"): 0.0, ("guards", "g"): 0.001})


def test_pooled_evidence_settles_a_seed_that_flipped():
    a = _row({"x": _dec(-0.0532, 0.00998)})
    shifts = {("checks", "x"): 0.0048}
    pooled_far = {"kind": "paper", "verdict": "not reproduced", "checks": {"x": _dec(-0.03, -0.004)}, "guards": {}, "control": {}}
    assert fr.fragile_reason(pooled_far, shifts, pooled=True, flip=("not reproduced", "undecided")) == ""
    pooled_near = {"kind": "paper", "verdict": "not reproduced", "checks": {"x": _dec(-0.03, 0.008)}, "guards": {}, "control": {}}
    assert "within the rounding spread" in fr.fragile_reason(pooled_near, shifts, pooled=True)
    # claim_fragility picks the pooled judgement when a sweep pooled the claim
    comps = {"08-x": fr.compare_runs([a], [_row({"x": _dec(-0.0517, 0.0146)})])}
    assert fr.claim_fragility(comps, "08-x", a) != ""
    assert fr.claim_fragility(comps, "08-x", a, {"pooled": {k: v for k, v in pooled_far.items() if k != "kind"}}) == ""
    assert fr.claim_fragility(comps, "09-other", a) is None


def test_compare_runs_names_claims_in_one_run_only():
    a, b = _row({"x": _dec(0.03, 0.06)}, cid="p"), _row({"x": _dec(0.03, 0.06)}, cid="q")
    comp = fr.compare_runs([a], [b])
    assert comp["missing"] == ["p", "q"] and comp["decisions"] == 0 and comp["flips"] == {}


def test_the_front_page_status_page_and_claims_data_mark_a_flipped_verdict_fragile(toy):
    """A synthetic second-kernel-family record whose verdict differs from seed 0's: the claim reads fragile."""
    import json
    import shutil

    from icml26.book import scorecard, site
    from icml26.book import sweep as sw

    ch = toy.select(["01"])[0]
    toy.execute(ch, "ci", 0, progress=False)
    assert "fragility not measured" not in site.scorecard_markdown(toy, "ci")  # no sweep: the old single-seed line
    assert "No chapter has been rerun under a second kernel family" in site.status_markdown(toy)
    sw.plan(toy, [ch], [0], "ci")  # the run becomes the sweep's seed-0 task
    src, dest = sw.task_dir(toy, "ci", 0, ch), sw.task_dir(toy, "ci", 0, ch, kernels="avx2")
    shutil.copytree(src, dest)
    rec = json.loads((dest / "run.json").read_text())
    (dest / "run.json").write_text(json.dumps({**rec, "kernels": "avx2", "source": ""}))
    main = json.loads((dest / "results" / "main.json").read_text())
    row = main["claims"][0]
    assert row["verdict"] == "reproduced"
    row.update(verdict="not reproduced", outcomes={"equal": "contradicts"}, checks={"equal": False})
    (dest / "results" / "main.json").write_text(json.dumps(main))
    card = site.scorecard_markdown(toy, "ci")
    assert "(the undecided include 1 fragile: 01 `one`)" in card and "**0 reproduced**" in card
    assert "| *fragile* (reproduced) |" in card
    detail = scorecard.claims_detail_markdown(toy, "ci")
    assert "*fragile* (reads reproduced; seed 0 reads reproduced with the default kernels and not reproduced" in detail
    status = site.status_markdown(toy)
    assert "## Rounding spread" in status and "| 01-toy | 0 | 0 | 0 | 0 | `one`: reproduced → not reproduced |" in status
    (data,) = [r for r in scorecard.claims_data(toy, "ci") if r["id"] == "one"]
    assert data["fragile"] is True and "not reproduced with the second kernel family" in data["fragile_why"]
    # the same record under both families: measured, and not fragile
    shutil.copy2(src / "results" / "main.json", dest / "results" / "main.json")
    (data,) = [r for r in scorecard.claims_data(toy, "ci") if r["id"] == "one"]
    assert data["fragile"] is False and data["fragile_why"] == ""


def test_the_history_line_reads_a_fragile_verdict_as_undecided_in_this_build():
    """A claim whose interval end lies within the rounding spread of its line is *undecided* in the history line too."""
    import json
    from dataclasses import asdict

    import numpy as np

    from icml26.book import chapter
    from icml26.book.scorecard import history_lines

    d = np.array([0.02, 0.05, 0.03, 0.04])  # supports: the lower end sits just above 0
    dec = chapter.paired_effect(d, np.zeros(4), smallest_effect=0.5, basis="stated", replicates=[0, 1, 2, 3])
    row = json.loads(json.dumps(asdict(chapter.Claim(id="c", claim="c", kind="paper", paper="", ours="", checks={"x": dec}))))
    assert row["verdict"] == "reproduced"
    past = {("99", "c"): [{"version": "0.5.0", "verdict": "reproduced", "scale": "full", "note": "", "stated": True}]}
    lo = row["decisions"]["x"]["stats"]["ci_low"]
    near = {"99-toy": {"shifts": {"c": {("checks", "x"): 2 * lo}}, "flips": {}}}
    far = {"99-toy": {"shifts": {"c": {("checks", "x"): lo / 10}}, "flips": {}}}
    assert history_lines("99-toy", [row], history=past, comparisons=far) == []  # unchanged, not fragile
    (line,) = history_lines("99-toy", [row], history=past, comparisons=near)
    assert "undecided in this build" in line


def _noisy_row(diffs, seed, *, cid="c"):
    """A claim record of one seed whose one core check is a paired decision on ``diffs`` (18 drivers-differ's shape)."""
    import numpy as np

    from icml26.book.evidence import decide

    st = decide(np.asarray(diffs, dtype=float), smallest_effect=0.2, margin=0.0)
    st.update(diffs=list(diffs), replicates=[f"{seed}-{i}" for i in range(len(diffs))])
    return _row({"x": {"outcome": st["outcome"], "stats": st}}, cid=cid)


def test_a_pooled_verdict_takes_the_spread_measured_on_the_pooled_evidence_when_every_seed_was_rerun():
    from icml26.book import sweep as sw

    base = [[0.1, -0.1, 0.05, -0.05, 0.0, 0.08], [-0.08, 0.1, -0.02, 0.03, -0.06, 0.0], [0.02, -0.04, 0.06, -0.1, 0.05, -0.01]]
    default = {"c": [(s, _noisy_row(d, s)) for s, d in enumerate(base)]}
    agg = sw.aggregate(default["c"])
    lo = agg["pooled"]["checks"]["x"]["stats"]["ci_low"]
    assert agg["overall"] == "not reproduced" and -0.06 < lo < 0  # the lower end sits just under its line 0
    # seed 0 moved its interval by 0.11 under the second family: borrowed for the pool, that spread makes it fragile
    seed0 = {("checks", "x"): 0.11}
    comp = {"ch": {"shifts": {"c": seed0}, "flips": {}}}
    assert "within the rounding spread 0.11" in fr.claim_fragility(comp, "ch", default["c"][0][1], agg)

    def with_rerun(shift_by_seed):
        other = {"c": [(s, _noisy_row([x + shift_by_seed[s] for x in d], s)) for s, d in enumerate(base)]}
        comp = {"ch": {"shifts": {"c": seed0}, "flips": {}, **fr._pooled_shifts(default, other, 1)}}
        return comp, fr.claim_fragility(comp, "ch", default["c"][0][1], agg)

    # every seed rerun, the pooled interval moved by 0.005: measured, that spread leaves the verdict decided
    comp, why = with_rerun([0.005, 0.005, 0.005])
    assert comp["ch"]["pooled_seeds"] == [0, 1, 2]
    assert comp["ch"]["pooled_shifts"]["c"][("checks", "x")] == pytest.approx(0.005)
    assert why == ""
    # ...and one that moved the pooled interval past its line is fragile, and says the spread was the pool's
    comp, why = with_rerun([0.2, 0.2, 0.2])
    assert "spread of the pooled evidence, both kernel families over seeds 0-2" in why
    # a second family that reran seed 0 only measures no pooled spread: seed 0's stands in
    other = {"c": [(0, _noisy_row(base[0], 0))]}
    assert fr._pooled_shifts(default, other, 1) == {}


def test_the_status_page_names_the_chapters_whose_pooled_spread_was_measured(toy, monkeypatch):
    from icml26.book import site

    comp = {
        "shifts": {"c": {("checks", "x"): 0.11}},
        "flips": {},
        "decisions": 1,
        "identical": 0,
        "max_shift": 0.11,
        "max_relative": 0.5,
        "worst": "c: x",
        "missing": [],
    }
    measured = {**comp, "pooled_shifts": {"c": {("checks", "x"): 0.0105}}, "pooled_seeds": [0, 1, 2]}
    for comps, expected in (({"01-toy": comp}, False), ({"01-toy": measured}, True)):
        monkeypatch.setattr(fr, "kernel_comparisons", lambda book, scale, c=comps: c if scale == "full" else {})
        text = "\n".join(site.rounding_markdown(toy))
        line = "01-toy (seeds 0-2): largest shift of a pooled interval end 0.0105, against seed 0's 0.11"
        assert (line in text) is expected, text
