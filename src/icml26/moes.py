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
"""

from __future__ import annotations

import functools
import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from rdkit import Chem, RDLogger
from rdkit.Chem import AllChem, Lipinski, rdPartialCharges
from rdkit.Chem import rdForceFieldHelpers as _FH

from ._common import RandomState, check_int, check_random_state, check_real, progress, seed_from

DATA_DIR = Path(__file__).resolve().parents[2] / "data" / "14-moes-pred"
MOLECULES_FILE = "molecules.tsv"
MOLECULES_SHA256 = "bbcd19c8a583da600af55629d3f6e09b7da7b57dab9e98bfdd40c3ed736b288b"
ELEMENTS: tuple[int, ...] = (1, 6, 7, 8, 9, 15, 16, 17, 35)
"""Atomic numbers the network embeds (H, C, N, O, F, P, S, Cl, Br)."""
DEBYE_PER_E_ANGSTROM = 4.80320
FRAD_TORSION_SCALE_DEG: float = 2.0
"""Frad's default torsion noise scale, in degrees (FradNMI ``torsion_utils.py`` and ``pcqm4mv2.py`` draw it in degrees)."""
FRAD_TORSION_SCALE: float = math.radians(FRAD_TORSION_SCALE_DEG)
"""The same scale in radians (about 0.035 rad), the unit :func:`torsion_noise` takes."""
SCHEMES: tuple[str, ...] = ("coord", "frad", "sentinel")
"""The noise schemes: coordinate noise only, Frad (one torsion scale), energy sentinel (per-molecule scale)."""

_ROTATABLE = Lipinski.RotatableBondSmarts  # matched on the heavy-atom graph (CH3-C would match with H)
_REF = """
    References
    ----------
    .. [1] Z. Hou et al., MOES-Pred, ICML 2026 (abstract only; method reconstructed).
    .. [2] Y. Ni et al., Fractional denoising (Frad), arXiv:2407.11086; https://github.com/fengshikun/FradNMI.
"""


# --------------------------------------------------------------------------- data
def load_molecule_list(path: str | Path | None = None, *, sha256: str | None = None):
    """The chapter's list of small molecules (name, class, SMILES), checksum verified.

    Parameters
    ----------
    path : str or Path, optional
        A tab-separated file with columns ``name``, ``class``, ``smiles``. Default: the
        list stored in ``data/14-moes-pred/molecules.tsv`` (150 molecules written by hand
        from common compound names, at most 12 heavy atoms).
    sha256 : str, optional
        Expected SHA-256 of the file. The stored list is always checked against its
        recorded checksum; a user file is checked when this is given.

    Returns
    -------
    pandas.DataFrame
        Columns ``name``, ``class``, ``smiles``.

    Raises
    ------
    ValueError
        When the file is missing, its checksum differs, or its columns are wrong.
    """
    import pandas as pd

    if path is None:
        path, sha256 = DATA_DIR / MOLECULES_FILE, MOLECULES_SHA256
    if not isinstance(path, (str, Path)):
        raise TypeError(f"path={path!r} must be a str or Path, got {type(path).__name__}")
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"molecule list {str(path)!r} does not exist")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if sha256 is not None and digest != sha256:
        raise ValueError(f"molecule list {str(path)!r} has SHA-256 {digest}, expected {sha256}: the file was changed")
    table = pd.read_csv(path, sep="\t", dtype=str, keep_default_na=False)
    if list(table.columns) != ["name", "class", "smiles"]:
        raise ValueError(f"molecule list {str(path)!r} needs the columns name, class, smiles; got {list(table.columns)}")
    return table


class InvalidSmilesError(ValueError):
    """Some SMILES of a batch could not be parsed; ``batch`` keeps the ones that could."""

    def __init__(self, message: str, batch: ParsedBatch) -> None:
        super().__init__(message)
        self.batch = batch


@dataclass
class ParsedBatch:
    """Parsed molecules of a batch and the SMILES that failed.

    ``mols``, ``names`` and ``smiles`` describe the good ones (RDKit molecules without
    hydrogens); ``invalid`` lists ``(position, name, smiles)`` of the bad ones.
    """

    mols: list
    names: list[str]
    smiles: list[str]
    invalid: list[tuple[int, str, str]] = field(default_factory=list)


def parse_smiles(smiles: Sequence[str], names: Sequence[str] | None = None, *, errors: str = "raise") -> ParsedBatch:
    """Parse a batch of SMILES, keeping every good one and naming every bad one.

    Parameters
    ----------
    smiles : sequence of str
        The SMILES strings.
    names : sequence of str, optional
        One name per SMILES (default: the SMILES themselves).
    errors : {"raise", "keep"}
        ``"raise"``: if any SMILES fails, raise :class:`InvalidSmilesError` (a
        ``ValueError``) whose message names each bad SMILES and whose ``batch`` attribute
        holds the parsed rest. ``"keep"``: return the parsed rest with the failures
        listed in ``ParsedBatch.invalid``.

    Returns
    -------
    ParsedBatch

    Raises
    ------
    InvalidSmilesError
        With ``errors="raise"`` when a SMILES does not parse.
    """
    if isinstance(smiles, str) or not isinstance(smiles, Sequence):
        raise TypeError(f"smiles must be a sequence of str (a list), got {type(smiles).__name__}")
    if errors not in ("raise", "keep"):
        raise ValueError(f"errors={errors!r} is not valid; use 'raise' or 'keep'")
    if names is None:
        names = [str(s) for s in smiles]
    if isinstance(names, str) or len(names) != len(smiles):
        raise ValueError(f"names must be a sequence with one name per SMILES ({len(smiles)}), got {names!r}")
    out = ParsedBatch([], [], [])
    RDLogger.DisableLog("rdApp.*")
    try:
        for i, (s, n) in enumerate(zip(smiles, names)):
            mol = Chem.MolFromSmiles(s) if isinstance(s, str) and s.strip() else None
            if mol is None or mol.GetNumAtoms() == 0:
                out.invalid.append((i, str(n), repr(s) if not isinstance(s, str) else s))
                continue
            out.mols.append(mol)
            out.names.append(str(n))
            out.smiles.append(s)
    finally:
        RDLogger.EnableLog("rdApp.*")
    if out.invalid and errors == "raise":
        bad = "; ".join(f"#{i} {n!r}: {s!r}" for i, n, s in out.invalid)
        raise InvalidSmilesError(
            f"{len(out.invalid)} of {len(smiles)} SMILES could not be parsed ({bad}); the other {len(out.mols)} are kept in .batch",
            out,
        )
    return out


# --------------------------------------------------------------------------- molecules
@dataclass
class Molecule:
    """A molecule with hydrogens at its MMFF94 minimum, ready for noise and force evaluation.

    Attributes
    ----------
    name, smiles : str
    mol : rdkit.Chem.Mol
        With explicit hydrogens and one conformer (the minimum).
    z : ndarray, shape (n,)
        Atomic numbers.
    x0 : ndarray, shape (n, 3)
        MMFF94-minimised coordinates (Å).
    e0 : float
        MMFF94 energy at ``x0`` (kcal/mol).
    bonds : ndarray, shape (b, 2)
        Bonded atom pairs.
    torsions : list of (int, int, ndarray)
        Rotatable bonds ``(j, k, moving)``: rotating about the axis ``j → k`` moves the
        atoms ``moving`` (the side of ``k``).
    """

    name: str
    smiles: str
    mol: Any
    z: np.ndarray
    x0: np.ndarray
    e0: float
    bonds: np.ndarray
    torsions: list
    ff: Any = field(repr=False, default=None)
    props: Any = field(repr=False, default=None)

    @property
    def n_atoms(self) -> int:
        return int(self.z.size)


def _rotatable_torsions(mol_h) -> list:
    heavy = Chem.RemoveHs(mol_h)  # heavy-atom indices are kept by AddHs/RemoveHs
    matches = heavy.GetSubstructMatches(_ROTATABLE)
    n = mol_h.GetNumAtoms()
    adj = [[] for _ in range(n)]
    for b in mol_h.GetBonds():
        i, j = b.GetBeginAtomIdx(), b.GetEndAtomIdx()
        adj[i].append(j)
        adj[j].append(i)
    out = []
    for j, k in sorted({tuple(sorted(m)) for m in matches}):
        if mol_h.GetBondBetweenAtoms(j, k).IsInRing():
            continue
        seen, stack = {k}, [k]
        while stack:  # the side of k once the bond j-k is cut
            a = stack.pop()
            for b in adj[a]:
                if (a, b) != (k, j) and b not in seen:
                    seen.add(b)
                    stack.append(b)
        if j in seen:  # pragma: no cover - a ring bond, excluded above
            continue
        side = np.array(sorted(seen))
        if side.size > n / 2:  # move the smaller side
            side = np.array(sorted(set(range(n)) - seen))
            j, k = k, j
        out.append((int(j), int(k), side))
    return out


def prepare_molecule(mol, name: str = "", *, random_state: RandomState = 0, max_iters: int = 2000) -> Molecule:
    """Add hydrogens, embed with ETKDG (v3), minimise with MMFF94, find the rotatable bonds.

    Parameters
    ----------
    mol : rdkit.Chem.Mol or str
        A molecule (without or with hydrogens) or a SMILES string.
    name : str
        A label for messages.
    random_state : int, Generator or None
        Seeds the ETKDG embedding.
    max_iters : int
        MMFF minimisation iterations.

    Returns
    -------
    Molecule

    Raises
    ------
    ValueError
        If the SMILES does not parse, an element is outside :data:`ELEMENTS`, the
        embedding fails, or MMFF94 has no parameters for the molecule.
    """
    if isinstance(mol, str):
        smiles = mol
        mol = parse_smiles([mol], [name or mol]).mols[0]
    elif isinstance(mol, Chem.Mol):
        smiles = Chem.MolToSmiles(Chem.RemoveHs(mol)) if mol.GetNumAtoms() else ""
    else:
        raise TypeError(f"mol must be an rdkit Mol or a SMILES str, got {type(mol).__name__}")
    name = name or smiles
    if mol.GetNumAtoms() == 0:
        raise ValueError(f"molecule {name!r} has no atoms")
    max_iters = check_int(max_iters, "max_iters")
    bad = sorted({a.GetSymbol() for a in mol.GetAtoms() if a.GetAtomicNum() not in ELEMENTS})
    if bad:
        raise ValueError(f"molecule {name!r} has elements {bad}; the network embeds only atomic numbers {ELEMENTS}")
    mh = Chem.AddHs(mol)
    params = AllChem.ETKDGv3()
    params.randomSeed = seed_from(random_state)
    if AllChem.EmbedMolecule(mh, params) != 0:
        raise ValueError(f"molecule {name!r} ({smiles}) could not be embedded in 3-D by ETKDG (no conformer found)")
    if not _FH.MMFFHasAllMoleculeParams(mh):
        raise ValueError(f"molecule {name!r} ({smiles}) has atoms MMFF94 cannot type")
    props = _FH.MMFFGetMoleculeProperties(mh)
    ff = _FH.MMFFGetMoleculeForceField(mh, props)
    ff.Minimize(maxIts=max_iters)
    x0 = np.asarray(ff.Positions(), dtype=float).reshape(-1, 3)
    conf = mh.GetConformer()
    for i, p in enumerate(x0):
        conf.SetAtomPosition(i, p.tolist())
    # a fresh force field for evaluation, with its MMFF properties kept alive beside it
    props = _FH.MMFFGetMoleculeProperties(mh)
    ff = _FH.MMFFGetMoleculeForceField(mh, props)
    bonds = np.array([(b.GetBeginAtomIdx(), b.GetEndAtomIdx()) for b in mh.GetBonds()], dtype=int).reshape(-1, 2)
    z = np.array([a.GetAtomicNum() for a in mh.GetAtoms()], dtype=int)
    return Molecule(name, smiles, mh, z, x0, float(ff.CalcEnergy(x0.ravel().tolist())), bonds, _rotatable_torsions(mh), ff, props)


def prepare_molecules(smiles: Sequence[str], names: Sequence[str] | None = None, *, random_state: RandomState = 0,
                      errors: str = "raise") -> list[Molecule]:
    """:func:`parse_smiles` then :func:`prepare_molecule` for each, seeds drawn from ``random_state``.

    Parameters
    ----------
    smiles, names, errors
        As in :func:`parse_smiles` (``errors="keep"`` drops unparsable SMILES silently;
        ``"raise"`` names them and keeps the rest in the exception's ``batch``).
    random_state : int, Generator or None
        Seeds the embeddings (one seed per molecule, drawn in order).

    Returns
    -------
    list of Molecule

    Raises
    ------
    ValueError
        As in :func:`parse_smiles` and :func:`prepare_molecule` (a molecule that cannot
        be embedded is named).
    """
    batch = parse_smiles(smiles, names, errors=errors)
    rng = check_random_state(random_state)
    seeds = rng.integers(0, 2**31, size=len(batch.mols))
    return [prepare_molecule(m, n, random_state=int(s)) for m, n, s in zip(batch.mols, batch.names, seeds)]


def _as_float_array(v: Any, name: str) -> np.ndarray:
    if isinstance(v, torch.Tensor):
        v = v.detach().cpu().numpy()
    try:
        return np.asarray(v, dtype=float)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be an array of numbers, got {type(v).__name__}") from exc


def _check_molecule(molecule: Any) -> Molecule:
    if not isinstance(molecule, Molecule):
        raise TypeError(f"molecule must be a moes.Molecule (from prepare_molecule), got {type(molecule).__name__}")
    return molecule


def _check_coords(molecule: Molecule, x: Any, name: str = "x") -> np.ndarray:
    x = _as_float_array(x, name)
    if x.shape != (molecule.n_atoms, 3):
        raise ValueError(f"{name} has shape {x.shape}; molecule {molecule.name!r} needs ({molecule.n_atoms}, 3)")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{name} holds NaN or infinite coordinates")
    return x


def _non_finite(molecule: Molecule, x: np.ndarray, what: str) -> ValueError:
    """The error for a geometry where MMFF94 is undefined, naming the closest pair of atoms."""
    d = np.linalg.norm(x[:, None] - x[None], axis=-1)
    d[np.diag_indices_from(d)] = np.inf
    i, j = np.unravel_index(np.argmin(d), d.shape)
    return ValueError(f"MMFF94 {what} of molecule {molecule.name!r} is not finite at these coordinates: atoms {min(i, j)} "
                      f"and {max(i, j)} are {d[i, j]:.3g} Å apart (coincident atoms make the force field undefined); "
                      "give coordinates with distinct atom positions")


def mmff_energy(molecule: Molecule, x: np.ndarray) -> float:
    """MMFF94 energy of ``molecule`` at coordinates ``x``.

    Parameters
    ----------
    molecule : Molecule
    x : ndarray, shape (n, 3)
        Coordinates in Å.

    Returns
    -------
    float
        Energy in kcal/mol.

    Raises
    ------
    TypeError
        For a ``molecule`` that is not a :class:`Molecule`.
    ValueError
        For coordinates of the wrong shape or not finite, or where the energy is not
        finite (coincident atoms; the message names the closest pair).
    """
    molecule = _check_molecule(molecule)
    x = _check_coords(molecule, x)
    e = float(molecule.ff.CalcEnergy(x.ravel().tolist()))
    if not math.isfinite(e):
        raise _non_finite(molecule, x, "energy")
    return e


mmff_energy.__doc__ += _REF


def mmff_forces(molecule: Molecule, x: np.ndarray) -> np.ndarray:
    """MMFF94 forces :math:`F = -\\nabla_x E` at coordinates ``x``.

    Parameters
    ----------
    molecule : Molecule
    x : ndarray, shape (n, 3)
        Coordinates in Å.

    Returns
    -------
    ndarray, shape (n, 3)
        Forces in kcal/mol/Å (RDKit's ``CalcGrad`` returns the gradient; its sign is flipped).

    Raises
    ------
    TypeError
        For a ``molecule`` that is not a :class:`Molecule`.
    ValueError
        For coordinates of the wrong shape or not finite, or where the forces are not
        finite (coincident atoms; the message names the closest pair).
    """
    molecule = _check_molecule(molecule)
    x = _check_coords(molecule, x)
    pos = x.ravel().tolist()
    # RDKit's CalcGrad(pos) reuses state left by the last CalcEnergy call (the oracle test
    # fails without this line: the gradient then belongs partly to the previous geometry)
    molecule.ff.CalcEnergy(pos)
    f = -np.asarray(molecule.ff.CalcGrad(pos), dtype=float).reshape(-1, 3)
    if not np.all(np.isfinite(f)):
        raise _non_finite(molecule, x, "forces")
    return f


mmff_forces.__doc__ += _REF


# --------------------------------------------------------------------------- noise
def _cross(a: np.ndarray, p: np.ndarray) -> np.ndarray:
    """:math:`a \\times p_r` for every row of ``p`` (a (3,), p (n, 3)), with :func:`numpy.cross`'s arithmetic.

    The same products and differences in the same order as ``np.cross(a, p)`` (so the same
    bits), without its axis handling, which costs more than the arithmetic for a few atoms.
    """
    # columns: a1 p2 - a2 p1, a2 p0 - a0 p2, a0 p1 - a1 p0 (products commute exactly)
    return a[_ROT1] * p[:, _ROT2] - a[_ROT2] * p[:, _ROT1]  # (n, 3)


_ROT1, _ROT2 = np.array([1, 2, 0]), np.array([2, 0, 1])


def _rotate_about(x: np.ndarray, j: int, k: int, side: np.ndarray, angle: float) -> None:
    xk = x[k]  # a view; the right-hand side below is computed before x[side] is written
    axis = xk - x[j]
    axis = axis / math.sqrt(axis.dot(axis))  # what np.linalg.norm computes for a vector
    p = x[side] - xk
    c, s = math.cos(angle), math.sin(angle)
    # Rodrigues' rotation of the side about the bond axis through x[k]
    x[side] = xk + p * c + _cross(axis, p) * s + (p @ axis)[:, None] * axis * (1 - c)


def _apply_torsions(molecule: Molecule, x: np.ndarray, angles: np.ndarray) -> np.ndarray:
    """:func:`apply_torsions` without its checks (for inner loops whose inputs are already checked)."""
    x = x.copy()  # (n, 3)
    for (j, k, side), a in zip(molecule.torsions, angles):
        _rotate_about(x, j, k, side, float(a))
    return x


def apply_torsions(molecule: Molecule, x: np.ndarray, angles: np.ndarray) -> np.ndarray:
    """Rotate each rotatable bond's moving side by the given angle (bond lengths unchanged).

    Parameters
    ----------
    molecule : Molecule
    x : ndarray, shape (n, 3)
        Start coordinates (Å).
    angles : ndarray, shape (t,)
        One angle per rotatable bond in ``molecule.torsions`` (rad).

    Returns
    -------
    ndarray, shape (n, 3)
        New coordinates; each rotation is rigid for the moved side, so every bond length
        (and every angle not spanning a rotated bond) is kept.
    """
    molecule = _check_molecule(molecule)
    x = _check_coords(molecule, x).copy()
    angles = _as_float_array(angles, "angles").ravel()
    if angles.size != len(molecule.torsions):
        raise ValueError(f"angles has {angles.size} entries; molecule {molecule.name!r} has {len(molecule.torsions)} rotatable bonds")
    if not np.all(np.isfinite(angles)):
        raise ValueError("angles holds NaN or infinite values")
    return _apply_torsions(molecule, x, angles)


apply_torsions.__doc__ += _REF


def torsion_noise(molecule: Molecule, scale: float, *, x: np.ndarray | None = None, random_state: RandomState = None) -> np.ndarray:
    """Frad's chemical-aware noise: :math:`\\Delta\\psi \\sim N(0, s^2)` on every rotatable bond.

    Parameters
    ----------
    molecule : Molecule
    scale : float
        Standard deviation ``s`` of the torsion change (rad, >= 0).
    x : ndarray, shape (n, 3), optional
        Start coordinates (default the minimum ``x0``).
    random_state : int, Generator or None

    Returns
    -------
    ndarray, shape (n, 3)
        The perturbed conformer :math:`x_a`.
    """
    molecule = _check_molecule(molecule)
    scale = check_real(scale, "scale", lo=0)
    rng = check_random_state(random_state)
    x = molecule.x0 if x is None else x
    return apply_torsions(molecule, x, scale * rng.standard_normal(len(molecule.torsions)))


torsion_noise.__doc__ += _REF


def coordinate_noise(x: np.ndarray, tau: float, *, random_state: RandomState = None) -> tuple[np.ndarray, np.ndarray]:
    """Coordinate Gaussian noise: :math:`\\tilde x = x + \\tau\\epsilon`, :math:`\\epsilon \\sim N(0, I)`.

    Parameters
    ----------
    x : ndarray, shape (n, 3)
    tau : float
        Noise scale in Å (> 0).
    random_state : int, Generator or None

    Returns
    -------
    (ndarray, ndarray)
        :math:`\\tilde x` and :math:`\\epsilon`, both of shape (n, 3).
    """
    x = _as_float_array(x, "x")
    if x.ndim != 2 or x.shape[1] != 3 or x.shape[0] < 1:
        raise ValueError(f"x must have shape (n, 3) with n >= 1, got {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError("x holds NaN or infinite coordinates")
    tau = check_real(tau, "tau", lo=0, lo_open=True)
    eps = check_random_state(random_state).standard_normal(x.shape)
    return x + tau * eps, eps


coordinate_noise.__doc__ += _REF


@dataclass
class SentinelResult:
    """Outcome of :func:`sentinel_scale`.

    ``scale`` is the torsion scale (rad); ``rise`` the median energy rise at that scale
    (kcal/mol); ``status`` is ``"hit"`` (within tolerance of the target), ``"capped"``
    (even ``s_max`` stays below the target) or ``"no torsions"``; ``n_energy`` counts
    the MMFF energy evaluations used.
    """

    scale: float
    rise: float
    status: str
    n_energy: int


def sentinel_scale(molecule: Molecule, target: float, *, s_max: float = 2.0, n_samples: int = 8, tol: float = 0.1,
                   max_iter: int = 40, random_state: RandomState = None) -> SentinelResult:
    """Energy sentinel (reconstruction): the torsion scale whose median MMFF energy rise is ``target``.

    With ``n_samples`` fixed standard-normal draws :math:`z_k` (common random numbers),
    :math:`f(s) = \\mathrm{median}_k\\,[E(\\mathrm{tors}(x_0, s z_k)) - E(x_0)]` is continuous
    in :math:`s` with :math:`f(0)=0`; bisection on :math:`[0, s_{\\max}]` finds
    :math:`|f(s) - \\Delta E^*| \\le` ``tol``. If :math:`f(s_{\\max}) \\le \\Delta E^*` the
    molecule is flexible enough for the full scale and ``s_max`` is returned (``capped``).

    Parameters
    ----------
    molecule : Molecule
    target : float
        :math:`\\Delta E^*` in kcal/mol (> 0).
    s_max : float
        Largest scale (rad, > 0): the sentinel's cap (Frad's own default is far smaller,
        :data:`FRAD_TORSION_SCALE`).
    n_samples : int
        Draws per evaluation of :math:`f`.
    tol : float
        Tolerance on the energy rise (kcal/mol, > 0).
    max_iter : int
        Bisection steps at most.
    random_state : int, Generator or None

    Returns
    -------
    SentinelResult
    """
    molecule = _check_molecule(molecule)
    target = check_real(target, "target", lo=0, lo_open=True)
    s_max = check_real(s_max, "s_max", lo=0, lo_open=True)
    tol = check_real(tol, "tol", lo=0, lo_open=True)
    n_samples = check_int(n_samples, "n_samples")
    max_iter = check_int(max_iter, "max_iter")
    rng = check_random_state(random_state)
    t = len(molecule.torsions)
    if t == 0:
        return SentinelResult(s_max, 0.0, "no torsions", 0)
    zs = rng.standard_normal((n_samples, t))
    n_eval = 0

    def f(s: float) -> float:
        nonlocal n_eval
        n_eval += n_samples
        rises = [molecule.ff.CalcEnergy(_apply_torsions(molecule, molecule.x0, s * z).ravel().tolist()) - molecule.e0 for z in zs]
        return float(np.median(rises))

    hi_val = f(s_max)
    if hi_val <= target + tol:
        return SentinelResult(s_max, hi_val, "hit" if abs(hi_val - target) <= tol else "capped", n_eval)
    lo, hi = 0.0, s_max
    mid, val = s_max, hi_val
    for _ in range(max_iter):
        mid = 0.5 * (lo + hi)
        val = f(mid)
        if abs(val - target) <= tol:
            return SentinelResult(mid, val, "hit", n_eval)
        if val < target:
            lo = mid
        else:
            hi = mid
    return SentinelResult(mid, val, "hit" if abs(val - target) <= tol else "not converged", n_eval)


sentinel_scale.__doc__ += _REF


@dataclass
class NoiseScheme:
    """One of the three noise schemes, with its constants.

    Parameters
    ----------
    kind : {"coord", "frad", "sentinel"}
        ``coord``: :math:`x_a = x_0`. ``frad``: torsion noise of scale ``torsion_scale``
        for every molecule. ``sentinel``: per-molecule scale from :func:`sentinel_scale`
        with target ``target`` (capped at ``torsion_scale``), refreshed every
        ``refresh_every`` training steps.
    tau : float
        Coordinate noise (Å).
    torsion_scale : float
        The torsion scale (rad) of a ``frad`` scheme (Frad's default is
        :data:`FRAD_TORSION_SCALE`, 2 degrees); the sentinel's cap.
    target : float
        The sentinel's :math:`\\Delta E^*` (kcal/mol).
    n_samples : int
        Draws per bisection evaluation.
    refresh_every : int
        Training steps between two sentinel refreshes.
    """

    kind: str
    tau: float = 0.04
    torsion_scale: float = 2.0
    target: float = 3.0
    n_samples: int = 8
    refresh_every: int = 100

    def __post_init__(self) -> None:
        if self.kind not in SCHEMES:
            raise ValueError(f"kind={self.kind!r} is not a noise scheme; use one of {', '.join(map(repr, SCHEMES))}")
        self.tau = check_real(self.tau, "tau", lo=0, lo_open=True)
        self.torsion_scale = check_real(self.torsion_scale, "torsion_scale", lo=0)
        self.target = check_real(self.target, "target", lo=0, lo_open=True)
        self.n_samples = check_int(self.n_samples, "n_samples")
        self.refresh_every = check_int(self.refresh_every, "refresh_every")

    def scales(self, molecules: Sequence[Molecule], *, random_state: RandomState = None) -> tuple[np.ndarray, list]:
        """Torsion scale per molecule (and the sentinel results, empty for the other kinds)."""
        mols = [_check_molecule(m) for m in molecules]
        if self.kind == "coord":
            return np.zeros(len(mols)), []
        if self.kind == "frad":
            return np.full(len(mols), self.torsion_scale), []
        rng = check_random_state(random_state)
        res = [sentinel_scale(m, self.target, s_max=self.torsion_scale, n_samples=self.n_samples, random_state=rng) for m in mols]
        return np.array([r.scale for r in res]), res

    def sample(self, molecule: Molecule, scale: float, *, random_state: RandomState = None):
        """One noisy sample: ``(x_a, x_tilde, eps)`` with :math:`\\tilde x = x_a + \\tau\\epsilon`."""
        rng = check_random_state(random_state)
        x_a = molecule.x0.copy() if self.kind == "coord" or scale == 0 else torsion_noise(molecule, scale, random_state=rng)
        x_t, eps = coordinate_noise(x_a, self.tau, random_state=rng)
        return x_a, x_t, eps

    def _sample(self, molecule: Molecule, scale: float, rng: np.random.Generator):
        """:meth:`sample` without its checks: the same draws from ``rng`` and the same arithmetic."""
        if self.kind == "coord" or scale == 0:
            x_a = molecule.x0.copy()
        else:
            x_a = _apply_torsions(molecule, molecule.x0, float(scale) * rng.standard_normal(len(molecule.torsions)))
        eps = rng.standard_normal(x_a.shape)  # (n, 3)
        return x_a, x_a + self.tau * eps, eps


def high_energy_fraction(molecules: Sequence[Molecule], scheme: NoiseScheme, scales: np.ndarray, *, n_samples: int = 16,
                         threshold: float = 10.0, random_state: RandomState = None) -> dict[str, np.ndarray]:
    """Energy rise of noisy samples under a scheme, and the share above ``threshold``.

    Parameters
    ----------
    molecules : sequence of Molecule
    scheme : NoiseScheme
    scales : ndarray, shape (m,)
        Torsion scale per molecule (from :meth:`NoiseScheme.scales`).
    n_samples : int
        Samples per molecule.
    threshold : float
        kcal/mol above the minimum that counts as unphysical.
    random_state : int, Generator or None

    Returns
    -------
    dict
        ``rise_a``, ``rise_tilde``: arrays (m, n_samples) of :math:`E - E_0` for the
        torsion-perturbed conformer :math:`x_a` and for :math:`\\tilde x`;
        ``frac_a``, ``frac_tilde``: the shares above ``threshold``.
    """
    if not isinstance(scheme, NoiseScheme):
        raise TypeError(f"scheme must be a NoiseScheme, got {type(scheme).__name__}")
    mols = [_check_molecule(m) for m in molecules]
    scales = _as_float_array(scales, "scales").ravel()
    if scales.size != len(mols) or not np.all(np.isfinite(scales)) or np.any(scales < 0):
        raise ValueError(f"scales must hold one finite non-negative scale per molecule ({len(mols)}), got {scales.size} values")
    n_samples = check_int(n_samples, "n_samples")
    threshold = check_real(threshold, "threshold")
    rng = check_random_state(random_state)
    ra = np.zeros((len(mols), n_samples))
    rt = np.zeros((len(mols), n_samples))
    for i, (m, s) in enumerate(zip(mols, scales)):
        for k in range(n_samples):
            x_a, x_t, _ = scheme._sample(m, s, rng)
            ra[i, k] = m.ff.CalcEnergy(x_a.ravel().tolist()) - m.e0
            rt[i, k] = m.ff.CalcEnergy(x_t.ravel().tolist()) - m.e0
    return {"rise_a": ra, "rise_tilde": rt, "frac_a": float((ra > threshold).mean()), "frac_tilde": float((rt > threshold).mean())}


high_energy_fraction.__doc__ += _REF


# --------------------------------------------------------------------------- model
def _ssp(x: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.softplus(x) - math.log(2.0)


class _Interaction(torch.nn.Module):
    def __init__(self, c: int, n_rbf: int) -> None:
        super().__init__()
        self.filt1 = torch.nn.Linear(n_rbf, c)
        self.filt2 = torch.nn.Linear(c, c)
        self.lin_in = torch.nn.Linear(c, c, bias=False)
        self.lin_out1 = torch.nn.Linear(c, c)
        self.lin_out2 = torch.nn.Linear(c, c)

    def forward(self, h, rbf, fcut, i, j):
        w = self.filt2(_ssp(self.filt1(rbf))) * fcut[:, None]  # (E, c) continuous filter
        m = torch.zeros_like(h).index_add_(0, i, self.lin_in(h).index_select(0, j) * w)  # (n, c)
        return h + self.lin_out2(_ssp(self.lin_out1(m)))


class ForceNet(torch.nn.Module):
    """A small SchNet-like invariant network with an equivariant force head and a scalar head.

    Atom features :math:`h_i` are updated by continuous-filter convolutions over pairs
    within ``cutoff`` (Gaussian RBF of the distance, cosine cutoff). The force head is

    .. math:: f_i = \\sum_{j \\ne i} \\phi(h_i \\odot h_j, \\mathrm{rbf}(d_{ij}))\\,
              \\frac{x_i - x_j}{d_{ij}},

    equivariant under rotations, invariant under translations, and with zero net force
    (:math:`\\phi` is symmetric in i, j). The scalar head sums an MLP of :math:`h_i`
    over the atoms of each molecule.

    Parameters
    ----------
    channels : int
    layers : int
    n_rbf : int
    cutoff : float
        Å.
    random_state : int, Generator or None
        Seeds the initial weights.
    """

    def __init__(self, channels: int = 64, layers: int = 3, n_rbf: int = 32, cutoff: float = 5.0,
                 random_state: RandomState = 0) -> None:
        super().__init__()
        channels = check_int(channels, "channels")
        layers = check_int(layers, "layers")
        n_rbf = check_int(n_rbf, "n_rbf", low=2)
        self.cutoff = check_real(cutoff, "cutoff", lo=0, lo_open=True)
        gen_state = torch.random.get_rng_state()
        torch.manual_seed(seed_from(random_state))
        try:
            self.embed = torch.nn.Embedding(len(ELEMENTS), channels)
            self.blocks = torch.nn.ModuleList([_Interaction(channels, n_rbf) for _ in range(layers)])
            self.force_mlp = torch.nn.Sequential(torch.nn.Linear(channels + n_rbf, channels), torch.nn.SiLU(), torch.nn.Linear(channels, 1))
            self.head = torch.nn.Sequential(torch.nn.Linear(channels, channels), torch.nn.SiLU(), torch.nn.Linear(channels, 1))
        finally:
            torch.random.set_rng_state(gen_state)
        self.register_buffer("centers", torch.linspace(0.0, self.cutoff, n_rbf))
        self.gamma = 0.5 / float(self.centers[1] - self.centers[0]) ** 2
        lut = torch.full((max(ELEMENTS) + 1,), -1, dtype=torch.long)
        lut[list(ELEMENTS)] = torch.arange(len(ELEMENTS))
        self.register_buffer("lut", lut)

    def encode(self, z, x, i, j):
        """Atom features and pair geometry for atoms ``z`` at ``x`` with pairs ``(i, j)``."""
        d_vec = x.index_select(0, i) - x.index_select(0, j)  # (E, 3)
        d = d_vec.norm(dim=1).clamp_min(1e-6)
        rbf = torch.exp(-self.gamma * (d[:, None] - self.centers) ** 2)
        fcut = 0.5 * (torch.cos(math.pi * d / self.cutoff) + 1.0) * (d < self.cutoff)
        h = self.embed(self.lut[z])
        for blk in self.blocks:
            h = blk(h, rbf, fcut, i, j)
        return h, d_vec, d, rbf, fcut

    def forward(self, z, x, i, j, batch, n_mol: int, heads: str = "both"):
        """Return ``(forces (n, 3), scalar per molecule (n_mol,))``.

        ``heads="forces"`` or ``"scalar"`` computes only that head and returns ``None`` for
        the other (a loss on one head gives the other no gradient, so training is the same).
        """
        if heads not in ("both", "forces", "scalar"):
            raise ValueError(f"heads={heads!r} is not valid; use 'both', 'forces' or 'scalar'")
        h, d_vec, d, rbf, fcut = self.encode(z, x, i, j)
        f = s = None
        if heads != "scalar":
            phi = self.force_mlp(torch.cat([h.index_select(0, i) * h.index_select(0, j), rbf], dim=1)).squeeze(1) * fcut  # (E,)
            f = torch.zeros_like(x).index_add_(0, i, phi[:, None] * d_vec / d[:, None])  # (n, 3)
        if heads != "forces":
            s = torch.zeros(n_mol, dtype=x.dtype).index_add_(0, batch, self.head(h).squeeze(1))  # (n_mol,)
        return f, s


@functools.cache
def _pairs(n: int) -> tuple[np.ndarray, np.ndarray]:
    """The ordered pairs ``(a, c)``, ``a != c``, of ``n`` atoms, row-major (read-only, cached)."""
    a, c = np.nonzero(~np.eye(n, dtype=bool))  # (n (n - 1),) each
    a.setflags(write=False)
    c.setflags(write=False)
    return a, c


def _graph(molecules: Sequence[Molecule], xs: Sequence[np.ndarray]):
    zs, xx, ii, jj, bb, off = [], [], [], [], [], 0
    for b, (m, x) in enumerate(zip(molecules, xs)):
        n = m.n_atoms
        a, c = _pairs(n)
        ii.append(a + off)
        jj.append(c + off)
        zs.append(m.z)
        xx.append(x)
        bb.append(np.full(n, b))
        off += n
    t = lambda v, dt: torch.as_tensor(np.concatenate(v), dtype=dt)  # noqa: E731
    return t(zs, torch.long), t(xx, torch.float32), t(ii, torch.long), t(jj, torch.long), t(bb, torch.long)


def predict_forces(model: ForceNet, molecules: Sequence[Molecule], xs: Sequence[np.ndarray]) -> tuple[list[np.ndarray], np.ndarray]:
    """Run ``model`` on molecules at the given coordinates.

    Parameters
    ----------
    model : ForceNet
    molecules : sequence of Molecule
    xs : sequence of ndarray, each (n_m, 3)

    Returns
    -------
    (list of ndarray, ndarray)
        The force-head output per molecule (its negative is the denoising direction:
        the network predicts :math:`\\epsilon`, so the learned force is ``-output``)
        and the scalar head per molecule.
    """
    if not isinstance(model, ForceNet):
        raise TypeError(f"model must be a ForceNet, got {type(model).__name__}")
    mols = [_check_molecule(m) for m in molecules]
    if len(xs) != len(mols) or not mols:
        raise ValueError(f"need one coordinate array per molecule and at least one molecule; got {len(xs)} for {len(mols)}")
    xs = [_check_coords(m, x, f"xs[{k}]") for k, (m, x) in enumerate(zip(mols, xs))]
    z, x, i, j, b = _graph(mols, xs)
    with torch.no_grad():
        f, s = model(z, x, i, j, b, len(mols))
    sizes = np.cumsum([m.n_atoms for m in mols])[:-1]
    return [a.astype(float) for a in np.split(f.numpy(), sizes)], s.numpy().astype(float)


predict_forces.__doc__ += _REF


@dataclass
class PretrainResult:
    """A pretrained network and its training log (loss per step, sentinel scales per refresh, seconds)."""

    model: ForceNet
    losses: np.ndarray
    scales: list
    sentinel_seconds: float
    train_seconds: float


def pretrain_denoise(molecules: Sequence[Molecule], scheme: NoiseScheme, *, steps: int = 500, batch_size: int = 16,
                     lr: float = 1e-3, model_kw: dict | None = None, random_state: RandomState = 0,
                     show_progress: bool = False) -> PretrainResult:
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


def gasteiger_dipole(molecule: Molecule, x: np.ndarray | None = None) -> float:
    """Dipole magnitude from Gasteiger partial charges: :math:`|\\sum_i q_i (x_i - \\bar x)|` in debye.

    Parameters
    ----------
    molecule : Molecule
    x : ndarray, shape (n, 3), optional
        Coordinates (default the minimum ``x0``).

    Returns
    -------
    float
        Debye (:math:`1\\,e\\,\\text{Å} = 4.8032` D).

    References
    ----------
    .. [1] J. Gasteiger, M. Marsili, "Iterative partial equalization of orbital
       electronegativity", Tetrahedron 36 (1980) 3219.
    """
    molecule = _check_molecule(molecule)
    x = molecule.x0 if x is None else _check_coords(molecule, x)
    m = Chem.Mol(molecule.mol)
    rdPartialCharges.ComputeGasteigerCharges(m)
    q = np.array([a.GetDoubleProp("_GasteigerCharge") for a in m.GetAtoms()])
    if not np.all(np.isfinite(q)):
        raise ValueError(f"Gasteiger charges of {molecule.name!r} are not finite")
    q = q - q.mean()  # neutralise rounding so the dipole does not depend on the origin
    return float(np.linalg.norm(q @ (x - x.mean(0))) * DEBYE_PER_E_ANGSTROM)


def finetune_property(molecules: Sequence[Molecule], y: np.ndarray, *, init: ForceNet | None = None, steps: int = 300,
                      batch_size: int = 16, lr: float = 1e-3, tau: float = 0.0, model_kw: dict | None = None,
                      random_state: RandomState = 0) -> ForceNet:
    """Fine-tune the scalar head (and the encoder) on labelled molecules at their minima.

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
    mu, sd = float(y.mean()), float(y.std()) or 1.0
    yt = torch.as_tensor((y - mu) / sd, dtype=torch.float32)
    opt = torch.optim.Adam(model.parameters(), lr=lr, foreach=True)
    rng = np.random.default_rng([seed, 7])
    for _ in range(steps):
        idx = rng.choice(len(mols), size=min(batch_size, len(mols)), replace=False)
        xs = [mols[k].x0 + (tau * rng.standard_normal(mols[k].x0.shape) if tau > 0 else 0.0) for k in idx]
        z, x, i, j, b = _graph([mols[k] for k in idx], xs)
        _, s = model(z, x, i, j, b, len(idx), heads="scalar")
        loss = ((s - yt[idx]) ** 2).mean()
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


def embed_conformers(molecule: Molecule, n: int, *, random_state: RandomState = None) -> list[np.ndarray]:
    """Fresh ETKDG conformers of a molecule, *not* minimised (MMFF forces on them are non-zero).

    These serve as held-out geometries for the force probe: they come from the
    embedding's distance geometry, not from any of the noise schemes.

    Parameters
    ----------
    molecule : Molecule
    n : int
        Number of conformers (each from its own seed).
    random_state : int, Generator or None

    Returns
    -------
    list of ndarray, each (n_atoms, 3)

    Raises
    ------
    ValueError
        When an embedding fails.
    """
    molecule = _check_molecule(molecule)
    n = check_int(n, "n")
    rng = check_random_state(random_state)
    out = []
    for _ in range(n):
        m = Chem.Mol(molecule.mol)
        m.RemoveAllConformers()
        params = AllChem.ETKDGv3()
        params.randomSeed = int(rng.integers(0, 2**31))
        if AllChem.EmbedMolecule(m, params) != 0:
            raise ValueError(f"molecule {molecule.name!r} could not be embedded in 3-D by ETKDG")
        out.append(np.asarray(m.GetConformer().GetPositions(), dtype=float))
    return out


embed_conformers.__doc__ += _REF
