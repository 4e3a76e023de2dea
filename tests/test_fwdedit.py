"""icml26.fwdedit against exact oracles, on two differently sized GPT-2 configs."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from badinput import covers, exempt, rejects
from transformers import GPT2LMHeadModel

from icml26 import fwdedit as fe
from icml26.tinylm.facts import EditCase
from icml26.tinylm.lab import gpt2_config
from icml26.tinylm.tokenizer import build_word_tokenizer

WORDS = ["zora", "bemi", "kalu", "tiva", "lives", "in", "the", "home", "of", "is", "ra", "pu", "fo", "nemo", "sako"]
CONFIGS = {"small": dict(n_layer=3, n_embd=32, n_head=2), "wider": dict(n_layer=4, n_embd=48, n_head=4, n_inner=96)}
REQS = [
    {"prompt": "{} lives in", "subject": "zora", "target_new": "nemo", "target_true": "sako"},
    {"prompt": "{} lives in", "subject": "bemi", "target_new": "sako", "target_true": "nemo"},
]


def _model(name):
    tok = build_word_tokenizer(WORDS)
    torch.manual_seed(0)
    model = GPT2LMHeadModel(gpt2_config(len(tok), n_positions=16, **CONFIGS[name])).eval()
    return model, tok


@pytest.fixture(params=sorted(CONFIGS))
def lm(request):
    return _model(request.param)


def _covs(model, tok, layers):
    texts = ["the home of zora is nemo", "bemi lives in sako", "kalu lives in nemo", "tiva lives in ra pu fo"]
    return {l: fe.key_covariance(fe.collect_keys(model, tok, l, texts)) for l in layers}


def test_key_covariance_equals_direct_sum():
    g = torch.Generator().manual_seed(1)
    K = torch.randn(7, 5, generator=g, dtype=torch.float64)
    direct = sum(torch.outer(k, k) for k in K) / 7
    assert torch.allclose(fe.key_covariance(K), direct, atol=1e-12)


def test_collected_keys_covariance_matches_manual(lm):
    model, tok = lm
    proj = fe.mlp_projections(model)[1]
    seen = []
    h = proj.register_forward_pre_hook(lambda m, a: seen.append(a[0][0]))
    with torch.no_grad():
        model(**tok(["bemi lives in sako"], return_tensors="pt"))
    h.remove()
    keys = fe.collect_keys(model, tok, 1, ["bemi lives in sako"])
    assert torch.allclose(keys, seen[0])
    assert torch.allclose(fe.key_covariance(keys), seen[0].T @ seen[0] / seen[0].shape[0], atol=1e-6)


def test_rank_one_update_maps_key_to_value_exactly(lm):
    model, _ = lm
    proj = fe.mlp_projections(model)[0]
    d_k = proj.weight.shape[0]  # Conv1D: (d_k, d)
    g = torch.Generator().manual_seed(2)
    k = torch.randn(1, d_k, generator=g)
    v_star = torch.randn(1, proj.weight.shape[1], generator=g)
    with torch.no_grad():
        before = proj(k)
    dW = fe.layer_update(k.double(), (v_star - before).double(), torch.eye(d_k, dtype=torch.float64), lam=0.0)
    fe._apply(proj, dW.float())
    with torch.no_grad():
        assert torch.allclose(proj(k), v_star, atol=1e-4)


def test_layer_update_is_the_regularised_least_squares_solution():
    g = torch.Generator().manual_seed(3)
    K, R = torch.randn(4, 6, generator=g, dtype=torch.float64), torch.randn(4, 3, generator=g, dtype=torch.float64)
    C = fe.key_covariance(torch.randn(20, 6, generator=g, dtype=torch.float64))
    dW = fe.layer_update(K, R, C, lam=2.5)
    expect = R.T @ K @ torch.linalg.inv(K.T @ K + 2.5 * C)
    assert torch.allclose(dW, expect, atol=1e-10)
    # gradient of ||ΔW K - R||² + λ tr(ΔW C ΔWᵀ) vanishes
    grad = (dW @ K.T - R.T) @ K + 2.5 * dW @ C
    assert grad.abs().max() < 1e-9


def test_one_layer_memit_and_fe_coincide(lm):
    model, tok = lm
    covs = _covs(model, tok, [1])
    cfg = fe.EditConfig(lam=5.0, clamp=2.0, steps=4, prefixes=("ra", "pu fo"))
    a = fe.edit(model, tok, REQS, [1], "memit", cfg, covs)
    b = fe.edit(model, tok, REQS, [1], "fe", cfg, covs)
    c = fe.edit(model, tok, REQS, [1], "memit_nodiv", cfg, covs)
    wa, wb, wc = (fe.mlp_projections(x.model)[1].weight for x in (a, b, c))
    assert torch.equal(wa, wb) and torch.equal(wa, wc)
    assert not torch.equal(wa, fe.mlp_projections(model)[1].weight)


def test_single_request_single_layer_without_regulariser_hits_its_target(lm):
    model, tok = lm
    covs = _covs(model, tok, [1])
    res = fe.edit(model, tok, REQS[:1], [1], "fe", fe.EditConfig(lam=0.0, steps=4, prefixes=()), covs)
    assert res.residual.shape == (1, 1) and res.residual[0, 0] < 1e-4


def test_every_method_runs_and_the_original_model_is_untouched(lm):
    model, tok = lm
    n = model.config.n_layer
    layers = list(range(n - 1))
    covs = _covs(model, tok, layers)
    w0 = [p.weight.clone() for p in fe.mlp_projections(model)]
    case = EditCase(REQS[0], ("the home of zora is",), ("the home of zora is",), ("kalu lives in",), ("nemo",))
    for m in fe.METHODS:
        res = fe.edit(model, tok, REQS, layers, m, fe.EditConfig(steps=3, prefixes=("ra",)), covs)
        assert res.residual.shape == (2, 1 if m == "onelayer" else len(layers))
        assert np.isfinite(res.residual).all()
        met = fe.edit_metrics(model, res.model, tok, [case])
        assert set(met) == {"efficacy", "generalisation", "validation", "neighbourhood_acc", "neighbourhood_kl"}
        assert 0 <= met["efficacy"] <= 1 and met["neighbourhood_kl"] >= -1e-9
    assert all(torch.equal(a, p.weight) for a, p in zip(w0, fe.mlp_projections(model)))
    same = fe.edit_metrics(model, model, tok, [case])
    assert abs(same["neighbourhood_kl"]) < 1e-12
    rows = fe.tune_and_test(
        model, tok, [case], [case], layers, covs, fe.EditConfig(steps=2), lams=(1.0,), clamps=(1.0,), methods=("memit", "fe")
    )
    assert [r["method"] for r in rows] == ["memit", "fe"]
    # a one-setting grid with the validation edits as test edits: the score is computed from the row's own metrics
    plain = fe.tune_and_test(
        model,
        tok,
        [case],
        [case],
        layers,
        covs,
        fe.EditConfig(steps=2),
        lams=(1.0,),
        clamps=(1.0,),
        methods=("memit",),
        selection="without_kl",
    )[0]
    with_kl = rows[0]
    three = [with_kl["efficacy"], with_kl["validation"], with_kl["neighbourhood_acc"]]
    assert with_kl["score"] == pytest.approx(np.mean(three + [np.exp(-with_kl["neighbourhood_kl"])]), abs=1e-12)
    assert plain["score"] == pytest.approx(np.mean(three), abs=1e-12)


def test_jacobian_cosine_fd_matches_autograd_and_is_one_at_gap_zero(lm):
    model, tok = lm
    n = model.config.n_layer
    prompts = ["zora lives in", "the home of bemi is"]
    same = fe.jacobian_cosine(model, tok, prompts, n - 1, n - 1, n_dirs=2)
    assert np.allclose(same, 1.0)
    fd = fe.jacobian_cosine(model, tok, prompts, 0, n - 1, n_dirs=3, method="fd", random_state=4)
    ex = fe.jacobian_cosine(model, tok, prompts, 0, n - 1, n_dirs=3, method="jacobian", random_state=4)
    assert fd.shape == (2, 3) and np.abs(fd - ex).max() < 1e-3


@covers(
    "fwdedit.editing.mlp_projections",
    "fwdedit.editing.edit",
    "fwdedit.editing.optimise_anchor",
    "fwdedit.editing.collect_keys",
    "fwdedit.evaluation.jacobian_cosine",
    "fwdedit.editing.EditConfig",
)
def test_bad_models_layers_and_subjects_are_rejected():
    model, tok = _model("small")
    covs = _covs(model, tok, [0, 1])
    rejects(fe.mlp_projections, torch.nn.Linear(3, 3), match="blocks")
    rejects(fe.edit, torch.nn.Linear(3, 3), tok, REQS, [0], "fe", fe.EditConfig(), covs, match="blocks")
    rejects(fe.edit, model, tok, REQS, [0, 7], "fe", fe.EditConfig(), covs, match="layer index 7")
    rejects(fe.edit, model, tok, REQS, [1, 0], "fe", fe.EditConfig(), covs, match="increasing")
    bad = [{"prompt": "{} lives in", "subject": "unknownname", "target_new": "nemo"}]
    rejects(fe.edit, model, tok, bad, [0], "fe", fe.EditConfig(), covs, match="unknownname")
    rejects(
        fe.edit,
        model,
        tok,
        [{"prompt": "{} lives in", "subject": "zora", "target_new": "qqq"}],
        [0],
        "fe",
        fe.EditConfig(),
        covs,
        match="qqq",
    )
    rejects(
        fe.edit,
        model,
        tok,
        [{"prompt": "lives in", "subject": "zora", "target_new": "nemo"}],
        [0],
        "fe",
        fe.EditConfig(),
        covs,
        match="'{}'",
    )
    rejects(fe.edit, model, tok, [{"prompt": "{} lives in"}], [0], "fe", fe.EditConfig(), covs, match="subject")
    rejects(fe.edit, model, tok, REQS, [0], "rome", fe.EditConfig(), covs, match="rome")
    rejects(fe.edit, model, tok, REQS, [0], "fe", "cfg", covs, match="EditConfig")
    rejects(fe.edit, model, tok, REQS, [2], "fe", fe.EditConfig(), covs, match="no covariance for layer 2")
    rejects(fe.edit, model, tok, [], [0], "fe", fe.EditConfig(), covs, match="empty")
    rejects(fe.optimise_anchor, model, tok, REQS[0], 3, fe.EditConfig(), match="layer index 3")
    rejects(fe.collect_keys, model, tok, -1, ["zora"], match="layer")
    rejects(fe.collect_keys, model, tok, 0, [], match="non-empty")
    rejects(fe.jacobian_cosine, model, tok, ["zora lives in"], 2, 1, match="layer_from=2")
    rejects(fe.jacobian_cosine, model, tok, ["zora lives in"], 0, 5, match="layer index 5")
    rejects(fe.jacobian_cosine, model, tok, ["zora lives in"], 0, 1, method="jvp", match="jvp")
    rejects(fe.EditConfig, lam=-1.0, match="lam")
    rejects(fe.EditConfig, clamp=0.0, match="clamp")
    rejects(fe.EditConfig, steps=0, match="steps")
    rejects(fe.EditConfig, prefixes="ra", match="prefixes")
    rejects(fe.EditConfig, essence="no subject", match="essence")


@covers("fwdedit.editing.key_covariance", "fwdedit.editing.layer_update")
def test_bad_algebra_input_is_rejected():
    K = torch.randn(3, 4)
    rejects(fe.key_covariance, torch.randn(4), match="keys")
    rejects(fe.key_covariance, torch.full((2, 2), float("nan")), match="NaN")
    rejects(fe.layer_update, K, torch.randn(2, 5), torch.eye(4), 1.0, match="residuals")
    rejects(fe.layer_update, K, torch.randn(3, 5), torch.eye(3), 1.0, match="cov")
    rejects(fe.layer_update, K, torch.randn(3, 5), torch.eye(4), -1.0, match="lam")


@covers("fwdedit.editing.layer_update")
def test_layer_update_rejects_nan_and_numpy_input():
    # NaN keys used to give a NaN update (key_covariance checked, layer_update did not)
    K, R, C = torch.randn(3, 4), torch.randn(3, 5), torch.eye(4)
    nan = K.clone()
    nan[1, 2] = float("nan")
    rejects(fe.layer_update, nan, R, C, 1.0, match="keys contain NaN")
    rejects(fe.layer_update, nan, R, C, 0.0, match="keys contain NaN")
    rejects(fe.layer_update, K, torch.full((3, 5), float("inf")), C, 1.0, match="residuals contain NaN or inf")
    rejects(fe.layer_update, K, R, torch.full((4, 4), float("nan")), 1.0, match="cov contain NaN")
    # numpy arrays used to raise AttributeError: 'numpy.ndarray' object has no attribute 'double'
    rejects(fe.layer_update, K.numpy(), R, C, 1.0, match="keys must be a torch.Tensor, got ndarray")
    rejects(fe.layer_update, K, R.numpy(), C, 1.0, match="residuals must be a torch.Tensor")


@covers("fwdedit.evaluation.edit_metrics", "fwdedit.evaluation.next_token_logprobs", "fwdedit.evaluation.tune_and_test")
def test_bad_evaluation_input_is_rejected():
    model, tok = _model("small")
    rejects(fe.edit_metrics, model, model, tok, [], match="empty")
    rejects(fe.next_token_logprobs, model, tok, "zora", match="list")
    rejects(fe.tune_and_test, model, tok, [], [], [0], {}, fe.EditConfig(), match="non-empty")


@covers("fwdedit.evaluation.tune_and_test")
def test_tune_and_test_refuses_a_string_grid_before_editing():
    # lams="10" used to be read as the grid (1.0, 0.0), methods="fe" as the methods 'f', 'e'
    model, tok = _model("small")
    case = EditCase(REQS[0], ("the home of zora is",), ("the home of zora is",), ("kalu lives in",), ("nemo",))
    args = (model, tok, [case], [case], [0], _covs(model, tok, [0]), fe.EditConfig(steps=1))
    rejects(fe.tune_and_test, *args, lams="10", match="lams='10' is a single string")
    rejects(fe.tune_and_test, *args, clamps="4", match="clamps='4' is a single string")
    rejects(fe.tune_and_test, *args, methods="fe", match="methods='fe' is a single string")
    rejects(fe.tune_and_test, *args, methods=["rome"], match="not editing methods")
    rejects(fe.tune_and_test, *args, lams=[-1.0], match="lams")
    rejects(fe.tune_and_test, *args, clamps=[0.0], match="clamps")
    rejects(fe.tune_and_test, *args, selection="kl", match="selection='kl'")


exempt("fwdedit.editing.EditResult", "a data record returned by fwdedit.edit")


def test_public_callables_have_numpydoc_sections():
    from docsections import undocumented

    assert undocumented("icml26.fwdedit") == []
    for mod in ("lab", "facts", "tokenizer"):
        assert undocumented(f"icml26.tinylm.{mod}") == []


def test_lambda_zero_multilayer_oracle(lm):
    """λ = 0, one request, bare prompt: FE leaves zero residual at every edited layer; MEMIT lands on its anchor."""
    model, tok = lm
    layers = list(range(model.config.n_layer - 1))
    covs = _covs(model, tok, layers)
    cfg = fe.EditConfig(lam=0.0, steps=4, prefixes=())
    fwd = fe.edit(model, tok, REQS[:1], layers, "fe", cfg, covs)
    assert fwd.residual.shape == (1, len(layers)) and fwd.residual.max() < 1e-3
    memit = fe.edit(model, tok, REQS[:1], layers, "memit", cfg, covs)
    assert memit.residual[0, -1] < 1e-3
    z, _ = fe.optimise_anchor(model, tok, REQS[0], layers[-1], cfg)
    _, h = fe._keys_and_hidden(memit.model, tok, fe._requests(REQS[:1])[0], layers[-1], (), layers[-1])
    assert torch.allclose(h, z, atol=1e-3)


def test_keys_weight_the_bare_prompt_half(lm):
    """MEMIT's compute_ks: the bare prompt weighs ½ and the mean over the prefixed prompts ½."""
    model, tok = lm
    r = fe._requests(REQS[:1])[0]
    k_all, _ = fe._keys_and_hidden(model, tok, r, 1, ("ra", "pu fo", "ra pu"), 1)
    k_bare, _ = fe._keys_and_hidden(model, tok, r, 1, (), 1)
    k_pre = torch.stack([fe._keys_and_hidden(model, tok, r, 1, (p,), 1)[0] * 2 - k_bare for p in ("ra", "pu fo", "ra pu")])
    assert torch.allclose(k_all, 0.5 * k_bare + 0.5 * k_pre.mean(0), atol=1e-5)
    assert not torch.allclose(k_all, (k_bare + k_pre.sum(0)) / 4, atol=1e-4)


_PIPELINE = """
import hashlib, sys, torch
sys.path.insert(0, {here!r})
import test_fwdedit as t
from icml26 import fwdedit as fe
model, tok = t._model("small")
layers = [0, 1]
covs = t._covs(model, tok, layers)
out = []
for m in fe.METHODS:
    res = fe.edit(model, tok, t.REQS, layers, m, fe.EditConfig(lam=5.0, steps=4, prefixes=("ra",)), covs)
    w = torch.cat([p.weight.detach().flatten() for p in fe.mlp_projections(res.model)])
    out.append(hashlib.sha256(w.numpy().tobytes()).hexdigest() + ":" + repr(res.residual.round(12).tolist()))
print("|".join(out))
"""


def test_editing_pipeline_is_identical_in_two_processes():
    """The chapter's editing pipeline gives bit-identical edits in two fresh processes (no unseeded state)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    here = str(Path(__file__).parent)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([here, os.environ.get("PYTHONPATH", "")]))
    code = _PIPELINE.format(here=here)
    runs = [
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300, check=True).stdout
        for _ in range(2)
    ]
    assert runs[0].strip() and runs[0] == runs[1]


def test_anchor_takes_steps_minus_one_updates(lm):
    """MEMIT's compute_z evaluates the loss `steps` times and updates δ at most `steps − 1` times."""
    model, tok = lm
    z1, h1 = fe.optimise_anchor(model, tok, REQS[0], 1, fe.EditConfig(steps=1, prefixes=()))
    assert torch.equal(z1, h1)  # one pass: no update at all
    z2, h2 = fe.optimise_anchor(model, tok, REQS[0], 1, fe.EditConfig(steps=2, lr=0.1, clamp=1e3, prefixes=()))
    # one Adam step from δ = 0 moves every coordinate by lr (sign of the gradient); a second would not
    assert np.allclose((z2 - h2).abs().numpy(), 0.1, atol=1e-5)


def test_collect_keys_keeps_every_token_by_default(lm):
    model, tok = lm
    texts = ["the home of zora is nemo kalu lives in tiva ra pu"] * 400  # 12 words + bos each: 5,200 > 4,096
    n_tokens = sum(len(tok(t)["input_ids"]) for t in texts)
    assert n_tokens > 4096
    assert fe.collect_keys(model, tok, 0, texts).shape[0] == n_tokens
    assert fe.collect_keys(model, tok, 0, texts, max_tokens=100).shape[0] == 100


def test_edit_cosine_is_one_where_the_update_is_exact(lm):
    """λ = 0, one request, bare prompt: the last layer's own update moves h_L exactly onto z − h_L, cos = 1;
    the other columns are cosines in [−1, 1]."""
    model, tok = lm
    layers = list(range(model.config.n_layer - 1))
    covs = _covs(model, tok, layers)
    cfg = fe.EditConfig(lam=0.0, steps=4, prefixes=())
    for m in ("memit", "memit_nodiv", "onelayer"):
        res = fe.edit(model, tok, REQS[:1], layers, m, cfg, covs)
        assert res.edit_cosine.shape == res.residual.shape
        assert abs(res.edit_cosine[0, -1] - 1.0) < 1e-4
        assert (np.abs(res.edit_cosine) <= 1 + 1e-9).all()


def test_edit_cosine_matches_a_hand_built_two_layer_memit(lm):
    """Column 0 of MEMIT's edit_cosine equals the cosine computed by editing the first layer alone by hand."""
    model, tok = lm
    layers, covs = [0, 1], _covs(model, tok, [0, 1])
    cfg = fe.EditConfig(lam=3.0, steps=4, prefixes=("ra",))
    res = fe.edit(model, tok, REQS, layers, "memit", cfg, covs)
    reqs = fe._requests(REQS)
    zs = torch.stack([fe.optimise_anchor(model, tok, r, 1, cfg)[0] for r in reqs]).double()
    before = fe._subject_hidden(model, tok, reqs, 1)
    K, R = zip(*[fe._keys_and_hidden(model, tok, r, 0, cfg.prefixes, 1) for r in reqs])
    R = (zs - torch.stack(R).double()) / 2
    edited = __import__("copy").deepcopy(model)
    fe._apply(fe.mlp_projections(edited)[0], fe.layer_update(torch.stack(K), R.float(), covs[0], cfg.lam))
    after = fe._subject_hidden(edited, tok, reqs, 1)
    want = torch.nn.functional.cosine_similarity(zs - before, after - before, dim=-1).numpy()
    assert np.allclose(res.edit_cosine[:, 0], want, atol=1e-5)


def test_anchor_efficacy_without_updates_is_the_clean_models_preference(lm):
    model, tok = lm
    reqs = REQS + [{"prompt": "{} lives in", "subject": "kalu", "target_new": "nemo", "target_true": "sako"}]
    lp = fe.next_token_logprobs(model, tok, [r["prompt"].format(r["subject"]) for r in reqs])
    want = np.array(
        [
            float(lp[i, fe._target_id(tok, r["target_new"])]) > float(lp[i, fe._target_id(tok, r["target_true"])])
            for i, r in enumerate(reqs)
        ]
    )
    got = fe.anchor_efficacy(model, tok, reqs, 1, fe.EditConfig(steps=1, prefixes=()))
    assert got.dtype == bool and (got == want).all()
    # subject last, anchor at the last block: z feeds the unembedding directly, so it reaches the new object
    last = [dict(r, prompt="the home of {}") for r in REQS]
    n = model.config.n_layer - 1
    assert fe.anchor_efficacy(
        model, tok, last, n, fe.EditConfig(steps=60, lr=0.1, clamp=8.0, kl_weight=0.0, weight_decay=0.0, prefixes=())
    ).all()


def test_anchor_cache_changes_nothing_but_the_work(lm):
    model, tok = lm
    layers, covs = [0, 1], _covs(model, tok, [0, 1])
    cfg = fe.EditConfig(lam=5.0, steps=4, prefixes=("ra",))
    cache = {}
    for m in fe.METHODS:
        a = fe.edit(model, tok, REQS, layers, m, cfg, covs)
        b = fe.edit(model, tok, REQS, layers, m, cfg, covs, anchor_cache=cache)
        for pa, pb in zip(fe.mlp_projections(a.model), fe.mlp_projections(b.model)):
            assert torch.equal(pa.weight, pb.weight)
    anchors = [k for k in cache if not isinstance(k[0], str)]  # the rest: replayed targets, clean hidden states
    assert len(anchors) == 2 * len(REQS)  # anchors at layer 1 (OneLayer, MEMIT, no division) and layer 0 (FE)


def test_selection_score_counts_neighbourhood_kl():
    model, tok = _model("small")
    case = EditCase(REQS[0], ("bemi lives in",), ("the home of zora is",), ("kalu lives in",), ("sako",))
    layers, covs = [0, 1], _covs(model, tok, [0, 1])
    cfg = fe.EditConfig(lam=2.0, clamp=1.0, steps=3)
    (row,) = fe.tune_and_test(model, tok, [case], [case], layers, covs, cfg, lams=(2.0,), clamps=(1.0,), methods=["memit"])
    met = fe.edit_metrics(model, fe.edit(model, tok, [case], layers, "memit", cfg, covs).model, tok, [case])
    want = np.mean([met["efficacy"], met["validation"], met["neighbourhood_acc"], np.exp(-met["neighbourhood_kl"])])
    assert met["neighbourhood_kl"] > 0 and row["score"] == pytest.approx(want, abs=1e-12)
    assert len(row["edit_cosine"]) == len(layers)


@covers("fwdedit.editing.anchor_efficacy")
def test_bad_anchor_efficacy_input_is_rejected():
    model, tok = _model("small")
    no_true = [{"prompt": "{} lives in", "subject": "zora", "target_new": "nemo"}]
    rejects(fe.anchor_efficacy, model, tok, no_true, 0, fe.EditConfig(), match="target_true")
    rejects(fe.anchor_efficacy, model, tok, REQS, 9, fe.EditConfig(), match="layer index 9")
    rejects(fe.anchor_efficacy, model, tok, REQS, 0, fe.EditConfig(), anchor_cache=[], match="anchor_cache must be a dict")


# --------------------------------------------------------------------------- the batched forms against their loops
def _anchor_loop(model, tok, request, layer, cfg):
    """optimise_anchor as it was written before the batched form: one request, one clamp, one run."""
    r = fe._requests([request])[0]
    block = fe._blocks(model)[layer]
    tgt = fe._target_id(tok, r["target_new"])
    seqs, spos = fe._contexts(tok, r, cfg.prefixes)
    last = [len(q) - 1 for q in seqs]
    ess_ids, ess_pos = fe._prompt_ids(tok, cfg.essence.format(r["subject"]), r["subject"])
    allseqs, allpos = seqs + [ess_ids], spos + [ess_pos]
    with torch.no_grad():
        logits0, (h0,) = fe._run(model, tok, allseqs, allpos, [(block, "output", None, None)])
        p0 = torch.log_softmax(logits0[-1, len(ess_ids) - 1], -1)
    h = h0[0].detach()
    hn = float(h.norm())
    delta = torch.zeros_like(h, requires_grad=True)
    opt = torch.optim.Adam([delta], lr=cfg.lr)
    for p in model.parameters():
        p.requires_grad_(False)
    for it in range(cfg.steps):
        logits, _ = fe._run(model, tok, allseqs, allpos, [(block, "output", delta.expand(len(allseqs), -1), None)])
        lp = torch.log_softmax(logits[torch.arange(len(seqs)), torch.tensor(last)], -1)
        pe = torch.log_softmax(logits[-1, len(ess_ids) - 1], -1)
        loss = -lp[:, tgt].mean() + cfg.kl_weight * torch.sum(pe.exp() * (pe - p0)) + cfg.weight_decay * delta.norm() / hn**2
        if float(loss.detach()) < 0.05 or it == cfg.steps - 1:
            break
        opt.zero_grad()
        loss.backward()
        opt.step()
        with torch.no_grad():
            lim = cfg.clamp * hn
            if delta.norm() > lim:
                delta.mul_(lim / delta.norm())
    for p in model.parameters():
        p.requires_grad_(True)
    return (h + delta).detach()


def test_batched_anchors_are_bit_identical_to_one_run_per_request_and_clamp(lm):
    """optimise_anchors (requests × clamp groups in one batch, runs split where a clamp acts) = the loop, bit for bit."""
    model, tok = lm
    reqs = REQS + [{"prompt": "the home of {} is", "subject": "kalu", "target_new": "sako"}]
    cfg = fe.EditConfig(steps=6, lr=0.5, prefixes=("ra", "pu fo"))
    clamps = (0.05, 0.3, 1.0, 50.0)  # from one that acts at the first update to one that never acts
    zs, hs = fe.optimise_anchors(model, tok, reqs, 1, cfg, clamps)
    acted = set()
    for j, r in enumerate(reqs):
        for c in clamps:
            want = _anchor_loop(model, tok, r, 1, fe.EditConfig(**{**cfg.__dict__, "clamp": c}))
            assert torch.equal(zs[j][c], want), (j, c)
            acted.add(bool((zs[j][c] - hs[j]).norm() >= c * hs[j].norm() * (1 - 1e-6)))
        assert torch.equal(fe.optimise_anchor(model, tok, r, 1, fe.EditConfig(**{**cfg.__dict__, "clamp": 0.3}))[0], zs[j][0.3])
    assert acted == {True, False}  # the grid holds clamps that act and clamps that do not


@covers("fwdedit.editing.optimise_anchors")
def test_bad_optimise_anchors_input_is_rejected():
    model, tok = _model("small")
    cfg = fe.EditConfig(steps=2)
    rejects(fe.optimise_anchors, model, tok, REQS, 0, cfg, [], match="clamps")
    rejects(fe.optimise_anchors, model, tok, REQS, 0, cfg, "1.0", match="clamps")
    rejects(fe.optimise_anchors, model, tok, REQS, 0, cfg, [1.0, 0.0], match="clamps")
    rejects(fe.optimise_anchors, model, tok, REQS, 9, cfg, [1.0], match="layer index 9")
    rejects(fe.optimise_anchors, model, tok, [], 0, cfg, [1.0], match="empty")


def test_batched_edit_is_bit_identical_to_the_request_by_request_loop(lm):
    """edit's keys of all requests in one batch per layer = one _keys_and_hidden pass per request, bit for bit."""
    model, tok = lm
    layers, covs = [0, 1], _covs(model, tok, [0, 1])
    cfg = fe.EditConfig(lam=3.0, steps=4, prefixes=("ra", "pu fo"))
    reqs = fe._requests(REQS + [{"prompt": "the home of {} is", "subject": "kalu", "target_new": "sako"}])
    for method in ("memit", "fe"):
        res = fe.edit(model, tok, reqs, layers, method, cfg, covs)
        edited = __import__("copy").deepcopy(model)
        zs = [fe.optimise_anchor(model, tok, r, layers[0] if method == "fe" else layers[-1], cfg)[0] for r in reqs]
        tg = []
        for r, z in zip(reqs, zs):  # forward replay, one request at a time
            ids, p = fe._prompt_ids(tok, r["prompt"].format(r["subject"]), r["subject"])
            with torch.no_grad():
                _, vals = fe._run(
                    model,
                    tok,
                    [ids],
                    [p],
                    [(fe._blocks(model)[0], "output", None, z), (fe._blocks(model)[1], "output", None, None)],
                )
            tg.append([z, vals[1][0]])
        for i, l in enumerate(layers):
            K, R = [], []
            for j, r in enumerate(reqs):
                k, h = fe._keys_and_hidden(edited, tok, r, l, cfg.prefixes, l if method == "fe" else layers[-1])
                K.append(k)
                R.append(tg[j][i] - h if method == "fe" else (zs[j] - h) / (len(layers) - i))
            fe._apply(fe.mlp_projections(edited)[l], fe.layer_update(torch.stack(K), torch.stack(R), covs[l], cfg.lam))
        for pa, pb in zip(fe.mlp_projections(res.model), fe.mlp_projections(edited)):
            assert torch.equal(pa.weight, pb.weight), method


def test_metrics_in_one_batch_equal_the_metrics_group_by_group(lm):
    """_metrics (the unedited log-probabilities passed in) gives edit_metrics' numbers, group by group."""
    model, tok = lm
    cases = [
        EditCase(REQS[0], ("bemi lives in", "kalu lives in"), ("the home of zora is",), ("tiva lives in",), ("sako",)),
        EditCase(REQS[1], ("zora lives in",), ("the home of bemi is",), ("kalu lives in", "ra lives in"), ("nemo", "pu")),
    ]
    edited = fe.edit(model, tok, cases, [0, 1], "memit", fe.EditConfig(lam=2.0, steps=3), _covs(model, tok, [0, 1])).model
    got = fe.edit_metrics(model, edited, tok, cases)

    def succ(prompts, rs):
        lp = fe.next_token_logprobs(edited, tok, prompts)
        i = torch.arange(len(prompts))
        new = torch.tensor([fe._target_id(tok, r["target_new"]) for r in rs])
        true = torch.tensor([fe._target_id(tok, r["target_true"]) for r in rs])
        return float((lp[i, new] > lp[i, true]).double().mean())

    want = {
        "efficacy": succ([c.request["prompt"].format(c.request["subject"]) for c in cases], [c.request for c in cases]),
        "generalisation": succ(
            [p for c in cases for p in c.paraphrase_prompts], [c.request for c in cases for _ in c.paraphrase_prompts]
        ),
    }
    nb = [p for c in cases for p in c.neighbourhood_prompts]
    lb, la = fe.next_token_logprobs(model, tok, nb), fe.next_token_logprobs(edited, tok, nb)
    nt = torch.tensor([fe._target_id(tok, t) for c in cases for t in c.neighbourhood_targets])
    want["neighbourhood_acc"] = float((la.argmax(-1) == nt).double().mean())
    want["neighbourhood_kl"] = float((lb.exp() * (lb - la)).sum(-1).mean())
    for k, v in want.items():
        assert np.isclose(got[k], v, rtol=1e-6, atol=1e-9), (k, got[k], v)
    assert got["neighbourhood_kl"] > 0


def test_tune_and_test_memo_reuses_edits_without_changing_rows(lm):
    """A second selection rule over the same grid and cache re-scores memoised edits; the rows equal a fresh run's."""
    model, tok = lm
    case = EditCase(REQS[0], ("bemi lives in",), ("the home of zora is",), ("kalu lives in",), ("sako",))
    layers, covs = [0, 1], _covs(model, tok, [0, 1])
    cfg = fe.EditConfig(steps=3, prefixes=("ra",))
    kw = dict(lams=(1.0, 10.0), clamps=(0.5, 2.0), methods=["memit", "fe"])
    cache = {}
    fe.tune_and_test(model, tok, [case], [case], layers, covs, cfg, anchor_cache=cache, **kw)
    n = len(cache)
    again = fe.tune_and_test(model, tok, [case], [case], layers, covs, cfg, anchor_cache=cache, selection="without_kl", **kw)
    assert len(cache) == n  # nothing new was edited or optimised
    fresh = fe.tune_and_test(model, tok, [case], [case], layers, covs, cfg, selection="without_kl", **kw)
    assert again == fresh


def test_layer_update_cholesky_equals_the_general_solve():
    """The LAPACK Cholesky path = torch's LU solve to rounding; an indefinite cov falls back to the general solve."""
    g = torch.Generator().manual_seed(5)
    K, R = torch.randn(30, 48, generator=g, dtype=torch.float64), torch.randn(30, 7, generator=g, dtype=torch.float64)
    C = fe.key_covariance(torch.randn(200, 48, generator=g, dtype=torch.float64))
    for lam, ridge in ((100.0, 0.0), (0.5, 0.25), (0.0, 1.0)):
        A = K.T @ K + lam * C + ridge * torch.eye(48, dtype=torch.float64)
        want = torch.linalg.solve(A, K.T @ R).T
        assert torch.allclose(fe.layer_update(K, R, C, lam, ridge=ridge), want, rtol=1e-10, atol=1e-12)
    bad = torch.diag(torch.tensor([1.0, -3.0, 2.0], dtype=torch.float64))  # indefinite: Cholesky fails
    k, r = torch.randn(1, 3, generator=g, dtype=torch.float64), torch.randn(1, 2, generator=g, dtype=torch.float64)
    want = torch.linalg.solve(k.T @ k + 2.0 * bad, k.T @ r).T
    assert torch.allclose(fe.layer_update(k, r, bad, 2.0), want, rtol=1e-10, atol=1e-12)
    assert fe.layer_update(k.float(), r.float(), bad.float(), 2.0).dtype == torch.float32
