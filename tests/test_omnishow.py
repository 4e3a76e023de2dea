"""icml26.omnishow: stand-in metrics, task mixtures, weight interpolation, the training recipe."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from badinput import covers, rejects
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from icml26 import omnishow as O
from icml26.videolab.dit import DiTConfig, TinyDiT
from icml26.videolab.hoi import make_hoi_clips

CFG = DiTConfig(patch=4, dim=16, depth=1, heads=2, refs="channel", pose=True, audio="glca")


@pytest.fixture(scope="module")
def clips():
    return make_hoi_clips(12, random_state=0)


def test_sync_correlation_matches_scipy_and_finds_the_lag():
    rng = np.random.default_rng(0)
    e = rng.random((5, 8))
    h = 2 * e + 0.1 * rng.random((5, 8))
    got = O.mouth_sync(h, e)
    assert np.allclose(got["corr"], [stats.pearsonr(a, b)[0] for a, b in zip(h, e)])
    assert np.all(got["lag"] == 0)
    late = np.concatenate([e[:, :1], e[:, :-1]], axis=1)  # the mouth trails the audio by one frame
    assert np.all(O.mouth_sync(late, e)["lag"] == 1)
    flat = O.mouth_sync(np.ones((5, 8)), e)
    assert np.all(flat["corr"] == 0) and np.all(flat["lag"] == 2)


def test_metrics_are_near_zero_on_real_clips_and_grow_when_wrong(clips):
    assert O.reference_colour_error(clips.video, clips).max() < 1e-4  # prototypes are rounded to 1e-4
    assert O.pose_keypoint_error(clips.video, clips).mean() < 1.0
    grey = torch.zeros_like(clips.video)
    assert O.reference_colour_error(grey, clips).min() > 0.5
    shifted = torch.roll(clips.video, shifts=3, dims=-1)
    assert O.pose_keypoint_error(shifted, clips).mean() > O.pose_keypoint_error(clips.video, clips).mean() + 1.5
    swapped = clips.video[:, [1, 2, 0]]
    assert O.reference_colour_error(swapped, clips).mean() > 0.2


def test_task_conditions_mask_what_a_task_lacks(clips):
    c = O.task_conditions(clips, ["A2V"] * 6 + ["RP2V"] * 6)
    assert torch.equal(c.audio_mask, torch.tensor([1.0] * 6 + [0.0] * 6))
    assert torch.equal(c.pose_mask, torch.tensor([0.0] * 6 + [1.0] * 6))
    assert float(c.refs[:6].abs().sum()) == 0 and float(c.audio[6:].abs().sum()) == 0
    b = O.task_batches(clips, 4, ["R2V", "RA2V"], random_state=3)
    x1, c1 = b(5)
    x2, c2 = b(5)
    assert torch.equal(x1, x2) and torch.equal(c1.audio, c2.audio) and x1.shape[0] == 4
    mb = O.mixture_batches([(clips.take(slice(0, 6)), "R2V"), (clips.take(slice(6, 12)), "A2V")], 32, random_state=0)
    _, cm = mb(0)
    assert torch.equal(cm.audio_mask + cm.ref_mask[:, 0], torch.ones(32))  # each clip is R2V or A2V
    assert 0 < float(cm.audio_mask.sum()) < 32


def test_interpolation_endpoints_and_audio_from_a2v():
    a, b = TinyDiT(CFG, random_state=1), TinyDiT(CFG, random_state=2)
    for lam, src in ((1.0, a), (0.0, b)):
        m = O.interpolate_models(a, b, lam)
        for (n, p), q in zip(m.state_dict().items(), src.state_dict().values()):
            if ".audio." in n or n.startswith("audio_"):
                assert torch.equal(p, b.state_dict()[n])
            else:
                assert torch.equal(p, q)
    half = O.interpolate_models(a, b, 0.5).state_dict()
    assert torch.allclose(half["embed.weight"], 0.5 * (a.state_dict()["embed.weight"] + b.state_dict()["embed.weight"]))


def test_recipe_and_scores_run(clips):
    out = O.decoupled_then_joint(
        lambda: TinyDiT(CFG, random_state=0),
        clips,
        clips,
        clips,
        stage_steps=2,
        joint_steps=2,
        lams=(0.3, 0.5),
        batch_size=2,
        pick_by=clips.take(slice(0, 4)),
    )
    assert set(out["val"]) == {0.3, 0.5} and len(out["models"]) == 1
    m = next(iter(out["models"].values()))
    s = O.score_hoi(m, clips.take(slice(0, 3)), "RA2V", steps=2)
    assert s["video"].shape == (3, 3, 8, 16, 16) and np.isfinite(s["colour"]) and np.isfinite(s["sync"])
    assert np.isfinite(O.heldout_velocity_loss(m, clips.take(slice(0, 3)), "RA2V", n_draws=1))


@covers("omnishow.mouth_sync")
@settings(max_examples=20, deadline=None, derandomize=True)
@given(st.sampled_from(["shape", "nan", "lag"]))
def test_bad_sync_input(kind):
    e = np.random.default_rng(0).random((3, 8))
    if kind == "shape":
        rejects(O.mouth_sync, e[:, :7], e)
    elif kind == "nan":
        h = e.copy()
        h[0, 0] = np.nan
        rejects(O.mouth_sync, h, e)
    else:
        rejects(O.mouth_sync, e, e, max_lag=7)


@covers(
    "omnishow.reference_colour_error",
    "omnishow.pose_keypoint_error",
    "omnishow.score_hoi",
    "omnishow.heldout_velocity_loss",
    "omnishow.task_conditions",
    "omnishow.task_batches",
    "omnishow.mixture_batches",
)
def test_bad_metric_and_task_input(clips):
    rejects(O.reference_colour_error, np.zeros((12, 4, 8, 16, 16)), clips)
    rejects(O.reference_colour_error, clips.video[:3], clips)
    rejects(O.pose_keypoint_error, clips.video * np.inf, clips)
    m = TinyDiT(CFG)
    rejects(O.score_hoi, m, clips, "X2V")
    rejects(O.score_hoi, "model", clips, "RA2V")
    rejects(O.heldout_velocity_loss, m, clips, "RA2V", n_draws=0)
    rejects(O.task_conditions, clips, ["R2V"] * 3)
    rejects(O.task_conditions, clips, "XYZ")
    rejects(O.task_batches, clips, 0, "R2V")
    rejects(O.task_batches, clips, 2, [])
    rejects(O.mixture_batches, [], 2)
    rejects(O.mixture_batches, [(clips, "R2V"), ("clips", "A2V")], 2)
    rejects(O.mixture_batches, [(clips, "Q2V")], 2)


@covers("omnishow.interpolate_models", "omnishow.decoupled_then_joint")
def test_bad_merge_input(clips):
    a = TinyDiT(CFG)
    rejects(O.interpolate_models, a, TinyDiT(DiTConfig(patch=4, dim=16, depth=1, heads=2)), 0.5)
    rejects(O.interpolate_models, a, a, 1.5)
    rejects(O.interpolate_models, a, "b", 0.5)
    rejects(O.decoupled_then_joint, lambda: a, clips, clips, clips, stage_steps=-1, joint_steps=1)
    rejects(O.decoupled_then_joint, lambda: a, clips, clips, clips, stage_steps=1, joint_steps=1, lams=())


def test_matched_mlp_ratio_equalises_the_parameter_counts():
    a = DiTConfig(patch=4, dim=16, depth=2, heads=2, refs="channel", pose=True, audio="glca")
    b = DiTConfig(patch=4, dim=16, depth=2, heads=2, refs="cross", pose=True, audio="glca")
    r = O.matched_mlp_ratio(a, b)
    wide = DiTConfig(**{**a.__dict__, "mlp_ratio": r})
    # the count is linear in the hidden width: exact up to the rounding of one hidden unit per block
    assert abs(O.n_parameters(wide) - O.n_parameters(b)) <= a.depth * (2 * a.dim + 1) / 2
    assert O.n_parameters(a) < O.n_parameters(b) and r > a.mlp_ratio
    assert O.matched_mlp_ratio(a, a) == a.mlp_ratio


def test_shuffled_audio_rolls_only_the_audio(clips):
    batches = O.task_batches(clips, 4, "RA2V", random_state=0)
    (v, c), (v2, c2) = batches(3), O.shuffled_audio(batches)(3)
    assert torch.equal(v, v2) and torch.equal(c.refs, c2.refs)
    assert torch.equal(c2.audio, c.audio.roll(1, 0)) and not torch.equal(c2.audio, c.audio)


def test_ablation_variants_do_not_share_random_streams(clips):
    """A variant's rows do not depend on which other variants run beside it (same batches, seeds)."""
    kw = dict(model=dict(patch=4, dim=16, depth=1, heads=2), steps=2, lr=1e-3, batch_size=2, euler=2)
    v = {"a": dict(refs="channel", audio="glca"), "b": dict(refs="cross", audio="glca")}
    test = clips.take(slice(0, 2))
    both = O.conditioning_ablation(v, clips, test, [0, 1], shuffled="a", **kw)
    alone = O.conditioning_ablation({"a": v["a"]}, clips, test, [0, 1], shuffled="a", **kw)
    drop = lambda rows: [{k: x for k, x in r.items() if k != "train_s"} for r in rows]  # noqa: E731
    assert drop([r for r in both["rows"] if r["variant"] == "a"]) == drop(alone["rows"])
    assert both["shuffled"] == alone["shuffled"] and len(both["rows"]) == 4


@covers(
    "omnishow.n_parameters",
    "omnishow.matched_mlp_ratio",
    "omnishow.shuffled_audio",
    "omnishow.conditioning_ablation",
    "omnishow.training_recipes",
)
def test_bad_experiment_input(clips):
    rejects(O.n_parameters, "cfg")
    rejects(O.matched_mlp_ratio, CFG, "cfg")
    rejects(
        O.matched_mlp_ratio,
        DiTConfig(patch=4, dim=16, depth=1, heads=2, refs="cross", audio="glca"),
        DiTConfig(patch=4, dim=16, depth=1, heads=2),
    )
    rejects(O.shuffled_audio, 3)
    kw = dict(model=dict(patch=4, dim=16, depth=1, heads=2), steps=1, lr=1e-3, batch_size=2, euler=1)
    rejects(O.conditioning_ablation, {}, clips, clips, [0], **kw)
    rejects(O.conditioning_ablation, {"a": {}}, clips, clips, [0], shuffled="b", **kw)
    rejects(O.conditioning_ablation, {"a": {}}, clips, "clips", [0], **kw)
    rejects(
        O.training_recipes,
        [0],
        "clips",
        model={},
        frames=4,
        size=16,
        n_plenty=2,
        n_scarce=2,
        pre_steps=1,
        stage_steps=1,
        joint_steps=1,
        lams=[0.5],
        batch_size=2,
        lr=1e-3,
        euler=1,
    )
    rejects(
        O.training_recipes,
        [0],
        clips,
        model={},
        frames=4,
        size=16,
        n_plenty=2,
        n_scarce=2,
        pre_steps=1,
        stage_steps=-1,
        joint_steps=1,
        lams=[0.5],
        batch_size=2,
        lr=1e-3,
        euler=1,
    )
