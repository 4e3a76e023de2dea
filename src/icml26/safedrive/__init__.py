"""SafeMVDrive / SMD, mechanism only: a 2-D road simulator, GRPO adversary selection and
two-stage (collide, then evade) safety-critical scenario generation.

Everything that the paper runs on large models is replaced by a labelled stand-in:

===========================================  ===============================================
paper                                        here (stand-in)
===========================================  ===============================================
nuScenes logs                                :func:`benign_scenes`: multi-lane road, IDM with
                                             MOBIL-style lane changes, kinematic bicycle
multi-camera video (UniMLVG)                 :func:`render_views`: four ego-centric occupancy
                                             rasters (front, rear, left, right), two frames
Qwen2.5-VL selector trained with GRPO        :class:`SelectorPolicy` scoring candidate
                                             vehicles from state features, trained by
                                             :func:`train_selector` with :func:`grpo_loss`
CTG guided diffusion (collision stage)       :func:`attack_adversary`: gradient descent on
                                             the adversary's controls through the dynamics
CTG guided diffusion (evasion stage)         :func:`evade_ego_receding`: the ego replans every
                                             0.5 s by gradient descent on its controls from
                                             what it has observed (constant-velocity
                                             prediction of the others), near-miss filter;
                                             :func:`evade_ego`, the open-loop variant that
                                             knows the whole attack, as a sensitivity setting
UniAD (end-to-end planner)                   :class:`BCPlanner`, behaviour-cloned on benign
                                             logs, tracked by :func:`track_waypoints`
===========================================  ===============================================

A reader can plug in a real planner (any object with ``plan(views, ego) -> waypoints``,
see :class:`PlannerLike`) or selector (any callable ``(features, mask) -> choice``).

Submodules
----------
road
    :class:`RoadConfig`, :class:`SceneBatch`, the bicycle model, IDM, box geometry.
traffic
    Initial scenes and the benign IDM + MOBIL-style rollout (:func:`benign_scenes`).
planner
    Raster views, :class:`BCPlanner`, waypoint tracking, planner collisions and fine-tuning.
scenarios
    Stage B: collide (:func:`attack_adversary`), then evade (:func:`evade_ego_receding`);
    graded rewards, attack labels, :func:`make_scenarios`.
selector
    Stage A: candidate features, :class:`SelectorPolicy`, GRPO (:func:`grpo_loss`), baselines.
experiment
    The chapter's replicate (:func:`run_replicate`), labels, collision rates and the planted
    cut-ins of its positive control (:func:`plant_cut_ins`, :func:`planted_rate`).

References
----------
J. Zhou, L. Lyu, Z. Tian, C. Zhuo, Y. Li. *SafeMVDrive: Multi-view Safety-Critical Driving
Video Synthesis in the Real World Domain* (ICML 2026 as SMD). arXiv:2505.17727.
Code: https://github.com/zhoujiawei3/SafeMVDrive
M. Treiber, A. Hennecke, D. Helbing. *Congested traffic states in empirical observations and
microscopic simulations*. Phys. Rev. E 62 (2000) — IDM.
A. Kesting, M. Treiber, D. Helbing. *General lane-changing model MOBIL for car-following
models*. TRR 1999 (2007).
Z. Shao et al. *DeepSeekMath* (2024), arXiv:2402.03300 — GRPO.
"""

from __future__ import annotations

# the public API (``__all__``) and, as ``name as name``, the module-level names that the tests
# and the chapter reach from the package root
from ._optim import _Adam as _Adam
from .experiment import _finetune_on as _finetune_on
from .experiment import _Scored as _Scored
from .experiment import binary_labels, collision_rates, plant_cut_ins, planted_rate, run_replicate
from .planner import VIEWS as VIEWS
from .planner import WAYPOINT_STEPS as WAYPOINT_STEPS
from .planner import (
    BCPlanner,
    PlannerLike,
    finetune_planner,
    plan_collisions,
    planner_samples,
    render_views,
    track_waypoints,
    waypoint_targets,
)
from .planner import _view_points as _view_points
from .road import (
    RoadConfig,
    SceneBatch,
    bicycle_step,
    box_corners,
    box_distance,
    boxes_overlap,
    check_no_overlap,
    concat_scenes,
    idm_accel,
    idm_equilibrium_gap,
)
from .road import _boxes as _boxes
from .scenarios import _disc_centres as _disc_centres
from .scenarios import _disc_clearance as _disc_clearance
from .scenarios import _disc_clearance_to as _disc_clearance_to
from .scenarios import _pair_clearance as _pair_clearance
from .scenarios import _rollout_torch as _rollout_torch
from .scenarios import _rollout_torch_scan as _rollout_torch_scan
from .scenarios import _split_xy as _split_xy
from .scenarios import _violations as _violations
from .scenarios import (
    attack_adversary,
    attack_labels,
    evade_ego,
    evade_ego_receding,
    graded_rewards,
    make_scenarios,
    predict_constant_velocity,
)
from .selector import N_FEATURES as N_FEATURES
from .selector import SelectorPolicy, candidate_features, grpo_loss, select_closest, select_random, select_with, train_selector
from .traffic import _any_collision as _any_collision
from .traffic import _rollout_steps as _rollout_steps
from .traffic import _rollout_vec as _rollout_vec
from .traffic import benign_scenes, rollout_traffic, rollout_traffic_loop, sample_initial_scenes

__all__ = [
    "RoadConfig",
    "SceneBatch",
    "concat_scenes",
    "bicycle_step",
    "idm_accel",
    "idm_equilibrium_gap",
    "sample_initial_scenes",
    "check_no_overlap",
    "rollout_traffic",
    "rollout_traffic_loop",
    "benign_scenes",
    "box_corners",
    "boxes_overlap",
    "box_distance",
    "render_views",
    "waypoint_targets",
    "track_waypoints",
    "BCPlanner",
    "PlannerLike",
    "planner_samples",
    "plan_collisions",
    "candidate_features",
    "SelectorPolicy",
    "grpo_loss",
    "train_selector",
    "select_closest",
    "select_random",
    "select_with",
    "attack_adversary",
    "attack_labels",
    "graded_rewards",
    "evade_ego",
    "evade_ego_receding",
    "predict_constant_velocity",
    "make_scenarios",
    "finetune_planner",
    "binary_labels",
    "collision_rates",
    "plant_cut_ins",
    "planted_rate",
    "run_replicate",
]
