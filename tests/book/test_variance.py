import numpy as np
import pytest

from icml26.book.variance import noise_split


def test_noise_split_recovers_the_components_of_a_balanced_one_way_model():
    rng = np.random.default_rng(0)
    seeds, per = 400, 30
    t = rng.normal(0.0, 0.5, seeds)  # training: sd 0.5 -> variance 0.25
    d = (t[:, None] + rng.normal(0.0, 1.0, (seeds, per))).ravel()  # evaluation: variance 1
    out = noise_split(d, np.repeat(np.arange(seeds), per))
    assert out["replicates"] == seeds * per and out["per seed"] == per
    assert abs(out["evaluation variance (within seeds)"] - 1.0) < 0.03
    assert abs(out["training variance (between seeds)"] - 0.25) < 0.05
    assert abs(out["evaluation share"] - 0.8) < 0.03


def test_noise_split_exact_on_a_small_case_and_says_what_it_cannot_tell():
    # groups a: (1, 3), b: (5, 7): within variances 2 and 2; seed means 2 and 6, variance 8; 8 - 2/2 = 7
    out = noise_split([1.0, 3.0, 5.0, 7.0], ["a", "a", "b", "b"])
    assert out["evaluation variance (within seeds)"] == 2.0 and out["training variance (between seeds)"] == 7.0
    assert out["evaluation share"] == pytest.approx(2 / 9)
    one_each = noise_split([1.0, 2.0, 3.0], ["a", "b", "c"])  # no within-seed spread to estimate
    assert one_each["evaluation variance (within seeds)"] is None and one_each["evaluation share"] is None
    one_seed = noise_split([1.0, 2.0], ["a", "a"])
    assert one_seed["training variance (between seeds)"] is None
    with pytest.raises(ValueError, match="one group per difference"):
        noise_split([1.0, 2.0], ["a"])
    with pytest.raises(ValueError, match="finite"):
        noise_split([1.0, np.nan], ["a", "a"])
