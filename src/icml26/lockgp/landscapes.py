"""Protein property landscapes: the data record, seeded synthetic landscapes, a CSV loader.

:class:`Landscape` (aligned sequences and one value each), :func:`make_landscape`
(seeded multi-mutant landscapes whose amino-acid effects follow BLOSUM correlations, with
a control in which they do not) and :func:`load_landscape` (a user's CSV file; never
downloads).

References
----------
M. Jankowiak et al., "Flexible Kernels for Protein Property Prediction", ICML 2026,
arXiv:2606.11057; authors' code: https://github.com/generatebio/lock_gp.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .._common import check_random_state
from ._checks import _check_int, _check_nonneg
from .encoding import encode_indices
from .substitution import ALPHABET, AMINO_ACIDS, blosum50, blosum_embedding

__all__ = ["Landscape", "make_landscape", "load_landscape"]


@dataclass
class Landscape:
    """A protein property landscape: aligned sequences and one value each.

    Parameters
    ----------
    sequences : list of str
        Aligned sequences of one length.
    y : array_like, shape (N,)
        Finite property values.
    name : str
        Label.
    info : dict
        Generator details.

    References
    ----------
    The data of Jankowiak et al., ICML 2026, arXiv:2606.11057 (code: https://github.com/generatebio/lock_gp).
    """

    sequences: list[str]
    y: np.ndarray
    name: str = ""
    info: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if isinstance(self.sequences, str) or not all(isinstance(q, str) for q in self.sequences):
            raise TypeError("sequences must be a list of str")
        self.sequences = list(self.sequences)
        try:
            self.y = np.asarray(self.y, dtype=float)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"y must be numeric ({exc})") from None
        if self.y.ndim != 1:
            raise ValueError(f"y must be 1-D, got shape {self.y.shape}")
        if not np.all(np.isfinite(self.y)):
            raise ValueError("y must be finite (found NaN or inf)")
        if len(self.sequences) != self.y.shape[0]:
            raise ValueError(f"{len(self.sequences)} sequences but {self.y.shape[0]} values")


def _blosum_correlation_embedding() -> np.ndarray:
    """Unit-norm rows of the PSD part of BLOSUM50 on the 20 amino acids, shape (20, 20)."""
    E = blosum_embedding(blosum50(AMINO_ACIDS))
    return E / np.linalg.norm(E, axis=1, keepdims=True)


def make_landscape(
    n_variants: int,
    kind: str = "blosum",
    length: int = 24,
    max_mutations: int = 6,
    n_pairs: int = 8,
    epistasis: float = 0.3,
    noise: float = 0.1,
    random_state: int | np.random.Generator | None = 0,
) -> Landscape:
    r"""Seeded synthetic landscape of multi-mutants around a random wild type.

    Each variant carries ``k ~ U{1..max_mutations}`` substitutions at distinct positions,
    to amino acids drawn uniformly from the 19 non-wild-type ones. Its property is

    .. math::

        z(x) = \sum_l w_l\,[\phi_l(x_l) - \phi_l(\mathrm{wt}_l)]
              + \sum_{(l,l')} J_{ll'}\,\Delta_l(x_l)\,\Delta_{l'}(x_{l'}), \qquad
        y = \sigma\!\Big(\frac{z - \operatorname{med} z}{\operatorname{sd} z}\Big) + \varepsilon,

    with position weights :math:`w_l = e^{0.5\,\xi_l}`, ``n_pairs`` epistatic pairs
    (:math:`J \sim \mathcal N(0,` ``epistasis``:math:`^2)`, :math:`\Delta_l` the single-site
    term), a global sigmoid, and Gaussian noise of sd ``noise`` times the sd of the clean
    signal. The amino-acid effects :math:`\phi_l = E\,u_l`, :math:`u_l \sim \mathcal N(0, I_{20})`:

    - ``kind="blosum"``: :math:`E` has the unit-normalised rows of the BLOSUM50 eigen-embedding,
      so :math:`\operatorname{Cov}\phi_l(a),\phi_l(b)` is the BLOSUM correlation of ``a`` and
      ``b`` -- substitution similarity carries signal;
    - ``kind="control"``: :math:`E = I` -- i.i.d. effects, BLOSUM carries none.

    The two kinds use the same random numbers (same wild type, variants, weights, pairs,
    noise, and the same :math:`u_l`), so they differ only in the correlation of the effects.

    Parameters
    ----------
    n_variants : int >= 2
        Number of distinct variants.
    kind : {"blosum", "control"}
        Whether the effects follow BLOSUM correlations.
    length : int >= 1
        Sequence length L.
    max_mutations : int in [1, length]
        Most substitutions per variant.
    n_pairs : int >= 0
        Epistatic pairs (needs length >= 2 when > 0).
    epistasis, noise : float >= 0
        Pair-coupling sd and relative noise sd.
    random_state : int, numpy.random.Generator or None
        Seed or generator.

    Returns
    -------
    Landscape
        ``info`` holds the wild type, weights, effects, pairs and ``r2_ceiling``
        (the share of variance not due to noise).

    References
    ----------
    Our synthetic stand-in for the landscapes of Jankowiak et al., ICML 2026, arXiv:2606.11057
    (code: https://github.com/generatebio/lock_gp).
    """
    if kind not in ("blosum", "control"):
        raise ValueError(f"kind={kind!r}; use 'blosum' or 'control'")
    n_variants = _check_int(n_variants, "n_variants", minimum=2)
    length = _check_int(length, "length")
    max_mutations = _check_int(max_mutations, "max_mutations")
    if max_mutations > length:
        raise ValueError(f"max_mutations={max_mutations!r} must be in [1, length={length}]")
    n_pairs = _check_int(n_pairs, "n_pairs", minimum=0)
    if n_pairs > 0 and length < 2:
        raise ValueError(f"n_pairs={n_pairs} epistatic pairs need length >= 2, got length={length}")
    noise, epistasis = _check_nonneg(noise, "noise"), _check_nonneg(epistasis, "epistasis")
    rng = check_random_state(random_state)
    L, n = int(length), int(n_variants)
    wt = rng.integers(0, 20, size=L)  # (L,)
    w = np.exp(0.5 * rng.standard_normal(L))  # (L,)
    u = rng.standard_normal((L, 20))  # (L, 20)
    pairs = np.array([rng.choice(L, size=2, replace=False) for _ in range(n_pairs)]).reshape(-1, 2)
    J = epistasis * rng.standard_normal(len(pairs))
    # Variants: oversample, keep the first n distinct ones in generation order.
    m = 2 * n + 64
    k = rng.integers(1, max_mutations + 1, size=m)  # (m,)
    ranks = np.argsort(np.argsort(rng.random((m, L)), axis=1), axis=1)  # random rank of each position
    mutated = ranks < k[:, None]  # (m, L): k distinct positions per variant
    shift = rng.integers(1, 20, size=(m, L))  # non-zero shift -> a different amino acid
    X = np.where(mutated, (wt[None, :] + shift) % 20, wt[None, :])  # (m, L)
    _, first = np.unique(X, axis=0, return_index=True)
    keep = np.sort(first)[:n]
    if keep.size < n:
        raise ValueError(f"could only draw {keep.size} distinct variants; lower n_variants or raise length")
    X = X[keep]  # (n, L)
    eps = rng.standard_normal(n)

    E = _blosum_correlation_embedding() if kind == "blosum" else np.eye(20)
    phi = u @ E.T  # (L, 20): phi[l, a] = <u_l, E_a>
    effect = w[:, None] * (phi - phi[np.arange(L), wt][:, None])  # (L, 20), zero at the wild type
    pos = np.arange(L)
    delta = effect[pos[None, :], X]  # (n, L) single-site terms
    z = delta.sum(1) + (J[None, :] * delta[:, pairs[:, 0]] * delta[:, pairs[:, 1]]).sum(1)
    s = z.std()
    clean = 1.0 / (1.0 + np.exp(-(z - np.median(z)) / (s if s > 0 else 1.0)))
    y = clean + noise * clean.std() * eps
    letters = np.array(list(AMINO_ACIDS))
    seqs = ["".join(r) for r in letters[X]]
    return Landscape(
        sequences=seqs,
        y=y,
        name=f"synthetic-{kind}",
        info={
            "kind": kind,
            "wild_type": "".join(letters[wt]),
            "weights": w,
            "effects": effect,
            "pairs": pairs,
            "J": J,
            "n_mutations": mutated[keep].sum(1),
            "r2_ceiling": float(clean.var() / y.var()) if y.var() > 0 else 1.0,
        },
    )


def load_landscape(
    path: str | Path, sequence_col: str = "sequence", value_col: str = "fitness", alphabet: str = ALPHABET
) -> Landscape:
    """Read a landscape the user supplies as CSV (e.g. the authors' ``cr6261_h1.csv``); never downloads.

    Parameters
    ----------
    path : str or Path
        CSV file with a column of aligned sequences and a column of values.
    sequence_col, value_col : str
        Column names (defaults match the authors' demo file).

    alphabet : str
        Allowed tokens.

    Returns
    -------
    Landscape

    Raises
    ------
    FileNotFoundError
        No such file.
    ValueError
        A missing column (names the ones present), a missing or non-numeric value, or a bad
        sequence (see :func:`encode_indices`).
    TypeError
        ``path`` is not a str or path.

    References
    ----------
    M. Jankowiak et al., "Flexible Kernels for Protein Property Prediction", ICML 2026,
    arXiv:2606.11057 (the demo file ``cr6261_h1.csv``); authors' code: https://github.com/generatebio/lock_gp.
    """
    import pandas as pd

    if not isinstance(path, (str, Path)):
        raise TypeError(f"path must be a str or pathlib.Path, got {type(path).__name__}")
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no landscape file at {path}; this loader reads a local CSV and never downloads")
    try:
        df = pd.read_csv(path)
    except (pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path.name} is not a readable CSV file: {exc}") from None
    if len(df) < 1:
        raise ValueError(f"{path.name} has no data rows")
    for col in (sequence_col, value_col):
        if col not in df.columns:
            raise ValueError(f"column {col!r} not in {path.name}; columns are {list(df.columns)}")
    y = pd.to_numeric(df[value_col], errors="coerce").to_numpy(dtype=float)
    if not np.all(np.isfinite(y)):
        bad = int(np.flatnonzero(~np.isfinite(y))[0])
        raise ValueError(f"row {bad} of column {value_col!r} is missing or not a number")
    seqs = df[sequence_col].astype(str).tolist()
    encode_indices(seqs, alphabet)  # validates length and alphabet
    return Landscape(sequences=seqs, y=y, name=path.stem, info={"path": str(path)})
