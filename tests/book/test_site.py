"""Tests of icml26.book.site: scorecard, status page, staging (partial and strict), output checks."""

import html as html_lib
import json
import re
import shutil
from pathlib import Path

import nbformat
import pytest

from icml26.book import site

ROOT = Path(__file__).resolve().parents[2]


def test_scorecard_and_stage(toy):
    ch = toy.select(["01"])[0]
    toy.execute(ch, "full", 0, progress=False)
    card = site.scorecard_markdown(toy, "full")
    # the front page: the tallies and one compact row per paper claim, linked to the chapter
    assert (
        "**1 paper claim** from the 1 chapter that ran, of 2 written for the 2 papers at `full` scale, single seed (seed 0): **1 reproduced**"
        in card
    )
    assert "| {doc}`01 <01-toy/toy>` | {doc}`one is one <01-toy/toy>` | **reproduced** | — | 1 |" in card
    assert "How it was decided" not in card and "single seed |" not in card
    # every field moved to the claims-in-detail page
    detail = site.claims_detail_markdown(toy, "full")
    assert (
        "| {doc}`Toy <01-toy/toy>` | one is one | 1 | 1 | **reproduced** | — | — | — | single seed | equal: yes | — | — |"
        in detail
    )
    assert "02-bad" in detail and "not run" in detail and "How verdicts are decided" in detail
    (toy.root / "_config.yml").write_text("title: t\n")
    with pytest.raises(site.BuildError, match="02-bad: not executed at full scale"):
        site.stage(toy, "full", strict=True)
    staged = site.stage(toy, "full")  # lenient: renders what has run
    assert staged.shown == {"01-toy": "ok", "02-bad": "not run"}
    placeholder = (staged.path / "book" / "02-bad" / "bad.md").read_text()
    assert placeholder.startswith("# Toy") and "python -m icml26 run 02 --scale full" in placeholder
    assert any("02-bad: not executed" in n for n in staged.notes)
    page = nbformat.read(str(staged.path / "book" / "01-toy" / "toy.ipynb"), as_version=4)
    top, last = page.cells[0].source, page.cells[-1].source
    assert top.startswith("# ") and "Rerun this chapter" in top and ":class: dropdown" in top
    assert "python -m icml26 run 01 --scale full --seed 0" in top and "-p scale full -p seed 0" in top
    assert "book/01-toy/toy.md" in top and "--allow-root" in top
    # the chapter opens with its verdicts (the toy has no "The claim" section: right under the title)
    assert "The verdicts of this run" in top and "| one is one | paper | **reproduced** | 1 |" in top
    assert top.index("Rerun this chapter") < top.index("The verdicts of this run")
    assert "Built from icml26 " in last
    assert (staged.path / "book" / "_generated" / "claims.csv").exists()
    note = (staged.path / "book" / "_generated" / "build.md").read_text()
    assert "executed at `full` scale with seed 0" in note and "(1 of 2 chapters" in note and "02-bad" in note
    status = site.status_markdown(toy)
    assert "| 01-toy |" in status and "CPU cores" in status


def test_check_toc_wants_the_claims_page_once_it_exists(toy):
    missing = "book/claims (Claims in detail, which the front page links to) is not in _toc.yml"
    before = site.check_toc(toy)  # the toy book has no intro or status page: those are named, nothing else
    assert missing not in before
    (toy.book_dir / "claims.md").write_text("# Claims in detail\n")
    assert sorted(site.check_toc(toy)) == sorted(before + [missing])
    toc = toy.root / "_toc.yml"
    toc.write_text(
        toc.read_text().replace("      - file: book/status\n", "      - file: book/claims\n      - file: book/status\n")
    )
    assert site.check_toc(toy) == before


def test_records_of_another_run_are_left_out_of_the_scorecard(toy):
    ch = toy.select(["01"])[0]
    toy.execute(ch, "full", 0, progress=False)
    f = toy.results_dir() / "full" / "01-toy" / "main.json"
    payload = json.loads(f.read_text())
    payload["run_key"] = ""
    payload["seed"] = 1
    f.write_text(json.dumps(payload))
    card = site.scorecard_markdown(toy, "full")
    assert "one is one" not in card and "left out: 01-toy/main (seed 1)" in card
    assert "one is one" not in site.claims_detail_markdown(toy, "full")
    (toy.root / "_config.yml").write_text("title: t\n")
    assert any("do not come from the run rendered here" in n for n in site.stage(toy, "full").notes)


def _nb(*outputs):
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("x")
    cell.outputs = list(outputs)
    nb.cells.append(cell)
    return nb


def test_clean_executed_flags_progress_bars_warnings_and_keeps_outputs():
    nb = _nb(
        nbformat.v4.new_output("stream", name="stderr", text="seeds: 100%|##########| 3/3 [00:01<00:00, 2.1it/s]\r"),
        nbformat.v4.new_output("stream", name="stdout", text="seeds: 3/3 done in 1.0 s\n"),
        nbformat.v4.new_output("stream", name="stderr", text="/x.py:1: RuntimeWarning: divide by zero\n"),
    )
    problems = site.clean_executed(nb)
    assert len(nb.cells[0].outputs) == 3
    assert len(problems) == 2 and "progress-bar output" in problems[0] and "RuntimeWarning" in problems[1]


def test_clean_executed_flags_nan_in_tables():
    import pandas as pd

    df = pd.DataFrame({"a": [1.0, float("nan")], "b": ["x", None]})
    html = nbformat.v4.new_output("execute_result", data={"text/html": df.to_html(), "text/plain": str(df)}, execution_count=1)
    problems = site.clean_executed(_nb(html))
    assert len(problems) == 1 and "2 NaN/None cell(s)" in problems[0]
    clean = df.astype(object).fillna("—")
    ok = nbformat.v4.new_output(
        "execute_result", data={"text/html": clean.to_html(), "text/plain": str(clean)}, execution_count=1
    )
    md = nbformat.v4.new_output("display_data", data={"text/markdown": "| a | b |\n|---|---|\n| 1 | — |\n"})
    assert site.clean_executed(_nb(ok, md)) == []
    assert site.clean_executed(_nb(nbformat.v4.new_output("display_data", data={"text/markdown": "| a |\n|---|\n| nan |\n"})))


def test_verdict_box_goes_after_the_claim_and_the_claim_check_gets_a_label():
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("# T\n\n## The claim\n\nThe paper says so.\n\n## Parameters"),
        nbformat.v4.new_code_cell('scale = "ci"'),
        nbformat.v4.new_markdown_cell("Some text.\n\n## Claim check\n\nThe rule."),
    ]
    assert site._label_heading(nb, "Claim check", site.claim_label("01-x"))
    assert nb.cells[2].source == "Some text.\n\n(claim-check-01-x)=\n## Claim check\n\nThe rule."
    assert not site._label_heading(nb, "Nowhere", "x")
    payload = {
        "claims": [
            {"id": "o", "claim": "an own property", "kind": "own", "verdict": "holds", "ours": "3/3", "decisions": {}},
            {
                "id": "p",
                "claim": "A beats B (on the paper's benchmark; details follow)",
                "kind": "paper",
                "verdict": "undecided",
                "ours": "x",
                "decisions": {
                    "better": {"stats": {"effect": 0.5, "ci_low": -0.1, "ci_high": 1.1, "smallest_effect": 1.0, "unit": " pp"}}
                },
            },
        ]
    }
    box = site.verdict_box("01-x", [payload], label="claim-check-01-x")
    assert box.index("A beats B") < box.index("an own property"), "paper claims first"
    assert (
        "| A beats B (on the paper's benchmark; details follow) | paper | *undecided* | +0.5 [-0.1, +1.1] pp, δ " in box
        and "| an own property | own | holds | 3/3 |" in box
    )
    assert "{ref}`Claim check <claim-check-01-x>`" in box
    assert site.verdict_box("01-x", [{"claims": [], "mismatch": False}]) == ""
    site._after_claim(nb, box)
    first = nb.cells[0].source
    assert first.index("The paper says so.") < first.index("The verdicts of this run") < first.index("## Parameters")


def test_short_cuts_at_a_word_or_the_first_clause():
    assert site._short("ST-BCP shrinks the gap (mean over data sets × T)", 70) == "ST-BCP shrinks the gap"
    assert site._short("a b c d e f g h i j k l m n o p q r s t u v w x y z", 20) == "a b c d e f g h i j …"
    assert site._short("short", 20) == "short"
    assert site._short("Short (a; b) then the rest of it", 50) == "Short (a; b) then the rest of it"  # no cut inside ( )


def test_fold_parameters_replaces_the_injected_cell_by_a_caption():
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("# T"),
        nbformat.v4.new_code_cell('scale = "ci"\nseed = 0', metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell('# Parameters\nscale = "full"\nseed = 1\n', metadata={"tags": ["injected-parameters"]}),
        nbformat.v4.new_code_cell("print(scale)"),
    ]
    nb.metadata["papermill"] = {"parameters": {"scale": "full", "seed": 1}}
    site.fold_parameters(nb)
    assert [c.cell_type for c in nb.cells] == ["markdown", "code", "markdown", "code"]
    assert "`scale = 'full'`, `seed = 1`" in nb.cells[2].source


# --------------------------------------------------------------------------------------
# a real build of the toy book (with the repository's own _config.yml and pages)
# --------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def built(tmp_path_factory):
    import importlib.util

    spec = importlib.util.spec_from_file_location("_toy_conftest", Path(__file__).resolve().parents[1] / "conftest.py")
    conftest = importlib.util.module_from_spec(spec)  # the toy book's sources (not another folder's conftest)
    spec.loader.exec_module(conftest)

    from icml26.book.runner import Book

    root = tmp_path_factory.mktemp("built") / "repo"
    (root / "book" / "01-toy").mkdir(parents=True)
    toy = conftest.GOOD.replace("\nThe identity", "\n## The claim\n\nThe identity").replace(
        "```{code-cell} ipython3\n:tags: [parameters]", "## Parameters\n\n```{code-cell} ipython3\n:tags: [parameters]"
    )
    toy = toy.replace(
        "```{code-cell} ipython3\nfrom icml26 import bcp", "## Claim check\n\n```{code-cell} ipython3\nfrom icml26 import bcp"
    )
    long = 'claims = [chapter.Claim(id="one", claim="one is one", kind="paper", paper="1", ours=str(1 + seed + extra), checks={"equal": chapter.exact(1 + seed + extra == 1, "arithmetic on the seed")})]'
    assert long in toy
    toy = toy.replace(
        long,
        'claims = [\n    chapter.Claim(\n        id="one", claim="one is one", kind="paper", paper="1", ours=str(1 + seed + extra),\n'
        '        checks={"equal": chapter.exact(1 + seed + extra == 1, "arithmetic on the seed")},\n    )\n]',
    )  # lines that fit the column
    toy = toy.replace("  # noqa: F401  (the toy's cache key covers src/icml26/bcp.py)", "  # noqa: F401")
    (root / "book" / "01-toy" / "toy.md").write_text(toy)
    (root / "book" / "02-bad").mkdir()
    (root / "book" / "02-bad" / "bad.md").write_text(conftest.BAD)
    (root / "_toc.yml").write_text(
        conftest.TOC.replace("      - file: book/status\n", "      - file: book/claims\n      - file: book/status\n")
    )
    shutil.copy2(ROOT / "_config.yml", root / "_config.yml")
    shutil.copytree(ROOT / "book" / "_static", root / "book" / "_static")
    for page in ("intro.md", "status.md", "claims.md"):
        shutil.copy2(ROOT / "book" / page, root / "book" / page)
    shutil.copytree(ROOT / "src", root / "src", ignore=shutil.ignore_patterns("__pycache__"))
    book = Book(root)
    assert book.execute(book.select(["01"])[0], "ci", 0, progress=False).status == "ok"
    assert book.execute(book.select(["02"])[0], "ci", 0, progress=False).status == "failed"
    result = site.build(book, "ci")
    return book, result


def _text(page: Path) -> str:
    """A rendered page as the reader reads it: tags dropped, entities decoded, spaces folded."""
    return re.sub(r"\s+", " ", html_lib.unescape(re.sub(r"<[^>]+>", " ", page.read_text())))


def test_partial_build_renders_what_ran_and_names_the_command_for_the_rest(built):
    book, result = built
    html = book.build_dir / "html"
    assert result.index == html / "index.html"
    bad = _text(html / "book" / "02-bad" / "bad.html")
    assert "python -m icml26 run 02 --scale ci" in bad and "boom in the third cell" in bad and "bad.md line 27" in bad
    toy = _text(html / "book" / "01-toy" / "toy.html")
    assert "one is one" in toy
    # the verdicts open the chapter, after "The claim" and before "Parameters"; the front page links to the claim check
    body = toy[toy.index("Rerun this chapter") :]  # the page's body (the page's own contents list comes before it)
    assert body.index("The claim") < body.index("The verdicts of this run") < body.index("Parameters")
    intro_html = (html / "book" / "intro.html").read_text()
    assert 'href="01-toy/toy.html#claim-check-01-toy"' in intro_html and 'href="claims.html"' in intro_html
    detail = _text(html / "book" / "claims.html")
    assert "Claims in detail" in detail and "How verdicts are decided" in detail and "equal: yes" in detail
    # papermill's injected cell is folded into one line under the parameters cell
    assert "# Parameters" not in toy
    assert "This run used scale = 'ci' , seed = 0 : the runner set them" in toy
    # the intro says what this build shows, derived from the runs
    intro = _text(html / "book" / "intro.html")
    assert "The pages show the notebooks as executed at ci scale with seed 0" in intro
    assert "Not shown, because they have not run successfully at this scale: 02-bad" in intro and "quick ci scale" in intro
    assert any("02-bad: last ci run failed" in n for n in result.notes)
    with pytest.raises(site.BuildError, match="--strict"):
        site.stage(book, "ci", strict=True)


def test_build_loads_nothing_from_the_network_and_bundles_mathjax(built):
    from icml26.book.check_site import external_assets

    book, _ = built
    html = book.build_dir / "html"
    assert (html / "_static" / "mathjax" / "tex-chtml.js").exists()
    assert external_assets(html) == []
    toy = (html / "book" / "01-toy" / "toy.html").read_text()
    assert 'class="math' in toy and "mathjax/tex-chtml.js" in toy


def test_external_assets_finds_a_cdn_script(tmp_path):
    from icml26.book.check_site import external_assets

    (tmp_path / "a.html").write_text(
        '<html><head><script src="https://cdn.example/x.js"></script>'
        '<link rel="stylesheet" href="//cdn.example/y.css"><img src="z.png"></head></html>'
    )
    assert external_assets(tmp_path) == ["a.html: script https://cdn.example/x.js", "a.html: link //cdn.example/y.css"]


def test_check_site_in_a_browser(built):
    if not shutil.which("chromium"):
        pytest.skip("no chromium on this machine (apt-get install chromium); make check-site needs it")
    from icml26.book.check_site import check_site

    book, _ = built
    report = check_site(book.build_dir / "html")
    assert report.ok, report.summary()
    assert report.pages >= 4 and report.math > 0


def test_check_site_catches_what_a_reader_would_see_broken(tmp_path):
    if not shutil.which("chromium"):
        pytest.skip("no chromium on this machine (apt-get install chromium); make check-site needs it")
    from icml26.book.check_site import check_site

    (tmp_path / "ok.html").write_text("<html><body><p id='here'>fine</p></body></html>")
    (tmp_path / "bad.html").write_text(
        "<html><body><img src='missing.png'><script>throw new Error('kaput')</script>"
        "<span class='math'>\\(x^2\\)</span><a href='nope.html'>x</a><a href='ok.html#gone'>y</a>"
        "<a href='ok.html#here'>z</a><a href='https://example.org/'>w</a></body></html>"
    )
    report = check_site(tmp_path)
    text = "\n".join(report.problems)
    assert not report.ok and report.pages == 2 and report.external_links == 1
    for needle in (
        "broken image: missing.png",
        "JavaScript error",
        "kaput",
        "math left unrendered",
        "nope.html: no such file",
        "no anchor #gone",
    ):
        assert needle in text, report.summary()
    assert "#here" not in text


def test_check_site_measures_height_visible_code_and_overflow(tmp_path):
    if not shutil.which("chromium"):
        pytest.skip("no chromium on this machine (apt-get install chromium); make check-site needs it")
    from icml26.book.check_site import check_site

    long = "x = " + "1 + " * 150 + "1"
    pre = "<pre style='overflow-x:auto;margin:0;font:16px monospace'>"
    (tmp_path / "page.html").write_text(
        "<html><body style='margin:0'><main><article style='width:600px'>"
        f"<div class='cell_input' style='height:200px'>{pre}y = 1</pre></div>"  # visible: 200 px of code
        f"<details class='hide above-input'><summary>Show code</summary><div class='cell_input'>{pre}{long}</pre></div></details>"
        "<div style='height:600px'>prose</div>"
        "<table><tr><td style='min-width:900px'>runs past</td></tr></table>"
        "<div style='overflow-x:auto'><table><tr><td style='min-width:900px'>scrolls in its box</td></tr></table></div>"
        "</article></main></body></html>"
    )
    report = check_site(tmp_path)
    (lay,) = report.layout
    assert lay.page == "page.html" and lay.code_blocks == 2 and lay.folded == 1
    assert lay.height >= 800 and 200 / lay.height == pytest.approx(lay.code_share, rel=0.01)
    assert lay.overflowing == 1 and lay.wide_tables == 1, report.summary()
    text = "\n".join(report.problems)
    assert "a code line runs past its box: 'x = 1 + 1" in text and "runs past the text column" in text and "runs past'" in text
    assert "scrolls in its box" not in text and not report.ok
    assert "page.html" in report.layout_table() and "height" in report.layout_table()
    # a page whose lines fit and whose wide table scrolls in its own box passes
    (tmp_path / "page.html").write_text(
        f"<html><body><main><article style='width:600px'><div class='cell_input'>{pre}y = 1</pre></div>"
        "<div style='overflow-x:auto'><table><tr><td style='min-width:900px'>wide</td></tr></table></div></article></main></body></html>"
    )
    report = check_site(tmp_path)
    assert report.ok, report.summary()
    assert report.layout[0].overflowing == 0 and report.layout[0].folded == 0


def test_claims_data_matches_the_records(toy, tmp_path):
    import csv

    import pandas as pd

    ch = toy.select(["01"])[0]
    toy.execute(ch, "full", 0, progress=False)
    jf, cf = site.write_claims_data(toy, "full", tmp_path)
    data = json.loads(jf.read_text())
    payload = json.loads((toy.results_dir() / "full" / "01-toy" / "main.json").read_text())
    assert [(c["chapter"], c["id"], c["verdict"], c["kind"]) for c in data["claims"]] == [
        ("01-toy", r["id"], r["verdict"], r["kind"]) for r in payload["claims"]
    ]
    assert data["claims"][0]["run_key"] == payload["run_key"] and data["claims"][0]["checks"]["equal"]["outcome"] == "supports"
    table = pd.read_csv(cf)
    assert list(table.columns) == list(site.CLAIM_COLUMNS) and table.loc[0, "verdict"] == "reproduced"
    with cf.open() as fh:
        assert len(list(csv.DictReader(fh))) == len(payload["claims"])


def test_version_and_identity(toy):
    from icml26.book import identity
    from icml26.book.cli import main

    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0
    assert identity.describe(toy.root).startswith(f"icml26 {identity.version()}, ")
    assert "These pages were built from **icml26 " in site.status_markdown(toy)


def test_a_rebuild_with_nothing_changed_reuses_the_html(built, monkeypatch):
    book, result = built
    index = book.build_dir / "html" / "index.html"
    before = index.stat().st_mtime_ns
    calls = []
    real_run = site.subprocess.run
    monkeypatch.setattr(site.subprocess, "run", lambda cmd, *a, **k: calls.append(cmd) or real_run(cmd, *a, **k))
    again = site.build(book, "ci")
    assert again.index == result.index
    assert not [c for c in calls if "jupyter-book" in str(c[0])], "Sphinx ran although no staged file changed"
    assert index.stat().st_mtime_ns == before
    # a changed page is the one file staging rewrites; putting it back rewrites it again
    intro = book.book_dir / "intro.md"
    text = intro.read_text()
    try:
        intro.write_text(text + "\nOne more line.\n")
        assert site.stage(book, "ci").changed == 1
    finally:
        intro.write_text(text)
    assert site.stage(book, "ci").changed == 1
    assert site.stage(book, "ci").changed == 0


def test_sync_tree_rewrites_only_what_differs(tmp_path):
    src, dst = tmp_path / "src", tmp_path / "dst"
    (src / "a").mkdir(parents=True)
    (src / "a" / "same.txt").write_text("same")
    (src / "new.txt").write_text("new")
    (dst / "a").mkdir(parents=True)
    (dst / "a" / "same.txt").write_text("same")
    (dst / "gone.txt").write_text("gone")
    (dst / "_build").mkdir()
    (dst / "_build" / "cache").write_text("kept")
    old = (dst / "a" / "same.txt").stat().st_mtime_ns
    assert site.sync_tree(src, dst, keep={"_build"}) == 2  # new.txt written, gone.txt removed
    assert (dst / "a" / "same.txt").stat().st_mtime_ns == old
    assert (dst / "new.txt").read_text() == "new" and not (dst / "gone.txt").exists()
    assert (dst / "_build" / "cache").read_text() == "kept"
    (src / "a" / "same.txt").write_text("SAME")  # same size, other bytes: rewritten
    assert site.sync_tree(src, dst, keep={"_build"}) == 1 and (dst / "a" / "same.txt").read_text() == "SAME"
    assert site.sync_tree(src, dst, keep={"_build"}) == 0


def test_cached_figure_draws_once_per_data(toy, tmp_path):
    drawn = []

    def draw(out):
        drawn.append(out)
        out.write_bytes(b"png")

    site.cached_figure(toy, tmp_path / "one" / "f.png", {"x": 1}, draw)
    site.cached_figure(toy, tmp_path / "two" / "f.png", {"x": 1}, draw)
    assert len(drawn) == 1 and (tmp_path / "two" / "f.png").read_bytes() == b"png"
    site.cached_figure(toy, tmp_path / "three" / "f.png", {"x": 2}, draw)
    assert len(drawn) == 2


def test_added_cells_have_ids_from_their_text():
    a, b = site._markdown_cell("some text"), site._markdown_cell("some text")
    assert a["id"] == b["id"] != site._markdown_cell("other text")["id"]


def test_notebook_reader_and_writer_match_nbformat():
    import nbformat

    nb = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "Python 3"}})
    code = nbformat.v4.new_code_cell(
        "x = 1\nprint(x)\n",
        outputs=[
            nbformat.v4.new_output("stream", name="stdout", text="1\n2\n"),
            nbformat.v4.new_output("display_data", data={"text/plain": "a\nb", "text/html": "<p>\n</p>", "image/png": "iVBO"}),
            nbformat.v4.new_output("execute_result", data={"application/json": {"k": [1, 2]}}, execution_count=1),
        ],
    )
    md_cell = nbformat.v4.new_markdown_cell("# T\n\nmore", attachments={"a.svg": {"image/svg+xml": "<svg>\n</svg>"}})
    nb.cells = [md_cell, code]
    text = nbformat.writes(nb)
    ours = site.read_notebook(text)
    assert ours == nbformat.v4.reads(text)
    assert ours.cells[1].outputs[0].text == "1\n2\n" and ours.cells[0].source == "# T\n\nmore"
    assert site.write_notebook(ours) == nbformat.writes(nbformat.v4.reads(text)) + "\n"
    with pytest.raises(ValueError, match="nbformat=3"):
        site.read_notebook('{"nbformat": 3, "cells": []}')


def test_the_status_page_names_the_cpu_and_its_vector_instructions():
    from icml26.book.site import cpu_description

    info = "processor\t: 0\nmodel name\t: Example CPU 9000\nflags\t\t: fpu sse2 avx2 avx512f\n"
    assert cpu_description(info) == "Example CPU 9000 (AVX-512)"
    assert cpu_description(info.replace(" avx512f", " avx512f amx_bf16")) == "Example CPU 9000 (AMX and AVX-512)"
    assert cpu_description("model name : Old CPU\nflags : sse2\n") == "Old CPU"
    assert cpu_description("")  # no /proc/cpuinfo: the platform's own name, never empty


def test_the_version_shown_is_the_checkouts_own(tmp_path):
    from icml26.book import identity

    (tmp_path / "pyproject.toml").write_text('[project]\nname = "icml26"\nversion = "9.8.7"\n')
    assert identity.version(tmp_path) == "9.8.7"  # not the (possibly stale) installed metadata
    assert identity.describe(tmp_path).startswith("icml26 9.8.7, ")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "other"\nversion = "1"\n')
    assert identity.version(tmp_path) == identity.version()
    (tmp_path / "pyproject.toml").write_text("not toml [")
    assert identity.version(tmp_path) == identity.version()


def test_the_status_page_names_runs_made_on_another_cpu(toy):
    import json

    from icml26.book import site

    ch = toy.select(["01"])[0]
    rec = toy.execute(ch, "ci", 0, progress=False)
    assert rec.status == "ok" and rec.cpu == site.cpu_description()  # the run records its CPU
    assert "another CPU" not in site.status_markdown(toy) and "not recorded" not in site.status_markdown(toy)
    f = toy.executed_dir("ci", ch) / "run.json"
    payload = json.loads(f.read_text())
    payload["cpu"] = "Elsewhere CPU (AVX2)"
    f.write_text(json.dumps(payload))
    status = site.status_markdown(toy)
    assert "Runs made on another CPU than this build's" in status and "Elsewhere CPU (AVX2) (every run shown)" in status
    toy.execute(ch, "full", 0, progress=False)  # one run here, one from before the CPU was recorded
    payload.pop("cpu")
    f.write_text(json.dumps(payload))
    assert "Runs whose CPU was not recorded (made before run records named it): 01 at `ci`." in site.status_markdown(toy)


def test_the_status_page_names_sweep_tasks_made_on_another_cpu(toy):
    import json
    from dataclasses import asdict

    from icml26.book import site
    from icml26.book import sweep as sw

    here = site.cpu_description()
    for seed, cpu in ((0, here), (1, "Elsewhere CPU (AVX2)"), (2, "")):
        d = sw.task_dir(toy, "full", seed, "01-toy")
        d.mkdir(parents=True)
        rec = sw.SweepRecord(chapter="01-toy", scale="full", seed=seed, params={}, key="k", status="ok", cpu=cpu)
        (d / "run.json").write_text(json.dumps(asdict(rec)))
    status = site.status_markdown(toy)
    assert "Stored sweep tasks made on another CPU than this build's" in status
    assert "Elsewhere CPU (AVX2) (1 task: 01 seed 1 at `full`)" in status
    assert "CPU not recorded (1 task: 01 seed 2 at `full`)" in status
    assert "01 seed 0" not in status  # the task made here is not named
    # an old task record (before records named their CPU) still loads, as "not recorded"
    old = asdict(rec)
    old.pop("cpu")
    (sw.task_dir(toy, "full", 2, "01-toy") / "run.json").write_text(json.dumps(old))
    assert sw.load_task(toy, "full", 2, "01-toy").cpu == ""
