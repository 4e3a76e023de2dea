"""Helpers for the bad-input suites: every public function of every method module rejects
out-of-domain input with a clear ``ValueError`` or ``TypeError`` raised by our own code.

Usage in a test module::

    from badinput import covers, exempt, rejects

    @covers("pasv.topological_order", "pasv.PasvDP")
    @settings(max_examples=25, deadline=None, derandomize=True)
    @given(...)
    def test_cyclic_orders_are_rejected(...):
        rejects(P.topological_order, cyclic, match="cycle")

    exempt("lut.some_constant_table", "takes no input")

``tests/test_public_api.py`` reads these ``covers(...)`` and ``exempt(...)`` calls from the
test sources and fails when a public function or class of a method module has neither.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

SRC = Path(__file__).resolve().parents[1] / "src" / "icml26"


def covers(*names: str) -> Callable:
    """Mark a test as the bad-input test of the named public callables (``"module.name"``)."""

    def mark(fn: Callable) -> Callable:
        fn.__bad_input_covers__ = names  # type: ignore[attr-defined]
        return fn

    return mark


def exempt(name: str, reason: str) -> None:
    """Declare that a public callable has no input to get wrong (say why)."""
    if not reason.strip():
        raise ValueError(f"exempt({name!r}) needs a reason")


def rejects(fn: Callable, *args: Any, match: str | None = None, **kwargs: Any) -> BaseException:
    """Call ``fn(*args, **kwargs)`` and require a clear rejection.

    The call must raise ``ValueError`` or ``TypeError`` (subclasses allowed) whose message
    is non-empty (and matches ``match`` if given), raised by a line of ``icml26`` itself
    (not from deep inside numpy, torch or another library). It must not return.
    """
    try:
        out = fn(*args, **kwargs)
    except (ValueError, TypeError) as exc:
        msg = str(exc)
        assert msg.strip(), f"{fn.__qualname__} raised {type(exc).__name__} with no message"
        if match is not None:
            assert re.search(match, msg), f"{fn.__qualname__}: message {msg!r} does not match {match!r}"
        tb = exc.__traceback__
        last = None
        while tb is not None:
            last = tb.tb_frame.f_code.co_filename
            tb = tb.tb_next
        assert last is not None and Path(last).resolve().is_relative_to(SRC), (
            f"{fn.__qualname__} let {type(exc).__name__}({msg!r}) escape from {last}; validate the input in icml26"
        )
        return exc
    raise AssertionError(f"{fn.__qualname__} accepted bad input and returned {_short(out)}")


def finite_or_raises(fn: Callable, *args: Any, **kwargs: Any) -> Any:
    """Either a clear rejection (as :func:`rejects`) or a result without NaN: never a silent NaN."""
    try:
        out = fn(*args, **kwargs)
    except (ValueError, TypeError):
        return rejects(fn, *args, **kwargs)
    assert not _has_nan(out), f"{fn.__qualname__} returned NaN: {_short(out)}"
    return out


def _has_nan(x: Any) -> bool:
    try:
        import torch

        if isinstance(x, torch.Tensor):
            return bool(torch.isnan(x).any()) if x.is_floating_point() else False
    except ImportError:  # pragma: no cover
        pass
    if isinstance(x, float):
        return math.isnan(x)
    if isinstance(x, np.ndarray) and x.dtype.kind in "fc":
        return bool(np.isnan(x).any())
    if isinstance(x, (tuple, list)):
        return any(_has_nan(v) for v in x)
    if isinstance(x, dict):
        return any(_has_nan(v) for v in x.values())
    return False


def _short(x: Any) -> str:
    s = repr(x)
    return s if len(s) < 200 else s[:200] + "…"
