"""Bad input to icml26.cobra: clear errors naming the value and what is allowed."""

from __future__ import annotations

import numpy as np
import torch
from badinput import covers, exempt, rejects
from hypothesis import given, settings
from hypothesis import strategies as st

from icml26 import cobra as C

exempt("cobra.allocation.DirichletAllocation", "a result record built by dirichlet_rank_allocation")
exempt("cobra.tasks.RegressionTask", "a result record built by highrank_regression_task")
exempt("cobra.tasks.EncoderTask", "a result record built by marker_encoder_task")


def _net():
    return torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))


@covers("cobra.allocation.largest_remainder_ranks", "cobra.allocation.share_ranks", "cobra.allocation.dirichlet_rank_allocation")
@settings(max_examples=20, deadline=None, derandomize=True)
@given(costs=st.lists(st.integers(1, 100), min_size=1, max_size=6), short=st.integers(1, 50))
def test_a_budget_below_one_rank_per_layer_is_rejected(costs, short):
    budget = max(sum(costs) - short, 1)
    if budget >= sum(costs):
        return
    rejects(C.largest_remainder_ranks, np.ones(len(costs)), costs, budget, match="budget")
    rejects(C.share_ranks, np.ones(len(costs)), costs, budget, match="budget")
    rejects(C.dirichlet_rank_allocation, np.ones(len(costs)), costs, budget, match="budget")


@covers(
    "cobra.allocation.largest_remainder_ranks",
    "cobra.allocation.share_ranks",
    "cobra.allocation.dirichlet_rank_allocation",
    "cobra.allocation.ta_lc",
)
def test_bad_vectors_are_rejected():
    rejects(C.largest_remainder_ranks, [1.0, -1.0], [5, 5], 20, match=">= 0")
    rejects(C.largest_remainder_ranks, [1.0, 1.0], [5], 20, match="one entry per layer")
    rejects(C.largest_remainder_ranks, [1.0, np.nan], [5, 5], 20, match="finite")
    rejects(C.largest_remainder_ranks, [1.0], [2.5], 20, match="integers")
    rejects(C.share_ranks, [0.0, 0.0], [5, 5], 20, match="zero")
    rejects(C.dirichlet_rank_allocation, [0.5, 0.0], [5, 5], 20, match="> 0")
    rejects(C.dirichlet_rank_allocation, [0.5, 0.5], [5, 5], 20, kappa=0.0, match="kappa")
    rejects(C.ta_lc, [1.0, 2.0], [1.0], match="same length")
    rejects(C.ta_lc, [1.0, 2.0], [1.0, 1.0], a=1.5, match="a=")
    rejects(C.ta_lc, [0.0, 2.0], [1.0, 1.0], match="> 0")


@covers("cobra.contributions.layer_conductance", "cobra.contributions.layer_contributions")
def test_bad_conductance_calls_are_rejected():
    net = _net()
    x = torch.randn(4, 3)
    rejects(C.layer_conductance, net, net[0], x, target=5, match="out of range")
    rejects(C.layer_conductance, net, net[0], x, target=None, match="target is required")
    rejects(C.layer_conductance, net, net[0], x.long(), target=0, match="floating-point")
    rejects(C.layer_conductance, net, "layer", x, target=0, match="nn.Module")
    rejects(C.layer_conductance, net, net[0], x, torch.zeros(2, 3), target=0, match="broadcast")
    rejects(C.layer_conductance, net, net[0], x, target=0, n_steps=0, match="n_steps")
    other = torch.nn.Linear(3, 3)
    rejects(C.layer_conductance, net, other, x, target=0, match="not called")
    rejects(C.layer_contributions, net, {}, x, target=0, match="non-empty")
    rejects(C.layer_contributions, net, {"a": net[0]}, x, target="some", match="'all'")


@covers("cobra.adapters.lora_rank_pattern", "cobra.adapters.make_lora_model", "cobra.adapters.make_adalora_model")
def test_a_rank_pattern_naming_a_missing_module_is_rejected():
    net = _net()
    rejects(C.lora_rank_pattern, {"5": 2}, net, match="does not have")
    rejects(C.make_lora_model, net, {"0": 2, "missing": 3}, match="does not have")
    rejects(C.make_lora_model, net, {"0": 0}, match="ranks")
    rejects(C.lora_rank_pattern, {}, match="non-empty")
    rejects(C.make_adalora_model, net, ["0", "nope"], target_r=2, init_r=4, total_step=20, match="not a module")
    rejects(C.make_adalora_model, net, ["0"], target_r=2, init_r=4, total_step=20, tinit=10, tfinal=10, match="total_step")
    rejects(C.make_adalora_model, net, ["0"], target_r=4, init_r=2, total_step=20, match="init_r")
    rejects(C.make_adalora_model, net, ["0"], target_r=2, init_r=4, total_step=20, orth_reg_weight=-0.1, match="orth_reg_weight")


@covers("cobra.adapters.train_lora", "cobra.adapters.lora_gradient_demand", "cobra.adapters.lora_param_count")
def test_bad_training_calls_are_rejected():
    net = _net()
    pm = C.make_lora_model(net, {"0": 1}, random_state=0)
    x, y = torch.randn(8, 3), torch.randn(8, 2)

    def loss(m, xb, yb):
        return ((m(xb) - yb) ** 2).mean()

    rejects(C.train_lora, pm, loss, x, y[:4], steps=2, match="same")
    rejects(C.train_lora, pm, loss, x, y, steps=0, match="steps")
    rejects(C.train_lora, pm, "loss", x, y, steps=2, match="callable")
    rejects(C.train_lora, pm, loss, x, y, steps=2, schedule="cosine", match="'linear'")
    rejects(C.lora_gradient_demand, net, [], loss, x, y, match="empty")
    rejects(C.lora_gradient_demand, net, ["0"], loss, x, y, r0=0, match="r0")
    rejects(C.lora_param_count, "model", match="nn.Module")


@covers("cobra.tasks.highrank_regression_task", "cobra.tasks.marker_encoder_task")
def test_bad_task_settings_are_rejected():
    rejects(C.highrank_regression_task, [0, 9], d_in=4, width=8, d_out=2, match="exceed")
    rejects(C.highrank_regression_task, [1], match="two layers")
    rejects(C.highrank_regression_task, [1, -1], match=">= 0")
    rejects(C.marker_encoder_task, hidden=10, heads=4, match="multiple")
    rejects(C.marker_encoder_task, vocab=3, match="vocab")


@covers("cobra.contributions.layer_conductance", "cobra.contributions.layer_contributions")
def test_inputs_of_another_dtype_than_the_model_are_named():
    # float32 inputs on a float64 model used to surface torch's matmul dtype error
    net = _net().double()
    x = torch.randn(4, 3)
    rejects(C.layer_conductance, net, net[0], x, target=0, match="inputs of dtype torch.float32.*torch.float64")
    rejects(C.layer_contributions, net, {"a": net[0]}, x, target="all", match="inputs of dtype torch.float32")
    assert C.layer_conductance(net, net[0], x.double(), target=0).dtype == torch.float64


@covers(
    "cobra.tasks.marker_encoder_task",
    "cobra.contributions.task_contributions",
    "cobra.experiments.build_methods",
    "cobra.adapters.adalora_orth_penalty",
    "cobra.adapters.adapter_param_counts",
)
def test_bad_new_settings_are_rejected():
    rejects(C.marker_encoder_task, rule="parity", match="rule='parity'")
    rejects(C.marker_encoder_task, marker_rate=0.0, match="marker_rate")
    rejects(C.marker_encoder_task, vocab=8, n_markers=5, match="n_markers=5")
    net = _net()
    x = torch.randn(4, 3)
    rejects(C.task_contributions, net, {"a": net[0]}, x, torch.zeros(3, 2), C.neg_squared_error, match="one row per input")
    rejects(C.task_contributions, net, {"a": net[0]}, x, torch.zeros(4, 2), "mse", match="score must be callable")
    rejects(C.build_methods, net, ["0"], {}, r0=2, total_step=10, methods=["LoRA-XL"], match="LoRA-XL")
    rejects(C.adalora_orth_penalty, net, match="no lora_A")
    rejects(C.adapter_param_counts, "model", match="nn.Module")


@covers(
    "cobra.experiments.allocate_ranks",
    "cobra.experiments.encoder_seed",
    "cobra.experiments.regression_seed",
    "cobra.contributions.neg_squared_error",
    "cobra.contributions.true_class_log_prob",
)
def test_bad_experiment_calls_are_rejected():
    rejects(C.allocate_ranks, [1.0, 2.0], [1.0, 2.0, 3.0], [10, 10], 40, match="same length")
    rejects(C.encoder_seed, "task", r0=2, steps=10, match="EncoderTask")
    rejects(C.regression_seed, [0, 1], r0=0, steps=10, match="r0")
    rejects(C.neg_squared_error, torch.zeros(3, 2), torch.zeros(3, 1), match="same shape")
    rejects(C.true_class_log_prob, torch.zeros(3, 2), torch.tensor([0, 1]), match=r"shape \(3,\)")
    rejects(C.true_class_log_prob, torch.zeros(3, 2), torch.tensor([0, 1, 2]), match=r"\[0, 2\)")
