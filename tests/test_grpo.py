"""icml26._grpo.group_advantages against the formula written out as a plain loop, and its bad inputs."""

import math

import numpy as np
import pytest
import torch

from icml26._grpo import group_advantages


def loop_advantages(rewards, groups, sd, eps):
    """A_i = (r_i - mean_g) / (sd_g + eps), every sum a Python loop over the group's members."""
    out = [0.0] * len(rewards)
    for gid in set(groups):
        idx = [i for i, g in enumerate(groups) if g == gid]
        n = len(idx)
        mean = sum(rewards[i] for i in idx) / n
        ss = sum((rewards[i] - mean) ** 2 for i in idx)
        s = math.sqrt(ss / (n - 1 if sd == "sample" else n))
        for i in idx:
            out[i] = rewards[i] - mean if sd is None else (rewards[i] - mean) / (s + eps)
    return out


@pytest.mark.parametrize("sd", ["population", "sample", None])
def test_matches_the_formula_with_group_labels_and_rows(sd):
    rng = np.random.default_rng(0)
    r = rng.normal(size=24).round(3)
    g = rng.permutation(np.repeat(["a", "b", "c"], 8))
    want = np.array(loop_advantages(r.tolist(), g.tolist(), sd, 1e-3))
    np.testing.assert_allclose(group_advantages(r, g, sd=sd, eps=1e-3), want, rtol=1e-12, atol=1e-12)
    rows = r.reshape(4, 6)  # (B, G): one group per row
    want_rows = np.array(loop_advantages(r.tolist(), np.repeat(np.arange(4), 6).tolist(), sd, 1e-3)).reshape(4, 6)
    np.testing.assert_allclose(group_advantages(rows, sd=sd, eps=1e-3), want_rows, rtol=1e-12, atol=1e-12)
    t = group_advantages(torch.as_tensor(rows), sd=sd, eps=1e-3)
    assert isinstance(t, torch.Tensor) and t.dtype == torch.float64
    np.testing.assert_allclose(t.numpy(), want_rows, rtol=1e-12, atol=1e-12)
    t1 = group_advantages(torch.as_tensor(r), torch.as_tensor(np.repeat(np.arange(4), 6)), sd=sd, eps=1e-3)
    np.testing.assert_allclose(t1.numpy(), want_rows.ravel(), rtol=1e-12, atol=1e-12)


def test_the_two_conventions_differ_by_the_bessel_factor():
    r = np.array([[0.0, 1.0, 1.0, 3.0]])
    pop = group_advantages(r, sd="population", eps=1e-12)
    sam = group_advantages(r, sd="sample", eps=1e-12)
    np.testing.assert_allclose(pop / sam, np.sqrt(4 / 3), rtol=1e-9)
    np.testing.assert_allclose(group_advantages(r, sd=None), r - r.mean())


def test_a_constant_group_gets_zero_advantage():
    assert np.all(group_advantages(np.full((2, 5), 3.0), sd="sample") == 0)
    assert np.all(group_advantages([7.0], [0], sd="population") == 0)  # a group of one: 0 / eps


def test_bit_identical_to_the_chapters_former_formulas():
    """Chapter 10 (torch, rows, sample sd) and chapter 13 (NumPy, labels, population sd) before the helper."""
    r = torch.rand(16, 8, generator=torch.Generator().manual_seed(1))
    old10 = (r - r.mean(1, keepdim=True)) / (r.std(1, keepdim=True) + 1e-4)
    assert torch.equal(group_advantages(r, sd="sample", eps=1e-4), old10)
    x = np.random.default_rng(2).normal(size=40)
    g = np.repeat(np.arange(5), 8)
    old13 = np.zeros_like(x)
    for gid in np.unique(g):
        m = g == gid
        old13[m] = (x[m] - x[m].mean()) / (x[m].std() + 1e-6)
    assert np.array_equal(group_advantages(x, g, sd="population", eps=1e-6), old13)


@pytest.mark.parametrize(
    ("args", "kwargs", "match"),
    [
        (([[1.0, 2.0]],), {"sd": "std"}, "sd='std' is not a standard-deviation convention"),
        (([[1.0, 2.0]],), {"sd": 1}, "sd=1 is not"),
        (([[1.0, 2.0]],), {"sd": "sample", "eps": 0.0}, "eps"),
        (([1.0, 2.0],), {"sd": "sample"}, r"shape \(B, G\).*got shape \(2,\)"),
        ((np.zeros((2, 2, 2)),), {"sd": "sample"}, r"shape \(B, G\)"),
        ((np.zeros((0, 3)),), {"sd": "sample"}, r"shape \(B, G\)"),
        (([[1.0], [2.0]],), {"sd": "sample"}, "at least 2"),
        (([[1.0, np.nan]],), {"sd": "population"}, "finite"),
        ((torch.tensor([[1.0, float("inf")]]),), {"sd": "sample"}, "finite"),
        (([1.0, 2.0, 3.0], [0, 0]), {"sd": "sample"}, r"same non-zero length.*\(3,\) and \(2,\)"),
        (([[1.0, 2.0]], [0, 0]), {"sd": "sample"}, "1-D"),
        (([1.0, 2.0, 3.0], [0, 0, 1]), {"sd": "sample"}, "group 1 has 1"),
    ],
)
def test_bad_input_is_a_clear_value_error(args, kwargs, match):
    with pytest.raises(ValueError, match=match):
        group_advantages(*args, **kwargs)


def test_sd_has_no_default():
    with pytest.raises(TypeError):
        group_advantages([[1.0, 2.0]])
