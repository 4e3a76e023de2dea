"""The DiscoverLLM user simulator, rule-based: intent hierarchies that become concrete.

The paper's simulated user holds, per criterion (a *dimension* here), a hierarchy of
intents from abstract roots to concrete leaves. Each node has an awareness
:math:`a \\in \\{0, 0.5, 1\\}` (undiscovered / emerging / discovered) and a satisfaction
:math:`s \\in \\{0, 1\\}`. The paper asks an LLM judge whether the assistant's last message
*probes* (a question) or *satisfies* (an artifact) each node and which *near misses*
(variants of the node the message did show) it contains; here a node and every value a
message can name is a path in a per-dimension option tree, so the judge's three answers
become exact rules:

* a node with path ``p`` in dimension ``d`` is probed / satisfied when some option of the
  message names ``d`` with a path that starts with ``p`` (the *best-alternative* rule);
* its near misses are the distinct paths of the same length shown in ``d`` that share
  ``p``'s parent but not ``p`` itself (siblings in the option tree), excluding other
  intent nodes.

Everything else follows the authors' updater literally: depth-first traversal that only
evaluates a node whose parent was probed/satisfied in this message or is *skipped*
(already satisfied, or discovered with every child discovered); two thresholds
:math:`u_1, u_2 \\sim U(0, 1)` drawn at a node's first failure; evidence
:math:`q = p_{\\text{upd}}\\,|\\text{near misses}|` with :math:`p_{\\text{upd}} = 0.25`;
:math:`q \\ge u_1` raises awareness by a half and consumes :math:`u_1`, otherwise
:math:`u_1 \\leftarrow u_1 - q`; the user focuses on one root at a time (the current and
the next root are evaluated; the next one's update is kept only when the current root's
subtree is satisfied by this message).

References
----------
Kim, T. S., Lee, Y., Yu, J., Chung, J. J. Y. and Kim, J. "DiscoverLLM: From Executing
Intents to Discovering Them." ICML 2026, arXiv:2602.03429. Authors' code:
https://github.com/tsook/discoverllm (``pipeline/updater.py``, ``pipeline/user_simulator.py``,
``metrics/scoring.py``, ``core/prompts/evaluate_message.yaml``).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._common import RandomState, check_int, check_random_state, check_real

__all__ = [
    "IntentNode",
    "Message",
    "UserReply",
    "StepResult",
    "IntentSimulator",
    "chain_hierarchy",
    "hierarchy_score",
    "path_label",
]

KINDS = ("question", "artifact")
AWARENESS_MODES = ("mean", "sum")


def path_label(dim: str, path: Sequence[int]) -> str:
    """Human-readable name of a value: ``path_label("tone", (1, 0)) == "tone=b.a"``.

    Parameters
    ----------
    dim : str
        Dimension name.
    path : sequence of int
        Path in the dimension's option tree (``()`` is the dimension itself).

    Returns
    -------
    str
    """
    if not isinstance(dim, str) or not dim:
        raise TypeError(f"dim={dim!r} must be a non-empty str")
    path = _check_path(path)
    if not path:
        return dim
    return f"{dim}=" + ".".join(chr(ord("a") + i) for i in path)


def _check_path(path: Sequence[int]) -> tuple[int, ...]:
    out = []
    for i in tuple(path):
        if isinstance(i, (bool, np.bool_)) or not isinstance(i, (int, np.integer)) or not 0 <= int(i) < 26:
            raise ValueError(f"path {tuple(path)!r} has index {i!r}; each index must be an integer in [0, 26)")
        out.append(int(i))
    return tuple(out)


@dataclass
class IntentNode:
    """One intent of the user: a path in one dimension's option tree, with its children.

    Parameters
    ----------
    dim : str
        The dimension (criterion) it belongs to.
    path : tuple of int
        Its value: the path from the dimension's root (``()`` for a root).
    children : list of IntentNode
        More concrete intents refining this one.
    aware : float
        Awareness in {0, 0.5, 1}.
    satisfied : int
        Satisfaction in {0, 1}.
    thresholds : list of float or None
        The two update thresholds, ``None`` until first drawn.
    """

    dim: str
    path: tuple[int, ...]
    children: list[IntentNode] = field(default_factory=list)
    aware: float = 0.0
    satisfied: int = 0
    thresholds: list[float] | None = None

    def __post_init__(self) -> None:
        self.path = _check_path(self.path)
        if self.aware not in (0, 0.5, 1):
            raise ValueError(f"aware={self.aware!r} must be 0, 0.5 or 1")
        if self.satisfied not in (0, 1):
            raise ValueError(f"satisfied={self.satisfied!r} must be 0 or 1")
        self.aware = float(self.aware)

    @property
    def label(self) -> str:
        return path_label(self.dim, self.path)

    def walk(self):
        """Depth-first iteration over this node and its descendants."""
        yield self
        for c in self.children:
            yield from c.walk()


def chain_hierarchy(dim: str, target: Sequence[int]) -> IntentNode:
    """A root-to-leaf target path as an intent hierarchy (the root is aware from the start).

    Parameters
    ----------
    dim : str
        Dimension name.
    target : sequence of int
        The user's latent path, one index per level.

    Returns
    -------
    IntentNode
        Root ``()`` (aware = 1: the initial request names it) with one chain of children.
    """
    target = _check_path(target)
    root = IntentNode(dim, (), aware=1.0, thresholds=[])
    node = root
    for depth in range(1, len(target) + 1):
        child = IntentNode(dim, tuple(int(t) for t in target[:depth]))
        node.children.append(child)
        node = child
    return root


def _score(nodes: Sequence[IntentNode], attr: str) -> tuple[float, float, int]:
    # (total over the subtrees, sum of this level's node scores, node count)
    total, curr, count = 0.0, 0.0, 0
    for node in nodes:
        sub_total, child_curr, sub_count = _score(node.children, attr)
        total += sub_total
        count += sub_count
        if node.children and child_curr == len(node.children):
            curr += 1.0
        else:
            curr += float(getattr(node, attr))
    return total + curr, curr, count + len(nodes)


def hierarchy_score(roots: Sequence[IntentNode], attr: str = "aware") -> tuple[float, int]:
    """Raw tree score and node count (the authors' ``score_hierarchy``).

    A node scores 1 when every child scores 1 ("complete"), otherwise its own ``aware``
    (or ``satisfied``); the raw score is the sum over all nodes.

    Parameters
    ----------
    roots : sequence of IntentNode
        The roots of one criterion.
    attr : {"aware", "satisfied"}
        Which state to score.

    Returns
    -------
    (float, int)
        Raw score and number of nodes; their ratio is the criterion's level.
    """
    if attr not in ("aware", "satisfied"):
        raise ValueError(f"attr={attr!r} is not valid; use 'aware' or 'satisfied'")
    total, _, count = _score(list(roots), attr)
    return total, count


@dataclass(frozen=True)
class Message:
    """One assistant message as the simulator's judge sees it.

    Parameters
    ----------
    kind : {"question", "artifact"}
        A dialog act (questions only) or an artifact (drafts/options; wins when both).
    options : tuple of dict
        One mapping per option (an artifact option, or one asked-about alternative):
        dimension name -> path it names (``()``: the dimension only, a generic question).
    tokens : int
        Length of the message in tokens (for the token penalty).
    """

    kind: str
    options: tuple[Mapping[str, tuple[int, ...]], ...]
    tokens: int

    @property
    def n_options(self) -> int:
        return len(self.options)


@dataclass(frozen=True)
class UserReply:
    """What the simulated user says back: only what has become concrete.

    Parameters
    ----------
    discovered : dict of str to tuple
        Per dimension in focus (roots up to the current one), the deepest discovered path.
    emerging : dict of str to bool
        Whether an emerging (aware = 0.5) intent lies in that dimension: a vague hint.
    satisfied : dict of str to bool
        Whether that dimension's subtree is fully satisfied.
    done : bool
        Every root satisfied: the user is content and the conversation ends.
    text : str
        The reply rendered as text.
    tokens : int
        Its length in tokens.
    """

    discovered: dict[str, tuple[int, ...]]
    emerging: dict[str, bool]
    satisfied: dict[str, bool]
    done: bool
    text: str
    tokens: int


@dataclass(frozen=True)
class StepResult:
    """Outcome of one assistant turn: ``reply``, ``reward``, ``done`` and an ``info`` dict."""

    reply: UserReply
    reward: float
    done: bool
    info: dict[str, Any]


def _preorder(node: IntentNode) -> list[IntentNode]:
    """``list(node.walk())``, the same depth-first order, without a generator per node."""
    out, stack = [], [node]
    while stack:
        n = stack.pop()
        out.append(n)
        stack.extend(reversed(n.children))
    return out


def _copy_tree(node: IntentNode, memo: dict[int, IntentNode]) -> IntentNode:
    """A copy of the subtree under ``node``, as ``copy.deepcopy`` makes it, without its generic machinery.

    Each node is a new :class:`IntentNode` with the same attributes (strings, path tuples and
    numbers are immutable and shared, as deepcopy shares them), its own ``thresholds`` list
    and its own list of copied children; ``memo`` (``id`` of a node -> its copy) keeps a
    node reached twice one node, as deepcopy's memo does. ``__post_init__`` is not run again:
    the copied values were checked when the original was made.
    """
    done = memo.get(id(node))
    if done is not None:
        return done
    new = object.__new__(IntentNode)
    memo[id(node)] = new
    attrs = dict(node.__dict__)
    attrs["children"] = [_copy_tree(c, memo) for c in node.children]
    if node.thresholds is not None:
        attrs["thresholds"] = list(node.thresholds)
    new.__dict__.update(attrs)
    return new


def _subtree_satisfied(node: IntentNode) -> bool:
    if not node.children:
        return node.satisfied == 1
    return all(_subtree_satisfied(c) for c in node.children)


def _is_skip(node: IntentNode) -> bool:
    if node.satisfied == 1:
        return True
    return node.aware == 1 and len(node.children) > 0 and all(c.aware == 1 for c in node.children)


class IntentSimulator:
    """A simulated user with latent intent hierarchies, one per dimension.

    A plain Python object: :meth:`reset` starts a conversation (returns the initial
    request), :meth:`step` takes one assistant message (a :class:`Message` or an
    equivalent dict) and returns a :class:`StepResult` with the user's reply, the
    discovery reward, and whether the user is done.

    Parameters
    ----------
    dims : sequence of str
        Dimension (criterion) names, in the order the user attends to them.
    depth : int
        Levels below each root (the target path length).
    branching : int
        Alternatives per level of the option tree.
    update_prob : float
        :math:`p_{\\text{upd}}`, evidence per near miss (0.25 in the paper's code).
    focus : bool
        One root at a time (the authors' ``single_dimension_focus``, on by default).
    lam, tau, cap : float
        Token penalty :math:`\\min(\\lambda\\max(0, \\text{tok} - \\tau), \\text{cap})`.
    awareness : {"mean", "sum"}
        How the reward's :math:`\\Delta A_t` pools the roots' raw score changes: their mean
        over dimensions (default), or their sum, as in the authors' code, whose
        ``create_criteria`` returns one criterion holding every root (and the paper's node
        count :math:`|I_{t+1}| - |I_t|`).
    hierarchies : sequence of IntentNode, optional
        Hand-built roots (one per dimension) instead of random target paths; copied on
        every reset.
    random_state : int, Generator or None
        Seeds the targets and thresholds; :meth:`reset` may reseed.

    References
    ----------
    Kim et al., ICML 2026 (arXiv:2602.03429); authors' ``pipeline/user_simulator.py`` and
    ``pipeline/updater.py``.
    """

    def __init__(
        self,
        dims: Sequence[str] = ("subject", "setting", "tone"),
        *,
        depth: int = 2,
        branching: int = 4,
        update_prob: float = 0.25,
        focus: bool = True,
        lam: float = 1e-3,
        tau: float = 250.0,
        cap: float = 1.0,
        awareness: str = "mean",
        hierarchies: Sequence[IntentNode] | None = None,
        random_state: RandomState = None,
    ) -> None:
        dims = tuple(dims) if not isinstance(dims, str) else (dims,)
        if not dims or not all(isinstance(d, str) and d.isidentifier() for d in dims) or len(set(dims)) != len(dims):
            raise ValueError(f"dims={dims!r} must be distinct non-empty identifiers")
        self.dims = dims
        self.depth = check_int(depth, "depth", low=1)
        self.branching = check_int(branching, "branching", low=2)
        if self.branching > 26:
            raise ValueError(f"branching={branching!r} must be at most 26 (values are named a-z)")
        self.update_prob = check_real(update_prob, "update_prob", lo=0.0, hi=1.0, lo_open=True)
        self.focus = bool(focus)
        self.lam = check_real(lam, "lam", lo=0.0)
        self.tau = check_real(tau, "tau", lo=0.0)
        self.cap = check_real(cap, "cap", lo=0.0)
        if awareness not in AWARENESS_MODES:
            raise ValueError(f"awareness={awareness!r} is not valid; use one of {AWARENESS_MODES}")
        self.awareness = awareness
        if hierarchies is not None:
            hierarchies = list(hierarchies)
            if [h.dim for h in hierarchies] != list(dims) or not all(isinstance(h, IntentNode) for h in hierarchies):
                raise ValueError(f"hierarchies must be one IntentNode root per dimension, in the order {list(dims)}")
        self._given = hierarchies
        self._rng = check_random_state(random_state)
        self.roots: list[IntentNode] = []
        self.position = 0
        self.turn = 0

    # ------------------------------------------------------------------ state
    @property
    def target(self) -> dict[str, tuple[int, ...]]:
        """The deepest target path per dimension (hidden from the assistant)."""
        out = {}
        for r in self.roots:
            leaf = max(r.walk(), key=lambda n: len(n.path))
            out[r.dim] = leaf.path
        return out

    def levels(self) -> dict[str, float]:
        """Discovery and satisfaction levels (mean over dimensions of score / node count)."""
        aw = [_score([r], "aware") for r in self.roots]  # hierarchy_score's (total, _, count)
        sa = [_score([r], "satisfied") for r in self.roots]
        return {"discover": float(np.mean([s / n for s, _, n in aw])), "satisfy": float(np.mean([s / n for s, _, n in sa]))}

    def _raw(self, attr: str) -> float:
        scores = [_score([r], attr)[0] for r in self.roots]  # hierarchy_score([r], attr)[0]
        # "sum": the authors' one criterion holding every root
        return float(np.sum(scores) if self.awareness == "sum" else np.mean(scores))

    @property
    def done(self) -> bool:
        """Every root's subtree is satisfied (the user is content)."""
        if self.focus:
            return self.position >= len(self.roots)
        return bool(self.roots) and all(_subtree_satisfied(r) for r in self.roots)

    def clone(self) -> IntentSimulator:
        """An independent copy (state and random generator), for look-ahead."""
        return copy.deepcopy(self)

    # ------------------------------------------------------------------ API
    def reset(self, random_state: RandomState = None) -> UserReply:
        """Start a conversation: draw the target paths and return the initial request.

        Parameters
        ----------
        random_state : int, Generator or None
            If given, reseeds the simulator first (same seed, same episode).

        Returns
        -------
        UserReply
            The initial request (roots only, as in the paper).
        """
        if random_state is not None:
            self._rng = check_random_state(random_state)
        if self._given is not None:
            self.roots = copy.deepcopy(self._given)
        else:
            self.roots = [chain_hierarchy(d, self._rng.integers(0, self.branching, size=self.depth)) for d in self.dims]
        self.position = 0
        self.turn = 0
        self._advance()
        return self._reply(initial=True)

    def parse(self, message: Message | Mapping[str, Any]) -> Message:
        """Validate a message (a :class:`Message` or a dict with ``kind``, ``options``, ``tokens``).

        Raises
        ------
        ValueError
            For an unknown kind, an unknown dimension (named, with the allowed ones), a path
            index outside the option tree, or a negative token count.
        """
        if isinstance(message, Mapping):
            missing = {"kind", "options", "tokens"} - set(message)
            if missing:
                raise ValueError(f"message is missing {sorted(missing)}; give kind, options and tokens")
            message = Message(message["kind"], tuple(message["options"]), message["tokens"])
        if not isinstance(message, Message):
            raise TypeError(f"message must be a Message or a dict, got {type(message).__name__}")
        if message.kind not in KINDS:
            raise ValueError(f"message kind={message.kind!r} is not valid; use one of {KINDS}")
        tokens = check_int(message.tokens, "tokens", low=0)
        opts = []
        for opt in message.options:
            if not isinstance(opt, Mapping):
                raise TypeError(f"each option must map dimension -> path, got {type(opt).__name__}")
            clean = {}
            for d, p in opt.items():
                if d not in self.dims:
                    raise ValueError(f"message names unknown dimension {d!r}; the simulator's dimensions are {list(self.dims)}")
                p = tuple(p)
                if len(p) > self.depth or not all(isinstance(i, (int, np.integer)) and 0 <= i < self.branching for i in p):
                    raise ValueError(
                        f"path {p!r} for dimension {d!r} is not in the option tree "
                        f"(at most {self.depth} indices, each in [0, {self.branching}))"
                    )
                clean[d] = tuple(int(i) for i in p)
            opts.append(clean)
        return Message(message.kind, tuple(opts), tokens)

    def step(self, message: Message | Mapping[str, Any]) -> StepResult:
        """One assistant turn: update the user's intents, reply, and score the turn.

        Parameters
        ----------
        message : Message or dict
            The assistant's message (see :meth:`parse`).

        Returns
        -------
        StepResult
            ``reward`` is :func:`icml26.discoverllm.discovery_reward` of this turn's
            awareness gain (mean over dimensions of the raw score change, or their sum
            with ``awareness="sum"``) and tokens.

        Raises
        ------
        ValueError
            Before :meth:`reset`, after the episode is done (the user is content; scoring
            further turns would count them in an episode that has ended), or for a message
            :meth:`parse` refuses.
        TypeError
            For a message that is neither a :class:`Message` nor a dict.
        """
        if not self.roots:
            raise ValueError("the simulator has no conversation yet: call reset() before step()")
        if self.done:
            raise ValueError(
                f"the episode is done (the user was content after turn {self.turn}); "
                "call reset() to start a new conversation before step()"
            )
        msg = self.parse(message)
        from .reward import discovery_reward

        a0, s0 = self._raw("aware"), self._raw("satisfied")
        self._update(msg)
        self.turn += 1
        da, ds = self._raw("aware") - a0, self._raw("satisfied") - s0
        reward = discovery_reward(da, msg.tokens, lam=self.lam, tau=self.tau, cap=self.cap)
        reply = self._reply()
        info = {
            "delta_awareness": da,
            "delta_satisfaction": ds,
            "tokens": msg.tokens,
            "kind": msg.kind,
            "n_options": msg.n_options,
            **self.levels(),
        }
        return StepResult(reply, float(reward), reply.done, info)

    # ------------------------------------------------------------------ rules
    def _advance(self) -> None:
        if not self.focus:
            return
        while self.position < len(self.roots) and _subtree_satisfied(self.roots[self.position]):
            self.position += 1

    def _window(self) -> list[int]:
        if not self.focus:
            return list(range(len(self.roots)))
        return [p for p in (self.position, self.position + 1) if p < len(self.roots)]

    def _update(self, msg: Message) -> None:
        if self.focus and self.done:
            return
        if not self.focus and all(_subtree_satisfied(r) for r in self.roots):
            return
        window = self._window()
        updated = {p: self._update_root(_copy_tree(self.roots[p], {}), msg) for p in window}
        if not self.focus:
            for p in window:
                self.roots[p] = updated[p]
        else:
            cur = window[0]
            self.roots[cur] = updated[cur]
            if len(window) > 1 and _subtree_satisfied(updated[cur]):
                self.roots[window[1]] = updated[window[1]]
            self._advance()

    def _matches(self, node: IntentNode, msg: Message) -> bool:
        k = len(node.path)
        return any(node.dim in o and o[node.dim][:k] == node.path and len(o[node.dim]) >= k for o in msg.options)

    def _near_misses(self, node: IntentNode, msg: Message, intent_paths: set) -> set:
        k = len(node.path)
        if k == 0:
            return set()
        out = set()
        for o in msg.options:
            q = o.get(node.dim)
            if q is None or len(q) < k:
                continue
            q = q[:k]
            if q[:-1] == node.path[:-1] and q != node.path and (node.dim, q) not in intent_paths:
                out.add(q)
        return out

    def _update_root(self, root: IntentNode, msg: Message) -> IntentNode:
        nodes = _preorder(root)
        intent_paths = {(n.dim, n.path) for n in nodes}
        # Which nodes are evaluated: the pre-message state decides skipping (as in the authors' updater).
        skip = {id(n) for n in nodes if _is_skip(n)}

        def visit(node: IntentNode, parent_ok: bool) -> None:
            if id(node) in skip:
                for c in node.children:
                    visit(c, True)
                return
            if not parent_ok:
                node.satisfied = 0
                for c in node.children:
                    visit(c, False)
                return
            met = self._matches(node, msg)
            if met:
                node.thresholds = []
                if msg.kind == "question" and node.aware < 1:
                    node.aware = 1.0
                if msg.kind == "artifact" and node.satisfied == 0:
                    node.satisfied = 1
                    node.aware = 1.0
            else:
                if node.thresholds is None:
                    node.thresholds = [float(self._rng.random()), float(self._rng.random())]
                nm = self._near_misses(node, msg, intent_paths)
                if node.thresholds and nm:
                    q = self.update_prob * len(nm)
                    if q >= node.thresholds[0]:
                        node.aware = min(1.0, node.aware + 0.5)
                        node.thresholds.pop(0)
                    else:
                        node.thresholds[0] -= q
                if msg.kind == "artifact":
                    node.satisfied = 0
            for c in node.children:
                visit(c, met)

        visit(root, True)
        return root

    # ------------------------------------------------------------------ reply
    def _reply(self, initial: bool = False) -> UserReply:
        shown = range(len(self.roots)) if (not self.focus or self.done) else range(min(self.position + 1, len(self.roots)))
        discovered, emerging, satisfied = {}, {}, {}
        for p in shown:
            r = self.roots[p]
            nodes = _preorder(r)
            deepest = max((n.path for n in nodes if n.aware == 1), key=len, default=())
            discovered[r.dim] = deepest
            emerging[r.dim] = any(n.aware == 0.5 for n in nodes)
            satisfied[r.dim] = _subtree_satisfied(r)
        if initial:
            parts = ["I would like something about " + ", ".join(r.dim for r in self.roots) + "."]
        else:
            parts = []
            for d in discovered:
                if satisfied[d]:
                    parts.append(f"The {d} is exactly right ({path_label(d, discovered[d])}).")
                elif discovered[d]:
                    parts.append(f"For {d} I now know I want {path_label(d, discovered[d])}.")
                if emerging[d] and not satisfied[d]:
                    parts.append(f"Something about the {d} is close, but not quite.")
            if self.done:
                parts.append("This is what I wanted, thank you.")
            if not parts:
                parts.append("Hmm, I am not sure yet.")
        text = " ".join(parts)
        tokens = 10 + 8 * len(parts)
        return UserReply(discovered, emerging, satisfied, self.done, text, tokens)
