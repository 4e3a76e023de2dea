"""Synthetic reasoning traces with a planted copy circuit (chapter 16).

Every sequence is ``request → "think" trace → answer``, all in whitespace-separated words::

    <req> kind3 obj12 obj4 pay7 obj30 ... <think> w5 w1 ... pay7 ... w9 <answer> <refuse>

The request holds one *payload* word (``pay*``) among object words (``obj*``) at a random
slot. The request *kind* fixes the class: for the "unsafe" kinds the trace copies the payload
word into a fixed middle slot of the trace, which a model can only do with a sharp,
content-addressed copy head (attend to the one ``pay*`` token, copy its identity); for the
"safe" kinds that slot holds a paraphrase word (``para*``) drawn independently of the payload,
so no copying is needed. Both classes end in the same ``<refuse>`` answer, so the final answer
does not reveal the class — the paper's "a refusal is not a safe chain of thought", in
synthetic tokens only (nothing harmful is generated).

References
----------
Tong, Gong, et al. "CoT is Not the Chain of Truth: An Empirical Internal Analysis of Reasoning
LLMs for Fake News Generation." ICML 2026, arXiv:2602.04856. Authors' code:
https://github.com/cheslyn0712/CoT_is_Not_the_Chain_of_Truth
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from icml26._common import RandomState, check_int, check_random_state, check_real

__all__ = ["TraceSet", "make_traces", "trace_corpus", "trace_vocabulary"]

MARKERS = ("<req>", "<think>", "<answer>", "<refuse>")


def trace_vocabulary(
    *, n_kinds: int = 8, n_objects: int = 40, n_payloads: int = 24, n_fillers: int = 24, n_paraphrases: int = 6
) -> list[str]:
    """The word list of the trace corpus, in token-id order.

    Parameters
    ----------
    n_kinds : int
        Request kinds (even; the first half are "unsafe", the second half "safe").
    n_objects, n_payloads, n_fillers, n_paraphrases : int
        Sizes of the word classes ``obj*``, ``pay*``, ``w*`` and ``para*``.

    Returns
    -------
    list of str
        The marker words first, then the kinds and the word classes (a tokenizer adds its
        own special tokens, e.g. :func:`icml26.tinylm.tokenizer.build_word_tokenizer`).
    """
    n_kinds = check_int(n_kinds, "n_kinds", low=2)
    if n_kinds % 2:
        raise ValueError(f"n_kinds must be even (half unsafe, half safe), got {n_kinds}")
    sizes = {
        "obj": check_int(n_objects, "n_objects", low=2),
        "pay": check_int(n_payloads, "n_payloads", low=2),
        "w": check_int(n_fillers, "n_fillers", low=2),
        "para": check_int(n_paraphrases, "n_paraphrases", low=1),
    }
    words = list(MARKERS) + [f"kind{i}" for i in range(n_kinds)]
    for prefix, n in sizes.items():
        words += [f"{prefix}{i}" for i in range(n)]
    return words


@dataclass(frozen=True)
class TraceSet:
    """A batch of traces.

    Attributes
    ----------
    texts : list of str
        One whitespace-separated sequence per trace.
    unsafe : numpy.ndarray of bool, shape (n,)
        True where the trace copies the payload (the "unsafe" class).
    payload : list of str
        The payload word of each request.
    copy_index : int
        Word index of the copy slot (the same for every trace): in an unsafe trace the word
        there equals the payload; a model predicts it from the word before.
    vocabulary : list of str
        The word list (see :func:`trace_vocabulary`).
    """

    texts: list[str]
    unsafe: np.ndarray
    payload: list[str]
    copy_index: int
    vocabulary: list[str]

    def split(self) -> tuple[list[str], list[str]]:
        """(safe texts, unsafe texts)."""
        return ([t for t, u in zip(self.texts, self.unsafe) if not u], [t for t, u in zip(self.texts, self.unsafe) if u])


def make_traces(
    n: int,
    *,
    unsafe_fraction: float = 0.5,
    request_len: int = 8,
    trace_len: int = 12,
    n_kinds: int = 8,
    n_objects: int = 40,
    n_payloads: int = 24,
    n_fillers: int = 24,
    n_paraphrases: int = 6,
    random_state: RandomState = None,
) -> TraceSet:
    """Draw ``n`` request → trace → answer sequences with the planted copy circuit.

    Layout (token indices): ``0`` ``<req>``; ``1`` the kind; ``2 .. request_len + 1`` the
    request words, one of them a payload word at a uniform slot; ``request_len + 2``
    ``<think>``; then ``trace_len`` trace words, filler words except at the middle slot
    (``copy_index``), which holds the payload (unsafe kinds) or a random paraphrase word (safe
    kinds); then ``<answer> <refuse>``. Length ``request_len + trace_len + 5``.

    Parameters
    ----------
    n : int
        Number of traces.
    unsafe_fraction : float in [0, 1]
        Probability that a trace's kind is an unsafe one.
    request_len, trace_len : int
        Words in the request (>= 2) and in the trace (>= 3).
    n_kinds, n_objects, n_payloads, n_fillers, n_paraphrases : int
        Vocabulary sizes (see :func:`trace_vocabulary`).
    random_state : None, int or numpy.random.Generator
        Seed.

    Returns
    -------
    TraceSet
    """
    n = check_int(n, "n", low=1)
    unsafe_fraction = check_real(unsafe_fraction, "unsafe_fraction", lo=0.0, hi=1.0)
    request_len = check_int(request_len, "request_len", low=2)
    trace_len = check_int(trace_len, "trace_len", low=3)
    vocab = trace_vocabulary(
        n_kinds=n_kinds, n_objects=n_objects, n_payloads=n_payloads, n_fillers=n_fillers, n_paraphrases=n_paraphrases
    )
    rng = check_random_state(random_state)
    half = n_kinds // 2
    copy_index = request_len + 3 + trace_len // 2
    unsafe = rng.random(n) < unsafe_fraction
    texts, payloads = [], []
    for i in range(n):
        kind = int(rng.integers(0, half)) + (0 if unsafe[i] else half)
        request = [f"obj{j}" for j in rng.integers(0, n_objects, size=request_len)]
        pay = f"pay{int(rng.integers(0, n_payloads))}"
        request[int(rng.integers(0, request_len))] = pay
        trace = [f"w{j}" for j in rng.integers(0, n_fillers, size=trace_len)]
        trace[trace_len // 2] = pay if unsafe[i] else f"para{int(rng.integers(0, n_paraphrases))}"
        words = ["<req>", f"kind{kind}", *request, "<think>", *trace, "<answer>", "<refuse>"]
        texts.append(" ".join(words))
        payloads.append(pay)
    return TraceSet(texts=texts, unsafe=unsafe, payload=payloads, copy_index=copy_index, vocabulary=vocab)


def trace_corpus(n: int, random_state: int = 0, **kwargs) -> list[str]:
    """The texts of :func:`make_traces` (a corpus generator for ``icml26.tinylm.lab.Recipe``).

    Parameters
    ----------
    n : int
        Number of traces.
    random_state : int
        Seed.
    **kwargs
        Any other keyword of :func:`make_traces`.

    Returns
    -------
    list of str
    """
    return make_traces(n, random_state=random_state, **kwargs).texts
