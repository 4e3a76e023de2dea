"""The scorecard: claim records gathered into the front page, the *Claims in detail* page and ``claims.json``.

Every chapter writes its claim rows as JSON when it runs (:func:`icml26.book.chapter.record_claims`);
this module reads them back (:func:`load_records`, records of another run are named and left out),
pools them with a sweep's seeds where one ran (:func:`seed_aggregates`), and renders the
tallies, the forest plot, the per-kind tables, each chapter's verdict box and the data files.
Paper claims read in :data:`PAPER_WORDS`; a record made before the two open words existed
(*inconclusive*) is read in today's words (:func:`current_word`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .chapter import SCALES, current_word
from .runner import Book, Chapter

VERDICT_MARK = {
    "reproduced": "**reproduced**",
    "partly reproduced": "*partly reproduced*",
    "not reproduced": "**not reproduced**",
    "undecided": "*undecided*",
    "untestable here": "*untestable here*",
    "verified": "verified",
    "fails": "**fails**",
    "illustrates": "illustrates",
    "does not illustrate": "**does not illustrate**",
    "holds": "holds",
}
KIND_TITLE = {
    "paper": "Paper claims: the paper's empirical results, tested here",
    "derived": "Derived: identities and theorems the paper states, verified numerically",
    "stand-in": "Stand-ins: how labelled stand-ins behave (they illustrate, they do not reproduce)",
    "own": "The chapters' own properties (harnesses, samplers, tooling)",
}


class BuildError(RuntimeError):
    """The book cannot be built as asked (missing or failed executions, unclean outputs)."""


# ---------------------------------------------------------------------------------------
# claim records -> scorecard
# ---------------------------------------------------------------------------------------
def load_records(book: Book, scale: str) -> dict[str, list[dict]]:
    """Every claim record of a scale, by chapter id: the JSON payloads, parts in name order.

    A payload whose ``run_key`` differs from the cache key of the chapter's last run
    record (a record written by a run outside ``python -m icml26 run``, or by an older
    run) gets ``"mismatch": True``.
    """
    out: dict[str, list[dict]] = {}
    base = book.results_dir() / scale
    if not base.is_dir():
        return out
    for ch_dir in sorted(p for p in base.iterdir() if p.is_dir() and not p.name.startswith(".")):
        rec = book.record(scale, ch_dir.name)
        payloads = []
        for f in sorted(ch_dir.glob("*.json")):
            try:
                payload = json.loads(f.read_text())
                if not isinstance(payload, dict) or not isinstance(payload.get("claims", []), list):
                    raise ValueError("not a claim record")
            except (ValueError, UnicodeDecodeError) as exc:  # a damaged record is left out, named, never a crash
                print(f"python -m icml26: warning: ignoring the unreadable claim record {f} ({exc})", file=sys.stderr)
                continue
            payload["mismatch"] = rec is None or payload.get("run_key", "") != rec.key
            for row in payload.get("claims", []):
                if isinstance(row, dict):
                    row["verdict"] = current_word(row)
            payloads.append(payload)
        out[ch_dir.name] = payloads
    return out


def decide_cost(book: Book, scale: str, cid: str, row: dict) -> dict | None:
    """What deciding an *undecided* paper claim would take: replicates in all, and about how many chapter CPU minutes.

    The replicates are the largest ``n_needed`` of the claim's undecided noisy core checks;
    the minutes scale the chapter's last run at ``scale`` (its kernel CPU time, ``cpu_s``,
    else its wall time) by the replicates still missing over those it ran
    (``cpu_s · (n_needed − n) / n``), an estimate that treats the whole run as replicate
    work. ``None`` when the claim is not undecided or no check says how many would decide it.
    """
    if row.get("kind") != "paper" or current_word(row) != "undecided":
        return None
    need = [
        (int(st["n_needed"]), int(st.get("n") or 0))
        for _, st in _noisy_checks(row)
        if st.get("outcome") == "inconclusive" and st.get("n_needed")
    ]
    if not need:
        return None
    n_needed, n = max(need)
    rec = book.record(scale, cid)
    secs = None if rec is None else (getattr(rec, "cpu_s", None) or getattr(rec, "wall_s", None))
    minutes = None
    if secs and n > 0:
        minutes = float(secs) * max(n_needed - n, 0) / n / 60.0
    return {"n_needed": n_needed, "n": n, "minutes": minutes}


def _cost_text(cost: dict | None) -> str:
    if not cost:
        return ""
    text = f"n≈{cost['n_needed']} replicates in all would decide it (this run: {cost['n']})"
    if cost.get("minutes") is not None:
        m = cost["minutes"]
        text += f", about {m:.0f} min of this chapter's CPU time" if m >= 1 else ", under a minute of this chapter's CPU time"
    return text


def load_claims(book: Book, scale: str) -> dict[str, list[dict]]:
    """Every claim row of a scale, by chapter id (parts concatenated in name order)."""
    return {cid: [c for p in payloads for c in p.get("claims", [])] for cid, payloads in load_records(book, scale).items()}


def _doc_link(text: str, target: str) -> str:
    """A MyST link to another page of the book (resolved by Sphinx, whatever the page's format)."""
    text = text.replace("`", "'").replace("<", "‹").replace(">", "›")
    return f"{{doc}}`{text} <{target}>`"


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ").strip() or "—"


def remit(book: Book) -> list[dict]:
    """The book's papers (``book/papers.yml``): id, title, url; chapters not listed there are appended."""
    import yaml

    f = book.book_dir / "papers.yml"
    papers = list(yaml.safe_load(f.read_text())["papers"]) if f.exists() else []
    known = {p["id"] for p in papers}
    for ch in book.chapters():
        if ch.id not in known:
            papers.append({"id": ch.id, "title": chapter_title(ch), "url": None})
    return sorted(papers, key=lambda p: p["id"])


def _runtime(book: Book, scale: str, cid: str) -> str:
    ch = next(c for c in book.chapters() if c.id == cid)
    word, _ = book.state(scale, ch)
    rec = book.record(scale, cid)
    if word in ("not run", "failed") or rec is None:
        return word
    return f"{rec.wall_s:.0f} s" + (" (stale)" if word == "stale" else "")


def _decided(row: dict) -> str:
    decisions = row.get("decisions") or {}
    outcomes = row.get("outcomes") or {k: ("supports" if v else "contradicts") for k, v in row.get("checks", {}).items()}
    parts = []
    for name, o in outcomes.items():
        d = decisions.get(name)
        parts.append(f"{name}: {d['detail']}" if d and d.get("detail") else f"{name}: {o}")
    for what in ("control", "guards"):
        for name, d in (row.get(what) or {}).items():
            parts.append(f"{'control' if what == 'control' else 'guard'} {name}: {d.get('outcome')} ({d.get('detail', '')})")
    return "; ".join(parts)


def _noisy_checks(row: dict, agg: dict | None = None) -> list[tuple[str, dict]]:
    """``(name, stats)`` of a claim row's noisy core checks (those with a smallest effect), pooled over seeds where ``agg`` has them."""
    pooled = (agg or {}).get("pooled", {}).get("checks", {})
    out = []
    for name, d in (row.get("decisions") or {}).items():
        st = dict(d.get("stats") or {})
        if name in pooled:
            st = {**st, **(pooled[name].get("stats") or {})}
        if st.get("smallest_effect") is not None and st.get("ci_low") is not None:
            out.append((name, st))
    return out


def _evidence_cells(row: dict, agg: dict | None = None) -> tuple[str, str, str]:
    """Effect [interval] (n), smallest effect, and replicates needed of a row's noisy core checks ("—" for none)."""
    eff, small, need = [], [], []
    for name, st in _noisy_checks(row, agg):
        unit = st.get("unit", "")
        tag = f"{name}: " if len(row.get("decisions") or {}) > 1 else ""
        eff.append(f"{tag}{st['effect']:+.3g} [{st['ci_low']:+.3g}, {st['ci_high']:+.3g}]{unit} (n={st['n']})")
        small.append(f"{tag}{st['smallest_effect']:g}{unit}")
        if st.get("outcome") == "inconclusive" and st.get("n_needed"):
            need.append(f"{tag}{st['n_needed']}")
    return ("; ".join(eff) or "—", "; ".join(small) or "—", "; ".join(need) or "—")


def _note(row: dict) -> str:
    note = row.get("note", "")
    if row.get("revised"):
        note = (note + f" **Revised after a result:** {row['revised']}").strip()
    return note


def seed_aggregates(book: Book, scale: str) -> tuple[str, dict[str, dict[str, dict]]]:
    """Claims pooled over the seeds of stored sweeps: chapter → claim id → :func:`icml26.book.sweep.aggregate`.

    The sweep at the rendered ``scale`` is used when there is one, else a sweep at
    another scale (the scorecard names which). Claims with a single seed are left out.
    """
    from .runner import memo_value

    return memo_value(("seed_aggregates", str(book.root), scale), lambda: _seed_aggregates(book, scale))


def _seed_aggregates(book: Book, scale: str) -> tuple[str, dict[str, dict[str, dict]]]:
    from .sweep import aggregate, load_sweep_claims, planned_looks

    for s in [scale] + [x for x in SCALES if x != scale]:
        claims = load_sweep_claims(book, s)
        looks = planned_looks(book, s)

        def safe(rows, looks=looks):
            try:
                return aggregate(rows, looks=looks)
            except (ValueError, KeyError, TypeError) as exc:  # records that cannot be pooled are named, never crash the build
                return {"n": len(rows), "seeds": [s for s, _ in rows], "error": f"{type(exc).__name__}: {exc}"}

        out = {cid: {k: safe(rows) for k, rows in by_id.items() if len(rows) > 1} for cid, by_id in claims.items()}
        out = {cid: v for cid, v in out.items() if v}
        if out:
            return s, out
    return scale, {}


def cpus_text(pooled_cpus: dict[str, set[str]]) -> str:
    """Where the pooled tasks ran, for the front page's headline: one CPU, or each CPU with its chapters.

    >>> cpus_text({"AMD EPYC (AVX-512)": {"02-st-bcp"}})
    'run on AMD EPYC (AVX-512)'
    >>> cpus_text({"A": {"02-st-bcp", "05-omnishow"}, "B": {"05-omnishow"}})
    'run on 2 CPUs (A: 02, 05; B: 05)'
    """
    if not pooled_cpus:
        return "CPU not recorded"
    if len(pooled_cpus) == 1:
        return f"run on {next(iter(pooled_cpus))}"
    return (
        f"run on {len(pooled_cpus)} CPUs ("
        + "; ".join(f"{cpu}: {', '.join(sorted(c[:2] for c in chs))}" for cpu, chs in sorted(pooled_cpus.items()))
        + ")"
    )


PAPER_WORDS: tuple[str, ...] = ("reproduced", "partly reproduced", "not reproduced", "undecided", "untestable here")


def _short(text: str, limit: int) -> str:
    """``text`` cut to about ``limit`` characters at a word boundary (its first clause where that is shorter)."""
    text = " ".join(str(text or "").split())
    for sep in (" (", "; ", ": "):
        head = text.split(sep, 1)[0]
        if 20 <= len(head) < len(text) and head.count("(") == head.count(")"):
            text = head
            break
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0].rstrip(",;:")
    return cut + " …"


def short_title(ch: Chapter) -> str:
    """The chapter's title up to its first colon: ``02 · ST-BCP``."""
    return chapter_title(ch).split(":", 1)[0].strip()


def claim_label(cid: str) -> str:
    """The MyST label the build puts on a chapter's *Claim check* heading."""
    return f"claim-check-{cid}"


def _one_effect(row: dict, agg: dict | None = None, digits: int = 3) -> str:
    """A claim's first noisy core check as ``effect [low, high] unit, δ smallest effect[, n≈replicates needed]``.

    Pooled over seeds where given; "" when the claim has no noisy core check.
    """
    found = []
    for _, st in _noisy_checks(row, agg):
        g = f"+.{digits}g"
        cell = f"{st['effect']:{g}} [{st['ci_low']:{g}}, {st['ci_high']:{g}}]{st.get('unit', '')}, δ {st['smallest_effect']:.2g}"
        if st.get("outcome") == "inconclusive" and st.get("n_needed"):
            cell += f", n≈{st['n_needed']}"
        found.append(cell)
    if not found:
        return ""
    return found[0] + (f" (+{len(found) - 1} more)" if len(found) > 1 else "")


@dataclass
class _Card:
    """What the front page and the *Claims in detail* page are made of (see :func:`scorecard_markdown`)."""

    tally: str = ""
    rule: str = ""
    data_links: list[str] = field(default_factory=list)
    kinds: str = ""
    forest: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # stale sweep tasks, records left out
    coverage: list[str] = field(default_factory=list)
    rows_by_kind: dict[str, list[str]] = field(default_factory=dict)
    compact: list[str] = field(default_factory=list)
    counts: dict[str, dict[str, int]] = field(default_factory=dict)


def _scorecard(book: Book, scale: str, figure_dir: Path | None, anchors: dict[str, str] | None) -> _Card:
    from .chapter import VERDICT_RULE
    from .forest import forest_figure, forest_rows

    anchors = anchors or {}
    records = load_records(book, scale)
    chapters = {c.id: c for c in book.chapters()}
    sweep_scale, over_seeds = seed_aggregates(book, scale)
    from .fragile import claim_fragility, kernel_comparisons

    comparisons = kernel_comparisons(book, scale)
    fragile_pooled: list[str] = []
    fragile_single: list[str] = []
    seeds_by_chapter: dict[str, int] = {}
    pooled_cpus: dict[str, set[str]] = {}  # CPU the pooled tasks ran on -> chapters
    pooled_chapter: dict[str, dict[str, int]] = {}
    overall_counts: dict[str, int] = {}
    rows_by_kind: dict[str, list[str]] = {k: [] for k in KIND_TITLE}
    counts: dict[str, dict[str, int]] = {k: {} for k in KIND_TITLE}
    per_chapter: dict[str, dict[str, dict[str, int]]] = {}
    mismatched = []
    forest: list[dict] = []
    compact: list[str] = []
    seeds_behind: set[int] = set()
    for cid, ch in chapters.items():
        link = _doc_link(_cell(chapter_title(ch)), f"{cid}/{ch.notebooks[0].stem}")
        per_chapter[cid] = {k: {} for k in KIND_TITLE}
        first = {k: True for k in KIND_TITLE}
        first_compact = True
        for payload in records.get(cid, []):
            if payload["mismatch"]:
                mismatched.append(f"{cid}/{payload.get('part', 'main')} (seed {payload.get('seed')})")
                continue
            forest += forest_rows(payload.get("claims", []), prefix=f"{cid[:2]} ", pooled=over_seeds.get(cid))
            for r in payload.get("claims", []):
                kind = r.get("kind")
                if kind not in KIND_TITLE:
                    raise BuildError(f"{cid}: claim {r.get('id')!r} has no valid kind ({kind!r}); rerun the chapter")
                v = r["verdict"]
                agg = over_seeds.get(cid, {}).get(r.get("id"))
                frag1 = claim_fragility(comparisons, cid, r) if kind == "paper" else None
                if frag1:  # a fragile single-seed verdict counts as undecided
                    fragile_single.append(f"{cid[:2]} `{r.get('id')}`")
                tallied = "undecided" if frag1 else v
                counts[kind][tallied] = counts[kind].get(tallied, 0) + 1
                per_chapter[cid][kind][tallied] = per_chapter[cid][kind].get(tallied, 0) + 1
                if agg is not None and "error" in agg:
                    seeds_cell = f"`{sweep_scale}`: {agg['n']} seeds, not pooled ({agg['error']})"
                    agg = None
                elif agg is not None:
                    from .sweep import describe

                    fragp = claim_fragility(comparisons, cid, r, agg) if kind == "paper" else None
                    seeds_cell = (
                        f"`{sweep_scale}`, pooled: "
                        + (
                            f"*fragile* (reads {agg['overall']}; {fragp})"
                            if fragp
                            else VERDICT_MARK.get(agg["overall"], agg["overall"])
                        )
                        + (f" ({agg['why']})" if agg.get("why") else "")
                        + f"; {describe(agg)}"
                    )
                    if kind == "paper":
                        pooled_word = "undecided" if fragp else agg["overall"]
                        overall_counts[pooled_word] = overall_counts.get(pooled_word, 0) + 1
                        pooled_chapter.setdefault(cid, {})[pooled_word] = pooled_chapter.get(cid, {}).get(pooled_word, 0) + 1
                        if fragp:
                            fragile_pooled.append(f"{cid[:2]} `{r.get('id')}`")
                        seeds_behind.update(agg["seeds"])
                        seeds_by_chapter[cid] = max(seeds_by_chapter.get(cid, 0), agg["n"])
                        for cpu in agg.get("cpus") or {}:
                            pooled_cpus.setdefault(cpu or "CPU not recorded", set()).add(cid)
                elif not (over_seeds.get(cid, {}).get(r.get("id")) or {}).get("error"):
                    seeds_cell = "single seed"
                cost = _cost_text(decide_cost(book, scale, cid, r))
                why = "; ".join(x for x in (r.get("why", ""), cost) if x)
                verdict_cell = VERDICT_MARK.get(v, v) + (f" ({why})" if why else "")
                if frag1:
                    verdict_cell = f"*fragile* (reads {v}; {frag1})" + (f"; {why}" if why else "")
                cells = [link if first[kind] else "", _cell(r["claim"]), _cell(r["paper"]), _cell(r["ours"]), _cell(verdict_cell)]
                if kind == "paper":
                    cells += [_cell(x) for x in _evidence_cells(r, agg)]
                cells += [_cell(seeds_cell), _cell(_decided(r)), _cell(r.get("stand_in", "")), _cell(_note(r))]
                first[kind] = False
                rows_by_kind[kind].append("| " + " | ".join(cells) + " |")
                if kind == "paper":
                    few = _cell(_short(r["claim"], 60)).replace("[", "(").replace("]", ")")
                    target = anchors.get(cid)
                    claim_cell = (
                        f"{{ref}}`{few.replace('`', '')} <{target}>`"
                        if target
                        else _doc_link(few, f"{cid}/{ch.notebooks[0].stem}")
                    )
                    verdict = f"*fragile* ({v})" if frag1 else VERDICT_MARK.get(v, v)
                    if agg is not None:
                        pw = agg["overall"]
                        verdict += f"; over {agg['n']} seeds: " + (
                            f"*fragile* ({pw})" if claim_fragility(comparisons, cid, r, agg) else VERDICT_MARK.get(pw, pw)
                        )
                    compact.append(
                        "| "
                        + " | ".join(
                            [
                                _doc_link(cid[:2], f"{cid}/{ch.notebooks[0].stem}") if first_compact else "",
                                claim_cell,
                                _cell(verdict),
                                _cell(_one_effect(r, agg, digits=2)),
                                _cell(_short(r.get("paper", ""), 36)),
                            ]
                        )
                        + " |"
                    )
                    first_compact = False

    def tally(kind: str) -> str:
        c = counts[kind]
        n = sum(c.values())
        words = PAPER_WORDS if kind == "paper" else [w for w in VERDICT_MARK if w in c]
        return f"{n} (" + ", ".join(f"{c.get(w, 0)} {w}" for w in words) + ")" if n else "0"

    papers = remit(book)
    n_paper = sum(counts["paper"].values())
    single = (
        f"at `{scale}` scale, single seed (seed 0): "
        + ", ".join(f"**{counts['paper'].get(w, 0)} {w}**" for w in PAPER_WORDS)
        + (f" (the undecided include {len(fragile_single)} fragile: {', '.join(fragile_single)})" if fragile_single else "")
        + "."
    )
    card = _Card(rows_by_kind=rows_by_kind, compact=compact, counts=counts)
    ran = {cid for cid, payloads in records.items() if any(not pl["mismatch"] for pl in payloads)}
    written = [p for p in papers if p["id"] in chapters]
    from_papers = (
        f"from the {len(ran)} chapter{'s' * (len(ran) != 1)} that ran, of {len(written)} written for the {len(papers)} papers"
    )
    if len(ran) == len(written) == len(papers):
        from_papers = f"from all {len(papers)} papers"
    if over_seeds:
        from .fragile import FRAGILE_RULE
        from .sweep import AGGREGATE_RULE

        n_agg = sum(overall_counts.values())
        ks = sorted(set(seeds_by_chapter.values()))
        with_paper = sorted(cid for cid in per_chapter if sum(per_chapter[cid]["paper"].values()))
        unpooled = [cid[:2] for cid in with_paper if cid not in seeds_by_chapter]
        if len(ks) == 1:
            k_text = f"pooled over {ks[0]} seeds at `{sweep_scale}`"
        else:
            k_text = (
                f"pooled over {ks[0]}–{ks[-1]} seeds at `{sweep_scale}` ("
                + ", ".join(f"{cid[:2]}: {k}" for cid, k in sorted(seeds_by_chapter.items()))
                + ")"
            )
        k_text += (
            f" for {'every' if not unpooled else len(seeds_by_chapter)} chapter{'s' * (len(seeds_by_chapter) != 1) if unpooled else ''}"
            + (" with a paper claim" if not unpooled else f" (not pooled: {', '.join(unpooled)})")
        )
        k_text += ", " + cpus_text(pooled_cpus)
        from .sweep import planned_looks

        n_looks = planned_looks(book, sweep_scale)
        if n_looks > 1:
            k_text += (
                f", in {n_looks} planned looks (every pooled decision at α/{n_looks}, "
                "so that adding seeds where claims stayed undecided cannot inflate the error rate)"
            )
        card.tally = (
            f"**{n_paper} paper claim{'s' * (n_paper != 1)}** {from_papers}, {k_text}"
            + (f" ({n_agg} of the {n_paper} claims)" if n_agg != n_paper else "")
            + ": "
            + ", ".join(f"**{overall_counts.get(w, 0)} {w}**" for w in PAPER_WORDS)
            + (
                f" (the undecided include {len(fragile_pooled)} fragile: {', '.join(fragile_pooled)})"
                if fragile_pooled
                else (" (none fragile)" if comparisons else " (fragility not measured: no second-kernel-family run)")
            )
            + f". The seed-0 runs the chapters show read, {single}"
        )
        card.rule = f"**How verdicts are decided.** {VERDICT_RULE} **Over seeds:** {AGGREGATE_RULE} **Fragile:** {FRAGILE_RULE}"
    else:
        card.tally = f"**{n_paper} paper claim{'s' * (n_paper != 1)}** {from_papers} {single}"
        card.rule = (
            f"**How verdicts are decided.** {VERDICT_RULE} No sweep over seeds has run yet, so every row is a "
            "single seed (`python -m icml26 sweep --until-decided` adds seeds until the claims are decided)."
        )
        if comparisons:
            from .fragile import FRAGILE_RULE

            card.rule += f" **Fragile:** {FRAGILE_RULE}"
    if figure_dir is not None:
        card.data_links = [
            "The scorecard as data: {download}`claims.json <_generated/claims.json>` (every claim with its "
            "checks, effects, intervals, smallest effects, replicates, seeds and rules) and {download}`claims.csv "
            "<_generated/claims.csv>` (one row per claim; `pandas.read_csv` reads it).",
            "",
        ]
    card.kinds = (
        "Only *paper* claims, the papers' empirical results tested here, count in that line. Besides them the chapters "
        f"check {tally('derived')} *derived* identities, show {tally('stand-in')} *stand-in* behaviours, and test "
        f"{tally('own')} properties of their *own* tooling; each kind has its own table and its own words. "
        "Every cell is filled from the claim records the chapters wrote when they ran; nothing here is typed by hand. "
        '"—" marks an empty cell.'
    )
    if figure_dir is not None and forest:
        fig_title = "Paper claims: our effect with its interval" + (
            " (pooled over seeds where a sweep ran, at 1−2α/K; else seed 0, 90 %)" if over_seeds else " (seed 0, 90 %)"
        )
        cached_figure(
            book,
            figure_dir / "forest.png",
            {"rows": forest, "title": fig_title},
            lambda out: forest_figure(forest, title=fig_title, path=out),
        )
        card.forest = [
            "```{figure} _generated/forest.png",
            ":name: forest-plot",
            ":alt: Forest plot of every paper claim's effect, scaled by its smallest effect",
            "",
            "Every noisy core check of a paper claim on one axis: our effect with its 90 % interval divided by the "
            "smallest effect the claim needs (0: no effect; the dashed line: the smallest effect; the dotted line: a "
            "non-inferiority tolerance), coloured by verdict; open diamonds mark the paper's own effect where it is in "
            f"the same units. {len(forest)} checks; exact checks (counts, identities) are not drawn.",
            "```",
            "",
        ]
    from .sweep import stale_sweep_tasks

    stale = stale_sweep_tasks(book, sweep_scale)
    if stale:
        ids = sorted({r.chapter.split("-")[0] for r in stale})
        card.notes += [
            f"{len(stale)} stored sweep task(s) at `{sweep_scale}` ran an earlier version of their chapter (chapters "
            + ", ".join(ids)
            + f"), so their claims are left out of *Over seeds*; `python -m icml26 sweep {' '.join(ids)} "
            f"--scale {sweep_scale} --seeds ...` runs them again.",
            "",
        ]
    from .sweep import _stored_tasks

    with_params: dict[str, set[str]] = {}
    for _, rec in _stored_tasks(book, sweep_scale):
        if rec.params and rec.status != "failed":
            with_params.setdefault(rec.chapter, set()).add(", ".join(f"{k}={v!r}" for k, v in sorted(rec.params.items())))
    if with_params:
        card.notes += [
            "Sweep tasks with non-default parameters are kept apart and not pooled here: "
            + "; ".join(f"{cid} ({' | '.join(sorted(ps))})" for cid, ps in sorted(with_params.items()))
            + ".",
            "",
        ]
    if mismatched:
        card.notes += [
            "```{warning}",
            "These claim records do not come from the runs rendered here (another seed, or a run outside "
            "`python -m icml26 run`), so they are left out: " + ", ".join(mismatched) + ".",
            "```",
            "",
        ]
    cov = [
        "| Paper | Chapter | Paper claims: reproduced / partly / not / undecided / untestable here (pooled where seeds were) "
        "| Seeds pooled | Derived | Stand-in | Own | Run time |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for p in papers:
        cid = p["id"]
        title = _cell(p["title"])
        if cid not in chapters:
            paper = f"[{title}]({p['url']})" if p.get("url") else title
            cov.append(f"| {paper} | *not yet written* | — | — | — | — | — | — |")
            continue
        ch = chapters[cid]
        pc = per_chapter[cid]
        shown = pooled_chapter.get(cid, pc["paper"])
        paper_counts = " / ".join(str(shown.get(w, 0)) for w in PAPER_WORDS)
        k = seeds_by_chapter.get(cid)
        others = [", ".join(f"{n} {w}" for w, n in pc[k].items()) or "—" for k in ("derived", "stand-in", "own")]
        cov.append(
            f"| {title} | {_doc_link(cid, f'{cid}/{ch.notebooks[0].stem}')} | {paper_counts} | "
            + (f"{k} at `{sweep_scale}`" if k else "— (seed 0)")
            + " | "
            + " | ".join(others)
            + f" | {_runtime(book, scale, cid)} |"
        )
    card.coverage = cov
    return card


DETAIL_PAGE = "claims"  # book/claims.md: the "Claims in detail" page, which includes _generated/claims-detail.md
COMPACT_HEADER = (
    "| Ch. | Paper claim | Verdict | Our effect [interval: 90 %; pooled, 1−2α/K], δ smallest effect, n≈ replicates that would decide it | The paper's figure |\n"
    "|---|---|---|---|---|"
)


def scorecard_markdown(
    book: Book, scale: str = "full", *, figure_dir: Path | None = None, anchors: dict[str, str] | None = None
) -> str:
    """The front page's scorecard as MyST markdown: headline tallies, forest plot, one compact table of paper claims.

    Each row of the table (chapter, the claim in a few words, verdict, our effect with its
    interval, the paper's figure) links to the chapter's claim check: to the label in
    ``anchors`` (chapter id → label, as :func:`stage` puts them) or else to the chapter's
    page. Everything else — how each verdict was decided, stand-ins, notes, revisions,
    smallest effects, replicates needed, evidence over seeds, the other kinds of claim
    and the coverage of the papers — is on the *Claims in detail* page
    (:func:`claims_detail_markdown`). With ``figure_dir`` the forest plot is saved there as
    ``forest.png`` and shown (path ``_generated/forest.png``, as the intro includes it).
    """
    card = _scorecard(book, scale, figure_dir, anchors)
    detail = (book.book_dir / f"{DETAIL_PAGE}.md").exists()
    more = _doc_link("Claims in detail", DETAIL_PAGE) if detail else "*Claims in detail*"
    out = [card.tally, ""] + card.data_links + card.notes + card.forest
    out += ["### Paper claims", ""]
    if card.compact:
        out += [
            "```{table}",
            ":class: scorecard-compact",
            ":widths: auto",
            "",
            COMPACT_HEADER,
            *card.compact,
            "```",
            "",
            "Each claim links to its chapter's claim check. The effect is the first noisy core check's, in the "
            'claim\'s own units (pooled over seeds where a sweep ran); "—" marks a claim decided by exact checks '
            "(counts, identities) alone.",
            "",
        ]
    else:
        out += ["*(none)*", ""]
    out += [
        f"{card.kinds} How each verdict was decided, smallest effects, replicates needed, stand-ins, notes, "
        f"revisions and the other kinds of claim, row by row: {more}.",
        "",
    ]
    return "\n".join(out)


def claims_detail_markdown(book: Book, scale: str = "full") -> str:
    """The *Claims in detail* page: the verdict rule, coverage of the papers, and one full table per kind of claim."""
    card = _scorecard(book, scale, None, None)
    out = "\n".join([card.tally, "", card.rule, "", card.kinds, "", *card.notes])
    out += "\n## Coverage\n\n" + "\n".join(card.coverage) + "\n"
    header = "| Chapter | Claim | Paper | This run (seed 0) | Verdict | Over seeds | How it was decided | Stand-in | Note |\n|---|---|---|---|---|---|---|---|---|"
    paper_header = (
        "| Chapter | Claim | Paper | This run (seed 0) | Verdict | Effect [interval] | Smallest effect | "
        "Replicates needed | Over seeds | How it was decided | Stand-in | Note |\n|---|---|---|---|---|---|---|---|---|---|---|---|"
    )
    for kind, title in KIND_TITLE.items():
        out += f"\n## {title}\n\n"
        h = paper_header if kind == "paper" else header
        out += (h + "\n" + "\n".join(card.rows_by_kind[kind]) + "\n") if card.rows_by_kind[kind] else "*(none)*\n"
    return out


def history_lines(
    cid: str,
    rows: list[dict],
    *,
    pooled: dict[str, dict] | None = None,
    history: dict[tuple[str, str], list[dict]] | None = None,
    comparisons: dict[str, dict] | None = None,
) -> list[str]:
    """One markdown bullet per paper claim whose verdict changed between released versions (or differs in this build).

    ``rows`` are the chapter's claim records, ``pooled`` its pooled claims (claim id →
    :func:`icml26.book.sweep.aggregate`), ``history`` :func:`icml26.book.history.load_history`'s
    and ``comparisons`` :func:`icml26.book.fragile.kernel_comparisons`' (a fragile verdict reads
    *undecided* in this build, as the front page counts it).
    """
    from .fragile import claim_fragility
    from .history import history_line

    out = []
    for r in rows:
        if r.get("kind") != "paper":
            continue
        past = (history or {}).get((cid[:2], str(r.get("id"))), [])
        agg = (pooled or {}).get(str(r.get("id"))) or {}
        now = agg.get("overall") or current_word(r)
        if comparisons and claim_fragility(comparisons, cid, r, agg if "pooled" in agg else None):
            now = "undecided"
        line = history_line(past, now, "this build") if past else ""
        if line:
            out.append(f"- `{r.get('id')}`: {line}")
    return out


def verdict_box(
    cid: str,
    payloads: list[dict],
    *,
    label: str | None = None,
    pooled: dict[str, dict] | None = None,
    sweep_scale: str = "",
    comparisons: dict[str, dict] | None = None,
    history: dict[tuple[str, str], list[dict]] | None = None,
) -> str:
    """The box that opens a chapter: each claim of this run with its kind, verdict and a one-line effect.

    Paper claims come first. The effect is the first noisy core check's with its interval,
    else this run's figure. Where a sweep pooled the chapter's seeds (``pooled``: claim id →
    :func:`icml26.book.sweep.aggregate`), a column gives the pooled verdict; a verdict that
    rounding alone can move (``comparisons``, :func:`icml26.book.fragile.kernel_comparisons`)
    reads *fragile*; and under the table, one line per paper claim whose verdict changed
    between released versions (``history``, :func:`icml26.book.history.load_history`).
    Empty when the chapter wrote no claims.
    """
    from .fragile import claim_fragility

    pooled, comparisons, history = pooled or {}, comparisons or {}, history or {}
    rows = [r for p in payloads if not p.get("mismatch") for r in p.get("claims", [])]
    if not rows:
        return ""
    order = {k: i for i, k in enumerate(KIND_TITLE)}
    rows = sorted(rows, key=lambda r: order.get(r.get("kind"), len(order)))
    lines = [
        "````{admonition} The verdicts of this run",
        ":class: important",
        "",
        "```{table}",
        ":class: scorecard-compact",
        ":widths: auto",
        "",
        "| Claim | Kind | Verdict | Effect [90% interval], or our figure |"
        + (f" Pooled over seeds (`{sweep_scale}`) |" if pooled else ""),
        "|---|---|---|---|" + ("---|" if pooled else ""),
    ]
    for r in rows:
        effect = _one_effect(r) or _short(r.get("ours", ""), 60)
        v = r.get("verdict", "")
        paper = r.get("kind") == "paper"
        frag = claim_fragility(comparisons, cid, r) if paper else None
        shown = f"*fragile* (reads {v})" if frag else VERDICT_MARK.get(v, v)
        cells = [_cell(_short(r.get("claim", ""), 80)), _cell(r.get("kind", "")), _cell(shown), _cell(effect)]
        agg = pooled.get(str(r.get("id")))
        agg = agg if agg is not None and "overall" in agg else None
        if pooled:
            if agg is None:
                cells.append("—")
            else:
                pw = agg["overall"]
                fragp = claim_fragility(comparisons, cid, r, agg) if paper else None
                cells.append(
                    _cell(
                        (f"*fragile* ({pw})" if fragp else VERDICT_MARK.get(pw, pw))
                        + f", {agg['n']} seeds: {_one_effect(r, agg, digits=2) or '—'}"
                    )
                )
        lines.append("| " + " | ".join(cells) + " |")
    changes = history_lines(cid, rows, pooled=pooled, history=history, comparisons=comparisons)
    where = f"{{ref}}`Claim check <{label}>`" if label else "*Claim check*"
    lines += ["```", ""]
    if changes:
        lines += ["Verdicts that changed between released versions (CHANGELOG):", "", *changes, ""]
    lines += [
        f"How each verdict was decided, and the paper's figures beside ours: {where}. Only *paper* claims are reproductions.",
        "````",
    ]
    return "\n".join(lines)


CLAIM_COLUMNS: tuple[str, ...] = (
    "chapter",
    "part",
    "id",
    "kind",
    "claim",
    "verdict",
    "why",
    "effect",
    "ci_low",
    "ci_high",
    "smallest_effect",
    "paper_effect",
    "unit",
    "n",
    "n_needed",
    "outcome",
    "seeds",
    "pooled_verdict",
    "pooled_effect",
    "pooled_ci_low",
    "pooled_ci_high",
    "pooled_n",
    "pooled_cpus",
    "rule",
    "paper",
    "ours",
    "stand_in",
    "note",
    "revised",
    "to_test",
    "untestable",
    "decide_minutes",
    "fragile",
    "fragile_why",
    "history",
    "scale",
    "seed",
    "run_key",
)


def claims_data(book: Book, scale: str = "full") -> list[dict]:
    """Every claim of the rendered run as one flat record (:data:`CLAIM_COLUMNS`), with its checks nested.

    The effect columns are those of the claim's first noisy core check (one carrying a
    smallest effect); every check's numbers are under ``checks``, and the evidence pooled
    over a sweep's seeds, where there is one, under ``pooled_*`` and ``pooled_checks``.
    Records that do not come from the rendered run are left out, as on the scorecard.
    """
    from .fragile import claim_fragility, kernel_comparisons
    from .history import history_line, load_history

    records = load_records(book, scale)
    _, over_seeds = seed_aggregates(book, scale)
    comparisons = kernel_comparisons(book, scale)
    history = load_history(book.root)
    out = []
    for cid in sorted(records):
        for payload in records[cid]:
            if payload["mismatch"]:
                continue
            for r in payload.get("claims", []):
                agg = over_seeds.get(cid, {}).get(r.get("id"))
                agg = agg if agg is not None and "overall" in agg else None
                checks = {}
                for name, o in (r.get("outcomes") or {}).items():
                    d = (r.get("decisions") or {}).get(name) or {}
                    st = {k: v for k, v in (d.get("stats") or {}).items() if k not in ("diffs",)}
                    checks[name] = {"outcome": o, "rule": d.get("rule", ""), "detail": d.get("detail", ""), **st}
                first = next(
                    (c for c in checks.values() if c.get("smallest_effect") is not None and c.get("ci_low") is not None), {}
                )
                first_name = next((k for k, c in checks.items() if c is first), None)
                pooled = (
                    (agg or {}).get("pooled", {}).get("checks", {}).get(first_name, {}).get("stats", {}) if first_name else {}
                )
                frag = claim_fragility(comparisons, cid, r, agg) if r.get("kind") == "paper" else None
                past = history.get((cid[:2], str(r.get("id"))), [])
                now = "undecided" if frag else ((agg or {}).get("overall") or current_word(r))
                row = {
                    "chapter": cid,
                    "part": payload.get("part", "main"),
                    "id": r.get("id"),
                    "kind": r.get("kind"),
                    "claim": r.get("claim"),
                    "verdict": r.get("verdict"),
                    "why": r.get("why", ""),
                    "effect": first.get("effect"),
                    "ci_low": first.get("ci_low"),
                    "ci_high": first.get("ci_high"),
                    "smallest_effect": first.get("smallest_effect"),
                    "paper_effect": first.get("paper_effect"),
                    "unit": first.get("unit"),
                    "n": first.get("n"),
                    "n_needed": first.get("n_needed"),
                    "outcome": first.get("outcome"),
                    "seeds": (agg or {}).get("seeds", [payload.get("seed")]),
                    "pooled_verdict": (agg or {}).get("overall"),
                    "pooled_effect": pooled.get("effect"),
                    "pooled_ci_low": pooled.get("ci_low"),
                    "pooled_ci_high": pooled.get("ci_high"),
                    "pooled_n": pooled.get("n"),
                    "pooled_cpus": {cpu or "CPU not recorded": seeds for cpu, seeds in ((agg or {}).get("cpus") or {}).items()},
                    "rule": first.get("rule") or "; ".join(c.get("rule", "") for c in checks.values() if c.get("rule")),
                    "paper": r.get("paper", ""),
                    "ours": r.get("ours", ""),
                    "stand_in": r.get("stand_in", ""),
                    "note": r.get("note", ""),
                    "revised": r.get("revised", ""),
                    "to_test": r.get("to_test", ""),
                    "untestable": r.get("untestable", ""),
                    "decide_minutes": (decide_cost(book, scale, cid, r) or {}).get("minutes"),
                    "fragile": None if frag is None else bool(frag),
                    "fragile_why": frag or "",
                    "history": history_line(past, now, "this build") if past else "",
                    "history_versions": past,
                    "scale": payload.get("scale"),
                    "seed": payload.get("seed"),
                    "run_key": payload.get("run_key", ""),
                    "checks": checks,
                    "control": {
                        k: {"outcome": d.get("outcome"), "detail": d.get("detail", "")}
                        for k, d in (r.get("control") or {}).items()
                    },
                    "guards": {
                        k: {"outcome": d.get("outcome"), "detail": d.get("detail", "")}
                        for k, d in (r.get("guards") or {}).items()
                    },
                    "pooled_checks": {
                        k: {kk: vv for kk, vv in (d.get("stats") or {}).items() if kk != "diffs"}
                        for k, d in (agg or {}).get("pooled", {}).get("checks", {}).items()
                    },
                }
                out.append(row)
    return out


def write_claims_data(book: Book, scale: str, dest: Path) -> tuple[Path, Path]:
    """Write :func:`claims_data` as ``claims.json`` (full records) and ``claims.csv`` (the flat columns) in ``dest``."""
    import csv

    rows = claims_data(book, scale)
    dest.mkdir(parents=True, exist_ok=True)
    jf, cf = dest / "claims.json", dest / "claims.csv"
    jf.write_text(json.dumps({"scale": scale, "columns": list(CLAIM_COLUMNS), "claims": rows}, indent=1, default=str))
    with cf.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(CLAIM_COLUMNS), extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: (json.dumps(v) if isinstance(v, (list, dict)) else ("" if v is None else v)) for k, v in r.items()})
    return jf, cf


def chapter_title(ch: Chapter) -> str:
    """The chapter's first level-1 heading, or its id."""
    text = re.sub(r"^```.*?^```", "", ch.notebooks[0].read_text(encoding="utf-8"), flags=re.M | re.S)
    m = re.search(r"^# (.+)$", text, re.M)
    return m.group(1).strip() if m else ch.id


def cached_figure(book: Book, path: Path, data: Any, draw) -> Path:
    """Save the figure ``draw(out_path)`` draws from ``data`` at ``path``, drawing it only once per ``data``.

    Drawn figures are kept under ``_build/figures/`` by a SHA-256 of ``data`` (as JSON)
    and of the plotting code's version, so a rebuild whose records did not change copies
    the PNG instead of drawing it again.
    """
    import matplotlib

    from . import forest, perf

    code = b"".join(Path(m.__file__).read_bytes() for m in (forest, perf))
    h = hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode() + code + matplotlib.__version__.encode())
    cache = book.build_dir / "figures" / f"{path.stem}-{h.hexdigest()[:20]}{path.suffix}"
    if not cache.is_file():
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache.with_name(f".{os.getpid()}-{cache.name}")  # keeps the suffix savefig reads
        draw(tmp)
        os.replace(tmp, cache)
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(cache, path)
    return path
