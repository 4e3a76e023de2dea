"""The per-step and training fast paths of icml26.movingout against their plain (checked, module-call) forms, bit for bit.

Each fast path must compute the same numbers as the form it replaced (issue 26: faster
without changing what is computed), so every comparison here is exact equality.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from icml26.movingout import bass, bc, partners
from icml26.movingout import env as mo

torch.set_num_threads(1)


def _states(n=300, seed=0):
    """Random states plus the goal zone's bounds and their float32 neighbours in every box coordinate."""
    rng = np.random.default_rng(seed)
    m = max(n, 12)
    o = rng.uniform(0, 1, (m, 12)).astype(np.float32)
    o[:, [2, 3, 6, 7]] = rng.uniform(-1, 1, (m, 4))
    edges = []
    for v in mo.GOAL:
        f = np.float32(v)
        edges += [np.nextafter(f, np.float32(-1)), f, np.nextafter(f, np.float32(2))]
    e = np.array(edges, dtype=np.float32)
    k = len(e)
    o[:k, 8], o[:k, 9], o[:k, 10], o[:k, 11] = e, e[::-1], e, np.roll(e, 3)
    return o[rng.permutation(m)[:n]]


def test_numpy_features_equal_the_torch_features_bit_for_bit():
    o = _states()
    flags = bc.policy_features(torch.from_numpy(o)).numpy()
    assert np.array_equal(bc._features_np(o), flags)
    assert flags[:, 20:].min() == 0 and flags[:, 20:].max() == 1  # both sides of the zone's bounds are exercised


def test_policy_unchecked_passes_equal_forward_sample_and_mode():
    torch.manual_seed(0)
    pol = bc.MixtureDensityPolicy(12, 2, 4, 32)
    o = _states(50, seed=1)
    ref = pol(torch.from_numpy(o))
    for a, b in zip(pol._heads_np(o), ref, strict=True):
        assert torch.equal(a, b)
    # sample and mode against the plain forms: the module call, then the same draws
    for x in o[:10]:
        g1, g2 = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
        logits, mu, log_sd = pol(torch.as_tensor(np.atleast_2d(x), dtype=torch.float32))
        with torch.no_grad():
            comp = torch.multinomial(torch.softmax(logits, -1), 4, replacement=True, generator=g2)
            idx = comp[..., None].expand(1, 4, 2)
            old = torch.gather(mu, 1, idx) + torch.gather(log_sd.exp(), 1, idx) * torch.randn((1, 4, 2), generator=g2)
            old_mode = mu[torch.arange(1), logits.argmax(-1)].numpy()
        assert np.array_equal(pol.sample(x, 4, g1), old.clamp(-1, 1).numpy())
        assert np.array_equal(pol.mode(x[None]), old_mode)


@pytest.mark.parametrize("use_partner", [True, False])
def test_dynamics_unchecked_preview_equals_forward(use_partner):
    torch.manual_seed(1)
    m = bass.DynamicsModel(use_partner=use_partner, hidden=32)
    m.scale.copy_(torch.linspace(0.5, 2.0, 12))
    rng = np.random.default_rng(2)
    o = _states(8, seed=2)
    a = rng.uniform(-1, 1, (8, 2)).astype(np.float32)
    p = rng.uniform(-1, 1, (8, 2)).astype(np.float32)
    with torch.no_grad():
        ref = m(o, a, p if use_partner else None).numpy()
        assert np.array_equal(m._predict_np(o, a, p if use_partner else None), ref)


def _old_act(agent, o, gen):
    """BassAgent.act as it was written before the fast paths (public, checked calls)."""
    if agent.dynamics is None:
        return agent.policy.sample(o, 1, gen)[0, 0].astype(np.float32)
    cand = agent.policy.sample(o, agent.k, gen)[0]
    pa = None
    if agent.dynamics.use_partner:
        pa = np.repeat(agent.partner_model.mode(mo.swap_view(o)[None]), agent.k, 0)
    with torch.no_grad():
        pred = agent.dynamics(np.repeat(o[None], agent.k, 0), cand, pa).numpy()
    score = bass.box_goal_score(pred)
    best = int(np.argmax(score)) if score.max() - score.min() > agent.tie_tol else 0
    return cand[best].astype(np.float32)


@pytest.mark.parametrize("kind", ["bc", "selection", "single"])
def test_agent_act_equals_the_plain_form(kind):
    torch.manual_seed(2)
    pol, partner_model = bc.MixtureDensityPolicy(12, 2, 3, 16), bc.MixtureDensityPolicy(12, 2, 3, 16)
    dyn = {"bc": None, "selection": bass.DynamicsModel(True, 16), "single": bass.DynamicsModel(False, 16)}[kind]
    agent = bass.BassAgent(pol, dyn, partner_model if kind == "selection" else None, n_candidates=4, tie_tol=0.0)
    agent.reset(7)
    gen = torch.Generator().manual_seed(7)
    for x in _states(40, seed=3):
        assert np.array_equal(agent.act(x), _old_act(agent, x, gen))
    if dyn is not None:
        g1, g2 = torch.Generator().manual_seed(5), torch.Generator().manual_seed(5)
        x = _states(1, seed=4)[0]
        cand = pol.sample(x, 4, g2)[0]
        pa = np.repeat(partner_model.mode(mo.swap_view(x)[None]), 4, 0) if kind == "selection" else None
        with torch.no_grad():
            s = bass.box_goal_score(dyn(np.repeat(x[None], 4, 0), cand, pa).numpy())
        assert agent.score_spread(x, g1) == float(s.max() - s.min())


def test_env_c_calls_equal_the_public_pymunk_calls():
    """An episode through pymunk's C calls equals the same episode through its public API (obs, contacts, info)."""
    runs = []
    for fast in (True, False):
        e = mo.MovingOutEnv(partners.ScriptedPartner(partners.SEEN_STYLES[3]), max_steps=60)
        o, _ = e.reset(seed=4)
        rng = np.random.default_rng(0)
        obs, infos = [o], []
        for _ in range(60):
            if not fast:
                e._c = None  # the public path
            o, r, term, trunc, info = e.step(partners.demonstrator_action(o, rng, 0.1))
            obs.append(o)
            infos.append((r, info["ego_holds"], info["partner_holds"], info["heavy_moved"], info["nfd"]))
            if term or trunc:
                break
        runs.append((np.array(obs), infos, e.n_box_hits, e.get_state()))
    assert np.array_equal(runs[0][0], runs[1][0]) and runs[0][1] == runs[1][1]
    assert runs[0][2] == runs[1][2] and np.array_equal(runs[0][3], runs[1][3])
    assert any(i[3] for i in runs[0][1])  # the heavy box moved: the kinematic branch was exercised


def _old_fit_policy(x, y, epochs, batch_size, seed):
    torch.manual_seed(seed)
    policy = bc.MixtureDensityPolicy(x.shape[1], y.shape[1], 4, 16)
    opt = torch.optim.Adam(policy.parameters(), lr=3e-3)
    gen = torch.Generator().manual_seed(seed)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    for _ in range(epochs):
        perm = torch.randperm(len(xt), generator=gen)
        for i in range(0, len(xt), batch_size):
            b = perm[i : i + batch_size]
            loss = -policy.log_prob(xt[b], yt[b]).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    return policy


def _old_fit_dynamics(data, use_partner, epochs, batch_size, seed):
    x, a, p, y = (torch.as_tensor(data[k]) for k in ("obs", "act", "partner_act", "next_obs"))
    torch.manual_seed(seed)
    model = bass.DynamicsModel(use_partner, 16)
    delta = y - x
    model.scale.copy_(delta.std(0).clamp_min(1e-3))
    target = delta / model.scale
    opt = torch.optim.Adam(model.net.parameters(), lr=2e-3)
    gen = torch.Generator().manual_seed(seed)
    for _ in range(epochs):
        perm = torch.randperm(len(x), generator=gen)
        for i in range(0, len(x), batch_size):
            b = perm[i : i + batch_size]
            inp = [x[b], a[b]] + ([p[b]] if use_partner else [])
            loss = ((model.net(torch.cat(inp, 1)) - target[b]) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    return model


def test_training_with_inputs_built_once_equals_the_per_batch_form():
    d = bass.stack_transitions(bass.collect_demos(partners.SEEN_STYLES[:2], 2, random_state=0))
    new = bc.fit_mdn_policy(d["obs"], d["act"], hidden=16, epochs=3, batch_size=64, random_state=3)
    old = _old_fit_policy(d["obs"], d["act"], 3, 64, 3)
    for k, v in old.state_dict().items():
        assert torch.equal(new.state_dict()[k], v), k
    for use_partner in (True, False):
        new = bass.fit_dynamics(d, use_partner=use_partner, hidden=16, epochs=3, batch_size=64, random_state=3)
        old = _old_fit_dynamics(d, use_partner, 3, 64, 3)
        for k, v in old.state_dict().items():
            assert torch.equal(new.state_dict()[k], v), k
