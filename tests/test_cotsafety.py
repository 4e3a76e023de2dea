"""Tests of icml26.cotsafety and icml26.tinylm.traces against exact identities and hand-built models."""

from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from transformers import GPT2Config, GPT2LMHeadModel

from icml26 import cotsafety as C
from icml26.tinylm import traces as T
from icml26.tinylm.tokenizer import build_word_tokenizer, word_vocabulary

KW = dict(request_len=4, trace_len=4, n_objects=6, n_payloads=4, n_fillers=4, n_paraphrases=2)


def tiny(n_layer=2, n_head=2, n_embd=16, vocab=64, seed=0):
    torch.manual_seed(seed)
    cfg = GPT2Config(
        n_layer=n_layer,
        n_head=n_head,
        n_embd=n_embd,
        vocab_size=vocab,
        n_positions=32,
        bos_token_id=2,
        eos_token_id=3,
        pad_token_id=0,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
    )
    with contextlib.redirect_stderr(io.StringIO()):
        return GPT2LMHeadModel(cfg).eval()


@pytest.fixture(scope="module")
def data():
    ts = T.make_traces(24, random_state=0, **KW)
    tok = build_word_tokenizer(word_vocabulary(T.trace_corpus(400, random_state=1, **KW)))
    return ts, tok


# ---------------------------------------------------------------- traces
def test_traces_layout_and_classes():
    ts = T.make_traces(50, random_state=3, **KW)
    n = KW["request_len"] + KW["trace_len"] + 5
    for text, uns, pay in zip(ts.texts, ts.unsafe, ts.payload):
        w = text.split()
        assert len(w) == n and w[-1] == "<refuse>" and w[-2] == "<answer>"
        assert w[2 : 2 + KW["request_len"]].count(pay) == 1
        assert (w[ts.copy_index] == pay) == bool(uns)
        assert (int(w[1][4:]) < 4) == bool(uns)  # the first half of the kinds are unsafe
    assert T.make_traces(50, random_state=3, **KW).texts == ts.texts
    assert T.trace_corpus(50, random_state=3, **KW) == ts.texts
    safe, unsafe = ts.split()
    assert len(safe) + len(unsafe) == 50 and len(unsafe) == int(ts.unsafe.sum())


# ---------------------------------------------------------------- Jacobian identities
@settings(max_examples=20, deadline=None, derandomize=True)
@given(st.integers(1, 40), st.integers(0, 2**31 - 1))
def test_jacobian_identities_random_p(n, s):
    p = np.random.default_rng(s).dirichlet(np.ones(n))
    J = C.softmax_jacobian(p)
    assert torch.allclose(J, J.T) and float(J.sum(-1).abs().max()) < 1e-12
    ev = torch.linalg.eigvalsh(J)
    assert float(ev[0]) > -1e-12
    lam, v = C.jacobian_lambda_max(p, n_iter=500, random_state=s)
    assert abs(lam - float(ev[-1])) < 1e-6


def test_jacobian_closed_forms():
    assert C.jacobian_lambda_max(np.eye(7)[2], random_state=0)[0] == pytest.approx(0.0, abs=1e-14)
    for n in (1, 2, 3, 10, 64):
        lam, _ = C.jacobian_lambda_max(np.full(n, 1.0 / n), random_state=0)
        assert lam == pytest.approx(0.0 if n == 1 else 1.0 / n, abs=1e-9)
    assert C.jacobian_lambda_max(np.r_[0.5, 0.5], random_state=0)[0] == pytest.approx(0.5, abs=1e-9)
    # against autograd's Jacobian of softmax at log p
    p = torch.tensor(np.random.default_rng(0).dirichlet(np.ones(6)))
    ref = torch.autograd.functional.jacobian(lambda z: torch.softmax(z, -1), p.log())
    assert torch.allclose(C.softmax_jacobian(p), ref, atol=1e-12)


def test_head_metrics_on_hand_made_attention():
    # every row one-hot (a perfect copy head): B1 = 0 for every row of the original;
    # the bilinear resize keeps one-hot rows when the size equals T
    A = torch.eye(5)
    b1, v, b3 = C.head_jacobian_metrics(A, size=5, n_rows=5, random_state=0)
    assert b1 == pytest.approx(0.0, abs=1e-12) and b3 == 0.0
    # every row a two-way split: B1 = 1/2 and a rank-one spectrum (effective rank 1)
    A = torch.zeros(4, 4)
    A[:, 0] = A[:, 1] = 0.5
    b1, v, b3 = C.head_jacobian_metrics(A, size=4, n_rows=4, random_state=0)
    assert b1 == pytest.approx(0.5, abs=1e-9) and b3 == pytest.approx(1.0, abs=1e-9)
    assert abs(abs(v[0]) - 2**-0.5) < 1e-6 and abs(v[0] + v[1]) < 1e-6
    # uniform rows over n: B1 = 1/n, effective rank n - 1 (n - 1 equal eigenvalues 1/n and one 0)
    b1, _, b3 = C.head_jacobian_metrics(torch.full((6, 6), 1 / 6), size=6, n_rows=6, random_state=0)
    assert b1 == pytest.approx(1 / 6, abs=1e-9) and b3 == pytest.approx(5.0, abs=1e-6)


def test_power_scale_and_key_heads():
    g = np.array([0.1, -0.4, 0.05, 0.0])
    g2, gamma = C.power_scale(g)
    assert gamma >= 1.0 and np.allclose(np.abs(g2).max(), 0.4) and np.all(np.sign(g2) == np.sign(g))
    assert C.power_scale(np.zeros(3))[1] == 1.0
    n, L, H, S = 3, 2, 3, 4
    z = np.zeros((n, L, H))
    safe = C.HeadMetrics(layers=[0, 1], b1=z.copy(), b2=np.zeros((n, L, H, S)), b3=z.copy(), b2_centroid=z.copy())
    b1 = z.copy()
    b1[:, 0, 2] = 0.3  # unsafe B1 larger at head 2 of layer 0, head 0 of layer 1
    b1[:, 1, 0] = 0.1
    unsafe = C.HeadMetrics(layers=[0, 1], b1=b1, b2=np.zeros((n, L, H, S)), b3=z.copy(), b2_centroid=z.copy())
    k = C.key_heads(safe, unsafe)
    assert k["B1"] == [(0, 2), (1, 0)] and k["B2"] == [] and k["union"] == [(0, 2), (1, 0)]


def test_key_head_summary_log_ratios_and_trace_noise_closed_form():
    n, L, H, S = 3, 2, 2, 2
    b1 = np.zeros((n, L, H))
    b1[:, 0, 1] = [1.0, 2.0, 3.0]  # mean 2
    b1[:, 1, 0] = 4.0
    b3 = np.full((n, L, H), 5.0)
    b2 = np.zeros((n, L, H, S))
    b2[:, 0, 1] = [[1, 0], [1, 0], [0, 1]]  # |cos| over pairs: 1, 0, 0 -> 1/3
    b2[:, 1, 0] = [[1, 0], [-1, 0], [1, 0]]  # |cos| = 1 for every pair
    m = C.HeadMetrics(layers=[3, 5], b1=b1, b2=b2, b3=b3, b2_centroid=np.zeros((n, L, H)))
    out = C.key_head_summary(m, [(3, 1), (5, 0)])
    assert out == pytest.approx({"B1": 3.0, "B2": (1 / 3 + 1) / 2, "B3": 5.0})
    half = C.HeadMetrics(layers=[3, 5], b1=b1 / 2, b2=b2, b3=b3 * 2, b2_centroid=np.zeros((n, L, H)))
    r = C.key_head_log_ratios(half, m, [(3, 1), (5, 0)])
    assert r == pytest.approx({"B1": np.log(0.5), "B2": 0.0, "B3": np.log(2.0)})
    # two readings of four models: Var(x) = 5/3, Var(x - x')/2 = 2/3, share 0.4
    assert C.trace_noise_share([0, 1, 2, 3], [1, 0, 3, 2]) == pytest.approx(0.4)
    assert C.trace_noise_share([0, 1, 2], [0, 1, 2]) == 0.0
    assert C.trace_noise_share([1, 1, 1], [0, 1, 2]) is None


# ---------------------------------------------------------------- models: identities and planted heads
@pytest.mark.parametrize("shape", [dict(n_layer=2, n_head=2, n_embd=16), dict(n_layer=3, n_head=4, n_embd=32)])
def test_temperature_one_and_no_heads_are_the_identity(data, shape):
    ts, tok = data
    m = tiny(vocab=len(tok), **shape)
    x = tok(ts.texts[:4], return_tensors="pt")["input_ids"]
    with torch.no_grad():
        base = m(x).logits
        with C.head_temperature(m, [(0, 1), (1, 0)], 1.0):
            same = m(x).logits
        with C.head_temperature(m, [(0, 1)], 0.5):
            other = m(x).logits
        after = m(x).logits
    assert torch.allclose(base, same, atol=1e-5) and torch.equal(base, after)
    assert m.config._attn_implementation == "sdpa"
    # oracle: a temperature on head (0, 1) equals dividing that head's query weights by it
    dh = shape["n_embd"] // shape["n_head"]
    m2 = tiny(vocab=len(tok), **shape)
    m2.load_state_dict(m.state_dict())
    with torch.no_grad():
        m2.transformer.h[0].attn.c_attn.weight[:, dh : 2 * dh] /= 0.5
        m2.transformer.h[0].attn.c_attn.bias[dh : 2 * dh] /= 0.5
        ref = m2(x).logits
    assert torch.allclose(other, ref, atol=1e-5) and not torch.equal(other, base)


@pytest.mark.parametrize("shape", [dict(n_layer=2, n_head=2, n_embd=16), dict(n_layer=3, n_head=4, n_embd=32)])
def test_ablation_zeroes_exactly_the_planted_head(data, shape):
    """A head whose value projection is zero contributes nothing: ablating it changes nothing,
    and ablating a live head changes the output exactly as zeroing its c_proj columns does."""
    ts, tok = data
    m = tiny(vocab=len(tok), **shape)
    d = shape["n_embd"]
    dh = d // shape["n_head"]
    with torch.no_grad():
        m.transformer.h[1].attn.c_attn.weight[:, 2 * d : 2 * d + dh] = 0  # value of head 0, layer 1
        m.transformer.h[1].attn.c_attn.bias[2 * d : 2 * d + dh] = 0
    texts, idx = ts.texts, ts.copy_index
    out = C.head_ablation(m, tok, texts, idx)
    assert out["rate_drop"].shape == (shape["n_layer"], shape["n_head"])
    assert abs(out["prob_drop"][1, 0]) < 1e-9 and out["rate_drop"][1, 0] == 0
    # reference: delete head (0, 1) by zeroing its rows of c_proj in a copy
    m2 = tiny(vocab=len(tok), **shape)
    m2.load_state_dict(m.state_dict())
    with torch.no_grad():
        m2.transformer.h[0].attn.c_proj.weight[dh : 2 * dh, :] = 0
    r2, p2 = C.copy_rate(m2, tok, texts, idx)
    assert out["base_prob"] - out["prob_drop"][0, 1] == pytest.approx(p2, abs=1e-6)
    together = C.head_ablation(m, tok, texts, idx, heads=[(0, 1)])
    assert together["prob_drop"] == pytest.approx(out["prob_drop"][0, 1], abs=1e-9)


def test_copy_rate_on_a_hand_built_copier(data):
    """A one-layer model whose only head attends to the payload and whose readout is the
    embedding copies perfectly; ablating that head destroys it."""
    ts, tok = data
    vocab = tok.get_vocab()
    m = tiny(n_layer=1, n_head=1, n_embd=len(tok), vocab=len(tok))
    V = len(tok)
    pay_ids = [i for w, i in vocab.items() if w.startswith("pay")]
    with torch.no_grad():
        for p in m.parameters():
            p.zero_()
        m.transformer.wte.weight.copy_(torch.eye(V) * 10)  # one-hot embeddings (lm_head is tied)
        ln = [m.transformer.h[0].ln_1, m.transformer.h[0].ln_2, m.transformer.ln_f]
        for norm in ln:
            norm.weight.fill_(1.0)
        W = m.transformer.h[0].attn.c_attn.weight  # (d, 3d): x @ W -> q, k, v
        W[:, :V] = 0
        W[:, 2 * V :] = torch.eye(V)  # value = input
        for i in pay_ids:
            W[i, V + i] = 0
        m.transformer.h[0].attn.c_attn.bias[:V] = 1.0  # constant query ...
        for i in pay_ids:
            W[i, V : 2 * V] = 0
            W[i, V + 0] = 40.0  # ... meets a key that only payload words have
        m.transformer.h[0].attn.c_proj.weight.copy_(torch.eye(V) * 50)
    _, unsafe = ts.split()
    rate, prob = C.copy_rate(m, tok, unsafe, ts.copy_index)
    assert rate == 1.0
    assert C.head_ablation(m, tok, unsafe, ts.copy_index)["rate_drop"][0, 0] == 1.0


@pytest.mark.parametrize("shape", [dict(n_layer=2, n_head=2, n_embd=16), dict(n_layer=3, n_head=4, n_embd=32)])
def test_pipeline_runs_on_two_sizes(data, shape):
    ts, tok = data
    m = tiny(vocab=len(tok), **shape)
    safe, unsafe = ts.split()
    g = C.layer_angle_gap(m, tok, safe, unsafe, n_pairs=10, width=2, random_state=0)
    assert g.gap.shape == (shape["n_layer"],) and len(g.window) == 2
    assert np.isclose(g.gap[g.window].mean(), max(g.gap[i : i + 2].mean() for i in range(shape["n_layer"] - 1)))
    hm = C.attention_head_metrics(m, tok, safe[:3], g.window, size=8, query_from=KW["request_len"] + 2, random_state=0)
    assert hm.b1.shape == (3, 2, shape["n_head"]) and hm.b2.shape == (3, 2, shape["n_head"], 8)
    assert np.all(hm.b1 <= 0.5 + 1e-9) and np.all(hm.b1 >= -1e-12)
    assert np.allclose(np.linalg.norm(hm.b2, axis=-1), 1.0, atol=1e-6)
    # the same text in both groups: every gap zero
    same = C.attention_head_metrics(m, tok, [safe[0]] * 2, [0], size=8, random_state=0)
    assert np.allclose(same.b1[0], same.b1[1])


def test_angle_gap_identical_groups_have_zero_nn_angle(data):
    ts, tok = data
    m = tiny(vocab=len(tok))
    t = ts.texts[0]
    g = C.layer_angle_gap(m, tok, [t, t], [t], n_pairs=5, width=1, random_state=0)
    assert np.allclose(g.theta_nn, 0, atol=1e-4) and np.all(g.gap == 0) and np.all(g.cos_gap == 0)


def test_head_metrics_find_a_difference_planted_at_a_known_head(data):
    # the same texts through two models that differ in one head only (its queries scaled by 5, i.e. its attention
    # sharpened; in the last layer, so nothing downstream moves): the metric gaps and the key heads sit at that head
    import copy

    ts, tok = data
    L, H, E = 3, 4, 32
    a_model = tiny(n_layer=L, n_head=H, n_embd=E, vocab=len(tok), seed=1)
    b_model = copy.deepcopy(a_model)
    planted = (L - 1, 2)
    d = E // H
    with torch.no_grad():
        attn = b_model.transformer.h[planted[0]].attn.c_attn
        attn.weight[:, planted[1] * d : (planted[1] + 1) * d] *= 5.0  # the query block of that head
        attn.bias[planted[1] * d : (planted[1] + 1) * d] *= 5.0
    safe, _ = ts.split()
    kw = dict(size=8, query_from=KW["request_len"] + 2, random_state=0)
    a = C.attention_head_metrics(a_model, tok, safe[:4], list(range(L)), **kw)
    b = C.attention_head_metrics(b_model, tok, safe[:4], list(range(L)), **kw)
    gap = np.abs(a.b1.mean(0) - b.b1.mean(0))  # (layers, heads)
    assert np.unravel_index(np.argmax(gap), gap.shape) == planted and gap[planted] > 1e-5
    assert np.delete(gap.ravel(), planted[0] * H + planted[1]).max() < 1e-9  # every other head untouched
    keys = C.key_heads(a, b)
    assert keys["B1"] == [planted] and planted in keys["union"]


# ---------------------------------------------------------------- authors' window rule, token position, whole pipeline
def test_cosine_window_hand_oracle_and_bad_input():
    g = np.array([0.1, 0.4, 0.3, 0.05])
    assert C.cosine_window(g, 1) == [1]
    assert C.cosine_window(g, 2) == [1, 2]  # means 0.25, 0.35, 0.175
    assert C.cosine_window(g, 3) == [0, 1, 2]  # means 0.267, 0.25
    assert C.cosine_window(g, 4) == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="width=5 exceeds the 4 layers"):
        C.cosine_window(g, 5)
    with pytest.raises(ValueError, match="cos_gap must be a finite"):
        C.cosine_window(np.array([0.1, np.nan]), 1)


def test_angle_gap_at_a_position_reads_that_token(data):
    # causal attention: two texts that differ only after token p have the same states at p, so the NM angle there is
    # zero at every layer, while at the last token (the default) it is not
    ts, tok = data
    m = tiny(n_layer=3, vocab=len(tok), seed=2)
    words = ts.texts[0].split()
    p = len(words) - 3
    other = next(w for t in ts.texts for w in t.split() if w != words[p + 1] and not w.startswith("<"))
    alt = " ".join(words[: p + 1] + [other] + words[p + 2 :])
    kw = dict(n_pairs=6, width=1, random_state=0)
    at_p = C.layer_angle_gap(m, tok, [ts.texts[0]] * 2, [alt], position=p, **kw)
    last = C.layer_angle_gap(m, tok, [ts.texts[0]] * 2, [alt], **kw)
    same_as_last = C.layer_angle_gap(m, tok, [ts.texts[0]] * 2, [alt], position=len(words) - 1, **kw)
    assert np.allclose(at_p.theta_nm, 0, atol=1e-4) and np.all(last.theta_nm > 1e-3)
    np.testing.assert_array_equal(same_as_last.theta_nm, last.theta_nm)
    with pytest.raises(ValueError, match="position=99 is past the end"):
        C.layer_angle_gap(m, tok, [ts.texts[0]] * 2, [alt], position=99, **kw)


def test_analyse_model_is_the_pipeline_step_by_step(data):
    ts, tok = data
    m = tiny(n_layer=3, n_head=2, vocab=len(tok), seed=4)
    kw = dict(
        n_pairs=8,
        width=2,
        n_metric=3,
        size=8,
        n_rows=6,
        n_iter=10,
        query_from=KW["request_len"] + 2,
        taus=(0.5,),
        n_random=3,
        random_state=5,
        perturb_random_state=6,
    )
    r = C.analyse_model(m, tok, ts, **kw)
    safe, unsafe = ts.split()
    g = C.layer_angle_gap(m, tok, safe, unsafe, n_pairs=8, width=2, random_state=5)
    assert r["gap"].window == g.window and np.array_equal(r["gap"].gap, g.gap)
    assert r["base_rate"] == C.copy_rate(m, tok, unsafe, ts.copy_index)[0]
    assert r["cos_window"] == C.cosine_window(g.cos_gap, 2)
    assert r["in_window"] == (r["top_layer"] in g.window)
    assert r["overlap"] == len(set(r["key"]) & set(r["truth"]))
    # the authors' width 3 is the whole of a 3-layer model
    assert r["sens"]["authors"]["width"] == 3 and r["sens"]["authors"]["window"] == [0, 1, 2]
    assert r["sens"]["authors"]["in_window"]
    dk, dr = r["pert"][0.5]
    assert dr.shape == (3,) and np.isfinite(dk)
    # same seeds, same result
    r2 = C.analyse_model(m, tok, ts, **kw)
    assert r2["pert"][0.5][0] == dk and np.array_equal(r2["pert"][0.5][1], dr) and r2["key_all"] == r["key_all"]


# ---------------------------------------------------------------- mean ablation and the perturbation control (issue #35)
def test_mean_ablation_leaves_a_constant_head_alone_and_zero_ablation_does_not(data):
    """A head whose output is the same on every text (value weights zero, value bias not) carries
    nothing about the text: mean ablation changes nothing, zero ablation removes its constant."""
    ts, tok = data
    m = tiny(n_layer=2, n_head=2, n_embd=16, vocab=len(tok), seed=2)
    d, dh = 16, 8
    with torch.no_grad():
        m.transformer.h[0].attn.c_attn.weight[:, 2 * d : 2 * d + dh] = 0  # value weights of head 0, layer 0
        m.transformer.h[0].attn.c_attn.bias[2 * d : 2 * d + dh] = 3.0  # ... a constant value
    texts, idx = ts.texts, ts.copy_index
    mean = C.head_ablation(m, tok, texts, idx, ablation="mean")
    zero = C.head_ablation(m, tok, texts, idx, ablation="zero")
    assert abs(mean["prob_drop"][0, 0]) < 1e-6 and mean["rate_drop"][0, 0] == 0
    assert abs(zero["prob_drop"][0, 0]) > 1e-4
    # a live head's mean ablation is the same as replacing its output by the mean by hand
    together = C.head_ablation(m, tok, texts, idx, heads=[(1, 1)], ablation="mean")
    assert together["prob_drop"] == pytest.approx(mean["prob_drop"][1, 1], abs=1e-9)
    with pytest.raises(ValueError, match="ablation='median'"):
        C.head_ablation(m, tok, texts, idx, ablation="median")
    with pytest.raises(ValueError, match="one token length"):
        C.head_ablation(m, tok, [texts[0], texts[1] + " w1"], idx, ablation="mean")


def test_perturbation_control_fails_on_models_that_do_not_copy(data):
    """The chapter's control 'circuit heads beat random' (τ = 4, smallest effect 5 points) can fail:
    untrained models never copy, so no perturbation moves their copy rate and the control contradicts."""
    from icml26.book import chapter

    ts, tok = data
    truth, rand = [], []
    for seed in range(3):
        m = tiny(n_layer=2, n_head=2, vocab=len(tok), seed=10 + seed)
        r = C.analyse_model(
            m,
            tok,
            ts,
            n_pairs=6,
            width=1,
            n_metric=2,
            size=8,
            n_rows=4,
            n_iter=5,
            query_from=KW["request_len"] + 2,
            taus=(4.0,),
            n_random=3,
            ablation="mean",
            random_state=seed,
            perturb_random_state=seed,
        )
        dk, dr = r["pert_truth"][4.0]
        truth.append(abs(dk))
        rand.append(np.abs(dr).mean())
    ctrl = chapter.paired_effect(truth, rand, smallest_effect=0.05, basis="chapter 16's control")
    assert ctrl.outcome == "contradicts"
