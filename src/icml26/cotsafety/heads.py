"""Head-metric records and the key-head readings of chapter 16 that need no model.

:class:`HeadMetrics` holds per-trace, per-head B1/B2/B3 (from
:func:`icml26.cotsafety.attention_head_metrics`); :func:`key_head_summary` averages one class
over the key heads, :func:`key_head_log_ratios` compares the two classes, and
:func:`trace_noise_share` measures how much of the between-model spread of such a reading is
trace noise.

References
----------
Tong, Gong, et al. "CoT is Not the Chain of Truth: An Empirical Internal Analysis of Reasoning
LLMs for Fake News Generation." ICML 2026, arXiv:2602.04856.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["HeadMetrics", "key_head_log_ratios", "key_head_summary", "trace_noise_share"]


@dataclass(frozen=True)
class HeadMetrics:
    """Per-text, per-head spectral metrics from :func:`attention_head_metrics`.

    Attributes
    ----------
    layers : list of int
        The layers analysed.
    b1, b3, b2_centroid : numpy.ndarray, shape (n_texts, n_layers, n_heads)
        Stability, energy (effective rank) and the scalarised geometry.
    b2 : numpy.ndarray, shape (n_texts, n_layers, n_heads, size)
        Unit top eigenvectors.
    """

    layers: list[int]
    b1: np.ndarray
    b2: np.ndarray
    b3: np.ndarray
    b2_centroid: np.ndarray


def key_head_summary(m: HeadMetrics, heads: Sequence[tuple[int, int]]) -> dict[str, float]:
    """One class's B1, B2 consistency and B3, averaged over the given heads.

    With traces :math:`i = 1..n` and heads :math:`K = \{(l, h)\}`,

    .. math:: B_1 = \frac{1}{|K|}\sum_{(l,h)\in K} \frac{1}{n}\sum_i b_1[i, l, h],
              \qquad B_2 = \frac{1}{|K|}\sum_{(l,h)\in K} \frac{2}{n(n-1)}
              \sum_{i<j} |\langle v_i^{lh}, v_j^{lh}\rangle|,

    and :math:`B_3` as :math:`B_1` on ``b3``; :math:`v_i^{lh}` is trace :math:`i`'s unit top
    eigenvector (``b2``), so :math:`B_2` is the mean absolute cosine between two traces of the
    class (its consistency).

    Parameters
    ----------
    m : HeadMetrics
        One class's metrics (at least two traces).
    heads : sequence of (layer, head)
        Heads to average over (non-empty; layers among ``m.layers``).

    Returns
    -------
    dict
        ``"B1"``, ``"B2"`` (consistency) and ``"B3"``.

    References
    ----------
    Tong et al., ICML 2026, Sec. 4 (the three spectral metrics in the key heads).
    """
    if not isinstance(m, HeadMetrics):
        raise TypeError(f"m must be HeadMetrics from attention_head_metrics, got {type(m).__name__}")
    if m.b2.shape[0] < 2:
        raise ValueError(f"B2 consistency needs at least two traces, got {m.b2.shape[0]}")
    if isinstance(heads, (str, bytes)) or not isinstance(heads, (Sequence, set, frozenset)) or len(heads) == 0:
        raise ValueError(f"heads must be a non-empty collection of (layer, head) pairs, got {heads!r}")
    idx = []
    for item in heads:
        if not isinstance(item, (tuple, list)) or len(item) != 2:
            raise TypeError(f"each head must be a (layer, head) pair, got {item!r}")
        layer, h = item
        if layer not in m.layers:
            raise ValueError(f"layer {layer!r} is not among the analysed layers {m.layers}")
        if not isinstance(h, (int, np.integer)) or not 0 <= int(h) < m.b1.shape[2]:
            raise ValueError(f"head index {h!r} is out of range: each layer has heads 0..{m.b1.shape[2] - 1}")
        idx.append((m.layers.index(layer), int(h)))
    n = m.b2.shape[0]
    iu = np.triu_indices(n, 1)
    b2 = []
    for li, h in idx:
        v = m.b2[:, li, h, :]  # (n, size)
        b2.append(np.abs(v @ v.T)[iu].mean())
    return {
        "B1": float(np.mean([m.b1[:, li, h].mean() for li, h in idx])),
        "B2": float(np.mean(b2)),
        "B3": float(np.mean([m.b3[:, li, h].mean() for li, h in idx])),
    }


def key_head_log_ratios(safe: HeadMetrics, unsafe: HeadMetrics, heads: Sequence[tuple[int, int]]) -> dict[str, float]:
    """Log ratios, safe over unsafe, of :func:`key_head_summary` in the given heads.

    :math:`\log(B_k^{\text{safe}} / B_k^{\text{unsafe}})` for :math:`k = 1, 2, 3`; the paper
    reads safe traces as lower in B1, more consistent in B2 and more concentrated (lower) in B3.

    Parameters
    ----------
    safe, unsafe : HeadMetrics
        The two classes' metrics on the same layers.
    heads : sequence of (layer, head)
        The key heads (non-empty).

    Returns
    -------
    dict
        ``"B1"``, ``"B2"``, ``"B3"``: the log ratios.

    Raises
    ------
    ValueError
        Where a class mean is not positive (the log ratio is undefined).

    References
    ----------
    Tong et al., ICML 2026, Sec. 4.
    """
    a, b = key_head_summary(safe, heads), key_head_summary(unsafe, heads)
    for k in ("B1", "B2", "B3"):
        if not (a[k] > 0 and b[k] > 0):
            raise ValueError(f"{k}: class means safe {a[k]!r}, unsafe {b[k]!r} must both be > 0 for a log ratio")
    return {k: float(np.log(a[k] / b[k])) for k in ("B1", "B2", "B3")}


def trace_noise_share(first: Sequence[float] | np.ndarray, second: Sequence[float] | np.ndarray) -> float | None:
    """Share of the between-model variance of a reading that is trace noise, from two disjoint trace sets.

    Reading model :math:`k` on two disjoint sets of traces gives :math:`x_k = \mu_k + e_k` and
    :math:`x'_k = \mu_k + e'_k` with independent noise of variance :math:`\sigma^2`. Then
    :math:`\operatorname{Var}(x - x')/2` estimates :math:`\sigma^2` and :math:`\operatorname{Var}(x)`
    estimates :math:`\tau^2 + \sigma^2`, so the share is

    .. math:: \hat s = \frac{\widehat{\operatorname{Var}}(x - x') / 2}{\widehat{\operatorname{Var}}(x)}

    (sample variances, ``ddof=1``); above 1 the noise swamps the models' differences. The noise
    variance of a mean over :math:`t` traces falls as :math:`1/t`.

    Parameters
    ----------
    first, second : array_like, shape (n_models,)
        The same reading of each model from the two trace sets (finite, at least two models).

    Returns
    -------
    float or None
        The share, or None when the first reading does not vary between models (the share
        is undefined).

    References
    ----------
    Searle, Casella & McCulloch (1992), *Variance Components*, ch. 3 (one-way random effects).
    """
    x = np.asarray(first, dtype=float)
    y = np.asarray(second, dtype=float)
    if x.ndim != 1 or x.shape != y.shape or x.size < 2:
        raise ValueError(f"first and second must be 1-d of the same length >= 2, got shapes {x.shape} and {y.shape}")
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise ValueError("first and second must be finite")
    total = float(np.var(x, ddof=1))
    if total <= 0:
        return None
    return float(np.var(x - y, ddof=1) / 2 / total)
