"""Network flow and its uncapacitated special case, the transportation problem.

:class:`NetworkFlow` is the capacitated warehouse-to-store flow;
:class:`Transportation` is the same model without arc capacities, with its own
sampler, sizes and wording (a subclass: rows, parsing, model, plan check and heuristic
are shared).

References
----------
.. [1] Chen et al., "OPT-Engine", ICML 2026, arXiv:2601.19924 (App.: the network-flow and
   transportation generators). Authors' code: https://github.com/Cardinal-Operations/OPTEngine,
   ``OPTEngine/opt/modules/netflow_generator.py`` and ``transportation_generator.py``.
"""

from __future__ import annotations

import numpy as np

from ..lp import INF, ModelBuilder
from ..text import Block, InstanceError, rows_by
from .base import PlanCheck, ProblemClass, _ints, _need, _pos_int

__all__ = ["least_cost_method", "NetworkFlow", "Transportation"]


def least_cost_method(cost: np.ndarray, supply: np.ndarray, demand: np.ndarray, cap: np.ndarray | None = None) -> np.ndarray:
    """Greedy shipping plan: cheapest arc first, ship as much as supply, demand (and arc capacity) allow.

    Parameters
    ----------
    cost : ndarray, shape (n, m)
        Unit cost of each arc.
    supply : ndarray, shape (n,)
        What each source can ship (non-negative).
    demand : ndarray, shape (m,)
        What each sink needs (non-negative).
    cap : ndarray, shape (n, m), optional
        Arc capacities (non-negative); ``None`` for none.

    Returns
    -------
    ndarray, shape (n, m)
        The flow on each arc (ties in cost: lower arc index first).

    References
    ----------
    .. [1] F. S. Hillier, G. J. Lieberman, *Introduction to Operations Research*, ch. 9
       (the least-cost method for an initial transportation plan).
    .. [2] Chen et al., ICML 2026 (arXiv:2601.19924) (the PTR stand-in's by-hand plan).
    """
    cost = np.asarray(cost, float)
    if cost.ndim != 2:
        raise ValueError(f"cost must be a 2-D array (sources x sinks), got shape {cost.shape}")
    n, m = cost.shape
    s, d = np.array(supply, float), np.array(demand, float)
    if s.shape != (n,) or d.shape != (m,):
        raise ValueError(f"supply must have shape ({n},) and demand ({m},), got {s.shape} and {d.shape}")
    cap = None if cap is None else np.asarray(cap, float)
    if cap is not None and cap.shape != (n, m):
        raise ValueError(f"cap must have shape ({n}, {m}), got {cap.shape}")
    arrays = [cost, s, d] + ([cap] if cap is not None else [])
    if not all(np.all(np.isfinite(a)) for a in arrays):
        raise ValueError("cost, supply, demand and cap must be finite")
    if any((a < 0).any() for a in arrays[1:]):
        raise ValueError("supply, demand and cap must be non-negative")
    f = np.zeros((n, m))
    for a in np.lexsort((np.arange(n * m), cost.ravel())):  # arcs in cost order; sequential
        i, j = divmod(int(a), m)
        q = min(s[i], d[j], cap[i, j] if cap is not None else INF)
        if q > 0:
            f[i, j] = q
            s[i] -= q
            d[j] -= q
    return f


class NetworkFlow(ProblemClass):
    r"""Capacitated warehouse-to-store flow (LP).

    :math:`\min\sum c_{ws}f_{ws}` s.t. :math:`\sum_s f_{ws}\le S_w`, :math:`\sum_w f_{ws}=D_s`,
    :math:`0\le f_{ws}\le k_{ws}`. Supplies and demands in {10..100} balanced by trimming,
    cost {1..10}, capacity {5..100}; infeasible draws are discarded. Size knob n warehouses
    = n stores (benchmark 5-9).

    Parameters
    ----------
    None
        A problem class takes no arguments (see :class:`~icml26.optengine.problems.base.ProblemClass`).

    References
    ----------
    .. [1] Chen et al., ICML 2026 (arXiv:2601.19924), App.; authors' ``OPTEngine/opt/modules/netflow_generator.py``.
    """

    name, kind, sense, size_name, size_range = "NetworkFlow", "LP", "min", "warehouses=stores", (3, 14)
    capacitated = True  # arc capacities are part of the model and the text
    square = True  # as many stores as warehouses
    nouns = {"source": "warehouse", "sink": "store", "cost": "route cost", "cap": "route capacity"}
    blocks = (
        Block(
            "text",
            "data",
            ("A company ships goods from {n} warehouses to {m} stores.", "Goods flow from {n} depots to {m} shops."),
        ),
        Block(
            "rows",
            "supply",
            (
                "* Warehouse {i} can supply at most {s} units",
                "* Depot {i} has {s} units available",
                "* Depot {i} stocks {s} units in total, which is all it can send",
            ),
            "supply",
        ),
        Block("rows", "data", ("* Store {j} needs exactly {d} units", "* Shop {j} requires {d} units"), "demand"),
        Block(
            "rows",
            "data",
            ("* Route W{i}-S{j}: cost {c} per unit", "* Shipping from depot {i} to shop {j} costs {c} per unit"),
            "cost",
        ),
        Block(
            "rows",
            "arc_capacity",
            (
                "* Route W{i}-S{j}: capacity {k} units",
                "* At most {k} units can travel from depot {i} to shop {j}",
                "* The lorry between depot {i} and shop {j} takes loads of up to {k} units",
            ),
            "cap",
        ),
        Block(
            "text",
            "data",
            ("Meet every store's demand at minimum total shipping cost.", "What is the cheapest way to satisfy all shops?"),
        ),
    )

    def _draw(self, rng, n):
        s, d = _ints(rng, 10, 100, n), _ints(rng, 10, 100, n)
        diff = int(s.sum() - d.sum())
        v = s if diff > 0 else d  # trim the larger side, first nodes first (as the authors do)
        cut = np.clip(abs(diff) - (np.cumsum(v) - v), 0, v)
        v -= cut
        return {"n": n, "s": s, "d": d, "cost": _ints(rng, 1, 10, (n, n)), "cap": _ints(rng, 5, 100, (n, n))}

    def _cap(self, p) -> np.ndarray | None:
        return np.asarray(p["cap"], float) if self.capacitated else None

    def build(self, p, drop=frozenset()):
        n, m = np.shape(p["cost"])
        b = ModelBuilder("min")
        f = b.var((n, m), 0.0, INF if "arc_capacity" in drop or not self.capacitated else np.asarray(p["cap"], float))
        b.set_objective(f, p["cost"])
        if "supply" not in drop:
            b.rows(f, 1.0, hi=np.asarray(p["s"], float))
        b.rows(f.T, 1.0, np.asarray(p["d"], float), np.asarray(p["d"], float))
        return b.build()

    def scalars(self, p):
        n, m = np.shape(p["cost"])
        return {"n": n, "m": m}

    def rows(self, p):
        n, m = np.shape(p["cost"])
        I, J = np.divmod(np.arange(n * m), m)
        out = {
            "supply": [{"i": i + 1, "s": p["s"][i]} for i in range(n)],
            "demand": [{"j": j + 1, "d": p["d"][j]} for j in range(m)],
            "cost": [{"i": i + 1, "j": j + 1, "c": p["cost"][i, j]} for i, j in zip(I, J)],
        }
        if self.capacitated:
            out["cap"] = [{"i": i + 1, "j": j + 1, "k": p["cap"][i, j]} for i, j in zip(I, J)]
        return out

    def from_fields(self, sc, rows, missing=()):
        n = _pos_int(_need(sc, "n", self.name), "n", self.name)
        m = _pos_int(_need(sc, "m", self.name), "m", self.name)
        w = self.nouns
        if self.square and m != n:
            raise InstanceError(
                f"{self.name}: this engine's instances have as many {w['sink']}s as {w['source']}s (got {n} and {m})"
            )
        p = {"n": n} if self.square else {"n": n, "m": m}
        p["d"] = rows_by(rows["demand"], ["j"], (m,), w["sink"])["d"]
        p["cost"] = rows_by(rows["cost"], ["i", "j"], (n, m), w["cost"])["c"]
        p["s"] = None if "supply" in missing else rows_by(rows["supply"], ["i"], (n,), w["source"])["s"]
        if self.capacitated:
            p["cap"] = None if "arc_capacity" in missing else rows_by(rows["cap"], ["i", "j"], (n, m), w["cap"])["k"]
        return p

    def heuristic(self, p):
        """Least-cost method (with arc capacities, it may strand demand: a global-feasibility failure)."""
        return least_cost_method(np.asarray(p["cost"], float), p["s"], p["d"], self._cap(p)).tolist()

    def check_plan(self, p, plan):
        f, cap = np.asarray(plan, float), self._cap(p)
        cost, s, d = np.asarray(p["cost"], float), np.asarray(p["s"], float), np.asarray(p["d"], float)
        if f.shape != cost.shape:
            return PlanCheck(False, float("nan"), np.zeros(0), ("plan shape",))
        bad = []
        if np.any(f < -1e-6) or (cap is not None and np.any(f > cap + 1e-6)):
            bad.append("arc_capacity")
        if np.any(f.sum(1) > s + 1e-6):
            bad.append("supply")
        if np.any(np.abs(f.sum(0) - d) > 1e-6):
            bad.append("demand")
        terms = (cost * f)[f > 0]
        return PlanCheck(not bad, float(terms.sum()), terms, tuple(bad))


class Transportation(NetworkFlow):
    r"""Transportation problem (LP): :math:`\min\sum c_{ij}x_{ij}`, :math:`\sum_j x_{ij}\le s_i`, :math:`\sum_i x_{ij}=d_j`.

    A :class:`NetworkFlow` without arc capacities and with as many sinks as drawn.
    Supply {50..200}; total demand :math:`U(.6,.95)\sum s` split at random; cost {1..20}.
    Size knob sources, 3-10; sinks drawn from 3-10. The least-cost plan is always
    feasible here, and optimal only by luck.

    Parameters
    ----------
    None
        A problem class takes no arguments (see :class:`~icml26.optengine.problems.base.ProblemClass`).

    References
    ----------
    .. [1] Chen et al., ICML 2026 (arXiv:2601.19924), App.; authors' ``OPTEngine/opt/modules/transportation_generator.py``.
    """

    name, kind, sense, size_name, size_range = "Transportation", "LP", "min", "sources", (3, 10)
    capacitated = False
    square = False
    nouns = {"source": "plant", "sink": "customer", "cost": "unit cost", "cap": ""}
    blocks = (
        Block(
            "text",
            "data",
            (
                "A company ships a product from {n} plants to {m} customers.",
                "There are {n} factories and {m} distribution centres.",
            ),
        ),
        Block(
            "rows",
            "supply",
            (
                "* Plant {i} can ship at most {s} units",
                "* Factory {i} has a capacity of {s} units",
                "* Factory {i} only manages to turn out {s} units",
            ),
            "supply",
        ),
        Block("rows", "data", ("* Customer {j} demands {d} units", "* Centre {j} must receive {d} units"), "demand"),
        Block(
            "rows",
            "data",
            ("* Unit cost from Plant {i} to Customer {j}: {c}", "* Shipping one unit from factory {i} to centre {j} costs {c}"),
            "cost",
        ),
        Block(
            "text",
            "data",
            (
                "Every customer's demand must be met exactly. Find the minimum total transportation cost.",
                "All centres must get exactly what they need. What is the least total shipping cost?",
            ),
        ),
    )

    def _draw(self, rng, n):
        m = int(_ints(rng, 3, 10))
        s = _ints(rng, 50, 200, n)
        total = int(rng.uniform(0.6, 0.95) * s.sum())
        d = rng.multinomial(total, rng.dirichlet(np.ones(m)))
        return {"n": n, "m": m, "s": s, "d": d, "cost": _ints(rng, 1, 20, (n, m))}
