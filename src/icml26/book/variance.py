"""Where the variance of paired replicates comes from: training (between seeds) or evaluation (within a seed).

A chapter whose replicates are ``(seed, episode)`` pairs can ask how much of the paired
differences' variance more episodes per seed would remove. :func:`noise_split` answers it by the
method of moments of the one-way random-effects model

.. math::
    d_{sk} = \\mu + t_s + e_{sk},\\qquad \\operatorname{Var} t_s = \\sigma_t^2,\\quad
    \\operatorname{Var} e_{sk} = \\sigma_e^2,

where the mean within-seed variance estimates :math:`\\sigma_e^2` and the variance of the seed
means, less :math:`\\sigma_e^2 / \\bar m`, estimates :math:`\\sigma_t^2` (clipped at 0).

References
----------
S. R. Searle, G. Casella, C. E. McCulloch, *Variance Components*, Wiley 1992, ch. 3 (the
ANOVA estimators of the balanced one-way model).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def noise_split(diffs: Sequence[float] | np.ndarray, groups: Sequence[object]) -> dict[str, float | int | None]:
    """Evaluation (within-group) and training (between-group) variance of paired differences.

    Parameters
    ----------
    diffs : array-like of float, shape (n,)
        The paired differences (a decision's ``stats["diffs"]``).
    groups : sequence, length n
        The group (seed) of each difference.

    Returns
    -------
    dict
        ``replicates`` (n), ``per seed`` (mean group size :math:`\\bar m`, rounded down),
        ``evaluation variance (within seeds)`` (:math:`\\hat\\sigma_e^2`),
        ``training variance (between seeds)`` (:math:`\\hat\\sigma_t^2`) and ``evaluation
        share`` (:math:`\\hat\\sigma_e^2 / (\\hat\\sigma_e^2 + \\hat\\sigma_t^2)`); a figure the
        data cannot give (one group, or no group with two members) is ``None``.

    Raises
    ------
    ValueError
        When ``diffs`` and ``groups`` differ in length, or ``diffs`` is empty or not finite.

    >>> noise_split([1.0, 3.0, 5.0, 7.0], ["a", "a", "b", "b"])["evaluation variance (within seeds)"]
    2.0
    """
    d = np.asarray(diffs, dtype=float).ravel()
    g = np.asarray([str(x) for x in groups])
    if d.size == 0 or d.size != g.size:
        raise ValueError(f"noise_split needs one group per difference, got {d.size} differences and {g.size} groups")
    if not np.all(np.isfinite(d)):
        raise ValueError("noise_split needs finite differences (got NaN or inf)")
    parts = [d[g == k] for k in dict.fromkeys(g)]
    within_vars = [p.var(ddof=1) for p in parts if p.size > 1]
    within = float(np.mean(within_vars)) if within_vars else None
    m = float(np.mean([p.size for p in parts]))
    train = None
    if within is not None and len(parts) > 1:
        means = np.array([p.mean() for p in parts])
        train = max(float(means.var(ddof=1)) - within / m, 0.0)
    share = within / (within + train) if within is not None and train is not None and within + train > 0 else None
    return {
        "replicates": int(d.size),
        "per seed": int(m),
        "evaluation variance (within seeds)": within,
        "training variance (between seeds)": train,
        "evaluation share": share,
    }
