"""The travelling salesman class (Miller-Tucker-Zemlin model).

References
----------
.. [1] Chen et al., "OPT-Engine", ICML 2026, arXiv:2601.19924 (App.: the tsp generator).
   Authors' code: https://github.com/Cardinal-Operations/OPTEngine,
   ``OPTEngine/opt/modules/tsp_generator.py``.
"""

from __future__ import annotations

import numpy as np

from ..lp import ModelBuilder
from ..text import Block, rows_by
from .base import PlanCheck, ProblemClass, _ints, _need, _pos_int


class TSP(ProblemClass):
    r"""Travelling salesman, Miller-Tucker-Zemlin formulation.

    :math:`\min\sum_{i\ne j} d_{ij}x_{ij}` s.t. :math:`\sum_j x_{ij}=\sum_j x_{ji}=1`,
    :math:`u_i-u_j+n x_{ij}\le n-1` (:math:`i,j\ge 2`), :math:`1\le u_i\le n-1`.
    Integer coordinates in :math:`[0,200]^2`, Euclidean :math:`d`; size knob cities, 4-19.

    Parameters
    ----------
    None
        A problem class takes no arguments (see :class:`~icml26.optengine.problems.base.ProblemClass`).

    References
    ----------
    .. [1] Chen et al., ICML 2026 (arXiv:2601.19924), App.; authors' ``OPTEngine/opt/modules/tsp_generator.py``.
    """

    name, kind, sense, size_name, size_range = "TSP", "MIP", "min", "cities", (4, 19)
    time_limit = 60.0
    blocks = (
        Block(
            "text",
            "data",
            (
                "A salesperson must visit {n} cities located on a map (coordinates in km).",
                "A delivery van serves {n} customer sites; their positions on a km grid are listed below.",
            ),
        ),
        Block("rows", "data", ("* City {i}: ({x}, {y})", "* Site {i} is at x = {x}, y = {y}"), "cities"),
        Block(
            "text",
            "degree",
            (
                "The salesperson starts at City 1, must visit every city exactly once, and returns to City 1 at the end.",
                "Each site is entered exactly once and left exactly once, beginning and ending at Site 1.",
            ),
        ),
        Block(
            "text",
            "subtour",
            (
                "The route must form one single tour; separate sub-tours are not allowed.",
                "All stops must be joined into one continuous route with no disconnected loops.",
                "The van may not return to the depot before every site on the list has been served in one trip.",
            ),
        ),
        Block(
            "text",
            "data",
            (
                "The distance between two cities is the straight-line (Euclidean) distance. Find the minimum total distance of the tour.",
                "Distances are straight-line distances. What is the shortest possible total route length?",
            ),
        ),
    )

    def _draw(self, rng, n):
        return {"n": n, "xy": _ints(rng, 0, 200, (n, 2))}

    @staticmethod
    def dist(xy: np.ndarray) -> np.ndarray:
        """Euclidean distance matrix, shape (n, n), of points ``xy`` of shape (n, 2)."""
        xy = np.asarray(xy, dtype=float)
        if xy.ndim != 2 or xy.shape[1] != 2 or not np.all(np.isfinite(xy)):
            raise ValueError(f"xy must be a finite array of shape (n, 2), got shape {xy.shape}")
        return np.sqrt(((xy[:, None, :] - xy[None, :, :]) ** 2).sum(-1))

    def build(self, p, drop=frozenset()):
        n, D = p["n"], self.dist(np.asarray(p["xy"], float))
        b = ModelBuilder("min")
        ub = 1.0 - np.eye(n)
        x = b.var((n, n), 0, ub, integer=True)  # x[i, j] = 1 if the tour goes i -> j
        u = b.var(n, np.r_[0.0, np.ones(n - 1)], np.r_[0.0, np.full(n - 1, n - 1.0)])
        b.set_objective(x, D)
        if "degree" not in drop:
            b.rows(x, 1.0, 1.0, 1.0)  # leave each city once
            b.rows(x.T, 1.0, 1.0, 1.0)  # enter each city once
        if "subtour" not in drop:
            I, J = np.nonzero(~np.eye(n - 1, dtype=bool))
            I, J = I + 1, J + 1
            cols = np.stack([u[I], u[J], x[I, J]], 1)  # (k, 3)
            b.rows(cols, np.array([1.0, -1.0, float(n)]), hi=n - 1.0)
        return b.build()

    def scalars(self, p):
        return {"n": p["n"]}

    def rows(self, p):
        return {"cities": [{"i": i + 1, "x": p["xy"][i, 0], "y": p["xy"][i, 1]} for i in range(p["n"])]}

    def from_fields(self, sc, rows, missing=()):
        n = _pos_int(_need(sc, "n", self.name), "n", self.name)
        a = rows_by(rows["cities"], ["i"], (n,), "city")
        return {"n": n, "xy": np.stack([a["x"], a["y"]], 1)}

    def heuristic(self, p):
        """Nearest neighbour from city 1."""
        D = self.dist(np.asarray(p["xy"], float))
        n = p["n"]
        tour, seen = [0], np.zeros(n, bool)
        seen[0] = True
        for _ in range(n - 1):
            d = np.where(seen, np.inf, D[tour[-1]])
            nxt = int(np.argmin(d))
            tour.append(nxt)
            seen[nxt] = True
        return [t + 1 for t in tour]

    def check_plan(self, p, plan):
        t = np.asarray(plan, int).ravel() - 1
        if t.size != p["n"] or np.unique(t).size != p["n"] or t.min() < 0 or t.max() >= p["n"]:
            return PlanCheck(False, float("nan"), np.zeros(0), ("degree",))
        D = self.dist(np.asarray(p["xy"], float))
        legs = D[t, np.roll(t, -1)]
        return PlanCheck(True, float(legs.sum()), legs)
