"""MOES-Pred (chapter 14): energy-sentinel torsion noise for denoising pre-training of 3-D molecules.

Neither the paper's full text nor its code is public. What this module implements is a
**reconstruction** from the abstract and from Frad, the fractional-denoising method it
builds on (Ni et al., 2024):

* molecules from SMILES, conformers by ETKDG embedding and MMFF94 minimisation (RDKit),
  MMFF94 energies and forces for any geometry;
* three noise schemes on an equilibrium conformer :math:`x_0`: coordinate Gaussian noise
  alone (CGN), Frad's torsion noise on rotatable bonds at one scale for every molecule
  plus CGN, and the *energy sentinel* (our reading of the abstract): per molecule, the
  torsion scale is chosen by bisection so that the median MMFF energy rise of the
  torsion-perturbed conformers equals a target :math:`\\Delta E^*`;
* a small SchNet-like invariant network with an equivariant force head, trained to
  predict the coordinate part of the noise, :math:`\\epsilon = (\\tilde x - x_a)/\\tau`;
  its negative output is a learned force field;
* evaluation: the share of noisy samples far above the minimum in energy, learned
  forces against MMFF forces, and a low-label property fine-tune (a dipole from
  Gasteiger charges).

References
----------
.. [1] Z. Hou et al., "MOES-Pred: Molecular Structural Representation Learning by Adaptive
   Energy-Sentinel Vibration for Generalized Property Prediction", ICML 2026 (full text
   not public; abstract only).
.. [2] Y. Ni et al., "Pre-training with fractional denoising to enhance molecular property
   prediction", Nature Machine Intelligence 2024, arXiv:2407.11086; code
   https://github.com/fengshikun/FradNMI.
.. [3] K. T. Schütt et al., "SchNet: a continuous-filter convolutional neural network for
   modeling quantum interactions", NeurIPS 2017.

The package is split by concern: :mod:`~icml26.moes.molecules` (data, conformers, MMFF94
energies and forces, the dipole label), :mod:`~icml26.moes.noise` (torsion and coordinate
noise, the sentinel, noise schemes), :mod:`~icml26.moes.model` (the network) and
:mod:`~icml26.moes.train` (pre-training, force metrics, fine-tuning). Every public name
is importable from ``icml26.moes``.
"""

from __future__ import annotations

from .model import READOUTS, ForceNet, _graph, _pairs, predict_forces  # noqa: F401  (_graph, _pairs: used by the tests)
from .molecules import (
    DATA_DIR,
    DEBYE_PER_E_ANGSTROM,
    ELEMENTS,
    MOLECULES_FILE,
    MOLECULES_SHA256,
    InvalidSmilesError,
    Molecule,
    ParsedBatch,
    embed_conformers,
    gasteiger_dipole,
    load_molecule_list,
    mmff_energy,
    mmff_forces,
    parse_smiles,
    prepare_molecule,
    prepare_molecules,
)
from .noise import (
    FRAD_TORSION_SCALE,
    FRAD_TORSION_SCALE_DEG,
    SCHEMES,
    NoiseScheme,
    SentinelResult,
    _cross,  # noqa: F401  (used by the tests)
    apply_torsions,
    coordinate_noise,
    high_energy_fraction,
    sentinel_scale,
    torsion_noise,
)
from .train import PretrainResult, finetune_property, force_metrics, predict_property, pretrain_denoise

__all__ = [
    "DATA_DIR",
    "DEBYE_PER_E_ANGSTROM",
    "ELEMENTS",
    "FRAD_TORSION_SCALE",
    "FRAD_TORSION_SCALE_DEG",
    "MOLECULES_FILE",
    "MOLECULES_SHA256",
    "SCHEMES",
    "ForceNet",
    "InvalidSmilesError",
    "Molecule",
    "NoiseScheme",
    "ParsedBatch",
    "PretrainResult",
    "READOUTS",
    "SentinelResult",
    "apply_torsions",
    "coordinate_noise",
    "embed_conformers",
    "finetune_property",
    "force_metrics",
    "gasteiger_dipole",
    "high_energy_fraction",
    "load_molecule_list",
    "mmff_energy",
    "mmff_forces",
    "parse_smiles",
    "predict_forces",
    "predict_property",
    "prepare_molecule",
    "prepare_molecules",
    "pretrain_denoise",
    "sentinel_scale",
    "torsion_noise",
]
