"""Bad input to icml26.calib: probabilities that do not sum to 1, bin counts below 1, wrong shapes,
NaN/inf, labels out of range and wrong types give a clear ValueError/TypeError from icml26 itself."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from badinput import covers, exempt, rejects
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from icml26 import calib as C

FAST = settings(max_examples=20, deadline=None, derandomize=True)
P = np.array([[0.7, 0.2, 0.1], [0.1, 0.1, 0.8]])
Y = np.array([0, 2])
METRICS = (C.top_label_ece, C.classwise_ece, C.adaptive_ece, C.calibration_report)

exempt("calib.Split", "a frozen record built by load_calibration_split, which checks its input")
exempt("calib.Trained", "a record of a trained model; its predict_probs input is checked by MLP.logits (covered)")


@pytest.fixture(scope="module")
def iris():
    return C.load_calibration_split("iris", random_state=0)


# ----------------------------------------------------------------------------- the bad inputs


@covers("calib.top_label_ece", "calib.classwise_ece", "calib.adaptive_ece", "calib.calibration_report", "calib.pit_values")
def test_probabilities_that_do_not_sum_to_one():
    bad = np.array([[0.5, 0.3, 0.1], [0.1, 0.1, 0.8]])
    for f in (*METRICS, C.pit_values):
        rejects(f, bad, Y, match="sum to 1.*row 0 sums to 0.9")


@covers("calib.top_label_ece", "calib.classwise_ece", "calib.adaptive_ece", "calib.calibration_report", "calib.pit_histogram")
@FAST
@given(st.integers(-5, 0))
def test_bin_count_below_one(n_bins):
    for f in METRICS:
        rejects(f, P, Y, n_bins=n_bins, match="n_bins")
    rejects(C.pit_histogram, np.array([0.2, 0.4]), n_bins=n_bins, match="n_bins")


def test_bin_count_of_wrong_type():
    for f in METRICS:
        rejects(f, P, Y, n_bins=2.5, match="n_bins")
        rejects(f, P, Y, n_bins="15", match="n_bins")
        rejects(f, P, Y, n_bins=True, match="n_bins")


# ----------------------------------------------------------------------------- hypothesis: wrong probabilities and labels


@FAST
@given(arrays(np.float64, st.tuples(st.integers(1, 6), st.integers(2, 5)), elements=st.floats(-2, 2)))
def test_rows_off_the_simplex_are_rejected(p):
    off = (p.min() < 0) or (p.max() > 1) or np.any(np.abs(p.sum(1) - 1) > C.SUM_ATOL)
    y = np.zeros(p.shape[0], int)
    if off:
        for f in (*METRICS, C.pit_values):
            rejects(f, p, y)


@FAST
@given(st.sampled_from([np.nan, np.inf, -np.inf]))
def test_non_finite_probabilities(v):
    p = P.copy()
    p[0, 0] = v
    for f in (*METRICS, C.pit_values):
        rejects(f, p, Y, match="NaN or infinite")


@FAST
@given(st.sampled_from([np.zeros(3), np.zeros((2, 1)), np.zeros((0, 3)), np.zeros((2, 3, 1))]))
def test_wrong_shapes(p):
    for f in (*METRICS, C.pit_values):
        rejects(f, p, np.zeros(len(p), int), match="shape")


@FAST
@given(
    st.sampled_from(
        [np.array([0, 3]), np.array([-1, 0]), np.array([0]), np.array([0.5, 1.0]), np.array([True, False]), "ab", None]
    )
)
def test_bad_labels(y):
    for f in (*METRICS, C.pit_values):
        rejects(f, P, y)


def test_wrong_types():
    for f in (*METRICS, C.pit_values):
        rejects(f, "probs", Y)
        rejects(f, None, Y)
        rejects(f, np.array([["a", "b"], ["c", "d"]]), Y)
    rejects(C.pit_values, P, Y, class_order="sorted", match="class_order")


@covers("calib.ks_uniform", "calib.pit_histogram")
@FAST
@given(st.sampled_from([np.array([]), np.array([0.5, 1.5]), np.array([-0.1]), np.array([np.nan]), np.zeros((2, 2)), "u", None]))
def test_bad_pit_values(u):
    rejects(C.ks_uniform, u)
    rejects(C.pit_histogram, u)


# ----------------------------------------------------------------------------- data and training


@covers("calib.load_calibration_split")
def test_load_calibration_split_bad_input():
    rejects(C.load_calibration_split, "mnist", match="digits")
    rejects(C.load_calibration_split, 3, match="data set")
    rejects(C.load_calibration_split, "noisy", noise=1.0, match="noise")
    rejects(C.load_calibration_split, "noisy", noise=np.nan, match="noise")
    rejects(C.load_calibration_split, "iris", random_state=-1, match="random_state")
    rejects(C.load_calibration_split, "iris", random_state=1.5)
    rejects(C.load_calibration_split, "iris", label_noise=1.0, match="label_noise")
    rejects(C.load_calibration_split, "iris", label_noise=-0.1, match="label_noise")
    rejects(C.load_calibration_split, "noisy", label_noise=0.2, match="label_noise.*noise=")


@covers("calib.n_epochs")
def test_n_epochs_bad_input():
    rejects(C.n_epochs, 0, 10, 128, match="n")
    rejects(C.n_epochs, 90, 0, 128, match="epochs")
    rejects(C.n_epochs, 90, 10, 0, match="batch_size")
    rejects(C.n_epochs, 90, 10, 128, -1, match="min_steps")
    rejects(C.n_epochs, 90, 10, 128, 2.5, match="min_steps")


@covers("calib.fit_mlp", "calib.fit_ddso")
@FAST
@given(
    st.sampled_from(
        [
            dict(epochs=0),
            dict(epochs=-3),
            dict(lr=0.0),
            dict(lr=np.nan),
            dict(batch_size=0),
            dict(hidden=0),
            dict(epochs="5"),
            dict(min_steps=-1),
            dict(min_steps=1.5),
        ]
    )
)
def test_training_budgets(kw):
    split = C.load_calibration_split("iris", random_state=0)
    rejects(C.fit_mlp, split, **kw)
    rejects(C.fit_ddso, split, **kw)


def test_training_options(iris):
    rejects(C.fit_mlp, "iris", match="Split")
    rejects(C.fit_mlp, iris, loss="mse", match="loss")
    rejects(C.fit_mlp, iris, smoothing=1.0, match="smoothing")
    rejects(C.fit_mlp, iris, gamma=-1.0, match="gamma")
    rejects(C.fit_ddso, iris, alpha=1.5, match="alpha")
    rejects(C.fit_ddso, iris, lam=-1.0, match="lam")
    rejects(C.fit_ddso, iris, detach="yes", match="detach")


@covers("calib.fit_temperature", "calib.fit_adapter")
@FAST
@given(st.sampled_from([np.zeros(3), np.zeros((2, 1)), np.array([[np.nan, 0.0], [0.0, 0.0]]), "z", None, np.array([["a", "b"]])]))
def test_bad_logits(z):
    y = np.zeros(len(z) if hasattr(z, "__len__") and not isinstance(z, str) else 1, int)
    rejects(C.fit_temperature, z, y)
    rejects(C.fit_adapter, z, y)


def test_post_hoc_options():
    z = np.zeros((4, 3))
    rejects(C.fit_temperature, z, np.array([0, 1, 2, 3]), match="labels")
    rejects(C.fit_temperature, z, np.zeros(4, int), max_iter=0, match="max_iter")
    rejects(C.fit_adapter, z, np.zeros(4, int), steps=0, match="steps")
    rejects(C.fit_adapter, z, np.zeros(4, int), lr=-1.0, match="lr")
    rejects(C.fit_adapter, z, np.zeros(3, int), match="labels")


@covers("calib.focal_loss", "calib.pit_loss")
@FAST
@given(
    st.sampled_from(
        [
            (torch.zeros(3), torch.zeros(3, dtype=torch.int64)),
            (torch.zeros(3, 2), torch.zeros(2, dtype=torch.int64)),
            (torch.zeros(3, 2), torch.zeros(3)),
            (torch.zeros(3, 2), torch.full((3,), 5)),
            (np.zeros((3, 2)), np.zeros(3, int)),
            (torch.full((2, 2), float("nan")), torch.zeros(2, dtype=torch.int64)),
        ]
    )
)
def test_bad_loss_inputs(args):
    rejects(C.focal_loss, *args)
    rejects(C.pit_loss, *args)


def test_loss_parameters():
    z, y = torch.zeros(3, 2), torch.zeros(3, dtype=torch.int64)
    rejects(C.focal_loss, z, y, gamma=-0.5, match="gamma")
    rejects(C.pit_loss, z, y, alpha=2.0, match="alpha")


@covers("calib.MLP", "calib.MonotoneAdapter")
def test_model_constructors_and_calls():
    rejects(C.MLP, 0, 3, match="n_features")
    rejects(C.MLP, 4, 1, match="n_classes")
    rejects(C.MLP, 4, 3, hidden=0, match="hidden")
    m = C.MLP(4, 3)
    rejects(m.logits, np.zeros((2, 5)), match="shape")
    rejects(m.logits, np.array([[np.nan] * 4]), match="NaN")
    rejects(m.logits, "x")
    rejects(C.MonotoneAdapter, (1.0, -1.0), match="negative")
    rejects(C.MonotoneAdapter, (), match="negative")
    ad = C.MonotoneAdapter()
    rejects(ad, torch.zeros(3), match="shape")
    rejects(ad, np.zeros((3, 2)), match="shape")
