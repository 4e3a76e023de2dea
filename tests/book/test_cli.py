"""Tests of icml26.book.cli: one-line argument errors, exit codes, sync (on the toy book of conftest.py)."""

import os
import re
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
        (["run", "--seed", "99999999999999999999"], "must be < 4294967296 (2**32)"),
        (["run", "--seed", "4294967296"], "must be < 4294967296"),
        (["build", "--scale", "huge"], "valid scales: ci, full"),
        (["sweep", "--seeds", "0-2", "--per-round", "3"], "--per-round applies only with --until-decided"),
        (["sweep", "--until-decided", "--per-round", "0"], "0 must be >= 1"),
        (["times", "--save", "a b"], "label 'a b': use 1 to 40 letters"),
        (["times", "--save", "0.3.0"], "no chapter has a good run at full scale to save"),
        (["times", "--save", "0.3.0", "--from", "/nonexistent/book"], "/nonexistent/book"),
    ],
)
def test_cli_bad_arguments_are_one_line_errors(toy, args, needle):
    proc = _cli(*args, root=toy.root)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], proc.stderr


def test_cli_root_that_is_no_book_is_a_one_line_error(tmp_path):
    for root in (tmp_path / "nonexistent", tmp_path):
        proc = _cli("list", root=root)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and "--root" in lines[0] and "no book/ folder" in lines[0], proc.stderr


def test_cli_jobs_beyond_the_cores_is_capped_with_a_warning(toy):
    proc = _cli("run", "01", "--jobs", "1000", "--no-progress", root=toy.root)
    assert proc.returncode == 0, proc.stderr
    assert f"--jobs 1000 is more than the {os.cpu_count()} CPU core(s); running {os.cpu_count()} at a time" in proc.stderr


def test_cli_build_help_names_the_scales():
    proc = _cli("build", "--help")
    assert proc.returncode == 0 and "{ci,full}" in proc.stdout and "--strict" in proc.stdout


def test_cli_run_reports_failed_chapter_and_exits_nonzero(toy):
    proc = _cli("run", "--no-progress", "--jobs", "2", root=toy.root)
    assert proc.returncode == 1
    assert "1 chapter(s) failed" in proc.stderr and "02-bad: bad.md line 27, cell 4 (code cell 3" in proc.stderr
    assert "01-toy" in proc.stdout
    # kernels talk over local sockets and shut down quietly: no jupyter noise on the terminal
    assert "TCP" not in proc.stderr and "IPKernelApp" not in proc.stderr and "KeyboardInterrupt" not in proc.stderr
    # the run said what it was about to do, and each chapter as it finished
    assert "2 of 2 chapter(s) to execute at ci scale, 2 at a time; no previous run to judge the time by" in proc.stderr
    assert re.search(r"02-bad: failed in [\d.]+ s \(\d of 2 done", proc.stderr)
    listing = _cli("list", root=toy.root)
    assert listing.returncode == 0
    header, *rows = listing.stdout.splitlines()
    assert header.split()[:3] == ["chapter", "notebooks", "ci"]
    assert re.search(r"^01-toy\s+toy.md\s+ok, \d+ s, 20\d\d-", rows[0]) and re.search(
        r"^02-bad\s+bad.md\s+failed\s+not run", rows[1]
    )
    # a forced rerun estimates its time from the previous runs
    again = _cli("run", "--no-progress", "--force", root=toy.root)
    assert re.search(
        r"2 of 2 chapter\(s\) to execute at ci scale, 1 at a time; about \d+ s judging by the previous runs", again.stderr
    )


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
    src.write_text(
        src.read_text().replace(
            'record_claims("01-toy", claims, scale=scale, seed=seed)\n```',
            'record_claims("01-toy", claims, scale=scale, seed=seed)\n# edited in the twin\n```',
        )
    )
    assert _cli("sync", root=toy.root).returncode == 0


def test_sync_rewrites_unedited_twin_after_md_change(toy):
    assert _cli("sync", root=toy.root).returncode == 0
    src = toy.root / "book" / "01-toy" / "toy.md"
    src.write_text(src.read_text().replace("x = 1", "x = 2"))
    src.write_text(src.read_text() + "\n```{code-cell} ipython3\ny = 3\n```\n")
    assert _cli("sync", root=toy.root).returncode == 0
    twin = toy.build_dir / "ipynb" / "book" / "01-toy" / "toy.ipynb"
    assert "y = 3" in twin.read_text()


def test_build_and_bench_default_to_the_scale_that_ran_last(toy):
    from icml26.book.cli import default_scale

    assert default_scale(toy) == "ci"  # nothing has run
    ch = toy.select(["01"])[0]
    toy.execute(ch, "full", 0, progress=False)
    assert default_scale(toy) == "full"
    import time

    time.sleep(1.1)  # run records carry their finishing time to the second
    toy.execute(ch, "ci", 0, progress=False)
    assert default_scale(toy) == "ci"
    proc = _cli("build", "--help")
    assert "most recent successful" in " ".join(proc.stdout.split())


def test_a_log_file_gets_lines_not_progress_bars(toy):
    # stdout and stderr are pipes here, as in `make book > log`: no live bars, one line per chapter
    proc = _cli("run", "01", "--force", root=toy.root)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "\r" not in out and "%|" not in out and "cell/s" not in out
    assert "01-toy" in out


def test_run_takes_validated_parameters_into_the_key_and_the_record(toy):
    import json

    bad = _cli("run", "01", "--param", "n_seeds=5", root=toy.root)
    assert (
        bad.returncode == 2 and "chapter 01-toy has no parameter 'n_seeds'" in bad.stderr and "extra, scale, seed" in bad.stderr
    )
    ok = _cli("run", "01", "--param", "extra=2", root=toy.root)
    assert ok.returncode == 0, ok.stderr
    rec = json.loads((toy.build_dir / "executed" / "ci" / "01-toy" / "run.json").read_text())
    assert rec["params"] == {"extra": 2}
    claims = json.loads((toy.results_dir() / "ci" / "01-toy" / "main.json").read_text())["claims"]
    assert claims[0]["ours"] == "3"  # the parameter reached the notebook
    key_with = rec["key"]
    assert toy.cache_key(toy.select(["01"])[0], "ci", 0) != key_with  # parameters enter the cache key
    again = _cli("run", "01", "--param", "extra=2", root=toy.root)
    assert "0 of 1 chapter(s)" in again.stderr or "to execute" not in again.stderr  # a cache hit


def test_a_cached_rerun_is_timed_but_leaves_the_performance_page_alone(toy):
    import json
    import shutil

    from icml26.book import perf

    shutil.rmtree(toy.root / "book" / "02-bad")  # a whole book that runs cleanly
    first = _cli("run", "--no-progress", root=toy.root)
    assert first.returncode == 0, first.stderr
    rec = json.loads((toy.build_dir / "executed" / "ci" / "01-toy" / "run.json").read_text())
    # the kernel's own CPU seconds are recorded beside the wall time, and cannot exceed it by much
    assert 0 < rec["cpu_s"] <= rec["wall_s"] * (os.cpu_count() or 1) + 1
    timings = toy.build_dir / "timings"
    assert (timings / "run-ci.json").exists() and not (timings / "run-ci-cached.json").exists()
    page = perf.performance_markdown(toy, "ci")
    assert _cli("run", "--no-progress", root=toy.root).returncode == 0
    cached = json.loads((timings / "run-ci-cached.json").read_text())
    assert cached["executed"] == 0 and cached["cached"] == 1 and cached["wall_s"] > 0
    assert perf.performance_markdown(toy, "ci") == page  # so the next build can skip Sphinx
