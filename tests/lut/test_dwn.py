"""Tests of DWN's exact parts of icml26.lut (encoding, efd, layers, training): oracles for the EFD gradient.

The reference library (torch-dwn) builds CUDA/C++ extensions at install time and its CPU
path raises "not implemented", so it cannot run here; the oracles are the EFD sum written
term by term, finite differences of the forward pass, exhaustive enumeration of all
inputs of small networks, and hand counts.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from lut_helpers import all_bits

from icml26 import lut

torch.set_num_threads(1)


def _toy_layer(alpha=None, beta=None, n=3):
    mapping = torch.tensor([[0, 1, 2], [3, 1, 4]])[:, :n]
    layer = lut.LUTLayer(5, 2, n, mapping, alpha=alpha, beta=beta, ste=False, random_state=3)
    return layer


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


@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_efd_tables_match_the_sum_term_by_term(n):
    g = torch.Generator().manual_seed(n)
    L = torch.rand(3, 2**n, generator=g) * 2 - 1
    for alpha, beta in [(0.5 * 0.75 ** (n - 1), 1 / 3), (0.3, 0.7)]:
        fast = lut.efd_input_tables(L, alpha, beta).numpy()
        slow = lut.efd_input_tables_bruteforce(L.numpy(), alpha, beta)
        np.testing.assert_allclose(fast, slow, atol=1e-6)


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
