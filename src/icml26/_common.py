"""Conventions shared by every method module: randomness and progress reporting.

Randomness
    Every function or class that draws random numbers takes ``random_state`` (an int,
    a :class:`numpy.random.Generator` or ``None``), as scikit-learn does, and turns it
    into a generator with :func:`check_random_state`. Torch code seeds a
    :class:`torch.Generator` from the same value with :func:`torch_generator`.

Progress
    Long loops use :func:`progress`. On a terminal it is a live tqdm bar; in a notebook
    kernel (Jupyter, papermill) it prints one line when the loop ends, so executed
    notebooks hold no progress-bar noise. ``ICML26_PROGRESS=live`` asks for live bars
    everywhere, ``ICML26_PROGRESS=off`` for none.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

import numpy as np

T = TypeVar("T")

RandomState = int | np.integer | np.random.Generator | None


def check_random_state(random_state: RandomState) -> np.random.Generator:
    """Turn ``random_state`` into a :class:`numpy.random.Generator`.

    Parameters
    ----------
    random_state : int, numpy.random.Generator or None
        An int in ``[0, 2**32)`` seeds a new generator; a generator is returned as it
        is (so that a caller can thread one through several calls); ``None`` draws
        fresh entropy.

    Returns
    -------
    numpy.random.Generator

    Raises
    ------
    TypeError
        For anything else (a float, a string, a legacy ``RandomState``).
    ValueError
        For a negative or too large integer.

    References
    ----------
    Mirrors :func:`sklearn.utils.check_random_state`, for the new Generator API.
    """
    if isinstance(random_state, np.random.Generator):
        return random_state
    if random_state is None:
        return np.random.default_rng()
    if isinstance(random_state, (bool, np.bool_)) or not isinstance(random_state, (int, np.integer)):
        raise TypeError(
            f"random_state={random_state!r} ({type(random_state).__name__}) is not valid; "
            "use an int, a numpy.random.Generator or None"
        )
    if not 0 <= int(random_state) < 2**32:
        raise ValueError(f"random_state={random_state!r} must lie in [0, 2**32)")
    return np.random.default_rng(int(random_state))


def seed_from(random_state: RandomState) -> int:
    """An int seed in ``[0, 2**31)`` derived from ``random_state`` (for torch and other libraries)."""
    if isinstance(random_state, (int, np.integer)) and not isinstance(random_state, (bool, np.bool_)):
        check_random_state(random_state)
        return int(random_state) % 2**31
    return int(check_random_state(random_state).integers(0, 2**31))


def torch_generator(random_state: RandomState):
    """A :class:`torch.Generator` seeded from ``random_state`` (see :func:`check_random_state`)."""
    import torch

    return torch.Generator().manual_seed(seed_from(random_state))


def _mode() -> str:
    mode = os.environ.get("ICML26_PROGRESS", "").strip().lower()
    if mode in ("live", "off", "line"):
        return mode
    try:
        tty = sys.stderr.isatty()
    except (AttributeError, ValueError):  # pragma: no cover - closed or replaced stream
        tty = False
    return "live" if tty else "line"


def progress(
    iterable: Iterable[T], desc: str = "", *, total: int | None = None, disable: bool = False, **tqdm_kw: Any
) -> Iterator[T]:
    """Iterate over ``iterable`` with progress reporting fit for where it runs.

    Parameters
    ----------
    iterable : iterable
        What to loop over.
    desc : str
        Label of the loop.
    total : int, optional
        Number of items when ``len(iterable)`` is unknown.
    disable : bool
        No reporting at all.
    **tqdm_kw
        Passed to :class:`tqdm.tqdm` in live mode (``leave``, ``position``, ...).

    Yields
    ------
    The items of ``iterable``.
    """
    mode = "off" if disable else _mode()
    if mode == "live":
        from tqdm import tqdm

        yield from tqdm(iterable, desc=desc, total=total, **tqdm_kw)
        return
    if total is None:
        try:
            total = len(iterable)  # type: ignore[arg-type]
        except TypeError:
            total = None
    t0, n = time.perf_counter(), 0
    for item in iterable:
        n += 1
        yield item
    if mode == "line":
        of = f"/{total}" if total is not None else ""
        print(f"{desc or 'loop'}: {n}{of} done in {time.perf_counter() - t0:.1f} s", flush=True)


def check_int(value: Any, name: str, *, low: int = 1, integral_floats: bool = False) -> int:
    """``value`` as an int ``>= low`` (integral floats such as ``3.0`` too, if ``integral_floats``).

    Parameters
    ----------
    value : Any
        What the caller passed.
    name : str
        The argument's name, for the message.
    low : int
        Smallest allowed value.
    integral_floats : bool
        Accept floats with an integral value (``3.0``); otherwise only integers.

    Returns
    -------
    int

    Raises
    ------
    TypeError
        For a bool or a non-number.
    ValueError
        For a non-integral, non-finite or too small number.
    """
    from numbers import Integral, Real

    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name}={value!r} must be an integer >= {low}, got a bool")
    if isinstance(value, Integral):
        v = int(value)
    elif integral_floats and isinstance(value, Real) and np.isfinite(float(value)) and float(value).is_integer():
        v = int(value)
    elif isinstance(value, Real):
        raise ValueError(f"{name}={value!r} must be an integer >= {low}")
    else:
        raise TypeError(f"{name}={value!r} must be an integer >= {low}, got {type(value).__name__}")
    if v < low:
        raise ValueError(f"{name}={value!r} must be an integer >= {low}")
    return v


def check_real(
    value: Any,
    name: str,
    *,
    lo: float | None = None,
    hi: float | None = None,
    lo_open: bool = False,
    hi_open: bool = False,
) -> float:
    """``value`` as a finite float within the bounds (``lo``/``hi``, open or closed).

    Parameters
    ----------
    value : Any
        What the caller passed.
    name : str
        The argument's name, for the message.
    lo, hi : float, optional
        Bounds; ``None`` means unbounded on that side.
    lo_open, hi_open : bool
        Whether the bound itself is excluded.

    Returns
    -------
    float

    Raises
    ------
    TypeError
        For a bool or a non-number.
    ValueError
        For NaN, infinity or a value out of bounds (the message states the interval).
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name}={value!r} must be a real number, got {type(value).__name__}")
    v = float(value)
    bad = not np.isfinite(v)
    if lo is not None:
        bad = bad or (v <= lo if lo_open else v < lo)
    if hi is not None:
        bad = bad or (v >= hi if hi_open else v > hi)
    if bad:
        left = "(" if lo_open else "["
        right = ")" if hi_open else "]"
        interval = f"{left}{'-inf' if lo is None else f'{lo:g}'}, {'inf' if hi is None else f'{hi:g}'}{right}"
        raise ValueError(f"{name}={value!r} is not valid; use a finite number in {interval}")
    return v


DEVICES: tuple[str, ...] = ("auto", "cpu", "cuda")


def resolve_device(device: str = "auto") -> str:
    """The torch device a chapter runs on: ``"cpu"`` or ``"cuda"``.

    ``"auto"`` gives ``"cuda"`` when torch sees a GPU, else ``"cpu"`` (the book's
    reference device: the rendered book and the tests run on CPU). ``"cuda"`` on a
    machine without one is an error naming the device, never a silent fall-back.

    Raises
    ------
    ValueError
        For a name outside :data:`DEVICES`, or ``"cuda"`` when torch sees no CUDA GPU.
    """
    if not isinstance(device, str) or device not in DEVICES:
        raise ValueError(f"device={device!r} is not a device; use one of {', '.join(map(repr, DEVICES))}")
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is part of the pinned install
        if device == "cuda":
            raise ValueError("device='cuda' needs torch, which is not installed") from None
        return "cpu"
    has_cuda = bool(torch.cuda.is_available())
    if device == "cuda" and not has_cuda:
        raise ValueError(
            "device='cuda' was asked for, but torch sees no CUDA GPU here (torch.cuda.is_available() is False; "
            f"torch {torch.__version__} {'CPU build' if torch.version.cuda is None else 'CUDA ' + str(torch.version.cuda)}); "
            "use device='auto' or 'cpu', or install a CUDA build of the same torch version (README)"
        )
    return "cuda" if device == "cuda" or (device == "auto" and has_cuda) else "cpu"
