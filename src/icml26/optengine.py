"""OPT-Engine: verified optimisation word problems whose size is a knob, and three ways to answer them.

Chen, Cheng, Sun, Ling & Ge, *OPT-Engine: Benchmarking the Limits of LLMs in
Optimization Modeling via Complexity Scaling*, ICML 2026 (arXiv:2601.19924).

The module has four layers.

1. **Exact models and a solver.** :class:`LinearModel` holds a (mixed-integer) linear
   programme ``min/max c^T x  s.t.  row_lb <= A x <= row_ub,  lb <= x <= ub,  x_j in Z for
   integer j``; :func:`solve` solves it with HiGHS through ``highspy`` (one thread, fixed
   seed, optional time limit). :func:`solve_lp_text` solves a model written in the CPLEX LP
   file format, the form in which a language model can hand back a formulation.
2. **The ten problem classes** of the authors' engine (:data:`CLASSES`): a seeded sampler
   with the authors' parameter ranges, the exact model, a natural-language rendering with
   three phrasings (canonical, a seen paraphrase, an unseen paraphrase of the constraint
   sentences), a parser that inverts the phrasings it knows, a plan evaluator and a
   "by-hand" heuristic. :func:`generate` keeps only instances HiGHS proves optimal.
3. **The answer checker** (:func:`check_answer`): the paper's ``<answer>`` tag, relative
   tolerance 0.2 %, and the special strings ``infeasible`` / ``unbounded``.
4. **The three paradigms** as interfaces (:func:`evaluate`): pure-text reasoning (PTR),
   computation-assisted reasoning (CompPTR) and solver-integrated reasoning (SIR). Any
   callable ``prompt -> answer`` can be evaluated; :func:`ptr_standin`,
   :func:`comp_standin` and :func:`sir_standin` are transparent stand-ins (heuristics with
   an arithmetic-slip model; a template-parsing formulator that calls HiGHS). The error
   decomposition separates extraction, feasibility, objective (sub-optimal plan),
   arithmetic and formulation errors.

Nothing here is a language model: the stand-ins show the *mechanisms* the paper names,
not the paper's accuracies.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

__all__ = [
    "LinearModel",
    "ModelBuilder",
    "SolveResult",
    "solve",
    "solve_lp_text",
    "to_lp_text",
    "InstanceError",
    "Instance",
    "ProblemClass",
    "CLASSES",
    "generate",
    "make_instance",
    "parse_answer",
    "check_answer",
    "make_prompt",
    "evaluate",
    "ptr_standin",
    "comp_standin",
    "sir_standin",
    "slipped_sum",
    "REL_TOL",
    "generate_grid",
    "instance_from_text",
    "recognise",
    "get_class",
    "classify",
    "model_key",
]

INF = math.inf
REL_TOL = 0.002  # the authors' relative tolerance (|pred - true| <= 0.002 |true|)


# ----------------------------------------------------------------------------------------
# 1. Exact models and the solver
# ----------------------------------------------------------------------------------------


@dataclass
class LinearModel:
    r"""A (mixed-integer) linear programme in row form.

    .. math::
        \min / \max\; c^\top x + \text{offset}\quad\text{s.t.}\quad
        r_\ell \le A x \le r_u,\;\; \ell \le x \le u,\;\; x_j\in\mathbb Z\ (j\in\mathcal I).

    Attributes
    ----------
    c : ndarray, shape (n,)
    A : scipy.sparse.csr_matrix, shape (m, n)
    row_lb, row_ub : ndarray, shape (m,)
    lb, ub : ndarray, shape (n,)
    integer : ndarray of bool, shape (n,)
    sense : {"min", "max"}
    offset : float
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
    meta: dict = field(default_factory=dict)  # free-form notes (e.g. which families a formulator left out)

    def __post_init__(self) -> None:
        if self.sense not in ("min", "max"):
            raise ValueError(f"sense={self.sense!r} is not valid; use 'min' or 'max'")
        n = self.c.shape[0]
        m = self.A.shape[0]
        if self.A.shape[1] != n or self.lb.shape != (n,) or self.ub.shape != (n,) or self.integer.shape != (n,):
            raise ValueError(f"inconsistent column dimensions: c has {n}, A is {self.A.shape}")
        if self.row_lb.shape != (m,) or self.row_ub.shape != (m,):
            raise ValueError(f"row bounds must have shape ({m},)")

    @property
    def n_vars(self) -> int:
        return int(self.c.shape[0])

    @property
    def n_rows(self) -> int:
        return int(self.A.shape[0])

    @property
    def is_mip(self) -> bool:
        return bool(self.integer.any())

    def objective(self, x: np.ndarray) -> float:
        """``c^T x + offset`` for a point ``x`` of shape (n,)."""
        return float(self.c @ x + self.offset)

    def is_feasible(self, x: np.ndarray, tol: float = 1e-6) -> bool:
        """Whether ``x`` satisfies every row, bound and integrality (absolute tolerance ``tol``)."""
        ax = self.A @ x
        ok = np.all(ax >= self.row_lb - tol) and np.all(ax <= self.row_ub + tol)
        ok &= np.all(x >= self.lb - tol) and np.all(x <= self.ub + tol)
        ok &= np.all(np.abs(x[self.integer] - np.round(x[self.integer])) <= tol)
        return bool(ok)


class ModelBuilder:
    """Accumulate variables and rows, then :meth:`build` a :class:`LinearModel`.

    Variables are created in blocks (:meth:`var` returns their column indices with the
    requested shape); constraints are added in vectorised blocks (:meth:`rows`: ``k`` rows
    with ``t`` terms each).
    """

    def __init__(self, sense: str = "min") -> None:
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
        """New variables of ``shape`` with (broadcast) bounds; returns their indices, same shape."""
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        k = int(np.prod(shape)) if shape else 1
        idx = np.arange(self.n, self.n + k).reshape(shape)
        self._lb.append(np.broadcast_to(np.asarray(lb, float), shape).ravel().copy())
        self._ub.append(np.broadcast_to(np.asarray(ub, float), shape).ravel().copy())
        self._int.append(np.full(k, bool(integer)))
        self._c.append(np.zeros(k))
        self.n += k
        return idx

    def set_objective(self, cols: np.ndarray, coefs: Any, offset: float = 0.0) -> None:
        """Add ``coefs * x[cols]`` to the objective (cols and coefs broadcast together)."""
        cols, coefs = np.broadcast_arrays(np.asarray(cols), np.asarray(coefs, float))
        self._obj.append((cols.ravel(), coefs.ravel()))
        self.offset += float(offset)

    def rows(self, cols: np.ndarray, coefs: Any, lo: Any = -INF, hi: Any = INF) -> None:
        """Add ``k`` rows ``lo_r <= sum_t coefs[r, t] x[cols[r, t]] <= hi_r``.

        ``cols`` has shape (k, t); ``coefs`` broadcasts to it; ``lo``/``hi`` to (k,).
        """
        cols = np.atleast_2d(np.asarray(cols))
        coefs = np.broadcast_to(np.asarray(coefs, float), cols.shape)
        k, t = cols.shape
        if k == 0:
            return
        self._ri.append(np.repeat(np.arange(self.m, self.m + k), t))
        self._ci.append(cols.ravel())
        self._v.append(coefs.ravel())
        self._rlb.append(np.broadcast_to(np.asarray(lo, float), (k,)).copy())
        self._rub.append(np.broadcast_to(np.asarray(hi, float), (k,)).copy())
        self.m += k

    def build(self) -> LinearModel:
        c = np.concatenate(self._c) if self._c else np.zeros(0)
        for cols, coefs in self._obj:
            np.add.at(c, cols, coefs)
        if self._ri:
            A = sp.csr_matrix(
                (np.concatenate(self._v), (np.concatenate(self._ri), np.concatenate(self._ci))), shape=(self.m, self.n)
            )
            A.sum_duplicates()
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
    """Outcome of :func:`solve`: ``status`` is one of ``optimal``, ``infeasible``,
    ``unbounded``, ``infeasible_or_unbounded``, ``time_limit``, ``error``."""

    status: str
    objective: float | None
    x: np.ndarray | None
    seconds: float

    @property
    def answer(self) -> float | str | None:
        """What a solver-integrated answer reports: the optimum, or the status string."""
        if self.status == "optimal":
            return self.objective
        if self.status in ("infeasible", "unbounded"):
            return self.status
        return None


_HIGHS_QUIET = False


def _new_highs():
    """A fresh ``highspy.Highs`` with logging off (its one-time banner goes to /dev/null)."""
    global _HIGHS_QUIET
    import highspy

    if not _HIGHS_QUIET:  # the licence banner is printed by C++ once per process
        sys.stdout.flush()
        saved = os.dup(1)
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, 1)
            h = highspy.Highs()
        finally:
            os.dup2(saved, 1)
            os.close(devnull)
            os.close(saved)
        _HIGHS_QUIET = True
    else:
        h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", 1)
    h.setOptionValue("random_seed", 0)
    return h


def _run(h, time_limit: float | None) -> tuple[str, float | None, np.ndarray | None]:
    import highspy

    if time_limit is not None:
        if not (time_limit > 0):
            raise ValueError(f"time_limit={time_limit!r} must be a positive number of seconds")
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


def solve(model: LinearModel, *, time_limit: float | None = None, mip_rel_gap: float = 1e-6) -> SolveResult:
    """Solve ``model`` with HiGHS (``highspy``), one thread, ``random_seed=0``.

    Parameters
    ----------
    model : LinearModel
    time_limit : float, optional
        Seconds; a model not proven optimal within it gets status ``time_limit``.
    mip_rel_gap : float
        Relative MIP gap at which HiGHS stops (1e-6: far below the checker's 0.2 %).

    Returns
    -------
    SolveResult
    """
    if not isinstance(model, LinearModel):
        raise TypeError(f"solve expects a LinearModel, got {type(model).__name__}")
    t0 = time.perf_counter()
    h = _new_highs()
    h.setOptionValue("mip_rel_gap", float(mip_rel_gap))
    sign = _pass_model(h, model)
    status, obj, x = _run(h, time_limit)
    if obj is not None:
        obj = sign * obj
    return SolveResult(status, obj, x, time.perf_counter() - t0)


def to_lp_text(model: LinearModel) -> str:
    """``model`` in the CPLEX LP file format (written by HiGHS): what a SIR answer may look like."""
    h = _new_highs()
    _pass_model(h, model)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "model.lp")
        h.writeModel(path)
        with open(path) as f:
            return f.read()


def _pass_model(h, model: LinearModel) -> float:
    """Hand ``model`` to a Highs object; returns the objective sign used (-1 for max)."""
    import highspy

    lp = highspy.HighsLp()
    lp.num_col_ = model.n_vars
    lp.num_row_ = model.n_rows
    sign = 1.0  # HiGHS keeps the sense itself, so a written LP file says "max" for a maximisation
    lp.sense_ = highspy.ObjSense.kMaximize if model.sense == "max" else highspy.ObjSense.kMinimize
    lp.col_cost_ = model.c
    lp.offset_ = model.offset
    lp.col_lower_ = np.where(np.isinf(model.lb), -highspy.kHighsInf, model.lb)
    lp.col_upper_ = np.where(np.isinf(model.ub), highspy.kHighsInf, model.ub)
    lp.row_lower_ = np.where(np.isinf(model.row_lb), -highspy.kHighsInf, model.row_lb)
    lp.row_upper_ = np.where(np.isinf(model.row_ub), highspy.kHighsInf, model.row_ub)
    A = model.A.tocsr()
    lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
    lp.a_matrix_.num_col_ = model.n_vars
    lp.a_matrix_.num_row_ = model.n_rows
    lp.a_matrix_.start_ = A.indptr.astype(np.int32)
    lp.a_matrix_.index_ = A.indices.astype(np.int32)
    lp.a_matrix_.value_ = A.data.astype(float)
    if model.is_mip:
        lp.integrality_ = [highspy.HighsVarType.kInteger if b else highspy.HighsVarType.kContinuous for b in model.integer]
    h.passModel(lp)
    return sign


def solve_lp_text(text: str, *, time_limit: float | None = 60.0) -> SolveResult:
    """Solve a model written in the CPLEX LP file format (what an LLM can return for SIR).

    A fenced block (```lp ... ```) is unwrapped first. Raises ``ValueError`` if HiGHS
    cannot read the text as an LP file.
    """
    if not isinstance(text, str) or not text.strip():
        raise ValueError("solve_lp_text needs a non-empty LP-format string")
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


# ----------------------------------------------------------------------------------------
# 2. Text: rendering templates and inverting them
# ----------------------------------------------------------------------------------------

_NUM = r"[-+]?\d+(?:\.\d+)?"
_LIST = _NUM + r"(?:\s*,\s*" + _NUM + r")*"
_FIELD = re.compile(r"\{(\w+)(\*?)\}")


def _fmt(x: Any) -> str:
    """Numbers as a reader writes them: integers bare, floats with at most 3 decimals."""
    if isinstance(x, (list, tuple, np.ndarray)):
        return ", ".join(_fmt(v) for v in np.asarray(x).ravel())
    xf = float(x)
    if abs(xf - round(xf)) < 1e-9:
        return str(int(round(xf)))
    return f"{xf:.3f}".rstrip("0").rstrip(".")


def _render(tpl: str, values: Mapping[str, Any]) -> str:
    return _FIELD.sub(lambda m: _fmt(values[m.group(1)]), tpl)


_REGEX_CACHE: dict[str, re.Pattern] = {}


def _tpl_regex(tpl: str) -> re.Pattern:
    """Invert a template: literal text (whitespace-insensitive) with named number groups."""
    if tpl in _REGEX_CACHE:
        return _REGEX_CACHE[tpl]
    out, pos, seen = [], 0, set()
    for m in _FIELD.finditer(tpl):
        lit = re.escape(tpl[pos : m.start()])
        out.append(re.sub(r"(\\ |\\\n)+", r"\\s+", lit))
        name, star = m.group(1), m.group(2)
        if name in seen:  # a repeated field must repeat the same number
            out.append(f"(?P={name})")
        else:
            out.append(f"(?P<{name}>{_LIST if star else _NUM})")
            seen.add(name)
        pos = m.end()
    out.append(re.sub(r"(\\ |\\\n)+", r"\\s+", re.escape(tpl[pos:])))
    rx = re.compile("".join(out))
    _REGEX_CACHE[tpl] = rx
    return rx


def _num(s: str) -> float | list[float]:
    if "," in s:
        return [float(v) for v in s.split(",")]
    return float(s)


@dataclass(frozen=True)
class Block:
    """One piece of an instance's text.

    ``kind="text"`` is rendered once from the scalar fields; ``kind="rows"`` once per row of
    ``rows_key``. ``family="data"`` blocks must be read for the text to make sense;
    any other family names a constraint family that a reader may miss (then it is left
    out of the model). ``phrasings[k]`` is the wording of style ``k`` (style ``k`` uses
    ``phrasings[min(k, len - 1)]``).
    """

    kind: str
    family: str
    phrasings: tuple[str, ...]
    rows_key: str | None = None


class InstanceError(ValueError):
    """An instance description that is malformed, or an instance that has no optimum."""


# ----------------------------------------------------------------------------------------
# Arithmetic-slip model (the PTR stand-in's mental arithmetic)
# ----------------------------------------------------------------------------------------


def slipped_sum(terms: np.ndarray, eps: float, rng: np.random.Generator) -> float:
    r"""Sum ``terms`` as a careless human would: each elementary operation may slip.

    A term :math:`t_k` is one multiplication (its computation) and one addition into the
    running total. Each of these :math:`2K` operations slips independently with
    probability ``eps``; a slip writes a wrong digit in one of the three leading digit
    places of that operation's result :math:`v`: place :math:`10^{e-j}`, :math:`e=\lfloor
    \log_{10}|v|\rfloor`, :math:`j` uniform on :math:`\{0,1,2\}`, the digit replaced by one of
    the nine others uniformly. A slip in the running total carries into the final sum, so
    the sum is exact with probability :math:`(1-\varepsilon)^{2K}`.

    ``eps=0`` returns the exact sum (this is the computation-assisted stand-in).
    """
    terms = np.asarray(terms, float).ravel()  # (K,)
    if not (0.0 <= eps <= 1.0):
        raise ValueError(f"eps={eps!r} must be a probability in [0, 1]")
    if eps == 0.0 or terms.size == 0:
        return float(terms.sum())
    partial = np.cumsum(terms)  # (K,) running totals
    vals = np.concatenate([terms, partial])  # (2K,) every intermediate result
    slip = rng.random(vals.size) < eps
    k = int(slip.sum())
    if k == 0:
        return float(partial[-1])
    v = vals[slip]
    av = np.abs(v)
    e = np.floor(np.log10(np.where(av > 0, av, 1.0)))
    place = 10.0 ** (e - rng.integers(0, 3, k))  # (k,) digit place that slips
    digit = np.floor(av / place + 1e-9) % 10  # the digit written there
    wrong = (digit + rng.integers(1, 10, k)) % 10  # one of the nine other digits
    delta = np.sign(np.where(v != 0, v, 1.0)) * (wrong - digit) * place
    return float(partial[-1] + delta.sum())


# ----------------------------------------------------------------------------------------
# 3. Problem classes
# ----------------------------------------------------------------------------------------

Plan = Any  # a class-specific, JSON-serialisable decision (item list, tour, weights, ...)


@dataclass
class PlanCheck:
    """A plan evaluated against the exact instance: ``terms`` sum to ``objective``."""

    feasible: bool
    objective: float
    terms: np.ndarray
    violated: tuple[str, ...] = ()


def _uniform(rng: np.random.Generator, lo: float, hi: float, size: Any = None, digits: int | None = 3) -> Any:
    v = rng.uniform(lo, hi, size)
    return np.round(v, digits) if digits is not None else v


def _ints(rng: np.random.Generator, lo: int, hi: int, size: Any = None) -> Any:
    """Integers in the closed range [lo, hi] (Python's ``random.randint`` convention)."""
    return rng.integers(lo, hi + 1, size)


def _rows_by(rows: list[dict], keys: Sequence[str], shape: tuple[int, ...], what: str) -> dict[str, np.ndarray]:
    """Scatter parsed row dicts (1-based indices in ``keys``) into arrays of ``shape``."""
    if len(rows) != int(np.prod(shape)):
        raise InstanceError(f"expected {int(np.prod(shape))} {what} lines, found {len(rows)}")
    idx = tuple(np.array([int(r[k]) - 1 for r in rows]) for k in keys)
    for a, n in zip(idx, shape):
        if a.min() < 0 or a.max() >= n:
            raise InstanceError(f"{what} index out of range 1..{n}")
    flat = np.ravel_multi_index(idx, shape)
    if np.unique(flat).size != flat.size:
        raise InstanceError(f"duplicate {what} lines")
    out = {}
    for name in rows[0]:
        if name in keys:
            continue
        vals = [r[name] for r in rows]
        if isinstance(vals[0], list):
            arr = np.empty(shape + (len(vals[0]),))
            for f, v in zip(flat, vals):
                if len(v) != len(vals[0]):
                    raise InstanceError(f"ragged list in {what} lines")
                arr.reshape(-1, len(vals[0]))[f] = v
        else:
            arr = np.empty(shape)
            arr.ravel()[flat] = vals
        out[name] = arr
    return out


class ProblemClass:
    """One problem class of the engine: sampler, exact model, text, parser, plans.

    Subclasses set the class attributes and implement :meth:`sample`, :meth:`build`,
    :meth:`scalars`, :meth:`rows`, :meth:`from_fields`, :meth:`heuristic` and
    :meth:`check_plan`.
    """

    name: str = ""
    kind: str = "LP"  # "LP" or "MIP"
    sense: str = "min"
    size_name: str = "n"
    size_range: tuple[int, int] = (1, 1)  # the authors' benchmark range (inclusive)
    time_limit: float | None = None
    integral_objective: bool = False
    blocks: tuple[Block, ...] = ()

    # --- to implement ------------------------------------------------------------------
    def sample(self, rng: np.random.Generator, size: int) -> dict:  # pragma: no cover
        raise NotImplementedError

    def build(self, p: Mapping, drop: frozenset = frozenset()) -> LinearModel:  # pragma: no cover
        raise NotImplementedError

    def scalars(self, p: Mapping) -> dict:  # pragma: no cover
        raise NotImplementedError

    def rows(self, p: Mapping) -> dict[str, list[dict]]:  # pragma: no cover
        raise NotImplementedError

    def from_fields(self, sc: dict, rows: dict[str, list[dict]]) -> dict:  # pragma: no cover
        raise NotImplementedError

    def heuristic(self, p: Mapping) -> Plan:  # pragma: no cover
        raise NotImplementedError

    def check_plan(self, p: Mapping, plan: Plan) -> PlanCheck:  # pragma: no cover
        raise NotImplementedError

    # --- generic -----------------------------------------------------------------------
    @property
    def families(self) -> tuple[str, ...]:
        """Constraint families a reader can miss (each is left out of the model if missed)."""
        return tuple(dict.fromkeys(b.family for b in self.blocks if b.family != "data"))

    @property
    def unseen_families(self) -> tuple[str, ...]:
        """Families whose sentence has an unseen (style-2) phrasing."""
        return tuple(dict.fromkeys(b.family for b in self.blocks if b.family != "data" and len(b.phrasings) > 2))

    def check_size(self, size: int) -> int:
        lo, hi = self.size_range
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or not (lo <= size <= hi):
            raise ValueError(f"size={size!r} is not valid for {self.name}; use an integer {self.size_name} in [{lo}, {hi}]")
        return int(size)

    def size_of(self, p: Mapping) -> int:
        return int(p["n"])

    def render(self, p: Mapping, style: int = 0, overrides: Mapping[str, int] | None = None) -> str:
        """The instance as a word problem; ``style`` 0 canonical, 1 seen paraphrase, 2 unseen.

        ``overrides`` maps a constraint family to the style of its sentence alone (e.g.
        ``{"capacity": 2}`` rewords only the capacity sentence).
        """
        overrides = dict(overrides or {})
        for k, v in [("style", style), *overrides.items()]:
            if v not in (0, 1, 2):
                raise ValueError(f"{k}={v!r} is not a valid style; use 0 (canonical), 1 or 2 (paraphrases)")
        unknown = set(overrides) - set(self.families)
        if unknown:
            raise ValueError(f"{self.name} has no constraint family {sorted(unknown)}; families: {self.families}")
        sc, rows = self.scalars(p), self.rows(p)
        parts = []
        for b in self.blocks:
            k = overrides.get(b.family, style)
            tpl = b.phrasings[min(k, len(b.phrasings) - 1)]
            if b.kind == "text":
                parts.append(_render(tpl, sc))
            else:
                parts.append("\n".join(_render(tpl, r) for r in rows[b.rows_key]))
        return "\n".join(parts)

    def parse(self, text: str, known_styles: Sequence[int] = (0, 1)) -> tuple[dict, tuple[str, ...]]:
        """Read an instance back from ``text`` using only the phrasings of ``known_styles``.

        Returns the parameters and the constraint families whose sentence was not found
        (their parameters are ``None``). A missing ``data`` block raises
        :class:`InstanceError` naming it.
        """
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        sc: dict[str, Any] = {}
        rows: dict[str, list[dict]] = {}
        missing: list[str] = []
        for b in self.blocks:
            tpls = list(dict.fromkeys(b.phrasings[min(k, len(b.phrasings) - 1)] for k in known_styles))
            found = False
            for tpl in tpls:
                rx = _tpl_regex(tpl)
                if b.kind == "text":
                    m = rx.search(text)
                    if m:
                        sc.update({k: _num(v) for k, v in m.groupdict().items()})
                        found = True
                        break
                else:
                    ms = [{k: _num(v) for k, v in m.groupdict().items()} for m in rx.finditer(text)]
                    if ms:
                        rows[b.rows_key] = ms
                        found = True
                        break
            if not found:
                if b.family == "data":
                    what = b.rows_key or _FIELD.sub("…", b.phrasings[0])[:60]
                    raise InstanceError(f"{self.name}: could not read the {what!r} part of the description")
                missing.append(b.family)
        missing_t = tuple(dict.fromkeys(missing))
        p = self.from_fields(sc, rows, missing_t)
        return p, missing_t

    def formulate(self, text: str, known_styles: Sequence[int] = (0, 1)) -> LinearModel:
        """Text -> model, leaving out every constraint family whose sentence was not understood."""
        p, missing = self.parse(text, known_styles)
        return self.build(p, drop=frozenset(missing))

    def finish_objective(self, value: float) -> float:
        """Round a solver objective the way the stored answer is rounded."""
        return float(round(value)) if self.integral_objective else float(round(value, 6))


def _need(sc: Mapping, key: str, cls: str) -> Any:
    if key not in sc:
        raise InstanceError(f"{cls}: the description does not state {key!r}")
    return sc[key]


def _pos_int(v: Any, what: str, cls: str) -> int:
    if float(v) != int(v) or int(v) < 1:
        raise InstanceError(f"{cls}: {what}={v!r} must be a positive integer")
    return int(v)


# ---------------------------------------------------------------------- Knapsack (MIP)
class Knapsack(ProblemClass):
    r"""0-1 knapsack: :math:`\max \sum_i v_i x_i` s.t. :math:`\sum_i w_i x_i \le W`, :math:`x\in\{0,1\}^n`.

    Sampling (authors): :math:`w_i\in\{1..50\}`, :math:`v_i\in\{10..300\}`,
    :math:`W=\lfloor 0.7\sum_i w_i\rfloor`; size knob ``n`` items, 5-30.
    """

    name, kind, sense, size_name, size_range = "Knapsack", "MIP", "max", "items", (5, 30)
    integral_objective = True
    blocks = (
        Block("text", "data", ("A hiker is packing for a trip and can choose among {n} items; each item is either taken whole or left behind.",
                               "There are {n} candidate items for a delivery drone; every item is loaded entirely or not at all.")),
        Block("rows", "data", ("* Item {i}: weight {w} kg, value {v}", "* Item {i} weighs {w} kg and is worth {v}"), "items"),
        Block("text", "capacity", ("The knapsack can carry at most {cap} kg in total.",
                                   "The total weight loaded must not exceed {cap} kg.",
                                   "Anything beyond {cap} kg of combined load is more than the drone can lift.")),
        Block("text", "data", ("Choose the items that maximise the total value.",
                               "Which items should be selected to make the total worth as large as possible?")),
    )

    def sample(self, rng, size):
        n = self.check_size(size)
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
        a = _rows_by(rows["items"], ["i"], (n,), "item")
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


# ---------------------------------------------------------------------------- TSP (MIP)
class TSP(ProblemClass):
    r"""Travelling salesman, Miller-Tucker-Zemlin formulation.

    :math:`\min\sum_{i\ne j} d_{ij}x_{ij}` s.t. :math:`\sum_j x_{ij}=\sum_j x_{ji}=1`,
    :math:`u_i-u_j+n x_{ij}\le n-1` (:math:`i,j\ge 2`), :math:`1\le u_i\le n-1`.
    Integer coordinates in :math:`[0,200]^2`, Euclidean :math:`d`; size knob cities, 4-19.
    """

    name, kind, sense, size_name, size_range = "TSP", "MIP", "min", "cities", (4, 19)
    time_limit = 60.0
    blocks = (
        Block("text", "data", ("A salesperson must visit {n} cities located on a map (coordinates in km).",
                               "A delivery van serves {n} customer sites; their positions on a km grid are listed below.")),
        Block("rows", "data", ("* City {i}: ({x}, {y})", "* Site {i} is at x = {x}, y = {y}"), "cities"),
        Block("text", "degree", ("The salesperson starts at City 1, must visit every city exactly once, and returns to City 1 at the end.",
                                 "Each site is entered exactly once and left exactly once, beginning and ending at Site 1.")),
        Block("text", "subtour", ("The route must form one single tour; separate sub-tours are not allowed.",
                                  "All stops must be joined into one continuous route with no disconnected loops.",
                                  "The van may not return to the depot before every site on the list has been served in one trip.")),
        Block("text", "data", ("The distance between two cities is the straight-line (Euclidean) distance. Find the minimum total distance of the tour.",
                               "Distances are straight-line distances. What is the shortest possible total route length?")),
    )

    def sample(self, rng, size):
        n = self.check_size(size)
        return {"n": n, "xy": _ints(rng, 0, 200, (n, 2))}

    @staticmethod
    def dist(xy: np.ndarray) -> np.ndarray:
        """Euclidean distance matrix, shape (n, n)."""
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
        a = _rows_by(rows["cities"], ["i"], (n,), "city")
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


# ----------------------------------------------------------------------- BinPacking (MIP)
def first_fit_decreasing(w: np.ndarray, cap: float) -> np.ndarray:
    """Bin (0-based) of each item under first-fit decreasing."""
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
    """

    name, kind, sense, size_name, size_range = "BinPacking", "MIP", "min", "items", (10, 40)
    time_limit = 30.0
    integral_objective = True
    bands = np.array([[25, 35], [40, 55], [65, 75]])
    blocks = (
        Block("text", "data", ("A warehouse must pack {n} items into identical bins.",
                               "{n} parcels have to be loaded into identical containers.")),
        Block("rows", "data", ("* Item {i}: size {w}", "* Parcel {i} has size {w}"), "items"),
        Block("text", "capacity", ("Each bin has a capacity of {cap}; the total size of the items in a bin may not exceed it.",
                                   "No container may hold parcels whose sizes add up to more than {cap}.",
                                   "Stuffing a container past {cap} size units would burst it.")),
        Block("text", "assign", ("Every item must be placed in exactly one bin.", "Each parcel goes into exactly one container.")),
        Block("text", "data", ("Find the minimum number of bins needed.", "What is the smallest number of containers that suffices?")),
    )

    def sample(self, rng, size):
        n = self.check_size(size)
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
        a = _rows_by(rows["items"], ["i"], (n,), "item")
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


# -------------------------------------------------------------------------- JobShop (MIP)
class JobShop(ProblemClass):
    r"""Job shop, disjunctive big-M model, :math:`\min C_{\max}`.

    :math:`s_{j,k+1}\ge s_{jk}+p_{jk}`; for two operations on one machine
    :math:`s_a-s_b+Mz\ge p_b`, :math:`s_b-s_a-Mz\ge p_a-M` (:math:`M=\sum p`);
    :math:`C_{\max}\ge s_{jk}+p_{jk}`. Each job visits every machine once in a random
    order, :math:`p\in\{1..10\}`; size knob jobs = machines, 3-10 (30 s limit).
    """

    name, kind, sense, size_name, size_range = "JobShop", "MIP", "min", "jobs=machines", (3, 10)
    time_limit = 30.0
    integral_objective = True
    blocks = (
        Block("text", "data", ("A workshop has {n} jobs and {m} machines. Each job consists of {m} operations, one on each machine, in a fixed order.",
                               "{n} orders must be processed on {m} machines; every order passes each machine once, following its own route.")),
        Block("rows", "data", ("* Job {j}: machine order {route*}; processing times {times*}",
                               "* Order {j} visits machines {route*} taking {times*} hours respectively"), "jobs"),
        Block("text", "precedence", ("An operation of a job can start only after the previous operation of the same job has finished.",
                                     "Each order must finish one step before it starts its next step.")),
        Block("text", "machine", ("Each machine can process at most one operation at a time, and an operation cannot be interrupted.",
                                  "No machine may work on two operations simultaneously; operations run without pre-emption.",
                                  "Whenever a machine is busy, any other order that needs it has to wait its turn.")),
        Block("text", "data", ("Find the minimum makespan, i.e. the time at which all jobs are complete.",
                               "What is the earliest time by which every order can be finished?")),
    )

    def sample(self, rng, size):
        n = self.check_size(size)
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
        a = _rows_by(rows["jobs"], ["j"], (n,), "job")
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


# ----------------------------------------------------------------------- Inventory (LP)
class Inventory(ProblemClass):
    r"""Lot sizing with lead time, capacity and lost sales (LP).

    :math:`\min p\sum_t x_t + h\sum_t I_t + c\sum_t S_t` s.t.
    :math:`I_t - S_t = I_{t-1} + x_{t-\ell} - D_t`, :math:`I_{t-1}+x_{t-\ell}\le C`,
    :math:`Q_{\min}\le x_t\le Q_{\max}`, :math:`0\le I_t\le C`, :math:`I_0` given.
    Size knob horizon T, 5-20; ranges as in the authors' generator.
    """

    name, kind, sense, size_name, size_range = "Inventory", "LP", "min", "periods", (5, 20)
    blocks = (
        Block("text", "data", ("A factory plans orders of a raw material over {T} periods. At the start it holds {I0} units.",
                               "Over a horizon of {T} periods a plant must decide how much material to buy; opening stock is {I0} units.")),
        Block("text", "order_bounds", ("In every period an order is placed whose size must be between {Qmin} and {Qmax} units.",
                                       "Each period's purchase must be no less than {Qmin} units and no more than {Qmax} units.",
                                       "The supplier will not take an order below {Qmin} units and cannot deliver more than {Qmax} units per period.")),
        Block("text", "lead", ("An order placed in period t arrives {lead} period(s) later.",
                               "Deliveries take {lead} period(s) to arrive.",
                               "Material bought now shows up only after a delay of {lead} period(s).")),
        Block("rows", "data", ("* Period {t}: demand {d} units", "* Demand in period {t} is {d} units"), "demand"),
        Block("text", "data", ("Unmet demand is lost (no backorders). Quantities may be fractional.",
                               "Shortages are allowed but become lost sales; fractional amounts are fine.")),
        Block("text", "capacity", ("The warehouse holds at most {C} units: stock carried plus arriving deliveries may never exceed {C}.",
                                   "Storage is limited to {C} units on hand at any time, including goods that have just arrived.",
                                   "Only {C} units fit on the shelves, counting what has just been delivered.")),
        Block("text", "data", ("Costs: {pc} per unit ordered, {hc} per unit held at the end of a period, {sc} per unit of unmet demand. Minimise the total cost.",
                               "Each unit bought costs {pc}, each unit left in stock at a period's end costs {hc}, and each unit of demand not served costs {sc}. What is the minimum total cost?")),
    )

    def size_of(self, p):
        return int(p["T"])

    def sample(self, rng, size):
        T = self.check_size(size)
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
        b.rows(np.stack([I[ta], S[ta - 1], I[ta - 1], x[ta - lead - 1]], 1), np.array([1.0, -1.0, -1.0, -1.0]), -D[ta - 1], -D[ta - 1])
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
        a = _rows_by(rows["demand"], ["t"], (T,), "demand")
        p = {"T": T, "D": a["d"]}
        for k in ("I0", "pc", "hc", "sc"):
            p[k] = _need(sc, k, self.name)
        p["Qmin"], p["Qmax"] = (None, None) if "order_bounds" in missing else (_need(sc, "Qmin", self.name), _need(sc, "Qmax", self.name))
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


# ----------------------------------------------------------------------- Portfolio (LP)
class Portfolio(ProblemClass):
    r"""Linear portfolio selection (LP).

    :math:`\max r^\top x` s.t. :math:`\mathbf 1^\top x=1`, :math:`v^\top x\le V_{\max}`,
    :math:`r^\top x\ge R_{\min}`, :math:`\ell\le x\le u`, :math:`\sum_{i\in L}x_i\ge L_{\min}`.
    :math:`r\sim U(.02,.2)`, :math:`v\sim U(.01,.3)`, :math:`\ell\sim U(0,.1)`,
    :math:`u\sim U(.3,.9)`; :math:`R_{\min}, V_{\max}, L_{\min}` are scaled from a feasible
    reference mix (factors U(.6,.95), U(1,1.5), U(.2,.6) as in the authors' code). Every
    number is rounded to the 3 decimals the text shows *before* solving. Size knob assets, 5-20.
    """

    name, kind, sense, size_name, size_range = "Portfolio", "LP", "max", "assets", (5, 20)
    blocks = (
        Block("text", "data", ("An investor splits a budget among {n} assets; the weights must be non-negative and sum to 1.",
                               "A fund allocates all of its capital over {n} asset classes (fractions adding up to one).")),
        Block("rows", "data", ("* Asset {i}: expected return {r}, risk index {v}, weight between {l} and {u}",
                               "* Asset {i} has return {r} and risk {v}; its share must lie in [{l}, {u}]"), "assets"),
        Block("text", "liquidity", ("The liquid assets {L*} must together receive at least {Lmin} of the budget.",
                                    "At least {Lmin} of the capital goes to the liquid group made of assets {L*}.",
                                    "Assets {L*} can be sold quickly, and the fund wants no less than {Lmin} of its money parked there.")),
        Block("text", "risk", ("The portfolio risk (the weighted sum of risk indices) must not exceed {Vmax}.",
                               "The weighted average risk index may be at most {Vmax}.",
                               "Clients get nervous once the blended risk index rises above {Vmax}.")),
        Block("text", "min_return", ("The expected return must be at least {Rmin}.",
                                     "The portfolio must earn an expected return of no less than {Rmin}.",
                                     "Anything returning under {Rmin} in expectation would be rejected by the board.")),
        Block("text", "data", ("Maximise the expected return of the portfolio.", "What is the largest achievable expected return?")),
    )

    def sample(self, rng, size):
        n = self.check_size(size)
        r = _uniform(rng, 0.02, 0.20, n)
        v = _uniform(rng, 0.01, 0.30, n)
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
        a = _rows_by(rows["assets"], ["i"], (n,), "asset")
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


# --------------------------------------------------------- NetworkFlow / Transportation (LP)
def least_cost_method(cost: np.ndarray, supply: np.ndarray, demand: np.ndarray, cap: np.ndarray | None = None) -> np.ndarray:
    """Greedy shipping plan: cheapest arc first, ship as much as supply, demand (and arc capacity) allow."""
    n, m = cost.shape
    f = np.zeros((n, m))
    s, d = supply.astype(float).copy(), demand.astype(float).copy()
    for a in np.lexsort((np.arange(n * m), cost.ravel())):  # arcs in cost order; sequential
        i, j = divmod(int(a), m)
        q = min(s[i], d[j], cap[i, j] if cap is not None else INF)
        if q > 0:
            f[i, j] = q
            s[i] -= q
            d[j] -= q
    return f


def _check_flow(p: Mapping, f: np.ndarray, cap: np.ndarray | None) -> PlanCheck:
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


class NetworkFlow(ProblemClass):
    r"""Capacitated warehouse-to-store flow (LP).

    :math:`\min\sum c_{ws}f_{ws}` s.t. :math:`\sum_s f_{ws}\le S_w`, :math:`\sum_w f_{ws}=D_s`,
    :math:`0\le f_{ws}\le k_{ws}`. Supplies and demands in {10..100} balanced by trimming,
    cost {1..10}, capacity {5..100}; infeasible draws are discarded. Size knob n warehouses
    = n stores (benchmark 5-9).
    """

    name, kind, sense, size_name, size_range = "NetworkFlow", "LP", "min", "warehouses=stores", (3, 14)
    blocks = (
        Block("text", "data", ("A company ships goods from {n} warehouses to {m} stores.", "Goods flow from {n} depots to {m} shops.")),
        Block("rows", "supply", ("* Warehouse {i} can supply at most {s} units", "* Depot {i} has {s} units available",
                                 "* Depot {i} stocks {s} units in total, which is all it can send"), "supply"),
        Block("rows", "data", ("* Store {j} needs exactly {d} units", "* Shop {j} requires {d} units"), "demand"),
        Block("rows", "data", ("* Route W{i}-S{j}: cost {c} per unit", "* Shipping from depot {i} to shop {j} costs {c} per unit"), "cost"),
        Block("rows", "arc_capacity", ("* Route W{i}-S{j}: capacity {k} units", "* At most {k} units can travel from depot {i} to shop {j}",
                                       "* The lorry between depot {i} and shop {j} takes loads of up to {k} units"), "cap"),
        Block("text", "data", ("Meet every store's demand at minimum total shipping cost.", "What is the cheapest way to satisfy all shops?")),
    )

    def sample(self, rng, size):
        n = self.check_size(size)
        s, d = _ints(rng, 10, 100, n), _ints(rng, 10, 100, n)
        diff = int(s.sum() - d.sum())
        v = s if diff > 0 else d  # trim the larger side, first nodes first (as the authors do)
        cut = np.clip(abs(diff) - (np.cumsum(v) - v), 0, v)
        v -= cut
        return {"n": n, "s": s, "d": d, "cost": _ints(rng, 1, 10, (n, n)), "cap": _ints(rng, 5, 100, (n, n))}

    def build(self, p, drop=frozenset()):
        n, m = np.shape(p["cost"])
        b = ModelBuilder("min")
        f = b.var((n, m), 0.0, INF if "arc_capacity" in drop else np.asarray(p["cap"], float))
        b.set_objective(f, p["cost"])
        if "supply" not in drop:
            b.rows(f, 1.0, hi=np.asarray(p["s"], float))
        b.rows(f.T, 1.0, np.asarray(p["d"], float), np.asarray(p["d"], float))
        return b.build()

    def scalars(self, p):
        return {"n": p["n"], "m": p["n"]}

    def rows(self, p):
        n = p["n"]
        I, J = np.divmod(np.arange(n * n), n)
        return {
            "supply": [{"i": i + 1, "s": p["s"][i]} for i in range(n)],
            "demand": [{"j": j + 1, "d": p["d"][j]} for j in range(n)],
            "cost": [{"i": i + 1, "j": j + 1, "c": p["cost"][i, j]} for i, j in zip(I, J)],
            "cap": [{"i": i + 1, "j": j + 1, "k": p["cap"][i, j]} for i, j in zip(I, J)],
        }

    def from_fields(self, sc, rows, missing=()):
        n = _pos_int(_need(sc, "n", self.name), "n", self.name)
        m = _pos_int(_need(sc, "m", self.name), "m", self.name)
        if m != n:
            raise InstanceError(f"{self.name}: this engine's instances have as many stores as warehouses (got {n} and {m})")
        p = {"n": n, "d": _rows_by(rows["demand"], ["j"], (n,), "store")["d"], "cost": _rows_by(rows["cost"], ["i", "j"], (n, n), "route cost")["c"]}
        p["s"] = None if "supply" in missing else _rows_by(rows["supply"], ["i"], (n,), "warehouse")["s"]
        p["cap"] = None if "arc_capacity" in missing else _rows_by(rows["cap"], ["i", "j"], (n, n), "route capacity")["k"]
        return p

    def heuristic(self, p):
        """Least-cost method with arc capacities: may strand demand (a global-feasibility failure)."""
        return least_cost_method(np.asarray(p["cost"], float), p["s"], p["d"], np.asarray(p["cap"], float)).tolist()

    def check_plan(self, p, plan):
        return _check_flow(p, np.asarray(plan, float), np.asarray(p["cap"], float))


class Transportation(ProblemClass):
    r"""Transportation problem (LP): :math:`\min\sum c_{ij}x_{ij}`, :math:`\sum_j x_{ij}\le s_i`, :math:`\sum_i x_{ij}=d_j`.

    Supply {50..200}; total demand :math:`U(.6,.95)\sum s` split at random; cost {1..20}.
    Size knob sources, 3-10; sinks drawn from 3-10.
    """

    name, kind, sense, size_name, size_range = "Transportation", "LP", "min", "sources", (3, 10)
    blocks = (
        Block("text", "data", ("A company ships a product from {n} plants to {m} customers.", "There are {n} factories and {m} distribution centres.")),
        Block("rows", "supply", ("* Plant {i} can ship at most {s} units", "* Factory {i} has a capacity of {s} units",
                                 "* Factory {i} only manages to turn out {s} units"), "supply"),
        Block("rows", "data", ("* Customer {j} demands {d} units", "* Centre {j} must receive {d} units"), "demand"),
        Block("rows", "data", ("* Unit cost from Plant {i} to Customer {j}: {c}", "* Shipping one unit from factory {i} to centre {j} costs {c}"), "cost"),
        Block("text", "data", ("Every customer's demand must be met exactly. Find the minimum total transportation cost.",
                               "All centres must get exactly what they need. What is the least total shipping cost?")),
    )

    def sample(self, rng, size):
        n = self.check_size(size)
        m = int(_ints(rng, 3, 10))
        s = _ints(rng, 50, 200, n)
        total = int(rng.uniform(0.6, 0.95) * s.sum())
        d = rng.multinomial(total, rng.dirichlet(np.ones(m)))
        return {"n": n, "m": m, "s": s, "d": d, "cost": _ints(rng, 1, 20, (n, m))}

    def build(self, p, drop=frozenset()):
        return NetworkFlow.build(self, {**p, "cap": None}, drop | {"arc_capacity"})

    def scalars(self, p):
        return {"n": p["n"], "m": p["m"]}

    def rows(self, p):
        n, m = p["n"], p["m"]
        I, J = np.divmod(np.arange(n * m), m)
        return {
            "supply": [{"i": i + 1, "s": p["s"][i]} for i in range(n)],
            "demand": [{"j": j + 1, "d": p["d"][j]} for j in range(m)],
            "cost": [{"i": i + 1, "j": j + 1, "c": p["cost"][i, j]} for i, j in zip(I, J)],
        }

    def from_fields(self, sc, rows, missing=()):
        n = _pos_int(_need(sc, "n", self.name), "n", self.name)
        m = _pos_int(_need(sc, "m", self.name), "m", self.name)
        p = {"n": n, "m": m, "d": _rows_by(rows["demand"], ["j"], (m,), "customer")["d"], "cost": _rows_by(rows["cost"], ["i", "j"], (n, m), "unit cost")["c"]}
        p["s"] = None if "supply" in missing else _rows_by(rows["supply"], ["i"], (n,), "plant")["s"]
        return p

    def heuristic(self, p):
        """Least-cost method (always feasible here; optimal only by luck)."""
        return least_cost_method(np.asarray(p["cost"], float), p["s"], p["d"]).tolist()

    def check_plan(self, p, plan):
        return _check_flow(p, np.asarray(plan, float), None)


# ---------------------------------------------------------------------- Production (LP)
class Production(ProblemClass):
    r"""Product mix (LP): :math:`\max p^\top x` s.t. :math:`\sum_i t_{ij}x_i\le T_j`, :math:`x\ge 0`.

    Profit U(5,20), time U(.2,2), :math:`T_j` = U(1,1.5) times the load of a random
    reference plan of total U(50,200) units (3 decimals). Size knob products, 3-10;
    operations drawn from 2-5.
    """

    name, kind, sense, size_name, size_range = "Production", "LP", "max", "products", (3, 10)
    blocks = (
        Block("text", "data", ("A factory makes {n} products; each passes through {J} operations.", "{n} product lines share {J} processing stages.")),
        Block("rows", "data", ("* Product {i}: profit {p} per unit", "* Each unit of product {i} earns {p}"), "profit"),
        Block("rows", "data", ("* Product {i} needs {t} hours on Operation {j}", "* Stage {j} spends {t} hours per unit of product {i}"), "time"),
        Block("rows", "capacity", ("* Operation {j} has {T} hours available", "* Stage {j} can run for at most {T} hours",
                                   "* Stage {j} is staffed for {T} hours, after which it shuts down"), "cap"),
        Block("text", "data", ("Production quantities may be fractional. Maximise the total profit.",
                               "Fractional quantities are allowed. What is the maximum total profit?")),
    )

    def sample(self, rng, size):
        n = self.check_size(size)
        J = int(_ints(rng, 2, 5))
        pr = _uniform(rng, 5.0, 20.0, n)
        t = _uniform(rng, 0.2, 2.0, (n, J))
        z = rng.random(n) + 1e-9
        xref = np.round(_uniform(rng, 50.0, 200.0) * z / z.sum(), 3)
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
        p = {"n": n, "J": J, "p": _rows_by(rows["profit"], ["i"], (n,), "profit")["p"], "t": _rows_by(rows["time"], ["i", "j"], (n, J), "time")["t"]}
        p["T"] = None if "capacity" in missing else _rows_by(rows["cap"], ["j"], (J,), "capacity")["T"]
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


# ----------------------------------------------------------------------- Pollution (LP)
class Pollution(ProblemClass):
    r"""Emission control (LP): :math:`\min\sum c_{ij}x_{ij}` s.t. :math:`\sum_j x_{ij}\le q_i`,
    :math:`\sum_{ij} w_i s_j x_{ij}\ge P\sum_i w_i q_i`, :math:`x\ge 0`.

    :math:`w\sim U(.5,3)`, :math:`q\sim U(50,300)`, :math:`s\sim U(.1,.9)`,
    :math:`c\sim U(10,200)`, :math:`P=\min(U(.2,.7), \max s-10^{-4})` (3 decimals).
    Here :math:`s_j` is the *removal* efficiency in both text and model. Size knob
    sources, 3-10; methods drawn from 2-5.
    """

    name, kind, sense, size_name, size_range = "Pollution", "LP", "min", "sources", (3, 10)
    blocks = (
        Block("text", "data", ("A region must cut particulate emissions from {n} sources; {K} control methods are available.",
                               "{n} plants emit dust, and {K} abatement technologies can be fitted.")),
        Block("rows", "data", ("* Source {i}: emission factor {w} per unit of production, production {q} units",
                               "* Plant {i} emits {w} per unit produced and produces {q} units"), "source"),
        Block("rows", "data", ("* Method {j} removes a fraction {s} of the emissions of the production it treats",
                               "* Technology {j} has removal efficiency {s}"), "method"),
        Block("rows", "data", ("* Treating one unit of Source {i} with Method {j} costs {c}",
                               "* Fitting technology {j} at plant {i} costs {c} per unit treated"), "cost"),
        Block("text", "production", ("At each source the production treated, summed over all methods, cannot exceed its production.",
                                     "A plant cannot treat more units than it produces, summed over technologies.",
                                     "Each plant's output can be split among technologies, but there is only so much output to go around.")),
        Block("text", "data", ("Total emissions must fall by at least a fraction {P} of the uncontrolled emissions. Find the minimum total control cost.",
                               "Emissions must drop by a share of at least {P} relative to no control. What is the cheapest plan?")),
    )

    def sample(self, rng, size):
        n = self.check_size(size)
        K = int(_ints(rng, 2, 5))
        w, q = _uniform(rng, 0.5, 3.0, n), _uniform(rng, 50.0, 300.0, n)
        s, c = _uniform(rng, 0.10, 0.90, K), _uniform(rng, 10.0, 200.0, (n, K))
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
        a = _rows_by(rows["source"], ["i"], (n,), "source")
        s = _rows_by(rows["method"], ["j"], (K,), "method")["s"]
        if np.any((s < 0) | (s > 1)):
            raise InstanceError(f"{self.name}: removal efficiencies must lie in [0, 1]")
        return {"n": n, "K": K, "w": a["w"], "q": a["q"], "s": s, "c": _rows_by(rows["cost"], ["i", "j"], (n, K), "cost")["c"], "P": _need(sc, "P", self.name)}

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


CLASSES: dict[str, ProblemClass] = {
    c.name: c
    for c in (Knapsack(), TSP(), BinPacking(), JobShop(), Inventory(), Portfolio(), NetworkFlow(), Transportation(), Production(), Pollution())
}

_CLASS_IDS = {name: k for k, name in enumerate(CLASSES)}


def get_class(problem_class: str | ProblemClass) -> ProblemClass:
    """The :class:`ProblemClass` named ``problem_class`` (one of :data:`CLASSES`)."""
    if isinstance(problem_class, ProblemClass):
        return problem_class
    if problem_class not in CLASSES:
        raise ValueError(f"problem_class={problem_class!r} is not valid; use one of {', '.join(CLASSES)}")
    return CLASSES[problem_class]


# ----------------------------------------------------------------------------------------
# 4. Instances
# ----------------------------------------------------------------------------------------


@dataclass
class Instance:
    """A verified instance: parameters and the optimum HiGHS proved for them."""

    problem_class: str
    size: int
    params: dict
    answer: float
    index: int = 0
    solve_seconds: float = 0.0
    seed: int = 0

    @property
    def cls(self) -> ProblemClass:
        return CLASSES[self.problem_class]

    def question(self, style: int = 0, overrides: Mapping[str, int] | None = None) -> str:
        """The word problem (style 0 canonical, 1 seen paraphrase, 2 unseen paraphrase)."""
        return self.cls.render(self.params, style, overrides)

    def model(self) -> LinearModel:
        return self.cls.build(self.params)


def make_instance(problem_class: str, params: Mapping, *, index: int = 0, time_limit: float | None = None) -> Instance:
    """Build and solve ``params``; raise :class:`InstanceError` unless HiGHS proves an optimum."""
    cls = get_class(problem_class)
    res = solve(cls.build(params), time_limit=time_limit if time_limit is not None else cls.time_limit)
    if res.status != "optimal":
        raise InstanceError(f"{cls.name} instance has no proven optimum: HiGHS status {res.status!r}")
    return Instance(cls.name, cls.size_of(params), dict(params), cls.finish_objective(res.objective), index, res.seconds)


def instance_from_text(problem_class: str, text: str) -> Instance:
    """Read a description in any of the engine's phrasings, then solve it.

    Raises :class:`InstanceError` (a ``ValueError``) if the text is malformed — a part
    is missing, counts disagree — or if the instance it describes has no optimum.
    """
    cls = get_class(problem_class)
    params, missing = cls.parse(text, known_styles=(0, 1, 2))
    if missing:
        raise InstanceError(f"{cls.name}: the description lacks the {', '.join(missing)} constraint(s)")
    return make_instance(cls.name, params)


def generate(problem_class: str, size: int, n: int, *, seed: int = 0, max_tries: int | None = None) -> list[Instance]:
    """``n`` verified instances of ``problem_class`` at ``size``, reproducible from ``seed``.

    Draws parameters with ``numpy.random.default_rng([seed, class id, size])`` and keeps a
    draw only if HiGHS proves it optimal within the class's time limit (the authors'
    filter). Raises ``RuntimeError`` if ``max_tries`` (default ``20 n + 20``) draws give
    fewer than ``n`` instances.
    """
    cls = get_class(problem_class)
    size = cls.check_size(size)
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n={n!r} must be a positive integer")
    rng = np.random.default_rng([int(seed), _CLASS_IDS[cls.name], size])
    out: list[Instance] = []
    tries = 0
    limit = max_tries if max_tries is not None else 20 * n + 20
    while len(out) < n:
        if tries >= limit:
            raise RuntimeError(f"{cls.name} size {size}: only {len(out)} of {n} draws were solved to optimality in {tries} tries")
        tries += 1
        p = cls.sample(rng, size)
        try:
            inst = make_instance(cls.name, p, index=len(out))
        except InstanceError:
            continue
        inst.seed = int(seed)
        out.append(inst)
    return out


# ----------------------------------------------------------------------------------------
# 5. The answer checker
# ----------------------------------------------------------------------------------------

SPECIAL = ("infeasible", "unbounded")
_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.S | re.I)
_PLAN = re.compile(r"<plan>(.*?)</plan>", re.S | re.I)


def parse_answer(text: str | None) -> float | str | None:
    """The last ``<answer>...</answer>`` of ``text`` as a float, or ``"infeasible"`` / ``"unbounded"``.

    Returns ``None`` if there is no tag or its content is neither a number nor a special string.
    Thousands separators are dropped (``1,234.5`` reads as 1234.5).
    """
    if not isinstance(text, str):
        return None
    tags = _ANSWER.findall(text)
    if not tags:
        return None
    body = tags[-1].strip().strip("$ ").lower()
    if body in SPECIAL:
        return body
    m = re.search(r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?", body)
    if not m or m.group(0) != body.replace(" ", ""):
        return None
    return float(m.group(0).replace(",", ""))


def check_answer(pred: float | str | None, truth: float | str, rel_tol: float = REL_TOL) -> bool:
    r"""The paper's correctness rule: :math:`|\hat y-y|\le 0.002\,|y|`; special strings must match.

    A hair of float slack (``1e-12 * max(1, |y|)``) keeps the edge ``|\hat y-y| = 0.002|y|``
    inclusive. (The authors' script compares with ``0.002 * y``, which no answer can meet
    when ``y < 0``; the engine's optima are non-negative, and we use :math:`|y|`.)
    """
    if not (0.0 <= rel_tol < 1.0):
        raise ValueError(f"rel_tol={rel_tol!r} must lie in [0, 1)")
    if pred is None:
        return False
    if isinstance(truth, str):
        return isinstance(pred, str) and pred.strip().lower() == truth.strip().lower()
    if isinstance(pred, str):
        return False
    if not math.isfinite(float(pred)):
        return False
    return abs(float(pred) - float(truth)) <= rel_tol * abs(float(truth)) + 1e-12 * max(1.0, abs(float(truth)))


# ----------------------------------------------------------------------------------------
# 6. Paradigms, prompts, evaluation
# ----------------------------------------------------------------------------------------

PARADIGMS = ("ptr", "comp", "sir")

PLAN_FORMAT = {
    "Knapsack": "a JSON list of the chosen item numbers",
    "TSP": "a JSON list of city numbers in visiting order, starting with 1",
    "BinPacking": "a JSON list giving the bin number of each item, in item order",
    "JobShop": "a JSON list of lists: start time of each job's operations, in route order",
    "Inventory": "a JSON list of the order quantity of each period",
    "Portfolio": "a JSON list of the weight of each asset",
    "NetworkFlow": "a JSON list of lists: units shipped from each warehouse to each store",
    "Transportation": "a JSON list of lists: units shipped from each plant to each customer",
    "Production": "a JSON list of the quantity of each product",
    "Pollution": "a JSON list of lists: units of each source treated by each method",
}

_PREAMBLE = {
    "ptr": "Solve the optimisation problem below by reasoning in plain text. Do not write or run code and do not use a solver; "
    "work out the arithmetic yourself.",
    "comp": "Solve the optimisation problem below by reasoning step by step. You may use a calculator or Python for arithmetic, "
    "but not an optimisation solver.",
    "sir": "Formulate the optimisation problem below as a linear or mixed-integer programme. Return the model in CPLEX LP "
    "file format inside a ```lp fenced block (sections Maximize/Minimize, Subject To, Bounds, General/Binary, End). "
    "The model will be solved with HiGHS and its optimal objective value taken as your answer.",
}


def make_prompt(question: str, paradigm: str, problem_class: str | None = None) -> str:
    """The prompt for ``paradigm`` (``"ptr"``, ``"comp"`` or ``"sir"``) around ``question``."""
    if paradigm not in PARADIGMS:
        raise ValueError(f"paradigm={paradigm!r} is not valid; use one of {PARADIGMS}")
    tail = ""
    if paradigm != "sir":
        tail = (
            "\n\nEnd with the optimal objective value as <answer>number</answer> (or <answer>infeasible</answer> / "
            "<answer>unbounded</answer>)."
        )
        if problem_class is not None:
            tail += f" Also give your decision as <plan>{PLAN_FORMAT[get_class(problem_class).name]}</plan>."
    return f"{_PREAMBLE[paradigm]}\n\n### Problem\n{question}{tail}"


def recognise(text: str, known_styles: Sequence[int] = (0, 1)) -> tuple[ProblemClass, dict, tuple[str, ...]]:
    """Find the class whose data blocks ``text`` matches; return it with the parsed parameters."""
    errors = []
    for cls in CLASSES.values():
        try:
            p, missing = cls.parse(text, known_styles)
            return cls, p, missing
        except InstanceError as e:
            errors.append(str(e))
    raise InstanceError("the text matches none of the problem classes: " + "; ".join(errors[:3]) + " …")


def _prompt_rng(prompt: str, seed: int) -> np.random.Generator:
    import zlib

    return np.random.default_rng([int(seed), zlib.crc32(prompt.encode())])


def ptr_standin(eps: float = 0.02, seed: int = 0) -> Callable[[str], str]:
    """Pure-text reasoning stand-in: a by-hand heuristic plus careless arithmetic.

    The returned callable reads the problem (template parser), builds the class's heuristic
    plan (greedy / nearest neighbour / first-fit decreasing / list scheduling / least-cost
    method ...), adds up its objective with :func:`slipped_sum` at slip rate ``eps`` per
    operation, and answers ``<plan>…</plan><answer>…</answer>``. Its randomness is seeded
    by ``seed`` and the prompt, so an answer does not depend on evaluation order.
    """
    if not (0.0 <= eps <= 1.0):
        raise ValueError(f"eps={eps!r} must be a probability in [0, 1]")

    def answer(prompt: str) -> str:
        try:
            cls, p, missing = recognise(prompt)
        except InstanceError:
            return "I could not read the problem."
        if missing:
            return f"I could not read the {', '.join(missing)} condition(s)."
        plan = cls.heuristic(p)
        chk = cls.check_plan(p, plan)
        value = slipped_sum(chk.terms, eps, _prompt_rng(prompt, seed))
        return f"{cls.name}: heuristic plan, objective added up by hand.\n<plan>{json.dumps(plan)}</plan>\n<answer>{value:.10g}</answer>"

    answer.__name__ = f"ptr_standin(eps={eps})"
    return answer


def comp_standin(seed: int = 0) -> Callable[[str], str]:
    """Computation-assisted stand-in: the same heuristic plan, exact arithmetic (``eps = 0``)."""
    f = ptr_standin(0.0, seed)
    f.__name__ = "comp_standin"
    return f


def sir_standin(known_styles: Sequence[int] = (0, 1)) -> Callable[[str], LinearModel | None]:
    """Solver-integrated stand-in: a template-parsing formulator.

    It knows the phrasings of ``known_styles`` only. A constraint sentence it cannot match
    is left out of the model (``model.meta["dropped"]`` lists them); unreadable data
    gives no model at all. The engine then solves whatever model it returns.
    """

    def answer(prompt: str) -> LinearModel | None:
        try:
            cls, p, missing = recognise(prompt, known_styles)
        except InstanceError:
            return None
        model = cls.build(p, drop=frozenset(missing))
        model.meta["dropped"] = tuple(missing)
        return model

    answer.__name__ = f"sir_standin(known={tuple(known_styles)})"
    return answer


def _plan_of(text: str) -> Any:
    tags = _PLAN.findall(text) if isinstance(text, str) else []
    if not tags:
        return None
    try:
        return json.loads(tags[-1])
    except (json.JSONDecodeError, ValueError):
        return None


def model_key(model: LinearModel) -> str:
    """A content hash of ``model`` (two models with the same key are the same programme)."""
    import hashlib

    A = model.A.tocsr()
    h = hashlib.sha1(model.sense.encode())
    for a in (model.c, A.data, A.indices, A.indptr, model.row_lb, model.row_ub, model.lb, model.ub, model.integer):
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


def classify(inst: Instance, paradigm: str, output: Any, cache: dict | None = None) -> dict:
    """Score one answer and name its error.

    Categories: ``correct``; ``extraction`` (no answer / no model could be read);
    for PTR and CompPTR, with a ``<plan>``: ``feasibility`` (the plan breaks a
    constraint), ``objective`` (feasible but sub-optimal plan), ``arithmetic`` (the plan is
    optimal, the reported value is not its value); without a plan: ``unexplained``. For
    SIR: ``formulation-status`` (the model is infeasible/unbounded/unsolved) or
    ``formulation-objective`` (it solves to a different optimum).
    """
    cls, truth = inst.cls, inst.answer
    row: dict[str, Any] = {"pred": None, "category": "extraction", "violated": "", "dropped": ""}
    if paradigm in ("ptr", "comp"):
        pred = parse_answer(output)
        row["pred"] = pred
        if pred is None:
            return row
        if check_answer(pred, truth):
            row["category"] = "correct"
            return row
        plan = _plan_of(output)
        if plan is None:
            row["category"] = "unexplained"
            return row
        try:
            chk = cls.check_plan(inst.params, plan)
        except (ValueError, TypeError, IndexError):
            row["category"] = "feasibility"
            row["violated"] = "unreadable plan"
            return row
        if not chk.feasible:
            row["category"], row["violated"] = "feasibility", ",".join(chk.violated)
        elif check_answer(chk.objective, truth):
            row["category"] = "arithmetic"
        else:
            row["category"] = "objective"
        return row
    # SIR
    try:
        if output is None:
            return row
        if isinstance(output, str):
            res = solve_lp_text(output)
        else:
            key = model_key(output) if cache is not None else None
            if key is not None and key in cache:
                res = cache[key]
            else:
                res = solve(output, time_limit=cls.time_limit or 60.0)
                if key is not None:
                    cache[key] = res
    except (ValueError, TypeError):
        return row
    if isinstance(output, LinearModel):
        row["dropped"] = ",".join(output.meta.get("dropped", ()))
    if res.status != "optimal":
        row["pred"] = res.answer
        row["category"] = "correct" if check_answer(res.answer, truth) else "formulation-status"
        return row
    pred = cls.finish_objective(res.objective)
    row["pred"] = pred
    row["category"] = "correct" if check_answer(pred, truth) else "formulation-objective"
    return row


def evaluate(
    answer_fn: Callable[[str], Any],
    instances: Sequence[Instance],
    paradigm: str,
    *,
    style: int = 0,
    overrides: Mapping[str, int] | None = None,
    progress: bool = False,
    cache: dict | None = None,
):
    """Evaluate ``answer_fn`` on ``instances`` under ``paradigm``; one row per instance.

    Parameters
    ----------
    answer_fn : callable
        ``prompt -> answer``. For ``"ptr"``/``"comp"`` the answer is text with
        ``<answer>…</answer>`` (and optionally ``<plan>…</plan>``, which enables the error
        decomposition). For ``"sir"`` it is a :class:`LinearModel` or CPLEX LP-format text,
        which the engine solves with HiGHS. An LLM is evaluated by wrapping its API call.
    instances : sequence of Instance
    paradigm : {"ptr", "comp", "sir"}
    style : {0, 1, 2}
        Which phrasing of each question to show (0 canonical, 1 seen, 2 unseen paraphrase).
    overrides : dict, optional
        Per-family styles (see :meth:`ProblemClass.render`); families a class lacks are ignored.
    cache : dict, optional
        For SIR with :class:`LinearModel` answers: a dict shared across calls so that a model
        returned twice (same :func:`model_key`) is solved once.

    Returns
    -------
    pandas.DataFrame
        Columns ``problem_class, size, seed, index, style, paradigm, truth, pred, correct,
        category, violated, dropped``.
    """
    import pandas as pd

    if paradigm not in PARADIGMS:
        raise ValueError(f"paradigm={paradigm!r} is not valid; use one of {PARADIGMS}")
    if not callable(answer_fn):
        raise TypeError("answer_fn must be callable: prompt text -> answer")
    it = instances
    if progress:
        from tqdm.auto import tqdm

        it = tqdm(instances, desc=f"{paradigm} style {style}", leave=False)
    rows = []
    for inst in it:
        ov = {k: v for k, v in (overrides or {}).items() if k in inst.cls.families}
        prompt = make_prompt(inst.question(style, ov), paradigm, inst.problem_class)
        row = classify(inst, paradigm, answer_fn(prompt), cache)
        rows.append(
            {"problem_class": inst.problem_class, "size": inst.size, "seed": inst.seed, "index": inst.index, "style": style, "paradigm": paradigm,
             "truth": inst.answer, **row, "correct": row["category"] == "correct"}
        )
    cols = ["problem_class", "size", "seed", "index", "style", "paradigm", "truth", "pred", "correct", "category", "violated", "dropped"]
    return pd.DataFrame(rows, columns=cols)


def generate_grid(spec: Mapping[str, Sequence[int]], n: int, seeds: Sequence[int], *, progress: bool = False) -> list[Instance]:
    """Verified instances for every ``class -> sizes`` pair of ``spec`` and every seed.

    Each instance's ``index`` is unique within its (class, size) cell across seeds.
    """
    jobs = [(c, s, sd) for c, sizes in spec.items() for s in sizes for sd in seeds]
    if progress:
        from tqdm.auto import tqdm

        jobs = tqdm(jobs, desc="generate + solve", leave=False)
    out: list[Instance] = []
    for c, s, sd in jobs:
        batch = generate(c, s, n, seed=sd)
        for inst in batch:
            inst.index = list(seeds).index(sd) * n + inst.index
        out.extend(batch)
    return out
