"""icml26 — the thin library behind the executable companion to ICML 2026.

One module per method family (``icml26.bcp`` for backward conformal prediction, ...);
``icml26.chapter`` holds what every chapter notebook needs (scale, seeds, claim records);
``icml26.runner`` and ``icml26.site`` execute chapters and build the book
(``python -m icml26 --help``).
"""

__version__ = "0.1.0"
