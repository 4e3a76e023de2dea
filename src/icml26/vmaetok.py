"""VideoMAETok at toy scale: ViT video tokenizers trained to invert corruption, and latent diffusion on them.

A clip ``[B, C, T, H, W]`` is cut into tubelets of ``t_p × p × p`` pixels
(:func:`patchify_video`), giving ``N = (T/t_p)(H/p)(W/p)`` patch tokens. The tokenizer
(:class:`VideoMAETok`) is a ViT encoder and a ViT decoder around a latent bottleneck of
``c`` channels per token (a 3-D latent grid ``[B, c, T/t_p, H/p, W/p]``):

* **masking** (MAE-style): in training a random fraction ``ρ`` of the patch tokens is
  dropped (``ρ`` drawn per batch from ``U(−0.1, ρ_max)`` and clipped at 0, as l-DeTok
  samples it, so the decoder also learns from batches with every latent visible) and the encoder runs on the ``(1-ρ)N`` visible tokens only, so its cost falls
  about ``1/(1-ρ)`` times; the decoder gets the visible latents at their positions and a
  learned mask token at every other position, and reconstructs every patch;
* **interpolative latent noise** (l-DeTok form): the encoder's latents ``z`` (normalised
  per token) are corrupted as ``z' = (1-τ) z + τ γ ε`` with ``τ ~ U(0, 1)`` per clip and
  ``ε ~ N(0, I)`` (:func:`interpolative_noise`) before the decoder sees them.

The loss is the pixel MSE over every patch. At inference nothing is masked or noised.
A second stage (:func:`finetune_decoder`, l-DeTok's released recipe) freezes the encoder
and fine-tunes the decoder alone on clean latents (``ρ = 0``, ``γ = 0``).
The four variants of the paper's ablation are the flags ``(mask_ratio, noise_gamma)``:
plain AE ``(0, 0)``, mask-only ``(ρ, 0)``, noise-only ``(0, γ)`` and VideoMAETok ``(ρ, γ)``
(:data:`VARIANTS`). A generator is then trained on each tokenizer's standardised latents
with the lab's flow-matching DiT (:func:`train_latent_generator`, :mod:`icml26.videolab.dit`)
and sampled, decoded and scored (:func:`sample_videos`).

Choices we made where the paper's code could not be read (marked *(R)*): one latent per
tubelet (a 3-D grid, as in l-DeTok's per-patch latents) rather than a 1-D set of learned
latent tokens; a LayerNorm without affine on each token's latent (so the encoder cannot
out-scale the noise); noise on the visible latents, ``τ`` per clip, ``ρ`` per batch; learned
position embeddings; no perceptual or GAN loss (in either stage); the fine-tune's learning
rate (a quarter of stage 1's) and length (half of stage 1, as l-DeTok's 100 of 200 epochs).

References
----------
Tong & Tuytelaars, "VideoMAETok: Boosting Video Diffusion Models via Masked Autoencoders as
Tokenizers", ICML 2026 (code github.com/yztongzhan/VideoMAETok, not readable here).
He et al., "Masked Autoencoders Are Scalable Vision Learners", CVPR 2022. Tong et al.,
"VideoMAE", NeurIPS 2022. Chen et al., "Masked Autoencoders Are Effective Tokenizers for
Diffusion Models" (MAETok), arXiv:2502.03444. Yang et al., "Latent Denoising Makes Good
Visual Tokenizers" (l-DeTok), arXiv:2507.15856. Ma et al., "SiT", ECCV 2024.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ._common import RandomState, check_int, check_real, progress, seed_from, torch_generator

VARIANTS: dict[str, tuple[float, float]] = {
    "AE": (0.0, 0.0),
    "mask-only": (0.75, 0.0),
    "noise-only": (0.0, 3.0),
    "VideoMAETok": (0.75, 3.0),
}
"""The four tokenizers of the ablation: name -> ``(mask_ratio ρ, noise_gamma γ)``."""


def _check_tubelet(tubelet) -> tuple[int, int, int]:
    if not isinstance(tubelet, (tuple, list)) or len(tubelet) != 3:
        raise TypeError(f"tubelet={tubelet!r} must be a triple (t_p, p, p) of positive ints")
    tp, ph, pw = (check_int(v, "tubelet entry") for v in tubelet)
    return tp, ph, pw


def _check_clip(videos, tubelet) -> tuple[torch.Tensor, tuple[int, int, int]]:
    if not isinstance(videos, torch.Tensor):
        videos = torch.as_tensor(np.asarray(videos, dtype=np.float32))
    if videos.ndim != 5:
        raise ValueError(f"videos must have shape [B, C, T, H, W], got {tuple(videos.shape)}")
    tp, ph, pw = _check_tubelet(tubelet)
    _, _, t, h, w = videos.shape
    if t % tp or h % ph or w % pw:
        raise ValueError(
            f"a clip of {t} frames × {h} × {w} pixels does not fit the tubelet {(tp, ph, pw)}: "
            "frames, height and width must be multiples of its sizes"
        )
    return videos.float(), (tp, ph, pw)


def patchify_video(videos: torch.Tensor, tubelet: tuple[int, int, int] = (2, 4, 4)) -> torch.Tensor:
    """Cut clips into tubelet tokens, ``[B, C, T, H, W] -> [B, N, C·t_p·p·p]``.

    Tokens are ordered time-major (``t``, then row, then column of the tubelet grid).

    Parameters
    ----------
    videos : Tensor or array, shape [B, C, T, H, W]
    tubelet : (t_p, p_h, p_w)
        Tubelet size; ``T``, ``H``, ``W`` must be multiples of it (else ``ValueError``).

    Returns
    -------
    Tensor, shape [B, N, C·t_p·p_h·p_w] with ``N = (T/t_p)(H/p_h)(W/p_w)``.
    """
    x, (tp, ph, pw) = _check_clip(videos, tubelet)
    b, c, t, h, w = x.shape
    x = x.reshape(b, c, t // tp, tp, h // ph, ph, w // pw, pw)
    x = x.permute(0, 2, 4, 6, 1, 3, 5, 7)  # [B, T', H', W', C, tp, ph, pw]
    return x.reshape(b, (t // tp) * (h // ph) * (w // pw), c * tp * ph * pw)


def unpatchify_video(
    tokens: torch.Tensor, shape: tuple[int, int, int, int], tubelet: tuple[int, int, int] = (2, 4, 4)
) -> torch.Tensor:
    """Inverse of :func:`patchify_video`: ``[B, N, C·t_p·p·p] -> [B, C, T, H, W]`` for ``shape = (C, T, H, W)``."""
    tp, ph, pw = _check_tubelet(tubelet)
    if len(tuple(shape)) != 4:
        raise ValueError(f"shape={shape!r} must be (C, T, H, W)")
    c, t, h, w = (check_int(v, "shape entry") for v in shape)
    if t % tp or h % ph or w % pw:
        raise ValueError(f"shape {(c, t, h, w)} does not fit the tubelet {(tp, ph, pw)}")
    n, k = (t // tp) * (h // ph) * (w // pw), c * tp * ph * pw
    if tokens.ndim != 3 or tokens.shape[1:] != (n, k):
        raise ValueError(f"tokens must have shape [B, {n}, {k}] for clips {(c, t, h, w)}, got {tuple(tokens.shape)}")
    b = tokens.shape[0]
    x = tokens.reshape(b, t // tp, h // ph, w // pw, c, tp, ph, pw).permute(0, 4, 1, 5, 2, 6, 3, 7)
    return x.reshape(b, c, t, h, w)


def interpolative_noise(
    z: torch.Tensor,
    gamma: float,
    *,
    tau: torch.Tensor | None = None,
    eps: torch.Tensor | None = None,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Interpolative latent noise ``z' = (1 - τ) z + τ γ ε`` (l-DeTok).

    Parameters
    ----------
    z : Tensor, shape [B, ...]
        Clean latents.
    gamma : float
        Noise scale ``γ >= 0`` (l-DeTok's default is 3). With ``γ = 0`` the result is the
        shrunk ``(1-τ) z``; a tokenizer with ``noise_gamma=0`` skips this function.
    tau : Tensor, shape [B], optional
        Per-clip interpolation weights in [0, 1]; drawn ``U(0, 1)`` if not given.
    eps : Tensor, shape like ``z``, optional
        Standard normal noise; drawn if not given.
    generator : torch.Generator, optional
        Source of the draws.

    Returns
    -------
    Tensor, shape like ``z``.

    References
    ----------
    Yang et al., l-DeTok, arXiv:2507.15856, Sec. 3.
    """
    gamma = check_real(gamma, "gamma", lo=0.0)
    if not isinstance(z, torch.Tensor) or z.ndim < 1:
        raise TypeError(f"z must be a torch.Tensor with a batch dimension, got {type(z).__name__}")
    b = z.shape[0]
    if tau is None:
        tau = torch.rand(b, generator=generator, dtype=z.dtype)
    tau = torch.as_tensor(tau, dtype=z.dtype)
    if tau.shape != (b,):
        raise ValueError(f"tau must have shape ({b},), got {tuple(tau.shape)}")
    if bool(((tau < 0) | (tau > 1)).any()):
        raise ValueError("tau must lie in [0, 1]")
    if eps is None:
        eps = torch.randn(z.shape, generator=generator, dtype=z.dtype)
    if eps.shape != z.shape:
        raise ValueError(f"eps has shape {tuple(eps.shape)}, expected {tuple(z.shape)}")
    tb = tau.view(b, *([1] * (z.ndim - 1)))
    return (1 - tb) * z + tb * gamma * eps


def random_keep(batch: int, n_tokens: int, mask_ratio: float, *, generator: torch.Generator | None = None) -> torch.Tensor:
    """Indices of the visible tokens of a random MAE mask, ``[B, n_keep]`` (sorted per row).

    ``n_keep = round((1 - ρ) N)``, at least one token. ``ρ`` must lie in ``[0, 1)``.
    """
    batch = check_int(batch, "batch")
    n_tokens = check_int(n_tokens, "n_tokens")
    rho = check_real(mask_ratio, "mask_ratio", lo=0.0, hi=1.0, hi_open=True)
    n_keep = max(1, int(round((1.0 - rho) * n_tokens)))
    noise = torch.rand(batch, n_tokens, generator=generator)
    return noise.argsort(dim=1)[:, :n_keep].sort(dim=1).values


class _Block(nn.Module):
    """Pre-norm transformer block (self-attention + GELU MLP)."""

    def __init__(self, dim: int, heads: int, mlp_ratio: float = 4.0) -> None:
        super().__init__()
        self.heads = heads
        self.n1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.n2 = nn.LayerNorm(dim)
        hidden = int(dim * mlp_ratio)
        self.mlp = nn.Sequential(nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, d = x.shape
        q, k, v = self.qkv(self.n1(x)).reshape(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v)  # [B, heads, N, d/heads]
        x = x + self.proj(a.transpose(1, 2).reshape(b, n, d))
        return x + self.mlp(self.n2(x))


class VideoMAETok(nn.Module):
    """A ViT video tokenizer on tubelets with a latent bottleneck, masking and latent noise.

    Parameters
    ----------
    frames, size, channels : int
        Clip shape ``[C, T, H, W] = [channels, frames, size, size]``.
    tubelet : (t_p, p, p)
        Tubelet size; ``frames`` and ``size`` must be multiples of it.
    dim, enc_depth, dec_depth, heads : int
        ViT width, encoder and decoder depths, attention heads.
    latent_dim : int
        Latent channels ``c`` per token (the bottleneck).
    mask_ratio : float
        ``ρ_max`` in ``[0, 1)``: in training each batch drops a fraction
        ``ρ = max(0, u)``, ``u ~ U(−0.1, ρ_max)``, of the tokens before the encoder.
    noise_gamma : float
        ``γ >= 0`` of the interpolative latent noise in training (0: none).
    random_state : int, numpy.random.Generator or None
        Seeds the initial weights.

    References
    ----------
    Tong & Tuytelaars (ICML 2026); He et al. (MAE, 2022); Yang et al. (l-DeTok, 2025).
    """

    def __init__(
        self,
        *,
        frames: int = 8,
        size: int = 16,
        channels: int = 3,
        tubelet: tuple[int, int, int] = (2, 4, 4),
        dim: int = 64,
        enc_depth: int = 2,
        dec_depth: int = 2,
        heads: int = 4,
        latent_dim: int = 8,
        mask_ratio: float = 0.0,
        noise_gamma: float = 0.0,
        random_state: RandomState = 0,
    ) -> None:
        super().__init__()
        self.frames = check_int(frames, "frames")
        self.size = check_int(size, "size")
        self.channels = check_int(channels, "channels")
        self.tubelet = _check_tubelet(tubelet)
        tp, ph, pw = self.tubelet
        if self.frames % tp or self.size % ph or self.size % pw:
            raise ValueError(f"clips of {self.frames} frames × {self.size}² pixels do not fit the tubelet {self.tubelet}")
        self.dim = check_int(dim, "dim")
        self.heads = check_int(heads, "heads")
        if self.dim % self.heads:
            raise ValueError(f"dim={dim} must be divisible by heads={heads}")
        self.latent_dim = check_int(latent_dim, "latent_dim")
        self.mask_ratio = check_real(mask_ratio, "mask_ratio", lo=0.0, hi=1.0, hi_open=True)
        self.noise_gamma = check_real(noise_gamma, "noise_gamma", lo=0.0)
        self.grid = (self.frames // tp, self.size // ph, self.size // pw)
        self.n_tokens = int(np.prod(self.grid))
        patch_dim = self.channels * tp * ph * pw
        torch.manual_seed(seed_from(random_state))
        self.embed = nn.Linear(patch_dim, dim)
        self.enc_pos = nn.Parameter(0.02 * torch.randn(1, self.n_tokens, dim))
        self.encoder = nn.ModuleList([_Block(dim, heads) for _ in range(check_int(enc_depth, "enc_depth"))])
        self.enc_norm = nn.LayerNorm(dim)
        self.to_latent = nn.Linear(dim, self.latent_dim)
        self.latent_norm = nn.LayerNorm(self.latent_dim, elementwise_affine=False)
        self.from_latent = nn.Linear(self.latent_dim, dim)
        self.mask_token = nn.Parameter(0.02 * torch.randn(1, 1, dim))
        self.dec_pos = nn.Parameter(0.02 * torch.randn(1, self.n_tokens, dim))
        self.decoder = nn.ModuleList([_Block(dim, heads) for _ in range(check_int(dec_depth, "dec_depth"))])
        self.dec_norm = nn.LayerNorm(dim)
        self.to_pixels = nn.Linear(dim, patch_dim)

    @property
    def clip_shape(self) -> tuple[int, int, int, int]:
        """``(C, T, H, W)`` of the clips this tokenizer takes."""
        return (self.channels, self.frames, self.size, self.size)

    def _check(self, videos) -> torch.Tensor:
        x, _ = _check_clip(videos, self.tubelet)
        if tuple(x.shape[1:]) != self.clip_shape:
            raise ValueError(f"videos of shape {tuple(x.shape[1:])} per clip; this tokenizer takes {self.clip_shape}")
        return x

    def encode(self, videos: torch.Tensor, keep: torch.Tensor | None = None) -> torch.Tensor:
        """Latents of the visible tokens, ``[B, C, T, H, W] -> [B, n_keep, c]`` (all ``N`` if ``keep`` is None).

        Only the visible tokens enter the encoder (MAE): its cost scales with ``n_keep``.
        """
        tok = self.embed(patchify_video(self._check(videos), self.tubelet)) + self.enc_pos  # [B, N, d]
        if keep is not None:
            tok = torch.gather(tok, 1, keep.unsqueeze(-1).expand(-1, -1, self.dim))  # [B, n_keep, d]
        for blk in self.encoder:
            tok = blk(tok)
        return self.latent_norm(self.to_latent(self.enc_norm(tok)))  # [B, n_keep, c]

    def decode(self, latents: torch.Tensor, keep: torch.Tensor | None = None) -> torch.Tensor:
        """Clips from latents, ``[B, n_keep, c] -> [B, C, T, H, W]``; masked positions get the mask token."""
        if latents.ndim != 3 or latents.shape[-1] != self.latent_dim:
            raise ValueError(f"latents must have shape [B, n, {self.latent_dim}], got {tuple(latents.shape)}")
        b = latents.shape[0]
        h = self.from_latent(latents)  # [B, n_keep, d]
        if keep is None:
            if latents.shape[1] != self.n_tokens:
                raise ValueError(f"without keep, latents must hold all {self.n_tokens} tokens, got {latents.shape[1]}")
            full = h
        else:
            full = self.mask_token.expand(b, self.n_tokens, self.dim).clone()
            full = full.scatter(1, keep.unsqueeze(-1).expand(-1, -1, self.dim), h)  # [B, N, d]
        full = full + self.dec_pos
        for blk in self.decoder:
            full = blk(full)
        return unpatchify_video(self.to_pixels(self.dec_norm(full)), self.clip_shape, self.tubelet)

    def training_loss(self, videos: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        """Pixel MSE of reconstructing every patch from masked, noised latents (the training objective)."""
        x = self._check(videos)
        rho = 0.0
        if self.mask_ratio > 0:  # l-DeTok: ρ ~ U(−0.1, ρ_max), clipped at 0, per batch
            rho = max(0.0, float(torch.empty(()).uniform_(-0.1, self.mask_ratio, generator=generator)))
        keep = random_keep(x.shape[0], self.n_tokens, rho, generator=generator) if rho > 0 else None
        z = self.encode(x, keep)
        if self.noise_gamma > 0:
            z = interpolative_noise(z, self.noise_gamma, generator=generator)
        return F.mse_loss(self.decode(z, keep), x)

    def to_grid(self, latents: torch.Tensor) -> torch.Tensor:
        """All-token latents as a latent video, ``[B, N, c] -> [B, c, T', H', W']`` (the generator's input)."""
        if latents.ndim != 3 or latents.shape[1:] != (self.n_tokens, self.latent_dim):
            raise ValueError(f"latents must have shape [B, {self.n_tokens}, {self.latent_dim}], got {tuple(latents.shape)}")
        return latents.transpose(1, 2).reshape(latents.shape[0], self.latent_dim, *self.grid)

    def from_grid(self, grid: torch.Tensor) -> torch.Tensor:
        """Inverse of :meth:`to_grid`, ``[B, c, T', H', W'] -> [B, N, c]``."""
        if grid.ndim != 5 or tuple(grid.shape[1:]) != (self.latent_dim, *self.grid):
            raise ValueError(
                f"grid must have shape [B, {self.latent_dim}, {', '.join(map(str, self.grid))}], got {tuple(grid.shape)}"
            )
        return grid.reshape(grid.shape[0], self.latent_dim, self.n_tokens).transpose(1, 2)


def train_tokenizer(
    model: VideoMAETok,
    videos: np.ndarray,
    *,
    steps: int,
    batch_size: int = 32,
    lr: float = 2e-3,
    random_state: RandomState = 0,
    desc: str = "tokenizer",
) -> dict[str, list[float] | float]:
    """Train a tokenizer for ``steps`` AdamW steps on random batches of ``videos``.

    The batch order comes from one generator seeded by ``random_state`` and the masks,
    ``τ`` and ``ε`` from a second one, so two variants trained with the same seed see the
    same clips in the same order whatever their corruption draws (a paired design).

    Returns
    -------
    dict
        ``loss`` (per step) and ``seconds`` (wall time of the whole training).
    """
    if not isinstance(model, VideoMAETok):
        raise TypeError(f"model must be a VideoMAETok, got {type(model).__name__}")
    x = model._check(videos)
    steps = check_int(steps, "steps")
    batch_size = check_int(batch_size, "batch_size")
    lr = check_real(lr, "lr", lo=0.0, lo_open=True)
    base = seed_from(random_state)
    order = torch.Generator().manual_seed(base)  # batch order: the same for every variant
    gen = torch.Generator().manual_seed(base + 2**31)  # masks, τ, ε: the variant's own draws
    params = list(model.parameters())
    # foreach: one fused C++ call per update instead of a Python loop over the ~70 tensors
    # (the same elementwise arithmetic, bit-identical on the CPU: tests/test_vmaetok.py)
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.0, foreach=True)
    n_warm = max(1, int(round(0.05 * steps)))  # linear warm-up over 5 % of the steps (20 of 400)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda i: min(1.0, (i + 1) / n_warm) * 0.5 * (1 + np.cos(np.pi * i / steps)))
    model.train()
    losses, t0 = [], time.perf_counter()
    for _ in progress(range(steps), desc):
        idx = torch.randint(0, x.shape[0], (batch_size,), generator=order)
        loss = model.training_loss(x[idx], gen)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(params, 1.0, foreach=True)
        opt.step()
        sched.step()
        losses.append(float(loss.detach()))
    model.eval()
    return {"loss": losses, "seconds": time.perf_counter() - t0}


ENCODER_PARTS: tuple[str, ...] = ("embed", "enc_pos", "encoder", "enc_norm", "to_latent")
"""Submodules and parameters of :class:`VideoMAETok` that make the latents (frozen by :func:`finetune_decoder`)."""


def finetune_decoder(
    model: VideoMAETok,
    videos: np.ndarray,
    *,
    steps: int,
    batch_size: int = 32,
    lr: float = 5e-4,
    warmup: float = 0.05,
    random_state: RandomState = 0,
    desc: str = "decoder fine-tune",
) -> dict[str, list[float] | float]:
    """Stage 2 of l-DeTok's recipe: freeze the encoder, fine-tune the decoder on clean latents.

    The encoder (:data:`ENCODER_PARTS`) is frozen, so the latents, and with them everything
    the generator is trained on, are exactly those of stage 1. The decoder is trained with
    no masking and no noise (``ρ = 0``, ``γ = 0``) to reconstruct every patch from the
    inference latents ``z = E(V)``,

    .. math::

        \\min_{\\theta_D} \\; \\mathbb E_V \\, \\lVert D_{\\theta_D}(E(V)) - V \\rVert^2 ,

    with AdamW, a linear warm-up over the first ``warmup`` fraction of the steps and a
    cosine decay. l-DeTok's released recipe (README, "Decoder fine-tuning") uses
    ``--train_decoder_only --gamma 0.0 --mask_ratio 0.0``, a warm-up rate of 0.05 and a
    lower learning rate than stage 1; its perceptual and GAN terms are left out here.
    Since the encoder is frozen and sees clean clips, the latents of all clips are computed
    once and only the decoder runs in each step.

    Parameters
    ----------
    model : VideoMAETok
        A tokenizer after stage 1 (:func:`train_tokenizer`); changed in place.
    videos : array_like, shape [n, C, T, H, W]
        Training clips.
    steps, batch_size : int
        Budget (AdamW steps, clips per step).
    lr : float
        Peak learning rate (> 0).
    warmup : float
        Fraction of the steps of linear warm-up, in [0, 1).
    random_state : int, numpy.random.Generator or None
        Seeds the batch order only (nothing else is random), so two tokenizers fine-tuned
        with the same seed see the same clips in the same order.

    Returns
    -------
    dict
        ``loss`` (per step), ``seconds`` (wall time, latents included) and ``latents``,
        the frozen encoder's latents of ``videos``, ``[n, N, c]`` (computed in batches of
        256 clips, as :func:`encode_clips` does, so ``model.to_grid(latents)`` equals
        ``encode_clips(model, videos)`` exactly).

    References
    ----------
    Yang et al., l-DeTok, arXiv:2507.15856 (github.com/Jiawei-Yang/DeTok, README);
    Chen et al., MAETok, arXiv:2502.03444 (decoder fine-tuning with the encoder frozen).
    """
    if not isinstance(model, VideoMAETok):
        raise TypeError(f"model must be a VideoMAETok, got {type(model).__name__}")
    x = model._check(videos)
    steps = check_int(steps, "steps")
    batch_size = check_int(batch_size, "batch_size")
    lr = check_real(lr, "lr", lo=0.0, lo_open=True)
    warmup = check_real(warmup, "warmup", lo=0.0, hi=1.0, hi_open=True)
    frozen: list[nn.Parameter] = []
    for name in ENCODER_PARTS:
        part = getattr(model, name)
        frozen += [part] if isinstance(part, nn.Parameter) else list(part.parameters())
    ids = {id(p) for p in frozen}
    trainable = [p for p in model.parameters() if id(p) not in ids]
    t0 = time.perf_counter()
    model.eval()
    with torch.no_grad():
        z = torch.cat([model.encode(x[i : i + 256]) for i in range(0, x.shape[0], 256)])  # [n, N, c], fixed
    order = torch_generator(random_state)
    n_warm = max(1, int(round(warmup * steps)))
    opt = torch.optim.AdamW(trainable, lr=lr, weight_decay=0.0, foreach=True)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda i: min(1.0, (i + 1) / n_warm) * 0.5 * (1 + np.cos(np.pi * i / steps)))
    flags = [p.requires_grad for p in frozen]
    for p in frozen:
        p.requires_grad_(False)
    model.train()
    losses = []
    try:
        for _ in progress(range(steps), desc):
            idx = torch.randint(0, x.shape[0], (batch_size,), generator=order)
            loss = F.mse_loss(model.decode(z[idx]), x[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(trainable, 1.0, foreach=True)
            opt.step()
            sched.step()
            losses.append(float(loss.detach()))
    finally:
        for p, f in zip(frozen, flags):
            p.requires_grad_(f)
        model.eval()
    return {"loss": losses, "seconds": time.perf_counter() - t0, "latents": z}


@torch.no_grad()
def encode_clips(model: VideoMAETok, videos: np.ndarray, *, batch_size: int = 256) -> torch.Tensor:
    """Inference latents (no mask, no noise) as latent videos ``[B, c, T', H', W']``."""
    if not isinstance(model, VideoMAETok):
        raise TypeError(f"model must be a VideoMAETok, got {type(model).__name__}")
    x = model._check(videos)
    batch_size = check_int(batch_size, "batch_size")
    model.eval()
    return torch.cat([model.to_grid(model.encode(x[i : i + batch_size])) for i in range(0, x.shape[0], batch_size)])


@torch.no_grad()
def decode_grid(model: VideoMAETok, grid: torch.Tensor, *, batch_size: int = 256) -> np.ndarray:
    """Clips from latent videos ``[B, c, T', H', W'] -> [B, C, T, H, W]``, clipped to [0, 1]."""
    if not isinstance(model, VideoMAETok):
        raise TypeError(f"model must be a VideoMAETok, got {type(model).__name__}")
    batch_size = check_int(batch_size, "batch_size")
    model.eval()
    out = [model.decode(model.from_grid(grid[i : i + batch_size])) for i in range(0, grid.shape[0], batch_size)]
    return torch.cat(out).clamp(0, 1).numpy()


@dataclass(frozen=True)
class LatentStandardizer:
    """Per-channel standardisation of latent videos ``[B, c, T', H', W']`` (fit on training latents).

    Every tokenizer's latents are standardised the same way before the generator sees
    them, so that latent scale does not confound the comparison.
    """

    mean: torch.Tensor  # [c]
    std: torch.Tensor  # [c]

    @classmethod
    def fit(cls, grid: torch.Tensor) -> LatentStandardizer:
        """Channel means and standard deviations over batch, time and space."""
        if not isinstance(grid, torch.Tensor) or grid.ndim != 5 or grid.shape[0] < 2:
            raise ValueError("fit needs a latent video tensor [B >= 2, c, T', H', W']")
        return cls(grid.mean(dim=(0, 2, 3, 4)), grid.std(dim=(0, 2, 3, 4)).clamp_min(1e-6))

    def transform(self, grid: torch.Tensor) -> torch.Tensor:
        """``(z - mean) / std`` per channel."""
        return (grid - self.mean.view(1, -1, 1, 1, 1)) / self.std.view(1, -1, 1, 1, 1)

    def inverse(self, grid: torch.Tensor) -> torch.Tensor:
        """``z * std + mean`` per channel."""
        return grid * self.std.view(1, -1, 1, 1, 1) + self.mean.view(1, -1, 1, 1, 1)


def train_latent_generator(
    latents: torch.Tensor,
    *,
    steps: int,
    batch_size: int = 64,
    dim: int = 64,
    depth: int = 3,
    heads: int = 4,
    lr: float = 2e-3,
    random_state: RandomState = 0,
    desc: str = "generator",
):
    """Train the lab's DiT (SiT-style flow matching, velocity loss) on standardised latent videos.

    Parameters
    ----------
    latents : Tensor, shape [B, c, T', H', W']
        Standardised training latents of one tokenizer.
    steps, batch_size, dim, depth, heads, lr : the generator's budget and size (identical for every tokenizer).
    random_state : int, numpy.random.Generator or None
        Seeds the weights, the batch order and the flow-matching draws.

    Returns
    -------
    (TinyDiT, list of float)
        The trained model and its losses.

    References
    ----------
    Ma et al., SiT (ECCV 2024); the lab's :mod:`icml26.videolab.dit`.
    """
    from .videolab.dit import DiTConfig, TinyDiT, train_flow_matching

    if not isinstance(latents, torch.Tensor) or latents.ndim != 5:
        raise ValueError("latents must be a tensor [B, c, T', H', W']")
    steps = check_int(steps, "steps")
    batch_size = check_int(batch_size, "batch_size")
    model = TinyDiT(
        DiTConfig(in_channels=latents.shape[1], patch=1, dim=dim, depth=depth, heads=heads), random_state=random_state
    )
    gen = torch_generator(seed_from(random_state) + 1)
    order = torch.randint(0, latents.shape[0], (steps, batch_size), generator=gen)
    # the optimiser train_flow_matching would build (AdamW, no weight decay, one group), with foreach
    # updates: the same arithmetic, bit-identical on the CPU, in one call instead of a loop
    opt = torch.optim.AdamW([{"params": list(model.parameters()), "lr": lr}], lr=lr, weight_decay=0.0, foreach=True)
    losses = train_flow_matching(
        model, lambda i: (latents[order[i]], None), steps, lr=lr, random_state=random_state, desc=desc, optimizer=opt
    )
    return model.eval(), losses


def sample_videos(
    generator_model,
    tokenizer: VideoMAETok,
    standardizer: LatentStandardizer,
    n: int,
    *,
    steps: int = 20,
    random_state: RandomState = 0,
) -> np.ndarray:
    """Sample ``n`` latent videos with Euler steps, undo the standardisation and decode them.

    Returns
    -------
    numpy.ndarray, shape [n, C, T, H, W], in [0, 1]
    """
    from .videolab.dit import TinyDiT, euler_sample

    if not isinstance(generator_model, TinyDiT):
        raise TypeError(f"generator_model must be a TinyDiT, got {type(generator_model).__name__}")
    if not isinstance(tokenizer, VideoMAETok):
        raise TypeError(f"tokenizer must be a VideoMAETok, got {type(tokenizer).__name__}")
    n = check_int(n, "n")
    z = euler_sample(generator_model, (n, tokenizer.latent_dim, *tokenizer.grid), steps=steps, random_state=random_state)
    return decode_grid(tokenizer, standardizer.inverse(z))


def encoder_step(
    model: VideoMAETok, videos: torch.Tensor, mask_ratio: float, *, generator: torch.Generator | None = None
) -> float:
    """One encoder forward and backward pass at mask ratio ``ρ`` (what masking saves per training step).

    Returns the scalar it differentiated (so the work cannot be optimised away); gradients
    are left in the parameters' ``.grad`` and should be cleared by the caller if it matters.
    """
    if not isinstance(model, VideoMAETok):
        raise TypeError(f"model must be a VideoMAETok, got {type(model).__name__}")
    x = model._check(videos)
    rho = check_real(mask_ratio, "mask_ratio", lo=0.0, hi=1.0, hi_open=True)
    keep = random_keep(x.shape[0], model.n_tokens, rho, generator=generator) if rho > 0 else None
    out = model.encode(x, keep).square().mean()
    out.backward()
    return float(out.detach())


def encoder_flops(n_tokens: int, dim: int, depth: int, mlp_ratio: float = 4.0) -> float:
    """Forward multiply-adds ×2 of the ViT encoder on ``n_tokens`` tokens (linear layers and attention).

    ``depth · (2·n·(3d² + d² + 2·r·d²) + 2·2·n²·d)``: QKV, output projection and MLP, then
    the two attention matrix products. The ratio at ``n`` and ``(1-ρ) n`` is the design's
    saving; the measured time is the claim.
    """
    n = check_int(n_tokens, "n_tokens")
    d = check_int(dim, "dim")
    L = check_int(depth, "depth")
    r = check_real(mlp_ratio, "mlp_ratio", lo=0.0, lo_open=True)
    return float(L * (2 * n * (4 * d * d + 2 * r * d * d) + 4 * n * n * d))


def run_variant(
    name: str,
    train_videos: np.ndarray,
    eval_videos: np.ndarray,
    eval_labels: np.ndarray,
    classifier,
    real_features: np.ndarray,
    *,
    tok: dict,
    gen: dict,
    tok_steps: int,
    ft_steps: int,
    ft_lr: float,
    gen_steps: int,
    sample_steps: int,
    batch_size: int = 32,
    random_state: int = 0,
) -> tuple[dict[str, float], dict[str, np.ndarray]]:
    """One variant of the ablation at one seed: tokenizer, decoder fine-tune, generator, scores.

    The pipeline: train the tokenizer of variant ``name`` (:data:`VARIANTS`) for
    ``tok_steps`` (:func:`train_tokenizer`), fine-tune its decoder for ``ft_steps`` with
    the encoder frozen (:func:`finetune_decoder`), standardise the training latents
    (:class:`LatentStandardizer`), train the generator (:func:`train_latent_generator`)
    and sample ``len(eval_videos)`` clips. Because the encoder is frozen in stage 2, the
    generator's latents are the same with either decoder, so the same samples are also
    decoded with the stage-1 decoder: the effect of the fine-tune is measured on identical
    latents.

    Scores use the FVD stand-in's network ``classifier``
    (:class:`~icml26.videolab.fvd.VideoClassifier3D`): ``rFD`` and ``gFD`` are the Fréchet
    distances of reconstructions and samples to ``real_features`` (the features of
    ``eval_videos``), ``recon accuracy`` the class accuracy on reconstructions, ``gen
    confidence`` the mean top-class probability of the samples.

    Returns
    -------
    row : dict
        The scores (``recon MSE``, ``rFD``, ``recon accuracy``, ``gFD``, ``gen confidence``,
        ``gen classes``, the stage-1 decoder's ``recon MSE, stage 1`` and ``gFD, stage 1``,
        ``latent change in fine-tune`` (max absolute change of the eval latents; 0 when the
        encoder stayed frozen) and ``tokenizer s/step``).
    clips : dict
        ``rec`` and ``gen``: the first three reconstructions and samples.
    """
    import copy

    from .videolab import fvd
    from .videolab.dit import euler_sample

    if name not in VARIANTS:
        raise ValueError(f"name={name!r} is not a variant; choose one of {list(VARIANTS)}")
    rho, gamma = VARIANTS[name]
    ft_steps = check_int(ft_steps, "ft_steps", low=0)
    y = np.asarray(eval_labels)
    if y.shape != (len(eval_videos),):
        raise ValueError(f"eval_labels must have shape ({len(eval_videos)},), one per eval clip, got {y.shape}")
    model = VideoMAETok(mask_ratio=rho, noise_gamma=gamma, random_state=random_state, **tok)
    hist = train_tokenizer(model, train_videos, steps=tok_steps, batch_size=batch_size, random_state=random_state)
    stage1 = copy.deepcopy(model)
    z_eval_1 = encode_clips(model, eval_videos)
    if ft_steps > 0:
        ft = finetune_decoder(model, train_videos, steps=ft_steps, batch_size=batch_size, lr=ft_lr, random_state=random_state)
        zs = model.to_grid(ft["latents"])  # the frozen encoder's training latents (= encode_clips)
    else:
        zs = encode_clips(model, train_videos)
    z_eval = encode_clips(model, eval_videos)
    std = LatentStandardizer.fit(zs)
    gm, _ = train_latent_generator(std.transform(zs), steps=gen_steps, batch_size=batch_size, random_state=random_state, **gen)
    z_gen = std.inverse(
        euler_sample(gm, (len(eval_videos), model.latent_dim, *model.grid), steps=sample_steps, random_state=random_state + 1)
    )
    out: dict[str, float] = {}
    clips: dict[str, np.ndarray] = {}
    for tag, m in (("", model), (", stage 1", stage1)):
        rec = decode_grid(m, z_eval)
        fake = decode_grid(m, z_gen)
        f_rec, p_rec = fvd.features_and_probs(classifier, rec)
        f_gen, p_gen = fvd.features_and_probs(classifier, fake)
        out[f"recon MSE{tag}"] = float(((rec - eval_videos) ** 2).mean())
        out[f"rFD{tag}"] = fvd.feature_frechet_distance(real_features, f_rec)
        out[f"gFD{tag}"] = fvd.feature_frechet_distance(real_features, f_gen)
        if not tag:
            out["recon accuracy"] = float((p_rec.argmax(1) == y).mean())
            out["gen confidence"] = float(p_gen.max(1).mean())
            out["gen classes"] = int((np.bincount(p_gen.argmax(1), minlength=p_gen.shape[1]) / len(p_gen) > 0.05).sum())
            clips = {"rec": rec[:3], "gen": fake[:3]}
    out["latent change in fine-tune"] = float((z_eval - z_eval_1).abs().max())
    out["tokenizer s/step"] = float(hist["seconds"]) / tok_steps
    return out, clips
