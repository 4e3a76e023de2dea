"""A small Moving Out map: two disk agents, a light and a heavy box, walls and a goal zone.

The physics is pymunk (rigid bodies, contacts, friction-free sliding with damping); the
interface is :class:`gymnasium.Env`. The environment is single-agent from the ego's
point of view: the partner is part of the environment, a callable passed at construction
(:class:`~icml26.movingout.partners.ScriptedPartner` by default, or a reader's own).

Joint motion, as the authors' environment implements it (``movingout_env``, the grab
and joint-motion code of ``base_env.py``): a large item cannot be moved by one agent; once
*both* agents hold it, it moves with the two agents at roughly the mean of their commands,
with no agreement rule and no cut-off. Here "holding" is touching (we have no grab action):
the heavy box is a kinematic body that moves with ``HEAVY_GAIN`` times the mean of the two
commands whenever both agents touch it, and stays put otherwise. The light box (the
authors' "small" item) is a dynamic body that one agent can push. An item is delivered
only when it lies fully inside the goal zone (the authors' ``global_score``), and a step
counts as waiting when exactly one agent holds the heavy item (``calculate_waiting_time``).

References
----------
Kang, Lee, Liu, Wang, Kuo, "Moving Out: Physically-grounded Human-AI Collaboration",
ICML 2026, arXiv:2507.18623. Authors' environment: github.com/live-robotics-uva/movingout_env.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pymunk

from .._common import check_int, check_real
from .geometry import (  # the map's fixed design constants, re-exported here
    AGENT_RADIUS,
    CONTACT_TOL,
    CONTROL_DT,
    GOAL,
    HEAVY_GAIN,
    HEAVY_HALF,
    LIGHT_HALF,
    MAX_SPEED,
    OBS_NAMES,
)
from .partners import SEEN_STYLES, ScriptedPartner

try:  # pymunk's own binding of Chipmunk2D: the per-substep calls without the Python wrappers
    from pymunk._chipmunk_cffi import lib as _cp

    _CP_OK = all(hasattr(_cp, f) for f in ("cpSpaceStep", "cpBodySetVelocity", "cpBodyGetPosition", "cpBodyGetVelocity"))
except ImportError:  # pragma: no cover - another pymunk layout: the public API below is used
    _cp, _CP_OK = None, False

_AGENT, _BOX, _WALL = 1, 2, 3


def goal_distance(xy: np.ndarray) -> np.ndarray:
    """Euclidean distance of points to the goal rectangle (0 inside).

    Parameters
    ----------
    xy : array_like, shape (..., 2)

    Returns
    -------
    numpy.ndarray, shape (...)
    """
    xy = np.asarray(xy, dtype=float)
    if xy.ndim < 1 or xy.shape[-1] != 2:
        raise ValueError(f"xy must have a last axis of length 2, got shape {xy.shape}")
    x0, y0, x1, y1 = GOAL
    dx = np.maximum(np.maximum(x0 - xy[..., 0], 0.0), xy[..., 0] - x1)
    dy = np.maximum(np.maximum(y0 - xy[..., 1], 0.0), xy[..., 1] - y1)
    return np.hypot(dx, dy)


def box_in_goal(xy: np.ndarray) -> np.ndarray:
    """Whether box centres lie inside the goal rectangle (shape ``(...)``); see :func:`box_inside_goal` for delivery."""
    return goal_distance(xy) <= 0.0


def box_inside_goal(xy: np.ndarray, half: float) -> np.ndarray:
    r"""Whether axis-aligned square boxes of half side ``half`` lie *fully* inside the goal.

    :math:`x_0 \le x - h,\ x + h \le x_1,\ y_0 \le y - h,\ y + h \le y_1` (the authors'
    ``global_score`` counts an item only when the goal zone contains all of it).

    Parameters
    ----------
    xy : array_like, shape (..., 2)
        Box centres.
    half : float
        Half side, >= 0.

    Returns
    -------
    numpy.ndarray of bool, shape (...)
    """
    xy = np.asarray(xy, dtype=float)
    if xy.ndim < 1 or xy.shape[-1] != 2:
        raise ValueError(f"xy must have a last axis of length 2, got shape {xy.shape}")
    h = check_real(half, "half", lo=0.0)
    x0, y0, x1, y1 = GOAL
    return (xy[..., 0] - h >= x0) & (xy[..., 0] + h <= x1) & (xy[..., 1] - h >= y0) & (xy[..., 1] + h <= y1)


def waiting_steps(ego_holds: np.ndarray, partner_holds: np.ndarray) -> np.ndarray:
    """Waiting per step, the authors' ``calculate_waiting_time``: exactly one agent holds the heavy item.

    With one heavy item the authors' third case (both hold different large items) cannot
    occur; the light box is their "small" category, which never counts.

    Parameters
    ----------
    ego_holds, partner_holds : array_like of bool, shape (T,)

    Returns
    -------
    numpy.ndarray of bool, shape (T,); its mean is the episode's waiting time WT.
    """
    e = np.asarray(ego_holds, dtype=bool)
    p = np.asarray(partner_holds, dtype=bool)
    if e.shape != p.shape:
        raise ValueError(f"ego_holds and partner_holds must have the same shape, got {e.shape} and {p.shape}")
    return e != p


def normalised_final_distance(obs: np.ndarray, initial_obs: np.ndarray) -> np.ndarray:
    r"""NFD: :math:`1 - \sum_i d_i(\text{final}) / \sum_i d_i(\text{initial})`, clipped to [0, 1].

    :math:`d_i` is box :math:`i`'s distance to the goal zone; higher is better (1: all boxes in).

    Parameters
    ----------
    obs : array_like, shape (..., 12)
        States (observations, :data:`OBS_NAMES`) to score.
    initial_obs : array_like, shape (12,) or (..., 12)
        The episode's initial state.

    Returns
    -------
    numpy.ndarray, shape (...)

    References
    ----------
    Kang et al. (2025), metric NFD (the exact normalisation is not stated; this is the digest's reading).
    """
    obs = np.asarray(obs, dtype=float)
    initial_obs = np.asarray(initial_obs, dtype=float)
    for name, a in (("obs", obs), ("initial_obs", initial_obs)):
        if a.ndim < 1 or a.shape[-1] != len(OBS_NAMES):
            raise ValueError(f"{name} must have a last axis of length {len(OBS_NAMES)}, got shape {a.shape}")
    d = goal_distance(obs[..., 8:10]) + goal_distance(obs[..., 10:12])
    d0 = goal_distance(initial_obs[..., 8:10]) + goal_distance(initial_obs[..., 10:12])
    return np.clip(1.0 - d / np.maximum(d0, 1e-9), 0.0, 1.0)


def _goal_gap(x: float, y: float) -> float:
    """:func:`goal_distance` of one point, in Python floats (the env's per-step path)."""
    x0, y0, x1, y1 = GOAL
    dx, dy = max(x0 - x, 0.0, x - x1), max(y0 - y, 0.0, y - y1)
    return (dx * dx + dy * dy) ** 0.5


def _nfd(state: list[float], d0: float) -> float:
    """:func:`normalised_final_distance` of one state (12 floats) with the initial summed distance ``d0``."""
    d = _goal_gap(state[8], state[9]) + _goal_gap(state[10], state[11])
    return min(max(1.0 - d / max(d0, 1e-9), 0.0), 1.0)


def swap_view(obs: np.ndarray) -> np.ndarray:
    """The same state seen from the partner: ego and partner fields exchanged (shape kept)."""
    obs = np.asarray(obs)
    if obs.ndim < 1 or obs.shape[-1] != len(OBS_NAMES):
        raise ValueError(f"obs must have a last axis of length {len(OBS_NAMES)}, got shape {obs.shape}")
    return np.concatenate([obs[..., 4:8], obs[..., 0:4], obs[..., 8:]], axis=-1)


class MovingOutEnv(gym.Env):
    """Two agents, a light box and a heavy box in a walled unit square, with a goal zone.

    Observation: ``Box(12,)`` (:data:`OBS_NAMES`), finite bounds. Action: ``Box(-1, 1, (2,))``,
    the ego's velocity command as a fraction of :data:`MAX_SPEED`. Reward: the increase of
    NFD this step. The episode terminates when both boxes lie fully inside the goal zone and
    is truncated after ``max_steps``.

    Parameters
    ----------
    partner : object, optional
        The partner agent. Anything with ``act(partner_obs) -> action`` (partner_obs is
        :func:`swap_view` of the ego's observation, the action a length-2 array in
        [-1, 1]) and, optionally, ``reset(seed)``. Default: the first seen scripted style.
    heavy_half : float
        Half side of the heavy box, in (0, 0.2]; the chapter's Challenge 2 changes it at
        test time (the paper changes an item's size or mass).
    heavy_mass : float
        Mass of the heavy box relative to the demonstrations' (1), > 0: the two holding
        agents move it at ``HEAVY_GAIN / heavy_mass`` times their mean command (our model of
        a heavier item under the same commands). The chapter's Challenge 2 raises it at
        test time (the paper changes an item's mass or size).
    max_steps : int
        Episode horizon (env steps at 10 Hz).
    substeps : int
        pymunk steps per env step (the authors' ``PHYS_STEPS = 10``).
    render_mode : {None, "rgb_array"}
    render_size : int
        Side of the rendered square image in pixels.

    References
    ----------
    Kang et al. (2025), arXiv:2507.18623; environment github.com/live-robotics-uva/movingout_env.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 10}

    def __init__(
        self,
        partner: Any = None,
        *,
        heavy_half: float = HEAVY_HALF,
        heavy_mass: float = 1.0,
        max_steps: int = 120,
        substeps: int = 10,
        render_mode: str | None = None,
        render_size: int = 96,
    ) -> None:
        super().__init__()
        self.heavy_half = check_real(heavy_half, "heavy_half", lo=0.0, hi=0.2, lo_open=True)
        self.heavy_mass = check_real(heavy_mass, "heavy_mass", lo=0.0, lo_open=True)
        self.max_steps = check_int(max_steps, "max_steps")
        self.substeps = check_int(substeps, "substeps")
        self.render_size = check_int(render_size, "render_size", low=16)
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode={render_mode!r} is not supported; use None or 'rgb_array'")
        self.render_mode = render_mode
        if partner is None:
            partner = ScriptedPartner(SEEN_STYLES[0])
        if not callable(getattr(partner, "act", None)):
            raise TypeError(f"partner={partner!r} needs a method act(partner_obs) -> action")
        self.partner = partner
        lo = np.array([0, 0, -1, -1] * 2 + [0] * 4, dtype=np.float32)
        self.observation_space = gym.spaces.Box(lo, np.ones(12, dtype=np.float32), dtype=np.float32)
        self.action_space = gym.spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float32)
        self._lo, self._hi = lo.astype(float).tolist(), [1.0] * 12
        self.space: pymunk.Space | None = None
        self._c: tuple | None = None
        self._t = 0

    # ------------------------------------------------------------------ building the world
    def _build(self, ego: np.ndarray, partner: np.ndarray, light: np.ndarray, heavy: np.ndarray) -> None:
        space = pymunk.Space()
        space.gravity = (0.0, 0.0)
        space.damping = 0.05  # velocity kept per second: boxes slide briefly and stop
        space.collision_slop = 0.0005  # pymunk's default (0.1) is for pixel units; ours is a unit square
        for a, b in [((0, 0), (1, 0)), ((1, 0), (1, 1)), ((1, 1), (0, 1)), ((0, 1), (0, 0))]:
            seg = pymunk.Segment(space.static_body, a, b, 0.005)
            seg.friction, seg.collision_type = 2.0, _WALL
            space.add(seg)
        self.bodies: dict[str, pymunk.Body] = {}
        self.shapes: dict[str, pymunk.Shape] = {}
        for name, pos in (("ego", ego), ("partner", partner)):
            body = pymunk.Body(1.0, float("inf"))
            body.position = tuple(map(float, pos))
            shape = pymunk.Circle(body, AGENT_RADIUS)
            shape.friction, shape.collision_type = 0.0, _AGENT
            space.add(body, shape)
            self.bodies[name], self.shapes[name] = body, shape
        light_body = pymunk.Body(1.0, float("inf"))
        light_body.position = tuple(map(float, light))
        light_shape = pymunk.Poly.create_box(light_body, (2 * LIGHT_HALF, 2 * LIGHT_HALF))
        heavy_body = pymunk.Body(body_type=pymunk.Body.KINEMATIC)
        heavy_body.position = tuple(map(float, heavy))
        heavy_shape = pymunk.Poly.create_box(heavy_body, (2 * self.heavy_half, 2 * self.heavy_half))
        for name, body, shape in (("light", light_body, light_shape), ("heavy", heavy_body, heavy_shape)):
            shape.friction, shape.collision_type = 0.0, _BOX
            space.add(body, shape)
            self.bodies[name], self.shapes[name] = body, shape
        self.n_box_hits = 0

        def count_hit(arbiter, space, data):  # pymunk 7: callbacks return None
            self.n_box_hits += 1

        space.on_collision(_AGENT, _BOX, begin=count_hit)
        self.space = space
        # the C handles of the space and the bodies, for step() and _state_list() (None: public API)
        self._c = None
        if _CP_OK and all(hasattr(b, "_body") for b in self.bodies.values()) and hasattr(space, "_space"):
            self._c = (space._space, *(self.bodies[k]._body for k in ("ego", "partner", "light", "heavy")))

    def _space_is_plain(self) -> bool:
        """Whether ``space.step`` would do no more than ``cpSpaceStep``: no pending body check, add, remove or callback."""
        sp = self.space
        return not (
            getattr(sp, "_bodies_to_check", True)
            or getattr(sp, "_add_later", True)
            or getattr(sp, "_remove_later", True)
            or getattr(sp, "_post_step_callbacks", True)
        )

    def _state_list(self) -> list[float]:
        """The state as 12 Python floats (layout :data:`OBS_NAMES`, velocities unclipped)."""
        if self._c is not None:  # the same C getters as Body.position / Body.velocity
            _, e, p, lb, hb = self._c
            get_p, get_v = _cp.cpBodyGetPosition, _cp.cpBodyGetVelocity
            pe, ve, pp, vp, pl, ph = get_p(e), get_v(e), get_p(p), get_v(p), get_p(lb), get_p(hb)
            return [
                pe.x,
                pe.y,
                ve.x / MAX_SPEED,
                ve.y / MAX_SPEED,
                pp.x,
                pp.y,
                vp.x / MAX_SPEED,
                vp.y / MAX_SPEED,
                pl.x,
                pl.y,
                ph.x,
                ph.y,
            ]
        b = self.bodies
        out: list[float] = []
        for name in ("ego", "partner"):
            (x, y), (vx, vy) = b[name].position, b[name].velocity
            out += [x, y, vx / MAX_SPEED, vy / MAX_SPEED]
        out += [*b["light"].position, *b["heavy"].position]
        return out

    def _obs(self, state: list[float] | None = None) -> np.ndarray:
        """The observation: the state clipped to the observation space, float32 (shape (12,))."""
        st = self._state_list() if state is None else state
        return np.array([min(max(v, lo), hi) for v, lo, hi in zip(st, self._lo, self._hi, strict=True)], dtype=np.float32)

    def get_state(self) -> np.ndarray:
        """The full state as a length-12 float64 array (same layout as the observation, unclipped)."""
        return np.array(self._state_list(), dtype=float)

    def set_state(self, state: np.ndarray) -> np.ndarray:
        """Rebuild the world at ``state`` (layout :data:`OBS_NAMES`; velocities as fractions of MAX_SPEED).

        Used to replay recombined demonstrations. Returns the observation.
        """
        s = np.asarray(state, dtype=float)
        if s.shape != (12,) or not np.all(np.isfinite(s)):
            raise ValueError(f"state must be a finite array of shape (12,), got shape {s.shape}")
        pos = s[[0, 1, 4, 5, 8, 9, 10, 11]]
        if np.any(pos < 0) or np.any(pos > 1):
            raise ValueError(f"state positions must lie in [0, 1], got {pos.tolist()}")
        self._build(s[0:2], s[4:6], s[8:10], s[10:12])
        self.bodies["ego"].velocity = tuple(s[2:4] * MAX_SPEED)
        self.bodies["partner"].velocity = tuple(s[6:8] * MAX_SPEED)
        self._t, self._initial, self._nfd = 0, self.get_state(), 0.0
        self._d0 = _goal_gap(*self._initial[8:10]) + _goal_gap(*self._initial[10:12])
        return self._obs()

    # ------------------------------------------------------------------ gymnasium API
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Start an episode: agents on the left, boxes in the middle, small random offsets.

        ``seed`` seeds the layout and the partner (``partner.reset(seed)`` when it has one).
        Returns ``(obs, info)``.
        """
        super().reset(seed=seed)
        r = self.np_random
        ys = r.uniform(0.25, 0.75, size=2)
        ego = np.array([0.08, ys[0]])
        partner = np.array([0.08, ys[1] if abs(ys[1] - ys[0]) > 0.1 else (ys[0] + 0.2 if ys[0] < 0.5 else ys[0] - 0.2)])
        light = np.array([r.uniform(0.4, 0.5), r.uniform(0.22, 0.3)])
        heavy = np.array([r.uniform(0.42, 0.5), r.uniform(0.52, 0.64)])
        self._build(ego, partner, light, heavy)
        self._t = 0
        self._initial = self.get_state()
        self._d0 = _goal_gap(*self._initial[8:10]) + _goal_gap(*self._initial[10:12])
        self._nfd = 0.0
        reset = getattr(self.partner, "reset", None)
        if callable(reset):
            reset(int(r.integers(0, 2**31)))
        return self._obs(), {"nfd": 0.0}

    def holds(self, who: str) -> bool:
        """Whether agent ``who`` ("ego" or "partner") holds the heavy box: its disk touches it.

        The gap from the disk's centre to the axis-aligned square is at most
        ``AGENT_RADIUS + CONTACT_TOL`` (what pymunk's ``point_query`` gives for this square).
        """
        if who not in ("ego", "partner"):
            raise ValueError(f"who={who!r} must be 'ego' or 'partner'")
        px, py = self.bodies[who].position
        hx, hy = self.bodies["heavy"].position
        h = self.heavy_half
        dx, dy = abs(px - hx) - h, abs(py - hy) - h
        gap = (max(dx, 0.0) ** 2 + max(dy, 0.0) ** 2) ** 0.5 if (dx > 0 or dy > 0) else max(dx, dy)
        return gap <= AGENT_RADIUS + CONTACT_TOL

    def heavy_velocity(self, ego_cmd: np.ndarray, partner_cmd: np.ndarray) -> tuple[float, float]:
        r"""The heavy box's velocity this step: :math:`g\,v_{\max}\,\tfrac12 (a^e + a^p)` when both agents hold it, else 0.

        No agreement rule and no threshold, as in the authors' environment (there the two
        holding agents drag the item at about the mean of their commands).
        """
        if not (self.holds("ego") and self.holds("partner")):
            return 0.0, 0.0
        k = 0.5 * HEAVY_GAIN / self.heavy_mass * MAX_SPEED
        return k * (float(ego_cmd[0]) + float(partner_cmd[0])), k * (float(ego_cmd[1]) + float(partner_cmd[1]))

    def check_action(self, action: Any, name: str = "action") -> np.ndarray:
        """``action`` as a float32 array of shape (2,) in [-1, 1], or a ``ValueError`` naming it and the space."""
        if isinstance(action, np.ndarray) and action.shape == (2,) and action.dtype == np.float32:
            x, y = float(action[0]), float(action[1])
            if -1.0 <= x <= 1.0 and -1.0 <= y <= 1.0:  # NaN fails both comparisons
                return action
        try:
            a = np.asarray(action, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"{name}={action!r} is not in the action space {self.action_space}: not numeric") from None
        if a.shape != (2,):
            raise ValueError(f"{name}={action!r} is not in the action space {self.action_space}: shape {a.shape}, expected (2,)")
        if not np.all(np.isfinite(a)):
            raise ValueError(f"{name}={action!r} is not in the action space {self.action_space}: not finite")
        if np.any(np.abs(a) > 1.0):
            raise ValueError(f"{name}={action!r} is not in the action space {self.action_space}: outside [-1, 1]")
        a = a.astype(np.float32)
        return a

    def step(self, action):
        """Advance one control step (``substeps`` pymunk steps) with the ego's ``action``.

        Returns ``(obs, reward, terminated, truncated, info)``; ``info`` holds ``nfd``,
        ``partner_action``, ``ego_holds`` and ``partner_holds`` (each agent touches the heavy
        box at the start of the step), ``heavy_moved`` (both held it, so it moved with the
        mean command), ``waiting`` (exactly one held it: the authors' waiting step) and
        ``success`` (both boxes fully inside the goal zone).
        """
        if self.space is None:
            raise RuntimeError("call reset() before step()")
        a = self.check_action(action)
        st = self._state_list()
        pa = self.check_action(self.partner.act(swap_view(self._obs(st))), name="partner action")
        ego_holds, partner_holds = self.holds("ego"), self.holds("partner")
        hv = self.heavy_velocity(a, pa) if ego_holds and partner_holds else (0.0, 0.0)
        ego, partner, heavy, h = self.bodies["ego"], self.bodies["partner"], self.bodies["heavy"], self.heavy_half
        ve = (float(a[0]) * MAX_SPEED, float(a[1]) * MAX_SPEED)
        vp = (float(pa[0]) * MAX_SPEED, float(pa[1]) * MAX_SPEED)
        dt = CONTROL_DT / self.substeps
        if self._c is not None and self._space_is_plain():
            # Space.step and Body.velocity's setter reduce to these C calls here (nothing pending)
            sp, eb, pb, _, hb = self._c
            cp_step, set_v, get_p = _cp.cpSpaceStep, _cp.cpBodySetVelocity, _cp.cpBodyGetPosition
            for _ in range(self.substeps):
                set_v(eb, ve)
                set_v(pb, vp)
                if hv != (0.0, 0.0):  # keep the kinematic box inside the walls
                    hp = get_p(hb)
                    x, y = hp.x, hp.y
                    vx = 0.0 if not (h <= x + hv[0] * dt <= 1 - h) else hv[0]
                    vy = 0.0 if not (h <= y + hv[1] * dt <= 1 - h) else hv[1]
                    set_v(hb, (vx, vy))
                cp_step(sp, dt)
        else:
            step = self.space.step
            for _ in range(self.substeps):
                ego.velocity, partner.velocity = ve, vp
                if hv != (0.0, 0.0):  # keep the kinematic box inside the walls
                    x, y = heavy.position
                    vx = 0.0 if not (h <= x + hv[0] * dt <= 1 - h) else hv[0]
                    vy = 0.0 if not (h <= y + hv[1] * dt <= 1 - h) else hv[1]
                    heavy.velocity = (vx, vy)
                step(dt)
        heavy.velocity = (0.0, 0.0)
        self._t += 1
        st = self._state_list()
        obs = self._obs(st)
        nfd = _nfd(st, self._d0)
        reward, self._nfd = nfd - self._nfd, nfd
        x0, y0, x1, y1 = GOAL
        success = all(
            x0 <= st[i] - hh and st[i] + hh <= x1 and y0 <= st[i + 1] - hh and st[i + 1] + hh <= y1
            for i, hh in ((8, LIGHT_HALF), (10, h))
        )
        truncated = self._t >= self.max_steps and not success
        info = {
            "nfd": nfd,
            "partner_action": pa,
            "ego_holds": ego_holds,
            "partner_holds": partner_holds,
            "heavy_moved": hv != (0.0, 0.0),
            "waiting": ego_holds != partner_holds,
            "success": success,
        }
        return obs, float(reward), success, bool(truncated), info

    def render(self):
        """An RGB image (``render_size`` square, uint8) of the current state, or None without render_mode."""
        if self.render_mode is None or self.space is None:
            return None
        n = self.render_size
        img = np.full((n, n, 3), 245, dtype=np.uint8)
        yy, xx = np.mgrid[0:n, 0:n]
        x = (xx + 0.5) / n
        y = 1 - (yy + 0.5) / n  # image rows go down, y goes up
        x0, y0, x1, y1 = GOAL
        img[(x >= x0) & (x <= x1) & (y >= y0) & (y <= y1)] = (200, 235, 200)
        for name, half, color in (("light", LIGHT_HALF, (230, 160, 60)), ("heavy", self.heavy_half, (120, 80, 40))):
            cx, cy = self.bodies[name].position
            img[(abs(x - cx) <= half) & (abs(y - cy) <= half)] = color
        for name, color in (("ego", (40, 90, 220)), ("partner", (220, 50, 50))):
            cx, cy = self.bodies[name].position
            img[(x - cx) ** 2 + (y - cy) ** 2 <= AGENT_RADIUS**2] = color
        img[:, [0, -1]] = 60
        img[[0, -1], :] = 60
        return img


def push_displacements(
    ego_xy: Any,
    partner_xy: Any,
    ego_cmd: Any,
    partner_cmd: Any,
    *,
    steps: int = 1,
    light_xy: Any = (0.3, 0.25),
    heavy_xy: Any = (0.5, 0.6),
    **env_kw: Any,
) -> tuple[float, float]:
    """How far each box moves when both agents send constant commands (a physics probe).

    Parameters
    ----------
    ego_xy, partner_xy, light_xy, heavy_xy : array_like, shape (2,)
        Starting positions (agents at rest).
    ego_cmd, partner_cmd : array_like, shape (2,)
        Constant commands in [-1, 1].
    steps : int
        Env steps to run.
    **env_kw
        Passed to :class:`MovingOutEnv` (``heavy_mass``, ``heavy_half``, ``substeps``).

    Returns
    -------
    (float, float)
        The light box's and the heavy box's displacement (Euclidean).
    """
    steps = check_int(steps, "steps")

    class _Constant:
        def act(self, obs: np.ndarray) -> np.ndarray:
            return pc

    e = MovingOutEnv(_Constant(), **env_kw)
    pc = e.check_action(np.asarray(partner_cmd, dtype=np.float32), name="partner_cmd")
    ec = e.check_action(np.asarray(ego_cmd, dtype=np.float32), name="ego_cmd")
    e.reset(seed=0)
    e.set_state(np.array([*ego_xy, 0, 0, *partner_xy, 0, 0, *light_xy, *heavy_xy], dtype=float))
    s0 = e.get_state()
    for _ in range(steps):
        e.step(ec)
    s1 = e.get_state()
    return float(np.linalg.norm(s1[8:10] - s0[8:10])), float(np.linalg.norm(s1[10:12] - s0[10:12]))
