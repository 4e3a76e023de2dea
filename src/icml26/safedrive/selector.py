"""Stage A of SMD, adversary selection: candidate features, the :class:`SelectorPolicy`
trained by GRPO (:func:`grpo_loss`, :func:`train_selector`) and the closest / random
baselines.

References
----------
Zhou et al., *SafeMVDrive / SMD*, ICML 2026, arXiv:2505.17727; https://github.com/zhoujiawei3/SafeMVDrive
Z. Shao et al. *DeepSeekMath* (2024), arXiv:2402.03300 — GRPO.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._common import RandomState, check_int, check_random_state, check_real, seed_from
from .._grpo import group_advantages
from ._optim import _Adam
from .road import SceneBatch, _check_batch

# ----------------------------------------------------------------------------- stage A: selection
N_FEATURES = 9


def candidate_features(scenes: SceneBatch) -> tuple[np.ndarray, np.ndarray]:
    """Per-slot features at :math:`t = 0` for the selector (stand-in for what the VLM reads
    from the marked multi-view images). Slot 0 is the "no vehicle" option, described by a
    flag and scene summaries.

    Features of a candidate: relative :math:`x`/30, relative :math:`y` / lane width,
    relative speed / 5, speed / 15, :math:`|\\Delta x|`/30, ahead flag, same-lane flag,
    closing time :math:`\\min(|\\Delta x|/\\max(\\text{closing speed}, 0.1), 10)/10`, none flag.

    Returns
    -------
    features : ndarray of float32, shape (S, N, 9)
    mask : ndarray of bool, shape (S, N)
        Allowed choices (slot 0 always).

    Parameters
    ----------
    scenes : SceneBatch

    References
    ----------
    Zhou et al., *SafeMVDrive / SMD*, ICML 2026, arXiv:2505.17727; https://github.com/zhoujiawei3/SafeMVDrive
    """
    b = _check_batch(scenes)
    s = b.states[:, 0]  # (S, N, 4)
    ego = s[:, :1]
    dx = s[..., 0] - ego[..., 0]
    dy = s[..., 1] - ego[..., 1]
    dv = s[..., 3] - ego[..., 3]
    closing = np.where(dx > 0, -dv, dv)
    ttc = np.minimum(np.abs(dx) / np.maximum(closing, 0.1), 10.0) / 10.0
    same = np.abs(dy) < b.config.lane_width / 2
    f = np.stack(
        [
            dx / 30,
            dy / b.config.lane_width,
            dv / 5,
            s[..., 3] / 15,
            np.abs(dx) / 30,
            (dx > 0).astype(float),
            same.astype(float),
            ttc,
            np.zeros_like(dx),
        ],
        -1,
    )
    cand = b.present.copy()
    cand[:, 0] = False
    far = np.where(cand, np.abs(dx), np.inf).min(1)
    f[:, 0] = 0.0
    f[:, 0, 4] = np.minimum(far, 60) / 30
    f[:, 0, 3] = cand.sum(1) / 8
    f[:, 0, 8] = 1.0
    f[~b.present] = 0.0
    return f.astype(np.float32), b.present.copy()


class SelectorPolicy:
    """Adversary selector (stand-in for the GRPO-trained Qwen2.5-VL): a shared MLP scores
    every slot; a softmax over the allowed slots (0 = "no vehicle") is the policy
    :math:`\\pi_\\theta(a \\mid \\text{scene})`.

    Parameters
    ----------
    hidden : int
    random_state : int, Generator or None

    References
    ----------
    Zhou et al., *SafeMVDrive / SMD*, ICML 2026, arXiv:2505.17727; https://github.com/zhoujiawei3/SafeMVDrive
    Shao et al., *DeepSeekMath*, arXiv:2402.03300 (2024) — GRPO.
    """

    def __init__(self, hidden: int = 32, random_state: RandomState = None) -> None:
        import torch

        self.hidden = check_int(hidden, "hidden")
        torch.manual_seed(seed_from(random_state))
        self.net = torch.nn.Sequential(torch.nn.Linear(N_FEATURES, self.hidden), torch.nn.Tanh(), torch.nn.Linear(self.hidden, 1))
        self.history: list[dict[str, float]] = []

    def log_probs(self, features, mask):
        """Log-probabilities, shape (S, N) (``-inf`` where not allowed); torch tensors.

        Returns
        -------
        torch.Tensor, shape (S, N)
        """
        import torch

        f = torch.as_tensor(np.asarray(features, dtype=np.float32))
        m = torch.as_tensor(np.asarray(mask, dtype=bool))
        if f.ndim != 3 or f.shape[-1] != N_FEATURES or m.shape != f.shape[:2]:
            raise ValueError(f"features must be (S, N, {N_FEATURES}) and mask (S, N); got {tuple(f.shape)} and {tuple(m.shape)}")
        logits = self.net(f)[..., 0].masked_fill(~m, -1e9)
        return torch.log_softmax(logits, -1)

    def __call__(self, features: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Greedy choice per scene (the selector's answer)."""
        import torch

        with torch.no_grad():
            return self.log_probs(features, mask).argmax(-1).numpy()

    def copy(self) -> SelectorPolicy:
        """An independent copy (the GRPO reference policy).

        Returns
        -------
        SelectorPolicy
        """
        import copy

        return copy.deepcopy(self)


def grpo_loss(logp_new, logp_old, logp_ref, rewards, *, clip_eps: float = 0.2, beta: float = 0.01, eps: float = 1e-4):
    """The GRPO objective (Shao et al. 2024) for single-token answers, as a loss to minimise.

    With groups of :math:`G` sampled answers per prompt and rewards :math:`r_{ig}`,

    .. math::
        \\hat A_{ig} = \\frac{r_{ig} - \\operatorname{mean}_g r_{ig}}{\\operatorname{std}_g r_{ig} + \\epsilon},\\quad
        \\rho_{ig} = \\frac{\\pi_\\theta(a_{ig})}{\\pi_{\\text{old}}(a_{ig})},

    .. math::
        \\mathcal L = -\\frac{1}{BG}\\sum_{i,g}\\Bigl[\\min\\bigl(\\rho_{ig}\\hat A_{ig},
        \\operatorname{clip}(\\rho_{ig}, 1-\\varepsilon, 1+\\varepsilon)\\hat A_{ig}\\bigr)
        - \\beta\\,\\Bigl(\\frac{\\pi_{\\text{ref}}}{\\pi_\\theta} - \\log\\frac{\\pi_{\\text{ref}}}{\\pi_\\theta} - 1\\Bigr)\\Bigr],

    the KL term being the unbiased "k3" estimator used by GRPO. ``std`` is the sample
    standard deviation (torch's default, as in the open-r1 / VLM-R1 trainer the authors
    build on), computed by :func:`icml26._grpo.group_advantages` with ``sd="sample"``.

    Parameters
    ----------
    logp_new, logp_old, logp_ref : torch.Tensor, shape (B, G)
        Log-probabilities of the sampled answers under the current, sampling and
        reference policies (only ``logp_new`` carries gradients).
    rewards : torch.Tensor, shape (B, G)
    clip_eps, beta, eps : float

    Returns
    -------
    torch.Tensor
        Scalar loss.

    Raises
    ------
    TypeError
        For settings that are not numbers.
    ValueError
        For inputs of different shapes, not ``(B, G)`` with ``G >= 2``, rewards that are
        not finite, or log-probabilities that are NaN, infinite or positive (above
        ``1e-6``, which leaves room for round-off).

    References
    ----------
    VLM-R1 / open-r1-multimodal ``grpo_trainer`` (used by the SafeMVDrive code).
    """
    import torch

    for name, z in (("logp_new", logp_new), ("logp_old", logp_old), ("logp_ref", logp_ref), ("rewards", rewards)):
        t = torch.as_tensor(z).detach()
        if not t.is_floating_point() and name != "rewards":
            raise TypeError(f"{name} must be floating-point log-probabilities, got dtype {t.dtype}")
        if not bool(torch.isfinite(t).all()):
            raise ValueError(f"{name} holds NaN or infinite values; GRPO needs finite {name}")
        if name != "rewards" and bool((t > 1e-6).any()):
            raise ValueError(f"{name} holds positive values (max {float(t.max()):.3g}); log-probabilities must be <= 0")
    return _grpo_loss(logp_new, logp_old, logp_ref, rewards, clip_eps=clip_eps, beta=beta, eps=eps)


def _grpo_loss(logp_new, logp_old, logp_ref, rewards, *, clip_eps: float = 0.2, beta: float = 0.01, eps: float = 1e-4):
    """:func:`grpo_loss` without the checks of its tensors' values (the library's own training loop)."""
    import torch

    clip_eps = check_real(clip_eps, "clip_eps", lo=0.0, lo_open=True)
    beta = check_real(beta, "beta", lo=0.0)
    eps = check_real(eps, "eps", lo=0.0, lo_open=True)
    ts = [torch.as_tensor(z) for z in (logp_new, logp_old, logp_ref, rewards)]
    if len({tuple(z.shape) for z in ts}) != 1 or ts[0].ndim != 2 or ts[0].shape[1] < 2:
        raise ValueError(
            f"logp_new, logp_old, logp_ref and rewards must share a shape (B, G) with G >= 2; got {[tuple(z.shape) for z in ts]}"
        )
    new, old, ref, r = ts
    adv = group_advantages(r, sd="sample", eps=eps)  # the authors' trainer: torch's sample std, + 1e-4
    ratio = torch.exp(new - old.detach())
    surr = torch.minimum(ratio * adv, torch.clamp(ratio, 1 - clip_eps, 1 + clip_eps) * adv)
    kl = torch.exp(ref - new) - (ref - new) - 1
    return -(surr - beta * kl).mean()


def train_selector(
    policy: SelectorPolicy,
    features: np.ndarray,
    mask: np.ndarray,
    rewards: np.ndarray,
    *,
    iters: int = 150,
    group: int = 8,
    batch: int = 32,
    inner: int = 2,
    lr: float = 3e-3,
    clip_eps: float = 0.2,
    beta: float = 0.01,
    random_state: RandomState = None,
) -> SelectorPolicy:
    """Train the selector with GRPO on the graded label dicts.

    Each iteration samples ``batch`` scenes and ``group`` answers per scene from the
    current policy (kept as :math:`\\pi_{\\text{old}}`), reads each answer's reward from the
    label (:func:`attack_labels`), and takes ``inner`` Adam steps on :func:`grpo_loss`;
    :math:`\\pi_{\\text{ref}}` is the initial policy.

    Returns
    -------
    SelectorPolicy
        ``policy``, trained in place; ``policy.history`` holds mean reward and loss.

    Parameters
    ----------
    policy : SelectorPolicy
    features, mask, rewards
        From :func:`candidate_features` and :func:`attack_labels`.
    iters, group, batch, inner : int
    lr, clip_eps, beta : float
    random_state : int, Generator or None

    References
    ----------
    Shao et al., *DeepSeekMath*, arXiv:2402.03300 (2024) — GRPO.
    Zhou et al., *SafeMVDrive / SMD*, ICML 2026, arXiv:2505.17727; https://github.com/zhoujiawei3/SafeMVDrive
    """
    import torch

    if not isinstance(policy, SelectorPolicy):
        raise TypeError(f"policy must be a SelectorPolicy, got {type(policy).__name__}")
    f = np.asarray(features, dtype=np.float32)
    m = np.asarray(mask, dtype=bool)
    r = np.asarray(rewards, dtype=float)
    if r.shape != m.shape or f.shape[:2] != m.shape:
        raise ValueError(f"features (S, N, F), mask (S, N) and rewards (S, N) must agree; got {f.shape}, {m.shape}, {r.shape}")
    iters, group, batch, inner = (
        check_int(v, k) for v, k in ((iters, "iters"), (group, "group"), (batch, "batch"), (inner, "inner"))
    )
    if group < 2:
        raise ValueError(f"group={group!r} must be >= 2 (advantages are normalised within a group)")
    lr = check_real(lr, "lr", lo=0.0, lo_open=True)
    rng = check_random_state(random_state)
    g = torch.Generator().manual_seed(seed_from(rng))
    ref = policy.copy()
    opt = _Adam(policy.net.parameters(), lr=lr)
    S = len(f)
    for _ in range(iters):
        idx = rng.choice(S, size=min(batch, S), replace=False)
        with torch.no_grad():
            lp_old_all = policy.log_probs(f[idx], m[idx])
            acts = torch.multinomial(lp_old_all.exp(), group, replacement=True, generator=g)  # (B, G)
            lp_old = lp_old_all.gather(1, acts)
            lp_ref = ref.log_probs(f[idx], m[idx]).gather(1, acts)
        rew = torch.as_tensor(r[idx][np.arange(len(idx))[:, None], acts.numpy()])
        for _ in range(inner):
            lp_new = policy.log_probs(f[idx], m[idx]).gather(1, acts)
            loss = _grpo_loss(lp_new, lp_old, lp_ref, rew, clip_eps=clip_eps, beta=beta)
            opt.zero_grad()
            loss.backward()
            opt.step()
        policy.history.append({"reward": float(rew.mean()), "loss": float(loss.detach())})
    return policy


def select_closest(scenes: SceneBatch) -> np.ndarray:
    """Baseline of the authors' scripts: the candidate closest to the ego at :math:`t = 0`.

    Parameters
    ----------
    scenes : SceneBatch

    Returns
    -------
    ndarray of int, shape (S,)

    References
    ----------
    Zhou et al., *SafeMVDrive / SMD*, ICML 2026, arXiv:2505.17727; https://github.com/zhoujiawei3/SafeMVDrive
    """
    b = _check_batch(scenes)
    d = np.linalg.norm(b.states[:, 0, :, :2] - b.states[:, 0, :1, :2], axis=-1)
    d = np.where(b.present, d, np.inf)
    d[:, 0] = np.inf
    return d.argmin(1)


def select_random(scenes: SceneBatch, random_state: RandomState = None) -> np.ndarray:
    """Baseline: a uniformly random candidate vehicle.

    Parameters
    ----------
    scenes : SceneBatch
    random_state : int, Generator or None

    Returns
    -------
    ndarray of int, shape (S,)

    References
    ----------
    Zhou et al., *SafeMVDrive / SMD*, ICML 2026, arXiv:2505.17727; https://github.com/zhoujiawei3/SafeMVDrive
    """
    b = _check_batch(scenes)
    rng = check_random_state(random_state)
    cand = b.present.copy()
    cand[:, 0] = False
    return np.array([rng.choice(np.flatnonzero(row)) for row in cand])


def select_with(selector: Any, scenes: SceneBatch) -> np.ndarray:
    """Run any selector — a callable ``(features, mask) -> slot per scene`` (0 = "no
    vehicle") — on :func:`candidate_features` of ``scenes``, checking its answers.
    This is where a real selector (e.g. a VLM wrapped to return slot indices) plugs in.

    Parameters
    ----------
    selector : callable
    scenes : SceneBatch

    Returns
    -------
    ndarray of int, shape (S,)
        The checked choices.

    References
    ----------
    Zhou et al., *SafeMVDrive / SMD*, ICML 2026, arXiv:2505.17727; https://github.com/zhoujiawei3/SafeMVDrive
    """
    b = _check_batch(scenes)
    if not callable(selector):
        raise TypeError(f"selector must be callable (features, mask) -> choices, got {type(selector).__name__}")
    f, m = candidate_features(b)
    ch = np.asarray(selector(f, m))
    if ch.shape != (b.n_scenes,) or ch.dtype.kind not in "iu":
        raise ValueError(f"the selector must return one int slot per scene, shape ({b.n_scenes},); got {ch.dtype} {ch.shape}")
    if np.any(ch < 0) or np.any(ch >= m.shape[1]) or not m[np.arange(b.n_scenes), ch].all():
        raise ValueError("the selector chose a slot that is not an allowed choice (absent vehicle or out of range)")
    return ch
