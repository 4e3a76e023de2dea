"""Forest plots of the paper claims' evidence, on one axis scaled by each claim's smallest effect.

Each row is one noisy core check of a paper claim: our effect with its interval, divided
by the magnitude of the check's smallest effect, so that 0 is no effect and +1 is the
smallest effect a superiority claim needs (a non-inferiority check sits its tolerance at
−1). Rows are coloured by the claim's verdict; the paper's own effect is marked where
the chapter gave one in the same units. The front page draws every chapter's rows, and
:func:`icml26.book.chapter.record_claims` draws a chapter's own.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

VERDICT_COLOUR: dict[str, str] = {
    "reproduced": "#1b7837",
    "partly reproduced": "#e08214",
    "not reproduced": "#b2182b",
    "undecided": "#6a6a6a",
    "untestable here": "#9970ab",
}


def forest_rows(
    claims: Iterable[Mapping[str, Any]], *, prefix: str = "", pooled: Mapping[str, Mapping] | None = None
) -> list[dict]:
    """Rows of a forest plot from claim records (the dicts ``record_claims`` writes).

    Parameters
    ----------
    claims : iterable of dict
        Claim records; only ``kind == "paper"`` rows with a noisy core check (one that
        carries ``smallest_effect``) give rows.
    prefix : str
        Put before each label (e.g. the chapter number).
    pooled : mapping, optional
        Claim id → :func:`icml26.book.sweep.aggregate` result; where given, the pooled
        effect and verdict replace the single run's.

    Returns
    -------
    list of dict
        ``label``, ``x``, ``lo``, ``hi`` (scaled), ``paper`` (scaled, or ``None``),
        ``verdict``, ``n`` and ``pooled`` (bool).
    """
    rows = []
    for c in claims:
        if c.get("kind") != "paper":
            continue
        agg = (pooled or {}).get(c.get("id"))
        if agg is not None and "overall" not in agg:  # could not be pooled: draw the single run
            agg = None
        decisions = c.get("decisions") or {}
        for name, dec in decisions.items():
            st = dict(dec.get("stats") or {})
            if agg is not None and name in agg.get("pooled", {}).get("checks", {}):
                st = {**st, **(agg["pooled"]["checks"][name].get("stats") or {})}
            se = st.get("smallest_effect")
            if se is None or st.get("ci_low") is None or float(se) == 0.0:
                continue
            scale = abs(float(se))
            pe = st.get("paper_effect")
            rows.append(
                {
                    "label": f"{prefix}{c['id']} · {name}"[:70],
                    "x": float(st["effect"]) / scale,
                    "lo": float(st["ci_low"]) / scale,
                    "hi": float(st["ci_high"]) / scale,
                    "paper": None if pe is None else float(pe) / scale,
                    "verdict": agg["overall"] if agg is not None else c.get("verdict", ""),
                    "n": int(st.get("n", 0)),
                    "pooled": agg is not None,
                }
            )
    return rows


def forest_figure(rows: Sequence[Mapping[str, Any]], *, title: str, path: Path | None = None):
    """Draw the forest plot of ``rows`` (from :func:`forest_rows`); save it to ``path`` if given.

    Returns
    -------
    matplotlib.figure.Figure or None
        ``None`` when there are no rows.
    """
    if not rows:
        return None
    import matplotlib

    if path is not None:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    n = len(rows)
    fig, ax = plt.subplots(figsize=(10.0, 1.6 + 0.28 * n))
    ys = list(range(n))[::-1]
    lim = 4.0
    clip = lambda v: max(-lim, min(lim, v))  # noqa: E731
    for y, r in zip(ys, rows):
        col = VERDICT_COLOUR.get(r["verdict"], "#333333")
        lo, hi = clip(r["lo"]), clip(r["hi"])
        ax.plot([lo, hi], [y, y], color=col, lw=2)
        ax.plot([clip(r["x"])], [y], "o", color=col, ms=5)
        if r["lo"] < -lim:
            ax.annotate("", xy=(-lim, y), xytext=(-lim + 0.25, y), arrowprops={"arrowstyle": "->", "color": col})
        if r["hi"] > lim:
            ax.annotate("", xy=(lim, y), xytext=(lim - 0.25, y), arrowprops={"arrowstyle": "->", "color": col})
        if r.get("paper") is not None:
            ax.plot([clip(r["paper"])], [y], "D", mfc="none", mec="black", ms=6)
    ax.axvline(0, color="black", lw=0.8)
    ax.axvline(1, color="black", lw=0.8, ls="--")
    ax.axvline(-1, color="black", lw=0.6, ls=":")
    ax.set_yticks(ys)
    ax.set_yticklabels([r["label"] for r in rows], fontsize=7)
    ax.set_xlim(-lim - 0.2, lim + 0.2)
    ax.set_ylim(-0.8, n - 0.2)
    ax.set_xlabel(
        "our effect ÷ |smallest effect the claim needs|\n"
        "(0: no effect; dashed +1: the smallest effect; dotted −1: a non-inferiority tolerance; arrows: beyond ±4)",
        fontsize=8,
    )
    ax.set_title(title, fontsize=10)
    handles = [Line2D([], [], color=c, lw=2, marker="o", label=v) for v, c in VERDICT_COLOUR.items()]
    handles += [Line2D([], [], ls="none", marker="D", mfc="none", mec="black", label="paper's effect")]
    ax.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), title="verdict", title_fontsize=7)
    ax.grid(alpha=0.3, axis="x")
    fig.tight_layout()
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=110)
        plt.close(fig)
    return fig
