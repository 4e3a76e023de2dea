"""Mini-BEST: a small task suite in the format of BEST, with prompts and references.

A task has three input scales (time levels), a time limit, a 3 x 3 table of memory
limits (scale x space level, loose to tight), three test cases per scale built by a
seeded generator, a reference that computes the expected outputs, standard solutions
on the time/space Pareto front and candidates of known character (see
:mod:`icml26.best.programs`). As in the authors' ``ask.py``, a model sees the statement
with ``@data`` = the largest scale, ``@time_limit`` and ``@memory_limit`` = the limit of
the largest scale at the requested space level.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._common import RandomState, seed_from
from . import programs

MOD = 10**9 + 7


@dataclass(frozen=True)
class Task:
    """One Mini-BEST task.

    Attributes
    ----------
    name, title, category, difficulty : str
    statement : str
        Markdown with the placeholders ``@data``, ``@time_limit``, ``@memory_limit``.
    signature : str
        The ``class Solution`` skeleton the model completes.
    scales : tuple of int
        Input size of each time level, increasing.
    time_limit_ms : float
        CPU-time limit of one test case (the same at every scale, as in BEST).
    memory_kb : tuple of tuples, shape (n_scales, n_levels)
        Memory limit in KB of each scale at each space level (loose to tight).
    make_input : callable ``(n, case, rng) -> dict``
    reference : callable ``(**kwargs) -> answer``
    standards, candidates : dict of str to str
        Program sources by name / by character.
    cases_per_scale : int
        Test cases per scale.

    Parameters
    ----------
    As the attributes; the scales must increase, the limits be finite and positive, and
    ``memory_kb`` have one row per scale.

    References
    ----------
    .. [1] A. Shen et al., "BEST: Benchmarking Efficiency in Space and Time for LLM-Generated
       Code", ICML 2026.
    .. [2] Co-author's public code, github.com/xwysyy/BEST: init/ (task format: statement, scales, limits, std/ solutions).
    """

    name: str
    title: str
    category: str
    difficulty: str
    statement: str
    signature: str
    scales: tuple[int, ...]
    time_limit_ms: float
    memory_kb: tuple[tuple[float, ...], ...]
    make_input: Callable[[int, int, np.random.Generator], dict[str, Any]]
    reference: Callable[..., Any]
    standards: dict[str, str] = field(default_factory=dict)
    candidates: dict[str, str] = field(default_factory=dict)
    cases_per_scale: int = 3

    def __post_init__(self) -> None:
        for name in ("name", "title", "category", "difficulty", "statement", "signature"):
            if not isinstance(getattr(self, name), str):
                raise TypeError(f"Task.{name} must be a str, got {type(getattr(self, name)).__name__}")
        sc = self.scales
        if (
            not isinstance(sc, tuple | list)
            or not sc
            or any(isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1 for n in sc)
            or any(a >= b for a, b in zip(sc, sc[1:]))
        ):
            raise ValueError(f"Task.scales={sc!r} must be increasing positive integers")
        tl = self.time_limit_ms
        if (
            isinstance(tl, bool)
            or not isinstance(tl, (int, float, np.integer, np.floating))
            or not (math.isfinite(tl) and tl > 0)
        ):
            raise ValueError(f"Task.time_limit_ms={tl!r} must be a finite number > 0")
        try:
            mem = np.asarray(self.memory_kb, dtype=float)
        except (TypeError, ValueError):
            raise TypeError("Task.memory_kb must be a table of numbers (n_scales, n_levels)") from None
        if mem.ndim != 2 or mem.shape[0] != len(sc) or mem.shape[1] < 1 or not np.all(np.isfinite(mem)) or np.any(mem <= 0):
            raise ValueError(f"Task.memory_kb must be a ({len(sc)}, n_levels) table of finite positive KB, got shape {mem.shape}")
        if not (callable(self.make_input) and callable(self.reference)):
            raise TypeError("Task.make_input and Task.reference must be callables")
        if not isinstance(self.standards, dict) or not self.standards:
            raise ValueError("Task.standards must be a non-empty dict of standard solutions")
        c = self.cases_per_scale
        if isinstance(c, bool) or not isinstance(c, (int, np.integer)) or c < 1:
            raise ValueError(f"Task.cases_per_scale={c!r} must be a positive integer")

    @property
    def memory_table(self) -> np.ndarray:
        """Memory limits as an array, shape (n_scales, n_levels)."""
        return np.asarray(self.memory_kb, dtype=float)

    @property
    def n_levels(self) -> int:
        """Number of space levels."""
        return self.memory_table.shape[1]

    def cases(self, random_state: RandomState = 0) -> list[list[tuple[dict[str, Any], Any]]]:
        """Test cases, deterministic in ``random_state``.

        Parameters
        ----------
        random_state : int, Generator or None
            An int seeds the generators as it is (with the task name, scale and case); a
            generator or ``None`` contributes one drawn seed.

        Returns
        -------
        list
            ``[scale][case] = (kwargs, expected)``.

        References
        ----------
        .. [1] A. Shen et al., "BEST: Benchmarking Efficiency in Space and Time for LLM-Generated
           Code", ICML 2026.
        .. [2] Co-author's public code, github.com/xwysyy/BEST: init/ (one generator per scale).
        """
        seed = seed_from(random_state)
        key = int(hashlib.sha256(self.name.encode()).hexdigest()[:8], 16)
        out = []
        for i, n in enumerate(self.scales):
            row = []
            for c in range(self.cases_per_scale):
                rng = np.random.default_rng([int(seed), key, i, c])
                kwargs = self.make_input(int(n), c, rng)
                row.append((kwargs, self.reference(**kwargs)))
            out.append(row)
        return out

    def prompt(self, level: int) -> str:
        """The user prompt for space level ``level`` (0 = loosest).

        Parameters
        ----------
        level : int
            ``0 .. n_levels - 1``.

        Returns
        -------
        str

        References
        ----------
        .. [1] A. Shen et al., "BEST: Benchmarking Efficiency in Space and Time for LLM-Generated
           Code", ICML 2026.
        .. [2] Co-author's public code, github.com/xwysyy/BEST: ask.py (@data, @time_limit, @memory_limit).
        """
        if isinstance(level, (bool, np.bool_)) or not isinstance(level, (int, np.integer)):
            raise TypeError(f"level={level!r} must be an integer space level")
        if not 0 <= level < self.n_levels:
            raise ValueError(f"level={level!r}; use 0..{self.n_levels - 1}")
        text = self.statement.replace("@data", f"{self.scales[-1]:,}")
        text = text.replace("@time_limit", f"{self.time_limit_ms:g}")
        text = text.replace("@memory_limit", f"{self.memory_table[-1, level]:g}")
        return f"# {self.title}\n\n{text}\n\nComplete:\n```python\n{self.signature}\n```\n"


SYSTEM_PROMPT = """You are a Python programmer. Implement the method `solve` of `class Solution`.
The input is passed as arguments; return the answer. Your program is run on test cases of
growing size; it must be correct, stay within the CPU-time limit and within the memory
limit (extra memory allocated by `solve`, in KB). Answer with one ```python block that
defines `class Solution`; only the last such block is kept.

Example
-------
# Count the elements greater than one
Given a list of integers `nums`, return how many are greater than 1.
Constraints: 1 <= len(nums) <= 10,000. Time limit: 1000 ms. Memory limit: 64 KB.

```python
class Solution:
    def solve(self, nums):
        return sum(1 for x in nums if x > 1)
```
"""

_CODE_BLOCK = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)```", re.S)


def extract_code(answer: str) -> str:
    """The program in a model's answer: the last fenced block that defines ``Solution``.

    Falls back to the text from the last ``class Solution`` to the end, then to the
    whole answer (the authors' ``cut_code`` keeps the last block holding ``Solution``).

    Parameters
    ----------
    answer : str
        A model's answer text.

    Returns
    -------
    str

    References
    ----------
    .. [1] A. Shen et al., "BEST: Benchmarking Efficiency in Space and Time for LLM-Generated
       Code", ICML 2026.
    .. [2] Co-author's public code, github.com/xwysyy/BEST: cut_code.
    """
    if not isinstance(answer, str):
        raise TypeError(f"an answer must be a str, got {type(answer).__name__}")
    blocks = [b for b in _CODE_BLOCK.findall(answer) if "class Solution" in b]
    if blocks:
        return blocks[-1]
    pos = answer.rfind("class Solution")
    return answer[pos:] if pos >= 0 else answer


# ----------------------------------------------------------------------- generators
def _range_max_input(n: int, case: int, rng: np.random.Generator) -> dict[str, Any]:
    a = rng.integers(0, 10**9, n)
    if case == 2:  # a sorted run makes many queries end on the same maximum
        a = np.sort(a)
    lo = rng.integers(0, n, n)
    hi = rng.integers(0, n, n)
    q = np.stack([np.minimum(lo, hi), np.maximum(lo, hi)], axis=1)  # (q, 2)
    return {"a": a.tolist(), "queries": q.tolist()}


def _range_max_reference(a: list[int], queries: list[list[int]]) -> int:
    arr = np.asarray(a, dtype=np.int64)
    table = [arr]
    while 2 ** len(table) <= arr.size:
        prev, h = table[-1], 2 ** (len(table) - 1)
        table.append(np.maximum(prev[:-h], prev[h:]))
    q = np.asarray(queries, dtype=np.int64).reshape(-1, 2)
    length = q[:, 1] - q[:, 0] + 1
    k = np.floor(np.log2(length)).astype(int)
    ans = np.empty(len(q), dtype=np.int64)
    for lvl in np.unique(k):
        sel = k == lvl
        row = table[lvl]
        ans[sel] = np.maximum(row[q[sel, 0]], row[q[sel, 1] - 2**lvl + 1])
    return int(ans.sum())


def _pair_count_input(n: int, case: int, rng: np.random.Generator) -> dict[str, Any]:
    hi = max(4, n // (1, 4, 16)[case])  # fewer distinct values -> more equal pairs
    a = rng.integers(0, hi, n)
    target = int(rng.integers(hi // 2, hi + hi // 2))
    return {"a": a.tolist(), "target": target}


def _pair_count_reference(a: list[int], target: int) -> int:
    vals, counts = np.unique(np.asarray(a, dtype=np.int64), return_counts=True)
    cnt = dict(zip(vals.tolist(), counts.tolist()))
    total = 0
    for x, c in cnt.items():
        y = target - x
        if y == x:
            total += c * (c - 1) // 2
        elif y > x:
            total += c * cnt.get(y, 0)
    return total


def _palindrome_input(n: int, case: int, rng: np.random.Generator) -> dict[str, Any]:
    if case == 0:
        s = rng.choice(list("abc"), n)
    elif case == 1:
        s = np.where(rng.random(n) < 0.05, "b", "a")
    else:  # long runs of one letter: expanding around centres is quadratic
        s = np.where(rng.random(n) < 2.0 / n, "b", "a")
    return {"s": "".join(s.tolist())}


def _palindrome_reference(s: str) -> int:
    t = "^#" + "#".join(s) + "#$"
    p = [0] * len(t)
    c = r = 0
    for i in range(1, len(t) - 1):
        if i < r:
            p[i] = min(r - i, p[2 * c - i])
        while t[i + p[i] + 1] == t[i - p[i] - 1]:
            p[i] += 1
        if i + p[i] > r:
            c, r = i, i + p[i]
    return max(p)


def _grid_input(n: int, case: int, rng: np.random.Generator) -> dict[str, Any]:
    density = (0.05, 0.1, 0.15)[case]
    walls = rng.random((n, n)) < density  # (n, n)
    walls[0, :] = False  # a free first row ...
    if case == 2:
        walls[0, n // 2] = True  # ... except in the third case of each scale
    walls[-1, -1] = False
    return {"grid": ["".join("#" if w else "." for w in row) for row in walls]}


def _grid_reference(grid: list[str]) -> int:
    m = len(grid[0])
    row = [0] * m
    row[0] = 1
    for line in grid:
        left = 0
        for j, ch in enumerate(line):
            row[j] = 0 if ch == "#" else (row[j] + left) % MOD
            left = row[j]
    return row[-1]


# ----------------------------------------------------------------------------- tasks
def _task_range_max() -> Task:
    return Task(
        name="range_max",
        title="Sum of range maxima",
        category="data_structures",
        difficulty="medium",
        statement=(
            "Given a list `a` of integers and a list of queries `[l, r]` (0-based, inclusive), "
            "return the sum over all queries of `max(a[l..r])`.\n\n"
            "Constraints: len(a) = len(queries) <= @data; 0 <= a[i] < 10^9.\n"
            "Time limit: @time_limit ms. Memory limit: @memory_limit KB."
        ),
        signature="class Solution:\n    def solve(self, a: list[int], queries: list[list[int]]) -> int:\n        ...",
        scales=(1_000, 2_000, 8_000),
        time_limit_ms=200.0,
        memory_kb=((4096.0, 32.0, 16.0), (16384.0, 96.0, 16.0), (65536.0, 256.0, 16.0)),
        make_input=_range_max_input,
        reference=_range_max_reference,
        standards=dict(programs.RANGE_MAX),
        candidates=dict(programs.RANGE_MAX_CANDIDATES),
    )


def _task_pair_count() -> Task:
    return Task(
        name="pair_count",
        title="Count pairs with a given sum",
        category="hashing",
        difficulty="easy",
        statement=(
            "Given a list `a` of integers and an integer `target`, return the number of index pairs "
            "`i < j` with `a[i] + a[j] == target`. You may modify `a`.\n\n"
            "Constraints: len(a) <= @data; 0 <= a[i] <= len(a).\n"
            "Time limit: @time_limit ms. Memory limit: @memory_limit KB."
        ),
        signature="class Solution:\n    def solve(self, a: list[int], target: int) -> int:\n        ...",
        scales=(1_000, 8_000, 32_000),
        time_limit_ms=100.0,
        memory_kb=((4096.0, 32.0, 16.0), (16384.0, 96.0, 16.0), (65536.0, 256.0, 16.0)),
        make_input=_pair_count_input,
        reference=_pair_count_reference,
        standards=dict(programs.PAIR_COUNT),
        candidates=dict(programs.PAIR_COUNT_CANDIDATES),
    )


def _task_palindrome() -> Task:
    return Task(
        name="longest_palindrome",
        title="Longest palindromic substring",
        category="string",
        difficulty="medium",
        statement=(
            "Given a string `s` of lowercase letters, return the length of its longest "
            "palindromic substring.\n\n"
            "Constraints: len(s) <= @data.\n"
            "Time limit: @time_limit ms. Memory limit: @memory_limit KB."
        ),
        signature="class Solution:\n    def solve(self, s: str) -> int:\n        ...",
        scales=(300, 2_000, 6_000),
        time_limit_ms=250.0,
        memory_kb=((4096.0, 32.0, 16.0), (16384.0, 96.0, 16.0), (65536.0, 256.0, 16.0)),
        make_input=_palindrome_input,
        reference=_palindrome_reference,
        standards=dict(programs.LONGEST_PALINDROME),
        candidates=dict(programs.LONGEST_PALINDROME_CANDIDATES),
    )


def _task_grid_paths() -> Task:
    return Task(
        name="grid_paths",
        title="Monotone paths through a grid with walls",
        category="dynamic_programming",
        difficulty="easy",
        statement=(
            "Given an n x n grid as a list of strings (`.` free, `#` wall), count the paths from the "
            "top-left to the bottom-right cell that move only right or down through free cells, "
            "modulo 1,000,000,007.\n\n"
            "Constraints: n <= @data.\n"
            "Time limit: @time_limit ms. Memory limit: @memory_limit KB."
        ),
        signature="class Solution:\n    def solve(self, grid: list[str]) -> int:\n        ...",
        scales=(60, 200, 600),
        time_limit_ms=250.0,
        memory_kb=((4096.0, 32.0, 16.0), (16384.0, 96.0, 16.0), (65536.0, 256.0, 16.0)),
        make_input=_grid_input,
        reference=_grid_reference,
        standards=dict(programs.GRID_PATHS),
        candidates=dict(programs.GRID_PATHS_CANDIDATES),
    )


_FACTORIES = {
    "range_max": _task_range_max,
    "pair_count": _task_pair_count,
    "longest_palindrome": _task_palindrome,
    "grid_paths": _task_grid_paths,
}
TASK_NAMES: tuple[str, ...] = tuple(_FACTORIES)
CHARACTERS: tuple[str, ...] = ("time_hungry", "space_slow", "brute", "buggy")


def get_task(name: str) -> Task:
    """The Mini-BEST task called ``name`` (one of :data:`TASK_NAMES`).

    Parameters
    ----------
    name : str

    Returns
    -------
    Task

    References
    ----------
    .. [1] A. Shen et al., "BEST: Benchmarking Efficiency in Space and Time for LLM-Generated
       Code", ICML 2026.
    .. [2] Co-author's public code, github.com/xwysyy/BEST: init/ (the task format).
    """
    if not isinstance(name, str):
        raise TypeError(f"a task name must be a str, got {type(name).__name__}; use one of {TASK_NAMES}")
    if name not in _FACTORIES:
        raise ValueError(f"unknown task {name!r}; use one of {TASK_NAMES}")
    return _FACTORIES[name]()


def suite(names: tuple[str, ...] | list[str] | None = None) -> list[Task]:
    """The tasks called ``names`` (default: all of :data:`TASK_NAMES`).

    Parameters
    ----------
    names : sequence of str, optional

    Returns
    -------
    list of Task

    References
    ----------
    .. [1] A. Shen et al., "BEST: Benchmarking Efficiency in Space and Time for LLM-Generated
       Code", ICML 2026.
    .. [2] Co-author's public code, github.com/xwysyy/BEST: init/ (the task format).
    """
    if isinstance(names, (str, bytes)):
        raise TypeError(f"names must be a list of task names, got the string {names!r}; wrap it in a list")
    if names is not None and not isinstance(names, tuple | list):
        raise TypeError(f"names must be a list of task names or None, got {type(names).__name__}")
    return [get_task(n) for n in (TASK_NAMES if names is None else names)]
