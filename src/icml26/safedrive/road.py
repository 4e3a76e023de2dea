"""The road, its vehicles and their physics: :class:`RoadConfig`, :class:`SceneBatch`, the
kinematic bicycle model, the IDM acceleration and the box geometry of collisions.

References
----------
Zhou et al., *SafeMVDrive / SMD*, ICML 2026, arXiv:2505.17727; https://github.com/zhoujiawei3/SafeMVDrive
M. Treiber, A. Hennecke, D. Helbing. Phys. Rev. E 62 (2000) — IDM.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._common import check_int, check_real


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
        for name in (
            "lane_width",
            "length",
            "width",
            "wheelbase",
            "dt",
            "a_max",
            "b_comf",
            "headway",
            "delta",
            "b_safe",
            "steer_max",
        ):
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
            raise ValueError(
                f"present must be bool and present, v0 of shape {(S, N)}; got {self.present.dtype} "
                f"{self.present.shape} and {self.v0.shape}"
            )
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
            raise ValueError(
                f"batches[{k}] has steps x slots {b.states.shape[1:3]} and its own road; batches[0] has "
                f"{ref.states.shape[1:3]}: only batches of one horizon, slot count and RoadConfig stack"
            )
    return SceneBatch(
        *(np.concatenate([getattr(b, k) for b in batches]) for k in ("states", "controls", "present", "v0")), ref.config
    )


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
        raise ValueError(
            f"state must end in 4 ([x, y, heading, speed]) and control in 2 ([accel, steer]); got shapes "
            f"{getattr(state, 'shape', None)} and {getattr(control, 'shape', None)}"
        )
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
            raise ValueError(
                f"{name} have a negative {what} ({b[..., j][b[..., j] < 0].ravel()[0]!r}); a box's {what} must be >= 0"
            )
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
    return np.stack(
        [b[..., 0, None] + c[..., None] * lx - s[..., None] * ly, b[..., 1, None] + s[..., None] * lx + c[..., None] * ly], -1
    )


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
        raise ValueError(
            f"vehicles {i} and {j} of scene {s} overlap at t = 0 (positions {s0[s, i, :2].round(2).tolist()} "
            f"and {s0[s, j, :2].round(2).tolist()}); every pair of vehicles must start apart"
        )


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
