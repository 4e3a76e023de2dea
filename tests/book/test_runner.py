"""Tests of icml26.book.runner: discovery, the cache, failure reports (on the toy book of conftest.py)."""

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from icml26.book.runner import estimate_wall, md_code_line


def test_discovery_and_selection(toy):
    assert [c.id for c in toy.chapters()] == ["01-toy", "02-bad"]
    assert [c.id for c in toy.select(["1", "bad"])] == ["01-toy", "02-bad"]
    with pytest.raises(ValueError, match=r"unknown chapter 'nope'; valid chapters: 01-toy, 02-bad"):
        toy.select(["nope"])


def test_cache_hit_and_invalidation_by_src(toy):
    ch = toy.select(["01"])[0]
    first = toy.execute(ch, "ci", 0, progress=False)
    assert first.status == "ok"
    claims = json.loads((toy.results_dir() / "ci" / "01-toy" / "main.json").read_text())
    assert claims["claims"][0]["verdict"] == "reproduced"
    again = toy.execute(ch, "ci", 0, progress=False)
    assert again.status == "cached" and again.key == first.key
    # another seed is another execution
    other = toy.execute(ch, "ci", 1, progress=False)
    assert other.status == "ok" and other.key != first.key
    assert json.loads((toy.results_dir() / "ci" / "01-toy" / "main.json").read_text())["claims"][0]["verdict"] == "not reproduced"
    # a change in a module the chapter imports invalidates the cache
    key_before = toy.cache_key(ch, "ci", 1)
    (toy.src_dir / "icml26" / "bcp.py").write_text("from ._common import C\nX = 2\n")
    assert toy.cache_key(ch, "ci", 1) != key_before
    assert toy.execute(ch, "ci", 1, progress=False).status == "ok"


def _keys(toy):
    return {ch.id: toy.cache_key(ch, "ci", 0) for ch in toy.chapters()}


def test_editing_the_build_tool_reexecutes_nothing(toy):
    before = _keys(toy)
    for tool in ("runner", "site", "cli", "sync"):
        (toy.src_dir / "icml26" / "book" / f"{tool}.py").write_text("T = 2\n")
    assert _keys(toy) == before


def test_editing_a_method_module_reexecutes_only_its_importers(toy):
    before = _keys(toy)
    (toy.src_dir / "icml26" / "pasv.py").write_text("Y = 2\n")  # imported by no toy chapter
    assert _keys(toy) == before
    (toy.src_dir / "icml26" / "bcp.py").write_text("from ._common import C\nX = 3\n")  # imported by 01-toy only
    after = _keys(toy)
    assert after["01-toy"] != before["01-toy"] and after["02-bad"] == before["02-bad"]


def test_editing_the_runtime_or_a_transitive_import_reexecutes_every_importer(toy):
    before = _keys(toy)
    (toy.src_dir / "icml26" / "_common.py").write_text("C = 2\n")  # imported by bcp and by the runtime
    after = _keys(toy)
    assert all(after[c] != before[c] for c in before)
    inputs = [str(p.relative_to(toy.root)) for p in toy.key_inputs(toy.select(["01"])[0])]
    assert "src/icml26/bcp.py" in inputs and "src/icml26/_common.py" in inputs and "src/icml26/book/chapter.py" in inputs
    assert not any(name in " ".join(inputs) for name in ("runner.py", "site.py", "cli.py", "pasv.py"))


def test_failure_names_chapter_and_cell_and_others_still_run(toy):
    records = toy.run(toy.chapters(), "ci", 0, jobs=2, progress=False)
    by = {r.chapter: r for r in records}
    assert by["01-toy"].status in ("ok", "cached")
    bad = by["02-bad"]
    assert bad.status == "failed"
    msg = bad.describe_error()
    assert (
        "02-bad" in msg
        and "bad.md" in msg
        and "cell 4 (code cell 3: 'raise ValueError" in msg
        and "boom in the third cell" in msg
    )
    # a failed run is never a cache hit
    assert toy.execute(toy.select(["02"])[0], "ci", 0, progress=False).status == "failed"


def test_jobs_must_be_positive(toy):
    with pytest.raises(ValueError, match="jobs=0"):
        toy.run(toy.chapters(), "ci", 0, jobs=0)


def test_failing_cell_is_named_by_its_line_in_the_md(toy):
    rec = toy.execute(toy.select(["02"])[0], "ci", 0, progress=False)
    lines = (toy.root / "book" / "02-bad" / "bad.md").read_text().splitlines()
    expected = next(i for i, ln in enumerate(lines, 1) if ln.startswith("raise ValueError"))
    assert rec.error["line"] == expected
    assert f"bad.md line {expected}, cell 4" in rec.describe_error()


def test_md_code_line_skips_cell_options():
    text = "# t\n\n```{code-cell} ipython3\n:tags: [parameters]\n\nscale = 1\nseed = 0\n```\n\n```{code-cell} ipython3\na = 1\nb = 2\n```\n"
    assert md_code_line(text, 1) == 6 and md_code_line(text, 1, 2) == 7
    assert md_code_line(text, 2, 2) == 12 and md_code_line(text, 3) is None


def test_failed_run_keeps_the_last_good_results_marked_stale(toy):
    ch = toy.select(["01"])[0]
    good = toy.execute(ch, "ci", 0, progress=False)
    claims = toy.results_dir() / "ci" / "01-toy" / "main.json"
    kept = claims.read_text()
    assert toy.state("ci", ch) == ("ok", "")
    src = ch.notebooks[0]
    original = src.read_text()
    src.write_text(original.replace("chapter.check_scale(scale)", "chapter.check_scale(scale)\n1 / 0"))
    failed = toy.execute(ch, "ci", 0, progress=False)
    assert failed.status == "failed" and failed.error["ename"] == "ZeroDivisionError"
    # the good run's notebook, record and claims are all still there
    assert toy.record("ci", ch).key == good.key and claims.read_text() == kept
    assert (toy.executed_dir("ci", ch) / "toy.ipynb").exists()
    assert (toy.executed_dir("ci", ch) / "failed" / "toy.ipynb").exists()  # the failing notebook, to look at
    word, why = toy.state("ci", ch)
    assert word == "stale" and "ZeroDivisionError" in why
    # no temporary folders are left behind
    assert not [p for p in toy.build_dir.rglob("*") if p.name.endswith((".tmp", ".old"))]
    # the sources changed since the good run: also stale, and not a cache hit
    src.write_text(original + "\n")
    assert not toy.is_cached(ch, "ci", 0)
    # a run that succeeds clears the failure
    assert toy.execute(ch, "ci", 0, progress=False).status == "ok"
    assert toy.state("ci", ch) == ("ok", "") and toy.failure("ci", ch) is None


def test_list_and_status_page_say_stale(toy):
    from icml26.book import site

    ch = toy.select(["01"])[0]
    toy.execute(ch, "full", 0, progress=False)
    ch.notebooks[0].write_text(ch.notebooks[0].read_text().replace("chapter.check_scale(scale)", "1 / 0"))
    toy.execute(ch, "full", 0, progress=False)
    status = site.status_markdown(toy)
    assert "**(stale)**" in status and "ZeroDivisionError" in status
    proc = subprocess.run(
        [sys.executable, "-m", "icml26", "--root", str(toy.root), "list"], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0
    assert proc.stdout.splitlines()[0].split()[:2] == ["chapter", "notebooks"]
    assert re.search(r"01-toy .* stale, \d+ s", proc.stdout) and "01-toy (full): stale: the run of" in proc.stdout


def test_estimate_wall():
    assert estimate_wall([], 2) == 0
    assert estimate_wall([10, 10, 10], 1) == 30
    assert estimate_wall([30, 10, 10, 10], 2) == 30


SLOW = """
```{code-cell} ipython3
import os, time
open(os.environ["ICML26_TEST_PIDFILE"], "w").write(str(os.getpid()))
time.sleep(300)
```
"""


def test_sigint_stops_at_once_kills_kernels_cancels_queue_and_keeps_results(toy):
    ch = toy.select(["01"])[0]
    assert toy.execute(ch, "ci", 0, progress=False).status == "ok"
    claims = toy.results_dir() / "ci" / "01-toy" / "main.json"
    run_json = toy.executed_dir("ci", ch) / "run.json"
    kept = (claims.read_text(), run_json.read_text())
    # the chapter now records new claims, then hangs; chapter 02 waits in the queue
    ch.notebooks[0].write_text(
        ch.notebooks[0].read_text().replace("ours=str(1 + seed + extra)", "ours=str(2 + seed + extra)") + SLOW
    )
    pidfile = toy.root / "kernel.pid"
    env = dict(os.environ, ICML26_TEST_PIDFILE=str(pidfile), PYTHONWARNINGS="ignore")
    cmd = [
        sys.executable,
        "-m",
        "icml26",
        "--root",
        str(toy.root),
        "run",
        "01",
        "02",
        "--scale",
        "ci",
        "--no-progress",
        "--jobs",
        "1",
    ]
    # pytest-xdist workers ignore SIGINT, and a child inherits that: give the run the default
    # disposition a terminal gives it, so that Python turns Ctrl-C into KeyboardInterrupt
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        deadline = time.time() + 120
        while not pidfile.exists() or not pidfile.read_text():
            assert proc.poll() is None and time.time() < deadline, "the slow chapter never started"
            time.sleep(0.2)
        kernel = int(pidfile.read_text())
        t0 = time.time()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)  # generous: CI machines are shared
        took = time.time() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert took < 45, f"Ctrl-C took {took:.1f} s to stop the run"  # seconds on a quiet machine; slack for a loaded CI
    assert "Traceback" not in err and "KeyboardInterrupt" not in err and "Kernel died" not in err
    last = err.strip().splitlines()[-1]
    assert last.startswith("python -m icml26 run: interrupted: stopped 01-toy; cancelled 1 queued chapter(s)"), err
    # the queued chapter never started, the kernel is gone, the good results are intact
    assert not (toy.executed_dir("ci", "02-bad") / "failed.json").exists()
    for _ in range(50):
        try:
            os.kill(kernel, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        raise AssertionError(f"kernel {kernel} still runs after Ctrl-C")
    assert (claims.read_text(), run_json.read_text()) == kept
    assert toy.state("ci", ch)[0] == "stale"  # the source changed, and nothing replaced the good run
    assert not [p for p in toy.build_dir.rglob("*") if p.name.endswith((".tmp", ".old"))]


def test_sigterm_stops_like_ctrl_c_and_leaves_no_staging(toy):
    ch = toy.select(["01"])[0]
    ch.notebooks[0].write_text(ch.notebooks[0].read_text() + SLOW)
    pidfile = toy.root / "kernel.pid"
    env = dict(os.environ, ICML26_TEST_PIDFILE=str(pidfile), PYTHONWARNINGS="ignore")
    cmd = [sys.executable, "-m", "icml26", "--root", str(toy.root), "run", "01", "--scale", "ci", "--no-progress"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.time() + 120
        while not pidfile.exists() or not pidfile.read_text():
            assert proc.poll() is None and time.time() < deadline, "the slow chapter never started"
            time.sleep(0.2)
        kernel = int(pidfile.read_text())
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130 and "Traceback" not in err, err
    assert "interrupted" in err
    for _ in range(50):
        try:
            os.kill(kernel, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        raise AssertionError(f"kernel {kernel} still runs after SIGTERM")
    assert not [p for p in toy.build_dir.rglob("*") if p.name.endswith(".tmp")]


def test_stale_staging_of_a_dead_run_is_swept(toy):
    from icml26.book.runner import sweep_stale_staging

    dead = toy.build_dir / "executed" / "ci" / ".01-toy.999999999-abcdef012345.tmp"
    alive = toy.build_dir / "executed" / "ci" / f".01-toy.{os.getpid()}-abcdef012345.tmp"
    old_res = toy.build_dir / "results" / ".tmp" / "999999999-abcdef012345"
    for d in (dead, alive, old_res):
        d.mkdir(parents=True)
    removed = sweep_stale_staging(toy.build_dir)
    assert sorted(removed) == sorted([dead, old_res]) and alive.exists()


@pytest.mark.parametrize("garbage", ["not json", "", "{}", '{"chapter": 1}', "[1, 2]"])
def test_a_damaged_run_record_is_treated_as_absent(toy, garbage, capsys):
    ch = toy.select(["01"])[0]
    assert toy.execute(ch, "ci", 0, progress=False).status == "ok"
    f = toy.executed_dir("ci", ch) / "run.json"
    f.write_text(garbage)
    assert toy.record("ci", ch) is None and toy.state("ci", ch)[0] == "not run"
    assert "ignoring an unreadable record" in capsys.readouterr().err and str(f) in capsys.readouterr().err + str(f)
    assert toy.execute(ch, "ci", 0, progress=False).status == "ok"  # a rerun recovers
    assert toy.record("ci", ch) is not None


def test_a_yaml_error_fails_that_chapter_with_its_file_and_line(toy):
    bad = toy.root / "book" / "03-yaml"
    bad.mkdir()
    text = (toy.root / "book" / "01-toy" / "toy.md").read_text()
    head, rest = text.split("---\n", 2)[1], text.split("---\n", 2)[2]
    (bad / "yaml.md").write_text("---\n" + head + "kernelspec: [unclosed\n---\n" + rest)
    records = toy.run(toy.chapters(), "ci", 0, progress=False)
    by = {r.chapter: r for r in records}
    assert by["01-toy"].status == "ok"  # the others finish
    err = by["03-yaml"]
    assert err.status == "failed" and "yaml.md" in err.describe_error() and err.error.get("line")


def test_an_unwritable_build_folder_is_one_line(toy):
    toy.build_dir.mkdir(exist_ok=True)
    (toy.build_dir / "executed").write_text("a file where a folder should be")
    cmd = [sys.executable, "-m", "icml26", "--root", str(toy.root), "run", "01", "--force", "--no-progress"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith("python -m icml26 run: error: ")
    assert "executed" in proc.stderr


def test_a_bad_scheduler_address_is_one_line(toy):
    cmd = [sys.executable, "-m", "icml26", "--root", str(toy.root), "sweep", "01", "--seeds", "0", "--scheduler", "notaurl"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "--scheduler 'notaurl' is not a scheduler address" in proc.stderr


DIES = """
```{code-cell} ipython3
import os, signal
os.kill(os.getpid(), signal.SIGKILL)  # as an out-of-memory kill would
```
"""


def test_a_dead_kernel_is_reported_with_the_running_line_and_not_rerun_unchanged(toy):
    ch = toy.select(["01"])[0]
    ch.notebooks[0].write_text(ch.notebooks[0].read_text() + DIES)
    rec = toy.execute(ch, "ci", 0, progress=False)
    assert rec.status == "failed" and rec.error.get("cell") and rec.error.get("line"), rec.error
    text = ch.notebooks[0].read_text().splitlines()
    assert text[rec.error["line"] - 1] == "import os, signal"  # the first line of the cell that was running
    # the same inputs again: not executed again (it would die again), and said so
    t0 = time.perf_counter()
    again = toy.execute(ch, "ci", 0, progress=False)
    assert again.status == "failed" and "not executed again" in again.error["evalue"] and time.perf_counter() - t0 < 5
    assert toy.execute(ch, "ci", 0, progress=False, force=True).error.get("line") == rec.error["line"]  # --force retries


def test_list_into_a_closed_pipe_is_quiet(toy):
    proc = subprocess.run(
        f"{sys.executable} -m icml26 --root {toy.root} list | head -c 1 > /dev/null",
        shell=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr


def test_a_damaged_claim_record_is_left_out_of_the_scorecard(toy, capsys):
    from icml26.book import site

    ch = toy.select(["01"])[0]
    assert toy.execute(ch, "full", 0, progress=False).status == "ok"
    (toy.results_dir() / "full" / "01-toy" / "extra.json").write_text("{broken")
    card = site.scorecard_markdown(toy, "full")
    assert "one is one" in card and "unreadable claim record" in capsys.readouterr().err


def test_file_memo_reads_each_file_once_and_sees_edits(tmp_path, monkeypatch):
    from pathlib import Path

    from icml26.book import runner

    f = tmp_path / "m.py"
    f.write_text("import os\n")
    reads = []
    real = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda self: reads.append(self) or real(self))
    assert runner.file_bytes(f) == runner.file_bytes(f) == b"import os\n"
    assert len(reads) == 2  # outside a block: always read
    with runner.file_memo():
        reads.clear()
        assert runner.file_bytes(f) == runner.file_bytes(f)
        assert len(reads) == 1
        f.write_text("import os, sys\n")  # another size: read again
        assert runner.file_bytes(f) == b"import os, sys\n"
        assert runner.memo_value(("k",), lambda: [1]) is runner.memo_value(("k",), lambda: [2])
    assert runner.memo_value(("k",), lambda: [2]) == [2]


def test_kernels_run_one_blas_thread_unless_the_environment_says_otherwise(toy, monkeypatch):
    import shutil

    shutil.rmtree(toy.root / "book" / "02-bad")
    nb = toy.root / "book" / "01-toy" / "toy.md"
    nb.write_text(
        nb.read_text()
        + """
```{code-cell} ipython3
import os
assert os.environ["OPENBLAS_NUM_THREADS"] == "1" and os.environ["OMP_NUM_THREADS"] == "1", dict(os.environ)
assert os.environ["MKL_NUM_THREADS"] == "3"
```
"""
    )
    for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("MKL_NUM_THREADS", "3")  # a reader's own setting is kept
    (rec,) = toy.run(toy.chapters(), "ci", 0, progress=False)
    assert rec.status == "ok", rec.describe_error()


def test_a_kernel_never_inherits_a_dask_workers_malloc_trim_threshold(monkeypatch):
    """Dask's nanny sets MALLOC_TRIM_THRESHOLD_=65536 in its workers; a chapter's kernel must not inherit it."""
    import asyncio

    from jupyter_client.manager import AsyncKernelManager

    from icml26.book import runner

    seen = {}

    async def fake_start(self, **kw):
        seen.update(kw["env"])

    monkeypatch.setattr(AsyncKernelManager, "start_kernel", fake_start)
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "65536")
    monkeypatch.setenv("ICML26_SOMETHING_ELSE", "kept")
    cls = runner.kernel_manager_with_env({"ICML26_RUN_KEY": "k"})
    asyncio.run(cls().start_kernel())
    assert "MALLOC_TRIM_THRESHOLD_" not in seen and seen["ICML26_SOMETHING_ELSE"] == "kept" and seen["ICML26_RUN_KEY"] == "k"
    assert runner.KERNEL_ENV_DROPPED == ("MALLOC_TRIM_THRESHOLD_",)
