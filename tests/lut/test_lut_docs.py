"""Every public callable of every icml26.lut module has numpydoc Parameters/Returns/References sections."""

import pkgutil

import pytest
from docsections import undocumented

import icml26.lut

MODULES = sorted(
    m.name for m in pkgutil.iter_modules(icml26.lut.__path__, "icml26.lut.") if not m.name.rsplit(".", 1)[-1].startswith("_")
)


@pytest.mark.parametrize("module", MODULES)
def test_lut_public_callables_have_numpydoc_sections(module):
    assert undocumented(module) == []


def test_reconstructed_parts_say_so():
    """CLGN's parts are labelled as reconstructions where they are defined."""
    from icml26.lut import clgn

    for obj in (clgn.ConvLUT, clgn.LearnableGroupSum, clgn.OrPool, clgn.clgn_net, clgn.fit_hierarchical):
        assert "Reconstructed" in obj.__doc__, obj.__name__
