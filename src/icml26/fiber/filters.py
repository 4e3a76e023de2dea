"""Linear filters and their noise attenuation: FIBER's innovation filter and DiSK's EMA.

Both filters as difference equations in :func:`scipy.signal.lfilter` convention
(:func:`innovation_filter_coeffs`, :func:`ema_filter_coeffs`, :func:`filter_coeffs` for
``kind`` in :data:`FILTERS`), the closed forms :func:`innovation_attenuation`
:math:`A(\\omega)=(2-\\omega)/(4-3\\omega)` (stable for ``0 < omega <`` :data:`OMEGA_MAX`)
and :func:`ema_attenuation` :math:`\\kappa/(2-\\kappa)`, and for any stable linear filter
:func:`check_stable`, :func:`impulse_response`, :func:`numeric_attenuation`
:math:`A=\\sum_k h_k^2`, :func:`attenuation_profile` and :func:`apply_filter`.

Reference: Duc Dm, Thao Do, Minh Son Hoang, Anh Le Duc Tran, Daeyoung Kim, Huy Nguyen,
"FIBER: A Differentially Private Optimizer with Filter-Aware Innovation Bias Correction",
ICML 2026, arXiv:2605.03425. Overview: :mod:`icml26.fiber`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
from scipy import signal as sps

from ._checks import _count, _real

__all__ = [
    "FILTERS",
    "OMEGA_MAX",
    "innovation_attenuation",
    "ema_attenuation",
    "innovation_filter_coeffs",
    "ema_filter_coeffs",
    "filter_coeffs",
    "check_stable",
    "impulse_response",
    "numeric_attenuation",
    "attenuation_profile",
    "apply_filter",
]


FILTERS: tuple[str, ...] = ("none", "ema", "innovation")


#: Upper end (exclusive) of the stable range of the innovation gain, 0 < omega < 4/3.
OMEGA_MAX: float = 4.0 / 3.0


def _check_omega(omega: float) -> float:
    omega = _real("omega", omega)
    if not (0.0 < omega < OMEGA_MAX) or not math.isfinite(omega):
        raise ValueError(
            f"omega={omega!r} makes the innovation filter unstable or degenerate; use 0 < omega < 4/3 (omega=1 is no filtering)"
        )
    return omega


def _check_kappa(kappa: float) -> float:
    kappa = _real("kappa", kappa)
    if not (0.0 < kappa < 2.0) or not math.isfinite(kappa):
        raise ValueError(
            f"kappa={kappa!r} makes the EMA filter unstable or degenerate; use 0 < kappa < 2 (kappa=1 is no filtering)"
        )
    return kappa


def _coeffs(name: str, c: object) -> np.ndarray:
    if isinstance(c, (str, bytes)) or c is None:
        raise TypeError(f"{name} must be an array of filter coefficients, got {type(c).__name__}")
    try:
        return np.atleast_1d(np.asarray(c, dtype=float))
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be an array of real filter coefficients, got {c!r}") from exc


def innovation_attenuation(omega: float) -> float:
    r"""Closed-form noise attenuation of FIBER's innovation filter.

    The filter :math:`\nu_t=g_t-\tilde g_{t-1}`, :math:`r_t=(1-\omega)r_{t-1}+\omega\nu_t`,
    :math:`\tilde g_t=\tilde g_{t-1}+r_t` is the AR(2) recursion
    :math:`\tilde g_t = 2(1-\omega)\tilde g_{t-1}-(1-\omega)\tilde g_{t-2}+\omega g_t`.
    Fed white noise of variance :math:`\sigma^2` its stationary output variance is
    :math:`A(\omega)\sigma^2` with

    .. math:: A(\omega) = \frac{2-\omega}{4-3\omega}, \qquad 0<\omega<4/3

    (FIBER, Sec. "filter-aware correction"). ``A(1) = 1`` (no filtering); ``A < 1`` for
    ``omega < 1``; ``A > 1`` for ``1 < omega < 4/3``.

    Parameters
    ----------
    omega : float
        Innovation gain, ``0 < omega < 4/3`` (1 is no filtering).

    Returns
    -------
    float
        A(omega).

    Raises
    ------
    ValueError
        If ``omega`` lies outside the stable range ``(0, 4/3)``.

    References
    ----------
    Duc Dm, Thao Do, Minh Son Hoang, Anh Le Duc Tran, Daeyoung Kim, Huy Nguyen, "FIBER: A
    Differentially Private Optimizer with Filter-Aware Innovation Bias Correction", ICML 2026,
    arXiv:2605.03425 (no official code; update rule as catalogued in ``junaidaliop/zij``,
    ``docs/math/fiber.md``).

    >>> innovation_attenuation(0.5)
    0.6
    """
    omega = _check_omega(omega)
    return (2.0 - omega) / (4.0 - 3.0 * omega)


def ema_attenuation(kappa: float) -> float:
    r"""Noise attenuation :math:`\kappa/(2-\kappa)` of DiSK's EMA :math:`\tilde g_t=(1-\kappa)\tilde g_{t-1}+\kappa g_t`.

    It is :math:`\sum_k h_k^2 = \kappa^2\sum_k(1-\kappa)^{2k}`.

    Parameters
    ----------
    kappa : float
        EMA weight on the new gradient, ``0 < kappa < 2`` (1 is no filtering).

    Returns
    -------
    float
        kappa / (2 - kappa).

    References
    ----------
    X. Zhang, Z. Bu, B. Balle, M. Hong, M. Razaviyayn, V. Mirrokni, "DiSK: Differentially Private
    Optimizer with Simplified Kalman Filter for Noise Reduction", ICLR 2025.

    >>> round(ema_attenuation(0.5), 12)
    0.333333333333
    """
    kappa = _check_kappa(kappa)
    return kappa / (2.0 - kappa)


def innovation_filter_coeffs(omega: float) -> tuple[np.ndarray, np.ndarray]:
    r"""``(b, a)`` of the innovation filter in :func:`scipy.signal.lfilter` convention.

    :math:`H(z) = \omega / (1 - 2(1-\omega)z^{-1} + (1-\omega)z^{-2})`.

    Parameters
    ----------
    omega : float
        Innovation gain, ``0 < omega < 4/3`` (1 is no filtering).

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        ``b`` of shape (1,) and ``a`` of shape (3,).

    References
    ----------
    Duc Dm, Thao Do, Minh Son Hoang, Anh Le Duc Tran, Daeyoung Kim, Huy Nguyen, "FIBER: A
    Differentially Private Optimizer with Filter-Aware Innovation Bias Correction", ICML 2026,
    arXiv:2605.03425 (no official code; update rule as catalogued in ``junaidaliop/zij``,
    ``docs/math/fiber.md``).
    """
    omega = _check_omega(omega)
    return np.array([omega]), np.array([1.0, -2.0 * (1.0 - omega), 1.0 - omega])


def ema_filter_coeffs(kappa: float) -> tuple[np.ndarray, np.ndarray]:
    r"""``(b, a)`` of the EMA :math:`H(z)=\kappa/(1-(1-\kappa)z^{-1})`.

    Parameters
    ----------
    kappa : float
        EMA weight on the new gradient, ``0 < kappa < 2`` (1 is no filtering).

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        ``b`` of shape (1,) and ``a`` of shape (2,).

    References
    ----------
    X. Zhang, Z. Bu, B. Balle, M. Hong, M. Razaviyayn, V. Mirrokni, "DiSK: Differentially Private
    Optimizer with Simplified Kalman Filter for Noise Reduction", ICLR 2025.
    """
    kappa = _check_kappa(kappa)
    return np.array([kappa]), np.array([1.0, -(1.0 - kappa)])


def filter_coeffs(kind: str, *, omega: float = 0.5, kappa: float = 0.7) -> tuple[np.ndarray, np.ndarray]:
    """``(b, a)`` for ``kind`` in :data:`FILTERS` (``"none"`` is the identity ``([1], [1])``).

    Parameters
    ----------
    kind : {"none", "ema", "innovation"}
        The filter (:data:`FILTERS`).
    omega : float
        Innovation gain, ``0 < omega < 4/3`` (1 is no filtering).
    kappa : float
        EMA weight on the new gradient, ``0 < kappa < 2`` (1 is no filtering).

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        ``(b, a)``.

    References
    ----------
    Duc Dm, Thao Do, Minh Son Hoang, Anh Le Duc Tran, Daeyoung Kim, Huy Nguyen, "FIBER: A
    Differentially Private Optimizer with Filter-Aware Innovation Bias Correction", ICML 2026,
    arXiv:2605.03425 (no official code; update rule as catalogued in ``junaidaliop/zij``,
    ``docs/math/fiber.md``).
    X. Zhang, Z. Bu, B. Balle, M. Hong, M. Razaviyayn, V. Mirrokni, "DiSK: Differentially Private
    Optimizer with Simplified Kalman Filter for Noise Reduction", ICLR 2025.
    """
    if not isinstance(kind, str):
        raise TypeError(f"filter kind must be a str, one of {FILTERS}; got {type(kind).__name__}")
    if kind == "none":
        return np.array([1.0]), np.array([1.0])
    if kind == "ema":
        return ema_filter_coeffs(kappa)
    if kind == "innovation":
        return innovation_filter_coeffs(omega)
    raise ValueError(f"filter={kind!r} is not known; use one of {FILTERS}")


def check_stable(a: Iterable[float]) -> float:
    """Spectral radius of the denominator ``a`` (lfilter convention); ``ValueError`` if >= 1.

    The filter ``y_t = (sum_k b_k x_{t-k} - sum_{k>=1} a_k y_{t-k}) / a_0`` is stable iff all
    roots of ``z^n a_0 + z^{n-1} a_1 + ... + a_n`` lie strictly inside the unit circle.

    Parameters
    ----------
    a : array_like
        Denominator coefficients, ``a[0] != 0``; the filter must be stable.

    Returns
    -------
    float
        The spectral radius, < 1.

    References
    ----------
    A. V. Oppenheim, R. W. Schafer, *Discrete-Time Signal Processing*, 3rd ed., Sec. 3.3 (stability of LTI systems).
    """
    a = _coeffs("a", a)
    if a.ndim != 1 or a.size == 0 or a[0] == 0 or not np.all(np.isfinite(a)):
        raise ValueError(f"a={a!r} must be a finite 1-D array with a[0] != 0")
    rho = float(np.max(np.abs(np.roots(a)))) if a.size > 1 else 0.0
    if rho >= 1.0:
        raise ValueError(f"the filter with a={a.tolist()} is not stable: spectral radius {rho:.6g} >= 1")
    return rho


def impulse_response(b: Iterable[float], a: Iterable[float], n: int) -> np.ndarray:
    """First ``n`` taps ``h_0..h_{n-1}`` of the stable linear filter ``(b, a)``.

    Parameters
    ----------
    b : array_like
        Numerator coefficients (``scipy.signal.lfilter`` convention).
    a : array_like
        Denominator coefficients, ``a[0] != 0``; the filter must be stable.
    n : int
        Number of taps (>= 1).

    Returns
    -------
    numpy.ndarray, shape (n,)
        The taps.

    References
    ----------
    Duc Dm, Thao Do, Minh Son Hoang, Anh Le Duc Tran, Daeyoung Kim, Huy Nguyen, "FIBER: A
    Differentially Private Optimizer with Filter-Aware Innovation Bias Correction", ICML 2026,
    arXiv:2605.03425 (no official code; update rule as catalogued in ``junaidaliop/zij``,
    ``docs/math/fiber.md``).
    """
    n = _count("n", n)
    b = _coeffs("b", b)
    if b.ndim != 1 or b.size == 0 or not np.all(np.isfinite(b)):
        raise ValueError(f"b={b!r} must be a finite, non-empty 1-D array")
    check_stable(a)
    x = np.zeros(int(n))
    x[0] = 1.0
    return sps.lfilter(np.asarray(b, dtype=float), np.asarray(a, dtype=float), x)


def numeric_attenuation(b: Iterable[float], a: Iterable[float], *, tol: float = 1e-14) -> float:
    r"""Noise attenuation :math:`A=\sum_{k\ge0} h_k^2` of any stable linear filter ``(b, a)``.

    For white input of variance :math:`\sigma^2` the stationary output variance is
    :math:`A\sigma^2`. The sum is truncated where the geometric tail bound
    :math:`\rho^{2n}` (``rho`` the spectral radius) falls below ``tol``.

    Parameters
    ----------
    b : array_like
        Numerator coefficients (``scipy.signal.lfilter`` convention).
    a : array_like
        Denominator coefficients, ``a[0] != 0``; the filter must be stable.
    tol : float
        Truncation tolerance of the tail, in (0, 1).

    Returns
    -------
    float
        A = sum of squared taps.

    References
    ----------
    Duc Dm, Thao Do, Minh Son Hoang, Anh Le Duc Tran, Daeyoung Kim, Huy Nguyen, "FIBER: A
    Differentially Private Optimizer with Filter-Aware Innovation Bias Correction", ICML 2026,
    arXiv:2605.03425 (no official code; update rule as catalogued in ``junaidaliop/zij``,
    ``docs/math/fiber.md``).
    """
    rho = check_stable(a)
    tol = _real("tol", tol, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    nb = np.atleast_1d(_coeffs("b", b)).size
    if rho == 0.0:
        n = max(nb, 1)
    else:
        n = int(math.ceil(math.log(tol) / (2.0 * math.log(rho)))) + 4 * len(np.atleast_1d(a)) + nb + 16
    h = impulse_response(b, a, min(n, 50_000_000))
    return float(np.dot(h, h))


def attenuation_profile(b: Iterable[float], a: Iterable[float], n: int) -> np.ndarray:
    r"""Transient attenuation :math:`A_t=\sum_{k\le t}h_k^2`, ``t = 0..n-1``, for zero initial state.

    :math:`A_t\sigma^2` is the variance of the filtered noise ``t`` steps after a zero
    start; it rises to the stationary :math:`A`.

    Parameters
    ----------
    b : array_like
        Numerator coefficients (``scipy.signal.lfilter`` convention).
    a : array_like
        Denominator coefficients, ``a[0] != 0``; the filter must be stable.
    n : int
        Number of steps (>= 1).

    Returns
    -------
    numpy.ndarray, shape (n,)
        A_0, ..., A_{n-1}.

    References
    ----------
    Duc Dm, Thao Do, Minh Son Hoang, Anh Le Duc Tran, Daeyoung Kim, Huy Nguyen, "FIBER: A
    Differentially Private Optimizer with Filter-Aware Innovation Bias Correction", ICML 2026,
    arXiv:2605.03425 (no official code; update rule as catalogued in ``junaidaliop/zij``,
    ``docs/math/fiber.md``).
    """
    h = impulse_response(b, a, n)
    return np.cumsum(h * h)


def apply_filter(g: np.ndarray, b: Iterable[float], a: Iterable[float]) -> np.ndarray:
    """Run the filter ``(b, a)`` along axis 0 of ``g`` (shape ``(T, ...)``), zero initial state.

    Parameters
    ----------
    g : array_like, shape (T, ...)
        The stream, time along axis 0 (finite).
    b : array_like
        Numerator coefficients (``scipy.signal.lfilter`` convention).
    a : array_like
        Denominator coefficients, ``a[0] != 0``; the filter must be stable.

    Returns
    -------
    numpy.ndarray, shape (T, ...)
        The filtered stream.

    References
    ----------
    Duc Dm, Thao Do, Minh Son Hoang, Anh Le Duc Tran, Daeyoung Kim, Huy Nguyen, "FIBER: A
    Differentially Private Optimizer with Filter-Aware Innovation Bias Correction", ICML 2026,
    arXiv:2605.03425 (no official code; update rule as catalogued in ``junaidaliop/zij``,
    ``docs/math/fiber.md``).
    """
    check_stable(a)
    b = _coeffs("b", b)
    if b.ndim != 1 or b.size == 0 or not np.all(np.isfinite(b)):
        raise ValueError(f"b={b!r} must be a finite, non-empty 1-D array")
    try:
        g = np.asarray(g, dtype=float)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"g must be an array of real numbers, got {type(g).__name__}") from exc
    if g.ndim < 1 or g.shape[0] == 0:
        raise ValueError(f"g must have shape (T, ...) with T >= 1, got {g.shape}")
    if not np.all(np.isfinite(g)):
        raise ValueError("g holds NaN or infinite values")
    return sps.lfilter(b, np.asarray(a, dtype=float), g, axis=0)
