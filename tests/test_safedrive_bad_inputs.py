"""Bad input to icml26.safedrive: a scene with overlapping vehicles at t = 0 (the issue's case),
wrong shapes, out-of-range slots and parameters, and plug-ins that answer badly all give a
clear ValueError/TypeError from icml26 itself."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from badinput import covers, exempt, rejects
from hypothesis import given, settings
from hypothesis import strategies as st

from icml26 import safedrive as sd

FAST = settings(max_examples=20, deadline=None, derandomize=True)
C = sd.RoadConfig()
Y = C.lane_centres()[1]

exempt(
    "safedrive.planner.PlannerLike",
    "a typing Protocol describing the plug-in interface; plan_collisions checks what a planner returns",
)


@pytest.fixture(scope="module")
def scenes():
    return sd.benign_scenes(3, 40, random_state=0)


def overlapping():
    s0 = np.array([[[0.0, Y, 0.0, 10.0], [3.0, Y + 0.5, 0.2, 10.0], [30.0, Y, 0.0, 10.0]]])
    return s0, np.ones((1, 3), bool), np.full((1, 3), 12.0)


# ----------------------------------------------------------------------------- the case


@covers("safedrive.traffic.rollout_traffic", "safedrive.traffic.rollout_traffic_loop", "safedrive.road.check_no_overlap")
def test_overlapping_vehicles_at_t0_are_rejected_by_name():
    s0, pr, v0 = overlapping()
    for f in (sd.rollout_traffic, sd.rollout_traffic_loop):
        rejects(f, s0, pr, v0, 10, match=r"vehicles 0 and 1 of scene 0 overlap at t = 0")
    rejects(sd.check_no_overlap, s0, pr, match="overlap at t = 0")


@FAST
@given(st.floats(-4.4, 4.4), st.floats(-1.7, 1.7), st.floats(-0.3, 0.3))
def test_any_overlap_at_t0_is_rejected(dx, dy, th):
    s0 = np.array([[[0.0, Y, 0.0, 10.0], [dx, Y + dy, th, 10.0]]])
    if sd.boxes_overlap(np.r_[s0[0, 0, :3], 4.5, 1.8], np.r_[s0[0, 1, :3], 4.5, 1.8]):
        rejects(sd.rollout_traffic, s0, np.ones((1, 2), bool), np.full((1, 2), 12.0), 5, match="overlap")


def test_an_absent_slot_may_sit_anywhere():
    s0, pr, v0 = overlapping()
    pr[0, 1] = False
    sd.rollout_traffic(s0, pr, v0, 5)  # no error: slot 1 is not a vehicle


@covers("safedrive.traffic.rollout_traffic", "safedrive.traffic.rollout_traffic_loop")
def test_bad_initial_scenes():
    s0, pr, v0 = overlapping()
    rejects(sd.rollout_traffic, s0[0], pr, v0, 5, match="shape")
    rejects(sd.rollout_traffic, s0, pr.astype(int), v0, 5, match="present")
    pr2 = pr.copy()
    pr2[0, 0] = False
    rejects(sd.rollout_traffic, s0, pr2, v0, 5, match="ego")
    rejects(sd.rollout_traffic, s0, pr, -v0, 5, match="v0")
    rejects(sd.rollout_traffic, s0, pr, v0, 0, match="horizon")
    bad = s0.copy()
    bad[0, 2, 0] = np.nan
    rejects(sd.rollout_traffic_loop, bad, pr, v0, 5, match="finite")


# ----------------------------------------------------------------------------- dynamics and geometry


@covers("safedrive.road.bicycle_step")
def test_bicycle_bad_input():
    rejects(sd.bicycle_step, np.zeros(3), np.zeros(2), 0.1, 2.7, match="state must end in 4")
    rejects(sd.bicycle_step, np.zeros(4), np.zeros(2), 0.0, 2.7, match="dt")
    rejects(sd.bicycle_step, torch.zeros(4), torch.zeros(2), 0.1, -1.0, match="wheelbase")


@covers("safedrive.road.idm_accel", "safedrive.road.idm_equilibrium_gap")
def test_idm_bad_input():
    rejects(sd.idm_accel, 10.0, 10.0, 0.0, 15.0, match="gap")
    rejects(sd.idm_accel, 10.0, 10.0, np.nan, 15.0, match="gap")
    rejects(sd.idm_accel, 10.0, 10.0, 5.0, 0.0, match="v0")
    rejects(sd.idm_accel, 10.0, 10.0, 5.0, 15.0, config="road", match="RoadConfig")
    rejects(sd.idm_equilibrium_gap, 15.0, 15.0, match="v=")
    rejects(sd.idm_equilibrium_gap, -1.0, 15.0, match="v=")
    rejects(sd.idm_equilibrium_gap, 5.0, 0.0, match="v0")


@covers("safedrive.road.RoadConfig")
def test_road_config_bad_input():
    rejects(sd.RoadConfig, n_lanes=0, match="n_lanes")
    rejects(sd.RoadConfig, lane_width=-3.5, match="lane_width")
    rejects(sd.RoadConfig, accel_bounds=(1.0, 3.0), match="bracket 0")
    rejects(sd.RoadConfig, dt=float("nan"), match="dt")


@covers("safedrive.road.box_corners", "safedrive.road.boxes_overlap", "safedrive.road.box_distance")
def test_box_bad_shapes():
    rejects(sd.box_corners, np.zeros(4), match=r"\(\.\.\., 5\)")
    rejects(sd.boxes_overlap, np.zeros(5), np.zeros(3), match=r"\(\.\.\., 5\)")
    rejects(sd.box_distance, np.zeros((2, 4)), np.zeros(5), match=r"\(\.\.\., 5\)")


# ----------------------------------------------------------------------------- scenes, views, planner


@covers("safedrive.traffic.sample_initial_scenes", "safedrive.traffic.benign_scenes")
def test_scene_sampling_bad_input():
    rejects(sd.sample_initial_scenes, 0, match="n_scenes")
    rejects(sd.sample_initial_scenes, 2, n_agents=(5, 3), match="n_agents")
    rejects(sd.sample_initial_scenes, 2, random_state=1.5, match="random_state")
    rejects(sd.benign_scenes, 2, 0, match="horizon")
    rejects(sd.benign_scenes, -1, match="n_scenes")


@covers("safedrive.road.SceneBatch")
def test_scene_batch_bad_input(scenes):
    rejects(sd.SceneBatch, scenes.states[0], scenes.controls, scenes.present, scenes.v0, match="states")
    rejects(sd.SceneBatch, scenes.states, scenes.controls[:, :-1], scenes.present, scenes.v0, match="controls")
    rejects(sd.SceneBatch, scenes.states, scenes.controls, scenes.present.astype(int), scenes.v0, match="present")
    rejects(sd.SceneBatch, scenes.states, scenes.controls, scenes.present, scenes.v0, "config", match="RoadConfig")


@covers("safedrive.planner.render_views", "safedrive.planner.waypoint_targets", "safedrive.planner.planner_samples")
def test_views_and_targets_bad_frames(scenes):
    rejects(sd.render_views, scenes, np.array([[2]] * 3), match="lag")
    rejects(sd.render_views, scenes, np.array([5, 6, 7]), match="shape")
    rejects(sd.render_views, "scenes", np.array([[5]] * 3), match="SceneBatch")
    rejects(sd.waypoint_targets, scenes, np.array([[30]] * 3), match="future steps")
    rejects(sd.planner_samples, scenes, np.array([[5]] * 3), res=0, match="res")


@covers("safedrive.planner.track_waypoints")
def test_tracking_bad_input():
    rejects(sd.track_waypoints, np.zeros((2, 4)), np.zeros((3, 4, 2)), match="B, K, 2")
    rejects(sd.track_waypoints, np.zeros((1, 4)), np.full((1, 4, 2), np.nan), match="finite")
    rejects(sd.track_waypoints, np.zeros((1, 4)), np.zeros((1, 4, 2)), steps=0, match="steps")


@covers("safedrive.planner.BCPlanner", "safedrive.planner.plan_collisions", "safedrive.planner.finetune_planner")
def test_planner_bad_input(scenes):
    rejects(sd.BCPlanner, hidden=0, match="hidden")
    p = sd.BCPlanner(hidden=8, random_state=0)
    rejects(p.plan, np.zeros((2, 4, 3, 8, 8)), np.zeros((2, 4)), match="views must be")
    rejects(p.fit, np.zeros((2, 4, 3, 12, 12)), np.zeros((2, 4)), np.zeros((2, 3, 2)), match="waypoints")
    rejects(p.fit, np.zeros((2, 4, 3, 12, 12)), np.zeros((2, 4)), np.zeros((2, 4, 2)), epochs=0, match="epochs")
    fr = np.array([[5]] * 3)
    rejects(sd.plan_collisions, object(), scenes, fr, match="plan")

    class Broken:
        def plan(self, views, ego):
            return np.zeros((len(views), 3, 2))

    rejects(sd.plan_collisions, Broken(), scenes, fr, match="planner.plan must return")
    rejects(sd.plan_collisions, p, scenes, np.array([[35]] * 3), match="leave 20 steps")
    rejects(sd.finetune_planner, Broken(), scenes, scenes, fr, fr, match="BCPlanner")
    rejects(sd.finetune_planner, p, "generated", scenes, fr, fr, match="generated must be a SceneBatch")


# ----------------------------------------------------------------------------- stage A and B


@covers("safedrive.scenarios.attack_adversary", "safedrive.scenarios.evade_ego", "safedrive.scenarios.attack_labels")
def test_attack_and_evasion_bad_slots(scenes):
    rejects(sd.attack_adversary, scenes, np.array([0]), np.array([0]), match="slot >= 1")
    rejects(sd.attack_adversary, scenes, np.array([5]), np.array([1]), match="scene_idx")
    rejects(sd.attack_adversary, scenes, np.array([0, 1]), np.array([1]), match="equal length")
    rejects(sd.attack_adversary, scenes, np.array([0]), np.array([1]), iters=0, match="iters")
    rejects(sd.evade_ego, scenes, np.array([0]), np.array([1]), np.zeros((1, 5, 4)), match="adv_traj")
    rejects(
        sd.evade_ego, scenes, np.array([0]), np.array([1]), scenes.states[:1, :, 1], lateral_weight=-1.0, match="lateral_weight"
    )
    rejects(sd.attack_labels, "scenes", match="SceneBatch")
    rejects(sd.attack_labels, scenes, near_miss=0.0, iters=1, match="near_miss")


@covers("safedrive.scenarios.evade_ego_receding", "safedrive.scenarios.predict_constant_velocity")
def test_receding_evasion_and_prediction_bad_input(scenes):
    one, adv = np.array([0]), np.array([1])
    at = scenes.states[:1, :, 1]
    rejects(sd.evade_ego_receding, scenes, one, adv, np.zeros((1, 5, 4)), match="adv_traj")
    rejects(sd.evade_ego_receding, scenes, one, np.array([0]), at, match="slot >= 1")
    rejects(sd.evade_ego_receding, scenes, one, adv, at, n_step_action=0, match="n_step_action")
    rejects(sd.evade_ego_receding, scenes, one, adv, at, replan_iters=0, match="replan_iters")
    rejects(sd.evade_ego_receding, scenes, one, adv, at, track_weight=-1.0, match="track_weight")
    rejects(sd.evade_ego_receding, "scenes", one, adv, at, match="SceneBatch")
    rejects(sd.predict_constant_velocity, np.zeros((2, 3)), 5, match="end in 4")
    rejects(sd.predict_constant_velocity, np.full((2, 4), np.nan), 5, match="NaN")
    rejects(sd.predict_constant_velocity, np.zeros((2, 4)), -1, match="steps")
    rejects(sd.predict_constant_velocity, np.zeros((2, 4)), 5, dt=0.0, match="dt")


@covers("safedrive.experiment.binary_labels", "safedrive.experiment.collision_rates", "safedrive.experiment.run_replicate")
def test_experiment_helpers_bad_input(scenes):
    rejects(sd.binary_labels, np.zeros(4), match="shape")
    rejects(sd.binary_labels, np.zeros((3, 1)), match="slots >= 2")
    rejects(sd.collision_rates, object(), scenes, np.array([[5]]), match="1-D")
    rejects(sd.collision_rates, object(), "scenes", np.array([5]), match="SceneBatch")
    with pytest.raises(KeyError, match="n_train"):
        sd.run_replicate(0, {"horizon": 20}, baseline=None, train_frames=np.arange(5), eval_frames=np.array([5]))


@covers("safedrive.scenarios.graded_rewards")
def test_graded_rewards_bad_input():
    rejects(sd.graded_rewards, np.zeros(2), np.zeros(3), np.zeros(2), np.zeros(2, bool), 40, match="one length")
    rejects(sd.graded_rewards, np.zeros(2), np.zeros(2), np.zeros(2), np.zeros(2, bool), 40, near_miss=-1.0, match="near_miss")


@covers("safedrive.scenarios.make_scenarios")
def test_make_scenarios_bad_input(scenes):
    ch = np.zeros(3, dtype=int)
    rejects(sd.make_scenarios, scenes, ch[:2], match="choice")
    rejects(sd.make_scenarios, scenes, ch, np.zeros((3, 2, 41, 4)), match="attack_trajs")
    rejects(sd.make_scenarios, scenes, ch, band=(3.0, 1.0), match="band")
    rejects(sd.make_scenarios, scenes, np.array([0, 0, 20]), match="slot")
    rejects(sd.make_scenarios, scenes, ch, evasion="closed", match="evasion='closed'")


@covers("safedrive.selector.candidate_features", "safedrive.selector.select_closest", "safedrive.selector.select_random")
def test_selection_bad_input():
    for f in (sd.candidate_features, sd.select_closest, sd.select_random):
        rejects(f, np.zeros((2, 41, 9, 4)), match="SceneBatch")


@covers("safedrive.selector.SelectorPolicy", "safedrive.selector.train_selector", "safedrive.selector.select_with")
def test_selector_bad_input(scenes):
    rejects(sd.SelectorPolicy, hidden=-1, match="hidden")
    pol = sd.SelectorPolicy(hidden=4, random_state=0)
    f, m = sd.candidate_features(scenes)
    rejects(pol.log_probs, f[..., :3], m, match="features must be")
    rejects(sd.train_selector, pol, f, m, np.zeros((3, 2)), match="must agree")
    rejects(sd.train_selector, pol, f, m, np.zeros(m.shape), group=1, match="group")
    rejects(sd.train_selector, "policy", f, m, np.zeros(m.shape), match="SelectorPolicy")
    rejects(sd.select_with, 3, scenes, match="callable")
    rejects(sd.select_with, lambda f, m: np.zeros(2, dtype=int), scenes, match="one int slot per scene")
    rejects(sd.select_with, lambda f, m: np.full(len(f), 8), scenes, match="not an allowed choice")


@covers("safedrive.selector.grpo_loss")
def test_grpo_loss_bad_input():
    z = torch.zeros(2, 3)
    rejects(sd.grpo_loss, z, z, z, torch.zeros(2, 4), match="share a shape")
    rejects(sd.grpo_loss, torch.zeros(2, 1), torch.zeros(2, 1), torch.zeros(2, 1), torch.zeros(2, 1), match="G >= 2")
    rejects(sd.grpo_loss, z, z, z, z, clip_eps=0.0, match="clip_eps")
    rejects(sd.grpo_loss, z, z, z, z, beta=-0.1, match="beta")


@covers("safedrive.road.concat_scenes")
def test_concat_scenes_bad_input(scenes):
    rejects(sd.concat_scenes, match="at least one")
    rejects(sd.concat_scenes, scenes, "more", match=r"batches\[1\] must be a SceneBatch")
    short = sd.benign_scenes(1, 10, random_state=0)
    rejects(sd.concat_scenes, scenes, short, match="only batches of one horizon")


# ----------------------------------------------------------------------------- silent answers (issue 22)


@covers("safedrive.traffic.sample_initial_scenes", "safedrive.traffic.benign_scenes")
def test_scene_sampling_never_places_fewer_agents_than_asked():
    # (40, 50) used to place 19-20 agents in each scene without a word
    rejects(sd.sample_initial_scenes, 2, n_agents=(40, 50), random_state=0, match=r"could place only \d+ of the \d+ agents")
    rejects(sd.benign_scenes, 2, n_agents=(40, 50), random_state=0, match="could place only")
    rejects(sd.sample_initial_scenes, 2, n_agents="48", match="pair")
    rejects(sd.sample_initial_scenes, 2, n_agents=(4, 6, 8), match="pair")
    s0, pr, v0 = sd.sample_initial_scenes(50, random_state=0)
    assert (pr[:, 1:].sum(1) >= 4).all()


@covers("safedrive.road.idm_accel")
def test_idm_rejects_nan_and_negative_speeds():
    rejects(sd.idm_accel, np.nan, 10.0, 5.0, 15.0, match=r"v \(a speed\)")
    rejects(sd.idm_accel, -3.0, 10.0, 5.0, 15.0, match=r"v \(a speed\).*>= 0")
    rejects(sd.idm_accel, 10.0, np.array([5.0, -1.0]), 5.0, 15.0, match=r"v_lead")
    rejects(sd.idm_accel, np.inf, 10.0, 5.0, 15.0, match=r"v \(a speed\)")
    assert np.isfinite(sd.idm_accel(0.0, 0.0, np.inf, 15.0))


@covers("safedrive.road.bicycle_step")
def test_bicycle_rejects_a_nan_state_or_control():
    rejects(sd.bicycle_step, np.array([0.0, np.nan, 0.0, 10.0]), np.zeros(2), 0.1, 2.7, match="state holds NaN")
    rejects(sd.bicycle_step, torch.tensor([0.0, 0.0, 0.0, float("nan")]), torch.zeros(2), 0.1, 2.7, match="state holds NaN")
    rejects(sd.bicycle_step, np.zeros(4), np.array([np.inf, 0.0]), 0.1, 2.7, match="control holds NaN")


@covers("safedrive.road.box_corners", "safedrive.road.boxes_overlap", "safedrive.road.box_distance")
def test_boxes_reject_negative_sizes_and_nan():
    good = np.array([0.0, 0.0, 0.0, 4.5, 1.8])
    neg = np.array([10.0, 0.0, 0.0, -4.5, 1.8])
    rejects(sd.box_distance, good, neg, match="negative length")
    rejects(sd.box_distance, good, np.array([10.0, 0.0, 0.0, 4.5, -1.8]), match="negative width")
    rejects(sd.boxes_overlap, neg, good, match="negative length")
    rejects(sd.box_corners, neg, match="negative length")
    rejects(sd.box_distance, good, np.array([np.nan, 0.0, 0.0, 4.5, 1.8]), match="NaN")
    assert sd.box_distance(good, np.array([10.0, 0.0, 0.0, 4.5, 1.8])) == pytest.approx(5.5)


@covers("safedrive.selector.grpo_loss")
def test_grpo_loss_rejects_nan_rewards_and_positive_log_probs():
    z = torch.full((2, 3), -1.0)
    rejects(sd.grpo_loss, z, z, z, torch.tensor([[1.0, float("nan"), 0.0], [0.0, 1.0, 0.5]]), match="rewards holds NaN")
    rejects(sd.grpo_loss, torch.full((2, 3), 0.5), z, z, torch.zeros(2, 3), match="logp_new holds positive")
    rejects(sd.grpo_loss, z, z, torch.full((2, 3), float("nan")), torch.zeros(2, 3), match="logp_ref holds NaN")
    rejects(sd.grpo_loss, torch.zeros(2, 3, dtype=torch.long), z, z, torch.zeros(2, 3), match="floating-point")
    assert torch.isfinite(sd.grpo_loss(torch.zeros(2, 3), z, z, torch.rand(2, 3)))


@covers("safedrive.scenarios.graded_rewards")
def test_graded_rewards_reject_a_bad_horizon_and_nan_distances():
    d, t, f, off = np.array([1.0, 3.0]), np.array([2, 41]), np.array([41, 41]), np.zeros(2, bool)
    rejects(sd.graded_rewards, d, t, f, off, 0, match="horizon")
    rejects(sd.graded_rewards, d, t, f, off, 2.5, match="horizon")
    rejects(sd.graded_rewards, np.array([np.nan, 1.0]), t, f, off, 40, match="min_dist")
    rejects(sd.graded_rewards, np.array([-1.0, 1.0]), t, f, off, 40, match="min_dist")
    assert sd.graded_rewards(d, t, f, off, 40).tolist() == [1.0, 0.0]
