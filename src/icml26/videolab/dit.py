"""One tiny video DiT trained by flow matching, with OmniShow's conditioning paths as options.

The model predicts the flow-matching velocity of a latent video ``x`` of shape
``[B, C, T, H, W]``. With ``x_t = (1 - t) x + t eps`` (``t`` in ``[0, 1]``, ``eps`` standard
normal) the target velocity is ``v = eps - x``; the loss is ``E ||v_theta(x_t, t) - v||^2``,
and :func:`euler_sample` integrates ``dx/dt = v_theta`` from pure noise at ``t = 1`` down to
``t = 0`` with a fixed number of Euler steps.

The conditioning paths of OmniShow (Zhou et al., ICML 2026) are options of the one model
(:class:`DiTConfig`), never copies of it:

``refs="channel"``  unified channel-wise conditioning: the ``R`` reference images are
    prepended to the timeline as pseudo-frames (the noisy sequence has ``T + R`` frames;
    their clean target is the reference itself, so the ordinary loss on them is a
    reference-reconstruction loss) and a conditioning tensor ``y = [mask (1 ch); latents
    (C ch)]`` on the same timeline is concatenated on channels with the noisy input:
    reference latents at the pseudo-frame positions, pose latents at the frame positions.
    A sample without references (an A2V or T2V sample, reference mask 0) has no
    pseudo-frames, as on the authors' timeline: with ``absent_refs="drop"`` (the default)
    its absent pseudo-frames are masked out of self-attention and out of the loss, and its
    real frames are counted from frame 0; ``absent_refs="zeros"`` keeps them as zero frames.
``pose=True``       pose latents through the same channel path (works with or without
    channel references).
``refs="cross"``    baseline: the references as extra tokens that every block reads with
    cross-attention.
``audio="glca"``    gated local-context attention: the video tokens of frame ``t`` attend
    only to the ``w`` audio tokens of its window; the output is multiplied by a per-channel
    gate initialised at ``gate_init`` (1e-5 in the paper) before the residual add.
``audio="global"``  baseline: every video token attends to all ``T * w`` audio tokens.

With every option off (the default) the model is an unconditional DiT for any latent
tensor whose height and width are divisible by ``patch``; positional embeddings are fixed
sine-cosine tables computed for the input's own ``T, H, W``.

Example
-------
>>> import torch
>>> from icml26.videolab.dit import DiTConfig, TinyDiT, flow_matching_step, euler_sample
>>> model = TinyDiT(DiTConfig(in_channels=4, patch=1, dim=32, depth=2, heads=4), random_state=0)
>>> x = torch.randn(8, 4, 4, 4, 4)                         # [B, C, T, H, W] latents
>>> opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
>>> loss = flow_matching_step(model, opt, x, random_state=0)   # one optimiser step, returns float
>>> samples = euler_sample(model, (2, 4, 4, 4, 4), steps=8, random_state=1)
>>> samples.shape
torch.Size([2, 4, 4, 4, 4])

:func:`train_flow_matching` loops :func:`flow_matching_step` over a batch sampler.

References
----------
Peebles & Xie, "Scalable Diffusion Models with Transformers" (DiT, adaLN-Zero), ICCV 2023.
Lipman et al., "Flow Matching for Generative Modeling", ICLR 2023.
Zhou et al., "OmniShow: Unifying Multimodal Conditions for Human-Object Interaction Video
Generation", ICML 2026, arXiv:2604.11804; code github.com/Correr-Zhou/OmniShow (the Wan
release read from github.com/nikhilash6/OmniShow: ``diffsynth/modules/
gated_local_context_attention.py``, ``models/wan_video_dit.py``).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from icml26._common import RandomState, check_int, check_real, progress, seed_from, torch_generator

__all__ = [
    "DiTConditions",
    "DiTConfig",
    "TinyDiT",
    "euler_sample",
    "flow_matching_loss",
    "flow_matching_step",
    "train_flow_matching",
]

_REFS = ("none", "channel", "cross")
_AUDIO = ("none", "glca", "global")


@dataclass(frozen=True)
class DiTConfig:
    """Size and conditioning options of :class:`TinyDiT`.

    Parameters
    ----------
    in_channels : int
        Latent channels ``C`` of the video (3 for raw RGB frames).
    patch : int
        Spatial patch size (the temporal patch is 1); ``H`` and ``W`` must be divisible by it.
    dim : int
        Token width ``d`` (even, divisible by ``heads``).
    depth : int
        Number of transformer blocks.
    heads : int
        Attention heads.
    mlp_ratio : float
        Hidden width of the MLP as a multiple of ``dim``.
    refs : {"none", "channel", "cross"}
        How reference images enter (see the module docstring).
    n_refs : int
        Number of reference slots ``R`` (2 in OmniShow: human, object).
    pose : bool
        Pose latents (``C`` channels, one per frame) through the channel path.
    audio : {"none", "glca", "global"}
        Audio attention variant.
    audio_dim : int
        Width of one audio feature vector.
    audio_window : int
        Audio tokens per video frame ``w`` (5 in OmniShow).
    audio_layers : tuple of int or None
        Blocks that hold the audio attention; ``None`` means every block.
    audio_gate : bool
        Multiply the audio attention output by a learnable per-channel gate.
    gate_init : float
        Initial value of every gate channel (1e-5 in OmniShow).
    absent_refs : {"drop", "zeros"}
        With channel references, what an absent reference (mask 0) is: ``"drop"`` (the
        authors' timeline: its pseudo-frame is masked out of self-attention and of the
        loss, and a sample with no reference counts its real frames from 0) or
        ``"zeros"`` (a zero frame that every token attends to and the loss covers).
    """

    in_channels: int = 3
    patch: int = 2
    dim: int = 48
    depth: int = 3
    heads: int = 4
    mlp_ratio: float = 2.0
    refs: str = "none"
    n_refs: int = 2
    pose: bool = False
    audio: str = "none"
    audio_dim: int = 8
    audio_window: int = 5
    audio_layers: tuple[int, ...] | None = None
    audio_gate: bool = True
    gate_init: float = 1e-5
    absent_refs: str = "drop"

    def __post_init__(self) -> None:
        check_int(self.in_channels, "in_channels")
        check_int(self.patch, "patch")
        check_int(self.depth, "depth")
        check_int(self.heads, "heads")
        dim = check_int(self.dim, "dim", low=2)
        if dim % 2 or dim % self.heads:
            raise ValueError(f"dim={dim} must be even and divisible by heads={self.heads}")
        check_real(self.mlp_ratio, "mlp_ratio", lo=0.0, lo_open=True)
        if self.refs not in _REFS:
            raise ValueError(f"refs={self.refs!r} is not valid; use one of {_REFS}")
        if self.audio not in _AUDIO:
            raise ValueError(f"audio={self.audio!r} is not valid; use one of {_AUDIO}")
        if self.absent_refs not in ("drop", "zeros"):
            raise ValueError(f"absent_refs={self.absent_refs!r} is not valid; use 'drop' or 'zeros'")
        check_int(self.n_refs, "n_refs")
        check_int(self.audio_dim, "audio_dim")
        check_int(self.audio_window, "audio_window")
        if not isinstance(self.pose, bool):
            raise TypeError(f"pose={self.pose!r} must be a bool")
        check_real(self.gate_init, "gate_init")
        if self.audio_layers is not None:
            bad = [i for i in self.audio_layers if not isinstance(i, int) or not 0 <= i < self.depth]
            if bad or not self.audio_layers:
                raise ValueError(
                    f"audio_layers={self.audio_layers!r} must be a non-empty tuple of block indices in [0, {self.depth})"
                )

    @property
    def n_pseudo(self) -> int:
        """Pseudo-frames prepended to the timeline (``n_refs`` with channel references, else 0)."""
        return self.n_refs if self.refs == "channel" else 0

    @property
    def uses_channel_path(self) -> bool:
        """Whether a conditioning tensor ``y`` is concatenated on channels."""
        return self.refs == "channel" or self.pose


@dataclass
class DiTConditions:
    """The conditioning signals of one batch (each optional; unused ones are ignored).

    Parameters
    ----------
    refs : Tensor, optional
        ``[B, R, C, H, W]`` reference images (a missing one is zeros with mask 0).
    ref_mask : Tensor, optional
        ``[B, R]`` 1 where the reference is a real image; default all ones.
    pose : Tensor, optional
        ``[B, C, T, H, W]`` pose latents (rendered pose video).
    pose_mask : Tensor, optional
        ``[B]`` 1 where pose is given; default all ones.
    audio : Tensor, optional
        ``[B, T, w, audio_dim]`` windowed audio features, one window per video frame.
    audio_mask : Tensor, optional
        ``[B]`` 1 where audio is given (0 zeroes the audio attention's contribution).
    """

    refs: torch.Tensor | None = None
    ref_mask: torch.Tensor | None = None
    pose: torch.Tensor | None = None
    pose_mask: torch.Tensor | None = None
    audio: torch.Tensor | None = None
    audio_mask: torch.Tensor | None = None
    extra: dict = field(default_factory=dict)

    def index(self, idx) -> DiTConditions:
        """The conditions of a sub-batch ``idx`` (a slice, index tensor or boolean mask)."""
        pick = {k: (None if v is None else v[idx]) for k, v in self.__dict__.items() if k != "extra"}
        return DiTConditions(**pick)


# --------------------------------------------------------------------------- embeddings
@functools.lru_cache(maxsize=64)
def _freqs(half: int, device: torch.device) -> torch.Tensor:
    """The ``half`` frequencies ``10000^(-k / half)`` of :func:`_sincos` on ``device`` (cached: never modify it)."""
    with torch.inference_mode(False), torch.device(device):
        return torch.exp(-math.log(10000.0) * torch.arange(half, dtype=torch.float32) / max(half, 1))


def _sincos(pos: torch.Tensor, dim: int) -> torch.Tensor:
    """Sine-cosine embedding ``[..., dim]`` of positions ``pos`` (``dim`` even)."""
    ang = pos.to(torch.float32)[..., None] * _freqs(dim // 2, pos.device)  # [..., half]
    return torch.cat([torch.sin(ang), torch.cos(ang)], dim=-1)


def _pos_embed_3d(t: int, h: int, w: int, dim: int, t0: int = 0) -> torch.Tensor:
    """Factorised 3-D sine-cosine table ``[t, h*w, dim]`` (frames counted from ``t0``)."""
    ds = 2 * ((dim // 3) // 2)
    dt = dim - 2 * ds
    et = _sincos(torch.arange(t0, t0 + t), dt)  # [t, dt]
    ey = _sincos(torch.arange(h), ds)  # [h, ds]
    ex = _sincos(torch.arange(w), ds)  # [w, ds]
    sp = torch.cat([ey[:, None, :].expand(h, w, ds), ex[None, :, :].expand(h, w, ds)], dim=-1).reshape(h * w, 2 * ds)
    return torch.cat([et[:, None, :].expand(t, h * w, dt), sp[None].expand(t, h * w, 2 * ds)], dim=-1)


# The tables below depend only on sizes, so they are built once per size and device and
# shared by every forward pass: the values :func:`_pos_embed_3d` gives on that device.
# Callers must never modify them in place.
@functools.lru_cache(maxsize=256)
def _pos_table(t: int, h: int, w: int, dim: int, t0: int, device: torch.device) -> torch.Tensor:
    """Cached :func:`_pos_embed_3d` ``[t, h*w, dim]`` on ``device``."""
    with torch.inference_mode(False), torch.device(device):
        return _pos_embed_3d(t, h, w, dim, t0)


@functools.lru_cache(maxsize=256)
def _shifted_pos_table(tt: int, r: int, h: int, w: int, dim: int, device: torch.device) -> torch.Tensor:
    """``[1, tt*h*w, dim]``: the rows of the ``r`` pseudo-frames of the ``tt``-frame table, then real frames counted from 0."""
    n = h * w
    with torch.inference_mode(False), torch.device(device):
        pos = _pos_table(tt, h, w, dim, 0, device).reshape(1, tt * n, dim)
        return torch.cat([pos[:, : r * n], _pos_table(tt - r, h, w, dim, 0, device).reshape(1, (tt - r) * n, dim)], dim=1)


@functools.lru_cache(maxsize=256)
def _frame_code(t: int, dim: int, t0: int, device: torch.device) -> torch.Tensor:
    """``[t, dim]``: the temporal part of :func:`_pos_embed_3d` for frames ``t0 ... t0 + t - 1``, the spatial part zeroed."""
    with torch.inference_mode(False), torch.device(device):
        pe = _pos_embed_3d(t, 1, 1, dim, t0=t0)[:, 0].clone()  # [T, d]
        pe[:, dim - 2 * (2 * ((dim // 3) // 2)) :] = 0.0
        return pe


def _modulate(x: torch.Tensor, shift: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    return x * (1 + scale[:, None, :]) + shift[:, None, :]


class _Attention(nn.Module):
    """Multi-head attention (self or cross) with optional RMSNorm on queries and keys."""

    def __init__(self, dim: int, heads: int, qk_norm: bool = False) -> None:
        super().__init__()
        self.heads = heads
        self.q = nn.Linear(dim, dim)
        self.kv = nn.Linear(dim, 2 * dim)
        self.out = nn.Linear(dim, dim)
        self.qn = nn.RMSNorm(dim, eps=1e-6) if qk_norm else nn.Identity()  # over the full width, as the authors' GLCA
        self.kn = nn.RMSNorm(dim, eps=1e-6) if qk_norm else nn.Identity()

    def forward(self, x: torch.Tensor, ctx: torch.Tensor | None = None, mask: torch.Tensor | None = None) -> torch.Tensor:
        # x: [B, N, d]; ctx: [B, M, d]; mask: [B, M] additive (0 keep, very negative drop)
        ctx = x if ctx is None else ctx
        b, n, d = x.shape
        m = ctx.shape[1]
        h = self.heads
        q = self.qn(self.q(x)).view(b, n, h, d // h).transpose(1, 2)  # [B, h, N, dh]
        k, v = self.kv(ctx).chunk(2, dim=-1)  # [B, M, d] each
        k = self.kn(k).view(b, m, h, d // h).transpose(1, 2)  # [B, h, M, dh]
        v = v.reshape(b, m, h, d // h).transpose(1, 2)
        am = None if mask is None else mask[:, None, None, :].to(q.dtype)
        o = F.scaled_dot_product_attention(q, k, v, attn_mask=am)  # [B, h, N, dh]
        return self.out(o.transpose(1, 2).reshape(b, n, d))


class _AudioAttention(nn.Module):
    """GLCA (frame-local) or global audio cross-attention with an optional per-channel gate."""

    def __init__(self, dim: int, heads: int, mode: str, gated: bool, gate_init: float) -> None:
        super().__init__()
        self.mode = mode
        # the authors feed the raw residual stream into GLCA (``x = x + self.glca(x, ...)``); q and k are RMS-normed inside
        self.attn = _Attention(dim, heads, qk_norm=True)
        self.gate = nn.Parameter(torch.full((dim,), float(gate_init))) if gated else None

    def forward(self, x: torch.Tensor, audio: torch.Tensor, amask: torch.Tensor, n_pseudo: int, n_tok: int) -> torch.Tensor:
        # x: [B, (P+T)*N, d] video tokens; audio: [B, T, w, d]; amask: [B] in {0, 1}
        b, _, d = x.shape
        t, w = audio.shape[1], audio.shape[2]
        xs = x.view(b, n_pseudo + t, n_tok, d)[:, n_pseudo:]  # [B, T, N, d] real frames
        if self.mode == "glca":
            o = self.attn(xs.reshape(b * t, n_tok, d), audio.reshape(b * t, w, d))  # [B*T, N, d]
        else:
            o = self.attn(xs.reshape(b, t * n_tok, d), audio.reshape(b, t * w, d))  # [B, T*N, d]
        o = o.reshape(b, t, n_tok, d) * amask.view(b, 1, 1, 1).to(o.dtype)
        if self.gate is not None:
            o = o * self.gate
        pad = o.new_zeros(b, n_pseudo, n_tok, d)  # pseudo-frames get no audio
        return torch.cat([pad, o], dim=1).reshape(b, (n_pseudo + t) * n_tok, d)


class _Block(nn.Module):
    def __init__(self, cfg: DiTConfig, with_audio: bool) -> None:
        super().__init__()
        d = cfg.dim
        self.norm1 = nn.LayerNorm(d, elementwise_affine=False)
        self.attn = _Attention(d, cfg.heads)
        self.norm2 = nn.LayerNorm(d, elementwise_affine=False)
        hidden = max(1, int(round(cfg.mlp_ratio * d)))
        self.mlp = nn.Sequential(nn.Linear(d, hidden), nn.GELU(approximate="tanh"), nn.Linear(hidden, d))
        self.ada = nn.Linear(d, 6 * d)
        nn.init.zeros_(self.ada.weight)
        nn.init.zeros_(self.ada.bias)
        self.ref_norm = nn.LayerNorm(d) if cfg.refs == "cross" else None
        self.ref_attn = _Attention(d, cfg.heads) if cfg.refs == "cross" else None
        self.audio = _AudioAttention(d, cfg.heads, cfg.audio, cfg.audio_gate, cfg.gate_init) if with_audio else None

    def forward(self, x, c, ref_tok, ref_mask, audio, amask, n_pseudo, n_tok, self_mask=None):
        s1, sc1, g1, s2, sc2, g2 = self.ada(F.silu(c)).chunk(6, dim=-1)  # each [B, d]
        x = x + g1[:, None, :] * self.attn(_modulate(self.norm1(x), s1, sc1), mask=self_mask)
        if self.ref_attn is not None and ref_tok is not None:
            x = x + self.ref_attn(self.ref_norm(x), ref_tok, ref_mask)
        if self.audio is not None and audio is not None:
            x = x + self.audio(x, audio, amask, n_pseudo, n_tok)
        x = x + g2[:, None, :] * self.mlp(_modulate(self.norm2(x), s2, sc2))
        return x


# --------------------------------------------------------------------------- the model
class TinyDiT(nn.Module):
    """A small latent-video DiT (adaLN-Zero) that predicts the flow-matching velocity.

    Parameters
    ----------
    config : DiTConfig
        Size and conditioning options.
    random_state : int, numpy.random.Generator or None
        Seeds the parameter initialisation (torch's global RNG is restored afterwards).

    Notes
    -----
    ``forward(x_t, t, cond)`` takes the noisy sequence on the model's timeline
    (``[B, C, n_pseudo + T, H, W]``), times ``t`` of shape ``[B]`` and the conditions, and
    returns the velocity with the same shape as ``x_t``. :meth:`timeline` builds the clean
    target on that timeline from a video and its conditions.

    References
    ----------
    Peebles & Xie, ICCV 2023 (DiT); Zhou et al., ICML 2026 (OmniShow), arXiv:2604.11804.
    """

    def __init__(self, config: DiTConfig | None = None, random_state: RandomState = 0) -> None:
        super().__init__()
        cfg = DiTConfig() if config is None else config
        if not isinstance(cfg, DiTConfig):
            raise TypeError(f"config must be a DiTConfig, got {type(cfg).__name__}")
        self.config = cfg
        d, p, c = cfg.dim, cfg.patch, cfg.in_channels
        state = torch.random.get_rng_state()
        torch.manual_seed(seed_from(random_state))
        try:
            c_in = c + (1 + c if cfg.uses_channel_path else 0)
            self.embed = nn.Linear(c_in * p * p, d)
            self.t_mlp = nn.Sequential(nn.Linear(d, d), nn.SiLU(), nn.Linear(d, d))
            layers = set(range(cfg.depth)) if cfg.audio_layers is None else set(cfg.audio_layers)
            self.blocks = nn.ModuleList(_Block(cfg, cfg.audio != "none" and i in layers) for i in range(cfg.depth))
            self.norm_out = nn.LayerNorm(d, elementwise_affine=False)
            self.ada_out = nn.Linear(d, 2 * d)
            self.head = nn.Linear(d, c * p * p)
            for lin in (self.ada_out, self.head):
                nn.init.zeros_(lin.weight)
                nn.init.zeros_(lin.bias)
            if cfg.refs == "cross":
                self.ref_embed = nn.Linear(c * p * p, d)
                self.ref_index = nn.Parameter(0.02 * torch.randn(cfg.n_refs, d))
            if cfg.audio != "none":
                self.audio_proj = nn.Linear(cfg.audio_dim, d)
                self.audio_slot = nn.Parameter(0.02 * torch.randn(cfg.audio_window, d))
        finally:
            torch.random.set_rng_state(state)

    # ----------------------------------------------------------------- helpers
    @property
    def n_pseudo(self) -> int:
        """Pseudo-frames the model prepends (``n_refs`` with channel references, else 0)."""
        return self.config.n_pseudo

    def gates(self) -> dict[int, torch.Tensor]:
        """The audio gates by block index (detached copies); empty without gated audio."""
        return {
            i: b.audio.gate.detach().clone()
            for i, b in enumerate(self.blocks)
            if b.audio is not None and b.audio.gate is not None
        }

    def check_inputs(self, x: torch.Tensor, cond: DiTConditions | None, *, on_timeline: bool = False) -> DiTConditions:
        """Validate a video (or a timeline) and its conditions; returns conditions with default masks.

        Raises
        ------
        ValueError
            For a tensor of the wrong rank, channel count, spatial size or a condition whose
            batch, frame count or size does not match the video.
        """
        cfg = self.config
        if not isinstance(x, torch.Tensor) or x.ndim != 5:
            raise ValueError(f"x must be a 5-D tensor [B, C, T, H, W], got {getattr(x, 'shape', type(x).__name__)}")
        b, c, t, h, w = x.shape
        if c != cfg.in_channels:
            raise ValueError(f"x has {c} channels, the model expects in_channels={cfg.in_channels}")
        if h % cfg.patch or w % cfg.patch:
            raise ValueError(f"frame size {h}x{w} is not divisible by patch={cfg.patch}")
        if on_timeline:
            t -= cfg.n_pseudo
        if t < 1:
            raise ValueError(f"x has {x.shape[2]} frames; needs at least {cfg.n_pseudo + 1} on the model's timeline")
        cond = DiTConditions() if cond is None else cond
        if not isinstance(cond, DiTConditions):
            raise TypeError(f"cond must be a DiTConditions or None, got {type(cond).__name__}")
        out = DiTConditions()
        if cfg.refs != "none":
            if cond.refs is None:
                raise ValueError(f"refs={cfg.refs!r} needs cond.refs of shape [B, {cfg.n_refs}, {c}, {h}, {w}]")
            if tuple(cond.refs.shape) != (b, cfg.n_refs, c, h, w):
                raise ValueError(f"cond.refs has shape {tuple(cond.refs.shape)}, expected {(b, cfg.n_refs, c, h, w)}")
            out.refs = cond.refs.to(x.dtype)
            rm = torch.ones(b, cfg.n_refs) if cond.ref_mask is None else cond.ref_mask
            if tuple(rm.shape) != (b, cfg.n_refs):
                raise ValueError(f"cond.ref_mask has shape {tuple(rm.shape)}, expected {(b, cfg.n_refs)}")
            out.ref_mask = rm.to(x.dtype)
        if cfg.pose:
            if cond.pose is None:
                out.pose = x.new_zeros(b, c, t, h, w)
                out.pose_mask = x.new_zeros(b)
            else:
                if tuple(cond.pose.shape) != (b, c, t, h, w):
                    raise ValueError(
                        f"cond.pose has shape {tuple(cond.pose.shape)}, expected {(b, c, t, h, w)} (one pose latent per frame)"
                    )
                out.pose = cond.pose.to(x.dtype)
                pm = torch.ones(b) if cond.pose_mask is None else cond.pose_mask
                if tuple(pm.shape) != (b,):
                    raise ValueError(f"cond.pose_mask has shape {tuple(pm.shape)}, expected {(b,)}")
                out.pose_mask = pm.to(x.dtype)
        if cfg.audio != "none":
            if cond.audio is None:
                out.audio = x.new_zeros(b, t, cfg.audio_window, cfg.audio_dim)
                out.audio_mask = x.new_zeros(b)
            else:
                want = (b, t, cfg.audio_window, cfg.audio_dim)
                if tuple(cond.audio.shape) != want:
                    raise ValueError(
                        f"cond.audio has shape {tuple(cond.audio.shape)}, expected {want} (one window per video frame)"
                    )
                out.audio = cond.audio.to(x.dtype)
                am = torch.ones(b) if cond.audio_mask is None else cond.audio_mask
                if tuple(am.shape) != (b,):
                    raise ValueError(f"cond.audio_mask has shape {tuple(am.shape)}, expected {(b,)}")
                out.audio_mask = am.to(x.dtype)
        return out

    def timeline(self, x: torch.Tensor, cond: DiTConditions | None = None) -> torch.Tensor:
        """The clean target on the model's timeline: ``[B, C, n_pseudo + T, H, W]``.

        With channel references the references are prepended as pseudo-frames (so the
        flow-matching loss on them reconstructs the references); otherwise ``x`` itself.
        """
        cond = self.check_inputs(x, cond)
        if self.n_pseudo == 0:
            return x
        return torch.cat([cond.refs.transpose(1, 2), x], dim=2)  # [B, C, R+T, H, W]

    def frame_keep(self, cond: DiTConditions, b: int, tt: int) -> torch.Tensor | None:
        """``[B, n_pseudo + T]`` booleans, False at the absent pseudo-frames that are dropped; None if none is.

        ``cond`` must already be checked (:meth:`check_inputs`). Only channel references
        with ``absent_refs="drop"`` drop frames (the authors build no pseudo-frame for an
        absent reference).
        """
        cfg = self.config
        if cfg.refs != "channel" or cfg.absent_refs != "drop":
            return None
        present = cond.ref_mask > 0  # [B, R]
        if bool(present.all()):
            return None
        return torch.cat([present, present.new_ones(b, tt - cfg.n_pseudo)], dim=1)

    def loss_weights(self, x: torch.Tensor, cond: DiTConditions | None = None) -> torch.Tensor | None:
        """Weights ``[B, 1, n_pseudo + T, 1, 1]`` of the timeline's frames in the loss (0: dropped), or None (all 1)."""
        cond = self.check_inputs(x, cond)
        b, t = x.shape[0], x.shape[2]
        keep = self.frame_keep(cond, b, self.n_pseudo + t)
        return None if keep is None else keep.to(x.dtype)[:, None, :, None, None]

    def _patchify(self, x: torch.Tensor) -> torch.Tensor:
        # x: [B, C, T, H, W] -> [B, T*h*w, C*p*p]
        b, c, t, hh, ww = x.shape
        p = self.config.patch
        x = x.view(b, c, t, hh // p, p, ww // p, p).permute(0, 2, 3, 5, 1, 4, 6)
        return x.reshape(b, t * (hh // p) * (ww // p), c * p * p)

    def _unpatchify(self, tok: torch.Tensor, t: int, hh: int, ww: int) -> torch.Tensor:
        # tok: [B, T*h*w, C*p*p] -> [B, C, T, H, W]
        p, c = self.config.patch, self.config.in_channels
        b = tok.shape[0]
        x = tok.view(b, t, hh // p, ww // p, c, p, p).permute(0, 4, 1, 2, 5, 3, 6)
        return x.reshape(b, c, t, hh, ww)

    def _channel_input(self, x_t: torch.Tensor, cond: DiTConditions) -> torch.Tensor:
        """``[x_t; y]`` on channels, ``[B, 2C+1, R+T, H, W]``, with ``y = [mask (1 ch); latents (C ch)]``.

        ``y`` holds the (masked) references at the pseudo-frames and the (masked) pose at the
        frames, zeros where a path is off; ``cond`` must already be checked. Built segment by
        segment with concatenations (the values of zero-filling ``y`` and writing each segment).
        """
        cfg = self.config
        b, c, tt, hh, ww = x_t.shape
        r = cfg.n_pseudo
        tv = tt - r
        ymask, ylat = [], []  # per timeline segment: [B, 1, *, H, W] and [B, C, *, H, W]
        if cfg.refs == "channel":
            rm = cond.ref_mask[:, None, :, None, None]  # [B, 1, R, 1, 1]
            ymask.append(rm.expand(b, 1, r, hh, ww))
            ylat.append(cond.refs.transpose(1, 2) * rm)
        if cfg.pose:
            pm = cond.pose_mask.view(b, 1, 1, 1, 1)
            ymask.append(pm.expand(b, 1, tv, hh, ww))
            ylat.append(cond.pose * pm)
        else:
            ymask.append(x_t.new_zeros(b, 1, tv, hh, ww))
            ylat.append(x_t.new_zeros(b, c, tv, hh, ww))
        return torch.cat([x_t, torch.cat(ymask, dim=2), torch.cat(ylat, dim=2)], dim=1)

    def forward(self, x_t: torch.Tensor, t: torch.Tensor, cond: DiTConditions | None = None) -> torch.Tensor:
        """Velocity ``[B, C, n_pseudo + T, H, W]`` at the noisy timeline ``x_t`` and times ``t`` ``[B]``."""
        cfg = self.config
        cond = self.check_inputs(x_t, cond, on_timeline=True)
        b, c, tt, hh, ww = x_t.shape
        p, d, r = cfg.patch, cfg.dim, cfg.n_pseudo
        t = torch.as_tensor(t, dtype=x_t.dtype).reshape(-1)
        if t.numel() == 1:
            t = t.expand(b)
        if t.shape != (b,):
            raise ValueError(f"t has shape {tuple(t.shape)}, expected ({b},) or a scalar")
        inp = self._channel_input(x_t, cond) if cfg.uses_channel_path else x_t  # [B, C (+ C+1), R+T, H, W]
        n_tok = (hh // p) * (ww // p)
        keep = self.frame_keep(cond, b, tt)  # [B, R+T] or None
        # a sample with no reference at all has no pseudo-frames: its real frames count from 0
        no_refs = None if keep is None else ~keep[:, :r].any(dim=1)  # [B]
        tok = self.embed(self._patchify(inp))  # [B, (R+T)*N, d]
        pos = _pos_table(tt, hh // p, ww // p, d, 0, x_t.device).reshape(1, tt * n_tok, d)
        if no_refs is not None and bool(no_refs.any()):
            shifted = _shifted_pos_table(tt, r, hh // p, ww // p, d, x_t.device)
            pos = torch.where(no_refs[:, None, None], shifted, pos)  # [B, (R+T)*N, d]
        tok = tok + pos.to(tok.dtype)
        self_mask = None
        if keep is not None:
            self_mask = torch.zeros(b, tt, dtype=tok.dtype).masked_fill(~keep, float("-inf"))
            self_mask = self_mask.repeat_interleave(n_tok, dim=1)  # [B, (R+T)*N] additive key mask
        emb = self.t_mlp(_sincos(1000.0 * t, d).to(tok.dtype))  # [B, d]
        ref_tok = ref_mask = None
        if cfg.refs == "cross":
            rp = self._patchify(cond.refs.transpose(1, 2))  # [B, R*N, C*p*p]
            ref_tok = self.ref_embed(rp).view(b, cfg.n_refs, n_tok, d)
            ref_tok = (
                ref_tok + _pos_table(1, hh // p, ww // p, d, 0, x_t.device)[0][None, None] + self.ref_index[None, :, None, :]
            )
            ref_tok = ref_tok.reshape(b, cfg.n_refs * n_tok, d)
            keep = cond.ref_mask.clone()
            keep[keep.sum(1) == 0] = 1.0  # a sample with no reference attends to the black images
            ref_mask = ((1.0 - keep) * -1e4).repeat_interleave(n_tok, dim=1)  # [B, R*N]
        audio = amask = None
        if cfg.audio != "none":
            tv = tt - r
            audio = self.audio_proj(cond.audio) + self.audio_slot[None, None]  # [B, T, w, d]
            # the video tokens' frame code (no spatial part), in both variants: global attention needs it to
            # align, GLCA does not, and with it the two differ only in which audio tokens a frame sees
            pe = _frame_code(tv, d, r, x_t.device)[None].expand(b, tv, d)  # [B, T, d]
            if no_refs is not None and bool(no_refs.any()):
                pe = torch.where(no_refs[:, None, None], _frame_code(tv, d, 0, x_t.device)[None], pe)
            audio = audio + pe[:, :, None, :].to(audio.dtype)
            amask = cond.audio_mask
        for blk in self.blocks:
            tok = blk(tok, emb, ref_tok, ref_mask, audio, amask, r, n_tok, self_mask)
        sh, sc = self.ada_out(F.silu(emb)).chunk(2, dim=-1)
        out = self.head(_modulate(self.norm_out(tok), sh, sc))  # [B, (R+T)*N, C*p*p]
        return self._unpatchify(out, tt, hh, ww)


# --------------------------------------------------------------------------- training and sampling
def flow_matching_loss(
    model: TinyDiT,
    x: torch.Tensor,
    cond: DiTConditions | None = None,
    *,
    random_state: RandomState = None,
    t: torch.Tensor | None = None,
    noise: torch.Tensor | None = None,
) -> torch.Tensor:
    """Flow-matching velocity loss ``mean ||v_theta(x_t, t) - (eps - x)||^2``.

    Parameters
    ----------
    model : TinyDiT
    x : Tensor
        ``[B, C, T, H, W]`` clean videos (latents).
    cond : DiTConditions, optional
        Conditions; with channel references the loss also covers the pseudo-frames.
    random_state : int, numpy.random.Generator or None
        Seeds the draws of ``t ~ U(0, 1)`` and ``eps ~ N(0, I)``.
    t, noise : Tensor, optional
        Fixed times ``[B]`` and noise (on the model's timeline) instead of random draws.

    Returns
    -------
    Tensor
        The scalar loss (differentiable).

    Raises
    ------
    TypeError
        For a model that is not a :class:`TinyDiT`, or ``x``, ``t`` or ``noise`` that are not tensors.
    ValueError
        For videos (with their references) or noise that hold NaN or infinity, noise of
        the wrong shape, or times ``t`` that are not ``[B]`` values in ``[0, 1]``.

    References
    ----------
    Lipman et al., ICLR 2023; Liu et al., "Flow Straight and Fast" (rectified flow), ICLR 2023.
    """
    if not isinstance(model, TinyDiT):
        raise TypeError(f"model must be a TinyDiT, got {type(model).__name__}")
    for name, z in (("x", x), ("t", t), ("noise", noise)):
        if z is not None and not isinstance(z, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(z).__name__}")
    target_x = model.timeline(x, cond)  # [B, C, R+T, H, W]
    if not bool(torch.isfinite(target_x).all()):
        raise ValueError("x (or the condition's reference frames) holds NaN or infinite values; the videos must be finite")
    b = target_x.shape[0]
    if t is not None:
        if tuple(t.shape) != (b,):
            raise ValueError(f"t has shape {tuple(t.shape)}, expected ({b},): one time per video")
        if not bool(((t >= 0) & (t <= 1)).all()):  # also False for NaN
            bad = t[~((t >= 0) & (t <= 1))][0]
            raise ValueError(f"t holds {float(bad)!r}; flow-matching times must lie in [0, 1] (0 = data, 1 = noise)")
    if noise is not None and not bool(torch.isfinite(noise).all()):
        raise ValueError("noise holds NaN or infinite values")
    g = torch_generator(random_state) if (t is None or noise is None) else None
    if t is None:
        t = torch.rand(b, generator=g).to(target_x.dtype)
    if noise is None:
        noise = torch.randn(target_x.shape, generator=g).to(target_x.dtype)
    if noise.shape != target_x.shape:
        raise ValueError(f"noise has shape {tuple(noise.shape)}, expected {tuple(target_x.shape)}")
    tb = t.view(b, 1, 1, 1, 1)
    x_t = (1 - tb) * target_x + tb * noise
    v = model(x_t, t, cond)
    w = model.loss_weights(x, cond)  # [B, 1, R+T, 1, 1]: 0 at dropped (absent) pseudo-frames
    if w is None:
        return F.mse_loss(v, noise - target_x)
    w = w.expand_as(v)
    return ((v - (noise - target_x)) ** 2 * w).sum() / w.sum()


class _FlatAdamW:
    """AdamW on one flat buffer per parameter group: the update of ``torch.optim.AdamW``, element for element.

    ``torch.optim.AdamW`` on CPU tensors updates one parameter at a time (its single-tensor
    path): for every parameter, ``m <- lerp(m, g, 1 - beta1)``, ``v <- beta2 v + (1 - beta2) g^2``,
    ``p <- p - lr / (1 - beta1^k) * m / (sqrt(v) / sqrt(1 - beta2^k) + eps)`` (after
    ``p <- (1 - lr wd) p`` with weight decay ``wd``), about eight small tensor operations per
    parameter. Here each group's parameters are made views into one contiguous buffer (and
    its moments are two more), so a step runs those same operations, in the same order and
    with the same scalars, once per group on the concatenated gradient: every element
    gets exactly the value ``torch.optim.AdamW(foreach=False)`` gives it (a test checks it
    bit for bit). A parameter without a gradient at a step is skipped and keeps its own
    step count, as in torch. :meth:`release` gives each parameter its own storage again.

    Only for parameters of one dtype and device per group (:func:`train_flow_matching`
    falls back to ``torch.optim.AdamW`` otherwise).

    References
    ----------
    Loshchilov & Hutter, "Decoupled Weight Decay Regularization", ICLR 2019.
    """

    def __init__(
        self, groups: list[dict], *, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8, weight_decay: float = 0.0
    ) -> None:
        self.betas, self.eps, self.weight_decay = (float(betas[0]), float(betas[1])), float(eps), float(weight_decay)
        self.param_groups: list[dict] = []
        for g in groups:
            ps = list(g["params"])
            with torch.no_grad():
                flat = torch.cat([q.detach().reshape(-1) for q in ps])  # [P]
                offsets, o = [], 0
                for q in ps:
                    offsets.append((o, q.numel()))
                    q.data = flat[o : o + q.numel()].view_as(q)
                    o += q.numel()
            self.param_groups.append(
                {
                    "params": ps,
                    "lr": float(g["lr"]),
                    "flat": flat,
                    "offsets": offsets,
                    "exp_avg": torch.zeros_like(flat),
                    "exp_avg_sq": torch.zeros_like(flat),
                    "steps": [0] * len(ps),
                }
            )

    @staticmethod
    def supports(groups: list[dict]) -> bool:
        """Whether every group holds dense floating-point parameters of a single dtype and device."""
        for g in groups:
            ps = list(g["params"])
            if (
                not ps
                or len({(q.dtype, q.device) for q in ps}) != 1
                or not ps[0].is_floating_point()
                or any(q.is_sparse for q in ps)
            ):
                return False
        return True

    def zero_grad(self, set_to_none: bool = True) -> None:
        for g in self.param_groups:
            for q in g["params"]:
                if set_to_none:
                    q.grad = None
                elif q.grad is not None:
                    q.grad.detach_().zero_()

    def _update(self, param, grad, exp_avg, exp_avg_sq, step: int, lr: float) -> None:
        # the operations of torch.optim.adam._single_tensor_adam (amsgrad=False, maximize=False), in its order
        beta1, beta2 = self.betas
        if self.weight_decay != 0:
            param.mul_(1 - lr * self.weight_decay)
        exp_avg.lerp_(grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        step_f = float(step)
        bias_correction1 = 1 - beta1**step_f
        bias_correction2 = 1 - beta2**step_f
        step_size = lr / bias_correction1
        bias_correction2_sqrt = bias_correction2**0.5
        denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(self.eps)
        param.addcdiv_(exp_avg, denom, value=-step_size)

    @torch.no_grad()
    def step(self) -> None:
        for g in self.param_groups:
            ps, steps = g["params"], g["steps"]
            have = [q.grad is not None for q in ps]
            if all(have) and len(set(steps)) == 1:
                k = steps[0] + 1
                g["steps"] = [k] * len(ps)
                grad = torch.cat([q.grad.reshape(-1) for q in ps])  # [P]
                self._update(g["flat"], grad, g["exp_avg"], g["exp_avg_sq"], k, g["lr"])
                continue
            for j, (q, (o, n)) in enumerate(zip(ps, g["offsets"])):
                if have[j]:
                    steps[j] += 1
                    self._update(
                        g["flat"][o : o + n],
                        q.grad.reshape(-1),
                        g["exp_avg"][o : o + n],
                        g["exp_avg_sq"][o : o + n],
                        steps[j],
                        g["lr"],
                    )

    def release(self) -> None:
        """Give every parameter its own storage again (the values are kept)."""
        with torch.no_grad():
            for g in self.param_groups:
                for q in g["params"]:
                    q.data = q.data.clone()


def flow_matching_step(
    model: TinyDiT,
    optimizer: torch.optim.Optimizer,
    x: torch.Tensor,
    cond: DiTConditions | None = None,
    *,
    random_state: RandomState = None,
    clip: float | None = 1.0,
) -> float:
    """One optimiser step on :func:`flow_matching_loss`; returns the loss as a float."""
    model.train()
    optimizer.zero_grad(set_to_none=True)
    loss = flow_matching_loss(model, x, cond, random_state=random_state)
    loss.backward()
    if clip is not None:
        nn.utils.clip_grad_norm_(model.parameters(), check_real(clip, "clip", lo=0.0, lo_open=True))
    optimizer.step()
    return float(loss.detach())


def train_flow_matching(
    model: TinyDiT,
    batches: Callable[[int], tuple[torch.Tensor, DiTConditions | None]],
    steps: int,
    *,
    lr: float = 2e-3,
    audio_lr_mult: float = 1.0,
    weight_decay: float = 0.0,
    random_state: RandomState = 0,
    desc: str = "flow matching",
    log_every: int = 0,
    optimizer: torch.optim.Optimizer | None = None,
    callback: Callable[[int, TinyDiT], None] | None = None,
    show_progress: bool = True,
    schedule: str = "constant",
) -> list[float]:
    """Train ``model`` for ``steps`` AdamW steps on ``batches(step) -> (x, cond)``.

    Parameters
    ----------
    model : TinyDiT
    batches : callable
        ``batches(i)`` returns the ``i``-th batch: a video tensor ``[B, C, T, H, W]`` and its
        conditions (or ``None``); it should be deterministic in ``i`` for reproducibility.
    steps : int
        Optimiser steps.
    lr : float
        Learning rate.
    audio_lr_mult : float
        Learning-rate multiplier of the audio projector and audio attention (OmniShow's
        separate audio learning rate).
    weight_decay : float
        AdamW weight decay.
    random_state : int, numpy.random.Generator or None
        Seeds the per-step draws of ``t`` and noise.
    desc : str
        Progress label.
    log_every : int
        Record the loss every ``log_every`` steps (0: every step).
    optimizer : torch.optim.Optimizer, optional
        Continue with this optimiser instead of a fresh AdamW.
    callback : callable, optional
        ``callback(step, model)`` after every step (e.g. to record the gate).
    show_progress : bool
        Report progress with :func:`icml26._common.progress` (False: silent).
    schedule : {"constant", "cosine"}
        Learning rate over the run: constant, or cosine decay from ``lr`` to zero.

    Returns
    -------
    list of float
        The recorded losses.
    """
    steps = check_int(steps, "steps", low=0)
    lr = check_real(lr, "lr", lo=0.0, lo_open=True)
    mult = check_real(audio_lr_mult, "audio_lr_mult", lo=0.0, lo_open=True)
    if schedule not in ("constant", "cosine"):
        raise ValueError(f"schedule={schedule!r} is not valid; use 'constant' or 'cosine'")
    if optimizer is None:
        audio_p = [p for n, p in model.named_parameters() if ".audio." in n or n.startswith("audio_")]
        ids = {id(p) for p in audio_p}
        rest = [p for p in model.parameters() if id(p) not in ids]
        groups = [{"params": rest, "lr": lr}]
        if audio_p:
            groups.append({"params": audio_p, "lr": lr * mult})
        # the same AdamW update as torch.optim.AdamW(groups, lr=lr, weight_decay=weight_decay), on flat buffers
        flat = _FlatAdamW.supports(groups)
        optimizer = (
            _FlatAdamW(groups, weight_decay=weight_decay) if flat else torch.optim.AdamW(groups, lr=lr, weight_decay=weight_decay)
        )
        own = flat
    else:
        own = False
    base = seed_from(random_state)
    lr0 = [g["lr"] for g in optimizer.param_groups]
    losses = []
    every = max(1, int(log_every)) if log_every else 1
    try:
        for i in progress(range(steps), desc, disable=not show_progress):
            if schedule == "cosine":
                for g, l0 in zip(optimizer.param_groups, lr0):
                    g["lr"] = 0.5 * l0 * (1.0 + math.cos(math.pi * i / max(steps, 1)))
            x, cond = batches(i)
            loss = flow_matching_step(model, optimizer, x, cond, random_state=(base + 7919 * (i + 1)) % 2**32)
            if i % every == 0:
                losses.append(loss)
            if callback is not None:
                callback(i, model)
    finally:
        if own:
            optimizer.release()
    return losses


@torch.no_grad()
def euler_sample(
    model: TinyDiT,
    shape: tuple[int, int, int, int, int],
    cond: DiTConditions | None = None,
    *,
    steps: int = 20,
    random_state: RandomState = None,
    return_pseudo: bool = False,
) -> torch.Tensor:
    """Integrate the learned flow from noise (``t = 1``) to data (``t = 0``) with Euler steps.

    Parameters
    ----------
    model : TinyDiT
    shape : tuple of 5 ints
        ``(B, C, T, H, W)`` of the videos to generate (without pseudo-frames).
    cond : DiTConditions, optional
        Conditions for the batch.
    steps : int
        Euler steps on a uniform grid ``1 = t_0 > ... > t_K = 0``.
    random_state : int, numpy.random.Generator or None
        Seeds the initial noise.
    return_pseudo : bool
        Also return the denoised pseudo-frames (the reconstructed references).

    Returns
    -------
    Tensor
        ``[B, C, T, H, W]`` (or ``[B, C, n_pseudo + T, H, W]`` with ``return_pseudo``).
    """
    if not isinstance(model, TinyDiT):
        raise TypeError(f"model must be a TinyDiT, got {type(model).__name__}")
    steps = check_int(steps, "steps")
    if len(tuple(shape)) != 5:
        raise ValueError(f"shape={tuple(shape)!r} must be (B, C, T, H, W)")
    b, c, t, h, w = (check_int(s, "shape entry") for s in shape)
    r = model.n_pseudo
    was = model.training
    model.eval()
    g = torch_generator(random_state)
    x = torch.randn((b, c, r + t, h, w), generator=g)
    model.check_inputs(x, cond, on_timeline=True)
    grid = torch.linspace(1.0, 0.0, steps + 1)
    for k in range(steps):
        tk, tn = float(grid[k]), float(grid[k + 1])
        v = model(x, torch.full((b,), tk), cond)
        x = x + (tn - tk) * v
    model.train(was)
    return x if return_pseudo else x[:, :, r:]
