"""Oracle tests of icml26.moes: MMFF forces, torsion noise, the sentinel's bisection, equivariance."""

import math

import numpy as np
import pytest
import torch

from icml26 import moes


@pytest.fixture(scope="module")
def mols():
    return moes.prepare_molecules(["CCCCO", "CC(=O)NCc1ccccc1", "CC(C)(C)C(C)(C)C", "c1ccccc1"], random_state=0)


def test_stored_list_is_verified_and_fits_the_brief():
    tab = moes.load_molecule_list()
    assert len(tab) == 150 and tab.name.is_unique and tab.smiles.is_unique
    assert set(tab["class"]) == {"alkane", "alcohol", "amine", "ether", "aromatic", "amide"}
    batch = moes.parse_smiles(list(tab.smiles), list(tab.name))
    assert not batch.invalid and max(m.GetNumHeavyAtoms() for m in batch.mols) <= 12


def test_changed_file_fails_the_checksum(tmp_path):
    src = moes.DATA_DIR / moes.MOLECULES_FILE
    bad = tmp_path / "m.tsv"
    bad.write_bytes(src.read_bytes() + b"x\tamine\tCN\n")
    with pytest.raises(ValueError, match="SHA-256"):
        moes.load_molecule_list(bad, sha256=moes.MOLECULES_SHA256)
    assert len(moes.load_molecule_list(bad)) == 151  # no checksum asked for a user file


def test_forces_are_minus_the_gradient_by_finite_differences(mols):
    rng = np.random.default_rng(0)
    for m in mols:
        x = m.x0 + 0.05 * rng.standard_normal(m.x0.shape)
        f = moes.mmff_forces(m, x)
        h = 1e-5
        fd = np.zeros_like(x)
        for a in range(m.n_atoms):
            for c in range(3):
                xp, xm = x.copy(), x.copy()
                xp[a, c] += h
                xm[a, c] -= h
                fd[a, c] = -(moes.mmff_energy(m, xp) - moes.mmff_energy(m, xm)) / (2 * h)
        assert np.abs(f - fd).max() < 1e-4 * max(1.0, np.abs(f).max()), m.name


def test_minimum_has_small_forces(mols):
    for m in mols:
        assert np.abs(moes.mmff_forces(m, m.x0)).max() < 0.05, m.name


def test_torsion_noise_keeps_bond_lengths_and_changes_dihedrals(mols):
    for m in mols:
        x = moes.torsion_noise(m, 1.0, random_state=3)
        d0 = np.linalg.norm(m.x0[m.bonds[:, 0]] - m.x0[m.bonds[:, 1]], axis=1)
        d1 = np.linalg.norm(x[m.bonds[:, 0]] - x[m.bonds[:, 1]], axis=1)
        assert np.abs(d0 - d1).max() < 1e-9, m.name
        if m.torsions:
            assert np.abs(x - m.x0).max() > 0.1
        else:
            assert np.allclose(x, m.x0)


def test_apply_torsions_sets_the_dihedral_change(mols):
    from rdkit.Chem import rdMolTransforms as T

    m = mols[0]  # butanol: a C-C-C-C torsion
    j, k, side = m.torsions[0]
    i = next(n.GetIdx() for n in m.mol.GetAtomWithIdx(j).GetNeighbors() if n.GetIdx() != k and n.GetAtomicNum() > 1)
    l = next(n.GetIdx() for n in m.mol.GetAtomWithIdx(k).GetNeighbors() if n.GetIdx() != j and n.GetAtomicNum() > 1)
    angles = np.zeros(len(m.torsions))
    angles[0] = 0.7
    x = moes.apply_torsions(m, m.x0, angles)

    def dihedral(coords):
        conf = m.mol.GetConformer()
        for a, p in enumerate(coords):
            conf.SetAtomPosition(a, p.tolist())
        return T.GetDihedralRad(conf, i, j, k, l)

    change = (dihedral(x) - dihedral(m.x0) + np.pi) % (2 * np.pi) - np.pi
    assert abs(abs(change) - 0.7) < 1e-8


def test_frad_default_torsion_scale_is_two_degrees_in_radians(mols):
    # FradNMI draws its torsion noise in degrees (torsion_utils.py): 2 degrees, not 2 rad (issue #24)
    assert moes.FRAD_TORSION_SCALE_DEG == 2.0
    assert moes.FRAD_TORSION_SCALE == pytest.approx(np.pi / 90, rel=1e-12)
    frad = moes.NoiseScheme("frad", torsion_scale=moes.FRAD_TORSION_SCALE)
    m = mols[1]
    scales, _ = frad.scales([m])
    assert scales[0] == pytest.approx(0.0349, abs=1e-4)
    # at Frad's scale the torsion stage barely strains the molecule; at 2 rad it often does
    rise = [moes.mmff_energy(m, moes.torsion_noise(m, scales[0], random_state=k)) - m.e0 for k in range(16)]
    big = [moes.mmff_energy(m, moes.torsion_noise(m, 2.0, random_state=k)) - m.e0 for k in range(16)]
    assert np.median(rise) < 0.5 < np.median(big)


def test_bisection_hits_its_energy_target(mols):
    for m in mols:
        r = moes.sentinel_scale(m, 3.0, tol=0.05, random_state=1)
        if not m.torsions:
            assert r.status == "no torsions"
            continue
        if r.status == "capped":
            assert r.rise < 3.0 and r.scale == 2.0
            continue
        assert r.status == "hit" and abs(r.rise - 3.0) <= 0.05, (m.name, r)
        # the same draws at the returned scale reproduce the rise
        again = moes.sentinel_scale(m, 3.0, tol=0.05, random_state=1)
        assert again.scale == r.scale


def test_sentinel_is_stiffer_on_the_amide_than_frad():
    m = moes.prepare_molecule("CC(=O)NC", "N-methylacetamide", random_state=0)
    sc = moes.NoiseScheme("sentinel", target=2.0)
    scales, res = sc.scales([m], random_state=0)
    assert res[0].status == "hit" and scales[0] < 2.0


def test_coordinate_noise_statistics():
    x = np.zeros((2000, 3))
    xt, eps = moes.coordinate_noise(x, 0.04, random_state=0)
    assert np.allclose(xt, 0.04 * eps)
    assert abs(eps.std() - 1) < 0.03


@pytest.mark.parametrize("k", range(3))
def test_forcenet_is_equivariant(mols, k):
    rng = np.random.default_rng(k)
    net = moes.ForceNet(channels=16, layers=2, n_rbf=8, random_state=k)
    from scipy.spatial.transform import Rotation

    R = Rotation.random(random_state=k).as_matrix()
    t = rng.normal(size=3) * 5
    xs = [m.x0 + 0.05 * rng.standard_normal(m.x0.shape) for m in mols]
    f, s = moes.predict_forces(net, mols, xs)
    f2, s2 = moes.predict_forces(net, mols, [x @ R.T + t for x in xs])
    for a, b in zip(f, f2):
        assert np.abs(a @ R.T - b).max() < 1e-4 * max(1.0, np.abs(a).max())
        assert np.abs(a.sum(0)).max() < 1e-4  # no net force
    assert np.allclose(s, s2, atol=1e-4)


def test_bad_smiles_are_named_and_the_rest_kept():
    with pytest.raises(moes.InvalidSmilesError, match="not-a-smiles") as info:
        moes.parse_smiles(["CCO", "not-a-smiles", "CC"], ["ethanol", "junk", "ethane"])
    assert info.value.batch.names == ["ethanol", "ethane"]
    kept = moes.parse_smiles(["CCO", "C1CC", "CC"], errors="keep")
    assert kept.names == ["CCO", "CC"] and kept.invalid == [(1, "C1CC", "C1CC")]


def test_molecule_that_fails_to_embed_is_named():
    with pytest.raises(ValueError, match="cyclopropyne.*could not be embedded"):
        moes.prepare_molecule("C1#CC1", "cyclopropyne")


def test_pretraining_reduces_the_denoising_loss_and_is_reproducible(mols):
    kw = dict(channels=16, layers=2, n_rbf=8)
    a = moes.pretrain_denoise(
        mols, moes.NoiseScheme("sentinel", refresh_every=20), steps=60, batch_size=4, model_kw=kw, random_state=0
    )
    b = moes.pretrain_denoise(
        mols, moes.NoiseScheme("sentinel", refresh_every=20), steps=60, batch_size=4, model_kw=kw, random_state=0
    )
    assert np.array_equal(a.losses, b.losses)
    assert len(a.scales) == 3
    assert a.losses[-20:].mean() < a.losses[:5].mean()


def test_force_metrics_oracle():
    rng = np.random.default_rng(0)
    F = [rng.normal(size=(5, 3)) for _ in range(4)]
    m = moes.force_metrics([0.5 * f for f in F], F)
    assert abs(m["cosine"] - 1) < 1e-12 and m["scaled_mae"] < 1e-12 and abs(m["scale"] - 2) < 1e-12
    m = moes.force_metrics([-f for f in F], F)
    assert abs(m["cosine"] + 1) < 1e-12


def test_gasteiger_dipole_is_invariant_and_zero_for_benzene(mols):
    from scipy.spatial.transform import Rotation

    m = mols[0]
    R = Rotation.random(random_state=0).as_matrix()
    assert abs(moes.gasteiger_dipole(m) - moes.gasteiger_dipole(m, m.x0 @ R.T + 3.0)) < 1e-9
    assert moes.gasteiger_dipole(mols[3]) < 1e-3


def test_finetune_fits_its_labels(mols):
    y = np.array([moes.gasteiger_dipole(m) for m in mols])
    net = moes.finetune_property(mols, y, steps=150, batch_size=4, model_kw=dict(channels=16, layers=2, n_rbf=8), random_state=0)
    assert np.abs(moes.predict_property(net, mols) - y).mean() < 0.5 * np.abs(y - y.mean()).mean()
    torch.manual_seed(0)


def _harmonic_force(x: np.ndarray, x0: np.ndarray) -> np.ndarray:
    """Force of the harmonic well E(x) = 1/2 min_{R, t} ||x - (x0 R + t)||^2 (unit stiffness).

    By the envelope theorem the gradient is x - x0*, with x0* the minimum optimally
    superposed onto x (Kabsch), so the force is -(x - x0*): zero net force, equivariant.
    """
    xc, yc = x - x.mean(0), x0 - x0.mean(0)
    u, _, vt = np.linalg.svd(yc.T @ xc)
    d = np.sign(np.linalg.det(u @ vt))
    rot = u @ np.diag([1.0, 1.0, d]) @ vt  # the proper rotation taking yc onto xc
    return -(xc - yc @ rot)


def test_denoising_learns_the_force_of_a_harmonic_well():
    """Oracle: a denoiser of Gaussian perturbations x0 + tau*eps learns E[eps | x] = (x - x0)/tau,
    the score of a harmonic well at x0 times -tau, so its learned force -output aligns with
    -grad E; an untrained network of the same kind does not."""
    (m,) = moes.prepare_molecules(["CCO"], random_state=0)
    scheme = moes.NoiseScheme("coord", tau=0.1)
    kw = dict(channels=32, layers=2, n_rbf=16)
    res = moes.pretrain_denoise([m] * 8, scheme, steps=400, batch_size=8, lr=3e-3, model_kw=kw, random_state=0)
    rng = np.random.default_rng(1)
    xs = [moes.coordinate_noise(m.x0, 0.1, random_state=rng)[0] for _ in range(32)]
    true = [_harmonic_force(x, m.x0) for x in xs]
    learned = [-f for f in moes.predict_forces(res.model, [m] * len(xs), xs)[0]]
    untrained = [-f for f in moes.predict_forces(moes.ForceNet(**kw, random_state=0), [m] * len(xs), xs)[0]]
    got = moes.force_metrics(learned, true)
    assert got["cosine"] > 0.8, got
    # the closed form: -output = -(x - x0)/tau = F/tau, so the least-squares scale c is tau itself
    assert got["scale"] == pytest.approx(scheme.tau, rel=0.3), got
    assert abs(moes.force_metrics(untrained, true)["cosine"]) < 0.5


# ---------------------------------------------------------------- fast paths (issue 26) against the forms they replace
def test_cross_matches_numpy_bit_for_bit():
    rng = np.random.default_rng(4)
    for n in (1, 3, 17):
        a, p = rng.standard_normal(3), rng.standard_normal((n, 3))
        assert np.array_equal(moes._cross(a, p), np.cross(a, p))


def test_unchecked_sample_matches_the_checked_one(mols):
    for kind, scale in (("coord", 0.0), ("frad", 0.7), ("frad", 0.0), ("sentinel", 1.3)):
        sc = moes.NoiseScheme(kind, tau=0.05, torsion_scale=scale)
        for m in mols:
            r1, r2 = np.random.default_rng(9), np.random.default_rng(9)
            for _ in range(3):
                a, b = sc.sample(m, scale, random_state=r1), sc._sample(m, scale, r2)
                assert all(np.array_equal(u, v) for u, v in zip(a, b)), (kind, m.name)
            assert r1.random() == r2.random()  # the same number of draws


def test_cached_pairs_are_the_off_diagonal_pairs():
    for n in (1, 2, 5):
        a, c = moes._pairs(n)
        ea, ec = np.nonzero(~np.eye(n, dtype=bool))
        assert np.array_equal(a, ea) and np.array_equal(c, ec) and not a.flags.writeable


def test_one_head_forward_equals_that_head_of_both(mols):
    net = moes.ForceNet(channels=8, layers=2, n_rbf=6, random_state=2)
    z, x, i, j, b = moes._graph(mols, [m.x0 for m in mols])
    f, s = net(z, x, i, j, b, len(mols))
    f1, s1 = net(z, x, i, j, b, len(mols), heads="forces")
    f2, s2 = net(z, x, i, j, b, len(mols), heads="scalar")
    assert s1 is None and f2 is None and torch.equal(f, f1) and torch.equal(s, s2)
    with pytest.raises(ValueError, match="heads"):
        net(z, x, i, j, b, len(mols), heads="energy")


def test_one_head_training_step_equals_the_full_forward(mols):
    # a loss on one head gives the other no gradient: the same parameter update bit for bit
    z, x, i, j, b = moes._graph(mols, [m.x0 + 0.01 for m in mols])
    for heads in ("forces", "scalar"):
        nets = [moes.ForceNet(channels=8, layers=2, n_rbf=6, random_state=3) for _ in range(2)]
        for net, h in zip(nets, ("both", heads)):
            opt = torch.optim.Adam(net.parameters(), lr=1e-2, foreach=True)
            for _ in range(3):
                f, s = net(z, x, i, j, b, len(mols), heads=h)
                loss = (f**2).mean() if heads == "forces" else (s**2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
        for p, q in zip(nets[0].parameters(), nets[1].parameters()):
            assert torch.equal(p, q)


def test_gather_by_index_select_equals_advanced_indexing_with_its_gradient():
    g = torch.Generator().manual_seed(0)
    h = torch.randn(7, 5, generator=g, requires_grad=True)
    idx = torch.randint(0, 7, (40,), generator=g)
    w = torch.randn(40, 5, generator=g)
    (h[idx] * w).sum().backward()
    g1, h.grad = h.grad.clone(), None
    (h.index_select(0, idx) * w).sum().backward()
    assert torch.equal(g1, h.grad)


def test_torsions_match_the_numpy_rodrigues_form_bit_for_bit(mols):
    def old_apply(m, x, angles):  # the form before issue 26: np.cross, np.linalg.norm, np.outer
        x = x.copy()
        for (j, k, side), a in zip(m.torsions, angles):
            axis = x[k] - x[j]
            axis = axis / np.linalg.norm(axis)
            p = x[side] - x[k]
            c, s = math.cos(float(a)), math.sin(float(a))
            x[side] = x[k] + p * c + np.cross(axis, p) * s + np.outer(p @ axis, axis) * (1 - c)
        return x

    rng = np.random.default_rng(5)
    for m in mols:
        for _ in range(3):
            angles = 1.5 * rng.standard_normal(len(m.torsions))
            assert np.array_equal(moes.apply_torsions(m, m.x0, angles), old_apply(m, m.x0, angles)), m.name


def test_dipole_readout_is_the_charge_dipole_of_the_head_and_invariant(mols):
    """readout="dipole": |sum_i (q_i - q_bar)(x_i - x_bar)| with q the head's per-atom output."""
    from icml26.moes.model import _graph

    net = moes.ForceNet(channels=16, layers=2, n_rbf=8, random_state=0, readout="dipole")
    xs = [m.x0 for m in mols]
    z, x, i, j, b = _graph(mols, xs)
    with torch.no_grad():
        q = net.head(net.encode(z, x, i, j)[0]).squeeze(1).numpy()
        _, s = net(z, x, i, j, b, len(mols))
    sizes = np.cumsum([m.n_atoms for m in mols])[:-1]
    for qm, xm, sm in zip(np.split(q, sizes), xs, s.numpy()):
        mu = ((qm - qm.mean())[:, None] * (xm - xm.mean(0))).sum(0)
        assert sm == pytest.approx(np.linalg.norm(mu), rel=1e-4, abs=1e-4)
    rot = np.linalg.qr(np.random.default_rng(0).standard_normal((3, 3)))[0]
    _, s2 = moes.predict_forces(net, mols, [m.x0 @ rot.T + 3.0 for m in mols])
    assert np.allclose(s.numpy(), s2, atol=1e-4)
    with pytest.raises(ValueError, match="readout='mean'"):
        moes.ForceNet(readout="mean")


def test_dipole_readout_fits_gasteiger_dipoles(mols):
    y = np.array([moes.gasteiger_dipole(m) for m in mols])
    kw = dict(steps=150, batch_size=4, model_kw=dict(channels=16, layers=2, n_rbf=8), random_state=0)
    err = {
        r: np.abs(moes.predict_property(moes.finetune_property(mols, y, readout=r, **kw), mols) - y).mean() for r in moes.READOUTS
    }
    assert err["dipole"] < 0.5 * np.abs(y - y.mean()).mean()


def test_denoising_auxiliary_trains_the_force_head_only_when_weighted(mols):
    """Noisy Nodes in the fine-tune: the force head gets a gradient only with denoise_weight > 0."""
    y = np.array([moes.gasteiger_dipole(m) for m in mols])
    init = moes.ForceNet(channels=16, layers=2, n_rbf=8, random_state=0)
    kw = dict(init=init, steps=5, batch_size=4, tau=0.005, random_state=0)
    w0 = [p.detach().clone() for p in init.force_mlp.parameters()]
    plain = moes.finetune_property(mols, y, **kw)
    aux = moes.finetune_property(mols, y, denoise_weight=0.1, **kw)
    assert all(torch.equal(a, p) for a, p in zip(w0, plain.force_mlp.parameters()))
    assert not all(torch.equal(a, p) for a, p in zip(w0, aux.force_mlp.parameters()))
    with pytest.raises(ValueError, match="tau > 0"):
        moes.finetune_property(mols, y, init=init, steps=2, denoise_weight=0.1)
