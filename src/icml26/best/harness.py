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

import hashlib
import json
import math
import signal
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from .._common import RandomState, seed_from
from ._validate import count as _count
from ._validate import positive as _positive
from .metric import feasible_set
from .tasks import Task

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

    ``cpu_ms`` and ``peak_kb`` are ``nan`` unless the program ran to the end (NaN there
    means "not measured"; it never passes a limit).

    Parameters
    ----------
    status : str
        One of :data:`STATUSES`.
    cpu_ms, peak_kb, minflt_kb : float
        CPU time of ``solve`` (ms), ``tracemalloc`` peak (KB), minor faults x page size (KB);
        non-negative or NaN.
    detail : str
        Why it failed, in words.

    References
    ----------
    .. [1] A. Shen et al., "BEST: Benchmarking Efficiency in Space and Time for LLM-Generated
       Code", ICML 2026.
    .. [2] Co-author's public code, github.com/xwysyy/BEST: run.py and init/template/execute.h.
    """

    status: str
    cpu_ms: float = math.nan
    peak_kb: float = math.nan
    minflt_kb: float = math.nan
    detail: str = ""

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"status={self.status!r} is not a case outcome; use one of {STATUSES}")
        for name in ("cpu_ms", "peak_kb", "minflt_kb"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
                raise TypeError(f"{name}={v!r} must be a number (NaN when not measured)")
            if v < 0 or v == math.inf:
                raise ValueError(f"{name}={v!r} must be finite and >= 0, or NaN when not measured")
        if not isinstance(self.detail, str):
            raise TypeError(f"detail must be a str, got {type(self.detail).__name__}")

    def memory_kb(self, metric: MemoryMetric = "minflt") -> float:
        """The memory figure that is compared with the limit.

        Parameters
        ----------
        metric : {"minflt", "tracemalloc"}

        Returns
        -------
        float
            ``minflt_kb`` or ``peak_kb`` (NaN when not measured).

        References
        ----------
        .. [1] A. Shen et al., "BEST: Benchmarking Efficiency in Space and Time for LLM-Generated
           Code", ICML 2026.
        .. [2] Co-author's public code, github.com/xwysyy/BEST: init/template/execute.h (minor faults x page size).
        """
        if metric not in ("tracemalloc", "minflt"):
            raise ValueError(f"metric={metric!r}; use 'tracemalloc' or 'minflt'")
        return self.peak_kb if metric == "tracemalloc" else self.minflt_kb

    def accepted(self, time_limit_ms: float, memory_limit_kb: float, metric: MemoryMetric = "minflt") -> bool:
        """Accepted under the given limits: correct, CPU time <= limit, memory <= limit.

        As in the authors' ``run.py``, the limits are judged after the run (only the
        hard CPU limit stops a program while it runs).

        Parameters
        ----------
        time_limit_ms, memory_limit_kb : float
            The limits (finite, > 0).
        metric : {"minflt", "tracemalloc"}

        Returns
        -------
        bool

        References
        ----------
        .. [1] A. Shen et al., "BEST: Benchmarking Efficiency in Space and Time for LLM-Generated
           Code", ICML 2026.
        .. [2] Co-author's public code, github.com/xwysyy/BEST: run.py.
        """
        _positive(time_limit_ms, "time_limit_ms")
        _positive(memory_limit_kb, "memory_limit_kb")
        return bool(self.status == "OK" and self.cpu_ms <= time_limit_ms and self.memory_kb(metric) <= memory_limit_kb)


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

    References
    ----------
    .. [1] A. Shen et al., "BEST: Benchmarking Efficiency in Space and Time for LLM-Generated
       Code", ICML 2026.
    .. [2] Co-author's public code, github.com/xwysyy/BEST: run.py and init/template/execute.h.
    """
    if not isinstance(code, str):
        raise TypeError(f"code must be a str of Python source, got {type(code).__name__}")
    if not code.strip():
        raise ValueError("code must be a non-empty string of Python source")
    if not isinstance(kwargs, dict):
        raise TypeError(f"kwargs must be a dict of keyword arguments for solve, got {type(kwargs).__name__}")
    hard_cpu_s = _positive(hard_cpu_s, "hard_cpu_s")
    repeats = _count(repeats, "repeats")
    if address_space_mb is not None and _count(address_space_mb, "address_space_mb") < 64:
        raise ValueError(f"address_space_mb={address_space_mb!r} must be >= 64 (the interpreter needs it) or None")
    if wall_timeout_s is not None:
        wall_timeout_s = _positive(wall_timeout_s, "wall_timeout_s")
    try:
        kwargs_json = json.dumps(kwargs, allow_nan=False)
        json.dumps(expected, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"kwargs and expected must be JSON-serialisable (no NaN): {exc}") from None
    job = {
        "code": code,
        "kwargs": kwargs_json,
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
    res = json.loads(line[len(MARK) :])
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

    Parameters
    ----------
    base_kb : sequence of float
        Base limit ``M_j`` of each space level (finite, > 0).
    n_scales : int
        Number of input scales (>= 1).
    floor_kb : float
        Smallest limit (the authors' 64 KB; finite, > 0).

    Returns
    -------
    numpy.ndarray, shape (n_scales, n_levels)
        ``table[i, j]`` is the limit in KB of scale ``i`` at space level ``j``.

    References
    ----------
    .. [1] A. Shen et al., "BEST: Benchmarking Efficiency in Space and Time for LLM-Generated
       Code", ICML 2026.
    .. [2] Co-author's public code, github.com/xwysyy/BEST: run.py (the memory rule).
    """
    try:
        base = np.asarray(base_kb, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"base_kb={base_kb!r} must be a sequence of numbers") from None
    if base.ndim != 1 or base.size == 0 or not np.all(np.isfinite(base)) or np.any(base <= 0):
        raise ValueError(f"base_kb={base_kb!r} must be a non-empty 1-D sequence of finite positive KB values")
    n_scales = _count(n_scales, "n_scales")
    floor_kb = _positive(floor_kb, "floor_kb")
    powers = 8.0 ** np.arange(n_scales - 1, -1, -1)  # (n_scales,)
    return np.maximum(floor_kb, np.floor(base[None, :] / powers[:, None]))


@dataclass
class ProgramRecord:
    """All test cases of one program on one task: ``cases[i][c]`` is scale ``i``, case ``c``.

    Parameters
    ----------
    task, program : str
        Names.
    cases : list of lists of CaseResult
        One list per scale.

    References
    ----------
    .. [1] A. Shen et al., "BEST: Benchmarking Efficiency in Space and Time for LLM-Generated
       Code", ICML 2026.
    .. [2] Co-author's public code, github.com/xwysyy/BEST: run.py.
    """

    task: str
    program: str
    cases: list[list[CaseResult]]

    def __post_init__(self) -> None:
        if not isinstance(self.task, str) or not isinstance(self.program, str):
            raise TypeError("task and program must be str names")
        if (
            not isinstance(self.cases, (list, tuple))
            or not self.cases
            or not all(
                isinstance(row, (list, tuple)) and row and all(isinstance(c, CaseResult) for c in row) for row in self.cases
            )
        ):
            raise TypeError("cases must be a non-empty list (one per scale) of non-empty lists of CaseResult")

    def pass_matrix(self, time_limit_ms: float, memory_kb: np.ndarray, metric: MemoryMetric = "minflt") -> np.ndarray:
        """``P[i, j] = 1`` iff every case of scale ``i`` is accepted under level ``j``'s limit.

        Parameters
        ----------
        time_limit_ms : float
            CPU-time limit of a case (finite, > 0).
        memory_kb : array, shape (n_scales, n_levels)
            Memory limit of each scale at each space level (finite, > 0).
        metric : {"minflt", "tracemalloc"}

        Returns
        -------
        numpy.ndarray of bool, shape (n_scales, n_levels)

        References
        ----------
        .. [1] A. Shen et al., "BEST: Benchmarking Efficiency in Space and Time for LLM-Generated
           Code", ICML 2026.
        .. [2] Co-author's public code, github.com/xwysyy/BEST: run.py.
        """
        _positive(time_limit_ms, "time_limit_ms")
        try:
            memory_kb = np.asarray(memory_kb, dtype=float)
        except (TypeError, ValueError):
            raise TypeError("memory_kb must be an array of numbers (n_scales, n_levels)") from None
        if memory_kb.ndim != 2 or memory_kb.size == 0 or not np.all(np.isfinite(memory_kb)) or np.any(memory_kb <= 0):
            raise ValueError(
                f"memory_kb must be a 2-D table (n_scales, n_levels) of finite positive limits, got shape {memory_kb.shape}"
            )
        n_scales, n_levels = memory_kb.shape
        if len(self.cases) != n_scales:
            raise ValueError(f"record has {len(self.cases)} scales, the limit table {n_scales}")
        out = np.zeros((n_scales, n_levels), dtype=bool)
        for i, scale_cases in enumerate(self.cases):
            for j in range(n_levels):
                out[i, j] = all(c.accepted(time_limit_ms, memory_kb[i, j], metric) for c in scale_cases)
        return out

    def to_rows(self) -> list[dict[str, Any]]:
        """Flat rows (for a DataFrame): task, program, scale, case and the CaseResult fields.

        Returns
        -------
        list of dict

        References
        ----------
        .. [1] A. Shen et al., "BEST: Benchmarking Efficiency in Space and Time for LLM-Generated
           Code", ICML 2026.
        .. [2] Co-author's public code, github.com/xwysyy/BEST: run.py.
        """
        return [
            {"task": self.task, "program": self.program, "scale": i + 1, "case": c + 1, **asdict(r)}
            for i, row in enumerate(self.cases)
            for c, r in enumerate(row)
        ]


# --------------------------------------------------------------------------- harness
#: Outcomes that fail a scale at every memory level.
_LEVEL_FREE_FAILURES = ("WA", "TLE", "MLE", "RE", "CE")


def _key(code: str) -> str:
    return hashlib.sha256(code.strip().encode()).hexdigest()[:16]


@dataclass
class Harness:
    """Measures programs on tasks and caches the records by (task, program text).

    Parameters
    ----------
    random_state : int, Generator or None
        Seed of the test-case generators (:meth:`Task.cases`); an int is used as it is,
        a generator or ``None`` gives one drawn seed, kept for the harness's life.
    hard_factor : float
        Hard CPU limit = ``hard_factor * time_limit`` (the authors: 2 s for 1 s); >= 1.
    repeats : int
        Timed runs per case; the minimum CPU time is kept.
    short_circuit : bool
        Skip the cases of a scale and of every larger scale once a case fails in a way
        that no memory level can rescue (wrong, too slow, crashed). The closure sets
        those cells to 0 anyway, so scores are unchanged; ``False`` runs everything.
    metric : {"minflt", "tracemalloc"}
        Memory figure compared with the limits (``"tracemalloc"`` also turns on the
        traced run).
    address_space_mb : int
        ``RLIMIT_AS`` of each child process (>= 64).

    References
    ----------
    .. [1] A. Shen et al., "BEST: Benchmarking Efficiency in Space and Time for LLM-Generated
       Code", ICML 2026.
    .. [2] Co-author's public code, github.com/xwysyy/BEST: run.py.
    """

    random_state: RandomState = 0
    hard_factor: float = 2.0
    repeats: int = 1
    short_circuit: bool = True
    metric: MemoryMetric = "minflt"
    address_space_mb: int = 512
    records: dict[tuple[str, str], ProgramRecord] = field(default_factory=dict)
    _cases: dict[str, list] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.seed = seed_from(self.random_state)
        if _positive(self.hard_factor, "hard_factor") < 1:
            raise ValueError(f"hard_factor={self.hard_factor!r} must be >= 1")
        _count(self.repeats, "repeats")
        if _count(self.address_space_mb, "address_space_mb") < 64:
            raise ValueError(f"address_space_mb={self.address_space_mb!r} must be >= 64 (the interpreter needs it)")
        if not isinstance(self.short_circuit, (bool, np.bool_)):
            raise TypeError(f"short_circuit={self.short_circuit!r} must be a bool")
        if self.metric not in ("minflt", "tracemalloc"):
            raise ValueError(f"metric={self.metric!r}; use 'minflt' or 'tracemalloc'")

    @staticmethod
    def _task(task) -> Task:
        if not isinstance(task, Task):
            raise TypeError(f"task must be a Task (see icml26.best.tasks.get_task), got {type(task).__name__}")
        return task

    def cases(self, task: Task) -> list:
        """The test cases of ``task`` for this harness's seed (cached).

        Parameters
        ----------
        task : Task

        Returns
        -------
        list
            ``[scale][case] = (kwargs, expected)``.

        References
        ----------
        .. [1] Co-author's public code, github.com/xwysyy/BEST: init/ (generators per scale).
        """
        task = self._task(task)
        if task.name not in self._cases:
            self._cases[task.name] = task.cases(self.seed)
        return self._cases[task.name]

    def measure(self, task: Task, code: str, name: str | None = None) -> ProgramRecord:
        """Run ``code`` on every test case of ``task`` (cached by program text).

        Parameters
        ----------
        task : Task
        code : str
            Python source defining ``class Solution``.
        name : str, optional
            Label of the record (default: a hash of the code).

        Returns
        -------
        ProgramRecord

        References
        ----------
        .. [1] Co-author's public code, github.com/xwysyy/BEST: run.py.
        """
        task = self._task(task)
        if not isinstance(code, str):
            raise TypeError(f"code must be a str of Python source, got {type(code).__name__}")
        if name is not None and not isinstance(name, str):
            raise TypeError(f"name must be a str or None, got {type(name).__name__}")
        key = (task.name, _key(code))
        if key in self.records:
            return self.records[key]
        tl = task.time_limit_ms
        rows: list[list[CaseResult]] = []
        dead = False
        for scale_cases in self.cases(task):
            row = []
            for kwargs, expected in scale_cases:
                if dead:
                    row.append(CaseResult("SKIP", detail="a smaller scale already failed"))
                    continue
                res = (
                    run_case(
                        code,
                        kwargs,
                        expected,
                        hard_cpu_s=self.hard_factor * tl / 1000.0,
                        address_space_mb=self.address_space_mb,
                        repeats=self.repeats,
                        measure_memory=self.metric == "tracemalloc",
                    )
                    if code.strip()
                    else CaseResult("CE", detail="empty program")
                )
                row.append(res)
                if self.short_circuit and (res.status in _LEVEL_FREE_FAILURES or res.cpu_ms > tl):
                    dead = True
            rows.append(row)
        rec = ProgramRecord(task.name, name or key[1], rows)
        self.records[key] = rec
        return rec

    def pass_matrix(self, task: Task, code: str) -> np.ndarray:
        """``P[i, j]`` of one program.

        Parameters
        ----------
        task : Task
        code : str

        Returns
        -------
        numpy.ndarray of bool, shape (n_scales, n_levels)

        References
        ----------
        .. [1] Co-author's public code, github.com/xwysyy/BEST: export_dual_at_k.py.
        """
        rec = self.measure(task, code)
        return rec.pass_matrix(task.time_limit_ms, task.memory_table, self.metric)

    def standards(self, task: Task) -> dict[str, np.ndarray]:
        """Pass matrices of the task's standard solutions.

        Parameters
        ----------
        task : Task

        Returns
        -------
        dict of str to numpy.ndarray of bool, shape (n_scales, n_levels)

        References
        ----------
        .. [1] Co-author's public code, github.com/xwysyy/BEST: export_dual_at_k.py.
        """
        task = self._task(task)
        return {n: self.pass_matrix(task, c) for n, c in task.standards.items()}

    def feasible(self, task: Task) -> np.ndarray:
        """Cells some standard solution passes.

        Parameters
        ----------
        task : Task

        Returns
        -------
        numpy.ndarray of bool, shape (n_scales, n_levels)

        References
        ----------
        .. [1] Co-author's public code, github.com/xwysyy/BEST: export_dual_at_k.py.
        """
        return feasible_set(np.stack(list(self.standards(task).values())))
