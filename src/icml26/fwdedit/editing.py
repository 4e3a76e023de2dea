"""Locate-then-edit parameter editing: OneLayer (ROME-style), MEMIT (with and without the
division of the residual) and forward replay (FE).

All four methods edit the MLP output projections of chosen layers and share two pieces:
the key covariance :func:`key_covariance` and the least-squares layer update
:func:`layer_update` (``ΔW = R Kᵀ (K Kᵀ + λ C)⁻¹``). They differ only in how the per-layer
targets are built:

* OneLayer: anchor ``z`` optimised at the edited layer, residual ``z − h``;
* MEMIT: anchor at the last edited layer ``l_L``; for layer ``l_i`` the residual
  ``(z − h_{l_L}) / (L − i + 1)`` (current model), "spread backwards";
* MEMIT without the division: residual ``z − h_{l_L}``;
* FE: anchor at the *first* edited layer; targets of later layers read off by one
  forward pass of the clean model with ``h_{l_1} := z``; residual ``z_{l_i} − h_{l_i}``.

Every analysis takes a Hugging Face causal LM and its tokenizer (GPT-2 ``Conv1D``
``mlp.c_proj`` or Llama-style ``mlp.down_proj`` linear layers).

References
----------
Liu, Liu, Deng, Teh and Lee, "From Backward Spreading to Forward Replay: Revisiting Target
Construction in LLM Parameter Editing", ICML 2026, arXiv:2605.00358; code
https://github.com/jugechengzi/FE. Meng et al., "Mass-Editing Memory in a Transformer"
(MEMIT), ICLR 2023; Meng et al., "Locating and Editing Factual Associations in GPT"
(ROME), NeurIPS 2022.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from scipy.linalg import lapack as _lapack

from icml26._common import RandomState, check_int, check_real

METHODS = ("onelayer", "memit", "memit_nodiv", "fe")


# --------------------------------------------------------------------------- model access
def mlp_projections(model) -> list[torch.nn.Module]:
    """The MLP output projection of every block (GPT-2 ``mlp.c_proj``, Llama ``mlp.down_proj``).

    Parameters
    ----------
    model : transformers.PreTrainedModel
        A causal LM.

    Returns
    -------
    list of torch.nn.Module

    References
    ----------
    Meng et al. (2023), MEMIT: the edited weights are the MLP output projections.
    """
    blocks = _blocks(model)
    out = []
    for i, b in enumerate(blocks):
        mlp = getattr(b, "mlp", None)
        proj = getattr(mlp, "c_proj", None) or getattr(mlp, "down_proj", None)
        if proj is None:
            raise ValueError(f"block {i} of {type(model).__name__} has no mlp.c_proj or mlp.down_proj to edit")
        out.append(proj)
    return out


def _blocks(model):
    for path in ("transformer.h", "model.layers", "gpt_neox.layers"):
        obj = model
        for part in path.split("."):
            obj = getattr(obj, part, None)
            if obj is None:
                break
        if obj is not None:
            return list(obj)
    raise ValueError(f"model {type(model).__name__} has no transformer.h / model.layers blocks (a causal LM is expected)")


def _check_layers(model, layers) -> list[int]:
    n = len(_blocks(model))
    if isinstance(layers, (int, np.integer)):
        layers = [int(layers)]
    layers = [check_int(l, "layer", low=0) for l in layers]
    bad = [l for l in layers if l >= n]
    if bad:
        raise ValueError(f"layer index {bad[0]} is out of range: the model has {n} blocks (0..{n - 1})")
    if not layers or sorted(set(layers)) != layers:
        raise ValueError(f"layers={layers} must be a non-empty strictly increasing list")
    return layers


def _target_id(tok, word: str) -> int:
    ids = tok.encode(" " + word, add_special_tokens=False)
    if not ids or (tok.unk_token_id is not None and tok.unk_token_id in ids):
        raise ValueError(f"target {word!r} is not in the tokenizer's vocabulary")
    return int(ids[0])


def _prompt_ids(tok, text: str, subject: str | None = None) -> tuple[list[int], int]:
    """Token ids of ``text`` and the index of the last subject token (last token if no subject)."""
    ids = tok(text)["input_ids"]
    unk = tok.unk_token_id
    if subject is not None:
        k = text.find(subject)
        if k < 0:
            raise ValueError(f"subject {subject!r} does not occur in {text!r}")
        pre = tok(text[: k + len(subject)])["input_ids"]
        if unk is not None and unk in tok.encode(subject, add_special_tokens=False):
            raise ValueError(f"subject {subject!r} is not in the tokenizer's vocabulary")
        return ids, len(pre) - 1
    return ids, len(ids) - 1


def _batch(tok, seqs: list[list[int]]):
    L = max(len(s) for s in seqs)
    pad = tok.pad_token_id if tok.pad_token_id is not None else 0
    ids = torch.full((len(seqs), L), pad, dtype=torch.long)  # (B, L)
    mask = torch.zeros((len(seqs), L), dtype=torch.long)  # (B, L)
    for r, s in enumerate(seqs):
        ids[r, : len(s)] = torch.tensor(s)
        mask[r, : len(s)] = 1
    return ids, mask


class _Hook:
    """Read the input of a projection / the output of a block, or add a vector to it."""

    def __init__(self, module, kind: str, rows=None, cols=None, add=None, replace=None):
        self.kind, self.rows, self.cols, self.add, self.replace, self.value = kind, rows, cols, add, replace, None
        if kind == "input":
            self.h = module.register_forward_pre_hook(self._pre)
        else:
            self.h = module.register_forward_hook(self._post)

    def _pre(self, mod, args):
        x = args[0]  # (B, L, d_k)
        self.value = x[self.rows, self.cols]

    def _post(self, mod, args, out):
        hs = out[0] if isinstance(out, tuple) else out  # (B, L, d)
        if self.add is not None or self.replace is not None:
            hs = hs.clone()
            if self.replace is not None:
                hs[self.rows, self.cols] = self.replace
            else:
                hs[self.rows, self.cols] = hs[self.rows, self.cols] + self.add
        self.value = hs[self.rows, self.cols]
        if isinstance(out, tuple):
            return (hs,) + tuple(out[1:])
        return hs

    def remove(self):
        self.h.remove()


def _run(model, tok, seqs, positions, hooks_spec, batch=None, index=None):
    """Forward ``seqs``; ``hooks_spec`` is a list of (module, kind, add, replace); returns (logits, values).

    ``batch`` (``_batch(tok, seqs)``) and ``index`` (rows, positions as tensors) may be passed
    in when the same sequences are run many times.
    """
    ids, mask = batch if batch is not None else _batch(tok, seqs)
    rows, cols = index if index is not None else (torch.arange(len(seqs)), torch.tensor(positions))
    hooks = [_Hook(m, k, rows, cols, add=a, replace=r) for m, k, a, r in hooks_spec]
    try:
        logits = model(input_ids=ids, attention_mask=mask, use_cache=False).logits  # (B, L, V)
    finally:
        for h in hooks:
            h.remove()
    return logits, [h.value for h in hooks]


# --------------------------------------------------------------------------- shared algebra
def key_covariance(keys: torch.Tensor) -> torch.Tensor:
    """Uncentred second moment of keys, ``C = (1/n) Σ k kᵀ``.

    Parameters
    ----------
    keys : torch.Tensor, shape (n, d_k)
        Keys (inputs of the edited projection) over generic text.

    Returns
    -------
    torch.Tensor, shape (d_k, d_k)

    Raises
    ------
    ValueError
        For keys that are not a non-empty ``(n, d_k)`` tensor, or hold NaN or inf.

    References
    ----------
    Meng et al. (2023), MEMIT, eq. (11): ``C_0 = λ E[k kᵀ]``.
    """
    if not isinstance(keys, torch.Tensor) or keys.ndim != 2 or keys.shape[0] < 1:
        raise ValueError(f"keys must be a (n, d_k) tensor with n >= 1, got {getattr(keys, 'shape', type(keys))}")
    if not torch.isfinite(keys).all():
        raise ValueError("keys contain NaN or inf")
    k = keys.double()
    return (k.T @ k / k.shape[0]).to(keys.dtype)


def layer_update(keys: torch.Tensor, residuals: torch.Tensor, cov: torch.Tensor, lam: float, ridge: float = 0.0) -> torch.Tensor:
    """The least-squares layer update ``ΔW = R Kᵀ (K Kᵀ + λ C + α I)⁻¹``.

    Parameters
    ----------
    keys : torch.Tensor, shape (n, d_k)
        Keys of the edited requests (rows).
    residuals : torch.Tensor, shape (n, d)
        Wanted change of the projection's output for each key.
    cov : torch.Tensor, shape (d_k, d_k)
        Key covariance of preserved text (:func:`key_covariance`).
    lam : float
        Weight ``λ >= 0`` of the preservation term.
    ridge : float
        ``α >= 0`` added to the diagonal.

    Returns
    -------
    torch.Tensor, shape (d, d_k)
        ``ΔW`` acting as ``out = W k``; for ``λ = α = 0`` and one key, ``ΔW k = r`` exactly.

    Raises
    ------
    TypeError
        For inputs that are not torch tensors (numpy arrays included), or ``lam``/``ridge``
        that are not numbers.
    ValueError
        For mis-shaped or non-finite tensors, or a negative ``lam`` or ``ridge``.

    References
    ----------
    Meng et al. (2023), MEMIT, eq. (14); Liu et al. (2026), FE, the closed form of Sec. 3.
    """
    for name, t in (("keys", keys), ("residuals", residuals), ("cov", cov)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__} (use torch.as_tensor)")
        # a finite sum means every entry is finite (NaN and inf propagate); only an overflowing
        # sum of finite entries needs the entry-wise check
        if not bool(torch.isfinite(t.sum())) and not bool(torch.isfinite(t).all()):
            raise ValueError(f"{name} contain NaN or inf; layer_update needs finite {name}")
    if keys.ndim != 2 or residuals.ndim != 2 or keys.shape[0] != residuals.shape[0]:
        raise ValueError(f"keys {tuple(keys.shape)} and residuals {tuple(residuals.shape)} must be (n, d_k) and (n, d)")
    if cov.shape != (keys.shape[1], keys.shape[1]):
        raise ValueError(f"cov has shape {tuple(cov.shape)}, expected ({keys.shape[1]}, {keys.shape[1]})")
    lam = check_real(lam, "lam", lo=0.0)
    ridge = check_real(ridge, "ridge", lo=0.0)
    if lam == 0 and ridge == 0:
        K, R = keys.double().T, residuals.double().T  # (d_k, n), (d, n)
        return (R @ torch.linalg.pinv(K)).to(keys.dtype)  # minimum-norm exact solution of ΔW K = R
    if keys.device.type != "cpu":  # on an accelerator: torch's Cholesky, general solve if not positive definite
        K, R = keys.double().T, residuals.double().T
        A = K @ K.T + lam * cov.double() + ridge * torch.eye(K.shape[0], dtype=torch.float64, device=K.device)
        Lc, info = torch.linalg.cholesky_ex(A)
        if int(info) == 0:
            return torch.cholesky_solve(K @ R.T, Lc).T.to(keys.dtype)
        return torch.linalg.solve(A, K @ R.T).T.to(keys.dtype)
    k = keys.detach().double().numpy()  # (n, d_k)
    r = residuals.detach().double().numpy()  # (n, d)
    A = k.T @ k + lam * cov.detach().double().numpy()  # (d_k, d_k), symmetric positive (semi-)definite
    if ridge:
        A += ridge * np.eye(A.shape[0])
    Bt = r.T @ k  # (d, d_k) = (K Rᵀ)ᵀ
    # A is symmetric positive definite when λ C or α I is: a Cholesky solve (LAPACK potrf and
    # potrs, the routines of scipy.linalg.solve(assume_a="pos")), half the work of an LU solve.
    # The transposes are Fortran-ordered views, so LAPACK works in place, without copies:
    # A = Aᵀ, and X = A⁻¹ K Rᵀ in Fortran order is ΔW = Xᵀ = R Kᵀ A⁻¹ in C order.
    c, info = _lapack.dpotrf(A.T, lower=0, clean=0, overwrite_a=1)
    if info == 0:
        x, info = _lapack.dpotrs(c, Bt.T, lower=0, overwrite_b=1)
    if info != 0:  # A not positive definite (an indefinite cov): the general (LU) solve
        A = k.T @ k + lam * cov.detach().double().numpy() + ridge * np.eye(k.shape[1])
        return torch.from_numpy(np.linalg.solve(A, k.T @ r).T.copy()).to(keys.dtype)  # (d, d_k)
    return torch.from_numpy(x.T).to(keys.dtype)  # (d, d_k)


def _apply(proj, dW: torch.Tensor) -> None:
    with torch.no_grad():
        w = proj.weight
        if w.shape == dW.T.shape and type(proj).__name__ == "Conv1D":  # GPT-2: out = x @ W, W (d_k, d)
            w += dW.T.to(w.dtype)
        elif w.shape == dW.shape:  # nn.Linear: W (d, d_k)
            w += dW.to(w.dtype)
        else:
            raise ValueError(f"update of shape {tuple(dW.shape)} does not fit weight {tuple(w.shape)}")


# --------------------------------------------------------------------------- keys, covariance, anchors
@torch.no_grad()
def collect_keys(model, tok, layer: int, texts: Sequence[str], max_tokens: int | None = None) -> torch.Tensor:
    """Keys (inputs of layer ``layer``'s MLP projection) at every token of ``texts``.

    Parameters
    ----------
    model, tok : causal LM and its tokenizer
    layer : int
        Block index.
    texts : sequence of str
        Generic text (the preserved distribution).
    max_tokens : int or None
        At most this many keys are returned (first ones); ``None`` (default) keeps every
        token of every text.

    Returns
    -------
    torch.Tensor, shape (n, d_k)

    References
    ----------
    Meng et al. (2023), MEMIT, Sec. 4.3 (second moment over Wikipedia text).
    """
    layer = _check_layers(model, [layer])[0]
    if max_tokens is not None:
        max_tokens = check_int(max_tokens, "max_tokens", low=1)
    if isinstance(texts, str) or not texts:
        raise ValueError("texts must be a non-empty list of strings")
    proj = mlp_projections(model)[layer]
    out, n = [], 0
    for i in range(0, len(texts), 64):
        seqs = [tok(t)["input_ids"] for t in texts[i : i + 64]]
        ids, mask = _batch(tok, seqs)
        store = {}
        h = proj.register_forward_pre_hook(lambda m, a, store=store: store.__setitem__("k", a[0]))
        try:
            model(input_ids=ids, attention_mask=mask, use_cache=False)
        finally:
            h.remove()
        out.append(store["k"][mask.bool()])  # (tokens, d_k)
        n += out[-1].shape[0]
        if max_tokens is not None and n >= max_tokens:
            break
    return torch.cat(out)[:max_tokens]


@dataclass
class EditConfig:
    """Settings of the anchor optimisation and the closed form.

    Parameters
    ----------
    lam : float
        Preservation weight λ of :func:`layer_update`.
    clamp : float
        ‖δ‖ ≤ clamp · ‖h‖ (clamp_norm_factor).
    steps : int
        Adam steps of the anchor.
    lr : float
        Adam learning rate (v_lr).
    kl_weight : float
        Weight of the essence KL term.
    weight_decay : float
        Weight of ‖δ‖ / ‖h‖².
    prefixes : tuple of str
        Context prefixes prepended to the edit prompt (the key is ½ the bare prompt's + ½ the mean over them, as MEMIT).
    essence : str
        Essence prompt template (``"{}"`` = subject) for the KL term.

    References
    ----------
    Liu et al. (2026), FE code ``compute_z`` / ``precompute_z``; MEMIT hyper-parameters.
    """

    lam: float = 10.0
    clamp: float = 2.0
    steps: int = 20
    lr: float = 0.5
    kl_weight: float = 0.0625
    weight_decay: float = 0.5
    prefixes: tuple[str, ...] = ()
    essence: str = "{}"

    def __post_init__(self):
        self.lam = check_real(self.lam, "lam", lo=0.0)
        self.clamp = check_real(self.clamp, "clamp", lo=0.0, lo_open=True)
        self.steps = check_int(self.steps, "steps", low=1)
        self.lr = check_real(self.lr, "lr", lo=0.0, lo_open=True)
        self.kl_weight = check_real(self.kl_weight, "kl_weight", lo=0.0)
        self.weight_decay = check_real(self.weight_decay, "weight_decay", lo=0.0)
        if isinstance(self.prefixes, str) or not all(isinstance(p, str) for p in self.prefixes):
            raise ValueError(f"prefixes={self.prefixes!r} must be a tuple of strings")
        self.prefixes = tuple(self.prefixes)
        if "{}" not in self.essence:
            raise ValueError(f"essence={self.essence!r} must contain '{{}}' for the subject")


def _requests(requests) -> list[dict]:
    out = []
    if isinstance(requests, Mapping):
        requests = [requests]
    for i, r in enumerate(requests):
        r = dict(r) if isinstance(r, Mapping) else dict(getattr(r, "request", None) or {})
        for k in ("prompt", "subject", "target_new"):
            if k not in r:
                raise ValueError(f"request {i} lacks {k!r} (needs prompt with '{{}}', subject, target_new)")
        if "{}" not in r["prompt"]:
            raise ValueError(f"request {i}: prompt {r['prompt']!r} has no '{{}}' for the subject")
        out.append(r)
    if not out:
        raise ValueError("requests is empty")
    return out


def _contexts(tok, r, prefixes):
    """(seqs, subject positions, answer positions) of the prompt behind each prefix (and bare)."""
    seqs, spos = [], []
    for pre in ("",) + tuple(prefixes):
        text = (pre + " " if pre else "") + r["prompt"].format(r["subject"])
        ids, p = _prompt_ids(tok, text, r["subject"])
        seqs.append(ids)
        spos.append(p)
    return seqs, spos


def optimise_anchor(
    model, tok, request, layer: int, cfg: EditConfig, random_state: RandomState = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """Optimise ``δ`` added to block ``layer``'s output at the last subject token.

    Minimises ``−mean_j log P(o* | prefix_j ⊕ prompt; h + δ) + β_KL KL(P_δ ‖ P_0 on the essence) +
    β_wd ‖δ‖/‖h‖²`` with Adam, ``‖δ‖ ≤ clamp ‖h‖``, early stop when the total loss is below 0.05;
    ``cfg.steps`` loss evaluations and at most ``cfg.steps − 1`` Adam updates (the last pass
    only evaluates), as MEMIT's and the authors' ``compute_z``.

    Parameters
    ----------
    model, tok : causal LM and tokenizer
    request : dict
        ``prompt`` (with ``"{}"``), ``subject``, ``target_new``.
    layer : int
        Anchor layer.
    cfg : EditConfig
    random_state : unused (deterministic); kept for a uniform signature.

    Returns
    -------
    z : torch.Tensor, shape (d,)
        The anchor ``h + δ`` at the bare prompt.
    h : torch.Tensor, shape (d,)
        The unedited hidden state there.

    References
    ----------
    Meng et al. (2022), ROME ``compute_v``; Liu et al. (2026), FE ``compute_z``.
    """
    zs, hs = optimise_anchors(model, tok, [request], layer, cfg, [cfg.clamp])
    return zs[0][cfg.clamp], hs[0]


def optimise_anchors(
    model, tok, requests, layer: int, cfg: EditConfig, clamps: Sequence[float]
) -> tuple[list[dict[float, torch.Tensor]], list[torch.Tensor]]:
    """:func:`optimise_anchor` for several requests and clamps at once.

    Two pieces of work are shared, neither changing a number. (1) The Adam runs of two
    clamps ``c < c'`` are the same run until the first update after which ``‖δ‖ > c ‖h‖``
    (before it neither clamp acts), so one run is kept for every group of clamps that has
    not acted yet, and it splits, copying ``δ`` and Adam's state, when a clamp acts.
    (2) The runs of every request and clamp group advance together: each step is one
    forward and one backward pass of a batch holding every live run's prompts, each run
    with its own ``δ`` and its own Adam; a run stops on its own loss. Each anchor is bit for
    bit :func:`optimise_anchor`'s with ``cfg.clamp = c`` (tests/test_fwdedit.py checks it).

    Parameters
    ----------
    model, tok : causal LM and tokenizer
    requests : list of dict (or objects with a ``request`` dict)
        ``prompt`` (with ``"{}"``), ``subject``, ``target_new``.
    layer : int
        Anchor layer.
    cfg : EditConfig
        Every setting but ``clamp``.
    clamps : sequence of float
        The clamps ``c > 0``.

    Returns
    -------
    zs : list of dict float -> torch.Tensor, shape (d,)
        For each request, the anchor ``h + δ_c`` of each clamp.
    hs : list of torch.Tensor, shape (d,)
        For each request, the unedited hidden state at the last subject token of the bare prompt.

    References
    ----------
    Meng et al. (2022), ROME ``compute_v``; Liu et al. (2026), FE ``compute_z``.
    """
    if isinstance(clamps, (str, bytes)) or not len(clamps):
        raise ValueError(f"clamps={clamps!r} must be a non-empty sequence of numbers")
    clamps = sorted({check_real(c, "an entry of clamps", lo=0.0, lo_open=True) for c in clamps})
    reqs = _requests(requests)
    layer = _check_layers(model, [layer])[0]
    block = _blocks(model)[layer]
    prep = []  # per request: (seqs incl. essence, positions, last tokens, essence length, target id)
    for r in reqs:
        tgt = _target_id(tok, r["target_new"])
        seqs, spos = _contexts(tok, r, cfg.prefixes)
        ess_ids, ess_pos = _prompt_ids(tok, cfg.essence.format(r["subject"]), r["subject"])
        prep.append((seqs + [ess_ids], spos + [ess_pos], [len(q) - 1 for q in seqs], len(ess_ids), tgt))
    # only requests whose prompts pad to the same length share a batch: a row padded further
    # than in its own batch need not give the same last bits (tests/test_fwdedit.py)
    width = [max(len(q) for q in pr[0]) for pr in prep]
    if len(set(width)) > 1:
        zs, hs = [None] * len(reqs), [None] * len(reqs)
        for w in sorted(set(width)):
            idx = [j for j in range(len(reqs)) if width[j] == w]
            zg, hg = optimise_anchors(model, tok, [reqs[j] for j in idx], layer, cfg, clamps)
            for j, z, h in zip(idx, zg, hg):
                zs[j], hs[j] = z, h
        return zs, hs
    hs, p0s = [], []
    with torch.no_grad():
        seqs = [q for pr in prep for q in pr[0]]
        logits0, (h0,) = _run(model, tok, seqs, [q for pr in prep for q in pr[1]], [(block, "output", None, None)])
        o = 0
        for pr in prep:
            p0s.append(torch.log_softmax(logits0[o + len(pr[0]) - 1, pr[3] - 1], -1))  # (V,)
            hs.append(h0[o].detach())  # (d,) bare prompt
            o += len(pr[0])
    hns = [float(h.norm()) for h in hs]
    zs = [{} for _ in reqs]
    # live runs: [request, clamps still sharing this run, δ, its Adam]
    runs = []
    for j, h in enumerate(hs):
        delta = torch.zeros_like(h, requires_grad=True)
        runs.append((j, clamps, delta, torch.optim.Adam([delta], lr=cfg.lr)))
    for p in model.parameters():
        p.requires_grad_(False)
    try:
        for it in range(cfg.steps):
            if not runs:
                break
            seqs = [q for j, *_ in runs for q in prep[j][0]]
            pos = [q for j, *_ in runs for q in prep[j][1]]
            add = torch.cat([delta.expand(len(prep[j][0]), -1) for j, _, delta, _ in runs])  # (rows, d)
            logits, _ = _run(model, tok, seqs, pos, [(block, "output", add, None)])
            live, losses, o = [], [], 0
            for run in runs:
                j, group, delta, opt = run
                pseqs, _, last, n_ess, tgt = prep[j]
                lg = logits[o : o + len(pseqs)]
                o += len(pseqs)
                lp = torch.log_softmax(lg[torch.arange(len(last)), torch.tensor(last)], -1)  # (P, V)
                nll = -lp[:, tgt].mean()
                pe = torch.log_softmax(lg[-1, n_ess - 1], -1)
                kl = torch.sum(pe.exp() * (pe - p0s[j]))  # KL(P_delta || P_0), as MEMIT's compute_z
                loss = nll + cfg.kl_weight * kl + cfg.weight_decay * delta.norm() / hns[j] ** 2
                # MEMIT stops on the total loss; its compute_z's last pass only evaluates (steps - 1 updates)
                if float(loss.detach()) < 0.05 or it == cfg.steps - 1:
                    for c in group:
                        zs[j][c] = (hs[j] + delta).detach()
                    continue
                live.append(run)
                losses.append(loss)
            if not live:
                break
            for _, _, _, opt in live:
                opt.zero_grad()
            torch.stack(losses).sum().backward()  # each run's δ gets its own loss's gradient
            runs = []
            for j, group, delta, opt in live:
                opt.step()
                with torch.no_grad():
                    keep = []
                    for c in group:
                        lim = c * hns[j]
                        if delta.norm() > lim:  # this clamp acts: its run leaves the group
                            d_c = delta.detach().clone().requires_grad_(True)
                            opt_c = torch.optim.Adam([d_c], lr=cfg.lr)
                            opt_c.state[d_c] = {k: v.clone() for k, v in opt.state[delta].items()}
                            d_c.mul_(lim / d_c.norm())
                            runs.append((j, [c], d_c, opt_c))
                        else:
                            keep.append(c)
                if keep:
                    runs.append((j, keep, delta, opt))
    finally:
        for p in model.parameters():
            p.requires_grad_(True)
    return zs, hs


def _keys_and_hidden(model, tok, r, layer, prefixes, read_layer):
    """Key at ``layer`` (bare prompt ½, mean of the prefixed prompts ½), and the hidden state of ``read_layer`` at the bare prompt."""
    seqs, spos = _contexts(tok, r, prefixes)
    with torch.no_grad():
        _, (k, hh) = _run(
            model,
            tok,
            seqs,
            spos,
            [(mlp_projections(model)[layer], "input", None, None), (_blocks(model)[read_layer], "output", None, None)],
        )
    # MEMIT's compute_ks: the bare prompt weighs 1/2 and the mean over the prefixed prompts 1/2
    kk = k[0] if k.shape[0] == 1 else 0.5 * k[0] + 0.5 * k[1:].mean(0)
    return kk, hh[0]


# --------------------------------------------------------------------------- the editors
@dataclass
class EditResult:
    """An edited model and the per-layer residuals ‖z_l − h_l‖ after editing.

    Parameters
    ----------
    model : the edited copy
    layers : list of int
    residual : numpy.ndarray, shape (n_requests, n_layers)
        ‖target_l − h_l‖ measured on the edited model (FE: replayed targets; MEMIT: the
        anchor's share ``h_l + (z − h_L)/(L − i + 1)`` at the time of the layer's update).
    edit_cosine : numpy.ndarray, shape (n_requests, n_layers)
        The paper's Table 1 diagnostic: for each edited layer ``l_i`` (in editing order),
        ``cos(z_L − h_L^{before i}, h_L^{after i} − h_L^{before i})`` at the last subject token
        of the bare prompt, where ``h_L`` is the last edited layer's output, ``z_L`` its target
        (the anchor for MEMIT; the replayed target for FE) and before/after mean just before
        and just after layer ``l_i``'s update: how well the change that editing ``l_i`` induces
        at ``L`` points where ``L`` should go. The depth gap of column ``i`` is ``L − l_i``.

    References
    ----------
    Liu et al. (2026), FE, Sec. 4 (per-layer target accuracy) and Table 1; the authors'
    ``experiments/compare_h_z.py`` (experiment 2).
    """

    model: object
    layers: list[int]
    residual: np.ndarray = field(repr=False)
    edit_cosine: np.ndarray = field(default=None, repr=False)


def _anchor_key(model, r, layer, cfg):
    """The memo key of an anchor: the unedited model, the request, the layer and every setting but λ."""
    return (
        id(model),
        r["prompt"],
        r["subject"],
        r["target_new"],
        layer,
        cfg.clamp,
        cfg.steps,
        cfg.lr,
        cfg.kl_weight,
        cfg.weight_decay,
        cfg.prefixes,
        cfg.essence,
    )


def _cached_anchor(model, tok, r, layer, cfg, cache):
    """:func:`optimise_anchor`'s ``z``, memoised in ``cache`` (a dict or None) by everything it depends on but λ."""
    if cache is None:
        return optimise_anchor(model, tok, r, layer, cfg)[0]
    if not isinstance(cache, dict):
        raise TypeError(f"anchor_cache must be a dict or None, got {type(cache).__name__}")
    key = _anchor_key(model, r, layer, cfg)
    if key not in cache:
        cache[key] = optimise_anchor(model, tok, r, layer, cfg)[0]
    return cache[key]


def edit(
    model,
    tok,
    requests,
    layers,
    method: str,
    cfg: EditConfig,
    covs: Mapping[int, torch.Tensor],
    random_state: RandomState = 0,
    anchor_cache: dict | None = None,
) -> EditResult:
    """Apply a batch of edits with OneLayer, MEMIT, MEMIT without division or FE.

    Parameters
    ----------
    model, tok : causal LM and its tokenizer (the model is copied, never changed)
    requests : list of dict (or objects with a ``request`` dict)
        ``prompt`` with ``"{}"``, ``subject``, ``target_new``.
    layers : list of int
        Edited layers, increasing (OneLayer edits the last only).
    method : {"onelayer", "memit", "memit_nodiv", "fe"}
    cfg : EditConfig
    covs : mapping layer -> torch.Tensor (d_k, d_k)
        Key covariances (:func:`key_covariance` of :func:`collect_keys`).
    random_state : int, optional
        Unused (the anchor optimisation is deterministic); kept for a uniform signature.
    anchor_cache : dict, optional
        Memo of optimised anchors keyed by the unedited model, the request, the anchor
        layer and every setting but ``λ`` (which the anchor does not depend on); pass the
        same dict to several calls on the same model to optimise each anchor once. The
        model must not be changed in place between calls. It also keeps, under keys that
        start with a tag string, what else does not depend on λ: FE's replayed targets and
        the unedited model's hidden states of the residual.

    Returns
    -------
    EditResult

    References
    ----------
    Liu et al. (2026), FE, Algorithm 1 and ``FE-memit_main.py``; Meng et al. (2023), MEMIT Alg. 1.
    """
    if method not in METHODS:
        raise ValueError(f"method={method!r} must be one of {METHODS}")
    if not isinstance(cfg, EditConfig):
        raise TypeError(f"cfg must be an EditConfig, got {type(cfg).__name__}")
    reqs = _requests(requests)
    layers = _check_layers(model, layers)
    if method == "onelayer":
        layers = layers[-1:]
    for l in layers:
        if l not in covs:
            raise ValueError(f"covs has no covariance for layer {l}")
    for r in reqs:
        _prompt_ids(tok, r["prompt"].format(r["subject"]), r["subject"])
        _target_id(tok, r["target_new"])
    edited = copy.deepcopy(model).eval()
    projs, blocks = mlp_projections(edited), _blocks(edited)
    anchor_layer = layers[0] if method == "fe" else layers[-1]
    n, L = len(reqs), len(layers)
    zs = [_cached_anchor(model, tok, r, anchor_layer, cfg, anchor_cache) for r in reqs]
    # the requests' contexts go through the model together (tests/test_fwdedit.py checks the
    # batched editor against the request-by-request loop, bit for bit)
    bare = _bare_batch(tok, reqs)
    if method == "fe":  # forward replay on the clean model, bare prompt
        targets = []
        for j, r in enumerate(reqs):
            key = ("fe-replay", _anchor_key(model, r, anchor_layer, cfg), tuple(layers))
            if anchor_cache is None or key not in anchor_cache:
                with torch.no_grad():
                    spec = [(_blocks(model)[anchor_layer], "output", None, zs[j])]
                    spec += [(_blocks(model)[l], "output", None, None) for l in layers[1:]]
                    _, vals = _run(model, tok, [bare[0][j]], [bare[1][j]], spec)
                value = [zs[j]] + [v[0] for v in vals[1:]]
                if anchor_cache is None:
                    targets.append(value)
                    continue
                anchor_cache[key] = value
            targets.append(anchor_cache[key])
    ctx = [_contexts(tok, r, cfg.prefixes) for r in reqs]
    per = 1 + len(cfg.prefixes)  # contexts per request: bare prompt, then the prefixed ones
    # one batch per padded width (a request's contexts padded as in a batch of their own)
    width = [max(len(q) for q in c[0]) for c in ctx]
    groups = []
    for w in sorted(set(width)):
        idx = [j for j in range(n) if width[j] == w]
        cseqs, cpos = [q for j in idx for q in ctx[j][0]], [q for j in idx for q in ctx[j][1]]
        groups.append((idx, cseqs, cpos, _batch(tok, cseqs), (torch.arange(len(cseqs)), torch.tensor(cpos))))
    residual = np.zeros((n, L))
    edit_cos = np.zeros((n, L))
    z_last = torch.stack([t[-1] for t in targets] if method == "fe" else zs)  # (n, d)
    hL_after = _subject_hidden(edited, tok, reqs, layers[-1], bare=bare)  # (n, d)
    for i, l in enumerate(layers):
        hL_before = hL_after  # the model has not changed since
        read = l if method == "fe" else layers[-1]
        kh = [None] * n
        for idx, cseqs, cpos, cbatch, cindex in groups:
            with torch.no_grad():
                _, (k_all, h_all) = _run(
                    edited,
                    tok,
                    cseqs,
                    cpos,
                    [(projs[l], "input", None, None), (blocks[read], "output", None, None)],
                    batch=cbatch,
                    index=cindex,
                )
            for g, j in enumerate(idx):
                k = k_all[g * per : (g + 1) * per]  # (per, d_k)
                # MEMIT's compute_ks: the bare prompt weighs 1/2 and the mean over the prefixed prompts 1/2
                kh[j] = (k[0] if k.shape[0] == 1 else 0.5 * k[0] + 0.5 * k[1:].mean(0), h_all[g * per])
        K, R = [], []
        for j in range(n):
            k, h = kh[j]
            if method == "fe":
                res = targets[j][i] - h
            else:
                res = zs[j] - h
                if method == "memit":
                    res = res / (L - i)
            K.append(k)
            R.append(res)
        K, R = torch.stack(K), torch.stack(R)  # (n, d_k), (n, d)
        dW = layer_update(K, R, covs[l], cfg.lam)
        _apply(projs[l], dW)
        hL_after = _subject_hidden(edited, tok, reqs, layers[-1], bare=bare)
        edit_cos[:, i] = torch.nn.functional.cosine_similarity(z_last - hL_before, hL_after - hL_before, dim=-1).numpy()
    # residual of each layer's target after all edits (bare prompt alone, every layer read in
    # one pass; the unedited model's hidden states are memoised with the anchors)
    h_ed = [_bare_hidden(edited, tok, bare, j, layers) for j in range(n)]
    if method != "fe":
        h_0 = []
        for j, r in enumerate(reqs):
            key = ("clean-hidden", id(model), r["prompt"], r["subject"], tuple(layers))
            if anchor_cache is None or key not in anchor_cache:
                value = _bare_hidden(model, tok, bare, j, layers)
                if anchor_cache is None:
                    h_0.append(value)
                    continue
                anchor_cache[key] = value
            h_0.append(anchor_cache[key])
    for i in range(L):
        for j in range(n):
            h = h_ed[j][i]
            if method == "fe":
                tgt = targets[j][i]
            else:
                h0, hL0 = h_0[j][i], h_0[j][-1]
                share = (zs[j] - hL0) * ((i + 1) / L if method == "memit" else 1.0)
                tgt = h0 + share
            residual[j, i] = float((tgt - h).norm())
    return EditResult(edited, layers, residual, edit_cos)


def _bare_batch(tok, reqs):
    """``_run``'s arguments for the bare prompts of ``reqs`` at their last subject token."""
    seqs, pos = (list(t) for t in zip(*(_prompt_ids(tok, r["prompt"].format(r["subject"]), r["subject"]) for r in reqs)))
    return seqs, pos, _batch(tok, seqs), (torch.arange(len(seqs)), torch.tensor(pos))


@torch.no_grad()
def _bare_hidden(model, tok, bare, j, layers) -> list[torch.Tensor]:
    """Outputs of blocks ``layers`` at the last subject token of request ``j``'s bare prompt, run alone; each (d,)."""
    _, vals = _run(model, tok, [bare[0][j]], [bare[1][j]], [(_blocks(model)[l], "output", None, None) for l in layers])
    return [v[0] for v in vals]


def _run_bare(model, tok, bare, spec):
    """:func:`_run` on a :func:`_bare_batch`."""
    seqs, pos, batch, index = bare
    return _run(model, tok, seqs, pos, spec, batch=batch, index=index)


@torch.no_grad()
def _subject_hidden(model, tok, reqs, layer, bare=None) -> torch.Tensor:
    """Output of block ``layer`` at the last subject token of each bare prompt, shape (n, d).

    ``bare`` is :func:`_bare_batch` of ``reqs`` where the caller has it already.
    """
    seqs, pos, batch, index = bare if bare is not None else _bare_batch(tok, reqs)
    _, (hs,) = _run(model, tok, seqs, pos, [(_blocks(model)[layer], "output", None, None)], batch=batch, index=index)
    return hs.double()


def anchor_efficacy(model, tok, requests, layer: int, cfg: EditConfig, anchor_cache: dict | None = None) -> np.ndarray:
    """Whether the optimised anchor alone, written into block ``layer``'s output, makes the new object win.

    For each request the anchor ``z = h + δ`` of :func:`optimise_anchor` replaces the
    hidden state at the last subject token of the bare prompt in the *unedited* model;
    success is ``P(o* | prompt) > P(o_true | prompt)``. It bounds what any editor with
    its anchor at ``layer`` can reach, since the weight update only tries to produce ``z``.

    Parameters
    ----------
    model, tok : causal LM and tokenizer
    requests : list of dict (or objects with a ``request`` dict)
        ``prompt``, ``subject``, ``target_new`` and ``target_true``.
    layer : int
        Anchor layer.
    cfg : EditConfig
    anchor_cache : dict, optional
        As in :func:`edit`.

    Returns
    -------
    numpy.ndarray of bool, shape (n_requests,)

    References
    ----------
    Meng et al. (2022), ROME (causal tracing: a hidden state at the subject carries the fact);
    Liu et al. (2026), FE, Sec. 3 (the anchor as the ideal hidden state).
    """
    reqs = _requests(requests)
    layer = _check_layers(model, [layer])[0]
    for i, r in enumerate(reqs):
        if "target_true" not in r:
            raise ValueError(f"request {i} lacks 'target_true' (anchor efficacy compares the new object with it)")
    out = np.zeros(len(reqs), dtype=bool)
    for j, r in enumerate(reqs):
        z = _cached_anchor(model, tok, r, layer, cfg, anchor_cache)
        ids, p = _prompt_ids(tok, r["prompt"].format(r["subject"]), r["subject"])
        with torch.no_grad():
            logits, _ = _run(model, tok, [ids], [p], [(_blocks(model)[layer], "output", None, z)])
        lp = logits[0, len(ids) - 1]
        out[j] = bool(lp[_target_id(tok, r["target_new"])] > lp[_target_id(tok, r["target_true"])])
    return out
