"""icml26.calib: metrics against hand-computed values, scipy and torchmetrics; the adapter keeps the argmax;
DDSO's detached stream trains exactly as cross-entropy."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import stats

from icml26 import calib as C

torchmetrics = pytest.importorskip("torchmetrics")
from torchmetrics.functional.classification import binary_calibration_error, multiclass_calibration_error  # noqa: E402


def dirichlet_probs(n, K, seed, conc=0.5):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.full(K, conc), size=n)
    y = np.array([rng.choice(K, p=row) if rng.random() < 0.7 else rng.integers(K) for row in p])
    return p, y


# ----------------------------------------------------------------------------- hand-computed oracles


def _ece_direct(p, y, n_bins):
    """The top-label ECE the earlier way: argmax, gather, float64 bins (the oracle of the fast path)."""
    pred = p.argmax(1)
    conf = p[np.arange(len(p)), pred].astype(np.float64)
    idx = np.minimum((conf * n_bins).astype(np.int64), n_bins - 1)
    return float(np.abs(np.bincount(idx, weights=(pred == y) - conf, minlength=n_bins)).sum() / len(p))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_top_label_ece_fast_path_equals_argmax_and_gather_bit_for_bit(dtype):
    rng = np.random.default_rng(5)
    p = rng.dirichlet(np.full(6, 0.5), size=3000).astype(dtype)
    p /= p.sum(1, keepdims=True)
    # ties at the top, in different columns: the first maximum wins, as numpy.argmax
    p[:200] = 0.0
    p[:100, [1, 4]] = 0.5
    p[100:200, [0, 2, 5]] = dtype(1) / dtype(3)
    p[100:200, 5] = 1 - p[100:200, 0] - p[100:200, 2]
    y = rng.integers(0, 6, size=3000)
    y[:100] = 4  # a tie lost to the first maximum
    conf, pred = C._top_label(p)
    np.testing.assert_array_equal(pred, p.argmax(1))
    np.testing.assert_array_equal(conf, p.max(1))
    assert C.top_label_ece(p, y, 15) == _ece_direct(p, y, 15)
    ro = p.copy()
    ro.flags.writeable = False  # the NumPy route
    assert C.top_label_ece(ro, y, 15) == _ece_direct(p, y, 15)
    assert C.top_label_ece(np.asfortranarray(p), y, 15) == _ece_direct(p, y, 15)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_row_sum_check_is_the_exact_float64_one_near_the_tolerance(dtype):
    rng = np.random.default_rng(6)
    K = 10
    p = rng.dirichlet(np.ones(K), size=4000)
    # rows scaled to sums just inside and just outside 1 +- SUM_ATOL, straddling the fast sum's rounding
    target = 1 + rng.choice([-1, 1], size=4000) * C.SUM_ATOL * (1 + rng.uniform(-3e-3, 3e-3, size=4000))
    p = (p * target[:, None]).astype(dtype)
    exact = np.abs(p.sum(1, dtype=np.float64) - 1) > C.SUM_ATOL
    assert 0 < exact.sum() < len(p)
    np.testing.assert_array_equal(C._rows_off_one(p), exact)
    np.testing.assert_array_equal(
        C._rows_off_one(p.astype(np.float16)), np.abs(p.astype(np.float16).sum(1, dtype=np.float64) - 1) > C.SUM_ATOL
    )


def test_top_label_ece_by_hand():
    # confidences 0.9 (right), 0.9 (wrong), 0.6 (right), 0.55 (wrong); 2 bins [0, .5), [.5, 1]
    p = np.array([[0.9, 0.1], [0.9, 0.1], [0.4, 0.6], [0.55, 0.45]])
    y = np.array([0, 1, 1, 1])
    # one bin holds all four: acc 0.5, conf 0.7375 -> 0.2375
    assert C.top_label_ece(p, y, n_bins=2) == pytest.approx(0.2375)
    # 10 bins: {0.9, 0.9}: acc .5 conf .9 -> .4 * 2/4; {0.6}: |1 - .6| /4; {0.55}: |0 - .55| / 4
    assert C.top_label_ece(p, y, n_bins=10) == pytest.approx(0.2 + 0.1 + 0.1375)
    assert C.top_label_ece(p, y, n_bins=1) == pytest.approx(0.2375)


def test_classwise_ece_by_hand():
    p = np.array([[0.8, 0.2], [0.3, 0.7]])
    y = np.array([0, 0])
    # class 0, 1 bin: mean hit 1, mean p 0.55 -> 0.45; class 1: mean hit 0, mean p 0.45 -> 0.45
    assert C.classwise_ece(p, y, n_bins=1) == pytest.approx(0.45)
    # 2 bins: class 0: {0.8}: |1-.8|, {0.3}: |1-.3| -> (0.2 + 0.7)/2; class 1 the same -> 0.45
    assert C.classwise_ece(p, y, n_bins=2) == pytest.approx(0.45)


def test_adaptive_ece_by_hand():
    p = np.array([[0.9, 0.1], [0.8, 0.2], [0.6, 0.4], [0.7, 0.3]])
    y = np.array([0, 1, 0, 0])
    # sorted confidences 0.6 (right), 0.7 (right) | 0.8 (wrong), 0.9 (right)
    assert C.adaptive_ece(p, y, n_bins=2) == pytest.approx((abs(2 - 1.3) + abs(1 - 1.7)) / 4)
    assert C.adaptive_ece(p, y, n_bins=1) == pytest.approx(abs(3 - 3.0) / 4)
    assert C.adaptive_ece(p, y, n_bins=10) == pytest.approx(C.top_label_ece(p, y, n_bins=100))  # one point per group


def test_perfect_forecast_has_zero_ece():
    p = np.eye(3)[[0, 1, 2, 1]]
    y = np.array([0, 1, 2, 1])
    for f in (C.top_label_ece, C.classwise_ece, C.adaptive_ece):
        assert f(p, y) == 0.0


def test_pit_by_hand_fixed_order():
    p = np.array([[0.2, 0.3, 0.5]])
    rng = np.random.default_rng(0)
    v = np.random.default_rng(0).random(1)
    u = C.pit_values(p, np.array([1]), class_order="fixed", random_state=rng)
    assert u[0] == pytest.approx(0.2 + v[0] * 0.3)


def test_pit_is_uniform_for_a_calibrated_forecast():
    rng = np.random.default_rng(3)
    p = rng.dirichlet(np.ones(5), size=20000)
    y = np.array([rng.choice(5, p=row) for row in p])  # labels drawn from the forecast itself
    for order in ("random", "fixed"):
        u = C.pit_values(p, y, class_order=order, random_state=1)
        assert C.ks_uniform(u) < 0.015
    assert C.ks_uniform(C.pit_values(p**3 / (p**3).sum(1, keepdims=True), y, random_state=1)) > 0.03  # overconfident


def test_ks_uniform_matches_scipy():
    u = np.random.default_rng(0).beta(2, 1, size=500)
    assert C.ks_uniform(u) == pytest.approx(stats.kstest(u, "uniform").statistic, abs=1e-12)
    assert C.ks_uniform(np.array([0.5])) == pytest.approx(0.5)


def test_pit_histogram_density():
    dens, edges = C.pit_histogram(np.linspace(0.005, 0.995, 100), n_bins=10)
    np.testing.assert_allclose(dens, 1.0)
    assert edges[0] == 0 and edges[-1] == 1


# ----------------------------------------------------------------------------- against torchmetrics


@pytest.mark.parametrize("K,n,n_bins", [(2, 50, 5), (3, 500, 15), (10, 5000, 15), (10, 2000, 1), (5, 300, 40)])
def test_top_label_ece_matches_torchmetrics(K, n, n_bins):
    p, y = dirichlet_probs(n, K, seed=K + n)
    ref = multiclass_calibration_error(
        torch.tensor(p, dtype=torch.float64), torch.tensor(y), num_classes=K, n_bins=n_bins, norm="l1"
    )
    assert C.top_label_ece(p, y, n_bins) == pytest.approx(float(ref), abs=1e-6)


@pytest.mark.parametrize("K,n", [(2, 100), (4, 800), (10, 3000)])
def test_classwise_ece_matches_torchmetrics_binary_per_class(K, n):
    p, y = dirichlet_probs(n, K, seed=7 * K)
    pt, yt = torch.tensor(p, dtype=torch.float64), torch.tensor(y)
    ref = np.mean([float(binary_calibration_error(pt[:, k].contiguous(), (yt == k).long(), n_bins=15)) for k in range(K)])
    assert C.classwise_ece(p, y) == pytest.approx(ref, abs=1e-6)


def test_confidence_of_exactly_one_goes_to_the_last_bin():
    # torchmetrics gives c = 1 a bin of its own; we keep it in [14/15, 1] (stated in the docstring)
    p = np.array([[1.0, 0.0], [0.94, 0.06]])
    y = np.array([1, 0])
    assert C.top_label_ece(p, y, n_bins=15) == pytest.approx(abs(1 - 1.94) / 2)


# ----------------------------------------------------------------------------- methods


@pytest.fixture(scope="module")
def iris():
    return C.load_calibration_split("iris", random_state=0)


def test_split_sizes_and_standardisation(iris):
    assert len(iris.y_train) == 90 and len(iris.y_cal) == 30 and len(iris.y_test) == 30
    np.testing.assert_allclose(iris.X_train.mean(0), 0, atol=1e-5)
    noisy = C.load_calibration_split("noisy", random_state=1)
    assert noisy.n_classes == 10 and noisy.X_train.shape == (1200, 20)
    again = C.load_calibration_split("noisy", random_state=1)
    np.testing.assert_array_equal(noisy.X_test, again.X_test)


def test_label_noise_replaces_a_fraction_of_the_labels():
    y = np.repeat(np.arange(10), 10_000)
    out = C._replace_labels(y, 0.2, 10, np.random.default_rng(0))
    # replaced with probability 0.2 and redrawn uniformly over 10 classes: changed with probability 0.18
    # (sd of the share over 1e5 labels: 0.0012)
    assert abs(np.mean(out != y) - 0.18) < 0.006
    np.testing.assert_array_equal(np.bincount(out, minlength=10) > 9_000, True)
    assert out.min() >= 0 and out.max() <= 9
    np.testing.assert_array_equal(C._replace_labels(y, 0.0, 10, np.random.default_rng(0)), y)


def test_label_noise_in_a_split():
    clean = C.load_calibration_split("digits", random_state=0)
    default = C.load_calibration_split("digits", random_state=0, label_noise=0.0)
    np.testing.assert_array_equal(clean.y_test, default.y_test)
    np.testing.assert_array_equal(clean.X_test, default.X_test)
    noisy = C.load_calibration_split("digits", random_state=0, label_noise=0.2)
    again = C.load_calibration_split("digits", random_state=0, label_noise=0.2)
    np.testing.assert_array_equal(noisy.y_test, again.y_test)
    assert noisy.n_classes == 10 and len(noisy.y_test) == len(clean.y_test)
    assert not np.array_equal(noisy.y_train, clean.y_train)
    with pytest.raises(ValueError, match="label_noise"):
        C.load_calibration_split("noisy", label_noise=0.1)


def test_n_epochs_gives_a_step_floor():
    assert C.n_epochs(1200, 200, 128, 1000) == 200  # 10 batches an epoch: 2000 steps already
    assert C.n_epochs(90, 200, 128, 1000) == 1000  # one batch an epoch
    assert C.n_epochs(341, 200, 128, 1000) == 334  # 3 batches: ceil(1000 / 3)
    assert C.n_epochs(90, 5, 128) == 5


def test_min_steps_trains_longer_on_a_small_set(iris):
    short = C.fit_mlp(iris, epochs=2, random_state=0)
    again = C.fit_mlp(iris, epochs=2, min_steps=2, random_state=0)
    longer = C.fit_mlp(iris, epochs=2, min_steps=5, random_state=0)
    five = C.fit_mlp(iris, epochs=5, random_state=0)
    for a, b, c, d in zip(*(m.mlp.module.parameters() for m in (short, again, longer, five))):
        assert torch.equal(a, b) and torch.equal(c, d)
    assert not torch.equal(next(short.mlp.module.parameters()), next(longer.mlp.module.parameters()))


def _ts_control(sharpen, n_reps=6, n=1000, K=5):
    """The chapter's positive control on forecasts of known calibration: log(ECE CE / ECE TS) over replicates,
    TS fitted on a calibration half; the labels are drawn from softmax(z), the forecast is softmax(sharpen * z)."""
    from icml26.book import chapter

    cut = float(np.log(1 / 0.8))
    ce, ts = [], []
    for r in range(n_reps):
        rng = np.random.default_rng(r)
        z = rng.normal(size=(2 * n, K)) * 1.5
        p_true = np.exp(z) / np.exp(z).sum(1, keepdims=True)
        y = (p_true.cumsum(1) > rng.random((2 * n, 1))).argmax(1)
        zf = sharpen * z
        T = C.fit_temperature(zf[:n], y[:n])
        pf = np.exp(zf[n:] - zf[n:].max(1, keepdims=True))
        pf /= pf.sum(1, keepdims=True)
        pt = np.exp((zf[n:] - zf[n:].max(1, keepdims=True)) / T)
        pt /= pt.sum(1, keepdims=True)
        ce.append(C.top_label_ece(pf, y[n:]))
        ts.append(C.top_label_ece(pt, y[n:]))
    return chapter.paired_effect(np.log(ce), np.log(ts), smallest_effect=cut, basis="as chapter 17", names=("CE", "TS"))


def test_the_temperature_scaling_control_can_fail():
    # a calibrated forecast: temperature scaling has nothing to cut, and the control must not pass
    calibrated = _ts_control(1.0)
    assert calibrated.outcome != "supports", calibrated.detail
    # an overconfident one (logits tripled, as a network fitted past zero training error): it passes
    over = _ts_control(3.0)
    assert over.outcome == "supports" and over.stats["effect"] > 1.0, over.detail


def test_adapter_keeps_the_argmax():
    torch.manual_seed(0)
    z = torch.randn(2000, 7) * 5
    ad = C.MonotoneAdapter()
    with torch.no_grad():
        ad.omega0.fill_(-2.0)
        ad.omega.copy_(torch.tensor([3.0, -1.0, 2.0, 0.5]))
        out = ad(z)
    assert torch.equal(out.argmax(1), z.argmax(1))
    # and the full order of the logits in every row
    assert torch.equal(out.argsort(1), z.argsort(1))


def test_fitted_adapter_keeps_accuracy(iris):
    ce = C.fit_mlp(iris, epochs=20, random_state=0)
    ad = C.fit_adapter(ce.mlp.logits(iris.X_cal), iris.y_cal, steps=50, random_state=0)
    p0 = ce.predict_probs(iris.X_test)
    p1 = C.Trained(ce.mlp, adapter=ad).predict_probs(iris.X_test)
    np.testing.assert_array_equal(p0.argmax(1), p1.argmax(1))


def test_adapter_with_only_the_linear_part_is_temperature_scaling():
    z = torch.randn(50, 4)
    ad = C.MonotoneAdapter()
    with torch.no_grad():
        ad.omega.fill_(-60.0)  # softplus ~ 0
        ad.omega0.fill_(float(np.log(np.expm1(0.5))))  # t = 0.5, T = 2
        got = torch.softmax(ad(z), 1)
    torch.testing.assert_close(got, torch.softmax(z / 2, 1))
    assert ad.temperature == pytest.approx(2.0)


def test_ddso_stream_one_trains_exactly_as_cross_entropy(iris):
    ce = C.fit_mlp(iris, epochs=15, random_state=3)
    dd = C.fit_ddso(iris, epochs=15, random_state=3)
    for a, b in zip(ce.mlp.module.parameters(), dd.mlp.module.parameters()):
        assert torch.equal(a, b)
    naive = C.fit_ddso(iris, detach=False, epochs=15, random_state=3)
    assert not all(torch.equal(a, b) for a, b in zip(ce.mlp.module.parameters(), naive.mlp.module.parameters()))


def test_temperature_scaling_recovers_a_known_temperature():
    rng = np.random.default_rng(0)
    z = rng.normal(size=(4000, 5)) * 3
    p = np.exp(z / 2.5)
    p /= p.sum(1, keepdims=True)
    y = np.array([rng.choice(5, p=row) for row in p])
    assert C.fit_temperature(z, y) == pytest.approx(2.5, rel=0.1)


def test_pit_loss_prefers_a_calibrated_forecast():
    g = torch.Generator().manual_seed(0)
    rng = np.random.default_rng(0)
    z = rng.normal(size=(3000, 4)) * 2
    p = np.exp(z) / np.exp(z).sum(1, keepdims=True)
    y = torch.tensor([rng.choice(4, p=row) for row in p])
    cal = C.pit_loss(torch.tensor(p), y, alpha=0.0, generator=g)
    sharp = torch.softmax(torch.tensor(z) * 4, 1)
    assert float(C.pit_loss(sharp, y, alpha=0.0, generator=g)) > 3 * float(cal)


def test_focal_loss_with_gamma_zero_is_cross_entropy():
    z = torch.randn(20, 3)
    y = torch.randint(0, 3, (20,))
    torch.testing.assert_close(C.focal_loss(z, y, gamma=0.0), torch.nn.functional.cross_entropy(z, y))


def test_calibration_report_keys_and_determinism(iris):
    p, y = dirichlet_probs(200, 3, seed=0)
    a = C.calibration_report(p, y, random_state=0)
    assert set(a) == {"accuracy", "nll", "ece", "cw_ece", "ada_ece", "pit_ks"}
    assert a == C.calibration_report(p, y, random_state=0)
