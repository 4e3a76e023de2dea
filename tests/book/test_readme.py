"""The README's papermill recipe runs as written (on the toy chapter) and keeps its records apart."""

import json
import os
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _recipe() -> str:
    readme = (ROOT / "README.md").read_text()
    m = re.search(r"<!-- papermill-recipe.*?-->\n```bash\n(.*?)```", readme, re.S)
    assert m, "README.md lost its papermill recipe (the block after <!-- papermill-recipe -->)"
    return m.group(1)


def test_papermill_recipe_runs_as_written_and_never_touches_the_runners_records(toy):
    # the runner's own record of the chapter, which the recipe must leave alone
    ch = toy.select(["01"])[0]
    assert toy.execute(ch, "full", 0, progress=False).status == "ok"
    runner_record = toy.results_dir() / "full" / "01-toy" / "main.json"
    before = runner_record.read_text()

    recipe = _recipe()
    assert "02-st-bcp" in recipe and ".venv/bin/papermill" in recipe and ".venv/bin/jupytext" in recipe
    # as written, on the toy chapter instead of chapter 02, from the toy's root (nothing activated)
    script = recipe.replace("book/02-st-bcp/st-bcp.md", "book/01-toy/toy.md").replace("book/02-st-bcp", "book/01-toy")
    os.symlink(ROOT / ".venv", toy.root / ".venv")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ICML26_", "VIRTUAL_ENV"))}
    env["PATH"] = "/usr/bin:/bin"  # no venv on the PATH: the recipe must name its tools
    proc = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script], cwd=toy.root, env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-2000:]

    out = re.search(r"(_build/manual/\S+-full-seed1\.ipynb)", recipe).group(1)
    assert (toy.root / out).exists()
    manual = toy.results_dir() / "manual" / "full" / "seed-1" / "01-toy" / "main.json"
    payload = json.loads(manual.read_text())
    assert payload["seed"] == 1 and payload["run_key"] == ""
    assert runner_record.read_text() == before  # the runner's record is untouched
    assert toy.is_cached(ch, "full", 0)  # and the chapter is still a cache hit at seed 0
    from icml26.book import site

    assert [p["seed"] for p in site.load_records(toy, "full")["01-toy"]] == [0]
