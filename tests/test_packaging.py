"""pyproject.toml names what each method family really imports (core dependencies or its extra)."""

import ast
import importlib.metadata as md
import re
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "icml26"
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _names(reqs):
    return {re.split(r"[\[<>=! ;]", r, maxsplit=1)[0].lower().replace("_", "-") for r in reqs}


def _third_party_imports(files):
    mods = set()
    for f in files:
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.Import):
                mods |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                mods.add(node.module.split(".")[0])
    return {m for m in mods if m not in sys.stdlib_module_names and m not in ("icml26", "__future__")}


FAMILIES = sorted(
    p.stem if p.is_file() else p.name
    for p in SRC.iterdir()
    if not p.name.startswith(("_", ".")) and p.name != "book" and (p.suffix == ".py" or (p / "__init__.py").exists())
)


@pytest.mark.parametrize("family", FAMILIES)
def test_family_imports_are_declared(family):
    path = SRC / family
    files = list(path.rglob("*.py")) if path.is_dir() else [SRC / f"{family}.py"]
    dist_of = md.packages_distributions()
    declared = _names(PROJECT["dependencies"]) | _names(PROJECT.get("optional-dependencies", {}).get(family, []))
    missing = []
    for mod in sorted(_third_party_imports(files)):
        dists = {d.lower().replace("_", "-") for d in dist_of.get(mod, [mod])}
        if not dists & declared:
            missing.append(f"{mod} (from {', '.join(sorted(dists))})")
    assert not missing, f"icml26.{family} imports packages pyproject.toml does not declare for it: {missing}"
