"""Measurement harness of BEST: run a program on a test case in its own process.

The authors compile each generated C++ program and run it once per test case; a call to
``getrusage`` right before and right after ``solve`` gives the CPU time (user + system)
and the memory (minor page faults x page size), and ``RLIMIT_CPU`` kills runaways
(``init/template/execute.h`` and ``run.py`` of the public copy of their code). This
module does the same for Python candidates: one fresh interpreter per case
(``_runner.py``), CPU time from ``time.process_time`` around ``solve``, a hard CPU
limit by ``ITIMER_PROF`` (plus ``RLIMIT_CPU`` as backstop and a wall-clock timeout for
programs that sleep), an address-space cap by ``RLIMIT_AS``, and memory as the
``tracemalloc`` peak of the call (the minor-fault figure is recorded beside it).

This is process isolation with resource limits, not a security sandbox: do not run
untrusted code outside a container.
"""

from __future__ import annotations

import json
import math
import signal
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

RUNNER = Path(__file__).with_name("_runner.py")
MARK = "@@BEST@@"
#: Case outcomes. ``OK``: ran to the end (correctness and limits are judged afterwards);
#: ``WA`` wrong answer; ``TLE`` killed at the hard CPU limit or the wall timeout;
#: ``MLE`` hit the address-space cap; ``RE`` raised; ``CE`` did not load; ``SKIP`` not
#: run because a lower-or-equal scale already failed for every memory level.
STATUSES = ("OK", "WA", "TLE", "MLE", "RE", "CE", "SKIP")
MemoryMetric = Literal["tracemalloc", "minflt"]


@dataclass(frozen=True)
class CaseResult:
    """One program on one test case: what happened and what it used.

    ``cpu_ms`` and ``peak_kb`` are ``nan`` unless the program ran to the end.
    """

    status: str
    cpu_ms: float = math.nan
    peak_kb: float = math.nan
    minflt_kb: float = math.nan
    detail: str = ""

    def memory_kb(self, metric: MemoryMetric = "minflt") -> float:
        """The memory figure that is compared with the limit."""
        if metric not in ("tracemalloc", "minflt"):
            raise ValueError(f"metric={metric!r}; use 'tracemalloc' or 'minflt'")
        return self.peak_kb if metric == "tracemalloc" else self.minflt_kb

    def accepted(self, time_limit_ms: float, memory_limit_kb: float, metric: MemoryMetric = "minflt") -> bool:
        """Accepted under the given limits: correct, CPU time <= limit, memory <= limit.

        As in the authors' ``run.py``, the limits are judged after the run (only the
        hard CPU limit stops a program while it runs).
        """
        return bool(
            self.status == "OK"
            and self.cpu_ms <= time_limit_ms
            and self.memory_kb(metric) <= memory_limit_kb
        )


def run_case(
    code: str,
    kwargs: dict[str, Any],
    expected: Any,
    *,
    hard_cpu_s: float,
    address_space_mb: int | None = 512,
    repeats: int = 1,
    measure_memory: bool = False,
    wall_timeout_s: float | None = None,
) -> CaseResult:
    """Run ``Solution().solve(**kwargs)`` from ``code`` in a fresh process and judge it.

    Parameters
    ----------
    code : str
        Python source defining ``class Solution`` with a ``solve`` method.
    kwargs : dict
        The test input (JSON-serialisable). It is built before the process starts, so
        neither its construction nor its size counts, as in the authors' harness.
    expected : object
        The correct output; a different output is a wrong answer (the authors' ``diff``).
    hard_cpu_s : float
        CPU seconds after which the program is killed and scored TLE (the authors use
        2 s for a 1 s limit). Must be positive.
    address_space_mb : int or None
        ``RLIMIT_AS`` of the child; ``None`` leaves it unlimited.
    repeats : int
        Timed runs in the same process; the minimum CPU time is kept.
    measure_memory : bool
        Run once more under ``tracemalloc`` to get the peak of Python allocations
        (``peak_kb``; slow for allocation-heavy code). The default memory figure is
        ``minflt_kb``: minor page faults of the first timed call x page size, the
        authors' measure.
    wall_timeout_s : float, optional
        Wall-clock limit for the whole child (a sleeping program uses no CPU).
        Default ``2 * hard_cpu_s * (repeats + 3) + 5``.

    Returns
    -------
    CaseResult
    """
    if not isinstance(code, str) or not code.strip():
        raise ValueError("code must be a non-empty string of Python source")
    if not (hard_cpu_s > 0):
        raise ValueError(f"hard_cpu_s={hard_cpu_s!r} must be > 0")
    if int(repeats) < 1:
        raise ValueError(f"repeats={repeats!r} must be >= 1")
    if address_space_mb is not None and address_space_mb < 64:
        raise ValueError(f"address_space_mb={address_space_mb!r} must be >= 64 (the interpreter needs it) or None")
    job = {
        "code": code,
        "kwargs": json.dumps(kwargs),
        "hard_cpu_s": float(hard_cpu_s),
        "address_space_mb": address_space_mb,
        "repeats": int(repeats),
        "measure_memory": bool(measure_memory),
    }
    timeout = wall_timeout_s if wall_timeout_s is not None else 2 * hard_cpu_s * (repeats + 3) + 5
    with tempfile.TemporaryDirectory(prefix="best-") as cwd:
        try:
            proc = subprocess.run(
                [sys.executable, "-I", "-S", str(RUNNER)],
                input=json.dumps(job),
                capture_output=True,
                text=True,
                timeout=timeout,
                cwd=cwd,
            )
        except subprocess.TimeoutExpired:
            return CaseResult("TLE", detail=f"wall-clock timeout after {timeout:.1f} s")
    line = next((ln for ln in reversed(proc.stdout.splitlines()) if ln.startswith(MARK)), None)
    if line is None:
        rc = proc.returncode
        if rc < 0 and -rc in (signal.SIGPROF, signal.SIGXCPU, signal.SIGKILL):
            return CaseResult("TLE", detail=f"killed by {signal.Signals(-rc).name} at the CPU limit")
        tail = proc.stderr.strip().splitlines()[-1:] or [""]
        if "MemoryError" in proc.stderr:
            return CaseResult("MLE", detail="MemoryError at the address-space cap")
        return CaseResult("RE", detail=f"exit code {rc}: {tail[0][:200]}")
    res = json.loads(line[len(MARK):])
    if res["status"] != "OK":
        return CaseResult(res["status"], detail=res.get("detail", ""))
    peak = res["peak_kb"] if res["peak_kb"] is not None else math.nan
    if not _same_output(res["output"], expected):
        return CaseResult("WA", res["cpu_ms"], peak, res["minflt_kb"], detail="output differs from the expected one")
    return CaseResult("OK", res["cpu_ms"], peak, res["minflt_kb"])


def _same_output(got: Any, expected: Any) -> bool:
    """Exact comparison after a JSON round trip (tuples become lists, as on stdout)."""
    return json.loads(json.dumps(expected)) == got


def memory_limit_table(base_kb: Sequence[float], *, n_scales: int = 3, floor_kb: float = 64.0) -> np.ndarray:
    """Per-scale memory limits from one base limit per space level (the authors' rule).

    For space level ``j`` with base ``M_j`` the limits of scales 1..3 are
    ``[max(floor, M_j // 64), max(floor, M_j // 8), M_j]`` (``run.py``: ``M // 8**(2-i)``).

    Returns
    -------
    numpy.ndarray, shape (n_scales, n_levels)
        ``table[i, j]`` is the limit in KB of scale ``i`` at space level ``j``.
    """
    base = np.asarray(base_kb, dtype=float)
    if base.ndim != 1 or base.size == 0 or np.any(base <= 0):
        raise ValueError(f"base_kb={base_kb!r} must be a non-empty 1-D sequence of positive KB values")
    if n_scales < 1:
        raise ValueError(f"n_scales={n_scales!r} must be >= 1")
    powers = 8.0 ** np.arange(n_scales - 1, -1, -1)  # (n_scales,)
    return np.maximum(floor_kb, np.floor(base[None, :] / powers[:, None]))


@dataclass
class ProgramRecord:
    """All test cases of one program on one task: ``cases[i][c]`` is scale ``i``, case ``c``."""

    task: str
    program: str
    cases: list[list[CaseResult]]

    def pass_matrix(
        self, time_limit_ms: float, memory_kb: np.ndarray, metric: MemoryMetric = "minflt"
    ) -> np.ndarray:
        """``P[i, j] = 1`` iff every case of scale ``i`` is accepted under level ``j``'s limit.

        Parameters
        ----------
        memory_kb : array, shape (n_scales, n_levels)
            Memory limit of each scale at each space level.

        Returns
        -------
        numpy.ndarray of bool, shape (n_scales, n_levels)
        """
        memory_kb = np.asarray(memory_kb, dtype=float)
        n_scales, n_levels = memory_kb.shape
        if len(self.cases) != n_scales:
            raise ValueError(f"record has {len(self.cases)} scales, the limit table {n_scales}")
        out = np.zeros((n_scales, n_levels), dtype=bool)
        for i, scale_cases in enumerate(self.cases):
            for j in range(n_levels):
                out[i, j] = all(c.accepted(time_limit_ms, memory_kb[i, j], metric) for c in scale_cases)
        return out

    def to_rows(self) -> list[dict[str, Any]]:
        """Flat rows (for a DataFrame): task, program, scale, case and the CaseResult fields."""
        return [
            {"task": self.task, "program": self.program, "scale": i + 1, "case": c + 1, **asdict(r)}
            for i, row in enumerate(self.cases)
            for c, r in enumerate(row)
        ]
