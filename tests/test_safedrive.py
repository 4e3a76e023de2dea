"""icml26.safedrive against closed forms and exact geometric cases: the bicycle model, the IDM
equilibrium gap, the separating-axis collision test and box distance, the vectorised
simulator against its per-agent loop, the GRPO objective against a direct loop, the stages
of scenario generation, the plug-in interfaces and determinism (one episode replayed step by
step)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from icml26 import safedrive as sd

FAST = settings(max_examples=20, deadline=None, derandomize=True)
C = sd.RoadConfig()


def box(x, y, th=0.0, length=4.5, width=1.8):
    return np.array([x, y, th, length, width], dtype=float)


# ----------------------------------------------------------------------------- dynamics


def test_bicycle_straight_line_is_exact():
    s = np.array([[0.0, 1.0, 0.0, 10.0]])
    for _ in range(20):
        s = sd.bicycle_step(s, np.array([[0.0, 0.0]]), 0.1, 2.7)
    assert np.allclose(s, [[20.0, 1.0, 0.0, 10.0]], atol=1e-12)


def test_bicycle_numpy_and_torch_agree_and_speed_floor():
    rng = np.random.default_rng(0)
    s = rng.normal(size=(5, 4))
    s[:, 3] = np.abs(s[:, 3])
    u = rng.normal(size=(5, 2)) * [3, 0.2]
    a = sd.bicycle_step(s, u, 0.1, 2.7)
    b = sd.bicycle_step(torch.tensor(s), torch.tensor(u), 0.1, 2.7).numpy()
    assert np.allclose(a, b, atol=1e-12)
    stop = sd.bicycle_step(np.array([0.0, 0, 0, 0.1]), np.array([-6.0, 0.0]), 0.1, 2.7)
    assert stop[3] == 0.0


def test_bicycle_heading_rate_is_v_tan_delta_over_L():
    s = sd.bicycle_step(np.array([0.0, 0.0, 0.0, 5.0]), np.array([0.0, 0.3]), 0.1, 2.7)
    assert math.isclose(s[2], 5.0 / 2.7 * math.tan(0.3) * 0.1)


def test_idm_is_zero_at_the_equilibrium_gap():
    for v, v0 in [(5.0, 10.0), (10.0, 15.0), (0.0, 12.0), (14.0, 14.5)]:
        s_e = sd.idm_equilibrium_gap(v, v0)
        assert abs(float(sd.idm_accel(v, v, s_e, v0))) < 1e-12


def test_idm_free_road_and_approach():
    assert float(sd.idm_accel(10.0, 0.0, np.inf, 10.0)) == 0.0  # at the desired speed with no leader
    assert float(sd.idm_accel(0.0, 0.0, np.inf, 10.0)) == pytest.approx(C.a_max)
    assert float(sd.idm_accel(10.0, 0.0, 5.0, 20.0)) < -C.b_comf  # closing fast on a stopped car


def test_follower_converges_to_the_closed_form_gap():
    """Single lane: a leader cruising at its desired speed and an IDM follower (the simulator)."""
    cfg = sd.RoadConfig(n_lanes=1)
    y = cfg.lane_centres()[0]
    s0 = np.array([[[0.0, y, 0.0, 12.0], [40.0, y, 0.0, 10.0]]])
    b = sd.rollout_traffic(s0, np.ones((1, 2), bool), np.array([[15.0, 10.0]]), 900, cfg)
    gap = b.states[0, -1, 1, 0] - b.states[0, -1, 0, 0] - cfg.length
    assert b.states[0, -1, 1, 3] == pytest.approx(10.0, abs=1e-9)  # leader never moved off its desired speed
    assert gap == pytest.approx(sd.idm_equilibrium_gap(10.0, 15.0, cfg), abs=0.05)
    assert b.states[0, -1, 0, 3] == pytest.approx(10.0, abs=0.01)


# ----------------------------------------------------------------------------- geometry


@FAST
@given(st.floats(-10, 10), st.floats(-10, 10), st.floats(0.5, 6), st.floats(0.5, 3), st.floats(0.5, 6), st.floats(0.5, 3))
def test_sat_matches_interval_overlap_for_axis_aligned_boxes(dx, dy, l1, w1, l2, w2):
    exact = abs(dx) <= (l1 + l2) / 2 and abs(dy) <= (w1 + w2) / 2
    assert bool(sd.boxes_overlap(box(0, 0, 0, l1, w1), box(dx, dy, 0, l2, w2))) == exact


@FAST
@given(st.floats(-10, 10), st.floats(-10, 10), st.floats(-3.2, 3.2), st.floats(-3.2, 3.2), st.floats(-20, 20), st.floats(-20, 20))
def test_sat_is_invariant_to_a_rigid_motion(dx, dy, th, rot, tx, ty):
    a, b = box(0, 0, 0.3), box(dx, dy, th)
    c, s = math.cos(rot), math.sin(rot)

    def move(q):
        return np.array([c * q[0] - s * q[1] + tx, s * q[0] + c * q[1] + ty, q[2] + rot, q[3], q[4]])

    d0, d1 = sd.box_distance(a, b), sd.box_distance(move(a), move(b))
    assert d0 == pytest.approx(d1, abs=1e-9)
    if d0 > 1e-6:
        assert not sd.boxes_overlap(move(a), move(b))


def test_rotated_square_touching_distance():
    """A square of half side h and one turned 45°: they touch at centre distance h + h√2."""
    h = 1.0
    contact = h + h * math.sqrt(2)
    sq = box(0, 0, 0, 2 * h, 2 * h)
    assert sd.boxes_overlap(sq, box(contact - 1e-6, 0, math.pi / 4, 2 * h, 2 * h))
    assert not sd.boxes_overlap(sq, box(contact + 1e-6, 0, math.pi / 4, 2 * h, 2 * h))
    assert sd.box_distance(sq, box(contact + 0.5, 0, math.pi / 4, 2 * h, 2 * h)) == pytest.approx(0.5)


def test_box_distance_exact_cases():
    a = box(0, 0)
    assert sd.box_distance(a, box(4.5 + 2.0, 0)) == pytest.approx(2.0)  # bumper to bumper
    assert sd.box_distance(a, box(0, 1.8 + 0.7)) == pytest.approx(0.7)  # side by side
    assert sd.box_distance(a, box(4.5 + 3.0, 1.8 + 4.0)) == pytest.approx(5.0)  # corner to corner (3-4-5)
    assert sd.box_distance(a, box(1.0, 0.5)) == 0.0
    corners = sd.box_corners(a)
    assert np.allclose(sorted(map(tuple, corners)), sorted([(2.25, 0.9), (-2.25, 0.9), (-2.25, -0.9), (2.25, -0.9)]))


# ----------------------------------------------------------------------------- simulator


def test_vectorised_simulator_equals_the_per_agent_loop():
    s0, pr, v0 = sd.sample_initial_scenes(6, random_state=3)
    a = sd.rollout_traffic(s0, pr, v0, 40)
    b = sd.rollout_traffic_loop(s0, pr, v0, 40)
    assert np.abs(a.states - b.states).max() < 1e-9
    assert np.abs(a.controls - b.controls).max() < 1e-9


def test_benign_scenes_have_lane_changes_and_no_collisions():
    b = sd.benign_scenes(20, 40, random_state=0)
    assert b.states.shape == (20, 41, 9, 4)
    assert not sd._any_collision(b).any()
    assert ((4 <= b.present[:, 1:].sum(1)) & (b.present[:, 1:].sum(1) <= 8)).all()
    moved = np.abs(b.states[:, -1, :, 1] - b.states[:, 0, :, 1]) > 1.0
    assert moved[b.present].any()  # some vehicle changed lanes


def test_replaying_one_episode_twice_is_identical_step_by_step():
    """Determinism: the same seed gives the same episode, step by step (benign log, attack, evasion)."""
    runs = []
    for _ in range(2):
        b = sd.benign_scenes(2, 30, random_state=11)
        rew, tr = sd.attack_labels(b, iters=6)
        choice = np.where(rew[:, 1:].max(1) > 0, rew[:, 1:].argmax(1) + 1, 1)
        ego = sd.evade_ego(b, np.arange(2), choice, tr[np.arange(2), choice], iters=6)
        runs.append((b, rew, tr, ego))
    (b1, r1, t1, e1), (b2, r2, t2, e2) = runs
    for t in range(b1.horizon + 1):
        assert np.array_equal(b1.states[:, t], b2.states[:, t]), f"benign log differs at step {t}"
        assert np.array_equal(t1[:, :, t], t2[:, :, t]), f"attack differs at step {t}"
        assert np.array_equal(e1[:, t], e2[:, t]), f"evasion differs at step {t}"
    assert np.array_equal(r1, r2)


def test_render_views_sees_a_car_ahead():
    cfg = C
    y = cfg.lane_centres()[1]
    s0 = np.array([[[0.0, y, 0.0, 10.0], [15.0, y, 0.0, 10.0]]])
    b = sd.rollout_traffic(s0, np.ones((1, 2), bool), np.full((1, 2), 10.0), 10)
    v = sd.render_views(b, np.array([[5]]))[0, 0]  # (4, 3, 12, 12)
    names = list(sd.VIEWS)
    assert v[names.index("front"), 0].sum() > 0 and v[names.index("rear"), 0].sum() == 0
    assert v[names.index("front"), 1].sum() > 0  # the earlier frame too
    assert 0 < v[:, 2].mean() < 1  # road and off-road both visible


def test_waypoints_and_tracking_on_a_straight_road():
    y = C.lane_centres()[0]
    s0 = np.array([[[0.0, y, 0.0, 10.0]]])
    b = sd.rollout_traffic(s0, np.ones((1, 1), bool), np.full((1, 1), 10.0), 40)
    wp = sd.waypoint_targets(b, np.array([[5]]))[0, 0]
    assert np.allclose(wp, [[5, 0], [10, 0], [15, 0], [20, 0]], atol=1e-9)
    tr = sd.track_waypoints(b.states[0, 5, :1], wp[None])
    assert np.allclose(tr[0, :, 3], 10.0, atol=1e-6) and np.allclose(tr[0, :, 1], y, atol=1e-6)
    assert tr[0, -1, 0] - tr[0, 0, 0] == pytest.approx(20.0, abs=1e-6)


# ----------------------------------------------------------------------------- GRPO


def _direct_grpo(new, old, ref, r, eps_clip, beta, eps=1e-4):
    total, n = 0.0, 0
    for i in range(len(r)):
        rr = list(r[i])
        mu = sum(rr) / len(rr)
        sd_ = math.sqrt(sum((x - mu) ** 2 for x in rr) / (len(rr) - 1))
        for j in range(len(rr)):
            a = (rr[j] - mu) / (sd_ + eps)
            rho = math.exp(new[i][j] - old[i][j])
            q = math.exp(ref[i][j] - new[i][j])
            total += min(rho * a, min(max(rho, 1 - eps_clip), 1 + eps_clip) * a) - beta * (q - math.log(q) - 1)
            n += 1
    return -total / n


@FAST
@given(st.integers(0, 10_000), st.floats(0.05, 0.5), st.floats(0.0, 0.5))
def test_grpo_loss_equals_a_direct_computation(seed, eps_clip, beta):
    g = torch.Generator().manual_seed(seed)
    # probabilities in [0.05, 1): log-probabilities <= 0, as grpo_loss requires
    new, old, ref = (torch.log(0.95 * torch.rand(3, 4, generator=g, dtype=torch.float64) + 0.05) for _ in range(3))
    r = torch.randint(0, 3, (3, 4), generator=g).double() / 2
    ours = float(sd.grpo_loss(new, old, ref, r, clip_eps=eps_clip, beta=beta))
    assert ours == pytest.approx(_direct_grpo(new.tolist(), old.tolist(), ref.tolist(), r.tolist(), eps_clip, beta), abs=1e-10)


def test_grpo_clip_and_zero_cases():
    r = torch.tensor([[1.0, 0.0]], dtype=torch.float64)
    zero = torch.zeros(1, 2, dtype=torch.float64)
    assert float(sd.grpo_loss(zero, zero, zero, r, beta=0.0)) == pytest.approx(0.0, abs=1e-12)  # advantages sum to 0
    old = torch.tensor([[-math.log(2.0), 0.0]], dtype=torch.float64)  # ratio 2 on the good answer: clipped at 1.2
    a = 0.5 / (math.sqrt(0.5) + 1e-4)  # advantages ±a (sample sd of [1, 0] is sqrt(1/2))
    assert float(sd.grpo_loss(zero, old, zero, r, beta=0.0)) == pytest.approx(-(1.2 * a - a) / 2)


def test_grpo_gradient_matches_autograd_of_the_direct_loss():
    new = torch.tensor([[-0.5, -1.0, -2.0]], dtype=torch.float64, requires_grad=True)
    old = torch.tensor([[-0.6, -1.0, -1.5]], dtype=torch.float64)
    ref = torch.tensor([[-0.7, -0.9, -2.2]], dtype=torch.float64)
    r = torch.tensor([[1.0, 0.5, 0.0]], dtype=torch.float64)
    sd.grpo_loss(new, old, ref, r, beta=0.1).backward()
    num = np.zeros(3)
    for k in range(3):
        e = np.zeros(3)
        e[k] = 1e-6
        f = lambda d: _direct_grpo((new.detach().numpy() + d).tolist(), old.tolist(), ref.tolist(), r.tolist(), 0.2, 0.1)  # noqa: E731
        num[k] = (f(e[None]) - f(-e[None])) / 2e-6
    assert np.allclose(new.grad.numpy()[0], num, atol=1e-6)


def test_train_selector_learns_the_rewarded_slot():
    f = np.zeros((40, 4, sd.N_FEATURES), np.float32)
    f[:, :, 0] = np.arange(4) / 3
    f[:, 0, 8] = 1.0
    m = np.ones((40, 4), bool)
    r = np.zeros((40, 4))
    r[:, 2] = 1.0
    pol = sd.SelectorPolicy(random_state=0)
    sd.train_selector(pol, f, m, r, iters=80, random_state=0)
    assert (pol(f, m) == 2).all()
    assert pol.history[-1]["reward"] > pol.history[0]["reward"]


def test_selection_baselines_and_features():
    b = sd.benign_scenes(5, 20, random_state=2)
    f, m = sd.candidate_features(b)
    closest = sd.select_closest(b)
    d = np.linalg.norm(b.states[:, 0, :, :2] - b.states[:, 0, :1, :2], axis=-1)
    for s in range(5):
        present = np.flatnonzero(b.present[s])[1:]
        assert closest[s] == present[np.argmin(d[s, present])]
    rnd = sd.select_random(b, random_state=0)
    assert b.present[np.arange(5), rnd].all() and (rnd > 0).all()
    assert (f[:, 0, 8] == 1).all() and m[:, 0].all()


# ----------------------------------------------------------------------------- stage B


def test_a_car_ahead_in_a_single_lane_can_be_made_to_collide():
    cfg = sd.RoadConfig(n_lanes=1)
    y = cfg.lane_centres()[0]
    s0 = np.array([[[0.0, y, 0.0, 12.0], [20.0, y, 0.0, 12.0], [-60.0, y, 0.0, 8.0]]])
    b = sd.rollout_traffic(s0, np.ones((1, 3), bool), np.array([[12.0, 12.0, 8.0]]), 40, cfg)
    rew, tr = sd.attack_labels(b, iters=40)
    assert rew[0, 1] == 1.0  # braking in front of the ego (whose log does not react to it)
    assert rew[0, 2] == 0.0  # 60 m behind and slower: out of reach within 4 s
    assert rew[0, 0] == 0.0  # "no vehicle" is then wrong


def test_graded_rewards_rules():
    r = sd.graded_rewards(
        np.array([0.0, 0.0, 1.0, 5.0, 0.0]),
        np.array([10, 10, 41, 41, 10]),
        np.array([41, 5, 41, 41, 41]),
        np.array([False, False, False, False, True]),
        40,
    )
    assert r.tolist() == [1.0, 0.5, 0.5, 0.0, 0.0]  # hitting someone else first: only a near miss


def test_make_scenarios_keeps_only_the_near_miss_band():
    b = sd.benign_scenes(8, 40, random_state=4)
    rew, tr = sd.attack_labels(b, iters=25)
    choice = np.where(rew[:, 1:].max(1) == 1, rew[:, 1:].argmax(1) + 1, 0)
    gen, info = sd.make_scenarios(b, choice, tr, iters=30)
    assert len(info["attempted"]) == (choice > 0).sum()
    md = info["min_dist"]
    assert np.array_equal(info["kept"] & ((md < 0.5) | (md > 3.0)), np.zeros_like(info["kept"]))
    assert gen.n_scenes == info["kept"].sum()
    for k in range(gen.n_scenes):
        adv = info["adversary"][k]
        d = sd.box_distance(sd._boxes(gen.states[k, :, 0], C), sd._boxes(gen.states[k, :, adv], C)).min()
        assert 0.5 <= d <= 3.0
    # attacking only the chosen vehicles (the pipeline's mode) gives the same attacks, hence the same scenes
    gen2, info2 = sd.make_scenarios(b, choice, iters=30, attack_iters=25)
    assert np.array_equal(info2["attempted"], np.flatnonzero(choice > 0))
    assert np.array_equal(info2["kept"], info["kept"]) and np.allclose(info2["min_dist"], info["min_dist"], atol=1e-6)
    assert np.array_equal(info2["adversary"], choice[info2["scene"]])
    assert gen2.n_scenes == gen.n_scenes > 0 and np.allclose(gen2.states, gen.states, atol=1e-6)


def _stopped_car_ahead_after(b, adv_traj, t, gap=8.0):
    """The adversary's trajectory with its future after step ``t`` replaced by a car standing
    ``gap`` m ahead of the ego's logged position at ``t + 1``, in the ego's lane."""
    out = adv_traj.copy()
    ego = b.states[:, t + 1, 0]
    out[:, t + 1 :] = np.stack([ego[:, 0] + gap, ego[:, 1], np.zeros(len(ego)), np.zeros(len(ego))], -1)[:, None]
    return out


def test_receding_evasion_uses_nothing_after_the_replanning_step():
    """Causality: perturb the adversary's future after step t; the ego's executed trajectory up
    to the next replanning step is bit-identical, and changes afterwards (it does react).
    The open-loop evasion, which sees the whole attack, changes before t (the test can tell)."""
    b = sd.benign_scenes(3, 30, random_state=7)
    idx = np.arange(3)
    adv = sd.select_closest(b)
    at = b.states[idx, :, adv]  # the adversary's logged path as its "attack"
    t, n = 12, 5
    pert = _stopped_car_ahead_after(b, at, t)
    kw = dict(n_step_action=n, iters=15, replan_iters=8)
    e0 = sd.evade_ego_receding(b, idx, adv, at, **kw)
    e1 = sd.evade_ego_receding(b, idx, adv, pert, **kw)
    nxt = (t // n + 1) * n  # controls up to here were planned at steps <= t
    assert np.array_equal(e0[:, : t + 1], e1[:, : t + 1])
    assert np.array_equal(e0[:, : nxt + 1], e1[:, : nxt + 1])
    assert np.abs(e0[:, nxt + 1 :] - e1[:, nxt + 1 :]).reshape(3, -1).max(1).min() > 1e-3  # every scene reacts to it
    o0 = sd.evade_ego(b, idx, adv, at, iters=15)
    o1 = sd.evade_ego(b, idx, adv, pert, iters=15)
    assert np.abs(o0[:, : t + 1] - o1[:, : t + 1]).max() > 1e-3  # open loop: the future leaks into the past


def test_receding_evasion_brakes_for_a_car_that_stops_ahead():
    """Single lane, a leader that brakes hard at t = 1 s: the causal ego (which only sees it slow
    down) ends further from it than its logged path, which ignores the braking, would."""
    cfg = sd.RoadConfig(n_lanes=1)
    y = cfg.lane_centres()[0]
    s0 = np.array([[[0.0, y, 0.0, 12.0], [25.0, y, 0.0, 12.0]]])
    b = sd.rollout_traffic(s0, np.ones((1, 2), bool), np.array([[12.0, 12.0]]), 40, cfg)
    lead = b.states[0, :, 1].copy()
    for k in range(10, 40):  # brake at 6 m/s^2 from step 10
        lead[k + 1] = sd.bicycle_step(lead[k], np.array([-6.0, 0.0]), cfg.dt, cfg.wheelbase)
    ego = sd.evade_ego_receding(b, np.array([0]), np.array([1]), lead[None], iters=40, replan_iters=20)[0]
    gap = lambda e: (lead[:, 0] - e[:, 0]).min()  # noqa: E731
    assert gap(ego) > gap(b.states[0, :, 0]) + 1.0
    assert np.array_equal(
        ego[:11], sd.evade_ego_receding(b, np.array([0]), np.array([1]), b.states[:, :, 1], iters=40, replan_iters=20)[0, :11]
    )  # nothing seen before step 10


def test_constant_velocity_prediction_is_the_bicycle_with_zero_controls():
    obs = np.array([[3.0, 1.0, 0.2, 10.0], [0.0, 5.0, -0.1, 0.0]])
    pred = sd.predict_constant_velocity(obs, 6, 0.1)
    assert pred.shape == (2, 7, 4)
    s = obs.copy()
    for j in range(1, 7):
        s = sd.bicycle_step(s, np.zeros((2, 2)), 0.1, 2.7)
        assert np.allclose(pred[:, j], s, atol=1e-12)
    assert np.allclose(pred[0, 6, :2], [3.0 + 6 * math.cos(0.2), 1.0 + 6 * math.sin(0.2)])


def test_scan_rollout_equals_the_step_loop_with_the_speed_floor():
    rng = np.random.default_rng(1)
    s0 = torch.tensor(np.c_[rng.normal(size=(30, 3)), np.abs(rng.normal(size=30)) * 3])
    u = torch.tensor(np.stack([rng.uniform(-6, 3, (30, 25)), rng.uniform(-0.4, 0.4, (30, 25))], -1), requires_grad=True)
    a, b = sd._rollout_torch(s0, u, C), sd._rollout_torch_scan(s0, u, C)
    assert (a[..., 3] == 0).float().mean() > 0.1  # the floor is hit often
    assert torch.allclose(a, b, atol=1e-11, rtol=0)
    (ga,) = torch.autograd.grad(a.sum(), u)
    (gb,) = torch.autograd.grad(b.sum(), u)
    assert torch.allclose(ga, gb, atol=1e-10, rtol=0)


# ----------------------------------------------------------------------------- planner and plug-ins


class KeepLane:
    def plan(self, views, ego):
        v = 15.0 * ego[:, 0]
        t = np.array([0.5, 1.0, 1.5, 2.0])
        return np.stack([v[:, None] * t, np.zeros((len(v), 4))], -1)


def test_scripted_planner_plugs_in_and_rams_a_braking_car():
    y = C.lane_centres()[1]
    s0 = np.array([[[0.0, y, 0.0, 12.0], [15.0, y, 0.0, 12.0]]])
    b = sd.rollout_traffic(s0, np.ones((1, 2), bool), np.array([[12.0, 12.0]]), 40)
    assert not sd.plan_collisions(KeepLane(), b, np.array([[5, 10]])).any()
    b.states[0, :, 1, 0] = b.states[0, 0, 1, 0]  # the car ahead now stands still
    assert sd.plan_collisions(KeepLane(), b, np.array([[5, 10]])).all()


def test_scripted_selector_plugs_in():
    b = sd.benign_scenes(4, 20, random_state=1)

    def last_present(f, m):  # a scripted selector that picks the last vehicle slot that exists
        return np.array([np.flatnonzero(row)[-1] for row in m[:, 1:]]) + 1

    out = sd.select_with(last_present, b)
    expected = np.array([np.flatnonzero(b.present[s, 1:])[-1] + 1 for s in range(b.n_scenes)])
    assert (out > 0).all() and np.array_equal(out, expected)
    absent = np.array(
        [np.flatnonzero(~b.present[s])[0] if (~b.present[s]).any() else b.present.shape[1] for s in range(b.n_scenes)]
    )
    with pytest.raises(ValueError, match="not an allowed choice"):
        sd.select_with(lambda f, m: absent, b)  # an absent vehicle (or out of range) is refused


def test_bc_planner_fits_and_fine_tunes_without_touching_the_original():
    b = sd.benign_scenes(6, 40, random_state=0)
    fr = np.tile(np.arange(5, 21, 5), (6, 1))
    v, e, w = sd.planner_samples(b, fr)
    p = sd.BCPlanner(hidden=32, random_state=0).fit(v, e, w, epochs=40, random_state=0)
    assert p.history[-1] < 0.2 * p.history[0]
    assert p.plan(v, e).shape == w.shape
    before = [t.clone() for t in p.net.parameters()]
    ft = sd.finetune_planner(p, b, b, fr, fr, epochs=2, random_state=0)
    assert all(torch.equal(a, c) for a, c in zip(before, p.net.parameters(), strict=True))
    assert not all(torch.equal(a, c) for a, c in zip(before, ft.net.parameters(), strict=True))


def test_public_docstrings_have_numpydoc_sections():
    from docsections import undocumented

    for sub in ("road", "traffic", "planner", "scenarios", "selector", "experiment"):
        assert undocumented(f"icml26.safedrive.{sub}") == [], sub


def test_concat_scenes_and_batched_attacks_do_not_interact():
    a, b = sd.benign_scenes(2, 20, random_state=1), sd.benign_scenes(1, 20, random_state=2)
    ab = sd.concat_scenes(a, b)
    assert np.array_equal(ab.states[2:], b.states) and ab.n_scenes == 3
    ra, _ = sd.attack_labels(a, iters=4)
    rab, _ = sd.attack_labels(ab, iters=4)
    assert np.array_equal(rab[:2], ra)  # each scene's attack is optimised independently of the batch


# ----------------------------------------------------------------------------- the chapter's experiment


def test_binary_labels_follow_the_authors_dict():
    g = np.array([[0.0, 1.0, 0.5, 0.0], [1.0, 0.5, 0.0, 0.5], [0.0, 1.0, 1.0, 0.0]])
    lab = sd.binary_labels(g)
    assert lab.tolist() == [[0, 1, 0, 0], [1, 0, 0, 0], [0, 1, 1, 0]]  # a near miss earns nothing; "no vehicle" iff none collides


def test_collision_rates_count_samples_and_scenes():
    y = C.lane_centres()[1]
    s0 = np.array([[[0.0, y, 0.0, 12.0], [15.0, y, 0.0, 12.0]], [[0.0, y, 0.0, 12.0], [15.0, y, 0.0, 12.0]]])
    b = sd.rollout_traffic(s0, np.ones((2, 2), bool), np.full((2, 2), 12.0), 40)
    b.states[1, :, 1, 0] = b.states[1, 0, 1, 0]  # in scene 1 the car ahead stands still
    samp, scene = sd.collision_rates(KeepLane(), b, np.array([5, 10]))
    hits = sd.plan_collisions(KeepLane(), b, np.array([[5, 10], [5, 10]]))
    assert hits[1].all() and not hits[0].any()
    assert (samp, scene) == (0.5, 0.5)
    assert all(np.isnan(sd.collision_rates(KeepLane(), b.subset(np.array([], int)), np.array([5]))))


TINY = dict(
    horizon=30,
    n_train=4,
    n_sel=8,
    n_test=6,
    n_gen=4,
    attack_iters=25,
    near_miss=2.0,
    grpo_iters=4,
    group=4,
    beta=0.01,
    clip_eps=0.2,
    band=(0.5, 3.0),
    evade_iters=10,
    replan_iters=3,
    n_step_action=5,
    bc_epochs=2,
    ft_epochs=1,
    plant_rate=0.05,
)


def test_run_replicate_figures_are_consistent():
    kw = dict(baseline=KeepLane(), train_frames=np.arange(5, 10), eval_frames=np.array([5]))
    out, tim = sd.run_replicate(3, TINY, **kw)
    for m in ("GRPO", "closest", "random", "GRPO (graded labels)"):
        assert out[f"success {m}"] <= out["success oracle"]  # nobody beats the best label
    for k in ("benign", "generated", "generated, fine-tuned", "generated, open loop", "benign, keep-lane"):
        assert all(np.isnan(v) or 0 <= v <= 1 for v in out[k]), k
    assert 0 <= out["n planted"] <= 6 and 0 <= out["benign, planted cut-ins"] <= 1
    assert out["seed"] == 3 and set(tim) >= {"evasion stage", "open-loop sensitivity"}
    assert 0 <= out["kept"] <= 1 and 0 <= out["kept, open loop"] <= 1
    assert out["n generated train"] > 0 and len(out["min_dist"]) == round(6 * (1 - out["no vehicle chosen"]))
