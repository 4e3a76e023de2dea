"""Tests of icml26.lockgp: substitution matrices, LOCK kernels, baselines, GP wiring, data."""

from __future__ import annotations

import numpy as np
import pytest
import torch

gpytorch = pytest.importorskip("gpytorch")
pytest.importorskip("Bio")

from icml26 import lockgp as lg  # noqa: E402

torch.set_num_threads(1)
L = 7
A = len(lg.ALPHABET)


def _random_seqs(n: int, length: int = L, seed: int = 0, gaps: bool = True) -> list[str]:
    rng = np.random.default_rng(seed)
    letters = np.array(list(lg.ALPHABET if gaps else lg.AMINO_ACIDS))
    return ["".join(r) for r in letters[rng.integers(0, len(letters), size=(n, length))]]


def _flat(seqs: list[str]) -> torch.Tensor:
    return lg.encode_one_hot(seqs).flatten(-2)  # (N, L*A)


def _dense(k, x1, x2=None) -> np.ndarray:
    with torch.no_grad():
        out = k(x1, x2) if x2 is not None else k(x1)
        return out.to_dense().numpy()


@pytest.fixture(scope="module")
def Bt() -> np.ndarray:
    return lg.normalize_substitution_matrix(lg.blosum50())


# ---------------------------------------------------------------- substitution matrices


def test_blosum50_known_entries_and_gap_row():
    B = lg.blosum50()
    idx = {a: i for i, a in enumerate(lg.ALPHABET)}
    assert B.shape == (21, 21) and np.array_equal(B, B.T)
    # a few textbook BLOSUM50 scores
    assert B[idx["A"], idx["A"]] == 5 and B[idx["W"], idx["W"]] == 15 and B[idx["C"], idx["C"]] == 13
    assert B[idx["I"], idx["V"]] == 4 and B[idx["D"], idx["E"]] == 2 and B[idx["F"], idx["Y"]] == 4
    assert np.all(B[idx["-"], :20] == -5) and B[idx["-"], idx["-"]] == 1


def test_blosum50_bad_alphabet():
    with pytest.raises(ValueError, match="not in BLOSUM50"):
        lg.blosum50("ACB")
    with pytest.raises(ValueError, match="repeats"):
        lg.blosum50("AA")


def test_normalisation_matches_formula(Bt):
    B = lg.blosum50()
    # brute force, entry by entry
    S = np.array([[B[a, b] - 0.5 * (B[a, a] + B[b, b]) for b in range(A)] for a in range(A)])
    med = sorted(S.ravel())[S.size // 2]  # 441 entries: the middle one
    assert med == -9.0  # so the scale is 0.25 / 9, as in the released code
    np.testing.assert_allclose(Bt, S * 0.25 / 9.0, rtol=0, atol=1e-15)
    assert np.all(np.diag(Bt) == 0) and np.median(Bt) == pytest.approx(-0.25)


def test_normalisation_bad_input():
    with pytest.raises(ValueError, match="square"):
        lg.normalize_substitution_matrix(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="symmetric"):
        lg.normalize_substitution_matrix(np.array([[1.0, 2.0], [0.0, 1.0]]))
    with pytest.raises(ValueError, match="target"):
        lg.normalize_substitution_matrix(np.eye(3), target=0.0)
    with pytest.raises(ValueError, match="gamma"):
        lg.correlation_matrix(np.eye(3), -1.0)


@pytest.mark.parametrize("gamma", [1e-3, 0.01, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0, 1e3])
def test_hadamard_powers_stay_psd(Bt, gamma):
    C = lg.correlation_matrix(Bt, gamma)
    np.testing.assert_allclose(np.diag(C), 1.0)
    assert np.linalg.eigvalsh(C).min() >= -1e-12


def test_unnormalised_blosum_is_not_psd_but_its_embedding_is_the_psd_part():
    B = lg.blosum50()
    lam, V = np.linalg.eigh(B)
    assert lam.min() < 0  # the raw log-odds matrix is indefinite ...
    E = lg.blosum_embedding(B)
    np.testing.assert_allclose(E @ E.T, (V * np.clip(lam, 0, None)) @ V.T, atol=1e-10)  # ... E E^T is its PSD part


# ---------------------------------------------------------------- encoding


def test_encode_one_hot_shape_and_content():
    x = lg.encode_one_hot(["AC-", "WWY"])
    assert x.shape == (2, 3, 21) and x.dtype == torch.float64
    assert torch.all(x.sum(-1) == 1)
    assert lg.encode_indices(["AC-"]).tolist() == [[0, 4, 20]]


@pytest.mark.parametrize(
    "seqs, err, match",
    [
        (["ACD", "AC"], ValueError, "sequence 1 has length 2, expected 3"),
        (["ACD", "ACX"], ValueError, r"unknown token\(s\) \['X'\]"),
        (["acd"], ValueError, "unknown token"),
        (["ACÉ"], ValueError, "unknown token"),
        ([], ValueError, "empty"),
        (["ACD", 3], TypeError, "sequence 1 is int"),
        ("ACD", TypeError, "not a single string"),
    ],
)
def test_encode_bad_sequences(seqs, err, match):
    with pytest.raises(err, match=match):
        lg.encode_one_hot(seqs)


def test_kernel_rejects_wrong_feature_count():
    k = lg.LinearGlobalKernel(L)
    with pytest.raises(ValueError, match="expected num_positions"):
        k(torch.zeros(3, L * A + 1)).to_dense()
    with pytest.raises(ValueError, match="num_positions"):
        lg.LinearGlobalKernel(0)
    with pytest.raises(ValueError, match="unknown model"):
        lg.build_kernel("rbf", L)


# ---------------------------------------------------------------- kernels vs brute force


def _brute_lin(s1, s2, Bt, gamma):
    C = np.exp(gamma * Bt)
    i1, i2 = lg.encode_indices(s1), lg.encode_indices(s2)
    return np.array([[sum(C[a[l], b[l]] for l in range(len(a))) for b in i2] for a in i1])


def _brute_nl(s1, s2, Bt, gamma, gamma_l):
    i1, i2 = lg.encode_indices(s1), lg.encode_indices(s2)
    return np.array([[np.prod([np.exp(gamma * gamma_l[l] * Bt[a[l], b[l]]) for l in range(len(a))]) for b in i2] for a in i1])


def _brute_tanimoto(s1, s2):
    E = lg.blosum_embedding(lg.blosum50())
    f1 = [np.concatenate([E[t] for t in r]) for r in lg.encode_indices(s1)]
    f2 = [np.concatenate([E[t] for t in r]) for r in lg.encode_indices(s2)]
    return np.array([[a @ b / (a @ a + b @ b - a @ b) for b in f2] for a in f1])


def _brute_hamming_imq(s1, s2, alpha, beta):
    d = np.array([[sum(p != q for p, q in zip(a, b)) for b in s2] for a in s1], dtype=float)
    return ((1 + alpha) / (alpha + d)) ** beta


def test_linear_global_matches_brute_force(Bt):
    s1, s2 = _random_seqs(6, seed=1), _random_seqs(4, seed=2)
    k = lg.LinearGlobalKernel(L).double()
    k.log_gamma.data.fill_(np.log(0.7))
    np.testing.assert_allclose(_dense(k, _flat(s1), _flat(s2)), _brute_lin(s1, s2, Bt, 0.7), rtol=1e-12)
    np.testing.assert_allclose(np.diag(_dense(k, _flat(s1))), L)  # k(x, x) = L


def test_nonlinear_local_matches_brute_force(Bt):
    s1, s2 = _random_seqs(6, seed=3), _random_seqs(5, seed=4)
    k = lg.NonlinearLocalKernel(L).double()
    gl = np.exp(np.random.default_rng(0).normal(0, 0.5, L))
    k.log_gamma.data.fill_(np.log(1.3))
    k.log_local.data.copy_(torch.from_numpy(np.log(gl)))
    np.testing.assert_allclose(_dense(k, _flat(s1), _flat(s2)), _brute_nl(s1, s2, Bt, 1.3, gl), rtol=1e-12)
    np.testing.assert_allclose(np.diag(_dense(k, _flat(s1))), 1.0)  # k(x, x) = 1 because B~_aa = 0


def test_lock_matches_brute_force(Bt):
    s1, s2 = _random_seqs(5, seed=5), _random_seqs(3, seed=6)
    k = lg.build_lock_kernel(L).double()
    prod, lin2 = k.kernels[0], k.kernels[1].base_kernel
    nl, lin1 = prod.base_kernel.kernels
    gl = np.linspace(0.5, 2.0, L)
    nl.log_gamma.data.fill_(np.log(0.4))
    nl.log_local.data.copy_(torch.from_numpy(np.log(gl)))
    lin1.log_gamma.data.fill_(np.log(2.0))
    lin2.log_gamma.data.fill_(np.log(0.1))
    prod.outputscale = torch.tensor(0.8, dtype=torch.float64)
    k.kernels[1].outputscale = torch.tensor(0.3, dtype=torch.float64)
    expected = 0.8 * _brute_nl(s1, s2, Bt, 0.4, gl) * _brute_lin(s1, s2, Bt, 2.0) + 0.3 * _brute_lin(s1, s2, Bt, 0.1)
    np.testing.assert_allclose(_dense(k, _flat(s1), _flat(s2)), expected, rtol=1e-10)


def test_tanimoto_matches_brute_force():
    s1, s2 = _random_seqs(5, seed=7), _random_seqs(4, seed=8)
    k = lg.TanimotoBlosumKernel(L).double()
    np.testing.assert_allclose(_dense(k, _flat(s1), _flat(s2)), _brute_tanimoto(s1, s2), rtol=1e-10)
    np.testing.assert_allclose(np.diag(_dense(k, _flat(s1))), 1.0)


def test_fast_hamming_matches_gpytorch_and_brute_force():
    s1, s2 = _random_seqs(6, seed=9), _random_seqs(4, seed=10)
    ours = lg.FastHammingIMQKernel(vocab_size=A).double()
    ref = gpytorch.kernels.HammingIMQKernel(vocab_size=A).double()
    for k in (ours, ref):
        k.alpha = torch.tensor(0.6, dtype=torch.float64)
        k.beta = torch.tensor(1.7, dtype=torch.float64)
    x1, x2 = _flat(s1), _flat(s2)
    np.testing.assert_allclose(_dense(ours, x1, x2), _dense(ref, x1, x2), rtol=1e-12)
    np.testing.assert_allclose(_dense(ours, x1, x2), _brute_hamming_imq(s1, s2, 0.6, 1.7), rtol=1e-12)
    np.testing.assert_allclose(_dense(ours, x1), _dense(ref, x1), rtol=1e-12)


def test_linear_onehot_baseline_is_identity_count():
    s1 = _random_seqs(5, seed=11)
    k = lg.build_kernel("linear", L).double()
    k.outputscale = 1.0
    k.base_kernel.variance = 1.0
    same = np.array([[sum(p == q for p, q in zip(a, b)) for b in s1] for a in s1], dtype=float)
    np.testing.assert_allclose(_dense(k, _flat(s1)), same, rtol=1e-12)


@pytest.mark.parametrize("log_g", [-3.0, -1.0, 0.0, 1.0, 2.5])
def test_gram_matrices_psd_over_exponent_grid(log_g):
    seqs = _random_seqs(40, seed=12)
    x = _flat(seqs)
    rng = np.random.default_rng(int(10 * log_g) + 50)
    k = lg.build_lock_kernel(L).double()
    for mod in k.modules():
        if isinstance(mod, (lg.LinearGlobalKernel, lg.NonlinearLocalKernel)):
            mod.log_gamma.data.fill_(log_g + rng.normal(0, 0.5))
        if isinstance(mod, lg.NonlinearLocalKernel):
            mod.log_local.data.copy_(torch.from_numpy(rng.normal(0, 0.5, L)))
    for name, kern in [("lock", k), ("k_lin", k.kernels[1].base_kernel), ("k_nl", k.kernels[0].base_kernel.kernels[0])]:
        K = _dense(kern, x)
        lam = np.linalg.eigvalsh(K)
        assert lam.min() >= -1e-10 * max(1.0, lam.max()), (name, lam.min())


# ---------------------------------------------------------------- gpytorch conventions


@pytest.mark.parametrize("name", ["lock", "tanimoto", "hamming", "lock-lin", "lock-nl", "linear"])
def test_batch_inputs_and_diag(name):
    xb = torch.stack([_flat(_random_seqs(5, seed=20)), _flat(_random_seqs(5, seed=21))])  # (2, 5, L*A)
    k = lg.build_kernel(name, L).double()
    with torch.no_grad():
        Kb = k(xb).to_dense()
        assert Kb.shape == (2, 5, 5)
        for b in range(2):
            torch.testing.assert_close(Kb[b], k(xb[b]).to_dense(), rtol=1e-10, atol=1e-12)
        torch.testing.assert_close(k(xb, diag=True), Kb.diagonal(dim1=-2, dim2=-1), rtol=1e-10, atol=1e-12)
        # diag with x1 != x2 pairs rows up
        x1, x2 = xb[0], xb[1]
        torch.testing.assert_close(k(x1, x2, diag=True), k(x1, x2).to_dense().diagonal(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("cls", [lg.LinearGlobalKernel, lg.NonlinearLocalKernel])
def test_batch_shape_hyperparameters(cls):
    x = _flat(_random_seqs(6, seed=30))
    kb = cls(L, batch_shape=torch.Size([3])).double()
    assert kb.log_gamma.shape == (3, 1)
    kb.log_gamma.data.copy_(torch.tensor([[-1.0], [0.0], [1.0]]))
    with torch.no_grad():
        Kb = kb(x).to_dense()  # non-batch x broadcasts over the kernel's batch
        assert Kb.shape == (3, 6, 6)
        for b, g in enumerate([-1.0, 0.0, 1.0]):
            k1 = cls(L).double()
            k1.log_gamma.data.fill_(g)
            torch.testing.assert_close(Kb[b], k1(x).to_dense(), rtol=1e-12, atol=1e-12)
        with pytest.raises(ValueError, match="last_dim_is_batch"):
            kb.forward(x, x, last_dim_is_batch=True)


def test_priors_are_the_papers():
    k = lg.build_lock_kernel(L)
    priors = {name: prior for name, _, prior, _, _ in k.named_priors()}
    normal = [p for n, p in priors.items() if "log_gamma_prior" in n]
    assert len(normal) == 3 and all(float(p.scale) == 1.0 and float(p.loc) == 0.0 for p in normal)
    local = [p for n, p in priors.items() if "log_local_prior" in n]
    assert len(local) == 1 and float(local[0].scale) == 0.5
    gammas = [p for n, p in priors.items() if "outputscale_prior" in n]
    assert len(gammas) == 2 and all(float(p.concentration) == 2.0 and float(p.rate) == 2.0 for p in gammas)


# ---------------------------------------------------------------- GP wiring


def test_gp_posterior_mean_matches_closed_form():
    land = lg.make_landscape(40, length=L, max_mutations=3, random_state=3)
    seqs, y = land.sequences, land.y
    gp = lg.GPRegressor("lock-lin", max_iter=5).fit(seqs[:30], y[:30])
    mean, var = gp.predict(seqs[30:])
    # closed form with the fitted hyper-parameters, in numpy, on the standardised scale
    m = gp.model_
    with torch.no_grad():
        K = m.covar_module(_flat(seqs[:30])).to_dense().numpy()
        Ks = m.covar_module(_flat(seqs[30:]), _flat(seqs[:30])).to_dense().numpy()
        kss = np.diag(m.covar_module(_flat(seqs[30:])).to_dense().numpy())
        noise, mu0 = float(m.likelihood.noise), float(m.mean_module.constant)
    ys = (y[:30] - y[:30].mean()) / y[:30].std(ddof=1)
    Kn = K + noise * np.eye(30)
    mean_cf = mu0 + Ks @ np.linalg.solve(Kn, ys - mu0)
    var_cf = kss - np.einsum("ij,ji->i", Ks, np.linalg.solve(Kn, Ks.T)) + noise
    sd = y[:30].std(ddof=1)
    np.testing.assert_allclose(mean, mean_cf * sd + y[:30].mean(), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(var, var_cf * sd**2, rtol=1e-5, atol=1e-10)


def test_map_fit_lowers_the_objective_and_is_deterministic():
    land = lg.make_landscape(60, length=L, max_mutations=3, random_state=4)
    x, y = lg.encode_one_hot(land.sequences), torch.tensor((land.y - land.y.mean()) / land.y.std())
    model = lg.ExactGPModel(x.flatten(-2), y, lg.build_kernel("lock", L)).double()
    model.train()
    with torch.no_grad():
        before = float(lg._negative_log_posterior(model))
    info = lg.fit_map(model, max_iter=30)
    assert info["loss"] < before and info["n_failed"] == 0
    a = lg.GPRegressor("lock", max_iter=30).fit(land.sequences, land.y).predict(land.sequences[:5])
    b = lg.GPRegressor("lock", max_iter=30).fit(land.sequences, land.y).predict(land.sequences[:5])
    np.testing.assert_array_equal(a[0], b[0])


def test_regressor_bad_input():
    with pytest.raises(ValueError, match="unknown kernel"):
        lg.GPRegressor("rbf").fit(["ACD", "ACE"], [1.0, 2.0])
    with pytest.raises(ValueError, match="y must have shape"):
        lg.GPRegressor().fit(["ACD", "ACE"], [1.0])
    with pytest.raises(ValueError, match="not fitted"):
        lg.GPRegressor().predict(["ACD"])
    with pytest.raises(ValueError, match="max_iter"):
        lg.fit_map(None, max_iter=0)  # type: ignore[arg-type]


def test_evaluate_closed_form():
    y = np.array([1.0, 2.0, 3.0, 5.0])
    out = lg.evaluate(y, y, np.full(4, 0.5))
    assert out["spearman"] == pytest.approx(1.0) and out["pearson"] == pytest.approx(1.0) and out["mae"] == 0.0
    assert out["nll"] == pytest.approx(0.5 * np.log(2 * np.pi * 0.5))
    out = lg.evaluate(y, -y, np.ones(4))
    assert out["spearman"] == pytest.approx(-1.0) and out["mae"] == pytest.approx(np.mean(2 * y))
    with pytest.raises(ValueError, match="positive"):
        lg.evaluate(y, y, np.zeros(4))


# ---------------------------------------------------------------- data


def test_landscapes_are_seeded_paired_and_well_formed():
    a = lg.make_landscape(200, kind="blosum", random_state=5)
    b = lg.make_landscape(200, kind="blosum", random_state=5)
    c = lg.make_landscape(200, kind="control", random_state=5)
    assert a.sequences == b.sequences and np.array_equal(a.y, b.y)
    assert a.sequences == c.sequences and not np.allclose(a.y, c.y)  # same variants, different effects
    assert len(set(a.sequences)) == 200
    wt = a.info["wild_type"]
    d = np.array([sum(p != q for p, q in zip(s, wt)) for s in a.sequences])
    assert np.array_equal(d, a.info["n_mutations"]) and d.min() >= 1 and d.max() <= 6
    eff = a.info["effects"]
    idx = lg.encode_indices([wt])[0]
    assert np.all(eff[np.arange(len(wt)), idx] == 0)  # the wild type has no effect
    assert 0.9 < a.info["r2_ceiling"] <= 1.0


def test_blosum_landscape_effects_follow_blosum_and_control_does_not():
    # correlation over amino-acid pairs between effect covariance and BLOSUM correlation
    E = lg._blosum_correlation_embedding()
    R = E @ E.T
    iu = np.triu_indices(20, 1)
    covs = {}
    for kind in ("blosum", "control"):
        phis = []
        for s in range(40):
            land = lg.make_landscape(50, kind=kind, length=10, random_state=s)
            eff = land.info["effects"] / land.info["weights"][:, None]
            phis.append(eff - eff.mean(1, keepdims=True))
        P = np.concatenate(phis)  # (400, 20)
        covs[kind] = np.corrcoef(P.T)[iu]
    assert np.corrcoef(covs["blosum"], R[iu])[0, 1] > 0.8
    assert abs(np.corrcoef(covs["control"], R[iu])[0, 1]) < 0.3


def test_make_landscape_bad_input():
    with pytest.raises(ValueError, match="kind"):
        lg.make_landscape(10, kind="random")
    with pytest.raises(ValueError, match="max_mutations"):
        lg.make_landscape(10, length=4, max_mutations=5)


def test_load_landscape_roundtrip_and_errors(tmp_path):
    p = tmp_path / "land.csv"
    p.write_text("sequence,fitness\nACDE,1.5\nACDF,-0.5\n")
    land = lg.load_landscape(p)
    assert land.sequences == ["ACDE", "ACDF"] and land.y.tolist() == [1.5, -0.5]
    with pytest.raises(ValueError, match=r"column 'score' not in land.csv; columns are \['sequence', 'fitness'\]"):
        lg.load_landscape(p, value_col="score")
    (tmp_path / "bad.csv").write_text("sequence,fitness\nACDE,1\nACD,2\n")
    with pytest.raises(ValueError, match="sequence 1 has length 3"):
        lg.load_landscape(tmp_path / "bad.csv")
    (tmp_path / "nan.csv").write_text("sequence,fitness\nACDE,1\nACDF,\n")
    with pytest.raises(ValueError, match="row 1"):
        lg.load_landscape(tmp_path / "nan.csv")
    with pytest.raises(FileNotFoundError, match="never downloads"):
        lg.load_landscape(tmp_path / "missing.csv")


def test_learning_curve_table():
    df = lg.learning_curve(
        {"b": lambda s: lg.make_landscape(40, length=L, max_mutations=3, random_state=s)},
        ["linear", "lock-lin"],
        [8, 16],
        n_test=20,
        n_reps=1,
        max_iter=10,
        progress=False,
    )
    assert len(df) == 4 and set(df.columns) >= {"spearman", "pearson", "mae", "nll", "model", "n_train"}
    assert df[["spearman", "pearson", "mae", "nll"]].notna().all().all()


def test_encode_bad_alphabet():
    with pytest.raises(ValueError, match="distinct ASCII"):
        lg.encode_indices(["AA"], alphabet="AÉ")
    with pytest.raises(ValueError, match="distinct ASCII"):
        lg.encode_indices(["AA"], alphabet="AA")
