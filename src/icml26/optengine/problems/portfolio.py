"""The linear portfolio class.

References
----------
.. [1] Chen et al., "OPT-Engine", ICML 2026, arXiv:2601.19924 (App.: the portfolio generator).
   Authors' code: https://github.com/Cardinal-Operations/OPTEngine,
   ``OPTEngine/opt/modules/portfolio_generator.py``.
"""

from __future__ import annotations

import numpy as np

from ..lp import ModelBuilder
from ..text import Block, InstanceError, rows_by
from .base import PlanCheck, ProblemClass, _ints, _need, _pos_int, _uniform3


class Portfolio(ProblemClass):
    r"""Linear portfolio selection (LP).

    :math:`\max r^\top x` s.t. :math:`\mathbf 1^\top x=1`, :math:`v^\top x\le V_{\max}`,
    :math:`r^\top x\ge R_{\min}`, :math:`\ell\le x\le u`, :math:`\sum_{i\in L}x_i\ge L_{\min}`.
    :math:`r\sim U(.02,.2)`, :math:`v\sim U(.01,.3)`, :math:`\ell\sim U(0,.1)`,
    :math:`u\sim U(.3,.9)`; :math:`R_{\min}, V_{\max}, L_{\min}` are scaled from a feasible
    reference mix (factors U(.6,.95), U(1,1.5), U(.2,.6) as in the authors' code). Every
    number is rounded to the 3 decimals the text shows *before* solving. Size knob assets, 5-20.

    Parameters
    ----------
    None
        A problem class takes no arguments (see :class:`~icml26.optengine.problems.base.ProblemClass`).

    References
    ----------
    .. [1] Chen et al., ICML 2026 (arXiv:2601.19924), App.; authors' ``OPTEngine/opt/modules/portfolio_generator.py``.
    """

    name, kind, sense, size_name, size_range = "Portfolio", "LP", "max", "assets", (5, 20)
    blocks = (
        Block(
            "text",
            "data",
            (
                "An investor splits a budget among {n} assets; the weights must be non-negative and sum to 1.",
                "A fund allocates all of its capital over {n} asset classes (fractions adding up to one).",
            ),
        ),
        Block(
            "rows",
            "data",
            (
                "* Asset {i}: expected return {r}, risk index {v}, weight between {l} and {u}",
                "* Asset {i} has return {r} and risk {v}; its share must lie in [{l}, {u}]",
            ),
            "assets",
        ),
        Block(
            "text",
            "liquidity",
            (
                "The liquid assets {L*} must together receive at least {Lmin} of the budget.",
                "At least {Lmin} of the capital goes to the liquid group made of assets {L*}.",
                "Assets {L*} can be sold quickly, and the fund wants no less than {Lmin} of its money parked there.",
            ),
        ),
        Block(
            "text",
            "risk",
            (
                "The portfolio risk (the weighted sum of risk indices) must not exceed {Vmax}.",
                "The weighted average risk index may be at most {Vmax}.",
                "Clients get nervous once the blended risk index rises above {Vmax}.",
            ),
        ),
        Block(
            "text",
            "min_return",
            (
                "The expected return must be at least {Rmin}.",
                "The portfolio must earn an expected return of no less than {Rmin}.",
                "Anything returning under {Rmin} in expectation would be rejected by the board.",
            ),
        ),
        Block(
            "text", "data", ("Maximise the expected return of the portfolio.", "What is the largest achievable expected return?")
        ),
    )

    def _draw(self, rng, n):
        r = _uniform3(rng, 0.02, 0.20, n)
        v = _uniform3(rng, 0.01, 0.30, n)
        l = rng.uniform(0.0, 0.10, n)
        if l.sum() > 1.0:
            l = l / l.sum()
        l = np.floor(l * 1000) / 1000
        u = np.maximum(rng.uniform(0.30, 0.90, n), l + 1e-3)
        if u.sum() < 1.0:
            u = u + (1.0 - u.sum()) / n + 1e-3
        u = np.minimum(np.ceil(u * 1000) / 1000, 1.0)
        k = int(_ints(rng, 1, max(1, n - 1)))
        L = np.sort(rng.choice(n, k, replace=False))
        inL = np.isin(np.arange(n), L)
        theta = (1.0 - l.sum()) / (u - l).sum()
        x0 = l + theta * (u - l)  # a feasible reference mix
        room = np.where(inL, u - l, 0.0)  # liquid-first mix: fill liquid assets first
        fill = np.clip((1.0 - l.sum()) - (np.cumsum(room) - room), 0.0, room)
        rest = np.where(inL, 0.0, u - l)
        left = 1.0 - l.sum() - fill.sum()
        xl = l + fill + np.clip(left - (np.cumsum(rest) - rest), 0.0, rest)
        Lmin = float(np.clip(rng.uniform(0.20, 0.60), l[inL].sum(), xl[inL].sum()))
        if x0[inL].sum() < Lmin:
            x0 = xl
        Lmin = np.floor(Lmin * 1000) / 1000
        Rmin = np.floor(rng.uniform(0.60, 0.95) * (r @ x0) * 1000) / 1000
        Vmax = np.ceil(rng.uniform(1.00, 1.50) * (v @ x0) * 1000) / 1000
        return {"n": n, "r": r, "v": v, "l": l, "u": u, "L": L, "Lmin": float(Lmin), "Rmin": float(Rmin), "Vmax": float(Vmax)}

    def build(self, p, drop=frozenset()):
        n = p["n"]
        b = ModelBuilder("max")
        x = b.var(n, p["l"], p["u"])
        b.set_objective(x, p["r"])
        b.rows(x[None, :], 1.0, 1.0, 1.0)
        if "risk" not in drop:
            b.rows(x[None, :], np.asarray(p["v"])[None, :], hi=p["Vmax"])
        if "min_return" not in drop:
            b.rows(x[None, :], np.asarray(p["r"])[None, :], lo=p["Rmin"])
        if "liquidity" not in drop:
            b.rows(x[np.asarray(p["L"], int)][None, :], 1.0, lo=p["Lmin"])
        return b.build()

    def scalars(self, p):
        return {"n": p["n"], "L": np.asarray(p["L"]) + 1, "Lmin": p["Lmin"], "Rmin": p["Rmin"], "Vmax": p["Vmax"]}

    def rows(self, p):
        return {"assets": [{"i": i + 1, "r": p["r"][i], "v": p["v"][i], "l": p["l"][i], "u": p["u"][i]} for i in range(p["n"])]}

    def from_fields(self, sc, rows, missing=()):
        n = _pos_int(_need(sc, "n", self.name), "n", self.name)
        a = rows_by(rows["assets"], ["i"], (n,), "asset")
        if np.any(a["l"] > a["u"]):
            raise InstanceError(f"{self.name}: an asset's lower bound exceeds its upper bound")
        p = {"n": n, "r": a["r"], "v": a["v"], "l": a["l"], "u": a["u"]}
        if "liquidity" in missing:
            p["L"], p["Lmin"] = None, None
        else:
            L = np.atleast_1d(np.asarray(_need(sc, "L", self.name), float)).astype(int) - 1
            if L.min() < 0 or L.max() >= n:
                raise InstanceError(f"{self.name}: liquid asset numbers must lie in 1..{n}")
            p["L"], p["Lmin"] = L, _need(sc, "Lmin", self.name)
        p["Vmax"] = None if "risk" in missing else _need(sc, "Vmax", self.name)
        p["Rmin"] = None if "min_return" in missing else _need(sc, "Rmin", self.name)
        return p

    def heuristic(self, p):
        """Lower bounds first, then the rest of the budget to the highest returns (risk and liquidity unchecked)."""
        l, u = np.asarray(p["l"]), np.asarray(p["u"])
        order = np.lexsort((np.arange(p["n"]), -np.asarray(p["r"])))
        cap = (u - l)[order]
        add = np.clip((1.0 - l.sum()) - (np.cumsum(cap) - cap), 0.0, cap)
        x = l.copy()
        x[order] += add
        return np.round(x, 6).tolist()

    def check_plan(self, p, plan):
        x = np.asarray(plan, float).ravel()
        if x.size != p["n"]:
            return PlanCheck(False, float("nan"), np.zeros(0), ("plan shape",))
        tol, bad = 1e-6, []
        if np.any(x < p["l"] - tol) or np.any(x > p["u"] + tol) or abs(x.sum() - 1) > 1e-5:
            bad.append("bounds/budget")
        if p["v"] @ x > p["Vmax"] + tol:
            bad.append("risk")
        if p["r"] @ x < p["Rmin"] - tol:
            bad.append("min_return")
        if x[np.asarray(p["L"], int)].sum() < p["Lmin"] - tol:
            bad.append("liquidity")
        terms = np.asarray(p["r"]) * x
        return PlanCheck(not bad, float(terms.sum()), terms, tuple(bad))
