"""A symbolic assistant: turns a response type into a concrete message (the LLM's stand-in).

The paper's assistant is an 8B LLM that writes questions and artifacts. Here a small
rule-based writer fills in a chosen *response type* — an open question, a specific
question, or an artifact with :math:`k` options — from what the user has said so far:

* it tracks, per dimension, the deepest value the user has named, whether the user hinted
  at an emerging intent, whether the dimension is settled, and which values at the next
  level it has already shown without the user taking them up (ruled out);
* it works on the first unsettled dimension (the simulated user attends to one at a time);
* an open question names only that dimension (generic: it probes nothing new); a specific
  question names one untried value at the next level; an artifact shows :math:`k` full
  drafts whose values at the next level are :math:`k` distinct untried ones (contrastive
  options, *diverge*) — with :math:`k = 1` it is the single best guess (*converge*);
  deeper levels and other dimensions are filled from what is known plus random choices.

References
----------
Kim et al., "DiscoverLLM", ICML 2026, arXiv:2602.03429 (response strategies, Sec. 5).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._common import RandomState, check_int, check_random_state
from .simulator import Message, UserReply

__all__ = ["ACTIONS", "TokenCosts", "SymbolicAssistant"]

ACTIONS: tuple[str, ...] = ("open question", "specific question", "artifact k=1", "artifact k=2", "artifact k=3", "artifact k=4")
"""The response types a policy chooses from (index = action id)."""


@dataclass(frozen=True)
class TokenCosts:
    """Token lengths of the assistant's messages (a modelling choice, see the chapter).

    Parameters
    ----------
    open_question, specific_question : int
        Length of a question turn.
    artifact_base, per_option : int
        An artifact turn costs ``artifact_base + per_option * k``.
    """

    open_question: int = 20
    specific_question: int = 20
    artifact_base: int = 0
    per_option: int = 120

    def of(self, action: int) -> int:
        """Tokens of response type ``action`` (an index into :data:`ACTIONS`)."""
        if action == 0:
            return self.open_question
        if action == 1:
            return self.specific_question
        return self.artifact_base + self.per_option * (action - 1)


def _check_dims(dims: Any) -> list[str]:
    if isinstance(dims, (str, bytes)):
        raise TypeError(f"dims={dims!r} is a single string; give a sequence of dimension names, e.g. ({dims!r},)")
    try:
        out = list(dims)
    except TypeError:
        raise TypeError(f"dims must be a sequence of dimension names, got {type(dims).__name__}") from None
    if not out or not all(isinstance(d, str) and d for d in out):
        raise TypeError(f"dims must be a non-empty sequence of non-empty str, got {out!r}")
    return out


class SymbolicAssistant:
    """Writes the message for a chosen response type and learns from the user's replies.

    Parameters
    ----------
    dims : sequence of str
        The simulator's dimensions, in order.
    depth, branching : int
        The option tree's shape (known to the assistant, like a task's vocabulary).
    costs : TokenCosts, optional
        Message lengths.
    random_state : int, Generator or None
        Seeds the random completions.

    Raises
    ------
    TypeError
        For ``dims`` that is a single string (read letter by letter otherwise) or holds
        non-strings.
    ValueError
        For ``depth < 1`` or ``branching < 2``.
    """

    def __init__(
        self, dims: Sequence[str], depth: int, branching: int, costs: TokenCosts | None = None, random_state: RandomState = None
    ) -> None:
        self.dims = tuple(_check_dims(dims))
        self.depth = check_int(depth, "depth", low=1)
        self.branching = check_int(branching, "branching", low=2)
        self.costs = costs or TokenCosts()
        self._rng = check_random_state(random_state)
        self.reset()

    def reset(self, reply: UserReply | None = None) -> None:
        """Forget the conversation (optionally reading the initial request)."""
        self.known = {d: () for d in self.dims}
        self.emerging = dict.fromkeys(self.dims, False)
        self.settled = dict.fromkeys(self.dims, False)
        self.tried: dict[tuple[str, tuple[int, ...]], set[int]] = {}
        if reply is not None:
            self.observe(reply, None)

    @property
    def focus(self) -> str | None:
        """The first dimension not yet settled (``None`` when all are)."""
        return next((d for d in self.dims if not self.settled[d]), None)

    def untried(self, dim: str) -> list[int]:
        """Values at the next level of ``dim`` not yet ruled out."""
        k = self.known[dim]
        if len(k) >= self.depth:
            return []
        bad = self.tried.get((dim, k), set())
        return [v for v in range(self.branching) if v not in bad]

    def observe(self, reply: UserReply, message: Message | None) -> None:
        """Update the assistant's knowledge from the user's reply to ``message``."""
        f = self.focus
        before = self.known[f] if f is not None else None
        for d, p in reply.discovered.items():
            if len(p) > len(self.known[d]):
                self.known[d] = tuple(p)
        for d, e in reply.emerging.items():
            self.emerging[d] = bool(e)
        for d, s in reply.satisfied.items():
            self.settled[d] = bool(s)
        if message is None or f is None or self.known[f] != before:
            return
        # The focus dimension did not move: every value shown at its next level is ruled out.
        k = len(before)
        shown = {o[f][k] for o in message.options if f in o and len(o[f]) > k and o[f][:k] == before}
        if shown:
            self.tried.setdefault((f, before), set()).update(shown)

    def features(self, turn: int, horizon: int) -> np.ndarray:
        """State features for a response-type policy, shape ``(horizon + 6,)``.

        One-hot turn, then for the focus dimension: known depth / depth, emerging hint,
        untried fraction at the next level, "fully known"; then the settled fraction and a bias.
        """
        x = np.zeros(horizon + 6)
        x[min(turn, horizon - 1)] = 1.0
        f = self.focus
        if f is not None:
            x[horizon] = len(self.known[f]) / self.depth
            x[horizon + 1] = float(self.emerging[f])
            x[horizon + 2] = len(self.untried(f)) / self.branching
            x[horizon + 3] = float(len(self.known[f]) >= self.depth)
        x[horizon + 4] = float(np.mean([self.settled[d] for d in self.dims]))
        x[horizon + 5] = 1.0
        return x

    def _complete(self, prefix: tuple[int, ...]) -> tuple[int, ...]:
        rest = self._rng.integers(0, self.branching, size=self.depth - len(prefix))
        return prefix + tuple(int(v) for v in rest)

    def compose(self, action: int) -> Message:
        """The message for response type ``action`` (an index into :data:`ACTIONS`)."""
        action = check_int(action, "action", low=0)
        if action >= len(ACTIONS):
            raise ValueError(f"action={action!r} is not valid; use 0..{len(ACTIONS) - 1} ({', '.join(ACTIONS)})")
        tokens = self.costs.of(action)
        f = self.focus or self.dims[-1]
        known = self.known[f]
        cand = self.untried(f)
        order = [cand[i] for i in self._rng.permutation(len(cand))] if cand else []
        if action == 0:
            return Message("question", ({f: ()},), tokens)
        if action == 1:
            path = known + (order[0],) if order else known
            return Message("question", ({f: path},), tokens)
        k = action - 1
        options = []
        for i in range(k):
            opt = {}
            for d in self.dims:
                if d == f and order:
                    opt[d] = self._complete(known + (order[i % len(order)],))
                else:
                    opt[d] = self._complete(self.known[d])
            options.append(opt)
        return Message("artifact", tuple(options), tokens)
