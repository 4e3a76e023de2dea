"""Calibration metrics and a reconstruction of mPAIC / DDSO calibration (chapter 17).

The paper (ICML 2026; full text and code not public) proposes one calibration objective
for classifiers that output a predictive distribution (the *mPAIC* objective) and a
training scheme, *Decoupled Dual-Stream Optimization* (DDSO), in which a discriminative
stream and a calibration stream are optimised together with the gradient of the
calibration stream detached from the representation. Only the abstract is available, so
everything below that is not a standard metric is **our reconstruction** (marked (R)):

- (R) the calibration loss is a randomised-PIT loss in the spirit of PAIC (Zhao, Ma &
  Ermon, 2020): the randomised probability integral transform of the true label under a
  random class order is pushed towards the uniform law (1-Wasserstein distance between
  the batch's sorted PIT values and the uniform grid), mixed with the NLL for sharpness;
- (R) the calibration head is an order-preserving ("monotone") map of the logits, so it
  never changes the predicted class;
- (R) the calibration stream reads batches of a held-out calibration split, with the
  logits detached (DDSO) or not detached (the naive joint loss).

Metrics (standard): top-label ECE with equal-width bins (Guo et al., 2017), class-wise ECE
(Kull et al., 2019), adaptive / equal-mass ECE (Nixon et al., 2019), the randomised PIT of a
categorical forecast and its Kolmogorov–Smirnov distance to the uniform law.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ._common import RandomState, check_int, check_random_state, check_real, seed_from

DATASETS = ("digits", "wine", "breast_cancer", "iris", "noisy")
"""The data sets of the chapter: four of scikit-learn's bundled sets and a noisy synthetic one."""

SUM_ATOL = 1e-4
"""How far a row of probabilities may be from summing to 1."""

LOSSES = ("ce", "label_smoothing", "focal")

_REF = (
    "mPAIC / DDSO calibration, ICML 2026 (full text and code not public; method reconstructed "
    "from the abstract). Zhao, Ma & Ermon, Individual Calibration with Randomized Forecasting, "
    "ICML 2020 (arXiv:2006.10288)."
)


# ----------------------------------------------------------------------------- input checks


_NO_LABELS = object()


def _check_probs(probs: Any, labels: Any = _NO_LABELS, *, name: str = "probs") -> tuple[np.ndarray, np.ndarray | None]:
    if isinstance(probs, (str, bytes)) or probs is None:
        raise TypeError(f"{name} must be an array of shape (n, K), got {type(probs).__name__}")
    try:
        p = np.asarray(probs)
    except Exception as exc:  # ragged lists and the like
        raise TypeError(f"{name} must be an array of shape (n, K): {exc}") from None
    if p.dtype == bool or not (np.issubdtype(p.dtype, np.floating) or np.issubdtype(p.dtype, np.integer)):
        raise TypeError(f"{name} must hold real numbers, got dtype {p.dtype}")
    if p.ndim != 2 or p.shape[0] < 1 or p.shape[1] < 2:
        raise ValueError(f"{name} must have shape (n, K) with n >= 1 and K >= 2 classes, got shape {p.shape}")
    # min and max propagate NaN and an infinity lands outside [0, 1]: no separate isfinite pass
    lo, hi = p.min(), p.max()
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise ValueError(f"{name} holds NaN or infinite values; probabilities must be finite numbers in [0, 1]")
    if lo < 0 or hi > 1:
        raise ValueError(f"{name} must lie in [0, 1], got values in [{p.min():.4g}, {p.max():.4g}]")
    bad = _rows_off_one(p)
    if bad.any():
        s = p.sum(1, dtype=np.float64)
        i = int(np.argmax(bad))
        raise ValueError(
            f"{name}: rows must sum to 1 (within {SUM_ATOL:g}); {int(bad.sum())} do not, e.g. row {i} sums to {s[i]:.6g}"
        )
    if labels is _NO_LABELS:
        return p, None
    if isinstance(labels, (str, bytes)) or labels is None:
        raise TypeError(f"labels must be an integer array of shape (n,), got {type(labels).__name__}")
    y = np.asarray(labels)
    if y.dtype == bool or not (np.issubdtype(y.dtype, np.integer) or np.issubdtype(y.dtype, np.floating)):
        raise TypeError(f"labels must be integers, got dtype {y.dtype}")
    if y.ndim != 1 or y.shape[0] != p.shape[0]:
        raise ValueError(f"labels must have shape ({p.shape[0]},) to match {name}, got shape {y.shape}")
    if np.issubdtype(y.dtype, np.floating):
        if not np.all(np.isfinite(y)) or not np.all(y == np.round(y)):
            raise ValueError("labels must be whole numbers (class indices)")
        y = y.astype(np.int64)
    if y.min() < 0 or y.max() >= p.shape[1]:
        raise ValueError(f"labels must lie in [0, {p.shape[1] - 1}] (K = {p.shape[1]} classes), got [{y.min()}, {y.max()}]")
    return p, y


def _rows_off_one(p: np.ndarray) -> np.ndarray:
    """Rows (n,) of ``p`` whose sum is farther than ``SUM_ATOL`` from 1, as an exact float64 sum decides.

    The row sums come from one matrix-vector product in ``p``'s own float type (a BLAS call,
    several times faster than a float64 reduction over short rows); only rows whose fast sum
    lies within that product's rounding bound of the tolerance are summed again in float64,
    so the rows flagged are exactly those of ``|p.sum(1, dtype=float64) - 1| > SUM_ATOL``.
    """
    if not np.issubdtype(p.dtype, np.floating) or p.dtype.itemsize < 4:
        return np.abs(p.sum(1, dtype=np.float64) - 1) > SUM_ATOL
    s = p @ np.ones(p.shape[1], dtype=p.dtype)  # (n,)
    # |fast - exact| <= K eps sum|p_ik| <= K eps (1 + SUM_ATOL) for rows near 1; doubled for safety
    err = 2.0 * p.shape[1] * float(np.finfo(p.dtype).eps) * (1.0 + SUM_ATOL) + 1e-12
    dev = np.abs(s.astype(np.float64) - 1)
    bad = dev > SUM_ATOL + err
    near = np.flatnonzero((dev > SUM_ATOL - err) & ~bad)
    if near.size:
        bad[near] = np.abs(p[near].sum(1, dtype=np.float64) - 1) > SUM_ATOL
    return bad


def _binned_gap(conf: np.ndarray, hit: np.ndarray, n_bins: int) -> float:
    """sum_b |sum_{i in b} hit_i - conf_i| / n over equal-width bins [b/M, (b+1)/M), the last one closed."""
    idx = np.minimum((conf * n_bins).astype(np.int64), n_bins - 1)
    diff = np.bincount(idx, weights=hit.astype(np.float64) - conf, minlength=n_bins)
    return float(np.abs(diff).sum() / conf.shape[0])


# ----------------------------------------------------------------------------- metrics


def top_label_ece(probs: Any, labels: Any, n_bins: int = 15) -> float:
    r"""Top-label expected calibration error with equal-width confidence bins.

    .. math:: \mathrm{ECE} = \sum_{b=1}^{M} \frac{|B_b|}{n}\,
              \bigl|\operatorname{acc}(B_b) - \operatorname{conf}(B_b)\bigr|,

    where :math:`c_i = \max_k p_{ik}` is the confidence, bin :math:`B_b` holds the points
    with :math:`c_i \in [(b-1)/M, b/M)` (the last bin also holds :math:`c_i = 1`) and
    :math:`\operatorname{acc}` is the share of correct top-1 predictions.

    Parameters
    ----------
    probs : array_like, shape (n, K)
        Predicted probabilities; every row must sum to 1 (within ``SUM_ATOL``).
    labels : array_like of int, shape (n,)
        True classes in ``[0, K)``.
    n_bins : int, default 15
        Number of equal-width bins (>= 1).

    Returns
    -------
    float
        The ECE, in ``[0, 1]``.

    References
    ----------
    Guo, Pleiss, Sun & Weinberger, On Calibration of Modern Neural Networks, ICML 2017.
    Same binning as ``torchmetrics.classification.MulticlassCalibrationError`` (norm "l1")
    except that torchmetrics gives a confidence of exactly 1 a bin of its own.
    """
    n_bins = check_int(n_bins, "n_bins", low=1)
    p, y = _check_probs(probs, labels)
    conf, pred = _top_label(p)
    return _binned_gap(conf.astype(np.float64), pred == y, n_bins)


def _top_label(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(max_k p_ik, argmax_k p_ik)`` per row, the first maximum on ties (as ``numpy.argmax``).

    For a writeable float32/float64 array, torch's ``max(dim=1)`` gives both in one pass over
    ``p``, about a third faster than ``argmax`` plus a gather over rows of ten classes; any
    other array takes the NumPy route. Both give the same values.
    """
    if p.dtype in (np.float32, np.float64) and p.dtype.isnative and p.flags.writeable and p.flags.c_contiguous:
        v, i = _torch().from_numpy(p).max(1)
        return v.numpy(), i.numpy()
    pred = p.argmax(1)
    return p[np.arange(p.shape[0]), pred], pred


def classwise_ece(probs: Any, labels: Any, n_bins: int = 15) -> float:
    r"""Class-wise ECE: the mean over classes of the binned calibration error of :math:`p_k`.

    .. math:: \mathrm{cwECE} = \frac1K \sum_{k=1}^{K} \sum_{b=1}^{M} \frac{|B_{kb}|}{n}\,
              \bigl|\overline{\mathbf 1\{y = k\}}_{B_{kb}} - \overline{p_k}_{B_{kb}}\bigr|,

    with bins :math:`B_{kb}` of equal width over the values :math:`p_{ik}` of all points.

    Parameters
    ----------
    probs : array_like, shape (n, K)
        Predicted probabilities; rows sum to 1.
    labels : array_like of int, shape (n,)
        True classes.
    n_bins : int, default 15
        Equal-width bins per class (>= 1).

    Returns
    -------
    float

    References
    ----------
    Kull et al., Beyond temperature scaling: Obtaining well-calibrated multiclass
    probabilities with Dirichlet calibration, NeurIPS 2019. Equals the mean over ``k`` of
    ``torchmetrics`` ``BinaryCalibrationError`` on ``(p[:, k], y == k)``.
    """
    n_bins = check_int(n_bins, "n_bins", low=1)
    p, y = _check_probs(probs, labels)
    n, K = p.shape
    hit = (y[:, None] == np.arange(K)[None, :]).astype(np.float64)
    idx = np.minimum((p.astype(np.float64) * n_bins).astype(np.int64), n_bins - 1) + n_bins * np.arange(K)[None, :]
    diff = np.bincount(idx.ravel(), weights=(hit - p).ravel(), minlength=n_bins * K)
    return float(np.abs(diff).sum() / (n * K))


def adaptive_ece(probs: Any, labels: Any, n_bins: int = 15) -> float:
    r"""Adaptive (equal-mass) top-label ECE.

    The points are sorted by confidence and cut into ``n_bins`` groups of (almost) equal
    size (``numpy.array_split``; sizes differ by at most one); ties are broken by the order
    of the input. Empty groups (``n_bins > n``) are skipped.

    .. math:: \mathrm{aECE} = \sum_{g} \frac{|G_g|}{n}\,
              \bigl|\operatorname{acc}(G_g) - \operatorname{conf}(G_g)\bigr|.

    Parameters
    ----------
    probs : array_like, shape (n, K)
        Predicted probabilities; rows sum to 1.
    labels : array_like of int, shape (n,)
        True classes.
    n_bins : int, default 15
        Number of equal-mass groups (>= 1).

    Returns
    -------
    float

    References
    ----------
    Nixon et al., Measuring Calibration in Deep Learning, CVPR Workshops 2019.
    """
    n_bins = check_int(n_bins, "n_bins", low=1)
    p, y = _check_probs(probs, labels)
    pred = p.argmax(1)
    conf = p[np.arange(p.shape[0]), pred].astype(np.float64)
    gap = (pred == y) - conf
    order = np.argsort(conf, kind="stable")
    return float(sum(abs(gap[g].sum()) for g in np.array_split(order, n_bins) if g.size) / p.shape[0])


def pit_values(probs: Any, labels: Any, *, class_order: str = "random", random_state: RandomState = None) -> np.ndarray:
    r"""Randomised probability integral transform of the true label under a categorical forecast.

    With the classes in some order :math:`\pi`, :math:`Q(y^-)` the forecast mass of the
    classes before :math:`y` and :math:`v \sim U(0, 1)`,

    .. math:: u = Q_\pi(y^-) + v\, p_y .

    If the forecast equals the true conditional law, :math:`u \sim U(0, 1)` for every order.

    Parameters
    ----------
    probs : array_like, shape (n, K)
        Predicted probabilities; rows sum to 1.
    labels : array_like of int, shape (n,)
        True classes.
    class_order : {"random", "fixed"}
        ``"random"``: a fresh uniformly random order of the classes for each point;
        ``"fixed"``: the order ``0, 1, ..., K-1``.
    random_state : int, numpy.random.Generator or None
        Draws ``v`` (and the orders).

    Returns
    -------
    numpy.ndarray, shape (n,)
        PIT values in ``[0, 1]``.

    References
    ----------
    Zhao, Ma & Ermon, Individual Calibration with Randomized Forecasting, ICML 2020
    (the PIT for continuous forecasts; the randomised categorical version is standard,
    e.g. Czado, Gneiting & Held, 2009). Its use in mPAIC is our reconstruction.
    """
    if class_order not in ("random", "fixed"):
        raise ValueError(f"class_order={class_order!r} must be 'random' or 'fixed'")
    p, y = _check_probs(probs, labels)
    rng = check_random_state(random_state)
    n, K = p.shape
    p = p.astype(np.float64)
    if class_order == "random":
        keys = rng.random((n, K))
        before = keys < keys[np.arange(n), y][:, None]
    else:
        before = np.arange(K)[None, :] < y[:, None]
    q_before = (p * before).sum(1)
    u = q_before + rng.random(n) * p[np.arange(n), y]
    return np.clip(u, 0.0, 1.0)


def _check_unit(u: Any, name: str = "u") -> np.ndarray:
    if isinstance(u, (str, bytes)) or u is None:
        raise TypeError(f"{name} must be a 1-D array of values in [0, 1], got {type(u).__name__}")
    a = np.asarray(u)
    if a.dtype == bool or not (np.issubdtype(a.dtype, np.floating) or np.issubdtype(a.dtype, np.integer)):
        raise TypeError(f"{name} must hold real numbers, got dtype {a.dtype}")
    if a.ndim != 1 or a.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array, got shape {a.shape}")
    if not np.all(np.isfinite(a)) or a.min() < 0 or a.max() > 1:
        raise ValueError(f"{name} must hold finite values in [0, 1]")
    return a.astype(np.float64)


def ks_uniform(u: Any) -> float:
    r"""Kolmogorov–Smirnov distance between the empirical law of ``u`` and :math:`U(0, 1)`.

    .. math:: D_n = \max_i \max\Bigl(\tfrac{i}{n} - u_{(i)},\; u_{(i)} - \tfrac{i-1}{n}\Bigr).

    Parameters
    ----------
    u : array_like, shape (n,)
        Values in ``[0, 1]`` (PIT values).

    Returns
    -------
    float
        :math:`D_n \in [0, 1]`; equals ``scipy.stats.kstest(u, "uniform").statistic``.

    References
    ----------
    Kolmogorov (1933), Smirnov (1948); used on PIT values to assess calibration of
    probabilistic forecasts (Gneiting, Balabdaoui & Raftery, 2007).
    """
    a = np.sort(_check_unit(u))
    n = a.size
    i = np.arange(1, n + 1)
    return float(max((i / n - a).max(), (a - (i - 1) / n).max()))


def pit_histogram(u: Any, n_bins: int = 10) -> tuple[np.ndarray, np.ndarray]:
    """Density histogram of PIT values on ``n_bins`` equal-width bins of ``[0, 1]``.

    Parameters
    ----------
    u : array_like, shape (n,)
        Values in ``[0, 1]``.
    n_bins : int, default 10
        Number of bins (>= 1).

    Returns
    -------
    density : numpy.ndarray, shape (n_bins,)
        Histogram density (1 everywhere for a perfectly uniform sample).
    edges : numpy.ndarray, shape (n_bins + 1,)

    References
    ----------
    Dawid (1984); Gneiting, Balabdaoui & Raftery, Probabilistic forecasts, calibration and
    sharpness, JRSS-B 2007.
    """
    n_bins = check_int(n_bins, "n_bins", low=1)
    a = _check_unit(u)
    density, edges = np.histogram(a, bins=n_bins, range=(0.0, 1.0), density=True)
    return density, edges


def calibration_report(probs: Any, labels: Any, *, n_bins: int = 15, random_state: RandomState = None) -> dict[str, float]:
    """Accuracy, NLL and every calibration metric of this module for one forecast.

    Parameters
    ----------
    probs : array_like, shape (n, K)
        Predicted probabilities; rows sum to 1.
    labels : array_like of int, shape (n,)
        True classes.
    n_bins : int, default 15
        Bins of the ECEs (>= 1).
    random_state : int, numpy.random.Generator or None
        Draws the PIT's randomisation.

    Returns
    -------
    dict
        ``accuracy``, ``nll``, ``ece``, ``cw_ece``, ``ada_ece``, ``pit_ks``.

    References
    ----------
    As :func:`top_label_ece`, :func:`classwise_ece`, :func:`adaptive_ece`, :func:`pit_values`.
    """
    n_bins = check_int(n_bins, "n_bins", low=1)
    p, y = _check_probs(probs, labels)
    py = p[np.arange(p.shape[0]), y].astype(np.float64)
    return {
        "accuracy": float((p.argmax(1) == y).mean()),
        "nll": float(-np.log(np.clip(py, 1e-12, None)).mean()),
        "ece": top_label_ece(p, y, n_bins),
        "cw_ece": classwise_ece(p, y, n_bins),
        "ada_ece": adaptive_ece(p, y, n_bins),
        "pit_ks": ks_uniform(pit_values(p, y, random_state=random_state)),
    }


# ----------------------------------------------------------------------------- data


@dataclass(frozen=True)
class Split:
    """Standardised train / calibration / test split of one data set (60 / 20 / 20, stratified)."""

    name: str
    X_train: np.ndarray
    y_train: np.ndarray
    X_cal: np.ndarray
    y_cal: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    n_classes: int


def load_calibration_split(name: str, *, random_state: RandomState = 0, noise: float = 0.1, label_noise: float = 0.0) -> Split:
    """One of the chapter's data sets, split 60 / 20 / 20 (stratified) and standardised on the train part.

    ``"digits"``, ``"wine"``, ``"breast_cancer"``, ``"iris"`` are scikit-learn's bundled
    sets; ``"noisy"`` is ``make_classification`` with 2000 points, 10 classes, 20 features
    (10 informative) and a fraction ``noise`` of labels replaced by random ones
    (``flip_y``), drawn from ``random_state``. ``label_noise`` does the same to a bundled
    set: each label, with probability ``label_noise``, is replaced by a class drawn
    uniformly at random (it may draw the same class), before the split, so that the
    train, calibration and test labels are equally noisy — a task with genuine label
    noise, on which an over-parameterised network trained past zero training error is
    overconfident (Guo et al., 2017; Zhang et al., 2017).

    Parameters
    ----------
    name : str
        One of :data:`DATASETS`.
    random_state : int, numpy.random.Generator or None
        Seeds the split, the synthetic set and the label noise.
    noise : float, default 0.1
        Label-noise fraction of ``"noisy"`` in ``[0, 1)``.
    label_noise : float, default 0.0
        Label-noise fraction of a bundled set in ``[0, 1)``; ``"noisy"`` takes its own from
        ``noise`` and refuses ``label_noise > 0``.

    Returns
    -------
    Split

    References
    ----------
    scikit-learn's bundled data sets; the reconstruction plan of chapter 17 (60/20/20).
    Label noise as ``sklearn.datasets.make_classification``'s ``flip_y``. Zhang, Bengio,
    Hardt, Recht & Vinyals, Understanding deep learning requires rethinking generalization,
    ICLR 2017 (over-parameterised networks fit random labels).
    """
    from sklearn import datasets
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    if not isinstance(name, str) or name not in DATASETS:
        raise ValueError(f"name={name!r} is not a data set of this chapter; use one of {', '.join(DATASETS)}")
    noise = check_real(noise, "noise", lo=0.0, hi=1.0, hi_open=True)
    label_noise = check_real(label_noise, "label_noise", lo=0.0, hi=1.0, hi_open=True)
    if name == "noisy" and label_noise > 0:
        raise ValueError(
            f"label_noise={label_noise!r} is for the bundled sets; the 'noisy' set takes its label noise from noise="
        )
    seed = seed_from(random_state)
    if name == "noisy":
        X, y = datasets.make_classification(
            n_samples=2000,
            n_features=20,
            n_informative=10,
            n_redundant=4,
            n_classes=10,
            n_clusters_per_class=1,
            flip_y=noise,
            class_sep=1.0,
            random_state=seed,
        )
    else:
        X, y = getattr(datasets, f"load_{name}")(return_X_y=True)
    K = int(y.max()) + 1  # classes 0..K-1 in every set; counted before any label is replaced
    if label_noise > 0:
        y = _replace_labels(y, label_noise, K, np.random.default_rng([seed, 17]))  # apart from the split's draws
    X_tr, X_rest, y_tr, y_rest = train_test_split(X, y, test_size=0.4, stratify=y, random_state=seed)
    X_cal, X_te, y_cal, y_te = train_test_split(X_rest, y_rest, test_size=0.5, stratify=y_rest, random_state=seed)
    sc = StandardScaler().fit(X_tr)
    f32 = lambda a: sc.transform(a).astype(np.float32)  # noqa: E731
    return Split(name, f32(X_tr), y_tr.astype(np.int64), f32(X_cal), y_cal.astype(np.int64), f32(X_te), y_te.astype(np.int64), K)


def _replace_labels(y: np.ndarray, fraction: float, n_classes: int, rng: np.random.Generator) -> np.ndarray:
    """A copy of ``y`` with each label, with probability ``fraction``, replaced by a uniform draw from ``0..n_classes-1``."""
    flip = rng.random(y.shape[0]) < fraction
    out = y.copy()
    out[flip] = rng.integers(0, n_classes, size=int(flip.sum()))
    return out


# ----------------------------------------------------------------------------- torch: models and losses


def _torch():
    import torch

    return torch


def _check_split(split: Any) -> Split:
    if not isinstance(split, Split):
        raise TypeError(f"split must be a calib.Split (from load_calibration_split), got {type(split).__name__}")
    return split


class MLP:
    """A two-hidden-layer ReLU perceptron: backbone :math:`f_\\phi` and linear head :math:`g_\\psi`.

    Built lazily as a ``torch.nn.Module`` (``.module``) so that importing this module does
    not import torch.

    Parameters
    ----------
    n_features : int
        Input dimension (>= 1).
    n_classes : int
        Number of classes (>= 2).
    hidden : int, default 128
        Width of both hidden layers (>= 1).
    random_state : int, numpy.random.Generator or None
        Seeds the initial weights.
    """

    def __init__(self, n_features: int, n_classes: int, hidden: int = 128, *, random_state: RandomState = 0):
        torch = _torch()
        n_features = check_int(n_features, "n_features", low=1)
        n_classes = check_int(n_classes, "n_classes", low=2)
        hidden = check_int(hidden, "hidden", low=1)
        nn = torch.nn
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed_from(random_state))
            self.backbone = nn.Sequential(nn.Linear(n_features, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU())
            self.head = nn.Linear(hidden, n_classes)
        self.module = nn.Sequential(self.backbone, self.head)
        self.n_features, self.n_classes = n_features, n_classes

    def logits(self, X: Any) -> Any:
        """Logits of ``X`` (n, n_features) as a torch tensor (n, n_classes), without gradient."""
        torch = _torch()
        X = _check_X(X, self.n_features)
        with torch.no_grad():
            return self.module(torch.as_tensor(X))


def _check_X(X: Any, n_features: int) -> np.ndarray:
    if isinstance(X, (str, bytes)) or X is None:
        raise TypeError(f"X must be an array of shape (n, {n_features}), got {type(X).__name__}")
    a = np.asarray(X)
    if a.dtype == bool or not (np.issubdtype(a.dtype, np.floating) or np.issubdtype(a.dtype, np.integer)):
        raise TypeError(f"X must hold real numbers, got dtype {a.dtype}")
    if a.ndim != 2 or a.shape[1] != n_features or a.shape[0] < 1:
        raise ValueError(f"X must have shape (n >= 1, {n_features}), got {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError("X holds NaN or infinite values")
    return a.astype(np.float32)


def focal_loss(logits: Any, target: Any, gamma: float = 3.0) -> Any:
    r"""Focal loss :math:`-\frac1n\sum_i (1 - p_{i,y_i})^\gamma \log p_{i,y_i}` (a torch scalar).

    Parameters
    ----------
    logits : torch.Tensor, shape (n, K)
    target : torch.Tensor of int64, shape (n,)
    gamma : float, default 3.0
        Focusing parameter (>= 0; 0 gives cross-entropy).

    Returns
    -------
    torch.Tensor
        Scalar loss.

    References
    ----------
    Lin et al., Focal Loss for Dense Object Detection, ICCV 2017; Mukhoti et al.,
    Calibrating Deep Neural Networks using Focal Loss, NeurIPS 2020.
    """
    torch = _torch()
    gamma = check_real(gamma, "gamma", lo=0.0)
    logits, target = _check_logits(logits, target)
    logp = torch.log_softmax(logits, 1).gather(1, target[:, None]).squeeze(1)
    return -(((1 - logp.exp()) ** gamma) * logp).mean()


def _check_logits(logits: Any, target: Any) -> tuple[Any, Any]:
    torch = _torch()
    if not isinstance(logits, torch.Tensor) or not isinstance(target, torch.Tensor):
        raise TypeError("logits and target must be torch tensors")
    if logits.ndim != 2 or logits.shape[1] < 2 or logits.shape[0] < 1 or target.shape != (logits.shape[0],):
        raise ValueError(
            f"logits must have shape (n, K >= 2) and target shape (n,), got {tuple(logits.shape)} and {tuple(target.shape)}"
        )
    if target.dtype != torch.int64:
        raise TypeError(f"target must be int64 class indices, got {target.dtype}")
    if int(target.min()) < 0 or int(target.max()) >= logits.shape[1]:
        raise ValueError(f"target must lie in [0, {logits.shape[1] - 1}]")
    if not bool(torch.isfinite(logits).all()):
        raise ValueError("logits hold NaN or infinite values")
    return logits, target


def pit_loss(probs: Any, target: Any, *, alpha: float = 0.1, generator: Any = None) -> Any:
    r"""(R) The calibration loss of our reconstruction: randomised-PIT uniformity plus NLL.

    With :math:`u_i` the randomised PIT of the true label under a random class order
    (:func:`pit_values`) and :math:`u_{(1)} \le \dots \le u_{(n)}` its sorted values,

    .. math:: L_{\mathrm{cal}} = (1-\alpha)\,\frac1n \sum_i \Bigl|u_{(i)} - \frac{i - 1/2}{n}\Bigr|
              + \alpha\, \frac1n \sum_i -\log p_{i, y_i}.

    The first term is the 1-Wasserstein distance between the batch's PIT values and the
    uniform law: the PAIC loss :math:`E|h[X,R](Y) - R|` of Zhao et al. with :math:`R`
    coupled monotonically to the PIT instead of drawn independently. A forecast that
    always predicts the uniform law also has uniform PITs, so the NLL term keeps the
    forecast sharp.

    Parameters
    ----------
    probs : torch.Tensor, shape (n, K)
        Predicted probabilities (differentiable).
    target : torch.Tensor of int64, shape (n,)
    alpha : float, default 0.1
        Weight of the NLL in ``[0, 1]``.
    generator : torch.Generator, optional
        Draws the class orders and ``v``.

    Returns
    -------
    torch.Tensor
        Scalar loss.

    References
    ----------
    Zhao, Ma & Ermon, ICML 2020 (PAIC, its loss and the NLL mixing); the mPAIC loss of the
    ICML 2026 paper is not public, this is a reconstruction.
    """
    torch = _torch()
    alpha = check_real(alpha, "alpha", lo=0.0, hi=1.0)
    probs, target = _check_logits(probs, target)
    n, K = probs.shape
    keys = torch.rand(n, K, generator=generator)
    before = (keys < keys.gather(1, target[:, None])).to(probs.dtype)
    py = probs.gather(1, target[:, None]).squeeze(1)
    u = (probs * before).sum(1) + torch.rand(n, generator=generator) * py
    grid = (torch.arange(n, dtype=probs.dtype) + 0.5) / n
    w1 = (torch.sort(u).values - grid).abs().mean()
    nll = -torch.log(py.clamp_min(1e-12)).mean()
    return (1 - alpha) * w1 + alpha * nll


class MonotoneAdapter:
    r"""(R) An order-preserving map of the logits: the calibration head of DDSO.

    With :math:`d_k = z_k - \max_j z_j \le 0`,

    .. math:: a_\omega(z)_k = t\, d_k + \sum_{j} w_j \,\mathrm{relu}(d_k - c_j),
              \qquad t = \mathrm{softplus}(\omega_0) > 0,\; w_j = \mathrm{softplus}(\omega_j) \ge 0,

    with fixed knots :math:`c_j \in \{-1, -2, -4, -8\}`. The map is the same strictly
    increasing function for every class, so it keeps the order of the logits and hence
    the predicted class (it contains temperature scaling, :math:`w = 0`).

    Parameters
    ----------
    knots : sequence of float, default (-1, -2, -4, -8)
        Negative knots :math:`c_j`.
    """

    def __init__(self, knots: tuple[float, ...] = (-1.0, -2.0, -4.0, -8.0)):
        torch = _torch()
        k = np.asarray(knots, dtype=float)
        if k.ndim != 1 or k.size == 0 or not np.all(np.isfinite(k)) or np.any(k >= 0):
            raise ValueError(f"knots={knots!r} must be a non-empty sequence of finite negative numbers")
        self.knots = torch.as_tensor(k, dtype=torch.float32)
        self.omega0 = torch.nn.Parameter(torch.tensor(float(np.log(np.e - 1))))  # t = 1
        self.omega = torch.nn.Parameter(torch.full((k.size,), -6.0))

    def parameters(self) -> list:
        """The trainable parameters (for a torch optimiser)."""
        return [self.omega0, self.omega]

    def __call__(self, logits: Any) -> Any:
        """Calibrated logits (differentiable in the adapter's parameters and in ``logits``)."""
        torch = _torch()
        if not isinstance(logits, torch.Tensor) or logits.ndim != 2 or logits.shape[1] < 2:
            raise ValueError("logits must be a torch tensor of shape (n, K >= 2)")
        F = torch.nn.functional
        d = logits - logits.max(1, keepdim=True).values
        out = F.softplus(self.omega0) * d
        return out + (F.softplus(self.omega)[None, None, :] * F.relu(d[..., None] - self.knots)).sum(-1)

    @property
    def temperature(self) -> float:
        """1 / t: the temperature of the linear part."""
        import torch.nn.functional as F

        return float(1 / F.softplus(self.omega0).detach())


@dataclass
class Trained:
    """A trained classifier with its optional calibration map (temperature or adapter)."""

    mlp: MLP
    adapter: MonotoneAdapter | None = None
    temperature: float | None = None

    def predict_probs(self, X: Any) -> np.ndarray:
        """Calibrated class probabilities of ``X``, shape (n, n_classes), float64."""
        torch = _torch()
        z = self.mlp.logits(X)
        with torch.no_grad():
            if self.adapter is not None:
                z = self.adapter(z)
            if self.temperature is not None:
                z = z / self.temperature
            return torch.softmax(z.double(), 1).numpy()


def _train(
    split: Split,
    *,
    loss: str,
    epochs: int,
    lr: float,
    batch_size: int,
    smoothing: float,
    gamma: float,
    stream2: str | None,
    alpha: float,
    lam: float,
    hidden: int,
    random_state: RandomState,
    min_steps: int = 0,
) -> Trained:
    torch = _torch()
    F = torch.nn.functional
    seed = seed_from(random_state)
    mlp = MLP(split.X_train.shape[1], split.n_classes, hidden, random_state=seed)
    adapter = MonotoneAdapter() if stream2 else None
    params = list(mlp.module.parameters())
    opt = torch.optim.Adam(params, lr=lr)
    opt_cal = torch.optim.Adam(adapter.parameters(), lr=10 * lr) if adapter else None
    g1 = torch.Generator().manual_seed(seed + 1)  # stream 1: batch order
    g2 = torch.Generator().manual_seed(seed + 2)  # stream 2: calibration batches and PIT draws
    Xtr, ytr = torch.as_tensor(split.X_train), torch.as_tensor(split.y_train)
    Xc, yc = torch.as_tensor(split.X_cal), torch.as_tensor(split.y_cal)
    n = Xtr.shape[0]
    bs2 = min(batch_size, Xc.shape[0])
    for _ in range(n_epochs(n, epochs, batch_size, min_steps)):
        perm = torch.randperm(n, generator=g1)
        for s in range(0, n, batch_size):
            idx = perm[s : s + batch_size]
            logits = mlp.module(Xtr[idx])
            if loss == "ce":
                l1 = F.cross_entropy(logits, ytr[idx])
            elif loss == "label_smoothing":
                l1 = F.cross_entropy(logits, ytr[idx], label_smoothing=smoothing)
            else:
                l1 = focal_loss(logits, ytr[idx], gamma)
            total = l1
            if adapter is not None:
                ci = torch.randperm(Xc.shape[0], generator=g2)[:bs2]
                zc = mlp.module(Xc[ci])
                if stream2 == "detach":
                    zc = zc.detach()  # DDSO: the calibration stream never reaches phi, psi
                l2 = pit_loss(torch.softmax(adapter(zc), 1), yc[ci], alpha=alpha, generator=g2)
                total = l1 + lam * l2
                opt_cal.zero_grad()
            opt.zero_grad()
            total.backward()
            opt.step()
            if opt_cal is not None:
                opt_cal.step()
    return Trained(mlp, adapter=adapter)


def n_epochs(n: int, epochs: int, batch_size: int, min_steps: int = 0) -> int:
    r"""Epochs of a training on ``n`` points: ``epochs``, or more so that it takes at least ``min_steps`` steps.

    .. math:: E = \max\bigl(\mathit{epochs},\ \lceil \mathit{min\_steps} / \lceil n / B \rceil \rceil\bigr),

    with :math:`B` the batch size: a data set of a few dozen points has one batch per
    epoch, and without the floor it would stop long before a larger set, short of fitting
    its training labels.

    Parameters
    ----------
    n : int
        Training points (>= 1).
    epochs : int
        Epochs asked for (>= 1).
    batch_size : int
        Batch size (>= 1).
    min_steps : int, default 0
        Least number of optimiser steps (>= 0).

    Returns
    -------
    int

    >>> n_epochs(90, 200, 128, 1000), n_epochs(1200, 200, 128, 1000)
    (1000, 200)
    """
    n, epochs = check_int(n, "n", low=1), check_int(epochs, "epochs", low=1)
    batch_size, min_steps = check_int(batch_size, "batch_size", low=1), check_int(min_steps, "min_steps", low=0)
    per_epoch = -(-n // batch_size)
    return max(epochs, -(-min_steps // per_epoch))


def _check_train_args(split, epochs, lr, batch_size, hidden, min_steps=0):
    _check_split(split)
    check_int(min_steps, "min_steps", low=0)
    return (
        check_int(epochs, "epochs", low=1),
        check_real(lr, "lr", lo=0.0, lo_open=True),
        check_int(batch_size, "batch_size", low=1),
        check_int(hidden, "hidden", low=1),
    )


def fit_mlp(
    split: Split,
    *,
    loss: str = "ce",
    epochs: int = 200,
    lr: float = 1e-3,
    batch_size: int = 128,
    smoothing: float = 0.1,
    gamma: float = 3.0,
    hidden: int = 128,
    random_state: RandomState = 0,
    min_steps: int = 0,
) -> Trained:
    """Train the MLP on the train part with cross-entropy, label smoothing or focal loss (Adam, no weight decay).

    Parameters
    ----------
    split : Split
        From :func:`load_calibration_split`.
    loss : {"ce", "label_smoothing", "focal"}
    epochs, lr, batch_size, hidden
        Optimisation budget and width (positive).
    smoothing : float, default 0.1
        Label-smoothing weight in ``[0, 1)``.
    gamma : float, default 3.0
        Focal-loss exponent (>= 0).
    random_state : int, numpy.random.Generator or None
        Seeds the initial weights and the batch order.
    min_steps : int, default 0
        Train for more than ``epochs`` epochs where needed to take at least this many
        optimiser steps (:func:`n_epochs`).

    Returns
    -------
    Trained

    References
    ----------
    Szegedy et al. 2016 (label smoothing); Mukhoti et al. 2020 (focal loss for calibration).
    """
    epochs, lr, batch_size, hidden = _check_train_args(split, epochs, lr, batch_size, hidden, min_steps)
    if loss not in LOSSES:
        raise ValueError(f"loss={loss!r} is not one of {', '.join(LOSSES)}")
    smoothing = check_real(smoothing, "smoothing", lo=0.0, hi=1.0, hi_open=True)
    gamma = check_real(gamma, "gamma", lo=0.0)
    return _train(
        split,
        loss=loss,
        epochs=epochs,
        lr=lr,
        batch_size=batch_size,
        smoothing=smoothing,
        gamma=gamma,
        stream2=None,
        alpha=0.0,
        lam=0.0,
        hidden=hidden,
        random_state=random_state,
        min_steps=min_steps,
    )


def fit_ddso(
    split: Split,
    *,
    detach: bool = True,
    alpha: float = 0.1,
    lam: float = 1.0,
    epochs: int = 200,
    lr: float = 1e-3,
    batch_size: int = 128,
    hidden: int = 128,
    random_state: RandomState = 0,
    min_steps: int = 0,
) -> Trained:
    r"""(R) DDSO pre-calibration (``detach=True``) or the naive joint loss (``detach=False``).

    Each step takes a training batch for stream 1 and a calibration-split batch for
    stream 2 and minimises :math:`L_1 + \lambda L_2`, with
    :math:`L_1 = \mathrm{CE}(g_\psi(f_\phi(x)), y)` and
    :math:`L_2 = L_{\mathrm{cal}}(\mathrm{softmax}(a_\omega(\bar z)), y_c)` (:func:`pit_loss`),
    :math:`\bar z = g_\psi(f_\phi(x_c))`. DDSO detaches :math:`\bar z`, so :math:`L_2`
    updates :math:`\omega` only and stream 1 trains exactly as plain cross-entropy (same
    initial weights and batch order as :func:`fit_mlp`); the naive joint loss lets
    :math:`L_2` reach :math:`\phi, \psi`. Predictions are
    :math:`\mathrm{softmax}(a_\omega(g_\psi(f_\phi(x))))` in both cases.

    Parameters
    ----------
    split : Split
    detach : bool, default True
        Detach the calibration stream (DDSO) or not (naive joint loss).
    alpha : float, default 0.1
        NLL weight inside :func:`pit_loss`, in ``[0, 1]``.
    lam : float, default 1.0
        Weight of the calibration stream (>= 0).
    epochs, lr, batch_size, hidden, random_state, min_steps
        As in :func:`fit_mlp`.

    Returns
    -------
    Trained
        With its ``adapter`` set.

    References
    ----------
    The ICML 2026 mPAIC / DDSO paper (abstract only: two optimisation streams with gradient
    detachment); the streams' data and the adapter are our reconstruction.
    """
    epochs, lr, batch_size, hidden = _check_train_args(split, epochs, lr, batch_size, hidden, min_steps)
    if not isinstance(detach, (bool, np.bool_)):
        raise TypeError(f"detach={detach!r} must be a bool")
    alpha = check_real(alpha, "alpha", lo=0.0, hi=1.0)
    lam = check_real(lam, "lam", lo=0.0)
    return _train(
        split,
        loss="ce",
        epochs=epochs,
        lr=lr,
        batch_size=batch_size,
        smoothing=0.0,
        gamma=0.0,
        stream2="detach" if detach else "joint",
        alpha=alpha,
        lam=lam,
        hidden=hidden,
        random_state=random_state,
        min_steps=min_steps,
    )


def fit_temperature(logits: Any, labels: Any, *, max_iter: int = 200) -> float:
    r"""Temperature scaling: :math:`T^\star = \arg\min_T \mathrm{NLL}(\mathrm{softmax}(z / T), y)`.

    Parameters
    ----------
    logits : array_like or torch.Tensor, shape (n, K)
        Logits of the calibration split.
    labels : array_like of int, shape (n,)
    max_iter : int, default 200
        L-BFGS iterations on :math:`\log T` (>= 1).

    Returns
    -------
    float
        :math:`T^\star > 0`.

    References
    ----------
    Guo, Pleiss, Sun & Weinberger, On Calibration of Modern Neural Networks, ICML 2017.
    """
    torch = _torch()
    max_iter = check_int(max_iter, "max_iter", low=1)
    z, y = _as_logits(logits, labels)
    log_t = torch.zeros((), dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS([log_t], lr=0.1, max_iter=max_iter, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(z / log_t.exp(), y)
        loss.backward()
        return loss

    opt.step(closure)
    return float(log_t.detach().exp())


def _as_logits(logits: Any, labels: Any) -> tuple[Any, Any]:
    torch = _torch()
    if isinstance(logits, torch.Tensor):
        logits = logits.detach().numpy()
    if isinstance(logits, (str, bytes)) or logits is None:
        raise TypeError(f"logits must be an array of shape (n, K), got {type(logits).__name__}")
    z = np.asarray(logits)
    if z.dtype == bool or not (np.issubdtype(z.dtype, np.floating) or np.issubdtype(z.dtype, np.integer)):
        raise TypeError(f"logits must hold real numbers, got dtype {z.dtype}")
    if z.ndim != 2 or z.shape[0] < 1 or z.shape[1] < 2:
        raise ValueError(f"logits must have shape (n >= 1, K >= 2), got {z.shape}")
    if not np.all(np.isfinite(z)):
        raise ValueError("logits hold NaN or infinite values")
    _, y = _check_probs(np.full(z.shape, 1.0 / z.shape[1]), labels)
    return torch.as_tensor(z, dtype=torch.float64), torch.as_tensor(y)


def fit_adapter(
    logits: Any, labels: Any, *, alpha: float = 0.1, steps: int = 300, lr: float = 0.05, random_state: RandomState = 0
) -> MonotoneAdapter:
    """(R) DDSO post-calibration: fit a :class:`MonotoneAdapter` to a frozen classifier's logits.

    Full-batch Adam on :func:`pit_loss` over the calibration split; fresh class orders and
    PIT draws at every step.

    Parameters
    ----------
    logits : array_like or torch.Tensor, shape (n, K)
        Logits of the calibration split from the frozen classifier.
    labels : array_like of int, shape (n,)
    alpha : float, default 0.1
        NLL weight in :func:`pit_loss`.
    steps : int, default 300
        Adam steps (>= 1).
    lr : float, default 0.05
        Learning rate (> 0).
    random_state : int, numpy.random.Generator or None
        Draws the PIT randomisation.

    Returns
    -------
    MonotoneAdapter

    References
    ----------
    The ICML 2026 mPAIC / DDSO paper (abstract: "a light post-calibration adapter"); its
    form here is our reconstruction.
    """
    torch = _torch()
    steps = check_int(steps, "steps", low=1)
    lr = check_real(lr, "lr", lo=0.0, lo_open=True)
    alpha = check_real(alpha, "alpha", lo=0.0, hi=1.0)
    z, y = _as_logits(logits, labels)
    z = z.float()
    g = torch.Generator().manual_seed(seed_from(random_state))
    adapter = MonotoneAdapter()
    opt = torch.optim.Adam(adapter.parameters(), lr=lr)
    for _ in range(steps):
        opt.zero_grad()
        loss = pit_loss(torch.softmax(adapter(z), 1), y, alpha=alpha, generator=g)
        loss.backward()
        opt.step()
    return adapter


__all__ = [
    "DATASETS",
    "LOSSES",
    "MLP",
    "MonotoneAdapter",
    "Split",
    "Trained",
    "adaptive_ece",
    "calibration_report",
    "classwise_ece",
    "fit_adapter",
    "fit_ddso",
    "fit_mlp",
    "fit_temperature",
    "focal_loss",
    "ks_uniform",
    "load_calibration_split",
    "n_epochs",
    "pit_histogram",
    "pit_loss",
    "pit_values",
    "top_label_ece",
]
