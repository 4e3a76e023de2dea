"""Which book this is (the package version and the commit the pages were built from) and which CPU ran it.

Shown by ``python -m icml26 --version``, on the Status page and in each chapter's footer.
"""

from __future__ import annotations

import importlib.metadata as md
import platform
import subprocess
from pathlib import Path


def version(root: Path | None = None) -> str:
    """The ``icml26`` version: that of the checkout at ``root`` (its ``pyproject.toml``) when given and
    readable, else the installed one (package metadata; ``"unknown"`` if not installed).

    An editable install keeps the metadata of its last ``pip install``, so after a version bump
    only the checkout's own file says which version its pages come from.
    """
    if root is not None:
        import tomllib

        try:
            project = tomllib.loads((Path(root) / "pyproject.toml").read_text()).get("project", {})
            if project.get("name") == "icml26" and isinstance(project.get("version"), str):
                return project["version"]
        except (OSError, ValueError, UnicodeDecodeError):
            pass
    try:
        return md.version("icml26")
    except md.PackageNotFoundError:  # pragma: no cover - the package is installed in every supported set-up
        return "unknown"


def commit(root: Path) -> tuple[str, bool] | None:
    """``(commit hash, dirty)`` of the git checkout at ``root``, or ``None`` outside a checkout or without git.

    ``dirty`` is true when tracked files differ from the commit or untracked files
    that git does not ignore exist.
    """
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
        if head.returncode != 0:
            return None
        status = subprocess.run(["git", "-C", str(root), "status", "--porcelain"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return head.stdout.strip(), bool(status.stdout.strip()) if status.returncode == 0 else False


def describe(root: Path) -> str:
    """One line: ``icml26 0.1.0, commit 1a2b3c4d5e6f`` (``… with uncommitted changes`` when dirty)."""
    c = commit(root)
    where = "not a git checkout" if c is None else f"commit {c[0][:12]}" + (" with uncommitted changes" if c[1] else "")
    return f"icml26 {version(root)}, {where}"


def cpu_description(cpuinfo: str | None = None) -> str:
    """The CPU model and its widest vector instructions (``/proc/cpuinfo`` where there is one).

    They say which BLAS and torch kernels ran: the same seed gives the same records on the same
    kind of CPU, but kernels written for other instructions round differently, which moves
    the figures of chapters that train models (in the second or third digit).
    """
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:
            cpuinfo = ""
    model = next((ln.split(":", 1)[1].strip() for ln in cpuinfo.splitlines() if ln.startswith("model name")), "")
    flags = set(next((ln.split(":", 1)[1].split() for ln in cpuinfo.splitlines() if ln.startswith("flags")), []))
    isa = next(
        (name for flag, name in (("amx_bf16", "AMX and AVX-512"), ("avx512f", "AVX-512"), ("avx2", "AVX2")) if flag in flags), ""
    )
    base = model or platform.processor() or platform.machine()
    return f"{base} ({isa})" if isa else base
