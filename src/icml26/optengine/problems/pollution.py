"""The emission-control (pollution) class.

References
----------
.. [1] Chen et al., "OPT-Engine", ICML 2026, arXiv:2601.19924 (App.: the pollution generator).
   Authors' code: https://github.com/Cardinal-Operations/OPTEngine,
   ``OPTEngine/opt/modules/pollution_generator.py``.
"""

from __future__ import annotations

import numpy as np

from ..lp import ModelBuilder
from ..text import Block, InstanceError, rows_by
from .base import PlanCheck, ProblemClass, _ints, _need, _pos_int, _uniform3


class Pollution(ProblemClass):
    r"""Emission control (LP): :math:`\min\sum c_{ij}x_{ij}` s.t. :math:`\sum_j x_{ij}\le q_i`,
    :math:`\sum_{ij} w_i s_j x_{ij}\ge P\sum_i w_i q_i`, :math:`x\ge 0`.

    :math:`w\sim U(.5,3)`, :math:`q\sim U(50,300)`, :math:`s\sim U(.1,.9)`,
    :math:`c\sim U(10,200)`, :math:`P=\min(U(.2,.7), \max s-10^{-4})` (3 decimals).
    Here :math:`s_j` is the *removal* efficiency in both text and model. Size knob
    sources, 3-10; methods drawn from 2-5.

    Parameters
    ----------
    None
        A problem class takes no arguments (see :class:`~icml26.optengine.problems.base.ProblemClass`).

    References
    ----------
    .. [1] Chen et al., ICML 2026 (arXiv:2601.19924), App.; authors' ``OPTEngine/opt/modules/pollution_generator.py``.
    """

    name, kind, sense, size_name, size_range = "Pollution", "LP", "min", "sources", (3, 10)
    blocks = (
        Block(
            "text",
            "data",
            (
                "A region must cut particulate emissions from {n} sources; {K} control methods are available.",
                "{n} plants emit dust, and {K} abatement technologies can be fitted.",
            ),
        ),
        Block(
            "rows",
            "data",
            (
                "* Source {i}: emission factor {w} per unit of production, production {q} units",
                "* Plant {i} emits {w} per unit produced and produces {q} units",
            ),
            "source",
        ),
        Block(
            "rows",
            "data",
            (
                "* Method {j} removes a fraction {s} of the emissions of the production it treats",
                "* Technology {j} has removal efficiency {s}",
            ),
            "method",
        ),
        Block(
            "rows",
            "data",
            (
                "* Treating one unit of Source {i} with Method {j} costs {c}",
                "* Fitting technology {j} at plant {i} costs {c} per unit treated",
            ),
            "cost",
        ),
        Block(
            "text",
            "production",
            (
                "At each source the production treated, summed over all methods, cannot exceed its production.",
                "A plant cannot treat more units than it produces, summed over technologies.",
                "Each plant's output can be split among technologies, but there is only so much output to go around.",
            ),
        ),
        Block(
            "text",
            "data",
            (
                "Total emissions must fall by at least a fraction {P} of the uncontrolled emissions. Find the minimum total control cost.",
                "Emissions must drop by a share of at least {P} relative to no control. What is the cheapest plan?",
            ),
        ),
    )

    def _draw(self, rng, n):
        K = int(_ints(rng, 2, 5))
        w, q = _uniform3(rng, 0.5, 3.0, n), _uniform3(rng, 50.0, 300.0, n)
        s, c = _uniform3(rng, 0.10, 0.90, K), _uniform3(rng, 10.0, 200.0, (n, K))
        P = round(max(0.0, min(rng.uniform(0.20, 0.70), s.max() - 1e-4)), 3)
        return {"n": n, "K": K, "w": w, "q": q, "s": s, "c": c, "P": P}

    def build(self, p, drop=frozenset()):
        n, K = p["n"], p["K"]
        w, q, s = (np.asarray(p[k], float) for k in ("w", "q", "s"))
        b = ModelBuilder("min")
        x = b.var((n, K), 0.0)
        b.set_objective(x, p["c"])
        if "production" not in drop:
            b.rows(x, 1.0, hi=q)
        b.rows(x.ravel()[None, :], (w[:, None] * s[None, :]).ravel()[None, :], lo=p["P"] * (w @ q))
        return b.build()

    def scalars(self, p):
        return {"n": p["n"], "K": p["K"], "P": p["P"]}

    def rows(self, p):
        n, K = p["n"], p["K"]
        I, J = np.divmod(np.arange(n * K), K)
        return {
            "source": [{"i": i + 1, "w": p["w"][i], "q": p["q"][i]} for i in range(n)],
            "method": [{"j": j + 1, "s": p["s"][j]} for j in range(K)],
            "cost": [{"i": i + 1, "j": j + 1, "c": p["c"][i, j]} for i, j in zip(I, J)],
        }

    def from_fields(self, sc, rows, missing=()):
        n = _pos_int(_need(sc, "n", self.name), "n", self.name)
        K = _pos_int(_need(sc, "K", self.name), "K", self.name)
        a = rows_by(rows["source"], ["i"], (n,), "source")
        s = rows_by(rows["method"], ["j"], (K,), "method")["s"]
        if np.any((s < 0) | (s > 1)):
            raise InstanceError(f"{self.name}: removal efficiencies must lie in [0, 1]")
        return {
            "n": n,
            "K": K,
            "w": a["w"],
            "q": a["q"],
            "s": s,
            "c": rows_by(rows["cost"], ["i", "j"], (n, K), "cost")["c"],
            "P": _need(sc, "P", self.name),
        }

    def heuristic(self, p):
        """Cheapest cost per unit of emission removed first, until the target is met."""
        w, q, s, c = (np.asarray(p[k], float) for k in ("w", "q", "s", "c"))
        gain = w[:, None] * s[None, :]  # (n, K) emission removed per unit treated
        need = p["P"] * (w @ q)
        left, x = q.copy(), np.zeros_like(c)
        for a in np.lexsort((np.arange(c.size), (c / gain).ravel())):  # sequential
            if need <= 1e-12:
                break
            i, j = divmod(int(a), p["K"])
            amt = min(left[i], need / gain[i, j])
            x[i, j], left[i], need = amt, left[i] - amt, need - amt * gain[i, j]
        return np.round(x, 6).tolist()

    def check_plan(self, p, plan):
        w, q, s, c = (np.asarray(p[k], float) for k in ("w", "q", "s", "c"))
        x = np.asarray(plan, float)
        if x.shape != c.shape:
            return PlanCheck(False, float("nan"), np.zeros(0), ("plan shape",))
        bad = []
        if np.any(x < -1e-9) or np.any(x.sum(1) > q + 1e-6):
            bad.append("production")
        if (w[:, None] * s[None, :] * x).sum() < p["P"] * (w @ q) - 1e-4:
            bad.append("target")
        terms = (c * x)[x > 0]
        return PlanCheck(not bad, float(terms.sum()), terms, tuple(bad))
