"""Build the rendered book from executed notebooks, with the scorecard and the status page.

The build stages a clean source tree under ``_build/site/``: the book's config and
table of contents, the hand-written pages of ``book/``, the *executed* notebooks of
every chapter (from ``_build/executed/<scale>/``) and generated pages — the scorecard
gathered from the chapters' claim records, the status table and the intro's note on
what this build shows. Jupyter Book 1.x then renders it with execution off and ``-W``
(warnings are errors).

By default the build renders what has run: a chapter that has not run (or whose only
run failed) gets a page naming the command that runs it, a chapter whose results are
stale says so at the top, and problems in the executed outputs (error or stderr output,
progress bars, NaN in tables) are reported as notes and shown on the chapter's page.
``strict=True`` (``build --strict``, for CI) turns every one of these into an error.
"""

from __future__ import annotations

import hashlib
import importlib.metadata as md
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .chapter import SCALES
from .identity import cpu_description
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


def current_word(row: dict) -> str:
    """A claim record's verdict in today's words: a paper claim's *inconclusive* of a record made before 0.5.0
    reads *untestable here* when one of its positive controls contradicts, else *undecided*."""
    v = str(row.get("verdict", ""))
    if row.get("kind") == "paper" and v == "inconclusive":
        failed = any((d or {}).get("outcome") == "contradicts" for d in (row.get("control") or {}).values())
        return "untestable here" if failed else "undecided"
    return v


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
    need = [(int(st["n_needed"]), int(st.get("n") or 0)) for _, st in _noisy_checks(row)
            if st.get("outcome") == "inconclusive" and st.get("n_needed")]
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
                counts[kind][v] = counts[kind].get(v, 0) + 1
                per_chapter[cid][kind][v] = per_chapter[cid][kind].get(v, 0) + 1
                agg = over_seeds.get(cid, {}).get(r.get("id"))
                if agg is not None and "error" in agg:
                    seeds_cell = f"`{sweep_scale}`: {agg['n']} seeds, not pooled ({agg['error']})"
                    agg = None
                elif agg is not None:
                    from .sweep import describe

                    seeds_cell = f"`{sweep_scale}`, pooled: {VERDICT_MARK.get(agg['overall'], agg['overall'])}" + (
                        f" ({agg['why']})" if agg.get("why") else "") + f"; {describe(agg)}"
                    if kind == "paper":
                        overall_counts[agg["overall"]] = overall_counts.get(agg["overall"], 0) + 1
                        seeds_behind.update(agg["seeds"])
                elif not (over_seeds.get(cid, {}).get(r.get("id")) or {}).get("error"):
                    seeds_cell = "single seed"
                cost = _cost_text(decide_cost(book, scale, cid, r))
                why = "; ".join(x for x in (r.get("why", ""), cost) if x)
                verdict_cell = VERDICT_MARK.get(v, v) + (f" ({why})" if why else "")
                cells = [link if first[kind] else "", _cell(r["claim"]), _cell(r["paper"]), _cell(r["ours"]), _cell(verdict_cell)]
                if kind == "paper":
                    cells += [_cell(x) for x in _evidence_cells(r, agg)]
                cells += [_cell(seeds_cell), _cell(_decided(r)), _cell(r.get("stand_in", "")), _cell(_note(r))]
                first[kind] = False
                rows_by_kind[kind].append("| " + " | ".join(cells) + " |")
                if kind == "paper":
                    few = _cell(_short(r["claim"], 60)).replace("[", "(").replace("]", ")")
                    target = anchors.get(cid)
                    claim_cell = (f"{{ref}}`{few.replace('`', '')} <{target}>`" if target
                                  else _doc_link(few, f"{cid}/{ch.notebooks[0].stem}"))
                    verdict = VERDICT_MARK.get(v, v)
                    if agg is not None:
                        verdict += f"; over {agg['n']} seeds: {VERDICT_MARK.get(agg['overall'], agg['overall'])}"
                    compact.append("| " + " | ".join([
                        _doc_link(cid[:2], f"{cid}/{ch.notebooks[0].stem}") if first_compact else "", claim_cell,
                        _cell(verdict), _cell(_one_effect(r, agg, digits=2)), _cell(_short(r.get("paper", ""), 36)),
                    ]) + " |")
                    first_compact = False

    def tally(kind: str) -> str:
        c = counts[kind]
        n = sum(c.values())
        words = PAPER_WORDS if kind == "paper" else [w for w in VERDICT_MARK if w in c]
        return f"{n} (" + ", ".join(f"{c.get(w, 0)} {w}" for w in words) + ")" if n else "0"

    papers = remit(book)
    n_paper = sum(counts["paper"].values())
    single = (f"at `{scale}` scale, single seed (seed 0): "
              + ", ".join(f"**{counts['paper'].get(w, 0)} {w}**" for w in PAPER_WORDS) + ".")
    card = _Card(rows_by_kind=rows_by_kind, compact=compact, counts=counts)
    ran = {cid for cid, payloads in records.items() if any(not pl["mismatch"] for pl in payloads)}
    written = [p for p in papers if p["id"] in chapters]
    from_papers = f"from the {len(ran)} chapter{'s' * (len(ran) != 1)} that ran, of {len(written)} written for the {len(papers)} papers"
    if len(ran) == len(written) == len(papers):
        from_papers = f"from all {len(papers)} papers"
    if over_seeds:
        from .sweep import AGGREGATE_RULE

        n_agg = sum(overall_counts.values())
        card.tally = (
            f"**{n_paper} paper claim{'s' * (n_paper != 1)}** {from_papers}. "
            f"Evidence pooled over {len(seeds_behind)} seeds (`python -m icml26 sweep` at `{sweep_scale}` scale) "
            f"for {n_agg} of them: "
            + ", ".join(f"**{overall_counts.get(w, 0)} {w}**" for w in PAPER_WORDS)
            + f". The seed-0 runs the chapters show read, {single}"
        )
        card.rule = f"**How verdicts are decided.** {VERDICT_RULE} **Over seeds:** {AGGREGATE_RULE}"
    else:
        card.tally = f"**{n_paper} paper claim{'s' * (n_paper != 1)}** {from_papers} {single}"
        card.rule = (f"**How verdicts are decided.** {VERDICT_RULE} No sweep over seeds has run yet, so every row is a "
                     "single seed (`python -m icml26 sweep --until-decided` adds seeds until the claims are decided).")
    if figure_dir is not None:
        card.data_links = ["The scorecard as data: {download}`claims.json <_generated/claims.json>` (every claim with its "
                           "checks, effects, intervals, smallest effects, replicates, seeds and rules) and {download}`claims.csv "
                           "<_generated/claims.csv>` (one row per claim; `pandas.read_csv` reads it).", ""]
    card.kinds = (
        "Only *paper* claims, the papers' empirical results tested here, count in that line. Besides them the chapters "
        f"check {tally('derived')} *derived* identities, show {tally('stand-in')} *stand-in* behaviours, and test "
        f"{tally('own')} properties of their *own* tooling; each kind has its own table and its own words. "
        "Every cell is filled from the claim records the chapters wrote when they ran; nothing here is typed by hand. "
        "\"—\" marks an empty cell."
    )
    if figure_dir is not None and forest:
        fig_title = ("Paper claims: our effect with its interval" + (" (pooled over seeds where a sweep ran, at 1−2α/K; else seed 0, 90 %)" if over_seeds else " (seed 0, 90 %)"))
        cached_figure(book, figure_dir / "forest.png", {"rows": forest, "title": fig_title},
                      lambda out: forest_figure(forest, title=fig_title, path=out))
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
            + ", ".join(ids) + f"), so their claims are left out of *Over seeds*; `python -m icml26 sweep {' '.join(ids)} "
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
            + "; ".join(f"{cid} ({' | '.join(sorted(ps))})" for cid, ps in sorted(with_params.items())) + ".",
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
    cov = ["| Paper | Chapter | Paper claims: reproduced / partly / not / undecided / untestable here | Derived | Stand-in | Own | Run time |",
           "|---|---|---|---|---|---|---|"]
    for p in papers:
        cid = p["id"]
        title = _cell(p["title"])
        if cid not in chapters:
            paper = f"[{title}]({p['url']})" if p.get("url") else title
            cov.append(f"| {paper} | *not yet written* | — | — | — | — | — |")
            continue
        ch = chapters[cid]
        pc = per_chapter[cid]
        paper_counts = " / ".join(str(pc["paper"].get(w, 0)) for w in PAPER_WORDS)
        others = [", ".join(f"{n} {w}" for w, n in pc[k].items()) or "—" for k in ("derived", "stand-in", "own")]
        cov.append(
            f"| {title} | {_doc_link(cid, f'{cid}/{ch.notebooks[0].stem}')} | {paper_counts} | "
            + " | ".join(others)
            + f" | {_runtime(book, scale, cid)} |"
        )
    card.coverage = cov
    return card


DETAIL_PAGE = "claims"  # book/claims.md: the "Claims in detail" page, which includes _generated/claims-detail.md
COMPACT_HEADER = ("| Ch. | Paper claim | Verdict | Our effect [interval: 90 %; pooled, 1−2α/K], δ smallest effect, n≈ replicates that would decide it | The paper's figure |\n"
                  "|---|---|---|---|---|")


def scorecard_markdown(book: Book, scale: str = "full", *, figure_dir: Path | None = None,
                       anchors: dict[str, str] | None = None) -> str:
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
        out += ["```{table}", ":class: scorecard-compact", ":widths: auto", "", COMPACT_HEADER, *card.compact, "```", "",
                "Each claim links to its chapter's claim check. The effect is the first noisy core check's, in the "
                "claim's own units (pooled over seeds where a sweep ran); \"—\" marks a claim decided by exact checks "
                "(counts, identities) alone.", ""]
    else:
        out += ["*(none)*", ""]
    out += [f"{card.kinds} How each verdict was decided, smallest effects, replicates needed, stand-ins, notes, "
            f"revisions and the other kinds of claim, row by row: {more}.", ""]
    return "\n".join(out)


def claims_detail_markdown(book: Book, scale: str = "full") -> str:
    """The *Claims in detail* page: the verdict rule, coverage of the papers, and one full table per kind of claim."""
    card = _scorecard(book, scale, None, None)
    out = "\n".join([card.tally, "", card.rule, "", card.kinds, "", *card.notes])
    out += "\n## Coverage\n\n" + "\n".join(card.coverage) + "\n"
    header = "| Chapter | Claim | Paper | This run (seed 0) | Verdict | Over seeds | How it was decided | Stand-in | Note |\n|---|---|---|---|---|---|---|---|---|"
    paper_header = ("| Chapter | Claim | Paper | This run (seed 0) | Verdict | Effect [interval] | Smallest effect | "
                    "Replicates needed | Over seeds | How it was decided | Stand-in | Note |\n|---|---|---|---|---|---|---|---|---|---|---|---|")
    for kind, title in KIND_TITLE.items():
        out += f"\n## {title}\n\n"
        h = paper_header if kind == "paper" else header
        out += (h + "\n" + "\n".join(card.rows_by_kind[kind]) + "\n") if card.rows_by_kind[kind] else "*(none)*\n"
    return out


def verdict_box(cid: str, payloads: list[dict], *, label: str | None = None) -> str:
    """The box that opens a chapter: each claim of this run with its kind, verdict and a one-line effect.

    Paper claims come first. The effect is the first noisy core check's with its interval,
    else this run's figure. Empty when the chapter wrote no claims.
    """
    rows = [r for p in payloads if not p.get("mismatch") for r in p.get("claims", [])]
    if not rows:
        return ""
    order = {k: i for i, k in enumerate(KIND_TITLE)}
    rows = sorted(rows, key=lambda r: order.get(r.get("kind"), len(order)))
    lines = ["````{admonition} The verdicts of this run", ":class: important", "",
             "```{table}", ":class: scorecard-compact", ":widths: auto", "",
             "| Claim | Kind | Verdict | Effect [90% interval], or our figure |", "|---|---|---|---|"]
    for r in rows:
        effect = _one_effect(r) or _short(r.get("ours", ""), 60)
        v = r.get("verdict", "")
        lines.append("| " + " | ".join([_cell(_short(r.get("claim", ""), 80)), _cell(r.get("kind", "")),
                                        _cell(VERDICT_MARK.get(v, v)), _cell(effect)]) + " |")
    where = f"{{ref}}`Claim check <{label}>`" if label else "*Claim check*"
    lines += ["```", "", f"How each verdict was decided, and the paper's figures beside ours: {where}. Only *paper* claims "
              "are reproductions.", "````"]
    return "\n".join(lines)

CLAIM_COLUMNS: tuple[str, ...] = (
    "chapter", "part", "id", "kind", "claim", "verdict", "why", "effect", "ci_low", "ci_high", "smallest_effect",
    "paper_effect", "unit", "n", "n_needed", "outcome", "seeds", "pooled_verdict", "pooled_effect", "pooled_ci_low",
    "pooled_ci_high", "pooled_n", "rule", "paper", "ours", "stand_in", "note", "revised", "to_test", "untestable",
    "decide_minutes", "scale", "seed", "run_key",
)


def claims_data(book: Book, scale: str = "full") -> list[dict]:
    """Every claim of the rendered run as one flat record (:data:`CLAIM_COLUMNS`), with its checks nested.

    The effect columns are those of the claim's first noisy core check (one carrying a
    smallest effect); every check's numbers are under ``checks``, and the evidence pooled
    over a sweep's seeds, where there is one, under ``pooled_*`` and ``pooled_checks``.
    Records that do not come from the rendered run are left out, as on the scorecard.
    """
    records = load_records(book, scale)
    _, over_seeds = seed_aggregates(book, scale)
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
                first = next((c for c in checks.values() if c.get("smallest_effect") is not None and c.get("ci_low") is not None), {})
                first_name = next((k for k, c in checks.items() if c is first), None)
                pooled = (agg or {}).get("pooled", {}).get("checks", {}).get(first_name, {}).get("stats", {}) if first_name else {}
                row = {
                    "chapter": cid, "part": payload.get("part", "main"), "id": r.get("id"), "kind": r.get("kind"),
                    "claim": r.get("claim"), "verdict": r.get("verdict"), "why": r.get("why", ""),
                    "effect": first.get("effect"), "ci_low": first.get("ci_low"), "ci_high": first.get("ci_high"),
                    "smallest_effect": first.get("smallest_effect"), "paper_effect": first.get("paper_effect"),
                    "unit": first.get("unit"), "n": first.get("n"), "n_needed": first.get("n_needed"),
                    "outcome": first.get("outcome"), "seeds": (agg or {}).get("seeds", [payload.get("seed")]),
                    "pooled_verdict": (agg or {}).get("overall"), "pooled_effect": pooled.get("effect"),
                    "pooled_ci_low": pooled.get("ci_low"), "pooled_ci_high": pooled.get("ci_high"), "pooled_n": pooled.get("n"),
                    "rule": first.get("rule") or "; ".join(c.get("rule", "") for c in checks.values() if c.get("rule")),
                    "paper": r.get("paper", ""), "ours": r.get("ours", ""), "stand_in": r.get("stand_in", ""),
                    "note": r.get("note", ""), "revised": r.get("revised", ""), "to_test": r.get("to_test", ""),
                    "untestable": r.get("untestable", ""),
                    "decide_minutes": (decide_cost(book, scale, cid, r) or {}).get("minutes"), "scale": payload.get("scale"),
                    "seed": payload.get("seed"), "run_key": payload.get("run_key", ""),
                    "checks": checks,
                    "control": {k: {"outcome": d.get("outcome"), "detail": d.get("detail", "")} for k, d in (r.get("control") or {}).items()},
                    "guards": {k: {"outcome": d.get("outcome"), "detail": d.get("detail", "")} for k, d in (r.get("guards") or {}).items()},
                    "pooled_checks": {k: {kk: vv for kk, vv in (d.get("stats") or {}).items() if kk != "diffs"}
                                      for k, d in (agg or {}).get("pooled", {}).get("checks", {}).items()},
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
            w.writerow({k: (json.dumps(v) if isinstance(v, list) else ("" if v is None else v)) for k, v in r.items()})
    return jf, cf


def chapter_title(ch: Chapter) -> str:
    """The chapter's first level-1 heading, or its id."""
    text = re.sub(r"^```.*?^```", "", ch.notebooks[0].read_text(encoding="utf-8"), flags=re.M | re.S)
    m = re.search(r"^# (.+)$", text, re.M)
    return m.group(1).strip() if m else ch.id


def status_markdown(book: Book) -> str:
    """The book's version and commit, per-chapter wall time at each scale, package versions and the machine."""
    from .identity import describe
    from .perf import load_baselines

    baselines = load_baselines(book, "full")
    head = [h for s in SCALES for h in (f"`{s}` wall", f"`{s}` CPU")]
    head += [f"`full` CPU in {b['label']}" for b in baselines] + (["`full` CPU now ÷ then"] if baselines else [])
    lines = [f"These pages were built from **{describe(book.root)}**.", "", "## Chapter runs", "",
             "| Chapter | " + " | ".join(head) + " | Last good run (full) |", "|---|" + "---|" * (len(head) + 1)]
    stale_notes = []
    made_on: dict[str, list[str]] = {}  # CPU -> the runs shown that it made
    for ch in book.chapters():
        cells = []
        cpu_full = None
        for s in SCALES:
            word, why = book.state(s, ch)
            rec = book.record(s, ch)
            if word in ("ok", "stale") and rec is not None:
                made_on.setdefault(rec.cpu, []).append(f"{ch.id[:2]} at `{s}`")
                cells.append(f"{rec.wall_s:.1f} s" + (" **(stale)**" if word == "stale" else ""))
                cells.append(f"{rec.cpu_s:.1f} s" if rec.cpu_s > 0 else "—")
                if s == "full" and rec.cpu_s > 0:
                    cpu_full = rec.cpu_s
            else:
                cells += [word, "—"]
            if why:
                stale_notes.append(f"- `{ch.id}` at `{s}` scale, {word}: {_cell(why)}")
        then = None
        for b in baselines:
            old = (b["chapters"].get(ch.id) or {}).get("cpu_s") or 0
            cells.append(f"{old:.1f} s" if old > 0 else "—")
            then = old if old > 0 else then
        if baselines:
            cells.append(f"{cpu_full / then:.2f}" if cpu_full and then else "—")
        rec = book.record("full", ch)
        lines.append(f"| {ch.id} | " + " | ".join(cells) + f" | {rec.finished if rec else '—'} |")
    lines += ["", "Wall time is the chapter's execution through papermill, kernel start included; CPU is the "
              "CPU time of the chapter's kernel (user + system), which grows far less than wall time when other "
              "work shares the machine (— where a run predates its recording)."]
    here = cpu_description()
    shown = sum(len(r) for r in made_on.values())

    def which(runs: list[str]) -> str:
        return "every run shown" if len(runs) == shown else ", ".join(runs)

    others = [f"{_cell(cpu)} ({which(runs)})" for cpu, runs in sorted(made_on.items()) if cpu and cpu != here]
    if others:
        lines.append(f"Runs made on another CPU than this build's ({_cell(here)}): " + "; ".join(others) + ".")
    if made_on.get(""):
        lines.append(f"Runs whose CPU was not recorded (made before run records named it): {which(made_on[''])}.")
    if others or made_on.get(""):
        lines.append("The same seed gives the same figures on the same kind of CPU; kernels for other vector "
                     "instructions round differently, which moves the figures of chapters that train models.")
    for b in baselines:
        cpu = b.get("cpu")
        where = (f"on {_cell(cpu)}" + ("" if cpu == here else f", not this build's CPU ({_cell(here)}), so the ratio compares machines as well as code")
                 if cpu else f"on a CPU that was not recorded (this build's: {_cell(here)}), so the ratio may compare machines as well as code")
        lines.append(f"The `full` CPU in {b['label']} comes from runs of {_cell(b.get('built_from', '?'))}, saved at {b.get('saved', '?')} "
                     f"(`data/timings/full-{b['label']}.json`, which lists when each run finished; written by `python -m icml26 times --save {b['label']}`), "
                     f"{where}.")
    lines.append("")
    if stale_notes:
        lines += [
            "*Stale* results come from the last run that succeeded; they are kept, and shown, until a new run "
            "of the chapter succeeds:",
            "",
            *stale_notes,
            "",
        ]
    lines += ["## Packages", "", "| Package | Version |", "|---|---|"]
    req = book.root / "requirements.txt"
    names = []
    if req.exists():
        for line in req.read_text().splitlines():
            line = line.split("#")[0].strip()
            if "==" in line:
                names.append(line.split("==")[0].strip())
    for name in names:
        try:
            v = md.version(name)
        except md.PackageNotFoundError:
            v = "not installed"
        lines.append(f"| {name} | {v} |")
    lines += ["", "## Machine", "", "| | |", "|---|---|"]
    mem = ""
    try:
        mem = f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.1f} GiB"
    except (ValueError, OSError, AttributeError):  # pragma: no cover
        mem = "unknown"
    for k, v in [
        ("Python", platform.python_version()),
        ("Platform", platform.platform()),
        ("Processor", cpu_description()),
        ("CPU cores", str(os.cpu_count())),
        ("Memory", mem),
        ("Built", time.strftime("%Y-%m-%d %H:%M:%S %Z")),
    ]:
        lines.append(f"| {k} | {_cell(v)} |")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------
# executed notebooks: checks and clean-up before rendering
# ---------------------------------------------------------------------------------------
_PROGRESS = re.compile(r"(\d+%\|)|(\r)|(it/s\])|(s/it\])")
_NAN_HTML = re.compile(r"<td[^>]*>\s*(NaN|nan|None|&lt;NA&gt;|NaT|inf|-inf)\s*</td>")
_NAN_MD = re.compile(r"\|\s*(NaN|nan|None|<NA>|NaT)\s*(?=\|)")
_NAN_TEXT = re.compile(r"(?<![\w.])NaN(?![\w])")


def clean_executed(nb) -> list[str]:
    """Problems in an executed notebook's outputs: the rendered book must show none of them.

    They are error outputs, stderr text (warnings, tracebacks, progress bars: loops report
    with ``chapter.progress``, which prints one line under papermill) and NaN in tables
    (a table says "—" where a value is undefined). Nothing is removed.
    """
    problems = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        nans = 0
        for out in cell.get("outputs", []):
            kind = out.get("output_type")
            if kind == "error":
                problems.append(f"cell {i + 1}: error output {out.get('ename')}: {out.get('evalue')}")
            elif kind == "stream" and out.get("name") == "stderr":
                text = out.get("text", "")
                if not text.strip():
                    continue
                if _PROGRESS.search(text) and "Warning" not in text and "Traceback" not in text:
                    problems.append(f"cell {i + 1}: progress-bar output (loop with chapter.progress): {text.strip()[-80:]!r}")
                else:
                    problems.append(f"cell {i + 1}: stderr output: {text.strip()[:200]}")
            elif kind == "stream":
                nans += len(_NAN_TEXT.findall(out.get("text", "")))
            elif kind in ("execute_result", "display_data"):
                data = out.get("data", {})
                if "text/html" in data:
                    nans += len(_NAN_HTML.findall(_joined(data["text/html"])))
                elif "text/markdown" in data:
                    nans += len(_NAN_MD.findall(_joined(data["text/markdown"])))
                elif "text/plain" in data:
                    nans += len(_NAN_TEXT.findall(_joined(data["text/plain"])))
        if nans:
            problems.append(f"cell {i + 1}: {nans} NaN/None cell(s) in a table (show \"—\" and say once what it means)")
    return problems


def _joined(x) -> str:
    return "".join(x) if isinstance(x, list) else str(x)


def fold_parameters(nb) -> None:
    """Replace papermill's injected-parameters cell by a line saying which values this run used."""
    injected = [i for i, c in enumerate(nb.cells) if "injected-parameters" in c.get("metadata", {}).get("tags", [])]
    if not injected:
        return
    params = dict(nb.metadata.get("papermill", {}).get("parameters", {}))
    for i in reversed(injected):
        del nb.cells[i]
    values = ", ".join(f"`{k} = {v!r}`" for k, v in params.items()) or "the defaults above"
    nb.cells.insert(injected[0], _markdown_cell(f"*This run used {values}: the runner set them, overriding the defaults in the cell above.*"))


class _Node(dict):
    """A notebook's JSON as nested dicts with attribute access (what ``nbformat.NotebookNode`` offers)."""

    def __getattr__(self, name: str):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name: str, value) -> None:
        self[name] = value


def _node(obj):
    if isinstance(obj, dict):
        return _Node({k: _node(v) for k, v in obj.items()})
    if isinstance(obj, list):
        return [_node(v) for v in obj]
    return obj


_SPLIT_MIMES = {"application/javascript", "image/svg+xml"}


def _multiline(data: dict, join: bool) -> None:
    for key, value in list(data.items()):
        if key.startswith("text/") or key in _SPLIT_MIMES:
            if join and isinstance(value, list):
                data[key] = "".join(value)
            elif not join and isinstance(value, str):
                data[key] = value.splitlines(True)


def _text_fields(nb, join: bool) -> None:
    """Join (on reading) or split (on writing) the multi-line strings, as nbformat v4 does on disk."""
    for cell in nb.cells:
        src = cell.get("source")
        if join and isinstance(src, list):
            cell["source"] = "".join(src)
        elif not join and isinstance(src, str):
            cell["source"] = src.splitlines(True)
        for attachment in cell.get("attachments", {}).values():
            _multiline(attachment, join)
        for out in cell.get("outputs", []) if cell.get("cell_type") == "code" else []:
            if out.get("output_type") in ("execute_result", "display_data"):
                _multiline(out.get("data", {}), join)
            elif isinstance(out.get("text"), list if join else str):
                out["text"] = "".join(out["text"]) if join else out["text"].splitlines(True)


def read_notebook(text: str):
    """A v4 notebook from its JSON, multi-line strings joined (as ``nbformat.v4.reads``, without schema validation).

    Importing nbformat's validator costs seconds of JSON-schema start-up; the executed
    notebooks come from papermill, and Sphinx reads (and validates) them again.
    """
    nb = _node(json.loads(text))
    if nb.get("nbformat") != 4:
        raise ValueError(f"expected a version-4 notebook, got nbformat={nb.get('nbformat')!r}")
    _text_fields(nb, join=True)
    return nb


def write_notebook(nb) -> str:
    """The JSON text nbformat writes for ``nb`` (multi-line strings split, sorted keys, indent 1, final newline)."""
    import copy

    out = copy.deepcopy(nb)
    for key in ("orig_nbformat", "orig_nbformat_minor", "signature"):
        out.metadata.pop(key, None)
    for cell in out.cells:
        cell.get("metadata", {}).pop("trusted", None)
    _text_fields(out, join=False)
    return json.dumps(out, sort_keys=True, indent=1, separators=(",", ": "), ensure_ascii=False) + "\n"


def _markdown_cell(text: str):
    """A markdown cell whose id is derived from its text, so staging the same page twice gives the same file."""
    return _Node(cell_type="markdown", id="icml26-" + hashlib.sha256(text.encode()).hexdigest()[:12], metadata=_Node(), source=text)


def _banner(nb, admonition: str, text: str) -> None:
    """Put an admonition right under the notebook's title (inside the title's cell, if it holds more)."""
    _under_title(nb, f"````{{{admonition}}}\n{text}\n````")


def _under_title(nb, block: str) -> None:
    """Put a MyST block right under the notebook's title."""
    first = nb.cells[0] if nb.cells else None
    if first is not None and first.cell_type == "markdown" and first.source.lstrip().startswith("# "):
        title, _, rest = first.source.lstrip().partition("\n")
        first.source = f"{title}\n\n{block}\n\n{rest.lstrip()}".rstrip() + "\n"
    else:
        nb.cells.insert(0, _markdown_cell(block))


def _after_claim(nb, block: str) -> None:
    """Put a MyST block at the end of the notebook's *The claim* section (before ``## Parameters``).

    Without such a section the block goes right under the title.
    """
    for cell in nb.cells:
        if cell.cell_type == "markdown" and re.search(r"^## Parameters\s*$", cell.source, re.M):
            m = re.search(r"^## Parameters\s*$", cell.source, re.M)
            head, rest = cell.source[: m.start()], cell.source[m.start():]
            cell.source = (head.rstrip() + "\n\n" if head.strip() else "") + block + "\n\n" + rest
            return
    _under_title(nb, block)


def _label_heading(nb, heading: str, label: str) -> bool:
    """Put the MyST label ``(label)=`` on the first ``## heading`` of the notebook; whether there was one."""
    pattern = re.compile(rf"^## {re.escape(heading)}\s*$", re.M)
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            m = pattern.search(cell.source)
            if m:
                cell.source = cell.source[: m.start()] + f"({label})=\n" + cell.source[m.start():]
                return True
    return False


def notebook_parameters(nb) -> dict:
    """The literal assignments of a notebook's ``parameters`` cell (name → value), in order."""
    from .runner import literal_parameters

    for cell in nb.cells:
        if cell.cell_type == "code" and "parameters" in cell.get("metadata", {}).get("tags", []):
            return literal_parameters(cell.source)
    return {}


def rerun_box(ch: Chapter, nb_path: Path, params: dict, scale: str) -> str:
    """A collapsed admonition: how to rerun this chapter with ``run``, with papermill, and in JupyterLab."""
    import shlex

    rel = nb_path.relative_to(ch.path.parent.parent).as_posix() if ch.path.parent.parent in nb_path.parents else nb_path.name
    stem = nb_path.stem
    shown = {**params, "scale": scale, "seed": 0}
    p_args = " ".join(f"-p {k} {shlex.quote(str(v))}" for k, v in shown.items())
    others = ", ".join(f"`{k} = {v!r}`" for k, v in params.items() if k not in ("scale", "seed")) or "none besides `scale` and `seed`"
    return "\n".join([
        "````{admonition} Rerun this chapter",
        ":class: dropdown tip",
        "",
        f"- With the book's runner (cached; records go to the scorecard): `python -m icml26 run {ch.id[:2]} --scale {scale} --seed 0`",
        f"- With papermill, on a scratch copy: `jupytext --to ipynb {rel} -o _build/manual/{stem}.ipynb`, then "
        f"`papermill --cwd {Path(rel).parent.as_posix()} _build/manual/{stem}.ipynb _build/manual/{stem}-{scale}.ipynb {p_args}`",
        f"- In JupyterLab: open `{rel}` (it opens as a notebook; `jupyter lab --allow-root` when run as root).",
        f"- The chapter's parameters: {others}.",
        "````",
    ])


def _placeholder(book: Book, ch: Chapter, scale: str, word: str, why: str, stem: str) -> str:
    """The page shown for a chapter notebook that has nothing to render at this scale."""
    number = f"{ch.number:02d}"
    reason = (
        f"This chapter has not run at `{scale}` scale yet, so this build has nothing to show for it."
        if word == "not run"
        else f"The last run of this chapter at `{scale}` scale failed, and no earlier run succeeded: {why}."
    )
    title = chapter_title(ch) if stem == ch.notebooks[0].stem else f"{chapter_title(ch)}: {stem}"
    return (
        f"# {title}\n\n````{{note}}\n{reason} Run it, then build again:\n\n"
        f"```bash\npython -m icml26 run {number} --scale {scale}\npython -m icml26 build --scale {scale}\n```\n````\n"
    )


@dataclass
class Staged:
    """A staged site: its folder, what each chapter shows, and the problems a lenient build let through."""

    path: Path
    shown: dict[str, str] = field(default_factory=dict)  # chapter id -> "ok" | "stale" | "not run" | "failed"
    notes: list[str] = field(default_factory=list)
    changed: int = 0  # files of the site written or removed by this staging (0: identical to the last one)


@dataclass
class BuildResult:
    """The rendered book's index page and the problems a lenient build reported."""

    index: Path
    notes: list[str] = field(default_factory=list)


def build_note(book: Book, scale: str, shown: dict[str, str]) -> str:
    """The intro's sentence on what this build shows: scale, seed(s), dates, chapters run."""
    recs = [book.record(scale, cid) for cid, word in shown.items() if word in ("ok", "stale")]
    recs = [r for r in recs if r is not None]
    total = len(shown)
    if not recs:
        return (
            f"*This build shows no executed chapter: none has run at `{scale}` scale yet. Each chapter's page names "
            "the command that runs it.*\n"
        )
    seeds = sorted({r.seed for r in recs})
    seed = f"seed {seeds[0]}" if len(seeds) == 1 else "seeds " + ", ".join(map(str, seeds))
    days = sorted(r.finished for r in recs if r.finished)
    when = ""
    if days:
        first, last = days[0], days[-1]
        when = f" on {first[:10]}" if first[:10] == last[:10] else f" between {first[:10]} and {last[:10]}"
    cpus = sorted({r.cpus for r in recs if r.cpus})
    machine = f", on a {cpus[0]}-core CPU" if len(cpus) == 1 else (f", on machines with {', '.join(map(str, cpus))} CPU cores" if cpus else "")
    text = f"*The pages show the notebooks as executed at `{scale}` scale with {seed}{when}{machine}"
    text += f" ({len(recs)} of {total} chapters; run times on the {{doc}}`status page <status>`)."
    missing = [cid for cid, w in shown.items() if w in ("not run", "failed")]
    stale = [cid for cid, w in shown.items() if w == "stale"]
    if missing:
        text += f" Not shown, because they have not run successfully at this scale: {', '.join(missing)}; their pages name the command that runs them."
    if stale:
        text += f" Stale (kept from an earlier run; a later run failed or the sources changed): {', '.join(stale)}."
    if scale != "full":
        text += " This is the quick `ci` scale: its numbers check the machinery; the book's results are read at `full` scale."
    return text + "*\n"


def stage(book: Book, scale: str = "full", *, strict: bool = False) -> Staged:
    """Lay out ``_build/site`` for Jupyter Book.

    With ``strict``, raise :class:`BuildError` if any chapter has not run, failed, is
    stale, or has a problem in its outputs; otherwise render what there is and return
    those problems as notes. Source files are read and parsed once for the whole
    stage (:func:`icml26.book.runner.file_memo`).
    """
    from .runner import file_memo

    with file_memo():
        return _stage(book, scale, strict=strict)


def _stage(book: Book, scale: str, *, strict: bool) -> Staged:
    final = book.build_dir / "site"
    # Lay the site out in a scratch folder, then copy over only what changed (:func:`sync_tree`):
    # unchanged pages keep their mtimes, so Sphinx re-reads just the changed ones.
    site = book.build_dir / "site-staging"
    if site.exists():
        shutil.rmtree(site)
    site.mkdir(parents=True)
    for name in ("_config.yml", "_toc.yml"):
        shutil.copy2(book.root / name, site / name)
    (site / "book").mkdir()
    for page in book.book_dir.glob("*.md"):
        shutil.copy2(page, site / "book" / page.name)
    static = book.book_dir / "_static"  # Jupyter Book picks up <book root>/_static/*.css itself
    if static.is_dir():
        shutil.copytree(static, site / "_static")

    staged = Staged(site)
    problems = []
    sweep_scale, over_seeds = seed_aggregates(book, scale)
    records = load_records(book, scale)
    from .identity import describe as describe_identity

    identity = describe_identity(book.root)
    anchors: dict[str, str] = {}
    for ch in book.chapters():
        word, why = book.state(scale, ch)
        staged.shown[ch.id] = word
        dest = site / "book" / ch.id
        dest.mkdir()
        if word in ("not run", "failed"):
            problems.append(
                f"{ch.id}: not executed at {scale} scale (run `python -m icml26 run {ch.id} --scale {scale}`)"
                if word == "not run"
                else f"{ch.id}: last {scale} run failed: {why}"
            )
            for nb_path in ch.notebooks:
                (dest / f"{nb_path.stem}.md").write_text(_placeholder(book, ch, scale, word, why, nb_path.stem))
            continue
        if word == "stale":
            problems.append(f"{ch.id}: stale: {why}")
        for nb_path in ch.notebooks:
            src = book.executed_dir(scale, ch) / f"{nb_path.stem}.ipynb"
            nb = read_notebook(src.read_text(encoding="utf-8"))
            found = clean_executed(nb)
            problems += [f"{ch.id}/{nb_path.stem}: {p}" for p in found]
            params = notebook_parameters(nb)
            fold_parameters(nb)
            if ch.id not in anchors and _label_heading(nb, "Claim check", claim_label(ch.id)):
                anchors[ch.id] = claim_label(ch.id)
            if nb_path == ch.notebooks[0]:
                box = verdict_box(ch.id, records.get(ch.id, []), label=anchors.get(ch.id))
                if box:
                    _after_claim(nb, box)
            _under_title(nb, rerun_box(ch, nb_path, params, scale))
            if found:
                items = "\n".join("- `` " + p.replace("`", "'") + " ``" for p in found)
                _banner(nb, "warning", f"The build found problems in this page's outputs:\n\n{items}")
            if word == "stale":
                _banner(nb, "warning", f"These results are stale: {_cell(why)}.")
            if ch.id in over_seeds:
                n_seeds = max(a["n"] for a in over_seeds[ch.id].values())
                _banner(nb, "note", f"This page shows the seed-0 run. The {_doc_link('scorecard', '../intro')} gives this "
                        f"chapter's claims with their evidence pooled over {n_seeds} seeds (`{sweep_scale}` scale).")
            nb.cells.append(_markdown_cell(
                f"---\n\n*Built from {identity}; executed at `{scale}` scale, seed 0.*"))
            (dest / src.name).write_text(write_notebook(nb), encoding="utf-8")
        for extra in ch.path.iterdir():  # images and other assets next to the notebook
            if extra.is_file() and extra.suffix.lower() in {".png", ".svg", ".jpg", ".jpeg", ".gif", ".bib"}:
                shutil.copy2(extra, dest / extra.name)
    for cid, payloads in load_records(book, scale).items():
        for payload in payloads:
            if payload["mismatch"]:
                problems.append(
                    f"{cid}: claim records {payload.get('part', 'main')}.json (seed {payload.get('seed')}) do not come from "
                    "the run rendered here; the scorecard leaves them out"
                )
    if problems and strict:
        raise BuildError("the book cannot be built (--strict):\n  " + "\n  ".join(problems))
    staged.notes = problems

    gen = site / "book" / "_generated"
    gen.mkdir()
    write_claims_data(book, scale, gen)
    (gen / "scorecard.md").write_text(scorecard_markdown(book, scale, figure_dir=gen, anchors=anchors))
    (gen / "claims-detail.md").write_text(claims_detail_markdown(book, scale))
    status = status_markdown(book)
    built_row = re.compile(r"^\| Built \| [^|\n]* \|$", re.M)
    last = final / "book" / "_generated" / "status.md"
    if last.is_file() and built_row.sub("", last.read_text()) == built_row.sub("", status):
        status = last.read_text()  # nothing else changed: the pages were built when that row says
    (gen / "status.md").write_text(status)
    (gen / "build.md").write_text(build_note(book, scale, staged.shown))
    from .bench import load as load_bench
    from .perf import benchmark_figure, performance_markdown

    bench_records = load_bench(book.results_dir(), scale)
    fig = (cached_figure(book, gen / "perf-benchmarks.png", bench_records, lambda out: benchmark_figure(bench_records, out))
           if bench_records else None)
    (gen / "performance.md").write_text(performance_markdown(book, scale, figure=f"_generated/{fig.name}" if fig else None))
    staged.changed = sync_tree(site, final, keep={"_build"})
    shutil.rmtree(site)
    staged.path = final
    return staged


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


def sync_tree(src: Path, dst: Path, *, keep: set[str] = frozenset()) -> int:
    """Make ``dst`` hold exactly the files of ``src``, rewriting only those whose bytes differ.

    Files that are the same keep their modification time (so an incremental Sphinx
    build skips them); files absent from ``src`` are removed, except top-level
    entries named in ``keep``. Returns how many files were written or removed.
    """
    changed = 0
    dst.mkdir(parents=True, exist_ok=True)
    wanted: set[Path] = set()
    for f in sorted(src.rglob("*")):
        rel = f.relative_to(src)
        wanted.add(rel)
        out = dst / rel
        if f.is_dir():
            if out.exists() and not out.is_dir():
                out.unlink()
            out.mkdir(parents=True, exist_ok=True)
            continue
        if out.is_dir():
            shutil.rmtree(out)
        if out.is_file() and out.stat().st_size == f.stat().st_size and out.read_bytes() == f.read_bytes():
            continue
        shutil.copy2(f, out)
        changed += 1
    for f in sorted(dst.rglob("*"), reverse=True):  # deepest first, so emptied folders can go
        rel = f.relative_to(dst)
        if rel.parts[0] in keep or rel in wanted or not f.exists():
            continue
        shutil.rmtree(f) if f.is_dir() else f.unlink()
        changed += 1
    return changed


def build(book: Book, scale: str = "full", *, strict: bool = False, warnings_are_errors: bool = True) -> BuildResult:
    """Stage and render the book; return the HTML index and the notes of a lenient build."""
    staged = stage(book, scale, strict=strict)
    site = staged.path
    exe = Path(sys.executable).parent / "jupyter-book"
    cmd = [str(exe) if exe.exists() else "jupyter-book", "build", str(site), "--builder", "html"]
    if warnings_are_errors:
        cmd += ["-W", "-n", "--keep-going"]
    html = book.build_dir / "html"
    # Nothing staged changed since a build that succeeded with the same command: its HTML stands.
    stamp = site / "_build" / ".icml26-built"
    stamp_text = json.dumps(cmd[2:])
    fresh = (
        staged.changed == 0
        and stamp.is_file()
        and stamp.read_text() == stamp_text
        and (site / "_build" / "html" / "index.html").is_file()
        and (html / "index.html").is_file()
    )
    if not fresh:
        stamp.unlink(missing_ok=True)
        proc = subprocess.run(cmd, cwd=book.root, capture_output=True, text=True)
        log = book.build_dir / "book-build.log"
        log.write_text(proc.stdout + "\n" + proc.stderr)
        if proc.returncode != 0:
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-25:])
            raise BuildError(f"jupyter-book build failed (full log: {log}):\n{tail}")
        stamp.write_text(stamp_text)
    sync_tree(site / "_build" / "html", html)
    for name in ("claims.json", "claims.csv"):  # the scorecard as data, beside the HTML as well as under _downloads
        shutil.copy2(site / "book" / "_generated" / name, html / name)
    return BuildResult(html / "index.html", staged.notes)


def check_toc(book: Book) -> list[str]:
    """Chapters missing from ``_toc.yml`` and toc entries with no source: both are build errors."""
    import yaml

    toc = yaml.safe_load((book.root / "_toc.yml").read_text())
    files: set[str] = set()

    def walk(node):
        if isinstance(node, dict):
            if "file" in node:
                files.add(str(node["file"]))
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(toc)
    expected = {f"book/{c.id}/{nb.stem}" for c in book.chapters() for nb in c.notebooks}
    problems = [f"{e} is not in _toc.yml" for e in sorted(expected - files)]
    for f in sorted(files):
        if f.startswith("book/") and f.count("/") == 2 and f not in expected:
            problems.append(f"_toc.yml names {f}, which is no chapter notebook")
        elif f.count("/") == 1 and not (book.root / f"{f}.md").exists():
            problems.append(f"_toc.yml names {f}, which does not exist")
    if (book.book_dir / f"{DETAIL_PAGE}.md").exists() and f"book/{DETAIL_PAGE}" not in files:
        problems.append(f"book/{DETAIL_PAGE} (Claims in detail, which the front page links to) is not in _toc.yml")
    root = toc.get("root")
    if root and not (book.root / f"{root}.md").exists():
        problems.append(f"_toc.yml root {root} does not exist")
    return problems

