"""The tiny-LM lab: tokenizer, fact base, trainer and the recipe-keyed model cache."""

from __future__ import annotations

import json

import pytest
import torch
from badinput import covers, exempt, rejects

from icml26.tinylm import facts, lab, tokenizer

SMALL = dict(n_subjects=12, n_relations=2, n_objects=4)


def test_word_tokenizer_round_trip_and_batches(tmp_path):
    from transformers import AutoTokenizer

    tok = tokenizer.build_word_tokenizer(["hello", "world"])
    assert len(tok) == 6 and tok.pad_token_id == 0 and tok.unk_token_id == 1 and tok.bos_token_id == 2 and tok.eos_token_id == 3
    assert tok("hello world")["input_ids"] == [2, 4, 5]
    assert tok.encode("hello nope", add_special_tokens=False) == [4, 1]
    assert tok.decode(tok("world hello")["input_ids"], skip_special_tokens=True) == "world hello"
    b = tok(["hello", "hello world world"], return_tensors="pt", padding=True)
    assert b["input_ids"].shape == (2, 4) and b["attention_mask"].tolist() == [[1, 1, 0, 0], [1, 1, 1, 1]]
    tok.save_pretrained(tmp_path)
    again = AutoTokenizer.from_pretrained(tmp_path)
    assert again("world hello")["input_ids"] == [2, 5, 4]


def test_fact_base_is_seeded_and_consistent():
    a, b = facts.make_fact_base(**SMALL, random_state=3), facts.make_fact_base(**SMALL, random_state=3)
    assert a == b and a != facts.make_fact_base(**SMALL, random_state=4)
    assert len(a.facts) == 12 * 2 and len(set(a.subjects)) == 12
    for r in a.relations:
        assert {a.facts[(s, r.name)] for s in a.subjects} == set(r.objects)  # every object is used
    corpus = facts.fact_corpus(**SMALL, random_state=3)
    assert corpus == facts.fact_corpus(**SMALL, random_state=3)
    assert len(corpus) == 12 * 2 * 4
    assert set(tokenizer.word_vocabulary(corpus)) <= set(a.words())
    cases = facts.counterfactual_edits(a, 5, n_neighbours=3, random_state=0)
    edited = {c.request["subject"] for c in cases}
    assert len(edited) == 5
    for c in cases:
        r = c.request
        assert r["target_new"] != r["target_true"]
        assert not edited & {p.split()[0] for p in c.neighbourhood_prompts}
        assert all(r["subject"] in p for p in c.paraphrase_prompts + c.validation_prompts)


def _tiny_recipe(**kw):
    base = dict(
        corpus=facts.fact_corpus, corpus_kwargs=SMALL, config=dict(n_layer=1, n_embd=16, n_head=2), seed=0, steps=3, batch_size=8
    )
    base.update(kw)
    return lab.Recipe(**base)


def test_recipe_key_and_cache_round_trip(tmp_path):
    r = _tiny_recipe()
    assert (
        r.corpus == "icml26.tinylm.facts:fact_corpus" and r.key() == _tiny_recipe(corpus="icml26.tinylm.facts:fact_corpus").key()
    )
    assert (
        len(
            {
                r.key(),
                _tiny_recipe(seed=1).key(),
                _tiny_recipe(steps=4).key(),
                _tiny_recipe(config=dict(n_layer=2, n_embd=16, n_head=2)).key(),
            }
        )
        == 4
    )
    model, tok, path = lab.load_or_train(r, cache_dir=tmp_path)
    assert path == tmp_path / r.key() and json.loads((path / "recipe.json").read_text())["seed"] == 0
    log = (path / "train_log.json").read_text()
    model2, _, _ = lab.load_or_train(r, cache_dir=tmp_path)  # a hit: nothing retrained
    assert (path / "train_log.json").read_text() == log
    ids = tok(["the home of x is"], return_tensors="pt")
    with torch.no_grad():
        assert torch.equal(model(**ids).logits, model2(**ids).logits)
    assert model.config.n_layer == 1 and model.config.vocab_size == len(tok)


def test_trainer_accepts_token_id_corpora_and_lowers_the_loss():
    from transformers import GPT2LMHeadModel

    torch.manual_seed(0)
    model = GPT2LMHeadModel(lab.gpt2_config(8, n_layer=1, n_embd=16, n_head=2, n_positions=8))
    corpus = [[4, 5, 6, 7], [4, 6, 5, 7]] * 4
    losses = lab.train_causal_lm(model, corpus, steps=60, batch_size=4, lr=1e-2, warmup=5, random_state=0)
    assert losses[-1] < 0.5 * losses[0]


@covers("tinylm.lab.train_causal_lm", "tinylm.lab.gpt2_config", "tinylm.lab.Recipe", "tinylm.lab.load_or_train")
def test_lab_rejects_bad_input():
    from transformers import GPT2LMHeadModel

    model = GPT2LMHeadModel(lab.gpt2_config(8, n_layer=1, n_embd=16, n_head=2, n_positions=4))
    rejects(lab.train_causal_lm, model, [], match="non-empty")
    rejects(lab.train_causal_lm, model, ["a b"], match="tokenizer")
    rejects(lab.train_causal_lm, model, [[1]], match="at least 2")
    rejects(lab.train_causal_lm, model, [[1, 2, 3, 4, 5]], match="n_positions")
    rejects(lab.train_causal_lm, model, [[1, 2]], steps=0, match="steps")
    rejects(lab.train_causal_lm, "model", [[1, 2]], match="model")
    rejects(lab.gpt2_config, 0, match="vocab_size")
    rejects(lab.gpt2_config, 8, n_embd=10, n_head=4, match="divisible")
    rejects(lab.Recipe, lambda: [], match="lambda")
    rejects(lab.Recipe, "nocolon", match="module:function")
    rejects(lab.Recipe, "a:b", seed=-1, match="seed")
    rejects(lab.Recipe, "a:b", corpus_kwargs=dict(x=object()), match="JSON")
    rejects(lab.load_or_train, "recipe", match="Recipe")


@covers("tinylm.tokenizer.build_word_tokenizer", "tinylm.tokenizer.word_vocabulary")
def test_tokenizer_rejects_bad_input():
    rejects(tokenizer.build_word_tokenizer, [], match="empty")
    rejects(tokenizer.build_word_tokenizer, ["two words"], match="whitespace")
    rejects(tokenizer.word_vocabulary, ["ok", 3], match="texts")


@covers("tinylm.tokenizer.word_vocabulary")
def test_word_vocabulary_refuses_a_single_string():
    # word_vocabulary("the cat sat") used to iterate the string and return its letters
    rejects(tokenizer.word_vocabulary, "the cat sat", match="single str.*list of texts")
    rejects(tokenizer.word_vocabulary, b"the cat", match="single bytes")
    assert tokenizer.word_vocabulary(["the cat sat"]) == ["cat", "sat", "the"]


@covers("tinylm.lab.load_or_train")
def test_load_or_train_names_an_unknown_corpus_generator(tmp_path):
    # Recipe(corpus="no.such:fn") used to surface "No module named 'no'"
    rejects(
        lab.load_or_train,
        lab.Recipe(corpus="no.such:fn"),
        cache_dir=tmp_path,
        match=r"corpus='no\.such:fn'.*cannot import module 'no\.such'",
    )
    rejects(
        lab.load_or_train, lab.Recipe(corpus="icml26.tinylm.facts:no_such_fn"), cache_dir=tmp_path, match="has no 'no_such_fn'"
    )
    rejects(
        lab.load_or_train, lab.Recipe(corpus="icml26.tinylm.lab:_CONFIG_DEFAULTS"), cache_dir=tmp_path, match="not a function"
    )


@covers("tinylm.facts.make_fact_base", "tinylm.facts.fact_corpus", "tinylm.facts.counterfactual_edits", "tinylm.facts.FactBase")
def test_facts_reject_bad_input():
    rejects(facts.make_fact_base, 2, match="n_subjects")
    rejects(facts.make_fact_base, 10, n_relations=99, match="n_relations")
    rejects(facts.make_fact_base, 10, n_objects=11, match="n_objects")
    rejects(facts.fact_corpus, 10, n_objects=4, prefix_prob=1.5, match="prefix_prob")
    fb = facts.make_fact_base(**SMALL)
    rejects(facts.counterfactual_edits, "fb", 3, match="FactBase")
    rejects(facts.counterfactual_edits, fb, 12, match="n_edits")
    with pytest.raises(KeyError, match="nope"):
        fb.relation("nope")


exempt("tinylm.lab.model_cache_dir", "takes no input (reads $ICML26_MODEL_CACHE)")
exempt("tinylm.facts.Relation", "a frozen data record built by make_fact_base")
exempt("tinylm.facts.EditCase", "a frozen data record built by counterfactual_edits")
