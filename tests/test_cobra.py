"""Tests of icml26.cobra: conductance against captum and closed forms, TA-LC, allocation under a budget, peft wiring."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from icml26 import cobra as C

captum_attr = pytest.importorskip("captum.attr")


def _mlp(seed: int = 0) -> torch.nn.Sequential:
    torch.manual_seed(seed)
    return torch.nn.Sequential(
        torch.nn.Linear(5, 7), torch.nn.Tanh(), torch.nn.Linear(7, 6), torch.nn.Tanh(), torch.nn.Linear(6, 3)
    ).double()


@pytest.mark.parametrize("layer_index", [0, 1, 2, 3])
def test_conductance_equals_captum_on_the_same_inputs(layer_index):
    net = _mlp()
    x = torch.randn(6, 5, dtype=torch.float64)
    base = 0.3 * torch.randn(1, 5, dtype=torch.float64)
    target = torch.tensor([0, 1, 2, 0, 1, 2])
    ref = captum_attr.LayerConductance(net, net[layer_index]).attribute(
        x, baselines=base.expand_as(x), target=target, n_steps=24, method="riemann_trapezoid"
    )
    ours = C.layer_conductance(net, net[layer_index], x, base, target=target, n_steps=24)
    assert ours.shape == ref.shape
    assert torch.allclose(ours, ref, atol=1e-12, rtol=0)


def test_conductance_of_a_linear_layer_in_a_linear_network_is_closed_form():
    # F(x) = w2 . (W1 x + b1) + b2; conductance of unit j of h = W1 x + b1 is w2_j (W1 (x - x'))_j, exactly
    torch.manual_seed(1)
    lin1, lin2 = torch.nn.Linear(4, 3).double(), torch.nn.Linear(3, 1).double()
    net = torch.nn.Sequential(lin1, lin2)
    x = torch.randn(5, 4, dtype=torch.float64)
    xb = torch.randn(5, 4, dtype=torch.float64)
    ours = C.layer_conductance(net, lin1, x, xb, n_steps=3)
    exact = lin2.weight[0].detach() * ((x - xb) @ lin1.weight.detach().T)
    assert torch.allclose(ours, exact, atol=1e-12)


def test_completeness_within_two_percent_for_a_layer_that_cuts_the_network():
    net = _mlp(2)
    x = torch.randn(16, 5, dtype=torch.float64)
    with torch.no_grad():
        delta = net(x)[:, 1] - net(torch.zeros_like(x))[:, 1]
    for layer in (net[0], net[1], net[2]):
        total = C.layer_conductance(net, layer, x, target=1, n_steps=200).sum(1)
        rel = ((total - delta).abs() / delta.abs()).max()
        assert rel < 0.02, float(rel)


def test_layer_contributions_match_the_per_layer_conductance():
    net = _mlp(3)
    x = torch.randn(10, 5, dtype=torch.float64)
    layers = {"a": net[1], "b": net[3]}
    got = C.layer_contributions(net, layers, x, target="all", n_steps=8, batch_size=3)
    want = [
        sum(float(C.layer_conductance(net, m, x, target=t, n_steps=8).abs().sum()) for t in range(3)) / 10
        for m in layers.values()
    ]
    np.testing.assert_allclose(got, want, rtol=1e-10)


def test_ta_lc_endpoints_and_geometric_mean():
    c, g = np.array([1.0, 2.0, 7.0]), np.array([5.0, 3.0, 2.0])
    np.testing.assert_allclose(C.ta_lc(c, g, 1.0), c / c.sum())
    np.testing.assert_allclose(C.ta_lc(c, g, 0.0), g / g.sum())
    mid = np.sqrt(c / c.sum() * g / g.sum())
    np.testing.assert_allclose(C.ta_lc(c, g, 0.5), mid / mid.sum())


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    dims=st.lists(st.tuples(st.integers(1, 300), st.integers(1, 300)), min_size=1, max_size=12),
    extra=st.integers(0, 5000),
    weights=st.lists(st.floats(0.0, 10.0), min_size=12, max_size=12),
    min_rank=st.integers(0, 2),
)
def test_largest_remainder_never_exceeds_the_budget(dims, extra, weights, min_rank):
    costs = np.array([a + b for a, b in dims])
    mx = np.array([max(min(a, b), 2) for a, b in dims])
    budget = int(costs.sum() * min_rank + extra) or 1
    w = np.array(weights[: len(dims)]) + 1e-3
    targets = w / w.sum() * budget / costs * 1.5  # deliberately over-asks
    r = C.largest_remainder_ranks(targets, costs, budget, min_rank=min_rank, max_ranks=mx)
    assert int((r * costs).sum()) <= budget
    assert np.all(r >= min_rank) and np.all(r <= mx)
    s = C.share_ranks(w, costs, budget, min_rank=min_rank, max_ranks=mx)
    assert int((s * costs).sum()) <= budget and np.all(s >= min_rank)


def test_largest_remainder_keeps_integral_targets_and_fills_by_remainder():
    costs = np.array([10, 10, 10])
    np.testing.assert_array_equal(C.largest_remainder_ranks([2, 3, 1], costs, 60), [2, 3, 1])
    # targets 1.6, 1.3, 3.1 with budget 60: floors 1, 1, 3 (50), one more rank to the largest remainder
    np.testing.assert_array_equal(C.largest_remainder_ranks([1.6, 1.3, 3.1], costs, 60), [2, 1, 3])


def test_dirichlet_allocation_is_seeded_within_budget_and_follows_p():
    costs = np.array([96, 128, 128, 68])
    p = np.array([0.1, 0.5, 0.3, 0.1])
    a = C.dirichlet_rank_allocation(p, costs, 4 * costs.sum(), steps=60, random_state=3)
    b = C.dirichlet_rank_allocation(p, costs, 4 * costs.sum(), steps=60, random_state=3)
    np.testing.assert_array_equal(a.ranks, b.ranks)
    np.testing.assert_allclose(a.shares, b.shares)
    assert a.cost <= 4 * costs.sum() and a.cost == int((a.ranks * costs).sum())
    assert np.argmax(a.ranks) == 1 and a.ranks[1] > a.ranks[0]
    assert abs(a.shares.sum() - 1) < 1e-12 and np.all(np.isfinite(a.elbo))
    flat = C.dirichlet_rank_allocation(np.ones(3), [50, 50, 50], 600, steps=50, random_state=0)
    np.testing.assert_array_equal(flat.ranks, [4, 4, 4])


def test_rank_pattern_survives_peft_first_match_rule():
    # names that are suffixes / prefixes of each other: "1" vs "11", "a.lin" vs "b.a.lin"
    inner = torch.nn.Module()
    inner.lin = torch.nn.Linear(8, 8)
    model = torch.nn.Module()
    model.a = torch.nn.Module()
    model.a.lin = torch.nn.Linear(8, 8)
    model.b = torch.nn.Module()
    model.b.a = inner
    model.seq = torch.nn.Sequential(*[torch.nn.Linear(8, 8) for _ in range(12)])
    ranks = {"a.lin": 2, "b.a.lin": 5, "seq.1": 3, "seq.11": 6}
    pm = C.make_lora_model(model, ranks, random_state=0)
    for name, r in ranks.items():
        mod = pm.base_model.model.get_submodule(name)
        assert mod.lora_A["default"].weight.shape == (r, 8), name
        assert mod.scaling["default"] == pytest.approx(2.0)
    assert C.lora_param_count(pm) == sum(16 * r for r in ranks.values())


def test_adalora_wraps_and_counts_active_ranks():
    net = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    pm = C.make_adalora_model(net, ["0", "2"], target_r=2, init_r=4, total_step=20, random_state=0)
    assert C.lora_param_count(pm) == 0  # peft starts the singular values at zero: no rank is active yet
    with torch.no_grad():
        for name, p in pm.named_parameters():
            if "lora_E" in name:
                p.fill_(1.0)
    assert C.lora_param_count(pm) == 4 * (6 + 8 + 1) + 4 * (8 + 2 + 1)


def test_the_linear_schedule_warms_up_and_decays_to_zero():
    task = C.highrank_regression_task([0, 1], d_in=4, width=6, d_out=2, n_train=64, n_test=8, random_state=0)

    def loss(m, xb, yb):
        return ((m(xb) - yb) ** 2).mean()

    runs = {}
    for schedule in ("constant", "linear"):
        pm = C.make_lora_model(task.base, dict.fromkeys(task.layer_names, 1), random_state=0)
        runs[schedule] = C.train_lora(
            pm, loss, task.X_train, task.y_train, steps=50, lr=1e-2, batch_size=16, schedule=schedule, random_state=0
        )["loss"]
    assert runs["constant"][0] == runs["linear"][0]  # the same first batch and model
    assert not np.array_equal(runs["constant"], runs["linear"])  # the rate differs from the first step on


def test_adalora_defaults_are_the_authors_glue_settings():
    net = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    pm = C.make_adalora_model(net, ["0", "2"], target_r=2, init_r=3, total_step=100, random_state=0)
    cfg = pm.peft_config["default"]
    assert (cfg.tinit, cfg.tfinal, cfg.deltaT) == (12, 49, 1)
    assert (cfg.orth_reg_weight, cfg.beta1, cfg.beta2) == (0.1, 0.85, 0.85)
    mod = pm.base_model.model.get_submodule("0")
    assert mod.scaling["default"] == pytest.approx(32.0)  # lora_alpha; peft divides by the initial rank
    # task A's loss adds the penalty with the model's own weight, as peft does for a loss output
    x, y = torch.randn(4, 6), torch.randn(4, 2)
    assert torch.allclose(C._mse_orth(pm, x, y), C._mse(pm, x, y) + 0.1 * C.adalora_orth_penalty(pm))


def test_train_lora_reduces_the_loss_and_records_gradients():
    task = C.highrank_regression_task([0, 3, 1], d_in=6, width=8, d_out=2, n_train=256, n_test=64, random_state=0)
    pm = C.make_lora_model(task.base, dict.fromkeys(task.layer_names, 2), random_state=0)

    def loss(m, xb, yb):
        return ((m(xb) - yb) ** 2).mean()

    out = C.train_lora(
        pm, loss, task.X_train, task.y_train, steps=80, lr=1e-2, batch_size=64, record_grad_norms=True, random_state=0
    )
    assert out["loss"][-10:].mean() < out["loss"][:10].mean()
    assert set(out["grad_norms"]) == set(task.layer_names)
    g, warm = C.lora_gradient_demand(task.base, task.layer_names, loss, task.X_train, task.y_train, steps=5, random_state=1)
    assert g.shape == (3,) and np.all(g > 0)


def test_regression_task_plants_the_requested_ranks():
    task = C.highrank_regression_task([2, 0, 5, 1], d_in=10, width=12, d_out=3, n_train=8, n_test=4, random_state=4)
    target = task.extra["target"]
    for i, name in enumerate(task.layer_names):
        dW = target.get_submodule(name).weight - task.base.get_submodule(name).weight
        assert np.linalg.matrix_rank(dW.double().numpy(), tol=1e-4) == task.true_ranks[i]
    np.testing.assert_array_equal(task.costs, [22, 24, 24, 15])


def test_encoder_task_is_small_and_labelled():
    task = C.marker_encoder_task(
        vocab=12, seq_len=6, hidden=16, layers=1, heads=2, pretrain_steps=2, n_corpus=32, n_train=40, n_test=20, random_state=0
    )
    assert task.X_train.shape == (40, 7) and set(task.y_train.tolist()) <= {0, 1}
    assert len(task.module_names) == 6 and task.costs.tolist()[0] == 32
    assert not any(p.requires_grad for p in task.model.parameters())


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    dims=st.lists(st.tuples(st.integers(1, 300), st.integers(1, 300)), min_size=1, max_size=12),
    extra=st.integers(0, 5000),
    weights=st.lists(st.floats(0.0, 10.0), min_size=12, max_size=12),
    min_rank=st.integers(0, 2),
)
def test_largest_remainder_leaves_less_than_one_rank_unspent(dims, extra, weights, min_rank):
    costs = np.array([a + b for a, b in dims])
    mx = np.array([max(min(a, b), 2) for a, b in dims])
    budget = int(costs.sum() * min_rank + extra) or 1
    w = np.array(weights[: len(dims)]) + 1e-3
    r = C.share_ranks(w, costs, budget, min_rank=min_rank, max_ranks=mx)
    left = budget - int((r * costs).sum())
    grow = r < mx
    assert left >= 0
    if grow.any():
        assert left < costs[grow].min()


def test_largest_remainder_spends_what_clipping_to_min_rank_left():
    # targets 0.1, 0.1, 2.5: the floors clip to 1, 1, 2 (220 of 250); the third layer's
    # remainder does not fit (100 > 30), so the 30 left go to the two small layers
    r = C.largest_remainder_ranks([0.1, 0.1, 2.5], [10, 10, 100], 250)
    np.testing.assert_array_equal(r, [3, 2, 2])
    assert 250 - int((r * np.array([10, 10, 100])).sum()) < 10


def test_dirichlet_stage_can_move_away_from_p_and_the_prior_pulls_it_back():
    costs = np.array([96, 128, 68])
    p = np.array([0.5, 0.3, 0.2])
    dev = [
        np.abs(C.dirichlet_rank_allocation(p, costs, 4 * costs.sum(), kappa=k, random_state=0).shares - p).max()
        for k in (0.5, 50.0, 5000.0)
    ]
    assert dev[0] > 0.03  # a weak prior: the posterior mean leaves p
    assert dev[2] < 0.005 and dev[0] > dev[1] > dev[2]


def test_task_contributions_equal_captum_on_the_task_loss():
    net = _mlp(5)
    x = torch.randn(7, 5, dtype=torch.float64)
    y = torch.randn(7, 3, dtype=torch.float64)

    def f(z, yy):
        return C.neg_squared_error(net(z), yy)

    layers = {"a": net[1], "b": net[2]}
    got = C.task_contributions(net, layers, x, y, C.neg_squared_error, n_steps=12, batch_size=3)
    want = [
        float(
            captum_attr.LayerConductance(f, m)
            .attribute(x, baselines=0.0, additional_forward_args=(y,), n_steps=12, method="riemann_trapezoid")
            .detach()
            .abs()
            .sum()
        )
        / 7
        for m in layers.values()
    ]
    np.testing.assert_allclose(got, want, rtol=1e-10)


def test_true_class_log_prob_is_minus_cross_entropy():
    z = torch.randn(5, 3)
    y = torch.tensor([0, 2, 1, 1, 0])
    torch.testing.assert_close(C.true_class_log_prob(z, y), -torch.nn.functional.cross_entropy(z, y, reduction="none"))


def _check_budgets(rows, costs, r0):
    budget = r0 * int(np.sum(costs))
    n = len(costs)
    by = {r["method"]: r for r in rows}
    assert set(by) >= {"uniform", *C.ALLOCATIONS, C.ADALORA, C.ADALORA_LOW}
    for m in ["uniform", *C.ALLOCATIONS]:
        assert by[m]["trained parameters"] == by[m]["final parameters"], m
        assert budget - min(costs) < by[m]["final parameters"] <= budget, (m, by[m], budget)
    ada = by[C.ADALORA]
    assert ada["trained parameters"] == (r0 + r0 // 2) * int(np.sum(np.asarray(costs) + 1))
    # pruned to r0 ranks per module on average, each costing d_in + d_out + 1
    assert r0 * n * (min(costs) + 1) <= ada["final parameters"] <= r0 * n * (max(costs) + 1)
    low = by[C.ADALORA_LOW]
    assert low["trained parameters"] == r0 * int(np.sum(np.asarray(costs) + 1))
    assert low["final parameters"] <= (r0 - 1) * n * (max(costs) + 1)


def test_every_method_is_counted_at_the_budget_in_task_a():
    out = C.regression_seed([0, 3, 1], r0=2, steps=12, warmup=3, cond_n=8, cond_steps=4, random_state=0)
    task = C.highrank_regression_task([0, 3, 1], random_state=0)
    _check_budgets(out["rows"], task.costs, 2)
    assert out["alloc"].keys() == C.ALLOCATIONS.keys()


def test_every_method_is_counted_at_the_budget_in_task_b():
    enc = C.marker_encoder_task(
        vocab=12,
        seq_len=6,
        hidden=16,
        layers=1,
        heads=2,
        pretrain_steps=2,
        n_corpus=32,
        n_train=40,
        n_test=20,
        rule="halves",
        random_state=0,
    )
    out = C.encoder_seed(enc, r0=2, steps=12, warmup=3, batch_size=16, cond_n=4, cond_steps=4, random_state=0)
    _check_budgets(out["rows"], enc.costs, 2)
    sub = C.encoder_seed(
        enc, r0=2, steps=12, warmup=3, batch_size=16, cond_n=4, cond_steps=4, methods=["uniform", C.ADALORA], random_state=0
    )
    assert [r["method"] for r in sub["rows"]] == ["uniform", C.ADALORA]


# --------------------------------------------------------------------------- performance paths (issue 26)


def _dirichlet_reference(p, costs, budget, *, kappa, steps=300, lr=0.05, n_samples=32, random_state=0):
    """The Dirichlet loop as it was written before the lean one: distribution objects and kl_divergence."""
    from icml26._common import seed_from

    pv = np.asarray(p, float) / np.sum(p)
    c = np.asarray(costs)
    gen = torch.Generator().manual_seed(seed_from(random_state))
    prior = torch.distributions.Dirichlet(torch.tensor(kappa * pv, dtype=torch.float64))
    pt = torch.tensor(pv, dtype=torch.float64)
    scale = torch.tensor(budget / c, dtype=torch.float64)
    log_eta = torch.tensor(np.log(kappa * pv), dtype=torch.float64, requires_grad=True)
    opt = torch.optim.Adam([log_eta], lr=lr)
    history = np.empty(steps)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(torch.randint(0, 2**31 - 1, (1,), generator=gen)))
        for s in range(steps):
            q = torch.distributions.Dirichlet(log_eta.exp())
            pi = q.rsample((n_samples,))
            lik = (pt * torch.log1p(pi * scale)).sum(1).mean()
            elbo = lik - torch.distributions.kl_divergence(q, prior)
            opt.zero_grad()
            (-elbo).backward()
            opt.step()
            history[s] = float(elbo.detach())
    return log_eta.detach().exp().numpy(), history


@pytest.mark.parametrize("kappa", [0.5, 50.0])
def test_dirichlet_allocation_is_bit_identical_to_the_distribution_loop(kappa):
    p, costs = np.array([0.5, 0.2, 0.3]), np.array([96, 128, 68])
    d = C.dirichlet_rank_allocation(p, costs, 2 * costs.sum(), kappa=kappa, steps=60, random_state=3)
    eta, hist = _dirichlet_reference(p, costs, 2 * costs.sum(), kappa=kappa, steps=60, random_state=3)
    assert np.array_equal(d.eta, eta)
    assert np.array_equal(d.elbo, hist)


@pytest.mark.parametrize("adalora", [False, True])
def test_lean_mlp_forward_and_loss_are_bit_identical_to_peft(adalora):
    task = C.highrank_regression_task([0, 2, 1], n_train=64, n_test=8, width=16, random_state=0)
    if adalora:
        m = C.make_adalora_model(task.base, task.layer_names, target_r=2, init_r=3, total_step=10, random_state=1)
    else:
        m = C.make_lora_model(task.base, {"0": 2, "2": 3, "4": 1}, random_state=1)
    with torch.no_grad():  # non-zero B (and E) so that the adapters take part
        for n, p in m.named_parameters():
            if "lora_" in n:
                p.copy_(torch.randn_like(p))
    fwd = C._peft_mlp_forward(m)
    assert fwd is not None
    x, y = task.X_train[:32], task.y_train[:32]
    assert torch.equal(fwd(x), m(x))
    plain = C._mse_orth if adalora else C._mse
    grads = []
    for loss_fn in (plain, C._regression_loss(m, adalora)):
        m.zero_grad()
        loss = loss_fn(m, x, y)
        loss.backward()
        grads.append((loss.detach(), [p.grad.clone() for p in m.parameters() if p.requires_grad]))
    assert torch.equal(grads[0][0], grads[1][0])
    assert all(torch.equal(a, b) for a, b in zip(grads[0][1], grads[1][1], strict=True))


def test_lean_mlp_forward_declines_a_model_it_does_not_know():
    net = _mlp().float()
    m = C.make_lora_model(net, {"0": 2, "2": 2}, random_state=0)  # the last Linear stays a plain Linear
    assert C._peft_mlp_forward(torch.nn.Linear(3, 3)) is None
    assert C._peft_mlp_forward(m) is None
    assert C._regression_loss(m, False) is C._mse
