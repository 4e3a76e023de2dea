"""The alphabet and the BLOSUM50 substitution-matrix machinery of LOCK.

:data:`AMINO_ACIDS`, :data:`ALPHABET` (the 21 tokens ``ARNDCQEGHILKMFPSTWYV-``),
:func:`blosum50` (Biopython's table), :func:`normalize_substitution_matrix` (the
authors' normalisation), :func:`correlation_matrix` (the Hadamard power
:math:`C_\\gamma = \\exp(\\gamma\\tilde B)`) and :func:`blosum_embedding` (the
eigen-embedding of the Tanimoto baseline).

References
----------
M. Jankowiak et al., "Flexible Kernels for Protein Property Prediction", ICML 2026,
arXiv:2606.11057; authors' code: https://github.com/generatebio/lock_gp.
"""

from __future__ import annotations

import numpy as np

from ._checks import _check_nonneg, _square_matrix

__all__ = [
    "ALPHABET",
    "AMINO_ACIDS",
    "blosum50",
    "normalize_substitution_matrix",
    "correlation_matrix",
    "blosum_embedding",
]


#: The 20 canonical amino acids in the order of the authors' code (and of BLOSUM tables).
AMINO_ACIDS: str = "ARNDCQEGHILKMFPSTWYV"
#: The kernels' alphabet: the 20 amino acids plus the gap token ``-`` (A = 21).
ALPHABET: str = AMINO_ACIDS + "-"


def blosum50(alphabet: str = ALPHABET) -> np.ndarray:
    """BLOSUM50 log-odds scores on ``alphabet``, from Biopython.

    The gap token ``-`` takes Biopython's ``*`` row (score -5 against every amino acid,
    +1 against itself), which is exactly the gap row of the authors' table.

    Parameters
    ----------
    alphabet : str
        Tokens to index the matrix by; each must be one of ``ARNDCQEGHILKMFPSTWYV-``.

    Returns
    -------
    numpy.ndarray, shape (A, A)
        Integer-valued (float64) symmetric matrix ``B[a, b]``.

    References
    ----------
    S. Henikoff, J. G. Henikoff, PNAS 89 (1992); as used by Jankowiak et al., ICML 2026,
    arXiv:2606.11057, Sec. 3 (code: https://github.com/generatebio/lock_gp).
    """
    from Bio.Align import substitution_matrices

    _check_alphabet(alphabet)
    table = substitution_matrices.load("BLOSUM50")
    keys = ["*" if a == "-" else a for a in alphabet]
    return np.array([[float(table[a][b]) for b in keys] for a in keys])


def _check_alphabet(alphabet: str) -> None:
    if not isinstance(alphabet, str) or not alphabet:
        raise TypeError(f"alphabet must be a non-empty str of tokens, got {alphabet!r}")
    bad = sorted(set(alphabet) - set(ALPHABET))
    if bad:
        raise ValueError(f"alphabet has token(s) {bad} not in BLOSUM50; allowed tokens are {ALPHABET!r}")
    if len(set(alphabet)) != len(alphabet):
        raise ValueError(f"alphabet={alphabet!r} repeats a token")


def normalize_substitution_matrix(B: np.ndarray, target: float = 0.25) -> np.ndarray:
    r"""The authors' normalisation of a log-odds substitution matrix.

    .. math::

        S_{ab} = B_{ab} - \tfrac12 (B_{aa} + B_{bb}), \qquad
        \tilde B = S \cdot \frac{t}{|\operatorname{median}_{a,b} S_{ab}|},

    with :math:`t` = ``target`` (0.25 in the paper's code); the median runs over all
    :math:`A^2` entries, diagonal zeros included. Hence :math:`\tilde B_{aa} = 0` and
    :math:`C_\gamma = \exp(\gamma \tilde B)` has a unit diagonal (Jankowiak et al. 2026,
    Sec. 3; ``get_blosum50_matrix(normalize=True)`` in the released code).

    Parameters
    ----------
    B : array_like, shape (A, A)
        Symmetric log-odds matrix.
    target : float
        Absolute value the median entry is scaled to; must be positive.

    Returns
    -------
    numpy.ndarray, shape (A, A)

    References
    ----------
    M. Jankowiak et al., "Flexible Kernels for Protein Property Prediction", ICML 2026,
    arXiv:2606.11057, Sec. 3; authors' code: https://github.com/generatebio/lock_gp.
    """
    B = _square_matrix(B)
    target = _check_nonneg(target, "target", positive=True)
    d = np.diag(B)
    S = B - 0.5 * (d[:, None] + d[None, :])
    med = abs(float(np.median(S)))
    if med == 0.0:
        raise ValueError("the median of the shifted matrix is 0; cannot normalise")
    return S * (target / med)


def correlation_matrix(B_tilde: np.ndarray, gamma: float) -> np.ndarray:
    r"""Hadamard power of the substitution correlation: :math:`C_\gamma = \exp(\gamma \tilde B)`.

    Element-wise, :math:`C_\gamma = (e^{\tilde B})^{\circ\gamma}`. Because BLOSUM-derived
    :math:`e^{\tilde B}` is infinitely divisible, :math:`C_\gamma` is positive semi-definite
    for every :math:`\gamma > 0` (Jankowiak et al. 2026, Sec. 3), so :math:`\gamma` can
    be learned as a kernel hyper-parameter.

    Parameters
    ----------
    B_tilde : array_like, shape (A, A)
        Normalised matrix from :func:`normalize_substitution_matrix`.
    gamma : float
        Exponent, > 0.

    Returns
    -------
    numpy.ndarray, shape (A, A)

    References
    ----------
    M. Jankowiak et al., "Flexible Kernels for Protein Property Prediction", ICML 2026,
    arXiv:2606.11057, Sec. 3 (infinite divisibility); authors' code: https://github.com/generatebio/lock_gp.
    """
    gamma = _check_nonneg(gamma, "gamma", positive=True)
    return np.exp(gamma * _square_matrix(B_tilde, "B_tilde"))


def blosum_embedding(B: np.ndarray) -> np.ndarray:
    r"""Residue embedding of the Tanimoto baseline: :math:`E = V \operatorname{diag}(\sqrt{\max(\lambda, 0)})`.

    :math:`B = V \operatorname{diag}(\lambda) V^\top` is the eigen-decomposition of the raw
    log-odds matrix; negative eigenvalues are clamped to zero, so :math:`E E^\top` is the
    nearest PSD matrix to :math:`B` in this basis (``TanimotoKernel`` in the released code).

    Parameters
    ----------
    B : array_like, shape (A, A)
        Symmetric log-odds matrix.

    Returns
    -------
    numpy.ndarray, shape (A, A)
        Row ``a`` is the embedding of token ``a``.

    References
    ----------
    M. Jankowiak et al., "Flexible Kernels for Protein Property Prediction", ICML 2026,
    arXiv:2606.11057 (the Tanimoto baseline); authors' code: https://github.com/generatebio/lock_gp.
    """
    B = _square_matrix(B)
    lam, V = np.linalg.eigh(B)
    return V * np.sqrt(np.clip(lam, 0.0, None))[None, :]
