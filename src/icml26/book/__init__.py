"""The book machinery, apart from the science.

Notebook runtime (imported by the chapters):
    :mod:`icml26.book.chapter` (parameters, claims, decision rules, result prose) and
    :mod:`icml26.book.bench` (timing).
Build tool (never imported by a chapter):
    :mod:`icml26.book.runner` (papermill execution and cache), :mod:`icml26.book.site`
    (the rendered book, scorecard and status pages), :mod:`icml26.book.sync` (notebook
    twins) and :mod:`icml26.book.cli` (``python -m icml26``).
"""
