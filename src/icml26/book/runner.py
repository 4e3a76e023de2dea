"""Execute chapters headlessly with papermill, with a cache keyed on everything that matters.

A chapter is a folder ``book/NN-slug/`` holding one or more MyST-markdown notebooks
(jupytext). Executing it at a ``scale`` and ``seed`` writes, under
``_build/executed/<scale>/<chapter>/``, the executed ``.ipynb`` of each notebook and a
``run.json`` record (status, wall time, cache key, the error if any).

The cache key hashes the chapter's notebook sources, every file of the ``src/``
library, the chapter's ``data/`` folder, the pinned requirements and the parameters:
a rerun with all of these unchanged is a cache hit and does not execute; a change in
``src/`` does.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
import shutil
import tempfile
import time
import uuid
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .chapter import check_scale, check_seed

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
    status: str  # "ok", "cached" or "failed"
    wall_s: float
    key: str
    notebooks: list[str] = field(default_factory=list)
    error: dict | None = None
    finished: str = ""

    def describe_error(self) -> str:
        e = self.error or {}
        where = f"{e.get('notebook', '?')}, cell {e.get('cell', '?')}"
        return f"{self.chapter}: {where}: {e.get('ename', 'Error')}: {e.get('evalue', '')}".strip()


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
        """The last run record of a chapter at a scale, if any."""
        p = self.executed_dir(scale, chapter) / "run.json"
        if not p.exists():
            return None
        return RunRecord(**json.loads(p.read_text()))

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

    def cache_key(self, chapter: Chapter, scale: str, seed: int, params: dict | None = None) -> str:
        """SHA-256 over :meth:`key_inputs` (paths and contents) and the parameters."""
        h = hashlib.sha256()
        for p in self.key_inputs(chapter):
            h.update(str(p.relative_to(self.root)).encode())
            h.update(b"\0")
            h.update(p.read_bytes())
            h.update(b"\0")
        h.update(json.dumps({"scale": scale, "seed": seed, **(params or {})}, sort_keys=True).encode())
        return h.hexdigest()

    # -- execution -------------------------------------------------------------------------
    def execute(
        self,
        chapter: Chapter,
        scale: str,
        seed: int,
        *,
        force: bool = False,
        position: int | None = None,
        progress: bool = True,
    ) -> RunRecord:
        """Execute one chapter (every notebook in order) unless its cache key is unchanged."""
        check_scale(scale)
        seed = check_seed(seed)
        key = self.cache_key(chapter, scale, seed)
        prev = self.record(scale, chapter)
        out_dir = self.executed_dir(scale, chapter)
        if (
            not force
            and prev is not None
            and prev.key == key
            and prev.status in ("ok", "cached")
            and all((out_dir / f"{nb.stem}.ipynb").exists() for nb in chapter.notebooks)
        ):
            prev.status = "cached"
            return prev

        import jupytext  # imported here: a cache hit should not pay for papermill's import
        import papermill
        from papermill.exceptions import PapermillExecutionError

        if out_dir.exists():
            shutil.rmtree(out_dir)
        out_dir.mkdir(parents=True)
        stale = self.results_dir() / scale / chapter.id  # claim records of the previous run
        if stale.exists():
            shutil.rmtree(stale)

        kernel_env = {"ICML26_RESULTS_DIR": str(self.results_dir()), "ICML26_RUN_KEY": key, "ICML26_PROGRESS": "line"}
        t0 = time.perf_counter()
        record = RunRecord(chapter=chapter.id, scale=scale, seed=seed, status="ok", wall_s=0.0, key=key)
        for nb_path in chapter.notebooks:
            out = out_dir / f"{nb_path.stem}.ipynb"
            record.notebooks.append(out.name)
            bar: bool | dict = False
            if progress:
                bar = {"desc": f"{chapter.id}/{nb_path.stem}", "leave": False}
                if position is not None:
                    bar["position"] = position
            source = jupytext.read(nb_path)
            try:
                papermill.execute_notebook(
                    source,
                    str(out),
                    parameters={"scale": scale, "seed": seed},
                    cwd=str(chapter.path),
                    kernel_name="python3",
                    progress_bar=bar,
                    log_output=False,
                    kernel_manager_class=kernel_manager_with_env(kernel_env),
                )
            except PapermillExecutionError as exc:
                record.status = "failed"
                record.error = {
                    "notebook": nb_path.name,
                    "cell": _source_cell_number(source, exc.cell_index),
                    "ename": exc.ename,
                    "evalue": str(exc.evalue).splitlines()[0][:500] if exc.evalue else "",
                }
                break
            except Exception as exc:  # kernel died, bad notebook, ...
                record.status = "failed"
                record.error = {"notebook": nb_path.name, "cell": None, "ename": type(exc).__name__, "evalue": str(exc)[:500]}
                break
        record.wall_s = round(time.perf_counter() - t0, 2)
        record.finished = time.strftime("%Y-%m-%d %H:%M:%S")
        (out_dir / "run.json").write_text(json.dumps(asdict(record), indent=2))
        return record

    def run(
        self,
        chapters: Iterable[Chapter],
        scale: str,
        seed: int,
        *,
        jobs: int = 1,
        force: bool = False,
        progress: bool = True,
    ) -> list[RunRecord]:
        """Execute several chapters, ``jobs`` at a time; a failure does not stop the others."""
        from tqdm.auto import tqdm

        if not isinstance(jobs, int) or jobs < 1:
            raise ValueError(f"jobs={jobs!r} must be an integer >= 1")
        chapters = list(chapters)
        records: list[RunRecord] = []
        overall = tqdm(total=len(chapters), desc=f"chapters ({scale})", unit="chapter", disable=not progress, position=0)
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            futures = {
                pool.submit(self.execute, ch, scale, seed, force=force, position=1 + (i % jobs), progress=progress): ch
                for i, ch in enumerate(chapters)
            }
            for fut in as_completed(futures):
                rec = fut.result()
                records.append(rec)
                overall.set_postfix_str(f"{rec.chapter}: {rec.status} ({rec.wall_s:.1f}s)")
                overall.update(1)
        overall.close()
        order = {c.id: i for i, c in enumerate(chapters)}
        return sorted(records, key=lambda r: order[r.chapter])


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


def _notebook_imports(path: Path) -> set[str]:
    """``icml26`` modules imported by the code cells of a MyST notebook."""
    text = path.read_text(encoding="utf-8")
    code = "\n".join(re.findall(r"^```\{code-cell\}[^\n]*\n(.*?)^```", text, re.M | re.S))
    lines = [ln for ln in code.splitlines() if not ln.lstrip().startswith(("%", "!", ":"))]
    try:
        tree = ast.parse("\n".join(lines))
    except SyntaxError:  # a cell the parser cannot read: fall back to a line scan
        tree = ast.parse("\n".join(ln.strip() for ln in lines if ln.strip().startswith(("import ", "from "))))
    return _imports_of(tree, "__main__", False)


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
            text = f.read_text(encoding="utf-8")
            todo.extend(_imports_of(ast.parse(text), sub, f.name == "__init__.py"))
            # scripts a module runs by file name (``Path(__file__).with_name("_runner.py")``)
            for script in re.findall(r"[\"']([A-Za-z_]\w*\.py)[\"']", text):
                if (f.parent / script).is_file():
                    seen[f"{sub}:{script}"] = f.parent / script
    return sorted(set(seen.values()))


def kernel_manager_with_env(extra_env: dict[str, str]):
    """A kernel-manager class whose kernels start with ``extra_env`` added to the environment.

    Each execution gets its own class, so chapters executed at the same time in threads
    never see each other's settings (the process environment is left alone).
    """
    from jupyter_client.manager import AsyncKernelManager

    extra = dict(extra_env)

    class _EnvKernelManager(AsyncKernelManager):
        async def start_kernel(self, **kw):  # type: ignore[override]
            env = dict(kw.pop("env", None) or os.environ)
            env.update(extra)
            # local IPC sockets: nothing listens on TCP, and the kernel does not warn that it does
            # (each kernel its own socket path; the default "kernel-ipc" in the current
            # folder would be shared by kernels started at the same time)
            self.transport = "ipc"
            self.ip = os.path.join(tempfile.gettempdir(), f"icml26-kernel-{uuid.uuid4().hex}")
            return await super().start_kernel(env=env, **kw)

    return _EnvKernelManager
