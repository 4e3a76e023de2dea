"""Exact (mixed-integer) linear models and the HiGHS solver interface.

A :class:`LinearModel` holds ``min/max c^T x + offset  s.t.  row_lb <= A x <= row_ub,
lb <= x <= ub,  x_j in Z (j integer)``; :class:`ModelBuilder` assembles one from blocks
of variables and vectorised rows; :func:`solve` solves it with HiGHS through ``highspy``
(one thread, fixed seed, optional time limit); :func:`to_lp_text` and
:func:`solve_lp_text` write and read the CPLEX LP file format, the form in which a
language model can hand back a formulation.

References
----------
.. [1] Y. Chen, C. Cheng, Y. Sun, Z. Ling, D. Ge, "OPT-Engine: Benchmarking the Limits of
   LLMs in Optimization Modeling via Complexity Scaling", ICML 2026, arXiv:2601.19924.
   Authors' code: https://github.com/Cardinal-Operations/OPTEngine (they solve with Gurobi).
.. [2] Q. Huangfu, J. A. J. Hall, "Parallelizing the dual revised simplex method",
   Math. Prog. Comp. 10 (2018) 119-142 (HiGHS).
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from ._checks import check_real, check_type

__all__ = ["INF", "LinearModel", "ModelBuilder", "SolveResult", "solve", "to_highs", "to_lp_text", "solve_lp_text", "model_key"]

INF = math.inf


@dataclass
class LinearModel:
    r"""A (mixed-integer) linear programme in row form.

    .. math::
        \min / \max\; c^\top x + \text{offset}\quad\text{s.t.}\quad
        r_\ell \le A x \le r_u,\;\; \ell \le x \le u,\;\; x_j\in\mathbb Z\ (j\in\mathcal I).

    Parameters
    ----------
    c : ndarray, shape (n,)
        Objective coefficients.
    A : scipy.sparse.csr_matrix, shape (m, n)
        Constraint matrix.
    row_lb, row_ub : ndarray, shape (m,)
        Row bounds (``-inf`` / ``inf`` for a one-sided row).
    lb, ub : ndarray, shape (n,)
        Variable bounds.
    integer : ndarray of bool, shape (n,)
        Which variables are integer.
    sense : {"min", "max"}
        Direction of the objective.
    offset : float
        Constant added to the objective.
    meta : dict
        Free-form notes (e.g. which constraint families a formulator left out).

    Raises
    ------
    ValueError
        For an unknown ``sense`` or inconsistent shapes.

    References
    ----------
    .. [1] Chen et al., ICML 2026 (arXiv:2601.19924), Sec. 3 (every instance carries its exact model).
    """

    c: np.ndarray
    A: sp.csr_matrix
    row_lb: np.ndarray
    row_ub: np.ndarray
    lb: np.ndarray
    ub: np.ndarray
    integer: np.ndarray
    sense: str = "min"
    offset: float = 0.0
    meta: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.sense not in ("min", "max"):
            raise ValueError(f"sense={self.sense!r} is not valid; use 'min' or 'max'")
        for name in ("c", "row_lb", "row_ub", "lb", "ub", "integer"):
            check_type(getattr(self, name), np.ndarray, name, "a numpy array")
        if not sp.issparse(self.A):
            raise TypeError(f"A must be a scipy.sparse matrix, got {type(self.A).__name__}")
        if self.c.ndim != 1:
            raise ValueError(f"c must be 1-D, got shape {self.c.shape}")
        n = self.c.shape[0]
        m = self.A.shape[0]
        if self.A.shape[1] != n or self.lb.shape != (n,) or self.ub.shape != (n,) or self.integer.shape != (n,):
            raise ValueError(f"inconsistent column dimensions: c has {n}, A is {self.A.shape}")
        if self.row_lb.shape != (m,) or self.row_ub.shape != (m,):
            raise ValueError(f"row bounds must have shape ({m},)")
        if np.isnan(self.c).any() or np.isnan(self.lb).any() or np.isnan(self.ub).any():
            raise ValueError("c, lb and ub must not contain NaN")

    @property
    def n_vars(self) -> int:
        """Number of variables ``n``."""
        return int(self.c.shape[0])

    @property
    def n_rows(self) -> int:
        """Number of rows ``m``."""
        return int(self.A.shape[0])

    @property
    def is_mip(self) -> bool:
        """Whether any variable is integer."""
        return bool(self.integer.any())

    def _point(self, x: Any) -> np.ndarray:
        x = np.asarray(x, dtype=float)
        if x.shape != (self.n_vars,):
            raise ValueError(f"x must have shape ({self.n_vars},), got {x.shape}")
        return x

    def objective(self, x: np.ndarray) -> float:
        """``c^T x + offset`` at a point.

        Parameters
        ----------
        x : array_like, shape (n,)
            A point.

        Returns
        -------
        float
            The objective value.

        References
        ----------
        .. [1] Chen et al., ICML 2026 (arXiv:2601.19924).
        """
        return float(self.c @ self._point(x) + self.offset)

    def is_feasible(self, x: np.ndarray, tol: float = 1e-6) -> bool:
        """Whether a point satisfies every row, bound and integrality.

        Parameters
        ----------
        x : array_like, shape (n,)
            A point.
        tol : float
            Absolute tolerance.

        Returns
        -------
        bool
            Feasibility.

        References
        ----------
        .. [1] Chen et al., ICML 2026 (arXiv:2601.19924).
        """
        x = self._point(x)
        ax = self.A @ x
        ok = np.all(ax >= self.row_lb - tol) and np.all(ax <= self.row_ub + tol)
        ok &= np.all(x >= self.lb - tol) and np.all(x <= self.ub + tol)
        ok &= np.all(np.abs(x[self.integer] - np.round(x[self.integer])) <= tol)
        return bool(ok)


def _filled(value: Any, shape: tuple[int, ...], k: int) -> np.ndarray:
    """``value`` (a number or an array) broadcast to ``shape`` as a new flat float array of length ``k``."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return np.full(k, float(value))
    return np.broadcast_to(np.asarray(value, float), shape).ravel().copy()


def _csr_fills_in() -> bool:
    """Whether SciPy's constructor, given canonical arrays, keeps those arrays (views, not copies)
    and sets nothing but them, the shape and ``maxprint``: the state :func:`_csr_canonical` fills in."""
    d, i, p = np.ones(2), np.array([0, 1], np.int32), np.array([0, 1, 2], np.int32)
    A = sp.csr_matrix((d, i, p), shape=(2, 2))
    same = all(
        np.shares_memory(a, b) and a.dtype == b.dtype and np.array_equal(a, b)
        for a, b in ((A.data, d), (A.indices, i), (A.indptr, p))
    ) and A.shape == (2, 2)
    return same and sorted(vars(A)) == ["_shape", "data", "indices", "indptr", "maxprint"]


_CSR_FILLS_IN = _csr_fills_in()
_CSR_MAXPRINT = sp.csr_matrix((1, 1)).maxprint


def _csr_canonical(data: np.ndarray, indices: np.ndarray, indptr: np.ndarray, shape: tuple[int, int]) -> sp.csr_matrix:
    """``sp.csr_matrix((data, indices, indptr), shape=shape)`` for arrays already in canonical form
    (float64 data, int32 indices sorted within each row and unique, int32 ``indptr``).

    SciPy's constructor re-checks and re-types the arrays it is given (about 10 µs, a tenth of a
    small model's build and hand-over); for arrays made canonical here the result is the same
    object state, so it is filled in directly, as long as this SciPy's constructor makes that
    state (checked at import by :func:`_csr_fills_in`; otherwise, the constructor). Tested against it.
    """
    if not _CSR_FILLS_IN:
        return sp.csr_matrix((data, indices, indptr), shape=shape)
    A = sp.csr_matrix.__new__(sp.csr_matrix)
    A.__dict__.update(_shape=(int(shape[0]), int(shape[1])), data=data, indices=indices, indptr=indptr, maxprint=_CSR_MAXPRINT)
    return A


def _csr(v: np.ndarray, ri: np.ndarray, ci: np.ndarray, shape: tuple[int, int]) -> sp.csr_matrix:
    """The CSR matrix with entries ``v[k]`` at ``(ri[k], ci[k])``, duplicates summed, indices sorted.

    The same matrix (data, indices, index dtype) as
    ``sp.csr_matrix((v, (ri, ci)), shape=shape)`` followed by ``sum_duplicates()``. When no
    ``(row, column)`` pair repeats, the canonical layout is unique: a stable sort of the
    entries by ``(row, column)`` (none when they already come in that order) and the row
    counts give it directly, without SciPy's COO conversion. Otherwise (a repeated entry,
    whose sum SciPy forms in its own order, or an index SciPy must refuse) it is SciPy's path.

    Parameters
    ----------
    v : ndarray of float, shape (nnz,)
        Entries.
    ri, ci : ndarray of int, shape (nnz,)
        Their row and column indices.
    shape : (int, int)
        ``(m, n)``.

    Returns
    -------
    scipy.sparse.csr_matrix, shape (m, n)
        It may share ``v`` and ``ci`` (the builder passes arrays it has just concatenated).
    """
    m, n = shape
    if ri.size and ri.dtype.kind in "iu" and ci.dtype.kind in "iu" and max(m, n, ri.size) < 2**31 - 1:
        key = ri.astype(np.int64, copy=False) * n + ci  # (nnz,) row-major position
        if ci.min() >= 0 and ci.max() < n:
            # with every column in range, strictly increasing positions have non-decreasing rows,
            # so the first and last rows bound them all
            if (key[1:] > key[:-1]).all() and ri[0] >= 0 and ri[-1] < m:  # in order, no duplicate
                data, indices = v, ci
            elif ri.min() < 0 or ri.max() >= m:
                data = indices = None
            else:
                order = np.argsort(key, kind="stable")
                ks = key[order]
                data, indices = (None, None) if (ks[1:] == ks[:-1]).any() else (v[order], ci[order])
            if data is not None:
                indptr = np.zeros(m + 1, np.int32)
                np.cumsum(np.bincount(ri, minlength=m), out=indptr[1:])
                return _csr_canonical(data.astype(float, copy=False), indices.astype(np.int32, copy=False), indptr, (m, n))
    A = sp.csr_matrix((v, (ri, ci)), shape=(m, n))
    A.sum_duplicates()
    return A


class ModelBuilder:
    """Accumulate variables and rows, then :meth:`build` a :class:`LinearModel`.

    Variables are created in blocks (:meth:`var` returns their column indices with the
    requested shape); constraints are added in vectorised blocks (:meth:`rows`: ``k`` rows
    with ``t`` terms each).

    Parameters
    ----------
    sense : {"min", "max"}
        Direction of the objective.

    References
    ----------
    .. [1] Chen et al., ICML 2026 (arXiv:2601.19924); the authors build the same models with gurobipy.
    """

    def __init__(self, sense: str = "min") -> None:
        if sense not in ("min", "max"):
            raise ValueError(f"sense={sense!r} is not valid; use 'min' or 'max'")
        self.sense = sense
        self._lb: list[np.ndarray] = []
        self._ub: list[np.ndarray] = []
        self._int: list[np.ndarray] = []
        self._c: list[np.ndarray] = []
        self.n = 0
        self._ri: list[np.ndarray] = []
        self._ci: list[np.ndarray] = []
        self._v: list[np.ndarray] = []
        self._rlb: list[np.ndarray] = []
        self._rub: list[np.ndarray] = []
        self.m = 0
        self.offset = 0.0
        self._obj: list[tuple[np.ndarray, np.ndarray]] = []

    def var(self, shape: int | tuple[int, ...], lb: Any = 0.0, ub: Any = INF, integer: bool = False) -> np.ndarray:
        """New variables with (broadcast) bounds.

        Parameters
        ----------
        shape : int or tuple of int
            Shape of the block (non-negative entries).
        lb, ub : float or array_like
            Bounds, broadcast to ``shape``.
        integer : bool
            Whether the block is integer.

        Returns
        -------
        ndarray of int
            The column indices of the new variables, shape ``shape``.

        References
        ----------
        .. [1] Chen et al., ICML 2026 (arXiv:2601.19924).
        """
        shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
        if any(int(s) < 0 for s in shape):
            raise ValueError(f"shape={shape!r} must not have negative entries")
        k = math.prod(int(s) for s in shape)
        idx = np.arange(self.n, self.n + k).reshape(shape)
        self._lb.append(_filled(lb, shape, k))
        self._ub.append(_filled(ub, shape, k))
        self._int.append(np.full(k, bool(integer)))
        self._c.append(np.zeros(k))
        self.n += k
        return idx

    def set_objective(self, cols: np.ndarray, coefs: Any, offset: float = 0.0) -> None:
        """Add ``coefs * x[cols]`` to the objective.

        Parameters
        ----------
        cols : array_like of int
            Column indices.
        coefs : float or array_like
            Coefficients, broadcast with ``cols``.
        offset : float
            Constant added to the objective.

        Returns
        -------
        None

        References
        ----------
        .. [1] Chen et al., ICML 2026 (arXiv:2601.19924).
        """
        cols, coefs = np.asarray(cols), np.asarray(coefs, float)
        if cols.shape != coefs.shape:
            cols, coefs = np.broadcast_arrays(cols, coefs)
        self._obj.append((cols.ravel(), coefs.ravel()))
        self.offset += float(offset)

    def rows(self, cols: np.ndarray, coefs: Any, lo: Any = -INF, hi: Any = INF) -> None:
        """Add ``k`` rows ``lo_r <= sum_t coefs[r, t] x[cols[r, t]] <= hi_r``.

        Parameters
        ----------
        cols : array_like of int, shape (k, t)
            Column indices of each row's terms.
        coefs : float or array_like
            Coefficients, broadcast to ``cols``.
        lo, hi : float or array_like
            Row bounds, broadcast to (k,).

        Returns
        -------
        None

        References
        ----------
        .. [1] Chen et al., ICML 2026 (arXiv:2601.19924).
        """
        cols = np.atleast_2d(np.asarray(cols))
        coefs = np.asarray(coefs, float)
        if coefs.shape != cols.shape:
            coefs = np.broadcast_to(coefs, cols.shape)
        k, t = cols.shape
        if k == 0:
            return
        self._ri.append(np.repeat(np.arange(self.m, self.m + k), t))
        self._ci.append(cols.ravel())
        self._v.append(coefs.ravel())
        self._rlb.append(_filled(lo, (k,), k))
        self._rub.append(_filled(hi, (k,), k))
        self.m += k

    def build(self) -> LinearModel:
        """The model made of every variable and row added so far.

        Parameters
        ----------
        None

        Returns
        -------
        LinearModel
            The assembled programme (duplicate entries summed).

        References
        ----------
        .. [1] Chen et al., ICML 2026 (arXiv:2601.19924).
        """
        c = np.zeros(self.n)  # the blocks' zeros, concatenated
        for cols, coefs in self._obj:
            np.add.at(c, cols, coefs)
        if self._ri:
            A = _csr(np.concatenate(self._v), np.concatenate(self._ri), np.concatenate(self._ci), (self.m, self.n))
            rlb, rub = np.concatenate(self._rlb), np.concatenate(self._rub)
        else:
            A, rlb, rub = sp.csr_matrix((0, self.n)), np.zeros(0), np.zeros(0)
        return LinearModel(
            c=c,
            A=A,
            row_lb=rlb,
            row_ub=rub,
            lb=np.concatenate(self._lb) if self._lb else np.zeros(0),
            ub=np.concatenate(self._ub) if self._ub else np.zeros(0),
            integer=np.concatenate(self._int) if self._int else np.zeros(0, bool),
            sense=self.sense,
            offset=self.offset,
        )


@dataclass
class SolveResult:
    """Outcome of :func:`solve`.

    Parameters
    ----------
    status : str
        One of ``optimal``, ``infeasible``, ``unbounded``, ``infeasible_or_unbounded``,
        ``time_limit``, ``error``.
    objective : float or None
        The optimum (``None`` unless ``status == "optimal"``).
    x : ndarray or None
        An optimal point.
    seconds : float
        Wall time of the solve.

    References
    ----------
    .. [1] Chen et al., ICML 2026 (arXiv:2601.19924): an instance is kept only if the solver returns OPTIMAL.
    """

    status: str
    objective: float | None
    x: np.ndarray | None
    seconds: float

    STATUSES = ("optimal", "infeasible", "unbounded", "infeasible_or_unbounded", "time_limit", "error")

    def __post_init__(self) -> None:
        if self.status not in self.STATUSES:
            raise ValueError(f"status={self.status!r} is not valid; use one of {self.STATUSES}")
        if self.status == "optimal":
            check_real(self.objective, "objective")
        elif self.objective is not None:
            raise ValueError(f"objective must be None unless status is 'optimal' (status={self.status!r})")
        check_real(self.seconds, "seconds", allow_none=False)

    @property
    def answer(self) -> float | str | None:
        """What a solver-integrated answer reports: the optimum, or the status string."""
        if self.status == "optimal":
            return self.objective
        if self.status in ("infeasible", "unbounded"):
            return self.status
        return None


_HIGHS: Any = None  # highspy, once the first HiGHS object of the process has printed its banner to /dev/null


def _highspy():
    """highspy, imported (and its one-time licence banner silenced) on first use."""
    global _HIGHS
    if _HIGHS is None:
        import highspy

        sys.stdout.flush()
        saved = os.dup(1)
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, 1)
            highspy.Highs()  # the banner is printed by C++ with the first highspy.Highs of the process
        finally:
            os.dup2(saved, 1)
            os.close(devnull)
            os.close(saved)
        _HIGHS = highspy
    return _HIGHS


def _new_highs():
    """A fresh HiGHS object with logging off.

    It is highspy's C++ class itself (``highspy._core._Highs``), of which ``highspy.Highs``
    is the Python subclass that adds callbacks, interrupt handling and the modelling layer;
    every call made here (options, ``passModel``, ``run``, ``writeModel``, ``readModel``,
    results) is the C++ method in both. Without the subclass's per-object callback table a
    new object costs half as much and is freed as soon as it is dropped (a ``highspy.Highs``
    refers to itself through its callbacks, so only the garbage collector frees it).
    """
    h = _highspy()._core._Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", 1)
    h.setOptionValue("random_seed", 0)
    return h


def _run(h, time_limit: float | None) -> tuple[str, float | None, np.ndarray | None]:
    highspy = _highspy()

    if time_limit is not None:
        h.setOptionValue("time_limit", float(time_limit))
    h.run()
    st = h.getModelStatus()
    S = highspy.HighsModelStatus
    status = {
        S.kOptimal: "optimal",
        S.kInfeasible: "infeasible",
        S.kUnbounded: "unbounded",
        S.kUnboundedOrInfeasible: "infeasible_or_unbounded",
        S.kTimeLimit: "time_limit",
    }.get(st, "error")
    if status == "optimal":
        return status, float(h.getInfo().objective_function_value), np.asarray(h.getSolution().col_value)
    return status, None, None


def _pass_model(h, model: LinearModel) -> None:
    """Hand ``model`` to a Highs object (HiGHS keeps the sense, so an LP file says "max")."""
    highspy = _highspy()

    inf = highspy.kHighsInf
    sense = highspy.ObjSense.kMaximize if model.sense == "max" else highspy.ObjSense.kMinimize
    if model.is_mip:
        # the array form of passModel (HiGHS's C API): the same HighsLp, without converting
        # every array element by element into a std::vector
        A = model.A.tocsr()
        h.passModel(
            model.n_vars,
            model.n_rows,
            A.nnz,
            int(highspy.MatrixFormat.kRowwise),
            int(sense),
            float(model.offset),
            np.asarray(model.c, float),
            np.where(np.isinf(model.lb), -inf, model.lb),
            np.where(np.isinf(model.ub), inf, model.ub),
            np.where(np.isinf(model.row_lb), -inf, model.row_lb),
            np.where(np.isinf(model.row_ub), inf, model.row_ub),
            A.indptr.astype(np.int32, copy=False),
            A.indices.astype(np.int32, copy=False),
            A.data.astype(float, copy=False),
            model.integer.astype(np.int32),  # 1 = HighsVarType.kInteger, 0 = kContinuous
        )
        return
    # an LP keeps HiGHS's empty integrality vector (the array form would fill it with kContinuous)
    lp = highspy.HighsLp()
    lp.num_col_ = model.n_vars
    lp.num_row_ = model.n_rows
    lp.sense_ = sense
    lp.col_cost_ = model.c
    lp.offset_ = model.offset
    lp.col_lower_ = np.where(np.isinf(model.lb), -inf, model.lb)
    lp.col_upper_ = np.where(np.isinf(model.ub), inf, model.ub)
    lp.row_lower_ = np.where(np.isinf(model.row_lb), -inf, model.row_lb)
    lp.row_upper_ = np.where(np.isinf(model.row_ub), inf, model.row_ub)
    A = model.A.tocsr()
    lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
    lp.a_matrix_.num_col_ = model.n_vars
    lp.a_matrix_.num_row_ = model.n_rows
    lp.a_matrix_.start_ = A.indptr.astype(np.int32)
    lp.a_matrix_.index_ = A.indices.astype(np.int32)
    lp.a_matrix_.value_ = A.data.astype(float)
    h.passModel(lp)


def _check_model(model: Any, fn: str) -> LinearModel:
    return check_type(model, LinearModel, f"{fn}'s model", "a LinearModel")


def solve(model: LinearModel, *, time_limit: float | None = None, mip_rel_gap: float = 1e-6) -> SolveResult:
    """Solve ``model`` with HiGHS (``highspy``), one thread, ``random_seed=0``.

    Parameters
    ----------
    model : LinearModel
        The programme to solve.
    time_limit : float, optional
        Seconds; a model not proven optimal within it gets status ``time_limit``.
    mip_rel_gap : float
        Relative MIP gap at which HiGHS stops (1e-6: far below the checker's 0.2 %).

    Returns
    -------
    SolveResult
        Status, optimum, optimal point and wall time.

    References
    ----------
    .. [1] Chen et al., ICML 2026 (arXiv:2601.19924), Sec. 3: instances are kept only when
       the solver proves optimality (the authors use Gurobi; here HiGHS).
    .. [2] Huangfu & Hall, Math. Prog. Comp. 10 (2018) (HiGHS).
    """
    _check_model(model, "solve")
    time_limit = check_real(time_limit, "time_limit", positive=True, allow_none=True)
    gap = check_real(mip_rel_gap, "mip_rel_gap", positive=True)
    t0 = time.perf_counter()
    h = _to_highs(model, gap)
    status, obj, x = _run(h, time_limit)
    return SolveResult(status, obj, x, time.perf_counter() - t0)


def _to_highs(model: LinearModel, gap: float):
    h = _new_highs()
    h.setOptionValue("mip_rel_gap", gap)
    _pass_model(h, model)
    return h


def to_highs(model: LinearModel, *, mip_rel_gap: float = 1e-6):
    """The HiGHS object that :func:`solve` runs: ``model`` handed over, options set, not yet solved.

    One thread, ``random_seed=0``, logging off, the given relative MIP gap; ``run()`` on it
    is :func:`solve`'s search. The model's build and hand-over, without the search (what the
    chapter's benchmark times against another way of writing the same model).

    Parameters
    ----------
    model : LinearModel
        The programme.
    mip_rel_gap : float
        As in :func:`solve`.

    Returns
    -------
    highspy._core._Highs
        Ready to ``run()``.

    References
    ----------
    .. [1] Huangfu & Hall, Math. Prog. Comp. 10 (2018) (HiGHS).
    """
    _check_model(model, "to_highs")
    return _to_highs(model, check_real(mip_rel_gap, "mip_rel_gap", positive=True))


def to_lp_text(model: LinearModel) -> str:
    """``model`` in the CPLEX LP file format (written by HiGHS): what a SIR answer may look like.

    Parameters
    ----------
    model : LinearModel
        The programme to write.

    Returns
    -------
    str
        The LP-format text.

    References
    ----------
    .. [1] Chen et al., ICML 2026 (arXiv:2601.19924): solver-integrated reasoning hands a model to a solver.
    """
    _check_model(model, "to_lp_text")
    h = _new_highs()
    _pass_model(h, model)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "model.lp")
        h.writeModel(path)
        with open(path) as f:
            return f.read()


def solve_lp_text(text: str, *, time_limit: float | None = 60.0) -> SolveResult:
    """Solve a model written in the CPLEX LP file format (what an LLM can return for SIR).

    A fenced block (```lp ... ```) is unwrapped first.

    Parameters
    ----------
    text : str
        LP-format text, optionally inside a fenced block.
    time_limit : float, optional
        Seconds for HiGHS.

    Returns
    -------
    SolveResult
        As :func:`solve`.

    Raises
    ------
    ValueError
        If the text is empty or HiGHS cannot read it as an LP file.

    References
    ----------
    .. [1] Chen et al., ICML 2026 (arXiv:2601.19924) (SIR answers are solver code; here LP text).
    """
    if not isinstance(text, str):
        raise TypeError(f"solve_lp_text needs an LP-format str, got {type(text).__name__}")
    if not text.strip():
        raise ValueError("solve_lp_text needs a non-empty LP-format string")
    time_limit = check_real(time_limit, "time_limit", positive=True, allow_none=True)
    m = re.search(r"```(?:lp|LP|cplex)?\s*\n(.*?)```", text, flags=re.S)
    body = m.group(1) if m else text
    import highspy

    t0 = time.perf_counter()
    h = _new_highs()
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "model.lp")
        with open(path, "w") as f:
            f.write(body)
        if h.readModel(path) == highspy.HighsStatus.kError:
            raise ValueError("HiGHS could not read the text as a CPLEX LP-format model")
    status, obj, x = _run(h, time_limit)
    return SolveResult(status, obj, x, time.perf_counter() - t0)


def model_key(model: LinearModel) -> str:
    """A content hash of ``model`` (two models with the same key are the same programme).

    Parameters
    ----------
    model : LinearModel
        The programme to hash.

    Returns
    -------
    str
        A SHA-1 hex digest over the sense, objective, matrix, bounds and integrality.

    References
    ----------
    .. [1] Chen et al., ICML 2026 (arXiv:2601.19924) (used here to solve a repeated SIR model once).
    """
    _check_model(model, "model_key")
    A = model.A.tocsr()
    h = hashlib.sha1(model.sense.encode())
    for a in (model.c, A.data, A.indices, A.indptr, model.row_lb, model.row_ub, model.lb, model.ub, model.integer):
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()
