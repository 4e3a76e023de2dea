"""Verdict history read from CHANGELOG.md tables (icml26.book.history)."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from icml26.book import history
from icml26.book.history import history_line, load_history, parse_changelog, verdict_history

ROOT = Path(__file__).resolve().parents[2]

SNIPPET = """\
# Changelog

## 0.5.0 — 2026-12-04

### Verdicts (0.4.1 → 0.5.0, `full`, seed 0)

| claim | 0.4.1 | 0.5.0 | core check(s) (n) | what changed |
|---|---|---|---|---|
| 02 `b-hat` | inconclusive (control failed) | **reproduced** | +0.374 (10) | control re-stated |
| 08 `learnable-groupsum` | inconclusive (other CPU) | **not reproduced** | −0.0216 (9) | nothing |
| 05 `decoupled-then-joint`, 09 `gfd-vs-ae`, `rfd-not-gfd`, 11 `smaller-drop` | inconclusive | *undecided* | n≈31 | more episodes |
| 12 `fe-beats-memit`, `onelayer-weakest` | inconclusive (control failed) | *untestable here* | control | layers |

## 0.4.1 — 2026-12-02

One verdict changed:

| claim | before (0.4.0, full seed 0) | after (0.4.1, full seed 0) | core check after: effect → outcome |
|---|---|---|---|
| 08 `learnable-groupsum` | not reproduced: −0.0216 [−0.0532, +0.00998] | inconclusive | −0.0185 → inconclusive |

## 0.4.0 — 2026-12-02

No paper-claim verdict changed.

## 0.3.0 — 2026-12-02

### Verdicts that changed (0.2.0 → 0.3.0)

| claim | before (0.2.0, full seed 0) | after (0.3.0, full seed 0) | core checks after |
|---|---|---|---|
| 02 `b-hat` | inconclusive | inconclusive | control failed |
| 02 `std-vs-n` | now kind *derived*: verified | — | — |
| 05 `decoupled-then-joint` | reproduced | inconclusive | n≈31 |
| 08 `learnable-groupsum` | not reproduced | not reproduced | contradicts |

## 0.2.0 — 2026-12-01

### Verdicts that changed (0.1.0 → 0.2.0)

| claim | before (0.1.0, ci seed 0) | after (full, seed 0) | core checks |
|---|---|---|---|
| 02 `b-hat` | reproduced | inconclusive | control failed |
| 02 `std-vs-n` | reproduced | now kind *derived*: verified | — |
| 05 `decoupled-then-joint` | not reproduced | reproduced | supports |
| 08 `learnable-groupsum` | not reproduced | not reproduced | contradicts |
| 16 `perturb-key-all-layers` | — | inconclusive | n≈6 |

## 0.1.0

The first complete book.
"""


def _quiet(fn, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return fn(*args)


def test_versions_oldest_first():
    assert history.versions(SNIPPET) == ["0.1.0", "0.2.0", "0.3.0", "0.4.0", "0.4.1", "0.5.0"]
    assert history.VERSIONS[:6] == ("0.1.0", "0.2.0", "0.3.0", "0.4.0", "0.4.1", "0.5.0")


def test_parse_every_format():
    p = _quiet(parse_changelog, SNIPPET)
    # 0.1.0's before column is at ci scale; 0.2.0's "after (full, seed 0)" is 0.2.0 itself
    assert p[("02", "b-hat")]["0.1.0"] == {"verdict": "reproduced", "scale": "ci", "note": "", "source": "CHANGELOG 0.2.0"}
    assert p[("02", "b-hat")]["0.2.0"]["verdict"] == "inconclusive"
    assert p[("02", "b-hat")]["0.2.0"]["scale"] == "full"
    assert p[("02", "b-hat")]["0.2.0"]["source"] == "CHANGELOG 0.2.0, 0.3.0"
    # bold and italic cells, a parenthetical note
    assert p[("02", "b-hat")]["0.5.0"]["verdict"] == "reproduced"
    assert p[("02", "b-hat")]["0.4.1"] == {
        "verdict": "inconclusive",
        "scale": "full",
        "note": "control failed",
        "source": "CHANGELOG 0.5.0",
    }
    # 0.4.1's before column states 0.4.0; "not reproduced: …" is not "reproduced"
    assert p[("08", "learnable-groupsum")]["0.4.0"]["verdict"] == "not reproduced"
    assert p[("08", "learnable-groupsum")]["0.4.0"]["source"] == "CHANGELOG 0.4.1"
    # 0.4.1 is stated twice; the note comes from 0.5.0's table
    assert p[("08", "learnable-groupsum")]["0.4.1"]["note"] == "other CPU"
    assert p[("08", "learnable-groupsum")]["0.4.1"]["source"] == "CHANGELOG 0.4.1, 0.5.0"
    # a multi-claim row: a bare id belongs to the last chapter number before it
    for claim in [("05", "decoupled-then-joint"), ("09", "gfd-vs-ae"), ("09", "rfd-not-gfd"), ("11", "smaller-drop")]:
        assert p[claim]["0.5.0"]["verdict"] == "undecided", claim
        assert p[claim]["0.4.1"]["verdict"] == "inconclusive", claim
    assert p[("12", "onelayer-weakest")]["0.5.0"]["verdict"] == "untestable here"
    assert ("05", "rfd-not-gfd") not in p and ("12", "rfd-not-gfd") not in p
    # a kind change and "—" are not paper-claim verdicts
    assert set(p[("02", "std-vs-n")]) == {"0.1.0"}
    assert set(p[("16", "perturb-key-all-layers")]) == {"0.2.0"}


def test_carry_forward_marks_unstated_versions():
    h = _quiet(verdict_history, SNIPPET)
    b_hat = h[("02", "b-hat")]
    assert [e["version"] for e in b_hat] == ["0.1.0", "0.2.0", "0.3.0", "0.4.0", "0.4.1", "0.5.0"]
    assert [e["stated"] for e in b_hat] == [True, True, True, False, True, True]
    assert b_hat[3]["verdict"] == "inconclusive" and b_hat[3]["source"] == "CHANGELOG 0.3.0"
    # first entry is the first stated version; 0.4.0 is stated by 0.4.1's before column
    perturb = h[("16", "perturb-key-all-layers")]
    assert perturb[0]["version"] == "0.2.0"
    assert [e["stated"] for e in perturb] == [True, False, False, False, False]
    groupsum = h[("08", "learnable-groupsum")]
    assert all(e["stated"] for e in groupsum)
    # 09's claims first appear in 0.5.0's table (as 0.4.1's before)
    assert [(e["version"], e["verdict"]) for e in h[("09", "gfd-vs-ae")]] == [("0.4.1", "inconclusive"), ("0.5.0", "undecided")]
    # a claim that changed kind is not carried past the change
    assert [e["version"] for e in h[("02", "std-vs-n")]] == ["0.1.0"]


def test_history_line():
    h = _quiet(verdict_history, SNIPPET)
    assert history_line(h[("08", "learnable-groupsum")]) == (
        "not reproduced in 0.1.0 (ci) → inconclusive in 0.4.1 (other CPU) → not reproduced in 0.5.0"
    )
    assert history_line(h[("05", "decoupled-then-joint")]) == (
        "not reproduced in 0.1.0 (ci) → reproduced in 0.2.0 → inconclusive in 0.3.0 → undecided in 0.5.0"
    )
    # unchanged: nothing to say, also when this run agrees
    unchanged = [{"version": v, "verdict": "reproduced", "scale": "full", "note": ""} for v in ("0.3.0", "0.4.0")]
    assert history_line(unchanged) == ""
    assert history_line(unchanged, "reproduced") == ""
    assert history_line([]) == "" and history_line([], "undecided") == ""
    # the current verdict only where it differs from the last entry
    assert history_line(unchanged, "undecided") == "reproduced in 0.3.0 → undecided in this run"
    assert history_line(h[("02", "b-hat")], "reproduced") == history_line(h[("02", "b-hat")])
    assert history_line(h[("02", "b-hat")], "undecided", "seed 3").endswith("→ reproduced in 0.5.0 → undecided in seed 3")
    # historical words are kept verbatim: inconclusive and undecided differ
    assert history_line(h[("09", "gfd-vs-ae")]) == "inconclusive in 0.4.1 → undecided in 0.5.0"


def test_missing_changelog(tmp_path):
    assert _quiet(load_history, tmp_path) == {}


def test_garbage_rows_warn_and_do_not_raise(tmp_path):
    text = SNIPPET.replace(
        "| 08 `learnable-groupsum` | inconclusive (other CPU)",
        "| `no-chapter` | reproduced | reproduced | x | y |\n"
        "| 03 `too-short` |\n"
        "| 03 `odd-word` | fragile | reproduced | x | y |\n"
        "| 08 `learnable-groupsum` | inconclusive (other CPU)",
    )
    (tmp_path / "CHANGELOG.md").write_text(text + "\n| claim | nothing | here |\n|---|---|---|\n| 01 `x` | a | b |\n")
    with pytest.warns(UserWarning) as caught:
        h = load_history(tmp_path)
    messages = [str(w.message) for w in caught]
    assert any("`no-chapter`" in m and "line " in m for m in messages)
    assert any("`too-short`" in m for m in messages)
    assert any("fragile" in m for m in messages)
    assert ("03", "too-short") not in h
    assert [e["verdict"] for e in h[("03", "odd-word")]] == ["reproduced"]  # the readable cell is kept
    assert h[("08", "learnable-groupsum")][-1]["verdict"] == "not reproduced"
    (tmp_path / "CHANGELOG.md").write_bytes(b"\xff\xfe\x00garbage")
    with pytest.warns(UserWarning):
        assert load_history(tmp_path) == {}


def test_conflicting_statements_warn():
    text = SNIPPET.replace("| 02 `b-hat` | inconclusive | inconclusive |", "| 02 `b-hat` | reproduced | inconclusive |")
    with pytest.warns(UserWarning, match="b-hat at 0.2.0"):
        p = parse_changelog(text)
    assert p[("02", "b-hat")]["0.2.0"]["verdict"] == "inconclusive"  # 0.2.0's own table wins


def test_real_changelog():
    h = _quiet(load_history, ROOT)
    assert len(h) >= 40
    groupsum = {e["version"]: e for e in h[("08", "learnable-groupsum")]}
    assert groupsum["0.4.0"]["verdict"] == "not reproduced" and groupsum["0.4.0"]["stated"]
    assert groupsum["0.4.1"]["verdict"] == "inconclusive" and groupsum["0.4.1"]["note"] == "other CPU"
    assert groupsum["0.5.0"]["verdict"] == "not reproduced"
    assert "inconclusive in 0.4.1 (other CPU) → not reproduced in 0.5.0" in history_line(h[("08", "learnable-groupsum")])
    one_step = {e["version"]: e for e in h[("03", "one-step")]}
    assert one_step["0.1.0"]["scale"] == "ci"
    assert one_step["0.3.0"]["verdict"] == "inconclusive"
    assert one_step["0.4.0"]["verdict"] == "inconclusive" and not one_step["0.4.0"]["stated"]
    assert one_step["0.5.0"]["verdict"] == "reproduced"
    assert all(es[0]["scale"] == "ci" for es in h.values() if es[0]["version"] == "0.1.0")
    # the tallies the CHANGELOG prints for each version's 53 paper claims
    for version, tally in {
        "0.2.0": {"reproduced": 11, "partly reproduced": 7, "not reproduced": 10, "inconclusive": 25},
        "0.3.0": {"reproduced": 11, "partly reproduced": 8, "not reproduced": 11, "inconclusive": 23},
        "0.4.0": {"reproduced": 11, "partly reproduced": 8, "not reproduced": 11, "inconclusive": 23},
        "0.4.1": {"reproduced": 11, "partly reproduced": 8, "not reproduced": 10, "inconclusive": 24},
        "0.5.0": {"reproduced": 18, "partly reproduced": 9, "not reproduced": 14, "undecided": 8, "untestable here": 4},
    }.items():
        counts: dict[str, int] = {}
        for entries in h.values():
            for e in entries:
                if e["version"] == version:
                    counts[e["verdict"]] = counts.get(e["verdict"], 0) + 1
        assert counts == tally, version


def test_the_verdict_box_and_history_lines_name_changed_verdicts_only():
    from icml26.book import scorecard

    rows = [
        {"id": "moved", "kind": "paper", "claim": "a", "verdict": "not reproduced", "outcomes": {}, "checks": {}},
        {"id": "steady", "kind": "paper", "claim": "b", "verdict": "reproduced", "outcomes": {}, "checks": {}},
        {"id": "own", "kind": "own", "claim": "c", "verdict": "holds", "outcomes": {}, "checks": {}},
    ]
    hist = {
        ("08", "moved"): [
            {"version": "0.4.0", "verdict": "not reproduced", "scale": "full", "note": "", "stated": True},
            {"version": "0.4.1", "verdict": "inconclusive", "scale": "full", "note": "other CPU", "stated": True},
            {"version": "0.5.0", "verdict": "not reproduced", "scale": "full", "note": "", "stated": True},
        ],
        ("08", "steady"): [{"version": "0.5.0", "verdict": "reproduced", "scale": "full", "note": "", "stated": True}],
    }
    lines = scorecard.history_lines("08-clgn", rows, history=hist)
    assert lines == ["- `moved`: not reproduced in 0.4.0 → inconclusive in 0.4.1 (other CPU) → not reproduced in 0.5.0"]
    box = scorecard.verdict_box("08-clgn", [{"claims": rows}], history=hist)
    assert "Verdicts that changed between released versions" in box and lines[0] in box and "`steady`" not in box
    # a pooled verdict that differs from the last release is named as this build's
    pooled = {"moved": {"overall": "undecided", "n": 3}}
    (line,) = scorecard.history_lines("08-clgn", rows, pooled=pooled, history=hist)
    assert line.endswith("→ not reproduced in 0.5.0 → undecided in this build")
