"""Checks of the repository's own rules: pins, table of contents, chapter sources."""

import re
import subprocess
from pathlib import Path

import jupytext
import pytest
import yaml

from icml26.book import site
from icml26.book.runner import Book

ROOT = Path(__file__).resolve().parents[2]
BOOK = Book(ROOT)
CHAPTERS = BOOK.chapters()
NOTEBOOKS = [nb for ch in CHAPTERS for nb in ch.notebooks]


def _pins(lines):
    out = {}
    for line in lines:
        line = line.split("#")[0].strip()
        if "==" in line:
            name, version = line.split("==")
            out[re.sub(r"\[.*\]", "", name).strip().lower()] = version.strip()
    return out


def test_environment_yml_matches_requirements():
    req = _pins((ROOT / "requirements.txt").read_text().splitlines())
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip_section = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
    env_pins = _pins(pip_section)
    assert env_pins == req, "environment.yml and requirements.txt disagree"
    py = [d for d in env["dependencies"] if isinstance(d, str) and d.startswith("python=")]
    assert py == ["python=3.11"]


def test_lock_pins_every_requirement_at_the_same_version():
    req = _pins((ROOT / "requirements.txt").read_text().splitlines())
    lock = _pins((ROOT / "requirements.lock").read_text().splitlines())
    norm = {k.replace("_", "-"): v for k, v in lock.items()}
    for name, version in req.items():
        assert norm.get(name.replace("_", "-")) == version, f"{name}: requirements.txt {version}, lock {norm.get(name)}"
    assert req["torch"] == "2.13.0", "keep torch pinned: an unpinned torch pulls a multi-GB CUDA build"
    assert req["jupyter-book"].startswith("1."), "jupyter-book 2.x is a different tool"


def test_toc_lists_every_chapter_and_nothing_else():
    assert site.check_toc(BOOK) == []


def test_at_least_one_chapter():
    assert CHAPTERS, "the book has no chapter"


def test_no_notebook_twin_is_committed():
    tracked = subprocess.run(["git", "ls-files", "*.ipynb"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    assert tracked == [], f"generated .ipynb twins must not be committed: {tracked}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.parent.name for p in NOTEBOOKS])
def test_chapter_source_follows_the_standard(path):
    nb = jupytext.read(path)
    fmt = nb.metadata.get("jupytext", {}).get("text_representation", {})
    assert fmt.get("format_name") == "myst", "one text format for the whole book: MyST markdown"
    tagged = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1, "exactly one cell tagged parameters"
    src = tagged[0].source
    assert re.search(r'^scale\s*=\s*"ci"', src, re.M), 'the parameters cell defaults to scale = "ci"'
    assert re.search(r"^seed\s*=\s*0\b", src, re.M), "the parameters cell defaults to seed = 0"
    text = path.read_text()
    headings = [h.strip() for h in re.findall(r"^## (.+)$", text, re.M)]
    required = ["The claim", "Parameters", "The method", "The experiment", "Claim check", "What differs from the paper"]
    positions = [headings.index(h) if h in headings else -1 for h in required]
    assert -1 not in positions, f"missing sections: {[h for h, p in zip(required, positions) if p < 0]}"
    assert positions == sorted(positions), "sections out of order"
    chapter_id = path.parent.name
    assert re.search(rf'record_claims\(\s*"{chapter_id}"', text), "the chapter records its claims under its own id"
    claim_section = text.split("## The claim", 1)[1].split("## Parameters", 1)[0]
    assert re.search(r"\]\(https?://", claim_section), "the claim section links the paper (arXiv or project page)"
    for pattern in (r"from_pretrained\(['\"][\w-]+/", r"load_dataset\(", r"urlopen\(", r"fetch_openml\(", r"download=True"):
        assert not re.search(pattern, text), f"run-time download in {path.name}: {pattern}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.parent.name for p in NOTEBOOKS])
def test_every_claim_states_its_kind(path):
    from icml26.book import lint

    assert lint.claims_without_kind(path) == [], "every chapter.Claim(...) passes kind= (paper, derived, stand-in or own)"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.parent.name for p in NOTEBOOKS])
def test_an_untestable_claim_says_what_would_test_it(path):
    """A paper claim with a positive control or untestable= passes to_test=: what would let a setup test it."""
    from icml26.book import lint

    found = lint.untestable_claims_without_to_test(path)
    assert found == [], "paper claims with control= or untestable= but no to_test=: " + ", ".join(found)


def test_the_to_test_rule_can_fail(tmp_path):
    from icml26.book import lint

    f = tmp_path / "x.md"
    f.write_text(
        'c = chapter.Claim(id="a", kind="paper", checks=x, control={"learns": ok})\n'
        'd = chapter.Claim(id="b", kind="paper", checks=x, control={"learns": ok}, to_test="a deeper model")\n'
        'e = chapter.Claim(id="c", kind="own", checks=x, control={"learns": ok})\n'
        'g = chapter.Claim(id="d", kind="paper", checks=x, untestable="same argmax")\n'
    )
    assert lint.untestable_claims_without_to_test(f) == ["a", "d"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.parent.name for p in NOTEBOOKS])
def test_no_typed_numbers_in_result_prose(path):
    """Result sentences are generated from computed values (chapter.say / glue), never typed."""
    from icml26.book import lint

    found = lint.prose_numbers(path)
    assert found == [], "typed numbers in the result sections' prose:\n  " + "\n  ".join(found)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.parent.name for p in NOTEBOOKS])
def test_no_noisy_figure_is_passed_off_as_an_exact_check(path):
    """chapter.exact is for identities and counts; comparisons of means go through paired_effect."""
    from icml26.book import lint

    found = lint.noisy_exact_checks(path)
    assert found == [], "exact(...) on figures that vary with the seed:\n  " + "\n  ".join(found)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.parent.name for p in NOTEBOOKS])
def test_chapter_survives_a_jupytext_round_trip(path):
    """Opening a chapter in JupyterLab and saving it without an edit changes nothing (no diff, no cache miss)."""
    from icml26.book import fmt

    assert fmt.round_trips(path), (
        f"jupytext writes {path.name} back differently: run `python -m icml26 fmt {path.parent.name[:2]}`"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.parent.name for p in NOTEBOOKS])
def test_chapter_code_is_formatted_to_the_book_line_length(path):
    """Code cells are `ruff format`ted to the column the rendered book holds (fmt.LINE_LENGTH)."""
    from icml26.book import fmt

    new = fmt.formatted_text(path)
    old = path.read_text()
    changed = [f"{a!r} -> {b!r}" for a, b in zip(old.splitlines(), new.splitlines()) if a != b][:3]
    assert new == old, f"run `python -m icml26 fmt {path.parent.name[:2]}`; first changes: {changed}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.parent.name for p in NOTEBOOKS])
def test_plumbing_cells_are_folded(path):
    """Cells that build claims or set the chapter up fold (hide-input); the parameters cell stays visible."""
    nb = jupytext.read(path)
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        tags = cell.metadata.get("tags", [])
        if "parameters" in tags:
            assert "hide-input" not in tags, "the parameters cell stays visible"
        elif re.search(r"chapter\.(Claim|record_claims)\(", cell.source):
            assert "hide-input" in tags, f"a cell that builds Claim rows is folded: {cell.source[:80]!r}"
