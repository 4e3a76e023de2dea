"""The 0-1 knapsack class.

References
----------
.. [1] Chen et al., "OPT-Engine", ICML 2026, arXiv:2601.19924 (App.: the knapsack generator).
   Authors' code: https://github.com/Cardinal-Operations/OPTEngine,
   ``OPTEngine/opt/modules/knapsack_generator.py``.
"""

from __future__ import annotations

import numpy as np

from ..lp import ModelBuilder
from ..text import Block, rows_by
from .base import PlanCheck, ProblemClass, _ints, _need, _pos_int


class Knapsack(ProblemClass):
    r"""0-1 knapsack: :math:`\max \sum_i v_i x_i` s.t. :math:`\sum_i w_i x_i \le W`, :math:`x\in\{0,1\}^n`.

    Sampling (authors): :math:`w_i\in\{1..50\}`, :math:`v_i\in\{10..300\}`,
    :math:`W=\lfloor 0.7\sum_i w_i\rfloor`; size knob ``n`` items, 5-30.

    Parameters
    ----------
    None
        A problem class takes no arguments (see :class:`~icml26.optengine.problems.base.ProblemClass`).

    References
    ----------
    .. [1] Chen et al., ICML 2026 (arXiv:2601.19924), App.; authors' ``OPTEngine/opt/modules/knapsack_generator.py``.
    """

    name, kind, sense, size_name, size_range = "Knapsack", "MIP", "max", "items", (5, 30)
    integral_objective = True
    blocks = (
        Block(
            "text",
            "data",
            (
                "A hiker is packing for a trip and can choose among {n} items; each item is either taken whole or left behind.",
                "There are {n} candidate items for a delivery drone; every item is loaded entirely or not at all.",
            ),
        ),
        Block("rows", "data", ("* Item {i}: weight {w} kg, value {v}", "* Item {i} weighs {w} kg and is worth {v}"), "items"),
        Block(
            "text",
            "capacity",
            (
                "The knapsack can carry at most {cap} kg in total.",
                "The total weight loaded must not exceed {cap} kg.",
                "Anything beyond {cap} kg of combined load is more than the drone can lift.",
            ),
        ),
        Block(
            "text",
            "data",
            (
                "Choose the items that maximise the total value.",
                "Which items should be selected to make the total worth as large as possible?",
            ),
        ),
    )

    def _draw(self, rng, n):
        w = _ints(rng, 1, 50, n)
        v = _ints(rng, 10, 300, n)
        return {"n": n, "w": w, "v": v, "cap": int(np.floor(0.7 * w.sum()))}

    def build(self, p, drop=frozenset()):
        b = ModelBuilder("max")
        x = b.var(p["n"], 0, 1, integer=True)
        b.set_objective(x, p["v"])
        if "capacity" not in drop:
            b.rows(x[None, :], p["w"][None, :], hi=p["cap"])
        return b.build()

    def scalars(self, p):
        return {"n": p["n"], "cap": p["cap"]}

    def rows(self, p):
        return {"items": [{"i": i + 1, "w": p["w"][i], "v": p["v"][i]} for i in range(p["n"])]}

    def from_fields(self, sc, rows, missing=()):
        n = _pos_int(_need(sc, "n", self.name), "n", self.name)
        a = rows_by(rows["items"], ["i"], (n,), "item")
        return {"n": n, "w": a["w"], "v": a["v"], "cap": None if "capacity" in missing else _need(sc, "cap", self.name)}

    def heuristic(self, p):
        """Greedy by value density v/w (ties: lower index), skipping items that do not fit."""
        order = np.lexsort((np.arange(p["n"]), -p["v"] / p["w"]))
        w = p["w"][order]
        take = np.zeros(p["n"], bool)
        room = p["cap"]
        for k in range(p["n"]):  # sequential by nature: each choice changes the room left
            if w[k] <= room:
                take[k] = True
                room -= w[k]
        return sorted(int(i) + 1 for i in order[take])

    def check_plan(self, p, plan):
        idx = np.asarray(plan, int).ravel() - 1
        if idx.size and (idx.min() < 0 or idx.max() >= p["n"] or np.unique(idx).size != idx.size):
            return PlanCheck(False, float("nan"), np.zeros(0), ("item list",))
        ok = p["w"][idx].sum() <= p["cap"]
        return PlanCheck(bool(ok), float(p["v"][idx].sum()), p["v"][idx].astype(float), () if ok else ("capacity",))
