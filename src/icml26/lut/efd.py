"""LUT lookup and DWN's Extended Finite Difference (EFD) gradient (DWN, exact).

The forward pass of a LUT layer reads a table at the address spelled by its input bits;
the backward pass gives the table a one-hot gradient and the inputs DWN's EFD gradient
(:func:`efd_input_tables`). :class:`STEFunction` binarises with a straight-through
estimator and :class:`LearnableMappingFunction` is DWN's learnable input wiring.

References
----------
A. T. L. Bacellar, Z. Susskind, M. Breternitz Jr., E. John, L. K. John, P. M. V. Lima, F. M. G. França, "Differentiable Weightless Neural Networks", ICML 2024, arXiv:2410.11112; code https://github.com/alanbacellar/DWN
"""

from __future__ import annotations

import functools
import math

import numpy as np
import torch

from ._checks import check_float

__all__ = [
    "lut_addresses",
    "efd_compressed_tables",
    "efd_input_tables",
    "efd_input_tables_bruteforce",
    "EFDFunction",
    "STEFunction",
    "LearnableMappingFunction",
]


def lut_addresses(bits: torch.Tensor) -> torch.Tensor:
    """Table address of each LUT: :math:`a_j = \\sum_{l=0}^{n-1} \\mathbb 1[x_{m(j,l)} > 0]\\,2^l`.

    Parameters
    ----------
    bits : Tensor, shape (B, M, n)
        The LUT inputs, already gathered through the mapping.

    Returns
    -------
    Tensor of int64, shape (B, M)
        The address of every LUT for every sample.

    Raises
    ------
    ValueError
        If ``bits`` is not 3-D, has no input per LUT or more than 52 (the address is
        exact in float64 only below that), or holds NaN.

    References
    ----------
    Bacellar et al., "Differentiable Weightless Neural Networks", ICML 2024,
    arXiv:2410.11112, Sec. 3 and Eq. 5; code https://github.com/alanbacellar/DWN (``torch_dwn``).
    """
    if not isinstance(bits, torch.Tensor):
        raise TypeError(f"bits must be a torch.Tensor, got {type(bits).__name__}")
    if bits.ndim != 3:
        raise ValueError(f"bits must have shape (batch, num_luts, n), got {tuple(bits.shape)}")
    n = bits.shape[-1]
    if not 1 <= n <= 52:
        raise ValueError(f"bits has n={n} inputs per LUT; use 1 <= n <= 52")
    if bits.is_floating_point() and bool(torch.isnan(bits).any()):
        raise ValueError("bits holds NaN; LUT inputs must be numbers (> 0 reads as 1)")
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


def _check_luts(luts: object, alpha: object, beta: object) -> tuple[int, int, float, float]:
    if not isinstance(luts, torch.Tensor):
        raise TypeError(f"luts must be a torch.Tensor, got {type(luts).__name__}")
    if luts.ndim != 2 or luts.shape[0] < 1 or luts.shape[1] < 2:
        raise ValueError(f"luts must have shape (num_luts, 2**n) with num_luts >= 1 and n >= 1, got {tuple(luts.shape)}")
    if not luts.is_floating_point() or not bool(torch.isfinite(luts).all()):
        raise ValueError("luts must be a finite floating-point tensor")
    size = luts.shape[1]
    n = int(round(math.log2(size)))
    if 2**n != size:
        raise ValueError(f"luts must have 2**n columns, got {size}")
    a = check_float("alpha", alpha, lo=0.0, lo_open=True)
    b = check_float("beta", beta, lo=0.0, hi=1.0)
    return luts.shape[0], n, a, b


def efd_compressed_tables(luts: torch.Tensor, alpha: float, beta: float) -> torch.Tensor:
    """EFD input-gradient tables indexed by the address *without* bit ``l``: shape (M, n, 2**(n-1)).

    :math:`\\tilde T_{j,l,c} = \\alpha\\sum_{c'} \\beta^{H(c,c')}\\,(L_j[c'|_{l=1}] - L_j[c'|_{l=0}])`;
    see :func:`efd_input_tables`.

    Parameters
    ----------
    luts : Tensor, shape (M, 2**n)
        The tables (finite floats).
    alpha : float
        EFD scale, > 0.
    beta : float
        EFD decay with Hamming distance, in [0, 1].

    Returns
    -------
    Tensor, shape (M, n, 2**(n-1))
        ``T~[j, l, c]`` with ``c`` the address with bit ``l`` removed.

    References
    ----------
    Bacellar et al., "Differentiable Weightless Neural Networks", ICML 2024,
    arXiv:2410.11112, Sec. 3 and Eq. 5; code https://github.com/alanbacellar/DWN (``torch_dwn``).
    """
    M, n, alpha, beta = _check_luts(luts, alpha, beta)
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
        The tables (finite floats).
    alpha, beta : float
        EFD constants, ``alpha > 0`` and ``0 <= beta <= 1``; DWN's defaults are
        :math:`\\alpha = 0.5\\cdot0.75^{n-1}`, :math:`\\beta = 0.25/0.75`.

    Returns
    -------
    Tensor, shape (M, n, 2**n)
        ``T[j, l, a]``; it does not depend on bit ``l`` of ``a``.

    Raises
    ------
    ValueError
        For tables whose width is not a power of two, non-finite tables, ``alpha <= 0``
        or ``beta`` outside [0, 1].

    References
    ----------
    Bacellar et al., "Differentiable Weightless Neural Networks", ICML 2024,
    arXiv:2410.11112, Sec. 3 and Eq. 5; code https://github.com/alanbacellar/DWN (``torch_dwn``).
    """
    comp = efd_compressed_tables(luts, alpha, beta)  # (M, n, 2**(n-1))
    n = comp.shape[1]
    _, _, compress = _efd_index(n)
    return torch.gather(comp, 2, compress[None].expand(comp.shape[0], -1, -1))  # (M, n, 2**n)


def efd_input_tables_bruteforce(luts: np.ndarray, alpha: float, beta: float) -> np.ndarray:
    """The EFD sum of :func:`efd_input_tables` evaluated term by term (reference for tests).

    Parameters
    ----------
    luts : array_like, shape (M, 2**n)
        The tables.
    alpha, beta : float
        EFD constants as in :func:`efd_input_tables`.

    Returns
    -------
    numpy.ndarray, shape (M, n, 2**n)
        ``T[j, l, a]`` from DWN's Eq. 5, one term at a time (``O(M n 4^n)``).

    References
    ----------
    Bacellar et al., "Differentiable Weightless Neural Networks", ICML 2024,
    arXiv:2410.11112, Sec. 3 and Eq. 5; code https://github.com/alanbacellar/DWN (``torch_dwn``).
    """
    if isinstance(luts, torch.Tensor):
        luts = luts.detach().numpy()
    try:
        arr = np.asarray(luts, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"luts must be an array of numbers, got {type(luts).__name__}") from exc
    M, n, alpha, beta = _check_luts(torch.from_numpy(arr), alpha, beta)
    luts = arr
    size = 2**n
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

    Parameters
    ----------
    x : Tensor, shape (B, I)
        Input bits (any finite values; ``> 0`` reads as 1).
    mapping : Tensor of int, shape (M, n)
        Input index of every LUT slot, in ``[0, I)``.
    luts : Tensor, shape (M, 2**n)
        The tables.
    alpha, beta : float
        EFD constants (``alpha > 0``, ``0 <= beta <= 1``).

    Returns
    -------
    Tensor, shape (B, M)
        ``EFDFunction.apply(x, mapping, luts, alpha, beta)`` gives the table values read.

    References
    ----------
    Bacellar et al., "Differentiable Weightless Neural Networks", ICML 2024,
    arXiv:2410.11112, Sec. 3; code https://github.com/alanbacellar/DWN (``torch_dwn``).
    """

    @staticmethod
    def forward(ctx, x, mapping, luts, alpha: float, beta: float):  # type: ignore[override]
        _check_luts(luts, alpha, beta)
        if not isinstance(x, torch.Tensor) or x.ndim != 2:
            raise ValueError(f"x must be a tensor of shape (batch, in_features), got {getattr(x, 'shape', type(x).__name__)}")
        if x.is_floating_point() and not bool(torch.isfinite(x).all()):
            raise ValueError("x holds NaN or infinite values")
        if (
            not isinstance(mapping, torch.Tensor)
            or mapping.ndim != 2
            or mapping.is_floating_point()
            or mapping.dtype == torch.bool
        ):
            raise ValueError(
                f"mapping must be an integer tensor of shape (num_luts, n), got {getattr(mapping, 'shape', type(mapping).__name__)}"
            )
        if mapping.shape[0] != luts.shape[0] or 2 ** mapping.shape[1] != luts.shape[1]:
            raise ValueError(
                f"mapping {tuple(mapping.shape)} does not fit luts {tuple(luts.shape)}; use (M, n) with luts (M, 2**n)"
            )
        if mapping.numel() and (int(mapping.min()) < 0 or int(mapping.max()) >= x.shape[1]):
            raise ValueError(f"mapping indices must lie in [0, {x.shape[1]}), got {int(mapping.min())}..{int(mapping.max())}")
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
    """Straight-through binarisation: forward :math:`\\mathbb 1[y>0]`, backward identity (DWN).

    Parameters
    ----------
    y : Tensor
        Table values (finite).

    Returns
    -------
    Tensor
        ``STEFunction.apply(y)`` gives :math:`\\mathbb 1[y>0]` in ``y``'s dtype.

    References
    ----------
    Bacellar et al., "Differentiable Weightless Neural Networks", ICML 2024,
    arXiv:2410.11112, Sec. 3; code https://github.com/alanbacellar/DWN (``torch_dwn``).
    """

    @staticmethod
    def forward(ctx, y):  # type: ignore[override]
        if not isinstance(y, torch.Tensor) or not y.is_floating_point():
            raise TypeError(f"STEFunction takes a floating-point tensor, got {type(y).__name__} {getattr(y, 'dtype', '')}")
        if bool(torch.isnan(y).any()):
            raise ValueError("STEFunction input holds NaN")
        return (y > 0).to(y.dtype)

    @staticmethod
    def backward(ctx, g):  # type: ignore[override]
        return g


class LearnableMappingFunction(torch.autograd.Function):
    """DWN's learnable mapping: forward picks :math:`x_{\\arg\\max_i W_{i,s}}` for every slot ``s``.

    Backward (DWN, Sec. 3.3): :math:`\\nabla_W = (2x-1)^\\top g` and
    :math:`\\nabla_x = g\\,\\mathrm{softmax}(W/\\tau, \\text{dim}=0)^\\top`.
    Shapes: ``x`` (B, I), ``W`` (I, S) -> (B, S).

    Parameters
    ----------
    x : Tensor, shape (B, I)
        Input bits.
    weights : Tensor, shape (I, S)
        Mapping weights; slot ``s`` reads input :math:`\\arg\\max_i W_{i,s}`.
    tau : float
        Temperature of the backward softmax (> 0; DWN: 0.001).

    Returns
    -------
    Tensor, shape (B, S)
        ``LearnableMappingFunction.apply(x, weights, tau)`` gives the selected inputs.

    References
    ----------
    Bacellar et al., "Differentiable Weightless Neural Networks", ICML 2024,
    arXiv:2410.11112, Sec. 3; code https://github.com/alanbacellar/DWN (``torch_dwn``).
    """

    @staticmethod
    def forward(ctx, x, weights, tau: float):  # type: ignore[override]
        check_float("tau", tau, lo=0.0, lo_open=True)
        if not isinstance(x, torch.Tensor) or not isinstance(weights, torch.Tensor) or x.ndim != 2 or weights.ndim != 2:
            raise ValueError("x and weights must be 2-D tensors of shapes (B, I) and (I, S)")
        if x.shape[1] != weights.shape[0] or weights.shape[0] == 0:
            raise ValueError(f"x {tuple(x.shape)} and weights {tuple(weights.shape)} disagree; use (B, I) and (I, S) with I >= 1")
        if not bool(torch.isfinite(weights).all()) or (x.is_floating_point() and not bool(torch.isfinite(x).all())):
            raise ValueError("x and weights must be finite")
        ctx.save_for_backward(x, weights)
        ctx.tau = float(tau)
        return torch.index_select(x, 1, weights.argmax(dim=0))  # (B, S)

    @staticmethod
    def backward(ctx, g):  # type: ignore[override]
        x, weights = ctx.saved_tensors
        grad_w = (2 * x - 1).T @ g  # (I, S)
        grad_x = g @ torch.softmax(weights / ctx.tau, dim=0).T  # (B, I)
        return grad_x, grad_w, None
