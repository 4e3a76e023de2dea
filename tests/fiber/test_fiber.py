"""Tests of icml26.fiber (chapter 07): filters, privatisation, accounting, optimizers."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import torch
from torch import nn

from icml26 import fiber

torch.set_num_threads(1)

OMEGAS = [0.1, 0.3, 0.5, 0.8, 1.0, 1.2]


# --------------------------------------------------------------------------- filters


@pytest.mark.parametrize("omega", OMEGAS)
def test_attenuation_matches_variance_of_filtered_white_noise(omega):
    """A(omega) sigma^2 is the stationary variance of the innovation filter fed white noise."""
    rng = np.random.default_rng(int(omega * 1000))
    reps, steps, burn = 40, 6000, 300
    sigma = 0.7
    z = sigma * rng.standard_normal((steps, reps))
    y = fiber.apply_filter(z, *fiber.innovation_filter_coeffs(omega))[burn:]  # (T-burn, R)
    per_rep = (y**2).mean(0) / sigma**2  # (R,) independent estimates
    se = per_rep.std(ddof=1) / math.sqrt(reps)
    assert abs(per_rep.mean() - fiber.innovation_attenuation(omega)) < 4 * se, (per_rep.mean(), se)


def test_optimizer_filter_state_equals_lfilter_recursion():
    """The optimizer's innovation recursion (nu, r, g~) is the AR(2) filter with zero start."""
    torch.manual_seed(0)
    omega, steps = 0.37, 30
    p = nn.Parameter(torch.zeros(5, dtype=torch.float64))
    opt = fiber.FilteredDPAdamW([p], lr=1e-3, filter="innovation", omega=omega, correction="none")
    gs = torch.randn(steps, 5, dtype=torch.float64)
    for g in gs:
        p.grad = g.clone()
        opt.step()
    ref = fiber.apply_filter(gs.numpy(), *fiber.innovation_filter_coeffs(omega))[-1]
    np.testing.assert_allclose(opt.state[p]["gf"].numpy(), ref, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("omega", OMEGAS + [1.3])
def test_numeric_attenuation_equals_closed_form_innovation(omega):
    assert fiber.numeric_attenuation(*fiber.innovation_filter_coeffs(omega)) == pytest.approx(
        fiber.innovation_attenuation(omega), rel=1e-10
    )


@pytest.mark.parametrize("kappa", [0.05, 0.3, 0.7, 1.0, 1.5])
def test_numeric_attenuation_of_ema_is_kappa_over_two_minus_kappa(kappa):
    assert fiber.numeric_attenuation(*fiber.ema_filter_coeffs(kappa)) == pytest.approx(kappa / (2 - kappa), rel=1e-10)
    assert fiber.ema_attenuation(kappa) == pytest.approx(kappa / (2 - kappa), rel=1e-14)


def test_closed_form_special_values_and_profile():
    assert fiber.innovation_attenuation(1.0) == pytest.approx(1.0)
    assert fiber.innovation_attenuation(0.5) == pytest.approx(0.6)
    assert fiber.innovation_attenuation(1.2) == pytest.approx(2.0)
    prof = fiber.attenuation_profile(*fiber.innovation_filter_coeffs(0.5), 400)
    assert prof[0] == pytest.approx(0.25) and np.all(np.diff(prof) >= 0) and prof[-1] == pytest.approx(0.6, rel=1e-9)
    # identity filter has A = 1
    assert fiber.numeric_attenuation([1.0], [1.0]) == 1.0


@pytest.mark.parametrize("omega", [0.0, -0.1, 4 / 3, 1.5, 2.0, float("nan")])
def test_unstable_omega_is_a_clear_error(omega):
    with pytest.raises(ValueError, match="omega"):
        fiber.innovation_attenuation(omega)
    with pytest.raises(ValueError, match="omega"):
        fiber.FilteredDPAdamW([nn.Parameter(torch.zeros(2))], filter="innovation", omega=omega)


def test_unstable_coefficients_rejected_by_numeric_attenuation():
    # omega = 1.4 written out by hand: a = [1, -2(1-w), (1-w)]
    w = 1.4
    with pytest.raises(ValueError, match="not stable"):
        fiber.numeric_attenuation([w], [1.0, -2 * (1 - w), 1 - w])
    with pytest.raises(ValueError, match="kappa"):
        fiber.ema_attenuation(2.0)


# --------------------------------------------------------------------------- optimizer


@pytest.mark.parametrize("filt", ["innovation", "none"])
def test_fiber_without_noise_and_unit_gain_is_adamw_step_for_step(filt):
    torch.manual_seed(1)
    init = torch.randn(7, 3, dtype=torch.float64)
    p1, p2 = nn.Parameter(init.clone()), nn.Parameter(init.clone())
    kw = dict(lr=3e-2, betas=(0.8, 0.95), eps=1e-8, weight_decay=0.05)
    fib = fiber.FilteredDPAdamW([p1], filter=filt, omega=1.0, correction="filter", noise_std=0.0, eps_v=0.0, **kw)
    ref = torch.optim.AdamW([p2], **kw)
    for _ in range(25):
        g = torch.randn(7, 3, dtype=torch.float64)
        p1.grad, p2.grad = g.clone(), g.clone()
        fib.step()
        ref.step()
        torch.testing.assert_close(p1.detach(), p2.detach(), rtol=1e-12, atol=1e-12)


def test_corrections_subtract_what_they_say():
    p = nn.Parameter(torch.zeros(3))
    sw = 0.1
    assert fiber.make_optimizer("DP-AdamW", [p], noise_std=sw).subtracted == 0.0
    assert fiber.make_optimizer("DP-AdamBC", [p], noise_std=sw).subtracted == pytest.approx(sw**2)
    assert fiber.make_optimizer("Innov. filter + σ² corr.", [p], noise_std=sw, omega=0.5).subtracted == pytest.approx(sw**2)
    assert fiber.make_optimizer("FIBER", [p], noise_std=sw, omega=0.5).subtracted == pytest.approx(0.6 * sw**2)


def test_bad_optimizer_arguments():
    p = [nn.Parameter(torch.zeros(2))]
    with pytest.raises(ValueError, match="filter='kalman'"):
        fiber.FilteredDPAdamW(p, filter="kalman")
    with pytest.raises(ValueError, match="correction='half'"):
        fiber.FilteredDPAdamW(p, correction="half")
    with pytest.raises(ValueError, match="method='Adam'"):
        fiber.make_optimizer("Adam", p, noise_std=0.0)
    with pytest.raises(ValueError, match="lr"):
        fiber.FilteredDPAdamW(p, lr=0.0)


def test_second_moment_bias_matches_prediction():
    mu = np.linspace(-0.5, 0.5, 50)
    out = fiber.second_moment_bias(mu, 1.0, "innovation", omega=0.5, steps=3000, n_rep=16, random_state=3)
    A = float(out["A"])
    assert A == pytest.approx(0.6)
    assert out["err_none"].mean() == pytest.approx(A, abs=0.03)
    assert out["err_sigma2"].mean() == pytest.approx(-(1 - A), abs=0.03)
    assert abs(out["err_filter"].mean()) < 0.03
    # the floor at eps_v = 0 only raises the estimate
    assert out["err_floor_sigma2"].mean() > out["err_sigma2"].mean() and float(out["clamped_sigma2"]) > float(
        out["clamped_filter"]
    )


# --------------------------------------------------------------------------- privatisation


def _toy(seed=0, n=12):
    g = torch.Generator().manual_seed(seed)
    model = nn.Sequential(nn.Linear(5, 4), nn.Tanh(), nn.Linear(4, 3))
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=g))
    x = torch.randn(n, 5, generator=g)
    y = torch.randint(0, 3, (n,), generator=g)
    return model, x, y


def _loop_grads(model, x, y):
    out = {k: [] for k, _ in model.named_parameters()}
    for i in range(x.shape[0]):
        model.zero_grad()
        nn.functional.cross_entropy(model(x[i : i + 1]), y[i : i + 1]).backward()
        for k, p in model.named_parameters():
            out[k].append(p.grad.detach().clone())
    return {k: torch.stack(v) for k, v in out.items()}


def test_per_example_grads_equal_loop_of_single_backward_passes():
    model, x, y = _toy()
    pe = fiber.per_example_grads(model, nn.functional.cross_entropy, x, y)
    ref = _loop_grads(model, x, y)
    for k in ref:
        torch.testing.assert_close(pe[k], ref[k], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("act", [nn.Tanh, nn.ReLU])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_closed_form_per_example_grads_equal_vmap_and_the_loop(act, dtype):
    # a deeper Sequential than make_mlp's, to exercise the backward recursion
    torch.manual_seed(3)
    model = nn.Sequential(nn.Linear(5, 7), act(), nn.Linear(7, 6), act(), nn.Linear(6, 4)).to(dtype)
    x = torch.randn(13, 5, dtype=dtype)
    y = torch.randint(0, 4, (13,))
    lf = nn.functional.cross_entropy
    fast = fiber.per_example_grads(model, lf, x, y)
    slow = fiber.per_example_grads(model, lf, x, y, backend="vmap")
    ref = _loop_grads(model, x, y)
    assert list(fast) == list(slow) == [k for k, _ in model.named_parameters()]
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == torch.float32 else dict(rtol=1e-12, atol=1e-13)
    for k in ref:
        # the same kernels as autograd under vmap: equal bit for bit, so training is unchanged
        torch.testing.assert_close(fast[k], slow[k], rtol=0, atol=0)
        torch.testing.assert_close(fast[k], ref[k], **tol)
    # at a shifted point, as the two-point observation evaluates it
    shifted = {k: v.detach() + 0.3 for k, v in model.named_parameters()}
    fs = fiber.per_example_grads(model, lf, x, y, shifted)
    vs = fiber.per_example_grads(model, lf, x, y, shifted, backend="vmap")
    for k in fs:
        torch.testing.assert_close(fs[k], vs[k], rtol=0, atol=0)


@pytest.mark.parametrize("B", [1, 7, 64, 256, 1024])
def test_closed_form_per_example_grads_of_make_mlp_equal_vmap_bit_for_bit(B):
    from sklearn.datasets import load_digits

    d = load_digits()
    x = torch.tensor(d.data[:B] / 16, dtype=torch.float32)
    y = torch.tensor(d.target[:B])
    model = fiber.make_mlp(64, 32, 10, random_state=B)
    lf = nn.functional.cross_entropy
    fast = fiber.per_example_grads(model, lf, x, y)
    slow = fiber.per_example_grads(model, lf, x, y, backend="vmap")
    for k in slow:
        assert torch.equal(fast[k], slow[k]), k
    with pytest.raises(ValueError, match="backend"):
        fiber.per_example_grads(model, lf, x, y, backend="hooks")


def test_two_point_observation():
    model, x, y = _toy(1)
    lf = nn.functional.cross_entropy
    d = {k: 0.1 * torch.ones_like(v) for k, v in model.named_parameters()}
    base = fiber.per_example_grads(model, lf, x, y)
    # kappa = 1: the plain gradient
    u1 = fiber.two_point_grads(model, lf, x, y, d, kappa=1.0, gamma=0.5)
    # general a: a * grad(theta + gamma d) + (1 - a) * grad(theta), via a shifted copy
    kappa, gamma = 0.7, 0.5
    a = (1 - kappa) / (kappa * gamma)
    shifted = copy.deepcopy(model)
    with torch.no_grad():
        for k, p in shifted.named_parameters():
            p.add_(gamma * d[k])
    sh = _loop_grads(shifted, x, y)
    u = fiber.two_point_grads(model, lf, x, y, d, kappa=kappa, gamma=gamma)
    u_one = fiber.two_point_grads(model, lf, x, y, d, kappa=kappa, gamma=(1 - kappa) / kappa)  # a = 1
    gam1 = (1 - kappa) / kappa
    shifted1 = copy.deepcopy(model)
    with torch.no_grad():
        for k, p in shifted1.named_parameters():
            p.add_(gam1 * d[k])
    sh1 = _loop_grads(shifted1, x, y)
    for k in base:
        torch.testing.assert_close(u1[k], base[k])
        torch.testing.assert_close(u[k], a * sh[k] + (1 - a) * base[k], rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(u_one[k], sh1[k], rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="kappa"):
        fiber.observation_weight(0.0, 1.0)
    with pytest.raises(ValueError, match="gamma"):
        fiber.observation_weight(0.5, 0.0)


def test_clip_and_sum():
    model, x, y = _toy(2)
    pe = fiber.per_example_grads(model, nn.functional.cross_entropy, x, y)
    big = 1e6
    s_big, norms = fiber.clip_and_sum(pe, big)
    for k in pe:
        torch.testing.assert_close(s_big[k], pe[k].sum(0), rtol=1e-5, atol=1e-6)
    flat = torch.cat([v.reshape(x.shape[0], -1) for v in pe.values()], 1)
    torch.testing.assert_close(norms, flat.norm(dim=1))
    C = float(norms.median())
    s, _ = fiber.clip_and_sum(pe, C)
    factor = (C / (norms + 1e-6)).clamp(max=1.0)
    ref = (factor[:, None] * flat).sum(0)
    torch.testing.assert_close(torch.cat([v.reshape(-1) for v in s.values()]), ref, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="max_norm"):
        fiber.clip_and_sum(pe, 0.0)


def test_dp_sgd_step_agrees_with_opacus():
    pytest.importorskip("opacus")
    model, x, y = _toy(3, n=16)
    ours = copy.deepcopy(model)
    C, sigma, B, lr = 0.5, 1.3, 16, 0.1
    gsm, dpo = fiber.opacus_dp_optimizer(
        model,
        torch.optim.SGD(model.parameters(), lr=lr),
        noise_multiplier=sigma,
        max_norm=C,
        expected_batch_size=B,
        random_state=torch.Generator().manual_seed(42),
    )
    fiber.opacus_step(gsm, dpo, x, y)
    g = fiber.privatize(
        fiber.per_example_grads(ours, nn.functional.cross_entropy, x, y),
        max_norm=C,
        noise_multiplier=sigma,
        expected_batch_size=B,
        random_state=torch.Generator().manual_seed(42),
    )
    with torch.no_grad():
        for k, p in ours.named_parameters():
            p.add_(g[k], alpha=-lr)
    for (_k, p), q in zip(ours.named_parameters(), model.parameters()):
        torch.testing.assert_close(p, q.detach(), rtol=1e-5, atol=1e-6)


def test_dp_adamw_agrees_with_opacus_dp_adam_over_steps():
    pytest.importorskip("opacus")
    model, x, y = _toy(4, n=16)
    ours = copy.deepcopy(model)
    C, sigma, B, lr = 1.0, 0.8, 16, 1e-2
    gsm, dpo = fiber.opacus_dp_optimizer(
        model,
        torch.optim.Adam(model.parameters(), lr=lr),
        noise_multiplier=sigma,
        max_norm=C,
        expected_batch_size=B,
        random_state=torch.Generator().manual_seed(7),
    )
    opt = fiber.make_optimizer("DP-AdamW", ours.parameters(), noise_std=sigma * C / B, lr=lr)
    gen = torch.Generator().manual_seed(7)
    for _ in range(4):
        fiber.opacus_step(gsm, dpo, x, y)
        g = fiber.privatize(
            fiber.per_example_grads(ours, nn.functional.cross_entropy, x, y),
            max_norm=C,
            noise_multiplier=sigma,
            expected_batch_size=B,
            random_state=gen,
        )
        for k, p in ours.named_parameters():
            p.grad = g[k]
        opt.step()
    for p, q in zip(ours.parameters(), model.parameters()):
        torch.testing.assert_close(p.detach(), q.detach(), rtol=1e-4, atol=1e-5)


# --------------------------------------------------------------------------- accounting


def test_accounting_round_trip_and_gaussian_oracle():
    pytest.importorskip("opacus")
    q, T, delta = 0.05, 400, 1e-5
    for eps in (2.0,):
        s = fiber.noise_for_epsilon(eps, delta, q, T)
        assert eps - 0.01 <= fiber.epsilon_spent(s, q, T, delta) <= eps
    # q = 1: the Gaussian mechanism's RDP is T * alpha / (2 sigma^2), converted as in Balle et al. 2020
    sigma, T = 3.0, 10
    a = np.asarray(fiber.RDP_ALPHAS, dtype=float)
    rdp = T * a / (2 * sigma**2)
    ref = np.min(rdp - (np.log(delta) + np.log(a)) / (a - 1) + np.log((a - 1) / a))
    assert fiber.epsilon_spent(sigma, 1.0, T, delta) == pytest.approx(ref, rel=1e-9)
    with pytest.raises(ValueError, match="epsilon"):
        fiber.noise_for_epsilon(0.0, delta, q, T)
    with pytest.raises(ValueError, match="sample_rate"):
        fiber.noise_for_epsilon(1.0, delta, 1.5, T)


# --------------------------------------------------------------------------- training


def test_train_private_is_deterministic_and_private():
    data = fiber.load_tabular("breast_cancer", random_state=0)
    kw = dict(noise_multiplier=1.0, epochs=1, batch_size=64, random_state=5)
    r1 = fiber.train_private(data, "FIBER", **kw)
    r2 = fiber.train_private(data, "FIBER", **kw)
    assert r1.test_acc == r2.test_acc and r1.acc_curve == r2.acc_curve
    assert 0.0 < r1.epsilon < math.inf and r1.steps == math.ceil(1 / (64 / data.X_train.shape[0]))
    assert r1.noise_std == pytest.approx(1.0 / 64)


def test_data_errors():
    with pytest.raises(ValueError, match="name='mnist'"):
        fiber.load_tabular("mnist")
    data = fiber.load_tabular("breast_cancer")
    with pytest.raises(ValueError, match="batch_size"):
        fiber.train_private(data, "FIBER", noise_multiplier=1.0, batch_size=0)
    val = fiber.validation_split(data, frac=0.25, random_state=0)
    assert val.X_train.shape[0] + val.X_test.shape[0] == data.X_train.shape[0]


def test_select_hyperparameters_picks_best_validation_config():
    data = fiber.validation_split(fiber.load_tabular("breast_cancer", random_state=0), random_state=0)
    best, table = fiber.select_hyperparameters(
        data,
        ["DP-AdamW", "FIBER"],
        epsilon=4.0,
        delta=1e-5,
        lr_grid=[1e-3, 3e-2],
        eps_v_grid=[1e-4],
        random_state=1,
        epochs=1,
        batch_size=64,
    )
    assert len(table) == 2 + 2  # DP-AdamW: lr only; FIBER: lr x eps_v
    for m, sub in table.groupby("method"):
        top = sub.sort_values(["val_acc", "val_loss"], ascending=[False, True]).iloc[0]
        assert best[m]["val_acc"] == top["val_acc"] and best[m]["lr"] == top["lr"]


def test_dp_step_fn_updates_parameters_and_rejects_unknown_method():
    model, x, y = _toy(5, n=8)
    before = [p.detach().clone() for p in model.parameters()]
    step = fiber.dp_step_fn("FIBER", model, x, y, noise_multiplier=1.0, random_state=0)
    step()
    step()
    assert any(not torch.equal(b, p.detach()) for b, p in zip(before, model.parameters()))
    with pytest.raises(ValueError, match="method='SGD'"):
        fiber.dp_step_fn("SGD", model, x, y, noise_multiplier=1.0)
