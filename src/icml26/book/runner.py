"""Execute chapters headlessly with papermill, with a cache keyed on everything that matters.

A chapter is a folder ``book/NN-slug/`` holding one or more MyST-markdown notebooks
(jupytext). Executing it at a ``scale`` and ``seed`` writes, under
``_build/executed/<scale>/<chapter>/``, the executed ``.ipynb`` of each notebook and a
``run.json`` record (status, wall time, cache key, the error if any).

The cache key hashes the chapter's notebook sources, every file of the ``src/``
library, the chapter's ``data/`` folder, the pinned requirements and the parameters:
a rerun with all of these unchanged is a cache hit and does not execute; a change in
``src/`` does.

A chapter executes into a temporary folder (its claim records likewise); only a run that
succeeded replaces the previous results. A failed or interrupted run leaves the last good
results in place: the failure is kept beside them (``failed.json`` and the failing
notebooks under ``failed/``) and the good results are reported *stale* until a run succeeds.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import json
import os
import re
import shutil
import signal
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from .chapter import check_scale, check_seed
from .identity import cpu_description

RUNTIME_MODULES: tuple[str, ...] = ("icml26.book.chapter", "icml26.book.bench")
PACKAGE = "icml26"
CHAPTER_DIR = re.compile(r"^(\d\d)-([a-z0-9][a-z0-9-]*)$")


@dataclass(frozen=True)
class Chapter:
    """One chapter: its id (``02-st-bcp``), number, slug, folder and notebook sources."""

    id: str
    number: int
    slug: str
    path: Path
    notebooks: tuple[Path, ...]


@dataclass
class RunRecord:
    """What one execution of one chapter did."""

    chapter: str
    scale: str
    seed: int
    status: str  # "ok", "cached", "failed" or "interrupted"
    wall_s: float
    key: str
    notebooks: list[str] = field(default_factory=list)
    error: dict | None = None
    finished: str = ""
    cpus: int = 0  # CPU cores of the machine that ran it (0: not recorded)
    cpu: str = ""  # its CPU model and widest vector instructions (identity.cpu_description; "": not recorded)
    cpu_s: float = 0.0  # CPU seconds (user + system) of the chapter's kernels (0: not recorded)
    params: dict = field(default_factory=dict)  # notebook parameters besides scale and seed (run --param)

    @classmethod
    def load(cls, path: Path) -> RunRecord:
        """Read a record written by any version of the runner (unknown fields are ignored).

        Raises ``ValueError`` naming the file when it is not a record (garbage, empty,
        ``{}``, wrong types).
        """
        try:
            data = json.loads(path.read_text())
            if not isinstance(data, dict):
                raise TypeError(f"a JSON object was expected, got {type(data).__name__}")
            names = {f.name for f in fields(cls)}
            rec = cls(**{k: v for k, v in data.items() if k in names})
            if not (
                isinstance(rec.chapter, str)
                and isinstance(rec.scale, str)
                and isinstance(rec.key, str)
                and isinstance(rec.status, str)
                and isinstance(rec.wall_s, (int, float))
                and isinstance(rec.seed, int)
                and isinstance(rec.finished, str)
                and isinstance(rec.params, dict)
            ):
                raise TypeError("fields of the wrong type")
        except (ValueError, TypeError, UnicodeDecodeError) as exc:
            raise ValueError(f"{path} is not a run record ({type(exc).__name__}: {exc})") from None
        return rec

    def describe_error(self) -> str:
        e = self.error or {}
        where = e.get("notebook", "?")
        if e.get("line"):
            where += f" line {e['line']}"
        if e.get("cell"):
            where += f", cell {e['cell']}"
        return f"{self.chapter}: {where}: {e.get('ename', 'Error')}: {e.get('evalue', '')}".strip()


def _load_or_warn(path: Path) -> RunRecord | None:
    """:meth:`RunRecord.load`, or ``None`` with a one-line warning for a record the runner cannot read."""
    if not path.exists():
        return None
    try:
        return RunRecord.load(path)
    except ValueError as exc:
        print(f"python -m icml26: warning: ignoring an unreadable record: {exc}", file=sys.stderr)
        return None


class Interrupted(KeyboardInterrupt):
    """A run stopped by Ctrl-C: which chapters were running, which never started."""

    def __init__(self, running: list[str], cancelled: list[str], finished: list[RunRecord]) -> None:
        super().__init__("interrupted")
        self.running = running
        self.cancelled = cancelled
        self.finished = finished

    def summary(self) -> str:
        parts = []
        if self.running:
            parts.append("stopped " + ", ".join(self.running))
        if self.cancelled:
            parts.append(f"cancelled {len(self.cancelled)} queued chapter(s)")
        if self.finished:
            parts.append(f"{len(self.finished)} finished before")
        return "; ".join(parts or ["nothing was running"]) + "; earlier results kept"


class Book:
    """The repository's layout: where chapters, the library and the build outputs live.

    Parameters
    ----------
    root : path
        The repository root (holds ``book/``, ``src/``, ``_toc.yml``).
    """

    def __init__(self, root: str | os.PathLike) -> None:
        self.root = Path(root).resolve()
        self.book_dir = self.root / "book"
        self.src_dir = self.root / "src"
        self.data_dir = self.root / "data"
        self.build_dir = self.root / "_build"
        if not self.book_dir.is_dir():
            raise FileNotFoundError(f"{self.root} has no book/ folder; run from the repository root")

    # -- discovery ---------------------------------------------------------------------
    def chapters(self) -> list[Chapter]:
        """All chapters, in order of their number."""
        out = []
        for d in sorted(self.book_dir.iterdir()):
            m = CHAPTER_DIR.match(d.name)
            if not (d.is_dir() and m):
                continue
            nbs = tuple(sorted(p for p in d.glob("*.md") if is_notebook_source(p)))
            if nbs:
                out.append(Chapter(id=d.name, number=int(m.group(1)), slug=m.group(2), path=d, notebooks=nbs))
        return out

    def select(self, names: Sequence[str] | None) -> list[Chapter]:
        """Chapters named by id (``02-st-bcp``), number (``02``, ``2``) or slug (``st-bcp``); all if empty."""
        chapters = self.chapters()
        if not names:
            return chapters
        picked = []
        for name in names:
            hits = [c for c in chapters if name in (c.id, c.slug, f"{c.number:02d}", str(c.number))]
            if not hits:
                valid = ", ".join(c.id for c in chapters) or "(none)"
                raise ValueError(f"unknown chapter {name!r}; valid chapters: {valid}")
            picked.extend(h for h in hits if h not in picked)
        return picked

    # -- paths -----------------------------------------------------------------------------
    def executed_dir(self, scale: str, chapter: Chapter | str) -> Path:
        cid = chapter.id if isinstance(chapter, Chapter) else chapter
        return self.build_dir / "executed" / scale / cid

    def results_dir(self) -> Path:
        return self.build_dir / "results"

    def record(self, scale: str, chapter: Chapter | str) -> RunRecord | None:
        """The record of the chapter's last good run at a scale (the results on disk), if any."""
        return _load_or_warn(self.executed_dir(scale, chapter) / "run.json")

    def failure(self, scale: str, chapter: Chapter | str) -> RunRecord | None:
        """The record of a failed run made after the last good one, if any."""
        return _load_or_warn(self.executed_dir(scale, chapter) / "failed.json")

    def state(self, scale: str, chapter: Chapter) -> tuple[str, str]:
        """What is on disk for a chapter at a scale: ``(word, why)``.

        The word is ``"not run"``, ``"failed"`` (no good run, the last one failed),
        ``"ok"``, or ``"stale"`` (results of an earlier good run are kept, but the last
        run failed or the chapter's inputs changed since).
        """
        rec, fail = self.record(scale, chapter), self.failure(scale, chapter)
        if rec is None or rec.status == "failed":  # (a failed run.json comes from an older runner)
            fail = fail or rec
            if fail is None:
                return "not run", ""
            return "failed", fail.describe_error()
        if fail is not None:
            return "stale", f"the run of {fail.finished} failed ({fail.describe_error()}); results of {rec.finished} kept"
        try:
            changed = self.cache_key(chapter, scale, rec.seed, rec.params) != rec.key
        except (OSError, SyntaxError):  # pragma: no cover - a source being edited
            changed = False
        if changed:
            return "stale", f"the chapter or its library changed since the run of {rec.finished}"
        return "ok", ""

    # -- cache key -------------------------------------------------------------------------
    def key_inputs(self, chapter: Chapter) -> list[Path]:
        """The files a chapter's cache key covers, in a stable order.

        They are the chapter's notebooks, the ``icml26`` modules the notebooks import
        (transitively, through absolute and relative imports), the notebook runtime
        (``icml26.book.chapter`` and ``icml26.book.bench`` with their imports), the
        chapter's ``data/<chapter>/`` folder and the pins. The build tool (runner,
        site, CLI) and the modules of other chapters are not among them.
        """
        files: list[Path] = list(chapter.notebooks)
        roots: set[str] = set(RUNTIME_MODULES)
        for nb in chapter.notebooks:
            roots |= _notebook_imports(nb)
        files += module_closure(self.src_dir, roots)
        data = self.data_dir / chapter.id
        if data.is_dir():
            files += sorted(p for p in data.rglob("*") if p.is_file())
        for name in ("requirements.txt", "requirements.lock"):
            if (self.root / name).exists():
                files.append(self.root / name)
        return files

    def library_modules(self, chapter: Chapter) -> list[str]:
        """The ``icml26`` modules a chapter's notebooks import, with the notebook runtime (the closure's roots)."""
        roots: set[str] = set(RUNTIME_MODULES)
        for nb in chapter.notebooks:
            roots |= _notebook_imports(nb)
        return sorted(roots)

    def cache_key(self, chapter: Chapter, scale: str, seed: int, params: dict | None = None) -> str:
        """SHA-256 over :meth:`key_inputs` (paths and contents) and the parameters."""
        h = hashlib.sha256()
        for p in self.key_inputs(chapter):
            h.update(str(p.relative_to(self.root)).encode())
            h.update(b"\0")
            h.update(file_bytes(p))
            h.update(b"\0")
        h.update(json.dumps({"scale": scale, "seed": seed, **(params or {})}, sort_keys=True).encode())
        return h.hexdigest()

    # -- execution -------------------------------------------------------------------------
    def is_cached(self, chapter: Chapter, scale: str, seed: int, key: str | None = None, params: dict | None = None) -> bool:
        """Whether the chapter's last good run has the cache key it would have now."""
        key = key or self.cache_key(chapter, scale, seed, params)
        prev = self.record(scale, chapter)
        out_dir = self.executed_dir(scale, chapter)
        return (
            prev is not None
            and prev.key == key
            and prev.status in ("ok", "cached")
            and not (out_dir / "failed.json").exists()
            and all((out_dir / f"{nb.stem}.ipynb").exists() for nb in chapter.notebooks)
        )

    def execute(
        self,
        chapter: Chapter,
        scale: str,
        seed: int,
        *,
        force: bool = False,
        position: int | None = None,
        progress: bool = True,
        kernels: KernelRegistry | None = None,
        params: dict | None = None,
    ) -> RunRecord:
        """Execute one chapter (every notebook in order) unless its cache key is unchanged.

        The notebooks execute into a temporary folder and the claim records go to a
        temporary results folder; both replace the chapter's previous results only when
        every notebook ran through. ``kernels`` (shared by the chapters of one
        :meth:`run`) lets Ctrl-C shut down the running kernels. ``params`` are further
        notebook parameters (``run --param``): they enter the cache key and the record.
        """
        check_scale(scale)
        seed = check_seed(seed)
        kernels = kernels or KernelRegistry()
        params = dict(params or {})
        key = self.cache_key(chapter, scale, seed, params)
        out_dir = self.executed_dir(scale, chapter)
        if not force and self.is_cached(chapter, scale, seed, key):
            prev = self.record(scale, chapter)
            assert prev is not None
            prev.status = "cached"
            return prev
        if not force and not params:
            adopted = self.adopt_sweep_task(chapter, scale, seed, key)
            if adopted is not None:
                return adopted
        last_failure = self.failure(scale, chapter)
        if not force and last_failure is not None and last_failure.key == key and last_failure.status == "failed":
            # the same sources, library, pins and parameters failed before: running them again would fail again
            last_failure.error = {
                **(last_failure.error or {}),
                "evalue": (
                    f"not executed again: it failed with these same inputs at {last_failure.finished} "
                    f"({(last_failure.error or {}).get('evalue', '')}); --force runs it anyway"
                )[:600],
            }
            return last_failure
        record = RunRecord(
            chapter=chapter.id,
            scale=scale,
            seed=seed,
            status="ok",
            wall_s=0.0,
            key=key,
            cpus=os.cpu_count() or 0,
            cpu=cpu_description(),
            params=params,
        )
        if kernels.cancelled:
            record.status = "interrupted"
            return record

        import jupytext  # imported here: a cache hit should not pay for papermill's import
        import papermill
        from papermill.exceptions import PapermillExecutionError

        token = f"{os.getpid()}-{uuid.uuid4().hex[:12]}"
        work = out_dir.parent / f".{chapter.id}.{token}.tmp"
        res_root = self.results_dir() / ".tmp" / token
        work.mkdir(parents=True)
        kernel_env = {"ICML26_RESULTS_DIR": str(res_root), "ICML26_RUN_KEY": key, "ICML26_PROGRESS": "line"}
        t0 = time.perf_counter()
        kernel_cpu: list[float] = []
        try:
            for nb_path in chapter.notebooks:
                out = work / f"{nb_path.stem}.ipynb"
                record.notebooks.append(out.name)
                bar: bool | dict = False
                if progress:
                    bar = {"desc": f"{chapter.id}/{nb_path.stem}", "leave": False}
                    if position is not None:
                        bar["position"] = position
                try:
                    source = jupytext.read(nb_path)
                except Exception as exc:  # front matter or cell markup that jupytext cannot read: this chapter fails
                    mark = getattr(exc, "problem_mark", None) or getattr(getattr(exc, "__context__", None), "problem_mark", None)
                    record.status = "failed"
                    record.error = {
                        "notebook": nb_path.name,
                        "cell": None,
                        "line": (mark.line + 1) if mark is not None else None,
                        "ename": type(exc).__name__,
                        "evalue": f"{nb_path}: " + str(exc).replace("\n", " ")[:480],
                    }
                    break
                try:
                    papermill.execute_notebook(
                        source,
                        str(out),
                        parameters={**params, "scale": scale, "seed": seed},
                        cwd=str(chapter.path),
                        kernel_name="python3",
                        progress_bar=bar,
                        log_output=False,
                        kernel_manager_class=kernel_manager_with_env(kernel_env, kernels, kernel_cpu),
                    )
                except PapermillExecutionError as exc:
                    record.status = "failed"
                    record.error = {
                        "notebook": nb_path.name,
                        **source_location(nb_path, source, exc.cell_index, exc.traceback),
                        "ename": exc.ename,
                        "evalue": str(exc.evalue).splitlines()[0][:500] if exc.evalue else "",
                    }
                except Exception as exc:  # kernel died (an out-of-memory kill), bad notebook, ...
                    record.status = "failed"
                    where = {"cell": None}
                    idx = _running_cell(out)
                    if idx is not None:  # the cell that was running when the kernel died
                        where = source_location(nb_path, source, idx, None)
                    record.error = {"notebook": nb_path.name, **where, "ename": type(exc).__name__, "evalue": str(exc)[:500]}
                if kernels.cancelled:
                    record.status, record.error = "interrupted", None
                if record.status != "ok":
                    break
            record.wall_s = round(time.perf_counter() - t0, 2)
            record.cpu_s = round(sum(kernel_cpu), 2)
            record.finished = time.strftime("%Y-%m-%d %H:%M:%S")
            if record.status == "ok":
                (work / "run.json").write_text(json.dumps(asdict(record), indent=2))
                self._commit(work, out_dir, res_root / scale / chapter.id, self.results_dir() / scale / chapter.id)
            elif record.status == "failed":
                out_dir.mkdir(parents=True, exist_ok=True)
                failed = out_dir / "failed"
                shutil.rmtree(failed, ignore_errors=True)
                work.rename(failed)
                tmp_failed = out_dir / f".failed.json.{token}.tmp"  # atomically, as run.json
                tmp_failed.write_text(json.dumps(asdict(record), indent=2))
                tmp_failed.replace(out_dir / "failed.json")
        finally:
            shutil.rmtree(work, ignore_errors=True)
            shutil.rmtree(res_root, ignore_errors=True)
            try:
                res_root.parent.rmdir()  # results/.tmp, once no other run uses it
            except OSError:
                pass
        return record

    def sweep_task_for(self, chapter: Chapter, scale: str, seed: int, key: str) -> tuple[Path, dict] | tuple[None, None]:
        """The stored sweep task that is this run (its folder and record), else ``(None, None)``; see :meth:`adopt_sweep_task`."""
        # the sweep's folder layout (icml26.book.sweep.task_dir, default parameters and kernels),
        # read here without importing the sweep module, which imports this one
        src = self.build_dir / SWEEP_DIR / scale / f"seed-{seed}" / chapter.id
        try:
            rec = json.loads((src / "run.json").read_text())
        except (OSError, ValueError):
            return None, None
        if not isinstance(rec, dict):
            return None, None
        if (
            rec.get("key") != key
            or rec.get("seed") != seed
            or rec.get("status") not in ("ok", "cached")
            or rec.get("params")
            or rec.get("kernels")
        ):
            return None, None
        if (src / "failed.json").exists() or not all((src / f"{nb.stem}.ipynb").exists() for nb in chapter.notebooks):
            return None, None
        for f in sorted((src / "results").glob("*.json")):  # the task's claim records must carry its key
            try:
                if json.loads(f.read_text()).get("run_key") != key:
                    return None, None
            except (ValueError, AttributeError):
                return None, None
        return src, rec

    def adopt_sweep_task(self, chapter: Chapter, scale: str, seed: int, key: str) -> RunRecord | None:
        """Put a stored sweep task in place of this run when it is the same task; its record (``status="cached"``), else ``None``.

        A sweep task of (chapter, scale, seed) with default parameters and kernels executed
        the same notebooks with the same inputs as this run (``python -m icml26 sweep``):
        when its key is this run's key and its notebooks and claim records are all there,
        they are copied in as the chapter's run (the record keeps the task's wall time, CPU
        and finishing time, and its ``run.json`` names the task folder as ``adopted_from``).
        Anything else returns ``None`` and the chapter runs.
        """
        src, rec = self.sweep_task_for(chapter, scale, seed, key)
        if src is None or rec is None:
            return None
        token = f"{os.getpid()}-{uuid.uuid4().hex[:12]}"
        out_dir = self.executed_dir(scale, chapter)
        work = out_dir.parent / f".{chapter.id}.{token}.tmp"
        res_new = self.results_dir() / ".tmp" / token / scale / chapter.id
        try:
            work.mkdir(parents=True)
            for nb in chapter.notebooks:
                shutil.copy2(src / f"{nb.stem}.ipynb", work / f"{nb.stem}.ipynb")
            if (src / "results").is_dir():
                shutil.copytree(src / "results", res_new)
            record = RunRecord(
                chapter=chapter.id,
                scale=scale,
                seed=seed,
                status="ok",
                wall_s=float(rec.get("wall_s") or 0.0),
                key=key,
                notebooks=[f"{nb.stem}.ipynb" for nb in chapter.notebooks],
                finished=str(rec.get("finished", "")),
                cpu=str(rec.get("cpu", "")),
                cpu_s=float(rec.get("cpu_s") or 0.0),
            )
            (work / "run.json").write_text(
                json.dumps({**asdict(record), "adopted_from": str(src.relative_to(self.root))}, indent=2)
            )
            self._commit(work, out_dir, res_new, self.results_dir() / scale / chapter.id)
            (out_dir / "failed.json").unlink(missing_ok=True)
        finally:
            shutil.rmtree(work, ignore_errors=True)
            shutil.rmtree(self.results_dir() / ".tmp" / token, ignore_errors=True)
        record.status = "cached"
        return record

    @staticmethod
    def _commit(work: Path, out_dir: Path, res_new: Path, res_dest: Path) -> None:
        """Put a successful run in place of the previous one (each step a rename).

        Another process committing the same chapter at the same moment can get between
        two renames; the last step is then retried, and the last run to commit wins.
        """
        token = uuid.uuid4().hex[:8]
        olds = [res_dest.parent / f".{res_dest.name}.{token}.old"]
        try:
            if res_dest.exists():
                res_dest.rename(olds[0])
            if res_new.exists():
                res_dest.parent.mkdir(parents=True, exist_ok=True)
                res_new.rename(res_dest)
            for attempt in range(3):
                olds.append(out_dir.parent / f".{out_dir.name}.{token}.{attempt}.old")
                try:
                    if out_dir.exists():
                        out_dir.rename(olds[-1])
                    work.rename(out_dir)
                    return
                except OSError:
                    if attempt == 2:
                        raise
                    time.sleep(0.2)
        finally:
            for old in olds:
                shutil.rmtree(old, ignore_errors=True)

    def expected_wall(self, chapter: Chapter, scale: str) -> float | None:
        """Wall time of the chapter's last good run at this scale, if known (a failed run stops early: it says nothing)."""
        rec = self.record(scale, chapter)
        return rec.wall_s if rec is not None and rec.status != "failed" else None

    def run(
        self,
        chapters: Iterable[Chapter],
        scale: str,
        seed: int,
        *,
        jobs: int = 1,
        force: bool = False,
        progress: bool = True,
        say: Callable[[str], None] | None = None,
        params: dict | None = None,
    ) -> list[RunRecord]:
        """Execute several chapters, ``jobs`` at a time; a failure does not stop the others.

        ``params`` are further notebook parameters for every chapter (see :meth:`execute`).

        ``say`` receives one-line messages: the plan with an estimate of the time from the
        previous runs' wall times, then each chapter as it finishes with the time left.
        Ctrl-C (KeyboardInterrupt in the calling thread) kills the running kernels, cancels
        the queued chapters, keeps every chapter's previous results and raises
        :class:`Interrupted`.
        """
        from tqdm.auto import tqdm

        if not isinstance(jobs, int) or jobs < 1:
            raise ValueError(f"jobs={jobs!r} must be an integer >= 1")
        check_scale(scale)
        seed = check_seed(seed)
        user_say = say or (lambda msg: None)

        def say(msg: str) -> None:  # a line between the live bars, not through them
            if progress:
                with tqdm.external_write_mode(file=sys.stderr):
                    user_say(msg)
            else:
                user_say(msg)

        chapters = list(chapters)
        sweep_stale_staging(self.build_dir)
        todo = [
            c
            for c in chapters
            if force
            or not (
                self.is_cached(c, scale, seed, params=params)
                or (not params and self.sweep_task_for(c, scale, seed, self.cache_key(c, scale, seed))[0] is not None)
            )
        ]
        expected = {c.id: self.expected_wall(c, scale) for c in todo}
        known = [w for w in expected.values() if w is not None]
        if todo:
            unknown = len(todo) - len(known)
            est = (
                f"about {_duration(estimate_wall(known, jobs))} judging by the previous runs"
                if known
                else "no previous run to judge the time by"
            )
            if known and unknown:
                est += f" ({unknown} chapter(s) without one)"
            say(f"{len(todo)} of {len(chapters)} chapter(s) to execute at {scale} scale, {min(jobs, len(todo))} at a time; {est}")
        kernels = KernelRegistry()
        records: list[RunRecord] = []
        overall = tqdm(total=len(chapters), desc=f"chapters ({scale})", unit="chapter", disable=not progress, position=0)
        pool = ThreadPoolExecutor(max_workers=jobs)
        futures = {
            pool.submit(
                self.execute,
                ch,
                scale,
                seed,
                force=force,
                position=1 + (i % jobs),
                progress=progress,
                kernels=kernels,
                params=params,
            ): ch
            for i, ch in enumerate(chapters)
        }
        left = dict(expected)
        try:
            pending = set(futures)
            while pending:
                done, pending = wait(pending, timeout=0.25, return_when=FIRST_COMPLETED)
                for fut in done:
                    rec = fut.result()
                    records.append(rec)
                    left.pop(rec.chapter, None)
                    remaining = [w for w in left.values() if w is not None]
                    eta = f"; about {_duration(estimate_wall(remaining, jobs))} left" if remaining else ""
                    overall.set_postfix_str(f"{rec.chapter}: {rec.status} ({rec.wall_s:.1f}s){eta}")
                    overall.update(1)
                    if rec.status != "cached":
                        say(f"{rec.chapter}: {rec.status} in {rec.wall_s:.1f} s ({len(records)} of {len(chapters)} done{eta})")
        except KeyboardInterrupt:
            _ignore_sigint()  # a second Ctrl-C must not break the clean-up
            kernels.cancel()
            queued = [futures[f].id for f in futures if f.cancel()]
            running = [futures[f].id for f in futures if not f.done()]
            wait([f for f in futures if not f.cancelled()], timeout=30)
            pool.shutdown(wait=False, cancel_futures=True)
            overall.close()
            finished = [f.result() for f in futures if f.done() and not f.cancelled() and f.exception() is None]
            raise Interrupted(running, queued, [r for r in finished if r.status in ("ok", "failed")]) from None
        pool.shutdown()
        overall.close()
        order = {c.id: i for i, c in enumerate(chapters)}
        return sorted(records, key=lambda r: order[r.chapter])


def estimate_wall(walls: Sequence[float], jobs: int) -> float:
    """Wall time of running tasks of these durations ``jobs`` at a time, longest first."""
    lanes = [0.0] * max(1, jobs)
    for w in sorted(walls, reverse=True):
        lanes[lanes.index(min(lanes))] += w
    return max(lanes)


def _duration(seconds: float) -> str:
    seconds = round(seconds)
    return f"{seconds} s" if seconds < 90 else f"{seconds // 60} min {seconds % 60:02d} s"


def _ignore_sigint() -> None:
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)


class KernelRegistry:
    """The kernels started by one run, so that Ctrl-C can shut them all down at once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._managers: list = []
        self._cancel = threading.Event()

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def add(self, manager) -> None:
        with self._lock:
            self._managers.append(manager)
        if self.cancelled:  # started while the run was being stopped
            _kill(manager)

    def cancel(self) -> None:
        """Mark the run stopped and kill every kernel it started (and their children)."""
        import logging

        self._cancel.set()
        # the executor would log "Kernel died while waiting for execute reply": it was killed on purpose
        logging.getLogger("papermill").setLevel(logging.CRITICAL)
        with self._lock:
            managers = list(self._managers)
        for m in managers:
            _kill(m)


def _kill(manager) -> None:
    pid = getattr(getattr(manager, "provisioner", None), "pid", None)
    if pid:
        try:  # the kernel leads its own session (jupyter_client starts it so): take its children too
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
    try:  # the connection file and IPC sockets this kernel left in the runtime folder
        manager.cleanup_connection_file()
        manager.cleanup_ipc_files()
    except Exception:  # noqa: BLE001 - best effort: a half-started kernel may have none
        pass


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_stale_staging(book_build: Path) -> list[Path]:
    """Remove staging folders (``.<chapter>.<pid>-<token>.tmp``, ``results/.tmp/<pid>-<token>``) whose run is gone.

    A run killed by SIGKILL or a power cut leaves them behind; a folder whose process is
    still alive (another run of the same book) is left alone. Returns what was removed.
    """
    removed: list[Path] = []
    cands = list((book_build / "executed").glob("*/.*.tmp")) + list((book_build / "results" / ".tmp").glob("*"))
    for d in cands:
        m = re.search(r"(?:^|\.)(\d+)-[0-9a-f]+(?:\.tmp)?$", d.name)
        if not d.is_dir() or (m and _pid_alive(int(m.group(1)))):
            continue
        shutil.rmtree(d, ignore_errors=True)
        removed.append(d)
    return removed


def _running_cell(executed: Path) -> int | None:
    """Index of the cell that was running when execution stopped, from a partly written output notebook, if any."""
    try:
        import nbformat

        nb = nbformat.read(str(executed), as_version=4)
    except Exception:  # noqa: BLE001 - no output written yet
        return None
    # papermill marks the cell "completed" even when the kernel died in it; the last cell that
    # started is the one that was running (cells after it never got a start time)
    started = [i for i, cell in enumerate(nb.cells) if cell.get("metadata", {}).get("papermill", {}).get("start_time")]
    return started[-1] if started else None


def is_notebook_source(path: Path) -> bool:
    """A MyST-markdown file is a notebook source if its front matter names a kernelspec."""
    head = path.read_text(encoding="utf-8")[:2000]
    return head.startswith("---") and "kernelspec:" in head


def _source_cell_number(source, cell_index: int | None) -> str | None:
    """Describe the failing cell by its place in the chapter's source notebook.

    papermill counts cells of the executed notebook, where it injected a parameters cell
    right after the cell tagged ``parameters``; this maps back to the source and returns
    ``"<k> (code cell <c>: '<first line>')"`` with both counts starting at 1.
    """
    if cell_index is None:
        return None
    cells = source.cells
    tagged = [i for i, c in enumerate(cells) if "parameters" in c.get("metadata", {}).get("tags", [])]
    idx = cell_index - 1 if tagged and cell_index > tagged[0] else cell_index
    if not 0 <= idx < len(cells):  # pragma: no cover - defensive
        return str(cell_index)
    code_no = sum(1 for c in cells[: idx + 1] if c.cell_type == "code")
    lines = cells[idx].source.strip().splitlines()
    first = lines[0][:60] if lines else ""
    return f"{idx + 1} (code cell {code_no}: {first!r})"


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def source_location(nb_path: Path, source, cell_index: int | None, traceback: Sequence[str] | None = None) -> dict:
    """Where a failing cell sits in the chapter's ``.md``: ``{"cell": ..., "line": ...}``.

    ``cell`` is as :func:`_source_cell_number` gives it; ``line`` is the line of the
    ``.md`` that raised (from the traceback's ``Cell In[...], line N``), else the cell's
    first code line; ``None`` when it cannot be told.
    """
    cell = _source_cell_number(source, cell_index)
    line = None
    if cell is not None:
        m = re.search(r"code cell (\d+)", cell)
        in_cell = None
        tb = _ANSI.sub("", "\n".join(traceback or []))
        hit = re.search(r"Cell In\[\d+\], line (\d+)", tb) or re.search(r'File "<ipython-input-\d+-\w+>", line (\d+)', tb)
        if hit:
            in_cell = int(hit.group(1))
        if m:
            try:
                line = md_code_line(nb_path.read_text(encoding="utf-8"), int(m.group(1)), in_cell or 1)
            except OSError:  # pragma: no cover
                line = None
    return {"cell": cell, "line": line}


def md_code_line(text: str, code_no: int, line_in_cell: int = 1) -> int | None:
    """The 1-based line of a MyST notebook holding line ``line_in_cell`` of code cell ``code_no``."""
    lines = text.splitlines()
    fences = [i for i, ln in enumerate(lines) if ln.startswith("```{code-cell}")]
    if not 1 <= code_no <= len(fences):
        return None
    i = fences[code_no - 1] + 1
    options = False
    if i < len(lines) and lines[i].strip() == "---":  # options as a YAML block
        j = i + 1
        while j < len(lines) and lines[j].strip() != "---":
            j += 1
        i, options = j + 1, True
    while i < len(lines) and lines[i].startswith(":"):  # options as :key: value lines
        i, options = i + 1, True
    if options and i < len(lines) and not lines[i].strip():
        i += 1
    return i + line_in_cell  # i is the 0-based index of the first code line


def _module_file(src: Path, module: str) -> Path | None:
    """The source file of ``module`` (dotted) under ``src``, if it is one of ours."""
    base = src.joinpath(*module.split("."))
    for cand in (base.with_suffix(".py"), base / "__init__.py"):
        if cand.is_file():
            return cand
    return None


def _imports_of(tree: ast.AST, module: str, is_package: bool) -> set[str]:
    """Dotted names of the ``icml26`` modules a parsed module imports (submodules included)."""
    out: set[str] = set()
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.split(".")[0] == PACKAGE}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                if node.level > 1:
                    parts = parts[: len(parts) - (node.level - 1)]
                base = ".".join(parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            if base.split(".")[0] != PACKAGE:
                continue
            out.add(base)
            out |= {f"{base}.{a.name}" for a in node.names if a.name != "*"}
    return out


_FILE_MEMO: dict[tuple, object] | None = None


@contextlib.contextmanager
def file_memo():
    """Within the block, read and parse each source file once (:func:`_memo`).

    A build asks for the cache keys of every chapter several times (state, scorecard,
    sweep currency), which without the memo re-reads and re-parses the same modules
    hundreds of times. The memo lives only for the block, so an edit made between
    two calls outside it is always seen; inside, a file whose size or mtime changes
    is read again. Nested blocks share the outer memo.
    """
    global _FILE_MEMO
    if _FILE_MEMO is not None:
        yield
        return
    _FILE_MEMO = {}
    try:
        yield
    finally:
        _FILE_MEMO = None


def _memo(kind: str, path: Path, compute):
    """``compute(bytes)`` for a file; inside :func:`file_memo`, remembered while its size and mtime stay the same."""
    if _FILE_MEMO is None:
        return compute(path.read_bytes())
    st = path.stat()
    key = (kind, str(path), st.st_mtime_ns, st.st_size)
    if key not in _FILE_MEMO:
        _FILE_MEMO[key] = compute(path.read_bytes())
    return _FILE_MEMO[key]


def memo_value(key: tuple, compute):
    """``compute()`` remembered under ``key`` for the rest of the :func:`file_memo` block (computed every call outside one)."""
    if _FILE_MEMO is None:
        return compute()
    key = ("value",) + key
    if key not in _FILE_MEMO:
        _FILE_MEMO[key] = compute()
    return _FILE_MEMO[key]


def file_bytes(path: Path) -> bytes:
    """A file's contents (memoised by :func:`_memo`)."""
    return _memo("bytes", path, lambda b: b)


def _notebook_imports(path: Path) -> set[str]:
    """``icml26`` modules imported by the code cells of a MyST notebook."""
    return set(_memo("nb-imports", path, lambda b: frozenset(_notebook_imports_of(b.decode("utf-8")))))


def _notebook_imports_of(text: str) -> set[str]:
    code = "\n".join(re.findall(r"^```\{code-cell\}[^\n]*\n(.*?)^```", text, re.M | re.S))
    lines = [ln for ln in code.splitlines() if not ln.lstrip().startswith(("%", "!", ":"))]
    try:
        tree = ast.parse("\n".join(lines))
    except SyntaxError:  # a cell the parser cannot read: fall back to a line scan
        tree = ast.parse("\n".join(ln.strip() for ln in lines if ln.strip().startswith(("import ", "from "))))
    return _imports_of(tree, "__main__", False)


def _module_refs(source: bytes, module: str, is_package: bool) -> tuple[frozenset[str], tuple[str, ...]]:
    """The ``icml26`` modules a module's source imports, and the scripts it runs by file name
    (``Path(__file__).with_name("_runner.py")``)."""
    text = source.decode("utf-8")
    scripts = tuple(re.findall(r"[\"']([A-Za-z_]\w*\.py)[\"']", text))
    return frozenset(_imports_of(ast.parse(text), module, is_package)), scripts


def module_closure(src: Path, modules: Iterable[str]) -> list[Path]:
    """Source files of ``modules`` and of every ``icml26`` module they import, transitively.

    Parent packages' ``__init__.py`` are included, since importing ``a.b`` runs ``a``.
    Names that are not modules (``from icml26.x import some_function``) are skipped.
    """
    seen: dict[str, Path] = {}
    todo = list(modules)
    while todo:
        name = todo.pop()
        parts = name.split(".")
        for i in range(1, len(parts) + 1):
            sub = ".".join(parts[:i])
            if sub in seen:
                continue
            f = _module_file(src, sub)
            if f is None:
                continue
            seen[sub] = f
            imports, scripts = _memo(f"module:{sub}", f, lambda b, sub=sub, f=f: _module_refs(b, sub, f.name == "__init__.py"))
            todo.extend(imports)
            for script in scripts:
                if (f.parent / script).is_file():
                    seen[f"{sub}:{script}"] = f.parent / script
    return sorted(set(seen.values()))


def literal_parameters(code: str) -> dict:
    """The ``name = value`` assignments of a ``parameters`` cell's code, in order (``None`` for a value that is not a literal)."""
    out: dict = {}
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return out
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                out[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                out[node.targets[0].id] = None
    return out


def chapter_parameters(chapter: Chapter) -> dict:
    """The names and default values in the ``parameters`` cell of a chapter's first notebook (:func:`literal_parameters`)."""
    text = chapter.notebooks[0].read_text(encoding="utf-8")
    m = re.search(r"^```\{code-cell\}[^\n]*\n:tags: \[[^\]]*parameters[^\]]*\]\n(.*?)^```", text, re.M | re.S)
    return literal_parameters(m.group(1)) if m else {}


def installed_src() -> Path:
    """The folder that holds the ``icml26`` package this interpreter imports (``src/`` for an editable install)."""
    import icml26

    return Path(icml26.__file__).resolve().parents[1]


def library_files(modules: Iterable[str], src: Path | None = None) -> dict[str, str]:
    """Relative path → SHA-256 of every source file in the closure of ``modules`` (:func:`module_closure`).

    ``src`` defaults to :func:`installed_src`: the library this interpreter really runs,
    which is what a Dask worker executes a chapter with.
    """
    src = installed_src() if src is None else src
    return {p.relative_to(src).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() for p in module_closure(src, modules)}


def fingerprint(files: dict[str, str]) -> str:
    """A short fingerprint of :func:`library_files` (order-free)."""
    h = hashlib.sha256()
    for k in sorted(files):
        h.update(f"{k}\0{files[k]}\0".encode())
    return h.hexdigest()[:16]


def library_diff(client: dict[str, str], worker: dict[str, str]) -> list[str]:
    """The files that differ between two :func:`library_files` maps, each with how (``changed``, ``missing``, ``extra``)."""
    out = [f"{k} (changed)" for k in sorted(set(client) & set(worker)) if client[k] != worker[k]]
    out += [f"{k} (missing on the worker)" for k in sorted(set(client) - set(worker))]
    out += [f"{k} (only on the worker)" for k in sorted(set(worker) - set(client))]
    return out


def pinned_versions(root: Path) -> dict[str, str]:
    """Installed versions of the packages ``requirements.txt`` pins (``name==version`` lines), by name."""
    import importlib.metadata as md

    out: dict[str, str] = {}
    req = root / "requirements.txt"
    if not req.is_file():
        return out
    for line in req.read_text().splitlines():
        line = line.split("#")[0].strip()
        if "==" in line:
            name = re.split(r"[\[=<>; ]", line, maxsplit=1)[0].strip()
            try:
                out[name] = md.version(name)
            except md.PackageNotFoundError:
                out[name] = "not installed"
    return out


def kernel_cpu_seconds(pid: int | None) -> float:
    """User + system CPU seconds of process ``pid`` and its live children (0.0 if it is gone).

    Unlike wall time, this does not grow when other work shares the cores, so it is what
    compares two versions of a chapter measured on a busy machine.
    """
    if pid is None:
        return 0.0
    import psutil

    try:
        proc = psutil.Process(pid)
        procs = [proc, *proc.children(recursive=True)]
    except psutil.Error:
        return 0.0
    total = 0.0
    for p in procs:
        try:
            t = p.cpu_times()
        except psutil.Error:
            continue
        total += t.user + t.system
    return total


ONE_THREAD_ENV: dict[str, str] = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
"""One BLAS/OpenMP thread per kernel: chapters run one torch thread (:func:`chapter.setup`) and run
side by side (``--jobs``, sweeps), so a second BLAS thread per kernel would only oversubscribe the cores
(and inflate the CPU time recorded). A value already in the environment is kept."""


#: The folder under ``_build/`` where ``python -m icml26 sweep`` stores its tasks (:mod:`icml26.book.sweep`).
SWEEP_DIR = "sweep"

#: Variables a kernel never inherits. A Dask nanny starts its workers with
#: ``MALLOC_TRIM_THRESHOLD_=65536`` (``distributed.nanny.pre-spawn-environ``), which makes glibc
#: hand freed memory back to the system at every large free; a chapter's kernel started from
#: a sweep worker inherited it and trained its torch models about twice as slowly (a
#: 300-step MLP: 0.96 → 1.83 CPU s; chapter 08 at `full`: 1,446 s in a sweep task against
#: 457 s from `run`). Memory settings change no arithmetic, only speed.
KERNEL_ENV_DROPPED: tuple[str, ...] = ("MALLOC_TRIM_THRESHOLD_",)


def kernel_manager_with_env(extra_env: dict[str, str], registry: KernelRegistry | None = None, cpu: list[float] | None = None):
    """A kernel-manager class whose kernels start with ``extra_env`` added to the environment
    (and :data:`ONE_THREAD_ENV` where the environment does not set those variables).

    Each execution gets its own class, so chapters executed at the same time in threads
    never see each other's settings (the process environment is left alone). Every kernel
    started is added to ``registry``, which can kill them all. If ``cpu`` is a list, each
    kernel's CPU seconds (:func:`kernel_cpu_seconds`) are appended to it just before the
    kernel is shut down.
    """
    from jupyter_client.manager import AsyncKernelManager

    extra = dict(extra_env)

    class _EnvKernelManager(AsyncKernelManager):
        async def start_kernel(self, **kw):  # type: ignore[override]
            env = dict(kw.pop("env", None) or os.environ)
            for k, v in ONE_THREAD_ENV.items():
                env.setdefault(k, v)
            for k in KERNEL_ENV_DROPPED:  # a Dask worker's memory settings would slow the chapter down
                env.pop(k, None)
            env.update(extra)
            # local IPC sockets: nothing listens on TCP, and the kernel does not warn that it does
            # (each kernel its own socket path; the default "kernel-ipc" in the current
            # folder would be shared by kernels started at the same time)
            self.transport = "ipc"
            self.ip = os.path.join(tempfile.gettempdir(), f"icml26-kernel-{uuid.uuid4().hex}")
            out = await super().start_kernel(env=env, **kw)
            if registry is not None:
                registry.add(self)
            return out

        async def _async_interrupt_kernel(self) -> None:  # type: ignore[override]
            # jupyter_client interrupts a kernel before shutting it down; the kernel then logs
            # "KeyboardInterrupt caught in kernel" to the terminal. A shutdown follows anyway.
            if getattr(self, "shutting_down", False):
                return
            await super()._async_interrupt_kernel()

        async def shutdown_kernel(self, *args, **kw):  # type: ignore[override]
            if cpu is not None:
                prov = getattr(self, "provisioner", None)
                cpu.append(kernel_cpu_seconds(getattr(prov, "pid", None)))
            return await super().shutdown_kernel(*args, **kw)

    return _EnvKernelManager
