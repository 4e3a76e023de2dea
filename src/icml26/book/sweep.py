"""Batch reproduction: chapters × seeds × scales as independent tasks on Dask distributed.

``python -m icml26 sweep --seeds 0-4 --scale full`` runs every chapter at five seeds, on
a :class:`dask.distributed.LocalCluster` sized to the machine (or, with ``--scheduler
tcp://host:port``, on an existing cluster). Each task carries what it needs as data:
the chapter's notebook sources, its ``data/`` files and the parameters. A worker needs
only the installed ``icml26`` package (and the pinned stack); it executes the chapter in
a temporary folder and returns the executed notebooks and the claim records as data.
The client writes them under ``_build/sweep/<scale>/seed-<seed>/<chapter>/`` — no shared
filesystem is assumed.

Tasks are cached like ``run``: by chapter, seed, scale, parameters and the chapter's
cache key (:meth:`icml26.book.runner.Book.cache_key`). A failing task is reported with
its chapter, seed and cell while the others finish; Ctrl-C cancels the sweep.
"""

from __future__ import annotations

import json
import logging
import os
import re
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .chapter import check_scale, check_seed, current_word
from .identity import cpu_description
from .runner import (
    ONE_THREAD_ENV,
    SWEEP_DIR,
    Book,
    Chapter,
    _source_cell_number,
    fingerprint,
    kernel_manager_with_env,
    library_diff,
    library_files,
    pinned_versions,
)

#: Second kernel families: environment variables that make torch (ATen's vectorised kernels,
#: MKL, oneDNN) and numpy/scipy (OpenBLAS) pick other code paths for the same operations.
#: They change the rounding of the arithmetic, never the experiment (same code, data,
#: seeds and settings); a rerun under one measures how far rounding alone moves a decision.
KERNEL_FAMILIES: dict[str, dict[str, str]] = {
    "avx2": {
        "ATEN_CPU_CAPABILITY": "avx2",
        "MKL_ENABLE_INSTRUCTIONS": "AVX2",
        "ONEDNN_MAX_CPU_ISA": "AVX2",
        "OPENBLAS_CORETYPE": "Haswell",
    },
}


def check_kernels(kernels: str) -> str:
    """``kernels`` if it names a second kernel family ("" for the default kernels), else a clear error."""
    if kernels != "" and kernels not in KERNEL_FAMILIES:
        raise ValueError(
            f"kernels={kernels!r} is not a kernel family; use one of {', '.join(map(repr, KERNEL_FAMILIES))} "
            "(or none for the machine's default kernels)"
        )
    return kernels


def parse_seeds(text: str) -> list[int]:
    """Seeds from ``"0-4"``, ``"0,1,2"`` or a mix (``"0-2,7"``), sorted and unique.

    >>> parse_seeds("0-2,7")
    [0, 1, 2, 7]
    """
    seeds: set[int] = set()
    for part in str(text).split(","):
        part = part.strip()
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
        if not m:
            raise ValueError(f"seeds {text!r}: {part!r} is not a seed or a range like 0-4")
        lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
        if hi < lo:
            raise ValueError(f"seeds {text!r}: the range {part!r} runs backwards")
        if hi - lo >= 10_000:
            raise ValueError(f"seeds {text!r}: the range {part!r} holds more than 10000 seeds")
        seeds.update(check_seed(s) for s in range(lo, hi + 1))
    return sorted(seeds)


def sweep_work_id(scale: str, tasks: Iterable[tuple[str, int]]) -> str:
    """A short id of a sweep's work: its scale and the (chapter, seed) pairs it executed.

    Two timings with the same id did the same work, so their wall-clock times compare.
    """
    import hashlib

    text = scale + ";" + ";".join(f"{c}:{s}" for c, s in sorted(set(tasks)))
    return hashlib.sha1(text.encode()).hexdigest()[:8]


def parse_params(items: Sequence[str]) -> dict[str, Any]:
    """Notebook parameters from ``key=value`` strings; values are read as JSON when they parse.

    >>> parse_params(["n_seeds=3", "name=abc"])
    {'n_seeds': 3, 'name': 'abc'}
    """
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.isidentifier():
            raise ValueError(f"--param {item!r}: use key=value with a Python identifier as key")
        if key in ("scale", "seed"):
            raise ValueError(
                f"--param {key}=…: set the {key} with --{key} (run) or --{key}{'s' if key == 'seed' else ''} (sweep)"
            )
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out


@dataclass
class SweepRecord:
    """One task of a sweep: what ran, how it ended, where its outputs are."""

    chapter: str
    scale: str
    seed: int
    params: dict
    key: str
    status: str  # "ok", "cached", "failed" or "cancelled"
    wall_s: float = 0.0
    error: dict | None = None
    finished: str = ""
    worker: str = ""
    cpu: str = ""  # the worker's CPU model and widest vector instructions ("": not recorded)
    kernels: str = ""  # the kernel family it ran under ("": the machine's default; see KERNEL_FAMILIES)
    cpu_s: float = 0.0  # CPU seconds of the task's kernels (0: not recorded)
    source: str = ""  # "run": adopted from `python -m icml26 run`'s record of the same key and seed

    def describe_error(self) -> str:
        e = self.error or {}
        return f"{self.chapter} (seed {self.seed}): {e.get('notebook', '?')}, cell {e.get('cell', '?')}: {e.get('ename', 'Error')}: {e.get('evalue', '')}"


def params_tag(params: dict | None) -> str:
    """The folder suffix of a task with non-default parameters: ``+`` and a short hash (empty for none)."""
    if not params:
        return ""
    import hashlib

    return "+" + hashlib.sha256(json.dumps(params, sort_keys=True).encode()).hexdigest()[:10]


def sweep_base(book: Book, scale: str, kernels: str = "") -> Path:
    """``_build/sweep/<scale>/``, or ``_build/sweep/<scale>/kernels-<family>/`` for a second kernel family."""
    base = book.build_dir / SWEEP_DIR / scale
    return base / f"kernels-{check_kernels(kernels)}" if kernels else base


def task_dir(book: Book, scale: str, seed: int, chapter: Chapter | str, params: dict | None = None, kernels: str = "") -> Path:
    """Where a sweep task's outputs live: ``_build/sweep/<scale>/seed-<seed>/<chapter>[+<params hash>]/``.

    Tasks with other parameters than the chapter's defaults get a folder of their own,
    so that they never overwrite, nor are pooled with, the default runs; tasks run under a
    second kernel family live under ``kernels-<family>/`` and are never pooled either (they
    rerun the same seeds: they measure rounding, they are not more evidence).
    """
    cid = chapter.id if isinstance(chapter, Chapter) else chapter
    return sweep_base(book, scale, kernels) / f"seed-{seed}" / (cid + params_tag(params))


def load_task(
    book: Book, scale: str, seed: int, chapter: Chapter | str, params: dict | None = None, kernels: str = ""
) -> SweepRecord | None:
    """The stored record of a sweep task, if any (an unreadable record counts as none)."""
    f = task_dir(book, scale, seed, chapter, params, kernels) / "run.json"
    if not f.exists():
        return None
    try:
        return SweepRecord(**json.loads(f.read_text()))
    except (ValueError, TypeError) as exc:
        import warnings

        warnings.warn(f"ignoring the unreadable sweep record {f}: {type(exc).__name__}: {exc}", stacklevel=2)
        return None


def check_params(book: Book, chapters: Sequence[Chapter], params: dict) -> None:
    """Refuse a parameter that a chapter's ``parameters`` cell does not define, naming the chapter and the valid ones."""
    from .runner import chapter_parameters

    for ch in chapters:
        valid = chapter_parameters(ch)
        unknown = [k for k in params if k not in valid]
        if unknown:
            raise ValueError(
                f"chapter {ch.id} has no parameter {', '.join(map(repr, unknown))}; its parameters cell defines "
                + ", ".join(sorted(valid))
                + " (scale and seed are set with --scale and --seed/--seeds)"
            )


def make_payload(book: Book, chapter: Chapter, scale: str, seed: int, params: dict, key: str, kernels: str = "") -> dict:
    """Everything a worker needs to execute one chapter, as plain data."""
    data = {}
    ddir = book.data_dir / chapter.id
    if ddir.is_dir():
        data = {str(p.relative_to(ddir)): p.read_bytes() for p in sorted(ddir.rglob("*")) if p.is_file()}
    return {
        "chapter": chapter.id,
        "scale": scale,
        "seed": seed,
        "params": dict(params),
        "key": key,
        "kernels": check_kernels(kernels),
        "env": dict(KERNEL_FAMILIES.get(kernels, {})),
        "notebooks": [(nb.name, nb.read_text(encoding="utf-8")) for nb in chapter.notebooks],
        "data": data,
        "library": {
            "modules": book.library_modules(chapter),
            "files": library_files(book.library_modules(chapter)),
            "pins": pinned_versions(book.root),
        },
    }


def check_library(payload: dict) -> tuple[str, str | None]:
    """This interpreter's library fingerprint for ``payload``'s modules, and why it may not run the task (or ``None``).

    The client sends the hashes of the library closure it runs (module sources) and its
    pinned package versions; a worker whose ``icml26`` or pins differ must not execute
    the task, since its records would be stored under the client's cache key.
    """
    lib = payload.get("library")
    if not lib:
        return "", None
    mine = library_files(lib["modules"])
    fp_mine, fp_client = fingerprint(mine), fingerprint(lib["files"])
    problems = library_diff(lib["files"], mine)
    pins = pinned_versions_like(lib.get("pins", {}))
    problems += [
        f"{name} {pins[name]} on the worker, {v} on the client"
        for name, v in sorted(lib.get("pins", {}).items())
        if pins.get(name) != v
    ]
    if not problems:
        return fp_mine, None
    return fp_mine, (
        f"the worker's library (fingerprint {fp_mine}) differs from the client's ({fp_client}): "
        + "; ".join(problems[:8])
        + (f"; and {len(problems) - 8} more" if len(problems) > 8 else "")
    )


def pinned_versions_like(pins: dict[str, str]) -> dict[str, str]:
    """This interpreter's installed versions of the packages named in ``pins``."""
    import importlib.metadata as md

    out = {}
    for name in pins:
        try:
            out[name] = md.version(name)
        except md.PackageNotFoundError:
            out[name] = "not installed"
    return out


def task_env(payload: dict, results: Path) -> dict[str, str]:
    """The environment variables a task's notebooks run with, beside the worker's own.

    The results folder and run key the chapter writes its claim records under, progress
    bars off, and for a second kernel family (:data:`KERNEL_FAMILIES`) its variables and a
    model cache of its own (``<model cache>/kernels-<family>``, see
    :func:`icml26.tinylm.lab.model_cache_dir`): a chapter that trains its models through the
    lab's ``load_or_train`` trains them again under that family, so that the rerun measures
    the rounding of the training as well, not only that of analysing models trained under
    the default kernels.

    Parameters
    ----------
    payload : dict
        The task (:func:`make_payload`): ``key``, and ``env`` and ``kernels`` where a second
        kernel family runs it.
    results : Path
        The folder the chapter writes its records to.

    Returns
    -------
    dict of str to str
    """
    env = {
        **payload.get("env", {}),
        "ICML26_RESULTS_DIR": str(results),
        "ICML26_RUN_KEY": payload["key"],
        "ICML26_PROGRESS": "off",
    }
    kernels = check_kernels(payload.get("kernels", ""))
    if kernels:
        from ..tinylm.lab import model_cache_dir

        env["ICML26_MODEL_CACHE"] = str(model_cache_dir() / f"kernels-{kernels}")
    return env


def run_task(payload: dict) -> dict:
    """Execute one chapter from its payload in a temporary folder; return outputs as data.

    Runs on a Dask worker (or anywhere): it needs the installed ``icml26``, papermill and
    jupytext, and nothing from the client's filesystem.

    Returns
    -------
    dict
        ``status``, ``wall_s``, ``error``, ``worker`` (host and pid), ``notebooks``
        (name → executed ``.ipynb`` JSON text) and ``records`` (path under the results folder →
        JSON text: the claim records and the benchmark records).
    """
    import platform

    import jupytext
    import nbformat
    import papermill
    from papermill.exceptions import PapermillExecutionError

    logging.getLogger("papermill").setLevel(logging.WARNING)
    out: dict[str, Any] = {
        "status": "ok",
        "error": None,
        "notebooks": {},
        "records": {},
        "worker": f"{platform.node()}:{os.getpid()}",
        "cpu": cpu_description(),
    }
    t0 = time.perf_counter()
    out["library"], refusal = check_library(payload)
    if refusal is not None:  # never execute with another library than the one the cache key names
        out.update(
            status="failed", wall_s=0.0, error={"notebook": None, "cell": None, "ename": "LibraryMismatch", "evalue": refusal}
        )
        return out
    with tempfile.TemporaryDirectory(prefix="icml26-task-") as tmp:
        root = Path(tmp)
        chdir = root / "book" / payload["chapter"]
        chdir.mkdir(parents=True)
        for rel, blob in payload.get("data", {}).items():
            dest = root / "data" / payload["chapter"] / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(blob)
        results = root / "results"
        env = task_env(payload, results)
        params = {"scale": payload["scale"], "seed": payload["seed"], **payload.get("params", {})}
        kernel_cpu: list[float] = []
        for name, text in payload["notebooks"]:
            (chdir / name).write_text(text, encoding="utf-8")
            source = jupytext.reads(text, fmt="md:myst")
            executed = chdir / (Path(name).stem + ".ipynb")
            try:
                papermill.execute_notebook(
                    source,
                    str(executed),
                    parameters=params,
                    cwd=str(chdir),
                    kernel_name="python3",
                    progress_bar=False,
                    log_output=False,
                    kernel_manager_class=kernel_manager_with_env(env, cpu=kernel_cpu),
                )
            except PapermillExecutionError as exc:
                out["status"] = "failed"
                out["error"] = {
                    "notebook": name,
                    "cell": _source_cell_number(source, exc.cell_index),
                    "ename": exc.ename,
                    "evalue": str(exc.evalue).splitlines()[0][:500] if exc.evalue else "",
                }
            except Exception as exc:  # kernel died, bad notebook, ...
                out["status"] = "failed"
                out["error"] = {"notebook": name, "cell": None, "ename": type(exc).__name__, "evalue": str(exc)[:500]}
            if executed.exists():
                out["notebooks"][executed.name] = nbformat.writes(nbformat.read(str(executed), as_version=4))
            if out["status"] == "failed":
                break
        rdir = results / payload["scale"] / payload["chapter"]
        if rdir.is_dir():
            out["records"] = {str(p.relative_to(rdir)): p.read_text() for p in sorted(rdir.rglob("*.json"))}
    out["wall_s"] = round(time.perf_counter() - t0, 2)
    out["cpu_s"] = round(sum(kernel_cpu), 2)
    return out


def store(book: Book, payload: dict, result: dict) -> SweepRecord:
    """Write a finished task's outputs under ``_build/sweep/...`` (via a temporary folder, then a move).

    A task whose worker reports another library fingerprint than the client's is stored
    as failed (``LibraryMismatch``), never as a result: its records would not be the
    client's library's.
    """
    lib = payload.get("library")
    if lib and result.get("status") == "ok" and result.get("library") != fingerprint(lib["files"]):
        result = {
            **result,
            "status": "failed",
            "notebooks": {},
            "records": {},
            "error": {
                "notebook": None,
                "cell": None,
                "ename": "LibraryMismatch",
                "evalue": f"the worker ran library {result.get('library') or '(unknown: an older worker)'}, the client has "
                f"{fingerprint(lib['files'])}; the result is not stored",
            },
        }
    dest = task_dir(
        book, payload["scale"], payload["seed"], payload["chapter"], payload.get("params"), payload.get("kernels", "")
    )
    tmp = dest.with_name(dest.name + ".tmp")
    if tmp.exists():
        import shutil

        shutil.rmtree(tmp)
    (tmp / "results").mkdir(parents=True)
    for name, text in result["notebooks"].items():
        (tmp / name).write_text(text)
    for rel, text in result["records"].items():  # claim records (main.json, ...) and bench/*.json
        dest_file = tmp / "results" / rel
        dest_file.parent.mkdir(parents=True, exist_ok=True)
        dest_file.write_text(text)
    rec = SweepRecord(
        chapter=payload["chapter"],
        scale=payload["scale"],
        seed=payload["seed"],
        params=payload["params"],
        key=payload["key"],
        status=result["status"],
        wall_s=result["wall_s"],
        error=result["error"],
        finished=time.strftime("%Y-%m-%d %H:%M:%S"),
        worker=result.get("worker", ""),
        cpu=result.get("cpu", ""),
        kernels=payload.get("kernels", ""),
        cpu_s=float(result.get("cpu_s") or 0.0),
        source=result.get("source", ""),
    )
    (tmp / "run.json").write_text(json.dumps(asdict(rec), indent=2))
    if rec.status == "failed" and dest.exists():
        # keep the last good outputs; the failure is recorded beside them
        (dest / "failed.json").write_text(json.dumps(asdict(rec), indent=2))
        import shutil

        shutil.rmtree(tmp)
        return rec
    if dest.exists():
        import shutil

        shutil.rmtree(dest)
    tmp.rename(dest)
    return rec


@dataclass
class Plan:
    """The tasks of a sweep: those to execute and those the cache already holds."""

    todo: list[dict] = field(default_factory=list)
    cached: list[SweepRecord] = field(default_factory=list)


def adopt_run(book: Book, chapter: Chapter, scale: str, seed: int, key: str) -> SweepRecord | None:
    """Store the chapter's ``run`` record as this sweep task when it is the same task; else ``None``.

    ``python -m icml26 run NN --scale S --seed K`` and a sweep task (NN, S, K) with default
    parameters and kernels execute the same notebooks with the same parameters: when the
    run's record has the task's cache key and its executed notebooks and claim records
    carry that key, they are copied into the sweep folder (``source="run"``) instead of
    executing the chapter again. Anything else (another key, a failed run, a missing or
    foreign record) returns ``None`` and the task executes.
    """
    rec = book.record(scale, chapter)
    out_dir = book.executed_dir(scale, chapter)
    rdir = book.results_dir() / scale / chapter.id
    if rec is None or rec.key != key or rec.seed != seed or rec.status not in ("ok", "cached") or rec.params:
        return None
    if (out_dir / "failed.json").exists() or not rdir.is_dir():
        return None
    notebooks = {}
    for nb in chapter.notebooks:
        f = out_dir / f"{nb.stem}.ipynb"
        if not f.exists():
            return None
        notebooks[f.name] = f.read_text(encoding="utf-8")
    records = {str(p.relative_to(rdir)): p.read_text() for p in sorted(rdir.rglob("*.json"))}
    for rel, text in records.items():
        if "/" in rel:  # bench records carry no run key
            continue
        try:
            if json.loads(text).get("run_key") != key:
                return None
        except (ValueError, AttributeError):
            return None
    payload = {"chapter": chapter.id, "scale": scale, "seed": seed, "params": {}, "key": key, "kernels": ""}
    result = {
        "status": "ok",
        "wall_s": rec.wall_s,
        "error": None,
        "notebooks": notebooks,
        "records": records,
        "worker": "run",
        "cpu": rec.cpu,
        "cpu_s": rec.cpu_s,
        "source": "run",
    }
    out = store(book, payload, result)
    out.status = "cached"
    return out


def plan(
    book: Book,
    chapters: Iterable[Chapter],
    seeds: Sequence[int],
    scale: str,
    params: dict | None = None,
    *,
    force: bool = False,
    kernels: str = "",
) -> Plan:
    """Split chapters × seeds into cached tasks and tasks to execute.

    A task the sweep folder lacks is adopted from the chapter's ``run`` record when that
    is the same task (:func:`adopt_run`; default parameters and kernels only).
    """
    check_scale(scale)
    check_kernels(kernels)
    params = dict(params or {})
    out = Plan()
    for ch in chapters:
        for seed in seeds:
            key = book.cache_key(ch, scale, check_seed(seed), params)
            prev = load_task(book, scale, seed, ch, params, kernels)
            if not force and prev is not None and prev.key == key and prev.status in ("ok", "cached"):
                prev.status = "cached"
                out.cached.append(prev)
                continue
            adopted = None if (force or params or kernels) else adopt_run(book, ch, scale, seed, key)
            if adopted is not None:
                out.cached.append(adopted)
            else:
                out.todo.append(make_payload(book, ch, scale, seed, params, key, kernels))
    return out


def expected_seconds(book: Book, payloads: Sequence[dict]) -> float | None:
    """Serial seconds the tasks took last time (sweep or run records of the same chapter and scale)."""
    total, known = 0.0, 0
    for p in payloads:
        walls = [
            r.wall_s
            for r in (
                load_task(book, p["scale"], p["seed"], p["chapter"], p.get("params"), p.get("kernels", "")),
                book.record(p["scale"], p["chapter"]),
            )
            if r is not None and r.status != "failed" and r.wall_s
        ]
        if walls:
            total += walls[0]
            known += 1
    if not known:
        return None
    return total * len(payloads) / known


def sweep(
    book: Book,
    chapters: Sequence[Chapter],
    seeds: Sequence[int],
    scale: str,
    *,
    params: dict | None = None,
    scheduler: str | None = None,
    n_workers: int | None = None,
    force: bool = False,
    progress: bool = True,
    kernels: str = "",
) -> list[SweepRecord]:
    """Run chapters × seeds on Dask; return one record per task (cached ones included).

    Parameters
    ----------
    book : Book
        The repository.
    chapters : sequence of Chapter
        Which chapters.
    seeds : sequence of int
        Which seeds.
    scale : {"ci", "full"}
        The scale of every task.
    params : dict, optional
        Further notebook parameters, passed to every task.
    scheduler : str, optional
        Address of an existing Dask scheduler (``tcp://host:port``); by default a
        ``LocalCluster`` with one single-threaded worker process per core is started.
    n_workers : int, optional
        Workers of the LocalCluster (default: ``os.cpu_count()``).
    force : bool
        Execute even where the cache holds the task.
    progress : bool
        A progress bar over tasks (with the expected time from earlier runs).
    kernels : str
        A second kernel family (:data:`KERNEL_FAMILIES`) to run under; its tasks are stored
        apart (:func:`task_dir`) and never pooled: they measure rounding spread.

    Returns
    -------
    list of SweepRecord
        In chapter, then seed order.
    """
    from dask.distributed import Client, LocalCluster, as_completed
    from tqdm import tqdm

    p = plan(book, chapters, seeds, scale, params, force=force, kernels=kernels)
    records: list[SweepRecord] = list(p.cached)
    if p.todo:
        cluster = None
        if scheduler:
            client = Client(scheduler, timeout="30s")
        else:
            workers = n_workers or os.cpu_count() or 1
            cluster = LocalCluster(
                n_workers=workers,
                threads_per_worker=1,
                processes=True,
                host="127.0.0.1",
                dashboard_address=None,
                silence_logs=logging.ERROR,
                env=dict(ONE_THREAD_ENV),
            )
            client = Client(cluster)
        expected = expected_seconds(book, p.todo)
        nworkers = max(1, len(client.scheduler_info().get("workers", {})) or 1)
        desc = f"sweep {scale}{' (kernels ' + kernels + ')' if kernels else ''}: {len(p.todo)} task(s)"
        if expected is not None:
            desc += f", about {expected / nworkers:.0f} s expected"
        futures = client.map(
            run_task,
            p.todo,
            pure=False,
            key=[f"icml26-{t['chapter']}-{t['scale']}-seed{t['seed']}-{t['key'][:12]}" for t in p.todo],
        )
        by_key = {f.key: t for f, t in zip(futures, p.todo)}
        bar = tqdm(total=len(futures), desc=desc, unit="task", disable=not progress)
        t0 = time.perf_counter()
        try:
            for fut in as_completed(futures):
                payload = by_key[fut.key]
                try:
                    result = fut.result()
                except Exception as exc:  # the worker died or the task could not run at all
                    result = {
                        "status": "failed",
                        "wall_s": 0.0,
                        "notebooks": {},
                        "records": {},
                        "worker": "",
                        "error": {"notebook": None, "cell": None, "ename": type(exc).__name__, "evalue": str(exc)[:500]},
                    }
                rec = store(book, payload, result)
                records.append(rec)
                bar.set_postfix_str(f"{rec.chapter} seed {rec.seed}: {rec.status} ({rec.wall_s:.0f}s)")
                bar.update(1)
            done = [r for r in records if r.status != "cached"]
            from .perf import write_timing

            # keyed by the work done, so that a later sweep of other chapters or seeds never
            # overwrites (or falsely pairs with) this one
            work = sweep_work_id(scale, [(r.chapter, r.seed) for r in done])
            write_timing(
                book,
                f"sweep-{scale}{'-kernels-' + kernels if kernels else ''}-{work}-w{nworkers}",
                scale=scale,
                tasks=len(done),
                workers=nworkers,
                work=work,
                chapters=sorted({r.chapter for r in done}),
                seeds=sorted({r.seed for r in done}),
                wall_s=round(time.perf_counter() - t0, 2),
                tasks_s=round(sum(r.wall_s for r in done), 2),
            )
        except KeyboardInterrupt:
            client.cancel(futures)
            raise
        finally:
            bar.close()
            client.close()
            if cluster is not None:
                cluster.close()
    order = {c.id: i for i, c in enumerate(chapters)}
    return sorted(records, key=lambda r: (order.get(r.chapter, 0), r.seed))


# ---------------------------------------------------------------------------------------
# aggregation over seeds
# ---------------------------------------------------------------------------------------
AGGREGATE_RULE = (
    "Over seeds, the evidence is pooled, not voted: every noisy check of a claim pools the paired replicates of all "
    "the sweep's seeds (each seed's replicates are disjoint, and a replicate is counted once) into one decision by "
    "the chapter's own rule, with the same margin and smallest effect (their mean when a rule relative to a measured "
    "baseline gives each seed its own), at level α/K, where K is the number of looks "
    "the sweep planned (K = 1 for a plain sweep, `--max-seeds` rounds for `--until-decided`). An exact check supports "
    "when it does in every seed, contradicts when it does in none, and is inconclusive when the seeds disagree. "
    "A composite check that holds one noisy decision per part (its stats' `parts`, or `per_baseline` in chapter "
    "04) is pooled part by part and recombined as it was made: it contradicts when a pooled part contradicts, "
    "supports when every pooled part supports, and is inconclusive otherwise. "
    "Positive controls and guards are pooled the same way, and the pooled verdict follows from the pooled checks. "
    "A random-effects estimate (DerSimonian–Laird) over the seeds' effects is kept beside each pooled effect as a "
    "sensitivity for seeds that add their own variance."
)
LOOKS_FILE = "looks.json"


def planned_looks(book: Book, scale: str) -> int:
    """K, the number of looks the stored sweep at ``scale`` planned (1 unless ``--until-decided`` wrote more)."""
    f = book.build_dir / SWEEP_DIR / scale / LOOKS_FILE
    try:
        k = int(json.loads(f.read_text()).get("max_looks", 1))
    except (OSError, ValueError, TypeError, AttributeError):
        return 1
    return max(1, k)


def _pool_records(recs: Sequence[dict], alpha: float):
    """One pooled ``Decision`` from the same check's records in several seeds (see :data:`AGGREGATE_RULE`)."""
    from . import evidence
    from .chapter import Decision

    stats = [r.get("stats") or {} for r in recs]
    parts = [_parts(st) for st in stats]
    if all(p is not None for p in parts) and len({tuple(p) for p in parts}) == 1:  # type: ignore[arg-type]
        return _pool_parts(recs, parts, alpha)  # type: ignore[arg-type]
    if all(st.get("diffs") is not None for st in stats):
        if all(st.get("smallest_effect") is not None for st in stats):
            spread = ""
            for k in ("smallest_effect", "margin"):
                vals = [float(st.get(k) or 0.0) for st in stats]
                if max(vals) - min(vals) > 0:
                    # a rule relative to a measured baseline (e.g. the paper's relative gain applied to our
                    # baseline) gives each seed its own value: the pooled decision uses their mean, and says so
                    mean = sum(vals) / len(vals)
                    stats = [{**st, k: mean} for st in stats]
                    spread += (
                        f"; the {k.replace('_', ' ')} varies by seed ({min(vals):.3g} to {max(vals):.3g}): their mean is used"
                    )
            st = evidence.pool(stats, alpha=alpha)
            outcome = st["outcome"]
            detail = (
                f"pooled effect {st['effect']:+.3g} [{st['ci_low']:+.3g}, {st['ci_high']:+.3g}] over {st['n']} "
                f"replicates of {st['seeds']} seeds; smallest effect {st['smallest_effect']:g}: {outcome}{spread}"
            )
            if outcome == "inconclusive" and st.get("n_needed"):
                detail += f", about {st['n_needed']} replicates in all would decide it"
        else:  # a noisy check without a smallest effect (non-paper kinds): it can support, never contradict
            d = evidence.pooled_diffs(stats)
            margin = float(stats[0].get("margin", 0.0) or 0.0)
            st = evidence.decide(d, smallest_effect=max(margin, 0.0), margin=margin, alpha=alpha)
            outcome = "supports" if st["outcome"] == "supports" else "inconclusive"
            st.update(outcome=outcome, smallest_effect=None, n_needed=None, seeds=len(stats))
            detail = f"pooled effect {st['effect']:+.3g} [{st['ci_low']:+.3g}, {st['ci_high']:+.3g}] over {st['n']} replicates: {outcome}"
        return Decision(outcome == "supports", recs[0].get("rule", ""), detail, st, outcome=outcome)
    outs = [r.get("outcome") or ("supports" if r.get("holds") else "contradicts") for r in recs]
    if all(o == "supports" for o in outs):
        outcome = "supports"
    elif all(o == "contradicts" for o in outs):
        outcome = "contradicts"
    else:
        outcome = "inconclusive"
    tally = ", ".join(f"{o} in {outs.count(o)}" for o in dict.fromkeys(outs))
    return Decision(
        outcome == "supports",
        recs[0].get("rule", ""),
        f"per seed: {tally} of {len(outs)}",
        {"exact": True, "seeds": len(outs), "outcome": outcome},
        outcome=outcome,
    )


PART_KEYS: tuple[str, ...] = ("parts", "per_baseline")  # where a composite check keeps its parts' decision stats


def _parts(stats: dict) -> dict[str, dict] | None:
    """The per-part decision stats of a composite check (every part with paired ``diffs``), else ``None``."""
    for key in PART_KEYS:
        parts = stats.get(key)
        if isinstance(parts, dict) and parts and all(isinstance(v, dict) and v.get("diffs") is not None for v in parts.values()):
            return parts
    return None


def _pool_parts(recs: Sequence[dict], parts: Sequence[dict[str, dict]], alpha: float):
    """A composite check pooled part by part, then recombined: any part contradicts → contradicts; all support → supports."""
    from .chapter import Decision

    pooled = {
        name: _pool_records([{"stats": p[name], "rule": recs[0].get("rule", "")} for p in parts], alpha) for name in parts[0]
    }
    outs = [d.outcome for d in pooled.values()]
    outcome = "contradicts" if "contradicts" in outs else ("supports" if all(o == "supports" for o in outs) else "inconclusive")
    needs = [int(d.stats.get("n_needed") or 0) for d in pooled.values() if d.outcome == "inconclusive"]
    n = min(int(d.stats.get("n") or 0) for d in pooled.values())
    detail = f"pooled per part ({outcome}): " + "; ".join(f"{name}: {d.detail}" for name, d in pooled.items())
    st = {
        "n": n,
        "seeds": len(recs),
        "outcome": outcome,
        "n_needed": (max(needs) or None) if outcome == "inconclusive" and needs else None,
        "parts": {name: d.stats for name, d in pooled.items()},
    }
    return Decision(outcome == "supports", recs[0].get("rule", ""), detail, st, outcome=outcome)


def _check_records(row: dict, what: str) -> dict[str, dict]:
    """The decision records of a row's core checks (``what="checks"``), guards or controls, by name."""
    if what == "checks":
        decisions = row.get("decisions") or {}
        outcomes = row.get("outcomes") or {k: ("supports" if v else "contradicts") for k, v in (row.get("checks") or {}).items()}
        return {
            k: decisions.get(k) or {"outcome": o, "holds": o == "supports", "stats": {"exact": True}} for k, o in outcomes.items()
        }
    return dict(row.get(what) or {})


def pool_claim(rows: Sequence[tuple[int, dict]], *, alpha: float | None = None, looks: int = 1) -> dict[str, Any]:
    """A claim's verdict from its checks pooled over seeds (:data:`AGGREGATE_RULE`).

    Parameters
    ----------
    rows : sequence of (seed, claim record)
        The same claim in several seeds' records.
    alpha : float, optional
        The rule's level (default: the records' own, else 0.05); it is divided by ``looks``.
    looks : int
        K, the looks the sweep planned.

    Returns
    -------
    dict
        ``verdict``, ``why``, ``checks`` / ``guards`` / ``control`` (name → pooled
        decision as a record) and ``alpha`` (the level used).
    """
    from . import evidence
    from .chapter import verdict, verdict_reason

    if not rows:
        raise ValueError("pool_claim needs at least one (seed, row) pair")
    kind = rows[0][1].get("kind", "paper")
    if alpha is None:
        alphas = [d.get("stats", {}).get("alpha") for _, r in rows for d in (r.get("decisions") or {}).values()]
        alpha = next((float(a) for a in alphas if a), 0.05)
    a = evidence.look_alpha(alpha, looks)
    pooled: dict[str, dict[str, Any]] = {}
    for what in ("checks", "guards", "control"):
        names = list(_check_records(rows[0][1], what))
        group = {}
        for name in names:
            recs = [_check_records(r, what).get(name) for _, r in rows]
            if any(x is None for x in recs):
                raise ValueError(
                    f"claim {rows[0][1].get('id')!r}: {what[:-1] if what != 'control' else what} {name!r} is missing in some seeds"
                )
            group[name] = _pool_records(recs, a)
        pooled[what] = group
    first = rows[0][1]
    untestable = str(first.get("untestable") or "") if kind == "paper" else ""
    word = verdict(pooled["checks"], kind, guards=pooled["guards"], control=pooled["control"], untestable=untestable)
    why = (
        verdict_reason(
            pooled["checks"],
            guards=pooled["guards"],
            control=pooled["control"],
            untestable=untestable,
            to_test=str(first.get("to_test") or ""),
        )
        if kind == "paper"
        else ""
    )
    as_rec = {
        w: {k: {"outcome": d.outcome, "detail": d.detail, "stats": d.stats} for k, d in g.items()} for w, g in pooled.items()
    }
    return {"verdict": word, "why": why, "alpha": a, **as_rec}


def parse_duration(text: str) -> float:
    """Seconds in a duration such as ``90s``, ``45m``, ``2h`` or ``1h30m`` (a bare number is seconds).

    >>> parse_duration("1h30m")
    5400.0
    """
    t = str(text).strip().lower()
    if re.fullmatch(r"\d+(\.\d+)?", t):
        secs = float(t)
    else:
        parts = re.findall(r"(\d+(?:\.\d+)?)([hms])", t)
        if not parts or "".join(a + b for a, b in parts) != t:
            raise ValueError(f"--budget {text!r} is not a duration; use e.g. 90s, 45m, 2h or 1h30m")
        secs = sum(float(a) * {"h": 3600, "m": 60, "s": 1}[u] for a, u in parts)
    if not secs > 0:
        raise ValueError(f"--budget {text!r} must be longer than zero")
    return secs


def undecided_claims(book: Book, scale: str, chapters: Sequence[Chapter], *, looks: int) -> dict[str, list[str]]:
    """Chapter → ids of its paper claims whose evidence pooled over the stored seeds is still *undecided*.

    A claim that is *untestable here* (a failed control, or untestable by construction)
    is not open: more seeds of the same setup would not let it test the claim.

    A chapter with no stored, current sweep task yet counts every paper claim as undecided
    (listed as ``"*"``).
    """
    claims = load_sweep_claims(book, scale)
    out: dict[str, list[str]] = {}
    for ch in chapters:
        by_id = claims.get(ch.id)
        if not by_id:
            out[ch.id] = ["*"]
            continue
        open_ = []
        for cid, rows in by_id.items():
            if rows[0][1].get("kind") != "paper":
                continue
            try:
                word = pool_claim(rows, looks=looks)["verdict"]
            except (ValueError, KeyError, TypeError) as exc:  # records that cannot be pooled: undecided, never a crash
                import warnings

                warnings.warn(f"{ch.id} {cid}: cannot pool its records ({exc}); counted as undecided", stacklevel=2)
                word = "undecided"
            if word == "undecided":
                open_.append(cid)
        if open_:
            out[ch.id] = open_
    return out


def sweep_until_decided(
    book: Book,
    chapters: Sequence[Chapter],
    scale: str,
    *,
    max_seeds: int = 5,
    first_seed: int = 0,
    per_round: int | None = None,
    budget_s: float | None = None,
    say=print,
    **kw: Any,
) -> dict[str, Any]:
    """Add seeds in rounds until every paper claim of ``chapters`` is decided, or the seeds or budget run out.

    The rule is fixed before the first round and stored (``looks.json``): at most
    ``max_seeds`` seeds in rounds of ``per_round`` (default: the LocalCluster's workers, one per
    core unless ``n_workers`` says otherwise; 1 with an external ``scheduler``), so
    K = ⌈max_seeds / per_round⌉ looks; after each round the pooled decisions
    (:func:`pool_claim`) are taken at level α/K (:func:`~icml26.book.evidence.look_alpha`),
    and a chapter whose paper claims are all decided gets no more seeds. A round is not
    started when the time spent plus the last round's time would exceed ``budget_s``.

    Returns
    -------
    dict
        ``rounds`` (seeds run per round), ``undecided`` (chapter → claim ids, at the end),
        ``looks`` (K), ``wall_s``, ``records`` (every SweepRecord).
    """
    import math

    if isinstance(max_seeds, bool) or not isinstance(max_seeds, int) or max_seeds < 1:
        raise ValueError(f"--max-seeds {max_seeds!r} must be a positive integer")
    per = per_round or kw.get("n_workers") or (1 if kw.get("scheduler") else os.cpu_count() or 1)
    if per < 1:
        raise ValueError(f"per_round={per!r} must be at least 1")
    looks = math.ceil(max_seeds / per)
    base = book.build_dir / SWEEP_DIR / scale
    base.mkdir(parents=True, exist_ok=True)
    (base / LOOKS_FILE).write_text(
        json.dumps(
            {
                "max_looks": looks,
                "max_seeds": max_seeds,
                "per_round": per,
                "first_seed": first_seed,
                "rule": "Bonferroni alpha/K",
            },
            indent=2,
        )
    )
    t0 = time.perf_counter()
    rounds: list[dict[str, Any]] = []
    records: list[SweepRecord] = []
    open_chapters = list(chapters)
    last_round_s = 0.0
    for r in range(looks):
        seeds = [first_seed + r * per + k for k in range(per) if r * per + k < max_seeds]
        spent = time.perf_counter() - t0
        if budget_s is not None and r > 0 and spent + last_round_s > budget_s:
            say(f"until-decided: budget reached ({spent:.0f} s of {budget_s:.0f} s spent); stopping before round {r + 1}")
            break
        say(f"until-decided: round {r + 1}/{looks}: seeds {seeds} for {', '.join(c.id for c in open_chapters)}")
        t_round = time.perf_counter()
        records += sweep(book, open_chapters, seeds, scale, **kw)
        last_round_s = time.perf_counter() - t_round
        undecided = undecided_claims(book, scale, open_chapters, looks=looks)
        open_chapters = [c for c in open_chapters if c.id in undecided]
        rounds.append(
            {"round": r + 1, "seeds": seeds, "wall_s": round(last_round_s, 1), "undecided": {k: v for k, v in undecided.items()}}
        )
        left = "" if budget_s is None else f"; {max(0.0, budget_s - (time.perf_counter() - t0)):.0f} s of the budget left"
        say(
            f"until-decided: after round {r + 1}: {sum(len(v) for v in undecided.values())} paper claim(s) undecided"
            + (": " + "; ".join(f"{k} {', '.join(v)}" for k, v in undecided.items()) if undecided else "")
            + left
        )
        if not open_chapters:
            break
    final = undecided_claims(book, scale, chapters, looks=looks)
    summary = {"looks": looks, "rounds": rounds, "undecided": final, "wall_s": round(time.perf_counter() - t0, 1)}
    (base / "until-decided.json").write_text(json.dumps(summary, indent=2))
    return {**summary, "records": records}


def _stored_tasks(book: Book, scale: str, kernels: str = "") -> Iterable[tuple[Path, SweepRecord]]:
    base = sweep_base(book, scale, kernels)
    if not base.is_dir():
        return
    for seed_dir in sorted(base.glob("seed-*")):
        for ch_dir in sorted(p for p in seed_dir.iterdir() if p.is_dir() and not p.name.endswith(".tmp")):
            f = ch_dir / "run.json"
            try:
                rec = SweepRecord(**json.loads(f.read_text())) if f.exists() else None
            except (ValueError, TypeError) as exc:  # a damaged record counts as none; it never crashes a build
                import warnings

                warnings.warn(f"ignoring the unreadable sweep record {f}: {type(exc).__name__}: {exc}", stacklevel=2)
                rec = None
            if rec is not None:
                yield ch_dir, rec


def _is_current(book: Book, chapters: dict[str, Chapter], rec: SweepRecord) -> bool:
    ch = chapters.get(rec.chapter)
    return ch is not None and rec.key == book.cache_key(ch, rec.scale, rec.seed, rec.params)


def stale_sweep_tasks(book: Book, scale: str) -> list[SweepRecord]:
    """Stored, successful sweep tasks whose chapter (or its library, data or pins) changed since they ran.

    Their claims are not aggregated; ``python -m icml26 sweep`` re-runs them.
    """
    chapters = {c.id: c for c in book.chapters()}
    return [rec for _, rec in _stored_tasks(book, scale) if rec.status != "failed" and not _is_current(book, chapters, rec)]


def load_sweep_claims(
    book: Book, scale: str, params: dict | None = None, kernels: str = ""
) -> dict[str, dict[str, list[tuple[int, dict]]]]:
    """Claim rows of every stored, successful and current sweep task: chapter → claim id → [(seed, row)].

    Only tasks run with ``params`` (default: none, the chapters' own defaults) are
    loaded, so that tasks with other parameters are never pooled with them.

    A task is current when its run key equals the key its chapter has now (same notebook,
    library, data and pins); rows of stale tasks (:func:`stale_sweep_tasks`), of chapters
    no longer in the book, and of records that do not carry their task's run key are left out.
    ``kernels`` reads the tasks of a second kernel family instead (never pooled with these).
    """
    chapters = {c.id: c for c in book.chapters()}
    out: dict[str, dict[str, list[tuple[int, dict]]]] = {}
    for ch_dir, rec in _stored_tasks(book, scale, kernels):
        if rec.status == "failed" or not _is_current(book, chapters, rec) or (rec.params or {}) != (params or {}):
            continue
        for f in sorted((ch_dir / "results").glob("*.json")):
            try:
                payload = json.loads(f.read_text())
            except ValueError:
                import warnings

                warnings.warn(f"ignoring the unreadable claim record {f}", stacklevel=2)
                continue
            if not isinstance(payload, dict):
                continue
            if payload.get("run_key") != rec.key:
                continue
            for row in payload.get("claims", []):
                row = {**row, "task_cpu": rec.cpu}  # where the task ran: a pooled row names mixed CPUs
                out.setdefault(rec.chapter, {}).setdefault(row["id"], []).append((rec.seed, row))
    return out


def aggregate(rows: Sequence[tuple[int, dict]], *, looks: int = 1) -> dict[str, Any]:
    """Summary of one claim over seeds: the pooled verdict, each seed's verdict, and our figure's spread.

    Returns
    -------
    dict
        ``n`` (seeds), ``seeds``, ``counts`` (verdict → seeds, for reference only),
        ``overall`` (the pooled verdict of :func:`pool_claim`, never a vote), ``why``,
        ``pooled`` (the :func:`pool_claim` result), ``cpus`` (the CPU each seed's task ran on →
        its seeds; ``""`` for a task whose CPU was not recorded: pooling across CPUs is allowed,
        more evidence, and :func:`describe` names it), and ``mean``/``sd``/``unit`` of
        ``ours_value.mean`` over seeds when every row carries one.
    """
    import numpy as np

    if not rows:
        raise ValueError("aggregate needs at least one (seed, row) pair")
    kind = rows[0][1].get("kind", "paper")
    counts: dict[str, int] = {}
    cpus: dict[str, list[int]] = {}
    for seed, r in rows:
        word = current_word(r)
        counts[word] = counts.get(word, 0) + 1
        cpus.setdefault(str(r.get("task_cpu", "")), []).append(seed)
    n = len(rows)
    pooled = pool_claim(rows, looks=looks)
    out: dict[str, Any] = {
        "n": n,
        "seeds": [s for s, _ in rows],
        "counts": counts,
        "overall": pooled["verdict"],
        "why": pooled["why"],
        "pooled": pooled,
        "kind": kind,
        "cpus": cpus,
    }
    values = [r.get("ours_value") for _, r in rows]
    if all(isinstance(v, dict) and v.get("mean") is not None for v in values):
        means = np.array([v["mean"] for v in values], dtype=float)
        out.update(mean=float(means.mean()), sd=float(means.std(ddof=1)) if n > 1 else None, unit=values[0].get("unit", ""))
    return out


def describe(agg: dict[str, Any]) -> str:
    """One line for the scorecard: the pooled evidence of each core check, then each seed's own verdict."""
    n = agg["n"]
    parts = []
    for name, d in (agg.get("pooled") or {}).get("checks", {}).items():
        parts.append(f"{name}: {d['detail']}")
    if "mean" in agg:
        sd = f" ± {agg['sd']:.3g}" if agg.get("sd") is not None else ""
        parts.append(f"figure {agg['mean']:.3g}{sd}{agg.get('unit', '')} over {n} seed{'s' * (n != 1)}")
    parts.append(
        "per seed (not a vote): " + ", ".join(f"{v} in {c}/{n}" for v, c in sorted(agg["counts"].items(), key=lambda kv: -kv[1]))
    )
    cpus = agg.get("cpus") or {}
    if len(cpus) > 1:
        parts.append(
            "pooled over runs on different CPUs (their kernels round differently): "
            + "; ".join(
                f"{cpu or 'CPU not recorded'} (seed{'s' * (len(s) != 1)} {', '.join(map(str, s))})"
                for cpu, s in sorted(cpus.items())
            )
        )
    return "; ".join(parts)
