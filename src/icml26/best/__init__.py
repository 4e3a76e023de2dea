"""BEST (Shen et al., ICML 2026): dual@k over a time x space subtask grid, a measurement
harness with resource limits, a small task suite (Mini-BEST) and stand-in "models".

Submodules: :mod:`~icml26.best.metric` (the metric), :mod:`~icml26.best.harness` (run a
program on a test case in its own process; :class:`~icml26.best.harness.Harness` measures
and caches programs), :mod:`~icml26.best.tasks` and
:mod:`~icml26.best.programs` (the suite), :mod:`~icml26.best.scoring` (score any answer
function with :func:`~icml26.best.scoring.evaluate_model`; stand-in profile models).
"""

from .harness import CaseResult, Harness, ProgramRecord, memory_limit_table, run_case
from .metric import (
    KINDS,
    closure_loop_reference,
    dual_at_k,
    dual_at_k_suite,
    dual_score,
    feasible_set,
    monotone_closure,
    plugin_pass_at_k,
    subtask_pass_rate,
    unbiased_pass_at_k,
    weight_matrix,
)
from .tasks import CHARACTERS, SYSTEM_PROMPT, TASK_NAMES, Task, extract_code, get_task, suite

__all__ = [
    "KINDS",
    "closure_loop_reference",
    "dual_at_k",
    "dual_at_k_suite",
    "dual_score",
    "feasible_set",
    "monotone_closure",
    "plugin_pass_at_k",
    "subtask_pass_rate",
    "unbiased_pass_at_k",
    "weight_matrix",
    "CaseResult",
    "Harness",
    "ProgramRecord",
    "memory_limit_table",
    "run_case",
    "CHARACTERS",
    "SYSTEM_PROMPT",
    "TASK_NAMES",
    "Task",
    "extract_code",
    "get_task",
    "suite",
]
