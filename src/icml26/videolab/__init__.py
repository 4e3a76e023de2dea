"""The small video-generation lab shared by chapters 05 and 09.

Seeded synthetic clips, one tiny DiT trained by flow matching (its conditioning paths are
options of the one model), and one Fréchet-distance metric on the features of a small
3-D CNN. Import from the submodules (``icml26.videolab.<module>``); this file re-exports nothing.
"""
