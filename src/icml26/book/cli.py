"""Command line of the book: ``python -m icml26 {list,run,build,sync}``.

Examples
--------
``python -m icml26 list``
    the chapters and the state of their last runs.
``python -m icml26 run 02 --scale full --seed 1``
    execute chapter 02 at full scale with seed 1 (a cache hit if nothing changed).
``python -m icml26 run --scale full --jobs 2``
    every chapter, two at a time.
``python -m icml26 build``
    render the book from the executed full-scale notebooks into ``_build/html``.
``python -m icml26 sync``
    write the ``.ipynb`` twins of every chapter to ``_build/ipynb`` (for nbval).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .chapter import SCALES


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2
        self.exit(2, f"{self.prog}: error: {message}\n")


def _int_at_least(low: int):
    """An argparse type: an integer >= ``low``, with a one-line message otherwise."""

    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if v < low:
            raise argparse.ArgumentTypeError(f"{v} must be >= {low}")
        return v

    return parse


def _scale(text: str) -> str:
    if text not in SCALES:
        raise argparse.ArgumentTypeError(f"{text!r} is not a scale; valid scales: {', '.join(SCALES)}")
    return text


def make_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m icml26", description="Run and build the executable companion to ICML 2026.")
    p.add_argument("--root", type=Path, default=None, help="repository root (default: found from the current folder)")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    sub.add_parser("list", help="list the chapters and their last runs")

    r = sub.add_parser("run", help="execute chapters with papermill (cached)")
    r.add_argument("chapters", nargs="*", help="chapter ids, numbers or slugs (default: all)")
    r.add_argument("--scale", type=_scale, default="ci", help=f"one of {', '.join(SCALES)} (default: ci)")
    r.add_argument("--seed", type=_int_at_least(0), default=0, help="non-negative seed (default: 0)")
    r.add_argument("--jobs", "-j", type=_int_at_least(1), default=1, help="chapters executed at once (default: 1)")
    r.add_argument("--force", action="store_true", help="execute even if the cache is valid")
    r.add_argument("--no-progress", action="store_true", help="no progress bars")

    b = sub.add_parser("build", help="render the book from the executed notebooks")
    b.add_argument("--scale", type=_scale, default="full", help="which executions to render (default: full)")
    b.add_argument("--no-strict", action="store_true", help="do not turn Sphinx warnings into errors")

    sub.add_parser("sync", help="write the .ipynb twins of the chapters to _build/ipynb")
    return p


def find_root(start: Path | None = None) -> Path:
    """The nearest folder at or above ``start`` holding ``_toc.yml`` and ``book/``."""
    here = (start or Path.cwd()).resolve()
    for d in (here, *here.parents):
        if (d / "_toc.yml").exists() and (d / "book").is_dir():
            return d
    from .chapter import repo_root

    root = repo_root()
    if root is not None:
        return root
    raise SystemExit(f"python -m icml26: error: no book found at or above {here} (looked for _toc.yml and book/)")


def main(argv: list[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    from .runner import Book

    book = Book(args.root or find_root())

    if args.command == "list":
        for ch in book.chapters():
            states = []
            for s in SCALES:
                rec = book.record(s, ch)
                states.append(f"{s}: " + ("-" if rec is None else f"{rec.status} {rec.wall_s:.0f}s"))
            print(f"{ch.id:<22} {', '.join(nb.name for nb in ch.notebooks):<28} {' | '.join(states)}")
        return 0

    if args.command == "sync":
        from .sync import sync

        report = sync(book)
        print(f"wrote {len(report.written)} notebook twin(s) under {book.build_dir / 'ipynb'}")
        if report.refused:
            print(
                "python -m icml26 sync: error: the .md files are the source; these twins hold edits the .md lacks:\n  "
                + "\n  ".join(report.refused)
                + "\n  pull them in with `jupytext --sync <the .md>` (or delete the twin to discard them), then rerun",
                file=sys.stderr,
            )
            return 1
        return 0

    if args.command == "run":
        try:
            chapters = book.select(args.chapters)
        except ValueError as exc:
            print(f"python -m icml26 run: error: {exc}", file=sys.stderr)
            return 2
        records = book.run(chapters, args.scale, args.seed, jobs=args.jobs, force=args.force, progress=not args.no_progress)
        width = max((len(r.chapter) for r in records), default=10)
        for r in records:
            how = "(cached: wall time of the run that made it)" if r.status == "cached" else ""
            print(f"{r.chapter:<{width}}  {r.status:<7} {r.wall_s:7.1f} s {how}".rstrip())
        failed = [r for r in records if r.status == "failed"]
        if failed:
            print(f"\n{len(failed)} chapter(s) failed:", file=sys.stderr)
            for r in failed:
                print(f"  {r.describe_error()}", file=sys.stderr)
            print(f"  (executed notebooks with the error: {book.build_dir / 'executed' / args.scale})", file=sys.stderr)
            return 1
        return 0

    if args.command == "build":
        from .site import BuildError, build, check_toc

        problems = check_toc(book)
        if problems:
            print("python -m icml26 build: error: " + "; ".join(problems), file=sys.stderr)
            return 1
        try:
            index = build(book, args.scale, strict=not args.no_strict)
        except BuildError as exc:
            print(f"python -m icml26 build: error: {exc}", file=sys.stderr)
            return 1
        print(f"book built: {index}")
        return 0
    return 2  # pragma: no cover
