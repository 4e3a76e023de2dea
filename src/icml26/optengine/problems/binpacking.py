"""The bin-packing class and first-fit decreasing.

References
----------
.. [1] Chen et al., "OPT-Engine", ICML 2026, arXiv:2601.19924 (App.: the binpacking generator).
   Authors' code: https://github.com/Cardinal-Operations/OPTEngine,
   ``OPTEngine/opt/modules/binpacking_generator.py``.
"""

from __future__ import annotations

import numpy as np

from .._checks import check_real
from ..lp import ModelBuilder
from ..text import Block, InstanceError, rows_by
from .base import PlanCheck, ProblemClass, _need, _pos_int


def first_fit_decreasing(w: np.ndarray, cap: float) -> np.ndarray:
    """Bin (0-based) of each item under first-fit decreasing.

    Items are taken largest first (ties: lower index) and each goes into the first open
    bin with room, else into a new bin.

    Parameters
    ----------
    w : array_like, shape (n,)
        Item sizes, each in ``[0, cap]``.
    cap : float
        Bin capacity (positive).

    Returns
    -------
    ndarray of int, shape (n,)
        The bin of each item.

    References
    ----------
    .. [1] D. S. Johnson, "Near-optimal bin packing algorithms", PhD thesis, MIT, 1973.
    .. [2] Chen et al., ICML 2026 (arXiv:2601.19924) (the PTR stand-in's by-hand plan).
    """
    w = np.asarray(w, dtype=float)
    if w.ndim != 1:
        raise ValueError(f"w must be a 1-D array of item sizes, got shape {w.shape}")
    cap = check_real(cap, "cap", positive=True)
    if not np.all(np.isfinite(w)) or (w < 0).any() or (w > cap).any():
        raise ValueError(f"item sizes must be finite and lie in [0, cap={cap:g}]")
    order = np.lexsort((np.arange(len(w)), -np.asarray(w)))
    loads: list[float] = []
    out = np.empty(len(w), int)
    for i in order:  # sequential by nature
        for k, l in enumerate(loads):
            if l + w[i] <= cap:
                loads[k] += w[i]
                out[i] = k
                break
        else:
            loads.append(float(w[i]))
            out[i] = len(loads) - 1
    return out


class BinPacking(ProblemClass):
    r"""Bin packing: :math:`\min\sum_k y_k` s.t. :math:`\sum_k x_{ik}=1`,
    :math:`\sum_i w_i x_{ik}\le C y_k`, :math:`y_k\ge y_{k+1}`, binary.

    ``C = 100``; sizes from a three-band mixture (25-35, 40-55, 65-75) as in the released
    data. The number of candidate bins is the first-fit-decreasing count (a valid upper
    bound, so the optimum is unchanged); two valid strengthenings (:math:`x_{ik}\le y_k`,
    item :math:`i` only in bins :math:`k\le i`) keep HiGHS fast. Size knob items, 10-40.

    Parameters
    ----------
    None
        A problem class takes no arguments (see :class:`~icml26.optengine.problems.base.ProblemClass`).

    References
    ----------
    .. [1] Chen et al., ICML 2026 (arXiv:2601.19924), App.; authors' ``OPTEngine/opt/modules/binpacking_generator.py``.
    """

    name, kind, sense, size_name, size_range = "BinPacking", "MIP", "min", "items", (10, 40)
    time_limit = 30.0
    integral_objective = True
    bands = np.array([[25, 35], [40, 55], [65, 75]])
    blocks = (
        Block(
            "text",
            "data",
            ("A warehouse must pack {n} items into identical bins.", "{n} parcels have to be loaded into identical containers."),
        ),
        Block("rows", "data", ("* Item {i}: size {w}", "* Parcel {i} has size {w}"), "items"),
        Block(
            "text",
            "capacity",
            (
                "Each bin has a capacity of {cap}; the total size of the items in a bin may not exceed it.",
                "No container may hold parcels whose sizes add up to more than {cap}.",
                "Stuffing a container past {cap} size units would burst it.",
            ),
        ),
        Block(
            "text", "assign", ("Every item must be placed in exactly one bin.", "Each parcel goes into exactly one container.")
        ),
        Block(
            "text",
            "data",
            ("Find the minimum number of bins needed.", "What is the smallest number of containers that suffices?"),
        ),
    )

    def _draw(self, rng, n):
        band = self.bands[rng.integers(0, 3, n)]
        return {"n": n, "w": rng.integers(band[:, 0], band[:, 1] + 1), "cap": 100}

    def build(self, p, drop=frozenset()):
        n, w = p["n"], np.asarray(p["w"], float)
        cap = p["cap"] if "capacity" not in drop else None
        K = int(first_fit_decreasing(w, cap).max() + 1) if cap is not None else 1
        b = ModelBuilder("min")
        y = b.var(K, 0, 1, integer=True)
        x = b.var((n, K), 0, 1, integer=True)
        b.set_objective(y, 1.0)
        if "assign" not in drop:
            b.rows(x, 1.0, 1.0, 1.0)
        cols = np.concatenate([x.T, y[:, None]], 1)  # (K, n+1)
        if cap is not None:
            b.rows(cols, np.r_[w, -cap][None, :], hi=0.0)
        else:  # an item may only go into an opened bin
            b.rows(cols, np.r_[np.ones(n), -n][None, :], hi=0.0)
        if K > 1:
            b.rows(np.stack([y[:-1], y[1:]], 1), np.array([1.0, -1.0]), lo=0.0)
        # valid strengthening (optimum unchanged): x_ik <= y_k, and, numbering bins by their
        # lowest item, item i never needs a bin later than the i-th
        b.rows(np.stack([x.ravel(), np.tile(y, n)], 1), np.array([1.0, -1.0]), hi=0.0)
        later = np.arange(K)[None, :] > np.arange(n)[:, None]
        if later.any():
            b.rows(x[later][:, None], 1.0, hi=0.0)
        return b.build()

    def scalars(self, p):
        return {"n": p["n"], "cap": p["cap"]}

    def rows(self, p):
        return {"items": [{"i": i + 1, "w": p["w"][i]} for i in range(p["n"])]}

    def from_fields(self, sc, rows, missing=()):
        n = _pos_int(_need(sc, "n", self.name), "n", self.name)
        a = rows_by(rows["items"], ["i"], (n,), "item")
        cap = None if "capacity" in missing else _need(sc, "cap", self.name)
        if cap is not None and a["w"].max() > cap:
            raise InstanceError(f"{self.name}: an item of size {a['w'].max():g} exceeds the bin capacity {cap:g}")
        return {"n": n, "w": a["w"], "cap": cap}

    def heuristic(self, p):
        """First-fit decreasing; the plan is the (1-based) bin of each item."""
        return [int(k) + 1 for k in first_fit_decreasing(np.asarray(p["w"], float), p["cap"])]

    def check_plan(self, p, plan):
        k = np.asarray(plan, int).ravel() - 1
        if k.size != p["n"] or k.min() < 0:
            return PlanCheck(False, float("nan"), np.zeros(0), ("assign",))
        loads = np.bincount(k, weights=np.asarray(p["w"], float))
        used = np.unique(k).size
        ok = bool(np.all(loads <= p["cap"] + 1e-9))
        return PlanCheck(ok, float(used), np.ones(used), () if ok else ("capacity",))
