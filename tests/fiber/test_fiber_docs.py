"""Every public callable of icml26.fiber has numpydoc Parameters/Returns/References sections."""

from docsections import undocumented


def test_fiber_public_callables_have_numpydoc_sections():
    assert undocumented("icml26.fiber") == []
