"""Scoring edits: efficacy, generalisation and neighbourhood metrics, the Jacobian diagnostic
and the chapter's tune-then-test protocol over the editors of :mod:`icml26.fwdedit.editing`.

:func:`next_token_logprobs` and :func:`edit_metrics` score an edited model against the clean
one; :func:`jacobian_cosine` is the paper's cosine diagnostic of the replayed targets; and
:func:`tune_and_test` picks each editor's clamp on tuning edits and scores it on test edits.

References
----------
Liu, Liu, Deng, Teh and Lee, "From Backward Spreading to Forward Replay: Revisiting Target
Construction in LLM Parameter Editing", ICML 2026, arXiv:2605.00358. Meng et al.,
"Mass-Editing Memory in a Transformer" (MEMIT), ICLR 2023.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from icml26._common import RandomState, check_int, check_real, torch_generator

from .editing import (
    METHODS,
    EditConfig,
    _anchor_key,
    _batch,
    _blocks,
    _check_layers,
    _prompt_ids,
    _requests,
    _run,
    _target_id,
    edit,
    optimise_anchors,
)


# --------------------------------------------------------------------------- metrics
@torch.no_grad()
def next_token_logprobs(model, tok, prompts: Sequence[str]) -> torch.Tensor:
    """Log-probabilities of the next token after each prompt.

    Parameters
    ----------
    model, tok : causal LM and tokenizer
    prompts : sequence of str

    Returns
    -------
    torch.Tensor, shape (n, V)

    References
    ----------
    Standard next-token evaluation (ROME's CounterFact metrics).
    """
    if isinstance(prompts, str) or len(prompts) == 0:
        raise ValueError("prompts must be a non-empty list of strings")
    seqs = [tok(p)["input_ids"] for p in prompts]
    ids, mask = _batch(tok, seqs)
    logits = model(input_ids=ids, attention_mask=mask, use_cache=False).logits
    last = mask.sum(1) - 1
    return torch.log_softmax(logits[torch.arange(len(seqs)), last].double(), -1)


def edit_metrics(before, after, tok, cases) -> dict[str, float]:
    """Efficacy, paraphrase generalisation, neighbourhood accuracy and neighbourhood KL.

    Parameters
    ----------
    before, after : causal LMs (unedited, edited)
    tok : tokenizer
    cases : list of objects with ``request`` (dict with prompt, subject, target_new,
        target_true), ``paraphrase_prompts``, ``neighbourhood_prompts`` and
        ``neighbourhood_targets`` (e.g. :class:`icml26.tinylm.facts.EditCase`)

    Returns
    -------
    dict
        ``efficacy`` (share with P(new) > P(true) on the edit prompt), ``generalisation``
        (the same on the paraphrase prompts), ``validation`` (on ``validation_prompts`` if
        present), ``neighbourhood_acc`` (top-1 = true object after editing) and
        ``neighbourhood_kl`` (mean KL(P_before ‖ P_after) of the next token).

    References
    ----------
    Meng et al. (2022), ROME, CounterFact efficacy / paraphrase / neighbourhood scores;
    Liu et al. (2026), Table 1 (Eff., Gen., DKL, Top-1).
    """
    if not cases:
        raise ValueError("cases is empty")
    return _metrics(after, tok, cases, _neighbourhood_logprobs(before, tok, cases))


def _neighbourhood_logprobs(model, tok, cases) -> torch.Tensor:
    """:func:`next_token_logprobs` of ``model`` on every neighbourhood prompt of ``cases``, shape (m, V)."""
    return next_token_logprobs(model, tok, [p for c in cases for p in c.neighbourhood_prompts])


def _metrics(after, tok, cases, lb) -> dict[str, float]:
    """:func:`edit_metrics` given the unedited model's neighbourhood log-probabilities ``lb``."""
    groups = {
        "efficacy": lambda c: [c.request["prompt"].format(c.request["subject"])],
        "generalisation": lambda c: list(c.paraphrase_prompts),
        "validation": lambda c: list(getattr(c, "validation_prompts", ())),
    }
    prompts, spans, new, true = [], {}, {}, {}
    for name, prompts_of in groups.items():
        start, new[name], true[name] = len(prompts), [], []
        for c in cases:
            r = c.request
            for p in prompts_of(c):
                prompts.append(p)
                new[name].append(_target_id(tok, r["target_new"]))
                true[name].append(_target_id(tok, r["target_true"]))
        spans[name] = (start, len(prompts))
    nb = [p for c in cases for p in c.neighbourhood_prompts]
    nt = torch.tensor([_target_id(tok, t) for c in cases for t in c.neighbourhood_targets])
    out = {}
    for name, (a, b) in spans.items():
        if a == b:
            out[name] = float("nan")
            continue
        lp = next_token_logprobs(after, tok, prompts[a:b])
        idx = torch.arange(b - a)
        out[name] = float((lp[idx, torch.tensor(new[name])] > lp[idx, torch.tensor(true[name])]).double().mean())
    la = next_token_logprobs(after, tok, nb)
    out["neighbourhood_acc"] = float((la.argmax(-1) == nt).double().mean())
    out["neighbourhood_kl"] = float((lb.exp() * (lb - la)).sum(-1).mean())
    return out


# --------------------------------------------------------------------------- the Jacobian diagnostic
def jacobian_cosine(
    model,
    tok,
    prompts: Sequence[str],
    layer_from: int,
    layer_to: int,
    n_dirs: int = 8,
    random_state: RandomState = 0,
    method: str = "fd",
    eps: float = 1e-3,
) -> np.ndarray:
    """cos(J δ, δ) for random δ injected at block ``layer_from``'s output (last token).

    ``J = ∂h_{layer_to} / ∂h_{layer_from}`` at the prompt's last token (the position of the
    injection; cross-position effects are not counted).

    Parameters
    ----------
    model, tok : causal LM and tokenizer
    prompts : sequence of str
    layer_from, layer_to : int
        ``layer_from <= layer_to``.
    n_dirs : int
        Random Gaussian directions per prompt.
    random_state : int, optional
    method : {"fd", "jacobian"}
        Central finite differences with step ``eps`` (relative to ‖h‖), or the full
        Jacobian by reverse-mode autograd (``torch.func.jvp`` is not usable: CPU SDPA
        attention has no forward-mode derivative in torch 2.13).
    eps : float

    Returns
    -------
    numpy.ndarray, shape (len(prompts), n_dirs)

    References
    ----------
    Liu et al. (2026), FE, Theorems 1-2 and the layer-cosine measurement (Sec. 3.2).
    """
    lf, lt = _check_layers(model, [layer_from])[0], _check_layers(model, [layer_to])[0]
    if lf > lt:
        raise ValueError(f"layer_from={lf} must be <= layer_to={lt}")
    if method not in ("jacobian", "fd"):
        raise ValueError(f"method={method!r} must be 'fd' or 'jacobian'")
    n_dirs = check_int(n_dirs, "n_dirs", low=1)
    eps = check_real(eps, "eps", lo=0.0, lo_open=True)
    if isinstance(prompts, str) or not prompts:
        raise ValueError("prompts must be a non-empty list of strings")
    g = torch_generator(random_state)
    bf, bt = _blocks(model)[lf], _blocks(model)[lt]
    out = np.zeros((len(prompts), n_dirs))
    for i, p in enumerate(prompts):
        ids, pos = _prompt_ids(tok, p)
        with torch.no_grad():
            _, (h,) = _run(model, tok, [ids], [pos], [(bf, "output", None, None)])

        def f(delta, ids=ids, pos=pos):
            _, vals = _run(model, tok, [ids], [pos], [(bf, "output", delta[None], None), (bt, "output", None, None)])
            return vals[1][0]

        J = None
        for j in range(n_dirs):
            v = torch.randn(h.shape[-1], generator=g, dtype=h.dtype)  # (d,)
            if lf == lt:
                jv = v
            elif method == "jacobian":
                if J is None:
                    J = torch.autograd.functional.jacobian(f, torch.zeros_like(v))  # (d, d), reverse mode
                jv = J @ v
            else:
                s = eps * float(h.norm()) / float(v.norm())
                with torch.no_grad():
                    jv = (f(s * v) - f(-s * v)) / (2 * s)
            out[i, j] = float(torch.nn.functional.cosine_similarity(jv, v, dim=0))
    return out


SELECTIONS: tuple[str, ...] = ("with_kl", "without_kl")


def tune_and_test(
    model,
    tok,
    val_cases,
    test_cases,
    layers,
    covs,
    cfg: EditConfig,
    lams: Sequence[float] = (10.0, 1000.0),
    clamps: Sequence[float] = (1.0, 4.0),
    methods: Sequence[str] = METHODS,
    anchor_cache: dict | None = None,
    selection: str = "with_kl",
) -> list[dict]:
    """Choose (λ, clamp) per method on validation edits, then evaluate on test edits.

    Validation score (``selection="with_kl"``): mean of efficacy, validation-template
    generalisation, neighbourhood accuracy and ``exp(−neighbourhood KL)`` on ``val_cases``
    (the held-out template is never used here), so a setting that buys efficacy by
    disturbing unedited prompts loses; ``"without_kl"`` drops the KL term (the mean of the
    other three, the rule before the authors' neighbourhood KL was added). Ties go to the
    first setting in grid order.

    Parameters
    ----------
    model, tok : causal LM and tokenizer
    val_cases, test_cases : lists of edit cases (see :func:`edit_metrics`)
    layers : list of int
    covs : mapping layer -> covariance
    cfg : EditConfig
        Other settings (prefixes, steps, ...); ``lam``/``clamp`` are swept.
    lams, clamps : sequences of float
        The grid.
    methods : sequence of str
    anchor_cache : dict, optional
        Memo of anchors (see :func:`edit`); a fresh one is used when None, so each anchor is
        optimised once per (request, layer, clamp) across λ and methods (all the clamps of a
        request at once, :func:`optimise_anchors`). It also keeps each grid point's edit
        metrics, so a second call on the same grid (another ``selection``) edits nothing again.
    selection : {"with_kl", "without_kl"}
        The validation score (above).

    Returns
    -------
    list of dict
        One row per method: ``method``, chosen ``lam``, ``clamp``, validation ``score``, the
        test metrics of :func:`edit_metrics` and ``residual`` (mean per layer, a list).

    Raises
    ------
    TypeError
        For ``lams``, ``clamps`` or ``methods`` given as one string, or grid entries that
        are not numbers.
    ValueError
        For empty case lists or grids, a negative ``lam``, a non-positive ``clamp``, an
        unknown method or an unknown ``selection``.

    References
    ----------
    Liu et al. (2026), FE (hyper-parameters per method; README: FE needs a smaller clamp).
    """
    import dataclasses

    if not val_cases or not test_cases:
        raise ValueError("val_cases and test_cases must be non-empty")
    if selection not in SELECTIONS:
        raise ValueError(f"selection={selection!r}: use one of {', '.join(SELECTIONS)}")
    for name, seq in (("lams", lams), ("clamps", clamps), ("methods", methods)):
        if isinstance(seq, (str, bytes)):
            raise TypeError(f"{name}={seq!r} is a single string; give a list (it would be read character by character)")
    if not lams or not clamps:
        raise ValueError("lams and clamps must be non-empty")
    for lam in lams:
        check_real(lam, "an entry of lams", lo=0.0)
    for c in clamps:
        check_real(c, "an entry of clamps", lo=0.0, lo_open=True)
    bad = [m for m in methods if m not in METHODS]
    if bad or not methods:
        raise ValueError(f"methods {bad or list(methods)!r} are not editing methods; use some of {', '.join(METHODS)}")
    if anchor_cache is None:
        anchor_cache = {}
    layers = _check_layers(model, layers)

    def anchor_layer(m):  # FE optimises its anchor at the first edited layer, the others at the last
        return layers[0] if m == "fe" else layers[-1]

    # what does not depend on the grid point is computed once: the unedited model's
    # neighbourhood log-probabilities, and every anchor of a request and layer for all the
    # clamps at once (optimise_anchors shares their common start)
    lb_val = _neighbourhood_logprobs(model, tok, val_cases)
    for al in sorted({anchor_layer(m) for m in methods}):
        _prefill_anchors(model, tok, val_cases, al, cfg, clamps, anchor_cache)
    best = {}
    for m in methods:
        for lam in lams:
            for c in clamps:
                c_cfg = dataclasses.replace(cfg, lam=float(lam), clamp=float(c))
                met = _edit_and_score(model, tok, val_cases, layers, m, c_cfg, covs, anchor_cache, lb_val)[0]
                terms = [met["efficacy"], met["validation"], met["neighbourhood_acc"]]
                if selection == "with_kl":
                    terms.append(np.exp(-met["neighbourhood_kl"]))
                score = float(np.mean(terms))
                if m not in best or score > best[m][0]:
                    best[m] = (score, float(lam), float(c))
    lb_test = _neighbourhood_logprobs(model, tok, test_cases)
    for al in sorted({anchor_layer(m) for m in methods}):
        _prefill_anchors(
            model, tok, test_cases, al, cfg, sorted({best[m][2] for m in methods if anchor_layer(m) == al}), anchor_cache
        )
    rows = []
    for m in methods:
        c_cfg = dataclasses.replace(cfg, lam=best[m][1], clamp=best[m][2])
        met, residual, edit_cos = _edit_and_score(model, tok, test_cases, layers, m, c_cfg, covs, anchor_cache, lb_test)
        rows.append(
            dict(
                method=m,
                lam=best[m][1],
                clamp=best[m][2],
                score=best[m][0],
                **met,
                residual=residual.mean(0).tolist(),
                edit_cosine=edit_cos.mean(0).tolist(),
            )
        )
    return rows


def _edit_and_score(model, tok, cases, layers, method, cfg, covs, cache, lb):
    """:func:`edit` then :func:`_metrics`; (metrics, residual, edit_cosine), memoised in ``cache``.

    The key holds everything the edit depends on (the unedited model, the cases, the layers,
    the method, every setting, the covariances); the entry keeps the covariances it was
    computed with, so that their ids stay theirs while it lives. A second selection rule
    over the same grid (``tune_and_test(selection="without_kl")``) then edits nothing twice.
    """
    edited_layers = layers[-1:] if method == "onelayer" else layers
    key = (
        "edit-metrics",
        id(model),
        method,
        tuple(layers),
        cfg.lam,
        cfg.clamp,
        cfg.steps,
        cfg.lr,
        cfg.kl_weight,
        cfg.weight_decay,
        cfg.prefixes,
        cfg.essence,
        tuple(id(covs[l]) for l in edited_layers if l in covs),
        repr(
            [
                (
                    sorted(_requests([c])[0].items()),
                    tuple(getattr(c, "paraphrase_prompts", ())),
                    tuple(getattr(c, "validation_prompts", ())),
                    tuple(c.neighbourhood_prompts),
                    tuple(c.neighbourhood_targets),
                )
                for c in cases
            ]
        ),
    )
    if key in cache:
        return cache[key][0]
    res = edit(model, tok, cases, layers, method, cfg, covs, anchor_cache=cache)
    value = (_metrics(res.model, tok, cases, lb), res.residual, res.edit_cosine)
    cache[key] = (value, [covs[l] for l in edited_layers if l in covs])
    return value


def _prefill_anchors(model, tok, cases, layer, cfg, clamps, cache) -> None:
    """Put the anchors of every case at ``layer`` for every clamp into ``cache`` (those not there yet)."""
    import dataclasses

    todo = []
    for r in _requests(cases):
        missing = [
            float(c) for c in clamps if _anchor_key(model, r, layer, dataclasses.replace(cfg, clamp=float(c))) not in cache
        ]
        if not missing:
            continue
        todo.append((r, missing))
    if not todo:
        return
    # requests missing the same clamps go through one batched optimisation
    for missing in sorted({tuple(m) for _, m in todo}):
        rs = [r for r, m in todo if tuple(m) == missing]
        zs, _ = optimise_anchors(model, tok, rs, layer, cfg, missing)
        for r, z in zip(rs, zs):
            for c in missing:
                cache[_anchor_key(model, r, layer, dataclasses.replace(cfg, clamp=c))] = z[c]
