"""The abstract problem class: sampler, exact model, text, parser, plans.

Every class of the engine subclasses :class:`ProblemClass` and implements the abstract
methods; rendering, parsing, formulating and size checks are shared here.

References
----------
.. [1] Chen et al., "OPT-Engine", ICML 2026, arXiv:2601.19924, Sec. 3 and App. (the ten
   generators). Authors' code: https://github.com/Cardinal-Operations/OPTEngine
   (``OPTEngine/opt/modules/*_generator.py``).
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..._common import RandomState, check_random_state
from .._checks import STYLES, check_real, check_style, check_styles, check_type, is_int, is_real
from ..lp import LinearModel
from ..text import FIELD, Block, InstanceError, _read_number, render, template_regex

__all__ = ["Plan", "PlanCheck", "ProblemClass", "STYLES"]

Plan = Any  # a class-specific, JSON-serialisable decision (item list, tour, weights, ...)


@dataclass
class PlanCheck:
    """A plan evaluated against the exact instance: ``terms`` sum to ``objective``.

    Parameters
    ----------
    feasible : bool
        Whether the plan satisfies every constraint.
    objective : float
        The plan's objective value (NaN for an unreadable plan).
    terms : ndarray, shape (K,)
        The terms a by-hand calculation adds up.
    violated : tuple of str
        The constraint families the plan breaks.

    References
    ----------
    .. [1] Chen et al., ICML 2026 (arXiv:2601.19924), Sec. 5 (error decomposition: feasibility vs optimality vs arithmetic).
    """

    feasible: bool
    objective: float
    terms: np.ndarray
    violated: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        check_type(self.feasible, (bool, np.bool_), "feasible", "a bool")
        if not is_real(self.objective):
            raise TypeError(f"objective={self.objective!r} must be a number (NaN for a plan that cannot be evaluated)")
        self.terms = np.asarray(self.terms, dtype=float).ravel()
        if not np.all(np.isfinite(self.terms)):
            raise ValueError("terms must be finite numbers")
        if not isinstance(self.violated, tuple) or not all(isinstance(v, str) for v in self.violated):
            raise TypeError(f"violated must be a tuple of constraint-family names, got {self.violated!r}")


def _ints(rng: np.random.Generator, lo: int, hi: int, size: Any = None) -> Any:
    """Integers in the closed range [lo, hi] (Python's ``random.randint`` convention)."""
    return rng.integers(lo, hi + 1, size)


def _uniform3(rng: np.random.Generator, lo: float, hi: float, size: Any = None) -> Any:
    """Uniform draws on [lo, hi), rounded to the 3 decimals the text shows."""
    return np.round(rng.uniform(lo, hi, size), 3)


def _need(sc: Mapping, key: str, cls: str) -> Any:
    """``sc[key]``, or an :class:`InstanceError` saying the description does not state it."""
    if key not in sc:
        raise InstanceError(f"{cls}: the description does not state {key!r}")
    return sc[key]


def _pos_int(v: Any, what: str, cls: str) -> int:
    """``v`` as a positive integer, or an :class:`InstanceError`."""
    if isinstance(v, list) or float(v) != int(v) or int(v) < 1:
        raise InstanceError(f"{cls}: {what}={v!r} must be a positive integer")
    return int(v)


class ProblemClass(abc.ABC):
    """One problem class of the engine: sampler, exact model, text, parser, plans.

    Subclasses set the class attributes (``name``, ``kind``, ``sense``, ``size_name``,
    ``size_range``, ``time_limit``, ``integral_objective``, ``blocks``) and implement
    :meth:`_draw`, :meth:`build`, :meth:`scalars`, :meth:`rows`, :meth:`from_fields`,
    :meth:`heuristic` and :meth:`check_plan`. A class is stateless: its instances are
    the parameter dicts passed to every method.

    Parameters
    ----------
    None
        A problem class takes no constructor arguments; :data:`~icml26.optengine.problems.CLASSES`
        holds one object per class.

    References
    ----------
    .. [1] Chen et al., ICML 2026 (arXiv:2601.19924), Sec. 3: a generator per class, an
       exact model, a solver filter and a text.
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
    @abc.abstractmethod
    def _draw(self, rng: np.random.Generator, n: int) -> dict:
        """Parameters of one instance of size ``n`` (already checked), drawn from ``rng``."""

    @abc.abstractmethod
    def build(self, p: Mapping, drop: frozenset = frozenset()) -> LinearModel:
        """The exact model of parameters ``p``.

        Parameters
        ----------
        p : mapping
            Instance parameters.
        drop : frozenset of str
            Constraint families to leave out (a formulator that missed their sentence).

        Returns
        -------
        LinearModel
            The (mixed-integer) linear programme.

        References
        ----------
        .. [1] Chen et al., ICML 2026 (arXiv:2601.19924), App. (the authors' gurobipy models).
        """

    @abc.abstractmethod
    def scalars(self, p: Mapping) -> dict:
        """The values of the ``text`` blocks' slots.

        Parameters
        ----------
        p : mapping
            Instance parameters.

        Returns
        -------
        dict
            Slot name -> value.

        References
        ----------
        .. [1] Chen et al., ICML 2026 (arXiv:2601.19924), Sec. 3.
        """

    @abc.abstractmethod
    def rows(self, p: Mapping) -> dict[str, list[dict]]:
        """The rows of the ``rows`` blocks.

        Parameters
        ----------
        p : mapping
            Instance parameters.

        Returns
        -------
        dict of str to list of dict
            ``rows_key`` -> one slot dict per line (indices 1-based).

        References
        ----------
        .. [1] Chen et al., ICML 2026 (arXiv:2601.19924), Sec. 3.
        """

    @abc.abstractmethod
    def from_fields(self, sc: dict, rows: dict[str, list[dict]], missing: tuple[str, ...] = ()) -> dict:
        """Parameters from parsed slot values and rows (the inverse of :meth:`scalars` and :meth:`rows`).

        Parameters
        ----------
        sc : dict
            Parsed slot values of the ``text`` blocks.
        rows : dict of str to list of dict
            Parsed lines of the ``rows`` blocks.
        missing : tuple of str
            Constraint families whose sentence was not found; their parameters become ``None``.

        Returns
        -------
        dict
            The instance parameters.

        Raises
        ------
        InstanceError
            When a needed value is absent or the numbers disagree.

        References
        ----------
        .. [1] Chen et al., ICML 2026 (arXiv:2601.19924) (the text carries the whole instance).
        """

    @abc.abstractmethod
    def heuristic(self, p: Mapping) -> Plan:
        """The by-hand plan of the PTR stand-in (each class names its rule).

        Parameters
        ----------
        p : mapping
            Instance parameters.

        Returns
        -------
        Plan
            A JSON-serialisable decision in the class's :data:`~icml26.optengine.paradigms.PLAN_FORMAT`.

        References
        ----------
        .. [1] Chen et al., ICML 2026 (arXiv:2601.19924), Sec. 5 (local reasoning fails global constraints).
        """

    @abc.abstractmethod
    def check_plan(self, p: Mapping, plan: Plan) -> PlanCheck:
        """Evaluate ``plan`` against the exact instance ``p``, independently of the model.

        Parameters
        ----------
        p : mapping
            Instance parameters.
        plan : Plan
            A decision in the class's plan format.

        Returns
        -------
        PlanCheck
            Feasibility, objective, the terms a hand calculation adds, and what is broken
            (a malformed plan is infeasible, with a NaN objective).

        References
        ----------
        .. [1] Chen et al., ICML 2026 (arXiv:2601.19924), Sec. 5 (error decomposition).
        """

    # --- generic -----------------------------------------------------------------------
    def __repr__(self) -> str:
        return f"<{self.name} ({self.kind}, {self.sense}, {self.size_name} {self.size_range[0]}-{self.size_range[1]})>"

    @property
    def families(self) -> tuple[str, ...]:
        """Constraint families a reader can miss (each is left out of the model if missed)."""
        return tuple(dict.fromkeys(b.family for b in self.blocks if b.family != "data"))

    @property
    def unseen_families(self) -> tuple[str, ...]:
        """Families whose sentence has an unseen (style-2) phrasing."""
        return tuple(dict.fromkeys(b.family for b in self.blocks if b.family != "data" and len(b.phrasings) > 2))

    def check_size(self, size: int) -> int:
        """``size`` as an int if it lies in the authors' range :attr:`size_range`.

        Parameters
        ----------
        size : int
            A size knob.

        Returns
        -------
        int
            The size.

        Raises
        ------
        ValueError
            Naming the allowed range.

        References
        ----------
        .. [1] Chen et al., ICML 2026 (arXiv:2601.19924), Table 1 (size ranges of the released benchmark).
        """
        lo, hi = self.size_range
        if not is_int(size) or not (lo <= size <= hi):
            raise ValueError(f"size={size!r} is not valid for {self.name}; use an integer {self.size_name} in [{lo}, {hi}]")
        return int(size)

    def sample(self, size: int, random_state: RandomState = None) -> dict:
        """Draw the parameters of one instance with the authors' ranges.

        Parameters
        ----------
        size : int
            The size knob, in :attr:`size_range`.
        random_state : int, numpy.random.Generator or None
            Source of randomness (see :func:`icml26._common.check_random_state`).

        Returns
        -------
        dict
            The instance parameters (numpy arrays and numbers).

        References
        ----------
        .. [1] Chen et al., ICML 2026 (arXiv:2601.19924); authors' generators in ``OPTEngine/opt/modules``.
        """
        n = self.check_size(size)
        return self._draw(check_random_state(random_state), n)

    def size_of(self, p: Mapping) -> int:
        """The size knob of parameters ``p``.

        Parameters
        ----------
        p : mapping
            Instance parameters.

        Returns
        -------
        int
            The size.

        References
        ----------
        .. [1] Chen et al., ICML 2026 (arXiv:2601.19924), Sec. 3 (one size knob per class).
        """
        return int(p["n"])

    def check_style(self, style: int, overrides: Mapping[str, int] | None = None) -> dict[str, int]:
        """Validate a style and per-family overrides.

        Parameters
        ----------
        style : {0, 1, 2}
            The phrasing of every block.
        overrides : mapping of str to int, optional
            Family -> style; every family must be one of :attr:`families`.

        Returns
        -------
        dict
            The overrides.

        References
        ----------
        .. [1] Chen et al., ICML 2026 (arXiv:2601.19924), Sec. 5 (rephrased constraints).
        """
        check_type(overrides, (Mapping, type(None)), "overrides", "a mapping of family -> style")
        overrides = dict(overrides or {})
        for k, v in [("style", style), *overrides.items()]:
            check_style(v, k)
        unknown = set(overrides) - set(self.families)
        if unknown:
            raise ValueError(f"{self.name} has no constraint family {sorted(unknown)}; families: {self.families}")
        return overrides

    def render(self, p: Mapping, style: int = 0, overrides: Mapping[str, int] | None = None) -> str:
        """The instance as a word problem; ``style`` 0 canonical, 1 seen paraphrase, 2 unseen.

        Parameters
        ----------
        p : mapping
            Instance parameters.
        style : {0, 1, 2}
            Phrasing of every block.
        overrides : mapping of str to int, optional
            A constraint family -> the style of its sentence alone (e.g. ``{"capacity": 2}``
            rewords only the capacity sentence).

        Returns
        -------
        str
            The text.

        References
        ----------
        .. [1] Chen et al., ICML 2026 (arXiv:2601.19924), Sec. 5 (rephrased constraints).
        """
        overrides = self.check_style(style, overrides)
        check_type(p, Mapping, "p", "a mapping of instance parameters")
        sc, rows = self.scalars(p), self.rows(p)
        parts = []
        for b in self.blocks:
            tpl = b.phrasing(overrides.get(b.family, style))
            if b.kind == "text":
                parts.append(render(tpl, sc))
            else:
                parts.append("\n".join(render(tpl, r) for r in rows[b.rows_key]))
        return "\n".join(parts)

    def parse(self, text: str, known_styles: Sequence[int] = (0, 1)) -> tuple[dict, tuple[str, ...]]:
        """Read an instance back from ``text`` using only the phrasings of ``known_styles``.

        Parameters
        ----------
        text : str
            A description in the engine's phrasings.
        known_styles : sequence of {0, 1, 2}
            Which phrasings the reader knows.

        Returns
        -------
        params : dict
            The parameters; those of a family whose sentence was not found are ``None``.
        missing : tuple of str
            The constraint families whose sentence was not found.

        Raises
        ------
        InstanceError
            When a ``data`` block is missing or the numbers disagree.

        References
        ----------
        .. [1] Chen et al., ICML 2026 (arXiv:2601.19924) (the text alone determines the instance).
        """
        check_type(text, str, "text", "a str")
        known = check_styles(known_styles)
        sc: dict[str, Any] = {}
        rows: dict[str, list[dict]] = {}
        missing: list[str] = []
        for b in self.blocks:
            found = False
            for tpl in dict.fromkeys(b.phrasing(k) for k in known):
                rx = template_regex(tpl)
                if b.kind == "text":
                    m = rx.search(text)
                    if m:
                        sc.update({k: _read_number(v) for k, v in m.groupdict().items()})
                        found = True
                        break
                else:
                    ms = [{k: _read_number(v) for k, v in m.groupdict().items()} for m in rx.finditer(text)]
                    if ms:
                        rows[b.rows_key] = ms
                        found = True
                        break
            if not found:
                if b.family == "data":
                    what = b.rows_key or FIELD.sub("…", b.phrasings[0])[:60]
                    raise InstanceError(f"{self.name}: could not read the {what!r} part of the description")
                missing.append(b.family)
        missing_t = tuple(dict.fromkeys(missing))
        return self.from_fields(sc, rows, missing_t), missing_t

    def formulate(self, text: str, known_styles: Sequence[int] = (0, 1)) -> LinearModel:
        """Text -> model, leaving out every constraint family whose sentence was not understood.

        Parameters
        ----------
        text : str
            A description.
        known_styles : sequence of {0, 1, 2}
            Which phrasings the formulator knows.

        Returns
        -------
        LinearModel
            The model of what was understood.

        References
        ----------
        .. [1] Chen et al., ICML 2026 (arXiv:2601.19924), Sec. 5 (formulation errors).
        """
        p, missing = self.parse(text, known_styles)
        return self.build(p, drop=frozenset(missing))

    def finish_objective(self, value: float) -> float:
        """Round a solver objective the way the stored answer is rounded.

        Parameters
        ----------
        value : float
            A finite objective value.

        Returns
        -------
        float
            Rounded to an integer (integral objectives) or to 6 decimals.

        References
        ----------
        .. [1] Chen et al., ICML 2026 (arXiv:2601.19924) (answers stored as numbers, checked to 0.2 %).
        """
        value = check_real(value, "value")
        return float(round(value)) if self.integral_objective else float(round(value, 6))
