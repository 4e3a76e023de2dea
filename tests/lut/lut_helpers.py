"""Shared helpers of the icml26.lut tests."""

from __future__ import annotations

import itertools

import numpy as np
import torch

from icml26 import lut


def all_bits(k: int) -> np.ndarray:
    """Every k-bit input, shape (2**k, k)."""
    return np.array(list(itertools.product([0, 1], repeat=k)), dtype=np.float32)


def train_a_bit(model, X, steps=15, seed=0):
    """A few epochs on random labels, so that tables and mappings move away from their start."""
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, model.head.k, (len(X),), generator=g)
    lut.fit_lut_model(model, X, y, epochs=steps, batch_size=64, lr=5e-2, random_state=seed)
    return model.eval()
