"""Test helper: public callables of a method module whose docstrings lack numpydoc sections."""

from __future__ import annotations


def undocumented(modname: str) -> list[str]:
    """Public functions without numpydoc Parameters/Returns/References; classes without Parameters/References."""
    import importlib
    import inspect

    mod = importlib.import_module(modname)
    out = []
    for name, obj in vars(mod).items():
        if name.startswith("_") or getattr(obj, "__module__", None) != modname:
            continue
        if inspect.isfunction(obj):
            items = [(name, obj, ("Parameters", "Returns", "References"))]
        elif inspect.isclass(obj):
            items = [(name, obj, ("Parameters", "References"))]
            items += [
                (f"{name}.{m}", f, ("Returns",)) for m, f in vars(obj).items() if not m.startswith("_") and inspect.isfunction(f)
            ]
        else:
            continue
        out += [f"{label}: {sec}" for label, o, secs in items for sec in secs if f"{sec}\n---" not in (inspect.getdoc(o) or "")]
    return out
