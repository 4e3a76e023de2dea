"""Fragile verdicts: decisions that the rounding of the arithmetic alone can move.

The same chapter, seed and scale give the same records on one machine, but another CPU's
kernels (or another code path of the same library on this one) round differently, and a
decision whose interval end sits within that rounding of its line is decided by the
rounding, not by the evidence. To measure the spread, seed 0 of a chapter is rerun under a
second kernel family (``python -m icml26 sweep --kernels avx2 --seeds 0``, see
:data:`icml26.book.sweep.KERNEL_FAMILIES`): same code, data, seed and settings, other
vector kernels in torch, MKL, oneDNN and OpenBLAS. For every decision of every claim, the
shift of its interval ends between the two runs is its rounding spread :math:`s`.

A decision with interval :math:`[L, H]`, margin :math:`m` and smallest effect
:math:`\\delta` supports when :math:`L > m` and contradicts when :math:`H < \\delta`
(:func:`icml26.book.evidence.classify`). Its outcome could differ under other rounding when
an end lies within :math:`s` of its line; the claim is *fragile* when such a different
outcome (any of :math:`[L \\pm s, H \\pm s]`) would change the claim's verdict, or, for a
single-seed verdict, when the verdict itself differs between the two kernel families.
Pooled evidence settles a fragile verdict once no pooled interval end lies within the
spread of its line. Where the second kernel family has rerun every seed of the pool, the
spread of a pooled decision is measured, not borrowed from seed 0: the same seeds are pooled
under each family and :math:`s` is the shift of the pooled interval ends. A fragile verdict
counts as *undecided* in the front page's tally.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from itertools import product
from typing import Any

FRAGILE_RULE = (
    "A verdict is *fragile* when rounding alone can move it: seed 0 of each chapter is rerun under a second kernel "
    "family on the same machine (same code, data and seed; torch, MKL, oneDNN and OpenBLAS at AVX2), and the shift "
    "of each decision's interval ends between the two runs is its rounding spread s. A claim is fragile when one of "
    "its decisions has an interval end within s of its line and moving that end by s would change the claim's "
    "verdict, or, for a single-seed verdict, when the two kernel families give different verdicts. Pooled evidence "
    "settles it once no pooled interval end lies within s of its line; where the second family has rerun every "
    "pooled seed, s of a pooled decision is measured on the pooled evidence (the same seeds pooled under each "
    "family) instead of taken from seed 0. Fragile verdicts count as undecided in the tally."
)
GROUPS: tuple[str, ...] = ("checks", "guards", "control")


def _records(row: Mapping[str, Any], what: str) -> dict[str, dict]:
    from .sweep import _check_records

    return _check_records(dict(row), what)


def _ends(rec: Mapping[str, Any]) -> tuple[float, float, float, float] | None:
    """``(L, H, m, δ)`` of a decision record with an interval, else ``None`` (exact checks)."""
    st = rec.get("stats") or {}
    try:
        vals = tuple(float(st[k]) for k in ("ci_low", "ci_high", "margin", "smallest_effect"))
    except (KeyError, TypeError, ValueError):
        return None
    return vals if all(math.isfinite(v) for v in vals) else None  # type: ignore[return-value]


def decision_shifts(row_a: Mapping[str, Any], row_b: Mapping[str, Any]) -> dict[tuple[str, str], float]:
    """The rounding spread of each decision two runs of one claim share: ``(group, name) → max(|ΔL|, |ΔH|)``.

    Parameters
    ----------
    row_a, row_b : mapping
        The same claim's records from two runs that differ only in their kernels.

    Returns
    -------
    dict
        One entry per decision (core check, guard or control) that has an interval in both.
    """
    return _shifts({w: _records(row_a, w) for w in GROUPS}, {w: _records(row_b, w) for w in GROUPS})


def _shifts(groups_a: Mapping[str, Any], groups_b: Mapping[str, Any]) -> dict[tuple[str, str], float]:
    """``(group, name) → max(|ΔL|, |ΔH|)`` for every decision with an interval in both groupings."""
    out: dict[tuple[str, str], float] = {}
    for what in GROUPS:
        a, b = dict(groups_a.get(what) or {}), dict(groups_b.get(what) or {})
        for name in a.keys() & b.keys():
            ea, eb = _ends(a[name]), _ends(b[name])
            if ea is not None and eb is not None:
                out[(what, name)] = max(abs(ea[0] - eb[0]), abs(ea[1] - eb[1]))
    return out


def pooled_decision_shifts(pooled_a: Mapping[str, Any], pooled_b: Mapping[str, Any]) -> dict[tuple[str, str], float]:
    """The rounding spread of each pooled decision: ``(group, name) → max(|ΔL|, |ΔH|)`` of two poolings.

    Parameters
    ----------
    pooled_a, pooled_b : mapping
        The same claim pooled over the same seeds (:func:`icml26.book.sweep.pool_claim`) from
        the default kernels' tasks and the second family's.

    Returns
    -------
    dict
        One entry per decision with an interval in both (exact and part-by-part checks have none).
    """
    return _shifts(pooled_a, pooled_b)


def compare_runs(rows_a: Sequence[Mapping[str, Any]], rows_b: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """How far a chapter's decisions move between two kernel families (its per-chapter rounding spread).

    Parameters
    ----------
    rows_a, rows_b : sequence of mapping
        The chapter's claim records of seed 0 under the default and the second kernel family.

    Returns
    -------
    dict
        ``shifts`` (claim id → (group, name) → spread), ``flips`` (claim id → (verdict a,
        verdict b) where the words differ), ``decisions`` (how many were compared),
        ``identical`` (how many did not move at all), ``max_shift`` and ``max_relative``
        (the largest spread, and the largest spread divided by its interval's width) with
        ``worst`` (``"claim: check"`` of the latter), and ``missing`` (claims in only one run).
    """
    from .chapter import current_word

    by_b = {r.get("id"): r for r in rows_b}
    shifts: dict[str, dict[tuple[str, str], float]] = {}
    flips: dict[str, tuple[str, str]] = {}
    missing = sorted({str(r.get("id")) for r in rows_a} ^ set(map(str, by_b)))
    max_shift, max_rel, worst, n, same = 0.0, 0.0, "", 0, 0
    for ra in rows_a:
        rb = by_b.get(ra.get("id"))
        if rb is None:
            continue
        cid = str(ra.get("id"))
        wa, wb = current_word(dict(ra)), current_word(dict(rb))
        if wa != wb:
            flips[cid] = (wa, wb)
        s = decision_shifts(ra, rb)
        shifts[cid] = s
        for (what, name), v in s.items():
            n += 1
            same += v == 0.0
            ends = _ends(_records(ra, what)[name])
            width = (ends[1] - ends[0]) if ends else 0.0
            rel = v / width if width > 0 else (0.0 if v == 0 else math.inf)
            max_shift = max(max_shift, v)
            if rel > max_rel or (not worst and v > 0):
                max_rel, worst = rel, f"{cid}: {name}"
    return {
        "shifts": shifts,
        "flips": flips,
        "decisions": n,
        "identical": same,
        "max_shift": max_shift,
        "max_relative": max_rel,
        "worst": worst,
        "missing": missing,
    }


def _outcomes_within(ends: tuple[float, float, float, float], s: float) -> set[str]:
    """The outcomes of :func:`~icml26.book.evidence.classify` with each interval end moved by up to ``s``."""
    from .evidence import classify

    lo, hi, m, d = ends
    return {classify(a, b, margin=m, smallest_effect=d) for a, b in product((lo - s, lo, lo + s), (hi - s, hi, hi + s)) if a <= b}


def fragile_reason(
    row: Mapping[str, Any],
    shifts: Mapping[tuple[str, str], float] | None,
    *,
    pooled: bool = False,
    flip: tuple[str, str] | None = None,
) -> str | None:
    """Why the claim's verdict is fragile (``""``: it is not; ``None``: not measured).

    Parameters
    ----------
    row : mapping
        The claim's decision records as judged: a single run's claim record, or a pooled
        claim (:func:`icml26.book.sweep.pool_claim`: ``verdict``, ``checks``, ``guards``,
        ``control``) when ``pooled``.
    shifts : mapping or None
        The claim's rounding spread per decision (:func:`decision_shifts`); ``None`` when no
        second-kernel-family run was made.
    pooled : bool
        Whether ``row`` is pooled evidence (a flip of seed 0 alone does not make it fragile).
    flip : tuple of str, optional
        Seed 0's verdicts under the two kernel families, when they differ.

    Returns
    -------
    str or None
        A sentence naming the decision and its distance to the line, or the flip.

    Examples
    --------
    >>> rec = {"kind": "paper", "verdict": "not reproduced", "outcomes": {"a": "contradicts"},
    ...        "decisions": {"a": {"outcome": "contradicts", "stats": {"ci_low": -0.05, "ci_high": 0.00998,
    ...                                                               "margin": 0.0, "smallest_effect": 0.01}}}}
    >>> fragile_reason(rec, {("checks", "a"): 0.0005})
    "'a': its interval's upper end +0.00998 lies 2e-05 below its line 0.01, within the rounding spread 0.0005"
    >>> fragile_reason(rec, {("checks", "a"): 0.00001})
    ''
    """
    from .chapter import Decision, current_word, verdict

    if shifts is None:
        return None
    kind = row.get("kind", "paper")
    if kind != "paper":
        return ""
    if flip is not None and not pooled:
        return f"seed 0 reads {flip[0]} with the default kernels and {flip[1]} with the second kernel family"
    # a pooled claim holds its decision records by group; a run's record keeps core checks in decisions/outcomes
    groups = {what: (dict(row.get(what) or {}) if pooled else _records(row, what)) for what in GROUPS}
    outcomes = {what: {k: str(v.get("outcome")) for k, v in g.items()} for what, g in groups.items()}
    word = str(row["verdict"]) if pooled else current_word(dict(row))
    untestable = str(row.get("untestable") or "")

    def word_with(what: str, name: str, outcome: str) -> str:
        o = {w: {k: Decision(x == "supports", "", "", outcome=x) for k, x in v.items()} for w, v in outcomes.items()}
        o[what][name] = Decision(outcome == "supports", "", "", outcome=outcome)
        return verdict(o["checks"], kind, guards=o["guards"], control=o["control"], untestable=untestable)

    for what in GROUPS:
        for name, rec in groups[what].items():
            ends = _ends(rec)
            s = shifts.get((what, name))
            if ends is None or s is None or s == 0.0:
                continue
            for alt in _outcomes_within(ends, s) - {outcomes[what][name]}:
                if word_with(what, name, alt) != word:
                    lo, hi, m, d = ends
                    if abs(lo - m) <= abs(hi - d):
                        end, where = f"lower end {lo:+.3g}", f"{abs(lo - m):.2g} {'above' if lo > m else 'below'} its line {m:g}"
                    else:
                        end, where = f"upper end {hi:+.3g}", f"{abs(hi - d):.2g} {'below' if hi < d else 'above'} its line {d:g}"
                    return f"{name!r}: its interval's {end} lies {where}, within the rounding spread {s:.2g}"
    return ""


def kernel_comparisons(book: Any, scale: str, kernels: str = "avx2") -> dict[str, dict[str, Any]]:
    """Per chapter, :func:`compare_runs` of seed 0's current sweep task and its rerun under ``kernels``.

    Only chapters with both tasks stored and current (their run key is the chapter's key
    now) are compared; the others are absent (their fragility is *not measured*).
    """
    from .runner import memo_value

    return memo_value(("kernel_comparisons", str(book.root), scale, kernels), lambda: _kernel_comparisons(book, scale, kernels))


def _kernel_comparisons(book: Any, scale: str, kernels: str) -> dict[str, dict[str, Any]]:
    from .sweep import load_sweep_claims, planned_looks

    default = load_sweep_claims(book, scale)
    other = load_sweep_claims(book, scale, kernels=kernels)
    looks = planned_looks(book, scale)
    out: dict[str, dict[str, Any]] = {}
    for cid, by_id in other.items():
        rows_b = [row for rows in by_id.values() for seed, row in rows if seed == 0]
        rows_a = [row for rows in default.get(cid, {}).values() for seed, row in rows if seed == 0]
        if rows_a and rows_b:
            out[cid] = {**compare_runs(rows_a, rows_b), "kernels": kernels, "cpu": str(rows_b[0].get("task_cpu", ""))}
            out[cid].update(_pooled_shifts(default.get(cid, {}), by_id, looks))
    return out


def _pooled_shifts(default: Mapping[str, Any], other: Mapping[str, Any], looks: int) -> dict[str, Any]:
    """``pooled_shifts`` (claim → decision → spread) and ``pooled_seeds`` where the second family ran every pooled seed.

    Empty when it did not (only seed 0, say): then seed 0's spread stands in for the pooled one.
    """
    from .sweep import pool_claim

    shifts: dict[str, dict[tuple[str, str], float]] = {}
    seeds: list[int] = []
    for claim, rows_a in default.items():
        rows_b = other.get(claim)
        seeds_a = sorted(s for s, _ in rows_a)
        if not rows_b or len(seeds_a) < 2 or sorted(s for s, _ in rows_b) != seeds_a:
            continue
        if rows_a[0][1].get("kind") != "paper":
            continue
        try:
            pa, pb = pool_claim(rows_a, looks=looks), pool_claim(rows_b, looks=looks)
        except (ValueError, KeyError, TypeError):  # records that cannot be pooled keep seed 0's spread
            continue
        shifts[claim] = pooled_decision_shifts(pa, pb)
        seeds = seeds_a
    return {"pooled_shifts": shifts, "pooled_seeds": seeds} if shifts else {}


def claim_fragility(
    comparisons: Mapping[str, Mapping[str, Any]], chapter: str, row: Mapping[str, Any], agg: Mapping[str, Any] | None = None
) -> str | None:
    """:func:`fragile_reason` of one claim as the front page judges it: pooled where ``agg`` pools seeds, else ``row``.

    ``None`` when the chapter has no second-kernel-family run, or the claim is not in it.
    """
    comp = comparisons.get(chapter)
    if comp is None or row.get("id") not in comp["shifts"]:
        return None
    shifts = comp["shifts"][row["id"]]
    if agg is not None and "pooled" in agg:
        pooled = {"kind": row.get("kind", "paper"), "untestable": row.get("untestable", ""), **agg["pooled"]}
        measured = (comp.get("pooled_shifts") or {}).get(row["id"])
        if measured is not None and list(comp.get("pooled_seeds") or []) == sorted(agg.get("seeds") or []):
            why = fragile_reason(pooled, measured, pooled=True)
            return (
                f"{why} (the spread of the pooled evidence, both kernel families over seeds {seed_text(comp['pooled_seeds'])})"
                if why
                else why
            )
        return fragile_reason(pooled, shifts, pooled=True)
    return fragile_reason(row, shifts, flip=comp["flips"].get(row["id"]))


def seed_text(seeds: Sequence[int]) -> str:
    """``0-2`` for a run of seeds, else ``0, 2, 5``."""
    seeds = sorted(seeds)
    if len(seeds) > 2 and seeds == list(range(seeds[0], seeds[-1] + 1)):
        return f"{seeds[0]}-{seeds[-1]}"
    return ", ".join(map(str, seeds))
