"""Where a model stores a fact: ROME's causal tracing, and the edited layers it points to.

Causal tracing (Meng et al. 2022, Sec. 2.1) runs a prompt three ways: clean; with the
subject's token embeddings corrupted by Gaussian noise, so that the model can no longer
recall the fact; and corrupted but with one internal state restored to its clean value.
The *indirect effect* of a state is how much of the true object's probability its
restoration brings back, ``IE = P_restored(o) − P_corrupted(o)``. MEMIT edits "the
critical MLP layers" found this way: the layers whose MLP output at the last subject token
carries the largest indirect effect (GPT-J: layers 3–8, GPT-2 XL: 13–17; MEMIT's
``hparams/MEMIT/*.json`` and its Sec. 4). :func:`critical_layers` turns a trace into that
window.

References
----------
Meng, Bau, Andonian and Belinkov, "Locating and Editing Factual Associations in GPT"
(ROME), NeurIPS 2022, Sec. 2.1 and ``rome/experiments/causal_trace.py`` (noise 3σ of the
subject embeddings, window of restored layers); Meng et al., "Mass-Editing Memory in a
Transformer" (MEMIT), ICLR 2023, Sec. 4 (the critical MLP layers).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import torch

from icml26._common import RandomState, check_int, check_real, torch_generator

from .editing import _blocks, _prompt_ids, _requests, _target_id

TRACE_KINDS: tuple[str, ...] = ("hidden", "mlp", "attn")
__all__ = ["TRACE_KINDS", "causal_trace", "critical_layers", "edit_window"]


def _module(block, kind: str):
    if kind == "hidden":
        return block
    names = ("mlp",) if kind == "mlp" else ("attn", "self_attn", "attention")
    for n in names:
        m = getattr(block, n, None)
        if m is not None:
            return m
    raise ValueError(f"block {type(block).__name__} has no {kind} sub-module ({', '.join(names)})")


class _Restore:
    """Forward hook that writes clean values into a module's output at one position, every row."""

    def __init__(self, module, pos: int, value: torch.Tensor | None):
        self.pos, self.value, self.seen = pos, value, None
        self.h = module.register_forward_hook(self._post)

    def _post(self, mod, args, out):
        hs = out[0] if isinstance(out, tuple) else out  # (B, L, d)
        self.seen = hs[0, self.pos].detach().clone()
        if self.value is None:
            return None
        hs = hs.clone()
        hs[:, self.pos] = self.value
        return (hs,) + tuple(out[1:]) if isinstance(out, tuple) else hs

    def remove(self):
        self.h.remove()


class _Noise:
    """Forward hook on the token embedding that adds fixed noise at the subject's positions."""

    def __init__(self, module, cols: list[int], noise: torch.Tensor):
        self.cols, self.noise = cols, noise  # noise: (B, len(cols), d)
        self.h = module.register_forward_hook(self._post)

    def _post(self, mod, args, out):
        out = out.clone()
        out[:, self.cols] = out[:, self.cols] + self.noise.to(out.dtype)
        return out

    def remove(self):
        self.h.remove()


def _subject_span(tok, text: str, subject: str) -> list[int]:
    ids, last = _prompt_ids(tok, text, subject)
    k = text.find(subject)
    first = len(tok(text[:k].rstrip())["input_ids"]) if k > 0 else len(tok("")["input_ids"])
    return list(range(first, last + 1))


def _subject_std(model, tok, reqs) -> float:
    emb = model.get_input_embeddings().weight.detach()
    ids = sorted({i for r in reqs for i in tok.encode(r["subject"], add_special_tokens=False)})
    return float(emb[ids].std())


def _prob(model, emb, xs, span, eps, mods, pos, clean, tgt, restore: list[int]) -> float:
    """Mean P(tgt) at the last token over the corrupted runs, with layers ``restore`` restored."""
    hs = [_Noise(emb, span, eps)] + [_Restore(mods[l], pos, clean[l]) for l in restore]
    try:
        logits = model(input_ids=xs, use_cache=False).logits  # (n_noise, L, V)
    finally:
        for h in hs:
            h.remove()
    return float(torch.softmax(logits[:, -1].double(), -1)[:, tgt].mean())


@torch.no_grad()
def causal_trace(
    model, tok, requests, kind: str = "mlp", window: int = 1, n_noise: int = 10, noise: float = 3.0, random_state: RandomState = 0
) -> np.ndarray:
    """Indirect effect of each layer's state at the last subject token on recalling the true object.

    For every request (its ``prompt`` with the ``subject``, and ``target_true``) the token
    embeddings of the subject are corrupted, in each of ``n_noise`` runs, by fixed Gaussian
    noise of standard deviation ``noise · σ`` (σ: the standard deviation of the embeddings
    of every subject token of ``requests``). For each layer ``l`` the clean output of
    ``kind`` at the last subject token is restored in the layers
    ``max(0, l − window//2) … min(n_layers, l − (−window//2)) − 1`` (ROME's window), and
    ``IE_l = mean_runs P_restored(o_true) − mean_runs P_corrupted(o_true)`` at the
    prompt's last token.

    Parameters
    ----------
    model, tok : causal LM and its tokenizer
    requests : list of dict (or objects with a ``request`` dict)
        ``prompt`` (with ``"{}"``), ``subject`` and ``target_true``.
    kind : {"hidden", "mlp", "attn"}
        Which output is restored: the block's (the residual stream), its MLP's or its
        attention's.
    window : int
        Consecutive layers restored together (ROME: 10 for MLP and attention in 48-layer
        GPT-2 XL); 1 restores the layer alone.
    n_noise : int
        Corrupted runs per request.
    noise : float
        Noise scale in units of σ (ROME: 3).
    random_state : int, numpy.random.Generator or None
        Seed of the noise.

    Returns
    -------
    numpy.ndarray, shape (n_requests, n_layers)
        ``IE`` per request and layer.

    Raises
    ------
    ValueError
        For an unknown ``kind``, a request without ``target_true``, a non-positive
        ``window``, ``n_noise`` or ``noise``.

    References
    ----------
    Meng et al. (2022), ROME, Sec. 2.1 and Fig. 1; ``rome/experiments/causal_trace.py``
    (``trace_with_patch``, ``calculate_hidden_flow``).
    """
    if kind not in TRACE_KINDS:
        raise ValueError(f"kind={kind!r} must be one of {', '.join(TRACE_KINDS)}")
    window = check_int(window, "window", low=1)
    n_noise = check_int(n_noise, "n_noise", low=1)
    noise = check_real(noise, "noise", lo=0.0, lo_open=True)
    if isinstance(requests, Mapping):
        requests = [requests]
    reqs = []
    for i, r in enumerate(requests):
        r = dict(r) if isinstance(r, Mapping) else dict(getattr(r, "request", None) or {})
        if "target_true" not in r:
            raise ValueError(f"request {i} lacks 'target_true' (causal tracing follows the true object)")
        reqs.append(_requests([dict(r, target_new=r["target_true"])])[0])
    g = torch_generator(random_state)
    blocks = _blocks(model)
    n_layers = len(blocks)
    mods = [_module(b, kind) for b in blocks]
    emb = model.get_input_embeddings()
    sigma = noise * _subject_std(model, tok, reqs)
    out = np.zeros((len(reqs), n_layers))
    for j, r in enumerate(reqs):
        text = r["prompt"].format(r["subject"])
        ids, pos = _prompt_ids(tok, text, r["subject"])
        span = _subject_span(tok, text, r["subject"])
        tgt = _target_id(tok, r["target_true"])
        x = torch.tensor([ids])  # (1, L)
        hooks = [_Restore(m, pos, None) for m in mods]
        try:
            model(input_ids=x, use_cache=False)
        finally:
            for h in hooks:
                h.remove()
        clean = [h.seen for h in hooks]  # each (d,)
        d = emb.weight.shape[1]
        eps = torch.randn(n_noise, len(span), d, generator=g, dtype=emb.weight.dtype) * sigma
        xs = x.expand(n_noise, -1)

        args = (model, emb, xs, span, eps, mods, pos, clean, tgt)
        base = _prob(*args, [])
        for l in range(n_layers):
            lo, hi = max(0, l - window // 2), min(n_layers, l - (-window // 2))
            out[j, l] = _prob(*args, list(range(lo, hi))) - base
    return out


def critical_layers(effect, n_edit: int) -> list[int]:
    """The ``n_edit`` consecutive layers with the largest mean indirect effect (MEMIT's window).

    Parameters
    ----------
    effect : array-like, shape (n_layers,) or (n_requests, n_layers)
        Indirect effects (:func:`causal_trace` with ``kind="mlp"``); rows are averaged.
    n_edit : int
        Window length, ``1 <= n_edit <= n_layers``.

    Returns
    -------
    list of int
        ``[s, s + 1, …, s + n_edit − 1]`` maximising ``Σ_l mean IE_l`` (ties: the earliest).

    Raises
    ------
    ValueError
        For an empty or non-finite ``effect`` or ``n_edit`` outside ``1 … n_layers``.

    References
    ----------
    Meng et al. (2023), MEMIT, Sec. 4: the edited layers are the critical MLP layers of
    causal tracing (GPT-J 3–8, GPT-2 XL 13–17).
    """
    e = np.asarray(effect, dtype=float)
    if e.ndim == 2:
        e = e.mean(0)
    if e.ndim != 1 or e.size == 0 or not np.all(np.isfinite(e)):
        raise ValueError(f"effect must be a finite (n_layers,) or (n_requests, n_layers) array, got shape {e.shape}")
    n_edit = check_int(n_edit, "n_edit", low=1)
    if n_edit > e.size:
        raise ValueError(f"n_edit={n_edit} must be at most the {e.size} layers of the trace")
    sums = np.convolve(e, np.ones(n_edit), mode="valid")
    s = int(np.argmax(sums))
    return list(range(s, s + n_edit))


def edit_window(mlp_effect, hidden_effect, frac: float = 0.5, min_layers: int = 1) -> list[int]:
    """Edited layers from a causal trace: from the critical MLP to the last layer that still holds the fact.

    The window starts at the layer whose MLP output at the last subject token has the
    largest mean indirect effect (the MLP that writes the fact, ROME's edited layer) and
    ends at the last layer ``l`` at or after it whose *hidden state* there still has an
    indirect effect of at least ``frac`` times the largest one: after that layer the
    prompt's last token has read the subject, restoring the subject's state no longer
    restores the fact, and an anchor written there cannot reach the answer.

    Parameters
    ----------
    mlp_effect, hidden_effect : array-like, shape (n_layers,) or (n_requests, n_layers)
        :func:`causal_trace` with ``kind="mlp"`` and ``kind="hidden"``; rows are averaged.
    frac : float
        Share of the largest hidden-state effect a layer must keep, ``0 < frac <= 1``.
    min_layers : int
        The fewest layers to edit (a comparison of multi-layer editors needs two): a
        shorter window is extended by the next layers (by the previous ones at the end of
        the model).

    Returns
    -------
    list of int
        ``[start, …, end]``, consecutive.

    Raises
    ------
    ValueError
        For traces of different lengths, empty or non-finite ones, a hidden-state trace
        whose largest effect is not positive, ``frac`` outside ``(0, 1]`` or ``min_layers``
        outside ``1 … n_layers``.

    References
    ----------
    Meng et al. (2022), ROME, Sec. 2 (decisive MLP states at the last subject token,
    attention moves them to the last token at later layers); Meng et al. (2023), MEMIT,
    Sec. 4 (edit the window of critical MLP layers).
    """
    m, h = (np.asarray(x, dtype=float) for x in (mlp_effect, hidden_effect))
    m = m.mean(0) if m.ndim == 2 else m
    h = h.mean(0) if h.ndim == 2 else h
    for name, e in (("mlp_effect", m), ("hidden_effect", h)):
        if e.ndim != 1 or e.size == 0 or not np.all(np.isfinite(e)):
            raise ValueError(f"{name} must be a finite (n_layers,) or (n_requests, n_layers) array, got shape {e.shape}")
    if m.size != h.size:
        raise ValueError(f"mlp_effect has {m.size} layers but hidden_effect has {h.size} layers")
    frac = check_real(frac, "frac", lo=0.0, hi=1.0, lo_open=True)
    if h.max() <= 0:
        raise ValueError(f"hidden_effect peaks at {h.max():.3g} <= 0: the corruption did not remove the fact, no layer holds it")
    start = int(np.argmax(m))
    keep = [l for l in range(start, h.size) if h[l] >= frac * h.max()]
    end = max(keep) if keep else start
    min_layers = check_int(min_layers, "min_layers", low=1)
    if min_layers > h.size:
        raise ValueError(f"min_layers={min_layers} must be at most the {h.size} layers of the trace")
    end = max(end, min(h.size - 1, start + min_layers - 1))
    start = min(start, end - min_layers + 1)
    return list(range(start, end + 1))
