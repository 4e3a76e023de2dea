"""Benign traffic, the stand-in for nuScenes logs: initial scenes, the IDM + MOBIL-style
rollout (vectorised and a plain loop) and :func:`benign_scenes`.

References
----------
Zhou et al., *SafeMVDrive / SMD*, ICML 2026, arXiv:2505.17727; https://github.com/zhoujiawei3/SafeMVDrive
M. Treiber, A. Hennecke, D. Helbing. Phys. Rev. E 62 (2000) — IDM.
A. Kesting, M. Treiber, D. Helbing. *MOBIL*. TRR 1999 (2007).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .._common import RandomState, check_int, check_random_state
from .road import RoadConfig, SceneBatch, _bicycle_step, _boxes, _boxes_overlap, _check_config, _check_initial, check_no_overlap


# ----------------------------------------------------------------------------- traffic
def sample_initial_scenes(
    n_scenes: int, *, n_agents: tuple[int, int] = (4, 8), config: RoadConfig | None = None, random_state: RandomState = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Draw initial scenes: an ego at :math:`x = 0` and 4–8 agents, none overlapping.

    Agents are placed in random lanes at :math:`x \\sim U(-35, 60)` m with at least
    :math:`l + 6` m between vehicles of the same lane; speeds :math:`U(8, 15)` m/s,
    desired speeds :math:`U(10, 16)` m/s (ego :math:`U(12, 15)`).

    Returns
    -------
    states0 : ndarray, shape (S, 1 + n_agents[1], 4)
    present : ndarray of bool, shape (S, 1 + n_agents[1])
    v0 : ndarray, shape (S, 1 + n_agents[1])

    Parameters
    ----------
    n_scenes : int
    n_agents : (int, int)
        Smallest and largest number of agents besides the ego.
    config : RoadConfig, optional
    random_state : int, Generator or None

    Raises
    ------
    TypeError
        For a ``config`` that is not a :class:`RoadConfig`, or counts that are not integers.
    ValueError
        For ``n_agents`` that is not a pair ``(low, high)`` with ``1 <= low <= high``, or
        when a scene cannot be filled: the agents are placed by at most 200 random draws
        (4–8 agents on the default road use at most ~30), and a scene that still lacks
        agents after them is an error naming how many were placed, never a smaller scene.

    References
    ----------
    Zhou et al., *SafeMVDrive / SMD*, ICML 2026, arXiv:2505.17727; https://github.com/zhoujiawei3/SafeMVDrive
    """
    c = _check_config(config)
    n_scenes = check_int(n_scenes, "n_scenes")
    if isinstance(n_agents, (str, bytes)) or not isinstance(n_agents, Sequence) or len(n_agents) != 2:
        raise ValueError(f"n_agents={n_agents!r} must be a pair (low, high) of agent counts")
    lo, hi = (check_int(k, "n_agents", low=1) for k in n_agents)
    if lo > hi:
        raise ValueError(f"n_agents={n_agents!r} must be (low, high) with low <= high")
    rng = check_random_state(random_state)
    n = 1 + hi
    states = np.zeros((n_scenes, n, 4))
    present = np.zeros((n_scenes, n), dtype=bool)
    v0 = np.full((n_scenes, n), 10.0)
    centres = c.lane_centres()
    for s in range(n_scenes):
        k = int(rng.integers(lo, hi + 1))
        placed = [(int(rng.integers(c.n_lanes)), 0.0)]
        states[s, 0] = [0.0, centres[placed[0][0]], 0.0, rng.uniform(10, 14)]
        v0[s, 0] = rng.uniform(12, 15)
        present[s, 0] = True
        slot = 1
        for _ in range(200):
            if slot > k:
                break
            lane, x = int(rng.integers(c.n_lanes)), float(rng.uniform(-35, 60))
            if any(pl == lane and abs(px - x) < c.length + 6.0 for pl, px in placed):
                continue
            placed.append((lane, x))
            states[s, slot] = [x, centres[lane], 0.0, rng.uniform(8, 15)]
            v0[s, slot] = rng.uniform(10, 16)
            present[s, slot] = True
            slot += 1
        if slot <= k:  # the 200 draws ran out: say so rather than return a scene with fewer agents
            per_lane = int(95.0 // (c.length + 6.0)) + 1
            raise ValueError(
                f"sample_initial_scenes could place only {slot - 1} of the {k} agents drawn for scene {s} "
                f"(n_agents={n_agents!r}) in 200 random draws: {c.n_lanes} lanes of x in [-35, 60) m with "
                f"{c.length + 6.0:g} m between vehicles of a lane hold at most {c.n_lanes * per_lane - 1} agents, "
                "and random placement fills far fewer; ask for fewer agents or more lanes"
            )
        for j in range(slot, n):  # absent slots: parked far off the road, never interact
            states[s, j] = [-1000.0 - 50.0 * j, -100.0, 0.0, 0.0]
    return states, present, v0


def _lane_of(y: np.ndarray, c: RoadConfig) -> np.ndarray:
    return np.clip(np.floor(y / c.lane_width), 0, c.n_lanes - 1).astype(int)


def _occupies(y: np.ndarray, c: RoadConfig) -> np.ndarray:
    """(…, L) bool: the vehicle body overlaps lane l laterally."""
    return np.abs(y[..., None] - c.lane_centres()) < (c.lane_width + c.width) / 2 - 0.05


def _steer_to(y_target: np.ndarray, y: np.ndarray, th: np.ndarray, v: np.ndarray, c: RoadConfig) -> np.ndarray:
    # np.minimum(np.maximum(.)) is np.clip without its per-call overhead (the simulator calls this every step)
    th_d = np.minimum(np.maximum(0.1 * (y_target - y), -0.1), 0.1)
    omega = 2.0 * (th_d - th)
    return np.minimum(np.maximum(np.arctan(omega * c.wheelbase / np.maximum(v, 1.0)), -c.steer_max), c.steer_max)


def _idm(v: np.ndarray, v_lead: np.ndarray, gap: np.ndarray, v0: np.ndarray, c: RoadConfig) -> np.ndarray:
    """The IDM formula of :func:`_idm_accel` without conversions or checks (the simulator's inner
    loop, where gaps are floored at 0.1 m and desired speeds were checked once)."""
    s_star = np.maximum(c.s0 + v * c.headway + v * (v - v_lead) / (2.0 * np.sqrt(c.a_max * c.b_comf)), c.s0)
    inf = np.isinf(gap)
    inter = np.where(inf, 0.0, (s_star / np.where(inf, 1.0, gap)) ** 2)  # gap >= 0.1 or inf: no invalid division
    return c.a_max * (1.0 - (np.maximum(v, 0.0) / v0) ** c.delta - inter)


def _traffic_context(present: np.ndarray, c: RoadConfig) -> dict[str, Any]:
    """What :func:`_traffic_controls` needs every step but depends only on who is present."""
    S, N = present.shape
    return {
        "other": ~np.eye(N, dtype=bool)[None] & present[:, None, :],
        "present_l": present[..., None],
        "si": np.arange(S)[:, None, None],
        "ni": np.arange(N)[None, :, None],
        "s2": np.arange(S)[:, None],
        "n2": np.arange(N)[None, :],
        "lanes": np.arange(c.n_lanes)[None, None, :],
        "centres": c.lane_centres(),
    }


def _traffic_controls(
    st: np.ndarray,
    present: np.ndarray,
    v0: np.ndarray,
    target: np.ndarray,
    decide: bool,
    c: RoadConfig,
    ctx: dict[str, Any] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Vectorised IDM + MOBIL controls for every vehicle of every scene. Shapes (S, N).

    ``ctx`` (:func:`_traffic_context`) may be passed in to save rebuilding it every step."""
    ctx = _traffic_context(present, c) if ctx is None else ctx
    x, y, th, v = st[..., 0], st[..., 1], st[..., 2], st[..., 3]
    S, N = x.shape
    L = c.n_lanes
    centres = ctx["centres"]
    occ = (np.abs(y[..., None] - centres) < (c.lane_width + c.width) / 2 - 0.05) & ctx["present_l"]  # (S, N, L)
    dx = x[:, None, :] - x[:, :, None]  # (S, i, j) = x_j - x_i
    other = ctx["other"]
    # leader and follower of i in each lane l
    lane_ok = occ[:, None, :, :]  # (S, 1, j, L)
    d_ahead = np.where(((dx > 0) & other)[..., None] & lane_ok, dx[..., None], np.inf)  # (S, i, j, L)
    si, ni, li = ctx["si"], ctx["ni"], ctx["lanes"]
    jl = d_ahead.argmin(2)  # (S, i, L): the nearest leader in each lane
    gap_l = d_ahead[si, ni, jl, li] - c.length  # its gap
    vl = v[si, jl]  # and its speed
    # current leader: nearest over the lanes the vehicle occupies or targets
    mine = occ | (ctx["lanes"] == target[..., None])
    g_cur = np.where(mine, gap_l, np.inf)
    lc = np.argmin(g_cur, axis=-1)  # (S, N)
    s2, n2 = ctx["s2"], ctx["n2"]
    gap_cur = g_cur[s2, n2, lc]
    v_cur = vl[s2, n2, lc]
    a_cur = _idm(v, v_cur, np.maximum(gap_cur, 0.1), v0, c)
    new_target = target.copy()
    if decide:  # followers are needed only for lane-change decisions
        d_behind = np.where(((dx < 0) & other)[..., None] & lane_ok, -dx[..., None], np.inf)
        jf = d_behind.argmin(2)
        gap_f = d_behind[si, ni, jf, li] - c.length
        vf = v[si, jf]
        lane = _lane_of(y, c)
        settled = np.abs(y - centres[target]) < 0.2
        best_gain = np.full((S, N), c.lc_threshold)
        for dl in (-1, 1):
            ln = lane + dl
            valid = (ln >= 0) & (ln < L) & settled & present
            lnc = np.clip(ln, 0, L - 1)
            g_n = gap_l[s2, n2, lnc]
            v_n = vl[s2, n2, lnc]
            gf_n = gap_f[s2, n2, lnc]
            vf_n = vf[s2, n2, lnc]
            a_new = _idm(v, v_n, np.maximum(g_n, 0.1), v0, c)
            a_fol = _idm(vf_n, v, np.maximum(gf_n, 0.1), np.full_like(v, 30.0), c)
            safe = (g_n > 2.0) & (gf_n > 2.0) & (a_fol > -c.b_safe)
            gain = a_new - a_cur
            take = valid & safe & (gain > best_gain)
            new_target = np.where(take, lnc, new_target)
            best_gain = np.where(take, gain, best_gain)
    lo, hi = c.accel_bounds
    acc = np.minimum(np.maximum(a_cur, lo), hi)  # = np.clip, without its call overhead
    steer = _steer_to(centres[new_target], y, th, v, c)
    ctrl = np.stack([acc, steer], -1) * present[..., None]
    return ctrl, new_target


def rollout_traffic(
    states0: np.ndarray, present: np.ndarray, v0: np.ndarray, horizon: int, config: RoadConfig | None = None
) -> SceneBatch:
    """Simulate benign traffic: every vehicle (the ego too) is an IDM + MOBIL driver on a
    kinematic bicycle, vectorised over scenes and agents (:func:`_rollout_vec`; a single
    scene too, where it is still faster than the per-agent loop of
    :func:`rollout_traffic_loop`, with which it agrees to rounding).

    Lane changes (MOBIL without politeness): every ``lc_every`` steps a settled vehicle
    moves to an adjacent lane when its IDM acceleration there exceeds the current one by
    ``lc_threshold`` and the new follower would brake less than ``b_safe``.

    Parameters
    ----------
    states0 : ndarray, shape (S, N, 4)
    present : ndarray of bool, shape (S, N)
    v0 : ndarray, shape (S, N)
        Desired speeds (> 0).
    horizon : int
        Number of steps :math:`T`.
    config : RoadConfig, optional

    Returns
    -------
    SceneBatch

    Raises
    ------
    ValueError
        If two vehicles overlap at :math:`t = 0` (see :func:`check_no_overlap`).

    References
    ----------
    Treiber, Hennecke & Helbing, Phys. Rev. E 62:1805 (2000) — IDM.
    Kesting, Treiber & Helbing, *MOBIL*, Transp. Res. Rec. 1999 (2007).
    """
    c = _check_config(config)
    s0, pr = _check_initial(states0, present)
    horizon = check_int(horizon, "horizon")
    v0 = np.asarray(v0, dtype=float)
    if v0.shape != pr.shape or np.any(~np.isfinite(v0)) or np.any(v0 <= 0):
        raise ValueError(f"v0 must be a finite positive array of shape {pr.shape}")
    check_no_overlap(s0, pr, c)
    states, controls = _rollout_vec(s0, pr, v0, horizon, c)
    return SceneBatch(states, controls, pr.copy(), v0.copy(), c)


def _rollout_steps(s0: np.ndarray, pr: np.ndarray, v0: np.ndarray, horizon: int, c: RoadConfig) -> tuple[np.ndarray, np.ndarray]:
    """The earlier form of :func:`_rollout_vec` (:func:`_traffic_controls` then :func:`_bicycle_step`
    every step), kept as the test oracle that :func:`_rollout_vec` reproduces bit for bit."""
    states = np.zeros((s0.shape[0], horizon + 1) + s0.shape[1:])
    controls = np.zeros((s0.shape[0], horizon) + s0.shape[1:2] + (2,))
    states[:, 0] = s0
    target = _lane_of(s0[..., 1], c)
    ctx = _traffic_context(pr, c)
    for t in range(horizon):
        ctrl, target = _traffic_controls(states[:, t], pr, v0, target, t % c.lc_every == 0, c, ctx)
        controls[:, t] = ctrl
        nxt = _bicycle_step(states[:, t], ctrl, c.dt, c.wheelbase)
        states[:, t + 1] = np.where(pr[..., None], nxt, states[:, t])
    return states, controls


def _rollout_vec(s0: np.ndarray, pr: np.ndarray, v0: np.ndarray, horizon: int, c: RoadConfig) -> tuple[np.ndarray, np.ndarray]:
    """The vectorised traffic model of :func:`rollout_traffic`: states (S, T+1, N, 4), controls (S, T, N, 2).

    The arithmetic of :func:`_traffic_controls` and :func:`_bicycle_step`, element for element,
    with fewer NumPy calls per step (about half at lane-decision steps), which is what a step
    costs on a few scenes of at most nine vehicles (about a quarter less CPU on one scene):
    what depends only on who is present, on the targets (which change only at
    decision steps) or on a vehicle's own speed (the free-road and desired-gap terms of the IDM,
    shared by the current, new-lane and follower accelerations) is computed once; both lane-change
    directions are decided in one pass; a gap of ``inf`` needs no masking ((s*/inf)^2 = 0); the
    controls and the next states are written in place. Bit-identical to :func:`_rollout_steps`
    (tested).
    """
    S, N = pr.shape
    L = c.n_lanes
    states = np.zeros((S, horizon + 1, N, 4))
    controls = np.zeros((S, horizon, N, 2))
    states[:, 0] = s0
    target = _lane_of(s0[..., 1], c)
    ctx = _traffic_context(pr, c)
    centres, other, present_l = ctx["centres"], ctx["other"], ctx["present_l"]
    si, ni, li, s2, n2, lanes = ctx["si"], ctx["ni"], ctx["lanes"], ctx["s2"], ctx["n2"], ctx["lanes"][0, 0]
    occ_half = (c.lane_width + c.width) / 2 - 0.05
    k = 2.0 * np.sqrt(c.a_max * c.b_comf)
    lo, hi = c.accel_bounds
    pres_f = pr.astype(float)[..., None]  # (S, N, 1)
    c_lo, c_hi = np.array([lo, -c.steer_max]), np.array([hi, c.steer_max])  # control bounds
    trig = np.empty((2, S, N))  # cos and sin of the headings
    absent = ~pr
    # an absent slot keeps its state; with zero controls the bicycle step leaves a finite state at
    # speed +0 (and no -0 coordinate) exactly where it is, so such slots need no copying back
    park = s0[absent]
    moving_absent = bool(absent.any()) and not (
        np.isfinite(park).all() and np.all(park[:, 3] == 0) and not (np.signbit(park) & (park == 0)).any()
    )
    dl = np.array([-1, 1])[:, None, None]  # (2, 1, 1): left, right
    tgt_lane = lanes == target[..., None]  # (S, N, L)
    y_target = centres[target]

    def idm(v, v_lead, gap, free, base):
        # _idm with (1 - (v+/v0)^delta) and s0 + v T given; gap >= 0.1 or inf
        return c.a_max * (free - (np.maximum(base + v * (v - v_lead) / k, c.s0) / gap) ** 2)

    for t in range(horizon):
        st = states[:, t]
        x, y, th, v = st[..., 0], st[..., 1], st[..., 2], st[..., 3]
        occ = np.abs(y[..., None] - centres) < occ_half
        occ &= present_l  # (S, N, L)
        dx = x[:, None, :] - x[:, :, None]  # (S, i, j) = x_j - x_i
        ahead = dx > 0
        ahead &= other
        d_ahead = np.where(ahead[..., None] & occ[:, None], dx[..., None], np.inf)  # (S, i, j, L)
        jl = d_ahead.argmin(2)
        gap_l = d_ahead[si, ni, jl, li] - c.length  # (S, N, L)
        vl = v[si, jl]
        g_cur = np.where(occ | tgt_lane, gap_l, np.inf)
        lc = g_cur.argmin(-1)
        free = 1.0 - (np.maximum(v, 0.0) / v0) ** c.delta
        base = c.s0 + v * c.headway
        a_cur = idm(v, vl[s2, n2, lc], np.maximum(g_cur[s2, n2, lc], 0.1), free, base)
        if t % c.lc_every == 0:
            behind = dx < 0
            behind &= other
            d_behind = np.where(behind[..., None] & occ[:, None], -dx[..., None], np.inf)
            jf = d_behind.argmin(2)
            gap_f = d_behind[si, ni, jf, li] - c.length
            vf = v[si, jf]
            ln = np.minimum(np.maximum(np.floor(y / c.lane_width), 0), L - 1).astype(int) + dl  # _lane_of: (2, S, N)
            valid = (ln >= 0) & (ln < L) & ((np.abs(y - y_target) < 0.2) & pr)
            lnc = np.minimum(np.maximum(ln, 0), L - 1)
            g_n = gap_l[s2, n2, lnc]
            gf_n = gap_f[s2, n2, lnc]
            vf_n = vf[s2, n2, lnc]
            a_new = idm(v, vl[s2, n2, lnc], np.maximum(g_n, 0.1), free, base)
            a_fol = idm(vf_n, v, np.maximum(gf_n, 0.1), 1.0 - (np.maximum(vf_n, 0.0) / 30.0) ** c.delta, c.s0 + vf_n * c.headway)
            gain = a_new - a_cur
            ok = valid & (g_n > 2.0) & (gf_n > 2.0) & (a_fol > -c.b_safe)
            take = ok[0] & (gain[0] > c.lc_threshold)
            best = np.where(take, gain[0], c.lc_threshold)
            target = np.where(take, lnc[0], target)
            target = np.where(ok[1] & (gain[1] > best), lnc[1], target)
            tgt_lane = lanes == target[..., None]
            y_target = centres[target]
        th_d = np.minimum(np.maximum(0.1 * (y_target - y), -0.1), 0.1)
        ctrl = controls[:, t]  # (S, N, 2): [acceleration, steering], clipped, zero for absent slots
        ctrl[..., 0] = a_cur
        ctrl[..., 1] = np.arctan(2.0 * (th_d - th) * c.wheelbase / np.maximum(v, 1.0))
        np.multiply(np.minimum(np.maximum(ctrl, c_lo, out=ctrl), c_hi, out=ctrl), pres_f, out=ctrl)
        a, d = ctrl[..., 0], ctrl[..., 1]
        nxt = states[:, t + 1]
        np.cos(th, out=trig[0])
        np.sin(th, out=trig[1])
        np.add(st[..., :2], (v * trig * c.dt).transpose(1, 2, 0), out=nxt[..., :2])  # x + v cos(th) dt, y + ...
        np.add(th, v / c.wheelbase * np.tan(d) * c.dt, out=nxt[..., 2])
        np.maximum(v + a * c.dt, 0.0, out=nxt[..., 3])
        if moving_absent:
            nxt[absent] = st[absent]
    return states, controls


def _loop_neighbour(
    cur: list, row: np.ndarray, i: int, xi: float, lane: int, ahead: bool, occupies: Any, length: float
) -> tuple[float, float]:
    """Nearest vehicle ahead (or behind) of vehicle ``i`` in ``lane``, one vehicle at a time."""
    import math

    best, bv = math.inf, 0.0
    for j in range(len(cur)):
        d = cur[j][0] - xi if ahead else xi - cur[j][0]
        if j != i and row[j] and occupies(cur[j][1], lane) and 0 < d < best:
            best, bv = d, cur[j][3]
    return best - length, bv


def rollout_traffic_loop(
    states0: np.ndarray, present: np.ndarray, v0: np.ndarray, horizon: int, config: RoadConfig | None = None
) -> SceneBatch:
    """Reference for :func:`rollout_traffic`: the same model written as plain Python loops
    over scenes and agents (one vehicle at a time, scalar math). Used to test and time the
    vectorised simulator.

    Parameters
    ----------
    states0, present, v0, horizon, config
        As in :func:`rollout_traffic`.

    Returns
    -------
    SceneBatch
        Equal to :func:`rollout_traffic`'s result up to rounding.

    References
    ----------
    Treiber, Hennecke & Helbing, Phys. Rev. E 62:1805 (2000) — IDM.
    Kesting, Treiber & Helbing, *MOBIL*, Transp. Res. Rec. 1999 (2007).
    """
    c = _check_config(config)
    s0, pr = _check_initial(states0, present)
    horizon = check_int(horizon, "horizon")
    v0 = np.asarray(v0, dtype=float)
    check_no_overlap(s0, pr, c)
    return _rollout_traffic_loop(s0, pr, v0, horizon, c)


def _rollout_traffic_loop(s0: np.ndarray, pr: np.ndarray, v0: np.ndarray, horizon: int, c: RoadConfig) -> SceneBatch:
    """:func:`rollout_traffic_loop` after its input checks."""
    import math

    S, N, _ = s0.shape
    L = c.n_lanes
    centres = [(k + 0.5) * c.lane_width for k in range(L)]
    lo, hi = c.accel_bounds
    sq = math.sqrt(c.a_max * c.b_comf)

    def idm(v, vlead, gap, des):
        s_star = max(c.s0 + v * c.headway + v * (v - vlead) / (2.0 * sq), c.s0)
        inter = 0.0 if math.isinf(gap) else (s_star / gap) ** 2
        return c.a_max * (1.0 - (max(v, 0.0) / des) ** c.delta - inter)

    def occupies(yy, lane):
        return abs(yy - centres[lane]) < (c.lane_width + c.width) / 2 - 0.05

    def lane_of(yy):
        return min(max(int(math.floor(yy / c.lane_width)), 0), L - 1)

    states = np.zeros((S, horizon + 1, N, 4))
    controls = np.zeros((S, horizon, N, 2))
    states[:, 0] = s0
    for s in range(S):
        target = [lane_of(s0[s, i, 1]) for i in range(N)]
        for t in range(horizon):
            cur = [tuple(float(z) for z in states[s, t, i]) for i in range(N)]
            decide = t % c.lc_every == 0
            for i in range(N):
                if not pr[s, i]:
                    states[s, t + 1, i] = cur[i]
                    continue
                xi, yi, thi, vi = cur[i]

                def leader(lane, i=i, xi=xi, cur=cur, row=pr[s]):
                    return _loop_neighbour(cur, row, i, xi, lane, True, occupies, c.length)

                def follower(lane, i=i, xi=xi, cur=cur, row=pr[s]):
                    return _loop_neighbour(cur, row, i, xi, lane, False, occupies, c.length)

                gap_cur, v_cur = math.inf, 0.0
                for lane in range(L):
                    if occupies(yi, lane) or lane == target[i]:
                        g, vl = leader(lane)
                        if g < gap_cur:
                            gap_cur, v_cur = g, vl
                a_cur = idm(vi, v_cur, max(gap_cur, 0.1), v0[s, i])
                if decide and abs(yi - centres[target[i]]) < 0.2:
                    best_gain, new = c.lc_threshold, target[i]
                    for dl in (-1, 1):
                        ln = lane_of(yi) + dl
                        if not 0 <= ln < L:
                            continue
                        g_n, v_n = leader(ln)
                        gf_n, vf_n = follower(ln)
                        a_new = idm(vi, v_n, max(g_n, 0.1), v0[s, i])
                        a_fol = idm(vf_n, vi, max(gf_n, 0.1), 30.0)
                        if g_n > 2.0 and gf_n > 2.0 and a_fol > -c.b_safe and a_new - a_cur > best_gain:
                            best_gain, new = a_new - a_cur, ln
                    target[i] = new
                acc = min(max(a_cur, lo), hi)
                th_d = min(max(0.1 * (centres[target[i]] - yi), -0.1), 0.1)
                steer = math.atan(2.0 * (th_d - thi) * c.wheelbase / max(vi, 1.0))
                steer = min(max(steer, -c.steer_max), c.steer_max)
                controls[s, t, i] = (acc, steer)
                states[s, t + 1, i] = (
                    xi + vi * math.cos(thi) * c.dt,
                    yi + vi * math.sin(thi) * c.dt,
                    thi + vi / c.wheelbase * math.tan(steer) * c.dt,
                    max(vi + acc * c.dt, 0.0),
                )
    return SceneBatch(states, controls, pr.copy(), v0.copy(), c)


def benign_scenes(
    n_scenes: int,
    horizon: int = 40,
    *,
    n_agents: tuple[int, int] = (4, 8),
    config: RoadConfig | None = None,
    random_state: RandomState = None,
) -> SceneBatch:
    """Benign driving logs (stand-in for nuScenes): :func:`sample_initial_scenes` then
    :func:`rollout_traffic`. Scenes where benign traffic itself collides are redrawn.

    Returns
    -------
    SceneBatch

    Parameters
    ----------
    n_scenes : int
    horizon : int
        Steps of ``dt`` (40 steps = 4 s).
    n_agents : (int, int)
    config : RoadConfig, optional
    random_state : int, Generator or None

    References
    ----------
    Zhou et al., *SafeMVDrive / SMD*, ICML 2026, arXiv:2505.17727; https://github.com/zhoujiawei3/SafeMVDrive
    """
    c = _check_config(config)
    n_scenes = check_int(n_scenes, "n_scenes")
    rng = check_random_state(random_state)
    out: list[SceneBatch] = []
    need = n_scenes
    for _ in range(20):
        s0, pr, v0 = sample_initial_scenes(need + 4, n_agents=n_agents, config=c, random_state=rng)
        b = rollout_traffic(s0, pr, v0, horizon, c)
        ok = ~_any_collision(b)
        out.append(b.subset(np.flatnonzero(ok)[:need]))
        need -= int(min(ok.sum(), need))
        if need == 0:
            break
    if need:
        raise RuntimeError("could not draw enough collision-free benign scenes")  # pragma: no cover
    return SceneBatch(*(np.concatenate([getattr(b, k) for b in out]) for k in ("states", "controls", "present", "v0")), c)


def _any_collision(b: SceneBatch) -> np.ndarray:
    bx = _boxes(b.states, b.config)  # (S, T+1, N, 5)
    ov = _boxes_overlap(bx[:, :, :, None], bx[:, :, None, :])
    pm = b.present[:, None, :, None] & b.present[:, None, None, :] & ~np.eye(b.present.shape[1], dtype=bool)
    return (ov & pm).any((1, 2, 3))
