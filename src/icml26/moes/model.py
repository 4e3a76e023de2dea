"""The network of chapter 14: a small SchNet-like invariant network with an equivariant force head.

Part of :mod:`icml26.moes` (see there for the method and references).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from .._common import RandomState, check_int, check_real, seed_from
from .molecules import _REF, ELEMENTS, Molecule, _check_coords, _check_molecule


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


READOUTS: tuple[str, ...] = ("sum", "dipole")
"""The scalar head's readouts: a sum over atoms, or a dipole from atomic charges."""


def _check_readout(readout: Any) -> str:
    if readout not in READOUTS:
        raise ValueError(f"readout={readout!r} is not a readout; use one of {', '.join(map(repr, READOUTS))}")
    return readout


class ForceNet(torch.nn.Module):
    """A small SchNet-like invariant network with an equivariant force head and a scalar head.

    Atom features :math:`h_i` are updated by continuous-filter convolutions over pairs
    within ``cutoff`` (Gaussian RBF of the distance, cosine cutoff). The force head is

    .. math:: f_i = \\sum_{j \\ne i} \\phi(h_i \\odot h_j, \\mathrm{rbf}(d_{ij}))\\,
              \\frac{x_i - x_j}{d_{ij}},

    equivariant under rotations, invariant under translations, and with zero net force
    (:math:`\\phi` is symmetric in i, j). The scalar head sums an MLP of :math:`h_i`
    over the atoms of each molecule (``readout="sum"``, an extensive property), or, for a
    dipole moment (``readout="dipole"``, TorchMD-NET's dipole output for QM9's
    :math:`\\mu`), reads the MLP as atomic charges :math:`q_i`, neutralised per molecule,
    and returns :math:`|\\sum_i (q_i - \\bar q)(x_i - \\bar x)|`, invariant under rotations
    and translations.

    Parameters
    ----------
    channels : int
    layers : int
    n_rbf : int
    cutoff : float
        Å.
    readout : {"sum", "dipole"}
        How the scalar head makes one number per molecule (it has no weights of its own,
        so it may be changed on a trained network).
    random_state : int, Generator or None
        Seeds the initial weights.
    """

    def __init__(
        self,
        channels: int = 64,
        layers: int = 3,
        n_rbf: int = 32,
        cutoff: float = 5.0,
        random_state: RandomState = 0,
        readout: str = "sum",
    ) -> None:
        super().__init__()
        self.readout = _check_readout(readout)
        channels = check_int(channels, "channels")
        layers = check_int(layers, "layers")
        n_rbf = check_int(n_rbf, "n_rbf", low=2)
        self.cutoff = check_real(cutoff, "cutoff", lo=0, lo_open=True)
        gen_state = torch.random.get_rng_state()
        torch.manual_seed(seed_from(random_state))
        try:
            self.embed = torch.nn.Embedding(len(ELEMENTS), channels)
            self.blocks = torch.nn.ModuleList([_Interaction(channels, n_rbf) for _ in range(layers)])
            self.force_mlp = torch.nn.Sequential(
                torch.nn.Linear(channels + n_rbf, channels), torch.nn.SiLU(), torch.nn.Linear(channels, 1)
            )
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
            q = self.head(h).squeeze(1)  # (n,)
            if self.readout == "sum":
                s = torch.zeros(n_mol, dtype=x.dtype).index_add_(0, batch, q)  # (n_mol,)
            else:
                cnt = torch.zeros(n_mol, dtype=x.dtype).index_add_(0, batch, torch.ones_like(q))  # (n_mol,)
                q_bar = torch.zeros(n_mol, dtype=x.dtype).index_add_(0, batch, q) / cnt
                x_bar = torch.zeros(n_mol, 3, dtype=x.dtype).index_add_(0, batch, x) / cnt[:, None]
                mu = torch.zeros(n_mol, 3, dtype=x.dtype).index_add_(
                    0, batch, (q - q_bar[batch])[:, None] * (x - x_bar[batch])
                )  # (n_mol, 3)
                s = (mu.square().sum(1) + 1e-8).sqrt()  # (n_mol,) smooth at mu = 0
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


def predict_forces(
    model: ForceNet, molecules: Sequence[Molecule], xs: Sequence[np.ndarray]
) -> tuple[list[np.ndarray], np.ndarray]:
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
