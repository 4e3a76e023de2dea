"""Molecules for chapter 14: the stored SMILES list, RDKit conformers, MMFF94 energies and forces, labels.

Part of :mod:`icml26.moes` (see there for the method and references).
"""

from __future__ import annotations

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

from .._common import RandomState, check_int, check_random_state, seed_from

DATA_DIR = Path(__file__).resolve().parents[3] / "data" / "14-moes-pred"
MOLECULES_FILE = "molecules.tsv"
MOLECULES_SHA256 = "bbcd19c8a583da600af55629d3f6e09b7da7b57dab9e98bfdd40c3ed736b288b"
ELEMENTS: tuple[int, ...] = (1, 6, 7, 8, 9, 15, 16, 17, 35)
"""Atomic numbers the network embeds (H, C, N, O, F, P, S, Cl, Br)."""
DEBYE_PER_E_ANGSTROM = 4.80320

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


def prepare_molecules(
    smiles: Sequence[str], names: Sequence[str] | None = None, *, random_state: RandomState = 0, errors: str = "raise"
) -> list[Molecule]:
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
    return ValueError(
        f"MMFF94 {what} of molecule {molecule.name!r} is not finite at these coordinates: atoms {min(i, j)} "
        f"and {max(i, j)} are {d[i, j]:.3g} Å apart (coincident atoms make the force field undefined); "
        "give coordinates with distinct atom positions"
    )


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
