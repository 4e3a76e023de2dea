"""OmniShow at toy scale: stand-in metrics, task mixtures and decoupled-then-joint training.

The model is :class:`icml26.videolab.dit.TinyDiT` (its conditioning paths are options) and
the data are :func:`icml26.videolab.hoi.make_hoi_clips`. This module adds what chapter 05
needs on top: the stand-in metrics (reference colour error for FaceSim/NexusScore,
mouth–audio correlation and lag for Sync-C/D, keypoint error for AKD), batch samplers over
OmniShow's task mixture (R2V, A2V, RA2V, RP2V, RAP2V), weight interpolation of an R2V and an
A2V model, and the decoupled-then-joint recipe against joint-only training.

References
----------
Zhou et al., "OmniShow: Unifying Multimodal Conditions for Human-Object Interaction Video
Generation", ICML 2026, arXiv:2604.11804; code github.com/Correr-Zhou/OmniShow.
"""

from __future__ import annotations

import copy
import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import torch

from icml26._common import RandomState, check_int, check_random_state, check_real, seed_from
from icml26.videolab.dit import DiTConditions, DiTConfig, TinyDiT, euler_sample, flow_matching_loss, train_flow_matching
from icml26.videolab.hoi import HOIClips, make_hoi_clips, mouth_heights

__all__ = [
    "TASKS",
    "task_conditions",
    "task_batches",
    "mixture_batches",
    "mouth_sync",
    "reference_colour_error",
    "pose_keypoint_error",
    "score_hoi",
    "heldout_velocity_loss",
    "interpolate_models",
    "decoupled_then_joint",
    "n_parameters",
    "matched_mlp_ratio",
    "shuffled_audio",
    "conditioning_ablation",
    "training_recipes",
]

#: Which modalities each task gives: (references, audio, pose). "T2V" gives none (our stand-in for
#: the text-to-video pretraining of the backbone; there is no text here).
TASKS: dict[str, tuple[bool, bool, bool]] = {
    "T2V": (False, False, False),
    "R2V": (True, False, False),
    "A2V": (False, True, False),
    "RA2V": (True, True, False),
    "RP2V": (True, False, True),
    "RAP2V": (True, True, True),
}


def _check_tasks(tasks: Sequence[str]) -> list[str]:
    if isinstance(tasks, str):
        tasks = [tasks]
    tasks = list(tasks)
    bad = [t for t in tasks if t not in TASKS]
    if bad or not tasks:
        raise ValueError(f"tasks={tasks!r} is not valid; use a non-empty list of {sorted(TASKS)}")
    return tasks


def task_conditions(clips: HOIClips, tasks: Sequence[str] | str) -> DiTConditions:
    """Conditions for ``clips`` with clip ``i`` under task ``tasks[i]`` (or one task for all).

    Parameters
    ----------
    clips : HOIClips
    tasks : str or sequence of str
        One task name from :data:`TASKS`, or one per clip.

    Returns
    -------
    DiTConditions
        Modalities a task does not give are zeroed and masked out.
    """
    if not isinstance(clips, HOIClips):
        raise TypeError(f"clips must be HOIClips, got {type(clips).__name__}")
    n = len(clips)
    names = [tasks] * n if isinstance(tasks, str) else list(tasks)
    _check_tasks(names)
    if len(names) != n:
        raise ValueError(f"got {len(names)} tasks for {n} clips")
    flags = torch.tensor([TASKS[t] for t in names], dtype=torch.float32)  # [n, 3]
    r, a, p = flags[:, 0], flags[:, 1], flags[:, 2]
    return DiTConditions(
        refs=clips.refs * r.view(n, 1, 1, 1, 1),
        ref_mask=r[:, None].expand(n, 2).clone(),
        pose=clips.pose * p.view(n, 1, 1, 1, 1),
        pose_mask=p,
        audio=clips.audio * a.view(n, 1, 1, 1),
        audio_mask=a,
    )


def task_batches(clips: HOIClips, batch_size: int, tasks: Sequence[str] | str, *, random_state: RandomState = 0) -> Callable:
    """A deterministic batch sampler ``i -> (video, conditions)`` for :func:`train_flow_matching`.

    Batch ``i`` draws ``batch_size`` clips with replacement and a task per clip, uniformly
    from ``tasks``, from a generator seeded by ``(random_state, i)``.
    """
    if not isinstance(clips, HOIClips):
        raise TypeError(f"clips must be HOIClips, got {type(clips).__name__}")
    b = check_int(batch_size, "batch_size")
    names = _check_tasks(tasks)
    base = seed_from(random_state)
    n = len(clips)

    def batch(i: int):
        g = np.random.default_rng([base, int(i)])
        idx = g.integers(0, n, b)
        ts = [names[k] for k in g.integers(0, len(names), b)]
        sub = clips.take(idx)
        return sub.video, task_conditions(sub, ts)

    return batch


def mixture_batches(
    parts: Sequence[tuple[HOIClips, Sequence[str] | str]], batch_size: int, *, random_state: RandomState = 0
) -> Callable:
    """A batch sampler over several sources, each with its own tasks (e.g. the union of R2V, A2V and joint data).

    Each clip of a batch comes from source ``k`` with probability proportional to its size
    and gets a task drawn uniformly from that source's tasks.
    """
    parts = list(parts)
    if not parts:
        raise ValueError("parts must hold at least one (clips, tasks) pair")
    for clips, tasks in parts:
        if not isinstance(clips, HOIClips):
            raise TypeError(f"each part must be (HOIClips, tasks), got {type(clips).__name__}")
        _check_tasks(tasks)
    b = check_int(batch_size, "batch_size")
    base = seed_from(random_state)
    sizes = np.array([len(c) for c, _ in parts], float)
    names = [[t] if isinstance(t, str) else list(t) for _, t in parts]

    def batch(i: int):
        g = np.random.default_rng([base, int(i)])
        src = g.choice(len(parts), size=b, p=sizes / sizes.sum())
        vids, conds = [], []
        for k in range(len(parts)):
            m = int((src == k).sum())
            if m == 0:
                continue
            sub = parts[k][0].take(g.integers(0, len(parts[k][0]), m))
            vids.append(sub.video)
            conds.append(task_conditions(sub, [names[k][j] for j in g.integers(0, len(names[k]), m)]))
        cat = lambda f: torch.cat([getattr(c, f) for c in conds])  # noqa: E731
        return torch.cat(vids), DiTConditions(
            refs=cat("refs"),
            ref_mask=cat("ref_mask"),
            pose=cat("pose"),
            pose_mask=cat("pose_mask"),
            audio=cat("audio"),
            audio_mask=cat("audio_mask"),
        )

    return batch


# --------------------------------------------------------------------------- metrics
def mouth_sync(heights: np.ndarray, envelope: np.ndarray, *, max_lag: int = 2) -> dict[str, np.ndarray]:
    """Sync stand-in: per-clip Pearson correlation of mouth height and audio envelope, and the lag of its peak.

    Parameters
    ----------
    heights, envelope : ndarray ``[n, T]``
    max_lag : int
        Lags ``-max_lag ... max_lag`` (frames) of the normalised cross-correlation are searched;
        a positive lag means the mouth trails the audio.

    Returns
    -------
    dict
        ``corr`` ``[n]`` (0 for a constant mouth), ``lag`` ``[n]`` (frames).
    """
    h = np.asarray(heights, dtype=np.float64)
    e = np.asarray(envelope, dtype=np.float64)
    if h.ndim != 2 or h.shape != e.shape:
        raise ValueError(f"heights {h.shape} and envelope {e.shape} must both be [n, T] of one shape")
    if not (np.isfinite(h).all() and np.isfinite(e).all()):
        raise ValueError("heights and envelope must be finite")
    t = h.shape[1]
    lag_max = check_int(max_lag, "max_lag", low=0)
    if lag_max > t - 2:
        raise ValueError(f"max_lag={lag_max} must be at most T - 2 = {t - 2}")

    def z(x):
        sd = x.std(axis=1, keepdims=True)
        return np.where(sd > 1e-8, (x - x.mean(axis=1, keepdims=True)) / np.where(sd > 1e-8, sd, 1.0), 0.0)

    zh, ze = z(h), z(e)
    corr = (zh * ze).mean(axis=1)
    lags = np.arange(-lag_max, lag_max + 1)
    cc = np.stack([(zh[:, max(k, 0) : t + min(k, 0)] * ze[:, max(-k, 0) : t - max(k, 0)]).mean(axis=1) for k in lags], axis=1)
    lag = lags[np.argmax(cc, axis=1)]
    lag = np.where(np.abs(zh).sum(axis=1) > 0, lag, lag_max)  # a constant mouth has no peak: worst lag
    return {"corr": corr, "lag": lag.astype(float)}


def _prototypes(refs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-clip reference colours: person ``[n, 3]`` and the object's (up to two) colours ``[n, 2, 3]``."""
    n = refs.shape[0]
    person = np.zeros((n, 3))
    obj = np.zeros((n, 2, 3))
    for i in range(n):
        for slot in (0, 1):
            px = refs[i, slot].reshape(3, -1).T  # [S*S, 3]
            fg = px[np.linalg.norm(px, axis=1) > 0.35]
            if slot == 0:
                person[i] = fg.mean(axis=0) if len(fg) else 0.0
            else:
                cols = np.unique(np.round(fg, 4), axis=0) if len(fg) else np.zeros((1, 3))
                obj[i] = cols[[0, -1]] if len(cols) >= 2 else np.repeat(cols[:1], 2, axis=0)
    return person, obj


def _regions(video: np.ndarray, refs: np.ndarray):
    """Assign the foreground pixels of each frame to the person or the object (nearest reference colour)."""
    person, obj = _prototypes(refs)
    px = np.moveaxis(video, 1, -1)  # [n, T, S, S, 3]
    fg = (np.linalg.norm(px, axis=-1) > 0.35) & (px.mean(axis=-1) > -0.3)  # not background, not mouth
    dp = np.linalg.norm(px - person[:, None, None, None, :], axis=-1)
    do = np.min(np.stack([np.linalg.norm(px - obj[:, None, None, None, k, :], axis=-1) for k in range(2)]), axis=0)
    is_p = fg & (dp <= do)
    is_o = fg & (do < dp)
    return px, is_p, is_o, person, obj


def _video_np(video) -> np.ndarray:
    v = np.asarray(video.detach().cpu().numpy() if isinstance(video, torch.Tensor) else video, dtype=np.float64)
    if v.ndim != 5 or v.shape[1] != 3:
        raise ValueError(f"video must be [n, 3, T, S, S], got shape {v.shape}")
    if not np.isfinite(v).all():
        raise ValueError("video must be finite")
    return v


def reference_colour_error(video, clips: HOIClips) -> np.ndarray:
    """Reference-fidelity stand-in: colour error of the person and object regions, per clip.

    Each foreground pixel (not grey background, not the black mouth) is assigned to the
    person or the object by its nearest reference colour; a region's error is the Euclidean
    RGB distance (``[-1, 1]`` units) between its mean colour and its reference's mean colour,
    averaged over frames and the two regions. A region with no pixel counts as background.

    Returns
    -------
    ndarray ``[n]``
    """
    v = _video_np(video)
    if not isinstance(clips, HOIClips) or len(clips) != v.shape[0]:
        raise ValueError("clips must be the HOIClips the videos were generated for (same length)")
    px, is_p, is_o, person, obj = _regions(v, clips.refs.numpy())
    out = np.zeros(v.shape[0])
    for mask, ref in ((is_p, person), (is_o, obj.mean(axis=1))):
        cnt = mask.sum(axis=(2, 3))  # [n, T]
        tot = (px * mask[..., None]).sum(axis=(2, 3))  # [n, T, 3]
        mean = np.where(cnt[..., None] > 0, tot / np.maximum(cnt, 1)[..., None], 0.0)
        out += np.linalg.norm(mean - ref[:, None, :], axis=-1).mean(axis=1) / 2
    return out


def pose_keypoint_error(video, clips: HOIClips) -> np.ndarray:
    """Pose stand-in (AKD): mean distance in pixels between region centroids and the target keypoints.

    The person and object regions are found as in :func:`reference_colour_error`; a region
    with no pixel scores half the frame side.

    Returns
    -------
    ndarray ``[n]``
    """
    v = _video_np(video)
    if not isinstance(clips, HOIClips) or len(clips) != v.shape[0]:
        raise ValueError("clips must be the HOIClips the videos were generated for (same length)")
    _, is_p, is_o, _, _ = _regions(v, clips.refs.numpy())
    s = v.shape[-1]
    yy, xx = np.mgrid[0:s, 0:s]
    err = np.zeros(v.shape[:1] + v.shape[2:3])  # [n, T]
    for k, mask in enumerate((is_p, is_o)):
        cnt = mask.sum(axis=(2, 3))
        cy = (mask * yy).sum(axis=(2, 3)) / np.maximum(cnt, 1)
        cx = (mask * xx).sum(axis=(2, 3)) / np.maximum(cnt, 1)
        d = np.hypot(cy - clips.keypoints[:, :, k, 0], cx - clips.keypoints[:, :, k, 1])
        err += np.where(cnt > 0, d, s / 2) / 2
    return err.mean(axis=1)


def score_hoi(
    model: TinyDiT, clips: HOIClips, task: str, *, steps: int = 10, batch_size: int = 64, random_state: RandomState = 0
) -> dict[str, float | np.ndarray]:
    """Generate one clip per test clip under ``task`` and score it with the stand-in metrics.

    Returns
    -------
    dict
        ``video`` (the generated clips), ``colour`` (mean colour error), ``sync`` (mean
        correlation; with audio), ``lag`` (mean absolute lag; with audio), ``akd`` (mean
        keypoint error, pixels), and the per-clip arrays under ``*_per_clip``.
    """
    if not isinstance(model, TinyDiT):
        raise TypeError(f"model must be a TinyDiT, got {type(model).__name__}")
    if task not in TASKS:
        raise ValueError(f"task={task!r} is not valid; use one of {sorted(TASKS)}")
    bs = check_int(batch_size, "batch_size")
    rng = check_random_state(random_state)
    outs = []
    for lo in range(0, len(clips), bs):
        sub = clips.take(slice(lo, lo + bs))
        cond = task_conditions(sub, task)
        outs.append(euler_sample(model, tuple(sub.video.shape), cond, steps=steps, random_state=rng).clamp(-1, 1))
    video = torch.cat(outs)
    res: dict = {"video": video}
    col = reference_colour_error(video, clips)
    res.update(colour=float(col.mean()), colour_per_clip=col)
    akd = pose_keypoint_error(video, clips)
    res.update(akd=float(akd.mean()), akd_per_clip=akd)
    h = mouth_heights(video)
    sy = mouth_sync(h, clips.envelope)
    res.update(
        sync=float(sy["corr"].mean()),
        lag=float(np.abs(sy["lag"]).mean()),
        sync_per_clip=sy["corr"],
        lag_per_clip=sy["lag"],
        heights=h,
    )
    return res


@torch.no_grad()
def heldout_velocity_loss(
    model: TinyDiT, clips: HOIClips, task: str, *, n_draws: int = 4, random_state: RandomState = 0
) -> float:
    """Mean flow-matching loss on held-out clips under ``task`` (fixed draws of ``t`` and noise)."""
    if not isinstance(model, TinyDiT):
        raise TypeError(f"model must be a TinyDiT, got {type(model).__name__}")
    if task not in TASKS:
        raise ValueError(f"task={task!r} is not valid; use one of {sorted(TASKS)}")
    k = check_int(n_draws, "n_draws")
    base = seed_from(random_state)
    cond = task_conditions(clips, task)
    was = model.training
    model.eval()
    tot = sum(float(flow_matching_loss(model, clips.video, cond, random_state=base + j)) for j in range(k)) / k
    model.train(was)
    return tot


# --------------------------------------------------------------------------- decoupled-then-joint
def interpolate_models(model_r2v: TinyDiT, model_a2v: TinyDiT, lam: float) -> TinyDiT:
    """Weight interpolation ``theta = lam * theta_R2V + (1 - lam) * theta_A2V`` on the shared weights.

    The audio modules (projector, audio attention and gates) come from the A2V model, as in
    OmniShow's merge; every other tensor is interpolated.

    Parameters
    ----------
    model_r2v, model_a2v : TinyDiT
        Two models of the same configuration.
    lam : float
        Interpolation weight in ``[0, 1]``.

    Returns
    -------
    TinyDiT
        A new model (the inputs are untouched).
    """
    if not isinstance(model_r2v, TinyDiT) or not isinstance(model_a2v, TinyDiT):
        raise TypeError("model_r2v and model_a2v must both be TinyDiT")
    if model_r2v.config != model_a2v.config:
        raise ValueError("model_r2v and model_a2v must have the same DiTConfig")
    lam = check_real(lam, "lam", lo=0.0, hi=1.0)
    out = copy.deepcopy(model_a2v)
    sr, sa = model_r2v.state_dict(), model_a2v.state_dict()
    merged = {}
    for name, wa in sa.items():
        audio = ".audio." in name or name.startswith("audio_")
        merged[name] = wa.clone() if audio else lam * sr[name] + (1.0 - lam) * wa
    out.load_state_dict(merged)
    return out


def decoupled_then_joint(
    make_model: Callable[[], TinyDiT],
    r2v_clips: HOIClips,
    a2v_clips: HOIClips,
    joint_clips: HOIClips,
    *,
    stage_steps: int,
    joint_steps: int,
    lams: Sequence[float] = (0.3, 0.5, 0.7),
    joint_tasks: Sequence[str] = ("R2V", "A2V", "RA2V"),
    pick_by: HOIClips | None = None,
    batch_size: int = 8,
    lr: float = 2e-3,
    audio_lr_mult: float = 1.0,
    random_state: RandomState = 0,
    show_progress: bool = False,
) -> dict[str, object]:
    """OmniShow's training strategy: separate R2V and A2V models, merged over ``lam``, then a short joint fine-tune.

    Parameters
    ----------
    make_model : callable
        Returns a fresh model; both stages start from the same initialisation (the shared
        backbone of the paper).
    r2v_clips, a2v_clips : HOIClips
        Plentiful single-condition data for the R2V and A2V stages.
    joint_clips : HOIClips
        The scarce fully annotated set for the joint fine-tune.
    stage_steps, joint_steps : int
        Steps of each decoupled stage and of the joint fine-tune.
    lams : sequence of float
        Interpolation weights to merge with (each is fine-tuned).
    joint_tasks : sequence of str
        The task mixture of the joint fine-tune.
    pick_by : HOIClips, optional
        If given, only the ``lam`` whose merged model has the lowest RA2V velocity loss on
        these clips (:func:`heldout_velocity_loss`) is fine-tuned; otherwise every ``lam``.
    batch_size, lr, audio_lr_mult
        As in :func:`~icml26.videolab.dit.train_flow_matching`.
    random_state : int, numpy.random.Generator or None
        Seeds the batches and the noise of every stage.
    show_progress : bool
        Report the progress of each stage.

    Returns
    -------
    dict
        ``models`` ({lam: fine-tuned model}), ``merged`` ({lam: merged model before the
        fine-tune}), ``val`` ({lam: the ``pick_by`` loss of the merged model}; empty without
        ``pick_by``), ``r2v`` and ``a2v`` (the stage models).
    """
    s1 = check_int(stage_steps, "stage_steps", low=0)
    s2 = check_int(joint_steps, "joint_steps", low=0)
    lams = [check_real(v, "lam", lo=0.0, hi=1.0) for v in lams]
    if not lams:
        raise ValueError("lams must hold at least one interpolation weight")
    base = seed_from(random_state)
    m_r, m_a = make_model(), make_model()
    kw = dict(lr=lr, audio_lr_mult=audio_lr_mult, show_progress=show_progress)
    train_flow_matching(
        m_r, task_batches(r2v_clips, batch_size, "R2V", random_state=base + 1), s1, random_state=base + 11, desc="R2V stage", **kw
    )
    train_flow_matching(
        m_a, task_batches(a2v_clips, batch_size, "A2V", random_state=base + 2), s1, random_state=base + 12, desc="A2V stage", **kw
    )
    merged = {lam: interpolate_models(m_r, m_a, lam) for lam in lams}
    val = {}
    if pick_by is not None:
        val = {lam: heldout_velocity_loss(merged[lam], pick_by, "RA2V", random_state=base + 4) for lam in lams}
        best = min(val, key=val.get)
        todo = [best]
    else:
        todo = list(lams)
    tuned = {}
    for j, lam in enumerate(todo):
        tuned[lam] = copy.deepcopy(merged[lam])
        train_flow_matching(
            tuned[lam],
            task_batches(joint_clips, batch_size, joint_tasks, random_state=base + 3),
            s2,
            random_state=base + 13 + j,
            desc=f"joint fine-tune (lambda={lam:g})",
            **kw,
        )
    return {"models": tuned, "merged": merged, "val": val, "r2v": m_r, "a2v": m_a}


# --------------------------------------------------------------------------- the chapter's experiments
def n_parameters(config: DiTConfig) -> int:
    """Number of trainable parameters of a :class:`TinyDiT` with ``config``."""
    if not isinstance(config, DiTConfig):
        raise TypeError(f"config must be a DiTConfig, got {type(config).__name__}")
    return sum(p.numel() for p in TinyDiT(config, random_state=0).parameters())


def matched_mlp_ratio(config: DiTConfig, target: DiTConfig) -> float:
    """The ``mlp_ratio`` that gives ``config`` the parameter count of ``target`` (nearest whole hidden width).

    Each block's MLP holds :math:`h(2d + 1) + d` parameters for a hidden width :math:`h`,
    so the count is linear in :math:`h` and the matching width is
    :math:`h^* = h_0 + (P_{target} - P_0) / (L (2d + 1))`, rounded (``L`` blocks, width ``d``).

    Returns
    -------
    float
        ``h* / d``; with it the two counts differ by at most ``L (2d + 1) / 2``.
    """
    if not isinstance(config, DiTConfig) or not isinstance(target, DiTConfig):
        raise TypeError("config and target must both be DiTConfig")
    d, depth = config.dim, config.depth
    h0 = max(1, int(round(config.mlp_ratio * d)))
    h = h0 + (n_parameters(target) - n_parameters(config)) / (depth * (2 * d + 1))
    if h < 1:
        raise ValueError(f"target has {n_parameters(target)} parameters, too few for config with any MLP width")
    return int(round(h)) / d


def shuffled_audio(batches: Callable) -> Callable:
    """A batch sampler that gives each clip the audio of the previous clip of its batch (rolled by one).

    The audio statistics stay those of real clips; only the sync with the video is lost.
    """
    if not callable(batches):
        raise TypeError(f"batches must be a callable i -> (video, conditions), got {type(batches).__name__}")

    def batch(i: int):
        v, c = batches(i)
        return v, dataclasses.replace(c, audio=c.audio.roll(1, 0), audio_mask=c.audio_mask.roll(1, 0))

    return batch


def conditioning_ablation(
    variants: Mapping[str, dict],
    train_clips: HOIClips,
    test_clips: HOIClips,
    seeds: Sequence[int],
    *,
    model: dict,
    steps: int,
    lr: float,
    batch_size: int,
    euler: int,
    tasks: Sequence[str] = ("RA2V", "RP2V", "RAP2V"),
    shuffled: str | None = None,
    keep_samples: int | None = None,
) -> dict[str, object]:
    """Chapter 05's conditioning ablation: each variant trained on the same batches, scored under RA2V and RP2V.

    For every seed ``s`` a :func:`task_batches` sampler over ``tasks`` is seeded by ``s``;
    each variant is a :class:`TinyDiT` with ``DiTConfig(**model, pose=True, **options)``
    initialised from ``s``, trained for ``steps`` AdamW steps (:func:`train_flow_matching`,
    noise seeded by ``s``), then sampled on ``test_clips`` (:func:`score_hoi`, ``euler``
    steps, seeded by ``s``). The mean absolute audio gate is recorded after every step.

    Parameters
    ----------
    variants : mapping
        ``{name: DiTConfig options}`` (e.g. ``dict(refs="channel", audio="glca")``); options
        override ``model``.
    train_clips, test_clips : HOIClips
    seeds : sequence of int
    model : dict
        The shared ``DiTConfig`` size options.
    steps, lr, batch_size, euler
        Training steps, learning rate, batch size, Euler steps of the sampler.
    tasks : sequence of str
        The training task mixture.
    shuffled : str, optional
        A variant also trained on :func:`shuffled_audio` batches (the positive control),
        scored under RA2V with the true audio.
    keep_samples : int, optional
        The seed whose generated clips are kept (``samples``).

    Returns
    -------
    dict
        ``rows`` (one dict per seed and variant: ``ra_colour``, ``sync``, ``lag``,
        ``rp_colour``, ``akd``, ``train_s``, ``params``), ``gates`` ({name: {seed: gate
        trace}}), ``samples`` ({name: (RA2V scores, RP2V scores)} of ``keep_samples``) and
        ``shuffled`` (one dict per seed: ``sync``, ``gate``).
    """
    if not isinstance(variants, Mapping) or not variants:
        raise ValueError(f"variants must be a non-empty mapping name -> DiTConfig options, got {variants!r}")
    if not isinstance(train_clips, HOIClips) or not isinstance(test_clips, HOIClips):
        raise TypeError("train_clips and test_clips must be HOIClips")
    steps, euler = check_int(steps, "steps"), check_int(euler, "euler")
    if shuffled is not None and shuffled not in variants:
        raise ValueError(f"shuffled={shuffled!r} is not one of the variants {list(variants)}")
    rows, gates, samples, shuf_rows = [], {n: {} for n in variants}, {}, []

    def train(opts, batches, s):
        m = TinyDiT(DiTConfig(**{**model, **opts}, pose=True), random_state=s)
        trace = []
        record = lambda i, mm: trace.append(float(torch.cat(list(mm.gates().values())).abs().mean())) if mm.gates() else None  # noqa: E731
        t0 = time.perf_counter()
        train_flow_matching(m, batches, steps, lr=lr, random_state=s, callback=record, show_progress=False)
        return m, np.array(trace), time.perf_counter() - t0

    for s in seeds:
        batches = task_batches(train_clips, batch_size, list(tasks), random_state=s)
        for name, opts in variants.items():
            m, trace, secs = train(opts, batches, s)
            ra = score_hoi(m, test_clips, "RA2V", steps=euler, random_state=s)
            rp = score_hoi(m, test_clips, "RP2V", steps=euler, random_state=s)
            rows.append(
                dict(
                    seed=s,
                    variant=name,
                    ra_colour=ra["colour"],
                    sync=ra["sync"],
                    lag=ra["lag"],
                    rp_colour=rp["colour"],
                    akd=rp["akd"],
                    train_s=secs,
                    params=sum(p.numel() for p in m.parameters()),
                )
            )
            gates[name][s] = trace
            if s == keep_samples:
                samples[name] = (ra, rp)
        if shuffled is not None:
            m, trace, _ = train(variants[shuffled], shuffled_audio(batches), s)
            sync = score_hoi(m, test_clips, "RA2V", steps=euler, random_state=s)["sync"]
            shuf_rows.append(dict(seed=s, sync=sync, gate=float(trace[-1])))
    return {"rows": rows, "gates": gates, "samples": samples, "shuffled": shuf_rows}


def training_recipes(
    seeds: Sequence[int],
    val_clips: HOIClips,
    *,
    model: dict,
    frames: int,
    size: int,
    n_plenty: int,
    n_scarce: int,
    pre_steps: int,
    stage_steps: int,
    joint_steps: int,
    lams: Sequence[float],
    batch_size: int,
    lr: float,
    euler: int,
    joint_tasks: Sequence[str] = ("R2V", "A2V", "RA2V"),
    data_seed: int = 0,
) -> dict[str, list]:
    """Chapter 05's training-strategy comparison at an equal step budget, from one pretrained backbone.

    For every seed ``s``: plentiful R2V and A2V sets (``n_plenty`` clips) and a scarce
    fully annotated set (``n_scarce``) are drawn (:func:`~icml26.videolab.hoi.make_hoi_clips`
    seeded by ``data_seed + 3000 + 10 s`` and the next two); a backbone with channel references
    and GLCA is pretrained for ``pre_steps`` unconditional (T2V) steps on the plentiful
    videos; then three recipes of ``2 stage_steps + joint_steps`` steps each start from
    copies of it: joint training on the scarce set alone, joint training on the union
    (each source under the tasks its annotations allow) and :func:`decoupled_then_joint`
    (the merge weight picked by the RA2V loss on the scarce set). Each is scored on
    ``val_clips`` by :func:`heldout_velocity_loss` and :func:`score_hoi` under RA2V.

    Returns
    -------
    dict
        ``rows`` (per seed and recipe: ``loss``, ``colour``, ``sync``, ``lam``) and
        ``lams`` (per seed and merge weight: ``merged_scarce``, the picking loss, and
        ``merged_heldout``, the held-out loss of the merge before its fine-tune).
    """
    if not isinstance(val_clips, HOIClips):
        raise TypeError(f"val_clips must be HOIClips, got {type(val_clips).__name__}")
    steps_total = 2 * check_int(stage_steps, "stage_steps") + check_int(joint_steps, "joint_steps")
    tasks = list(joint_tasks)
    fresh = lambda s: TinyDiT(DiTConfig(**model, refs="channel", audio="glca"), random_state=s)  # noqa: E731
    rows, lam_rows = [], []
    for s in seeds:
        r2v, a2v, scarce = (
            make_hoi_clips(n, frames=frames, size=size, random_state=data_seed + 3000 + k + 10 * s)
            for k, n in enumerate((n_plenty, n_plenty, n_scarce))
        )
        kw = dict(lr=lr, show_progress=False)
        # the shared pretrained backbone: unconditional training on the plentiful videos, the same for every recipe
        base = fresh(s)
        train_flow_matching(
            base,
            mixture_batches([(r2v, "T2V"), (a2v, "T2V")], batch_size, random_state=s + 7),
            pre_steps,
            random_state=s + 3,
            **kw,
        )
        make = lambda b=base: copy.deepcopy(b)  # noqa: E731
        recipes = {}
        m = make()
        train_flow_matching(m, task_batches(scarce, batch_size, tasks, random_state=s), steps_total, random_state=s + 1, **kw)
        recipes["joint, scarce set only"] = m
        m = make()
        union = mixture_batches([(r2v, "R2V"), (a2v, "A2V"), (scarce, tasks)], batch_size, random_state=s)
        train_flow_matching(m, union, steps_total, random_state=s + 2, **kw)
        recipes["joint, union"] = m
        out = decoupled_then_joint(
            make,
            r2v,
            a2v,
            scarce,
            stage_steps=stage_steps,
            joint_steps=joint_steps,
            lams=lams,
            joint_tasks=tasks,
            batch_size=batch_size,
            lr=lr,
            pick_by=scarce,
            random_state=s,
        )
        ((lam_star, m),) = out["models"].items()
        recipes["decoupled-then-joint"] = m
        for lam, mm in out["merged"].items():
            lam_rows.append(
                dict(
                    seed=s,
                    lam=lam,
                    merged_scarce=out["val"][lam],
                    merged_heldout=heldout_velocity_loss(mm, val_clips, "RA2V", random_state=s),
                )
            )
        for name, mm in recipes.items():
            sc = score_hoi(mm, val_clips, "RA2V", steps=euler, random_state=s)
            rows.append(
                dict(
                    seed=s,
                    recipe=name,
                    lam=lam_star if name == "decoupled-then-joint" else np.nan,
                    loss=heldout_velocity_loss(mm, val_clips, "RA2V", random_state=s),
                    colour=sc["colour"],
                    sync=sc["sync"],
                )
            )
    return {"rows": rows, "lams": lam_rows}
