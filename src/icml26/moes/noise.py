"""Noise schemes for chapter 14: torsion and coordinate noise, the energy sentinel, unphysical shares.

Part of :mod:`icml26.moes` (see there for the method and references).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .._common import RandomState, check_int, check_random_state, check_real
from .molecules import _REF, Molecule, _as_float_array, _check_coords, _check_molecule

FRAD_TORSION_SCALE_DEG: float = 2.0
"""Frad's default torsion noise scale, in degrees (FradNMI ``torsion_utils.py`` and ``pcqm4mv2.py`` draw it in degrees)."""
FRAD_TORSION_SCALE: float = math.radians(FRAD_TORSION_SCALE_DEG)
"""The same scale in radians (about 0.035 rad), the unit :func:`torsion_noise` takes."""
SCHEMES: tuple[str, ...] = ("coord", "frad", "sentinel")
"""The noise schemes: coordinate noise only, Frad (one torsion scale), energy sentinel (per-molecule scale)."""


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
        raise ValueError(
            f"angles has {angles.size} entries; molecule {molecule.name!r} has {len(molecule.torsions)} rotatable bonds"
        )
    if not np.all(np.isfinite(angles)):
        raise ValueError("angles holds NaN or infinite values")
    return _apply_torsions(molecule, x, angles)


apply_torsions.__doc__ += _REF


def torsion_noise(
    molecule: Molecule, scale: float, *, x: np.ndarray | None = None, random_state: RandomState = None
) -> np.ndarray:
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


def sentinel_scale(
    molecule: Molecule,
    target: float,
    *,
    s_max: float = 2.0,
    n_samples: int = 8,
    tol: float = 0.1,
    max_iter: int = 40,
    random_state: RandomState = None,
) -> SentinelResult:
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


def high_energy_fraction(
    molecules: Sequence[Molecule],
    scheme: NoiseScheme,
    scales: np.ndarray,
    *,
    n_samples: int = 16,
    threshold: float = 10.0,
    random_state: RandomState = None,
) -> dict[str, np.ndarray]:
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
    return {
        "rise_a": ra,
        "rise_tilde": rt,
        "frac_a": float((ra > threshold).mean()),
        "frac_tilde": float((rt > threshold).mean()),
    }


high_energy_fraction.__doc__ += _REF
