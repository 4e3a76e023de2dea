"""Order samplers: the adjacent-swap Metropolis–Hastings chain (Alg. 1) and its baselines.

:class:`AdjacentSwapSampler` draws orders from the PASV distribution on the linear
extensions (Alg. 1, Lemma 4.1); :func:`uniform_permutations` draws the Shapley value's
orders and :func:`sample_linear_extensions_rejection` uniform linear extensions by
rejection (the naive PSV baseline).

Reference: K. Lee, Z. Liu, W. Tang, Y. Zhang, "Priority-Aware Shapley Value", ICML 2026,
arXiv:2602.09326. Conventions (closures ``R``, orders, bitmask game tables): :mod:`icml26.pasv`.
"""

from __future__ import annotations

import numpy as np

from .._common import RandomState, check_random_state
from ._checks import _check_closure, _check_int, _check_weights
from .posets import _kahn, _respects

__all__ = ["AdjacentSwapSampler", "uniform_permutations", "sample_linear_extensions_rejection"]


class AdjacentSwapSampler:
    """Adjacent-swap Metropolis–Hastings sampler for the PASV order distribution (Alg. 1, Lemma 4.1).

    Each step draws ``k`` uniformly from the ``n − 1`` adjacent position pairs; if ``π_k`` and
    ``π_{k+1}`` are incomparable under the closure, the swap is accepted with probability

    .. math:: α = \\min\\Big\\{1, \\frac{\\sum_{i∈M_k} λ_i/|M_k|}{\\sum_{j∈M'_k} λ_j/|M'_k|}\\Big\\},
              \\quad M_k = \\max_⪯(S_k),\\ M'_k = \\max_⪯(S_{k-1} ∪ \\{π_{k+1}\\}).

    ``n_chains`` independent chains run in lock-step (vectorised). Each chain keeps, for every
    player, the earliest position of any of its successors, so ``M_k`` and ``M'_k`` cost O(n).

    Parameters
    ----------
    R : bool array (n, n)
        Strict precedence closure (transitive, so "incomparable" is exact).
    lam : array (n,), optional
        Positive weights; default equal (PSV).
    n_chains : int
        Chains run in parallel.
    init : {"topological", "random"}
        Start every chain at the same Kahn order, or at a random topological order each.
    random_state : int, Generator or None
        Seed or generator of the proposals and of the random starts.

    References
    ----------
    .. [1] Lee et al., ICML 2026 (arXiv:2602.09326), Alg. 1 and Lemma 4.1.
    """

    def __init__(self, R: np.ndarray, lam=None, *, n_chains: int = 64, init: str = "topological", random_state=None):
        self.R = R = _check_closure(R)
        n = self.n = R.shape[0]
        if n < 2:
            raise ValueError(f"the sampler needs n >= 2 players, got n={n}")
        self.lam = _check_weights(np.ones(n) if lam is None else lam, n)
        n_chains = _check_int(n_chains, "n_chains")
        if init not in ("topological", "random"):
            raise ValueError(f"init={init!r}; use 'topological' or 'random'")
        self.n_chains = int(n_chains)
        self.rng = check_random_state(random_state)
        self.RT = np.ascontiguousarray(R.T)  # RT[b] = predecessors of b
        C = self.n_chains
        if init == "topological":
            start = _kahn(R, None)
            self.perm = np.tile(start, (C, 1))
        else:
            self.perm = np.stack([_kahn(R, self.rng) for _ in range(C)])
        self.pos = np.argsort(self.perm, axis=1)
        self.fsp = np.full((C, n), n, dtype=np.int64)  # earliest successor position
        for i in range(n):
            if R[i].any():
                self.fsp[:, i] = self.pos[:, R[i]].min(axis=1)
        self.n_steps = 0
        self.n_proposed = 0
        self.n_accepted = 0

    def step(self, n_steps: int = 1) -> AdjacentSwapSampler:
        """Advance every chain by ``n_steps`` MH steps.

        Parameters
        ----------
        n_steps : int
            Steps (>= 0).

        Returns
        -------
        AdjacentSwapSampler
            ``self``.

        References
        ----------
        .. [1] Lee et al., ICML 2026 (arXiv:2602.09326), Alg. 1.
        """
        n_steps = _check_int(n_steps, "n_steps", low=0)
        C, n = self.n_chains, self.n
        rows = np.arange(C)
        lam = self.lam
        perm, pos, fsp, R, RT = self.perm, self.pos, self.fsp, self.R, self.RT
        for _ in range(int(n_steps)):
            k = self.rng.integers(0, n - 1, size=C)  # swap positions k, k+1 (0-based)
            u = self.rng.random(C)
            a = perm[rows, k]
            b = perm[rows, k + 1]
            ok = ~R[a, b]  # incomparable (a is before b, so b ≺ a is impossible)
            kk = k[:, None]
            # M_k: maximal elements of positions 0..k (contains a)
            M_old = (pos <= kk) & (fsp > kk)
            # M'_k: maximal elements of positions 0..k-1 plus b
            M_new = (pos < kk) & (fsp >= kk) & ~RT[b]
            M_new[rows, b] = True
            ratio = (M_old @ lam / M_old.sum(1)) / (M_new @ lam / M_new.sum(1))
            acc = ok & (u < ratio)
            self.n_proposed += int(ok.sum())
            self.n_accepted += int(acc.sum())
            if acc.any():
                r, ka, a_, b_ = rows[acc], k[acc], a[acc], b[acc]
                perm[r, ka], perm[r, ka + 1] = b_, a_
                pos[r, a_], pos[r, b_] = ka + 1, ka
                pa, pb = RT[a_], RT[b_]  # (r, n) predecessors of a, b
                upd = (pa | pb) & (fsp[r] >= ka[:, None])
                newv = np.where(pb, ka[:, None], ka[:, None] + 1)
                fsp[r] = np.where(upd, newv, fsp[r])
        self.n_steps += int(n_steps)
        return self

    @property
    def acceptance_rate(self) -> float:
        """Accepted / proposed swaps (proposals of comparable neighbours excluded); 0 before any proposal."""
        return self.n_accepted / max(self.n_proposed, 1)

    def sample(self, n_samples: int, *, burn_in: int, thin: int) -> np.ndarray:
        """Run ``burn_in`` steps, then keep every chain's state every ``thin`` steps.

        Parameters
        ----------
        n_samples : int
            Orders to return (>= 1).
        burn_in : int
            Steps discarded first (>= 0).
        thin : int
            Steps between kept states (>= 1).

        Returns
        -------
        ndarray of int, shape (n_samples, n)
            Orders; samples ``c, c + n_chains, ..`` come from chain ``c``.

        References
        ----------
        .. [1] Lee et al., ICML 2026 (arXiv:2602.09326), Alg. 1 and Sec. 6.1 (burn-in, thinning).
        """
        n_samples = _check_int(n_samples, "n_samples")
        burn_in = _check_int(burn_in, "burn_in", low=0)
        thin = _check_int(thin, "thin")
        self.step(burn_in)
        out = []
        got = 0
        while got < n_samples:
            self.step(thin)
            out.append(self.perm.copy())
            got += self.n_chains
        return np.concatenate(out, axis=0)[:n_samples]


def uniform_permutations(n: int, n_samples: int, random_state: RandomState = None) -> np.ndarray:
    """``n_samples`` uniform random permutations of ``n`` players (the SV's order distribution).

    Parameters
    ----------
    n : int
        Number of players (>= 1).
    n_samples : int
        Number of permutations (>= 1).
    random_state : int, Generator or None
        Seed or generator.

    Returns
    -------
    ndarray of int, shape (n_samples, n)

    References
    ----------
    .. [1] Lee et al., ICML 2026 (arXiv:2602.09326), Sec. 2 (the SV as a random order value).
    """
    n = _check_int(n, "n")
    n_samples = _check_int(n_samples, "n_samples")
    rng = check_random_state(random_state)
    return np.argsort(rng.random((n_samples, n)), axis=1)


def sample_linear_extensions_rejection(
    R: np.ndarray, n_samples: int, random_state: RandomState = None, *, batch: int = 4096, max_draws: int = 50_000_000
) -> tuple[np.ndarray, int]:
    """Uniform linear extensions by rejection from uniform permutations (the naive baseline).

    Each kept order is an exact draw from ``Uniform(Π_⪯)``; the acceptance rate is ``|Π_⪯| / n!``.

    Parameters
    ----------
    R : ndarray of bool, shape (n, n)
        Strict precedence closure.
    n_samples : int
        Orders to return (>= 1).
    random_state : int, Generator or None
        Seed or generator.
    batch : int
        Permutations drawn at a time.
    max_draws : int
        Give up (``ValueError``) after this many permutations.

    Returns
    -------
    orders : ndarray of int, shape (n_samples, n)
    drawn : int
        Number of permutations drawn.

    References
    ----------
    .. [1] Lee et al., ICML 2026 (arXiv:2602.09326), Def. 2.2 (PSV = uniform on linear extensions).
    """
    R = _check_closure(R)
    n_samples = _check_int(n_samples, "n_samples")
    batch = _check_int(batch, "batch")
    max_draws = _check_int(max_draws, "max_draws")
    rng = check_random_state(random_state)
    n = R.shape[0]
    kept, drawn, got = [], 0, 0
    while got < n_samples:
        if drawn >= max_draws:
            raise ValueError(f"rejection sampling drew {drawn} permutations without enough linear extensions")
        P = uniform_permutations(n, batch, rng)
        drawn += batch
        ok = _respects(P, R)
        kept.append(P[ok])
        got += int(ok.sum())
    out = np.concatenate(kept)[:n_samples]
    return out, drawn
