"""A small Moving Out map: two disk agents, a light and a heavy box, walls and a goal zone.

The physics is pymunk (rigid bodies, contacts, friction-free sliding with damping); the
interface is :class:`gymnasium.Env`. The environment is single-agent from the ego's
point of view: the partner is part of the environment, a callable passed at construction
(:class:`~icml26.movingout.partners.ScriptedPartner` by default, or a reader's own).

Physical gate (Kang et al., 2025, Sec. 3): the heavy box is a kinematic body that moves
only when *both* agents touch it and push it in agreement, i.e. both commands point into
the box and the cosine between them is at least ``agreement``; it then moves with
``HEAVY_GAIN`` times their mean command. Otherwise it stays put (:math:`s_{t+1} = s_t`
for the box). The light box is a dynamic body that one agent can push.

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

# Geometry of the map (unit square), fixed design constants.
AGENT_RADIUS: float = 0.03
LIGHT_HALF: float = 0.035
HEAVY_HALF: float = 0.07
GOAL: tuple[float, float, float, float] = (0.75, 0.2, 1.0, 0.8)  # x0, y0, x1, y1
MAX_SPEED: float = 0.3  # units per second at |action| = 1
HEAVY_GAIN: float = 0.6  # heavy-box speed / mean agent command when the gate holds
CONTROL_DT: float = 0.1  # seconds per env step (10 Hz, as in the paper)
CONTACT_TOL: float = 0.012  # an agent "touches" a box within this gap

OBS_NAMES: tuple[str, ...] = (
    "ego_x", "ego_y", "ego_vx", "ego_vy", "partner_x", "partner_y", "partner_vx", "partner_vy",
    "light_x", "light_y", "heavy_x", "heavy_y",
)
"""The 12 observation fields: positions in [0, 1], velocities as fractions of MAX_SPEED in [-1, 1]."""

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
    """Whether box centres lie inside the goal rectangle (shape ``(...)``)."""
    return goal_distance(xy) <= 0.0


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
    NFD this step. The episode terminates when both boxes are in the goal zone and is
    truncated after ``max_steps``.

    Parameters
    ----------
    partner : object, optional
        The partner agent. Anything with ``act(partner_obs) -> action`` (partner_obs is
        :func:`swap_view` of the ego's observation, the action a length-2 array in
        [-1, 1]) and, optionally, ``reset(seed)``. Default: the first seen scripted style.
    agreement : float
        Cosine threshold of the heavy-box gate, in [-1, 1]; the test-time physical
        change of the chapter raises it.
    max_steps : int
        Episode horizon (env steps at 10 Hz).
    substeps : int
        pymunk steps per env step (the paper uses 10).
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
        agreement: float = 0.5,
        max_steps: int = 120,
        substeps: int = 5,
        render_mode: str | None = None,
        render_size: int = 96,
    ) -> None:
        super().__init__()
        self.agreement = check_real(agreement, "agreement", lo=-1.0, hi=1.0)
        self.max_steps = check_int(max_steps, "max_steps")
        self.substeps = check_int(substeps, "substeps")
        self.render_size = check_int(render_size, "render_size", low=16)
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode={render_mode!r} is not supported; use None or 'rgb_array'")
        self.render_mode = render_mode
        if partner is None:
            from .partners import SEEN_STYLES, ScriptedPartner

            partner = ScriptedPartner(SEEN_STYLES[0])
        if not callable(getattr(partner, "act", None)):
            raise TypeError(f"partner={partner!r} needs a method act(partner_obs) -> action")
        self.partner = partner
        lo = np.array([0, 0, -1, -1] * 2 + [0] * 4, dtype=np.float32)
        self.observation_space = gym.spaces.Box(lo, np.ones(12, dtype=np.float32), dtype=np.float32)
        self.action_space = gym.spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float32)
        self.space: pymunk.Space | None = None
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
        heavy_shape = pymunk.Poly.create_box(heavy_body, (2 * HEAVY_HALF, 2 * HEAVY_HALF))
        for name, body, shape in (("light", light_body, light_shape), ("heavy", heavy_body, heavy_shape)):
            shape.friction, shape.collision_type = 0.0, _BOX
            space.add(body, shape)
            self.bodies[name], self.shapes[name] = body, shape
        self.n_box_hits = 0

        def count_hit(arbiter, space, data):  # pymunk 7: callbacks return None
            self.n_box_hits += 1

        space.on_collision(_AGENT, _BOX, begin=count_hit)
        self.space = space

    def _obs(self) -> np.ndarray:
        b = self.bodies
        v = lambda body: np.clip(np.asarray(body.velocity) / MAX_SPEED, -1, 1)  # noqa: E731
        o = np.concatenate([b["ego"].position, v(b["ego"]), b["partner"].position, v(b["partner"]),
                            b["light"].position, b["heavy"].position])
        return np.clip(o, self.observation_space.low, self.observation_space.high).astype(np.float32)

    def get_state(self) -> np.ndarray:
        """The full state as a length-12 float64 array (same layout as the observation, unclipped)."""
        b = self.bodies
        return np.concatenate([b["ego"].position, np.asarray(b["ego"].velocity) / MAX_SPEED, b["partner"].position,
                               np.asarray(b["partner"].velocity) / MAX_SPEED, b["light"].position, b["heavy"].position]).astype(float)

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
        self._nfd = 0.0
        reset = getattr(self.partner, "reset", None)
        if callable(reset):
            reset(int(r.integers(0, 2**31)))
        return self._obs(), {"nfd": 0.0}

    def _touching(self, who: str) -> bool:
        pq = self.shapes["heavy"].point_query(self.bodies[who].position)
        return pq.distance <= AGENT_RADIUS + CONTACT_TOL

    def gate(self, ego_cmd: np.ndarray, partner_cmd: np.ndarray) -> bool:
        """Whether the heavy box moves: both agents touch it, push into it, and agree (cosine >= agreement)."""
        if not (self._touching("ego") and self._touching("partner")):
            return False
        c = [np.asarray(ego_cmd, dtype=float), np.asarray(partner_cmd, dtype=float)]
        n = [np.linalg.norm(x) for x in c]
        if min(n) < 0.1:
            return False
        heavy = np.asarray(self.bodies["heavy"].position)
        for who, cmd in zip(("ego", "partner"), c, strict=True):
            if np.dot(cmd, heavy - np.asarray(self.bodies[who].position)) <= 0:
                return False
        return float(np.dot(c[0], c[1]) / (n[0] * n[1])) >= self.agreement

    def check_action(self, action: Any, name: str = "action") -> np.ndarray:
        """``action`` as a float32 array of shape (2,) in [-1, 1], or a ``ValueError`` naming it and the space."""
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
        ``partner_action``, ``heavy_moved`` (the gate held), ``ego_touching`` (the ego
        touches the heavy box) and ``success``.
        """
        if self.space is None:
            raise RuntimeError("call reset() before step()")
        a = self.check_action(action)
        obs_before = self._obs()
        pa = self.check_action(self.partner.act(swap_view(obs_before)), name="partner action")
        moved = self.gate(a, pa)
        ego_touching = self._touching("ego")
        heavy = self.bodies["heavy"]
        hv = HEAVY_GAIN * MAX_SPEED * (a.astype(float) + pa.astype(float)) / 2 if moved else np.zeros(2)
        dt = CONTROL_DT / self.substeps
        for _ in range(self.substeps):
            self.bodies["ego"].velocity = tuple(float(x) for x in a * MAX_SPEED)
            self.bodies["partner"].velocity = tuple(float(x) for x in pa * MAX_SPEED)
            p = np.asarray(heavy.position)
            nxt = p + hv * dt  # keep the kinematic box inside the walls
            v = np.where((nxt < HEAVY_HALF) | (nxt > 1 - HEAVY_HALF), 0.0, hv)
            heavy.velocity = (float(v[0]), float(v[1]))
            self.space.step(dt)
        heavy.velocity = (0.0, 0.0)
        self._t += 1
        obs = self._obs()
        st = self.get_state()
        nfd = float(normalised_final_distance(st, self._initial))
        reward, self._nfd = nfd - self._nfd, nfd
        success = bool(box_in_goal(st[8:10]) and box_in_goal(st[10:12]))
        truncated = self._t >= self.max_steps and not success
        info = {"nfd": nfd, "partner_action": pa, "heavy_moved": bool(moved), "ego_touching": bool(ego_touching), "success": success}
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
        for name, half, color in (("light", LIGHT_HALF, (230, 160, 60)), ("heavy", HEAVY_HALF, (120, 80, 40))):
            cx, cy = self.bodies[name].position
            img[(abs(x - cx) <= half) & (abs(y - cy) <= half)] = color
        for name, color in (("ego", (40, 90, 220)), ("partner", (220, 50, 50))):
            cx, cy = self.bodies[name].position
            img[(x - cx) ** 2 + (y - cy) ** 2 <= AGENT_RADIUS**2] = color
        img[:, [0, -1]] = 60
        img[[0, -1], :] = 60
        return img
