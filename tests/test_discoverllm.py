"""icml26.discoverllm: reward and tree scores against hand-computed oracles, the simulator's
rules on hand-built hierarchies, the group-normalised objective against a direct
computation, vectorised = plain rollouts, the text adapter, and a replay-twice test."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from icml26 import discoverllm as D
from icml26.discoverllm.simulator import IntentNode, IntentSimulator, Message

TASK = D.TaskConfig()


def one_dim(target=(1, 2), thresholds=None, dims=("a",)):
    roots = [D.chain_hierarchy(d, target) for d in dims]
    if thresholds is not None:
        for n in roots[0].walk():
            if n.path:
                n.thresholds = list(thresholds)
    sim = IntentSimulator(dims, depth=len(target), branching=4, hierarchies=roots, random_state=0)
    sim.reset()
    return sim


def node(sim, path, dim=0):
    return next(n for n in sim.roots[dim].walk() if n.path == tuple(path))


# ----------------------------------------------------------------------------- reward


def test_reward_hand_oracle():
    assert D.token_penalty(100) == 0.0
    assert D.token_penalty(250) == 0.0
    assert D.token_penalty(300) == pytest.approx(0.05)
    assert D.token_penalty(1249) == pytest.approx(0.999)
    assert D.token_penalty(5000) == 1.0  # capped
    assert D.discovery_reward(0.5, 300) == pytest.approx(0.45)
    assert D.discovery_reward(2.0, 100) == 2.0
    assert D.discovery_reward(0.5, 2000) == pytest.approx(-0.5)
    assert D.discovery_reward(1.0, 350, lam=0.01, tau=300, cap=0.4) == pytest.approx(0.6)


def test_tree_score_hand_oracle():
    # R(1) -> [A(1) -> [A1(1)], B(0.5)]: A1 = 1, A complete = 1, B = 0.5, R own = 1 (B incomplete): 3.5 of 4
    a1 = IntentNode("x", (0, 0), aware=1.0)
    a = IntentNode("x", (0,), [a1], aware=1.0)
    b = IntentNode("x", (1,), aware=0.5)
    r = IntentNode("x", (), [a, b], aware=1.0)
    assert D.hierarchy_score([r], "aware") == (3.5, 4)
    b.aware = 1.0
    assert D.hierarchy_score([r], "aware") == (4.0, 4)
    # a node counts 1 when all its children are complete, whatever its own value
    y = IntentNode("x", (0, 0), aware=1.0)
    x = IntentNode("x", (0,), [y], aware=0.0)
    assert D.hierarchy_score([x], "aware") == (2.0, 2)
    assert D.hierarchy_score([x], "satisfied") == (0.0, 2)


# ----------------------------------------------------------------------------- simulator rules


def test_question_probes_and_reward():
    sim = one_dim()
    res = sim.step(Message("question", ({"a": (1,)},), 20))
    assert node(sim, (1,)).aware == 1 and node(sim, (1,)).satisfied == 0
    assert node(sim, (1, 2)).aware == 0 and node(sim, (1, 2)).thresholds is not None  # child evaluated, failed
    # raw score 1 (root) -> 2 (root complete + probed node): delta 1, no penalty
    assert res.info["delta_awareness"] == 1.0 and res.reward == 1.0
    assert res.reply.discovered == {"a": (1,)} and not res.done


def test_artifact_satisfies_whole_path_and_ends():
    sim = one_dim()
    res = sim.step(Message("artifact", ({"a": (0, 0)}, {"a": (1, 2)}), 300))
    assert all(n.satisfied == 1 and n.aware == 1 for n in sim.roots[0].walk() if n.path)
    assert res.done and res.reply.satisfied == {"a": True}
    assert res.reward == pytest.approx(2.0 - 0.05)  # two nodes discovered, 50 tokens over the allowance


def test_near_miss_thresholds_exact():
    sim = one_dim(thresholds=[0.4, 0.9])
    wrong = Message("artifact", ({"a": (0, 0)}, {"a": (2, 0)}), 20)  # two siblings of (1,): q = 0.5
    sim.step(wrong)
    assert node(sim, (1,)).aware == 0.5 and node(sim, (1,)).thresholds == [0.9]
    sim.step(wrong)
    assert node(sim, (1,)).aware == 0.5 and node(sim, (1,)).thresholds == pytest.approx([0.4])
    r = sim.step(wrong)
    assert node(sim, (1,)).aware == 1.0 and node(sim, (1,)).thresholds == []
    assert r.reply.discovered == {"a": (1,)}  # the user now names the value never shown
    sim.step(wrong)
    assert node(sim, (1,)).aware == 1.0
    # the child was never evaluated: its parent was not satisfied by any of these messages
    assert node(sim, (1, 2)).aware == 0


def test_one_wrong_option_is_weaker_evidence():
    sim = one_dim(thresholds=[0.4, 0.9])
    sim.step(Message("artifact", ({"a": (0, 0)},), 20))  # one near miss: q = 0.25 < 0.4
    assert node(sim, (1,)).aware == 0 and node(sim, (1,)).thresholds == pytest.approx([0.15, 0.9])


def test_open_question_never_raises_awareness():
    sim = one_dim()
    for _ in range(3):
        res = sim.step(Message("question", ({"a": ()},), 20))
        assert res.info["delta_awareness"] == 0.0
    assert sim.levels()["discover"] == pytest.approx(1 / 3)


def test_focus_on_one_root_at_a_time():
    sim = one_dim(target=(1, 2), dims=("a", "b"))
    # satisfies b fully but not a: b is evaluated (look-ahead) but not merged
    sim.step(Message("artifact", ({"a": (0, 0), "b": (1, 2)},), 20))
    assert all(n.satisfied == 0 for n in sim.roots[1].walk() if n.path)
    assert sim.position == 0
    # satisfies both in one message: the next root's update is kept
    res = sim.step(Message("artifact", ({"a": (1, 2), "b": (1, 2)},), 20))
    assert res.done and sim.position == 2


def test_reply_only_shows_current_and_past_roots():
    sim = one_dim(target=(1, 2), dims=("a", "b"))
    res = sim.step(Message("question", ({"a": (1,)},), 20))
    assert set(res.reply.discovered) == {"a"}
    res = sim.step(Message("artifact", ({"a": (1, 2), "b": (3, 3)},), 20))
    assert set(res.reply.discovered) == {"a", "b"} and res.reply.satisfied["a"]


def test_satisfied_nodes_are_skipped_and_awareness_never_drops():
    sim = one_dim(target=(1, 2), dims=("a", "b"))
    sim.step(Message("artifact", ({"a": (1, 2)},), 20))
    before = copy.deepcopy(sim.roots[0])
    sim.step(Message("artifact", ({"a": (3, 3), "b": (0, 0)},), 20))
    assert [n.satisfied for n in sim.roots[0].walk()] == [n.satisfied for n in before.walk()]
    rng = np.random.default_rng(0)
    sim = TASK.simulator(random_state=3)
    sim.reset()
    prev = [[n.aware for n in r.walk()] for r in sim.roots]
    for _ in range(10):
        k = int(rng.integers(1, 4))
        opts = tuple({d: tuple(int(v) for v in rng.integers(0, 4, 2)) for d in TASK.dims} for _ in range(k))
        sim.step(Message(str(rng.choice(["question", "artifact"])), opts, 100))
        now = [[n.aware for n in r.walk()] for r in sim.roots]
        assert all(b >= a for x, y in zip(prev, now) for a, b in zip(x, y))
        prev = now


# ----------------------------------------------------------------------------- determinism


def _state(sim):
    return [
        (n.dim, n.path, n.aware, n.satisfied, None if n.thresholds is None else tuple(n.thresholds))
        for r in sim.roots
        for n in r.walk()
    ]


def test_replay_one_episode_twice_step_by_step():
    a = D.run_episode(TASK, None, sim_seed=11, random_state=5, record=True)
    b = D.run_episode(TASK, None, sim_seed=11, random_state=5, record=True)
    assert len(a.trace) == len(b.trace) > 0
    for sa, sb in zip(a.trace, b.trace):
        assert sa == sb
    # and the simulator alone, state compared after every step
    msgs = [t["message"] for t in a.trace]
    s1, s2 = TASK.simulator(random_state=11), TASK.simulator(random_state=11)
    assert s1.reset() == s2.reset()
    for m in msgs:
        r1, r2 = s1.step(m), s2.step(m)
        assert r1 == r2 and _state(s1) == _state(s2)


# ----------------------------------------------------------------------------- policy gradient


def test_group_advantages_and_objective_direct():
    returns = np.array([1.0, 3.0, 2.0, 2.0, 0.0, 4.0])
    groups = np.array([0, 0, 1, 1, 2, 2])
    # the authors' convention (TRL GRPOTrainer, scale_rewards="group"): sample sd + 1e-4, the default
    adv = D.response_type_advantages(returns, groups)
    direct = []
    for r, g in zip(returns, groups):
        m = returns[groups == g]
        direct.append((r - m.mean()) / (np.sqrt(((m - m.mean()) ** 2).sum() / (len(m) - 1)) + 1e-4))
    np.testing.assert_allclose(adv, direct)
    assert adv[2] == adv[3] == 0.0
    # the chapter's earlier convention: population sd + 1e-6
    pop = D.response_type_advantages(returns, groups, eps=1e-6, sd="population")
    direct = []
    for r, g in zip(returns, groups):
        m = returns[groups == g]
        direct.append((r - m.mean()) / (np.sqrt(((m - m.mean()) ** 2).mean()) + 1e-6))
    np.testing.assert_allclose(pop, direct)
    assert not np.allclose(adv, pop)
    logp = torch.tensor([-0.1, -1.2, -0.7, -2.0, -0.3, -0.9, -1.5], dtype=torch.float64)
    ep = torch.tensor([0, 0, 1, 2, 2, 2, 3])
    a = torch.tensor([0.5, -1.0, 2.0, -0.25], dtype=torch.float64)
    j = D.response_type_objective(logp, ep, a)
    total = 0.0
    for i in range(4):
        steps = [float(lp) for lp, e in zip(logp, ep) if int(e) == i]
        total += float(a[i]) * sum(steps) / len(steps)
    assert float(j) == pytest.approx(total / 4)


def test_objective_gradient_matches_autograd_of_direct_sum():
    pol = D.ResponseTypePolicy(TASK.n_features, hidden=4, random_state=0)
    eps = D.run_episodes(TASK, pol, sim_seeds=[1, 1, 2], random_states=[0, 1, 2])
    x = np.concatenate([np.stack(e.features) for e in eps])
    acts = torch.as_tensor(np.concatenate([e.actions for e in eps]))
    ep = torch.as_tensor(np.concatenate([[i] * len(e.actions) for i, e in enumerate(eps)]))
    adv = torch.tensor([1.0, -1.0, 0.5])
    logp = torch.log_softmax(pol.logits(x), -1).gather(1, acts[:, None])[:, 0]
    direct = sum(adv[i] * logp[ep == i].mean() for i in range(3)) / 3
    ours = D.response_type_objective(logp, ep, adv)
    assert float(ours.detach()) == pytest.approx(float(direct.detach()), rel=1e-6)
    params = list(pol.net.parameters())
    g1 = torch.autograd.grad(ours, params, retain_graph=True)
    g2 = torch.autograd.grad(direct, params)
    for a, b in zip(g1, g2):
        torch.testing.assert_close(a, b)


def test_vectorised_rollout_equals_plain():
    pol = D.ResponseTypePolicy(TASK.n_features, random_state=1)
    seeds, states = list(range(12)), list(range(100, 112))
    batch = D.run_episodes(TASK, pol, sim_seeds=seeds, random_states=states)
    for e, s, r in zip(batch, seeds, states):
        one = D.run_episode(TASK, pol, sim_seed=s, random_state=r)
        assert e.actions == one.actions and e.rewards == one.rewards and e.tokens == one.tokens


def test_training_is_deterministic_and_finite():
    task = D.TaskConfig(horizon=3)
    p1, h1 = D.train_response_policy(task, iterations=3, groups=2, group_size=3, random_state=7)
    p2, h2 = D.train_response_policy(task, iterations=3, groups=2, group_size=3, random_state=7)
    assert h1 == h2 and np.all(np.isfinite(h1["mean_return"]))
    x = np.eye(task.n_features)
    np.testing.assert_array_equal(p1.probs(x), p2.probs(x))


def test_baselines_do_what_they_say():
    for name, fn in D.BASELINES.items():
        e = D.run_episode(TASK, fn, sim_seed=0, random_state=0)
        if name == "always execute":
            assert set(e.actions) == {2}
        if name.startswith("clarify"):
            assert e.actions == [1] * (TASK.horizon - 1) + [2]
        if name.startswith("ask once"):
            assert e.actions[0] == 1 and set(e.actions[1:]) == {2}


def test_assistant_rules_out_shown_values():
    ast = TASK.assistant(random_state=0)
    sim = TASK.simulator(random_state=4)
    ast.reset(sim.reset())
    msg = ast.compose(1)  # a specific question on one value of the focus dimension
    res = sim.step(msg)
    ast.observe(res.reply, msg)
    f = TASK.dims[0]
    v = msg.options[0][f][0]
    if sim.target[f][0] == v:
        assert ast.known[f] == (v,)
    else:
        assert v not in ast.untried(f)


# ----------------------------------------------------------------------------- adapter


def test_render_parse_round_trip():
    for m in [
        Message("artifact", ({"subject": (1, 2), "tone": (0,)}, {"subject": (3, 0)}), 0),
        Message("question", ({"setting": (2,)},), 0),
        Message("question", ({"tone": ()},), 0),
    ]:
        text = D.render_message(m)
        back = D.parse_message(text, TASK.dims)
        assert back.kind == m.kind and back.options == m.options and back.tokens == D.count_tokens(text)


def test_scripted_text_dialogue_matches_object_rollout():
    schedule = [4, 3, 1, 2, 2, 2]
    for seed in range(5):
        ep = D.run_episode(TASK, lambda x, t, h: schedule[t], sim_seed=seed, random_state=seed + 50, record=True)
        ast_seed = int(np.random.default_rng(seed + 50).integers(0, 2**31))
        respond = D.scripted_responder(TASK.dims, TASK.depth, TASK.branching, schedule, random_state=ast_seed)
        out = D.run_dialogue(respond, TASK.simulator(), turns=TASK.horizon, random_state=seed)
        assert [m.options for m in out["messages"]] == [t["message"].options for t in ep.trace]
        assert (out["discover"], out["satisfy"], out["done"]) == (ep.discover, ep.satisfy, ep.done)
        assert out["history"][0]["role"] == "user" and len(out["history"]) == 1 + 2 * len(ep.trace)


def test_adapter_reads_free_text():
    text = "Two ideas for you.\nOption 1: a calm story, subject=b.c and tone=a\nDraft 2: subject=d, setting=a.a\nThoughts?"
    m = D.parse_message(text, TASK.dims)
    assert m.kind == "artifact" and m.options == ({"subject": (1, 2), "tone": (0,)}, {"subject": (3,), "setting": (0, 0)})
    q = D.parse_message("Should the setting be setting=c, or setting=d?", TASK.dims)
    assert q.kind == "question" and q.options == ({"setting": (2,)}, {"setting": (3,)})
    g = D.parse_message("What tone are you after?", TASK.dims)
    assert g.options == ({"tone": ()},)


def test_without_focus_every_root_updates_at_once():
    roots = [D.chain_hierarchy(d, (1, 2)) for d in ("a", "b")]
    sim = IntentSimulator(("a", "b"), depth=2, branching=4, focus=False, hierarchies=roots, random_state=0)
    sim.reset()
    res = sim.step(Message("artifact", ({"a": (0, 0), "b": (1, 2)},), 20))
    assert all(n.satisfied == 1 for n in sim.roots[1].walk() if n.path) and not res.done
    assert set(res.reply.discovered) == {"a", "b"}
    res = sim.step(Message("artifact", ({"a": (1, 2), "b": (0, 0)},), 20))
    assert res.done  # b stays satisfied (skipped), a is now satisfied too


# ----------------------------------------------------------------------------- authors' settings (issue #23)


def test_summed_awareness_is_the_sum_of_root_gains():
    """awareness="sum" (the authors' one criterion): ΔA is the sum over roots of each root's
    raw tree-score change, computed here independently from hierarchy_score."""
    dims = ("a", "b", "c")
    msgs = [
        Message("artifact", ({"a": (1, 2), "b": (0, 0)},), 120),
        Message("artifact", ({"b": (3, 1), "c": (2, 2)}, {"b": (2, 0)}), 240),
        Message("question", ({"b": (3,)},), 20),
    ]
    sims = {m: IntentSimulator(dims, depth=2, branching=4, awareness=m, random_state=7) for m in ("mean", "sum")}
    for sim in sims.values():
        sim.reset()
    for msg in msgs:
        before = [D.hierarchy_score([r], "aware")[0] for r in sims["sum"].roots]
        out = {m: sim.step(msg) for m, sim in sims.items()}
        after = [D.hierarchy_score([r], "aware")[0] for r in sims["sum"].roots]
        gains = np.subtract(after, before)
        assert out["sum"].info["delta_awareness"] == pytest.approx(gains.sum(), abs=1e-12)
        assert out["mean"].info["delta_awareness"] == pytest.approx(gains.mean(), abs=1e-12)
        # same user, same updates: only the pooling differs
        assert out["sum"].info["discover"] == out["mean"].info["discover"]
        assert out["sum"].reward == pytest.approx(out["sum"].info["delta_awareness"] - D.token_penalty(msg.tokens))
    assert D.TaskConfig(awareness="sum").simulator(0).awareness == "sum"


def test_bad_awareness_and_reward_modes_are_named():
    with pytest.raises(ValueError, match="awareness='max'"):
        IntentSimulator(("a",), awareness="max")
    with pytest.raises(ValueError, match="reward='episode'"):
        D.train_response_policy(TASK, iterations=1, reward="episode")
    with pytest.raises(ValueError, match="eps is empty"):
        D.summarize_episodes([])


def test_turn_action_rewards_replay_the_policy_and_branch_exactly():
    """At every probed state the branch of the action the policy took reproduces the reward
    the rollout recorded; an open question never adds awareness (the updater's rule)."""
    sched = [4, 3, 2, 5, 2, 3]
    choose = lambda x, t, h: sched[t]  # noqa: E731
    users, states = [3, 4, 5], [30, 40, 50]
    eps = D.run_episodes(TASK, choose, sim_seeds=users, random_states=states)
    pr = D.turn_action_rewards(TASK, choose, sim_seeds=users, random_states=states)
    taken = np.array([sched[t] for t in pr["turn"]])
    recorded = np.concatenate([e.rewards for e in eps])
    assert pr["reward"].shape == (sum(e.turns for e in eps), len(D.ACTIONS))
    np.testing.assert_allclose(pr["reward"][np.arange(len(taken)), taken], recorded, atol=1e-12)
    assert np.all(pr["delta_awareness"][:, D.ACTIONS.index("open question")] == 0)
    pen = pr["delta_awareness"] - pr["reward"]
    np.testing.assert_allclose(pen[0], [D.token_penalty(TASK.costs.of(a)) for a in range(len(D.ACTIONS))], atol=1e-12)


def test_per_message_training_is_deterministic_and_moves_off_open_questions():
    """reward="turn": same seed, same policy. An open question never adds awareness, so its
    single-turn reward (zero) is the lowest of any response type below the token allowance;
    its probability at the first state must fall."""
    kw = dict(iterations=12, groups=2, group_size=6, reward="turn", random_state=3)
    p1, h1 = D.train_response_policy(TASK, **kw)
    p2, h2 = D.train_response_policy(TASK, **kw)
    assert h1 == h2 and len(h1["mean_return"]) == 12
    x0 = TASK.assistant(0)
    x0.reset(TASK.simulator(0).reset())
    feats = x0.features(0, TASK.horizon)[None]
    np.testing.assert_array_equal(p1.probs(feats), p2.probs(feats))
    init = D.ResponseTypePolicy(TASK.n_features, random_state=int(np.random.default_rng(3).integers(0, 2**31)))
    assert p1.probs(feats)[0, 0] < 0.5 * init.probs(feats)[0, 0]


def test_summarize_episodes_on_hand_built_episodes():
    e1 = D.Episode(actions=[3, 2], rewards=[0.5, 0.25], tokens=300, discover=1.0, satisfy=0.5, turns=2)
    e2 = D.Episode(actions=[1, 4], rewards=[0.0, -0.1], tokens=100, discover=0.5, satisfy=0.0, turns=2)
    su = D.summarize_episodes([e1, e2])
    assert su == pytest.approx(
        {
            "Discover": 0.75,
            "Satisfy": 0.25,
            "#Tok": 200,
            "turns": 2,
            "return": 0.325,
            "first k>=2": 0.5,
            "last k>=2": 0.5,
            "last k=1": 0.5,
        }
    )


def test_train_and_evaluate_plays_the_greedy_policy():
    users, states = [1, 2], [11, 12]
    pol, eps = D.train_and_evaluate(
        TASK, iterations=2, groups=2, group_size=2, sim_seeds=users, random_states=states, random_state=0
    )
    ref = D.run_episodes(TASK, pol.greedy(), sim_seeds=users, random_states=states)
    assert [e.actions for e in eps] == [e.actions for e in ref]


# --- the simulator's tree copy and walk (issue 26) against copy.deepcopy and IntentNode.walk --


def _tree_state(node):
    return [(n.dim, n.path, n.aware, n.satisfied, n.thresholds, len(n.children)) for n in node.walk()]


def test_copy_tree_equals_deepcopy_and_is_independent():
    from icml26.discoverllm.simulator import _copy_tree, _preorder

    sim = IntentSimulator(depth=3, branching=3, random_state=5)
    sim.reset()
    for _ in range(3):  # thresholds drawn, awareness moved
        if sim.done:
            break
        sim.step(Message("question", ({"subject": (0,)}, {"setting": (1, 2)}, {"tone": (2,)}), 40))
    shared = IntentNode("tone", (1,), aware=0.5, thresholds=[0.25, 0.5])
    dag = IntentNode("tone", (), aware=1.0, thresholds=[], children=[shared, IntentNode("tone", (2,), children=[shared])])
    for root in [*sim.roots, dag]:
        ours, ref = _copy_tree(root, {}), copy.deepcopy(root)
        assert _tree_state(ours) == _tree_state(ref) == _tree_state(root)
        assert [n.__dict__.keys() for n in ours.walk()] == [n.__dict__.keys() for n in ref.walk()]
        # the copy shares no mutable state with the original, and a node reached twice stays one node
        assert not {id(n) for n in ours.walk()} & {id(n) for n in root.walk()}
        for a, b in zip(ours.walk(), root.walk()):
            assert a.thresholds is None or a.thresholds is not b.thresholds
            assert a.children is not b.children
        assert _preorder(root) == list(root.walk())
    d = _copy_tree(dag, {})
    assert d.children[0] is d.children[1].children[0]
    d.children[0].thresholds.append(0.75)
    assert shared.thresholds == [0.25, 0.5]
