"""Bad input to icml26.lut: every public callable rejects out-of-domain input with a clear
ValueError/TypeError raised by icml26 itself (never a bare torch/NumPy error, a NaN or a silent result).

The first tests are the bad calls reported in issue #9; the hypothesis tests then feed each
public callable wrong shapes, NaN/inf, negative sizes, empty arrays and wrong types.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from badinput import covers, rejects
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from icml26 import lut

torch.set_num_threads(1)
FAST = settings(max_examples=20, deadline=None, derandomize=True)

bad_reals = st.sampled_from([np.nan, np.inf, -np.inf, -1.0])
bad_counts = st.sampled_from([0, -1, -7, 2.5, True, "3", None])
not_tensors = st.sampled_from(["bits", None, 3, [[0, 1]]])


@pytest.fixture(scope="module")
def nets():
    """A tiny DWN MLP and a tiny conv network, untrained, with their compiled bit networks."""
    mlp = lut.dwn_mlp(8, [6, 4], k=2, n=3, random_state=0).eval()
    conv = lut.clgn_net((1, 4, 4), 2, [4], k=2, n=3, kernel_size=2, padding=1, pool=2, random_state=0).eval()
    return mlp, conv, lut.compile_bits(mlp), lut.compile_bits(conv)


# ----------------------------------------------------------------------------- the reported bad calls (issue #9)


def test_lut_addresses_of_a_1d_input_is_a_clear_error():
    rejects(lut.lut_addresses, torch.tensor([1.0, 0.0, 1.0]), match="shape")


def test_efd_tables_with_a_negative_alpha_are_a_clear_error():
    rejects(lut.efd_input_tables, torch.zeros(2, 4), alpha=-1, beta=0.3, match="alpha")


# ----------------------------------------------------------------------------- encoding


@covers("lut.encoding.ThermometerEncoder")
@FAST
@given(
    X=arrays(float, st.tuples(st.integers(1, 4), st.integers(1, 3)), elements=st.sampled_from([0.0, 1.0, np.nan, np.inf])),
    k=bad_counts,
)
def test_thermometer_bad_inputs(X, k):
    rejects(lut.ThermometerEncoder, k)
    rejects(lut.ThermometerEncoder, 3, method="quantum", match="method")
    if not np.all(np.isfinite(X)):
        rejects(lut.ThermometerEncoder(2).fit, X, match="NaN or infinite")
    rejects(lut.ThermometerEncoder(2).fit, np.zeros((0, 3)), match="n_samples")
    rejects(lut.ThermometerEncoder(2).fit, np.zeros(5), match="shape")
    rejects(lut.ThermometerEncoder(2).fit, "abc")
    enc = lut.ThermometerEncoder(2).fit(np.arange(6.0).reshape(3, 2))
    rejects(enc.transform, np.zeros((2, 3)), match="shape")
    rejects(enc.transform, np.full((2, 2), np.nan), match="NaN")


# ----------------------------------------------------------------------------- EFD and lookup


@covers("lut.efd.lut_addresses")
@FAST
@given(
    bits=st.one_of(
        not_tensors,
        st.just(torch.zeros(2, 3)),
        st.just(torch.zeros(2, 3, 0)),
        st.just(torch.zeros(1, 2, 60)),
        st.just(torch.full((1, 2, 3), float("nan"))),
    )
)
def test_lut_addresses_bad_inputs(bits):
    rejects(lut.lut_addresses, bits)


@covers("lut.efd.efd_input_tables", "lut.efd.efd_compressed_tables", "lut.efd.efd_input_tables_bruteforce")
@FAST
@given(
    alpha=st.one_of(bad_reals, st.just(0.0)),
    beta=st.one_of(bad_reals, st.just(1.5)),
    width=st.sampled_from([3, 5, 6, 1]),
    bad=st.sampled_from([np.nan, np.inf]),
)
def test_efd_bad_tables_and_constants(alpha, beta, width, bad):
    ok = torch.zeros(2, 4)
    for fn in (lut.efd_input_tables, lut.efd_compressed_tables):
        rejects(fn, ok, alpha, 0.3, match="alpha")
        rejects(fn, ok, 0.5, beta, match="beta")
        rejects(fn, torch.zeros(2, width), 0.5, 0.3, match="columns|shape")
        rejects(fn, torch.full((2, 4), bad), 0.5, 0.3, match="finite")
        rejects(fn, torch.zeros(4), 0.5, 0.3, match="shape")
        rejects(fn, np.zeros((2, 4)), 0.5, 0.3)
        rejects(fn, ok, "0.5", 0.3)
    rejects(lut.efd_input_tables_bruteforce, np.zeros((2, 4)), alpha, 0.3, match="alpha")
    rejects(lut.efd_input_tables_bruteforce, np.zeros((2, width)), 0.5, 0.3)
    rejects(lut.efd_input_tables_bruteforce, "tables", 0.5, 0.3)


@covers("lut.efd.EFDFunction", "lut.efd.STEFunction", "lut.efd.LearnableMappingFunction")
@FAST
@given(idx=st.sampled_from([-1, 5, 100]), tau=st.one_of(bad_reals, st.just(0.0)))
def test_autograd_functions_bad_inputs(idx, tau):
    x, luts = torch.zeros(3, 5), torch.zeros(2, 4)
    mapping = torch.tensor([[0, 1], [2, 3]])
    rejects(lut.EFDFunction.apply, x, torch.tensor([[0, idx], [2, 3]]), luts, 0.5, 0.3, match="mapping indices")
    rejects(lut.EFDFunction.apply, x, mapping.float(), luts, 0.5, 0.3, match="integer")
    rejects(lut.EFDFunction.apply, x, torch.tensor([[0, 1, 2], [2, 3, 4]]), luts, 0.5, 0.3, match="does not fit")
    rejects(lut.EFDFunction.apply, torch.zeros(5), mapping, luts, 0.5, 0.3, match="shape")
    rejects(lut.EFDFunction.apply, torch.full((3, 5), np.nan), mapping, luts, 0.5, 0.3, match="NaN")
    rejects(lut.EFDFunction.apply, x, mapping, luts, -1.0, 0.3, match="alpha")
    rejects(lut.STEFunction.apply, torch.tensor([1.0, np.nan]), match="NaN")
    rejects(lut.STEFunction.apply, torch.tensor([1, 0]))
    rejects(lut.LearnableMappingFunction.apply, x, torch.zeros(5, 3), tau, match="tau")
    rejects(lut.LearnableMappingFunction.apply, x, torch.zeros(4, 3), 1e-3, match="disagree")
    rejects(lut.LearnableMappingFunction.apply, x, torch.full((5, 3), np.nan), 1e-3, match="finite")


# ----------------------------------------------------------------------------- layers


@covers("lut.layers.random_mapping", "lut.layers.check_arity")
@FAST
@given(n=bad_counts)
def test_mapping_and_arity_sizes(n):
    rejects(lut.random_mapping, n, 3, 4, random_state=0)
    rejects(lut.random_mapping, 6, n, 4, random_state=0)
    rejects(lut.random_mapping, 6, 3, n, random_state=0)
    rejects(lut.random_mapping, 6, 3, 4, random_state="seed", match="random_state")
    rejects(lut.check_arity, n, 10, match="arity")
    rejects(lut.check_arity, 3, n, match="num_luts")
    rejects(lut.check_arity, 30, 1000, match="MiB")


@covers("lut.layers.LUTLayer")
@FAST
@given(size=bad_counts, bad=bad_reals)
def test_lut_layer_bad_construction_and_input(size, bad):
    rejects(lut.LUTLayer, size, 4, 2)
    rejects(lut.LUTLayer, 6, size, 2)
    rejects(lut.LUTLayer, 2, 4, 3, match="exceeds")
    rejects(lut.LUTLayer, 6, 4, 2, "wired", match="mapping")
    rejects(lut.LUTLayer, 6, 4, 2, torch.zeros(4, 2), match="integer")
    rejects(lut.LUTLayer, 6, 4, 2, torch.full((4, 2), 9), match="indices")
    rejects(lut.LUTLayer, 6, 4, 2, alpha=bad, match="alpha")
    rejects(lut.LUTLayer, 6, 4, 2, tau=bad, match="tau")
    layer = lut.LUTLayer(6, 4, 2, random_state=0)
    rejects(layer, torch.zeros(3, 5), match="shape")
    rejects(layer, torch.full((3, 6), np.nan), match="NaN")
    rejects(layer, np.zeros((3, 6)))


@covers("lut.layers.GroupSum", "lut.clgn.LearnableGroupSum")
@FAST
@given(k=bad_counts, tau=st.one_of(bad_reals, st.just(0.0)))
def test_groupsums_bad_inputs(k, tau):
    for cls in (lut.GroupSum, lut.LearnableGroupSum):
        rejects(cls, k, 10)
        rejects(cls, 5, 3, match="in_features")
        rejects(cls, 2, 10, tau, match="tau")
        head = cls(2, 6)
        rejects(head, torch.zeros(3, 5), match="shape")
        rejects(head, torch.full((3, 6), np.nan), match="NaN")
        rejects(head, "bits")
    rejects(lut.LearnableGroupSum, 2, 6, temperature=tau, match="temperature")
    rejects(lut.LearnableGroupSum, 2, 6, init_scale=-1.0, match="init_scale")


@covers("lut.layers.LUTNet", "lut.layers.dwn_mlp")
@FAST
@given(width=bad_counts)
def test_networks_bad_construction_and_input(width, nets):
    rejects(lut.dwn_mlp, 8, [], match="hidden")
    rejects(lut.dwn_mlp, 8, [width], match="hidden width")
    rejects(lut.dwn_mlp, width, [4], k=2, n=2)
    rejects(lut.dwn_mlp, 8, "4")
    layer = lut.LUTLayer(8, 4, 2)
    rejects(lut.LUTNet, (8, 2), [], [layer], lut.GroupSum(2, 4), match="input_shape")
    rejects(lut.LUTNet, (8,), [], [], lut.GroupSum(2, 4), match="classifier")
    rejects(lut.LUTNet, (8,), [], [layer], torch.nn.Identity(), match="head")
    mlp = nets[0]
    rejects(mlp, torch.zeros(2, 7), match="shape")
    rejects(mlp, np.zeros((2, 8)))


# ----------------------------------------------------------------------------- CLGN (reconstructed)


@covers("lut.clgn.ConvLUT", "lut.clgn.OrPool", "lut.clgn.clgn_net")
@FAST
@given(size=bad_counts)
def test_conv_parts_bad_inputs(size):
    rejects(lut.ConvLUT, size, 2, 3)
    rejects(lut.ConvLUT, 1, size, 3)
    rejects(lut.ConvLUT, 1, 2, size)
    rejects(lut.ConvLUT, 1, 2, 3, mapping="wired", match="mapping")
    rejects(lut.ConvLUT, 1, 2, 2, n=5, match="receptive field")
    conv = lut.ConvLUT(1, 2, 3, n=3)
    rejects(conv, torch.zeros(1, 2, 5, 5), match="shape")
    rejects(conv, torch.zeros(1, 1, 2, 2), match="smaller than the kernel")
    rejects(conv, "image")
    rejects(lut.OrPool, size)
    rejects(lut.OrPool(2), torch.zeros(2, 3), match="shape")
    rejects(lut.OrPool(3), torch.zeros(1, 1, 2, 2), match="smaller than the window")
    rejects(lut.clgn_net, (4, 4), 2, [4], k=2, n=3, match="input_shape")
    rejects(lut.clgn_net, (1, 4, 4), 2, [], k=2, n=3, match="hidden")
    rejects(lut.clgn_net, (1, 4, 4), 2, [4], k=2, n=3, pool=size)


@covers("lut.clgn.fit_hierarchical")
@FAST
@given(epochs=st.sampled_from([(-1, 1), (1,), (1, 2, 3), (1.5, 1), "11"]))
def test_fit_hierarchical_bad_inputs(epochs, nets):
    mlp, conv = nets[0], nets[1]
    X, y = torch.zeros(4, 1, 4, 4), torch.zeros(4, dtype=torch.long)
    rejects(lut.fit_hierarchical, conv, X, y, stage_epochs=epochs, match="stage_epochs")
    rejects(lut.fit_hierarchical, mlp, torch.zeros(4, 8), y, stage_epochs=(1, 1), match="feature stage")
    rejects(lut.fit_hierarchical, "net", X, y, stage_epochs=(1, 1), match="LUTNet")
    rejects(lut.fit_hierarchical, conv, X, y[:3], stage_epochs=(1, 1), match="equal length")


# ----------------------------------------------------------------------------- training


@covers("lut.training.fit_lut_model", "lut.training.accuracy", "lut.training.lut_training_cost")
@FAST
@given(e=bad_counts, lr=st.one_of(bad_reals, st.just(0.0)))
def test_training_bad_inputs(e, lr, nets):
    mlp = nets[0]
    X, y = torch.zeros(4, 8), torch.zeros(4, dtype=torch.long)
    if e not in (0,):
        rejects(lut.fit_lut_model, mlp, X, y, epochs=e, match="epochs")
    rejects(lut.fit_lut_model, mlp, X, y, epochs=1, lr=lr, match="lr")
    rejects(lut.fit_lut_model, mlp, X, y[:3], epochs=1, match="length")
    rejects(lut.fit_lut_model, mlp, X, y, epochs=1, batch_size=0, match="batch_size")
    rejects(lut.fit_lut_model, mlp, X, y, epochs=1, gamma=2.0, match="gamma")
    rejects(lut.fit_lut_model, mlp, X, y, epochs=1, X_eval=X, match="together")
    rejects(lut.fit_lut_model, mlp, torch.full((4, 8), np.nan), y, epochs=1, match="NaN")
    rejects(lut.fit_lut_model, "model", X, y, epochs=1, match="Module")
    rejects(lut.accuracy, mlp, X, y[:3], match="length")
    rejects(lut.accuracy, mlp, X[:0], y[:0], match="empty")
    rejects(lut.accuracy, mlp, X.numpy(), y)
    rejects(lut.accuracy, mlp, X, y, batch_size=0, match="batch_size")
    rejects(lut.lut_training_cost, torch.nn.Linear(2, 2), match="LUTNet")


# ----------------------------------------------------------------------------- bits and resources


@covers("lut.bits.BitNetwork", "lut.bits.compile_bits", "lut.resources.resource_counts")
@FAST
@given(X=arrays(float, st.tuples(st.integers(1, 3), st.just(8)), elements=st.sampled_from([0.0, 1.0, 2.0, np.nan, -1.0])))
def test_bit_networks_bad_inputs(X, nets):
    bits = nets[2]
    if not np.isin(X, (0, 1)).all():
        rejects(bits.predict, X, match="0/1")
    rejects(bits.predict, np.zeros((2, 7)), match="shape")
    rejects(bits.predict, np.zeros((0, 8)), match="empty")
    rejects(bits.predict, "0101")
    rejects(bits.predict, np.array([["a"] * 8]), match="dtype")
    rejects(lut.compile_bits, torch.nn.Linear(2, 2), match="LUTNet")
    rejects(lut.resource_counts, "net", match="LUTNet")


# ----------------------------------------------------------------------------- digits helpers


@covers(
    "lut.digits.load_digits_bits",
    "lut.digits.build_digits_model",
    "lut.digits.run_digits",
    "lut.digits.SmallCNN",
    "lut.digits.load_npz_bits",
)
@FAST
@given(k=bad_counts, size=st.sampled_from([0.0, 1.0, -0.2, np.nan]))
def test_digits_helpers_bad_inputs(k, size, tmp_path_factory):
    rejects(lut.load_digits_bits, k)
    rejects(lut.load_digits_bits, 3, test_size=size, match="test_size")
    rejects(lut.build_digits_model, "resnet", 80, match="kind")
    rejects(lut.build_digits_model, "dwn", k)
    rejects(lut.build_digits_model, "dwn", 4, match="too small")
    rejects(lut.run_digits, "dwn", 80, {"X_train": None}, epochs=1, match="data")
    rejects(lut.SmallCNN, k)
    rejects(lut.SmallCNN(), torch.zeros(2, 64), match="shape")
    rejects(lut.load_npz_bits, 3)
    rejects(lut.load_npz_bits, str(tmp_path_factory.getbasetemp() / "missing.npz"), match="not a file")
    path = tmp_path_factory.getbasetemp() / "partial.npz"
    np.savez(path, x_train=np.zeros((2, 4, 4)), y_train=np.zeros(2))
    rejects(lut.load_npz_bits, str(path), match="lacks")


@covers("lut.digits.run_digits_grid", "lut.digits.float_baselines")
def test_chapter_loops_reject_missing_data():
    d = {0: lut.load_digits_bits(2, test_size=0.5, random_state=0)}
    rejects(lut.run_digits_grid, [(1, 8, "dwn")], d, epochs=1)
    rejects(lut.run_digits_grid, [(0, 8, "dwn")], [d[0]], epochs=1)
    rejects(lut.float_baselines, [0], "data", cnn_epochs=1)
    rejects(lut.float_baselines, [0], d, cnn_epochs=0)
