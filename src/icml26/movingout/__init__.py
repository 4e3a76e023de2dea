"""Moving Out and BASS (chapter 11): a pymunk two-agent physics game behind the gymnasium API.

Submodules
----------
geometry
    The map's fixed design constants (sizes, speeds, goal zone, observation layout).
env
    :class:`~icml26.movingout.env.MovingOutEnv`, metrics (NFD), geometry.
partners
    Scripted partner styles (the stand-in for humans): 6 seen, 3 held out; the ego demonstrator.
bc
    Behaviour cloning with a mixture-density policy (the stand-in for the diffusion policy).
bass
    BASS: collaborative data augmentation, a learned dynamics model and a partner
    predictor for "preview and pick" action selection; episodes and metrics.
"""
