"""The product-mix (production) class.

References
----------
.. [1] Chen et al., "OPT-Engine", ICML 2026, arXiv:2601.19924 (App.: the production generator).
   Authors' code: https://github.com/Cardinal-Operations/OPTEngine,
   ``OPTEngine/opt/modules/production_generator.py``.
"""

from __future__ import annotations

import numpy as np

from ..lp import ModelBuilder
from ..text import Block, rows_by
from .base import PlanCheck, ProblemClass, _ints, _need, _pos_int, _uniform3


class Production(ProblemClass):
    r"""Product mix (LP): :math:`\max p^\top x` s.t. :math:`\sum_i t_{ij}x_i\le T_j`, :math:`x\ge 0`.

    Profit U(5,20), time U(.2,2), :math:`T_j` = U(1,1.5) times the load of a random
    reference plan of total U(50,200) units (3 decimals). Size knob products, 3-10;
    operations drawn from 2-5.

    Parameters
    ----------
    None
        A problem class takes no arguments (see :class:`~icml26.optengine.problems.base.ProblemClass`).

    References
    ----------
    .. [1] Chen et al., ICML 2026 (arXiv:2601.19924), App.; authors' ``OPTEngine/opt/modules/production_generator.py``.
    """

    name, kind, sense, size_name, size_range = "Production", "LP", "max", "products", (3, 10)
    blocks = (
        Block(
            "text",
            "data",
            (
                "A factory makes {n} products; each passes through {J} operations.",
                "{n} product lines share {J} processing stages.",
            ),
        ),
        Block("rows", "data", ("* Product {i}: profit {p} per unit", "* Each unit of product {i} earns {p}"), "profit"),
        Block(
            "rows",
            "data",
            ("* Product {i} needs {t} hours on Operation {j}", "* Stage {j} spends {t} hours per unit of product {i}"),
            "time",
        ),
        Block(
            "rows",
            "capacity",
            (
                "* Operation {j} has {T} hours available",
                "* Stage {j} can run for at most {T} hours",
                "* Stage {j} is staffed for {T} hours, after which it shuts down",
            ),
            "cap",
        ),
        Block(
            "text",
            "data",
            (
                "Production quantities may be fractional. Maximise the total profit.",
                "Fractional quantities are allowed. What is the maximum total profit?",
            ),
        ),
    )

    def _draw(self, rng, n):
        J = int(_ints(rng, 2, 5))
        pr = _uniform3(rng, 5.0, 20.0, n)
        t = _uniform3(rng, 0.2, 2.0, (n, J))
        z = rng.random(n) + 1e-9
        xref = np.round(_uniform3(rng, 50.0, 200.0) * z / z.sum(), 3)
        T = np.round(t.T @ xref * np.round(rng.uniform(1.0, 1.5, J), 3), 3)
        return {"n": n, "J": J, "p": pr, "t": t, "T": T}

    def build(self, p, drop=frozenset()):
        b = ModelBuilder("max")
        x = b.var(p["n"], 0.0)
        b.set_objective(x, p["p"])
        if "capacity" not in drop:
            b.rows(np.broadcast_to(x, (p["J"], p["n"])), np.asarray(p["t"]).T, hi=np.asarray(p["T"]))
        return b.build()

    def scalars(self, p):
        return {"n": p["n"], "J": p["J"]}

    def rows(self, p):
        n, J = p["n"], p["J"]
        I, K = np.divmod(np.arange(n * J), J)
        return {
            "profit": [{"i": i + 1, "p": p["p"][i]} for i in range(n)],
            "time": [{"i": i + 1, "j": j + 1, "t": p["t"][i, j]} for i, j in zip(I, K)],
            "cap": [{"j": j + 1, "T": p["T"][j]} for j in range(J)],
        }

    def from_fields(self, sc, rows, missing=()):
        n = _pos_int(_need(sc, "n", self.name), "n", self.name)
        J = _pos_int(_need(sc, "J", self.name), "J", self.name)
        p = {
            "n": n,
            "J": J,
            "p": rows_by(rows["profit"], ["i"], (n,), "profit")["p"],
            "t": rows_by(rows["time"], ["i", "j"], (n, J), "time")["t"],
        }
        p["T"] = None if "capacity" in missing else rows_by(rows["cap"], ["j"], (J,), "capacity")["T"]
        return p

    def heuristic(self, p):
        """Products by profit per total hour; each made as far as the remaining hours allow."""
        t, res = np.asarray(p["t"], float), np.asarray(p["T"], float).copy()
        x = np.zeros(p["n"])
        for i in np.lexsort((np.arange(p["n"]), -np.asarray(p["p"]) / t.sum(1))):
            x[i] = max(0.0, float(np.min(res / t[i])))
            res = res - t[i] * x[i]
        return np.round(x, 6).tolist()

    def check_plan(self, p, plan):
        x = np.asarray(plan, float).ravel()
        if x.size != p["n"]:
            return PlanCheck(False, float("nan"), np.zeros(0), ("plan shape",))
        ok = bool(np.all(x >= -1e-9) and np.all(np.asarray(p["t"]).T @ x <= np.asarray(p["T"]) * (1 + 1e-6) + 1e-6))
        terms = np.asarray(p["p"]) * x
        return PlanCheck(ok, float(terms.sum()), terms, () if ok else ("capacity",))
