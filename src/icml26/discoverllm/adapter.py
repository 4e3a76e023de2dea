"""Plugging in a real assistant: text in, text out, mapped onto the simulator's acts.

A reader's assistant is one function ``respond(history) -> message``: ``history`` is the
conversation so far as ``[{"role": "user" | "assistant", "content": str}, ...]`` (the
OpenAI / Hugging Face chat format, starting with the user's request) and the return value
is the assistant's next message as plain text. :func:`run_dialogue` plays it against an
:class:`~icml26.discoverllm.simulator.IntentSimulator`.

The adapter (:func:`parse_message`) maps free text onto the simulator's acts, the job the
paper gives an LLM judge. Its documented rules:

* **values** are written ``dim=x.y`` (dimension name, then one letter per level, e.g.
  ``tone=b.a``); a bare dimension name (``tone``) is a generic mention. Tell the LLM this
  vocabulary in its system prompt (:meth:`IntentSimulator.reset`'s request names the
  dimensions; the letters ``a..`` index the alternatives at each level);
* **artifact or dialog act**: a message with at least one line starting ``Option N:`` or
  ``Draft N:`` is an artifact (artifacts win over questions, as in the paper); each such
  line is one option and names its values. Anything else is a dialog act, and every value
  it names (or, failing that, every dimension it names) is one asked-about alternative;
* **tokens**: :func:`count_tokens`, words and punctuation marks (a stand-in for the Llama
  tokenizer the authors count with);
* a ``dim=`` mention of a dimension the simulator does not have raises ``ValueError``.

References
----------
Kim et al., "DiscoverLLM", ICML 2026, arXiv:2602.03429; authors' prompt
``core/prompts/evaluate_message.yaml`` (artifact vs dialog act; best-alternative rule).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from .._common import RandomState, check_int
from .assistant import ACTIONS, SymbolicAssistant, TokenCosts, _check_dims
from .simulator import IntentSimulator, Message, UserReply, path_label

__all__ = ["count_tokens", "render_message", "parse_message", "run_dialogue", "scripted_responder"]

_VALUE = re.compile(r"\b([A-Za-z_]\w*)=([a-z](?:\.[a-z])*)\b")
_OPTION = re.compile(r"^\s*(?:option|draft)\s*\d+\s*:", re.IGNORECASE | re.MULTILINE)
_TOKEN = re.compile(r"\w+|[^\w\s]")


def count_tokens(text: str) -> int:
    """Number of word and punctuation tokens in ``text`` (a tokenizer stand-in)."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    return len(_TOKEN.findall(text))


def _path(letters: str) -> tuple[int, ...]:
    return tuple(ord(c) - ord("a") for c in letters.split("."))


def _values(line: str, dims: Sequence[str]) -> dict[str, tuple[int, ...]]:
    out = {}
    for d, letters in _VALUE.findall(line):
        if d not in dims:
            raise ValueError(f"message names unknown dimension {d!r}; the simulator's dimensions are {list(dims)}")
        p = _path(letters)
        if len(p) > len(out.get(d, ())):
            out[d] = p
    return out


def render_message(message: Message, *, filler: int = 0) -> str:
    """Write a :class:`Message` as text that :func:`parse_message` reads back.

    Parameters
    ----------
    message : Message
    filler : int
        Words of padding per option/question (to make the text as long as a real one).

    Returns
    -------
    str
    """
    filler = check_int(filler, "filler", low=0)
    pad = (" " + " ".join(["lorem"] * filler)) if filler else ""
    if message.kind == "artifact":
        lines = ["Here is one draft:" if message.n_options == 1 else f"Here are {message.n_options} drafts:"]
        for i, o in enumerate(message.options, 1):
            lines.append(f"Option {i}: " + ", ".join(path_label(d, p) for d, p in o.items()) + "." + pad)
        lines.append("Which is closest to what you want?")
        return "\n".join(lines)
    asks = []
    for o in message.options:
        for d, p in o.items():
            asks.append(f"Would you like {path_label(d, p)}?" if p else f"What would you like for the {d}?")
    return " ".join(asks) + pad


def parse_message(text: str, dims: Sequence[str]) -> Message:
    """Map an assistant's free text onto a simulator :class:`Message` (rules in the module doc).

    Parameters
    ----------
    text : str
        The assistant's message.
    dims : sequence of str
        The simulator's dimensions.

    Returns
    -------
    Message

    Raises
    ------
    ValueError
        When the text names a ``dim=`` value of an unknown dimension.
    TypeError
        For a text that is not a str, or ``dims`` that is a single string (which would be
        read as one dimension per letter) or holds non-strings.
    """
    if not isinstance(text, str):
        raise TypeError(f"the assistant's message must be a str, got {type(text).__name__}")
    dims = _check_dims(dims)
    tokens = count_tokens(text)
    option_lines = [ln for ln in text.splitlines() if _OPTION.match(ln)]
    if option_lines:
        return Message("artifact", tuple(_values(ln, dims) for ln in option_lines), tokens)
    found = _values(text, dims)  # validates every dim= mention
    opts = [{d: p} for d, letters in _VALUE.findall(text) for p in [_path(letters)]]
    if not opts:
        opts = [{d: ()} for d in dims if re.search(rf"\b{re.escape(d)}\b", text)]
    del found
    return Message("question", tuple(opts), tokens)


def _reply_from_text(text: str, dims: Sequence[str]) -> UserReply:
    discovered = {d: p for d, p in _values(text, dims).items()}
    emerging = {d: True for d in re.findall(r"Something about the (\w+) is close", text) if d in dims}
    satisfied = {d: True for d in re.findall(r"The (\w+) is exactly right", text) if d in dims}
    return UserReply(discovered, emerging, satisfied, "thank you" in text, text, count_tokens(text))


def scripted_responder(
    dims: Sequence[str],
    depth: int,
    branching: int,
    schedule: Sequence[int],
    *,
    costs: TokenCosts | None = None,
    random_state: RandomState = None,
) -> Callable[[list[dict]], str]:
    """A ``respond(history) -> message`` function driven by a fixed schedule of response types.

    It reads only the text of the history (the user's replies), keeps a
    :class:`~icml26.discoverllm.assistant.SymbolicAssistant`'s knowledge from it, and writes
    its messages with :func:`render_message` — the test double for a real LLM.

    Parameters
    ----------
    dims, depth, branching : as in :class:`~icml26.discoverllm.simulator.IntentSimulator`
    schedule : sequence of int
        Response type per turn (indices into :data:`~icml26.discoverllm.assistant.ACTIONS`;
        the last one repeats).
    costs : TokenCosts, optional
    random_state : int, Generator or None
        Seeds the assistant's completions.

    Returns
    -------
    callable
    """
    schedule = [check_int(a, "schedule entry", low=0) for a in schedule]
    if not schedule or max(schedule) >= len(ACTIONS):
        raise ValueError(f"schedule={schedule!r} must be a non-empty list of response types in 0..{len(ACTIONS) - 1}")
    ast = SymbolicAssistant(dims, depth, branching, costs, random_state=random_state)
    state: dict = {"last": None}

    def respond(history: list[dict]) -> str:
        if not history or history[-1].get("role") != "user":
            raise ValueError("history must end with a user message")
        turn = sum(m.get("role") == "assistant" for m in history)
        reply = _reply_from_text(history[-1]["content"], ast.dims)
        if turn == 0:
            ast.reset(reply)
        else:
            ast.observe(reply, state["last"])
        msg = ast.compose(schedule[min(turn, len(schedule) - 1)])
        state["last"] = msg
        return render_message(msg)

    return respond


def run_dialogue(
    respond: Callable[[list[dict]], str], sim: IntentSimulator, *, turns: int = 6, random_state: RandomState = None
) -> dict:
    """Play ``respond`` against the simulated user for up to ``turns`` assistant turns.

    Parameters
    ----------
    respond : callable
        ``respond(history) -> str``, e.g. a wrapper around a chat LLM.
    sim : IntentSimulator
    turns : int
        Maximum number of assistant turns (fewer if the user is done).
    random_state : int, Generator or None
        Passed to ``sim.reset``.

    Returns
    -------
    dict
        ``history`` (chat format), ``rewards``, ``messages`` (parsed acts), ``discover``,
        ``satisfy`` (final levels), ``tokens`` (whole conversation) and ``done``.
    """
    turns = check_int(turns, "turns", low=1)
    if not callable(respond):
        raise TypeError(f"respond must be callable, got {type(respond).__name__}")
    first = sim.reset(random_state)
    history = [{"role": "user", "content": first.text}]
    rewards, messages, tokens, done = [], [], count_tokens(first.text), False
    levels = sim.levels()
    for _ in range(turns):
        text = respond([dict(m) for m in history])
        if not isinstance(text, str):
            raise TypeError(f"respond must return a str, got {type(text).__name__}")
        msg = parse_message(text, sim.dims)
        res = sim.step(msg)
        history += [{"role": "assistant", "content": text}, {"role": "user", "content": res.reply.text}]
        rewards.append(res.reward)
        messages.append(msg)
        tokens += msg.tokens + count_tokens(res.reply.text)
        levels = {"discover": res.info["discover"], "satisfy": res.info["satisfy"]}
        done = res.done
        if done:
            break
    return {"history": history, "rewards": rewards, "messages": messages, "tokens": tokens, "done": done, **levels}
