"""Analytic resource counts of a LUT network (tables, wiring, group bits, unrolled LUTs).

References
----------
A. T. L. Bacellar, Z. Susskind, M. Breternitz Jr., E. John, L. K. John, P. M. V. Lima, F. M. G. França, "Differentiable Weightless Neural Networks", ICML 2024, arXiv:2410.11112; code https://github.com/alanbacellar/DWN
CLGN: Convolutional Learnable-Group Weightless Neural Networks, ICML 2026 (abstract only).
"""

from __future__ import annotations

import math

from .clgn import ConvLUT, LearnableGroupSum
from .layers import LUTLayer, LUTNet
from .training import _unrolled_luts

__all__ = ["resource_counts"]


def _index_bits(fan_in: int) -> int:
    return max(1, math.ceil(math.log2(fan_in))) if fan_in > 1 else 0


def resource_counts(model: LUTNet) -> dict[str, int]:
    """Analytic resource counts of a LUT network.

    Parameters
    ----------
    model : LUTNet
        The network (trained or not: the counts depend on the architecture only).

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


    References
    ----------
    Bacellar et al., "Differentiable Weightless Neural Networks", ICML 2024,
    arXiv:2410.11112; code https://github.com/alanbacellar/DWN. "CLGN: Convolutional
    Learnable-Group Weightless Neural Networks", ICML 2026 (abstract only).
    """
    if not isinstance(model, LUTNet):
        raise TypeError(f"resource_counts expects a LUTNet, got {type(model).__name__}")
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
