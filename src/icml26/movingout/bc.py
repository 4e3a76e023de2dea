"""Behaviour cloning with a mixture-density policy (the stand-in for the paper's diffusion policy).

The policy maps an observation to a mixture of ``K`` diagonal Gaussians over the 2-D
command; it is trained by maximum likelihood on (observation, action) pairs and acts by
sampling, so that like a diffusion policy it can represent several modes (e.g. going
round the box on either side) and gives several candidates for BASS's selection.

References
----------
Bishop, "Mixture Density Networks", 1994. Chi et al., "Diffusion Policy", RSS 2023 (the
paper's backbone, replaced here). Kang et al. (2025), arXiv:2507.18623.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from .._common import RandomState, check_int, check_real, seed_from, torch_generator
from .geometry import GOAL

_N_EXTRA = 10
_BODY_LAYERS = [nn.Linear, nn.Tanh, nn.Linear, nn.Tanh]  # MixtureDensityPolicy.body, as built


def policy_features(obs: torch.Tensor) -> torch.Tensor:
    """The Moving Out state (n, 12) with relative positions and goal flags appended, shape (n, 22).

    Appended: heavy box − ego, light box − ego, heavy box − partner, partner − ego (each 2-D),
    and whether the heavy and the light box are in the goal zone (0/1). A fixed input map of
    our choice that spares the small MLP from learning differences of inputs.
    """
    obs = torch.as_tensor(obs, dtype=torch.float32)
    if obs.ndim != 2 or obs.shape[1] != 12:
        raise ValueError(f"obs must have shape (n, 12), got {tuple(obs.shape)}")
    x0, y0, x1, y1 = GOAL

    def inside(p: torch.Tensor) -> torch.Tensor:
        return ((p[:, 0] >= x0) & (p[:, 0] <= x1) & (p[:, 1] >= y0) & (p[:, 1] <= y1)).float()[:, None]

    ego, partner, light, heavy = obs[:, 0:2], obs[:, 4:6], obs[:, 8:10], obs[:, 10:12]
    return torch.cat([obs, heavy - ego, light - ego, heavy - partner, partner - ego, inside(heavy), inside(light)], 1)


def _features_np(obs: np.ndarray) -> np.ndarray:
    """:func:`policy_features` of a checked float32 array (n, 12) in NumPy, shape (n, 22), float32.

    The same values bit for bit: the differences are single float32 subtractions and the
    flags float32 comparisons with the same bounds (NumPy compares a float32 array with a
    Python float in float32, as torch does), so no rounding can differ. The per-step path
    of an agent, where the small torch ops of :func:`policy_features` cost more than the
    arithmetic.
    """
    x0, y0, x1, y1 = GOAL
    ego, partner, light, heavy = obs[:, 0:2], obs[:, 4:6], obs[:, 8:10], obs[:, 10:12]
    out = np.empty((obs.shape[0], 22), dtype=np.float32)
    out[:, 0:12] = obs
    out[:, 12:14] = heavy - ego
    out[:, 14:16] = light - ego
    out[:, 16:18] = heavy - partner
    out[:, 18:20] = partner - ego
    for col, p in ((20, heavy), (21, light)):
        out[:, col] = (p[:, 0] >= x0) & (p[:, 0] <= x1) & (p[:, 1] >= y0) & (p[:, 1] <= y1)
    return out


class MixtureDensityPolicy(nn.Module):
    """MLP with a mixture-of-Gaussians head: :math:`\\pi(a\\mid s) = \\sum_k w_k(s)\\,\\mathcal N(a;\\mu_k(s), \\mathrm{diag}\\,\\sigma_k(s)^2)`.

    Parameters
    ----------
    obs_dim, act_dim : int
    n_components : int
        Number of mixture components K.
    hidden : int
        Width of the two hidden layers.
    """

    def __init__(self, obs_dim: int = 12, act_dim: int = 2, n_components: int = 4, hidden: int = 64) -> None:
        super().__init__()
        self.obs_dim = check_int(obs_dim, "obs_dim")
        self.act_dim = check_int(act_dim, "act_dim")
        self.k = check_int(n_components, "n_components")
        hidden = check_int(hidden, "hidden")
        self.body = nn.Sequential(
            nn.Linear(self.obs_dim + (_N_EXTRA if self.obs_dim == 12 else 0), hidden),
            nn.Tanh(),
            nn.Linear(hidden, hidden),
            nn.Tanh(),
        )
        self.head = nn.Linear(hidden, self.k * (1 + 2 * self.act_dim))

    def _check(self, obs: torch.Tensor) -> torch.Tensor:
        obs = torch.as_tensor(obs, dtype=torch.float32)
        if obs.ndim != 2 or obs.shape[1] != self.obs_dim:
            raise ValueError(f"obs must have shape (n, {self.obs_dim}), got {tuple(obs.shape)}")
        if not torch.isfinite(obs).all():
            raise ValueError("obs must be finite")
        return obs

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Mixture logits (n, K), means (n, K, d) and log standard deviations (n, K, d)."""
        obs = self._check(obs)
        return self._heads(policy_features(obs) if self.obs_dim == 12 else obs)

    def _heads(self, feats: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """:meth:`forward` from the network's input (the features, (n, in)), without the checks.

        The same kernels on the same shapes as ``self.head(self.body(feats))`` (``nn.Linear``
        is ``F.linear``, ``nn.Tanh`` is ``torch.tanh``), without the module-call overhead.
        """
        body = self.body._modules
        if (
            self.body.__class__ is not nn.Sequential
            or self.head.__class__ is not nn.Linear
            or [m.__class__ for m in body.values()] != _BODY_LAYERS
        ):
            h = self.head(self.body(feats))  # a replaced network: its own call
        else:
            p0, p1, p2 = body["0"]._parameters, body["2"]._parameters, self.head._parameters
            h = torch.tanh(F.linear(feats, p0["weight"], p0["bias"]))
            h = torch.tanh(F.linear(h, p1["weight"], p1["bias"]))
            h = F.linear(h, p2["weight"], p2["bias"])  # (n, K * (1 + 2d))
        n, k, d = feats.shape[0], self.k, self.act_dim
        logits = h[:, :k]
        mu = torch.tanh(h[:, k : k + k * d]).reshape(n, k, d)
        log_sd = h[:, k + k * d :].reshape(n, k, d).clamp(-5.0, 1.0)
        return logits, mu, log_sd

    def _forward_np(self, obs: np.ndarray) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """:meth:`forward` of observations given as an array (n, obs_dim) or (obs_dim,): checked in NumPy."""
        o = np.asarray(obs, dtype=np.float32)
        if o.ndim == 1:
            o = o[None]
        if o.ndim != 2 or o.shape[1] != self.obs_dim:
            raise ValueError(f"obs must have shape (n, {self.obs_dim}), got {tuple(o.shape)}")
        if not np.isfinite(o).all():
            raise ValueError("obs must be finite")
        return self._heads_np(o)

    def _heads_np(self, obs: np.ndarray) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """:meth:`forward` of a checked float32 array (n, obs_dim), without the checks."""
        return self._heads(torch.from_numpy(_features_np(obs) if self.obs_dim == 12 else np.ascontiguousarray(obs)))

    def log_prob(self, obs: torch.Tensor, act: torch.Tensor) -> torch.Tensor:
        """:math:`\\log \\pi(a\\mid s)` per row, shape (n,)."""
        return self._log_prob(self(obs), act)

    def _log_prob(self, heads: tuple[torch.Tensor, torch.Tensor, torch.Tensor], act: torch.Tensor) -> torch.Tensor:
        logits, mu, log_sd = heads
        act = torch.as_tensor(act, dtype=torch.float32)
        if act.shape != (mu.shape[0], self.act_dim):
            raise ValueError(f"act must have shape ({mu.shape[0]}, {self.act_dim}), got {tuple(act.shape)}")
        z = (act[:, None, :] - mu) / log_sd.exp()  # (n, K, d)
        comp = (-0.5 * z**2 - log_sd - 0.5 * np.log(2 * np.pi)).sum(-1)  # (n, K)
        return torch.logsumexp(torch.log_softmax(logits, -1) + comp, -1)

    @torch.no_grad()
    def sample(self, obs: np.ndarray, n_samples: int = 1, generator: torch.Generator | None = None) -> np.ndarray:
        """Draw ``n_samples`` actions per observation, clipped to [-1, 1]; shape (n, n_samples, d)."""
        n_samples = check_int(n_samples, "n_samples")
        return self._draw(self._forward_np(obs), n_samples, generator)

    def _draw(
        self, heads: tuple[torch.Tensor, torch.Tensor, torch.Tensor], n_samples: int, generator: torch.Generator | None
    ) -> np.ndarray:
        """:meth:`sample` from the mixture's parameters (:meth:`forward`'s output); shape (n, n_samples, d)."""
        logits, mu, log_sd = heads
        n = mu.shape[0]
        comp = torch.multinomial(torch.softmax(logits, -1), n_samples, replacement=True, generator=generator)  # (n, S)
        idx = comp[..., None].expand(n, n_samples, self.act_dim)
        m = torch.gather(mu, 1, idx)
        s = torch.gather(log_sd.exp(), 1, idx)
        eps = torch.randn(m.shape, generator=generator)
        return (m + s * eps).clamp(-1, 1).numpy()

    @torch.no_grad()
    def mode(self, obs: np.ndarray) -> np.ndarray:
        """The mean of the most probable component per observation, shape (n, d)."""
        return self._mode(self._forward_np(obs))

    @staticmethod
    def _mode(heads: tuple[torch.Tensor, torch.Tensor, torch.Tensor]) -> np.ndarray:
        """:meth:`mode` from the mixture's parameters (:meth:`forward`'s output); shape (n, d)."""
        logits, mu, _ = heads
        return mu[torch.arange(mu.shape[0]), logits.argmax(-1)].numpy()


def fit_mdn_policy(
    obs: np.ndarray,
    actions: np.ndarray,
    *,
    n_components: int = 4,
    hidden: int = 64,
    epochs: int = 60,
    batch_size: int = 256,
    lr: float = 3e-3,
    random_state: RandomState = None,
) -> MixtureDensityPolicy:
    """Behaviour cloning: maximise :math:`\\sum_i \\log \\pi(a_i\\mid s_i)` with Adam.

    Parameters
    ----------
    obs : array_like, shape (n, obs_dim)
    actions : array_like, shape (n, act_dim)
    n_components, hidden
        As in :class:`MixtureDensityPolicy`.
    epochs, batch_size, lr
        Optimisation settings.
    random_state : int, Generator or None
        Seeds the initial weights and the batch order.

    Returns
    -------
    MixtureDensityPolicy
        In eval mode; ``policy.train_nll`` holds the last epoch's mean negative log-likelihood.
    """
    x = np.asarray(obs, dtype=np.float32)
    y = np.asarray(actions, dtype=np.float32)
    if x.ndim != 2 or y.ndim != 2 or x.shape[0] != y.shape[0] or x.shape[0] == 0:
        raise ValueError(f"obs and actions must be non-empty 2-D arrays with equal rows, got {x.shape} and {y.shape}")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        raise ValueError("obs and actions must be finite")
    epochs, batch_size = check_int(epochs, "epochs"), check_int(batch_size, "batch_size")
    lr = check_real(lr, "lr", lo=0.0, lo_open=True)
    torch.manual_seed(seed_from(random_state))
    policy = MixtureDensityPolicy(x.shape[1], y.shape[1], n_components, hidden)
    opt = torch.optim.Adam(policy.parameters(), lr=lr)
    gen = torch_generator(random_state)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    # the network's input once for all rows: the features are row-wise, so a batch's rows are these rows
    ft = policy_features(xt) if policy.obs_dim == 12 else xt  # (n, in)
    for _ in range(epochs):
        perm = torch.randperm(len(xt), generator=gen)
        total = 0.0
        for i in range(0, len(xt), batch_size):
            b = perm[i : i + batch_size]
            loss = -policy._log_prob(policy._heads(ft[b]), yt[b]).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item() * len(b)
        policy.train_nll = total / len(xt)
    return policy.eval()
