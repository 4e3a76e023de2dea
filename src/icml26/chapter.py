"""What every chapter notebook uses: scale checking, seeding, claim records.

A chapter's ``parameters`` cell sets ``scale`` and ``seed``; the next cell calls
:func:`setup` which validates them and seeds every generator. At the end the
chapter builds a list of :class:`Claim` rows and calls :func:`record_claims`,
which shows them as a table and writes them as JSON for the book's scorecard.

A claim's verdict is never typed: it is derived from named boolean checks that
the chapter computes from its own measurements (:func:`verdict`).
"""

from __future__ import annotations

import json
import os
import platform
import random
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence, TypeVar

import numpy as np

SCALES: tuple[str, ...] = ("ci", "full")
VERDICTS: tuple[str, ...] = ("reproduced", "partly reproduced", "not reproduced")

T = TypeVar("T")


def check_scale(scale: str) -> str:
    """Return ``scale`` if it is one of :data:`SCALES`, else raise ``ValueError``.

    >>> check_scale("ci")
    'ci'
    """
    if scale not in SCALES:
        raise ValueError(f"scale={scale!r} is not a valid scale; use one of {', '.join(map(repr, SCALES))}")
    return scale


def check_seed(seed: Any) -> int:
    """Return ``seed`` as an int if it is a non-negative integer, else raise ``ValueError``."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed={seed!r} is not valid; use a non-negative integer")
    return int(seed)


def by_scale(scale: str, *, ci: T, full: T) -> T:
    """Pick the value for ``scale`` (validated): ``by_scale("ci", ci=100, full=500) == 100``."""
    return ci if check_scale(scale) == "ci" else full


def seed_everything(seed: int) -> np.random.Generator:
    """Seed Python's, NumPy's and (if installed) torch's generators; return a fresh ``Generator``."""
    seed = check_seed(seed)
    random.seed(seed)
    np.random.seed(seed % 2**32)
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


def verdict(checks: Mapping[str, bool]) -> str:
    """Verdict from named checks: all hold -> reproduced, none -> not reproduced, else partly.

    >>> verdict({"a": True, "b": False})
    'partly reproduced'
    """
    if not checks:
        raise ValueError("a claim needs at least one check to derive a verdict from")
    values = [bool(v) for v in checks.values()]
    if all(values):
        return "reproduced"
    if not any(values):
        return "not reproduced"
    return "partly reproduced"


@dataclass
class Claim:
    """One row of a chapter's claim check.

    Parameters
    ----------
    id : str
        Short stable identifier, unique within the chapter (``"gap-headline"``).
    claim : str
        The claim in words.
    paper : str
        The paper's figure for it, as the paper states it.
    ours : str
        This run's figure, with its spread over seeds where there are seeds.
    checks : dict of str to bool
        Named conditions computed from this run's numbers; the verdict follows from them.
    note : str
        Optional remark (scale, stand-in, why it differs).
    """

    id: str
    claim: str
    paper: str
    ours: str
    checks: dict[str, bool]
    note: str = ""
    verdict: str = field(init=False)

    def __post_init__(self) -> None:
        self.checks = {str(k): bool(v) for k, v in self.checks.items()}
        self.verdict = verdict(self.checks)


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
    """Where claim records go: ``$ICML26_RESULTS_DIR``, else ``<repo>/_build/results``, else ``./_results``."""
    env = os.environ.get("ICML26_RESULTS_DIR")
    if env:
        return Path(env)
    root = repo_root()
    return (root / "_build" / "results") if root else Path.cwd() / "_results"


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

    The file is ``results_dir()/<scale>/<chapter>/<part>.json``.

    Returns
    -------
    pandas.DataFrame
        One row per claim: claim, paper, this run, verdict (and note).
    """
    import pandas as pd

    check_scale(scale)
    if not claims:
        raise ValueError("record_claims needs at least one Claim")
    ids = [c.id for c in claims]
    if len(set(ids)) != len(ids):
        raise ValueError(f"claim ids must be unique within a chapter, got {ids}")
    payload = {
        "chapter": chapter,
        "part": part,
        "scale": scale,
        "seed": check_seed(seed),
        "python": platform.python_version(),
        "claims": [asdict(c) for c in claims],
        "extra": dict(extra or {}),
    }
    out = results_dir() / scale / chapter
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{part}.json").write_text(json.dumps(payload, indent=2, default=_jsonable))
    table = pd.DataFrame(
        [{"claim": c.claim, "paper": c.paper, "this run": c.ours, "verdict": c.verdict, "note": c.note} for c in claims],
        index=pd.Index(ids, name="id"),
    )
    return table


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    return str(obj)
