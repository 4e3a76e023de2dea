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


# ---------------------------------------------------------------- import graph and file sizes

MAX_LINES = 1200  # the project's rule: no src/ file over 1,200 lines (make a package if it would)


def module_files(root: Path, package: str) -> dict[str, Path]:
    """Dotted module name -> file for every ``.py`` under ``root`` (the folder of ``package``)."""
    out = {}
    for f in sorted(root.rglob("*.py")):
        parts = list(f.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join([package, *parts])] = f
    return out


def import_graph(root: Path, package: str) -> dict[str, set[str]]:
    """Static import graph of ``package``: module -> the package's modules it imports.

    Every ``import`` and ``from ... import`` statement counts, at module level or inside a
    function, class or ``if`` (``ast.walk``). Relative imports are resolved against the
    importing module's package; ``from X import name`` points to ``X.name`` when that is a
    module, else to ``X``. The implicit import of the parent packages is not counted (a
    package ``__init__`` that re-exports its submodules would otherwise be a cycle with each).
    """
    files = module_files(root, package)
    graph: dict[str, set[str]] = {m: set() for m in files}
    for mod, f in files.items():
        pkg = mod if f.name == "__init__.py" else mod.rpartition(".")[0]
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"), filename=str(f))):
            targets = []
            if isinstance(node, ast.Import):
                for a in node.names:
                    name = a.name
                    while name and name not in files:  # import icml26.a.b binds the deepest module
                        name = name.rpartition(".")[0]
                    targets.append(name)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = pkg.split(".")
                    base = base[: len(base) - (node.level - 1)]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                for a in node.names:
                    sub = f"{target}.{a.name}"
                    targets.append(sub if sub in files else target)
            graph[mod] |= {t for t in targets if t in files and t != mod}
    return graph


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle (``[a, b, ..., a]``) per strongly connected component with more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []

    def strongconnect(v: str) -> None:  # Tarjan's algorithm
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                strongconnect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                components.append(comp)

    for v in sorted(graph):
        if v not in index:
            strongconnect(v)
    cycles = []
    for comp in components:  # a shortest path back to the start, inside the component
        start = min(comp)
        prev: dict[str, str] = {}
        frontier = [start]
        while frontier and start not in prev:
            nxt = []
            for v in frontier:
                for w in sorted(graph[v] & comp):
                    if w not in prev:
                        prev[w] = v
                        nxt.append(w)
            frontier = nxt
        path = [start]
        v = prev[start]
        while v != start:
            path.append(v)
            v = prev[v]
        cycles.append([start, *reversed(path[1:]), start])
    return cycles


def long_files(root: Path, limit: int = MAX_LINES) -> list[tuple[str, int]]:
    """``(path, lines)`` of every ``.py`` file under ``root`` longer than ``limit`` lines, longest first."""
    sizes = [(str(f.relative_to(root)), len(f.read_text(encoding="utf-8").splitlines())) for f in root.rglob("*.py")]
    return sorted(((p, n) for p, n in sizes if n > limit), key=lambda t: (-t[1], t[0]))


def test_the_package_import_graph_has_no_cycle():
    graph = import_graph(SRC, "icml26")
    assert "icml26.movingout.env" in graph and graph["icml26.movingout.env"], "the graph builder found no imports"
    cycles = find_cycles(graph)
    assert not cycles, "import cycles in icml26 (module-level and function-level imports):\n  " + "\n  ".join(
        " -> ".join(c) for c in cycles
    )


def test_no_source_file_exceeds_the_line_limit():
    offenders = long_files(SRC.parent)
    assert not offenders, f"src/ files over {MAX_LINES} lines (split them into a package):\n  " + "\n  ".join(
        f"src/{p}: {n} lines" for p, n in offenders
    )


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        f = root / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text)


def test_the_cycle_finder_finds_a_function_level_cycle(tmp_path):
    """The checks above can fail: a tiny package whose two modules import each other, one inside a function."""
    pkg = tmp_path / "toy"
    _write(
        pkg,
        {
            "__init__.py": "from .sub import env\n",
            "sub/__init__.py": "",
            "sub/env.py": "def make():\n    from .partners import P\n    return P()\n",
            "sub/partners.py": "from toy.sub.env import make\nfrom .. import helpers\nclass P: ...\n",
            "helpers.py": "import toy.sub\n",
        },
    )
    graph = import_graph(pkg, "toy")
    assert graph["toy"] == {"toy.sub.env"}
    assert graph["toy.sub.env"] == {"toy.sub.partners"}
    assert graph["toy.sub.partners"] == {"toy.sub.env", "toy.helpers"}
    assert graph["toy.helpers"] == {"toy.sub"}
    assert find_cycles(graph) == [["toy.sub.env", "toy.sub.partners", "toy.sub.env"]]
    (pkg / "sub/env.py").write_text("from .geometry import R\n")  # the circle broken by a shared module
    (pkg / "sub/geometry.py").write_text("R = 1\n")
    (pkg / "sub/partners.py").write_text("from .geometry import R\n")
    assert find_cycles(import_graph(pkg, "toy")) == []


def test_the_cycle_finder_names_a_longer_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e"}}
    assert find_cycles(graph) == [["a", "b", "c", "a"]]


def test_the_size_check_names_each_long_file(tmp_path):
    _write(tmp_path, {"ok.py": "x = 1\n" * MAX_LINES, "pkg/long.py": "x = 1\n" * (MAX_LINES + 1), "notes.txt": "y\n" * 5000})
    assert long_files(tmp_path) == [(str(Path("pkg/long.py")), MAX_LINES + 1)]
