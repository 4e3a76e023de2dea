"""Exact bit-level inference of a trained LUT network with NumPy integers only.

References
----------
A. T. L. Bacellar, Z. Susskind, M. Breternitz Jr., E. John, L. K. John, P. M. V. Lima, F. M. G. França, "Differentiable Weightless Neural Networks", ICML 2024, arXiv:2410.11112; code https://github.com/alanbacellar/DWN
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .clgn import ConvLUT, OrPool
from .layers import LUTLayer, LUTNet

__all__ = ["BitNetwork", "compile_bits"]


@dataclass
class BitNetwork:
    """A trained LUT network as integer arrays, evaluated with NumPy bit operations only.

    ``ops`` is a list of ``(kind, params)`` with kind in ``{"conv", "pool", "flatten",
    "lut", "groupsum"}``; tables are ``uint8`` truth tables, mappings ``int`` indices.
    :meth:`counts` returns the per-class popcounts, :meth:`predict` their argmax.
    Built by :func:`compile_bits`.

    Parameters
    ----------
    input_shape : tuple of int
        Shape of one input without the batch axis.
    ops : list of (str, dict)
        The operations in order.

    Returns
    -------
    BitNetwork

    References
    ----------
    Bacellar et al., "Differentiable Weightless Neural Networks", ICML 2024,
    arXiv:2410.11112; code https://github.com/alanbacellar/DWN. "CLGN: Convolutional
    Learnable-Group Weightless Neural Networks", ICML 2026 (abstract only).
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
        """Output bits of every op for input ``bits`` of shape (B, *input_shape).

        Returns
        -------
        list of numpy.ndarray
            The output of every op, in order (bits as uint8, popcounts as int64).
        """
        if isinstance(bits, (str, bytes)) or bits is None:
            raise TypeError(f"bits must be an array of 0/1, got {type(bits).__name__}")
        x = np.asarray(bits)
        if x.dtype == object or x.dtype.kind not in "biuf":
            raise TypeError(f"bits must be an array of 0/1 numbers, got dtype {x.dtype}")
        if x.ndim < 1 or x.shape[1:] != self.input_shape:
            raise ValueError(f"bits must have shape (batch, {', '.join(map(str, self.input_shape))}), got {x.shape}")
        if x.shape[0] == 0:
            raise ValueError("bits is empty; pass at least one sample")
        if not np.isin(x, (0, 1)).all():
            raise ValueError("bits must be 0/1 (NaN and other values are not bits)")
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
        """Per-class popcounts, shape (B, k), int64.

        Returns
        -------
        numpy.ndarray of int64, shape (B, k)
            Per-class popcounts.
        """
        return self.layer_outputs(bits)[-1]

    def predict(self, bits: np.ndarray) -> np.ndarray:
        """Predicted class (first maximal popcount), shape (B,).

        Returns
        -------
        numpy.ndarray of int64, shape (B,)
            Predicted classes.
        """
        return self.counts(bits).argmax(axis=1)

    def nbytes(self) -> int:
        """Bytes of the stored arrays as NumPy holds them (uint8 tables, int64 indices).

        Returns
        -------
        int
            Bytes of the stored arrays.
        """
        return int(sum(v.nbytes for _, p in self.ops for v in p.values() if isinstance(v, np.ndarray)))


def compile_bits(model: LUTNet) -> BitNetwork:
    """Harden a trained LUT network into a :class:`BitNetwork` (tables ``1[L > 0]``, argmax mappings).

    Parameters
    ----------
    model : LUTNet
        Features of :class:`~icml26.lut.clgn.ConvLUT` / :class:`~icml26.lut.clgn.OrPool`
        blocks, a classifier of :class:`~icml26.lut.layers.LUTLayer`, a GroupSum head.

    Returns
    -------
    BitNetwork
        Gives the same per-class popcounts as ``model.counts`` in eval mode, with NumPy
        integers only.

    References
    ----------
    Bacellar et al., "Differentiable Weightless Neural Networks", ICML 2024,
    arXiv:2410.11112; code https://github.com/alanbacellar/DWN. "CLGN: Convolutional
    Learnable-Group Weightless Neural Networks", ICML 2026 (abstract only).
    """
    if not isinstance(model, LUTNet):
        raise TypeError(f"compile_bits expects a LUTNet, got {type(model).__name__}")
    net = BitNetwork(model.input_shape)
    for block in model.features:
        if isinstance(block, ConvLUT):
            net.ops.append(
                (
                    "conv",
                    {
                        "kernel_size": block.kernel_size,
                        "stride": block.stride,
                        "padding": block.padding,
                        "mapping": block.lut.hard_mapping(),
                        "tables": block.lut.hard_tables().astype(np.uint8),
                    },
                )
            )
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
