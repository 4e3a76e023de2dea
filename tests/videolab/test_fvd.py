"""The Fréchet distance against its closed form and scipy; the FVD stand-in's classifier; bad input."""

import numpy as np
import pytest
import torch
from badinput import covers, rejects
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import linalg

from icml26.videolab import fvd, sprites


def test_closed_form_on_commuting_gaussians():
    rng = np.random.default_rng(0)
    mu1, mu2 = rng.normal(size=5), rng.normal(size=5)
    a, b = rng.uniform(0.1, 3, 5), rng.uniform(0.1, 3, 5)
    exact = np.sum((mu1 - mu2) ** 2) + np.sum((np.sqrt(a) - np.sqrt(b)) ** 2)
    assert fvd.frechet_distance(mu1, np.diag(a), mu2, np.diag(b)) == pytest.approx(exact, rel=1e-10)
    q, _ = np.linalg.qr(rng.normal(size=(5, 5)))  # a common rotation keeps them commuting
    assert fvd.frechet_distance(mu1, q @ np.diag(a) @ q.T, mu2, q @ np.diag(b) @ q.T) == pytest.approx(exact, rel=1e-8)


def test_agrees_with_scipy_sqrtm_on_random_features():
    rng = np.random.default_rng(1)
    f1, f2 = rng.normal(size=(200, 8)), rng.normal(size=(150, 8)) @ rng.normal(size=(8, 8)) + 0.5
    (m1, s1), (m2, s2) = fvd.gaussian_fit(f1), fvd.gaussian_fit(f2)
    ref = np.sum((m1 - m2) ** 2) + np.trace(s1 + s2 - 2 * np.real(linalg.sqrtm(s1 @ s2)))
    assert fvd.feature_frechet_distance(f1, f2) == pytest.approx(ref, rel=1e-8)
    assert fvd.feature_frechet_distance(f1, f1) == pytest.approx(0.0, abs=1e-8)


def test_classifier_learns_sprites_and_fd_separates_blur():
    torch.manual_seed(0)
    tr = sprites.make_sprite_clips(300, random_state=0)
    te = sprites.make_sprite_clips(100, random_state=1)
    m = fvd.train_video_classifier(tr.videos, tr.labels, epochs=3, random_state=0)
    assert fvd.classifier_accuracy(m, te.videos, te.labels) > 0.4  # chance is 0.25
    conf, hist = fvd.classifier_confidence(m, te.videos)
    assert 0.25 <= conf <= 1 and hist.sum() == pytest.approx(1.0)
    assert fvd.video_features(m, te.videos).shape == (100, 32)
    dim = np.clip(te.videos * 0.3, 0, 1)
    assert fvd.video_frechet_distance(m, te.videos, dim) > fvd.video_frechet_distance(m, te.videos, te.videos)


def test_sprites_are_seeded_and_bounce_inside():
    a = sprites.make_sprite_clips(20, random_state=3)
    b = sprites.make_sprite_clips(20, random_state=3)
    assert np.array_equal(a.videos, b.videos)
    assert a.videos.shape == (20, 3, 8, 16, 16) and a.videos.min() >= 0 and a.videos.max() <= 1
    assert (a.videos.reshape(20, -1).max(1) > 0).all()  # the sprite is always in the frame
    assert set(np.unique(a.labels)) <= {0, 1, 2, 3}


@covers("videolab.fvd.frechet_distance", "videolab.fvd.gaussian_fit", "videolab.fvd.feature_frechet_distance")
@settings(max_examples=20, deadline=None, derandomize=True)
@given(d=st.integers(1, 4))
def test_fd_bad_inputs(d):
    rejects(fvd.frechet_distance, np.zeros(d), np.eye(d), np.zeros(d + 1), np.eye(d + 1))
    asym = np.eye(d + 1)
    asym[0, -1] = 1.0
    rejects(fvd.frechet_distance, np.zeros(d + 1), asym, np.zeros(d + 1), np.eye(d + 1), match="symmetric")
    rejects(fvd.gaussian_fit, np.zeros((1, d)))
    rejects(fvd.feature_frechet_distance, np.zeros((5, d)), np.zeros((5, d + 1)))


@covers(
    "videolab.fvd.VideoClassifier3D",
    "videolab.fvd.train_video_classifier",
    "videolab.fvd.video_features",
    "videolab.fvd.video_frechet_distance",
    "videolab.fvd.classifier_accuracy",
    "videolab.fvd.classifier_confidence",
)
def test_classifier_bad_inputs():
    rejects(fvd.VideoClassifier3D, n_classes=1)
    x = np.zeros((4, 3, 8, 16, 16), np.float32)
    rejects(fvd.train_video_classifier, np.zeros((4, 8, 3, 16, 16)), np.zeros(4, int))
    rejects(fvd.train_video_classifier, x, np.zeros(3, int))
    m = fvd.VideoClassifier3D()
    rejects(fvd.video_features, "model", x)
    rejects(fvd.video_frechet_distance, m, x, np.full_like(x, np.nan))
    rejects(fvd.classifier_accuracy, m, x, np.zeros(5, int))
    rejects(fvd.classifier_confidence, m, x[:, :2])


@covers("videolab.fvd.frechet_distance")
def test_fd_rejects_a_covariance_that_is_not_psd():
    # symmetric but indefinite: eigenvalues 3 and -1; the old code returned max(negative, 0) = 0.0
    bad = np.array([[1.0, 2.0], [2.0, 1.0]])
    rejects(fvd.frechet_distance, np.zeros(2), bad, np.zeros(2), bad, match="positive semi-definite")
    rejects(fvd.frechet_distance, np.zeros(2), np.eye(2), np.zeros(2), -np.eye(2), match="sigma2.*positive semi-definite")
    # round-off below zero on a valid (rank-deficient) covariance is still accepted
    f = np.random.default_rng(0).normal(size=(3, 6))
    assert fvd.feature_frechet_distance(f, f) == pytest.approx(0.0, abs=1e-8)


@covers("videolab.fvd.train_video_classifier", "videolab.fvd.classifier_accuracy")
def test_float_labels_are_not_truncated():
    x = np.zeros((4, 3, 8, 16, 16), np.float32)
    rejects(fvd.train_video_classifier, x, np.array([0.0, 0.5, 1.0, 1.2]), epochs=1, match="0.5.*truncated")
    rejects(fvd.train_video_classifier, x, np.array([0.0, np.nan, 1.0, 1.0]), epochs=1, match="integer")
    rejects(fvd.train_video_classifier, x, np.array(["a", "b", "c", "d"]), epochs=1, match="integer")
    m = fvd.VideoClassifier3D()
    rejects(fvd.classifier_accuracy, m, x, np.array([0.0, 0.5, 1.0, 1.2]), match="0.5")
    rejects(fvd.classifier_accuracy, m, x, np.array([0, -1, 1, 1]), match="non-negative")
    # integral floats are class indices as they are
    assert 0.0 <= fvd.classifier_accuracy(m, x, np.array([0.0, 1.0, 2.0, 3.0])) <= 1.0


@covers(
    "videolab.sprites.make_sprite_clips",
    "videolab.sprites.load_video_array",
    "videolab.sprites.SpriteClips",
    "videolab.sprites.sprite_templates",
)
def test_sprites_bad_inputs(tmp_path):
    rejects(sprites.make_sprite_clips, 0)
    rejects(sprites.make_sprite_clips, 2, size=4)
    rejects(sprites.make_sprite_clips, 2, speed=(2.0, 1.0))
    rejects(sprites.load_video_array, "clips.mp4")
    p = tmp_path / "bad.npy"
    np.save(p, np.zeros((2, 8, 3, 16, 16)))
    rejects(sprites.load_video_array, str(p))
    assert len(sprites.sprite_templates()) == len(sprites.SPRITE_CLASSES)


def test_shuffle_frames_permutes_each_clip_in_time_only():
    x = torch.as_tensor(sprites.make_sprite_clips(20, random_state=0).videos)
    y = fvd.shuffle_frames(x, random_state=1)
    assert torch.equal(y, fvd.shuffle_frames(x, random_state=1))
    for a, b in zip(x, y):
        match = [[torch.equal(b[:, i], a[:, j]) for j in range(8)] for i in range(8)]
        assert all(any(r) for r in match)  # every frame of the result is a frame of the clip
        assert not torch.equal(a, b) or all(torch.equal(a[:, 0], a[:, k]) for k in range(8))  # order changed
    assert torch.allclose(y.sum(2), x.sum(2))  # same frames, so the same per-pixel totals


def test_frame_order_head_makes_the_distance_see_motion():
    """Shuffling frames in time (motion destroyed, appearance intact) must raise the FD well above the
    real-set floor, and weigh more against halving the brightness than with class-only features."""
    tr = sprites.make_sprite_clips(500, random_state=0)
    a = sprites.make_sprite_clips(150, random_state=1).videos
    b = sprites.make_sprite_clips(150, random_state=2).videos
    shuffled, dim = fvd.shuffle_frames(b, random_state=3).numpy(), 0.5 * b
    ratios = {}
    for motion in (True, False):
        m = fvd.train_video_classifier(tr.videos, tr.labels, epochs=4, motion_task=motion, random_state=0)
        floor, shuf, half = (fvd.video_frechet_distance(m, a, v) for v in (b, shuffled, dim))
        if motion:
            assert m.motion is not None and shuf > 10 * floor
        ratios[motion] = shuf / half
    assert ratios[True] > 2 * ratios[False]


@covers("videolab.fvd.shuffle_frames", "videolab.fvd.features_and_probs")
def test_shuffle_and_features_bad_inputs():
    rejects(fvd.shuffle_frames, np.zeros((2, 3, 1, 16, 16), np.float32), match="2 frames")
    rejects(fvd.shuffle_frames, np.zeros((2, 8, 16, 16), np.float32))
    rejects(fvd.features_and_probs, "model", np.zeros((2, 3, 8, 16, 16), np.float32))
    rejects(fvd.features_and_probs, fvd.VideoClassifier3D(), np.full((2, 3, 8, 16, 16), np.nan, np.float32))
    rejects(fvd.train_video_classifier, np.zeros((4, 3, 8, 16, 16), np.float32), np.zeros(4, int), motion_task=1)
    rejects(
        fvd.train_video_classifier,
        np.zeros((4, 3, 8, 16, 16), np.float32),
        np.zeros(4, int),
        motion_task=True,
        motion_weight=0.0,
        match="motion_weight",
    )
    rejects(fvd.VideoClassifier3D, motion_head="yes")
