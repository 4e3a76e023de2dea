"""Training and evaluation for chapter 14: denoising pre-training, force metrics, the property fine-tune.

Part of :mod:`icml26.moes` (see there for the method and references).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from .._common import RandomState, check_int, check_real, progress, seed_from
from .model import ForceNet, _check_readout, _graph, predict_forces
from .molecules import _REF, Molecule, _as_float_array, _check_molecule
from .noise import SCHEMES, NoiseScheme


@dataclass
class PretrainResult:
    """A pretrained network and its training log (loss per step, sentinel scales per refresh, seconds)."""

    model: ForceNet
    losses: np.ndarray
    scales: list
    sentinel_seconds: float
    train_seconds: float


def pretrain_denoise(
    molecules: Sequence[Molecule],
    scheme: NoiseScheme,
    *,
    steps: int = 500,
    batch_size: int = 16,
    lr: float = 1e-3,
    model_kw: dict | None = None,
    random_state: RandomState = 0,
    show_progress: bool = False,
) -> PretrainResult:
    """Fractional denoising pre-training: :math:`\\min \\mathbb E\\,\\|\\mathrm{NN}(\\tilde x) - \\epsilon\\|^2`.

    Each step draws ``batch_size`` molecules, perturbs each by the scheme
    (:math:`x_a`, then :math:`\\tilde x = x_a + \\tau\\epsilon`) and regresses the force head
    on :math:`\\epsilon` only (never on the torsion part). The sentinel's scales are
    recomputed every ``scheme.refresh_every`` steps with fresh draws. The same
    ``random_state`` gives the same initial weights and molecule batches for every scheme,
    so runs on equal budgets differ only in their noise.

    Parameters
    ----------
    molecules : sequence of Molecule
    scheme : NoiseScheme
    steps, batch_size : int
    lr : float
        Adam learning rate.
    model_kw : dict, optional
        Passed to :class:`ForceNet`.
    random_state : int, Generator or None
    show_progress : bool

    Returns
    -------
    PretrainResult
    """
    import time

    mols = [_check_molecule(m) for m in molecules]
    if not mols:
        raise ValueError("pretrain_denoise needs at least one molecule")
    if not isinstance(scheme, NoiseScheme):
        raise TypeError(f"scheme must be a NoiseScheme, got {type(scheme).__name__}")
    steps = check_int(steps, "steps")
    batch_size = check_int(batch_size, "batch_size")
    lr = check_real(lr, "lr", lo=0, lo_open=True)
    seed = seed_from(random_state)
    model = ForceNet(**(model_kw or {}), random_state=seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr, foreach=True)
    batch_rng = np.random.default_rng([seed, 1])
    noise_rng = np.random.default_rng([seed, 2, SCHEMES.index(scheme.kind)])
    sent_rng = np.random.default_rng([seed, 3])
    losses, scale_log, t_sent = [], [], 0.0
    t0 = time.perf_counter()
    scales = None
    for step in progress(range(steps), f"pretrain ({scheme.kind})", disable=not show_progress):
        if scales is None or (scheme.kind == "sentinel" and step % scheme.refresh_every == 0):
            ts = time.perf_counter()
            scales, _ = scheme.scales(mols, random_state=sent_rng)
            t_sent += time.perf_counter() - ts
            scale_log.append(scales.copy())
        idx = batch_rng.choice(len(mols), size=min(batch_size, len(mols)), replace=False)
        bm, xt, ep = [], [], []
        for k in idx:
            _, x_t, eps = scheme._sample(mols[k], scales[k], noise_rng)
            bm.append(mols[k])
            xt.append(x_t)
            ep.append(eps)
        z, x, i, j, b = _graph(bm, xt)
        target = torch.as_tensor(np.concatenate(ep), dtype=torch.float32)
        f, _ = model(z, x, i, j, b, len(bm), heads="forces")
        loss = ((f - target) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return PretrainResult(model, np.array(losses), scale_log, t_sent, time.perf_counter() - t0)


pretrain_denoise.__doc__ += _REF


def force_metrics(pred: Sequence[np.ndarray], true: Sequence[np.ndarray]) -> dict[str, float]:
    """Agreement of learned forces with reference forces, up to one global scale.

    Parameters
    ----------
    pred, true : sequences of ndarray, each (n_m, 3)
        Learned forces (``-output`` of the denoiser) and MMFF forces per conformer.

    Returns
    -------
    dict
        ``cosine``: mean over conformers of the cosine between the flattened 3N vectors;
        ``scaled_mae``: :math:`\\mathrm{mean}|c\\hat F - F| / \\mathrm{mean}|F|` with the
        least-squares scale :math:`c = \\langle \\hat F, F\\rangle / \\|\\hat F\\|^2` over all
        conformers (a denoiser learns forces only up to a factor :math:`kT/\\tau^2`);
        ``scale``: :math:`c`.
    """
    if len(pred) != len(true) or len(pred) == 0:
        raise ValueError(f"pred and true need the same non-zero number of conformers, got {len(pred)} and {len(true)}")
    P, T, cos = [], [], []
    for p, t in zip(pred, true):
        p, t = _as_float_array(p, "pred"), _as_float_array(t, "true")
        if p.shape != t.shape or p.ndim != 2 or p.shape[1] != 3:
            raise ValueError(f"each pair of force arrays must share a shape (n, 3), got {p.shape} and {t.shape}")
        if not (np.all(np.isfinite(p)) and np.all(np.isfinite(t))):
            raise ValueError("forces hold NaN or infinite values")
        denom = np.linalg.norm(p) * np.linalg.norm(t)
        cos.append(float((p * t).sum() / denom) if denom > 0 else 0.0)
        P.append(p.ravel())
        T.append(t.ravel())
    P, T = np.concatenate(P), np.concatenate(T)
    c = float(P @ T / (P @ P)) if P @ P > 0 else 0.0
    mean_abs = float(np.abs(T).mean())
    if mean_abs == 0:
        raise ValueError("the reference forces are all zero; the scaled MAE is undefined")
    return {"cosine": float(np.mean(cos)), "scaled_mae": float(np.abs(c * P - T).mean() / mean_abs), "scale": c}


force_metrics.__doc__ += _REF


def finetune_property(
    molecules: Sequence[Molecule],
    y: np.ndarray,
    *,
    init: ForceNet | None = None,
    steps: int = 300,
    batch_size: int = 16,
    lr: float = 1e-3,
    tau: float = 0.0,
    denoise_weight: float = 0.0,
    readout: str = "sum",
    model_kw: dict | None = None,
    random_state: RandomState = 0,
) -> ForceNet:
    """Fine-tune the scalar head (and the encoder) on labelled molecules at their minima.

    With ``denoise_weight`` :math:`w > 0` the fine-tune keeps a denoising auxiliary term
    (Noisy Nodes, Godwin et al. 2022; the fine-tuning of Zaidi et al. 2023 and of Frad): each
    input is :math:`\\tilde x = x_0 + \\tau\\epsilon` and the loss is
    :math:`\\|s(\\tilde x) - y\\|^2 + w\\,\\|\\mathrm{NN}(\\tilde x) - \\epsilon\\|^2` (per coordinate),
    the force head regressing the noise as in pre-training. The authors' QM9 fine-tuning
    uses :math:`\\tau = 0.005` Å and :math:`w = 0.1`.

    Parameters
    ----------
    molecules : sequence of Molecule
    y : ndarray, shape (m,)
        Labels (standardised inside; the returned model predicts in the labels' units).
    init : ForceNet, optional
        Pretrained network to start from (copied); ``None``: random initialisation
        (the no-pretraining baseline).
    steps, batch_size : int
    lr : float
    tau : float
        Optional coordinate-noise augmentation (Å, 0 for none).
    denoise_weight : float
        Weight :math:`w` of the denoising auxiliary term (0 for none; needs ``tau > 0``).
    readout : {"sum", "dipole"}
        The scalar head's readout (:class:`ForceNet`); with ``"dipole"`` the labels are
        scaled by their sd but not centred (a dipole magnitude is not shifted).
    model_kw : dict, optional
        For a fresh :class:`ForceNet` (ignored with ``init``).
    random_state : int, Generator or None

    Returns
    -------
    ForceNet
        With attributes ``y_mean`` and ``y_std`` used by :func:`predict_property`.
    """
    import copy

    mols = [_check_molecule(m) for m in molecules]
    y = _as_float_array(y, "y").ravel()
    if y.size != len(mols) or len(mols) < 2:
        raise ValueError(f"y needs one label per molecule and at least 2 molecules, got {y.size} labels for {len(mols)}")
    if not np.all(np.isfinite(y)):
        raise ValueError("y holds NaN or infinite labels")
    if init is not None and not isinstance(init, ForceNet):
        raise TypeError(f"init must be a ForceNet or None, got {type(init).__name__}")
    steps = check_int(steps, "steps")
    batch_size = check_int(batch_size, "batch_size")
    lr = check_real(lr, "lr", lo=0, lo_open=True)
    tau = check_real(tau, "tau", lo=0)
    denoise_weight = check_real(denoise_weight, "denoise_weight", lo=0)
    if denoise_weight > 0 and tau == 0:
        raise ValueError(f"denoise_weight={denoise_weight!r} needs coordinate noise to denoise; give tau > 0 (Å), e.g. 0.005")
    readout = _check_readout(readout)
    seed = seed_from(random_state)
    if init is None:
        model = ForceNet(**(model_kw or {}), random_state=seed)
    else:
        model = copy.deepcopy(init)
        gen = torch.random.get_rng_state()
        torch.manual_seed(seed)
        try:  # a fresh property head; the encoder keeps its pretrained weights
            for layer in model.head:
                if isinstance(layer, torch.nn.Linear):
                    layer.reset_parameters()
        finally:
            torch.random.set_rng_state(gen)
    model.readout = readout
    mu, sd = (float(y.mean()) if readout == "sum" else 0.0), float(y.std()) or 1.0
    yt = torch.as_tensor((y - mu) / sd, dtype=torch.float32)
    opt = torch.optim.Adam(model.parameters(), lr=lr, foreach=True)
    rng = np.random.default_rng([seed, 7])
    for _ in range(steps):
        idx = rng.choice(len(mols), size=min(batch_size, len(mols)), replace=False)
        eps = [rng.standard_normal(mols[k].x0.shape) if tau > 0 else 0.0 for k in idx]  # each (n_k, 3)
        xs = [mols[k].x0 + (tau * e if tau > 0 else 0.0) for k, e in zip(idx, eps)]
        z, x, i, j, b = _graph([mols[k] for k in idx], xs)
        f, s = model(z, x, i, j, b, len(idx), heads="both" if denoise_weight > 0 else "scalar")
        loss = ((s - yt[idx]) ** 2).mean()
        if denoise_weight > 0:
            loss = loss + denoise_weight * ((f - torch.as_tensor(np.concatenate(eps), dtype=torch.float32)) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.y_mean, model.y_std = mu, sd
    return model


finetune_property.__doc__ += _REF


def predict_property(model: ForceNet, molecules: Sequence[Molecule]) -> np.ndarray:
    """Property predictions of a fine-tuned network at the molecules' minima.

    Parameters
    ----------
    model : ForceNet
        From :func:`finetune_property`.
    molecules : sequence of Molecule

    Returns
    -------
    ndarray, shape (m,)
    """
    if not isinstance(model, ForceNet) or not hasattr(model, "y_mean"):
        raise TypeError("model must be a ForceNet returned by finetune_property")
    mols = [_check_molecule(m) for m in molecules]
    _, s = predict_forces(model, mols, [m.x0 for m in mols])
    return s * model.y_std + model.y_mean


predict_property.__doc__ += _REF
