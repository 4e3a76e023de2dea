"""``python -m icml26``: list, run and build the book's chapters (see :mod:`icml26.book.cli`)."""

from .book.cli import main

raise SystemExit(main())
