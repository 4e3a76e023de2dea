r"""Offline classifier pools for chapter 02: predicted (log-)probabilities and true labels.

Nothing here downloads: scikit-learn's bundled digits ship with the package, and the
Gaussian mixture is generated from ``random_state``. Each pool carries log-probabilities
computed as a log-softmax of the classifier's logits, so that scores
(:func:`~icml26.bcp.conformal.nll_scores`) need no floor.

References
----------
.. [1] J. Liu, H. Zeng, H. Wei. "Tightening Coverage Bound for Backward Conformal
   Prediction via Non-Conformity Score Transformation", ICML 2026, arXiv:2602.01733
   (the paper's pools are CIFAR-10/100 and TinyImageNet ResNet outputs; these are
   stand-ins). Official notebook: github.com/Junxian-Liu1/ST-BCP.
.. [2] F. Pedregosa et al. "Scikit-learn: Machine Learning in Python", JMLR 12, 2011
   (the digits data set, PCA, logistic regression).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._common import RandomState, check_random_state, seed_from
from ._checks import as_float, as_float_array, as_int, as_int_array


def _log_softmax(logits: np.ndarray) -> np.ndarray:
    z = logits - logits.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


@dataclass
class ClassifierOutputs:
    """A held-out pool of predicted class log-probabilities and true labels.

    Parameters
    ----------
    log_probs : array (N, K)
        Log-probabilities (a log-softmax of logits), finite and normalised per row.
    labels : int array (N,)
        True labels in ``0..K-1``.
    name : str
        Short description.

    Attributes
    ----------
    probs : array (N, K)
        ``exp(log_probs)``.
    accuracy : float
        Top-1 accuracy on the pool.

    References
    ----------
    Liu, Zeng & Wei (ICML 2026), arXiv:2602.01733 (the pools are the test splits).
    """

    log_probs: np.ndarray
    labels: np.ndarray
    name: str = ""

    def __post_init__(self) -> None:
        lp = as_float_array(self.log_probs, "log_probs")
        if lp.ndim != 2 or lp.shape[0] < 1 or lp.shape[1] < 2:
            raise ValueError(f"log_probs must have shape (N, K) with N >= 1 and K >= 2, got {lp.shape}")
        if np.any(lp > 1e-9) or not np.allclose(np.exp(lp).sum(1), 1.0, atol=1e-6):
            raise ValueError("log_probs must be <= 0 and normalised per row (pass log-probabilities, not probabilities)")
        y = as_int_array(self.labels, "labels", low=0, high=lp.shape[1] - 1)
        if y.shape != (lp.shape[0],):
            raise ValueError(f"labels must have shape ({lp.shape[0]},), got {y.shape}")
        if not isinstance(self.name, str):
            raise TypeError(f"name must be a str, got {type(self.name).__name__}")
        self.log_probs, self.labels = lp, y.astype(int)

    @property
    def probs(self) -> np.ndarray:
        """Predicted probabilities ``exp(log_probs)``, shape (N, K)."""
        return np.exp(self.log_probs)

    @property
    def accuracy(self) -> float:
        """Top-1 accuracy of the pool's predictions."""
        return float((self.log_probs.argmax(1) == self.labels).mean())


def digits_classifier_outputs(
    random_state: RandomState = 0, *, n_components: int = 8, test_size: float = 0.5
) -> ClassifierOutputs:
    """A deliberately imperfect classifier on scikit-learn's digits, evaluated on a held-out pool.

    Standardise, PCA to ``n_components`` dimensions, then multinomial logistic regression,
    trained on a random part; the other part (about 900 images at ``test_size=0.5``) is
    the sampling pool. With 8 components the top-1 accuracy is about 0.9, imperfect
    enough for top-T sets of small T to miss. The log-probabilities are the log-softmax
    of the model's decision function (its logits), so tiny probabilities keep their
    exact scores.

    Parameters
    ----------
    random_state : int, numpy.random.Generator or None
        Seeds the split and the PCA (an int is used as it is).
    n_components : int
        PCA dimensions, in ``1..64`` (digits have 64 pixels).
    test_size : float
        Fraction of the images in the pool, in ``(0, 1)``.

    Returns
    -------
    ClassifierOutputs
        The pool.

    References
    ----------
    Stand-in for the paper's CIFAR/TinyImageNet ResNet-50 outputs (Liu, Zeng & Wei, ICML
    2026, arXiv:2602.01733); data and models from scikit-learn (Pedregosa et al., 2011).
    """
    from sklearn.datasets import load_digits
    from sklearn.decomposition import PCA
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import train_test_split
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    n_components = as_int(n_components, "n_components", low=1, high=64)
    test_size = as_float(test_size, "test_size", low=0.0, high=1.0, open_low=True, open_high=True)
    seed = seed_from(random_state)
    X, y = load_digits(return_X_y=True)
    try:
        Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=test_size, random_state=seed, stratify=y)
    except ValueError as exc:
        raise ValueError(f"test_size={test_size!r} leaves too few images on one side of the split: {exc}") from None
    model = make_pipeline(StandardScaler(), PCA(n_components=n_components, random_state=seed), LogisticRegression(max_iter=2000))
    model.fit(Xtr, ytr)
    log_probs = _log_softmax(model.decision_function(Xte))
    return ClassifierOutputs(log_probs=log_probs, labels=yte.astype(int), name=f"digits (PCA-{n_components} + logistic)")


def gaussian_mixture_outputs(
    random_state: RandomState = 0,
    *,
    n_classes: int = 10,
    dim: int = 5,
    separation: float = 2.0,
    n_pool: int = 2000,
    temperature: float = 1.0,
) -> ClassifierOutputs:
    r"""A K-class Gaussian mixture with its Bayes posterior as the classifier.

    Class means :math:`\mu_k \sim N(0, \text{separation}^2 I_d)`, points
    :math:`x \sim N(\mu_y, I_d)` with uniform labels. The classifier is the exact
    posterior :math:`p(y \mid x) \propto \exp(-\lVert x-\mu_y\rVert^2 / (2\,\text{temperature}))`;
    ``temperature = 1`` is Bayes-optimal and calibrated, other values make it over- or
    under-confident. ``separation`` sets the difficulty: smaller means harder.

    Parameters
    ----------
    random_state : int, numpy.random.Generator or None
        Randomness of the means, labels and points.
    n_classes : int
        K, ``>= 2``.
    dim : int
        Dimension d, ``>= 1``.
    separation : float
        Scale of the class means, ``> 0``.
    n_pool : int
        Pool size, ``>= 2``.
    temperature : float
        Temperature of the posterior, ``> 0``.

    Returns
    -------
    ClassifierOutputs
        The pool.

    References
    ----------
    Stand-in for the paper's classifier outputs (Liu, Zeng & Wei, ICML 2026,
    arXiv:2602.01733); the Bayes posterior of a Gaussian mixture (Bishop, *Pattern
    Recognition and Machine Learning*, 2006, Sec. 4.2).
    """
    n_classes = as_int(n_classes, "n_classes", low=2)
    dim = as_int(dim, "dim", low=1)
    n_pool = as_int(n_pool, "n_pool", low=2)
    separation = as_float(separation, "separation", low=0.0, open_low=True)
    temperature = as_float(temperature, "temperature", low=0.0, open_low=True)
    rng = check_random_state(random_state)
    mu = separation * rng.standard_normal((n_classes, dim))  # (K, d)
    y = rng.integers(0, n_classes, size=n_pool)  # (N,)
    X = mu[y] + rng.standard_normal((n_pool, dim))  # (N, d)
    d2 = ((X[:, None, :] - mu[None, :, :]) ** 2).sum(-1)  # (N, K)
    log_probs = _log_softmax(-d2 / (2.0 * temperature))
    return ClassifierOutputs(
        log_probs=log_probs, labels=y.astype(int), name=f"Gaussian mixture (K={n_classes}, d={dim}, sep={separation:g})"
    )
