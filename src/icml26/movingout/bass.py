"""BASS: Behaviour Augmentation, Simulation and Selection, with demonstrations and episodes.

* **Augmentation.** (1) partner pose noise: the partner's position in a demonstration
  state is moved by :math:`\\varepsilon \\sim \\mathcal N(0, \\sigma^2 I)`, the ego's label
  kept; (2) sub-trajectory recombination: where the ego's positions at the start and end
  of an equal-length segment match (within ``eps_pose``) in two demonstrations with
  different partners, the ego's segment of one is paired with the partner's segment of
  the other, replayed in the physics, and kept only if the ego's replayed path stays
  within ``eps_pose`` of the original (the paper's validity filter).
* **Simulation.** A dynamics model :math:`\\hat s_{t+1} = s_t + f(s_t, a_t, \\hat a^p_t)`
  and a partner predictor (a mixture-density policy queried on the partner's view).
* **Selection** ("preview and pick"). Sample ``K`` candidate actions from the policy,
  preview each through the model with the predicted partner action, and execute the one
  whose predicted next state has the highest NFD. No simulator is queried at test time.

The single-agent variant drops the partner: its dynamics model sees the ego's action only.

References
----------
Kang et al., "Moving Out: Physically-grounded Human-AI Collaboration", ICML 2026,
arXiv:2507.18623 (Sec. 4). No public BASS code was found; the VAE latent of the paper's
dynamics model is replaced by a plain MLP on the 12-d state (our choice).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from .._common import RandomState, check_int, check_random_state, check_real, progress, seed_from, torch_generator
from .bc import MixtureDensityPolicy
from .env import HEAVY_HALF, OBS_NAMES, MovingOutEnv, goal_distance, swap_view
from .partners import PartnerStyle, ScriptedPartner, demonstrator_action

_D = len(OBS_NAMES)


@dataclass
class Demo:
    """One demonstration: states (T+1, 12), ego actions (T, 2), partner actions (T, 2), partner style name."""

    obs: np.ndarray
    act: np.ndarray
    partner_act: np.ndarray
    style: str
    success: bool


def collect_demos(
    styles: tuple[PartnerStyle, ...] | list[PartnerStyle],
    n_demos: int,
    *,
    noise: float = 0.1,
    max_steps: int = 120,
    successful_only: bool = True,
    random_state: RandomState = None,
) -> list[Demo]:
    """Demonstrations of the ego demonstrator with scripted partners, styles in turn.

    Parameters
    ----------
    styles : sequence of PartnerStyle
        The partner styles (the seen ones, for training).
    n_demos : int
        Number of episodes to run (the unsuccessful ones are dropped if ``successful_only``).
    noise : float
        The demonstrator's action noise (sd).
    max_steps : int
        Episode horizon.
    successful_only : bool
        Keep only episodes that put both boxes in the goal zone.
    random_state : int, Generator or None

    Returns
    -------
    list of Demo
    """
    styles = list(styles)
    if not styles or not all(isinstance(s, PartnerStyle) for s in styles):
        raise TypeError("styles must be a non-empty sequence of PartnerStyle")
    n_demos = check_int(n_demos, "n_demos")
    rng = check_random_state(random_state)
    demos = []
    for i in range(n_demos):
        style = styles[i % len(styles)]
        env = MovingOutEnv(ScriptedPartner(style), max_steps=max_steps)
        o, _ = env.reset(seed=int(rng.integers(0, 2**31)))
        obs, act, pact = [o], [], []
        while True:
            a = demonstrator_action(o, rng, noise)
            o, _, term, trunc, info = env.step(a)
            obs.append(o)
            act.append(a)
            pact.append(info["partner_action"])
            if term or trunc:
                break
        if info["success"] or not successful_only:
            demos.append(Demo(np.array(obs), np.array(act), np.array(pact), style.name, bool(info["success"])))
    return demos


def stack_transitions(demos: list[Demo]) -> dict[str, np.ndarray]:
    """All transitions of ``demos`` as arrays ``obs`` (n, 12), ``act`` (n, 2), ``partner_act`` (n, 2), ``next_obs`` (n, 12)."""
    if not demos:
        raise ValueError("demos is empty")
    return {
        "obs": np.concatenate([d.obs[:-1] for d in demos]).astype(np.float32),
        "act": np.concatenate([d.act for d in demos]).astype(np.float32),
        "partner_act": np.concatenate([d.partner_act for d in demos]).astype(np.float32),
        "next_obs": np.concatenate([d.obs[1:] for d in demos]).astype(np.float32),
    }


def partner_pose_noise(obs: np.ndarray, sigma: float, copies: int = 1, random_state: RandomState = None) -> np.ndarray:
    """BASS augmentation (1): copies of ``obs`` with the partner's position moved by N(0, sigma^2 I), clipped to [0, 1].

    Returns an array of shape (copies * n, 12); row ``c * n + i`` is a copy of row ``i``.
    """
    o = np.asarray(obs, dtype=np.float32)
    if o.ndim != 2 or o.shape[1] != _D:
        raise ValueError(f"obs must have shape (n, {_D}), got {o.shape}")
    sigma = check_real(sigma, "sigma", lo=0.0)
    copies = check_int(copies, "copies")
    rng = check_random_state(random_state)
    out = np.tile(o, (copies, 1))
    out[:, 4:6] = np.clip(out[:, 4:6] + rng.normal(0.0, sigma, size=(len(out), 2)), 0.0, 1.0)
    return out


class _Replay:
    def __init__(self, actions: np.ndarray) -> None:
        self.actions, self.t = actions, 0

    def act(self, obs: np.ndarray) -> np.ndarray:
        a = self.actions[min(self.t, len(self.actions) - 1)]
        self.t += 1
        return a


def recombine_demos(
    demos: list[Demo],
    *,
    eps_pose: float = 0.03,
    seg_len: int = 12,
    n_max: int = 100,
    random_state: RandomState = None,
) -> list[Demo]:
    """BASS augmentation (2): sub-trajectory recombination across partners, validated by replay.

    For demonstrations D, D' with different partner styles, a segment ``[t1, t1 + L]`` of D
    and ``[t3, t3 + L]`` of D' qualify when the ego's positions match at both ends
    (:math:`\\lVert s^i_{t_1} - s'^i_{t_3}\\rVert < \\varepsilon` and likewise at the ends).
    The new segment starts from D's state at ``t1`` with the partner placed as in D' at
    ``t3``; the ego replays D's actions and the partner D''s, in the physics. It is kept
    when the ego's replayed positions stay within ``eps_pose`` of D's path.

    Parameters
    ----------
    demos : list of Demo
    eps_pose : float
        Pose-matching tolerance (same units as positions).
    seg_len : int
        Segment length L (equal in both demonstrations; the paper resamples in time).
    n_max : int
        Stop after this many valid recombinations.
    random_state : int, Generator or None

    Returns
    -------
    list of Demo
        The valid recombined segments (style ``"A+B"``), each with ``seg_len`` transitions.
    """
    if not isinstance(demos, list) or not all(isinstance(d, Demo) for d in demos):
        raise TypeError("demos must be a list of Demo")
    eps_pose = check_real(eps_pose, "eps_pose", lo=0.0, lo_open=True)
    seg_len = check_int(seg_len, "seg_len")
    n_max = check_int(n_max, "n_max")
    rng = check_random_state(random_state)
    pairs = [(i, j) for i in range(len(demos)) for j in range(len(demos)) if demos[i].style != demos[j].style]
    rng.shuffle(pairs)
    env = MovingOutEnv(_Replay(np.zeros((1, 2))), max_steps=seg_len + 1)
    out: list[Demo] = []
    for i, j in pairs:
        if len(out) >= n_max:
            break
        a, b = demos[i], demos[j]
        ta, tb = len(a.act) - seg_len, len(b.act) - seg_len
        if ta <= 0 or tb <= 0:
            continue
        ea, eb = a.obs[:, 0:2], b.obs[:, 0:2]
        start = np.linalg.norm(ea[:ta, None] - eb[None, :tb], axis=-1)  # (ta, tb)
        end = np.linalg.norm(ea[seg_len : seg_len + ta, None] - eb[None, seg_len : seg_len + tb], axis=-1)
        far = np.linalg.norm(a.obs[:ta, None, 4:6] - b.obs[None, :tb, 4:6], axis=-1) > eps_pose  # a different partner pose
        cand = np.argwhere((start < eps_pose) & (end < eps_pose) & far)
        if len(cand) == 0:
            continue
        t1, t3 = cand[rng.integers(len(cand))]
        s0 = a.obs[t1].astype(float).copy()
        s0[4:8] = b.obs[t3, 4:8]
        if np.linalg.norm(s0[0:2] - s0[4:6]) < 0.065:  # agents would overlap
            continue
        env.partner = _Replay(b.partner_act[t3 : t3 + seg_len])
        o = env.set_state(s0)
        obs, pact = [o], []
        for k in range(seg_len):
            o, _, _, _, info = env.step(a.act[t1 + k])
            obs.append(o)
            pact.append(info["partner_action"])
        obs = np.array(obs)
        if np.max(np.linalg.norm(obs[:, 0:2] - a.obs[t1 : t1 + seg_len + 1, 0:2], axis=-1)) < eps_pose:
            out.append(Demo(obs, a.act[t1 : t1 + seg_len].copy(), np.array(pact), f"{a.style}+{b.style}", False))
    return out


_MLP_LAYERS = [nn.Linear, nn.ReLU, nn.Linear, nn.ReLU, nn.Linear]  # DynamicsModel.net, as built


class DynamicsModel(nn.Module):
    """:math:`\\hat s_{t+1} = s_t + f(s_t, a_t[, a^p_t])`, an MLP on the state (the VAE latent is dropped).

    Parameters
    ----------
    use_partner : bool
        Whether the partner's action is an input (full BASS) or not (single-agent variant).
    hidden : int
    """

    def __init__(self, use_partner: bool = True, hidden: int = 128) -> None:
        super().__init__()
        self.use_partner = bool(use_partner)
        hidden = check_int(hidden, "hidden")
        n_in = _D + 2 + (2 if self.use_partner else 0)
        self.net = nn.Sequential(nn.Linear(n_in, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, _D))
        self.register_buffer("scale", torch.ones(_D))

    def forward(self, obs: torch.Tensor, act: torch.Tensor, partner_act: torch.Tensor | None = None) -> torch.Tensor:
        """Predicted next states, shape (n, 12)."""
        obs = torch.as_tensor(obs, dtype=torch.float32)
        act = torch.as_tensor(act, dtype=torch.float32)
        if obs.ndim != 2 or obs.shape[1] != _D or act.shape != (obs.shape[0], 2):
            raise ValueError(f"obs must be (n, {_D}) and act (n, 2), got {tuple(obs.shape)} and {tuple(act.shape)}")
        parts = [obs, act]
        if self.use_partner:
            if partner_act is None:
                raise ValueError("this dynamics model needs partner_act (use_partner=True)")
            parts.append(torch.as_tensor(partner_act, dtype=torch.float32).reshape(obs.shape[0], 2))
        return obs + self.net(torch.cat(parts, 1)) * self.scale  # (n, 12)

    def _predict_np(self, obs: np.ndarray, act: np.ndarray, partner_act: np.ndarray | None) -> np.ndarray:
        """:meth:`forward` of checked float32 arrays (n, 12), (n, 2)[, (n, 2)], without the checks; (n, 12) array.

        The same kernels on the same shapes (the input concatenated in NumPy is the same
        float32 matrix as ``torch.cat``'s; ``nn.Linear`` is ``F.linear``, ``nn.ReLU`` is
        ``torch.relu``), without the module-call overhead: the per-step path of an agent.
        """
        parts = (obs, act, partner_act) if self.use_partner else (obs, act)
        x = torch.from_numpy(np.concatenate(parts, 1))  # (n, 14 or 16)
        net = self.net._modules
        if self.net.__class__ is not nn.Sequential or [m.__class__ for m in net.values()] != _MLP_LAYERS:
            return (torch.from_numpy(obs) + self.net(x) * self.scale).numpy()  # a replaced network: its own call
        p0, p1, p2 = net["0"]._parameters, net["2"]._parameters, net["4"]._parameters
        h = torch.relu(F.linear(x, p0["weight"], p0["bias"]))
        h = torch.relu(F.linear(h, p1["weight"], p1["bias"]))
        return (torch.from_numpy(obs) + F.linear(h, p2["weight"], p2["bias"]) * self._buffers["scale"]).numpy()  # (n, 12)


def fit_dynamics(
    data: dict[str, np.ndarray],
    *,
    use_partner: bool = True,
    hidden: int = 128,
    epochs: int = 60,
    batch_size: int = 256,
    lr: float = 2e-3,
    random_state: RandomState = None,
) -> DynamicsModel:
    """Fit :class:`DynamicsModel` by mean squared error on the scaled state change.

    Parameters
    ----------
    data : dict
        ``obs``, ``act``, ``partner_act``, ``next_obs`` as from :func:`stack_transitions`.
    use_partner, hidden
        As in :class:`DynamicsModel`.
    epochs, batch_size, lr, random_state
        Optimisation settings and seed.

    Returns
    -------
    DynamicsModel
        In eval mode; ``model.train_mse`` holds the last epoch's mean (scaled) error.
    """
    need = ("obs", "act", "partner_act", "next_obs")
    if not isinstance(data, dict) or any(k not in data for k in need):
        raise ValueError(f"data must be a dict with keys {need}")
    x, a, p, y = (torch.as_tensor(np.asarray(data[k], dtype=np.float32)) for k in need)
    if len(x) == 0 or not (len(a) == len(p) == len(y) == len(x)):
        raise ValueError("data arrays must be non-empty with equal lengths")
    epochs, batch_size = check_int(epochs, "epochs"), check_int(batch_size, "batch_size")
    lr = check_real(lr, "lr", lo=0.0, lo_open=True)
    torch.manual_seed(seed_from(random_state))
    model = DynamicsModel(use_partner, hidden)
    delta = y - x
    model.scale.copy_(delta.std(0).clamp_min(1e-3))
    target = delta / model.scale
    opt = torch.optim.Adam(model.net.parameters(), lr=lr)
    gen = torch_generator(random_state)
    # the network's input once for all rows (a batch's rows of it are torch.cat of the batch's rows)
    inp = torch.cat([x, a] + ([p] if use_partner else []), 1)  # (n, 14 or 16)
    for _ in range(epochs):
        perm = torch.randperm(len(x), generator=gen)
        total = 0.0
        for i in range(0, len(x), batch_size):
            b = perm[i : i + batch_size]
            loss = ((model.net(inp[b]) - target[b]) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item() * len(b)
        model.train_mse = total / len(x)
    return model.eval()


def box_goal_score(obs: np.ndarray) -> np.ndarray:
    """Selection score: minus the summed goal distance of the two boxes, shape (n,).

    Within an episode NFD is a decreasing affine function of this sum, so the argmax of
    either picks the same candidate.
    """
    o = np.asarray(obs, dtype=float)
    if o.ndim != 2 or o.shape[1] != _D:
        raise ValueError(f"obs must have shape (n, {_D}), got {o.shape}")
    return -(goal_distance(o[:, 8:10]) + goal_distance(o[:, 10:12]))


class BassAgent:
    """An ego agent: a policy, optionally with BASS's "preview and pick" selection.

    With ``dynamics=None`` it is plain behaviour cloning (one sample of the policy per
    step). Otherwise it samples ``n_candidates`` actions, predicts the partner's action with
    ``partner_model`` (mode of its mixture on the swapped view; not needed by a
    single-agent model), previews each candidate's next state with ``dynamics`` and acts
    with the best by :func:`box_goal_score`. Ties (the previewed scores spread by no more
    than ``tie_tol``) go to the first sample, i.e. to plain behaviour cloning;
    :meth:`calibrate` sets ``tie_tol`` from the model's noise on box motion.

    Parameters
    ----------
    policy : MixtureDensityPolicy
    dynamics : DynamicsModel or None
    partner_model : MixtureDensityPolicy or None
    n_candidates : int
        K (the paper uses 4).
    tie_tol : float
        Spread of the previewed scores at or below which the candidates tie, >= 0
        (default 1e-4, the rule before :meth:`calibrate`).
    random_state : int, Generator or None
        Seeds the policy's sampling; ``reset(seed)`` reseeds it.
    """

    def __init__(
        self,
        policy: MixtureDensityPolicy,
        dynamics: DynamicsModel | None = None,
        partner_model: MixtureDensityPolicy | None = None,
        *,
        n_candidates: int = 4,
        tie_tol: float = 1e-4,
        random_state: RandomState = None,
    ) -> None:
        if not isinstance(policy, MixtureDensityPolicy):
            raise TypeError(f"policy must be a MixtureDensityPolicy, got {type(policy).__name__}")
        if dynamics is not None and not isinstance(dynamics, DynamicsModel):
            raise TypeError(f"dynamics must be a DynamicsModel or None, got {type(dynamics).__name__}")
        if dynamics is not None and dynamics.use_partner and not isinstance(partner_model, MixtureDensityPolicy):
            raise TypeError("a dynamics model with use_partner=True needs a partner_model (MixtureDensityPolicy)")
        self.policy, self.dynamics, self.partner_model = policy, dynamics, partner_model
        self.k = check_int(n_candidates, "n_candidates")
        self.tie_tol = check_real(tie_tol, "tie_tol", lo=0.0)
        self.gen = torch_generator(random_state)

    def reset(self, seed: RandomState = None) -> None:
        """Reseed the policy's sampling."""
        self.gen = torch_generator(seed)

    @torch.no_grad()
    def score_spread(self, obs: np.ndarray, generator: torch.Generator | None = None) -> float:
        """max − min of :func:`box_goal_score` over the previews of ``K`` candidates sampled at ``obs`` (shape (12,))."""
        if self.dynamics is None:
            raise ValueError("score_spread needs a dynamics model (this agent is plain behaviour cloning)")
        o = np.asarray(obs, dtype=np.float32)
        if o.shape != (_D,) or not np.all(np.isfinite(o)):
            raise ValueError(f"obs must be a finite array of shape ({_D},), got shape {o.shape}")
        _, score = self._preview(o, self.gen if generator is None else generator)
        return float(score.max() - score.min())

    def _preview(self, o: np.ndarray, gen: torch.Generator) -> tuple[np.ndarray, np.ndarray]:
        """``K`` candidates sampled at the checked float32 state ``o`` (12,) and their previewed scores; (K, 2), (K,).

        The policy's and the partner model's forward passes and the dynamics model's
        preview go through their unchecked paths (the same kernels on the same shapes as
        ``policy.sample``, ``partner_model.mode`` and ``dynamics(...)``).
        """
        o2 = o[None]  # (1, 12)
        cand = self.policy._draw(self.policy._heads_np(o2), self.k, gen)[0]  # (K, 2)
        pa = None
        if self.dynamics.use_partner:
            pm = self.partner_model
            pa = np.repeat(pm._mode(pm._heads_np(swap_view(o2))), self.k, 0)  # (K, 2)
        pred = self.dynamics._predict_np(np.repeat(o2, self.k, 0), cand, pa)  # (K, 12)
        return cand, box_goal_score(pred)

    @torch.no_grad()
    def calibrate(self, data: dict[str, np.ndarray], *, quantile: float = 0.95, seed: int = 0) -> float:
        r"""Set ``tie_tol`` from the model's noise on box motion, on held-out transitions.

        On the held-out states in which neither box moves
        (:math:`\lVert\Delta s_{\text{light}}\rVert + \lVert\Delta s_{\text{heavy}}\rVert < 10^{-9}`),
        every spread of the previewed scores is model noise (no action moves a box there).
        ``tie_tol`` becomes the ``quantile`` of those spreads (:meth:`score_spread`, with
        ``K`` candidates sampled by a generator seeded with ``seed``), so that such states
        tie with probability ``quantile`` and go to behaviour cloning.

        Parameters
        ----------
        data : dict
            Held-out transitions (``obs``, ``next_obs``, as from :func:`stack_transitions`),
            not used to fit the models.
        quantile : float
            In (0, 1].
        seed : int
            Seeds the candidates' sampling (kept apart from the episodes' streams).

        Returns
        -------
        float
            The new ``tie_tol``.
        """
        if self.dynamics is None:
            raise ValueError("calibrate needs a dynamics model (this agent is plain behaviour cloning)")
        if not isinstance(data, dict) or any(k not in data for k in ("obs", "next_obs")):
            raise ValueError("data must be a dict with keys ('obs', 'next_obs')")
        quantile = check_real(quantile, "quantile", lo=0.0, hi=1.0, lo_open=True)
        o, y = np.asarray(data["obs"], dtype=np.float32), np.asarray(data["next_obs"], dtype=np.float32)
        if o.ndim != 2 or o.shape[1] != _D or o.shape != y.shape:
            raise ValueError(f"obs and next_obs must have equal shapes (n, {_D}), got {o.shape} and {y.shape}")
        moved = np.linalg.norm(y[:, 8:10] - o[:, 8:10], axis=1) + np.linalg.norm(y[:, 10:12] - o[:, 10:12], axis=1)
        static = o[moved < 1e-9]
        if len(static) == 0:
            raise ValueError("data has no transition in which both boxes stay put")
        gen = torch_generator(check_int(seed, "seed", low=0))
        spreads = np.array([self.score_spread(x, gen) for x in static])
        self.tie_tol = float(np.quantile(spreads, quantile))
        return self.tie_tol

    @torch.no_grad()
    def act(self, obs: np.ndarray) -> np.ndarray:
        """The ego's action for observation ``obs`` (shape (12,)); shape (2,), float32 in [-1, 1]."""
        o = np.asarray(obs, dtype=np.float32)
        if o.shape != (_D,) or not np.all(np.isfinite(o)):
            raise ValueError(f"obs must be a finite array of shape ({_D},), got shape {o.shape}")
        if self.dynamics is None:
            return self.policy._draw(self.policy._heads_np(o[None]), 1, self.gen)[0, 0].astype(np.float32)
        cand, score = self._preview(o, self.gen)  # (K, 2), (K,)
        best = int(np.argmax(score)) if score.max() - score.min() > self.tie_tol else 0
        return cand[best].astype(np.float32)


def rollout_episode(env: MovingOutEnv, agent: Any, seed: int, *, frames_every: int = 0) -> dict[str, Any]:
    """Run one episode of ``agent`` (anything with ``act(obs)``, optionally ``reset(seed)``) in ``env``.

    Parameters
    ----------
    env : MovingOutEnv
    agent : object
        The ego policy. ``agent.reset(seed)`` is called first when it exists.
    seed : int
        Seeds the layout, the partner and the agent.
    frames_every : int
        If > 0 and the env renders, keep a frame every ``frames_every`` steps (and the last).

    Returns
    -------
    dict
        ``success`` (both boxes fully inside the goal), ``nfd`` (final NFD), ``wait`` (the
        authors' waiting time: the fraction of steps in which exactly one agent holds the
        heavy box, :func:`~icml26.movingout.env.waiting_steps`), ``steps``, ``obs``
        (T+1, 12), ``actions`` (T, 2), ``partner_actions`` (T, 2), ``frames`` (list of images).
    """
    if not isinstance(env, MovingOutEnv):
        raise TypeError(f"env must be a MovingOutEnv, got {type(env).__name__}")
    if not callable(getattr(agent, "act", None)):
        raise TypeError(f"agent={agent!r} needs a method act(obs) -> action")
    seed = check_int(seed, "seed", low=0)
    frames_every = check_int(frames_every, "frames_every", low=0)
    o, _ = env.reset(seed=seed)
    if callable(getattr(agent, "reset", None)):
        agent.reset(seed)
    obs, acts, pacts, frames, waiting = [o], [], [], [], 0
    keep = frames_every > 0 and env.render_mode == "rgb_array"
    if keep:
        frames.append(env.render())
    while True:
        a = agent.act(o)
        o, _, term, trunc, info = env.step(a)
        obs.append(o)
        acts.append(np.asarray(a, dtype=np.float32))
        pacts.append(info["partner_action"])
        waiting += int(info["waiting"])
        if keep and (len(acts) % frames_every == 0 or term or trunc):
            frames.append(env.render())
        if term or trunc:
            break
    steps = len(acts)
    return {
        "success": bool(info["success"]),
        "nfd": float(info["nfd"]),
        "wait": waiting / steps,
        "steps": steps,
        "obs": np.array(obs),
        "actions": np.array(acts),
        "partner_actions": np.array(pacts),
        "frames": frames,
    }


def evaluate_agents(
    agents: dict[str, Any],
    styles: tuple[PartnerStyle, ...] | list[PartnerStyle],
    n_episodes: int,
    *,
    heavy_half: float = HEAVY_HALF,
    heavy_mass: float = 1.0,
    max_steps: int = 120,
    seed: int = 0,
    desc: str = "",
) -> list[dict[str, Any]]:
    """Every agent with every partner style on the same ``n_episodes`` layouts (paired episodes).

    ``heavy_half`` and ``heavy_mass`` set the heavy box's size (for the env and the scripted
    partners) and mass (Challenge 2 changes one at test time).

    Episode ``k`` of a style uses the env seed ``seed * 1000 + k`` for every agent, so
    results pair across agents. Returns one row per (agent, style, episode) with
    ``method``, ``style``, ``episode``, ``success``, ``nfd``, ``wait``, ``steps``.
    """
    if not isinstance(agents, dict) or not agents:
        raise TypeError("agents must be a non-empty dict name -> agent")
    n_episodes = check_int(n_episodes, "n_episodes")
    seed = check_int(seed, "seed", low=0)
    rows = []
    jobs = [(m, s, k) for s in styles for k in range(n_episodes) for m in agents]
    for m, s, k in progress(jobs, desc=desc or "episodes"):
        env = MovingOutEnv(
            ScriptedPartner(s, heavy_half=heavy_half), heavy_half=heavy_half, heavy_mass=heavy_mass, max_steps=max_steps
        )
        r = rollout_episode(env, agents[m], seed * 1000 + k)
        rows.append(
            {
                "method": m,
                "style": s.name,
                "episode": k,
                "success": float(r["success"]),
                "nfd": r["nfd"],
                "wait": r["wait"],
                "steps": r["steps"],
            }
        )
    return rows


def fit_bass_models(
    demos: list[Demo],
    *,
    epochs: int = 60,
    batch_size: int = 512,
    sigma: float = 0.03,
    eps_pose: float = 0.03,
    seg_len: int = 12,
    n_recombine: int | None = None,
    heldout: list[Demo] | None = None,
    random_state: RandomState = None,
) -> dict[str, Any]:
    """Train every model of the comparison on the same demonstrations.

    * ``policy``: the mixture-density BC policy on the demonstrations;
    * ``policy_aug``: the same on the augmented set (recombined segments, then one
      partner-pose-noise copy of every state);
    * ``partner``: the partner predictor, a mixture-density policy on the partner's view
      and actions of the demonstrations;
    * ``dynamics``: the dynamics model (with partner action) on the demonstrations
      (selection-only ablation);
    * ``dynamics_aug``: the same on demonstrations + recombined segments (full BASS);
    * ``dynamics_single``: without the partner action, on the same (single-agent variant).

    Parameters
    ----------
    demos : list of Demo
    epochs, batch_size
        Training settings for every model.
    sigma : float
        Partner pose noise sd.
    eps_pose, seg_len, n_recombine
        Recombination settings (``n_recombine`` defaults to twice the number of demos).
    heldout : list of Demo, optional
        Demonstrations not used for training, kept (stacked) as ``heldout`` for the
        selection's tie tolerance (:meth:`BassAgent.calibrate`).
    random_state : int, Generator or None

    Returns
    -------
    dict
        The six models, ``n_recombined``, ``train_s`` (seconds per model) and ``heldout``
        (the stacked held-out transitions, or None).
    """
    import time

    if not isinstance(demos, list) or not demos or not all(isinstance(d, Demo) for d in demos):
        raise TypeError("demos must be a non-empty list of Demo")
    seed = seed_from(random_state)
    n_rec = 2 * len(demos) if n_recombine is None else check_int(n_recombine, "n_recombine", low=0)
    rec = recombine_demos(demos, eps_pose=eps_pose, seg_len=seg_len, n_max=n_rec, random_state=seed) if n_rec > 0 else []
    plain = stack_transitions(demos)
    both = stack_transitions(demos + rec)
    aug_obs = np.concatenate([both["obs"], partner_pose_noise(both["obs"], sigma, 1, random_state=seed + 1)])
    aug_act = np.concatenate([both["act"], both["act"]])
    kw = dict(epochs=epochs, batch_size=batch_size, random_state=seed)
    out: dict[str, Any] = {"n_recombined": len(rec), "n_plain": len(plain["obs"]), "n_aug": len(aug_obs), "train_s": {}}
    jobs = {
        "policy": lambda: _fit_policy(plain["obs"], plain["act"], kw),
        "policy_aug": lambda: _fit_policy(aug_obs, aug_act, kw),
        "partner": lambda: _fit_policy(swap_view(plain["obs"]), plain["partner_act"], kw),
        "dynamics": lambda: fit_dynamics(plain, use_partner=True, **kw),
        "dynamics_aug": lambda: fit_dynamics(both, use_partner=True, **kw),
        "dynamics_single": lambda: fit_dynamics(both, use_partner=False, **kw),
    }
    for name, job in jobs.items():
        t0 = time.perf_counter()
        out[name] = job()
        out["train_s"][name] = time.perf_counter() - t0
    out["heldout"] = stack_transitions(heldout) if heldout else None
    return out


def _fit_policy(obs: np.ndarray, act: np.ndarray, kw: dict) -> MixtureDensityPolicy:
    from .bc import fit_mdn_policy

    return fit_mdn_policy(obs, act, **kw)


def comparison_agents(
    models: dict[str, Any], *, n_candidates: int = 4, tie_quantile: float | None = 0.95
) -> dict[str, BassAgent]:
    """The five agents of the comparison from :func:`fit_bass_models`'s models.

    ``BC`` (policy), ``BC + augmentation`` (policy_aug), ``BC + selection`` (policy,
    dynamics, partner), ``BASS`` (policy_aug, dynamics_aug, partner) and ``BASS single-agent``
    (policy_aug, dynamics_single). When ``models["heldout"]`` holds transitions and
    ``tie_quantile`` is not None, each selecting agent is calibrated on them
    (:meth:`BassAgent.calibrate`); otherwise the tie tolerance stays 1e-4.
    """
    need = ("policy", "policy_aug", "partner", "dynamics", "dynamics_aug", "dynamics_single")
    if not isinstance(models, dict) or any(k not in models for k in need):
        raise ValueError(f"models must be a dict with keys {need} (from fit_bass_models)")
    k = dict(n_candidates=n_candidates)
    agents = {
        "BC": BassAgent(models["policy"], **k),
        "BC + augmentation": BassAgent(models["policy_aug"], **k),
        "BC + selection": BassAgent(models["policy"], models["dynamics"], models["partner"], **k),
        "BASS": BassAgent(models["policy_aug"], models["dynamics_aug"], models["partner"], **k),
        "BASS single-agent": BassAgent(models["policy_aug"], models["dynamics_single"], **k),
    }
    if models.get("heldout") is not None and tie_quantile is not None:
        for name in ("BC + selection", "BASS", "BASS single-agent"):
            agents[name].calibrate(models["heldout"], quantile=tie_quantile)
    return agents


class ConstantAgent:
    """An agent (ego or partner) that always sends the same command; ``act(obs) -> action``.

    Parameters
    ----------
    action : array_like, shape (2,)
        The command, in [-1, 1].
    """

    def __init__(self, action: Any) -> None:
        a = np.asarray(action, dtype=np.float32)
        if a.shape != (2,) or not np.all(np.isfinite(a)) or np.any(np.abs(a) > 1):
            raise ValueError(f"action={action!r} must be a finite array of shape (2,) in [-1, 1]")
        self.action = a

    def act(self, obs: np.ndarray) -> np.ndarray:
        """The constant command, shape (2,)."""
        return self.action


def run_comparison(
    seeds: list[int],
    *,
    n_demos: int,
    epochs: int,
    episodes: int,
    max_steps: int,
    demo_max_steps: int = 120,
    demo_noise: float = 0.1,
    sigma: float = 0.03,
    eps_pose: float = 0.03,
    seg_len: int = 12,
    n_candidates: int = 4,
    heavy_mass_test: float = 1.5,
    n_heldout: int = 6,
) -> dict[str, Any]:
    """The chapter's experiment: per seed, demonstrations, the six models, and the paired episodes.

    For each seed ``s``: :func:`collect_demos` with the seen styles (``random_state=s``),
    ``n_heldout`` more (a stream of their own) for the selection's tie tolerance,
    :func:`fit_bass_models`, then :func:`evaluate_agents` for the five agents of
    :func:`comparison_agents` with all nine styles (Challenge 1), for an idle ego (the
    positive control), and for BC and BASS with the heavy box's mass changed to
    ``heavy_mass_test`` at test time only (Challenge 2: an item's mass changed).

    Returns
    -------
    dict
        ``rows`` (Challenge 1), ``idle_rows``, ``ch2_rows``, ``argmax_rows`` (BASS with the
        paper's plain argmax, ``tie_tol=0``: a sensitivity row; lists of episode rows with a
        ``seed`` key), ``train_rows``, ``data_rows``, ``models_by_seed`` and
        ``agents_by_seed``.
    """
    import time

    from .partners import SEEN_STYLES, UNSEEN_STYLES

    seeds = list(seeds)
    if not seeds:
        raise ValueError("seeds must be a non-empty list of int seeds")
    seeds = [check_int(x, "seed", low=0) for x in seeds]
    styles = SEEN_STYLES + UNSEEN_STYLES
    out: dict[str, Any] = {
        "rows": [],
        "ch2_rows": [],
        "idle_rows": [],
        "train_rows": [],
        "data_rows": [],
        "models_by_seed": {},
        "agents_by_seed": {},
        "argmax_rows": [],
    }
    for s in progress(seeds, desc="seeds"):
        t0 = time.perf_counter()
        demos = collect_demos(SEEN_STYLES, n_demos, noise=demo_noise, max_steps=demo_max_steps, random_state=s)
        t_demo = time.perf_counter() - t0
        heldout = collect_demos(
            SEEN_STYLES, n_heldout, noise=demo_noise, max_steps=demo_max_steps, random_state=np.random.default_rng([s, 1])
        )
        m = fit_bass_models(
            demos, epochs=epochs, sigma=sigma, eps_pose=eps_pose, seg_len=seg_len, heldout=heldout, random_state=s
        )
        out["models_by_seed"][s] = m
        out["train_rows"] += [{"seed": s, "model": k, "seconds": v} for k, v in m["train_s"].items()]
        out["data_rows"].append(
            {
                "seed": s,
                "demos kept": len(demos),
                "of": n_demos,
                "recombined segments": m["n_recombined"],
                "transitions": m["n_plain"],
                "augmented states": m["n_aug"],
                "held-out demos": len(heldout),
                "demo collection (s)": t_demo,
            }
        )
        agents = comparison_agents(m, n_candidates=n_candidates)
        out["data_rows"][-1]["tie tolerance (BASS)"] = agents["BASS"].tie_tol
        out["agents_by_seed"][s] = agents
        ev = dict(max_steps=max_steps, seed=s)
        out["rows"] += [{**r, "seed": s} for r in evaluate_agents(agents, styles, episodes, desc=f"seed {s}: challenge 1", **ev)]
        # positive control: an ego that stands still, with the same partners and layouts
        out["idle_rows"] += [
            {**r, "seed": s}
            for r in evaluate_agents({"idle ego": ConstantAgent([0.0, 0.0])}, styles, episodes, desc=f"seed {s}: idle ego", **ev)
        ]
        # sensitivity: the paper's plain argmax (no tie rule) with the same models
        plain = {
            "BASS, plain argmax": BassAgent(
                m["policy_aug"], m["dynamics_aug"], m["partner"], n_candidates=n_candidates, tie_tol=0.0
            )
        }
        out["argmax_rows"] += [
            {**r, "seed": s} for r in evaluate_agents(plain, styles, episodes, desc=f"seed {s}: plain argmax", **ev)
        ]
        pair = {k: agents[k] for k in ("BC", "BASS")}
        out["ch2_rows"] += [
            {**r, "seed": s}
            for r in evaluate_agents(pair, styles, episodes, heavy_mass=heavy_mass_test, desc=f"seed {s}: challenge 2", **ev)
        ]
    return out


COMPARISON_SETTINGS: tuple[str, ...] = (
    "n_demos",
    "epochs",
    "episodes",
    "max_steps",
    "demo_max_steps",
    "demo_noise",
    "sigma",
    "eps_pose",
    "seg_len",
    "n_candidates",
    "heavy_mass_test",
    "n_heldout",
)
"""The keyword arguments of :func:`run_comparison` (the chapter passes them from its configuration)."""
