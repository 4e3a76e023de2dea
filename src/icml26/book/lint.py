"""Checks of the chapter sources that a test runs: typed result numbers, claim kinds.

The book's rule is that a sentence stating a result is generated from the computed
values (``chapter.say(f"...")`` in a code cell, or myst-nb's ``glue``), never typed. The
lint below flags bare numbers in the markdown prose of the sections that report
results (*The experiment*, *Benchmark*, *Claim check*). Not flagged: math
(``$...$``), inline code, ``{glue}`` roles, link targets, references such as
"Table 1", "Fig. 2", "Eq. (3)", "§4", ordered-list markers, and identifiers that carry
digits (``CIFAR-10``, ``top-1``, ``L2``, ``3-D``) and shapes (``8×8``). A number that is a design choice
rather than a result belongs in math (``$k = 5$``) or in generated text.
"""

from __future__ import annotations

import re
from pathlib import Path

RESULT_SECTIONS = ("The experiment", "Benchmark", "Claim check")

_FENCE = re.compile(r"^(```|~~~).*?^\1\s*$", re.M | re.S)
_STRIP = [
    re.compile(r"<!--.*?-->", re.S),
    re.compile(r"\$\$.*?\$\$", re.S),
    re.compile(r"\$[^$\n]+\$"),
    re.compile(r"\{[a-z:-]+\}`[^`]*`"),  # roles: {glue:text}`x`, {math}`x`, {numref}`x`
    re.compile(r"`[^`\n]*`"),
    re.compile(r"\]\([^)]*\)"),  # link targets
    re.compile(r"^\(\S+\)=\s*$", re.M),  # MyST labels
]
_REFERENCE = re.compile(
    r"\b(?:Tables?|Tab\.|Figures?|Figs?\.|Eqs?\.|Equations?|Sections?|Sec\.|§|Appendix|Algorithms?|Alg\.|"
    r"[Cc]hapters?|Stages?|Theorems?|Lemmas?|Propositions?|Definitions?|Corollary|Step|Part|Phase|Experiment)"
    r"\s*\(?[A-Z]?\d+(?:\.\d+)*[a-z]?\)?(?:\s*(?:[-–,]|and|&)\s*\(?\d+(?:\.\d+)*[a-z]?\)?)*"
)
_LIST_MARKER = re.compile(r"^\s*(?:#+\s*)?\d+[.)]\s", re.M)  # "1. item", "### 2. Heading"
_SHAPE = re.compile(r"\b\d+\s*[×x]\s*\d+\b")  # image and kernel shapes: 8×8, 3x3
_NUMBER = re.compile(r"(?<![\w.\-/])[-+−]?\d+(?:[.,]\d+)*(?![\w\-])")


def markdown_sections(text: str) -> list[tuple[str, str]]:
    """The ``## `` sections of a MyST notebook as ``(heading, markdown prose)`` pairs, code cells removed."""
    body = _FENCE.sub("", text.split("\n---\n", 1)[1] if text.startswith("---") else text)
    parts = re.split(r"^## (.+)$", body, flags=re.M)
    return [(parts[i].strip(), parts[i + 1]) for i in range(1, len(parts) - 1, 2)]


def prose_numbers(path: str | Path) -> list[str]:
    """Bare numbers typed in the prose of a chapter's result sections, as ``"<section>: <line>"``."""
    text = Path(path).read_text(encoding="utf-8")
    found = []
    for heading, prose in markdown_sections(text):
        if not any(heading.startswith(s) for s in RESULT_SECTIONS):
            continue
        for pattern in _STRIP:
            prose = pattern.sub(" ", prose)
        prose = _REFERENCE.sub(" ", prose)
        prose = _LIST_MARKER.sub(" ", prose)
        prose = _SHAPE.sub(" ", prose)
        for line in prose.splitlines():
            if line.lstrip().startswith(":"):  # directive options (":tags:", ":width: 80%")
                continue
            hits = _NUMBER.findall(line)
            if hits:
                found.append(f"{heading}: {', '.join(hits)} in {line.strip()[:120]!r}")
    return found


def claims_without_kind(path: str | Path) -> list[str]:
    """``Claim(`` calls in a chapter's code that pass no ``kind=``, as their first lines."""
    text = Path(path).read_text(encoding="utf-8")
    out = []
    for m in re.finditer(r"\bClaim\(", text):
        depth, i = 1, m.end()
        while i < len(text) and depth:
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        call = text[m.start() : i]
        if not re.search(r"\bkind\s*=", call):
            out.append(call.splitlines()[0][:80])
    return out


_NOISY_FIGURE = re.compile(r"\.mean\(|np\.mean\(|\bmean_\w*|\.median\(|np\.median\(|\.std\(|\bmean\b")


def _call_args(text: str, start: int) -> str:
    depth, i = 1, start
    while i < len(text) and depth:
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        i += 1
    return text[start : i - 1]


def noisy_exact_checks(path: str | Path) -> list[str]:
    """``exact(...)`` checks whose value is computed from figures that vary with the seed (a mean, a median, an sd).

    ``chapter.exact`` is for identities, counts on fixed data and bit-exact comparisons;
    a comparison of means belongs in ``chapter.paired_effect`` with a smallest effect.
    Returned as the calls' first lines.
    """
    text = Path(path).read_text(encoding="utf-8")
    out = []
    for m in re.finditer(r"\bexact\(", text):
        args = _call_args(text, m.end())
        value = re.split(r",\s*(?:why\s*=|[\"'f])", args, maxsplit=1)[0]
        if _NOISY_FIGURE.search(value):
            out.append(("exact(" + args).splitlines()[0][:100])
    return out


def untestable_claims_without_to_test(path: str | Path) -> list[str]:
    """Paper ``Claim(`` calls that pass ``control=`` or ``untestable=`` but no ``to_test=``, as their ids or first lines.

    A paper claim whose setup can fail its positive control, or that cannot differ by
    construction, must say what would test it (a model size, a data set), so that an
    *untestable here* verdict names it. A ``kind=`` other than the literal ``"paper"`` is
    not checked.
    """
    text = Path(path).read_text(encoding="utf-8")
    out = []
    for m in re.finditer(r"\bClaim\(", text):
        call = _call_args(text, m.end())
        kind = re.search(r"\bkind\s*=\s*(['\"])([^'\"]*)\1", call)
        if kind and kind.group(2) != "paper":
            continue
        if re.search(r"\b(control|untestable)\s*=", call) and not re.search(r"\bto_test\s*=", call):
            cid = re.search(r"\bid\s*=\s*(['\"])([^'\"]*)\1", call)
            out.append(cid.group(2) if cid else call.splitlines()[0][:80])
    return out
