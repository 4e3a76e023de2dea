"""Verified instances: draw, solve, keep only what the solver proves optimal.

References
----------
.. [1] Chen et al., "OPT-Engine", ICML 2026, arXiv:2601.19924, Sec. 3 (an instance is kept
   only if the solver returns OPTIMAL). Authors' code:
   https://github.com/Cardinal-Operations/OPTEngine (``OPTEngine/generation_v3.py``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .. import _common
from .._common import RandomState, check_random_state
from ._checks import check_int, check_real, check_type
from .lp import LinearModel, solve
from .problems import CLASS_IDS, CLASSES, ProblemClass, get_class
from .text import InstanceError

__all__ = ["Instance", "make_instance", "instance_from_text", "generate", "generate_grid"]


@dataclass
class Instance:
    """A verified instance: parameters and the optimum HiGHS proved for them.

    Parameters
    ----------
    problem_class : str
        Name of its class (a key of :data:`CLASSES`).
    size : int
        Its size knob.
    params : dict
        Its parameters.
    answer : float
        The proven optimum, rounded as :meth:`ProblemClass.finish_objective` does.
    index : int
        Its number within its (class, size) cell.
    solve_seconds : float
        Wall time of the verifying solve.
    seed : int or None
        The int ``random_state`` it was drawn with (``None`` for a generator or entropy).

    References
    ----------
    .. [1] Chen et al., ICML 2026 (arXiv:2601.19924), Sec. 3.
    """

    problem_class: str
    size: int
    params: dict
    answer: float
    index: int = 0
    solve_seconds: float = 0.0
    seed: int | None = 0

    def __post_init__(self) -> None:
        self.problem_class = get_class(self.problem_class).name
        self.size = self.cls.check_size(self.size)
        check_type(self.params, dict, "params", "a dict of instance parameters")
        check_real(self.answer, "answer")
        check_int(self.index, "index", low=0)
        check_real(self.solve_seconds, "solve_seconds")
        if self.seed is not None:
            check_int(self.seed, "seed", low=0)

    @property
    def cls(self) -> ProblemClass:
        """The instance's :class:`ProblemClass`."""
        return CLASSES[self.problem_class]

    def question(self, style: int = 0, overrides: Mapping[str, int] | None = None) -> str:
        """The word problem.

        Parameters
        ----------
        style : {0, 1, 2}
            0 canonical, 1 seen paraphrase, 2 unseen paraphrase.
        overrides : mapping of str to int, optional
            Per-family styles (see :meth:`ProblemClass.render`).

        Returns
        -------
        str
            The text.

        References
        ----------
        .. [1] Chen et al., ICML 2026 (arXiv:2601.19924), Secs. 3 and 5.
        """
        return self.cls.render(self.params, style, overrides)

    def model(self) -> LinearModel:
        """The exact model.

        Parameters
        ----------
        None

        Returns
        -------
        LinearModel
            The model HiGHS verified.

        References
        ----------
        .. [1] Chen et al., ICML 2026 (arXiv:2601.19924), Sec. 3.
        """
        return self.cls.build(self.params)


def make_instance(problem_class: str, params: Mapping, *, index: int = 0, time_limit: float | None = None) -> Instance:
    """Build and solve ``params``; keep them only if HiGHS proves an optimum.

    Parameters
    ----------
    problem_class : str
        A class name.
    params : mapping
        The instance parameters (as :meth:`ProblemClass.sample` returns them).
    index : int
        The instance's number within its cell.
    time_limit : float, optional
        Seconds for HiGHS; default the class's own limit.

    Returns
    -------
    Instance
        The verified instance.

    Raises
    ------
    InstanceError
        If HiGHS proves no optimum (infeasible, unbounded, time limit).

    References
    ----------
    .. [1] Chen et al., ICML 2026 (arXiv:2601.19924), Sec. 3 (the solver filter).
    """
    cls = get_class(problem_class)
    check_type(params, Mapping, "params", "a mapping of instance parameters")
    index = check_int(index, "index", low=0)
    try:
        model = cls.build(params)
    except (KeyError, IndexError, AttributeError) as e:
        raise ValueError(f"params do not describe a {cls.name} instance: {type(e).__name__}: {e}") from None
    res = solve(model, time_limit=time_limit if time_limit is not None else cls.time_limit)
    if res.status != "optimal":
        raise InstanceError(f"{cls.name} instance has no proven optimum: HiGHS status {res.status!r}")
    return Instance(cls.name, cls.size_of(params), dict(params), cls.finish_objective(res.objective), int(index), res.seconds)


def instance_from_text(problem_class: str, text: str) -> Instance:
    """Read a description in any of the engine's phrasings, then solve it.

    Parameters
    ----------
    problem_class : str
        The class the text describes.
    text : str
        The description.

    Returns
    -------
    Instance
        The instance it describes, with its proven optimum.

    Raises
    ------
    InstanceError
        (a ``ValueError``) If the text is malformed — a part is missing, counts
        disagree — or the instance it describes has no optimum.

    References
    ----------
    .. [1] Chen et al., ICML 2026 (arXiv:2601.19924) (the text alone carries the instance).
    """
    cls = get_class(problem_class)
    params, missing = cls.parse(text, known_styles=(0, 1, 2))
    if missing:
        raise InstanceError(f"{cls.name}: the description lacks the {', '.join(missing)} constraint(s)")
    return make_instance(cls.name, params)


def generate(
    problem_class: str, size: int, n: int, *, random_state: RandomState = 0, max_tries: int | None = None
) -> list[Instance]:
    """``n`` verified instances of ``problem_class`` at ``size``, reproducible from ``random_state``.

    An int ``random_state`` draws with ``numpy.random.default_rng([random_state, class
    id, size])``, so that every (class, size) cell has a stream of its own and adding a
    size to a grid changes no other cell; a generator is drawn from directly. A draw is
    kept only if HiGHS proves it optimal within the class's time limit (the authors'
    filter).

    Parameters
    ----------
    problem_class : str
        A class name (a key of :data:`CLASSES`).
    size : int
        The size knob, in the class's ``size_range``.
    n : int
        How many instances (positive).
    random_state : int, numpy.random.Generator or None
        Source of randomness (see :func:`icml26._common.check_random_state`).
    max_tries : int, optional
        Draws allowed before giving up; default ``20 n + 20``.

    Returns
    -------
    list of Instance
        ``n`` instances, numbered 0..n-1.

    Raises
    ------
    RuntimeError
        If ``max_tries`` draws give fewer than ``n`` instances.

    References
    ----------
    .. [1] Chen et al., ICML 2026 (arXiv:2601.19924), Sec. 3; authors' ``OPTEngine/generation_v3.py``.
    """
    cls = get_class(problem_class)
    size = cls.check_size(size)
    n = check_int(n, "n")
    limit = check_int(max_tries, "max_tries") if max_tries is not None else 20 * n + 20
    if isinstance(random_state, np.random.Generator) or random_state is None:
        rng, seed = check_random_state(random_state), None
    else:
        check_random_state(random_state)  # validates the int
        rng, seed = np.random.default_rng([int(random_state), CLASS_IDS[cls.name], size]), int(random_state)
    out: list[Instance] = []
    tries = 0
    while len(out) < n:
        if tries >= limit:
            raise RuntimeError(f"{cls.name} size {size}: only {len(out)} of {n} draws were solved to optimality in {tries} tries")
        tries += 1
        p = cls.sample(size, rng)
        try:
            inst = make_instance(cls.name, p, index=len(out))
        except InstanceError:
            continue
        inst.seed = seed
        out.append(inst)
    return out


def generate_grid(spec: Mapping[str, Sequence[int]], n: int, seeds: Sequence[int], *, progress: bool = False) -> list[Instance]:
    """Verified instances for every ``class -> sizes`` pair of ``spec`` and every seed.

    Parameters
    ----------
    spec : mapping of str to sequence of int
        Class name -> the sizes to draw.
    n : int
        Instances per (class, size, seed) cell.
    seeds : sequence of int
        One independent engine run per seed (each passed as ``random_state`` to :func:`generate`).
    progress : bool
        Report progress with :func:`icml26._common.progress`.

    Returns
    -------
    list of Instance
        Each instance's ``index`` is unique within its (class, size) cell across seeds.

    References
    ----------
    .. [1] Chen et al., ICML 2026 (arXiv:2601.19924), Sec. 4 (accuracy against size, class by class).
    """
    if not isinstance(spec, Mapping) or not spec:
        raise ValueError(f"spec must be a non-empty mapping of class name -> sizes, got {spec!r}")
    n = check_int(n, "n")
    if isinstance(seeds, (str, bytes)) or not isinstance(seeds, Sequence) or not seeds:
        raise ValueError(f"seeds={seeds!r} must be a non-empty sequence of ints")
    seeds = list(seeds)
    for sd in seeds:
        if sd is None or isinstance(sd, np.random.Generator):
            raise TypeError(f"seeds must be ints (one engine run each), got {sd!r}")
        check_random_state(sd)
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds={seeds!r} must be distinct")
    for c, sizes in spec.items():
        cls = get_class(c)
        if isinstance(sizes, (str, bytes)) or not isinstance(sizes, Sequence) or not sizes:
            raise ValueError(f"spec[{c!r}] must be a non-empty sequence of sizes, got {sizes!r}")
        for s in sizes:
            cls.check_size(s)
    jobs = [(c, s, sd) for c, sizes in spec.items() for s in sizes for sd in seeds]
    out: list[Instance] = []
    for c, s, sd in _common.progress(jobs, "generate + solve", disable=not progress, leave=False):
        batch = generate(c, s, n, random_state=sd)
        for inst in batch:
            inst.index = seeds.index(sd) * n + inst.index
        out.extend(batch)
    return out
