"""Bouncing sprites: a seeded synthetic video data set for the video lab (chapters 05 and 09).

Each clip is ``n_frames`` frames of ``size × size`` RGB pixels on a black background with
one sprite of one of four classes (:data:`SPRITE_CLASSES`: a filled square, a disk, a bar
and a cross). The sprite has a random colour, a random start position and a random
velocity; it bounces off the frame's borders (elastic reflection of the velocity
component). The same ``random_state`` gives the same clips.

Clips are float32 arrays of shape ``(n, 3, n_frames, size, size)`` in ``[0, 1]``
(batch, channel, time, height, width): the ``[B, C, T, H, W]`` layout of the lab's DiT
(:mod:`icml26.videolab.dit`) and of ``torch.nn.Conv3d``.

References
----------
The data plan of the VideoMAETok digest (``shared/papers/09-videomaetok.md``): "bouncing
sprites", 8 frames of 16×16 pixels, four sprite classes, random colour, velocity and
bounces. In the spirit of Moving MNIST (Srivastava, Mansimov & Salakhutdinov, ICML 2015).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._common import RandomState, check_int, check_random_state, check_real

SPRITE_CLASSES: tuple[str, ...] = ("square", "disk", "bar", "cross")
"""The four sprite classes, in label order (label ``k`` is ``SPRITE_CLASSES[k]``)."""


def sprite_templates() -> list[np.ndarray]:
    """The binary masks of the four sprite classes, in label order.

    Returns
    -------
    list of numpy.ndarray
        ``[square 5×5, disk 7×7, bar 2×7, cross 6×6]``, dtype float32, values in {0, 1}.
    """
    square = np.ones((5, 5), np.float32)
    yy, xx = np.mgrid[-3:4, -3:4]
    disk = ((yy**2 + xx**2) <= 9.5).astype(np.float32)
    bar = np.ones((2, 7), np.float32)
    cross = np.zeros((6, 6), np.float32)  # arms two pixels wide, recognisable at 16 × 16
    cross[2:4, :] = 1.0
    cross[:, 2:4] = 1.0
    return [square, disk, bar, cross]


@dataclass(frozen=True)
class SpriteClips:
    """A batch of bouncing-sprite clips and what made them.

    Attributes
    ----------
    videos : numpy.ndarray, shape (n, 3, T, H, W), float32 in [0, 1]
    labels : numpy.ndarray, shape (n,), int64 in {0, 1, 2, 3}
    colours : numpy.ndarray, shape (n, 3), float32
    positions : numpy.ndarray, shape (n, T, 2), float32
        Top-left corner (row, column) of the sprite in each frame.
    """

    videos: np.ndarray
    labels: np.ndarray
    colours: np.ndarray
    positions: np.ndarray


def make_sprite_clips(
    n: int,
    *,
    n_frames: int = 8,
    size: int = 16,
    speed: tuple[float, float] = (1.0, 2.5),
    random_state: RandomState = None,
) -> SpriteClips:
    """Draw ``n`` bouncing-sprite clips.

    The sprite's top-left corner :math:`p_t` moves by :math:`p_{t+1} = p_t + v_t`; when a
    coordinate leaves :math:`[0, \\text{size} - h]` it is reflected back and that velocity
    component changes sign (a bounce). The speed :math:`\\lVert v\\rVert` is uniform in
    ``speed`` (pixels per frame) with a uniform direction; the colour is uniform in
    :math:`[0.3, 1]^3`; the class is uniform over the four sprites.

    Parameters
    ----------
    n : int
        Number of clips (>= 1).
    n_frames : int
        Frames per clip (>= 1).
    size : int
        Frame height and width in pixels (>= 8, room for the largest sprite).
    speed : (float, float)
        Range of the speed in pixels per frame, ``0 <= low <= high``.
    random_state : int, numpy.random.Generator or None
        Seed; the same seed gives the same clips.

    Returns
    -------
    SpriteClips
        ``videos`` of shape ``(n, 3, n_frames, size, size)`` and the generating factors.

    References
    ----------
    The VideoMAETok digest's data plan (``shared/papers/09-videomaetok.md``).
    """
    n = check_int(n, "n")
    n_frames = check_int(n_frames, "n_frames")
    size = check_int(size, "size", low=8)
    if not isinstance(speed, (tuple, list)) or len(speed) != 2:
        raise TypeError(f"speed={speed!r} must be a pair (low, high) of pixels per frame")
    lo = check_real(speed[0], "speed[0]", lo=0.0)
    hi = check_real(speed[1], "speed[1]", lo=lo)
    rng = check_random_state(random_state)
    templates = sprite_templates()
    labels = rng.integers(0, len(templates), size=n)
    colours = rng.uniform(0.3, 1.0, size=(n, 3)).astype(np.float32)
    videos = np.zeros((n, 3, n_frames, size, size), np.float32)
    positions = np.zeros((n, n_frames, 2), np.float32)
    for i in range(n):
        tpl = templates[labels[i]]
        h, w = tpl.shape
        bounds = np.array([size - h, size - w], float)
        p = rng.uniform(0.0, 1.0, size=2) * bounds
        angle = rng.uniform(0.0, 2 * np.pi)
        v = rng.uniform(lo, hi) * np.array([np.sin(angle), np.cos(angle)])
        for t in range(n_frames):
            positions[i, t] = p
            r, c = int(round(p[0])), int(round(p[1]))
            videos[i, :, t, r : r + h, c : c + w] = colours[i][:, None, None] * tpl[None]
            p = p + v
            for k in range(2):  # bounce: reflect the coordinate and flip that velocity component
                if p[k] < 0:
                    p[k], v[k] = -p[k], -v[k]
                elif p[k] > bounds[k]:
                    p[k], v[k] = 2 * bounds[k] - p[k], -v[k]
                p[k] = min(max(p[k], 0.0), bounds[k])
    return SpriteClips(videos=videos, labels=labels.astype(np.int64), colours=colours, positions=positions)


def load_video_array(path: str, *, n_frames: int | None = None) -> np.ndarray:
    """Load real clips saved by the user as a ``.npy`` array, checked for the lab's layout.

    For readers who have a real data set (UCF-101 or Kinetics clips resized and saved as
    one array): the lab's code runs on it unchanged. Nothing is downloaded.

    Parameters
    ----------
    path : str
        A ``.npy`` file holding an array of shape ``(n, 3, T, H, W)`` with values in [0, 1].
    n_frames : int, optional
        If given, the clips must have exactly this many frames.

    Returns
    -------
    numpy.ndarray, shape (n, 3, T, H, W), float32
    """
    if not isinstance(path, str) or not path.endswith(".npy"):
        raise ValueError(f"path={path!r} must be a str naming a .npy file")
    arr = np.load(path, allow_pickle=False).astype(np.float32)
    if arr.ndim != 5 or arr.shape[1] != 3:
        raise ValueError(f"{path}: array of shape {arr.shape} is not (n, 3, T, H, W)")
    if n_frames is not None and arr.shape[2] != check_int(n_frames, "n_frames"):
        raise ValueError(f"{path}: clips have {arr.shape[2]} frames, expected n_frames={n_frames}")
    if not np.all(np.isfinite(arr)) or arr.min() < 0 or arr.max() > 1:
        raise ValueError(f"{path}: values must be finite and in [0, 1]")
    return arr
