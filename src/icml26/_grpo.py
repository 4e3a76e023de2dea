"""Group-relative advantages, the normalisation step of GRPO, shared by the chapters that train with it.

Used by chapter 10 (:func:`icml26.safedrive.grpo_loss`) and chapter 13
(:func:`icml26.discoverllm.policy.response_type_advantages`); each passes the standard
deviation convention and the :math:`\\epsilon` it uses.

References
----------
Z. Shao et al. *DeepSeekMath: Pushing the Limits of Mathematical Reasoning in Open Language
Models* (2024), arXiv:2402.03300, Sec. 4.1.2 (outcome supervision: normalised group rewards).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._common import check_real

SD_CONVENTIONS = ("population", "sample", None)
"""The allowed ``sd=``: population (divide by :math:`G`), sample (by :math:`G - 1`) or none (no scaling)."""


def _is_torch(x: Any) -> bool:
    return type(x).__module__.startswith("torch") and hasattr(x, "detach")


def group_advantages(rewards: Any, groups: Any = None, *, sd: str | None, eps: float = 1e-4) -> Any:
    r"""Group-relative advantages :math:`A_i = (r_i - \operatorname{mean}_g r) / (\operatorname{sd}_g r + \epsilon)`.

    Each reward is centred on the mean of its group :math:`g` (the answers sampled for one
    prompt) and divided by the group's standard deviation plus :math:`\epsilon`:

    .. math::
        \operatorname{sd}_g r = \sqrt{\frac{1}{|g| - c} \sum_{j \in g} (r_j - \operatorname{mean}_g r)^2},

    with :math:`c = 0` for ``sd="population"`` (NumPy's ``std()``) and :math:`c = 1` for
    ``sd="sample"`` (torch's ``std()``, the convention of TRL's and open-r1's GRPO trainers);
    ``sd=None`` only centres, :math:`A_i = r_i - \operatorname{mean}_g r` (TRL's
    ``scale_rewards="none"``, Dr. GRPO).

    Parameters
    ----------
    rewards : array_like or torch.Tensor
        Shape ``(B, G)`` with one group per row when ``groups`` is None; shape ``(E,)``
        otherwise. Finite. A torch tensor gives a torch tensor back (same dtype), anything
        else a float64 NumPy array.
    groups : array_like, shape (E,), optional
        Group label of each reward (any labels :func:`numpy.unique` can sort).
    sd : {"population", "sample", None}
        Standard-deviation convention (keyword, required: each caller states its own).
    eps : float
        Added to the standard deviation, > 0 (unused with ``sd=None``).

    Returns
    -------
    numpy.ndarray or torch.Tensor
        The advantages, the shape of ``rewards``.

    Raises
    ------
    ValueError
        For an unknown ``sd``, ``eps <= 0``, rewards that are not finite, a shape other
        than ``(B, G)`` without ``groups`` or ``(E,)`` with ``groups`` of the same shape,
        an empty input, or (``sd="sample"``) a group of one, whose sample deviation is
        undefined.

    References
    ----------
    Shao et al., *DeepSeekMath* (2024), arXiv:2402.03300, Sec. 4.1.2; TRL ``GRPOTrainer``
    (``scale_rewards``), open-r1 / VLM-R1 ``grpo_trainer`` (sample sd, :math:`\epsilon = 10^{-4}`).
    """
    if not (sd is None or (isinstance(sd, str) and sd in SD_CONVENTIONS)):
        raise ValueError(f"sd={sd!r} is not a standard-deviation convention; use one of {SD_CONVENTIONS}")
    eps = check_real(eps, "eps", lo=0.0, lo_open=True)
    torch_in = _is_torch(rewards)
    r = rewards if torch_in else np.asarray(rewards, dtype=float)
    finite = bool(r.isfinite().all()) if torch_in else bool(np.all(np.isfinite(r)))
    if not finite:
        raise ValueError("rewards must be finite (no NaN or infinite values)")
    correction = 1 if sd == "sample" else 0
    if groups is None:
        if r.ndim != 2 or r.shape[0] == 0 or r.shape[1] == 0:
            raise ValueError(
                f"rewards must have shape (B, G) with one group per row (or pass groups=), got shape {tuple(r.shape)}"
            )
        if sd == "sample" and r.shape[1] < 2:
            raise ValueError(f"sd='sample' needs groups of at least 2 rewards, got G={r.shape[1]}")
        if torch_in:
            centred = r - r.mean(1, keepdim=True)
            return centred if sd is None else centred / (r.std(1, keepdim=True, correction=correction) + eps)
        centred = r - r.mean(1, keepdims=True)
        return centred if sd is None else centred / (r.std(1, ddof=correction, keepdims=True) + eps)
    g = np.asarray(groups.detach().cpu() if _is_torch(groups) else groups)
    if r.ndim != 1 or g.shape != tuple(r.shape) or r.shape[0] == 0:
        raise ValueError(
            f"with groups=, rewards and groups must be 1-D of the same non-zero length, got shapes {tuple(r.shape)} and {g.shape}"
        )
    labels, counts = np.unique(g, return_counts=True)
    if sd == "sample" and counts.min() < 2:
        raise ValueError(f"sd='sample' needs groups of at least 2 rewards; group {labels[counts.argmin()].item()!r} has 1")
    adv = r.clone() if torch_in else np.zeros_like(r)
    for gid in labels:
        m = g == gid
        if torch_in:
            import torch

            m = torch.as_tensor(m, device=r.device)
            rg = r[m]
            adv[m] = (rg - rg.mean()) if sd is None else (rg - rg.mean()) / (rg.std(correction=correction) + eps)
        else:
            rg = r[m]
            adv[m] = (rg - rg.mean()) if sd is None else (rg - rg.mean()) / (rg.std(ddof=correction) + eps)
    return adv
