"""The positive control of chapter 10's generated-vs-benign claim (issue #35): cut-ins planted at
a known share of the open-loop samples (icml26.safedrive.plant_cut_ins, planted_rate) and the
paired decision that must detect them. The control can fail: a planted rate of zero is never
detected, and too few replicates leave it undecided."""

from __future__ import annotations

import numpy as np
import pytest
from badinput import covers, rejects

from icml26 import safedrive as sd
from icml26.book import chapter

EVAL = np.array([5, 10, 15, 20])


class KeepLane:
    """Keep the lane at the current speed."""

    def plan(self, views, ego):
        v = 15.0 * ego[:, 0]
        t = np.array([0.5, 1.0, 1.5, 2.0])
        return np.stack([v[:, None] * t, np.zeros((len(v), 4))], -1)


class Stop:
    """Plan to stand still (the tracker brakes as hard as it can)."""

    def plan(self, views, ego):
        return np.zeros((len(ego), 4, 2))


@pytest.fixture(scope="module")
def logs():
    return sd.benign_scenes(24, 40, random_state=11)


def _decide(planted, benign, n):
    """The chapter's control decision on n replicates."""
    return chapter.paired_effect(
        planted,
        benign,
        margin=0.0,
        smallest_effect=0.05,
        names=("planted cut-ins", "benign"),
        basis="test",
        replicates=list(range(n)),
    )


def test_planted_cut_ins_are_unavoidable(logs):
    planted, si, f = sd.plant_cut_ins(logs, EVAL, 1.0, random_state=0)
    assert planted.n_scenes == logs.n_scenes * len(EVAL) == len(si) == len(f)
    for planner in (KeepLane(), Stop()):
        hit = sd.plan_collisions(planner, planted, f[:, None])[:, 0]
        assert hit.mean() > 0.95, (type(planner).__name__, hit.mean())
    # before the sample the intruder drives beside the ego, clear of it
    k = int(np.argmax(f))
    j = int(np.flatnonzero(planted.present[k])[-1])
    assert abs(planted.states[k, f[k], j, 1] - planted.states[k, f[k], 0, 1]) == pytest.approx(planted.config.lane_width)


def test_zero_rate_plants_nothing_and_is_not_detected(logs):
    planted, si, _ = sd.plant_cut_ins(logs, EVAL, 0.0, random_state=0)
    assert planted.n_scenes == 0 and len(si) == 0
    benign = sd.plan_collisions(KeepLane(), logs, np.tile(EVAL, (logs.n_scenes, 1))).mean()
    rates = [sd.planted_rate(KeepLane(), logs, EVAL, 0.0, random_state=r)[0] for r in range(6)]
    assert rates == [benign] * 6
    d = _decide(rates, [benign] * 6, 6)
    assert d.outcome != "supports"
    assert d.outcome == "contradicts"  # the whole interval lies below the smallest effect


def test_planted_smallest_effect_is_detected_with_enough_replicates(logs):
    base = sd.plan_collisions(KeepLane(), logs, np.tile(EVAL, (logs.n_scenes, 1)))
    b = float(base.mean())
    rates = [sd.planted_rate(KeepLane(), logs, EVAL, 0.05, random_state=r, collisions=base)[0] for r in range(12)]
    d = _decide(rates, [b] * 12, 12)
    assert d.outcome == "supports", d.detail
    assert d.stats["ci_low"] < 0.05 < d.stats["ci_high"] + 0.02


def test_too_few_replicates_leave_it_undecided(logs):
    base = sd.plan_collisions(KeepLane(), logs, np.tile(EVAL, (logs.n_scenes, 1)))
    b = float(base.mean())
    # two replicates with different planted shares: the interval is too wide to decide
    rates = [sd.planted_rate(KeepLane(), logs, EVAL, 0.05, random_state=r, collisions=base)[0] for r in (0, 3)]
    assert rates[0] != rates[1]
    assert _decide(rates, [b, b], 2).outcome == "inconclusive"


def test_planted_rate_is_deterministic_and_counts(logs):
    a = sd.planted_rate(KeepLane(), logs, EVAL, 0.3, random_state=5)
    assert a == sd.planted_rate(KeepLane(), logs, EVAL, 0.3, random_state=5)
    assert 0 < a[1] < logs.n_scenes * len(EVAL)
    _, si, f = sd.plant_cut_ins(logs, EVAL, 0.3, random_state=5)
    assert len(si) == a[1] and set(f) <= set(EVAL)


@covers("safedrive.experiment.plant_cut_ins", "safedrive.experiment.planted_rate")
def test_bad_inputs(logs):
    rejects(sd.plant_cut_ins, logs, EVAL, 1.5, match="rate")
    rejects(sd.plant_cut_ins, logs, np.array([5, 38]), 0.1, match="frames")
    rejects(sd.plant_cut_ins, logs, EVAL, 0.1, ahead=(2.0, 0.0), match="ahead")
    rejects(sd.plant_cut_ins, "logs", EVAL, 0.1, match="SceneBatch")
    rejects(sd.planted_rate, KeepLane(), logs, EVAL, 0.1, collisions=np.zeros((3, 4), bool), match="collisions")
    rejects(sd.planted_rate, KeepLane(), logs, EVAL[None], 0.1, match="1-D")
