"""Bad input to icml26.moes: every public callable rejects out-of-domain input with a clear
ValueError/TypeError raised by icml26 itself (unparsable SMILES named, the rest kept; a molecule
that cannot be embedded named; wrong shapes, NaN/inf, negative sizes, wrong types)."""

from __future__ import annotations

import numpy as np
import pytest
from badinput import covers, exempt, rejects
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from icml26 import moes

FAST = settings(max_examples=20, deadline=None, derandomize=True)
M = moes.prepare_molecule("CCCO", "propanol", random_state=0)
NET = moes.ForceNet(channels=8, layers=1, n_rbf=4, random_state=0)

exempt("moes.molecules.InvalidSmilesError", "an exception type raised by parse_smiles; it carries the parsed rest of a batch")
exempt("moes.molecules.ParsedBatch", "a result container built by parse_smiles")
exempt("moes.molecules.Molecule", "a result container built by prepare_molecule (its inputs are checked there)")
exempt("moes.noise.SentinelResult", "a result container built by sentinel_scale")
exempt("moes.train.PretrainResult", "a result container built by pretrain_denoise")

bad_reals = st.sampled_from([np.nan, np.inf, -np.inf, -1.0])
bad_sizes = st.integers(-5, 0)
not_numbers = st.sampled_from(["3", None, [1, 2], {"a": 1}])
bad_coords = st.one_of(
    arrays(float, st.tuples(st.integers(0, 5), st.integers(1, 4))).filter(lambda a: a.shape != (M.n_atoms, 3)),
    st.just(np.full((M.n_atoms, 3), np.nan)),
    st.just(np.full((M.n_atoms, 3), np.inf)),
    st.just("coords"),
)


@covers("moes.molecules.parse_smiles", "moes.molecules.prepare_molecules")
def test_unparsable_smiles_are_named_and_the_rest_kept():
    exc = rejects(moes.parse_smiles, ["CCO", "C(C", "CC"], ["ethanol", "broken", "ethane"], match="broken.*C\\(C")
    assert exc.batch.names == ["ethanol", "ethane"]
    exc = rejects(moes.prepare_molecules, ["CCO", "xyz"], match="xyz")
    assert len(exc.batch.mols) == 1
    rejects(moes.parse_smiles, "CCO", match="sequence")
    rejects(moes.parse_smiles, ["CCO"], errors="ignore", match="errors")
    rejects(moes.parse_smiles, ["CCO", "CC"], ["one"], match="one name per SMILES")
    assert len(moes.prepare_molecules(["CCO", "xyz"], errors="keep")) == 1


@covers("moes.molecules.prepare_molecule")
def test_molecule_that_cannot_be_embedded_or_typed():
    rejects(moes.prepare_molecule, "C1#CC1", "cyclopropyne", match="cyclopropyne.*could not be embedded")
    rejects(moes.prepare_molecule, "[Xe]", match="elements")
    rejects(moes.prepare_molecule, 42, match="rdkit Mol or a SMILES")
    rejects(moes.prepare_molecule, "CC", max_iters=0, match="max_iters")


@covers("moes.molecules.load_molecule_list")
def test_missing_or_changed_list(tmp_path):
    rejects(moes.load_molecule_list, tmp_path / "nope.tsv", match="does not exist")
    f = tmp_path / "m.tsv"
    f.write_text("name\tsmiles\nx\tC\n")
    rejects(moes.load_molecule_list, f, match="columns")
    rejects(moes.load_molecule_list, f, sha256="0" * 64, match="SHA-256")
    rejects(moes.load_molecule_list, 3, match="str or Path")


@covers("moes.molecules.mmff_energy", "moes.molecules.mmff_forces", "moes.molecules.gasteiger_dipole")
@FAST
@given(x=bad_coords)
def test_energy_and_forces_reject_bad_coordinates(x):
    rejects(moes.mmff_energy, M, x)
    rejects(moes.mmff_forces, M, x)
    rejects(moes.gasteiger_dipole, M, x)
    rejects(moes.mmff_energy, "propanol", M.x0, match="moes.Molecule")


@covers("moes.noise.apply_torsions", "moes.noise.torsion_noise")
@FAST
@given(scale=bad_reals, n=st.integers(0, 6).filter(lambda k: k != len(M.torsions)))
def test_torsion_inputs(scale, n):
    rejects(moes.torsion_noise, M, scale, random_state=0)
    rejects(moes.apply_torsions, M, M.x0, np.zeros(n), match="rotatable")
    rejects(moes.apply_torsions, M, M.x0, np.full(len(M.torsions), np.nan))
    rejects(moes.torsion_noise, M, 1.0, random_state="seed")


@covers("moes.noise.coordinate_noise")
@FAST
@given(
    tau=st.one_of(bad_reals, st.just(0.0)),
    x=arrays(float, st.tuples(st.integers(0, 3), st.integers(1, 5))).filter(lambda a: a.shape[1] != 3 or a.shape[0] == 0),
)
def test_coordinate_noise_inputs(tau, x):
    rejects(moes.coordinate_noise, M.x0, tau, random_state=0)
    rejects(moes.coordinate_noise, x, 0.04, random_state=0)
    rejects(moes.coordinate_noise, [[1, 2], [3]], 0.04, match="array of numbers")


@covers("moes.noise.sentinel_scale")
@FAST
@given(bad=bad_reals, size=bad_sizes)
def test_sentinel_inputs(bad, size):
    rejects(moes.sentinel_scale, M, bad)
    rejects(moes.sentinel_scale, M, 3.0, s_max=bad)
    rejects(moes.sentinel_scale, M, 3.0, tol=bad)
    rejects(moes.sentinel_scale, M, 3.0, n_samples=size)
    rejects(moes.sentinel_scale, M, 3.0, max_iter=size)


@covers("moes.noise.NoiseScheme", "moes.noise.high_energy_fraction")
@FAST
@given(bad=bad_reals, size=bad_sizes)
def test_scheme_inputs(bad, size):
    rejects(moes.NoiseScheme, "gaussian", match="noise scheme")
    rejects(moes.NoiseScheme, "frad", tau=bad)
    rejects(moes.NoiseScheme, "sentinel", target=bad)
    rejects(moes.NoiseScheme, "frad", refresh_every=size)
    sc = moes.NoiseScheme("frad")
    rejects(moes.high_energy_fraction, [M], sc, [bad])
    rejects(moes.high_energy_fraction, [M], sc, [1.0, 2.0], match="one finite")
    rejects(moes.high_energy_fraction, [M], sc, [1.0], n_samples=size)
    rejects(moes.high_energy_fraction, [M], "frad", [1.0], match="NoiseScheme")


@covers("moes.model.ForceNet")
@FAST
@given(size=bad_sizes, bad=st.one_of(bad_reals, st.just(0.0)))
def test_forcenet_inputs(size, bad):
    rejects(moes.ForceNet, channels=size)
    rejects(moes.ForceNet, layers=size)
    rejects(moes.ForceNet, cutoff=bad)
    rejects(moes.ForceNet, n_rbf=1)


@covers("moes.model.predict_forces", "moes.train.predict_property", "moes.molecules.embed_conformers")
@FAST
@given(x=bad_coords, size=bad_sizes)
def test_prediction_inputs(x, size):
    rejects(moes.predict_forces, NET, [M], [x])
    rejects(moes.predict_forces, NET, [M], [M.x0, M.x0], match="one coordinate array")
    rejects(moes.predict_forces, NET, [], [], match="at least one")
    rejects(moes.predict_forces, "net", [M], [M.x0], match="ForceNet")
    rejects(moes.predict_property, NET, [M], match="finetune_property")
    rejects(moes.embed_conformers, M, size)


@covers("moes.train.pretrain_denoise", "moes.train.finetune_property")
@FAST
@given(size=bad_sizes, bad=st.one_of(bad_reals, st.just(0.0)))
def test_training_inputs(size, bad):
    sc = moes.NoiseScheme("coord")
    rejects(moes.pretrain_denoise, [], sc, match="at least one molecule")
    rejects(moes.pretrain_denoise, [M], "coord", match="NoiseScheme")
    rejects(moes.pretrain_denoise, [M], sc, steps=size)
    rejects(moes.pretrain_denoise, [M], sc, lr=bad)
    rejects(moes.finetune_property, [M, M], [1.0], match="one label per molecule")
    rejects(moes.finetune_property, [M, M], [1.0, np.nan], match="NaN")
    rejects(moes.finetune_property, [M, M], [1.0, 2.0], steps=size)
    rejects(moes.finetune_property, [M, M], [1.0, 2.0], init="net", match="ForceNet")


@covers("moes.train.force_metrics")
@FAST
@given(n=st.integers(1, 4))
def test_force_metric_inputs(n):
    F = [np.ones((n, 3))]
    rejects(moes.force_metrics, F, [], match="same non-zero number")
    rejects(moes.force_metrics, F, [np.ones((n + 1, 3))], match="shape")
    rejects(moes.force_metrics, F, [np.full((n, 3), np.nan)], match="NaN")
    rejects(moes.force_metrics, F, [np.zeros((n, 3))], match="all zero")


@pytest.mark.parametrize("bad", ["x", 1.5, [1, 2]])
def test_random_state_type(bad):
    rejects(moes.coordinate_noise, M.x0, 0.04, random_state=bad)


@covers("moes.molecules.mmff_energy", "moes.molecules.mmff_forces")
def test_coincident_atoms_are_refused_not_nan():
    # two atoms at one point used to give a NaN energy
    x = M.x0.copy()
    x[1] = x[0]
    rejects(moes.mmff_energy, M, x, match=r"not finite.*atoms 0 and 1 are 0 Å apart")
    rejects(moes.mmff_forces, M, x, match=r"forces.*atoms 0 and 1")
    assert np.isfinite(moes.mmff_energy(M, M.x0))
