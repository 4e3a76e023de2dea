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
    render the book from the executed full-scale notebooks into ``_build/html``
    (chapters that have not run show the command that runs them; ``--strict`` refuses).
``python -m icml26 check-site``
    open every page of ``_build/html`` in headless Chromium and report what is broken.
``python -m icml26 sync``
    write the ``.ipynb`` twins of every chapter to ``_build/ipynb`` (for nbval).
``python -m icml26 fmt [--check]``
    format the chapters' code cells to the book's line length (``icml26.book.fmt``).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import threading
import time
from pathlib import Path

from .chapter import SCALES

SEED_LIMIT = 2**32  # numpy's seed range; chapter.check_seed allows 0 .. 2**32 - 1


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2
        self.exit(2, f"{self.prog}: error: {message}\n")


def _int_at_least(low: int, below: int | None = None):
    """An argparse type: an integer >= ``low`` (and < ``below``), with a one-line message otherwise."""

    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if v < low:
            raise argparse.ArgumentTypeError(f"{v} must be >= {low}")
        if below is not None and v >= below:
            raise argparse.ArgumentTypeError(f"{v} must be < {below} (2**{below.bit_length() - 1})")
        return v

    return parse


def _scale(text: str) -> str:
    if text not in SCALES:
        raise argparse.ArgumentTypeError(f"{text!r} is not a scale; valid scales: {', '.join(SCALES)}")
    return text


DEFAULT_SCALE_RULE = "the scale of the most recent successful `run`, ci if nothing has run"


def default_scale(book) -> str:
    """The scale ``build`` and ``bench`` use when none is given: that of the newest successful run record.

    So ``run 02`` followed by ``build`` shows that run, and ``make book`` (which runs
    ``full`` last, and passes ``--scale full`` anyway) renders the full-scale book.
    """
    best, when = "ci", ""
    for s in SCALES:
        for ch in book.chapters():
            rec = book.record(s, ch)
            if rec is not None and rec.status != "failed" and (rec.finished or "") > when:
                best, when = s, rec.finished or ""
    return best


def _live_bars(args) -> bool:
    """Live progress bars only on a terminal: a log file (``make book > log``) gets one line per finished chapter."""
    return not args.no_progress and sys.stderr.isatty()


def make_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m icml26", description="Run and build the executable companion to ICML 2026.")
    from .identity import version

    p.add_argument("--version", action="version", version=f"icml26 {version()}", help="print the package version and exit")
    p.add_argument("--root", type=Path, default=None, help="repository root (default: found from the current folder)")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    sub.add_parser("list", help="list the chapters and their last runs")

    r = sub.add_parser("run", help="execute chapters with papermill (cached)")
    r.add_argument("chapters", nargs="*", help="chapter ids, numbers or slugs (default: all)")
    r.add_argument(
        "--scale",
        type=_scale,
        default="ci",
        metavar="{" + ",".join(SCALES) + "}",
        help="ci: under a minute per chapter; full: the run the book renders (default: ci)",
    )
    r.add_argument("--seed", type=_int_at_least(0, SEED_LIMIT), default=0, help="seed, 0 <= seed < 2**32 (default: 0)")
    r.add_argument(
        "--jobs",
        "-j",
        type=_int_at_least(1),
        default=1,
        help="chapters executed at once, at most the number of CPU cores (default: 1)",
    )
    r.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a notebook parameter of the chapters' parameters cell (repeatable; checked against it; enters the cache key)",
    )
    r.add_argument("--force", action="store_true", help="execute even if the cache is valid")
    r.add_argument("--no-progress", action="store_true", help="no progress bars")

    b = sub.add_parser(
        "build",
        help="render the book from the executed notebooks",
        description="Render the book from the executed notebooks of one scale. By default every chapter that "
        "has run is rendered, and the others show the command that runs them; --strict refuses to build "
        "unless every chapter ran cleanly (for CI).",
    )
    b.add_argument(
        "--scale",
        type=_scale,
        default=None,
        metavar="{" + ",".join(SCALES) + "}",
        help="which executions to render: " + " or ".join(SCALES) + f" (default: {DEFAULT_SCALE_RULE})",
    )
    b.add_argument(
        "--strict",
        action="store_true",
        help="all or nothing: fail if a chapter has not run, failed, is stale, or shows NaN, warnings or progress bars",
    )
    b.add_argument("--allow-warnings", action="store_true", help="do not turn Sphinx warnings into errors")

    c = sub.add_parser("check-site", help="open every page of the built book in headless Chromium and report problems")
    c.add_argument("--html", type=Path, default=None, help="the built book (default: _build/html)")
    c.add_argument("--screenshots", type=Path, default=None, metavar="DIR", help="also save a screenshot of each page in DIR")
    c.add_argument(
        "--layout-json",
        type=Path,
        default=None,
        metavar="FILE",
        help="also write each page's height, visible code share and overflowing code blocks to FILE",
    )

    sub.add_parser("sync", help="write the .ipynb twins of the chapters to _build/ipynb")

    f = sub.add_parser("fmt", help="format the chapters' code cells to the book's line length (ruff format, through jupytext)")
    f.add_argument("chapters", nargs="*", help="chapter ids, numbers or slugs (default: all)")
    f.add_argument("--check", action="store_true", help="only report the chapters that would change; exit 1 if any")

    w = sub.add_parser(
        "sweep",
        help="run chapters x seeds on Dask (a LocalCluster, or --scheduler) and aggregate the claims over seeds",
        description="Examples: `sweep --seeds 0-4 --scale full`; `sweep 02 15 --seeds 0,1,2`; "
        "`sweep --until-decided --max-seeds 6 --budget 2h --scale full`; `sweep --seeds 0-2 --scheduler tcp://host:8786`. "
        "Outputs go to _build/sweep/<scale>/seed-<seed>/<chapter>/; the scorecard pools each claim's evidence over the seeds.",
    )
    w.add_argument("chapters", nargs="*", help="chapter ids, numbers or slugs (default: all)")
    w.add_argument(
        "--seeds", default=None, help="seeds: a range 0-4, a list 0,1,2, or both (0-2,7); required unless --until-decided"
    )
    w.add_argument(
        "--until-decided",
        action="store_true",
        help="add seeds in rounds until every paper claim's pooled evidence is decided (alpha split over the planned looks)",
    )
    w.add_argument(
        "--max-seeds", type=_int_at_least(1), default=5, help="with --until-decided: at most this many seeds (default: 5)"
    )
    w.add_argument(
        "--first-seed", type=_int_at_least(0, SEED_LIMIT), default=0, help="with --until-decided: the first seed (default: 0)"
    )
    w.add_argument(
        "--per-round",
        type=_int_at_least(1),
        default=None,
        help="with --until-decided: seeds per round (default: the workers); K = ceil(max-seeds / per-round) looks",
    )
    w.add_argument(
        "--budget",
        default=None,
        metavar="DURATION",
        help="with --until-decided: start no round past this wall time (90s, 45m, 2h)",
    )
    w.add_argument("--scale", type=_scale, default="ci", metavar="{" + ",".join(SCALES) + "}", help="ci or full (default: ci)")
    w.add_argument(
        "--scheduler", default=None, metavar="tcp://HOST:PORT", help="an existing Dask scheduler (default: a LocalCluster)"
    )
    w.add_argument("--workers", type=_int_at_least(1), default=None, help="LocalCluster workers (default: one per CPU core)")
    w.add_argument(
        "--param", action="append", default=[], metavar="KEY=VALUE", help="any further notebook parameter (repeatable)"
    )
    w.add_argument("--force", action="store_true", help="execute even where the cache holds the task")
    w.add_argument(
        "--kernels",
        default="",
        metavar="FAMILY",
        help="rerun under a second kernel family (avx2: ATen, MKL, oneDNN and OpenBLAS at AVX2) to measure how far "
        "rounding moves each decision; stored apart under _build/sweep/<scale>/kernels-<family>/, never pooled",
    )
    w.add_argument("--no-progress", action="store_true", help="no progress bar")

    t = sub.add_parser("times", help="save the chapters' run times (data/timings/), which the status page compares with")
    t.add_argument("--save", required=True, metavar="LABEL", help="name of the saved times, e.g. a version: 0.3.0")
    t.add_argument("--scale", type=_scale, default="full", metavar="{" + ",".join(SCALES) + "}", help="scale (default: full)")
    t.add_argument(
        "--from",
        dest="source",
        default=None,
        metavar="ROOT",
        help="the book whose runs are saved, e.g. a worktree of an earlier version (default: this one)",
    )

    k = sub.add_parser("bench", help="re-run just the benchmark cells of chapters (their rows feed the Performance page)")
    k.add_argument("chapters", nargs="*", help="chapter ids, numbers or slugs (default: all)")
    k.add_argument(
        "--scale",
        type=_scale,
        default=None,
        metavar="{" + ",".join(SCALES) + "}",
        help=f"ci or full (default: {DEFAULT_SCALE_RULE})",
    )
    k.add_argument("--seed", type=_int_at_least(0, SEED_LIMIT), default=0, help="seed (default: 0)")
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


def _err(command: str, message: str) -> None:
    print(f"python -m icml26 {command}: error: {message}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    """Entry point: run a command; a full or read-only disk, or a closed pipe, ends in one line, never a traceback."""
    args = make_parser().parse_args(argv)
    if threading.current_thread() is threading.main_thread():
        import signal

        def _term(signum, frame):  # SIGTERM (a CI time-out, a kill) stops as Ctrl-C does: kernels shut down, results kept
            raise KeyboardInterrupt

        signal.signal(signal.SIGTERM, _term)
    from .runner import file_memo

    try:
        with file_memo():  # each source file read and parsed once per command (re-read if it changes)
            return _dispatch(args)
    except BrokenPipeError:  # `python -m icml26 list | head`: the reader went away
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except OSError:
            pass
        return 0
    except OSError as exc:
        where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
        _err(args.command, f"{where}{exc.strerror or exc} ({type(exc).__name__})")
        return 1


def _dispatch(args) -> int:
    from .runner import Book

    try:
        book = Book(args.root or find_root())
    except (FileNotFoundError, NotADirectoryError, PermissionError) as exc:
        _err(args.command, f"--root: {exc}" if args.root else str(exc))
        return 2

    if args.command == "list":
        rows = [["chapter", "notebooks", *(f"{s} (state, wall time, finished)" for s in SCALES)]]
        notes = []
        for ch in book.chapters():
            cells = []
            for s in SCALES:
                word, why = book.state(s, ch)
                rec = book.record(s, ch)
                if rec is not None and word in ("ok", "stale"):
                    cells.append(f"{word}, {rec.wall_s:.0f} s, {rec.finished}")
                else:
                    cells.append(word)
                if why:
                    notes.append(f"{ch.id} ({s}): {word}: {why}")
            rows.append([ch.id, ", ".join(nb.name for nb in ch.notebooks), *cells])
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        for r in rows:
            print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
        if notes:
            print()
            print("\n".join(notes))
        return 0

    if args.command == "times":
        from .perf import save_times

        try:
            source = Book(Path(args.source)) if args.source else None
            out = save_times(book, args.scale, args.save, source=source)
        except (ValueError, FileNotFoundError, NotADirectoryError) as exc:
            _err("times", str(exc))
            return 2
        print(f"saved {out}")
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
        from .runner import Interrupted

        try:
            chapters = book.select(args.chapters)
            from . import sweep as sw

            params = sw.parse_params(args.param)
            sw.check_params(book, chapters, params)
        except ValueError as exc:
            _err("run", str(exc))
            return 2
        jobs = args.jobs
        cores = os.cpu_count() or 1
        if jobs > cores:
            print(
                f"python -m icml26 run: warning: --jobs {jobs} is more than the {cores} CPU core(s); running {cores} at a time",
                file=sys.stderr,
            )
            jobs = cores

        def say(msg: str) -> None:
            print(msg, file=sys.stderr, flush=True)

        t_run = time.perf_counter()
        try:
            records = book.run(
                chapters, args.scale, args.seed, jobs=jobs, force=args.force, progress=_live_bars(args), say=say, params=params
            )
        except Interrupted as exc:
            print(f"python -m icml26 run: interrupted: {exc.summary()}", file=sys.stderr, flush=True)
            _exit_now_if_threads_linger(130)
            return 130
        except KeyboardInterrupt:
            print("python -m icml26 run: interrupted before any chapter started; nothing changed", file=sys.stderr, flush=True)
            return 130
        from .perf import write_timing

        executed = [r for r in records if r.status != "cached"]
        what = f"run-{args.scale}" + ("-cached" if records and not executed else "")
        if len(chapters) == len(book.chapters()):  # whole-book figures (the Performance page; a cached rerun's only in the file)
            write_timing(
                book,
                what,
                scale=args.scale,
                jobs=jobs,
                wall_s=round(time.perf_counter() - t_run, 2),
                executed=len(executed),
                cached=len(records) - len(executed),
                chapters_s=round(sum(r.wall_s for r in executed), 2),
            )
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
            _err("build", "; ".join(problems))
            return 1
        try:
            result = build(
                book, args.scale or default_scale(book), strict=args.strict, warnings_are_errors=not args.allow_warnings
            )
        except BuildError as exc:
            _err("build", str(exc))
            return 1
        for line in result.notes:
            print(f"python -m icml26 build: note: {line}", file=sys.stderr)
        print(f"book built: {result.index}")
        return 0

    if args.command == "check-site":
        from .check_site import check_site

        html = args.html or book.build_dir / "html"
        if not (html / "index.html").exists():
            _err("check-site", f"{html} holds no built book; run `python -m icml26 build` first")
            return 2
        try:
            report = check_site(html, screenshots=args.screenshots)
        except RuntimeError as exc:  # no browser
            _err("check-site", str(exc))
            return 2
        print(report.layout_table())
        if args.layout_json is not None:
            import dataclasses
            import json

            args.layout_json.write_text(json.dumps([dataclasses.asdict(p) for p in report.layout], indent=1))
        print(report.summary())
        return 0 if report.ok else 1
    if args.command == "fmt":
        from .fmt import LINE_LENGTH, format_chapter

        changed = [nb for ch in book.select(args.chapters) for nb in ch.notebooks if format_chapter(nb, check=args.check)]
        for nb in changed:
            print(f"{'would reformat' if args.check else 'reformatted'} {nb.relative_to(book.root)}")
        print(
            f"{len(changed)} notebook(s) {'to reformat' if args.check else 'reformatted'} (code cells at {LINE_LENGTH} columns)"
        )
        return 1 if changed and args.check else 0
    if args.command == "sweep":
        from . import sweep as sw

        try:
            chapters = book.select(args.chapters)
            if args.until_decided:
                if args.seeds is not None:
                    raise ValueError(
                        "--until-decided chooses the seeds itself; give --max-seeds and --first-seed instead of --seeds"
                    )
                seeds = []
                budget = sw.parse_duration(args.budget) if args.budget is not None else None
            elif args.seeds is None:
                raise ValueError("--seeds is required (or --until-decided)")
            else:
                if args.budget is not None:
                    raise ValueError("--budget applies only with --until-decided")
                if args.per_round is not None:
                    raise ValueError("--per-round applies only with --until-decided")
                seeds = sw.parse_seeds(args.seeds)
            params = sw.parse_params(args.param)
            sw.check_params(book, chapters, params)
            sw.check_kernels(args.kernels)
            if args.kernels and args.until_decided:
                raise ValueError("--kernels reruns given seeds to measure rounding; it does not combine with --until-decided")
            if args.scheduler is not None and not re.fullmatch(r"(tcp|tls|ucx|ws|wss|inproc)://[^\s/]+(:\d+)?/?", args.scheduler):
                raise ValueError(f"--scheduler {args.scheduler!r} is not a scheduler address; use e.g. tcp://host:8786")
        except ValueError as exc:
            _err("sweep", str(exc))
            return 2
        try:
            if args.until_decided:
                out = sw.sweep_until_decided(
                    book,
                    chapters,
                    args.scale,
                    max_seeds=args.max_seeds,
                    first_seed=args.first_seed,
                    per_round=args.per_round,
                    budget_s=budget,
                    say=lambda m: print(m, flush=True),
                    params=params,
                    scheduler=args.scheduler,
                    n_workers=args.workers,
                    force=args.force,
                    progress=_live_bars(args),
                )
                records = out["records"]
            else:
                records = sw.sweep(
                    book,
                    chapters,
                    seeds,
                    args.scale,
                    params=params,
                    scheduler=args.scheduler,
                    n_workers=args.workers,
                    force=args.force,
                    progress=_live_bars(args),
                    kernels=args.kernels,
                )
        except KeyboardInterrupt:
            print(
                "python -m icml26 sweep: interrupted: queued and running tasks cancelled; finished tasks kept",
                file=sys.stderr,
                flush=True,
            )
            _exit_now_if_threads_linger(130)
            return 130
        except (OSError, RuntimeError, TimeoutError) as exc:  # no scheduler at that address, no loopback, ...
            _err("sweep", f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else 'no detail'}")
            return 1
        for r in records:
            print(f"{r.chapter:<22} seed {r.seed:<6} {r.status:<7} {r.wall_s:7.1f} s")
        failed = [r for r in records if r.status == "failed"]
        if failed:
            print(f"\n{len(failed)} task(s) failed:", file=sys.stderr)
            for r in failed:
                print(f"  {r.describe_error()}", file=sys.stderr)
            return 1
        return 0

    if args.command == "bench":
        from .perf import run_benchmarks

        try:
            chapters = book.select(args.chapters)
        except ValueError as exc:
            _err("bench", str(exc))
            return 2
        results = run_benchmarks(book, chapters, args.scale or default_scale(book), args.seed, say=lambda m: print(m, flush=True))
        return 1 if any(s.startswith("failed") for _, s in results) else 0
    return 2  # pragma: no cover


def _exit_now_if_threads_linger(code: int) -> None:
    """Exit at once if a worker thread is still unwinding (it would hold the interpreter open)."""
    if any(t is not threading.main_thread() and t.is_alive() and not t.daemon for t in threading.enumerate()):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
