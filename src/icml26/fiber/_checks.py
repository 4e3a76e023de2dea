"""Input checks shared by the FIBER modules (private).

Finite reals within bounds, counts (bools refused), and a ``torch.Generator`` from a
``random_state``; each raises a clear ``ValueError``/``TypeError`` naming the value.
"""

from __future__ import annotations

import torch

from .._common import RandomState, check_int, check_real, torch_generator


def _real(
    name: str, value: object, *, lo: float | None = None, hi: float | None = None, lo_open: bool = False, hi_open: bool = False
) -> float:
    """``value`` as a finite float within the bounds, else a clear ``TypeError``/``ValueError``."""
    return check_real(value, name, lo=lo, hi=hi, lo_open=lo_open, hi_open=hi_open)


def _count(name: str, value: object, lo: int = 1) -> int:
    """``value`` as an int >= ``lo`` (bools refused), else ``ValueError``/``TypeError``."""
    return check_int(value, name, low=lo)


def _torch_gen(random_state: RandomState | torch.Generator) -> torch.Generator:
    """A ``torch.Generator`` from ``random_state``; a generator is used as it is (threaded through steps)."""
    return random_state if isinstance(random_state, torch.Generator) else torch_generator(random_state)
