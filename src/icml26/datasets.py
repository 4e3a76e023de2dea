"""Offline data for the chapters: seeded generators and loaders of bundled data sets.

Nothing here downloads: scikit-learn's bundled sets ship with the package, everything
else is generated from a seed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class ClassifierOutputs:
    """A held-out pool of predicted class probabilities and true labels.

    Attributes
    ----------
    probs : array (N, K)
    labels : int array (N,)
    accuracy : top-1 accuracy of ``probs`` on the pool
    name : short description
    """

    probs: np.ndarray
    labels: np.ndarray
    accuracy: float
    name: str


def digits_classifier_outputs(seed: int = 0, *, n_components: int = 8, test_size: float = 0.5) -> ClassifierOutputs:
    """A deliberately imperfect classifier on scikit-learn's digits, evaluated on a held-out pool.

    PCA to ``n_components`` dimensions, then multinomial logistic regression, trained on
    a random half; the other half (about 900 images) is the sampling pool. With 8
    components the top-1 accuracy is about 0.9 — imperfect enough for top-T sets of small
    T to miss. The split depends on ``seed``.
    """
    from sklearn.datasets import load_digits
    from sklearn.decomposition import PCA
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import train_test_split
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    if not (1 <= n_components <= 64):
        raise ValueError(f"n_components={n_components!r} must lie in 1..64 (digits have 64 pixels)")
    X, y = load_digits(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=test_size, random_state=seed, stratify=y)
    model = make_pipeline(StandardScaler(), PCA(n_components=n_components, random_state=seed), LogisticRegression(max_iter=2000))
    model.fit(Xtr, ytr)
    probs = model.predict_proba(Xte)
    acc = float((probs.argmax(1) == yte).mean())
    return ClassifierOutputs(probs=probs, labels=yte.astype(int), accuracy=acc, name=f"digits (PCA-{n_components} + logistic)")


def gaussian_mixture_outputs(
    seed: int = 0,
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
    """
    if n_classes < 2 or dim < 1 or n_pool < 2:
        raise ValueError(f"need n_classes >= 2, dim >= 1, n_pool >= 2; got {n_classes}, {dim}, {n_pool}")
    if separation <= 0 or temperature <= 0:
        raise ValueError(f"separation and temperature must be positive, got {separation}, {temperature}")
    rng = np.random.default_rng(seed)
    mu = separation * rng.standard_normal((n_classes, dim))  # (K, d)
    y = rng.integers(0, n_classes, size=n_pool)  # (N,)
    X = mu[y] + rng.standard_normal((n_pool, dim))  # (N, d)
    d2 = ((X[:, None, :] - mu[None, :, :]) ** 2).sum(-1)  # (N, K)
    logits = -d2 / (2.0 * temperature)
    logits -= logits.max(1, keepdims=True)
    probs = np.exp(logits)
    probs /= probs.sum(1, keepdims=True)
    acc = float((probs.argmax(1) == y).mean())
    return ClassifierOutputs(
        probs=probs, labels=y.astype(int), accuracy=acc, name=f"Gaussian mixture (K={n_classes}, d={dim}, sep={separation:g})"
    )
