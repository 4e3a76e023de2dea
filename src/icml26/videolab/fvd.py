"""One Fréchet-distance metric for the video lab: the FVD stand-in.

The Fréchet video distance (FVD) compares the Gaussian fits of two sets of clip features
taken from a pretrained I3D network. I3D weights cannot be downloaded here, so the lab
trains one small 3-D CNN classifier on real bouncing-sprite clips
(:func:`train_video_classifier`) and takes its penultimate activations as features
(:func:`video_features`). I3D is trained to recognise actions, so its features see
motion; a network trained only to name the sprite need not (its features mostly follow
brightness). With ``motion_task=True`` the network gets a second head, trained on the
same features to tell clips in their true frame order from clips whose frames were
shuffled (:func:`shuffle_frames`), so that destroying the motion moves the features.
The Fréchet distance between two Gaussians,

.. math::

    d^2 = \\lVert \\mu_1 - \\mu_2 \\rVert^2
          + \\operatorname{tr}\\bigl(\\Sigma_1 + \\Sigma_2 - 2 (\\Sigma_1^{1/2} \\Sigma_2 \\Sigma_1^{1/2})^{1/2}\\bigr),

is computed by :func:`frechet_distance` with symmetric eigendecompositions, which equals
the usual ``scipy.linalg.sqrtm(Σ1 Σ2)`` form (the tests check both, and the closed form
on Gaussians with commuting covariances). The classifier's accuracy on generated clips
(:func:`classifier_accuracy`) is the lab's second generation metric.

References
----------
Heusel et al., "GANs trained by a two time-scale update rule converge to a local Nash
equilibrium", NeurIPS 2017 (FID). Unterthiner et al., "Towards accurate generative models
of video: a new metric & challenges", arXiv:1812.01717 (FVD). Dowson & Landau, "The
Fréchet distance between multivariate normal distributions", J. Multivariate Anal. 1982.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from .._common import RandomState, check_int, check_real, seed_from, torch_generator


def _check_cov(sigma: np.ndarray, name: str, d: int) -> np.ndarray:
    sigma = np.asarray(sigma, dtype=np.float64)
    if sigma.shape != (d, d):
        raise ValueError(f"{name} has shape {sigma.shape}; expected ({d}, {d}) to match the mean")
    if not np.all(np.isfinite(sigma)):
        raise ValueError(f"{name} holds NaN or infinite values")
    if not np.allclose(sigma, sigma.T, atol=1e-8 * max(1.0, float(np.abs(sigma).max()))):
        raise ValueError(f"{name} is not symmetric; a covariance matrix must be")
    sym = (sigma + sigma.T) / 2
    w = np.linalg.eigvalsh(sym)
    tol = 1e-8 * max(1.0, float(np.abs(w).max()))
    if w[0] < -tol:
        raise ValueError(
            f"{name} is not positive semi-definite (smallest eigenvalue {w[0]:.3g}); "
            f"a covariance matrix must have eigenvalues >= 0 (up to round-off {tol:.1g})"
        )
    return sym


def _psd_sqrt(a: np.ndarray) -> np.ndarray:
    """Symmetric square root of a symmetric PSD matrix (negative round-off eigenvalues clipped)."""
    w, v = np.linalg.eigh(a)
    return (v * np.sqrt(np.clip(w, 0.0, None))) @ v.T


def frechet_distance(mu1: np.ndarray, sigma1: np.ndarray, mu2: np.ndarray, sigma2: np.ndarray) -> float:
    """Squared Fréchet (2-Wasserstein) distance between two Gaussians.

    .. math::

        d^2 = \\lVert \\mu_1 - \\mu_2 \\rVert^2 + \\operatorname{tr}\\Sigma_1 + \\operatorname{tr}\\Sigma_2
              - 2 \\operatorname{tr}\\bigl(\\Sigma_1^{1/2} \\Sigma_2 \\Sigma_1^{1/2}\\bigr)^{1/2}

    The trace term equals :math:`\\operatorname{tr}(\\Sigma_1\\Sigma_2)^{1/2}` (the FID/FVD
    code's ``sqrtm(Σ1 @ Σ2)``) because the two matrices are similar; the symmetric form
    is stable and needs no complex arithmetic.

    Parameters
    ----------
    mu1, mu2 : array_like, shape (d,)
        Means.
    sigma1, sigma2 : array_like, shape (d, d)
        Symmetric positive semi-definite covariances.

    Returns
    -------
    float
        :math:`d^2 \\ge 0` (the convention of FID and FVD, which report the squared distance).

    Raises
    ------
    ValueError
        For means of different lengths, non-finite values, or a covariance that is not
        symmetric positive semi-definite (an eigenvalue below ``-1e-8 * max(1, max |λ|)``).

    References
    ----------
    Dowson & Landau (1982); Heusel et al. (2017), FID.
    """
    mu1 = np.atleast_1d(np.asarray(mu1, dtype=np.float64))
    mu2 = np.atleast_1d(np.asarray(mu2, dtype=np.float64))
    if mu1.ndim != 1 or mu1.shape != mu2.shape:
        raise ValueError(f"means must be vectors of equal length, got shapes {mu1.shape} and {mu2.shape}")
    if not (np.all(np.isfinite(mu1)) and np.all(np.isfinite(mu2))):
        raise ValueError("means hold NaN or infinite values")
    d = mu1.size
    s1 = _check_cov(sigma1, "sigma1", d)
    s2 = _check_cov(sigma2, "sigma2", d)
    r1 = _psd_sqrt(s1)
    cross = _psd_sqrt(r1 @ s2 @ r1)
    val = float(np.sum((mu1 - mu2) ** 2) + np.trace(s1) + np.trace(s2) - 2.0 * np.trace(cross))
    scale = float(np.sum((mu1 - mu2) ** 2) + np.trace(s1) + np.trace(s2))
    if val < -1e-8 * max(1.0, scale):  # only round-off may go below 0 for PSD covariances
        raise ValueError(
            f"the squared Fréchet distance came out negative ({val:.3g}) for inputs of scale {scale:.3g}; "
            "the covariances are not valid (symmetric positive semi-definite)"
        )
    return max(val, 0.0)  # clip round-off (|val| <= 1e-8 * scale) to the exact 0


def gaussian_fit(features: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and covariance (``ddof=1``) of a feature matrix.

    Parameters
    ----------
    features : array_like, shape (n, d)
        One row per clip, n >= 2.

    Returns
    -------
    mu : numpy.ndarray, shape (d,)
    sigma : numpy.ndarray, shape (d, d)
    """
    f = np.asarray(features, dtype=np.float64)
    if f.ndim != 2:
        raise ValueError(f"features must be a 2-D array (n, d), got shape {f.shape}")
    if f.shape[0] < 2:
        raise ValueError(f"features need at least 2 rows to fit a covariance, got {f.shape[0]}")
    if not np.all(np.isfinite(f)):
        raise ValueError("features hold NaN or infinite values")
    return f.mean(0), np.atleast_2d(np.cov(f, rowvar=False))


def feature_frechet_distance(features1: np.ndarray, features2: np.ndarray) -> float:
    """Fréchet distance between the Gaussian fits of two feature sets (FID / FVD on given features).

    Parameters
    ----------
    features1, features2 : array_like, shapes (n1, d) and (n2, d)

    Returns
    -------
    float
        :func:`frechet_distance` of the two :func:`gaussian_fit` results.
    """
    f1, f2 = np.asarray(features1), np.asarray(features2)
    if f1.ndim != 2 or f2.ndim != 2 or f1.shape[1] != f2.shape[1]:
        raise ValueError(f"feature sets must be (n, d) with the same d, got shapes {f1.shape} and {f2.shape}")
    return frechet_distance(*gaussian_fit(f1), *gaussian_fit(f2))


def _check_videos(videos, name: str = "videos") -> torch.Tensor:
    x = torch.as_tensor(np.asarray(videos) if not isinstance(videos, torch.Tensor) else videos).float()
    if x.ndim != 5 or x.shape[1] != 3:
        raise ValueError(f"{name} must have shape (n, 3, T, H, W), got {tuple(x.shape)}")
    if x.shape[0] < 1:
        raise ValueError(f"{name} is empty")
    if not torch.isfinite(x).all():
        raise ValueError(f"{name} holds NaN or infinite values")
    return x


def _check_labels(labels, n: int) -> np.ndarray:
    """Class labels as given, after checking they are ``n`` non-negative integers (integral floats allowed)."""
    y = np.asarray(labels)
    if y.shape != (n,):
        raise ValueError(f"labels must have shape ({n},), got {y.shape}")
    if y.dtype.kind not in "iub":
        if y.dtype.kind != "f":
            raise TypeError(f"labels must be integer class indices, got dtype {y.dtype}")
        bad = ~np.isfinite(y) | (y != np.round(y))
        if bad.any():
            raise ValueError(
                f"labels must be integer class indices 0 … K-1, got {y[bad][0]!r} at index "
                f"{int(np.flatnonzero(bad)[0])}; a float label would be truncated"
            )
    if n and y.min() < 0:
        raise ValueError(f"labels must be non-negative class indices, got min {y.min()!r}")
    return y


class VideoClassifier3D(nn.Module):
    """A small 3-D CNN clip classifier; its penultimate layer gives the FVD stand-in's features.

    Three 3×3×3 convolutions (16, 32, ``feature_dim`` channels) with ReLU, spatial max
    pooling after the first two, global average pooling over time and space, then a
    linear head. Input ``(n, 3, T, H, W)``, output logits ``(n, n_classes)``.

    Parameters
    ----------
    n_classes : int
        Number of classes (4 for the sprites).
    feature_dim : int
        Width of the feature layer.
    motion_head : bool
        Add a second linear head on the same features that tells clips in their true frame
        order from clips whose frames were shuffled (:func:`shuffle_frames`); trained with
        it (:func:`train_video_classifier` with ``motion_task=True``), the features must
        encode temporal coherence, as I3D's action-recognition features do, and not only
        the appearance that the sprite class needs.
    """

    def __init__(self, n_classes: int = 4, feature_dim: int = 32, motion_head: bool = False) -> None:
        super().__init__()
        n_classes = check_int(n_classes, "n_classes", low=2)
        feature_dim = check_int(feature_dim, "feature_dim")
        if not isinstance(motion_head, bool):
            raise TypeError(f"motion_head={motion_head!r} must be a bool")
        self.body = nn.Sequential(
            nn.Conv3d(3, 16, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool3d((1, 2, 2)),
            nn.Conv3d(16, 32, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool3d((1, 2, 2)),
            nn.Conv3d(32, feature_dim, 3, padding=1),
            nn.ReLU(),
            nn.AdaptiveAvgPool3d(1),
            nn.Flatten(),
        )
        self.head = nn.Linear(feature_dim, n_classes)
        # second head: "are this clip's frames in their true order?" (logits [in order, shuffled])
        self.motion = nn.Linear(feature_dim, 2) if motion_head else None

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """Penultimate features, ``(n, 3, T, H, W) -> (n, feature_dim)``."""
        return self.body(x)  # Conv3d takes (n, C, T, H, W) as it is

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits, ``(n, 3, T, H, W) -> (n, n_classes)``."""
        return self.head(self.features(x))


def shuffle_frames(videos, *, random_state: RandomState = 0) -> torch.Tensor:
    """Each clip with its frames in a random order other than the true one (motion destroyed).

    Every clip gets its own uniform random permutation of its ``T >= 2`` frames, redrawn
    while it is the identity; each frame's content (and so the clip's appearance: shape,
    colour, brightness) is unchanged, only the order in time is lost.

    Parameters
    ----------
    videos : array_like or Tensor, shape (n, 3, T, H, W)
    random_state : int, numpy.random.Generator or None
        Seeds the permutations.

    Returns
    -------
    Tensor, shape (n, 3, T, H, W)
    """
    x = _check_videos(videos)
    t = x.shape[2]
    if t < 2:
        raise ValueError(f"shuffling frames needs clips of at least 2 frames, got T={t}")
    gen = torch_generator(random_state)
    perms = []
    for _ in range(x.shape[0]):
        p = torch.randperm(t, generator=gen)
        while bool((p == torch.arange(t)).all()):
            p = torch.randperm(t, generator=gen)
        perms.append(p)
    idx = torch.stack(perms)  # [n, T]
    return torch.gather(x, 2, idx[:, None, :, None, None].expand_as(x))


def train_video_classifier(
    videos: np.ndarray,
    labels: np.ndarray,
    *,
    epochs: int = 4,
    batch_size: int = 64,
    lr: float = 3e-3,
    feature_dim: int = 32,
    motion_task: bool = False,
    motion_weight: float = 1.0,
    random_state: RandomState = 0,
) -> VideoClassifier3D:
    """Train the FVD stand-in's classifier once on real clips (Adam, cross-entropy).

    Parameters
    ----------
    videos : array_like, shape (n, 3, T, H, W)
        Real clips.
    labels : array_like, shape (n,)
        Integer classes ``0 … K-1``.
    epochs, batch_size, lr : training budget.
    feature_dim : int
        Feature width (the dimension of the Fréchet distance).
    motion_task : bool
        Also train a motion head (:class:`VideoClassifier3D` ``motion_head``): in each
        batch a random half of the clips get their frames shuffled
        (:func:`shuffle_frames`) and the loss adds the cross-entropy of telling them from
        the clips in true order (a shuffled clip keeps its class: each frame still shows
        the sprite).
    motion_weight : float
        Weight (> 0) of the motion head's loss against the class loss.
    random_state : int, numpy.random.Generator or None
        Seeds the initial weights, the batch order and the shuffles.

    Returns
    -------
    VideoClassifier3D
        In eval mode.

    Raises
    ------
    ValueError
        For clips that are not ``(n, 3, T, H, W)`` or not finite, or labels of the wrong
        shape, negative, non-finite or non-integral (``0.5`` would be truncated to class 0).
    TypeError
        For labels that are not numbers.
    """
    x = _check_videos(videos)
    y = torch.as_tensor(_check_labels(labels, x.shape[0])).long()
    epochs = check_int(epochs, "epochs")
    batch_size = check_int(batch_size, "batch_size")
    lr = check_real(lr, "lr", lo=0.0, lo_open=True)
    if not isinstance(motion_task, bool):
        raise TypeError(f"motion_task={motion_task!r} must be a bool")
    motion_weight = check_real(motion_weight, "motion_weight", lo=0.0, lo_open=True)
    n_classes = max(int(y.max()) + 1, 2)
    torch.manual_seed(seed_from(random_state))
    model = VideoClassifier3D(n_classes, feature_dim, motion_head=motion_task)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    gen = torch_generator(random_state)
    model.train()
    for _ in range(epochs):
        order = torch.randperm(x.shape[0], generator=gen)
        for i in range(0, x.shape[0], batch_size):
            idx = order[i : i + batch_size]
            xb, yb = x[idx], y[idx]
            if not motion_task:
                loss = nn.functional.cross_entropy(model(xb), yb)
            else:
                shuffled = torch.rand(len(idx), generator=gen) < 0.5  # [b] which clips lose their order
                seed = int(torch.randint(0, 2**31 - 1, (1,), generator=gen))
                xb = torch.where(shuffled[:, None, None, None, None], shuffle_frames(xb, random_state=seed), xb)
                f = model.features(xb)
                loss = nn.functional.cross_entropy(model.head(f), yb) + motion_weight * nn.functional.cross_entropy(
                    model.motion(f), shuffled.long()
                )
            opt.zero_grad()
            loss.backward()
            opt.step()
    return model.eval()


@torch.no_grad()
def video_features(model: VideoClassifier3D, videos: np.ndarray, *, batch_size: int = 256) -> np.ndarray:
    """The classifier's penultimate features of ``videos``, ``(n, 3, T, H, W) -> (n, feature_dim)``."""
    if not isinstance(model, VideoClassifier3D):
        raise TypeError(f"model must be a VideoClassifier3D, got {type(model).__name__}")
    x = _check_videos(videos)
    batch_size = check_int(batch_size, "batch_size")
    model.eval()
    return torch.cat([model.features(x[i : i + batch_size]) for i in range(0, x.shape[0], batch_size)]).double().numpy()


@torch.no_grad()
def features_and_probs(model: VideoClassifier3D, videos: np.ndarray, *, batch_size: int = 256) -> tuple[np.ndarray, np.ndarray]:
    """Features and class probabilities of ``videos`` from one forward pass of the network.

    Returns
    -------
    features : numpy.ndarray, shape (n, feature_dim)
        As :func:`video_features`.
    probs : numpy.ndarray, shape (n, n_classes)
        Softmax of the class head on those features (what :func:`classifier_accuracy` and
        :func:`classifier_confidence` use).
    """
    f = torch.as_tensor(video_features(model, videos, batch_size=batch_size))
    return f.numpy(), model.head(f.float()).softmax(1).double().numpy()


def video_frechet_distance(model: VideoClassifier3D, real: np.ndarray, fake: np.ndarray) -> float:
    """The FVD stand-in: Fréchet distance between the classifier features of two clip sets.

    Parameters
    ----------
    model : VideoClassifier3D
        Trained once on real clips (:func:`train_video_classifier`).
    real, fake : array_like, shape (n, 3, T, H, W)
        Reference and compared clips (n >= 2 each).

    Returns
    -------
    float
    """
    return feature_frechet_distance(video_features(model, real), video_features(model, fake))


@torch.no_grad()
def classifier_accuracy(model: VideoClassifier3D, videos: np.ndarray, labels: np.ndarray) -> float:
    """Fraction of ``videos`` the classifier assigns to ``labels``.

    Raises
    ------
    TypeError
        For a model that is not a :class:`VideoClassifier3D`, or labels that are not numbers.
    ValueError
        For bad clips, or labels that are not ``n`` non-negative integer classes.
    """
    if not isinstance(model, VideoClassifier3D):
        raise TypeError(f"model must be a VideoClassifier3D, got {type(model).__name__}")
    x = _check_videos(videos)
    y = _check_labels(labels, x.shape[0])
    pred = torch.cat([model(x[i : i + 256]).argmax(1) for i in range(0, x.shape[0], 256)]).numpy()
    return float((pred == y).mean())


@torch.no_grad()
def classifier_confidence(model: VideoClassifier3D, videos: np.ndarray) -> tuple[float, np.ndarray]:
    """Mean top-class probability and the predicted-class histogram of (unlabelled) clips.

    For unconditional samples there is no label to score; a confident classifier and a
    balanced histogram say the samples look like recognisable sprites of every class.

    Returns
    -------
    confidence : float
        Mean of the largest softmax probability.
    histogram : numpy.ndarray, shape (n_classes,)
        Fraction of clips predicted in each class.
    """
    if not isinstance(model, VideoClassifier3D):
        raise TypeError(f"model must be a VideoClassifier3D, got {type(model).__name__}")
    x = _check_videos(videos)
    p = torch.cat([model(x[i : i + 256]).softmax(1) for i in range(0, x.shape[0], 256)])
    hist = np.bincount(p.argmax(1).numpy(), minlength=p.shape[1]) / p.shape[0]
    return float(p.max(1).values.mean()), hist
