"""Tests of icml26.movingout (chapter 11): the pymunk game behind gymnasium, partners, BC and BASS."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium.utils.env_checker import check_env
from torch import nn

from icml26.movingout import bass, bc, partners
from icml26.movingout import env as mo

torch.set_num_threads(1)
H = mo.HEAVY_HALF + mo.AGENT_RADIUS + 0.002


class ConstantPartner:
    """A reader-style partner: act(partner_obs) -> action."""

    def __init__(self, action):
        self.action = np.asarray(action, dtype=np.float32)

    def act(self, obs):
        return self.action


class PlannerAgent:
    """A reader-style ego policy: act(obs) -> action."""

    def act(self, obs):
        return partners.demonstrator_action(obs)


def _moved(ego, partner, ego_cmd, partner_cmd, *, agreement=0.5, steps=10, light=(0.3, 0.25), heavy=(0.5, 0.6)):
    e = mo.MovingOutEnv(ConstantPartner(partner_cmd), agreement=agreement)
    e.reset(seed=0)
    e.set_state(np.array([*ego, 0, 0, *partner, 0, 0, *light, *heavy]))
    s0 = e.get_state()
    for _ in range(steps):
        e.step(np.asarray(ego_cmd, dtype=np.float32))
    s1 = e.get_state()
    return np.linalg.norm(s1[8:10] - s0[8:10]), s1[10:12] - s0[10:12]


# ----------------------------------------------------------------------------- gymnasium


def test_gymnasium_env_checker_passes_with_warnings_as_errors():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(mo.MovingOutEnv(), skip_render_check=True)
        gym.register(id="icml26/MovingOut-v0", entry_point="icml26.movingout.env:MovingOutEnv", max_episode_steps=120)
        try:
            check_env(gym.make("icml26/MovingOut-v0", render_mode="rgb_array").unwrapped)
        finally:
            gym.registry.pop("icml26/MovingOut-v0", None)


def test_render_is_an_rgb_image_with_the_agents_drawn():
    e = mo.MovingOutEnv(render_mode="rgb_array", render_size=64)
    e.reset(seed=1)
    img = e.render()
    assert img.shape == (64, 64, 3) and img.dtype == np.uint8
    assert ((img == (40, 90, 220)).all(-1)).any() and ((img == (220, 50, 50)).all(-1)).any()
    assert mo.MovingOutEnv().render() is None


# ----------------------------------------------------------------------------- physics oracles


def test_one_agent_moves_the_light_box():
    light, heavy = _moved((0.3 - 0.068, 0.25), (0.1, 0.9), (1, 0), (0, 0))
    assert light > 0.1 and np.all(heavy == 0)


def test_one_agent_cannot_move_the_heavy_box():
    _, heavy = _moved((0.5 - H, 0.6), (0.1, 0.9), (1, 0), (0, 0))
    assert np.all(heavy == 0)


def test_two_agents_in_agreement_move_the_heavy_box_at_the_closed_form_speed():
    _, heavy = _moved((0.5 - H, 0.56), (0.5 - H, 0.64), (1, 0), (1, 0), steps=10)
    expected = 10 * mo.CONTROL_DT * mo.HEAVY_GAIN * mo.MAX_SPEED  # v = g * mean command, 10 steps of 0.1 s
    assert heavy[0] == pytest.approx(expected, abs=1e-9) and abs(heavy[1]) < 1e-9


@pytest.mark.parametrize("angle_deg, tau, moves", [(40, 0.5, True), (40, 0.8, False), (30, 0.8, True), (75, 0.5, False)])
def test_agreement_threshold_gates_the_heavy_box(angle_deg, tau, moves):
    c = [np.cos(np.radians(angle_deg)), np.sin(np.radians(angle_deg))]
    _, heavy = _moved((0.5 - H, 0.56), (0.5 - H, 0.64), (1, 0), c, agreement=tau, steps=1)
    assert (np.linalg.norm(heavy) > 1e-3) == moves


def test_pulling_away_does_not_move_the_heavy_box():
    _, heavy = _moved((0.5 - H, 0.56), (0.5 - H, 0.64), (-1, 0), (-1, 0), steps=3)
    assert np.all(heavy == 0)


def test_nfd_and_goal_distance_closed_form():
    assert mo.goal_distance(np.array([0.5, 0.5])) == pytest.approx(0.25)
    assert mo.goal_distance(np.array([0.7, 0.1])) == pytest.approx(np.hypot(0.05, 0.1))
    assert mo.goal_distance(np.array([0.9, 0.5])) == 0 and mo.box_in_goal(np.array([0.9, 0.5]))
    s0 = np.zeros(12)
    s0[8:12] = [0.5, 0.5, 0.45, 0.5]  # distances 0.25 + 0.30
    s1 = s0.copy()
    s1[8:12] = [0.9, 0.5, 0.6, 0.5]  # 0 + 0.15
    assert mo.normalised_final_distance(s1, s0) == pytest.approx(1 - 0.15 / 0.55)
    assert mo.normalised_final_distance(s0, s0) == 0.0


def test_swap_view_is_an_involution():
    o = np.arange(12.0)
    assert np.array_equal(mo.swap_view(mo.swap_view(o)), o)
    assert np.array_equal(mo.swap_view(o)[:4], o[4:8])


# ----------------------------------------------------------------------------- determinism and plug-in


def test_same_seed_replays_the_same_episode_step_by_step():
    def play():
        e = mo.MovingOutEnv(partners.ScriptedPartner(partners.UNSEEN_STYLES[2]))
        o, _ = e.reset(seed=7)
        rng = np.random.default_rng(7)
        trace = [o]
        for _ in range(50):
            o, r, term, trunc, info = e.step(partners.demonstrator_action(o, rng, 0.2))
            trace.append(np.concatenate([o, info["partner_action"], [r]]))
        return trace

    a, b = play(), play()
    assert len(a) == len(b)
    for t, (x, y) in enumerate(zip(a, b, strict=True)):
        assert np.array_equal(x, y), f"episodes differ at step {t}"
    e = mo.MovingOutEnv()
    assert not np.array_equal(e.reset(seed=1)[0], e.reset(seed=2)[0])


def test_reader_policy_and_partner_plug_in_through_the_gymnasium_api():
    e = mo.MovingOutEnv(ConstantPartner([0.0, 0.0]))
    r = bass.rollout_episode(e, PlannerAgent(), seed=0)
    assert r["steps"] == len(r["actions"]) == len(r["obs"]) - 1 and 0 <= r["nfd"] <= 1 and 0 <= r["wait"] <= 1
    assert not r["success"]  # the heavy box cannot move with an idle partner
    r2 = bass.rollout_episode(mo.MovingOutEnv(partners.ScriptedPartner(partners.SEEN_STYLES[0])), PlannerAgent(), seed=0)
    assert r2["success"] and r2["nfd"] == 1.0


def test_planner_succeeds_with_most_seen_partners():
    wins = [bass.rollout_episode(mo.MovingOutEnv(partners.ScriptedPartner(s)), PlannerAgent(), seed=k)["success"]
            for s in partners.SEEN_STYLES for k in range(2)]
    assert np.mean(wins) >= 0.75


# ----------------------------------------------------------------------------- BC (mixture density) against torch.distributions


def test_mdn_log_prob_matches_torch_distributions():
    torch.manual_seed(0)
    pol = bc.MixtureDensityPolicy(12, 2, 3, 16)
    obs, act = torch.rand(7, 12), torch.rand(7, 2) * 2 - 1
    logits, mu, log_sd = pol(obs)
    ref = torch.distributions.MixtureSameFamily(
        torch.distributions.Categorical(logits=logits),
        torch.distributions.Independent(torch.distributions.Normal(mu, log_sd.exp()), 1),
    ).log_prob(act)
    assert torch.allclose(pol.log_prob(obs, act), ref, atol=1e-5)


def test_mdn_learns_a_bimodal_action_distribution():
    rng = np.random.default_rng(0)
    obs = rng.uniform(0, 1, size=(600, 12)).astype(np.float32)
    act = np.where(rng.uniform(size=(600, 1)) < 0.5, [[0.6, 0.0]], [[-0.6, 0.0]]) + rng.normal(0, 0.05, (600, 2))
    pol = bc.fit_mdn_policy(obs, act, epochs=30, batch_size=100, random_state=0)
    s = pol.sample(obs[:1], 400, torch.Generator().manual_seed(0))[0]
    assert 0.3 < (s[:, 0] > 0).mean() < 0.7 and np.abs(np.abs(s[:, 0]) - 0.6).mean() < 0.15


# ----------------------------------------------------------------------------- BASS parts


@pytest.fixture(scope="module")
def demos():
    return bass.collect_demos(partners.SEEN_STYLES, 12, random_state=0)


def test_partner_pose_noise_moves_only_the_partner(demos):
    o = bass.stack_transitions(demos)["obs"]
    n = bass.partner_pose_noise(o, 0.02, copies=2, random_state=0)
    assert n.shape == (2 * len(o), 12)
    diff = n - np.tile(o, (2, 1))
    assert np.all(diff[:, [0, 1, 2, 3, 6, 7, 8, 9, 10, 11]] == 0)
    inside = (np.tile(o, (2, 1))[:, 4:6] > 0.1).all(1) & (np.tile(o, (2, 1))[:, 4:6] < 0.9).all(1)
    assert np.std(diff[inside, 4:6]) == pytest.approx(0.02, rel=0.1)


def test_recombined_segments_are_valid_replays(demos):
    rec = bass.recombine_demos(demos, eps_pose=0.03, seg_len=8, n_max=10, random_state=0)
    assert rec, "no recombination found"
    src = {d.style for d in demos}
    for r in rec:
        a, b = r.style.split("+")
        assert a != b and a in src and b in src
        assert r.obs.shape == (9, 12) and r.act.shape == (8, 2) and r.partner_act.shape == (8, 2)
        # the stored states are a replay in the physics: replaying again reproduces them
        e = mo.MovingOutEnv(bass._Replay(r.partner_act))
        o = e.set_state(r.obs[0].astype(float))
        for t in range(8):
            o, *_ = e.step(r.act[t])
            assert np.allclose(o[[0, 1, 4, 5, 8, 9, 10, 11]], r.obs[t + 1][[0, 1, 4, 5, 8, 9, 10, 11]], atol=1e-5)


def test_dynamics_model_beats_the_no_change_baseline(demos):
    d = bass.stack_transitions(demos)
    m = bass.fit_dynamics(d, epochs=30, random_state=0)
    with torch.no_grad():
        pred = m(d["obs"], d["act"], d["partner_act"]).numpy()
    assert np.mean((pred - d["next_obs"]) ** 2) < 0.5 * np.mean((d["obs"] - d["next_obs"]) ** 2)
    single = bass.fit_dynamics(d, use_partner=False, epochs=2, random_state=0)
    assert single(d["obs"][:3], d["act"][:3]).shape == (3, 12)


def _linear_dynamics(use_partner=True):
    """A dynamics model whose preview moves the heavy box by +0.1 * ego action x (an oracle)."""
    m = bass.DynamicsModel(use_partner=use_partner)
    n_in = 16 if use_partner else 14
    lin = nn.Linear(n_in, 12, bias=False)
    with torch.no_grad():
        lin.weight.zero_()
        lin.weight[10, 12] = 0.1
    m.net = lin
    return m.eval()


def test_preview_and_pick_selects_the_best_candidate_by_brute_force():
    pol = bc.MixtureDensityPolicy(12, 2, 2, 8)
    partner_model = bc.MixtureDensityPolicy(12, 2, 2, 8)
    agent = bass.BassAgent(pol, _linear_dynamics(), partner_model, n_candidates=6, random_state=3)
    o = np.zeros(12, dtype=np.float32)
    o[[0, 1, 4, 5, 8, 9, 10, 11]] = [0.2, 0.5, 0.2, 0.7, 0.4, 0.3, 0.45, 0.6]
    chosen = agent.act(o)
    cands = pol.sample(o, 6, torch.Generator().manual_seed(3))[0]
    assert np.allclose(chosen, cands[np.argmax(cands[:, 0])])  # heavy box furthest right is closest to the goal
    plain = bass.BassAgent(pol, random_state=3)
    assert np.allclose(plain.act(o), pol.sample(o, 1, torch.Generator().manual_seed(3))[0, 0])
    single = bass.BassAgent(pol, _linear_dynamics(False), n_candidates=6, random_state=3)
    assert np.allclose(single.act(o), chosen)


def test_trained_suite_and_paired_evaluation_are_reproducible(demos):
    m = bass.fit_bass_models(demos[:6], epochs=2, n_recombine=4, random_state=0)
    assert {"policy", "policy_aug", "partner", "dynamics", "dynamics_aug", "dynamics_single"} <= set(m)
    ag = bass.comparison_agents(m)
    r1 = bass.evaluate_agents({"BASS": ag["BASS"], "BC": ag["BC"]}, partners.UNSEEN_STYLES[:1], 1, max_steps=15, seed=0)
    r2 = bass.evaluate_agents({"BASS": ag["BASS"], "BC": ag["BC"]}, partners.UNSEEN_STYLES[:1], 1, max_steps=15, seed=0)
    assert r1 == r2 and len(r1) == 2 and all(r["steps"] == 15 for r in r1)


def test_styles_seen_and_held_out_are_disjoint():
    assert len(partners.SEEN_STYLES) == 6 and len(partners.UNSEEN_STYLES) == 3
    assert not {s.name for s in partners.SEEN_STYLES} & {s.name for s in partners.UNSEEN_STYLES}
    assert partners.push_target(np.array([0.4, 0.9]))[1] == pytest.approx(mo.GOAL[3] - 0.12)


def test_policy_features_closed_form():
    o = torch.tensor([[0.1, 0.2, 0, 0, 0.3, 0.5, 0, 0, 0.9, 0.5, 0.4, 0.6]])
    f = bc.policy_features(o)[0]
    assert f.shape == (22,)
    assert torch.allclose(f[12:20], torch.tensor([0.3, 0.4, 0.8, 0.3, 0.1, 0.1, 0.2, 0.3]))
    assert f[20] == 0 and f[21] == 1  # heavy box outside, light box inside the goal zone
