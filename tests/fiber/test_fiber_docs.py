"""Every public callable of every icml26.fiber module has numpydoc Parameters/Returns/References sections."""

import pkgutil

import pytest
from docsections import undocumented

import icml26.fiber

MODULES = sorted(
    m.name for m in pkgutil.iter_modules(icml26.fiber.__path__, "icml26.fiber.") if not m.name.rsplit(".", 1)[-1].startswith("_")
)


@pytest.mark.parametrize("module", MODULES)
def test_fiber_public_callables_have_numpydoc_sections(module):
    assert undocumented(module) == []
