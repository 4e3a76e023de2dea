"""Bad input for icml26.cotsafety and icml26.tinylm.traces."""

from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest
import torch
from badinput import covers, exempt, rejects
from hypothesis import given, settings
from hypothesis import strategies as st
from transformers import GPT2Config, GPT2LMHeadModel

from icml26 import cotsafety as C
from icml26.tinylm import traces as T
from icml26.tinylm.tokenizer import build_word_tokenizer, word_vocabulary

exempt("cotsafety.heads.HeadMetrics", "a record built by attention_head_metrics (covered)")
exempt("cotsafety.LayerGap", "a record built by layer_angle_gap (covered)")
exempt("tinylm.traces.TraceSet", "a record built by make_traces (covered)")

KW = dict(request_len=4, trace_len=4, n_objects=6, n_payloads=4, n_fillers=4)


@pytest.fixture(scope="module")
def lm():
    ts = T.make_traces(8, random_state=0, **KW)
    tok = build_word_tokenizer(word_vocabulary(T.trace_corpus(300, random_state=1, **KW)))
    with contextlib.redirect_stderr(io.StringIO()):
        m = GPT2LMHeadModel(
            GPT2Config(n_layer=2, n_head=2, n_embd=16, vocab_size=len(tok), n_positions=32, bos_token_id=2, eos_token_id=3)
        ).eval()
    return m, tok, ts


@covers("tinylm.traces.make_traces", "tinylm.traces.trace_corpus", "tinylm.traces.trace_vocabulary")
def test_trace_generator_rejects():
    rejects(T.make_traces, 0)
    rejects(T.make_traces, 5, unsafe_fraction=1.5, match="unsafe_fraction")
    rejects(T.make_traces, 5, trace_len=2, match="trace_len")
    rejects(T.trace_corpus, -1)
    rejects(T.trace_vocabulary, n_kinds=3, match="even")


@covers("cotsafety.softmax_jacobian", "cotsafety.jacobian_lambda_max")
@settings(max_examples=20, deadline=None, derandomize=True)
@given(st.lists(st.floats(-2, 2, allow_nan=False), min_size=2, max_size=6))
def test_jacobian_rejects_non_probabilities(xs):
    p = np.array(xs)
    if np.all(p >= 0) and abs(p.sum() - 1) < 1e-6:
        return
    rejects(C.softmax_jacobian, p)
    rejects(C.jacobian_lambda_max, p)


@covers("cotsafety.softmax_jacobian", "cotsafety.jacobian_lambda_max", "cotsafety.head_jacobian_metrics", "cotsafety.power_scale")
def test_array_inputs_rejected():
    rejects(C.softmax_jacobian, [0.5, 0.5], match="tensor")
    rejects(C.jacobian_lambda_max, np.full((2, 2), 0.5), match="1-d")
    rejects(C.jacobian_lambda_max, np.r_[0.5, 0.5], n_iter=0, match="n_iter")
    rejects(C.head_jacobian_metrics, np.ones(3), match="T_q, T_k")
    rejects(C.head_jacobian_metrics, -np.ones((3, 3)), match="non-negative")
    rejects(C.head_jacobian_metrics, np.full((3, 3), np.nan))
    rejects(C.power_scale, np.array([np.nan, 1.0]))
    rejects(C.power_scale, np.array([1.0]), q=0.0, match="q")


@covers(
    "cotsafety.layer_angle_gap",
    "cotsafety.attention_head_metrics",
    "cotsafety.copy_rate",
    "cotsafety.head_ablation",
    "cotsafety.head_temperature",
    "cotsafety.key_heads",
)
def test_model_level_rejects(lm):
    m, tok, ts = lm
    safe, unsafe = ts.split()
    rejects(C.layer_angle_gap, torch.nn.Linear(2, 2), tok, safe, unsafe, match="Hugging Face")
    rejects(C.copy_rate, m, tok, ["<req> kind0 notaword"], 1, match="vocabulary")
    rejects(C.copy_rate, m, tok, "a single string", 1, match="list of strings")
    rejects(C.copy_rate, m, tok, ts.texts, 99, match="target_index=99")
    rejects(C.layer_angle_gap, m, tok, safe[:1], unsafe, match="at least 2 safe")
    rejects(C.layer_angle_gap, m, tok, safe, unsafe, width=5, match="width=5")
    rejects(C.attention_head_metrics, m, tok, safe, [0, 7], match="layer index 7")
    rejects(C.attention_head_metrics, m, tok, safe, 0, match="layers")
    rejects(C.head_ablation, m, tok, unsafe, ts.copy_index, heads=[(0, 9)], match="head index 9")
    rejects(C.head_ablation, m, tok, unsafe, ts.copy_index, heads=[(3, 0)], match="layer index 3")

    def enter(heads, tau):
        with C.head_temperature(m, heads, tau):
            pass

    rejects(enter, [(0, 0)], 0.0, match="tau")
    rejects(enter, [(5, 0)], 1.0, match="layer index 5")
    rejects(C.key_heads, "x", "y", match="HeadMetrics")
    hm = C.attention_head_metrics(m, tok, safe[:2], [0], size=4, random_state=0)
    hm1 = C.attention_head_metrics(m, tok, safe[:2], [1], size=4, random_state=0)
    rejects(C.key_heads, hm, hm1, match="different layers")
    rejects(C.key_heads, hm, hm, ratio=1.5, match="ratio")


@covers("cotsafety.heads.key_head_summary", "cotsafety.heads.key_head_log_ratios", "cotsafety.heads.trace_noise_share")
def test_key_head_readings_reject_bad_input():
    n, L, H, S = 3, 1, 2, 2
    m = C.HeadMetrics(
        layers=[0],
        b1=np.ones((n, L, H)),
        b2=np.ones((n, L, H, S)) / 2**0.5,
        b3=np.ones((n, L, H)),
        b2_centroid=np.zeros((n, L, H)),
    )
    rejects(C.key_head_summary, "m", [(0, 0)], match="HeadMetrics")
    rejects(C.key_head_summary, m, [], match="non-empty")
    rejects(C.key_head_summary, m, [(1, 0)], match="layer 1")
    rejects(C.key_head_summary, m, [(0, 2)], match="head index 2")
    rejects(C.key_head_summary, m, [0], match="pair")
    one = C.HeadMetrics(layers=[0], b1=m.b1[:1], b2=m.b2[:1], b3=m.b3[:1], b2_centroid=m.b2_centroid[:1])
    rejects(C.key_head_summary, one, [(0, 0)], match="two traces")
    zero = C.HeadMetrics(layers=[0], b1=0 * m.b1, b2=m.b2, b3=m.b3, b2_centroid=m.b2_centroid)
    rejects(C.key_head_log_ratios, zero, m, [(0, 0)], match="B1")
    rejects(C.trace_noise_share, [1.0], [1.0], match="length >= 2")
    rejects(C.trace_noise_share, [1.0, 2.0], [1.0], match="same length")
    rejects(C.trace_noise_share, [1.0, np.nan], [1.0, 2.0], match="finite")


@covers("cotsafety.head_jacobian_metrics")
def test_rows_that_are_not_stochastic_are_refused_not_renormalised():
    # rows summing to 3 (raw weights) or 0 used to be renormalised without a word
    rejects(C.head_jacobian_metrics, np.ones((4, 4)), size=4, n_rows=4, random_state=0, match="row-stochastic.*row 0 sums to 4")
    a = np.full((4, 4), 0.25)
    a[2] = 0.0
    rejects(C.head_jacobian_metrics, a, size=4, n_rows=4, random_state=0, match="row 2 sums to 0")
    b1, _, _ = C.head_jacobian_metrics(torch.softmax(torch.randn(5, 5), 1).float(), size=4, n_rows=4, random_state=0)
    assert np.isfinite(b1)


@covers("cotsafety.cosine_window", "cotsafety.analyse_model", "cotsafety.layer_angle_gap")
def test_window_rule_and_pipeline_rejects(lm):
    m, tok, ts = lm
    safe, unsafe = ts.split()
    rejects(C.cosine_window, np.array([0.1, 0.2]), 3, match="width=3")
    rejects(C.cosine_window, np.zeros((2, 2)), 1, match="1-d")
    rejects(C.cosine_window, np.array([0.1]), 0, match="width")
    kw = dict(n_pairs=4, width=1, n_metric=2, size=4, n_rows=4, n_iter=5, query_from=1)
    rejects(C.analyse_model, m, tok, ts.texts, **kw, match="TraceSet")
    rejects(C.analyse_model, m, tok, ts, **{**kw, "n_metric": 0}, match="n_metric")
    rejects(C.layer_angle_gap, m, tok, safe, unsafe, width=1, position=-1, match="position")
    rejects(C.layer_angle_gap, m, tok, safe, unsafe, width=1, position=50, match="position=50")
