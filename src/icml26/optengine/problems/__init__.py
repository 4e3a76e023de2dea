"""The ten problem classes of the engine, one module each, and the registry :data:`CLASSES`.

References
----------
.. [1] Chen et al., "OPT-Engine", ICML 2026, arXiv:2601.19924, Sec. 3 (ten classes: four
   MIP, six LP). Authors' code: https://github.com/Cardinal-Operations/OPTEngine.
"""

from __future__ import annotations

from .base import Plan, PlanCheck, ProblemClass
from .binpacking import BinPacking, first_fit_decreasing
from .inventory import Inventory
from .jobshop import JobShop
from .knapsack import Knapsack
from .networkflow import NetworkFlow, Transportation, least_cost_method
from .pollution import Pollution
from .portfolio import Portfolio
from .production import Production
from .tsp import TSP

__all__ = [
    "CLASSES",
    "get_class",
    "Plan",
    "PlanCheck",
    "ProblemClass",
    "Knapsack",
    "TSP",
    "BinPacking",
    "JobShop",
    "Inventory",
    "Portfolio",
    "NetworkFlow",
    "Transportation",
    "Production",
    "Pollution",
    "first_fit_decreasing",
    "least_cost_method",
]

CLASSES: dict[str, ProblemClass] = {
    c.name: c
    for c in (
        Knapsack(),
        TSP(),
        BinPacking(),
        JobShop(),
        Inventory(),
        Portfolio(),
        NetworkFlow(),
        Transportation(),
        Production(),
        Pollution(),
    )
}

CLASS_IDS = {name: k for k, name in enumerate(CLASSES)}  # part of each (class, size) cell's seed


def get_class(problem_class: str | ProblemClass) -> ProblemClass:
    """The :class:`ProblemClass` named ``problem_class`` (one of :data:`CLASSES`).

    Parameters
    ----------
    problem_class : str or ProblemClass
        A class name (``"Knapsack"``, ...) or a class object (returned as it is).

    Returns
    -------
    ProblemClass
        The registered class.

    References
    ----------
    .. [1] Chen et al., ICML 2026 (arXiv:2601.19924), Sec. 3 (the ten classes).
    """
    if isinstance(problem_class, ProblemClass):
        return problem_class
    if not isinstance(problem_class, str):
        raise TypeError(f"problem_class must be a class name (str), got {type(problem_class).__name__}")
    if problem_class not in CLASSES:
        raise ValueError(f"problem_class={problem_class!r} is not valid; use one of {', '.join(CLASSES)}")
    return CLASSES[problem_class]
