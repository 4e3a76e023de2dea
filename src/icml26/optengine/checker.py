"""The answer checker: read the ``<answer>`` tag, compare within 0.2 %.

Where our parsing differs from the authors'
-------------------------------------------
The authors' pure-text evaluator (``OPTEngine/opt/evaluation_2.py``,
``AnalyticalEvaluator``) takes the *first* ``<answer>…</answer>`` (lower-case tags
only), converts its content with Python's ``float`` (or lower-cases a special string),
and accepts :math:`|\\hat y - y| \\le 0.002\\,|y|`. :func:`parse_answer` and
:func:`check_answer` differ in three ways, none of which touches this book's results
(the stand-ins always write one lower-case tag holding a plain decimal number, and no
stand-in answer lies at exactly 0.2 % from the optimum):

1. at exactly 0.2 % relative error we accept (a ``1e-12`` relative float slack keeps the
   edge inclusive), whereas their bare float comparison rejects about half of such
   answers, depending on how the decimal values round in binary;
2. we read the *last* tag, case-insensitively (a response that revises its answer is
   judged on the final one); they read the first, lower-case;
3. we accept thousands separators and a currency sign (``1,234.5``, ``$742``), which
   ``float`` rejects; ``float`` accepts ``742.``, ``.5`` and ``1_234``, which we reject.

References
----------
.. [1] Chen et al., "OPT-Engine", ICML 2026, arXiv:2601.19924, Sec. 4 (accuracy: relative
   error at most 0.2 %). Authors' code: https://github.com/Cardinal-Operations/OPTEngine,
   ``OPTEngine/opt/evaluation_2.py``.
"""

from __future__ import annotations

import math
import re

from ._checks import is_real

__all__ = ["REL_TOL", "SPECIAL", "parse_answer", "check_answer"]

REL_TOL = 0.002  # the authors' relative tolerance (|pred - true| <= 0.002 |true|)
SPECIAL = ("infeasible", "unbounded")
_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.S | re.I)
_NUMBER = re.compile(r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?")


def parse_answer(text: str | None) -> float | str | None:
    """The last ``<answer>...</answer>`` of ``text`` as a float, or ``"infeasible"`` / ``"unbounded"``.

    Tags are matched case-insensitively; the content may carry a leading ``$`` and
    thousands separators (``1,234.5`` reads as 1234.5). See the module docstring for
    how this differs from the authors' parser.

    Parameters
    ----------
    text : str or None
        A response; ``None`` stands for no response.

    Returns
    -------
    float, str or None
        The number, the special string, or ``None`` if there is no tag or its content is
        neither a number nor a special string.

    References
    ----------
    .. [1] Chen et al., ICML 2026 (arXiv:2601.19924), Sec. 4; authors' ``evaluation_2.py``
       (``AnalyticalEvaluator.extract_answer``).
    """
    if text is None:
        return None
    if not isinstance(text, str):
        raise TypeError(f"text must be a str or None, got {type(text).__name__}")
    tags = _ANSWER.findall(text)
    if not tags:
        return None
    body = tags[-1].strip().strip("$ ").lower()
    if body in SPECIAL:
        return body
    m = _NUMBER.search(body)
    if not m or m.group(0) != body.replace(" ", ""):
        return None
    return float(m.group(0).replace(",", ""))


def check_answer(pred: float | str | None, truth: float | str, rel_tol: float = REL_TOL) -> bool:
    r"""The paper's correctness rule: :math:`|\hat y-y|\le 0.002\,|y|`; special strings must match.

    This is the authors' rule at the current version of their code
    (``abs(pred - true) <= 0.002 * abs(true)`` in ``OPTEngine/opt/evaluation_2.py``).
    A hair of float slack (``1e-12 * max(1, |y|)``) keeps the edge
    :math:`|\hat y-y| = 0.002|y|` inclusive, where their bare float comparison rejects
    about half of such answers (see the module docstring).

    Parameters
    ----------
    pred : float, str or None
        A parsed answer (:func:`parse_answer`); ``None`` or NaN is never correct.
    truth : float or str
        The stored optimum (finite), or ``"infeasible"`` / ``"unbounded"``.
    rel_tol : float
        Relative tolerance in ``[0, 1)``; the authors use 0.002.

    Returns
    -------
    bool
        Whether the answer counts as correct.

    References
    ----------
    .. [1] Chen et al., ICML 2026 (arXiv:2601.19924), Sec. 4; authors' ``evaluation_2.py``.
    """
    if not is_real(rel_tol) or not (0.0 <= float(rel_tol) < 1.0):
        raise ValueError(f"rel_tol={rel_tol!r} must lie in [0, 1)")
    if isinstance(truth, str):
        if truth.strip().lower() not in SPECIAL:
            raise ValueError(f"truth={truth!r} is not valid; use a finite number or one of {SPECIAL}")
    elif not is_real(truth):
        raise TypeError(f"truth must be a number or one of {SPECIAL}, got {type(truth).__name__}")
    elif not math.isfinite(float(truth)):
        raise ValueError(f"truth={truth!r} must be finite")
    if pred is not None and not isinstance(pred, str) and not is_real(pred):
        raise TypeError(f"pred must be a number, a str or None, got {type(pred).__name__}")
    if pred is None:
        return False
    if isinstance(truth, str):
        return isinstance(pred, str) and pred.strip().lower() == truth.strip().lower()
    if isinstance(pred, str):
        return False
    if not math.isfinite(float(pred)):
        return False
    return abs(float(pred) - float(truth)) <= rel_tol * abs(float(truth)) + 1e-12 * max(1.0, abs(float(truth)))
