"""The chapter's experiment helpers: bit-encoded digits, the model zoo, one training run, a float CNN.

References
----------
A. T. L. Bacellar, Z. Susskind, M. Breternitz Jr., E. John, L. K. John, P. M. V. Lima, F. M. G. França, "Differentiable Weightless Neural Networks", ICML 2024, arXiv:2410.11112; code https://github.com/alanbacellar/DWN
CLGN: Convolutional Learnable-Group Weightless Neural Networks, ICML 2026 (abstract only).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from torch import nn

from .._common import RandomState, seed_from
from ._checks import check_float, check_int
from .clgn import clgn_net, fit_hierarchical
from .encoding import ThermometerEncoder
from .layers import LUTNet, dwn_mlp
from .resources import resource_counts
from .training import fit_lut_model, lut_training_cost

__all__ = [
    "load_digits_bits",
    "load_npz_bits",
    "KINDS",
    "build_digits_model",
    "run_digits",
    "SmallCNN",
    "run_digits_grid",
    "float_baselines",
]


def load_digits_bits(
    num_bits: int = 3, *, method: str = "uniform", test_size: float = 0.2, random_state: RandomState = 0
) -> dict[str, Any]:
    """scikit-learn's 8x8 digits, split (stratified) and thermometer-encoded on the training part.

    Parameters
    ----------
    num_bits : int
        Thermometer bits per pixel (>= 1).
    method : {"uniform", "distributive"}
        Threshold rule of :class:`~icml26.lut.encoding.ThermometerEncoder`.
    test_size : float
        Fraction of the images held out, in (0, 1).
    random_state : int, numpy.random.Generator or None
        Seed of the stratified split.

    Returns
    -------
    dict
        ``X_train``/``X_test``: bits as float32 tensors of shape (N, num_bits, 8, 8) (the
        thermometer levels are the channels); ``y_train``/``y_test``: int64 tensors;
        ``raw_train``/``raw_test``: the pixel values (N, 64) scaled to [0, 1];
        ``encoder``: the fitted :class:`~icml26.lut.encoding.ThermometerEncoder`.

    References
    ----------
    Bacellar et al., "Differentiable Weightless Neural Networks", ICML 2024,
    arXiv:2410.11112; code https://github.com/alanbacellar/DWN. "CLGN: Convolutional
    Learnable-Group Weightless Neural Networks", ICML 2026 (abstract only).
    """
    num_bits = check_int("num_bits", num_bits)
    check_float("test_size", test_size, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    random_state = seed_from(random_state)
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    d = load_digits()
    Xtr, Xte, ytr, yte = train_test_split(d.data, d.target, test_size=test_size, stratify=d.target, random_state=random_state)
    enc = ThermometerEncoder(num_bits, method=method, feature_wise=False).fit(Xtr)

    def img(X: np.ndarray) -> torch.Tensor:
        b = enc.transform(X)  # (N, 64, bits)
        return torch.from_numpy(b.transpose(0, 2, 1).reshape(len(X), num_bits, 8, 8).astype(np.float32))

    return {
        "X_train": img(Xtr),
        "X_test": img(Xte),
        "y_train": torch.from_numpy(ytr.astype(np.int64)),
        "y_test": torch.from_numpy(yte.astype(np.int64)),
        "raw_train": (Xtr / 16.0).astype(np.float32),
        "raw_test": (Xte / 16.0).astype(np.float32),
        "encoder": enc,
    }


#: Model kinds of the digits experiment.
KINDS: tuple[str, ...] = ("dwn", "clgn-fixed", "clgn", "clgn-hier")


def build_digits_model(
    kind: str, width: int, *, num_bits: int = 3, conv_channels: int = 16, random_state: RandomState = 0
) -> LUTNet:
    """The digits models at width ``w``, with equal table bits across kinds.

    ``"dwn"``: DWN MLP 64*b -> w -> w/2 -> GroupSum (table bits :math:`64\\cdot1.5w`).
    ``"clgn-fixed"`` / ``"clgn"`` / ``"clgn-hier"``: ConvLUT(b -> 16, 3x3, pad 1) -> OrPool(2)
    -> LUT(16*16 -> 1.5w - 16) -> GroupSum / learnable GroupSum (same table bits:
    16 conv tables + 1.5w - 16 dense tables of :math:`2^6` bits).

    Parameters
    ----------
    kind : {"dwn", "clgn-fixed", "clgn", "clgn-hier"}
        The model (:data:`KINDS`).
    width : int
        The budget parameter ``w``.
    num_bits : int
        Thermometer bits per pixel (input channels).
    conv_channels : int
        Output channels of the convolutional LUT layer.
    random_state : int, numpy.random.Generator or None
        Seed of the tables and wirings.

    Returns
    -------
    LUTNet
        The untrained model.

    References
    ----------
    Bacellar et al., "Differentiable Weightless Neural Networks", ICML 2024,
    arXiv:2410.11112; code https://github.com/alanbacellar/DWN. "CLGN: Convolutional
    Learnable-Group Weightless Neural Networks", ICML 2026 (abstract only).
    """
    if kind not in KINDS:
        raise ValueError(f"kind={kind!r} is not valid; use one of {KINDS}")
    w = check_int("width", width)
    num_bits, conv_channels = check_int("num_bits", num_bits), check_int("conv_channels", conv_channels)
    if w < 2 or 3 * w // 2 - conv_channels < 10:
        raise ValueError(f"width={width!r} is too small; use width >= {2 * (conv_channels + 10) // 3 + 1}")
    if kind == "dwn":
        return dwn_mlp(64 * num_bits, [w, w // 2], random_state=random_state)
    return clgn_net(
        (num_bits, 8, 8),
        conv_channels,
        [3 * w // 2 - conv_channels],
        pool=2,
        learnable_groupsum=(kind != "clgn-fixed"),
        random_state=random_state,
    )


def run_digits(
    kind: str,
    width: int,
    data: dict[str, Any],
    *,
    epochs: int,
    batch_size: int = 64,
    lr: float = 1e-2,
    random_state: RandomState = 0,
) -> dict[str, Any]:
    """Train one digits model and return its accuracy, counts, training cost and history.

    DWN's recipe scaled to ``epochs``: Adam(lr), learning rate x0.1 every
    ``ceil(14/30 * epochs)`` epochs (DWN: every 14 of 30). ``"clgn-hier"`` uses :func:`fit_hierarchical` with
    ``epochs // 3`` feature epochs and the rest for the classifier.

    Parameters
    ----------
    kind : {"dwn", "clgn-fixed", "clgn", "clgn-hier"}
        The model (:data:`KINDS`).
    width : int
        The budget parameter ``w`` of :func:`build_digits_model`.
    data : dict
        As returned by :func:`load_digits_bits` (``X_train``, ``y_train``, ``X_test``, ``y_test``).
    epochs : int
        Training epochs (>= 1).
    batch_size : int
        Mini-batch size.
    lr : float
        Adam's learning rate.
    random_state : int, numpy.random.Generator or None
        Seed of the model and the mini-batch order.

    Returns
    -------
    dict
        ``kind``, ``width``, ``seed``, ``acc`` (final test accuracy), ``train_seconds``,
        ``train_cost`` (LUT evaluations), ``history``, ``model`` and the
        :func:`~icml26.lut.resources.resource_counts`.

    References
    ----------
    Bacellar et al., "Differentiable Weightless Neural Networks", ICML 2024,
    arXiv:2410.11112; code https://github.com/alanbacellar/DWN. "CLGN: Convolutional
    Learnable-Group Weightless Neural Networks", ICML 2026 (abstract only).
    """
    if not isinstance(data, dict) or not {"X_train", "y_train", "X_test", "y_test"} <= set(data):
        raise ValueError("data must be a dict with X_train, y_train, X_test and y_test (see load_digits_bits)")
    check_int("epochs", epochs)
    seed = seed_from(random_state)
    torch.manual_seed(seed)
    model = build_digits_model(kind, width, num_bits=data["X_train"].shape[1], random_state=seed)
    Xtr, Xte = data["X_train"], data["X_test"]
    if kind == "dwn":
        Xtr, Xte = Xtr.reshape(len(Xtr), -1), Xte.reshape(len(Xte), -1)
    if kind == "clgn-hier":
        e1 = max(1, epochs // 3)
        e2 = epochs - e1
        hist = fit_hierarchical(
            model,
            Xtr,
            data["y_train"],
            stage_epochs=(e1, e2),
            batch_size=batch_size,
            lr=lr,
            step_size=math.ceil(e2 * 14 / 30) if e2 >= 3 else None,
            X_eval=Xte,
            y_eval=data["y_test"],
            random_state=seed,
        )
    else:
        hist = fit_lut_model(
            model,
            Xtr,
            data["y_train"],
            epochs=epochs,
            batch_size=batch_size,
            lr=lr,
            step_size=math.ceil(epochs * 14 / 30) if epochs >= 3 else None,
            X_eval=Xte,
            y_eval=data["y_test"],
            cost_per_sample=lut_training_cost(model),
            random_state=seed,
        )
    return {
        "kind": kind,
        "width": int(width),
        "seed": int(seed),
        "acc": hist["acc"][-1],
        "train_seconds": hist["seconds"][-1],
        "train_cost": hist["cost"][-1],
        "history": hist,
        "model": model,
        **resource_counts(model),
    }


def run_digits_grid(jobs, data_by_seed: dict, *, epochs: int) -> list[dict[str, Any]]:
    """Chapter 08's grid: :func:`run_digits` for every ``(seed, width, kind)`` job, checked at the bit level.

    Each trained network is compiled to integer bit logic (:func:`~icml26.lut.bits.compile_bits`);
    the run records whether its predictions equal torch's on the test set
    (``bit_pred_equal``), the compiled network's accuracy (``bit_acc``) and how many output
    bits the learnable GroupSum moved away from the contiguous start (``reassigned_bits``).

    Parameters
    ----------
    jobs : iterable of (int, int, str)
        ``(seed, width, kind)`` with ``kind`` in :data:`KINDS`.
    data_by_seed : dict
        ``{seed: load_digits_bits(...)}``.
    epochs : int

    Returns
    -------
    list of dict
        The :func:`run_digits` records with ``bitnet`` and the three fields above.
    References
    ----------
    Bacellar et al., "Differentiable Weightless Neural Networks", ICML 2024,
    arXiv:2410.11112. "CLGN: Convolutional Learnable-Group Weightless Neural Networks",
    ICML 2026 (abstract only).
    """
    from .bits import compile_bits
    from .layers import GroupSum

    if not isinstance(data_by_seed, dict):
        raise TypeError(f"data_by_seed must be a dict seed -> load_digits_bits(...), got {type(data_by_seed).__name__}")
    runs = []
    for s, w, kind in jobs:
        if s not in data_by_seed:
            raise ValueError(f"seed {s!r} of a job has no data in data_by_seed (keys {sorted(data_by_seed)})")
        d = data_by_seed[s]
        r = run_digits(kind, w, d, epochs=epochs, random_state=s)
        Xte = d["X_test"].reshape(len(d["X_test"]), -1) if kind == "dwn" else d["X_test"]
        with torch.no_grad():
            torch_pred = r["model"].eval()(Xte).argmax(1).numpy()
        r["bitnet"] = compile_bits(r["model"])
        r["bit_pred_equal"] = bool(np.array_equal(torch_pred, r["bitnet"].predict(Xte.numpy())))
        r["bit_acc"] = float((r["bitnet"].predict(Xte.numpy()) == d["y_test"].numpy()).mean())
        # output bits whose class moved away from the contiguous start
        head = r["model"].head
        r["reassigned_bits"] = int((head.assignment() != GroupSum(head.k, head.in_features).assignment()).sum())
        runs.append(r)
    return runs


def float_baselines(seeds, data_by_seed: dict, *, cnn_epochs: int):
    """Chapter 08's float baselines per seed: logistic regression and :class:`SmallCNN` on the raw pixels.

    Logistic regression (scikit-learn, ``max_iter=3000``) on the flattened raw digits; the
    CNN (torch's global seed set to the replicate seed first) trained by
    :func:`~icml26.lut.training.fit_lut_model` for ``cnn_epochs`` (batch 64, lr 1e-2).

    Parameters
    ----------
    seeds : iterable of int
    data_by_seed : dict
        ``{seed: load_digits_bits(...)}`` (with ``raw_train`` and ``raw_test``).
    cnn_epochs : int

    Returns
    -------
    (list of dict, dict, LogisticRegression)
        Rows ``kind``, ``seed``, ``acc``, ``param_bytes``; the trained CNNs by seed; the
        logistic regression of the last seed.
    References
    ----------
    Bacellar et al., "Differentiable Weightless Neural Networks", ICML 2024,
    arXiv:2410.11112. "CLGN: Convolutional Learnable-Group Weightless Neural Networks",
    ICML 2026 (abstract only).
    """
    from sklearn.linear_model import LogisticRegression

    if not isinstance(data_by_seed, dict):
        raise TypeError(f"data_by_seed must be a dict seed -> load_digits_bits(...), got {type(data_by_seed).__name__}")
    check_int("cnn_epochs", cnn_epochs)
    rows, cnns, logreg = [], {}, None
    for s in seeds:
        d = data_by_seed[s]
        logreg = LogisticRegression(max_iter=3000).fit(d["raw_train"], d["y_train"].numpy())
        rows.append(
            {
                "kind": "logistic regression",
                "seed": s,
                "acc": logreg.score(d["raw_test"], d["y_test"].numpy()),
                "param_bytes": 4 * (logreg.coef_.size + logreg.intercept_.size),
            }
        )
        torch.manual_seed(s)
        cnn = SmallCNN()
        Xtr_f, Xte_f = (torch.from_numpy(d[k]).reshape(-1, 1, 8, 8) for k in ("raw_train", "raw_test"))
        h = fit_lut_model(
            cnn, Xtr_f, d["y_train"], epochs=cnn_epochs, batch_size=64, lr=1e-2, X_eval=Xte_f, y_eval=d["y_test"], random_state=s
        )
        rows.append({"kind": "small CNN (float)", "seed": s, "acc": h["acc"][-1], "param_bytes": cnn.param_bytes()})
        cnns[s] = cnn
    return rows, cnns, logreg


class SmallCNN(nn.Module):
    """Float baseline: Conv(1 -> c, 3x3, pad 1) -> ReLU -> MaxPool(2) -> Linear(c*16 -> k) on 8x8 images.

    Parameters
    ----------
    channels : int
        Convolution channels ``c`` (>= 1).
    k : int
        Number of classes (>= 1).

    Returns
    -------
    SmallCNN
        A module mapping ``(B, 1, 8, 8)`` images to class scores ``(B, k)``.

    References
    ----------
    A context baseline of chapter 08, not part of DWN or CLGN.
    """

    def __init__(self, channels: int = 8, k: int = 10) -> None:
        super().__init__()
        channels, k = check_int("channels", channels), check_int("k", k)
        self.net = nn.Sequential(
            nn.Conv2d(1, channels, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(channels * 16, k)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Class scores of shape (B, k) for images of shape (B, 1, 8, 8).

        Returns
        -------
        Tensor, shape (B, k)
            Class scores.
        """
        if not isinstance(x, torch.Tensor) or x.ndim != 4 or tuple(x.shape[1:]) != (1, 8, 8):
            raise ValueError(f"SmallCNN expects images of shape (batch, 1, 8, 8), got {getattr(x, 'shape', type(x).__name__)}")
        return self.net(x)

    def param_bytes(self) -> int:
        """Bytes of the float32 parameters.

        Returns
        -------
        int
            Bytes of the parameters as float32.
        """
        return int(sum(p.numel() for p in self.parameters()) * 4)


def load_npz_bits(path: str, num_bits: int = 3, *, method: str = "uniform") -> dict[str, Any]:
    """Thermometer-encode an image data set stored as ``.npz`` (e.g. Keras' ``mnist.npz``).

    For readers who have the paper-scale data locally (no download happens here). The file
    must hold ``x_train`` (N, H, W) or (N, C, H, W), ``y_train``, ``x_test`` and ``y_test``.
    Thresholds are fitted on ``x_train`` (shared by all pixels). Returns the same keys as
    :func:`load_digits_bits`; with C channels, the bits are laid out as (N, C*num_bits, H, W).

    Parameters
    ----------
    path : str or path-like
        The ``.npz`` file.
    num_bits : int
        Thermometer bits per pixel.
    method : {"uniform", "distributive"}
        Threshold rule.

    Returns
    -------
    dict
        The keys of :func:`load_digits_bits`.

    References
    ----------
    Bacellar et al., "Differentiable Weightless Neural Networks", ICML 2024,
    arXiv:2410.11112; code https://github.com/alanbacellar/DWN. "CLGN: Convolutional
    Learnable-Group Weightless Neural Networks", ICML 2026 (abstract only).
    """
    import os

    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or path-like, got {type(path).__name__}")
    if not os.path.isfile(path):
        raise ValueError(f"path={str(path)!r} is not a file; pass a local .npz with x_train, y_train, x_test, y_test")
    num_bits = check_int("num_bits", num_bits)
    with np.load(path) as f:
        missing = {"x_train", "y_train", "x_test", "y_test"} - set(f.files)
        if missing:
            raise ValueError(f"{path} lacks {sorted(missing)}; it must hold x_train, y_train, x_test, y_test")
        xtr, ytr, xte, yte = (np.asarray(f[k]) for k in ("x_train", "y_train", "x_test", "y_test"))
    if xtr.ndim == 3:
        xtr, xte = xtr[:, None], xte[:, None]
    if xtr.ndim != 4 or xte.shape[1:] != xtr.shape[1:]:
        raise ValueError(
            f"x_train/x_test must be (N, H, W) or (N, C, H, W) with equal image shapes, got {xtr.shape}, {xte.shape}"
        )
    n, c, h, w = xtr.shape
    enc = ThermometerEncoder(num_bits, method=method, feature_wise=False).fit(xtr.reshape(n, -1))

    def img(x: np.ndarray) -> torch.Tensor:
        b = enc.transform(x.reshape(len(x), -1)).reshape(len(x), c, h, w, num_bits)  # (N, C, H, W, bits)
        return torch.from_numpy(b.transpose(0, 1, 4, 2, 3).reshape(len(x), c * num_bits, h, w).astype(np.float32))

    scale = float(max(xtr.max(), 1))
    return {
        "X_train": img(xtr),
        "X_test": img(xte),
        "y_train": torch.from_numpy(ytr.astype(np.int64)),
        "y_test": torch.from_numpy(yte.astype(np.int64)),
        "raw_train": (xtr.reshape(n, -1) / scale).astype(np.float32),
        "raw_test": (xte.reshape(len(xte), -1) / scale).astype(np.float32),
        "encoder": enc,
    }
