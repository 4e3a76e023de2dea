"""CLGN's additions to DWN, **reconstructed** from the paper's abstract.

"CLGN: Convolutional Learnable-Group Weightless Neural Networks" (ICML 2026) names three
ideas; its text, architecture and code were not available, so all of this module is our
reading of those phrases, not the paper's definition:

* a convolutional LUT layer whose tables are shared over positions (:class:`ConvLUT`),
  with a binary OR-pool (:class:`OrPool`);
* a learnable GroupSum (:class:`LearnableGroupSum`);
* a hierarchical, stage-by-stage training schedule (:func:`fit_hierarchical`);

and :func:`clgn_net` assembles them. The DWN parts they build on (LUT layer, EFD,
GroupSum, training recipe) are in :mod:`icml26.lut.layers`, :mod:`icml26.lut.efd` and
:mod:`icml26.lut.training` and follow DWN exactly.

References
----------
CLGN: Convolutional Learnable-Group Weightless Neural Networks, ICML 2026 (abstract only; no code found).
A. T. L. Bacellar, Z. Susskind, M. Breternitz Jr., E. John, L. K. John, P. M. V. Lima, F. M. G. França, "Differentiable Weightless Neural Networks", ICML 2024, arXiv:2410.11112; code https://github.com/alanbacellar/DWN
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from .._common import RandomState, seed_from
from ._checks import check_float, check_int
from .layers import GroupSum, LUTLayer, LUTNet, _check_counts_input, _check_groups, _tau_for, check_arity
from .training import fit_lut_model, lut_training_cost

__all__ = ["ConvLUT", "OrPool", "LearnableGroupSum", "clgn_net", "fit_hierarchical"]


class ConvLUT(nn.Module):
    """Convolutional LUT layer: one table per output channel, shared by every position.

    Each output channel ``o`` owns a table :math:`L_o\\in[-1,1]^{2^n}` and a wiring of
    its ``n`` inputs into the :math:`C_{in}\\times k\\times k` receptive field; the same
    table and relative wiring are applied at every position (stride ``stride``), as a
    convolution shares its kernel. Implemented as ``unfold`` -> :class:`LUTLayer` on the
    (B*P, C_in*k*k) patch matrix, so the EFD gradients of all positions add up in the
    shared table. **Reconstructed**: CLGN's convolutional LUT layer as we read the
    abstract; the paper's definition may differ.

    Parameters
    ----------
    in_channels : int
        Input bit planes ``C_in`` (>= 1).
    out_channels : int
        Output channels, one table each (>= 1).
    kernel_size : int
        Side ``k`` of the square receptive field (>= 1).
    stride : int
        Step between positions (>= 1).
    padding : int
        Zero padding on every side (>= 0).
    n : int
        LUT arity, ``n <= in_channels * kernel_size**2``.
    mapping : {"random", "learnable"}
        ``"random"`` draws ``n`` distinct field positions per channel; ``"learnable"`` is
        DWN's learnable mapping inside the field.
    tau : float
        Temperature of the learnable mapping (> 0).
    random_state : int, numpy.random.Generator or None
        Seed of the tables and the wiring.

    Returns
    -------
    ConvLUT
        A module mapping bits ``(B, C_in, H, W)`` to ``(B, C_out, H_out, W_out)``.

    References
    ----------
    "CLGN: Convolutional Learnable-Group Weightless Neural Networks", ICML 2026 (abstract
    only; no code found). Builds on Bacellar et al., "Differentiable Weightless Neural
    Networks", ICML 2024, arXiv:2410.11112; code https://github.com/alanbacellar/DWN.
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: int = 3,
        *,
        stride: int = 1,
        padding: int = 0,
        n: int = 6,
        mapping: str = "random",
        tau: float = 1e-3,
        random_state: RandomState = 0,
    ) -> None:
        super().__init__()
        for name, v, lo in (
            ("in_channels", in_channels, 1),
            ("out_channels", out_channels, 1),
            ("kernel_size", kernel_size, 1),
            ("stride", stride, 1),
            ("padding", padding, 0),
        ):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
                raise ValueError(f"{name}={v!r} is not valid; use an integer >= {lo}")
        field_size = in_channels * kernel_size**2
        check_arity(n, out_channels)
        if n > field_size:
            raise ValueError(f"LUT arity n={n} exceeds the receptive field C_in*k*k={field_size}; use n <= {field_size}")
        if mapping not in ("random", "learnable"):
            raise ValueError(f"mapping={mapping!r} is not valid; use 'random' or 'learnable'")
        self.in_channels, self.out_channels = int(in_channels), int(out_channels)
        self.kernel_size, self.stride, self.padding, self.n = int(kernel_size), int(stride), int(padding), int(n)
        seed = seed_from(random_state)
        gen = torch.Generator().manual_seed(seed + 7919)
        fixed = None
        if mapping == "random":  # n distinct field positions per channel
            fixed = torch.stack([torch.randperm(field_size, generator=gen)[:n] for _ in range(out_channels)])
        self.lut = LUTLayer(field_size, out_channels, n, fixed if fixed is not None else "learnable", tau=tau, random_state=seed)

    def output_hw(self, h: int, w: int) -> tuple[int, int]:
        """Output height and width for an ``h x w`` input.

        Returns
        -------
        (int, int)
            Output height and width.
        """
        h, w = check_int("h", h, 0), check_int("w", w, 0)
        k, s, p = self.kernel_size, self.stride, self.padding
        ho, wo = (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
        if ho < 1 or wo < 1:
            raise ValueError(f"input {h}x{w} is smaller than the kernel {k}x{k} (padding {p})")
        return ho, wo

    def lut_evaluations(self, input_shape: tuple[int, ...]) -> tuple[int, tuple[int, ...]]:
        """LUT evaluations per sample (one per channel and position) and the output shape.

        Returns
        -------
        (int, tuple of int)
            Evaluations per sample and output shape ``(C_out, H_out, W_out)``.
        """
        ho, wo = self.output_hw(input_shape[1], input_shape[2])
        return self.out_channels * ho * wo, (self.out_channels, ho, wo)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Output bits of shape ``(B, C_out, H_out, W_out)``.

        Returns
        -------
        Tensor, shape (B, C_out, H_out, W_out)
            Output bits.
        """
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"ConvLUT expects a torch.Tensor, got {type(x).__name__}")
        if x.ndim != 4 or x.shape[1] != self.in_channels:
            raise ValueError(f"ConvLUT expects input of shape (batch, {self.in_channels}, H, W), got {tuple(x.shape)}")
        B, _, H, W = x.shape
        ho, wo = self.output_hw(H, W)
        patches = F.unfold(x, self.kernel_size, padding=self.padding, stride=self.stride)  # (B, C*k*k, P)
        rows = patches.transpose(1, 2).reshape(B * ho * wo, -1)  # (B*P, C*k*k)
        y = self.lut(rows)  # (B*P, C_out)
        return y.reshape(B, ho * wo, self.out_channels).transpose(1, 2).reshape(B, self.out_channels, ho, wo)

    def extra_repr(self) -> str:
        """The sizes shown by ``repr``.

        Returns
        -------
        str
            The layer's sizes for ``repr``.
        """
        return (
            f"{self.in_channels} -> {self.out_channels}, k={self.kernel_size}, stride={self.stride}, "
            f"padding={self.padding}, n={self.n}, mapping={self.lut.mapping_kind}"
        )


class OrPool(nn.Module):
    """Binary OR pooling over ``k x k`` windows (max-pool on {0, 1}; one k*k-input OR gate).

    **Reconstructed**: the pooling of our convolutional LUT network (CLGN's abstract names
    no pooling).

    Parameters
    ----------
    kernel_size : int
        Window side and stride ``k`` (>= 1); a remainder row/column is dropped.

    Returns
    -------
    OrPool
        A module mapping ``(B, C, H, W)`` to ``(B, C, H // k, W // k)``.

    References
    ----------
    "CLGN: Convolutional Learnable-Group Weightless Neural Networks", ICML 2026 (abstract
    only; no code found). Builds on Bacellar et al., "Differentiable Weightless Neural
    Networks", ICML 2024, arXiv:2410.11112; code https://github.com/alanbacellar/DWN.
    """

    def __init__(self, kernel_size: int = 2) -> None:
        super().__init__()
        if isinstance(kernel_size, bool) or not isinstance(kernel_size, (int, np.integer)) or kernel_size < 1:
            raise ValueError(f"kernel_size={kernel_size!r} is not valid; use an integer >= 1")
        self.kernel_size = int(kernel_size)

    def lut_evaluations(self, input_shape: tuple[int, ...]) -> tuple[int, tuple[int, ...]]:
        """No LUT evaluations; the output shape ``(C, H // k, W // k)``.

        Returns
        -------
        (int, tuple of int)
            0 and the output shape.
        """
        c, h, w = input_shape
        return 0, (c, h // self.kernel_size, w // self.kernel_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """OR over each window: shape ``(B, C, H // k, W // k)``.

        Returns
        -------
        Tensor, shape (B, C, H // k, W // k)
            Pooled bits.
        """
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"OrPool expects a torch.Tensor, got {type(x).__name__}")
        if x.ndim != 4:
            raise ValueError(f"OrPool expects input of shape (batch, C, H, W), got {tuple(x.shape)}")
        if x.shape[2] < self.kernel_size or x.shape[3] < self.kernel_size:
            raise ValueError(
                f"OrPool input {tuple(x.shape[2:])} is smaller than the window {self.kernel_size}x{self.kernel_size}"
            )
        return F.max_pool2d(x, self.kernel_size)


class LearnableGroupSum(nn.Module):
    """Learnable GroupSum: every output bit learns which class it votes for.

    Assignment logits :math:`G\\in\\mathbb R^{k\\times M}`; the forward pass uses the hard
    assignment :math:`A = \\mathrm{onehot}(\\arg\\max_c G_{c,j})`, so that inference is a
    popcount per class exactly as in GroupSum, :math:`z = \\tfrac1\\tau\\, y A^\\top`. The
    bits receive the gradient of that hard GroupSum; the logits receive the gradient of
    the soft votes :math:`\\tfrac1\\tau\\, y\\,\\mathrm{softmax}_c(G/t)^\\top` (straight-through,
    as DWN's learnable mapping learns its argmax wiring through a softmax). So the model
    equals DWN's GroupSum until a bit's logits cross and it changes class. ``G`` starts at
    the contiguous partition of :class:`GroupSum` times ``init_scale`` (the margin a bit
    must overcome to change class) plus a small uniform jitter; Adam moves a logit by
    about ``lr`` per step, so the margin must be reachable within training (0.5 by
    default, i.e. about 50 steps at lr 1e-2). With ``hard=False`` the training forward
    pass uses the soft votes (evaluation is always hard).

    **Reconstructed**: CLGN's learnable GroupSum as we read the abstract; the paper's
    definition (a learnable permutation, a Gumbel relaxation, ...) may differ. This is
    the second version: a first one also sent the soft votes' gradient to the bits and
    started from a margin of 2; in the chapter's first full run it never reassigned a
    bit, so it was replaced by the present one (margin 0.5, the bits' gradient through
    the hard assignment) before the final run (see chapter 08).

    Parameters
    ----------
    k : int
        Number of classes (>= 1).
    in_features : int
        Output bits ``M`` of the last LUT layer (>= ``k``).
    tau : float
        Score temperature (> 0), as in :class:`~icml26.lut.layers.GroupSum`.
    temperature : float
        Softmax temperature ``t`` of the assignment logits (> 0).
    init_scale : float
        Starting margin of the contiguous assignment (>= 0).
    hard : bool
        Hard forward pass in training (straight-through) or soft votes.
    random_state : int, numpy.random.Generator or None
        Seed of the jitter on the logits.

    Returns
    -------
    LearnableGroupSum
        A module mapping bits ``(B, M)`` to class scores ``(B, k)``.

    References
    ----------
    "CLGN: Convolutional Learnable-Group Weightless Neural Networks", ICML 2026 (abstract
    only; no code found). Builds on Bacellar et al., "Differentiable Weightless Neural
    Networks", ICML 2024, arXiv:2410.11112; code https://github.com/alanbacellar/DWN.
    """

    def __init__(
        self,
        k: int,
        in_features: int,
        tau: float = 1.0,
        *,
        temperature: float = 1.0,
        init_scale: float = 0.5,
        hard: bool = True,
        random_state: RandomState = 0,
    ) -> None:
        super().__init__()
        _check_groups(k, in_features)
        tau = check_float("tau", tau, lo=0.0, lo_open=True)
        temperature = check_float("temperature", temperature, lo=0.0, lo_open=True)
        init_scale = check_float("init_scale", init_scale, lo=0.0)
        self.k, self.in_features, self.tau = int(k), int(in_features), float(tau)
        self.temperature, self.hard = float(temperature), bool(hard)
        gen = torch.Generator().manual_seed(seed_from(random_state) + 104729)
        start = GroupSum(k, in_features).assignment()
        logits = init_scale * F.one_hot(torch.as_tensor(start), k).T.float()  # (k, M)
        self.logits = nn.Parameter(logits + 0.01 * torch.rand(k, in_features, generator=gen))

    def assignment(self) -> np.ndarray:
        """The hard class of every input bit, shape (M,).

        Returns
        -------
        numpy.ndarray of int, shape (M,)
            The class of every output bit.
        """
        return self.logits.detach().argmax(dim=0).numpy()

    def _hard(self) -> torch.Tensor:
        return F.one_hot(self.logits.argmax(dim=0), self.k).T.to(self.logits.dtype)  # (k, M), exact 0/1

    def counts(self, y: torch.Tensor) -> torch.Tensor:
        """Per-class vote counts, shape (B, k): exact popcounts in the forward pass.

        Returns
        -------
        Tensor, shape (B, k)
            Per-class vote counts.
        """
        _check_counts_input(y, self.in_features, "LearnableGroupSum")
        hard = self._hard()
        if not self.training:
            return y @ hard.T  # deployment: one class per output bit
        soft = torch.softmax(self.logits / self.temperature, dim=0)  # (k, M)
        if not self.hard:
            return y @ soft.T
        # forward: exactly the hard popcounts; backward: to y through the hard assignment (as GroupSum),
        # to the logits through the soft votes of the (detached) bits (straight-through)
        soft_votes = y.detach() @ soft.T  # (B, k)
        return y @ hard.T + (soft_votes - soft_votes.detach())

    def forward(self, y: torch.Tensor) -> torch.Tensor:
        """Class scores ``counts / tau``, shape (B, k).

        Returns
        -------
        Tensor, shape (B, k)
            Class scores.
        """
        return self.counts(y) / self.tau


def clgn_net(
    input_shape: Sequence[int],
    channels: int,
    hidden: Sequence[int],
    k: int = 10,
    *,
    n: int = 6,
    kernel_size: int = 3,
    padding: int = 1,
    pool: int = 1,
    conv_mapping: str = "learnable",
    learnable_groupsum: bool = True,
    random_state: RandomState = 0,
) -> LUTNet:
    """CLGN-style network: ConvLUT (shared tables) [-> OrPool] -> LUT layers -> (learnable) GroupSum.

    The dense LUT layer after the convolution uses DWN's learnable mapping.
    **Reconstructed** architecture (CLGN's is not public).

    Parameters
    ----------
    input_shape : (int, int, int)
        ``(C, H, W)`` of the binary input image.
    channels : int
        Output channels of the convolutional LUT layer.
    hidden : sequence of int
        Widths of the dense LUT layers (at least one; the last >= ``k``).
    k : int
        Number of classes.
    n : int
        LUT arity of every layer.
    kernel_size, padding : int
        Of the convolutional LUT layer.
    pool : int
        OR-pool window (1: no pooling).
    conv_mapping : {"random", "learnable"}
        Wiring of the convolutional LUTs inside their receptive field.
    learnable_groupsum : bool
        :class:`LearnableGroupSum` (CLGN) or DWN's fixed GroupSum.
    random_state : int, numpy.random.Generator or None
        Seed of every table and wiring.

    Returns
    -------
    LUTNet
        The untrained network.

    References
    ----------
    "CLGN: Convolutional Learnable-Group Weightless Neural Networks", ICML 2026 (abstract
    only; no code found). Builds on Bacellar et al., "Differentiable Weightless Neural
    Networks", ICML 2024, arXiv:2410.11112; code https://github.com/alanbacellar/DWN.
    """
    if isinstance(input_shape, (str, bytes)) or not isinstance(input_shape, Sequence) or len(input_shape) != 3:
        raise ValueError(f"input_shape={input_shape!r} is not valid; use (C, H, W)")
    C, H, W = (check_int("input_shape entry", s) for s in input_shape)
    if isinstance(hidden, (str, bytes)) or not isinstance(hidden, Sequence) or len(hidden) == 0:
        raise ValueError(f"hidden={hidden!r} must name at least one LUT layer width")
    check_int("pool", pool)
    random_state = seed_from(random_state)
    conv = ConvLUT(C, channels, kernel_size, padding=padding, n=n, mapping=conv_mapping, random_state=random_state)
    ho, wo = conv.output_hw(H, W)
    feats: list[nn.Module] = [conv]
    if pool > 1:
        feats.append(OrPool(pool))
        ho, wo = ho // pool, wo // pool
    width = channels * ho * wo
    layers = []
    for i, h in enumerate(hidden):
        layers.append(
            LUTLayer(
                width,
                check_int("hidden width", h),
                n,
                "learnable" if i == 0 else "random",
                random_state=random_state + 31 * (i + 1),
            )
        )
        width = int(h)
    tau = _tau_for(width / k)
    head = LearnableGroupSum(k, width, tau, random_state=random_state) if learnable_groupsum else GroupSum(k, width, tau)
    return LUTNet((C, H, W), feats, layers, head)


class _Stage2(nn.Module):
    def __init__(self, net: LUTNet) -> None:
        super().__init__()
        self.classifier, self.head = net.classifier, net.head

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return self.head(self.classifier(z))


def fit_hierarchical(
    model: LUTNet,
    X: torch.Tensor,
    y: torch.Tensor,
    *,
    stage_epochs: tuple[int, int],
    batch_size: int = 32,
    lr: float = 1e-2,
    step_size: int | None = None,
    X_eval: torch.Tensor | None = None,
    y_eval: torch.Tensor | None = None,
    random_state: RandomState = 0,
) -> dict[str, list[float]]:
    """Hierarchical (stage-by-stage) schedule: train the feature stage, freeze it, train the rest.

    Stage 1 trains ``model.features`` under a temporary fixed GroupSum head placed directly
    on the feature bits (``stage_epochs[0]`` epochs). Stage 2 freezes the features,
    computes their output bits once for the training set and trains ``classifier`` +
    ``head`` on those cached bits (``stage_epochs[1]`` epochs, learning rate x0.1 every ``step_size``); the frozen stage costs
    nothing per epoch. A reconstruction of CLGN's "hierarchical training strategy"
    (abstract only). The history's ``acc`` is that of the full network (stage 1 entries
    are ``nan``: the classifier is not trained yet), ``cost``/``seconds`` are cumulative and
    include the one-off caching pass.

    **Reconstructed**: our block-by-block reading of CLGN's "hierarchical training
    strategy"; the paper's schedule may differ.

    Parameters
    ----------
    model : LUTNet
        A network with a non-empty feature stage (e.g. from :func:`clgn_net`).
    X : Tensor, shape (n, C, H, W)
        Training bits.
    y : Tensor of int, shape (n,)
        Training labels.
    stage_epochs : (int, int)
        Epochs of stage 1 (features) and stage 2 (classifier and head), each >= 0.
    batch_size, lr : int, float
        As in :func:`~icml26.lut.training.fit_lut_model`.
    step_size : int, optional
        Learning-rate decay period of stage 2.
    X_eval, y_eval : Tensor, optional
        Evaluation data for the ``acc`` history.
    random_state : int, numpy.random.Generator or None
        Seed of the mini-batch orders of both stages.

    Returns
    -------
    dict of str to list of float
        ``loss``, ``acc``, ``seconds``, ``cost`` per epoch (as
        :func:`~icml26.lut.training.fit_lut_model`) and ``stage`` (1.0 or 2.0).

    References
    ----------
    "CLGN: Convolutional Learnable-Group Weightless Neural Networks", ICML 2026 (abstract
    only; no code found). Builds on Bacellar et al., "Differentiable Weightless Neural
    Networks", ICML 2024, arXiv:2410.11112; code https://github.com/alanbacellar/DWN.
    """
    if not isinstance(model, LUTNet):
        raise TypeError(f"model must be a LUTNet, got {type(model).__name__}")
    if len(model.features) == 0:
        raise ValueError("fit_hierarchical needs a network with a feature stage (model.features is empty)")
    if (
        isinstance(stage_epochs, (str, bytes))
        or not isinstance(stage_epochs, Sequence)
        or len(stage_epochs) != 2
        or any(isinstance(e, bool) or not isinstance(e, (int, np.integer)) or e < 0 for e in stage_epochs)
    ):
        raise ValueError(f"stage_epochs={stage_epochs!r} must be two integers >= 0")
    if not isinstance(X, torch.Tensor) or not isinstance(y, torch.Tensor) or len(X) != len(y) or len(X) == 0:
        raise ValueError("X and y must be non-empty tensors of equal length")
    e1, e2 = (int(e) for e in stage_epochs)
    random_state = seed_from(random_state)
    with torch.no_grad():
        width = model.embed(X[:1]).shape[1]
    k = model.head.k
    tmp_head = GroupSum(k, width, tau=_tau_for(width / k))

    class _Stage1(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.features = model.features

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return tmp_head(model.embed(x))

    stage1 = _Stage1()
    feat_cost = lut_training_cost(model) - lut_training_cost(model, frozen_features=True)
    h1 = fit_lut_model(
        stage1, X, y, epochs=e1, batch_size=batch_size, lr=lr, cost_per_sample=feat_cost, random_state=random_state
    )
    t0 = time.perf_counter()
    model.eval()
    for p in model.features.parameters():
        p.requires_grad_(False)
    with torch.no_grad():
        Z = torch.cat([model.embed(X[i : i + 512]) for i in range(0, len(X), 512)])  # (N, F) cached bits
        Z_eval = None if X_eval is None else torch.cat([model.embed(X_eval[i : i + 512]) for i in range(0, len(X_eval), 512)])
    cache_s = time.perf_counter() - t0
    ev_feat = feat_cost // 3
    stage2 = _Stage2(model)
    h2 = fit_lut_model(
        stage2,
        Z,
        y,
        epochs=e2,
        batch_size=batch_size,
        lr=lr,
        step_size=step_size,
        cost_per_sample=lut_training_cost(model, frozen_features=True),
        X_eval=Z_eval,
        y_eval=y_eval,
        random_state=random_state + 1,
    )
    for p in model.features.parameters():
        p.requires_grad_(True)
    t1 = h1["seconds"][-1] if h1["seconds"] else 0.0
    c1 = (h1["cost"][-1] if h1["cost"] else 0.0) + ev_feat * len(X)
    hist = {
        "loss": h1["loss"] + h2["loss"],
        "acc": [float("nan")] * e1 + h2["acc"],
        "seconds": h1["seconds"] + [t1 + cache_s + s for s in h2["seconds"]],
        "cost": h1["cost"] + [c1 + c for c in h2["cost"]],
        "stage": [1.0] * e1 + [2.0] * e2,
    }
    model.eval()
    return hist
