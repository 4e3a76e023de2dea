"""Keep the ``.ipynb`` twins of the chapters in step with their MyST sources.

The ``.md`` file is the source; its twin lives under ``_build/ipynb/book/<chapter>/``.
A sync writes every twin from its source and records, in ``_build/ipynb/.sync.json``,
a hash of what it wrote. A twin whose content no longer matches that hash was edited
since (in Jupyter, say): a sync then refuses to overwrite it unless the edit is
already in the ``.md``. Edits are detected by content, never by modification time.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from .runner import Book

MANIFEST = ".sync.json"


def _text(nb) -> str:
    """The notebook as MyST text, outputs and execution counts left out."""
    import jupytext

    return jupytext.writes(nb, fmt="md:myst")


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass
class SyncReport:
    """What a sync did: twins written, twins left alone because they hold edits."""

    written: list[Path] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)


def twin_path(book: Book, chapter_id: str, source: Path) -> Path:
    """Where the ``.ipynb`` twin of a chapter source lives."""
    return book.build_dir / "ipynb" / "book" / chapter_id / f"{source.stem}.ipynb"


def sync(book: Book) -> SyncReport:
    """Write every chapter's twin from its ``.md``, refusing to clobber edited twins."""
    import jupytext

    out_root = book.build_dir / "ipynb"
    manifest_path = out_root / MANIFEST
    try:
        manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    except json.JSONDecodeError:
        manifest = {}
    report = SyncReport()
    for ch in book.chapters():
        for nb in ch.notebooks:
            dest = twin_path(book, ch.id, nb)
            rel = str(dest.relative_to(out_root))
            source = jupytext.read(nb)
            src_text = _text(source)
            if dest.exists():
                twin_text = _text(jupytext.read(dest))
                edited = _digest(twin_text) != manifest.get(rel)
                if edited and twin_text != src_text:
                    report.refused.append(f"{dest} holds edits that {nb} lacks")
                    continue
            dest.parent.mkdir(parents=True, exist_ok=True)
            jupytext.write(source, dest, fmt="ipynb")
            manifest[rel] = _digest(_text(jupytext.read(dest)))
            report.written.append(dest)
    out_root.mkdir(parents=True, exist_ok=True)
    manifest_path.write_text(json.dumps(manifest, indent=1, sort_keys=True))
    return report
