"""Tests of icml26.lut: oracles for the EFD gradient, exact bit-level inference, counts, errors.

The reference library (torch-dwn) builds CUDA/C++ extensions at install time and its CPU
path raises "not implemented", so it cannot run here; the oracles are the EFD sum written
term by term, finite differences of the forward pass, exhaustive enumeration of all
inputs of small networks, and hand counts.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from icml26 import lut

torch.set_num_threads(1)


def all_bits(k: int) -> np.ndarray:
    """Every k-bit input, shape (2**k, k)."""
    return np.array(list(itertools.product([0, 1], repeat=k)), dtype=np.float32)


# ---------------------------------------------------------------- thermometer
def test_thermometer_uniform_and_distributive_thresholds():
    X = np.array([[0.0, 10.0], [4.0, 20.0], [8.0, 30.0], [12.0, 40.0]])
    enc = lut.ThermometerEncoder(3, method="uniform", feature_wise=True).fit(X)
    np.testing.assert_allclose(enc.thresholds_, [[3, 6, 9], [17.5, 25, 32.5]])
    bits = enc.transform(X)
    assert bits.shape == (4, 2, 3)
    np.testing.assert_array_equal(bits[:, 0], [[0, 0, 0], [1, 0, 0], [1, 1, 0], [1, 1, 1]])
    # thermometer property: bits are monotone (1s first)
    assert (np.diff(bits.astype(int), axis=2) <= 0).all()
    d = lut.ThermometerEncoder(1, method="distributive", feature_wise=True).fit(X)
    np.testing.assert_allclose(d.thresholds_[:, 0], [8.0, 30.0])  # sorted[int(4 * 1/2)]
    g = lut.ThermometerEncoder(3, feature_wise=False).fit(X)
    assert np.allclose(g.thresholds_[0], g.thresholds_[1])


def test_thermometer_errors():
    with pytest.raises(ValueError, match="num_bits=0"):
        lut.ThermometerEncoder(0)
    with pytest.raises(ValueError, match="method='gauss'"):
        lut.ThermometerEncoder(2, method="gauss")
    enc = lut.ThermometerEncoder(2).fit(np.zeros((3, 4)))
    with pytest.raises(ValueError, match=r"\(n_samples, 4\)"):
        enc.transform(np.zeros((3, 5)))
    with pytest.raises(RuntimeError, match="not fitted"):
        lut.ThermometerEncoder(2).transform(np.zeros((3, 4)))


# ---------------------------------------------------------------- EFD gradient
@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_efd_tables_match_the_sum_term_by_term(n):
    g = torch.Generator().manual_seed(n)
    L = torch.rand(3, 2**n, generator=g) * 2 - 1
    for alpha, beta in [(0.5 * 0.75 ** (n - 1), 1 / 3), (0.3, 0.7)]:
        fast = lut.efd_input_tables(L, alpha, beta).numpy()
        slow = lut.efd_input_tables_bruteforce(L.numpy(), alpha, beta)
        np.testing.assert_allclose(fast, slow, atol=1e-6)


def _toy_layer(alpha=None, beta=None, n=3):
    mapping = torch.tensor([[0, 1, 2], [3, 1, 4]])[:, :n]
    layer = lut.LUTLayer(5, 2, n, mapping, alpha=alpha, beta=beta, ste=False, random_state=3)
    return layer


def test_efd_with_beta_zero_is_the_exact_finite_difference():
    """alpha=1, beta=0: the input gradient equals f(x with bit i = 1) - f(x with bit i = 0)."""
    layer = _toy_layer(alpha=1.0, beta=0.0)
    layer.eval()
    w = torch.tensor([0.7, -1.3])  # loss = y @ w
    for x in all_bits(5):
        xt = torch.tensor(x)[None].requires_grad_(True)
        (layer(xt) @ w).sum().backward()
        for i in range(5):
            hi, lo = xt.detach().clone(), xt.detach().clone()
            hi[0, i], lo[0, i] = 1.0, 0.0
            with torch.no_grad():
                fd = float((layer(hi) - layer(lo)) @ w)
            assert xt.grad[0, i].item() == pytest.approx(fd, abs=1e-6)


def test_efd_autograd_matches_formula_and_lut_gradient_is_the_one_hot_count():
    layer = _toy_layer()
    n = layer.n
    X = torch.tensor(all_bits(5)).requires_grad_(True)  # every input at once: (32, 5)
    gy = torch.randn(32, 2, generator=torch.Generator().manual_seed(1))
    (layer(X) * gy).sum().backward()
    T = lut.efd_input_tables_bruteforce(layer.luts.detach().numpy(), layer.alpha, layer.beta)  # (2, n, 8)
    m = layer.mapping.numpy()
    Xb = X.detach().numpy().astype(int)
    addr = (Xb[:, m] * (2 ** np.arange(n))).sum(-1)  # (32, 2)
    gx = np.zeros((32, 5))
    gl = np.zeros((2, 2**n))
    for b in range(32):
        for j in range(2):
            gl[j, addr[b, j]] += gy[b, j]
            for l in range(n):
                gx[b, m[j, l]] += T[j, l, addr[b, j]] * gy[b, j]
    np.testing.assert_allclose(X.grad.numpy(), gx, atol=1e-5)
    np.testing.assert_allclose(layer.luts.grad.numpy(), gl, atol=1e-5)


def test_learnable_mapping_forward_and_backward():
    g = torch.Generator().manual_seed(0)
    x = (torch.rand(4, 6, generator=g) > 0.5).float().requires_grad_(True)
    W = torch.rand(6, 5, generator=g).requires_grad_(True)
    out = lut.LearnableMappingFunction.apply(x, W, 0.5)
    np.testing.assert_array_equal(out.detach().numpy(), x.detach().numpy()[:, W.detach().argmax(0).numpy()])
    go = torch.randn(4, 5, generator=g)
    out.backward(go)
    np.testing.assert_allclose(W.grad.numpy(), ((2 * x - 1).T @ go).detach().numpy(), atol=1e-6)
    sm = torch.softmax(W.detach() / 0.5, 0)
    np.testing.assert_allclose(x.grad.numpy(), (go @ sm.T).numpy(), atol=1e-6)


def test_random_mapping_uses_every_input_evenly():
    m = lut.random_mapping(10, 3, 7, random_state=0)  # 21 slots over 10 inputs
    counts = np.bincount(m.numpy().ravel(), minlength=10)
    assert counts.sum() == 21 and counts.min() == 2 and counts.max() == 3


# ---------------------------------------------------------------- conv LUT
def test_conv_lut_equals_the_lut_applied_at_every_position():
    conv = lut.ConvLUT(2, 3, 2, stride=1, padding=1, n=4, mapping="random", random_state=1)
    g = torch.Generator().manual_seed(2)
    x = (torch.rand(2, 2, 3, 4, generator=g) > 0.5).float()
    y = conv(x)
    assert y.shape == (2, 3, 4, 5)
    xp = torch.nn.functional.pad(x, (1, 1, 1, 1))
    for i in range(4):
        for j in range(5):
            patch = xp[:, :, i:i + 2, j:j + 2].reshape(2, -1)  # (c, ki, kj) order
            torch.testing.assert_close(y[:, :, i, j], conv.lut(patch))


def test_conv_lut_shares_tables_gradient_is_the_sum_over_positions():
    conv = lut.ConvLUT(1, 2, 2, n=3, random_state=0)
    x = (torch.rand(1, 1, 3, 3, generator=torch.Generator().manual_seed(5)) > 0.5).float()
    conv(x).sum().backward()
    total = conv.lut.luts.grad.clone()
    conv.lut.luts.grad = None
    patches = torch.nn.functional.unfold(x, 2).transpose(1, 2).reshape(4, 4)
    for p in range(4):
        conv.lut(patches[p:p + 1]).sum().backward()
    torch.testing.assert_close(total, conv.lut.luts.grad)


# ---------------------------------------------------------------- GroupSum
def test_groupsum_matches_dwn_padding_and_learnable_starts_equal():
    gs = lut.GroupSum(3, 7, tau=2.0)
    np.testing.assert_array_equal(gs.assignment(), [0, 0, 0, 1, 1, 1, 2])
    y = torch.tensor([[1.0, 1, 0, 1, 0, 0, 1]])
    torch.testing.assert_close(gs(y), torch.tensor([[1.0, 0.5, 0.5]]))
    lgs = lut.LearnableGroupSum(3, 7, tau=2.0, random_state=0)
    np.testing.assert_array_equal(lgs.assignment(), gs.assignment())
    lgs.train()
    out = lgs(y)
    torch.testing.assert_close(out, gs(y))  # hard forward
    out[0, 2].backward()
    assert lgs.logits.grad.abs().sum() > 0  # softmax straight-through gradient reaches the assignment


# ---------------------------------------------------------------- exact bit-level inference
def _train_a_bit(model, X, steps=15, seed=0):
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, model.head.k, (len(X),), generator=g)
    lut.fit_lut_model(model, X, y, epochs=steps, batch_size=64, lr=5e-2, random_state=seed)
    return model.eval()


def test_hardened_mlp_equals_bit_evaluation_on_every_input():
    model = lut.dwn_mlp(8, [12, 6], k=3, n=3, random_state=0)
    X = torch.tensor(all_bits(8))  # all 256 inputs
    _train_a_bit(model, X, steps=8)
    bitnet = lut.compile_bits(model)
    with torch.no_grad():
        soft = model.counts(X).numpy()
        logits = model(X).numpy()
    hard = bitnet.counts(X.numpy())
    np.testing.assert_array_equal(soft.astype(np.int64), hard)
    assert np.array_equal(soft, np.round(soft))  # popcounts are integers
    np.testing.assert_array_equal(logits.argmax(1), bitnet.predict(X.numpy()))
    # layer by layer too
    with torch.no_grad():
        h1 = model.classifier[0](X).numpy()
    np.testing.assert_array_equal(h1.astype(np.uint8), bitnet.layer_outputs(X.numpy())[0])


def test_hardened_conv_net_with_learnable_groupsum_equals_bit_evaluation_on_every_input():
    model = lut.clgn_net((1, 3, 3), 4, [6], k=2, n=3, kernel_size=2, padding=1, pool=2, random_state=1)
    X = torch.tensor(all_bits(9)).reshape(512, 1, 3, 3)  # all 512 images
    _train_a_bit(model, X, seed=1)
    bitnet = lut.compile_bits(model)
    with torch.no_grad():
        soft = model.counts(X).numpy()
    np.testing.assert_array_equal(soft.astype(np.int64), bitnet.counts(X.numpy()))


def test_hardened_digits_net_equals_bit_evaluation():
    d = lut.load_digits_bits(2, test_size=0.5, random_state=0)
    model = lut.clgn_net((2, 8, 8), 4, [40], n=4, pool=2, random_state=0)
    lut.fit_lut_model(model, d["X_train"][:300], d["y_train"][:300], epochs=1, batch_size=100)
    bitnet = lut.compile_bits(model)
    with torch.no_grad():
        soft = model.counts(d["X_test"]).numpy()
    np.testing.assert_array_equal(soft.astype(np.int64), bitnet.counts(d["X_test"].numpy()))


# ---------------------------------------------------------------- counts
def test_resource_counts_by_hand():
    # conv 1->2, k=2, no padding on 1x3x3: 2x2 positions, n=3; dense 8->4, n=2; groups k=2
    model = lut.clgn_net((1, 3, 3), 2, [4], k=2, n=3, kernel_size=2, padding=0, learnable_groupsum=False)
    model.classifier[0] = lut.LUTLayer(8, 4, 2)
    model.head = lut.GroupSum(2, 4)
    c = lut.resource_counts(model)
    assert c["distinct_luts"] == 2 + 4
    assert c["table_bits"] == 2 * 2**3 + 4 * 2**2  # 32
    assert c["unrolled_luts"] == 2 * 4 + 4  # 12
    assert c["unrolled_table_bits"] == 8 * 8 + 4 * 4  # 80
    assert c["mapping_bits"] == 2 * 3 * 2 + 4 * 2 * 3  # field of 4 -> 2 bits; width 8 -> 3 bits
    assert c["group_bits"] == 0
    assert c["param_bytes"] == -(-(32 + 36) // 8)  # 9
    model.head = lut.LearnableGroupSum(2, 4)
    assert lut.resource_counts(model)["group_bits"] == 4 * 1
    mlp = lut.dwn_mlp(192, [100, 50])
    assert lut.resource_counts(mlp)["table_bits"] == 150 * 64
    assert lut.lut_training_cost(mlp) == 3 * 150
    assert lut.lut_training_cost(model) == 3 * (8 + 4)
    assert lut.lut_training_cost(model, frozen_features=True) == 3 * 4


# ---------------------------------------------------------------- training schedule
def test_hierarchical_freezes_features_and_costs_less():
    d = lut.load_digits_bits(2, test_size=0.5, random_state=0)
    model = lut.clgn_net((2, 8, 8), 4, [40], n=4, pool=2, random_state=0)
    hist = lut.fit_hierarchical(model, d["X_train"], d["y_train"], stage_epochs=(1, 2), batch_size=128,
                                X_eval=d["X_test"], y_eval=d["y_test"])
    assert hist["stage"] == [1.0, 2.0, 2.0] and np.isnan(hist["acc"][0]) and hist["acc"][-1] > 0.2
    e2e = lut.clgn_net((2, 8, 8), 4, [40], n=4, pool=2, random_state=0)
    h2 = lut.fit_lut_model(e2e, d["X_train"], d["y_train"], epochs=3, batch_size=128,
                           cost_per_sample=lut.lut_training_cost(e2e))
    assert hist["cost"][-1] < h2["cost"][-1]
    # stage 2 did not move the frozen conv tables
    m2 = lut.clgn_net((2, 8, 8), 4, [40], n=4, pool=2, random_state=0)
    lut.fit_hierarchical(m2, d["X_train"], d["y_train"], stage_epochs=(1, 0), batch_size=128)
    torch.testing.assert_close(m2.features[0].lut.luts, model.features[0].lut.luts)


def test_training_is_deterministic():
    d = lut.load_digits_bits(2, test_size=0.5, random_state=0)
    runs = []
    for _ in range(2):
        torch.manual_seed(123)
        m = lut.dwn_mlp(128, [30], n=4, random_state=4)
        X = d["X_train"].reshape(len(d["X_train"]), -1)
        h = lut.fit_lut_model(m, X, d["y_train"], epochs=2, batch_size=128, random_state=9)
        runs.append((h["loss"], m.classifier[0].luts.detach().clone()))
    assert runs[0][0] == runs[1][0]
    torch.testing.assert_close(runs[0][1], runs[1][1], rtol=0, atol=0)


# ---------------------------------------------------------------- errors
def test_arity_above_memory_is_a_clear_error():
    with pytest.raises(ValueError, match=r"n=30 .*use n <= "):
        lut.LUTLayer(64, 10, 30)
    with pytest.raises(ValueError, match="n=0"):
        lut.check_arity(0, 4)
    assert lut.check_arity(6, 1000) == 6


def test_bad_shapes_and_values_are_clear_errors():
    layer = lut.LUTLayer(10, 4, 3)
    with pytest.raises(ValueError, match=r"\(batch, 10\)"):
        layer(torch.zeros(2, 11))
    with pytest.raises(ValueError, match="n=5 exceeds in_features=4"):
        lut.LUTLayer(4, 2, 5)
    with pytest.raises(ValueError, match=r"mapping tensor must have shape \(4, 3\)"):
        lut.LUTLayer(10, 4, 3, torch.zeros(4, 2, dtype=torch.int64))
    with pytest.raises(ValueError, match="mapping='magic'"):
        lut.LUTLayer(10, 4, 3, "magic")
    conv = lut.ConvLUT(2, 3, 3, padding=1, n=4)
    with pytest.raises(ValueError, match=r"\(batch, 2, H, W\)"):
        conv(torch.zeros(1, 3, 5, 5))
    with pytest.raises(ValueError, match="receptive field"):
        lut.ConvLUT(1, 3, 2, n=5)
    with pytest.raises(ValueError, match="smaller than the kernel"):
        conv.output_hw(0, 0)
    with pytest.raises(ValueError, match="in_features=3 must be an integer >= k=10"):
        lut.GroupSum(10, 3)
    net = lut.dwn_mlp(16, [8], k=2, n=3)
    with pytest.raises(ValueError, match=r"\(batch, 16\)"):
        net(torch.zeros(3, 4, 4))
    bitnet = lut.compile_bits(net.eval())
    with pytest.raises(ValueError, match="0/1"):
        bitnet.counts(np.full((2, 16), 2))
    with pytest.raises(ValueError, match=r"\(batch, 16\)"):
        bitnet.counts(np.zeros((2, 15)))
    with pytest.raises(ValueError, match="epochs=-1"):
        lut.fit_lut_model(net, torch.zeros(2, 16), torch.zeros(2, dtype=torch.int64), epochs=-1)


def test_load_npz_bits_matches_the_digits_layout(tmp_path):
    g = np.random.default_rng(0)
    x_tr, x_te = g.integers(0, 256, (20, 5, 6)), g.integers(0, 256, (4, 5, 6))
    path = tmp_path / "tiny.npz"
    np.savez(path, x_train=x_tr, y_train=np.arange(20) % 3, x_test=x_te, y_test=np.arange(4) % 3)
    d = lut.load_npz_bits(str(path), 2)
    assert d["X_train"].shape == (20, 2, 5, 6) and d["X_test"].shape == (4, 2, 5, 6)
    thr = d["encoder"].thresholds_[0]
    np.testing.assert_array_equal(d["X_train"][:, 1].numpy(), (x_tr > thr[1]).astype(np.float32))
    np.savez(path, x_train=x_tr, y_train=np.arange(20))
    with pytest.raises(ValueError, match="lacks"):
        lut.load_npz_bits(str(path))


def test_learnable_groupsum_passes_hard_gradient_to_bits_and_learns_the_assignment():
    y = (torch.rand(6, 8, generator=torch.Generator().manual_seed(0)) > 0.5).float().requires_grad_(True)
    y2 = y.detach().clone().requires_grad_(True)
    lgs, gs = lut.LearnableGroupSum(2, 8, tau=0.5), lut.GroupSum(2, 8, tau=0.5)
    lgs.train()
    w = torch.randn(6, 2, generator=torch.Generator().manual_seed(1))
    (lgs(y) * w).sum().backward()
    (gs(y2) * w).sum().backward()
    torch.testing.assert_close(y.grad, y2.grad)  # bits see DWN's GroupSum gradient
    # bit 0 starts in class 0 but fires only for class-1 samples: it must move to class 1
    X = torch.zeros(40, 8)
    labels = torch.arange(40) % 2
    X[labels == 1, 0] = 1.0
    X[:, 1:4][labels == 0] = 1.0
    X[:, 4:8][labels == 1] = 1.0
    opt = torch.optim.Adam(lgs.parameters(), lr=0.05)
    for _ in range(60):
        loss = torch.nn.functional.cross_entropy(lgs(X), labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert lgs.assignment()[0] == 1 and (lgs.assignment()[1:] == gs.assignment()[1:]).all()
