"""Bad input to icml26.fiber: every public callable rejects out-of-domain input with a clear
ValueError/TypeError raised by icml26 itself (never a bare math or torch error, a NaN or a silent result).

The first tests are the bad calls reported in issue #9; the hypothesis tests then feed each
public callable wrong shapes, NaN/inf, negative sizes, empty arrays, out-of-range
probabilities and wrong types.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from badinput import covers, exempt, finite_or_raises, rejects
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from torch import nn

from icml26 import fiber

torch.set_num_threads(1)
FAST = settings(max_examples=20, deadline=None, derandomize=True)

exempt(
    "fiber.training.TabularData", "a plain record (dataclass) built by load_tabular; the functions that take it check its type"
)
exempt("fiber.training.TrainResult", "a plain record (dataclass) returned by train_private; it takes no input of its own")

bad_reals = st.sampled_from([np.nan, np.inf, -np.inf, -1.0])
non_finite = st.sampled_from([np.nan, np.inf, -np.inf])
not_numbers = st.sampled_from(["3", None, [1, 2], {"a": 1}])
bad_probabilities = st.sampled_from([0.0, -0.5, 1.5, 2.0, np.nan, np.inf])
bad_counts = st.sampled_from([0, -1, -5, 2.5, True])


@pytest.fixture(scope="module")
def toy():
    """A tiny MLP, a batch and a tiny TabularData."""
    model = fiber.make_mlp(4, 3, 2, random_state=0)
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(6, 4, generator=g), torch.randint(0, 2, (6,), generator=g)
    data = fiber.TabularData("toy", torch.randn(20, 4, generator=g), torch.arange(20) % 2, x, y, 2)
    return model, x, y, data


# ----------------------------------------------------------------------------- the reported bad calls (issue #9)


def test_epsilon_spent_with_a_sample_rate_above_one_is_a_clear_error():
    rejects(fiber.epsilon_spent, 1.0, 1.5, 100, 1e-5, match="sample_rate")


def test_epsilon_spent_with_bad_delta_or_steps():
    rejects(fiber.epsilon_spent, 1.0, 0.1, 100, 1.5, match="delta")
    rejects(fiber.epsilon_spent, 1.0, 0.1, 0, 1e-5, match="steps")


# ----------------------------------------------------------------------------- filters


@covers("fiber.filters.innovation_attenuation", "fiber.filters.innovation_filter_coeffs", "fiber.filters.filter_coeffs")
@FAST
@given(omega=st.one_of(bad_reals, st.sampled_from([0.0, 4 / 3, 1.5, 10.0])))
def test_unstable_omega_is_rejected(omega):
    rejects(fiber.innovation_attenuation, omega, match="omega")
    rejects(fiber.innovation_filter_coeffs, omega, match="omega")
    rejects(fiber.filter_coeffs, "innovation", omega=omega, match="omega")


@covers("fiber.filters.ema_attenuation", "fiber.filters.ema_filter_coeffs")
@FAST
@given(kappa=st.one_of(bad_reals, st.sampled_from([0.0, 2.0, 3.0])))
def test_unstable_kappa_is_rejected(kappa):
    rejects(fiber.ema_attenuation, kappa, match="kappa")
    rejects(fiber.ema_filter_coeffs, kappa, match="kappa")
    rejects(fiber.filter_coeffs, "ema", kappa=kappa, match="kappa")


@FAST
@given(v=not_numbers)
def test_filter_parameters_of_the_wrong_type(v):
    rejects(fiber.innovation_attenuation, v)
    rejects(fiber.ema_attenuation, v)


def test_unknown_filter_kind():
    rejects(fiber.filter_coeffs, "kalman", match="filter")
    rejects(fiber.filter_coeffs, 3)


@covers(
    "fiber.filters.check_stable", "fiber.filters.impulse_response", "fiber.filters.numeric_attenuation",
    "fiber.filters.attenuation_profile", "fiber.filters.apply_filter",
)  # fmt: skip
@FAST
@given(root=st.floats(1.0, 5.0), bad=bad_reals)
def test_unstable_or_non_finite_denominators_are_rejected(root, bad):
    a_unstable = np.array([1.0, -root])  # pole at z = root, outside the open unit disc
    for a in (a_unstable, np.array([1.0, bad]), np.array([0.0, 0.5]), np.array([]), np.ones((2, 2))):
        rejects(fiber.check_stable, a)
        rejects(fiber.impulse_response, [1.0], a, 5)
        rejects(fiber.numeric_attenuation, [1.0], a)
        rejects(fiber.attenuation_profile, [1.0], a, 5)
        rejects(fiber.apply_filter, np.zeros(4), [1.0], a)


@FAST
@given(n=bad_counts, bad=non_finite)
def test_filter_sizes_numerators_and_streams(n, bad):
    b, a = fiber.innovation_filter_coeffs(0.5)
    rejects(fiber.impulse_response, b, a, n)
    rejects(fiber.attenuation_profile, b, a, n)
    rejects(fiber.impulse_response, [bad], a, 5)
    rejects(fiber.apply_filter, np.array([1.0, bad]), b, a, match="NaN or infinite")
    rejects(fiber.apply_filter, np.zeros((0, 3)), b, a)
    rejects(fiber.numeric_attenuation, b, a, tol=bad, match="tol")
    rejects(fiber.check_stable, "abc")
    rejects(fiber.apply_filter, "abc", b, a)


# ----------------------------------------------------------------------------- privatisation


@covers("fiber.privacy.observation_weight", "fiber.privacy.two_point_grads")
@FAST
@given(kappa=st.one_of(bad_reals, st.sampled_from([0.0, 1.5])), gamma=st.one_of(bad_reals, st.just(0.0)))
def test_two_point_observation_parameters(kappa, gamma, toy):
    model, x, y, _ = toy
    d = {k: torch.zeros_like(v) for k, v in model.named_parameters()}
    rejects(fiber.observation_weight, kappa, 1.0, match="kappa")
    rejects(fiber.observation_weight, 0.5, gamma, match="gamma")
    rejects(fiber.two_point_grads, model, nn.functional.cross_entropy, x, y, d, kappa=kappa, gamma=1.0)


def test_two_point_with_a_wrong_last_move(toy):
    model, x, y, _ = toy
    d = {k: torch.zeros_like(v) for k, v in model.named_parameters()}
    rejects(fiber.two_point_grads, model, nn.functional.cross_entropy, x, y, {}, kappa=0.7, gamma=0.5, match="d_prev")
    bad = dict(d, **{next(iter(d)): torch.full_like(next(iter(d.values())), np.nan)})
    rejects(fiber.two_point_grads, model, nn.functional.cross_entropy, x, y, bad, kappa=0.7, gamma=0.5, match="NaN")
    rejects(fiber.two_point_grads, "model", nn.functional.cross_entropy, x, y, d, kappa=0.7, gamma=0.5)


@covers("fiber.privacy.per_example_grads")
@FAST
@given(rows=st.integers(1, 5), bad=bad_reals)
def test_per_example_grads_bad_batches(rows, bad, toy):
    model, x, y, _ = toy
    rejects(fiber.per_example_grads, model, nn.functional.cross_entropy, x[:rows], y[: rows + 1])
    xb = x.clone()
    xb[0, 0] = np.nan
    rejects(fiber.per_example_grads, model, nn.functional.cross_entropy, xb, y, match="NaN")
    rejects(fiber.per_example_grads, model, nn.functional.cross_entropy, x.numpy(), y)
    rejects(fiber.per_example_grads, "model", nn.functional.cross_entropy, x, y)
    rejects(fiber.per_example_grads, model, "loss", x, y)


@covers("fiber.privacy.clip_and_sum", "fiber.privacy.privatize")
@FAST
@given(max_norm=st.one_of(bad_reals, st.just(0.0)), mult=bad_reals, B=bad_counts)
def test_clipping_and_noise_parameters(max_norm, mult, B):
    g = {"w": torch.ones(3, 2)}
    rejects(fiber.clip_and_sum, g, max_norm, match="max_norm")
    rejects(fiber.clip_and_sum, {}, 1.0)
    rejects(fiber.clip_and_sum, {"w": torch.ones(3, 2), "b": torch.ones(4)}, 1.0, match="batch size")
    rejects(fiber.clip_and_sum, {"w": torch.full((3, 2), np.nan)}, 1.0, match="NaN")
    rejects(fiber.privatize, g, max_norm=1.0, noise_multiplier=mult, expected_batch_size=3, random_state=0)
    rejects(fiber.privatize, g, max_norm=1.0, noise_multiplier=1.0, expected_batch_size=B, random_state=0)


@covers("fiber.privacy.gaussian_noise")
@FAST
@given(std=bad_reals, dim=st.integers(-3, -1))
def test_gaussian_noise_bad_std_and_shapes(std, dim):
    rejects(fiber.gaussian_noise, {"w": (2, 2)}, std, 0, match="std")
    rejects(fiber.gaussian_noise, {"w": (2, dim)}, 1.0, 0, match="shape")
    rejects(fiber.gaussian_noise, [(2, 2)], 1.0, 0)
    rejects(fiber.gaussian_noise, {"w": (2, 2)}, 1.0, "seed")


# ----------------------------------------------------------------------------- accounting


@covers("fiber.privacy.noise_for_epsilon", "fiber.privacy.epsilon_spent")
@FAST
@given(q=bad_probabilities, delta=bad_probabilities, eps=st.one_of(bad_reals, st.just(0.0)), steps=bad_counts)
def test_accounting_rejects_out_of_range_inputs(q, delta, eps, steps):
    rejects(fiber.epsilon_spent, 1.0, q, 10, 1e-5, match="sample_rate")
    rejects(fiber.epsilon_spent, 1.0, 0.1, 10, delta, match="delta")
    rejects(fiber.epsilon_spent, 1.0, 0.1, steps, 1e-5, match="steps")
    rejects(fiber.epsilon_spent, eps, 0.1, 10, 1e-5, match="noise_multiplier")
    rejects(fiber.noise_for_epsilon, eps, 1e-5, 0.1, 10, match="epsilon")
    rejects(fiber.noise_for_epsilon, 1.0, delta, 0.1, 10, match="delta")
    rejects(fiber.noise_for_epsilon, 1.0, 1e-5, q, 10, match="sample_rate")
    rejects(fiber.noise_for_epsilon, 1.0, 1e-5, 0.1, steps, match="steps")


# ----------------------------------------------------------------------------- optimizer


@covers("fiber.optimizer.FilteredDPAdamW", "fiber.optimizer.make_optimizer")
@FAST
@given(bad=bad_reals, beta=st.sampled_from([1.0, -0.1, 2.0, np.nan]))
def test_optimizer_hyperparameters(bad, beta):
    p = [nn.Parameter(torch.zeros(2))]
    rejects(fiber.FilteredDPAdamW, p, lr=bad, match="lr")
    rejects(fiber.FilteredDPAdamW, p, betas=(0.9, beta), match="betas")
    rejects(fiber.FilteredDPAdamW, p, betas=(0.9,), match="betas")
    rejects(fiber.FilteredDPAdamW, p, noise_std=bad, match="noise_std")
    rejects(fiber.FilteredDPAdamW, p, eps_v=bad, match="eps_v")
    rejects(fiber.FilteredDPAdamW, p, filter="kalman", match="filter")
    rejects(fiber.FilteredDPAdamW, p, correction="half", match="correction")
    rejects(fiber.FilteredDPAdamW, p, omega=1.5, match="omega")
    rejects(fiber.make_optimizer, "SGD", p, noise_std=1.0, match="method")
    rejects(fiber.make_optimizer, "FIBER", p, noise_std=bad)


# ----------------------------------------------------------------------------- experiments


@covers("fiber.experiments.second_moment_bias")
@FAST
@given(
    mu=arrays(float, st.integers(1, 4), elements=st.sampled_from([0.0, 1.0, np.nan, np.inf])),
    bad=bad_reals,
    steps=st.integers(-2, 1),
)
def test_second_moment_bias_bad_inputs(mu, bad, steps):
    if np.all(np.isfinite(mu)):
        mu = np.append(mu, np.nan)
    rejects(fiber.second_moment_bias, mu, 1.0, "none", steps=10, match="true_grad")
    rejects(fiber.second_moment_bias, np.zeros(0), 1.0, "none", steps=10, match="true_grad")
    rejects(fiber.second_moment_bias, np.zeros(3), bad, "none", steps=10, match="noise_std")
    rejects(fiber.second_moment_bias, np.zeros(3), 1.0, "none", steps=steps, match="steps")
    rejects(fiber.second_moment_bias, np.zeros(3), 1.0, "none", steps=10, n_rep=0, match="n_rep")
    rejects(fiber.second_moment_bias, np.zeros(3), 1.0, "none", steps=10, beta2=1.0, match="beta2")
    rejects(fiber.second_moment_bias, np.zeros(3), 1.0, "kalman", steps=10, match="filter")
    rejects(fiber.second_moment_bias, np.zeros(3), 1.0, "none", steps=10, random_state="x", match="random_state")


@covers(
    "fiber.training.load_tabular", "fiber.training.validation_split", "fiber.training.make_mlp", "fiber.experiments.steps_for",
)  # fmt: skip
@FAST
@given(frac=bad_probabilities, n=bad_counts)
def test_data_and_model_helpers(frac, n, toy):
    _, _, _, data = toy
    rejects(fiber.load_tabular, "mnist", match="name")
    rejects(fiber.load_tabular, 3, match="name")
    rejects(fiber.load_tabular, "digits", test_size=frac, match="test_size")
    rejects(fiber.validation_split, data, frac=frac, match="frac")
    rejects(fiber.validation_split, "data", match="TabularData")
    rejects(fiber.make_mlp, n, 3, 2, match="in_dim")
    rejects(fiber.make_mlp, 4, n, 2, match="hidden")
    rejects(fiber.steps_for, 1.0, n, 10)
    rejects(fiber.steps_for, 1.0, 20, 10, match="exceeds")
    rejects(fiber.steps_for, -1.0, 2, 10, match="epochs")


@covers("fiber.training.train_private")
@FAST
@given(B=st.sampled_from([0, -3, 10_000, 2.5]), bad=bad_reals)
def test_train_private_bad_inputs(B, bad, toy):
    _, _, _, data = toy
    rejects(fiber.train_private, data, "Adam", noise_multiplier=1.0, match="method")
    rejects(fiber.train_private, "data", "FIBER", noise_multiplier=1.0, match="TabularData")
    rejects(fiber.train_private, data, "FIBER", noise_multiplier=1.0, batch_size=B, match="batch_size")
    rejects(fiber.train_private, data, "FIBER", noise_multiplier=bad, batch_size=4, match="noise_multiplier")
    rejects(fiber.train_private, data, "FIBER", noise_multiplier=1.0, batch_size=4, epochs=bad, match="epochs")
    rejects(fiber.train_private, data, "FIBER", noise_multiplier=1.0, batch_size=4, delta=1.5, match="delta")


@covers("fiber.experiments.select_hyperparameters", "fiber.experiments.accuracy_vs_epsilon")
@FAST
@given(bad=bad_reals)
def test_experiment_drivers_bad_grids(bad, toy):
    _, _, _, data = toy
    kw = dict(epsilon=3.0, delta=1e-5, random_state=0, epochs=1, batch_size=4)
    rejects(fiber.select_hyperparameters, data, ["FIBER"], lr_grid=[], eps_v_grid=[1e-8], **kw, match="lr_grid")
    rejects(fiber.select_hyperparameters, data, ["FIBER"], lr_grid=[bad], eps_v_grid=[1e-8], **kw, match="lr")
    rejects(fiber.select_hyperparameters, data, ["Adam"], lr_grid=[1e-2], eps_v_grid=[1e-8], **kw, match="method")
    rejects(fiber.select_hyperparameters, data, "FIBER", lr_grid=[1e-2], eps_v_grid=[1e-8], **kw)
    hp = {"FIBER": {"lr": 1e-2, "eps_v": 1e-8}}
    kw2 = dict(delta=1e-5, seeds=[0], epochs=1, batch_size=4)
    rejects(fiber.accuracy_vs_epsilon, data, hp, epsilons=[bad], **kw2, match="epsilon")
    rejects(fiber.accuracy_vs_epsilon, data, {}, epsilons=[1.0], **kw2, match="hparams")
    rejects(fiber.accuracy_vs_epsilon, data, {"FIBER": {"lr": 1e-2}}, epsilons=[1.0], **kw2, match="eps_v")
    rejects(fiber.accuracy_vs_epsilon, data, hp, epsilons=[1.0], delta=1e-5, seeds=[-1], epochs=1, batch_size=4, match="seed")


@covers("fiber.experiments.dp_step_fn", "fiber.opacus_ref.opacus_dp_optimizer", "fiber.opacus_ref.opacus_step")
@FAST
@given(bad=bad_reals)
def test_step_closures_and_opacus_wrappers(bad, toy):
    model, x, y, _ = toy
    rejects(fiber.dp_step_fn, "Adam", model, x, y, noise_multiplier=1.0, match="method")
    rejects(fiber.dp_step_fn, "FIBER", model, x, y[:3], noise_multiplier=1.0)
    rejects(fiber.dp_step_fn, "FIBER", model, x, y, noise_multiplier=bad, match="noise_multiplier")
    xb = x.clone()
    xb[0, 0] = np.nan
    rejects(fiber.dp_step_fn, "FIBER", model, xb, y, noise_multiplier=1.0, match="NaN")
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    rejects(fiber.opacus_dp_optimizer, model, "sgd", noise_multiplier=1.0, max_norm=1.0, expected_batch_size=6)
    rejects(
        fiber.opacus_dp_optimizer, model, opt, noise_multiplier=bad, max_norm=1.0, expected_batch_size=6, match="noise_multiplier"
    )
    rejects(
        fiber.opacus_dp_optimizer,
        model,
        opt,
        noise_multiplier=1.0,
        max_norm=1.0,
        expected_batch_size=0,
        match="expected_batch_size",
    )
    rejects(fiber.opacus_step, "gsm", "dpo", x, y)


def test_opacus_step_bad_batch():
    model = fiber.make_mlp(4, 3, 2, random_state=0)
    gsm, dpo = fiber.opacus_dp_optimizer(
        model,
        torch.optim.SGD(model.parameters(), lr=0.1),
        noise_multiplier=1.0,
        max_norm=1.0,
        expected_batch_size=4,
        random_state=0,
    )
    rejects(fiber.opacus_step, gsm, dpo, torch.zeros(4, 4), torch.zeros(3, dtype=torch.long))
    rejects(fiber.opacus_step, gsm, dpo, torch.full((4, 4), np.nan), torch.zeros(4, dtype=torch.long), match="NaN")


def test_attenuation_never_returns_nan():
    for w in (1e-6, 0.5, 1.0, 4 / 3 - 1e-6):
        finite_or_raises(fiber.innovation_attenuation, w)
