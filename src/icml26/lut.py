"""Weightless (lookup-table) neural networks: DWN building blocks and CLGN's additions.

This module implements, in plain PyTorch on the CPU,

* the thermometer encoding of DWN (:class:`ThermometerEncoder`),
* a LUT layer trained with the Extended Finite Difference (EFD) gradient of
  Bacellar et al., "Differentiable Weightless Neural Networks", ICML 2024
  (arXiv 2410.11112), input gradients included (:class:`EFDFunction`,
  :func:`efd_input_tables`, :class:`LUTLayer`),
* DWN's learnable input mapping (:class:`LearnableMappingFunction`),
* a convolutional LUT layer whose tables are shared over positions
  (:class:`ConvLUT`), a binary OR-pool (:class:`OrPool`),
* GroupSum and a learnable GroupSum (:class:`GroupSum`, :class:`LearnableGroupSum`),
* the training loop and a hierarchical (stage-by-stage) schedule
  (:func:`fit_lut_model`, :func:`fit_hierarchical`),
* exact bit-level inference of a trained network with NumPy integers only
  (:func:`compile_bits`, :class:`BitNetwork`),
* analytic resource counts (:func:`resource_counts`).

The convolutional layer, the learnable GroupSum and the hierarchical schedule are
*reconstructions* of the ideas named in the abstract of "CLGN: Convolutional
Learnable-Group Weightless Neural Networks" (ICML 2026); the paper's text was not
available. Everything DWN-specific follows the DWN equations and code.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

__all__ = [
    "MAX_LUT_BYTES",
    "ThermometerEncoder",
    "lut_addresses",
    "efd_input_tables",
    "efd_compressed_tables",
    "efd_input_tables_bruteforce",
    "EFDFunction",
    "STEFunction",
    "LearnableMappingFunction",
    "random_mapping",
    "check_arity",
    "LUTLayer",
    "ConvLUT",
    "OrPool",
    "GroupSum",
    "LearnableGroupSum",
    "LUTNet",
    "dwn_mlp",
    "clgn_net",
    "lut_training_cost",
    "fit_lut_model",
    "fit_hierarchical",
    "evaluate",
    "BitNetwork",
    "compile_bits",
    "resource_counts",
    "load_digits_bits",
    "load_npz_bits",
    "KINDS",
    "build_digits_model",
    "run_digits",
    "SmallCNN",
]

#: Largest number of bytes a LUT layer may allocate for its tables and EFD tables
#: (``num_luts * 2**n * (n + 1)`` float32 values); beyond this :func:`check_arity` raises.
MAX_LUT_BYTES: int = 1 << 30


# --------------------------------------------------------------------------------------
# Thermometer encoding
# --------------------------------------------------------------------------------------
class ThermometerEncoder:
    """Thermometer encoding of real features into ``num_bits`` monotone bits.

    Bit ``i`` of feature ``f`` is :math:`\\mathbb 1[x_f > t_{f,i}]` with thresholds
    :math:`t_{f,1}\\le\\dots\\le t_{f,k}`, so the number of ones grows with ``x_f``
    (DWN, Sec. 3, ``torch_dwn.binarization``).

    Parameters
    ----------
    num_bits : int
        Bits per feature, ``k >= 1``.
    method : {"uniform", "distributive"}
        ``"uniform"``: :math:`t_i = \\min + i(\\max-\\min)/(k+1)` (DWN ``Thermometer``);
        ``"distributive"``: :math:`t_i` = the empirical ``i/(k+1)`` quantile
        (DWN ``DistributiveThermometer``).
    feature_wise : bool
        Thresholds per feature (``True``) or one set shared by all features (``False``,
        the natural choice for images whose pixels share a scale).
    """

    METHODS = ("uniform", "distributive")

    def __init__(self, num_bits: int = 3, method: str = "uniform", feature_wise: bool = False) -> None:
        if isinstance(num_bits, bool) or not isinstance(num_bits, (int, np.integer)) or num_bits < 1:
            raise ValueError(f"num_bits={num_bits!r} is not valid; use an integer >= 1")
        if method not in self.METHODS:
            raise ValueError(f"method={method!r} is not valid; use one of {self.METHODS}")
        self.num_bits = int(num_bits)
        self.method = method
        self.feature_wise = bool(feature_wise)

    def fit(self, X: np.ndarray) -> ThermometerEncoder:
        """Learn the thresholds from ``X`` of shape ``(n_samples, n_features)``; returns ``self``."""
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[0] < 1:
            raise ValueError(f"X must have shape (n_samples, n_features) with n_samples >= 1, got {X.shape}")
        k = self.num_bits
        data = X if self.feature_wise else X.reshape(-1, 1)
        if self.method == "uniform":
            lo, hi = data.min(axis=0), data.max(axis=0)  # (F,)
            steps = np.arange(1, k + 1) / (k + 1)  # (k,)
            thr = lo[:, None] + steps[None, :] * (hi - lo)[:, None]  # (F, k)
        else:
            srt = np.sort(data, axis=0)  # (N, F)
            idx = np.array([int(srt.shape[0] * i / (k + 1)) for i in range(1, k + 1)])
            thr = srt[idx].T  # (F, k)
        self.thresholds_ = thr if self.feature_wise else np.broadcast_to(thr, (X.shape[1], k)).copy()
        self.n_features_in_ = X.shape[1]
        return self

    def transform(self, X: np.ndarray) -> np.ndarray:
        """Bits of shape ``(n_samples, n_features, num_bits)``, dtype ``uint8``."""
        if not hasattr(self, "thresholds_"):
            raise RuntimeError("ThermometerEncoder is not fitted; call fit(X) first")
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != self.n_features_in_:
            raise ValueError(f"X must have shape (n_samples, {self.n_features_in_}), got {X.shape}")
        return (X[:, :, None] > self.thresholds_[None, :, :]).astype(np.uint8)

    def fit_transform(self, X: np.ndarray) -> np.ndarray:
        return self.fit(X).transform(X)


# --------------------------------------------------------------------------------------
# LUT lookup and the EFD gradient
# --------------------------------------------------------------------------------------
def lut_addresses(bits: torch.Tensor) -> torch.Tensor:
    """Table address of each LUT: :math:`a_j = \\sum_{l=0}^{n-1} \\mathbb 1[x_{m(j,l)} > 0]\\,2^l`.

    Parameters
    ----------
    bits : Tensor, shape (B, M, n)
        The LUT inputs, already gathered through the mapping.

    Returns
    -------
    Tensor of int64, shape (B, M)
    """
    n = bits.shape[-1]
    weights = 2.0 ** torch.arange(n, device=bits.device, dtype=torch.float64)  # (n,)
    return ((bits > 0).to(torch.float64) @ weights).to(torch.int64)  # (B, M), exact for n < 53


@functools.lru_cache(maxsize=32)
def _efd_index(n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Index tables for arity ``n``: ``hi``/``lo`` (n, 2**(n-1)) and ``compress`` (n, 2**n).

    ``hi[l, c]`` (``lo[l, c]``) is the address whose bits other than ``l`` spell ``c`` and whose
    bit ``l`` is 1 (0); ``compress[l, a]`` drops bit ``l`` from address ``a``.
    """
    c = torch.arange(2 ** (n - 1), dtype=torch.int64)  # (2**(n-1),)
    a = torch.arange(2**n, dtype=torch.int64)  # (2**n,)
    hi, lo, comp = [], [], []
    for l in range(n):
        low, high = c & ((1 << l) - 1), (c >> l) << (l + 1)
        lo.append(high | low)
        hi.append(high | low | (1 << l))
        comp.append((a & ((1 << l) - 1)) | ((a >> (l + 1)) << l))
    return torch.stack(hi), torch.stack(lo), torch.stack(comp)


@functools.lru_cache(maxsize=32)
def _efd_smoother(n: int, beta: float) -> torch.Tensor:
    """:math:`S=\\bigotimes^{n-1}\\begin{pmatrix}1&\\beta\\\\\\beta&1\\end{pmatrix}`, i.e. :math:`S_{c,c'}=\\beta^{H(c,c')}`."""
    c = torch.arange(2 ** (n - 1))
    x = c[:, None] ^ c[None, :]
    ham = torch.zeros_like(x)
    for b in range(max(n - 1, 0)):
        ham += (x >> b) & 1
    return torch.as_tensor(beta, dtype=torch.float32) ** ham.float()  # (2**(n-1), 2**(n-1))


def efd_compressed_tables(luts: torch.Tensor, alpha: float, beta: float) -> torch.Tensor:
    """EFD input-gradient tables indexed by the address *without* bit ``l``: shape (M, n, 2**(n-1)).

    :math:`\\tilde T_{j,l,c} = \\alpha\\sum_{c'} \\beta^{H(c,c')}\\,(L_j[c'|_{l=1}] - L_j[c'|_{l=0}])`;
    see :func:`efd_input_tables`.
    """
    M, size = luts.shape
    n = int(round(math.log2(size)))
    if 2**n != size:
        raise ValueError(f"luts must have 2**n columns, got {size}")
    hi, lo, _ = _efd_index(n)
    diff = luts[:, hi] - luts[:, lo]  # (M, n, 2**(n-1)) finite differences along bit l
    return alpha * diff @ _efd_smoother(n, float(beta)).to(luts.dtype)  # S is symmetric


def efd_input_tables(luts: torch.Tensor, alpha: float, beta: float) -> torch.Tensor:
    """EFD input-gradient tables :math:`T_{j,l,a}=\\partial y_j/\\partial x_{m(j,l)}` at address ``a``.

    DWN (Bacellar et al., 2024, Eq. 5) defines

    .. math::
        T_{j,l,a} = \\sum_{k=0}^{2^n-1} L_j[k]\\,\\alpha\\,\\beta^{H(a\\setminus l,\\,k\\setminus l)}
        \\,(2\\,\\mathrm{bit}_l(k) - 1),

    with :math:`H(\\cdot\\setminus l, \\cdot\\setminus l)` the Hamming distance that ignores bit
    ``l``. Grouping the terms with the same bits other than ``l`` gives the finite
    difference of the table along bit ``l``, :math:`L[k|_{l=1}] - L[k|_{l=0}]`, smoothed over
    the other bits by :math:`\\beta^{H}` (a :math:`2^{n-1}\\times2^{n-1}` matrix, the
    Kronecker power of :math:`\\begin{pmatrix}1&\\beta\\\\\\beta&1\\end{pmatrix}`), so the cost is
    :math:`O(M n 4^{n-1})` multiply-adds in one batched matmul. With :math:`\\beta=0`,
    :math:`\\alpha=1` it is the exact finite difference :math:`L[a|_{l=1}] - L[a|_{l=0}]`.

    Parameters
    ----------
    luts : Tensor, shape (M, 2**n)
    alpha, beta : float
        EFD constants; DWN's defaults are :math:`\\alpha = 0.5\\cdot0.75^{n-1}`,
        :math:`\\beta = 0.25/0.75`.

    Returns
    -------
    Tensor, shape (M, n, 2**n)
        ``T[j, l, a]``; it does not depend on bit ``l`` of ``a``.
    """
    comp = efd_compressed_tables(luts, alpha, beta)  # (M, n, 2**(n-1))
    n = comp.shape[1]
    _, _, compress = _efd_index(n)
    return torch.gather(comp, 2, compress[None].expand(comp.shape[0], -1, -1))  # (M, n, 2**n)


def efd_input_tables_bruteforce(luts: np.ndarray, alpha: float, beta: float) -> np.ndarray:
    """The EFD sum of :func:`efd_input_tables` evaluated term by term (reference for tests)."""
    luts = np.asarray(luts, dtype=np.float64)
    M, size = luts.shape
    n = int(round(math.log2(size)))
    k = np.arange(size)
    out = np.zeros((M, n, size))
    for l in range(n):
        mask = ~(1 << l)
        sign = 2.0 * ((k >> l) & 1) - 1.0  # (2**n,)
        for a in range(size):
            ham = np.array([bin((a & mask) ^ (kk & mask)).count("1") for kk in k])
            out[:, l, a] = (luts * (alpha * beta**ham * sign)[None, :]).sum(1)
    return out


class EFDFunction(torch.autograd.Function):
    """LUT lookup :math:`y_j = L_j[a_j]` with DWN's EFD backward pass.

    Forward: ``x`` (B, I), ``mapping`` (M, n) int64, ``luts`` (M, 2**n) -> ``y`` (B, M).
    Backward: :math:`\\partial y_j/\\partial L_j[k] = \\mathbb 1[k=a_j]` (scatter-add over the
    batch) and :math:`\\partial y_j/\\partial x_{m(j,l)} = T_{j,l,a_j}` from
    :func:`efd_input_tables`, scatter-added into the input positions.
    """

    @staticmethod
    def forward(ctx, x, mapping, luts, alpha: float, beta: float):  # type: ignore[override]
        M, n = mapping.shape
        gathered = torch.index_select(x, 1, mapping.reshape(-1)).view(x.shape[0], M, n)  # (B, M, n)
        addr = lut_addresses(gathered)  # (B, M)
        flat = addr + torch.arange(M, device=luts.device)[None, :] * luts.shape[1]  # (B, M) into luts.view(-1)
        y = torch.take(luts, flat)  # (B, M)
        ctx.save_for_backward(mapping, luts, addr)
        ctx.alpha, ctx.beta, ctx.in_features = float(alpha), float(beta), x.shape[1]
        return y

    @staticmethod
    def backward(ctx, grad_y):  # type: ignore[override]
        mapping, luts, addr = ctx.saved_tensors
        B, M = addr.shape
        n = mapping.shape[1]
        grad_x = grad_luts = None
        if ctx.needs_input_grad[2]:
            flat = (addr + torch.arange(M, device=addr.device)[None, :] * luts.shape[1]).reshape(-1)  # (B*M,)
            grad_luts = torch.zeros(luts.numel(), dtype=grad_y.dtype, device=grad_y.device)
            grad_luts.index_add_(0, flat, grad_y.reshape(-1))
            grad_luts = grad_luts.view_as(luts)
        if ctx.needs_input_grad[0]:
            Tc = efd_compressed_tables(luts.detach(), ctx.alpha, ctx.beta)  # (M, n, 2**(n-1))
            _, _, compress = _efd_index(n)
            caddr = torch.index_select(compress.T.contiguous(), 0, addr.reshape(-1)).view(B, M, n)  # without bit l
            flat_c = (torch.arange(M)[None, :, None] * n + torch.arange(n)[None, None, :]) * Tc.shape[2] + caddr
            dy_dx = torch.take(Tc, flat_c)  # (B, M, n)
            contrib = (dy_dx * grad_y[:, :, None]).reshape(B, M * n)  # (B, M*n)
            grad_x = torch.zeros(B, ctx.in_features, dtype=grad_y.dtype, device=grad_y.device)
            grad_x.index_add_(1, mapping.reshape(-1), contrib)
        return grad_x, None, grad_luts, None, None


class STEFunction(torch.autograd.Function):
    """Straight-through binarisation: forward :math:`\\mathbb 1[y>0]`, backward identity (DWN)."""

    @staticmethod
    def forward(ctx, y):  # type: ignore[override]
        return (y > 0).to(y.dtype)

    @staticmethod
    def backward(ctx, g):  # type: ignore[override]
        return g


class LearnableMappingFunction(torch.autograd.Function):
    """DWN's learnable mapping: forward picks :math:`x_{\\arg\\max_i W_{i,s}}` for every slot ``s``.

    Backward (DWN, Sec. 3.3): :math:`\\nabla_W = (2x-1)^\\top g` and
    :math:`\\nabla_x = g\\,\\mathrm{softmax}(W/\\tau, \\text{dim}=0)^\\top`.
    Shapes: ``x`` (B, I), ``W`` (I, S) -> (B, S).
    """

    @staticmethod
    def forward(ctx, x, weights, tau: float):  # type: ignore[override]
        ctx.save_for_backward(x, weights)
        ctx.tau = float(tau)
        return torch.index_select(x, 1, weights.argmax(dim=0))  # (B, S)

    @staticmethod
    def backward(ctx, g):  # type: ignore[override]
        x, weights = ctx.saved_tensors
        grad_w = (2 * x - 1).T @ g  # (I, S)
        grad_x = g @ torch.softmax(weights / ctx.tau, dim=0).T  # (B, I)
        return grad_x, grad_w, None


def random_mapping(in_features: int, n: int, num_luts: int, generator: torch.Generator) -> torch.Tensor:
    """DWN's ``random`` mapping: concatenated random permutations of the inputs, cut to (M, n).

    Every input feeds :math:`\\lfloor Mn/I \\rfloor` or :math:`\\lceil Mn/I \\rceil` slots.
    """
    reps = -(-num_luts * n // in_features)
    perm = torch.cat([torch.randperm(in_features, generator=generator) for _ in range(reps)])
    return perm[: num_luts * n].reshape(num_luts, n).to(torch.int64)


def check_arity(n: int, num_luts: int, *, max_bytes: int = MAX_LUT_BYTES) -> int:
    """Validate a LUT arity ``n`` for ``num_luts`` tables; return ``n``.

    Training stores the tables and the EFD tables, ``num_luts * 2**n * (n + 1)``
    float32 values. A larger request raises ``ValueError`` naming the largest ``n`` that
    fits in ``max_bytes``.
    """
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


# --------------------------------------------------------------------------------------
# Layers
# --------------------------------------------------------------------------------------
class LUTLayer(nn.Module):
    """A layer of ``out_features`` LUTs with ``n`` inputs each (DWN ``LUTLayer``).

    Forward: map inputs (random fixed wiring or DWN's learnable mapping), look up
    :math:`y_j = L_j[a_j]` with the EFD backward pass, then binarise with the STE.
    Tables start from :math:`U(-1, 1)` and are clamped to :math:`[-1, 1]` before every
    training forward.

    Parameters
    ----------
    in_features, out_features : int
    n : int
        LUT arity (inputs per LUT); validated by :func:`check_arity`.
    mapping : {"random", "learnable"} or Tensor of shape (out_features, n)
    alpha, beta : float, optional
        EFD constants; default :math:`0.5\\cdot0.75^{n-1}` and :math:`1/3`.
    tau : float
        Temperature of the learnable mapping's backward softmax (DWN: 0.001).
    random_state : int
        Seed of the tables, the random mapping and the learnable-mapping weights.
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
        random_state: int = 0,
    ) -> None:
        super().__init__()
        for name, v in (("in_features", in_features), ("out_features", out_features)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise ValueError(f"{name}={v!r} is not valid; use an integer >= 1")
        check_arity(n, out_features)
        if n > in_features:
            raise ValueError(f"LUT arity n={n} exceeds in_features={in_features}; use n <= in_features")
        self.in_features, self.out_features, self.n = int(in_features), int(out_features), int(n)
        self.alpha = 0.5 * 0.75 ** (n - 1) if alpha is None else float(alpha)
        self.beta = 0.25 / 0.75 if beta is None else float(beta)
        self.ste, self.clamp, self.tau = bool(ste), bool(clamp), float(tau)
        gen = torch.Generator().manual_seed(int(random_state))
        self.luts = nn.Parameter(torch.rand(out_features, 2**n, generator=gen) * 2 - 1)  # (M, 2**n)
        if isinstance(mapping, torch.Tensor):
            if mapping.shape != (out_features, n):
                raise ValueError(f"mapping tensor must have shape ({out_features}, {n}), got {tuple(mapping.shape)}")
            if mapping.min() < 0 or mapping.max() >= in_features:
                raise ValueError(f"mapping indices must lie in [0, {in_features}), got {int(mapping.min())}..{int(mapping.max())}")
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
        """The input index of every LUT slot, shape (M, n) (argmax of the learnable weights)."""
        if self.mapping_kind == "learnable":
            return self.map_weights.detach().argmax(dim=0).reshape(self.out_features, self.n).numpy().astype(np.int64)
        return self.mapping.numpy().astype(np.int64)

    def hard_tables(self) -> np.ndarray:
        """The deployed truth tables :math:`\\mathbb 1[L_j[k] > 0]`, shape (M, 2**n), bool."""
        return (self.luts.detach() > 0).numpy()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.ndim != 2 or x.shape[1] != self.in_features:
            raise ValueError(f"LUTLayer expects input of shape (batch, {self.in_features}), got {tuple(x.shape)}")
        if self.training and self.clamp:
            with torch.no_grad():
                self.luts.clamp_(-1, 1)
        if self.mapping_kind == "learnable":
            x = LearnableMappingFunction.apply(x, self.map_weights, self.tau)  # (B, M*n)
        y = EFDFunction.apply(x, self.mapping, self.luts, self.alpha, self.beta)  # (B, M)
        return STEFunction.apply(y) if self.ste else y

    def extra_repr(self) -> str:
        return f"{self.in_features} -> {self.out_features}, n={self.n}, mapping={self.mapping_kind}"


class ConvLUT(nn.Module):
    """Convolutional LUT layer: one table per output channel, shared by every position.

    Each output channel ``o`` owns a table :math:`L_o\\in[-1,1]^{2^n}` and a wiring of
    its ``n`` inputs into the :math:`C_{in}\\times k\\times k` receptive field; the same
    table and relative wiring are applied at every position (stride ``stride``), as a
    convolution shares its kernel. Implemented as ``unfold`` -> :class:`LUTLayer` on the
    (B*P, C_in*k*k) patch matrix, so the EFD gradients of all positions add up in the
    shared table. Reconstruction of CLGN's convolutional LUT layer (abstract only).

    Parameters
    ----------
    in_channels, out_channels, kernel_size, stride, padding : int
    n : int
        LUT arity, ``n <= in_channels * kernel_size**2``.
    mapping : {"random", "learnable"}
        ``"random"`` draws ``n`` distinct field positions per channel.
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
        random_state: int = 0,
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
        gen = torch.Generator().manual_seed(int(random_state) + 7919)
        fixed = None
        if mapping == "random":  # n distinct field positions per channel
            fixed = torch.stack([torch.randperm(field_size, generator=gen)[:n] for _ in range(out_channels)])
        self.lut = LUTLayer(field_size, out_channels, n, fixed if fixed is not None else "learnable", tau=tau,
                            random_state=random_state)

    def output_hw(self, h: int, w: int) -> tuple[int, int]:
        k, s, p = self.kernel_size, self.stride, self.padding
        ho, wo = (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
        if ho < 1 or wo < 1:
            raise ValueError(f"input {h}x{w} is smaller than the kernel {k}x{k} (padding {p})")
        return ho, wo

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.ndim != 4 or x.shape[1] != self.in_channels:
            raise ValueError(f"ConvLUT expects input of shape (batch, {self.in_channels}, H, W), got {tuple(x.shape)}")
        B, _, H, W = x.shape
        ho, wo = self.output_hw(H, W)
        patches = F.unfold(x, self.kernel_size, padding=self.padding, stride=self.stride)  # (B, C*k*k, P)
        rows = patches.transpose(1, 2).reshape(B * ho * wo, -1)  # (B*P, C*k*k)
        y = self.lut(rows)  # (B*P, C_out)
        return y.reshape(B, ho * wo, self.out_channels).transpose(1, 2).reshape(B, self.out_channels, ho, wo)

    def extra_repr(self) -> str:
        return (f"{self.in_channels} -> {self.out_channels}, k={self.kernel_size}, stride={self.stride}, "
                f"padding={self.padding}, n={self.n}, mapping={self.lut.mapping_kind}")


class OrPool(nn.Module):
    """Binary OR pooling over ``k x k`` windows (max-pool on {0, 1}; one k*k-input OR gate)."""

    def __init__(self, kernel_size: int = 2) -> None:
        super().__init__()
        if isinstance(kernel_size, bool) or not isinstance(kernel_size, (int, np.integer)) or kernel_size < 1:
            raise ValueError(f"kernel_size={kernel_size!r} is not valid; use an integer >= 1")
        self.kernel_size = int(kernel_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.ndim != 4:
            raise ValueError(f"OrPool expects input of shape (batch, C, H, W), got {tuple(x.shape)}")
        return F.max_pool2d(x, self.kernel_size)


def _check_groups(k: int, in_features: int) -> None:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k={k!r} (number of classes) is not valid; use an integer >= 1")
    if isinstance(in_features, bool) or not isinstance(in_features, (int, np.integer)) or in_features < k:
        raise ValueError(f"in_features={in_features!r} must be an integer >= k={k}")


class GroupSum(nn.Module):
    """DWN's GroupSum: class ``c`` scores the popcount of its contiguous group, divided by tau.

    :math:`z_c = \\tfrac1\\tau\\sum_{j\\in G_c} y_j` with :math:`G_c` the ``c``-th of ``k``
    contiguous blocks of :math:`\\lceil M/k \\rceil` outputs (the last block is zero-padded,
    as in ``torch_dwn.utils.pad_if_needed``).
    """

    def __init__(self, k: int, in_features: int, tau: float = 1.0) -> None:
        super().__init__()
        _check_groups(k, in_features)
        if not tau > 0:
            raise ValueError(f"tau={tau!r} must be > 0")
        self.k, self.in_features, self.tau = int(k), int(in_features), float(tau)

    def assignment(self) -> np.ndarray:
        """The class of every input bit, shape (M,)."""
        return np.arange(self.in_features) // -(-self.in_features // self.k)

    def counts(self, y: torch.Tensor) -> torch.Tensor:
        """Per-class popcounts, shape (B, k)."""
        if y.ndim != 2 or y.shape[1] != self.in_features:
            raise ValueError(f"GroupSum expects input of shape (batch, {self.in_features}), got {tuple(y.shape)}")
        onehot = F.one_hot(torch.as_tensor(self.assignment()), self.k).to(y.dtype)  # (M, k)
        return y @ onehot  # (B, k)

    def forward(self, y: torch.Tensor) -> torch.Tensor:
        return self.counts(y) / self.tau


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
    Reconstruction of CLGN's learnable GroupSum (abstract only).
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
        random_state: int = 0,
    ) -> None:
        super().__init__()
        _check_groups(k, in_features)
        if not tau > 0 or not temperature > 0:
            raise ValueError(f"tau={tau!r} and temperature={temperature!r} must be > 0")
        self.k, self.in_features, self.tau = int(k), int(in_features), float(tau)
        self.temperature, self.hard = float(temperature), bool(hard)
        gen = torch.Generator().manual_seed(int(random_state) + 104729)
        start = GroupSum(k, in_features).assignment()
        logits = init_scale * F.one_hot(torch.as_tensor(start), k).T.float()  # (k, M)
        self.logits = nn.Parameter(logits + 0.01 * torch.rand(k, in_features, generator=gen))

    def assignment(self) -> np.ndarray:
        """The hard class of every input bit, shape (M,)."""
        return self.logits.detach().argmax(dim=0).numpy()

    def _hard(self) -> torch.Tensor:
        return F.one_hot(self.logits.argmax(dim=0), self.k).T.to(self.logits.dtype)  # (k, M), exact 0/1

    def counts(self, y: torch.Tensor) -> torch.Tensor:
        """Per-class vote counts, shape (B, k): exact popcounts in the forward pass."""
        if y.ndim != 2 or y.shape[1] != self.in_features:
            raise ValueError(f"LearnableGroupSum expects input of shape (batch, {self.in_features}), got {tuple(y.shape)}")
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
        return self.counts(y) / self.tau


class LUTNet(nn.Module):
    """A weightless network: ``features`` (conv-LUT / pool blocks) -> flatten -> ``classifier`` (LUT layers) -> ``head``.

    Parameters
    ----------
    input_shape : tuple
        ``(C, H, W)`` for a network with convolutional features, ``(I,)`` otherwise.
    features : sequence of modules
        :class:`ConvLUT` and :class:`OrPool` blocks (may be empty).
    classifier : sequence of :class:`LUTLayer`
    head : :class:`GroupSum` or :class:`LearnableGroupSum`
    """

    def __init__(self, input_shape: Sequence[int], features: Sequence[nn.Module], classifier: Sequence[nn.Module],
                 head: nn.Module) -> None:
        super().__init__()
        self.input_shape = tuple(int(s) for s in input_shape)
        self.features = nn.Sequential(*features)
        self.classifier = nn.Sequential(*classifier)
        self.head = head

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        """Flattened output bits of the feature stage, shape (B, F)."""
        if tuple(x.shape[1:]) != self.input_shape:
            raise ValueError(f"LUTNet expects input of shape (batch, {', '.join(map(str, self.input_shape))}), "
                             f"got {tuple(x.shape)}")
        return self.features(x).reshape(x.shape[0], -1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.classifier(self.embed(x)))

    def counts(self, x: torch.Tensor) -> torch.Tensor:
        """Per-class popcounts of the hard network (eval mode), shape (B, k)."""
        return self.head.counts(self.classifier(self.embed(x)))


def _tau_for(group_size: float) -> float:
    # DWN's MNIST recipe: groups of 100 bits with tau = 1/0.3, i.e. logits in [0, 30].
    return max(group_size, 1.0) / 30.0


def dwn_mlp(in_features: int, hidden: Sequence[int], k: int = 10, *, n: int = 6, learnable_first: bool = True,
            random_state: int = 0) -> LUTNet:
    """DWN-style LUT MLP: LUT layers of widths ``hidden`` (first one learnable-mapped) -> GroupSum(k).

    DWN's MNIST network is ``dwn_mlp(784*3, [2000, 1000])`` with tau = 1/0.3; here tau
    keeps DWN's logit range, :math:`\\tau = (M/k)/30`.
    """
    if not hidden:
        raise ValueError("hidden must name at least one LUT layer width")
    layers, width = [], int(in_features)
    for i, h in enumerate(hidden):
        mapping = "learnable" if (i == 0 and learnable_first) else "random"
        layers.append(LUTLayer(width, int(h), n, mapping, random_state=random_state + 31 * i))
        width = int(h)
    head = GroupSum(k, width, tau=_tau_for(width / k))
    return LUTNet((int(in_features),), [], layers, head)


def clgn_net(input_shape: Sequence[int], channels: int, hidden: Sequence[int], k: int = 10, *, n: int = 6,
             kernel_size: int = 3, padding: int = 1, pool: int = 1, conv_mapping: str = "learnable",
             learnable_groupsum: bool = True, random_state: int = 0) -> LUTNet:
    """CLGN-style network: ConvLUT (shared tables) [-> OrPool] -> LUT layers -> (learnable) GroupSum.

    The dense LUT layer after the convolution uses DWN's learnable mapping.
    """
    C, H, W = (int(s) for s in input_shape)
    conv = ConvLUT(C, channels, kernel_size, padding=padding, n=n, mapping=conv_mapping, random_state=random_state)
    ho, wo = conv.output_hw(H, W)
    feats: list[nn.Module] = [conv]
    if pool > 1:
        feats.append(OrPool(pool))
        ho, wo = ho // pool, wo // pool
    width = channels * ho * wo
    layers = []
    for i, h in enumerate(hidden):
        layers.append(LUTLayer(width, int(h), n, "learnable" if i == 0 else "random", random_state=random_state + 31 * (i + 1)))
        width = int(h)
    tau = _tau_for(width / k)
    head = (LearnableGroupSum(k, width, tau, random_state=random_state) if learnable_groupsum
            else GroupSum(k, width, tau))
    return LUTNet((C, H, W), feats, layers, head)


# --------------------------------------------------------------------------------------
# Training
# --------------------------------------------------------------------------------------
def _unrolled_luts(module: nn.Module, input_shape: Sequence[int]) -> tuple[int, tuple[int, ...]]:
    """(LUT evaluations per sample, output shape) of one block."""
    if isinstance(module, ConvLUT):
        ho, wo = module.output_hw(input_shape[1], input_shape[2])
        return module.out_channels * ho * wo, (module.out_channels, ho, wo)
    if isinstance(module, OrPool):
        c, h, w = input_shape
        return 0, (c, h // module.kernel_size, w // module.kernel_size)
    if isinstance(module, LUTLayer):
        return module.out_features, (module.out_features,)
    raise TypeError(f"unknown block {type(module).__name__}")


def lut_training_cost(model: LUTNet, *, frozen_features: bool = False) -> int:
    """Training cost of one sample in LUT evaluations: 1 per forward lookup, +2 per trained lookup.

    A proxy for training compute that does not depend on the machine: every LUT evaluated
    in the forward pass costs 1, and every LUT whose table is trained costs 2 more for the
    backward pass (the table gradient and the EFD input gradient), as a dense layer's
    backward costs twice its forward. With ``frozen_features`` the feature stage is
    not run at all (its outputs are cached once, see :func:`fit_hierarchical`).
    """
    shape: tuple[int, ...] = model.input_shape
    cost = 0
    for block in model.features:
        ev, shape = _unrolled_luts(block, shape)
        cost += 0 if frozen_features else 3 * ev
    for block in model.classifier:
        ev, shape = _unrolled_luts(block, shape)
        cost += 3 * ev
    return int(cost)


@torch.no_grad()
def evaluate(model: nn.Module, X: torch.Tensor, y: torch.Tensor, *, batch_size: int = 512) -> float:
    """Accuracy of ``model`` (eval mode, hard forward) on ``(X, y)``."""
    was = model.training
    model.eval()
    pred = torch.cat([model(X[i:i + batch_size]).argmax(1) for i in range(0, len(X), batch_size)])
    model.train(was)
    return float((pred == y).float().mean())


def fit_lut_model(
    model: nn.Module,
    X: torch.Tensor,
    y: torch.Tensor,
    *,
    epochs: int,
    batch_size: int = 32,
    lr: float = 1e-2,
    step_size: int | None = None,
    gamma: float = 0.1,
    X_eval: torch.Tensor | None = None,
    y_eval: torch.Tensor | None = None,
    params: Sequence[nn.Parameter] | None = None,
    cost_per_sample: int = 0,
    random_state: int = 0,
) -> dict[str, list[float]]:
    """Train with DWN's recipe: Adam(lr), cross-entropy on the GroupSum logits, StepLR.

    Returns a history with one entry per epoch: ``loss`` (mean training loss),
    ``acc`` (accuracy on ``X_eval`` if given), ``seconds`` (cumulative wall time) and
    ``cost`` (cumulative LUT evaluations, ``cost_per_sample`` times samples seen).
    """
    if isinstance(epochs, bool) or not isinstance(epochs, (int, np.integer)) or epochs < 0:
        raise ValueError(f"epochs={epochs!r} is not valid; use an integer >= 0")
    if len(X) != len(y):
        raise ValueError(f"X and y disagree in length: {len(X)} vs {len(y)}")
    params = list(model.parameters()) if params is None else list(params)
    opt = torch.optim.Adam(params, lr=lr)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=step_size or max(epochs, 1), gamma=gamma)
    gen = torch.Generator().manual_seed(int(random_state))
    hist: dict[str, list[float]] = {"loss": [], "acc": [], "seconds": [], "cost": []}
    elapsed, cost = 0.0, 0
    model.train()
    for _ in range(int(epochs)):
        t0 = time.perf_counter()
        perm = torch.randperm(len(X), generator=gen)
        total = 0.0
        for i in range(0, len(X), batch_size):
            idx = perm[i:i + batch_size]
            loss = F.cross_entropy(model(X[idx]), y[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            total += float(loss.detach()) * len(idx)
        sched.step()
        elapsed += time.perf_counter() - t0
        cost += cost_per_sample * len(X)
        hist["loss"].append(total / len(X))
        hist["seconds"].append(elapsed)
        hist["cost"].append(float(cost))
        hist["acc"].append(evaluate(model, X_eval, y_eval) if X_eval is not None else float("nan"))
    model.eval()
    return hist


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
    random_state: int = 0,
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
    """
    e1, e2 = (int(e) for e in stage_epochs)
    if e1 < 0 or e2 < 0:
        raise ValueError(f"stage_epochs={stage_epochs!r} must be two integers >= 0")
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
    h1 = fit_lut_model(stage1, X, y, epochs=e1, batch_size=batch_size, lr=lr, cost_per_sample=feat_cost,
                       random_state=random_state)
    t0 = time.perf_counter()
    model.eval()
    for p in model.features.parameters():
        p.requires_grad_(False)
    with torch.no_grad():
        Z = torch.cat([model.embed(X[i:i + 512]) for i in range(0, len(X), 512)])  # (N, F) cached bits
        Z_eval = None if X_eval is None else torch.cat([model.embed(X_eval[i:i + 512]) for i in range(0, len(X_eval), 512)])
    cache_s = time.perf_counter() - t0
    ev_feat = feat_cost // 3
    stage2 = _Stage2(model)
    h2 = fit_lut_model(stage2, Z, y, epochs=e2, batch_size=batch_size, lr=lr, step_size=step_size,
                       cost_per_sample=lut_training_cost(model, frozen_features=True),
                       X_eval=Z_eval, y_eval=y_eval, random_state=random_state + 1)
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


# --------------------------------------------------------------------------------------
# Exact bit-level inference
# --------------------------------------------------------------------------------------
@dataclass
class BitNetwork:
    """A trained LUT network as integer arrays, evaluated with NumPy bit operations only.

    ``ops`` is a list of ``(kind, params)`` with kind in ``{"conv", "pool", "flatten",
    "lut", "groupsum"}``; tables are ``uint8`` truth tables, mappings ``int`` indices.
    :meth:`counts` returns the per-class popcounts, :meth:`predict` their argmax.
    """

    input_shape: tuple[int, ...]
    ops: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    @staticmethod
    def _lookup(bits: np.ndarray, mapping: np.ndarray, tables: np.ndarray) -> np.ndarray:
        # bits (R, I) uint8, mapping (M, n), tables (M, 2**n) uint8 -> (R, M) uint8
        n = mapping.shape[1]
        addr = np.zeros((bits.shape[0], mapping.shape[0]), dtype=np.int64)
        for l in range(n):  # n <= ~10 shifts; vectorised over samples and LUTs
            addr |= bits[:, mapping[:, l]].astype(np.int64) << l
        flat = addr + (np.arange(mapping.shape[0], dtype=np.int64) << n)[None, :]
        return tables.reshape(-1)[flat]

    def layer_outputs(self, bits: np.ndarray) -> list[np.ndarray]:
        """Output bits of every op for input ``bits`` of shape (B, *input_shape)."""
        x = np.asarray(bits)
        if x.shape[1:] != self.input_shape:
            raise ValueError(f"bits must have shape (batch, {', '.join(map(str, self.input_shape))}), got {x.shape}")
        if not np.isin(x, (0, 1)).all():
            raise ValueError("bits must be 0/1")
        x = x.astype(np.uint8)
        outs = []
        for kind, p in self.ops:
            if kind == "conv":
                k, s, pad = p["kernel_size"], p["stride"], p["padding"]
                B, C, H, W = x.shape
                xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
                win = np.lib.stride_tricks.sliding_window_view(xp, (k, k), axis=(2, 3))[:, :, ::s, ::s]  # (B,C,Ho,Wo,k,k)
                Ho, Wo = win.shape[2], win.shape[3]
                rows = win.transpose(0, 2, 3, 1, 4, 5).reshape(B * Ho * Wo, C * k * k)  # unfold's (c, ki, kj) order
                y = self._lookup(rows, p["mapping"], p["tables"])  # (B*P, C_out)
                x = y.reshape(B, Ho, Wo, -1).transpose(0, 3, 1, 2)
            elif kind == "pool":
                k = p["kernel_size"]
                B, C, H, W = x.shape
                x = x[:, :, : H // k * k, : W // k * k].reshape(B, C, H // k, k, W // k, k).max(axis=(3, 5))
            elif kind == "flatten":
                x = x.reshape(x.shape[0], -1)
            elif kind == "lut":
                x = self._lookup(x, p["mapping"], p["tables"])
            elif kind == "groupsum":
                onehot = np.zeros((x.shape[1], p["k"]), dtype=np.int64)
                onehot[np.arange(x.shape[1]), p["assignment"]] = 1
                x = x.astype(np.int64) @ onehot  # (B, k) popcounts
            outs.append(x)
        return outs

    def counts(self, bits: np.ndarray) -> np.ndarray:
        """Per-class popcounts, shape (B, k), int64."""
        return self.layer_outputs(bits)[-1]

    def predict(self, bits: np.ndarray) -> np.ndarray:
        """Predicted class (first maximal popcount), shape (B,)."""
        return self.counts(bits).argmax(axis=1)

    def nbytes(self) -> int:
        """Bytes of the stored arrays as NumPy holds them (uint8 tables, int64 indices)."""
        return int(sum(v.nbytes for _, p in self.ops for v in p.values() if isinstance(v, np.ndarray)))


def compile_bits(model: LUTNet) -> BitNetwork:
    """Harden a trained :class:`LUTNet` into a :class:`BitNetwork` (tables ``1[L > 0]``, argmax mappings)."""
    if not isinstance(model, LUTNet):
        raise TypeError(f"compile_bits expects a LUTNet, got {type(model).__name__}")
    net = BitNetwork(model.input_shape)
    for block in model.features:
        if isinstance(block, ConvLUT):
            net.ops.append(("conv", {"kernel_size": block.kernel_size, "stride": block.stride, "padding": block.padding,
                                     "mapping": block.lut.hard_mapping(),
                                     "tables": block.lut.hard_tables().astype(np.uint8)}))
        elif isinstance(block, OrPool):
            net.ops.append(("pool", {"kernel_size": block.kernel_size}))
        else:
            raise TypeError(f"cannot compile feature block {type(block).__name__}")
    if len(model.input_shape) > 1:
        net.ops.append(("flatten", {}))
    for block in model.classifier:
        if not isinstance(block, LUTLayer):
            raise TypeError(f"cannot compile classifier block {type(block).__name__}")
        net.ops.append(("lut", {"mapping": block.hard_mapping(), "tables": block.hard_tables().astype(np.uint8)}))
    net.ops.append(("groupsum", {"k": model.head.k, "assignment": np.asarray(model.head.assignment(), dtype=np.int64)}))
    return net


# --------------------------------------------------------------------------------------
# Resource counts
# --------------------------------------------------------------------------------------
def _index_bits(fan_in: int) -> int:
    return max(1, math.ceil(math.log2(fan_in))) if fan_in > 1 else 0


def resource_counts(model: LUTNet) -> dict[str, int]:
    """Analytic resource counts of a LUT network.

    Returns
    -------
    dict
        ``distinct_luts``: tables stored (a conv layer stores ``C_out``, time-multiplexed);
        ``table_bits``: :math:`\\sum 2^{n}` over distinct tables;
        ``unrolled_luts``: LUTs when every conv position is its own physical LUT (FPGA);
        ``unrolled_table_bits``: their table bits;
        ``mapping_bits``: :math:`\\lceil\\log_2(\\text{fan-in})\\rceil` bits per LUT input index
        (conv: the receptive field; dense: the layer width);
        ``group_bits``: :math:`\\lceil\\log_2 k\\rceil` per output bit for a learnable
        GroupSum (0 for the fixed contiguous one);
        ``param_bytes``: :math:`\\lceil(\\text{table}+\\text{mapping}+\\text{group bits})/8\\rceil`.
    """
    shape: tuple[int, ...] = model.input_shape
    distinct = bits = unrolled = unrolled_bits = map_bits = 0
    for block in list(model.features) + list(model.classifier):
        ev, new_shape = _unrolled_luts(block, shape)
        if isinstance(block, ConvLUT):
            lut, fan_in, m = block.lut, block.in_channels * block.kernel_size**2, block.out_channels
        elif isinstance(block, LUTLayer):
            lut, fan_in, m = block, block.in_features, block.out_features
        else:
            shape = new_shape
            continue
        distinct += m
        bits += m * 2**lut.n
        unrolled += ev
        unrolled_bits += ev * 2**lut.n
        map_bits += m * lut.n * _index_bits(fan_in)
        shape = new_shape
    group_bits = model.head.in_features * _index_bits(model.head.k) if isinstance(model.head, LearnableGroupSum) else 0
    return {
        "distinct_luts": int(distinct),
        "table_bits": int(bits),
        "unrolled_luts": int(unrolled),
        "unrolled_table_bits": int(unrolled_bits),
        "mapping_bits": int(map_bits),
        "group_bits": int(group_bits),
        "param_bytes": int(-(-(bits + map_bits + group_bits) // 8)),
    }


# --------------------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------------------
def load_digits_bits(num_bits: int = 3, *, method: str = "uniform", test_size: float = 0.2,
                     random_state: int = 0) -> dict[str, Any]:
    """scikit-learn's 8x8 digits, split (stratified) and thermometer-encoded on the training part.

    Returns
    -------
    dict
        ``X_train``/``X_test``: bits as float32 tensors of shape (N, num_bits, 8, 8) (the
        thermometer levels are the channels); ``y_train``/``y_test``: int64 tensors;
        ``raw_train``/``raw_test``: the pixel values (N, 64) scaled to [0, 1];
        ``encoder``: the fitted :class:`ThermometerEncoder`.
    """
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    d = load_digits()
    Xtr, Xte, ytr, yte = train_test_split(d.data, d.target, test_size=test_size, stratify=d.target,
                                          random_state=random_state)
    enc = ThermometerEncoder(num_bits, method=method, feature_wise=False).fit(Xtr)

    def img(X: np.ndarray) -> torch.Tensor:
        b = enc.transform(X)  # (N, 64, bits)
        return torch.from_numpy(b.transpose(0, 2, 1).reshape(len(X), num_bits, 8, 8).astype(np.float32))

    return {
        "X_train": img(Xtr), "X_test": img(Xte),
        "y_train": torch.from_numpy(ytr.astype(np.int64)), "y_test": torch.from_numpy(yte.astype(np.int64)),
        "raw_train": (Xtr / 16.0).astype(np.float32), "raw_test": (Xte / 16.0).astype(np.float32),
        "encoder": enc,
    }


# --------------------------------------------------------------------------------------
# Experiment helpers (digits): model zoo, one run, float baselines
# --------------------------------------------------------------------------------------
#: Model kinds of the digits experiment.
KINDS: tuple[str, ...] = ("dwn", "clgn-fixed", "clgn", "clgn-hier")


def build_digits_model(kind: str, width: int, *, num_bits: int = 3, conv_channels: int = 16,
                       random_state: int = 0) -> LUTNet:
    """The digits models at width ``w``, with equal table bits across kinds.

    ``"dwn"``: DWN MLP 64*b -> w -> w/2 -> GroupSum (table bits :math:`64\\cdot1.5w`).
    ``"clgn-fixed"`` / ``"clgn"`` / ``"clgn-hier"``: ConvLUT(b -> 16, 3x3, pad 1) -> OrPool(2)
    -> LUT(16*16 -> 1.5w - 16) -> GroupSum / learnable GroupSum (same table bits:
    16 conv tables + 1.5w - 16 dense tables of :math:`2^6` bits).
    """
    if kind not in KINDS:
        raise ValueError(f"kind={kind!r} is not valid; use one of {KINDS}")
    w = int(width)
    if w < 2 or 3 * w // 2 - conv_channels < 10:
        raise ValueError(f"width={width!r} is too small; use width >= {2 * (conv_channels + 10) // 3 + 1}")
    if kind == "dwn":
        return dwn_mlp(64 * num_bits, [w, w // 2], random_state=random_state)
    return clgn_net((num_bits, 8, 8), conv_channels, [3 * w // 2 - conv_channels], pool=2,
                    learnable_groupsum=(kind != "clgn-fixed"), random_state=random_state)


def run_digits(kind: str, width: int, data: dict[str, Any], *, epochs: int, batch_size: int = 64,
               lr: float = 1e-2, seed: int = 0) -> dict[str, Any]:
    """Train one digits model and return its accuracy, counts, training cost and history.

    DWN's recipe scaled to ``epochs``: Adam(lr), learning rate x0.1 every
    ``ceil(14/30 * epochs)`` epochs (DWN: every 14 of 30). ``"clgn-hier"`` uses :func:`fit_hierarchical` with
    ``epochs // 3`` feature epochs and the rest for the classifier.
    """
    torch.manual_seed(seed)
    model = build_digits_model(kind, width, num_bits=data["X_train"].shape[1], random_state=seed)
    Xtr, Xte = data["X_train"], data["X_test"]
    if kind == "dwn":
        Xtr, Xte = Xtr.reshape(len(Xtr), -1), Xte.reshape(len(Xte), -1)
    if kind == "clgn-hier":
        e1 = max(1, epochs // 3)
        e2 = epochs - e1
        hist = fit_hierarchical(model, Xtr, data["y_train"], stage_epochs=(e1, e2), batch_size=batch_size, lr=lr,
                                step_size=math.ceil(e2 * 14 / 30) if e2 >= 3 else None, X_eval=Xte, y_eval=data["y_test"], random_state=seed)
    else:
        hist = fit_lut_model(model, Xtr, data["y_train"], epochs=epochs, batch_size=batch_size, lr=lr,
                             step_size=math.ceil(epochs * 14 / 30) if epochs >= 3 else None,
                             X_eval=Xte, y_eval=data["y_test"], cost_per_sample=lut_training_cost(model),
                             random_state=seed)
    return {"kind": kind, "width": int(width), "seed": int(seed), "acc": hist["acc"][-1],
            "train_seconds": hist["seconds"][-1], "train_cost": hist["cost"][-1], "history": hist,
            "model": model, **resource_counts(model)}


class SmallCNN(nn.Module):
    """Float baseline: Conv(1 -> c, 3x3, pad 1) -> ReLU -> MaxPool(2) -> Linear(c*16 -> k) on 8x8 images."""

    def __init__(self, channels: int = 8, k: int = 10) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(1, channels, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                                 nn.Linear(channels * 16, k))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)

    def param_bytes(self) -> int:
        return int(sum(p.numel() for p in self.parameters()) * 4)


def load_npz_bits(path: str, num_bits: int = 3, *, method: str = "uniform") -> dict[str, Any]:
    """Thermometer-encode an image data set stored as ``.npz`` (e.g. Keras' ``mnist.npz``).

    For readers who have the paper-scale data locally (no download happens here). The file
    must hold ``x_train`` (N, H, W) or (N, C, H, W), ``y_train``, ``x_test`` and ``y_test``.
    Thresholds are fitted on ``x_train`` (shared by all pixels). Returns the same keys as
    :func:`load_digits_bits`; with C channels, the bits are laid out as (N, C*num_bits, H, W).
    """
    with np.load(path) as f:
        missing = {"x_train", "y_train", "x_test", "y_test"} - set(f.files)
        if missing:
            raise ValueError(f"{path} lacks {sorted(missing)}; it must hold x_train, y_train, x_test, y_test")
        xtr, ytr, xte, yte = (np.asarray(f[k]) for k in ("x_train", "y_train", "x_test", "y_test"))
    if xtr.ndim == 3:
        xtr, xte = xtr[:, None], xte[:, None]
    if xtr.ndim != 4 or xte.shape[1:] != xtr.shape[1:]:
        raise ValueError(f"x_train/x_test must be (N, H, W) or (N, C, H, W) with equal image shapes, got {xtr.shape}, {xte.shape}")
    n, c, h, w = xtr.shape
    enc = ThermometerEncoder(num_bits, method=method, feature_wise=False).fit(xtr.reshape(n, -1))

    def img(x: np.ndarray) -> torch.Tensor:
        b = enc.transform(x.reshape(len(x), -1)).reshape(len(x), c, h, w, num_bits)  # (N, C, H, W, bits)
        return torch.from_numpy(b.transpose(0, 1, 4, 2, 3).reshape(len(x), c * num_bits, h, w).astype(np.float32))

    scale = float(max(xtr.max(), 1))
    return {
        "X_train": img(xtr), "X_test": img(xte),
        "y_train": torch.from_numpy(ytr.astype(np.int64)), "y_test": torch.from_numpy(yte.astype(np.int64)),
        "raw_train": (xtr.reshape(n, -1) / scale).astype(np.float32),
        "raw_test": (xte.reshape(len(xte), -1) / scale).astype(np.float32),
        "encoder": enc,
    }
