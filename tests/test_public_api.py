"""Every public function and class of every method module has a bad-input test (or a stated exemption).

The bad-input tests mark what they cover with ``badinput.covers("module.name", ...)``;
callables without input to get wrong are listed with ``badinput.exempt("module.name", reason)``.
This test reads those markers from the test sources, so it needs no import of the tests.
"""

import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import icml26

TESTS = Path(__file__).resolve().parent
SKIP_PREFIXES = ("icml26.book", "icml26._")


def method_modules() -> list[str]:
    names = []
    for info in pkgutil.walk_packages(icml26.__path__, "icml26."):
        if info.name.startswith(SKIP_PREFIXES) or any(part.startswith("_") for part in info.name.split(".")[1:]):
            continue
        names.append(info.name)
    return sorted(names)


def public_callables() -> set[str]:
    out = set()
    for name in method_modules():
        mod = importlib.import_module(name)
        for attr, obj in vars(mod).items():
            if attr.startswith("_") or not (inspect.isfunction(obj) or inspect.isclass(obj)):
                continue
            if getattr(obj, "__module__", None) != name:
                continue  # imported from elsewhere; counted where it is defined
            out.add(f"{name.removeprefix('icml26.')}.{attr}")
    return out


def declared() -> set[str]:
    own = {Path(__file__).name, "badinput.py"}
    text = "\n".join(p.read_text(encoding="utf-8") for p in TESTS.rglob("*.py") if p.name not in own)
    names = set()
    for m in re.finditer(r"\bcovers\(([^)]*)\)", text):
        names |= set(re.findall(r"[\"']([\w.]+)[\"']", m.group(1)))
    names |= set(re.findall(r"\bexempt\(\s*[\"']([\w.]+)[\"']", text))
    return names


def test_every_public_callable_has_a_bad_input_test():
    missing = sorted(public_callables() - declared())
    assert not missing, f"{len(missing)} public callables have no bad-input test (covers/exempt):\n  " + "\n  ".join(missing)


def test_declarations_name_real_callables():
    unknown = sorted(declared() - public_callables())
    assert not unknown, "covers/exempt name callables that do not exist: " + ", ".join(unknown)
