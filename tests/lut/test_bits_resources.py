"""Tests of icml26.lut.bits, .resources and .digits: exact bit-level inference by enumeration, hand counts, data loading.

The reference library (torch-dwn) builds CUDA/C++ extensions at install time and its CPU
path raises "not implemented", so it cannot run here; the oracles are the EFD sum written
term by term, finite differences of the forward pass, exhaustive enumeration of all
inputs of small networks, and hand counts.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from lut_helpers import all_bits, train_a_bit

from icml26 import lut

torch.set_num_threads(1)


def test_hardened_mlp_equals_bit_evaluation_on_every_input():
    model = lut.dwn_mlp(8, [12, 6], k=3, n=3, random_state=0)
    X = torch.tensor(all_bits(8))  # all 256 inputs
    train_a_bit(model, X, steps=8)
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
    train_a_bit(model, X, seed=1)
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


def test_digits_grid_checks_bit_exactness_and_matches_run_digits():
    """The chapter's grid: each record is run_digits' own, plus the compiled network's agreement with torch."""
    d = lut.load_digits_bits(2, test_size=0.5, random_state=0)
    (r,) = lut.run_digits_grid([(0, 40, "clgn")], {0: d}, epochs=1)
    ref = lut.run_digits("clgn", 40, d, epochs=1, random_state=0)
    assert r["acc"] == ref["acc"] and r["bit_pred_equal"]
    assert r["bit_acc"] == pytest.approx(r["acc"], abs=1e-6)  # torch accuracy is float32
    assert 0 <= r["reassigned_bits"] <= r["model"].head.in_features
    rows, cnns, logreg = lut.float_baselines([0], {0: d}, cnn_epochs=1)
    assert [x["kind"] for x in rows] == ["logistic regression", "small CNN (float)"] and set(cnns) == {0}
    assert rows[0]["acc"] == logreg.score(d["raw_test"], d["y_test"].numpy())
