"""Build the rendered book from executed notebooks, with the scorecard and the status page.

The build stages a clean source tree under ``_build/site/``: the book's config and
table of contents, the hand-written pages of ``book/``, the *executed* notebooks of
every chapter (from ``_build/executed/<scale>/``) and generated pages — the scorecard
gathered from the chapters' claim records (:mod:`icml26.book.scorecard`), the status
table and the intro's note on what this build shows. Jupyter Book 1.x then renders it with execution off and ``-W``
(warnings are errors).

By default the build renders what has run: a chapter that has not run (or whose only
run failed) gets a page naming the command that runs it, a chapter whose results are
stale says so at the top, and problems in the executed outputs (error or stderr output,
progress bars, NaN in tables) are reported as notes and shown on the chapter's page.
``strict=True`` (``build --strict``, for CI) turns every one of these into an error.
"""

from __future__ import annotations

import hashlib
import importlib.metadata as md
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from .chapter import SCALES
from .identity import cpu_description
from .runner import Book, Chapter
from .scorecard import (  # noqa: F401  (the scorecard lives in its own module; its names stay importable from here)
    CLAIM_COLUMNS,
    COMPACT_HEADER,
    DETAIL_PAGE,
    KIND_TITLE,
    PAPER_WORDS,
    VERDICT_MARK,
    BuildError,
    _Card,
    _cell,
    _cost_text,
    _decided,
    _doc_link,
    _evidence_cells,
    _noisy_checks,
    _note,
    _one_effect,
    _runtime,
    _scorecard,
    _seed_aggregates,
    _short,
    cached_figure,
    chapter_title,
    claim_label,
    claims_data,
    claims_detail_markdown,
    current_word,
    decide_cost,
    history_lines,
    load_claims,
    load_records,
    remit,
    scorecard_markdown,
    seed_aggregates,
    short_title,
    verdict_box,
    write_claims_data,
)


def _sweep_cpus(book: Book) -> dict[str, list[str]]:
    """CPU → the stored, successful sweep tasks it ran (``"01 seed 3 at `full`"``), over every scale."""
    from .sweep import _stored_tasks

    out: dict[str, list[str]] = {}
    for s in SCALES:
        for _, rec in _stored_tasks(book, s):
            if rec.status != "failed":
                out.setdefault(rec.cpu, []).append(f"{rec.chapter[:2]} seed {rec.seed} at `{s}`")
    return out


def rounding_markdown(book: Book) -> list[str]:
    """The status page's *Rounding spread* section: how far each chapter's decisions move under a second kernel family."""
    from .fragile import FRAGILE_RULE, kernel_comparisons, seed_text
    from .sweep import KERNEL_FAMILIES

    lines = ["## Rounding spread", ""]
    family = ", ".join(f"`{k}={v}`" for k, v in next(iter(KERNEL_FAMILIES.values())).items())
    by_scale = {s: kernel_comparisons(book, s) for s in SCALES}
    if not any(by_scale.values()):
        return lines + [
            "No chapter has been rerun under a second kernel family "
            "(`python -m icml26 sweep --seeds 0 --scale full --kernels avx2`, after the seed-0 sweep task), "
            "so no verdict is marked *fragile* and none is known not to be.",
            "",
        ]
    lines += [
        f"Seed 0 of each chapter rerun under a second kernel family ({family}) on the same machine: same code, data, "
        "seed and settings, other arithmetic. The spread of a decision is how far its interval ends moved. " + FRAGILE_RULE,
        "",
    ]
    for scale, comps in by_scale.items():
        if not comps:
            continue
        lines += [
            f"| Chapter (`{scale}`) | Decisions compared | Bit-identical | Largest shift of an interval end "
            "| Largest shift ÷ interval width (decision) | Verdicts that differ |",
            "|---|---|---|---|---|---|",
        ]
        for cid, c in sorted(comps.items()):
            flips = "; ".join(f"`{k}`: {a} → {b}" for k, (a, b) in sorted(c["flips"].items())) or "none"
            rel = c["max_relative"]
            rel_text = (
                "0"
                if rel == 0
                else (f"{rel:.2g} ({_cell(c['worst'])})" if rel != float("inf") else "∞ (a zero-width interval moved)")
            )
            lines.append(f"| {cid} | {c['decisions']} | {c['identical']} | {c['max_shift']:.3g} | {rel_text} | {_cell(flips)} |")
        pooled = [
            f"{cid} (seeds {seed_text(c['pooled_seeds'])}): largest shift of a pooled interval end "
            f"{max((v for sh in c['pooled_shifts'].values() for v in sh.values()), default=0.0):.3g}, "
            f"against seed 0's {c['max_shift']:.3g}"
            for cid, c in sorted(comps.items())
            if c.get("pooled_shifts")
        ]
        if pooled:
            lines += [
                "",
                f"Rerun over every pooled seed at `{scale}` (the pooled verdicts' spread is measured, not "
                "borrowed from seed 0): " + "; ".join(pooled) + ".",
            ]
        missing = sorted(ch.id for ch in book.chapters() if ch.id not in comps)
        if missing:
            lines += ["", f"Not rerun at `{scale}` (fragility not measured): " + ", ".join(missing) + "."]
        lines.append("")
    return lines


def status_markdown(book: Book) -> str:
    """The book's version and commit, per-chapter wall time at each scale, package versions and the machine."""
    from .identity import describe
    from .perf import load_baselines

    baselines = load_baselines(book, "full")
    head = [h for s in SCALES for h in (f"`{s}` wall", f"`{s}` CPU")]
    head += [f"`full` CPU in {b['label']}" for b in baselines] + (["`full` CPU now ÷ then"] if baselines else [])
    lines = [
        f"These pages were built from **{describe(book.root)}**.",
        "",
        "## Chapter runs",
        "",
        "| Chapter | " + " | ".join(head) + " | Last good run (full) |",
        "|---|" + "---|" * (len(head) + 1),
    ]
    stale_notes = []
    made_on: dict[str, list[str]] = {}  # CPU -> the runs shown that it made
    for ch in book.chapters():
        cells = []
        cpu_full = None
        for s in SCALES:
            word, why = book.state(s, ch)
            rec = book.record(s, ch)
            if word in ("ok", "stale") and rec is not None:
                made_on.setdefault(rec.cpu, []).append(f"{ch.id[:2]} at `{s}`")
                cells.append(f"{rec.wall_s:.1f} s" + (" **(stale)**" if word == "stale" else ""))
                cells.append(f"{rec.cpu_s:.1f} s" if rec.cpu_s > 0 else "—")
                if s == "full" and rec.cpu_s > 0:
                    cpu_full = rec.cpu_s
            else:
                cells += [word, "—"]
            if why:
                stale_notes.append(f"- `{ch.id}` at `{s}` scale, {word}: {_cell(why)}")
        then = None
        for b in baselines:
            old = (b["chapters"].get(ch.id) or {}).get("cpu_s") or 0
            cells.append(f"{old:.1f} s" if old > 0 else "—")
            then = old if old > 0 else then
        if baselines:
            cells.append(f"{cpu_full / then:.2f}" if cpu_full and then else "—")
        rec = book.record("full", ch)
        lines.append(f"| {ch.id} | " + " | ".join(cells) + f" | {rec.finished if rec else '—'} |")
    lines += [
        "",
        "Wall time is the chapter's execution through papermill, kernel start included; CPU is the "
        "CPU time of the chapter's kernel (user + system), which grows far less than wall time when other "
        "work shares the machine (— where a run predates its recording).",
    ]
    here = cpu_description()
    shown = sum(len(r) for r in made_on.values())

    def which(runs: list[str]) -> str:
        return "every run shown" if len(runs) == shown else ", ".join(runs)

    others = [f"{_cell(cpu)} ({which(runs)})" for cpu, runs in sorted(made_on.items()) if cpu and cpu != here]
    if others:
        lines.append(f"Runs made on another CPU than this build's ({_cell(here)}): " + "; ".join(others) + ".")
    if made_on.get(""):
        lines.append(f"Runs whose CPU was not recorded (made before run records named it): {which(made_on[''])}.")
    swept = _sweep_cpus(book)
    foreign = {cpu: tasks for cpu, tasks in swept.items() if cpu != here}
    if foreign:
        lines.append(
            "Stored sweep tasks made on another CPU than this build's (they are pooled with the others, and each pooled "
            "row names its CPUs): "
            + "; ".join(
                f"{_cell(cpu) if cpu else 'CPU not recorded'} ({len(t)} task{'s' * (len(t) != 1)}: {', '.join(t[:6])}"
                + (", …" if len(t) > 6 else "")
                + ")"
                for cpu, t in sorted(foreign.items())
            )
            + "."
        )
    if others or made_on.get("") or foreign:
        lines.append(
            "The same seed gives the same figures on the same kind of CPU; kernels for other vector "
            "instructions round differently, which moves the figures of chapters that train models."
        )
    for b in baselines:
        cpu = b.get("cpu")
        where = (
            f"on {_cell(cpu)}"
            + ("" if cpu == here else f", not this build's CPU ({_cell(here)}), so the ratio compares machines as well as code")
            if cpu
            else f"on a CPU that was not recorded (this build's: {_cell(here)}), so the ratio may compare machines as well as code"
        )
        lines.append(
            f"The `full` CPU in {b['label']} comes from runs of {_cell(b.get('built_from', '?'))}, saved at {b.get('saved', '?')} "
            f"(`data/timings/full-{b['label']}.json`, which lists when each run finished; written by `python -m icml26 times --save {b['label']}`), "
            f"{where}."
        )
    lines.append("")
    if stale_notes:
        lines += [
            "*Stale* results come from the last run that succeeded; they are kept, and shown, until a new run "
            "of the chapter succeeds:",
            "",
            *stale_notes,
            "",
        ]
    lines += rounding_markdown(book)
    lines += ["## Packages", "", "| Package | Version |", "|---|---|"]
    req = book.root / "requirements.txt"
    names = []
    if req.exists():
        for line in req.read_text().splitlines():
            line = line.split("#")[0].strip()
            if "==" in line:
                names.append(line.split("==")[0].strip())
    for name in names:
        try:
            v = md.version(name)
        except md.PackageNotFoundError:
            v = "not installed"
        lines.append(f"| {name} | {v} |")
    lines += ["", "## Machine", "", "| | |", "|---|---|"]
    mem = ""
    try:
        mem = f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.1f} GiB"
    except (ValueError, OSError, AttributeError):  # pragma: no cover
        mem = "unknown"
    for k, v in [
        ("Python", platform.python_version()),
        ("Platform", platform.platform()),
        ("Processor", cpu_description()),
        ("CPU cores", str(os.cpu_count())),
        ("Memory", mem),
        ("Built", time.strftime("%Y-%m-%d %H:%M:%S %Z")),
    ]:
        lines.append(f"| {k} | {_cell(v)} |")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------
# executed notebooks: checks and clean-up before rendering
# ---------------------------------------------------------------------------------------
_PROGRESS = re.compile(r"(\d+%\|)|(\r)|(it/s\])|(s/it\])")
_NAN_HTML = re.compile(r"<td[^>]*>\s*(NaN|nan|None|&lt;NA&gt;|NaT|inf|-inf)\s*</td>")
_NAN_MD = re.compile(r"\|\s*(NaN|nan|None|<NA>|NaT)\s*(?=\|)")
_NAN_TEXT = re.compile(r"(?<![\w.])NaN(?![\w])")


def clean_executed(nb) -> list[str]:
    """Problems in an executed notebook's outputs: the rendered book must show none of them.

    They are error outputs, stderr text (warnings, tracebacks, progress bars: loops report
    with ``chapter.progress``, which prints one line under papermill) and NaN in tables
    (a table says "—" where a value is undefined). Nothing is removed.
    """
    problems = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        nans = 0
        for out in cell.get("outputs", []):
            kind = out.get("output_type")
            if kind == "error":
                problems.append(f"cell {i + 1}: error output {out.get('ename')}: {out.get('evalue')}")
            elif kind == "stream" and out.get("name") == "stderr":
                text = out.get("text", "")
                if not text.strip():
                    continue
                if _PROGRESS.search(text) and "Warning" not in text and "Traceback" not in text:
                    problems.append(f"cell {i + 1}: progress-bar output (loop with chapter.progress): {text.strip()[-80:]!r}")
                else:
                    problems.append(f"cell {i + 1}: stderr output: {text.strip()[:200]}")
            elif kind == "stream":
                nans += len(_NAN_TEXT.findall(out.get("text", "")))
            elif kind in ("execute_result", "display_data"):
                data = out.get("data", {})
                if "text/html" in data:
                    nans += len(_NAN_HTML.findall(_joined(data["text/html"])))
                elif "text/markdown" in data:
                    nans += len(_NAN_MD.findall(_joined(data["text/markdown"])))
                elif "text/plain" in data:
                    nans += len(_NAN_TEXT.findall(_joined(data["text/plain"])))
        if nans:
            problems.append(f'cell {i + 1}: {nans} NaN/None cell(s) in a table (show "—" and say once what it means)')
    return problems


def _joined(x) -> str:
    return "".join(x) if isinstance(x, list) else str(x)


def fold_parameters(nb) -> None:
    """Replace papermill's injected-parameters cell by a line saying which values this run used."""
    injected = [i for i, c in enumerate(nb.cells) if "injected-parameters" in c.get("metadata", {}).get("tags", [])]
    if not injected:
        return
    params = dict(nb.metadata.get("papermill", {}).get("parameters", {}))
    for i in reversed(injected):
        del nb.cells[i]
    values = ", ".join(f"`{k} = {v!r}`" for k, v in params.items()) or "the defaults above"
    nb.cells.insert(
        injected[0], _markdown_cell(f"*This run used {values}: the runner set them, overriding the defaults in the cell above.*")
    )


class _Node(dict):
    """A notebook's JSON as nested dicts with attribute access (what ``nbformat.NotebookNode`` offers)."""

    def __getattr__(self, name: str):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name: str, value) -> None:
        self[name] = value


def _node(obj):
    if isinstance(obj, dict):
        return _Node({k: _node(v) for k, v in obj.items()})
    if isinstance(obj, list):
        return [_node(v) for v in obj]
    return obj


_SPLIT_MIMES = {"application/javascript", "image/svg+xml"}


def _multiline(data: dict, join: bool) -> None:
    for key, value in list(data.items()):
        if key.startswith("text/") or key in _SPLIT_MIMES:
            if join and isinstance(value, list):
                data[key] = "".join(value)
            elif not join and isinstance(value, str):
                data[key] = value.splitlines(True)


def _text_fields(nb, join: bool) -> None:
    """Join (on reading) or split (on writing) the multi-line strings, as nbformat v4 does on disk."""
    for cell in nb.cells:
        src = cell.get("source")
        if join and isinstance(src, list):
            cell["source"] = "".join(src)
        elif not join and isinstance(src, str):
            cell["source"] = src.splitlines(True)
        for attachment in cell.get("attachments", {}).values():
            _multiline(attachment, join)
        for out in cell.get("outputs", []) if cell.get("cell_type") == "code" else []:
            if out.get("output_type") in ("execute_result", "display_data"):
                _multiline(out.get("data", {}), join)
            elif isinstance(out.get("text"), list if join else str):
                out["text"] = "".join(out["text"]) if join else out["text"].splitlines(True)


def read_notebook(text: str):
    """A v4 notebook from its JSON, multi-line strings joined (as ``nbformat.v4.reads``, without schema validation).

    Importing nbformat's validator costs seconds of JSON-schema start-up; the executed
    notebooks come from papermill, and Sphinx reads (and validates) them again.
    """
    nb = _node(json.loads(text))
    if nb.get("nbformat") != 4:
        raise ValueError(f"expected a version-4 notebook, got nbformat={nb.get('nbformat')!r}")
    _text_fields(nb, join=True)
    return nb


def write_notebook(nb) -> str:
    """The JSON text nbformat writes for ``nb`` (multi-line strings split, sorted keys, indent 1, final newline)."""
    import copy

    out = copy.deepcopy(nb)
    for key in ("orig_nbformat", "orig_nbformat_minor", "signature"):
        out.metadata.pop(key, None)
    for cell in out.cells:
        cell.get("metadata", {}).pop("trusted", None)
    _text_fields(out, join=False)
    return json.dumps(out, sort_keys=True, indent=1, separators=(",", ": "), ensure_ascii=False) + "\n"


def _markdown_cell(text: str):
    """A markdown cell whose id is derived from its text, so staging the same page twice gives the same file."""
    return _Node(
        cell_type="markdown", id="icml26-" + hashlib.sha256(text.encode()).hexdigest()[:12], metadata=_Node(), source=text
    )


def _banner(nb, admonition: str, text: str) -> None:
    """Put an admonition right under the notebook's title (inside the title's cell, if it holds more)."""
    _under_title(nb, f"````{{{admonition}}}\n{text}\n````")


def _under_title(nb, block: str) -> None:
    """Put a MyST block right under the notebook's title."""
    first = nb.cells[0] if nb.cells else None
    if first is not None and first.cell_type == "markdown" and first.source.lstrip().startswith("# "):
        title, _, rest = first.source.lstrip().partition("\n")
        first.source = f"{title}\n\n{block}\n\n{rest.lstrip()}".rstrip() + "\n"
    else:
        nb.cells.insert(0, _markdown_cell(block))


def _after_claim(nb, block: str) -> None:
    """Put a MyST block at the end of the notebook's *The claim* section (before ``## Parameters``).

    Without such a section the block goes right under the title.
    """
    for cell in nb.cells:
        if cell.cell_type == "markdown" and re.search(r"^## Parameters\s*$", cell.source, re.M):
            m = re.search(r"^## Parameters\s*$", cell.source, re.M)
            head, rest = cell.source[: m.start()], cell.source[m.start() :]
            cell.source = (head.rstrip() + "\n\n" if head.strip() else "") + block + "\n\n" + rest
            return
    _under_title(nb, block)


def _under_heading(nb, heading: str, block: str) -> bool:
    """Put a MyST block right under the first ``## heading`` of the notebook; whether there was one."""
    pattern = re.compile(rf"^## {re.escape(heading)}\s*$", re.M)
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            m = pattern.search(cell.source)
            if m:
                rest = cell.source[m.end() :].lstrip("\n")
                cell.source = cell.source[: m.end()] + "\n\n" + block + ("\n\n" + rest if rest else "\n")
                return True
    return False


def _label_heading(nb, heading: str, label: str) -> bool:
    """Put the MyST label ``(label)=`` on the first ``## heading`` of the notebook; whether there was one."""
    pattern = re.compile(rf"^## {re.escape(heading)}\s*$", re.M)
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            m = pattern.search(cell.source)
            if m:
                cell.source = cell.source[: m.start()] + f"({label})=\n" + cell.source[m.start() :]
                return True
    return False


def notebook_parameters(nb) -> dict:
    """The literal assignments of a notebook's ``parameters`` cell (name → value), in order."""
    from .runner import literal_parameters

    for cell in nb.cells:
        if cell.cell_type == "code" and "parameters" in cell.get("metadata", {}).get("tags", []):
            return literal_parameters(cell.source)
    return {}


def rerun_box(ch: Chapter, nb_path: Path, params: dict, scale: str) -> str:
    """A collapsed admonition: how to rerun this chapter with ``run``, with papermill, and in JupyterLab."""
    import shlex

    rel = nb_path.relative_to(ch.path.parent.parent).as_posix() if ch.path.parent.parent in nb_path.parents else nb_path.name
    stem = nb_path.stem
    shown = {**params, "scale": scale, "seed": 0}
    p_args = " ".join(f"-p {k} {shlex.quote(str(v))}" for k, v in shown.items())
    others = (
        ", ".join(f"`{k} = {v!r}`" for k, v in params.items() if k not in ("scale", "seed")) or "none besides `scale` and `seed`"
    )
    return "\n".join(
        [
            "````{admonition} Rerun this chapter",
            ":class: dropdown tip",
            "",
            f"- With the book's runner (cached; records go to the scorecard): `python -m icml26 run {ch.id[:2]} --scale {scale} --seed 0`",
            f"- With papermill, on a scratch copy: `jupytext --to ipynb {rel} -o _build/manual/{stem}.ipynb`, then "
            f"`papermill --cwd {Path(rel).parent.as_posix()} _build/manual/{stem}.ipynb _build/manual/{stem}-{scale}.ipynb {p_args}`",
            f"- In JupyterLab: open `{rel}` (it opens as a notebook; `jupyter lab --allow-root` when run as root).",
            f"- The chapter's parameters: {others}.",
            "````",
        ]
    )


def _placeholder(book: Book, ch: Chapter, scale: str, word: str, why: str, stem: str) -> str:
    """The page shown for a chapter notebook that has nothing to render at this scale."""
    number = f"{ch.number:02d}"
    reason = (
        f"This chapter has not run at `{scale}` scale yet, so this build has nothing to show for it."
        if word == "not run"
        else f"The last run of this chapter at `{scale}` scale failed, and no earlier run succeeded: {why}."
    )
    title = chapter_title(ch) if stem == ch.notebooks[0].stem else f"{chapter_title(ch)}: {stem}"
    return (
        f"# {title}\n\n````{{note}}\n{reason} Run it, then build again:\n\n"
        f"```bash\npython -m icml26 run {number} --scale {scale}\npython -m icml26 build --scale {scale}\n```\n````\n"
    )


@dataclass
class Staged:
    """A staged site: its folder, what each chapter shows, and the problems a lenient build let through."""

    path: Path
    shown: dict[str, str] = field(default_factory=dict)  # chapter id -> "ok" | "stale" | "not run" | "failed"
    notes: list[str] = field(default_factory=list)
    changed: int = 0  # files of the site written or removed by this staging (0: identical to the last one)


@dataclass
class BuildResult:
    """The rendered book's index page and the problems a lenient build reported."""

    index: Path
    notes: list[str] = field(default_factory=list)


def build_note(book: Book, scale: str, shown: dict[str, str]) -> str:
    """The intro's sentence on what this build shows: scale, seed(s), dates, chapters run."""
    recs = [book.record(scale, cid) for cid, word in shown.items() if word in ("ok", "stale")]
    recs = [r for r in recs if r is not None]
    total = len(shown)
    if not recs:
        return (
            f"*This build shows no executed chapter: none has run at `{scale}` scale yet. Each chapter's page names "
            "the command that runs it.*\n"
        )
    seeds = sorted({r.seed for r in recs})
    seed = f"seed {seeds[0]}" if len(seeds) == 1 else "seeds " + ", ".join(map(str, seeds))
    days = sorted(r.finished for r in recs if r.finished)
    when = ""
    if days:
        first, last = days[0], days[-1]
        when = f" on {first[:10]}" if first[:10] == last[:10] else f" between {first[:10]} and {last[:10]}"
    cpus = sorted({r.cpus for r in recs if r.cpus})
    machine = (
        f", on a {cpus[0]}-core CPU"
        if len(cpus) == 1
        else (f", on machines with {', '.join(map(str, cpus))} CPU cores" if cpus else "")
    )
    text = f"*The pages show the notebooks as executed at `{scale}` scale with {seed}{when}{machine}"
    text += f" ({len(recs)} of {total} chapters; run times on the {{doc}}`status page <status>`)."
    missing = [cid for cid, w in shown.items() if w in ("not run", "failed")]
    stale = [cid for cid, w in shown.items() if w == "stale"]
    if missing:
        text += f" Not shown, because they have not run successfully at this scale: {', '.join(missing)}; their pages name the command that runs them."
    if stale:
        text += f" Stale (kept from an earlier run; a later run failed or the sources changed): {', '.join(stale)}."
    if scale != "full":
        text += " This is the quick `ci` scale: its numbers check the machinery; the book's results are read at `full` scale."
    return text + "*\n"


def stage(book: Book, scale: str = "full", *, strict: bool = False) -> Staged:
    """Lay out ``_build/site`` for Jupyter Book.

    With ``strict``, raise :class:`BuildError` if any chapter has not run, failed, is
    stale, or has a problem in its outputs; otherwise render what there is and return
    those problems as notes. Source files are read and parsed once for the whole
    stage (:func:`icml26.book.runner.file_memo`).
    """
    from .runner import file_memo

    with file_memo():
        return _stage(book, scale, strict=strict)


def _stage(book: Book, scale: str, *, strict: bool) -> Staged:
    final = book.build_dir / "site"
    # Lay the site out in a scratch folder, then copy over only what changed (:func:`sync_tree`):
    # unchanged pages keep their mtimes, so Sphinx re-reads just the changed ones.
    site = book.build_dir / "site-staging"
    if site.exists():
        shutil.rmtree(site)
    site.mkdir(parents=True)
    for name in ("_config.yml", "_toc.yml"):
        shutil.copy2(book.root / name, site / name)
    (site / "book").mkdir()
    for page in book.book_dir.glob("*.md"):
        shutil.copy2(page, site / "book" / page.name)
    static = book.book_dir / "_static"  # Jupyter Book picks up <book root>/_static/*.css itself
    if static.is_dir():
        shutil.copytree(static, site / "_static")

    staged = Staged(site)
    problems = []
    sweep_scale, over_seeds = seed_aggregates(book, scale)
    from .fragile import kernel_comparisons
    from .history import load_history

    comparisons = kernel_comparisons(book, scale)
    history = load_history(book.root)
    records = load_records(book, scale)
    from .identity import describe as describe_identity

    identity = describe_identity(book.root)
    anchors: dict[str, str] = {}
    for ch in book.chapters():
        word, why = book.state(scale, ch)
        staged.shown[ch.id] = word
        dest = site / "book" / ch.id
        dest.mkdir()
        if word in ("not run", "failed"):
            problems.append(
                f"{ch.id}: not executed at {scale} scale (run `python -m icml26 run {ch.id} --scale {scale}`)"
                if word == "not run"
                else f"{ch.id}: last {scale} run failed: {why}"
            )
            for nb_path in ch.notebooks:
                (dest / f"{nb_path.stem}.md").write_text(_placeholder(book, ch, scale, word, why, nb_path.stem))
            continue
        if word == "stale":
            problems.append(f"{ch.id}: stale: {why}")
        for nb_path in ch.notebooks:
            src = book.executed_dir(scale, ch) / f"{nb_path.stem}.ipynb"
            nb = read_notebook(src.read_text(encoding="utf-8"))
            found = clean_executed(nb)
            problems += [f"{ch.id}/{nb_path.stem}: {p}" for p in found]
            params = notebook_parameters(nb)
            fold_parameters(nb)
            if ch.id not in anchors and _label_heading(nb, "Claim check", claim_label(ch.id)):
                anchors[ch.id] = claim_label(ch.id)
            if nb_path == ch.notebooks[0]:
                box = verdict_box(
                    ch.id,
                    records.get(ch.id, []),
                    label=anchors.get(ch.id),
                    pooled=over_seeds.get(ch.id),
                    sweep_scale=sweep_scale,
                    comparisons=comparisons,
                    history=history,
                )
                if box:
                    _after_claim(nb, box)
                rows = [r for pl in records.get(ch.id, []) if not pl.get("mismatch") for r in pl.get("claims", [])]
                changed = history_lines(ch.id, rows, pooled=over_seeds.get(ch.id), history=history, comparisons=comparisons)
                if changed:
                    _under_heading(
                        nb,
                        "Claim check",
                        "```{note}\nVerdicts that changed between released versions (from the CHANGELOG's claim tables):\n\n"
                        + "\n".join(changed)
                        + "\n```",
                    )
            _under_title(nb, rerun_box(ch, nb_path, params, scale))
            if found:
                items = "\n".join("- `` " + p.replace("`", "'") + " ``" for p in found)
                _banner(nb, "warning", f"The build found problems in this page's outputs:\n\n{items}")
            if word == "stale":
                _banner(nb, "warning", f"These results are stale: {_cell(why)}.")
            if ch.id in over_seeds:
                n_seeds = max(a["n"] for a in over_seeds[ch.id].values())
                _banner(
                    nb,
                    "note",
                    f"This page shows the seed-0 run. The {_doc_link('scorecard', '../intro')} gives this "
                    f"chapter's claims with their evidence pooled over {n_seeds} seeds (`{sweep_scale}` scale).",
                )
            nb.cells.append(_markdown_cell(f"---\n\n*Built from {identity}; executed at `{scale}` scale, seed 0.*"))
            (dest / src.name).write_text(write_notebook(nb), encoding="utf-8")
        for extra in ch.path.iterdir():  # images and other assets next to the notebook
            if extra.is_file() and extra.suffix.lower() in {".png", ".svg", ".jpg", ".jpeg", ".gif", ".bib"}:
                shutil.copy2(extra, dest / extra.name)
    for cid, payloads in load_records(book, scale).items():
        for payload in payloads:
            if payload["mismatch"]:
                problems.append(
                    f"{cid}: claim records {payload.get('part', 'main')}.json (seed {payload.get('seed')}) do not come from "
                    "the run rendered here; the scorecard leaves them out"
                )
    if problems and strict:
        raise BuildError("the book cannot be built (--strict):\n  " + "\n  ".join(problems))
    staged.notes = problems

    gen = site / "book" / "_generated"
    gen.mkdir()
    write_claims_data(book, scale, gen)
    (gen / "scorecard.md").write_text(scorecard_markdown(book, scale, figure_dir=gen, anchors=anchors))
    (gen / "claims-detail.md").write_text(claims_detail_markdown(book, scale))
    status = status_markdown(book)
    built_row = re.compile(r"^\| Built \| [^|\n]* \|$", re.M)
    last = final / "book" / "_generated" / "status.md"
    if last.is_file() and built_row.sub("", last.read_text()) == built_row.sub("", status):
        status = last.read_text()  # nothing else changed: the pages were built when that row says
    (gen / "status.md").write_text(status)
    (gen / "build.md").write_text(build_note(book, scale, staged.shown))
    from .bench import load as load_bench
    from .perf import benchmark_figure, performance_markdown

    bench_records = load_bench(book.results_dir(), scale)
    fig = (
        cached_figure(book, gen / "perf-benchmarks.png", bench_records, lambda out: benchmark_figure(bench_records, out))
        if bench_records
        else None
    )
    (gen / "performance.md").write_text(performance_markdown(book, scale, figure=f"_generated/{fig.name}" if fig else None))
    staged.changed = sync_tree(site, final, keep={"_build"})
    shutil.rmtree(site)
    staged.path = final
    return staged


def sync_tree(src: Path, dst: Path, *, keep: set[str] = frozenset()) -> int:
    """Make ``dst`` hold exactly the files of ``src``, rewriting only those whose bytes differ.

    Files that are the same keep their modification time (so an incremental Sphinx
    build skips them); files absent from ``src`` are removed, except top-level
    entries named in ``keep``. Returns how many files were written or removed.
    """
    changed = 0
    dst.mkdir(parents=True, exist_ok=True)
    wanted: set[Path] = set()
    for f in sorted(src.rglob("*")):
        rel = f.relative_to(src)
        wanted.add(rel)
        out = dst / rel
        if f.is_dir():
            if out.exists() and not out.is_dir():
                out.unlink()
            out.mkdir(parents=True, exist_ok=True)
            continue
        if out.is_dir():
            shutil.rmtree(out)
        if out.is_file() and out.stat().st_size == f.stat().st_size and out.read_bytes() == f.read_bytes():
            continue
        shutil.copy2(f, out)
        changed += 1
    for f in sorted(dst.rglob("*"), reverse=True):  # deepest first, so emptied folders can go
        rel = f.relative_to(dst)
        if rel.parts[0] in keep or rel in wanted or not f.exists():
            continue
        shutil.rmtree(f) if f.is_dir() else f.unlink()
        changed += 1
    return changed


def build(book: Book, scale: str = "full", *, strict: bool = False, warnings_are_errors: bool = True) -> BuildResult:
    """Stage and render the book; return the HTML index and the notes of a lenient build."""
    staged = stage(book, scale, strict=strict)
    site = staged.path
    exe = Path(sys.executable).parent / "jupyter-book"
    cmd = [str(exe) if exe.exists() else "jupyter-book", "build", str(site), "--builder", "html"]
    if warnings_are_errors:
        cmd += ["-W", "-n", "--keep-going"]
    html = book.build_dir / "html"
    # Nothing staged changed since a build that succeeded with the same command: its HTML stands.
    stamp = site / "_build" / ".icml26-built"
    stamp_text = json.dumps(cmd[2:])
    fresh = (
        staged.changed == 0
        and stamp.is_file()
        and stamp.read_text() == stamp_text
        and (site / "_build" / "html" / "index.html").is_file()
        and (html / "index.html").is_file()
    )
    if not fresh:
        stamp.unlink(missing_ok=True)
        proc = subprocess.run(cmd, cwd=book.root, capture_output=True, text=True)
        log = book.build_dir / "book-build.log"
        log.write_text(proc.stdout + "\n" + proc.stderr)
        if proc.returncode != 0:
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-25:])
            raise BuildError(f"jupyter-book build failed (full log: {log}):\n{tail}")
        stamp.write_text(stamp_text)
    sync_tree(site / "_build" / "html", html)
    for name in ("claims.json", "claims.csv"):  # the scorecard as data, beside the HTML as well as under _downloads
        shutil.copy2(site / "book" / "_generated" / name, html / name)
    return BuildResult(html / "index.html", staged.notes)


def check_toc(book: Book) -> list[str]:
    """Chapters missing from ``_toc.yml`` and toc entries with no source: both are build errors."""
    import yaml

    toc = yaml.safe_load((book.root / "_toc.yml").read_text())
    files: set[str] = set()

    def walk(node):
        if isinstance(node, dict):
            if "file" in node:
                files.add(str(node["file"]))
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(toc)
    expected = {f"book/{c.id}/{nb.stem}" for c in book.chapters() for nb in c.notebooks}
    problems = [f"{e} is not in _toc.yml" for e in sorted(expected - files)]
    for f in sorted(files):
        if f.startswith("book/") and f.count("/") == 2 and f not in expected:
            problems.append(f"_toc.yml names {f}, which is no chapter notebook")
        elif f.count("/") == 1 and not (book.root / f"{f}.md").exists():
            problems.append(f"_toc.yml names {f}, which does not exist")
    if (book.book_dir / f"{DETAIL_PAGE}.md").exists() and f"book/{DETAIL_PAGE}" not in files:
        problems.append(f"book/{DETAIL_PAGE} (Claims in detail, which the front page links to) is not in _toc.yml")
    root = toc.get("root")
    if root and not (book.root / f"{root}.md").exists():
        problems.append(f"_toc.yml root {root} does not exist")
    return problems
