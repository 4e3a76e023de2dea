"""Small timing harness shared by the chapters' benchmark sections."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import Any

import numpy as np


def _sample(fn: Callable[[], Any], min_time: float, clock: Callable[[], float]) -> float:
    """Seconds per call of ``fn`` by ``clock``, looping until ``min_time`` has passed (at least once).

    Each sample pays for its own garbage: the cyclic garbage collector is paused while ``fn``
    loops and the young generation (what the loop allocated) is collected before the clock
    stops. Otherwise the cycles one side leaves (an object that refers to itself is freed only
    by the collector) are freed, and charged, wherever the collector next happens to run,
    often in the other side's sample.
    """
    gc.collect(0)  # what the caller left between samples, untimed
    enabled = gc.isenabled()
    gc.disable()
    try:
        n, t0 = 0, clock()
        while True:
            fn()
            n += 1
            if clock() - t0 >= min_time:
                break
        gc.collect(0)
        elapsed = clock() - t0
    finally:
        if enabled:
            gc.enable()
    return elapsed / n


def _summary(samples: list[float], repeat: int) -> dict[str, float]:
    s = np.asarray(samples)
    return {
        "median": float(np.median(s)),
        "q25": float(np.quantile(s, 0.25)),
        "q75": float(np.quantile(s, 0.75)),
        "min": float(s.min()),
        "repeat": float(repeat),
    }


def timeit(
    fn: Callable[[], Any],
    *,
    repeat: int = 5,
    warmup: int = 1,
    min_time: float = 0.0,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, float]:
    """Time ``fn()`` ``repeat`` times after ``warmup`` untimed calls.

    Each timed sample loops ``fn`` until ``min_time`` seconds (by ``clock``) have passed
    (at least once), so very fast calls are still measured above the clock's resolution.

    Returns
    -------
    dict
        ``median``, ``q25``, ``q75``, ``min`` seconds per call and ``repeat``.
    """
    if repeat < 1:
        raise ValueError(f"repeat={repeat!r} must be >= 1")
    for _ in range(max(0, warmup)):
        fn()
    return _summary([_sample(fn, min_time, clock) for _ in range(repeat)], repeat)


def timeit_pair(
    a: Callable[[], Any],
    b: Callable[[], Any],
    *,
    repeat: int = 5,
    warmup: int = 1,
    min_time: float = 0.0,
    clock: Callable[[], float] = time.process_time,
) -> tuple[dict[str, float], dict[str, float]]:
    """Time two calls doing the same work, alternating sample by sample (a, b, a, b, ...).

    A change of load during the measurement then falls on both sides alike. The default
    clock is the process's CPU time: the book's chapters run one torch/BLAS thread, so it
    is the time each side needs on an idle core, whatever else shares the machine.

    Returns
    -------
    tuple of dict
        :func:`timeit`'s summary for ``a`` and for ``b``.
    """
    if repeat < 1:
        raise ValueError(f"repeat={repeat!r} must be >= 1")
    for _ in range(max(0, warmup)):
        a()
        b()
    sa, sb = [], []
    for _ in range(repeat):
        sa.append(_sample(a, min_time, clock))
        sb.append(_sample(b, min_time, clock))
    return _summary(sa, repeat), _summary(sb, repeat)


def compare(
    chapter: str,
    name: str,
    ours: Callable[[], Any],
    reference: Callable[[], Any],
    *,
    reference_name: str,
    size: float,
    size_label: str = "n",
    scale: str,
    seed: int,
    repeat: int = 5,
    min_time: float = 0.0,
    kind: str = "reference",
) -> dict[str, Any]:
    """Time our implementation against a reference on the same work, side by side, and record it.

    Both callables are timed in the same run by :func:`timeit_pair`: alternately, sample
    by sample, in CPU seconds of this process (chapters use one thread), so that the
    ratio does not move with the machine's load. The figures go to
    ``records_dir(chapter, scale, seed)/bench/<name>.json`` (one row per ``size``), where the
    book's performance page gathers them.

    Parameters
    ----------
    chapter : str
        The chapter id (``"03-bw-dam"``).
    name : str
        What is timed (``"Gibbs step vs POT loop"``); one benchmark, several sizes.
    ours, reference : callable
        Zero-argument calls doing the same work.
    reference_name : str
        The reference library or method (``"POT"``, ``"captum"``, ``"naive loop"``).
    size : float
        The problem size of this row; ``size_label`` names it.
    scale, seed
        The chapter's parameters.
    repeat, min_time
        As in :func:`timeit`.
    kind : {"reference", "cost"}
        ``"reference"`` (default): both callables do the same work, ours against a
        reference implementation of it. ``"cost"``: two *methods* are compared by what
        they cost (a method against a baseline it replaces), not an implementation
        against a reference; the performance page shows such rows apart.

    Returns
    -------
    dict
        The row: median seconds of each and ``ratio`` = reference / ours (> 1: ours faster).
    """
    from .chapter import check_scale, check_seed

    check_scale(scale)
    check_seed(seed)
    if not name or "/" in name:
        raise ValueError(f"name={name!r} must be a non-empty string without '/'")
    t_ours, t_ref = timeit_pair(ours, reference, repeat=repeat, min_time=min_time)
    row = {
        "size": float(size),
        "ours_s": t_ours["median"],
        "ours_iqr": [t_ours["q25"], t_ours["q75"]],
        "reference_s": t_ref["median"],
        "reference_iqr": [t_ref["q25"], t_ref["q75"]],
        "ratio": t_ref["median"] / t_ours["median"] if t_ours["median"] > 0 else float("inf"),
    }
    record(chapter, name, row, reference_name=reference_name, size_label=size_label, scale=scale, seed=seed, kind=kind)
    return row


BENCH_KINDS: tuple[str, ...] = ("reference", "cost")


def record(
    chapter: str,
    name: str,
    row: dict[str, Any],
    *,
    reference_name: str,
    size_label: str = "n",
    scale: str,
    seed: int,
    kind: str = "reference",
) -> None:
    """Add one measured row (``size``, ``ours_s``, ``reference_s``, ...) to a chapter's benchmark record.

    Use it when a chapter times the two sides itself; :func:`compare` calls it.

    Parameters
    ----------
    chapter, name, reference_name, size_label, scale, seed, kind
        As in :func:`compare`.
    row : dict
        At least ``size``, ``ours_s`` and ``reference_s`` (seconds, > 0).
    """
    import json
    import os
    import re

    from .chapter import check_scale, check_seed, records_dir

    check_scale(scale)
    check_seed(seed)
    if kind not in BENCH_KINDS:
        raise ValueError(f"kind={kind!r}: a benchmark is one of {', '.join(BENCH_KINDS)}")
    for k in ("size", "ours_s", "reference_s"):
        if k not in row:
            raise ValueError(f"benchmark row needs {k!r}; got keys {sorted(row)}")
        v = float(row[k])
        if not np.isfinite(v) or (k != "size" and v <= 0):
            raise ValueError(f"benchmark row: {k}={row[k]!r} must be a finite{' positive' if k != 'size' else ''} number")
    row = {**row, "ratio": float(row["reference_s"]) / float(row["ours_s"])}
    out = records_dir(chapter, scale, seed) / "bench"  # the runner's folder only under the runner
    out.mkdir(parents=True, exist_ok=True)
    f = out / (re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_") + ".json")
    key = os.environ.get("ICML26_RUN_KEY", "")
    data = json.loads(f.read_text()) if f.exists() else {}
    if data.get("run_key") != key or data.get("seed") != seed:
        data = {}  # rows of an earlier run are not mixed with this run's
    data.update(
        {
            "chapter": chapter,
            "name": name,
            "reference": reference_name,
            "size_label": size_label,
            "scale": scale,
            "seed": seed,
            "run_key": key,
            "kind": kind,
        }
    )
    rows = [r for r in data.get("rows", []) if r["size"] != float(row["size"])] + [
        {k: (float(v) if isinstance(v, (int, float, np.floating)) else v) for k, v in row.items()}
    ]
    data["rows"] = sorted(rows, key=lambda r: r["size"])
    f.write_text(json.dumps(data, indent=2))


def load(results: Any, scale: str) -> list[dict[str, Any]]:
    """Every benchmark record under ``<results>/<scale>/<chapter>/bench/``, sorted by chapter and name."""
    import json
    from pathlib import Path

    base = Path(results) / scale
    return [json.loads(f.read_text()) for f in sorted(base.glob("*/bench/*.json"))]
