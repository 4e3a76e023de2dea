"""The discovery reward: newly concretised intent minus a capped token penalty.

.. math::

    R_t = \\Delta A_t - \\min\\bigl(\\lambda \\max(0, \\text{tok}(r_t) - \\tau), C\\bigr),

with :math:`\\Delta A_t` the turn's increase of the raw awareness score averaged over the
criteria, :math:`\\lambda = 10^{-3}`, :math:`\\tau = 250` tokens and :math:`C = 1` (the
authors' code; the paper writes :math:`R_d = |I_{t+1}| - |I_t|`, the same count without the
half credit for emerging intents and the averaging over criteria).

References
----------
Kim et al., "DiscoverLLM", ICML 2026, arXiv:2602.03429, Sec. 3; authors' code
``pipeline/rewards.py`` (https://github.com/tsook/discoverllm).
"""

from __future__ import annotations

from .._common import check_int, check_real

__all__ = ["token_penalty", "discovery_reward"]


def token_penalty(tokens: int, *, lam: float = 1e-3, tau: float = 250.0, cap: float = 1.0) -> float:
    """Capped token penalty :math:`\\min(\\lambda \\max(0, \\text{tokens} - \\tau), C)`.

    Parameters
    ----------
    tokens : int
        Length of the assistant's message in tokens (>= 0).
    lam, tau, cap : float
        Slope per token, free allowance, and cap (all >= 0).

    Returns
    -------
    float
    """
    tokens = check_int(tokens, "tokens", low=0)
    lam = check_real(lam, "lam", lo=0.0)
    tau = check_real(tau, "tau", lo=0.0)
    cap = check_real(cap, "cap", lo=0.0)
    return min(lam * max(0.0, tokens - tau), cap)


def discovery_reward(delta_awareness: float, tokens: int, *, lam: float = 1e-3, tau: float = 250.0, cap: float = 1.0) -> float:
    """Turn reward :math:`R_t = \\Delta A_t - \\text{token\\_penalty}(\\text{tokens})`.

    Parameters
    ----------
    delta_awareness : float
        :math:`\\Delta A_t`, the awareness gain of the turn (finite; never negative in the
        simulator, since awareness never decreases).
    tokens : int
        Message length in tokens.
    lam, tau, cap : float
        As in :func:`token_penalty`.

    Returns
    -------
    float
    """
    da = check_real(delta_awareness, "delta_awareness")
    return da - token_penalty(tokens, lam=lam, tau=tau, cap=cap)
