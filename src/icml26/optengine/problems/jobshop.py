"""The job-shop class (disjunctive big-M model) and list scheduling.

References
----------
.. [1] Chen et al., "OPT-Engine", ICML 2026, arXiv:2601.19924 (App.: the jobshop generator).
   Authors' code: https://github.com/Cardinal-Operations/OPTEngine,
   ``OPTEngine/opt/modules/jobshop_generator.py``.
"""

from __future__ import annotations

import numpy as np

from ..lp import ModelBuilder
from ..text import Block, InstanceError, rows_by
from .base import PlanCheck, ProblemClass, _ints, _need, _pos_int


class JobShop(ProblemClass):
    r"""Job shop, disjunctive big-M model, :math:`\min C_{\max}`.

    :math:`s_{j,k+1}\ge s_{jk}+p_{jk}`; for two operations on one machine
    :math:`s_a-s_b+Mz\ge p_b`, :math:`s_b-s_a-Mz\ge p_a-M` (:math:`M=\sum p`);
    :math:`C_{\max}\ge s_{jk}+p_{jk}`. Each job visits every machine once in a random
    order, :math:`p\in\{1..10\}`; size knob jobs = machines, 3-10 (30 s limit).

    Parameters
    ----------
    None
        A problem class takes no arguments (see :class:`~icml26.optengine.problems.base.ProblemClass`).

    References
    ----------
    .. [1] Chen et al., ICML 2026 (arXiv:2601.19924), App.; authors' ``OPTEngine/opt/modules/jobshop_generator.py``.
    """

    name, kind, sense, size_name, size_range = "JobShop", "MIP", "min", "jobs=machines", (3, 10)
    time_limit = 30.0
    integral_objective = True
    blocks = (
        Block(
            "text",
            "data",
            (
                "A workshop has {n} jobs and {m} machines. Each job consists of {m} operations, one on each machine, in a fixed order.",
                "{n} orders must be processed on {m} machines; every order passes each machine once, following its own route.",
            ),
        ),
        Block(
            "rows",
            "data",
            (
                "* Job {j}: machine order {route*}; processing times {times*}",
                "* Order {j} visits machines {route*} taking {times*} hours respectively",
            ),
            "jobs",
        ),
        Block(
            "text",
            "precedence",
            (
                "An operation of a job can start only after the previous operation of the same job has finished.",
                "Each order must finish one step before it starts its next step.",
            ),
        ),
        Block(
            "text",
            "machine",
            (
                "Each machine can process at most one operation at a time, and an operation cannot be interrupted.",
                "No machine may work on two operations simultaneously; operations run without pre-emption.",
                "Whenever a machine is busy, any other order that needs it has to wait its turn.",
            ),
        ),
        Block(
            "text",
            "data",
            (
                "Find the minimum makespan, i.e. the time at which all jobs are complete.",
                "What is the earliest time by which every order can be finished?",
            ),
        ),
    )

    def _draw(self, rng, n):
        route = np.argsort(rng.random((n, n)), axis=1)  # route[j, k]: machine of job j's k-th operation
        return {"n": n, "route": route, "p": _ints(rng, 1, 10, (n, n))}

    def build(self, p, drop=frozenset()):
        n, route, pt = p["n"], np.asarray(p["route"], int), np.asarray(p["p"], float)
        M = float(pt.sum())
        b = ModelBuilder("min")
        s = b.var((n, n), 0.0)  # s[j, k]: start of job j's k-th operation
        C = b.var(1, 0.0)
        b.set_objective(C, 1.0)
        b.rows(np.stack([np.repeat(C, n * n), s.ravel()], 1), np.array([1.0, -1.0]), lo=pt.ravel())
        if "precedence" not in drop:
            b.rows(np.stack([s[:, 1:].ravel(), s[:, :-1].ravel()], 1), np.array([1.0, -1.0]), lo=pt[:, :-1].ravel())
        if "machine" not in drop:
            pos = np.argsort(route, axis=1)  # pos[j, m]: position of machine m in job j's route
            A, B = np.triu_indices(n, 1)
            mach = np.repeat(np.arange(n), A.size)
            A, B = np.tile(A, n), np.tile(B, n)
            sa, sb = s[A, pos[A, mach]], s[B, pos[B, mach]]
            pa, pb = pt[A, pos[A, mach]], pt[B, pos[B, mach]]
            z = b.var(A.size, 0, 1, integer=True)
            b.rows(np.stack([sa, sb, z], 1), np.array([1.0, -1.0, M]), lo=pb)
            b.rows(np.stack([sb, sa, z], 1), np.array([1.0, -1.0, -M]), lo=pa - M)
        return b.build()

    def scalars(self, p):
        return {"n": p["n"], "m": p["n"]}

    def rows(self, p):
        return {"jobs": [{"j": j + 1, "route": p["route"][j] + 1, "times": p["p"][j]} for j in range(p["n"])]}

    def from_fields(self, sc, rows, missing=()):
        n = _pos_int(_need(sc, "n", self.name), "n", self.name)
        m = _pos_int(_need(sc, "m", self.name), "m", self.name)
        if m != n:
            raise InstanceError(f"{self.name}: this engine's instances have as many machines as jobs (got {n} and {m})")
        a = rows_by(rows["jobs"], ["j"], (n,), "job")
        route = a["route"].astype(int) - 1
        if np.any(np.sort(route, 1) != np.arange(n)):
            raise InstanceError(f"{self.name}: each job must visit machines 1..{n} exactly once")
        return {"n": n, "route": route, "p": a["times"]}

    def _schedule(self, p) -> np.ndarray:
        """Earliest-start list scheduling (ties: shortest operation, then job); starts (n, n)."""
        n, route, pt = p["n"], np.asarray(p["route"], int), np.asarray(p["p"], float)
        nxt = np.zeros(n, int)
        job_ready, mach_ready = np.zeros(n), np.zeros(n)
        start = np.zeros((n, n))
        for _ in range(n * n):  # one operation per step; each step depends on the previous
            live = nxt < n
            k = np.minimum(nxt, n - 1)
            mach = route[np.arange(n), k]
            est = np.where(live, np.maximum(job_ready, mach_ready[mach]), np.inf)
            dur = pt[np.arange(n), k]
            j = int(np.lexsort((np.arange(n), dur, est))[0])
            start[j, nxt[j]] = est[j]
            job_ready[j] = mach_ready[mach[j]] = est[j] + dur[j]
            nxt[j] += 1
        return start

    def heuristic(self, p):
        """Earliest-start list scheduling; the plan is the start time of every operation."""
        return self._schedule(p).tolist()

    def check_plan(self, p, plan):
        n, route, pt = p["n"], np.asarray(p["route"], int), np.asarray(p["p"], float)
        S = np.asarray(plan, float)
        if S.shape != (n, n) or np.any(S < -1e-9):
            return PlanCheck(False, float("nan"), np.zeros(0), ("plan shape",))
        E = S + pt
        bad = []
        if np.any(S[:, 1:] < E[:, :-1] - 1e-9):
            bad.append("precedence")
        mach, s, e = route.ravel(), S.ravel(), E.ravel()
        o = np.lexsort((s, mach))
        same = mach[o][1:] == mach[o][:-1]
        if np.any(same & (s[o][1:] < e[o][:-1] - 1e-9)):
            bad.append("machine")
        # the makespan as a hand calculation: durations along the chain that ends last
        terms, j, k = [], *np.unravel_index(int(np.argmax(E)), E.shape)
        while True:
            terms.append(pt[j, k])
            t0 = S[j, k]
            if t0 <= 1e-9:
                break
            if k > 0 and abs(E[j, k - 1] - t0) < 1e-9:
                k = k - 1
                continue
            hit = np.nonzero((np.abs(E - t0) < 1e-9) & (route == route[j, k]))
            if hit[0].size == 0:
                terms.append(t0)  # idle time before this operation, counted as one number
                break
            j, k = int(hit[0][0]), int(hit[1][0])
        return PlanCheck(not bad, float(E.max()), np.asarray(terms[::-1]), tuple(bad))
