"""Bad input to icml26.best: every public callable rejects out-of-domain input with a clear
ValueError/TypeError raised by icml26 itself, before any program is run.

Hypothesis feeds wrong shapes, NaN/inf, negative sizes, empty arrays, out-of-range rates and
wrong types. Nothing here starts a child process: the harness must reject bad arguments first.
"""

from __future__ import annotations

import math

import numpy as np
from badinput import covers, rejects
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from icml26.best import harness as hn
from icml26.best import metric as mt
from icml26.best import scoring as sc
from icml26.best import tasks as tk

FAST = settings(max_examples=20, deadline=None, derandomize=True)
bad_floats = st.sampled_from([np.nan, np.inf, -np.inf, -1.0, 0.0])
bad_counts = st.integers(-5, 0)
not_numbers = st.sampled_from(["3", None, [1, 2], {"a": 1}])
TASK = tk.get_task("pair_count")
CODE = "class Solution:\n    def solve(self, a, target):\n        return 0\n"


# ----------------------------------------------------------------------------- metric


@covers(
    "best.metric.monotone_closure",
    "best.metric.closure_loop_reference",
    "best.metric.subtask_pass_rate",
    "best.metric.feasible_set",
)
@FAST
@given(P=arrays(float, (2, 3, 3), elements=st.sampled_from([0.0, 1.0, 0.5, np.nan, 2.0])))
def test_pass_matrices_must_be_binary_and_three_dimensional(P):
    if not np.all((P == 0) | (P == 1)):
        for fn in (mt.monotone_closure, mt.closure_loop_reference, mt.subtask_pass_rate, mt.feasible_set):
            rejects(fn, P, match="binary")
    rejects(mt.monotone_closure, np.ones(3, bool), match="2 dimensions")
    rejects(mt.subtask_pass_rate, np.ones((3, 3), bool), match="shape")
    rejects(mt.subtask_pass_rate, np.ones((0, 3, 3), bool), match="shape")
    rejects(mt.feasible_set, np.ones((0, 3, 3), bool), match="shape")
    rejects(mt.monotone_closure, np.array([["a", "b"], ["c", "d"]]), match="binary")


@covers("best.metric.weight_matrix", "best.metric.dual_score", "best.metric.dual_at_k")
@FAST
@given(tau=bad_floats, kind=st.sampled_from(["Time", "", "all"]), dim=bad_counts)
def test_weights_need_positive_finite_bases_a_known_kind_and_a_shape(tau, kind, dim):
    rejects(mt.weight_matrix, "comb", tau=tau, match="tau")
    rejects(mt.weight_matrix, "comb", sigma=tau, match="sigma")
    rejects(mt.weight_matrix, kind, match="kind")
    rejects(mt.weight_matrix, ["time"], match="kind")
    rejects(mt.weight_matrix, "comb", shape=(3, dim), match="shape")
    rejects(mt.weight_matrix, "comb", shape=(3,), match="shape")
    F = np.ones((3, 3), bool)
    rejects(mt.dual_score, np.full((3, 3), 0.5), F, "comb", tau=tau, match="tau")
    rejects(mt.dual_score, np.full((3, 2), 0.5), F, "comb", match="shape")
    rejects(mt.dual_score, np.full((3, 3), np.nan), F, "comb", match="\\[0, 1\\]")
    rejects(mt.dual_score, np.full((3, 3), 1.5), F, "comb", match="\\[0, 1\\]")
    rejects(mt.dual_score, np.full((3, 3), 0.5), ~F, "comb", match="feasible")
    P = np.ones((2, 3, 3), bool)
    rejects(mt.dual_at_k, P, F, dim, match="k=")
    rejects(mt.dual_at_k, P, F, 1.5, match="k=")
    rejects(mt.dual_at_k, P, F, 1, sigma=tau, match="sigma")
    rejects(mt.dual_at_k, P, F[:2], 1, match="shape")


@covers("best.metric.plugin_pass_at_k", "best.metric.unbiased_pass_at_k")
@FAST
@given(A=arrays(float, 4, elements=st.sampled_from([np.nan, np.inf, -0.1, 1.1, 0.5])), k=bad_counts)
def test_pass_at_k_rejects_rates_outside_the_unit_interval_and_bad_k(A, k):
    if not np.all((A >= 0) & (A <= 1)):
        rejects(mt.plugin_pass_at_k, A, 2, match="\\[0, 1\\]")
    rejects(mt.plugin_pass_at_k, np.full(4, 0.5), k, match="k=")
    rejects(mt.plugin_pass_at_k, np.full(4, 0.5), 2.5, match="k=")
    rejects(mt.plugin_pass_at_k, "rates", 2)
    rejects(mt.unbiased_pass_at_k, 10, 3, k, match="k <= n")
    rejects(mt.unbiased_pass_at_k, 10, 11, 1, match="c <= n")
    rejects(mt.unbiased_pass_at_k, 10.0, 3, 1, match="integer")


# ----------------------------------------------------------------------------- harness


@covers("best.harness.run_case")
@FAST
@given(t=bad_floats, r=bad_counts, junk=not_numbers)
def test_run_case_rejects_bad_arguments_before_starting_a_process(t, r, junk):
    rejects(hn.run_case, CODE, {"a": [1], "target": 1}, 0, hard_cpu_s=t, match="hard_cpu_s")
    rejects(hn.run_case, CODE, {"a": [1], "target": 1}, 0, hard_cpu_s=1.0, repeats=r, match="repeats")
    rejects(hn.run_case, CODE, {"a": [1], "target": 1}, 0, hard_cpu_s=1.0, wall_timeout_s=t, match="wall_timeout_s")
    rejects(hn.run_case, CODE, {"a": [1], "target": 1}, 0, hard_cpu_s=1.0, address_space_mb=32, match="64")
    rejects(hn.run_case, "   ", {}, 0, hard_cpu_s=1.0, match="non-empty")
    rejects(hn.run_case, junk, {}, 0, hard_cpu_s=1.0) if not isinstance(junk, str) else None
    rejects(hn.run_case, CODE, [1, 2], 0, hard_cpu_s=1.0, match="dict")
    rejects(hn.run_case, CODE, {"a": object()}, 0, hard_cpu_s=1.0, match="JSON")
    rejects(hn.run_case, CODE, {"a": [math.nan]}, 0, hard_cpu_s=1.0, match="JSON")


@covers("best.harness.memory_limit_table")
@FAST
@given(base=arrays(float, 3, elements=st.sampled_from([np.nan, np.inf, -8.0, 0.0, 512.0])), n=bad_counts)
def test_memory_limit_table_rejects_bad_bases_and_sizes(base, n):
    if not np.all(np.isfinite(base) & (base > 0)):
        rejects(hn.memory_limit_table, base, match="base_kb")
    rejects(hn.memory_limit_table, [], match="base_kb")
    rejects(hn.memory_limit_table, [[512.0]], match="base_kb")
    rejects(hn.memory_limit_table, [512.0], n_scales=n, match="n_scales")
    rejects(hn.memory_limit_table, [512.0], floor_kb=-1.0, match="floor_kb")
    rejects(hn.memory_limit_table, ["a"])


@covers("best.harness.CaseResult", "best.harness.ProgramRecord")
@FAST
@given(v=st.sampled_from([-1.0, np.inf]), status=st.sampled_from(["ok", "PASS", ""]), t=bad_floats)
def test_case_results_and_records_reject_bad_fields(v, status, t):
    rejects(hn.CaseResult, status, match="status")
    rejects(hn.CaseResult, "OK", cpu_ms=v, match="cpu_ms")
    rejects(hn.CaseResult, "OK", minflt_kb="12", match="minflt_kb")
    ok = hn.CaseResult("OK", 1.0, 1.0, 1.0)
    rejects(ok.memory_kb, "rss", match="metric")
    rejects(ok.accepted, t, 10.0, match="time_limit_ms")
    rejects(ok.accepted, 10.0, t, match="memory_limit_kb")
    rejects(hn.ProgramRecord, "t", "p", [], match="non-empty")
    rejects(hn.ProgramRecord, "t", "p", [[ok], ["OK"]], match="CaseResult")
    rec = hn.ProgramRecord("t", "p", [[ok], [ok]])
    rejects(rec.pass_matrix, 10.0, np.ones((3, 3)), match="scales")
    rejects(rec.pass_matrix, 10.0, np.ones(2), match="2-D")
    rejects(rec.pass_matrix, 10.0, np.full((2, 3), t), match="finite positive")
    rejects(rec.pass_matrix, t, np.ones((2, 3)), match="time_limit_ms")


@covers("best.harness.Harness")
@FAST
@given(f=bad_floats, r=bad_counts, junk=not_numbers)
def test_harness_rejects_bad_settings_and_non_tasks(f, r, junk):
    if not (np.isfinite(f) and f >= 1):
        rejects(hn.Harness, hard_factor=f, match="hard_factor")
    rejects(hn.Harness, repeats=r, match="repeats")
    rejects(hn.Harness, address_space_mb=16, match="64")
    rejects(hn.Harness, metric="rss", match="metric")
    rejects(hn.Harness, random_state=-1)
    rejects(hn.Harness, random_state="seed")
    h = hn.Harness()
    rejects(h.measure, "pair_count", CODE, match="Task")
    rejects(h.measure, TASK, 42, match="str")
    rejects(h.cases, junk, match="Task")


# ----------------------------------------------------------------------------- tasks


@covers("best.tasks.Task", "best.tasks.get_task", "best.tasks.suite", "best.tasks.extract_code")
@FAST
@given(scales=st.lists(st.integers(-3, 3), min_size=0, max_size=3), t=bad_floats, junk=not_numbers)
def test_tasks_reject_bad_definitions_names_and_levels(scales, t, junk):
    import dataclasses

    if not scales or min(scales) < 1 or any(a >= b for a, b in zip(scales, scales[1:])):
        rejects(dataclasses.replace, TASK, scales=tuple(scales), match="scales")
    rejects(dataclasses.replace, TASK, time_limit_ms=t, match="time_limit_ms")
    rejects(dataclasses.replace, TASK, memory_kb=((1.0, 2.0),), match="memory_kb")
    rejects(dataclasses.replace, TASK, memory_kb=tuple((t, 1.0, 1.0) for _ in TASK.scales), match="memory_kb")
    rejects(dataclasses.replace, TASK, standards={}, match="standards")
    rejects(TASK.prompt, 3, match="0..2")
    rejects(TASK.prompt, -1, match="0..2")
    rejects(TASK.prompt, 1.0, match="level")
    rejects(TASK.cases, -1)
    rejects(tk.get_task, "nope", match="unknown task")
    rejects(tk.get_task, junk)
    rejects(tk.suite, "pair_count", match="list")
    rejects(tk.suite, ["pair_count", "nope"], match="unknown task")
    rejects(tk.extract_code, junk if not isinstance(junk, str) else None, match="str")


# ----------------------------------------------------------------------------- scoring


def answer(prompt: str) -> str:
    return f"```python\n{CODE}```"


@covers("best.scoring.full_prompt", "best.scoring.generate_programs", "best.scoring.pass_matrices")
@FAST
@given(n=bad_counts, junk=not_numbers)
def test_generation_rejects_bad_models_tasks_and_counts(n, junk):
    rejects(sc.full_prompt, TASK, 5, match="0..2")
    rejects(sc.full_prompt, "pair_count", 0, match="Task")
    rejects(sc.generate_programs, answer, [TASK], n, match="n_generations")
    rejects(sc.generate_programs, answer, [TASK], 2.0, match="n_generations")
    rejects(sc.generate_programs, junk, [TASK], 1, match="callable")
    rejects(sc.generate_programs, answer, TASK, 1, match="single Task")
    rejects(sc.generate_programs, answer, [], 1, match="at least one")
    rejects(sc.generate_programs, answer, ["pair_count"], 1, match="Task")
    h = hn.Harness()
    rejects(sc.pass_matrices, h, TASK, [[CODE]], match="per space level")
    rejects(sc.pass_matrices, h, TASK, [[CODE], [CODE, CODE], [CODE]], match="same")
    rejects(sc.pass_matrices, h, TASK, [[], [], []], match="non-zero")
    rejects(sc.pass_matrices, h, TASK, CODE, match="list")
    rejects(sc.pass_matrices, junk, TASK, [[CODE]] * 3, match="Harness")


@covers("best.scoring.score_programs", "best.scoring.evaluate_model")
@FAST
@given(tau=bad_floats, k=bad_counts)
def test_scoring_rejects_bad_weights_ks_and_missing_programs(tau, k):
    h = hn.Harness()
    progs = {TASK.name: [[CODE]] * 3}
    rejects(sc.score_programs, h, [TASK], progs, tau=tau, match="tau")
    rejects(sc.score_programs, h, [TASK], progs, ks=(k,), match="ks")
    rejects(sc.score_programs, h, [TASK], progs, ks=(), match="ks")
    rejects(sc.score_programs, h, [TASK], {}, match="no programs")
    rejects(sc.score_programs, h, [TASK], [[CODE]], match="mapping")
    rejects(sc.evaluate_model, answer, [TASK], harness=h, sigma=tau, match="sigma")
    rejects(sc.evaluate_model, answer, [TASK], harness="h", match="Harness")
    rejects(sc.evaluate_model, answer, [TASK], harness=h, n_generations=k, match="n_generations")


@covers("best.scoring.ProfileModel", "best.scoring.oracle_answer_fn")
@FAST
@given(p=bad_floats, junk=not_numbers)
def test_stand_in_models_reject_bad_profiles_and_prompts(p, junk):
    rejects(
        sc.ProfileModel, [{"brute": p, "buggy": 1.0 - p}] if p != 0 else [{"brute": p}], [TASK], match="sum to 1|non-negative"
    )
    rejects(sc.ProfileModel, [{"telepathic": 1.0}], [TASK], match="unknown candidate")
    rejects(sc.ProfileModel, [], [TASK], match="non-empty")
    rejects(sc.ProfileModel, {"brute": 1.0}, [TASK], match="list")
    rejects(sc.ProfileModel, [{"brute": "1"}], [TASK], match="numbers")
    rejects(sc.ProfileModel, [{"brute": 1.0}], [TASK], random_state="x")
    model = sc.ProfileModel([{"brute": 1.0}], [TASK], random_state=0)
    rejects(model.__call__, 42, match="str")
    h = hn.Harness()
    oracle = sc.oracle_answer_fn(h, [TASK])
    rejects(oracle, "# Some other task\n\nMemory limit: 1 KB", match="names no task")
    rejects(oracle, [junk], match="str")
    rejects(sc.oracle_answer_fn, junk, [TASK], match="Harness")
    rejects(sc.oracle_answer_fn, h, junk)


@covers("best.metric.dual_at_k_suite")
def test_the_suite_scorer_rejects_ragged_shapes_bad_ks_and_infeasible_tasks():
    P = np.ones((2, 4, 3, 3), dtype=bool)
    F = np.ones((2, 3, 3), dtype=bool)
    rejects(mt.dual_at_k_suite, P[0], F[0], match="n_tasks")
    rejects(mt.dual_at_k_suite, P, F[:1], match="feasible must have shape")
    rejects(mt.dual_at_k_suite, P, F, 10, match="ks=10")
    rejects(mt.dual_at_k_suite, P, F, (0,), match="k")
    F_bad = F.copy()
    F_bad[1] = False
    rejects(mt.dual_at_k_suite, P, F_bad, match="task 1: no feasible cell")
