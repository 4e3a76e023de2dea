"""The tiny-language-model lab shared by chapters 12 and 16.

Small GPT-2-architecture models built from a ``transformers`` config, trained on CPU on
corpora generated here with a seed, saved with ``save_pretrained`` into a cache keyed by
their recipe and loaded back with ``from_pretrained``, the path a reader's own model takes.
Import from the submodules (``icml26.tinylm.<module>``); this file re-exports nothing.
"""
