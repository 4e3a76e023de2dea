"""VideoMAETok: tubelets, masking, interpolative noise, the tokenizer, the generator hook, bad input."""

import numpy as np
import torch
from badinput import covers, rejects
from hypothesis import given, settings
from hypothesis import strategies as st

from icml26 import vmaetok as V
from icml26.videolab import sprites

SMALL = dict(dim=16, enc_depth=1, dec_depth=1, heads=2, latent_dim=4)


def test_patchify_roundtrip_and_order():
    x = torch.randn(2, 3, 8, 16, 16)
    tok = V.patchify_video(x)
    assert tok.shape == (2, 64, 96)
    assert torch.equal(V.unpatchify_video(tok, (3, 8, 16, 16)), x)
    assert torch.equal(tok[0, 0].reshape(3, 2, 4, 4), x[0, :, :2, :4, :4])  # first token: first tubelet


def test_interpolative_noise_formula():
    z, eps = torch.randn(3, 5, 4), torch.randn(3, 5, 4)
    tau = torch.tensor([0.0, 0.25, 1.0])
    out = V.interpolative_noise(z, 3.0, tau=tau, eps=eps)
    assert torch.allclose(out[0], z[0]) and torch.allclose(out[2], 3.0 * eps[2])
    assert torch.allclose(out[1], 0.75 * z[1] + 0.25 * 3.0 * eps[1])


def test_random_keep_counts():
    keep = V.random_keep(4, 64, 0.75, generator=torch.Generator().manual_seed(0))
    assert keep.shape == (4, 16)
    assert all(len(set(r.tolist())) == 16 for r in keep)


def test_full_mask_equals_unmasked_encoding_and_masking_shrinks_the_encoder():
    tok = V.VideoMAETok(random_state=0, **SMALL)
    x = torch.rand(2, 3, 8, 16, 16)
    with torch.no_grad():
        assert torch.allclose(tok.encode(x, torch.arange(64).expand(2, 64)), tok.encode(x), atol=1e-6)
        assert tok.encode(x, V.random_keep(2, 64, 0.75)).shape == (2, 16, 4)
    assert V.encoder_flops(64, 48, 2) / V.encoder_flops(16, 48, 2) > 4


def test_training_reduces_loss_and_grid_roundtrip():
    clips = sprites.make_sprite_clips(64, random_state=0).videos
    for rho, gamma in V.VARIANTS.values():
        tok = V.VideoMAETok(mask_ratio=rho, noise_gamma=gamma, random_state=0, **SMALL)
        h = V.train_tokenizer(tok, clips, steps=30, batch_size=16, random_state=0)
        assert np.mean(h["loss"][-5:]) < np.mean(h["loss"][:5])
    grid = V.encode_clips(tok, clips[:4])
    assert grid.shape == (4, 4, 4, 4, 4)
    assert torch.equal(tok.to_grid(tok.from_grid(grid)), grid)
    std = V.LatentStandardizer.fit(grid)
    assert torch.allclose(std.inverse(std.transform(grid)), grid, atol=1e-5)
    assert V.decode_grid(tok, grid).shape == (4, 3, 8, 16, 16)


def test_latent_generator_runs_and_is_seeded():
    clips = sprites.make_sprite_clips(32, random_state=0).videos
    tok = V.VideoMAETok(random_state=0, **SMALL)
    z = V.encode_clips(tok, clips)
    std = V.LatentStandardizer.fit(z)
    gm, losses = V.train_latent_generator(std.transform(z), steps=3, batch_size=8, dim=16, depth=1, heads=2, random_state=0)
    a = V.sample_videos(gm, tok, std, 2, steps=2, random_state=1)
    b = V.sample_videos(gm, tok, std, 2, steps=2, random_state=1)
    assert a.shape == (2, 3, 8, 16, 16) and np.array_equal(a, b) and len(losses) == 3


@covers("vmaetok.patchify_video", "vmaetok.unpatchify_video", "vmaetok.VideoMAETok", "vmaetok.encoder_step")
@settings(max_examples=20, deadline=None, derandomize=True)
@given(frames=st.sampled_from([3, 5, 7, 9]))
def test_frames_not_fitting_the_tubelet_are_rejected(frames):
    rejects(V.patchify_video, torch.zeros(1, 3, frames, 16, 16), match="tubelet")
    rejects(V.unpatchify_video, torch.zeros(1, 64, 96), (3, frames, 16, 16))
    rejects(V.VideoMAETok, frames=frames)
    rejects(V.encoder_step, V.VideoMAETok(**SMALL), torch.zeros(1, 3, frames, 16, 16), 0.5, match="tubelet")


@covers("vmaetok.random_keep", "vmaetok.interpolative_noise", "vmaetok.encoder_flops")
@settings(max_examples=20, deadline=None, derandomize=True)
@given(rho=st.one_of(st.floats(1.0, 10.0), st.floats(-10.0, -1e-6), st.just(float("nan"))))
def test_mask_ratio_outside_unit_interval_is_rejected(rho):
    rejects(V.random_keep, 2, 64, rho, match="mask_ratio")
    rejects(V.VideoMAETok, mask_ratio=rho, match="mask_ratio")
    rejects(V.interpolative_noise, torch.zeros(2, 3), -1.0)
    rejects(V.interpolative_noise, torch.zeros(2, 3), 1.0, tau=torch.tensor([0.5, 2.0]))
    rejects(V.interpolative_noise, torch.zeros(2, 3), 1.0, tau=torch.tensor([0.5]))
    rejects(V.encoder_flops, 0, 8, 1)


@covers(
    "vmaetok.train_tokenizer",
    "vmaetok.encode_clips",
    "vmaetok.decode_grid",
    "vmaetok.LatentStandardizer",
    "vmaetok.train_latent_generator",
    "vmaetok.sample_videos",
)
def test_pipeline_bad_inputs():
    tok = V.VideoMAETok(**SMALL)
    rejects(V.train_tokenizer, "tok", np.zeros((2, 3, 8, 16, 16)), steps=1)
    rejects(V.train_tokenizer, tok, np.zeros((2, 3, 8, 8, 8)), steps=1)
    rejects(V.encode_clips, tok, np.zeros((2, 3, 6, 16, 16)))
    rejects(V.decode_grid, tok, torch.zeros(2, 4, 4, 4, 3))
    rejects(V.LatentStandardizer.fit, torch.zeros(1, 4, 4, 4, 4))
    rejects(V.train_latent_generator, torch.zeros(4, 8), steps=1)
    rejects(V.sample_videos, "gm", tok, None, 2)


def test_visible_latents_ignore_masked_pixels():
    tok = V.VideoMAETok(random_state=0, **SMALL)
    x = torch.rand(2, 3, 8, 16, 16)
    keep = V.random_keep(2, 64, 0.75, generator=torch.Generator().manual_seed(1))
    tokens = V.patchify_video(x)
    masked = torch.ones(2, 64, dtype=torch.bool)
    masked[torch.arange(2)[:, None], keep] = False
    y = V.unpatchify_video(torch.where(masked[..., None], torch.rand_like(tokens), tokens), (3, 8, 16, 16))
    assert not torch.allclose(x, y)
    with torch.no_grad():
        assert torch.allclose(tok.encode(x, keep), tok.encode(y, keep), atol=1e-6)
        assert not torch.allclose(tok.encode(x), tok.encode(y), atol=1e-3)  # unmasked, the changed pixels matter


def test_decoder_puts_latents_back_in_place():
    tok = V.VideoMAETok(random_state=0, **SMALL)
    z = torch.randn(2, 64, 4)
    perm = torch.stack([torch.randperm(64, generator=torch.Generator().manual_seed(k)) for k in range(2)])
    with torch.no_grad():
        ref = tok.decode(z)
        assert torch.allclose(tok.decode(torch.gather(z, 1, perm[..., None].expand(-1, -1, 4)), perm), ref, atol=1e-5)
        wrong = tok.decode(z[:, torch.randperm(64, generator=torch.Generator().manual_seed(9))], torch.arange(64).expand(2, 64))
        assert not torch.allclose(wrong, ref, atol=1e-3)


def test_decoder_finetune_freezes_the_encoder_and_fits_clean_latents():
    clips = sprites.make_sprite_clips(64, random_state=0).videos
    tok = V.VideoMAETok(mask_ratio=0.75, noise_gamma=3.0, random_state=0, **SMALL)
    V.train_tokenizer(tok, clips, steps=10, batch_size=16, random_state=0)
    enc_before = {k: v.clone() for k, v in tok.state_dict().items() if k.split(".")[0] in V.ENCODER_PARTS}
    dec_before = tok.to_pixels.weight.detach().clone()
    z0 = V.encode_clips(tok, clips)
    mse0 = float(((V.decode_grid(tok, z0) - clips) ** 2).mean())
    h = V.finetune_decoder(tok, clips, steps=40, batch_size=16, lr=2e-3, random_state=0)
    assert len(h["loss"]) == 40
    assert all(torch.equal(tok.state_dict()[k], v) for k, v in enc_before.items())  # encoder untouched
    assert len(enc_before) > 5 and all(p.requires_grad for p in tok.parameters())  # flags restored
    assert torch.equal(V.encode_clips(tok, clips), z0)  # so the generator's latents are stage 1's
    assert not torch.equal(tok.to_pixels.weight, dec_before)  # the decoder did change
    assert float(((V.decode_grid(tok, z0) - clips) ** 2).mean()) < mse0  # and fits clean latents better


def test_training_batches_do_not_depend_on_the_variant(monkeypatch):
    """Batch order has its own generator: every variant sees the same clips at every step."""
    clips = sprites.make_sprite_clips(40, random_state=0).videos
    seen = {}
    for name, (rho, gamma) in V.VARIANTS.items():
        tok = V.VideoMAETok(mask_ratio=rho, noise_gamma=gamma, random_state=0, **SMALL)
        batches = []
        orig = V.VideoMAETok.training_loss

        def spy(self, videos, generator=None, _b=batches, _o=orig):
            _b.append(videos.clone())
            return _o(self, videos, generator)

        monkeypatch.setattr(V.VideoMAETok, "training_loss", spy)
        V.train_tokenizer(tok, clips, steps=4, batch_size=8, random_state=3)
        monkeypatch.setattr(V.VideoMAETok, "training_loss", orig)
        seen[name] = torch.stack(batches)
    ref = seen["AE"]
    assert all(torch.equal(b, ref) for b in seen.values())
    assert not torch.equal(ref[0], ref[1])


def test_run_variant_scores_and_pairs_the_two_decoders():
    from icml26.videolab import fvd

    data = sprites.make_sprite_clips(48, random_state=0)
    ev = sprites.make_sprite_clips(16, random_state=1)
    clf = fvd.train_video_classifier(data.videos, data.labels, epochs=1, motion_task=True, random_state=0)
    feats = fvd.video_features(clf, ev.videos)
    kw = dict(
        tok=SMALL,
        gen=dict(dim=16, depth=1, heads=2),
        tok_steps=3,
        ft_lr=1e-3,
        gen_steps=2,
        sample_steps=2,
        batch_size=8,
        random_state=0,
    )
    row, clips = V.run_variant("VideoMAETok", data.videos, ev.videos, ev.labels, clf, feats, ft_steps=3, **kw)
    assert row["latent change in fine-tune"] == 0.0
    assert row["recon MSE"] != row["recon MSE, stage 1"]
    assert clips["rec"].shape == (3, 3, 8, 16, 16) and clips["gen"].shape == (3, 3, 8, 16, 16)
    row0, _ = V.run_variant("VideoMAETok", data.videos, ev.videos, ev.labels, clf, feats, ft_steps=0, **kw)
    assert row0["recon MSE"] == row0["recon MSE, stage 1"] == row["recon MSE, stage 1"]  # same stage 1
    assert row0["gFD, stage 1"] == row["gFD, stage 1"]  # same samples through the same decoder


@covers("vmaetok.finetune_decoder", "vmaetok.run_variant")
def test_finetune_and_run_variant_bad_inputs():
    tok = V.VideoMAETok(**SMALL)
    clips = np.zeros((4, 3, 8, 16, 16), np.float32)
    rejects(V.finetune_decoder, "tok", clips, steps=1)
    rejects(V.finetune_decoder, tok, clips, steps=0)
    rejects(V.finetune_decoder, tok, clips, steps=1, warmup=1.0, match="warmup")
    rejects(V.finetune_decoder, tok, clips, steps=1, lr=0.0, match="lr")
    rejects(V.finetune_decoder, tok, np.zeros((2, 3, 6, 16, 16)), steps=1)
    kw = dict(tok=SMALL, gen={}, tok_steps=1, ft_steps=0, ft_lr=1e-3, gen_steps=1, sample_steps=1)
    rejects(V.run_variant, "VAE", clips, clips, np.zeros(4, int), None, None, match="variant", **kw)
    rejects(V.run_variant, "AE", clips, clips, np.zeros(3, int), None, None, match="eval_labels", **kw)
    rejects(V.run_variant, "AE", clips, clips, np.zeros(4, int), None, None, **(kw | {"ft_steps": -1}))


def _loop_tokenizer(model, clips, steps, batch_size, seed):
    """train_tokenizer as first written: a per-tensor AdamW and clipping loop (the oracle)."""
    x = torch.as_tensor(clips)
    order, gen = torch.Generator().manual_seed(seed), torch.Generator().manual_seed(seed + 2**31)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=0.0, foreach=False)
    n_warm = max(1, int(round(0.05 * steps)))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda i: min(1.0, (i + 1) / n_warm) * 0.5 * (1 + np.cos(np.pi * i / steps)))
    model.train()
    for _ in range(steps):
        idx = torch.randint(0, x.shape[0], (batch_size,), generator=order)
        loss = model.training_loss(x[idx], gen)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, foreach=False)
        opt.step()
        sched.step()
    return model.eval()


def test_foreach_trainers_equal_the_per_tensor_loop_bit_for_bit():
    """The foreach optimiser updates (issue 26) change nothing: same weights, bit for bit."""
    from icml26.videolab.dit import DiTConfig, TinyDiT, train_flow_matching

    clips = sprites.make_sprite_clips(48, random_state=0).videos
    a = V.VideoMAETok(mask_ratio=0.75, noise_gamma=3.0, random_state=0, **SMALL)
    b = V.VideoMAETok(mask_ratio=0.75, noise_gamma=3.0, random_state=0, **SMALL)
    V.train_tokenizer(a, clips, steps=12, batch_size=8, random_state=5)
    _loop_tokenizer(b, clips, 12, 8, 5)
    sa, sb = a.state_dict(), b.state_dict()
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    # the decoder fine-tune: against the same steps with per-tensor updates on a copy
    c = V.VideoMAETok(mask_ratio=0.75, noise_gamma=3.0, random_state=0, **SMALL)
    c.load_state_dict(sa)
    h = V.finetune_decoder(a, clips, steps=6, batch_size=8, lr=1e-3, random_state=2)
    assert torch.equal(c.to_grid(h["latents"]), V.encode_clips(c, clips))  # the latents run_variant reuses
    frozen = {
        id(p)
        for n in V.ENCODER_PARTS
        for p in ([getattr(c, n)] if isinstance(getattr(c, n), torch.nn.Parameter) else getattr(c, n).parameters())
    }
    trainable = [p for p in c.parameters() if id(p) not in frozen]
    opt = torch.optim.AdamW(trainable, lr=1e-3, weight_decay=0.0, foreach=False)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda i: min(1.0, (i + 1) / 1) * 0.5 * (1 + np.cos(np.pi * i / 6)))
    z, order, x = h["latents"], torch.Generator().manual_seed(2), torch.as_tensor(clips)
    for p in c.parameters():
        p.requires_grad_(id(p) not in frozen)
    c.train()
    for _ in range(6):
        idx = torch.randint(0, x.shape[0], (8,), generator=order)
        loss = torch.nn.functional.mse_loss(c.decode(z[idx]), x[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(trainable, 1.0, foreach=False)
        opt.step()
        sched.step()
    sa, sc = a.state_dict(), c.state_dict()
    assert all(torch.equal(sa[k], sc[k]) for k in sa)
    # the generator: against train_flow_matching with the optimiser it builds itself
    lat = torch.randn(16, 4, 4, 4, 4, generator=torch.Generator().manual_seed(0))
    gm, losses = V.train_latent_generator(lat, steps=4, batch_size=4, dim=16, depth=1, heads=2, random_state=3)
    ref = TinyDiT(DiTConfig(in_channels=4, patch=1, dim=16, depth=1, heads=2), random_state=3)
    order = torch.randint(0, 16, (4, 4), generator=torch.Generator().manual_seed(3 + 1))
    ref_losses = train_flow_matching(ref, lambda i: (lat[order[i]], None), 4, lr=2e-3, random_state=3, show_progress=False)
    assert losses == ref_losses
    sg, sr = gm.state_dict(), ref.state_dict()
    assert all(torch.equal(sg[k], sr[k]) for k in sg)
    # the comparisons are not vacuous: the fine-tune moved the decoder away from stage 1
    assert not torch.equal(sa["to_pixels.weight"], sb["to_pixels.weight"])
