"""The chapter's experiment: one replicate of the whole pipeline (:func:`run_replicate`),
binary labels and the planner's collision rates.

References
----------
Zhou et al., *SafeMVDrive / SMD*, ICML 2026, arXiv:2505.17727; https://github.com/zhoujiawei3/SafeMVDrive
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._common import RandomState, check_int, check_random_state, check_real
from .planner import BCPlanner, _finetune, _plan_collisions, _planner_inputs, plan_collisions, planner_samples
from .road import SceneBatch, _check_batch, concat_scenes
from .scenarios import attack_adversary, attack_labels, make_scenarios
from .selector import SelectorPolicy, candidate_features, select_closest, select_random, select_with, train_selector
from .traffic import benign_scenes


# ----------------------------------------------------------------------------- the chapter's experiment
def binary_labels(graded: np.ndarray) -> np.ndarray:
    """The authors' label dict from graded rewards: 1 for a feasible collision, 0 otherwise, and
    "no vehicle" (slot 0) 1 exactly when no candidate collides.

    .. math:: \\ell_j = [r_j = 1]\\ (j \\ge 1),\\qquad \\ell_0 = [\\max_{j \\ge 1} \\ell_j = 0]

    Parameters
    ----------
    graded : ndarray, shape (S, N)
        :func:`attack_labels`' graded rewards (slot 0 = "no vehicle").

    Returns
    -------
    ndarray, shape (S, N)
        Binary labels.

    Raises
    ------
    ValueError
        For an array that is not 2-D with at least two slots.

    References
    ----------
    Zhou et al., *SafeMVDrive / SMD*, ICML 2026, arXiv:2505.17727; https://github.com/zhoujiawei3/SafeMVDrive
    (``scene_editor_json_input_test_crash_or_VLM_reason.py``, the ``json_convert_…`` script).
    """
    g = np.asarray(graded, dtype=float)
    if g.ndim != 2 or g.shape[1] < 2:
        raise ValueError(f"graded must have shape (scenes, slots) with slots >= 2; got {g.shape}")
    lab = (g == 1.0).astype(float)
    lab[:, 0] = (lab[:, 1:].max(1) <= 0).astype(float)
    return lab


def collision_rates(planner: Any, scenes: SceneBatch, eval_frames: np.ndarray) -> tuple[float, float]:
    """Sample- and scene-level open-loop collision rates of a planner (:func:`plan_collisions`
    at ``eval_frames`` of every scene); NaN for an empty batch (shown as "—").

    Parameters
    ----------
    planner : PlannerLike
    scenes : SceneBatch
    eval_frames : ndarray of int, shape (F,)
        The sample times, the same for every scene.

    Returns
    -------
    (float, float)
        Share of colliding samples, share of scenes with a colliding sample.

    Raises
    ------
    ValueError
        For ``eval_frames`` that is not 1-D (and as :func:`plan_collisions`).

    References
    ----------
    Hu et al., *Planning-oriented autonomous driving* (UniAD), CVPR 2023 — ``obj_box_col``.
    """
    b = _check_batch(scenes)
    fr = np.asarray(eval_frames)
    if fr.ndim != 1:
        raise ValueError(f"eval_frames must be 1-D (the same sample times for every scene); got shape {fr.shape}")
    if b.n_scenes == 0:
        return np.nan, np.nan
    c = plan_collisions(planner, b, np.tile(fr, (b.n_scenes, 1)))
    return float(c.mean()), float(c.any(1).mean())


class _Scored:
    """A scene set scored by several planners at the same ``eval_frames``: the views are
    rendered once (:func:`collision_rates` renders them per call; the rates are the same)."""

    def __init__(self, scenes: SceneBatch, eval_frames: np.ndarray, res: int = 12) -> None:
        self.b = scenes
        self.fr = np.tile(np.asarray(eval_frames), (scenes.n_scenes, 1))
        self.inputs = _planner_inputs(scenes, self.fr, res) if scenes.n_scenes else None

    def rates(self, planner: Any) -> tuple[float, float]:
        if self.b.n_scenes == 0:
            return np.nan, np.nan
        c = _plan_collisions(planner, self.b, self.fr, self.inputs, 20)
        return float(c.mean()), float(c.any(1).mean())


def run_replicate(
    s: int, config: dict[str, Any], *, baseline: Any, train_frames: np.ndarray, eval_frames: np.ndarray
) -> tuple[dict[str, Any], dict[str, Any]]:
    """One replicate of the chapter's experiment (every stage of the pipeline, for seed ``s``).

    Four scene sets from different traffic seeds (``1000 s + 1 … 4``): a planner is
    behaviour-cloned on the first; the selector (:func:`train_selector`, on binary labels, and a
    sensitivity copy on graded ones) on the second; the third (held out) is attacked with every
    candidate to score the selectors (GRPO, closest, random, oracle) and turned into generated
    scenarios with the GRPO choice; on the fourth only the chosen vehicle is attacked. The
    evasion stage (:func:`make_scenarios`) runs causally (primary) and open loop (sensitivity);
    the planner is fine-tuned on each setting's training scenes (:func:`finetune_planner`) and
    every planner is scored by :func:`collision_rates`. The positive control plants
    unavoidable cut-ins at a share ``plant_rate`` of the held-out samples (:func:`planted_rate`,
    seed ``1000 s + 7``).

    Parameters
    ----------
    s : int
        The replicate's seed (every random stream derives from it).
    config : dict
        The chapter's ``CFG``: ``horizon``, ``n_train``, ``n_sel``, ``n_test``, ``n_gen``,
        ``attack_iters``, ``near_miss``, ``grpo_iters``, ``group``, ``beta``, ``clip_eps``,
        ``band``, ``evade_iters``, ``replan_iters``, ``n_step_action``, ``bc_epochs``,
        ``ft_epochs``, ``plant_rate`` (the share of held-out samples given a planted cut-in,
        :func:`planted_rate`: the positive control).
    baseline : PlannerLike
        A constant planner (keep lane and speed) scored on the held-out logs for context.
    train_frames, eval_frames : ndarray of int, shape (F,)
        Sample times for behaviour cloning / fine-tuning and for evaluation.

    Returns
    -------
    out : dict
        This replicate's figures (rates as (sample, scene) pairs, selector successes, kept
        fractions, GRPO curve, …).
    times : dict
        Seconds per stage.

    Raises
    ------
    KeyError
        For a ``config`` without one of the settings above.

    References
    ----------
    Zhou et al., *SafeMVDrive / SMD*, ICML 2026, arXiv:2505.17727; https://github.com/zhoujiawei3/SafeMVDrive
    """
    import time as _time

    out, tim = {"seed": s}, {"seed": s}
    T = config["horizon"]
    train = benign_scenes(config["n_train"], T, random_state=1000 * s + 1)
    sel = benign_scenes(config["n_sel"], T, random_state=1000 * s + 2)
    test = benign_scenes(config["n_test"], T, random_state=1000 * s + 3)
    pool = benign_scenes(config["n_gen"], T, random_state=1000 * s + 4)
    t0 = _time.perf_counter()
    # the benign training samples, rendered once: behaviour cloning and both fine-tunings read them
    train_samples = planner_samples(train, np.tile(train_frames, (train.n_scenes, 1)))
    planner = BCPlanner(random_state=s).fit(
        *train_samples,
        epochs=config["bc_epochs"],
        random_state=s,
    )
    tim["behaviour cloning"] = _time.perf_counter() - t0
    t0 = _time.perf_counter()
    n_sel, n_tr = sel.n_scenes, sel.n_scenes + pool.n_scenes
    rew_both, tr_both = attack_labels(
        concat_scenes(sel, test),
        iters=config["attack_iters"],
        # one batch: the stage costs per step
        near_miss=config["near_miss"],
    )
    graded_both = rew_both
    # the authors' labels: 1 for a colliding candidate, "no vehicle" 1 when none
    rew_both = binary_labels(graded_both)
    rew_sel, rew_te, tr_te = rew_both[:n_sel], rew_both[n_sel:], tr_both[n_sel:]
    tim["attacks (all candidates)"] = _time.perf_counter() - t0
    t0 = _time.perf_counter()
    policy = SelectorPolicy(random_state=s)
    train_selector(
        policy,
        *candidate_features(sel),
        rew_sel,
        iters=config["grpo_iters"],
        group=config["group"],
        beta=config["beta"],
        clip_eps=config["clip_eps"],
        random_state=s,
    )
    tim["GRPO selector"] = _time.perf_counter() - t0
    # sensitivity: the same training on graded labels
    graded_policy = SelectorPolicy(random_state=s)
    train_selector(
        graded_policy,
        *candidate_features(sel),
        graded_both[:n_sel],
        iters=config["grpo_iters"],
        group=config["group"],
        beta=config["beta"],
        clip_eps=config["clip_eps"],
        random_state=s,
    )
    picks = {
        "GRPO": select_with(policy, test),
        "closest": select_closest(test),
        "random": select_random(test, random_state=s),
        "GRPO (graded labels)": select_with(graded_policy, test),
    }
    idx = np.arange(test.n_scenes)
    for name, ch in picks.items():
        val = rew_te[idx, ch]
        out[f"success {name}"] = float(((ch > 0) & (val == 1)).mean())
        # binary labels: the share of correct answers, "no vehicle" included
        out[f"reward {name}"] = float(val.mean())
    out["success oracle"] = float((rew_te[:, 1:].max(1) == 1).mean())
    out["no vehicle chosen"] = float((picks["GRPO"] == 0).mean())
    out["grpo curve"] = [h["reward"] for h in policy.history]
    t0 = _time.perf_counter()
    # the pool: select, then attack only the chosen vehicle
    pick_pool = select_with(policy, pool)
    tr_pool = pool.states.transpose(0, 2, 1, 3).copy()
    att = np.flatnonzero(pick_pool > 0)
    tr_pool[att, pick_pool[att]] = attack_adversary(pool, att, pick_pool[att], iters=config["attack_iters"])
    tim["attacks (chosen, pool)"] = _time.perf_counter() - t0
    t0 = _time.perf_counter()
    gen_args = (
        concat_scenes(sel, pool, test),
        np.concatenate([select_with(policy, sel), pick_pool, picks["GRPO"]]),
        np.concatenate([tr_both[:n_sel], tr_pool, tr_te]),
    )
    # the causal evasion: replan every n_step_action steps from what was seen
    gen_all, info = make_scenarios(
        *gen_args,
        band=config["band"],
        iters=config["evade_iters"],
        replan_iters=config["replan_iters"],
        n_step_action=config["n_step_action"],
    )
    is_te = info["scene"] >= n_tr
    gen_tr, gen_te = (
        gen_all.subset(np.flatnonzero(~is_te)),
        gen_all.subset(np.flatnonzero(is_te)),
    )
    te_scene = info["scene"][is_te] - n_tr
    te_att = info["attempted"] >= n_tr
    tim["evasion stage"] = _time.perf_counter() - t0
    out["kept"] = float(info["kept"][te_att].mean()) if te_att.any() else np.nan
    out["n generated test"] = gen_te.n_scenes
    out["n generated train"] = gen_tr.n_scenes
    out["min_dist"] = info["min_dist"][te_att].tolist()
    # each scored set's views are rendered once for all the planners scored on it (= collision_rates)
    test_s, gen_te_s, gen_tr_s = (_Scored(x, eval_frames) for x in (test, gen_te, gen_tr))
    c_test = _plan_collisions(planner, test_s.b, test_s.fr, test_s.inputs, 20) if test.n_scenes else None
    out["benign"] = test_s.rates(planner) if c_test is None else (float(c_test.mean()), float(c_test.any(1).mean()))
    # positive control: unavoidable cut-ins planted at a known share of the held-out samples
    out["benign, planted cut-ins"], out["n planted"] = planted_rate(
        planner, test, eval_frames, config["plant_rate"], random_state=1000 * s + 7, collisions=c_test
    )
    # context (the former control): the constant keep-lane planner on the same logs
    out["benign, keep-lane"] = test_s.rates(baseline)
    out["benign (same scenes)"] = collision_rates(planner, test.subset(te_scene), eval_frames)
    out["generated"] = gen_te_s.rates(planner)
    t0 = _time.perf_counter()
    # = finetune_planner(planner, gen_tr, train, frames, train frames), the benign samples reused
    ft = _finetune_on(planner, gen_tr, train_samples, train_frames, epochs=config["ft_epochs"], random_state=s)
    tim["fine-tuning"] = _time.perf_counter() - t0
    out["benign, fine-tuned"] = test_s.rates(ft)
    out["generated train"] = gen_tr_s.rates(planner)
    out["generated train, fine-tuned"] = gen_tr_s.rates(ft)
    lat = np.abs(gen_te.states[:, :, 0, 1] - test.states[te_scene, :, 0, 1]).max(1)
    out["swerve"] = float((lat > test.config.lane_width / 2).mean()) if len(lat) else np.nan
    out["generated, fine-tuned"] = gen_te_s.rates(ft)
    # sensitivity: the open-loop evasion, which knows the whole attack
    t0 = _time.perf_counter()
    gen_ol, info_ol = make_scenarios(
        *gen_args,
        band=config["band"],
        iters=config["evade_iters"],
        evasion="open_loop",
    )
    ol_te = info_ol["scene"] >= n_tr
    ol_tr = gen_ol.subset(np.flatnonzero(~ol_te))
    ol_te = gen_ol.subset(np.flatnonzero(ol_te))
    ft_ol = _finetune_on(planner, ol_tr, train_samples, train_frames, epochs=config["ft_epochs"], random_state=s)
    tim["open-loop sensitivity"] = _time.perf_counter() - t0
    out["kept, open loop"] = float(info_ol["kept"][te_att].mean())
    ol_te_s = _Scored(ol_te, eval_frames)
    out["generated, open loop"] = ol_te_s.rates(planner)
    out["generated, open loop, fine-tuned"] = ol_te_s.rates(ft_ol)
    out["benign, open loop fine-tuned"] = test_s.rates(ft_ol)
    return out, tim


# ----------------------------------------------------------------------------- positive control: planted cut-ins
def plant_cut_ins(
    scenes: SceneBatch,
    frames: np.ndarray,
    rate: float,
    *,
    ahead: tuple[float, float] = (0.0, 2.0),
    steps: int = 5,
    random_state: RandomState = None,
) -> tuple[SceneBatch, np.ndarray, np.ndarray]:
    r"""Plant scripted, unavoidable cut-ins at a random share ``rate`` of the open-loop samples
    (the positive control of the chapter's generated-vs-benign claim).

    Each sample (scene :math:`s`, frame :math:`f` of ``frames``) is planted independently with
    probability ``rate``. A planted sample gets its own copy of the scene (so that no other
    sample of the scene changes) in which an intruder drives beside the ego in an adjacent
    lane, :math:`\Delta x \sim U(\text{ahead})` m ahead of it at its logged speed, and in the
    ``steps`` steps after :math:`f` slides sideways onto the ego's logged path:

    .. math::
        x_I(t) = x_{\text{ego}}(t) + \Delta x,\qquad
        y_I(t) = y_{\text{ego}}(t) + \sigma w \,\bigl(1 - \min(1, \max(0, t - f)/n)\bigr),

    with :math:`\sigma = \pm 1` the side (random where both adjacent lanes are on the road),
    :math:`w` the lane width and :math:`n` = ``steps``. At frame :math:`f` the planner sees
    a vehicle driving alongside, nothing more; within :math:`n \Delta t` = 0.5 s the intruder
    covers the ego's logged position, so any plan that stays near it collides (the
    intruder's states are scripted, not simulated; its controls are left at zero). The
    intruder takes an empty vehicle slot, or the slot of the vehicle farthest from the ego
    at :math:`f`.

    Parameters
    ----------
    scenes : SceneBatch
    frames : ndarray of int, shape (F,)
        The evaluation frames (the same for every scene).
    rate : float
        Probability in [0, 1] that a sample is planted.
    ahead : (float, float)
        Range of :math:`\Delta x` (m).
    steps : int
        Steps of the sideways move (>= 1).
    random_state : int, Generator or None

    Returns
    -------
    planted : SceneBatch
        One copy per planted sample (P copies).
    scene_idx, frame : ndarray of int, shape (P,)
        The planted samples' scene and frame.

    Raises
    ------
    ValueError
        For ``rate`` outside [0, 1], ``frames`` that are not 1-D or leave fewer than
        ``steps`` steps, or ``ahead`` that is not an increasing pair.

    References
    ----------
    Zhou et al., *SafeMVDrive / SMD*, ICML 2026, arXiv:2505.17727 (the claim this control
    serves: generated scenarios raise the planner's collision rate over benign logs).
    """
    b = _check_batch(scenes)
    rate = check_real(rate, "rate", lo=0.0, hi=1.0)
    steps = check_int(steps, "steps", low=1)
    fr = np.asarray(frames)
    if fr.ndim != 1 or fr.dtype.kind not in "iu" or (fr.size and (fr.min() < 0 or fr.max() + steps > b.horizon)):
        raise ValueError(f"frames must be 1-D integer frames in [0, {b.horizon - steps}]; got {frames!r}")
    lo, hi = (check_real(a, "ahead") for a in ahead)
    if not lo <= hi:
        raise ValueError(f"ahead={ahead!r} must be a pair (low, high) with low <= high")
    rng = check_random_state(random_state)
    c = b.config
    hit = rng.random((b.n_scenes, fr.size)) < rate  # (S, F)
    si, fi = np.nonzero(hit)
    f = fr[fi]
    out = b.subset(si)
    st = out.states.copy()
    ctrl = out.controls.copy()
    pres = out.present.copy()
    T1 = st.shape[1]
    t = np.arange(T1)
    for k in range(len(si)):
        ego = st[k, :, 0]  # (T+1, 4)
        free = np.flatnonzero(~pres[k])
        if free.size:
            slot = int(free[0])
        else:  # the vehicle farthest from the ego at f gives up its slot
            d = np.abs(st[k, f[k], 1:, 0] - ego[f[k], 0])
            slot = 1 + int(np.argmax(d))
        y_f = ego[f[k], 1]
        sides = [s for s in (-1.0, 1.0) if c.width / 2 <= y_f + s * c.lane_width <= c.road_width - c.width / 2]
        side = sides[int(rng.integers(len(sides)))] if sides else 1.0
        dx = rng.uniform(lo, hi)
        frac = 1.0 - np.clip((t - f[k]) / steps, 0.0, 1.0)  # 1 until f, 0 from f + steps on
        y = ego[:, 1] + side * c.lane_width * frac
        vy = np.gradient(y) / c.dt
        st[k, :, slot, 0] = ego[:, 0] + dx
        st[k, :, slot, 1] = y
        st[k, :, slot, 2] = ego[:, 2] + np.arctan2(vy, np.maximum(ego[:, 3], 1.0))
        st[k, :, slot, 3] = ego[:, 3]
        ctrl[k, :, slot] = 0.0
        pres[k, slot] = True
    return SceneBatch(st, ctrl, pres, out.v0.copy(), c), si, f


def planted_rate(
    planner: Any,
    scenes: SceneBatch,
    eval_frames: np.ndarray,
    rate: float,
    *,
    random_state: RandomState = None,
    collisions: np.ndarray | None = None,
) -> tuple[float, int]:
    r"""Sample-level collision rate of ``planner`` on ``scenes`` with cut-ins planted at a share
    ``rate`` of the samples (:func:`plant_cut_ins`); the unplanted samples keep their benign outcome.

    .. math:: r_{\text{planted}} = \frac{1}{SF}\Bigl(\sum_{(s,f) \notin P} c_{sf} + \sum_{(s,f) \in P} c'_{sf}\Bigr)

    with :math:`c` the benign collisions (:func:`plan_collisions`) and :math:`c'` those of the
    planted copies, each scored at its own frame only.

    Parameters
    ----------
    planner : PlannerLike
    scenes : SceneBatch
    eval_frames : ndarray of int, shape (F,)
    rate : float
        As in :func:`plant_cut_ins`.
    random_state : int, Generator or None
    collisions : ndarray of bool, shape (S, F), optional
        The benign collisions, when already computed.

    Returns
    -------
    (float, int)
        The planted sample-level rate and the number of planted samples.

    References
    ----------
    Zhou et al., *SafeMVDrive / SMD*, ICML 2026, arXiv:2505.17727 (the sample-level
    collision rate of its planner comparison, measured here on the planted samples).
    """
    b = _check_batch(scenes)
    fr = np.asarray(eval_frames)
    if fr.ndim != 1:
        raise ValueError(f"eval_frames must be 1-D (the same sample times for every scene); got shape {fr.shape}")
    if b.n_scenes == 0:
        return np.nan, 0
    base = plan_collisions(planner, b, np.tile(fr, (b.n_scenes, 1))) if collisions is None else np.asarray(collisions, bool)
    if base.shape != (b.n_scenes, fr.size):
        raise ValueError(f"collisions must have shape {(b.n_scenes, fr.size)}; got {base.shape}")
    planted, si, f = plant_cut_ins(b, fr, rate, random_state=random_state)
    c = base.copy()
    if len(si):
        col = np.array([int(np.flatnonzero(fr == z)[0]) for z in f])
        c[si, col] = plan_collisions(planner, planted, f[:, None])[:, 0]
    return float(c.mean()), int(len(si))


def _finetune_on(
    planner: BCPlanner,
    generated: SceneBatch,
    benign_samples: tuple,
    frames: np.ndarray,
    *,
    epochs: int,
    random_state: RandomState,
) -> BCPlanner:
    """:func:`finetune_planner` of ``planner`` on ``generated`` (sampled at ``frames``, every scene)
    with the benign samples already rendered (:func:`planner_samples`)."""
    if generated.n_scenes == 0:
        return planner.copy()
    gen = planner_samples(generated, np.tile(frames, (generated.n_scenes, 1)), res=planner.res)
    return _finetune(planner, gen, benign_samples, epochs=epochs, lr=5e-4, random_state=random_state)
