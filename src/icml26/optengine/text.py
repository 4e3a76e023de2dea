"""Word problems from templates, and templates inverted back into numbers.

An instance's text is a sequence of :class:`Block` s, each with up to three phrasings
(canonical, a seen paraphrase, an unseen paraphrase). A template is plain text with
``{field}`` slots (``{field*}`` for a comma-separated list); :func:`render` fills one,
and the same template, compiled to a regular expression, reads the numbers back.

References
----------
.. [1] Chen et al., "OPT-Engine", ICML 2026, arXiv:2601.19924, Sec. 3 (the engine writes
   each verified instance out as a word problem). Authors' code:
   https://github.com/Cardinal-Operations/OPTEngine (their texts are LLM rephrasings;
   ours are fixed templates).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._checks import check_real, check_type

__all__ = ["Block", "InstanceError", "fmt_number", "render", "template_regex", "rows_by"]

_NUM = r"[-+]?\d+(?:\.\d+)?"
_LIST = _NUM + r"(?:\s*,\s*" + _NUM + r")*"
FIELD = re.compile(r"\{(\w+)(\*?)\}")


class InstanceError(ValueError):
    """An instance description that is malformed, or an instance that has no optimum.

    Parameters
    ----------
    message : str
        What is wrong, naming the part of the description.

    References
    ----------
    .. [1] Chen et al., ICML 2026 (arXiv:2601.19924): instances without a proven optimum are discarded.
    """


def fmt_number(x: Any) -> str:
    """Numbers as a reader writes them: integers bare, floats with at most 3 decimals.

    Parameters
    ----------
    x : number or array_like
        A number, or a sequence (written comma-separated).

    Returns
    -------
    str
        The text.

    References
    ----------
    .. [1] Chen et al., ICML 2026 (arXiv:2601.19924) (instance texts state every number).
    """
    if isinstance(x, (list, tuple, np.ndarray)):
        return ", ".join(fmt_number(v) for v in np.asarray(x).ravel())
    xf = check_real(x, "x")
    if abs(xf - round(xf)) < 1e-9:
        return str(int(round(xf)))
    return f"{xf:.3f}".rstrip("0").rstrip(".")


def render(template: str, values: Mapping[str, Any]) -> str:
    """Fill the ``{field}`` slots of ``template`` from ``values`` (formatted by :func:`fmt_number`).

    Parameters
    ----------
    template : str
        Text with ``{name}`` or ``{name*}`` slots.
    values : mapping
        A value for every slot.

    Returns
    -------
    str
        The filled text.

    References
    ----------
    .. [1] Chen et al., ICML 2026 (arXiv:2601.19924), Sec. 3.
    """
    check_type(template, str, "template", "a str")
    check_type(values, Mapping, "values", "a mapping of slot names to numbers")
    missing = sorted({m.group(1) for m in FIELD.finditer(template)} - set(values))
    if missing:
        raise ValueError(f"no value for the template slot(s) {missing}")
    return FIELD.sub(lambda m: fmt_number(values[m.group(1)]), template)


_REGEX_CACHE: dict[str, re.Pattern] = {}


def template_regex(template: str) -> re.Pattern:
    """Invert a template: literal text (whitespace-insensitive) with named number groups.

    A slot repeated in the template must repeat the same number.

    Parameters
    ----------
    template : str
        Text with ``{name}`` or ``{name*}`` slots.

    Returns
    -------
    re.Pattern
        A pattern whose named groups are the slots.

    References
    ----------
    .. [1] Chen et al., ICML 2026 (arXiv:2601.19924) (the text carries the whole instance).
    """
    check_type(template, str, "template", "a str")
    if template in _REGEX_CACHE:
        return _REGEX_CACHE[template]
    out, pos, seen = [], 0, set()
    for m in FIELD.finditer(template):
        lit = re.escape(template[pos : m.start()])
        out.append(re.sub(r"(\\ |\\\n)+", r"\\s+", lit))
        name, star = m.group(1), m.group(2)
        if name in seen:
            out.append(f"(?P={name})")
        else:
            out.append(f"(?P<{name}>{_LIST if star else _NUM})")
            seen.add(name)
        pos = m.end()
    out.append(re.sub(r"(\\ |\\\n)+", r"\\s+", re.escape(template[pos:])))
    rx = re.compile("".join(out))
    _REGEX_CACHE[template] = rx
    return rx


def _read_number(s: str) -> float | list[float]:
    """A matched slot as a float, or a list of floats for a comma-separated list."""
    if "," in s:
        return [float(v) for v in s.split(",")]
    return float(s)


@dataclass(frozen=True)
class Block:
    """One piece of an instance's text.

    Parameters
    ----------
    kind : {"text", "rows"}
        ``"text"`` is rendered once from the scalar fields; ``"rows"`` once per row of
        ``rows_key``.
    family : str
        ``"data"`` for blocks that must be read for the text to make sense; any other
        value names a constraint family that a reader may miss (it is then left out of
        the model).
    phrasings : tuple of str
        ``phrasings[k]`` is the wording of style ``k``; style ``k`` uses
        ``phrasings[min(k, len - 1)]``.
    rows_key : str, optional
        For ``kind="rows"``: which row list to render.

    References
    ----------
    .. [1] Chen et al., ICML 2026 (arXiv:2601.19924), Sec. 5 (linguistic perturbations of the constraints).
    """

    kind: str
    family: str
    phrasings: tuple[str, ...]
    rows_key: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in ("text", "rows"):
            raise ValueError(f"kind={self.kind!r} is not valid; use 'text' or 'rows'")
        if not self.phrasings or not all(isinstance(p, str) for p in self.phrasings):
            raise ValueError("phrasings must be a non-empty tuple of template strings")
        if (self.kind == "rows") != (self.rows_key is not None):
            raise ValueError("a 'rows' block needs rows_key, and a 'text' block takes none")

    def phrasing(self, style: int) -> str:
        """The template of a style.

        Parameters
        ----------
        style : {0, 1, 2}
            The style.

        Returns
        -------
        str
            ``phrasings[min(style, len - 1)]`` (the last phrasing stands in for higher styles).

        References
        ----------
        .. [1] Chen et al., ICML 2026 (arXiv:2601.19924), Sec. 5.
        """
        return self.phrasings[min(style, len(self.phrasings) - 1)]


def rows_by(rows: Sequence[Mapping[str, Any]], keys: Sequence[str], shape: tuple[int, ...], what: str) -> dict[str, np.ndarray]:
    """Scatter parsed row dicts (1-based indices in ``keys``) into arrays of ``shape``.

    Parameters
    ----------
    rows : sequence of dict
        One dict per parsed line, holding the index fields ``keys`` and value fields.
    keys : sequence of str
        The index fields, one per axis of ``shape`` (1-based in the text).
    shape : tuple of int
        Shape of the arrays to fill.
    what : str
        What a line describes, for error messages.

    Returns
    -------
    dict of str to ndarray
        One array per value field: shape ``shape`` (plus a trailing axis for list fields).

    Raises
    ------
    InstanceError
        When lines are missing, duplicated, out of range or ragged.

    References
    ----------
    .. [1] Chen et al., ICML 2026 (arXiv:2601.19924) (a malformed text is not an instance).
    """
    if len(rows) != int(np.prod(shape)):
        raise InstanceError(f"expected {int(np.prod(shape))} {what} lines, found {len(rows)}")
    idx = tuple(np.array([int(r[k]) - 1 for r in rows]) for k in keys)
    for a, n in zip(idx, shape):
        if a.min() < 0 or a.max() >= n:
            raise InstanceError(f"{what} index out of range 1..{n}")
    flat = np.ravel_multi_index(idx, shape)
    if np.unique(flat).size != flat.size:
        raise InstanceError(f"duplicate {what} lines")
    out = {}
    for name in rows[0]:
        if name in keys:
            continue
        vals = [r[name] for r in rows]
        if isinstance(vals[0], list):
            arr = np.empty(shape + (len(vals[0]),))
            for f, v in zip(flat, vals):
                if not isinstance(v, list) or len(v) != len(vals[0]):
                    raise InstanceError(f"ragged list in {what} lines")
                arr.reshape(-1, len(vals[0]))[f] = v
        else:
            arr = np.empty(shape)
            arr.ravel()[flat] = vals
        out[name] = arr
    return out
