"""What every chapter notebook uses: scale checking, seeding, claims and their decision rules.

A chapter's ``parameters`` cell sets ``scale`` and ``seed``; the next cell calls
:func:`setup` which validates them and seeds every generator. At the end the
chapter builds a list of :class:`Claim` rows and calls :func:`record_claims`,
which shows them as a table and writes them as JSON for the book's scorecard.

A claim's verdict is never typed: it is derived from named checks that the chapter
computes from its own measurements (:func:`verdict`). Each claim says what kind of
claim it is (:data:`KINDS`); comparisons are decided by rules fixed before the run
(:func:`paired_better`, :func:`paired_noninferior`, :func:`exceeds`), and checks that
hold by construction (:class:`ByConstruction`) are shown but never decide. Result
prose is generated from computed values with :func:`say`.
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


def by_scale(scale: str, *, ci: T, full: T) -> T:
    """Pick the value for ``scale`` (validated): ``by_scale("ci", ci=100, full=500) == 100``."""
    return ci if check_scale(scale) == "ci" else full


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


def setup(scale: str, seed: int, *, torch_threads: int | None = None) -> np.random.Generator:
    """Validate the chapter parameters, seed all generators and set the plotting style.

    Parameters
    ----------
    scale : {"ci", "full"}
        Run size. Anything else raises ``ValueError`` naming the valid values.
    seed : int
        Non-negative seed for every random generator.
    torch_threads : int, optional
        If given, ``torch.set_num_threads(torch_threads)``; chapters run two at a
        time on two cores, so 1 is a good value for small models.

    Returns
    -------
    numpy.random.Generator
        A generator seeded with ``seed``.
    """
    check_scale(scale)
    rng = seed_everything(seed)
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
    "paper": ("reproduced", "partly reproduced", "not reproduced"),
    "derived": ("verified", "fails"),
    "stand-in": ("illustrates", "does not illustrate"),
    "own": ("holds", "fails"),
}


def verdict(checks: Mapping[str, Any], kind: str = "paper") -> str:
    """Verdict of a claim of ``kind`` from its named decision checks.

    A ``paper`` claim is *reproduced* when every check holds, *not reproduced* when
    none does and *partly reproduced* in between. The other kinds have two words:
    all checks hold (*verified*, *illustrates*, *holds*) or not (*fails*,
    *does not illustrate*).

    Parameters
    ----------
    checks : mapping of str to bool or Decision
        The checks that decide the claim; each could have gone either way.
    kind : {"paper", "derived", "stand-in", "own"}
        The claim's kind (see :data:`KINDS`).

    Returns
    -------
    str
        One of ``VERDICTS_BY_KIND[kind]``.

    >>> verdict({"a": True, "b": False})
    'partly reproduced'
    >>> verdict({"a": True}, kind="derived")
    'verified'
    """
    if kind not in VERDICTS_BY_KIND:
        raise ValueError(f"kind={kind!r} is not a claim kind; use one of {', '.join(map(repr, KINDS))}")
    if not checks:
        raise ValueError("a claim needs at least one check to derive a verdict from")
    values = [bool(v) for v in checks.values()]
    words = VERDICTS_BY_KIND[kind]
    if kind != "paper":
        return words[0] if all(values) else words[1]
    if all(values):
        return words[0]
    if not any(values):
        return words[2]
    return words[1]


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
        Whether the rule's condition held.
    rule : str
        The rule in words, as fixed before the run.
    detail : str
        The numbers that decided it (difference, spread, n, p-value, wins).
    stats : dict
        The same numbers as numbers.
    """

    holds: bool
    rule: str
    detail: str
    stats: dict = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.holds)


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
        return cls(mean=float(v.mean()), sd=sd, n=int(v.size), unit=str(unit), values=tuple(float(x) for x in v) if v.size > 1 else None)


def _as_value(x: Any, name: str) -> Value | None:
    if x is None or isinstance(x, Value):
        return x
    if isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool):
        return Value.of(float(x))
    if isinstance(x, (list, tuple, np.ndarray)):
        return Value.of(x)
    raise TypeError(f"{name} must be a Value, a number or a sequence of numbers, got {type(x).__name__}")


def _t_sf(t: float, df: int) -> float:
    from scipy import stats

    return float(stats.t.sf(t, df))


def _paired_diffs(a: Any, b: Any, higher_is_better: bool) -> np.ndarray:
    a = np.asarray(a, dtype=float).ravel()
    b = np.asarray(b, dtype=float).ravel()
    if a.shape != b.shape:
        raise ValueError(f"paired comparison needs equal lengths, got {a.size} and {b.size}")
    if a.size < 2:
        raise ValueError(f"paired comparison needs at least 2 pairs, got {a.size}")
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise ValueError("paired comparison needs finite values")
    return (a - b) if higher_is_better else (b - a)


def paired_better(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    *,
    higher_is_better: bool = True,
    margin: float = 0.0,
    alpha: float = 0.05,
    names: tuple[str, str] = ("A", "B"),
) -> Decision:
    """Is ``a`` better than ``b`` by more than ``margin``, beyond the noise of paired replicates?

    Rule (fixed before the run): with paired differences :math:`d_i = a_i - b_i` (sign
    flipped when lower is better) over the replicates, the claim holds when the one-sided
    paired t-test of :math:`\\bar d > \\text{margin}` has :math:`p < \\alpha`. With every
    :math:`d_i` equal the test is degenerate, and it holds when that common value
    exceeds the margin.

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

    Returns
    -------
    Decision
        ``holds``, the rule, and the numbers (mean and sd of the differences, n,
        t, p, wins).
    """
    d = _paired_diffs(a, b, higher_is_better)
    if not 0 < alpha < 1:
        raise ValueError(f"alpha={alpha!r} must lie in (0, 1)")
    n = d.size
    mean, sd = float(d.mean()), float(d.std(ddof=1))
    wins = int((d > 0).sum())
    if sd == 0.0:
        t, p = (np.inf if mean > margin else -np.inf), (0.0 if mean > margin else 1.0)
    else:
        t = (mean - margin) / (sd / np.sqrt(n))
        p = _t_sf(t, n - 1)
    holds = bool(p < alpha)
    better = "higher" if higher_is_better else "lower"
    rule = f"{names[0]} {better} than {names[1]} by more than {margin:g}: one-sided paired t-test over {n} replicates, p < {alpha:g}"
    detail = f"mean improvement {mean:+.3g} ± {sd:.2g} (sd, n={n}), p = {p:.2g}; {names[0]} better in {wins}/{n}"
    return Decision(holds, rule, detail, {"mean": mean, "sd": sd, "n": n, "t": float(t), "p": float(p), "wins": wins, "margin": margin})


def paired_noninferior(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    *,
    margin: float,
    higher_is_better: bool = True,
    alpha: float = 0.05,
    names: tuple[str, str] = ("A", "B"),
) -> Decision:
    """Is ``a`` no worse than ``b`` by more than ``margin`` (a non-inferiority test)?

    Rule (fixed before the run): with paired differences :math:`d_i` as in
    :func:`paired_better`, the claim holds when the one-sided :math:`1-\\alpha` lower
    confidence bound of :math:`\\bar d` lies above :math:`-\\text{margin}`.

    Parameters
    ----------
    a, b : array_like, shape (n,)
        Paired figures.
    margin : float
        The loss that still counts as "no worse", fixed in advance (>= 0).
    higher_is_better, alpha, names
        As in :func:`paired_better`.

    Returns
    -------
    Decision
    """
    if margin < 0:
        raise ValueError(f"margin={margin!r} must be >= 0")
    d = _paired_diffs(a, b, higher_is_better)
    if not 0 < alpha < 1:
        raise ValueError(f"alpha={alpha!r} must lie in (0, 1)")
    from scipy import stats

    n = d.size
    mean, sd = float(d.mean()), float(d.std(ddof=1))
    lower = mean - float(stats.t.ppf(1 - alpha, n - 1)) * sd / np.sqrt(n)
    holds = bool(lower > -margin)
    rule = f"{names[0]} no worse than {names[1]} by more than {margin:g}: one-sided {100 * (1 - alpha):g}% lower bound of the paired difference over {n} replicates > −{margin:g}"
    detail = f"mean difference {mean:+.3g} ± {sd:.2g} (sd, n={n}); lower bound {lower:+.3g}"
    return Decision(holds, rule, detail, {"mean": mean, "sd": sd, "n": n, "lower": lower, "margin": margin})


def exceeds(value: float, threshold: float, *, rule: str, higher: bool = True) -> Decision:
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

    Returns
    -------
    Decision
    """
    value, threshold = float(value), float(threshold)
    if not (np.isfinite(value) and np.isfinite(threshold)):
        raise ValueError(f"exceeds needs finite numbers, got value={value!r}, threshold={threshold!r}")
    holds = value > threshold if higher else value < threshold
    op = ">" if higher else "<"
    return Decision(bool(holds), rule, f"{value:.4g} {op} {threshold:.4g}: {'yes' if holds else 'no'}", {"value": value, "threshold": threshold})


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
        The conditions that decide the verdict. Each must be able to fail: a
        :class:`ByConstruction` check here raises ``ValueError``.
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
    verdict: str = field(init=False)
    decisions: dict[str, dict] = field(init=False)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"claim {self.id!r}: kind={self.kind!r} is not a claim kind; use one of {', '.join(map(repr, KINDS))}")
        if not isinstance(self.checks, Mapping) or not self.checks:
            raise ValueError(f"claim {self.id!r} needs at least one check to derive a verdict from")
        decisions: dict[str, dict] = {}
        checks: dict[str, bool] = {}
        for name, v in self.checks.items():
            if isinstance(v, ByConstruction):
                raise ValueError(
                    f"claim {self.id!r}: check {name!r} holds by construction and cannot decide a verdict; pass it in sanity="
                )
            if isinstance(v, Decision):
                decisions[str(name)] = {"holds": v.holds, "rule": v.rule, "detail": v.detail, "stats": v.stats}
            elif not isinstance(v, (bool, np.bool_)):
                raise TypeError(f"claim {self.id!r}: check {name!r} must be a bool or a Decision, got {type(v).__name__}")
            checks[str(name)] = bool(v)
        self.checks = checks
        self.decisions = decisions
        self.sanity = {str(k): bool(v) for k, v in self.sanity.items()}
        self.paper_value = _as_value(self.paper_value, "paper_value")
        self.ours_value = _as_value(self.ours_value, "ours_value")
        self.verdict = verdict(self.checks, self.kind)


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
    so that it never overwrites, nor mixes with, the records of the runner's runs.
    """
    if os.environ.get("ICML26_RUN_KEY"):
        return results_dir() / scale / chapter
    return results_dir() / "manual" / scale / f"seed-{check_seed(seed)}" / chapter


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
        "claims": [asdict(c) for c in claims],
        "extra": dict(extra or {}),
    }
    out = records_dir(chapter, scale, seed)
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / f".{part}.json.tmp"
    tmp.write_text(json.dumps(payload, indent=2, default=_jsonable))
    tmp.replace(out / f"{part}.json")
    rows = []
    for c in claims:
        decided = "; ".join(f"{k}: {d['detail']}" for k, d in c.decisions.items()) or "; ".join(
            f"{k}: {'yes' if v else 'no'}" for k, v in c.checks.items()
        )
        rows.append(
            {
                "kind": c.kind,
                "claim": c.claim,
                "paper": c.paper or "—",
                "this run": c.ours or "—",
                "verdict": c.verdict,
                "decided by": decided,
                "stand-in": c.stand_in or "—",
                "note": (c.note + (f" Revised after a result: {c.revised}" if c.revised else "")).strip() or "—",
            }
        )
    return pd.DataFrame(rows, index=pd.Index(ids, name="claim id"))


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
