"""Reasoning-trace safety heads: the layer window, softmax-Jacobian head metrics, key heads,
head ablation and attention-temperature perturbation (chapter 16).

Every analysis takes a Hugging Face causal language model and its tokenizer (any
``AutoModelForCausalLM`` with a GPT-2, Llama/Qwen/Mistral, GPT-NeoX or OPT layout) and plain
texts, so it runs on the book's tiny GPT-2 models and on a reader's own checkpoint alike.
Texts in one call are encoded without padding; texts of different lengths are run one
length-group at a time.

The pipeline follows the authors' ``CoT_Analysis/Layer.py`` and ``Head.py``:

* **Layer window.** Last-token hidden states :math:`h_l`; angle
  :math:`\\theta_l = \\arccos\\cos(h_l(a), h_l(b))` over random safe–safe (NN) and
  safe–unsafe (NM) pairs; gap :math:`\\Delta\\theta_l = \\overline{\\theta^{NM}_l} -
  \\overline{\\theta^{NN}_l}`; the window is the ``w`` consecutive layers with the largest
  mean gap.
* **Head metrics.** A head's attention matrix, bilinearly resized to ``size × size``, clipped
  at 0 and row-renormalised; for ``n_rows`` evenly spaced rows :math:`p`, the softmax Jacobian
  :math:`J(p) = \\operatorname{diag}(p) - p p^\\top` and its top eigenvalue by power iteration;
  at the row :math:`t^*` with the largest :math:`\\lambda_{\\max}`: **B1** :math:`=
  \\lambda_{\\max}`, **B2** the unit top eigenvector (scalarised as its centroid
  :math:`\\sum_k k|v_k| / \\sum_k |v_k|`), **B3** the effective rank
  :math:`\\exp(-\\sum_i w_i \\log w_i)`, :math:`w_i = e_i^2/\\sum_j e_j^2`, of the spectrum.
* **Key heads.** Per layer and metric, the gap :math:`g_h = \\text{mean}_{\\text{safe}} -
  \\text{mean}_{\\text{unsafe}}` over heads, power-scaled with
  :math:`\\gamma = \\max(1, \\log 0.5 / \\log(q_{0.9}(|g|)/\\max|g|))`; heads with
  :math:`|g'_h| \\ge 0.7 \\max|g'|`; union over B1, B2, B3.

The package: this module holds the model-level analyses; :mod:`~icml26.cotsafety.heads`
holds the :class:`HeadMetrics` record and the readings of the key heads that need no model
(class means, safe/unsafe log ratios, the trace-noise share). Everything public is
importable from ``icml26.cotsafety``.

References
----------
Tong, Gong, et al. "CoT is Not the Chain of Truth: An Empirical Internal Analysis of Reasoning
LLMs for Fake News Generation." ICML 2026, arXiv:2602.04856. Authors' code:
https://github.com/cheslyn0712/CoT_is_Not_the_Chain_of_Truth (``CoT_Analysis/Layer.py``,
``CoT_Analysis/Head.py``).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from icml26._common import RandomState, check_int, check_random_state, check_real

from .heads import HeadMetrics, key_head_log_ratios, key_head_summary, trace_noise_share

__all__ = [
    "HeadMetrics",
    "LayerGap",
    "analyse_model",
    "attention_head_metrics",
    "copy_rate",
    "cosine_window",
    "head_ablation",
    "head_jacobian_metrics",
    "head_temperature",
    "jacobian_lambda_max",
    "key_head_log_ratios",
    "key_head_summary",
    "key_heads",
    "layer_angle_gap",
    "power_scale",
    "softmax_jacobian",
    "trace_noise_share",
]

_LAYER_PATHS = ("transformer.h", "model.layers", "gpt_neox.layers", "model.decoder.layers", "model.language_model.layers")
_ATTN_NAMES = ("attn", "self_attn", "attention")
_OUT_NAMES = ("c_proj", "o_proj", "dense", "out_proj")
_TEMP_IMPL = "icml26_head_temperature"


# --------------------------------------------------------------------------------------------
# Softmax Jacobian: closed form and power iteration
# --------------------------------------------------------------------------------------------
def _check_prob(p: torch.Tensor | np.ndarray, name: str = "p") -> torch.Tensor:
    if not isinstance(p, (torch.Tensor, np.ndarray)):
        raise TypeError(f"{name} must be a torch tensor or numpy array, got {type(p).__name__}")
    t = torch.as_tensor(p, dtype=torch.float64)
    if t.ndim < 1 or t.shape[-1] < 1:
        raise ValueError(f"{name} must have a last axis of length >= 1, got shape {tuple(t.shape)}")
    if not torch.isfinite(t).all() or (t < 0).any():
        raise ValueError(f"{name} must be finite and non-negative")
    if not torch.allclose(t.sum(-1), torch.ones((), dtype=torch.float64), atol=1e-6):
        raise ValueError(f"{name} rows must sum to 1 (got sums up to {float((t.sum(-1) - 1).abs().max()):.3g} away)")
    return t


def softmax_jacobian(p: torch.Tensor | np.ndarray) -> torch.Tensor:
    """The Jacobian of softmax at output ``p``: :math:`J(p) = \\operatorname{diag}(p) - p p^\\top`.

    Parameters
    ----------
    p : tensor or array, shape (..., n)
        Probability vectors (non-negative, rows summing to one).

    Returns
    -------
    torch.Tensor, float64, shape (..., n, n)
        Symmetric positive semi-definite, with :math:`J \\mathbf 1 = 0`.

    References
    ----------
    Tong et al., ICML 2026 (arXiv:2602.04856), ``Head.py`` (``j_matvec``).
    """
    t = _check_prob(p)
    return torch.diag_embed(t) - t.unsqueeze(-1) * t.unsqueeze(-2)  # (..., n, n)


def jacobian_lambda_max(
    p: torch.Tensor | np.ndarray, *, n_iter: int = 20, random_state: RandomState = None
) -> tuple[float, np.ndarray]:
    """Top eigenvalue and eigenvector of :math:`J(p)` by power iteration, as the authors' code.

    Starts from a mean-centred Gaussian vector and iterates :math:`v \\leftarrow Jv/\\|Jv\\|`
    with the matrix-free product :math:`Jv = p \\odot v - p\\,(p^\\top v)`; returns the Rayleigh
    quotient :math:`v^\\top J v`. Stops early when :math:`\\|Jv\\|` vanishes (one-hot ``p``).

    Parameters
    ----------
    p : tensor or array, shape (n,)
        One probability vector.
    n_iter : int
        Power iterations (the paper's code: 20).
    random_state : None, int or numpy.random.Generator
        Seed of the start vector.

    Returns
    -------
    (float, numpy.ndarray of shape (n,))
        :math:`\\lambda_{\\max}` and the unit eigenvector estimate.

    References
    ----------
    Tong et al., ICML 2026, ``Head.py`` (``power_iteration_j``).
    """
    t = _check_prob(p)
    if t.ndim != 1:
        raise ValueError(f"p must be one vector (1-d), got shape {tuple(t.shape)}")
    n_iter = check_int(n_iter, "n_iter", low=1)
    q = t.numpy()
    rng = check_random_state(random_state)
    v = rng.normal(size=q.size)
    v -= v.mean()
    v /= np.linalg.norm(v) + 1e-12
    for _ in range(n_iter):
        w = q * v - q * float(q @ v)
        nw = float(np.linalg.norm(w))
        if nw < 1e-14:
            break
        v = w / (nw + 1e-12)
    lam = float(v @ (q * v - q * float(q @ v)))
    return lam, v / (np.linalg.norm(v) + 1e-12)


def _effective_rank(eigs: np.ndarray) -> float:
    e = np.clip(np.asarray(eigs, dtype=np.float64), 0.0, None)
    w = e * e
    s = float(w.sum())
    if s <= 1e-12:
        return 0.0
    w = np.clip(w / s, 1e-12, 1.0)
    return float(np.exp(-np.sum(w * np.log(w))))


def _resize_attention(a: torch.Tensor, size: int) -> torch.Tensor:
    y = F.interpolate(a.double()[None, None], size=(size, size), mode="bilinear", align_corners=False)[0, 0]
    y = y.clamp(min=0.0)
    return y / (y.sum(-1, keepdim=True) + 1e-12)  # (size, size)


def head_jacobian_metrics(
    attention: torch.Tensor | np.ndarray,
    *,
    size: int = 32,
    n_rows: int = 24,
    n_iter: int = 20,
    random_state: RandomState = None,
) -> tuple[float, np.ndarray, float]:
    """B1 (stability), B2 (geometry) and B3 (energy) of one head's attention matrix.

    Parameters
    ----------
    attention : tensor or array, shape (T_q, T_k)
        Row-stochastic attention weights of one head on one text (square in the paper;
        fewer query rows when only part of the text is read, see :func:`attention_head_metrics`).
    size : int
        Side of the bilinear resize (the paper's code: 96; 32 for our short traces).
    n_rows : int
        Evenly spaced rows examined (24).
    n_iter : int
        Power iterations (20).
    random_state : None, int or numpy.random.Generator
        Seeds of the power-iteration start vectors.

    Returns
    -------
    (float, numpy.ndarray of shape (size,), float)
        B1 = the largest :math:`\\lambda_{\\max}` over the rows, B2 = its unit eigenvector,
        B3 = the effective rank of that row's spectrum (eigenvalues by ``eigvalsh``).

    Raises
    ------
    TypeError
        For an ``attention`` that is neither a tensor nor an array, or settings that are not integers.
    ValueError
        For an attention matrix that is not 2-D, not finite, negative, or whose rows do
        not sum to 1 (within ``1e-2``, room for half-precision softmax): rows that are not
        probability distributions would be renormalised silently after the resize.

    References
    ----------
    Tong et al., ICML 2026, ``Head.py`` (``downsample_attn``, ``operator_features_from_attn``).
    """
    if not isinstance(attention, (torch.Tensor, np.ndarray)):
        raise TypeError(f"attention must be a torch tensor or numpy array, got {type(attention).__name__}")
    a = torch.as_tensor(attention, dtype=torch.float64)
    if a.ndim != 2 or a.shape[0] < 1 or a.shape[1] < 1:
        raise ValueError(f"attention must be a (T_q, T_k) matrix, got shape {tuple(a.shape)}")
    if not torch.isfinite(a).all() or (a < 0).any():
        raise ValueError("attention must be finite and non-negative")
    off = (a.sum(1) - 1.0).abs()
    if bool((off > 1e-2).any()):
        row = int(off.argmax())
        raise ValueError(
            f"attention must be row-stochastic (each row a softmax over keys, summing to 1); row {row} "
            f"sums to {float(a[row].sum()):.4g}. Normalise the rows first if that is what you mean"
        )
    size = check_int(size, "size", low=2)
    n_rows = check_int(n_rows, "n_rows", low=1)
    n_iter = check_int(n_iter, "n_iter", low=1)
    rng = check_random_state(random_state)
    seeds = rng.integers(0, 2**31, size=size)
    r = _resize_attention(a, size).numpy()  # (size, size)
    best = (-np.inf, np.zeros(size), 0.0)
    for t in np.linspace(0, size - 1, num=min(n_rows, size), dtype=int):
        p = np.clip(r[t], 0.0, None)
        p = p / (p.sum() + 1e-12)
        lam, v = jacobian_lambda_max(p / p.sum(), n_iter=n_iter, random_state=int(seeds[t]))
        if lam > best[0]:
            eigs = np.linalg.eigvalsh(np.diag(p) - np.outer(p, p))
            best = (lam, v, _effective_rank(eigs))
    return float(best[0]), best[1], float(best[2])


# --------------------------------------------------------------------------------------------
# Model plumbing
# --------------------------------------------------------------------------------------------
def _get_path(obj, path: str):
    for part in path.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _attention_blocks(model) -> list[tuple[torch.nn.Module, torch.nn.Module]]:
    """(attention module, output projection) per layer; a clear error for other layouts."""
    if not isinstance(model, torch.nn.Module) or not hasattr(model, "config"):
        raise TypeError(f"model must be a Hugging Face causal LM (torch module with .config), got {type(model).__name__}")
    for path in _LAYER_PATHS:
        layers = _get_path(model, path)
        if isinstance(layers, torch.nn.ModuleList) and len(layers):
            out = []
            for layer in layers:
                attn = next(
                    (getattr(layer, n) for n in _ATTN_NAMES if isinstance(getattr(layer, n, None), torch.nn.Module)), None
                )
                proj = (
                    None
                    if attn is None
                    else next((getattr(attn, n) for n in _OUT_NAMES if isinstance(getattr(attn, n, None), torch.nn.Module)), None)
                )
                if proj is None:
                    break
                out.append((attn, proj))
            if len(out) == len(layers):
                return out
    raise ValueError(
        f"model of type {type(model).__name__} has none of the expected decoder layouts "
        f"(layers at one of {_LAYER_PATHS}, attention at one of {_ATTN_NAMES}, output projection one of {_OUT_NAMES})"
    )


def _n_heads(model) -> int:
    h = getattr(model.config, "num_attention_heads", None)
    if not isinstance(h, int) or h < 1:
        raise ValueError(f"model.config has no valid num_attention_heads (got {h!r})")
    return h


def _encode(tokenizer, texts: Sequence[str], name: str = "texts") -> tuple[list[torch.Tensor], list[int]]:
    """Token ids of each text as the tokenizer encodes it by default (its special tokens
    included, e.g. a prepended ``<bos>``), and how many tokens it adds before the text's own."""
    if isinstance(texts, str) or not isinstance(texts, Sequence) or not all(isinstance(t, str) for t in texts):
        raise TypeError(f"{name} must be a list of strings")
    if len(texts) == 0:
        raise ValueError(f"{name} is empty")
    if not callable(tokenizer):
        raise TypeError(f"tokenizer must be a Hugging Face tokenizer, got {type(tokenizer).__name__}")
    ids, offsets = [], []
    unk = getattr(tokenizer, "unk_token_id", None)
    for t in texts:
        try:
            enc = list(tokenizer(t)["input_ids"])
            bare = list(tokenizer(t, add_special_tokens=False)["input_ids"])
        except Exception as exc:  # the tokenizer's own error (e.g. an unknown word)
            raise ValueError(f"the tokenizer could not encode {t[:60]!r}: {exc}") from None
        if unk is not None and unk in bare:
            raise ValueError(f"text {t[:60]!r} has words outside the tokenizer's vocabulary (mapped to its unknown token)")
        if len(enc) < 2:
            raise ValueError(f"each text needs at least 2 tokens, got {len(enc)} for {t[:60]!r}")
        off = next((k for k in range(len(enc) - len(bare) + 1) if enc[k : k + len(bare)] == bare), 0)
        ids.append(torch.tensor(enc, dtype=torch.long))
        offsets.append(off)
    return ids, offsets


def _groups(ids: list[torch.Tensor], batch_size: int) -> Iterator[tuple[list[int], torch.Tensor]]:
    by_len: dict[int, list[int]] = {}
    for i, x in enumerate(ids):
        by_len.setdefault(len(x), []).append(i)
    for idx in by_len.values():
        for s in range(0, len(idx), batch_size):
            chunk = idx[s : s + batch_size]
            yield chunk, torch.stack([ids[i] for i in chunk])  # (b, T)


@contextlib.contextmanager
def _attn_impl(model, name: str):
    old = model.config._attn_implementation
    if old != name:
        model.set_attn_implementation(name)
    try:
        yield
    finally:
        if model.config._attn_implementation != old:
            model.set_attn_implementation(old)


def _device(model) -> torch.device:
    return next(model.parameters()).device


# --------------------------------------------------------------------------------------------
# Layer localisation (Layer.py)
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LayerGap:
    """Result of :func:`layer_angle_gap`.

    Attributes
    ----------
    theta_nn, theta_nm : numpy.ndarray, shape (L,)
        Mean angle (radians) over safe–safe and safe–unsafe pairs, per layer (embeddings excluded).
    cos_gap : numpy.ndarray, shape (L,)
        Mean cosine NN minus mean cosine NM.
    window : list of int
        The ``width`` consecutive layers (0-based block indices) with the largest mean angle gap.
    """

    theta_nn: np.ndarray
    theta_nm: np.ndarray
    cos_gap: np.ndarray
    window: list[int]

    @property
    def gap(self) -> np.ndarray:
        """Angle gap :math:`\\Delta\\theta_l`, shape (L,)."""
        return self.theta_nm - self.theta_nn


def _last_hidden(model, tokenizer, texts, batch_size: int, position: int | None = None) -> np.ndarray:
    ids, offsets = _encode(tokenizer, texts)
    if position is not None:
        if len(set(offsets)) != 1:
            raise ValueError("the tokenizer adds a different number of leading special tokens to different texts")
        if any(position + offsets[0] >= len(x) for x in ids):
            raise ValueError(f"position={position} is past the end of a text of {min(len(x) for x in ids) - offsets[0]} tokens")
    at = -1 if position is None else position + offsets[0]  # index in the encoded sequence
    out: np.ndarray | None = None
    with torch.no_grad():
        for idx, x in _groups(ids, batch_size):
            hs = model(input_ids=x.to(_device(model)), output_hidden_states=True, use_cache=False).hidden_states
            h = torch.stack([layer[:, at, :] for layer in hs[1:]], 1).double().cpu().numpy()  # (b, L, d)
            if out is None:
                out = np.zeros((len(ids), *h.shape[1:]))
            out[idx] = h
    return out  # (n, L, d)


def layer_angle_gap(
    model,
    tokenizer,
    safe_texts: Sequence[str],
    unsafe_texts: Sequence[str],
    *,
    n_pairs: int = 120,
    width: int = 3,
    drop_last: bool = False,
    position: int | None = None,
    batch_size: int = 64,
    random_state: RandomState = None,
) -> LayerGap:
    """The paper's safety-critical layer window from last-token angle gaps.

    Parameters
    ----------
    model : transformers causal LM
    tokenizer : its tokenizer
    safe_texts, unsafe_texts : list of str
        The two classes (at least 2 safe texts, 1 unsafe).
    n_pairs : int
        Pairs sampled for NN (two distinct safe texts) and for NM (a safe and an unsafe text).
    width : int
        Window width ``w`` (3 in the paper), at most the number of layers considered.
    drop_last : bool
        Leave the last layer out of the window search (the paper does so for Qwen models).
    position : int or None
        Read the hidden states at this token instead of the last one (an index among the
        text's own tokens, leading special tokens not counted, the same for every text);
        ``None`` is the paper's last token.
    batch_size : int
        Texts per forward pass.
    random_state : None, int or numpy.random.Generator
        Seed of the pair sampling.

    Returns
    -------
    LayerGap

    References
    ----------
    Tong et al., ICML 2026, ``CoT_Analysis/Layer.py``.
    """
    n_pairs = check_int(n_pairs, "n_pairs", low=1)
    width = check_int(width, "width", low=1)
    batch_size = check_int(batch_size, "batch_size", low=1)
    if len(safe_texts) < 2 or len(unsafe_texts) < 1:
        raise ValueError(f"need at least 2 safe and 1 unsafe text, got {len(safe_texts)} and {len(unsafe_texts)}")
    n_layers = len(_attention_blocks(model)) - (1 if drop_last else 0)
    if width > n_layers:
        raise ValueError(f"width={width} exceeds the {n_layers} layers searched")
    if position is not None:
        position = check_int(position, "position", low=0)
    rng = check_random_state(random_state)
    hs = _last_hidden(model, tokenizer, list(safe_texts), batch_size, position)
    hm = _last_hidden(model, tokenizer, list(unsafe_texts), batch_size, position)
    nn = np.array([rng.choice(len(hs), size=2, replace=False) for _ in range(n_pairs)])
    nm = np.stack([rng.integers(0, len(hs), n_pairs), rng.integers(0, len(hm), n_pairs)], 1)

    def cos(a, b):  # (r, L, d) -> (r, L)
        return np.sum(a * b, -1) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1) + 1e-12)

    c_nn, c_nm = cos(hs[nn[:, 0]], hs[nn[:, 1]]), cos(hs[nm[:, 0]], hm[nm[:, 1]])
    th_nn = np.arccos(np.clip(c_nn, -1, 1)).mean(0)
    th_nm = np.arccos(np.clip(c_nm, -1, 1)).mean(0)
    gap = (th_nm - th_nn)[:n_layers]
    scores = np.convolve(gap, np.ones(width) / width, mode="valid")  # window means
    start = int(np.argmax(scores))
    return LayerGap(theta_nn=th_nn, theta_nm=th_nm, cos_gap=c_nn.mean(0) - c_nm.mean(0), window=list(range(start, start + width)))


# --------------------------------------------------------------------------------------------
# Head metrics (Head.py)
# --------------------------------------------------------------------------------------------
def _centroid(v: np.ndarray) -> np.ndarray:
    w = np.abs(v)  # (..., size)
    s = w.sum(-1)
    c = (w * np.arange(v.shape[-1])).sum(-1) / np.where(s > 1e-12, s, 1.0)
    return np.where(s > 1e-12, c, 0.0)


def _check_layers(layers, n_layers: int) -> list[int]:
    if isinstance(layers, (int, np.integer)) or not isinstance(layers, Sequence) or len(layers) == 0:
        raise TypeError(f"layers must be a non-empty list of layer indices, got {layers!r}")
    out = []
    for layer in layers:
        if not isinstance(layer, (int, np.integer)) or isinstance(layer, bool) or not 0 <= int(layer) < n_layers:
            raise ValueError(f"layer index {layer!r} is out of range: the model has layers 0..{n_layers - 1}")
        out.append(int(layer))
    return out


def attention_head_metrics(
    model,
    tokenizer,
    texts: Sequence[str],
    layers: Sequence[int],
    *,
    size: int = 32,
    n_rows: int = 24,
    n_iter: int = 20,
    query_from: int = 0,
    batch_size: int = 64,
    random_state: RandomState = None,
) -> HeadMetrics:
    """B1, B2, B3 for every head of the given layers on every text (eager attention).

    Parameters
    ----------
    model, tokenizer
        A Hugging Face causal LM and its tokenizer.
    texts : list of str
    layers : list of int
        Layer indices (0-based).
    size, n_rows, n_iter : int
        See :func:`head_jacobian_metrics`.
    query_from : int
        Read only the attention rows of the text's tokens from this index on (the text's own
        tokens, leading special tokens not counted), against all keys. ``0`` (the paper's
        setting, whose texts are the chains of thought alone) reads every row, including the
        tokenizer's leading special tokens.
    batch_size : int
        Texts per forward pass.
    random_state : None, int or numpy.random.Generator
        Seeds of the power iterations.

    Returns
    -------
    HeadMetrics

    References
    ----------
    Tong et al., ICML 2026, ``CoT_Analysis/Head.py``.
    """
    layers = _check_layers(layers, len(_attention_blocks(model)))
    size = check_int(size, "size", low=2)
    batch_size = check_int(batch_size, "batch_size", low=1)
    ids, offsets = _encode(tokenizer, texts)
    query_from = check_int(query_from, "query_from", low=0)
    if any(query_from > 0 and query_from + off >= len(x) for x, off in zip(ids, offsets)):
        raise ValueError(f"query_from={query_from} is past the end of a text")
    rng = check_random_state(random_state)
    H = _n_heads(model)
    n = len(ids)
    b1, b3 = np.zeros((n, len(layers), H)), np.zeros((n, len(layers), H))
    b2 = np.zeros((n, len(layers), H, size))
    with torch.no_grad(), _attn_impl(model, "eager"):
        for idx, x in _groups(ids, batch_size):
            att = model(input_ids=x.to(_device(model)), output_attentions=True, use_cache=False).attentions
            for li, layer in enumerate(layers):
                a = att[layer].double().cpu()  # (b, H, T, T)
                for bi, i in enumerate(idx):
                    q0 = query_from + offsets[i] if query_from > 0 else 0
                    for h in range(H):
                        b1[i, li, h], b2[i, li, h], b3[i, li, h] = head_jacobian_metrics(
                            a[bi, h, q0:], size=size, n_rows=n_rows, n_iter=n_iter, random_state=rng
                        )
    return HeadMetrics(layers=layers, b1=b1, b2=b2, b3=b3, b2_centroid=_centroid(b2))


def power_scale(gap: np.ndarray, *, q: float = 0.9) -> tuple[np.ndarray, float]:
    """The authors' signed power scaling of a gap vector (display and key-head threshold).

    :math:`\\gamma = \\max(1, \\log 0.5 / \\log r)` with :math:`r = q\\text{-quantile}(|g|) / \\max|g|`
    (:math:`\\gamma = 1` when :math:`r \\notin (0, 1)`), and
    :math:`g'_h = \\operatorname{sign}(g_h)(|g_h|/\\max|g|)^\\gamma \\max|g|`.

    Parameters
    ----------
    gap : array, shape (H,)
    q : float in (0, 1]

    Returns
    -------
    (numpy.ndarray of shape (H,), float)
        Scaled gaps and :math:`\\gamma`.

    References
    ----------
    Tong et al., ICML 2026, ``Head.py`` (``global_adaptive_power_scale_signed``).
    """
    g = np.asarray(gap, dtype=np.float64)
    if g.ndim != 1 or g.size == 0 or not np.isfinite(g).all():
        raise ValueError(f"gap must be a finite non-empty 1-d array, got shape {g.shape}")
    q = check_real(q, "q", lo=0.0, hi=1.0, lo_open=True)
    t = np.abs(g)
    m = float(t.max())
    if m < 1e-30:
        return g.copy(), 1.0
    r = float(np.quantile(t, q)) / (m + 1e-12)
    gamma = 1.0 if (r <= 0.0 or r >= 1.0 - 1e-6) else max(1.0, math.log(0.5) / math.log(r))
    return np.sign(g) * (t / (m + 1e-12)) ** gamma * m, gamma


def key_heads(safe: HeadMetrics, unsafe: HeadMetrics, *, ratio: float = 0.7, q: float = 0.9) -> dict[str, list[tuple[int, int]]]:
    """Key heads per metric and their union: :math:`|g'_h| \\ge \\text{ratio}\\cdot\\max_h |g'_h|` per layer.

    Parameters
    ----------
    safe, unsafe : HeadMetrics
        The metrics of the two classes on the same layers.
    ratio : float in (0, 1]
        Threshold fraction (0.7 in the paper).
    q : float
        Quantile of the power scaling (0.9).

    Returns
    -------
    dict
        ``"B1"``, ``"B2"``, ``"B3"`` and ``"union"``: sorted lists of ``(layer, head)``.

    References
    ----------
    Tong et al., ICML 2026, ``Head.py`` (``plot_nn_nm_scaled_clean``, key-head summary).
    """
    if not isinstance(safe, HeadMetrics) or not isinstance(unsafe, HeadMetrics):
        raise TypeError("safe and unsafe must be HeadMetrics from attention_head_metrics")
    if safe.layers != unsafe.layers or safe.b1.shape[1:] != unsafe.b1.shape[1:]:
        raise ValueError(f"safe and unsafe metrics cover different layers/heads: {safe.layers} vs {unsafe.layers}")
    ratio = check_real(ratio, "ratio", lo=0.0, hi=1.0, lo_open=True)
    out: dict[str, list[tuple[int, int]]] = {}
    for name, attr in (("B1", "b1"), ("B2", "b2_centroid"), ("B3", "b3")):
        gaps = getattr(safe, attr).mean(0) - getattr(unsafe, attr).mean(0)  # (n_layers, H)
        sel = []
        for li, layer in enumerate(safe.layers):
            g2, _ = power_scale(gaps[li], q=q)
            a = np.abs(g2)
            if a.max() > 0:
                sel += [(layer, int(h)) for h in np.flatnonzero(a >= ratio * a.max())]
        out[name] = sorted(sel)
    out["union"] = sorted(set(out["B1"]) | set(out["B2"]) | set(out["B3"]))
    return out


# --------------------------------------------------------------------------------------------
# Behaviour: copy rate, head ablation, head temperature
# --------------------------------------------------------------------------------------------
def _check_heads(heads, n_layers: int, n_heads: int) -> list[tuple[int, int]]:
    if isinstance(heads, (str, bytes)) or not isinstance(heads, (Sequence, set, frozenset)):
        raise TypeError(f"heads must be a collection of (layer, head) pairs, got {type(heads).__name__}")
    out = []
    for item in heads:
        if not isinstance(item, (tuple, list)) or len(item) != 2:
            raise TypeError(f"each head must be a (layer, head) pair, got {item!r}")
        layer, h = item
        if not isinstance(layer, (int, np.integer)) or not 0 <= int(layer) < n_layers:
            raise ValueError(f"layer index {layer!r} is out of range: the model has layers 0..{n_layers - 1}")
        if not isinstance(h, (int, np.integer)) or not 0 <= int(h) < n_heads:
            raise ValueError(f"head index {h!r} is out of range: each layer has heads 0..{n_heads - 1}")
        out.append((int(layer), int(h)))
    return out


def copy_rate(model, tokenizer, texts: Sequence[str], target_index: int, *, batch_size: int = 128) -> tuple[float, float]:
    """How often the model's greedy next token reproduces the token at ``target_index``.

    Teacher-forced: for each text, the next-token logits after the tokens before
    ``target_index`` are compared with the text's own token at ``target_index`` (in the trace
    corpus: the copied payload).

    Parameters
    ----------
    model, tokenizer
        A Hugging Face causal LM and its tokenizer.
    texts : list of str
    target_index : int
        Index (>= 1) of the target among the text's own tokens (the tokenizer's leading
        special tokens, such as ``<bos>``, not counted), the same for every text.
    batch_size : int

    Returns
    -------
    (float, float)
        The copy rate (fraction of argmax hits) and the mean probability of the target token.
    """
    ids, offsets = _encode(tokenizer, texts)
    target_index = check_int(target_index, "target_index", low=1)
    if len(set(offsets)) != 1:
        raise ValueError("the tokenizer adds a different number of leading special tokens to different texts")
    pos = target_index + offsets[0]  # the target's index in the encoded sequence
    if any(len(x) <= pos for x in ids):
        raise ValueError(
            f"target_index={target_index} is past the end of a text of {min(len(x) for x in ids) - offsets[0]} tokens"
        )
    hits, probs = np.zeros(len(ids)), np.zeros(len(ids))
    with torch.no_grad():
        for idx, x in _groups(ids, check_int(batch_size, "batch_size", low=1)):
            logits = model(input_ids=x[:, :pos].to(_device(model)), use_cache=False).logits[:, -1]  # (b, V)
            tgt = x[:, pos].to(logits.device)
            hits[idx] = (logits.argmax(-1) == tgt).double().cpu().numpy()
            probs[idx] = torch.softmax(logits.double(), -1).gather(1, tgt[:, None])[:, 0].cpu().numpy()
    return float(hits.mean()), float(probs.mean())


@contextlib.contextmanager
def _zero_heads(model, heads: list[tuple[int, int]], means: dict[int, torch.Tensor] | None = None):
    """Replace the heads' outputs by zero, or (``means``) by their position-wise means."""
    blocks = _attention_blocks(model)
    H = _n_heads(model)
    by_layer: dict[int, list[int]] = {}
    for layer, h in heads:
        by_layer.setdefault(layer, []).append(h)
    handles = []
    for layer, hs in by_layer.items():
        proj = blocks[layer][1]

        def pre(module, args, hs=hs, layer=layer):
            x = args[0]  # (b, T, H * d_head): the heads' outputs, concatenated, before the projection
            d = x.shape[-1] // H
            mask = torch.ones(x.shape[-1], dtype=x.dtype, device=x.device)
            for h in hs:
                mask[h * d : (h + 1) * d] = 0
            out = x * mask
            if means is not None:  # (T, H * d_head): the mean output at each position
                out = out + (1 - mask) * means[layer][: x.shape[1]].to(x)
            return (out, *args[1:])

        handles.append(proj.register_forward_pre_hook(pre))
    try:
        yield
    finally:
        for hd in handles:
            hd.remove()


def _head_output_means(model, tokenizer, texts: Sequence[str], batch_size: int) -> dict[int, torch.Tensor]:
    """Per layer, the position-wise mean over ``texts`` of the concatenated head outputs, shape (T, H * d_head)."""
    ids, _ = _encode(tokenizer, texts)
    if len({len(x) for x in ids}) != 1:
        raise ValueError(
            f"ablation='mean' needs texts of one token length (a position-wise mean); got lengths {sorted({len(x) for x in ids})}"
        )
    blocks = _attention_blocks(model)
    sums: dict[int, torch.Tensor] = {}
    handles = []
    for layer, (_, proj) in enumerate(blocks):

        def pre(module, args, layer=layer):
            s = args[0].detach().double().sum(0)  # (T, H * d_head)
            sums[layer] = s if layer not in sums else sums[layer] + s

        handles.append(proj.register_forward_pre_hook(pre))
    try:
        with torch.no_grad():
            for _, x in _groups(ids, batch_size):
                model(input_ids=x.to(_device(model)), use_cache=False)
    finally:
        for hd in handles:
            hd.remove()
    return {layer: s / len(ids) for layer, s in sums.items()}


def head_ablation(
    model,
    tokenizer,
    texts: Sequence[str],
    target_index: int,
    *,
    heads: Sequence[tuple[int, int]] | None = None,
    batch_size: int = 128,
    ablation: str = "zero",
) -> dict[str, np.ndarray | float]:
    """Ablate each head's output (one at a time) and measure the drop of the copy rate.

    A head is ablated at its slice of the concatenated head outputs at the input of the
    attention output projection (``c_proj`` / ``o_proj`` / ...), i.e. its contribution to
    the residual stream, bias left in place. ``ablation="zero"`` sets the slice to zero;
    ``ablation="mean"`` replaces it by its mean over ``texts`` at each position
    (:math:`o_{h,t} \\to \\bar o_{h,t}`, mean ablation), which removes what the head
    carries about the particular text while keeping its average contribution, so that a
    head every later layer reads a constant from is not counted as part of the circuit.

    Parameters
    ----------
    model, tokenizer, texts, target_index, batch_size
        As in :func:`copy_rate`; for ``ablation="mean"`` the texts must share one token length.
    heads : list of (layer, head), optional
        Ablate these heads *together* once instead of every head alone.
    ablation : {"zero", "mean"}
        Zero ablation or mean ablation.

    Returns
    -------
    dict
        ``base_rate``, ``base_prob``; per head (arrays of shape (L, H)) ``rate_drop`` and
        ``prob_drop`` (base minus ablated), or for ``heads`` the two drops as floats.
    """
    blocks = _attention_blocks(model)
    H = _n_heads(model)
    if ablation not in ("zero", "mean"):
        raise ValueError(f"ablation={ablation!r} is not an ablation; use 'zero' or 'mean'")
    base_rate, base_prob = copy_rate(model, tokenizer, texts, target_index, batch_size=batch_size)
    means = _head_output_means(model, tokenizer, texts, batch_size) if ablation == "mean" else None
    if heads is not None:
        hs = _check_heads(heads, len(blocks), H)
        with _zero_heads(model, hs, means):
            r, p = copy_rate(model, tokenizer, texts, target_index, batch_size=batch_size)
        return {"base_rate": base_rate, "base_prob": base_prob, "rate_drop": base_rate - r, "prob_drop": base_prob - p}
    rate_drop, prob_drop = np.zeros((len(blocks), H)), np.zeros((len(blocks), H))
    for layer in range(len(blocks)):
        for h in range(H):
            with _zero_heads(model, [(layer, h)], means):
                r, p = copy_rate(model, tokenizer, texts, target_index, batch_size=batch_size)
            rate_drop[layer, h], prob_drop[layer, h] = base_rate - r, base_prob - p
    return {"base_rate": base_rate, "base_prob": base_prob, "rate_drop": rate_drop, "prob_drop": prob_drop}


def _temperature_attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    # query (b, H, T, d), key/value (b, H_kv, S, d)
    if key.shape[1] != query.shape[1]:
        rep = query.shape[1] // key.shape[1]
        key, value = key.repeat_interleave(rep, 1), value.repeat_interleave(rep, 1)
    if scaling is None:
        scaling = query.shape[-1] ** -0.5
    logits = torch.matmul(query, key.transpose(-1, -2)) * scaling  # (b, H, T, S)
    tau = getattr(module, "_icml26_tau", None)
    if tau is not None:
        logits = logits / tau.to(logits)[None, :, None, None]
    if attention_mask is not None:
        logits = logits + attention_mask[:, :, :, : key.shape[-2]]
    else:
        T, S = logits.shape[-2:]
        causal = torch.ones(T, S, dtype=torch.bool, device=logits.device).tril(S - T)
        logits = logits.masked_fill(~causal, float("-inf"))
    w = torch.softmax(logits, dim=-1, dtype=torch.float32).to(query.dtype)
    w = F.dropout(w, p=dropout, training=module.training)
    return torch.matmul(w, value).transpose(1, 2), w  # (b, T, H, d), (b, H, T, S)


def _register_temperature_impl() -> None:
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, eager_mask

    AttentionInterface.register(_TEMP_IMPL, _temperature_attention)
    AttentionMaskInterface.register(_TEMP_IMPL, eager_mask)


@contextlib.contextmanager
def head_temperature(model, heads: Sequence[tuple[int, int]], tau: float) -> Iterator[None]:
    """Context manager: divide the attention logits of ``heads`` by ``tau`` (sharpen < 1 < flatten).

    The model runs through an eager attention function registered with ``transformers``'
    ``AttentionInterface`` that rescales the chosen heads' scores before the softmax; the
    previous attention implementation is restored on exit. ``tau = 1`` (or no heads) leaves
    the outputs equal to eager attention.

    Parameters
    ----------
    model : transformers causal LM
    heads : list of (layer, head)
    tau : float > 0
        Temperature; 0.5 sharpens, 2 flattens (the digest's plan).

    Yields
    ------
    None
    """
    blocks = _attention_blocks(model)
    H = _n_heads(model)
    hs = _check_heads(heads, len(blocks), H)
    tau = check_real(tau, "tau", lo=0.0, lo_open=True)
    _register_temperature_impl()
    set_on = []
    for layer in sorted({layer for layer, _ in hs}):
        t = torch.ones(H)
        for lay, h in hs:
            if lay == layer:
                t[h] = tau
        blocks[layer][0]._icml26_tau = t
        set_on.append(blocks[layer][0])
    try:
        with _attn_impl(model, _TEMP_IMPL):
            yield
    finally:
        for m in set_on:
            del m._icml26_tau


# --------------------------------------------------------------------------------------------
# The whole pipeline on one model (chapter 16's experiment)
# --------------------------------------------------------------------------------------------
def cosine_window(cos_gap: np.ndarray, width: int) -> list[int]:
    """The authors' window rule: the ``width`` consecutive layers with the largest mean cosine gap.

    :math:`\\arg\\max_s \\frac1w \\sum_{l=s}^{s+w-1} (\\overline{\\cos^{NN}_l} - \\overline{\\cos^{NM}_l})`,
    the first maximum on ties.

    Parameters
    ----------
    cos_gap : array, shape (L,)
        :attr:`LayerGap.cos_gap`.
    width : int
        Window width ``w`` (3 in the authors' ``Layer.py``), at most ``L``.

    Returns
    -------
    list of int

    References
    ----------
    Tong et al., ICML 2026, ``CoT_Analysis/Layer.py`` (the window search on the cosine gap).
    """
    g = np.asarray(cos_gap, dtype=np.float64)
    if g.ndim != 1 or g.size == 0 or not np.isfinite(g).all():
        raise ValueError(f"cos_gap must be a finite non-empty 1-d array, got shape {g.shape}")
    width = check_int(width, "width", low=1)
    if width > g.size:
        raise ValueError(f"width={width} exceeds the {g.size} layers of cos_gap")
    start = int(np.argmax(np.convolve(g, np.ones(width) / width, mode="valid")))
    return list(range(start, start + width))


def analyse_model(
    model,
    tokenizer,
    trace_set,
    *,
    n_pairs: int,
    width: int,
    n_metric: int,
    size: int,
    n_rows: int,
    n_iter: int,
    query_from: int,
    key_ratio: float = 0.7,
    truth_ratio: float = 0.5,
    taus: Sequence[float] = (0.5, 2.0),
    n_random: int = 20,
    authors_pairs: int = 20,
    authors_width: int = 3,
    ablation: str = "zero",
    random_state: int = 0,
    perturb_random_state: int = 0,
) -> dict:
    """Run the paper's pipeline on one model and score it against the planted circuit.

    In order: copy rates; per-head ablation (the ground truth: heads whose ablation removes
    at least ``truth_ratio`` of the largest drop of payload probability); the layer window
    (:func:`layer_angle_gap`); head metrics and key heads inside the window and, as a
    variant, over every layer (:func:`key_heads`); the change of the copy rate when the key
    heads, the every-layer key heads, the circuit's heads and ``n_random`` random head sets
    of each size are tempered by each ``tau`` (:func:`head_temperature`); the authors'
    cosine-gap window (:func:`cosine_window`). Then two sensitivity readings that use their
    own pair draws (so the readings above do not change): the authors' defaults (``r =
    authors_pairs`` pairs, ``w = authors_width``, the cosine rule) with their key heads, and
    the window read at the token whose next-token output is the copy (``copy_index - 1``).

    Parameters
    ----------
    model, tokenizer
        A Hugging Face causal LM and its tokenizer.
    trace_set : icml26.tinylm.traces.TraceSet
        Evaluation traces (``split()`` into safe and unsafe texts, ``copy_index``).
    n_pairs, width : int
        Pairs per group and window width of the primary window.
    n_metric : int
        Traces per class for the head metrics.
    size, n_rows, n_iter, query_from : int
        As in :func:`attention_head_metrics`.
    key_ratio : float
        Key-head threshold (0.7 in the paper).
    truth_ratio : float
        Ground-truth threshold on the ablation drop.
    taus : sequence of float
        Attention temperatures.
    n_random : int
        Random head sets per size.
    authors_pairs, authors_width : int
        The authors' defaults for the sensitivity reading (capped at the number of layers).
    ablation : {"zero", "mean"}
        How the ground truth ablates a head (:func:`head_ablation`).
    random_state : int
        Seeds the window's pair draws and the power iterations.
    perturb_random_state : int
        Seeds the random head sets.

    Returns
    -------
    dict
        ``base_rate``, ``base_prob``, ``safe_rate``, ``drop`` and ``rate_drop`` (L, H),
        ``truth``, ``gap`` (:class:`LayerGap`), ``m_safe``, ``m_unsafe``, ``keys``, ``key``,
        ``pert``, ``overlap``, ``key_all``, ``pert_all``, ``pert_truth`` (per tau: the key
        change and the random sets' changes), ``cos_window``, ``p_overlap``, ``top_layer``,
        ``in_window``, and ``sens``: ``authors`` (window, key heads, overlap, in_window) and
        ``copy_token`` (window, gap, in_window).
    """
    from scipy import stats

    if not (hasattr(trace_set, "split") and hasattr(trace_set, "copy_index")):
        raise TypeError(f"trace_set must be a TraceSet from icml26.tinylm.traces.make_traces, got {type(trace_set).__name__}")
    n_metric = check_int(n_metric, "n_metric", low=1)
    n_random = check_int(n_random, "n_random", low=1)
    safe, unsafe = trace_set.split()
    ci = trace_set.copy_index
    L, H = len(_attention_blocks(model)), _n_heads(model)
    base_rate, base_prob = copy_rate(model, tokenizer, unsafe, ci)
    safe_rate, _ = copy_rate(model, tokenizer, safe, ci)
    abl = head_ablation(model, tokenizer, unsafe, ci, ablation=ablation)
    drop = abl["prob_drop"]
    truth = sorted((int(l), int(h)) for l, h in zip(*np.nonzero(drop >= truth_ratio * drop.max()))) if drop.max() > 0 else []
    gap = layer_angle_gap(model, tokenizer, safe, unsafe, n_pairs=n_pairs, width=width, random_state=random_state)
    mkw = dict(size=size, n_rows=n_rows, n_iter=n_iter, query_from=query_from, random_state=random_state)
    m_safe = attention_head_metrics(model, tokenizer, safe[:n_metric], gap.window, **mkw)
    m_unsafe = attention_head_metrics(model, tokenizer, unsafe[:n_metric], gap.window, **mkw)
    keys = key_heads(m_safe, m_unsafe, ratio=key_ratio)
    key = keys["union"]
    # the variant of issue #24: the same key-head rule over every layer, not only the window
    all_layers = list(range(L))
    key_all = key_heads(
        attention_head_metrics(model, tokenizer, safe[:n_metric], all_layers, **mkw),
        attention_head_metrics(model, tokenizer, unsafe[:n_metric], all_layers, **mkw),
        ratio=key_ratio,
    )["union"]
    all_heads = [(l, h) for l in range(L) for h in range(H)]
    prng = np.random.default_rng(perturb_random_state)
    sets_of = {
        n: [[all_heads[i] for i in prng.choice(len(all_heads), size=n, replace=False)] for _ in range(n_random)]
        for n in sorted({len(key), len(key_all), len(truth)})
    }

    def perturb(heads, tau):
        with head_temperature(model, heads, tau):
            k_rate = copy_rate(model, tokenizer, unsafe, ci)[0]
        r_rates = []
        for hs in sets_of[len(heads)]:
            with head_temperature(model, hs, tau):
                r_rates.append(copy_rate(model, tokenizer, unsafe, ci)[0])
        return k_rate - base_rate, np.array(r_rates) - base_rate

    pert = {tau: perturb(key, tau) for tau in taus}
    pert_all = {tau: perturb(key_all, tau) for tau in taus}
    # positive control: the circuit's own heads
    pert_truth = {tau: perturb(truth, tau) for tau in taus}
    cos_window = cosine_window(gap.cos_gap, width)
    overlap = len(set(key) & set(truth))
    p_overlap = float(stats.hypergeom.sf(overlap - 1, L * H, len(truth), len(key))) if key and truth else 1.0
    top_layer = int(np.unravel_index(np.argmax(drop), drop.shape)[0])
    # sensitivity readings, each with its own pair draws
    wa = min(check_int(authors_width, "authors_width", low=1), L)
    gap_a = layer_angle_gap(model, tokenizer, safe, unsafe, n_pairs=authors_pairs, width=wa, random_state=random_state)
    win_a = cosine_window(gap_a.cos_gap, wa)
    key_a = key_heads(
        attention_head_metrics(model, tokenizer, safe[:n_metric], win_a, **mkw),
        attention_head_metrics(model, tokenizer, unsafe[:n_metric], win_a, **mkw),
        ratio=key_ratio,
    )["union"]
    gap_c = layer_angle_gap(
        model, tokenizer, safe, unsafe, n_pairs=n_pairs, width=width, position=ci - 1, random_state=random_state
    )
    sens = {
        "authors": {
            "width": wa,
            "angle_window": gap_a.window,
            "window": win_a,
            "key": key_a,
            "overlap": len(set(key_a) & set(truth)),
            "in_window": top_layer in win_a,
        },
        "copy_token": {"window": gap_c.window, "gap": gap_c.gap, "in_window": top_layer in gap_c.window},
    }
    return dict(
        base_rate=base_rate,
        base_prob=base_prob,
        safe_rate=safe_rate,
        drop=drop,
        rate_drop=abl["rate_drop"],
        truth=truth,
        gap=gap,
        m_safe=m_safe,
        m_unsafe=m_unsafe,
        keys=keys,
        key=key,
        pert=pert,
        overlap=overlap,
        key_all=key_all,
        pert_all=pert_all,
        pert_truth=pert_truth,
        cos_window=cos_window,
        p_overlap=p_overlap,
        top_layer=top_layer,
        in_window=top_layer in gap.window,
        sens=sens,
    )
