"""FIBER: DP AdamW on innovation-filtered gradients with a filter-aware second-moment correction.

Chapter 07 of the book. Reference: Duc Dm, Thao Do, Minh Son Hoang, Anh Le Duc Tran,
Daeyoung Kim, Huy Nguyen, "FIBER: A Differentially Private Optimizer with Filter-Aware
Innovation Bias Correction", ICML 2026, arXiv:2605.03425.

The module has five parts.

* **Linear filters and their noise attenuation.** The innovation filter of FIBER and the
  exponential moving average (EMA) of DiSK as difference equations, the closed forms
  :func:`innovation_attenuation` :math:`A(\\omega)=(2-\\omega)/(4-3\\omega)` and
  :func:`ema_attenuation` :math:`\\kappa/(2-\\kappa)`, and :func:`numeric_attenuation`
  :math:`A=\\sum_k h_k^2` for any stable linear filter.
* **Privatisation.** Per-example gradients with ``torch.func``, the two-point
  observation, flat per-example clipping and Gaussian noise, matching Opacus's
  ``DPOptimizer`` bit for bit when given the same generator.
* **Privacy accounting** with Opacus's RDP accountant (:func:`noise_for_epsilon`,
  :func:`epsilon_spent`): every optimizer here post-processes the same Gaussian
  mechanism, so one noise multiplier gives every method the same :math:`(\\varepsilon,\\delta)`.
* **Optimizers.** :class:`FilteredDPAdamW` covers FIBER and its baselines/ablations
  (:data:`METHODS`): DP-AdamW, DP-AdamBC (the unfiltered :math:`\\sigma_w^2` correction),
  DiSK (EMA filter), and FIBER with its correction switched off or replaced.
* **Experiments.** :func:`second_moment_bias` (the bias mechanism on a synthetic
  gradient stream) and :func:`train_private` (DP training of a small MLP on
  scikit-learn's bundled data).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np
import torch
from scipy import signal as sps
from torch import nn

from ._common import RandomState, check_int, check_random_state, check_real, seed_from, torch_generator
from ._common import progress as _progress

__all__ = [
    "FILTERS",
    "CORRECTIONS",
    "METHODS",
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
    "observation_weight",
    "per_example_grads",
    "two_point_grads",
    "clip_and_sum",
    "gaussian_noise",
    "privatize",
    "RDP_ALPHAS",
    "noise_for_epsilon",
    "epsilon_spent",
    "FilteredDPAdamW",
    "make_optimizer",
    "second_moment_bias",
    "TabularData",
    "load_tabular",
    "validation_split",
    "make_mlp",
    "TrainResult",
    "train_private",
    "opacus_dp_optimizer",
    "opacus_step",
    "steps_for",
    "select_hyperparameters",
    "accuracy_vs_epsilon",
    "dp_step_fn",
]

FILTERS: tuple[str, ...] = ("none", "ema", "innovation")
CORRECTIONS: tuple[str, ...] = ("none", "sigma2", "filter")

#: Upper end (exclusive) of the stable range of the innovation gain, 0 < omega < 4/3.
OMEGA_MAX: float = 4.0 / 3.0

#: The optimizers compared in the chapter. ``two_point`` says whether the privatised
#: quantity is the two-point observation (DiSK and FIBER) or the plain gradient.
METHODS: dict[str, dict] = {
    "DP-AdamW": dict(filter="none", correction="none", two_point=False),
    "DP-AdamBC": dict(filter="none", correction="sigma2", two_point=False),
    "DiSK": dict(filter="ema", correction="none", two_point=True),
    "Innov. filter, no corr.": dict(filter="innovation", correction="none", two_point=True),
    "Innov. filter + σ² corr.": dict(filter="innovation", correction="sigma2", two_point=True),
    "FIBER": dict(filter="innovation", correction="filter", two_point=True),
}



def _real(name: str, value: object, *, lo: float | None = None, hi: float | None = None,
          lo_open: bool = False, hi_open: bool = False) -> float:
    """``value`` as a finite float within the bounds, else a clear ``TypeError``/``ValueError``."""
    return check_real(value, name, lo=lo, hi=hi, lo_open=lo_open, hi_open=hi_open)


def _count(name: str, value: object, lo: int = 1) -> int:
    """``value`` as an int >= ``lo`` (bools refused), else ``ValueError``/``TypeError``."""
    return check_int(value, name, low=lo)


def _method(method: object) -> str:
    if not isinstance(method, str) or method not in METHODS:
        raise ValueError(f"method={method!r} is not known; use one of {list(METHODS)}")
    return method


def _torch_gen(random_state: RandomState | torch.Generator) -> torch.Generator:
    """A ``torch.Generator`` from ``random_state``; a generator is used as it is (threaded through steps)."""
    return random_state if isinstance(random_state, torch.Generator) else torch_generator(random_state)


# ---------------------------------------------------------------------------------------
# Linear filters and noise attenuation
# ---------------------------------------------------------------------------------------


def _check_omega(omega: float) -> float:
    omega = _real("omega", omega)
    if not (0.0 < omega < OMEGA_MAX) or not math.isfinite(omega):
        raise ValueError(
            f"omega={omega!r} makes the innovation filter unstable or degenerate; "
            f"use 0 < omega < 4/3 (omega=1 is no filtering)"
        )
    return omega


def _check_kappa(kappa: float) -> float:
    kappa = _real("kappa", kappa)
    if not (0.0 < kappa < 2.0) or not math.isfinite(kappa):
        raise ValueError(f"kappa={kappa!r} makes the EMA filter unstable or degenerate; use 0 < kappa < 2 (kappa=1 is no filtering)")
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


# ---------------------------------------------------------------------------------------
# Per-example gradients, two-point observation, clipping and noise
# ---------------------------------------------------------------------------------------


def observation_weight(kappa: float, gamma: float) -> float:
    r"""Weight :math:`a=(1-\kappa)/(\kappa\gamma)` of the extrapolated point in the two-point observation.

    :math:`u_t(\xi)=a\nabla f(\theta_t+\gamma d_{t-1};\xi)+(1-a)\nabla f(\theta_t;\xi)` (DiSK, FIBER
    step 1). ``kappa=1`` gives ``a=0`` (the plain gradient); ``gamma=(1-kappa)/kappa`` gives
    ``a=1`` (a single gradient at the extrapolated point).

    Parameters
    ----------
    kappa : float
        DiSK's filter weight, in (0, 1].
    gamma : float
        Extrapolation length, > 0.

    Returns
    -------
    float
        The weight ``a``.

    References
    ----------
    X. Zhang, Z. Bu, B. Balle, M. Hong, M. Razaviyayn, V. Mirrokni, "DiSK: Differentially Private
    Optimizer with Simplified Kalman Filter for Noise Reduction", ICLR 2025.
    Duc Dm, Thao Do, Minh Son Hoang, Anh Le Duc Tran, Daeyoung Kim, Huy Nguyen, "FIBER: A
    Differentially Private Optimizer with Filter-Aware Innovation Bias Correction", ICML 2026,
    arXiv:2605.03425 (no official code; update rule as catalogued in ``junaidaliop/zij``,
    ``docs/math/fiber.md``).
    """
    kappa, gamma = _real("kappa", kappa), _real("gamma", gamma)
    if not (0.0 < kappa <= 1.0):
        raise ValueError(f"kappa={kappa!r} must lie in (0, 1] for the two-point observation")
    if not gamma > 0.0 or not math.isfinite(gamma):
        raise ValueError(f"gamma={gamma!r} must be a positive finite number")
    return (1.0 - kappa) / (kappa * gamma)


def per_example_grads(
    model: nn.Module,
    loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    x: torch.Tensor,
    y: torch.Tensor,
    params: Mapping[str, torch.Tensor] | None = None,
    *,
    backend: str = "auto",
) -> dict[str, torch.Tensor]:
    r"""Per-example gradients ``{name: (B, *param.shape)}`` of ``loss_fn(model(x_i), y_i)``.

    Uses ``torch.func.vmap(torch.func.grad(...))`` over a functional call of ``model``;
    ``params`` (default: the model's current parameters) lets one evaluate the gradient
    at a shifted point without touching the module. ``loss_fn`` must average over its
    batch (one example here), e.g. ``nn.functional.cross_entropy``.

    For an ``nn.Sequential`` of ``Linear``, ``Tanh`` and ``ReLU`` layers with
    ``loss_fn is nn.functional.cross_entropy`` (the networks of :func:`make_mlp`),
    ``backend="auto"`` takes the closed form instead, one batched forward and backward
    pass: with :math:`\delta_L = \mathrm{softmax}(z_i) - e_{y_i}` at the logits and
    :math:`\delta_{l-1} = (\delta_l W_l) \odot \phi'(a_{l-1})` through each activation,
    the per-example gradients of layer :math:`l` are :math:`\delta_l a_{l-1}^\top`
    (weight) and :math:`\delta_l` (bias) — what Opacus's ``GradSampleModule`` hooks compute
    for ``Linear``, without the hooks and without ``vmap``'s per-call tracing. It calls the
    backward kernels autograd calls (log-softmax, tanh and ReLU backward), so it gives the
    ``vmap`` path's numbers bit for bit (a test checks it); ``backend="vmap"`` forces ``vmap``.

    Parameters
    ----------
    model : torch.nn.Module
        The network.
    loss_fn : callable
        ``loss_fn(logits, labels)``, averaging over its batch (e.g. ``nn.functional.cross_entropy``).
    x : Tensor, shape (B, ...)
        Inputs of the batch.
    y : Tensor, shape (B,)
        Labels of the batch.
    params : mapping of str to Tensor, optional
        Where to evaluate the gradient (default: the model's parameters).

    Returns
    -------
    dict of str to Tensor
        ``{name: (B, *param.shape)}``.

    References
    ----------
    M. Abadi et al., "Deep Learning with Differential Privacy", CCS 2016.
    A. Yousefpour et al., "Opacus: User-Friendly Differential Privacy Library in PyTorch", 2021;
    code https://github.com/pytorch/opacus.
    """
    from torch.func import functional_call, grad, vmap

    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if not callable(loss_fn):
        raise TypeError(f"loss_fn must be callable, got {type(loss_fn).__name__}")
    if not isinstance(x, torch.Tensor) or not isinstance(y, torch.Tensor):
        raise TypeError(f"x and y must be torch tensors, got {type(x).__name__} and {type(y).__name__}")
    if x.ndim < 1 or y.ndim != 1 or x.shape[0] != y.shape[0]:
        raise ValueError(f"x must be (B, ...) and y (B,) with the same B, got {tuple(x.shape)} and {tuple(y.shape)}")
    if x.is_floating_point() and not bool(torch.isfinite(x).all()):
        raise ValueError("x holds NaN or infinite values")
    if backend not in ("auto", "vmap"):
        raise ValueError(f"backend={backend!r} is not a backend; use 'auto' or 'vmap'")
    if params is None:
        params = {k: v.detach() for k, v in model.named_parameters()}
    if backend == "auto" and _closed_form_ok(model, loss_fn, x, y, params):
        return _mlp_per_example_grads(model, x, y, params)

    def loss_one(p: Mapping[str, torch.Tensor], xi: torch.Tensor, yi: torch.Tensor) -> torch.Tensor:
        out = functional_call(model, dict(p), (xi.unsqueeze(0),))  # (1, K)
        return loss_fn(out, yi.unsqueeze(0))

    if x.shape[0] == 0:
        return {k: torch.zeros((0, *v.shape), dtype=v.dtype) for k, v in params.items()}
    return vmap(grad(loss_one), in_dims=(None, 0, 0))(dict(params), x, y)


_ACTIVATIONS = (nn.Tanh, nn.ReLU)


def _closed_form_ok(model: nn.Module, loss_fn, x: torch.Tensor, y: torch.Tensor, params: Mapping[str, torch.Tensor]) -> bool:
    """Whether :func:`_mlp_per_example_grads` applies: Linear/Tanh/ReLU layers, cross-entropy, 2-D float x."""
    if loss_fn is not nn.functional.cross_entropy or not isinstance(model, nn.Sequential) or len(model) == 0:
        return False
    if x.ndim != 2 or not x.is_floating_point() or y.dtype not in (torch.int64, torch.int32) or x.shape[0] == 0:
        return False
    if not isinstance(model[-1], nn.Linear) or not all(isinstance(m, (nn.Linear, *_ACTIVATIONS)) for m in model):
        return False
    names = [f"{i}.{w}" for i, m in enumerate(model) if isinstance(m, nn.Linear) for w in ("weight", "bias")
             if getattr(m, w) is not None]
    return set(params) == set(names) and all(params[k].dtype == x.dtype for k in names)


def _mlp_per_example_grads(model: nn.Sequential, x: torch.Tensor, y: torch.Tensor,
                           params: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Closed-form per-example gradients of the cross-entropy of a Linear/Tanh/ReLU MLP (see :func:`per_example_grads`)."""
    with torch.no_grad():
        acts, pre = [x], []  # inputs of every layer (B, d_in), pre-activations
        h = x
        for i, m in enumerate(model):
            if isinstance(m, nn.Linear):
                h = nn.functional.linear(h, params[f"{i}.weight"], params.get(f"{i}.bias"))
            else:
                pre.append(h)
                h = torch.tanh(h) if isinstance(m, nn.Tanh) else torch.relu(h)
            acts.append(h)
        # (B, K): softmax(z) - onehot(y), by the same kernels autograd uses for cross_entropy
        # (log_softmax's backward on the nll gradient -onehot), so the result is bit for bit vmap's
        lsm = torch.log_softmax(h, dim=-1)
        g = torch.zeros_like(lsm)
        g[torch.arange(len(y)), y] = -1.0
        delta = torch.ops.aten._log_softmax_backward_data(g, lsm, -1, lsm.dtype)
        out: dict[str, torch.Tensor] = {}
        for i in range(len(model) - 1, -1, -1):
            m = model[i]
            if isinstance(m, nn.Linear):
                out[f"{i}.weight"] = delta[:, :, None] * acts[i][:, None, :]  # (B, out, in)
                if f"{i}.bias" in params:
                    out[f"{i}.bias"] = delta.clone()
                if i > 0:
                    delta = delta @ params[f"{i}.weight"]  # (B, in)
            elif isinstance(m, nn.Tanh):
                delta = torch.ops.aten.tanh_backward(delta, acts[i + 1])
            else:
                delta = torch.ops.aten.threshold_backward(delta, acts[i + 1], 0)
    return {k: out[k] for k in params}


def two_point_grads(
    model: nn.Module,
    loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    x: torch.Tensor,
    y: torch.Tensor,
    d_prev: Mapping[str, torch.Tensor],
    *,
    kappa: float,
    gamma: float,
) -> dict[str, torch.Tensor]:
    r"""Per-example two-point observations :math:`u_t(\xi)=a\nabla f(\theta_t+\gamma d_{t-1};\xi)+(1-a)\nabla f(\theta_t;\xi)`.

    ``d_prev`` is :math:`d_{t-1}=\theta_t-\theta_{t-1}` per parameter name. Evaluates one
    gradient when ``a`` is 0 or 1, two otherwise.

    Parameters
    ----------
    model : torch.nn.Module
        The network.
    loss_fn : callable
        ``loss_fn(logits, labels)``, averaging over its batch (e.g. ``nn.functional.cross_entropy``).
    x : Tensor, shape (B, ...)
        Inputs of the batch.
    y : Tensor, shape (B,)
        Labels of the batch.
    d_prev : mapping of str to Tensor
        The last move per parameter name.
    kappa : float
        DiSK's filter weight, in (0, 1].
    gamma : float
        Extrapolation length, > 0.

    Returns
    -------
    dict of str to Tensor
        ``{name: (B, *param.shape)}``.

    References
    ----------
    X. Zhang, Z. Bu, B. Balle, M. Hong, M. Razaviyayn, V. Mirrokni, "DiSK: Differentially Private
    Optimizer with Simplified Kalman Filter for Noise Reduction", ICLR 2025.
    Duc Dm, Thao Do, Minh Son Hoang, Anh Le Duc Tran, Daeyoung Kim, Huy Nguyen, "FIBER: A
    Differentially Private Optimizer with Filter-Aware Innovation Bias Correction", ICML 2026,
    arXiv:2605.03425 (no official code; update rule as catalogued in ``junaidaliop/zij``,
    ``docs/math/fiber.md``).
    """
    a = observation_weight(kappa, gamma)
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    theta = {k: v.detach() for k, v in model.named_parameters()}
    if not isinstance(d_prev, Mapping) or set(d_prev) != set(theta):
        raise ValueError(f"d_prev must map every parameter name {sorted(theta)} to its last move")
    for k, v in theta.items():
        if not isinstance(d_prev[k], torch.Tensor) or d_prev[k].shape != v.shape:
            raise ValueError(f"d_prev[{k!r}] must be a tensor of shape {tuple(v.shape)}")
        if not bool(torch.isfinite(d_prev[k]).all()):
            raise ValueError(f"d_prev[{k!r}] holds NaN or infinite values")
    if a == 0.0:
        return per_example_grads(model, loss_fn, x, y, theta)
    shifted = {k: v + gamma * d_prev[k] for k, v in theta.items()}
    g_shift = per_example_grads(model, loss_fn, x, y, shifted)
    if math.isclose(a, 1.0, rel_tol=0.0, abs_tol=1e-12):
        return g_shift
    g_here = per_example_grads(model, loss_fn, x, y, theta)
    return {k: a * g_shift[k] + (1.0 - a) * g_here[k] for k in theta}


def clip_and_sum(per_example: Mapping[str, torch.Tensor], max_norm: float) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
    r"""Clip each example's whole gradient to norm ``max_norm`` and sum over the batch.

    :math:`\sum_i \min(1, C/(\lVert u_i\rVert_2+10^{-6}))\,u_i`, the norm taken over all
    parameters together (flat clipping; the ``1e-6`` is Opacus's). Returns the clipped
    sums ``{name: param.shape}`` and the per-example norms ``(B,)``.

    Parameters
    ----------
    per_example : mapping of str to Tensor
        ``{name: (B, *param.shape)}`` (finite).
    max_norm : float
        Clipping norm ``C`` > 0.

    Returns
    -------
    (dict of str to Tensor, Tensor)
        The clipped sums and the per-example norms ``(B,)``.

    References
    ----------
    M. Abadi et al., "Deep Learning with Differential Privacy", CCS 2016.
    A. Yousefpour et al., "Opacus: User-Friendly Differential Privacy Library in PyTorch", 2021;
    code https://github.com/pytorch/opacus.
    """
    _real("max_norm", max_norm, lo=0.0, lo_open=True)
    if not isinstance(per_example, Mapping) or not per_example:
        raise ValueError("per_example must be a non-empty mapping of parameter names to (B, ...) tensors")
    grads = list(per_example.values())
    if not all(isinstance(g, torch.Tensor) and g.ndim >= 1 for g in grads):
        raise TypeError("per_example values must be tensors of shape (B, *param.shape)")
    n = grads[0].shape[0]
    if any(g.shape[0] != n for g in grads):
        raise ValueError(f"per_example tensors disagree on the batch size: {[g.shape[0] for g in grads]}")
    if n == 0:
        if not all(bool(torch.isfinite(g).all()) for g in grads):
            raise ValueError("per_example gradients hold NaN or infinite values")
        return {k: torch.zeros(v.shape[1:], dtype=v.dtype) for k, v in per_example.items()}, torch.zeros(0)
    per_param = torch.stack([g.reshape(n, -1).norm(2, dim=-1) for g in grads], dim=1)  # (B, P)
    norms = per_param.norm(2, dim=1)  # (B,)
    # a NaN or infinite entry makes its example's norm NaN or infinite: one check on (B,) norms
    # instead of a pass over every gradient entry; the full check runs only when a norm is not
    # finite (it may also have overflowed from finite entries, which are then accepted)
    if not bool(torch.isfinite(norms).all()) and not all(bool(torch.isfinite(g).all()) for g in grads):
        raise ValueError("per_example gradients hold NaN or infinite values")
    factor = (max_norm / (norms + 1e-6)).clamp(max=1.0)  # (B,)
    sums = {k: torch.einsum("i,i...", factor.to(v.dtype), v) for k, v in per_example.items()}
    return sums, norms


def gaussian_noise(shapes: Mapping[str, torch.Size], std: float, random_state: RandomState | torch.Generator = None,
                   dtype=torch.float32) -> dict[str, torch.Tensor]:
    """Independent ``N(0, std^2)`` tensors per name, drawn in ``shapes``'s order (as Opacus draws them).

    Parameters
    ----------
    shapes : mapping of str to shape
        The shape of every tensor, in drawing order.
    std : float
        Standard deviation, >= 0 (0 gives zeros).
    random_state : int, numpy.random.Generator, torch.Generator or None
        Source of the noise; a ``torch.Generator`` is used as it is, so that one stream can be
        threaded through many steps (as Opacus does).
    dtype : torch.dtype
        Of the tensors.

    Returns
    -------
    dict of str to Tensor
        The noise tensors.

    References
    ----------
    A. Yousefpour et al., "Opacus: User-Friendly Differential Privacy Library in PyTorch", 2021;
    code https://github.com/pytorch/opacus.
    """
    std = _real("std", std, lo=0.0)
    if not isinstance(shapes, Mapping):
        raise TypeError(f"shapes must be a mapping of names to shapes, got {type(shapes).__name__}")
    for k, sh in shapes.items():
        if isinstance(sh, (str, bytes)) or not isinstance(sh, Iterable) or any(
            isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 0 for d in sh
        ):
            raise ValueError(f"shapes[{k!r}]={sh!r} is not a shape; use a tuple of integers >= 0")
    if std == 0:
        return {k: torch.zeros(tuple(s), dtype=dtype) for k, s in shapes.items()}
    gen = _torch_gen(random_state)
    return {k: torch.normal(mean=0.0, std=float(std), size=tuple(s), generator=gen, dtype=dtype) for k, s in shapes.items()}


def privatize(
    per_example: Mapping[str, torch.Tensor],
    *,
    max_norm: float,
    noise_multiplier: float,
    expected_batch_size: int,
    random_state: RandomState | torch.Generator = None,
) -> dict[str, torch.Tensor]:
    r"""The Gaussian mechanism of DP-SGD: :math:`g=\frac1B\big(\sum_i\mathrm{clip}(u_i,C)+\mathcal N(0,\sigma_{DP}^2C^2I)\big)`.

    So the per-coordinate noise on :math:`g` has std :math:`\sigma_w=\sigma_{DP}C/B` with
    ``B = expected_batch_size`` (Poisson sampling divides by the expected size, as Opacus does).

    Parameters
    ----------
    per_example : mapping of str to Tensor
        Per-example gradients or observations ``{name: (B, ...)}``.
    max_norm : float
        Clipping norm ``C`` > 0.
    noise_multiplier : float
        sigma_DP >= 0.
    expected_batch_size : int
        ``B`` (>= 1), the divisor.
    random_state : int, numpy.random.Generator, torch.Generator or None
        Source of the noise; a ``torch.Generator`` is used as it is, so that one stream can be
        threaded through many steps (as Opacus does).

    Returns
    -------
    dict of str to Tensor
        The privatised gradient ``g`` per parameter name.

    References
    ----------
    M. Abadi et al., "Deep Learning with Differential Privacy", CCS 2016.
    A. Yousefpour et al., "Opacus: User-Friendly Differential Privacy Library in PyTorch", 2021;
    code https://github.com/pytorch/opacus.
    """
    _count("expected_batch_size", expected_batch_size)
    _real("noise_multiplier", noise_multiplier, lo=0.0)
    sums, _ = clip_and_sum(per_example, max_norm)
    noise = gaussian_noise({k: v.shape for k, v in sums.items()}, noise_multiplier * max_norm, random_state,
                           dtype=next(iter(sums.values())).dtype)
    return {k: (sums[k] + noise[k]) / expected_batch_size for k in sums}


# ---------------------------------------------------------------------------------------
# Privacy accounting (Opacus RDP)
# ---------------------------------------------------------------------------------------


#: RDP orders: Opacus's default grid extended to large orders, which the optimum needs at
#: large epsilon / small noise.
RDP_ALPHAS: list[float] = [1 + x / 10.0 for x in range(1, 100)] + list(range(12, 64)) + list(range(64, 257, 8)) + [384, 512, 768, 1024]


def _check_accounting(sample_rate: object, steps: object, delta: object) -> None:
    _real("delta", delta, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    _real("sample_rate", sample_rate, lo=0.0, hi=1.0, lo_open=True)
    _count("steps", steps)


def noise_for_epsilon(epsilon: float, delta: float, sample_rate: float, steps: int) -> float:
    """Noise multiplier that spends ``(epsilon, delta)`` in ``steps`` Poisson-subsampled Gaussian steps.

    Opacus's ``get_noise_multiplier(accountant="rdp")`` (bisection, tolerance 0.005 in
    epsilon) over the orders :data:`RDP_ALPHAS`. The returned multiplier spends at most
    ``epsilon`` (check with :func:`epsilon_spent`).

    Parameters
    ----------
    epsilon : float
        Target epsilon, > 0.
    delta : float
        Target delta, in (0, 1).
    sample_rate : float
        Poisson sampling rate ``q``, in (0, 1].
    steps : int
        Number of steps (>= 1).

    Returns
    -------
    float
        The noise multiplier sigma_DP.

    References
    ----------
    I. Mironov, K. Talwar, L. Zhang, "Rényi Differential Privacy of the Sampled Gaussian Mechanism", 2019.
    A. Yousefpour et al., "Opacus: User-Friendly Differential Privacy Library in PyTorch", 2021;
    code https://github.com/pytorch/opacus.
    """
    import warnings

    from opacus.accountants.utils import get_noise_multiplier

    _real("epsilon", epsilon, lo=0.0, lo_open=True)
    _check_accounting(sample_rate, steps, delta)
    with warnings.catch_warnings():
        # The bisection probes tiny noise levels whose optimal RDP order lies beyond any
        # finite grid; Opacus warns about those probes. The answer is re-checked by
        # epsilon_spent, which leaves the warning on.
        warnings.filterwarnings("ignore", message="Optimal order is the largest alpha", category=UserWarning)
        return float(
            get_noise_multiplier(
                target_epsilon=epsilon, target_delta=delta, sample_rate=sample_rate, steps=int(steps), accountant="rdp", epsilon_tolerance=0.005, alphas=RDP_ALPHAS
            )
        )


def epsilon_spent(noise_multiplier: float, sample_rate: float, steps: int, delta: float) -> float:
    """Epsilon at ``delta`` after ``steps`` steps, from Opacus's ``RDPAccountant`` over :data:`RDP_ALPHAS`.

    Parameters
    ----------
    noise_multiplier : float
        sigma_DP > 0.
    sample_rate : float
        Poisson sampling rate ``q``, in (0, 1].
    steps : int
        Number of steps (>= 1).
    delta : float
        In (0, 1).

    Returns
    -------
    float
        epsilon at ``delta``.

    References
    ----------
    I. Mironov, K. Talwar, L. Zhang, "Rényi Differential Privacy of the Sampled Gaussian Mechanism", 2019.
    A. Yousefpour et al., "Opacus: User-Friendly Differential Privacy Library in PyTorch", 2021;
    code https://github.com/pytorch/opacus.
    """
    from opacus.accountants import RDPAccountant

    _real("noise_multiplier", noise_multiplier, lo=0.0, lo_open=True)
    _check_accounting(sample_rate, steps, delta)
    acc = RDPAccountant()
    acc.history = [(float(noise_multiplier), float(sample_rate), int(steps))]
    return float(acc.get_epsilon(delta=delta, alphas=RDP_ALPHAS))


# ---------------------------------------------------------------------------------------
# The optimizer
# ---------------------------------------------------------------------------------------


class FilteredDPAdamW(torch.optim.Optimizer):
    r"""AdamW on temporally filtered privatised gradients, with an optional second-moment correction.

    ``p.grad`` must hold the privatised gradient :math:`g_t` (see :func:`privatize`). Per
    coordinate, with :math:`t` counted from 0:

    * filter: ``"none"`` :math:`\tilde g_t=g_t`; ``"ema"`` (DiSK)
      :math:`\tilde g_t=(1-\kappa)\tilde g_{t-1}+\kappa g_t`, :math:`\tilde g_0=g_0`;
      ``"innovation"`` (FIBER) :math:`\nu_t=g_t-\tilde g_{t-1}`,
      :math:`r_t=(1-\omega)r_{t-1}+\omega\nu_t`, :math:`\tilde g_t=\tilde g_{t-1}+r_t`, zero start;
    * moments: :math:`m_t=\beta_1m_{t-1}+(1-\beta_1)\tilde g_t`,
      :math:`v_t=\beta_2v_{t-1}+(1-\beta_2)\tilde g_t^2`, :math:`\hat m_t=m_t/(1-\beta_1^{t+1})`,
      :math:`\hat v_t=v_t/(1-\beta_2^{t+1})`;
    * correction: ``"none"`` :math:`\bar v_t=\hat v_t`; ``"sigma2"`` (DP-AdamBC)
      :math:`\bar v_t=\max(\hat v_t-\sigma_w^2,\epsilon_v)`; ``"filter"`` (FIBER)
      :math:`\bar v_t=\max(\hat v_t-A\sigma_w^2,\epsilon_v)` with :math:`A` the filter's
      attenuation (:func:`innovation_attenuation`, :func:`ema_attenuation`, 1 for none);
    * update: :math:`\theta_{t+1}=(1-\eta\lambda)\theta_t-\eta\hat m_t/(\sqrt{\bar v_t}+\epsilon)`.

    With ``filter="none"`` or ``omega=1``, ``noise_std=0`` and ``eps_v=0`` this is
    ``torch.optim.AdamW`` step for step.

    Parameters
    ----------
    params : iterable of tensors
        What to optimise.
    lr, betas, eps, weight_decay : float, (float, float), float, float
        As in ``torch.optim.AdamW`` (``lr > 0``, betas in [0, 1), the others >= 0).
    filter : {"none", "ema", "innovation"}
        The temporal filter (:data:`FILTERS`).
    omega : float
        Innovation gain in ``(0, 4/3)``.
    kappa : float
        EMA weight on the new gradient in ``(0, 2)``.
    correction : {"none", "sigma2", "filter"}
        What is subtracted from :math:`\hat v_t` (:data:`CORRECTIONS`).
    noise_std : float
        :math:`\sigma_w`, the per-coordinate std of the DP noise on ``p.grad`` (>= 0).
    eps_v : float
        Floor of the corrected second moment (>= 0).

    Returns
    -------
    FilteredDPAdamW
        A ``torch.optim.Optimizer``; :meth:`step` expects privatised gradients in ``p.grad``.

    Attributes
    ----------
    last_clamp_fraction : float
        Fraction of coordinates whose corrected second moment hit ``eps_v`` at the last step.

    References
    ----------
    Duc Dm, Thao Do, Minh Son Hoang, Anh Le Duc Tran, Daeyoung Kim, Huy Nguyen, "FIBER: A
    Differentially Private Optimizer with Filter-Aware Innovation Bias Correction", ICML 2026,
    arXiv:2605.03425. X. Zhang et al., "DiSK", ICLR 2025. Q. Tang, F. Shpilevskiy, M. Lécuyer,
    "DP-AdamBC", AAAI 2024. I. Loshchilov, F. Hutter, "Decoupled Weight Decay Regularization",
    ICLR 2019.
    """

    def __init__(
        self,
        params,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        *,
        filter: str = "innovation",
        omega: float = 0.5,
        kappa: float = 0.7,
        correction: str = "filter",
        noise_std: float = 0.0,
        eps_v: float = 1e-8,
    ):
        _real("lr", lr, lo=0.0, lo_open=True)
        if isinstance(betas, (str, bytes)) or not isinstance(betas, Iterable) or len(tuple(betas)) != 2:
            raise ValueError(f"betas={betas!r} must be a pair of numbers in [0, 1)")
        for b in betas:
            _real("betas entry", b, lo=0.0, hi=1.0, hi_open=True)
        if not isinstance(filter, str) or filter not in FILTERS:
            raise ValueError(f"filter={filter!r} is not known; use one of {FILTERS}")
        if not isinstance(correction, str) or correction not in CORRECTIONS:
            raise ValueError(f"correction={correction!r} is not known; use one of {CORRECTIONS}")
        for name, v in (("noise_std", noise_std), ("eps_v", eps_v), ("eps", eps), ("weight_decay", weight_decay)):
            _real(name, v, lo=0.0)
        if filter == "innovation":
            attenuation = innovation_attenuation(omega)
        elif filter == "ema":
            attenuation = ema_attenuation(kappa)
        else:
            attenuation = 1.0
        self.filter, self.omega, self.kappa, self.correction = filter, float(omega), float(kappa), correction
        self.noise_std, self.eps_v, self.attenuation = float(noise_std), float(eps_v), attenuation
        self.last_clamp_fraction = 0.0
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay))

    @property
    def subtracted(self) -> float:
        """The amount subtracted from :math:`\\hat v_t`: 0, :math:`\\sigma_w^2` or :math:`A\\sigma_w^2`."""
        s2 = self.noise_std**2
        return {"none": 0.0, "sigma2": s2, "filter": self.attenuation * s2}[self.correction]

    @torch.no_grad()
    def step(self, closure=None):
        """One update from the privatised gradients in ``p.grad``; returns ``closure()`` if given.

        Returns
        -------
        float or None
            The closure's loss, if a closure was given.
        """
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        sub = self.subtracted
        n_clamped, n_total = 0, 0
        for group in self.param_groups:
            lr, (b1, b2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                g = p.grad
                st = self.state[p]
                if not st:
                    st["step"] = 0
                    st["m"] = torch.zeros_like(p)
                    st["v"] = torch.zeros_like(p)
                    if self.filter == "innovation":
                        st["gf"] = torch.zeros_like(p)
                        st["r"] = torch.zeros_like(p)
                # --- temporal filter -> g~_t
                if self.filter == "none":
                    gf = g
                elif self.filter == "ema":
                    if "gf" not in st:
                        st["gf"] = g.clone()  # DiSK starts its filter at the first observation
                    else:
                        st["gf"].mul_(1.0 - self.kappa).add_(g, alpha=self.kappa)
                    gf = st["gf"]
                else:
                    nu = g - st["gf"]
                    st["r"].mul_(1.0 - self.omega).add_(nu, alpha=self.omega)
                    st["gf"].add_(st["r"])
                    gf = st["gf"]
                # --- AdamW moments
                t = st["step"]
                st["m"].mul_(b1).add_(gf, alpha=1.0 - b1)
                st["v"].mul_(b2).addcmul_(gf, gf, value=1.0 - b2)
                m_hat = st["m"] / (1.0 - b1 ** (t + 1))
                v_hat = st["v"] / (1.0 - b2 ** (t + 1))
                if self.correction == "none":
                    v_bar = v_hat
                else:
                    v_bar = v_hat - sub
                    clamped = v_bar <= self.eps_v
                    n_clamped += int(clamped.sum())
                    v_bar = v_bar.clamp(min=self.eps_v)
                n_total += p.numel()
                if wd != 0:
                    p.mul_(1.0 - lr * wd)
                p.addcdiv_(m_hat, v_bar.sqrt().add_(eps), value=-lr)
                st["step"] = t + 1
        self.last_clamp_fraction = n_clamped / max(n_total, 1)
        return loss


def make_optimizer(method: str, params, *, noise_std: float, lr: float = 1e-3, omega: float = 0.5, kappa: float = 0.7, eps_v: float = 1e-8, **kwargs) -> FilteredDPAdamW:
    """A :class:`FilteredDPAdamW` configured as ``method`` (a key of :data:`METHODS`).

    Parameters
    ----------
    method : str
        A key of :data:`METHODS`.
    params : iterable of Parameter
        What to optimise.
    noise_std : float
        sigma_w >= 0.
    lr : float
        Learning rate > 0.
    omega : float
        Innovation gain, ``0 < omega < 4/3`` (1 is no filtering).
    kappa : float
        EMA weight on the new gradient, ``0 < kappa < 2`` (1 is no filtering).
    eps_v : float
        Floor of the corrected second moment (>= 0).
    **kwargs
        Passed to :class:`FilteredDPAdamW`.

    Returns
    -------
    FilteredDPAdamW
        The optimizer.

    References
    ----------
    Duc Dm, Thao Do, Minh Son Hoang, Anh Le Duc Tran, Daeyoung Kim, Huy Nguyen, "FIBER: A
    Differentially Private Optimizer with Filter-Aware Innovation Bias Correction", ICML 2026,
    arXiv:2605.03425 (no official code; update rule as catalogued in ``junaidaliop/zij``,
    ``docs/math/fiber.md``).
    X. Zhang, Z. Bu, B. Balle, M. Hong, M. Razaviyayn, V. Mirrokni, "DiSK: Differentially Private
    Optimizer with Simplified Kalman Filter for Noise Reduction", ICLR 2025.
    Q. Tang, F. Shpilevskiy, M. Lécuyer, "DP-AdamBC: Your DP-Adam Is Actually DP-SGD (Unless You
    Apply Bias Correction)", AAAI 2024.
    """
    spec = METHODS[_method(method)]
    return FilteredDPAdamW(params, lr=lr, filter=spec["filter"], correction=spec["correction"], omega=omega, kappa=kappa, noise_std=noise_std, eps_v=eps_v, **kwargs)


# ---------------------------------------------------------------------------------------
# Experiment 1: the second-moment bias on a synthetic gradient stream
# ---------------------------------------------------------------------------------------


def second_moment_bias(
    true_grad: np.ndarray,
    noise_std: float,
    filter: str,
    *,
    omega: float = 0.5,
    kappa: float = 0.7,
    steps: int = 4000,
    beta2: float = 0.999,
    eps_v: float = 0.0,
    n_rep: int = 8,
    random_state: RandomState = 0,
) -> dict[str, np.ndarray]:
    r"""Second-moment estimate of AdamW on a filtered noisy gradient stream, under each correction.

    Each coordinate ``j`` sees :math:`g_t=\mu_j+\sigma_w z_t`, :math:`z_t\sim\mathcal N(0,1)`
    i.i.d.; the stream is filtered (``filter`` as in :class:`FilteredDPAdamW`, zero start),
    :math:`\hat v` is AdamW's bias-corrected second moment at the last step. The target is
    the noise-free :math:`\mu_j^2`. Returns, per correction in :data:`CORRECTIONS`,
    ``err_<corr>`` the error :math:`(\hat v-c-\mu^2)/\sigma_w^2` of the corrected estimate
    before the floor (shape ``(n_rep, d)``), ``err_floor_<corr>`` the same after the floor
    :math:`\max(\cdot,\epsilon_v)`, and ``clamped_<corr>`` the fraction of entries at the
    floor; plus ``"A"`` the filter's attenuation.
    Predicted bias: ``none`` :math:`+A`, ``sigma2`` :math:`-(1-A)`, ``filter`` 0.

    Parameters
    ----------
    true_grad : array_like, shape (d,)
        The noise-free gradient mu (finite, non-empty).
    noise_std : float
        sigma_w > 0.
    filter : {"none", "ema", "innovation"}
        The filter.
    omega : float
        Innovation gain, ``0 < omega < 4/3`` (1 is no filtering).
    kappa : float
        EMA weight on the new gradient, ``0 < kappa < 2`` (1 is no filtering).
    steps : int
        Stream length (>= 2).
    beta2 : float
        AdamW's beta_2, in [0, 1).
    eps_v : float
        The floor (>= 0).
    n_rep : int
        Independent repetitions (>= 1).
    random_state : int, numpy.random.Generator or None
        Seed (see ``icml26._common.check_random_state``).

    Returns
    -------
    dict of str to numpy.ndarray
        As described above.

    References
    ----------
    Duc Dm, Thao Do, Minh Son Hoang, Anh Le Duc Tran, Daeyoung Kim, Huy Nguyen, "FIBER: A
    Differentially Private Optimizer with Filter-Aware Innovation Bias Correction", ICML 2026,
    arXiv:2605.03425 (no official code; update rule as catalogued in ``junaidaliop/zij``,
    ``docs/math/fiber.md``).
    Q. Tang, F. Shpilevskiy, M. Lécuyer, "DP-AdamBC: Your DP-Adam Is Actually DP-SGD (Unless You
    Apply Bias Correction)", AAAI 2024.
    """
    try:
        mu = np.asarray(true_grad, dtype=float).ravel()  # (d,)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"true_grad must be an array of real numbers, got {type(true_grad).__name__}") from exc
    if mu.size == 0 or not np.all(np.isfinite(mu)):
        raise ValueError(f"true_grad must be a non-empty finite array, got {mu.size} values")
    noise_std = _real("noise_std", noise_std, lo=0.0, lo_open=True)
    steps, n_rep = _count("steps", steps, 2), _count("n_rep", n_rep)
    beta2 = _real("beta2", beta2, lo=0.0, hi=1.0, hi_open=True)
    eps_v = _real("eps_v", eps_v, lo=0.0)
    b, a = filter_coeffs(filter, omega=omega, kappa=kappa)
    A = numeric_attenuation(b, a)
    rng = check_random_state(random_state)
    g = mu[None, None, :] + noise_std * rng.standard_normal((int(steps), int(n_rep), mu.size))  # (T, R, d)
    gf = apply_filter(g, b, a)  # (T, R, d)
    v = sps.lfilter([1.0 - beta2], [1.0, -beta2], gf * gf, axis=0)[-1]  # (R, d)
    v_hat = v / (1.0 - beta2 ** int(steps))
    out: dict[str, np.ndarray] = {"A": np.asarray(A)}
    s2 = noise_std**2
    for corr, sub in (("none", 0.0), ("sigma2", s2), ("filter", A * s2)):
        vb = v_hat - sub
        out[f"err_{corr}"] = (vb - mu[None, :] ** 2) / s2
        if corr == "none":
            out["clamped_none"] = np.asarray(0.0)
            out["err_floor_none"] = out["err_none"]
        else:
            out[f"clamped_{corr}"] = np.asarray((vb <= eps_v).mean())
            out[f"err_floor_{corr}"] = (np.maximum(vb, eps_v) - mu[None, :] ** 2) / s2
    return out


# ---------------------------------------------------------------------------------------
# Experiment 2: DP training of a small MLP on bundled data
# ---------------------------------------------------------------------------------------


@dataclass
class TabularData:
    """Standardised train/test tensors of a bundled scikit-learn data set.

    Parameters
    ----------
    name : str
        Data set name.
    X_train, X_test : Tensor
        Standardised features (float32).
    y_train, y_test : Tensor
        Labels (int64).
    n_classes : int
        Number of classes.

    Returns
    -------
    TabularData
        A plain record.

    References
    ----------
    F. Pedregosa et al., "Scikit-learn: Machine Learning in Python", JMLR 2011 (bundled data sets).
    """

    name: str
    X_train: torch.Tensor
    y_train: torch.Tensor
    X_test: torch.Tensor
    y_test: torch.Tensor
    n_classes: int


def _check_data(data: object) -> None:
    if not isinstance(data, TabularData):
        raise TypeError(f"data must be a TabularData (see load_tabular), got {type(data).__name__}")


def load_tabular(name: str, *, random_state: RandomState = 0, test_size: float = 0.25) -> TabularData:
    """``"digits"`` (1797 x 64, 10 classes) or ``"breast_cancer"`` (569 x 30, 2 classes).

    Stratified split with ``random_state=seed``; features standardised with the training
    mean and std (a data-dependent step that we, like most DP papers, leave outside the
    privacy budget — see the chapter).

    Parameters
    ----------
    name : {"digits", "breast_cancer"}
        The bundled data set.
    random_state : int, numpy.random.Generator or None
        Seed (see ``icml26._common.check_random_state``).
    test_size : float
        Held-out fraction, in (0, 1).

    Returns
    -------
    TabularData
        Standardised float32 features and int64 labels.

    References
    ----------
    F. Pedregosa et al., "Scikit-learn: Machine Learning in Python", JMLR 2011 (bundled data sets).
    """
    from sklearn.datasets import load_breast_cancer, load_digits
    from sklearn.model_selection import train_test_split

    loaders = {"digits": load_digits, "breast_cancer": load_breast_cancer}
    if not isinstance(name, str) or name not in loaders:
        raise ValueError(f"name={name!r} is not a bundled data set here; use one of {list(loaders)}")
    _real("test_size", test_size, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    X, y = loaders[name](return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=test_size, random_state=seed_from(random_state), stratify=y)
    mu, sd = Xtr.mean(0), Xtr.std(0)
    sd[sd == 0] = 1.0
    f = lambda Z: torch.as_tensor((Z - mu) / sd, dtype=torch.float32)  # noqa: E731
    return TabularData(name, f(Xtr), torch.as_tensor(ytr), f(Xte), torch.as_tensor(yte), int(y.max()) + 1)


def validation_split(data: TabularData, *, frac: float = 0.2, random_state: RandomState = 0) -> TabularData:
    """Carve a stratified validation set out of ``data``'s training part; it replaces the test part.

    Hyper-parameters are chosen on this split, so the test set is never looked at while tuning.

    Parameters
    ----------
    data : TabularData
        As returned by :func:`load_tabular` (or :func:`validation_split`).
    frac : float
        Validation fraction, in (0, 1).
    random_state : int, numpy.random.Generator or None
        Seed (see ``icml26._common.check_random_state``).

    Returns
    -------
    TabularData
        Training part and validation part (in the test slots).

    References
    ----------
    F. Pedregosa et al., "Scikit-learn: Machine Learning in Python", JMLR 2011 (bundled data sets).
    """
    from sklearn.model_selection import train_test_split

    _check_data(data)
    _real("frac", frac, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    idx = np.arange(data.X_train.shape[0])
    tr, va = train_test_split(idx, test_size=frac, random_state=seed_from(random_state), stratify=data.y_train.numpy())
    tr, va = torch.as_tensor(tr), torch.as_tensor(va)
    return TabularData(f"{data.name} (validation)", data.X_train[tr], data.y_train[tr], data.X_train[va], data.y_train[va], data.n_classes)


def make_mlp(in_dim: int, hidden: int, out_dim: int, *, random_state: RandomState = 0) -> nn.Module:
    """``Linear(in, hidden) -> tanh -> Linear(hidden, out)`` with PyTorch's default init drawn from ``seed``.

    Parameters
    ----------
    in_dim : int
        Input features (>= 1).
    hidden : int
        Hidden units (>= 1).
    out_dim : int
        Classes (>= 1).
    random_state : int, numpy.random.Generator or None
        Seed (see ``icml26._common.check_random_state``).

    Returns
    -------
    torch.nn.Module
        The untrained MLP; the global torch RNG is left untouched.

    References
    ----------
    Duc Dm, Thao Do, Minh Son Hoang, Anh Le Duc Tran, Daeyoung Kim, Huy Nguyen, "FIBER: A
    Differentially Private Optimizer with Filter-Aware Innovation Bias Correction", ICML 2026,
    arXiv:2605.03425 (no official code; update rule as catalogued in ``junaidaliop/zij``,
    ``docs/math/fiber.md``).
    """
    in_dim, hidden, out_dim = _count("in_dim", in_dim), _count("hidden", hidden), _count("out_dim", out_dim)
    seed = seed_from(random_state)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return nn.Sequential(nn.Linear(in_dim, hidden), nn.Tanh(), nn.Linear(hidden, out_dim))


@dataclass
class TrainResult:
    """Outcome of :func:`train_private`.

    Parameters
    ----------
    method : str
        The optimizer.
    test_acc : float
        Final test accuracy.
    epsilon : float
        Spent at ``delta``.
    noise_multiplier, noise_std : float
        sigma_DP and sigma_w.
    steps : int
        Optimizer steps.
    acc_curve : list of float
        Test accuracy at evenly spaced steps.
    clamp_fraction : float
        Mean fraction of coordinates on the floor.
    test_loss : float
        Final test cross-entropy.

    Returns
    -------
    TrainResult
        A plain record.

    References
    ----------
    Duc Dm, Thao Do, Minh Son Hoang, Anh Le Duc Tran, Daeyoung Kim, Huy Nguyen, "FIBER: A
    Differentially Private Optimizer with Filter-Aware Innovation Bias Correction", ICML 2026,
    arXiv:2605.03425 (no official code; update rule as catalogued in ``junaidaliop/zij``,
    ``docs/math/fiber.md``).
    """

    method: str
    test_acc: float
    epsilon: float
    noise_multiplier: float
    noise_std: float
    steps: int
    acc_curve: list[float] = field(default_factory=list)
    clamp_fraction: float = 0.0
    test_loss: float = float("nan")


def train_private(
    data: TabularData,
    method: str,
    *,
    noise_multiplier: float,
    epochs: float = 20,
    batch_size: int = 64,
    max_norm: float = 1.0,
    lr: float = 2e-3,
    hidden: int = 32,
    omega: float = 0.5,
    kappa: float = 0.7,
    gamma: float | None = None,
    eps_v: float = 1e-8,
    weight_decay: float = 0.0,
    delta: float = 1e-5,
    random_state: RandomState = 0,
    n_curve: int = 10,
) -> TrainResult:
    r"""Train ``make_mlp`` with ``method`` under DP-SGD's Gaussian mechanism; return test accuracy and epsilon.

    Poisson sampling with rate :math:`q=B/N` for :math:`T=\lceil\text{epochs}/q\rceil` steps;
    per-example (two-point, for DiSK and FIBER) gradients are clipped to ``max_norm`` and
    noised with multiplier ``noise_multiplier``; :math:`\sigma_w=\sigma_{DP}C/B`. The
    batches, noise draws and initial weights depend on ``seed`` only, so methods run with
    the same seed see the same randomness. ``gamma`` defaults to :math:`(1-\kappa)/\kappa`
    (one gradient per example per step, at the extrapolated point).

    Parameters
    ----------
    data : TabularData
        As returned by :func:`load_tabular` (or :func:`validation_split`).
    method : str
        A key of :data:`METHODS`.
    noise_multiplier : float
        sigma_DP >= 0 (0: no privacy, epsilon = inf).
    epochs : float
        Expected passes over the data (> 0).
    batch_size : int
        Expected batch size, in 1..n.
    max_norm : float
        Clipping norm > 0.
    lr : float
        Learning rate.
    hidden : int
        Hidden units of the MLP.
    omega : float
        Innovation gain, ``0 < omega < 4/3`` (1 is no filtering).
    kappa : float
        EMA weight on the new gradient, ``0 < kappa < 2`` (1 is no filtering).
    gamma : float, optional
        Extrapolation length of the two-point observation.
    eps_v : float
        Floor of the corrected second moment.
    weight_decay : float
        AdamW's decoupled weight decay.
    delta : float
        For the reported epsilon, in (0, 1).
    random_state : int, numpy.random.Generator or None
        Seed (see ``icml26._common.check_random_state``).
    n_curve : int
        Points of the accuracy curve (>= 1).

    Returns
    -------
    TrainResult
        Test accuracy and loss, epsilon spent, noise levels, steps, curve, floor fraction.

    References
    ----------
    Duc Dm, Thao Do, Minh Son Hoang, Anh Le Duc Tran, Daeyoung Kim, Huy Nguyen, "FIBER: A
    Differentially Private Optimizer with Filter-Aware Innovation Bias Correction", ICML 2026,
    arXiv:2605.03425 (no official code; update rule as catalogued in ``junaidaliop/zij``,
    ``docs/math/fiber.md``).
    X. Zhang, Z. Bu, B. Balle, M. Hong, M. Razaviyayn, V. Mirrokni, "DiSK: Differentially Private
    Optimizer with Simplified Kalman Filter for Noise Reduction", ICLR 2025.
    M. Abadi et al., "Deep Learning with Differential Privacy", CCS 2016.
    """
    _method(method)
    _check_data(data)
    n = data.X_train.shape[0]
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or not (1 <= batch_size <= n):
        raise ValueError(f"batch_size={batch_size!r} must be an integer in 1..{n}")
    _real("noise_multiplier", noise_multiplier, lo=0.0)
    _real("epochs", epochs, lo=0.0, lo_open=True)
    _real("max_norm", max_norm, lo=0.0, lo_open=True)
    _real("delta", delta, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    _count("n_curve", n_curve)
    seed = seed_from(random_state)
    q = batch_size / n
    steps = int(math.ceil(epochs / q))
    gamma = (1.0 - kappa) / kappa if gamma is None else gamma
    spec = METHODS[method]
    model = make_mlp(data.X_train.shape[1], hidden, data.n_classes, random_state=seed)
    sigma_w = noise_multiplier * max_norm / batch_size
    opt = make_optimizer(method, model.parameters(), noise_std=sigma_w, lr=lr, omega=omega, kappa=kappa, eps_v=eps_v, weight_decay=weight_decay)
    loss_fn = nn.functional.cross_entropy
    gen_sample = torch.Generator().manual_seed(10_007 * seed + 1)
    gen_noise = torch.Generator().manual_seed(10_007 * seed + 2)
    names = [k for k, _ in model.named_parameters()]
    params = dict(model.named_parameters())
    d_prev = {k: torch.zeros_like(v) for k, v in params.items()}
    curve_at = set(np.linspace(0, steps, n_curve + 1)[1:].round().astype(int).tolist())
    curve, clamp = [], []

    def accuracy() -> float:
        with torch.no_grad():
            return float((model(data.X_test).argmax(1) == data.y_test).float().mean())

    for t in range(steps):
        idx = torch.nonzero(torch.rand(n, generator=gen_sample) < q).squeeze(1)
        xb, yb = data.X_train[idx], data.y_train[idx]
        if spec["two_point"]:
            u = two_point_grads(model, loss_fn, xb, yb, d_prev, kappa=kappa, gamma=gamma)
        else:
            u = per_example_grads(model, loss_fn, xb, yb)
        u = {k: u[k] for k in names}
        g = privatize(u, max_norm=max_norm, noise_multiplier=noise_multiplier, expected_batch_size=batch_size, random_state=gen_noise)
        old = {k: v.detach().clone() for k, v in params.items()}
        for k, p in params.items():
            p.grad = g[k]
        opt.step()
        clamp.append(opt.last_clamp_fraction)
        d_prev = {k: params[k].detach() - old[k] for k in names}
        if t + 1 in curve_at:
            curve.append(accuracy())
    eps = epsilon_spent(noise_multiplier, q, steps, delta) if noise_multiplier > 0 else float("inf")
    with torch.no_grad():
        test_loss = float(loss_fn(model(data.X_test), data.y_test))
    return TrainResult(method, accuracy(), eps, float(noise_multiplier), sigma_w, steps, curve, float(np.mean(clamp)), test_loss)


# ---------------------------------------------------------------------------------------
# Opacus reference (agreement test and benchmark)
# ---------------------------------------------------------------------------------------


def opacus_dp_optimizer(model: nn.Module, optimizer: torch.optim.Optimizer, *, noise_multiplier: float, max_norm: float,
                        expected_batch_size: int, random_state: RandomState | torch.Generator = None):
    """Wrap ``model`` in Opacus's ``GradSampleModule`` and ``optimizer`` in its ``DPOptimizer``.

    Returns ``(grad_sample_module, dp_optimizer)``; ``loss_reduction="mean"``.

    Parameters
    ----------
    model : torch.nn.Module
        The network.
    optimizer : torch.optim.Optimizer
        The optimizer to wrap.
    noise_multiplier : float
        sigma_DP >= 0.
    max_norm : float
        Clipping norm > 0.
    expected_batch_size : int
        ``B`` (>= 1).
    random_state : int, numpy.random.Generator, torch.Generator or None
        Noise source; ``None`` lets Opacus use torch's global generator.

    Returns
    -------
    (opacus.GradSampleModule, opacus.optimizers.DPOptimizer)
        The wrapped model and optimizer (``loss_reduction="mean"``).

    References
    ----------
    A. Yousefpour et al., "Opacus: User-Friendly Differential Privacy Library in PyTorch", 2021;
    code https://github.com/pytorch/opacus.
    """
    from opacus import GradSampleModule
    from opacus.optimizers import DPOptimizer

    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise TypeError(f"optimizer must be a torch.optim.Optimizer, got {type(optimizer).__name__}")
    _real("noise_multiplier", noise_multiplier, lo=0.0)
    _real("max_norm", max_norm, lo=0.0, lo_open=True)
    _count("expected_batch_size", expected_batch_size)
    gen = None if random_state is None else _torch_gen(random_state)
    gsm = GradSampleModule(model, loss_reduction="mean")
    dpo = DPOptimizer(optimizer, noise_multiplier=noise_multiplier, max_grad_norm=max_norm, expected_batch_size=expected_batch_size,
                      loss_reduction="mean", generator=gen)
    return gsm, dpo


def opacus_step(gsm: nn.Module, dpo, x: torch.Tensor, y: torch.Tensor) -> float:
    """One DP step with Opacus: zero grads, forward, mean cross-entropy, backward, ``dpo.step()``.

    Parameters
    ----------
    gsm : opacus.GradSampleModule
        From :func:`opacus_dp_optimizer`.
    dpo : opacus.optimizers.DPOptimizer
        Likewise.
    x : Tensor, shape (B, ...)
        Inputs of the batch.
    y : Tensor, shape (B,)
        Labels of the batch.

    Returns
    -------
    float
        The batch's mean cross-entropy before the step.

    References
    ----------
    A. Yousefpour et al., "Opacus: User-Friendly Differential Privacy Library in PyTorch", 2021;
    code https://github.com/pytorch/opacus.
    """
    import warnings

    if not isinstance(gsm, nn.Module) or not hasattr(dpo, "step") or not hasattr(dpo, "zero_grad"):
        raise TypeError("gsm and dpo must be the pair returned by opacus_dp_optimizer")
    if not isinstance(x, torch.Tensor) or not isinstance(y, torch.Tensor) or x.ndim != 2 or y.ndim != 1 or len(x) != len(y) or len(x) == 0:
        raise ValueError("x must be (B, features) and y (B,) tensors with the same B >= 1")
    if not bool(torch.isfinite(x).all()):
        raise ValueError("x holds NaN or infinite values")
    dpo.zero_grad()
    with warnings.catch_warnings():
        # Opacus's per-sample hooks are full backward hooks; PyTorch notes (harmlessly) that
        # they fire although the input does not require grad.
        warnings.filterwarnings("ignore", message="Full backward hook is firing", category=UserWarning)
        loss = nn.functional.cross_entropy(gsm(x), y)
        loss.backward()
    dpo.step()
    return float(loss.detach())


# ---------------------------------------------------------------------------------------
# Experiment drivers (hyper-parameter selection on validation, accuracy against epsilon)
# ---------------------------------------------------------------------------------------


def _listed(name: str, values: object) -> list:
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise TypeError(f"{name} must be a non-empty sequence, got {type(values).__name__}")
    out = list(values)
    if not out:
        raise ValueError(f"{name} is empty; give at least one value")
    return out


def steps_for(epochs: float, batch_size: int, n: int) -> tuple[float, int]:
    """Sample rate ``q = batch_size / n`` and step count ``ceil(epochs / q)`` used by :func:`train_private`.

    Parameters
    ----------
    epochs : float
        Expected passes (> 0).
    batch_size : int
        Expected batch size (1..n).
    n : int
        Training rows (>= 1).

    Returns
    -------
    (float, int)
        ``q`` and ``T``.

    References
    ----------
    M. Abadi et al., "Deep Learning with Differential Privacy", CCS 2016.
    """
    n, batch_size = _count("n", n), _count("batch_size", batch_size)
    if batch_size > n:
        raise ValueError(f"batch_size={batch_size} exceeds n={n}")
    _real("epochs", epochs, lo=0.0, lo_open=True)
    q = batch_size / n
    return q, int(math.ceil(epochs / q))


def select_hyperparameters(
    data: TabularData,
    methods: Iterable[str],
    *,
    epsilon: float,
    delta: float,
    lr_grid: Iterable[float],
    eps_v_grid: Iterable[float],
    random_state: RandomState,
    epochs: float,
    batch_size: int,
    progress: bool = False,
    **train_kw,
):
    """Grid search of ``lr`` (and ``eps_v`` for methods with a correction) on ``data``'s held-out part.

    Every method gets the same learning-rate grid; methods whose correction subtracts
    something also get ``eps_v_grid`` (the floor is then a real hyper-parameter). One
    seed, noise calibrated to ``(epsilon, delta)``. The best configuration has
    the highest validation accuracy; ties (frequent on small validation sets) are broken
    by the lower validation cross-entropy.

    Parameters
    ----------
    data : TabularData
        As returned by :func:`load_tabular` (or :func:`validation_split`).
    methods : iterable of str
        Keys of :data:`METHODS`.
    epsilon : float
        Privacy budget of the search (> 0).
    delta : float
        In (0, 1).
    lr_grid : iterable of float
        Learning rates (> 0).
    eps_v_grid : iterable of float
        Floors (>= 0), for the correcting methods.
    random_state : int, numpy.random.Generator or None
        Seed (see ``icml26._common.check_random_state``).
    epochs : float
        Expected passes.
    batch_size : int
        Expected batch size.
    progress : bool
        Report progress with ``icml26._common.progress``.
    **train_kw
        Passed to :func:`train_private` (``max_norm``, ``hidden``, ``omega``, ``kappa``, ...).

    Returns
    -------
    best : dict
        ``{method: {"lr": ..., "eps_v": ..., "val_acc": ...}}``.
    table : pandas.DataFrame
        Every configuration tried with its validation accuracy.

    References
    ----------
    Duc Dm, Thao Do, Minh Son Hoang, Anh Le Duc Tran, Daeyoung Kim, Huy Nguyen, "FIBER: A
    Differentially Private Optimizer with Filter-Aware Innovation Bias Correction", ICML 2026,
    arXiv:2605.03425 (no official code; update rule as catalogued in ``junaidaliop/zij``,
    ``docs/math/fiber.md``).
    """
    import pandas as pd

    _check_data(data)
    methods = [_method(m) for m in _listed("methods", methods)]
    lr_grid = [_real("lr", v, lo=0.0, lo_open=True) for v in _listed("lr_grid", lr_grid)]
    eps_v_grid = [_real("eps_v", v, lo=0.0) for v in _listed("eps_v_grid", eps_v_grid)]
    seed = seed_from(random_state)
    q, steps = steps_for(epochs, batch_size, data.X_train.shape[0])
    sigma = noise_for_epsilon(epsilon, delta, q, steps)
    configs = []
    for m in methods:
        evs = list(eps_v_grid) if METHODS[m]["correction"] != "none" else [list(eps_v_grid)[0]]
        configs += [(m, lr, ev) for lr in lr_grid for ev in evs]
    rows = []
    for m, lr, ev in _progress(configs, desc="validation grid", disable=not progress):
        r = train_private(data, m, noise_multiplier=sigma, epochs=epochs, batch_size=batch_size, lr=lr, eps_v=ev, random_state=seed,
                          delta=delta, **train_kw)
        rows.append({"method": m, "lr": lr, "eps_v": ev if METHODS[m]["correction"] != "none" else float("nan"), "val_acc": r.test_acc, "val_loss": r.test_loss, "clamped": r.clamp_fraction})
    table = pd.DataFrame(rows)
    best = {}
    for m, sub in table.groupby("method", sort=False):
        row = sub.sort_values(["val_acc", "val_loss"], ascending=[False, True], kind="stable").iloc[0]
        best[m] = {"lr": float(row["lr"]), "eps_v": float(row["eps_v"]) if np.isfinite(row["eps_v"]) else 1e-8, "val_acc": float(row["val_acc"]), "val_loss": float(row["val_loss"])}
    return best, table


def accuracy_vs_epsilon(
    data: TabularData,
    hparams: Mapping[str, Mapping[str, float]],
    *,
    epsilons: Iterable[float],
    delta: float,
    seeds: Iterable[int],
    epochs: float,
    batch_size: int,
    progress: bool = False,
    **train_kw,
):
    """Test accuracy of every method in ``hparams`` at every ``epsilon`` and seed (one row per run).

    The noise multiplier depends only on ``(epsilon, delta, q, T)``, so all methods share it,
    and a seed fixes initial weights, batches and noise draws for every method alike.

    Parameters
    ----------
    data : TabularData
        As returned by :func:`load_tabular` (or :func:`validation_split`).
    hparams : mapping
        ``{method: {"lr": ..., "eps_v": ...}}``, e.g. from :func:`select_hyperparameters`.
    epsilons : iterable of float
        Privacy budgets (> 0).
    delta : float
        In (0, 1).
    seeds : iterable of int
        One run per seed, method and epsilon (each seed is a ``random_state``).
    epochs : float
        Expected passes.
    batch_size : int
        Expected batch size.
    progress : bool
        Report progress with ``icml26._common.progress``.
    **train_kw
        Passed to :func:`train_private` (``max_norm``, ``hidden``, ``omega``, ``kappa``, ...).

    Returns
    -------
    pandas.DataFrame
        One row per run: data, target_eps, seed, method, test_acc, epsilon, sigma_dp, sigma_w, steps, clamped, curve.

    References
    ----------
    Duc Dm, Thao Do, Minh Son Hoang, Anh Le Duc Tran, Daeyoung Kim, Huy Nguyen, "FIBER: A
    Differentially Private Optimizer with Filter-Aware Innovation Bias Correction", ICML 2026,
    arXiv:2605.03425 (no official code; update rule as catalogued in ``junaidaliop/zij``,
    ``docs/math/fiber.md``).
    """
    import pandas as pd

    _check_data(data)
    if not isinstance(hparams, Mapping) or not hparams:
        raise ValueError("hparams must be a non-empty mapping {method: {'lr': ..., 'eps_v': ...}} (see select_hyperparameters)")
    for m, hp in hparams.items():
        _method(m)
        if not isinstance(hp, Mapping) or "lr" not in hp or "eps_v" not in hp:
            raise ValueError(f"hparams[{m!r}] must hold 'lr' and 'eps_v'")
    epsilons = [_real("epsilon", e, lo=0.0, lo_open=True) for e in _listed("epsilons", epsilons)]
    seeds = [_count("seed", s_, 0) for s_ in _listed("seeds", seeds)]
    q, steps = steps_for(epochs, batch_size, data.X_train.shape[0])
    jobs = [(e, s, m) for e in epsilons for s in seeds for m in hparams]
    sigmas = {e: noise_for_epsilon(e, delta, q, steps) for e in epsilons}
    rows = []
    for e, s, m in _progress(jobs, desc=f"{data.name}: runs", disable=not progress):
        hp = hparams[m]
        r = train_private(data, m, noise_multiplier=sigmas[e], epochs=epochs, batch_size=batch_size, lr=hp["lr"], eps_v=hp["eps_v"],
                          random_state=s, delta=delta, **train_kw)
        rows.append({"data": data.name, "target_eps": e, "seed": s, "method": m, "test_acc": r.test_acc, "epsilon": r.epsilon, "sigma_dp": r.noise_multiplier, "sigma_w": r.noise_std, "steps": r.steps, "clamped": r.clamp_fraction, "curve": r.acc_curve})
    return pd.DataFrame(rows)


def dp_step_fn(
    method: str,
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    *,
    noise_multiplier: float,
    max_norm: float = 1.0,
    lr: float = 1e-2,
    omega: float = 0.5,
    kappa: float = 0.7,
    gamma: float | None = None,
    random_state: RandomState = 0,
) -> Callable[[], None]:
    """A closure doing one full DP step of ``method`` on the fixed batch ``(x, y)`` (for benchmarks).

    Per-example (two-point where the method uses it) gradients, clipping, noise with
    ``expected_batch_size = len(x)``, and the optimizer update, exactly as in :func:`train_private`.

    Parameters
    ----------
    method : str
        A key of :data:`METHODS`.
    model : torch.nn.Module
        The network.
    x : Tensor, shape (B, ...)
        Inputs of the batch.
    y : Tensor, shape (B,)
        Labels of the batch.
    noise_multiplier : float
        sigma_DP >= 0.
    max_norm : float
        Clipping norm > 0.
    lr : float
        Learning rate.
    omega : float
        Innovation gain, ``0 < omega < 4/3`` (1 is no filtering).
    kappa : float
        EMA weight on the new gradient, ``0 < kappa < 2`` (1 is no filtering).
    gamma : float, optional
        Extrapolation length.
    random_state : int, numpy.random.Generator or None
        Seed (see ``icml26._common.check_random_state``).

    Returns
    -------
    callable
        ``step()``, one DP step per call (it updates ``model`` in place).

    References
    ----------
    Duc Dm, Thao Do, Minh Son Hoang, Anh Le Duc Tran, Daeyoung Kim, Huy Nguyen, "FIBER: A
    Differentially Private Optimizer with Filter-Aware Innovation Bias Correction", ICML 2026,
    arXiv:2605.03425 (no official code; update rule as catalogued in ``junaidaliop/zij``,
    ``docs/math/fiber.md``).
    A. Yousefpour et al., "Opacus: User-Friendly Differential Privacy Library in PyTorch", 2021;
    code https://github.com/pytorch/opacus.
    """
    _method(method)
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if not isinstance(x, torch.Tensor) or not isinstance(y, torch.Tensor) or x.ndim < 2 or y.ndim != 1 or len(x) != len(y) or len(x) == 0:
        raise ValueError("x must be (B, features) and y (B,) tensors with the same B >= 1")
    if not bool(torch.isfinite(x).all()):
        raise ValueError("x holds NaN or infinite values")
    _real("noise_multiplier", noise_multiplier, lo=0.0)
    _real("max_norm", max_norm, lo=0.0, lo_open=True)
    kappa = _check_kappa(kappa)
    gamma = (1.0 - kappa) / kappa if gamma is None else gamma
    B = x.shape[0]
    opt = make_optimizer(method, model.parameters(), noise_std=noise_multiplier * max_norm / B, lr=lr, omega=omega, kappa=kappa)
    params = dict(model.named_parameters())
    state = {"d": {k: torch.zeros_like(v) for k, v in params.items()}}
    gen = _torch_gen(random_state)
    loss_fn = nn.functional.cross_entropy

    def step() -> None:
        if METHODS[method]["two_point"]:
            u = two_point_grads(model, loss_fn, x, y, state["d"], kappa=kappa, gamma=gamma)
        else:
            u = per_example_grads(model, loss_fn, x, y)
        g = privatize({k: u[k] for k in params}, max_norm=max_norm, noise_multiplier=noise_multiplier, expected_batch_size=B,
                      random_state=gen)
        old = {k: v.detach().clone() for k, v in params.items()}
        for k, p in params.items():
            p.grad = g[k]
        opt.step()
        state["d"] = {k: params[k].detach() - old[k] for k in params}

    return step
