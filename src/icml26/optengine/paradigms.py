"""The three answering paradigms as interfaces, their stand-ins, and the error decomposition.

:func:`run_paradigm` scores any callable ``prompt -> answer`` under pure-text reasoning
(PTR), computation-assisted reasoning (CompPTR) or solver-integrated reasoning (SIR).
:func:`ptr_standin`, :func:`comp_standin` and :func:`sir_standin` are transparent
stand-ins for a language model (by-hand heuristics with an arithmetic-slip model; a
template-parsing formulator that calls HiGHS). They show the *mechanisms* the paper
names, not the paper's accuracies. :func:`classify` names each error: extraction,
feasibility, objective (a sub-optimal plan), arithmetic, or formulation.

References
----------
.. [1] Chen et al., "OPT-Engine", ICML 2026, arXiv:2601.19924, Secs. 4-5 (the three
   paradigms, the error decomposition, linguistic perturbations). Authors' code:
   https://github.com/Cardinal-Operations/OPTEngine (``OPTEngine/opt/evaluation_2.py``
   for pure text; ``Evaluation/`` for solver code).
"""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from .. import _common
from .._common import RandomState, check_random_state, seed_from
from ._checks import check_probability, check_style, check_styles, check_type
from .checker import check_answer, parse_answer
from .instances import Instance
from .lp import LinearModel, model_key, solve, solve_lp_text
from .problems import CLASSES, ProblemClass, get_class
from .text import InstanceError

__all__ = [
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

PARADIGMS = ("ptr", "comp", "sir")

PLAN_FORMAT = {
    "Knapsack": "a JSON list of the chosen item numbers",
    "TSP": "a JSON list of city numbers in visiting order, starting with 1",
    "BinPacking": "a JSON list giving the bin number of each item, in item order",
    "JobShop": "a JSON list of lists: start time of each job's operations, in route order",
    "Inventory": "a JSON list of the order quantity of each period",
    "Portfolio": "a JSON list of the weight of each asset",
    "NetworkFlow": "a JSON list of lists: units shipped from each warehouse to each store",
    "Transportation": "a JSON list of lists: units shipped from each plant to each customer",
    "Production": "a JSON list of the quantity of each product",
    "Pollution": "a JSON list of lists: units of each source treated by each method",
}

_PREAMBLE = {
    "ptr": "Solve the optimisation problem below by reasoning in plain text. Do not write or run code and do not use a solver; "
    "work out the arithmetic yourself.",
    "comp": "Solve the optimisation problem below by reasoning step by step. You may use a calculator or Python for arithmetic, "
    "but not an optimisation solver.",
    "sir": "Formulate the optimisation problem below as a linear or mixed-integer programme. Return the model in CPLEX LP "
    "file format inside a ```lp fenced block (sections Maximize/Minimize, Subject To, Bounds, General/Binary, End). "
    "The model will be solved with HiGHS and its optimal objective value taken as your answer.",
}


def _check_paradigm(paradigm: Any) -> str:
    if paradigm not in PARADIGMS:
        raise ValueError(f"paradigm={paradigm!r} is not valid; use one of {PARADIGMS}")
    return paradigm


def make_prompt(question: str, paradigm: str, problem_class: str | None = None) -> str:
    """The prompt for ``paradigm`` around ``question``.

    Parameters
    ----------
    question : str
        The word problem.
    paradigm : {"ptr", "comp", "sir"}
        Pure text, computation-assisted, or solver-integrated.
    problem_class : str, optional
        For PTR/CompPTR: ask for the decision in ``<plan>`` tags, in this class's format
        (enables the error decomposition).

    Returns
    -------
    str
        The prompt.

    References
    ----------
    .. [1] Chen et al., ICML 2026 (arXiv:2601.19924), Sec. 4; authors' prompt in ``evaluation_2.py``.
    """
    check_type(question, str, "question", "a str")
    _check_paradigm(paradigm)
    tail = ""
    if paradigm != "sir":
        tail = (
            "\n\nEnd with the optimal objective value as <answer>number</answer> (or <answer>infeasible</answer> / "
            "<answer>unbounded</answer>)."
        )
        if problem_class is not None:
            tail += f" Also give your decision as <plan>{PLAN_FORMAT[get_class(problem_class).name]}</plan>."
    return f"{_PREAMBLE[paradigm]}\n\n### Problem\n{question}{tail}"


def recognise(text: str, known_styles: Sequence[int] = (0, 1)) -> tuple[ProblemClass, dict, tuple[str, ...]]:
    """Find the class whose data blocks ``text`` matches, and parse it.

    Parameters
    ----------
    text : str
        A description (or a prompt that contains one).
    known_styles : sequence of {0, 1, 2}
        Which phrasings the reader knows.

    Returns
    -------
    cls : ProblemClass
        The class recognised.
    params : dict
        The parsed parameters.
    missing : tuple of str
        Constraint families whose sentence was not understood.

    Raises
    ------
    InstanceError
        If no class's data blocks match.

    References
    ----------
    .. [1] Chen et al., ICML 2026 (arXiv:2601.19924) (the SIR stand-in's reading step).
    """
    check_type(text, str, "text", "a str")
    errors = []
    for cls in CLASSES.values():
        try:
            p, missing = cls.parse(text, known_styles)
            return cls, p, missing
        except InstanceError as e:
            errors.append(str(e))
    raise InstanceError("the text matches none of the problem classes: " + "; ".join(errors[:3]) + " …")


def slipped_sum(terms: np.ndarray, eps: float, random_state: RandomState = None) -> float:
    r"""Sum ``terms`` as a careless human would: each elementary operation may slip.

    A term :math:`t_k` is one multiplication (its computation) and one addition into the
    running total. Each of these :math:`2K` operations slips independently with
    probability ``eps``; a slip writes a wrong digit in one of the three leading digit
    places of that operation's result :math:`v`: place :math:`10^{e-j}`, :math:`e=\lfloor
    \log_{10}|v|\rfloor`, :math:`j` uniform on :math:`\{0,1,2\}`, the digit replaced by one of
    the nine others uniformly. A slip in the running total carries into the final sum, so
    the sum is exact with probability :math:`(1-\varepsilon)^{2K}`.

    Parameters
    ----------
    terms : array_like, shape (K,)
        Finite terms.
    eps : float
        Slip probability per operation, in ``[0, 1]``; ``0`` returns the exact sum (the
        computation-assisted stand-in).
    random_state : int, numpy.random.Generator or None
        Source of randomness (see :func:`icml26._common.check_random_state`).

    Returns
    -------
    float
        The (possibly wrong) sum.

    References
    ----------
    .. [1] Chen et al., ICML 2026 (arXiv:2601.19924), Sec. 5 (arithmetic errors in pure-text
       reasoning); the slip model is ours.
    """
    terms = np.asarray(terms, float).ravel()  # (K,)
    if not np.all(np.isfinite(terms)):
        raise ValueError("terms must be finite numbers")
    eps = check_probability(eps, "eps")
    rng = check_random_state(random_state)
    if eps == 0.0 or terms.size == 0:
        return float(terms.sum())
    partial = np.cumsum(terms)  # (K,) running totals
    vals = np.concatenate([terms, partial])  # (2K,) every intermediate result
    slip = rng.random(vals.size) < eps
    k = int(slip.sum())
    if k == 0:
        return float(partial[-1])
    v = vals[slip]
    av = np.abs(v)
    e = np.floor(np.log10(np.where(av > 0, av, 1.0)))
    place = 10.0 ** (e - rng.integers(0, 3, k))  # (k,) digit place that slips
    digit = np.floor(av / place + 1e-9) % 10  # the digit written there
    wrong = (digit + rng.integers(1, 10, k)) % 10  # one of the nine other digits
    delta = np.sign(np.where(v != 0, v, 1.0)) * (wrong - digit) * place
    return float(partial[-1] + delta.sum())


def ptr_standin(eps: float = 0.02, random_state: RandomState = 0) -> Callable[[str], str]:
    """Pure-text reasoning stand-in: a by-hand heuristic plus careless arithmetic.

    The returned callable reads the problem (template parser), builds the class's
    heuristic plan (greedy / nearest neighbour / first-fit decreasing / list scheduling /
    least-cost method ...), adds up its objective with :func:`slipped_sum` at slip rate
    ``eps`` per operation, and answers ``<plan>…</plan><answer>…</answer>``. Each answer
    draws from ``default_rng([seed, crc32(prompt)])``, with ``seed`` derived once from
    ``random_state`` (an int is used as it is), so an answer does not depend on
    evaluation order.

    Parameters
    ----------
    eps : float
        Slip probability per arithmetic operation, in ``[0, 1]``.
    random_state : int, numpy.random.Generator or None
        Source of randomness (see :func:`icml26._common.seed_from`).

    Returns
    -------
    callable
        ``prompt -> response text``.

    References
    ----------
    .. [1] Chen et al., ICML 2026 (arXiv:2601.19924), Secs. 4-5 (PTR; its errors). A stand-in, not an LLM.
    """
    eps = check_probability(eps, "eps")
    base = seed_from(random_state)

    def answer(prompt: str) -> str:
        try:
            cls, p, missing = recognise(prompt)
        except InstanceError:
            return "I could not read the problem."
        if missing:
            return f"I could not read the {', '.join(missing)} condition(s)."
        plan = cls.heuristic(p)
        chk = cls.check_plan(p, plan)
        value = slipped_sum(chk.terms, eps, np.random.default_rng([base, zlib.crc32(prompt.encode())]))
        return f"{cls.name}: heuristic plan, objective added up by hand.\n<plan>{json.dumps(plan)}</plan>\n<answer>{value:.10g}</answer>"

    answer.__name__ = f"ptr_standin(eps={eps})"
    return answer


def comp_standin() -> Callable[[str], str]:
    """Computation-assisted stand-in: the same heuristic plan as :func:`ptr_standin`, exact arithmetic.

    Parameters
    ----------
    None

    Returns
    -------
    callable
        ``prompt -> response text`` (it draws no random numbers).

    References
    ----------
    .. [1] Chen et al., ICML 2026 (arXiv:2601.19924), Secs. 4-5 (CompPTR). A stand-in, not an LLM.
    """
    f = ptr_standin(0.0, 0)
    f.__name__ = "comp_standin"
    return f


def sir_standin(known_styles: Sequence[int] = (0, 1)) -> Callable[[str], LinearModel | None]:
    """Solver-integrated stand-in: a template-parsing formulator.

    It knows the phrasings of ``known_styles`` only. A constraint sentence it cannot
    match is left out of the model (``model.meta["dropped"]`` lists them); unreadable
    data gives no model at all. The engine then solves whatever model it returns.

    Parameters
    ----------
    known_styles : sequence of {0, 1, 2}
        The phrasings the formulator knows.

    Returns
    -------
    callable
        ``prompt -> LinearModel`` (or ``None``).

    References
    ----------
    .. [1] Chen et al., ICML 2026 (arXiv:2601.19924), Secs. 4-5 (SIR; formulation errors). A stand-in, not an LLM.
    """
    known = check_styles(known_styles)

    def answer(prompt: str) -> LinearModel | None:
        try:
            cls, p, missing = recognise(prompt, known)
        except InstanceError:
            return None
        model = cls.build(p, drop=frozenset(missing))
        model.meta["dropped"] = tuple(missing)
        return model

    answer.__name__ = f"sir_standin(known={known})"
    return answer


_PLAN = re.compile(r"<plan>(.*?)</plan>", re.S | re.I)


def _plan_of(text: str) -> Any:
    tags = _PLAN.findall(text)
    if not tags:
        return None
    try:
        return json.loads(tags[-1])
    except (json.JSONDecodeError, ValueError):
        return None


def _classify_text(inst: Instance, output: Any, row: dict) -> dict:
    cls, truth = inst.cls, inst.answer
    pred = parse_answer(output) if isinstance(output, str) else None
    row["pred"] = pred
    if pred is None:
        return row
    if check_answer(pred, truth):
        row["category"] = "correct"
        return row
    plan = _plan_of(output)
    if plan is None:
        row["category"] = "unexplained"
        return row
    try:
        chk = cls.check_plan(inst.params, plan)
    except (ValueError, TypeError, IndexError):
        row["category"], row["violated"] = "feasibility", "unreadable plan"
        return row
    if not chk.feasible:
        row["category"], row["violated"] = "feasibility", ",".join(chk.violated)
    elif check_answer(chk.objective, truth):
        row["category"] = "arithmetic"
    else:
        row["category"] = "objective"
    return row


def _classify_model(inst: Instance, output: Any, row: dict, cache: dict | None) -> dict:
    cls, truth = inst.cls, inst.answer
    try:
        if output is None:
            return row
        if isinstance(output, str):
            res = solve_lp_text(output)
        elif isinstance(output, LinearModel):
            key = model_key(output) if cache is not None else None
            if key is not None and key in cache:
                res = cache[key]
            else:
                res = solve(output, time_limit=cls.time_limit or 60.0)
                if key is not None:
                    cache[key] = res
        else:
            return row
    except (ValueError, TypeError):
        return row
    if isinstance(output, LinearModel):
        row["dropped"] = ",".join(output.meta.get("dropped", ()))
    if res.status != "optimal":
        row["pred"] = res.answer
        row["category"] = "correct" if check_answer(res.answer, truth) else "formulation-status"
        return row
    pred = cls.finish_objective(res.objective)
    row["pred"] = pred
    row["category"] = "correct" if check_answer(pred, truth) else "formulation-objective"
    return row


def classify(inst: Instance, paradigm: str, output: Any, cache: dict | None = None) -> dict:
    """Score one answer and name its error.

    Categories: ``correct``; ``extraction`` (no answer / no model could be read); for
    PTR and CompPTR, with a ``<plan>``: ``feasibility`` (the plan breaks a constraint),
    ``objective`` (feasible but sub-optimal plan), ``arithmetic`` (the plan is optimal,
    the reported value is not its value); without a plan: ``unexplained``. For SIR:
    ``formulation-status`` (the model is infeasible/unbounded/unsolved) or
    ``formulation-objective`` (it solves to a different optimum).

    Parameters
    ----------
    inst : Instance
        The instance answered.
    paradigm : {"ptr", "comp", "sir"}
        How the answer is read.
    output : str, LinearModel or None
        The answer function's output: text for PTR/CompPTR; a model or LP text for SIR.
    cache : dict, optional
        Solved SIR models by :func:`model_key`, shared across calls.

    Returns
    -------
    dict
        ``pred``, ``category``, ``violated`` (families a plan breaks), ``dropped``
        (families a stand-in formulator left out).

    References
    ----------
    .. [1] Chen et al., ICML 2026 (arXiv:2601.19924), Sec. 5 (error analysis).
    """
    check_type(inst, Instance, "inst", "an Instance")
    _check_paradigm(paradigm)
    check_type(cache, (dict, type(None)), "cache", "a dict or None")
    row: dict[str, Any] = {"pred": None, "category": "extraction", "violated": "", "dropped": ""}
    if paradigm in ("ptr", "comp"):
        return _classify_text(inst, output, row)
    return _classify_model(inst, output, row, cache)


COLUMNS = [
    "problem_class",
    "size",
    "seed",
    "index",
    "style",
    "paradigm",
    "truth",
    "pred",
    "correct",
    "category",
    "violated",
    "dropped",
]


def run_paradigm(
    answer_fn: Callable[[str], Any],
    instances: Sequence[Instance],
    paradigm: str,
    *,
    style: int = 0,
    overrides: Mapping[str, int] | None = None,
    progress: bool = False,
    cache: dict | None = None,
):
    """Run ``answer_fn`` on ``instances`` under ``paradigm`` and score every answer.

    Parameters
    ----------
    answer_fn : callable
        ``prompt -> answer``. For ``"ptr"``/``"comp"`` the answer is text with
        ``<answer>…</answer>`` (and optionally ``<plan>…</plan>``, which enables the error
        decomposition). For ``"sir"`` it is a :class:`LinearModel` or CPLEX LP-format text,
        which the engine solves with HiGHS. An LLM is evaluated by wrapping its API call.
    instances : sequence of Instance
        What to ask.
    paradigm : {"ptr", "comp", "sir"}
        The paradigm.
    style : {0, 1, 2}
        Which phrasing of each question to show (0 canonical, 1 seen, 2 unseen paraphrase).
    overrides : dict, optional
        Per-family styles (see :meth:`ProblemClass.render`); families a class lacks are ignored.
    progress : bool
        Report progress with :func:`icml26._common.progress`.
    cache : dict, optional
        For SIR with :class:`LinearModel` answers: a dict shared across calls so that a model
        returned twice (same :func:`model_key`) is solved once.

    Returns
    -------
    pandas.DataFrame
        One row per instance; columns ``problem_class, size, seed, index, style,
        paradigm, truth, pred, correct, category, violated, dropped``.

    References
    ----------
    .. [1] Chen et al., ICML 2026 (arXiv:2601.19924), Secs. 4-5; authors' evaluators in
       ``OPTEngine/opt/evaluation_2.py`` and ``Evaluation/``.
    """
    import pandas as pd

    _check_paradigm(paradigm)
    if not callable(answer_fn):
        raise TypeError("answer_fn must be callable: prompt text -> answer")
    if isinstance(instances, Instance) or not isinstance(instances, Sequence):
        raise TypeError(f"instances must be a sequence of Instance, got {type(instances).__name__}")
    bad = [type(i).__name__ for i in instances if not isinstance(i, Instance)]
    if bad:
        raise TypeError(f"instances must be a sequence of Instance, got {', '.join(sorted(set(bad)))}")
    check_style(style)
    check_type(overrides, (Mapping, type(None)), "overrides", "a mapping of family -> style")
    check_type(cache, (dict, type(None)), "cache", "a dict or None")
    rows = []
    for inst in _common.progress(instances, f"{paradigm} style {style}", disable=not progress, leave=False):
        ov = {k: v for k, v in (overrides or {}).items() if k in inst.cls.families}
        prompt = make_prompt(inst.question(style, ov), paradigm, inst.problem_class)
        row = classify(inst, paradigm, answer_fn(prompt), cache)
        rows.append(
            {
                "problem_class": inst.problem_class,
                "size": inst.size,
                "seed": inst.seed,
                "index": inst.index,
                "style": style,
                "paradigm": paradigm,
                "truth": inst.answer,
                **row,
                "correct": row["category"] == "correct",
            }
        )
    return pd.DataFrame(rows, columns=COLUMNS)
