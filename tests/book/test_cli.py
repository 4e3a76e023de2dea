"""Tests of icml26.book.cli: one-line argument errors, exit codes, sync (on the toy book of conftest.py)."""

import os
import subprocess
import sys

import nbformat
import pytest


def _cli(*args, root=None):
    cmd = [sys.executable, "-m", "icml26"] + (["--root", str(root)] if root else []) + list(args)
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)


@pytest.mark.parametrize(
    "args, needle",
    [
        (["run", "nope"], "valid chapters: 01-toy, 02-bad"),
        (["run", "--scale", "huge"], "valid scales: ci, full"),
        (["run", "--jobs", "0"], "0 must be >= 1"),
        (["run", "--seed", "-3"], "must be >= 0"),
    ],
)
def test_cli_bad_arguments_are_one_line_errors(toy, args, needle):
    proc = _cli(*args, root=toy.root)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], proc.stderr


def test_cli_run_reports_failed_chapter_and_exits_nonzero(toy):
    proc = _cli("run", "--no-progress", "--jobs", "2", root=toy.root)
    assert proc.returncode == 1
    assert "1 chapter(s) failed" in proc.stderr and "02-bad: bad.md, cell 4 (code cell 3" in proc.stderr
    assert "01-toy" in proc.stdout
    listing = _cli("list", root=toy.root)
    assert listing.returncode == 0 and "ci: failed" in listing.stdout


def test_sync_writes_twins_and_refuses_to_clobber_edited_twin(toy):
    assert _cli("sync", root=toy.root).returncode == 0
    twin = toy.build_dir / "ipynb" / "book" / "01-toy" / "toy.ipynb"
    nb = nbformat.read(str(twin), as_version=4)
    assert any("parameters" in c.metadata.get("tags", []) for c in nb.cells)
    nb.cells[-1].source += "\n# edited in the twin"
    nbformat.write(nb, str(twin))
    # the .md is touched after the twin's edit: a modification-time rule would lose the edit
    src = toy.root / "book" / "01-toy" / "toy.md"
    os.utime(src, (twin.stat().st_atime + 5, twin.stat().st_mtime + 5))
    proc = _cli("sync", root=toy.root)
    assert proc.returncode == 1 and "toy.ipynb holds edits that" in proc.stderr
    assert "edited in the twin" in twin.read_text()  # not overwritten
    # once the .md carries the same edit, the twin is in step again and sync writes it
    src.write_text(src.read_text().replace('record_claims("01-toy", claims, scale=scale, seed=seed)\n```',
                                           'record_claims("01-toy", claims, scale=scale, seed=seed)\n# edited in the twin\n```'))
    assert _cli("sync", root=toy.root).returncode == 0


def test_sync_rewrites_unedited_twin_after_md_change(toy):
    assert _cli("sync", root=toy.root).returncode == 0
    src = toy.root / "book" / "01-toy" / "toy.md"
    src.write_text(src.read_text().replace("x = 1", "x = 2"))
    src.write_text(src.read_text() + "\n```{code-cell} ipython3\ny = 3\n```\n")
    assert _cli("sync", root=toy.root).returncode == 0
    twin = toy.build_dir / "ipynb" / "book" / "01-toy" / "toy.ipynb"
    assert "y = 3" in twin.read_text()
