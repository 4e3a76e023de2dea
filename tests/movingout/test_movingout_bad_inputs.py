"""Bad input to icml26.movingout: malformed actions (named, with the action space), bad states,
styles, shapes, NaN and wrong types give a clear ValueError/TypeError raised by icml26 itself."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from badinput import covers, rejects
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from icml26.movingout import bass, bc, partners
from icml26.movingout import env as mo

torch.set_num_threads(1)
FAST = settings(max_examples=20, deadline=None, derandomize=True)


class BadPartner:
    def act(self, obs):
        return np.array([0.0, 3.0])


@pytest.fixture(scope="module")
def env():
    e = mo.MovingOutEnv()
    e.reset(seed=0)
    return e


# ----------------------------------------------------------------------------- the bad input: a malformed action


@covers("movingout.env.MovingOutEnv")
def test_malformed_action_is_named_with_the_action_space(env):
    rejects(env.step, np.array([0.1, 0.2, 0.3]), match=r"action=.*not in the action space Box.*shape \(3,\)")
    rejects(env.step, np.array([np.nan, 0.0]), match=r"action=.*not in the action space.*not finite")
    rejects(env.step, np.array([2.0, 0.0]), match=r"action=array\(\[2\., 0\.\]\).*outside \[-1, 1\]")
    rejects(env.step, "left", match=r"action='left'.*not numeric")
    rejects(env.step, [[0.1, 0.2]], match=r"shape \(1, 2\)")


@FAST
@given(arrays(np.float64, st.integers(0, 4), elements=st.floats(allow_nan=True, allow_infinity=True)))
def test_hypothesis_actions_outside_the_space_are_rejected(a):
    e = mo.MovingOutEnv()
    e.reset(seed=0)
    if a.shape == (2,) and np.all(np.isfinite(a)) and np.all(np.abs(a) <= 1):
        e.step(a)
    else:
        rejects(e.step, a, match="action space")


def test_a_partner_with_a_malformed_action_is_named():
    e = mo.MovingOutEnv(BadPartner())
    e.reset(seed=0)
    rejects(e.step, np.zeros(2), match=r"partner action=.*outside")


def test_env_arguments_and_partner_type():
    rejects(mo.MovingOutEnv, heavy_mass=0.0, match="heavy_mass")
    rejects(mo.MovingOutEnv, heavy_half=0.5, match="heavy_half")
    rejects(mo.MovingOutEnv, max_steps=0, match="max_steps")
    rejects(mo.MovingOutEnv, substeps=2.5, match="substeps")
    rejects(mo.MovingOutEnv, render_mode="human", match="render_mode")
    rejects(mo.MovingOutEnv, object(), match="act")


def test_set_state_rejects_bad_states(env):
    rejects(env.set_state, np.zeros(5), match=r"shape \(12,\)")
    bad = np.full(12, 0.5)
    bad[0] = 1.5
    rejects(env.set_state, bad, match=r"\[0, 1\]")
    bad[0] = np.nan
    rejects(env.set_state, bad, match="finite")
    rejects(env.check_action, [1, 2, 3], match="action space")


def test_step_before_reset():
    with pytest.raises(RuntimeError, match="reset"):
        mo.MovingOutEnv().step(np.zeros(2))


@covers("movingout.env.push_displacements")
def test_holds_and_push_probe_inputs(env):
    rejects(env.holds, "light", match="who")
    rejects(mo.push_displacements, (0.1, 0.1), (0.2, 0.2), (2, 0), (0, 0), match="ego_cmd")
    rejects(mo.push_displacements, (0.1, 0.1), (0.2, 0.2), (0, 0), (0, np.nan), match="partner_cmd")
    rejects(mo.push_displacements, (0.1, 0.1), (0.2, 0.2), (0, 0), (0, 0), steps=0, match="steps")


@covers("movingout.env.box_inside_goal", "movingout.env.waiting_steps")
def test_delivery_and_waiting_inputs():
    rejects(mo.box_inside_goal, np.zeros(3), 0.07, match="length 2")
    rejects(mo.box_inside_goal, np.zeros(2), -0.1, match="half")
    rejects(mo.waiting_steps, np.zeros(3, bool), np.zeros(2, bool), match="same shape")


@covers("movingout.bass.ConstantAgent", "movingout.bass.run_comparison")
def test_calibration_inputs():
    pol = bc.MixtureDensityPolicy()
    rejects(bass.BassAgent(pol).calibrate, {"obs": np.zeros((2, 12)), "next_obs": np.zeros((2, 12))}, match="dynamics")
    rejects(bass.BassAgent(pol).score_spread, np.zeros(12), match="dynamics")
    agent = bass.BassAgent(pol, bass.DynamicsModel(use_partner=False))
    rejects(agent.calibrate, {"obs": np.zeros((2, 12))}, match="keys")
    rejects(agent.calibrate, {"obs": np.zeros((2, 12)), "next_obs": np.zeros((3, 12))}, match="equal shapes")
    rejects(agent.calibrate, {"obs": np.zeros((2, 12)), "next_obs": np.zeros((2, 12))}, quantile=0.0, match="quantile")
    rejects(bass.BassAgent, pol, tie_tol=-1.0, match="tie_tol")
    rejects(bass.ConstantAgent, [0.0, 2.0], match="action")
    rejects(bass.run_comparison, [], n_demos=2, epochs=1, episodes=1, max_steps=5, match="seeds")
    rejects(bass.run_comparison, [0], n_demos=0, epochs=1, episodes=1, max_steps=5, match="n_demos")


@covers(
    "movingout.env.goal_distance",
    "movingout.env.box_in_goal",
    "movingout.env.normalised_final_distance",
    "movingout.env.swap_view",
)
def test_metric_shapes():
    rejects(mo.goal_distance, np.zeros(3), match="length 2")
    rejects(mo.box_in_goal, np.float64(1.0), match="length 2")
    rejects(mo.normalised_final_distance, np.zeros(11), np.zeros(12), match="obs")
    rejects(mo.normalised_final_distance, np.zeros(12), np.zeros(3), match="initial_obs")
    rejects(mo.swap_view, np.zeros((2, 5)), match="length 12")


# ----------------------------------------------------------------------------- partners


@covers(
    "movingout.partners.PartnerStyle",
    "movingout.partners.ScriptedPartner",
    "movingout.partners.demonstrator_action",
    "movingout.partners.push_target",
)
def test_partner_inputs():
    rejects(partners.PartnerStyle, "x", 2, 1.0, 0, 0.0, 0.0, match="side")
    rejects(partners.ScriptedPartner, partners.SEEN_STYLES[0], heavy_half=0.0, match="heavy_half")
    rejects(partners.PartnerStyle, "x", 1, 0.0, 0, 0.0, 0.0, match="speed")
    rejects(partners.PartnerStyle, "x", 1, 1.0, -1, 0.0, 0.0, match="patience")
    rejects(partners.PartnerStyle, "x", 1, 1.0, 0, 2.0, 0.0, match="bias")
    rejects(partners.PartnerStyle, "x", 1, 1.0, 0, 0.0, -0.1, match="jitter")
    rejects(partners.ScriptedPartner, "steady", match="PartnerStyle")
    p = partners.ScriptedPartner(partners.SEEN_STYLES[0], random_state=0)
    rejects(p.act, np.zeros(5), match="shape")
    rejects(partners.demonstrator_action, np.full(12, np.nan), match="finite")
    rejects(partners.demonstrator_action, np.zeros(12), noise=-1.0, match="noise")
    rejects(partners.push_target, np.array([0.1, np.inf]), match="box")


# ----------------------------------------------------------------------------- BC and BASS


@covers("movingout.bc.MixtureDensityPolicy", "movingout.bc.fit_mdn_policy", "movingout.bc.policy_features")
def test_policy_inputs():
    rejects(bc.MixtureDensityPolicy, n_components=0, match="n_components")
    pol = bc.MixtureDensityPolicy()
    rejects(pol, torch.zeros(3, 5), match=r"shape \(n, 12\)")
    rejects(pol.log_prob, torch.zeros(3, 12), torch.zeros(3, 3), match="act")
    rejects(pol.sample, np.zeros(12), 0, match="n_samples")
    rejects(pol.mode, np.full(12, np.nan), match="finite")
    rejects(bc.fit_mdn_policy, np.zeros((4, 12)), np.zeros((3, 2)), match="equal rows")
    rejects(bc.fit_mdn_policy, np.zeros((4, 12)), np.full((4, 2), np.nan), match="finite")
    rejects(bc.fit_mdn_policy, np.zeros((4, 12)), np.zeros((4, 2)), epochs=0, match="epochs")
    rejects(bc.policy_features, torch.zeros(2, 11), match=r"shape \(n, 12\)")


@pytest.fixture(scope="module")
def demos():
    return bass.collect_demos(partners.SEEN_STYLES[:2], 2, random_state=0)


@covers(
    "movingout.bass.collect_demos",
    "movingout.bass.stack_transitions",
    "movingout.bass.partner_pose_noise",
    "movingout.bass.recombine_demos",
    "movingout.bass.Demo",
)
def test_augmentation_inputs(demos):
    rejects(bass.collect_demos, [], 3, match="PartnerStyle")
    rejects(bass.collect_demos, partners.SEEN_STYLES, 0, match="n_demos")
    rejects(bass.stack_transitions, [], match="empty")
    rejects(bass.partner_pose_noise, np.zeros((3, 4)), 0.1, match="shape")
    rejects(bass.partner_pose_noise, np.zeros((3, 12)), -0.1, match="sigma")
    rejects(bass.recombine_demos, [1, 2], match="Demo")
    rejects(bass.recombine_demos, demos, eps_pose=0.0, match="eps_pose")
    rejects(bass.recombine_demos, demos, seg_len=0, match="seg_len")


@covers(
    "movingout.bass.DynamicsModel",
    "movingout.bass.fit_dynamics",
    "movingout.bass.box_goal_score",
    "movingout.bass.BassAgent",
    "movingout.bass.fit_bass_models",
    "movingout.bass.comparison_agents",
)
def test_model_inputs(demos):
    rejects(bass.DynamicsModel, hidden=0, match="hidden")
    m = bass.DynamicsModel()
    rejects(m, np.zeros((2, 12)), np.zeros((2, 3)), match="act")
    rejects(m, np.zeros((2, 12)), np.zeros((2, 2)), match="partner_act")
    rejects(bass.fit_dynamics, {"obs": np.zeros((2, 12))}, match="keys")
    d = bass.stack_transitions(demos)
    rejects(bass.fit_dynamics, d, epochs=-1, match="epochs")
    rejects(bass.box_goal_score, np.zeros(12), match="shape")
    pol = bc.MixtureDensityPolicy()
    rejects(bass.BassAgent, "policy", match="MixtureDensityPolicy")
    rejects(bass.BassAgent, pol, "dyn", match="DynamicsModel")
    rejects(bass.BassAgent, pol, m, match="partner_model")
    rejects(bass.BassAgent, pol, n_candidates=0, match="n_candidates")
    rejects(bass.BassAgent(pol).act, np.zeros(3), match="shape")
    rejects(bass.fit_bass_models, [], match="Demo")
    rejects(bass.fit_bass_models, demos, n_recombine=-1, match="n_recombine")
    rejects(bass.comparison_agents, {"policy": pol}, match="keys")


@covers("movingout.bass.rollout_episode", "movingout.bass.evaluate_agents")
def test_episode_inputs():
    e = mo.MovingOutEnv()
    rejects(bass.rollout_episode, "env", object(), 0, match="MovingOutEnv")
    rejects(bass.rollout_episode, e, object(), 0, match="act")
    rejects(bass.rollout_episode, e, bass.BassAgent(bc.MixtureDensityPolicy()), -1, match="seed")
    rejects(bass.evaluate_agents, {}, partners.SEEN_STYLES, 1, match="agents")
    rejects(bass.evaluate_agents, {"a": object()}, partners.SEEN_STYLES, 0, match="n_episodes")
