"""The optimizer: :class:`FilteredDPAdamW` and the methods compared (:data:`METHODS`).

AdamW on temporally filtered privatised gradients (filter ``"none"``, ``"ema"`` or
``"innovation"``) with a second-moment correction from :data:`CORRECTIONS` (``"none"``,
DP-AdamBC's ``"sigma2"``, FIBER's filter-aware ``"filter"``); :func:`make_optimizer`
configures it as one of :data:`METHODS` (DP-AdamW, DP-AdamBC, DiSK, FIBER and its ablations).

Reference: Duc Dm, Thao Do, Minh Son Hoang, Anh Le Duc Tran, Daeyoung Kim, Huy Nguyen,
"FIBER: A Differentially Private Optimizer with Filter-Aware Innovation Bias Correction",
ICML 2026, arXiv:2605.03425. Overview: :mod:`icml26.fiber`.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch

from ._checks import _real
from .filters import FILTERS, ema_attenuation, innovation_attenuation

__all__ = ["CORRECTIONS", "METHODS", "FilteredDPAdamW", "make_optimizer"]


CORRECTIONS: tuple[str, ...] = ("none", "sigma2", "filter")


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


def _method(method: object) -> str:
    if not isinstance(method, str) or method not in METHODS:
        raise ValueError(f"method={method!r} is not known; use one of {list(METHODS)}")
    return method


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


def make_optimizer(
    method: str,
    params,
    *,
    noise_std: float,
    lr: float = 1e-3,
    omega: float = 0.5,
    kappa: float = 0.7,
    eps_v: float = 1e-8,
    **kwargs,
) -> FilteredDPAdamW:
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
    return FilteredDPAdamW(
        params,
        lr=lr,
        filter=spec["filter"],
        correction=spec["correction"],
        omega=omega,
        kappa=kappa,
        noise_std=noise_std,
        eps_v=eps_v,
        **kwargs,
    )
