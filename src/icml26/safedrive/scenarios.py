"""Stage B of SMD, two-stage scenario generation: the adversary is steered into the ego
(collision stage, :func:`attack_adversary`), then the ego evades (evasion stage,
:func:`evade_ego_receding`, :func:`evade_ego`), with the graded rewards, the attack
labels and the near-miss filter of :func:`make_scenarios`.

References
----------
Zhou et al., *SafeMVDrive / SMD*, ICML 2026, arXiv:2505.17727; https://github.com/zhoujiawei3/SafeMVDrive
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._common import check_int, check_real
from ._optim import _Adam
from .road import RoadConfig, SceneBatch, _bicycle_step, _box_distance, _boxes, _boxes_overlap, _check_batch

# ----------------------------------------------------------------------------- stage B: collide, then evade
_CIRCLES = np.array([-1.35, 0.0, 1.35])  # three discs along the body cover the 4.5 x 1.8 box


def _disc_clearance(a, b, c: RoadConfig):
    """Differentiable clearance between two vehicles (torch), from three covering discs each."""
    import torch

    r = float(np.sqrt((c.length / 6) ** 2 + (c.width / 2) ** 2))
    off = torch.as_tensor(_CIRCLES * c.length / 4.5, dtype=a.dtype)
    pa = a[..., None, :2] + off[:, None] * torch.stack([torch.cos(a[..., 2]), torch.sin(a[..., 2])], -1)[..., None, :]
    pb = b[..., None, :2] + off[:, None] * torch.stack([torch.cos(b[..., 2]), torch.sin(b[..., 2])], -1)[..., None, :]
    d = torch.sqrt(((pa[..., :, None, :] - pb[..., None, :, :]) ** 2).sum(-1) + 1e-9)  # (..., 3, 3)
    return d.amin((-1, -2)) - 2 * r


def _disc_centres(a, c: RoadConfig):
    """The three covering disc centres of vehicles ``a`` (..., 4) (torch): (..., 3, 2)."""
    import torch

    off = torch.as_tensor(_CIRCLES * c.length / 4.5, dtype=a.dtype)
    return a[..., None, :2] + off[:, None] * torch.stack([torch.cos(a[..., 2]), torch.sin(a[..., 2])], -1)[..., None, :]


def _disc_clearance_to(ego, other_centres, c: RoadConfig):
    """:func:`_disc_clearance` of ego states (B, T, 4) to fixed vehicles given by their disc
    centres (B, T, N, 3, 2), so that the fixed side is computed once: (B, T, N)."""
    pa = _disc_centres(ego, c)[:, :, None]  # (B, T, 1, 3, 2)
    return _pair_clearance(pa, *_split_xy(other_centres), c)


def _split_xy(centres):
    """Fixed disc centres (..., 3, 2) as two contiguous coordinate tensors (..., 3) (torch)."""
    return centres[..., 0].contiguous(), centres[..., 1].contiguous()


def _pair_clearance(pa, pb_x, pb_y, c: RoadConfig):
    """:func:`_disc_clearance` from disc centres: ``pa`` (..., 3, 2) (may carry gradients) against
    a fixed side given by its coordinates ``pb_x``, ``pb_y`` (..., 3), broadcast: (...).

    The same arithmetic, :math:`\\min_{ij} \\sqrt{(\\Delta x_{ij}^2 + \\Delta y_{ij}^2) + 10^{-9}} - 2r`,
    with the two coordinates kept apart instead of summed over a trailing axis of size 2 (a
    slow reduction in torch); values and gradients are bit-identical (tested)."""
    import torch

    r = float(np.sqrt((c.length / 6) ** 2 + (c.width / 2) ** 2))
    dx = pa[..., :, None, 0] - pb_x[..., None, :]  # (..., 3, 3)
    dy = pa[..., :, None, 1] - pb_y[..., None, :]
    d = torch.sqrt(dx**2 + dy**2 + 1e-9)
    return d.amin((-1, -2)) - 2 * r


def _violations(tr, oth_x, oth_y, counted, clearance: float, c: RoadConfig, *, per_vehicle: bool):
    """The evasion's clearance penalty per scene, :math:`\\sum_{t, j} [\\text{clearance} - c_{tj}]_+^2`
    over counted vehicles :math:`j`, differentiated only where it is non-zero (torch).

    ``tr`` (B, T, 4) are the ego's states (with gradients), ``oth_x``, ``oth_y`` (B, T, N, 3) the
    fixed vehicles' disc centres and ``counted`` (B, 1, N) which vehicles count. The dense form
    ``(relu(clearance - clr) ** 2 * mask).sum((1, 2))`` spends most of an Adam step on the
    (B, T, N, 3, 3) disc pairs of entries whose penalty and gradient are exactly zero; here one
    pass without autograd finds the violated (scene, step, vehicle) entries, and only those are
    recomputed with autograd, by the same arithmetic, so that every gradient is the dense one
    bit for bit (a test compares them) wherever at most two vehicles are violated at one
    (scene, step) — a sum of two terms does not depend on its order; with three or more the
    two forms may group the sum over vehicles differently, in the last bits. With ``per_vehicle`` the ego's discs are taken per
    (step, vehicle) entry, as :func:`evade_ego`'s dense form did on the ego expanded over the
    vehicles; otherwise once per violated (scene, step), as :func:`_disc_clearance_to`. The
    value (for the loss only, never read back) may differ from the dense sum in the last bits.

    Returns
    -------
    torch.Tensor, shape (B,)
    """
    import torch

    with torch.no_grad():
        clr_all = _pair_clearance(_disc_centres(tr, c)[:, :, None], oth_x, oth_y, c)  # (B, T, N)
        bi, ti, ni = (((clearance - clr_all) > 0) & counted).nonzero(as_tuple=True)
    if per_vehicle:
        pa = _disc_centres(tr[bi, ti], c)  # (K, 3, 2)
    else:
        bt, inv = torch.unique(bi * tr.shape[1] + ti, return_inverse=True)  # the violated (scene, step)s
        pa = _disc_centres(tr[bt // tr.shape[1], bt % tr.shape[1]], c)[inv]  # (K, 3, 2)
    clr = _pair_clearance(pa, oth_x[bi, ti, ni], oth_y[bi, ti, ni], c)  # (K,)
    return torch.zeros(tr.shape[0], dtype=tr.dtype).index_add(0, bi, torch.relu(clearance - clr) ** 2)


def _to_raw(ctrl: np.ndarray, c: RoadConfig) -> np.ndarray:
    lo, hi = c.accel_bounds
    a = np.clip((ctrl[..., 0] - (hi + lo) / 2) / ((hi - lo) / 2), -0.98, 0.98)
    d = np.clip(ctrl[..., 1] / c.steer_max, -0.98, 0.98)
    return np.stack([np.arctanh(a), np.arctanh(d)], -1)


def _from_raw(raw, c: RoadConfig):
    import torch

    lo, hi = c.accel_bounds
    return torch.stack([(hi + lo) / 2 + (hi - lo) / 2 * torch.tanh(raw[..., 0]), c.steer_max * torch.tanh(raw[..., 1])], -1)


def _rollout_torch(s0, ctrl, c: RoadConfig):
    import torch

    out = [s0]
    for t in range(ctrl.shape[-2]):
        out.append(_bicycle_step(out[-1], ctrl[..., t, :], c.dt, c.wheelbase))
    return torch.stack(out, -2)  # (..., T+1, 4)


def _rollout_torch_scan(s0, ctrl, c: RoadConfig):
    """:func:`_rollout_torch` by prefix sums instead of a loop over steps (same model, equal to
    rounding; differentiable). The speed floor :math:`v' = \\max(v + a\\Delta t, 0)` is Lindley's
    recursion, solved by :math:`v_n = S_n + \\max(v_0, \\max_{k \\le n} -S_k)` with
    :math:`S_n = \\Delta t \\sum_{i<n} a_i`; heading and position are then cumulative sums."""
    import torch

    dt, L = float(c.dt), float(c.wheelbase)
    a, d = ctrl[..., 0], ctrl[..., 1]  # (..., T)
    zero = torch.zeros_like(a[..., :1])
    S = torch.cat([zero, torch.cumsum(a * dt, -1)], -1)  # (..., T+1)
    v = S + torch.maximum(s0[..., 3:4], torch.cummax(-S, -1).values)  # (..., T+1)
    th = s0[..., 2:3] + torch.cat([zero, torch.cumsum(v[..., :-1] * torch.tan(d) * (dt / L), -1)], -1)
    x = s0[..., 0:1] + torch.cat([zero, torch.cumsum(v[..., :-1] * torch.cos(th[..., :-1]) * dt, -1)], -1)
    y = s0[..., 1:2] + torch.cat([zero, torch.cumsum(v[..., :-1] * torch.sin(th[..., :-1]) * dt, -1)], -1)
    return torch.stack([x, y, th, v], -1)  # (..., T+1, 4)


def _road_penalty(traj, c: RoadConfig):
    import torch

    y = traj[..., 1]
    return (torch.relu(c.width / 2 - y) ** 2 + torch.relu(y - (c.road_width - c.width / 2)) ** 2).sum(-1)


def attack_adversary(
    scenes: SceneBatch, scene_idx: np.ndarray, adversary: np.ndarray, *, iters: int = 60, lr: float = 0.15, tau: float = 0.5
) -> np.ndarray:
    """Collision stage (stand-in for CTG's collision-guided diffusion): optimise the
    adversary's controls by gradient descent through the bicycle dynamics so that it
    meets the logged ego.

    Minimises, over the adversary's controls :math:`u_{0:T}` (bounded by ``tanh``),

    .. math:: \\operatorname{softmin}_\\tau\\, c_t(u) + 10\\,\\text{road}(u) + 0.05\\,\\overline{\\|u\\|^2}

    with :math:`c_t` the disc clearance to the ego at step :math:`t`. Vectorised over a
    batch of (scene, adversary) pairs.

    Parameters
    ----------
    scenes : SceneBatch
    scene_idx, adversary : ndarray of int, shape (B,)
        The scene and the adversary slot (>= 1, present) of each attack.
    iters, lr, tau : int, float, float

    Returns
    -------
    ndarray, shape (B, T+1, 4)
        The adversary's new trajectory.

    References
    ----------
    Zhong et al., *Guided Conditional Diffusion for Controllable Traffic Simulation* (CTG), ICRA 2023.
    Zhou et al., *SafeMVDrive / SMD*, ICML 2026, arXiv:2505.17727; https://github.com/zhoujiawei3/SafeMVDrive
    """
    import torch

    b = _check_batch(scenes)
    si, adv = _check_pairs(b, scene_idx, adversary)
    iters = check_int(iters, "iters")
    lr = check_real(lr, "lr", lo=0.0, lo_open=True)
    tau = check_real(tau, "tau", lo=0.0, lo_open=True)
    c = b.config
    ego = torch.as_tensor(b.states[si, :, 0])  # (B, T+1, 4)
    s0 = torch.as_tensor(b.states[si, 0, adv])  # (B, 4)
    raw = torch.tensor(_to_raw(b.controls[si, :, adv], c), requires_grad=True)  # (B, T, 2)
    ego_xy = _split_xy(_disc_centres(ego, c))  # (B, T+1, 3) each: the logged ego is fixed
    opt = _Adam([raw], lr=lr)
    for _ in range(iters):
        ctrl = _from_raw(raw, c)
        tr = _rollout_torch(s0, ctrl, c)
        clr = _pair_clearance(_disc_centres(tr, c), *ego_xy, c)  # (B, T+1), = _disc_clearance(tr, ego, c)
        soft = -tau * torch.logsumexp(-clr / tau, -1)
        lo, hi = c.accel_bounds
        effort = ((ctrl[..., 0] / max(-lo, hi)) ** 2 + (ctrl[..., 1] / c.steer_max) ** 2).mean(-1)
        loss = (soft + 10 * _road_penalty(tr, c) + 0.05 * effort).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        return _rollout_torch(s0, _from_raw(raw, c), c).numpy()


def _check_pairs(b: SceneBatch, scene_idx: Any, slot: Any) -> tuple[np.ndarray, np.ndarray]:
    si = np.asarray(scene_idx)
    sl = np.asarray(slot)
    if si.ndim != 1 or sl.shape != si.shape or si.dtype.kind not in "iu" or sl.dtype.kind not in "iu":
        raise ValueError(f"scene_idx and adversary must be 1-D int arrays of equal length; got {si.shape}, {sl.shape}")
    if si.size and (si.min() < 0 or si.max() >= b.n_scenes):
        raise ValueError(f"scene_idx must lie in [0, {b.n_scenes}); got [{si.min()}, {si.max()}]")
    if si.size and (sl.min() < 1 or sl.max() >= b.present.shape[1] or not b.present[si, sl].all()):
        raise ValueError("adversary slots must be present vehicles other than the ego (slot >= 1)")
    return si, sl


def _outcome(b: SceneBatch, si: np.ndarray, adv: np.ndarray, adv_traj: np.ndarray, ego_traj: np.ndarray | None = None):
    """Exact min box distance ego–adversary, first contact step, off-road and contact with others first."""
    c = b.config
    ego = b.states[si, :, 0] if ego_traj is None else ego_traj
    dist = _box_distance(_boxes(ego, c), _boxes(adv_traj, c))  # (B, T+1)
    hit = dist <= 0
    t_hit = np.where(hit.any(1), hit.argmax(1), b.horizon + 1)
    others = b.states[si].copy()  # (B, T+1, N, 4)
    ov = _boxes_overlap(_boxes(adv_traj, c)[:, :, None], _boxes(others, c))
    m = b.present[si].copy()
    m[np.arange(len(si)), adv] = False
    m[:, 0] = False
    first_other = np.where((ov & m[:, None]).any(2).any(1), (ov & m[:, None]).any(2).argmax(1), b.horizon + 1)
    off = (adv_traj[..., 1] < 0) | (adv_traj[..., 1] > c.road_width)
    return dist.min(1), t_hit, first_other, off.any(1)


def graded_rewards(
    min_dist: np.ndarray,
    t_hit: np.ndarray,
    first_other: np.ndarray,
    off_road: np.ndarray,
    horizon: int,
    *,
    near_miss: float = 2.0,
) -> np.ndarray:
    """The graded reward of an attack (our reading of the paper's label dict, see note).

    1 for a feasible collision (the adversary reaches the ego within the horizon, stays on
    the road and hits no other vehicle first), 0.5 for a near miss (minimum box distance
    below ``near_miss`` m), 0 otherwise.

    Returns
    -------
    ndarray, shape (B,)

    Notes
    -----
    The released code reads the values from a dict {vehicle id: reward}; how they were
    computed is not documented. This grading follows the digest's plan.

    Parameters
    ----------
    min_dist, t_hit, first_other, off_road : ndarray, shape (B,)
        Minimum ego distance (m), first contact step, first step touching another vehicle
        (``horizon + 1`` for never) and whether the adversary left the road.
    horizon : int
    near_miss : float

    Raises
    ------
    TypeError
        For a ``horizon`` that is not an integer.
    ValueError
        For arrays of different shapes, a NaN or negative ``min_dist``, NaN steps, a
        ``horizon < 1`` or a non-positive ``near_miss``.

    References
    ----------
    Zhou et al., *SafeMVDrive / SMD*, ICML 2026, arXiv:2505.17727; https://github.com/zhoujiawei3/SafeMVDrive (``vlm-selector`` reward functions).
    """
    near_miss = check_real(near_miss, "near_miss", lo=0.0, lo_open=True)
    horizon = check_int(horizon, "horizon", low=1)
    arrays = [np.asarray(z) for z in (min_dist, t_hit, first_other, off_road)]
    if len({z.shape for z in arrays}) != 1 or arrays[0].ndim != 1:
        raise ValueError(f"min_dist, t_hit, first_other and off_road must be 1-D of one length; got {[z.shape for z in arrays]}")
    md, th, fo, off = arrays
    for name, z in (("min_dist", md), ("t_hit", th), ("first_other", fo)):
        if z.dtype.kind not in "iuf" or np.any(np.isnan(z)) or np.any(z < 0):
            raise ValueError(f"{name} must hold numbers >= 0 without NaN; got dtype {z.dtype}, values {z.ravel()[:5].tolist()}")
    feasible = (th <= horizon) & (fo > th) & ~off.astype(bool)
    return np.where(feasible, 1.0, np.where((md < near_miss) & ~off.astype(bool), 0.5, 0.0))


def attack_labels(scenes: SceneBatch, *, iters: int = 60, near_miss: float = 2.0) -> tuple[np.ndarray, np.ndarray]:
    """Attack with every candidate of every scene and grade each attack: the selector's
    label dict. Slot 0 holds the "no vehicle" reward: 1 when no candidate scores above 0.

    Returns
    -------
    rewards : ndarray, shape (S, N)
        Graded reward per slot (0 for absent slots); slot 0 = "no vehicle".
    trajectories : ndarray, shape (S, N, T+1, 4)
        Each candidate's attack trajectory (the logged one for slot 0 and absent slots).

    Parameters
    ----------
    scenes : SceneBatch
    iters : int
        Adam steps per attack.
    near_miss : float
        Distance (m) below which a missed attack still earns 0.5.

    References
    ----------
    Zhou et al., *SafeMVDrive / SMD*, ICML 2026, arXiv:2505.17727; https://github.com/zhoujiawei3/SafeMVDrive
    """
    b = _check_batch(scenes)
    pairs = np.argwhere(b.present[:, 1:])
    si, adv = pairs[:, 0], pairs[:, 1] + 1
    trajs = b.states.transpose(0, 2, 1, 3).copy()  # (S, N, T+1, 4)
    rewards = np.zeros(b.present.shape)
    if len(si):
        tr = attack_adversary(b, si, adv, iters=iters)
        trajs[si, adv] = tr
        rewards[si, adv] = graded_rewards(*_outcome(b, si, adv, tr), b.horizon, near_miss=near_miss)
    rewards[:, 0] = (rewards[:, 1:].max(1) <= 0).astype(float)
    return rewards, trajs


def evade_ego(
    scenes: SceneBatch,
    scene_idx: np.ndarray,
    adversary: np.ndarray,
    adv_traj: np.ndarray,
    *,
    iters: int = 100,
    lr: float = 0.05,
    clearance: float = 0.6,
    track_weight: float = 1.0,
    lateral_weight: float = 1.0,
) -> np.ndarray:
    """Open-loop evasion stage (a sensitivity setting; the causal one is
    :func:`evade_ego_receding`): with the adversary's whole attack trajectory known in
    advance, re-optimise all of the ego's controls at once so that it keeps a disc clearance
    of at least ``clearance`` m to every vehicle while staying near its logged path.

    .. math:: \\sum_t \\sum_j 50\\,[\\,\\text{clearance} - c_{tj}]_+^2 + w_{\\text{track}}\\,\\overline{\\|p_t - p^{\\log}_t\\|^2}
              + 10\\,\\text{road} + 0.1\\,\\overline{\\|u\\|^2}

    Returns
    -------
    ndarray, shape (B, T+1, 4)
        The ego's evasive trajectory.

    Parameters
    ----------
    scenes : SceneBatch
    scene_idx, adversary : ndarray of int, shape (B,)
    adv_traj : ndarray, shape (B, T+1, 4)
        The adversary's fixed trajectory.
    iters, lr : int, float
    clearance : float
        Target disc clearance (m).
    track_weight, lateral_weight : float
        Pull towards the logged path, and the extra weight of its lateral part.

    References
    ----------
    Zhong et al., CTG, ICRA 2023.
    Zhou et al., *SafeMVDrive / SMD*, ICML 2026, arXiv:2505.17727; https://github.com/zhoujiawei3/SafeMVDrive
    """
    import torch

    b = _check_batch(scenes)
    si, adv = _check_pairs(b, scene_idx, adversary)
    at = np.asarray(adv_traj, dtype=float)
    if at.shape != (len(si), b.horizon + 1, 4):
        raise ValueError(f"adv_traj must have shape {(len(si), b.horizon + 1, 4)}; got {at.shape}")
    iters = check_int(iters, "iters")
    lr = check_real(lr, "lr", lo=0.0, lo_open=True)
    clearance = check_real(clearance, "clearance", lo=0.0)
    track_weight = check_real(track_weight, "track_weight", lo=0.0)
    lateral_weight = check_real(lateral_weight, "lateral_weight", lo=0.0)
    c = b.config
    others = b.states[si].copy()  # (B, T+1, N, 4)
    others[np.arange(len(si)), :, adv] = at
    m = b.present[si].copy()
    m[:, 0] = False
    oth = torch.as_tensor(others)
    log = torch.as_tensor(b.states[si, :, 0])
    s0 = log[:, 0]
    raw = torch.tensor(_to_raw(b.controls[si, :, 0], c), requires_grad=True)
    oth_x, oth_y = _split_xy(_disc_centres(oth, c))  # (B, T+1, N, 3) each: the others are fixed while planning
    counted = torch.as_tensor(m)[:, None]  # (B, 1, N) bool
    opt = _Adam([raw], lr=lr)
    for _ in range(iters):
        ctrl = _from_raw(raw, c)
        tr = _rollout_torch(s0, ctrl, c)  # (B, T+1, 4)
        # the penalty 50 [clearance - c_tj]_+^2 has a gradient only where the clearance is violated: find
        # those (scene, step, vehicle) entries without autograd, then differentiate there alone
        # (_violations: the same values and gradients as the dense form, a few entries instead of B (T+1) N)
        viol = _violations(tr, oth_x, oth_y, counted, clearance, c, per_vehicle=True)  # (B,)
        track = ((tr[..., 0] - log[..., 0]) ** 2 + lateral_weight * (tr[..., 1] - log[..., 1]) ** 2).mean(-1)
        lo, hi = c.accel_bounds
        effort = ((ctrl[..., 0] / max(-lo, hi)) ** 2 + (ctrl[..., 1] / c.steer_max) ** 2).mean(-1)
        loss = (50 * viol + track_weight * track + 10 * _road_penalty(tr, c) + 0.1 * effort).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        return _rollout_torch(s0, _from_raw(raw, c), c).numpy()


def predict_constant_velocity(observed: np.ndarray, steps: int, dt: float = 0.1) -> np.ndarray:
    """Constant-velocity prediction of vehicles from their last observed state (the causal
    evasion's stand-in for the scene diffusion model's forecast of the other agents).

    .. math:: \\hat x_{t+j} = x_t + v_t\\cos\\theta_t\\, j\\Delta t,\\quad
              \\hat y_{t+j} = y_t + v_t\\sin\\theta_t\\, j\\Delta t,\\quad
              \\hat\\theta_{t+j} = \\theta_t,\\quad \\hat v_{t+j} = v_t

    (the bicycle model with zero acceleration and steering), for :math:`j = 0, \\dots,` ``steps``.

    Parameters
    ----------
    observed : ndarray, shape (..., 4)
        ``[x, y, heading, speed]`` at the current step; nothing later is read.
    steps : int
        Prediction length (steps of ``dt``).
    dt : float
        Step (s).

    Returns
    -------
    ndarray, shape (..., steps + 1, 4)
        The predicted states; index 0 is ``observed`` itself.

    Raises
    ------
    ValueError
        For a state that does not end in 4, a non-finite state, ``steps < 0`` or a
        non-positive ``dt``.

    References
    ----------
    Schöller et al., *What the constant velocity model can teach us about pedestrian motion
    prediction*, RA-L 5(2) (2020) — the constant-velocity baseline.
    Zhou et al., *SafeMVDrive / SMD*, ICML 2026, arXiv:2505.17727; https://github.com/zhoujiawei3/SafeMVDrive
    (``guided_rollout_second_time``: the ego replans from the observed history and the model's
    prediction of the others).
    """
    obs = np.asarray(observed, dtype=float)
    if obs.shape[-1:] != (4,):
        raise ValueError(f"observed must end in 4 ([x, y, heading, speed]); got shape {obs.shape}")
    if not np.isfinite(obs).all():
        raise ValueError("observed holds NaN or infinite values; a prediction needs finite states")
    steps = check_int(steps, "steps", low=0)
    dt = check_real(dt, "dt", lo=0.0, lo_open=True)
    return _predict_cv(obs, steps, dt)


def _predict_cv(obs: np.ndarray, steps: int, dt: float) -> np.ndarray:
    tau = np.arange(steps + 1) * dt  # (L+1,)
    out = np.repeat(obs[..., None, :], steps + 1, -2)  # (..., L+1, 4)
    out[..., 0] += (obs[..., 3] * np.cos(obs[..., 2]))[..., None] * tau
    out[..., 1] += (obs[..., 3] * np.sin(obs[..., 2]))[..., None] * tau
    return out


def evade_ego_receding(
    scenes: SceneBatch,
    scene_idx: np.ndarray,
    adversary: np.ndarray,
    adv_traj: np.ndarray,
    *,
    n_step_action: int = 5,
    iters: int = 100,
    replan_iters: int = 20,
    lr: float = 0.05,
    clearance: float = 0.6,
    track_weight: float = 1.0,
    lateral_weight: float = 1.0,
) -> np.ndarray:
    """Causal, receding-horizon evasion stage (stand-in for the authors' closed-loop second
    simulation, ``guided_rollout_second_time`` with ``n_step_action = 5``): every
    ``n_step_action`` steps the ego replans from what it has observed, and executes the first
    ``n_step_action`` controls of the new plan.

    At a replanning step :math:`t_k = k\\,n` the other vehicles' futures are predicted from
    their observed states at :math:`t_k` (:func:`predict_constant_velocity`; the adversary's
    attack beyond :math:`t_k` is never read), and the ego's remaining controls
    :math:`u_{t_k:T}` minimise, by Adam through the bicycle dynamics from the ego's actual state,

    .. math:: \\sum_{t > t_k} \\sum_j 50\\,[\\,\\text{clearance} - \\hat c_{tj}]_+^2
              + w_{\\text{track}}\\,\\overline{\\|p_t - p^{\\log}_t\\|^2} + 10\\,\\text{road}
              + 0.1\\,\\overline{\\|u\\|^2}

    (the loss of :func:`evade_ego` with predicted instead of true clearances :math:`\\hat c`).
    The first plan takes ``iters`` steps from the logged controls, each replan ``replan_iters``
    steps warm-started from the previous plan. The others move as they actually do (log,
    attack) whatever the ego does, as the authors' second simulation replays the first one's
    trajectories for every agent but the ego.

    Parameters
    ----------
    scenes : SceneBatch
    scene_idx, adversary : ndarray of int, shape (B,)
    adv_traj : ndarray, shape (B, T+1, 4)
        The adversary's actual (attack) trajectory, revealed to the ego one step at a time.
    n_step_action : int
        Steps executed between replans (5 = 0.5 s, the authors' setting).
    iters, replan_iters : int
        Adam steps of the first plan and of each replan.
    lr, clearance, track_weight, lateral_weight : float
        As in :func:`evade_ego`.

    Returns
    -------
    ndarray, shape (B, T+1, 4)
        The ego's executed trajectory; its state at step :math:`s` depends on the other
        vehicles only through their states at steps :math:`\\le n\\lfloor (s-1)/n \\rfloor`.

    Raises
    ------
    ValueError
        For a bad ``adv_traj`` shape, bad pairs, non-positive ``n_step_action``, ``iters`` or
        ``replan_iters``, or negative weights.

    References
    ----------
    Zhou et al., *SafeMVDrive / SMD*, ICML 2026, arXiv:2505.17727; https://github.com/zhoujiawei3/SafeMVDrive
    (``tbsim/utils/scene_edit_utils.py::guided_rollout_second_time``, ``scene_edit_config.py``:
    ``n_step_action = 5``, ``ego_escape_loss``).
    Zhong et al., CTG, ICRA 2023.
    """
    import torch

    b = _check_batch(scenes)
    si, adv = _check_pairs(b, scene_idx, adversary)
    at = np.asarray(adv_traj, dtype=float)
    if at.shape != (len(si), b.horizon + 1, 4):
        raise ValueError(f"adv_traj must have shape {(len(si), b.horizon + 1, 4)}; got {at.shape}")
    n_step_action = check_int(n_step_action, "n_step_action")
    iters = check_int(iters, "iters")
    replan_iters = check_int(replan_iters, "replan_iters")
    lr = check_real(lr, "lr", lo=0.0, lo_open=True)
    clearance = check_real(clearance, "clearance", lo=0.0)
    track_weight = check_real(track_weight, "track_weight", lo=0.0)
    lateral_weight = check_real(lateral_weight, "lateral_weight", lo=0.0)
    c = b.config
    T = b.horizon
    others = b.states[si].copy()  # (B, T+1, N, 4): what the other vehicles actually do
    others[np.arange(len(si)), :, adv] = at
    m = b.present[si].copy()
    m[:, 0] = False
    counted = torch.as_tensor(m)[:, None]  # (B, 1, N) bool: every present vehicle but the ego
    log = torch.as_tensor(b.states[si, :, 0])  # (B, T+1, 4)
    plan = _to_raw(b.controls[si, :, 0], c)  # (B, T, 2), raw (pre-tanh) controls
    ego = np.empty((len(si), T + 1, 4))
    ego[:, 0] = b.states[si, 0, 0]
    lo, hi = c.accel_bounds
    for k0 in range(0, T, n_step_action):
        L = T - k0
        pred = torch.as_tensor(_predict_cv(others[:, k0], L, c.dt).transpose(0, 2, 1, 3))  # (B, L+1, N, 4)
        pred_x, pred_y = _split_xy(_disc_centres(pred[:, 1:], c))  # (B, L, N, 3) each: fixed while planning
        s0 = torch.as_tensor(ego[:, k0])
        raw = torch.tensor(plan[:, k0:], requires_grad=True)  # (B, L, 2)
        opt = _Adam([raw], lr=lr)
        for _ in range(iters if k0 == 0 else replan_iters):
            ctrl = _from_raw(raw, c)
            tr = _rollout_torch_scan(s0, ctrl, c)  # (B, L+1, 4)
            # future steps only; the same sum as (relu(clearance - _disc_clearance_to(tr[:, 1:], pred discs, c))^2
            # * mask).sum((1, 2)), differentiated only where the clearance is violated (see _violations)
            viol = _violations(tr[:, 1:], pred_x, pred_y, counted, clearance, c, per_vehicle=False)  # (B,)
            track = ((tr[..., 0] - log[:, k0:, 0]) ** 2 + lateral_weight * (tr[..., 1] - log[:, k0:, 1]) ** 2).mean(-1)
            effort = ((ctrl[..., 0] / max(-lo, hi)) ** 2 + (ctrl[..., 1] / c.steer_max) ** 2).mean(-1)
            loss = (50 * viol + track_weight * track + 10 * _road_penalty(tr, c) + 0.1 * effort).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
        plan[:, k0:] = raw.detach().numpy()
        with torch.no_grad():
            done = _rollout_torch_scan(s0, _from_raw(torch.as_tensor(plan[:, k0 : k0 + n_step_action]), c), c).numpy()
        ego[:, k0 + 1 : k0 + n_step_action + 1] = done[:, 1:]
    return ego


def make_scenarios(
    scenes: SceneBatch,
    choice: np.ndarray,
    attack_trajs: np.ndarray | None = None,
    *,
    band: tuple[float, float] = (0.5, 3.0),
    iters: int = 100,
    track_weight: float = 1.0,
    attack_iters: int = 60,
    lateral_weight: float = 1.0,
    evasion: str = "receding",
    n_step_action: int = 5,
    replan_iters: int = 20,
) -> tuple[SceneBatch, dict[str, np.ndarray]]:
    """Two-stage generation for the chosen adversaries: keep the collision-stage
    trajectory of the chosen vehicle, re-simulate the ego into an evasion and keep the scene
    only if the ego–adversary minimum box distance lies in ``band`` (a near miss) and the
    ego touches nobody.

    The evasion is causal by default (``evasion="receding"``, :func:`evade_ego_receding`:
    the ego replans every ``n_step_action`` steps from what it has observed, as the authors'
    closed-loop second simulation does); ``evasion="open_loop"`` optimises the ego's whole
    trajectory knowing the adversary's entire attack (:func:`evade_ego`, kept as a
    sensitivity setting).

    Parameters
    ----------
    scenes : SceneBatch
    choice : ndarray of int, shape (S,)
        Chosen slot per scene (0 = "no vehicle": no scenario).
    attack_trajs : ndarray, shape (S, N, T+1, 4), optional
        From :func:`attack_labels`; when ``None`` only the chosen vehicles are attacked
        here (:func:`attack_adversary` with ``attack_iters``), as the paper's pipeline does.
    evasion : {"receding", "open_loop"}
        Which evasion stage to run.
    n_step_action, replan_iters : int
        Replanning period and Adam steps per replan of the receding evasion (``iters`` is
        the first plan's).

    Returns
    -------
    generated : SceneBatch
        The kept safety-critical scenes (ego = evasion, adversary = attack).
    info : dict
        ``scene`` (index of each kept scene), ``adversary``, ``min_dist`` per attempted
        scene and ``kept`` (bool per attempted scene), ``attempted`` (scene indices).

    References
    ----------
    Zhou et al., *SafeMVDrive / SMD*, ICML 2026, arXiv:2505.17727; https://github.com/zhoujiawei3/SafeMVDrive
    """
    b = _check_batch(scenes)
    ch = np.asarray(choice)
    if ch.shape != (b.n_scenes,) or ch.dtype.kind not in "iu":
        raise ValueError(f"choice must be an int array of shape ({b.n_scenes},); got {ch.dtype} {ch.shape}")
    lo, hi = (check_real(z, "band", lo=0.0) for z in band)
    if lo >= hi:
        raise ValueError(f"band={band!r} must be (low, high) with low < high")
    if evasion not in ("receding", "open_loop"):
        raise ValueError(f"evasion={evasion!r}; allowed: 'receding' (causal, the default) or 'open_loop'")
    att = np.flatnonzero(ch > 0)
    if attack_trajs is None:
        tr = b.states.transpose(0, 2, 1, 3).copy()
        if len(att):
            _check_pairs(b, att, ch[att])
            tr[att, ch[att]] = attack_adversary(b, att, ch[att], iters=attack_iters)
    else:
        tr = np.asarray(attack_trajs, dtype=float)
        if tr.shape != b.states.transpose(0, 2, 1, 3).shape:
            raise ValueError(f"attack_trajs must have shape {b.states.transpose(0, 2, 1, 3).shape}; got {tr.shape}")
    c = b.config
    empty = {"scene": att[:0], "adversary": att[:0], "min_dist": np.zeros(0), "kept": np.zeros(0, bool), "attempted": att}
    if not len(att):
        return b.subset(att), empty
    adv = ch[att]
    at = tr[att, adv]
    if evasion == "receding":
        ego = evade_ego_receding(
            b,
            att,
            adv,
            at,
            n_step_action=n_step_action,
            iters=iters,
            replan_iters=replan_iters,
            track_weight=track_weight,
            lateral_weight=lateral_weight,
        )
    else:
        ego = evade_ego(b, att, adv, at, iters=iters, track_weight=track_weight, lateral_weight=lateral_weight)
    states = b.states[att].copy()
    states[np.arange(len(att)), :, adv] = at
    states[:, :, 0] = ego
    bx = _boxes(states, c)
    dist = _box_distance(bx[:, :, 0], bx[np.arange(len(att)), :, adv])  # (B, T+1)
    md = dist.min(1)
    m = b.present[att].copy()
    m[:, 0] = False
    touch = (_boxes_overlap(bx[:, :, :1], bx) & m[:, None]).any((1, 2))
    on_road = (ego[..., 1] >= 0).all(1) & (ego[..., 1] <= c.road_width).all(1)
    kept = (md >= lo) & (md <= hi) & ~touch & on_road
    gen = SceneBatch(
        states[kept],
        np.zeros((int(kept.sum()), b.horizon) + b.present.shape[1:] + (2,)),
        b.present[att][kept],
        b.v0[att][kept],
        c,
    )
    return gen, {"scene": att[kept], "adversary": adv[kept], "min_dist": md, "kept": kept, "attempted": att}
