"""The dual@k metric of BEST (Shen et al., ICML 2026), as the authors compute it.

Each task is split into a grid of subtasks: time level ``i`` (input scale, rows) by
space level ``j`` (memory limit, loose to tight, columns). For generation ``k`` the
binary matrix ``P_k[i, j]`` says whether the code generated for space level ``j``
passes every test case of scale ``i`` under level ``j``'s memory limit. Then

1. monotone closure (``export_dual_at_k.py``):
   ``P_k[i, j] <- min(P_k[i, j], P_k[i-1, j], P_k[i, j-1])`` in row-major order, so
   a harder cell counts only if every easier cell passes:
   ``C_k[i, j] = min_{i' <= i, j' <= j} P_k[i', j']``;
2. subtask pass rate ``A[i, j] = mean_k C_k[i, j]`` and its plug-in pass@k,
   ``A^{(k)} = 1 - (1 - A)^k`` (``process-data/dual_at_k.py``);
3. feasible set ``F``: cells that at least one standard solution passes (bitwise OR);
4. weights (0-based ``i, j``) ``W_time = tau^i [j = 0]``, ``W_space = sigma^j [i = 0]``,
   ``W_comb = tau^i sigma^j`` (``tau = sigma = 1.2`` in the code);
5. ``dual@k_X = sum_{i,j} W_X[i, j] A^{(k)}[i, j] / sum_{(i,j) in F} W_X[i, j]``,
   averaged over tasks. Problem-level pass@k is ``1 - (1 - A[0, 0])^k``.
"""

from __future__ import annotations

from math import comb
from typing import Literal

import numpy as np

from ._validate import count, positive

Kind = Literal["time", "space", "comb"]
KINDS: tuple[str, ...] = ("time", "space", "comb")


def _check_binary(P: np.ndarray, name: str = "P") -> np.ndarray:
    P = np.asarray(P)
    if P.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be a binary array (bool or 0/1), got dtype {P.dtype}")
    if P.ndim < 2:
        raise ValueError(f"{name} must have at least 2 dimensions (..., n_scales, n_levels), got shape {P.shape}")
    if not np.all((P == 0) | (P == 1)):
        raise ValueError(f"{name} must be binary (0/1 or bool)")
    return P.astype(bool)


def monotone_closure(P: np.ndarray) -> np.ndarray:
    """Close a pass matrix downward: ``C[..., i, j] = min_{i' <= i, j' <= j} P[..., i', j']``.

    Equal to the authors' in-place row-major pass
    ``P[i][j] = min(P[i][j], P[i-1][j], P[i][j-1])``; vectorised as two cumulative minima.

    Parameters
    ----------
    P : array of bool, shape (..., n_scales, n_levels)

    Returns
    -------
    numpy.ndarray of bool, same shape; ``C <= P`` elementwise.

    References
    ----------
    .. [1] A. Shen et al., "BEST: Benchmarking Efficiency in Space and Time for LLM-Generated
       Code", ICML 2026.
    .. [2] Co-author's public code, github.com/xwysyy/BEST: export_dual_at_k.py (the closure loop).
    """
    P = _check_binary(P)
    return np.minimum.accumulate(np.minimum.accumulate(P, axis=-2), axis=-1)


def weight_matrix(kind: Kind, *, tau: float = 1.2, sigma: float = 1.2, shape: tuple[int, int] = (3, 3)) -> np.ndarray:
    """Weights ``W_time = tau^i [j=0]``, ``W_space = sigma^j [i=0]``, ``W_comb = tau^i sigma^j``.

    Parameters
    ----------
    kind : {"time", "space", "comb"}
    tau, sigma : float
        Weight bases along the scales and the space levels (finite, > 0; the authors' 1.2).
    shape : (int, int)
        ``(n_scales, n_levels)``, both >= 1.

    Returns
    -------
    numpy.ndarray, shape ``shape`` = (n_scales, n_levels)

    References
    ----------
    .. [1] A. Shen et al., "BEST: Benchmarking Efficiency in Space and Time for LLM-Generated
       Code", ICML 2026.
    .. [2] Co-author's public code, github.com/xwysyy/BEST: process-data/dual_at_k.py (tau = sigma = 1.2).
    """
    if not isinstance(kind, str) or kind not in KINDS:
        raise ValueError(f"kind={kind!r}; use one of {KINDS}")
    tau, sigma = positive(tau, "tau"), positive(sigma, "sigma")
    if (
        not isinstance(shape, tuple | list)
        or len(shape) != 2
        or any(isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 1 for d in shape)
    ):
        raise ValueError(f"shape={shape!r} must be two positive integers (n_scales, n_levels)")
    n_i, n_j = (int(d) for d in shape)
    ti = float(tau) ** np.arange(n_i)[:, None]  # (n_i, 1)
    sj = float(sigma) ** np.arange(n_j)[None, :]  # (1, n_j)
    if kind == "comb":
        return ti * sj
    W = np.zeros((n_i, n_j))
    if kind == "time":
        W[:, :1] = ti
    else:
        W[:1, :] = sj
    return W


def _rates(A, name: str = "A") -> np.ndarray:
    try:
        A = np.asarray(A, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be an array of pass rates in [0, 1]") from None
    if not np.all(np.isfinite(A)) or np.any((A < 0) | (A > 1)):
        raise ValueError(f"{name} must lie in [0, 1] (no NaN)")
    return A


def subtask_pass_rate(P: np.ndarray, *, closure: bool = True) -> np.ndarray:
    """``A[i, j]``: the fraction of generations whose *closed* matrix passes cell ``(i, j)``.

    Parameters
    ----------
    P : array of bool, shape (n_generations, n_scales, n_levels)
    closure : bool
        ``False`` skips the monotone closure (for comparison only; not the metric).

    Returns
    -------
    numpy.ndarray, shape (n_scales, n_levels)

    References
    ----------
    .. [1] A. Shen et al., "BEST: Benchmarking Efficiency in Space and Time for LLM-Generated
       Code", ICML 2026.
    .. [2] Co-author's public code, github.com/xwysyy/BEST: process-data/dual_at_k.py.
    """
    P = _check_binary(P)
    if P.ndim != 3 or P.shape[0] == 0:
        raise ValueError(f"P must have shape (n_generations >= 1, n_scales, n_levels), got {P.shape}")
    return (monotone_closure(P) if closure else P).mean(axis=0)


def plugin_pass_at_k(A: np.ndarray, k: int) -> np.ndarray:
    """Plug-in pass@k of a pass rate: ``1 - (1 - A)^k`` (what the authors use for k = 10).

    Parameters
    ----------
    A : array
        Pass rates in ``[0, 1]``.
    k : int
        ``k >= 1``.

    Returns
    -------
    numpy.ndarray, same shape as ``A``

    References
    ----------
    .. [1] A. Shen et al., "BEST: Benchmarking Efficiency in Space and Time for LLM-Generated
       Code", ICML 2026.
    .. [2] Co-author's public code, github.com/xwysyy/BEST: process-data/dual_at_k.py.
    """
    k = count(k, "k")
    A = _rates(A)
    return 1.0 - (1.0 - A) ** k


def unbiased_pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of Chen et al. (2021): ``1 - C(n - c, k) / C(n, k)`` (for comparison).

    Parameters
    ----------
    n : int
        Generations.
    c : int
        Correct generations, ``0 <= c <= n``.
    k : int
        ``1 <= k <= n``.

    Returns
    -------
    float

    References
    ----------
    .. [1] M. Chen et al., "Evaluating large language models trained on code", arXiv:2107.03374, 2021.
    """
    for name, v in (("n", n), ("c", c), ("k", k)):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"{name}={v!r} must be an integer")
    if not (0 <= c <= n) or not (1 <= k <= n):
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")
    return 1.0 - comb(n - c, k) / comb(n, k)


def feasible_set(std_P: np.ndarray) -> np.ndarray:
    """Cells passed by at least one standard solution (bitwise OR, no closure, as the authors).

    Parameters
    ----------
    std_P : array of bool, shape (n_standards, n_scales, n_levels)

    Returns
    -------
    numpy.ndarray of bool, shape (n_scales, n_levels)

    References
    ----------
    .. [1] A. Shen et al., "BEST: Benchmarking Efficiency in Space and Time for LLM-Generated
       Code", ICML 2026.
    .. [2] Co-author's public code, github.com/xwysyy/BEST: export_dual_at_k.py (OR of the standard solutions).
    """
    std_P = _check_binary(std_P, "std_P")
    if std_P.ndim != 3 or std_P.shape[0] == 0:
        raise ValueError(f"std_P must have shape (n_standards >= 1, n_scales, n_levels), got {std_P.shape}")
    return std_P.any(axis=0)


def dual_score(A: np.ndarray, feasible: np.ndarray, kind: Kind, *, tau: float = 1.2, sigma: float = 1.2) -> float:
    """``sum_{i,j} W[i,j] A[i,j] / sum_{(i,j) in F} W[i,j]`` for one task.

    Raises ``ValueError`` when no feasible cell carries weight (the authors' code would
    divide by zero).

    Parameters
    ----------
    A : array, shape (n_scales, n_levels)
        (Plug-in) pass rates in ``[0, 1]``.
    feasible : array of bool, same shape
        The feasible set.
    kind : {"time", "space", "comb"}
    tau, sigma : float
        Weight bases.

    Returns
    -------
    float

    References
    ----------
    .. [1] A. Shen et al., "BEST: Benchmarking Efficiency in Space and Time for LLM-Generated
       Code", ICML 2026.
    .. [2] Co-author's public code, github.com/xwysyy/BEST: process-data/dual_at_k.py.
    """
    A = _rates(A)
    F = _check_binary(feasible, "feasible")
    if A.shape != F.shape:
        raise ValueError(f"A has shape {A.shape}, feasible {F.shape}")
    W = weight_matrix(kind, tau=tau, sigma=sigma, shape=A.shape)
    denom = float((W * F).sum())
    if denom <= 0:
        raise ValueError(f"no feasible cell has {kind} weight: no standard solution passes the ({kind}) subtasks")
    return float((W * A).sum() / denom)


def dual_at_k(
    P: np.ndarray, feasible: np.ndarray, k: int = 1, *, tau: float = 1.2, sigma: float = 1.2, closure: bool = True
) -> dict[str, float]:
    """dual@k (time, space, comb) and problem pass@k of one task.

    Parameters
    ----------
    P : array of bool, shape (n_generations, n_scales, n_levels)
        Raw (unclosed) pass matrices, one per generation.
    feasible : array of bool, shape (n_scales, n_levels)
        :func:`feasible_set` of the standard solutions.
    k : int
        ``k = 1`` uses the pass rates ``A``; larger ``k`` the plug-in ``1 - (1 - A)^k``.
    closure : bool
        ``False`` skips the monotone closure (for comparison only).

    tau, sigma : float
        Weight bases (finite, > 0).

    Returns
    -------
    dict
        ``{"time", "space", "comb", "pass"}``.

    References
    ----------
    .. [1] A. Shen et al., "BEST: Benchmarking Efficiency in Space and Time for LLM-Generated
       Code", ICML 2026.
    .. [2] Co-author's public code, github.com/xwysyy/BEST: export_dual_at_k.py and process-data/dual_at_k.py.
    """
    k = count(k, "k")
    A = subtask_pass_rate(P, closure=closure)
    Ak = plugin_pass_at_k(A, k)
    out = {kind: dual_score(Ak, feasible, kind, tau=tau, sigma=sigma) for kind in KINDS}
    out["pass"] = float(Ak[0, 0])
    return out


def dual_at_k_suite(
    P: np.ndarray,
    feasible: np.ndarray,
    ks: tuple[int, ...] = (1, 10),
    *,
    tau: float = 1.2,
    sigma: float = 1.2,
    closure: bool = True,
) -> dict[str, np.ndarray]:
    """:func:`dual_at_k` of every task of a suite at once, for each ``k`` in ``ks``.

    With ``A_t`` the (closed) pass rates of task ``t`` and ``A_t^{(k)} = 1 - (1 - A_t)^k``,

    ``dual@k_t = sum_ij W_ij A^{(k)}_{t,ij} / sum_{(i,j) in F_t} W_ij``, ``pass@k_t = A^{(k)}_{t,00}``,

    computed as one array program over tasks (the benchmark's score is the mean over
    tasks). Equal to calling :func:`dual_at_k` once per task.

    Parameters
    ----------
    P : array of bool, shape (n_tasks, n_generations, n_scales, n_levels)
        Raw (unclosed) pass matrices; every task has the same number of generations.
    feasible : array of bool, shape (n_tasks, n_scales, n_levels)
        :func:`feasible_set` of each task's standard solutions.
    ks : tuple of int
        The ``k`` values (each ``>= 1``).
    tau, sigma : float
        Weight bases (finite, > 0).
    closure : bool
        ``False`` skips the monotone closure (for comparison only).

    Returns
    -------
    dict of numpy.ndarray, each shape (n_tasks,)
        ``"dual{k}_{kind}"`` for each ``k`` and kind, and ``"pass{k}"``.

    References
    ----------
    .. [1] A. Shen et al., "BEST: Benchmarking Efficiency in Space and Time for LLM-Generated
       Code", ICML 2026.
    .. [2] Co-author's public code, github.com/xwysyy/BEST: export_dual_at_k.py and process-data/dual_at_k.py.
    """
    P = _check_binary(P)
    F = _check_binary(feasible, "feasible")
    if P.ndim != 4 or P.shape[0] == 0 or P.shape[1] == 0:
        raise ValueError(f"P must have shape (n_tasks >= 1, n_generations >= 1, n_scales, n_levels), got {P.shape}")
    if F.shape != (P.shape[0],) + P.shape[2:]:
        raise ValueError(f"feasible must have shape {(P.shape[0],) + P.shape[2:]} (n_tasks, n_scales, n_levels), got {F.shape}")
    if isinstance(ks, (int, np.integer)) or not len(ks):
        raise TypeError(f"ks={ks!r} must be a non-empty tuple of integers >= 1")
    ks = tuple(count(k, "k") for k in ks)
    A = (monotone_closure(P) if closure else P).mean(axis=1)  # (n_tasks, n_i, n_j)
    shape = A.shape[1:]
    W = np.stack([weight_matrix(kind, tau=tau, sigma=sigma, shape=shape) for kind in KINDS])  # (n_kinds, n_i, n_j)
    denom = np.einsum("kij,tij->tk", W, F.astype(float))  # (n_tasks, n_kinds)
    if np.any(denom <= 0):
        t, kd = np.argwhere(denom <= 0)[0]
        raise ValueError(
            f"task {t}: no feasible cell has {KINDS[kd]} weight: no standard solution passes the ({KINDS[kd]}) subtasks"
        )
    out: dict[str, np.ndarray] = {}
    for k in ks:
        Ak = 1.0 - (1.0 - A) ** k  # (n_tasks, n_i, n_j)
        scores = np.einsum("kij,tij->tk", W, Ak) / denom  # (n_tasks, n_kinds)
        for kd, kind in enumerate(KINDS):
            out[f"dual{k}_{kind}"] = scores[:, kd]
        out[f"pass{k}"] = Ak[:, 0, 0]
    return out


def closure_loop_reference(P: np.ndarray) -> np.ndarray:
    """The authors' in-place loop, written out (used as the oracle in the tests).

    Parameters
    ----------
    P : array of bool, shape (..., n_scales, n_levels)

    Returns
    -------
    numpy.ndarray of bool, same shape

    References
    ----------
    .. [1] A. Shen et al., "BEST: Benchmarking Efficiency in Space and Time for LLM-Generated
       Code", ICML 2026.
    .. [2] Co-author's public code, github.com/xwysyy/BEST: export_dual_at_k.py.
    """
    C = _check_binary(P).copy()
    *_, n_i, n_j = C.shape
    for i in range(n_i):
        for j in range(n_j):
            if i > 0:
                C[..., i, j] = np.minimum(C[..., i, j], C[..., i - 1, j])
            if j > 0:
                C[..., i, j] = np.minimum(C[..., i, j], C[..., i, j - 1])
    return C
