"""Stages 2 and 3 of COBRA-style allocation (R): TA-LC and the Dirichlet rank allocation under a budget.

:func:`ta_lc` mixes contribution and adaptation demand, :math:`p_l \\propto c_l^{a}
g_l^{1-a}`; :func:`dirichlet_rank_allocation` turns :math:`p` into ranks through a
Dirichlet variational posterior over the budget shares, rounded by
:func:`largest_remainder_ranks` so that the budget is never exceeded
(:func:`share_ranks` rounds shares directly).

References
----------
Ding et al., *COBRA*, ICML 2026 (abstract only; stages reconstructed).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from .._common import RandomState, check_int, check_real, seed_from
from ._checks import _int_vector, _positive_vector

# --------------------------------------------------------------------------- stage 2: TA-LC


def ta_lc(contribution: Sequence[float], demand: Sequence[float], a: float = 0.5) -> np.ndarray:
    """Stage 2: task-adaptive layer conductance :math:`p_l \\propto c_l^{a}\\, g_l^{1-a}`.

    Both signals are normalised to the simplex first (:math:`c_l = C_l/\\sum C`,
    :math:`g_l = G_l/\\sum G`). ``a = 1`` is conductance only, ``a = 0`` gradient only.

    Parameters
    ----------
    contribution : sequence of float, shape (L,)
        Layer contributions :math:`C_l > 0` (:func:`layer_contributions`).
    demand : sequence of float, shape (L,)
        Adaptation demand :math:`G_l > 0` (:func:`lora_gradient_demand`).
    a : float in [0, 1]
        The mixing exponent.

    Returns
    -------
    numpy.ndarray, shape (L,)
        :math:`p`, on the simplex.

    References
    ----------
    Ding et al., ICML 2026 (TA-LC named in the abstract; the geometric mixture is our
    reconstruction).
    """
    c = _positive_vector(contribution, "contribution")
    g = _positive_vector(demand, "demand")
    if c.shape != g.shape:
        raise ValueError(f"contribution and demand must have the same length, got {c.size} and {g.size}")
    a = check_real(a, "a", lo=0.0, hi=1.0)
    c, g = c / c.sum(), g / g.sum()
    logp = a * np.log(c) + (1.0 - a) * np.log(g)
    p = np.exp(logp - logp.max())
    return p / p.sum()


# --------------------------------------------------------------------------- stage 3: allocation


def largest_remainder_ranks(
    target_ranks: Sequence[float],
    costs: Sequence[int],
    budget: int,
    *,
    min_rank: int = 1,
    max_ranks: Sequence[int] | None = None,
) -> np.ndarray:
    """Integer ranks near real targets whose parameter cost never exceeds the budget.

    Start from :math:`r_l = \\operatorname{clip}(\\lfloor t_l \\rfloor, r_{\\min}, r^{\\max}_l)`;
    while :math:`\\sum_l c_l r_l > P`, take one rank from the layer most above its target
    (among those above ``min_rank``); then give one more rank to layers in order of
    decreasing remainder :math:`t_l - r_l > 0` whenever it still fits in the budget;
    finally, while some layer below its largest rank still fits in what is left, give one
    more rank to the one furthest below its target (largest :math:`t_l - r_l`, which may
    be negative). Clipping to ``min_rank`` can push the floors over the budget and the
    reductions can then leave much of it unspent; the last pass spends it, so that what
    stays unspent is smaller than the cost of one rank of every layer that can still grow.

    Parameters
    ----------
    target_ranks : sequence of float, shape (L,)
        Real-valued ranks :math:`t_l \\ge 0`.
    costs : sequence of int, shape (L,)
        Parameters per unit of rank, :math:`c_l = d^{in}_l + d^{out}_l` for LoRA.
    budget : int
        Parameter budget :math:`P`; it must afford ``min_rank`` in every layer.
    min_rank : int
        Smallest rank per layer.
    max_ranks : sequence of int, optional
        Largest rank per layer (e.g. :math:`\\min(d^{in}_l, d^{out}_l)`).

    Returns
    -------
    numpy.ndarray of int, shape (L,)
        Ranks with :math:`\\sum_l c_l r_l \\le P` and
        :math:`P - \\sum_l c_l r_l < \\min\\{c_l : r_l < r^{\\max}_l\\}`.

    References
    ----------
    The largest-remainder (Hamilton) apportionment method; Ding et al., ICML 2026
    (rounding under a budget, reconstructed).
    """
    t = _positive_vector(target_ranks, "target_ranks", allow_zero=True)
    c = _int_vector(costs, "costs", low=1)
    if c.size != t.size:
        raise ValueError(f"costs must have one entry per layer ({t.size}), got {c.size}")
    budget = check_int(budget, "budget", low=1)
    min_rank = check_int(min_rank, "min_rank", low=0)
    if max_ranks is None:
        mx = np.full(t.size, np.iinfo(np.int64).max // 4)
    else:
        mx = _int_vector(max_ranks, "max_ranks", low=max(min_rank, 1))
        if mx.size != t.size:
            raise ValueError(f"max_ranks must have one entry per layer ({t.size}), got {mx.size}")
    floor_cost = int((c * min_rank).sum())
    if floor_cost > budget:
        raise ValueError(
            f"budget={budget} is smaller than min_rank={min_rank} in every layer, which costs {floor_cost} parameters"
        )
    t = np.minimum(t, mx)
    r = np.clip(np.floor(t).astype(np.int64), min_rank, mx)
    while int((c * r).sum()) > budget:
        over = np.where(r > min_rank, r - t, -np.inf)
        r[int(np.argmax(over))] -= 1
    left = budget - int((c * r).sum())
    rem = t - r
    for i in np.argsort(-rem, kind="stable"):
        if rem[i] <= 0:
            break
        if r[i] < mx[i] and c[i] <= left:
            r[i] += 1
            left -= int(c[i])
    # what clipping to min_rank (or a remainder that did not fit) left unspent: one more rank at a
    # time to the layer furthest below its target that still fits, until no layer fits
    while True:
        fits = (r < mx) & (c <= left)
        if not fits.any():
            break
        i = int(np.argmax(np.where(fits, t - r, -np.inf)))
        r[i] += 1
        left -= int(c[i])
    return r


def share_ranks(
    shares: Sequence[float], costs: Sequence[int], budget: int, *, min_rank: int = 1, max_ranks: Sequence[int] | None = None
) -> np.ndarray:
    """Ranks from budget shares: :math:`t_l = \\pi_l P / c_l`, rounded by :func:`largest_remainder_ranks`.

    With :math:`\\pi = p` this is the deterministic allocation (no Bayesian stage).

    Parameters
    ----------
    shares : sequence of float, shape (L,)
        Fractions :math:`\\pi_l \\ge 0` of the budget (normalised here).
    costs, budget, min_rank, max_ranks
        As in :func:`largest_remainder_ranks`.

    Returns
    -------
    numpy.ndarray of int, shape (L,)

    References
    ----------
    Ding et al., ICML 2026 (reconstructed).
    """
    s = _positive_vector(shares, "shares", allow_zero=True)
    if s.sum() <= 0:
        raise ValueError("shares must not all be zero")
    c = _int_vector(costs, "costs", low=1)
    if c.size != s.size:
        raise ValueError(f"costs must have one entry per layer ({s.size}), got {c.size}")
    budget = check_int(budget, "budget", low=1)
    return largest_remainder_ranks(s / s.sum() * budget / c, c, budget, min_rank=min_rank, max_ranks=max_ranks)


@dataclass
class DirichletAllocation:
    """The result of :func:`dirichlet_rank_allocation`.

    Attributes
    ----------
    ranks : numpy.ndarray of int, shape (L,)
        The integer ranks (cost within the budget).
    shares : numpy.ndarray, shape (L,)
        The posterior mean budget shares :math:`\\mathbb E_q[\\pi]`.
    eta : numpy.ndarray, shape (L,)
        The variational Dirichlet concentration.
    elbo : numpy.ndarray, shape (steps,)
        The objective's Monte Carlo estimate at each step.
    cost : int
        :math:`\\sum_l c_l r_l`.
    """

    ranks: np.ndarray
    shares: np.ndarray
    eta: np.ndarray
    elbo: np.ndarray
    cost: int


def dirichlet_rank_allocation(
    p: Sequence[float],
    costs: Sequence[int],
    budget: int,
    *,
    kappa: float = 50.0,
    steps: int = 300,
    lr: float = 0.05,
    n_samples: int = 32,
    min_rank: int = 1,
    max_ranks: Sequence[int] | None = None,
    random_state: RandomState = None,
) -> DirichletAllocation:
    """Stage 3 (R): a Dirichlet variational allocation of a parameter budget, then rounding.

    Budget shares :math:`\\pi` on the simplex, prior :math:`\\mathrm{Dir}(\\kappa p)`,
    variational posterior :math:`q = \\mathrm{Dir}(\\eta)`; maximise

    .. math::

        \\mathcal L(\\eta) = \\mathbb E_q\\Big[\\sum_l p_l \\log\\big(1 + r_l(\\pi)\\big)\\Big]
        - \\mathrm{KL}\\big(q \\,\\|\\, \\mathrm{Dir}(\\kappa p)\\big),\\qquad
        r_l(\\pi) = \\pi_l P / c_l,

    with reparameterised samples (``torch.distributions.Dirichlet.rsample``) and Adam on
    :math:`\\log \\eta`. The ranks are :math:`\\mathbb E_q[\\pi_l] P / c_l` rounded by
    :func:`largest_remainder_ranks`, so that :math:`\\sum_l c_l r_l \\le P`.

    Parameters
    ----------
    p : sequence of float, shape (L,)
        TA-LC distribution (:func:`ta_lc`); positive.
    costs : sequence of int, shape (L,)
        Parameters per unit of rank.
    budget : int
        Parameter budget :math:`P`.
    kappa : float
        Prior concentration.
    steps, lr, n_samples : int, float, int
        Adam steps, learning rate and Monte Carlo samples per step.
    min_rank, max_ranks
        As in :func:`largest_remainder_ranks`.
    random_state : int, Generator or None
        Seeds the Monte Carlo samples.

    Returns
    -------
    DirichletAllocation

    References
    ----------
    Ding et al., ICML 2026 ("Bayesian rank allocation" named in the abstract; this
    objective, prior and optimiser are our reconstruction).
    """
    pv = _positive_vector(p, "p")
    c = _int_vector(costs, "costs", low=1)
    if c.size != pv.size:
        raise ValueError(f"costs must have one entry per layer ({pv.size}), got {c.size}")
    budget = check_int(budget, "budget", low=1)
    min_rank = check_int(min_rank, "min_rank", low=0)
    if int((c * min_rank).sum()) > budget:
        raise ValueError(
            f"budget={budget} is smaller than min_rank={min_rank} in every layer, which costs {int((c * min_rank).sum())} parameters"
        )
    kappa = check_real(kappa, "kappa", lo=0.0, lo_open=True)
    steps = check_int(steps, "steps", low=1)
    lr = check_real(lr, "lr", lo=0.0, lo_open=True)
    n_samples = check_int(n_samples, "n_samples", low=1)
    from torch.distributions.dirichlet import _Dirichlet

    gen = torch.Generator().manual_seed(seed_from(random_state))
    pv = pv / pv.sum()
    prior_c = torch.tensor(kappa * pv, dtype=torch.float64)  # (L,) the prior Dir(kappa p)
    # the prior's terms of KL(Dir(eta) || Dir(kappa p)), which do not change over the steps
    prior_sum_lgamma = prior_c.sum(-1).lgamma()
    prior_lgamma = prior_c.lgamma()
    pt = torch.tensor(pv, dtype=torch.float64)
    scale = torch.tensor(budget / c, dtype=torch.float64)  # (L,) rank per unit share
    log_eta = torch.tensor(np.log(kappa * pv), dtype=torch.float64, requires_grad=True)
    opt = torch.optim.Adam([log_eta], lr=lr)
    history = np.empty(steps)
    sample_shape = (n_samples, pv.size)
    # rsample draws from torch's global generator; fork it once so the caller's state is kept
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(torch.randint(0, 2**31 - 1, (1,), generator=gen)))
        for s in range(steps):
            # the operations of Dirichlet(eta).rsample((S,)) and kl_divergence(Dir(eta), prior),
            # in their order, without the distribution objects' checks and dispatch
            eta_t = log_eta.exp()
            pi = _Dirichlet.apply(eta_t.expand(sample_shape))  # (S, L)
            lik = (pt * torch.log1p(pi * scale)).sum(1).mean()
            sum_eta = eta_t.sum(-1)
            t1 = sum_eta.lgamma() - prior_sum_lgamma
            t2 = (eta_t.lgamma() - prior_lgamma).sum(-1)
            t3 = eta_t - prior_c
            t4 = eta_t.digamma() - sum_eta.digamma().unsqueeze(-1)
            elbo = lik - (t1 - t2 + (t3 * t4).sum(-1))
            opt.zero_grad()
            (-elbo).backward()
            opt.step()
            history[s] = float(elbo.detach())
    eta = log_eta.detach().exp().numpy()
    shares = eta / eta.sum()
    ranks = largest_remainder_ranks(shares * budget / c, c, budget, min_rank=min_rank, max_ranks=max_ranks)
    return DirichletAllocation(ranks=ranks, shares=shares, eta=eta, elbo=history, cost=int((c * ranks).sum()))
