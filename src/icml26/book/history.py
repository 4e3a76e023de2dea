"""Each paper claim's verdict across the released versions, read from CHANGELOG.md.

The source of truth is the verdict tables in ``CHANGELOG.md``: every table whose header starts
``| claim |`` inside a ``## X.Y.Z`` section. Its verdict columns are those headed by a version
(``| 0.4.1 |``) or by ``before``/``after`` (``before (0.4.0, full seed 0)``); a ``before``/``after``
column without a version takes it from the section's ``### … (A → B)`` heading, else from the
previous or the section's own version. A column saying ``ci`` is at ``ci`` scale, else ``full``.
A cell's verdict is its leading word (``*partly reproduced*``, ``inconclusive (n≈50)``); a cell
``—`` or ``now kind …`` says the claim was not a paper claim at that version. Historical words
are kept verbatim (*inconclusive* stays *inconclusive*): they are what was published.

Carry-forward rule: the tables of some versions list only the verdicts that changed (0.4.1,
0.5.0) and some versions have none (0.4.0, stated only as 0.4.1's ``before``). A version that
states no verdict for a claim inherits the previous version's, marked ``"stated": False``, from
the claim's first stated verdict on, until a version says it is not a paper claim.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

__all__ = ["VERSIONS", "WORDS", "history_line", "load_history", "parse_changelog", "verdict_history", "versions"]

#: Verdict words, longest first so that "not reproduced" is not read as "reproduced".
WORDS = ("partly reproduced", "not reproduced", "untestable here", "reproduced", "inconclusive", "undecided")

_VERSION = re.compile(r"\d+\.\d+\.\d+")
_HEADING = re.compile(r"^##\s+v?(\d+\.\d+\.\d+)\b")
_ARROW = re.compile(r"(\d+\.\d+\.\d+)\s*(?:→|->)\s*(\d+\.\d+\.\d+)")
_WORD = re.compile(r"(" + "|".join(WORDS) + r")\b\s*(?:\(([^()]*)\))?", re.IGNORECASE)
_CLAIM_TOKEN = re.compile(r"(?P<ch>\b\d{1,2}\b)|`(?P<id>[^`]+)`")
_NOT_A_CLAIM = object()  # a cell "—" or "now kind …"

Key = tuple[str, str]


def _warn(message: str) -> None:
    warnings.warn(f"CHANGELOG.md {message}", stacklevel=4)


def _vkey(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


def versions(text: str) -> list[str]:
    """Released versions named by ``## X.Y.Z`` headings, oldest first."""
    found = {m.group(1) for line in text.splitlines() if (m := _HEADING.match(line))}
    return sorted(found, key=_vkey)


def _column(header: str, section: str, arrow: tuple[str, str] | None, previous: str | None) -> tuple[str, str] | None:
    """(version, scale) a verdict column states, or None for a column that is not a verdict."""
    head = header.strip().lower()
    named = _VERSION.search(head)
    if re.match(r"(before|after)\b", head):
        side = 0 if head.startswith("before") else 1
        version = named.group(0) if named else (arrow[side] if arrow else (previous if side == 0 else section))
    elif named and _VERSION.fullmatch(head.strip("` *")):
        version = named.group(0)
    else:
        return None
    return (version, "ci" if re.search(r"\bci\b", head) else "full") if version else None


def _claims(cell: str) -> list[Key]:
    """Claims a first cell names: a bare id belongs to the last chapter number before it."""
    chapter, out = None, []
    for m in _CLAIM_TOKEN.finditer(cell):
        if m.group("ch"):
            chapter = m.group("ch").zfill(2)
        elif chapter is None:
            return []
        else:
            out.append((chapter, m.group("id").strip()))
    return out


def _verdict(cell: str) -> tuple[str, str] | object | None:
    """(word, note), ``_NOT_A_CLAIM``, or None where the cell states no verdict word."""
    text = re.sub(r"[*_]+", "", cell).strip()
    low = text.lower()
    if low in ("", "—", "–", "-", "n/a") or low.startswith("now kind"):
        return _NOT_A_CLAIM
    m = _WORD.match(text)
    if not m:
        return None
    return m.group(1).lower(), (m.group(2) or "").strip()


def _statements(text: str) -> tuple[dict[Key, dict[str, list[dict]]], set[tuple[Key, str]], list[str]]:
    stated: dict[Key, dict[str, list[dict]]] = {}
    absent: set[tuple[Key, str]] = set()
    released = versions(text)
    section = arrow = None
    columns: list[tuple[int, str, str]] | None = None
    for lineno, line in enumerate(text.splitlines(), 1):
        if m := _HEADING.match(line):
            section, arrow, columns = m.group(1), None, None
            continue
        if line.startswith("## "):
            section = arrow = columns = None
            continue
        if line.startswith("###"):
            a = _ARROW.search(line)
            arrow, columns = (a.group(1), a.group(2)) if a else None, None
            continue
        if not line.lstrip().startswith("|"):
            columns = None
            continue
        if section is None:
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells and cells[0].lower() == "claim":
            earlier = [v for v in released if _vkey(v) < _vkey(section)]
            previous = earlier[-1] if earlier else None
            found = [(i, *col) for i, h in enumerate(cells) if i and (col := _column(h, section, arrow, previous))]
            columns = found or None
            if not found:
                _warn(f"line {lineno}: a claim table with no verdict column: {line.strip()[:80]}")
            continue
        if columns is None or all(set(c) <= set("-: ") for c in cells):
            continue
        claims = _claims(cells[0])
        if not claims or len(cells) <= max(i for i, _, _ in columns):
            _warn(f"line {lineno}: unparseable verdict row skipped: {line.strip()[:80]}")
            continue
        for i, version, scale in columns:
            v = _verdict(cells[i])
            if v is None:
                _warn(f"line {lineno}: no verdict word in {cells[i][:40]!r}, cell skipped")
                continue
            for claim in claims:
                if v is _NOT_A_CLAIM:
                    absent.add((claim, version))
                else:
                    word, note = v
                    entry = {"verdict": word, "scale": scale, "note": note, "section": section}
                    stated.setdefault(claim, {}).setdefault(version, []).append(entry)
    return stated, absent, released


def _merge(claim: Key, version: str, says: list[dict]) -> dict:
    """One version's verdict from every table stating it: its own section's first, notes filled in."""
    says = sorted(says, key=lambda s: (s["section"] != version, _vkey(s["section"])))
    first = says[0]
    for other in says[1:]:
        if (other["verdict"], other["scale"]) != (first["verdict"], first["scale"]):
            _warn(
                f"{claim[0]} {claim[1]} at {version} reads {first['verdict']!r} ({first['scale']}) in {first['section']} "
                f"but {other['verdict']!r} ({other['scale']}) in {other['section']}; kept the first"
            )
    note = next((s["note"] for s in says if s["note"]), "")
    sections = ", ".join(dict.fromkeys(s["section"] for s in says))
    return {"verdict": first["verdict"], "scale": first["scale"], "note": note, "source": f"CHANGELOG {sections}"}


def _parse(text: str) -> tuple[dict[Key, dict[str, dict]], set[tuple[Key, str]], list[str]]:
    stated, absent, released = _statements(text)
    parsed = {
        claim: {v: _merge(claim, v, says) for v, says in sorted(by_version.items(), key=lambda kv: _vkey(kv[0]))}
        for claim, by_version in sorted(stated.items())
    }
    named = {v for by_version in stated.values() for v in by_version}
    return parsed, absent, sorted(set(released) | named, key=_vkey)


def parse_changelog(text: str) -> dict[Key, dict[str, dict]]:
    """Every verdict the CHANGELOG's claim tables state explicitly.

    Parameters
    ----------
    text : str
        The CHANGELOG's markdown.

    Returns
    -------
    dict
        ``(chapter, claim id)`` (chapter as ``"08"``) → version → ``{"verdict", "scale", "note",
        "source"}``; ``scale`` is ``"ci"`` or ``"full"``, ``note`` the cell's parenthetical reason
        (``"control failed"``) or ``""``, ``source`` the sections stating it (``"CHANGELOG 0.4.1, 0.5.0"``).
        Rows that cannot be read are skipped with a warning naming the line.
    """
    return _parse(text)[0]


def verdict_history(text: str) -> dict[Key, list[dict]]:
    """Each claim's verdict at every released version from its first stated one, carried forward.

    Parameters
    ----------
    text : str
        The CHANGELOG's markdown.

    Returns
    -------
    dict
        ``(chapter, claim id)`` → entries in version order, each ``parse_changelog``'s dict plus
        ``"version"`` and ``"stated"``: False where the version's tables do not list the claim and
        the previous entry's verdict (and scale, note, source) is carried forward. Carrying stops
        at a version that says the claim is not a paper claim (``—``, ``now kind …``).
    """
    parsed, absent, order = _parse(text)
    out: dict[Key, list[dict]] = {}
    for claim, by_version in parsed.items():
        entries: list[dict] = []
        last: dict | None = None
        for version in order:
            if version in by_version:
                last = {"version": version, **by_version[version], "stated": True}
                entries.append(last)
            elif (claim, version) in absent:
                last = None
            elif last is not None:
                entries.append({**last, "version": version, "stated": False})
        out[claim] = entries
    return out


def load_history(root: Path) -> dict[Key, list[dict]]:
    """:func:`verdict_history` of ``root/CHANGELOG.md``; ``{}`` when it is missing or unreadable.

    Parameters
    ----------
    root : Path
        The repository root.

    Returns
    -------
    dict
        As :func:`verdict_history`. Never raises on odd content: it warns instead.
    """
    path = Path(root) / "CHANGELOG.md"
    if not path.is_file():
        return {}
    try:
        return verdict_history(path.read_text(encoding="utf-8"))
    except Exception as exc:  # a history is a nicety: a book build must not fail on it
        warnings.warn(f"{path}: no verdict history ({type(exc).__name__}: {exc})", stacklevel=2)
        return {}


def _phrase(entry: dict) -> str:
    extra = "; ".join(x for x in ("ci" if entry.get("scale") == "ci" else "", entry.get("note", "")) if x)
    return f"{entry['verdict']} in {entry['version']}" + (f" ({extra})" if extra else "")


def history_line(entries: list[dict], current: str | None = None, current_label: str = "this run") -> str:
    """One line naming each change of a claim's verdict, or ``""`` when it never changed.

    Parameters
    ----------
    entries : list of dict
        One claim's :func:`verdict_history` entries.
    current : str, optional
        The verdict now; appended (``→ undecided in this run``) only where it differs from the
        last entry's.
    current_label : str
        What to call the current run.

    Returns
    -------
    str
        E.g. ``"not reproduced in 0.1.0 (ci) → inconclusive in 0.4.1 (other CPU) → not reproduced
        in 0.5.0"``: the first entry, then each entry whose word differs from the one before it.
        Words are compared verbatim (*inconclusive* and *undecided* differ).
    """
    if not entries:
        return ""
    parts = [_phrase(entries[0])]
    for before, entry in zip(entries, entries[1:]):
        if entry["verdict"] != before["verdict"]:
            parts.append(_phrase(entry))
    if current is not None and current != entries[-1]["verdict"]:
        parts.append(f"{current} in {current_label}")
    return " → ".join(parts) if len(parts) > 1 else ""


def _released() -> tuple[str, ...]:
    try:
        return tuple(versions((Path(__file__).resolve().parents[3] / "CHANGELOG.md").read_text(encoding="utf-8")))
    except (OSError, UnicodeDecodeError, IndexError):
        return ()


#: The released versions of this checkout's CHANGELOG.md, oldest first (empty where it is absent).
VERSIONS: tuple[str, ...] = _released()
