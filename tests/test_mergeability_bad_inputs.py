"""Bad input to icml26.mergeability: unknown tasks, models of different shapes, a negative L1
weight, bad pairs and out-of-range settings give a clear ValueError/TypeError from icml26."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from badinput import covers, exempt, rejects
from hypothesis import given, settings
from hypothesis import strategies as st

from icml26 import mergeability as mg

FAST = settings(max_examples=20, deadline=None, derandomize=True)

exempt("mergeability.tasks.DigitTasks", "a frozen record built by make_digit_tasks, which checks its input")
exempt("mergeability.models.FineTuned", "a record built by finetune_tasks, which checks its input")
exempt("mergeability.predictor.LotoResult", "a record built by loto_mergeability, which checks its input")

BASE = {"w": torch.zeros(3, 2), "b": torch.zeros(3)}
TV = {"w": torch.ones(3, 2), "b": torch.ones(3)}
MERGES = [
    lambda b, t: mg.merge_weight_average(b, t),
    lambda b, t: mg.merge_task_arithmetic(b, t, 0.5),
    lambda b, t: mg.merge_ties(b, t),
    lambda b, t: mg.merge_dare(b, t),
    lambda b, t: mg.merge_tsv(b, t),
    lambda b, t: mg.merge_pair("ties", b, t),
]


@pytest.fixture(scope="module")
def small():
    tasks = mg.make_digit_tasks(
        [("identity", "parity"), ("hflip", "digit"), ("invert", "mod3"), ("noise", "ge5")], random_state=0
    )
    base = mg.pretrain_backbone(tasks.X_pretrain, tasks.y_pretrain, hidden=8, epochs=1, random_state=0)
    ft = mg.finetune_tasks(base, tasks, epochs=1, random_state=0)
    return tasks, base, ft


@covers(
    "mergeability.merges.merge_weight_average",
    "mergeability.merges.merge_task_arithmetic",
    "mergeability.merges.merge_ties",
    "mergeability.merges.merge_dare",
    "mergeability.merges.merge_tsv",
    "mergeability.merges.merge_pair",
)
def test_merging_models_of_different_shapes():
    other = {"w": torch.ones(4, 2), "b": torch.ones(3)}
    for f in MERGES:
        rejects(f, BASE, [TV, other], match="different shapes.*'w'")
        rejects(f, BASE, [TV, {"w": torch.ones(3, 2)}], match="same architecture")
        rejects(f, BASE, [TV], match="at least two")


def test_merge_settings_out_of_range():
    rejects(mg.merge_task_arithmetic, BASE, [TV, TV], -0.5, match="alpha")
    rejects(mg.merge_ties, BASE, [TV, TV], density=0.0, match="density")
    rejects(mg.merge_ties, BASE, [TV, TV], density=1.5, match="density")
    rejects(mg.merge_ties, BASE, [TV, TV], lam=-1.0, match="lam")
    rejects(mg.merge_dare, BASE, [TV, TV], drop=1.0, match="drop")
    rejects(mg.merge_dare, BASE, [TV, TV], drop=0.9, random_state=-1, match="random_state")
    rejects(mg.merge_tsv, BASE, [TV, TV], alpha=float("nan"), match="alpha")
    rejects(mg.merge_pair, "mean", BASE, [TV, TV], match="not a merge method")
    rejects(mg.merge_weight_average, BASE, [TV, {"w": np.ones((3, 2)), "b": torch.ones(3)}], match="torch.Tensor")


@covers("mergeability.predictor.fit_pearson_l1", "mergeability.predictor.loto_mergeability")
@FAST
@given(st.floats(max_value=-1e-9, min_value=-1e6))
def test_negative_l1_weight(lam):
    X = np.random.default_rng(0).normal(size=(20, 3))
    y = X[:, 0]
    rejects(mg.fit_pearson_l1, X, y, lam=lam, match="L1 weight")
    rejects(mg.loto_mergeability, X[:15], y[:15], mg.task_pairs(6), lam=lam, match="L1 weight")


def test_predictor_bad_data():
    X = np.ones((10, 3))
    rejects(mg.fit_pearson_l1, X, np.ones(9), match="shape")
    bad = X.copy()
    bad[0, 0] = np.nan
    rejects(mg.fit_pearson_l1, bad, np.arange(10.0), match="finite")
    rejects(mg.fit_pearson_l1, X, np.arange(10.0), objective="mae", match="objective")
    rejects(mg.fit_pearson_l1, X, np.arange(10.0), max_steps=0, match="max_steps")
    rejects(mg.loto_mergeability, np.ones((6, 2)), np.arange(6.0), mg.task_pairs(4)[:5], match="rows")
    rejects(mg.loto_mergeability, np.ones((3, 2)), np.arange(3.0), mg.task_pairs(3), match="at least 4 tasks")
    rejects(mg.loto_mergeability, np.ones((3, 2)), np.arange(3.0), [(0, 0), (1, 2), (2, 3)], match="two different")
    rejects(mg.loto_mergeability, np.ones((3, 2)), np.arange(3.0), [(0, 1.5), (1, 2), (2, 3)], match="integer")


@covers("mergeability.tasks.make_digit_tasks", "mergeability.tasks.task_pairs")
def test_bad_tasks():
    rejects(mg.make_digit_tasks, [("blur", "digit"), ("identity", "digit")], match="transform 'blur'")
    rejects(mg.make_digit_tasks, [("identity", "prime"), ("identity", "digit")], match="label map 'prime'")
    rejects(mg.make_digit_tasks, [("identity", "digit")], match="at least two")
    rejects(mg.make_digit_tasks, [("identity", "digit")] * 2, match="distinct")
    rejects(mg.make_digit_tasks, "identity", match="sequence")
    rejects(mg.make_digit_tasks, [("identity", "digit"), ("hflip", "digit")], noise_sd=-1.0, match="noise_sd")
    rejects(mg.task_pairs, 1, match="n_tasks")
    rejects(mg.task_pairs, 2.5, match="n_tasks")


@covers("mergeability.models.pretrain_backbone", "mergeability.models.finetune_tasks")
def test_bad_training_input(small):
    tasks, base, _ = small
    rejects(mg.pretrain_backbone, np.ones((5, 63)), np.zeros(5, int), match="shape")
    rejects(mg.pretrain_backbone, np.ones((5, 64)), np.full(5, 12), match="labels")
    rejects(mg.pretrain_backbone, np.full((5, 64), np.inf), np.zeros(5, int), match="NaN or infinite")
    rejects(mg.pretrain_backbone, np.ones((5, 64)), np.zeros(5, int), epochs=0, match="epochs")
    rejects(mg.finetune_tasks, {"w": torch.ones(2)}, tasks, match="keys")
    rejects(mg.finetune_tasks, base, "tasks", match="DigitTasks")
    rejects(mg.finetune_tasks, base, tasks, lr=0.0, match="lr")


@covers(
    "mergeability.merges.score_pair_merges", "mergeability.metrics.pairwise_metrics", "mergeability.metrics.pairwise_metrics_loop"
)
def test_bad_pairs_and_metric_settings(small):
    tasks, base, ft = small
    for f in (mg.score_pair_merges, mg.pairwise_metrics, mg.pairwise_metrics_loop):
        rejects(f, base, ft, tasks, [(0, 4)], match="0..3")
        rejects(f, base, ft, tasks, [(1, 1)], match="two different")
        rejects(f, base, ft, None, [(0, 1)], match="DigitTasks")
    rejects(mg.score_pair_merges, base, ft, tasks, [(0, 1)], methods=["mean"], match="not merge methods")
    rejects(mg.score_pair_merges, base, ft, tasks, [(0, 1)], methods="ties", match="single string")
    rejects(mg.score_pair_merges, base, ft, tasks, [(0, 1)], alphas=[], match="at least one")
    rejects(mg.pairwise_metrics, base, ft, tasks, [(0, 1)], n_grad=10_000, match="exceed")
    rejects(mg.pairwise_metrics, base, ft, tasks, [(0, 1)], subspace_k=0, match="subspace_k")
    rejects(mg.pairwise_metrics, base, ft, tasks, [(0, 1)], grad_samples="test", match="grad_samples")
    rejects(mg.pairwise_metrics_loop, base, ft, tasks, [(0, 1)], grad_batch=0, match="grad_batch")
    rejects(mg.pairwise_metrics, base, ft, tasks, [(0, 1)], grad_seed=1.5, match="grad_seed")
    rejects(mg.score_pair_merges, base, ft, tasks, [(0, 1)], ties={"trim": 0.2}, match="merge_ties")


@covers("mergeability.metrics.gradient_sample_draws", "mergeability.metrics.gradient_weights")
def test_bad_gradient_sample_settings():
    rejects(mg.gradient_sample_draws, 5, 6, match="exceeds")
    rejects(mg.gradient_sample_draws, 0, 1, match="n_available")
    rejects(mg.gradient_weights, 0, None, match="n")
    rejects(mg.gradient_weights, 10, 0, match="batch")


@covers("mergeability.predictor.driver_agreement")
def test_bad_coefficients():
    rejects(mg.driver_agreement, {"a": np.ones(3)}, match="at least two")
    rejects(mg.driver_agreement, {"a": np.ones(3), "b": np.ones(4)}, match="equal length")
    rejects(mg.driver_agreement, {"a": np.ones(3), "b": np.ones(3)}, k=4, match="exceeds")
    rejects(mg.driver_agreement, {"a": np.ones(3), "b": np.array([1, np.nan, 0])}, match="finite")


@covers(
    "mergeability.merges.merge_weight_average",
    "mergeability.merges.merge_task_arithmetic",
    "mergeability.merges.merge_ties",
    "mergeability.merges.merge_dare",
    "mergeability.merges.merge_tsv",
    "mergeability.merges.merge_pair",
)
def test_non_finite_task_vectors_and_bases_are_rejected():
    # merge_ties used to return an all-NaN model for a NaN task vector
    for bad in (float("nan"), float("inf")):
        tv = {"w": torch.ones(3, 2), "b": torch.tensor([1.0, bad, 1.0])}
        for f in MERGES:
            rejects(f, BASE, [TV, tv], match="'b' of task vector 1.*NaN or infinite")
        rejects(mg.merge_ties, {"w": torch.full((3, 2), bad), "b": torch.zeros(3)}, [TV, TV], match="'w' of the base")


def test_ties_density_that_keeps_nothing_and_density_one():
    # density * P < 1: peft keeps int(density * P) = 0 entries, and the old code returned the base unchanged
    rejects(mg.merge_ties, BASE, [TV, TV], density=0.1, match=r"keeps no entry of the flattened.*density >= 0\.111")
    rejects(mg.merge_ties, BASE, [TV, TV], density=0.2, per_tensor=True, match=r"keeps no entry of parameter 'b'")
    # density = 1 is allowed by the docstring's (0, 1]: no trimming, the disjoint mean of all entries
    tv2 = {"w": -3 * torch.ones(3, 2), "b": 2 * torch.ones(3)}
    m = mg.merge_ties(BASE, [TV, tv2], density=1.0)
    assert torch.equal(m["b"], torch.full((3,), 1.5)) and torch.equal(m["w"], torch.full((3, 2), -3.0))


@covers("mergeability.predictor.fit_pearson_l1", "mergeability.predictor.loto_mergeability")
def test_constant_targets_and_metrics_are_rejected_not_nan():
    X = np.random.default_rng(0).normal(size=(20, 3))
    rejects(mg.fit_pearson_l1, X, np.full(20, 0.7), match="y is constant.*Pearson")
    rejects(mg.fit_pearson_l1, np.ones((20, 3)), X[:, 0], match="every column of X is constant")
    rejects(mg.fit_pearson_l1, X, X[:, 0], tol=float("nan"), match="tol")
    rejects(mg.fit_pearson_l1, X, X[:, 0], init_sd=-0.1, match="init_sd")
    assert np.all(np.isfinite(mg.fit_pearson_l1(X, np.full(20, 0.7), objective="mse", max_steps=5)))
    rejects(mg.loto_mergeability, X[:15], np.full(15, 0.7), mg.task_pairs(6), match="y is constant.*holds out task")


@covers("mergeability.sensitivity.sensitivity_fits")
def test_bad_sensitivity_settings(small):
    tasks, base, ft = small
    pairs = mg.task_pairs(tasks.n_tasks)
    M = np.zeros((len(pairs), len(mg.METRIC_NAMES)))
    rejects(
        mg.sensitivity_fits, base, ft, tasks, pairs, M, {"ties": {}}, grad_variants={}, metric_kw={}, match="every merge method"
    )
    rejects(
        mg.sensitivity_fits,
        base,
        ft,
        tasks,
        pairs,
        M,
        {m: {} for m in mg.MERGE_METHODS},
        grad_variants=[],
        metric_kw={},
        match="grad_variants",
    )
