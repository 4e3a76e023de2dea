"""Weightless (lookup-table) neural networks: DWN's exact building blocks and CLGN's reconstructed additions.

Chapter 08 of the book. The package keeps what follows a published definition apart
from what we reconstructed:

DWN, exact (Bacellar et al., ICML 2024, and its code)
    :mod:`~icml26.lut.encoding` (thermometer encoding), :mod:`~icml26.lut.efd` (LUT
    lookup, the Extended Finite Difference gradient, straight-through binarisation,
    learnable mapping), :mod:`~icml26.lut.layers` (LUT layer, GroupSum, network
    container, LUT MLP), :mod:`~icml26.lut.training` (DWN's training recipe, a
    machine-independent training cost).
CLGN, reconstructed from the abstract (ICML 2026)
    :mod:`~icml26.lut.clgn`: the convolutional LUT layer, OR-pooling, the learnable
    GroupSum and the hierarchical schedule.
Both
    :mod:`~icml26.lut.bits` (exact bit-level inference with NumPy integers),
    :mod:`~icml26.lut.resources` (analytic resource counts) and
    :mod:`~icml26.lut.digits` (the chapter's data and experiment helpers).

Every public name is re-exported here, so ``from icml26 import lut; lut.LUTLayer`` works.

References
----------
A. T. L. Bacellar, Z. Susskind, M. Breternitz Jr., E. John, L. K. John, P. M. V. Lima,
F. M. G. França, "Differentiable Weightless Neural Networks", ICML 2024,
arXiv:2410.11112; code https://github.com/alanbacellar/DWN.
"CLGN: Convolutional Learnable-Group Weightless Neural Networks", ICML 2026 (abstract only).
"""

from __future__ import annotations

from .bits import BitNetwork, compile_bits
from .clgn import ConvLUT, LearnableGroupSum, OrPool, clgn_net, fit_hierarchical
from .digits import (
    KINDS,
    SmallCNN,
    build_digits_model,
    float_baselines,
    load_digits_bits,
    load_npz_bits,
    run_digits,
    run_digits_grid,
)
from .efd import (
    EFDFunction,
    LearnableMappingFunction,
    STEFunction,
    efd_compressed_tables,
    efd_input_tables,
    efd_input_tables_bruteforce,
    lut_addresses,
)
from .encoding import ThermometerEncoder
from .layers import MAX_LUT_BYTES, GroupSum, LUTLayer, LUTNet, check_arity, dwn_mlp, random_mapping
from .resources import resource_counts
from .training import accuracy, fit_lut_model, lut_training_cost

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
    "accuracy",
    "BitNetwork",
    "compile_bits",
    "resource_counts",
    "load_digits_bits",
    "load_npz_bits",
    "KINDS",
    "build_digits_model",
    "run_digits",
    "run_digits_grid",
    "float_baselines",
    "SmallCNN",
]
