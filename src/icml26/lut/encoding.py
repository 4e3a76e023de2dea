"""Thermometer encoding of real features into monotone bits (DWN, exact).

References
----------
A. T. L. Bacellar, Z. Susskind, M. Breternitz Jr., E. John, L. K. John, P. M. V. Lima, F. M. G. França, "Differentiable Weightless Neural Networks", ICML 2024, arXiv:2410.11112; code https://github.com/alanbacellar/DWN
"""

from __future__ import annotations

import numpy as np

__all__ = ["ThermometerEncoder"]


class ThermometerEncoder:
    """Thermometer encoding of real features into ``num_bits`` monotone bits.

    Bit ``i`` of feature ``f`` is :math:`\\mathbb 1[x_f > t_{f,i}]` with thresholds
    :math:`t_{f,1}\\le\\dots\\le t_{f,k}`, so the number of ones grows with ``x_f``
    (DWN, Sec. 3, ``torch_dwn.binarization``).

    Parameters
    ----------
    num_bits : int
        Bits per feature, ``k >= 1``.
    method : {"uniform", "distributive"}
        ``"uniform"``: :math:`t_i = \\min + i(\\max-\\min)/(k+1)` (DWN ``Thermometer``);
        ``"distributive"``: :math:`t_i` = the empirical ``i/(k+1)`` quantile
        (DWN ``DistributiveThermometer``).
    feature_wise : bool
        Thresholds per feature (``True``) or one set shared by all features (``False``,
        the natural choice for images whose pixels share a scale).

    Returns
    -------
    ThermometerEncoder
        Unfitted; :meth:`fit` learns ``thresholds_`` of shape ``(n_features, num_bits)``
        and :meth:`transform` returns ``uint8`` bits of shape ``(n, n_features, num_bits)``.

    References
    ----------
    Bacellar et al., "Differentiable Weightless Neural Networks", ICML 2024,
    arXiv:2410.11112, Sec. 3; code https://github.com/alanbacellar/DWN
    (``torch_dwn.binarization``).
    """

    METHODS = ("uniform", "distributive")

    def __init__(self, num_bits: int = 3, method: str = "uniform", feature_wise: bool = False) -> None:
        if isinstance(num_bits, bool) or not isinstance(num_bits, (int, np.integer)) or num_bits < 1:
            raise ValueError(f"num_bits={num_bits!r} is not valid; use an integer >= 1")
        if method not in self.METHODS:
            raise ValueError(f"method={method!r} is not valid; use one of {self.METHODS}")
        self.num_bits = int(num_bits)
        self.method = method
        self.feature_wise = bool(feature_wise)

    def fit(self, X: np.ndarray) -> ThermometerEncoder:
        """Learn the thresholds from ``X`` of shape ``(n_samples, n_features)``; returns ``self``.

        Returns
        -------
        ThermometerEncoder
            ``self``, with ``thresholds_`` of shape (n_features, num_bits).
        """
        X = _as_float_matrix(X)
        if X.ndim != 2 or X.shape[0] < 1 or X.shape[1] < 1:
            raise ValueError(f"X must have shape (n_samples, n_features) with n_samples, n_features >= 1, got {X.shape}")
        if not np.all(np.isfinite(X)):
            raise ValueError("X holds NaN or infinite values; thermometer thresholds need finite features")
        k = self.num_bits
        data = X if self.feature_wise else X.reshape(-1, 1)
        if self.method == "uniform":
            lo, hi = data.min(axis=0), data.max(axis=0)  # (F,)
            steps = np.arange(1, k + 1) / (k + 1)  # (k,)
            thr = lo[:, None] + steps[None, :] * (hi - lo)[:, None]  # (F, k)
        else:
            srt = np.sort(data, axis=0)  # (N, F)
            idx = np.array([int(srt.shape[0] * i / (k + 1)) for i in range(1, k + 1)])
            thr = srt[idx].T  # (F, k)
        self.thresholds_ = thr if self.feature_wise else np.broadcast_to(thr, (X.shape[1], k)).copy()
        self.n_features_in_ = X.shape[1]
        return self

    def transform(self, X: np.ndarray) -> np.ndarray:
        """Bits of shape ``(n_samples, n_features, num_bits)``, dtype ``uint8``.

        Returns
        -------
        numpy.ndarray of uint8, shape (n_samples, n_features, num_bits)
            The bits.
        """
        if not hasattr(self, "thresholds_"):
            raise RuntimeError("ThermometerEncoder is not fitted; call fit(X) first")
        X = _as_float_matrix(X)
        if X.ndim != 2 or X.shape[1] != self.n_features_in_:
            raise ValueError(f"X must have shape (n_samples, {self.n_features_in_}), got {X.shape}")
        if np.isnan(X).any():
            raise ValueError("X holds NaN; a NaN feature has no thermometer code")
        return (X[:, :, None] > self.thresholds_[None, :, :]).astype(np.uint8)

    def fit_transform(self, X: np.ndarray) -> np.ndarray:
        """:meth:`fit` on ``X``, then :meth:`transform` of ``X``.

        Returns
        -------
        numpy.ndarray of uint8, shape (n_samples, n_features, num_bits)
            The bits of ``X``.
        """
        return self.fit(X).transform(X)


def _as_float_matrix(X: object) -> np.ndarray:
    try:
        return np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"X must be an array of real numbers, got {type(X).__name__}") from exc
