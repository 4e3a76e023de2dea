"""Tests of CLGN's reconstructed parts of icml26.lut (icml26.lut.clgn): conv LUT, learnable GroupSum, hierarchical schedule.

The reference library (torch-dwn) builds CUDA/C++ extensions at install time and its CPU
path raises "not implemented", so it cannot run here; the oracles are the EFD sum written
term by term, finite differences of the forward pass, exhaustive enumeration of all
inputs of small networks, and hand counts.
"""

from __future__ import annotations

import numpy as np
import torch

from icml26 import lut

torch.set_num_threads(1)


def test_conv_lut_equals_the_lut_applied_at_every_position():
    conv = lut.ConvLUT(2, 3, 2, stride=1, padding=1, n=4, mapping="random", random_state=1)
    g = torch.Generator().manual_seed(2)
    x = (torch.rand(2, 2, 3, 4, generator=g) > 0.5).float()
    y = conv(x)
    assert y.shape == (2, 3, 4, 5)
    xp = torch.nn.functional.pad(x, (1, 1, 1, 1))
    for i in range(4):
        for j in range(5):
            patch = xp[:, :, i : i + 2, j : j + 2].reshape(2, -1)  # (c, ki, kj) order
            torch.testing.assert_close(y[:, :, i, j], conv.lut(patch))


def test_conv_lut_shares_tables_gradient_is_the_sum_over_positions():
    conv = lut.ConvLUT(1, 2, 2, n=3, random_state=0)
    x = (torch.rand(1, 1, 3, 3, generator=torch.Generator().manual_seed(5)) > 0.5).float()
    conv(x).sum().backward()
    total = conv.lut.luts.grad.clone()
    conv.lut.luts.grad = None
    patches = torch.nn.functional.unfold(x, 2).transpose(1, 2).reshape(4, 4)
    for p in range(4):
        conv.lut(patches[p : p + 1]).sum().backward()
    torch.testing.assert_close(total, conv.lut.luts.grad)


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


def test_hierarchical_freezes_features_and_costs_less():
    d = lut.load_digits_bits(2, test_size=0.5, random_state=0)
    model = lut.clgn_net((2, 8, 8), 4, [40], n=4, pool=2, random_state=0)
    hist = lut.fit_hierarchical(
        model, d["X_train"], d["y_train"], stage_epochs=(1, 2), batch_size=128, X_eval=d["X_test"], y_eval=d["y_test"]
    )
    assert hist["stage"] == [1.0, 2.0, 2.0] and np.isnan(hist["acc"][0]) and hist["acc"][-1] > 0.2
    e2e = lut.clgn_net((2, 8, 8), 4, [40], n=4, pool=2, random_state=0)
    h2 = lut.fit_lut_model(e2e, d["X_train"], d["y_train"], epochs=3, batch_size=128, cost_per_sample=lut.lut_training_cost(e2e))
    assert hist["cost"][-1] < h2["cost"][-1]
    # stage 2 did not move the frozen conv tables
    m2 = lut.clgn_net((2, 8, 8), 4, [40], n=4, pool=2, random_state=0)
    lut.fit_hierarchical(m2, d["X_train"], d["y_train"], stage_epochs=(1, 0), batch_size=128)
    torch.testing.assert_close(m2.features[0].lut.luts, model.features[0].lut.luts)


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
