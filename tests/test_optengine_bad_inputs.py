"""Bad input to every public callable of icml26.optengine gets a clear ValueError/TypeError.

Out-of-domain values (wrong types, NaN/inf, negative or out-of-range sizes, empty or
mis-shaped arrays, out-of-range probabilities, unknown names) are fed with hypothesis;
each call must be rejected by a line of icml26 with a message naming what is allowed.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

pytest.importorskip("highspy")

from badinput import covers, exempt, rejects  # noqa: E402

from icml26 import optengine as oe  # noqa: E402
from icml26.optengine import checker, instances, lp, paradigms, problems, text  # noqa: E402
from icml26.optengine.problems import base  # noqa: E402

FAST = settings(max_examples=20, deadline=None, derandomize=True)

not_finite = st.sampled_from([float("nan"), float("inf"), -float("inf")])
non_positive = st.one_of(st.floats(max_value=0.0, allow_nan=False), not_finite)
bad_prob = st.one_of(
    st.floats(max_value=-1e-9, allow_nan=False, allow_infinity=False),
    st.floats(min_value=1.0 + 1e-9, allow_nan=False),
    st.just(float("nan")),
)
wrong_type = st.sampled_from([None, "abc", [1, 2], {"a": 1}, object(), b"x", (1,)])
bad_random_state = st.one_of(
    st.integers(max_value=-1), st.integers(min_value=2**32), st.floats(allow_nan=True), st.sampled_from(["0", True, [1]])
)
CLASS_NAMES = list(oe.CLASSES)


@pytest.fixture(scope="module")
def knap():
    return oe.generate("Knapsack", 6, 1, random_state=0)[0]


def _model(n=2):
    return lp.LinearModel(
        np.zeros(n), sp.csr_matrix((0, n)), np.zeros(0), np.zeros(0), np.zeros(n), np.ones(n), np.zeros(n, bool)
    )


# ------------------------------------------------------------------------------------ lp
@covers("optengine.lp.LinearModel")
@FAST
@given(n=st.integers(1, 4), k=st.integers(-2, 2).filter(lambda k: k != 0), sense=st.sampled_from(["minimise", "MAX", "", "mean"]))
def test_linear_model_rejects_bad_shapes_sense_and_nan(n, k, sense):
    z = np.zeros(n)
    rejects(
        lp.LinearModel,
        z,
        sp.csr_matrix((0, max(n + k, 0))),
        np.zeros(0),
        np.zeros(0),
        z,
        z,
        np.zeros(n, bool),
        match="dimensions",
    )
    rejects(lp.LinearModel, z, sp.csr_matrix((0, n)), np.zeros(0), np.zeros(0), z, np.zeros(n + abs(k)), np.zeros(n, bool))
    rejects(
        lp.LinearModel, z, sp.csr_matrix((0, n)), np.zeros(0), np.zeros(0), z, z, np.zeros(n, bool), sense=sense, match="sense"
    )
    rejects(
        lp.LinearModel, np.full(n, np.nan), sp.csr_matrix((0, n)), np.zeros(0), np.zeros(0), z, z, np.zeros(n, bool), match="NaN"
    )
    rejects(
        lp.LinearModel, list(z), sp.csr_matrix((0, n)), np.zeros(0), np.zeros(0), z, z, np.zeros(n, bool), match="numpy array"
    )
    rejects(lp.LinearModel, z, np.zeros((0, n)), np.zeros(0), np.zeros(0), z, z, np.zeros(n, bool), match="sparse")
    rejects(_model(n).objective, np.zeros(n + abs(k)), match="shape")
    rejects(_model(n).is_feasible, np.zeros(n + abs(k)), match="shape")


@covers("optengine.lp.ModelBuilder")
@FAST
@given(sense=st.text(max_size=5).filter(lambda s: s not in ("min", "max")), neg=st.integers(max_value=-1))
def test_model_builder_rejects_bad_sense_and_negative_shapes(sense, neg):
    rejects(lp.ModelBuilder, sense, match="sense")
    rejects(lp.ModelBuilder().var, (2, neg), match="negative")


@covers("optengine.lp.solve", "optengine.lp.to_highs", "optengine.lp.to_lp_text", "optengine.lp.model_key")
@FAST
@given(bad=wrong_type, t=non_positive, gap=non_positive)
def test_solvers_reject_non_models_and_bad_limits(bad, t, gap):
    for fn in (lp.solve, lp.to_highs, lp.to_lp_text, lp.model_key):
        rejects(fn, bad, match="LinearModel")
    rejects(lp.solve, _model(), time_limit=t, match="time_limit")
    rejects(lp.solve, _model(), mip_rel_gap=gap, match="mip_rel_gap")
    rejects(lp.to_highs, _model(), mip_rel_gap=gap, match="mip_rel_gap")


@covers("optengine.lp.solve_lp_text")
@FAST
@given(blank=st.text(alphabet=" \n\t", max_size=5), bad=st.sampled_from([None, 3, b"Minimize", ["x"]]), t=non_positive)
def test_solve_lp_text_rejects_empty_garbage_and_bad_limits(blank, bad, t):
    rejects(lp.solve_lp_text, blank, match="non-empty")
    rejects(lp.solve_lp_text, bad, match="LP-format str")
    rejects(lp.solve_lp_text, "Minimize\n obj: x\nSubject To\n c: x >= 1\nEnd\n", time_limit=t, match="time_limit")
    rejects(lp.solve_lp_text, "this is not an LP file", match="could not read")


@covers("optengine.lp.SolveResult")
@FAST
@given(status=st.text(max_size=8).filter(lambda s: s not in lp.SolveResult.STATUSES), obj=not_finite)
def test_solve_result_rejects_unknown_status_and_non_finite_optimum(status, obj):
    rejects(lp.SolveResult, status, None, None, 0.0, match="status")
    rejects(lp.SolveResult, "optimal", obj, None, 0.0, match="objective")
    rejects(lp.SolveResult, "infeasible", 1.0, None, 0.0, match="None unless")


# ---------------------------------------------------------------------------------- text
@covers("optengine.text.fmt_number", "optengine.text.render", "optengine.text.template_regex")
@FAST
@given(x=not_finite, bad=st.sampled_from([None, 3, 1.5, b"x", object()]))
def test_text_helpers_reject_non_numbers_missing_slots_and_non_templates(x, bad):
    rejects(text.fmt_number, x, match="finite")
    rejects(text.fmt_number, "12", match="number")
    rejects(text.render, "cap {cap} and {n}", {"cap": 1}, match=r"\['n'\]")
    rejects(text.render, 5, {}, match="template")
    rejects(text.render, "{a}", [1], match="mapping")
    rejects(text.render, "{a}", {"a": x}, match="finite")
    rejects(text.template_regex, bad, match="template")


@covers("optengine.text.Block")
@FAST
@given(kind=st.text(max_size=6).filter(lambda s: s not in ("text", "rows")))
def test_block_rejects_unknown_kind_empty_phrasings_and_missing_rows_key(kind):
    rejects(text.Block, kind, "data", ("x",), match="kind")
    rejects(text.Block, "text", "data", (), match="phrasings")
    rejects(text.Block, "rows", "data", ("x",), match="rows_key")
    rejects(text.Block, "text", "data", ("x",), "items", match="rows_key")


@covers("optengine.text.rows_by")
@FAST
@given(n=st.integers(1, 5), extra=st.integers(1, 3), off=st.integers(1, 4))
def test_rows_by_rejects_wrong_counts_out_of_range_and_duplicates(n, extra, off):
    rows = [{"i": i + 1, "w": 1.0} for i in range(n)]
    rejects(text.rows_by, rows + rows[:extra], ["i"], (n,), "item", match=f"expected {n} item lines")
    shifted = [{"i": i + 1 + off, "w": 1.0} for i in range(n)]
    rejects(text.rows_by, shifted, ["i"], (n,), "item", match="out of range")
    if n > 1:
        rejects(text.rows_by, [rows[0]] * n, ["i"], (n,), "item", match="duplicate")


exempt("optengine.text.InstanceError", "an exception type (a ValueError): it takes only a message")


# ------------------------------------------------------------------------------ problems
@covers(
    "optengine.problems.base.ProblemClass",
    "optengine.problems.knapsack.Knapsack",
    "optengine.problems.tsp.TSP",
    "optengine.problems.binpacking.BinPacking",
    "optengine.problems.jobshop.JobShop",
    "optengine.problems.inventory.Inventory",
    "optengine.problems.portfolio.Portfolio",
    "optengine.problems.networkflow.NetworkFlow",
    "optengine.problems.networkflow.Transportation",
    "optengine.problems.production.Production",
    "optengine.problems.pollution.Pollution",
)
@FAST
@given(
    name=st.sampled_from(CLASS_NAMES),
    delta=st.integers(1, 50),
    rs=bad_random_state,
    style=st.one_of(st.integers().filter(lambda s: s not in (0, 1, 2)), st.sampled_from([True, 0.5, "0", None])),
)
def test_every_class_rejects_bad_sizes_random_states_styles_and_text(name, delta, rs, style):
    cls = oe.CLASSES[name]
    lo, hi = cls.size_range
    for size in (lo - delta, hi + delta, float(lo), True, str(lo)):
        rejects(cls.sample, size, 0, match="size")
    rejects(cls.sample, lo, rs, match="random_state")
    p = cls.sample(lo, 0)
    rejects(cls.render, p, style, match="style")
    rejects(cls.render, p, 0, {"no_such_family": 2}, match="no constraint family")
    rejects(cls.render, p, 0, [("x", 1)], match="mapping")
    rejects(cls.parse, 123, match="str")
    rejects(cls.parse, cls.render(p), (), match="known_styles")
    rejects(cls.parse, cls.render(p), (style,), match="known_styles")
    rejects(cls.parse, "nothing to read here", match="could not read")
    rejects(cls.finish_objective, float("nan"), match="finite")
    with pytest.raises(TypeError, match="abstract"):
        base.ProblemClass()


@covers("optengine.problems.base.PlanCheck")
@FAST
@given(x=not_finite, bad=wrong_type)
def test_plan_check_rejects_non_finite_terms_and_wrong_types(x, bad):
    rejects(base.PlanCheck, True, 1.0, np.array([1.0, x]), match="finite")
    rejects(base.PlanCheck, "yes", 1.0, np.zeros(1), match="feasible")
    rejects(base.PlanCheck, True, bad if bad is not None else "1", np.zeros(1), match="objective")
    rejects(base.PlanCheck, True, 1.0, np.zeros(1), ["capacity"], match="violated")


@covers("optengine.problems.get_class")
@FAST
@given(name=st.text(max_size=10).filter(lambda s: s not in oe.CLASSES), bad=st.sampled_from([None, 3, 1.5, ["TSP"]]))
def test_get_class_names_the_valid_classes(name, bad):
    rejects(problems.get_class, name, match="Knapsack")
    rejects(problems.get_class, bad, match="class name")


@covers("optengine.problems.binpacking.first_fit_decreasing")
@FAST
@given(w=arrays(float, st.integers(1, 6), elements=st.floats(0, 100)), x=not_finite, cap=non_positive)
def test_first_fit_decreasing_rejects_bad_sizes_and_capacities(w, x, cap):
    rejects(problems.first_fit_decreasing, np.r_[w, x], 100.0, match="finite")
    rejects(problems.first_fit_decreasing, np.r_[w, -1.0], 100.0, match=r"\[0, cap")
    rejects(problems.first_fit_decreasing, np.r_[w, 101.0], 100.0, match=r"\[0, cap")
    rejects(problems.first_fit_decreasing, w, cap, match="cap")
    rejects(problems.first_fit_decreasing, w[None, :], 100.0, match="1-D")


@covers("optengine.problems.networkflow.least_cost_method")
@FAST
@given(n=st.integers(1, 4), m=st.integers(1, 4), x=not_finite)
def test_least_cost_method_rejects_mismatched_shapes_nan_and_negatives(n, m, x):
    c, s, d = np.ones((n, m)), np.ones(n), np.ones(m)
    rejects(problems.least_cost_method, c, np.ones(n + 1), d, match="shape")
    rejects(problems.least_cost_method, c, s, d, np.ones((n, m + 1)), match="shape")
    rejects(problems.least_cost_method, c.ravel(), s, d, match="2-D")
    rejects(problems.least_cost_method, np.full((n, m), x), s, d, match="finite")
    rejects(problems.least_cost_method, c, -s, d, match="non-negative")


# ----------------------------------------------------------------------------- instances
@covers("optengine.instances.generate")
@FAST
@given(
    name=st.sampled_from(CLASS_NAMES),
    n=st.one_of(st.integers(max_value=0), st.sampled_from([1.0, True, "2"])),
    rs=bad_random_state,
    tries=st.integers(max_value=0),
)
def test_generate_rejects_bad_counts_random_states_and_tries(name, n, rs, tries):
    lo = oe.CLASSES[name].size_range[0]
    rejects(instances.generate, name, lo, n, match="n=")
    rejects(instances.generate, name, lo, 1, random_state=rs, match="random_state")
    rejects(instances.generate, name, lo, 1, max_tries=tries, match="max_tries")
    rejects(instances.generate, name + "x", lo, 1, match="not valid")
    rejects(instances.generate, name, lo - 1, 1, match="size")


@covers("optengine.instances.generate_grid")
@FAST
@given(bad_seeds=st.sampled_from([[], [0, 0], [-1], [None], "01", 0]), n=st.integers(max_value=0))
def test_generate_grid_rejects_bad_specs_counts_and_seeds(bad_seeds, n):
    rejects(instances.generate_grid, {"Knapsack": [5]}, 1, bad_seeds, match="seed|random_state")
    rejects(instances.generate_grid, {"Knapsack": [5]}, n, [0], match="n=")
    rejects(instances.generate_grid, {}, 1, [0], match="spec")
    rejects(instances.generate_grid, {"Knapsack": []}, 1, [0], match="sizes")
    rejects(instances.generate_grid, {"Knapsack": [99]}, 1, [0], match="size=99")
    rejects(instances.generate_grid, {"Sudoku": [5]}, 1, [0], match="Sudoku")


@covers("optengine.instances.make_instance", "optengine.instances.Instance")
@FAST
@given(idx=st.integers(max_value=-1), bad=wrong_type.filter(lambda v: not isinstance(v, dict)), x=not_finite)
def test_make_instance_and_instance_reject_bad_params(knap, idx, bad, x):
    rejects(instances.make_instance, "Knapsack", bad, match="mapping")
    rejects(instances.make_instance, "Knapsack", {"n": 3}, match="do not describe a Knapsack")
    rejects(instances.make_instance, "Knapsack", knap.params, index=idx, match="index")
    rejects(instances.Instance, "Knapsack", 6, knap.params, x, match="answer")
    rejects(instances.Instance, "Knapsack", 2, knap.params, 1.0, match="size")
    rejects(instances.Instance, "Sudoku", 6, knap.params, 1.0, match="Sudoku")
    rejects(instances.Instance, "Knapsack", 6, knap.params, 1.0, index=idx, match="index")


@covers("optengine.instances.instance_from_text")
@FAST
@given(junk=st.text(max_size=40), bad=st.sampled_from([None, 3, ["text"]]))
def test_instance_from_text_rejects_unreadable_text(knap, junk, bad):
    rejects(instances.instance_from_text, "Knapsack", junk, match="Knapsack")
    rejects(instances.instance_from_text, "Knapsack", bad, match="str")
    rejects(instances.instance_from_text, "Knapsak", knap.question(), match="not valid")


# ------------------------------------------------------------------------------- checker
@covers("optengine.checker.check_answer", "optengine.checker.parse_answer")
@FAST
@given(
    tol=bad_prob,
    x=not_finite,
    word=st.text(max_size=8).filter(lambda s: s.strip().lower() not in checker.SPECIAL),
    bad=st.sampled_from([[1.0], {"a": 1}, object(), b"1"]),
)
def test_checker_rejects_bad_tolerances_truths_and_types(tol, x, word, bad):
    rejects(checker.check_answer, 1.0, 1.0, rel_tol=tol, match="rel_tol")
    rejects(checker.check_answer, 1.0, x, match="finite")
    rejects(checker.check_answer, 1.0, word, match="truth")
    rejects(checker.check_answer, bad, 1.0, match="pred")
    rejects(checker.check_answer, 1.0, bad, match="truth")
    rejects(checker.parse_answer, bad, match="str")


# ----------------------------------------------------------------------------- paradigms
@covers("optengine.paradigms.make_prompt", "optengine.paradigms.recognise")
@FAST
@given(paradigm=st.text(max_size=5).filter(lambda s: s not in paradigms.PARADIGMS), bad=st.sampled_from([None, 3, ["q"]]))
def test_prompts_reject_unknown_paradigms_and_non_text(paradigm, bad):
    rejects(paradigms.make_prompt, "q", paradigm, match="paradigm")
    rejects(paradigms.make_prompt, bad, "ptr", match="question")
    rejects(paradigms.make_prompt, "q", "ptr", "Sudoku", match="Sudoku")
    rejects(paradigms.recognise, bad, match="text")
    rejects(paradigms.recognise, "no problem here", match="none of the problem classes")


@covers("optengine.paradigms.slipped_sum", "optengine.paradigms.ptr_standin")
@FAST
@given(terms=arrays(float, st.integers(1, 6), elements=st.floats(-1e3, 1e3)), x=not_finite, eps=bad_prob, rs=bad_random_state)
def test_slips_reject_non_finite_terms_bad_probabilities_and_random_states(terms, x, eps, rs):
    rejects(paradigms.slipped_sum, np.r_[terms, x], 0.1, 0, match="finite")
    rejects(paradigms.slipped_sum, terms, eps, 0, match="eps")
    rejects(paradigms.slipped_sum, terms, 0.1, rs, match="random_state")
    rejects(paradigms.ptr_standin, eps, match="eps")
    rejects(paradigms.ptr_standin, 0.1, rs, match="random_state")


exempt("optengine.paradigms.comp_standin", "takes no argument: it is ptr_standin at eps = 0")


@covers("optengine.paradigms.sir_standin")
@FAST
@given(known=st.sampled_from([(), (3,), (0, -1), "01", (True,), 0, None]))
def test_sir_standin_rejects_unknown_styles(known):
    rejects(paradigms.sir_standin, known, match="known_styles")


@covers("optengine.paradigms.classify", "optengine.paradigms.run_paradigm")
@FAST
@given(
    paradigm=st.text(max_size=5).filter(lambda s: s not in paradigms.PARADIGMS),
    style=st.one_of(st.integers().filter(lambda s: s not in (0, 1, 2)), st.sampled_from([True, 1.0, None])),
    bad=st.sampled_from([None, 3, "text", [1]]),
)
def test_scoring_rejects_bad_paradigms_styles_instances_and_caches(knap, paradigm, style, bad):
    f = paradigms.comp_standin()
    rejects(paradigms.classify, knap, paradigm, "<answer>1</answer>", match="paradigm")
    rejects(paradigms.classify, bad, "ptr", "<answer>1</answer>", match="Instance")
    rejects(paradigms.classify, knap, "sir", None, cache=[], match="cache")
    rejects(paradigms.run_paradigm, f, [knap], paradigm, match="paradigm")
    rejects(paradigms.run_paradigm, "not callable", [knap], "ptr", match="callable")
    rejects(paradigms.run_paradigm, f, [knap], "ptr", style=style, match="style")
    rejects(paradigms.run_paradigm, f, knap, "ptr", match="sequence of Instance")
    rejects(paradigms.run_paradigm, f, [knap, bad], "ptr", match="sequence of Instance")
    rejects(paradigms.run_paradigm, f, [knap], "ptr", overrides=[("capacity", 2)], match="overrides")
    rejects(paradigms.run_paradigm, f, [knap], "ptr", overrides={"capacity": 5}, match="style")
