"""DWN's layers: the LUT layer, GroupSum, the network container and the LUT MLP (DWN, exact).

References
----------
A. T. L. Bacellar, Z. Susskind, M. Breternitz Jr., E. John, L. K. John, P. M. V. Lima, F. M. G. França, "Differentiable Weightless Neural Networks", ICML 2024, arXiv:2410.11112; code https://github.com/alanbacellar/DWN
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from .._common import RandomState, seed_from, torch_generator
from ._checks import check_float, check_int
from .efd import EFDFunction, LearnableMappingFunction, STEFunction

__all__ = ["MAX_LUT_BYTES", "random_mapping", "check_arity", "LUTLayer", "GroupSum", "LUTNet", "dwn_mlp"]

#: Largest number of bytes a LUT layer may allocate for its tables and EFD tables
#: (``num_luts * 2**n * (n + 1)`` float32 values); beyond this :func:`check_arity` raises.
MAX_LUT_BYTES: int = 1 << 30


def random_mapping(in_features: int, n: int, num_luts: int, random_state: RandomState = None) -> torch.Tensor:
    """DWN's ``random`` mapping: concatenated random permutations of the inputs, cut to (M, n).

    Every input feeds :math:`\\lfloor Mn/I \\rfloor` or :math:`\\lceil Mn/I \\rceil` slots.

    Parameters
    ----------
    in_features : int
        Number of inputs ``I`` to wire from (>= 1).
    n : int
        Inputs per LUT (>= 1).
    num_luts : int
        Number of LUTs ``M`` (>= 1).
    random_state : int, numpy.random.Generator, torch.Generator or None
        Source of the permutations; a ``torch.Generator`` is used as it is (so that a
        layer can draw its tables and its wiring from one stream).

    Returns
    -------
    Tensor of int64, shape (num_luts, n)
        Input index of every LUT slot.

    References
    ----------
    Bacellar et al., "Differentiable Weightless Neural Networks", ICML 2024,
    arXiv:2410.11112; code https://github.com/alanbacellar/DWN (``torch_dwn``).
    """
    in_features, n, num_luts = check_int("in_features", in_features), check_int("n", n), check_int("num_luts", num_luts)
    gen = random_state if isinstance(random_state, torch.Generator) else torch_generator(random_state)
    reps = -(-num_luts * n // in_features)
    perm = torch.cat([torch.randperm(in_features, generator=gen) for _ in range(reps)])
    return perm[: num_luts * n].reshape(num_luts, n).to(torch.int64)


def check_arity(n: int, num_luts: int, *, max_bytes: int = MAX_LUT_BYTES) -> int:
    """Validate a LUT arity ``n`` for ``num_luts`` tables; return ``n``.

    Training stores the tables and the EFD tables, ``num_luts * 2**n * (n + 1)``
    float32 values. A larger request raises ``ValueError`` naming the largest ``n`` that
    fits in ``max_bytes``.

    Parameters
    ----------
    n : int
        LUT arity (>= 1).
    num_luts : int
        Number of tables (>= 1).
    max_bytes : int
        Memory allowed for the tables and EFD tables (default :data:`MAX_LUT_BYTES`).

    Returns
    -------
    int
        ``n``.

    Raises
    ------
    ValueError
        For a non-integer or non-positive ``n`` or ``num_luts``, or an ``n`` whose
        tables would exceed ``max_bytes``.

    References
    ----------
    Bacellar et al., "Differentiable Weightless Neural Networks", ICML 2024,
    arXiv:2410.11112; code https://github.com/alanbacellar/DWN (``torch_dwn``).
    """
    check_int("max_bytes", max_bytes)
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"LUT arity n={n!r} is not valid; use an integer >= 1")
    if isinstance(num_luts, bool) or not isinstance(num_luts, (int, np.integer)) or num_luts < 1:
        raise ValueError(f"num_luts={num_luts!r} is not valid; use an integer >= 1")

    def need(k: int) -> int:
        return int(num_luts) * (2**k) * (k + 1) * 4

    if need(int(n)) > max_bytes:
        n_max = 1
        while need(n_max + 1) <= max_bytes:
            n_max += 1
        raise ValueError(
            f"LUT arity n={n} with {num_luts} LUTs needs {need(int(n)) / 2**20:.0f} MiB "
            f"(tables + EFD tables, float32); at most {max_bytes / 2**20:.0f} MiB is allowed, "
            f"so use n <= {n_max}"
        )
    return int(n)


class LUTLayer(nn.Module):
    """A layer of ``out_features`` LUTs with ``n`` inputs each (DWN ``LUTLayer``).

    Forward: map inputs (random fixed wiring or DWN's learnable mapping), look up
    :math:`y_j = L_j[a_j]` with the EFD backward pass, then binarise with the STE.
    Tables start from :math:`U(-1, 1)` and are clamped to :math:`[-1, 1]` before every
    training forward.

    Parameters
    ----------
    in_features : int
        Width ``I`` of the input bit vector (>= ``n``).
    out_features : int
        Number of LUTs ``M`` (>= 1).
    n : int
        LUT arity (inputs per LUT); validated by :func:`check_arity`.
    mapping : {"random", "learnable"} or Tensor of shape (out_features, n)
        Fixed random wiring, DWN's learnable mapping, or a given index tensor.
    alpha, beta : float, optional
        EFD constants (``alpha > 0``, ``0 <= beta <= 1``); default
        :math:`0.5\\cdot0.75^{n-1}` and :math:`1/3`.
    ste : bool
        Binarise the outputs with the straight-through estimator (DWN: yes).
    clamp : bool
        Clamp the tables to :math:`[-1, 1]` before every training forward (DWN: yes).
    tau : float
        Temperature of the learnable mapping's backward softmax (DWN: 0.001), > 0.
    random_state : int, numpy.random.Generator or None
        Seed of the tables, the random mapping and the learnable-mapping weights.

    Returns
    -------
    LUTLayer
        A module mapping bits of shape ``(batch, in_features)`` to ``(batch, out_features)``.

    References
    ----------
    Bacellar et al., "Differentiable Weightless Neural Networks", ICML 2024,
    arXiv:2410.11112; code https://github.com/alanbacellar/DWN (``torch_dwn``).
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        n: int = 6,
        mapping: str | torch.Tensor = "random",
        *,
        alpha: float | None = None,
        beta: float | None = None,
        ste: bool = True,
        clamp: bool = True,
        tau: float = 1e-3,
        random_state: RandomState = 0,
    ) -> None:
        super().__init__()
        check_int("in_features", in_features)
        check_int("out_features", out_features)
        check_arity(n, out_features)
        if n > in_features:
            raise ValueError(f"LUT arity n={n} exceeds in_features={in_features}; use n <= in_features")
        self.in_features, self.out_features, self.n = int(in_features), int(out_features), int(n)
        self.alpha = 0.5 * 0.75 ** (n - 1) if alpha is None else check_float("alpha", alpha, lo=0.0, lo_open=True)
        self.beta = 0.25 / 0.75 if beta is None else check_float("beta", beta, lo=0.0, hi=1.0)
        self.ste, self.clamp, self.tau = bool(ste), bool(clamp), check_float("tau", tau, lo=0.0, lo_open=True)
        gen = torch_generator(random_state)
        self.luts = nn.Parameter(torch.rand(out_features, 2**n, generator=gen) * 2 - 1)  # (M, 2**n)
        if isinstance(mapping, torch.Tensor):
            if mapping.is_floating_point() or mapping.dtype == torch.bool:
                raise TypeError(f"a mapping tensor must hold integer indices, got dtype {mapping.dtype}")
            if mapping.shape != (out_features, n):
                raise ValueError(f"mapping tensor must have shape ({out_features}, {n}), got {tuple(mapping.shape)}")
            if mapping.min() < 0 or mapping.max() >= in_features:
                raise ValueError(
                    f"mapping indices must lie in [0, {in_features}), got {int(mapping.min())}..{int(mapping.max())}"
                )
            self.mapping_kind = "fixed"
            self.register_buffer("mapping", mapping.to(torch.int64).clone())
        elif mapping == "random":
            self.mapping_kind = "random"
            self.register_buffer("mapping", random_mapping(in_features, n, out_features, gen))
        elif mapping == "learnable":
            self.mapping_kind = "learnable"
            self.map_weights = nn.Parameter(torch.rand(in_features, out_features * n, generator=gen))  # (I, M*n)
            self.register_buffer("mapping", torch.arange(out_features * n).reshape(out_features, n))
        else:
            raise ValueError(f"mapping={mapping!r} is not valid; use 'random', 'learnable' or an (M, n) index tensor")

    def hard_mapping(self) -> np.ndarray:
        """The input index of every LUT slot, shape (M, n) (argmax of the learnable weights).

        Returns
        -------
        numpy.ndarray of int64, shape (M, n)
            Input index of every LUT slot.
        """
        if self.mapping_kind == "learnable":
            return self.map_weights.detach().argmax(dim=0).reshape(self.out_features, self.n).numpy().astype(np.int64)
        return self.mapping.numpy().astype(np.int64)

    def hard_tables(self) -> np.ndarray:
        """The deployed truth tables :math:`\\mathbb 1[L_j[k] > 0]`, shape (M, 2**n), bool.

        Returns
        -------
        numpy.ndarray of bool, shape (M, 2**n)
            The deployed truth tables.
        """
        return (self.luts.detach() > 0).numpy()

    def lut_evaluations(self, input_shape: tuple[int, ...]) -> tuple[int, tuple[int, ...]]:
        """LUT evaluations per sample and output shape for an input of ``input_shape`` (without batch).

        Returns
        -------
        (int, tuple of int)
            ``out_features`` and ``(out_features,)``.
        """
        return self.out_features, (self.out_features,)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Output bits (or table values with ``ste=False``) of shape ``(batch, out_features)``.

        Returns
        -------
        Tensor, shape (B, out_features)
            Output bits (table values with ``ste=False``).
        """
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"LUTLayer expects a torch.Tensor, got {type(x).__name__}")
        if x.ndim != 2 or x.shape[1] != self.in_features:
            raise ValueError(f"LUTLayer expects input of shape (batch, {self.in_features}), got {tuple(x.shape)}")
        if x.is_floating_point() and not bool(torch.isfinite(x).all()):
            raise ValueError("LUTLayer input holds NaN or infinite values; LUT inputs are bits")
        if self.training and self.clamp:
            with torch.no_grad():
                self.luts.clamp_(-1, 1)
        if self.mapping_kind == "learnable":
            x = LearnableMappingFunction.apply(x, self.map_weights, self.tau)  # (B, M*n)
        y = EFDFunction.apply(x, self.mapping, self.luts, self.alpha, self.beta)  # (B, M)
        return STEFunction.apply(y) if self.ste else y

    def extra_repr(self) -> str:
        """The sizes shown by ``repr``.

        Returns
        -------
        str
            The layer's sizes for ``repr``.
        """
        return f"{self.in_features} -> {self.out_features}, n={self.n}, mapping={self.mapping_kind}"


def _check_groups(k: int, in_features: int) -> None:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k={k!r} (number of classes) is not valid; use an integer >= 1")
    if isinstance(in_features, bool) or not isinstance(in_features, (int, np.integer)) or in_features < k:
        raise ValueError(f"in_features={in_features!r} must be an integer >= k={k}")


def _check_counts_input(y: object, in_features: int, who: str) -> None:
    if not isinstance(y, torch.Tensor):
        raise TypeError(f"{who} expects a torch.Tensor, got {type(y).__name__}")
    if y.ndim != 2 or y.shape[1] != in_features:
        raise ValueError(f"{who} expects input of shape (batch, {in_features}), got {tuple(y.shape)}")
    if y.is_floating_point() and not bool(torch.isfinite(y).all()):
        raise ValueError(f"{who} input holds NaN or infinite values")


class GroupSum(nn.Module):
    """DWN's GroupSum: class ``c`` scores the popcount of its contiguous group, divided by tau.

    :math:`z_c = \\tfrac1\\tau\\sum_{j\\in G_c} y_j` with :math:`G_c` the ``c``-th of ``k``
    contiguous blocks of :math:`\\lceil M/k \\rceil` outputs (the last block is zero-padded,
    as in ``torch_dwn.utils.pad_if_needed``).

    Parameters
    ----------
    k : int
        Number of classes (>= 1).
    in_features : int
        Number of output bits ``M`` of the last LUT layer (>= ``k``).
    tau : float
        Softmax temperature of the scores (> 0); DWN's MNIST recipe uses 1/0.3.

    Returns
    -------
    GroupSum
        A module mapping bits ``(batch, M)`` to class scores ``(batch, k)``.

    References
    ----------
    Bacellar et al., "Differentiable Weightless Neural Networks", ICML 2024,
    arXiv:2410.11112; code https://github.com/alanbacellar/DWN (``torch_dwn``).
    """

    def __init__(self, k: int, in_features: int, tau: float = 1.0) -> None:
        super().__init__()
        _check_groups(k, in_features)
        self.k, self.in_features, self.tau = int(k), int(in_features), check_float("tau", tau, lo=0.0, lo_open=True)

    def assignment(self) -> np.ndarray:
        """The class of every input bit, shape (M,).

        Returns
        -------
        numpy.ndarray of int, shape (M,)
            The class of every input bit.
        """
        return np.arange(self.in_features) // -(-self.in_features // self.k)

    def counts(self, y: torch.Tensor) -> torch.Tensor:
        """Per-class popcounts, shape (B, k).

        Returns
        -------
        Tensor, shape (B, k)
            Per-class popcounts.
        """
        _check_counts_input(y, self.in_features, "GroupSum")
        onehot = F.one_hot(torch.as_tensor(self.assignment()), self.k).to(y.dtype)  # (M, k)
        return y @ onehot  # (B, k)

    def forward(self, y: torch.Tensor) -> torch.Tensor:
        """Class scores :math:`z = \\text{counts}/\\tau`, shape (B, k).

        Returns
        -------
        Tensor, shape (B, k)
            Class scores.
        """
        return self.counts(y) / self.tau


class LUTNet(nn.Module):
    """A weightless network: ``features`` (conv-LUT / pool blocks) -> flatten -> ``classifier`` (LUT layers) -> ``head``.

    Parameters
    ----------
    input_shape : tuple
        ``(C, H, W)`` for a network with convolutional features, ``(I,)`` otherwise.
    features : sequence of modules
        :class:`~icml26.lut.clgn.ConvLUT` and :class:`~icml26.lut.clgn.OrPool` blocks (may be empty).
    classifier : sequence of LUTLayer
        The dense LUT layers (at least one).
    head : GroupSum or LearnableGroupSum
        Turns the last layer's bits into class scores.

    Returns
    -------
    LUTNet
        A module mapping inputs ``(batch, *input_shape)`` to class scores ``(batch, k)``.

    References
    ----------
    Bacellar et al., "Differentiable Weightless Neural Networks", ICML 2024,
    arXiv:2410.11112; code https://github.com/alanbacellar/DWN (``torch_dwn``).
    """

    def __init__(
        self, input_shape: Sequence[int], features: Sequence[nn.Module], classifier: Sequence[nn.Module], head: nn.Module
    ) -> None:
        super().__init__()
        if isinstance(input_shape, (str, bytes)) or not isinstance(input_shape, Sequence) or len(input_shape) not in (1, 3):
            raise ValueError(f"input_shape={input_shape!r} is not valid; use (I,) or (C, H, W)")
        self.input_shape = tuple(check_int("input_shape entry", v) for v in input_shape)
        classifier = list(classifier)
        if not classifier or not all(isinstance(b, LUTLayer) for b in classifier):
            raise TypeError(f"classifier must be a non-empty sequence of LUTLayer, got {[type(b).__name__ for b in classifier]}")
        if not isinstance(head, nn.Module) or not hasattr(head, "counts") or not hasattr(head, "k"):
            raise TypeError(f"head must be a GroupSum or LearnableGroupSum, got {type(head).__name__}")
        self.features = nn.Sequential(*features)
        self.classifier = nn.Sequential(*classifier)
        self.head = head

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        """Flattened output bits of the feature stage, shape (B, F).

        Returns
        -------
        Tensor, shape (B, F)
            Flattened feature bits.
        """
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"LUTNet expects a torch.Tensor, got {type(x).__name__}")
        if tuple(x.shape[1:]) != self.input_shape:
            raise ValueError(
                f"LUTNet expects input of shape (batch, {', '.join(map(str, self.input_shape))}), got {tuple(x.shape)}"
            )
        return self.features(x).reshape(x.shape[0], -1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Class scores of shape (B, k).

        Returns
        -------
        Tensor, shape (B, k)
            Class scores.
        """
        return self.head(self.classifier(self.embed(x)))

    def counts(self, x: torch.Tensor) -> torch.Tensor:
        """Per-class popcounts of the hard network (eval mode), shape (B, k).

        Returns
        -------
        Tensor, shape (B, k)
            Per-class popcounts.
        """
        return self.head.counts(self.classifier(self.embed(x)))


def _tau_for(group_size: float) -> float:
    # DWN's MNIST recipe: groups of 100 bits with tau = 1/0.3, i.e. logits in [0, 30].
    return max(group_size, 1.0) / 30.0


def dwn_mlp(
    in_features: int,
    hidden: Sequence[int],
    k: int = 10,
    *,
    n: int = 6,
    learnable_first: bool = True,
    random_state: RandomState = 0,
) -> LUTNet:
    """DWN-style LUT MLP: LUT layers of widths ``hidden`` (first one learnable-mapped) -> GroupSum(k).

    DWN's MNIST network is ``dwn_mlp(784*3, [2000, 1000])`` with tau = 1/0.3; here tau
    keeps DWN's logit range, :math:`\\tau = (M/k)/30`.

    Parameters
    ----------
    in_features : int
        Input bits (>= ``n``).
    hidden : sequence of int
        Widths of the LUT layers (at least one; the last >= ``k``).
    k : int
        Number of classes.
    n : int
        LUT arity.
    learnable_first : bool
        Give the first layer DWN's learnable mapping (else random wiring).
    random_state : int, numpy.random.Generator or None
        Seed of every layer's tables and wiring.

    Returns
    -------
    LUTNet
        The untrained network.

    References
    ----------
    Bacellar et al., "Differentiable Weightless Neural Networks", ICML 2024,
    arXiv:2410.11112; code https://github.com/alanbacellar/DWN (``torch_dwn``).
    """
    if isinstance(hidden, (str, bytes)) or not isinstance(hidden, Sequence) or len(hidden) == 0:
        raise ValueError(f"hidden={hidden!r} must name at least one LUT layer width")
    hidden = [check_int("hidden width", h) for h in hidden]
    base = seed_from(random_state)
    layers, width = [], check_int("in_features", in_features)
    for i, h in enumerate(hidden):
        mapping = "learnable" if (i == 0 and learnable_first) else "random"
        layers.append(LUTLayer(width, int(h), n, mapping, random_state=base + 31 * i))
        width = int(h)
    head = GroupSum(k, width, tau=_tau_for(width / k))
    return LUTNet((int(in_features),), [], layers, head)
