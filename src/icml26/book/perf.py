"""The book's performance page, generated from records like the status page.

Two kinds of figures:

* **Per-chapter benchmarks**: each chapter times its implementation against a reference
  library on the same work, side by side in one run (:func:`icml26.book.bench.compare`),
  at several problem sizes. The page shows every ratio and plots time against size.
* **Whole-book figures**: the wall-clock time of ``run`` over every chapter at each
  scale and of a sweep on a LocalCluster against the same sweep on one worker. The CLI
  writes them to ``_build/timings/<what>.json`` as it runs. A fully cached rerun is timed
  there too (``run-<scale>-cached``) but not shown: the page would change with every
  cached rerun, and the build could never skip Sphinx, which is most of what such a
  rerun would cost.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from .bench import load as load_bench
from .runner import Book

TIMINGS = "timings"


def write_timing(book: Book, what: str, **fields: Any) -> Path:
    """Record one whole-book timing (``what`` names it: ``run-ci``, ``run-full-cached``, ``sweep-ci-w2``, ...)."""
    d = book.build_dir / TIMINGS
    d.mkdir(parents=True, exist_ok=True)
    f = d / f"{what}.json"
    f.write_text(json.dumps({"what": what, "finished": time.strftime("%Y-%m-%d %H:%M:%S"), **fields}, indent=2))
    return f


def load_timings(book: Book) -> dict[str, dict]:
    """Every recorded whole-book timing, by name."""
    d = book.build_dir / TIMINGS
    return {f.stem: json.loads(f.read_text()) for f in sorted(d.glob("*.json"))} if d.is_dir() else {}


def _fmt_s(s: float) -> str:
    if s >= 60:
        return f"{s / 60:.1f} min"
    if s >= 1:
        return f"{s:.1f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.2f} ms"
    return f"{s * 1e6:.1f} µs"


def _sweep_work(r: dict) -> str:
    """What a sweep timing covered, in words: its tasks, and its chapters and seeds when recorded."""
    text = f"{r.get('tasks')} tasks"
    if r.get("chapters") and r.get("seeds") is not None:
        chapters = ", ".join(c.split("-")[0] for c in r["chapters"])
        seeds = ", ".join(str(s) for s in r["seeds"])
        text += f" (chapters {chapters}; seeds {seeds})"
    return text


def benchmark_figure(records: list[dict], path: Path) -> Path | None:
    """One panel per benchmark: seconds per call against problem size, ours and the reference."""
    if not records:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = len(records)
    cols = min(3, n)
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.3 * rows), squeeze=False)
    for ax, rec in zip(axes.flat, records):
        xs = [r["size"] for r in rec["rows"]]
        ax.plot(xs, [r["ours_s"] for r in rec["rows"]], "o-", label="icml26")
        ax.plot(xs, [r["reference_s"] for r in rec["rows"]], "s--", label=rec["reference"])
        ax.set_xscale("log" if len(xs) > 1 and max(xs) / max(min(xs), 1e-12) > 20 else "linear")
        ax.set_yscale("log")
        ax.set_title(f"{rec['chapter']}: {rec['name']}", fontsize=9)
        ax.set_xlabel(rec.get("size_label", "size"))
        ax.set_ylabel("seconds per call")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    for ax in list(axes.flat)[n:]:
        ax.set_visible(False)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _bench_table(
    records: list[dict], *, ours: str = "Ours", ref: str = "Reference", ratio: str = "Ratio (reference / ours)"
) -> list[str]:
    """Markdown rows of benchmark records: one line per size."""
    lines = [f"| Chapter | Benchmark | {ref} | Size | {ours} | {ref} | {ratio} |", "|---|---|---|---|---|---|---|"]
    for rec in records:
        for i, r in enumerate(rec["rows"]):
            lines.append(
                f"| {rec['chapter'] if i == 0 else ''} | {rec['name'] if i == 0 else ''} | {rec['reference'] if i == 0 else ''} | "
                f"{rec.get('size_label', 'n')} = {r['size']:g} | {_fmt_s(r['ours_s'])} | {_fmt_s(r['reference_s'])} | {r['ratio']:.2f}× |"
            )
    return lines


WORKERS: tuple[int, ...] = (1, 2, 4, 8, 16, 32)


def makespan(times: list[float], workers: int) -> float:
    """Wall time of running ``times`` (independent tasks) on ``workers`` single-core workers.

    Longest-processing-time-first list scheduling (each task to the worker that frees up
    first), which is what a Dask cluster fed the longest chapters first does; it is within
    4/3 of the optimum and never below the longest task.

    Parameters
    ----------
    times : list of float
        Seconds per task (>= 0).
    workers : int
        Workers (>= 1).

    Returns
    -------
    float
        Seconds until the last task ends.
    """
    import heapq

    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers={workers!r} must be an integer >= 1")
    if any(not (t >= 0) for t in times):
        raise ValueError(f"task times must be finite seconds >= 0, got {times!r}")
    load = [0.0] * min(workers, max(1, len(times)))
    for t in sorted(times, reverse=True):
        heapq.heapreplace(load, load[0] + t)
    return max(load)


def chapter_seconds(rec) -> float:
    """What one run of a chapter costs: its kernels' CPU seconds where recorded, else its wall time.

    Chapters run one torch/BLAS thread each, so on an otherwise idle core the two agree
    (kernel start-up aside); on a shared machine wall time grows with the load and CPU
    time does not.
    """
    cpu = float(getattr(rec, "cpu_s", 0.0) or 0.0)
    return cpu if cpu > 0 else float(rec.wall_s)


def seed_cost(book: Book, scale: str = "full") -> dict[str, float]:
    """Seconds one seed of each chapter costs at ``scale`` by its last good run (chapter id → :func:`chapter_seconds`)."""
    out = {}
    for ch in book.chapters():
        word, _ = book.state(scale, ch)
        rec = book.record(scale, ch)
        if word in ("ok", "stale") and rec is not None:
            out[ch.id] = chapter_seconds(rec)
    return out


BASELINES = "timings"
"""``data/timings/``: saved chapter times of earlier versions, which the status page compares with."""


def save_times(book: Book, scale: str, label: str, *, source: Book | None = None) -> Path:
    """Save the chapters' last good run times at ``scale`` as ``data/timings/<scale>-<label>.json``.

    ``source`` is the book whose runs are saved (default ``book``; e.g. a worktree of an
    earlier version). The status page shows each chapter's time beside the saved ones.

    Raises
    ------
    ValueError
        If ``label`` is not a short name of letters, digits, dots, dashes and
        underscores, or no chapter of ``source`` has a good run at ``scale``.
    """
    import re

    from .chapter import check_scale
    from .identity import describe

    check_scale(scale)
    if not isinstance(label, str) or not re.fullmatch(r"[A-Za-z0-9._-]{1,40}", label):
        raise ValueError(f"label {label!r}: use 1 to 40 letters, digits, '.', '-' or '_'")
    src = source or book
    chapters = {}
    for ch in src.chapters():
        word, _ = src.state(scale, ch)
        rec = src.record(scale, ch)
        if rec is not None and rec.status in ("ok", "cached"):
            chapters[ch.id] = {"wall_s": rec.wall_s, "cpu_s": rec.cpu_s, "finished": rec.finished, "key": rec.key, "state": word}
    if not chapters:
        raise ValueError(f"{src.root}: no chapter has a good run at {scale} scale to save")
    d = book.data_dir / BASELINES
    d.mkdir(parents=True, exist_ok=True)
    out = d / f"{scale}-{label}.json"
    from .identity import cpu_description

    out.write_text(
        json.dumps(
            {
                "label": label,
                "scale": scale,
                "built_from": describe(src.root),
                "cpu": cpu_description(),
                "saved": time.strftime("%Y-%m-%d %H:%M:%S"),
                "chapters": chapters,
            },
            indent=2,
        )
        + "\n"
    )
    return out


def load_baselines(book: Book, scale: str) -> list[dict]:
    """The saved chapter times at ``scale`` (:func:`save_times`), oldest first; unreadable files are skipped."""
    d = book.data_dir / BASELINES
    out = []
    for f in sorted(d.glob(f"{scale}-*.json")) if d.is_dir() else []:
        try:
            data = json.loads(f.read_text())
            if isinstance(data, dict) and isinstance(data.get("chapters"), dict):
                out.append(data)
        except (ValueError, UnicodeDecodeError):
            continue
    return sorted(out, key=lambda b: str(b.get("saved", "")))


def seed_cost_markdown(book: Book) -> list[str]:
    """The cost of one more seed: per-chapter times at each scale and what N workers buy per hour."""
    from .chapter import SCALES

    costs = {s: seed_cost(book, s) for s in SCALES}
    chapters = [c.id for c in book.chapters()]
    if not any(costs.values()):
        return ["*(No chapter has run yet: the cost of a seed is measured by `python -m icml26 run`.)*"]
    lines = ["| Chapter | " + " | ".join(f"`{s}`" for s in SCALES) + " |", "|---|" + "---|" * len(SCALES)]
    for cid in chapters:
        lines.append(f"| {cid} | " + " | ".join(_fmt_s(costs[s][cid]) if cid in costs[s] else "—" for s in SCALES) + " |")
    lines.append(
        "| **one seed of every chapter that ran** | "
        + " | ".join(f"**{_fmt_s(sum(costs[s].values()))}** ({len(costs[s])} chapters)" if costs[s] else "—" for s in SCALES)
        + " |"
    )
    lines += [
        "",
        "Each chapter's cost in its last good run on this machine: the CPU seconds of its kernel, which is what "
        "it takes on an idle core (chapters use one thread; runs recorded before CPU time was measured show their "
        "wall time, an upper bound when the machine was shared). A sweep runs chapters × seeds "
        "as independent tasks, one core each. Projected from these times for *N* single-core workers: the wall "
        "time of one more seed of the whole book (longest chapters first; never below the longest chapter), and "
        "the seeds per hour once many seeds keep every worker busy (*N* × 3,600 s ÷ one seed's chapter time).",
        "",
        "| Workers | "
        + " | ".join(f"one seed at `{s}`" for s in SCALES)
        + " | "
        + " | ".join(f"seeds per hour at `{s}`" for s in SCALES)
        + " |",
        "|---|" + "---|" * (2 * len(SCALES)),
    ]
    for n in WORKERS:
        one = [_fmt_s(makespan(list(costs[s].values()), n)) if costs[s] else "—" for s in SCALES]
        per_hour = [f"{n * 3600 / sum(costs[s].values()):.1f}" if costs[s] else "—" for s in SCALES]
        lines.append(f"| {n} | " + " | ".join(one + per_hour) + " |")
    return lines


def performance_markdown(book: Book, scale: str, figure: str | None = None) -> str:
    """The performance page's body (MyST markdown); ``figure`` is the benchmark figure's file name, if drawn."""
    records = load_bench(book.results_dir(), scale)
    lines = [
        "Every figure on this page comes from records the chapters and the command line wrote when they ran; "
        f"nothing is typed by hand. Benchmarks are from the `{scale}` runs rendered in this book, on the machine "
        "named on the status page. A ratio above 1 means our implementation is faster than the reference on the "
        "same work; times are medians of repeated calls in CPU seconds, the two sides measured alternately, "
        "sample by sample, in the same run (so that the machine's load falls on both alike); each sample "
        "includes collecting the garbage its own calls left, so neither side pays for the other's.",
        "",
        "## Benchmarks by chapter",
        "",
    ]
    reference = [r for r in records if r.get("kind", "reference") == "reference"]
    cost = [r for r in records if r.get("kind") == "cost"]
    if reference:
        slower = [f"{r['chapter']} ({r['name']})" for r in reference if any(row["ratio"] < 1 for row in r["rows"])]
        lines += [
            "Ours against a reference implementation of the same work (a library, or the loop a reader would "
            "write); each row names what both sides compute.",
            "",
            *_bench_table(reference),
            "",
            (
                "Ours is at least as fast as the reference at every size of every benchmark."
                if not slower
                else f"Slower than the reference at some size ({len(slower)} of {len(reference)} benchmarks): {'; '.join(slower)}."
            ),
        ]
    if cost:
        lines += [
            "",
            "## Cost comparisons",
            "",
            "Two methods compared by what they cost: the paper's method against the baseline it replaces, "
            "on the same input. A ratio below 1 is the method's price, not a slow implementation.",
            "",
            *_bench_table(cost, ours="Method", ref="Baseline", ratio="Ratio (baseline / method)"),
        ]
    if records and figure:
        lines += [
            "",
            f"```{{figure}} {figure}",
            ":width: 100%",
            "",
            "Time per call against problem size, ours and the reference, per benchmark.",
            "```",
        ]
    if not records:
        lines.append(f"*(No chapter has recorded a benchmark at `{scale}` scale yet.)*")
    lines += ["", "## The cost of one more seed", "", *seed_cost_markdown(book)]
    t = load_timings(book)
    lines += [
        "",
        "## The whole book",
        "",
        "A rerun in which every chapter is a cache hit is not shown here: its time would change this page on "
        "every rerun, and the build, which skips Sphinx when no page changed, would then always run it. "
        "The README gives its measured time.",
        "",
    ]
    rows = []
    for s in ("ci", "full"):
        r = t.get(f"run-{s}")
        if r:
            rows.append(
                f"| every chapter at `{s}`, `--jobs {r.get('jobs', '?')}` | {_fmt_s(r['wall_s'])} | {r.get('executed', '?')} executed, {r.get('cached', '?')} cached; chapters' own times add up to {_fmt_s(r.get('chapters_s', 0))} |"
            )
    sweeps = sorted(k for k in t if k.startswith("sweep-"))
    for k in sweeps:
        r = t[k]
        rows.append(
            f"| sweep `{r.get('scale')}`, {_sweep_work(r)}, {r.get('workers')} worker(s) | {_fmt_s(r['wall_s'])} | tasks' own times add up to {_fmt_s(r.get('tasks_s', 0))} |"
        )
    pairs = {}
    for k in sweeps:
        r = t[k]
        if "work" in r:  # older records without a work id cannot be paired safely
            pairs.setdefault((r.get("scale"), r["work"]), {})[r.get("workers")] = r
    if rows:
        lines += ["| What | Wall-clock time | Detail |", "|---|---|---|", *rows]
    else:
        lines.append("*(No whole-book timing recorded yet: `python -m icml26 run` and `sweep` write them.)*")
    for (sc, _), by_w in pairs.items():
        if 1 in by_w and len(by_w) > 1:
            w = max(by_w)
            one, many = by_w[1]["wall_s"], by_w[w]["wall_s"]
            lines += [
                "",
                f"The same sweep (`{sc}`, {_sweep_work(by_w[1])}) took {_fmt_s(one)} on one worker and {_fmt_s(many)} on {w}: a speed-up of {one / many:.2f}×.",
            ]
    return "\n".join(lines) + "\n"


BENCH_SETUP_TAG = "bench-setup"


def benchmark_notebook(nb):
    """The part of a chapter that ``python -m icml26 bench`` re-runs: its benchmark cells.

    Kept, in order: every cell before the ``## The method`` heading (the claim, the
    parameters and the set-up cell), every cell tagged ``bench-setup`` (what the
    benchmark needs from the experiment, e.g. a trained model), and every cell of the
    ``## Benchmark`` section. Returns ``None`` when the chapter has no benchmark section.

    Parameters
    ----------
    nb : nbformat.NotebookNode
        The chapter notebook (read with jupytext).

    Returns
    -------
    nbformat.NotebookNode or None
    """
    import copy
    import re

    section, seen_method = "", False
    kept, has_bench = [], False
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            heads = re.findall(r"^## (.+)$", cell.source, re.M)
            if heads:
                section = heads[-1].strip()
                seen_method = seen_method or any(h.strip() == "The method" for h in heads)
        if section == "Benchmark":
            has_bench = True
        tags = cell.get("metadata", {}).get("tags", [])
        if not seen_method or section == "Benchmark" or BENCH_SETUP_TAG in tags:
            kept.append(cell)
    if not has_bench:
        return None
    out = copy.deepcopy(nb)
    out.cells = copy.deepcopy(kept)
    return out


def run_benchmarks(book: Book, chapters, scale: str, seed: int, *, say=print) -> list[tuple[str, str]]:
    """Re-run just the benchmark cells of ``chapters`` (see :func:`benchmark_notebook`).

    Each runs under the chapter's cache key for ``scale`` and ``seed``, so its rows
    replace the benchmark rows of the chapter's last run. Returns ``(chapter, status)``
    pairs; a chapter without a Benchmark section is ``"no benchmark"``.
    """
    import jupytext
    import papermill
    from papermill.exceptions import PapermillExecutionError

    from .runner import kernel_manager_with_env

    out = []
    for ch in chapters:
        for nb_path in ch.notebooks:
            nb = benchmark_notebook(jupytext.read(nb_path))
            if nb is None:
                out.append((ch.id, "no benchmark"))
                continue
            dest = book.build_dir / "bench" / scale / ch.id / f"{nb_path.stem}.ipynb"
            dest.parent.mkdir(parents=True, exist_ok=True)
            env = {
                "ICML26_RESULTS_DIR": str(book.results_dir()),
                "ICML26_RUN_KEY": book.cache_key(ch, scale, seed),
                "ICML26_PROGRESS": "line",
            }
            t0 = time.perf_counter()
            try:
                papermill.execute_notebook(
                    nb,
                    str(dest),
                    parameters={"scale": scale, "seed": seed},
                    cwd=str(ch.path),
                    kernel_name="python3",
                    progress_bar=False,
                    log_output=False,
                    kernel_manager_class=kernel_manager_with_env(env),
                )
                status = f"ok ({time.perf_counter() - t0:.1f} s)"
            except PapermillExecutionError as exc:
                status = f"failed: {exc.ename}: {str(exc.evalue).splitlines()[0][:200] if exc.evalue else ''}"
            say(f"{ch.id}: benchmark {status}")
            out.append((ch.id, status))
    return out
