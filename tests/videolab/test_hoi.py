"""icml26.videolab.hoi: the HOI clip generator and OmniShow's audio windowing."""

from __future__ import annotations

import numpy as np
import torch
from badinput import covers, rejects
from hypothesis import given, settings
from hypothesis import strategies as st

from icml26.videolab import hoi as H


def _windows_by_loop(feats: torch.Tensor, n_frames: int, w: int, s: int) -> torch.Tensor:
    """The authors' algorithm written as a loop: interpolate, window each step with edge replication, stride."""
    t_video = s * (n_frames - 1) + 1
    x = torch.nn.functional.interpolate(feats.transpose(1, 2), size=t_video, mode="linear", align_corners=True).transpose(1, 2)
    out = []
    for c in range(0, t_video, s):
        out.append(torch.stack([x[:, min(max(c + k, 0), t_video - 1)] for k in range(-(w // 2), w // 2 + 1)], dim=1))
    return torch.stack(out, dim=1)


def test_windowing_matches_the_loop_and_linear_features():
    feats = torch.randn(3, 32, 5)
    got = H.window_audio_features(feats, 8)
    assert got.shape == (3, 8, 5, 5)
    assert torch.allclose(got, _windows_by_loop(feats, 8, 5, 4))
    # a feature linear in time is interpolated exactly: window t of frame f holds time (4f + k) / 28
    lin = torch.linspace(0, 1, 32).view(1, 32, 1)
    win = H.window_audio_features(lin, 8)[0, :, :, 0]
    want = torch.tensor([[min(max(4 * f + k, 0), 28) / 28 for k in range(-2, 3)] for f in range(8)], dtype=torch.float32)
    assert torch.allclose(win, want, atol=1e-6)


def test_mouth_height_is_the_envelope_and_clips_are_seeded():
    c = H.make_hoi_clips(40, random_state=0)
    q = np.round(H.MOUTH_MAX * c.envelope * H.MOUTH_WIDTH) / H.MOUTH_WIDTH
    assert np.allclose(H.mouth_heights(c.video), q)
    d = H.make_hoi_clips(40, random_state=0)
    assert torch.equal(c.video, d.video) and np.array_equal(c.audio_raw, d.audio_raw)
    assert c.video.shape == (40, 3, 8, 16, 16) and c.audio_raw.shape == (40, 32, 8) and c.audio.shape == (40, 8, 5, 8)
    assert float(c.video.min()) >= -1 and float(c.video.max()) <= 1
    assert (c.envelope.std(axis=1) > 0.05).all()  # every clip talks


def test_references_hold_the_identity_colours():
    c = H.make_hoi_clips(10, random_state=1)
    for i in range(10):
        px = c.refs[i, 0].reshape(3, -1).T.numpy()
        fg = px[np.linalg.norm(px, axis=1) > 0.35]
        assert np.allclose(fg, c.person_color[i], atol=1e-6)
    sub = c.take(np.array([3, 1]))
    assert torch.equal(sub.video[1], c.video[1]) and len(sub) == 2
    cond = c.conditions(audio=False)
    assert float(cond.audio_mask.sum()) == 0 and float(cond.ref_mask.sum()) == 20


@covers("videolab.hoi.window_audio_features")
@settings(max_examples=20, deadline=None, derandomize=True)
@given(st.sampled_from([("rank", 8, 5, 4), ("ok", 0, 5, 4), ("ok", 8, 4, 4), ("ok", 8, 5, 0), ("short", 8, 5, 4)]))
def test_bad_windowing(case):
    kind, t, w, s = case
    feats = {"rank": torch.randn(32, 8), "ok": torch.randn(2, 32, 8), "short": torch.randn(2, 1, 8)}[kind]
    rejects(H.window_audio_features, feats, t, window=w, stride=s)


@covers("videolab.hoi.make_hoi_clips", "videolab.hoi.mouth_heights", "videolab.hoi.HOIClips")
def test_bad_generator_input():
    rejects(H.make_hoi_clips, 0)
    rejects(H.make_hoi_clips, 2, frames=1)
    rejects(H.make_hoi_clips, 2, size=8)
    rejects(H.make_hoi_clips, 2, random_state=-1)
    rejects(H.mouth_heights, np.zeros((2, 4, 8, 16, 16)))
    rejects(H.mouth_heights, np.zeros((3, 8, 16, 16)))
