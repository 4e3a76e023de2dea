"""The library's shape: methods apart from the book machinery, one meaning per public name."""

import ast
import importlib
import inspect
from collections import defaultdict
from pathlib import Path

from test_public_api import method_modules

SRC = Path(__file__).resolve().parents[1] / "src" / "icml26"


def test_no_method_module_imports_the_book_machinery():
    offenders = []
    for f in SRC.rglob("*.py"):
        if "book" in f.relative_to(SRC).parts or f.name == "__main__.py":  # the CLI entry point
            continue
        for node in ast.walk(ast.parse(f.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [("." * node.level) + (node.module or "")] + [a.name for a in node.names]
            if any(n.startswith(("icml26.book", ".book", "..book")) or n == "book" for n in names):
                offenders.append(str(f.relative_to(SRC)))
    assert not offenders, f"method modules import icml26.book: {sorted(set(offenders))}"


def test_public_function_names_mean_one_thing():
    """A public function name is defined in one method family only (no four different `evaluate`s)."""
    where = defaultdict(set)
    for name in method_modules():
        mod = importlib.import_module(name)
        family = name.split(".")[1]
        for attr, obj in vars(mod).items():
            if not attr.startswith("_") and inspect.isfunction(obj) and obj.__module__ == name:
                where[attr].add(family)
    clashes = {k: sorted(v) for k, v in where.items() if len(v) > 1}
    assert not clashes, f"public names defined by several method families: {clashes}"
