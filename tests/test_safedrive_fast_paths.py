"""The fast paths of icml26.safedrive (issue 26, performance) against the forms they replace,
bit for bit: the vectorised traffic step, the disc clearances without a size-2 reduction, the
evasions' sparse clearance penalty (values and gradients), the chunked raster views, and the
experiment's reuse of rendered views and samples."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from test_safedrive import KeepLane  # the keep-lane planner of the main safedrive tests

from icml26 import safedrive as sd

C = sd.RoadConfig()


@pytest.mark.parametrize("n", [1, 2, 7, 33])
def test_rollout_vec_is_the_step_form_bit_for_bit(n):
    s0, pr, v0 = sd.sample_initial_scenes(n, random_state=40 + n)
    a = sd._rollout_steps(s0, pr, v0, 45, C)
    b = sd._rollout_vec(s0, pr, v0, 45, C)
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    assert np.array_equal(sd.rollout_traffic(s0, pr, v0, 45).states, b[0])  # one scene too: no loop hand-off


def test_rollout_vec_keeps_moving_and_odd_absent_slots_in_place():
    s0, pr, v0 = sd.sample_initial_scenes(5, random_state=9)
    assert (~pr).any()
    for park in ([-500.0, -80.0, 0.3, 4.0], [-700.0, -80.0, -0.0, 0.0], [np.nan, -80.0, 0.0, 0.0]):
        s = s0.copy()
        s[~pr] = park  # a moving absent slot, a -0 heading, a NaN: the step must leave them all as they were
        a = sd._rollout_steps(s, pr, v0, 25, C)
        b = sd._rollout_vec(s, pr, v0, 25, C)
        assert np.array_equal(a[0], b[0], equal_nan=True) and np.array_equal(a[1], b[1], equal_nan=True)
        assert np.array_equal(b[0][:, -1][~pr], s[~pr], equal_nan=True)


def test_rollout_vec_breaks_a_lane_tie_as_the_loop_does():
    y = C.lane_centres()
    # two leaders at exactly the same distance in the two lanes the ego straddles
    s0 = np.array([[[0.0, (y[0] + y[1]) / 2, 0.0, 12.0], [20.0, y[1], 0.0, 5.0], [20.0, y[0], 0.0, 9.0]]])
    pr = np.ones((1, 3), bool)
    v0 = np.full((1, 3), 14.0)
    a = sd.rollout_traffic(s0, pr, v0, 30)
    b = sd.rollout_traffic_loop(s0, pr, v0, 30)
    assert np.abs(a.states - b.states).max() < 1e-9


def _states(rng, shape):
    return torch.tensor(
        np.concatenate([rng.normal(0, 3, shape + (2,)), rng.normal(0, 0.3, shape + (1,)), rng.uniform(0, 15, shape + (1,))], -1)
    )


def test_pair_clearance_is_disc_clearance_in_values_and_gradients():
    rng = np.random.default_rng(0)
    a = _states(rng, (40, 9)).requires_grad_(True)
    b = _states(rng, (40, 9))
    ref = sd._disc_clearance(a, b, C)
    new = sd._pair_clearance(sd._disc_centres(a, C), *sd._split_xy(sd._disc_centres(b, C)), C)
    assert torch.equal(ref, new)
    w = torch.tensor(rng.normal(size=(40, 9)))
    (g_ref,) = torch.autograd.grad((ref * w).sum(), a)
    (g_new,) = torch.autograd.grad((new * w).sum(), a)
    assert torch.equal(g_ref, g_new)


@pytest.mark.parametrize("per_vehicle", [True, False])
def test_sparse_violations_give_the_dense_gradient(per_vehicle):
    """Ego states near other vehicles: the dense penalty (every entry) and _violations (violated
    entries only) agree in value and, bit for bit, in gradient."""
    rng = np.random.default_rng(1 + per_vehicle)
    B, T, N = 6, 30, 5
    oth = _states(rng, (B, T, N))
    oth[..., 0] += 25.0 * torch.arange(N)  # vehicles 1 and 2 near the ego (as in traffic), the rest far
    oth[:, :, 2, :2] = oth[:, :, 1, :2] + torch.tensor(rng.normal(0, 1.0, (B, T, 2))) + torch.tensor([4.0, 0.0])
    ego = oth[:, :, 1] + torch.tensor(rng.normal(0, 1.5, (B, T, 4))) * torch.tensor([1.0, 1.0, 0.1, 0.0])
    ego.requires_grad_(True)
    m = rng.random((B, N)) < 0.8
    m[:, 0] = False
    counted = torch.as_tensor(m)[:, None]
    mask = torch.as_tensor(m, dtype=torch.float64)
    if per_vehicle:  # evade_ego's dense form: the ego expanded over the vehicles
        clr = sd._disc_clearance(ego[:, :, None].expand_as(oth), oth, C)
    else:  # evade_ego_receding's: the ego's discs once per step
        clr = sd._disc_clearance_to(ego, sd._disc_centres(oth, C), C)
    dense = (torch.relu(0.6 - clr) ** 2 * mask[:, None]).sum((1, 2))
    ox, oy = sd._split_xy(sd._disc_centres(oth, C))
    sparse = sd._violations(ego, ox, oy, counted, 0.6, C, per_vehicle=per_vehicle)
    viol = (0.6 - clr > 0) & counted
    assert viol.sum() > 20 and (viol.sum(-1) == 2).sum() > 3  # violations, some of two vehicles at once
    assert torch.allclose(dense, sparse, rtol=1e-12, atol=0)
    w = torch.tensor(rng.normal(size=B))
    (g_d,) = torch.autograd.grad((50 * dense * w).sum(), ego)
    (g_s,) = torch.autograd.grad((50 * sparse * w).sum(), ego)
    assert torch.equal(g_d, g_s)


def _render_one_batch(b, fr, res=12, lag=5):
    """render_views as it was: every (scene, frame, point, vehicle) test at once."""
    c = b.config
    S, F = fr.shape
    pts = sd._view_points(res)
    si = np.arange(S)[:, None]
    ego = b.states[si, fr, 0]
    cth, sth = np.cos(ego[..., 2]), np.sin(ego[..., 2])
    wx = ego[..., 0, None] + cth[..., None] * pts[:, 0] - sth[..., None] * pts[:, 1]
    wy = ego[..., 1, None] + sth[..., None] * pts[:, 0] + cth[..., None] * pts[:, 1]
    out = np.zeros((S, F, 3, pts.shape[0]), dtype=np.float32)
    mask = b.present.copy()
    mask[:, 0] = False
    for ch, lagk in ((0, 0), (1, lag)):
        veh = b.states[si, fr - lagk]
        ddx = wx[..., None] - veh[..., None, :, 0]
        ddy = wy[..., None] - veh[..., None, :, 1]
        ct, st = np.cos(veh[..., None, :, 2]), np.sin(veh[..., None, :, 2])
        inside = (np.abs(ct * ddx + st * ddy) <= c.length / 2) & (np.abs(-st * ddx + ct * ddy) <= c.width / 2)
        out[:, :, ch] = (inside & mask[:, None, None, :]).any(-1)
    out[:, :, 2] = (wy >= 0) & (wy <= c.road_width)
    return out.reshape(S, F, 3, 4, res, res).transpose(0, 1, 3, 2, 4, 5)


def test_chunked_views_equal_one_batch():
    b = sd.benign_scenes(9, 30, random_state=4)
    fr = np.tile(np.arange(5, 25), (9, 1))  # more than one chunk of scenes
    v = sd.render_views(b, fr)
    assert v[:, :, :, 0].sum() > 0
    assert np.array_equal(v, _render_one_batch(b, fr))


def test_rendered_once_is_the_same_as_rendered_per_call():
    train = sd.benign_scenes(4, 30, random_state=5)
    gen = sd.benign_scenes(3, 30, random_state=6)
    frames = np.arange(5, 10)
    planner = sd.BCPlanner(hidden=16, random_state=0).fit(
        *sd.planner_samples(train, np.tile(frames, (4, 1))), epochs=2, random_state=0
    )
    ev = np.array([5, 10])
    scored = sd._Scored(gen, ev)
    for p in (planner, KeepLane()):
        assert scored.rates(p) == sd.collision_rates(p, gen, ev)
    assert all(np.isnan(sd._Scored(gen.subset(np.array([], int)), ev).rates(planner)))
    a = sd.finetune_planner(planner, gen, train, np.tile(frames, (3, 1)), np.tile(frames, (4, 1)), epochs=2, random_state=3)
    b = sd._finetune_on(planner, gen, sd.planner_samples(train, np.tile(frames, (4, 1))), frames, epochs=2, random_state=3)
    for pa, pb in zip(a.net.parameters(), b.net.parameters(), strict=True):
        assert torch.equal(pa, pb)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_own_adam_is_torch_adam_bit_for_bit(dtype):
    import copy

    torch.manual_seed(0)
    net1 = torch.nn.Sequential(torch.nn.Linear(7, 16), torch.nn.Tanh(), torch.nn.Linear(16, 3)).to(dtype)
    net2 = copy.deepcopy(net1)
    o1, o2 = torch.optim.Adam(net1.parameters(), lr=3e-3), sd._Adam(net2.parameters(), lr=3e-3)
    X = torch.randn(64, 7, dtype=dtype)
    for _ in range(120):
        for net, o in ((net1, o1), (net2, o2)):
            loss = (net(X) ** 2).mean()
            o.zero_grad()
            loss.backward()
            o.step()
    assert all(torch.equal(a, b) for a, b in zip(net1.parameters(), net2.parameters(), strict=True))
    assert not torch.equal(net1[0].weight, copy.deepcopy(net2)[0].weight * 0)  # it moved
