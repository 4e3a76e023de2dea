"""The Moving Out map's fixed design constants: geometry, speeds and the observation layout.

Shared by :mod:`~icml26.movingout.env` (which re-exports every name) and
:mod:`~icml26.movingout.partners`, so that the environment can build its default
partner without the partners importing the environment.

References
----------
Kang et al. (2025), arXiv:2507.18623; environment github.com/live-robotics-uva/movingout_env.
"""

from __future__ import annotations

# Geometry of the map (unit square), fixed design constants.
AGENT_RADIUS: float = 0.03
LIGHT_HALF: float = 0.035
HEAVY_HALF: float = 0.07
GOAL: tuple[float, float, float, float] = (0.75, 0.2, 1.0, 0.8)  # x0, y0, x1, y1
MAX_SPEED: float = 0.3  # units per second at |action| = 1
HEAVY_GAIN: float = 0.6  # heavy-box speed / mean agent command when both agents hold it
CONTROL_DT: float = 0.1  # seconds per env step (10 Hz, as in the paper)
CONTACT_TOL: float = 0.012  # an agent "touches" a box within this gap

OBS_NAMES: tuple[str, ...] = (
    "ego_x",
    "ego_y",
    "ego_vx",
    "ego_vy",
    "partner_x",
    "partner_y",
    "partner_vx",
    "partner_vy",
    "light_x",
    "light_y",
    "heavy_x",
    "heavy_y",
)
"""The 12 observation fields: positions in [0, 1], velocities as fractions of MAX_SPEED in [-1, 1]."""
