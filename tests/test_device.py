"""The device helper: ``auto`` is the CPU here, ``cuda`` without a GPU is a clear error, GPU records stay apart."""

import re
from pathlib import Path

import pytest

from icml26._common import DEVICES, resolve_device
from icml26.book import chapter

ROOT = Path(__file__).resolve().parents[1]


def _uses_torch(module: str) -> bool:
    base = ROOT / "src" / "icml26" / module
    files = list(base.rglob("*.py")) if base.is_dir() else [base.with_suffix(".py")]
    return any(f.exists() and "import torch" in f.read_text() for f in files)


def _torch_chapters() -> list[Path]:
    """Chapters that import torch themselves or a library module of icml26 that does."""
    out = []
    for p in sorted((ROOT / "book").glob("[0-9][0-9]-*/*.md")):
        text = p.read_text()
        mods = set(re.findall(r"from icml26 import ([a-z_]+)", text)) | set(re.findall(r"from icml26\.([a-z_]+)", text))
        mods.discard("book")
        if "import torch" in text or any(_uses_torch(m) for m in mods):
            out.append(p)
    return out


TORCH_CHAPTERS = _torch_chapters()


def test_auto_and_cpu_resolve_to_the_cpu_without_a_gpu():
    import torch

    if torch.cuda.is_available():  # pragma: no cover - the reference machine has no GPU
        pytest.skip("a GPU is present")
    assert resolve_device("auto") == "cpu" and resolve_device("cpu") == "cpu"
    with pytest.raises(ValueError, match=r"device='cuda' was asked for, but torch sees no CUDA GPU"):
        resolve_device("cuda")


@pytest.mark.parametrize("bad", ["tpu", "CUDA", "", None, 0])
def test_bad_device_names_are_refused(bad):
    with pytest.raises(ValueError, match="is not a device; use one of 'auto', 'cpu', 'cuda'"):
        resolve_device(bad)
    assert DEVICES == ("auto", "cpu", "cuda")


def test_setup_records_the_device_and_keeps_gpu_records_apart(tmp_path, monkeypatch):
    monkeypatch.setenv("ICML26_RESULTS_DIR", str(tmp_path))
    monkeypatch.setenv("ICML26_RUN_KEY", "k")
    chapter.setup("ci", 0, device="auto")
    assert chapter.DEVICE == "cpu" and chapter.records_dir("99-x", "ci", 0) == tmp_path / "ci" / "99-x"
    monkeypatch.setenv("ICML26_DEVICE", "cuda")  # as setup sets it on a GPU machine
    assert chapter.records_dir("99-x", "ci", 0) == tmp_path / "device-cuda" / "ci" / "99-x"
    monkeypatch.setenv("ICML26_DEVICE", "cpu")


def test_every_torch_chapter_takes_a_device_parameter():
    assert TORCH_CHAPTERS, "no torch chapter found"
    for path in TORCH_CHAPTERS:
        text = path.read_text()
        params = text.split(":tags: [parameters]", 1)[1].split("```", 1)[0]
        assert re.search(r'^device = "auto"', params, re.M), f'{path.parent.name}: no device = "auto" in its parameters cell'
        assert re.search(r"chapter\.setup\([^)]*device=device", text), f"{path.parent.name}: setup does not get the device"


def test_no_hard_coded_cpu_in_the_library_or_chapters():
    hits = []
    for path in [*(ROOT / "src" / "icml26").rglob("*.py"), *(ROOT / "book").glob("*/*.md")]:
        if path.name == "_common.py" or "book" in path.relative_to(ROOT).parts[:3] and path.suffix == ".py":
            continue
        for i, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"""(device\s*=\s*|torch\.device\(|\.to\()\s*['"]cpu['"]""", line):
                hits.append(f"{path.relative_to(ROOT)}:{i}: {line.strip()}")
    assert hits == [], "tensors pinned to the CPU instead of the chapter's device:\n  " + "\n  ".join(hits)


def test_a_torch_chapter_fails_clearly_for_cuda_without_a_gpu(tmp_path, monkeypatch):
    import jupytext
    import papermill
    import torch
    from papermill.exceptions import PapermillExecutionError

    if torch.cuda.is_available():  # pragma: no cover
        pytest.skip("a GPU is present")
    monkeypatch.setenv("ICML26_RESULTS_DIR", str(tmp_path / "results"))
    path = next(p for p in TORCH_CHAPTERS if p.parent.name.startswith("14"))
    nb = jupytext.read(path)
    with pytest.raises(PapermillExecutionError) as exc:
        papermill.execute_notebook(
            nb,
            str(tmp_path / "out.ipynb"),
            parameters={"scale": "ci", "seed": 0, "device": "cuda"},
            cwd=str(path.parent),
            kernel_name="python3",
            progress_bar=False,
        )
    assert exc.value.ename == "ValueError" and "device='cuda' was asked for, but torch sees no CUDA GPU" in exc.value.evalue
    assert not (tmp_path / "results").exists()  # it stopped before recording anything
