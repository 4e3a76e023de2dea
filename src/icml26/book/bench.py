"""Small timing harness shared by the chapters' benchmark sections."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np


def timeit(fn: Callable[[], Any], *, repeat: int = 5, warmup: int = 1, min_time: float = 0.0) -> dict[str, float]:
    """Time ``fn()`` ``repeat`` times after ``warmup`` untimed calls.

    Each timed sample loops ``fn`` until ``min_time`` seconds have passed (at least once),
    so very fast calls are still measured above the clock's resolution.

    Returns
    -------
    dict
        ``median``, ``q25``, ``q75``, ``min`` seconds per call and ``repeat``.
    """
    if repeat < 1:
        raise ValueError(f"repeat={repeat!r} must be >= 1")
    for _ in range(max(0, warmup)):
        fn()
    samples = []
    for _ in range(repeat):
        n, t0 = 0, time.perf_counter()
        while True:
            fn()
            n += 1
            elapsed = time.perf_counter() - t0
            if elapsed >= min_time:
                break
        samples.append(elapsed / n)
    s = np.asarray(samples)
    return {
        "median": float(np.median(s)),
        "q25": float(np.quantile(s, 0.25)),
        "q75": float(np.quantile(s, 0.75)),
        "min": float(s.min()),
        "repeat": float(repeat),
    }
