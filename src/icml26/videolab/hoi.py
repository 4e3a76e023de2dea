"""Seeded synthetic human–object-interaction (HOI) clips for chapter 05 (OmniShow).

Each clip is ``T`` frames of ``S x S`` RGB pixels in ``[-1, 1]`` on a grey background (0):

- a *person*: a rectangle whose colour is its identity (the human reference);
- an *object*: a square held beside the person, solid or striped (colour / texture is the
  object reference);
- a *mouth*: a black bar inside the person whose height follows a 1-D audio envelope
  (filled row by row, pixel by pixel, so its area is the height in steps of 1/4 pixel);
- positions that follow a *pose track* (person centre drifting, object centre swinging
  with the hand), also rendered as a pose video of keypoint heat maps.

Audio features come at four times the video rate (log-energy plus seven "spectral"
features shaped by a per-clip timbre) and are windowed as OmniShow does:
linear interpolation to ``4 (T - 1) + 1`` steps, a centred window of 5 with edge
replication, then stride 4, giving one window ``[5, D]`` per frame.

References
----------
Zhou et al., "OmniShow", ICML 2026, arXiv:2604.11804; the windowing follows
``diffsynth/modules/audio_encoder_omnishow.py`` of the Wan release
(github.com/nikhilash6/OmniShow).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from icml26._common import RandomState, check_int, check_random_state
from icml26.videolab.dit import DiTConditions

__all__ = ["HOIClips", "make_hoi_clips", "window_audio_features", "mouth_heights", "MOUTH_WIDTH", "MOUTH_MAX"]

PERSON_H, PERSON_W = 9, 6
OBJ = 4
MOUTH_WIDTH = 4  # pixels
MOUTH_MAX = 4.0  # pixels of mouth height at envelope 1
AUDIO_DIM = 8


def window_audio_features(features: torch.Tensor, n_frames: int, *, window: int = 5, stride: int = 4) -> torch.Tensor:
    """OmniShow's audio packing: interpolate → centred window (edge replication) → stride.

    Parameters
    ----------
    features : Tensor
        ``[B, L, D]`` audio features at any rate covering the clip.
    n_frames : int
        Video (latent) frames ``T``.
    window : int
        Odd window length ``w``.
    stride : int
        Temporal stride between kept windows (the VAE's temporal factor, 4 in the paper).

    Returns
    -------
    Tensor
        ``[B, T, w, D]``: window ``t`` is centred on step ``stride * t`` of the interpolated
        ``stride (T - 1) + 1``-step sequence.
    """
    if not isinstance(features, torch.Tensor) or features.ndim != 3:
        raise ValueError(f"features must be a 3-D tensor [B, L, D], got {getattr(features, 'shape', type(features).__name__)}")
    t = check_int(n_frames, "n_frames")
    w = check_int(window, "window")
    s = check_int(stride, "stride")
    if w % 2 == 0:
        raise ValueError(f"window={w} must be odd (a centred window)")
    if features.shape[1] < 2:
        raise ValueError(f"features has {features.shape[1]} time steps; needs at least 2 to interpolate")
    t_video = s * (t - 1) + 1
    x = F.interpolate(features.transpose(1, 2).float(), size=t_video, mode="linear", align_corners=True).transpose(
        1, 2
    )  # [B, t_video, D]
    half = w // 2
    centre = torch.arange(0, t_video, s)  # [T]
    idx = (centre[:, None] + torch.arange(-half, half + 1)[None, :]).clamp(0, t_video - 1)  # [T, w]
    return x[:, idx]  # [B, T, w, D]


@dataclass
class HOIClips:
    """A batch of HOI clips with everything needed for conditioning and scoring.

    Attributes
    ----------
    video : Tensor ``[n, 3, T, S, S]`` in ``[-1, 1]``.
    refs : Tensor ``[n, 2, 3, S, S]``: the person (slot 0) and object (slot 1) references.
    pose : Tensor ``[n, 3, T, S, S]``: keypoint heat maps (person, object, empty channel).
    keypoints : ndarray ``[n, T, 2, 2]``: (person, object) centres as (row, col) in pixels.
    envelope : ndarray ``[n, T]``: audio envelope in ``[0, 1]`` at the video frames.
    audio_raw : ndarray ``[n, 4 T, 8]``: the audio features at four times the video rate.
    audio : Tensor ``[n, T, 5, 8]``: the windowed features (:func:`window_audio_features`).
    person_color, object_color : ndarray ``[n, 3]`` in ``[-1, 1]``.
    striped : ndarray ``[n]`` bool: the object has a striped texture.
    """

    video: torch.Tensor
    refs: torch.Tensor
    pose: torch.Tensor
    keypoints: np.ndarray
    envelope: np.ndarray
    audio_raw: np.ndarray
    audio: torch.Tensor
    person_color: np.ndarray
    object_color: np.ndarray
    striped: np.ndarray

    def __len__(self) -> int:
        return int(self.video.shape[0])

    def take(self, idx) -> HOIClips:
        """The clips ``idx`` (an int array, slice or boolean mask)."""
        idx_np = np.arange(len(self))[idx]
        it = torch.as_tensor(idx_np, dtype=torch.long)
        return HOIClips(
            self.video[it],
            self.refs[it],
            self.pose[it],
            self.keypoints[idx_np],
            self.envelope[idx_np],
            self.audio_raw[idx_np],
            self.audio[it],
            self.person_color[idx_np],
            self.object_color[idx_np],
            self.striped[idx_np],
        )

    def conditions(self, *, refs: bool = True, audio: bool = True, pose: bool = True) -> DiTConditions:
        """:class:`~icml26.videolab.dit.DiTConditions` with the chosen modalities (the others masked out)."""
        n = len(self)
        on = lambda flag: torch.full((n,), float(flag))  # noqa: E731
        return DiTConditions(
            refs=self.refs if refs else torch.zeros_like(self.refs),
            ref_mask=on(refs)[:, None].expand(n, 2).clone(),
            pose=self.pose if pose else torch.zeros_like(self.pose),
            pose_mask=on(pose),
            audio=self.audio if audio else torch.zeros_like(self.audio),
            audio_mask=on(audio),
        )


def _envelope(rng: np.random.Generator, tau: np.ndarray) -> np.ndarray:
    """Syllable bursts: the max of 2–3 Gaussian bumps with random centres, widths, heights."""
    k = int(rng.integers(2, 4))
    c = rng.uniform(0.0, 1.0, k)
    c[0] = rng.uniform(0.0, 0.45)
    c[1] = rng.uniform(0.55, 1.0)  # bursts on both halves: the clip always varies
    sig = rng.uniform(0.06, 0.14, k)
    a = rng.uniform(0.6, 1.0, k)
    e = np.max(a[:, None] * np.exp(-0.5 * ((tau[None, :] - c[:, None]) / sig[:, None]) ** 2), axis=0)
    return np.clip(e, 0.0, 1.0)


def _bright_colour(rng: np.random.Generator) -> np.ndarray:
    """A colour in ``[-1, 1]`` with every channel >= -0.3 and one channel >= 0.6 (never mistaken for the mouth)."""
    c = rng.uniform(-0.3, 1.0, 3)
    c[rng.integers(3)] = rng.uniform(0.6, 1.0)
    return c


def _paint_person(img: np.ndarray, r: float, c: float, colour: np.ndarray, mouth: float) -> None:
    # img: [3, S, S]; (r, c) centre of the person; mouth height in pixels (fractional)
    s = img.shape[-1]
    r0 = int(round(r - PERSON_H / 2))
    c0 = int(round(c - PERSON_W / 2))
    rs, re_ = max(r0, 0), min(r0 + PERSON_H, s)
    cs, ce = max(c0, 0), min(c0 + PERSON_W, s)
    img[:, rs:re_, cs:ce] = colour[:, None, None]
    top = r0 + 3
    m0 = c0 + (PERSON_W - MOUTH_WIDTH) // 2
    n_dark = int(round(mouth * MOUTH_WIDTH))  # quantised to 1 / MOUTH_WIDTH pixel of height
    for k in range(n_dark):
        row, col = top + k // MOUTH_WIDTH, m0 + k % MOUTH_WIDTH
        if 0 <= row < s and 0 <= col < s:
            img[:, row, col] = -1.0


def _paint_object(img: np.ndarray, r: float, c: float, colour: np.ndarray, striped: bool) -> None:
    s = img.shape[-1]
    r0 = int(round(r - OBJ / 2))
    c0 = int(round(c - OBJ / 2))
    light = 0.5 * (colour + 1.0)  # halfway to white
    for i in range(OBJ):
        for j in range(OBJ):
            rr, cc = r0 + i, c0 + j
            if 0 <= rr < s and 0 <= cc < s:
                img[:, rr, cc] = light if (striped and i % 2) else colour


def _heat(s: int, r: float, c: float, sigma: float = 1.2) -> np.ndarray:
    yy, xx = np.mgrid[0:s, 0:s]
    return np.exp(-0.5 * ((yy - r) ** 2 + (xx - c) ** 2) / sigma**2)


def make_hoi_clips(n: int, *, frames: int = 8, size: int = 16, random_state: RandomState = None) -> HOIClips:
    """Draw ``n`` seeded HOI clips (see the module docstring).

    Parameters
    ----------
    n : int
        Number of clips.
    frames : int
        Frames per clip ``T`` (>= 2).
    size : int
        Frame side ``S`` in pixels (>= 14, room for the person and the object).
    random_state : int, numpy.random.Generator or None

    Returns
    -------
    HOIClips
    """
    n = check_int(n, "n")
    t = check_int(frames, "frames", low=2)
    s = check_int(size, "size", low=14)
    rng = check_random_state(random_state)
    tau = np.linspace(0.0, 1.0, t)  # video frame times
    tau_a = np.linspace(0.0, 1.0, 4 * t)  # audio rate: 4x the video rate
    video = np.zeros((n, 3, t, s, s), np.float32)
    refs = np.zeros((n, 2, 3, s, s), np.float32)
    pose = np.zeros((n, 3, t, s, s), np.float32)
    kp = np.zeros((n, t, 2, 2), np.float32)
    env = np.zeros((n, t), np.float32)
    araw = np.zeros((n, 4 * t, AUDIO_DIM), np.float32)
    pcol = np.zeros((n, 3), np.float32)
    ocol = np.zeros((n, 3), np.float32)
    striped = np.zeros(n, bool)
    for i in range(n):
        pc, oc = _bright_colour(rng), _bright_colour(rng)
        st = bool(rng.random() < 0.5)
        side = 1.0 if rng.random() < 0.5 else -1.0  # object in the right or the left hand
        e_fun = rng  # same generator, sequential draws
        e_a = _envelope(e_fun, tau_a)  # [4T]
        e_v = np.interp(tau, tau_a, e_a)  # [T] at the video frames
        # pose track: the person drifts, the object swings beside it
        half_w = (PERSON_W + OBJ) / 2
        r_lo, r_hi = PERSON_H / 2, s - PERSON_H / 2
        r_start = rng.uniform(r_lo, r_hi)
        c_start = rng.uniform(PERSON_W / 2 + (OBJ if side < 0 else 0) + 0.5, s - PERSON_W / 2 - (OBJ if side > 0 else 0) - 0.5)
        vr, vc = rng.uniform(-0.4, 0.4, 2)
        amp, ph = rng.uniform(0.8, 2.0), rng.uniform(0, 2 * np.pi)
        for f in range(t):
            pr = float(np.clip(r_start + vr * f, r_lo, r_hi))
            pcc = float(
                np.clip(c_start + vc * f, PERSON_W / 2 + (OBJ if side < 0 else 0), s - PERSON_W / 2 - (OBJ if side > 0 else 0))
            )
            orr = float(np.clip(pr + 1.0 + amp * np.sin(2 * np.pi * f / t + ph), OBJ / 2, s - OBJ / 2))
            occ = pcc + side * half_w
            img = np.zeros((3, s, s), np.float32)
            _paint_object(img, orr, occ, oc, st)
            _paint_person(img, pr, pcc, pc, MOUTH_MAX * float(e_v[f]))
            video[i, :, f] = img
            kp[i, f] = [[pr, pcc], [orr, occ]]
            pose[i, 0, f] = _heat(s, pr, pcc)
            pose[i, 1, f] = _heat(s, orr, occ)
        r_img = np.zeros((3, s, s), np.float32)
        _paint_person(r_img, s / 2, s / 2, pc, 0.0)
        refs[i, 0] = r_img
        o_img = np.zeros((3, s, s), np.float32)
        _paint_object(o_img, s / 2, s / 2, oc, st)
        refs[i, 1] = o_img
        timbre = rng.normal(0.0, 1.0, AUDIO_DIM - 1)
        araw[i, :, 0] = np.log(e_a + 0.05) - np.log(0.55)  # log-energy, centred
        araw[i, :, 1:] = e_a[:, None] * timbre[None, :] + 0.1 * rng.normal(size=(4 * t, AUDIO_DIM - 1))
        env[i] = e_v
        pcol[i], ocol[i], striped[i] = pc, oc, st
    audio = window_audio_features(torch.from_numpy(araw), t)
    return HOIClips(
        torch.from_numpy(video), torch.from_numpy(refs), torch.from_numpy(pose), kp, env, araw, audio, pcol, ocol, striped
    )


def mouth_heights(video: torch.Tensor | np.ndarray) -> np.ndarray:
    """Mouth height per frame, in pixels: the dark area of each frame over the mouth width.

    A pixel's darkness is ``clip((-0.3 - mean_rgb) / 0.7, 0, 1)``: 1 for the black mouth,
    0 for the grey background and for every person or object colour (all have mean >= -0.3
    by construction of :func:`make_hoi_clips`).

    Parameters
    ----------
    video : Tensor or ndarray
        ``[n, 3, T, S, S]`` in ``[-1, 1]``.

    Returns
    -------
    ndarray ``[n, T]``
    """
    v = np.asarray(video.detach().cpu().numpy() if isinstance(video, torch.Tensor) else video, dtype=np.float64)
    if v.ndim != 5 or v.shape[1] != 3:
        raise ValueError(f"video must be [n, 3, T, S, S], got shape {v.shape}")
    dark = np.clip((-0.3 - v.mean(axis=1)) / 0.7, 0.0, 1.0)  # [n, T, S, S]
    return dark.sum(axis=(2, 3)) / MOUTH_WIDTH
