"""Scripted partner styles (the stand-in for human partners) and the ego demonstrator.

A style fixes five traits named in the issue: which side of the heavy box the partner
takes (approach side), its speed, its patience (steps it idles before it starts), a path
bias (an angle added to its approach and push directions) and jitter (Gaussian noise on
its commands). Six styles are seen in the demonstrations, three are held out.

The ego demonstrator is a planner with noise (the digest's plan for the demonstrations):
heavy box first, taking the free side and pushing in a direction that bisects the goal
direction and the partner's motion (so that the two commands agree), then the light box.

References
----------
Kang et al. (2025), arXiv:2507.18623 (human-human demonstrations; here scripted).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._common import RandomState, check_random_state, check_real
from .geometry import AGENT_RADIUS, GOAL, HEAVY_HALF, LIGHT_HALF, OBS_NAMES

SLOT_OFFSET: float = 0.04  # lateral offset of the two pushing slots on the heavy box's rear face


@dataclass(frozen=True)
class PartnerStyle:
    """One scripted partner style.

    Parameters
    ----------
    name : str
    side : {-1, 0, 1}
        Slot on the heavy box's rear face (-1 right of the push direction, +1 left, 0 centre).
    speed : float
        Command magnitude in (0, 1].
    patience : int
        Steps the partner idles at the start.
    bias : float
        Angle (radians) added to its approach and push directions, in [-pi/2, pi/2].
    jitter : float
        Standard deviation of Gaussian noise on each command component, >= 0.
    """

    name: str
    side: int
    speed: float
    patience: int
    bias: float
    jitter: float

    def __post_init__(self) -> None:
        if self.side not in (-1, 0, 1):
            raise ValueError(f"side={self.side!r} must be -1, 0 or 1")
        check_real(self.speed, "speed", lo=0.0, hi=1.0, lo_open=True)
        if isinstance(self.patience, bool) or not isinstance(self.patience, (int, np.integer)) or self.patience < 0:
            raise ValueError(f"patience={self.patience!r} must be an integer >= 0")
        check_real(self.bias, "bias", lo=-np.pi / 2, hi=np.pi / 2)
        check_real(self.jitter, "jitter", lo=0.0)


SEEN_STYLES: tuple[PartnerStyle, ...] = (
    PartnerStyle("steady-left", +1, 1.0, 0, 0.0, 0.05),
    PartnerStyle("steady-right", -1, 1.0, 0, 0.0, 0.05),
    PartnerStyle("slow-left", +1, 0.6, 0, 0.15, 0.05),
    PartnerStyle("late-right", -1, 0.8, 10, -0.15, 0.1),
    PartnerStyle("wavy-left", +1, 0.8, 4, -0.2, 0.15),
    PartnerStyle("late-slow-right", -1, 0.6, 8, 0.2, 0.1),
)
"""The six styles of the demonstrations."""

UNSEEN_STYLES: tuple[PartnerStyle, ...] = (
    PartnerStyle("centre-taker", 0, 0.9, 2, 0.0, 0.08),
    PartnerStyle("veering", +1, 0.9, 0, 0.45, 0.08),
    PartnerStyle("hesitant-shaky", -1, 0.45, 18, -0.1, 0.25),
)
"""The three held-out styles: a centre slot, a stronger bias, and a slower, later, shakier partner."""


def _rot(v: np.ndarray, angle: float) -> np.ndarray:
    c, s = np.cos(angle), np.sin(angle)
    return np.array([c * v[0] - s * v[1], s * v[0] + c * v[1]])


def _unit(v: np.ndarray) -> np.ndarray:
    n = float(np.linalg.norm(v))
    return v / n if n > 1e-9 else np.zeros(2)


def push_target(box: np.ndarray) -> np.ndarray:
    """The point a box is pushed towards: into the goal zone, at the box's height clipped to the zone."""
    box = np.asarray(box, dtype=float)
    if box.shape != (2,) or not np.all(np.isfinite(box)):
        raise ValueError(f"box must be a finite position of shape (2,), got {box!r}")
    x0, y0, x1, y1 = GOAL
    return np.array([0.5 * (x0 + x1) + 0.05, np.clip(box[1], y0 + 0.12, y1 - 0.12)])


def _go_behind(pos: np.ndarray, box: np.ndarray, half: float, direction: np.ndarray, lateral: float) -> tuple[np.ndarray, bool]:
    """Command to reach the slot behind ``box`` (w.r.t. ``direction``), detouring around it; (unit cmd, at_slot).

    From beside or ahead of the box the agent goes round a corner; from behind it goes to a
    staging point in line with the slot, then straight in.
    """
    perp = np.array([-direction[1], direction[0]])
    clear = half + AGENT_RADIUS
    slot = box - direction * (clear + 0.004) + perp * lateral
    along, lat = float(np.dot(pos - slot, direction)), float(np.dot(pos - slot, perp))
    if abs(lat) < 0.025 and -0.08 < along:
        if along > -0.012:
            return direction.copy(), True
        return _unit(slot - pos), False
    rel = pos - box
    if np.dot(rel, direction) > -clear:  # beside or ahead of the box: go round, on our side
        side = 1.0 if np.dot(rel, perp) >= 0 else -1.0
        waypoint = box + perp * side * (clear + 0.04) - direction * (clear + 0.03)
        if np.dot(rel, direction) > -half and abs(np.dot(rel, perp)) < clear + 0.02:
            waypoint = box + perp * side * (clear + 0.04)
        return _unit(waypoint - pos), False
    return _unit(slot - direction * 0.05 - pos), False


def _delivered(box: np.ndarray, half: float) -> bool:
    """Whether a square box of half side ``half`` centred at ``box`` lies fully inside the goal zone."""
    x0, y0, x1, y1 = GOAL
    return bool(x0 <= box[0] - half and box[0] + half <= x1 and y0 <= box[1] - half and box[1] + half <= y1)


def _check_obs(obs: np.ndarray) -> np.ndarray:
    o = np.asarray(obs, dtype=float)
    if o.shape != (len(OBS_NAMES),) or not np.all(np.isfinite(o)):
        raise ValueError(f"obs must be a finite array of shape ({len(OBS_NAMES)},), got shape {o.shape}")
    return o


class ScriptedPartner:
    """A scripted partner of one :class:`PartnerStyle` (the stand-in for a human partner).

    It idles for ``patience`` steps, walks (path bias, speed, jitter) to its slot on the
    heavy box's rear face, and pushes towards the goal rotated by its bias, whether or not
    the ego has come. Once the heavy box lies fully inside the goal zone it rests.

    Parameters
    ----------
    style : PartnerStyle
    random_state : int, Generator or None
        Source of the jitter; ``reset(seed)`` reseeds it (the env calls it).
    heavy_half : float
        The heavy box's half side as the partner sees it (a human sees the box; pass the
        env's ``heavy_half`` when Challenge 2 changes it).
    """

    def __init__(self, style: PartnerStyle, random_state: RandomState = None, *, heavy_half: float = HEAVY_HALF) -> None:
        if not isinstance(style, PartnerStyle):
            raise TypeError(f"style must be a PartnerStyle, got {type(style).__name__}")
        self.heavy_half = check_real(heavy_half, "heavy_half", lo=0.0, hi=0.2, lo_open=True)
        self.style = style
        self.rng = check_random_state(random_state)
        self.t = 0

    def reset(self, seed: RandomState = None) -> None:
        """Restart the clock and reseed the jitter."""
        self.rng = check_random_state(seed)
        self.t = 0

    def act(self, obs: np.ndarray) -> np.ndarray:
        """The partner's command from its own view (ego fields = the partner); shape (2,) in [-1, 1]."""
        o = _check_obs(obs)
        st = self.style
        self.t += 1
        pos, heavy = o[0:2], o[10:12]
        noise = self.rng.normal(0.0, st.jitter, size=2)
        if self.t <= st.patience or _delivered(heavy, self.heavy_half):
            return np.clip(noise * 0.3, -1, 1)
        d = _unit(push_target(heavy) - heavy)
        cmd, at_slot = _go_behind(pos, heavy, self.heavy_half, d, st.side * SLOT_OFFSET)
        if at_slot:
            cmd = _rot(d, st.bias)
        elif np.linalg.norm(pos - heavy) > 0.15:
            cmd = _rot(cmd, st.bias)
        return np.clip(st.speed * cmd + noise, -1, 1)


def demonstrator_action(obs: np.ndarray, random_state: RandomState = None, noise: float = 0.0) -> np.ndarray:
    """The ego demonstrator's command (a planner; Gaussian ``noise`` added), shape (2,) in [-1, 1].

    Heavy box first: take the slot on the side away from the partner and push in the
    direction that bisects the goal direction and the partner's motion; then push the light
    box into the goal zone; then rest.

    Parameters
    ----------
    obs : array_like, shape (12,)
        The ego's observation (:data:`~icml26.movingout.env.OBS_NAMES`).
    random_state : int, Generator or None
        Source of the noise.
    noise : float
        Standard deviation of the Gaussian noise on each component, >= 0.
    """
    o = _check_obs(obs)
    noise = check_real(noise, "noise", lo=0.0)
    rng = check_random_state(random_state)
    pos, ppos, pvel, light, heavy = o[0:2], o[4:6], o[6:8], o[8:10], o[10:12]
    if not _delivered(heavy, HEAVY_HALF):
        d = _unit(push_target(heavy) - heavy)
        perp = np.array([-d[1], d[0]])
        prel = float(np.dot(ppos - heavy, perp))
        if np.linalg.norm(ppos - heavy) < 0.2 and abs(prel) > 0.01:
            side = -np.sign(prel)
        else:
            side = 1.0 if np.dot(pos - heavy, perp) >= 0 else -1.0
        cmd, at_slot = _go_behind(pos, heavy, HEAVY_HALF, d, side * SLOT_OFFSET)
        if at_slot:
            pv = _unit(pvel)
            cmd = _unit(d + pv) if np.dot(pv, d) > 0 else d
    elif not _delivered(light, LIGHT_HALF):
        d = _unit(push_target(light) - light)
        cmd, at_slot = _go_behind(pos, light, LIGHT_HALF, d, 0.0)
        if at_slot:
            cmd = _unit(push_target(light) - pos)
    else:
        cmd = np.zeros(2)
    return np.clip(cmd + rng.normal(0.0, noise, size=2), -1, 1).astype(np.float32)
