"""Validated encodings of aligned protein sequences: token indices and one-hot tensors.

:func:`encode_indices` (``(N, L)`` integers, with errors naming the bad sequence or
token) and :func:`encode_one_hot` (``(N, L, A)`` tensors, the kernels' input once
flattened to ``(N, L*A)``).

References
----------
M. Jankowiak et al., "Flexible Kernels for Protein Property Prediction", ICML 2026,
arXiv:2606.11057; authors' code: https://github.com/generatebio/lock_gp.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import Tensor

from ._checks import _check_int
from .substitution import ALPHABET

__all__ = ["encode_indices", "encode_one_hot"]


def encode_indices(sequences: Sequence[str], alphabet: str = ALPHABET, length: int | None = None) -> np.ndarray:
    """Token indices of equal-length sequences, with clear errors for bad input.

    Parameters
    ----------
    sequences : sequence of str
        Aligned sequences, all of the same length, using only tokens of ``alphabet``.
    alphabet : str
        Token order (default :data:`ALPHABET`).
    length : int, optional
        Required length; default: the length of the first sequence.

    Returns
    -------
    numpy.ndarray of int64, shape (N, L)

    Raises
    ------
    ValueError
        Empty input; a sequence of another length (names its index and length); a token
        outside the alphabet (names it, its sequence and the allowed tokens).
    TypeError
        An element that is not a string.

    References
    ----------
    M. Jankowiak et al., "Flexible Kernels for Protein Property Prediction", ICML 2026,
    arXiv:2606.11057 (sequences are aligned and one-hot encoded); authors' code: https://github.com/generatebio/lock_gp.
    """
    if not isinstance(alphabet, str) or not alphabet:
        raise TypeError(f"alphabet must be a non-empty str of tokens, got {alphabet!r}")
    if isinstance(sequences, str):
        raise TypeError("sequences must be a sequence of strings, not a single string")
    seqs = list(sequences)
    if not seqs:
        raise ValueError("sequences is empty; give at least one sequence")
    for i, s in enumerate(seqs):
        if not isinstance(s, str):
            raise TypeError(f"sequence {i} is {type(s).__name__}, expected str")
    L = len(seqs[0]) if length is None else _check_int(length, "length")
    if L < 1:
        raise ValueError(f"sequence length must be >= 1, got {L}")
    lengths = np.fromiter((len(s) for s in seqs), dtype=np.int64, count=len(seqs))
    bad = np.flatnonzero(lengths != L)
    if bad.size:
        i = int(bad[0])
        raise ValueError(f"sequence {i} has length {lengths[i]}, expected {L} (all sequences must be aligned to one length)")
    if any(ord(a) > 127 for a in alphabet) or len(set(alphabet)) != len(alphabet):
        raise ValueError(f"alphabet={alphabet!r} must be distinct ASCII tokens")
    # Map bytes through a lookup table: vectorised over all residues at once.
    lut = np.full(256, -1, dtype=np.int64)
    for k, a in enumerate(alphabet):
        lut[ord(a)] = k
    try:
        raw = np.frombuffer("".join(seqs).encode("ascii"), dtype=np.uint8)
    except UnicodeEncodeError:
        raw = None
    if raw is None or (idx := lut[raw]).min() < 0:
        for i, s in enumerate(seqs):
            unknown = sorted(set(s) - set(alphabet))
            if unknown:
                raise ValueError(f"sequence {i} has unknown token(s) {unknown}; allowed tokens are {alphabet!r}")
    return idx.reshape(len(seqs), L)


def encode_one_hot(sequences: Sequence[str], alphabet: str = ALPHABET, dtype: torch.dtype = torch.float64) -> Tensor:
    """One-hot encoding, shape ``(N, L, A)``, of validated sequences (see :func:`encode_indices`).

    Parameters
    ----------
    sequences : sequence of str
        Aligned sequences of one length.
    alphabet : str
        Token order.
    dtype : torch.dtype
        A floating-point dtype of the result.

    Returns
    -------
    torch.Tensor, shape (N, L, A)

    References
    ----------
    M. Jankowiak et al., "Flexible Kernels for Protein Property Prediction", ICML 2026,
    arXiv:2606.11057; authors' code: https://github.com/generatebio/lock_gp.
    """
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"dtype={dtype!r} must be a floating-point torch.dtype")
    idx = torch.from_numpy(encode_indices(sequences, alphabet))
    return torch.nn.functional.one_hot(idx, num_classes=len(alphabet)).to(dtype)  # (N, L, A)
