"""The lot-sizing (inventory) class: lead time, capacity, lost sales.

References
----------
.. [1] Chen et al., "OPT-Engine", ICML 2026, arXiv:2601.19924 (App.: the inventory generator).
   Authors' code: https://github.com/Cardinal-Operations/OPTEngine,
   ``OPTEngine/opt/modules/inventory_generator.py``.
"""

from __future__ import annotations

import numpy as np

from ..lp import INF, ModelBuilder
from ..text import Block, InstanceError, rows_by
from .base import PlanCheck, ProblemClass, _ints, _need, _pos_int


class Inventory(ProblemClass):
    r"""Lot sizing with lead time, capacity and lost sales (LP).

    :math:`\min p\sum_t x_t + h\sum_t I_t + c\sum_t S_t` s.t.
    :math:`I_t - S_t = I_{t-1} + x_{t-\ell} - D_t`, :math:`I_{t-1}+x_{t-\ell}\le C`,
    :math:`Q_{\min}\le x_t\le Q_{\max}`, :math:`0\le I_t\le C`, :math:`I_0` given.
    Size knob horizon T, 5-20; ranges as in the authors' generator.

    Parameters
    ----------
    None
        A problem class takes no arguments (see :class:`~icml26.optengine.problems.base.ProblemClass`).

    References
    ----------
    .. [1] Chen et al., ICML 2026 (arXiv:2601.19924), App.; authors' ``OPTEngine/opt/modules/inventory_generator.py``.
    """

    name, kind, sense, size_name, size_range = "Inventory", "LP", "min", "periods", (5, 20)
    blocks = (
        Block(
            "text",
            "data",
            (
                "A factory plans orders of a raw material over {T} periods. At the start it holds {I0} units.",
                "Over a horizon of {T} periods a plant must decide how much material to buy; opening stock is {I0} units.",
            ),
        ),
        Block(
            "text",
            "order_bounds",
            (
                "In every period an order is placed whose size must be between {Qmin} and {Qmax} units.",
                "Each period's purchase must be no less than {Qmin} units and no more than {Qmax} units.",
                "The supplier will not take an order below {Qmin} units and cannot deliver more than {Qmax} units per period.",
            ),
        ),
        Block(
            "text",
            "lead",
            (
                "An order placed in period t arrives {lead} period(s) later.",
                "Deliveries take {lead} period(s) to arrive.",
                "Material bought now shows up only after a delay of {lead} period(s).",
            ),
        ),
        Block("rows", "data", ("* Period {t}: demand {d} units", "* Demand in period {t} is {d} units"), "demand"),
        Block(
            "text",
            "data",
            (
                "Unmet demand is lost (no backorders). Quantities may be fractional.",
                "Shortages are allowed but become lost sales; fractional amounts are fine.",
            ),
        ),
        Block(
            "text",
            "capacity",
            (
                "The warehouse holds at most {C} units: stock carried plus arriving deliveries may never exceed {C}.",
                "Storage is limited to {C} units on hand at any time, including goods that have just arrived.",
                "Only {C} units fit on the shelves, counting what has just been delivered.",
            ),
        ),
        Block(
            "text",
            "data",
            (
                "Costs: {pc} per unit ordered, {hc} per unit held at the end of a period, {sc} per unit of unmet demand. Minimise the total cost.",
                "Each unit bought costs {pc}, each unit left in stock at a period's end costs {hc}, and each unit of demand not served costs {sc}. What is the minimum total cost?",
            ),
        ),
    )

    def size_of(self, p):
        return int(p["T"])

    def _draw(self, rng, T):
        D = _ints(rng, 10, 60, T)
        I0 = int(_ints(rng, 0, 100))
        Qmin = int(_ints(rng, 0, 20))
        Qmax = int(_ints(rng, max(Qmin + 1, 20), 80))
        lead = int(_ints(rng, 0, 4))
        pc, hc = int(_ints(rng, 1, 6)), int(_ints(rng, 1, 3))
        sc = int(_ints(rng, max(hc + 1, 6), 15))
        C = max(I0, int(rng.uniform(0.8, 1.6) * D.mean()))
        return {"T": T, "D": D, "I0": I0, "Qmin": Qmin, "Qmax": Qmax, "lead": lead, "pc": pc, "hc": hc, "sc": sc, "C": C}

    def build(self, p, drop=frozenset()):
        T, D = p["T"], np.asarray(p["D"], float)
        lead = 0 if "lead" in drop else int(p["lead"])
        C = INF if "capacity" in drop else float(p["C"])
        qlo, qhi = (0.0, INF) if "order_bounds" in drop else (float(p["Qmin"]), float(p["Qmax"]))
        b = ModelBuilder("min")
        x = b.var(T, qlo, qhi)
        I = b.var(T + 1, np.r_[p["I0"], np.zeros(T)], np.r_[p["I0"], np.full(T, C)])  # I[0] fixed
        S = b.var(T, 0.0)
        b.set_objective(x, p["pc"])
        b.set_objective(I[1:], p["hc"])
        b.set_objective(S, p["sc"])
        t = np.arange(1, T + 1)
        arr = t - lead >= 1
        # balance: I_t - S_t - I_{t-1} - x_{t-l} = -D_t
        ta = t[arr]
        b.rows(
            np.stack([I[ta], S[ta - 1], I[ta - 1], x[ta - lead - 1]], 1),
            np.array([1.0, -1.0, -1.0, -1.0]),
            -D[ta - 1],
            -D[ta - 1],
        )
        tn = t[~arr]
        b.rows(np.stack([I[tn], S[tn - 1], I[tn - 1]], 1), np.array([1.0, -1.0, -1.0]), -D[tn - 1], -D[tn - 1])
        if np.isfinite(C):
            b.rows(np.stack([I[ta - 1], x[ta - lead - 1]], 1), 1.0, hi=C)
        return b.build()

    def scalars(self, p):
        return {k: p[k] for k in ("T", "I0", "Qmin", "Qmax", "lead", "C", "pc", "hc", "sc")}

    def rows(self, p):
        return {"demand": [{"t": t + 1, "d": p["D"][t]} for t in range(p["T"])]}

    def from_fields(self, sc, rows, missing=()):
        T = _pos_int(_need(sc, "T", self.name), "T", self.name)
        a = rows_by(rows["demand"], ["t"], (T,), "demand")
        p = {"T": T, "D": a["d"]}
        for k in ("I0", "pc", "hc", "sc"):
            p[k] = _need(sc, k, self.name)
        p["Qmin"], p["Qmax"] = (
            (None, None) if "order_bounds" in missing else (_need(sc, "Qmin", self.name), _need(sc, "Qmax", self.name))
        )
        p["lead"] = None if "lead" in missing else _need(sc, "lead", self.name)
        p["C"] = None if "capacity" in missing else _need(sc, "C", self.name)
        if p["Qmin"] is not None and p["Qmin"] > p["Qmax"]:
            raise InstanceError(f"{self.name}: minimum order {p['Qmin']:g} exceeds maximum order {p['Qmax']:g}")
        return p

    def heuristic(self, p):
        """Myopic: order what the arrival period will lack, clipped to [Qmin, Qmax]; capacity ignored."""
        T, D, l = p["T"], np.asarray(p["D"], float), int(p["lead"])
        x = np.full(T, float(p["Qmin"]))
        for t in range(T):  # period by period, as on paper
            a = t + l  # 0-based period in which this order arrives
            if a >= T:
                break
            arrivals = np.zeros(T)
            arrivals[l:] = x[: T - l] if l else x
            inv = float(p["I0"])
            for s in range(a):  # project stock up to the arrival period
                inv = max(inv + arrivals[s] - D[s], 0.0)
            x[t] = float(np.clip(D[a] - inv, p["Qmin"], p["Qmax"]))
        return x.tolist()

    def check_plan(self, p, plan):
        T, D, l = p["T"], np.asarray(p["D"], float), int(p["lead"])
        x = np.asarray(plan, float).ravel()
        if x.size != T:
            return PlanCheck(False, float("nan"), np.zeros(0), ("plan shape",))
        bad = []
        if np.any(x < p["Qmin"] - 1e-6) or np.any(x > p["Qmax"] + 1e-6):
            bad.append("order_bounds")
        arr = np.zeros(T)
        arr[l:] = x[: T - l] if l else x
        I, S, inv, over = np.zeros(T), np.zeros(T), float(p["I0"]), False
        for t in range(T):  # a stock recursion is sequential
            avail = inv + arr[t]
            over |= avail > p["C"] + 1e-6
            I[t], S[t] = max(avail - D[t], 0.0), max(D[t] - avail, 0.0)
            inv = I[t]
        if over:
            bad.append("capacity")
        terms = np.concatenate([p["pc"] * x, p["hc"] * I, p["sc"] * S])
        return PlanCheck(not bad, float(terms.sum()), terms, tuple(bad))
