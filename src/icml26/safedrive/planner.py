"""The end-to-end planner stand-in (UniAD's place): ego-centric raster views, waypoint
targets and tracking, the behaviour-cloned :class:`BCPlanner`, its collisions in a
scene set and its fine-tuning on generated scenes.

References
----------
Zhou et al., *SafeMVDrive / SMD*, ICML 2026, arXiv:2505.17727; https://github.com/zhoujiawei3/SafeMVDrive
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from .._common import RandomState, check_int, check_random_state, check_real, seed_from
from ._optim import _Adam
from .road import RoadConfig, SceneBatch, _bicycle_step, _boxes, _boxes_overlap, _check_batch, _check_config
from .traffic import _lane_of

# ----------------------------------------------------------------------------- raster views
VIEWS = {  # name: (x range, y range) in the ego frame, metres
    "front": ((0.0, 40.0), (-7.0, 7.0)),
    "rear": ((-20.0, 0.0), (-7.0, 7.0)),
    "left": ((-10.0, 10.0), (0.0, 10.0)),
    "right": ((-10.0, 10.0), (-10.0, 0.0)),
}


def _view_points(res: int) -> np.ndarray:
    pts = []
    for (x0, x1), (y0, y1) in VIEWS.values():
        xs = x0 + (np.arange(res) + 0.5) * (x1 - x0) / res
        ys = y0 + (np.arange(res) + 0.5) * (y1 - y0) / res
        gx, gy = np.meshgrid(xs, ys, indexing="ij")
        pts.append(np.stack([gx, gy], -1).reshape(-1, 2))
    return np.concatenate(pts)  # (4 * res * res, 2)


def render_views(scenes: SceneBatch, frames: np.ndarray, *, res: int = 12, lag: int = 5) -> np.ndarray:
    """Ego-centric raster "camera views" — the stand-in for the paper's multi-view video.

    Four views (front, rear, left, right) of ``res`` × ``res`` cells; channels: other
    vehicles' occupancy now, occupancy ``lag`` steps earlier (motion, as two video frames
    give) and the drivable road.

    Parameters
    ----------
    scenes : SceneBatch
    frames : ndarray of int, shape (S, F)
        Time index per scene and sample (``>= lag``).
    res, lag : int

    Returns
    -------
    ndarray of float32, shape (S, F, 4, 3, res, res)

    References
    ----------
    Zhou et al., *SafeMVDrive / SMD*, ICML 2026, arXiv:2505.17727; https://github.com/zhoujiawei3/SafeMVDrive (the multi-view video this stands in for).
    """
    b = _check_batch(scenes)
    res = check_int(res, "res")
    lag = check_int(lag, "lag", low=0)
    fr = np.asarray(frames)
    if fr.ndim != 2 or fr.shape[0] != b.n_scenes or fr.dtype.kind not in "iu":
        raise ValueError(f"frames must be an int array of shape ({b.n_scenes}, F); got {fr.dtype} {fr.shape}")
    if fr.size and (fr.min() < lag or fr.max() > b.horizon):
        raise ValueError(f"frames must lie in [lag, T] = [{lag}, {b.horizon}]; got [{fr.min()}, {fr.max()}]")
    c = b.config
    S, F = fr.shape
    pts = _view_points(res)  # (P, 2)
    si = np.arange(S)[:, None]
    ego = b.states[si, fr, 0]  # (S, F, 4)
    cth, sth = np.cos(ego[..., 2]), np.sin(ego[..., 2])
    wx = ego[..., 0, None] + cth[..., None] * pts[:, 0] - sth[..., None] * pts[:, 1]  # (S, F, P)
    wy = ego[..., 1, None] + sth[..., None] * pts[:, 0] + cth[..., None] * pts[:, 1]
    out = np.zeros((S, F, 3, pts.shape[0]), dtype=np.float32)
    mask = b.present.copy()
    mask[:, 0] = False
    # the (S, F, P, N) point-in-box tests run a few scenes at a time, so that their temporaries
    # stay in cache (elementwise, the same arithmetic as on the whole batch at once)
    step = max(1, 2**15 // max(1, F * pts.shape[0]))
    for ch, lagk in ((0, 0), (1, lag)):
        veh = b.states[si, fr - lagk]  # (S, F, N, 4)
        ct, st = np.cos(veh[..., None, :, 2]), np.sin(veh[..., None, :, 2])  # (S, F, 1, N)
        for a in range(0, S, step):
            z = slice(a, a + step)
            ddx = wx[z, ..., None] - veh[z, :, None, :, 0]  # (s, F, P, N)
            ddy = wy[z, ..., None] - veh[z, :, None, :, 1]
            inside = (np.abs(ct[z] * ddx + st[z] * ddy) <= c.length / 2) & (np.abs(-st[z] * ddx + ct[z] * ddy) <= c.width / 2)
            out[z, :, ch] = (inside & mask[z, None, None, :]).any(-1)
    out[:, :, 2] = (wy >= 0) & (wy <= c.road_width)
    return out.reshape(S, F, 3, 4, res, res).transpose(0, 1, 3, 2, 4, 5)


def _ego_features(scenes: SceneBatch, frames: np.ndarray) -> np.ndarray:
    c = scenes.config
    ego = scenes.states[np.arange(scenes.n_scenes)[:, None], frames, 0]  # (S, F, 4)
    off = ego[..., 1] - c.lane_centres()[_lane_of(ego[..., 1], c)]
    return np.stack([ego[..., 3] / 15.0, off / c.lane_width, ego[..., 2] * 5, ego[..., 1] / c.road_width], -1).astype(np.float32)


# ----------------------------------------------------------------------------- planner
WAYPOINT_STEPS = (5, 10, 15, 20)  # waypoints at 0.5, 1.0, 1.5, 2.0 s (dt = 0.1)


def waypoint_targets(scenes: SceneBatch, frames: np.ndarray) -> np.ndarray:
    """The logged ego's future positions at +0.5, 1.0, 1.5, 2.0 s in the ego frame at ``frames``.

    Returns
    -------
    ndarray, shape (S, F, 4, 2)

    Parameters
    ----------
    scenes : SceneBatch
    frames : ndarray of int, shape (S, F)
        Sample times; each needs 20 future steps.

    References
    ----------
    Zhou et al., *SafeMVDrive / SMD*, ICML 2026, arXiv:2505.17727; https://github.com/zhoujiawei3/SafeMVDrive
    """
    b = _check_batch(scenes)
    fr = np.asarray(frames)
    if fr.ndim != 2 or fr.shape[0] != b.n_scenes or fr.size and fr.max() + WAYPOINT_STEPS[-1] > b.horizon:
        raise ValueError(f"frames must have shape ({b.n_scenes}, F) and leave {WAYPOINT_STEPS[-1]} future steps; got {fr.shape}")
    si = np.arange(b.n_scenes)[:, None, None]
    ego0 = b.states[np.arange(b.n_scenes)[:, None], fr, 0]  # (S, F, 4)
    fut = b.states[si, fr[..., None] + np.array(WAYPOINT_STEPS), 0]  # (S, F, K, 4)
    d = fut[..., :2] - ego0[..., None, :2]
    c, s = np.cos(ego0[..., 2])[..., None], np.sin(ego0[..., 2])[..., None]
    return np.stack([c * d[..., 0] + s * d[..., 1], -s * d[..., 0] + c * d[..., 1]], -1)


def track_waypoints(
    state0: np.ndarray, waypoints: np.ndarray, *, steps: int = 20, config: RoadConfig | None = None
) -> np.ndarray:
    """Follow planned waypoints with a pure-pursuit steering and proportional speed controller.

    The path is the linear interpolation of the ego position (t = 0) and the waypoints at
    0.5 s spacing. At time :math:`\\tau` the lookahead point is the path at
    :math:`\\tau + 0.5` s; steering :math:`\\delta = \\arctan(2L\\sin\\alpha / \\ell_d)`,
    acceleration :math:`2(v_{\\text{ref}} - v)` clipped to the control limits.

    Parameters
    ----------
    state0 : ndarray, shape (B, 4)
    waypoints : ndarray, shape (B, K, 2)
        In the ego frame of ``state0``.
    steps : int

    Returns
    -------
    ndarray, shape (B, steps + 1, 4)
        The tracked states (world frame).

    References
    ----------
    Coulter, *Implementation of the Pure Pursuit Path Tracking Algorithm*, CMU-RI-TR-92-01 (1992).
    """
    c = _check_config(config)
    st = np.asarray(state0, dtype=float)
    wp = np.asarray(waypoints, dtype=float)
    steps = check_int(steps, "steps")
    if st.ndim != 2 or st.shape[1] != 4 or wp.ndim != 3 or wp.shape[0] != st.shape[0] or wp.shape[2] != 2:
        raise ValueError(f"state0 must be (B, 4) and waypoints (B, K, 2); got {st.shape} and {wp.shape}")
    if not (np.all(np.isfinite(st)) and np.all(np.isfinite(wp))):
        raise ValueError("state0 and waypoints must be finite")
    B, K, _ = wp.shape
    cth, sth = np.cos(st[:, 2:3]), np.sin(st[:, 2:3])
    world = np.stack([st[:, 0:1] + cth * wp[..., 0] - sth * wp[..., 1], st[:, 1:2] + sth * wp[..., 0] + cth * wp[..., 1]], -1)
    path = np.concatenate([st[:, None, :2], world], 1)  # (B, K+1, 2) at 0, 0.5, ...

    def at(tau: float) -> np.ndarray:
        u = tau / 0.5
        k = min(int(np.floor(u)), K - 1)
        w = u - k
        return path[:, k] + w * (path[:, k + 1] - path[:, k])  # extrapolates beyond the last waypoint

    out = np.zeros((B, steps + 1, 4))
    out[:, 0] = st
    lo, hi = c.accel_bounds
    for n in range(steps):
        tau = n * c.dt
        cur = out[:, n]
        p_la, p_now = at(tau + 0.5), at(tau)
        v_ref = np.linalg.norm(p_la - p_now, axis=-1) / 0.5
        rel = p_la - cur[:, :2]
        ld = np.maximum(np.linalg.norm(rel, axis=-1), 1.0)
        alpha = np.arctan2(rel[:, 1], rel[:, 0]) - cur[:, 2]
        steer = np.clip(np.arctan(2 * c.wheelbase * np.sin(alpha) / ld), -c.steer_max, c.steer_max)
        acc = np.clip(2.0 * (v_ref - cur[:, 3]), lo, hi)
        out[:, n + 1] = _bicycle_step(cur, np.stack([acc, steer], -1), c.dt, c.wheelbase)
    return out


class PlannerLike(Protocol):
    """What a planner under test provides (plug in a real end-to-end planner here).

    ``plan(views, ego)`` takes views of shape (B, 4, 3, res, res) (stand-in camera images)
    and ego features (B, 4) (speed / 15, lane offset / lane width, 5 × heading, y / road
    width) and returns waypoints (B, 4, 2) in the ego frame at +0.5, 1.0, 1.5, 2.0 s.

    Parameters
    ----------
    (protocol; no constructor arguments)

    References
    ----------
    Zhou et al., *SafeMVDrive / SMD*, ICML 2026, arXiv:2505.17727; https://github.com/zhoujiawei3/SafeMVDrive
    """

    def plan(self, views: np.ndarray, ego: np.ndarray) -> np.ndarray:
        """Waypoints for each sample.

        Returns
        -------
        ndarray, shape (B, 4, 2)
        """
        ...


class BCPlanner:
    """Behaviour-cloned planner (stand-in for UniAD and the paper's end-to-end planners).

    An MLP on the flattened raster views and ego features, trained by mean-squared error
    to predict the logged ego's waypoints; its output is tracked by :func:`track_waypoints`.

    Parameters
    ----------
    hidden : int
    res : int
        View resolution (must match :func:`render_views`).
    random_state : int, Generator or None

    References
    ----------
    Zhou et al., *SafeMVDrive / SMD*, ICML 2026, arXiv:2505.17727; https://github.com/zhoujiawei3/SafeMVDrive (UniAD and other end-to-end planners, which this stands in for).
    """

    def __init__(self, hidden: int = 128, res: int = 12, random_state: RandomState = None) -> None:
        import torch

        self.hidden = check_int(hidden, "hidden")
        self.res = check_int(res, "res")
        torch.manual_seed(seed_from(random_state))
        d_in = 4 * 3 * self.res * self.res + 4
        self.net = torch.nn.Sequential(
            torch.nn.Linear(d_in, self.hidden),
            torch.nn.ReLU(),
            torch.nn.Linear(self.hidden, self.hidden),
            torch.nn.ReLU(),
            torch.nn.Linear(self.hidden, 2 * len(WAYPOINT_STEPS)),
        )
        self.scale = np.array([20.0, 2.0], dtype=np.float32)
        self.history: list[float] = []

    def _inputs(self, views: np.ndarray, ego: np.ndarray):
        import torch

        v = np.asarray(views, dtype=np.float32)
        e = np.asarray(ego, dtype=np.float32)
        if v.ndim != 5 or v.shape[1:] != (4, 3, self.res, self.res) or e.shape != (v.shape[0], 4):
            raise ValueError(f"views must be (B, 4, 3, {self.res}, {self.res}) and ego (B, 4); got {v.shape} and {e.shape}")
        return torch.from_numpy(np.concatenate([v.reshape(len(v), -1), e], 1))

    def fit(
        self,
        views: np.ndarray,
        ego: np.ndarray,
        waypoints: np.ndarray,
        *,
        epochs: int = 30,
        lr: float = 1e-3,
        batch_size: int = 128,
        random_state: RandomState = None,
    ) -> BCPlanner:
        """Behaviour cloning (MSE on scaled waypoints); continue from the current weights
        (so a second call fine-tunes).

        Returns
        -------
        BCPlanner
            ``self``; ``history`` gains one mean loss per epoch.
        """
        import torch

        epochs = check_int(epochs, "epochs")
        batch_size = check_int(batch_size, "batch_size")
        lr = check_real(lr, "lr", lo=0.0, lo_open=True)
        X = self._inputs(views, ego)
        Y = np.asarray(waypoints, dtype=np.float32)
        if Y.shape != (len(X), len(WAYPOINT_STEPS), 2):
            raise ValueError(f"waypoints must be ({len(X)}, {len(WAYPOINT_STEPS)}, 2); got {Y.shape}")
        Y = torch.from_numpy((Y / self.scale).reshape(len(Y), -1))
        g = torch.Generator().manual_seed(seed_from(random_state))
        opt = _Adam(self.net.parameters(), lr=lr)
        for _ in range(epochs):
            perm = torch.randperm(len(X), generator=g)
            tot = 0.0
            for i in range(0, len(X), batch_size):
                idx = perm[i : i + batch_size]
                loss = torch.nn.functional.mse_loss(self.net(X[idx]), Y[idx])
                opt.zero_grad()
                loss.backward()
                opt.step()
                tot += float(loss.detach()) * len(idx)
            self.history.append(tot / len(X))
        return self

    def plan(self, views: np.ndarray, ego: np.ndarray) -> np.ndarray:
        """Waypoints (B, 4, 2) in the ego frame.

        Returns
        -------
        ndarray, shape (B, 4, 2)
        """
        import torch

        with torch.no_grad():
            out = self.net(self._inputs(views, ego)).numpy()
        return out.reshape(len(out), -1, 2) * self.scale

    def copy(self) -> BCPlanner:
        """An independent copy (for fine-tuning without touching the original).

        Returns
        -------
        BCPlanner
        """
        import copy

        return copy.deepcopy(self)


def planner_samples(scenes: SceneBatch, frames: np.ndarray, *, res: int = 12) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Behaviour-cloning samples from logs: views, ego features and the logged ego's
    waypoints at the given frames, flattened over (scene, frame).

    Returns
    -------
    views : ndarray, shape (S*F, 4, 3, res, res)
    ego : ndarray, shape (S*F, 4)
    waypoints : ndarray, shape (S*F, 4, 2)

    Parameters
    ----------
    scenes : SceneBatch
    frames : ndarray of int, shape (S, F)
    res : int
        View resolution.

    References
    ----------
    Zhou et al., *SafeMVDrive / SMD*, ICML 2026, arXiv:2505.17727; https://github.com/zhoujiawei3/SafeMVDrive
    """
    _check_batch(scenes)
    res = check_int(res, "res")
    v = render_views(scenes, frames, res=res)
    e = _ego_features(scenes, frames)
    w = waypoint_targets(scenes, frames)
    return v.reshape((-1,) + v.shape[2:]), e.reshape(-1, 4), w.reshape(-1, len(WAYPOINT_STEPS), 2)


def plan_collisions(planner: Any, scenes: SceneBatch, frames: np.ndarray, *, res: int = 12, steps: int = 20) -> np.ndarray:
    """Open-loop planning collisions, as UniAD's ``obj_box_col``: at each sample the planner
    sees the views, its waypoints are tracked for ``steps`` steps and the planned ego box
    is checked against every other vehicle's logged box at the same times.

    Parameters
    ----------
    planner : PlannerLike
        Any object with ``plan(views, ego) -> waypoints``.
    scenes : SceneBatch
    frames : ndarray of int, shape (S, F)

    Returns
    -------
    ndarray of bool, shape (S, F)
        Sample-level collisions; ``.any(1)`` gives the scene level.

    References
    ----------
    Hu et al., *Planning-oriented Autonomous Driving* (UniAD), CVPR 2023 — ``obj_box_col``.
    Zhou et al., *SafeMVDrive / SMD*, ICML 2026, arXiv:2505.17727; https://github.com/zhoujiawei3/SafeMVDrive
    """
    b = _check_batch(scenes)
    if not callable(getattr(planner, "plan", None)):
        raise TypeError(f"planner must have a plan(views, ego) method, got {type(planner).__name__}")
    fr = np.asarray(frames)
    if fr.ndim != 2 or fr.shape[0] != b.n_scenes or fr.size and fr.max() + steps > b.horizon:
        raise ValueError(f"frames must be ({b.n_scenes}, F) and leave {steps} steps; got {fr.shape}")
    return _plan_collisions(planner, b, fr, _planner_inputs(b, fr, res), steps)


def _planner_inputs(b: SceneBatch, fr: np.ndarray, res: int) -> tuple[np.ndarray, np.ndarray]:
    """What a planner reads at ``fr``: views (S*F, 4, 3, res, res) and ego features (S*F, 4)
    (computed once per scene set when several planners are scored on it)."""
    S, F = fr.shape
    return render_views(b, fr, res=res).reshape(S * F, 4, 3, res, res), _ego_features(b, fr).reshape(S * F, 4)


def _plan_collisions(
    planner: Any, b: SceneBatch, fr: np.ndarray, inputs: tuple[np.ndarray, np.ndarray], steps: int
) -> np.ndarray:
    """:func:`plan_collisions` after its checks, from :func:`_planner_inputs`."""
    S, F = fr.shape
    views, ego = inputs
    wp = np.asarray(planner.plan(views, ego), dtype=float)
    if wp.shape != (S * F, len(WAYPOINT_STEPS), 2) or not np.all(np.isfinite(wp)):
        raise ValueError(f"planner.plan must return finite waypoints of shape {(S * F, len(WAYPOINT_STEPS), 2)}; got {wp.shape}")
    st0 = b.states[np.arange(S)[:, None], fr, 0].reshape(S * F, 4)
    tr = track_waypoints(st0, wp, steps=steps, config=b.config)[:, 1:]  # (SF, steps, 4)
    fut = b.states[np.arange(S)[:, None, None], fr[..., None] + np.arange(1, steps + 1)]  # (S, F, steps, N, 4)
    fut = fut.reshape(S * F, steps, -1, 4)
    ov = _boxes_overlap(_boxes(tr, b.config)[:, :, None], _boxes(fut, b.config))  # (SF, steps, N)
    mask = np.repeat(b.present, F, 0).copy()
    mask[:, 0] = False
    return (ov & mask[:, None, :]).any((1, 2)).reshape(S, F)


def finetune_planner(
    planner: BCPlanner,
    generated: SceneBatch,
    benign: SceneBatch,
    frames: np.ndarray,
    benign_frames: np.ndarray,
    *,
    epochs: int = 20,
    lr: float = 5e-4,
    random_state: RandomState = None,
) -> BCPlanner:
    """Fine-tune a copy of ``planner`` on the evasion trajectories of generated scenes,
    mixed with as many benign samples (so it does not forget ordinary driving).

    Returns
    -------
    BCPlanner
        A new planner; ``planner`` is unchanged. With no generated scenes there is nothing
        to fine-tune on, and the new planner is a copy of ``planner``.

    Parameters
    ----------
    planner : BCPlanner
    generated, benign : SceneBatch
    frames, benign_frames : ndarray of int
        Sample times of each set.
    epochs, lr : int, float
    random_state : int, Generator or None

    References
    ----------
    Zhou et al., *SafeMVDrive / SMD*, ICML 2026, arXiv:2505.17727; https://github.com/zhoujiawei3/SafeMVDrive
    """
    if not isinstance(planner, BCPlanner):
        raise TypeError(f"planner must be a BCPlanner (to fine-tune), got {type(planner).__name__}")
    _check_batch(generated, "generated")
    _check_batch(benign, "benign")
    if generated.n_scenes == 0:  # nothing generated to fine-tune on: the planner as it was
        return planner.copy()
    return _finetune(
        planner,
        planner_samples(generated, frames, res=planner.res),
        planner_samples(benign, benign_frames, res=planner.res),
        epochs=epochs,
        lr=lr,
        random_state=random_state,
    )


def _finetune(
    planner: BCPlanner, gen_samples: tuple, benign_samples: tuple, *, epochs: int, lr: float, random_state: RandomState
) -> BCPlanner:
    """:func:`finetune_planner` from :func:`planner_samples` of both sets (the benign ones
    computed once for several fine-tunings)."""
    vg, eg, wg = gen_samples
    vb, eb, wb = benign_samples
    rng = check_random_state(random_state)
    pick = rng.choice(len(vb), size=min(len(vb), len(vg)), replace=False)
    new = planner.copy()
    return new.fit(
        np.concatenate([vg, vb[pick]]),
        np.concatenate([eg, eb[pick]]),
        np.concatenate([wg, wb[pick]]),
        epochs=epochs,
        lr=lr,
        random_state=rng,
    )
