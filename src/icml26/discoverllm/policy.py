"""Response-type policies, episode rollouts, and group-normalised policy-gradient training.

A policy picks a response type (:data:`~icml26.discoverllm.assistant.ACTIONS`) each turn
from the assistant's state features; :class:`~icml26.discoverllm.assistant.SymbolicAssistant`
writes the message and :class:`~icml26.discoverllm.simulator.IntentSimulator` answers and
scores it. Training follows GRPO's group normalisation: :math:`G` conversations with the
same simulated user (same seed) form a group; each conversation's return
:math:`R_i = \\sum_t R_{i,t}` gets the advantage
:math:`A_i = (R_i - \\operatorname{mean}_g R) / (\\operatorname{std}_g R + \\epsilon)` (the sample standard
deviation and :math:`\\epsilon = 10^{-4}`, as the authors' TRL trainer), and the objective is

.. math::

    J(\\theta) = \\frac{1}{N} \\sum_i \\frac{1}{|\\tau_i|} \\sum_{t} A_i \\log \\pi_\\theta(a_{i,t} \\mid s_{i,t}),

the on-policy form of GRPO (one gradient step per batch, so the clipped ratio is 1; no KL
term).

References
----------
Kim et al., "DiscoverLLM", ICML 2026, arXiv:2602.03429 (online GRPO with the simulator as
judge); Shao et al., "DeepSeekMath", arXiv:2402.03300 (GRPO). Authors' code:
``training/trainers/grpo.py`` (https://github.com/tsook/discoverllm).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from .._common import RandomState, check_int, check_random_state, check_real, progress, seed_from
from .._grpo import group_advantages
from .assistant import ACTIONS, SymbolicAssistant, TokenCosts
from .simulator import IntentSimulator

__all__ = [
    "TaskConfig",
    "Episode",
    "BASELINES",
    "ResponseTypePolicy",
    "run_episode",
    "run_episodes",
    "response_type_advantages",
    "response_type_objective",
    "train_response_policy",
    "turn_action_rewards",
    "summarize_episodes",
    "train_and_evaluate",
]

REWARD_MODES = ("conversation", "turn")
ADVANTAGE_SD = ("sample", "population")


@dataclass(frozen=True)
class TaskConfig:
    """The simulated task: dimensions, option-tree shape, horizon and message lengths.

    Parameters
    ----------
    dims : tuple of str
        Dimension names.
    depth, branching : int
        Target path length and alternatives per level.
    horizon : int
        Maximum number of assistant turns; a conversation ends earlier once the user is done.
    costs : TokenCosts
        Message lengths.
    awareness : {"mean", "sum"}
        How the reward pools the roots' awareness gains (see
        :class:`~icml26.discoverllm.simulator.IntentSimulator`; ``"sum"`` is the authors' code).
    """

    dims: tuple[str, ...] = ("subject", "setting", "tone")
    depth: int = 2
    branching: int = 4
    horizon: int = 6
    costs: TokenCosts = field(default_factory=TokenCosts)
    awareness: str = "mean"

    def simulator(self, random_state: RandomState = None) -> IntentSimulator:
        """A fresh simulator for this task."""
        return IntentSimulator(
            self.dims, depth=self.depth, branching=self.branching, awareness=self.awareness, random_state=random_state
        )

    def assistant(self, random_state: RandomState = None) -> SymbolicAssistant:
        """A fresh symbolic assistant for this task."""
        return SymbolicAssistant(self.dims, self.depth, self.branching, self.costs, random_state=random_state)

    @property
    def n_features(self) -> int:
        return self.horizon + 6


@dataclass
class Episode:
    """One conversation: per-turn features, actions, rewards and measurements."""

    features: list[np.ndarray] = field(default_factory=list)
    actions: list[int] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)
    tokens: int = 0
    discover: float = 0.0
    satisfy: float = 0.0
    turns: int = 0
    done: bool = False
    trace: list[dict] = field(default_factory=list)

    @property
    def ret(self) -> float:
        return float(np.sum(self.rewards))


def _execute(x, turn, horizon):
    return 2


def _clarify(x, turn, horizon):
    return 2 if turn == horizon - 1 else 1


def _ask_once(x, turn, horizon):
    return 1 if turn == 0 else 2


BASELINES: dict[str, Callable | None] = {
    "always execute": _execute,
    "clarify (delivers on the last turn)": _clarify,
    "ask once, then execute": _ask_once,
    "random": None,
}
"""Fixed policies ``(features, turn, horizon) -> action``; ``None`` is the uniform random policy."""


def _torch():
    import torch

    return torch


class ResponseTypePolicy:
    """Softmax policy over response types: a one-hidden-layer MLP on the state features.

    Parameters
    ----------
    n_features : int
        Feature size (``TaskConfig.n_features``).
    hidden : int
        Hidden units.
    random_state : int, Generator or None
        Seeds the initial weights.
    """

    def __init__(self, n_features: int, hidden: int = 32, random_state: RandomState = None) -> None:
        torch = _torch()
        self.n_features = check_int(n_features, "n_features", low=1)
        self.hidden = check_int(hidden, "hidden", low=1)
        g = torch.Generator().manual_seed(seed_from(random_state))
        self.net = torch.nn.Sequential(
            torch.nn.Linear(n_features, hidden), torch.nn.Tanh(), torch.nn.Linear(hidden, len(ACTIONS))
        )
        with torch.no_grad():
            for p in self.net.parameters():
                p.copy_(torch.randn(p.shape, generator=g) * (0.3 if p.dim() > 1 else 0.0))

    def logits(self, x):
        """Logits, shape ``(n, n_actions)``, for features ``x`` of shape ``(n, n_features)``."""
        torch = _torch()
        x = torch.as_tensor(np.asarray(x), dtype=torch.float32)
        if x.dim() != 2 or x.shape[1] != self.n_features:
            raise ValueError(f"features must have shape (n, {self.n_features}), got {tuple(x.shape)}")
        return self.net(x)

    def probs(self, x) -> np.ndarray:
        """Action probabilities, shape ``(n, n_actions)``."""
        torch = _torch()
        with torch.no_grad():
            return torch.softmax(self.logits(x), dim=-1).double().numpy()

    def greedy(self) -> Callable:
        """The argmax policy as a ``(features, turn, horizon) -> action`` function."""
        return lambda x, turn, horizon: int(np.argmax(self.probs(x[None])[0]))


def _sample(p: np.ndarray, u: float) -> int:
    return int(min(np.searchsorted(np.cumsum(p), u * p.sum(), side="right"), len(p) - 1))


def run_episode(
    task: TaskConfig,
    choose: Callable | ResponseTypePolicy | None,
    *,
    sim_seed: int,
    random_state: RandomState = None,
    record: bool = False,
) -> Episode:
    """Play one conversation with a fixed policy or a sampling :class:`ResponseTypePolicy`.

    Parameters
    ----------
    task : TaskConfig
    choose : callable, ResponseTypePolicy or None
        ``(features, turn, horizon) -> action``, a policy to sample from, or ``None`` (uniform).
    sim_seed : int
        Seeds the simulated user (targets and thresholds): same seed, same user.
    random_state : int, Generator or None
        Seeds the assistant's completions and the action sampling.
    record : bool
        Keep a per-turn trace (message, reply, reward).

    Returns
    -------
    Episode
    """
    return run_episodes(task, choose, sim_seeds=[sim_seed], random_states=[random_state], record=record)[0]


def run_episodes(
    task: TaskConfig,
    choose: Callable | ResponseTypePolicy | None,
    *,
    sim_seeds: Sequence[int],
    random_states: Sequence[RandomState],
    record: bool = False,
) -> list[Episode]:
    """Play several conversations side by side, one policy call per turn for all of them.

    The vectorised rollout: with a :class:`ResponseTypePolicy` the action probabilities of
    every live conversation come from one batched forward pass per turn. Each conversation
    keeps its own generators, so the result equals :func:`run_episode` one by one.

    Parameters
    ----------
    task : TaskConfig
    choose : callable, ResponseTypePolicy or None
        As in :func:`run_episode`.
    sim_seeds : sequence of int
        One simulated user per conversation.
    random_states : sequence
        One assistant/sampling seed per conversation.
    record : bool
        Keep per-turn traces.

    Returns
    -------
    list of Episode

    Raises
    ------
    TypeError
        For ``sim_seeds`` or ``random_states`` given as a single string or not as sequences.
    ValueError
        For empty or unequal-length ``sim_seeds`` and ``random_states``.
    """
    for name, seq in (("sim_seeds", sim_seeds), ("random_states", random_states)):
        if isinstance(seq, (str, bytes)) or not hasattr(seq, "__len__"):
            raise TypeError(f"{name}={seq!r} must be a sequence (one entry per conversation)")
    if len(sim_seeds) == 0:
        raise ValueError("sim_seeds is empty; give at least one simulated user (one seed per conversation)")
    if len(sim_seeds) != len(random_states):
        raise ValueError(f"sim_seeds and random_states must have the same length, got {len(sim_seeds)} and {len(random_states)}")
    n = len(sim_seeds)
    sims, asts, rngs, eps = [], [], [], []
    for s, r in zip(sim_seeds, random_states):
        rng = check_random_state(r)
        sim = task.simulator(random_state=check_int(s, "sim_seeds entry", low=0))
        ast = task.assistant(random_state=int(rng.integers(0, 2**31)))
        ast.reset(sim.reset())
        sims.append(sim)
        asts.append(ast)
        rngs.append(rng)
        eps.append(Episode())
    live = list(range(n))
    for turn in range(task.horizon):
        if not live:
            break
        feats = np.stack([asts[i].features(turn, task.horizon) for i in live])
        us = [rngs[i].random() for i in live]
        if isinstance(choose, ResponseTypePolicy):
            probs = choose.probs(feats)
            acts = [_sample(probs[j], us[j]) for j in range(len(live))]
        elif choose is None:
            acts = [min(int(u * len(ACTIONS)), len(ACTIONS) - 1) for u in us]
        else:
            acts = [int(choose(feats[j], turn, task.horizon)) for j in range(len(live))]
        still = []
        for j, i in enumerate(live):
            msg = asts[i].compose(acts[j])
            res = sims[i].step(msg)
            asts[i].observe(res.reply, msg)
            ep = eps[i]
            ep.features.append(feats[j])
            ep.actions.append(acts[j])
            ep.rewards.append(res.reward)
            ep.tokens += msg.tokens + res.reply.tokens
            ep.turns = turn + 1
            ep.discover, ep.satisfy, ep.done = res.info["discover"], res.info["satisfy"], res.done
            if record:
                ep.trace.append(
                    {
                        "turn": turn + 1,
                        "action": ACTIONS[acts[j]],
                        "message": msg,
                        "reply": res.reply.text,
                        "reward": res.reward,
                        "discover": res.info["discover"],
                        "satisfy": res.info["satisfy"],
                    }
                )
            if not res.done:
                still.append(i)
        live = still
    return eps


def response_type_advantages(returns, groups, eps: float = 1e-4, sd: str = "sample") -> np.ndarray:
    """Group-normalised advantages :math:`(R_i - \\bar R_g) / (s_g + \\epsilon)`.

    By default the authors' convention: their trainer (``training/trainers/grpo.py``, TRL's
    ``GRPOTrainer`` with ``scale_rewards="group"``) divides by the group's *sample* standard
    deviation, :math:`s_g^2 = \\frac{1}{|g| - 1}\\sum_{j \\in g} (R_j - \\bar R_g)^2` (torch's
    ``std()``), plus :math:`\\epsilon = 10^{-4}`. ``sd="population"`` divides by :math:`|g|`
    instead (with ``eps=1e-6`` this chapter's earlier convention).

    Parameters
    ----------
    returns : array_like, shape (E,)
        Episode returns.
    groups : array_like of int, shape (E,)
        Group id of each episode (same simulated user); with ``sd="sample"`` every group
        holds at least two.
    eps : float
        Added to the group's standard deviation (> 0).
    sd : {"sample", "population"}
        Standard-deviation convention (see :func:`icml26._grpo.group_advantages`).

    Returns
    -------
    numpy.ndarray, shape (E,)

    References
    ----------
    Shao et al., "DeepSeekMath", arXiv:2402.03300, Sec. 4.1.2; TRL ``GRPOTrainer``
    (``scale_rewards="group"``: ``rewards.view(-1, G).std(dim=1)``, then ``/ (std + 1e-4)``).
    """
    r = np.asarray(returns, dtype=float)
    g = np.asarray(groups)
    if r.ndim != 1 or g.shape != r.shape:
        raise ValueError(f"returns and groups must be 1-D of the same length, got shapes {r.shape} and {g.shape}")
    if not np.all(np.isfinite(r)):
        raise ValueError("returns must be finite")
    eps = check_real(eps, "eps", lo=0.0, lo_open=True)
    if sd not in ADVANTAGE_SD:
        raise ValueError(f"sd={sd!r} is not a standard-deviation convention here; use one of {ADVANTAGE_SD}")
    return group_advantages(r, g, sd=sd, eps=eps)


def response_type_objective(logp, episode, advantages):
    """The group-normalised policy-gradient objective :math:`J` (to maximise).

    Parameters
    ----------
    logp : torch.Tensor, shape (S,)
        :math:`\\log \\pi(a_{t} \\mid s_{t})` of every step of every episode.
    episode : torch.LongTensor, shape (S,)
        Episode index of each step, in ``0..E-1`` (every episode has at least one step).
    advantages : torch.Tensor, shape (E,)
        Per-episode advantages.

    Returns
    -------
    torch.Tensor
        Scalar :math:`\\frac{1}{E}\\sum_i \\frac{1}{|\\tau_i|}\\sum_t A_i \\log\\pi(a_{i,t}\\mid s_{i,t})`.
    """
    torch = _torch()
    if logp.dim() != 1 or episode.shape != logp.shape:
        raise ValueError(f"logp and episode must be 1-D of the same length, got {tuple(logp.shape)} and {tuple(episode.shape)}")
    n_ep = advantages.shape[0]
    if episode.numel() and (int(episode.min()) < 0 or int(episode.max()) >= n_ep):
        raise ValueError(f"episode indices must lie in [0, {n_ep})")
    lengths = torch.bincount(episode, minlength=n_ep).to(logp.dtype)  # (E,)
    if torch.any(lengths == 0):
        raise ValueError("every episode needs at least one step")
    per_ep = torch.zeros(n_ep, dtype=logp.dtype).index_add_(0, episode, logp) / lengths  # (E,)
    return (advantages.to(logp.dtype) * per_ep).mean()


def train_response_policy(
    task: TaskConfig,
    *,
    iterations: int = 200,
    groups: int = 4,
    group_size: int = 8,
    lr: float = 0.03,
    hidden: int = 32,
    reward: str = "conversation",
    random_state: RandomState = None,
    show_progress: bool = False,
):
    """Train a :class:`ResponseTypePolicy` on the discovery reward with group-normalised PG.

    Each iteration draws ``groups`` simulated users and takes one Adam step on :math:`-J`.
    With ``reward="conversation"`` (ours) each user is met by ``group_size`` sampled
    conversations and each conversation gets one advantage from its return. With
    ``reward="turn"`` (the authors' GRPO, whose reward scores a single next message) each
    user is met by one sampled conversation; at every turn ``group_size`` candidate
    response types are sampled at that same state, each is scored by its own single-turn
    reward :math:`R_t` on a copy of the user and the assistant, the candidates' advantages
    are normalised among themselves, and the conversation goes on with the first candidate.

    Parameters
    ----------
    task : TaskConfig
    iterations, groups, group_size : int
        Training length and batch shape (``group_size >= 2``).
    lr : float
        Adam learning rate.
    hidden : int
        Policy width.
    reward : {"conversation", "turn"}
        One advantage per conversation (ours) or per candidate message (the authors').
    random_state : int, Generator or None
        Seeds the initial weights, the users and the sampling.
    show_progress : bool
        Report progress.

    Returns
    -------
    (ResponseTypePolicy, dict)
        The policy and a history with the mean return per iteration (for ``"turn"``: the
        return of the conversation each user actually had).

    References
    ----------
    Authors' ``training/trainers/grpo.py`` (``num_generations`` = 8 completions per prompt,
    ``max_new_turns`` = 0: the single-turn reward of ``pipeline/rewards.py``).
    """
    if reward not in REWARD_MODES:
        raise ValueError(f"reward={reward!r} is not valid; use one of {REWARD_MODES}")
    if reward == "turn":
        return _train_per_turn(
            task,
            iterations=iterations,
            groups=groups,
            group_size=group_size,
            lr=lr,
            hidden=hidden,
            random_state=random_state,
            show_progress=show_progress,
        )
    torch, iterations, groups, group_size, rng, policy, opt, hist = _grpo_setup(
        task, iterations, groups, group_size, lr, hidden, random_state
    )
    for _ in progress(range(iterations), "GRPO iterations", disable=not show_progress):
        users = rng.integers(0, 2**31, size=groups)
        sim_seeds = np.repeat(users, group_size)
        states = [int(s) for s in rng.integers(0, 2**31, size=groups * group_size)]
        eps = run_episodes(task, policy, sim_seeds=sim_seeds, random_states=states)
        rets = np.array([e.ret for e in eps])
        adv = response_type_advantages(rets, np.repeat(np.arange(groups), group_size))
        feats = np.concatenate([np.stack(e.features) for e in eps])  # (S, F)
        acts = torch.as_tensor(np.concatenate([e.actions for e in eps]))  # (S,)
        ep_idx = torch.as_tensor(np.concatenate([[i] * len(e.actions) for i, e in enumerate(eps)]))  # (S,)
        logp = torch.log_softmax(policy.logits(feats), dim=-1).gather(1, acts[:, None])[:, 0]  # (S,)
        loss = -response_type_objective(logp, ep_idx, torch.as_tensor(adv))
        opt.zero_grad()
        loss.backward()
        opt.step()
        hist["mean_return"].append(float(rets.mean()))
        hist["discover"].append(float(np.mean([e.discover for e in eps])))
        hist["k_ge2_first"].append(float(np.mean([e.actions[0] >= 3 for e in eps])))
    return policy, hist


def _state(task: TaskConfig, sim_seed: int, rng: np.random.Generator):
    sim = task.simulator(random_state=check_int(sim_seed, "sim_seed", low=0))
    ast = task.assistant(random_state=int(rng.integers(0, 2**31)))
    ast.reset(sim.reset())
    return sim, ast


def _branch(sim: IntentSimulator, ast: SymbolicAssistant, action: int):
    """Play ``action`` on copies of the user and the assistant; returns (sim, ast, result, message)."""
    sim2, ast2 = sim.clone(), copy.deepcopy(ast)
    msg = ast2.compose(action)
    res = sim2.step(msg)
    ast2.observe(res.reply, msg)
    return sim2, ast2, res, msg


def _grpo_setup(task, iterations, groups, group_size, lr, hidden, random_state):
    """Checked GRPO settings, the generator, a fresh policy with its Adam optimiser and an empty history
    (shared by the per-conversation and the per-message trainers; the generator's first draw seeds the policy)."""
    torch = _torch()
    iterations = check_int(iterations, "iterations", low=1)
    groups = check_int(groups, "groups", low=1)
    group_size = check_int(group_size, "group_size", low=2)
    lr = check_real(lr, "lr", lo=0.0, lo_open=True)
    rng = check_random_state(random_state)
    policy = ResponseTypePolicy(task.n_features, hidden=hidden, random_state=int(rng.integers(0, 2**31)))
    opt = torch.optim.Adam(policy.net.parameters(), lr=lr)
    hist = {"mean_return": [], "discover": [], "k_ge2_first": []}
    return torch, iterations, groups, group_size, rng, policy, opt, hist


def _train_per_turn(task, *, iterations, groups, group_size, lr, hidden, random_state, show_progress):
    torch, iterations, groups, group_size, rng, policy, opt, hist = _grpo_setup(
        task, iterations, groups, group_size, lr, hidden, random_state
    )
    for _ in progress(range(iterations), "GRPO iterations (per message)", disable=not show_progress):
        users = rng.integers(0, 2**31, size=groups)
        convs = [[*_state(task, int(u), rng), 0.0, None] for u in users]  # sim, ast, return, first action
        feats, acts, advs = [], [], []
        for turn in range(task.horizon):
            live = [c for c in convs if not c[0].done]
            if not live:
                break
            x = np.stack([c[1].features(turn, task.horizon) for c in live])  # (B, F)
            probs = policy.probs(x)  # (B, A)
            for j, c in enumerate(live):
                cand = [_sample(probs[j], u) for u in rng.random(group_size)]  # (G,)
                outs = [_branch(c[0], c[1], a) for a in cand]
                r = np.array([o[2].reward for o in outs])  # (G,) single-turn rewards
                advs.append(response_type_advantages(r, np.zeros(group_size, dtype=int)))
                feats.append(np.repeat(x[j][None], group_size, 0))
                acts.extend(cand)
                if c[3] is None:
                    c[3] = cand[0]
                c[0], c[1] = outs[0][0], outs[0][1]
                c[2] += float(r[0])
        x_all = np.concatenate(feats)  # (S, F), one row per candidate message
        a_all = torch.as_tensor(np.asarray(acts))  # (S,)
        logp = torch.log_softmax(policy.logits(x_all), dim=-1).gather(1, a_all[:, None])[:, 0]  # (S,)
        # each candidate is a one-step "episode" with its own advantage
        loss = -response_type_objective(logp, torch.arange(len(acts)), torch.as_tensor(np.concatenate(advs)))
        opt.zero_grad()
        loss.backward()
        opt.step()
        hist["mean_return"].append(float(np.mean([c[2] for c in convs])))
        hist["discover"].append(float(np.mean([c[0].levels()["discover"] for c in convs])))
        hist["k_ge2_first"].append(float(np.mean([c[3] >= 3 for c in convs])))
    return policy, hist


def turn_action_rewards(
    task: TaskConfig,
    choose: Callable | ResponseTypePolicy | None,
    *,
    sim_seeds: Sequence[int],
    random_states: Sequence[RandomState],
) -> dict[str, np.ndarray]:
    """Single-turn reward of every response type at the states a policy visits.

    Plays the conversations of :func:`run_episodes` (same users, same seeds, so the same
    trajectories) and at every turn also plays each response type once on copies of the
    user and the assistant, recording its :math:`\\Delta A_t` and its reward
    :math:`R_t = \\Delta A_t - \\min(\\lambda\\max(0, \\text{tok} - \\tau), 1)`.

    Parameters
    ----------
    task : TaskConfig
    choose : callable, ResponseTypePolicy or None
        The policy whose states are probed (as in :func:`run_episodes`).
    sim_seeds, random_states : sequence
        One simulated user and one assistant/sampling seed per conversation.

    Returns
    -------
    dict
        ``"delta_awareness"`` and ``"reward"``, each of shape ``(n_states, n_actions)``;
        ``"turn"``, shape ``(n_states,)``, the 0-based turn of each probed state.
    """
    eps = run_episodes(task, choose, sim_seeds=sim_seeds, random_states=random_states)
    da, rw, turns = [], [], []
    for ep, s, r in zip(eps, sim_seeds, random_states):
        rng = check_random_state(r)
        sim, ast = _state(task, int(s), rng)
        for t, a in enumerate(ep.actions):
            outs = [_branch(sim, ast, b) for b in range(len(ACTIONS))]
            da.append([o[2].info["delta_awareness"] for o in outs])
            rw.append([o[2].reward for o in outs])
            turns.append(t)
            msg = ast.compose(a)  # replay the policy's own step with the original generators
            res = sim.step(msg)
            ast.observe(res.reply, msg)
    return {"delta_awareness": np.asarray(da), "reward": np.asarray(rw), "turn": np.asarray(turns)}


def summarize_episodes(eps: Sequence[Episode]) -> dict[str, float]:
    """Means over conversations: Discover, Satisfy, #Tok, turns, return, and the first- and
    last-turn shares of artifacts with at least two options (``k >= 2``) and of single drafts (``k = 1``)."""
    if isinstance(eps, (str, bytes)) or not hasattr(eps, "__len__"):
        raise TypeError(f"eps must be a sequence of Episode, got {type(eps).__name__}")
    if len(eps) == 0:
        raise ValueError("eps is empty; give at least one Episode")
    if not all(isinstance(e, Episode) for e in eps):
        raise TypeError("eps must hold Episode objects (from run_episodes)")
    return {
        "Discover": float(np.mean([e.discover for e in eps])),
        "Satisfy": float(np.mean([e.satisfy for e in eps])),
        "#Tok": float(np.mean([e.tokens for e in eps])),
        "turns": float(np.mean([e.turns for e in eps])),
        "return": float(np.mean([e.ret for e in eps])),
        "first k>=2": float(np.mean([e.actions[0] >= 3 for e in eps])),
        "last k>=2": float(np.mean([e.actions[-1] >= 3 for e in eps])),
        "last k=1": float(np.mean([e.actions[-1] == 2 for e in eps])),
    }


def train_and_evaluate(
    task: TaskConfig,
    *,
    reward: str = "conversation",
    iterations: int,
    groups: int,
    group_size: int,
    sim_seeds: Sequence[int],
    random_states: Sequence[RandomState],
    random_state: RandomState = None,
):
    """Train a policy with :func:`train_response_policy` and play its greedy form on held-out users.

    Parameters
    ----------
    task : TaskConfig
    reward : {"conversation", "turn"}
        As in :func:`train_response_policy`.
    iterations, groups, group_size : int
        Training schedule.
    sim_seeds, random_states : sequence
        The held-out users and their seeds (as in :func:`run_episodes`).
    random_state : int, Generator or None
        Seeds the training.

    Returns
    -------
    (ResponseTypePolicy, list of Episode)
    """
    pol, _ = train_response_policy(
        task, iterations=iterations, groups=groups, group_size=group_size, reward=reward, random_state=random_state
    )
    return pol, run_episodes(task, pol.greedy(), sim_seeds=sim_seeds, random_states=random_states)
