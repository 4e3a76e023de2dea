"""Measure programs on Mini-BEST, evaluate any answer function, and stand-in "models".

A model is any callable ``answer_fn(prompt: str) -> str``; :func:`evaluate` asks it
``n_generations`` times per task and space level (the authors' ``k = 10``), extracts the
program, measures it with :mod:`~icml26.best.harness`, and scores the pass matrices with
:func:`~icml26.best.metric.dual_at_k`. The stand-ins in :data:`STAND_INS` are
transparent profiles over the hand-written candidates of each task; they show how the
metric reads a generator of a given character, not how any LLM behaves.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from .harness import CaseResult, MemoryMetric, ProgramRecord, run_case
from .metric import KINDS, dual_at_k, feasible_set
from .tasks import SYSTEM_PROMPT, Task, extract_code

#: Outcomes that fail a scale at every memory level.
_LEVEL_FREE_FAILURES = ("WA", "TLE", "MLE", "RE", "CE")


def _key(code: str) -> str:
    return hashlib.sha256(code.strip().encode()).hexdigest()[:16]


@dataclass
class Harness:
    """Measures programs on tasks and caches the records by (task, program text, seed).

    Parameters
    ----------
    seed : int
        Seed of the test-case generators.
    hard_factor : float
        Hard CPU limit = ``hard_factor * time_limit`` (the authors: 2 s for 1 s).
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
        ``RLIMIT_AS`` of each child process.
    """

    seed: int = 0
    hard_factor: float = 2.0
    repeats: int = 1
    short_circuit: bool = True
    metric: MemoryMetric = "minflt"
    address_space_mb: int = 512
    records: dict[tuple[str, str], ProgramRecord] = field(default_factory=dict)
    _cases: dict[str, list] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.hard_factor < 1:
            raise ValueError(f"hard_factor={self.hard_factor!r} must be >= 1")
        if self.metric not in ("minflt", "tracemalloc"):
            raise ValueError(f"metric={self.metric!r}; use 'minflt' or 'tracemalloc'")

    def cases(self, task: Task) -> list:
        if task.name not in self._cases:
            self._cases[task.name] = task.cases(self.seed)
        return self._cases[task.name]

    def measure(self, task: Task, code: str, name: str | None = None) -> ProgramRecord:
        """Run ``code`` on every test case of ``task`` (cached by program text)."""
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
                res = run_case(
                    code,
                    kwargs,
                    expected,
                    hard_cpu_s=self.hard_factor * tl / 1000.0,
                    address_space_mb=self.address_space_mb,
                    repeats=self.repeats,
                    measure_memory=self.metric == "tracemalloc",
                )
                row.append(res)
                if self.short_circuit and (res.status in _LEVEL_FREE_FAILURES or res.cpu_ms > tl):
                    dead = True
            rows.append(row)
        rec = ProgramRecord(task.name, name or key[1], rows)
        self.records[key] = rec
        return rec

    def pass_matrix(self, task: Task, code: str) -> np.ndarray:
        """``P[i, j]`` of one program, shape (n_scales, n_levels)."""
        rec = self.measure(task, code)
        return rec.pass_matrix(task.time_limit_ms, task.memory_table, self.metric)

    def standards(self, task: Task) -> dict[str, np.ndarray]:
        """Pass matrices of the task's standard solutions, by name."""
        return {n: self.pass_matrix(task, c) for n, c in task.standards.items()}

    def feasible(self, task: Task) -> np.ndarray:
        """Cells some standard solution passes, shape (n_scales, n_levels)."""
        return feasible_set(np.stack(list(self.standards(task).values())))


AnswerFn = Callable[[str], str]


def full_prompt(task: Task, level: int) -> str:
    """System prompt (instructions + worked example) followed by the task's prompt."""
    return f"{SYSTEM_PROMPT}\n---\n\n{task.prompt(level)}"


def generate(answer_fn: AnswerFn, tasks: Sequence[Task], n_generations: int = 10) -> dict[str, list[list[str]]]:
    """Ask ``answer_fn`` for programs: ``out[task][level][k]`` is the extracted code."""
    if int(n_generations) < 1:
        raise ValueError(f"n_generations={n_generations!r} must be >= 1")
    if not callable(answer_fn):
        raise TypeError("answer_fn must be a callable from prompt text to answer text")
    out = {}
    for task in tasks:
        out[task.name] = [
            [extract_code(answer_fn(full_prompt(task, j))) for _ in range(int(n_generations))]
            for j in range(task.n_levels)
        ]
    return out


def pass_matrices(harness: Harness, task: Task, codes: list[list[str]]) -> np.ndarray:
    """Stack ``P_k``: generation ``k``'s code for level ``j`` judged at level ``j``.

    Returns
    -------
    numpy.ndarray of bool, shape (n_generations, n_scales, n_levels)
    """
    n_levels = task.n_levels
    if len(codes) != n_levels:
        raise ValueError(f"need one list of programs per space level ({n_levels}), got {len(codes)}")
    K = len(codes[0])
    P = np.zeros((K, len(task.scales), n_levels), dtype=bool)
    for j in range(n_levels):
        for k, code in enumerate(codes[j]):
            P[k, :, j] = harness.pass_matrix(task, code)[:, j]
    return P


def score(
    harness: Harness,
    tasks: Sequence[Task],
    programs_by_task: Mapping[str, list[list[str]]],
    *,
    ks: Sequence[int] = (1, 10),
    tau: float = 1.2,
    sigma: float = 1.2,
    closure: bool = True,
) -> dict[str, dict[str, float]]:
    """Per-task dual@k and pass@k: ``out[task]["dual1_time"]``, ``["pass10"]``, ....

    ``out[task]["outside_F"]`` counts generation cells passed outside the feasible set
    (where a program beat every standard solution; dual may then exceed pass).
    """
    out = {}
    for task in tasks:
        P = pass_matrices(harness, task, programs_by_task[task.name])
        F = harness.feasible(task)
        row = {"outside_F": int((P & ~F).sum())}
        for k in ks:
            d = dual_at_k(P, F, k, tau=tau, sigma=sigma, closure=closure)
            for kind in KINDS:
                row[f"dual{k}_{kind}"] = d[kind]
            row[f"pass{k}"] = d["pass"]
        out[task.name] = row
    return out


def evaluate(
    answer_fn: AnswerFn,
    tasks: Sequence[Task],
    *,
    harness: Harness | None = None,
    n_generations: int = 10,
    ks: Sequence[int] = (1, 10),
    tau: float = 1.2,
    sigma: float = 1.2,
) -> dict[str, float]:
    """Evaluate a model on Mini-BEST with one call: the benchmark means over tasks.

    Parameters
    ----------
    answer_fn : callable ``str -> str``
        Prompt text in, answer text out (an LLM client, or a stand-in).
    tasks : list of Task
    harness : Harness, optional
        Reuse one to share measurements (and its settings); default ``Harness()``.

    Returns
    -------
    dict
        ``dual{k}_{time,space,comb}`` and ``pass{k}`` averaged over tasks (the
        authors' benchmark score), and ``outside_F``, the number of generation cells
        passed where no standard solution passes.
    """
    harness = harness or Harness()
    per_task = score(harness, tasks, generate(answer_fn, tasks, n_generations), ks=ks, tau=tau, sigma=sigma)
    keys = next(iter(per_task.values())).keys()
    out = {k: float(np.mean([row[k] for row in per_task.values()])) for k in keys if k != "outside_F"}
    out["outside_F"] = float(sum(row["outside_F"] for row in per_task.values()))
    return out


# --------------------------------------------------------------------------- stand-ins
#: Profiles over the candidates of a task, per space level (0 = loose, 1, 2 = tight).
#: ``std_for_level`` is the ``min(level, n_std - 1)``-th standard solution (they are
#: listed fastest first, leanest last), i.e. an expert who reads the memory limit.
STAND_INS: dict[str, list[dict[str, float]]] = {
    "time-focused": [{"time_hungry": 0.6, "space_slow": 0.1, "brute": 0.1, "buggy": 0.2}] * 3,
    "space-aware": [
        {"time_hungry": 0.6, "space_slow": 0.1, "brute": 0.1, "buggy": 0.2},
        {"time_hungry": 0.2, "space_slow": 0.5, "brute": 0.1, "buggy": 0.2},
        {"time_hungry": 0.1, "space_slow": 0.6, "brute": 0.1, "buggy": 0.2},
    ],
    "naive": [{"time_hungry": 0.1, "space_slow": 0.2, "brute": 0.5, "buggy": 0.2}] * 3,
    "expert": [{"std_for_level": 0.8, "buggy": 0.2}] * 3,
}

_TITLE = re.compile(r"^# (.+)$", re.M)
_MEMORY = re.compile(r"Memory limit: ([0-9.]+) KB")


class ProfileModel:
    """A stand-in model: draws a candidate program by a per-level profile.

    It reads the task title and the stated memory limit from the prompt (the last ones,
    after the system prompt's example), finds the space level, draws a character from
    that level's profile and answers with that candidate's code in a fenced block.

    Parameters
    ----------
    profiles : list of dict
        One probability dict per space level over ``task.candidates`` keys and
        ``"std_for_level"``.
    tasks : list of Task
        The tasks it can answer.
    random_state : int
    """

    def __init__(self, profiles: Sequence[Mapping[str, float]], tasks: Sequence[Task], random_state: int = 0):
        self.profiles = [dict(p) for p in profiles]
        for p in self.profiles:
            total = sum(p.values())
            if not np.isclose(total, 1.0) or min(p.values()) < 0:
                raise ValueError(f"profile {p} must be non-negative and sum to 1 (sums to {total})")
        self.tasks = {t.title: t for t in tasks}
        self.rng = np.random.default_rng(random_state)
        self.drawn: list[tuple[str, int, str]] = []

    def __call__(self, prompt: str) -> str:
        titles = _TITLE.findall(prompt)
        limits = _MEMORY.findall(prompt)
        if not titles or titles[-1] not in self.tasks or not limits:
            return "I cannot solve this task."
        task = self.tasks[titles[-1]]
        stated = float(limits[-1])
        levels = np.flatnonzero(np.isclose(task.memory_table[-1], stated))
        level = int(levels[0]) if levels.size else 0
        profile = self.profiles[min(level, len(self.profiles) - 1)]
        names = list(profile)
        pick = names[int(self.rng.choice(len(names), p=np.asarray([profile[n] for n in names])))]
        self.drawn.append((task.name, level, pick))
        if pick == "std_for_level":
            stds = list(task.standards.values())
            code = stds[min(level, len(stds) - 1)]
        else:
            code = task.candidates[pick]
        return f"Here is my solution.\n\n```python\n{code.strip()}\n```\n"


def oracle_answer_fn(harness: Harness, tasks: Sequence[Task]) -> AnswerFn:
    """The standard-solution "model": for level ``j`` the std passing most cells of column ``j``.

    With a downward-closed feasible set it scores dual = 1 on every task.
    """
    by_title = {t.title: t for t in tasks}

    def answer(prompt: str) -> str:
        task = by_title[_TITLE.findall(prompt)[-1]]
        stated = float(_MEMORY.findall(prompt)[-1])
        level = int(np.flatnonzero(np.isclose(task.memory_table[-1], stated))[0])
        mats = harness.standards(task)
        best = max(mats, key=lambda n: int(mats[n][:, level].sum()))
        return f"```python\n{task.standards[best].strip()}\n```"

    return answer
