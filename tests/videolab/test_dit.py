"""icml26.videolab.dit: the tiny flow-matching DiT and its conditioning options, against oracles."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from badinput import covers, rejects
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from icml26.videolab import dit as D

SMALL = dict(in_channels=3, patch=4, dim=32, depth=2, heads=4)


def _cond(b=2, t=4, s=8, r=2, w=5, da=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    return D.DiTConditions(
        refs=torch.randn(b, r, 3, s, s, generator=g),
        pose=torch.randn(b, 3, t, s, s, generator=g),
        audio=torch.randn(b, t, w, da, generator=g),
    )


def test_patchify_round_trip_and_shapes():
    m = D.TinyDiT(D.DiTConfig(**SMALL))
    x = torch.randn(2, 3, 4, 8, 12)
    assert torch.equal(m._unpatchify(m._patchify(x), 4, 8, 12), x)
    assert m(x, torch.rand(2)).shape == x.shape


def test_unconditional_on_arbitrary_latent_shapes():
    m = D.TinyDiT(D.DiTConfig(in_channels=6, patch=1, dim=16, depth=1, heads=2))
    for shape in [(1, 6, 1, 2, 2), (3, 6, 5, 3, 4)]:
        assert m(torch.randn(shape), 0.5).shape == shape


def test_loss_matches_the_formula_with_fixed_draws():
    m = D.TinyDiT(D.DiTConfig(**SMALL), random_state=1)
    with torch.no_grad():
        for p in m.head.parameters():
            p.normal_()
    x, eps, t = torch.randn(2, 3, 4, 8, 8), torch.randn(2, 3, 4, 8, 8), torch.tensor([0.2, 0.9])
    xt = (1 - t.view(2, 1, 1, 1, 1)) * x + t.view(2, 1, 1, 1, 1) * eps
    want = ((m(xt, t) - (eps - x)) ** 2).mean()
    assert torch.allclose(D.flow_matching_loss(m, x, t=t, noise=eps), want)


def test_euler_sampler_reaches_the_point_mass_exactly():
    """For data = a point mass at mu the exact velocity is (x_t - mu) / t; Euler lands on mu."""
    mu = torch.randn(1, 2, 3, 4, 4)

    class Oracle(D.TinyDiT):
        def forward(self, x_t, t, cond=None):
            return (x_t - mu) / t.view(-1, 1, 1, 1, 1)

    out = D.euler_sample(
        Oracle(D.DiTConfig(in_channels=2, patch=2, dim=8, depth=1, heads=2)), (1, 2, 3, 4, 4), steps=5, random_state=0
    )
    assert torch.allclose(out, mu, atol=1e-5)


def test_training_reduces_the_loss_and_is_reproducible():
    x = torch.zeros(4, 3, 2, 4, 4)
    x[:, 0] = 0.8

    def run():
        m = D.TinyDiT(D.DiTConfig(in_channels=3, patch=2, dim=16, depth=1, heads=2), random_state=0)
        return D.train_flow_matching(m, lambda i: (x, None), 60, lr=5e-3, random_state=0, desc="test")

    a, b = run(), run()
    assert a == b
    assert np.mean(a[-10:]) < 0.7 * np.mean(a[:10])
    m = D.TinyDiT(D.DiTConfig(in_channels=3, patch=2, dim=16, depth=1, heads=2), random_state=0)
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    D.train_flow_matching(m, lambda i: (x, None), 4, optimizer=opt, schedule="cosine", show_progress=False)
    assert opt.param_groups[0]["lr"] == pytest.approx(0.05 * (1 + np.cos(np.pi * 3 / 4)))


def test_attention_matches_torch_multihead_attention():
    torch.manual_seed(0)
    att = D._Attention(16, 4)
    ref = nn.MultiheadAttention(16, 4, batch_first=True)
    with torch.no_grad():
        ref.in_proj_weight.copy_(torch.cat([att.q.weight, att.kv.weight]))
        ref.in_proj_bias.copy_(torch.cat([att.q.bias, att.kv.bias]))
        ref.out_proj.weight.copy_(att.out.weight)
        ref.out_proj.bias.copy_(att.out.bias)
    x, c = torch.randn(2, 7, 16), torch.randn(2, 5, 16)
    assert torch.allclose(att(x, c), ref(x, c, c, need_weights=False)[0], atol=1e-5)


def test_glca_is_frame_local_and_global_is_not():
    torch.manual_seed(0)
    cond = _cond()
    x = torch.randn(2, 3, 4, 8, 8)
    for mode, local in (("glca", True), ("global", False)):
        m = D.TinyDiT(D.DiTConfig(**SMALL, audio=mode, gate_init=1.0), random_state=0)
        with torch.no_grad():
            m.head.weight.normal_()
        base = m(x, 0.5, cond)
        a2 = cond.audio.clone()
        a2[:, 2] += 3.0
        moved = (m(x, 0.5, D.DiTConditions(audio=a2)) - base).abs().amax(dim=(0, 1, 3, 4))  # per frame
        if local:
            # one block: only frame 2 can change (self-attention spreads it in deeper models)
            m1 = D.TinyDiT(D.DiTConfig(**{**SMALL, "depth": 1}, audio=mode, gate_init=1.0), random_state=0)
            with torch.no_grad():
                m1.head.weight.normal_()
                for blk in m1.blocks:
                    blk.attn.out.weight.zero_()
                    blk.attn.out.bias.zero_()
            d1 = (m1(x, 0.5, D.DiTConditions(audio=a2)) - m1(x, 0.5, cond)).abs().amax(dim=(0, 1, 3, 4))
            assert d1[2] > 1e-4 and torch.all(d1[[0, 1, 3]] < 1e-6)
        else:
            assert torch.all(moved > 1e-4)


def test_glca_equals_global_on_one_frame_and_gate_starts_at_init():
    cond = _cond(t=1)
    x = torch.randn(2, 3, 1, 8, 8)
    a = D.TinyDiT(D.DiTConfig(**SMALL, audio="glca", gate_init=0.3), random_state=0)
    b = D.TinyDiT(D.DiTConfig(**SMALL, audio="global", gate_init=0.3), random_state=0)
    b.load_state_dict(a.state_dict())
    with torch.no_grad():
        a.head.weight.normal_()
        b.head.weight.copy_(a.head.weight)
    assert torch.allclose(a(x, 0.3, cond), b(x, 0.3, cond), atol=1e-4)
    g = D.TinyDiT(D.DiTConfig(**SMALL, audio="glca")).gates()
    assert set(g) == {0, 1} and all(torch.all(v == 1e-5) for v in g.values())


def test_audio_mask_zero_removes_the_audio():
    m = D.TinyDiT(D.DiTConfig(**SMALL, audio="glca", gate_init=1.0), random_state=0)
    with torch.no_grad():
        m.head.weight.normal_()
    x, c1, c2 = torch.randn(2, 3, 4, 8, 8), _cond(seed=1), _cond(seed=2)
    off = torch.zeros(2)
    o1 = m(x, 0.5, D.DiTConditions(audio=c1.audio, audio_mask=off))
    o2 = m(x, 0.5, D.DiTConditions(audio=c2.audio, audio_mask=off))
    assert torch.equal(o1, o2)


def test_channel_references_are_pseudo_frames():
    m = D.TinyDiT(D.DiTConfig(**SMALL, refs="channel", pose=True), random_state=0)
    cond, x = _cond(), torch.randn(2, 3, 4, 8, 8)
    tl = m.timeline(x, cond)
    assert tl.shape == (2, 3, 6, 8, 8)
    assert torch.equal(tl[:, :, :2], cond.refs.transpose(1, 2)) and torch.equal(tl[:, :, 2:], x)
    assert m.embed.in_features == (3 + 1 + 3) * 16  # noisy latents + mask + condition latents
    out = D.euler_sample(m, (2, 3, 4, 8, 8), cond, steps=2, random_state=0, return_pseudo=True)
    assert out.shape == (2, 3, 6, 8, 8)


def test_absent_references_build_no_pseudo_frames():
    """Oracle: a sample without references (A2V / T2V) behaves as on the authors' timeline, where no
    pseudo-frame exists: the same weights without reference slots give its real frames' velocity and loss."""
    kw = dict(**SMALL, pose=True, audio="glca", gate_init=1.0)
    m = D.TinyDiT(D.DiTConfig(**kw, refs="channel"), random_state=0)
    with torch.no_grad():
        m.head.weight.normal_()
        for blk in m.blocks:
            blk.ada.weight.normal_(std=0.1)
    bare = D.TinyDiT(D.DiTConfig(**kw, refs="none"), random_state=1)
    bare.load_state_dict(m.state_dict())
    cond = _cond()
    cond.ref_mask = torch.tensor([[0.0, 0.0], [1.0, 1.0]])  # sample 0: A2V-like, sample 1: with references
    cond.refs = cond.refs * cond.ref_mask[:, :, None, None, None]
    g = torch.Generator().manual_seed(3)
    x, noise, t = torch.randn(2, 3, 4, 8, 8, generator=g), torch.randn(2, 3, 6, 8, 8, generator=g), torch.tensor([0.3, 0.7])
    xt = (1 - t.view(2, 1, 1, 1, 1)) * m.timeline(x, cond) + t.view(2, 1, 1, 1, 1) * noise
    with torch.no_grad():
        v = m(xt, t, cond)
        v_bare = bare(xt[:1, :, 2:], t[:1], cond.index(slice(0, 1)))
        assert torch.allclose(v[:1, :, 2:], v_bare, atol=1e-5)
        xt2 = xt.clone()
        xt2[:, :, :2] = 5.0  # whatever sits in the absent pseudo-frames is never read
        assert torch.allclose(m(xt2, t, cond)[:1, :, 2:], v[:1, :, 2:], atol=1e-6)
        assert not torch.allclose(m(xt2, t, cond)[1:, :, 2:], v[1:, :, 2:], atol=1e-3)  # present ones are
        one = cond.index(slice(0, 1))
        got = D.flow_matching_loss(m, x[:1], one, t=t[:1], noise=noise[:1])
        want = D.flow_matching_loss(bare, x[:1], one, t=t[:1], noise=noise[:1, :, 2:])
        assert torch.allclose(got, want, atol=1e-6)
        old = D.TinyDiT(D.DiTConfig(**kw, refs="channel", absent_refs="zeros"), random_state=0)
        old.load_state_dict(m.state_dict())
        assert not torch.allclose(old(xt2, t, cond)[:1, :, 2:], v[:1, :, 2:], atol=1e-3)  # zero frames are read
        assert m.loss_weights(x, cond)[:, 0, :, 0, 0].tolist() == [[0, 0, 1, 1, 1, 1], [1] * 6]


def test_cross_references_read_the_reference_tokens():
    m = D.TinyDiT(D.DiTConfig(**SMALL, refs="cross"), random_state=0)
    with torch.no_grad():
        m.head.weight.normal_()
    x, c1, c2 = torch.randn(2, 3, 4, 8, 8), _cond(seed=1), _cond(seed=2)
    assert not torch.allclose(m(x, 0.5, c1), m(x, 0.5, c2))
    assert m.n_pseudo == 0


def test_seeded_initialisation():
    a, b = D.TinyDiT(D.DiTConfig(**SMALL), random_state=3), D.TinyDiT(D.DiTConfig(**SMALL), random_state=3)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))


# ----------------------------------------------------------------------------- bad input
@covers("videolab.dit.DiTConfig")
@settings(max_examples=20, deadline=None, derandomize=True)
@given(
    st.sampled_from(
        [
            dict(dim=30, heads=4),
            dict(refs="tokens"),
            dict(audio="local"),
            dict(patch=0),
            dict(audio_layers=(5,)),
            dict(mlp_ratio=-1.0),
            dict(pose="yes"),
            dict(absent_refs="skip"),
        ]
    )
)
def test_bad_configs_are_rejected(kw):
    rejects(D.DiTConfig, **kw)


@covers("videolab.dit.TinyDiT", "videolab.dit.DiTConditions")
def test_bad_inputs_to_the_model():
    rejects(D.TinyDiT, "config")
    m = D.TinyDiT(D.DiTConfig(**SMALL, refs="channel", audio="glca", pose=True))
    x = torch.randn(2, 3, 4, 8, 8)
    rejects(m.timeline, torch.randn(2, 3, 8, 8), _cond(), match="5-D")
    rejects(m.timeline, torch.randn(2, 4, 4, 8, 8), _cond(), match="channels")
    rejects(m.timeline, torch.randn(2, 3, 4, 6, 8), _cond(), match="divisible")
    rejects(m.timeline, x, D.DiTConditions(), match="refs")
    rejects(m.timeline, x, _cond(t=5), match="pose")  # pose of another length
    c = _cond()
    c.audio = torch.randn(2, 5, 5, 8)  # audio windows for 5 frames, video has 4
    rejects(m.timeline, x, c, match="audio")
    rejects(m.timeline, x, "cond", match="DiTConditions")


@covers(
    "videolab.dit.flow_matching_loss",
    "videolab.dit.flow_matching_step",
    "videolab.dit.train_flow_matching",
    "videolab.dit.euler_sample",
)
def test_bad_inputs_to_training_and_sampling():
    m = D.TinyDiT(D.DiTConfig(**SMALL))
    x = torch.randn(2, 3, 4, 8, 8)
    rejects(D.flow_matching_loss, nn.Linear(2, 2), x)
    rejects(D.flow_matching_loss, m, x, noise=torch.randn(2, 3, 5, 8, 8), t=torch.rand(2))
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    rejects(D.flow_matching_step, m, opt, x, clip=-1.0)
    rejects(D.train_flow_matching, m, lambda i: (x, None), -1)
    rejects(D.train_flow_matching, m, lambda i: (x, None), 1, lr=0.0)
    rejects(D.train_flow_matching, m, lambda i: (x, None), 1, schedule="linear")
    rejects(D.euler_sample, m, (2, 3, 4, 8), steps=2)
    rejects(D.euler_sample, m, (2, 3, 4, 8, 8), steps=0)
    rejects(D.euler_sample, nn.Linear(2, 2), (2, 3, 4, 8, 8))


@covers("videolab.dit.flow_matching_loss")
def test_flow_matching_loss_rejects_nan_videos_and_times_outside_the_unit_interval():
    m = D.TinyDiT(D.DiTConfig(**SMALL))
    x = torch.randn(2, 3, 4, 8, 8)
    bad = x.clone()
    bad[0, 0, 0, 0, 0] = float("nan")
    rejects(D.flow_matching_loss, m, bad, random_state=0, match="x .*NaN")
    rejects(D.flow_matching_loss, m, x, t=torch.tensor([0.5, 1.5]), random_state=0, match=r"t holds 1\.5.*\[0, 1\]")
    rejects(D.flow_matching_loss, m, x, t=torch.tensor([-0.1, 0.5]), random_state=0, match=r"\[0, 1\]")
    rejects(D.flow_matching_loss, m, x, t=torch.tensor([float("nan"), 0.5]), random_state=0, match=r"\[0, 1\]")
    rejects(D.flow_matching_loss, m, x, t=torch.rand(3), random_state=0, match="t has shape")
    rejects(D.flow_matching_loss, m, x, noise=torch.full_like(x, float("inf")), random_state=0, match="noise holds NaN")
    rejects(D.flow_matching_loss, m, x.numpy(), random_state=0, match="torch.Tensor")
    assert torch.isfinite(D.flow_matching_loss(m, x, t=torch.tensor([0.0, 1.0]), random_state=0))


def test_rejects_mismatched_time_shape():
    m = D.TinyDiT(D.DiTConfig(**SMALL))
    with pytest.raises(ValueError, match="t has shape"):
        m(torch.randn(2, 3, 4, 8, 8), torch.rand(3))


# --------------------------------------------------------------------------- the fast paths against their plain forms
def _torch_adamw_groups(model, lr, mult):
    audio = [p for n, p in model.named_parameters() if ".audio." in n or n.startswith("audio_")]
    ids = {id(p) for p in audio}
    return [{"params": [p for p in model.parameters() if id(p) not in ids], "lr": lr}, {"params": audio, "lr": lr * mult}]


def test_flat_adamw_equals_torch_adamw_bit_for_bit():
    """Odd sizes (vector tails), two groups, weight decay, a changing lr and a parameter without a gradient."""
    g = torch.Generator().manual_seed(0)
    shapes = [(3, 5), (7,), (16, 16), (33,), (1,)]
    ours = [nn.Parameter(torch.randn(s, generator=g)) for s in shapes]
    ref = [nn.Parameter(p.detach().clone()) for p in ours]
    groups = lambda ps: [{"params": ps[:3], "lr": 0.05}, {"params": ps[3:], "lr": 0.2}]  # noqa: E731
    opt = D._FlatAdamW(groups(ours), weight_decay=0.01)
    topt = torch.optim.AdamW(groups(ref), lr=0.05, weight_decay=0.01, foreach=False)
    assert not D._FlatAdamW.supports(
        [{"params": [nn.Parameter(torch.zeros(2)), nn.Parameter(torch.zeros(2, dtype=torch.float64))]}]
    )
    for k in range(12):
        for o in (opt, topt):
            o.zero_grad(set_to_none=True)
            for grp in o.param_groups:
                grp["lr"] *= 0.9
        for j, (a, b) in enumerate(zip(ours, ref)):
            if k in (3, 4) and j == 1:
                continue  # no gradient: torch skips the parameter and its step count
            gr = torch.randn(a.shape, generator=g) * 10 ** float(torch.randint(-6, 2, (), generator=g))
            a.grad, b.grad = gr.clone(), gr.clone()
        opt.step()
        topt.step()
        for a, b in zip(ours, ref):
            assert torch.equal(a.detach(), b.detach()), k
    base = ours[0].untyped_storage().data_ptr()
    assert all(p.untyped_storage().data_ptr() == base for p in ours[:3])  # views into one flat buffer
    before = [p.detach().clone() for p in ours]
    opt.release()
    assert len({p.untyped_storage().data_ptr() for p in ours}) == len(ours)
    assert all(torch.equal(a.detach(), b) for a, b in zip(ours, before))


def test_train_flow_matching_default_optimizer_equals_torch_adamw():
    cfg = D.DiTConfig(**SMALL, refs="channel", pose=True, audio="glca")
    x = torch.randn(6, 3, 4, 8, 8, generator=torch.Generator().manual_seed(1))
    cond = _cond(b=6, seed=2)
    batches = lambda i: (x[i % 3 : i % 3 + 3], cond.index(slice(i % 3, i % 3 + 3)))  # noqa: E731
    kw = dict(lr=3e-3, audio_lr_mult=4.0, weight_decay=0.05, schedule="cosine", random_state=3, show_progress=False)
    a = D.TinyDiT(cfg, random_state=4)
    la = D.train_flow_matching(a, batches, 8, **kw)
    b = D.TinyDiT(cfg, random_state=4)
    lb = D.train_flow_matching(
        b, batches, 8, optimizer=torch.optim.AdamW(_torch_adamw_groups(b, 3e-3, 4.0), weight_decay=0.05), **kw
    )
    assert la == lb
    for (n, p), q in zip(a.state_dict().items(), b.state_dict().values()):
        assert torch.equal(p, q), n
    assert len({p.untyped_storage().data_ptr() for p in a.parameters()}) == len(list(a.parameters()))  # released


def test_cached_position_tables_equal_fresh_ones():
    cpu = torch.device("cpu")
    for t, h, w, d, t0 in [(10, 4, 4, 64, 0), (3, 2, 5, 48, 2), (1, 4, 4, 64, 0)]:
        assert torch.equal(D._pos_table(t, h, w, d, t0, cpu), D._pos_embed_3d(t, h, w, d, t0))
        assert D._pos_table(t, h, w, d, t0, cpu) is D._pos_table(t, h, w, d, t0, cpu)
    pos = D._pos_embed_3d(10, 4, 4, 64).reshape(1, 160, 64)
    shifted = torch.cat([pos[:, :32], D._pos_embed_3d(8, 4, 4, 64).reshape(1, 128, 64)], dim=1)
    assert torch.equal(D._shifted_pos_table(10, 2, 4, 4, 64, cpu), shifted)
    for t0 in (0, 2):
        pe = D._pos_embed_3d(8, 1, 1, 64, t0=t0)[:, 0].clone()
        pe[:, 64 - 2 * (2 * ((64 // 3) // 2)) :] = 0.0
        assert torch.equal(D._frame_code(8, 64, t0, cpu), pe)
    half = 13
    assert torch.equal(D._freqs(half, cpu), torch.exp(-np.log(10000.0) * torch.arange(half, dtype=torch.float32) / half))
    # a forward pass (with absent references: the shifted tables) leaves the cached tables untouched
    m = D.TinyDiT(D.DiTConfig(**SMALL, refs="channel", audio="glca"))
    c = _cond(b=2, t=4, s=8)
    c.ref_mask = torch.tensor([[1.0, 1.0], [0.0, 0.0]])
    m(m.timeline(torch.randn(2, 3, 4, 8, 8), c), torch.rand(2), c).sum().backward()
    assert torch.equal(D._pos_table(6, 2, 2, 32, 0, cpu), D._pos_embed_3d(6, 2, 2, 32))
    assert torch.equal(D._shifted_pos_table(6, 2, 2, 2, 32, cpu)[:, 8:], D._pos_embed_3d(4, 2, 2, 32).reshape(1, 16, 32))


def _channel_input_zero_filled(model, x_t, cond):
    """The channel path's input as first written: y zero-filled, then each segment written."""
    cfg = model.config
    b, c, tt, hh, ww = x_t.shape
    r = cfg.n_pseudo
    ymask, ylat = x_t.new_zeros(b, 1, tt, hh, ww), x_t.new_zeros(b, c, tt, hh, ww)
    if cfg.refs == "channel":
        ymask[:, :, :r] = cond.ref_mask[:, None, :, None, None]
        ylat[:, :, :r] = cond.refs.transpose(1, 2) * cond.ref_mask[:, None, :, None, None]
    if cfg.pose:
        ymask[:, :, r:] = cond.pose_mask.view(b, 1, 1, 1, 1).expand(b, 1, tt - r, hh, ww)
        ylat[:, :, r:] = cond.pose * cond.pose_mask.view(b, 1, 1, 1, 1)
    return torch.cat([x_t, ymask, ylat], dim=1)


@pytest.mark.parametrize("opts", [dict(refs="channel", pose=True), dict(refs="channel"), dict(pose=True)])
def test_channel_input_equals_the_zero_filled_form(opts):
    m = D.TinyDiT(D.DiTConfig(**SMALL, **opts))
    c = _cond(b=3, t=4, s=8, seed=5)
    c.ref_mask = torch.tensor([[1.0, 1.0], [1.0, 0.0], [0.0, 0.0]])
    c.pose_mask = torch.tensor([1.0, 0.0, 1.0])
    x = torch.randn(3, 3, 4, 8, 8)
    xt = m.timeline(x, c) + 0.1
    cond = m.check_inputs(xt, c, on_timeline=True)
    got, want = m._channel_input(xt, cond), _channel_input_zero_filled(m, xt, cond)
    assert got.shape == (3, 7, 4 + m.n_pseudo, 8, 8)
    assert torch.equal(got, want)
