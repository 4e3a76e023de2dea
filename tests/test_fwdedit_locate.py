"""icml26.fwdedit.locate (causal tracing, the critical layers) and multi-word subjects of the fact base."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from badinput import covers
from transformers import GPT2LMHeadModel

from icml26 import fwdedit as fe
from icml26.tinylm import facts, tokenizer
from icml26.tinylm.lab import gpt2_config

WORDS = ["zora", "bemi", "kalu", "tiva", "lives", "in", "the", "home", "of", "is", "nemo", "sako"]


def _model(n_layer=3):
    tok = tokenizer.build_word_tokenizer(WORDS)
    torch.manual_seed(0)
    model = GPT2LMHeadModel(gpt2_config(len(tok), n_positions=16, n_layer=n_layer, n_embd=32, n_head=2)).eval()
    return model, tok


def _p_true(model, tok, text, target, noise=None, span=None):
    ids = torch.tensor([tok(text)["input_ids"]])
    emb = model.get_input_embeddings()
    h = None
    if noise is not None:

        def add(mod, args, out):
            out = out.clone()
            out[:, span] = out[:, span] + noise
            return out

        h = emb.register_forward_hook(add)
    try:
        with torch.no_grad():
            logits = model(input_ids=ids.expand(1 if noise is None else noise.shape[0], -1)).logits
    finally:
        if h is not None:
            h.remove()
    return float(torch.softmax(logits[:, -1].double(), -1)[:, fe._target_id(tok, target)].mean())


def test_trace_of_a_final_subject_restores_everything_at_every_layer():
    """Subject = the prompt's last token, one token: restoring its hidden state at any layer
    makes every later state clean, so IE_l = P_clean − P_corrupted at every layer."""
    model, tok = _model()
    req = {"prompt": "the home of {}", "subject": "zora", "target_true": "nemo"}
    ie = fe.causal_trace(model, tok, [req], kind="hidden", n_noise=4, random_state=3)
    assert ie.shape == (1, 3)
    # the same noise, drawn the way causal_trace draws it
    g = torch.Generator().manual_seed(3)
    sid = tok.encode("zora", add_special_tokens=False)
    sigma = 3.0 * float(model.get_input_embeddings().weight.detach()[sid].std())
    eps = torch.randn(4, 1, 32, generator=g) * sigma
    p_clean = _p_true(model, tok, "the home of zora", "nemo")
    p_corr = _p_true(model, tok, "the home of zora", "nemo", noise=eps, span=[4])
    assert np.allclose(ie[0], p_clean - p_corr, atol=1e-6)
    assert abs(p_clean - p_corr) > 1e-6  # the oracle is not trivially zero


def test_trace_is_seeded_and_the_window_restores_more():
    model, tok = _model(4)
    req = {"prompt": "{} lives in", "subject": "zora bemi", "target_true": "nemo"}
    a = fe.causal_trace(model, tok, [req], kind="mlp", n_noise=3, random_state=1)
    assert np.array_equal(a, fe.causal_trace(model, tok, [req], kind="mlp", n_noise=3, random_state=1))
    # restoring every layer's hidden state at the last subject token vs none: a window covering all layers
    # at layer 0 restores layers 0..window//2 - 1 ... check shape and finiteness for each kind
    for kind in fe.TRACE_KINDS:
        ie = fe.causal_trace(model, tok, [req, req], kind=kind, window=3, n_noise=2)
        assert ie.shape == (2, 4) and np.all(np.isfinite(ie)) and np.all(np.abs(ie) <= 1)


def test_critical_layers_is_the_best_window():
    assert fe.critical_layers([0.0, 0.1, 0.5, 0.4, 0.0], 2) == [2, 3]
    assert fe.critical_layers([[0.0, 0.3, 0.3, 0.0], [0.0, 0.1, 0.1, 0.0]], 3) == [0, 1, 2]  # tie: earliest
    assert fe.critical_layers([1.0, 0.0], 2) == [0, 1]


@covers("fwdedit.locate.causal_trace", "fwdedit.locate.critical_layers")
def test_trace_and_critical_layers_reject_bad_input():
    model, tok = _model()
    req = {"prompt": "{} lives in", "subject": "zora", "target_true": "nemo"}
    with pytest.raises(ValueError, match="kind='embed'"):
        fe.causal_trace(model, tok, [req], kind="embed")
    with pytest.raises(ValueError, match="target_true"):
        fe.causal_trace(model, tok, [{"prompt": "{} lives in", "subject": "zora", "target_new": "nemo"}])
    with pytest.raises(ValueError, match="window"):
        fe.causal_trace(model, tok, [req], window=0)
    with pytest.raises(ValueError, match="noise"):
        fe.causal_trace(model, tok, [req], noise=0.0)
    with pytest.raises(ValueError, match="n_edit=4"):
        fe.critical_layers([0.1, 0.2, 0.3], 4)
    with pytest.raises(ValueError, match="finite"):
        fe.critical_layers([0.1, float("nan")], 1)


def test_multi_word_subjects_share_their_words():
    fb = facts.make_fact_base(40, 2, 6, random_state=0, subject_words=2)
    assert len(set(fb.subjects)) == 40 and all(len(s.split()) == 2 for s in fb.subjects)
    for pos in (0, 1):
        counts = {}
        for s in fb.subjects:
            counts[s.split()[pos]] = counts.get(s.split()[pos], 0) + 1
        assert min(counts.values()) >= 1 and max(counts.values()) >= 2  # no word names a subject alone
        assert len(counts) < 40
    corpus = facts.fact_corpus(40, 2, 6, random_state=0, subject_words=2)
    assert set(tokenizer.word_vocabulary(corpus)) <= set(fb.words())
    tok = tokenizer.build_word_tokenizer(tokenizer.word_vocabulary(corpus))
    s = fb.subjects[0]
    ids, last = fe._prompt_ids(tok, f"{s} lives in", s)
    assert last == 2 and tok.convert_ids_to_tokens(ids[last]) == s.split()[1]
    # one word per subject is the earlier fact base, draw for draw
    assert facts.make_fact_base(12, 2, 4, random_state=3) == facts.make_fact_base(12, 2, 4, random_state=3, subject_words=1)
    with pytest.raises(ValueError, match="subject_words=4"):
        facts.make_fact_base(12, 2, 4, subject_words=4)


@covers("fwdedit.locate.edit_window")
def test_edit_window_runs_from_the_critical_mlp_to_the_last_layer_holding_the_fact():
    mlp = [0.55, 0.016, 0.004, 0.01, 0.0, 0.0]
    hidden = [0.55, 0.399, 0.216, 0.032, 0.007, 0.0]
    assert fe.edit_window(mlp, hidden) == [0, 1]
    assert fe.edit_window(mlp, hidden, frac=0.3) == [0, 1, 2]
    assert fe.edit_window([0.0, 0.1, 0.4, 0.1], [[0.2, 0.5, 0.5, 0.45], [0.2, 0.5, 0.5, 0.0]]) == [2]
    assert fe.edit_window(mlp, [0.55, 0.1, 0.0, 0.0, 0.0, 0.0]) == [0]
    assert fe.edit_window(mlp, [0.55, 0.1, 0.0, 0.0, 0.0, 0.0], min_layers=2) == [0, 1]
    assert fe.edit_window([0.0, 0.0, 0.0, 0.9], [0.1, 0.1, 0.1, 0.5], min_layers=3) == [1, 2, 3]
    with pytest.raises(ValueError, match="min_layers=7"):
        fe.edit_window(mlp, hidden, min_layers=7)
    with pytest.raises(ValueError, match="frac"):
        fe.edit_window(mlp, hidden, frac=0.0)
    with pytest.raises(ValueError, match="5 layers"):
        fe.edit_window(mlp, hidden[:5])
    with pytest.raises(ValueError, match="did not remove the fact"):
        fe.edit_window(mlp, [0.0] * 6)
