"""What every chapter notebook uses: scale checking, seeding, claims and their decision rules.

A chapter's ``parameters`` cell sets ``scale`` and ``seed``; the next cell calls
:func:`setup` which validates them and seeds every generator. At the end the
chapter builds a list of :class:`Claim` rows and calls :func:`record_claims`,
which shows them as a table and writes them as JSON for the book's scorecard.

A claim's verdict is never typed: it is derived from named checks that the chapter
computes from its own measurements (:func:`verdict`, rule :data:`VERDICT_RULE`). Each
claim says what kind of claim it is (:data:`KINDS`). A noisy comparison is decided by
:func:`paired_effect`: the paired effect with its interval, in three outcomes
(*supports*, *contradicts*, *inconclusive*) against the smallest effect the claim
needs, fixed before the run; :func:`paired_better` and :func:`paired_noninferior` are
cases of it, and :func:`exact` marks a deterministic check. Core checks decide, guards
only lower, positive controls (``control=``) must pass for a paper claim to be decided,
and checks that hold by construction (:class:`ByConstruction`) are shown but never
decide. Result prose is generated from computed values with :func:`say`.
"""

from __future__ import annotations

import json
import os
import platform
import random
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from .._common import progress  # noqa: F401  (re-exported: chapters loop with chapter.progress)

SCALES: tuple[str, ...] = ("ci", "full")

T = TypeVar("T")


def check_scale(scale: str) -> str:
    """Return ``scale`` if it is one of :data:`SCALES`, else raise ``ValueError``.

    >>> check_scale("ci")
    'ci'
    """
    if scale not in SCALES:
        raise ValueError(f"scale={scale!r} is not a valid scale; use one of {', '.join(map(repr, SCALES))}")
    return scale


MAX_SEED: int = 2**32 - 1


def check_seed(seed: Any) -> int:
    """Return ``seed`` as an int if it is an integer in ``[0, 2**32 - 1]``, else raise ``ValueError``."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed <= MAX_SEED:
        raise ValueError(f"seed={seed!r} is not valid; use an integer from 0 to {MAX_SEED}")
    return int(seed)


def by_scale(scale: str, *, ci: T, full: T, overrides: Mapping[str, Any] | None = None) -> T:
    """Pick the value for ``scale`` (validated), with a reader's ``overrides`` of its settings.

    ``by_scale("ci", ci=100, full=500) == 100``. When the values are dicts of settings
    (a chapter's ``CFG``), ``overrides`` (the chapter's ``overrides`` parameter, e.g.
    ``python -m icml26 run 02 --param overrides='{"n_seeds": 20}'``) replaces some of them;
    a name the chapter does not have, or a value of another type than the default, is a
    ``ValueError`` naming it and the valid settings.

    >>> by_scale("ci", ci={"n": 3}, full={"n": 10}, overrides={"n": 5})
    {'n': 5}
    """
    value = ci if check_scale(scale) == "ci" else full
    if not overrides:
        return value
    if not isinstance(overrides, Mapping):
        raise TypeError(f"overrides={overrides!r} must be a dict of settings, e.g. {{'n_seeds': 20}}")
    if not isinstance(value, Mapping):
        raise ValueError(f"overrides={dict(overrides)!r}: this setting is not a dict of named settings")
    unknown = [k for k in overrides if k not in value]
    if unknown:
        raise ValueError(
            f"overrides: {', '.join(map(repr, unknown))} {'is not a setting' if len(unknown) == 1 else 'are not settings'} "
            f"of this chapter; its settings at scale {scale!r} are {', '.join(sorted(map(str, value)))}"
        )
    for k, v in overrides.items():
        old = value[k]
        same = (isinstance(old, bool) == isinstance(v, bool)) and (
            (isinstance(old, (int, float)) and isinstance(v, (int, float)) and (isinstance(old, float) or float(v).is_integer()))
            or (isinstance(old, str) and isinstance(v, str))
            or (isinstance(old, (list, tuple)) and isinstance(v, (list, tuple)))
            or (isinstance(old, Mapping) and isinstance(v, Mapping))
            or old is None
        )
        if not same:
            raise ValueError(
                f"overrides: {k}={v!r} is a {type(v).__name__}; the setting's default is {old!r} ({type(old).__name__})"
            )
    out = dict(value)
    out.update({k: (int(v) if isinstance(value[k], int) and not isinstance(value[k], bool) else v) for k, v in overrides.items()})
    return out  # type: ignore[return-value]


def seed_everything(seed: int) -> np.random.Generator:
    """Seed Python's, NumPy's and (if installed) torch's generators; return a fresh ``Generator``."""
    seed = check_seed(seed)
    random.seed(seed)
    np.random.seed(seed)  # noqa: NPY002  (seeds the legacy global state that some libraries still draw from)
    try:
        import torch

        torch.manual_seed(seed)
    except ImportError:  # pragma: no cover - torch is part of the pinned install
        pass
    return np.random.default_rng(seed)


DEVICE: str = "cpu"
"""The torch device of the running chapter, set by :func:`setup` (``"cpu"`` unless a chapter asks for a GPU)."""


def setup(scale: str, seed: int, *, torch_threads: int | None = None, device: str = "cpu") -> np.random.Generator:
    """Validate the chapter parameters, seed all generators, choose the torch device and set the plotting style.

    Parameters
    ----------
    scale : {"ci", "full"}
        Run size. Anything else raises ``ValueError`` naming the valid values.
    seed : int
        Non-negative seed for every random generator.
    torch_threads : int, optional
        If given, ``torch.set_num_threads(torch_threads)``; chapters run two at a
        time on two cores, so 1 is a good value for small models.
    device : {"auto", "cpu", "cuda"}
        The chapter's ``device`` parameter (:func:`icml26._common.resolve_device`): on
        CUDA, torch's default device is set so that the chapter's tensors are made
        there, and the claim records go to a folder of their own (``device-cuda/``), so
        that a GPU run never overwrites the CPU records the book shows.

    Returns
    -------
    numpy.random.Generator
        A generator seeded with ``seed``.
    """
    check_scale(scale)
    from .._common import resolve_device

    global DEVICE
    DEVICE = resolve_device(device)
    os.environ["ICML26_DEVICE"] = DEVICE
    rng = seed_everything(seed)
    if DEVICE != "cpu":
        import torch

        torch.set_default_device(DEVICE)
    import warnings

    # tqdm.auto, imported by some libraries, says once that ipywidgets is missing; the
    # book reports progress with chapter.progress instead, so the notice is noise.
    warnings.filterwarnings("ignore", message="IProgress not found")
    if torch_threads is not None:
        import torch

        torch.set_num_threads(int(torch_threads))
    try:
        import matplotlib

        matplotlib.rcParams.update(
            {"figure.dpi": 100, "savefig.dpi": 120, "axes.grid": True, "grid.alpha": 0.3, "figure.figsize": (6.4, 4.0)}
        )
    except ImportError:  # pragma: no cover
        pass
    return rng


KINDS: tuple[str, ...] = ("paper", "derived", "stand-in", "own")
"""What a claim is.

``paper``
    an empirical result the paper reports, tested here on our data or model. Only
    these are reproductions, and only these count in the book's headline.
``derived``
    an identity or theorem the paper states, verified numerically.
``stand-in``
    the behaviour of a labelled stand-in for something that cannot run here (an LLM,
    a GPU-scale model, an FPGA): it *illustrates* the paper's mechanism.
``own``
    a property the chapter adds (harness limits, sampler cost, tooling).
"""

VERDICTS_BY_KIND: dict[str, tuple[str, ...]] = {
    "paper": ("reproduced", "partly reproduced", "not reproduced", "undecided", "untestable here"),
    "derived": ("verified", "fails"),
    "stand-in": ("illustrates", "does not illustrate"),
    "own": ("holds", "fails"),
}

VERDICT_RULE: str = (
    "A paper claim is *reproduced* when every core check supports it; *not reproduced* only when the evidence is "
    "against it (at least one core check contradicts, none supports, none is undecided); *partly reproduced* when "
    "some core checks support and others contradict; *untestable here* whenever a positive control failed (the setup "
    "could not show an effect of the claimed kind) or the claim cannot differ in this reconstruction by construction "
    "(the chapter says why, and what would test it); and *undecided* otherwise (the setup can test it: more "
    "replicates would decide it). A noisy check supports when the two-sided 90 % interval of its paired effect lies "
    "above its margin, contradicts when the interval lies below the smallest effect the claim needs (fixed before "
    "the run), and is inconclusive otherwise. A guard can only lower a verdict: a contradicted guard turns "
    "*reproduced* into *partly reproduced*."
)


def outcome_of(check: Any) -> str:
    """The outcome of one check: a ``Decision``'s own, or *supports* / *contradicts* for a bool."""
    if isinstance(check, Decision):
        return check.outcome
    if isinstance(check, (bool, np.bool_)):
        return "supports" if check else "contradicts"
    raise TypeError(f"a check must be a bool or a Decision, got {type(check).__name__}")


def verdict(
    checks: Mapping[str, Any],
    kind: str = "paper",
    *,
    guards: Mapping[str, Any] | None = None,
    control: Mapping[str, Any] | None = None,
    untestable: str = "",
) -> str:
    """Verdict of a claim of ``kind`` from its core checks, guards and positive controls.

    Every check has an outcome (:data:`~icml26.book.evidence.OUTCOMES`): a
    :class:`Decision` carries its own, a bool supports (``True``) or contradicts
    (``False``). The rule is :data:`VERDICT_RULE`: for a ``paper`` claim,

    - ``untestable`` given, or any control *contradicts* → *untestable here*;
    - any control *inconclusive* → *undecided* (more replicates would tell whether the setup can show it);
    - every core check *supports* → *reproduced*;
    - some *support* and some *contradict* → *partly reproduced*;
    - all *contradict* → *not reproduced*;
    - otherwise → *undecided*;

    and then a *contradicted* guard lowers *reproduced* to *partly reproduced*. The other
    kinds have two words: every check, control and guard supports (*verified*,
    *illustrates*, *holds*) or not (*fails*, *does not illustrate*).

    Parameters
    ----------
    checks : mapping of str to bool or Decision
        The core checks: the comparison(s) the claim's sentence is about.
    kind : {"paper", "derived", "stand-in", "own"}
        The claim's kind (see :data:`KINDS`).
    guards : mapping of str to bool or Decision, optional
        Checks that can lower a verdict, never raise it ("no worse elsewhere").
    control : mapping of str to bool or Decision, optional
        Positive controls: the setup can show an effect of the claimed kind at all.
    untestable : str, optional
        Why the claim cannot differ in this reconstruction by construction ("" when it can);
        paper claims only.

    Returns
    -------
    str
        One of ``VERDICTS_BY_KIND[kind]``.

    >>> verdict({"a": True, "b": False})
    'partly reproduced'
    >>> verdict({"a": True}, control={"learns the task": False})
    'untestable here'
    >>> verdict({"a": True}, kind="derived")
    'verified'
    """
    if kind not in VERDICTS_BY_KIND:
        raise ValueError(f"kind={kind!r} is not a claim kind; use one of {', '.join(map(repr, KINDS))}")
    if not checks:
        raise ValueError("a claim needs at least one check to derive a verdict from")
    if untestable and kind != "paper":
        raise ValueError(f"untestable= is for paper claims only (kind={kind!r}): a {kind} claim is decided by its checks")
    core = [outcome_of(v) for v in checks.values()]
    guard = [outcome_of(v) for v in (guards or {}).values()]
    ctrl = [outcome_of(v) for v in (control or {}).values()]
    words = VERDICTS_BY_KIND[kind]
    if kind != "paper":
        ok = all(o == "supports" for o in core + ctrl) and "contradicts" not in guard
        return words[0] if ok else words[1]
    if untestable or "contradicts" in ctrl:
        return "untestable here"
    if any(o != "supports" for o in ctrl):
        return "undecided"
    if all(o == "supports" for o in core):
        word = "reproduced"
    elif "supports" in core and "contradicts" in core:
        word = "partly reproduced"
    elif all(o == "contradicts" for o in core):
        word = "not reproduced"
    else:
        word = "undecided"
    if word == "reproduced" and "contradicts" in guard:
        word = "partly reproduced"
    return word


def current_word(row: dict) -> str:
    """A claim record's verdict in today's words: a paper claim's *inconclusive* of a record made before 0.5.0
    reads *untestable here* when one of its positive controls contradicts, else *undecided*."""
    v = str(row.get("verdict", ""))
    if row.get("kind") == "paper" and v == "inconclusive":
        failed = any((d or {}).get("outcome") == "contradicts" for d in (row.get("control") or {}).values())
        return "untestable here" if failed else "undecided"
    return v


def verdict_reason(
    checks: Mapping[str, Any],
    *,
    guards: Mapping[str, Any] | None = None,
    control: Mapping[str, Any] | None = None,
    untestable: str = "",
    to_test: str = "",
) -> str:
    """Why a claim reads as it does, in a sentence: failed controls, undecided checks and what would decide them.

    A claim that is *untestable here* names the failed control or the construction, and
    ``to_test`` (what would make a setup test it), or says that the chapter does not state it.
    """
    parts = []
    if untestable:
        parts.append(f"untestable here by construction: {untestable}")
    failed = [k for k, v in (control or {}).items() if outcome_of(v) == "contradicts"]
    if failed:
        parts.append("setup could not test it: positive control " + ", ".join(f"'{k}'" for k in failed) + " failed")
    if untestable or failed:
        parts.append(f"what would test it: {to_test}" if to_test else "what would test it is not stated")
    open_ctrl = [k for k, v in (control or {}).items() if outcome_of(v) == "inconclusive"]
    if open_ctrl:
        parts.append("positive control " + ", ".join(f"'{k}'" for k in open_ctrl) + " undecided")
    undecided = []
    for k, v in checks.items():
        if outcome_of(v) == "inconclusive":
            need = v.stats.get("n_needed") if isinstance(v, Decision) else None
            n = v.stats.get("n") if isinstance(v, Decision) else None
            undecided.append(f"'{k}'" + (f" (n = {n}; about {need} replicates in all would decide it)" if need else ""))
    if undecided:
        parts.append("undecided: " + ", ".join(undecided))
    lowered = [k for k, v in (guards or {}).items() if outcome_of(v) == "contradicts"]
    if lowered:
        parts.append("guard " + ", ".join(f"'{k}'" for k in lowered) + " contradicted")
    smaller = [k for k, v in checks.items() if isinstance(v, Decision) and v.stats.get("smaller_than_paper")]
    if smaller:
        parts.append("smaller than the paper's: " + ", ".join(f"'{k}'" for k in smaller))
    return "; ".join(parts)


@dataclass(frozen=True)
class ByConstruction:
    """A sanity check that holds by construction (an identity, a design property).

    It may be shown beside a claim, in ``Claim(sanity=...)``, but it can never decide a
    verdict: a :class:`Claim` refuses it among its ``checks``.
    """

    value: bool
    why: str = ""

    def __bool__(self) -> bool:
        return bool(self.value)


@dataclass(frozen=True)
class Decision:
    """The outcome of a decision rule fixed before the run.

    Parameters
    ----------
    holds : bool
        Whether the rule's condition held (the check *supports* the claim).
    rule : str
        The rule in words, as fixed before the run.
    detail : str
        The numbers that decided it (effect, interval, n, smallest effect).
    stats : dict
        The same numbers as numbers; a noisy paired decision keeps its replicate
        differences (``diffs``) so that seeds can be pooled.
    outcome : {"supports", "contradicts", "inconclusive"}, optional
        Default: *supports* when ``holds``, else *contradicts* (an exact check).
    """

    holds: bool
    rule: str
    detail: str
    stats: dict = field(default_factory=dict)
    outcome: str = ""

    def __post_init__(self) -> None:
        from .evidence import OUTCOMES

        if not self.outcome:
            object.__setattr__(self, "outcome", "supports" if self.holds else "contradicts")
        if self.outcome not in OUTCOMES:
            raise ValueError(f"outcome={self.outcome!r} is not an outcome; use one of {', '.join(map(repr, OUTCOMES))}")
        object.__setattr__(self, "holds", self.outcome == "supports")

    def __bool__(self) -> bool:
        return bool(self.holds)

    @property
    def noisy(self) -> bool:
        """Whether the figure behind it varies with the seed (it must then carry a smallest effect)."""
        return bool(self.stats.get("noisy", False))


def exact(value: Any, why: str) -> Decision:
    """An exact, deterministic check (an identity, a count, a bit-exact comparison) for a paper claim.

    A paper claim takes a bare bool only through this function: ``why`` says why the
    check does not vary with the seed. It supports when ``value`` is true and
    contradicts otherwise.
    """
    if not isinstance(why, str) or not why.strip():
        raise ValueError("exact(...) needs why=: a sentence on why the check does not vary with the seed")
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"exact(...) takes a bool, got {type(value).__name__}")
    return Decision(bool(value), why, "yes" if value else "no", {"exact": True, "noisy": False})


def replicate_seeds(seed: int, n: int, *, stride: int = 1000) -> list[int]:
    """The seeds of a chapter's ``n`` internal replicates for run ``seed``: ``seed·stride + k``.

    Runs at different seeds get disjoint replicates (for ``n <= stride``), so a sweep's
    pooled evidence never counts a replicate twice; run seed 0 keeps ``0 … n−1``.

    >>> replicate_seeds(0, 3), replicate_seeds(2, 3)
    ([0, 1, 2], [2000, 2001, 2002])
    """
    seed = check_seed(seed)
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 1 <= n <= stride:
        raise ValueError(f"n={n!r} replicates must be an integer from 1 to stride={stride}")
    return [(seed * stride + k) % (MAX_SEED + 1) for k in range(int(n))]


@dataclass(frozen=True)
class Value:
    """A figure as numbers: mean, spread, count and unit (for aggregation over seeds).

    ``values`` keeps the individual replicates when there are several.
    """

    mean: float
    sd: float | None = None
    n: int = 1
    unit: str = ""
    values: tuple[float, ...] | None = None

    @classmethod
    def of(cls, values: Sequence[float] | np.ndarray | float, unit: str = "") -> Value:
        """The mean, sample sd (``ddof=1``) and count of ``values``; a scalar gives n = 1.

        >>> Value.of([1.0, 3.0]).sd
        1.4142135623730951
        """
        v = np.asarray(values, dtype=float).ravel()
        if v.size == 0:
            raise ValueError("Value.of needs at least one value, got an empty sequence")
        if not np.all(np.isfinite(v)):
            raise ValueError(f"Value.of needs finite values, got {v.tolist()}")
        sd = float(v.std(ddof=1)) if v.size > 1 else None
        return cls(
            mean=float(v.mean()), sd=sd, n=int(v.size), unit=str(unit), values=tuple(float(x) for x in v) if v.size > 1 else None
        )


def _as_value(x: Any, name: str) -> Value | None:
    if x is None or isinstance(x, Value):
        return x
    if isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool):
        return Value.of(float(x))
    if isinstance(x, (list, tuple, np.ndarray)):
        return Value.of(x)
    raise TypeError(f"{name} must be a Value, a number or a sequence of numbers, got {type(x).__name__}")


def _paired_diffs(a: Any, b: Any, higher_is_better: bool) -> np.ndarray:
    scalar_b = np.ndim(b) == 0
    a = np.asarray(a, dtype=float).ravel()
    b = np.asarray(b, dtype=float).ravel()
    if scalar_b:
        b = np.full_like(a, b[0])
    if a.shape != b.shape:
        raise ValueError(f"paired comparison needs equal lengths, got {a.size} and {b.size}")
    if a.size < 2:
        raise ValueError(f"paired comparison needs at least 2 pairs, got {a.size}")
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise ValueError(f"paired comparison needs finite values, got {a.tolist()} and {b.tolist()}")
    return (a - b) if higher_is_better else (b - a)


def _replicate_ids(replicates: Sequence[Any] | None, n: int) -> list[str] | None:
    if replicates is None:
        return None
    ids = [str(r) for r in replicates]
    if len(ids) != n:
        raise ValueError(f"replicates names {len(ids)} replicates for {n} paired differences")
    if len(set(ids)) != n:
        raise ValueError(f"replicate ids must be distinct, got {ids}")
    return ids


def _fmt(x: float) -> str:
    return f"{x:+.3g}"


def paired_effect(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray | float,
    *,
    smallest_effect: float,
    basis: str,
    paper_effect: float | None = None,
    higher_is_better: bool = True,
    margin: float = 0.0,
    alpha: float = 0.05,
    names: tuple[str, str] = ("A", "B"),
    unit: str = "",
    replicates: Sequence[Any] | None = None,
) -> Decision:
    """Effect of ``a`` over ``b`` with its interval, decided in three outcomes against the smallest effect the claim needs.

    With paired differences :math:`d_i = a_i - b_i` (sign flipped when lower is
    better, so a positive effect is always the paper's direction), the effect is
    :math:`\\bar d` with the two-sided :math:`1-2\\alpha` t interval :math:`[L, U]`.
    The check *supports* when :math:`L > \\text{margin}`, *contradicts* when it does not
    support and :math:`U < \\delta_{\\min}` (``smallest_effect``), and is *inconclusive*
    otherwise, with ``n_needed``: the replicates that give 80 % power to support an
    effect of :math:`\\delta_{\\min}` at the observed spread (see
    :mod:`icml26.book.evidence`). A scalar ``b`` compares ``a`` with a fixed threshold.

    Parameters
    ----------
    a, b : array_like, shape (n,)
        The two methods' figures on the same replicates (or ``b`` a threshold).
    smallest_effect : float
        The smallest effect the claim needs, in the figure's units and the paper's
        direction, fixed before the run (>= ``margin``).
    basis : str
        How ``smallest_effect`` was derived: from the paper's own effect where the
        units carry over, or a stated minimal meaningful effect.
    paper_effect : float, optional
        The paper's own effect in the same units, where it is commensurate; a supported
        effect whose interval lies wholly below it is flagged ``smaller_than_paper``.
    higher_is_better : bool
        Direction of the figure.
    margin : float
        What the effect must clear to support (0: any improvement; negative for a
        non-inferiority claim).
    alpha : float
        One-sided error rate of each outcome; the interval is two-sided ``1 - 2 alpha``.
    names : (str, str)
        Labels for the rule and detail.
    unit : str
        The figure's unit, for the detail.
    replicates : sequence, optional
        One id per pair (e.g. the replicate seeds), so that pooling over a sweep's
        seeds counts each replicate once.

    Returns
    -------
    Decision
        ``outcome``, the rule, a detail line, and ``stats`` with ``effect``,
        ``ci_low``, ``ci_high``, ``n``, ``sd``, ``smallest_effect``, ``margin``,
        ``outcome``, ``n_needed``, ``p``, ``wins``, ``diffs`` and ``replicates``.

    References
    ----------
    Lakens, D. (2017). Equivalence tests. *Social Psychological and Personality
    Science* 8(4), 355–362. Simonsohn, U. (2015). Small telescopes. *Psychological
    Science* 26(5), 559–569.

    Examples
    --------
    >>> d = paired_effect([2.0, 2.1, 1.9], [1.0, 1.0, 1.0], smallest_effect=0.5, basis="stated")
    >>> d.outcome
    'supports'
    """
    from . import evidence

    if not isinstance(basis, str) or not basis.strip():
        raise ValueError("paired_effect needs basis=: how smallest_effect was derived (the paper's effect, or a stated minimum)")
    d = _paired_diffs(a, b, higher_is_better)
    st = evidence.decide(d, smallest_effect=smallest_effect, margin=margin, alpha=alpha, paper_effect=paper_effect)
    ids = _replicate_ids(replicates, d.size)
    st.update(
        diffs=[float(x) for x in d],
        replicates=ids,
        unit=str(unit),
        names=list(names),
        basis=basis,
        higher_is_better=bool(higher_is_better),
        noisy=True,
        exact=False,
    )
    better = "higher" if higher_is_better else "lower"
    conf = 100 * (1 - 2 * st["alpha"])
    rule = (
        f"effect of {names[0]} over {names[1]} ({better} is better), {conf:g}% interval over paired replicates: "
        f"supports above {margin:g}, contradicts below the smallest effect {smallest_effect:g}{unit} ({basis})"
    )
    detail = (
        f"effect {_fmt(st['effect'])}{unit} [{_fmt(st['ci_low'])}, {_fmt(st['ci_high'])}] (n={st['n']}); "
        f"smallest effect {smallest_effect:g}{unit}: {st['outcome']}"
    )
    if st["outcome"] == "inconclusive" and st["n_needed"]:
        detail += f", about {st['n_needed']} replicates in all would decide it"
    if st["smaller_than_paper"]:
        detail += f"; smaller than the paper's {paper_effect:g}{unit}"
    return Decision(st["outcome"] == "supports", rule, detail, st, outcome=st["outcome"])


def paired_better(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    *,
    higher_is_better: bool = True,
    margin: float = 0.0,
    alpha: float = 0.05,
    names: tuple[str, str] = ("A", "B"),
    smallest_effect: float | None = None,
    basis: str = "",
    paper_effect: float | None = None,
    replicates: Sequence[Any] | None = None,
) -> Decision:
    """Is ``a`` better than ``b`` by more than ``margin``, beyond the noise of paired replicates?

    With ``smallest_effect`` (and ``basis``) this is :func:`paired_effect`. Without
    one it can only *support* (the lower bound of the two-sided :math:`1-2\\alpha`
    interval above ``margin``, the one-sided paired t-test at :math:`\\alpha`) or stay
    *inconclusive*: it never contradicts, and a ``paper`` claim refuses it.

    Parameters
    ----------
    a, b : array_like, shape (n,)
        The two methods' figures on the same replicates (seeds, folds, data sets).
    higher_is_better : bool
        Direction of the figure.
    margin : float
        Smallest improvement that counts, fixed in advance (0: any improvement).
    alpha : float
        Significance level of the one-sided test.
    names : (str, str)
        Labels for the detail string.
    smallest_effect, basis, paper_effect, replicates
        As in :func:`paired_effect`.

    Returns
    -------
    Decision
    """
    if smallest_effect is not None:
        return paired_effect(
            a,
            b,
            smallest_effect=smallest_effect,
            basis=basis or "stated",
            paper_effect=paper_effect,
            higher_is_better=higher_is_better,
            margin=margin,
            alpha=alpha,
            names=names,
            replicates=replicates,
        )
    from . import evidence

    d = _paired_diffs(a, b, higher_is_better)
    margin = float(margin)
    st = evidence.decide(d, smallest_effect=max(margin, 0.0), margin=margin, alpha=alpha)
    outcome = "supports" if st["outcome"] == "supports" else "inconclusive"
    st.update(
        outcome=outcome,
        smallest_effect=None,
        n_needed=None,
        diffs=[float(x) for x in d],
        replicates=_replicate_ids(replicates, d.size),
        noisy=True,
        exact=False,
        names=list(names),
    )
    better = "higher" if higher_is_better else "lower"
    n = st["n"]
    rule = f"{names[0]} {better} than {names[1]} by more than {margin:g}: one-sided paired t-test over {n} replicates, p < {st['alpha']:g}"
    detail = (
        f"mean improvement {st['effect']:+.3g} ± {st['sd']:.2g} (sd, n={n}), p = {st['p']:.2g}; "
        f"{names[0]} better in {st['wins']}/{n}"
    )
    return Decision(outcome == "supports", rule, detail, st, outcome=outcome)


def paired_noninferior(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    *,
    margin: float,
    higher_is_better: bool = True,
    alpha: float = 0.05,
    names: tuple[str, str] = ("A", "B"),
    basis: str = "",
    replicates: Sequence[Any] | None = None,
) -> Decision:
    """Is ``a`` no worse than ``b`` by more than ``margin`` (a non-inferiority test)?

    :func:`paired_effect` with margin and smallest effect both :math:`-\\text{margin}`:
    it *supports* when the lower bound of the two-sided :math:`1-2\\alpha` interval of
    the paired difference lies above :math:`-\\text{margin}` (the one-sided lower
    bound), *contradicts* when the upper bound lies below it (``a`` is worse by more
    than the tolerance), and is *inconclusive* otherwise.

    Parameters
    ----------
    a, b : array_like, shape (n,)
        Paired figures.
    margin : float
        The loss that still counts as "no worse", fixed in advance (>= 0).
    higher_is_better, alpha, names, replicates
        As in :func:`paired_effect`.
    basis : str
        Why this tolerance (default: "stated non-inferiority margin").

    Returns
    -------
    Decision
        As :func:`paired_effect`, with ``lower`` (the lower bound) among the stats.
    """
    if isinstance(margin, bool) or not isinstance(margin, (int, float, np.integer, np.floating)) or not margin >= 0:
        raise ValueError(f"margin={margin!r} must be >= 0")
    d = paired_effect(
        a,
        b,
        smallest_effect=-float(margin),
        margin=-float(margin),
        basis=basis or "stated non-inferiority margin",
        higher_is_better=higher_is_better,
        alpha=alpha,
        names=names,
        replicates=replicates,
    )
    d.stats["lower"] = d.stats["ci_low"]
    rule = (
        f"{names[0]} no worse than {names[1]} by more than {margin:g}: two-sided {100 * (1 - 2 * alpha):g}% interval of the "
        f"paired difference over {d.stats['n']} replicates above −{margin:g} (contradicts when wholly below)"
    )
    return Decision(d.holds, rule, d.detail, d.stats, outcome=d.outcome)


def exceeds(value: float, threshold: float, *, rule: str, higher: bool = True, exact: bool = False) -> Decision:
    """A scalar against a threshold fixed before the run: ``value > threshold`` (or ``<``).

    Parameters
    ----------
    value : float
        The measured figure.
    threshold : float
        The threshold, fixed in advance.
    rule : str
        Why this threshold (shown on the scorecard).
    higher : bool
        ``True`` for ``value > threshold``, ``False`` for ``value < threshold``.
    exact : bool
        ``True`` when ``value`` does not vary with the seed (a count, an identity). A
        ``paper`` claim refuses a noisy one: decide a figure that varies with the seed
        with :func:`paired_effect` over its replicates (``b`` the threshold).

    Returns
    -------
    Decision
    """
    value, threshold = float(value), float(threshold)
    if not (np.isfinite(value) and np.isfinite(threshold)):
        raise ValueError(f"exceeds needs finite numbers, got value={value!r}, threshold={threshold!r}")
    holds = value > threshold if higher else value < threshold
    op = ">" if higher else "<"
    return Decision(
        bool(holds),
        rule,
        f"{value:.4g} {op} {threshold:.4g}: {'yes' if holds else 'no'}",
        {"value": value, "threshold": threshold, "exact": bool(exact), "noisy": not exact},
    )


def _check_map(cid: str, what: str, m: Any) -> dict[str, Any]:
    if m is None:
        return {}
    if not isinstance(m, Mapping):
        raise TypeError(f"claim {cid!r}: {what} must be a mapping of names to checks, got {type(m).__name__}")
    out = {}
    for name, v in m.items():
        if isinstance(v, ByConstruction):
            raise ValueError(
                f"claim {cid!r}: {what} {name!r} holds by construction and cannot decide a verdict; pass it in sanity="
            )
        if not isinstance(v, (bool, np.bool_, Decision)):
            raise TypeError(f"claim {cid!r}: {what} {name!r} must be a bool or a Decision, got {type(v).__name__}")
        out[str(name)] = v
    return out


def _decision_record(v: Any) -> dict:
    if isinstance(v, Decision):
        return {"holds": v.holds, "outcome": v.outcome, "rule": v.rule, "detail": v.detail, "stats": v.stats}
    return {"holds": bool(v), "outcome": outcome_of(v), "rule": "", "detail": "yes" if v else "no", "stats": {"exact": True}}


@dataclass
class Claim:
    """One row of a chapter's claim check.

    Parameters
    ----------
    id : str
        Short stable identifier, unique within the chapter (``"gap-headline"``).
    claim : str
        The claim in words.
    kind : {"paper", "derived", "stand-in", "own"}
        What the claim is (see :data:`KINDS`); only ``paper`` claims are reproductions.
    paper : str
        The paper's figure for it, as the paper states it ("—" when it gives none).
    ours : str
        This run's figure, with its spread over seeds where there are seeds.
    checks : dict of str to bool or Decision
        The core checks: the comparison(s) the paper's sentence is about. Each must be
        able to fail: a :class:`ByConstruction` check here raises ``ValueError``. In a
        ``paper`` claim a noisy check is a :func:`paired_effect` with a smallest effect,
        and a bool is accepted only through :func:`exact`.
    guards : dict of str to bool or Decision, optional
        Checks that can lower the verdict, never raise it ("no worse elsewhere").
    control : dict of str to bool or Decision, optional
        Positive controls: the setup can show an effect of the claimed kind (the model
        learns the planted task, every tokenizer beats a constant clip). A failed
        control makes a paper claim *untestable here*, never *not reproduced*.
    paper_value, ours_value : Value, number or sequence, optional
        The same figures as numbers (mean, sd, n, unit), for aggregation over seeds.
    sanity : dict of str to bool or ByConstruction, optional
        Checks shown beside the claim that never decide it (identities, design properties).
    note : str
        Remark on scale and differences from the paper.
    stand_in : str
        What stands in for the paper's data, model or hardware ("" when nothing does).
    revised : str
        A threshold or design changed after a full run had been seen: what changed and
        what the earlier result was. Shown on the scorecard.
    to_test : str
        What would make a setup test this claim where this one cannot (a model size, a
        data set, a training length); shown when the claim reads *untestable here*. Every
        paper claim with a ``control`` or ``untestable`` states it (a book rule test checks).
    untestable : str
        Why the claim cannot differ in this reconstruction by construction ("" when it
        can): the claim then reads *untestable here* whatever its checks say. Paper claims only.
    """

    id: str
    claim: str
    kind: str
    paper: str
    ours: str
    checks: dict[str, Any]
    paper_value: Any = None
    ours_value: Any = None
    sanity: dict[str, Any] = field(default_factory=dict)
    note: str = ""
    stand_in: str = ""
    revised: str = ""
    to_test: str = ""
    untestable: str = ""
    guards: dict[str, Any] = field(default_factory=dict)
    control: dict[str, Any] = field(default_factory=dict)
    verdict: str = field(init=False)
    why: str = field(init=False)
    outcomes: dict[str, str] = field(init=False)
    decisions: dict[str, dict] = field(init=False)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(
                f"claim {self.id!r}: kind={self.kind!r} is not a claim kind; use one of {', '.join(map(repr, KINDS))}"
            )
        if not isinstance(self.checks, Mapping) or not self.checks:
            raise ValueError(f"claim {self.id!r} needs at least one check to derive a verdict from")
        core = _check_map(self.id, "check", self.checks)
        guards = _check_map(self.id, "guard", self.guards)
        control = _check_map(self.id, "control", self.control)
        if self.kind == "paper":
            for name, v in core.items():
                if not isinstance(v, Decision):
                    raise TypeError(
                        f"paper claim {self.id!r}: check {name!r} is a bare bool. Decide a figure that varies with the "
                        "seed with chapter.paired_effect(..., smallest_effect=..., basis=...); mark an exact, "
                        "deterministic check with chapter.exact(value, why=...)"
                    )
                if v.noisy and v.stats.get("smallest_effect") is None:
                    raise ValueError(
                        f"paper claim {self.id!r}: check {name!r} is a noisy comparison without a smallest effect; "
                        "decide it with chapter.paired_effect(..., smallest_effect=..., basis=...)"
                    )
        for name in ("to_test", "untestable"):
            if not isinstance(getattr(self, name), str):
                raise TypeError(f"claim {self.id!r}: {name}= must be a sentence (str), got {type(getattr(self, name)).__name__}")
        self.verdict = verdict(core, self.kind, guards=guards, control=control, untestable=self.untestable)
        self.why = verdict_reason(core, guards=guards, control=control, untestable=self.untestable, to_test=self.to_test)
        self.outcomes = {k: outcome_of(v) for k, v in core.items()}
        self.decisions = {k: _decision_record(v) for k, v in core.items() if isinstance(v, Decision)}
        self.checks = {k: bool(v) for k, v in core.items()}
        self.guards = {k: _decision_record(v) for k, v in guards.items()}
        self.control = {k: _decision_record(v) for k, v in control.items()}
        self.sanity = {str(k): bool(v) for k, v in self.sanity.items()}
        self.paper_value = _as_value(self.paper_value, "paper_value")
        self.ours_value = _as_value(self.ours_value, "ours_value")


def mean_sd(values: Sequence[float] | np.ndarray, *, pct: bool = False, digits: int = 3) -> str:
    """Format ``values`` as ``"mean ± sd (n=k)"`` (sd with ``ddof=1``); ``pct`` prints percents."""
    v = np.asarray(values, dtype=float).ravel()
    if v.size == 0:
        raise ValueError("mean_sd needs at least one value")
    scale = 100.0 if pct else 1.0
    unit = "%" if pct else ""
    m = scale * v.mean()
    if v.size == 1:
        return f"{m:.{digits}g}{unit}"
    s = scale * v.std(ddof=1)
    return f"{m:.{digits}g}{unit} ± {s:.2g}{unit} (n={v.size})"


def repo_root() -> Path | None:
    """The source checkout this package is installed from (editable install), if any."""
    here = Path(__file__).resolve()
    root = here.parents[2]
    return root if (root / "pyproject.toml").exists() and (root / "book").is_dir() else None


def results_dir() -> Path:
    """Where claim records go: ``$ICML26_RESULTS_DIR``, else ``<book>/_build/results``, else ``./_results``.

    ``<book>`` is the nearest folder at or above the current one that holds ``_toc.yml``
    and ``book/`` (a chapter runs in its own folder), else the checkout this package is
    installed from.
    """
    env = os.environ.get("ICML26_RESULTS_DIR")
    if env:
        return Path(env)
    here = Path.cwd().resolve()
    for d in (here, *here.parents):
        if (d / "_toc.yml").is_file() and (d / "book").is_dir():
            return d / "_build" / "results"
    root = repo_root()
    return (root / "_build" / "results") if root else Path.cwd() / "_results"


def records_dir(chapter: str, scale: str, seed: int) -> Path:
    """The folder of a chapter's claim records for this run.

    Under ``python -m icml26 run`` (``$ICML26_RUN_KEY`` set) it is
    ``results_dir()/<scale>/<chapter>``, the folder the scorecard reads. Any other run
    (papermill or Jupyter by hand) writes to ``results_dir()/manual/<scale>/seed-<seed>/<chapter>``,
    so that it never overwrites, nor mixes with, the records of the runner's runs. A run
    on a device other than the CPU (``$ICML26_DEVICE``, set by :func:`setup`) writes
    under ``results_dir()/device-<device>/`` instead, apart from the CPU records the book shows.
    """
    device = os.environ.get("ICML26_DEVICE", "cpu")
    base = results_dir() if device == "cpu" else results_dir() / f"device-{device}"
    if os.environ.get("ICML26_RUN_KEY"):
        return base / scale / chapter
    return base / "manual" / scale / f"seed-{check_seed(seed)}" / chapter


def record_claims(
    chapter: str,
    claims: Sequence[Claim],
    *,
    scale: str,
    seed: int,
    part: str = "main",
    extra: Mapping[str, Any] | None = None,
):
    """Write a chapter's claim rows as JSON for the scorecard and return them as a table.

    The file is ``records_dir(chapter, scale, seed)/<part>.json``. It names the scale,
    the seed and, when the runner executed the chapter, the run's cache key
    (``$ICML26_RUN_KEY``); records made outside the runner go to a folder of their own,
    keyed by scale and seed, so they are never mixed with the runner's.

    Returns
    -------
    pandas.DataFrame
        One row per claim: kind, claim, paper, this run, verdict, how it was decided,
        stand-in and note ("—" where empty).
    """
    import pandas as pd

    check_scale(scale)
    if not claims:
        raise ValueError("record_claims needs at least one Claim")
    bad = [type(c).__name__ for c in claims if not isinstance(c, Claim)]
    if bad:
        raise TypeError(f"record_claims takes Claim rows, got {', '.join(bad)}")
    ids = [c.id for c in claims]
    if len(set(ids)) != len(ids):
        raise ValueError(f"claim ids must be unique within a chapter, got {ids}")
    payload = {
        "chapter": chapter,
        "part": part,
        "scale": scale,
        "seed": check_seed(seed),
        "run_key": os.environ.get("ICML26_RUN_KEY", ""),
        "python": platform.python_version(),
        "device": os.environ.get("ICML26_DEVICE", "cpu"),
        "claims": [asdict(c) for c in claims],
        "extra": dict(extra or {}),
    }
    out = records_dir(chapter, scale, seed)
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / f".{part}.json.tmp"
    tmp.write_text(json.dumps(payload, indent=2, default=_jsonable))
    tmp.replace(out / f"{part}.json")
    _show_forest(chapter, json.loads(json.dumps(payload["claims"], default=_jsonable)))
    rows = []
    for c in claims:
        decided = "; ".join(f"{k}: {c.decisions[k]['detail'] if k in c.decisions else c.outcomes[k]}" for k in c.outcomes)
        extra_checks = [("control", c.control), ("guard", c.guards)]
        for what, m in extra_checks:
            if m:
                decided += "; " + "; ".join(f"{what} {k}: {d['outcome']} ({d['detail']})" for k, d in m.items())
        rows.append(
            {
                "kind": c.kind,
                "claim": c.claim,
                "paper": c.paper or "—",
                "this run": c.ours or "—",
                "verdict": c.verdict + (f" ({c.why})" if c.why else ""),
                "decided by": decided,
                "stand-in": c.stand_in or "—",
                "note": (c.note + (f" Revised after a result: {c.revised}" if c.revised else "")).strip() or "—",
            }
        )
    return pd.DataFrame(rows, index=pd.Index(ids, name="claim id"))


def _show_forest(chapter: str, claims: list[dict]) -> None:
    """Inside a notebook, draw the chapter's paper claims on the book's forest-plot axis."""
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:  # pragma: no cover
        return
    if get_ipython() is None:
        return
    from .forest import forest_figure, forest_rows

    fig = forest_figure(forest_rows(claims), title=f"{chapter}: paper claims, effect with its 90% interval, by verdict")
    if fig is not None:
        import matplotlib.pyplot as plt

        display(fig)
        plt.close(fig)


def say(text: str) -> None:
    """Show result prose as rendered Markdown.

    A sentence that states a result is written from the computed values, e.g.
    ``chapter.say(f"ST-BCP cuts the gap by {cut:.0%}.")``, never typed by hand: the
    book's lint flags digits in the prose of the experiment sections.
    """
    if not isinstance(text, str):
        raise TypeError(f"say takes a str, got {type(text).__name__}")
    try:
        from IPython.display import Markdown, display

        display(Markdown(text))
    except ImportError:  # pragma: no cover - IPython comes with the notebook stack
        print(text)


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    return str(obj)
