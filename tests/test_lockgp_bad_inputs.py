"""Bad input to icml26.lockgp: every public callable rejects out-of-domain input with a clear
ValueError/TypeError raised by icml26 itself (never a NaN, a silent result or a deep traceback).

Hypothesis feeds wrong shapes, NaN/inf, negative sizes, empty inputs, unknown tokens and
wrong types to each public function and class.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest
import torch
from badinput import covers, rejects
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

gpytorch = pytest.importorskip("gpytorch")
pytest.importorskip("Bio")

from icml26 import lockgp as lg  # noqa: E402

torch.set_num_threads(1)
FAST = settings(max_examples=20, deadline=None, derandomize=True)
A = len(lg.ALPHABET)
SEQS = ["ACDEF", "ACDEG", "MCDEF", "AKDEF"]
Y = np.array([0.1, 0.5, -0.3, 1.2])

bad_floats = st.sampled_from([np.nan, np.inf, -np.inf, -1.0])
bad_sizes = st.integers(-5, 0)
not_numbers = st.sampled_from(["3", None, [1, 2], {"a": 1}])
bad_tokens = st.sampled_from(["B", "J", "O", "U", "X", "Z", "*", "a", "1", "é"])


@st.composite
def bad_matrices(draw):
    kind = draw(st.sampled_from(["shape", "nan", "asym", "string", "empty"]))
    if kind == "shape":
        return draw(arrays(float, st.sampled_from([(3,), (2, 3), (2, 2, 2)]), elements=st.floats(-1, 1)))
    if kind == "nan":
        M = np.zeros((3, 3))
        M[draw(st.integers(0, 2)), draw(st.integers(0, 2))] = draw(st.sampled_from([np.nan, np.inf]))
        return M
    if kind == "asym":
        M = np.zeros((3, 3))
        M[0, 1] = draw(st.floats(0.5, 5.0))
        return M
    if kind == "string":
        return np.array([["a", "b"], ["b", "a"]])
    return np.zeros((0, 0))


# ----------------------------------------------------------------------------- substitution matrices


@covers("lockgp.substitution.blosum50")
@FAST
@given(tok=bad_tokens, junk=st.sampled_from([None, 3, ["A", "C"], ""]))
def test_blosum50_rejects_unknown_repeated_or_non_string_alphabets(tok, junk):
    rejects(lg.blosum50, "AC" + tok)
    rejects(lg.blosum50, "ACA", match="repeats")
    rejects(lg.blosum50, junk, match="alphabet")


@covers(
    "lockgp.substitution.normalize_substitution_matrix",
    "lockgp.substitution.correlation_matrix",
    "lockgp.substitution.blosum_embedding",
)
@FAST
@given(M=bad_matrices(), target=st.sampled_from([0.0, -0.25, np.nan, np.inf]), gamma=bad_floats)
def test_matrix_functions_reject_bad_matrices_and_parameters(M, target, gamma):
    rejects(lg.normalize_substitution_matrix, M)
    rejects(lg.correlation_matrix, M, 1.0)
    rejects(lg.blosum_embedding, M)
    B = lg.blosum50()
    rejects(lg.normalize_substitution_matrix, B, target=target, match="target")
    rejects(lg.correlation_matrix, lg.normalize_substitution_matrix(B), gamma, match="gamma")
    rejects(lg.correlation_matrix, lg.normalize_substitution_matrix(B), 0.0, match="gamma")
    rejects(lg.normalize_substitution_matrix, np.eye(3) * 0, match="median")


# ----------------------------------------------------------------------------- encoding


@covers("lockgp.encoding.encode_indices", "lockgp.encoding.encode_one_hot")
@FAST
@given(
    tok=bad_tokens, cut=st.integers(0, 4), junk=st.sampled_from([3, None, b"ACD", 2.5]), length=st.sampled_from([0, -2, 2.5, "5"])
)
def test_encoders_reject_bad_sequences(tok, cut, junk, length):
    for fn in (lg.encode_indices, lg.encode_one_hot):
        rejects(fn, ["ACDEF", "AC" + tok + "EF"], match="unknown token")
        rejects(fn, ["ACDEF", "ACDEF"[:cut]], match="length")
        rejects(fn, [], match="empty")
        rejects(fn, "ACDEF", match="single string")
        rejects(fn, ["ACDEF", junk])
    rejects(lg.encode_indices, SEQS, length=length, match="length")
    rejects(lg.encode_one_hot, SEQS, dtype=torch.int64, match="dtype")
    rejects(lg.encode_indices, SEQS, alphabet=None, match="alphabet")


# ----------------------------------------------------------------------------- kernels


@covers(
    "lockgp.kernels.LinearGlobalKernel",
    "lockgp.kernels.NonlinearLocalKernel",
    "lockgp.kernels.TanimotoBlosumKernel",
    "lockgp.kernels.build_lock_kernel",
    "lockgp.kernels.FastHammingIMQKernel",
)
@FAST
@given(L=bad_sizes, junk=not_numbers, extra=st.integers(1, 20))
def test_kernels_reject_bad_lengths_and_wrong_input_widths(L, junk, extra):
    for cls in (lg.LinearGlobalKernel, lg.NonlinearLocalKernel, lg.TanimotoBlosumKernel, lg.build_lock_kernel):
        rejects(cls, L, match="num_positions")
        rejects(cls, junk)
        k = cls(5).double()
        x = torch.zeros(3, 5 * A + extra, dtype=torch.float64)
        with torch.no_grad():
            rejects(lambda k=k, x=x: k(x).to_dense(), match="features")
    rejects(lg.FastHammingIMQKernel, vocab_size=L, match="vocab_size")
    kh = lg.FastHammingIMQKernel(vocab_size=A).double()
    with torch.no_grad():
        rejects(lambda: kh(torch.zeros(3, 5 * A + (extra % A or 1), dtype=torch.float64)).to_dense(), match="vocab_size")


@covers("lockgp.kernels.build_kernel")
@FAST
@given(name=st.sampled_from(["rbf", "LOCK", "", "lock ", 3, None]), L=bad_sizes)
def test_build_kernel_rejects_unknown_models_and_bad_lengths(name, L):
    rejects(lg.build_kernel, name, 5, match="unknown model")
    for m in lg.MODELS:
        rejects(lg.build_kernel, m, L, match="num_positions")


# ----------------------------------------------------------------------------- GP fitting


@covers("lockgp.models.ExactGPModel", "lockgp.models.fit_map")
@FAST
@given(bad=st.sampled_from([np.nan, np.inf, -np.inf]), n=st.integers(1, 3), max_iter=st.sampled_from([0, -1, 2.5, "10"]))
def test_gp_model_and_fit_reject_bad_data(bad, n, max_iter):
    x = lg.encode_one_hot(SEQS).flatten(-2)
    y = torch.tensor(Y)
    k = lg.build_kernel("linear", 5)
    rejects(lg.ExactGPModel, x, y[:n], k, match="shape")
    rejects(lg.ExactGPModel, x.numpy(), y, k, match="tensor")
    y_bad = y.clone()
    y_bad[n] = bad
    rejects(lg.ExactGPModel, x, y_bad, k, match="finite")
    rejects(lg.ExactGPModel, x, y, "linear", match="Kernel")
    model = lg.ExactGPModel(x, y, k).double()
    rejects(lg.fit_map, model, max_iter=max_iter, match="max_iter")
    rejects(lg.fit_map, "model", match="ExactGPModel")


@covers("lockgp.models.GPRegressor")
@FAST
@given(
    bad=st.sampled_from([np.nan, np.inf]),
    kernel=st.sampled_from(["rbf", "", None]),
    X=st.sampled_from(["ACDEF", None, 3.0, np.zeros((4, 5)), np.zeros((4, 5, 20))]),
)
def test_regressor_rejects_bad_training_data_and_use_before_fit(bad, kernel, X):
    rejects(lg.GPRegressor(kernel).fit, SEQS, Y, match="unknown kernel")
    yb = Y.copy()
    yb[1] = bad
    rejects(lg.GPRegressor("linear").fit, SEQS, yb, match="non-finite")
    rejects(lg.GPRegressor("linear").fit, SEQS, Y[:2], match="shape")
    rejects(lg.GPRegressor("linear").fit, SEQS[:1], Y[:1], match="at least 2")
    rejects(lg.GPRegressor("linear").fit, X, Y)
    rejects(lg.GPRegressor("linear", max_iter=0).fit, SEQS, Y, match="max_iter")
    rejects(lg.GPRegressor("linear", random_state=-1).fit, SEQS, Y, match="random_state")
    rejects(lg.GPRegressor("linear").predict, SEQS, match="not fitted")


def test_regressor_predict_rejects_other_lengths():
    gp = lg.GPRegressor("linear", max_iter=5).fit(SEQS, Y)
    rejects(gp.predict, ["ACDEFG"], match="positions")
    rejects(gp.predict, ["ACDEB"], match="unknown token")


@covers("lockgp.evaluation.evaluate")
@FAST
@given(bad=st.sampled_from([np.nan, np.inf, -np.inf]), n=st.integers(0, 1), v=st.sampled_from([0.0, -1.0]))
def test_evaluate_rejects_nan_short_constant_and_nonpositive_variance(bad, n, v):
    y = np.array([1.0, 2.0, 3.0, 5.0])
    yb = y.copy()
    yb[2] = bad
    rejects(lg.evaluate, yb, y, np.ones(4), match="finite")
    rejects(lg.evaluate, y, yb, np.ones(4), match="finite")
    rejects(lg.evaluate, y[:n], y[:n], np.ones(n), match="at least 2")
    rejects(lg.evaluate, y, np.full(4, 2.0), np.ones(4), match="constant")
    rejects(lg.evaluate, y, y, np.full(4, v), match="positive")
    rejects(lg.evaluate, y, y[:3], np.ones(4), match="shapes")
    rejects(lg.evaluate, ["a", "b"], ["a", "b"], [1, 1], match="numeric")


# ----------------------------------------------------------------------------- landscapes


@covers("lockgp.landscapes.Landscape")
@FAST
@given(bad=st.sampled_from([np.nan, np.inf]), n=st.integers(1, 3))
def test_landscape_rejects_mismatched_nonfinite_or_non_string_data(bad, n):
    rejects(lg.Landscape, SEQS, Y[:n], match="values")
    yb = Y.copy()
    yb[0] = bad
    rejects(lg.Landscape, SEQS, yb, match="finite")
    rejects(lg.Landscape, [1, 2, 3, 4], Y, match="str")
    rejects(lg.Landscape, SEQS, Y[:, None], match="1-D")


@covers("lockgp.landscapes.make_landscape")
@FAST
@given(
    n=st.integers(-3, 1), kind=st.sampled_from(["random", "", "BLOSUM"]), bad=bad_floats, junk=not_numbers, mm=st.integers(25, 40)
)
def test_make_landscape_rejects_bad_sizes_rates_and_seeds(n, kind, bad, junk, mm):
    rejects(lg.make_landscape, n, match="n_variants")
    rejects(lg.make_landscape, 20, kind=kind, match="kind")
    rejects(lg.make_landscape, 20, noise=bad, match="noise")
    rejects(lg.make_landscape, 20, epistasis=bad, match="epistasis")
    rejects(lg.make_landscape, 20, max_mutations=mm, match="max_mutations")
    rejects(lg.make_landscape, 20, length=1, max_mutations=1, n_pairs=2, match="n_pairs")
    rejects(lg.make_landscape, junk)
    rejects(lg.make_landscape, 20, random_state=-1, match="random_state")
    rejects(lg.make_landscape, 20, random_state=1.5, match="random_state")


@covers("lockgp.landscapes.load_landscape")
@FAST
@given(
    text=st.sampled_from(
        [
            "sequence,fitness\nACDE,1\nACD,2\n",
            "sequence,fitness\nACDE,1\nACDF,x\n",
            "sequence,score\nACDE,1\n",
            "sequence,fitness\nACDB,1\n",
            "",
            "sequence,fitness\n",
        ]
    ),
    junk=st.sampled_from([3, None, 2.5]),
)
def test_load_landscape_rejects_bad_files(text, junk):
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "land.csv"
        p.write_text(text)
        rejects(lg.load_landscape, p)
    rejects(lg.load_landscape, junk, match="path")


@covers("lockgp.evaluation.learning_curve")
@FAST
@given(
    sizes=st.sampled_from([[], [1], [0, 8], [-4], "8", 8]),
    n=bad_sizes,
    models=st.sampled_from([["rbf"], [], "lock", ["lock", "x"]]),
    junk=not_numbers,
)
def test_learning_curve_rejects_bad_design(sizes, n, models, junk):
    lands = {"b": lambda s: lg.make_landscape(30, length=5, max_mutations=2, random_state=s)}
    kw = dict(n_test=10, n_reps=1, max_iter=5, progress=False)
    rejects(lg.learning_curve, lands, ["linear"], sizes, **kw)
    rejects(lg.learning_curve, lands, models, [8], **kw)
    rejects(lg.learning_curve, lands, ["linear"], [8], **{**kw, "n_reps": n}, match="n_reps")
    rejects(lg.learning_curve, lands, ["linear"], [8], **{**kw, "n_test": n}, match="n_test")
    rejects(lg.learning_curve, junk, ["linear"], [8], **kw, match="landscapes")
    rejects(lg.learning_curve, lands, ["linear"], [8], **{**kw, "random_state": -1}, match="random_state")
    rejects(lg.learning_curve, lands, ["linear"], [25], **kw, match="need")
