"""OPT-Engine: verified optimisation word problems whose size is a knob, and three ways to answer them.

Chen, Cheng, Sun, Ling & Ge, *OPT-Engine: Benchmarking the Limits of LLMs in
Optimization Modeling via Complexity Scaling*, ICML 2026 (arXiv:2601.19924); authors'
code: https://github.com/Cardinal-Operations/OPTEngine.

The package has five layers, one module each:

:mod:`~icml26.optengine.lp`
    Exact (mixed-integer) linear models (:class:`LinearModel`, :class:`ModelBuilder`)
    and HiGHS (:func:`solve`, :func:`solve_lp_text`, :func:`to_lp_text`).
:mod:`~icml26.optengine.text`
    Templates rendered into word problems and inverted back into numbers.
:mod:`~icml26.optengine.problems`
    The ten problem classes (:data:`CLASSES`), one module each, on the abstract
    :class:`ProblemClass`: a seeded sampler with the authors' parameter ranges, the
    exact model, three phrasings, a parser, a plan evaluator and a by-hand heuristic.
:mod:`~icml26.optengine.instances` and :mod:`~icml26.optengine.checker`
    Verified instances (:func:`generate` keeps only what HiGHS proves optimal) and the
    answer checker (:func:`check_answer`: ``<answer>`` tag, 0.2 % relative tolerance).
:mod:`~icml26.optengine.paradigms`
    Pure-text (PTR), computation-assisted (CompPTR) and solver-integrated (SIR)
    reasoning as interfaces (:func:`run_paradigm`), transparent stand-ins, and the
    error decomposition.

Nothing here is a language model: the stand-ins show the *mechanisms* the paper names,
not the paper's accuracies.
"""

from __future__ import annotations

from .checker import REL_TOL, SPECIAL, check_answer, parse_answer
from .instances import Instance, generate, generate_grid, instance_from_text, make_instance
from .lp import INF, LinearModel, ModelBuilder, SolveResult, model_key, solve, solve_lp_text, to_highs, to_lp_text
from .paradigms import (
    PARADIGMS,
    PLAN_FORMAT,
    classify,
    comp_standin,
    make_prompt,
    ptr_standin,
    recognise,
    run_paradigm,
    sir_standin,
    slipped_sum,
)
from .problems import (
    CLASSES,
    TSP,
    BinPacking,
    Inventory,
    JobShop,
    Knapsack,
    NetworkFlow,
    PlanCheck,
    Pollution,
    Portfolio,
    ProblemClass,
    Production,
    Transportation,
    first_fit_decreasing,
    get_class,
    least_cost_method,
)
from .text import Block, InstanceError

__all__ = [
    "INF",
    "LinearModel",
    "ModelBuilder",
    "SolveResult",
    "solve",
    "solve_lp_text",
    "to_highs",
    "to_lp_text",
    "model_key",
    "Block",
    "InstanceError",
    "ProblemClass",
    "PlanCheck",
    "CLASSES",
    "get_class",
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
    "Instance",
    "make_instance",
    "instance_from_text",
    "generate",
    "generate_grid",
    "REL_TOL",
    "SPECIAL",
    "parse_answer",
    "check_answer",
    "PARADIGMS",
    "PLAN_FORMAT",
    "make_prompt",
    "recognise",
    "slipped_sum",
    "ptr_standin",
    "comp_standin",
    "sir_standin",
    "classify",
    "run_paradigm",
]
