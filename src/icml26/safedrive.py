"""SafeMVDrive / SMD, mechanism only: a 2-D road simulator, GRPO adversary selection and
two-stage (collide, then evade) safety-critical scenario generation.

Everything that the paper runs on large models is replaced by a labelled stand-in:

===========================================  ===============================================
paper                                        here (stand-in)
===========================================  ===============================================
nuScenes logs                                :func:`benign_scenes`: multi-lane road, IDM with
                                             MOBIL-style lane changes, kinematic bicycle
multi-camera video (UniMLVG)                 :func:`render_views`: four ego-centric occupancy
                                             rasters (front, rear, left, right), two frames
Qwen2.5-VL selector trained with GRPO        :class:`SelectorPolicy` scoring candidate
                                             vehicles from state features, trained by
                                             :func:`train_selector` with :func:`grpo_loss`
CTG guided diffusion (collision stage)       :func:`attack_adversary`: gradient descent on
                                             the adversary's controls through the dynamics
CTG guided diffusion (evasion stage)         :func:`evade_ego_receding`: the ego replans every
                                             0.5 s by gradient descent on its controls from
                                             what it has observed (constant-velocity
                                             prediction of the others), near-miss filter;
                                             :func:`evade_ego`, the open-loop variant that
                                             knows the whole attack, as a sensitivity setting
UniAD (end-to-end planner)                   :class:`BCPlanner`, behaviour-cloned on benign
                                             logs, tracked by :func:`track_waypoints`
===========================================  ===============================================

A reader can plug in a real planner (any object with ``plan(views, ego) -> waypoints``,
see :class:`PlannerLike`) or selector (any callable ``(features, mask) -> choice``).

References
----------
J. Zhou, L. Lyu, Z. Tian, C. Zhuo, Y. Li. *SafeMVDrive: Multi-view Safety-Critical Driving
Video Synthesis in the Real World Domain* (ICML 2026 as SMD). arXiv:2505.17727.
Code: https://github.com/zhoujiawei3/SafeMVDrive
M. Treiber, A. Hennecke, D. Helbing. *Congested traffic states in empirical observations and
microscopic simulations*. Phys. Rev. E 62 (2000) — IDM.
A. Kesting, M. Treiber, D. Helbing. *General lane-changing model MOBIL for car-following
models*. TRR 1999 (2007).
Z. Shao et al. *DeepSeekMath* (2024), arXiv:2402.03300 — GRPO.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from ._common import RandomState, check_int, check_random_state, check_real, seed_from

__all__ = [
    "RoadConfig", "SceneBatch", "concat_scenes", "bicycle_step", "idm_accel", "idm_equilibrium_gap", "sample_initial_scenes",
    "check_no_overlap", "rollout_traffic", "rollout_traffic_loop", "benign_scenes", "box_corners",
    "boxes_overlap", "box_distance", "render_views", "waypoint_targets", "track_waypoints", "BCPlanner",
    "PlannerLike", "planner_samples", "plan_collisions", "candidate_features", "SelectorPolicy", "grpo_loss", "train_selector",
    "select_closest", "select_random", "select_with", "attack_adversary", "attack_labels", "graded_rewards",
    "evade_ego", "evade_ego_receding", "predict_constant_velocity", "make_scenarios", "finetune_planner",
    "binary_labels", "collision_rates", "run_replicate",
]


# ----------------------------------------------------------------------------- configuration
@dataclass(frozen=True)
class RoadConfig:
    """The road, the vehicles and the traffic model (SI units: m, s, rad).

    Parameters
    ----------
    n_lanes, lane_width : int, float
        A straight road along :math:`x`, lanes centred at :math:`y = (k + 1/2)\\,w`.
    length, width, wheelbase : float
        Vehicle box and bicycle wheelbase (the same for every vehicle).
    dt : float
        Integration step.
    a_max, b_comf, s0, headway, delta : float
        IDM parameters (maximum acceleration, comfortable braking, jam gap, time headway,
        exponent).
    b_safe, lc_threshold, lc_every : float, float, int
        MOBIL safety braking limit, lane-change incentive threshold and how often (steps) a
        vehicle reconsiders its lane.
    accel_bounds, steer_max : (float, float), float
        Control limits of every vehicle.

    References
    ----------
    Treiber, Hennecke & Helbing, Phys. Rev. E 62:1805 (2000) — IDM.
    Kesting, Treiber & Helbing, *MOBIL*, Transp. Res. Rec. 1999 (2007).
    Zhou et al., *SafeMVDrive / SMD*, ICML 2026, arXiv:2505.17727; https://github.com/zhoujiawei3/SafeMVDrive
    """

    n_lanes: int = 3
    lane_width: float = 3.5
    length: float = 4.5
    width: float = 1.8
    wheelbase: float = 2.7
    dt: float = 0.1
    a_max: float = 1.5
    b_comf: float = 2.0
    s0: float = 2.0
    headway: float = 1.2
    delta: float = 4.0
    b_safe: float = 3.0
    lc_threshold: float = 0.3
    lc_every: int = 10
    accel_bounds: tuple[float, float] = (-6.0, 3.0)
    steer_max: float = 0.4

    def __post_init__(self) -> None:
        check_int(self.n_lanes, "n_lanes")
        check_int(self.lc_every, "lc_every")
        for name in ("lane_width", "length", "width", "wheelbase", "dt", "a_max", "b_comf", "headway", "delta", "b_safe", "steer_max"):
            check_real(getattr(self, name), name, lo=0.0, lo_open=True)
        check_real(self.s0, "s0", lo=0.0)
        lo, hi = self.accel_bounds
        if not (check_real(lo, "accel_bounds[0]") < 0 < check_real(hi, "accel_bounds[1]")):
            raise ValueError(f"accel_bounds={self.accel_bounds!r} must bracket 0 (braking < 0 < acceleration)")

    @property
    def road_width(self) -> float:
        """Total width of the road (m)."""
        return self.n_lanes * self.lane_width

    def lane_centres(self) -> np.ndarray:
        """The lane centres.

        Returns
        -------
        ndarray, shape (n_lanes,)
            Lateral positions of the lane centres (m).
        """
        return (np.arange(self.n_lanes) + 0.5) * self.lane_width


@dataclass
class SceneBatch:
    """A batch of driving logs; vehicle slot 0 is the ego.

    Attributes
    ----------
    states : ndarray, shape (S, T+1, N, 4)
        ``[x, y, heading, speed]`` of every vehicle at every step.
    controls : ndarray, shape (S, T, N, 2)
        ``[acceleration, steering angle]`` applied between steps.
    present : ndarray of bool, shape (S, N)
        Which slots hold a vehicle (scenes have different numbers of agents).
    v0 : ndarray, shape (S, N)
        Desired speeds of the IDM drivers.
    config : RoadConfig

    Parameters
    ----------
    states, controls, present, v0, config
        As the attributes below.

    References
    ----------
    Zhou et al., *SafeMVDrive / SMD*, ICML 2026, arXiv:2505.17727; https://github.com/zhoujiawei3/SafeMVDrive
    """

    states: np.ndarray
    controls: np.ndarray
    present: np.ndarray
    v0: np.ndarray
    config: RoadConfig = field(default_factory=RoadConfig)

    def __post_init__(self) -> None:
        self.states = np.asarray(self.states, dtype=float)
        self.controls = np.asarray(self.controls, dtype=float)
        self.present = np.asarray(self.present)
        self.v0 = np.asarray(self.v0, dtype=float)
        if self.states.ndim != 4 or self.states.shape[-1] != 4:
            raise ValueError(f"states must have shape (S, T+1, N, 4); got {self.states.shape}")
        S, T1, N, _ = self.states.shape
        if self.controls.shape != (S, T1 - 1, N, 2):
            raise ValueError(f"controls must have shape {(S, T1 - 1, N, 2)}; got {self.controls.shape}")
        if self.present.shape != (S, N) or self.present.dtype != bool or self.v0.shape != (S, N):
            raise ValueError(f"present must be bool and present, v0 of shape {(S, N)}; got {self.present.dtype} "
                             f"{self.present.shape} and {self.v0.shape}")
        if T1 < 2:
            raise ValueError("a SceneBatch needs at least one step (T >= 1)")
        if not isinstance(self.config, RoadConfig):
            raise TypeError(f"config must be a RoadConfig, got {type(self.config).__name__}")

    @property
    def n_scenes(self) -> int:
        return self.states.shape[0]

    @property
    def horizon(self) -> int:
        return self.controls.shape[1]

    def subset(self, idx: Any) -> SceneBatch:
        """The scenes ``idx`` (an index array, slice or boolean mask).

        Returns
        -------
        SceneBatch
        """
        return SceneBatch(self.states[idx], self.controls[idx], self.present[idx], self.v0[idx], self.config)


def concat_scenes(*batches: SceneBatch) -> SceneBatch:
    """Stack scene batches with the same horizon, vehicle slots and road into one.

    Batching matters for speed: the gradient-based stages cost about the same per step
    for one scene or a hundred.

    Parameters
    ----------
    *batches : SceneBatch
        At least one.

    Returns
    -------
    SceneBatch
        The scenes of ``batches[0]``, then ``batches[1]``, ...

    References
    ----------
    Zhou et al., *SafeMVDrive / SMD*, ICML 2026, arXiv:2505.17727
    """
    if not batches:
        raise ValueError("concat_scenes needs at least one SceneBatch")
    for k, b in enumerate(batches):
        _check_batch(b, f"batches[{k}]")
    ref = batches[0]
    for k, b in enumerate(batches[1:], 1):
        if b.states.shape[1:] != ref.states.shape[1:] or b.config != ref.config:
            raise ValueError(f"batches[{k}] has steps x slots {b.states.shape[1:3]} and its own road; batches[0] has "
                             f"{ref.states.shape[1:3]}: only batches of one horizon, slot count and RoadConfig stack")
    return SceneBatch(*(np.concatenate([getattr(b, k) for b in batches]) for k in ("states", "controls", "present", "v0")),
                      ref.config)


def _check_config(config: Any) -> RoadConfig:
    if config is None:
        return RoadConfig()
    if not isinstance(config, RoadConfig):
        raise TypeError(f"config must be a RoadConfig or None, got {type(config).__name__}")
    return config


def _check_batch(scenes: Any, name: str = "scenes") -> SceneBatch:
    if not isinstance(scenes, SceneBatch):
        raise TypeError(f"{name} must be a SceneBatch, got {type(scenes).__name__}")
    return scenes


# ----------------------------------------------------------------------------- dynamics
def bicycle_step(state: Any, control: Any, dt: float, wheelbase: float) -> Any:
    """One explicit-Euler step of the kinematic bicycle (rear-axle reference).

    .. math::
        x' = x + v\\cos\\theta\\,\\Delta t,\\quad y' = y + v\\sin\\theta\\,\\Delta t,\\quad
        \\theta' = \\theta + \\frac{v}{L}\\tan\\delta\\,\\Delta t,\\quad v' = \\max(v + a\\,\\Delta t, 0).

    Works on NumPy arrays and on torch tensors (differentiable), vectorised over any
    leading shape.

    Parameters
    ----------
    state : array or tensor, shape (..., 4)
        ``[x, y, heading, speed]``.
    control : array or tensor, shape (..., 2)
        ``[acceleration, steering angle]``.
    dt, wheelbase : float
        Step (s) and wheelbase :math:`L` (m).

    Returns
    -------
    array or tensor, shape (..., 4)

    Raises
    ------
    TypeError
        For ``dt`` or ``wheelbase`` that are not numbers.
    ValueError
        For non-positive ``dt`` or ``wheelbase``, shapes that do not end in 4 and 2, or a
        state or control holding NaN or infinity.

    References
    ----------
    Rajamani, *Vehicle Dynamics and Control*, Springer (2012), §2.2 — kinematic bicycle.
    Zhou et al., *SafeMVDrive / SMD*, ICML 2026, arXiv:2505.17727; https://github.com/zhoujiawei3/SafeMVDrive
    """
    dt = check_real(dt, "dt", lo=0.0, lo_open=True)
    wheelbase = check_real(wheelbase, "wheelbase", lo=0.0, lo_open=True)
    if getattr(state, "shape", (None,))[-1:] != (4,) or getattr(control, "shape", (None,))[-1:] != (2,):
        raise ValueError(f"state must end in 4 ([x, y, heading, speed]) and control in 2 ([accel, steer]); got shapes "
                         f"{getattr(state, 'shape', None)} and {getattr(control, 'shape', None)}")
    for name, z in (("state", state), ("control", control)):
        fin = np.isfinite(z) if isinstance(z, np.ndarray) else __import__("torch").isfinite(z)
        if not bool(fin.all()):
            raise ValueError(f"{name} holds NaN or infinite values; the bicycle model needs a finite {name}")
    return _bicycle_step(state, control, dt, wheelbase)


def _bicycle_step(state: Any, control: Any, dt: float, wheelbase: float) -> Any:
    """:func:`bicycle_step` without the input checks (the library's own rollouts)."""
    dt, wheelbase = float(dt), float(wheelbase)
    x, y, th, v = state[..., 0], state[..., 1], state[..., 2], state[..., 3]
    a, d = control[..., 0], control[..., 1]
    if isinstance(state, np.ndarray):
        xp, vn = np, np.maximum(v + a * dt, 0.0)
    else:
        import torch as xp

        vn = xp.clamp(v + a * dt, min=0.0)
    return xp.stack([x + v * xp.cos(th) * dt, y + v * xp.sin(th) * dt, th + v / wheelbase * xp.tan(d) * dt, vn], -1)


def idm_accel(v: Any, v_lead: Any, gap: Any, v0: Any, config: RoadConfig | None = None) -> np.ndarray:
    """Intelligent Driver Model acceleration (Treiber et al. 2000).

    .. math::
        a = a_{\\max}\\Bigl[1 - (v/v_0)^{\\delta} - \\bigl(s^*/s\\bigr)^2\\Bigr],\\qquad
        s^* = s_0 + vT + \\frac{v\\,(v - v_\\ell)}{2\\sqrt{a_{\\max} b}} ,

    with :math:`s^*` floored at :math:`s_0`; a gap of ``inf`` (no leader) drops the
    interaction term.

    Parameters
    ----------
    v, v_lead, gap, v0 : array_like (broadcast)
        Speed, leader speed, bumper-to-bumper gap (m, > 0) and desired speed (> 0).
    config : RoadConfig, optional

    Returns
    -------
    ndarray

    Raises
    ------
    TypeError
        For a ``config`` that is not a :class:`RoadConfig`.
    ValueError
        For a NaN or non-positive ``gap``, a non-finite or non-positive ``v0``, or speeds
        ``v`` or ``v_lead`` that are NaN, infinite or negative.

    References
    ----------
    Treiber, Hennecke & Helbing, Phys. Rev. E 62:1805 (2000) — IDM.
    """
    c = _check_config(config)
    for name, z in (("v", v), ("v_lead", v_lead)):
        z = np.asarray(z, dtype=float)
        bad = ~np.isfinite(z) | (z < 0)
        if bad.any():
            raise ValueError(f"{name} (a speed) must be finite and >= 0; got {z[bad].ravel()[0]!r}")
    return _idm_accel(v, v_lead, gap, v0, c)


def _idm_accel(v: Any, v_lead: Any, gap: Any, v0: Any, c: RoadConfig) -> np.ndarray:
    """:func:`idm_accel` without the speed checks (the library's traffic model: absent slots may hold anything)."""
    v, v_lead, gap, v0 = (np.asarray(z, dtype=float) for z in (v, v_lead, gap, v0))
    if np.any(np.isnan(gap)) or np.any(gap <= 0):
        raise ValueError(f"gap must be > 0 (inf for no leader) and not NaN; got {gap.ravel()[:5].tolist()}")
    if np.any(~np.isfinite(v0)) or np.any(v0 <= 0):
        raise ValueError("v0 (desired speed) must be finite and > 0")
    s_star = np.maximum(c.s0 + v * c.headway + v * (v - v_lead) / (2.0 * np.sqrt(c.a_max * c.b_comf)), c.s0)
    with np.errstate(invalid="ignore"):
        inter = np.where(np.isinf(gap), 0.0, (s_star / np.where(np.isinf(gap), 1.0, gap)) ** 2)
    return c.a_max * (1.0 - (np.maximum(v, 0.0) / v0) ** c.delta - inter)


def idm_equilibrium_gap(v: float, v0: float, config: RoadConfig | None = None) -> float:
    """Closed-form IDM equilibrium gap behind a leader at the same constant speed.

    .. math:: s_e(v) = \\frac{s_0 + vT}{\\sqrt{1 - (v/v_0)^{\\delta}}},\\qquad 0 \\le v < v_0 .

    Returns
    -------
    float

    Parameters
    ----------
    v : float
        Common speed (m/s), ``0 <= v < v0``.
    v0 : float
        Desired speed (m/s).
    config : RoadConfig, optional

    References
    ----------
    Treiber, Hennecke & Helbing, Phys. Rev. E 62:1805 (2000) — IDM.
    """
    c = _check_config(config)
    v0 = check_real(v0, "v0", lo=0.0, lo_open=True)
    v = check_real(v, "v", lo=0.0, hi=v0, hi_open=True)
    return float((c.s0 + v * c.headway) / np.sqrt(1.0 - (v / v0) ** c.delta))


# ----------------------------------------------------------------------------- geometry
def _check_boxes(boxes: Any, name: str) -> np.ndarray:
    b = np.asarray(boxes, dtype=float)
    if b.shape[-1:] != (5,):
        raise ValueError(f"{name} must have shape (..., 5) [x, y, heading, length, width]; got {b.shape}")
    if not np.all(np.isfinite(b)):
        raise ValueError(f"{name} hold NaN or infinite values; boxes [x, y, heading, length, width] must be finite")
    for j, what in ((3, "length"), (4, "width")):
        if np.any(b[..., j] < 0):
            raise ValueError(f"{name} have a negative {what} ({b[..., j][b[..., j] < 0].ravel()[0]!r}); "
                             f"a box's {what} must be >= 0")
    return b


def box_corners(boxes: np.ndarray) -> np.ndarray:
    """Corners of oriented boxes ``[x, y, heading, length, width]``, counter-clockwise.

    Parameters
    ----------
    boxes : ndarray, shape (..., 5)

    Returns
    -------
    ndarray, shape (..., 4, 2)

    Raises
    ------
    ValueError
        For boxes not of shape ``(..., 5)``, non-finite, or with a negative length or width.

    References
    ----------
    Gottschalk, Lin & Manocha, *OBBTree*, SIGGRAPH 1996 — the separating-axis test for oriented boxes.
    """
    return _box_corners(_check_boxes(boxes, "boxes"))


def _box_corners(b: np.ndarray) -> np.ndarray:
    c, s = np.cos(b[..., 2]), np.sin(b[..., 2])
    hl, hw = b[..., 3] / 2, b[..., 4] / 2
    sx = np.array([1, -1, -1, 1])
    sy = np.array([1, 1, -1, -1])
    lx = sx * hl[..., None]  # (..., 4)
    ly = sy * hw[..., None]
    return np.stack([b[..., 0, None] + c[..., None] * lx - s[..., None] * ly,
                     b[..., 1, None] + s[..., None] * lx + c[..., None] * ly], -1)


def boxes_overlap(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Separating-axis test for pairs of oriented boxes (touching counts as overlap).

    Two convex boxes are disjoint iff some face normal of one of them separates their
    projections: :math:`|d\\cdot u| > r_a(u) + r_b(u)` with :math:`r(u) = \\tfrac{l}{2}|e_1\\cdot u|
    + \\tfrac{w}{2}|e_2\\cdot u|`.

    Parameters
    ----------
    a, b : ndarray, shape (..., 5)
        Boxes ``[x, y, heading, length, width]``; broadcast against each other.

    Returns
    -------
    ndarray of bool, shape (...)

    Raises
    ------
    ValueError
        For boxes not of shape ``(..., 5)``, non-finite, or with a negative length or width.

    References
    ----------
    Gottschalk, Lin & Manocha, *OBBTree*, SIGGRAPH 1996 — the separating-axis test for oriented boxes.
    """
    return _boxes_overlap(_check_boxes(a, "a"), _check_boxes(b, "b"))


def _boxes_overlap(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    if a.shape[-1:] != (5,) or b.shape[-1:] != (5,):
        raise ValueError(f"boxes must have shape (..., 5); got {a.shape} and {b.shape}")
    d = b[..., :2] - a[..., :2]
    ea = np.stack([np.cos(a[..., 2]), np.sin(a[..., 2])], -1)
    na = np.stack([-ea[..., 1], ea[..., 0]], -1)
    eb = np.stack([np.cos(b[..., 2]), np.sin(b[..., 2])], -1)
    nb = np.stack([-eb[..., 1], eb[..., 0]], -1)
    sep = np.zeros(np.broadcast_shapes(a.shape[:-1], b.shape[:-1]), dtype=bool)
    for u in (ea, na, eb, nb):
        ra = a[..., 3] / 2 * np.abs((ea * u).sum(-1)) + a[..., 4] / 2 * np.abs((na * u).sum(-1))
        rb = b[..., 3] / 2 * np.abs((eb * u).sum(-1)) + b[..., 4] / 2 * np.abs((nb * u).sum(-1))
        sep |= np.abs((d * u).sum(-1)) > ra + rb + 1e-12
    return ~sep


def _point_segment_distance(p: np.ndarray, s0: np.ndarray, s1: np.ndarray) -> np.ndarray:
    seg = s1 - s0
    t = np.clip(((p - s0) * seg).sum(-1) / np.maximum((seg * seg).sum(-1), 1e-12), 0.0, 1.0)
    return np.linalg.norm(p - (s0 + t[..., None] * seg), axis=-1)


def box_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Euclidean distance between oriented boxes (0 when they overlap).

    For two disjoint convex polygons the distance is attained between a vertex of one and
    an edge of the other, so it is the minimum of the :math:`2 \\times 4 \\times 4`
    vertex–edge distances.

    Parameters
    ----------
    a, b : ndarray, shape (..., 5)

    Returns
    -------
    ndarray, shape (...)

    Raises
    ------
    ValueError
        For boxes not of shape ``(..., 5)``, non-finite, or with a negative length or width.

    References
    ----------
    Ericson, *Real-Time Collision Detection*, Morgan Kaufmann (2005), §5.1 — closest points.
    """
    return _box_distance(_check_boxes(a, "a"), _check_boxes(b, "b"))


def _box_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    ov = _boxes_overlap(a, b)
    ca, cb = _box_corners(a), _box_corners(b)
    ca, cb = np.broadcast_arrays(ca, cb)
    ea0, ea1 = ca, np.roll(ca, -1, axis=-2)
    eb0, eb1 = cb, np.roll(cb, -1, axis=-2)
    d1 = _point_segment_distance(ca[..., :, None, :], eb0[..., None, :, :], eb1[..., None, :, :]).min((-1, -2))
    d2 = _point_segment_distance(cb[..., :, None, :], ea0[..., None, :, :], ea1[..., None, :, :]).min((-1, -2))
    return np.where(ov, 0.0, np.minimum(d1, d2))


def _boxes(states: np.ndarray, c: RoadConfig) -> np.ndarray:
    shp = states.shape[:-1]
    return np.concatenate([states[..., :3], np.full(shp + (1,), c.length), np.full(shp + (1,), c.width)], -1)


def check_no_overlap(states0: np.ndarray, present: np.ndarray, config: RoadConfig | None = None) -> None:
    """Raise ``ValueError`` naming the first pair of vehicles whose boxes overlap.

    Parameters
    ----------
    states0 : ndarray, shape (S, N, 4)
        Initial states.
    present : ndarray of bool, shape (S, N)
    config : RoadConfig, optional

    Returns
    -------
    None
        Returns quietly when no two present vehicles overlap.

    References
    ----------
    Gottschalk, Lin & Manocha, *OBBTree*, SIGGRAPH 1996 — the separating-axis test for oriented boxes.
    """
    c = _check_config(config)
    s0, pr = _check_initial(states0, present)
    bx = _boxes(s0, c)
    ov = _boxes_overlap(bx[:, :, None], bx[:, None, :])  # (S, N, N)
    ov &= pr[:, :, None] & pr[:, None, :]
    n = s0.shape[1]
    ov &= ~np.eye(n, dtype=bool)[None]
    if ov.any():
        s, i, j = np.argwhere(ov)[0]
        raise ValueError(f"vehicles {i} and {j} of scene {s} overlap at t = 0 (positions {s0[s, i, :2].round(2).tolist()} "
                         f"and {s0[s, j, :2].round(2).tolist()}); every pair of vehicles must start apart")


def _check_initial(states0: Any, present: Any) -> tuple[np.ndarray, np.ndarray]:
    s0 = np.asarray(states0, dtype=float)
    pr = np.asarray(present)
    if s0.ndim != 3 or s0.shape[-1] != 4:
        raise ValueError(f"initial states must have shape (S, N, 4) [x, y, heading, speed]; got {s0.shape}")
    if pr.shape != s0.shape[:2] or pr.dtype != bool:
        raise ValueError(f"present must be a bool array of shape {s0.shape[:2]}; got {pr.dtype} {pr.shape}")
    if not pr[:, 0].all():
        raise ValueError("slot 0 is the ego and must be present in every scene")
    if not np.all(np.isfinite(s0[pr])):
        raise ValueError("initial states of present vehicles must be finite")
    return s0, pr


# ----------------------------------------------------------------------------- traffic
def sample_initial_scenes(n_scenes: int, *, n_agents: tuple[int, int] = (4, 8), config: RoadConfig | None = None,
                          random_state: RandomState = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
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
                "and random placement fills far fewer; ask for fewer agents or more lanes")
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
    return {"other": ~np.eye(N, dtype=bool)[None] & present[:, None, :], "present_l": present[..., None],
            "si": np.arange(S)[:, None, None], "ni": np.arange(N)[None, :, None], "s2": np.arange(S)[:, None], "n2": np.arange(N)[None, :],
            "lanes": np.arange(c.n_lanes)[None, None, :], "centres": c.lane_centres()}


def _traffic_controls(st: np.ndarray, present: np.ndarray, v0: np.ndarray, target: np.ndarray, decide: bool,
                      c: RoadConfig, ctx: dict[str, Any] | None = None) -> tuple[np.ndarray, np.ndarray]:
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


def rollout_traffic(states0: np.ndarray, present: np.ndarray, v0: np.ndarray, horizon: int,
                    config: RoadConfig | None = None) -> SceneBatch:
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
    moving_absent = bool(absent.any()) and not (np.isfinite(park).all() and np.all(park[:, 3] == 0)
                                                  and not (np.signbit(park) & (park == 0)).any())
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
            a_fol = idm(vf_n, v, np.maximum(gf_n, 0.1), 1.0 - (np.maximum(vf_n, 0.0) / 30.0) ** c.delta,
                        c.s0 + vf_n * c.headway)
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


def _loop_neighbour(cur: list, row: np.ndarray, i: int, xi: float, lane: int, ahead: bool, occupies: Any,
                    length: float) -> tuple[float, float]:
    """Nearest vehicle ahead (or behind) of vehicle ``i`` in ``lane``, one vehicle at a time."""
    import math

    best, bv = math.inf, 0.0
    for j in range(len(cur)):
        d = cur[j][0] - xi if ahead else xi - cur[j][0]
        if j != i and row[j] and occupies(cur[j][1], lane) and 0 < d < best:
            best, bv = d, cur[j][3]
    return best - length, bv


def rollout_traffic_loop(states0: np.ndarray, present: np.ndarray, v0: np.ndarray, horizon: int,
                         config: RoadConfig | None = None) -> SceneBatch:
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
                states[s, t + 1, i] = (xi + vi * math.cos(thi) * c.dt, yi + vi * math.sin(thi) * c.dt,
                                       thi + vi / c.wheelbase * math.tan(steer) * c.dt, max(vi + acc * c.dt, 0.0))
    return SceneBatch(states, controls, pr.copy(), v0.copy(), c)


def benign_scenes(n_scenes: int, horizon: int = 40, *, n_agents: tuple[int, int] = (4, 8),
                  config: RoadConfig | None = None, random_state: RandomState = None) -> SceneBatch:
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


# ----------------------------------------------------------------------------- raster views
VIEWS = {  # name: (x range, y range) in the ego frame, metres
    "front": ((0.0, 40.0), (-7.0, 7.0)),
    "rear": ((-20.0, 0.0), (-7.0, 7.0)),
    "left": ((-10.0, 10.0), (0.0, 10.0)),
    "right": ((-10.0, 10.0), (-10.0, 0.0)),
}


def _view_points(res: int) -> np.ndarray:
    pts = []
    for (x0, x1), (y0, y1) in VIEWS.values():
        xs = x0 + (np.arange(res) + 0.5) * (x1 - x0) / res
        ys = y0 + (np.arange(res) + 0.5) * (y1 - y0) / res
        gx, gy = np.meshgrid(xs, ys, indexing="ij")
        pts.append(np.stack([gx, gy], -1).reshape(-1, 2))
    return np.concatenate(pts)  # (4 * res * res, 2)


def render_views(scenes: SceneBatch, frames: np.ndarray, *, res: int = 12, lag: int = 5) -> np.ndarray:
    """Ego-centric raster "camera views" — the stand-in for the paper's multi-view video.

    Four views (front, rear, left, right) of ``res`` × ``res`` cells; channels: other
    vehicles' occupancy now, occupancy ``lag`` steps earlier (motion, as two video frames
    give) and the drivable road.

    Parameters
    ----------
    scenes : SceneBatch
    frames : ndarray of int, shape (S, F)
        Time index per scene and sample (``>= lag``).
    res, lag : int

    Returns
    -------
    ndarray of float32, shape (S, F, 4, 3, res, res)

    References
    ----------
    Zhou et al., *SafeMVDrive / SMD*, ICML 2026, arXiv:2505.17727; https://github.com/zhoujiawei3/SafeMVDrive (the multi-view video this stands in for).
    """
    b = _check_batch(scenes)
    res = check_int(res, "res")
    lag = check_int(lag, "lag", low=0)
    fr = np.asarray(frames)
    if fr.ndim != 2 or fr.shape[0] != b.n_scenes or fr.dtype.kind not in "iu":
        raise ValueError(f"frames must be an int array of shape ({b.n_scenes}, F); got {fr.dtype} {fr.shape}")
    if fr.size and (fr.min() < lag or fr.max() > b.horizon):
        raise ValueError(f"frames must lie in [lag, T] = [{lag}, {b.horizon}]; got [{fr.min()}, {fr.max()}]")
    c = b.config
    S, F = fr.shape
    pts = _view_points(res)  # (P, 2)
    si = np.arange(S)[:, None]
    ego = b.states[si, fr, 0]  # (S, F, 4)
    cth, sth = np.cos(ego[..., 2]), np.sin(ego[..., 2])
    wx = ego[..., 0, None] + cth[..., None] * pts[:, 0] - sth[..., None] * pts[:, 1]  # (S, F, P)
    wy = ego[..., 1, None] + sth[..., None] * pts[:, 0] + cth[..., None] * pts[:, 1]
    out = np.zeros((S, F, 3, pts.shape[0]), dtype=np.float32)
    mask = b.present.copy()
    mask[:, 0] = False
    # the (S, F, P, N) point-in-box tests run a few scenes at a time, so that their temporaries
    # stay in cache (elementwise, the same arithmetic as on the whole batch at once)
    step = max(1, 2 ** 15 // max(1, F * pts.shape[0]))
    for ch, lagk in ((0, 0), (1, lag)):
        veh = b.states[si, fr - lagk]  # (S, F, N, 4)
        ct, st = np.cos(veh[..., None, :, 2]), np.sin(veh[..., None, :, 2])  # (S, F, 1, N)
        for a in range(0, S, step):
            z = slice(a, a + step)
            ddx = wx[z, ..., None] - veh[z, :, None, :, 0]  # (s, F, P, N)
            ddy = wy[z, ..., None] - veh[z, :, None, :, 1]
            inside = (np.abs(ct[z] * ddx + st[z] * ddy) <= c.length / 2) & (np.abs(-st[z] * ddx + ct[z] * ddy) <= c.width / 2)
            out[z, :, ch] = (inside & mask[z, None, None, :]).any(-1)
    out[:, :, 2] = (wy >= 0) & (wy <= c.road_width)
    return out.reshape(S, F, 3, 4, res, res).transpose(0, 1, 3, 2, 4, 5)


def _ego_features(scenes: SceneBatch, frames: np.ndarray) -> np.ndarray:
    c = scenes.config
    ego = scenes.states[np.arange(scenes.n_scenes)[:, None], frames, 0]  # (S, F, 4)
    off = ego[..., 1] - c.lane_centres()[_lane_of(ego[..., 1], c)]
    return np.stack([ego[..., 3] / 15.0, off / c.lane_width, ego[..., 2] * 5, ego[..., 1] / c.road_width], -1).astype(np.float32)


# ----------------------------------------------------------------------------- planner
WAYPOINT_STEPS = (5, 10, 15, 20)  # waypoints at 0.5, 1.0, 1.5, 2.0 s (dt = 0.1)


def waypoint_targets(scenes: SceneBatch, frames: np.ndarray) -> np.ndarray:
    """The logged ego's future positions at +0.5, 1.0, 1.5, 2.0 s in the ego frame at ``frames``.

    Returns
    -------
    ndarray, shape (S, F, 4, 2)

    Parameters
    ----------
    scenes : SceneBatch
    frames : ndarray of int, shape (S, F)
        Sample times; each needs 20 future steps.

    References
    ----------
    Zhou et al., *SafeMVDrive / SMD*, ICML 2026, arXiv:2505.17727; https://github.com/zhoujiawei3/SafeMVDrive
    """
    b = _check_batch(scenes)
    fr = np.asarray(frames)
    if fr.ndim != 2 or fr.shape[0] != b.n_scenes or fr.size and fr.max() + WAYPOINT_STEPS[-1] > b.horizon:
        raise ValueError(f"frames must have shape ({b.n_scenes}, F) and leave {WAYPOINT_STEPS[-1]} future steps; got {fr.shape}")
    si = np.arange(b.n_scenes)[:, None, None]
    ego0 = b.states[np.arange(b.n_scenes)[:, None], fr, 0]  # (S, F, 4)
    fut = b.states[si, fr[..., None] + np.array(WAYPOINT_STEPS), 0]  # (S, F, K, 4)
    d = fut[..., :2] - ego0[..., None, :2]
    c, s = np.cos(ego0[..., 2])[..., None], np.sin(ego0[..., 2])[..., None]
    return np.stack([c * d[..., 0] + s * d[..., 1], -s * d[..., 0] + c * d[..., 1]], -1)


def track_waypoints(state0: np.ndarray, waypoints: np.ndarray, *, steps: int = 20, config: RoadConfig | None = None) -> np.ndarray:
    """Follow planned waypoints with a pure-pursuit steering and proportional speed controller.

    The path is the linear interpolation of the ego position (t = 0) and the waypoints at
    0.5 s spacing. At time :math:`\\tau` the lookahead point is the path at
    :math:`\\tau + 0.5` s; steering :math:`\\delta = \\arctan(2L\\sin\\alpha / \\ell_d)`,
    acceleration :math:`2(v_{\\text{ref}} - v)` clipped to the control limits.

    Parameters
    ----------
    state0 : ndarray, shape (B, 4)
    waypoints : ndarray, shape (B, K, 2)
        In the ego frame of ``state0``.
    steps : int

    Returns
    -------
    ndarray, shape (B, steps + 1, 4)
        The tracked states (world frame).

    References
    ----------
    Coulter, *Implementation of the Pure Pursuit Path Tracking Algorithm*, CMU-RI-TR-92-01 (1992).
    """
    c = _check_config(config)
    st = np.asarray(state0, dtype=float)
    wp = np.asarray(waypoints, dtype=float)
    steps = check_int(steps, "steps")
    if st.ndim != 2 or st.shape[1] != 4 or wp.ndim != 3 or wp.shape[0] != st.shape[0] or wp.shape[2] != 2:
        raise ValueError(f"state0 must be (B, 4) and waypoints (B, K, 2); got {st.shape} and {wp.shape}")
    if not (np.all(np.isfinite(st)) and np.all(np.isfinite(wp))):
        raise ValueError("state0 and waypoints must be finite")
    B, K, _ = wp.shape
    cth, sth = np.cos(st[:, 2:3]), np.sin(st[:, 2:3])
    world = np.stack([st[:, 0:1] + cth * wp[..., 0] - sth * wp[..., 1], st[:, 1:2] + sth * wp[..., 0] + cth * wp[..., 1]], -1)
    path = np.concatenate([st[:, None, :2], world], 1)  # (B, K+1, 2) at 0, 0.5, ...

    def at(tau: float) -> np.ndarray:
        u = tau / 0.5
        k = min(int(np.floor(u)), K - 1)
        w = u - k
        return path[:, k] + w * (path[:, k + 1] - path[:, k])  # extrapolates beyond the last waypoint

    out = np.zeros((B, steps + 1, 4))
    out[:, 0] = st
    lo, hi = c.accel_bounds
    for n in range(steps):
        tau = n * c.dt
        cur = out[:, n]
        p_la, p_now = at(tau + 0.5), at(tau)
        v_ref = np.linalg.norm(p_la - p_now, axis=-1) / 0.5
        rel = p_la - cur[:, :2]
        ld = np.maximum(np.linalg.norm(rel, axis=-1), 1.0)
        alpha = np.arctan2(rel[:, 1], rel[:, 0]) - cur[:, 2]
        steer = np.clip(np.arctan(2 * c.wheelbase * np.sin(alpha) / ld), -c.steer_max, c.steer_max)
        acc = np.clip(2.0 * (v_ref - cur[:, 3]), lo, hi)
        out[:, n + 1] = _bicycle_step(cur, np.stack([acc, steer], -1), c.dt, c.wheelbase)
    return out


class PlannerLike(Protocol):
    """What a planner under test provides (plug in a real end-to-end planner here).

    ``plan(views, ego)`` takes views of shape (B, 4, 3, res, res) (stand-in camera images)
    and ego features (B, 4) (speed / 15, lane offset / lane width, 5 × heading, y / road
    width) and returns waypoints (B, 4, 2) in the ego frame at +0.5, 1.0, 1.5, 2.0 s.

    Parameters
    ----------
    (protocol; no constructor arguments)

    References
    ----------
    Zhou et al., *SafeMVDrive / SMD*, ICML 2026, arXiv:2505.17727; https://github.com/zhoujiawei3/SafeMVDrive
    """

    def plan(self, views: np.ndarray, ego: np.ndarray) -> np.ndarray:
        """Waypoints for each sample.

        Returns
        -------
        ndarray, shape (B, 4, 2)
        """
        ...


class BCPlanner:
    """Behaviour-cloned planner (stand-in for UniAD and the paper's end-to-end planners).

    An MLP on the flattened raster views and ego features, trained by mean-squared error
    to predict the logged ego's waypoints; its output is tracked by :func:`track_waypoints`.

    Parameters
    ----------
    hidden : int
    res : int
        View resolution (must match :func:`render_views`).
    random_state : int, Generator or None

    References
    ----------
    Zhou et al., *SafeMVDrive / SMD*, ICML 2026, arXiv:2505.17727; https://github.com/zhoujiawei3/SafeMVDrive (UniAD and other end-to-end planners, which this stands in for).
    """

    def __init__(self, hidden: int = 128, res: int = 12, random_state: RandomState = None) -> None:
        import torch

        self.hidden = check_int(hidden, "hidden")
        self.res = check_int(res, "res")
        torch.manual_seed(seed_from(random_state))
        d_in = 4 * 3 * self.res * self.res + 4
        self.net = torch.nn.Sequential(torch.nn.Linear(d_in, self.hidden), torch.nn.ReLU(),
                                       torch.nn.Linear(self.hidden, self.hidden), torch.nn.ReLU(),
                                       torch.nn.Linear(self.hidden, 2 * len(WAYPOINT_STEPS)))
        self.scale = np.array([20.0, 2.0], dtype=np.float32)
        self.history: list[float] = []

    def _inputs(self, views: np.ndarray, ego: np.ndarray):
        import torch

        v = np.asarray(views, dtype=np.float32)
        e = np.asarray(ego, dtype=np.float32)
        if v.ndim != 5 or v.shape[1:] != (4, 3, self.res, self.res) or e.shape != (v.shape[0], 4):
            raise ValueError(f"views must be (B, 4, 3, {self.res}, {self.res}) and ego (B, 4); got {v.shape} and {e.shape}")
        return torch.from_numpy(np.concatenate([v.reshape(len(v), -1), e], 1))

    def fit(self, views: np.ndarray, ego: np.ndarray, waypoints: np.ndarray, *, epochs: int = 30, lr: float = 1e-3,
            batch_size: int = 128, random_state: RandomState = None) -> BCPlanner:
        """Behaviour cloning (MSE on scaled waypoints); continue from the current weights
        (so a second call fine-tunes).

        Returns
        -------
        BCPlanner
            ``self``; ``history`` gains one mean loss per epoch.
        """
        import torch

        epochs = check_int(epochs, "epochs")
        batch_size = check_int(batch_size, "batch_size")
        lr = check_real(lr, "lr", lo=0.0, lo_open=True)
        X = self._inputs(views, ego)
        Y = np.asarray(waypoints, dtype=np.float32)
        if Y.shape != (len(X), len(WAYPOINT_STEPS), 2):
            raise ValueError(f"waypoints must be ({len(X)}, {len(WAYPOINT_STEPS)}, 2); got {Y.shape}")
        Y = torch.from_numpy((Y / self.scale).reshape(len(Y), -1))
        g = torch.Generator().manual_seed(seed_from(random_state))
        opt = _Adam(self.net.parameters(), lr=lr)
        for _ in range(epochs):
            perm = torch.randperm(len(X), generator=g)
            tot = 0.0
            for i in range(0, len(X), batch_size):
                idx = perm[i:i + batch_size]
                loss = torch.nn.functional.mse_loss(self.net(X[idx]), Y[idx])
                opt.zero_grad()
                loss.backward()
                opt.step()
                tot += float(loss.detach()) * len(idx)
            self.history.append(tot / len(X))
        return self

    def plan(self, views: np.ndarray, ego: np.ndarray) -> np.ndarray:
        """Waypoints (B, 4, 2) in the ego frame.

        Returns
        -------
        ndarray, shape (B, 4, 2)
        """
        import torch

        with torch.no_grad():
            out = self.net(self._inputs(views, ego)).numpy()
        return out.reshape(len(out), -1, 2) * self.scale

    def copy(self) -> BCPlanner:
        """An independent copy (for fine-tuning without touching the original).

        Returns
        -------
        BCPlanner
        """
        import copy

        return copy.deepcopy(self)


def planner_samples(scenes: SceneBatch, frames: np.ndarray, *, res: int = 12) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Behaviour-cloning samples from logs: views, ego features and the logged ego's
    waypoints at the given frames, flattened over (scene, frame).

    Returns
    -------
    views : ndarray, shape (S*F, 4, 3, res, res)
    ego : ndarray, shape (S*F, 4)
    waypoints : ndarray, shape (S*F, 4, 2)

    Parameters
    ----------
    scenes : SceneBatch
    frames : ndarray of int, shape (S, F)
    res : int
        View resolution.

    References
    ----------
    Zhou et al., *SafeMVDrive / SMD*, ICML 2026, arXiv:2505.17727; https://github.com/zhoujiawei3/SafeMVDrive
    """
    _check_batch(scenes)
    res = check_int(res, "res")
    v = render_views(scenes, frames, res=res)
    e = _ego_features(scenes, frames)
    w = waypoint_targets(scenes, frames)
    return v.reshape((-1,) + v.shape[2:]), e.reshape(-1, 4), w.reshape(-1, len(WAYPOINT_STEPS), 2)


def plan_collisions(planner: Any, scenes: SceneBatch, frames: np.ndarray, *, res: int = 12, steps: int = 20) -> np.ndarray:
    """Open-loop planning collisions, as UniAD's ``obj_box_col``: at each sample the planner
    sees the views, its waypoints are tracked for ``steps`` steps and the planned ego box
    is checked against every other vehicle's logged box at the same times.

    Parameters
    ----------
    planner : PlannerLike
        Any object with ``plan(views, ego) -> waypoints``.
    scenes : SceneBatch
    frames : ndarray of int, shape (S, F)

    Returns
    -------
    ndarray of bool, shape (S, F)
        Sample-level collisions; ``.any(1)`` gives the scene level.

    References
    ----------
    Hu et al., *Planning-oriented Autonomous Driving* (UniAD), CVPR 2023 — ``obj_box_col``.
    Zhou et al., *SafeMVDrive / SMD*, ICML 2026, arXiv:2505.17727; https://github.com/zhoujiawei3/SafeMVDrive
    """
    b = _check_batch(scenes)
    if not callable(getattr(planner, "plan", None)):
        raise TypeError(f"planner must have a plan(views, ego) method, got {type(planner).__name__}")
    fr = np.asarray(frames)
    if fr.ndim != 2 or fr.shape[0] != b.n_scenes or fr.size and fr.max() + steps > b.horizon:
        raise ValueError(f"frames must be ({b.n_scenes}, F) and leave {steps} steps; got {fr.shape}")
    return _plan_collisions(planner, b, fr, _planner_inputs(b, fr, res), steps)


def _planner_inputs(b: SceneBatch, fr: np.ndarray, res: int) -> tuple[np.ndarray, np.ndarray]:
    """What a planner reads at ``fr``: views (S*F, 4, 3, res, res) and ego features (S*F, 4)
    (computed once per scene set when several planners are scored on it)."""
    S, F = fr.shape
    return render_views(b, fr, res=res).reshape(S * F, 4, 3, res, res), _ego_features(b, fr).reshape(S * F, 4)


def _plan_collisions(planner: Any, b: SceneBatch, fr: np.ndarray, inputs: tuple[np.ndarray, np.ndarray],
                     steps: int) -> np.ndarray:
    """:func:`plan_collisions` after its checks, from :func:`_planner_inputs`."""
    S, F = fr.shape
    views, ego = inputs
    wp = np.asarray(planner.plan(views, ego), dtype=float)
    if wp.shape != (S * F, len(WAYPOINT_STEPS), 2) or not np.all(np.isfinite(wp)):
        raise ValueError(f"planner.plan must return finite waypoints of shape {(S * F, len(WAYPOINT_STEPS), 2)}; got {wp.shape}")
    st0 = b.states[np.arange(S)[:, None], fr, 0].reshape(S * F, 4)
    tr = track_waypoints(st0, wp, steps=steps, config=b.config)[:, 1:]  # (SF, steps, 4)
    fut = b.states[np.arange(S)[:, None, None], fr[..., None] + np.arange(1, steps + 1)]  # (S, F, steps, N, 4)
    fut = fut.reshape(S * F, steps, -1, 4)
    ov = _boxes_overlap(_boxes(tr, b.config)[:, :, None], _boxes(fut, b.config))  # (SF, steps, N)
    mask = np.repeat(b.present, F, 0).copy()
    mask[:, 0] = False
    return (ov & mask[:, None, :]).any((1, 2)).reshape(S, F)


class _Adam:
    """Adam (Kingma & Ba 2015) with torch's defaults, the arithmetic of ``torch.optim.Adam``'s
    single-tensor CPU step operation for operation (bit-identical parameters, tested), without its
    per-step framework overhead (and without importing ``torch._dynamo``, which the first
    ``torch.optim`` optimiser of a process does): the library's thousands of small Adam steps
    spend most of their time there.

    .. math:: m \\leftarrow m + (1 - \\beta_1)(g - m),\\quad v \\leftarrow \\beta_2 v + (1 - \\beta_2) g^2,\\quad
              \\theta \\leftarrow \\theta - \\frac{\\eta}{1 - \\beta_1^k}\\,\\frac{m}{\\sqrt{v}/\\sqrt{1 - \\beta_2^k} + \\epsilon}

    Parameters
    ----------
    params : iterable of torch.Tensor
    lr : float

    References
    ----------
    D. P. Kingma, J. Ba. *Adam: A Method for Stochastic Optimization*. ICLR 2015.
    PyTorch ``torch/optim/adam.py``, ``_single_tensor_adam`` (the form reproduced).
    """

    beta1, beta2, eps = 0.9, 0.999, 1e-8

    def __init__(self, params: Any, lr: float) -> None:
        self.params = list(params)
        self.lr = lr
        self.k = 0.0
        self.m: list[Any] = []
        self.v: list[Any] = []

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    def step(self) -> None:
        import torch

        with torch.no_grad():
            if not self.m:
                self.m = [torch.zeros_like(p, memory_format=torch.preserve_format) for p in self.params]
                self.v = [torch.zeros_like(p, memory_format=torch.preserve_format) for p in self.params]
            self.k += 1.0  # every parameter of ours gets a gradient at every step
            b1, b2 = self.beta1, self.beta2
            step_size = self.lr / (1 - b1 ** self.k)
            bc2_sqrt = (1 - b2 ** self.k) ** 0.5
            for p, m, v in zip(self.params, self.m, self.v, strict=True):
                g = p.grad
                m.lerp_(g, 1 - b1)
                v.mul_(b2).addcmul_(g, g, value=1 - b2)
                p.addcdiv_(m, (v.sqrt() / bc2_sqrt).add_(self.eps), value=-step_size)


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
    d = torch.sqrt(dx ** 2 + dy ** 2 + 1e-9)
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


def attack_adversary(scenes: SceneBatch, scene_idx: np.ndarray, adversary: np.ndarray, *, iters: int = 60, lr: float = 0.15,
                     tau: float = 0.5) -> np.ndarray:
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


def graded_rewards(min_dist: np.ndarray, t_hit: np.ndarray, first_other: np.ndarray, off_road: np.ndarray, horizon: int, *,
                   near_miss: float = 2.0) -> np.ndarray:
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
            raise ValueError(f"{name} must hold numbers >= 0 without NaN; got dtype {z.dtype}, "
                             f"values {z.ravel()[:5].tolist()}")
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


def evade_ego(scenes: SceneBatch, scene_idx: np.ndarray, adversary: np.ndarray, adv_traj: np.ndarray, *, iters: int = 100,
              lr: float = 0.05, clearance: float = 0.6, track_weight: float = 1.0, lateral_weight: float = 1.0) -> np.ndarray:
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


def evade_ego_receding(scenes: SceneBatch, scene_idx: np.ndarray, adversary: np.ndarray, adv_traj: np.ndarray, *,
                       n_step_action: int = 5, iters: int = 100, replan_iters: int = 20, lr: float = 0.05,
                       clearance: float = 0.6, track_weight: float = 1.0, lateral_weight: float = 1.0) -> np.ndarray:
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
            done = _rollout_torch_scan(s0, _from_raw(torch.as_tensor(plan[:, k0:k0 + n_step_action]), c), c).numpy()
        ego[:, k0 + 1:k0 + n_step_action + 1] = done[:, 1:]
    return ego


def make_scenarios(scenes: SceneBatch, choice: np.ndarray, attack_trajs: np.ndarray | None = None, *,
                   band: tuple[float, float] = (0.5, 3.0), iters: int = 100, track_weight: float = 1.0,
                   attack_iters: int = 60, lateral_weight: float = 1.0, evasion: str = "receding",
                   n_step_action: int = 5, replan_iters: int = 20) -> tuple[SceneBatch, dict[str, np.ndarray]]:
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
        ego = evade_ego_receding(b, att, adv, at, n_step_action=n_step_action, iters=iters, replan_iters=replan_iters,
                                 track_weight=track_weight, lateral_weight=lateral_weight)
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
    gen = SceneBatch(states[kept], np.zeros((int(kept.sum()), b.horizon) + b.present.shape[1:] + (2,)), b.present[att][kept],
                     b.v0[att][kept], c)
    return gen, {"scene": att[kept], "adversary": adv[kept], "min_dist": md, "kept": kept, "attempted": att}


def finetune_planner(planner: BCPlanner, generated: SceneBatch, benign: SceneBatch, frames: np.ndarray, benign_frames: np.ndarray,
                     *, epochs: int = 20, lr: float = 5e-4, random_state: RandomState = None) -> BCPlanner:
    """Fine-tune a copy of ``planner`` on the evasion trajectories of generated scenes,
    mixed with as many benign samples (so it does not forget ordinary driving).

    Returns
    -------
    BCPlanner
        A new planner; ``planner`` is unchanged. With no generated scenes there is nothing
        to fine-tune on, and the new planner is a copy of ``planner``.

    Parameters
    ----------
    planner : BCPlanner
    generated, benign : SceneBatch
    frames, benign_frames : ndarray of int
        Sample times of each set.
    epochs, lr : int, float
    random_state : int, Generator or None

    References
    ----------
    Zhou et al., *SafeMVDrive / SMD*, ICML 2026, arXiv:2505.17727; https://github.com/zhoujiawei3/SafeMVDrive
    """
    if not isinstance(planner, BCPlanner):
        raise TypeError(f"planner must be a BCPlanner (to fine-tune), got {type(planner).__name__}")
    _check_batch(generated, "generated")
    _check_batch(benign, "benign")
    if generated.n_scenes == 0:  # nothing generated to fine-tune on: the planner as it was
        return planner.copy()
    return _finetune(planner, planner_samples(generated, frames, res=planner.res),
                     planner_samples(benign, benign_frames, res=planner.res), epochs=epochs, lr=lr,
                     random_state=random_state)


def _finetune(planner: BCPlanner, gen_samples: tuple, benign_samples: tuple, *, epochs: int, lr: float,
              random_state: RandomState) -> BCPlanner:
    """:func:`finetune_planner` from :func:`planner_samples` of both sets (the benign ones
    computed once for several fine-tunings)."""
    vg, eg, wg = gen_samples
    vb, eb, wb = benign_samples
    rng = check_random_state(random_state)
    pick = rng.choice(len(vb), size=min(len(vb), len(vg)), replace=False)
    new = planner.copy()
    return new.fit(np.concatenate([vg, vb[pick]]), np.concatenate([eg, eb[pick]]), np.concatenate([wg, wb[pick]]),
                   epochs=epochs, lr=lr, random_state=rng)


# ----------------------------------------------------------------------------- stage A: selection
N_FEATURES = 9


def candidate_features(scenes: SceneBatch) -> tuple[np.ndarray, np.ndarray]:
    """Per-slot features at :math:`t = 0` for the selector (stand-in for what the VLM reads
    from the marked multi-view images). Slot 0 is the "no vehicle" option, described by a
    flag and scene summaries.

    Features of a candidate: relative :math:`x`/30, relative :math:`y` / lane width,
    relative speed / 5, speed / 15, :math:`|\\Delta x|`/30, ahead flag, same-lane flag,
    closing time :math:`\\min(|\\Delta x|/\\max(\\text{closing speed}, 0.1), 10)/10`, none flag.

    Returns
    -------
    features : ndarray of float32, shape (S, N, 9)
    mask : ndarray of bool, shape (S, N)
        Allowed choices (slot 0 always).

    Parameters
    ----------
    scenes : SceneBatch

    References
    ----------
    Zhou et al., *SafeMVDrive / SMD*, ICML 2026, arXiv:2505.17727; https://github.com/zhoujiawei3/SafeMVDrive
    """
    b = _check_batch(scenes)
    s = b.states[:, 0]  # (S, N, 4)
    ego = s[:, :1]
    dx = s[..., 0] - ego[..., 0]
    dy = s[..., 1] - ego[..., 1]
    dv = s[..., 3] - ego[..., 3]
    closing = np.where(dx > 0, -dv, dv)
    ttc = np.minimum(np.abs(dx) / np.maximum(closing, 0.1), 10.0) / 10.0
    same = np.abs(dy) < b.config.lane_width / 2
    f = np.stack([dx / 30, dy / b.config.lane_width, dv / 5, s[..., 3] / 15, np.abs(dx) / 30, (dx > 0).astype(float),
                  same.astype(float), ttc, np.zeros_like(dx)], -1)
    cand = b.present.copy()
    cand[:, 0] = False
    far = np.where(cand, np.abs(dx), np.inf).min(1)
    f[:, 0] = 0.0
    f[:, 0, 4] = np.minimum(far, 60) / 30
    f[:, 0, 3] = cand.sum(1) / 8
    f[:, 0, 8] = 1.0
    f[~b.present] = 0.0
    return f.astype(np.float32), b.present.copy()


class SelectorPolicy:
    """Adversary selector (stand-in for the GRPO-trained Qwen2.5-VL): a shared MLP scores
    every slot; a softmax over the allowed slots (0 = "no vehicle") is the policy
    :math:`\\pi_\\theta(a \\mid \\text{scene})`.

    Parameters
    ----------
    hidden : int
    random_state : int, Generator or None

    References
    ----------
    Zhou et al., *SafeMVDrive / SMD*, ICML 2026, arXiv:2505.17727; https://github.com/zhoujiawei3/SafeMVDrive
    Shao et al., *DeepSeekMath*, arXiv:2402.03300 (2024) — GRPO.
    """

    def __init__(self, hidden: int = 32, random_state: RandomState = None) -> None:
        import torch

        self.hidden = check_int(hidden, "hidden")
        torch.manual_seed(seed_from(random_state))
        self.net = torch.nn.Sequential(torch.nn.Linear(N_FEATURES, self.hidden), torch.nn.Tanh(),
                                       torch.nn.Linear(self.hidden, 1))
        self.history: list[dict[str, float]] = []

    def log_probs(self, features, mask):
        """Log-probabilities, shape (S, N) (``-inf`` where not allowed); torch tensors.

        Returns
        -------
        torch.Tensor, shape (S, N)
        """
        import torch

        f = torch.as_tensor(np.asarray(features, dtype=np.float32))
        m = torch.as_tensor(np.asarray(mask, dtype=bool))
        if f.ndim != 3 or f.shape[-1] != N_FEATURES or m.shape != f.shape[:2]:
            raise ValueError(f"features must be (S, N, {N_FEATURES}) and mask (S, N); got {tuple(f.shape)} and {tuple(m.shape)}")
        logits = self.net(f)[..., 0].masked_fill(~m, -1e9)
        return torch.log_softmax(logits, -1)

    def __call__(self, features: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Greedy choice per scene (the selector's answer)."""
        import torch

        with torch.no_grad():
            return self.log_probs(features, mask).argmax(-1).numpy()

    def copy(self) -> SelectorPolicy:
        """An independent copy (the GRPO reference policy).

        Returns
        -------
        SelectorPolicy
        """
        import copy

        return copy.deepcopy(self)


def grpo_loss(logp_new, logp_old, logp_ref, rewards, *, clip_eps: float = 0.2, beta: float = 0.01, eps: float = 1e-4):
    """The GRPO objective (Shao et al. 2024) for single-token answers, as a loss to minimise.

    With groups of :math:`G` sampled answers per prompt and rewards :math:`r_{ig}`,

    .. math::
        \\hat A_{ig} = \\frac{r_{ig} - \\operatorname{mean}_g r_{ig}}{\\operatorname{std}_g r_{ig} + \\epsilon},\\quad
        \\rho_{ig} = \\frac{\\pi_\\theta(a_{ig})}{\\pi_{\\text{old}}(a_{ig})},

    .. math::
        \\mathcal L = -\\frac{1}{BG}\\sum_{i,g}\\Bigl[\\min\\bigl(\\rho_{ig}\\hat A_{ig},
        \\operatorname{clip}(\\rho_{ig}, 1-\\varepsilon, 1+\\varepsilon)\\hat A_{ig}\\bigr)
        - \\beta\\,\\Bigl(\\frac{\\pi_{\\text{ref}}}{\\pi_\\theta} - \\log\\frac{\\pi_{\\text{ref}}}{\\pi_\\theta} - 1\\Bigr)\\Bigr],

    the KL term being the unbiased "k3" estimator used by GRPO. ``std`` is the sample
    standard deviation (torch's default, as in the open-r1 / VLM-R1 trainer the authors
    build on).

    Parameters
    ----------
    logp_new, logp_old, logp_ref : torch.Tensor, shape (B, G)
        Log-probabilities of the sampled answers under the current, sampling and
        reference policies (only ``logp_new`` carries gradients).
    rewards : torch.Tensor, shape (B, G)
    clip_eps, beta, eps : float

    Returns
    -------
    torch.Tensor
        Scalar loss.

    Raises
    ------
    TypeError
        For settings that are not numbers.
    ValueError
        For inputs of different shapes, not ``(B, G)`` with ``G >= 2``, rewards that are
        not finite, or log-probabilities that are NaN, infinite or positive (above
        ``1e-6``, which leaves room for round-off).

    References
    ----------
    VLM-R1 / open-r1-multimodal ``grpo_trainer`` (used by the SafeMVDrive code).
    """
    import torch

    for name, z in (("logp_new", logp_new), ("logp_old", logp_old), ("logp_ref", logp_ref), ("rewards", rewards)):
        t = torch.as_tensor(z).detach()
        if not t.is_floating_point() and name != "rewards":
            raise TypeError(f"{name} must be floating-point log-probabilities, got dtype {t.dtype}")
        if not bool(torch.isfinite(t).all()):
            raise ValueError(f"{name} holds NaN or infinite values; GRPO needs finite {name}")
        if name != "rewards" and bool((t > 1e-6).any()):
            raise ValueError(f"{name} holds positive values (max {float(t.max()):.3g}); log-probabilities must be <= 0")
    return _grpo_loss(logp_new, logp_old, logp_ref, rewards, clip_eps=clip_eps, beta=beta, eps=eps)


def _grpo_loss(logp_new, logp_old, logp_ref, rewards, *, clip_eps: float = 0.2, beta: float = 0.01, eps: float = 1e-4):
    """:func:`grpo_loss` without the checks of its tensors' values (the library's own training loop)."""
    import torch

    clip_eps = check_real(clip_eps, "clip_eps", lo=0.0, lo_open=True)
    beta = check_real(beta, "beta", lo=0.0)
    eps = check_real(eps, "eps", lo=0.0, lo_open=True)
    ts = [torch.as_tensor(z) for z in (logp_new, logp_old, logp_ref, rewards)]
    if len({tuple(z.shape) for z in ts}) != 1 or ts[0].ndim != 2 or ts[0].shape[1] < 2:
        raise ValueError(f"logp_new, logp_old, logp_ref and rewards must share a shape (B, G) with G >= 2; got {[tuple(z.shape) for z in ts]}")
    new, old, ref, r = ts
    adv = (r - r.mean(1, keepdim=True)) / (r.std(1, keepdim=True) + eps)
    ratio = torch.exp(new - old.detach())
    surr = torch.minimum(ratio * adv, torch.clamp(ratio, 1 - clip_eps, 1 + clip_eps) * adv)
    kl = torch.exp(ref - new) - (ref - new) - 1
    return -(surr - beta * kl).mean()


def train_selector(policy: SelectorPolicy, features: np.ndarray, mask: np.ndarray, rewards: np.ndarray, *, iters: int = 150,
                   group: int = 8, batch: int = 32, inner: int = 2, lr: float = 3e-3, clip_eps: float = 0.2, beta: float = 0.01,
                   random_state: RandomState = None) -> SelectorPolicy:
    """Train the selector with GRPO on the graded label dicts.

    Each iteration samples ``batch`` scenes and ``group`` answers per scene from the
    current policy (kept as :math:`\\pi_{\\text{old}}`), reads each answer's reward from the
    label (:func:`attack_labels`), and takes ``inner`` Adam steps on :func:`grpo_loss`;
    :math:`\\pi_{\\text{ref}}` is the initial policy.

    Returns
    -------
    SelectorPolicy
        ``policy``, trained in place; ``policy.history`` holds mean reward and loss.

    Parameters
    ----------
    policy : SelectorPolicy
    features, mask, rewards
        From :func:`candidate_features` and :func:`attack_labels`.
    iters, group, batch, inner : int
    lr, clip_eps, beta : float
    random_state : int, Generator or None

    References
    ----------
    Shao et al., *DeepSeekMath*, arXiv:2402.03300 (2024) — GRPO.
    Zhou et al., *SafeMVDrive / SMD*, ICML 2026, arXiv:2505.17727; https://github.com/zhoujiawei3/SafeMVDrive
    """
    import torch

    if not isinstance(policy, SelectorPolicy):
        raise TypeError(f"policy must be a SelectorPolicy, got {type(policy).__name__}")
    f = np.asarray(features, dtype=np.float32)
    m = np.asarray(mask, dtype=bool)
    r = np.asarray(rewards, dtype=float)
    if r.shape != m.shape or f.shape[:2] != m.shape:
        raise ValueError(f"features (S, N, F), mask (S, N) and rewards (S, N) must agree; got {f.shape}, {m.shape}, {r.shape}")
    iters, group, batch, inner = (check_int(v, k) for v, k in ((iters, "iters"), (group, "group"), (batch, "batch"), (inner, "inner")))
    if group < 2:
        raise ValueError(f"group={group!r} must be >= 2 (advantages are normalised within a group)")
    lr = check_real(lr, "lr", lo=0.0, lo_open=True)
    rng = check_random_state(random_state)
    g = torch.Generator().manual_seed(seed_from(rng))
    ref = policy.copy()
    opt = _Adam(policy.net.parameters(), lr=lr)
    S = len(f)
    for _ in range(iters):
        idx = rng.choice(S, size=min(batch, S), replace=False)
        with torch.no_grad():
            lp_old_all = policy.log_probs(f[idx], m[idx])
            acts = torch.multinomial(lp_old_all.exp(), group, replacement=True, generator=g)  # (B, G)
            lp_old = lp_old_all.gather(1, acts)
            lp_ref = ref.log_probs(f[idx], m[idx]).gather(1, acts)
        rew = torch.as_tensor(r[idx][np.arange(len(idx))[:, None], acts.numpy()])
        for _ in range(inner):
            lp_new = policy.log_probs(f[idx], m[idx]).gather(1, acts)
            loss = _grpo_loss(lp_new, lp_old, lp_ref, rew, clip_eps=clip_eps, beta=beta)
            opt.zero_grad()
            loss.backward()
            opt.step()
        policy.history.append({"reward": float(rew.mean()), "loss": float(loss.detach())})
    return policy


def select_closest(scenes: SceneBatch) -> np.ndarray:
    """Baseline of the authors' scripts: the candidate closest to the ego at :math:`t = 0`.

    Parameters
    ----------
    scenes : SceneBatch

    Returns
    -------
    ndarray of int, shape (S,)

    References
    ----------
    Zhou et al., *SafeMVDrive / SMD*, ICML 2026, arXiv:2505.17727; https://github.com/zhoujiawei3/SafeMVDrive
    """
    b = _check_batch(scenes)
    d = np.linalg.norm(b.states[:, 0, :, :2] - b.states[:, 0, :1, :2], axis=-1)
    d = np.where(b.present, d, np.inf)
    d[:, 0] = np.inf
    return d.argmin(1)


def select_random(scenes: SceneBatch, random_state: RandomState = None) -> np.ndarray:
    """Baseline: a uniformly random candidate vehicle.

    Parameters
    ----------
    scenes : SceneBatch
    random_state : int, Generator or None

    Returns
    -------
    ndarray of int, shape (S,)

    References
    ----------
    Zhou et al., *SafeMVDrive / SMD*, ICML 2026, arXiv:2505.17727; https://github.com/zhoujiawei3/SafeMVDrive
    """
    b = _check_batch(scenes)
    rng = check_random_state(random_state)
    cand = b.present.copy()
    cand[:, 0] = False
    return np.array([rng.choice(np.flatnonzero(row)) for row in cand])


def select_with(selector: Any, scenes: SceneBatch) -> np.ndarray:
    """Run any selector — a callable ``(features, mask) -> slot per scene`` (0 = "no
    vehicle") — on :func:`candidate_features` of ``scenes``, checking its answers.
    This is where a real selector (e.g. a VLM wrapped to return slot indices) plugs in.

    Parameters
    ----------
    selector : callable
    scenes : SceneBatch

    Returns
    -------
    ndarray of int, shape (S,)
        The checked choices.

    References
    ----------
    Zhou et al., *SafeMVDrive / SMD*, ICML 2026, arXiv:2505.17727; https://github.com/zhoujiawei3/SafeMVDrive
    """
    b = _check_batch(scenes)
    if not callable(selector):
        raise TypeError(f"selector must be callable (features, mask) -> choices, got {type(selector).__name__}")
    f, m = candidate_features(b)
    ch = np.asarray(selector(f, m))
    if ch.shape != (b.n_scenes,) or ch.dtype.kind not in "iu":
        raise ValueError(f"the selector must return one int slot per scene, shape ({b.n_scenes},); got {ch.dtype} {ch.shape}")
    if np.any(ch < 0) or np.any(ch >= m.shape[1]) or not m[np.arange(b.n_scenes), ch].all():
        raise ValueError("the selector chose a slot that is not an allowed choice (absent vehicle or out of range)")
    return ch


# ----------------------------------------------------------------------------- the chapter's experiment
def binary_labels(graded: np.ndarray) -> np.ndarray:
    """The authors' label dict from graded rewards: 1 for a feasible collision, 0 otherwise, and
    "no vehicle" (slot 0) 1 exactly when no candidate collides.

    .. math:: \\ell_j = [r_j = 1]\\ (j \\ge 1),\\qquad \\ell_0 = [\\max_{j \\ge 1} \\ell_j = 0]

    Parameters
    ----------
    graded : ndarray, shape (S, N)
        :func:`attack_labels`' graded rewards (slot 0 = "no vehicle").

    Returns
    -------
    ndarray, shape (S, N)
        Binary labels.

    Raises
    ------
    ValueError
        For an array that is not 2-D with at least two slots.

    References
    ----------
    Zhou et al., *SafeMVDrive / SMD*, ICML 2026, arXiv:2505.17727; https://github.com/zhoujiawei3/SafeMVDrive
    (``scene_editor_json_input_test_crash_or_VLM_reason.py``, the ``json_convert_…`` script).
    """
    g = np.asarray(graded, dtype=float)
    if g.ndim != 2 or g.shape[1] < 2:
        raise ValueError(f"graded must have shape (scenes, slots) with slots >= 2; got {g.shape}")
    lab = (g == 1.0).astype(float)
    lab[:, 0] = (lab[:, 1:].max(1) <= 0).astype(float)
    return lab


def collision_rates(planner: Any, scenes: SceneBatch, eval_frames: np.ndarray) -> tuple[float, float]:
    """Sample- and scene-level open-loop collision rates of a planner (:func:`plan_collisions`
    at ``eval_frames`` of every scene); NaN for an empty batch (shown as "—").

    Parameters
    ----------
    planner : PlannerLike
    scenes : SceneBatch
    eval_frames : ndarray of int, shape (F,)
        The sample times, the same for every scene.

    Returns
    -------
    (float, float)
        Share of colliding samples, share of scenes with a colliding sample.

    Raises
    ------
    ValueError
        For ``eval_frames`` that is not 1-D (and as :func:`plan_collisions`).

    References
    ----------
    Hu et al., *Planning-oriented autonomous driving* (UniAD), CVPR 2023 — ``obj_box_col``.
    """
    b = _check_batch(scenes)
    fr = np.asarray(eval_frames)
    if fr.ndim != 1:
        raise ValueError(f"eval_frames must be 1-D (the same sample times for every scene); got shape {fr.shape}")
    if b.n_scenes == 0:
        return np.nan, np.nan
    c = plan_collisions(planner, b, np.tile(fr, (b.n_scenes, 1)))
    return float(c.mean()), float(c.any(1).mean())


class _Scored:
    """A scene set scored by several planners at the same ``eval_frames``: the views are
    rendered once (:func:`collision_rates` renders them per call; the rates are the same)."""

    def __init__(self, scenes: SceneBatch, eval_frames: np.ndarray, res: int = 12) -> None:
        self.b = scenes
        self.fr = np.tile(np.asarray(eval_frames), (scenes.n_scenes, 1))
        self.inputs = _planner_inputs(scenes, self.fr, res) if scenes.n_scenes else None

    def rates(self, planner: Any) -> tuple[float, float]:
        if self.b.n_scenes == 0:
            return np.nan, np.nan
        c = _plan_collisions(planner, self.b, self.fr, self.inputs, 20)
        return float(c.mean()), float(c.any(1).mean())


def run_replicate(s: int, config: dict[str, Any], *, baseline: Any, train_frames: np.ndarray,
                  eval_frames: np.ndarray) -> tuple[dict[str, Any], dict[str, Any]]:
    """One replicate of the chapter's experiment (every stage of the pipeline, for seed ``s``).

    Four scene sets from different traffic seeds (``1000 s + 1 … 4``): a planner is
    behaviour-cloned on the first; the selector (:func:`train_selector`, on binary labels, and a
    sensitivity copy on graded ones) on the second; the third (held out) is attacked with every
    candidate to score the selectors (GRPO, closest, random, oracle) and turned into generated
    scenarios with the GRPO choice; on the fourth only the chosen vehicle is attacked. The
    evasion stage (:func:`make_scenarios`) runs causally (primary) and open loop (sensitivity);
    the planner is fine-tuned on each setting's training scenes (:func:`finetune_planner`) and
    every planner is scored by :func:`collision_rates`.

    Parameters
    ----------
    s : int
        The replicate's seed (every random stream derives from it).
    config : dict
        The chapter's ``CFG``: ``horizon``, ``n_train``, ``n_sel``, ``n_test``, ``n_gen``,
        ``attack_iters``, ``near_miss``, ``grpo_iters``, ``group``, ``beta``, ``clip_eps``,
        ``band``, ``evade_iters``, ``replan_iters``, ``n_step_action``, ``bc_epochs``,
        ``ft_epochs``.
    baseline : PlannerLike
        The positive control's constant planner (keep lane and speed).
    train_frames, eval_frames : ndarray of int, shape (F,)
        Sample times for behaviour cloning / fine-tuning and for evaluation.

    Returns
    -------
    out : dict
        This replicate's figures (rates as (sample, scene) pairs, selector successes, kept
        fractions, GRPO curve, …).
    times : dict
        Seconds per stage.

    Raises
    ------
    KeyError
        For a ``config`` without one of the settings above.

    References
    ----------
    Zhou et al., *SafeMVDrive / SMD*, ICML 2026, arXiv:2505.17727; https://github.com/zhoujiawei3/SafeMVDrive
    """
    import time as _time

    out, tim = {"seed": s}, {"seed": s}
    T = config["horizon"]
    train = benign_scenes(
        config["n_train"], T, random_state=1000 * s + 1
    )
    sel = benign_scenes(config["n_sel"], T, random_state=1000 * s + 2)
    test = benign_scenes(config["n_test"], T, random_state=1000 * s + 3)
    pool = benign_scenes(config["n_gen"], T, random_state=1000 * s + 4)
    t0 = _time.perf_counter()
    # the benign training samples, rendered once: behaviour cloning and both fine-tunings read them
    train_samples = planner_samples(train, np.tile(train_frames, (train.n_scenes, 1)))
    planner = BCPlanner(random_state=s).fit(
        *train_samples,
        epochs=config["bc_epochs"],
        random_state=s,
    )
    tim["behaviour cloning"] = _time.perf_counter() - t0
    t0 = _time.perf_counter()
    n_sel, n_tr = sel.n_scenes, sel.n_scenes + pool.n_scenes
    rew_both, tr_both = attack_labels(
        concat_scenes(sel, test),
        iters=config["attack_iters"],
        # one batch: the stage costs per step
        near_miss=config["near_miss"],
    )
    graded_both = rew_both
    # the authors' labels: 1 for a colliding candidate, "no vehicle" 1 when none
    rew_both = binary_labels(graded_both)
    rew_sel, rew_te, tr_te = rew_both[:n_sel], rew_both[n_sel:], tr_both[n_sel:]
    tim["attacks (all candidates)"] = _time.perf_counter() - t0
    t0 = _time.perf_counter()
    policy = SelectorPolicy(random_state=s)
    train_selector(
        policy,
        *candidate_features(sel),
        rew_sel,
        iters=config["grpo_iters"],
        group=config["group"],
        beta=config["beta"],
        clip_eps=config["clip_eps"],
        random_state=s,
    )
    tim["GRPO selector"] = _time.perf_counter() - t0
    # sensitivity: the same training on graded labels
    graded_policy = SelectorPolicy(random_state=s)
    train_selector(
        graded_policy,
        *candidate_features(sel),
        graded_both[:n_sel],
        iters=config["grpo_iters"],
        group=config["group"],
        beta=config["beta"],
        clip_eps=config["clip_eps"],
        random_state=s,
    )
    picks = {
        "GRPO": select_with(policy, test),
        "closest": select_closest(test),
        "random": select_random(test, random_state=s),
        "GRPO (graded labels)": select_with(graded_policy, test),
    }
    idx = np.arange(test.n_scenes)
    for name, ch in picks.items():
        val = rew_te[idx, ch]
        out[f"success {name}"] = float(((ch > 0) & (val == 1)).mean())
        # binary labels: the share of correct answers, "no vehicle" included
        out[f"reward {name}"] = float(val.mean())
    out["success oracle"] = float((rew_te[:, 1:].max(1) == 1).mean())
    out["no vehicle chosen"] = float((picks["GRPO"] == 0).mean())
    out["grpo curve"] = [h["reward"] for h in policy.history]
    t0 = _time.perf_counter()
    # the pool: select, then attack only the chosen vehicle
    pick_pool = select_with(policy, pool)
    tr_pool = pool.states.transpose(0, 2, 1, 3).copy()
    att = np.flatnonzero(pick_pool > 0)
    tr_pool[att, pick_pool[att]] = attack_adversary(
        pool, att, pick_pool[att], iters=config["attack_iters"]
    )
    tim["attacks (chosen, pool)"] = _time.perf_counter() - t0
    t0 = _time.perf_counter()
    gen_args = (
        concat_scenes(sel, pool, test),
        np.concatenate(
            [select_with(policy, sel), pick_pool, picks["GRPO"]]
        ),
        np.concatenate([tr_both[:n_sel], tr_pool, tr_te]),
    )
    # the causal evasion: replan every n_step_action steps from what was seen
    gen_all, info = make_scenarios(
        *gen_args,
        band=config["band"],
        iters=config["evade_iters"],
        replan_iters=config["replan_iters"],
        n_step_action=config["n_step_action"],
    )
    is_te = info["scene"] >= n_tr
    gen_tr, gen_te = (
        gen_all.subset(np.flatnonzero(~is_te)),
        gen_all.subset(np.flatnonzero(is_te)),
    )
    te_scene = info["scene"][is_te] - n_tr
    te_att = info["attempted"] >= n_tr
    tim["evasion stage"] = _time.perf_counter() - t0
    out["kept"] = float(info["kept"][te_att].mean()) if te_att.any() else np.nan
    out["n generated test"] = gen_te.n_scenes
    out["n generated train"] = gen_tr.n_scenes
    out["min_dist"] = info["min_dist"][te_att].tolist()
    # each scored set's views are rendered once for all the planners scored on it (= collision_rates)
    test_s, gen_te_s, gen_tr_s = (_Scored(x, eval_frames) for x in (test, gen_te, gen_tr))
    out["benign"] = test_s.rates(planner)
    # positive control: the cloned planner drives better than this
    out["benign, keep-lane"] = test_s.rates(baseline)
    out["benign (same scenes)"] = collision_rates(planner, test.subset(te_scene), eval_frames)
    out["generated"] = gen_te_s.rates(planner)
    t0 = _time.perf_counter()
    # = finetune_planner(planner, gen_tr, train, frames, train frames), the benign samples reused
    ft = _finetune_on(planner, gen_tr, train_samples, train_frames, epochs=config["ft_epochs"], random_state=s)
    tim["fine-tuning"] = _time.perf_counter() - t0
    out["benign, fine-tuned"] = test_s.rates(ft)
    out["generated train"] = gen_tr_s.rates(planner)
    out["generated train, fine-tuned"] = gen_tr_s.rates(ft)
    lat = np.abs(
        gen_te.states[:, :, 0, 1] - test.states[te_scene, :, 0, 1]
    ).max(1)
    out["swerve"] = (
        float((lat > test.config.lane_width / 2).mean()) if len(lat) else np.nan
    )
    out["generated, fine-tuned"] = gen_te_s.rates(ft)
    # sensitivity: the open-loop evasion, which knows the whole attack
    t0 = _time.perf_counter()
    gen_ol, info_ol = make_scenarios(
        *gen_args,
        band=config["band"],
        iters=config["evade_iters"],
        evasion="open_loop",
    )
    ol_te = info_ol["scene"] >= n_tr
    ol_tr = gen_ol.subset(np.flatnonzero(~ol_te))
    ol_te = gen_ol.subset(np.flatnonzero(ol_te))
    ft_ol = _finetune_on(planner, ol_tr, train_samples, train_frames, epochs=config["ft_epochs"], random_state=s)
    tim["open-loop sensitivity"] = _time.perf_counter() - t0
    out["kept, open loop"] = float(info_ol["kept"][te_att].mean())
    ol_te_s = _Scored(ol_te, eval_frames)
    out["generated, open loop"] = ol_te_s.rates(planner)
    out["generated, open loop, fine-tuned"] = ol_te_s.rates(ft_ol)
    out["benign, open loop fine-tuned"] = test_s.rates(ft_ol)
    return out, tim


def _finetune_on(planner: BCPlanner, generated: SceneBatch, benign_samples: tuple, frames: np.ndarray, *, epochs: int,
                 random_state: RandomState) -> BCPlanner:
    """:func:`finetune_planner` of ``planner`` on ``generated`` (sampled at ``frames``, every scene)
    with the benign samples already rendered (:func:`planner_samples`)."""
    if generated.n_scenes == 0:
        return planner.copy()
    gen = planner_samples(generated, np.tile(frames, (generated.n_scenes, 1)), res=planner.res)
    return _finetune(planner, gen, benign_samples, epochs=epochs, lr=5e-4, random_state=random_state)
