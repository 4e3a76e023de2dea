"""Score any answer function on Mini-BEST, and stand-in "models".

A model is any callable ``answer_fn(prompt: str) -> str``; :func:`evaluate_model` asks it
``n_generations`` times per task and space level (the authors' ``k = 10``), extracts the
program, measures it with :mod:`~icml26.best.harness`, and scores the pass matrices with
:func:`~icml26.best.metric.dual_at_k`. The stand-ins in :data:`STAND_INS` are
transparent profiles over the hand-written candidates of each task; they show how the
metric reads a generator of a given character, not how any LLM behaves.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from .._common import RandomState, check_random_state
from ._validate import count, positive
from .harness import Harness
from .metric import KINDS, dual_at_k
from .tasks import SYSTEM_PROMPT, Task, extract_code


def _check_tasks(tasks) -> list[Task]:
    if isinstance(tasks, Task):
        raise TypeError("tasks must be a list of Task, got a single Task; wrap it in a list")
    if isinstance(tasks, (str, bytes)) or not isinstance(tasks, Sequence):
        raise TypeError(f"tasks must be a list of Task (icml26.best.tasks.suite()), got {type(tasks).__name__}")
    if not tasks:
        raise ValueError("tasks must hold at least one Task")
    bad = [type(t).__name__ for t in tasks if not isinstance(t, Task)]
    if bad:
        raise TypeError(f"tasks must hold Task objects, got {', '.join(bad)}")
    return list(tasks)


def _check_harness(harness) -> Harness:
    if not isinstance(harness, Harness):
        raise TypeError(f"harness must be an icml26.best.harness.Harness, got {type(harness).__name__}")
    return harness


def _check_ks(ks) -> tuple[int, ...]:
    if isinstance(ks, (str, bytes)) or not isinstance(ks, Sequence) or not ks:
        raise TypeError(f"ks must be a non-empty sequence of positive integers, got {ks!r}")
    for k in ks:
        if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)) or k < 1:
            raise ValueError(f"ks must hold positive integers, got {ks!r}")
    return tuple(int(k) for k in ks)


AnswerFn = Callable[[str], str]


def full_prompt(task: Task, level: int) -> str:
    """System prompt (instructions + worked example) followed by the task's prompt.

    Parameters
    ----------
    task : Task
    level : int
        Space level, ``0 .. task.n_levels - 1`` (0 = loosest).

    Returns
    -------
    str

    References
    ----------
    .. [1] A. Shen et al., "BEST: Benchmarking Efficiency in Space and Time for LLM-Generated
       Code", ICML 2026.
    .. [2] Co-author's public code, github.com/xwysyy/BEST: ask.py (the prompt).
    """
    if not isinstance(task, Task):
        raise TypeError(f"task must be a Task, got {type(task).__name__}")
    return f"{SYSTEM_PROMPT}\n---\n\n{task.prompt(level)}"


def generate_programs(answer_fn: AnswerFn, tasks: Sequence[Task], n_generations: int = 10) -> dict[str, list[list[str]]]:
    """Ask ``answer_fn`` for programs.

    Parameters
    ----------
    answer_fn : callable ``str -> str``
        Prompt text in, answer text out.
    tasks : list of Task
    n_generations : int
        Answers per task and space level (the authors' 10).

    Returns
    -------
    dict
        ``out[task][level][k]`` is the code extracted from answer ``k``.

    References
    ----------
    .. [1] A. Shen et al., "BEST: Benchmarking Efficiency in Space and Time for LLM-Generated
       Code", ICML 2026.
    .. [2] Co-author's public code, github.com/xwysyy/BEST: ask.py.
    """
    if not callable(answer_fn):
        raise TypeError("answer_fn must be a callable from prompt text to answer text")
    n_generations = count(n_generations, "n_generations")
    out = {}
    for task in _check_tasks(tasks):
        out[task.name] = [
            [extract_code(answer_fn(full_prompt(task, j))) for _ in range(int(n_generations))] for j in range(task.n_levels)
        ]
    return out


def pass_matrices(harness: Harness, task: Task, codes: list[list[str]]) -> np.ndarray:
    """Stack ``P_k``: generation ``k``'s code for level ``j`` judged at level ``j``.

    Parameters
    ----------
    harness : Harness
    task : Task
    codes : list of lists of str
        ``codes[j][k]``: generation ``k``'s program for space level ``j``; the same number
        of generations at every level.

    Returns
    -------
    numpy.ndarray of bool, shape (n_generations, n_scales, n_levels)

    References
    ----------
    .. [1] A. Shen et al., "BEST: Benchmarking Efficiency in Space and Time for LLM-Generated
       Code", ICML 2026.
    .. [2] Co-author's public code, github.com/xwysyy/BEST: export_dual_at_k.py.
    """
    harness = _check_harness(harness)
    if not isinstance(task, Task):
        raise TypeError(f"task must be a Task, got {type(task).__name__}")
    n_levels = task.n_levels
    if isinstance(codes, (str, bytes)) or not isinstance(codes, Sequence):
        raise TypeError(f"codes must be a list (one per space level) of lists of program texts, got {type(codes).__name__}")
    if len(codes) != n_levels:
        raise ValueError(f"need one list of programs per space level ({n_levels}), got {len(codes)}")
    if any(isinstance(c, (str, bytes)) or not isinstance(c, Sequence) for c in codes):
        raise TypeError("codes[j] must be a list of program texts for space level j")
    K = len(codes[0])
    if K == 0 or any(len(c) != K for c in codes):
        raise ValueError(f"every space level needs the same, non-zero number of generations, got {[len(c) for c in codes]}")
    if any(not isinstance(code, str) for c in codes for code in c):
        raise TypeError("every program must be a str")
    P = np.zeros((K, len(task.scales), n_levels), dtype=bool)
    for j in range(n_levels):
        for k, code in enumerate(codes[j]):
            P[k, :, j] = harness.pass_matrix(task, code)[:, j]
    return P


def score_programs(
    harness: Harness,
    tasks: Sequence[Task],
    programs_by_task: Mapping[str, list[list[str]]],
    *,
    ks: Sequence[int] = (1, 10),
    tau: float = 1.2,
    sigma: float = 1.2,
    closure: bool = True,
) -> dict[str, dict[str, float]]:
    """Per-task dual@k and pass@k of given programs.

    Parameters
    ----------
    harness : Harness
    tasks : list of Task
    programs_by_task : mapping
        ``programs_by_task[task.name][level][k]``: program texts, as :func:`generate_programs` returns.
    ks : sequence of int
        The ``k`` of dual@k and pass@k.
    tau, sigma : float
        Weight bases (finite, > 0).
    closure : bool
        ``False`` skips the monotone closure (for comparison only).

    Returns
    -------
    dict
        ``out[task]["dual1_time"]``, ``["pass10"]``, ...; ``out[task]["outside_F"]``
        counts generation cells passed outside the feasible set (where a program beat
        every standard solution; dual may then exceed pass).

    References
    ----------
    .. [1] A. Shen et al., "BEST: Benchmarking Efficiency in Space and Time for LLM-Generated
       Code", ICML 2026.
    .. [2] Co-author's public code, github.com/xwysyy/BEST: export_dual_at_k.py and process-data/dual_at_k.py.
    """
    harness = _check_harness(harness)
    tasks = _check_tasks(tasks)
    ks = _check_ks(ks)
    tau, sigma = positive(tau, "tau"), positive(sigma, "sigma")
    if not isinstance(programs_by_task, Mapping):
        raise TypeError(f"programs_by_task must be a mapping task name -> programs, got {type(programs_by_task).__name__}")
    missing = [t.name for t in tasks if t.name not in programs_by_task]
    if missing:
        raise ValueError(f"programs_by_task has no programs for task(s) {missing}")
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


def evaluate_model(
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
    n_generations : int
        Answers per task and space level.
    ks : sequence of int
        The ``k`` of dual@k and pass@k.
    tau, sigma : float
        Weight bases.

    Returns
    -------
    dict
        ``dual{k}_{time,space,comb}`` and ``pass{k}`` averaged over tasks (the
        authors' benchmark score), and ``outside_F``, the number of generation cells
        passed where no standard solution passes.

    References
    ----------
    .. [1] A. Shen et al., "BEST: Benchmarking Efficiency in Space and Time for LLM-Generated
       Code", ICML 2026.
    .. [2] Co-author's public code, github.com/xwysyy/BEST: ask.py, run.py, export_dual_at_k.py, process-data/dual_at_k.py.
    """
    harness = Harness() if harness is None else _check_harness(harness)
    tasks = _check_tasks(tasks)
    ks = _check_ks(ks)
    tau, sigma = positive(tau, "tau"), positive(sigma, "sigma")
    per_task = score_programs(harness, tasks, generate_programs(answer_fn, tasks, n_generations), ks=ks, tau=tau, sigma=sigma)
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
    random_state : int, Generator or None
        Seed or generator of the draws.

    References
    ----------
    .. [1] A. Shen et al., "BEST: Benchmarking Efficiency in Space and Time for LLM-Generated
       Code", ICML 2026.
    .. [2] Co-author's public code, github.com/xwysyy/BEST: ask.py (what a model sees).
    """

    def __init__(self, profiles: Sequence[Mapping[str, float]], tasks: Sequence[Task], random_state: RandomState = 0):
        if isinstance(profiles, (str, bytes, Mapping)) or not isinstance(profiles, Sequence) or not profiles:
            raise TypeError("profiles must be a non-empty list of dicts, one per space level")
        if not all(isinstance(p, Mapping) and p for p in profiles):
            raise TypeError("every profile must be a non-empty dict of candidate name -> probability")
        tasks = _check_tasks(tasks)
        self.profiles = [dict(p) for p in profiles]
        allowed = {"std_for_level"} | {c for t in tasks for c in t.candidates}
        for p in self.profiles:
            unknown = [k for k in p if k not in allowed]
            if unknown:
                raise ValueError(f"profile names unknown candidate(s) {unknown}; use {sorted(allowed)}")
            vals = []
            for v in p.values():
                if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
                    raise TypeError(f"profile probabilities must be numbers, got {v!r}")
                vals.append(float(v))
            total = sum(vals)
            if not all(math.isfinite(v) and v >= 0 for v in vals) or not np.isclose(total, 1.0):
                raise ValueError(f"profile {p} must be non-negative and sum to 1 (sums to {total})")
        self.tasks = {t.title: t for t in tasks}
        self.rng = check_random_state(random_state)
        self.drawn: list[tuple[str, int, str]] = []

    def __call__(self, prompt: str) -> str:
        """Answer ``prompt`` with the code of a candidate drawn from the level's profile."""
        if not isinstance(prompt, str):
            raise TypeError(f"prompt must be a str, got {type(prompt).__name__}")
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

    Parameters
    ----------
    harness : Harness
        Measures the standard solutions.
    tasks : list of Task

    Returns
    -------
    callable ``str -> str``
        An answer function; a prompt of another task raises ``ValueError``.

    References
    ----------
    .. [1] A. Shen et al., "BEST: Benchmarking Efficiency in Space and Time for LLM-Generated
       Code", ICML 2026.
    .. [2] Co-author's public code, github.com/xwysyy/BEST: the standard solutions of each task (std/).
    """
    harness = _check_harness(harness)
    by_title = {t.title: t for t in _check_tasks(tasks)}

    def answer(prompt: str) -> str:
        if not isinstance(prompt, str):
            raise TypeError(f"prompt must be a str, got {type(prompt).__name__}")
        titles = _TITLE.findall(prompt)
        if not titles or titles[-1] not in by_title or not _MEMORY.findall(prompt):
            raise ValueError("the prompt names no task of this oracle (no '# <title>' and 'Memory limit' lines)")
        task = by_title[titles[-1]]
        stated = float(_MEMORY.findall(prompt)[-1])
        level = int(np.flatnonzero(np.isclose(task.memory_table[-1], stated))[0])
        mats = harness.standards(task)
        best = max(mats, key=lambda n: int(mats[n][:, level].sum()))
        return f"```python\n{task.standards[best].strip()}\n```"

    return answer
